/* Builds schedules by hand for tests, from PyTorch action text per device
 * ("0F0,0I0,0W0,1B1"), through the internal builder, so validator and
 * simulator tests do not depend on the CSV importer. Overlapped pairs are
 * written "a;b". */
#ifndef PSCHED_TESTSCHED_H
#define PSCHED_TESTSCHED_H

#include "internal.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int ts_parse(const char **s, uint32_t *stage, psched_op_kind *kind, uint32_t *mb)
{
    char *end;
    *stage = (uint32_t)strtoul(*s, &end, 10);
    switch (*end) {
    case 'F': *kind = PSCHED_OP_F; break;
    case 'I': *kind = PSCHED_OP_B; break;
    case 'W': *kind = PSCHED_OP_W; break;
    case 'B': *kind = PSCHED_OP_BW; break;
    default: return 0;
    }
    *mb = (uint32_t)strtoul(end + 1, &end, 10);
    *s = end;
    return 1;
}

/* plan: resolved shape (chunks and placement set); rows: one string per device. */
static inline psched_schedule *ts_build(const psched_plan *plan, const char *const *rows)
{
    psched_plan *copy;
    if (psched_plan_clone(plan, &copy))
        return NULL;
    psched_builder *b;
    if (psched__builder_create(copy, &b)) {
        psched_plan_destroy(copy);
        return NULL;
    }
    for (uint32_t d = 0; d < psched_plan_devices(plan); d++) {
        const char *s = rows[d];
        while (*s) {
            uint32_t st, mb;
            psched_op_kind k;
            if (!ts_parse(&s, &st, &k, &mb))
                abort();
            uint32_t flags = 0;
            if (*s == ';')
                flags = PSCHED_OP_OVERLAP_NEXT;
            psched_builder_append(b, d, k, st, mb, flags);
            if (*s)
                s++;
        }
    }
    psched_schedule *out = NULL;
    if (psched__builder_finish(b, copy, "test", &out))
        psched_plan_destroy(copy);
    psched__builder_destroy(b);
    return out;
}

/* A resolved loop/vshape plan with unit costs. */
static inline psched_plan *ts_plan(uint32_t p, uint32_t m, uint32_t v, psched_placement placement)
{
    psched_plan *plan = tu_plan(p, m, v);
    if (plan)
        CHECK_OK(psched_plan_set_placement(plan, placement));
    return plan;
}

/* A schedule from CSV action text (the importer's grammar, copies and
 * collectives included); NULL, with the library's message on stderr, if
 * the importer refuses it. */
static inline psched_schedule *ts_import(const psched_plan *plan, const char *text)
{
    psched_schedule *s = NULL;
    if (psched_import_csv(text, strlen(text), plan, &s))
        fprintf(stderr, "import: %s\n", psched_last_error());
    return s;
}

/* xorshift64: a test's reproducible stream of choices in [0, n) (0 when
 * n is 0); each test seeds its own state. */
static inline uint32_t ts_rand(uint64_t *state, uint32_t n)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return n ? (uint32_t)(*state % n) : 0;
}

/* A copy of s that a test may corrupt op by op (made without the builder,
 * which would refuse the corruptions); psched_schedule_destroy() frees it. */
static inline psched_schedule *ts_copy(const psched_schedule *s)
{
    psched_schedule *c = calloc(1, sizeof *c);
    size_t total = s->offset[s->devices];
    if (!c)
        abort();
    *c = *s;
    c->plan = NULL;
    c->offset = malloc((s->devices + 1) * sizeof *c->offset);
    c->ops = malloc((total + 1) * sizeof *c->ops);
    if (!c->offset || !c->ops || psched_plan_clone(s->plan, &c->plan))
        abort();
    memcpy(c->offset, s->offset, (s->devices + 1) * sizeof *c->offset);
    memcpy(c->ops, s->ops, total * sizeof *c->ops);
    return c;
}

#endif
