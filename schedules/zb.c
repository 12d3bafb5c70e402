/* zb: the greedy zero-bubble scheduler (the heuristic of "Zero Bubble
 * Pipeline Parallelism", Qi et al. 2023, §3.1) for arbitrary per-stage
 * t_F/t_B/t_W, communication latency and a per-device memory limit.
 *
 * The order is built micro-batch by micro-batch and timed as it grows, so
 * every decision sees the real times of what it waits for:
 *   round 0: every stage runs F0, then as many extra forwards as fit before
 *            the first backward comes back (and within the memory limit),
 *            then B0 runs from the last stage to the first;
 *   round i: the stages run their next forward (a stage far ahead of its
 *            successor may skip it), then B_i runs from the last stage to
 *            the first.
 * Pending W fill the wait before a forward or backward whose input has not
 * arrived, and run whenever the next op would not fit the memory limit.
 * Three yes/no choices give eight variants; the one-micro-batch-at-a-time
 * order (the memory-minimal one) is a ninth and the fallback. The variant
 * with the smallest span wins, the first one on ties. With unit costs and
 * limit p this reproduces ZB-H1's span 3m+p-1 (m >= p); with limit 2p it
 * finds a zero-bubble schedule.
 *
 * Memory is the running sum of the stage's deltas in list order, as the
 * simulator counts it. The smallest limit accepted is the peak of the
 * one-micro-batch-at-a-time order, which is the true minimum whenever
 * mem_F >= 0 and mem_F + mem_B + mem_W <= 0 (every order starts with a
 * forward, and before its first backward it has run only forwards). */
#include "phases.h"

#include <math.h>
#include <string.h>

#define NAME "zb"

/* The heuristic's three choices. */
typedef struct zb_variant {
    /* Warm-up forwards must end before the first backward arrives (the
     * device may idle before B0); otherwise a forward starts whenever the
     * device would idle, even if it then delays B0. */
    bool bubble_before_first_b;
    /* A stage two or more forwards ahead of its successor skips its forward
     * when the successor's next backward would otherwise wait for it. */
    bool prioritize_b;
    /* A W goes into a gap shorter than one W even when the device could
     * afford to idle there (its idle time stays below the worst device's). */
    bool fill_every_gap;
    /* Not the heuristic: one micro-batch at a time (F B W per round). */
    bool serial;
} zb_variant;

/* One stage (= one device, v = 1) while its list grows. */
typedef struct zb_stage {
    double tf, tb, tw;   /* costs */
    double mf, mb, mw;   /* memory deltas */
    uint32_t nf, nb, nw; /* forwards, backwards, weight passes placed */
    uint32_t count;      /* ops in the list */
    double end;          /* end of the last op */
    double mem;          /* running memory */
    double idle;         /* waiting time since the first op */
} zb_stage;

typedef struct zb_run {
    uint32_t p, m;
    double comm, limit;
    zb_stage *st;
    double *f_end, *b_end; /* [stage * m + mb] */
    uint32_t *ops;         /* [stage * 3m + k]: (mb << 2) | kind */
    uint32_t *extra;       /* per stage: warm-up forwards beyond F0 */
    uint8_t *want;         /* per stage: runs a forward this round */
    double max_idle;
} zb_run;

/* Memory comparisons tolerate rounding of non-integer deltas. */
static bool zb_fits(const zb_run *r, double mem)
{
    return mem <= r->limit + 1e-9 * fmax(1.0, fabs(r->limit));
}

static bool zb_w_pending(const zb_stage *s)
{
    return s->nw < s->nb;
}

/* Appends the next op of `kind` on stage j at its earliest start after the
 * list's end. False (nothing changes) when its micro-batch does not exist,
 * a dependency is not placed yet, or memory would exceed the limit. */
