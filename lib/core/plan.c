/* The plan: shape, placement, costs, memory model, limits and options. */
#include "internal.h"

_Thread_local unsigned long psched__stage_reads;

#include <math.h>
#include <string.h>

#define NEED_PLAN(plan)                                                              \
    do {                                                                             \
        if (!(plan))                                                                 \
            return psched_fail(PSCHED_EINVAL, "plan is NULL");                       \
    } while (0)

psched_status psched_plan_create(psched_plan **out)
{
    if (!out)
        return psched_fail(PSCHED_EINVAL, "output pointer is NULL");
    *out = NULL;
    psched_plan *p = psched__calloc(1, sizeof *p);
    if (!p)
        return PSCHED_ENOMEM_FAIL();
    p->devices = 1;
    p->microbatches = 1;
    p->chunks = 0;
    p->chains = 1;
    p->placement = PSCHED_PLACEMENT_AUTO;
    p->cost_all = (psched_cost3){1, 1, 1};
    p->mem_all = (psched_cost3){1, 0, -1};
    p->comm = 0;
    p->memory_limit = INFINITY;
    *out = p;
    return PSCHED_OK;
}

void psched_plan_destroy(psched_plan *plan)
{
    if (!plan)
        return;
    psched__dealloc(plan->custom_device);
    psched__dealloc(plan->cost);
    psched__dealloc(plan->mem);
    psched__dealloc(plan->options);
    psched__costmodel_free(plan->cm);
    psched__dealloc(plan);
}

static bool dup_array(void **dst, const void *src, size_t n, size_t size)
{
    *dst = NULL;
    if (!src)
        return true;
    *dst = psched__reallocarray(NULL, n ? n : 1, size);
    if (!*dst)
        return false;
    memcpy(*dst, src, n * size);
    return true;
}

psched_status psched_plan_clone(const psched_plan *plan, psched_plan **out)
{
    NEED_PLAN(plan);
    if (!out)
        return psched_fail(PSCHED_EINVAL, "output pointer is NULL");
    *out = NULL;
    psched_plan *c = psched__malloc(sizeof *c);
    if (!c)
        return PSCHED_ENOMEM_FAIL();
    *c = *plan;
    uint32_t stages = plan->devices * (plan->chunks ? plan->chunks : 1);
    bool ok = dup_array((void **)&c->custom_device, plan->custom_device, stages,
                        sizeof *c->custom_device);
    ok = dup_array((void **)&c->cost, ok ? plan->cost : NULL, plan->cost_len, sizeof *c->cost) && ok;
    ok = dup_array((void **)&c->mem, ok ? plan->mem : NULL, plan->mem_len, sizeof *c->mem) && ok;
    ok = dup_array((void **)&c->options, ok ? plan->options : NULL, plan->option_count,
                   sizeof *c->options) && ok;
    c->cm = NULL;
    ok = ok && psched__costmodel_clone(plan->cm, &c->cm) == PSCHED_OK;
    if (!ok) {
        psched_plan_destroy(c);
        return PSCHED_ENOMEM_FAIL();
    }
    *out = c;
    return PSCHED_OK;
}

static uint32_t plan_stages(const psched_plan *p)
{
    return p->devices * (p->chunks ? p->chunks : 1);
}

/* A custom map only makes sense for one (p, v); a new shape starts over. */
static void drop_custom_map(psched_plan *p)
{
    psched__dealloc(p->custom_device);
    p->custom_device = NULL;
    if (p->placement == PSCHED_PLACEMENT_CUSTOM)
        p->placement = PSCHED_PLACEMENT_LOOP;
}

psched_status psched_plan_set_devices(psched_plan *plan, uint32_t devices)
{
    NEED_PLAN(plan);
    if (devices < 1 || devices > PSCHED_MAX_DEVICES)
        return psched_fail(PSCHED_EINVAL, "devices (%u) must be between 1 and %u", devices,
                           PSCHED_MAX_DEVICES);
    if (devices != plan->devices)
        drop_custom_map(plan);
    plan->devices = devices;
    return PSCHED_OK;
}

psched_status psched_plan_set_microbatches(psched_plan *plan, uint32_t microbatches)
{
    NEED_PLAN(plan);
    if (microbatches < 1 || microbatches > PSCHED_MAX_MICROBATCHES)
        return psched_fail(PSCHED_EINVAL, "microbatches (%u) must be between 1 and %u",
                           microbatches, PSCHED_MAX_MICROBATCHES);
    plan->microbatches = microbatches;
    return PSCHED_OK;
}

