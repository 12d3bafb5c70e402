/* V-Half: the building-block schedule of "Pipeline Parallelism with
 * Controllable Memory" (Qi et al. 2024) whose peak activation memory is
 * about half of 1F1B's: 2*floor((p+2)/2) chunk activations per device
 * (m large enough to fill the pipeline). Device i's first block:
 *     chunk-0 F at 2i, chunk-1 F at 3p-2-i,
 *     chunk-1 B at 3p+d+2i-1, chunk-0 B at 6p+d-i-2,   d = 3 if p is even else 0,
 * micro-batch k 6k slots later; vblock.c does the rest. */
#include "shapes/vblock.h"
#include "shapes/vocab.h"

#define NAME "v-half"

static void pattern(uint32_t devices, uint32_t device, int64_t slot[4])
{
    int64_t p = devices, i = device, d = devices % 2 == 0 ? 3 : 0;
    slot[0] = 2 * i;
    slot[1] = 3 * p - 2 - i;
    slot[2] = 3 * p + d + 2 * i - 1;
    slot[3] = 6 * p + d - i - 2;
}

static psched_status check(const psched_plan *plan)
{
    return psched__vblock_check(plan, NAME);
}

static psched_status base(const psched_plan *plan, psched_builder *b)
{
    return psched__vblock_generate(plan, b, pattern);
}

/* vocab=1|2: the paper's V-Half with Vocabulary Parallelism. The V's last
 * stage sits on device 0, whose blocks already leave room between a
 * micro-batch's last F and its B; the passes are woven into that order. */
static psched_status generate(const psched_plan *plan, psched_builder *b)
{
    uint32_t vocab = psched__vocab_of(plan);
    return vocab ? psched__vocab_generate(plan, b, vocab, base) : base(plan, b);
}

const psched_generator psched_gen_v_half = {
    .abi_version = PSCHED_GENERATOR_ABI,
    .name = NAME,
    .description = "V-Half (controllable-memory V-shape building blocks): memory about M/2, "
                   "2*floor((p+2)/2) chunk activations",
    .constraints = "vshape placement, v = 2; any p >= 1, m >= 1; option vocab 0|1|2 "
                   "(Vocabulary Parallelism)",
    .placement = PSCHED_PLACEMENT_VSHAPE,
    .default_chunks = 2,
    .chains = 1,
    .check = check,
    .generate = generate,
    .options = psched__vocab_option,
    .option_count = 1,
};
