/* ZB-V (zero-bubble paper §6, PyTorch ScheduleZBVZeroBubble): V placement,
 * B and W split, W filling every bubble. The order is built for
 * m' = max(2p-1, m) micro-batches, the fewest that fill the V, and ops of
 * micro-batches >= m are then left out, which keeps every remaining
 * dependency in order. */
#include "pipesched.h"

typedef struct vzb_state {
    psched_builder *b;
    psched_status status;
    uint32_t device, m;
    uint32_t stage[2];
    uint32_t next[2][3]; /* next micro-batch per chunk and kind (F, B, W) */
} vzb_state;

enum { VZB_F, VZB_B, VZB_W };

static void vzb_emit(vzb_state *s, uint32_t chunk, int which)
{
    static const psched_op_kind kinds[3] = {PSCHED_OP_F, PSCHED_OP_B, PSCHED_OP_W};
    uint32_t mb = s->next[chunk][which]++;

    if (mb < s->m)
        s->status = psched_builder_append(s->b, s->device, kinds[which], s->stage[chunk], mb, 0);
}

static void vzb_fbw(vzb_state *s, uint32_t chunk)
{
    vzb_emit(s, chunk, VZB_F);
    vzb_emit(s, chunk, VZB_B);
    vzb_emit(s, chunk, VZB_W);
}

static void vzb_device(vzb_state *s, uint32_t p, uint32_t mp)
{
    uint32_t d = s->device;
    uint32_t (*n)[3] = s->next;

    for (uint32_t i = 0; i < 2 * (p - d) - 1; i++)
        vzb_emit(s, 0, VZB_F);
    for (uint32_t i = 0; i < d; i++) {
        vzb_emit(s, 1, VZB_F);
        vzb_emit(s, 0, VZB_F);
    }
    for (uint32_t i = 0; i < p - d; i++)
        vzb_fbw(s, 1);
    while (n[1][VZB_F] < n[0][VZB_F] || n[0][VZB_F] < mp) {
        if (n[0][VZB_F] < mp)
            vzb_emit(s, 0, VZB_F);
        vzb_emit(s, 0, VZB_B);
        vzb_emit(s, 0, VZB_W);
        vzb_fbw(s, 1);
    }
    for (uint32_t i = 0; i < d; i++) {
        vzb_emit(s, 0, VZB_B);
        vzb_emit(s, 1, VZB_B);
    }
    for (uint32_t i = 0; i < p - d; i++) {
        vzb_emit(s, 0, VZB_B);
        vzb_emit(s, 0, VZB_W);
    }
    for (uint32_t c = 2; c-- > 0;)
        while (n[c][VZB_W] < n[c][VZB_B])
            vzb_emit(s, c, VZB_W);
}

static psched_status vzb_check(const psched_plan *plan)
{
    uint32_t v = psched_plan_chunks(plan);

    if (v != 2)
        return psched_fail(PSCHED_EINVAL, "chunks (%u) must be 2 for v-zb", v);
    if (psched_plan_placement(plan) != PSCHED_PLACEMENT_VSHAPE)
        return psched_fail(PSCHED_EINVAL, "placement must be vshape (stage s < p on device s, "
                                          "else on device 2p-1-s) for v-zb");
    return PSCHED_OK;
}

static psched_status vzb_generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    uint32_t mp = m > 2 * p - 1 ? m : 2 * p - 1;

    for (uint32_t d = 0; d < p; d++) {
        vzb_state s = {.b = b, .status = PSCHED_OK, .device = d, .m = m,
                       .stage = {d, 2 * p - 1 - d}};
        s.status = psched_builder_reserve(b, d, 6 * (size_t)m);
        vzb_device(&s, p, mp);
        if (s.status != PSCHED_OK)
            return s.status;
    }
    return PSCHED_OK;
}

/* PyTorch's (and torchtitan's) class name for this schedule. */
static const char *const aliases[] = {"ZBVZeroBubble", NULL};

const psched_generator psched_gen_v_zb = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = "v-zb",
    .description = "ZB-V: V-shape zero-bubble schedule, B/W split, peak memory M (2p chunk units)",
    .constraints = "vshape placement, v = 2; zero bubble with unit costs for m >= 2p-1",
    .placement = PSCHED_PLACEMENT_VSHAPE,
    .default_chunks = 2,
    .chains = 1,
    .check = vzb_check,
    .generate = vzb_generate,
    .aliases = aliases,
};
