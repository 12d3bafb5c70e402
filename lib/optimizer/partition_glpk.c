/* The column MILP of the partitioner, solved with GLPK (GPL-3.0-or-later,
 * optional: -Dglpk=disabled builds without it). GLPK reports internal
 * errors by calling a hook and then aborting; the hook longjmps back here
 * and the thread's GLPK environment is freed, so the host lives on. */
#include "optimizer.h"

#include <math.h>

static _Thread_local int glpk_mem_limit_mb;

void psched__glpk_set_mem_limit(int mb)
{
    glpk_mem_limit_mb = mb;
}

#ifndef PSCHED_HAVE_GLPK

bool psched__have_glpk(void)
{
    return false;
}

psched_status psched__milp_solve(const psched__milp *in, double time_limit, int32_t *chosen,
                                 bool *found, bool *optimal, double *bound)
{
    (void)in, (void)time_limit, (void)chosen, (void)found, (void)optimal, (void)bound;
    return psched_fail(PSCHED_EUNSUPPORTED, "this build of pipesched has no GLPK");
}

#else

#include <glpk.h>
#include <setjmp.h>
#include <string.h>

bool psched__have_glpk(void)
{
    return true;
}

typedef struct solve_ctx {
    const psched__milp *in;
    jmp_buf jump;
    bool seed_given;
    double bound; /* proven lower bound of the objective, -INFINITY when none */
} solve_ctx;

/* Row and column layout. Rows: one column per stage; consecutive stages
 * meet at a layer boundary; per device its time (or memory) at most z;
 * per device its memory at most the limit; per stage its time at most w,
 * and lambda·w at most z (the largest stage's weight, time objective
 * only). Columns: the candidates, then z, then w. */
typedef struct layout {
    int flow, bottleneck, mem, stage_rows, stage_bound, z, w;
} layout;

static layout make_layout(const psched__milp *in)
{
    int S = (int)in->stages, P = (int)in->devices, B = (int)in->layers + 1;
    layout y;
    y.flow = S + 1;
    y.bottleneck = y.flow + (S > 1 ? (S - 1) * B : 0);
    y.mem = y.bottleneck + P;
    y.stage_rows = y.mem + (!in->minimize_memory && isfinite(in->limit) ? P : 0);
    y.stage_bound = y.stage_rows + (in->minimize_memory ? 0 : S);
    y.z = (int)in->ncols + 1;
    y.w = in->minimize_memory ? 0 : y.z + 1;
    return y;
}

/* GLPK prints error text even with terminal output off; the library never
 * prints, so every line is swallowed here. */
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

/* Branch-and-cut callback: hand GLPK the seed once, and track the bound. */
static void on_branch(glp_tree *tree, void *info)
{
    solve_ctx *ctx = info;
    int reason = glp_ios_reason(tree);
    if (reason == GLP_IHEUR && !ctx->seed_given && ctx->in->seed) {
        const psched__milp *in = ctx->in;
        int n = glp_get_num_cols(glp_ios_get_prob(tree));
        double *x = glp_alloc(n + 1, sizeof(double));
        memset(x, 0, (size_t)(n + 1) * sizeof(double));
        double *dev = glp_alloc((int)in->devices + 1, sizeof(double));
        memset(dev, 0, (in->devices + 1) * sizeof(double));
        layout y = make_layout(in);
        double z = 0, w = 0;
        for (uint32_t s = 0; s < in->stages; s++) {
            const psched__column *c = &in->cols[in->seed[s]];
            x[in->seed[s] + 1] = 1;
            dev[in->device_of[s]] += in->minimize_memory ? c->mem : c->time;
            w = fmax(w, c->time);
        }
        for (uint32_t d = 0; d < in->devices; d++)
            z = fmax(z, dev[d]);
        if (y.w) {
            z = fmax(z, in->lambda * w);
            x[y.w] = w;
        }
        x[y.z] = z;
        glp_ios_heur_sol(tree, x);
        glp_free(x);
        glp_free(dev);
        ctx->seed_given = true;
    }
    if (glp_ios_best_node(tree) != 0)
        ctx->bound = fmax(ctx->bound, glp_ios_node_bound(tree, glp_ios_best_node(tree)));
}

