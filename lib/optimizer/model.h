/* The model the optimizer partitions (model.c): its layer groups and
 * their recompute variants. Depends on nothing else in the optimizer; the
 * partition problem (optimizer.h) reads it. Not installed. */
#ifndef PSCHED_MODEL_H
#define PSCHED_MODEL_H

#include "internal.h"

#define PSCHED__RECOMPUTE_KINDS 3

/* One recompute variant of a layer: activation bytes kept per micro-batch
 * and time added to the backward for inputs. */
typedef struct psched__variant {
    double act, extra;
    bool present;
} psched__variant;

typedef struct psched__group {
    char type[32];
    uint32_t count;
    double f, b, w, param;
    psched__variant variant[PSCHED__RECOMPUTE_KINDS]; /* indexed by psched_recompute */
} psched__group;

struct psched_model {
    psched__group *groups;
    uint32_t group_count, layer_count;
};

#endif
