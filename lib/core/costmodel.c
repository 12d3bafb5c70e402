/* The cost model's opt-in extensions of a plan (issue 18, DESIGN §3
 * "Extensions"): overlapped pairs that save time, micro-batch weights,
 * communication by bytes over a topology, and the PCIe bandwidth of the
 * offload copy stream. A plan carries them in one block allocated at the
 * first setter, so a plan that never sets one simulates exactly as before. */
#include "internal.h"

#include <math.h>
#include <string.h>

#define NEED_PLAN(plan)                                                              \
    do {                                                                             \
        if (!(plan))                                                                 \
            return psched_fail(PSCHED_EINVAL, "plan is NULL");                       \
    } while (0)

static psched_costmodel *costmodel_new(void)
{
    psched_costmodel *c = psched__calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->bandwidth[0] = c->bandwidth[1] = INFINITY;
    c->pcie_bandwidth = INFINITY;
    return c;
}

/* The plan's block, created on first use. */
static psched_status costmodel_of(psched_plan *plan, psched_costmodel **out)
{
    if (!plan->cm && !(plan->cm = costmodel_new()))
        return PSCHED_ENOMEM_FAIL();
    *out = plan->cm;
    return PSCHED_OK;
}

void psched__costmodel_free(psched_costmodel *c)
{
    if (!c)
        return;
    psched__dealloc(c->overlap);
    psched__dealloc(c->weight);
    psched__dealloc(c->bytes);
    psched__dealloc(c);
}

static bool dup_doubles(double **dst, const double *src, size_t n)
{
    *dst = NULL;
    if (!src)
        return true;
    *dst = psched__reallocarray(NULL, n ? n : 1, sizeof **dst);
    if (*dst)
        memcpy(*dst, src, n * sizeof **dst);
    return *dst != NULL;
}

psched_status psched__costmodel_clone(const psched_costmodel *c, psched_costmodel **out)
{
    *out = NULL;
    if (!c)
        return PSCHED_OK;
    psched_costmodel *d = psched__malloc(sizeof *d);
    if (!d)
        return PSCHED_ENOMEM_FAIL();
    *d = *c;
    bool ok = dup_doubles(&d->overlap, c->overlap, c->overlap_len);
    ok = dup_doubles(&d->weight, ok ? c->weight : NULL, c->weight_len) && ok;
    ok = dup_doubles(&d->bytes, ok ? c->bytes : NULL, 2 * (size_t)c->bytes_len) && ok;
    if (!ok) {
        psched__costmodel_free(d);
        return PSCHED_ENOMEM_FAIL();
    }
    *out = d;
    return PSCHED_OK;
}

static uint32_t plan_stages(const psched_plan *p)
{
    return p->devices * (p->chunks ? p->chunks : 1);
}

/* Grows a per-stage array of `width` doubles per stage to cover `stage`,
 * filling new entries from `fill`. */
static psched_status stage_slots(double **arr, uint32_t *len, const double *fill, size_t width,
                                 uint32_t stage)
{
    if (*arr && stage < *len)
        return PSCHED_OK;
    uint32_t old = *arr ? *len : 0, n = stage + 1;
    double *a = psched__reallocarray(*arr, (size_t)n * width, sizeof *a);
    if (!a)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t i = old; i < n; i++)
        memcpy(&a[i * width], fill, width * sizeof *a);
    *arr = a;
    *len = n;
    return PSCHED_OK;
}

/* ---- overlapped pairs ---- */

/* s must fit under min(t_F, t_B) of the stage: the pair can hide at most
 * the shorter op under the longer one. */
static psched_status check_overlap(const psched_plan *plan, uint32_t stage, double s)
{
    if (!isfinite(s) || s < 0)
        return psched_fail(PSCHED_EINVAL, "overlap_saving of stage %u (%g) must be finite and >= 0",
                           stage, s);
    psched_cost3 c = psched__plan_cost(plan, stage);
    double limit = fmin(c.f, c.b);
    if (s > limit)
        return psched_fail(PSCHED_EINVAL,
                           "overlap_saving of stage %u (%g) must be <= min(t_F, t_B) = %g: an "
                           "overlapped pair hides at most its shorter op",
                           stage, s, limit);
    return PSCHED_OK;
}

psched_status psched_plan_set_overlap_saving(psched_plan *plan, double saving)
{
    NEED_PLAN(plan);
    uint32_t n = plan_stages(plan);
    if (plan->cost && plan->cost_len > n)
        n = plan->cost_len;
    for (uint32_t st = 0; st < n; st++) {
        psched_status e = check_overlap(plan, st, saving);
        if (e)
            return e;
    }
    psched_costmodel *c = NULL;
    psched_status e = costmodel_of(plan, &c);
    if (e)
        return e;
    psched__dealloc(c->overlap);
    c->overlap = NULL;
    c->overlap_len = 0;
    c->overlap_all = saving;
    return PSCHED_OK;
}

