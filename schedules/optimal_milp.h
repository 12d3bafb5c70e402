/* The exact scheduler's MILP (schedules/optimal_milp.c), separated from the
 * generator (schedules/optimal.c) that prepares the instance, seeds it with
 * the best heuristic and turns the solution back into op lists. */
#ifndef PSCHED_OPTIMAL_MILP_H
#define PSCHED_OPTIMAL_MILP_H

#include "internal.h"

/* One F, B or W op of the instance. Ops are numbered
 * ((stage · m) + microbatch) · 3 + kind with kind 0 = F, 1 = B, 2 = W. */
typedef struct psched__xop {
    uint32_t device;
    double dur; /* t_F, t_B or t_W of its stage */
    double mem; /* its memory delta */
    uint32_t ndep;
    uint32_t dep[2];  /* ops it waits for (DESIGN §2) */
    double lat[2];    /* latency of each of those edges (0 on one device) */
} psched__xop;

typedef struct psched__exact {
    uint32_t n, devices;
    const psched__xop *ops;
    /* before[i·n + j]: op i precedes op j in every valid order (the
     * dependency closure, plus the order of the first stage's forwards that
     * the identical micro-batches let us fix). */
    const uint8_t *before;
    double limit;     /* per-device memory limit, INFINITY for none */
    double lower;     /* a proven lower bound on the span (psched_bound) */
    double horizon;   /* no op of an ASAP schedule ends later */
    /* The seed (the best heuristic, split into F, B, W): position of every
     * op in its device's list and its simulated start, or NULL. */
    const uint32_t *seed_pos;
    const double *seed_start;
    double time_limit; /* seconds */
    long node_limit;   /* branch-and-bound nodes, 0 for no limit */
} psched__exact;

typedef struct psched__exact_result {
    bool found;   /* a solution other than the seed was found */
    bool optimal; /* the search finished: the best solution is optimal */
    double bound; /* best proven lower bound on the span (at least `lower`) */
    double span;  /* span of the best solution found */
    long nodes;   /* branch-and-bound nodes explored */
} psched__exact_result;

/* True when this build has GLPK. */
PSCHED_INTERNAL bool psched__exact_available(void);

/* Solves the instance: on success `pos` (n entries) holds each op's position
 * in its device's list when result->found. PSCHED_ESOLVER when GLPK fails,
 * PSCHED_ENOMEM, PSCHED_EUNSUPPORTED without GLPK. */
PSCHED_INTERNAL psched_status psched__exact_solve(const psched__exact *in, uint32_t *pos,
                                                  psched__exact_result *result);

#endif
