/* The partition problem: the model's layers as prefix sums, the
 * schedule's stage map, in-flight counts and objective weights (probed by
 * generating and simulating it with unit costs), the checks of what the
 * objective can weigh, solutions and their evaluation. Depends on the
 * core, the model and the frontiers (which it frees) only.
 * DESIGN §6, docs/optimizer.md. */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void psched__problem_free(psched__problem *pb)
{
    if (pb->table) {
        for (size_t i = 0; i <= pb->layers; i++)
            psched__fronts_free(&pb->table[i]);
    }
    psched__dealloc(pb->table);
    psched__dealloc(pb->inflight);
    psched__dealloc(pb->plan_inflight);
    psched__dealloc(pb->overlap);
    psched__dealloc(pb->device_of);
    psched__dealloc(pb->time_prefix);
    psched__dealloc(pb->param_prefix);
    psched__dealloc(pb->minact_prefix);
    psched__dealloc(pb->f_prefix);
    psched__dealloc(pb->b_prefix);
    psched__dealloc(pb->group_of);
    if (pb->mm_split)
        psched__solution_free(pb->mm_split);
    psched__dealloc(pb->mm_split);
    memset(pb, 0, sizeof *pb);
}

uint8_t psched__lean_kind(const psched__group *g)
{
    uint8_t lean = 0;
    for (uint8_t r = 1; r < PSCHED__RECOMPUTE_KINDS; r++)
        if (g->variant[r].present && g->variant[r].act < g->variant[lean].act)
            lean = r;
    return lean;
}

static double variant_min_act(const psched__group *g)
{
    return g->variant[psched__lean_kind(g)].act;
}

psched_status psched__problem_layers(psched__problem *pb, const psched_model *model)
{
    /* check_args bounds L by PSCHED__PARTITION_MAX_LAYERS, so L + 1 and
     * every (L + 1) x (stages + 1) table size below stay far from a wrap;
     * sizes are still computed in size_t. */
    uint32_t L = model->layer_count;
    size_t n = (size_t)L + 1;
    pb->model = model;
    pb->layers = L;
    pb->group_of = psched__calloc(L, sizeof *pb->group_of);
    pb->time_prefix = psched__calloc(n, sizeof(double));
    pb->param_prefix = psched__calloc(n, sizeof(double));
    pb->minact_prefix = psched__calloc(n, sizeof(double));
    pb->f_prefix = psched__calloc(n, sizeof(double));
    pb->b_prefix = psched__calloc(n, sizeof(double));
    if (!pb->group_of || !pb->time_prefix || !pb->param_prefix || !pb->minact_prefix || !pb->f_prefix ||
        !pb->b_prefix)
        return PSCHED_ENOMEM_FAIL();
    uint32_t l = 0;
    for (uint32_t g = 0; g < model->group_count; g++) {
        const psched__group *gr = &model->groups[g];
        for (uint32_t k = 0; k < gr->count; k++, l++) {
            pb->group_of[l] = g;
            pb->time_prefix[l + 1] = pb->time_prefix[l] + gr->f + gr->b + gr->w;
            pb->f_prefix[l + 1] = pb->f_prefix[l] + gr->f;
            pb->b_prefix[l + 1] = pb->b_prefix[l] + gr->b;
            pb->param_prefix[l + 1] = pb->param_prefix[l] + gr->param;
            pb->minact_prefix[l + 1] = pb->minact_prefix[l] + variant_min_act(gr);
        }
    }
    pb->time_total = pb->time_prefix[L];
    return PSCHED_OK;
}

/* Walk each device's list once: the most micro-batches a stage holds is
 * the peak of (forwards − weight backwards) in list order, which is what
 * unit memory deltas (1, 0, -1) give. With micro-batch weights w_k (the
 * cost model) micro-batch k counts w_k, as the simulator scales its
 * activation memory: the bound stays the simulated peak. */
