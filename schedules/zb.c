/* zb: greedy zero-bubble scheduler for arbitrary per-stage t_F/t_B/t_W,
 * communication latency and a per-device memory limit (default unlimited).
 *
 * It builds several candidate orders on a timeline (timeline.h: every op
 * placed at its earliest start, memory summed in list order and never
 * above the limit) and keeps the one with the smallest span, the first one
 * on ties:
 *  - the heuristic of "Zero Bubble Pipeline Parallelism" (Qi et al. 2023,
 *    §3.1), micro-batch by micro-batch: round 0 runs F0 on every stage,
 *    then as many extra forwards as fit before the first backward comes
 *    back, then B0 from the last stage to the first; round i runs the next
 *    forward of every stage (a stage far ahead of its successor may skip
 *    it), then B_i from the last stage to the first. Pending W fill the
 *    wait before an op whose input has not arrived, and run whenever the
 *    next op would not fit the memory limit. Three choices give eight
 *    variants: whether warm-up forwards may leave an idle gap before B0
 *    rather than delay it; whether a stage ahead of its successor skips a
 *    forward for the backward; whether a W fills a short gap the stage
 *    could afford to leave idle;
 *  - list scheduling: over all stages, the F or B that can start first runs
 *    next, after the W that fit before its input arrives; with no cap on a
 *    stage's forwards in flight, or 1F1B's p-j, or ZB-H2's 2(p-j)-1, and
 *    B or F first on ties: six variants;
 *  - the handcrafted zb-h1 and zb-h2 orders, when they fit the limit;
 *  - one micro-batch at a time, the memory-minimal order and the fallback.
 * With unit costs and limit p the span is ZB-H1's 3m+p-1 (m >= p), with
 * limit 2p it is zero-bubble; the span never exceeds zb-h1's or zb-h2's
 * when they fit the limit.
 *
 * Micro-batch weights w_k (docs/simulator.md) reach the timeline: micro-
 * batch k's times and memory deltas are w_k times the stage's, so every
 * choice and the limit see the real step; unit weights change nothing.
 *
 * The smallest limit accepted is the peak of the one-micro-batch-at-a-time
 * order, which is the true minimum whenever mem_F >= 0 and
 * mem_F + mem_B + mem_W <= 0: every order starts with a forward, and before
 * its first backward it has run only forwards. */
#include "shapes/phases.h"
#include "shapes/timeline.h"

#include <math.h>
#include <string.h>

#define NAME "zb"

typedef enum zb_family {
    ZB_ROUNDS, /* the paper's heuristic */
    ZB_LIST,   /* earliest start first */
    ZB_SEED,   /* a handcrafted generator's order */
    ZB_SERIAL  /* one micro-batch at a time */
} zb_family;

/* Forwards in flight (F without B) a stage may hold in list scheduling. */
typedef enum zb_cap { ZB_CAP_NONE, ZB_CAP_1F1B, ZB_CAP_ZB_H2 } zb_cap;

typedef struct zb_variant {
    zb_family family;
    bool bubble_before_first_b; /* rounds: warm-up F end before B0 arrives */
    bool prioritize_b;          /* rounds: a stage ahead may skip a forward */
    bool fill_every_gap;        /* rounds: W also fill affordable gaps */
    zb_cap cap;                 /* list */
    bool forward_first;         /* list: F wins ties */
    const char *seed;           /* seed: generator name */
} zb_variant;

#define ROUNDS(bubble, prio, fill) {ZB_ROUNDS, bubble, prio, fill, ZB_CAP_NONE, false, NULL}
#define LIST(cap, ffirst) {ZB_LIST, false, false, false, cap, ffirst, NULL}
#define SEED(name) {ZB_SEED, false, false, false, ZB_CAP_NONE, false, name}

static const zb_variant zb_variants[] = {
    ROUNDS(false, false, true),  ROUNDS(true, false, true),   ROUNDS(false, true, true),
    ROUNDS(true, true, true),    ROUNDS(false, false, false), ROUNDS(true, false, false),
    ROUNDS(false, true, false),  ROUNDS(true, true, false),   LIST(ZB_CAP_NONE, false),
    LIST(ZB_CAP_NONE, true),     LIST(ZB_CAP_1F1B, false),    LIST(ZB_CAP_1F1B, true),
    LIST(ZB_CAP_ZB_H2, false),   LIST(ZB_CAP_ZB_H2, true),    SEED("zb-h1"),
    SEED("zb-h2"),               {ZB_SERIAL, false, false, false, ZB_CAP_NONE, false, NULL},
};