psched_status psched_plan_set_stage_overlap_saving(psched_plan *plan, uint32_t stage,
                                                   double saving)
{
    NEED_PLAN(plan);
    if (stage >= plan_stages(plan))
        return psched_fail(PSCHED_EINVAL, "stage (%u) must be < stages (%u = devices x chunks)",
                           stage, plan_stages(plan));
    psched_status e = check_overlap(plan, stage, saving);
    psched_costmodel *c = NULL;
    if (!e)
        e = costmodel_of(plan, &c);
    if (!e)
        e = stage_slots(&c->overlap, &c->overlap_len, &c->overlap_all, 1, stage);
    if (e)
        return e;
    c->overlap[stage] = saving;
    return PSCHED_OK;
}

double psched_plan_stage_overlap_saving(const psched_plan *plan, uint32_t stage)
{
    if (!plan || stage >= plan_stages(plan))
        return NAN;
    return psched__plan_overlap(plan, stage);
}

/* ---- micro-batch weights ---- */

psched_status psched_plan_set_microbatch_weights(psched_plan *plan, const double *weights,
                                                 uint32_t count)
{
    NEED_PLAN(plan);
    if (count == 0) {
        if (plan->cm) {
            psched__dealloc(plan->cm->weight);
            plan->cm->weight = NULL;
            plan->cm->weight_len = 0;
        }
        return PSCHED_OK;
    }
    if (!weights)
        return psched_fail(PSCHED_EINVAL, "weights is NULL but count is %u", count);
    if (count != plan->microbatches)
        return psched_fail(PSCHED_EINVAL,
                           "microbatch weights (%u given) must number microbatches (%u)", count,
                           plan->microbatches);
    for (uint32_t k = 0; k < count; k++) {
        if (!isfinite(weights[k]) || weights[k] <= 0)
            return psched_fail(PSCHED_EINVAL,
                               "weight of micro-batch %u (%g) must be finite and > 0", k,
                               weights[k]);
    }
    psched_costmodel *c = NULL;
    psched_status e = costmodel_of(plan, &c);
    if (e)
        return e;
    double *w = psched__reallocarray(NULL, count, sizeof *w);
    if (!w)
        return PSCHED_ENOMEM_FAIL();
    memcpy(w, weights, count * sizeof *w);
    psched__dealloc(c->weight);
    c->weight = w;
    c->weight_len = count;
    return PSCHED_OK;
}

double psched_plan_microbatch_weight(const psched_plan *plan, uint32_t microbatch)
{
    if (!plan || microbatch >= plan->microbatches)
        return NAN;
    const psched_costmodel *c = plan->cm;
    return (c && c->weight && microbatch < c->weight_len) ? c->weight[microbatch] : 1.0;
}

/* ---- communication by bytes and links ---- */

static psched_status check_bytes(double forward, double backward)
{
    if (!isfinite(forward) || forward < 0 || !isfinite(backward) || backward < 0)
        return psched_fail(PSCHED_EINVAL,
                           "comm bytes (forward %g, backward %g) must be finite and >= 0",
                           forward, backward);
    return PSCHED_OK;
}

psched_status psched_plan_set_comm_bytes(psched_plan *plan, double forward, double backward)
{
    NEED_PLAN(plan);
    psched_costmodel *c = NULL;
    psched_status e = check_bytes(forward, backward);
    if (!e)
        e = costmodel_of(plan, &c);
    if (e)
        return e;
    psched__dealloc(c->bytes);
    c->bytes = NULL;
    c->bytes_len = 0;
    c->bytes_all[0] = forward;
    c->bytes_all[1] = backward;
    return PSCHED_OK;
}

psched_status psched_plan_set_stage_comm_bytes(psched_plan *plan, uint32_t stage, double forward,
                                               double backward)
{
    NEED_PLAN(plan);
    if (stage >= plan_stages(plan))
        return psched_fail(PSCHED_EINVAL, "stage (%u) must be < stages (%u = devices x chunks)",
                           stage, plan_stages(plan));
    psched_costmodel *c = NULL;
    psched_status e = check_bytes(forward, backward);
    if (!e)
        e = costmodel_of(plan, &c);
    if (!e)
        e = stage_slots(&c->bytes, &c->bytes_len, c->bytes_all, 2, stage);
    if (e)
        return e;
    c->bytes[2 * (size_t)stage] = forward;
    c->bytes[2 * (size_t)stage + 1] = backward;
    return PSCHED_OK;
}

