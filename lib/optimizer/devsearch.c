/* The device search (devsearch.h): an exact enumeration of a run's
 * per-stage layer counts and recompute variants, one device at a time
 * (first each device's counts, then its recompute assignment), each node
 * bounded by the fixed order's step time with the stages not chosen yet
 * at their least cost (docs/optimizer.md, "The device search"). */
#include "devsearch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Options (count vectors x recompute assignments) of all devices, at
 * most: beyond it the search does not start (stages of many layers under
 * a binding memory limit) and the other bounds and the search run alone. */
#define DEVSEARCH_OPTIONS_MAX ((size_t)1 << 18)
/* Bytes of the children lists, at most: one per depth and a spare, each
 * as long as the most options of a device (first fail may place any
 * device at any depth). Beyond it the search does not start. */
#define DEVSEARCH_LISTS_MAX ((size_t)64 << 20)
/* relative tolerance of a cut: `optimal` means within it */
#define DEVSEARCH_TOL 1e-9
/* Nodes of the dive the search starts with: depth first with each
 * depth's children by rising bound, which reaches fast partitions the
 * incumbent-first order finds late (LLaMA-70B looped-bfs at v = 4 and
 * 60 GB: 2168.53 within these nodes, from the local search's 2345.43;
 * the incumbent-first order needs about 300 000 nodes to find the optimum,
 * 2165.8). Deterministic, unlike a share of the time. */
#define DEVSEARCH_DIVE_NODES 20000
/* options cut at a node that the next ones are compared against */
#define DEVSEARCH_DOMINATORS 32
/* Options of one group the polish makes, at most (beyond it that move is
 * skipped) */
#define POLISH_GROUP_MAX ((size_t)1 << 16)

static _Thread_local size_t test_proofs, test_slice, test_resumes, test_stop, test_dive,
    test_dives;
static _Thread_local double test_bound;
/* the last polish: whether it ran, its partition (when it has at most
 * TEST_POLISH_STAGES stages and TEST_POLISH_LAYERS layers), step time and
 * kept assignments */
#define TEST_POLISH_STAGES 64
#define TEST_POLISH_LAYERS 256
static _Thread_local bool test_polish_ran, test_no_polish, test_no_chain;
static _Thread_local size_t test_nodes, test_chain_rises;
/* psched__devsearch_test_record(): per record `test_rec_stages` counts, then
 * its bound in test_rec_bound */
static _Thread_local uint32_t *test_rec, test_rec_stages;
static _Thread_local double *test_rec_bound;
static _Thread_local size_t test_rec_n, test_rec_max;
static _Thread_local size_t test_options_cap;
static _Thread_local uint32_t test_polish_count[TEST_POLISH_STAGES];
static _Thread_local uint8_t test_polish_choice[TEST_POLISH_LAYERS];
static _Thread_local double test_polish_time;
static _Thread_local size_t test_polish_gains;

size_t psched__devsearch_test_proofs(void)
{
    return test_proofs;
}

void psched__devsearch_test_slice(size_t nodes)
{
    test_slice = nodes;
}

size_t psched__devsearch_test_resumes(void)
{
    return test_resumes;
}

void psched__devsearch_test_stop(size_t nodes)
{
    test_stop = nodes;
    if (nodes)
        test_bound = 0;
}

double psched__devsearch_test_bound(void)
{
    return test_bound;
}

void psched__devsearch_test_dive(size_t nodes)
{
    test_dive = nodes;
}

size_t psched__devsearch_test_dives(void)
{
    return test_dives;
}

void psched__devsearch_test_options_cap(size_t options)
{
    test_options_cap = options;
}

void psched__devsearch_test_no_polish(bool off)
{
    test_no_polish = off;
}

bool psched__devsearch_test_polished(uint32_t *count, uint32_t stages, uint8_t *choice,
                                     uint32_t layers, double *makespan)
{
    if (!test_polish_ran || stages > TEST_POLISH_STAGES || layers > TEST_POLISH_LAYERS)
        return false;
    memcpy(count, test_polish_count, stages * sizeof *count);
    memcpy(choice, test_polish_choice, layers * sizeof *choice);
    *makespan = test_polish_time;
    return true;
}

void psched__devsearch_test_no_chain(bool off)
{
    test_no_chain = off;
}

size_t psched__devsearch_test_nodes(void)
{
    return test_nodes;
}

size_t psched__devsearch_test_chain_rises(void)
{
    return test_chain_rises;
}

void psched__devsearch_test_record(size_t max, uint32_t stages)
{
    psched__dealloc(test_rec);
    psched__dealloc(test_rec_bound);
    test_rec = NULL;
    test_rec_bound = NULL;
    test_rec_n = test_rec_max = 0;
    test_rec_stages = stages;
    if (!max || !stages)
        return;
    test_rec = psched__calloc(max * stages, sizeof *test_rec);
    test_rec_bound = psched__calloc(max, sizeof *test_rec_bound);
    if (test_rec && test_rec_bound)
        test_rec_max = max;
}

size_t psched__devsearch_test_records(void)
{
    return test_rec_n;
}

double psched__devsearch_test_record_at(size_t i, uint32_t *counts)
{
    if (i >= test_rec_n)
        return NAN;
    memcpy(counts, test_rec + i * test_rec_stages, test_rec_stages * sizeof *counts);
    return test_rec_bound[i];
}

void psched__devsearch_test_forget(void)
{
    test_polish_ran = false;
}

size_t psched__devsearch_test_polish_gains(void)
{
    return test_polish_gains;
}

/* One way to fill a stage: its run layers per variant, the variant of its
 * layer outside the run (if any), and the resulting costs and memory. */
typedef struct cfg {
    double f, b, w, mem;
    uint32_t count;
    uint32_t mix[PSCHED__RECOMPUTE_KINDS];
    uint8_t end_variant;
} cfg;

typedef struct okey {
    double key;
    uint32_t idx;
} okey;

/* A depth of the search: the device it places, its children (options
 * that stay below the best) and the child being searched, kept so that a
 * search stopped early can resume where it stopped. */
typedef struct level {
    okey *kids;
    size_t n, k;
    uint32_t dev;
    bool valid; /* the children are listed (the scan ended) */
} level;

typedef struct dsctx {
    psched__devsearch *ds;
    const psched__problem *pb;
    uint32_t S, D;
    /* The order's own stages and devices (the plan's): with one chain S
     * and D; with two (DualPipe, folded: problem.c) 2S plan stages, plan
     * stage t holding range t mod S, and 2D devices, device d and its
     * mirror 2D - 1 - d holding pair d's two ranges (both device d's
     * ranges: a device of the search is both). The DAG, its costs and the
     * work still to come are the plan's; the options, bounds of the count
     * phase and the partition the problem's. */
    uint32_t SP, P;
    uint32_t *pdev;  /* per plan stage: its device */
    uint32_t *pst;   /* per plan device d: its plan stages (nst of its pair)
                        from poff[d], */
    uint32_t *poff;
    uint32_t *pjat;  /* and per plan stage: the index of its range among its
                        search device's stages */
    double m;
    /* the order's DAG: per op, its device predecessor, its input across
     * stages and that input's latency, and two indices into the cost
     * vector whose sum is its time, the ops numbered in topological order
     * (relabel()) */
    size_t n;
    int32_t *pd, *px;
    double *lat;
    uint32_t *i1, *i2;
    double *end;
    uint32_t *dev;   /* per op: its device */
    /* The work an op's device still has after it beyond its ops' present
     * costs, at least, in every completion of the node: for the device's
     * first op, all its work's least less its present cost; for a later
     * op, the least backward (B and W) work of the device's stages whose
     * backward has not started yet (at most c started, the op's class)
     * less its present cost. ext holds per device nst + 2 values (from
     * xoff[e]: the first op's, then one per class c = 0..nst, the last 0),
     * xat per op the index of its value. */
    uint32_t *xat, *xoff;
    /* The time after each device's last op, at least: the longest path
     * from its end to the step's end at the present costs (costs only rise
     * in a completion). Computed per evaluation by a backward pass over
     * the ops from kmin, the earliest of the devices' last ops, on: each
     * op's path after it (qv) pushed to its two predecessors; per device
     * its last op (the largest of its indices: its ops are a chain) and
     * that op's value (qt). */
    double *qv, *qt;
    uint32_t *lastop;
    size_t kmin;
    uint32_t *first; /* per device: its first op */
    uint32_t *share; /* share_bound(): per device, run layers above lo */
    double *start;   /* share_bound(): per device, first op's start + low */
    double *low;     /* per device: its work with every stage at its least cost */
    uint32_t *brank; /* per stage: how many of its device's stages start
                        their backward before it */
    /* The chain bound (one chain, no overlapped pair): micro-batch 0's
     * forward through every stage and its backward back to stage 0, 2S
     * nodes in the order of the chain (F(s, 0) for s = 0 .. S - 1, then
     * B(s, 0), or BW, for s = S - 1 .. 0; NULL: none). The stages of the
     * devices without counts cost their fewest layers, but together they
     * hold every run layer the others leave: the forward runs through all
     * of them, so the chain's last forward and its backward nodes start
     * (and end) at least those layers' f (and the backward's stages' b)
     * later than the chain at the present costs. bump[j]: that much
     * before the chain's j-th node, bumpin[j] through it (its own stage's
     * layers too), set by chain_bumps() for one evaluation (bumped); a
     * device's first op takes bump[] only (its work still to come counts
     * its own layers). chain_bw: every backward node is a BW. */
    uint32_t *chain;
    double *bump, *bumpin;
    bool bumped, chain_bw;
    double layer_f, layer_b, layer_w; /* a run layer's least f, b and w */
    uint32_t *ustage;                 /* S: 1 for a stage of a device without counts */
    double *ext;
    double **ux;     /* per device, with no counts chosen and at least n run
                        layers to come (from (n - lo) x (nst + 2)): ext's values */
    double **gx;     /* per device, at a group's first option o (from
                        o x (nst + 2)): ext's values with its counts chosen */
    double *units;   /* 3S: ops of each stage's f, b, w (BW counts in both) */
    double *rem;     /* per device: the time of its ops not evaluated yet */
    double *cost; /* 3S + 1: f, b, w per stage, then 0 */
    double *minc; /* 3S: each stage's least f, b, w */
    /* stage configurations: per stage and count, [cfg_at[s][c - cmin], next) */
    cfg *cfgs;
    size_t ncfg, cfg_cap;
    uint32_t *cmin;  /* per stage: fewest run layers */
    uint32_t *cmax;  /* per stage: most run layers */
    size_t **cfg_at; /* per stage: cmax - cmin + 2 offsets */
    /* devices */
    uint32_t *dev_order; /* the order devices are scanned in at a node (ties of the
                            first-fail choice go to the earlier) */
    uint32_t *nst, **stages_of;
    uint32_t **opt;  /* per device: options x its stage count cfg indices */
    size_t *nopt, *opt_cap, total_opts;
    uint32_t **opt_total;
    double **opt_work;
    uint32_t *lo, *hi;       /* per device: fewest and most run layers (narrow()) */
    okey *spare;              /* the children list a scan writes before it is the best */
    /* per device and option: one past the last option with its counts
     * (options with the same counts are contiguous), and at a group's
     * first option, per stage the fastest configuration of the group */
    uint32_t **gend, **gmin;
    bool *placed;             /* per device: its option chosen (the second phase) */
    uint32_t *group;          /* per device: the first option of its counts' group, or
                                 UINT32_MAX (the first phase) */
    level *lvl;               /* per depth */
    uint32_t ulo, uhi;        /* lo and hi summed over the devices without counts yet */
    double *end_work;         /* per device: f + b + w of its layers outside the run
                                 (without recompute; ds->base counts them) */
    uint32_t *chosen;         /* per device: option index */
    okey **kids;              /* per depth: its children's bounds (2D depths) */
    size_t ops;
    size_t dive_until; /* the dive stops at this node count */
    const uint32_t *pcfg; /* the polish's partition: per stage its configuration
                             (write_solution() reads it while set) */
    bool stop, mismatch;
    bool diving, dived; /* in the dive (search()); it ran */
    psched_status st;
    psched__solution sol;
} dsctx;

/* What a node's bound must stay below to be searched: the best, or in a
 * bound pass (psched__devsearch.threshold) the threshold when lower. */
static double cut_of(const psched__devsearch *ds)
{
    double cut = ds->best * (1 - DEVSEARCH_TOL);
    return ds->threshold > 0 ? fmin(cut, ds->threshold) : cut;
}

/* Whether a search that ended below cut_of() proves the best: it searched
 * below the best itself (no threshold under it). */
static bool proves_best(const psched__devsearch *ds)
{
    return cut_of(ds) >= ds->best * (1 - DEVSEARCH_TOL);
}

bool psched__devsearch_applies(const psched__problem *pb, const psched_plan *plan,
                               const psched_schedule *order)
{
    psched__run run;
    if (!order || pb->chains > 2 || !psched__run_shape(pb, &run) ||
        !psched__paths_applies(plan, order))
        return false;
    const psched_plan *sp = psched_schedule_plan(order);
    for (uint32_t d = 0; d < psched_plan_devices(sp); d++) {
        size_t n = psched_schedule_op_count(order, d);
        for (size_t i = 0; i < n; i++) {
            psched_op op;
            psched_schedule_ops(order, d, i, 1, &op, sizeof op);
            if (op.flags & ~(unsigned)PSCHED_OP_OVERLAP_NEXT)
                return false; /* an overlapped pair is one unit (build_dag()) */
        }
    }
    return true;
}