/* Scratch of the builders: per stage, the rounds' warm-up counts and
 * forward choices, and the list scheduler's candidates in a tournament
 * tree (node i holds the best stage below it; leaves start at `leaves`). */
typedef struct zb_work {
    psched_timeline t;
    uint32_t *extra;
    uint8_t *want;
    double *cand_start;
    uint8_t *cand_kind;
    uint32_t leaves;
    uint32_t *node;
} zb_work;

/* ---- the paper's heuristic, round by round ---- */

/* Fills the wait of stage j for an input arriving at `arrival`: every W
 * that ends by then, and one more that overlaps the arrival unless the
 * stage can afford the idle gap (its idle time stays below the worst
 * stage's) and the variant leaves affordable gaps idle. */
static void zb_fill_wait(psched_timeline *t, const zb_variant *v, uint32_t j, double arrival)
{
    psched__timeline_fill(t, j, arrival);
    const psched_tl_stage *s = &t->st[j];
    if (!psched__timeline_w_pending(t, j) || s->end >= arrival)
        return;
    bool affordable = arrival - s->end <= t->max_idle - s->idle;
    if (!affordable || v->fill_every_gap)
        (void)psched__timeline_put(t, j, PSCHED_OP_W);
}

/* Warm-up forwards of every stage beyond F0: walking from the last stage to
 * the first, the time the first backward reaches each stage bounds how
 * many forwards fit before it. A stage never runs more forwards than its
 * predecessor (one fewer while the predecessor has some left), which keeps
 * 1F1B's shape and every forward's input placed before it. */
static void zb_warmup_counts(zb_work *w, const zb_variant *v)
{
    psched_timeline *t = &w->t;
    uint32_t last = t->p - 1;
    double back = t->f_end[(size_t)last * t->m] + t->st[last].tb * psched__timeline_weight(t, 0);
    w->extra[last] = 0;
    for (uint32_t j = last; j-- > 0;) {
        const psched_tl_stage *s = &t->st[j];
        double arrival = back + t->comm, end = s->end, mem = s->mem;
        uint32_t k = 0;
        while (s->nf + k < t->m) {
            double wk = psched__timeline_weight(t, s->nf + k);
            if (!psched__timeline_fits(t, mem + s->mf * wk))
                break;
            if (v->bubble_before_first_b ? end + s->tf * wk > arrival : end >= arrival)
                break;
            mem += s->mf * wk;
            end += s->tf * wk;
            k++;
        }
        w->extra[j] = k;
        back = fmax(end, arrival) + s->tb * psched__timeline_weight(t, 0);
    }
    for (uint32_t j = 1; j < t->p; j++) {
        uint32_t prev = t->st[j - 1].nf + w->extra[j - 1];
        uint32_t cap = prev < t->m ? prev - 1 : prev, have = t->st[j].nf;
        uint32_t room = cap > have ? cap - have : 0;
        w->extra[j] = w->extra[j] < room ? w->extra[j] : room;
    }
}

static bool zb_round0(zb_work *w, const zb_variant *v)
{
    psched_timeline *t = &w->t;
    for (uint32_t j = 0; j < t->p; j++)
        if (!psched__timeline_put(t, j, PSCHED_OP_F))
            return false;
    zb_warmup_counts(w, v);
    for (uint32_t j = 0; j < t->p; j++)
        for (uint32_t k = 0; k < w->extra[j]; k++)
            if (!psched__timeline_put(t, j, PSCHED_OP_F))
                return false;
    for (uint32_t j = t->p; j-- > 0;)
        if (!psched__timeline_make_room(t, j, psched__timeline_delta(t, j, PSCHED_OP_B)) ||
            !psched__timeline_put(t, j, PSCHED_OP_B))
            return false;
    return true;
}