static void build_rows(glp_prob *lp, const psched__milp *in, const layout *y)
{
    int S = (int)in->stages, P = (int)in->devices, B = (int)in->layers + 1;
    glp_add_rows(lp, S);
    for (int s = 0; s < S; s++)
        glp_set_row_bnds(lp, 1 + s, GLP_FX, 1, 1);
    if (S > 1)
        glp_add_rows(lp, (S - 1) * B);
    for (int r = 0; S > 1 && r < (S - 1) * B; r++)
        glp_set_row_bnds(lp, y->flow + r, GLP_FX, 0, 0);
    glp_add_rows(lp, P);
    for (int d = 0; d < P; d++)
        glp_set_row_bnds(lp, y->bottleneck + d, GLP_UP, 0, 0);
    if (y->stage_rows > y->mem) {
        glp_add_rows(lp, P);
        for (int d = 0; d < P; d++)
            glp_set_row_bnds(lp, y->mem + d, GLP_UP, 0, in->limit);
    }
    if (!in->minimize_memory) {
        glp_add_rows(lp, S + 1);
        for (int s = 0; s <= S; s++)
            glp_set_row_bnds(lp, y->stage_rows + s, GLP_UP, 0, 0);
    }
}

/* z and w: z against every device row (and the stage bound), w against
 * every stage row. */
static void build_bounds(glp_prob *lp, const psched__milp *in, const layout *y)
{
    int S = (int)in->stages, P = (int)in->devices, n = 0;
    int *idx = glp_alloc(P + S + 2, sizeof(int));
    double *val = glp_alloc(P + S + 2, sizeof(double));
    glp_set_col_bnds(lp, y->z, GLP_LO, 0, 0);
    for (int d = 0; d < P; d++)
        idx[++n] = y->bottleneck + d, val[n] = -1;
    if (y->w)
        idx[++n] = y->stage_bound, val[n] = -1;
    glp_set_mat_col(lp, y->z, n, idx, val);
    glp_set_obj_coef(lp, y->z, in->minimize_memory ? 1 : in->zcoef);
    if (y->w) {
        n = 0;
        glp_set_col_bnds(lp, y->w, GLP_LO, 0, 0);
        for (int s = 0; s < S; s++)
            idx[++n] = y->stage_rows + s, val[n] = -1;
        idx[++n] = y->stage_bound, val[n] = in->lambda;
        glp_set_mat_col(lp, y->w, n, idx, val);
    }
    glp_free(idx);
    glp_free(val);
}

static void build_columns(glp_prob *lp, const psched__milp *in, const layout *y)
{
    uint32_t S = in->stages, B = in->layers + 1;
    glp_add_cols(lp, (int)in->ncols + (y->w ? 2 : 1));
    int ind[7];
    double val[7];
    for (size_t c = 0; c < in->ncols; c++) {
        const psched__column *col = &in->cols[c];
        int j = 1 + (int)c, n = 0;
        uint32_t s = col->stage, d = in->device_of[s];
        glp_set_col_kind(lp, j, GLP_BV);
        ind[++n] = 1 + (int)s, val[n] = 1;
        if (s + 1 < S) /* leaves boundary first+len to stage s+1 */
            ind[++n] = y->flow + (int)(s * B + col->first + col->len), val[n] = 1;
        if (s > 0) /* takes boundary `first` from stage s-1 */
            ind[++n] = y->flow + (int)((s - 1) * B + col->first), val[n] = -1;
        ind[++n] = y->bottleneck + (int)d, val[n] = in->minimize_memory ? col->mem : col->time;
        if (y->stage_rows > y->mem)
            ind[++n] = y->mem + (int)d, val[n] = col->mem;
        if (y->w)
            ind[++n] = y->stage_rows + (int)s, val[n] = col->time;
        glp_set_mat_col(lp, j, n, ind, val);
        glp_set_obj_coef(lp, j, in->minimize_memory ? 0 : in->kappa * col->time);
    }
    build_bounds(lp, in, y);
}

