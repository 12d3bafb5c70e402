/* The names of op kinds and placements: the library's one table of each.
 * Formats, messages, the CLI and the bindings print through these two
 * functions, so adding an op kind (or a placement) is one row here. */
#include "internal.h"

#include <stdio.h>

const char *psched_op_kind_str(psched_op_kind kind, psched_naming naming)
{
    /* Row per kind in enum order: this library's name, PyTorch's. */
    static const char *const names[][2] = {
        [PSCHED_OP_F] = {"F", "F"},
        [PSCHED_OP_B] = {"B", "I"},
        [PSCHED_OP_W] = {"W", "W"},
        [PSCHED_OP_BW] = {"BW", "B"},
        [PSCHED_OP_SEND_F] = {"SEND_F", "SEND_F"},
        [PSCHED_OP_RECV_F] = {"RECV_F", "RECV_F"},
        [PSCHED_OP_SEND_B] = {"SEND_B", "SEND_B"},
        [PSCHED_OP_RECV_B] = {"RECV_B", "RECV_B"},
        [PSCHED_OP_OFFLOAD] = {"OFFLOAD", "OFFLOAD"},
        [PSCHED_OP_RELOAD] = {"RELOAD", "RELOAD"},
        [PSCHED_OP_VOCAB_S] = {"VOCAB_S", "VOCAB_S"},
        [PSCHED_OP_VOCAB_T] = {"VOCAB_T", "VOCAB_T"},
        [PSCHED_OP_COLLECTIVE] = {"COLLECTIVE", "COLLECTIVE"},
    };
    if ((unsigned)kind >= sizeof names / sizeof names[0] ||
        (naming != PSCHED_NAMING_PIPESCHED && naming != PSCHED_NAMING_PYTORCH))
        return NULL;
    return names[kind][naming];
}

const char *psched_placement_str(psched_placement placement)
{
    static const char *const names[] = {
        [PSCHED_PLACEMENT_AUTO] = "auto",
        [PSCHED_PLACEMENT_LOOP] = "loop",
        [PSCHED_PLACEMENT_VSHAPE] = "vshape",
        [PSCHED_PLACEMENT_CUSTOM] = "custom",
    };
    if ((unsigned)placement >= sizeof names / sizeof names[0])
        return NULL;
    return names[placement];
}

int psched__op_text(const psched_op *op, char *buf, size_t size)
{
    const char *k = psched_op_kind_str((psched_op_kind)op->kind, PSCHED_NAMING_PYTORCH);
    return snprintf(buf, size, "%u%s%u", op->stage, k ? k : "?", op->microbatch);
}

const char *psched__kind_name(uint8_t kind)
{
    const char *k = psched_op_kind_str((psched_op_kind)kind, PSCHED_NAMING_PIPESCHED);
    return k ? k : "?";
}
