/* The critical-path (Lagrangian) bound of the partition certificate
 * (issue 17 item 5, docs/optimizer.md "Where v = 4 is proven").
 *
 * When the generator's order does not depend on the costs and the plan
 * uses the plain cost model (no micro-batch weights, overlap, links, no
 * comm or copy ops), the simulated step time of a partition x is the
 * longest path of one DAG: an op starts at the latest of its device's
 * previous op's end and each input's end (+ t_comm across devices), and
 * the simulator never delays an op for memory (an overlapped pair, as
 * DualPipe's, is one node taking both ops' time). So
 *     makespan(x) = max over paths P of L_P(x),
 * and each L_P is linear in the stage costs: with n^F_{P,r}, n^B_{P,r},
 * n^W_{P,r} the ops of range r (problem stage) on P (a BW counts as a B
 * and a W) and K_P its latencies,
 *     L_P(x) = Σ_r n^F f_r(x) + n^B (b_r(x) + extra_r(x)) + n^W w_r(x) + K_P.
 * Every path of a simulated partition is a path of every partition, so
 * for weights λ ≥ 0 with Σ λ = 1 over a pool of paths and multipliers
 * μ_d ≥ 0 on the devices' memory (mem_d(x) ≤ limit),
 *     min over x of Σ_P λ_P L_P(x) + Σ_d μ_d (mem_d(x)/limit − 1)
 * is a lower bound of every fitting partition's step time, and it is an
 * exact DP over (stage, first layer), since both terms are sums over the
 * stages. The pool grows from the critical paths of simulated partitions
 * (walked back from the op that ends last, through predecessors whose end
 * meets the op's start); λ and μ are chosen by Kelley's cutting planes
 * (GLPK's simplex; without GLPK the best single path). */
#include "pathbound.h"

#include <math.h>
#include <string.h>

psched_status psched__paths_init(psched__paths *pp, const psched__problem *pb)
{
    memset(pp, 0, sizeof *pp);
    pp->S = pb->stages;
    pp->D = pb->devices;
    pp->stride = 3 * (size_t)pb->stages + 1;
    pp->xstride = 3 * (size_t)pb->stages + pb->devices;
    pp->memory = isfinite(pb->limit);
    return PSCHED_OK;
}

void psched__paths_free(psched__paths *pp)
{
    psched__dealloc(pp->coef);
    psched__dealloc(pp->critical);
    psched__dealloc(pp->xv);
    memset(pp, 0, sizeof *pp);
}

/* Room for one more row of `stride` doubles in *buf (holding *n of *cap). */
static psched_status grow(double **buf, size_t *cap, size_t n, size_t stride)
{
    if (n < *cap)
        return PSCHED_OK;
    size_t nc = *cap ? 2 * *cap : 16;
    double *t = psched__reallocarray(*buf, nc * stride, sizeof(double));
    if (!t)
        return PSCHED_ENOMEM_FAIL();
    *buf = t;
    *cap = nc;
    return PSCHED_OK;
}

double psched__paths_length(const psched__paths *pp, size_t path, const double *x)
{
    const double *c = pp->coef + path * pp->stride;
    double sum = c[3 * pp->S];
    for (size_t k = 0; k < 3 * (size_t)pp->S; k++)
        sum += c[k] * x[k];
    return sum;
}

double psched__paths_max(const psched__paths *pp, const bool *use, const double *x)
{
    double best = 0;
    for (size_t i = 0; i < pp->n; i++)
        if (!use || use[i])
            best = fmax(best, psched__paths_length(pp, i, x));
    return best;
}

void psched__paths_vector(const psched__problem *pb, const psched__solution *sol, double *x)
{
    uint32_t S = pb->stages;
    for (size_t k = 0; k < 3 * (size_t)S + pb->devices; k++)
        x[k] = 0;
    for (uint32_t s = 0; s < S; s++) {
        double act = 0;
        for (uint32_t l = sol->first[s]; l < sol->first[s] + sol->count[s]; l++) {
            const psched__group *g = psched__layer_group(pb, l);
            const psched__variant *v = &g->variant[sol->choice[l]];
            x[3 * s] += g->f;
            x[3 * s + 1] += g->b + v->extra;
            x[3 * s + 2] += g->w;
            act += v->act;
        }
        double mem = psched__range_param(pb, sol->first[s], sol->count[s]) + pb->inflight[s] * act;
        x[3 * (size_t)S + pb->device_of[s]] += mem;
    }
    for (uint32_t d = 0; d < pb->devices; d++)
        x[3 * (size_t)S + d] = isfinite(pb->limit) ? x[3 * (size_t)S + d] / pb->limit - 1 : 0;
}

psched_status psched__paths_add_cut(psched__paths *pp, const double *x)
{
    psched_status st = grow(&pp->xv, &pp->xcap, pp->nx, pp->xstride);
    if (st)
        return st;
    memcpy(pp->xv + pp->nx * pp->xstride, x, pp->xstride * sizeof(double));
    pp->nx++;
    return PSCHED_OK;
}

bool psched__paths_applies(const psched_plan *plan, const psched_schedule *sched)
{
    if (plan->cm)
        return false;
    const psched_plan *sp = psched_schedule_plan(sched);
    for (uint32_t d = 0; d < sp->devices; d++) {
        size_t n = psched_schedule_op_count(sched, d);
        for (size_t i = 0; i < n; i++) {
            psched_op op;
            psched_schedule_ops(sched, d, i, 1, &op, sizeof op);
            if ((op.flags & ~(unsigned)PSCHED_OP_OVERLAP_NEXT) || op.kind > PSCHED_OP_BW)
                return false;
        }
    }
    return true;
}

/* The ops of an order, all devices in one array (device d's from
 * offset[d]), and where each micro-batch's F and backward of each stage is
 * (at[2·(mb·S + stage) + slot], slot 0 its F, 1 its B or BW). */
typedef struct dag_ops {
    size_t total, *offset;
    uint32_t *at;
    psched_op *ops;
    uint32_t stages, per; /* the plan's stages, per chain */
    uint32_t mbs;         /* micro-batches per chain */
} dag_ops;

static void dag_ops_free(dag_ops *g)
{
    psched__dealloc(g->offset);
    psched__dealloc(g->at);
    psched__dealloc(g->ops);
}

static psched_status dag_ops_read(const psched_schedule *sched, dag_ops *g)
{
    const psched_plan *sp = psched_schedule_plan(sched);
    uint32_t p = psched_plan_devices(sp), S = psched_plan_stages(sp);
    uint32_t chains = psched_plan_chains(sp) ? psched_plan_chains(sp) : 1;
    memset(g, 0, sizeof *g);
    g->stages = S;
    g->per = S / chains;
    g->mbs = psched_plan_microbatches(sp) / chains;
    size_t cells = (size_t)S * g->mbs;
    for (uint32_t d = 0; d < p; d++)
        g->total += psched_schedule_op_count(sched, d);
    g->offset = psched__calloc((size_t)p + 1, sizeof *g->offset);
    g->at = psched__calloc(2 * cells + 1, sizeof *g->at);
    g->ops = psched__calloc(g->total + 1, sizeof *g->ops);
    if (!g->offset || !g->at || !g->ops) {
        dag_ops_free(g);
        return PSCHED_ENOMEM_FAIL();
    }
    psched_status st = PSCHED_OK;
    for (uint32_t d = 0; !st && d < p; d++) {
        size_t n = psched_schedule_op_count(sched, d);
        g->offset[d + 1] = g->offset[d] + n;
        st = psched_schedule_ops(sched, d, 0, n, g->ops + g->offset[d], sizeof *g->ops);
    }
    for (size_t i = 0; !st && i < g->total; i++) {
        const psched_op *o = &g->ops[i];
        if (o->kind != PSCHED_OP_W)
            g->at[2 * ((size_t)o->microbatch * S + o->stage) + (o->kind != PSCHED_OP_F)] =
                (uint32_t)i;
    }
    if (st)
        dag_ops_free(g);
    return st;
}

