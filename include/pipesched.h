/*
 * pipesched — pipeline-parallel training schedules.
 *
 * This header is the manual. It reads top to bottom: conventions and errors,
 * the plan, the generators and the builder they write through, the schedule,
 * validation and simulation, formats.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_H
#define PIPESCHED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @cond INTERNAL */
#if defined(_WIN32)
#define PSCHED_API
#elif defined(__GNUC__)
#define PSCHED_API __attribute__((visibility("default")))
#else
#define PSCHED_API
#endif
/** @endcond */

/**
 * @file pipesched.h
 * @brief The whole public API of libpipesched.
 *
 * Conventions that hold for every function:
 * - Functions that can fail return a ::psched_status; 0 (::PSCHED_OK) is
 *   success. On failure psched_last_error() holds a message naming the value
 *   and the rule that was broken, and every output argument is left untouched
 *   (or set to NULL for handle outputs).
 * - Handles are opaque. Every `*_create` / producing function has a matching
 *   `*_destroy`; destroying NULL is a no-op.
 * - The library never aborts, exits or prints. Distinct handles may be used
 *   from distinct threads; a handle may be read from many threads at once.
 */

/** @defgroup errors Status codes and errors
 *  @{ */

/** Status codes returned by every fallible function. Values are stable. */
typedef enum psched_status {
    PSCHED_OK = 0,            /**< success */
    PSCHED_EINVAL = 1,        /**< an argument breaks a documented rule */
    PSCHED_ENOMEM = 2,        /**< an allocation failed; inputs are unchanged */
    PSCHED_ENOTFOUND = 3,     /**< unknown name (generator, option) */
    PSCHED_EINFEASIBLE = 4,   /**< the request cannot be met (e.g. memory limit) */
    PSCHED_EINVALID = 5,      /**< a schedule breaks a dependency rule */
    PSCHED_EDEADLOCK = 6,     /**< a schedule cannot finish under in-order execution */
    PSCHED_EPARSE = 7,        /**< malformed text input (message has line and column) */
    PSCHED_EIO = 8,           /**< a file could not be read or written */
    PSCHED_EPLUGIN = 9,       /**< a plug-in could not be loaded or registered */
    PSCHED_EUNSUPPORTED = 10, /**< valid request this build or function does not handle */
    PSCHED_ESOLVER = 11,      /**< the optimizer's solver failed */
    PSCHED_EEXIST = 12        /**< a generator with that name is already registered */
} psched_status;

/**
 * @brief Name of a status code, e.g. "PSCHED_EINVAL".
 * @return a static string; "PSCHED_UNKNOWN" for a value outside the enum.
 */
PSCHED_API const char *psched_status_str(psched_status status);

/**
 * @brief Detail of the last failure on the calling thread.
 * @return a thread-local NUL-terminated string, valid until the next failing
 *         call on this thread; "" when no call has failed yet.
 */
PSCHED_API const char *psched_last_error(void);

/** @brief Library version as "MAJOR.MINOR.PATCH" (static string). */
PSCHED_API const char *psched_version(void);

/**
 * @brief Free a buffer the library returned (exports, text renderings).
 * @param p buffer from the library, or NULL.
 */
PSCHED_API void psched_free(void *p);

/** @} */

/** @defgroup plan The plan
 *  Everything a generator and the simulator need: devices p, micro-batches m,
 *  chunks v, placement, per-stage costs and memory deltas, communication
 *  latency, the per-device memory limit, and named generator options.
 *  Stages are numbered 0..S-1 in model order, S = p·v.
 *  @{ */

/** Opaque plan handle. */
typedef struct psched_plan psched_plan;

/** How virtual stages map to devices. */
typedef enum psched_placement {
    /** Chosen by the generator (its descriptor's placement). Default. */
    PSCHED_PLACEMENT_AUTO = 0,
    /** Stage s on device s mod p, chunk s div p (Megatron). */
    PSCHED_PLACEMENT_LOOP = 1,
    /** v = 2: stage s < p on device s, stage s >= p on device 2p-1-s. */
    PSCHED_PLACEMENT_VSHAPE = 2,
    /** Any map set with psched_plan_set_stage_device(). */
    PSCHED_PLACEMENT_CUSTOM = 3
} psched_placement;

/**
 * @brief Name of a placement as users write it: "auto", "loop", "vshape",
 * "custom" (PIPESCHED_1.1). The one table of placement names: formats,
 * the CLI and the bindings all print through it.
 * @return a static string, or NULL for a value outside ::psched_placement.
 */
PSCHED_API const char *psched_placement_str(psched_placement placement);

/** Largest accepted device count. */
#define PSCHED_MAX_DEVICES 65536u
/** Largest accepted chunk count. */
#define PSCHED_MAX_CHUNKS 1024u
/** Largest accepted micro-batch count. */
#define PSCHED_MAX_MICROBATCHES (1u << 24)
/** Largest op count of one schedule (3·S·m must not exceed it). */
#define PSCHED_MAX_OPS 2147483647u

/**
 * @brief Create a plan with defaults: p = 1, m = 1, v = 0 (the generator's
 * default), chains 1, placement auto, t_F = t_B = t_W = 1,
 * memory deltas (+1, 0, -1), t_comm = 0, no memory limit, no options.
 * @param[out] out new plan, owned by the caller (psched_plan_destroy()).
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (out NULL), ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_create(psched_plan **out);

/** @brief Destroy a plan (NULL is a no-op). */
PSCHED_API void psched_plan_destroy(psched_plan *plan);

/**
 * @brief Deep copy of a plan.
 * @param plan the plan to copy.
 * @param[out] out new plan owned by the caller.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_clone(const psched_plan *plan, psched_plan **out);

/**
 * @brief Set the device count p (1..#PSCHED_MAX_DEVICES).
 * Changing p or v resets a custom stage map to loop order; per-stage costs
 * already set for stages that still exist are kept.
 * @return ::PSCHED_OK or ::PSCHED_EINVAL naming the value.
 */
PSCHED_API psched_status psched_plan_set_devices(psched_plan *plan, uint32_t devices);

/** @brief Set the micro-batch count m (1..#PSCHED_MAX_MICROBATCHES).
 *  With two chains each chain gets m/2 micro-batches.
 *  @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_set_microbatches(psched_plan *plan, uint32_t microbatches);

/** @brief Set the chunks per device v (0 = the generator's default,
 *  else 1..#PSCHED_MAX_CHUNKS). @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_set_chunks(psched_plan *plan, uint32_t chunks);

/** @brief Set the number of chains (1, or 2 for DualPipe: two model copies
 *  in opposite directions, stages 0..S/2-1 and S/2..S-1, m/2 micro-batches
 *  each). Generators with a fixed chain count override it.
 *  @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_set_chains(psched_plan *plan, uint32_t chains);

/** @brief Set the placement kind. Setting ::PSCHED_PLACEMENT_CUSTOM starts
 *  from loop order; then set each stage with psched_plan_set_stage_device().
 *  @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_set_placement(psched_plan *plan, psched_placement placement);

/**
 * @brief Custom placement: put stage @p stage on device @p device.
 * Requires placement ::PSCHED_PLACEMENT_CUSTOM and p, v already set. A
 * stage's chunk is its rank among the stages of its device in model order.
 * Every device must end up with exactly v stages (checked at generation).
 * @return ::PSCHED_OK or ::PSCHED_EINVAL.
 */
PSCHED_API psched_status psched_plan_set_stage_device(psched_plan *plan, uint32_t stage,
                                                      uint32_t device);

/** @brief Set t_F, t_B, t_W of every stage (finite, >= 0; clears per-stage
 *  values). @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_set_cost(psched_plan *plan, double f, double b, double w);

/** @brief Set t_F, t_B, t_W of one stage (stage < p·v with the current p, v).
 *  @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_set_stage_cost(psched_plan *plan, uint32_t stage,
                                                    double f, double b, double w);

/** @brief Set memory deltas of F, B, W for every stage (finite; clears
 *  per-stage values). Default (+1, 0, -1). @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_set_mem(psched_plan *plan, double f, double b, double w);

/** @brief Set memory deltas of one stage. @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_set_stage_mem(psched_plan *plan, uint32_t stage,
                                                   double f, double b, double w);

/** @brief Set the latency added on every dependency edge between two
 *  different devices (finite, >= 0). @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_set_comm(psched_plan *plan, double latency);

/** @brief Set the per-device memory limit in the units of the memory deltas
 *  (> 0; INFINITY = unlimited, the default). @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_set_memory_limit(psched_plan *plan, double limit);

/**
 * @brief Set a named integer generator option, e.g. "group-size" for
 * interleaved. Keys are 1..31 characters of [a-z0-9-].
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (bad key), ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_set_option(psched_plan *plan, const char *key, int64_t value);

/**
 * @brief Read a named option.
 * @return ::PSCHED_OK with *value set, ::PSCHED_ENOTFOUND if unset,
 *         ::PSCHED_EINVAL on NULL arguments.
 */
PSCHED_API psched_status psched_plan_get_option(const psched_plan *plan, const char *key,
                                                int64_t *value);

/** @brief Device count p. */
PSCHED_API uint32_t psched_plan_devices(const psched_plan *plan);
/** @brief Micro-batch count m (total over chains). */
PSCHED_API uint32_t psched_plan_microbatches(const psched_plan *plan);
/** @brief Chunks per device v (0 while left to the generator). */
PSCHED_API uint32_t psched_plan_chunks(const psched_plan *plan);
/** @brief Chain count (1 or 2). */
PSCHED_API uint32_t psched_plan_chains(const psched_plan *plan);
/** @brief Virtual stage count S = p·v. */
PSCHED_API uint32_t psched_plan_stages(const psched_plan *plan);
/** @brief Placement kind. */
PSCHED_API psched_placement psched_plan_placement(const psched_plan *plan);
/** @brief Device of stage @p stage (stage < S; UINT32_MAX otherwise, or while
 *  the placement is auto). */
PSCHED_API uint32_t psched_plan_stage_device(const psched_plan *plan, uint32_t stage);
/** @brief Chunk (0..v-1) of stage @p stage on its device (UINT32_MAX when
 *  out of range). */
PSCHED_API uint32_t psched_plan_stage_chunk(const psched_plan *plan, uint32_t stage);
/** @brief Stage that device @p device runs as chunk @p chunk (UINT32_MAX when
 *  out of range). */
PSCHED_API uint32_t psched_plan_device_stage(const psched_plan *plan, uint32_t device,
                                             uint32_t chunk);
/** @brief Communication latency. */
PSCHED_API double psched_plan_comm(const psched_plan *plan);
/** @brief Per-device memory limit (INFINITY when unlimited). */
PSCHED_API double psched_plan_memory_limit(const psched_plan *plan);

/** @brief Read t_F, t_B, t_W of a stage (any pointer may be NULL).
 *  @return ::PSCHED_OK or ::PSCHED_EINVAL (stage >= S). */
PSCHED_API psched_status psched_plan_stage_cost(const psched_plan *plan, uint32_t stage,
                                                double *f, double *b, double *w);
/** @brief Read the memory deltas of a stage (any pointer may be NULL).
 *  @return ::PSCHED_OK or ::PSCHED_EINVAL (stage >= S). */
PSCHED_API psched_status psched_plan_stage_mem(const psched_plan *plan, uint32_t stage,
                                               double *f, double *b, double *w);

/** @} */

/** @defgroup ops Ops
 *  @{ */

/**
 * Op kinds. Name table against torch.distributed.pipelining action text
 * (`<stage><TYPE><mb>`) and the zero-bubble papers:
 *
 * | pipesched | PyTorch | ZB papers | meaning |
 * |-----------|---------|-----------|---------|
 * | F         | F       | F         | forward |
 * | B         | I       | B         | backward for inputs (activation gradient) |
 * | W         | W       | W         | backward for weights |
 * | BW        | B       | B+W       | full backward (B and W fused) |
 */
