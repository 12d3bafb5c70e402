/* Formats and hashing: PyTorch CSV export/import against the shared golden
 * files, the ASCII grid and the JSON export against hand-written text, and
 * the schedule hash against XXH3 of the documented encoding built by hand.
 * argv[1]: directory of the golden files (reference/ with pytorch/ and
 * torchtitan/ inside). */
#include "testsched.h"
#include "testutil.h"
#include "textcheck.h"

#include <xxhash.h>

static const char *ref_dir = "tests/data/reference";

static char *read_ref(const char *name, size_t *length)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ref_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "# missing data file %s: cannot open it\n", path);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[4096];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = 2 * (len + n + 1);
            text = realloc(text, cap);
        }
        memcpy(text + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!text)
        text = calloc(1, 1);
    text[len] = '\0';
    *length = len;
    return text;
}

/* The file with its empty (idle) cells removed: what our export writes. */
static char *strip_idle(const char *text)
{
    char *out = malloc(strlen(text) + 1), *w = out;
    const char *p = text;
    while (*p) {
        int first = 1;
        while (*p && *p != '\n') {
            const char *end = p;
            while (*end && *end != ',' && *end != '\n')
                end++;
            if (end > p) {
                if (!first)
                    *w++ = ',';
                memcpy(w, p, (size_t)(end - p));
                w += end - p;
                first = 0;
            }
            p = *end == ',' ? end + 1 : end;
        }
        *w++ = '\n';
        if (*p == '\n')
            p++;
    }
    *w = '\0';
    return out;
}

static char *export_text(const psched_schedule *s, const psched_report *r, psched_format format,
                         uint32_t flags)
{
    char *text = NULL;
    size_t len = 0;
    CHECK_OK(psched_export(s, r, format, flags, &text, &len));
    if (text)
        CHECK_EQ_INT(len, strlen(text));
    return text;
}

static uint64_t hash_of(const psched_schedule *s)
{
    uint64_t h = 0;
    CHECK_OK(psched_schedule_hash(s, &h));
    return h;
}

/* ------------------------------------------------------------ CSV export */