/* Op i's input from the neighbouring stage (an F's from the stage before,
 * a B's or BW's from the stage after, within its chain): its index, and
 * its stage in *in; SIZE_MAX when it has none. */
static size_t dag_input(const dag_ops *g, size_t i, uint32_t *in)
{
    const psched_op *o = &g->ops[i];
    bool has_in = o->kind == PSCHED_OP_F ? o->stage % g->per != 0
                  : o->kind != PSCHED_OP_W && o->stage % g->per != g->per - 1;
    if (!has_in)
        return SIZE_MAX;
    *in = o->kind == PSCHED_OP_F ? o->stage - 1 : o->stage + 1;
    return g->at[2 * ((size_t)o->microbatch * g->stages + *in) + (o->kind != PSCHED_OP_F)];
}

psched_status psched__paths_extract(psched__paths *pp, const psched__problem *pb,
                                    const psched_schedule *sched, const psched_report *rep,
                                    bool every_device, bool *added)
{
    *added = false;
    const psched_plan *sp = psched_schedule_plan(sched);
    uint32_t p = psched_plan_devices(sp);
    double comm = psched_plan_comm(sp);
    dag_ops dg;
    psched_status st = dag_ops_read(sched, &dg);
    if (st)
        return st;
    size_t total = dg.total, *offset = dg.offset;
    const psched_op *ops = dg.ops;
    double *start = psched__calloc(total + 1, sizeof(double));
    double *end = psched__calloc(total + 1, sizeof(double));
    if (!start || !end)
        st = PSCHED_ENOMEM_FAIL();
    for (uint32_t d = 0; !st && d < p; d++)
        st = psched_report_op_times(rep, d, 0, offset[d + 1] - offset[d], start + offset[d],
                                    end + offset[d]);
    size_t last = 0;
    double mk = -1;
    for (size_t g = 0; !st && g < total; g++) {
        if (end[g] > mk) {
            mk = end[g];
            last = g;
        }
    }
    /* the critical path, then (every_device) the longest path into each
     * device's last op: near-critical paths, several per simulation */
    for (uint32_t round = 0; !st && total && round <= (every_device ? p : 0); round++) {
        size_t from = last;
        if (round > 0) {
            if (offset[round] == offset[round - 1] || offset[round] - 1 == last)
                continue;
            from = offset[round] - 1;
        }
        size_t cap = pp->cap;
        st = grow(&pp->coef, &pp->cap, pp->n, pp->stride);
        if (!st && (pp->cap != cap || !pp->critical)) {
            bool *t = psched__reallocarray(pp->critical, pp->cap, sizeof *t);
            if (!t)
                st = PSCHED_ENOMEM_FAIL();
            else
                pp->critical = t;
        }
        if (st)
            break;
        pp->critical[pp->n] = round == 0;
        double *c = pp->coef + pp->n * pp->stride;
        for (size_t k = 0; k < pp->stride; k++)
            c[k] = 0;
        double tol = 1e-9 * fmax(mk, 1e-300);
        size_t g = from;
        for (size_t steps = 0; steps <= total; steps++) {
            uint32_t d = 0;
            while (offset[d + 1] <= g)
                d++;
            /* the unit of g: an overlapped pair runs as one (both ops
             * start together and take their summed time) */
            size_t g0 = g, n = 1;
            if (ops[g].flags & PSCHED_OP_OVERLAP_NEXT)
                n = 2;
            else if (g > offset[d] && (ops[g - 1].flags & PSCHED_OP_OVERLAP_NEXT))
                g0 = g - 1, n = 2;
            for (size_t u = g0; u < g0 + n; u++) {
                const psched_op *o = &ops[u];
                uint32_t r = psched__range_of(pb, o->stage);
                if (o->kind == PSCHED_OP_F)
                    c[3 * r] += 1;
                if (o->kind == PSCHED_OP_B || o->kind == PSCHED_OP_BW)
                    c[3 * r + 1] += 1;
                if (o->kind == PSCHED_OP_W || o->kind == PSCHED_OP_BW)
                    c[3 * r + 2] += 1;
            }
            if (start[g0] <= tol)
                break;
            /* an input across stages first (its latency counts), then the
             * device's op before the unit */
            size_t next = SIZE_MAX;
            bool cross = false;
            for (size_t u = g0; u < g0 + n && next == SIZE_MAX; u++) {
                uint32_t in_stage;
                size_t h = dag_input(&dg, u, &in_stage);
                if (h == SIZE_MAX)
                    continue;
                bool other = psched_plan_stage_device(sp, in_stage) != d;
                double t = end[h] + (other ? comm : 0);
                if (fabs(t - start[g0]) <= tol) {
                    next = h;
                    cross = other;
                }
            }
            if (next == SIZE_MAX && g0 > offset[d] && fabs(end[g0 - 1] - start[g0]) <= tol)
                next = g0 - 1;
            if (next == SIZE_MAX)
                break; /* not tight (rounding): the chain so far is still a path */
            if (cross)
                c[3 * (size_t)pp->S] += comm;
            g = next;
        }
        /* new when no path of the pool is as long at the simulated costs */
        pp->n++;
        bool dup = false;
        for (size_t i = 0; i + 1 < pp->n && !dup; i++)
            dup = memcmp(pp->coef + i * pp->stride, c, pp->stride * sizeof(double)) == 0;
        if (dup)
            pp->n--;
        *added = *added || !dup;
    }
    dag_ops_free(&dg);
    psched__dealloc(start);
    psched__dealloc(end);
    return st;
}

/* ---- the Lagrangian DP ---- */

psched_status psched__mult_init(psched__mult *m, const psched__problem *pb, bool argmin)
{
    memset(m, 0, sizeof *m);
    size_t S = pb->stages, L = pb->layers;
    m->w = psched__calloc(3 * S + 1, sizeof(double));
    m->mu = psched__calloc((size_t)pb->devices + 1, sizeof(double));
    m->g = psched__calloc((S + 1) * (L + 1), sizeof(double));
    if (argmin) {
        m->arg_len = psched__calloc((S + 1) * (L + 1), sizeof(uint32_t));
        m->arg_k = psched__calloc((S + 1) * (L + 1), sizeof(int32_t));
    }
    if (!m->w || !m->mu || !m->g || (argmin && (!m->arg_len || !m->arg_k)))
        return PSCHED_ENOMEM_FAIL();
    return PSCHED_OK;
}

void psched__mult_free(psched__mult *m)
{
    psched__dealloc(m->w);
    psched__dealloc(m->mu);
    psched__dealloc(m->g);
    psched__dealloc(m->arg_len);
    psched__dealloc(m->arg_k);
    memset(m, 0, sizeof *m);
}

void psched__mult_copy(const psched__problem *pb, const psched__mult *from, psched__mult *to)
{
    size_t S = pb->stages, L = pb->layers;
    memcpy(to->w, from->w, (3 * S + 1) * sizeof(double));
    memcpy(to->mu, from->mu, pb->devices * sizeof(double));
    memcpy(to->g, from->g, (S + 1) * (L + 1) * sizeof(double));
    if (to->arg_len && from->arg_len) {
        memcpy(to->arg_len, from->arg_len, (S + 1) * (L + 1) * sizeof(uint32_t));
        memcpy(to->arg_k, from->arg_k, (S + 1) * (L + 1) * sizeof(int32_t));
    }
    to->constant = from->constant;
    to->value = from->value;
}

double psched__mult_stage(const psched__problem *pb, const psched__mult *m, uint32_t s,
                          uint32_t i, uint32_t len, double extra, double act)
{
    double f = pb->f_prefix[i + len] - pb->f_prefix[i];
    double b = pb->b_prefix[i + len] - pb->b_prefix[i];
    double w = psched__range_time(pb, i, len) - f - b;
    double v = m->w[3 * s] * f + m->w[3 * s + 1] * (b + extra) + m->w[3 * s + 2] * w;
    double mu = m->mu[pb->device_of[s]];
    if (mu > 0)
        v += mu * (psched__range_param(pb, i, len) + pb->inflight[s] * act) / pb->limit;
    return v;
}

