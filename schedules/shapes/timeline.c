/* One-chunk op lists timed while they grow. See timeline.h. */
#include "timeline.h"

#include <math.h>
#include <string.h>

psched_status psched__timeline_init(psched_timeline *t, const psched_plan *plan)
{
    memset(t, 0, sizeof *t);
    t->p = psched_plan_devices(plan);
    t->m = psched_plan_microbatches(plan);
    t->comm = psched_plan_comm(plan);
    t->limit = psched_plan_memory_limit(plan);
    size_t cells = (size_t)t->p * t->m;
    t->st = psched__reallocarray(NULL, t->p, sizeof *t->st);
    t->f_end = psched__reallocarray(NULL, cells, sizeof *t->f_end);
    t->b_end = psched__reallocarray(NULL, cells, sizeof *t->b_end);
    t->ops = psched__reallocarray(NULL, cells, 3 * sizeof *t->ops);
    t->best = psched__reallocarray(NULL, cells, 3 * sizeof *t->best);
    if (!t->st || !t->f_end || !t->b_end || !t->ops || !t->best) {
        psched__timeline_free(t);
        return PSCHED_ENOMEM_FAIL();
    }
    /* Weights only when one differs from 1: unit weights keep every figure
     * (and so every order) bit for bit. */
    for (uint32_t k = 0; k < t->m && !t->w; k++)
        if (psched_plan_microbatch_weight(plan, k) != 1.0) {
            t->w = psched__reallocarray(NULL, t->m, sizeof *t->w);
            if (!t->w) {
                psched__timeline_free(t);
                return PSCHED_ENOMEM_FAIL();
            }
            for (uint32_t i = 0; i < t->m; i++)
                t->w[i] = psched_plan_microbatch_weight(plan, i);
        }
    for (uint32_t j = 0; j < t->p; j++) {
        psched_tl_stage *s = &t->st[j];
        (void)psched_plan_stage_cost(plan, j, &s->tf, &s->tb, &s->tw);
        (void)psched_plan_stage_mem(plan, j, &s->mf, &s->mb, &s->mw);
    }
    t->best_span = INFINITY;
    t->has_best = false;
    psched__timeline_reset(t);
    return PSCHED_OK;
}

void psched__timeline_free(psched_timeline *t)
{
    psched__dealloc(t->w);
    psched__dealloc(t->st);
    psched__dealloc(t->f_end);
    psched__dealloc(t->b_end);
    psched__dealloc(t->ops);
    psched__dealloc(t->best);
    memset(t, 0, sizeof *t);
}

void psched__timeline_reset(psched_timeline *t)
{
    for (uint32_t j = 0; j < t->p; j++) {
        psched_tl_stage *s = &t->st[j];
        s->nf = s->nb = s->nw = s->count = 0;
        s->end = s->mem = s->idle = 0;
    }
    t->max_idle = 0;
}

/* The micro-batch of stage j's next op of `kind`. */
static uint32_t tl_next_mb(const psched_tl_stage *s, psched_op_kind kind)
{
    return kind == PSCHED_OP_F ? s->nf : kind == PSCHED_OP_B ? s->nb : s->nw;
}

double psched__timeline_cost(const psched_timeline *t, uint32_t j, psched_op_kind kind)
{
    const psched_tl_stage *s = &t->st[j];
    double c = kind == PSCHED_OP_F ? s->tf : kind == PSCHED_OP_B ? s->tb : s->tw;
    return t->w ? c * psched__timeline_weight(t, tl_next_mb(s, kind)) : c;
}

double psched__timeline_delta(const psched_timeline *t, uint32_t j, psched_op_kind kind)
{
    const psched_tl_stage *s = &t->st[j];
    double d = kind == PSCHED_OP_F ? s->mf : kind == PSCHED_OP_B ? s->mb : s->mw;
    return t->w ? d * psched__timeline_weight(t, tl_next_mb(s, kind)) : d;
}

/* Comparisons tolerate the rounding of non-integer deltas. */
bool psched__timeline_fits(const psched_timeline *t, double mem)
{
    return mem <= t->limit + 1e-9 * fmax(1.0, fabs(t->limit));
}

double psched__timeline_arrival(const psched_timeline *t, uint32_t j, psched_op_kind kind)
{
    const psched_tl_stage *s = &t->st[j];
    if (kind == PSCHED_OP_F) {
        if (j == 0)
            return 0;
        if (t->st[j - 1].nf <= s->nf)
            return INFINITY;
        return t->f_end[(size_t)(j - 1) * t->m + s->nf] + t->comm;
    }
    if (j + 1 == t->p)
        return 0;
    if (t->st[j + 1].nb <= s->nb)
        return INFINITY;
    return t->b_end[(size_t)(j + 1) * t->m + s->nb] + t->comm;
}

