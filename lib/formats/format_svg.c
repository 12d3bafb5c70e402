/*
 * SVG timeline: a picture of a schedule a person can read, standalone or
 * embedded in a page (the docs gallery).
 *
 * Layout, top to bottom: a title line (schedule name, p, m, v, makespan,
 * bubble ratio); one lane per device labelled "device N", time flowing
 * right; a time axis in cost units with ticks at a 1-2-5 step; a legend.
 *
 * Every compute op is one `<rect class="op KIND">` (KIND = F, B, W, BW) at
 * x = its simulated start × scale with width = its duration × scale, with a
 * `<title>` tooltip naming the op and its times, so tools and tests can
 * count and read boxes. An overlapped pair is one unit split into two
 * halves: the first op on the top half, the second on the bottom half (they
 * run at the same time), inside a `<g class="pair">` with a frame around
 * both. The micro-batch number is written inside a box when it fits (11 px,
 * then 9 px text; none when the box is narrower). Comm ops are thin dashed
 * `class="comm"` marks, as they take no time in the cost model.
 *
 * With the link model (bytes and links in the costs, docs/simulator.md) each
 * transfer is an arrow `<line class="transfer">` from the sending lane's
 * edge at the time the data leaves the device's link to the receiving
 * lane's edge at its arrival, with a `<title>` "0F1 -> device 1: leaves 5,
 * arrives 9"; an arrow that slants far shows a transfer that queued or took
 * long, where the plain model would have drawn nothing.
 *
 * Colours separate the kinds by luminance, so F/B/W/BW stay apart in
 * grey-scale print: F light blue (luma ≈ 196), B orange (≈ 157), BW brick
 * (≈ 109), W dark green (≈ 67); labels are black on the two light fills and
 * white on the two dark ones. A chunk c ≥ 1 is shaded with a hatch laid over
 * the kind's colour (chunk 1 "/", chunk 2 "\", chunk 3 crossed, then again
 * from "/"), stripes of both black and white so they show on every fill.
 *
 * Scale: the shortest compute unit is SVG_UNIT_PX pixels wide, so unit-cost
 * schedules get readable boxes; the plot is then stretched to at least
 * SVG_PLOT_MIN and capped at SVG_PLOT_MAX pixels, so a huge schedule stays
 * one picture (its boxes get thin and lose their numbers). The viewBox
 * equals the pixel size.
 */
#include "formats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SVG_UNIT_PX 28.0
#define SVG_PLOT_MIN 360.0
#define SVG_PLOT_MAX 2400.0
#define SVG_MARGIN_LEFT 84.0
#define SVG_MARGIN_RIGHT 24.0
#define SVG_MIN_WIDTH 480.0
#define SVG_TITLE_H 44.0
#define SVG_LANE_H 28.0
#define SVG_LANE_GAP 6.0
#define SVG_AXIS_H 36.0
#define SVG_LEGEND_ROW 22.0
#define SVG_TICK_PX 56.0
#define SVG_CHAR_PX 6.2 /* average advance of 11 px sans-serif text */

/* kinds drawn as boxes are indexed by their kind number */
#define BOX_KINDS (PSCHED_OP_VOCAB_T + 1)

typedef struct svg {
    psched_buf *b;
    const psched_schedule *s;
    const psched_report *r;
    double scale, plot, width, height, legend_top;
    bool kinds[BOX_KINDS], pairs, comms, colls, transfers;
} svg;

/* One drawn unit: an op, or an overlapped pair. */
typedef struct unit {
    const psched_op *op;
    size_t count;
    double start, end;
} unit;

static const char *const kind_fill[BOX_KINDS] = {
    "#a6cee3", "#f08a24", "#1b5e20", "#b5562a",
    [PSCHED_OP_VOCAB_S] = "#ffd92f", [PSCHED_OP_VOCAB_T] = "#7b3294"};
static const char *const kind_ink[BOX_KINDS] = {"#000", "#000", "#fff", "#fff",
                                                [PSCHED_OP_VOCAB_S] = "#000",
                                                [PSCHED_OP_VOCAB_T] = "#fff"};
/* What each kind drawn as a box does, for the legend; its names (ours, and
 * PyTorch's where they differ) come from psched_op_kind_str. */
