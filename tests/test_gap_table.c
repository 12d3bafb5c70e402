/* The gap table of docs/schedules.md ("Gap table") against the library.
 *
 * argv[1] is docs/schedules.md. Every row is checked for consistency with
 * itself (the best built-in's gap is computed from the row's own figures;
 * `optimal`'s span lies between the bound and every built-in's span), the
 * rows with p = 2 and p = 4 are recomputed through the simulator and
 * psched_bound() (every built-in span and the bound, digit for digit), the
 * 1F1B and GPipe cells of uniform costs are checked against the closed form
 * (m + p - 1)(F + B + W), and the `optimal` cells of p = 2, m = 2 are solved
 * again (node-limited, so the result does not depend on the machine).
 *
 * The page's conventions, which the table's introduction states: a stage
 * costs the per-device figures divided by v (unit: F = B = W = 1; "F1 B2 W1";
 * "last stage 2x": the last virtual stage costs twice), memory deltas
 * (+1, 0, -1)/v, limits p and 2p. */
#include "pipesched.h"
#include "testutil.h"

#include <stdbool.h>

#define MAX_COLS 24

typedef struct family {
    const char *title;
    uint32_t v;
    psched_placement place;
} family;

static const family families[] = {
    {"Loop placement, v = 1", 1, PSCHED_PLACEMENT_LOOP},
    {"V-shape placement, v = 2", 2, PSCHED_PLACEMENT_VSHAPE},
    {"Loop placement, v = 2 (interleaved)", 2, PSCHED_PLACEMENT_LOOP},
};

static psched_plan *row_plan(const family *f, uint32_t p, uint32_t m, const char *costs,
                             double limit)
{
    double v = f->v, b = !strcmp(costs, "F1 B2 W1") ? 2 : 1;
    psched_plan *plan = tu_plan(p, m, f->v);
    psched_plan_set_placement(plan, f->place);
    psched_plan_set_cost(plan, 1 / v, b / v, 1 / v);
    if (!strcmp(costs, "last stage 2x"))
        psched_plan_set_stage_cost(plan, p * f->v - 1, 2 / v, 2 / v, 2 / v);
    psched_plan_set_mem(plan, 1 / v, 0, -1 / v);
    psched_plan_set_memory_limit(plan, limit);
    return plan;
}

/* "%g" of a span that fits the limit, "—" otherwise (as the page writes it). */
static void span_text(const psched_plan *plan, const char *name, char *out, size_t size)
{
    psched_schedule *s = NULL;
    psched_report *r = NULL;
    snprintf(out, size, "—");
    if (psched_generate(plan, name, &s) == PSCHED_OK && psched_simulate(s, NULL, &r) == 0) {
        bool fits = true;
        for (uint32_t d = 0; d < psched_plan_devices(plan); d++) {
            double peak;
            psched_report_device(r, d, NULL, NULL, &peak);
            fits &= peak <= psched_plan_memory_limit(plan) + 1e-9;
        }
        if (fits)
            snprintf(out, size, "%g", psched_report_span(r));
    }
    psched_report_destroy(r);
    psched_schedule_destroy(s);
}

static int split_cells(char *line, char **cells)
{
    int n = 0;
    char *s = line;
    if (*s != '|')
        return 0;
    s++;
    while (n < MAX_COLS) {
        char *bar = strchr(s, '|');
        if (!bar)
            break;
        *bar = '\0';
        while (*s == ' ')
            s++;
        char *e = bar;
        while (e > s && e[-1] == ' ')
            *--e = '\0';
        cells[n++] = s;
        s = bar + 1;
    }
    return n;
}

static double num(const char *cell)
{
    return strcmp(cell, "—") ? strtod(cell, NULL) : NAN;
}

/* The re-solves need GLPK; a build without it refuses `optimal` with
 * PSCHED_EUNSUPPORTED (tests/test_optimal.c covers that). */
static bool solver_present(void)
{
    psched_plan *plan = NULL;
    psched_schedule *s = NULL;
    psched_plan_create(&plan);
    bool ok = psched_generate(plan, "optimal", &s) != PSCHED_EUNSUPPORTED;
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
    return ok;
}

typedef struct counts {
    int rows, recomputed, closed_form, solved;
} counts;

