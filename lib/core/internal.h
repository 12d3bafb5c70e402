/* Internal definitions shared by lib/ files and reachable by tests that link
 * the static library. Not installed. */
#ifndef PSCHED_INTERNAL_H
#define PSCHED_INTERNAL_H

#include "pipesched.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define PSCHED_INTERNAL __attribute__((visibility("hidden")))
#else
#define PSCHED_INTERNAL
#endif

/* ---- allocation: every allocation goes through these, so tests can make
 * the N-th one fail (psched__alloc_fail_after). ---- */
PSCHED_INTERNAL void *psched__malloc(size_t size);
PSCHED_INTERNAL void *psched__calloc(size_t n, size_t size);
PSCHED_INTERNAL void *psched__realloc(void *p, size_t size);
/* realloc of n*size with overflow check */
PSCHED_INTERNAL void *psched__reallocarray(void *p, size_t n, size_t size);
PSCHED_INTERNAL void psched__dealloc(void *p);
/* An array of n elements (uninitialised) for one of the large arrays
 * (PSCHED_HUGE_ADVICE_MIN and up: op times, the engine's cells): aligned
 * to and advised for transparent huge pages; freed by psched__dealloc. */
PSCHED_INTERNAL void *psched__malloc_array_huge(size_t n, size_t size);
/* Room for one more element in a growable array: when len == *cap the
 * array doubles (starting at `first` elements). Returns the array, moved or
 * not, or NULL when the allocation fails (the old array and *cap are then
 * unchanged). Usage: p = psched__grow(a, &cap, n, sizeof *a, 16); if (!p)
 * fail; a = p; */
PSCHED_INTERNAL void *psched__grow(void *array, size_t *cap, size_t len, size_t elem,
                                   size_t first);
/* Test hook: after `count` more successful allocations, every allocation on
 * this thread fails; a negative count disables the failure. */
PSCHED_INTERNAL void psched__alloc_fail_after(long count);

/* ---- errors ---- */
PSCHED_INTERNAL psched_status psched__vfail(psched_status status, const char *fmt, va_list ap);
#define PSCHED_ENOMEM_FAIL() psched_fail(PSCHED_ENOMEM, "out of memory")

