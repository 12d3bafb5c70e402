/* 1F1B (PipeDream-flush, Megatron's non-interleaved schedule): device d
 * warms up with min(m, p-d-1) forwards, then alternates one forward and one
 * full backward, then drains the remaining backwards.
 *
 * Option vocab=1|2 adds Vocabulary Parallelism (shapes/vocab.h): the
 * warm-up grows by one forward per barrier the last stage's backward waits
 * for after the broadcast (Vocab-1: 2, Vocab-2: 1), which the paper's
 * p + 2 and p + 1 micro-batches of activation memory count. */
#include "shapes/phases.h"
#include "shapes/vocab.h"

static psched_status check(const psched_plan *plan)
{
    return psched__check_chunks(plan, 1, 1, "1f1b");
}

static psched_status base(const psched_plan *plan, psched_builder *b)
{
    uint32_t p = psched_plan_devices(plan), m = psched_plan_microbatches(plan);
    uint32_t vocab = psched__vocab_of(plan);
    size_t extra = vocab ? 3 - vocab : 0;
    psched_seq mbs = psched__seq_grouped(m, 1, m);
    psched_status st = PSCHED_OK;
    /* p-d-1 forwards are exactly what is in flight downstream of device d
     * when the first backward reaches it. */
    for (uint32_t d = 0; d < p && st == PSCHED_OK; d++)
        st = psched__emit_1f1b(b, d, &mbs, &mbs, (size_t)(p - d - 1) + extra, PSCHED_OP_BW);
    return st;
}

static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t vocab = psched__vocab_of(plan);
    return vocab ? psched__vocab_generate(plan, b, vocab, base) : base(plan, b);
}

/* PyTorch's (and torchtitan's) class name for this schedule. */
static const char *const aliases[] = {"1F1B", NULL};

const psched_generator psched_gen_1f1b = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = "1f1b",
    .description = "1F1B (PipeDream-flush): "
                   "warm-up forwards, then one forward / one backward, then drain",
    .constraints = "loop placement, v = 1; option vocab 0|1|2 (Vocabulary Parallelism)",
    .placement = PSCHED_PLACEMENT_LOOP,
    .default_chunks = 1,
    .chains = 1,
    .check = check,
    .generate = generate,
    .aliases = aliases,
    .options = psched__vocab_option,
    .option_count = 1,
};