psched_status psched_plan_set_chunks(psched_plan *plan, uint32_t chunks)
{
    NEED_PLAN(plan);
    if (chunks > PSCHED_MAX_CHUNKS)
        return psched_fail(PSCHED_EINVAL, "chunks (%u) must be between 0 (generator default) and %u",
                           chunks, PSCHED_MAX_CHUNKS);
    if (chunks != plan->chunks)
        drop_custom_map(plan);
    plan->chunks = chunks;
    return PSCHED_OK;
}

psched_status psched_plan_set_chains(psched_plan *plan, uint32_t chains)
{
    NEED_PLAN(plan);
    if (chains != 1 && chains != 2)
        return psched_fail(PSCHED_EINVAL, "chains (%u) must be 1 or 2", chains);
    plan->chains = chains;
    return PSCHED_OK;
}

psched_status psched_plan_set_placement(psched_plan *plan, psched_placement placement)
{
    NEED_PLAN(plan);
    switch (placement) {
    case PSCHED_PLACEMENT_AUTO:
    case PSCHED_PLACEMENT_LOOP:
    case PSCHED_PLACEMENT_VSHAPE:
        drop_custom_map(plan);
        plan->placement = placement;
        return PSCHED_OK;
    case PSCHED_PLACEMENT_CUSTOM:
        break;
    default:
        return psched_fail(PSCHED_EINVAL, "placement (%d) is not a psched_placement value",
                           (int)placement);
    }
    if (!plan->chunks)
        return psched_fail(PSCHED_EINVAL, "custom placement needs chunks set first (chunks is 0)");
    uint32_t stages = plan_stages(plan);
    uint32_t *map = psched__reallocarray(NULL, stages, sizeof *map);
    if (!map)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t s = 0; s < stages; s++)
        map[s] = s % plan->devices;
    psched__dealloc(plan->custom_device);
    plan->custom_device = map;
    plan->placement = PSCHED_PLACEMENT_CUSTOM;
    return PSCHED_OK;
}

psched_status psched_plan_set_stage_device(psched_plan *plan, uint32_t stage, uint32_t device)
{
    NEED_PLAN(plan);
    if (plan->placement != PSCHED_PLACEMENT_CUSTOM || !plan->custom_device)
        return psched_fail(PSCHED_EINVAL, "stage %u: a stage map needs custom placement "
                                          "(psched_plan_set_placement CUSTOM first)", stage);
    if (stage >= plan_stages(plan))
        return psched_fail(PSCHED_EINVAL, "stage (%u) must be < stages (%u)", stage,
                           plan_stages(plan));
    if (device >= plan->devices)
        return psched_fail(PSCHED_EINVAL, "device (%u) for stage %u must be < devices (%u)",
                           device, stage, plan->devices);
    plan->custom_device[stage] = device;
    return PSCHED_OK;
}

static psched_status check_triple(const char *what, double f, double b, double w, bool nonneg)
{
    const double v[3] = {f, b, w};
    const char *n[3] = {"F", "B", "W"};
    for (int i = 0; i < 3; i++) {
        if (!isfinite(v[i]))
            return psched_fail(PSCHED_EINVAL, "%s of %s (%g) must be finite", what, n[i], v[i]);
        if (nonneg && v[i] < 0)
            return psched_fail(PSCHED_EINVAL, "%s of %s (%g) must be >= 0", what, n[i], v[i]);
    }
    return PSCHED_OK;
}

/* Grows a per-stage array to cover `stage`, filling new entries with the
 * uniform value. */
static psched_status stage_slot(psched_cost3 **arr, uint32_t *len, psched_cost3 fill,
                                uint32_t stage)
{
    if (*arr && stage < *len)
        return PSCHED_OK;
    uint32_t old = *arr ? *len : 0, n = stage + 1;
    psched_cost3 *a = psched__reallocarray(*arr, n, sizeof *a);
    if (!a)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t i = old; i < n; i++)
        a[i] = fill;
    *arr = a;
    *len = n;
    return PSCHED_OK;
}

psched_status psched_plan_set_cost(psched_plan *plan, double f, double b, double w)
{
    NEED_PLAN(plan);
    psched_status st = check_triple("cost", f, b, w, true);
    if (st)
        return st;
    psched__dealloc(plan->cost);
    plan->cost = NULL;
    plan->cost_len = 0;
    plan->cost_all = (psched_cost3){f, b, w};
    return PSCHED_OK;
}