/* ---- growable text buffer for exports ---- */
typedef struct psched_buf {
    char *data;
    size_t len, cap;
    bool failed; /* an allocation failed; later appends are no-ops */
} psched_buf;
PSCHED_INTERNAL void psched__buf_append(psched_buf *b, const char *s, size_t n);
PSCHED_INTERNAL void psched__buf_puts(psched_buf *b, const char *s);
PSCHED_INTERNAL void psched__buf_printf(psched_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Hand the buffer to the caller (NUL-terminated) or fail with ENOMEM. */
PSCHED_INTERNAL psched_status psched__buf_finish(psched_buf *b, char **text, size_t *length);

/* ---- plan ---- */
typedef struct psched_cost3 {
    double f, b, w;
} psched_cost3;

/* The cost model's opt-in extensions (issue 18, DESIGN §3 "Extensions"):
 * NULL in a plan until one of them is set, so the default model takes no
 * branch it did not take before. */
typedef struct psched_costmodel {
    /* time an overlapped F&B pair saves, per stage (NULL: overlap_all) */
    double overlap_all;
    double *overlap;
    uint32_t overlap_len;
    /* micro-batch weights w_k over all chains (NULL: every w_k = 1) */
    double *weight;
    uint32_t weight_len;
    /* bytes a stage sends: activations forward [2s], gradients backward
     * [2s+1] (NULL: bytes_all) */
    double bytes_all[2];
    double *bytes;
    uint32_t bytes_len;
    /* topology: devices per node (0: one node), [0] intra-node, [1] inter-node */
    uint32_t node_devices;
    double bandwidth[2], latency[2];
    /* PCIe bandwidth of the per-device copy stream (OFFLOAD/RELOAD) */
    double pcie_bandwidth;
    /* vocabulary parallelism (collective.c): S and T pass times and memory
     * changes, bytes of each collective index */
    double vocab_time[2], vocab_mem[2];
    double coll_bytes[PSCHED_MAX_COLLECTIVES];
} psched_costmodel;

typedef struct psched_option {
    char key[32];
    int64_t value;
} psched_option;

struct psched_plan {
    uint32_t devices, microbatches, chunks, chains;
    psched_placement placement;
    /* custom placement only: stage -> device, length stages_cap */
    uint32_t *custom_device;
    /* per-stage overrides, NULL when uniform; length cost_len / mem_len */
    psched_cost3 cost_all, mem_all;
    psched_cost3 *cost, *mem;
    uint32_t cost_len, mem_len;
    double comm, memory_limit;
    psched_option *options;
    uint32_t option_count;
    psched_costmodel *cm; /* NULL: none of the extensions is set */
};

/* Reads of a stage's costs or memory deltas on this thread (the two
 * getters below, which the public ones and every generator use):
 * psched_generate() compares it before and after the generator to know
 * whether the order it built can depend on them (plan.c). */
PSCHED_INTERNAL extern _Thread_local unsigned long psched__stage_reads;

/* Costs of one stage without bounds checks (caller guarantees stage < S). */
static inline psched_cost3 psched__plan_cost(const psched_plan *p, uint32_t s)
{
    psched__stage_reads++;
    return (p->cost && s < p->cost_len) ? p->cost[s] : p->cost_all;
}
static inline psched_cost3 psched__plan_mem(const psched_plan *p, uint32_t s)
{
    psched__stage_reads++;
    return (p->mem && s < p->mem_len) ? p->mem[s] : p->mem_all;
}
/* Overlap saving of a stage and the weight of micro-batch `k` of chain
 * `chain` under the extensions (0 and 1 without them). */
static inline double psched__plan_overlap(const psched_plan *p, uint32_t s)
{
    const psched_costmodel *c = p->cm;
    if (!c)
        return 0;
    return (c->overlap && s < c->overlap_len) ? c->overlap[s] : c->overlap_all;
}
static inline double psched__plan_weight(const psched_plan *p, uint32_t chain, uint32_t k)
{
    const psched_costmodel *c = p->cm;
    uint32_t per = p->microbatches / (p->chains ? p->chains : 1);
    size_t i = (size_t)chain * per + k;
    return (c && c->weight && i < c->weight_len) ? c->weight[i] : 1.0;
}
/* Bytes stage s sends forward (dir 0) or backward (dir 1). */
static inline double psched__plan_bytes(const psched_plan *p, uint32_t s, int dir)
{
    const psched_costmodel *c = p->cm;
    if (!c)
        return 0;
    return (c->bytes && s < c->bytes_len) ? c->bytes[2 * (size_t)s + (size_t)dir]
                                          : c->bytes_all[dir];
}
/* Copies and frees of the extensions (plan.c uses them in clone/destroy). */
PSCHED_INTERNAL psched_status psched__costmodel_clone(const psched_costmodel *c,
                                                      psched_costmodel **out);
PSCHED_INTERNAL void psched__costmodel_free(psched_costmodel *c);
/* The extensions are consistent with the plan's costs and shape: every
 * overlap saving <= min(t_F, t_B) of its stage, weights for exactly m
 * micro-batches. Checked by psched_simulate (costs can change after). */
PSCHED_INTERNAL psched_status psched__costmodel_check(const psched_plan *plan);
/* True when a transfer can cost more than t_comm (bytes or link latency set). */
PSCHED_INTERNAL bool psched__costmodel_links(const psched_plan *plan);

/* Micro-batches per chain. */
static inline uint32_t psched__plan_chain_mbs(const psched_plan *p)
{
    return p->microbatches / (p->chains ? p->chains : 1);
}
/* Chain of a stage and whether it is the first/last stage of its chain. */
static inline uint32_t psched__stage_chain(const psched_plan *p, uint32_t s)
{
    uint32_t per = (p->devices * p->chunks) / p->chains;
    return s / per;
}
static inline bool psched__stage_first(const psched_plan *p, uint32_t s)
{
    uint32_t per = (p->devices * p->chunks) / p->chains;
    return s % per == 0;
}
static inline bool psched__stage_last(const psched_plan *p, uint32_t s)
{
    uint32_t per = (p->devices * p->chunks) / p->chains;
    return s % per == per - 1;
}

/* Checks that a resolved plan (placement not auto, chunks > 0) is
 * consistent: every device holds exactly v stages, chains divide S and m,
 * the op count fits. */
PSCHED_INTERNAL psched_status psched__plan_check_resolved(const psched_plan *plan);
/* PSCHED_EINVAL naming the largest cost when devices x (the whole work of
 * `stages` x `microbatches` run serially + every hop's comm latency)
 * overflows to infinity: below that, every time the simulator or a
 * generator sums stays finite. psched__plan_check_resolved() runs it. */
PSCHED_INTERNAL psched_status psched__plan_check_costs(const psched_plan *costs, uint32_t devices,
                                                       uint32_t stages, uint32_t microbatches);

/* Names as users write them: "loop", "vshape", "custom", "auto"; op kinds
 * "F", "B", "W", "BW", "SEND_F", ... (pipesched names, not PyTorch's). */
PSCHED_INTERNAL const char *psched__placement_name(psched_placement placement);
PSCHED_INTERNAL const char *psched__kind_name(uint8_t kind);

/* JSON values: a number (non-finite as null, no "-0") and an escaped string. */
PSCHED_INTERNAL void psched__buf_json_num(psched_buf *b, double x);
PSCHED_INTERNAL void psched__buf_json_str(psched_buf *b, const char *s);

/* ---- schedule ---- */
struct psched_schedule {
    psched_plan *plan;  /* resolved copy, owned */
    char name[32];
    uint32_t devices;
    size_t *offset;     /* devices + 1 entries: ops of device d are [offset[d], offset[d+1]) */
    psched_op *ops;     /* one contiguous array */
    uint8_t lower_mode; /* psched_lower_mode its comm ops run with */
    /* What an exact generator proved about the order (issue 17):
     * psched_builder_set_solve_status(); unset for heuristics. */
    bool solved;
    psched_solve_status solve_status;
    double solve_gap;
    /* The generator (its check included) read no stage cost or memory
     * delta: the same plan shape gives this order whatever they are. */
    bool order_ignores_costs;
};

/* Creates an empty builder for a resolved plan (the builder borrows it). */
PSCHED_INTERNAL psched_status psched__builder_create(const psched_plan *plan, psched_builder **out);
/* The same, reserving room for `ops` ops (0: none) instead of the compute
 * bound 3·S·m: for callers that know their count, such as the CSV importer,
 * whose few bytes may name a huge micro-batch. */
PSCHED_INTERNAL psched_status psched__builder_create_for(const psched_plan *plan, size_t ops,
                                                         psched_builder **out);
PSCHED_INTERNAL void psched__builder_destroy(psched_builder *b);
/* Moves the builder's ops into a new schedule that takes ownership of
 * `plan`; on failure `plan` is still the caller's. */
PSCHED_INTERNAL psched_status psched__builder_finish(psched_builder *b, psched_plan *plan,
                                                     const char *name, psched_schedule **out);

/* ---- compact schedules (psched_generate_write, lib/core/compact.c) ----
 * A generated compute schedule as one 32-bit code per op (builder.c's
 * compact mode): a third of the memory of its psched_ops. A code: bits
 * 0-1 the kind (F, B, W, BW), bit 2 PSCHED_OP_OVERLAP_NEXT, then
 * chunk_bits of the chunk, then the micro-batch; the stage is
 * stage_of[device*chunks + chunk]. */
#define PSCHED_CODE_OVERLAP 0x4u
#define PSCHED_CODE_SHIFT 3u
typedef struct psched_compact {
    psched_plan *plan; /* resolved, owned */
    char name[32];
    uint32_t devices, chunks;
    unsigned chunk_bits;
    size_t *offset;     /* devices + 1 entries, as psched_schedule's */
    uint32_t *code;     /* one per op */
    uint32_t *stage_of; /* [device*chunks + chunk] -> stage */
} psched_compact;

/* A builder that holds compact codes while the ops fit them (falls back
 * to psched_ops by itself otherwise). */
PSCHED_INTERNAL psched_status psched__builder_create_compact(const psched_plan *plan,
                                                             psched_builder **out);
/* Finishes a builder made by psched__builder_create_compact: *cout when
 * it is still compact, else *sout (psched__builder_finish). */
PSCHED_INTERNAL psched_status psched__builder_finish_compact(psched_builder *b, psched_plan *plan,
                                                             const char *name,
                                                             psched_schedule **sout,
                                                             psched_compact **cout);
PSCHED_INTERNAL void psched__compact_destroy(psched_compact *c);
/* Ops [first, first + n) of a device as psched_ops. */
PSCHED_INTERNAL void psched__compact_decode(const psched_compact *c, uint32_t device,
                                            size_t first, size_t n, psched_op *out);
/* The psched_schedule of the same ops; consumes c (also on failure). */
PSCHED_INTERNAL psched_status psched__compact_expand(psched_compact *c, psched_schedule **out);
/* psched__execute_fast's validation on the codes: true when the schedule
 * is valid; false when it is not, or memory ran out, or it cannot tell:
 * then psched_validate of the expanded schedule gives the outcome. Sets no
 * error. */
PSCHED_INTERNAL bool psched__compact_valid(const psched_compact *c);
/* psched_generate into a compact builder when `compact` (exactly one of
 * *sout, *cout is set on success), else psched_generate. */
PSCHED_INTERNAL psched_status psched__generate_ex(const psched_plan *plan, const char *name,
                                                  bool compact, psched_schedule **sout,
                                                  psched_compact **cout);
/* Whether the generator of @p s read no stage cost or memory delta (its
 * order is the same for every cost of the same plan shape). */
PSCHED_INTERNAL bool psched__schedule_order_ignores_costs(const psched_schedule *s);
/* Builder check of a VOCAB_S / VOCAB_T / COLLECTIVE op (builder.c). */
PSCHED_INTERNAL psched_status psched__check_collective_op(uint32_t device, psched_op_kind kind,
                                                          uint32_t stage, uint32_t mb,
                                                          uint32_t mbs, uint32_t flags);

/* Time of collective index j among p devices for a micro-batch of weight
 * w under the plan's costs: t_comm + link latency + bytes * w / bandwidth. */
/* Every device's vocabulary passes in a schedule of `plan` that holds
 * them (bound.c): *all = Σ_k w_k (S + T), and *before = the part that ends
 * before the device's last backward: Σ_k w_k S, with Vocab-1 (the plan's
 * option `vocab` 1) Σ_k w_k (S + T). S of a micro-batch precedes a
 * collective the last stage's backward of it waits for; with Vocab-1 so
 * does T (it computes the head's input gradient), while Vocab-2's T (the
 * head's weight gradient) may run after the device's last op. */
PSCHED_INTERNAL void psched__vocab_work(const psched_plan *plan, double *all, double *before);
PSCHED_INTERNAL double psched__collective_time(const psched_plan *costs, uint32_t p, uint32_t j,
                                               double w);

/* Writes the PyTorch action text of an op ("3I2", "0SEND_F1") into buf
 * (at least 48 bytes); returns its length. */
PSCHED_INTERNAL int psched__op_text(const psched_op *op, char *buf, size_t size);

/* ---- simulation core ---- */
/* Runs the schedule in order on every device with the given costs (NULL:
 * the schedule's plan). When start/end are non-NULL they receive, per op in
 * schedule->ops order, the simulated times. Returns EINVALID/EDEADLOCK with
 * a message naming device, position and op. */
PSCHED_INTERNAL psched_status psched__execute(const psched_schedule *s, const psched_plan *costs,
                                              double *start, double *end);

/* psched__execute that also reports, per op, when its output leaves on a
 * link and arrives (NAN for ops without a transfer), for the link model of
 * the cost model extensions; leave/arrive may be NULL. */
PSCHED_INTERNAL psched_status psched__execute_transfers(const psched_schedule *s,
                                                        const psched_plan *costs, double *start,
                                                        double *end, double *leave,
                                                        double *arrive);

/* Per-device figures psched_simulate derives from the times, summed by
 * the fast path as it runs (the caller zeroes busy, peak and last):
 * busy time (a unit's time once), peak of the running sum of mem_of
 * ([stage*8 + kind], in list order) and latest end. */
typedef struct psched_fast_figures {
    const double *mem_of;
    double *busy, *peak, *last;
} psched_fast_figures;

/* The common case of psched__execute (compute ops only, default cost
 * model) on a compact state: true when the schedule is valid, with its
 * times in start/end when both are given (bit-identical to
 * psched__execute's) and, when fig is non-NULL, its figures; false when it
 * is not, or is anything else, or memory ran out: then psched__execute
 * gives the outcome and the message. Sets no error. */
PSCHED_INTERNAL bool psched__execute_fast(const psched_schedule *s, const psched_plan *costs,
                                          double *start, double *end,
                                          psched_fast_figures *fig);

/* psched__execute_fast with the caller's room for the cell times
 * (2 x stages x micro-batches per chain + 1 doubles, NULL: allocated). */
PSCHED_INTERNAL bool psched__execute_fast_in(const psched_schedule *s, const psched_plan *costs,
                                             double *start, double *end,
                                             psched_fast_figures *fig, double *scratch);

/* psched__execute without the fast path: what the fast path must agree
 * with (tests/test_fast_engine.c compares the two). */
PSCHED_INTERNAL psched_status psched__execute_general(const psched_schedule *s,
                                                      const psched_plan *costs, double *start,
                                                      double *end);

/* Same contract as psched__execute for a lowered schedule (one with comm
 * ops): rendezvous point-to-point semantics, batched groups posted
 * together; compute ops keep their DESIGN §2 dependencies. Lives in
 * lib/rendezvous.c. */
PSCHED_INTERNAL psched_status psched__execute_rendezvous(const psched_schedule *s,
                                                         const psched_plan *costs,
                                                         double *start, double *end);
/* True when any op of the schedule is a SEND/RECV. */
PSCHED_INTERNAL bool psched__has_comm_ops(const psched_schedule *s);

struct psched_report {
    uint32_t devices;
    double makespan, span, bubble_ratio, peak_memory_M;
    double *busy, *idle, *peak; /* per device */
    size_t *offset;             /* devices + 1 */
    double *start, *end;        /* per op */
    /* per op: when its output leaves on a link and arrives at the consumer's
     * device (NAN: no transfer); NULL unless the costs model links */
    double *leave, *arrive;
};

/* ---- registry ---- */
PSCHED_INTERNAL void psched__registry_init(void);

#endif