/* Device e's k-th plan device (k < chains): e itself, then its mirror. */
static inline uint32_t plan_device(const dsctx *x, uint32_t e, uint32_t k)
{
    return k ? x->P - 1 - e : e;
}

/* The device of the search that plan device d belongs to. */
static inline uint32_t search_device(const dsctx *x, uint32_t d)
{
    return psched__pair_of(x->pb, d);
}

/* Number the ops by their topological position, so that the evaluation
 * reads every array in order; a missing predecessor becomes the sentinel
 * n, whose end stays 0. */
static psched_status relabel(dsctx *x, const uint32_t *topo)
{
    size_t n = x->n;
    uint32_t *pos = psched__calloc(n + 1, sizeof(uint32_t));
    int32_t *pd = psched__calloc(n + 1, sizeof(int32_t));
    int32_t *px = psched__calloc(n + 1, sizeof(int32_t));
    double *lat = psched__calloc(n + 1, sizeof(double));
    uint32_t *i1 = psched__calloc(n + 1, sizeof(uint32_t));
    uint32_t *i2 = psched__calloc(n + 1, sizeof(uint32_t));
    uint32_t *dev = psched__calloc(n + 1, sizeof(uint32_t));
    uint32_t *xat = psched__calloc(n + 1, sizeof(uint32_t));
    psched_status st = PSCHED_OK;
    if (!pos || !pd || !px || !lat || !i1 || !i2 || !dev || !xat)
        st = PSCHED_ENOMEM_FAIL();
    for (size_t k = 0; !st && k < n; k++)
        pos[topo[k]] = (uint32_t)k;
    /* the chain's nodes renumbered; in that numbering they must rise (each
     * depends on the one before), else no chain bound */
    for (uint32_t j = 0; !st && x->chain && j < 2 * x->SP; j++) {
        x->chain[j] = pos[x->chain[j]];
        if (j && x->chain[j] <= x->chain[j - 1]) {
            psched__dealloc(x->chain);
            x->chain = NULL;
        }
    }
    for (size_t k = 0; !st && k < n; k++) {
        uint32_t i = topo[k];
        pd[k] = x->pd[i] >= 0 ? (int32_t)pos[x->pd[i]] : (int32_t)n;
        px[k] = x->px[i] >= 0 ? (int32_t)pos[x->px[i]] : (int32_t)n;
        lat[k] = x->px[i] >= 0 ? x->lat[i] : 0;
        i1[k] = x->i1[i];
        i2[k] = x->i2[i];
        dev[k] = x->dev[i];
        xat[k] = x->xat[i];
    }
    psched__dealloc(pos);
    if (st) {
        psched__dealloc(pd);
        psched__dealloc(px);
        psched__dealloc(lat);
        psched__dealloc(i1);
        psched__dealloc(i2);
        psched__dealloc(dev);
        psched__dealloc(xat);
        return st;
    }
    psched__dealloc(x->pd);
    psched__dealloc(x->px);
    psched__dealloc(x->lat);
    psched__dealloc(x->i1);
    psched__dealloc(x->i2);
    psched__dealloc(x->dev);
    psched__dealloc(x->xat);
    x->pd = pd;
    x->px = px;
    x->lat = lat;
    x->i1 = i1;
    x->i2 = i2;
    x->dev = dev;
    x->xat = xat;
    x->end[n] = 0;
    return PSCHED_OK;
}

/* The order's DAG and a topological order of it. */
static psched_status build_dag(dsctx *x)
{
    const psched_schedule *order = x->ds->order;
    const psched_plan *sp = psched_schedule_plan(order);
    uint32_t S = x->SP, p = x->P, mbs = psched_plan_microbatches(sp);
    uint32_t chain = x->SP / x->pb->chains; /* stages of one chain */
    double comm = psched_plan_comm(sp);
    size_t nops = psched_schedule_total_ops(order), cells = (size_t)S * mbs, pairs = 0;
    psched_op *ops = psched__calloc(nops + 1, sizeof *ops);
    size_t *opoff = psched__calloc((size_t)p + 1, sizeof *opoff);
    if (!ops || !opoff || psched_plan_devices(sp) != p) {
        psched__dealloc(ops);
        psched__dealloc(opoff);
        return ops && opoff ? PSCHED_EINVAL : PSCHED_ENOMEM_FAIL();
    }
    psched_status st = PSCHED_OK;
    for (uint32_t d = 0; !st && d < p; d++) {
        opoff[d + 1] = opoff[d] + psched_schedule_op_count(order, d);
        st = psched_schedule_ops(order, d, 0, opoff[d + 1] - opoff[d], ops + opoff[d],
                                 sizeof *ops);
    }
    /* An overlapped pair (DualPipe's F&B: the first op flagged) runs as one
     * unit: it starts once both inputs are ready and both end together
     * (the simulator's execute.c, without an overlap saving). As nodes: a
     * zero-time one waiting for the second op's input, then the two ops
     * one after the other, the first's output read at the second's end. */
    for (uint32_t d = 0; !st && d < p; d++) {
        for (size_t i = opoff[d]; i < opoff[d + 1]; i++) {
            if (!ops[i].flags)
                continue;
            if (ops[i].flags != PSCHED_OP_OVERLAP_NEXT || i + 1 >= opoff[d + 1] ||
                ops[i + 1].flags) {
                st = PSCHED_EINVAL; /* not a pair */
                break;
            }
            pairs++;
            i++;
        }
    }
    size_t n = nops + pairs;
    x->n = n;
    x->pd = psched__calloc(n + 1, sizeof(int32_t));
    x->px = psched__calloc(n + 1, sizeof(int32_t));
    x->lat = psched__calloc(n + 1, sizeof(double));
    x->i1 = psched__calloc(n + 1, sizeof(uint32_t));
    x->i2 = psched__calloc(n + 1, sizeof(uint32_t));
    uint32_t *topo = psched__calloc(n + 1, sizeof(uint32_t));
    x->end = psched__calloc(n + 1, sizeof(double));
    x->dev = psched__calloc(n + 1, sizeof(uint32_t));
    x->xat = psched__calloc(n + 1, sizeof(uint32_t));
    x->ext = psched__calloc((size_t)S + 2 * (size_t)p + 1, sizeof(double));
    x->xoff = psched__calloc((size_t)p + 1, sizeof(uint32_t));
    x->first = psched__calloc((size_t)p + 1, sizeof(uint32_t));
    x->low = psched__calloc((size_t)p + 1, sizeof(double));
    x->share = psched__calloc((size_t)p + 1, sizeof(uint32_t));
    x->start = psched__calloc((size_t)p + 1, sizeof(double));
    x->brank = psched__calloc((size_t)S + 1, sizeof(uint32_t));
    bool *begun = psched__calloc((size_t)S + 1, sizeof(bool));
    x->units = psched__calloc(3 * (size_t)S + 1, sizeof(double));
    x->rem = psched__calloc((size_t)p + 1, sizeof(double));
    x->pdev = psched__calloc((size_t)S + 1, sizeof(uint32_t));
    x->pjat = psched__calloc((size_t)S + 1, sizeof(uint32_t));
    x->pst = psched__calloc((size_t)S + 1, sizeof(uint32_t));
    x->poff = psched__calloc((size_t)p + 1, sizeof(uint32_t));
    uint32_t *pcount = psched__calloc((size_t)p + 1, sizeof(uint32_t));
    int32_t *src = psched__calloc(n + 1, sizeof(int32_t)); /* per node: its op (-1: a wait) */
    int32_t *inp = psched__calloc(n + 1, sizeof(int32_t)); /* the op whose input it waits for */
    int32_t *at = psched__calloc(2 * cells + 1, sizeof(int32_t));
    uint32_t *indeg = psched__calloc(n + 1, sizeof(uint32_t));
    int32_t *succ_dev = psched__calloc(n + 1, sizeof(int32_t));
    int32_t *succ_x = psched__calloc(n + 1, sizeof(int32_t));
    int32_t *succ_y = psched__calloc(n + 1, sizeof(int32_t));
    if (!st && (n > INT32_MAX / 2 || !x->pd || !x->px || !x->lat || !x->i1 || !x->i2 || !topo ||
                !x->end || !x->dev || !x->xat || !x->ext || !x->xoff || !x->first || !x->low ||
                !x->share || !x->start || !x->brank || !begun || !x->units || !x->rem ||
                !x->pdev || !x->pjat || !x->pst || !x->poff || !pcount || !src || !inp || !at ||
                !indeg || !succ_dev || !succ_x || !succ_y))
        st = PSCHED_ENOMEM_FAIL();
    if (!st && (psched_plan_stages(sp) != S || p != x->D * x->pb->chains ||
                S % x->pb->chains || mbs % x->pb->chains))
        st = PSCHED_EINVAL; /* not this problem's plan: the caller gives up */
    for (size_t i = 0; !st && i < nops; i++)
        if (ops[i].stage >= S || ops[i].microbatch >= mbs || ops[i].kind > PSCHED_OP_BW)
            st = PSCHED_EINVAL; /* not this plan's order: the caller gives up */
    /* each plan stage's device (the plan's map), and each plan device's
     * stages: its pair's ranges once each, in plan stage order */
    for (uint32_t t = 0; !st && t < S; t++) {
        uint32_t d = psched_plan_stage_device(sp, t), r = t % x->S;
        uint32_t e = x->pb->device_of[r];
        if (d >= p || search_device(x, d) != e) {
            st = PSCHED_EINVAL; /* a range off its pair's devices */
            break;
        }
        x->pdev[t] = d;
        uint32_t j = 0;
        while (x->stages_of[e][j] != r)
            j++;
        x->pjat[t] = j;
        pcount[d]++;
    }
    for (uint32_t d = 0; !st && d < p; d++) {
        if (pcount[d] != x->nst[search_device(x, d)]) {
            st = PSCHED_EINVAL; /* a device without its pair's ranges */
            break;
        }
        x->poff[d + 1] = x->poff[d] + pcount[d];
        for (uint32_t t = 0, k = 0; t < S; t++)
            if (x->pdev[t] == d)
                x->pst[x->poff[d] + k++] = t;
    }
    /* the nodes, device by device */
    size_t g = 0;
    for (uint32_t d = 0; !st && d < p; d++) {
        uint32_t started = 0; /* the device's stages with a backward so far */
        x->xoff[d + 1] = x->xoff[d] + x->nst[search_device(x, d)] + 2;
        for (size_t i = opoff[d]; i < opoff[d + 1]; i++) {
            bool pair = ops[i].flags != 0, head = g == 0 || x->dev[g - 1] != d;
            if (pair) {
                /* the unit's wait for its second op's input */
                x->dev[g] = d;
                x->pd[g] = head ? -1 : (int32_t)(g - 1);
                src[g] = -1;
                inp[g] = (int32_t)(i + 1);
                x->xat[g] = x->xoff[d] + (head ? 0 : 1 + started);
                head = false;
                g++;
            }
            for (size_t u = i; u <= i + pair; u++, g++) {
                uint32_t s = ops[u].stage;
                if (ops[u].kind != PSCHED_OP_F && !begun[s]) {
                    begun[s] = true;
                    x->brank[s] = started++;
                }
                x->dev[g] = d;
                x->pd[g] = head && u == i ? -1 : (int32_t)(g - 1);
                src[g] = (int32_t)u;
                inp[g] = u == i ? (int32_t)i : -1; /* the second's: the wait node's */
                x->xat[g] = x->xoff[d] + (head && u == i ? 0 : 1 + started);
            }
            i += pair;
        }
    }
    for (size_t c = 0; !st && c < 2 * cells; c++)
        at[c] = -1;
    for (size_t k = 0; !st && k < n; k++) {
        x->i1[k] = x->i2[k] = 3 * S; /* the zero slot */
        if (src[k] < 0)
            continue;
        const psched_op *o = &ops[src[k]];
        size_t s3 = 3 * (size_t)o->stage;
        x->i1[k] = (uint32_t)s3 + (o->kind == PSCHED_OP_F ? 0 : o->kind == PSCHED_OP_W ? 2 : 1);
        if (o->kind == PSCHED_OP_BW)
            x->i2[k] = (uint32_t)s3 + 2; /* b + w */
        x->units[x->i1[k]] += 1;
        if (x->i2[k] != 3 * S)
            x->units[x->i2[k]] += 1;
        /* a pair's first op: its output at the unit's end, the next node's */
        if (o->kind != PSCHED_OP_W)
            at[2 * ((size_t)o->microbatch * S + o->stage) + (o->kind != PSCHED_OP_F)] =
                (int32_t)(k + (o->flags != 0));
    }
    for (size_t k = 0; !st && k < n; k++) {
        x->px[k] = -1;
        if (inp[k] < 0)
            continue;
        const psched_op *o = &ops[inp[k]];
        bool has_in = o->kind == PSCHED_OP_F ? o->stage % chain != 0
                      : o->kind != PSCHED_OP_W && o->stage % chain != chain - 1;
        if (has_in) {
            uint32_t in = o->kind == PSCHED_OP_F ? o->stage - 1 : o->stage + 1;
            int32_t h = at[2 * ((size_t)o->microbatch * S + in) + (o->kind != PSCHED_OP_F)];
            if (h < 0) {
                st = PSCHED_EINVAL; /* an input the order lacks */
                break;
            }
            x->px[k] = h;
            x->lat[k] = x->dev[h] != x->dev[k] ? comm : 0;
        }
    }
    /* Kahn: each node has at most two predecessors and three successors
     * (the next on its device; the readers of its output: two at a pair's
     * second node, which carries both ops' outputs) */
    for (size_t i = 0; !st && i < n; i++)
        succ_dev[i] = succ_x[i] = succ_y[i] = -1;
    for (size_t i = 0; !st && i < n; i++) {
        if (x->pd[i] >= 0) {
            succ_dev[x->pd[i]] = (int32_t)i;
            indeg[i]++;
        }
        if (x->px[i] >= 0) {
            int32_t *slot = succ_x[x->px[i]] < 0 ? &succ_x[x->px[i]] : &succ_y[x->px[i]];
            if (*slot >= 0) {
                st = PSCHED_EINVAL; /* more readers than outputs: not this DAG */
                break;
            }
            *slot = (int32_t)i;
            indeg[i]++;
        }
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; !st && i < n; i++)
        if (!indeg[i])
            topo[tail++] = (uint32_t)i;
    while (!st && head < tail) {
        uint32_t i = topo[head++];
        int32_t nx[3] = {succ_dev[i], succ_x[i], succ_y[i]};
        for (int k = 0; k < 3; k++)
            if (nx[k] >= 0 && --indeg[nx[k]] == 0)
                topo[tail++] = (uint32_t)nx[k];
    }
    if (!st && tail != n)
        st = PSCHED_EINVAL; /* a cycle: the order deadlocks */
    /* the chain bound's nodes (one chain, no pair): micro-batch 0's F at
     * each stage, then its B (or BW) from the last stage back */
    if (!st && x->pb->chains == 1 && !pairs) {
        x->chain = psched__calloc(2 * (size_t)S, sizeof(uint32_t));
        x->bump = psched__calloc(2 * (size_t)S, sizeof(double));
        x->bumpin = psched__calloc(2 * (size_t)S, sizeof(double));
        x->ustage = psched__calloc(S, sizeof(uint32_t));
        if (!x->chain || !x->bump || !x->bumpin || !x->ustage)
            st = PSCHED_ENOMEM_FAIL();
        size_t found = 0;
        x->chain_bw = true;
        for (size_t k = 0; !st && k < n; k++) {
            const psched_op *o = &ops[src[k]];
            if (o->microbatch || o->kind == PSCHED_OP_W)
                continue;
            x->chain[o->kind == PSCHED_OP_F ? o->stage : 2 * S - 1 - o->stage] = (uint32_t)k;
            x->chain_bw = x->chain_bw && o->kind != PSCHED_OP_B;
            found++;
        }
        if (!st && found != 2 * (size_t)S) {
            psched__dealloc(x->chain);
            x->chain = NULL; /* not one F and one B per stage: no chain bound */
        }
    }
    if (!st)
        st = relabel(x, topo);
    if (!st) {
        x->qv = psched__calloc(n + 1, sizeof(double));
        x->qt = psched__calloc((size_t)p + 1, sizeof(double));
        x->lastop = psched__calloc((size_t)p + 1, sizeof(uint32_t));
        if (!x->qv || !x->qt || !x->lastop)
            st = PSCHED_ENOMEM_FAIL();
    }
    if (!st) {
        for (size_t k = 0; k < n; k++)
            x->lastop[x->dev[k]] = (uint32_t)k;
        x->kmin = n;
        for (uint32_t d = 0; d < p; d++)
            x->kmin = x->lastop[d] < x->kmin ? x->lastop[d] : x->kmin;
    }
    for (size_t k = 0; !st && k < n; k++)
        if (x->xat[k] == x->xoff[x->dev[k]])
            x->first[x->dev[k]] = (uint32_t)k;
    psched__dealloc(topo);
    psched__dealloc(ops);
    psched__dealloc(opoff);
    psched__dealloc(src);
    psched__dealloc(inp);
    psched__dealloc(at);
    psched__dealloc(indeg);
    psched__dealloc(succ_dev);
    psched__dealloc(succ_x);
    psched__dealloc(succ_y);
    psched__dealloc(begun);
    psched__dealloc(pcount);
    return st;
}