static const char *const kind_what[BOX_KINDS] = {
    "forward", "backward for inputs", "backward for weights", "full backward",
    [PSCHED_OP_VOCAB_S] = "vocabulary S pass", [PSCHED_OP_VOCAB_T] = "vocabulary T pass"};

static void kind_legend(char *text, size_t size, int kind)
{
    const char *ours = psched__kind_name((uint8_t)kind);
    const char *theirs = psched_op_kind_str((psched_op_kind)kind, PSCHED_NAMING_PYTORCH);
    if (theirs && strcmp(theirs, ours) != 0)
        snprintf(text, size, "%s %s (PyTorch %s)", ours, kind_what[kind], theirs);
    else
        snprintf(text, size, "%s %s", ours, kind_what[kind]);
}

/* Coordinates with at most two decimals and no trailing zeros. */
static void put_px(psched_buf *b, double x)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.2f", x);
    size_t n = strlen(tmp);
    while (n > 0 && tmp[n - 1] == '0')
        n--;
    if (n > 0 && tmp[n - 1] == '.')
        n--;
    if (n == 2 && tmp[0] == '-' && tmp[1] == '0')
        psched__buf_append(b, "0", 1);
    else
        psched__buf_append(b, tmp, n);
}

static void put_attr_px(psched_buf *b, const char *name, double x)
{
    psched__buf_printf(b, " %s=\"", name);
    put_px(b, x);
    psched__buf_append(b, "\"", 1);
}

static void put_escaped(psched_buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': psched__buf_puts(b, "&amp;"); break;
        case '<': psched__buf_puts(b, "&lt;"); break;
        case '>': psched__buf_puts(b, "&gt;"); break;
        case '"': psched__buf_puts(b, "&quot;"); break;
        case '\'': psched__buf_puts(b, "&apos;"); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
                psched__buf_append(b, s, 1);
        }
    }
}

static bool is_compute(const psched_op *op)
{
    return op->kind <= PSCHED_OP_BW || op->kind == PSCHED_OP_VOCAB_S ||
           op->kind == PSCHED_OP_VOCAB_T;
}

/* Next unit of device d at device-relative index *i; false at the end. */
static bool next_unit(const svg *g, uint32_t d, size_t *i, unit *u, psched_status *st)
{
    size_t first = g->s->offset[d], n = g->s->offset[d + 1] - first;
    if (*i >= n)
        return false;
    u->op = &g->s->ops[first + *i];
    u->count = ((u->op->flags & PSCHED_OP_OVERLAP_NEXT) && *i + 1 < n) ? 2 : 1;
    *st = psched_report_op_times(g->r, d, *i, 1, &u->start, &u->end);
    *i += u->count;
    return *st == PSCHED_OK;
}

static double lane_top(uint32_t d)
{
    return SVG_TITLE_H + d * (SVG_LANE_H + SVG_LANE_GAP);
}

static double x_of(const svg *g, double t)
{
    return SVG_MARGIN_LEFT + t * g->scale;
}

/* Scale from the shortest compute unit; notes which kinds occur. */
static psched_status measure(svg *g)
{
    double shortest = INFINITY, makespan = psched_report_makespan(g->r);
    psched_status st = PSCHED_OK;
    unit u;
    for (uint32_t d = 0; d < g->s->devices; d++)
        for (size_t i = 0; next_unit(g, d, &i, &u, &st);) {
            for (size_t k = 0; k < u.count; k++) {
                if (is_compute(&u.op[k]))
                    g->kinds[u.op[k].kind] = true;
                else if (u.op[k].kind == PSCHED_OP_COLLECTIVE)
                    g->colls = true;
                else
                    g->comms = true;
            }
            g->pairs |= u.count == 2;
            if (is_compute(u.op) && u.end > u.start)
                shortest = fmin(shortest, u.end - u.start);
        }
    if (st != PSCHED_OK)
        return st;
    if (!(makespan > 0) || !isfinite(makespan)) {
        g->scale = 1.0;
        g->plot = SVG_PLOT_MIN;
        return PSCHED_OK;
    }
    g->scale = isfinite(shortest) ? SVG_UNIT_PX / shortest : SVG_PLOT_MIN / makespan;
    g->scale = fmin(fmax(g->scale, SVG_PLOT_MIN / makespan), SVG_PLOT_MAX / makespan);
    g->plot = makespan * g->scale;
    return PSCHED_OK;
}

