/* Golden hashes: psched_schedule_hash is a cross-rank contract (docs/abi.md),
 * the same on every platform, compiler and library version within a soname.
 *
 * Each case lists its op order in PyTorch action text, copied from the
 * reference files (tests/data/reference: README worked examples, the
 * DualPipeV CSV) or derived by hand from the generator's published rule.
 * Two-chain schedules (dualpipe, chimera) use the same text: the encoding
 * has no per-op chain, because the stage says it (stages 0..S/2-1 are chain
 * 0, S/2..S-1 chain 1, with S = p·v); what it adds is the chain count in the
 * header, the stage map of all S stages, and micro-batches numbered from 0
 * within each chain while the header's m counts both chains.
 * The test writes the canonical encoding documented at the top of
 * lib/core/hash.c itself, byte by byte, hashes it with XXH3-64 (seed 0), and
 * checks that
 *   1. the generated schedule has exactly the listed ops,
 *   2. psched_schedule_hash gives the independently computed digest,
 *   3. that digest is the literal constant pinned here, so a change of the
 *      encoding or of xxHash fails even when the library and this file
 *      move together.
 * Changing a pinned constant breaks every mixed-version job: see docs/abi.md. */
#include "testutil.h"

#include <stdint.h>

#include "pipesched.h"
#include <xxhash.h>

#define MAX_DEVICES 4
#define MAX_OPS 64
#define MAX_ENCODING 4096

typedef struct golden_op {
    uint32_t stage, microbatch;
    uint8_t kind, flags;
} golden_op;

typedef struct golden {
    const char *generator;
    uint32_t p, m, v;
    uint32_t chains;            /* 1, or 2: stages 0..pv/2-1 and pv/2..pv-1 */
    psched_placement placement; /* LOOP or VSHAPE: the stage → device map */
    const char *const *rows;    /* one row of action text per device */
    uint64_t pinned;
} golden;

/* The rows of a case, parsed. */
typedef struct op_lists {
    golden_op ops[MAX_DEVICES][MAX_OPS];
    size_t count[MAX_DEVICES];
} op_lists;

/* ---- the op lists ---- */

/* 1F1B p=4, m=8: device d runs min(m, p-d-1) forwards, then (F, BW) pairs,
 * then the remaining BW (PyTorch "B" is our full backward BW). */
static const char *const rows_1f1b[] = {
    "0F0,0F1,0F2,0F3,0B0,0F4,0B1,0F5,0B2,0F6,0B3,0F7,0B4,0B5,0B6,0B7",
    "1F0,1F1,1F2,1B0,1F3,1B1,1F4,1B2,1F5,1B3,1F6,1B4,1F7,1B5,1B6,1B7",
    "2F0,2F1,2B0,2F2,2B1,2F3,2B2,2F4,2B3,2F5,2B4,2F6,2B5,2F7,2B6,2B7",
    "3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3,3F4,3B4,3F5,3B5,3F6,3B6,3F7,3B7",
};

/* Megatron interleaved 1F1B p=4, v=2, m=8 (group size p): device d warms up
 * with 2(p-d-1) + (v-1)p forwards; forward k runs chunk (k div p) mod v on
 * micro-batch (k div pv)·p + k mod p, backward k the mirrored chunk. The
 * same rule gives the README's p=2, v=2, m=4 worked example. */