/* The larger of two finite values: fmax() is a libm call on the hot loop
 * (about a tenth of the search's time), and the costs are finite. */
static inline double dmax(double a, double b)
{
    return a > b ? a : b;
}

/* The chain bound's bump[] and bumpin[] for an evaluation where `left`
 * run layers go to the devices without counts but `skip` (their stages
 * at their fewest layers): the forward through every stage holds all of
 * them, each beyond the fewest adding at least a run layer's least f
 * (before the last stage's forward, those that stage cannot hold); the
 * backward back to stage s, the layers of stages s .. S - 1 (before it,
 * of s + 1 .. S - 1), which hold at least `left` less the most the
 * earlier ones can hold, each adding at least a run layer's least b (and
 * w where the backward is BW). The other forward nodes get none (no
 * measured bound moved with them). False when nothing rises. */
static bool chain_bumps(dsctx *x, uint32_t left, uint32_t skip)
{
    uint32_t S = x->SP;
    int64_t umin = 0, umax = 0;
    for (uint32_t s = 0; s < S; s++) {
        uint32_t u = x->pb->device_of[s];
        x->ustage[s] = u != skip && x->group[u] == UINT32_MAX;
        umin += x->ustage[s] ? x->cmin[s] : 0;
        umax += x->ustage[s] ? x->cmax[s] : 0;
    }
    if ((int64_t)left <= umin)
        return false;
    for (uint32_t s = 0; s < S; s++)
        x->bump[s] = x->bumpin[s] = 0;
    /* the last forward: before it the other stages' layers, through it all */
    int64_t last_min = x->ustage[S - 1] ? x->cmin[S - 1] : 0;
    int64_t last_max = x->ustage[S - 1] ? x->cmax[S - 1] : 0;
    int64_t before = (int64_t)left - last_max - (umin - last_min);
    double fwd = (double)((int64_t)left - umin) * x->layer_f;
    x->bump[S - 1] = before > 0 ? (double)before * x->layer_f : 0;
    x->bumpin[S - 1] = fwd;
    double per = x->layer_b + (x->chain_bw ? x->layer_w : 0);
    /* the backward to stage s: stages s + 1 .. S - 1 (through it, s .. S - 1)
     * hold at least left - (the most of the stages before them) */
    int64_t after_min = 0, upto_max = umax;
    for (uint32_t s = S; s-- > 0;) {
        int64_t out = (int64_t)left - upto_max - after_min; /* stages after s */
        upto_max -= x->ustage[s] ? x->cmax[s] : 0;
        after_min += x->ustage[s] ? x->cmin[s] : 0;
        int64_t in = (int64_t)left - upto_max - after_min; /* s and after */
        x->bump[2 * S - 1 - s] = fwd + (out > 0 ? (double)out * per : 0);
        x->bumpin[2 * S - 1 - s] = fwd + (in > 0 ? (double)in * per : 0);
    }
    return true;
}

/* A bound of every completion of the node: the step time of the order at
 * x->cost (the simulator's longest path; at a leaf, where ext is 0, that
 * is the bound), at least each op's end plus the time of its device's ops
 * after it and the work still to come (ext); as soon as that reaches
 * `cut`, that value. */
static double evaluate(dsctx *x, double cut)
{
    double mk = 0;
    const double *c = x->cost;
    for (uint32_t d = 0; d < x->P; d++)
        x->rem[d] = 0;
    for (uint32_t s = 0; s < x->SP; s++)
        x->rem[x->pdev[s]] += x->units[3 * s] * c[3 * s] + x->units[3 * s + 1] * c[3 * s + 1] +
                              x->units[3 * s + 2] * c[3 * s + 2];
    {
        /* an op's successors come after it, so its value is complete when
         * the pass reaches it; what it pushes below kmin (and to the
         * sentinel n) is never read */
        const int32_t *pd = x->pd, *px = x->px;
        const uint32_t *j1 = x->i1, *j2 = x->i2;
        const double *lt = x->lat;
        double *qv = x->qv;
        memset(qv + x->kmin, 0, (x->n - x->kmin) * sizeof *qv);
        for (size_t k = x->n; k-- > x->kmin;) {
            double t = qv[k] + c[j1[k]] + c[j2[k]];
            qv[pd[k]] = dmax(qv[pd[k]], t);
            qv[px[k]] = dmax(qv[px[k]], t + lt[k]);
        }
        for (uint32_t d = 0; d < x->P; d++)
            x->qt[d] = qv[x->lastop[d]];
    }
    double margin = cut * (1 + 1e-12);
    /* ops in topological order (relabel); the sentinel n ends at 0 */
    const int32_t *pd = x->pd, *px = x->px;
    const uint32_t *i1 = x->i1, *i2 = x->i2, *dev = x->dev, *xat = x->xat;
    const double *lat = x->lat, *ext = x->ext;
    double *end = x->end, *rem = x->rem;
    /* the chain bound's next node (SIZE_MAX: none) and the chain's length
     * at the present costs up to it */
    size_t nextk = x->bumped ? x->chain[0] : SIZE_MAX, j = 0;
    double chain_len = 0;
    bool rose = false;
    for (size_t k = 0; k < x->n; k++) {
        double s = dmax(end[pd[k]], end[px[k]] + lat[k]);
        double dur = c[i1[k]] + c[i2[k]];
        double e = s + dur;
        if (k == nextk) {
            /* (the chain's previous node is this one's input, or at the
             * turn an earlier op of its device: latency 0) */
            double from = chain_len + lat[k] + x->bump[j];
            chain_len += lat[k] + dur;
            double to = xat[k] == x->xoff[dev[k]] ? from + dur : chain_len + x->bumpin[j];
            rose = rose || to > e;
            e = dmax(e, to);
            nextk = ++j < 2 * (size_t)x->SP ? x->chain[j] : SIZE_MAX;
        }
        end[k] = e;
        /* the op's end and its device's work after it: the ops at their
         * present costs and what every completion adds (ext) */
        double left = (rem[dev[k]] -= dur) + ext[xat[k]] + x->qt[dev[k]];
        mk = dmax(mk, e + left);
        if (e + left > margin) {
            x->ops += k + 1;
            test_chain_rises += rose;
            return e + left;
        }
    }
    x->ops += x->n;
    test_chain_rises += rose;
    return mk;
}

static psched_status push_cfg(dsctx *x, const cfg *c)
{
    if (x->ncfg == x->cfg_cap) {
        size_t cap = x->cfg_cap ? 2 * x->cfg_cap : 256;
        cfg *t = psched__reallocarray(x->cfgs, cap, sizeof *t);
        if (!t)
            return PSCHED_ENOMEM_FAIL();
        x->cfgs = t;
        x->cfg_cap = cap;
    }
    x->cfgs[x->ncfg++] = *c;
    return PSCHED_OK;
}

static int cfg_cmp(const void *a, const void *b)
{
    const cfg *x = a, *y = b;
    if (x->b != y->b)
        return x->b < y->b ? -1 : 1;
    return (x->mem > y->mem) - (x->mem < y->mem);
}

/* The stage's configurations with `count` run layers that no other beats
 * on both backward time and memory, by rising time (falling memory). */