psched_status psched_plan_stage_comm_bytes(const psched_plan *plan, uint32_t stage,
                                           double *forward, double *backward)
{
    NEED_PLAN(plan);
    if (stage >= plan_stages(plan))
        return psched_fail(PSCHED_EINVAL, "stage (%u) must be < stages (%u)", stage,
                           plan_stages(plan));
    if (forward)
        *forward = psched__plan_bytes(plan, stage, 0);
    if (backward)
        *backward = psched__plan_bytes(plan, stage, 1);
    return PSCHED_OK;
}

psched_status psched_plan_set_topology(psched_plan *plan, uint32_t devices_per_node,
                                       double intra_bandwidth, double intra_latency,
                                       double inter_bandwidth, double inter_latency)
{
    NEED_PLAN(plan);
    const double bw[2] = {intra_bandwidth, inter_bandwidth}, lat[2] = {intra_latency,
                                                                       inter_latency};
    const char *where[2] = {"intra-node", "inter-node"};
    for (int i = 0; i < 2; i++) {
        if (isnan(bw[i]) || bw[i] <= 0)
            return psched_fail(PSCHED_EINVAL,
                               "%s bandwidth (%g) must be > 0 (INFINITY: transfers take no time)",
                               where[i], bw[i]);
        if (!isfinite(lat[i]) || lat[i] < 0)
            return psched_fail(PSCHED_EINVAL, "%s latency (%g) must be finite and >= 0",
                               where[i], lat[i]);
    }
    psched_costmodel *c = NULL;
    psched_status e = costmodel_of(plan, &c);
    if (e)
        return e;
    c->node_devices = devices_per_node;
    for (int i = 0; i < 2; i++) {
        c->bandwidth[i] = bw[i];
        c->latency[i] = lat[i];
    }
    return PSCHED_OK;
}

psched_status psched_plan_topology(const psched_plan *plan, uint32_t *devices_per_node,
                                   double *intra_bandwidth, double *intra_latency,
                                   double *inter_bandwidth, double *inter_latency)
{
    NEED_PLAN(plan);
    const psched_costmodel *c = plan->cm;
    if (devices_per_node)
        *devices_per_node = c ? c->node_devices : 0;
    if (intra_bandwidth)
        *intra_bandwidth = c ? c->bandwidth[0] : INFINITY;
    if (intra_latency)
        *intra_latency = c ? c->latency[0] : 0;
    if (inter_bandwidth)
        *inter_bandwidth = c ? c->bandwidth[1] : INFINITY;
    if (inter_latency)
        *inter_latency = c ? c->latency[1] : 0;
    return PSCHED_OK;
}

bool psched__costmodel_links(const psched_plan *plan)
{
    const psched_costmodel *c = plan->cm;
    if (!c)
        return false;
    if (c->latency[0] > 0 || c->latency[1] > 0 || c->bytes_all[0] > 0 || c->bytes_all[1] > 0)
        return true;
    for (size_t i = 0; c->bytes && i < 2 * (size_t)c->bytes_len; i++)
        if (c->bytes[i] > 0)
            return true;
    return false;
}

/* ---- checks at simulation ---- */

psched_status psched__costmodel_check(const psched_plan *plan)
{
    const psched_costmodel *c = plan->cm;
    if (!c)
        return PSCHED_OK;
    if (c->weight && c->weight_len != plan->microbatches)
        return psched_fail(PSCHED_EINVAL,
                           "microbatch weights (%u) must number microbatches (%u): set them "
                           "again after changing the micro-batch count",
                           c->weight_len, plan->microbatches);
    uint32_t n = plan_stages(plan);
    for (uint32_t st = 0; st < n; st++) {
        psched_status e = check_overlap(plan, st, psched__plan_overlap(plan, st));
        if (e)
            return e;
    }
    return PSCHED_OK;
}

/* ---- activation offload: the copy stream ---- */

psched_status psched_plan_set_pcie_bandwidth(psched_plan *plan, double bandwidth)
{
    NEED_PLAN(plan);
    if (isnan(bandwidth) || bandwidth <= 0)
        return psched_fail(PSCHED_EINVAL,
                           "PCIe bandwidth (%g) must be > 0 (INFINITY: copies take no time)",
                           bandwidth);
    psched_costmodel *c = NULL;
    psched_status e = costmodel_of(plan, &c);
    if (e)
        return e;
    c->pcie_bandwidth = bandwidth;
    return PSCHED_OK;
}

double psched_plan_pcie_bandwidth(const psched_plan *plan)
{
    if (!plan)
        return NAN;
    return plan->cm ? plan->cm->pcie_bandwidth : INFINITY;
}
