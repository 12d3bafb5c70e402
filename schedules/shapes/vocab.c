/* Vocabulary passes and their collectives woven into a pipeline order: see
 * vocab.h. */
#include "vocab.h"

#include <math.h>
#include <string.h>

const psched_generator_option_desc psched__vocab_option[] = {{
    .name = "vocab",
    .description = "Vocabulary Parallelism (Yeung et al. 2025): 0 off, 1 Vocab-1 (S, T and "
                   "three collectives per micro-batch), 2 Vocab-2 (online softmax: two)",
    .min = 0,
    .max = 2,
    .default_value = 0,
}};

uint32_t psched__vocab_of(const psched_plan *plan)
{
    int64_t v = 0;
    if (psched_plan_get_option(plan, "vocab", &v) != PSCHED_OK || v < 0 || v > 2)
        return 0;
    return (uint32_t)v;
}

/* The collectives and S passes every device takes in one order (the
 * collectives' one global order): per micro-batch k, C0_k S_k C1_k, and for
 * Vocab-1 C2_{k-1} after C1_k (C2_k needs every T_k, which needs C1_k; one
 * micro-batch later it waits for no T that has not had time to run). The
 * T passes float: T_k runs once C1_k has run, in micro-batch order. */
enum { IT_C0, IT_S, IT_C1, IT_C2 };

typedef struct item {
    uint8_t what;
    uint32_t k;
} item;

typedef struct weave {
    const psched_plan *plan;
    const psched_schedule *base;
    uint32_t p, m, S, root;
    bool vocab1;
    item *seq;   /* the shared order */
    size_t nseq;
    double comm, ts, tt;
    double *f_end, *b_end, *bpart_end; /* [stage*m + k]: F, backward (B or BW), B alone */
    double *cend;                      /* [k*3 + j]: end of collective j, NAN before */
    uint32_t *arrived;                 /* [k*3 + j] */
    double *arrive_max;
    double comm_free;
    double *free;     /* [d] */
    size_t *pos;      /* [d]: next base op (global index) */
    size_t *vi;       /* [d]: next item of seq */
    uint32_t *ti;     /* [d]: next T pass's micro-batch */
    bool completed;   /* the last action completed a collective */
    /* devices by their next action's start, then index (the order a scan
     * from device 0 would pick them in) */
    double *key;      /* [d] */
    int *what;        /* [d]: PICK_SEQ, PICK_T or PICK_BASE */
    uint32_t *heap, *hpos;
} weave;

static double weight(const weave *w, uint32_t k)
{
    return psched__plan_weight(w->plan, 0, k);
}

/* max(t, e), INFINITY while e is not known (NAN): fmax would drop it. */
static double after(double t, double e)
{
    return isnan(e) ? INFINITY : fmax(t, e);
}

/* Start of the base op at pos[d], or INFINITY while an input is missing. */
static double base_start(const weave *w, uint32_t d)
{
    const psched_op *o = &w->base->ops[w->pos[d]];
    uint32_t s = o->stage, k = o->microbatch, m = w->m;
    double t = w->free[d];
    uint32_t dev = psched_plan_stage_device(w->plan, s);
    switch (o->kind) {
    case PSCHED_OP_F:
        if (s > 0) {
            double e = w->f_end[(size_t)(s - 1) * m + k];
            uint32_t from = psched_plan_stage_device(w->plan, s - 1);
            t = after(t, e + (from != dev ? w->comm : 0));
        }
        break;
    case PSCHED_OP_B:
    case PSCHED_OP_BW:
        t = after(t, w->f_end[(size_t)s * m + k]);
        if (s + 1 < w->S) {
            double e = w->b_end[(size_t)(s + 1) * m + k];
            uint32_t from = psched_plan_stage_device(w->plan, s + 1);
            t = after(t, e + (from != dev ? w->comm : 0));
        } else {
            t = after(t, w->cend[(size_t)k * 3 + (w->vocab1 ? 2 : 1)]);
        }
        break;
    case PSCHED_OP_W:
        t = after(t, w->bpart_end[(size_t)s * m + k]);
        break;
    }
    return t;
}

/* Start of device d's next shared item (a collective: its arrival), or
 * INFINITY while it cannot be taken. */
