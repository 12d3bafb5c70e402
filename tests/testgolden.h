/* Helpers of the golden-order tests (test_generators_classic.c,
 * test_generators_zb.c): generate a plan shape through the public API and
 * print a device's order as PyTorch action text. */
#ifndef PSCHED_TESTGOLDEN_H
#define PSCHED_TESTGOLDEN_H

#include "pipesched.h"
#include "testutil.h"

#include <stdint.h>
#include <stdio.h>

#define NO_GROUP (-1)

/* Generates with the given shape; v = 0 leaves the chunk count to the
 * generator, group < 0 leaves the group-size option unset. */
static inline psched_status tg_generate(const char *name, uint32_t p, uint32_t v, uint32_t m,
                                        int64_t group, psched_schedule **out)
{
    *out = NULL;
    psched_plan *plan = tu_plan(p, m, v);
    if (!plan)
        return PSCHED_ENOMEM;
    if (group >= 0)
        CHECK_OK(psched_plan_set_option(plan, "group-size", group));
    psched_status st = psched_generate(plan, name, out);
    psched_plan_destroy(plan);
    return st;
}

static inline psched_schedule *tg_generate_ok(const char *name, uint32_t p, uint32_t v,
                                              uint32_t m, int64_t group)
{
    psched_schedule *s = NULL;
    CHECK_OK(tg_generate(name, p, v, m, group, &s));
    return s;
}

/* PyTorch's letter of a compute op: our B is its "I", our BW its "B". */
static inline char tg_kind_letter(uint8_t kind)
{
    switch (kind) {
    case PSCHED_OP_F:
        return 'F';
    case PSCHED_OP_B:
        return 'I';
    case PSCHED_OP_W:
        return 'W';
    case PSCHED_OP_BW:
        return 'B';
    default:
        return '?';
    }
}

/* Device d's order as PyTorch action text joined by commas. Also pins the
 * per-op fields the text does not show: loop chunk, no flags. */
static inline void tg_device_text(const psched_schedule *s, uint32_t d, char *buf, size_t size)
{
    uint32_t p = psched_schedule_devices(s);
    size_t n = psched_schedule_op_count(s, d), len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && len < size; i++) {
        psched_op op;
        CHECK_OK(psched_schedule_ops(s, d, i, 1, &op, sizeof op));
        CHECK_EQ_INT(op.stage % p, d);
        CHECK_EQ_INT(op.chunk, op.stage / p);
        CHECK_EQ_INT(op.flags, 0);
        len += (size_t)snprintf(buf + len, size - len, "%s%u%c%u", i ? "," : "", op.stage,
                                tg_kind_letter(op.kind), op.microbatch);
    }
}

#endif
