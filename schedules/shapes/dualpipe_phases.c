/* DeepSeek DualPipe's eight phases for one device (deepseek-ai/DualPipe,
 * PyTorch ScheduleDualPipeV). Micro-batch numbers follow one forward and one
 * backward counter per phase; a split backward queues its W, and the queue
 * drains oldest first. */
#include "dualpipe_phases.h"

#include <stdbool.h>

typedef struct dp_pending_w {
    uint32_t stage, microbatch;
} dp_pending_w;

typedef struct dp_state {
    psched_builder *b;
    const psched_dualpipe_device *dev;
    psched_status status;
    uint32_t next_f[2], next_b[2];
    dp_pending_w *queue;
    size_t head, tail;
} dp_state;

static void dp_forward(dp_state *s, int phase)
{
    s->status = psched_builder_append(s->b, s->dev->device, PSCHED_OP_F, s->dev->stage[phase],
                                      s->next_f[phase]++, 0);
}

/* A split backward leaves its W for later; a fused one is PyTorch's "B". */
static void dp_backward(dp_state *s, int phase, bool split)
{
    uint32_t stage = s->dev->stage[phase], mb = s->next_b[phase]++;

    s->status = psched_builder_append(s->b, s->dev->device, split ? PSCHED_OP_B : PSCHED_OP_BW,
                                      stage, mb, 0);
    if (split)
        s->queue[s->tail++] = (dp_pending_w){stage, mb};
}

static void dp_weight(dp_state *s)
{
    /* DualPipe skips when nothing is pending; with the phase counts below the
     * queue is never empty here, but an empty pop must not read garbage. */
    if (s->head == s->tail)
        return;
    dp_pending_w w = s->queue[s->head++];
    s->status = psched_builder_append(s->b, s->dev->device, PSCHED_OP_W, w.stage, w.microbatch, 0);
}

/* Forward of one phase overlapped with the fused backward of the other. */
static void dp_overlap(dp_state *s, int fwd_phase, int bwd_phase)
{
    const psched_dualpipe_device *d = s->dev;

    s->status = psched_builder_append_pair(s->b, d->device, PSCHED_OP_F, d->stage[fwd_phase],
                                           s->next_f[fwd_phase]++, PSCHED_OP_BW,
                                           d->stage[bwd_phase], s->next_b[bwd_phase]++);
}

static void dp_warmup(dp_state *s, uint32_t behind)
{
    uint32_t r = s->dev->rank;

    for (uint32_t i = 0; i < 2 * behind; i++)
        dp_forward(s, 0);
    for (uint32_t i = 0; i < r + 1; i++) {
        dp_forward(s, 0);
        dp_forward(s, 1);
    }
    /* zero bubble: the W runs at once, filling the wait for the next F1 */
    for (uint32_t i = 0; i < behind; i++) {
        dp_backward(s, 1, true);
        dp_weight(s);
        dp_forward(s, 1);
    }
}

static void dp_steady(dp_state *s, uint32_t behind)
{
    const psched_dualpipe_device *d = s->dev;
    uint32_t steps = d->mbs - 2 * d->ranks + d->rank + 1;

    for (uint32_t i = 0; i < steps; i++) {
        /* The middle device gets its first backward straight after its own
         * forward (tip of the V), so overlapping them would only delay it. */
        if (i == 0 && d->rank == d->ranks - 1) {
            dp_forward(s, 0);
            dp_backward(s, 1, false);
        } else {
            dp_overlap(s, 0, 1);
        }
        dp_overlap(s, 1, 0);
    }
    for (uint32_t i = 0; i < behind; i++) {
        dp_backward(s, 1, false);
        dp_overlap(s, 1, 0);
    }
}

static void dp_cooldown(dp_state *s, uint32_t behind)
{
    uint32_t r = s->dev->rank, half = (r + 1) / 2;
    bool split = false;

    /* Splitting the second half of these backwards lets their W fill the
     * drain; odd and even devices start one backward apart. */
    for (uint32_t i = 0; i < r + 1; i++) {
        if (i == half && r % 2 == 1)
            split = true;
        dp_backward(s, 1, split);
        if (i == half && r % 2 == 0)
            split = true;
        dp_backward(s, 0, split);
    }
    for (uint32_t i = 0; i < behind; i++) {
        dp_weight(s);
        dp_backward(s, 0, true);
    }
    for (uint32_t i = 0; i < r + 1; i++)
        dp_weight(s);
}

psched_status psched__dualpipe_phases(psched_builder *b, const psched_dualpipe_device *dev)
{
    /* At most 2P-r-1 backwards are split (phases 3, 6, 7), so 2P slots never
     * overflow. */
    dp_state s = {.b = b, .dev = dev, .status = PSCHED_OK};
    s.queue = psched__reallocarray(NULL, 2 * (size_t)dev->ranks, sizeof *s.queue);
    if (!s.queue)
        return PSCHED_ENOMEM_FAIL();

    uint32_t behind = dev->ranks - dev->rank - 1;
    s.status = psched_builder_reserve(b, dev->device, 6 * (size_t)dev->mbs);
    dp_warmup(&s, behind);
    dp_steady(&s, behind);
    dp_cooldown(&s, behind);
    psched__dealloc(s.queue);
    return s.status;
}

psched_status psched__check_vshape_v2(const psched_plan *plan, const char *name)
{
    uint32_t v = psched_plan_chunks(plan);

    if (v != 2)
        return psched_fail(PSCHED_EINVAL, "chunks (%u) must be 2 for %s", v, name);
    if (psched_plan_placement(plan) != PSCHED_PLACEMENT_VSHAPE)
        return psched_fail(PSCHED_EINVAL,
                           "placement must be vshape (stage s < p on device s, else on "
                           "device 2p-1-s) for %s",
                           name);
    return PSCHED_OK;
}

psched_status psched__dualpipe_check(const psched_plan *plan, const char *name)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    psched_status st = psched__check_vshape_v2(plan, name);

    if (st != PSCHED_OK)
        return st;
    if ((uint64_t)m < 2 * (uint64_t)p)
        return psched_fail(PSCHED_EINVAL, "microbatches (%u) must be >= 2*devices (%u) for %s", m,
                           2 * p, name);
    return PSCHED_OK;
}