typedef enum psched_op_kind {
    PSCHED_OP_F = 0,      /**< forward */
    PSCHED_OP_B = 1,      /**< backward for inputs (PyTorch "I") */
    PSCHED_OP_W = 2,      /**< backward for weights */
    PSCHED_OP_BW = 3,     /**< full backward (PyTorch "B") */
    PSCHED_OP_SEND_F = 4, /**< send activations of the stage to stage+1 */
    PSCHED_OP_RECV_F = 5, /**< receive activations from stage-1 */
    PSCHED_OP_SEND_B = 6, /**< send gradients of the stage to stage-1 */
    PSCHED_OP_RECV_B = 7, /**< receive gradients from stage+1 */
    /** copy the activations of (stage, micro-batch) to the host, after its F,
     *  on the device's copy stream (ABI 1.1; pipesched's extension, action
     *  text `<stage>OFFLOAD<mb>`; see psched_offload()) */
    PSCHED_OP_OFFLOAD = 8,
    /** copy them back to the device before its backward (ABI 1.1;
     *  `<stage>RELOAD<mb>`) */
    PSCHED_OP_RELOAD = 9,
    /** vocabulary-parallel S pass of micro-batch `microbatch` on shard
     *  `stage` of the output layer, which is the device's own index (ABI
     *  1.1; pipesched's extension, action text `<shard>VOCAB_S<mb>`): the
     *  forward matmul and the local softmax statistics (Vocab-2 also the
     *  shard's input-gradient piece). See psched_plan_set_vocab_cost(). */
    PSCHED_OP_VOCAB_S = 10,
    /** vocabulary-parallel T pass: the backward pieces of the shard (ABI
     *  1.1; `<shard>VOCAB_T<mb>`) */
    PSCHED_OP_VOCAB_T = 11,
    /** collective step that every device reaches (ABI 1.1;
     *  `<index>COLLECTIVE<mb>`): `stage` holds the collective's index within
     *  its micro-batch (below #PSCHED_MAX_COLLECTIVES), `chunk` is 0. It runs
     *  on each device's communication stream once the last device has
     *  reached it, for latency + bytes / bandwidth of the group's link
     *  (psched_plan_set_collective_bytes()); every device must reach the
     *  collectives of a schedule in one order (NCCL's rule). With
     *  vocabulary passes, index 0 of a micro-batch broadcasts the last
     *  stage's output, 1 all-reduces the softmax statistics (Vocab-2: and
     *  the input gradient), 2 (Vocab-1 only) all-reduces the input gradient. */
    PSCHED_OP_COLLECTIVE = 12
} psched_op_kind;

/** Collective indices per micro-batch: a ::PSCHED_OP_COLLECTIVE op's
 *  `stage` field is below this. */
#define PSCHED_MAX_COLLECTIVES 8u

/** Spelling of op-kind names (psched_op_kind_str()). */
typedef enum psched_naming {
    /** This library's names: "F", "B", "W", "BW", "SEND_F", "RECV_F",
     *  "SEND_B", "RECV_B" (JSON, chrome, svg, the bindings). */
    PSCHED_NAMING_PIPESCHED = 0,
    /** PyTorch's action types: "F", "I", "W", "B", "SEND_F", ... (CSV, op
     *  text in messages); kinds PyTorch does not have (OFFLOAD, RELOAD,
     *  VOCAB_S, VOCAB_T, COLLECTIVE) keep this library's name. */
    PSCHED_NAMING_PYTORCH = 1
} psched_naming;

/**
 * @brief Name of an op kind (PIPESCHED_1.1). The one table of op-kind
 * names: every format, message and binding prints through it, so a new kind
 * needs one new row here. Kinds are numbered from 0 without gaps: a caller
 * may list them by calling with 0, 1, ... until NULL.
 * @param kind a ::psched_op_kind value.
 * @param naming ::PSCHED_NAMING_PIPESCHED or ::PSCHED_NAMING_PYTORCH.
 * @return a static string, or NULL for an unknown kind or naming.
 */
PSCHED_API const char *psched_op_kind_str(psched_op_kind kind, psched_naming naming);

/** Op flag: runs overlapped with the next op of the same list (DualPipe's
 *  F&B pair); the two are one unit for ordering and cost their sum. */
#define PSCHED_OP_OVERLAP_NEXT 0x1u
/** Op flag: a comm op issued in one batched group with the next comm op. */
#define PSCHED_OP_BATCH_NEXT 0x2u

/**
 * One op as copied out of a schedule. Fixed layout; fields are only ever
 * appended. Copy functions take the caller's sizeof(psched_op), so code
 * built against an older header keeps working.
 */
typedef struct psched_op {
    uint32_t stage;      /**< virtual stage 0..S-1 */
    uint32_t microbatch; /**< micro-batch, numbered from 0 within its chain */
    uint16_t chunk;      /**< chunk of the stage on its device (from the placement) */
    uint8_t kind;        /**< a ::psched_op_kind */
    uint8_t flags;       /**< ::PSCHED_OP_OVERLAP_NEXT, ::PSCHED_OP_BATCH_NEXT */
} psched_op;

/** @} */

/** @defgroup generators Generators, the builder and plug-ins
 *  A generator is a descriptor with a check of the plan and a function that
 *  appends each device's ops through a ::psched_builder. Built-in generators
 *  register through exactly this interface; so does a plug-in.
 *  @{ */

/** Opaque builder a generator appends ops through. */
typedef struct psched_builder psched_builder;

/** ABI version of ::psched_generator this header describes: 2 added
 *  `aliases`, `options` and `option_count`. */
#define PSCHED_GENERATOR_ABI 2u

/** ::psched_generator_option_desc::flags: the default depends on the plan
 *  (the description says how); `default_value` is then 0 and meaningless. */
#define PSCHED_OPTION_DEFAULT_FROM_PLAN 0x1u

/**
 * One integer option a generator reads with psched_plan_get_option(),
 * declared in its descriptor (generator ABI 2). psched_generate() refuses
 * a plan option the generator does not declare, or one outside
 * [min, max]; rules that depend on the plan (e.g. group-size <= m) stay in
 * the generator's check.
 */
typedef struct psched_generator_option_desc {
    /** Key, 1..31 characters of [a-z0-9-] (e.g. "group-size"). */
    const char *name;
    /** One line: what it sets and the rules the check adds. */
    const char *description;
    int64_t min;           /**< smallest accepted value */
    int64_t max;           /**< largest accepted value (>= min) */
    int64_t default_value; /**< used when the plan leaves the option unset */
    uint32_t flags;        /**< #PSCHED_OPTION_DEFAULT_FROM_PLAN */
} psched_generator_option_desc;

/**
 * Generator descriptor. psched_register_generator() copies it; the strings
 * and functions it points to must stay valid for the life of the process.
 */
typedef struct psched_generator {
    /** Must be #PSCHED_GENERATOR_ABI of the header the generator was built with. */
    uint32_t abi_version;
    /** Stable name, 1..31 characters of [a-z0-9-] (e.g. "1f1b"). */
    const char *name;
    /** One-line description. */
    const char *description;
    /** One-line constraints, e.g. "loop placement, v >= 2". */
    const char *constraints;
    /** Placement the generator builds for (never AUTO). */
    psched_placement placement;
    /** Chunks used when the plan leaves v at 0; 0 means 1, and the
     *  registered descriptor (psched_generator_find(), psched_generator_at())
     *  says 1 then. */
    uint32_t default_chunks;
    /** Chains the generator builds (1, or 2 for DualPipe); forced on the plan. */
    uint32_t chains;
    /**
     * Check that the plan fits (p, m, v, options). On a misfit return a
     * status through psched_fail() with a message naming the value and the
     * rule. May be NULL (accept every plan).
     */
    psched_status (*check)(const psched_plan *plan);
    /** Append every device's ops to @p builder; return ::PSCHED_OK or the
     *  builder's status. */
    psched_status (*generate)(const psched_plan *plan, psched_builder *builder);
    /** Since ABI 2: other names the generator is found by, e.g. PyTorch's
     *  "Interleaved1F1B"; 1..31 characters of [A-Za-z0-9-], matched without
     *  regard to case like the name. A NULL-terminated list, or NULL. */
    const char *const *aliases;
    /** Since ABI 2: the options the generator reads (may be NULL when
     *  option_count is 0). Descriptors of ABI 1 declare none, and
     *  psched_generate() passes them every option unchecked. */
    const psched_generator_option_desc *options;
    /** Since ABI 2: number of entries in `options`. */
    uint32_t option_count;
} psched_generator;

/**
 * @brief Record a failure: set the calling thread's error message
 * (printf-style) and return @p status. For generators and plug-ins.
 */
