/* The baselines every exact search starts from and is never worse than:
 * Megatron's even split (embedding and head on the end stages), the
 * accounted even split, and one recompute choice for every layer. */
#include "optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The most memory-saving variant a layer has among none..kind. */
static uint8_t uniform_choice(const psched__group *g, int kind)
{
    for (int r = kind; r > 0; r--)
        if (g->variant[r].present)
            return (uint8_t)r;
    return PSCHED_RECOMPUTE_NONE;
}

/* Megatron's splits: `units` layers starting at `skip` split evenly with
 * the remainder on the first stages; a leading embedding and a trailing head
 * (count-1 groups at the ends) stay on the first and last stage. */
psched_status psched__even_split(const psched__problem *pb, bool accounted, psched__solution *sol)
{
    const psched_model *m = pb->model;
    uint32_t emb = 0, head = 0;
    if (!accounted && m->group_count >= 3) {
        emb = m->groups[0].count == 1;
        head = m->groups[m->group_count - 1].count == 1;
    }
    uint32_t body = pb->layers - emb - head, S = pb->stages;
    uint32_t next = 0;
    for (uint32_t s = 0; s < S; s++) {
        uint32_t n = body / S + (s < body % S);
        if (s == 0)
            n += emb;
        if (s == S - 1)
            n += head;
        if (n == 0 && !pb->allow_empty)
            return psched_fail(PSCHED_EINVAL,
                               "even split leaves stage %u empty (%u layers to split over %u "
                               "stages); allow empty stages or use another method",
                               s, body, S);
        sol->first[s] = next;
        sol->count[s] = n;
        next += n;
    }
    sol->found = true;
    return PSCHED_OK;
}

/* One recompute choice for every layer, the first of none, selective,
 * full that fits (Megatron's --recompute-granularity). */
void psched__uniform_recompute(const psched__problem *pb, psched__solution *sol, psched__evaluation *ev)
{
    for (int kind = 0; kind < PSCHED__RECOMPUTE_KINDS; kind++) {
        for (uint32_t l = 0; l < pb->layers; l++)
            sol->choice[l] = uniform_choice(psched__layer_group(pb, l), kind);
        psched__evaluate(pb, sol, ev);
        if (psched__fits(pb, ev->max_mem))
            return;
    }
}
