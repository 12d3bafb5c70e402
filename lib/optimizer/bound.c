/* Lower bounds on makespan and span for every valid schedule of a plan
 * (docs/simulator.md, "Lower bounds"): whatever order the devices run, they
 * cannot finish sooner than these. Each term is a closed form over the
 * plan's placement, per-stage costs, comm latency and memory limit, so the
 * bound costs O(S) and needs no schedule. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct bound_ctx {
    const psched_plan *plan;
    uint32_t p, S, chains, chain_len, mb; /* mb: micro-batches per chain */
    double comm;
    double *f, *b, *w;  /* per stage */
    uint32_t *dev;      /* per stage */
    double *head;       /* earliest start of F(s, k): chain prefix of F + comm */
    double *rest;       /* F and B of the stages after s in its chain, with comm, F(s)
                           end to B(s) start */
    double *tail;       /* B(s) end to the end of the chain's last op (B of the stages
                           before s, then W of the chain's first stage) */
    /* Micro-batch weights (issue K): the paths hold for the lightest
     * micro-batch, the work for the chain's total weight; all 1 by default. */
    double wmin;
    double *wsum;       /* per chain: Σ w_k of its micro-batches */
    /* PSCHED_BOUND_VOCAB_PASSES: every device's vocabulary passes, all of
     * them and those before its last backward (S; S and T with Vocab-1) */
    double vocab_all, vocab_before;
    int weighted;       /* some w_k != 1: the memory term's argument needs 1 */
} bound_ctx;

static int crosses(const bound_ctx *c, uint32_t a, uint32_t b)
{
    return c->dev[a] != c->dev[b];
}

/* Walk each chain once: head from its first stage forward, rest and tail
 * from each end. */
static void chain_paths(bound_ctx *c)
{
    for (uint32_t ch = 0; ch < c->chains; ch++) {
        uint32_t first = ch * c->chain_len, last = first + c->chain_len - 1;
        c->head[first] = 0;
        for (uint32_t s = first + 1; s <= last; s++)
            c->head[s] = c->head[s - 1] + c->f[s - 1] + (crosses(c, s - 1, s) ? c->comm : 0);
        c->rest[last] = 0;
        for (uint32_t s = last; s > first; s--)
            c->rest[s - 1] = c->rest[s] + c->f[s] + c->b[s] + (crosses(c, s - 1, s) ? 2 * c->comm : 0);
        c->tail[first] = c->w[first];
        for (uint32_t s = first + 1; s <= last; s++)
            c->tail[s] = c->tail[s - 1] + c->b[s - 1] + (crosses(c, s - 1, s) ? c->comm : 0);
    }
}

/* Memory term of one device: with deltas that never go below zero for a
 * finished (stage, micro-batch) and hold at least mem_F until its W (or
 * BW) starts, at most floor(limit / min mem_F) pairs are in flight at once,
 * and each is in flight from its F's start to its W's start, at least
 * t_F + rest. Integrated over time: makespan >= m Σ (t_F + rest) / slots. */
static psched_status memory_term(const bound_ctx *c, uint32_t d, double limit, double *out)
{
    double min_f = INFINITY, occupancy = 0;
    *out = 0;
    for (uint32_t s = 0; s < c->S; s++) {
        if (c->dev[s] != d)
            continue;
        double mf = 0, mb = 0, mw = 0;
        psched_plan_stage_mem(c->plan, s, &mf, &mb, &mw);
        if (!(mf > 0) || mb < 0 || mf + mb + mw < 0)
            return PSCHED_OK; /* the argument needs these signs: no term */
        if (mf < min_f)
            min_f = mf;
        occupancy += (double)c->mb * (c->f[s] + c->rest[s]);
    }
    if (min_f == INFINITY || c->weighted)
        return PSCHED_OK; /* weighted deltas: min_f is no floor; no term */
    double slots = floor(limit / min_f);
    if (slots < 1)
        return psched_fail(PSCHED_EINFEASIBLE,
                           "memory limit %g is below one micro-batch's activation (%g) on device %u: "
                           "no schedule fits", limit, min_f, d);
    *out = occupancy / slots;
    return PSCHED_OK;
}

