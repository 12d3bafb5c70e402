/*
 * ASCII grid: one row per device, time flowing right, every op drawn from
 * its simulated start over its duration.
 *
 *   <name>  p=2 m=2 v=1  makespan=9  bubble=33.3%  cell=1
 *   d0 | F0 F1 .  .  BW0-- .  BW1--
 *   d1 | .  F0 BW0-- F1 BW1-- .  .
 *   legend: ...
 *
 * A cell is one time quantum `cell`: the largest of (smallest positive op
 * duration)/k, k = 1..8, that every start and end is a multiple of, so
 * unit-cost schedules get one cell per time unit. When no such quantum
 * exists, times are rounded to the nearest cell and an op that would
 * overlap its predecessor is pushed right; the grid is capped at
 * ASCII_MAX_CELLS cells by widening the quantum.
 *
 * Cells are `w` characters wide and separated by one space; an op spanning
 * k cells owns k·(w+1)−1 characters: its label, then '-' to its end. `w` is
 * the smallest width that fits every label in its op's span. Labels: kind
 * (F, B = backward for inputs, W, BW = full backward, SF/RF/SB/RB for
 * send/recv forward/backward) and micro-batch; with v = 2 chunk 1 is in
 * lowercase, with v > 2 every label ends in ":chunk". An overlapped pair is
 * one unit labelled "a/b". Zero-duration ops (e.g. comm ops) take no time
 * and are not drawn. Idle cells are '.'.
 */
#include "formats.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define ASCII_MAX_CELLS 4096
#define ASCII_MAX_DIVISOR 8

/* One drawn unit: an op, or an overlapped pair. */
typedef struct unit {
    const psched_op *op;
    size_t count; /* 1 or 2 */
    double start, end;
} unit;

typedef struct grid {
    const psched_schedule *s;
    const psched_report *r;
    uint32_t v;
    double quantum;
    size_t width, cells;
    bool color;
} grid;

/* Next unit of device d at op index *i (device-relative); false at the end. */
static bool next_unit(const grid *g, uint32_t d, size_t *i, unit *u, psched_status *st)
{
    size_t first = g->s->offset[d], n = g->s->offset[d + 1] - first;
    while (*i < n) {
        const psched_op *op = &g->s->ops[first + *i];
        size_t count = ((op->flags & PSCHED_OP_OVERLAP_NEXT) && *i + 1 < n) ? 2 : 1;
        *st = psched_report_op_times(g->r, d, *i, 1, &u->start, &u->end);
        if (*st != PSCHED_OK)
            return false;
        *i += count;
        /* a collective runs on the communication stream, at the group's
         * time, not where the device's list has it: not drawn */
        if (u->end > u->start && op->kind != PSCHED_OP_COLLECTIVE) {
            u->op = op;
            u->count = count;
            return true;
        }
    }
    return false;
}

static int op_label(const psched_op *op, uint32_t v, char *buf, size_t size)
{
    /* The kind's name (psched_op_kind_str), with comm kinds shortened to
     * the letters around the '_' to keep cells narrow: SEND_F is "SF". */
    const char *name = psched__kind_name(op->kind), *cut = strchr(name, '_');
    char kind[3] = {name[0], cut ? cut[1] : '\0', '\0'};
    if (!cut)
        kind[1] = name[1] ? name[1] : '\0';
    int n;
    if (v > 2)
        n = snprintf(buf, size, "%s%u:%u", kind, op->microbatch, (unsigned)op->chunk);
    else
        n = snprintf(buf, size, "%s%u", kind, op->microbatch);
    if (v == 2 && op->chunk == 1)
        for (int k = 0; k < n && buf[k] >= 'A' && buf[k] <= 'Z'; k++)
            buf[k] = (char)tolower((unsigned char)buf[k]);
    return n;
}

