/* The partition result: the chosen ranges and recompute choices, their
 * figures, the plan with the partition's costs and its simulation, and the
 * public getters. */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void psched_partition_result_destroy(psched_partition_result *r)
{
    if (!r)
        return;
    psched__dealloc(r->first);
    psched__dealloc(r->count);
    psched__dealloc(r->choice);
    psched__dealloc(r->stage_time);
    psched__dealloc(r->stage_mem);
    psched__dealloc(r->dev_param);
    psched__dealloc(r->dev_mem);
    psched__dealloc(r->dev_peak);
    psched_plan_destroy(r->plan);
    psched__dealloc(r->schedule);
    psched__dealloc(r);
}

psched_partition_result *psched__result_alloc(const psched__problem *pb)
{
    psched_partition_result *r = psched__calloc(1, sizeof *r);
    if (!r)
        return NULL;
    uint32_t S = pb->plan_stages, P = pb->plan_devices;
    r->stages = S;
    r->devices = P;
    r->layers = pb->layers;
    r->first = psched__calloc(S, sizeof *r->first);
    r->count = psched__calloc(S, sizeof *r->count);
    r->choice = psched__calloc(pb->layers, sizeof *r->choice);
    r->stage_time = psched__calloc(S, sizeof(double));
    r->stage_mem = psched__calloc(S, sizeof(double));
    r->dev_param = psched__calloc(P, sizeof(double));
    r->dev_mem = psched__calloc(P, sizeof(double));
    r->dev_peak = psched__calloc(P, sizeof(double));
    if (!r->first || !r->count || !r->choice || !r->stage_time || !r->stage_mem ||
        !r->dev_param || !r->dev_mem || !r->dev_peak) {
        psched_partition_result_destroy(r);
        return NULL;
    }
    r->gap = r->objective = r->min_memory = r->makespan = r->bubble = NAN;
    r->limit = pb->limit;
    return r;
}

/* Generate the schedule again with the partition's costs and simulate it:
 * the figures users compare are the simulator's, not the model's. */
static psched_status resimulate(const char *name,
                                psched_partition_result *r)
{
    psched_schedule *sched = NULL;
    psched_report *rep = NULL;
    psched_status st = psched_generate(r->plan, name, &sched);
    if (!st)
        st = psched_simulate(sched, NULL, &rep);
    if (!st) {
        r->makespan = psched_report_makespan(rep);
        r->bubble = psched_report_bubble_ratio(rep);
        for (uint32_t d = 0; d < r->devices && !st; d++) {
            double peak = 0;
            st = psched_report_device(rep, d, NULL, NULL, &peak);
            r->dev_peak[d] = r->dev_param[d] + peak;
        }
    }
    psched_report_destroy(rep);
    psched_schedule_destroy(sched);
    return st;
}