/* Whether stage j skips its forward this round to serve the backward: its
 * successor's next backward is expected at `next_b`; skip when the stage is
 * already past it, or when the forward (with the W it needs for room)
 * would end after it and the stage can afford to idle until then. */
static bool zb_skip_forward(const psched_timeline *t, uint32_t j)
{
    const psched_tl_stage *s = &t->st[j], *n = &t->st[j + 1];
    double next_b = n->end + psched__timeline_cost(t, j + 1, PSCHED_OP_F) +
                    psched__timeline_cost(t, j + 1, PSCHED_OP_B) + t->comm;
    if (s->end >= next_b)
        return true;
    double mem = s->mem + psched__timeline_delta(t, j, PSCHED_OP_F), w_cost = 0;
    for (uint32_t k = s->nw; !psched__timeline_fits(t, mem) && k < s->nb; k++) {
        mem += s->mw * psched__timeline_weight(t, k);
        w_cost += s->tw * psched__timeline_weight(t, k);
    }
    if (s->end + psched__timeline_cost(t, j, PSCHED_OP_F) + w_cost <= next_b)
        return false;
    return next_b - s->end <= t->max_idle - s->idle;
}

static bool zb_round_forwards(zb_work *w, const zb_variant *v)
{
    psched_timeline *t = &w->t;
    for (uint32_t j = 0; j < t->p; j++) {
        const psched_tl_stage *s = &t->st[j];
        bool want = s->nf < t->m;
        if (want && v->prioritize_b && j + 1 < t->p && s->nf >= t->st[j + 1].nf + 2)
            want = !zb_skip_forward(t, j);
        w->want[j] = want;
    }
    /* A stage whose successor skips skips too: the successor would not take
     * the extra activation yet. */
    for (uint32_t j = t->p - 1; j-- > 0;)
        w->want[j] = w->want[j] && w->want[j + 1];
    for (uint32_t j = 0; j < t->p; j++) {
        double arrival = psched__timeline_arrival(t, j, PSCHED_OP_F);
        if (!w->want[j] || arrival == INFINITY)
            continue;
        if (!psched__timeline_make_room(t, j, psched__timeline_delta(t, j, PSCHED_OP_F)))
            return false;
        if (j > 0)
            zb_fill_wait(t, v, j, arrival);
        if (!psched__timeline_put(t, j, PSCHED_OP_F))
            return false;
    }
    return true;
}

static bool zb_round(zb_work *w, const zb_variant *v)
{
    psched_timeline *t = &w->t;
    if (!zb_round_forwards(w, v))
        return false;
    for (uint32_t j = t->p; j-- > 0;) {
        if (!psched__timeline_make_room(t, j, psched__timeline_delta(t, j, PSCHED_OP_B)))
            return false;
        if (j + 1 < t->p)
            zb_fill_wait(t, v, j, psched__timeline_arrival(t, j, PSCHED_OP_B));
        /* Nothing waits for the first stage's backward but its own W. */
        if (j == 0 && t->st[0].nf == t->m)
            psched__timeline_fill(t, 0, INFINITY);
        if (!psched__timeline_put(t, j, PSCHED_OP_B))
            return false;
    }
    return true;
}

static bool zb_build_rounds(zb_work *w, const zb_variant *v)
{
    bool ok = zb_round0(w, v);
    for (uint32_t i = 1; i < w->t.m && ok; i++)
        ok = zb_round(w, v);
    return ok && psched__timeline_drain(&w->t);
}

/* ---- list scheduling ---- */

/* Earliest start of stage j's next op of `kind` (after the W it needs to
 * make room); INFINITY when it cannot be placed now. */
static double zb_list_start(const psched_timeline *t, const zb_variant *v, uint32_t j,
                            psched_op_kind kind)
{
    const psched_tl_stage *s = &t->st[j];
    if (kind == PSCHED_OP_F) {
        uint32_t cap = v->cap == ZB_CAP_1F1B    ? t->p - j
                       : v->cap == ZB_CAP_ZB_H2 ? 2 * (t->p - j) - 1
                                                : UINT32_MAX;
        if (s->nf >= t->m || s->nf - s->nb >= cap)
            return INFINITY;
    } else if (s->nb >= s->nf) {
        return INFINITY;
    }
    double arrival = psched__timeline_arrival(t, j, kind);
    double mem = s->mem + psched__timeline_delta(t, j, kind), w_cost = 0;
    for (uint32_t k = s->nw; !psched__timeline_fits(t, mem); k++) {
        if (k >= s->nb)
            return INFINITY;
        mem += s->mw * psched__timeline_weight(t, k);
        w_cost += s->tw * psched__timeline_weight(t, k);
    }
    return fmax(s->end + w_cost, arrival);
}