double psched__mult_value(const psched__problem *pb, const psched__mult *m,
                          const psched__solution *sol)
{
    double v = m->constant;
    for (uint32_t s = 0; s < pb->stages; s++) {
        double extra = 0, act = 0;
        for (uint32_t l = sol->first[s]; l < sol->first[s] + sol->count[s]; l++) {
            const psched__variant *x = &psched__layer_group(pb, l)->variant[sol->choice[l]];
            extra += x->extra;
            act += x->act;
        }
        v += psched__mult_stage(pb, m, s, sol->first[s], sol->count[s], extra, act);
    }
    return v;
}

void psched__mult_dp(const psched__problem *pb, psched__mult *m)
{
    uint32_t S = pb->stages, L = pb->layers;
    size_t W = (size_t)L + 1;
    double *g = m->g;
    for (uint32_t a = 0; a <= L; a++)
        g[(size_t)S * W + a] = a == L ? 0 : INFINITY;
    for (uint32_t s = S; s-- > 0;) {
        for (uint32_t a = 0; a <= L; a++) {
            double best = INFINITY;
            uint32_t bl = 0;
            int32_t bk = -1;
            const psched__fronts *fr = &pb->table[a];
            uint32_t lo, hi;
            psched__length_bounds(pb, s, fr, &lo, &hi);
            for (uint32_t len = lo; len <= hi; len++) {
                double rest = g[(size_t)(s + 1) * W + a + len];
                if (!(rest < INFINITY))
                    continue;
                uint32_t np;
                const psched__point *pts = psched__front(fr, len, &np);
                double param = psched__range_param(pb, a, len);
                /* points go by extra time, rising: without a memory price
                 * the first that fits is the cheapest */
                bool first_only = !(m->mu[pb->device_of[s]] > 0) && m->w[3 * s + 1] >= 0;
                for (uint32_t k = 0; k < np; k++) {
                    if (!psched__fits(pb, param + pb->inflight[s] * pts[k].act))
                        continue;
                    double v = psched__mult_stage(pb, m, s, a, len, pts[k].extra, pts[k].act) +
                               rest;
                    if (v < best) {
                        best = v;
                        bl = len;
                        bk = (int32_t)k;
                    }
                    if (first_only)
                        break;
                }
            }
            g[(size_t)s * W + a] = best;
            if (m->arg_len) {
                m->arg_len[(size_t)s * W + a] = bl;
                m->arg_k[(size_t)s * W + a] = bk;
            }
        }
    }
    m->value = m->constant + g[0];
}

bool psched__mult_argmin(const psched__problem *pb, const psched__mult *m,
                         psched__solution *sol)
{
    size_t W = (size_t)pb->layers + 1;
    uint32_t a = 0;
    if (!m->arg_len || !(m->g[0] < INFINITY))
        return false;
    for (uint32_t s = 0; s < pb->stages; s++) {
        uint32_t len = m->arg_len[(size_t)s * W + a];
        int32_t k = m->arg_k[(size_t)s * W + a];
        sol->first[s] = a;
        sol->count[s] = len;
        psched__fill_choices(&pb->table[a], len, k, sol->choice);
        a += len;
    }
    sol->found = true;
    return true;
}

/* Combined weights of λ over the pool and μ: w = Σ λ_P coef_P; the
 * constant Σ λ_P K_P − Σ μ_d. */
static void combine(const psched__paths *pp, const double *lambda, const double *mu,
                    psched__mult *m)
{
    for (size_t k = 0; k < pp->stride; k++)
        m->w[k] = 0;
    for (size_t i = 0; i < pp->n; i++) {
        if (lambda[i] <= 0)
            continue;
        const double *c = pp->coef + i * pp->stride;
        for (size_t k = 0; k < pp->stride; k++)
            m->w[k] += lambda[i] * c[k];
    }
    m->constant = m->w[3 * (size_t)pp->S];
    for (uint32_t d = 0; d < pp->D; d++) {
        m->mu[d] = pp->memory ? mu[d] : 0;
        m->constant -= m->mu[d];
    }
}

#ifdef PSCHED_HAVE_GLPK

#include <glpk.h>
#include <setjmp.h>
#include <limits.h>

typedef struct lp_ctx {
    jmp_buf jump;
} lp_ctx;

static void on_lp_error(void *info)
{
    lp_ctx *ctx = info;
    longjmp(ctx->jump, 1);
}

/* max z s.t. z <= Σ λ_P L_P(x_j) + Σ μ_d m_d(x_j) per cut j, Σ λ = 1,
 * λ >= 0, 0 <= μ_d <= mu_cap. */
static psched_status master_run(const psched__paths *pp, double mu_cap, double *lambda,
                                double *mu, double *z, double *xi)
{
    int n = (int)pp->n, D = pp->memory ? (int)pp->D : 0, ncol = n + D + 1;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MAX);
    glp_add_cols(lp, ncol);
    for (int k = 1; k <= n; k++)
        glp_set_col_bnds(lp, k, GLP_LO, 0, 0);
    for (int d = 1; d <= D; d++)
        glp_set_col_bnds(lp, n + d, mu_cap > 0 ? GLP_DB : GLP_FX, 0, fmax(0, mu_cap));
    glp_set_col_bnds(lp, ncol, GLP_FR, 0, 0);
    glp_set_obj_coef(lp, ncol, 1);
    int *idx = glp_alloc(ncol + 1, sizeof(int));
    double *val = glp_alloc(ncol + 1, sizeof(double));
    glp_add_rows(lp, (int)pp->nx + 1);
    for (int k = 1; k <= n; k++) {
        idx[k] = k;
        val[k] = 1;
    }
    glp_set_row_bnds(lp, 1, GLP_FX, 1, 1);
    glp_set_mat_row(lp, 1, n, idx, val);
    for (size_t j = 0; j < pp->nx; j++) {
        const double *x = pp->xv + j * pp->xstride;
        int cnt = 0;
        for (int k = 0; k < n; k++) {
            idx[++cnt] = k + 1;
            val[cnt] = -psched__paths_length(pp, (size_t)k, x);
        }
        for (int d = 0; d < D; d++) {
            idx[++cnt] = n + d + 1;
            val[cnt] = -x[3 * (size_t)pp->S + (size_t)d];
        }
        idx[++cnt] = ncol;
        val[cnt] = 1;
        glp_set_row_bnds(lp, (int)j + 2, GLP_UP, 0, 0);
        glp_set_mat_row(lp, (int)j + 2, cnt, idx, val);
    }
    glp_free(idx);
    glp_free(val);
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_OFF;
    int rc = glp_simplex(lp, &parm);
    psched_status st = PSCHED_OK;
    if (rc != 0 || glp_get_status(lp) != GLP_OPT) {
        st = psched_fail(PSCHED_ESOLVER, "GLPK's simplex did not solve the path bound's master "
                                         "LP (code %d)", rc);
    } else {
        for (int k = 0; k < n; k++)
            lambda[k] = fmax(0, glp_get_col_prim(lp, k + 1));
        for (uint32_t d = 0; d < pp->D; d++)
            mu[d] = d < (uint32_t)D ? fmax(0, glp_get_col_prim(lp, n + (int)d + 1)) : 0;
        *z = glp_get_col_prim(lp, ncol);
        double sum = 0;
        for (size_t j = 0; xi && j < pp->nx; j++)
            sum += xi[j] = fabs(glp_get_row_dual(lp, (int)j + 2));
        for (size_t j = 0; xi && j < pp->nx; j++)
            xi[j] = sum > 0 ? xi[j] / sum : 1.0 / (double)pp->nx;
    }
    glp_delete_prob(lp);
    return st;
}