static psched_status stage_cfgs(dsctx *x, uint32_t s, uint32_t count)
{
    const psched__problem *pb = x->pb;
    const psched__run *run = x->ds->run;
    uint32_t L = pb->layers;
    const psched__group *rg = psched__layer_group(pb, run->first);
    double rparam = psched__range_param(pb, run->first, 1);
    /* the layer outside the run on this stage, if any */
    int64_t end_layer = s == 0 && run->head ? 0 : s == x->S - 1 && run->tail ? (int64_t)L - 1 : -1;
    const psched__group *eg = end_layer >= 0 ? psched__layer_group(pb, (uint32_t)end_layer) : NULL;
    uint8_t rv[PSCHED__RECOMPUTE_KINDS], nrv = 0;
    for (uint8_t v = 0; v < PSCHED__RECOMPUTE_KINDS; v++)
        if (rg->variant[v].present)
            rv[nrv++] = v;
    if (!nrv) {
        x->stop = true; /* a group without variants: not a run this search models */
        return PSCHED_OK;
    }
    size_t from = x->ncfg;
    psched_status st = PSCHED_OK;
    for (uint8_t ev = 0; !st && ev < PSCHED__RECOMPUTE_KINDS; ev++) {
        if (eg ? !eg->variant[ev].present : ev > 0)
            continue;
        /* every split of count over the run's variants */
        uint32_t a[PSCHED__RECOMPUTE_KINDS] = {0};
        uint32_t top0 = nrv > 1 ? count : 0, top1 = nrv > 2 ? count : 0;
        for (uint32_t a0 = 0; !st && a0 <= top0; a0++) {
            for (uint32_t a1 = 0; !st && a1 <= (nrv > 2 ? top1 - a0 : 0); a1++) {
                if (nrv == 1) {
                    a[0] = count;
                } else if (nrv == 2) {
                    a[0] = a0;
                    a[1] = count - a0;
                } else {
                    a[0] = a0;
                    a[1] = a1;
                    a[2] = count - a0 - a1;
                }
                cfg c;
                memset(&c, 0, sizeof c);
                c.count = count;
                c.f = count * rg->f;
                c.b = count * rg->b;
                c.w = count * rg->w;
                c.mem = count * rparam;
                double act = 0;
                for (uint8_t k = 0; k < nrv; k++) {
                    c.mix[rv[k]] = a[k];
                    c.b += a[k] * rg->variant[rv[k]].extra;
                    act += a[k] * rg->variant[rv[k]].act;
                }
                if (eg) {
                    c.end_variant = ev;
                    c.f += eg->f;
                    c.b += eg->b + eg->variant[ev].extra;
                    c.w += eg->w;
                    c.mem += psched__range_param(pb, (uint32_t)end_layer, 1);
                    act += eg->variant[ev].act;
                }
                c.mem += pb->inflight[s] * act;
                st = push_cfg(x, &c);
            }
        }
    }
    if (st)
        return st;
    /* keep the frontier: by rising time, each leaner than all before */
    qsort(x->cfgs + from, x->ncfg - from, sizeof(cfg), cfg_cmp);
    size_t keep = from;
    for (size_t i = from; i < x->ncfg; i++)
        if (keep == from || x->cfgs[i].mem < x->cfgs[keep - 1].mem)
            x->cfgs[keep++] = x->cfgs[i];
    x->ncfg = keep;
    return PSCHED_OK;
}

/* ---- a device's options ---- */

/* One group's options, made on demand (the polish): per option its
 * stages' configuration indices (vd each) and its work. */
typedef struct glist {
    uint32_t *opt;
    double *work;
    size_t n, cap;
} glist;

typedef struct optgen {
    dsctx *x;
    uint32_t e, vd, total;
    uint32_t counts[64];
    size_t idx[64];
    double minmem_after[65];
    glist *out; /* NULL: into the device's table (x->opt) */
    bool over;  /* out passed POLISH_GROUP_MAX */
} optgen;

static size_t cfg_len(const dsctx *x, uint32_t s, uint32_t c)
{
    size_t k = c - x->cmin[s];
    return x->cfg_at[s][k + 1] - x->cfg_at[s][k];
}

static const cfg *cfg_of(const dsctx *x, uint32_t s, uint32_t c, size_t i)
{
    return &x->cfgs[x->cfg_at[s][c - x->cmin[s]] + i];
}

/* g's present option: its stages' configuration indices into v; returns
 * its work. */
static double option_cfgs(const optgen *g, uint32_t *v)
{
    const dsctx *x = g->x;
    double work = 0;
    for (uint32_t j = 0; j < g->vd; j++) {
        uint32_t s = x->stages_of[g->e][j];
        size_t ci = x->cfg_at[s][g->counts[j] - x->cmin[s]] + g->idx[j];
        v[j] = (uint32_t)ci;
        work += x->cfgs[ci].f + x->cfgs[ci].b + x->cfgs[ci].w;
    }
    return work;
}

/* Room for option n in a list of options: configurations (vd each), work
 * and, unless NULL, totals, all doubled together from 64 when n reaches
 * *cap (which is then updated). */
static psched_status grow_options(uint32_t **opt, double **work, uint32_t **total, size_t n,
                                  size_t *cap, uint32_t vd)
{
    if (n < *cap)
        return PSCHED_OK;
    size_t c = *cap ? 2 * *cap : 64;
    uint32_t *t = psched__reallocarray(*opt, c * vd, sizeof *t);
    if (!t)
        return PSCHED_ENOMEM_FAIL();
    *opt = t;
    double *w = psched__reallocarray(*work, c, sizeof *w);
    if (!w)
        return PSCHED_ENOMEM_FAIL();
    *work = w;
    if (total) {
        uint32_t *u = psched__reallocarray(*total, c, sizeof *u);
        if (!u)
            return PSCHED_ENOMEM_FAIL();
        *total = u;
    }
    *cap = c;
    return PSCHED_OK;
}

static psched_status emit_listed(optgen *g)
{
    glist *l = g->out;
    if (l->n >= POLISH_GROUP_MAX) {
        g->over = true;
        return PSCHED_OK;
    }
    psched_status st = grow_options(&l->opt, &l->work, NULL, l->n, &l->cap, g->vd);
    if (st)
        return st;
    l->work[l->n] = option_cfgs(g, l->opt + l->n * g->vd);
    l->n++;
    return PSCHED_OK;
}

/* The options of all devices the search takes, at most. */
static size_t options_max(void)
{
    return test_options_cap ? test_options_cap : DEVSEARCH_OPTIONS_MAX;
}

static psched_status emit_option(optgen *g)
{
    dsctx *x = g->x;
    uint32_t e = g->e, vd = g->vd;
    if (g->out)
        return emit_listed(g);
    if (x->total_opts >= options_max()) {
        x->stop = true;
        return PSCHED_OK;
    }
    psched_status st = grow_options(&x->opt[e], &x->opt_work[e], &x->opt_total[e], x->nopt[e],
                                    &x->opt_cap[e], vd);
    if (st)
        return st;
    size_t o = x->nopt[e]++;
    x->total_opts++;
    x->opt_total[e][o] = g->total;
    x->opt_work[e][o] = option_cfgs(g, x->opt[e] + o * vd);
    return PSCHED_OK;
}

/* The assignments of the counts that fit the device's memory and are
 * minimal: no stage can take a faster configuration and still fit (the
 * fitting set only grows with leaner configurations, so a fitting
 * assignment that some other fitting one beats on every stage can be made
 * faster on one stage alone). */
static psched_status antichain(optgen *g, uint32_t j, double mem)
{
    dsctx *x = g->x;
    double cap = psched__room(x->pb);
    if (x->stop || g->over)
        return PSCHED_OK;
    if (j == g->vd) {
        if (mem > cap)
            return PSCHED_OK;
        for (uint32_t k = 0; k < g->vd; k++) {
            if (!g->idx[k])
                continue;
            uint32_t s = x->stages_of[g->e][k];
            double alt = mem - cfg_of(x, s, g->counts[k], g->idx[k])->mem +
                         cfg_of(x, s, g->counts[k], g->idx[k] - 1)->mem;
            if (alt <= cap)
                return PSCHED_OK; /* a faster configuration of stage k fits too */
        }
        return emit_option(g);
    }
    uint32_t s = x->stages_of[g->e][j];
    size_t len = cfg_len(x, s, g->counts[j]);
    psched_status st = PSCHED_OK;
    for (size_t i = 0; !st && i < len && !x->stop && !g->over; i++) {
        double mj = cfg_of(x, s, g->counts[j], i)->mem;
        if (mem + mj + g->minmem_after[j + 1] > cap)
            continue;
        g->idx[j] = i;
        st = antichain(g, j + 1, mem + mj);
        if (!isfinite(x->pb->limit))
            break; /* no limit: the fastest configuration of every stage only */
    }
    return st;
}

/* Per stage j of g's counts, the least memory of the stages from j on
 * (their leanest configurations); false when a stage has none. */
static bool memory_floor(optgen *g)
{
    const dsctx *x = g->x;
    g->minmem_after[g->vd] = 0;
    for (uint32_t k = g->vd; k-- > 0;) {
        uint32_t s = x->stages_of[g->e][k];
        size_t len = cfg_len(x, s, g->counts[k]);
        if (!len)
            return false;
        g->minmem_after[k] = g->minmem_after[k + 1] + cfg_of(x, s, g->counts[k], len - 1)->mem;
    }
    return true;
}

/* Every split of `left` layers over the device's stages j.. */
static psched_status compositions(optgen *g, uint32_t j, uint32_t left)
{
    dsctx *x = g->x;
    if (x->stop)
        return PSCHED_OK;
    if (j == g->vd)
        return left || !memory_floor(g) ? PSCHED_OK : antichain(g, 0, 0);
    uint32_t s = x->stages_of[g->e][j];
    psched_status st = PSCHED_OK;
    for (uint32_t c = x->cmin[s]; !st && c <= x->cmax[s] && c <= left; c++) {
        g->counts[j] = c;
        st = compositions(g, j + 1, left - c);
    }
    return st;
}

/* ---- the search ---- */

/* Device e's ext values (v: NULL for none). */
static void set_ext(dsctx *x, uint32_t e, const double *v)
{
    size_t w = x->nst[e] + 2;
    for (uint32_t k = 0; k < x->pb->chains; k++) {
        uint32_t d = plan_device(x, e, k);
        if (v)
            memcpy(x->ext + x->xoff[d], v, w * sizeof *v);
        else
            memset(x->ext + x->xoff[d], 0, w * sizeof *v);
    }
}

/* Device e's stage costs at configurations o (NULL: each stage's least
 * cost) and the work still to come that its node adds (v, its ext values;
 * NULL: none). */
static void set_device(dsctx *x, uint32_t e, const uint32_t *o, const double *v)
{
    for (uint32_t j = 0; j < x->nst[e]; j++) {
        uint32_t s = x->stages_of[e][j];
        const cfg *c = o ? &x->cfgs[o[j]] : NULL;
        for (uint32_t t = s; t < x->SP; t += x->S) { /* the range's plan stages */
            x->cost[3 * t] = c ? c->f : x->minc[3 * s];
            x->cost[3 * t + 1] = c ? c->b : x->minc[3 * s + 1];
            x->cost[3 * t + 2] = c ? c->w : x->minc[3 * s + 2];
        }
    }
    set_ext(x, e, v);
}

/* Device e's ext values (xoff) as if its stages cost opt's
 * configurations (NULL: each stage's least cost): its whole work, then
 * per class c the backward work of its stages that start their backward
 * after c others. */
static void device_work(const dsctx *x, uint32_t e, const uint32_t *opt, double *v)
{
    uint32_t vd = x->nst[e];
    double u[66];
    for (uint32_t k = 0; k < x->pb->chains; k++) {
        /* each of its plan devices (two chains: the least of the two, a
         * bound of both) */
        uint32_t d = plan_device(x, e, k);
        double *a = k ? u : v;
        memset(a, 0, (vd + 2) * sizeof *a);
        for (uint32_t i = x->poff[d]; i < x->poff[d + 1]; i++) {
            uint32_t t = x->pst[i], j = x->pjat[t];
            size_t s3 = 3 * (size_t)x->stages_of[e][j], t3 = 3 * (size_t)t;
            const cfg *c = opt ? &x->cfgs[opt[j]] : NULL;
            double bw = x->units[t3 + 1] * (c ? c->b : x->minc[s3 + 1]) +
                        x->units[t3 + 2] * (c ? c->w : x->minc[s3 + 2]);
            a[0] += x->units[t3] * (c ? c->f : x->minc[s3]) + bw;
            for (uint32_t q = 0; q <= x->brank[t]; q++)
                a[1 + q] += bw; /* in class q's rest while fewer than its rank started */
        }
        if (k)
            for (uint32_t q = 0; q < vd + 2; q++)
                v[q] = fmin(v[q], u[q]);
    }
}

/* Device e's ext values with no counts chosen (the stages at their least
 * costs, any option with at least n run layers to come, per n from lo to
 * hi) into x->ux[e], and per group (the stages at the group's fastest
 * configurations, one of its options to come) into x->gx[e]: the least
 * over the options less the present cost. */
static psched_status device_extras(dsctx *x, uint32_t e)
{
    size_t vd = x->nst[e], n = x->nopt[e], w = vd + 2;
    size_t span = (size_t)x->hi[e] - x->lo[e] + 1;
    x->gx[e] = psched__calloc(w * n + 1, sizeof(double));
    x->ux[e] = psched__calloc(w * span + 1, sizeof(double));
    double *v = psched__calloc(w, sizeof(double));
    double *least = psched__calloc(w * span + 1, sizeof(double));
    double *gl = psched__calloc(w, sizeof(double));
    if (!x->gx[e] || !x->ux[e] || !v || !least || !gl) {
        psched__dealloc(v);
        psched__dealloc(least);
        psched__dealloc(gl);
        return PSCHED_ENOMEM_FAIL();
    }
    for (size_t q = 0; q < w * span; q++)
        least[q] = INFINITY;
    for (size_t i = 0, g; i < n; i = g) {
        g = x->gend[e][i];
        for (size_t q = 0; q < w; q++)
            gl[q] = INFINITY;
        for (size_t o = i; o < g; o++) {
            device_work(x, e, x->opt[e] + o * vd, v);
            for (size_t q = 0; q < w; q++)
                gl[q] = fmin(gl[q], v[q]);
        }
        device_work(x, e, x->gmin[e] + i * vd, v);
        double *at = least + w * (x->opt_total[e][i] - x->lo[e]); /* narrow() kept it in range */
        for (size_t q = 0; q < w; q++) {
            at[q] = fmin(at[q], gl[q]);
            x->gx[e][w * i + q] = fmax(0, gl[q] - v[q]);
        }
    }
    device_work(x, e, NULL, v);
    x->low[e] = v[0];
    for (size_t k = span; k-- > 0;) {
        for (size_t q = 0; q < w; q++) {
            if (k + 1 < span)
                least[w * k + q] = fmin(least[w * k + q], least[w * (k + 1) + q]);
            double d = least[w * k + q] - v[q];
            x->ux[e][w * k + q] = isfinite(d) ? fmax(0, d) : 0;
        }
    }
    psched__dealloc(v);
    psched__dealloc(least);
    psched__dealloc(gl);
    return PSCHED_OK;
}

