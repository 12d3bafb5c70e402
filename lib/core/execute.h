/* The compute-op half of the execution engine (execute.c), shared with the
 * rendezvous engine for lowered schedules (rendezvous.c) and with comm
 * lowering (lower.c): one place checks counts, placement and dependencies
 * of compute ops and names ops in messages. Private to lib/. */
#ifndef PSCHED_EXECUTE_H
#define PSCHED_EXECUTE_H

#include "internal.h"

#include <stdio.h>

/* "no op" in the position index and in wait slots */
#define PSCHED_EXEC_NONE UINT32_MAX

/* Slots of a (stage, micro-batch) cell; equal to the op kinds F, B, W, BW. */
enum { PSCHED_SLOT_F, PSCHED_SLOT_B, PSCHED_SLOT_W, PSCHED_SLOT_BW, PSCHED_SLOTS };

/* Per-stage facts the hot loops read instead of recomputing them from the
 * plan (placement switch, chain divisions, per-stage cost lookup). */
#define PSCHED_EXEC_FIRST 0x1u /* first stage of its chain: F has no input */
#define PSCHED_EXEC_LAST 0x2u  /* last stage of its chain: B has no input */

typedef struct psched_exec {
    const psched_schedule *s;
    const psched_plan *plan;  /* shape */
    const psched_plan *costs; /* times */
    uint32_t p, S, mbs;
    bool comm_ok;       /* comm ops are skipped by the compute checks, not refused */
    bool own_times;     /* start/end were allocated here */
    bool deps_checked;  /* every dependency is known to run (setup's pass 2 ran) */
    /* [(mb*S + stage)*PSCHED_SLOTS + slot] -> global op index: the cells of
     * one micro-batch are adjacent, so an op, its input from the stage
     * before and its consumer on the stage after share cache lines */
    uint32_t *pos;
    uint32_t *stage_device;
    uint8_t *stage_flags;   /* PSCHED_EXEC_FIRST / PSCHED_EXEC_LAST per stage */
    double *stage_cost;     /* [stage*PSCHED_SLOTS + kind]: F, B, W, BW times */
    /* cost model extensions (costmodel.c), NULL/false when not set: */
    const double *weight;   /* [chain*mbs + mb]: w_k of the costs plan */
    double *overlap;        /* [stage]: what an overlapped F&B pair saves */
    uint32_t per;           /* stages per chain */
    bool links;             /* transfers by bytes and links: arrive[] holds times */
    double *arrive;         /* [g]: when op g's output reaches its consumer's device */
    double *link_free;      /* [2d + (towards lower devices)]: when the link is free */
    double *leave_out;      /* caller's [g]: when op g's output left, or NULL */
    /* activation copies (OFFLOAD/RELOAD), NULL when the schedule has none: */
    uint32_t *copy_pos;     /* [(mb*S + stage)*2 + kind - OFFLOAD] -> global op index */
    double *copy_free;      /* [d]: when device d's copy stream is free */
    /* collectives and vocabulary passes (collective.c), NULL when none: */
    struct psched_coll *coll;
    double *start, *end; /* per op; NULL when not timed (validation only) */
    size_t *cursor;     /* next op per device (global index); op g of device d ran iff
                           g < cursor[d] */
    double *free_at;
    uint32_t *waiting;  /* global op index a device is parked on, or NONE */
    uint32_t *queue;    /* ring of devices ready to run */
    bool *queued;
    uint32_t qhead, qlen;
} psched_exec;

/* Allocates the engine state for `s` (start/end are the caller's arrays,
 * or allocated when either is NULL), then checks the compute ops and the
 * activation copies: known kinds (comm ops skipped when comm_ok, else
 * EUNSUPPORTED), placement, duplicates, pairs, every dependency runs,
 * counts, copies in OFFLOAD/RELOAD pairs. On failure the state is already
 * freed. */
PSCHED_INTERNAL psched_status psched__exec_setup(psched_exec *x, const psched_schedule *s,
                                                 const psched_plan *costs, double *start,
                                                 double *end, bool comm_ok);
/* Runs every device in order (compute schedules only); EDEADLOCK/EINVALID
 * as psched__execute. */
PSCHED_INTERNAL psched_status psched__exec_run(psched_exec *x);
PSCHED_INTERNAL void psched__exec_free(psched_exec *x);

/* Compute time of one op under x->costs (its micro-batch's weight included). */
PSCHED_INTERNAL double psched__exec_cost(const psched_exec *x, const psched_op *o);
/* Time of the unit [g, g + n) of the op array (n = 2: an overlapped pair,
 * the sum of its ops less the pair's overlap saving). */
PSCHED_INTERNAL double psched__exec_unit_cost(const psched_exec *x, const psched_op *ops, size_t g,
                                              size_t n);
/* Device d into the run queue (once). Inline, as psched__exec_describe()
 * below: collective.c, which the engine calls, uses both, and calls back
 * into execute.c would close a circle between the two files. */
static inline void psched__exec_enqueue(psched_exec *x, uint32_t d)
{
    if (x->queued[d])
        return;
    x->queued[d] = true;
    x->queue[(x->qhead + x->qlen++) % x->p] = d;
}

/* EDEADLOCK naming the cycle of waiting devices: device d is stuck at op
 * at[d] and waits for op x->waiting[d] of another device. */
PSCHED_INTERNAL psched_status psched__exec_deadlock(psched_exec *x, const size_t *at);