static psched_status master(const psched__paths *pp, double mu_cap, double *lambda, double *mu,
                            double *z, double *xi)
{
    lp_ctx ctx;
    if (setjmp(ctx.jump)) {
        glp_error_hook(NULL, NULL);
        glp_free_env();
        return psched_fail(PSCHED_ESOLVER, "GLPK stopped with an internal error in the path "
                                           "bound's master LP");
    }
    glp_error_hook(on_lp_error, &ctx);
    glp_term_out(GLP_OFF);
    psched_status st = master_run(pp, mu_cap, lambda, mu, z, xi);
    glp_error_hook(NULL, NULL);
    glp_free_env();
    return st;
}

#endif

psched_status psched__mult_choose(const psched__problem *pb, const psched__paths *pp,
                                  double mu_cap, psched__mult *m, double *upper, double *xi)
{
    double *lambda = psched__calloc(pp->n + 1, sizeof(double));
    double *mu = psched__calloc((size_t)pp->D + 1, sizeof(double));
    psched_status st = lambda && mu ? PSCHED_OK : PSCHED_ENOMEM_FAIL();
    *upper = INFINITY;
#ifdef PSCHED_HAVE_GLPK
    if (!st && pp->nx > 0)
        st = master(pp, mu_cap, lambda, mu, upper, xi);
    if (!st && pp->nx > 0) {
        combine(pp, lambda, mu, m);
        psched__mult_dp(pb, m);
    }
#else
    (void)mu_cap;
    for (size_t j = 0; xi && j < pp->nx; j++)
        xi[j] = 1.0 / (double)pp->nx;
#endif
    if (!st && !(pp->nx > 0 && psched__have_glpk())) {
        /* without the master LP: the best single path, no memory term */
        double best = -INFINITY;
        for (size_t i = 0; i < pp->n; i++) {
            for (size_t k = 0; k < pp->n; k++)
                lambda[k] = k == i;
            combine(pp, lambda, mu, m);
            psched__mult_dp(pb, m);
            best = fmax(best, m->value);
        }
        for (size_t i = 0; i < pp->n; i++) {
            for (size_t k = 0; k < pp->n; k++)
                lambda[k] = k == i;
            combine(pp, lambda, mu, m);
            psched__mult_dp(pb, m);
            if (m->value >= best)
                break;
        }
    }
    psched__dealloc(lambda);
    psched__dealloc(mu);
    return st;
}

void psched__mult_single(const psched__problem *pb, const psched__paths *pp, size_t path,
                         psched__mult *m)
{
    const double *c = pp->coef + path * pp->stride;
    memcpy(m->w, c, pp->stride * sizeof(double));
    m->constant = c[3 * (size_t)pp->S];
    for (uint32_t d = 0; d < pp->D; d++)
        m->mu[d] = 0;
    psched__mult_dp(pb, m);
}

/* ---- the run MILP ---- */

bool psched__run_shape(const psched__problem *pb, psched__run *run)
{
    uint32_t L = pb->layers, S = pb->stages;
    memset(run, 0, sizeof *run);
    if (pb->allow_empty || S < 2 || L < 3)
        return false;
    uint32_t g = pb->group_of[1];
    for (uint32_t l = 2; l + 1 < L; l++)
        if (pb->group_of[l] != g)
            return false;
    run->head = pb->group_of[0] != g;
    run->tail = pb->group_of[L - 1] != g;
    run->first = run->head ? 1 : 0;
    run->count = L - (uint32_t)run->head - (uint32_t)run->tail;
    return true;
}

size_t psched__run_dag_units(const psched_schedule *sched)
{
    const psched_plan *sp = psched_schedule_plan(sched);
    size_t units = 0;
    for (uint32_t d = 0; d < psched_plan_devices(sp); d++) {
        size_t n = psched_schedule_op_count(sched, d);
        for (size_t i = 0; i < n; i++) {
            psched_op op;
            psched_schedule_ops(sched, d, i, 1, &op, sizeof op);
            /* the second op of an overlapped pair is its first's unit */
            units += !(op.flags & PSCHED_OP_OVERLAP_NEXT);
        }
    }
    return units;
}

#ifdef PSCHED_HAVE_GLPK

/* The present variants of layer l's group (indices into variant[]). */
static uint32_t variants_of(const psched__problem *pb, uint32_t l, uint8_t *out)
{
    const psched__group *gr = psched__layer_group(pb, l);
    uint32_t n = 0;
    for (uint8_t v = 0; v < PSCHED__RECOMPUTE_KINDS; v++)
        if (gr->variant[v].present)
            out[n++] = v;
    return n;
}

/* One layer l with variant v's share of an op of kind `kind` (a BW is a B
 * and a W; the recompute time goes with the backward). */
static double op_coef(const psched__problem *pb, uint8_t kind, uint32_t l, uint8_t v)
{
    double f = pb->f_prefix[l + 1] - pb->f_prefix[l];
    double b = pb->b_prefix[l + 1] - pb->b_prefix[l];
    double w = psched__range_time(pb, l, 1) - f - b;
    double extra = psched__layer_group(pb, l)->variant[v].extra;
    switch (kind) {
    case PSCHED_OP_F:
        return f;
    case PSCHED_OP_B:
        return b + extra;
    case PSCHED_OP_W:
        return w;
    default:
        return b + extra + w;
    }
}

/* Path P's (or, path = SIZE_MAX, the memory's) coefficient of one layer l
 * with variant v on range s. */
static double layer_coef(const psched__problem *pb, const psched__paths *pp, size_t path,
                         uint32_t s, uint32_t l, uint8_t v)
{
    const psched__variant *x = &psched__layer_group(pb, l)->variant[v];
    if (path == SIZE_MAX)
        return (psched__range_param(pb, l, 1) + pb->inflight[s] * x->act) / pb->limit;
    const double *c = pp->coef + path * pp->stride;
    return c[3 * (size_t)s] * op_coef(pb, PSCHED_OP_F, l, v) +
           c[3 * (size_t)s + 1] * op_coef(pb, PSCHED_OP_B, l, v) +
           c[3 * (size_t)s + 2] * op_coef(pb, PSCHED_OP_W, l, v);
}

/* GLPK's relative tolerances (10^-7) with a margin: the stopped tree's
 * bound is taken this fraction lower. */
#define RUN_TREE_TOL 1e-6

/* Where the run MILP's columns are and what they mean: k[s][q] (column
 * 1 + s·nv + q) run layers of variant rv[q] on stage s, then the head's
 * choice of hv (from hcol) and the tail's of tv (from tcol). */
typedef struct run_cols {
    const psched__problem *pb;
    const psched__run *run;
    uint8_t rv[PSCHED__RECOMPUTE_KINDS], hv[PSCHED__RECOMPUTE_KINDS], tv[PSCHED__RECOMPUTE_KINDS];
    uint32_t nv, nh, nt;
    int hcol, tcol;
} run_cols;

/* The partition of lp's integer solution (GLPK's incumbent) into sol;
 * sol->found says whether its rounded counts are a partition of every
 * layer. */
static void run_solution(const run_cols *rc, glp_prob *lp, psched__solution *sol)
{
    const psched__problem *pb = rc->pb;
    uint32_t S = pb->stages, L = pb->layers, a = 0;
    for (uint32_t s = 0; s < S; s++) {
        sol->first[s] = a;
        uint32_t at = a;
        if (s == 0 && rc->run->head) {
            for (uint32_t q = 0; q < rc->nh; q++)
                if (glp_mip_col_val(lp, rc->hcol + (int)q) > 0.5)
                    sol->choice[0] = rc->hv[q];
            at++;
        }
        for (uint32_t q = 0; q < rc->nv; q++) {
            double x = glp_mip_col_val(lp, (int)(s * rc->nv + q) + 1);
            uint32_t k = x > 0 ? (uint32_t)floor(x + 0.5) : 0;
            for (uint32_t u = 0; u < k && at < L; u++)
                sol->choice[at++] = rc->rv[q];
        }
        if (s == S - 1 && rc->run->tail) {
            for (uint32_t q = 0; q < rc->nt; q++)
                if (glp_mip_col_val(lp, rc->tcol + (int)q) > 0.5)
                    sol->choice[L - 1] = rc->tv[q];
            at++;
        }
        sol->count[s] = at - a;
        a = at;
    }
    sol->found = a == L && sol->count[S - 1] > 0;
}

