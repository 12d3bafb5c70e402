/* psched_offload: activation offload (PipeOffload, arXiv 2503.01328) as a
 * transform of any compute schedule. The compute order stays; an OFFLOAD
 * of (s, k) follows the unit that runs F(s, k), and its RELOAD goes in front
 * of the compute unit just before the backward, so the copy back overlaps
 * that unit (or, when the backward comes right after the F, in front of the
 * backward itself). Which (s, k) are moved is the policy's choice, made on
 * the simulated times of the input. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

typedef struct offload {
    const psched_schedule *s;
    const psched_plan *costs;
    uint32_t S, mbs, per;
    size_t total;
    double *start, *end;   /* simulated times of the input, per op */
    uint32_t *fpos, *bpos; /* per cell (mb*S + stage): global index of F and backward */
    uint32_t *unit_of;     /* per op: index of its compute unit on its device */
    bool *chosen;          /* per cell */
} offload;

static void offload_free(offload *o)
{
    psched__dealloc(o->start);
    psched__dealloc(o->end);
    psched__dealloc(o->fpos);
    psched__dealloc(o->bpos);
    psched__dealloc(o->unit_of);
    psched__dealloc(o->chosen);
}

/* Copy time of one cell's activation. */
static double copy_time(const offload *o, uint32_t stage, uint32_t mb)
{
    double bw = psched_plan_pcie_bandwidth(o->costs);
    if (isinf(bw))
        return 0;
    double w = psched__plan_weight(o->costs, stage / o->per, mb);
    return fabs(psched__plan_mem(o->costs, stage).f) * w / bw;
}

/* Simulated lifespan of a cell's activation: from its F's end to its
 * backward's start. */
static double lifespan(const offload *o, size_t cell)
{
    return o->start[o->bpos[cell]] - o->end[o->fpos[cell]];
}

static psched_status offload_setup(offload *o, const psched_schedule *s, const psched_plan *costs)
{
    memset(o, 0, sizeof *o);
    o->s = s;
    o->costs = costs;
    o->S = s->plan->devices * s->plan->chunks;
    o->mbs = psched__plan_chain_mbs(s->plan);
    o->per = o->S / (s->plan->chains ? s->plan->chains : 1);
    o->total = s->offset[s->devices];
    for (size_t g = 0; g < o->total; g++) {
        if (s->ops[g].kind > PSCHED_OP_BW) {
            char t[48];
            psched__op_text(&s->ops[g], t, sizeof t);
            return psched_fail(PSCHED_EUNSUPPORTED,
                               "offload: op %s is not a compute op; offload a compute schedule "
                               "(no comm or copy ops)", t);
        }
    }
    size_t cells = (size_t)o->S * o->mbs;
    o->start = psched__reallocarray(NULL, o->total + 1, sizeof *o->start);
    o->end = psched__reallocarray(NULL, o->total + 1, sizeof *o->end);
    o->fpos = psched__reallocarray(NULL, cells + 1, sizeof *o->fpos);
    o->bpos = psched__reallocarray(NULL, cells + 1, sizeof *o->bpos);
    o->unit_of = psched__reallocarray(NULL, o->total + 1, sizeof *o->unit_of);
    o->chosen = psched__calloc(cells + 1, sizeof *o->chosen);
    if (!o->start || !o->end || !o->fpos || !o->bpos || !o->unit_of || !o->chosen)
        return PSCHED_ENOMEM_FAIL();
    /* validates the input too, with psched_validate's messages */
    psched_status st = psched__execute(s, costs, o->start, o->end);
    if (st)
        return st;
    memset(o->fpos, 0xff, cells * sizeof *o->fpos);
    memset(o->bpos, 0xff, cells * sizeof *o->bpos);
    for (uint32_t d = 0; d < s->devices; d++) {
        uint32_t u = 0;
        for (size_t g = s->offset[d]; g < s->offset[d + 1]; g++) {
            const psched_op *op = &s->ops[g];
            size_t cell = (size_t)op->microbatch * o->S + op->stage;
            if (op->kind == PSCHED_OP_F)
                o->fpos[cell] = (uint32_t)g;
            else if (op->kind == PSCHED_OP_B || op->kind == PSCHED_OP_BW)
                o->bpos[cell] = (uint32_t)g;
            o->unit_of[g] = u;
            if (!(op->flags & PSCHED_OP_OVERLAP_NEXT))
                u++;
        }
    }
    return PSCHED_OK;
}

/* A RELOAD to insert: in front of compute unit `unit` of `device`, in the
 * order of the backwards (`bpos`). */
typedef struct reload_at {
    uint32_t device, unit, bpos, stage, mb;
} reload_at;

static int reload_cmp(const void *pa, const void *pb)
{
    const reload_at *a = pa, *b = pb;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    if (a->unit != b->unit)
        return a->unit < b->unit ? -1 : 1;
    return a->bpos < b->bpos ? -1 : a->bpos > b->bpos;
}