PSCHED_API psched_status psched_fail(psched_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/**
 * @brief Register a generator. Thread-safe.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (bad descriptor), ::PSCHED_EPLUGIN
 *         (abi_version newer than this library), ::PSCHED_EEXIST (name taken),
 *         ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_register_generator(const psched_generator *generator);

/**
 * @brief Look up a generator by name or alias, without regard to case
 * ("1f1b", "1F1B", "Interleaved1F1B" and "interleaved" all work).
 * @param name generator name or alias, e.g. "1f1b".
 * @param[out] out the registered descriptor (owned by the library, valid for
 *             the life of the process).
 * @return ::PSCHED_OK, ::PSCHED_ENOTFOUND (message lists the known names),
 *         ::PSCHED_EINVAL.
 */
PSCHED_API psched_status psched_generator_find(const char *name, const psched_generator **out);

/** @brief Number of registered generators (built-ins first, in a fixed order). */
PSCHED_API size_t psched_generator_count(void);

/** @brief The i-th registered generator, or NULL when i >= count. */
PSCHED_API const psched_generator *psched_generator_at(size_t index);

/**
 * @brief The i-th alias of a generator (PIPESCHED_1.1).
 * @param generator generator name or alias.
 * @param index 0, 1, ...
 * @param[out] alias the alias (owned by the library, valid for the life of
 *             the process), or NULL when @p index is past the last one.
 * @return ::PSCHED_OK, ::PSCHED_ENOTFOUND (unknown generator),
 *         ::PSCHED_EINVAL (NULL argument).
 */
PSCHED_API psched_status psched_generator_alias(const char *generator, size_t index,
                                                const char **alias);

/** Version of ::psched_option_info this header describes. */
#define PSCHED_OPTION_INFO_VERSION 1u

/**
 * A generator's option as psched_generator_option() reports it. The caller
 * sets `version` to #PSCHED_OPTION_INFO_VERSION; later versions only append
 * fields, and the library fills only the fields of the caller's version.
 */
typedef struct psched_option_info {
    uint32_t version;        /**< #PSCHED_OPTION_INFO_VERSION, set by the caller */
    uint32_t flags;          /**< #PSCHED_OPTION_DEFAULT_FROM_PLAN */
    const char *name;        /**< key (owned by the library) */
    const char *description; /**< one line (owned by the library, never NULL) */
    int64_t min;             /**< smallest accepted value */
    int64_t max;             /**< largest accepted value */
    int64_t default_value;   /**< value when unset (see `flags`) */
} psched_option_info;

/**
 * @brief Number of options a generator declares (PIPESCHED_1.1).
 * @param generator generator name or alias.
 * @param[out] count the number of options (0 for an ABI 1 plug-in).
 * @return ::PSCHED_OK, ::PSCHED_ENOTFOUND, ::PSCHED_EINVAL (NULL argument).
 */
PSCHED_API psched_status psched_generator_option_count(const char *generator, size_t *count);

/**
 * @brief The i-th option a generator declares (PIPESCHED_1.1).
 * @param generator generator name or alias.
 * @param index 0 .. count - 1 (psched_generator_option_count()).
 * @param[in,out] info `version` set by the caller; the rest is filled in.
 * @return ::PSCHED_OK, ::PSCHED_ENOTFOUND (unknown generator, or @p index
 *         past the last option), ::PSCHED_EINVAL (NULL argument, unknown
 *         `version`).
 */
PSCHED_API psched_status psched_generator_option(const char *generator, size_t index,
                                                 psched_option_info *info);

/** Symbol a plug-in exports: `psched_status psched_plugin_init(void)`,
 *  which registers its generators with psched_register_generator(). */
#define PSCHED_PLUGIN_INIT_SYMBOL "psched_plugin_init"
/** Type of the plug-in init function. */
typedef psched_status (*psched_plugin_init_fn)(void);

/**
 * @brief Load a plug-in shared object and run its init function.
 * The object stays loaded for the life of the process.
 * @return ::PSCHED_OK, ::PSCHED_EPLUGIN (cannot open, no init symbol, init
 *         failed: the message says which), ::PSCHED_EINVAL.
 */
PSCHED_API psched_status psched_plugin_load(const char *path);

/**
 * @brief Reserve room for @p count more ops on @p device (optional; makes
 * appends allocation-free). Errors latch in the builder like appends.
 * @return the builder's status.
 */
PSCHED_API psched_status psched_builder_reserve(psched_builder *builder, uint32_t device,
                                                size_t count);

/**
 * @brief Append one op to @p device's list. The chunk is derived from the
 * placement. For ::PSCHED_OP_VOCAB_S and ::PSCHED_OP_VOCAB_T @p stage is
 * the vocabulary shard, which must equal @p device; for
 * ::PSCHED_OP_COLLECTIVE it is the collective's index within the
 * micro-batch (below #PSCHED_MAX_COLLECTIVES); these take no flags and get
 * chunk 0. The first error (bad device, stage, micro-batch, kind, flags,
 * allocation) latches: later appends do nothing and return it.
 * @return the builder's status (::PSCHED_OK while no error occurred).
 */
PSCHED_API psched_status psched_builder_append(psched_builder *builder, uint32_t device,
                                               psched_op_kind kind, uint32_t stage,
                                               uint32_t microbatch, uint32_t flags);

/**
 * @brief Append an overlapped pair (first gets ::PSCHED_OP_OVERLAP_NEXT),
 * DualPipe's "F&B": run together, cost the sum, one unit for ordering.
 * @return the builder's status.
 */
PSCHED_API psched_status psched_builder_append_pair(psched_builder *builder, uint32_t device,
                                                    psched_op_kind kind1, uint32_t stage1,
                                                    uint32_t microbatch1, psched_op_kind kind2,
                                                    uint32_t stage2, uint32_t microbatch2);

/** @brief The plan the builder builds for. */
PSCHED_API const psched_plan *psched_builder_plan(const psched_builder *builder);

/** @brief Ops appended so far to @p device (0 when out of range). */
PSCHED_API size_t psched_builder_count(const psched_builder *builder, uint32_t device);

/** @} */

/** @defgroup schedule Schedules
 *  p ordered op lists, one per device, with a resolved copy of the plan.
 *  @{ */

/** Opaque schedule handle. */
typedef struct psched_schedule psched_schedule;

/**
 * @brief Generate a schedule with the named generator.
 * Resolves the plan (chunks 0 → the generator's default, placement auto →
 * the generator's, chains → the generator's), runs the generator's check,
 * then its generate function. The schedule keeps its own copy of the
 * resolved plan; @p plan is not modified.
 * @param plan the plan (read only).
 * @param name a registered generator name or alias, in any case (see
 *        psched_generator_find()); the schedule is named by the generator's
 *        own name.
 * @param[out] out new schedule owned by the caller (psched_schedule_destroy()).
 * @return ::PSCHED_OK, ::PSCHED_ENOTFOUND, ::PSCHED_EINVAL (the check's
 *         message; an option the generator does not declare or outside its
 *         range; costs whose total overflows, as for psched_simulate()),
 *         ::PSCHED_EINFEASIBLE, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_generate(const psched_plan *plan, const char *name,
                                         psched_schedule **out);

/** @brief Destroy a schedule (NULL is a no-op). */
PSCHED_API void psched_schedule_destroy(psched_schedule *schedule);

/** @brief The schedule's resolved plan (owned by the schedule). */
PSCHED_API const psched_plan *psched_schedule_plan(const psched_schedule *schedule);

/** @brief Name of the generator, or "csv" for an imported schedule (owned by
 *  the schedule). */
PSCHED_API const char *psched_schedule_name(const psched_schedule *schedule);

/** @brief Device count p. */
PSCHED_API uint32_t psched_schedule_devices(const psched_schedule *schedule);

/** @brief Ops on @p device (0 when out of range). */
PSCHED_API size_t psched_schedule_op_count(const psched_schedule *schedule, uint32_t device);

/** @brief Total ops over all devices. */
PSCHED_API size_t psched_schedule_total_ops(const psched_schedule *schedule);

/**
 * @brief Copy ops [first, first+count) of @p device into @p out.
 * @param schedule the schedule.
 * @param device device index, < p.
 * @param first index of the first op to copy.
 * @param count number of ops to copy.
 * @param[out] out array of @p count records of @p op_size bytes.
 * @param op_size the caller's sizeof(::psched_op); each record is written at
 *        stride op_size, fields beyond it are not written.
 * @return ::PSCHED_OK or ::PSCHED_EINVAL (device or range out of bounds,
 *         op_size smaller than the first version of the record).
 */
PSCHED_API psched_status psched_schedule_ops(const psched_schedule *schedule, uint32_t device,
                                             size_t first, size_t count, psched_op *out,
                                             size_t op_size);

/**
 * @brief XXH3-64 of a canonical little-endian encoding of the plan shape
 * (p, m, v, chains, stage → device map) and every op list. The same on every
 * platform, compiler and library version within a soname, so ranks can
 * compare one integer before training starts.
 * @return ::PSCHED_OK or ::PSCHED_EINVAL.
 */
PSCHED_API psched_status psched_schedule_hash(const psched_schedule *schedule, uint64_t *out);

/** @} */

/** @defgroup check Validation and simulation
 *  @{ */

/**
 * @brief Check a schedule against the dependency rules (counts, placement,
 * per-stage order, W after B on the same device) and run it in order on
 * every device to detect deadlock.
 *
 * A lowered schedule (one with SEND/RECV ops, see psched_lower_comm()) is
 * checked under rendezvous semantics: every SEND has exactly one matching
 * RECV (stage pair, micro-batch, direction) and the reverse; a compute op
 * whose producer is on another device has its RECV earlier on its own
 * device, and each SEND comes after its producer; between two devices,
 * sends and receives appear in the same order (NCCL pairs calls by posting
 * order); a send completes only when its receive is posted, and a batched
 * group (#PSCHED_OP_BATCH_NEXT) is posted at once and completes when all its
 * ops are matched. Activation copies (OFFLOAD/RELOAD) in a lowered
 * schedule follow the same rules as in a compute schedule (each after its
 * input on its device, the backward after its RELOAD) and run on the copy
 * stream without blocking the list. A deadlock names the cycle of waiting
 * devices and ops.
 * @return ::PSCHED_OK; ::PSCHED_EINVALID or ::PSCHED_EDEADLOCK with the first
 *         violated rule, device, position and op in psched_last_error(),
 *         e.g. "device 1 op 7 (3B2): needs 4B2 which never runs";
 *         ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_validate(const psched_schedule *schedule);

/** Opaque simulation report. */
typedef struct psched_report psched_report;

/**
 * @brief Simulate a schedule: each device runs its list in order; an op
 * starts at max(device free, every dependency's end + t_comm if it crosses
 * devices). Validates first (same errors as psched_validate()).
 * @param schedule the schedule to run.
 * @param costs plan whose per-stage costs and memory deltas are used (its
 *        stage count must equal the schedule's), or NULL for the schedule's own.
 * @param[out] out new report owned by the caller (psched_report_destroy()).
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (also costs too large: when devices x
 *         (stages x microbatches x (F + B + W) + 2 x stages x microbatches x
 *         comm) overflows to infinity, naming the largest value),
 *         ::PSCHED_EINVALID, ::PSCHED_EDEADLOCK, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_simulate(const psched_schedule *schedule,
                                         const psched_plan *costs, psched_report **out);

/** @brief Destroy a report (NULL is a no-op). */
PSCHED_API void psched_report_destroy(psched_report *report);

/** @brief Latest op end, all devices starting at time 0. */
PSCHED_API double psched_report_makespan(const psched_report *report);
/** @brief Max over devices of (end of its last op − start of its first op):
 *  the zero-bubble papers' figure. */
PSCHED_API double psched_report_span(const psched_report *report);
/** @brief 1 − Σ busy / (p · makespan). */
PSCHED_API double psched_report_bubble_ratio(const psched_report *report);
/** @brief Max peak memory over devices divided by Σ_s mem_F[s] (the papers'
 *  unit M); NAN when Σ mem_F is 0. */
PSCHED_API double psched_report_peak_memory_M(const psched_report *report);
/** @brief Device count of the simulated schedule. */
PSCHED_API uint32_t psched_report_devices(const psched_report *report);

/**
 * @brief Per-device figures (any output pointer may be NULL).
 * @param report the report.
 * @param device device index, < p.
 * @param[out] busy sum of op durations (an overlapped pair counted once).
 * @param[out] idle makespan − busy.
 * @param[out] peak_memory max running sum of memory deltas in list order.
 * @return ::PSCHED_OK or ::PSCHED_EINVAL (device out of range).
 */
PSCHED_API psched_status psched_report_device(const psched_report *report, uint32_t device,
                                              double *busy, double *idle, double *peak_memory);

/**
 * @brief Start and end times of ops [first, first+count) of @p device (either
 * array may be NULL). Both ops of an overlapped pair get the pair's times.
 * @return ::PSCHED_OK or ::PSCHED_EINVAL (out of range).
 */
PSCHED_API psched_status psched_report_op_times(const psched_report *report, uint32_t device,
                                                size_t first, size_t count, double *start,
                                                double *end);

/** @} */

/** @defgroup formats Formats
 *  @{ */

/** Export formats. */
typedef enum psched_format {
    /** PyTorch compute_only CSV: one row per device, `<stage><F|I|W|B><mb>`,
     *  overlapped pairs `(a;b)OVERLAP_F_B`; loadable by PyTorch's `_load_csv`.
     *  A two-chain schedule (DualPipe) starts with the line
     *  `# pipesched: chains=2` (PyTorch has no two-chain schedules); a
     *  lowered schedule is written as ::PSCHED_FORMAT_CSV_COMMS. */
    PSCHED_FORMAT_CSV = 0,
    /** Terminal grid: one row per device, ops at their simulated start. */
    PSCHED_FORMAT_ASCII = 1,
    /** JSON object: format_version, plan shape, costs, op lists and, when a
     *  report is given, op times and the report. */
    PSCHED_FORMAT_JSON = 2,
    /** compute_comms CSV of a lowered schedule: compute and SEND/RECV
     *  actions, a batched group as one cell `[a;b;...]BATCH` (pipesched's
     *  extension, read back by psched_import_csv()), and a two-chain
     *  schedule headed by the line `# pipesched: chains=2`. Activation
     *  copies of an offloaded schedule are cells `<stage>OFFLOAD<mb>` and
     *  `<stage>RELOAD<mb>` (pipesched's extension too). A runtime with
     *  blocking (rendezvous) sends must read this one. */
    PSCHED_FORMAT_CSV_COMMS = 3,
    /** Chrome / Perfetto Trace Event Format (JSON): one `ph:"X"` event per
     *  compute op at its simulated time, one track per device. */
    PSCHED_FORMAT_CHROME = 4,
    /** SVG timeline: one lane per device, a box per op at its simulated
     *  time, colour per kind, micro-batch numbers, legend and title. */
    PSCHED_FORMAT_SVG = 5,
    /** Exactly PyTorch's compute_comms dialect (`_dump_csv` /
     *  `_load_csv`): a batched group's ops as separate cells in list order
     *  and no header line; a schedule with OFFLOAD/RELOAD copies is
     *  refused (EUNSUPPORTED). Only for runtimes whose sends are non-blocking
     *  (PyTorch posts every send and receive as isend/irecv); a
     *  blocking-send runtime executing it deadlocks where the schedule
     *  needs a group. */
    PSCHED_FORMAT_CSV_COMMS_PYTORCH = 6
} psched_format;

/** Export flag: colour the ASCII grid with ANSI escapes. */
#define PSCHED_EXPORT_COLOR 0x1u

/**
 * @brief Render a schedule as text.
 * @param schedule the schedule.
 * @param format one of ::psched_format.
 * @param report simulation of @p schedule for formats that show times (ASCII,
 *        chrome and svg simulate with the schedule's own plan when NULL; JSON
 *        then omits times; CSV formats ignore it).
 * @param flags #PSCHED_EXPORT_COLOR or 0.
 * @param[out] text NUL-terminated buffer owned by the caller (psched_free()).
 * @param[out] length strlen of *text (may be NULL).
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_ENOMEM, or a simulation error.
 */
PSCHED_API psched_status psched_export(const psched_schedule *schedule,
                                       const psched_report *report, psched_format format,
                                       uint32_t flags, char **text, size_t *length);

/**
 * @brief Receives one piece of a streamed text (psched_export_write(),
 * psched_generate_write()).
 * @param user the pointer passed along with the callback.
 * @param data @p length bytes of the text, in order, not NUL-terminated;
 *        valid only during the call.
 * @param length bytes in @p data (> 0).
 * @return 0 to go on; any other value stops the export, which then fails
 *         with ::PSCHED_EIO naming the value and the bytes refused.
 */
typedef int (*psched_write_fn)(void *user, const char *data, size_t length);

/**
 * @brief psched_export() handing the text to a callback in pieces instead
 * of one buffer (PIPESCHED_1.1): the CSV formats are written through a 1 MiB window, so
 * the whole text is never held (the other formats are made whole and
 * handed over in one piece). The concatenated pieces equal psched_export()'s
 * text byte for byte. A malformed pair or group is refused before the
 * first byte is written.
 * @param schedule the schedule.
 * @param report as for psched_export().
 * @param format one of ::psched_format.
 * @param flags #PSCHED_EXPORT_COLOR or 0.
 * @param write called with each piece, in order.
 * @param user passed to @p write.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (NULL schedule or callback, or as
 *         psched_export()), ::PSCHED_ENOMEM, ::PSCHED_EIO (@p write returned
 *         non-zero; the pieces before it were written), or a simulation error.
 */
PSCHED_API psched_status psched_export_write(const psched_schedule *schedule,
                                             const psched_report *report, psched_format format,
                                             uint32_t flags, psched_write_fn write, void *user);

/**
 * @brief Generate a schedule, validate it and write its export
 * (PIPESCHED_1.1), for
 * outputs too large to hold as a ::psched_schedule plus its text.
 * The same as psched_generate(), psched_validate() and
 * psched_export_write() in turn, with the same text, statuses and
 * messages, and nothing written unless the schedule is valid. For
 * ::PSCHED_FORMAT_CSV the generator's ops are held in a compact form of
 * 4 bytes per op (instead of a 12-byte ::psched_op) whenever they fit it
 * (compute ops, overlapped pairs, each device's ops appended in device
 * order, micro-batch and chunk fitting 29 bits), checked on one byte per
 * (stage, micro-batch) and written row by row through a 1 MiB window; any
 * other schedule, an invalid one included, takes the ::psched_schedule
 * path (then validation names the failing op as psched_validate() does).
 * @param plan the plan, as for psched_generate().
 * @param name generator name or alias.
 * @param format one of ::psched_format.
 * @param flags #PSCHED_EXPORT_COLOR or 0.
 * @param write called with each piece, in order; never called for an
 *        invalid schedule.
 * @param user passed to @p write.
 * @return ::PSCHED_OK, psched_generate()'s errors, psched_validate()'s
 *         (::PSCHED_EINVALID, ::PSCHED_EDEADLOCK), ::PSCHED_EIO (@p write
 *         returned non-zero), ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_generate_write(const psched_plan *plan, const char *name,
                                               psched_format format, uint32_t flags,
                                               psched_write_fn write, void *user);

/**
 * @brief Import a PyTorch compute_only or compute_comms CSV (one row per
 * device; empty cells are idle steps; `\n` or `\r\n`; a leading UTF-8 BOM is
 * skipped). Strict: anything that is not a whole action is an error naming
 * line and column. pipesched's extensions are read back: a batched group
 * `[a;b;...]BATCH` of SEND/RECV actions (BATCH_NEXT on all but its last op)
 * and a first line `# pipesched: chains=N` giving the chain count (then m
 * is N times the largest micro-batch + 1). A lowered file is not validated
 * here: psched_validate() checks its matching pairs and the rendezvous rule.
 * @param text the file contents (need not be NUL-terminated).
 * @param length bytes in @p text.
 * @param plan optional shape: when given, its p, m, v, chains, placement and
 *        costs are used and the file is checked against them; when NULL, p is
 *        the row count, m the largest micro-batch + 1, v = S / p, and the
 *        placement is loop if the file fits it, else vshape, else custom.
 * @param[out] out new schedule named "csv", owned by the caller.
 * @return ::PSCHED_OK, ::PSCHED_EPARSE, ::PSCHED_EINVAL, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_import_csv(const char *text, size_t length,
                                           const psched_plan *plan, psched_schedule **out);

/** @} */

/** @defgroup optimizer Optimizer: layer partitioning and recomputation
 *  Assign every virtual stage a contiguous range of a model's layers and
 *  every layer a recompute choice so that the step time of a schedule is
 *  minimal while every device's memory (parameters + activations) fits the
 *  plan's memory limit. See the guide page @ref optimizer for the model,
 *  the objective and the solvers.
 *  @{ */

/** Opaque model: an ordered list of layer groups. */
typedef struct psched_model psched_model;

/** Recompute (activation checkpointing) choice of one layer. */
typedef enum psched_recompute {
    /** Keep every activation: the group's own activation bytes, no extra time. */
    PSCHED_RECOMPUTE_NONE = 0,
    /** Recompute the cheap, large parts (attention core, Korthikanti et al. 2022). */
    PSCHED_RECOMPUTE_SELECTIVE = 1,
    /** Keep only the layer input; rerun the whole forward in the backward. */
    PSCHED_RECOMPUTE_FULL = 2
} psched_recompute;

/**
 * @brief Create an empty model.
 * @param[out] out new model owned by the caller (psched_model_destroy()).
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (out NULL), ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_model_create(psched_model **out);

/** @brief Destroy a model (NULL is a no-op). */
PSCHED_API void psched_model_destroy(psched_model *model);

/**
 * @brief Append a group of @p count identical layers after the existing ones
 * (the layer order is the model order).
 * @param model the model.
 * @param type type name, 1..31 printable characters without commas (copied).
 * @param count layers in the group, >= 1.
 * @param f forward time of one layer for one micro-batch (any time unit).
 * @param b backward-for-inputs time of one layer.
 * @param w backward-for-weights time of one layer.
 * @param act_bytes activation bytes one micro-batch keeps in one layer from
 *        its forward until its weight backward.
 * @param param_bytes parameter, gradient and optimizer-state bytes of one layer.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (a value is negative or not finite,
 *         count is 0, or the type name is malformed; the message says which),
 *         ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_model_add_layers(psched_model *model, const char *type,
                                                 uint32_t count, double f, double b, double w,
                                                 double act_bytes, double param_bytes);

/**
 * @brief Offer a recompute variant for every layer of a group.
 * @param model the model.
 * @param group group index in insertion order.
 * @param kind ::PSCHED_RECOMPUTE_SELECTIVE or ::PSCHED_RECOMPUTE_FULL.
 * @param act_bytes activation bytes per layer and micro-batch with this
 *        variant (finite, >= 0).
 * @param extra_time time the variant adds to the layer's backward for inputs
 *        (finite, >= 0).
 * @return ::PSCHED_OK or ::PSCHED_EINVAL.
 */
PSCHED_API psched_status psched_model_set_recompute(psched_model *model, uint32_t group,
                                                    psched_recompute kind, double act_bytes,
                                                    double extra_time);

/** @brief Number of layer groups. */
PSCHED_API uint32_t psched_model_groups(const psched_model *model);

/** @brief Number of layers (sum of the group counts). */
PSCHED_API uint32_t psched_model_layers(const psched_model *model);

/**
 * @brief Read one group (any output pointer may be NULL).
 * @param model the model.
 * @param group group index.
 * @param[out] type type name, owned by the model.
 * @param[out] count layers in the group.
 * @param[out] f forward time of one layer.
 * @param[out] b backward-for-inputs time of one layer.
 * @param[out] w backward-for-weights time of one layer.
 * @param[out] act_bytes activation bytes without recompute.
 * @param[out] param_bytes parameter bytes of one layer.
 * @return ::PSCHED_OK or ::PSCHED_EINVAL (group out of range).
 */
PSCHED_API psched_status psched_model_group(const psched_model *model, uint32_t group,
                                            const char **type, uint32_t *count, double *f,
                                            double *b, double *w, double *act_bytes,
                                            double *param_bytes);

/**
 * @brief Read a group's recompute variant (either pointer may be NULL).
 * @return ::PSCHED_OK, ::PSCHED_ENOTFOUND (the group has no such variant;
 *         ::PSCHED_RECOMPUTE_NONE always exists), ::PSCHED_EINVAL.
 */
PSCHED_API psched_status psched_model_group_recompute(const psched_model *model, uint32_t group,
                                                      psched_recompute kind, double *act_bytes,
                                                      double *extra_time);

/**
 * @brief Read a layer profile in CSV form:
 * `type,count,f,b,w,act,param[,act_selective,extra_selective][,act_full,extra_full]`.
 * The first non-comment line is a header row (its cells are not checked
 * beyond their number, 7, 9 or 11). Lines starting with `#` and empty lines
 * are skipped; `\n` or `\r\n`. Numbers are C decimal or exponent notation
 * (`80e9`). An empty selective pair with a full pair given means no selective
 * variant.
 * @param text file contents (need not be NUL-terminated).
 * @param length bytes in @p text.
 * @param[out] out new model owned by the caller.
 * @return ::PSCHED_OK, ::PSCHED_EPARSE (message "line L, column C: ..."),
 *         ::PSCHED_EINVAL, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_model_load_csv(const char *text, size_t length,
                                               psched_model **out);

/** Version of ::psched_transformer this header describes. */
#define PSCHED_TRANSFORMER_VERSION 2u

/**
 * Hyper-parameters of a decoder-only transformer for
 * psched_model_transformer(). Set `version` to #PSCHED_TRANSFORMER_VERSION;
 * later versions only append fields. Version 2 appended `flash_attention`,
 * `head_dim` and `causal`; a version-1 caller gets the version-1 formulas
 * (materialized attention scores, head_dim = hidden/heads, no causal
 * halving). Start from #PSCHED_TRANSFORMER_INIT for the documented
 * defaults (FlashAttention on, causal mask on).
 */
typedef struct psched_transformer {
    uint32_t version;      /**< #PSCHED_TRANSFORMER_VERSION */
    uint32_t hidden;       /**< hidden size h */
    uint32_t ffn;          /**< feed-forward inner size (per expert for MoE) */
    uint32_t heads;        /**< attention heads a */
    uint32_t kv_heads;     /**< key/value heads (grouped-query attention), 1..heads */
    uint32_t layers;       /**< transformer layers */
    uint32_t vocab;        /**< vocabulary size V */
    uint32_t sequence;     /**< sequence length s */
    uint32_t microbatch;   /**< micro-batch size b (sequences) */
    uint32_t tensor_parallel; /**< tensor-parallel size t (divides the per-device work) */
    uint32_t dtype_bytes;  /**< bytes per activation and parameter element (2 for bf16) */
    uint32_t experts;      /**< experts per MoE layer (0 or 1: dense model) */
    uint32_t top_k;        /**< experts each token visits (MoE layers) */
    uint32_t moe_every;    /**< every n-th layer is MoE (1: all; 0 with experts > 1 means 1) */
    /* version 2 */
    uint32_t flash_attention; /**< 1: attention scores never stored (FlashAttention), 0: the
                                   5·a·s²·b score activations are kept; 0 or 1 */
    uint32_t head_dim;     /**< per-head dimension (0: hidden/heads; Gemma2-9B has 256) */
    uint32_t causal;       /**< 1: causal mask, the score and score-times-V FLOPs are halved
                                (as Megatron-LM counts them); 0 or 1 */
} psched_transformer;

/**
 * Initializer of a ::psched_transformer with this header's version and
 * the documented defaults: `flash_attention` = 1, `causal` = 1,
 * `head_dim` = 0 (hidden/heads); every other field is 0 and must be set.
 * Use: `psched_transformer c = PSCHED_TRANSFORMER_INIT; c.hidden = ...`.
 */
#define PSCHED_TRANSFORMER_INIT                                                           \
    { PSCHED_TRANSFORMER_VERSION, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u,       \
      1u, 0u, 1u }

/**
 * @brief Build a layer profile from transformer hyper-parameters with the
 * standard analytic formulas (see @ref optimizer): an `embedding` layer, the
 * transformer layers (`layer`, or alternating `dense` / `moe` groups), and
 * a `head` layer (final norm, output projection and loss). Times are in
 * TFLOP (10^12 floating-point operations per device), so dividing by a
 * device's sustained TFLOP/s gives seconds; the backward is twice the
 * forward, split evenly into B and W. Parameter bytes count weights,
 * gradients and Adam state (16 bytes per parameter with mixed precision,
 * divided by t). Every transformer layer gets a full recompute variant,
 * and a selective one unless `flash_attention` (version 2) leaves no
 * attention scores to drop.
 * @param config hyper-parameters (all of hidden, ffn, heads, kv_heads,
 *        layers, vocab, sequence, microbatch, tensor_parallel, dtype_bytes >= 1).
 * @param[out] out new model owned by the caller.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (naming the field), ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_model_transformer(const psched_transformer *config,
                                                  psched_model **out);

/** Partitioning methods. */
typedef enum psched_partition_method {
    /** The exact optimum: a dynamic program where one is exact (one chunk
     *  per device; two chunks in a loop or V placement), else a
     *  mixed-integer program over per-stage columns solved with GLPK and
     *  seeded with the best of the DP's heuristic solution and the even
     *  splits. Without GLPK the MILP cases return ::PSCHED_EUNSUPPORTED. */
    PSCHED_PARTITION_ILP = 0,
    /** Dynamic programs only: exact where the ILP method uses them, a
     *  heuristic elsewhere (each stage gets 1/v of the memory). */
    PSCHED_PARTITION_DP = 1,
    /** Megatron's default: the body layers split evenly, the embedding on the
     *  first stage, the head on the last; one recompute choice for all layers
     *  (none, else selective, else full: the first that fits). */
    PSCHED_PARTITION_EVEN = 2,
    /** Megatron's account-for-embedding/loss split: every layer, embedding
     *  and head included, counts as one and the count is split evenly. */
    PSCHED_PARTITION_EVEN_ACCOUNTED = 3,
    /** PipeDream-style: minimize the largest stage time, ignoring memory; no
     *  recompute. */
    PSCHED_PARTITION_DP_TIME = 4
} psched_partition_method;

/** Partition flag: a stage may receive no layer. */
#define PSCHED_PARTITION_ALLOW_EMPTY 0x1u

/** Version of ::psched_partition_options this header describes. */
#define PSCHED_PARTITION_OPTIONS_VERSION 1u

/**
 * Options of psched_partition(). Initialize with
 * #PSCHED_PARTITION_OPTIONS_INIT; later versions only append fields.
 */
typedef struct psched_partition_options {
    uint32_t version;               /**< #PSCHED_PARTITION_OPTIONS_VERSION */
    psched_partition_method method; /**< solver or baseline */
    double time_limit;              /**< seconds for the whole call, > 0 (GLPK's
                                         LP presolver, which cannot be stopped,
                                         may overrun it slightly) */
    uint32_t flags;                 /**< #PSCHED_PARTITION_ALLOW_EMPTY */
} psched_partition_options;

/** Default options: ILP, 10 s, no empty stages. */
#define PSCHED_PARTITION_OPTIONS_INIT                                                     \
    { PSCHED_PARTITION_OPTIONS_VERSION, PSCHED_PARTITION_ILP, 10.0, 0u }

/** Outcome of a solve. */
typedef enum psched_solve_status {
    /** The partition minimizes the objective (proven). */
    PSCHED_SOLVE_OPTIMAL = 0,
    /** The partition fits; its objective may be above the optimum by the gap
     *  (a baseline's result is always "feasible"). */
    PSCHED_SOLVE_FEASIBLE = 1,
    /** No partition fits the memory limit (or, for a baseline, its partition
     *  does not fit; the partition is still reported). Also when the time
     *  limit ran out before any partition was found: then
     *  psched_partition_min_memory() is at most the limit. */
    PSCHED_SOLVE_INFEASIBLE = 2
} psched_solve_status;

/** Opaque partition result. */
typedef struct psched_partition_result psched_partition_result;

/**
 * @brief Partition a model over the virtual stages of a schedule.
 *
 * The device memory limit is psched_plan_memory_limit() of @p plan, in
 * bytes (INFINITY: unconstrained). A device's memory is its layers'
 * parameter bytes plus, for each of its chunks, the chunk's activation bytes
 * times the most micro-batches that chunk holds at once in the schedule
 * (counted in op-list order from the schedule generated with unit costs).
 * The objective is `(m-1)·max(max_d T_d, λ·max_s T_s) + κ·Σ_s T_s` with T
 * the forward plus backward time of a stage or device, where κ is
 * calibrated so that the formula is exact for the schedule with equal
 * stages and λ so that it is exact for one with unequal chunks (@ref
 * optimizer). The chosen partition is
 * written into a copy of the plan (per-stage costs, memory deltas
 * (act, 0, -act)), the schedule is generated again and simulated.
 *
 * @param model the model (at least one layer, and at least S layers unless
 *        #PSCHED_PARTITION_ALLOW_EMPTY).
 * @param plan p, m, v, placement, comm and memory limit; costs are ignored.
 *        An overlap saving (psched_plan_set_overlap_saving()) is kept,
 *        capped at each stage's shorter op for every partition; the result
 *        is then ::PSCHED_SOLVE_FEASIBLE with a bound that charges each F
 *        op less the largest saving (@ref optimizer).
 * @param schedule generator name. With two chains (DualPipe) both chains
 *        hold the same layers: chain 0's stage j and chain 1's stage p + j
 *        get the same range (device d holds ranges d and p−1−d, parameters
 *        duplicated) and the same recompute choices (@ref optimizer).
 * @param options options, or NULL for #PSCHED_PARTITION_OPTIONS_INIT.
 * @param[out] out new result owned by the caller
 *        (psched_partition_result_destroy()). An infeasible memory limit is
 *        not an error: the result says so.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_ENOTFOUND,
 *         ::PSCHED_EUNSUPPORTED (the MILP cases without GLPK, two chains
 *         in another placement than DualPipe's),
 *         ::PSCHED_ESOLVER (GLPK failed; the process is unharmed),
 *         ::PSCHED_ENOMEM, or the generator's error.
 */
PSCHED_API psched_status psched_partition(const psched_model *model, const psched_plan *plan,
                                          const char *schedule,
                                          const psched_partition_options *options,
                                          psched_partition_result **out);

/** @brief Destroy a partition result (NULL is a no-op). */
PSCHED_API void psched_partition_result_destroy(psched_partition_result *result);

/** @brief Solve status of the result. */
PSCHED_API psched_solve_status psched_partition_status(const psched_partition_result *result);

/** @brief Relative gap (step time − bound) / step time of a feasible
 *  result: of the `ilp` and `dp` methods, to the certificate's bound where
 *  its search stopped early (docs/optimizer.md); of `even`,
 *  `even-accounted` and `dp-time`, to the floor every partition obeys
 *  without a search. 0 when optimal; NAN when infeasible (and for
 *  psched_partition_evaluate(), which claims nothing). */
PSCHED_API double psched_partition_gap(const psched_partition_result *result);

/** @brief Objective value `(m-1)·max(max_d T_d, λ·max_s T_s) + κ·Σ_s T_s`
 *  of the partition (NAN when no partition was found). */
PSCHED_API double psched_partition_objective(const psched_partition_result *result);

/** @brief Wall-clock seconds the solve took. */
PSCHED_API double psched_partition_solve_time(const psched_partition_result *result);

/** @brief Smallest per-device memory limit under which some partition fits
 *  (every layer with its most memory-saving variant); computed when the
 *  result is infeasible, NAN otherwise (and NAN when it could not be proven
 *  within the time limit; a figure at most the limit means the time ran out
 *  before a partition was found). */
PSCHED_API double psched_partition_min_memory(const psched_partition_result *result);

/** @brief Virtual stage count S of the result. */
PSCHED_API uint32_t psched_partition_stages(const psched_partition_result *result);

/**
 * @brief One stage of the partition (any output pointer may be NULL).
 * @param result the result.
 * @param stage virtual stage, < S.
 * @param[out] first first layer of the stage.
 * @param[out] count layers in the stage (0 for an empty stage).
 * @param[out] time forward plus backward time of one micro-batch.
 * @param[out] memory parameter bytes plus activation bytes times the
 *             stage's in-flight count.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (stage out of range),
 *         ::PSCHED_EINFEASIBLE (no partition was found).
 */
PSCHED_API psched_status psched_partition_stage(const psched_partition_result *result,
                                                uint32_t stage, uint32_t *first,
                                                uint32_t *count, double *time, double *memory);

/** @brief Recompute choice of a layer (::PSCHED_RECOMPUTE_NONE when out of
 *  range or no partition was found). */
PSCHED_API psched_recompute psched_partition_layer_recompute(const psched_partition_result *result,
                                                             uint32_t layer);

/** @brief The plan with the partition's per-stage costs and memory deltas
 *  written in, p, v and placement resolved, and no memory limit (owned by the
 *  result); NULL when no partition was found. */
PSCHED_API const psched_plan *psched_partition_plan(const psched_partition_result *result);

/** @brief Makespan of the schedule generated and simulated with the
 *  partition's costs (NAN when no partition was found). */
PSCHED_API double psched_partition_makespan(const psched_partition_result *result);

/**
 * @brief Per-device figures of the partition (any pointer may be NULL).
 * @param result the result.
 * @param device device, < p.
 * @param[out] params parameter bytes of the device's layers.
 * @param[out] memory the model's bound: params + Σ chunks of in-flight count
 *             × activation bytes (the figure held to the limit).
 * @param[out] peak_memory params plus the simulated activation peak (at
 *             most @p memory).
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_EINFEASIBLE (no partition).
 */
PSCHED_API psched_status psched_partition_device(const psched_partition_result *result,
                                                 uint32_t device, double *params,
                                                 double *memory, double *peak_memory);

/** @brief Bubble ratio 1 − Σ busy / (p · makespan) of the schedule
 *  generated and simulated with the partition's costs (NAN when no
 *  partition was found). */
PSCHED_API double psched_partition_bubble_ratio(const psched_partition_result *result);

/**
 * @brief Evaluate a partition the caller gives (PIPESCHED_1.1): per stage a
 *        layer count, per layer a recompute choice.
 *
 * The stages take consecutive layers in model order (stage s after stage
 * s - 1; a count may be 0). The result is filled as psched_partition()
 * fills it: per-stage time and memory, per-device parameters, memory bound
 * and simulated peak, the simulated makespan and bubble, and the status
 * ::PSCHED_SOLVE_FEASIBLE when every device's bound fits the plan's memory
 * limit, ::PSCHED_SOLVE_INFEASIBLE otherwise (the partition is still there
 * to read); gap and min_memory are NaN.
 * @param model the layer profile.
 * @param plan p, m, v (0: the schedule's default), memory limit, comm.
 * @param schedule generator name.
 * @param counts layers of each stage, @p stages entries summing to the
 *        model's layer count. A schedule whose two chains hold the same
 *        ranges (DualPipe: p ranges, each on a device and its mirror) takes
 *        its ranges once, or twice as its results list them (2p entries,
 *        entry t the range t mod p, summing to twice the layer count).
 * @param stages p·v of the schedule (DualPipe: p, or 2p as above).
 * @param recompute per layer ::psched_recompute, or NULL for none; a layer
 *        may only use a variant its group has.
 * @param[out] out new result owned by the caller
 *        (psched_partition_result_destroy()); NULL on error.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (message naming the count, stage or
 *         layer), a generator's error, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_partition_evaluate(const psched_model *model,
                                                   const psched_plan *plan, const char *schedule,
                                                   const uint32_t *counts, uint32_t stages,
                                                   const psched_recompute *recompute,
                                                   psched_partition_result **out);

/**
 * @brief Read a Megatron-LM `--pipeline-model-parallel-layout` and its
 *        recompute options and evaluate them (PIPESCHED_1.1).
 *
 * Grammar (Megatron-LM's): `E` embedding, `t` transformer layer, `m` MTP
 * layer, `L` loss, `|` between virtual stages (in model order: stage k on
 * rank k mod p), `x*n` repeats one element (`|` included), `(...)*n` a
 * group (one level, not empty), commas are ignored. The first element is
 * E and the last L, each exactly once. Elements match the model's layers
 * in order by their letter: groups named `embedding` are E, `head`,
 * `loss` or `output` L, `mtp` m, every other group t; @p map
 * ("m=GROUP,E=GROUP,...") names other groups. An E (L) where the profile
 * has no E (L) group stands for nothing. The stage count must be p·v (v
 * taken from the layout when the plan's is 0).
 *
 * Recompute options as Megatron-LM spells them: @p granularity NULL,
 * "none", "selective" (every transformer layer with a selective variant)
 * or "full"; with full, @p method "uniform" (@p num_layers 1: every
 * transformer layer) or "block" (the first @p num_layers transformer
 * layers of every virtual stage).
 * @param model the layer profile.
 * @param plan p, m, v (0: taken from the layout), memory limit, comm.
 * @param schedule generator name.
 * @param layout the layout string, NUL-terminated.
 * @param map letters of other groups ("m=GROUP,E=GROUP,..."), or NULL.
 * @param granularity NULL, "none", "selective" or "full".
 * @param method with "full": "uniform" or "block"; NULL otherwise.
 * @param num_layers with "full": 1 for "uniform", the layers per virtual
 *        stage for "block"; 0 otherwise.
 * @param[out] out as psched_partition_evaluate().
 * @return ::PSCHED_OK, ::PSCHED_EINVAL naming the column and the rule
 *         (unbalanced parentheses, unknown element, an element that falls on
 *         a layer of another letter, counts that differ, stage count), or
 *         what psched_partition_evaluate() returns.
 */
PSCHED_API psched_status psched_partition_from_layout(const psched_model *model,
                                                      const psched_plan *plan,
                                                      const char *schedule, const char *layout,
                                                      const char *map, const char *granularity,
                                                      const char *method, uint32_t num_layers,
                                                      psched_partition_result **out);

/**
 * @brief A partition as Megatron-LM command-line flags (PIPESCHED_1.1).
 *
 * Prints `--pipeline-model-parallel-size`, `--pipeline-model-parallel-layout`
 * (the grammar of psched_partition_from_layout(), runs written `t*n` and
 * repeated stages `(...|)*n`) and, where Megatron-LM's global options say
 * the plan's recomputation, `--recompute-granularity`,
 * `--recompute-method` and `--recompute-num-layers`. Comment lines (`#`)
 * first: the plan's figures, v (`--num-virtual-stages-per-pipeline-rank`
 * is implied by the layout: Megatron-LM refuses both together), a
 * schedule or placement Megatron-LM does not run, and, when the
 * recomputation differs per stage in a way the options cannot say, the
 * difference and the nearest setting they can say (the fastest that fits,
 * else the leanest) with its simulated step time beside the plan's; that
 * setting's flags are printed.
 * @param result a result with a partition (psched_partition(),
 *        psched_search_partition(), psched_partition_from_layout()).
 * @param model the profile it was computed for.
 * @param map letters of groups, as psched_partition_from_layout(); NULL.
 * @param[out] text NUL-terminated text owned by the caller (psched_free()).
 * @param[out] length strlen of *text (may be NULL).
 * @return ::PSCHED_OK, ::PSCHED_EINFEASIBLE (no partition in the result),
 *         ::PSCHED_EINVAL (NULL argument, another model, an E or L group
 *         not first or last), ::PSCHED_EUNSUPPORTED (a schedule whose two
 *         chains hold every layer twice, DualPipe: a layout places each
 *         layer once; dualpipev, one copy in a V, can be handed over;
 *         a plan with the generator option vocab > 0, whose output layer
 *         is split over every device: a psched_search_vocab() candidate),
 *         ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_partition_to_megatron(const psched_partition_result *result,
                                                      const psched_model *model, const char *map,
                                                      char **text, size_t *length);

/** Module names of torchtitan's Llama for psched_partition_to_torchtitan(). */
#define PSCHED_TORCHTITAN_LLAMA_FQN "E=tok_embeddings;t=layers.{i};L=norm,output"

/**
 * @brief A partition as a torchtitan TOML snippet (PIPESCHED_1.1).
 *
 * `[parallelism]`: `pipeline_parallel_degree`, `pipeline_parallel_schedule`
 * (the PyTorch class name; for a schedule PyTorch has no class for,
 * `PipelineScheduleSingle` (v = 1) or `PipelineScheduleMulti` with
 * `pipeline_parallel_schedule_csv`), `num_pp_microbatches` and
 * `pipeline_parallel_module_fqns_per_model_part`; then
 * `[activation_checkpoint]` `mode` none, full or selective (option "op"
 * for the profile's selective variant), with the rule and comments of
 * psched_partition_to_megatron() where the plan's mix differs per stage.
 * @param result as psched_partition_to_megatron().
 * @param model as psched_partition_to_megatron().
 * @param map as psched_partition_to_megatron().
 * @param fqn module-name template "E=NAME;t=NAME;m=NAME;L=NAME[,NAME]",
 *        `{i}` standing for the element's index among its letter; NULL for
 *        #PSCHED_TORCHTITAN_LLAMA_FQN.
 * @param[out] text as psched_partition_to_megatron().
 * @param[out] length as psched_partition_to_megatron().
 * @return as psched_partition_to_megatron(); ::PSCHED_EINVAL also for a
 *         template without an entry for a letter the layout uses.
 */
PSCHED_API psched_status psched_partition_to_torchtitan(const psched_partition_result *result,
                                                        const psched_model *model,
                                                        const char *map, const char *fqn,
                                                        char **text, size_t *length);

/** Version of ::psched_search_options this header describes. */
#define PSCHED_SEARCH_OPTIONS_VERSION 1u

/**
 * Options of psched_plan_search(). Initialize with
 * #PSCHED_SEARCH_OPTIONS_INIT; later versions only append fields.
 */
typedef struct psched_search_options {
    uint32_t version;  /**< #PSCHED_SEARCH_OPTIONS_VERSION */
    double time_limit; /**< seconds for each candidate's partition, > 0 (the
                            time candidates leave goes to a second round of
                            those not proven: see psched_plan_search()) */
    uint32_t flags;    /**< #PSCHED_PARTITION_ALLOW_EMPTY, #PSCHED_SEARCH_ONE_ROUND */
} psched_search_options;

/** Search flag: no second round (psched_plan_search()); each candidate
 *  gets time_limit once, so the call takes about half as long (the choice
 *  for autotuning loops). */
#define PSCHED_SEARCH_ONE_ROUND 0x100u

/** Default search options: 1 s per candidate, no empty stages. */
#define PSCHED_SEARCH_OPTIONS_INIT { PSCHED_SEARCH_OPTIONS_VERSION, 1.0, 0u }

/** Opaque result of psched_plan_search(): the ranked alternatives. */
typedef struct psched_search_result psched_search_result;

/**
 * @brief Find the fastest plan that fits: search schedule × chunks ×
 * partition × recompute.
 *
 * Every candidate schedule is tried with every chunk count v in {1, 2, 4}
 * its generator accepts (only the plan's v when it is not 0), and each
 * (schedule, v) is partitioned with the ILP method (psched_partition()),
 * given @p options->time_limit seconds. The time the candidates did not
 * use (time_limit per candidate), at most as long as that first round
 * took, then goes to a second round: each alternative that fits but is not
 * proven optimal is partitioned again as psched_partition() would (the most chunks first, then the
 * smallest gap), given what is left, at most 5 time_limit, while that is
 * more than 1.5 time_limit; the faster or better proven result is kept
 * (#PSCHED_SEARCH_ONE_ROUND: none). The whole call so
 * takes at most about twice the first round and never more than
 * time_limit per candidate. Each alternative is then measured
 * by the simulator: makespan, bubble ratio and peak memory (parameters
 * plus the simulated activation peak, the largest over devices), and
 * compared with Megatron's even split of the same schedule.
 *
 * Alternatives are ranked: first those that fit (a partition was found, its
 * model bound and its simulated peak are within the memory limit) by
 * makespan, ties in candidate order; then those that do not fit, by the
 * smallest memory they would need; then those whose partition failed
 * (psched_search_error(), e.g. ::PSCHED_EUNSUPPORTED for DualPipe's two
 * chains). So alternative 0 is the answer when psched_search_fits() says
 * so. A (schedule, v) the generator rejects (::PSCHED_EINVAL: wrong v, too
 * few micro-batches, fewer layers than stages) is not an alternative,
 * unless none of a named schedule's chunk counts is accepted: then one
 * alternative records the generator's error.
 *
 * @param model the model.
 * @param plan p, m, comm, memory limit (psched_plan_memory_limit(), bytes),
 *        generator options (e.g. group-size), and v (0: search 1, 2, 4).
 * @param schedules generator names to try, or NULL for every registered
 *        generator.
 * @param schedule_count number of names in @p schedules (0 with NULL).
 * @param options options, or NULL for #PSCHED_SEARCH_OPTIONS_INIT.
 * @param[out] out new result owned by the caller
 *        (psched_search_result_destroy()).
 * @return ::PSCHED_OK (even when nothing fits: see psched_search_fits()),
 *         ::PSCHED_EINVAL (NULL arguments, bad options, no layer, limit <= 0,
 *         an empty name list), ::PSCHED_ENOTFOUND (a name is not registered),
 *         ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_search(const psched_model *model, const psched_plan *plan,
                                            const char *const *schedules, size_t schedule_count,
                                            const psched_search_options *options,
                                            psched_search_result **out);

/** @brief Destroy a search result and every partition it holds (NULL is a
 *  no-op). */
PSCHED_API void psched_search_result_destroy(psched_search_result *result);

/** @brief Number of alternatives. */
PSCHED_API size_t psched_search_count(const psched_search_result *result);

/** @brief Wall-clock seconds the whole search took. */
PSCHED_API double psched_search_solve_time(const psched_search_result *result);

/** @brief Generator name of alternative @p index (owned by the result;
 *  NULL when out of range). */
PSCHED_API const char *psched_search_schedule(const psched_search_result *result, size_t index);

/** @brief Chunks per device v of alternative @p index (0 when out of range). */
PSCHED_API uint32_t psched_search_chunks(const psched_search_result *result, size_t index);

/** @brief The generator option `vocab` of alternative @p index
 *  (PIPESCHED_1.1): 0 for a plain candidate; 1 or 2 for a Vocabulary
 *  Parallelism candidate, which the search adds for every generator that
 *  declares the option when the model has a head group (head, loss or
 *  output) and the plan does not set the option itself. Such a candidate
 *  partitions the model without its head, whose cost and activations become
 *  the S and T passes split over the p devices (docs/schedules.md, "vocab";
 *  the head's parameters, 1/p per device, are not in its memory figures).
 *  0 when out of range. */
PSCHED_API uint32_t psched_search_vocab(const psched_search_result *result, size_t index);

/** @brief ::PSCHED_OK when alternative @p index was partitioned, else the
 *  status its partition failed with (::PSCHED_EINVAL when out of range). */
PSCHED_API psched_status psched_search_error(const psched_search_result *result, size_t index);

/** @brief Message of the failure psched_search_error() reports ("" when
 *  none; owned by the result). */
PSCHED_API const char *psched_search_error_message(const psched_search_result *result,
                                                   size_t index);

/** @brief Solve status of alternative @p index's partition (optimal,
 *  feasible with a gap, infeasible; infeasible also for a failed
 *  alternative or an index out of range). */
PSCHED_API psched_solve_status psched_search_status(const psched_search_result *result,
                                                    size_t index);

/** @brief 1 when alternative @p index fits the memory limit (a partition
 *  was found, its bound and its simulated peak are within the limit), else 0. */
PSCHED_API int psched_search_fits(const psched_search_result *result, size_t index);

/** @brief Simulated makespan (step time) of alternative @p index (NAN when
 *  it has no partition). */
PSCHED_API double psched_search_makespan(const psched_search_result *result, size_t index);

/** @brief Simulated bubble ratio of alternative @p index (NAN when it has
 *  no partition). */
PSCHED_API double psched_search_bubble_ratio(const psched_search_result *result, size_t index);

/** @brief Largest simulated device memory (parameters plus activation
 *  peak) of alternative @p index (NAN when it has no partition). */
PSCHED_API double psched_search_peak_memory(const psched_search_result *result, size_t index);

/** @brief Simulated makespan of Megatron's even split of the same schedule
 *  and v (NAN when the even split does not apply or does not fit). */
PSCHED_API double psched_search_even_makespan(const psched_search_result *result, size_t index);

/** @brief The partition of alternative @p index, with its plan
 *  (psched_partition_plan()); owned by the search result, NULL when the
 *  alternative failed or the index is out of range. */
PSCHED_API const psched_partition_result *psched_search_partition(const psched_search_result *result,
                                                                  size_t index);

/** @} */

/** @defgroup lowering Communication lowering
 *  @{ */

/**
 * @brief Insert SEND_F/RECV_F/SEND_B/RECV_B ops for every dependency that
 * crosses devices, for runtimes with rendezvous point-to-point calls (a
 * send completes only when the peer posts the matching receive). Each RECV
 * goes before the compute op that consumes it, each SEND after the op that
 * produces it; a SEND and a RECV that would otherwise wait on each other are
 * issued as one batched group (#PSCHED_OP_BATCH_NEXT), as Megatron's
 * send_forward_recv_backward does. The compute order is unchanged.
 * psched_validate() checks the result under rendezvous semantics. For
 * runtimes whose sends and receives do not block (PyTorch's isend/irecv),
 * psched_lower_comm_ex() with ::PSCHED_LOWER_ASYNC overlaps transfers with
 * compute instead. Activation copies (OFFLOAD/RELOAD, psched_offload())
 * stay in place: each stays right behind the compute op it follows, ahead
 * of the comm ops lowering puts after that op.
 * @param schedule a valid compute schedule (no comm ops; copies allowed).
 * @param plan costs used to order comm ops (NULL: the schedule's own).
 * @param[out] lowered new schedule owned by the caller.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_EINVALID / ::PSCHED_EDEADLOCK
 *         (the input is not a valid compute schedule), ::PSCHED_EUNSUPPORTED
 *         (an op kind lowering does not handle), ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_lower_comm(const psched_schedule *schedule,
                                           const psched_plan *plan,
                                           psched_schedule **lowered);

/** How the runtime that executes a lowered schedule posts its point-to-point
 *  calls (ABI 1.1). */
typedef enum psched_lower_mode {
    /** Blocking, rendezvous calls: a send completes only when the peer posts
     *  the matching receive; groups (#PSCHED_OP_BATCH_NEXT) are posted and
     *  complete together. psched_lower_comm()'s lowering. */
    PSCHED_LOWER_RENDEZVOUS = 0,
    /** Non-blocking calls (torch.distributed isend/irecv, NCCL's grouped
     *  point-to-point calls): posting a SEND or a RECV never blocks the
     *  device; a compute op waits only for the transfer feeding it, which
     *  completes t_comm after the later of its SEND's and RECV's posts.
     *  Each SEND goes right after its producer and each RECV right after
     *  the receiver's last compute unit ending by the producer's simulated
     *  end, so the transfer overlaps the compute that follows; no groups.
     *  The runtime PyTorch's compute_comms files are written for. */
    PSCHED_LOWER_ASYNC = 1
} psched_lower_mode;

/** Version of ::psched_lower_options this header describes (ABI 1.1). */
#define PSCHED_LOWER_OPTIONS_VERSION 1u

/**
 * Options of psched_lower_comm_ex() (ABI 1.1). Initialize with
 * #PSCHED_LOWER_OPTIONS_INIT; later versions only append fields.
 */
typedef struct psched_lower_options {
    uint32_t version;        /**< #PSCHED_LOWER_OPTIONS_VERSION */
    psched_lower_mode mode;  /**< ::PSCHED_LOWER_RENDEZVOUS or ::PSCHED_LOWER_ASYNC */
} psched_lower_options;

/** Default options: rendezvous mode, psched_lower_comm()'s lowering. */
#define PSCHED_LOWER_OPTIONS_INIT { PSCHED_LOWER_OPTIONS_VERSION, PSCHED_LOWER_RENDEZVOUS }

/**
 * @brief psched_lower_comm() with options (ABI 1.1): with
 * ::PSCHED_LOWER_ASYNC, a lowering for non-blocking runtimes whose
 * transfers overlap compute (see ::psched_lower_mode).
 *
 * The lowered schedule remembers its mode (psched_schedule_lower_mode());
 * psched_validate() and psched_simulate() execute an async lowering under
 * async semantics: SEND and RECV never block, a compute op fed from
 * another device waits for its transfer, which starts once both its SEND
 * and its RECV are posted. Still checked: every rule of the rendezvous
 * validator except blocking (placement, one matching RECV per SEND, both
 * sides of a device pair listing their calls in the same order, each SEND
 * after its producer and each RECV before its consumer), and a compute op
 * whose transfer's SEND is never posted is reported as ::PSCHED_EDEADLOCK
 * naming the cycle of waits. Simulated with the costs used here, an async
 * lowering keeps the compute-only makespan: every transfer starts at its
 * producer's end, as psched_simulate() of the compute schedule assumes
 * (transfers between a device pair are not serialized, as in that model).
 * @param schedule a valid compute schedule (no comm ops).
 * @param plan costs used to place comm ops (NULL: the schedule's own).
 * @param options options, or NULL for #PSCHED_LOWER_OPTIONS_INIT.
 * @param[out] lowered new schedule owned by the caller.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (also for an unknown mode or
 *         version), ::PSCHED_EINVALID / ::PSCHED_EDEADLOCK (the input is
 *         not a valid compute schedule), ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_lower_comm_ex(const psched_schedule *schedule,
                                              const psched_plan *plan,
                                              const psched_lower_options *options,
                                              psched_schedule **lowered);

/**
 * @brief The semantics a schedule's comm ops are executed with (ABI 1.1):
 * ::PSCHED_LOWER_ASYNC for a schedule made by psched_lower_comm_ex() in
 * async mode, ::PSCHED_LOWER_RENDEZVOUS otherwise (compute schedules,
 * psched_lower_comm(), imported files: a file does not record the mode).
 * @param schedule a schedule (NULL: ::PSCHED_LOWER_RENDEZVOUS).
 */
PSCHED_API psched_lower_mode psched_schedule_lower_mode(const psched_schedule *schedule);

/** @} */

/** @defgroup bounds Lower bounds
 *  @{ */

/** Version of ::psched_bound_info this header describes. */
#define PSCHED_BOUND_INFO_VERSION 1
/** Version of ::psched_bound_options this header describes. */
#define PSCHED_BOUND_OPTIONS_VERSION 1
/** psched_bound_options::flags: bound the problem without its memory limit. */
#define PSCHED_BOUND_IGNORE_MEMORY 0x1u
/** psched_bound_options::flags (PIPESCHED_1.1 header): every schedule
 *  bounded holds vocabulary passes (one chain; costs
 *  psched_plan_vocab_cost()), so their work counts: every device runs an S
 *  and a T pass per micro-batch, and its S passes (with the plan's option
 *  `vocab` 1, Vocab-1, its T passes too) end before its last backward.
 *  Without it the bound leaves them out, as it must for a schedule of the
 *  plan that does not hold them; psched_schedule_bound() sets it for a
 *  schedule that holds them. */
#define PSCHED_BOUND_VOCAB_PASSES 0x2u

/** Options of psched_bound() (NULL for the defaults). */
typedef struct psched_bound_options {
    /** Set to #PSCHED_BOUND_OPTIONS_VERSION. */
    uint32_t version;
    /** Zero, #PSCHED_BOUND_IGNORE_MEMORY, #PSCHED_BOUND_VOCAB_PASSES. */
    uint32_t flags;
} psched_bound_options;

/**
 * Lower bounds filled by psched_bound(). The caller sets `version` to
 * #PSCHED_BOUND_INFO_VERSION; later versions only append fields, and the
 * library fills the fields of the version the caller names.
 */
typedef struct psched_bound_info {
    /** Set by the caller to #PSCHED_BOUND_INFO_VERSION. */
    uint32_t version;
    /** Lower bound on the makespan: the largest of the terms below. */
    double makespan;
    /** Lower bound on the span (the zero-bubble papers' figure): `work`. */
    double span;
    /** Per-device work: max over devices of m·Σ(t_F + t_B + t_W) of its stages. */
    double work;
    /** One micro-batch through its chain: every F, every B, the first stage's
     *  W, and t_comm on each edge between devices. */
    double critical_path;
    /** Max over devices of: earliest start of its first F + its work + what
     *  the chain still needs after its last B beyond the W's it can run then. */
    double device_path;
    /** Memory-limit term (0 without a limit or with #PSCHED_BOUND_IGNORE_MEMORY):
     *  at most floor(limit / min mem_F) (stage, micro-batch) pairs are held at
     *  once, each from its F's start to its W's start. */
    double memory;
} psched_bound_info;

/**
 * @brief Lower bounds on makespan and span that hold for EVERY valid
 * schedule of @p plan (any order, any generator), derived in
 * docs/simulator.md ("Lower bounds"). The gap of a simulated schedule is
 * span / bound.span - 1 (or makespan / bound.makespan - 1).
 * @param plan a plan with its chunks and placement set (a schedule's plan,
 *        psched_schedule_plan(), always is).
 * @param options NULL, or options with `version` set.
 * @param[in,out] out set `out->version` first; filled on success.
 * @return ::PSCHED_OK; ::PSCHED_EINVAL (NULL, wrong version, unknown flag,
 *         placement or chunks left to a generator, chains that do not
 *         divide the stages or micro-batches, costs whose sums overflow);
 *         ::PSCHED_EINFEASIBLE (the memory limit is below one
 *         micro-batch's activation on some device); ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_bound(const psched_plan *plan, const psched_bound_options *options,
                                      psched_bound_info *out);

/**
 * @brief psched_bound() of a schedule's plan (PIPESCHED_1.1), counting the
 * schedule's vocabulary passes when it holds them: #PSCHED_BOUND_VOCAB_PASSES
 * is added when some op is ::PSCHED_OP_VOCAB_S and the plan's pass costs
 * (psched_plan_vocab_cost()) are not both zero (passes that take no time
 * change no term). The bound every order of the plan with those passes
 * obeys, so `simulated span / out->span - 1` is this schedule's gap; what
 * `pipesched simulate` and `pipesched bound` print.
 * @param schedule any schedule (compute, lowered or imported).
 * @param options NULL, or options with `version` set; its
 *        #PSCHED_BOUND_IGNORE_MEMORY is honoured, its
 *        #PSCHED_BOUND_VOCAB_PASSES forces the passes in.
 * @param[in,out] out set `out->version` first; filled on success.
 * @return as psched_bound(); ::PSCHED_EINVAL also for a NULL schedule.
 */
PSCHED_API psched_status psched_schedule_bound(const psched_schedule *schedule,
                                               const psched_bound_options *options,
                                               psched_bound_info *out);

/** @} */

/** @defgroup solve Proven schedules
 *  An exact generator (`optimal`) states what it proved about the order it
 *  built: optimal, or feasible with a relative gap to its best lower bound
 *  on the span.
 *  @{ */

/**
 * @brief Record, from a generator, what it proved about the schedule it is
 * building (PIPESCHED_1.1). The schedule carries it:
 * psched_schedule_solve_status().
 * @param builder the builder passed to the generate function.
 * @param status ::PSCHED_SOLVE_OPTIMAL (no valid schedule of the plan has a
 *        smaller span) or ::PSCHED_SOLVE_FEASIBLE.
 * @param gap (span − best lower bound) / span: 0 when optimal, +INFINITY
 *        when no bound is known.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (NULL builder, another status, gap
 *         negative or NaN, or not 0 with ::PSCHED_SOLVE_OPTIMAL).
 */
PSCHED_API psched_status psched_builder_set_solve_status(psched_builder *builder,
                                                         psched_solve_status status, double gap);

/**
 * @brief What the generator proved about a schedule's span (PIPESCHED_1.1).
 * @param schedule the schedule.
 * @param[out] status ::PSCHED_SOLVE_OPTIMAL or ::PSCHED_SOLVE_FEASIBLE (may be NULL).
 * @param[out] gap relative gap to the generator's lower bound (may be NULL).
 * @return ::PSCHED_OK; ::PSCHED_ENOTFOUND when the generator recorded
 *         nothing (every heuristic, imported and lowered schedules);
 *         ::PSCHED_EINVAL (NULL schedule).
 */
PSCHED_API psched_status psched_schedule_solve_status(const psched_schedule *schedule,
                                                      psched_solve_status *status, double *gap);

/**
 * @brief 1 when @p generator is an exact generator (`optimal`): it solves
 * an NP-hard problem, may take up to its time limit on a small plan, and
 * refuses large ones (::PSCHED_EINVAL); 0 otherwise (PIPESCHED_1.1).
 * Sweeps over every generator use it to give exact ones small limits or to
 * skip them.
 */
PSCHED_API int psched_generator_is_exact(const psched_generator *generator);

/** @} */

/** @defgroup costmodel Cost model extensions
 *  Opt-in refinements of the DESIGN §3 cost model (docs/simulator.md, "Cost
 *  model extensions"). A plan that sets none of them simulates exactly as
 *  before; each is copied with the plan and read by psched_simulate().
 *  @{ */

/**
 * @brief Set the time an overlapped F&B pair saves, for every stage
 * (clears per-stage values). A pair of ops joined by
 * #PSCHED_OP_OVERLAP_NEXT, one F and one B or BW, then takes
 * t_F + t_B − s instead of t_F + t_B (DualPipe hides one op's all-to-all
 * under the other's compute); with two stages in the pair the smaller of
 * their savings counts, each scaled by its micro-batch's weight.
 * @param plan the plan.
 * @param saving s, finite with 0 <= s <= min(t_F, t_B) of every stage under
 *        the current costs (psched_simulate() checks again). Default 0.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL (out of range, NULL plan), ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_set_overlap_saving(psched_plan *plan, double saving);

/** @brief Set the overlap saving of one stage (stage < p·v; same range as
 *  psched_plan_set_overlap_saving() against that stage's costs).
 *  @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_ENOMEM. */
PSCHED_API psched_status psched_plan_set_stage_overlap_saving(psched_plan *plan, uint32_t stage,
                                                              double saving);

/** @brief Overlap saving of a stage (0 unless set; NAN for a NULL plan or
 *  stage >= S). */
PSCHED_API double psched_plan_stage_overlap_saving(const psched_plan *plan, uint32_t stage);

/**
 * @brief Give micro-batch k the weight w_k: its F, B and W times, its
 * memory deltas and the bytes it sends all scale by w_k (variable sequence
 * lengths). Micro-batches are numbered over all chains: with two chains,
 * micro-batch k of chain c is c·m/2 + k.
 * @param plan the plan.
 * @param weights @p count finite values > 0 (copied), or NULL with count 0
 *        to go back to every w_k = 1.
 * @param count 0, or exactly the plan's micro-batch count m (a later change
 *        of m makes psched_simulate() refuse the plan until they match).
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_set_microbatch_weights(psched_plan *plan,
                                                            const double *weights,
                                                            uint32_t count);

/** @brief Weight of micro-batch @p microbatch (numbered over all chains; 1
 *  unless set; NAN for a NULL plan or microbatch >= m). */
PSCHED_API double psched_plan_microbatch_weight(const psched_plan *plan, uint32_t microbatch);

/**
 * @brief Set the bytes every stage sends to its neighbour: @p forward
 * (activations of its F, to the next stage) and @p backward (gradients of
 * its B or BW, to the stage before), both finite and >= 0 (clears per-stage
 * values). Default 0: transfers cost only t_comm. A transfer between two
 * devices then takes the link's latency + bytes·w_k / bandwidth
 * (psched_plan_set_topology()), plus t_comm.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_set_comm_bytes(psched_plan *plan, double forward,
                                                    double backward);

/** @brief Set the bytes one stage sends forward and backward (stage < p·v).
 *  @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_ENOMEM. */
PSCHED_API psched_status psched_plan_set_stage_comm_bytes(psched_plan *plan, uint32_t stage,
                                                          double forward, double backward);

/** @brief Read the bytes a stage sends forward and backward (either pointer
 *  may be NULL). @return ::PSCHED_OK or ::PSCHED_EINVAL (stage >= S). */
PSCHED_API psched_status psched_plan_stage_comm_bytes(const psched_plan *plan, uint32_t stage,
                                                      double *forward, double *backward);

/**
 * @brief Describe the links between devices. Devices d and e share a node
 * when d / devices_per_node == e / devices_per_node (devices_per_node 0: all
 * on one node). Each device has one outgoing link towards higher-numbered
 * devices and one towards lower-numbered ones; the transfers leaving it in
 * one direction queue on that link in issue order (a send-side model) while
 * compute goes on. A transfer holds its link for bytes / bandwidth and
 * arrives latency + t_comm later.
 * @param plan the plan.
 * @param devices_per_node devices sharing a node (0: all on one node).
 * @param intra_bandwidth, inter_bandwidth bytes per time unit, > 0
 *        (INFINITY, the default: bytes cost nothing).
 * @param intra_latency, inter_latency finite, >= 0 (default 0).
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_set_topology(psched_plan *plan, uint32_t devices_per_node,
                                                  double intra_bandwidth, double intra_latency,
                                                  double inter_bandwidth, double inter_latency);

/**
 * @brief Set the bandwidth of every device's copy stream to the host, in
 * memory units (the unit of the memory deltas) per time unit: an OFFLOAD or
 * RELOAD of (stage s, micro-batch k) takes mem_F[s]·w_k / bandwidth.
 * @param plan the plan.
 * @param bandwidth > 0; INFINITY (the default): copies take no time.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_set_pcie_bandwidth(psched_plan *plan, double bandwidth);

/** @brief Copy-stream bandwidth (INFINITY unless set; NAN for NULL). */
PSCHED_API double psched_plan_pcie_bandwidth(const psched_plan *plan);

/**
 * @brief Times of the vocabulary-parallel passes (PIPESCHED_1.1): one S pass
 * and one T pass of one micro-batch on one device's vocabulary shard
 * (the output layer's whole cost divided by p), finite and >= 0. Scaled by
 * the micro-batch weights like every compute op. Default 0 and 0.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL naming the value, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_set_vocab_cost(psched_plan *plan, double s, double t);

/** @brief Read the S and T pass times (either pointer may be NULL).
 *  @return ::PSCHED_OK or ::PSCHED_EINVAL (plan NULL). */
PSCHED_API psched_status psched_plan_vocab_cost(const psched_plan *plan, double *s, double *t);

/**
 * @brief Memory changes of the S and T passes on their device (PIPESCHED_1.1),
 * finite, in the unit of the plan's memory deltas; default +0 and 0. The
 * S pass keeps its shard's logits until the T pass frees them, so a
 * consistent pair is (+a, -a).
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_set_vocab_mem(psched_plan *plan, double s, double t);

/** @brief Read the S and T memory changes (either pointer may be NULL).
 *  @return ::PSCHED_OK or ::PSCHED_EINVAL (plan NULL). */
PSCHED_API psched_status psched_plan_vocab_mem(const psched_plan *plan, double *s, double *t);

/**
 * @brief Bytes every device contributes to collective @p index of each
 * micro-batch (PIPESCHED_1.1; index < #PSCHED_MAX_COLLECTIVES, bytes finite
 * and >= 0, default 0). A collective takes t_comm + the group's link latency
 * + bytes · w_k / the link's bandwidth, the link being the intra-node one
 * when every device sits on one node of psched_plan_set_topology() and the
 * inter-node one otherwise (without a topology: t_comm alone).
 * @return ::PSCHED_OK, ::PSCHED_EINVAL naming the value, ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_plan_set_collective_bytes(psched_plan *plan, uint32_t index,
                                                          double bytes);

/** @brief Bytes of collective @p index (0 when unset, NAN for a NULL plan or
 *  an index >= #PSCHED_MAX_COLLECTIVES). */
PSCHED_API double psched_plan_collective_bytes(const psched_plan *plan, uint32_t index);

/** Which activations psched_offload() moves to the host. */
typedef enum psched_offload_policy {
    /** every (stage, micro-batch) */
    PSCHED_OFFLOAD_ALL = 1,
    /** the pairs whose activation is held long enough to hide the round trip:
     *  lifespan (backward start − forward end, simulated without offload)
     *  >= 2 · copy time */
    PSCHED_OFFLOAD_SELECTIVE = 2,
    /** the longest-held pairs of each device, one at a time, until the
     *  device's simulated peak is <= the budget (or nothing is left) */
    PSCHED_OFFLOAD_BUDGET = 3
} psched_offload_policy;

/**
 * @brief Activation offload (PipeOffload, arXiv 2503.01328): a copy of
 * @p schedule with an OFFLOAD after the F of every chosen (stage,
 * micro-batch) and a RELOAD one compute op ahead of its backward, so the
 * copy back overlaps that op. The compute order is unchanged. Copies run on
 * a per-device copy stream, one at a time, concurrently with compute;
 * memory is released at an OFFLOAD's end and taken at a RELOAD's start; the
 * backward waits for its RELOAD (docs/simulator.md, "Activation offload").
 * @param schedule a valid compute schedule without comm or copy ops.
 * @param costs costs, memory and PCIe bandwidth (NULL: the schedule's plan).
 * @param policy a ::psched_offload_policy.
 * @param budget peak memory per device for ::PSCHED_OFFLOAD_BUDGET (> 0,
 *        in memory units); ignored otherwise.
 * @param[out] out new schedule owned by the caller.
 * @return ::PSCHED_OK, ::PSCHED_EINVAL, ::PSCHED_EINVALID / ::PSCHED_EDEADLOCK
 *         (the input is not valid), ::PSCHED_EUNSUPPORTED (comm or copy ops
 *         in the input), ::PSCHED_ENOMEM.
 */
PSCHED_API psched_status psched_offload(const psched_schedule *schedule, const psched_plan *costs,
                                        psched_offload_policy policy, double budget,
                                        psched_schedule **out);

/** @brief Read the topology (any pointer may be NULL; the defaults are
 *  0, INFINITY, 0, INFINITY, 0). @return ::PSCHED_OK or ::PSCHED_EINVAL. */
PSCHED_API psched_status psched_plan_topology(const psched_plan *plan, uint32_t *devices_per_node,
                                              double *intra_bandwidth, double *intra_latency,
                                              double *inter_bandwidth, double *inter_latency);

/** @} */

#ifdef __cplusplus
}
#endif

#endif /* PIPESCHED_H */
