/* The exact scheduler's MILP, solved with GLPK (GPL-3.0-or-later, optional).
 *
 * Variables: the start S_i of every op; for every pair of ops on one device
 * whose order is not already forced, a binary x (1: the lower-numbered op
 * first); per device its first start and last end; the span. Rows:
 *  - dependencies: S_i >= S_j + t_j + latency for every edge j -> i;
 *  - one device runs one op at a time: big-M disjunctions on x;
 *  - the memory limit: for every op, the deltas of the ops before it on its
 *    device plus its own stay within the limit (the running sum in list
 *    order, as the simulator counts it);
 *  - the simulator starts every op as soon as it can (ASAP), and the span
 *    depends on when a device's FIRST op starts, so a solution must not
 *    delay ops to shorten a span: every op starts exactly at the end of one
 *    of its predecessors (a dependency plus latency, or the op before it on
 *    its device) or at 0. One binary per candidate, exactly one chosen.
 *    With this, the MILP's times are the simulator's times of its order and
 *    its optimum is the best simulated span over all valid orders.
 *  - span >= last end - first start of every device, span >= the bound.
 * GLPK reports internal errors by calling a hook and then aborting; the
 * hook longjmps back and the thread's GLPK environment is freed, as in
 * lib/optimizer/partition_glpk.c. */
#include "optimal_milp.h"
#include "optimizer.h" /* psched__now, psched__glpk_ms_left (lib/optimizer/clock.c) */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef PSCHED_HAVE_GLPK

bool psched__exact_available(void)
{
    return false;
}

psched_status psched__exact_solve(const psched__exact *in, uint32_t *pos,
                                  psched__exact_result *result)
{
    (void)in, (void)pos, (void)result;
    return psched_fail(PSCHED_EUNSUPPORTED,
                       "generator optimal needs GLPK, and this build of pipesched has none "
                       "(meson option -Dglpk)");
}

#else

#include <glpk.h>
#include <setjmp.h>

bool psched__exact_available(void)
{
    return true;
}

/* The model as index tables, so the seed can be written in the same layout. */
typedef struct model {
    const psched__exact *in;
    int first, last, span;  /* first column of first_d, last_d; the span column */
    int *pair;              /* n·n: column of x for a free pair (i < j), else 0 */
    /* tightness candidates of op i: cand[cand_at[i] .. cand_at[i+1]) */
    size_t *cand_at;
    int *cand_col;          /* the binary */
    int *cand_op;           /* the predecessor op, or -1 for "starts at 0" */
    int ncols;
    /* the matrix as triplets, 1-based as GLPK wants */
    int *ia, *ja;
    double *ar;
    size_t nz, nz_cap;
    int nrows;
} model;

typedef struct solve_ctx {
    model *mod;
    jmp_buf jump;
    bool seed_given;
    long nodes;
    double bound;
} solve_ctx;

static bool push(model *m, int row, int col, double val)
{
    if (m->nz + 1 >= m->nz_cap) {
        size_t cap = m->nz_cap ? 2 * m->nz_cap : 1024;
        int *ia = psched__reallocarray(m->ia, cap, sizeof *ia);
        if (!ia)
            return false;
        m->ia = ia;
        int *ja = psched__reallocarray(m->ja, cap, sizeof *ja);
        if (!ja)
            return false;
        m->ja = ja;
        double *ar = psched__reallocarray(m->ar, cap, sizeof *ar);
        if (!ar)
            return false;
        m->ar = ar;
        m->nz_cap = cap;
    }
    m->nz++;
    m->ia[m->nz] = row, m->ja[m->nz] = col, m->ar[m->nz] = val;
    return true;
}

/* "op a runs before op b" (same device) as constant + coef·x. */
static int order_term(const model *m, uint32_t a, uint32_t b, double *constant, double *coef)
{
    uint32_t n = m->in->n;
    if (m->in->before[(size_t)a * n + b]) {
        *constant = 1, *coef = 0;
        return 0;
    }
    if (m->in->before[(size_t)b * n + a]) {
        *constant = 0, *coef = 0;
        return 0;
    }
    if (a < b) {
        *constant = 0, *coef = 1;
        return m->pair[(size_t)a * n + b];
    }
    *constant = 1, *coef = -1;
    return m->pair[(size_t)b * n + a];
}

static int start_col(uint32_t i)
{
    return (int)i + 1;
}