/* "1f1b: p=4 m=8 v=1, makespan 33, bubble 27.3%" (unescaped). */
static size_t title_text(const svg *g, char *text, size_t size)
{
    const psched_plan *plan = g->s->plan;
    char chains[32] = "";
    if (plan->chains != 1)
        snprintf(chains, sizeof chains, " chains=%u", plan->chains);
    int n = snprintf(text, size, "%s: p=%u m=%u v=%u%s, makespan %.10g, bubble %.1f%%", g->s->name,
                     plan->devices, plan->microbatches, plan->chunks, chains,
                     psched_report_makespan(g->r), 100.0 * psched_report_bubble_ratio(g->r));
    return n > 0 ? (size_t)n : 0;
}

static void put_title_text(psched_buf *b, const svg *g)
{
    char text[192];
    title_text(g, text, sizeof text);
    put_escaped(b, text);
}

/* Hatches for chunks 1, 2, 3: stripes of black and white, so they shade
 * light and dark fills alike. */
static void put_defs(psched_buf *b)
{
    static const char *const paths[3] = {"M-2,2 l4,-4 M0,8 l8,-8 M6,10 l4,-4",
                                         "M-2,6 l4,4 M0,0 l8,8 M6,-2 l4,4",
                                         "M0,0 l8,8 M8,0 l-8,8"};
    psched__buf_puts(b, "<defs>\n");
    for (int k = 0; k < 3; k++)
        psched__buf_printf(b, "<pattern id=\"chunk%d\" width=\"8\" height=\"8\" "
                           "patternUnits=\"userSpaceOnUse\"><path d=\"%s\" stroke=\"#000\" "
                           "stroke-opacity=\"0.45\" stroke-width=\"1.6\"/><path d=\"%s\" "
                           "stroke=\"#fff\" stroke-opacity=\"0.35\" stroke-width=\"0.8\" "
                           "transform=\"translate(2,0)\"/></pattern>\n",
                           k + 1, paths[k], paths[k]);
    psched__buf_puts(b, "</defs>\n");
}

static void put_rect(psched_buf *b, double x, double y, double w, double h)
{
    put_attr_px(b, "x", x);
    put_attr_px(b, "y", y);
    put_attr_px(b, "width", w);
    put_attr_px(b, "height", h);
}

static void put_header(svg *g)
{
    psched_buf *b = g->b;
    psched__buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"");
    put_attr_px(b, "width", g->width);
    put_attr_px(b, "height", g->height);
    psched__buf_puts(b, " viewBox=\"0 0 ");
    put_px(b, g->width);
    psched__buf_puts(b, " ");
    put_px(b, g->height);
    psched__buf_puts(b, "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\">\n"
                        "<title>");
    put_title_text(b, g);
    psched__buf_puts(b, "</title>\n");
    put_defs(b);
    psched__buf_puts(b, "<rect class=\"background\"");
    put_rect(b, 0, 0, g->width, g->height);
    psched__buf_puts(b, " fill=\"#fff\"/>\n<text class=\"title\" x=\"12\" y=\"26\" "
                        "font-size=\"15\" font-weight=\"bold\">");
    put_title_text(b, g);
    psched__buf_puts(b, "</text>\n");
}

static double tick_step(const svg *g)
{
    double raw = SVG_TICK_PX / g->scale, mag = pow(10.0, floor(log10(raw)));
    static const double steps[] = {1, 2, 5, 10};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++)
        if (steps[k] * mag >= raw * (1 - 1e-9))
            return steps[k] * mag;
    return 10 * mag;
}

/* One lane per device, labelled on the left. */
static void put_lanes(const svg *g)
{
    psched_buf *b = g->b;
    for (uint32_t d = 0; d < g->s->devices; d++) {
        psched__buf_puts(b, "<rect class=\"lane\"");
        put_rect(b, SVG_MARGIN_LEFT, lane_top(d), g->plot, SVG_LANE_H);
        psched__buf_printf(b, " fill=\"%s\"/>\n<text class=\"device\"",
                           d % 2 ? "#ececec" : "#f6f6f6");
        put_attr_px(b, "x", SVG_MARGIN_LEFT - 8);
        put_attr_px(b, "y", lane_top(d) + SVG_LANE_H / 2 + 4);
        psched__buf_printf(b, " text-anchor=\"end\" font-size=\"12\">device %u</text>\n", d);
    }
}