/* Branch-and-cut callback of the run MILP: the largest over the search of
 * its open nodes' least bound (each a lower bound of every solution not
 * yet cut off; the ones cut off are at least the incumbent), the
 * branching order (the first aggregate that can be branched upon: each
 * device's run layers, then each stage's), the start as GLPK's first
 * incumbent, each integer solution GLPK finds handed over as a partition,
 * and the test hook's stop after a count of node selections. */
typedef struct run_tree {
    double open;    /* -INFINITY: no open node seen */
    size_t selects; /* GLP_ISELECT calls */
    int agg, naggs; /* the aggregates' columns: agg .. agg + naggs - 1 */
    /* each integer solution GLPK finds, handed to `found` (NULL: none) */
    const run_cols *cols;
    psched__solution *sol;
    psched__run_found found;
    void *found_ctx;
    psched_status st;
    /* the start's columns, GLPK's incumbent at its first heuristic call
     * (NULL: none, or handed over) */
    const double *start;
} run_tree;

static _Thread_local size_t test_run_selects;

void psched__run_milp_test_selects(size_t selects)
{
    test_run_selects = selects;
}

static void run_on_branch(glp_tree *tree, void *info)
{
    run_tree *t = info;
    int best = glp_ios_best_node(tree);
    if (best != 0)
        t->open = fmax(t->open, glp_ios_node_bound(tree, best));
    if (glp_ios_reason(tree) == GLP_IBRANCH) {
        for (int j = t->agg; j < t->agg + t->naggs; j++)
            if (glp_ios_can_branch(tree, j)) {
                glp_ios_branch_upon(tree, j, GLP_NO_BRNCH);
                break;
            }
    }
    if (glp_ios_reason(tree) == GLP_IHEUR && t->start) {
        /* rejected only when not better than GLPK's incumbent */
        glp_ios_heur_sol(tree, t->start);
        t->start = NULL;
    }
    if (glp_ios_reason(tree) == GLP_ISELECT && test_run_selects &&
        ++t->selects >= test_run_selects)
        glp_ios_terminate(tree);
    if (glp_ios_reason(tree) == GLP_IBINGO && t->found && !t->st) {
        /* GLPK has just recorded it as its incumbent */
        run_solution(t->cols, glp_ios_get_prob(tree), t->sol);
        if (t->sol->found)
            t->st = t->found(t->found_ctx, t->sol);
        if (t->st)
            glp_ios_terminate(tree);
    }
}


/* A unit of the DAG: an op, or an overlapped pair (which starts when both
 * its ops may and takes their summed time). */
typedef struct dag_unit {
    size_t op;   /* its first op */
    uint32_t n;  /* its ops: 1, or 2 for a pair */
    size_t prev; /* the device's unit before it (SIZE_MAX: none) */
    int col;     /* its end's column, 0 when eliminated */
} dag_unit;

/* Unit u's duration's coefficients added into coef (dense over the count
 * columns: a pair's two ops may share a stage's). */
static void dag_dur(const run_cols *rc, const dag_ops *g, const dag_unit *u, double *coef)
{
    const psched__problem *pb = rc->pb;
    for (size_t i = u->op; i < u->op + u->n; i++) {
        const psched_op *o = &g->ops[i];
        uint32_t r = psched__range_of(pb, o->stage);
        for (uint32_t q = 0; q < rc->nv; q++)
            coef[r * rc->nv + q + 1] += op_coef(pb, o->kind, rc->run->first, rc->rv[q]);
        for (uint32_t q = 0; r == 0 && q < rc->nh; q++)
            coef[rc->hcol + (int)q] += op_coef(pb, o->kind, 0, rc->hv[q]);
        for (uint32_t q = 0; r == pb->stages - 1 && q < rc->nt; q++)
            coef[rc->tcol + (int)q] += op_coef(pb, o->kind, pb->layers - 1, rc->tv[q]);
    }
}

/* Unit v's end as a column (returned, 0: none) plus the durations added
 * into coef: an eliminated unit ends at its device's unit before's end +
 * its duration. */
static int dag_end(const run_cols *rc, const dag_ops *g, const dag_unit *units, size_t v,
                   double *coef)
{
    while (v != SIZE_MAX && units[v].col == 0) {
        dag_dur(rc, g, &units[v], coef);
        v = units[v].prev;
    }
    return v == SIZE_MAX ? 0 : units[v].col;
}

/* The row col − anchor (0: none) − Σ coef·k ≥ rhs, coef dense over the
 * count columns 1 .. ncount (left zero); idx and val hold ncount + 2. */
static void dag_row(glp_prob *lp, int col, int anchor, double *coef, int ncount, double rhs,
                    int *idx, double *val)
{
    int cnt = 0;
    idx[++cnt] = col, val[cnt] = 1;
    if (anchor)
        idx[++cnt] = anchor, val[cnt] = -1;
    for (int j = 1; j <= ncount; j++)
        if (coef[j] != 0) {
            idx[++cnt] = j, val[cnt] = -coef[j];
            coef[j] = 0;
        }
    int row = glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, row, GLP_LO, rhs, 0);
    glp_set_mat_row(lp, row, cnt, idx, val);
}

/* The count columns (k, the head's and tail's choices, the aggregates
 * from agg) of a partition into xs. */
static void run_start(const run_cols *rc, const psched__solution *start, int agg, double *xs)
{
    const psched__problem *pb = rc->pb;
    uint32_t S = pb->stages, L = pb->layers;
    for (uint32_t s = 0; s < S; s++)
        for (uint32_t l = start->first[s]; l < start->first[s] + start->count[s]; l++) {
            bool head = rc->run->head && l == 0, tail = rc->run->tail && l == L - 1;
            uint32_t n = head ? rc->nh : tail ? rc->nt : rc->nv;
            const uint8_t *kinds = head ? rc->hv : tail ? rc->tv : rc->rv;
            int c0 = head ? rc->hcol : tail ? rc->tcol : (int)(s * rc->nv) + 1;
            for (uint32_t q = 0; q < n; q++) {
                if (start->choice[l] != kinds[q])
                    continue;
                xs[c0 + (int)q] += 1;
                if (!head && !tail) {
                    xs[agg + (int)pb->device_of[s]] += 1;
                    xs[agg + (int)(pb->devices + s)] += 1;
                }
            }
        }
}

static _Thread_local size_t test_dag_mirrored;

size_t psched__run_dag_test_mirrored(void)
{
    return test_dag_mirrored;
}

/* Whether a two-chain order is its own mirror image: device p−1−d runs,
 * position by position, device d's ops with the chains swapped (stage s
 * <-> s ± the stages per chain, both of one range: DualPipe's order), so
 * that each unit u has a mirror mu[u] whose device unit before, inputs
 * and latencies are the mirrors of u's and whose ops cost what u's do.
 * Then for every partition the longest paths into u and mu[u] are equal,
 * and the MILP needs one end column and one set of rows per pair: a
 * solution of the full rows gives one of the halved rows with the same z
 * (the mirrored ends are the same rows over the same counts), and one of
 * the halved rows, each end taken for its mirror too, is one of the full
 * rows. */
