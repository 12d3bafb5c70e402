/* psched_simulate: times from the execution engine, then per-device and
 * whole-run figures (DESIGN §3). */
#define _DEFAULT_SOURCE /* madvise, for memadvise.h */
#include "internal.h"
#include "memadvise.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void psched_report_destroy(psched_report *r)
{
    if (!r)
        return;
    psched__dealloc(r->busy);
    psched__dealloc(r->idle);
    psched__dealloc(r->peak);
    psched__dealloc(r->offset);
    psched__dealloc(r->start);
    psched__dealloc(r->end);
    psched__dealloc(r->leave);
    psched__dealloc(r->arrive);
    psched__dealloc(r);
}

static psched_report *report_alloc(uint32_t p, size_t total)
{
    psched_report *r = psched__calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->devices = p;
    r->busy = psched__calloc(p, sizeof *r->busy);
    r->idle = psched__calloc(p, sizeof *r->idle);
    r->peak = psched__calloc(p, sizeof *r->peak);
    r->offset = psched__calloc((size_t)p + 1, sizeof *r->offset);
    r->start = psched__malloc_array_huge(total + 1, sizeof *r->start);
    r->end = psched__malloc_array_huge(total + 1, sizeof *r->end);
    if (!r->busy || !r->idle || !r->peak || !r->offset || !r->start || !r->end) {
        psched_report_destroy(r);
        return NULL;
    }
    return r;
}

/* Memory delta of every (stage, kind) under `costs`, indexed
 * [stage*8 + kind]: comm ops hold no activations. One table lookup per op
 * instead of a per-op walk through the plan's per-stage overrides. */
static double *mem_table(const psched_plan *costs, uint32_t stages)
{
    double *t = psched__calloc((size_t)stages * 8 + 1, sizeof *t);
    if (!t)
        return NULL;
    for (uint32_t st = 0; st < stages; st++) {
        psched_cost3 m = psched__plan_mem(costs, st);
        double *row = &t[(size_t)st * 8];
        row[PSCHED_OP_F] = m.f;
        row[PSCHED_OP_B] = m.b;
        row[PSCHED_OP_W] = m.w;
        row[PSCHED_OP_BW] = m.b + m.w;
    }
    return t;
}

#define UNLIKELY_COPY(kind) ((kind) == PSCHED_OP_OFFLOAD || (kind) == PSCHED_OP_RELOAD)

/* Memory change of a vocabulary pass (the plan's S/T values) or a
 * collective (none), before the micro-batch weight. */
static double vocab_mem(const psched_plan *costs, uint8_t kind)
{
    if (kind == PSCHED_OP_COLLECTIVE || !costs->cm)
        return 0;
    return costs->cm->vocab_mem[kind - PSCHED_OP_VOCAB_S];
}

/* One change of a device's memory at a time: copies change memory at
 * their own times (an OFFLOAD frees at its end, a RELOAD takes at its
 * start), so with copies the running sum goes by time, not list order. */
typedef struct mem_event {
    double t;
    /* at equal times: frees (0), reloads (1), compute in list order (2): a
     * backward starting with its RELOAD (or with a RELOAD that overlaps it)
     * holds the reloaded bytes before it frees anything */
    int cls;
    size_t g;
    double delta;
} mem_event;

static int event_cmp(const void *pa, const void *pb)
{
    const mem_event *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->cls != b->cls)
        return a->cls - b->cls;
    return a->g < b->g ? -1 : a->g > b->g;
}

/* Peak memory of device d of a schedule with copies: compute ops change it
 * at their start (the same sum as list order when there are no copies),
 * copies as above. */
static psched_status copy_peak(psched_report *r, const psched_schedule *s, const double *mem_of,
                               const psched_plan *costs, uint32_t d)
{
    const double *w = costs->cm ? costs->cm->weight : NULL;
    uint32_t per = s->plan->devices * s->plan->chunks / (s->plan->chains ? s->plan->chains : 1);
    uint32_t mbs = psched__plan_chain_mbs(s->plan);
    size_t first = s->offset[d], n = s->offset[d + 1] - first;
    mem_event *ev = psched__reallocarray(NULL, n + 1, sizeof *ev);
    if (!ev)
        return PSCHED_ENOMEM_FAIL();
    for (size_t i = 0; i < n; i++) {
        size_t g = first + i;
        const psched_op *o = &s->ops[g];
        double wk = w ? w[(size_t)(o->stage / per) * mbs + o->microbatch] : 1.0;
        double act = mem_of[(size_t)o->stage * 8 + PSCHED_OP_F] * wk;
        if (o->kind == PSCHED_OP_OFFLOAD)
            ev[i] = (mem_event){r->end[g], 0, g, -act};
        else if (o->kind == PSCHED_OP_RELOAD)
            ev[i] = (mem_event){r->start[g], 1, g, act};
        else if (o->kind >= PSCHED_OP_VOCAB_S)
            ev[i] = (mem_event){r->start[g], 2, g, vocab_mem(costs, o->kind) * wk};
        else
            ev[i] = (mem_event){r->start[g], 2, g, mem_of[(size_t)o->stage * 8 + o->kind] * wk};
    }
    qsort(ev, n, sizeof *ev, event_cmp);
    double mem = 0, peak = 0;
    for (size_t i = 0; i < n; i++) {
        mem += ev[i].delta;
        if (mem > peak)
            peak = mem;
    }
    psched__dealloc(ev);
    r->peak[d] = peak;
    return PSCHED_OK;
}