/* Columns: S, first, last, span, free pairs, tightness candidates. */
static bool layout_columns(model *m)
{
    const psched__exact *in = m->in;
    uint32_t n = in->n;
    int col = (int)n;
    m->first = col + 1;
    m->last = m->first + (int)in->devices;
    m->span = m->last + (int)in->devices;
    col = m->span;
    m->pair = psched__calloc((size_t)n * n, sizeof *m->pair);
    m->cand_at = psched__calloc((size_t)n + 1, sizeof *m->cand_at);
    if (!m->pair || !m->cand_at)
        return false;
    size_t cands = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++) {
            if (j == i || in->ops[j].device != in->ops[i].device)
                continue;
            if (j > i && !in->before[(size_t)i * n + j] && !in->before[(size_t)j * n + i])
                m->pair[(size_t)i * n + j] = ++col;
            cands += !in->before[(size_t)i * n + j];
        }
    for (uint32_t i = 0; i < n; i++)
        cands += 1 + in->ops[i].ndep;
    m->cand_col = psched__calloc(cands, sizeof *m->cand_col);
    m->cand_op = psched__calloc(cands, sizeof *m->cand_op);
    if (!m->cand_col || !m->cand_op)
        return false;
    size_t c = 0;
    for (uint32_t i = 0; i < n; i++) {
        m->cand_at[i] = c;
        m->cand_op[c] = -1, m->cand_col[c++] = ++col;
        for (uint32_t k = 0; k < in->ops[i].ndep; k++)
            m->cand_op[c] = (int)in->ops[i].dep[k], m->cand_col[c++] = ++col;
        for (uint32_t j = 0; j < n; j++)
            if (j != i && in->ops[j].device == in->ops[i].device &&
                !in->before[(size_t)i * n + j])
                m->cand_op[c] = (int)j, m->cand_col[c++] = ++col;
    }
    m->cand_at[n] = c;
    m->ncols = col;
    return true;
}

/* Earliest start of every op from the forced orders alone: a column bound
 * that tightens the relaxation. */
static void earliest_starts(const psched__exact *in, double *es)
{
    uint32_t n = in->n;
    /* the number of forced predecessors is a topological order */
    uint32_t *order = psched__calloc(n, sizeof *order), *preds = psched__calloc(n, sizeof *preds);
    if (!order || !preds) {
        for (uint32_t i = 0; i < n; i++)
            es[i] = 0;
        psched__dealloc(order);
        psched__dealloc(preds);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        order[i] = i;
        for (uint32_t j = 0; j < n; j++)
            preds[i] += in->before[(size_t)j * n + i];
    }
    for (uint32_t a = 1; a < n; a++) /* insertion sort: n is small */
        for (uint32_t b = a; b > 0 && preds[order[b - 1]] > preds[order[b]]; b--) {
            uint32_t t = order[b];
            order[b] = order[b - 1], order[b - 1] = t;
        }
    for (uint32_t a = 0; a < n; a++) {
        uint32_t i = order[a];
        const psched__xop *o = &in->ops[i];
        es[i] = 0;
        for (uint32_t k = 0; k < o->ndep; k++)
            es[i] = fmax(es[i], es[o->dep[k]] + in->ops[o->dep[k]].dur + o->lat[k]);
        for (uint32_t j = 0; j < n; j++)
            if (in->before[(size_t)j * n + i] && in->ops[j].device == o->device)
                es[i] = fmax(es[i], es[j] + in->ops[j].dur);
    }
    psched__dealloc(order);
    psched__dealloc(preds);
}

/* Row bounds are recorded beside the triplets and set once the rows exist. */
typedef struct row_bound {
    int type;
    double lo, hi;
} row_bound;

typedef struct rows {
    row_bound *b;
    size_t cap;
} rows;

static int new_row(model *m, rows *r, int type, double lo, double hi)
{
    int row = ++m->nrows;
    if ((size_t)row >= r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 1024;
        row_bound *b = psched__reallocarray(r->b, cap, sizeof *b);
        if (!b)
            return 0;
        r->b = b, r->cap = cap;
    }
    r->b[row] = (row_bound){type, lo, hi};
    return row;
}

#define ROW(type, lo, hi)                                                                          \
    do {                                                                                           \
        row = new_row(m, r, (type), (lo), (hi));                                                   \
        if (!row)                                                                                  \
            return false;                                                                          \
    } while (0)
#define PUT(col, val)                                                                              \
    do {                                                                                           \
        if (!push(m, row, (col), (val)))                                                           \
            return false;                                                                          \
    } while (0)