static bool zb_put(zb_run *r, uint32_t j, psched_op_kind kind)
{
    zb_stage *s = &r->st[j];
    uint32_t mb = kind == PSCHED_OP_F ? s->nf : kind == PSCHED_OP_B ? s->nb : s->nw;
    double start = s->end, cost, delta;
    if (mb >= r->m)
        return false;
    if (kind == PSCHED_OP_F) {
        if (j > 0 && r->st[j - 1].nf <= mb)
            return false;
        if (j > 0)
            start = fmax(start, r->f_end[(size_t)(j - 1) * r->m + mb] + r->comm);
        cost = s->tf, delta = s->mf;
    } else if (kind == PSCHED_OP_B) {
        if (s->nf <= mb || (j + 1 < r->p && r->st[j + 1].nb <= mb))
            return false;
        if (j + 1 < r->p)
            start = fmax(start, r->b_end[(size_t)(j + 1) * r->m + mb] + r->comm);
        cost = s->tb, delta = s->mb;
    } else {
        if (s->nb <= mb)
            return false;
        cost = s->tw, delta = s->mw;
    }
    if (!zb_fits(r, s->mem + delta))
        return false;
    if (s->count > 0) {
        s->idle += start - s->end;
        r->max_idle = fmax(r->max_idle, s->idle);
    }
    s->end = start + cost;
    s->mem += delta;
    if (kind == PSCHED_OP_F)
        r->f_end[(size_t)j * r->m + s->nf++] = s->end;
    else if (kind == PSCHED_OP_B)
        r->b_end[(size_t)j * r->m + s->nb++] = s->end;
    else
        s->nw++;
    r->ops[(size_t)j * 3 * r->m + s->count++] = (mb << 2) | (uint32_t)kind;
    return true;
}

/* Runs pending W until an op with memory delta `delta` fits. */
static bool zb_make_room(zb_run *r, uint32_t j, double delta)
{
    zb_stage *s = &r->st[j];
    while (!zb_fits(r, s->mem + delta))
        if (!zb_w_pending(s) || !zb_put(r, j, PSCHED_OP_W))
            return false;
    return true;
}

/* Fills the wait of stage j for an input arriving at `arrival` with pending
 * W: every W that ends by then, and one more that overlaps the arrival
 * unless the stage can afford the short idle gap (and the variant lets it). */
static void zb_fill_wait(zb_run *r, const zb_variant *v, uint32_t j, double arrival)
{
    zb_stage *s = &r->st[j];
    while (zb_w_pending(s) && s->end + s->tw <= arrival)
        if (!zb_put(r, j, PSCHED_OP_W))
            return;
    if (!zb_w_pending(s) || s->end >= arrival)
        return;
    bool affordable = arrival - s->end <= r->max_idle - s->idle;
    if (!affordable || v->fill_every_gap)
        (void)zb_put(r, j, PSCHED_OP_W);
}

/* Warm-up forwards of every stage beyond F0: walking from the last stage to
 * the first, the time the first backward reaches each stage bounds how
 * many forwards fit before it. A stage never runs more forwards than its
 * predecessor (one fewer while the predecessor has some left), which keeps
 * the 1F1B shape and every forward's input placed before it. */
static void zb_warmup_counts(zb_run *r, const zb_variant *v)
{
    uint32_t last = r->p - 1;
    double back = r->f_end[(size_t)last * r->m] + r->st[last].tb;
    r->extra[last] = 0;
    for (uint32_t j = last; j-- > 0;) {
        const zb_stage *s = &r->st[j];
        double arrival = back + r->comm, t = s->end, mem = s->mem;
        uint32_t k = 0;
        while (s->nf + k < r->m && zb_fits(r, mem + s->mf)) {
            if (v->bubble_before_first_b ? t + s->tf > arrival : t >= arrival)
                break;
            mem += s->mf;
            t += s->tf;
            k++;
        }
        r->extra[j] = k;
        back = fmax(t, arrival) + s->tb;
    }
    for (uint32_t j = 1; j < r->p; j++) {
        uint32_t prev = r->st[j - 1].nf + r->extra[j - 1];
        uint32_t cap = prev < r->m ? prev - 1 : prev;
        uint32_t have = r->st[j].nf;
        r->extra[j] = cap > have ? (r->extra[j] < cap - have ? r->extra[j] : cap - have) : 0;
    }
}

static bool zb_round0(zb_run *r, const zb_variant *v)
{
    for (uint32_t j = 0; j < r->p; j++)
        if (!zb_put(r, j, PSCHED_OP_F))
            return false;
    zb_warmup_counts(r, v);
    for (uint32_t j = 0; j < r->p; j++)
        for (uint32_t k = 0; k < r->extra[j]; k++)
            if (!zb_put(r, j, PSCHED_OP_F))
                return false;
    for (uint32_t j = r->p; j-- > 0;)
        if (!zb_make_room(r, j, r->st[j].mb) || !zb_put(r, j, PSCHED_OP_B))
            return false;
    return true;
}

/* Whether stage j skips its forward this round to serve the backward: its
 * successor's next backward is expected at `next_b`; skip when the device
 * is already past it, or when the forward (with the W it needs to make
 * room) would end after it and the stage can afford to idle until then. */