/* Time axis under the lanes, with grid lines across them at every tick. */
static void put_axis(const svg *g)
{
    psched_buf *b = g->b;
    double bottom = lane_top(g->s->devices) - SVG_LANE_GAP, makespan = g->plot / g->scale;
    double step = tick_step(g);
    psched__buf_puts(b, "<g class=\"axis\" stroke=\"#444\">\n<line");
    put_attr_px(b, "x1", SVG_MARGIN_LEFT);
    put_attr_px(b, "y1", bottom + 4);
    put_attr_px(b, "x2", SVG_MARGIN_LEFT + g->plot);
    put_attr_px(b, "y2", bottom + 4);
    psched__buf_puts(b, "/>\n");
    for (unsigned k = 0; k * step <= makespan * (1 + 1e-9); k++) {
        double t = k * step, x = x_of(g, t);
        psched__buf_puts(b, "<line class=\"grid\" stroke=\"#ccc\" stroke-width=\"0.5\"");
        put_attr_px(b, "x1", x);
        put_attr_px(b, "y1", SVG_TITLE_H - 2);
        put_attr_px(b, "x2", x);
        put_attr_px(b, "y2", bottom + 8);
        psched__buf_puts(b, "/>\n<text stroke=\"none\" fill=\"#000\" text-anchor=\"middle\"");
        put_attr_px(b, "x", x);
        put_attr_px(b, "y", bottom + 20);
        psched__buf_printf(b, ">%.10g</text>\n", t);
    }
    psched__buf_puts(b, "<text stroke=\"none\" fill=\"#000\" text-anchor=\"end\"");
    put_attr_px(b, "x", SVG_MARGIN_LEFT + g->plot);
    put_attr_px(b, "y", bottom + 33);
    psched__buf_puts(b, ">time (cost units)</text>\n</g>\n");
}

/* Micro-batch number centred in a box, at the largest size that fits; the
 * ~0.62 em advance of a digit in common sans-serif fonts decides the fit. */
static void put_label(psched_buf *b, const psched_op *op, double x, double y, double w, double h)
{
    char num[16];
    int n = snprintf(num, sizeof num, "%u", op->microbatch);
    double size = h >= 20 ? 11 : 9;
    while (size >= 9 && n * 0.62 * size + 3 > w)
        size -= 2;
    if (size < 9 || size > h)
        return;
    psched__buf_puts(b, "<text class=\"mb\" text-anchor=\"middle\" pointer-events=\"none\"");
    put_attr_px(b, "x", x + w / 2);
    put_attr_px(b, "y", y + h / 2 + size * 0.36);
    psched__buf_printf(b, " font-size=\"%g\" fill=\"%s\"", size, kind_ink[op->kind]);
    if (op->chunk > 0) /* a halo of the fill keeps the number readable on the hatch */
        psched__buf_printf(b, " stroke=\"%s\" stroke-width=\"2.5\" paint-order=\"stroke\"",
                           kind_fill[op->kind]);
    psched__buf_printf(b, ">%s</text>\n", num);
}

static void put_op_title(psched_buf *b, const psched_op *op, const unit *u, const psched_op *with)
{
    char text[48], other[48];
    psched__op_text(op, text, sizeof text);
    psched__buf_printf(b, "<title>%s (%s, stage %u, micro-batch %u, chunk %u): %.10g to %.10g",
                       text, psched__kind_name(op->kind), op->stage, op->microbatch,
                       (unsigned)op->chunk, u->start, u->end);
    if (with) {
        psched__op_text(with, other, sizeof other);
        psched__buf_printf(b, ", overlapped with %s", other);
    }
    psched__buf_puts(b, "</title>");
}