static const char *const rows_interleaved[] = {
    "0F0,0F1,0F2,0F3,4F0,4F1,4F2,4F3,0F4,0F5,0F6,4B0,0F7,4B1,4F4,4B2,4F5,4B3,4F6,0B0,"
    "4F7,0B1,0B2,0B3,4B4,4B5,4B6,4B7,0B4,0B5,0B6,0B7",
    "1F0,1F1,1F2,1F3,5F0,5F1,5F2,5F3,1F4,5B0,1F5,5B1,1F6,5B2,1F7,5B3,5F4,1B0,5F5,1B1,"
    "5F6,1B2,5F7,1B3,5B4,5B5,5B6,5B7,1B4,1B5,1B6,1B7",
    "2F0,2F1,2F2,2F3,6F0,6F1,6F2,6B0,6F3,6B1,2F4,6B2,2F5,6B3,2F6,2B0,2F7,2B1,6F4,2B2,"
    "6F5,2B3,6F6,6B4,6F7,6B5,6B6,6B7,2B4,2B5,2B6,2B7",
    "3F0,3F1,3F2,3F3,7F0,7B0,7F1,7B1,7F2,7B2,7F3,7B3,3F4,3B0,3F5,3B1,3F6,3B2,3F7,3B3,"
    "7F4,7B4,7F5,7B5,7F6,7B6,7F7,7B7,3B4,3B5,3B6,3B7",
};

/* ZB-H1 p=4, m=8: stages 0 and 3 are the README's; stage i warms up with
 * p-i forwards and runs each W i backwards late (PyTorch "I" is our B). */
static const char *const rows_zb_h1[] = {
    "0F0,0F1,0F2,0F3,0I0,0W0,0F4,0I1,0W1,0F5,0I2,0W2,0F6,0I3,0W3,0F7,0I4,0W4,0I5,0W5,"
    "0I6,0W6,0I7,0W7",
    "1F0,1F1,1F2,1I0,1F3,1I1,1W0,1F4,1I2,1W1,1F5,1I3,1W2,1F6,1I4,1W3,1F7,1I5,1W4,1I6,"
    "1W5,1I7,1W6,1W7",
    "2F0,2F1,2I0,2F2,2I1,2F3,2I2,2W0,2F4,2I3,2W1,2F5,2I4,2W2,2F6,2I5,2W3,2F7,2I6,2W4,"
    "2I7,2W5,2W6,2W7",
    "3F0,3I0,3F1,3I1,3F2,3I2,3F3,3I3,3W0,3F4,3I4,3W1,3F5,3I5,3W2,3F6,3I6,3W3,3F7,3I7,"
    "3W4,3W5,3W6,3W7",
};

/* DualPipeV p=4, m=10: reference/pytorch/dualpipev_4rank_10mb.csv. */
static const char *const rows_dualpipev[] = {
    "0F0,0F1,0F2,0F3,0F4,0F5,0F6,7F0,7I0,7W0,7F1,7I1,7W1,7F2,7I2,7W2,7F3,"
    "(0F7;7B3)OVERLAP_F_B,(7F4;0B0)OVERLAP_F_B,(0F8;7B4)OVERLAP_F_B,"
    "(7F5;0B1)OVERLAP_F_B,(0F9;7B5)OVERLAP_F_B,(7F6;0B2)OVERLAP_F_B,7B6,"
    "(7F7;0B3)OVERLAP_F_B,7B7,(7F8;0B4)OVERLAP_F_B,7B8,(7F9;0B5)OVERLAP_F_B,7B9,0I6,0W6,"
    "0I7,0W7,0I8,0W8,0I9,0W9",
    "1F0,1F1,1F2,1F3,1F4,6F0,1F5,6F1,6I0,6W0,6F2,6I1,6W1,6F3,(1F6;6B2)OVERLAP_F_B,"
    "(6F4;1B0)OVERLAP_F_B,(1F7;6B3)OVERLAP_F_B,(6F5;1B1)OVERLAP_F_B,"
    "(1F8;6B4)OVERLAP_F_B,(6F6;1B2)OVERLAP_F_B,(1F9;6B5)OVERLAP_F_B,"
    "(6F7;1B3)OVERLAP_F_B,6B6,(6F8;1B4)OVERLAP_F_B,6B7,(6F9;1B5)OVERLAP_F_B,6B8,1B6,6I9,"
    "1I7,6W9,1I8,1W7,1I9,1W8,1W9",
    "2F0,2F1,2F2,5F0,2F3,5F1,2F4,5F2,5I0,5W0,5F3,(2F5;5B1)OVERLAP_F_B,"
    "(5F4;2B0)OVERLAP_F_B,(2F6;5B2)OVERLAP_F_B,(5F5;2B1)OVERLAP_F_B,"
    "(2F7;5B3)OVERLAP_F_B,(5F6;2B2)OVERLAP_F_B,(2F8;5B4)OVERLAP_F_B,"
    "(5F7;2B3)OVERLAP_F_B,(2F9;5B5)OVERLAP_F_B,(5F8;2B4)OVERLAP_F_B,5B6,"
    "(5F9;2B5)OVERLAP_F_B,5B7,2B6,5B8,2I7,5I9,2I8,2W7,2I9,5W9,2W8,2W9",
    "3F0,4F0,3F1,4F1,3F2,4F2,3F3,4F3,3F4,4B0,(4F4;3B0)OVERLAP_F_B,(3F5;4B1)OVERLAP_F_B,"
    "(4F5;3B1)OVERLAP_F_B,(3F6;4B2)OVERLAP_F_B,(4F6;3B2)OVERLAP_F_B,"
    "(3F7;4B3)OVERLAP_F_B,(4F7;3B3)OVERLAP_F_B,(3F8;4B4)OVERLAP_F_B,"
    "(4F8;3B4)OVERLAP_F_B,(3F9;4B5)OVERLAP_F_B,(4F9;3B5)OVERLAP_F_B,4B6,3B6,4B7,3B7,"
    "4I8,3I8,4I9,3I9,4W8,3W8,4W9,3W9",
};

