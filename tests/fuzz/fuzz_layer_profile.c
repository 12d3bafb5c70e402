/* Fuzz target: psched_model_load_csv, the layer-profile reader. A profile
 * that loads is read back group by group and, when small, partitioned with
 * the cheap baselines, so the values the reader accepted flow through the
 * optimizer too. */
#include "fuzz_common.h"

#include <math.h>

static void read_back(const psched_model *model)
{
    uint32_t groups = psched_model_groups(model), layers = 0;
    for (uint32_t g = 0; g < groups; g++) {
        const char *type;
        uint32_t count;
        double f, b, w, act, param;
        psched_status st = psched_model_group(model, g, &type, &count, &f, &b, &w, &act, &param);
        if (st != PSCHED_OK)
            fuzz_fail("reading a loaded group failed", st);
        if (count == 0 || !isfinite(f) || !isfinite(b) || !isfinite(w) || !isfinite(act) ||
            !isfinite(param) || f < 0 || b < 0 || w < 0 || act < 0 || param < 0)
            fuzz_fail("the reader accepted a count of 0 or a negative or non-finite value",
                      PSCHED_OK);
        layers += count;
        for (int k = PSCHED_RECOMPUTE_NONE; k <= PSCHED_RECOMPUTE_FULL; k++) {
            double a, extra;
            st = psched_model_group_recompute(model, g, (psched_recompute)k, &a, &extra);
            if (st != PSCHED_OK && st != PSCHED_ENOTFOUND)
                fuzz_fail("reading a recompute variant failed", st);
        }
    }
    if (layers != psched_model_layers(model))
        fuzz_fail("group counts do not add up to the layer count", PSCHED_OK);
}

static void partition(const psched_model *model)
{
    static const psched_partition_method methods[] = {
        PSCHED_PARTITION_EVEN, PSCHED_PARTITION_EVEN_ACCOUNTED, PSCHED_PARTITION_DP_TIME,
        PSCHED_PARTITION_DP,
    };
    psched_plan *plan;
    if (psched_plan_create(&plan) != PSCHED_OK)
        fuzz_fail("plan_create", PSCHED_ENOMEM);
    (void)psched_plan_set_devices(plan, 2);
    (void)psched_plan_set_microbatches(plan, 4);
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
        psched_partition_options o = PSCHED_PARTITION_OPTIONS_INIT;
        o.method = methods[i];
        o.flags = PSCHED_PARTITION_ALLOW_EMPTY;
        psched_partition_result *r = NULL;
        psched_status st = psched_partition(model, plan, "1f1b", &o, &r);
        if (st == PSCHED_OK) {
            for (uint32_t s = 0; s < psched_partition_stages(r); s++)
                (void)psched_partition_stage(r, s, NULL, NULL, NULL, NULL);
            psched_partition_result_destroy(r);
        }
    }
    psched_plan_destroy(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    psched_model *model = NULL;
    psched_status st = psched_model_load_csv((const char *)data, size, &model);
    if (st != PSCHED_OK) {
        if (model)
            fuzz_fail("a failed load returned a model", st);
        return 0;
    }
    read_back(model);
    /* The DP is quadratic in the layer count: keep each input fast. */
    if (psched_model_layers(model) <= 64)
        partition(model);
    psched_model_destroy(model);
    return 0;
}