static bool dag_mirror(const psched__problem *pb, const dag_ops *g, const dag_unit *units,
                       const size_t *unit_of, const size_t *in_unit, const double *in_lat,
                       size_t nu, uint32_t p, size_t *mu)
{
    if (pb->chains != 2 || g->stages != 2 * g->per)
        return false;
    for (uint32_t d = 0; d < p; d++)
        if (g->offset[d + 1] - g->offset[d] != g->offset[p - d] - g->offset[p - 1 - d])
            return false;
    for (uint32_t d = 0; d < p; d++)
        for (size_t i = 0; i < g->offset[d + 1] - g->offset[d]; i++) {
            const psched_op *a = &g->ops[g->offset[d] + i], *b = &g->ops[g->offset[p - 1 - d] + i];
            if (a->kind != b->kind || a->microbatch != b->microbatch || a->flags != b->flags ||
                b->stage != (a->stage + g->per) % g->stages ||
                psched__range_of(pb, a->stage) != psched__range_of(pb, b->stage))
                return false;
        }
    for (size_t u = 0; u < nu; u++) {
        size_t op = units[u].op;
        uint32_t d = 0;
        while (g->offset[d + 1] <= op)
            d++;
        size_t mop = g->offset[p - 1 - d] + (op - g->offset[d]);
        mu[u] = unit_of[mop];
        if (units[mu[u]].op != mop || units[mu[u]].n != units[u].n)
            return false;
    }
    for (size_t u = 0; u < nu; u++) {
        size_t v = mu[u], prev = units[u].prev;
        if (units[v].prev != (prev == SIZE_MAX ? SIZE_MAX : mu[prev]))
            return false;
        /* the inputs as sets, with their latencies */
        for (size_t k = 0; k < 2; k++) {
            size_t h = in_unit[2 * u + k];
            size_t want = h == SIZE_MAX ? SIZE_MAX : mu[h];
            bool found = false;
            for (size_t j = 0; j < 2 && !found; j++)
                found = in_unit[2 * v + j] == want &&
                        (want == SIZE_MAX || in_lat[2 * v + j] == in_lat[2 * u + k]);
            if (!found)
                return false;
        }
    }
    return true;
}

/* The DAG rows of the run MILP (psched__run_milp() with an order): per
 * unit its end e_u ≥ 0, and per predecessor (the device's unit before it,
 * each op's input from the neighbouring stage, + t_comm from another
 * device) a row
 *     e_u − e_pred − dur_u(k) ≥ latency,
 * dur_u linear in the counts; z ≥ each device's last unit's end. With the
 * least e the longest path, so the MILP's optimum is the least step time
 * over every partition that fits (the simulator's, for an order that does
 * not depend on the costs and the plain cost model). A unit whose only
 * predecessor is the device's unit before it (a W, the first stage's F)
 * has no column: its end, e_pred + dur_u at the optimum, is written into
 * the rows that use it (fewer columns and rows for GLPK's nodes). With
 * xs (NULL: none), the simulation `times` of a partition with this order:
 * each column unit's end (its last op's) and the step time go to their
 * columns in xs. With stride > 1 (0 and 1: every micro-batch) only the
 * ops of each chain's micro-batches 0, stride, 2·stride, … and its last
 * keep their inputs' rows: fewer rows only lower the optimum, so it is a
 * lower bound of every fitting partition's step time, not the least one
 * (the units of the others lose their columns as a W's does). A
 * mirror-symmetric two-chain order (dag_mirror()) gets one column and one
 * set of rows per pair of mirrored units, and z's rows for half the
 * devices. */
static psched_status dag_rows(glp_prob *lp, const run_cols *rc, const psched_schedule *sched,
                              uint32_t stride, int zcol, const psched_report *times, double *xs)
{
    const psched_plan *sp = psched_schedule_plan(sched);
    uint32_t p = psched_plan_devices(sp);
    double comm = psched_plan_comm(sp);
    int ncount = glp_get_num_cols(lp);
    dag_ops g;
    psched_status st = dag_ops_read(sched, &g);
    if (st)
        return st;
    size_t *unit_of = psched__calloc(g.total + 1, sizeof *unit_of);
    dag_unit *units = psched__calloc(g.total + 1, sizeof *units);
    /* per unit its inputs' units and latencies (at most one per op) */
    size_t *in_unit = psched__calloc(2 * g.total + 2, sizeof *in_unit);
    double *in_lat = psched__calloc(2 * g.total + 2, sizeof *in_lat);
    double *coef = psched__calloc((size_t)ncount + 1, sizeof *coef);
    int *idx = psched__calloc((size_t)ncount + 3, sizeof *idx);
    double *val = psched__calloc((size_t)ncount + 3, sizeof *val);
    size_t *mu = psched__calloc(g.total + 1, sizeof *mu);
    if (!unit_of || !units || !in_unit || !in_lat || !coef || !idx || !val || !mu)
        st = PSCHED_ENOMEM_FAIL();
    size_t nu = 0;
    for (uint32_t d = 0; !st && d < p; d++)
        for (size_t i = g.offset[d]; i < g.offset[d + 1]; i++) {
            if (i > g.offset[d] && (g.ops[i - 1].flags & PSCHED_OP_OVERLAP_NEXT)) {
                unit_of[i] = unit_of[i - 1];
                units[unit_of[i]].n = 2;
                continue;
            }
            units[nu] = (dag_unit){i, 1, i > g.offset[d] ? unit_of[i - 1] : SIZE_MAX, 0};
            unit_of[i] = nu++;
        }
    /* the inputs; a unit with none keeps no column */
    int cols = 0;
    for (size_t u = 0; !st && u < nu; u++) {
        uint32_t d = psched_plan_stage_device(sp, g.ops[units[u].op].stage);
        size_t k = 0;
        for (size_t i = units[u].op; i < units[u].op + units[u].n; i++) {
            uint32_t in, mb = g.ops[i].microbatch;
            size_t h = dag_input(&g, i, &in);
            if (h == SIZE_MAX)
                continue;
            if (stride > 1 && mb % stride != 0 && mb + 1 != g.mbs)
                continue; /* a micro-batch between the kept ones: no input */
            h = unit_of[h];
            if (h == u)
                continue; /* both ops of a pair */
            in_unit[2 * u + k] = h;
            in_lat[2 * u + k++] = psched_plan_stage_device(sp, in) != d ? comm : 0;
        }
        for (; k < 2; k++)
            in_unit[2 * u + k] = SIZE_MAX;
    }
    bool mirrored = !st && dag_mirror(rc->pb, &g, units, unit_of, in_unit, in_lat, nu, p, mu);
    if (mirrored)
        test_dag_mirrored++;
    for (size_t u = 0; !st && u < nu; u++)
        if (in_unit[2 * u] != SIZE_MAX)
            units[u].col = mirrored && mu[u] < u ? units[mu[u]].col : ncount + ++cols;
    if (!st && cols > 0) {
        glp_add_cols(lp, cols);
        for (int j = ncount + 1; j <= ncount + cols; j++)
            glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
    }
    for (size_t u = 0; !st && u < nu; u++) {
        if (units[u].col == 0 || (mirrored && mu[u] < u))
            continue;
        /* a row per predecessor: the device's unit before, each input */
        for (int k = -1; k < 2; k++) {
            size_t v = k < 0 ? units[u].prev : in_unit[2 * u + (size_t)k];
            if (k >= 0 && v == SIZE_MAX)
                continue;
            dag_dur(rc, &g, &units[u], coef);
            int anchor = dag_end(rc, &g, units, v, coef);
            dag_row(lp, units[u].col, anchor, coef, ncount, k < 0 ? 0 : in_lat[2 * u + (size_t)k],
                    idx, val);
        }
    }
    if (!st && xs) {
        /* the report's ops are the order's, device by device */
        double *end = psched__calloc(g.total + 1, sizeof *end);
        if (!end)
            st = PSCHED_ENOMEM_FAIL();
        for (uint32_t d = 0; !st && d < p; d++)
            st = psched_report_op_times(times, d, 0, g.offset[d + 1] - g.offset[d], NULL,
                                        end + g.offset[d]);
        for (size_t u = 0; !st && u < nu; u++)
            if (units[u].col) /* (a mirrored pair's ends are equal) */
                xs[units[u].col] = fmax(xs[units[u].col], end[units[u].op + units[u].n - 1]);
        if (!st)
            xs[zcol] = psched_report_makespan(times);
        psched__dealloc(end);
    }
    /* z ≥ each device's last unit's end */
    for (uint32_t d = 0; !st && d < p; d++) {
        if (g.offset[d + 1] == g.offset[d] || (mirrored && p - 1 - d < d))
            continue;
        int anchor = dag_end(rc, &g, units, unit_of[g.offset[d + 1] - 1], coef);
        dag_row(lp, zcol, anchor, coef, ncount, 0, idx, val);
    }
    psched__dealloc(unit_of);
    psched__dealloc(units);
    psched__dealloc(in_unit);
    psched__dealloc(in_lat);
    psched__dealloc(coef);
    psched__dealloc(idx);
    psched__dealloc(val);
    psched__dealloc(mu);
    dag_ops_free(&g);
    return st;
}

