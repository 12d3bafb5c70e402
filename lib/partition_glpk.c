/* The column MILP of the partitioner, solved with GLPK (GPL-3.0-or-later,
 * optional: -Dglpk=disabled builds without it). GLPK reports internal
 * errors by calling a hook and then aborting; the hook longjmps back here
 * and the thread's GLPK environment is freed, so the host lives on. */
#include "partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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
                                 bool *found, bool *optimal, double *gap)
{
    (void)in, (void)time_limit, (void)chosen, (void)found, (void)optimal, (void)gap;
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
    double gap;
} solve_ctx;

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

/* Branch-and-cut callback: hand GLPK the seed once, and track the gap. */
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
        double z = 0;
        for (uint32_t s = 0; s < in->stages; s++) {
            const psched__column *c = &in->cols[in->seed[s]];
            x[in->seed[s] + 1] = 1;
            dev[in->device_of[s]] += in->minimize_memory ? c->mem : c->time;
        }
        for (uint32_t d = 0; d < in->devices; d++)
            z = fmax(z, dev[d]);
        x[n] = z;
        glp_ios_heur_sol(tree, x);
        glp_free(x);
        glp_free(dev);
        ctx->seed_given = true;
    }
    if (glp_ios_best_node(tree) != 0)
        ctx->gap = glp_ios_mip_gap(tree);
}

/* Rows: one column per stage; consecutive stages meet at a layer
 * boundary; per device its time (or memory) at most z; per device its
 * memory at most the limit. Columns: the candidates, then z. */
static void build_rows(glp_prob *lp, const psched__milp *in)
{
    uint32_t S = in->stages, P = in->devices, B = in->layers + 1;
    int assign = glp_add_rows(lp, (int)S);
    for (uint32_t s = 0; s < S; s++)
        glp_set_row_bnds(lp, assign + (int)s, GLP_FX, 1, 1);
    int flow = S > 1 ? glp_add_rows(lp, (int)((S - 1) * B)) : 0;
    for (uint32_t r = 0; S > 1 && r < (S - 1) * B; r++)
        glp_set_row_bnds(lp, flow + (int)r, GLP_FX, 0, 0);
    int bottleneck = glp_add_rows(lp, (int)P);
    for (uint32_t d = 0; d < P; d++)
        glp_set_row_bnds(lp, bottleneck + (int)d, GLP_UP, 0, 0);
    if (!in->minimize_memory && isfinite(in->limit)) {
        int mem = glp_add_rows(lp, (int)P);
        for (uint32_t d = 0; d < P; d++)
            glp_set_row_bnds(lp, mem + (int)d, GLP_UP, 0, in->limit);
    }
}

static void build_columns(glp_prob *lp, const psched__milp *in)
{
    uint32_t S = in->stages, P = in->devices, B = in->layers + 1;
    int flow = (int)S + 1, bottleneck = flow + (S > 1 ? (int)((S - 1) * B) : 0);
    int mem = bottleneck + (int)P;
    bool mem_rows = !in->minimize_memory && isfinite(in->limit);
    int first = glp_add_cols(lp, (int)in->ncols + 1);
    int ind[6];
    double val[6];
    for (size_t c = 0; c < in->ncols; c++) {
        const psched__column *col = &in->cols[c];
        int j = first + (int)c, n = 0;
        uint32_t s = col->stage, d = in->device_of[s];
        glp_set_col_kind(lp, j, GLP_BV);
        ind[++n] = 1 + (int)s, val[n] = 1;
        if (s + 1 < S) /* leaves boundary first+len to stage s+1 */
            ind[++n] = flow + (int)(s * B + col->first + col->len), val[n] = 1;
        if (s > 0) /* takes boundary `first` from stage s-1 */
            ind[++n] = flow + (int)((s - 1) * B + col->first), val[n] = -1;
        ind[++n] = bottleneck + (int)d, val[n] = in->minimize_memory ? col->mem : col->time;
        if (mem_rows)
            ind[++n] = mem + (int)d, val[n] = col->mem;
        glp_set_mat_col(lp, j, n, ind, val);
        glp_set_obj_coef(lp, j, in->minimize_memory ? 0 : in->kappa * col->time);
    }
    int z = first + (int)in->ncols;
    glp_set_col_bnds(lp, z, GLP_LO, 0, 0);
    int *zi = glp_alloc((int)P + 1, sizeof(int));
    double *zv = glp_alloc((int)P + 1, sizeof(double));
    for (uint32_t d = 0; d < P; d++)
        zi[d + 1] = bottleneck + (int)d, zv[d + 1] = -1;
    glp_set_mat_col(lp, z, (int)P, zi, zv);
    glp_free(zi);
    glp_free(zv);
    glp_set_obj_coef(lp, z, in->minimize_memory ? 1 : in->zcoef);
}

/* Everything that calls GLPK; a GLPK error longjmps out of it. */
static psched_status run_glpk(solve_ctx *ctx, double time_limit, int32_t *chosen, bool *found,
                              bool *optimal)
{
    const psched__milp *in = ctx->in;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    build_rows(lp, in);
    build_columns(lp, in);
    glp_scale_prob(lp, GLP_SF_AUTO);
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.presolve = GLP_ON;
    *found = *optimal = false;
    int ret = glp_simplex(lp, &sm);
    if (getenv("PSCHED_DBG")) fprintf(stderr, "cols %zu rows %d lp %.10g\n", in->ncols, glp_get_num_rows(lp), glp_get_obj_val(lp));
    if (ret == GLP_ENOPFS || (ret == 0 && glp_get_status(lp) == GLP_NOFEAS))
        return PSCHED_OK;
    if (ret != 0 && ret != GLP_ENOPFS)
        return psched_fail(PSCHED_ESOLVER, "GLPK simplex failed (code %d) on %zu columns", ret,
                           in->ncols);
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.cb_func = on_branch;
    io.cb_info = ctx;
    io.tm_lim = (int)fmin(time_limit * 1000.0, 2e9);
    ret = glp_intopt(lp, &io);
    if (ret != 0 && ret != GLP_ETMLIM && ret != GLP_ENOPFS && ret != GLP_ENODFS)
        return psched_fail(PSCHED_ESOLVER, "GLPK branch-and-cut failed (code %d) on %zu columns",
                           ret, in->ncols);
    int mst = glp_mip_status(lp);
    if (mst != GLP_OPT && mst != GLP_FEAS)
        return PSCHED_OK;
    *found = true;
    *optimal = mst == GLP_OPT;
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
                                 bool *found, bool *optimal, double *gap)
{
    solve_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.in = in;
    ctx.gap = NAN;
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
    *gap = *optimal ? 0 : ctx.gap;
    return st;
}

#endif