/* The schedule with the chosen cells' copies inserted. */
static psched_status emit(const offload *o, psched_schedule **out)
{
    const psched_schedule *s = o->s;
    size_t cells = (size_t)o->S * o->mbs, n = 0;
    reload_at *rl = psched__reallocarray(NULL, cells + 1, sizeof *rl);
    if (!rl)
        return PSCHED_ENOMEM_FAIL();
    for (size_t c = 0; c < cells; c++) {
        if (!o->chosen[c])
            continue;
        uint32_t uf = o->unit_of[o->fpos[c]], ub = o->unit_of[o->bpos[c]];
        /* one unit ahead of the backward, but never ahead of the OFFLOAD */
        uint32_t unit = ub - 1 > uf ? ub - 1 : ub;
        uint32_t stage = (uint32_t)(c % o->S);
        rl[n++] = (reload_at){psched_plan_stage_device(s->plan, stage), unit, o->bpos[c], stage,
                              (uint32_t)(c / o->S)};
    }
    qsort(rl, n, sizeof *rl, reload_cmp);
    psched_plan *plan = NULL;
    psched_builder *b = NULL;
    psched_status st = psched_plan_clone(s->plan, &plan);
    if (!st)
        st = psched__builder_create_for(plan, o->total + 2 * n, &b);
    size_t next = 0;
    for (uint32_t d = 0; !st && d < s->devices; d++) {
        size_t unit_start = s->offset[d];
        for (size_t g = s->offset[d]; !st && g < s->offset[d + 1]; g++) {
            const psched_op *op = &s->ops[g];
            bool opens = g == s->offset[d] || !(s->ops[g - 1].flags & PSCHED_OP_OVERLAP_NEXT);
            if (opens) {
                unit_start = g;
                while (!st && next < n && rl[next].device == d &&
                       rl[next].unit == o->unit_of[g])
                    st = psched_builder_append(b, d, PSCHED_OP_RELOAD, rl[next].stage,
                                               rl[next].mb, 0), next++;
            }
            if (!st)
                st = psched_builder_append(b, d, (psched_op_kind)op->kind, op->stage,
                                           op->microbatch, op->flags);
            /* OFFLOADs after the unit that holds their F */
            for (size_t h = unit_start; !st && !(op->flags & PSCHED_OP_OVERLAP_NEXT) && h <= g;
                 h++) {
                const psched_op *q = &s->ops[h];
                if (q->kind == PSCHED_OP_F && o->chosen[(size_t)q->microbatch * o->S + q->stage])
                    st = psched_builder_append(b, d, PSCHED_OP_OFFLOAD, q->stage, q->microbatch,
                                               0);
            }
        }
    }
    if (!st)
        st = psched__builder_finish(b, plan, s->name, out);
    if (st)
        psched_plan_destroy(plan);
    psched__builder_destroy(b);
    psched__dealloc(rl);
    return st;
}

/* Budget: each round, every device whose simulated peak is over the budget
 * offloads its longest-held cell not yet chosen; stops when every device
 * fits or has nothing left to move. */
static psched_status choose_budget(offload *o, double budget, psched_schedule **out)
{
    const psched_schedule *s = o->s;
    size_t cells = (size_t)o->S * o->mbs;
    psched_schedule *cur = NULL;
    psched_status st = emit(o, &cur);
    for (;;) {
        psched_report *r = NULL;
        if (!st)
            st = psched_simulate(cur, o->costs, &r);
        if (st)
            break;
        bool moved = false;
        for (uint32_t d = 0; d < s->devices; d++) {
            if (r->peak[d] <= budget)
                continue;
            size_t best = SIZE_MAX;
            for (size_t c = 0; c < cells; c++) {
                uint32_t st2 = (uint32_t)(c % o->S);
                if (o->chosen[c] || psched_plan_stage_device(s->plan, st2) != d)
                    continue;
                if (best == SIZE_MAX || lifespan(o, c) > lifespan(o, best))
                    best = c;
            }
            if (best != SIZE_MAX) {
                o->chosen[best] = true;
                moved = true;
            }
        }
        psched_report_destroy(r);
        if (!moved)
            break;
        psched_schedule_destroy(cur);
        cur = NULL;
        st = emit(o, &cur);
    }
    if (st) {
        psched_schedule_destroy(cur);
        return st;
    }
    *out = cur;
    return PSCHED_OK;
}

psched_status psched_offload(const psched_schedule *schedule, const psched_plan *costs,
                             psched_offload_policy policy, double budget, psched_schedule **out)
{
    if (!out)
        return psched_fail(PSCHED_EINVAL, "output pointer is NULL");
    *out = NULL;
    if (!schedule)
        return psched_fail(PSCHED_EINVAL, "schedule is NULL");
    if (policy != PSCHED_OFFLOAD_ALL && policy != PSCHED_OFFLOAD_SELECTIVE &&
        policy != PSCHED_OFFLOAD_BUDGET)
        return psched_fail(PSCHED_EINVAL, "offload policy (%d) is not a psched_offload_policy",
                           (int)policy);
    if (policy == PSCHED_OFFLOAD_BUDGET && !(budget > 0))
        return psched_fail(PSCHED_EINVAL, "offload budget (%g) must be > 0 (memory units per "
                           "device)", budget);
    uint32_t S = schedule->plan->devices * schedule->plan->chunks;
    if (costs && psched_plan_stages(costs) != S)
        return psched_fail(PSCHED_EINVAL,
                           "cost plan has %u stages (devices x chunks) but the schedule has %u",
                           psched_plan_stages(costs), S);
    if (!costs)
        costs = schedule->plan;
    offload o;
    psched_status st = offload_setup(&o, schedule, costs);
    if (!st) {
        size_t cells = (size_t)o.S * o.mbs;
        for (size_t c = 0; policy != PSCHED_OFFLOAD_BUDGET && c < cells; c++) {
            uint32_t stage = (uint32_t)(c % o.S), mb = (uint32_t)(c / o.S);
            o.chosen[c] = policy == PSCHED_OFFLOAD_ALL ||
                          lifespan(&o, c) >= 2 * copy_time(&o, stage, mb);
        }
        st = policy == PSCHED_OFFLOAD_BUDGET ? choose_budget(&o, budget, out) : emit(&o, out);
    }
    offload_free(&o);
    return st;
}