/* After an evaluate() that ran to its end: a bound of every completion
 * where `left` run layers go to the devices without counts (but `skip`).
 * Such a device u holding n of them ends no earlier than its first op's
 * start plus its least work with n, f_u(n), which does not fall as n
 * rises; so the step time is at least the least, over the ways to share
 * `left` within the devices' ranges, of the largest f_u(n_u): adding the
 * layers one at a time where f rises least finds it. */
static double share_bound(const dsctx *x, uint32_t left, uint32_t skip)
{
    double lb = 0;
    uint32_t placed = 0;
    for (uint32_t u = 0; u < x->D; u++) {
        x->share[u] = 0;
        if (u == skip || x->group[u] != UINT32_MAX)
            continue;
        /* without counts its stages are at their least costs; its plan
         * devices each start, do that work and end before the step does */
        x->start[u] = 0;
        for (uint32_t k = 0; k < x->pb->chains; k++) {
            uint32_t d = plan_device(x, u, k), f = x->first[d];
            x->start[u] = dmax(x->start[u], x->end[f] - (x->cost[x->i1[f]] + x->cost[x->i2[f]]) +
                                                x->low[u] + x->qt[d]);
        }
        lb = fmax(lb, x->start[u] + x->ux[u][0]); /* at its fewest */
        placed += x->lo[u];
    }
    if (placed > left)
        return INFINITY; /* the ranges cannot hold it (scan() filters this) */
    for (uint32_t k = placed; k < left; k++) {
        uint32_t best = UINT32_MAX;
        double next = INFINITY;
        for (uint32_t u = 0; u < x->D; u++) {
            if (u == skip || x->group[u] != UINT32_MAX || x->lo[u] + x->share[u] >= x->hi[u])
                continue;
            double v = x->start[u] + x->ux[u][(size_t)(x->share[u] + 1) * (x->nst[u] + 2)];
            if (v < next) {
                next = v;
                best = u;
            }
        }
        if (best == UINT32_MAX)
            return INFINITY;
        x->share[best]++;
        lb = fmax(lb, next);
    }
    return lb;
}

/* The ext values of the devices without counts (but `skip`) when `left`
 * run layers go to them and at most `uhi` in all can: each holds at
 * least what the others' most leaves. */
static void set_unplaced(dsctx *x, uint32_t left, uint32_t uhi, uint32_t skip)
{
    for (uint32_t u = 0; u < x->D; u++) {
        if (u == skip || x->group[u] != UINT32_MAX)
            continue;
        int64_t need = (int64_t)left - ((int64_t)uhi - x->hi[u]);
        uint32_t n = need > (int64_t)x->hi[u] ? x->hi[u]
                     : need > (int64_t)x->lo[u] ? (uint32_t)need : x->lo[u];
        set_ext(x, u, x->ux[u] + (size_t)(n - x->lo[u]) * (x->nst[u] + 2));
    }
}

/* The partition of the chosen options into x->sol. */
static void write_solution(dsctx *x)
{
    const psched__problem *pb = x->pb;
    const psched__run *run = x->ds->run;
    uint32_t at = 0;
    for (uint32_t s = 0; s < x->S; s++) {
        uint32_t e = pb->device_of[s], j = 0;
        while (x->stages_of[e][j] != s)
            j++;
        const cfg *c = &x->cfgs[x->pcfg ? x->pcfg[s]
                                        : x->opt[e][(size_t)x->chosen[e] * x->nst[e] + j]];
        bool head = s == 0 && run->head, tail = s == x->S - 1 && run->tail;
        x->sol.first[s] = at;
        x->sol.count[s] = c->count + head + tail;
        if (head)
            x->sol.choice[at++] = c->end_variant;
        for (uint8_t v = 0; v < PSCHED__RECOMPUTE_KINDS; v++)
            for (uint32_t k = 0; k < c->mix[v]; k++)
                x->sol.choice[at++] = v;
        if (tail)
            x->sol.choice[at++] = c->end_variant;
    }
    x->sol.found = true;
}

static void leaf(dsctx *x, double mine)
{
    psched__devsearch *ds = x->ds;
    write_solution(x);
    double mk = INFINITY, best = ds->best;
    x->st = ds->consider(ds->ctx, &x->sol, &mk, &best);
    if (x->st) {
        x->stop = true;
        return;
    }
    /* the library's simulator is the judge; a different answer means this
     * DAG is not the simulator's, and nothing it cut is proven */
    if (!(fabs(mk - mine) <= 1e-9 * fmax(1, fabs(mk)))) {
        x->mismatch = x->stop = true;
        return;
    }
    ds->best = fmin(ds->best, best);
}

/* Whether option opt of device e costs at least as much on every stage
 * (f, b and w) as one of the options of its group cut at this node (the
 * second phase: every other device's costs and work still to come are the
 * same for both): its bound, the step time with the same other stages,
 * can only be larger, so it is cut too without evaluating it. (Not in the
 * first phase: a group's bound also counts the work its assignments and
 * the layers it leaves to the others force, which a group with costlier
 * fastest configurations need not force; comparing groups holding
 * different layer counts once cut the grid's L = 32 interleaved optimum.) */
static bool dominated(const dsctx *x, uint32_t e, const uint32_t *opt,
                      const uint32_t *const *cutset, size_t ncut)
{
    for (size_t q = 0; q < ncut; q++) {
        bool all = true;
        for (uint32_t j = 0; j < x->nst[e] && all; j++) {
            const cfg *a = &x->cfgs[cutset[q][j]], *b = &x->cfgs[opt[j]];
            all = a->f <= b->f && a->b <= b->b && a->w <= b->w;
        }
        if (all)
            return true;
    }
    return false;
}

/* Keeps device e's counts at option o (a group's first) and their bound
 * when the hook records and no other device has counts yet. */
static void test_keep(const dsctx *x, uint32_t e, size_t o, double lb)
{
    if (test_rec_n >= test_rec_max || test_rec_stages != x->S || x->pb->chains != 1)
        return;
    for (uint32_t u = 0; u < x->D; u++)
        if (u != e && x->group[u] != UINT32_MAX)
            return;
    uint32_t *r = test_rec + test_rec_n * test_rec_stages;
    for (uint32_t s = 0; s < x->S; s++)
        r[s] = UINT32_MAX;
    for (uint32_t j = 0; j < x->nst[e]; j++)
        r[x->stages_of[e][j]] = x->cfgs[x->gmin[e][o * x->nst[e] + j]].count;
    test_rec_bound[test_rec_n++] = lb;
}

/* Bounds device e's choices: with `counts` (the first phase), each group
 * of its options with the same counts (`left` run layers for the devices
 * without counts yet), at the group's fastest configuration of each
 * stage; else (the second phase) each option of the group it holds. The
 * choices that stay below the best go to out[] (their group's or their
 * own first index); at the last choice of the second phase each is a
 * leaf, simulated instead. Stops at `enough`. Returns their count. */
static size_t scan(dsctx *x, uint32_t e, uint32_t left, bool counts, bool last, size_t enough,
                   okey *out)
{
    psched__devsearch *ds = x->ds;
    uint32_t vd = x->nst[e];
    size_t nk = 0, ncut = 0;
    const uint32_t *cutset[DEVSEARCH_DOMINATORS];
    size_t from = counts ? 0 : x->group[e], to = counts ? x->nopt[e] : x->gend[e][from];
    for (size_t o = from; o < to && !x->stop && nk < enough; o = counts ? x->gend[e][o] : o + 1) {
        double cut = cut_of(ds);
        if (counts) {
            uint32_t n = x->opt_total[e][o];
            if (n > left)
                continue;
            uint32_t rest = left - n;
            if (rest < x->ulo - x->lo[e] || rest > x->uhi - x->hi[e])
                continue; /* the others cannot hold the rest */
        }
        /* the device's own work after its start and before its tail (a
         * group's first option has its least) */
        if (ds->base[e] + x->m * (x->opt_work[e][o] - x->end_work[e]) >= cut)
            continue;
        const uint32_t *opt = counts ? x->gmin[e] + o * vd : x->opt[e] + o * vd;
        if (!counts && dominated(x, e, opt, cutset, ncut))
            continue;
        set_device(x, e, opt, counts ? x->gx[e] + (vd + 2) * o : NULL);
        if (counts)
            set_unplaced(x, left - x->opt_total[e][o], x->uhi - x->hi[e], e);
        x->chosen[e] = (uint32_t)o;
        ds->nodes++;
        test_nodes++;
        x->bumped =
            counts && x->chain && !test_no_chain && chain_bumps(x, left - x->opt_total[e][o], e);
        double lb = evaluate(x, cut);
        x->bumped = false;
        if (counts && lb < cut)
            lb = fmax(lb, share_bound(x, left - x->opt_total[e][o], e));
        if (counts && test_rec_max)
            test_keep(x, e, o, lb);
        if (lb < cut) {
            if (last)
                leaf(x, lb);
            else
                out[nk++] = (okey){lb, (uint32_t)o};
        } else if (!counts && ncut < DEVSEARCH_DOMINATORS) {
            cutset[ncut++] = opt;
        }
        /* back at its least costs (its ext: set_unplaced() below) or its group's */
        set_device(x, e, counts ? NULL : x->gmin[e] + x->group[e] * vd,
                   counts ? NULL : x->gx[e] + (vd + 2) * (size_t)x->group[e]);
        if (x->ops > ds->ops_budget || ((ds->nodes & 15) == 0 && psched__now() > ds->until) ||
            (test_stop && ds->nodes >= test_stop))
            x->stop = true;
    }
    if (counts)
        set_unplaced(x, left, x->uhi, UINT32_MAX);
    return nk;
}

/* Children by rising bound (the dive's order), ties by index. */
static int okey_cmp(const void *a, const void *b)
{
    const okey *p = a, *q = b;
    if (p->key != q->key)
        return p->key < q->key ? -1 : 1;
    return p->idx < q->idx ? -1 : p->idx > q->idx;
}

/* Depth `depth` of the search. First each device's counts (a group of
 * its options, the stages at the group's fastest configurations), then
 * each device's option within its group; `left` run layers for the
 * devices without counts yet. At each depth every device still to choose
 * is scanned (scan()) and the one with the fewest choices below the best
 * is branched on (first fail: a device with none cuts the node, one with
 * few branches least; a device's scan stops once it has as many as the
 * fewest so far); its children are searched in the options' order,
 * closest to the incumbent first. (By rising bound instead, the search
 * dives into the devices' cheapest options, which leave the most layers
 * to the others: Mixtral's looped-bfs at v = 4 and 60 GB was not proven
 * in 5 s, against 1.6 s in this order.) Choosing the counts first bounds
 * every recompute assignment of a count vector at once until every
 * device's counts are known. With `resume`, the depth's children are the
 * ones listed before the search stopped, from the one it stopped in. */
static void dfs(dsctx *x, uint32_t depth, uint32_t left, bool resume)
{
    psched__devsearch *ds = x->ds;
    uint32_t D = x->D;
    level *lv = &x->lvl[depth];
    bool counts = depth < D;
    if (!resume || !lv->valid) {
        resume = false;
        lv->valid = false;
        bool last = depth + 1 == 2 * D;
        size_t nbest = SIZE_MAX;
        uint32_t be = UINT32_MAX;
        for (uint32_t q = 0; q < D && !x->stop; q++) {
            uint32_t e = x->dev_order[q];
            if (counts ? x->group[e] != UINT32_MAX : x->placed[e])
                continue;
            size_t nk = scan(x, e, left, counts, last, nbest, x->spare);
            if (last)
                return; /* one option left to choose: they were the leaves */
            if (nk < nbest) {
                nbest = nk;
                be = e;
                okey *t = x->kids[depth]; /* the spare becomes the best list */
                x->kids[depth] = x->spare;
                x->spare = t;
            }
            if (!nbest)
                return; /* a device with no choice left: nothing below is faster */
        }
        if (x->stop || be == UINT32_MAX)
            return;
        *lv = (level){x->kids[depth], nbest, 0, be, true};
        if (x->diving || x->ds->threshold > 0)
            qsort(lv->kids, lv->n, sizeof *lv->kids, okey_cmp);
    }
    uint32_t be = lv->dev, vd = x->nst[be];
    if (counts) {
        x->ulo -= x->lo[be];
        x->uhi -= x->hi[be];
    } else {
        x->placed[be] = true;
    }
    for (size_t k = lv->k; k < lv->n && !x->stop; k++) {
        bool into = resume && k == lv->k;
        lv->k = k;
        if (x->diving && ds->nodes >= x->dive_until) {
            x->stop = true;
            break;
        }
        if (test_slice && !into && ds->nodes >= test_slice) {
            /* test hook: stop between two children (each pass then ends
             * at least one subtree or lists one more depth's children) */
            x->stop = true;
            break;
        }
        if (lv->kids[k].key >= cut_of(ds))
            continue; /* cut by a better incumbent found since */
        uint32_t o = lv->kids[k].idx;
        x->chosen[be] = o;
        if (counts) {
            x->group[be] = o;
            set_device(x, be, x->gmin[be] + (size_t)o * vd, x->gx[be] + (vd + 2) * (size_t)o);
            set_unplaced(x, left - x->opt_total[be][o], x->uhi, UINT32_MAX);
            dfs(x, depth + 1, left - x->opt_total[be][o], into);
            x->group[be] = UINT32_MAX;
            set_device(x, be, NULL, NULL); /* its ext: set_unplaced() below */
        } else {
            set_device(x, be, x->opt[be] + (size_t)o * vd, NULL);
            dfs(x, depth + 1, left, into);
            set_device(x, be, x->gmin[be] + (size_t)x->group[be] * vd,
                       x->gx[be] + (vd + 2) * (size_t)x->group[be]);
        }
    }
    if (counts) {
        x->ulo += x->lo[be];
        x->uhi += x->hi[be];
        set_unplaced(x, left, x->uhi, UINT32_MAX);
    } else {
        x->placed[be] = false;
    }
    if (!x->stop)
        lv->valid = false; /* searched to the end */
}

