/* The compute-op half of the execution engine (execute.c), shared with the
 * rendezvous engine for lowered schedules (rendezvous.c) and with comm
 * lowering (lower.c): one place checks counts, placement and dependencies
 * of compute ops and names ops in messages. Private to lib/. */
#ifndef PSCHED_EXECUTE_H
#define PSCHED_EXECUTE_H

#include "internal.h"

/* "no op" in the position index and in wait slots */
#define PSCHED_EXEC_NONE UINT32_MAX

enum { PSCHED_SLOT_F, PSCHED_SLOT_B, PSCHED_SLOT_W, PSCHED_SLOT_BW, PSCHED_SLOTS };

typedef struct psched_exec {
    const psched_schedule *s;
    const psched_plan *plan;  /* shape */
    const psched_plan *costs; /* times */
    uint32_t p, S, mbs;
    bool comm_ok;       /* comm ops are skipped by the compute checks, not refused */
    bool own_times;     /* start/end were allocated here */
    uint32_t *pos;      /* [(stage*mbs + mb)*PSCHED_SLOTS + slot] -> global op index */
    uint32_t *stage_device;
    double *start, *end; /* per op, -1 until it has run */
    size_t *cursor;     /* next op per device (global index) */
    double *free_at;
    uint32_t *waiting;  /* global op index a device is parked on, or NONE */
    uint32_t *queue;    /* ring of devices ready to run */
    bool *queued;
    uint32_t qhead, qlen;
} psched_exec;

/* Allocates the engine state for `s` (start/end are the caller's arrays,
 * or allocated when either is NULL), then checks the compute ops: known
 * kinds (comm ops skipped when comm_ok, else EUNSUPPORTED), placement,
 * duplicates, pairs, every dependency runs, counts. On failure the state
 * is already freed. */
PSCHED_INTERNAL psched_status psched__exec_setup(psched_exec *x, const psched_schedule *s,
                                                 const psched_plan *costs, double *start,
                                                 double *end, bool comm_ok);
/* Runs every device in order (compute schedules only); EDEADLOCK/EINVALID
 * as psched__execute. */
PSCHED_INTERNAL psched_status psched__exec_run(psched_exec *x);
PSCHED_INTERNAL void psched__exec_free(psched_exec *x);

/* "device 1 op 7 (3I2)" for global op index g */
PSCHED_INTERNAL void psched__exec_describe(const psched_exec *x, size_t g, char *buf,
                                           size_t size);
/* DESIGN §2 dependencies of a compute op as global indices (NONE for one
 * that never runs); returns how many (0..2). */
PSCHED_INTERNAL int psched__exec_deps(const psched_exec *x, const psched_op *o, uint32_t dep[2]);
/* Compute time of one op under x->costs. */
PSCHED_INTERNAL double psched__exec_cost(const psched_exec *x, const psched_op *o);
PSCHED_INTERNAL void psched__exec_enqueue(psched_exec *x, uint32_t d);
/* EDEADLOCK naming the cycle of waiting devices: device d is stuck at op
 * at[d] and waits for op x->waiting[d] of another device. */
PSCHED_INTERNAL psched_status psched__exec_deadlock(psched_exec *x, const size_t *at);

/* Global index of the op of a (stage, micro-batch, slot), or NONE. */
static inline uint32_t psched__exec_at(const psched_exec *x, uint32_t stage, uint32_t mb,
                                       uint32_t slot)
{
    return x->pos[((size_t)stage * x->mbs + mb) * PSCHED_SLOTS + slot];
}

/* The backward (B, else BW) of a (stage, micro-batch), or NONE. */
static inline uint32_t psched__exec_backward(const psched_exec *x, uint32_t stage, uint32_t mb)
{
    uint32_t b = psched__exec_at(x, stage, mb, PSCHED_SLOT_B);
    return b != PSCHED_EXEC_NONE ? b : psched__exec_at(x, stage, mb, PSCHED_SLOT_BW);
}

#endif