/* Everything that calls GLPK; a GLPK error longjmps out of it. */
static psched_status run_glpk(solve_ctx *ctx, double time_limit, int32_t *chosen, bool *found,
                              bool *optimal)
{
    const psched__milp *in = ctx->in;
    double deadline = psched__now() + time_limit;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    layout y = make_layout(in);
    build_rows(lp, in, &y);
    build_columns(lp, in, &y);
    glp_scale_prob(lp, GLP_SF_AUTO);
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.presolve = GLP_ON;
    /* Building and scaling took part of the time. */
    sm.tm_lim = psched__glpk_ms_left(deadline);
    *found = *optimal = false;
    int ret = glp_simplex(lp, &sm);
    /* Out of time before the relaxation was solved: no solution, the
     * caller keeps its seed. */
    if (ret == GLP_ETMLIM || ret == GLP_ENOPFS || (ret == 0 && glp_get_status(lp) == GLP_NOFEAS))
        return PSCHED_OK;
    if (ret != 0 && ret != GLP_ENOPFS)
        return psched_fail(PSCHED_ESOLVER, "GLPK simplex failed (code %d) on %zu columns", ret,
                           in->ncols);
    if (glp_get_status(lp) == GLP_OPT)
        ctx->bound = glp_get_obj_val(lp); /* the relaxation bounds the MILP */
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.cb_func = on_branch;
    io.cb_info = ctx;
    /* The relaxation used part of the time; branch-and-cut gets the rest. */
    io.tm_lim = psched__glpk_ms_left(deadline);
    ret = glp_intopt(lp, &io);
    if (ret != 0 && ret != GLP_ETMLIM && ret != GLP_ENOPFS && ret != GLP_ENODFS)
        return psched_fail(PSCHED_ESOLVER, "GLPK branch-and-cut failed (code %d) on %zu columns",
                           ret, in->ncols);
    int mst = glp_mip_status(lp);
    if (mst != GLP_OPT && mst != GLP_FEAS)
        return PSCHED_OK;
    *found = true;
    *optimal = mst == GLP_OPT;
    if (*optimal)
        ctx->bound = glp_mip_obj_val(lp);
    for (uint32_t s = 0; s < in->stages; s++)
        chosen[s] = -1;
    for (size_t c = 0; c < in->ncols; c++)
        if (glp_mip_col_val(lp, (int)c + 1) > 0.5)
            chosen[in->cols[c].stage] = (int32_t)c;
    for (uint32_t s = 0; s < in->stages; s++)
        if (chosen[s] < 0)
            return psched_fail(PSCHED_ESOLVER, "GLPK's solution gives stage %u no column", s);
    return PSCHED_OK;
}

psched_status psched__milp_solve(const psched__milp *in, double time_limit, int32_t *chosen,
                                 bool *found, bool *optimal, double *bound)
{
    solve_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.in = in;
    ctx.bound = -INFINITY;
    psched_status st;
    if (setjmp(ctx.jump)) {
        /* GLPK's state is undefined after an error: drop the whole
         * environment of this thread (every GLPK object with it). */
        glp_error_hook(NULL, NULL);
        glp_term_hook(NULL, NULL);
        glp_free_env();
        return psched_fail(PSCHED_ESOLVER, "GLPK stopped with an internal error (%s)",
                           glpk_mem_limit_mb ? "memory limit reached" : "see GLPK's documentation");
    }
    glp_term_hook(swallow_output, NULL);
    glp_error_hook(on_glpk_error, &ctx);
    glp_term_out(GLP_OFF);
    if (glpk_mem_limit_mb > 0)
        glp_mem_limit(glpk_mem_limit_mb);
    st = run_glpk(&ctx, time_limit, chosen, found, optimal);
    glp_error_hook(NULL, NULL);
    glp_term_hook(NULL, NULL);
    glp_free_env();
    *bound = ctx.bound;
    return st;
}

#endif