static bool precedence_rows(model *m, rows *r)
{
    const psched__exact *in = m->in;
    uint32_t n = in->n;
    double H = in->horizon;
    int row;
    for (uint32_t i = 0; i < n; i++) {
        const psched__xop *o = &in->ops[i];
        for (uint32_t k = 0; k < o->ndep; k++) {
            uint32_t j = o->dep[k];
            ROW(GLP_LO, in->ops[j].dur + o->lat[k], 0);
            PUT(start_col(i), 1);
            PUT(start_col(j), -1);
        }
        for (uint32_t j = 0; j < n; j++) {
            if (j == i || in->ops[j].device != o->device)
                continue;
            if (in->before[(size_t)j * n + i]) { /* forced: j first */
                ROW(GLP_LO, in->ops[j].dur, 0);
                PUT(start_col(i), 1);
                PUT(start_col(j), -1);
            } else if (j > i && m->pair[(size_t)i * n + j]) {
                int x = m->pair[(size_t)i * n + j];
                ROW(GLP_LO, o->dur - H, 0); /* x = 1: S_j >= S_i + t_i */
                PUT(start_col(j), 1);
                PUT(start_col(i), -1);
                PUT(x, -H);
                ROW(GLP_LO, in->ops[j].dur, 0); /* x = 0: S_i >= S_j + t_j */
                PUT(start_col(i), 1);
                PUT(start_col(j), -1);
                PUT(x, H);
            }
        }
    }
    return true;
}

static bool memory_rows(model *m, rows *r)
{
    const psched__exact *in = m->in;
    uint32_t n = in->n;
    int row;
    if (!isfinite(in->limit))
        return true;
    for (uint32_t i = 0; i < n; i++) {
        double constant = in->ops[i].mem;
        size_t at = m->nz;
        ROW(GLP_UP, 0, 0);
        for (uint32_t j = 0; j < n; j++) {
            if (j == i || in->ops[j].device != in->ops[i].device || in->ops[j].mem == 0)
                continue;
            double c, coef;
            int x = order_term(m, j, i, &c, &coef);
            constant += in->ops[j].mem * c;
            if (x)
                PUT(x, in->ops[j].mem * coef);
        }
        r->b[row].hi = in->limit - constant;
        if (m->nz == at && constant <= in->limit + 1e-9) { /* nothing free: drop the row */
            m->nrows--;
        }
    }
    return true;
}

/* ASAP: every op starts at 0 or right at the end of one predecessor. */
static bool tightness_rows(model *m, rows *r)
{
    const psched__exact *in = m->in;
    uint32_t n = in->n;
    double H = in->horizon;
    int row;
    for (uint32_t i = 0; i < n; i++) {
        const psched__xop *o = &in->ops[i];
        ROW(GLP_FX, 1, 1);
        for (size_t c = m->cand_at[i]; c < m->cand_at[i + 1]; c++)
            PUT(m->cand_col[c], 1);
        for (size_t c = m->cand_at[i]; c < m->cand_at[i + 1]; c++) {
            int j = m->cand_op[c];
            double end = 0;
            if (j >= 0) {
                end = in->ops[j].dur;
                for (uint32_t k = 0; k < o->ndep; k++)
                    if (o->dep[k] == (uint32_t)j)
                        end += o->lat[k];
            }
            /* S_i <= S_j + end + H(1 - z) */
            ROW(GLP_UP, 0, end + H);
            PUT(start_col(i), 1);
            if (j >= 0)
                PUT(start_col((uint32_t)j), -1);
            PUT(m->cand_col[c], H);
            bool is_dep = false;
            for (uint32_t k = 0; k < o->ndep; k++)
                is_dep |= j >= 0 && o->dep[k] == (uint32_t)j;
            if (j >= 0 && !is_dep) { /* a device predecessor: it must come first */
                double constant, coef;
                int x = order_term(m, (uint32_t)j, i, &constant, &coef);
                if (x) { /* z <= constant + coef·x */
                    ROW(GLP_UP, 0, constant);
                    PUT(m->cand_col[c], 1);
                    PUT(x, -coef);
                }
            }
        }
    }
    return true;
}

static bool span_rows(model *m, rows *r)
{
    const psched__exact *in = m->in;
    int row;
    for (uint32_t i = 0; i < in->n; i++) {
        int d = (int)in->ops[i].device;
        ROW(GLP_UP, 0, 0); /* first_d <= S_i */
        PUT(m->first + d, 1);
        PUT(start_col(i), -1);
        ROW(GLP_LO, in->ops[i].dur, 0); /* last_d >= S_i + t_i */
        PUT(m->last + d, 1);
        PUT(start_col(i), -1);
    }
    for (uint32_t d = 0; d < in->devices; d++) {
        ROW(GLP_LO, 0, 0); /* span >= last_d - first_d */
        PUT(m->span, 1);
        PUT(m->last + (int)d, -1);
        PUT(m->first + (int)d, 1);
    }
    return true;
}