psched_status psched_plan_set_stage_cost(psched_plan *plan, uint32_t stage, double f, double b,
                                         double w)
{
    NEED_PLAN(plan);
    if (stage >= plan_stages(plan))
        return psched_fail(PSCHED_EINVAL, "stage (%u) must be < stages (%u = devices x chunks)",
                           stage, plan_stages(plan));
    psched_status st = check_triple("cost", f, b, w, true);
    if (!st)
        st = stage_slot(&plan->cost, &plan->cost_len, plan->cost_all, stage);
    if (st)
        return st;
    plan->cost[stage] = (psched_cost3){f, b, w};
    return PSCHED_OK;
}

psched_status psched_plan_set_mem(psched_plan *plan, double f, double b, double w)
{
    NEED_PLAN(plan);
    psched_status st = check_triple("memory delta", f, b, w, false);
    if (st)
        return st;
    psched__dealloc(plan->mem);
    plan->mem = NULL;
    plan->mem_len = 0;
    plan->mem_all = (psched_cost3){f, b, w};
    return PSCHED_OK;
}

psched_status psched_plan_set_stage_mem(psched_plan *plan, uint32_t stage, double f, double b,
                                        double w)
{
    NEED_PLAN(plan);
    if (stage >= plan_stages(plan))
        return psched_fail(PSCHED_EINVAL, "stage (%u) must be < stages (%u = devices x chunks)",
                           stage, plan_stages(plan));
    psched_status st = check_triple("memory delta", f, b, w, false);
    if (!st)
        st = stage_slot(&plan->mem, &plan->mem_len, plan->mem_all, stage);
    if (st)
        return st;
    plan->mem[stage] = (psched_cost3){f, b, w};
    return PSCHED_OK;
}

psched_status psched_plan_set_comm(psched_plan *plan, double latency)
{
    NEED_PLAN(plan);
    if (!isfinite(latency) || latency < 0)
        return psched_fail(PSCHED_EINVAL, "comm latency (%g) must be finite and >= 0", latency);
    plan->comm = latency;
    return PSCHED_OK;
}

psched_status psched_plan_set_memory_limit(psched_plan *plan, double limit)
{
    NEED_PLAN(plan);
    if (isnan(limit) || limit <= 0)
        return psched_fail(PSCHED_EINVAL, "memory limit (%g) must be > 0 (INFINITY: unlimited)",
                           limit);
    plan->memory_limit = limit;
    return PSCHED_OK;
}