/* ---- collectives and vocabulary passes (collective.c) ---- */
typedef struct psched_coll psched_coll;
/* Pass 1 for a VOCAB_S, VOCAB_T or COLLECTIVE op g of device d. */
PSCHED_INTERNAL psched_status psched__coll_index(psched_exec *x, uint32_t d, size_t g);
/* After pass 3: one order of collectives (EDEADLOCK naming the devices),
 * the vocabulary passes' counts and same-device orders. */
PSCHED_INTERNAL psched_status psched__coll_check(psched_exec *x);
/* Runs op g (a vocabulary pass or collective) of device d; false when d
 * parks on a collective that has not run. */
PSCHED_INTERNAL bool psched__coll_run(psched_exec *x, uint32_t d, size_t g);
/* The last stage's backward o waits for the vocabulary layer's last
 * collective of its micro-batch; false when d parks on it. */
PSCHED_INTERNAL bool psched__coll_backward_ready(psched_exec *x, uint32_t d, const psched_op *o,
                                                 double *ready);
/* Compute time of a vocabulary pass (its micro-batch's weight included);
 * 0 for a collective, which takes no compute time. */
PSCHED_INTERNAL double psched__coll_op_cost(const psched_exec *x, const psched_op *o);
/* Device whose list holds op g (binary search of the offsets). */
PSCHED_INTERNAL uint32_t psched__coll_device(const psched_schedule *s, size_t g);

/* "device 1 op 7 (3I2)" for global op index g. */
static inline void psched__exec_describe(const psched_exec *x, size_t g, char *buf, size_t size)
{
    const psched_op *o = &x->s->ops[g];
    uint32_t d = o->kind >= PSCHED_OP_VOCAB_S ? psched__coll_device(x->s, g)
                                              : x->stage_device[o->stage];
    char t[48];
    psched__op_text(o, t, sizeof t);
    snprintf(buf, size, "device %u op %zu (%s)", d, g - x->s->offset[d], t);
}
PSCHED_INTERNAL void psched__coll_free(psched_coll *c);
/* Times of the activation copy g of device d (OFFLOAD/RELOAD) issued with
 * its input ended and the device at `ready`: it starts when the device's
 * copy stream is free too and takes mem_F·w_k / PCIe bandwidth there. */
PSCHED_INTERNAL void psched__exec_copy_at(psched_exec *x, uint32_t d, size_t g, double ready);

/* Whether an op kind is an activation copy (runs on the copy stream). */
static inline bool psched__is_copy(uint8_t kind)
{
    return kind == PSCHED_OP_OFFLOAD || kind == PSCHED_OP_RELOAD;
}

/* Global index of the OFFLOAD or RELOAD of a (stage, micro-batch), or NONE
 * (also when the schedule has no copies). */
static inline uint32_t psched__exec_copy(const psched_exec *x, uint32_t stage, uint32_t mb,
                                         uint8_t kind)
{
    if (!x->copy_pos)
        return PSCHED_EXEC_NONE;
    return x->copy_pos[((size_t)mb * x->S + stage) * 2 + (kind - PSCHED_OP_OFFLOAD)];
}

/* The fast path of comm lowering (lower_fast.c): true with *lowered set to
 * exactly what the general rendezvous lowering gives, or false (no error
 * set) when the schedule is not its case; costs NULL: the schedule's. */
PSCHED_INTERNAL bool psched__lower_fast(const psched_schedule *s, const psched_plan *costs,
                                        psched_schedule **lowered);
/* The fast path of psched_validate() for a lowered schedule
 * (rendezvous_fast.c): true when the rendezvous engine would find it
 * valid; false (no error set) when it is not, or is not its case. */
PSCHED_INTERNAL bool psched__rendezvous_fast_check(const psched_schedule *s);
/* psched_lower_comm_ex() without the fast path (tests compare the two). */
PSCHED_INTERNAL psched_status psched__lower_comm_general(const psched_schedule *s,
                                                         const psched_plan *costs,
                                                         const psched_lower_options *options,
                                                         psched_schedule **lowered);

/* Global index of the op of a (stage, micro-batch, slot), or NONE. */
static inline uint32_t psched__exec_at(const psched_exec *x, uint32_t stage, uint32_t mb,
                                       uint32_t slot)
{
    return x->pos[((size_t)mb * x->S + stage) * PSCHED_SLOTS + slot];
}

/* The backward (B, else BW) of a (stage, micro-batch), or NONE. */
static inline uint32_t psched__exec_backward(const psched_exec *x, uint32_t stage, uint32_t mb)
{
    uint32_t b = psched__exec_at(x, stage, mb, PSCHED_SLOT_B);
    return b != PSCHED_EXEC_NONE ? b : psched__exec_at(x, stage, mb, PSCHED_SLOT_BW);
}

/* DESIGN §2 dependencies of a compute op as global indices (NONE for one
 * that never runs); returns how many (0..2). */
static inline int psched__exec_deps(const psched_exec *x, const psched_op *o, uint32_t dep[2])
{
    int n = 0;
    uint32_t s = o->stage, k = o->microbatch;
    switch (o->kind) {
    case PSCHED_OP_F:
        if (!(x->stage_flags[s] & PSCHED_EXEC_FIRST))
            dep[n++] = psched__exec_at(x, s - 1, k, PSCHED_SLOT_F);
        break;
    case PSCHED_OP_B:
    case PSCHED_OP_BW:
        dep[n++] = psched__exec_at(x, s, k, PSCHED_SLOT_F);
        if (!(x->stage_flags[s] & PSCHED_EXEC_LAST))
            dep[n++] = psched__exec_backward(x, s + 1, k);
        break;
    case PSCHED_OP_W:
        dep[n++] = psched__exec_at(x, s, k, PSCHED_SLOT_B);
        break;
    }
    return n;
}

#endif