/* ZB-V p=2, m=4: the README's worked example (PyTorch ScheduleZBVZeroBubble). */
static const char *const rows_v_zb[] = {
    "0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0F3,0I0,0W0,3F2,3I2,3W2,0I1,0W1,3F3,3I3,3W3,"
    "0I2,0W2,0I3,0W3",
    "1F0,2F0,1F1,2F1,2I0,2W0,1F2,1I0,1W0,2F2,2I1,2W1,1F3,1I1,1W1,2F3,2I2,2W2,1I2,2I3,"
    "1I3,1W2,2W3,1W3",
};

/* Chimera p=4, m=4 (Li & Hoefler, SC'21): two 1F1B pipelines merged, the
 * down pipeline (chain 0, stage s on device s) and the up pipeline (chain 1,
 * stage 4+s on device 3-s), 2 micro-batches each, numbered 0 and 1 within
 * their chain; full backwards (PyTorch "B"). Derived by hand from the
 * construction's per-device rule (the authors' runtime loop,
 * Shigangli/Chimera main_with_runtime.py --chimera): a device's lead chain
 * is the one whose forwards reach it first (down on devices 0, 1, up on 2,
 * 3); with a its distance to the middle (1..p/2) and b = p/2 - a it runs
 *   a F lead; b × (F other, F lead); a × (F other, B other);
 *   b × (B lead, B other); a B lead.
 *   device 0: lead stage 0, other 7, a=2 b=0
 *   device 1: lead stage 1, other 6, a=1 b=1
 *   device 2: lead stage 5, other 2, a=1 b=1
 *   device 3: lead stage 4, other 3, a=2 b=0
 * These are the rows of the paper's figure 3 (tests/test_generators_v.c
 * transcribes it slot by slot), and `pipesched generate --schedule chimera
 * --devices 4 --microbatches 4` prints them. */
static const char *const rows_chimera[] = {
    "0F0,0F1,7F0,7B0,7F1,7B1,0B0,0B1",
    "1F0,6F0,1F1,6F1,6B0,1B0,6B1,1B1",
    "5F0,2F0,5F1,2F1,2B0,5B0,2B1,5B1",
    "4F0,4F1,3F0,3B0,3F1,3B1,4B0,4B1",
};