static bool zb_skip_forward(const zb_run *r, uint32_t j)
{
    const zb_stage *s = &r->st[j], *n = &r->st[j + 1];
    double next_b = n->end + n->tf + n->tb + r->comm;
    if (s->end >= next_b)
        return true;
    double mem = s->mem + s->mf, w_cost = 0;
    for (uint32_t k = s->nw; !zb_fits(r, mem) && k < s->nb; k++) {
        mem += s->mw;
        w_cost += s->tw;
    }
    if (s->end + s->tf + w_cost <= next_b)
        return false;
    return next_b - s->end <= r->max_idle - s->idle;
}

static bool zb_round(zb_run *r, const zb_variant *v, uint32_t i)
{
    for (uint32_t j = 0; j < r->p; j++) {
        const zb_stage *s = &r->st[j];
        bool want = s->nf < r->m;
        if (want && v->prioritize_b && j + 1 < r->p && s->nf >= r->st[j + 1].nf + 2)
            want = !zb_skip_forward(r, j);
        r->want[j] = want;
    }
    /* A stage whose successor skips skips too: the successor would not
     * consume the extra activation yet. */
    for (uint32_t j = r->p - 1; j-- > 0;)
        r->want[j] = r->want[j] && r->want[j + 1];
    for (uint32_t j = 0; j < r->p; j++) {
        zb_stage *s = &r->st[j];
        if (!r->want[j] || (j > 0 && s->nf >= r->st[j - 1].nf))
            continue;
        if (!zb_make_room(r, j, s->mf))
            return false;
        if (j > 0)
            zb_fill_wait(r, v, j, r->f_end[(size_t)(j - 1) * r->m + s->nf] + r->comm);
        if (!zb_put(r, j, PSCHED_OP_F))
            return false;
    }
    for (uint32_t j = r->p; j-- > 0;) {
        zb_stage *s = &r->st[j];
        if (!zb_make_room(r, j, s->mb))
            return false;
        if (j + 1 < r->p && r->st[j + 1].nb > i)
            zb_fill_wait(r, v, j, r->b_end[(size_t)(j + 1) * r->m + i] + r->comm);
        /* Nothing waits for the first stage's backward but its own W. */
        if (j == 0 && s->nf == r->m)
            while (zb_w_pending(s))
                if (!zb_put(r, j, PSCHED_OP_W))
                    return false;
        if (!zb_put(r, j, PSCHED_OP_B))
            return false;
    }
    return true;
}

static bool zb_serial_round(zb_run *r)
{
    for (uint32_t j = 0; j < r->p; j++)
        if (!zb_put(r, j, PSCHED_OP_F))
            return false;
    for (uint32_t j = r->p; j-- > 0;)
        if (!zb_put(r, j, PSCHED_OP_B))
            return false;
    for (uint32_t j = 0; j < r->p; j++)
        if (!zb_put(r, j, PSCHED_OP_W))
            return false;
    return true;
}

static void zb_reset(zb_run *r, const psched_plan *plan)
{
    for (uint32_t j = 0; j < r->p; j++) {
        zb_stage *s = &r->st[j];
        memset(s, 0, sizeof *s);
        (void)psched_plan_stage_cost(plan, j, &s->tf, &s->tb, &s->tw);
        (void)psched_plan_stage_mem(plan, j, &s->mf, &s->mb, &s->mw);
    }
    r->max_idle = 0;
}

/* Builds one variant; returns its span, or INFINITY when it cannot keep
 * the memory limit. */
static double zb_build(zb_run *r, const psched_plan *plan, const zb_variant *v)
{
    zb_reset(r, plan);
    bool ok = true;
    if (v->serial) {
        for (uint32_t i = 0; i < r->m && ok; i++)
            ok = zb_serial_round(r);
    } else {
        ok = zb_round0(r, v);
        for (uint32_t i = 1; i < r->m && ok; i++)
            ok = zb_round(r, v, i);
        for (uint32_t j = 0; j < r->p && ok; j++)
            while (ok && zb_w_pending(&r->st[j]))
                ok = zb_put(r, j, PSCHED_OP_W);
    }
    if (!ok)
        return INFINITY;
    double span = 0;
    for (uint32_t j = 0; j < r->p; j++) {
        const zb_stage *s = &r->st[j];
        span = fmax(span, s->end - (r->f_end[(size_t)j * r->m] - s->tf));
    }
    return span;
}

/* Peak of the one-micro-batch-at-a-time order on stage j: the smallest
 * limit the scheduler can meet there. */