static void free_ctx(dsctx *x)
{
    psched__dealloc(x->pd);
    psched__dealloc(x->px);
    psched__dealloc(x->lat);
    psched__dealloc(x->i1);
    psched__dealloc(x->i2);
    psched__dealloc(x->end);
    psched__dealloc(x->dev);
    psched__dealloc(x->xat);
    psched__dealloc(x->qv);
    psched__dealloc(x->qt);
    psched__dealloc(x->lastop);
    psched__dealloc(x->ext);
    psched__dealloc(x->xoff);
    psched__dealloc(x->first);
    psched__dealloc(x->low);
    psched__dealloc(x->share);
    psched__dealloc(x->start);
    psched__dealloc(x->brank);
    psched__dealloc(x->chain);
    psched__dealloc(x->bump);
    psched__dealloc(x->bumpin);
    psched__dealloc(x->ustage);
    for (uint32_t e = 0; x->ux && e < x->D; e++)
        psched__dealloc(x->ux[e]);
    psched__dealloc(x->ux);
    psched__dealloc(x->units);
    psched__dealloc(x->rem);
    psched__dealloc(x->pdev);
    psched__dealloc(x->pjat);
    psched__dealloc(x->pst);
    psched__dealloc(x->poff);
    psched__dealloc(x->lo);
    psched__dealloc(x->hi);
    psched__dealloc(x->cost);
    psched__dealloc(x->minc);
    psched__dealloc(x->cfgs);
    psched__dealloc(x->cmin);
    psched__dealloc(x->cmax);
    for (uint32_t s = 0; x->cfg_at && s < x->S; s++)
        psched__dealloc(x->cfg_at[s]);
    psched__dealloc(x->cfg_at);
    for (uint32_t e = 0; e < x->D; e++) {
        if (x->stages_of)
            psched__dealloc(x->stages_of[e]);
        if (x->opt)
            psched__dealloc(x->opt[e]);
        if (x->opt_total)
            psched__dealloc(x->opt_total[e]);
        if (x->opt_work)
            psched__dealloc(x->opt_work[e]);
    }
    psched__dealloc(x->stages_of);
    psched__dealloc(x->opt);
    psched__dealloc(x->opt_total);
    psched__dealloc(x->opt_work);
    psched__dealloc(x->nopt);
    psched__dealloc(x->opt_cap);
    psched__dealloc(x->dev_order);
    psched__dealloc(x->nst);
    psched__dealloc(x->end_work);
    psched__dealloc(x->chosen);
    for (uint32_t i = 0; x->kids && i < 2 * x->D; i++)
        psched__dealloc(x->kids[i]);
    psched__dealloc(x->kids);
    psched__dealloc(x->spare);
    psched__dealloc(x->placed);
    psched__dealloc(x->group);
    psched__dealloc(x->lvl);
    for (uint32_t e = 0; x->gend && e < x->D; e++) {
        psched__dealloc(x->gend[e]);
        psched__dealloc(x->gmin[e]);
        if (x->gx)
            psched__dealloc(x->gx[e]);
    }
    psched__dealloc(x->gx);
    psched__dealloc(x->gend);
    psched__dealloc(x->gmin);
    psched__solution_free(&x->sol);
}

/* A device's options, closest to the incumbent's counts first (the
 * faster partitions tend to be near it), then by work: the order the
 * search tries them in. */
typedef struct gkey {
    double key, work;
    uint32_t group, idx;
} gkey;

static int gkey_cmp(const void *a, const void *b)
{
    const gkey *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->work != y->work)
        return x->work < y->work ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static bool same_counts(const dsctx *x, const uint32_t *a, const uint32_t *b, size_t vd)
{
    for (size_t j = 0; j < vd; j++)
        if (x->cfgs[a[j]].count != x->cfgs[b[j]].count)
            return false;
    return true;
}

static psched_status sort_options(dsctx *x, uint32_t e)
{
    size_t n = x->nopt[e], vd = x->nst[e];
    const psched__solution *bs = x->ds->best_sol;
    gkey *k = psched__calloc(n + 1, sizeof *k);
    uint32_t *o = psched__calloc(n * vd + 1, sizeof *o);
    uint32_t *t = psched__calloc(n + 1, sizeof *t);
    double *w = psched__calloc(n + 1, sizeof *w);
    x->gend[e] = psched__calloc(n + 1, sizeof(uint32_t));
    x->gmin[e] = psched__calloc(n * vd + 1, sizeof(uint32_t));
    if (!k || !o || !t || !w || !x->gend[e] || !x->gmin[e]) {
        psched__dealloc(k);
        psched__dealloc(o);
        psched__dealloc(t);
        psched__dealloc(w);
        return PSCHED_ENOMEM_FAIL();
    }
    double wmax = 0;
    for (size_t i = 0; i < n; i++)
        wmax = fmax(wmax, x->opt_work[e][i]);
    /* options with the same counts are made one after the other: one
     * group each, keyed by its distance and its least work */
    for (size_t i = 0, g = 0; i < n; i = g) {
        double dist = 0, least = INFINITY;
        for (size_t j = 0; j < vd; j++) {
            uint32_t s = x->stages_of[e][j];
            const cfg *c = &x->cfgs[x->opt[e][i * vd + j]];
            double have = (double)bs->count[s];
            double want = (double)c->count + (s == 0 && x->ds->run->head) +
                          (s == x->S - 1 && x->ds->run->tail);
            dist += fabs(have - want);
        }
        for (g = i; g < n && same_counts(x, x->opt[e] + i * vd, x->opt[e] + g * vd, vd); g++)
            least = fmin(least, x->opt_work[e][g]);
        for (size_t q = i; q < g; q++) {
            k[q].key = dist + (wmax > 0 ? 0.5 * least / wmax : 0);
            k[q].group = (uint32_t)i;
            k[q].work = x->opt_work[e][q];
            k[q].idx = (uint32_t)q;
        }
    }
    qsort(k, n, sizeof *k, gkey_cmp);
    for (size_t i = 0, g; i < n; i = g) {
        for (g = i; g < n && k[g].group == k[i].group; g++)
            ;
        for (size_t q = i; q < g; q++)
            x->gend[e][q] = (uint32_t)g;
        for (size_t j = 0; j < vd; j++) {
            uint32_t least = UINT32_MAX;
            for (size_t q = i; q < g; q++) {
                uint32_t ci = x->opt[e][(size_t)k[q].idx * vd + j];
                least = ci < least ? ci : least; /* a stage's configurations by rising time */
            }
            x->gmin[e][i * vd + j] = least;
        }
    }
    for (size_t i = 0; i < n; i++) {
        memcpy(o + i * vd, x->opt[e] + (size_t)k[i].idx * vd, vd * sizeof *o);
        t[i] = x->opt_total[e][k[i].idx];
        w[i] = x->opt_work[e][k[i].idx];
    }
    psched__dealloc(k);
    psched__dealloc(x->opt[e]);
    psched__dealloc(x->opt_total[e]);
    psched__dealloc(x->opt_work[e]);
    x->opt[e] = o;
    x->opt_total[e] = t;
    x->opt_work[e] = w;
    return PSCHED_OK;
}

/* Narrows each device's range of run layers to the counts some option
 * can hold within the best step time (its own work after its start and
 * before its tail, recompute included: under a binding memory limit more
 * layers force more of it), then to what the others' ranges leave, to a
 * fixed point, and drops the options outside it or over it alone. False
 * when some device is left no count: no partition is faster than the
 * best. */
static bool narrow(dsctx *x)
{
    psched__devsearch *ds = x->ds;
    double cut = cut_of(ds);
    uint32_t D = x->D, count = ds->run->count;
    for (uint32_t e = 0; e < D; e++) {
        uint32_t lo = UINT32_MAX, hi = 0;
        for (size_t o = 0; o < x->nopt[e]; o++) {
            if (ds->base[e] + x->m * (x->opt_work[e][o] - x->end_work[e]) >= cut)
                continue;
            uint32_t n = x->opt_total[e][o];
            lo = n < lo ? n : lo;
            hi = n > hi ? n : hi;
        }
        if (lo > hi)
            return false;
        x->lo[e] = lo;
        x->hi[e] = hi;
    }
    for (bool changed = true; changed;) {
        changed = false;
        uint64_t sum_lo = 0, sum_hi = 0;
        for (uint32_t e = 0; e < D; e++) {
            sum_lo += x->lo[e];
            sum_hi += x->hi[e];
        }
        if (sum_lo > count || sum_hi < count)
            return false;
        for (uint32_t e = 0; e < D; e++) {
            uint64_t others_hi = sum_hi - x->hi[e], others_lo = sum_lo - x->lo[e];
            uint32_t lo = count > others_hi ? (uint32_t)(count - others_hi) : 0;
            uint32_t hi = (uint32_t)(count - others_lo);
            if (lo > x->lo[e] || hi < x->hi[e]) {
                changed = true;
                sum_lo += lo > x->lo[e] ? lo - x->lo[e] : 0;
                sum_hi -= hi < x->hi[e] ? x->hi[e] - hi : 0;
                x->lo[e] = lo > x->lo[e] ? lo : x->lo[e];
                x->hi[e] = hi < x->hi[e] ? hi : x->hi[e];
                if (x->lo[e] > x->hi[e])
                    return false;
            }
        }
    }
    for (uint32_t e = 0; e < D; e++) {
        size_t vd = x->nst[e], k = 0;
        for (size_t o = 0; o < x->nopt[e]; o++) {
            uint32_t n = x->opt_total[e][o];
            if (n < x->lo[e] || n > x->hi[e] ||
                ds->base[e] + x->m * (x->opt_work[e][o] - x->end_work[e]) >= cut)
                continue;
            memmove(x->opt[e] + k * vd, x->opt[e] + o * vd, vd * sizeof(uint32_t));
            x->opt_total[e][k] = n;
            x->opt_work[e][k] = x->opt_work[e][o];
            k++;
        }
        x->nopt[e] = k;
    }
    return true;
}

/* ---- the polish ---- */

/* The polish's state: per stage its configuration (x->pcfg while it
 * runs), per device the options of its present counts, and a move's two
 * groups. The groups are made on demand (make_group()), so the polish
 * also runs where the devices' options pass DEVSEARCH_OPTIONS_MAX and the
 * search does not start. */
typedef struct polisher {
    dsctx *x;
    uint32_t *cfg;
    glist *cur;
    glist a, b;
    okey *keys;    /* make_group()'s sort: its options by work, */
    uint32_t *tmp; /* and their configurations in that order */
    size_t scratch;
} polisher;

static void glist_free(glist *l)
{
    psched__dealloc(l->opt);
    psched__dealloc(l->work);
}

/* Device e's options with counts[] (per stage of e) into out, by rising
 * work, ties in the order made (the table's order within a group,
 * sort_options()): false when a count is outside its stage's range, none
 * fits, or they pass POLISH_GROUP_MAX. */
static bool make_group(polisher *q, uint32_t e, const uint32_t *counts, glist *out)
{
    dsctx *x = q->x;
    optgen g;
    memset(&g, 0, sizeof g);
    g.x = x;
    g.e = e;
    g.vd = x->nst[e];
    g.out = out;
    out->n = 0;
    for (uint32_t j = 0; j < g.vd; j++) {
        uint32_t s = x->stages_of[e][j];
        if (counts[j] < x->cmin[s] || counts[j] > x->cmax[s])
            return false;
        g.counts[j] = counts[j];
        g.total += counts[j];
    }
    if (!memory_floor(&g))
        return false;
    psched_status st = antichain(&g, 0, 0);
    size_t n = out->n, vd = g.vd;
    if (!st && n > q->scratch) {
        okey *k = psched__reallocarray(q->keys, n, sizeof *k);
        if (k)
            q->keys = k;
        uint32_t *t = k ? psched__reallocarray(q->tmp, n * vd, sizeof *t) : NULL;
        if (t) {
            q->tmp = t;
            q->scratch = n;
        } else {
            st = PSCHED_ENOMEM_FAIL();
        }
    }
    if (st && !x->st) {
        x->st = st;
        x->stop = true;
    }
    if (st || g.over || !n)
        return false;
    for (size_t i = 0; i < n; i++)
        q->keys[i] = (okey){out->work[i], (uint32_t)i};
    qsort(q->keys, n, sizeof *q->keys, okey_cmp);
    for (size_t i = 0; i < n; i++) {
        memcpy(q->tmp + i * vd, out->opt + (size_t)q->keys[i].idx * vd, vd * sizeof *q->tmp);
        out->work[i] = q->keys[i].key;
    }
    memcpy(out->opt, q->tmp, n * vd * sizeof *q->tmp);
    return true;
}