/* One compute op's box (its hatch and number) in the given rectangle. */
static void put_box(psched_buf *b, const psched_op *op, const unit *u, const psched_op *with,
                    double x, double y, double w, double h)
{
    psched__buf_printf(b, "<rect class=\"op %s\"", psched__kind_name(op->kind));
    put_rect(b, x, y, w, h);
    psched__buf_printf(b, " fill=\"%s\" stroke=\"#222\" stroke-width=\"0.6\">",
                       kind_fill[op->kind]);
    put_op_title(b, op, u, with);
    psched__buf_puts(b, "</rect>\n");
    if (op->chunk > 0) {
        psched__buf_puts(b, "<rect class=\"chunk\" pointer-events=\"none\"");
        put_rect(b, x, y, w, h);
        psched__buf_printf(b, " fill=\"url(#chunk%d)\"/>\n", 1 + (op->chunk - 1) % 3);
    }
    put_label(b, op, x, y, w, h);
}

static void put_comm(const svg *g, const psched_op *op, const unit *u, uint32_t d)
{
    double x = x_of(g, u->start), w = (u->end - u->start) * g->scale, y = lane_top(d);
    if (w > 0) {
        psched__buf_puts(g->b, "<rect class=\"comm\" fill=\"#777\"");
        put_rect(g->b, x, y + SVG_LANE_H - 5, w, 5);
    } else {
        /* sticks out of the lane so it shows where it meets a box edge */
        psched__buf_puts(g->b, "<line class=\"comm\" stroke=\"#333\" stroke-width=\"1.2\" "
                               "stroke-dasharray=\"2,2\"");
        put_attr_px(g->b, "x1", x);
        put_attr_px(g->b, "y1", y - 3);
        put_attr_px(g->b, "x2", x);
        put_attr_px(g->b, "y2", y + SVG_LANE_H + 3);
    }
    psched__buf_puts(g->b, ">");
    put_op_title(g->b, op, u, NULL);
    psched__buf_puts(g->b, w > 0 ? "</rect>\n" : "</line>\n");
}

static void put_unit(const svg *g, const unit *u, uint32_t d)
{
    double x = x_of(g, u->start), w = (u->end - u->start) * g->scale, y = lane_top(d);
    if (u->count == 1) {
        if (is_compute(u->op))
            put_box(g->b, u->op, u, NULL, x, y, w, SVG_LANE_H);
        else
            put_comm(g, u->op, u, d);
        return;
    }
    psched__buf_puts(g->b, "<g class=\"pair\">\n");
    for (size_t k = 0; k < 2; k++) {
        const psched_op *op = &u->op[k], *with = &u->op[1 - k];
        if (is_compute(op))
            put_box(g->b, op, u, with, x, y + k * SVG_LANE_H / 2, w, SVG_LANE_H / 2);
        else
            put_comm(g, op, u, d);
    }
    psched__buf_puts(g->b, "<rect class=\"pair-frame\" fill=\"none\" stroke=\"#000\" "
                           "stroke-width=\"1.4\"");
    put_rect(g->b, x, y, w, SVG_LANE_H);
    psched__buf_puts(g->b, "/>\n</g>\n");
}

static psched_status put_ops(const svg *g)
{
    psched_status st = PSCHED_OK;
    unit u;
    for (uint32_t d = 0; d < g->s->devices; d++) {
        psched__buf_printf(g->b, "<g class=\"device-ops\" id=\"device%u\">\n", d);
        for (size_t i = 0; next_unit(g, d, &i, &u, &st);)
            put_unit(g, &u, d);
        if (st != PSCHED_OK)
            return st;
        psched__buf_puts(g->b, "</g>\n");
    }
    return PSCHED_OK;
}

/* The link model's transfers: one arrow per op whose output left on a link
 * (report leave/arrive times), drawn over the boxes. */