static size_t unit_label_len(const unit *u, uint32_t v)
{
    char tmp[64];
    size_t len = u->count - 1; /* the '/' of a pair */
    for (size_t k = 0; k < u->count; k++)
        len += (size_t)op_label(&u->op[k], v, tmp, sizeof tmp);
    return len;
}

static bool multiple_of(double t, double q)
{
    double x = t / q;
    return fabs(x - nearbyint(x)) <= 1e-9 * fmax(1.0, fabs(x));
}

/* Smallest positive unit duration and makespan decide the cell quantum. */
static psched_status choose_quantum(grid *g)
{
    double qmin = INFINITY, makespan = psched_report_makespan(g->r);
    psched_status st = PSCHED_OK;
    unit u;
    for (uint32_t d = 0; d < g->s->devices; d++)
        for (size_t i = 0; next_unit(g, d, &i, &u, &st);)
            qmin = fmin(qmin, u.end - u.start);
    if (st != PSCHED_OK)
        return st;
    g->quantum = isfinite(qmin) ? qmin : 1.0;
    for (int k = 1; isfinite(qmin) && k <= ASCII_MAX_DIVISOR; k++) {
        bool fits = true;
        for (uint32_t d = 0; d < g->s->devices && fits; d++)
            for (size_t i = 0; fits && next_unit(g, d, &i, &u, &st);)
                fits = multiple_of(u.start, qmin / k) && multiple_of(u.end, qmin / k);
        if (fits) {
            g->quantum = qmin / k;
            break;
        }
    }
    if (makespan / g->quantum > ASCII_MAX_CELLS)
        g->quantum = makespan / ASCII_MAX_CELLS;
    return PSCHED_OK;
}

/* Cells [*cs, *ce) of a unit, never before the cell cursor *cur. */
static void place(const grid *g, const unit *u, size_t *cur, size_t *cs, size_t *ce)
{
    double a = nearbyint(u->start / g->quantum), z = nearbyint(u->end / g->quantum);
    *cs = a > (double)*cur ? (size_t)a : *cur;
    *ce = z > (double)*cs ? (size_t)z : *cs + 1;
    *cur = *ce;
}

/* Grid width in cells and the cell width that fits every label. */
static void measure(grid *g)
{
    psched_status st = PSCHED_OK;
    unit u;
    g->width = 1;
    g->cells = 0;
    for (uint32_t d = 0; d < g->s->devices; d++) {
        size_t cur = 0, cs, ce;
        for (size_t i = 0; next_unit(g, d, &i, &u, &st);) {
            place(g, &u, &cur, &cs, &ce);
            size_t k = ce - cs, len = unit_label_len(&u, g->v);
            size_t need = (len + 1 + k - 1) / k - 1; /* ceil((len+1)/k) - 1 */
            if (need > g->width)
                g->width = need;
        }
        if (cur > g->cells)
            g->cells = cur;
    }
    double total = nearbyint(psched_report_makespan(g->r) / g->quantum);
    if (total > (double)g->cells && total <= ASCII_MAX_CELLS)
        g->cells = (size_t)total;
}

static const char *kind_color(uint8_t kind)
{
    switch (kind) {
    case PSCHED_OP_F:
        return "\x1b[34m";
    case PSCHED_OP_B:
        return "\x1b[32m";
    case PSCHED_OP_W:
        return "\x1b[33m";
    case PSCHED_OP_BW:
        return "\x1b[36m";
    default:
        return "\x1b[35m";
    }
}

static void fill(psched_buf *b, char ch, size_t n)
{
    char run[32];
    memset(run, ch, sizeof run);
    for (; n > sizeof run; n -= sizeof run)
        psched__buf_append(b, run, sizeof run);
    psched__buf_append(b, run, n);
}

/* A single op is one coloured bar (label and continuation); a pair colours
 * each label and leaves its continuation plain. */
