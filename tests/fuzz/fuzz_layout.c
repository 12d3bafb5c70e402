/* Fuzz target: psched_partition_from_layout, the reader of Megatron-LM's
 * `--pipeline-model-parallel-layout` text, and the emitters it feeds.
 *
 * Input: byte 0 picks p (a digit 1-4, else 1 + byte % 4) and the block
 * size; byte 1 ('a' + k, k = 0..15) picks the schedule (k & 1:
 * interleaved, else 1f1b), the recompute option ((k >> 1) & 3: none,
 * selective, full uniform, full block) and the memory limit (k & 8: 300
 * bytes, else none); the rest is the layout. The model is fixed:
 * embedding, 8 transformer layers with selective and full variants, one
 * MTP layer, head (letters E t*8 m L).
 *
 * Invariants: a refusal leaves the output NULL and says why; a layout
 * that reads is written back by psched_partition_to_megatron(), whose
 * layout and recompute flags read again to the same stages and the same
 * per-layer choices (a setting read from Megatron-LM's options is always
 * expressible, so no "nearest" comment may appear), and
 * psched_partition_to_torchtitan() succeeds. */
#include "fuzz_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static psched_model *model;

static void make_model(void)
{
    if (psched_model_create(&model) != PSCHED_OK ||
        psched_model_add_layers(model, "embedding", 1, 0.5, 0.5, 0, 1, 100) != PSCHED_OK ||
        psched_model_add_layers(model, "layer", 8, 1, 1, 1, 4, 10) != PSCHED_OK ||
        psched_model_set_recompute(model, 1, PSCHED_RECOMPUTE_SELECTIVE, 2, 0.25) !=
            PSCHED_OK ||
        psched_model_set_recompute(model, 1, PSCHED_RECOMPUTE_FULL, 0.5, 1) != PSCHED_OK ||
        psched_model_add_layers(model, "mtp", 1, 1, 1, 1, 4, 10) != PSCHED_OK ||
        psched_model_add_layers(model, "head", 1, 2, 2, 2, 2, 5) != PSCHED_OK)
        fuzz_fail("building the model", PSCHED_EINVAL);
}

/* The value of `flag` on a line of `text` that is not a comment, copied
 * into out (at most cap - 1 characters); false when absent. */
static bool flag_value(const char *text, const char *flag, char *out, size_t cap)
{
    size_t fl = strlen(flag);
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        if (line[0] != '#' && n > fl + 1 && strncmp(line, flag, fl) == 0 && line[fl] == ' ') {
            const char *v = line + fl + 1;
            size_t k = 0;
            if (*v == '"')
                v++;
            while (v + k < line + n && v[k] != '"' && v[k] != ' ' && k + 1 < cap)
                k++;
            if (k + 1 >= cap)
                fuzz_fail("an emitted flag value is longer than the buffer", PSCHED_OK);
            memcpy(out, v, k);
            out[k] = '\0';
            return true;
        }
        line = end ? end + 1 : NULL;
    }
    return false;
}

static void write_back(const psched_plan *plan, const char *schedule,
                       const psched_partition_result *r)
{
    char *text = NULL;
    size_t length = 0;
    psched_status st = psched_partition_to_megatron(r, model, NULL, &text, &length);
    if (st != PSCHED_OK)
        fuzz_fail("a layout that reads cannot be written as Megatron-LM flags", st);
    if (!text || strlen(text) != length)
        fuzz_fail("the Megatron-LM text's length is not its strlen", st);
    if (strstr(text, "# nearest expressible"))
        fuzz_fail("a recompute setting read from Megatron-LM's options is called inexpressible",
                  st);
    static char layout[1 << 16];
    char gran[32] = "", method[32] = "", num[32] = "0";
    if (!flag_value(text, "--pipeline-model-parallel-layout", layout, sizeof layout))
        fuzz_fail("the Megatron-LM text has no layout flag", st);
    flag_value(text, "--recompute-granularity", gran, sizeof gran);
    flag_value(text, "--recompute-method", method, sizeof method);
    flag_value(text, "--recompute-num-layers", num, sizeof num);
    psched_partition_result *back = NULL;
    st = psched_partition_from_layout(model, plan, schedule, layout, NULL, gran, method,
                                      (uint32_t)strtoul(num, NULL, 10), &back);
    if (st != PSCHED_OK) {
        fprintf(stderr, "emitted layout: %s\n", layout);
        fuzz_fail("the emitted layout does not read back", st);
    }
    uint32_t S = psched_partition_stages(r);
    if (psched_partition_stages(back) != S)
        fuzz_fail("the emitted layout reads back to another stage count", st);
    for (uint32_t s = 0; s < S; s++) {
        uint32_t a = 0, b = 0;
        psched_partition_stage(r, s, NULL, &a, NULL, NULL);
        psched_partition_stage(back, s, NULL, &b, NULL, NULL);
        if (a != b)
            fuzz_fail("the emitted layout reads back to other stages", st);
    }
    for (uint32_t l = 0; l < psched_model_layers(model); l++)
        if (psched_partition_layer_recompute(r, l) != psched_partition_layer_recompute(back, l))
            fuzz_fail("the emitted recompute flags read back to other choices", st);
    psched_partition_result_destroy(back);
    psched_free(text);
    st = psched_partition_to_torchtitan(r, model, NULL,
                                        "E=tok_embeddings;t=layers.{i};m=mtp.{i};L=norm,output",
                                        &text, &length);
    if (st != PSCHED_OK)
        fuzz_fail("a layout that reads cannot be written as torchtitan TOML", st);
    psched_free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!model)
        make_model();
    if (size < 2 || size > 4096)
        return 0;
    uint32_t p = data[0] >= '1' && data[0] <= '4' ? (uint32_t)(data[0] - '0')
                                                   : 1 + data[0] % 4u;
    uint32_t block = 1 + (data[0] / 4u) % 4u;
    unsigned k = (unsigned)(data[1] - 'a') & 15u;
    const char *schedule = k & 1 ? "interleaved" : "1f1b";
    static const char *const gran[] = {NULL, "selective", "full", "full"};
    static const char *const method[] = {NULL, NULL, "uniform", "block"};
    uint32_t rc = (k >> 1) & 3u;
    char *layout = malloc(size - 1);
    if (!layout)
        return 0;
    memcpy(layout, data + 2, size - 2);
    layout[size - 2] = '\0'; /* an inner NUL ends the text early: also fine */
    psched_plan *plan = NULL;
    if (psched_plan_create(&plan) != PSCHED_OK || psched_plan_set_devices(plan, p) != PSCHED_OK ||
        psched_plan_set_microbatches(plan, 2 * p) != PSCHED_OK ||
        psched_plan_set_chunks(plan, 0) != PSCHED_OK ||
        psched_plan_set_memory_limit(plan, k & 8 ? 300 : INFINITY) != PSCHED_OK)
        fuzz_fail("building the plan", PSCHED_EINVAL);
    psched_partition_result *r = NULL;
    psched_status st = psched_partition_from_layout(
        model, plan, schedule, layout, NULL, gran[rc], method[rc],
        rc == 2 ? 1 : rc == 3 ? block : 0, &r);
    if (st != PSCHED_OK) {
        if (r)
            fuzz_fail("a refused layout returned a result", st);
        if (!*psched_last_error())
            fuzz_fail("a refused layout left no message", st);
    } else {
        write_back(plan, schedule, r);
        psched_partition_result_destroy(r);
    }
    psched_plan_destroy(plan);
    free(layout);
    return 0;
}