static psched_status fill(bound_ctx *c, int use_memory, psched_bound_info *out)
{
    chain_paths(c);
    double limit = psched_plan_memory_limit(c->plan);
    double work = 0, device_path = 0, critical = 0, memory = 0;
    for (uint32_t ch = 0; ch < c->chains; ch++) {
        uint32_t first = ch * c->chain_len;
        double cp = c->wmin * (c->f[first] + c->rest[first] + c->tail[first] + c->b[first]);
        if (cp > critical)
            critical = cp;
    }
    for (uint32_t d = 0; d < c->p; d++) {
        double busy = 0, weights = 0, head = INFINITY, tail = INFINITY;
        for (uint32_t s = 0; s < c->S; s++) {
            if (c->dev[s] != d)
                continue;
            double total = c->wsum[s / c->chain_len];
            busy += total * (c->f[s] + c->b[s] + c->w[s]);
            weights += total * c->w[s];
            if (c->head[s] < head)
                head = c->head[s];
            if (c->tail[s] < tail)
                tail = c->tail[s];
        }
        if (head == INFINITY)
            continue; /* a device without stages */
        busy += c->vocab_all;
        if (busy > work)
            work = busy;
        /* The device starts no sooner than its earliest F can, and after its
         * last B only W's remain on it (at most `weights` of them; with
         * vocabulary passes also the T passes that may trail, Vocab-2's),
         * while the chain still needs `tail` after that B. */
        double path = c->wmin * head + busy +
                      fmax(0, c->wmin * tail - weights - (c->vocab_all - c->vocab_before));
        if (path > device_path)
            device_path = path;
        if (use_memory && isfinite(limit)) {
            double m = 0;
            psched_status st = memory_term(c, d, limit, &m);
            if (st != PSCHED_OK)
                return st;
            if (m > memory)
                memory = m;
        }
    }
    out->work = work;
    out->critical_path = critical;
    out->device_path = device_path;
    out->memory = memory;
    out->span = work;
    out->makespan = fmax(fmax(work, critical), fmax(device_path, memory));
    if (!isfinite(out->makespan))
        return psched_fail(PSCHED_EINVAL, "the plan's costs overflow: the bound is not finite");
    return PSCHED_OK;
}

void psched__vocab_work(const psched_plan *plan, double *all, double *before)
{
    double s = 0, t = 0, w = 0;
    int64_t vocab = 0;
    psched_plan_vocab_cost(plan, &s, &t);
    for (uint32_t k = 0; k < psched_plan_microbatches(plan); k++)
        w += psched_plan_microbatch_weight(plan, k); /* a pass costs its time x the weight */
    *all = w * (s + t);
    *before = psched_plan_get_option(plan, "vocab", &vocab) == PSCHED_OK && vocab == 1
                  ? *all
                  : w * s;
}