static void put_transfers(const svg *g)
{
    const psched_schedule *s = g->s;
    const psched_report *r = g->r;
    psched_buf *b = g->b;
    psched__buf_puts(b, "<defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"7\" refY=\"4\" "
                        "markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path "
                        "d=\"M0,0 L8,4 L0,8 z\" fill=\"#6a1b9a\"/></marker></defs>\n"
                        "<g class=\"transfers\">\n");
    for (uint32_t d = 0; d < s->devices; d++) {
        for (size_t g2 = s->offset[d]; g2 < s->offset[d + 1]; g2++) {
            if (isnan(r->leave[g2]) || isnan(r->arrive[g2]))
                continue;
            const psched_op *op = &s->ops[g2];
            /* an F sends to the next stage, a backward to the one before */
            uint32_t to = psched_plan_stage_device(
                s->plan, op->kind == PSCHED_OP_F ? op->stage + 1 : op->stage - 1);
            bool down = to > d; /* lanes of higher devices are lower in the picture */
            char name[48];
            psched__op_text(op, name, sizeof name);
            psched__buf_puts(b, "<line class=\"transfer\" stroke=\"#6a1b9a\" "
                                "stroke-width=\"1.2\" marker-end=\"url(#arrow)\"");
            put_attr_px(b, "x1", x_of(g, r->leave[g2]));
            put_attr_px(b, "y1", lane_top(d) + (down ? SVG_LANE_H : 0));
            put_attr_px(b, "x2", x_of(g, r->arrive[g2]));
            put_attr_px(b, "y2", lane_top(to) + (down ? 0 : SVG_LANE_H));
            psched__buf_printf(b, "><title>%s -> device %u: leaves %.10g, arrives %.10g</title>"
                               "</line>\n", name, to, r->leave[g2], r->arrive[g2]);
        }
    }
    psched__buf_puts(b, "</g>\n");
}

/* ---- legend: items flow left to right and wrap at the picture's width ---- */

enum swatch { SWATCH_KIND, SWATCH_CHUNK, SWATCH_PAIR, SWATCH_COMM, SWATCH_TRANSFER };

typedef struct legend_item {
    enum swatch swatch;
    int index; /* kind or chunk */
    char text[96];
} legend_item;

/* Chunks that share hatch k (1..3): k, k+3, k+6, ... below v. */
static void chunk_text(char *text, size_t size, int k, uint32_t v)
{
    int n = snprintf(text, size, "chunk %d", k);
    int shown = 1;
    for (uint32_t c = (uint32_t)k + 3; c < v && n > 0 && (size_t)n < size; c += 3, shown++)
        n += snprintf(text + n, size - (size_t)n, shown < 3 ? ", %u" : ", ...", c);
}

static size_t legend_items(const svg *g, legend_item *items)
{
    size_t n = 0;
    for (int k = 0; k < BOX_KINDS; k++)
        if (g->kinds[k]) {
            items[n] = (legend_item){SWATCH_KIND, k, ""};
            kind_legend(items[n++].text, sizeof items[0].text, k);
        }
    uint32_t v = g->s->plan->chunks;
    for (int k = 0; k < 4 && (uint32_t)k < v && v > 1; k++) {
        items[n] = (legend_item){SWATCH_CHUNK, k, "chunk 0"};
        if (k > 0)
            chunk_text(items[n].text, sizeof items[0].text, k, v);
        n++;
    }
    if (g->pairs) {
        items[n] = (legend_item){SWATCH_PAIR, 0, ""};
        snprintf(items[n++].text, sizeof items[0].text, "overlapped pair (top and bottom half)");
    }
    if (g->comms) {
        items[n] = (legend_item){SWATCH_COMM, 0, ""};
        snprintf(items[n++].text, sizeof items[0].text, "send / recv");
    }
    if (g->colls) {
        items[n] = (legend_item){SWATCH_COMM, 0, ""};
        snprintf(items[n++].text, sizeof items[0].text, "collective (all devices)");
    }
    if (g->transfers) {
        items[n] = (legend_item){SWATCH_TRANSFER, 0, ""};
        snprintf(items[n++].text, sizeof items[0].text, "transfer (leaves its link, arrives)");
    }
    return n;
}

