/* Golden orders and closed forms of the handcrafted zero-bubble generators:
 * zb-h1, zb-h2, interleaved-zb. Expected orders are copied from
 * tests/data/reference (README worked example, PyTorch's ZB1P artifact) or
 * derived by hand from the specification (issue 3); closed forms are the
 * zero-bubble paper's, with unit costs and no communication latency. Op text
 * is PyTorch's: our B prints as "I". */
#include "testgolden.h"

#include <stdbool.h>
#include <stdint.h>

static psched_schedule *generate_ok(const char *name, uint32_t p, uint32_t v, uint32_t m)
{
    return tg_generate_ok(name, p, v, m, NO_GROUP);
}

/* A CSV row of PyTorch's compute_only artifact with its idle (empty) cells
 * dropped. */
static void strip_idle(const char *row, char *buf, size_t size)
{
    size_t len = 0;
    for (const char *c = row; *c && len + 1 < size; c++) {
        bool empty_cell = *c == ',' && (len == 0 || buf[len - 1] == ',');
        if (!empty_cell)
            buf[len++] = *c;
    }
    if (len > 0 && buf[len - 1] == ',')
        len--;
    buf[len] = '\0';
}

/* Runs with unit costs (the plan's defaults) and no latency. */
static psched_report *simulate_ok(const psched_schedule *s)
{
    psched_report *r = NULL;
    if (s)
        CHECK_OK(psched_simulate(s, NULL, &r));
    return r;
}

static double device_peak(const psched_report *r, uint32_t d)
{
    double peak = -1;
    CHECK_OK(psched_report_device(r, d, NULL, NULL, &peak));
    return peak;
}

/* ---- zb-h1 ---- */

static void test_zb_h1_matches_paper_example_p4_m8(void)
{
    /* reference/README.md, "ZB-H1 (zero-bubble paper), p=4, m=8", rows S0
     * and S3, written as PyTorch text for stages 0 and 3. */
    static const char *const s0 =
        "0F0,0F1,0F2,0F3,0I0,0W0,0F4,0I1,0W1,0F5,0I2,0W2,0F6,0I3,0W3,0F7,"
        "0I4,0W4,0I5,0W5,0I6,0W6,0I7,0W7";
    static const char *const s3 =
        "3F0,3I0,3F1,3I1,3F2,3I2,3F3,3I3,3W0,3F4,3I4,3W1,3F5,3I5,3W2,3F6,"
        "3I6,3W3,3F7,3I7,3W4,3W5,3W6,3W7";
    char buf[1024];
    psched_schedule *s = generate_ok("zb-h1", 4, 0, 8);
    if (!s)
        return;
    tg_device_text(s, 0, buf, sizeof buf);
    CHECK_STR(buf, s0);
    tg_device_text(s, 3, buf, sizeof buf);
    CHECK_STR(buf, s3);
    psched_schedule_destroy(s);
}

static void test_zb_h1_small_m_counts(void)
{
    /* p=4, m=2 by hand: device d warms up with min(2, 4-d) forwards, then
     * min(d, m-w) (B, F) rounds; nothing is left for the steady triple. */
    static const char *const expected[] = {
        "0F0,0F1,0I0,0W0,0I1,0W1",
        "1F0,1F1,1I0,1W0,1I1,1W1",
        "2F0,2F1,2I0,2W0,2I1,2W1",
        "3F0,3I0,3F1,3I1,3W0,3W1",
    };
    char buf[256];
    psched_schedule *s = generate_ok("zb-h1", 4, 0, 2);
    if (!s)
        return;
    for (uint32_t d = 0; d < 4; d++) {
        tg_device_text(s, d, buf, sizeof buf);
        CHECK_STR(buf, expected[d]);
    }
    psched_schedule_destroy(s);
}