/* DualPipe p=4, m=8 (DeepSeek, dualpipe.py), the smallest p with two
 * devices per half and m = 2p the least it accepts there: two chains, the
 * down one (stage s on device s) and the up one (stage 4+s on device 3-s),
 * 4 micro-batches each. DeepSeek's DualPipeV is DualPipe "cut in half": the
 * first half of the devices, d < p/2, runs DualPipeV on p/2 devices with
 * m/2 micro-batches, its chunk-0 stage d becoming d and its chunk-1 stage
 * 2(p/2)-1-d becoming 2p-1-d; device p-1-d runs device d's order with the
 * chains swapped, stage s becoming (s+p) mod 2p. So rows 0 and 1 are the
 * README's DualPipeV p=2, m=4 worked example (tests/data/reference/
 * README.md) with stage 3 → 7 and 2 → 6, rows 3 and 2 those with stages
 * 0 → 4, 3 → 3 and 1 → 5, 2 → 2. tests/test_generators_v.c checks both
 * structural rules for p = 2..8 and DeepSeek's p=2, m=4 by hand. */
static const char *const rows_dualpipe[] = {
    "0F0,0F1,0F2,7F0,7I0,7W0,7F1,(0F3;7B1)OVERLAP_F_B,(7F2;0B0)OVERLAP_F_B,7B2,"
    "(7F3;0B1)OVERLAP_F_B,7B3,0I2,0W2,0I3,0W3",
    "1F0,6F0,1F1,6F1,1F2,6B0,(6F2;1B0)OVERLAP_F_B,(1F3;6B1)OVERLAP_F_B,"
    "(6F3;1B1)OVERLAP_F_B,6B2,1B2,6I3,1I3,6W3,1W3",
    "5F0,2F0,5F1,2F1,5F2,2B0,(2F2;5B0)OVERLAP_F_B,(5F3;2B1)OVERLAP_F_B,"
    "(2F3;5B1)OVERLAP_F_B,2B2,5B2,2I3,5I3,2W3,5W3",
    "4F0,4F1,4F2,3F0,3I0,3W0,3F1,(4F3;3B1)OVERLAP_F_B,(3F2;4B0)OVERLAP_F_B,3B2,"
    "(3F3;4B1)OVERLAP_F_B,3B3,4I2,4W2,4I3,4W3",
};

/* ---- action text ---- */

/* One action "<stage><F|I|W|B><mb>" at *s; advances *s past it. */
static int parse_action(const char **s, golden_op *op)
{
    char *end;
    op->stage = (uint32_t)strtoul(*s, &end, 10);
    const char *kinds = "FIWB"; /* PyTorch letters in psched_op_kind order */
    const char *k = *end ? strchr(kinds, *end) : NULL;
    if (end == *s || !k)
        return 0;
    op->kind = (uint8_t)(k - kinds);
    const char *mb = end + 1;
    op->microbatch = (uint32_t)strtoul(mb, &end, 10);
    op->flags = 0;
    *s = end;
    return end != mb;
}

/* A row of actions and "(a;b)OVERLAP_F_B" pairs, whose first op carries
 * PSCHED_OP_OVERLAP_NEXT. */
static int parse_row(const char *s, golden_op *ops, size_t *count)
{
    static const char pair_end[] = ")OVERLAP_F_B";
    size_t n = 0;
    while (*s && n + 2 <= MAX_OPS) {
        if (*s == '(') {
            s++;
            if (!parse_action(&s, &ops[n]) || *s++ != ';' || !parse_action(&s, &ops[n + 1]) ||
                strncmp(s, pair_end, sizeof pair_end - 1) != 0)
                return 0;
            ops[n].flags = PSCHED_OP_OVERLAP_NEXT;
            s += sizeof pair_end - 1;
            n += 2;
        } else if (parse_action(&s, &ops[n])) {
            n++;
        } else {
            return 0;
        }
        if (*s == ',')
            s++;
    }
    *count = n;
    return *s == '\0';
}

/* ---- the canonical encoding (lib/core/hash.c, version 1) ---- */

typedef struct encoding {
    unsigned char bytes[MAX_ENCODING];
    size_t len;
} encoding;