static psched_status count_inflight(const psched_schedule *sched, psched__problem *pb)
{
    const psched_plan *rp = psched_schedule_plan(sched);
    uint32_t S = pb->stages;
    double *cur = psched__calloc(S, sizeof *cur);
    if (!cur)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t s = 0; s < S; s++)
        pb->device_of[s] = psched_plan_stage_device(rp, s);
    for (uint32_t d = 0; d < pb->devices; d++) {
        size_t n = psched_schedule_op_count(sched, d);
        for (size_t i = 0; i < n; i++) {
            psched_op op;
            psched_schedule_ops(sched, d, i, 1, &op, sizeof op);
            double w = psched_plan_microbatch_weight(rp, op.microbatch);
            if (op.kind == PSCHED_OP_F) {
                cur[op.stage] += w;
                if (cur[op.stage] > pb->inflight[op.stage])
                    pb->inflight[op.stage] = cur[op.stage];
            } else if (op.kind == PSCHED_OP_W || op.kind == PSCHED_OP_BW) {
                cur[op.stage] -= w;
            }
        }
    }
    psched__dealloc(cur);
    return PSCHED_OK;
}

/* Makespan of the unit schedule with skewed chunks: on every device one
 * chunk costs h = (v+1)/2 and the others 1/2 each, so device totals stay
 * v and only the stages differ. The heavy chunk is chunk 0 everywhere
 * (`alternate` false) or chunk d mod v on device d. With two chains the
 * chunks are the folded problem's (range r is chunk 0 of pair r when
 * r < p/2, else chunk 1 of pair p-1-r) and both chains' stages of a range
 * cost the same. */
static psched_status skewed_makespan(const psched_plan *unit, const char *name,
                                     const psched__problem *pb, bool alternate, double *out)
{
    uint32_t v = pb->chunks;
    double h = (v + 1) / 2.0;
    psched_plan *probe = NULL;
    psched_schedule *sched = NULL;
    psched_report *rep = NULL;
    psched_status st = psched_plan_clone(unit, &probe);
    for (uint32_t s = 0; !st && s < psched_plan_stages(unit); s++) {
        uint32_t r = psched__range_of(pb, s);
        uint32_t chunk = pb->chains == 2 ? (r < pb->devices ? 0 : 1) : psched_plan_stage_chunk(unit, s);
        uint32_t heavy = alternate ? pb->device_of[r] % v : 0;
        double c = chunk == heavy ? h : 0.5;
        st = psched_plan_set_stage_cost(probe, s, c, c, c);
    }
    if (!st)
        st = psched_generate(probe, name, &sched);
    if (!st)
        st = psched_simulate(sched, NULL, &rep);
    if (!st)
        *out = psched_report_makespan(rep);
    psched_report_destroy(rep);
    psched_schedule_destroy(sched);
    psched_plan_destroy(probe);
    return st;
}

/* lambda, the weight of the largest stage in the objective: the larger of
 * the values that make the objective equal the makespan of the two skewed
 * runs, (m-1)·lambda·3h + kappa·3S. A device's time alone cannot see how it
 * is split over its chunks; unequal chunks stall each other, and how much
 * depends on the schedule (looped BFS suffers most when the heavy chunk
 * changes from device to device, interleaved when it does not). One chunk
 * per device: lambda = 1 (a stage is a device). Clamped to [0, v]. */
static psched_status calibrate_lambda(const psched_plan *unit, const char *name,
                                      double unit_makespan, psched__problem *pb)
{
    pb->lambda = 1;
    if (pb->chunks == 1 || pb->microbatches == 1)
        return PSCHED_OK;
    double v = pb->chunks, h = (v + 1) / 2, lambda = 0;
    for (int alternate = 0; alternate < 2; alternate++) {
        double skewed = 0;
        psched_status st = skewed_makespan(unit, name, pb, alternate, &skewed);
        if (st)
            return st;
        lambda = fmax(lambda, (skewed - unit_makespan) / ((pb->microbatches - 1.0) * 3 * h) + v / h);
    }
    pb->lambda = isfinite(lambda) ? fmin(fmax(lambda, 0), v) : 1;
    return PSCHED_OK;
}

/* The two-chain layouts the partitioner folds: 2p stages, chain 0's
 * stage j on device j and chain 1's stage p + j (its j-th, holding the
 * same layers) on device p - 1 - j, p even. DualPipe's. */