static void test_zb_h1_span_is_3m_plus_p_minus_1(void)
{
    /* m(F+B+W) + (p-1)(F+B-W) with F = B = W = 1. */
    for (uint32_t p = 1; p <= 6; p++) {
        for (uint32_t m = p; m <= 4 * p; m++) {
            psched_schedule *s = generate_ok("zb-h1", p, 0, m);
            psched_report *r = simulate_ok(s);
            if (r)
                CHECK_EQ_DBL(psched_report_span(r), 3.0 * m + (p - 1));
            psched_report_destroy(r);
            psched_schedule_destroy(s);
        }
    }
}

static void test_zb_h1_memory_is_min_m_p(void)
{
    for (uint32_t p = 1; p <= 6; p++) {
        for (uint32_t m = 1; m <= 3 * p; m++) {
            psched_schedule *s = generate_ok("zb-h1", p, 0, m);
            psched_report *r = simulate_ok(s);
            for (uint32_t d = 0; r && d < p; d++)
                CHECK_EQ_DBL(device_peak(r, d), m < p ? m : p);
            psched_report_destroy(r);
            psched_schedule_destroy(s);
        }
    }
}

/* ---- zb-h2 ---- */

/* The zero-bubble authors' order: get_hand_schedule(p, n, ..., warmup_c=2)
 * of sail-sg/zero-bubble-pipeline-parallelism (branch arxiv,
 * megatron/core/pipeline_parallel/efficiency.py), transcribed by hand by
 * running its loop on paper. Device d: warmup = 2(p-1-d) forwards; then
 * for round i = 0..n-1: F if warmup + i < n, B, W if warmup + i >=
 * 2(p-1); then 2(p-1) - warmup more W. */
static void check_h2(uint32_t p, uint32_t m, const char *const *expected)
{
    char buf[1024];
    psched_schedule *s = generate_ok("zb-h2", p, 0, m);
    if (!s)
        return;
    for (uint32_t d = 0; d < p; d++) {
        tg_device_text(s, d, buf, sizeof buf);
        CHECK_STR(buf, expected[d]);
    }
    CHECK_OK(psched_validate(s));
    psched_schedule_destroy(s);
}

static void test_zb_h2_order_p4_m8_is_the_authors(void)
{
    static const char *const expected[] = {
        /* warmup 6: F in rounds 0-1, W in every round, no W after */
        "0F0,0F1,0F2,0F3,0F4,0F5,0F6,0I0,0W0,0F7,0I1,0W1,0I2,0W2,0I3,0W3,0I4,0W4,0I5,0W5,"
        "0I6,0W6,0I7,0W7",
        /* warmup 4: F in rounds 0-3, W from round 2, 2 W after (op 6 is 1F5) */
        "1F0,1F1,1F2,1F3,1F4,1I0,1F5,1I1,1F6,1I2,1W0,1F7,1I3,1W1,1I4,1W2,1I5,1W3,1I6,1W4,"
        "1I7,1W5,1W6,1W7",
        /* warmup 2: F in rounds 0-5, W from round 4, 4 W after */
        "2F0,2F1,2F2,2I0,2F3,2I1,2F4,2I2,2F5,2I3,2F6,2I4,2W0,2F7,2I5,2W1,2I6,2W2,2I7,2W3,"
        "2W4,2W5,2W6,2W7",
        /* warmup 0: F in every round, W from round 6, 6 W after */
        "3F0,3I0,3F1,3I1,3F2,3I2,3F3,3I3,3F4,3I4,3F5,3I5,3F6,3I6,3W0,3F7,3I7,3W1,3W2,3W3,"
        "3W4,3W5,3W6,3W7",
    };
    check_h2(4, 8, expected);
}

static void test_zb_h2_order_p3_m6(void)
{
    static const char *const expected[] = {
        /* warmup 4: F in rounds 0-1, W in every round */
        "0F0,0F1,0F2,0F3,0F4,0I0,0W0,0F5,0I1,0W1,0I2,0W2,0I3,0W3,0I4,0W4,0I5,0W5",
        /* warmup 2: F in rounds 0-3, W from round 2, 2 W after */
        "1F0,1F1,1F2,1I0,1F3,1I1,1F4,1I2,1W0,1F5,1I3,1W1,1I4,1W2,1I5,1W3,1W4,1W5",
        /* warmup 0: F in every round, W from round 4, 4 W after */
        "2F0,2I0,2F1,2I1,2F2,2I2,2F3,2I3,2F4,2I4,2W0,2F5,2I5,2W1,2W2,2W3,2W4,2W5",
    };
    check_h2(3, 6, expected);
}