static psched_status check_key(const char *key)
{
    if (!key)
        return psched_fail(PSCHED_EINVAL, "option key is NULL");
    size_t n = strlen(key);
    if (n < 1 || n > 31)
        return psched_fail(PSCHED_EINVAL, "option key \"%.40s\" must be 1..31 characters", key);
    for (size_t i = 0; i < n; i++) {
        char c = key[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return psched_fail(PSCHED_EINVAL, "option key \"%s\" may only use [a-z0-9-]", key);
    }
    return PSCHED_OK;
}

psched_status psched_plan_set_option(psched_plan *plan, const char *key, int64_t value)
{
    NEED_PLAN(plan);
    psched_status st = check_key(key);
    if (st)
        return st;
    for (uint32_t i = 0; i < plan->option_count; i++) {
        if (strcmp(plan->options[i].key, key) == 0) {
            plan->options[i].value = value;
            return PSCHED_OK;
        }
    }
    psched_option *o = psched__reallocarray(plan->options, plan->option_count + 1, sizeof *o);
    if (!o)
        return PSCHED_ENOMEM_FAIL();
    plan->options = o;
    memset(&o[plan->option_count], 0, sizeof *o);
    strcpy(o[plan->option_count].key, key);
    o[plan->option_count].value = value;
    plan->option_count++;
    return PSCHED_OK;
}

psched_status psched_plan_get_option(const psched_plan *plan, const char *key, int64_t *value)
{
    NEED_PLAN(plan);
    if (!key || !value)
        return psched_fail(PSCHED_EINVAL, "option key or value pointer is NULL");
    for (uint32_t i = 0; i < plan->option_count; i++) {
        if (strcmp(plan->options[i].key, key) == 0) {
            *value = plan->options[i].value;
            return PSCHED_OK;
        }
    }
    return psched_fail(PSCHED_ENOTFOUND, "option \"%s\" is not set", key);
}

uint32_t psched_plan_devices(const psched_plan *plan) { return plan ? plan->devices : 0; }
uint32_t psched_plan_microbatches(const psched_plan *plan) { return plan ? plan->microbatches : 0; }
uint32_t psched_plan_chunks(const psched_plan *plan) { return plan ? plan->chunks : 0; }
uint32_t psched_plan_chains(const psched_plan *plan) { return plan ? plan->chains : 0; }
uint32_t psched_plan_stages(const psched_plan *plan) { return plan ? plan_stages(plan) : 0; }
psched_placement psched_plan_placement(const psched_plan *plan)
{
    return plan ? plan->placement : PSCHED_PLACEMENT_AUTO;
}
double psched_plan_comm(const psched_plan *plan) { return plan ? plan->comm : NAN; }
double psched_plan_memory_limit(const psched_plan *plan) { return plan ? plan->memory_limit : NAN; }

uint32_t psched_plan_stage_device(const psched_plan *plan, uint32_t stage)
{
    if (!plan || stage >= plan_stages(plan))
        return UINT32_MAX;
    uint32_t p = plan->devices;
    switch (plan->placement) {
    case PSCHED_PLACEMENT_LOOP:
        return stage % p;
    case PSCHED_PLACEMENT_VSHAPE:
        return stage < p ? stage : 2 * p - 1 - stage;
    case PSCHED_PLACEMENT_CUSTOM:
        return plan->custom_device ? plan->custom_device[stage] : UINT32_MAX;
    default:
        return UINT32_MAX;
    }
}

uint32_t psched_plan_stage_chunk(const psched_plan *plan, uint32_t stage)
{
    if (!plan || stage >= plan_stages(plan))
        return UINT32_MAX;
    uint32_t p = plan->devices;
    switch (plan->placement) {
    case PSCHED_PLACEMENT_LOOP:
        return stage / p;
    case PSCHED_PLACEMENT_VSHAPE:
        return stage < p ? 0 : 1;
    case PSCHED_PLACEMENT_CUSTOM: {
        if (!plan->custom_device)
            return UINT32_MAX;
        uint32_t d = plan->custom_device[stage], c = 0;
        for (uint32_t s = 0; s < stage; s++)
            c += plan->custom_device[s] == d;
        return c;
    }
    default:
        return UINT32_MAX;
    }
}

uint32_t psched_plan_device_stage(const psched_plan *plan, uint32_t device, uint32_t chunk)
{
    if (!plan || device >= plan->devices || chunk >= (plan->chunks ? plan->chunks : 1))
        return UINT32_MAX;
    uint32_t p = plan->devices;
    switch (plan->placement) {
    case PSCHED_PLACEMENT_LOOP:
        return chunk * p + device;
    case PSCHED_PLACEMENT_VSHAPE:
        return chunk == 0 ? device : 2 * p - 1 - device;
    case PSCHED_PLACEMENT_CUSTOM: {
        if (!plan->custom_device)
            return UINT32_MAX;
        uint32_t c = 0, n = plan_stages(plan);
        for (uint32_t s = 0; s < n; s++) {
            if (plan->custom_device[s] == device && c++ == chunk)
                return s;
        }
        return UINT32_MAX;
    }
    default:
        return UINT32_MAX;
    }
}

psched_status psched_plan_stage_cost(const psched_plan *plan, uint32_t stage, double *f,
                                     double *b, double *w)
{
    NEED_PLAN(plan);
    if (stage >= plan_stages(plan))
        return psched_fail(PSCHED_EINVAL, "stage (%u) must be < stages (%u)", stage,
                           plan_stages(plan));
    psched_cost3 c = psched__plan_cost(plan, stage);
    if (f) *f = c.f;
    if (b) *b = c.b;
    if (w) *w = c.w;
    return PSCHED_OK;
}

psched_status psched_plan_stage_mem(const psched_plan *plan, uint32_t stage, double *f,
                                    double *b, double *w)
{
    NEED_PLAN(plan);
    if (stage >= plan_stages(plan))
        return psched_fail(PSCHED_EINVAL, "stage (%u) must be < stages (%u)", stage,
                           plan_stages(plan));
    psched_cost3 c = psched__plan_mem(plan, stage);
    if (f) *f = c.f;
    if (b) *b = c.b;
    if (w) *w = c.w;
    return PSCHED_OK;
}

psched_status psched__plan_check_resolved(const psched_plan *plan)
{
    uint32_t p = plan->devices, v = plan->chunks, S = p * v;
    if (v == 0 || plan->placement == PSCHED_PLACEMENT_AUTO)
        return psched_fail(PSCHED_EINVAL, "plan is not resolved (chunks %u, placement auto)", v);
    if (plan->placement == PSCHED_PLACEMENT_VSHAPE && v != 2)
        return psched_fail(PSCHED_EINVAL, "chunks (%u) must be 2 for vshape placement", v);
    if ((uint64_t)S * plan->microbatches * 3 > PSCHED_MAX_OPS)
        return psched_fail(PSCHED_EINVAL,
                           "op count 3 x stages (%u) x microbatches (%u) exceeds %u", S,
                           plan->microbatches, PSCHED_MAX_OPS);
    if (S % plan->chains)
        return psched_fail(PSCHED_EINVAL, "stages (%u) must be divisible by chains (%u)", S,
                           plan->chains);
    if (plan->microbatches % plan->chains)
        return psched_fail(PSCHED_EINVAL, "microbatches (%u) must be divisible by chains (%u)",
                           plan->microbatches, plan->chains);
    psched_status st = psched__plan_check_costs(plan, p, S, plan->microbatches);
    if (st)
        return st;
    if (plan->placement == PSCHED_PLACEMENT_CUSTOM) {
        uint32_t *count = psched__calloc(p, sizeof *count);
        if (!count)
            return PSCHED_ENOMEM_FAIL();
        for (uint32_t s = 0; s < S; s++)
            count[plan->custom_device[s]]++;
        for (uint32_t d = 0; d < p; d++) {
            if (count[d] != v) {
                uint32_t c = count[d];
                psched__dealloc(count);
                return psched_fail(PSCHED_EINVAL,
                                   "custom placement puts %u stages on device %u; every device "
                                   "must hold exactly chunks (%u)", c, d, v);
            }
        }
        psched__dealloc(count);
    }
    return PSCHED_OK;
}

psched_status psched__plan_check_costs(const psched_plan *costs, uint32_t devices,
                                      uint32_t stages, uint32_t microbatches)
{
    /* Every time the simulator computes is at most the whole work run one
     * op after another plus every hop's latency, and its bubble ratio
     * multiplies the makespan by the device count: when that product is
     * finite, no sum it forms can overflow to infinity. */
    double total = 0, largest = costs->comm, runs = 0;
    const char *what = "comm latency";
    uint32_t at = 0;
    /* Micro-batch weights (the cost model) scale each micro-batch's costs:
     * a stage runs its costs sum-of-weights times (m when unweighted). */
    for (uint32_t i = 0; i < microbatches; i++) {
        double wgt = psched_plan_microbatch_weight(costs, i);
        runs += isnan(wgt) ? 1.0 : wgt;
    }
    for (uint32_t s = 0; s < stages; s++) {
        psched_cost3 c = psched__plan_cost(costs, s);
        total += runs * (c.f + c.b + c.w);
        const double v[3] = {c.f, c.b, c.w};
        static const char *const name[3] = {"F cost", "B cost", "W cost"};
        for (int k = 0; k < 3; k++) {
            if (v[k] > largest)
                largest = v[k], what = name[k], at = s;
        }
    }
    total += 2.0 * (double)stages * (double)microbatches * costs->comm;
    if (isfinite(total * (double)devices))
        return PSCHED_OK;
    if (runs > (double)microbatches)
        return psched_fail(PSCHED_EINVAL, "micro-batch weights (summing to %g) are too large: "
                           "devices (%u) x (stages (%u) x the weights' sum x (F + B + W) + 2 x "
                           "stages x microbatches x comm) overflows to infinity", runs, devices,
                           stages);
    if (what[0] == 'c')
        return psched_fail(PSCHED_EINVAL, "comm latency (%g) is too large: devices (%u) x (stages "
                           "(%u) x microbatches (%u) x (F + B + W) + 2 x stages x microbatches x "
                           "comm) overflows to infinity", largest, devices, stages, microbatches);
    return psched_fail(PSCHED_EINVAL, "%s of stage %u (%g) is too large: devices (%u) x (stages "
                       "(%u) x microbatches (%u) x (F + B + W) + 2 x stages x microbatches x "
                       "comm) overflows to infinity", what, at, largest, devices, stages,
                       microbatches);
}

const char *psched__placement_name(psched_placement placement)
{
    const char *name = psched_placement_str(placement);
    return name ? name : "unknown";
}