bool psched__timeline_put(psched_timeline *t, uint32_t j, psched_op_kind kind)
{
    psched_tl_stage *s = &t->st[j];
    uint32_t mb = kind == PSCHED_OP_F ? s->nf : kind == PSCHED_OP_B ? s->nb : s->nw;
    double start = s->end, cost, delta;
    if (mb >= t->m)
        return false;
    if (kind == PSCHED_OP_F || kind == PSCHED_OP_B) {
        if (kind == PSCHED_OP_B && s->nf <= mb)
            return false;
        double arrival = psched__timeline_arrival(t, j, kind);
        if (arrival == INFINITY)
            return false;
        start = fmax(start, arrival);
    } else if (s->nb <= mb) {
        return false;
    }
    cost = psched__timeline_cost(t, j, kind);
    delta = psched__timeline_delta(t, j, kind);
    if (!psched__timeline_fits(t, s->mem + delta))
        return false;
    if (s->count > 0) {
        s->idle += start - s->end;
        t->max_idle = fmax(t->max_idle, s->idle);
    }
    s->end = start + cost;
    s->mem += delta;
    if (kind == PSCHED_OP_F)
        t->f_end[(size_t)j * t->m + s->nf++] = s->end;
    else if (kind == PSCHED_OP_B)
        t->b_end[(size_t)j * t->m + s->nb++] = s->end;
    else
        s->nw++;
    t->ops[(size_t)j * 3 * t->m + s->count++] = (mb << 2) | (uint32_t)kind;
    return true;
}

bool psched__timeline_make_room(psched_timeline *t, uint32_t j, double delta)
{
    while (!psched__timeline_fits(t, t->st[j].mem + delta))
        if (!psched__timeline_w_pending(t, j) || !psched__timeline_put(t, j, PSCHED_OP_W))
            return false;
    return true;
}

void psched__timeline_fill(psched_timeline *t, uint32_t j, double arrival)
{
    const psched_tl_stage *s = &t->st[j];
    while (psched__timeline_w_pending(t, j) &&
           s->end + psched__timeline_cost(t, j, PSCHED_OP_W) <= arrival)
        if (!psched__timeline_put(t, j, PSCHED_OP_W))
            return;
}

bool psched__timeline_drain(psched_timeline *t)
{
    for (uint32_t j = 0; j < t->p; j++)
        while (psched__timeline_w_pending(t, j))
            if (!psched__timeline_put(t, j, PSCHED_OP_W))
                return false;
    return true;
}

/* Whether op is stage j's next op of its kind. */
static bool tl_is_next(const psched_timeline *t, uint32_t j, const psched_op *op)
{
    const psched_tl_stage *s = &t->st[j];
    if (op->stage != j || op->flags != 0)
        return false;
    switch (op->kind) {
    case PSCHED_OP_F: return op->microbatch == s->nf;
    case PSCHED_OP_B: return op->microbatch == s->nb;
    case PSCHED_OP_W: return op->microbatch == s->nw;
    default: return false;
    }
}

/* Sweeps the devices, each placing ops until one waits for another
 * device; a sweep without progress means the limit is broken (a valid
 * order always lets some device go on). */
bool psched__timeline_replay(psched_timeline *t, const psched_schedule *s)
{
    /* Through the public accessors, as any generator would read a schedule. */
    if (psched_schedule_devices(s) != t->p)
        return false;
    psched__timeline_reset(t);
    bool progress = true;
    while (progress) {
        progress = false;
        for (uint32_t j = 0; j < t->p; j++) {
            size_t n = psched_schedule_op_count(s, j);
            while (t->st[j].count < n) {
                psched_op op;
                if (psched_schedule_ops(s, j, t->st[j].count, 1, &op, sizeof op) != PSCHED_OK ||
                    !tl_is_next(t, j, &op))
                    return false;
                if (!psched__timeline_put(t, j, (psched_op_kind)op.kind))
                    break;
                progress = true;
            }
        }
    }
    return true;
}

double psched__timeline_offer(psched_timeline *t)
{
    double span = 0;
    for (uint32_t j = 0; j < t->p; j++) {
        const psched_tl_stage *s = &t->st[j];
        if (s->count != 3 * t->m)
            return INFINITY;
        /* Every list starts with its F0. */
        span = fmax(span, s->end - (t->f_end[(size_t)j * t->m] -
                                    s->tf * psched__timeline_weight(t, 0)));
    }
    /* The first complete order is kept whatever its span: a span that is
     * not finite (costs near DBL_MAX) never compares smaller, and `best`
     * must never be emitted unfilled. */
    if (!t->has_best || span < t->best_span) {
        uint32_t *keep = t->best;
        t->best = t->ops;
        t->ops = keep;
        t->best_span = span;
        t->has_best = true;
    }
    return span;
}

psched_status psched__timeline_emit(const psched_timeline *t, psched_builder *b)
{
    if (!t->has_best)
        return psched_fail(PSCHED_EINVAL, "zb: no candidate order completed (a generator bug: "
                                          "the one-micro-batch-at-a-time order always fits)");
    psched_status st = PSCHED_OK;
    size_t per = (size_t)3 * t->m;
    for (uint32_t j = 0; j < t->p && st == PSCHED_OK; j++) {
        st = psched_builder_reserve(b, j, per);
        for (size_t k = 0; k < per && st == PSCHED_OK; k++) {
            uint32_t op = t->best[(size_t)j * per + k];
            st = psched_builder_append(b, j, (psched_op_kind)(op & 3u), j, op >> 2, 0);
        }
    }
    return st;
}