/* The end of run_milp_solve(): the start's columns (GLPK's allocation)
 * and the problem freed, st returned. */
static psched_status run_done(glp_prob *lp, double *xs, psched_status st)
{
    if (xs)
        glp_free(xs);
    glp_delete_prob(lp);
    return st;
}

static psched_status run_milp_solve(const psched__problem *pb, const psched__paths *pp,
                                    const psched__run *run, const bool *use,
                                    const psched_schedule *dag, uint32_t stride, double below,
                                    double until,
                                    const psched__solution *start,
                                    const psched_report *start_times, psched__run_found found,
                                    void *found_ctx, psched__solution *sol, double *z,
                                    bool *solved, bool *none, double *tree_bound)
{
    uint32_t S = pb->stages, L = pb->layers, D = pb->devices;
    run_cols rc = {.pb = pb, .run = run};
    const uint8_t *rv = rc.rv, *hv = rc.hv, *tv = rc.tv;
    uint32_t r = run->first, nv = rc.nv = variants_of(pb, r, rc.rv);
    uint32_t nh = rc.nh = run->head ? variants_of(pb, 0, rc.hv) : 0;
    uint32_t nt = rc.nt = run->tail ? variants_of(pb, L - 1, rc.tv) : 0;
    /* columns: k[s][q] (1 + s·nv + q), the head's and tail's choices, z */
    int hcol = (int)(S * nv) + 1, tcol = hcol + (int)nh, zcol = tcol + (int)nt;
    rc.hcol = hcol;
    rc.tcol = tcol;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, zcol);
    for (int j = 1; j < zcol; j++) {
        glp_set_col_kind(lp, j, GLP_IV);
        glp_set_col_bnds(lp, j, GLP_DB, 0, j < hcol ? run->count : 1);
    }
    glp_set_col_bnds(lp, zcol, isfinite(below) ? GLP_DB : GLP_LO, 0, below);
    glp_set_obj_coef(lp, zcol, 1);
    int *idx = glp_alloc(zcol + 1, sizeof(int));
    double *val = glp_alloc(zcol + 1, sizeof(double));
    int row = 0, cnt;
    /* every run layer goes to one stage */
    cnt = 0;
    for (int j = 1; j < hcol; j++)
        idx[++cnt] = j, val[cnt] = 1;
    row = glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, row, GLP_FX, run->count, run->count);
    glp_set_mat_row(lp, row, cnt, idx, val);
    /* no stage empty (the head and tail fill stage 0 and S-1) */
    for (uint32_t s = 0; s < S; s++) {
        if ((s == 0 && run->head) || (s == S - 1 && run->tail))
            continue;
        cnt = 0;
        for (uint32_t q = 0; q < nv; q++)
            idx[++cnt] = (int)(s * nv + q) + 1, val[cnt] = 1;
        row = glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, row, GLP_LO, 1, 0);
        glp_set_mat_row(lp, row, cnt, idx, val);
    }
    /* one variant each for the head and the tail */
    for (int part = 0; part < 2; part++) {
        uint32_t n = part ? nt : nh;
        int c0 = part ? tcol : hcol;
        if (!n)
            continue;
        cnt = 0;
        for (uint32_t q = 0; q < n; q++)
            idx[++cnt] = c0 + (int)q, val[cnt] = 1;
        row = glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, row, GLP_FX, 1, 1);
        glp_set_mat_row(lp, row, cnt, idx, val);
    }
    /* rows of one path (path < npaths: z − Σ coef·k ≥ K; none with the
     * DAG's rows) or of device d's memory over the limit (Σ mem/limit ≤ 1) */
    size_t npaths = dag ? 0 : pp->n;
    size_t nrows = npaths + (isfinite(pb->limit) ? D : 0);
    for (size_t t = 0; t < nrows; t++) {
        bool mem = t >= npaths;
        size_t path = mem ? SIZE_MAX : t;
        uint32_t d = mem ? (uint32_t)(t - npaths) : 0;
        if (!mem && use && !use[t])
            continue;
        cnt = 0;
        for (uint32_t s = 0; s < S; s++) {
            if (mem && pb->device_of[s] != d)
                continue;
            for (uint32_t q = 0; q < nv; q++)
                idx[++cnt] = (int)(s * nv + q) + 1,
                val[cnt] = -layer_coef(pb, pp, path, s, r, rv[q]);
        }
        double rhs = mem ? -(1 + 1e-12) : pp->coef[t * pp->stride + 3 * (size_t)S];
        if (nh && (!mem || pb->device_of[0] == d))
            for (uint32_t q = 0; q < nh; q++)
                idx[++cnt] = hcol + (int)q, val[cnt] = -layer_coef(pb, pp, path, 0, 0, hv[q]);
        if (nt && (!mem || pb->device_of[S - 1] == d))
            for (uint32_t q = 0; q < nt; q++)
                idx[++cnt] = tcol + (int)q,
                val[cnt] = -layer_coef(pb, pp, path, S - 1, L - 1, tv[q]);
        if (!mem)
            idx[++cnt] = zcol, val[cnt] = 1;
        row = glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, row, GLP_LO, rhs, 0);
        glp_set_mat_row(lp, row, cnt, idx, val);
    }
    /* each device runs m x its layers' time (recompute included) alone */
    for (uint32_t d = 0; isfinite(below) && d < D; d++) {
        cnt = 0;
        double rhs = below;
        for (uint32_t s = 0; s < S; s++) {
            if (pb->device_of[s] != d)
                continue;
            for (uint32_t q = 0; q < nv; q++)
                idx[++cnt] = (int)(s * nv + q) + 1,
                val[cnt] = pb->microbatches * (psched__range_time(pb, r, 1) +
                                               psched__layer_group(pb, r)->variant[rv[q]].extra);
            for (uint32_t q = 0; s == 0 && q < nh; q++)
                idx[++cnt] = hcol + (int)q,
                val[cnt] = pb->microbatches * (psched__range_time(pb, 0, 1) +
                                               psched__layer_group(pb, 0)->variant[hv[q]].extra);
            for (uint32_t q = 0; s == S - 1 && q < nt; q++)
                idx[++cnt] = tcol + (int)q,
                val[cnt] = pb->microbatches *
                           (psched__range_time(pb, L - 1, 1) +
                            psched__layer_group(pb, L - 1)->variant[tv[q]].extra);
        }
        row = glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, row, GLP_UP, 0, rhs);
        glp_set_mat_row(lp, row, cnt, idx, val);
    }
    /* Aggregates: each device's run layers and each stage's, integer
     * columns (agg: D devices, then S stages) equal to their sums. Whole
     * counts per device are what the layer count bound rounds (every
     * device of LLaMA-70B at v = 4 holds exactly 10 of 80), and branching
     * on them first, then on each stage's total, instead of on one
     * variant's count of one stage, raises the tree's bound much faster
     * (docs/optimizer.md, "The run MILP"). */
    int agg = zcol + 1, naggs = (int)(D + S);
    glp_add_cols(lp, naggs);
    for (int j = agg; j < agg + naggs; j++) {
        glp_set_col_kind(lp, j, GLP_IV);
        glp_set_col_bnds(lp, j, GLP_DB, 0, run->count);
    }
    for (uint32_t a = 0; a < D + S; a++) {
        bool dev = a < D;
        cnt = 0;
        idx[++cnt] = agg + (int)a, val[cnt] = 1;
        for (uint32_t s = 0; s < S; s++) {
            if (dev ? pb->device_of[s] != a : s != a - D)
                continue;
            for (uint32_t q = 0; q < nv; q++)
                idx[++cnt] = (int)(s * nv + q) + 1, val[cnt] = -1;
        }
        row = glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, row, GLP_FX, 0, 0);
        glp_set_mat_row(lp, row, cnt, idx, val);
    }
    glp_free(idx);
    glp_free(val);
    /* The start (the best partition so far) as GLPK's first incumbent, at
     * its step time over the DAG, at its longest path of the rows' pool
     * over the paths: GLPK's reduced-cost fixing needs an incumbent, and
     * with it the DAG's proofs take a third to half the time (DualPipe on
     * 16 devices, L = 80: 11.2 -> 3.5 s of MILP; docs/optimizer.md). z's
     * bound rises to its value, so that an optimum at the start proves it
     * (as no partition below `below` did). */
    double *xs = NULL;
    psched_status st = PSCHED_OK;
    if (start && start->found && (!dag || start_times)) {
        /* GLPK's allocator: freed with its environment if it fails */
        size_t cols = (size_t)glp_get_num_cols(lp) + (dag ? psched__run_dag_units(dag) : 0) + 1;
        xs = cols < INT_MAX / sizeof *xs ? glp_alloc((int)cols, sizeof *xs) : NULL;
        if (!xs) {
            st = PSCHED_ENOMEM_FAIL();
        } else {
            memset(xs, 0, cols * sizeof *xs);
            run_start(&rc, start, agg, xs);
        }
    }
    if (!st && dag)
        st = dag_rows(lp, &rc, dag, stride, zcol, start_times, xs);
    if (!st && xs && !dag) {
        double *x = psched__calloc(3 * (size_t)S + D, sizeof *x);
        if (!x) {
            st = PSCHED_ENOMEM_FAIL();
        } else {
            psched__paths_vector(pb, start, x);
            xs[zcol] = psched__paths_max(pp, use, x); /* the rows' longest */
        }
        psched__dealloc(x);
    }
    if (st)
        return run_done(lp, xs, st);
    if (xs && isfinite(below))
        glp_set_col_bnds(lp, zcol, GLP_DB, 0, fmax(below, xs[zcol]));
    /* The branching order names the columns of this problem, so GLPK's
     * MIP presolver (which renumbers them) stays off and the LP relaxation
     * is solved first, with the LP presolver. */
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.presolve = GLP_ON;
    sm.tm_lim = psched__glpk_ms_left(until);
    int lp_rc = glp_simplex(lp, &sm);
    if (lp_rc == GLP_ENOPFS || (lp_rc == 0 && glp_get_status(lp) == GLP_NOFEAS)) {
        /* no partition below `below`, even fractional */
        *none = true;
        return run_done(lp, xs, PSCHED_OK);
    }
    if (lp_rc != 0 || glp_get_status(lp) != GLP_OPT)
        return run_done(lp, xs, PSCHED_OK); /* out of time (or GLPK gave up): no claim */
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.presolve = GLP_OFF;
    io.mip_gap = 0;
    /* No Gomory or MIR cuts: with the aggregates they cost more nodes
     * than they raise the bound (grid at 5 s: L = 80, p = 8 v-zb 4.61% ->
     * 0.33%, interleaved v = 4 4.96% -> 3.21%; docs/optimizer-passes.md) */
    io.gmi_cuts = GLP_OFF;
    io.mir_cuts = GLP_OFF;
    /* Over the DAG, no preprocessing at the nodes (GLPK's default at
     * every node): its cost per node over hundreds of rows is what the
     * tree lacks (grid at 5 s, L = 80, p = 4 interleaved v = 4: 0.10% ->
     * 0.005%; docs/optimizer-passes.md) */
    if (dag) {
        io.pp_tech = GLP_PP_NONE;
        /* and, after the aggregates, hybrid pseudocost branching (GLPK's
         * default, Driebeck-Tomlin, needs 2-3x the nodes there: L = 80,
         * p = 4 interleaved v = 4 proven in 1.6 s of MILP against 5.0 s,
         * L = 128 in 2.8 s against 5.9 s) */
        io.br_tech = GLP_BR_PCH;
    }
    io.tm_lim = psched__glpk_ms_left(until);
    run_tree tree = {-INFINITY, 0, agg, naggs, &rc, sol, found, found_ctx, PSCHED_OK, xs};
    io.cb_func = run_on_branch;
    io.cb_info = &tree;
    int ret = glp_intopt(lp, &io);
    if (tree.st)
        return run_done(lp, xs, tree.st);
    *solved = ret == 0 && glp_mip_status(lp) == GLP_OPT;
    /* (GLP_ENOPFS comes from the MIP presolver, off here: the LP above
     * answers an infeasible relaxation) */
    *none = ret == 0 && glp_mip_status(lp) == GLP_NOFEAS;
    bool stopped = ret == GLP_ETMLIM || ret == GLP_ESTOP;
    if (stopped && isfinite(tree.open)) {
        /* stopped: the optimum is in an open node (at least the largest
         * least bound seen) or in one cut off (at least the incumbent it
         * was cut against, which only falls), within GLPK's tolerances */
        double b = tree.open;
        if (glp_mip_status(lp) == GLP_FEAS)
            b = fmin(b, glp_mip_obj_val(lp));
        *tree_bound = fmin(b, below) * (1 - RUN_TREE_TOL);
    }
    /* the optimum, or where GLPK stopped first its incumbent, which is
     * handed over too: its heuristics record solutions without the
     * callback */
    bool have = *solved || (stopped && glp_mip_status(lp) == GLP_FEAS);
    if (have) {
        if (*solved)
            *z = glp_mip_obj_val(lp);
        /* the rounded counts must be a partition of every layer */
        run_solution(&rc, lp, sol);
        *solved = *solved && sol->found;
        if (!*solved && sol->found && found)
            st = found(found_ctx, sol);
    }
    return run_done(lp, xs, st);
}