/* Busy time, span, peak memory and latest end of one device. An
 * overlapped pair is one unit: its time counts once. */
static double device_figures(psched_report *r, const psched_schedule *s, const double *mem_of,
                             const psched_plan *costs, uint32_t d, double *latest)
{
    /* micro-batch weights scale activation memory (NULL: all 1) */
    const double *w = costs->cm ? costs->cm->weight : NULL;
    uint32_t per = s->plan->devices * s->plan->chunks / (s->plan->chains ? s->plan->chains : 1);
    uint32_t mbs = psched__plan_chain_mbs(s->plan);
    double busy = 0, mem = 0, peak = 0, last_end = *latest;
    size_t first = s->offset[d], last = s->offset[d + 1];
    bool paired = false; /* the previous op opened an overlapped pair */
    bool coll = false;   /* the device reaches collectives */
    for (size_t g = first; g < last; g++) {
        const psched_op *o = &s->ops[g];
        double end = r->end[g];
        if (UNLIKELY_COPY(o->kind) || o->kind == PSCHED_OP_COLLECTIVE) {
            if (end > last_end)
                last_end = end;
            if (o->kind == PSCHED_OP_COLLECTIVE)
                coll = true;
            continue; /* the copy or comm stream's time, not the device's; memory: copy_peak */
        }
        if (!paired)
            busy += end - r->start[g];
        paired = (o->flags & PSCHED_OP_OVERLAP_NEXT) != 0;
        if (end > last_end)
            last_end = end;
        double delta = o->kind >= PSCHED_OP_VOCAB_S ? vocab_mem(costs, o->kind)
                                                    : mem_of[(size_t)o->stage * 8 + (o->kind & 7u)];
        mem += w ? delta * w[(size_t)(o->stage / per) * mbs + o->microbatch] : delta;
        if (mem > peak)
            peak = mem;
    }
    r->busy[d] = busy;
    r->peak[d] = peak;
    *latest = last_end;
    if (coll) {
        /* a collective runs on the comm stream: its place in the list is
         * not its place in time */
        double lo = INFINITY, hi = -INFINITY;
        for (size_t g = first; g < last; g++) {
            lo = fmin(lo, r->start[g]);
            hi = fmax(hi, r->end[g]);
        }
        return hi - lo;
    }
    return last > first ? r->end[last - 1] - r->start[first] : 0;
}

