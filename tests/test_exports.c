/* Chrome trace and SVG timeline exports: exact event times against the
 * hand-derived 1F1B p=2 m=2 run (unit costs, BW = 2), boxes and their
 * geometry from the documented layout constants, overlapped pairs, chunk
 * shading, and well-formedness of every output (strict JSON and XML
 * checkers below, so a trailing comma or an unescaped '<' fails here).
 *
 * 1F1B p=2 m=2 by hand (F = 1, BW = B + W = 2, comm 0):
 *   d0: 0F0 [0,1] 0F1 [1,2] 0B0 [4,6] 0B1 [7,9]
 *   d1: 1F0 [1,2] 1B0 [2,4] 1F1 [4,5] 1B1 [5,7]      makespan 9
 * busy 6 + 6 of 2 × 9, so bubble = 1 − 12/18 = 33.3 %. */
#include "testsched.h"
#include "testutil.h"

#include <ctype.h>

#include "textcheck.h"

/* ---- helpers ---- */

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay ? strstr(hay, needle) : NULL; p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Start tags beginning with `prefix` that contain `attr` before their '>'. */
static size_t count_tags(const char *text, const char *prefix, const char *attr)
{
    size_t n = 0;
    for (const char *p = text ? strstr(text, prefix) : NULL; p; p = strstr(p + 1, prefix)) {
        const char *end = strchr(p, '>'), *hit = strstr(p, attr);
        n += hit && end && hit < end;
    }
    return n;
}

static psched_schedule *generate(const char *name, uint32_t p, uint32_t m, uint32_t v)
{
    psched_plan *plan = ts_plan(p, m, v, PSCHED_PLACEMENT_AUTO);
    psched_schedule *s = NULL;
    CHECK_OK(psched_generate(plan, name, &s));
    psched_plan_destroy(plan);
    return s;
}

static char *export_text(const psched_schedule *s, const psched_report *r, psched_format format)
{
    char *text = NULL;
    size_t len = 0;
    CHECK_OK(psched_export(s, r, format, 0, &text, &len));
    if (text)
        CHECK_EQ_INT(len, strlen(text));
    return text;
}

static size_t ops_with(const psched_schedule *s, uint32_t flag, int chunk)
{
    size_t n = 0;
    for (uint32_t d = 0; d < psched_schedule_devices(s); d++)
        for (size_t i = 0; i < psched_schedule_op_count(s, d); i++) {
            psched_op op;
            psched_schedule_ops(s, d, i, 1, &op, sizeof op);
            n += flag ? (op.flags & flag) != 0 : op.chunk == chunk;
        }
    return n;
}

/* ---- chrome ---- */

struct timed {
    const char *name, *cat;
    unsigned tid, start, end;
};

static const struct timed one_f_one_b[8] = {
    {"0F0", "F", 0, 0, 1}, {"0F1", "F", 0, 1, 2}, {"0B0", "BW", 0, 4, 6}, {"0B1", "BW", 0, 7, 9},
    {"1F0", "F", 1, 1, 2}, {"1B0", "BW", 1, 2, 4}, {"1F1", "F", 1, 4, 5}, {"1B1", "BW", 1, 5, 7},
};

/* One cost unit is 1000 µs in the trace (docs/formats.md). */
static void check_event(const char *text, const struct timed *e, unsigned scale)
{
    char want[256];
    snprintf(want, sizeof want,
             "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %u, \"dur\": %u, "
             "\"pid\": 0, \"tid\": %u, \"args\": {\"stage\": %u, \"microbatch\": %c, "
             "\"chunk\": 0}}",
             e->name, e->cat, e->start * scale, (e->end - e->start) * scale, e->tid,
             e->tid, e->name[2]);
    CHECK_EQ_INT(count(text, want), 1);
    if (count(text, want) != 1)
        fprintf(stderr, "  missing %s\n", want);
}