static double seq_start(const weave *w, uint32_t d)
{
    item it = w->seq[w->vi[d]];
    double t = w->free[d];
    switch (it.what) {
    case IT_C0:
        /* the broadcast's root sends once the last stage's F has run */
        if (d == w->root && isnan(w->f_end[(size_t)(w->S - 1) * w->m + it.k]))
            return INFINITY;
        return t;
    case IT_S:
        return after(t, w->cend[(size_t)it.k * 3]);
    case IT_C2:
        /* after this device's T_k */
        return w->ti[d] > it.k ? t : INFINITY;
    default:
        return t;
    }
}

static double t_start(const weave *w, uint32_t d)
{
    return after(w->free[d], w->cend[(size_t)w->ti[d] * 3 + 1]);
}

static psched_status take_collective(weave *w, psched_builder *b, uint32_t d, uint32_t j,
                                     uint32_t k, double start)
{
    size_t c = (size_t)k * 3 + j;
    w->arrive_max[c] = fmax(w->arrive_max[c], start);
    if (++w->arrived[c] == w->p) {
        double s = fmax(w->arrive_max[c], w->comm_free);
        w->cend[c] = s + psched__collective_time(w->plan, w->p, j, weight(w, k));
        w->comm_free = w->cend[c];
        w->completed = true;
    }
    return psched_builder_append(b, d, PSCHED_OP_COLLECTIVE, j, k, 0);
}

static psched_status take_seq(weave *w, psched_builder *b, uint32_t d, double start)
{
    item it = w->seq[w->vi[d]++];
    if (it.what == IT_S) {
        w->free[d] = start + w->ts * weight(w, it.k);
        return psched_builder_append(b, d, PSCHED_OP_VOCAB_S, d, it.k, 0);
    }
    return take_collective(w, b, d, it.what == IT_C0 ? 0 : it.what == IT_C1 ? 1 : 2, it.k,
                           start);
}

static psched_status take_t(weave *w, psched_builder *b, uint32_t d, double start)
{
    uint32_t k = w->ti[d]++;
    w->free[d] = start + w->tt * weight(w, k);
    return psched_builder_append(b, d, PSCHED_OP_VOCAB_T, d, k, 0);
}

static psched_status take_base(weave *w, psched_builder *b, uint32_t d, double start)
{
    const psched_op *o = &w->base->ops[w->pos[d]++];
    double f, bb, ww;
    psched_plan_stage_cost(w->plan, o->stage, &f, &bb, &ww);
    double t = o->kind == PSCHED_OP_F ? f : o->kind == PSCHED_OP_B ? bb
             : o->kind == PSCHED_OP_W ? ww : bb + ww;
    double end = start + t * weight(w, o->microbatch);
    size_t cell = (size_t)o->stage * w->m + o->microbatch;
    if (o->kind == PSCHED_OP_F)
        w->f_end[cell] = end;
    else if (o->kind != PSCHED_OP_W)
        w->b_end[cell] = end;
    if (o->kind == PSCHED_OP_B)
        w->bpart_end[cell] = end;
    w->free[d] = end;
    return psched_builder_append(b, d, (psched_op_kind)o->kind, o->stage, o->microbatch, 0);
}

enum { PICK_SEQ, PICK_T, PICK_BASE };

/* Device d's next op and its start: the shared order first, then its T
 * pass, then its pipeline op, whichever starts earliest (ties in that
 * order, but the last stage's backward, the critical path, goes before a
 * T pass that would start no earlier). */
static double choose(const weave *w, uint32_t d, int *pick)
{
    bool has_base = w->pos[d] < w->base->offset[d + 1];
    double ts = w->vi[d] < w->nseq ? seq_start(w, d) : INFINITY;
    double tt = w->ti[d] < w->m ? t_start(w, d) : INFINITY;
    double tb = has_base ? base_start(w, d) : INFINITY;
    bool critical = has_base && w->base->ops[w->pos[d]].stage == w->S - 1 &&
                    w->base->ops[w->pos[d]].kind != PSCHED_OP_F;
    *pick = PICK_SEQ;
    double best = ts;
    if (tt < best) {
        best = tt;
        *pick = PICK_T;
    }
    if (tb < best || (tb == best && *pick == PICK_T && critical)) {
        best = tb;
        *pick = PICK_BASE;
    }
    return best;
}

static bool heap_less(const weave *w, uint32_t a, uint32_t b)
{
    return w->key[a] < w->key[b] || (w->key[a] == w->key[b] && a < b);
}

static void heap_swap(weave *w, uint32_t i, uint32_t j)
{
    uint32_t a = w->heap[i], b = w->heap[j];
    w->heap[i] = b;
    w->heap[j] = a;
    w->hpos[b] = i;
    w->hpos[a] = j;
}