static void check_row(const family *f, char **names, int ncols, char **c, counts *k)
{
    uint32_t p = 0, m = 0;
    CHECK(sscanf(c[0], "%u × %u", &p, &m) == 2);
    const char *costs = c[1];
    double limit = !strcmp(c[2], "p") ? p : 2.0 * p;
    int first = 4, last = ncols - 3; /* built-in columns [first, last) */
    double bound = num(c[3]), best = INFINITY, opt = num(c[last]);
    k->rows++;
    for (int i = first; i < last; i++)
        if (!isnan(num(c[i])))
            best = fmin(best, num(c[i]));
    /* the row agrees with itself */
    if (isfinite(best)) {
        char gap[32];
        snprintf(gap, sizeof gap, "%.1f%%", 100 * (best - bound) / best);
        CHECK_STR(c[ncols - 1], gap);
    }
    if (!isnan(opt)) {
        CHECK(opt >= bound - 1e-9);
        CHECK(opt <= best + 1e-9);
        CHECK(strcmp(c[ncols - 2], "optimal") == 0 || strncmp(c[ncols - 2], "feasible, gap ", 14) == 0);
    }
    /* the closed form of 1F1B and GPipe with uniform stages: (m+p-1)(F+B+W) */
    if (strcmp(costs, "last stage 2x") != 0 && f->v == 1)
        for (int i = first; i < last; i++)
            if ((!strcmp(names[i], "1f1b") || (!strcmp(names[i], "gpipe") && m <= limit)) &&
                !isnan(num(c[i]))) {
                double sum = !strcmp(costs, "unit") ? 3 : 4;
                CHECK_EQ_DBL(num(c[i]), (m + p - 1) * sum);
                k->closed_form++;
            }
    if (p != 2 && p != 4)
        return;
    /* the simulator and the bound give the same figures */
    psched_plan *plan = row_plan(f, p, m, costs, limit);
    psched_bound_info b = {.version = PSCHED_BOUND_INFO_VERSION};
    CHECK_OK(psched_bound(plan, NULL, &b));
    char text[64];
    snprintf(text, sizeof text, "%g", b.span);
    CHECK_STR(c[3], text);
    for (int i = first; i < last; i++) {
        span_text(plan, names[i], text, sizeof text);
        if (strcmp(c[i], text))
            fprintf(stderr, "  %s, p=%u m=%u %s limit %s: %s\n", f->title, p, m, costs, c[2],
                    names[i]);
        CHECK_STR(c[i], text);
    }
    k->recomputed++;
    if (m == 2 && !strcmp(c[ncols - 2], "optimal") && solver_present()) {
        psched_plan_set_option(plan, "time-limit", 86400);
        psched_plan_set_option(plan, "node-limit", 20000);
        span_text(plan, "optimal", text, sizeof text);
        CHECK_STR(c[last], text);
        k->solved++;
    }
    psched_plan_destroy(plan);
}

static void test_gap_table_matches_the_simulator(const char *path)
{
    FILE *fp = fopen(path, "r");
    CHECK(fp != NULL);
    if (!fp)
        return;
    char line[1024], header[1024] = "";
    char *names[MAX_COLS] = {0};
    int ncols = 0, tables = 0;
    const family *f = NULL;
    counts k = {0};
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "#### ", 5)) {
            f = NULL;
            for (size_t i = 0; i < sizeof families / sizeof *families; i++)
                if (!strcmp(line + 5, families[i].title))
                    f = &families[i];
            ncols = 0;
            continue;
        }
        if (!f || line[0] != '|' || !strncmp(line, "|---", 4))
            continue;
        if (!ncols) { /* the header row: generator names in backticks */
            snprintf(header, sizeof header, "%s", line);
            ncols = split_cells(header, names);
            for (int i = 0; i < ncols; i++)
                if (names[i][0] == '`') {
                    names[i]++;
                    names[i][strlen(names[i]) - 1] = '\0';
                }
            CHECK(ncols > 7 && !strcmp(names[0], "p × m") && !strcmp(names[ncols - 3], "optimal"));
            tables++;
            continue;
        }
        char *cells[MAX_COLS];
        CHECK_EQ_INT(split_cells(line, cells), ncols);
        if (ncols > 7)
            check_row(f, names, ncols, cells, &k);
    }
    fclose(fp);
    fprintf(stderr, "# %d tables, %d rows, %d recomputed, %d closed-form cells, %d re-solved\n",
            tables, k.rows, k.recomputed, k.closed_form, k.solved);
    CHECK_EQ_INT(tables, 3);
    /* p in {2,3,4,6} x m in {p,2p,3p} x 3 cost sets x 2 limits */
    CHECK_EQ_INT(k.rows, 3 * 4 * 3 * 3 * 2);
    CHECK_EQ_INT(k.recomputed, 3 * 2 * 3 * 3 * 2);
    CHECK(k.closed_form >= 20);
    CHECK(k.solved >= 6 || !solver_present());
}

static const char *page;

static void run_gap_table(void)
{
    test_gap_table_matches_the_simulator(page);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test-gap-table docs/schedules.md\n");
        return 2;
    }
    page = argv[1];
    RUN(run_gap_table);
    TEST_MAIN_END();
}