static psched_status check_chains(const psched_plan *rp, const char *name)
{
    uint32_t p = psched_plan_devices(rp), S = psched_plan_stages(rp);
    bool ok = psched_plan_chains(rp) == 2 && S == 2 * p && p % 2 == 0;
    for (uint32_t j = 0; ok && j < p; j++)
        ok = psched_plan_stage_device(rp, j) == j &&
             psched_plan_stage_device(rp, p + j) == p - 1 - j;
    if (!ok)
        return psched_fail(PSCHED_EUNSUPPORTED,
                           "schedule %s runs %u chains over %u stages on %u devices; the "
                           "partitioner handles one chain, or two whose stage j sits on device j "
                           "and p-1-j (DualPipe's placement, p even)",
                           name, psched_plan_chains(rp), S, p);
    return PSCHED_OK;
}

/* Fold two chains into one problem (psched__problem): range r is chain
 * 0's stage r and chain 1's stage p + r; pair k = {device k, device
 * p-1-k} holds ranges k and p-1-k on both its devices, so its time is
 * either device's and, with each range charged the larger of its two
 * stages' in-flight counts, its memory bounds both devices' (equal to it
 * when the schedule is mirror-symmetric, as DualPipe is). */
static psched_status fold_chains(psched__problem *pb)
{
    uint32_t p = pb->plan_devices;
    pb->plan_inflight = pb->inflight;
    pb->inflight = psched__calloc(p, sizeof *pb->inflight);
    if (!pb->inflight)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t r = 0; r < p; r++) {
        pb->inflight[r] = fmax(pb->plan_inflight[r], pb->plan_inflight[p + r]);
        pb->device_of[r] = psched__pair_of(pb, r);
    }
    pb->stages = p;
    pb->devices = p / 2;
    pb->microbatches /= 2;
    return PSCHED_OK;
}

/* Generate the schedule with unit costs: its stage map, the in-flight
 * counts, and kappa, chosen so that (m-1)·max_d T_d + kappa·Σ_s T_s equals
 * the simulated makespan when every stage costs the same; then lambda.
 * *resolved gets a copy of the resolved plan with the caller's
 * communication latency. */
psched_status psched__probe_schedule(const psched_plan *plan, const char *name,
                                    psched__problem *pb, psched_plan **resolved)
{
    psched_plan *probe = NULL;
    psched_schedule *sched = NULL;
    psched_report *rep = NULL;
    psched_status st = psched_plan_clone(plan, &probe);
    /* the probes' synthetic costs are no partition's: the caller's
     * overlap saving is kept in pb->overlap and written with each
     * partition's costs */
    if (!st && plan->cm)
        st = psched_plan_set_overlap_saving(probe, 0);
    if (!st)
        st = psched_plan_set_cost(probe, 1, 1, 1);
    if (!st)
        st = psched_plan_set_mem(probe, 1, 0, -1);
    if (!st)
        st = psched_plan_set_comm(probe, 0);
    if (!st)
        st = psched_plan_set_memory_limit(probe, INFINITY);
    if (!st)
        st = psched_generate(probe, name, &sched);
    if (st)
        goto out;
    const psched_plan *rp = psched_schedule_plan(sched);
    pb->chains = psched_plan_chains(rp);
    pb->devices = pb->plan_devices = psched_plan_devices(rp);
    pb->chunks = psched_plan_chunks(rp);
    pb->stages = pb->plan_stages = psched_plan_stages(rp);
    pb->microbatches = psched_plan_microbatches(rp);
    pb->wmin = INFINITY;
    for (uint32_t k = 0; k < pb->microbatches; k++)
        pb->wmin = fmin(pb->wmin, psched_plan_microbatch_weight(rp, k));
    if (!(pb->wmin > 0 && pb->wmin < INFINITY))
        pb->wmin = 1;
    if (pb->chains != 1 && (st = check_chains(rp, name)))
        goto out;
    for (uint32_t s = 0; s < pb->plan_stages; s++) {
        double saving = psched__plan_overlap(plan, s);
        if (saving > 0 && !pb->overlap) {
            pb->overlap = psched__calloc(pb->plan_stages, sizeof *pb->overlap);
            if (!pb->overlap) {
                st = PSCHED_ENOMEM_FAIL();
                goto out;
            }
        }
        if (pb->overlap)
            pb->overlap[s] = saving;
    }
    pb->inflight = psched__calloc(pb->stages, sizeof *pb->inflight);
    pb->device_of = psched__calloc(pb->stages, sizeof *pb->device_of);
    if (!pb->inflight || !pb->device_of) {
        st = PSCHED_ENOMEM_FAIL();
        goto out;
    }
    if ((st = count_inflight(sched, pb)) || (st = psched_simulate(sched, NULL, &rep)))
        goto out;
    if (pb->chains == 2 && (st = fold_chains(pb)))
        goto out;
    pb->nmin = INFINITY;
    for (uint32_t s = 0; s < pb->stages; s++)
        pb->nmin = fmin(pb->nmin, pb->inflight[s]);
    double unit_device = 3.0 * pb->chunks, unit_sum = 3.0 * pb->stages;
    pb->kappa = (psched_report_makespan(rep) - (pb->microbatches - 1.0) * unit_device) / unit_sum;
    if ((st = calibrate_lambda(rp, name, psched_report_makespan(rep), pb)) ||
        (st = psched_plan_clone(rp, resolved)))
        goto out;
    st = psched_plan_set_comm(*resolved, psched_plan_comm(plan));
    if (!st)
        st = psched_plan_set_memory_limit(*resolved, INFINITY);
    if (st) {
        psched_plan_destroy(*resolved);
        *resolved = NULL;
    }
out:
    psched_report_destroy(rep);
    psched_schedule_destroy(sched);
    psched_plan_destroy(probe);
    return st;
}