/* Recomputes device d's next action and restores the heap. */
static void refresh(weave *w, uint32_t d)
{
    w->key[d] = choose(w, d, &w->what[d]);
    uint32_t i = w->hpos[d];
    while (i > 0 && heap_less(w, w->heap[i], w->heap[(i - 1) / 2])) {
        heap_swap(w, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < w->p && heap_less(w, w->heap[l], w->heap[m]))
            m = l;
        if (r < w->p && heap_less(w, w->heap[r], w->heap[m]))
            m = r;
        if (m == i)
            break;
        heap_swap(w, i, m);
        i = m;
    }
}

/* The earliest action over all devices, one at a time. A device's next
 * action changes only when it acts, when a neighbour stage's op it waits
 * for runs, or when a collective completes (every device), so only those
 * devices are re-keyed: O(ops log p) but for the collectives' O(p) each. */
static psched_status run(weave *w, psched_builder *b)
{
    for (uint32_t d = 0; d < w->p; d++) {
        w->heap[d] = d;
        w->hpos[d] = d;
        w->key[d] = INFINITY;
    }
    for (uint32_t d = 0; d < w->p; d++)
        refresh(w, d);
    for (;;) {
        uint32_t who = w->heap[0];
        double best = w->key[who];
        if (best == INFINITY) {
            for (uint32_t d = 0; d < w->p; d++)
                if (w->pos[d] < w->base->offset[d + 1] || w->vi[d] < w->nseq || w->ti[d] < w->m)
                    return psched_fail(PSCHED_EINVAL, "vocabulary passes: the base order cannot "
                                       "run (a last-stage backward before its forward?)");
            return PSCHED_OK;
        }
        int pick = w->what[who];
        const psched_op *o = pick == PICK_BASE ? &w->base->ops[w->pos[who]] : NULL;
        w->completed = false;
        psched_status st = pick == PICK_SEQ ? take_seq(w, b, who, best)
                         : pick == PICK_T   ? take_t(w, b, who, best)
                                            : take_base(w, b, who, best);
        if (st)
            return st;
        refresh(w, who);
        if (o && o->kind == PSCHED_OP_F && o->stage + 1 < w->S)
            refresh(w, psched_plan_stage_device(w->plan, o->stage + 1));
        if (o && (o->kind == PSCHED_OP_B || o->kind == PSCHED_OP_BW) && o->stage > 0)
            refresh(w, psched_plan_stage_device(w->plan, o->stage - 1));
        if (o && o->kind == PSCHED_OP_F && o->stage + 1 == w->S)
            refresh(w, w->root); /* its broadcast may go now */
        for (uint32_t d = 0; w->completed && d < w->p; d++)
            refresh(w, d);
    }
}

/* The shared order. Vocab-1's C2_k goes after C1_{k+1} when the root runs
 * the last stage's F of k+1 before its backward of k (1F1B's extra
 * warm-up), so no device waits on it early; otherwise right after C1_k,
 * since C0_{k+1} cannot run before that backward. */
static psched_status build_seq(weave *w)
{
    /* where the root's list has the last stage's F and backward of each k */
    size_t *fpos = psched__reallocarray(NULL, (size_t)w->m * 2 + 1, sizeof *fpos);
    if (!fpos)
        return PSCHED_ENOMEM_FAIL();
    size_t *bpos = fpos + w->m;
    for (size_t g = w->base->offset[w->root]; g < w->base->offset[w->root + 1]; g++) {
        const psched_op *o = &w->base->ops[g];
        if (o->stage == w->S - 1 && o->kind != PSCHED_OP_W)
            (o->kind == PSCHED_OP_F ? fpos : bpos)[o->microbatch] = g;
    }
    bool pending = false; /* C2_{k-1} still to place */
    for (uint32_t k = 0; k < w->m; k++) {
        if (pending && !(fpos[k] < bpos[k - 1])) {
            w->seq[w->nseq++] = (item){IT_C2, k - 1};
            pending = false;
        }
        w->seq[w->nseq++] = (item){IT_C0, k};
        w->seq[w->nseq++] = (item){IT_S, k};
        w->seq[w->nseq++] = (item){IT_C1, k};
        if (pending)
            w->seq[w->nseq++] = (item){IT_C2, k - 1};
        pending = w->vocab1;
    }
    if (pending)
        w->seq[w->nseq++] = (item){IT_C2, w->m - 1};
    psched__dealloc(fpos);
    return PSCHED_OK;
}