static void put_unit(psched_buf *b, const grid *g, const unit *u, size_t cells)
{
    size_t field = cells * (g->width + 1) - 1, used = u->count - 1;
    char label[64];
    for (size_t k = 0; k < u->count; k++) {
        int n = op_label(&u->op[k], g->v, label, sizeof label);
        if (k)
            psched__buf_append(b, "/", 1);
        if (g->color)
            psched__buf_puts(b, kind_color(u->op[k].kind));
        psched__buf_append(b, label, (size_t)n);
        if (g->color && u->count == 2)
            psched__buf_puts(b, "\x1b[0m");
        used += (size_t)n;
    }
    if (used < field)
        fill(b, '-', field - used);
    if (g->color && u->count == 1)
        psched__buf_puts(b, "\x1b[0m");
}

static psched_status put_row(psched_buf *b, const grid *g, uint32_t d, int digits)
{
    psched_status st = PSCHED_OK;
    size_t cur = 0, cs, ce;
    unit u;
    psched__buf_printf(b, "d%-*u |", digits, d);
    for (size_t i = 0; next_unit(g, d, &i, &u, &st);) {
        size_t before = cur;
        place(g, &u, &cur, &cs, &ce);
        for (size_t c = before; c < cs; c++) {
            psched__buf_append(b, " .", 2);
            fill(b, ' ', g->width - 1);
        }
        psched__buf_append(b, " ", 1);
        put_unit(b, g, &u, ce - cs);
    }
    for (size_t c = cur; c < g->cells; c++) {
        psched__buf_append(b, " .", 2);
        fill(b, ' ', g->width - 1);
    }
    while (!b->failed && b->len > 0 && b->data[b->len - 1] == ' ')
        b->len--;
    psched__buf_append(b, "\n", 1);
    return st;
}

static void put_header(psched_buf *b, const grid *g)
{
    const psched_plan *plan = g->s->plan;
    psched__buf_printf(b, "%s  p=%u m=%u v=%u", g->s->name, plan->devices, plan->microbatches,
                       plan->chunks);
    if (plan->chains != 1)
        psched__buf_printf(b, " chains=%u", plan->chains);
    psched__buf_printf(b, "  makespan=%g  bubble=%.1f%%  cell=%g\n", psched_report_makespan(g->r),
                       100.0 * psched_report_bubble_ratio(g->r), g->quantum);
}

static void put_legend(psched_buf *b, const grid *g)
{
    psched__buf_puts(b, "legend: F forward, B backward for inputs, W backward for weights, "
                        "BW full backward, SF/RF/SB/RB send/recv; digits = micro-batch");
    if (g->v == 2)
        psched__buf_puts(b, "; lowercase = chunk 1");
    else if (g->v > 2)
        psched__buf_puts(b, "; :c = chunk c");
    bool vocab = false;
    for (size_t i = 0; i < g->s->offset[g->s->devices] && !vocab; i++)
        vocab = g->s->ops[i].kind >= PSCHED_OP_VOCAB_S;
    if (vocab)
        psched__buf_puts(b, "; VS/VT vocabulary S/T pass (collectives run on the comm stream: "
                            "not drawn)");
    psched__buf_puts(b, "; a/b = overlapped pair; . idle; - the op goes on\n");
}

psched_status psched__export_ascii(const psched_schedule *s, const psched_report *r,
                                   uint32_t flags, char **text, size_t *length)
{
    grid g = {s, r, s->plan->chunks, 1.0, 1, 0, (flags & PSCHED_EXPORT_COLOR) != 0};
    psched_status st = choose_quantum(&g);
    if (st != PSCHED_OK)
        return st;
    measure(&g);
    int digits = snprintf(NULL, 0, "%u", s->devices ? s->devices - 1 : 0);
    psched_buf b = {0};
    put_header(&b, &g);
    for (uint32_t d = 0; d < s->devices && st == PSCHED_OK; d++)
        st = put_row(&b, &g, d, digits);
    put_legend(&b, &g);
    if (st != PSCHED_OK) {
        psched__dealloc(b.data);
        return st;
    }
    return psched__buf_finish(&b, text, length);
}