static void put_u8(encoding *e, uint8_t x)
{
    if (e->len < MAX_ENCODING)
        e->bytes[e->len] = x;
    e->len++;
}

static void put_u32_le(encoding *e, uint32_t x)
{
    put_u8(e, (uint8_t)(x & 0xff));
    put_u8(e, (uint8_t)((x >> 8) & 0xff));
    put_u8(e, (uint8_t)((x >> 16) & 0xff));
    put_u8(e, (uint8_t)(x >> 24));
}

static uint32_t placement_device(const golden *g, uint32_t stage)
{
    if (g->placement == PSCHED_PLACEMENT_VSHAPE)
        return stage < g->p ? stage : 2 * g->p - 1 - stage;
    return stage % g->p;
}

/* "PSCH", version 1, p, m (over all chains), v, chains, the device of every
 * stage of every chain, then per device its op count and each op's stage,
 * micro-batch (within its chain), kind, flags. */
static uint64_t expected_hash(const golden *g, const op_lists *l)
{
    encoding e;
    e.len = 0;
    put_u8(&e, 'P');
    put_u8(&e, 'S');
    put_u8(&e, 'C');
    put_u8(&e, 'H');
    put_u32_le(&e, 1);
    put_u32_le(&e, g->p);
    put_u32_le(&e, g->m);
    put_u32_le(&e, g->v);
    put_u32_le(&e, g->chains);
    for (uint32_t s = 0; s < g->p * g->v; s++)
        put_u32_le(&e, placement_device(g, s));
    for (uint32_t d = 0; d < g->p; d++) {
        put_u32_le(&e, (uint32_t)l->count[d]);
        for (size_t i = 0; i < l->count[d]; i++) {
            put_u32_le(&e, l->ops[d][i].stage);
            put_u32_le(&e, l->ops[d][i].microbatch);
            put_u8(&e, l->ops[d][i].kind);
            put_u8(&e, l->ops[d][i].flags);
        }
    }
    CHECK(e.len <= MAX_ENCODING);
    return e.len <= MAX_ENCODING ? (uint64_t)XXH3_64bits(e.bytes, e.len) : 0;
}

/* ---- the checks ---- */

static psched_schedule *generate(const golden *g)
{
    psched_plan *plan = tu_plan(g->p, g->m, g->v);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, g->generator, &s));
    psched_plan_destroy(plan);
    return s;
}

/* The generated ops are the listed ones; the first difference is named. */
static void check_ops(const golden *g, const op_lists *l, const psched_schedule *s)
{
    for (uint32_t d = 0; d < g->p; d++) {
        CHECK_EQ_INT(psched_schedule_op_count(s, d), l->count[d]);
        psched_op got[MAX_OPS];
        size_t n = l->count[d];
        if (psched_schedule_op_count(s, d) != n ||
            psched_schedule_ops(s, d, 0, n, got, sizeof got[0]) != PSCHED_OK)
            continue;
        for (size_t i = 0; i < n; i++) {
            const golden_op *w = &l->ops[d][i];
            if (got[i].stage != w->stage || got[i].microbatch != w->microbatch ||
                got[i].kind != w->kind || got[i].flags != w->flags) {
                fprintf(stderr, "%s device %u op %zu: got stage %u mb %u kind %u flags %u\n",
                        g->generator, (unsigned)d, i, (unsigned)got[i].stage,
                        (unsigned)got[i].microbatch, (unsigned)got[i].kind,
                        (unsigned)got[i].flags);
                CHECK(!"op differs from the golden list");
                break;
            }
        }
    }
}