psched_status psched_bound(const psched_plan *plan, const psched_bound_options *options,
                           psched_bound_info *out)
{
    if (!plan || !out)
        return psched_fail(PSCHED_EINVAL, "psched_bound: plan and out must not be NULL");
    if (out->version < 1 || out->version > PSCHED_BOUND_INFO_VERSION)
        return psched_fail(PSCHED_EINVAL, "psched_bound: out->version %u is not 1..%u "
                           "(set it to PSCHED_BOUND_INFO_VERSION)", out->version,
                           PSCHED_BOUND_INFO_VERSION);
    uint32_t flags = 0;
    if (options) {
        if (options->version < 1 || options->version > PSCHED_BOUND_OPTIONS_VERSION)
            return psched_fail(PSCHED_EINVAL, "psched_bound: options->version %u is not 1..%u",
                               options->version, PSCHED_BOUND_OPTIONS_VERSION);
        flags = options->flags;
        if (flags & ~(uint32_t)(PSCHED_BOUND_IGNORE_MEMORY | PSCHED_BOUND_VOCAB_PASSES))
            return psched_fail(PSCHED_EINVAL, "psched_bound: unknown flags 0x%x", flags);
    }
    bound_ctx c = {.plan = plan, .p = psched_plan_devices(plan), .S = psched_plan_stages(plan),
                   .chains = psched_plan_chains(plan), .comm = psched_plan_comm(plan)};
    if (psched_plan_placement(plan) == PSCHED_PLACEMENT_AUTO || psched_plan_chunks(plan) == 0)
        return psched_fail(PSCHED_EINVAL, "psched_bound: the plan's placement and chunks are left "
                           "to a generator; set them, or pass a schedule's plan");
    if (c.chains < 1 || c.S % c.chains != 0 || psched_plan_microbatches(plan) % c.chains != 0)
        return psched_fail(PSCHED_EINVAL, "psched_bound: %u stages and %u micro-batches do not split "
                           "into %u chains", c.S, psched_plan_microbatches(plan), c.chains);
    c.chain_len = c.S / c.chains;
    c.mb = psched_plan_microbatches(plan) / c.chains;
    double *mem = calloc((size_t)c.S * 6 + c.chains, sizeof *mem);
    c.dev = calloc(c.S, sizeof *c.dev);
    psched_status st = PSCHED_OK;
    if (!mem || !c.dev) {
        st = PSCHED_ENOMEM_FAIL();
        goto out;
    }
    c.f = mem;
    c.b = mem + c.S;
    c.w = mem + 2 * (size_t)c.S;
    c.head = mem + 3 * (size_t)c.S;
    c.rest = mem + 4 * (size_t)c.S;
    c.tail = mem + 5 * (size_t)c.S;
    c.wsum = mem + 6 * (size_t)c.S;
    c.wmin = INFINITY;
    for (uint32_t k = 0; k < c.mb * c.chains; k++) {
        double w = psched_plan_microbatch_weight(plan, k);
        c.wsum[k / c.mb] += w;
        c.wmin = fmin(c.wmin, w);
        c.weighted |= w != 1;
    }
    for (uint32_t s = 0; s < c.S; s++) {
        psched_plan_stage_cost(plan, s, &c.f[s], &c.b[s], &c.w[s]);
        /* An overlapped pair holds one F and saves at most its stage's
         * overlap_saving (times the micro-batch's weight): charging every F
         * that much less keeps each term a lower bound. */
        c.f[s] = fmax(0, c.f[s] - psched_plan_stage_overlap_saving(plan, s));
        c.dev[s] = psched_plan_stage_device(plan, s);
        if (c.dev[s] >= c.p) {
            st = psched_fail(PSCHED_EINVAL, "psched_bound: stage %u has no device", s);
            goto out;
        }
    }
    if ((flags & PSCHED_BOUND_VOCAB_PASSES) && c.chains == 1)
        psched__vocab_work(plan, &c.vocab_all, &c.vocab_before);
    st = fill(&c, !(flags & PSCHED_BOUND_IGNORE_MEMORY), out);
out:
    free(mem);
    free(c.dev);
    return st;
}

psched_status psched_schedule_bound(const psched_schedule *schedule,
                                    const psched_bound_options *options, psched_bound_info *out)
{
    if (!schedule)
        return psched_fail(PSCHED_EINVAL, "psched_schedule_bound: schedule must not be NULL");
    psched_bound_options o = {PSCHED_BOUND_OPTIONS_VERSION, 0};
    if (options) {
        /* psched_bound() checks the version and the flags */
        o = *options;
    }
    /* Passes that take no time change no term: the ops are read only when
     * they take some. */
    double vs = 0, vt = 0;
    psched_plan_vocab_cost(schedule->plan, &vs, &vt);
    if ((vs != 0 || vt != 0) && !(o.flags & PSCHED_BOUND_VOCAB_PASSES)) {
        size_t n = schedule->offset[schedule->devices];
        for (size_t i = 0; i < n; i++)
            if (schedule->ops[i].kind == PSCHED_OP_VOCAB_S) {
                o.flags |= PSCHED_BOUND_VOCAB_PASSES;
                break;
            }
    }
    return psched_bound(schedule->plan, &o, out);
}