/* Refuse what the objective cannot weigh: times or bytes whose sums
 * overflow (every figure would be inf, every comparison a tie). A model
 * whose layers take no time is accepted: every partition ties at 0. The
 * objective multiplies the total time by at most m + S, memory the
 * activations by at most the in-flight count. */
psched_status psched__problem_check(const psched__problem *pb)
{
    uint32_t L = pb->layers;
    double act = 0, extra = 0, inflight = 0;
    for (uint32_t g = 0; g < pb->model->group_count; g++) {
        const psched__group *gr = &pb->model->groups[g];
        double a = 0, e = 0;
        for (int r = 0; r < PSCHED__RECOMPUTE_KINDS; r++)
            if (gr->variant[r].present)
                a = fmax(a, gr->variant[r].act), e = fmax(e, gr->variant[r].extra);
        act += a * gr->count;
        extra += e * gr->count;
    }
    for (uint32_t s = 0; s < pb->stages; s++)
        inflight = fmax(inflight, pb->inflight[s]);
    double weight = (double)pb->microbatches + pb->stages;
    if (!isfinite((pb->time_total + extra) * weight))
        return psched_fail(PSCHED_EINVAL,
                           "the model's times overflow: %u layers sum to %g (f+b+w) plus %g "
                           "(recompute), times m + S = %g; scale the times down",
                           L, pb->time_total, extra, weight);
    if (!isfinite(pb->param_prefix[L] + act * fmax(1, inflight)))
        return psched_fail(PSCHED_EINVAL,
                           "the model's bytes overflow: parameters sum to %g and activations to "
                           "%g, times up to %g micro-batches in flight; scale the bytes down",
                           pb->param_prefix[L], act, inflight);
    return PSCHED_OK;
}


psched_status psched__solution_init(psched__solution *sol, uint32_t stages, uint32_t layers)
{
    memset(sol, 0, sizeof *sol);
    sol->first = psched__calloc(stages, sizeof *sol->first);
    sol->count = psched__calloc(stages, sizeof *sol->count);
    sol->choice = psched__calloc(layers ? layers : 1, sizeof *sol->choice);
    if (!sol->first || !sol->count || !sol->choice) {
        psched__solution_free(sol); /* callers free nothing on failure */
        return PSCHED_ENOMEM_FAIL();
    }
    return PSCHED_OK;
}

void psched__solution_free(psched__solution *sol)
{
    psched__dealloc(sol->first);
    psched__dealloc(sol->count);
    psched__dealloc(sol->choice);
    memset(sol, 0, sizeof *sol);
}

void psched__solution_copy(const psched__problem *pb, const psched__solution *from,
                          psched__solution *to)
{
    memcpy(to->first, from->first, pb->stages * sizeof *to->first);
    memcpy(to->count, from->count, pb->stages * sizeof *to->count);
    memcpy(to->choice, from->choice, pb->layers);
    to->found = from->found;
}