static void put_swatch(psched_buf *b, const legend_item *it, double x, double y)
{
    switch (it->swatch) {
    case SWATCH_KIND:
        psched__buf_puts(b, "<rect");
        put_rect(b, x, y, 14, 14);
        psched__buf_printf(b, " fill=\"%s\" stroke=\"#222\" stroke-width=\"0.6\"/>\n",
                           kind_fill[it->index]);
        return;
    case SWATCH_CHUNK:
        psched__buf_puts(b, "<rect");
        put_rect(b, x, y, 14, 14);
        psched__buf_puts(b, " fill=\"#bbb\" stroke=\"#222\" stroke-width=\"0.6\"/>\n");
        if (it->index > 0) {
            psched__buf_puts(b, "<rect");
            put_rect(b, x, y, 14, 14);
            psched__buf_printf(b, " fill=\"url(#chunk%d)\"/>\n", it->index);
        }
        return;
    case SWATCH_PAIR:
        for (int k = 0; k < 2; k++) {
            psched__buf_puts(b, "<rect");
            put_rect(b, x, y + 7 * k, 14, 7);
            psched__buf_printf(b, " fill=\"%s\"/>\n", kind_fill[k]);
        }
        psched__buf_puts(b, "<rect fill=\"none\" stroke=\"#000\" stroke-width=\"1.4\"");
        put_rect(b, x, y, 14, 14);
        psched__buf_puts(b, "/>\n");
        return;
    case SWATCH_COMM:
        psched__buf_puts(b, "<line stroke=\"#333\" stroke-width=\"1.2\" stroke-dasharray=\"2,2\"");
        put_attr_px(b, "x1", x + 7);
        put_attr_px(b, "y1", y);
        put_attr_px(b, "x2", x + 7);
        put_attr_px(b, "y2", y + 14);
        psched__buf_puts(b, "/>\n");
        return;
    case SWATCH_TRANSFER:
        psched__buf_puts(b, "<line stroke=\"#6a1b9a\" stroke-width=\"1.2\" "
                            "marker-end=\"url(#arrow)\"");
        put_attr_px(b, "x1", x);
        put_attr_px(b, "y1", y + 2);
        put_attr_px(b, "x2", x + 14);
        put_attr_px(b, "y2", y + 12);
        psched__buf_puts(b, "/>\n");
        return;
    }
}

/* Lays out the legend from `top`; draws it when b is non-NULL. Returns its
 * row count. */
static int layout_legend(const svg *g, psched_buf *b, double top)
{
    legend_item items[16];
    size_t n = legend_items(g, items);
    double x = 12;
    int row = 0;
    if (b)
        psched__buf_puts(b, "<g class=\"legend\">\n");
    for (size_t i = 0; i < n; i++) {
        double w = 20 + SVG_CHAR_PX * (double)strlen(items[i].text) + 18;
        if (x > 12 && x + w > g->width - 12)
            x = 12, row++;
        if (b) {
            double y = top + row * SVG_LEGEND_ROW;
            put_swatch(b, &items[i], x, y);
            psched__buf_puts(b, "<text");
            put_attr_px(b, "x", x + 20);
            put_attr_px(b, "y", y + 11);
            psched__buf_puts(b, ">");
            put_escaped(b, items[i].text);
            psched__buf_puts(b, "</text>\n");
        }
        x += w;
    }
    if (b)
        psched__buf_puts(b, "</g>\n");
    return row + 1;
}

psched_status psched__export_svg(const psched_schedule *s, const psched_report *r,
                                 char **text, size_t *length)
{
    psched_buf b = {0};
    svg g = {&b, s, r, 1.0, 0, 0, 0, 0, {false}, false, false, false, r->leave && r->arrive};
    psched_status st = measure(&g);
    if (st != PSCHED_OK)
        return st;
    char title[192];
    double title_px = 24 + 8.6 * (double)title_text(&g, title, sizeof title);
    g.width = fmax(fmax(SVG_MIN_WIDTH, title_px), SVG_MARGIN_LEFT + g.plot + SVG_MARGIN_RIGHT);
    g.legend_top = lane_top(s->devices) - SVG_LANE_GAP + SVG_AXIS_H + 8;
    g.height = g.legend_top + layout_legend(&g, NULL, g.legend_top) * SVG_LEGEND_ROW + 8;
    put_header(&g);
    put_lanes(&g);
    put_axis(&g);
    st = put_ops(&g);
    if (st != PSCHED_OK) {
        psched__dealloc(b.data);
        return st;
    }
    if (g.transfers)
        put_transfers(&g);
    layout_legend(&g, &b, g.legend_top);
    psched__buf_puts(&b, "</svg>\n");
    return psched__buf_finish(&b, text, length);
}
