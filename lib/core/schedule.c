/* Schedules: generation through the registry, accessors, op text. */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Fills in what the plan left to the generator and forces what the
 * generator fixes, with an error when the caller asked for something else. */
static psched_status resolve_plan(psched_plan *plan, const psched_generator *g)
{
    if (plan->chunks == 0)
        plan->chunks = g->default_chunks ? g->default_chunks : 1;
    if (plan->placement == PSCHED_PLACEMENT_AUTO) {
        /* A generator for any placement (custom) gets loop order by
         * default: a custom map is the caller's to set. */
        plan->placement = g->placement == PSCHED_PLACEMENT_CUSTOM ? PSCHED_PLACEMENT_LOOP
                                                                  : g->placement;
    } else if (plan->placement != g->placement && g->placement != PSCHED_PLACEMENT_CUSTOM) {
        return psched_fail(PSCHED_EINVAL, "placement %s does not fit %s, which needs %s placement",
                           psched__placement_name(plan->placement), g->name,
                           psched__placement_name(g->placement));
    }
    plan->chains = g->chains ? g->chains : 1;
    return psched__plan_check_resolved(plan);
}

/* Every option the plan sets must be one the generator declares, within
 * its declared range (the zstd way: a misspelled key is an error, never
 * silently ignored). ABI 1 descriptors declare none and are passed every
 * option unchecked, as before. */
static psched_status check_options(const psched_plan *plan, const psched_generator *g)
{
    if (g->abi_version < 2)
        return PSCHED_OK;
    for (uint32_t i = 0; i < plan->option_count; i++) {
        const psched_option *o = &plan->options[i];
        const psched_generator_option_desc *d = NULL;
        for (uint32_t k = 0; k < g->option_count && !d; k++) {
            if (strcmp(g->options[k].name, o->key) == 0)
                d = &g->options[k];
        }
        if (!d) {
            char known[256] = "";
            size_t at = 0;
            for (uint32_t k = 0; k < g->option_count && at < sizeof known; k++)
                at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", k ? ", " : "",
                                       g->options[k].name);
            return psched_fail(PSCHED_EINVAL, "option \"%s\" is not an option of %s (it takes %s)",
                               o->key, g->name, g->option_count ? known : "none");
        }
        if (o->value < d->min || o->value > d->max)
            return psched_fail(PSCHED_EINVAL, "option %s (%" PRId64 ") must be in [%" PRId64
                                              ", %" PRId64 "] for %s",
                               o->key, o->value, d->min, d->max, g->name);
    }
    return PSCHED_OK;
}

psched_status psched__generate_ex(const psched_plan *plan, const char *name, bool compact,
                                  psched_schedule **out, psched_compact **cout)
{
    if (!out)
        return psched_fail(PSCHED_EINVAL, "output pointer is NULL");
    *out = NULL;
    if (cout)
        *cout = NULL;
    if (!plan)
        return psched_fail(PSCHED_EINVAL, "plan is NULL");
    const psched_generator *g;
    psched_status st = psched_generator_find(name, &g);
    if (st)
        return st;
    psched_plan *resolved;
    st = psched_plan_clone(plan, &resolved);
    if (st)
        return st;
    psched_builder *b = NULL;
    st = resolve_plan(resolved, g);
    if (!st)
        st = check_options(resolved, g);
    /* the plan's own checks read the costs; the generator's count */
    unsigned long reads = psched__stage_reads;
    if (!st && g->check)
        st = g->check(resolved);
    if (!st)
        st = compact && cout ? psched__builder_create_compact(resolved, &b)
                             : psched__builder_create(resolved, &b);
    if (!st) {
        st = g->generate(resolved, b);
        reads = psched__stage_reads - reads;
        if (!st)
            st = compact && cout
                     ? psched__builder_finish_compact(b, resolved, g->name, out, cout)
                     : psched__builder_finish(b, resolved, g->name, out);
    }
    psched__builder_destroy(b);
    if (st)
        psched_plan_destroy(resolved);
    else if (*out)
        (*out)->order_ignores_costs = reads == 0;
    return st;
}

bool psched__schedule_order_ignores_costs(const psched_schedule *s)
{
    return s && s->order_ignores_costs;
}

psched_status psched_generate(const psched_plan *plan, const char *name, psched_schedule **out)
{
    return psched__generate_ex(plan, name, false, out, NULL);
}

void psched_schedule_destroy(psched_schedule *s)
{
    if (!s)
        return;
    psched_plan_destroy(s->plan);
    psched__dealloc(s->offset);
    psched__dealloc(s->ops);
    psched__dealloc(s);
}

const psched_plan *psched_schedule_plan(const psched_schedule *s)
{
    return s ? s->plan : NULL;
}

const char *psched_schedule_name(const psched_schedule *s)
{
    return s ? s->name : NULL;
}

uint32_t psched_schedule_devices(const psched_schedule *s)
{
    return s ? s->devices : 0;
}

size_t psched_schedule_op_count(const psched_schedule *s, uint32_t device)
{
    return (s && device < s->devices) ? s->offset[device + 1] - s->offset[device] : 0;
}

size_t psched_schedule_total_ops(const psched_schedule *s)
{
    return s ? s->offset[s->devices] : 0;
}

/* The first published psched_op ends after `flags`. */
#define OP_SIZE_V1 (offsetof(psched_op, flags) + sizeof(uint8_t))

psched_status psched_schedule_ops(const psched_schedule *s, uint32_t device, size_t first,
                                  size_t count, psched_op *out, size_t op_size)
{
    if (!s || (!out && count))
        return psched_fail(PSCHED_EINVAL, "schedule or output is NULL");
    if (device >= s->devices)
        return psched_fail(PSCHED_EINVAL, "device (%u) must be < devices (%u)", device,
                           s->devices);
    size_t n = s->offset[device + 1] - s->offset[device];
    if (first > n || count > n - first)
        return psched_fail(PSCHED_EINVAL, "ops [%zu, %zu) out of range: device %u has %zu ops",
                           first, first + count, device, n);
    if (op_size < OP_SIZE_V1)
        return psched_fail(PSCHED_EINVAL, "op_size (%zu) must be >= %zu", op_size,
                           (size_t)OP_SIZE_V1);
    const psched_op *src = s->ops + s->offset[device] + first;
    size_t copy = op_size < sizeof *src ? op_size : sizeof *src;
    for (size_t i = 0; i < count; i++) {
        char *dst = (char *)out + i * op_size;
        memcpy(dst, &src[i], copy);
        if (op_size > copy)
            memset(dst + copy, 0, op_size - copy);
    }
    return PSCHED_OK;
}

/* Whether the schedule holds comm ops (it was lowered): validation and
 * simulation then run the rendezvous engine. */
bool psched__has_comm_ops(const psched_schedule *s)
{
    for (size_t g = 0; g < s->offset[s->devices]; g++)
        if (s->ops[g].kind >= PSCHED_OP_SEND_F && s->ops[g].kind <= PSCHED_OP_RECV_B)
            return true;
    return false;
}

psched_status psched_schedule_solve_status(const psched_schedule *s, psched_solve_status *status,
                                           double *gap)
{
    if (!s)
        return psched_fail(PSCHED_EINVAL, "schedule is NULL");
    if (!s->solved)
        return psched_fail(PSCHED_ENOTFOUND, "schedule \"%s\" carries no solve status: its "
                                             "generator does not prove optimality", s->name);
    if (status)
        *status = s->solve_status;
    if (gap)
        *gap = s->solve_gap;
    return PSCHED_OK;
}