psched_status psched_simulate(const psched_schedule *s, const psched_plan *costs,
                              psched_report **out)
{
    if (!out)
        return psched_fail(PSCHED_EINVAL, "output pointer is NULL");
    *out = NULL;
    if (!s)
        return psched_fail(PSCHED_EINVAL, "schedule is NULL");
    uint32_t S = s->plan->devices * s->plan->chunks;
    if (costs && psched_plan_stages(costs) != S)
        return psched_fail(PSCHED_EINVAL,
                           "cost plan has %u stages (devices x chunks) but the schedule has %u",
                           psched_plan_stages(costs), S);
    if (!costs)
        costs = s->plan;
    psched_status bad = psched__costmodel_check(costs);
    if (bad)
        return bad;
    if (costs->cm && costs->cm->weight && costs->microbatches != s->plan->microbatches)
        return psched_fail(PSCHED_EINVAL,
                           "cost plan weighs %u micro-batches but the schedule has %u",
                           costs->microbatches, s->plan->microbatches);
    psched_status cst = psched__plan_check_costs(costs, s->devices, S, s->plan->microbatches);
    if (cst)
        return cst;
    size_t total = s->offset[s->devices];
    psched_report *r = report_alloc(s->devices, total);
    if (!r)
        return PSCHED_ENOMEM_FAIL();
    /* the common case first (compute ops, default cost model): the same
     * times, or false and the general engines give the outcome */
    double *mem_of = mem_table(costs, S);
    double *last = psched__calloc((size_t)s->devices + 1, sizeof *last);
    psched_fast_figures fig = {mem_of, r->busy, r->peak, last};
    bool fast = mem_of && last && psched__execute_fast(s, costs, r->start, r->end, &fig);
    bool comm_ops = !fast && psched__has_comm_ops(s);
    psched_status st = PSCHED_OK;
    if (!fast && !comm_ops && psched__costmodel_links(costs)) {
        /* the link model's transfers, for the traces */
        r->leave = psched__reallocarray(NULL, total + 1, sizeof *r->leave);
        r->arrive = psched__reallocarray(NULL, total + 1, sizeof *r->arrive);
        if (!r->leave || !r->arrive) {
            psched__dealloc(mem_of);
            psched__dealloc(last);
            psched_report_destroy(r);
            return PSCHED_ENOMEM_FAIL();
        }
    }
    if (!fast)
        st = comm_ops ? psched__execute_rendezvous(s, costs, r->start, r->end)
                      : psched__execute_transfers(s, costs, r->start, r->end, r->leave,
                                                  r->arrive);
    if (st || !mem_of) {
        psched__dealloc(mem_of);
        psched__dealloc(last);
        psched_report_destroy(r);
        return st ? st : PSCHED_ENOMEM_FAIL();
    }
    memcpy(r->offset, s->offset, ((size_t)s->devices + 1) * sizeof *r->offset);
    double makespan = 0, span = 0, busy = 0;
    for (uint32_t d = 0; d < s->devices; d++) {
        if (fast) {
            /* busy, peak and latest end came with the times */
            size_t first = s->offset[d], end = s->offset[d + 1];
            span = fmax(span, end > first ? r->end[end - 1] - r->start[first] : 0);
            if (last[d] > makespan)
                makespan = last[d];
        } else {
            span = fmax(span, device_figures(r, s, mem_of, costs, d, &makespan));
        }
        busy += r->busy[d];
    }
    psched__dealloc(last);
    bool copies = false; /* the fast path takes no copies */
    for (size_t g = 0; !fast && g < total && !copies; g++)
        copies = UNLIKELY_COPY(s->ops[g].kind);
    for (uint32_t d = 0; copies && d < s->devices && !st; d++)
        st = copy_peak(r, s, mem_of, costs, d);
    psched__dealloc(mem_of);
    if (st) {
        psched_report_destroy(r);
        return st;
    }
    double peak = 0, model = 0;
    for (uint32_t d = 0; d < s->devices; d++) {
        r->idle[d] = makespan - r->busy[d];
        peak = fmax(peak, r->peak[d]);
    }
    for (uint32_t st2 = 0; st2 < S; st2++)
        model += psched__plan_mem(costs, st2).f;
    r->makespan = makespan;
    r->span = span;
    r->bubble_ratio = makespan > 0 ? 1.0 - busy / ((double)s->devices * makespan) : 0.0;
    r->peak_memory_M = model != 0 ? peak / model : NAN;
    *out = r;
    return PSCHED_OK;
}

double psched_report_makespan(const psched_report *r) { return r ? r->makespan : NAN; }
double psched_report_span(const psched_report *r) { return r ? r->span : NAN; }
double psched_report_bubble_ratio(const psched_report *r) { return r ? r->bubble_ratio : NAN; }
double psched_report_peak_memory_M(const psched_report *r) { return r ? r->peak_memory_M : NAN; }
uint32_t psched_report_devices(const psched_report *r) { return r ? r->devices : 0; }

psched_status psched_report_device(const psched_report *r, uint32_t device, double *busy,
                                   double *idle, double *peak_memory)
{
    if (!r)
        return psched_fail(PSCHED_EINVAL, "report is NULL");
    if (device >= r->devices)
        return psched_fail(PSCHED_EINVAL, "device (%u) must be < devices (%u)", device,
                           r->devices);
    if (busy) *busy = r->busy[device];
    if (idle) *idle = r->idle[device];
    if (peak_memory) *peak_memory = r->peak[device];
    return PSCHED_OK;
}

psched_status psched_report_op_times(const psched_report *r, uint32_t device, size_t first,
                                     size_t count, double *start, double *end)
{
    if (!r)
        return psched_fail(PSCHED_EINVAL, "report is NULL");
    if (device >= r->devices)
        return psched_fail(PSCHED_EINVAL, "device (%u) must be < devices (%u)", device,
                           r->devices);
    size_t n = r->offset[device + 1] - r->offset[device];
    if (first > n || count > n - first)
        return psched_fail(PSCHED_EINVAL, "ops [%zu, %zu) out of range: device %u has %zu ops",
                           first, first + count, device, n);
    size_t base = r->offset[device] + first;
    if (start)
        memcpy(start, r->start + base, count * sizeof *start);
    if (end)
        memcpy(end, r->end + base, count * sizeof *end);
    return PSCHED_OK;
}