/* Whether stage a's candidate goes before stage b's (UINT32_MAX: none). */
static bool zb_list_before(const zb_work *w, const zb_variant *v, uint32_t a, uint32_t b)
{
    if (b == UINT32_MAX)
        return a != UINT32_MAX;
    if (a == UINT32_MAX || w->cand_start[a] != w->cand_start[b])
        return a != UINT32_MAX && w->cand_start[a] < w->cand_start[b];
    if (w->cand_kind[a] != w->cand_kind[b])
        return (w->cand_kind[a] == PSCHED_OP_F) == v->forward_first;
    return a < b;
}

static void zb_list_update(zb_work *w, const zb_variant *v, uint32_t j)
{
    double f = zb_list_start(&w->t, v, j, PSCHED_OP_F);
    double b = zb_list_start(&w->t, v, j, PSCHED_OP_B);
    bool take_f = f < b || (f == b && v->forward_first);
    w->cand_start[j] = take_f ? f : b;
    w->cand_kind[j] = take_f ? PSCHED_OP_F : PSCHED_OP_B;
    uint32_t i = w->leaves + j;
    w->node[i] = w->cand_start[j] == INFINITY ? UINT32_MAX : j;
    for (i /= 2; i > 0; i /= 2) {
        uint32_t l = w->node[2 * i], r = w->node[2 * i + 1];
        w->node[i] = zb_list_before(w, v, l, r) || r == UINT32_MAX ? l : r;
    }
}

static bool zb_build_list(zb_work *w, const zb_variant *v)
{
    psched_timeline *t = &w->t;
    for (uint32_t i = 0; i < 2 * w->leaves; i++)
        w->node[i] = UINT32_MAX;
    for (uint32_t j = 0; j < t->p; j++)
        zb_list_update(w, v, j);
    while (w->node[1] != UINT32_MAX) {
        uint32_t j = w->node[1];
        psched_op_kind kind = (psched_op_kind)w->cand_kind[j];
        double arrival = psched__timeline_arrival(t, j, kind);
        if (!psched__timeline_make_room(t, j, psched__timeline_delta(t, j, kind)))
            return false;
        psched__timeline_fill(t, j, arrival);
        if (!psched__timeline_put(t, j, kind))
            return false;
        /* Only this stage and the two it feeds can change. */
        for (uint32_t k = j ? j - 1 : 0; k <= j + 1 && k < t->p; k++)
            zb_list_update(w, v, k);
    }
    return psched__timeline_drain(t);
}

/* ---- the other candidates ---- */

static bool zb_build_serial(psched_timeline *t)
{
    for (uint32_t i = 0; i < t->m; i++) {
        for (uint32_t j = 0; j < t->p; j++)
            if (!psched__timeline_put(t, j, PSCHED_OP_F))
                return false;
        for (uint32_t j = t->p; j-- > 0;)
            if (!psched__timeline_put(t, j, PSCHED_OP_B))
                return false;
        if (!psched__timeline_drain(t))
            return false;
    }
    return true;
}

/* Replays another generator's order. Only running out of memory is an
 * error; a generator that is missing or refuses the plan is skipped. */
static psched_status zb_build_seed(psched_timeline *t, const psched_plan *plan, const char *name,
                                   bool *built)
{
    psched_schedule *s = NULL;
    psched_status st = psched_generate(plan, name, &s);
    *built = st == PSCHED_OK && psched__timeline_replay(t, s);
    psched_schedule_destroy(s);
    return st == PSCHED_ENOMEM ? st : PSCHED_OK;
}