static void check_golden(const golden *g)
{
    op_lists l;
    for (uint32_t d = 0; d < g->p; d++)
        CHECK(parse_row(g->rows[d], l.ops[d], &l.count[d]));
    uint64_t want = expected_hash(g, &l);
    if (want != g->pinned)
        fprintf(stderr, "%s: encoding hashes to 0x%016llx, pinned 0x%016llx\n", g->generator,
                (unsigned long long)want, (unsigned long long)g->pinned);
    CHECK(want == g->pinned);

    psched_schedule *s = generate(g);
    if (!s)
        return;
    CHECK_EQ_INT(psched_plan_chains(psched_schedule_plan(s)), g->chains);
    CHECK_EQ_INT(psched_plan_chunks(psched_schedule_plan(s)), g->v);
    for (uint32_t st = 0; st < g->p * g->v; st++)
        CHECK_EQ_INT(psched_plan_stage_device(psched_schedule_plan(s), st),
                     placement_device(g, st));
    check_ops(g, &l, s);
    uint64_t got = 0;
    CHECK_OK(psched_schedule_hash(s, &got));
    if (got != want)
        fprintf(stderr, "%s: psched_schedule_hash 0x%016llx, independent 0x%016llx\n",
                g->generator, (unsigned long long)got, (unsigned long long)want);
    CHECK(got == want);
    psched_schedule_destroy(s);
}

/* The pinned constants were computed three ways that agreed: this file's
 * encoder, a separate encoder of the same format in Python fed to
 * XXH3_64bits, and psched_schedule_hash (xxHash 0.8.1, x86-64, gcc). */
#define HASH_1F1B_P4_M8 UINT64_C(0xe806250ca75c090a)
#define HASH_INTERLEAVED_P4_V2_M8 UINT64_C(0x2cb7e3a1af4ee5d5)
#define HASH_ZB_H1_P4_M8 UINT64_C(0x0ee3f581760a8f48)
#define HASH_DUALPIPEV_P4_M10 UINT64_C(0x9fbbf9faa18a168c)
#define HASH_V_ZB_P2_M4 UINT64_C(0x8bb6bb08110b3704)
#define HASH_CHIMERA_P4_M4 UINT64_C(0x261f651b3f1244b5)
#define HASH_DUALPIPE_P4_M8 UINT64_C(0x2b9e088753f829f0)

static void test_1f1b_p4_m8_hash_is_golden(void)
{
    static const golden g = {"1f1b", 4, 8, 1, 1, PSCHED_PLACEMENT_LOOP, rows_1f1b, HASH_1F1B_P4_M8};
    check_golden(&g);
}

static void test_interleaved_p4_v2_m8_hash_is_golden(void)
{
    static const golden g = {"interleaved", 4, 8, 2, 1, PSCHED_PLACEMENT_LOOP, rows_interleaved, HASH_INTERLEAVED_P4_V2_M8};
    check_golden(&g);
}

static void test_zb_h1_p4_m8_hash_is_golden(void)
{
    static const golden g = {"zb-h1", 4, 8, 1, 1, PSCHED_PLACEMENT_LOOP, rows_zb_h1, HASH_ZB_H1_P4_M8};
    check_golden(&g);
}

static void test_dualpipev_p4_m10_hash_is_golden(void)
{
    static const golden g = {"dualpipev", 4, 10, 2, 1, PSCHED_PLACEMENT_VSHAPE, rows_dualpipev, HASH_DUALPIPEV_P4_M10};
    check_golden(&g);
}

static void test_v_zb_p2_m4_hash_is_golden(void)
{
    static const golden g = {"v-zb", 2, 4, 2, 1, PSCHED_PLACEMENT_VSHAPE, rows_v_zb, HASH_V_ZB_P2_M4};
    check_golden(&g);
}

static void test_chimera_p4_m4_hash_is_golden(void)
{
    static const golden g = {"chimera", 4, 4, 2, 2, PSCHED_PLACEMENT_VSHAPE, rows_chimera, HASH_CHIMERA_P4_M4};
    check_golden(&g);
}

static void test_dualpipe_p4_m8_hash_is_golden(void)
{
    static const golden g = {"dualpipe", 4, 8, 2, 2, PSCHED_PLACEMENT_VSHAPE, rows_dualpipe, HASH_DUALPIPE_P4_M8};
    check_golden(&g);
}

static uint64_t hash_of(const psched_schedule *s)
{
    uint64_t h = 0;
    CHECK_OK(psched_schedule_hash(s, &h));
    return h;
}

