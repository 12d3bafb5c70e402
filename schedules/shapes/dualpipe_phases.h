/* The eight phases of DeepSeek's DualPipe as one device runs them, shared by
 * dualpipev (one V-shaped pipeline) and dualpipe (two half pipelines, the
 * second the mirror of the first). */
#ifndef PSCHED_DUALPIPE_PHASES_H
#define PSCHED_DUALPIPE_PHASES_H

#include "internal.h"

/* Where one device sits in its (half) pipeline. Phase 0 is the stage whose
 * forwards enter first on this device (DualPipe's "phase 0"), phase 1 the
 * stage it runs for the other direction. */
typedef struct psched_dualpipe_device {
    uint32_t device;
    uint32_t rank;     /* position along the half pipeline, 0 = where phase 0 enters */
    uint32_t ranks;    /* devices in the half pipeline */
    uint32_t mbs;      /* micro-batches per direction, >= 2 * ranks */
    uint32_t stage[2]; /* stage of phase 0 and of phase 1 */
} psched_dualpipe_device;

/* Appends the device's ops: (1) 2(P-r-1) F0; (2) r+1 (F0, F1); (3) P-r-1
 * (B1 split, its W, F1); (4) M-2P+r+1 steps of (F0;BW1), (F1;BW0) overlapped,
 * the very first pair plain on the middle device r = P-1; (5) P-r-1 steps of
 * (BW1, (F1;BW0)); (6) r+1 steps of (backward 1, backward 0), split from step
 * (r+1)/2 on; (7) P-r-1 (queued W, B0 split); (8) r+1 queued W. Queued W
 * run in FIFO order.
 * Returns the builder's status or PSCHED_ENOMEM. */
PSCHED_INTERNAL psched_status psched__dualpipe_phases(psched_builder *b,
                                                      const psched_dualpipe_device *dev);

/* Checks shared by dualpipev and dualpipe: v = 2, V-shape placement,
 * m >= 2p. `name` is the generator's, for the message. */
PSCHED_INTERNAL psched_status psched__dualpipe_check(const psched_plan *plan, const char *name);

/* The placement every V-shaped or two-chain generator (dualpipev, dualpipe,
 * chimera) needs: v = 2 and the V-shape map, under which a two-chain plan
 * puts chain 0's stage s on device s and chain 1's stage s on device
 * p-1-s. `name` is the generator's, for the message. */
PSCHED_INTERNAL psched_status psched__check_vshape_v2(const psched_plan *plan, const char *name);

#endif
