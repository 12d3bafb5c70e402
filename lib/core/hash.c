/*
 * psched_schedule_hash: XXH3-64 (seed 0) of a canonical byte encoding of a
 * schedule, so that ranks built on different platforms and compilers can
 * compare one integer before training starts.
 *
 * Canonical encoding, version 1. All integers are unsigned little-endian;
 * nothing depends on the host's struct layout or byte order.
 *
 *   offset  size    field
 *   0       4       magic "PSCH" (0x50 0x53 0x43 0x48)
 *   4       4       encoding version = 1
 *   8       4       p (devices)
 *   12      4       m (micro-batches, total over chains)
 *   16      4       v (chunks per device)
 *   20      4       chains
 *   24      4·S     device of stage s, for s = 0..S-1 (S = p·v)
 *   then for every device d = 0..p-1:
 *           4       op count n_d of device d
 *           10·n_d  each op in list order: stage (4), micro-batch (4),
 *                   kind (1, a psched_op_kind), flags (1)
 *
 * Left out on purpose: the chunk of an op (derived from the stage map, which
 * is hashed), the placement kind (a custom map equal to loop order is the same
 * schedule), the generator name, costs, memory deltas, latency and limits
 * (they change timings, not what each rank executes). A CSV round-trip
 * therefore keeps the hash, except for BATCH_NEXT flags, which the CSV format
 * cannot carry.
 */
#include "internal.h"

/* The state lives on the stack: the library's allocator is the only one
 * allowed, and XXH3_createState would call malloc. */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#define HASH_VERSION 1u
/* Bytes gathered before each XXH3 update; a multiple of XXH3's 64-byte
 * stripe keeps the updates cheap. */
#define HASH_BLOCK 4096u

typedef struct hash_stream {
    XXH3_state_t state;
    unsigned char buf[HASH_BLOCK];
    size_t len;
} hash_stream;

static void stream_flush(hash_stream *h)
{
    if (h->len) {
        (void)XXH3_64bits_update(&h->state, h->buf, h->len);
        h->len = 0;
    }
}

static void put_u8(hash_stream *h, uint8_t x)
{
    if (h->len == HASH_BLOCK)
        stream_flush(h);
    h->buf[h->len++] = x;
}

static void put_u32(hash_stream *h, uint32_t x)
{
    for (int i = 0; i < 4; i++)
        put_u8(h, (uint8_t)(x >> (8 * i)));
}

static void store_u32(unsigned char *p, uint32_t x)
{
    p[0] = (uint8_t)x;
    p[1] = (uint8_t)(x >> 8);
    p[2] = (uint8_t)(x >> 16);
    p[3] = (uint8_t)(x >> 24);
}

/* One op record (10 bytes), with one room check instead of one per byte.
 * Where the blocks end does not matter: XXH3's streaming digest depends
 * only on the bytes. */
static void put_op(hash_stream *h, const psched_op *op)
{
    if (h->len + 10 > HASH_BLOCK)
        stream_flush(h);
    unsigned char *p = h->buf + h->len;
    store_u32(p, op->stage);
    store_u32(p + 4, op->microbatch);
    p[8] = op->kind;
    p[9] = op->flags;
    h->len += 10;
}

static void put_plan(hash_stream *h, const psched_plan *plan)
{
    uint32_t stages = plan->devices * plan->chunks;

    put_u8(h, 'P');
    put_u8(h, 'S');
    put_u8(h, 'C');
    put_u8(h, 'H');
    put_u32(h, HASH_VERSION);
    put_u32(h, plan->devices);
    put_u32(h, plan->microbatches);
    put_u32(h, plan->chunks);
    put_u32(h, plan->chains);
    for (uint32_t s = 0; s < stages; s++)
        put_u32(h, psched_plan_stage_device(plan, s));
}

psched_status psched_schedule_hash(const psched_schedule *schedule, uint64_t *out)
{
    if (!schedule || !out)
        return psched_fail(PSCHED_EINVAL, "psched_schedule_hash: schedule and out must not be NULL");

    /* The stripe-aligned XXH3 state wants its 64-byte alignment, which the
     * struct declaration carries; a local object honours it. */
    hash_stream h;
    XXH3_INITSTATE(&h.state);
    if (XXH3_64bits_reset(&h.state) != XXH_OK)
        return psched_fail(PSCHED_EINVAL, "psched_schedule_hash: XXH3 state reset failed");
    h.len = 0;

    put_plan(&h, schedule->plan);
    for (uint32_t d = 0; d < schedule->devices; d++) {
        size_t first = schedule->offset[d], last = schedule->offset[d + 1];
        put_u32(&h, (uint32_t)(last - first));
        for (size_t i = first; i < last; i++)
            put_op(&h, &schedule->ops[i]);
    }
    stream_flush(&h);
    *out = (uint64_t)XXH3_64bits_digest(&h.state);
    return PSCHED_OK;
}