static double zb_serial_peak(const psched_plan *plan, uint32_t j, uint32_t m)
{
    double f, b, w;
    (void)psched_plan_stage_mem(plan, j, &f, &b, &w);
    double per = f + b + w, top = fmax(f, fmax(f + b, per));
    /* Micro-batch k starts from k * per; the first or the last is highest. */
    return fmax(top, (double)(m - 1) * per + top);
}

static psched_status zb_check_limit(const psched_plan *plan)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    double limit = psched_plan_memory_limit(plan), need = -INFINITY;
    uint32_t worst = 0;
    for (uint32_t j = 0; j < p; j++) {
        double peak = zb_serial_peak(plan, j, m);
        if (peak > need)
            need = peak, worst = j;
    }
    if (need > limit + 1e-9 * fmax(1.0, fabs(limit)))
        return psched_fail(PSCHED_EINFEASIBLE,
                           "memory limit (%g) is below the smallest feasible peak (%g, on "
                           "device %u running one micro-batch at a time) for %s",
                           limit, need, worst, NAME);
    return PSCHED_OK;
}

static void zb_free(zb_run *r, uint32_t *best)
{
    psched__dealloc(r->st);
    psched__dealloc(r->f_end);
    psched__dealloc(r->b_end);
    psched__dealloc(r->ops);
    psched__dealloc(r->extra);
    psched__dealloc(r->want);
    psched__dealloc(best);
}

static psched_status zb_emit(const zb_run *r, const uint32_t *ops, psched_builder *b)
{
    psched_status st = PSCHED_OK;
    size_t per = (size_t)3 * r->m;
    for (uint32_t j = 0; j < r->p && st == PSCHED_OK; j++) {
        st = psched_builder_reserve(b, j, per);
        for (size_t k = 0; k < per && st == PSCHED_OK; k++) {
            uint32_t op = ops[(size_t)j * per + k];
            st = psched_builder_append(b, j, (psched_op_kind)(op & 3u), j, op >> 2, 0);
        }
    }
    return st;
}

static psched_status check(const psched_plan *plan)
{
    psched_status st = psched__check_placement(plan, PSCHED_PLACEMENT_LOOP, NAME);
    if (st == PSCHED_OK)
        st = psched__check_chunks(plan, 1, 1, NAME);
    return st;
}

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    psched_status st = zb_check_limit(plan);
    if (st != PSCHED_OK)
        return st;
    zb_run r = {0};
    r.p = psched_plan_devices(plan);
    r.m = psched_plan_microbatches(plan);
    r.comm = psched_plan_comm(plan);
    r.limit = psched_plan_memory_limit(plan);
    size_t cells = (size_t)r.p * r.m;
    r.st = psched__reallocarray(NULL, r.p, sizeof *r.st);
    r.f_end = psched__reallocarray(NULL, cells, sizeof *r.f_end);
    r.b_end = psched__reallocarray(NULL, cells, sizeof *r.b_end);
    r.ops = psched__reallocarray(NULL, cells, 3 * sizeof *r.ops);
    r.extra = psched__reallocarray(NULL, r.p, sizeof *r.extra);
    r.want = psched__reallocarray(NULL, r.p, sizeof *r.want);
    uint32_t *best = psched__reallocarray(NULL, cells, 3 * sizeof *best);
    if (!r.st || !r.f_end || !r.b_end || !r.ops || !r.extra || !r.want || !best) {
        zb_free(&r, best);
        return PSCHED_ENOMEM_FAIL();
    }
    /* The serial order goes last: it only wins when nothing else fits. */
    double best_span = INFINITY;
    for (unsigned k = 0; k <= 8; k++) {
        zb_variant v = {(k & 1u) != 0, (k & 2u) != 0, (k & 4u) == 0, k == 8};
        double span = zb_build(&r, plan, &v);
        if (span < best_span) {
            best_span = span;
            uint32_t *t = best;
            best = r.ops, r.ops = t;
        }
    }
    /* zb_check_limit guarantees the serial order fits. */
    st = zb_emit(&r, best, b);
    zb_free(&r, best);
    return st;
}

const psched_generator psched_gen_zb = {
    PSCHED_GENERATOR_ABI,
    NAME,
    "greedy zero-bubble scheduler: any per-stage costs, comm latency and memory limit",
    "loop placement, v = 1; memory limit >= the one-micro-batch-at-a-time peak",
    PSCHED_PLACEMENT_LOOP,
    1,
    1,
    check,
    generate,
};