static void test_chrome_1f1b_has_one_x_event_per_compute_op_at_hand_derived_times(void)
{
    psched_schedule *s = generate("1f1b", 2, 2, 1);
    char *text = export_text(s, NULL, PSCHED_FORMAT_CHROME);
    CHECK(json_valid(text));
    CHECK_EQ_INT(count(text, "\"ph\": \"X\""), 8);
    for (int k = 0; k < 8; k++)
        check_event(text, &one_f_one_b[k], 1000);
    CHECK_CONTAINS(text, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": 0, "
                         "\"args\": {\"name\": \"device 0\"}}");
    CHECK_CONTAINS(text, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": 1, "
                         "\"args\": {\"name\": \"device 1\"}}");
    CHECK_CONTAINS(text, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": 0, "
                         "\"args\": {\"name\": \"1f1b\"}}");
    CHECK_EQ_INT(count(text, "\"pid\": 0"), count(text, "\"pid\""));
    CHECK_CONTAINS(text, "\"displayTimeUnit\": \"ms\"");
    CHECK_CONTAINS(text, "\"us_per_cost_unit\": 1000, \"makespan\": 9,");
    psched_free(text);
    psched_schedule_destroy(s);
}

static void test_chrome_uses_the_report_it_is_given(void)
{
    /* costs (2, 1, 1): F = 2, BW = 2, so d0 runs 0F0 [0,2] 0F1 [2,4]
     * and waits for 1B0, which runs [4,6] after 1F0 [2,4]: 0B0 [6,8]. */
    psched_schedule *s = generate("1f1b", 2, 2, 1);
    psched_plan *costs = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_cost(costs, 2, 1, 1);
    psched_report *r = NULL;
    CHECK_OK(psched_simulate(s, costs, &r));
    char *text = export_text(s, r, PSCHED_FORMAT_CHROME);
    CHECK(json_valid(text));
    struct timed f1 = {"0F1", "F", 0, 2, 4}, b0 = {"0B0", "BW", 0, 6, 8};
    struct timed b1 = {"1B0", "BW", 1, 4, 6};
    check_event(text, &f1, 1000);
    check_event(text, &b0, 1000);
    check_event(text, &b1, 1000);
    psched_free(text);
    psched_report_destroy(r);
    psched_plan_destroy(costs);
    psched_schedule_destroy(s);
}

/* p = 1, m = 2 with F1 and I0 overlapped: F0 [0,1], pair [1,3] (cost 1 + 1),
 * W0 [3,4], I1 [4,5], W1 [5,6]. */