static psched_status zb_try(zb_work *w, const psched_plan *plan, const zb_variant *v)
{
    psched__timeline_reset(&w->t);
    bool built = false;
    psched_status st = PSCHED_OK;
    switch (v->family) {
    case ZB_ROUNDS: built = zb_build_rounds(w, v); break;
    case ZB_LIST: built = zb_build_list(w, v); break;
    case ZB_SEED: st = zb_build_seed(&w->t, plan, v->seed, &built); break;
    case ZB_SERIAL: built = zb_build_serial(&w->t); break;
    }
    if (built)
        (void)psched__timeline_offer(&w->t);
    return st;
}

/* ---- the generator ---- */

/* Peak of the one-micro-batch-at-a-time order on stage j. Micro-batch k
 * starts from k times the net delta, so the first or the last is highest.
 * With weights every delta of micro-batch k scales by w_k (as in the
 * simulator): it starts from the sum of the earlier ones' w_i * net and
 * climbs w_k * top above it, so every micro-batch is a candidate. */
static double zb_serial_peak(const psched_plan *plan, uint32_t j, uint32_t m, bool weighted)
{
    double f, b, w;
    (void)psched_plan_stage_mem(plan, j, &f, &b, &w);
    double net = f + b + w, top = fmax(f, fmax(f + b, net));
    if (!weighted)
        return fmax(top, (double)(m - 1) * net + top);
    double base = 0, peak = -INFINITY;
    for (uint32_t k = 0; k < m; k++) {
        double wk = psched_plan_microbatch_weight(plan, k);
        peak = fmax(peak, base + wk * top);
        base += wk * net;
    }
    return peak;
}

static psched_status zb_check_limit(const psched_plan *plan)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    double limit = psched_plan_memory_limit(plan), need = -INFINITY;
    uint32_t worst = 0;
    bool weighted = false;
    for (uint32_t k = 0; k < m; k++)
        weighted = weighted || psched_plan_microbatch_weight(plan, k) != 1.0;
    for (uint32_t j = 0; j < p; j++) {
        double peak = zb_serial_peak(plan, j, m, weighted);
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

static void zb_work_free(zb_work *w)
{
    psched__timeline_free(&w->t);
    psched__dealloc(w->extra);
    psched__dealloc(w->want);
    psched__dealloc(w->cand_start);
    psched__dealloc(w->cand_kind);
    psched__dealloc(w->node);
}

static psched_status zb_work_init(zb_work *w, const psched_plan *plan)
{
    memset(w, 0, sizeof *w);
    psched_status st = psched__timeline_init(&w->t, plan);
    if (st != PSCHED_OK)
        return st;
    uint32_t p = w->t.p;
    for (w->leaves = 1; w->leaves < p; w->leaves *= 2)
        ;
    w->extra = psched__reallocarray(NULL, p, sizeof *w->extra);
    w->want = psched__reallocarray(NULL, p, sizeof *w->want);
    w->cand_start = psched__reallocarray(NULL, p, sizeof *w->cand_start);
    w->cand_kind = psched__reallocarray(NULL, p, sizeof *w->cand_kind);
    w->node = psched__reallocarray(NULL, 2 * (size_t)w->leaves, sizeof *w->node);
    if (!w->extra || !w->want || !w->cand_start || !w->cand_kind || !w->node) {
        zb_work_free(w);
        return PSCHED_ENOMEM_FAIL();
    }
    return PSCHED_OK;
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
    zb_work w;
    if (st == PSCHED_OK)
        st = zb_work_init(&w, plan);
    if (st != PSCHED_OK)
        return st;
    size_t n = sizeof zb_variants / sizeof *zb_variants;
    for (size_t k = 0; k < n && st == PSCHED_OK; k++)
        st = zb_try(&w, plan, &zb_variants[k]);
    /* zb_check_limit guarantees that the serial order, at least, fits. */
    if (st == PSCHED_OK)
        st = psched__timeline_emit(&w.t, b);
    zb_work_free(&w);
    return st;
}

const psched_generator psched_gen_zb = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = NAME,
    .description = "greedy zero-bubble scheduler: "
                   "any per-stage costs, comm latency and memory limit",
    .constraints = "loop placement, v = 1; memory limit >= the one-micro-batch-at-a-time peak",
    .placement = PSCHED_PLACEMENT_LOOP,
    .default_chunks = 1,
    .chains = 1,
    .check = check,
    .generate = generate,
};