psched_status psched__result_fill(const psched__problem *pb, const psched__solution *sol,
                                 const char *name, psched_plan **plan, psched__evaluation *ev,
                                 psched_partition_result *r)
{
    if (!sol->found)
        return PSCHED_OK;
    psched__evaluate(pb, sol, ev);
    size_t n = strlen(name) + 1;
    if (!(r->schedule = psched__malloc(n)))
        return PSCHED_ENOMEM_FAIL();
    memcpy(r->schedule, name, n);
    r->has_partition = true;
    r->objective = ev->objective;
    if (pb->chains == 1) {
        memcpy(r->first, sol->first, pb->stages * sizeof *r->first);
        memcpy(r->count, sol->count, pb->stages * sizeof *r->count);
        memcpy(r->stage_time, ev->stage_time, pb->stages * sizeof(double));
        memcpy(r->stage_mem, ev->stage_mem, pb->stages * sizeof(double));
        memcpy(r->dev_param, ev->dev_param, pb->devices * sizeof(double));
        memcpy(r->dev_mem, ev->dev_mem, pb->devices * sizeof(double));
    } else {
        /* Unfold: every plan stage holds its range, with its own in-flight
         * count, on its own device. */
        const psched_plan *plan_in = *plan;
        for (uint32_t d = 0; d < r->devices; d++)
            r->dev_param[d] = r->dev_mem[d] = 0;
        for (uint32_t s = 0; s < r->stages; s++) {
            uint32_t k = psched__range_of(pb, s), d = psched_plan_stage_device(plan_in, s);
            double act = 0, param = psched__range_param(pb, sol->first[k], sol->count[k]);
            for (uint32_t l = sol->first[k]; l < sol->first[k] + sol->count[k]; l++)
                act += psched__layer_group(pb, l)->variant[sol->choice[l]].act;
            r->first[s] = sol->first[k];
            r->count[s] = sol->count[k];
            r->stage_time[s] = ev->stage_time[k];
            r->stage_mem[s] = param + pb->plan_inflight[s] * act;
            r->dev_param[d] += param;
            r->dev_mem[d] += r->stage_mem[s];
        }
    }
    memcpy(r->choice, sol->choice, pb->layers);
    psched_status st = psched__write_costs(pb, sol, *plan);
    if (st)
        return st;
    r->plan = *plan;
    *plan = NULL;
    return resimulate(name, r);
}

/* ---- getters ---- */

psched_solve_status psched_partition_status(const psched_partition_result *r)
{
    return r ? r->status : PSCHED_SOLVE_INFEASIBLE;
}

double psched_partition_gap(const psched_partition_result *r)
{
    return r ? r->gap : NAN;
}

double psched_partition_objective(const psched_partition_result *r)
{
    return r ? r->objective : NAN;
}

double psched_partition_solve_time(const psched_partition_result *r)
{
    return r ? r->solve_time : NAN;
}

double psched_partition_min_memory(const psched_partition_result *r)
{
    return r ? r->min_memory : NAN;
}

uint32_t psched_partition_stages(const psched_partition_result *r)
{
    return r ? r->stages : 0;
}

psched_status psched_partition_stage(const psched_partition_result *r, uint32_t stage,
                                     uint32_t *first, uint32_t *count, double *time,
                                     double *memory)
{
    if (!r || stage >= r->stages)
        return psched_fail(PSCHED_EINVAL, "stage (%u) must be < stage count (%u)", stage,
                           r ? r->stages : 0);
    if (!r->has_partition)
        return psched_fail(PSCHED_EINFEASIBLE, "no partition fits the memory limit");
    if (first)
        *first = r->first[stage];
    if (count)
        *count = r->count[stage];
    if (time)
        *time = r->stage_time[stage];
    if (memory)
        *memory = r->stage_mem[stage];
    return PSCHED_OK;
}

psched_recompute psched_partition_layer_recompute(const psched_partition_result *r,
                                                  uint32_t layer)
{
    if (!r || !r->has_partition || layer >= r->layers)
        return PSCHED_RECOMPUTE_NONE;
    return (psched_recompute)r->choice[layer];
}

const psched_plan *psched_partition_plan(const psched_partition_result *r)
{
    return r ? r->plan : NULL;
}

double psched_partition_makespan(const psched_partition_result *r)
{
    return r ? r->makespan : NAN;
}

double psched_partition_bubble_ratio(const psched_partition_result *r)
{
    return r ? r->bubble : NAN;
}

psched_status psched_partition_device(const psched_partition_result *r, uint32_t device,
                                      double *params, double *memory, double *peak_memory)
{
    if (!r || device >= r->devices)
        return psched_fail(PSCHED_EINVAL, "device (%u) must be < device count (%u)", device,
                           r ? r->devices : 0);
    if (!r->has_partition)
        return psched_fail(PSCHED_EINFEASIBLE, "no partition fits the memory limit");
    if (params)
        *params = r->dev_param[device];
    if (memory)
        *memory = r->dev_mem[device];
    if (peak_memory)
        *peak_memory = r->dev_peak[device];
    return PSCHED_OK;
}