/* Device e's present configurations (per stage of e) into v. */
static void present(const polisher *q, uint32_t e, uint32_t *v)
{
    for (uint32_t j = 0; j < q->x->nst[e]; j++)
        v[j] = q->cfg[q->x->stages_of[e][j]];
}

/* Device e at configurations v, kept as its present ones. */
static void put(polisher *q, uint32_t e, const uint32_t *v)
{
    for (uint32_t j = 0; j < q->x->nst[e]; j++)
        q->cfg[q->x->stages_of[e][j]] = v[j];
    set_device(q->x, e, v, NULL);
}

/* The index of l's option with the least work. */
static size_t least_work(const glist *l)
{
    size_t pick = 0;
    for (size_t o = 1; o < l->n; o++)
        if (l->work[o] < l->work[pick])
            pick = o;
    return pick;
}

/* The polish's step: device e at configurations v (work: their work), the
 * others as they are; kept (leaf(): the simulator confirms it) when the
 * step time falls, else e back at its present ones. True when kept. */
static bool polish_try(polisher *q, uint32_t e, const uint32_t *v, double work)
{
    dsctx *x = q->x;
    psched__devsearch *ds = x->ds;
    double cut = cut_of(ds);
    bool kept = false;
    /* its own work alone (scan()'s first test) */
    if (ds->base[e] + x->m * (work - x->end_work[e]) < cut) {
        uint32_t was[64];
        present(q, e, was);
        set_device(x, e, v, NULL);
        double mk = evaluate(x, cut);
        if (mk < cut) {
            put(q, e, v);
            leaf(x, mk);
            kept = ds->best < cut;
            test_polish_gains += kept;
            if (!kept)
                put(q, e, was); /* the simulator disagreed: no claim follows */
        } else {
            set_device(x, e, was, NULL);
        }
    }
    if (x->ops > ds->ops_budget || psched__now() > ds->until)
        x->stop = true;
    return kept;
}

/* Device a at each option of la with device b (another, or a itself) at
 * lb's least work: true at the first kept. */
static bool polish_pair(polisher *q, uint32_t a, const glist *la, uint32_t b, const glist *lb)
{
    dsctx *x = q->x;
    if (b != a)
        put(q, b, lb->opt + least_work(lb) * x->nst[b]);
    for (size_t o = 0; o < la->n && !x->stop; o++)
        if (polish_try(q, a, la->opt + o * x->nst[a], la->work[o]))
            return true;
    return false;
}

static void glist_swap(glist *a, glist *b)
{
    glist t = *a;
    *a = *b;
    *b = t;
}

/* The polish's second move: one run layer from stage j of device e to
 * stage k of device f (the same device or another), each device at its
 * new counts' options: first e at each of its with f at its least work,
 * then f at each of its with e at its least work (both at once would be
 * the product of the groups). True at the first that is faster, kept
 * (q->cur its groups). */
static bool polish_counts(polisher *q)
{
    dsctx *x = q->x;
    uint32_t ce[64], cf[64], we[64], wf[64];
    for (uint32_t e = 0; e < x->D && !x->stop; e++) {
        uint32_t ve = x->nst[e];
        for (uint32_t j = 0; j < ve && !x->stop; j++) {
            for (uint32_t f = 0; f < x->D && !x->stop; f++) {
                uint32_t vf = x->nst[f];
                for (uint32_t k = 0; k < vf && !x->stop; k++) {
                    if (f == e && k == j)
                        continue;
                    if (psched__now() > x->ds->until) {
                        x->stop = true; /* a move's groups may take long to make */
                        break;
                    }
                    present(q, e, we);
                    present(q, f, wf);
                    for (uint32_t i = 0; i < ve; i++)
                        ce[i] = x->cfgs[we[i]].count;
                    for (uint32_t i = 0; i < vf; i++)
                        cf[i] = x->cfgs[wf[i]].count;
                    if (!ce[j])
                        continue;
                    ce[j]--;
                    if (f == e)
                        ce[k]++;
                    else
                        cf[k]++;
                    if (!make_group(q, e, ce, &q->a) || (f != e && !make_group(q, f, cf, &q->b)))
                        continue;
                    if (polish_pair(q, e, &q->a, f, &q->b) ||
                        (f != e && polish_pair(q, f, &q->b, e, &q->a))) {
                        glist_swap(&q->cur[e], &q->a);
                        if (f != e)
                            glist_swap(&q->cur[f], &q->b);
                        return true;
                    }
                    put(q, e, we);
                    put(q, f, wf);
                }
            }
        }
    }
    return false;
}

/* Before the search, a descent over whole devices' recompute assignments
 * (the polish): each device holds the incumbent's counts at the first
 * option of their group that is no slower on any stage (the options are
 * the minimal assignments that fit, so one is), then, device by device,
 * each other option of that group with every other device as it is, kept
 * when the order's step time falls (leaf(): the simulator confirms it);
 * when a sweep gains nothing, single layer moves (polish_counts()), and
 * the sweeps again, until neither gains. One layer's kind or an exchange
 * of two (the local search's moves) cannot reach an assignment where a
 * device recomputes more on one chunk to run another without recompute,
 * nor move a layer to another device with both devices' recompute chosen
 * again: looped-bfs at v = 4 on the grid's L = 80 went from 1266.6 to the
 * optimum, 1256.6, at p = 16 (the search otherwise found it after 224 000
 * nodes) and from 1160.6 to the optimum, 1138.6, at p = 8 (7 million
 * nodes did not find it). Its groups are made on demand, so it also runs
 * where the options pass DEVSEARCH_OPTIONS_MAX (then alone: L = 80,
 * p = 4 interleaved, 1149.1 -> 1114.15). It stops at the pass's time or
 * after the search's op budget of evaluated ops (its own; the search's
 * count starts after it), and its evaluations are not nodes. Uncapped
 * beyond that: a share of the pass (a quarter) left L = 128, p = 16
 * interleaved slower (1879.1 against 1877.35) and its gap larger. */
static void polish(dsctx *x)
{
    psched__devsearch *ds = x->ds;
    const psched__solution *bs = ds->best_sol;
    const psched__run *run = ds->run;
    uint32_t D = x->D, S = x->S;
    if (!bs || !bs->found || test_no_polish)
        return;
    polisher q;
    memset(&q, 0, sizeof q);
    q.x = x;
    q.cfg = psched__calloc(S, sizeof(uint32_t));
    q.cur = psched__calloc(D, sizeof(glist));
    double *xv = psched__calloc(3 * (size_t)S + D, sizeof(double));
    bool all = q.cfg && q.cur && xv;
    if (all)
        psched__paths_vector(x->pb, bs, xv);
    x->pcfg = q.cfg;
    for (uint32_t e = 0; e < D && all; e++) {
        uint32_t vd = x->nst[e], want[64];
        for (uint32_t j = 0; j < vd; j++) {
            uint32_t s = x->stages_of[e][j];
            want[j] = bs->count[s] - (s == 0 && run->head) - (s == S - 1 && run->tail);
        }
        all = make_group(&q, e, want, &q.cur[e]);
        size_t pick = SIZE_MAX;
        for (size_t o = 0; all && o < q.cur[e].n && pick == SIZE_MAX; o++) {
            bool faster = true;
            for (uint32_t j = 0; j < vd && faster; j++)
                faster = x->cfgs[q.cur[e].opt[o * vd + j]].b <=
                         xv[3 * (size_t)x->stages_of[e][j] + 1];
            if (faster)
                pick = o;
        }
        all = all && pick != SIZE_MAX;
        if (all)
            put(&q, e, q.cur[e].opt + pick * vd);
    }
    if (all) {
        double cut = cut_of(ds), mk = evaluate(x, cut);
        if (mk < cut) {
            leaf(x, mk);
            test_polish_gains += ds->best < cut;
        }
    }
    for (bool gained = all; gained && !x->stop;) {
        gained = false;
        for (uint32_t e = 0; e < D && !x->stop; e++) {
            uint32_t vd = x->nst[e], now[64];
            for (size_t o = 0; o < q.cur[e].n && !x->stop; o++) {
                present(&q, e, now);
                if (memcmp(now, q.cur[e].opt + o * vd, vd * sizeof *now) != 0)
                    gained = polish_try(&q, e, q.cur[e].opt + o * vd, q.cur[e].work[o]) || gained;
            }
        }
        if (!gained && !x->stop)
            gained = polish_counts(&q);
    }
    test_polish_ran = all && !x->stop && x->S <= TEST_POLISH_STAGES &&
                      x->pb->layers <= TEST_POLISH_LAYERS;
    if (test_polish_ran) {
        write_solution(x);
        memcpy(test_polish_count, x->sol.count, x->S * sizeof *test_polish_count);
        memcpy(test_polish_choice, x->sol.choice, x->pb->layers * sizeof *test_polish_choice);
        test_polish_time = ds->best;
    }
    x->pcfg = NULL;
    for (uint32_t e = 0; q.cur && e < D; e++)
        glist_free(&q.cur[e]);
    glist_free(&q.a);
    glist_free(&q.b);
    psched__dealloc(q.keys);
    psched__dealloc(q.tmp);
    psched__dealloc(q.cur);
    psched__dealloc(q.cfg);
    psched__dealloc(xv);
}

/* A lower bound of every partition the stopped search has not ruled out:
 * the least bound of the subtrees it has not searched yet (at each listed
 * depth the children after the one it stopped in, and at the deepest that
 * child too), or 0 when it stopped before listing the first depth. */
static double open_bound(const dsctx *x)
{
    if (!x->lvl[0].valid)
        return 0;
    double lb = INFINITY;
    for (uint32_t d = 0; d < 2 * x->D && x->lvl[d].valid; d++) {
        const level *lv = &x->lvl[d];
        for (size_t k = lv->k + 1; k < lv->n; k++)
            lb = fmin(lb, lv->kids[k].key);
        if (d + 1 == 2 * x->D || !x->lvl[d + 1].valid)
            lb = fmin(lb, lv->kids[lv->k].key);
    }
    return lb;
}

/* The search itself, from the start (x->lvl invalid) or from where it
 * stopped; keeps the context in ds->state when it stops early, frees it
 * otherwise. */
static psched_status search(dsctx *x)
{
    psched__devsearch *ds = x->ds;
    bool resume = x->lvl[0].valid, searched = false;
    x->stop = false;
    x->ops = 0;
    ds->dove = false;
    /* (a bound pass has no dive: dfs() takes its children by rising bound) */
    if (!resume && !x->dived && ds->threshold <= 0) {
        /* the dive: children by rising bound, DEVSEARCH_DIVE_NODES nodes */
        double before = ds->best;
        x->dived = x->diving = true;
        x->dive_until = ds->nodes + (test_dive ? test_dive : DEVSEARCH_DIVE_NODES);
        dfs(x, 0, ds->run->count, false);
        x->diving = false;
        bool limits = x->st || x->mismatch || x->ops > ds->ops_budget ||
                      psched__now() > ds->until || (test_stop && ds->nodes >= test_stop) ||
                      (test_slice && ds->nodes >= test_slice);
        if (!x->stop) {
            searched = true; /* the dive went through the whole tree */
        } else if (!limits) {
            /* the dive's node count ended it: the search starts over from
             * the root, in the next pass when the dive found a faster
             * partition (the caller's local search starts from it) */
            for (uint32_t d = 0; d < 2 * x->D; d++)
                x->lvl[d].valid = false;
            x->stop = ds->dove = ds->best < before;
            test_dives += ds->dove;
        }
        /* else stopped inside the dive: its lists are complete (in another
         * order) and the next pass resumes them */
    }
    if (!x->stop && !searched)
        dfs(x, 0, ds->run->count, resume); /* narrow() left the count within [ulo, uhi] */
    psched_status st = x->st;
    double cut = cut_of(ds);
    ds->below = !st && !x->stop && !x->mismatch;
    ds->complete = ds->below && proves_best(ds);
    ds->bound = st || x->mismatch ? 0 : ds->below ? cut : fmin(cut, open_bound(x));
    test_bound = ds->bound;
    test_proofs += ds->complete;
    if (!st && x->stop && !x->mismatch && ds->threshold <= 0) {
        /* (a bound pass keeps nothing: its lists were cut at its threshold) */
        dsctx *keep = psched__calloc(1, sizeof *keep);
        if (keep) {
            *keep = *x;
            ds->state = keep;
            return PSCHED_OK;
        }
    }
    free_ctx(x);
    return st;
}