static void test_zb_h2_zero_bubble_from_2p_minus_1(void)
{
    /* Every device is busy from its first op to its last: span = 3m, and
     * device d starts at d (forwards chain) so the makespan is 3m + p - 1. */
    for (uint32_t p = 1; p <= 6; p++) {
        for (uint32_t m = 2 * p - 1; m <= 4 * p; m++) {
            psched_schedule *s = generate_ok("zb-h2", p, 0, m);
            psched_report *r = simulate_ok(s);
            if (r) {
                CHECK_EQ_DBL(psched_report_span(r), 3.0 * m);
                CHECK_EQ_DBL(psched_report_makespan(r), 3.0 * m + p - 1);
            }
            psched_report_destroy(r);
            psched_schedule_destroy(s);
        }
    }
}

static void test_zb_h2_memory_is_min_m_2p_minus_1(void)
{
    /* min(m, 2p-1) forwards run ahead of the first W on every device, and
     * each later round frees one (W) for the one it allocates (F). */
    for (uint32_t p = 1; p <= 6; p++) {
        for (uint32_t m = 1; m <= 4 * p; m++) {
            psched_schedule *s = generate_ok("zb-h2", p, 0, m);
            psched_report *r = simulate_ok(s);
            double want = m < 2 * p - 1 ? m : 2 * p - 1;
            for (uint32_t d = 0; r && d < p; d++)
                CHECK_EQ_DBL(device_peak(r, d), want);
            psched_report_destroy(r);
            psched_schedule_destroy(s);
        }
    }
}

static void test_zb_h1_h2_validate_p1_to_8(void)
{
    static const char *const names[] = {"zb-h1", "zb-h2"};
    for (size_t i = 0; i < 2; i++) {
        for (uint32_t p = 1; p <= 8; p++) {
            for (uint32_t m = 1; m <= 4 * p; m++) {
                psched_schedule *s = generate_ok(names[i], p, 0, m);
                if (!s)
                    continue;
                CHECK_EQ_INT(psched_schedule_total_ops(s), 3 * (size_t)p * m);
                CHECK_OK(psched_validate(s));
                psched_schedule_destroy(s);
            }
        }
    }
}