static bool build(glp_prob *lp, model *m)
{
    const psched__exact *in = m->in;
    rows r = {0};
    bool ok = layout_columns(m) && precedence_rows(m, &r) && memory_rows(m, &r) &&
              tightness_rows(m, &r) && span_rows(m, &r);
    double *es = ok ? psched__calloc(in->n, sizeof *es) : NULL;
    if (!es) {
        psched__dealloc(r.b);
        return false;
    }
    earliest_starts(in, es);
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, m->ncols);
    for (uint32_t i = 0; i < in->n; i++)
        glp_set_col_bnds(lp, start_col(i), GLP_DB, es[i],
                         fmax(es[i], in->horizon - in->ops[i].dur));
    for (uint32_t d = 0; d < 2 * in->devices; d++)
        glp_set_col_bnds(lp, m->first + (int)d, GLP_DB, 0, in->horizon);
    glp_set_col_bnds(lp, m->span, GLP_LO, in->lower, 0);
    glp_set_obj_coef(lp, m->span, 1);
    for (int c = m->span + 1; c <= m->ncols; c++)
        glp_set_col_kind(lp, c, GLP_BV);
    glp_add_rows(lp, m->nrows);
    for (int row = 1; row <= m->nrows; row++) {
        row_bound *b = &r.b[row];
        glp_set_row_bnds(lp, row, b->type, b->type == GLP_UP ? 0 : b->lo,
                         b->type == GLP_LO ? 0 : b->type == GLP_FX ? b->lo : b->hi);
    }
    glp_load_matrix(lp, (int)m->nz, m->ia, m->ja, m->ar);
    psched__dealloc(es);
    psched__dealloc(r.b);
    return true;
}

/* The seed as a full solution vector (1-based), or false when its times do
 * not pin down every op's binding predecessor (then GLPK starts without it). */
static bool seed_vector(const model *m, double *x)
{
    const psched__exact *in = m->in;
    uint32_t n = in->n;
    const double *S = in->seed_start;
    const uint32_t *pos = in->seed_pos;
    double eps = 1e-9 * fmax(1, in->horizon);
    double span = in->lower;
    for (uint32_t d = 0; d < in->devices; d++) {
        x[m->first + (int)d] = INFINITY;
        x[m->last + (int)d] = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t d = in->ops[i].device;
        x[start_col(i)] = S[i];
        x[m->first + (int)d] = fmin(x[m->first + (int)d], S[i]);
        x[m->last + (int)d] = fmax(x[m->last + (int)d], S[i] + in->ops[i].dur);
        for (uint32_t j = i + 1; j < n; j++)
            if (m->pair[(size_t)i * n + j])
                x[m->pair[(size_t)i * n + j]] = pos[i] < pos[j];
    }
    for (uint32_t d = 0; d < in->devices; d++)
        span = fmax(span, x[m->last + (int)d] - x[m->first + (int)d]);
    x[m->span] = span;
    for (uint32_t i = 0; i < n; i++) {
        const psched__xop *o = &in->ops[i];
        bool chosen = false;
        for (size_t c = m->cand_at[i]; c < m->cand_at[i + 1]; c++) {
            int j = m->cand_op[c];
            double ready = 0;
            bool fits = true;
            if (j >= 0) {
                ready = S[j] + in->ops[j].dur;
                bool is_dep = false;
                for (uint32_t k = 0; k < o->ndep; k++)
                    if (o->dep[k] == (uint32_t)j)
                        ready += o->lat[k], is_dep = true;
                fits = is_dep || pos[(uint32_t)j] + 1 == pos[i];
            }
            x[m->cand_col[c]] = !chosen && fits && fabs(ready - S[i]) <= eps;
            chosen |= x[m->cand_col[c]] > 0.5;
        }
        if (!chosen)
            return false;
    }
    return true;
}

static int swallow_output(void *info, const char *text)
{
    (void)info, (void)text;
    return 1;
}

static void on_glpk_error(void *info)
{
    solve_ctx *ctx = info;
    longjmp(ctx->jump, 1);
}

static void on_branch(glp_tree *tree, void *info)
{
    solve_ctx *ctx = info;
    const psched__exact *in = ctx->mod->in;
    int reason = glp_ios_reason(tree);
    if (reason == GLP_IHEUR && !ctx->seed_given && in->seed_pos) {
        ctx->seed_given = true;
        double *x = glp_alloc(ctx->mod->ncols + 1, sizeof(double));
        memset(x, 0, (size_t)(ctx->mod->ncols + 1) * sizeof(double));
        if (seed_vector(ctx->mod, x))
            glp_ios_heur_sol(tree, x);
        glp_free(x);
    }
    if (reason == GLP_ISELECT && in->node_limit > 0 && ++ctx->nodes > in->node_limit)
        glp_ios_terminate(tree);
    if (glp_ios_best_node(tree) != 0)
        ctx->bound = fmax(ctx->bound, glp_ios_node_bound(tree, glp_ios_best_node(tree)));
}

