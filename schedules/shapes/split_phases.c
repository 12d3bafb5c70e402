/* Phase shapes of split-backward schedules. See split_phases.h. */
#include "split_phases.h"

psched_status psched__split_begin(psched_split *s, psched_builder *b, uint32_t device,
                                  const psched_seq *fwd, const psched_seq *bwd)
{
    s->builder = b;
    s->device = device;
    s->fwd = fwd;
    s->bwd = bwd;
    s->f = s->b = s->w = 0;
    s->at_f = psched__seq_cursor(fwd, 0);
    s->at_b = psched__seq_cursor(bwd, 0);
    s->at_w = psched__seq_cursor(bwd, 0);
    psched__stage_map(&s->map, psched_builder_plan(b), device);
    return psched_builder_reserve(b, device, fwd->count + 2 * bwd->count);
}

/* `limit` is the sequence length for F and B, and the B done so far for W
 * (a W never overtakes its B). */
static psched_status append(psched_split *s, psched_op_kind kind, psched_seq_cursor *at,
                            size_t *next, size_t limit)
{
    static const char letters[] = "FBW";
    if (*next >= limit)
        return psched_fail(PSCHED_EINVAL,
                           "device %u: %c number %zu is past the %zu available (generator bug)",
                           s->device, letters[kind], *next, limit);
    (*next)++;
    psched_slot slot = psched__seq_next(at);
    return psched_builder_append(s->builder, s->device, kind, psched__stage_of(&s->map, slot),
                                 slot.microbatch, 0);
}

static psched_status step(psched_split *s, char letter)
{
    switch (letter) {
    case 'F':
        return append(s, PSCHED_OP_F, &s->at_f, &s->f, s->fwd->count);
    case 'B':
        return append(s, PSCHED_OP_B, &s->at_b, &s->b, s->bwd->count);
    case 'W':
        return append(s, PSCHED_OP_W, &s->at_w, &s->w, s->b);
    default:
        return psched_fail(PSCHED_EINVAL, "phase pattern letter '%c' is not F, B or W", letter);
    }
}

psched_status psched__split_run(psched_split *s, const char *pattern, size_t repeat)
{
    psched_status st = PSCHED_OK;
    for (size_t r = 0; r < repeat && st == PSCHED_OK; r++)
        for (const char *c = pattern; *c && st == PSCHED_OK; c++)
            st = step(s, *c);
    return st;
}

psched_status psched__split_drain(psched_split *s)
{
    return psched__split_run(s, "W", s->b - s->w);
}

psched_status psched__split_device(psched_builder *b, uint32_t device, const psched_seq *fwd,
                                   const psched_seq *bwd, const psched_split_phase *phases,
                                   size_t count)
{
    psched_split dev;
    psched_status st = psched__split_begin(&dev, b, device, fwd, bwd);
    for (size_t i = 0; i < count && st == PSCHED_OK; i++)
        st = psched__split_run(&dev, phases[i].pattern, phases[i].repeat);
    return st == PSCHED_OK ? psched__split_drain(&dev) : st;
}