void psched__devsearch_free(void **state)
{
    if (*state) {
        free_ctx(*state);
        psched__dealloc(*state);
        *state = NULL;
    }
}

static psched_status run_pass(psched__devsearch *ds)
{
    ds->complete = ds->below = false;
    ds->nodes = ds->options = 0;
    ds->bound = 0;
    /* a bound pass starts from the root and leaves the state it was given
     * (the search for the best's) as it is */
    dsctx *old = ds->threshold > 0 ? NULL : ds->state;
    if (old) {
        /* go on from where the search stopped: its options, their order
         * and the ranges were built for the incumbent it started from, a
         * superset of what a faster one allows, and every cut reads the
         * best as it is now (Gemma2-9B interleaved-zb at v = 4 and 60 GB
         * in the planner at 5 s per candidate: the first pass finds
         * 2827.21 from 3105.44 and stops; resumed, the second proves it,
         * started again it did not finish) */
        ds->state = NULL;
        old->ds = ds;
        test_resumes++;
        ds->options = old->total_opts;
        psched_status st = search(old);
        if (ds->state != old)
            psched__dealloc(old);
        return st;
    }
    test_polish_ran = false; /* a new pass from the root: its polish, if any */
    dsctx x;
    memset(&x, 0, sizeof x);
    const psched__problem *pb = ds->pb;
    const psched__run *run = ds->run;
    x.ds = ds;
    x.pb = pb;
    x.S = pb->stages;
    x.D = pb->devices;
    x.SP = pb->plan_stages;
    x.P = pb->plan_devices;
    x.m = pb->microbatches * pb->wmin;
    uint32_t S = x.S, D = x.D;
    x.cost = psched__calloc(3 * (size_t)x.SP + 1, sizeof(double));
    x.minc = psched__calloc(3 * (size_t)S + 1, sizeof(double));
    x.cmin = psched__calloc(S, sizeof(uint32_t));
    x.cmax = psched__calloc(S, sizeof(uint32_t));
    x.cfg_at = psched__calloc(S, sizeof(size_t *));
    x.stages_of = psched__calloc(D, sizeof(uint32_t *));
    x.opt = psched__calloc(D, sizeof(uint32_t *));
    x.opt_total = psched__calloc(D, sizeof(uint32_t *));
    x.opt_work = psched__calloc(D, sizeof(double *));
    x.nopt = psched__calloc(D, sizeof(size_t));
    x.opt_cap = psched__calloc(D, sizeof(size_t));
    x.dev_order = psched__calloc(D, sizeof(uint32_t));
    x.nst = psched__calloc(D, sizeof(uint32_t));
    x.chosen = psched__calloc(D, sizeof(uint32_t));
    x.end_work = psched__calloc(D, sizeof(double));
    x.lo = psched__calloc(D, sizeof(uint32_t));
    x.hi = psched__calloc(D, sizeof(uint32_t));
    psched_status st = PSCHED_OK;
    if (!x.cost || !x.minc || !x.cmin || !x.cmax || !x.cfg_at || !x.stages_of || !x.opt ||
        !x.opt_total || !x.opt_work || !x.nopt || !x.opt_cap || !x.dev_order || !x.nst ||
        !x.chosen || !x.end_work || !x.lo || !x.hi)
        st = PSCHED_ENOMEM_FAIL();
    if (!st)
        st = psched__solution_init(&x.sol, S, pb->layers);
    for (uint32_t s = 0; !st && s < S; s++)
        x.nst[pb->device_of[s]]++;
    for (uint32_t e = 0; !st && e < D; e++) {
        x.stages_of[e] = psched__calloc(x.nst[e] + 1, sizeof(uint32_t));
        if (!x.stages_of[e] || x.nst[e] > 64)
            st = x.stages_of[e] ? PSCHED_EINVAL : PSCHED_ENOMEM_FAIL();
        x.nst[e] = 0;
    }
    for (uint32_t s = 0; !st && s < S; s++) {
        uint32_t e = pb->device_of[s];
        x.stages_of[e][x.nst[e]++] = s;
    }
    if (!st)
        st = build_dag(&x);
    if (st == PSCHED_EINVAL) {
        /* not an order this search understands: nothing proven */
        free_ctx(&x);
        return PSCHED_OK;
    }
    /* per stage: the fewest and most run layers, its configurations */
    for (uint32_t e = 0; !st && e < D; e++) {
        uint32_t need = 0;
        for (uint32_t j = 0; j < x.nst[e]; j++) {
            uint32_t s = x.stages_of[e][j];
            x.cmin[s] = (s == 0 && run->head) || (s == S - 1 && run->tail) ? 0 : 1;
            need += x.cmin[s];
        }
        if (ds->hi[e] < need || ds->lo[e] > ds->hi[e]) {
            /* the count bound leaves the device nothing: no partition is faster */
            ds->complete = ds->below = true;
            test_proofs++;
            free_ctx(&x);
            return PSCHED_OK;
        }
        for (uint32_t j = 0; j < x.nst[e]; j++) {
            uint32_t s = x.stages_of[e][j];
            x.cmax[s] = ds->hi[e] - (need - x.cmin[s]);
        }
    }
    if (!st && run->head)
        x.end_work[pb->device_of[0]] += psched__range_time(pb, 0, 1);
    if (!st && run->tail)
        x.end_work[pb->device_of[S - 1]] += psched__range_time(pb, pb->layers - 1, 1);
    for (uint32_t s = 0; !st && s < S; s++) {
        uint32_t span = x.cmax[s] - x.cmin[s] + 1;
        x.cfg_at[s] = psched__calloc((size_t)span + 1, sizeof(size_t));
        if (!x.cfg_at[s]) {
            st = PSCHED_ENOMEM_FAIL();
            break;
        }
        for (uint32_t c = x.cmin[s]; !st && c <= x.cmax[s]; c++) {
            x.cfg_at[s][c - x.cmin[s]] = x.ncfg;
            st = stage_cfgs(&x, s, c);
            if (x.ncfg > 4 * DEVSEARCH_OPTIONS_MAX)
                x.stop = true;
            if (x.stop)
                break;
        }
        if (st || x.stop)
            break;
        x.cfg_at[s][span] = x.ncfg;
        if (x.cfg_at[s][1] == x.cfg_at[s][0]) {
            x.stop = true; /* no configuration (no variant present) */
            break;
        }
        /* the least each cost can be: the fewest layers, the fastest variant */
        const cfg *c0 = &x.cfgs[x.cfg_at[s][0]];
        x.minc[3 * s] = c0->f;
        x.minc[3 * s + 1] = c0->b;
        x.minc[3 * s + 2] = c0->w;
    }
    /* a run layer's least f, b and w (the chain bound's per layer; a run
     * without variants stopped the search in stage_cfgs()) */
    if (!st && !x.stop) {
        const psched__group *rg = psched__layer_group(pb, run->first);
        double extra = INFINITY;
        for (uint8_t v = 0; v < PSCHED__RECOMPUTE_KINDS; v++)
            if (rg->variant[v].present)
                extra = fmin(extra, rg->variant[v].extra);
        x.layer_f = rg->f;
        x.layer_b = rg->b + extra;
        x.layer_w = rg->w;
    }
    /* options, device by device */
    for (uint32_t e = 0; !st && !x.stop && e < D; e++) {
        optgen g;
        memset(&g, 0, sizeof g);
        g.x = &x;
        g.e = e;
        g.vd = x.nst[e];
        for (uint32_t n = ds->lo[e]; !st && !x.stop && n <= ds->hi[e]; n++) {
            g.total = n;
            st = compositions(&g, 0, n);
        }
    }
    ds->options = x.total_opts;
    /* stopped at the cap (not in the configurations: they are all listed) */
    bool capped = x.stop && x.total_opts >= options_max();
    if (!st && capped && ds->threshold <= 0) {
        /* too many options for the search; the polish makes its groups
         * itself */
        x.stop = false;
        polish(&x);
        st = x.st;
    }
    if (st || x.stop || capped) {
        free_ctx(&x);
        return st;
    }
    if (!narrow(&x)) {
        /* no device can hold a count within the best (in a bound pass, the
         * threshold): none is faster */
        ds->below = true;
        ds->complete = proves_best(ds);
        ds->bound = ds->complete ? 0 : cut_of(ds);
        test_proofs += ds->complete;
        free_ctx(&x);
        return PSCHED_OK;
    }
    /* the scan order: least slack under the layer count bound first (its
     * start, tail and fewest layers closest to the best step time), ties to
     * the later device */
    {
        /* the incumbent's per-stage f, b (with recompute) and w */
        double *xv = psched__calloc(3 * (size_t)S + D, sizeof(double));
        if (!xv) {
            free_ctx(&x);
            return PSCHED_ENOMEM_FAIL();
        }
        psched__paths_vector(pb, ds->best_sol, xv);
        for (uint32_t t = 0; t < x.SP; t++) /* each range's plan stages */
            memcpy(x.cost + 3 * (size_t)t, xv + 3 * (size_t)(t % S), 3 * sizeof(double));
        psched__dealloc(xv);
        x.cost[3 * (size_t)x.SP] = 0;
        double mine = evaluate(&x, INFINITY);
        /* the DAG must be the simulator's: the incumbent's step time */
        if (!(fabs(mine - ds->best) <= 1e-9 * fmax(1, ds->best))) {
            free_ctx(&x);
            return PSCHED_OK;
        }
        double t = psched__range_time(pb, run->first, 1);
        for (uint32_t e = 0; e < D; e++)
            x.dev_order[e] = e;
        for (uint32_t a = 1; a < D; a++) {
            uint32_t v = x.dev_order[a], q = a;
            double kv = ds->base[v] + x.m * t * x.lo[v];
            while (q > 0) {
                uint32_t u = x.dev_order[q - 1];
                double ku = ds->base[u] + x.m * t * x.lo[u];
                if (ku > kv || (ku == kv && u > v))
                    break;
                x.dev_order[q] = u;
                q--;
            }
            x.dev_order[q] = v;
        }
    }
    x.gend = psched__calloc(D, sizeof(uint32_t *));
    x.gmin = psched__calloc(D, sizeof(uint32_t *));
    if (!x.gend || !x.gmin)
        st = PSCHED_ENOMEM_FAIL();
    x.ux = st ? NULL : psched__calloc(D, sizeof(double *));
    x.gx = st ? NULL : psched__calloc(D, sizeof(double *));
    if (!st && (!x.ux || !x.gx))
        st = PSCHED_ENOMEM_FAIL();
    for (uint32_t e = 0; !st && e < D; e++)
        st = sort_options(&x, e);
    for (uint32_t e = 0; !st && e < D; e++)
        st = device_extras(&x, e);
    x.kids = st ? NULL : psched__calloc(2 * (size_t)D, sizeof(okey *));
    if (!st && !x.kids)
        st = PSCHED_ENOMEM_FAIL();
    size_t maxopt = 0;
    for (uint32_t e = 0; e < D; e++)
        maxopt = x.nopt[e] > maxopt ? x.nopt[e] : maxopt;
    if (!st && (2 * (double)D + 1) * (double)(maxopt + 1) * sizeof(okey) >
                   (double)DEVSEARCH_LISTS_MAX) {
        free_ctx(&x); /* one device with most of the options and many devices */
        return PSCHED_OK;
    }
    x.spare = st ? NULL : psched__calloc(maxopt + 1, sizeof(okey));
    x.placed = st ? NULL : psched__calloc(D, sizeof(bool));
    x.group = st ? NULL : psched__calloc(D, sizeof(uint32_t));
    if (!st && (!x.spare || !x.placed || !x.group))
        st = PSCHED_ENOMEM_FAIL();
    for (uint32_t e = 0; !st && e < D; e++)
        x.group[e] = UINT32_MAX;
    for (uint32_t i = 0; !st && i < 2 * D; i++) {
        x.kids[i] = psched__calloc(maxopt + 1, sizeof(okey));
        if (!x.kids[i])
            st = PSCHED_ENOMEM_FAIL();
    }
    x.lvl = st ? NULL : psched__calloc(2 * (size_t)D, sizeof(level));
    if (!st && !x.lvl)
        st = PSCHED_ENOMEM_FAIL();
    if (st) {
        free_ctx(&x);
        return st;
    }
    if (ds->threshold <= 0)
        polish(&x); /* (a bound pass leaves the incumbent to the others) */
    if (x.st || x.mismatch) {
        st = x.st;
        free_ctx(&x);
        return st;
    }
    for (uint32_t e = 0; e < D; e++) {
        set_device(&x, e, NULL, NULL); /* every stage at its least cost */
        x.ulo += x.lo[e];
        x.uhi += x.hi[e];
    }
    set_unplaced(&x, run->count, x.uhi, UINT32_MAX);
    return search(&x);
}

psched_status psched__devsearch_run(psched__devsearch *ds)
{
    psched_status st = run_pass(ds);
    /* test hook: passes of test_slice nodes, each resuming the last */
    for (size_t k = 0; test_slice && ds->threshold <= 0 && !st && !ds->complete && ds->state &&
                       k < 100000;
         k++)
        st = run_pass(ds);
    return st;
}