/* Everything that calls GLPK; a GLPK error longjmps out of it. */
static psched_status run_glpk(solve_ctx *ctx, uint32_t *pos, psched__exact_result *res)
{
    model *m = ctx->mod;
    const psched__exact *in = m->in;
    double deadline = psched__now() + in->time_limit;
    glp_prob *lp = glp_create_prob();
    if (!build(lp, m))
        return PSCHED_ENOMEM_FAIL();
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = psched__glpk_ms_left(deadline);
    int ret = glp_simplex(lp, &sm);
    if (ret == GLP_ETMLIM)
        return PSCHED_OK;
    if (ret != 0)
        return psched_fail(PSCHED_ESOLVER, "GLPK simplex failed (code %d) on %d columns", ret,
                           m->ncols);
    if (glp_get_status(lp) != GLP_OPT)
        return PSCHED_OK; /* no schedule fits the memory limit */
    ctx->bound = fmax(ctx->bound, glp_get_obj_val(lp));
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.cb_func = on_branch;
    io.cb_info = ctx;
    io.tm_lim = psched__glpk_ms_left(deadline);
    ret = glp_intopt(lp, &io);
    res->nodes = ctx->nodes;
    if (ret != 0 && ret != GLP_ETMLIM && ret != GLP_ESTOP && ret != GLP_ENOPFS &&
        ret != GLP_ENODFS)
        return psched_fail(PSCHED_ESOLVER, "GLPK branch-and-cut failed (code %d) on %d columns",
                           ret, m->ncols);
    int mst = glp_mip_status(lp);
    if (mst == GLP_NOFEAS) { /* proven: no order fits (the bound is then moot) */
        res->optimal = true;
        return PSCHED_OK;
    }
    if (mst != GLP_OPT && mst != GLP_FEAS)
        return PSCHED_OK;
    res->found = true;
    res->optimal = mst == GLP_OPT && ret == 0;
    res->span = glp_mip_obj_val(lp);
    if (res->optimal)
        ctx->bound = fmax(ctx->bound, res->span);
    /* position of op i on its device: the ops that start before it, ties
     * by the order binaries */
    for (uint32_t i = 0; i < in->n; i++) {
        pos[i] = 0;
        for (uint32_t j = 0; j < in->n; j++) {
            if (j == i || in->ops[j].device != in->ops[i].device)
                continue;
            double c, coef;
            int x = order_term(m, j, i, &c, &coef);
            double v = c + (x ? coef * glp_mip_col_val(lp, x) : 0);
            pos[i] += v > 0.5;
        }
    }
    return PSCHED_OK;
}

static void model_free(model *m)
{
    psched__dealloc(m->pair);
    psched__dealloc(m->cand_at);
    psched__dealloc(m->cand_col);
    psched__dealloc(m->cand_op);
    psched__dealloc(m->ia);
    psched__dealloc(m->ja);
    psched__dealloc(m->ar);
}

psched_status psched__exact_solve(const psched__exact *in, uint32_t *pos,
                                  psched__exact_result *result)
{
    memset(result, 0, sizeof *result);
    /* volatile: read after longjmp */
    model *volatile mod = psched__calloc(1, sizeof *mod);
    if (!mod)
        return PSCHED_ENOMEM_FAIL();
    mod->in = in;
    solve_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.mod = mod;
    ctx.bound = in->lower;
    psched_status st;
    if (setjmp(ctx.jump)) {
        glp_error_hook(NULL, NULL);
        glp_term_hook(NULL, NULL);
        glp_free_env();
        model_free(mod);
        psched__dealloc(mod);
        return psched_fail(PSCHED_ESOLVER, "GLPK stopped with an internal error on the "
                                           "exact schedule of %u ops",
                           in->n);
    }
    glp_term_hook(swallow_output, NULL);
    glp_error_hook(on_glpk_error, &ctx);
    glp_term_out(GLP_OFF);
    st = run_glpk(&ctx, pos, result);
    glp_error_hook(NULL, NULL);
    glp_term_hook(NULL, NULL);
    glp_free_env();
    result->bound = ctx.bound;
    model_free(mod);
    psched__dealloc(mod);
    return st;
}

#endif