static psched_schedule *pair_schedule(psched_plan **plan)
{
    *plan = ts_plan(1, 2, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0F1;0I0,0W0,0I1,0W1"};
    return ts_build(*plan, rows);
}

static void test_chrome_overlapped_pair_is_two_events_with_the_pair_times(void)
{
    psched_plan *plan;
    psched_schedule *s = pair_schedule(&plan);
    char *text = export_text(s, NULL, PSCHED_FORMAT_CHROME);
    CHECK(json_valid(text));
    CHECK_EQ_INT(count(text, "\"ph\": \"X\""), 6);
    CHECK_EQ_INT(count(text, "\"overlapped\": true"), 2);
    CHECK_CONTAINS(text, "{\"name\": \"0F1\", \"cat\": \"F\", \"ph\": \"X\", \"ts\": 1000, "
                         "\"dur\": 2000, \"pid\": 0, \"tid\": 0, \"args\": {\"stage\": 0, "
                         "\"microbatch\": 1, \"chunk\": 0, \"overlapped\": true}}");
    CHECK_CONTAINS(text, "{\"name\": \"0I0\", \"cat\": \"B\", \"ph\": \"X\", \"ts\": 1000, "
                         "\"dur\": 2000, \"pid\": 0, \"tid\": 0, \"args\": {\"stage\": 0, "
                         "\"microbatch\": 0, \"chunk\": 0, \"overlapped\": true}}");
    CHECK_CONTAINS(text, "{\"name\": \"0W1\", \"cat\": \"W\", \"ph\": \"X\", \"ts\": 5000, "
                         "\"dur\": 1000,");
    psched_free(text);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_chrome_dualpipev_has_one_event_per_op(void)
{
    psched_schedule *s = generate("dualpipev", 4, 8, 2);
    char *text = export_text(s, NULL, PSCHED_FORMAT_CHROME);
    CHECK(json_valid(text));
    CHECK_EQ_INT(count(text, "\"ph\": \"X\""), psched_schedule_total_ops(s));
    CHECK_EQ_INT(count(text, "\"overlapped\": true"), 2 * ops_with(s, PSCHED_OP_OVERLAP_NEXT, 0));
    CHECK(ops_with(s, PSCHED_OP_OVERLAP_NEXT, 0) > 0);
    psched_free(text);
    psched_schedule_destroy(s);
}

/* ---- svg ---- */

static void test_svg_1f1b_has_one_box_per_op_a_legend_and_the_title(void)
{
    psched_schedule *s = generate("1f1b", 2, 2, 1);
    char *text = export_text(s, NULL, PSCHED_FORMAT_SVG);
    CHECK(xml_well_formed(text));
    CHECK_EQ_INT(count(text, "<rect class=\"op "), 8);
    CHECK_EQ_INT(count(text, "<rect class=\"op F\""), 4);
    CHECK_EQ_INT(count(text, "<rect class=\"op BW\""), 4);
    CHECK_EQ_INT(count(text, "<g class=\"legend\">"), 1);
    CHECK_CONTAINS(text, ">F forward</text>");
    CHECK_CONTAINS(text, ">BW full backward (PyTorch B)</text>");
    CHECK_EQ_INT(count(text, ">W backward for weights</text>"), 0); /* only kinds present */
    CHECK_EQ_INT(count(text, "1f1b: p=2 m=2 v=1, makespan 9, bubble 33.3%</"), 2);
    CHECK_CONTAINS(text, ">device 0</text>");
    CHECK_CONTAINS(text, ">device 1</text>");
    psched_free(text);
    psched_schedule_destroy(s);
}

/* Makespan 9 × 28 px is below the 360 px minimum plot, so one cost unit is
 * 360 / 9 = 40 px; the plot starts at x = 84, lane d at y = 44 + 34·d. */
static void test_svg_boxes_sit_at_their_simulated_times(void)
{
    psched_schedule *s = generate("1f1b", 2, 2, 1);
    char *text = export_text(s, NULL, PSCHED_FORMAT_SVG);
    for (int k = 0; k < 8; k++) {
        const struct timed *e = &one_f_one_b[k];
        char want[256];
        snprintf(want, sizeof want,
                 "<rect class=\"op %s\" x=\"%u\" y=\"%u\" width=\"%u\" height=\"28\"", e->cat,
                 84 + 40 * e->start, 44 + 34 * e->tid, 40 * (e->end - e->start));
        CHECK_EQ_INT(count(text, want), 1);
        if (count(text, want) != 1)
            fprintf(stderr, "  missing %s\n", want);
    }
    CHECK_CONTAINS(text, "<title>0B0 (BW, stage 0, micro-batch 0, chunk 0): 4 to 6</title>");
    CHECK_CONTAINS(text, "width=\"480\" height=\"");
    /* ticks every 2 units: 56 px / 40 px per unit rounds up to a 1-2-5 step */
    CHECK_CONTAINS(text, ">8</text>");
    CHECK_EQ_INT(count(text, ">7</text>"), 0);
    psched_free(text);
    psched_schedule_destroy(s);
}

static void test_svg_overlapped_pair_is_one_box_split_in_halves(void)
{
    psched_plan *plan;
    psched_schedule *s = pair_schedule(&plan);
    char *text = export_text(s, NULL, PSCHED_FORMAT_SVG);
    CHECK(xml_well_formed(text));
    /* makespan 6: 360 / 6 = 60 px per unit; the pair spans [1,3] */
    CHECK_EQ_INT(count(text, "<g class=\"pair\">"), 1);
    CHECK_CONTAINS(text, "<g class=\"pair\">\n<rect class=\"op F\" x=\"144\" y=\"44\" "
                         "width=\"120\" height=\"14\"");
    CHECK_CONTAINS(text, "<rect class=\"op B\" x=\"144\" y=\"58\" width=\"120\" height=\"14\"");
    CHECK_CONTAINS(text, "<rect class=\"pair-frame\" fill=\"none\" stroke=\"#000\" "
                         "stroke-width=\"1.4\" x=\"144\" y=\"44\" width=\"120\" height=\"28\"/>");
    CHECK_CONTAINS(text, "overlapped with 0I0</title>");
    CHECK_CONTAINS(text, ">overlapped pair (top and bottom half)</text>");
    CHECK_EQ_INT(count(text, "<rect class=\"op "), 6);
    psched_free(text);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_svg_dualpipev_pairs_appear_as_split_boxes(void)
{
    psched_schedule *s = generate("dualpipev", 4, 8, 2);
    char *text = export_text(s, NULL, PSCHED_FORMAT_SVG);
    CHECK(xml_well_formed(text));
    size_t pairs = ops_with(s, PSCHED_OP_OVERLAP_NEXT, 0);
    CHECK(pairs > 0);
    CHECK_EQ_INT(count(text, "<rect class=\"op "), psched_schedule_total_ops(s));
    CHECK_EQ_INT(count(text, "<g class=\"pair\">"), pairs);
    CHECK_EQ_INT(count(text, "<rect class=\"pair-frame\""), pairs);
    CHECK_EQ_INT(count_tags(text, "<rect class=\"op ", " height=\"14\""), 2 * pairs);
    CHECK_EQ_INT(count_tags(text, "<rect class=\"op ", " height=\"28\""),
                 psched_schedule_total_ops(s) - 2 * pairs);
    CHECK_CONTAINS(text, "dualpipev: p=4 m=8 v=2,");
    psched_free(text);
    psched_schedule_destroy(s);
}

static void test_svg_chunk_one_is_hatched(void)
{
    psched_schedule *s = generate("interleaved", 2, 4, 2);
    char *text = export_text(s, NULL, PSCHED_FORMAT_SVG);
    CHECK(xml_well_formed(text));
    CHECK_EQ_INT(count(text, "<rect class=\"op "), 32);
    CHECK_EQ_INT(ops_with(s, 0, 1), 16);
    CHECK_EQ_INT(count(text, "fill=\"url(#chunk1)\""), 16 + 1); /* + the legend swatch */
    CHECK_CONTAINS(text, ">chunk 1</text>");
    CHECK_CONTAINS(text, ">chunk 0</text>");
    psched_free(text);
    psched_schedule_destroy(s);
}

/* 1F1B p=16 m=256: makespan (m + p − 1)(F + B + W) = 271 · 3 = 813, whose
 * 813 × 28 px would exceed the 2400 px cap: width 84 + 2400 + 24. */
static void test_svg_width_is_capped_for_huge_schedules(void)
{
    psched_schedule *s = generate("1f1b", 16, 256, 1);
    char *text = export_text(s, NULL, PSCHED_FORMAT_SVG);
    CHECK(xml_well_formed(text));
    CHECK_CONTAINS(text, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
                         "width=\"2508\"");
    CHECK_EQ_INT(count(text, "<rect class=\"op "), 16 * 256 * 2);
    psched_free(text);
    psched_schedule_destroy(s);
}

static void test_chrome_and_svg_of_every_generator_are_well_formed(void)
{
    for (size_t g = 0; g < psched_generator_count(); g++) {
        const char *name = psched_generator_at(g)->name;
        psched_schedule *s = generate(name, 4, 8, 0);
        if (!s)
            continue;
        char *trace = export_text(s, NULL, PSCHED_FORMAT_CHROME);
        char *picture = export_text(s, NULL, PSCHED_FORMAT_SVG);
        size_t compute = psched_schedule_total_ops(s);
        CHECK(json_valid(trace));
        CHECK(xml_well_formed(picture));
        CHECK_EQ_INT(count(trace, "\"ph\": \"X\""), compute);
        CHECK_EQ_INT(count(picture, "<rect class=\"op "), compute);
        if (!json_valid(trace) || !xml_well_formed(picture))
            fprintf(stderr, "  generator %s\n", name);
        psched_free(trace);
        psched_free(picture);
        psched_schedule_destroy(s);
    }
}

/* The lowered 1F1B p=2 m=2 of issue 4 has one SEND and one RECV for each
 * of its 2 × 2 cross-device transfers (F and B of two micro-batches). */
static void test_lowered_schedule_exports_comm_ops_as_marks(void)
{
    psched_schedule *s = generate("1f1b", 2, 2, 1), *lowered = NULL;
    CHECK_OK(psched_lower_comm(s, NULL, &lowered));
    char *trace = export_text(lowered, NULL, PSCHED_FORMAT_CHROME);
    char *picture = export_text(lowered, NULL, PSCHED_FORMAT_SVG);
    CHECK(json_valid(trace));
    CHECK_EQ_INT(count(trace, "\"ph\": \"X\""), 8);
    CHECK_EQ_INT(count(trace, "\"ph\": \"i\", "), 8);
    CHECK_EQ_INT(count(trace, "\"cat\": \"SEND_F\""), 2);
    CHECK_EQ_INT(count(trace, "\"cat\": \"RECV_B\""), 2);
    CHECK_CONTAINS(trace, "{\"name\": \"1RECV_F0\", \"cat\": \"RECV_F\", \"ph\": \"i\", ");
    CHECK(xml_well_formed(picture));
    CHECK_EQ_INT(count(picture, "<rect class=\"op "), 8);
    CHECK_EQ_INT(count(picture, "<line class=\"comm\""), 8);
    CHECK_CONTAINS(picture, ">send / recv</text>");
    psched_free(trace);
    psched_free(picture);
    psched_schedule_destroy(lowered);
    psched_schedule_destroy(s);
}

static void test_checkers_reject_malformed_text(void)
{
    CHECK(json_valid("{\"a\": [1, 2.5e3, -0, true, null, \"x\\u00e9\"], \"b\": {}}"));
    CHECK(!json_valid("{\"a\": [1, 2,]}"));
    CHECK(!json_valid("{\"a\": 1,}"));
    CHECK(!json_valid("[01]"));
    CHECK(!json_valid("{\"a\": 1} x"));
    CHECK(!json_valid("{\"a\": 1.}"));
    CHECK(!json_valid("{\"a\": nan}"));
    CHECK(!json_valid("{\"a\": \"\n\"}"));
    CHECK(xml_well_formed("<?xml version=\"1.0\"?>\n<a x=\"1 &amp; 2\"><b/>t&#38;</a>\n"));
    CHECK(!xml_well_formed("<a><b></a></b>"));
    CHECK(!xml_well_formed("<a x=\"<\"/>"));
    CHECK(!xml_well_formed("<a>&nbsp;</a>"));
    CHECK(!xml_well_formed("<a/><b/>"));
    CHECK(!xml_well_formed("<a x=1/>"));
}

static void test_exports_of_an_invalid_schedule_fail_and_leave_text_null(void)
{
    psched_plan *plan = ts_plan(2, 1, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0B0", "1B0,1F0"}; /* 1B0 before its F */
    psched_schedule *s = ts_build(plan, rows);
    for (int f = PSCHED_FORMAT_CHROME; f <= PSCHED_FORMAT_SVG; f++) {
        char *text = NULL;
        psched_status st = psched_export(s, NULL, (psched_format)f, 0, &text, NULL);
        CHECK(st == PSCHED_EINVALID || st == PSCHED_EDEADLOCK);
        CHECK(text == NULL);
    }
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_exports_survive_every_allocation_failure(void)
{
    psched_schedule *s = generate("dualpipev", 4, 8, 2);
    for (int f = PSCHED_FORMAT_CHROME; f <= PSCHED_FORMAT_SVG; f++) {
        int ok = 0;
        for (long n = 0; n < 1000 && !ok; n++) {
            char *text = NULL;
            psched__alloc_fail_after(n);
            psched_status st = psched_export(s, NULL, (psched_format)f, 0, &text, NULL);
            psched__alloc_fail_after(-1);
            CHECK(st == PSCHED_OK || st == PSCHED_ENOMEM);
            CHECK((st == PSCHED_OK) == (text != NULL));
            ok = st == PSCHED_OK;
            psched_free(text);
        }
        CHECK(ok);
    }
    psched_schedule_destroy(s);
}

int main(void)
{
    RUN(test_checkers_reject_malformed_text);
    RUN(test_chrome_1f1b_has_one_x_event_per_compute_op_at_hand_derived_times);
    RUN(test_chrome_uses_the_report_it_is_given);
    RUN(test_chrome_overlapped_pair_is_two_events_with_the_pair_times);
    RUN(test_chrome_dualpipev_has_one_event_per_op);
    RUN(test_svg_1f1b_has_one_box_per_op_a_legend_and_the_title);
    RUN(test_svg_boxes_sit_at_their_simulated_times);
    RUN(test_svg_overlapped_pair_is_one_box_split_in_halves);
    RUN(test_svg_dualpipev_pairs_appear_as_split_boxes);
    RUN(test_svg_chunk_one_is_hatched);
    RUN(test_svg_width_is_capped_for_huge_schedules);
    RUN(test_chrome_and_svg_of_every_generator_are_well_formed);
    RUN(test_lowered_schedule_exports_comm_ops_as_marks);
    RUN(test_exports_of_an_invalid_schedule_fail_and_leave_text_null);
    RUN(test_exports_survive_every_allocation_failure);
    TEST_MAIN_END();
}