psched_status psched__evaluation_init(const psched__problem *pb, psched__evaluation *ev)
{
    ev->stage_time = psched__calloc(pb->stages, sizeof(double));
    ev->stage_mem = psched__calloc(pb->stages, sizeof(double));
    ev->dev_param = psched__calloc(pb->devices, sizeof(double));
    ev->dev_mem = psched__calloc(pb->devices, sizeof(double));
    ev->dev_time = psched__calloc(pb->devices, sizeof(double));
    if (!ev->stage_time || !ev->stage_mem || !ev->dev_param || !ev->dev_mem || !ev->dev_time)
        return PSCHED_ENOMEM_FAIL();
    return PSCHED_OK;
}

void psched__evaluation_free(psched__evaluation *ev)
{
    psched__dealloc(ev->stage_time);
    psched__dealloc(ev->stage_mem);
    psched__dealloc(ev->dev_param);
    psched__dealloc(ev->dev_mem);
    psched__dealloc(ev->dev_time);
    ev->stage_time = ev->stage_mem = ev->dev_param = ev->dev_mem = ev->dev_time = NULL;
}

void psched__evaluate(const psched__problem *pb, const psched__solution *sol, psched__evaluation *ev)
{
    for (uint32_t d = 0; d < pb->devices; d++)
        ev->dev_param[d] = ev->dev_mem[d] = ev->dev_time[d] = 0;
    double sum = 0;
    for (uint32_t s = 0; s < pb->stages; s++) {
        uint32_t i = sol->first[s], len = sol->count[s], d = pb->device_of[s];
        double extra = 0, act = 0;
        for (uint32_t l = i; l < i + len; l++) {
            const psched__variant *v = &psched__layer_group(pb, l)->variant[sol->choice[l]];
            extra += v->extra;
            act += v->act;
        }
        double t = psched__range_time(pb, i, len) + extra;
        double param = psched__range_param(pb, i, len);
        ev->stage_time[s] = t;
        ev->stage_mem[s] = param + pb->inflight[s] * act;
        ev->dev_param[d] += param;
        ev->dev_mem[d] += ev->stage_mem[s];
        ev->dev_time[d] += t;
        sum += t;
    }
    double tmax = 0, mmax = 0;
    for (uint32_t d = 0; d < pb->devices; d++) {
        tmax = fmax(tmax, ev->dev_time[d]);
        mmax = fmax(mmax, ev->dev_mem[d]);
    }
    for (uint32_t s = 0; s < pb->stages; s++)
        tmax = fmax(tmax, pb->lambda * ev->stage_time[s]);
    ev->objective = (pb->microbatches - 1.0) * tmax + pb->kappa * sum;
    ev->max_mem = mmax;
}

bool psched__fits(const psched__problem *pb, double mem)
{
    return mem <= psched__room(pb);
}

/* Write each stage's summed costs and its activation bytes (held from F
 * to W) into the plan. */
psched_status psched__write_costs(const psched__problem *pb, const psched__solution *sol,
                                  psched_plan *plan)
{
    for (uint32_t s = 0; s < pb->plan_stages; s++) {
        double f = 0, b = 0, w = 0, act = 0;
        uint32_t r = psched__range_of(pb, s);
        for (uint32_t l = sol->first[r]; l < sol->first[r] + sol->count[r]; l++) {
            const psched__group *g = psched__layer_group(pb, l);
            const psched__variant *v = &g->variant[sol->choice[l]];
            f += g->f;
            b += g->b + v->extra;
            w += g->w;
            act += v->act;
        }
        psched_status st = psched_plan_set_stage_cost(plan, s, f, b, w);
        if (!st)
            st = psched_plan_set_stage_mem(plan, s, act, 0, -act);
        /* a pair hides at most its shorter op: the caller's saving, capped
         * at this partition's stage */
        if (!st && pb->overlap)
            st = psched_plan_set_stage_overlap_saving(plan, s, fmin(pb->overlap[s], fmin(f, b)));
        if (st)
            return st;
    }
    return PSCHED_OK;
}