/* An imported CSV is the same schedule: ranks that load a schedule file and
 * ranks that generate it agree. Pairs survive as (a;b)OVERLAP_F_B. */
static void check_csv_round_trip(const char *name, uint32_t p, uint32_t m, uint32_t v,
                                 uint64_t pinned)
{
    const golden g = {name, p, m, v, 0, PSCHED_PLACEMENT_AUTO, NULL, pinned};
    psched_schedule *s = generate(&g), *back = NULL;
    char *csv = NULL;
    size_t len = 0;
    if (!s)
        return;
    CHECK_OK(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, &csv, &len));
    CHECK_OK(psched_import_csv(csv, len, NULL, &back));
    if (back)
        CHECK(hash_of(back) == pinned);
    psched_schedule_destroy(back);
    psched_free(csv);
    psched_schedule_destroy(s);
}

static void test_csv_round_trip_keeps_the_golden_hash(void)
{
    check_csv_round_trip("interleaved", 4, 8, 2, HASH_INTERLEAVED_P4_V2_M8);
    check_csv_round_trip("dualpipev", 4, 10, 2, HASH_DUALPIPEV_P4_M10);
    check_csv_round_trip("v-zb", 2, 4, 2, HASH_V_ZB_P2_M4);
    /* two chains: the CSV's "# pipesched: chains=2" line carries them */
    check_csv_round_trip("chimera", 4, 4, 2, HASH_CHIMERA_P4_M4);
    check_csv_round_trip("dualpipe", 4, 8, 2, HASH_DUALPIPE_P4_M8);
}

/* Costs, memory deltas, latency and limits change timings, not what a rank
 * runs: ranks with different profiles of the same model still agree. */
static void test_hash_ignores_costs_memory_and_latency(void)
{
    psched_plan *plan = tu_plan(4, 8, 0);
    psched_schedule *s = NULL;
    CHECK_OK(psched_plan_set_cost(plan, 3, 2, 1));
    CHECK_OK(psched_plan_set_stage_cost(plan, 2, 5, 4, 3));
    CHECK_OK(psched_plan_set_mem(plan, 2, 0, -2));
    CHECK_OK(psched_plan_set_comm(plan, 0.5));
    CHECK_OK(psched_plan_set_memory_limit(plan, 100));
    CHECK_OK(psched_generate(plan, "1f1b", &s));
    if (s)
        CHECK(hash_of(s) == HASH_1F1B_P4_M8);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* One rank running two ops in another order is caught: 1F1B p=2 m=2 with
 * device 0's last two backwards swapped. */
static void test_hash_differs_when_two_ops_swap(void)
{
    static const char a[] = "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n";
    static const char b[] = "0F0,0F1,0B1,0B0\n1F0,1B0,1F1,1B1\n";
    psched_schedule *sa = NULL, *sb = NULL;
    CHECK_OK(psched_import_csv(a, sizeof a - 1, NULL, &sa));
    CHECK_OK(psched_import_csv(b, sizeof b - 1, NULL, &sb));
    if (sa && sb)
        CHECK(hash_of(sa) != hash_of(sb));
    psched_schedule_destroy(sa);
    psched_schedule_destroy(sb);
}

int main(void)
{
    RUN(test_1f1b_p4_m8_hash_is_golden);
    RUN(test_interleaved_p4_v2_m8_hash_is_golden);
    RUN(test_zb_h1_p4_m8_hash_is_golden);
    RUN(test_dualpipev_p4_m10_hash_is_golden);
    RUN(test_v_zb_p2_m4_hash_is_golden);
    RUN(test_chimera_p4_m4_hash_is_golden);
    RUN(test_dualpipe_p4_m8_hash_is_golden);
    RUN(test_csv_round_trip_keeps_the_golden_hash);
    RUN(test_hash_ignores_costs_memory_and_latency);
    RUN(test_hash_differs_when_two_ops_swap);
    TEST_MAIN_END();
}