static void weave_free(weave *w)
{
    psched__dealloc(w->f_end);
    psched__dealloc(w->b_end);
    psched__dealloc(w->bpart_end);
    psched__dealloc(w->cend);
    psched__dealloc(w->arrived);
    psched__dealloc(w->arrive_max);
    psched__dealloc(w->free);
    psched__dealloc(w->pos);
    psched__dealloc(w->vi);
    psched__dealloc(w->ti);
    psched__dealloc(w->seq);
    psched__dealloc(w->key);
    psched__dealloc(w->what);
    psched__dealloc(w->heap);
    psched__dealloc(w->hpos);
}

static psched_status weave_run(const psched_plan *plan, const psched_schedule *base,
                               psched_builder *b, uint32_t vocab)
{
    weave w = {0};
    w.plan = plan;
    w.base = base;
    w.p = psched_plan_devices(plan);
    w.m = psched_plan_microbatches(plan);
    w.S = psched_plan_stages(plan);
    w.root = psched_plan_stage_device(plan, w.S - 1);
    w.vocab1 = vocab == 1;
    w.comm = psched_plan_comm(plan);
    psched_plan_vocab_cost(plan, &w.ts, &w.tt);
    size_t cells = (size_t)w.S * w.m, colls = (size_t)w.m * 3;
    w.f_end = psched__reallocarray(NULL, cells + 1, sizeof *w.f_end);
    w.b_end = psched__reallocarray(NULL, cells + 1, sizeof *w.b_end);
    w.bpart_end = psched__reallocarray(NULL, cells + 1, sizeof *w.bpart_end);
    w.cend = psched__reallocarray(NULL, colls + 1, sizeof *w.cend);
    w.arrived = psched__calloc(colls + 1, sizeof *w.arrived);
    w.arrive_max = psched__calloc(colls + 1, sizeof *w.arrive_max);
    w.free = psched__calloc(w.p, sizeof *w.free);
    w.pos = psched__reallocarray(NULL, w.p, sizeof *w.pos);
    w.vi = psched__calloc(w.p, sizeof *w.vi);
    w.ti = psched__calloc(w.p, sizeof *w.ti);
    w.seq = psched__reallocarray(NULL, (size_t)w.m * 4 + 1, sizeof *w.seq);
    w.key = psched__reallocarray(NULL, w.p, sizeof *w.key);
    w.what = psched__reallocarray(NULL, w.p, sizeof *w.what);
    w.heap = psched__reallocarray(NULL, w.p, sizeof *w.heap);
    w.hpos = psched__reallocarray(NULL, w.p, sizeof *w.hpos);
    psched_status st = PSCHED_OK;
    if (!w.f_end || !w.b_end || !w.bpart_end || !w.cend || !w.arrived || !w.arrive_max ||
        !w.free || !w.pos || !w.vi || !w.ti || !w.seq || !w.key || !w.what || !w.heap ||
        !w.hpos) {
        st = PSCHED_ENOMEM_FAIL();
    } else {
        for (size_t i = 0; i < cells; i++)
            w.f_end[i] = w.b_end[i] = w.bpart_end[i] = NAN;
        for (size_t i = 0; i < colls; i++)
            w.cend[i] = NAN;
        for (uint32_t d = 0; d < w.p; d++)
            w.pos[d] = base->offset[d];
        st = build_seq(&w);
        if (!st)
            st = run(&w, b);
    }
    weave_free(&w);
    return st;
}

psched_status psched__vocab_generate(const psched_plan *plan, psched_builder *b, uint32_t vocab,
                                     psched_vocab_base base)
{
    if (psched_plan_chains(plan) != 1)
        return psched_fail(PSCHED_EINVAL, "vocab (%u) needs one chain (the plan has %u)", vocab,
                           psched_plan_chains(plan));
    psched_builder *tmp = NULL;
    psched_plan *copy = NULL;
    psched_schedule *s = NULL;
    psched_status st = psched__builder_create_for(plan, 0, &tmp);
    if (!st)
        st = base(plan, tmp);
    if (!st)
        st = psched_plan_clone(plan, &copy);
    if (!st) {
        st = psched__builder_finish(tmp, copy, "base", &s);
        if (!st)
            copy = NULL; /* the schedule owns it */
    }
    psched__builder_destroy(tmp);
    psched_plan_destroy(copy);
    if (!st)
        st = weave_run(plan, s, b, vocab);
    psched_schedule_destroy(s);
    return st;
}