psched_status psched__run_milp(const psched__problem *pb, const psched__paths *pp,
                               const psched__run *run, const bool *use,
                               const psched_schedule *dag, uint32_t stride, double below,
                               double until,
                               const psched__solution *start,
                               const psched_report *start_times, psched__run_found found,
                               void *found_ctx, psched__solution *sol, double *z, bool *solved,
                               bool *none, double *tree_bound)
{
    *solved = *none = false;
    *tree_bound = 0;
    sol->found = false;
    lp_ctx ctx;
    if (setjmp(ctx.jump)) {
        glp_error_hook(NULL, NULL);
        glp_free_env();
        *solved = *none = false;
        return PSCHED_OK; /* GLPK's internal error: no claim */
    }
    glp_error_hook(on_lp_error, &ctx);
    glp_term_out(GLP_OFF);
    psched_status st = run_milp_solve(pb, pp, run, use, dag, stride, below, until, start,
                                      start_times, found, found_ctx, sol, z, solved, none,
                                      tree_bound);
    glp_error_hook(NULL, NULL);
    glp_free_env();
    return st;
}

#else

psched_status psched__run_milp(const psched__problem *pb, const psched__paths *pp,
                               const psched__run *run, const bool *use,
                               const psched_schedule *dag, uint32_t stride, double below,
                               double until,
                               const psched__solution *start,
                               const psched_report *start_times, psched__run_found found,
                               void *found_ctx, psched__solution *sol, double *z, bool *solved,
                               bool *none, double *tree_bound)
{
    (void)pb, (void)pp, (void)run, (void)use, (void)dag, (void)stride, (void)below, (void)until;
    (void)z;
    (void)start, (void)start_times, (void)found, (void)found_ctx;
    *solved = *none = false;
    *tree_bound = 0;
    sol->found = false;
    return PSCHED_OK;
}

void psched__run_milp_test_selects(size_t selects)
{
    (void)selects;
}

size_t psched__run_dag_test_mirrored(void)
{
    return 0;
}

#endif