static void test_csv_export_writes_pytorch_action_text(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0F1,0I0,0W0,0B1", "1F0,1I0,1F1,1W0,1B1"};
    psched_schedule *s = ts_build(plan, rows);
    char *text = export_text(s, NULL, PSCHED_FORMAT_CSV, 0);
    CHECK_STR(text, "0F0,0F1,0I0,0W0,0B1\n1F0,1I0,1F1,1W0,1B1\n");
    psched_free(text);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_csv_export_writes_overlapped_pair(void)
{
    psched_plan *plan = ts_plan(2, 2, 2, PSCHED_PLACEMENT_VSHAPE);
    const char *rows[] = {"0F0,3F0;0B1,3W0", "1F0,2F0"};
    psched_schedule *s = ts_build(plan, rows);
    char *text = export_text(s, NULL, PSCHED_FORMAT_CSV, 0);
    CHECK_STR(text, "0F0,(3F0;0B1)OVERLAP_F_B,3W0\n1F0,2F0\n");
    psched_free(text);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_csv_export_writes_comm_ops(void)
{
    psched_plan *plan = ts_plan(2, 1, 1, PSCHED_PLACEMENT_LOOP);
    psched_builder *b;
    psched_schedule *s = NULL;
    CHECK_OK(psched__builder_create(plan, &b));
    psched_builder_append(b, 0, PSCHED_OP_F, 0, 0, 0);
    psched_builder_append(b, 0, PSCHED_OP_SEND_F, 0, 0, PSCHED_OP_BATCH_NEXT);
    psched_builder_append(b, 0, PSCHED_OP_RECV_B, 0, 0, 0);
    psched_builder_append(b, 1, PSCHED_OP_RECV_F, 1, 0, 0);
    psched_builder_append(b, 1, PSCHED_OP_SEND_B, 1, 0, 0);
    CHECK_OK(psched__builder_finish(b, plan, "test", &s));
    psched__builder_destroy(b);
    /* a batched group is one cell (pipesched's extension), in every CSV
     * format but PyTorch's own dialect */
    char *text = export_text(s, NULL, PSCHED_FORMAT_CSV, 0);
    CHECK_STR(text, "0F0,[0SEND_F0;0RECV_B0]BATCH\n1RECV_F0,1SEND_B0\n");
    psched_free(text);
    text = export_text(s, NULL, PSCHED_FORMAT_CSV_COMMS, 0);
    CHECK_STR(text, "0F0,[0SEND_F0;0RECV_B0]BATCH\n1RECV_F0,1SEND_B0\n");
    psched_free(text);
    text = export_text(s, NULL, PSCHED_FORMAT_CSV_COMMS_PYTORCH, 0);
    CHECK_STR(text, "0F0,0SEND_F0,0RECV_B0\n1RECV_F0,1SEND_B0\n");
    psched_free(text);
    psched_schedule_destroy(s); /* owns plan */
}

static void test_csv_empty_device_is_an_empty_row_both_ways(void)
{
    psched_plan *plan = ts_plan(2, 1, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0B0", ""};
    psched_schedule *s = ts_build(plan, rows), *back = NULL;
    char *text = export_text(s, NULL, PSCHED_FORMAT_CSV, 0);
    CHECK_STR(text, "0F0,0B0\n\n");
    CHECK_OK(psched_import_csv(text, strlen(text), plan, &back));
    CHECK_EQ_INT(psched_schedule_devices(back), 2);
    CHECK_EQ_INT(psched_schedule_op_count(back, 0), 2);
    CHECK_EQ_INT(psched_schedule_op_count(back, 1), 0);
    CHECK(hash_of(back) == hash_of(s));
    psched_free(text);
    psched_schedule_destroy(back);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* ------------------------------------------------ CSV import of goldens */

typedef struct golden {
    const char *file;
    uint32_t devices, microbatches, chunks;
    psched_placement placement;
    size_t ops[4];
    int validate;
} golden;

/* Op counts per row counted in the files: a cell is one op, a
 * (a;b)OVERLAP_F_B cell two. */
static const golden goldens[] = {
    {"pytorch/dualpipev_4rank_10mb.csv", 4, 10, 2, PSCHED_PLACEMENT_VSHAPE, {47, 46, 45, 44}, 1},
    {"pytorch/zb1p_2rank_2stagep_compute.csv", 2, 8, 2, PSCHED_PLACEMENT_LOOP, {48, 48}, 1},
    {"pytorch/zb1p_2rank_2stagep_comms.csv", 2, 8, 2, PSCHED_PLACEMENT_LOOP, {80, 96}, 0},
    {"torchtitan/custom_schedule.csv", 2, 8, 2, PSCHED_PLACEMENT_LOOP, {48, 48}, 1},
};

static void check_golden(const golden *g)
{
    size_t len = 0;
    char *text = read_ref(g->file, &len);
    CHECK(text != NULL);
    if (!text)
        return;
    psched_schedule *s = NULL, *again = NULL;
    CHECK_OK(psched_import_csv(text, len, NULL, &s));
    if (!s) {
        free(text);
        return;
    }
    const psched_plan *plan = psched_schedule_plan(s);
    CHECK_STR(psched_schedule_name(s), "csv");
    CHECK_EQ_INT(psched_schedule_devices(s), g->devices);
    CHECK_EQ_INT(psched_plan_microbatches(plan), g->microbatches);
    CHECK_EQ_INT(psched_plan_chunks(plan), g->chunks);
    CHECK_EQ_INT(psched_plan_chains(plan), 1);
    CHECK_EQ_INT(psched_plan_placement(plan), g->placement);
    for (uint32_t d = 0; d < g->devices; d++)
        CHECK_EQ_INT(psched_schedule_op_count(s, d), g->ops[d]);
    if (g->validate)
        CHECK_OK(psched_validate(s));

    char *out = export_text(s, NULL, PSCHED_FORMAT_CSV, 0);
    char *want = strip_idle(text);
    CHECK_STR(out, want);
    if (out) {
        CHECK_OK(psched_import_csv(out, strlen(out), NULL, &again));
        if (again)
            CHECK(hash_of(again) == hash_of(s));
    }
    psched_schedule_destroy(again);
    psched_free(out);
    free(want);
    free(text);
    psched_schedule_destroy(s);
}

static void test_csv_import_of_golden_files(void)
{
    for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++)
        check_golden(&goldens[i]);
}

static void test_csv_import_dualpipev_pairs_and_splits(void)
{
    size_t len = 0;
    char *text = read_ref("pytorch/dualpipev_4rank_10mb.csv", &len);
    CHECK(text != NULL);
    if (!text)
        return;
    psched_schedule *s = NULL;
    CHECK_OK(psched_import_csv(text, len, NULL, &s));
    if (!s) {
        free(text);
        return;
    }
    /* device 0: ... 7F3, (0F7;7B3)OVERLAP_F_B at ops 17-18 */
    psched_op ops[2];
    CHECK_OK(psched_schedule_ops(s, 0, 17, 2, ops, sizeof ops[0]));
    CHECK_EQ_INT(ops[0].kind, PSCHED_OP_F);
    CHECK_EQ_INT(ops[0].stage, 0);
    CHECK_EQ_INT(ops[0].microbatch, 7);
    CHECK_EQ_INT(ops[0].flags, PSCHED_OP_OVERLAP_NEXT);
    CHECK_EQ_INT(ops[1].kind, PSCHED_OP_BW);
    CHECK_EQ_INT(ops[1].stage, 7);
    CHECK_EQ_INT(ops[1].microbatch, 3);
    CHECK_EQ_INT(ops[1].chunk, 1);
    CHECK_EQ_INT(ops[1].flags, 0);
    /* vshape: stage 7 on device 0, stage 4 on device 3 */
    CHECK_EQ_INT(psched_plan_stage_device(psched_schedule_plan(s), 7), 0);
    CHECK_EQ_INT(psched_plan_stage_device(psched_schedule_plan(s), 4), 3);
    /* device 0: 7I0 is op 8, a backward for inputs (PyTorch I) */
    CHECK_OK(psched_schedule_ops(s, 0, 8, 1, ops, sizeof ops[0]));
    CHECK_EQ_INT(ops[0].kind, PSCHED_OP_B);
    psched_schedule_destroy(s);
    free(text);
}

static void test_csv_import_comm_ops(void)
{
    size_t len = 0;
    char *text = read_ref("pytorch/zb1p_2rank_2stagep_comms.csv", &len);
    CHECK(text != NULL);
    if (!text)
        return;
    psched_schedule *s = NULL;
    CHECK_OK(psched_import_csv(text, len, NULL, &s));
    if (!s) {
        free(text);
        return;
    }
    /* device 1 starts 1RECV_F0,1F0,1SEND_F0 */
    psched_op ops[3];
    CHECK_OK(psched_schedule_ops(s, 1, 0, 3, ops, sizeof ops[0]));
    CHECK_EQ_INT(ops[0].kind, PSCHED_OP_RECV_F);
    CHECK_EQ_INT(ops[1].kind, PSCHED_OP_F);
    CHECK_EQ_INT(ops[2].kind, PSCHED_OP_SEND_F);
    CHECK_EQ_INT(ops[2].stage, 1);
    psched_schedule_destroy(s);
    free(text);
}

/* --------------------------------------------------- CSV import: syntax */

static void check_parse_error(const char *text, const char *where, const char *cell)
{
    psched_schedule *s = (psched_schedule *)&s; /* must come back NULL */
    psched_status st = psched_import_csv(text, strlen(text), NULL, &s);
    CHECK_EQ_INT(st, PSCHED_EPARSE);
    CHECK(s == NULL);
    CHECK_CONTAINS(psched_last_error(), where);
    if (cell)
        CHECK_CONTAINS(psched_last_error(), cell);
}

static void test_csv_import_rejects_partial_actions_with_line_and_column(void)
{
    /* line 2 after a valid line; the column is that of the first byte that
     * breaks the action (cells start at column 5) */
    check_parse_error("0F0,1F0\n1F0,0BW1\n", "line 2 column 7", "\"0BW1\"");
    check_parse_error("0F0,1F0\n1F0,0F\n", "line 2 column 7", "\"0F\"");
    check_parse_error("0F0,1F0\n1F0,x\n", "line 2 column 5", "\"x\"");
    check_parse_error("0F0,1F0\n1F0,(0F1;)OVERLAP_F_B\n", "line 2 column 10",
                      "\"(0F1;)OVERLAP_F_B\"");
}

static void test_csv_import_rejects_other_malformed_input(void)
{
    check_parse_error("0F0\n0F99999999999\n", "line 2 column 3", "32 bits");
    check_parse_error("0F0\n0UNSHARD1\n", "line 2 column 2", "UNSHARD is not supported");
    check_parse_error("0RESHARD1\n", "line 1 column 2", "RESHARD is not supported");
    check_parse_error("0F0\n0F1x\n", "line 2 column 4", "\"0F1x\"");
    check_parse_error("0F 0\n", "line 1 column 3", "\"0F 0\"");
    check_parse_error("(0F1;1B0)\n", "line 1 column 9", "OVERLAP_F_B");
    check_parse_error("(0F1,1B0)OVERLAP_F_B\n", "line 1 column 5", "\"(0F1\"");
    check_parse_error("(0F1;1SEND_B0)OVERLAP_F_B\n", "line 1 column 1", "compute");
    check_parse_error("\"0F0\"\n", "line 1 column 1", NULL);
    check_parse_error("0F0\r\r\n", "line 1 column 4", NULL);
    check_parse_error("", "empty input", NULL);
    const char nul[] = "0F0\n1F\0" "0\n";
    psched_schedule *s = NULL;
    CHECK_EQ_INT(psched_import_csv(nul, sizeof nul - 1, NULL, &s), PSCHED_EPARSE);
    CHECK_CONTAINS(psched_last_error(), "line 2 column 3: NUL byte");
}

static void test_csv_import_accepts_idle_cells_spaces_and_crlf(void)
{
    const char *text = " 0F0 ,, 0B0\t\r\n,1F0,1B0,\r\n";
    psched_schedule *s = NULL;
    CHECK_OK(psched_import_csv(text, strlen(text), NULL, &s));
    if (!s)
        return;
    CHECK_EQ_INT(psched_schedule_devices(s), 2);
    CHECK_EQ_INT(psched_schedule_op_count(s, 0), 2);
    CHECK_EQ_INT(psched_schedule_op_count(s, 1), 2);
    CHECK_EQ_INT(psched_plan_microbatches(psched_schedule_plan(s)), 1);
    CHECK_EQ_INT(psched_plan_chunks(psched_schedule_plan(s)), 1);
    char *out = export_text(s, NULL, PSCHED_FORMAT_CSV, 0);
    CHECK_STR(out, "0F0,0B0\n1F0,1B0\n");
    psched_free(out);
    psched_schedule_destroy(s);
    /* no final newline: same rows */
    CHECK_OK(psched_import_csv("0F0,0B0\n1F0,1B0", 15, NULL, &s));
    CHECK_EQ_INT(psched_schedule_devices(s), 2);
    psched_schedule_destroy(s);
}

/* ------------------------------------- CSV: two chains, BOM, CR, quoting */

static psched_schedule *dualpipe(uint32_t p, uint32_t m)
{
    psched_plan *plan = tu_plan(p, m, 0);
    psched_schedule *s = NULL;
    if (!plan)
        return NULL;
    CHECK_OK(psched_generate(plan, "dualpipe", &s));
    psched_plan_destroy(plan);
    return s;
}

static void test_csv_dualpipe_round_trip_keeps_two_chains(void)
{
    /* DualPipe runs two chains of p stages each (micro-batch numbers count
     * per chain); without the header the importer reads one V of 2p stages,
     * where stage p follows stage p-1. */
    const uint32_t shapes[][2] = {{2, 4}, {4, 8}, {6, 12}};
    for (size_t k = 0; k < 3; k++) {
        psched_schedule *s = dualpipe(shapes[k][0], shapes[k][1]), *back = NULL;
        if (!s)
            continue;
        char *text = export_text(s, NULL, PSCHED_FORMAT_CSV, 0);
        CHECK(text && strncmp(text, "# pipesched: chains=2\n", 22) == 0);
        CHECK_OK(psched_import_csv(text, strlen(text), NULL, &back));
        if (back) {
            const psched_plan *bp = psched_schedule_plan(back);
            CHECK_EQ_INT(psched_plan_chains(bp), 2);
            CHECK_EQ_INT(psched_plan_microbatches(bp), shapes[k][1]);
            CHECK_EQ_INT(psched_plan_chunks(bp), 2);
            CHECK_OK(psched_validate(back));
            uint64_t h1 = 0, h2 = 0;
            CHECK_OK(psched_schedule_hash(s, &h1));
            CHECK_OK(psched_schedule_hash(back, &h2));
            CHECK(h1 == h2);
        }
        psched_schedule_destroy(back);
        /* the same rows without the header: one chain, which breaks */
        if (text && k == 0) {
            CHECK_OK(psched_import_csv(text + 22, strlen(text + 22), NULL, &back));
            if (back) {
                CHECK_EQ_INT(psched_plan_chains(psched_schedule_plan(back)), 1);
                CHECK_EQ_INT(psched_validate(back), PSCHED_EINVALID);
            }
            psched_schedule_destroy(back);
            back = NULL;
            /* ... unless a plan says two chains (the import option) */
            CHECK_OK(psched_import_csv(text + 22, strlen(text + 22), psched_schedule_plan(s),
                                       &back));
            if (back)
                CHECK_OK(psched_validate(back));
            psched_schedule_destroy(back);
        }
        psched_free(text);
        psched_schedule_destroy(s);
    }
}

static void test_csv_chains_header_is_checked(void)
{
    psched_schedule *s = NULL;
    /* chains=1 is the default, spelled out */
    CHECK_OK(psched_import_csv("# pipesched: chains=1\n0F0,0B0\n", 30, NULL, &s));
    psched_schedule_destroy(s);
    s = NULL;
    psched_plan *one = ts_plan(1, 1, 1, PSCHED_PLACEMENT_LOOP);
    const char *text = "# pipesched: chains=2\n0F0,0B0\n";
    CHECK_EQ_INT(psched_import_csv(text, strlen(text), one, &s), PSCHED_EINVAL);
    CHECK_STR(psched_last_error(), "the file's header says chains=2 but the plan has 1 chain");
    check_parse_error("# pipesched: chains=2 \n0F0\n", "line 1 column 1", "is not the header");
    check_parse_error("# a comment\n0F0\n", "line 1 column 1", "\"# a comment\" is not the header");
    check_parse_error("0F0\n# pipesched: chains=2\n", "line 2 column 1", "only as the first line");
    psched_plan_destroy(one);
}

static void test_csv_import_skips_a_leading_bom(void)
{
    /* as --costs-file does: editors on Windows start UTF-8 files with EF BB BF */
    const char *text = "\xef\xbb\xbf" "0F0,0B0\n1F0,1B0\n";
    psched_schedule *s = NULL;
    CHECK_OK(psched_import_csv(text, strlen(text), NULL, &s));
    if (s) {
        CHECK_EQ_INT(psched_schedule_devices(s), 2);
        char *out = export_text(s, NULL, PSCHED_FORMAT_CSV, 0);
        CHECK_STR(out, "0F0,0B0\n1F0,1B0\n");
        psched_free(out);
    }
    psched_schedule_destroy(s);
    /* only at the very start: elsewhere it is an escaped, visible byte sequence */
    check_parse_error("0F0\n\xef\xbb\xbf" "1F0\n", "line 2 column 1",
                      "\"\\xef\\xbb\\xbf1F0\" is not a whole action");
}

static void test_csv_cr_only_line_endings_say_why(void)
{
    check_parse_error("0F0,0B0\r1F0,1B0\r", "line 1 column 8: carriage return inside a line; "
                      "rows end with \"\\n\" or \"\\r\\n\" (CR-only line endings are not read)",
                      NULL);
}

static void test_csv_messages_escape_bytes_and_stay_short(void)
{
    /* control characters, an invalid UTF-8 byte, a zero-width space and
     * quotes show as \xNN; a long cell is cut */
    check_parse_error("0F0,0\x01\n", "line 1 column 6", "\"0\\x01\" is not a whole action");
    check_parse_error("0F0,0\x1b[31mF1\n", "line 1 column 6", "\"0\\x1b[31mF1\"");
    check_parse_error("0F0,0\xe2\x80\x8b" "F1\n", "line 1 column 6", "\"0\\xe2\\x80\\x8bF1\"");
    check_parse_error("0F0,0\"\\\n", "line 1 column 6", "\"0\\x22\\x5c\"");
    char big[2000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (char)(0x80 + i % 0x40);
    memcpy(big, "0F0,0", 5);
    psched_schedule *s = NULL;
    CHECK_EQ_INT(psched_import_csv(big, sizeof big, NULL, &s), PSCHED_EPARSE);
    const char *msg = psched_last_error();
    CHECK(strlen(msg) < 300);
    CHECK_CONTAINS(msg, "...\" is not a whole action");
    for (const char *c = msg; *c; c++)
        CHECK((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f);
    /* an unsupported PyTorch action quotes its cell the same way */
    check_parse_error("0F0\n0UNSHARD1\x7f\n", "line 2 column 2", "\"0UNSHARD1\\x7f\"");
}

/* --------------------------------------------------- CSV import: shape */

static void test_csv_import_infers_custom_placement(void)
{
    const char *text = "0F0,1F0,1B0,0B0\n2F0,3F0,3B0,2B0\n";
    psched_schedule *s = NULL;
    CHECK_OK(psched_import_csv(text, strlen(text), NULL, &s));
    if (!s)
        return;
    const psched_plan *plan = psched_schedule_plan(s);
    CHECK_EQ_INT(psched_plan_placement(plan), PSCHED_PLACEMENT_CUSTOM);
    CHECK_EQ_INT(psched_plan_chunks(plan), 2);
    CHECK_EQ_INT(psched_plan_stage_device(plan, 0), 0);
    CHECK_EQ_INT(psched_plan_stage_device(plan, 1), 0);
    CHECK_EQ_INT(psched_plan_stage_device(plan, 2), 1);
    CHECK_EQ_INT(psched_plan_stage_device(plan, 3), 1);
    CHECK_EQ_INT(psched_plan_stage_chunk(plan, 3), 1);
    psched_schedule_destroy(s);
}

static void check_shape_error(const char *text, const psched_plan *plan, const char *needle)
{
    psched_schedule *s = NULL;
    CHECK_EQ_INT(psched_import_csv(text, strlen(text), plan, &s), PSCHED_EINVAL);
    CHECK(s == NULL);
    CHECK_CONTAINS(psched_last_error(), needle);
}

static void test_csv_import_rejects_inconsistent_shapes(void)
{
    /* stage 0 on two devices */
    check_shape_error("0F0,1F0\n0B0,2F0,3F0\n", NULL, "line 2 column 1: 0B0 puts stage 0 on "
                                                      "device 1");
    /* 3 stages on 2 devices */
    check_shape_error("0F0\n1F0,2F0\n", NULL, "line 2 column 5: 2F0");
    /* stages 0,1,2 on device 0 and 3 on device 1: neither loop nor vshape, uneven */
    check_shape_error("0F0,1F0,2F0\n3F0\n", NULL, "device 0 (line 1) runs 3 stages");
    check_shape_error("\n", NULL, "no action");
}

static void test_csv_import_checks_the_file_against_a_plan(void)
{
    psched_plan *plan = ts_plan(2, 8, 2, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_cost(plan, 2, 3, 4);
    size_t len = 0;
    char *text = read_ref("torchtitan/custom_schedule.csv", &len);
    CHECK(text != NULL);
    if (!text) {
        psched_plan_destroy(plan);
        return;
    }
    psched_schedule *s = NULL;
    CHECK_OK(psched_import_csv(text, len, plan, &s));
    if (s) {
        double f = 0;
        CHECK_OK(psched_plan_stage_cost(psched_schedule_plan(s), 3, &f, NULL, NULL));
        CHECK_EQ_DBL(f, 2);
        psched_schedule_destroy(s);
    }
    psched_plan_set_microbatches(plan, 4);
    check_shape_error(text, plan, "line 1 column 17: 0F4 has micro-batch 4, but the plan has 4");
    psched_plan_set_microbatches(plan, 8);
    psched_plan_set_placement(plan, PSCHED_PLACEMENT_VSHAPE);
    check_shape_error(text, plan, "line 1 column 33: 2F0 is on device 0 (its row) but the plan's "
                                  "vshape placement puts stage 2 on device 1");
    psched_plan_set_placement(plan, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_chunks(plan, 1);
    check_shape_error(text, plan, "line 1 column 33: 2F0 has stage 2, but the plan has 2 stages");
    psched_plan_set_devices(plan, 3);
    check_shape_error(text, plan, "the file has 2 rows (devices) but the plan has 3 devices");
    /* chunks left at 0 and placement auto: inferred from the file */
    psched_plan_set_devices(plan, 2);
    psched_plan_set_chunks(plan, 0);
    psched_plan_set_placement(plan, PSCHED_PLACEMENT_AUTO);
    CHECK_OK(psched_import_csv(text, len, plan, &s));
    if (s) {
        CHECK_EQ_INT(psched_plan_chunks(psched_schedule_plan(s)), 2);
        CHECK_EQ_INT(psched_plan_placement(psched_schedule_plan(s)), PSCHED_PLACEMENT_LOOP);
        psched_schedule_destroy(s);
    }
    free(text);
    psched_plan_destroy(plan);
}

/* ------------------------------------------------------------------ hash */

static size_t put32(unsigned char *b, size_t at, uint32_t x)
{
    b[at] = (unsigned char)(x & 0xff);
    b[at + 1] = (unsigned char)((x >> 8) & 0xff);
    b[at + 2] = (unsigned char)((x >> 16) & 0xff);
    b[at + 3] = (unsigned char)(x >> 24);
    return at + 4;
}

static void test_hash_is_xxh3_of_the_documented_encoding(void)
{
    psched_plan *plan = ts_plan(2, 1, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0B0", "1F0;1W0"};
    psched_schedule *s = ts_build(plan, rows);
    static const unsigned char want[] = {
        'P', 'S', 'C', 'H', 1, 0, 0, 0, /* magic, version 1 */
        2, 0, 0, 0, 1, 0, 0, 0,         /* p = 2, m = 1 */
        1, 0, 0, 0, 1, 0, 0, 0,         /* v = 1, chains = 1 */
        0, 0, 0, 0, 1, 0, 0, 0,         /* stage 0 -> device 0, stage 1 -> device 1 */
        2, 0, 0, 0,                     /* device 0: 2 ops */
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0,   /* 0F0: stage 0, mb 0, F, no flags */
        0, 0, 0, 0, 0, 0, 0, 0, 3, 0,   /* 0B0: BW = 3 */
        2, 0, 0, 0,                     /* device 1: 2 ops */
        1, 0, 0, 0, 0, 0, 0, 0, 0, 1,   /* 1F0 with OVERLAP_NEXT */
        1, 0, 0, 0, 0, 0, 0, 0, 2, 0,   /* 1W0: W = 2 */
    };
    CHECK(hash_of(s) == (uint64_t)XXH3_64bits(want, sizeof want));
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* Thousands of ops cross the hasher's internal block boundary. */
static void test_hash_of_a_long_schedule_matches_one_shot_xxh3(void)
{
    enum { M = 700 };
    psched_plan *plan = ts_plan(1, M, 1, PSCHED_PLACEMENT_LOOP);
    psched_builder *b;
    psched_schedule *s = NULL;
    CHECK_OK(psched__builder_create(plan, &b));
    for (uint32_t k = 0; k < M; k++)
        psched_builder_append(b, 0, PSCHED_OP_F, 0, k, 0);
    for (uint32_t k = 0; k < M; k++)
        psched_builder_append(b, 0, PSCHED_OP_BW, 0, M - 1 - k, 0);
    CHECK_OK(psched__builder_finish(b, plan, "test", &s));
    psched__builder_destroy(b);
    size_t size = 24 + 4 + 4 + 10 * 2 * M; /* header, stage map, count, ops */
    unsigned char *want = malloc(size);
    size_t at = 0;
    memcpy(want, "PSCH", 4);
    at = put32(want, 4, 1);
    at = put32(want, at, 1);
    at = put32(want, at, M);
    at = put32(want, at, 1);
    at = put32(want, at, 1);
    at = put32(want, at, 0);     /* stage 0 on device 0 */
    at = put32(want, at, 2 * M); /* op count */
    for (uint32_t k = 0; k < 2 * M; k++) {
        at = put32(want, at, 0);
        at = put32(want, at, k < M ? k : 2 * M - 1 - k);
        want[at++] = k < M ? PSCHED_OP_F : PSCHED_OP_BW;
        want[at++] = 0;
    }
    CHECK_EQ_INT(at, size);
    CHECK(hash_of(s) == (uint64_t)XXH3_64bits(want, size));
    free(want);
    psched_schedule_destroy(s);
}

static void test_hash_is_stable_and_sees_every_op(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"};
    const char *swapped[] = {"0F0,0F1,0B0,0B1", "1F0,1F1,1B0,1B1"};
    const char *split[] = {"0F0,0F1,0B0,0B1", "1F0,1I0,1W0,1F1,1B1"};
    psched_schedule *a = ts_build(plan, rows), *b = ts_build(plan, rows);
    psched_schedule *c = ts_build(plan, swapped), *d = ts_build(plan, split);
    CHECK(hash_of(a) == hash_of(b));
    CHECK(hash_of(a) != hash_of(c));
    CHECK(hash_of(a) != hash_of(d));
    /* costs do not change what runs */
    psched_plan *costly = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_cost(costly, 5, 6, 7);
    psched_plan_set_comm(costly, 2);
    psched_schedule *e = ts_build(costly, rows);
    CHECK(hash_of(a) == hash_of(e));
    /* a custom map equal to loop order is the same schedule */
    psched_plan *custom = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_placement(custom, PSCHED_PLACEMENT_CUSTOM);
    psched_plan_set_stage_device(custom, 0, 0);
    psched_plan_set_stage_device(custom, 1, 1);
    psched_schedule *f = ts_build(custom, rows);
    CHECK(hash_of(a) == hash_of(f));
    uint64_t h;
    CHECK_EQ_INT(psched_schedule_hash(NULL, &h), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_schedule_hash(a, NULL), PSCHED_EINVAL);
    psched_schedule_destroy(a);
    psched_schedule_destroy(b);
    psched_schedule_destroy(c);
    psched_schedule_destroy(d);
    psched_schedule_destroy(e);
    psched_schedule_destroy(f);
    psched_plan_destroy(plan);
    psched_plan_destroy(costly);
    psched_plan_destroy(custom);
}

/* ----------------------------------------------------------------- ASCII */

static void test_ascii_grid_of_1f1b_2x2_unit_costs(void)
{
    /* times by hand: d0 F0 [0,1] F1 [1,2] BW0 [4,6] BW1 [7,9];
     * d1 F0 [1,2] BW0 [2,4] F1 [4,5] BW1 [5,7]; busy 12 of 18 */
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"};
    psched_schedule *s = ts_build(plan, rows);
    char *text = export_text(s, NULL, PSCHED_FORMAT_ASCII, 0);
    CHECK_STR(text, "test  p=2 m=2 v=1  makespan=9  bubble=33.3%  cell=1\n"
                    "d0 | F0 F1 .  .  BW0-- .  BW1--\n"
                    "d1 | .  F0 BW0-- F1 BW1-- .  .\n"
                    "legend: F forward, B backward for inputs, W backward for weights, "
                    "BW full backward, SF/RF/SB/RB send/recv; digits = micro-batch; "
                    "a/b = overlapped pair; . idle; - the op goes on\n");
    psched_free(text);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_ascii_grid_shows_chunk_one_in_lowercase_and_pairs(void)
{
    /* one device, two chunks: 0F0 [0,1] 1F0 [1,2] 1B0 [2,4], the pair
     * (0F1;0B0) costs 1+2 [4,7], 1F1 [7,8] 1B1 [8,10] 0B1 [10,12] */
    psched_plan *plan = ts_plan(1, 2, 2, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,1F0,1B0,0F1;0B0,1F1,1B1,0B1"};
    psched_schedule *s = ts_build(plan, rows);
    char *text = export_text(s, NULL, PSCHED_FORMAT_ASCII, 0);
    CHECK_STR(text, "test  p=1 m=2 v=2  makespan=12  bubble=0.0%  cell=1\n"
                    "d0 | F0 f0 bw0-- F1/BW0-- f1 bw1-- BW1--\n"
                    "legend: F forward, B backward for inputs, W backward for weights, "
                    "BW full backward, SF/RF/SB/RB send/recv; digits = micro-batch; "
                    "lowercase = chunk 1; a/b = overlapped pair; . idle; - the op goes on\n");
    psched_free(text);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_ascii_cell_is_a_fraction_of_the_shortest_op(void)
{
    /* F = 1, BW = 1 + 0.5: F [0,1] BW [1,2.5]; cell 0.5 */
    psched_plan *plan = ts_plan(1, 1, 1, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_cost(plan, 1, 1, 0.5);
    const char *rows[] = {"0F0,0B0"};
    psched_schedule *s = ts_build(plan, rows);
    char *text = export_text(s, NULL, PSCHED_FORMAT_ASCII, 0);
    const char *want = "test  p=1 m=1 v=1  makespan=2.5  bubble=0.0%  cell=0.5\n"
                       "d0 | F0- BW0--\n";
    CHECK(text && strncmp(text, want, strlen(want)) == 0);
    psched_free(text);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_ascii_color_wraps_labels_in_ansi(void)
{
    psched_plan *plan = ts_plan(1, 1, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0I0,0W0"};
    psched_schedule *s = ts_build(plan, rows);
    char *text = export_text(s, NULL, PSCHED_FORMAT_ASCII, PSCHED_EXPORT_COLOR);
    CHECK_CONTAINS(text, "d0 | \x1b[34mF0\x1b[0m \x1b[32mB0\x1b[0m \x1b[33mW0\x1b[0m\n");
    psched_free(text);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

/* ------------------------------------------------------------------ JSON */

static void test_json_export_with_report(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"};
    psched_schedule *s = ts_build(plan, rows);
    psched_report *r = NULL;
    CHECK_OK(psched_simulate(s, NULL, &r));
    char *text = export_text(s, r, PSCHED_FORMAT_JSON, 0);
    CHECK(json_valid(text));
    char hash[64];
    snprintf(hash, sizeof hash, "\"hash\": \"%016llx\"", (unsigned long long)hash_of(s));
    CHECK_CONTAINS(text, "{\n  \"format_version\": 1,\n  \"schedule\": \"test\",\n");
    CHECK_CONTAINS(text, hash);
    CHECK_CONTAINS(text, "\"devices\": 2,\n  \"microbatches\": 2,\n  \"chunks\": 1,\n"
                         "  \"chains\": 1,\n  \"placement\": \"loop\",\n"
                         "  \"stage_device\": [0, 1],\n");
    CHECK_CONTAINS(text, "\"costs\": [{\"f\": 1, \"b\": 1, \"w\": 1}, {\"f\": 1, \"b\": 1, "
                         "\"w\": 1}]");
    CHECK_CONTAINS(text, "\"memory\": [{\"f\": 1, \"b\": 0, \"w\": -1}, {\"f\": 1, \"b\": 0, "
                         "\"w\": -1}]");
    CHECK_CONTAINS(text, "\"comm\": 0,\n  \"memory_limit\": null,\n");
    /* 0B0 waits for 1B0, which ends at 4 */
    CHECK_CONTAINS(text, "{\"kind\": \"BW\", \"stage\": 0, \"microbatch\": 0, \"chunk\": 0, "
                         "\"start\": 4, \"end\": 6}");
    CHECK_CONTAINS(text, "\"makespan\": 9,\n    \"span\": 9,");
    CHECK_CONTAINS(text, "\"peak_memory_M\": 1,\n    \"busy\": [6, 6],\n    \"idle\": [3, 3],\n"
                         "    \"peak_memory\": [2, 1]\n  }\n}\n");
    psched_free(text);
    psched_report_destroy(r);
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

static void test_json_export_without_report_flags_and_escapes(void)
{
    psched_plan *plan = ts_plan(1, 1, 2, PSCHED_PLACEMENT_LOOP);
    psched_plan_set_memory_limit(plan, 2.5);
    psched_plan_set_stage_cost(plan, 1, 0.1, 1, 1);
    psched_builder *b;
    psched_schedule *s = NULL;
    CHECK_OK(psched__builder_create(plan, &b));
    psched_builder_append_pair(b, 0, PSCHED_OP_F, 1, 0, PSCHED_OP_W, 0, 0);
    psched_builder_append(b, 0, PSCHED_OP_SEND_B, 1, 0, PSCHED_OP_BATCH_NEXT);
    CHECK_OK(psched__builder_finish(b, plan, "a\"b\\c\n", &s));
    psched__builder_destroy(b);
    char *text = export_text(s, NULL, PSCHED_FORMAT_JSON, 0);
    CHECK(json_valid(text));
    CHECK_CONTAINS(text, "\"schedule\": \"a\\\"b\\\\c\\u000a\",");
    CHECK_CONTAINS(text, "\"memory_limit\": 2.5,");
    CHECK_CONTAINS(text, "{\"f\": 0.10000000000000001, \"b\": 1, \"w\": 1}");
    CHECK_CONTAINS(text, "{\"kind\": \"F\", \"stage\": 1, \"microbatch\": 0, \"chunk\": 1, "
                         "\"overlap_next\": true},\n");
    CHECK_CONTAINS(text, "{\"kind\": \"SEND_B\", \"stage\": 1, \"microbatch\": 0, \"chunk\": 1, "
                         "\"batch_next\": true, \"peer\": 0, \"group\": 0}\n");
    CHECK(text && !strstr(text, "\"start\""));
    CHECK(text && !strstr(text, "\"report\""));
    psched_free(text);
    psched_schedule_destroy(s);
}

static void test_export_rejects_bad_arguments(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"};
    psched_schedule *s = ts_build(plan, rows);
    psched_plan *one = ts_plan(1, 1, 1, PSCHED_PLACEMENT_LOOP);
    const char *row1[] = {"0F0,0B0"};
    psched_schedule *small = ts_build(one, row1);
    psched_report *r = NULL;
    CHECK_OK(psched_simulate(small, NULL, &r));
    char *text = NULL;
    CHECK_EQ_INT(psched_export(s, NULL, (psched_format)7, 0, &text, NULL), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0x10, &text, NULL), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_export(NULL, NULL, PSCHED_FORMAT_CSV, 0, &text, NULL), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_export(s, NULL, PSCHED_FORMAT_CSV, 0, NULL, NULL), PSCHED_EINVAL);
    CHECK_EQ_INT(psched_export(s, r, PSCHED_FORMAT_JSON, 0, &text, NULL), PSCHED_EINVAL);
    CHECK_CONTAINS(psched_last_error(), "report has 1 devices");
    CHECK(text == NULL);
    psched_report_destroy(r);
    psched_schedule_destroy(small);
    psched_schedule_destroy(s);
    psched_plan_destroy(one);
    psched_plan_destroy(plan);
}

/* Every allocation failing in turn: an error, never a crash or a leak. */
static void test_formats_survive_allocation_failures(void)
{
    psched_plan *plan = ts_plan(2, 2, 1, PSCHED_PLACEMENT_LOOP);
    const char *rows[] = {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"};
    psched_schedule *s = ts_build(plan, rows);
    const char *csv = "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n";
    for (long n = 0; n < 40; n++) {
        for (int f = 0; f < 3; f++) {
            char *text = NULL;
            psched__alloc_fail_after(n);
            psched_status st = psched_export(s, NULL, (psched_format)f, 0, &text, NULL);
            psched__alloc_fail_after(-1);
            CHECK(st == PSCHED_OK || st == PSCHED_ENOMEM);
            CHECK((st == PSCHED_OK) == (text != NULL));
            psched_free(text);
        }
        psched_schedule *back = NULL;
        psched__alloc_fail_after(n);
        psched_status st = psched_import_csv(csv, strlen(csv), NULL, &back);
        psched__alloc_fail_after(-1);
        CHECK(st == PSCHED_OK || st == PSCHED_ENOMEM);
        CHECK((st == PSCHED_OK) == (back != NULL));
        psched_schedule_destroy(back);
    }
    psched_schedule_destroy(s);
    psched_plan_destroy(plan);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        ref_dir = argv[1];
    RUN(test_csv_export_writes_pytorch_action_text);
    RUN(test_csv_export_writes_overlapped_pair);
    RUN(test_csv_export_writes_comm_ops);
    RUN(test_csv_empty_device_is_an_empty_row_both_ways);
    RUN(test_csv_import_of_golden_files);
    RUN(test_csv_import_dualpipev_pairs_and_splits);
    RUN(test_csv_import_comm_ops);
    RUN(test_csv_import_rejects_partial_actions_with_line_and_column);
    RUN(test_csv_import_rejects_other_malformed_input);
    RUN(test_csv_import_accepts_idle_cells_spaces_and_crlf);
    RUN(test_csv_dualpipe_round_trip_keeps_two_chains);
    RUN(test_csv_chains_header_is_checked);
    RUN(test_csv_import_skips_a_leading_bom);
    RUN(test_csv_cr_only_line_endings_say_why);
    RUN(test_csv_messages_escape_bytes_and_stay_short);
    RUN(test_csv_import_infers_custom_placement);
    RUN(test_csv_import_rejects_inconsistent_shapes);
    RUN(test_csv_import_checks_the_file_against_a_plan);
    RUN(test_hash_is_xxh3_of_the_documented_encoding);
    RUN(test_hash_of_a_long_schedule_matches_one_shot_xxh3);
    RUN(test_hash_is_stable_and_sees_every_op);
    RUN(test_ascii_grid_of_1f1b_2x2_unit_costs);
    RUN(test_ascii_grid_shows_chunk_one_in_lowercase_and_pairs);
    RUN(test_ascii_cell_is_a_fraction_of_the_shortest_op);
    RUN(test_ascii_color_wraps_labels_in_ansi);
    RUN(test_json_export_with_report);
    RUN(test_json_export_without_report_flags_and_escapes);
    RUN(test_export_rejects_bad_arguments);
    RUN(test_formats_survive_allocation_failures);
    TEST_MAIN_END();
}