static void test_zb_h_reject_chunks_2(void)
{
    psched_schedule *s = NULL;
    CHECK_EQ_INT(tg_generate("zb-h1", 4, 2, 8, NO_GROUP, &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "chunks (2) must be 1 for zb-h1");
    CHECK_EQ_INT(tg_generate("zb-h2", 4, 2, 8, NO_GROUP, &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "chunks (2) must be 1 for zb-h2");
    CHECK(s == NULL);
}

/* ---- interleaved-zb ---- */

static void test_interleaved_zb_matches_pytorch_p2_v2_m8(void)
{
    /* reference/pytorch/zb1p_2rank_2stagep_compute.csv, verbatim. */
    static const char *const rows[] = {
        "0F0,0F1,2F0,,2F1,2I0,2W0,0F2,2I1,2W1,0F3,0I0,0W0,2F2,0I1,0W1,2F3,2I2,2W2,0F4,2I3,2W3,"
        "0F5,0I2,0W2,2F4,0I3,0W3,2F5,2I4,2W4,0F6,2I5,2W5,0F7,0I4,0W4,2F6,0I5,0W5,2F7,2I6,2W6,"
        "2I7,2W7,0I6,0W6,0I7,0W7",
        ",1F0,1F1,3F0,3I0,3F1,3I1,3W0,1F2,1I0,3W1,1F3,1I1,1W0,3F2,3I2,1W1,3F3,3I3,3W2,1F4,1I2,"
        "3W3,1F5,1I3,1W2,3F4,3I4,1W3,3F5,3I5,3W4,1F6,1I4,3W5,1F7,1I5,1W4,3F6,3I6,1W5,3F7,3I7,"
        "3W6,1I6,3W7,1I7,1W6,1W7",
    };
    char got[2048], want[2048];
    psched_schedule *s = generate_ok("interleaved-zb", 2, 2, 8);
    if (!s)
        return;
    CHECK_EQ_INT(psched_schedule_devices(s), 2);
    for (uint32_t d = 0; d < 2; d++) {
        strip_idle(rows[d], want, sizeof want);
        tg_device_text(s, d, got, sizeof got);
        CHECK_STR(got, want);
    }
    psched_schedule_destroy(s);
}

static void test_interleaved_zb_default_chunks_is_2(void)
{
    psched_schedule *s = generate_ok("interleaved-zb", 2, 0, 8);
    if (!s)
        return;
    CHECK_EQ_INT(psched_plan_chunks(psched_schedule_plan(s)), 2);
    psched_schedule_destroy(s);
}

static void test_interleaved_zb_last_device_p4_m8_prefix(void)
{
    /* By hand, device 3 of p=4, v=2, m=8 (N = 4): warm-up 0 + 1*4 forwards
     * (chunk 0 of micro-batches 0..3), then steps (F, I) without W for
     * j < 3, then (F, I, W oldest): the backward table starts on chunk 1. */
    static const char *const want =
        "3F0,3F1,3F2,3F3,7F0,7I0,7F1,7I1,7F2,7I2,7F3,7I3,7W0,3F4,3I0,7W1,3F5,3I1,7W2,";
    char got[2048];
    psched_schedule *s = generate_ok("interleaved-zb", 4, 2, 8);
    if (!s)
        return;
    tg_device_text(s, 3, got, sizeof got);
    CHECK(strncmp(got, want, strlen(want)) == 0);
    if (strncmp(got, want, strlen(want)) != 0)
        fprintf(stderr, "  got: %s\n", got);
    psched_schedule_destroy(s);
}

static void test_interleaved_zb_validates(void)
{
    for (uint32_t p = 1; p <= 8; p++) {
        for (uint32_t v = 2; v <= 4; v++) {
            for (uint32_t m = p; m <= 4 * p; m++) {
                psched_schedule *s = NULL;
                if (tg_generate("interleaved-zb", p, v, m, NO_GROUP, &s) != PSCHED_OK)
                    continue; /* default N with m not a multiple of rounds */
                CHECK_EQ_INT(psched_schedule_total_ops(s), 3 * (size_t)p * v * m);
                CHECK_OK(psched_validate(s));
                psched_schedule_destroy(s);
            }
        }
    }
    /* An explicit group size with a remainder group (10 = 4 + 4 + 2, p = 2). */
    psched_schedule *s = NULL;
    CHECK_OK(tg_generate("interleaved-zb", 2, 3, 10, 4, &s));
    if (s)
        CHECK_OK(psched_validate(s));
    psched_schedule_destroy(s);
}

/* m < p: one round of group size m, as PyTorch runs it. The rows are
 * PyTorch 2.13.0's own ScheduleInterleavedZeroBubble(stages,
 * m).pipeline_order, built with stand-in stages (group_size p, the rank's v
 * stage indices, submod None) and printed with str(action), idle steps
 * dropped; tests/test_pytorch_orders.py compares all 84 configurations with
 * m < p at p 2..8, v 2..4 against torch itself. */
static void test_interleaved_zb_m_below_p_matches_pytorch(void)
{
    static const char *const p4_v2_m3[] = {
        "0F0,0F1,0F2,4F0,4F1,4F2,4I0,4W0,4I1,4W1,4I2,4W2,0I0,0W0,0I1,0W1,0I2,0W2",
        "1F0,1F1,1F2,5F0,5F1,5F2,5I0,5I1,5W0,5I2,5W1,1I0,5W2,1I1,1W0,1I2,1W1,1W2",
        "2F0,2F1,2F2,6F0,6F1,6I0,6F2,6I1,6I2,6W0,2I0,6W1,2I1,6W2,2I2,2W0,2W1,2W2",
        "3F0,3F1,3F2,7F0,7I0,7F1,7I1,7F2,7I2,3I0,7W0,3I1,7W1,3I2,7W2,3W0,3W1,3W2",
    };
    static const char *const p3_v3_m1[] = {
        "0F0,3F0,6F0,6I0,6W0,3I0,3W0,0I0,0W0",
        "1F0,4F0,7F0,7I0,4I0,7W0,1I0,4W0,1W0",
        "2F0,5F0,8F0,8I0,5I0,2I0,8W0,5W0,2W0",
    };
    char buf[512];
    psched_schedule *s = NULL;
    CHECK_OK(tg_generate("interleaved-zb", 4, 2, 3, NO_GROUP, &s));
    for (uint32_t d = 0; s && d < 4; d++) {
        tg_device_text(s, d, buf, sizeof buf);
        CHECK_STR(buf, p4_v2_m3[d]);
    }
    if (s)
        CHECK_OK(psched_validate(s));
    psched_schedule_destroy(s);
    CHECK_OK(tg_generate("interleaved-zb", 3, 3, 1, NO_GROUP, &s));
    for (uint32_t d = 0; s && d < 3; d++) {
        tg_device_text(s, d, buf, sizeof buf);
        CHECK_STR(buf, p3_v3_m1[d]);
    }
    if (s)
        CHECK_OK(psched_validate(s));
    psched_schedule_destroy(s);
}

static void test_interleaved_zb_check_errors(void)
{
    psched_schedule *s = NULL;
    CHECK_EQ_INT(tg_generate("interleaved-zb", 4, 1, 8, NO_GROUP, &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "chunks (1) must be >= 2 for interleaved-zb");
    CHECK_EQ_INT(tg_generate("interleaved-zb", 4, 2, 8, 3, &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "group-size (3) must be >= devices (4)");
    CHECK_EQ_INT(tg_generate("interleaved-zb", 4, 2, 8, 9, &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "group-size (9) must be <= microbatches (8)");
    /* 10 mod 4 = 2: a last group of 2 cannot fill 4 devices. */
    CHECK_EQ_INT(tg_generate("interleaved-zb", 4, 2, 10, 4, &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "microbatches (10) mod group-size (4) = 2");
    /* Default N: rounds = 9 div 4 = 2 does not divide 9. */
    CHECK_EQ_INT(tg_generate("interleaved-zb", 4, 2, 9, NO_GROUP, &s), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "microbatches (9) must be a multiple of rounds (2)");
    CHECK(s == NULL);
}

int main(void)
{
    RUN(test_zb_h1_matches_paper_example_p4_m8);
    RUN(test_zb_h1_small_m_counts);
    RUN(test_zb_h1_span_is_3m_plus_p_minus_1);
    RUN(test_zb_h1_memory_is_min_m_p);
    RUN(test_zb_h2_order_p4_m8_is_the_authors);
    RUN(test_zb_h2_order_p3_m6);
    RUN(test_zb_h2_zero_bubble_from_2p_minus_1);
    RUN(test_zb_h2_memory_is_min_m_2p_minus_1);
    RUN(test_zb_h1_h2_validate_p1_to_8);
    RUN(test_zb_h_reject_chunks_2);
    RUN(test_interleaved_zb_matches_pytorch_p2_v2_m8);
    RUN(test_interleaved_zb_default_chunks_is_2);
    RUN(test_interleaved_zb_last_device_p4_m8_prefix);
    RUN(test_interleaved_zb_validates);
    RUN(test_interleaved_zb_m_below_p_matches_pytorch);
    RUN(test_interleaved_zb_check_errors);
    TEST_MAIN_END();
}
