/* Chimera (Li & Hoefler, SC'21): two copies of the model as two chains, the
 * down pipeline (chain 0, stage s on device s) and the up pipeline (chain 1,
 * stage s on device p-1-s), m/2 micro-batches each, full backwards.
 *
 * The basic unit is the paper's figure for m = p: each direction runs p/2
 * micro-batches 1F1B-style and the two merge without conflict. A device's
 * "lead" chain is the one whose forwards reach it first: the down chain on
 * the first half of the devices, the up chain on the second half. With
 * a = (distance to the middle of the pipeline, 1..p/2) and b = p/2 - a, the
 * unit is (Shigangli/Chimera, the --chimera loop of main_with_runtime.py):
 *   a forwards of the lead chain;
 *   b times (forward other, forward lead);
 *   a times (forward other, backward other);
 *   b times (backward lead, backward other);
 *   a backwards of the lead chain.
 * For m = k·p the k units are concatenated directly (the paper's §3.4,
 * main_with_runtime_direct.py): the last a backwards of the lead chain of
 * one unit alternate with the first a forwards of the next, (backward lead,
 * forward lead), so they fill the next unit's warm-up bubbles. */
#include "shapes/dualpipe_phases.h"

typedef struct chimera_state {
    psched_builder *b;
    psched_status status;
    uint32_t device;
    uint32_t stage[2];  /* stage of the lead chain and of the other chain here */
    uint32_t next_f[2]; /* next micro-batch per chain, in chain order */
    uint32_t next_b[2];
} chimera_state;

enum { LEAD, OTHER };

static void chimera_op(chimera_state *s, int which, psched_op_kind kind)
{
    uint32_t *next = kind == PSCHED_OP_F ? s->next_f : s->next_b;

    if (s->status == PSCHED_OK)
        s->status =
            psched_builder_append(s->b, s->device, kind, s->stage[which], next[which]++, 0);
}

static void chimera_pair(chimera_state *s, int w1, psched_op_kind k1, int w2, psched_op_kind k2)
{
    chimera_op(s, w1, k1);
    chimera_op(s, w2, k2);
}

static psched_status chimera_check(const psched_plan *plan)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);

    if (p % 2 != 0)
        return psched_fail(PSCHED_EINVAL,
                           "devices (%u) must be even for chimera (the two pipelines merge "
                           "without conflict only for an even depth)",
                           p);
    if (m % p != 0)
        return psched_fail(PSCHED_EINVAL,
                           "microbatches (%u) must be a multiple of devices (%u) for chimera "
                           "(basic units of p micro-batches, p/2 per direction)",
                           m, p);
    return psched__check_vshape_v2(plan, "chimera");
}

static psched_status chimera_generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), half = p / 2;
    uint32_t units = psched_plan_microbatches(plan) / p;

    for (uint32_t d = 0; d < p; d++) {
        bool down_leads = d < half;
        /* chain 0's stage d and chain 1's stage 2p-1-d share device d */
        chimera_state s = {
            .b = b,
            .device = d,
            .stage = {down_leads ? d : 2 * p - 1 - d, down_leads ? 2 * p - 1 - d : d},
        };
        uint32_t a = down_leads ? half - d : d - half + 1, bb = half - a;

        s.status = psched_builder_reserve(b, d, 2 * (size_t)psched_plan_microbatches(plan));
        for (uint32_t u = 0; u < units; u++) {
            for (uint32_t i = 0; i < a; i++) {
                if (u > 0)
                    chimera_op(&s, LEAD, PSCHED_OP_BW);
                chimera_op(&s, LEAD, PSCHED_OP_F);
            }
            for (uint32_t i = 0; i < bb; i++)
                chimera_pair(&s, OTHER, PSCHED_OP_F, LEAD, PSCHED_OP_F);
            for (uint32_t i = 0; i < a; i++)
                chimera_pair(&s, OTHER, PSCHED_OP_F, OTHER, PSCHED_OP_BW);
            for (uint32_t i = 0; i < bb; i++)
                chimera_pair(&s, LEAD, PSCHED_OP_BW, OTHER, PSCHED_OP_BW);
        }
        for (uint32_t i = 0; i < a; i++)
            chimera_op(&s, LEAD, PSCHED_OP_BW);
        if (s.status != PSCHED_OK)
            return s.status;
    }
    return PSCHED_OK;
}

const psched_generator psched_gen_chimera = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = "chimera",
    .description = "Chimera: two model copies in opposite directions, "
                   "p/2 micro-batches each per unit, merged",
    .constraints = "vshape placement (2 chains), v = 2, p even, m a multiple of p",
    .placement = PSCHED_PLACEMENT_VSHAPE,
    .default_chunks = 2,
    .chains = 2,
    .check = chimera_check,
    .generate = chimera_generate,
};
