/*
 * PyTorch compute_only CSV (torch.distributed.pipelining
 * `_PipelineScheduleRuntime._load_csv` / `_dump_csv`), and the export
 * dispatcher.
 *
 * One row per device, cells separated by ',', each cell one action
 * `<stage><TYPE><microbatch>` with TYPE in F, I (our B), W, B (our BW),
 * SEND_F, RECV_F, SEND_B, RECV_B, or an overlapped pair
 * `(<action>;<action>)OVERLAP_F_B`.
 *
 * Two extensions, both written only where PyTorch's dialect has no
 * spelling for what the schedule holds (docs/formats.md):
 * - a batched comm group (ops chained by BATCH_NEXT, posted together) is one
 *   cell `[<action>;<action>;...]BATCH`, in list order;
 * - a two-chain schedule (DualPipe) starts with the line
 *   `# pipesched: chains=2`, without which its stages read as one V.
 * PSCHED_FORMAT_CSV_COMMS_PYTORCH writes exactly PyTorch's compute_comms
 * dialect instead: a group's ops as separate cells in list order and no
 * header line (PyTorch's runtime posts every send and receive as an
 * asynchronous isend/irecv, for which that file is enough); it refuses
 * activation copies (OFFLOAD/RELOAD cells, pipesched's extension, which
 * the other two formats write and import reads).
 *
 * Export writes no idle cells and ends every row with "\n".
 *
 * Import rules (strict: every cell is a whole action, a batched group or
 * empty):
 * - the first line may be the header `# pipesched: chains=N` (N = 1 or 2); no
 *   other line may start with '#';
 * - rows are separated by "\n" or "\r\n"; a newline at the very end of the
 *   text does not start another row, but an empty line anywhere else is a
 *   device with no ops (export writes exactly that for an empty device);
 * - empty cells are idle steps and are skipped; spaces and tabs around a
 *   cell are ignored, as PyTorch strips them;
 * - an error names the line, the column of the first offending byte (both
 *   from 1) and the whole cell.
 */
#define _DEFAULT_SOURCE /* madvise, for memadvise.h */
#include "formats.h"
#include "memadvise.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define UNLIKELY(x) (x)
#endif

/* The flags and the report fit the schedule (fn names the caller). */
static psched_status export_args(const psched_schedule *schedule, const psched_report *report,
                                 uint32_t flags, const char *fn)
{
    if (flags & ~(uint32_t)PSCHED_EXPORT_COLOR)
        return psched_fail(PSCHED_EINVAL, "%s: unknown flags 0x%x (only "
                           "PSCHED_EXPORT_COLOR = 0x%x is defined)",
                           fn, (unsigned)flags, (unsigned)PSCHED_EXPORT_COLOR);
    if (report && psched_report_devices(report) != schedule->devices)
        return psched_fail(PSCHED_EINVAL, "%s: the report has %u devices but the "
                           "schedule has %u; pass the report of this schedule",
                           fn, psched_report_devices(report), schedule->devices);
    return PSCHED_OK;
}

static bool csv_format(psched_format format)
{
    return format == PSCHED_FORMAT_CSV || format == PSCHED_FORMAT_CSV_COMMS ||
           format == PSCHED_FORMAT_CSV_COMMS_PYTORCH;
}

psched_status psched_export_write(const psched_schedule *schedule, const psched_report *report,
                                  psched_format format, uint32_t flags, psched_write_fn write,
                                  void *user)
{
    if (!schedule || !write)
        return psched_fail(PSCHED_EINVAL,
                           "psched_export_write: schedule and write must not be NULL");
    psched_status st = export_args(schedule, report, flags, "psched_export_write");
    if (st != PSCHED_OK)
        return st;
    if (csv_format(format))
        return psched__export_csv_write(schedule, format == PSCHED_FORMAT_CSV_COMMS_PYTORCH,
                                        write, user);
    char *text = NULL;
    size_t length = 0;
    st = psched_export(schedule, report, format, flags, &text, &length);
    if (st != PSCHED_OK)
        return st;
    int rc = length ? write(user, text, length) : 0;
    psched__dealloc(text);
    if (rc != 0)
        return psched_fail(PSCHED_EIO, "the write callback returned %d for bytes [0, %zu) of "
                           "the export; the export stopped there", rc, length);
    return PSCHED_OK;
}

psched_status psched_export(const psched_schedule *schedule, const psched_report *report,
                            psched_format format, uint32_t flags, char **text, size_t *length)
{
    if (!schedule || !text)
        return psched_fail(PSCHED_EINVAL, "psched_export: schedule and text must not be NULL");
    psched_status args = export_args(schedule, report, flags, "psched_export");
    if (args != PSCHED_OK)
        return args;
    if (format == PSCHED_FORMAT_CSV || format == PSCHED_FORMAT_CSV_COMMS ||
        format == PSCHED_FORMAT_CSV_COMMS_PYTORCH) /* comm ops print as SEND_F etc. */
        return psched__export_csv(schedule, format == PSCHED_FORMAT_CSV_COMMS_PYTORCH, text,
                                  length);
    if (format == PSCHED_FORMAT_JSON)
        return psched__export_json(schedule, report, text, length);
    if (format != PSCHED_FORMAT_ASCII && format != PSCHED_FORMAT_CHROME &&
        format != PSCHED_FORMAT_SVG)
        return psched_fail(PSCHED_EINVAL, "psched_export: unknown format %d (csv 0, ascii 1, "
                                          "json 2, csv-comms 3, chrome 4, svg 5, "
                                          "csv-comms-pytorch 6)", (int)format);
    /* The timeline formats draw simulated times: simulate once here when
     * the caller has no report. */
    psched_report *own = NULL;
    if (!report) {
        psched_status st = psched_simulate(schedule, NULL, &own);
        if (st != PSCHED_OK)
            return st;
        report = own;
    }
    psched_status st = format == PSCHED_FORMAT_ASCII
                           ? psched__export_ascii(schedule, report, flags, text, length)
                       : format == PSCHED_FORMAT_CHROME
                           ? psched__export_chrome(schedule, report, text, length)
                           : psched__export_svg(schedule, report, text, length);
    psched_report_destroy(own);
    return st;
}

/* ---------------------------------------------------------------- export */

/* The writer sizes the text exactly in a first pass and then writes
 * digits by hand: no snprintf, no growing buffer, one allocation. */

/* PyTorch's action type of every uint8_t kind and its length, copied once
 * from the library's one name table (psched_op_kind_str; "?" for a kind it
 * does not name): the writer's inner loop then reads an array instead of
 * calling and measuring per op. */
static struct {
    const char *text;
    size_t len;
} kind_names[256];
static unsigned named_kinds; /* kinds 0..named_kinds-1 have a name */
/* the compute kind whose PyTorch name is this one letter ('F', 'I', 'W',
 * 'B'), else 0xff: the importer's fast path */
static uint8_t letter_kind[256];
static pthread_once_t kind_names_once = PTHREAD_ONCE_INIT;

static void fill_kind_names(void)
{
    memset(letter_kind, 0xff, sizeof letter_kind);
    for (unsigned k = 0; k < 256; k++) {
        const char *t = psched_op_kind_str((psched_op_kind)k, PSCHED_NAMING_PYTORCH);
        if (t && named_kinds == k)
            named_kinds = k + 1;
        kind_names[k].text = t ? t : "?";
        kind_names[k].len = strlen(kind_names[k].text);
        if (t && k <= PSCHED_OP_BW && kind_names[k].len == 1)
            letter_kind[(unsigned char)t[0]] = (uint8_t)k;
    }
}

static const char *kind_text(uint8_t kind)
{
    return kind_names[kind].text;
}

static size_t kind_len(uint8_t kind)
{
    return kind_names[kind].len;
}

static size_t u32_len(uint32_t x)
{
    size_t n = 1;
    while (x >= 10) {
        x /= 10;
        n++;
    }
    return n;
}

/* Writes x in decimal at p; returns the end. Two digits per step. */
static char *put_u32(char *p, uint32_t x)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                "31323334353637383940414243444546474849505152535455565758596061"
                                "62636465666768697071727374757677787980818283848586878889909192"
                                "93949596979899";
    char *end = p + u32_len(x), *at = end;
    while (x >= 100) {
        at -= 2;
        memcpy(at, &pairs[2 * (x % 100)], 2);
        x /= 100;
    }
    if (x >= 10) {
        at -= 2;
        memcpy(at, &pairs[2 * x], 2);
    } else {
        *--at = (char)('0' + x);
    }
    return end;
}

/* psched__op_text's "<stage><TYPE><mb>". */
static size_t op_len(const psched_op *op)
{
    return u32_len(op->stage) + kind_len(op->kind) + u32_len(op->microbatch);
}

static char *put_op(char *p, const psched_op *op)
{
    p = put_u32(p, op->stage);
    size_t n = kind_len(op->kind);
    memcpy(p, kind_text(op->kind), n);
    return put_u32(p + n, op->microbatch);
}

/* An overlap flag must start a pair whose second op ends it: PyTorch's
 * OVERLAP_F_B holds exactly two actions. */
static psched_status check_pair(const psched_schedule *s, uint32_t d, size_t i)
{
    size_t first = s->offset[d], last = s->offset[d + 1];
    if (i + 1 < last && !(s->ops[i + 1].flags & PSCHED_OP_OVERLAP_NEXT))
        return PSCHED_OK; /* the common case: no text to format */
    char tmp[48];
    psched__op_text(&s->ops[i], tmp, sizeof tmp);
    if (i + 1 == last)
        return psched_fail(PSCHED_EINVAL, "device %u op %zu (%s) has OVERLAP_NEXT but is the last "
                           "op of its device; CSV needs a pair", d, i - first, tmp);
    if (s->ops[i + 1].flags & PSCHED_OP_OVERLAP_NEXT)
        return psched_fail(PSCHED_EINVAL, "device %u op %zu (%s) starts an overlapped run of more "
                           "than two ops; CSV OVERLAP_F_B holds exactly two", d, i - first, tmp);
    return PSCHED_OK;
}

static bool is_comm_kind(uint8_t kind)
{
    return kind >= PSCHED_OP_SEND_F && kind <= PSCHED_OP_RECV_B;
}

/* A batch flag must chain comm ops of one device: the group's cell holds
 * SEND/RECV actions only and ends at the first op without the flag. */
static psched_status check_group(const psched_schedule *s, uint32_t d, size_t i)
{
    size_t first = s->offset[d], last = s->offset[d + 1];
    const psched_op *op = &s->ops[i];
    if (is_comm_kind(op->kind) && i + 1 < last && is_comm_kind(s->ops[i + 1].kind))
        return PSCHED_OK;
    char tmp[48];
    psched__op_text(op, tmp, sizeof tmp);
    if (!is_comm_kind(op->kind))
        return psched_fail(PSCHED_EINVAL, "device %u op %zu (%s) has BATCH_NEXT but is a %s op; a "
                           "batched group holds SEND/RECV ops only", d, i - first, tmp,
                           op->kind < PSCHED_OP_SEND_F ? "compute" : "copy");
    if (i + 1 == last)
        return psched_fail(PSCHED_EINVAL, "device %u op %zu (%s) has BATCH_NEXT but is the last op "
                           "of its device; a batched group needs the op it chains to", d,
                           i - first, tmp);
    return psched_fail(PSCHED_EINVAL, "device %u op %zu (%s) has BATCH_NEXT but the next op is a "
                       "%s op; a batched group holds SEND/RECV ops only", d, i - first, tmp,
                       s->ops[i + 1].kind < PSCHED_OP_SEND_F ? "compute" : "copy");
}

#define OVERLAP_TAIL ")OVERLAP_F_B"
#define BATCH_TAIL "]BATCH"
#define CHAINS_HEADER "# pipesched: chains="

/* Ops [i, end) of device d that one cell holds: an overlapped pair, a
 * batched group (unless @p flat) or a single op. */
static psched_status cell_end(const psched_schedule *s, uint32_t d, size_t i, bool flat,
                              size_t *end)
{
    psched_status st;
    if (s->ops[i].flags & PSCHED_OP_OVERLAP_NEXT) {
        if ((st = check_pair(s, d, i)) != PSCHED_OK)
            return st;
        *end = i + 2;
        return PSCHED_OK;
    }
    size_t j = i;
    while (!flat && (s->ops[j].flags & PSCHED_OP_BATCH_NEXT)) {
        if ((st = check_group(s, d, j)) != PSCHED_OK)
            return st;
        j++;
    }
    *end = j + 1;
    return PSCHED_OK;
}

/* Text of every compute op whose stage and micro-batch are in range,
 * precomputed: "<stage><TYPE>" per (stage, compute kind) and "<mb>" per
 * micro-batch, so the writer copies two short strings per op (16 and 8
 * bytes at a time: the buffer has TEXT_SLACK bytes to spare) instead of
 * converting numbers. Ops outside the tables (comm ops, copies, flags,
 * numbers out of range) take the general path, cell by cell. */
typedef struct stage_kind_text {
    char text[15];
    uint8_t len;
} stage_kind_text;

typedef struct mb_text {
    char text[7];
    uint8_t len;
} mb_text;

#define TEXT_SLACK 32

typedef struct csv_tables {
    stage_kind_text *sk; /* [stage*4 + kind], kinds F, B, W, BW */
    mb_text *mb;         /* [micro-batch] */
    uint32_t stages, mbs;
} csv_tables;

static void tables_free(csv_tables *t)
{
    psched__dealloc(t->sk);
    psched__dealloc(t->mb);
}

/* The tables for the schedule's plan (empty when a number would not fit:
 * every op then takes the general path). */
static psched_status tables_make(const psched_plan *plan, size_t total, csv_tables *t)
{
    memset(t, 0, sizeof *t);
    uint32_t S = plan->devices * plan->chunks, mbs = psched__plan_chain_mbs(plan);
    /* 7 digits at most; tables no larger than the schedule's own ops */
    if (mbs >= 10000000u || (size_t)S * 4 + mbs > total + 4096)
        return PSCHED_OK;
    t->sk = psched__reallocarray(NULL, (size_t)S * 4 + 1, sizeof *t->sk);
    t->mb = psched__reallocarray(NULL, (size_t)mbs + 1, sizeof *t->mb);
    if (!t->sk || !t->mb) {
        tables_free(t);
        return PSCHED_ENOMEM_FAIL();
    }
    for (uint32_t st = 0; st < S; st++) {
        for (uint8_t k = 0; k < 4; k++) {
            stage_kind_text *e = &t->sk[(size_t)st * 4 + k];
            memset(e, 0, sizeof *e);
            char *p = put_u32(e->text, st);
            memcpy(p, kind_text(k), kind_len(k)); /* at most 10 + 1 bytes */
            e->len = (uint8_t)(p - e->text + kind_len(k));
        }
    }
    for (uint32_t k = 0; k < mbs; k++) {
        mb_text *e = &t->mb[k];
        char tmp[16];
        memset(e, 0, sizeof *e);
        e->len = (uint8_t)(put_u32(tmp, k) - tmp);
        memcpy(e->text, tmp, e->len);
    }
    t->stages = S;
    t->mbs = mbs;
    return PSCHED_OK;
}

/* The op takes the tables' path: a compute op (F, B, W, BW) without flags,
 * in range. */
static inline bool plain_op(const csv_tables *t, const psched_op *o)
{
    return !o->flags && o->kind <= PSCHED_OP_BW && o->stage < t->stages &&
           o->microbatch < t->mbs;
}

/* Length of the text, or an error for a malformed pair or group. */
static psched_status csv_length(const psched_schedule *s, const csv_tables *t, bool pytorch,
                                size_t *out)
{
    size_t len = !pytorch && s->plan->chains == 2 ? strlen(CHAINS_HEADER "2\n") : 0;
    for (uint32_t d = 0; d < s->devices; d++) {
        size_t first = s->offset[d], last = s->offset[d + 1], end;
        for (size_t i = first; i < last; i = end) {
            const psched_op *o = &s->ops[i];
            if (plain_op(t, o)) {
                len += t->sk[(size_t)o->stage * 4 + o->kind].len + t->mb[o->microbatch].len + 1;
                end = i + 1;
                continue;
            }
            if (pytorch && (o->kind == PSCHED_OP_OFFLOAD || o->kind == PSCHED_OP_RELOAD)) {
                char tmp[48];
                psched__op_text(o, tmp, sizeof tmp);
                return psched_fail(PSCHED_EUNSUPPORTED,
                                   "device %u op %zu (%s): PyTorch's compute_comms dialect has no "
                                   "OFFLOAD/RELOAD actions (activation copies are pipesched's "
                                   "extension); export csv-comms (PSCHED_FORMAT_CSV_COMMS), "
                                   "which writes them", d, i - first, tmp);
            }
            psched_status st = cell_end(s, d, i, pytorch, &end);
            if (st != PSCHED_OK)
                return st;
            len += 1; /* the comma, or the newline for the first cell */
            for (size_t k = i; k < end; k++)
                len += op_len(&s->ops[k]) + (k > i); /* the ';' */
            if (end - i > 1)
                len += 1 + strlen(s->ops[i].flags & PSCHED_OP_OVERLAP_NEXT ? OVERLAP_TAIL
                                                                            : BATCH_TAIL);
        }
        len += first == last; /* every cell counted one separator: the newline */
    }
    *out = len;
    return PSCHED_OK;
}

/* The writer both exports share: cells go into a buffer that is either the
 * whole text, sized exactly by csv_length (in memory), or a window handed
 * to a write callback whenever it fills (streaming). */
#define STREAM_BUFFER ((size_t)1 << 20)
/* the most a plain cell writes: ',' + 16 + 8 bytes (it advances at most 23) */
#define PLAIN_CELL_MAX 25

struct psched_csv_writer {
    csv_tables t;
    bool pytorch;
    bool row_open;      /* a cell was written on the current row */
    char *buf, *p, *end; /* text may be written up to end + TEXT_SLACK */
    size_t cap;         /* end - buf */
    psched_write_fn write; /* NULL: in memory, buf holds the whole text */
    void *user;
    size_t written;     /* bytes handed to write so far */
};

static psched_status writer_flush(psched_csv_writer *w)
{
    size_t n = (size_t)(w->p - w->buf);
    if (!w->write || n == 0)
        return PSCHED_OK;
    int rc = w->write(w->user, w->buf, n);
    if (rc != 0)
        return psched_fail(PSCHED_EIO, "the write callback returned %d for bytes [%zu, %zu) of "
                           "the CSV; the export stopped there", rc, w->written, w->written + n);
    w->written += n;
    w->p = w->buf;
    return PSCHED_OK;
}

/* Room for `need` bytes (and the slack) at w->p: streaming flushes, and
 * grows the window for a cell larger than it (a long batched group). In
 * memory the text was sized exactly and always fits. */
static psched_status writer_room(psched_csv_writer *w, size_t need)
{
    if (!w->write || need <= (size_t)(w->end - w->p))
        return PSCHED_OK;
    psched_status st = writer_flush(w);
    if (st != PSCHED_OK || need <= w->cap)
        return st;
    char *grown = psched__realloc(w->buf, need + TEXT_SLACK);
    if (!grown)
        return PSCHED_ENOMEM_FAIL();
    w->buf = w->p = grown;
    w->cap = need;
    w->end = grown + need;
    return PSCHED_OK;
}

/* Ops [i, end) of a checked span that one cell holds (csv_length or the
 * caller has checked pairs and groups). */
static size_t span_cell_end(const psched_op *ops, size_t i, bool flat)
{
    if (ops[i].flags & PSCHED_OP_OVERLAP_NEXT)
        return i + 2;
    size_t j = i;
    while (!flat && (ops[j].flags & PSCHED_OP_BATCH_NEXT))
        j++;
    return j + 1;
}

psched_status psched__csv_cells(psched_csv_writer *w, const psched_op *ops, size_t n)
{
    const csv_tables *t = &w->t;
    char *p = w->p;
    psched_status st = PSCHED_OK;
    for (size_t i = 0, end; i < n; i = end) {
        const psched_op *o = &ops[i];
        if (plain_op(t, o)) {
            if (UNLIKELY((size_t)(w->end - p) < PLAIN_CELL_MAX) && w->write) {
                w->p = p;
                if ((st = writer_room(w, PLAIN_CELL_MAX)) != PSCHED_OK)
                    return st;
                p = w->p;
            }
            *p = ',';
            p += w->row_open;
            w->row_open = true;
            const stage_kind_text *a = &t->sk[(size_t)o->stage * 4 + o->kind];
            const mb_text *b = &t->mb[o->microbatch];
            memcpy(p, a->text, sizeof a->text + 1);
            p += a->len;
            memcpy(p, b->text, sizeof b->text + 1);
            p += b->len;
            end = i + 1;
            continue;
        }
        end = span_cell_end(ops, i, w->pytorch);
        bool pair = o->flags & PSCHED_OP_OVERLAP_NEXT;
        size_t need = 1 + (end - i > 1 ? 1 + strlen(pair ? OVERLAP_TAIL : BATCH_TAIL) : 0);
        for (size_t k = i; k < end; k++)
            need += op_len(&ops[k]) + (k > i);
        w->p = p;
        if ((st = writer_room(w, need)) != PSCHED_OK)
            return st;
        p = w->p;
        if (w->row_open)
            *p++ = ',';
        w->row_open = true;
        if (end - i > 1)
            *p++ = pair ? '(' : '[';
        for (size_t k = i; k < end; k++) {
            if (k > i)
                *p++ = ';';
            p = put_op(p, &ops[k]);
        }
        if (end - i > 1) {
            const char *tail = pair ? OVERLAP_TAIL : BATCH_TAIL;
            memcpy(p, tail, strlen(tail));
            p += strlen(tail);
        }
    }
    w->p = p;
    return PSCHED_OK;
}

psched_status psched__csv_end_row(psched_csv_writer *w)
{
    psched_status st = writer_room(w, 1);
    if (st != PSCHED_OK)
        return st;
    *w->p++ = '\n';
    w->row_open = false;
    return PSCHED_OK;
}

static void writer_free(psched_csv_writer *w)
{
    if (!w)
        return;
    tables_free(&w->t);
    psched__dealloc(w->buf);
    psched__dealloc(w);
}

/* A writer for a schedule of `plan` with `total` ops into `buf` (in memory,
 * `len` + TEXT_SLACK bytes, taken over) or to `write` (a window of its own),
 * the chains header written. */
static psched_status writer_open(const psched_plan *plan, size_t total, bool pytorch, char *buf,
                                 size_t len, psched_write_fn write, void *user,
                                 psched_csv_writer **out)
{
    pthread_once(&kind_names_once, fill_kind_names);
    psched_csv_writer *w = psched__calloc(1, sizeof *w);
    if (!w)
        return PSCHED_ENOMEM_FAIL();
    psched_status st = tables_make(plan, total, &w->t);
    if (st != PSCHED_OK) {
        psched__dealloc(w);
        return st;
    }
    w->pytorch = pytorch;
    w->write = write;
    w->user = user;
    w->cap = write ? STREAM_BUFFER : len;
    w->buf = write ? psched__malloc(STREAM_BUFFER + TEXT_SLACK) : buf;
    if (!w->buf) {
        writer_free(w);
        return PSCHED_ENOMEM_FAIL();
    }
    w->p = w->buf;
    w->end = w->buf + w->cap;
    if (!pytorch && plan->chains == 2) {
        memcpy(w->p, CHAINS_HEADER "2\n", strlen(CHAINS_HEADER "2\n"));
        w->p += strlen(CHAINS_HEADER "2\n");
    }
    *out = w;
    return PSCHED_OK;
}

psched_status psched__csv_open(const psched_plan *plan, size_t total, bool pytorch,
                               psched_write_fn write, void *user, psched_csv_writer **out)
{
    return writer_open(plan, total, pytorch, NULL, 0, write, user, out);
}

psched_status psched__csv_close(psched_csv_writer *w, bool flush)
{
    psched_status st = flush ? writer_flush(w) : PSCHED_OK;
    writer_free(w);
    return st;
}

/* Every device's row of s through w. */
static psched_status write_rows(psched_csv_writer *w, const psched_schedule *s)
{
    psched_status st = PSCHED_OK;
    for (uint32_t d = 0; d < s->devices && st == PSCHED_OK; d++) {
        size_t first = s->offset[d];
        st = psched__csv_cells(w, s->ops + first, s->offset[d + 1] - first);
        if (st == PSCHED_OK)
            st = psched__csv_end_row(w);
    }
    return st;
}

psched_status psched__export_csv(const psched_schedule *s, bool pytorch, char **text,
                                 size_t *length)
{
    pthread_once(&kind_names_once, fill_kind_names);
    for (size_t g = 0; pytorch && g < s->offset[s->devices]; g++) {
        if (s->ops[g].kind >= PSCHED_OP_VOCAB_S) {
            char txt[48];
            psched__op_text(&s->ops[g], txt, sizeof txt);
            return psched_fail(PSCHED_EUNSUPPORTED,
                               "op %s: PyTorch's compute_comms dialect has no vocabulary passes "
                               "or collectives (VOCAB_S, VOCAB_T, COLLECTIVE are pipesched's "
                               "extension); export csv or csv-comms instead", txt);
        }
    }
    csv_tables t;
    psched_status st = tables_make(s->plan, s->offset[s->devices], &t);
    if (st != PSCHED_OK)
        return st;
    size_t len = 0;
    st = csv_length(s, &t, pytorch, &len);
    tables_free(&t);
    if (st != PSCHED_OK)
        return st;
    char *out = psched__malloc_array_huge(len + TEXT_SLACK, 1);
    if (!out)
        return PSCHED_ENOMEM_FAIL();
    psched_csv_writer *w = NULL;
    st = writer_open(s->plan, s->offset[s->devices], pytorch, out, len, NULL, NULL, &w);
    if (st != PSCHED_OK) {
        psched__dealloc(out);
        return st;
    }
    st = write_rows(w, s); /* cannot fail in memory: the text was sized */
    *w->p = '\0';
    w->buf = NULL; /* the caller's now */
    writer_free(w);
    *text = out;
    if (length)
        *length = len;
    return st;
}

psched_status psched__export_csv_write(const psched_schedule *s, bool pytorch,
                                       psched_write_fn write, void *user)
{
    pthread_once(&kind_names_once, fill_kind_names);
    csv_tables t;
    psched_status st = tables_make(s->plan, s->offset[s->devices], &t);
    if (st != PSCHED_OK)
        return st;
    size_t len;
    st = csv_length(s, &t, pytorch, &len); /* every pair and group checked before a byte */
    tables_free(&t);
    psched_csv_writer *w = NULL;
    if (st == PSCHED_OK)
        st = psched__csv_open(s->plan, s->offset[s->devices], pytorch, write, user, &w);
    if (st != PSCHED_OK)
        return st;
    st = write_rows(w, s);
    psched_status closed = psched__csv_close(w, st == PSCHED_OK);
    return st != PSCHED_OK ? st : closed;
}

/* ---------------------------------------------------------------- import */

/* One parsed action, with where it came from for later error messages. */
typedef struct csv_op {
    uint32_t stage, mb;
    uint8_t kind, flags;
    uint32_t line, col;
} csv_op;

typedef struct csv_file {
    csv_op *ops;
    size_t count, cap;
    size_t *row_end; /* ops of row r are [row_end[r-1], row_end[r]) */
    uint32_t rows;
    size_t rows_cap;
    size_t max_stage_at, max_mb_at; /* index of an op with the largest value */
    bool staged;                    /* an op names a stage (max_stage_at is set) */
    uint32_t chains;                /* from the header line; 0: none */
} csv_file;

typedef struct csv_cell {
    const char *p;
    size_t len;
    uint32_t line, col; /* position of p[0] */
} csv_cell;

/* At most this many characters of a cell are quoted in a message. */
#define CELL_QUOTE_MAX 40

/* The cell as a message quotes it: printable ASCII as is, every other byte
 * (control characters, bytes of UTF-8 sequences, invalid bytes) and '"' and
 * '\\' as \xNN, at most CELL_QUOTE_MAX characters and "..." when cut, so
 * an invisible or binary byte shows and every message stays short. */
static const char *quote_cell(char out[CELL_QUOTE_MAX + 4], const char *p, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, i = 0;
    for (; i < len; i++) {
        unsigned char ch = (unsigned char)p[i];
        bool plain = ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\';
        if (o + (plain ? 1 : 4) > CELL_QUOTE_MAX)
            break;
        if (plain) {
            out[o++] = (char)ch;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    if (i < len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return out;
}

static psched_status cell_error(const csv_cell *c, size_t at, const char *why)
{
    char q[CELL_QUOTE_MAX + 4];
    return psched_fail(PSCHED_EPARSE, "line %u column %zu: \"%s\" is not a whole action: %s",
                       c->line, (size_t)c->col + at, quote_cell(q, c->p, c->len), why);
}

static psched_status parse_number(const csv_cell *c, size_t *at, uint32_t *out, const char *what)
{
    size_t i = *at;
    uint64_t v = 0;
    if (i >= c->len || c->p[i] < '0' || c->p[i] > '9')
        return cell_error(c, i, what);
    for (; i < c->len && c->p[i] >= '0' && c->p[i] <= '9'; i++) {
        v = v * 10 + (uint64_t)(c->p[i] - '0');
        if (v > UINT32_MAX)
            return cell_error(c, *at, "the number does not fit in 32 bits");
    }
    *out = (uint32_t)v;
    *at = i;
    return PSCHED_OK;
}

/* PyTorch actions this library does not model. They are PyTorch's names,
 * not op kinds: the op kinds' names come from psched_op_kind_str. */
static const char *const unmodelled[] = {"UNSHARD", "RESHARD", "REDUCE_GRAD"};

/* Does the cell continue with `name` at *at? */
static bool cell_has(const csv_cell *c, size_t at, const char *name, size_t *len)
{
    *len = strlen(name);
    return c->len - at >= *len && memcmp(c->p + at, name, *len) == 0;
}

/* No kind's PyTorch name is a prefix of another's, so the first match is
 * the only one. */
static psched_status parse_type(const csv_cell *c, size_t *at, uint8_t *kind)
{
    const char *name;
    size_t n;
    for (unsigned k = 0; k < named_kinds; k++) {
        n = kind_names[k].len;
        if (c->len - *at >= n && memcmp(c->p + *at, kind_names[k].text, n) == 0) {
            *kind = (uint8_t)k;
            *at += n;
            return PSCHED_OK;
        }
    }
    for (size_t t = 0; t < sizeof unmodelled / sizeof unmodelled[0]; t++) {
        if (cell_has(c, *at, unmodelled[t], &n)) {
            char q[CELL_QUOTE_MAX + 4];
            return psched_fail(PSCHED_EPARSE, "line %u column %zu: \"%s\": PyTorch action %s is "
                               "not supported (compute and send/recv actions only)",
                               c->line, (size_t)c->col + *at, quote_cell(q, c->p, c->len),
                               unmodelled[t]);
        }
    }
    char why[256] = "expected an action type (";
    size_t len = strlen(why);
    for (unsigned k = 0; (name = psched_op_kind_str((psched_op_kind)k, PSCHED_NAMING_PYTORCH));
         k++)
        len += (size_t)snprintf(why + len, len < sizeof why ? sizeof why - len : 0, "%s%s",
                                k ? ", " : "", name);
    if (len < sizeof why)
        snprintf(why + len, sizeof why - len, ") after the stage number");
    return cell_error(c, *at, why);
}

static psched_status parse_action(const csv_cell *c, size_t *at, csv_op *op)
{
    op->col = c->col + (uint32_t)*at;
    op->line = c->line;
    op->flags = 0;
    psched_status st = parse_number(c, at, &op->stage, "expected a stage number");
    if (st == PSCHED_OK)
        st = parse_type(c, at, &op->kind);
    if (st == PSCHED_OK)
        st = parse_number(c, at, &op->mb, "expected the micro-batch number after the type");
    return st;
}

static bool is_compute(uint8_t kind)
{
    return kind <= PSCHED_OP_BW;
}

static psched_status file_push(csv_file *f, const csv_op *op)
{
    csv_op *ops = psched__grow(f->ops, &f->cap, f->count, sizeof *f->ops, 256);
    if (!ops)
        return PSCHED_ENOMEM_FAIL();
    f->ops = ops;
    /* a vocabulary pass names its shard, a collective its index: no stage */
    if (op->kind < PSCHED_OP_VOCAB_S &&
        (!f->staged || op->stage > f->ops[f->max_stage_at].stage)) {
        f->max_stage_at = f->count;
        f->staged = true;
    }
    if (f->count == 0 || op->mb > f->ops[f->max_mb_at].mb)
        f->max_mb_at = f->count;
    f->ops[f->count++] = *op;
    return PSCHED_OK;
}

/* A batched group `[a;b;...]BATCH`: two or more SEND/RECV actions, chained
 * by BATCH_NEXT on all but the last. */
static psched_status parse_group(csv_file *f, const csv_cell *c)
{
    static const char tail[] = "]BATCH";
    size_t at = 1, n = 0;
    psched_status st;
    for (;;) {
        csv_op op;
        size_t start = at;
        if ((st = parse_action(c, &at, &op)) != PSCHED_OK)
            return st;
        if (op.kind < PSCHED_OP_SEND_F || op.kind > PSCHED_OP_RECV_B) /* compute or copy */
            return cell_error(c, start, "a batched group holds SEND/RECV actions only");
        if (n > 0)
            f->ops[f->count - 1].flags = PSCHED_OP_BATCH_NEXT;
        if ((st = file_push(f, &op)) != PSCHED_OK)
            return st;
        n++;
        if (at < c->len && c->p[at] == ';') {
            at++;
            continue;
        }
        break;
    }
    if (c->len - at != sizeof tail - 1 || memcmp(c->p + at, tail, sizeof tail - 1) != 0)
        return cell_error(c, at, "expected ';' or the end \"]BATCH\" of a batched group");
    if (n < 2)
        return cell_error(c, 0, "a batched group holds at least two actions");
    return PSCHED_OK;
}

/* Parses one trimmed, non-empty cell into one op, an overlapped pair or a
 * batched group, appended to @p f. */
static psched_status parse_cell(csv_file *f, const csv_cell *c)
{
    static const char tail[] = ")OVERLAP_F_B";
    size_t at = 0;
    psched_status st;
    csv_op ops[2];
    if (c->p[0] == '[')
        return parse_group(f, c);
    if (c->p[0] != '(') {
        if ((st = parse_action(c, &at, &ops[0])) != PSCHED_OK)
            return st;
        if (at != c->len)
            return cell_error(c, at, "unexpected text after the action");
        return file_push(f, &ops[0]);
    }
    at = 1;
    if ((st = parse_action(c, &at, &ops[0])) != PSCHED_OK)
        return st;
    if (at >= c->len || c->p[at] != ';')
        return cell_error(c, at, "expected ';' between the two actions of an overlapped pair");
    at++;
    if ((st = parse_action(c, &at, &ops[1])) != PSCHED_OK)
        return st;
    if (c->len - at != sizeof tail - 1 || memcmp(c->p + at, tail, sizeof tail - 1) != 0)
        return cell_error(c, at, "an overlapped pair ends with \")OVERLAP_F_B\"");
    if (!is_compute(ops[0].kind) || !is_compute(ops[1].kind))
        return cell_error(c, 0, "an overlapped pair holds two compute actions (F, I, W, B)");
    ops[0].flags = PSCHED_OP_OVERLAP_NEXT;
    if ((st = file_push(f, &ops[0])) != PSCHED_OK)
        return st;
    return file_push(f, &ops[1]);
}

static psched_status file_end_row(csv_file *f, uint32_t line)
{
    if (f->rows == PSCHED_MAX_DEVICES)
        return psched_fail(PSCHED_EINVAL, "line %u: more than %u rows (devices)", line,
                           PSCHED_MAX_DEVICES);
    size_t *ends = psched__grow(f->row_end, &f->rows_cap, f->rows, sizeof *f->row_end, 16);
    if (!ends)
        return PSCHED_ENOMEM_FAIL();
    f->row_end = ends;
    f->row_end[f->rows++] = f->count;
    return PSCHED_OK;
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* The header `# pipesched: chains=N`, only as the first line. */
static psched_status parse_header(csv_file *f, const char *p, size_t len, uint32_t line)
{
    static const char head[] = "# pipesched: chains=";
    size_t n = sizeof head - 1;
    char q[CELL_QUOTE_MAX + 4];
    if (line != 1)
        return psched_fail(PSCHED_EPARSE, "line %u column 1: \"%s\": a line starting with '#' "
                           "is read only as the first line, the header \"# pipesched: "
                           "chains=N\"", line, quote_cell(q, p, len));
    if (len != n + 1 || memcmp(p, head, n) != 0 || (p[n] != '1' && p[n] != '2'))
        return psched_fail(PSCHED_EPARSE, "line 1 column 1: \"%s\" is not the header \"# "
                           "pipesched: chains=N\" with N = 1 or 2 (no other '#' line is read)",
                           quote_cell(q, p, len));
    f->chains = (uint32_t)(p[n] - '0');
    return PSCHED_OK;
}

/* The common cell, `<stage><F|I|W|B><micro-batch>` with numbers of at
 * most 9 digits, no blanks, ended by ',' or the line's end: read in one
 * step and appended; *start moves past it. False (nothing read) for any
 * other cell, which the general parser then reads, with its messages. The
 * PyTorch names are prefix-free, so the general parser reads this cell as
 * the same op. */
static inline bool fast_cell(csv_file *f, const char *p, size_t len, uint32_t line,
                             size_t *start)
{
    size_t i = *start, lim;
    uint32_t stage = 0, mb = 0;
    if (f->count == f->cap)
        return false; /* file_push grows the table */
    lim = i + 9 < len ? i + 9 : len;
    if (i >= lim || (unsigned)(p[i] - '0') > 9)
        return false;
    for (; i < lim && (unsigned)(p[i] - '0') <= 9; i++)
        stage = stage * 10 + (uint32_t)(p[i] - '0');
    if (i >= len)
        return false;
    uint8_t kind = letter_kind[(unsigned char)p[i++]];
    if (kind == 0xff)
        return false;
    size_t m0 = i;
    lim = i + 9 < len ? i + 9 : len;
    for (; i < lim && (unsigned)(p[i] - '0') <= 9; i++)
        mb = mb * 10 + (uint32_t)(p[i] - '0');
    if (i == m0 || (i < len && p[i] != ','))
        return false; /* no number, a tenth digit, or more text */
    size_t n = f->count;
    csv_op *op = &f->ops[n];
    op->stage = stage;
    op->mb = mb;
    op->kind = kind;
    op->flags = 0;
    op->line = line;
    op->col = (uint32_t)(*start + 1);
    if (!f->staged || stage > f->ops[f->max_stage_at].stage) { /* F, I, W, B name stages */
        f->max_stage_at = n;
        f->staged = true;
    }
    if (n == 0 || mb > f->ops[f->max_mb_at].mb)
        f->max_mb_at = n;
    f->count = n + 1;
    *start = i + 1;
    return true;
}

static psched_status parse_line(csv_file *f, const char *p, size_t len, uint32_t line)
{
    const char *nul = memchr(p, '\0', len);
    if (nul)
        return psched_fail(PSCHED_EPARSE, "line %u column %zu: NUL byte in the input", line,
                           (size_t)(nul - p) + 1);
    const char *cr = memchr(p, '\r', len);
    if (cr)
        return psched_fail(PSCHED_EPARSE, "line %u column %zu: carriage return inside a line; rows "
                           "end with \"\\n\" or \"\\r\\n\" (CR-only line endings are not read)",
                           line, (size_t)(cr - p) + 1);
    if (len > 0 && p[0] == '#')
        return parse_header(f, p, len, line);
    size_t start = 0;
    while (start <= len) {
        if (fast_cell(f, p, len, line, &start))
            continue;
        const char *comma = memchr(p + start, ',', len - start);
        size_t end = comma ? (size_t)(comma - p) : len;
        size_t a = start, z = end;
        while (a < z && is_blank(p[a]))
            a++;
        while (z > a && is_blank(p[z - 1]))
            z--;
        if (z > a) {
            csv_cell c = {p + a, z - a, line, (uint32_t)(a + 1)};
            psched_status st = parse_cell(f, &c);
            if (st != PSCHED_OK)
                return st;
        }
        start = end + 1;
    }
    return file_end_row(f, line);
}

/* Every action takes at least four bytes of text ("0F0" and a separator),
 * so length / 4 + 1 ops bound the file: reserved once, the op array never
 * moves, and the pages past the last op are never written nor resident. */
static psched_status reserve_ops(csv_file *f, size_t length)
{
    size_t cap = length / 4 + 2;
    if (cap <= 256)
        return PSCHED_OK; /* file_push's first allocation covers it */
    f->ops = psched__reallocarray(NULL, cap, sizeof *f->ops);
    if (!f->ops)
        return PSCHED_ENOMEM_FAIL();
    f->cap = cap;
    psched__advise_huge(f->ops, cap * sizeof *f->ops);
    return PSCHED_OK;
}

static psched_status parse_text(csv_file *f, const char *text, size_t length)
{
    /* A leading UTF-8 byte order mark (editors on Windows write one) is
     * not part of the first cell, as for --costs-file. */
    size_t pos = length >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    uint32_t line = 1;
    psched_status reserved = reserve_ops(f, length);
    if (reserved != PSCHED_OK)
        return reserved;
    while (pos < length) {
        const char *nl = memchr(text + pos, '\n', length - pos);
        size_t end = nl ? (size_t)(nl - text) : length;
        size_t len = end - pos;
        if (nl && len > 0 && text[end - 1] == '\r')
            len--;
        psched_status st = parse_line(f, text + pos, len, line);
        if (st != PSCHED_OK)
            return st;
        if (line == UINT32_MAX)
            return psched_fail(PSCHED_EPARSE, "more than %u lines", UINT32_MAX);
        pos = end + 1;
        line++;
    }
    if (f->rows == 0)
        return psched_fail(PSCHED_EPARSE, "line 1 column 1: empty input, expected one row per "
                           "device");
    return PSCHED_OK;
}

/* ------------------------------------------------------ shape of the file */

/* EINVAL naming the op's place in the file and its text, then the rule. */
static psched_status op_fail(const csv_op *op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static psched_status op_fail(const csv_op *op, const char *fmt, ...)
{
    char text[48], why[256];
    psched_op o = {op->stage, op->mb, 0, op->kind, 0};
    va_list ap;
    psched__op_text(&o, text, sizeof text);
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return psched_fail(PSCHED_EINVAL, "line %u column %u: %s %s", op->line, op->col, text, why);
}

/* p, m, chains and v of the plan, from the file where the plan leaves them open. */
static psched_status resolve_shape(const csv_file *f, psched_plan *plan, bool given)
{
    /* A file of blank rows has no ops array at all (not even an element 0). */
    const csv_op *top_stage = f->staged ? &f->ops[f->max_stage_at] : NULL;
    const csv_op *top_mb = f->count ? &f->ops[f->max_mb_at] : NULL;
    psched_status st;
    if (given && plan->devices != f->rows)
        return psched_fail(PSCHED_EINVAL, "the file has %u rows (devices) but the plan has %u "
                           "devices", f->rows, plan->devices);
    if (given && f->chains && plan->chains != f->chains)
        return psched_fail(PSCHED_EINVAL, "the file's header says chains=%u but the plan has %u "
                           "chain%s", f->chains, plan->chains, plan->chains == 1 ? "" : "s");
    if (!given) {
        /* Micro-batch numbers count per chain: m = chains x (largest + 1). */
        uint32_t chains = f->chains ? f->chains : 1;
        if (f->count == 0)
            return psched_fail(PSCHED_EINVAL, "the file holds no action, so its shape cannot be "
                               "inferred; pass a plan");
        if ((uint64_t)chains * ((uint64_t)top_mb->mb + 1) > PSCHED_MAX_MICROBATCHES)
            return op_fail(top_mb, "has micro-batch %u, above the limit %u for %u chain%s",
                           top_mb->mb, PSCHED_MAX_MICROBATCHES / chains - 1, chains,
                           chains == 1 ? "" : "s");
        if ((st = psched_plan_set_devices(plan, f->rows)) != PSCHED_OK ||
            (st = psched_plan_set_chains(plan, chains)) != PSCHED_OK ||
            (st = psched_plan_set_microbatches(plan, chains * (top_mb->mb + 1))) != PSCHED_OK)
            return st;
    }
    if (plan->chunks != 0)
        return PSCHED_OK;
    if (!f->staged)
        return psched_fail(PSCHED_EINVAL, "the plan leaves chunks at 0 and the file holds no "
                           "pipeline action to infer them from");
    uint64_t stages = (uint64_t)top_stage->stage + 1;
    if (stages % f->rows != 0 || stages / f->rows > PSCHED_MAX_CHUNKS)
        return op_fail(top_stage, "has the largest stage, so the file has %llu stages, which is "
                       "not a multiple of its %u devices (rows) with at most %u chunks each",
                       (unsigned long long)stages, f->rows, PSCHED_MAX_CHUNKS);
    return psched_plan_set_chunks(plan, (uint32_t)(stages / f->rows));
}

static psched_status check_ranges(const csv_file *f, const psched_plan *plan)
{
    uint32_t stages = plan->devices * plan->chunks, mbs = psched__plan_chain_mbs(plan);
    for (size_t i = 0; i < f->count; i++) {
        const csv_op *op = &f->ops[i];
        if (op->stage >= stages && op->kind < PSCHED_OP_VOCAB_S)
            return op_fail(op, "has stage %u, but the plan has %u stages (p = %u, v = %u)",
                           op->stage, stages, plan->devices, plan->chunks);
        if (op->mb >= mbs)
            return op_fail(op, "has micro-batch %u, but the plan has %u micro-batches per chain",
                           op->mb, mbs);
    }
    return PSCHED_OK;
}

/* Device of every stage as seen in the file (UINT32_MAX: never seen); a
 * stage seen on two devices is an error. `seen_at` keeps the op that
 * fixed each stage's device, for the message. */
static psched_status observe_devices(const csv_file *f, uint32_t stages, uint32_t *dev,
                                     size_t *seen_at)
{
    for (uint32_t s = 0; s < stages; s++)
        dev[s] = UINT32_MAX;
    for (uint32_t d = 0; d < f->rows; d++) {
        for (size_t i = d ? f->row_end[d - 1] : 0; i < f->row_end[d]; i++) {
            uint32_t s = f->ops[i].stage;
            if (f->ops[i].kind >= PSCHED_OP_VOCAB_S)
                continue; /* a shard or a collective index, not a stage */
            if (dev[s] == UINT32_MAX) {
                dev[s] = d;
                seen_at[s] = i;
            } else if (dev[s] != d) {
                const csv_op *other = &f->ops[seen_at[s]];
                return op_fail(&f->ops[i], "puts stage %u on device %u, but line %u column %u "
                               "puts it on device %u; a stage runs on one device", s, d,
                               other->line, other->col, dev[s]);
            }
        }
    }
    return PSCHED_OK;
}

static bool map_fits(const uint32_t *dev, uint32_t p, uint32_t v, psched_placement kind)
{
    for (uint32_t s = 0; s < p * v; s++) {
        uint32_t want = kind == PSCHED_PLACEMENT_LOOP ? s % p : (s < p ? s : 2 * p - 1 - s);
        if (dev[s] != UINT32_MAX && dev[s] != want)
            return false;
    }
    return true;
}

static psched_status set_custom(psched_plan *plan, const uint32_t *dev)
{
    uint32_t p = plan->devices, v = plan->chunks;
    uint32_t *per = psched__calloc(p, sizeof *per);
    psched_status st = PSCHED_OK;
    if (!per)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t s = 0; s < p * v && st == PSCHED_OK; s++) {
        if (dev[s] == UINT32_MAX)
            st = psched_fail(PSCHED_EINVAL, "stage %u never appears and the stages fit neither "
                             "loop nor vshape placement, so the placement cannot be inferred; "
                             "pass a plan", s);
        else
            per[dev[s]]++;
    }
    for (uint32_t d = 0; d < p && st == PSCHED_OK; d++)
        if (per[d] != v)
            st = psched_fail(PSCHED_EINVAL, "device %u (line %u) runs %u stages; an inferred "
                             "custom placement needs exactly v = %u per device", d, d + 1,
                             per[d], v);
    psched__dealloc(per);
    if (st == PSCHED_OK)
        st = psched_plan_set_placement(plan, PSCHED_PLACEMENT_CUSTOM);
    for (uint32_t s = 0; s < p * v && st == PSCHED_OK; s++)
        st = psched_plan_set_stage_device(plan, s, dev[s]);
    return st;
}

/* Loop if the file fits it, else vshape (v = 2), else the observed map. */
static psched_status infer_placement(const csv_file *f, psched_plan *plan)
{
    uint32_t p = plan->devices, v = plan->chunks, stages = p * v;
    uint32_t *dev = psched__reallocarray(NULL, stages, sizeof *dev);
    size_t *seen_at = psched__reallocarray(NULL, stages, sizeof *seen_at);
    psched_status st = (dev && seen_at) ? PSCHED_OK : PSCHED_ENOMEM_FAIL();
    if (st == PSCHED_OK)
        st = observe_devices(f, stages, dev, seen_at);
    if (st == PSCHED_OK) {
        if (map_fits(dev, p, v, PSCHED_PLACEMENT_LOOP))
            st = psched_plan_set_placement(plan, PSCHED_PLACEMENT_LOOP);
        else if (v == 2 && map_fits(dev, p, v, PSCHED_PLACEMENT_VSHAPE))
            st = psched_plan_set_placement(plan, PSCHED_PLACEMENT_VSHAPE);
        else
            st = set_custom(plan, dev);
    }
    psched__dealloc(dev);
    psched__dealloc(seen_at);
    return st;
}

static psched_status check_devices(const csv_file *f, const psched_plan *plan)
{
    uint32_t stages = plan->devices * plan->chunks;
    uint32_t *dev = psched__reallocarray(NULL, (size_t)stages + 1, sizeof *dev);
    if (!dev)
        return PSCHED_ENOMEM_FAIL();
    for (uint32_t s = 0; s < stages; s++)
        dev[s] = psched_plan_stage_device(plan, s);
    psched_status st = PSCHED_OK;
    for (uint32_t row = 0; row < f->rows && st == PSCHED_OK; row++) {
        for (size_t i = row ? f->row_end[row - 1] : 0; i < f->row_end[row]; i++) {
            if (f->ops[i].kind >= PSCHED_OP_VOCAB_S)
                continue; /* the builder checks shards and collective indices */
            uint32_t want = dev[f->ops[i].stage]; /* check_ranges bounded the stage */
            if (want != row) {
                st = op_fail(&f->ops[i], "is on device %u (its row) but the plan's %s placement "
                             "puts stage %u on device %u", row,
                             psched__placement_name(plan->placement), f->ops[i].stage, want);
                break;
            }
        }
    }
    psched__dealloc(dev);
    return st;
}

static psched_status resolve_plan(const csv_file *f, const psched_plan *given, psched_plan **out)
{
    psched_plan *plan = NULL;
    psched_status st = given ? psched_plan_clone(given, &plan) : psched_plan_create(&plan);
    if (st != PSCHED_OK)
        return st;
    st = resolve_shape(f, plan, given != NULL);
    if (st == PSCHED_OK)
        st = check_ranges(f, plan);
    if (st == PSCHED_OK && plan->placement == PSCHED_PLACEMENT_AUTO)
        st = infer_placement(f, plan);
    if (st == PSCHED_OK)
        st = check_devices(f, plan);
    if (st == PSCHED_OK)
        st = psched__plan_check_resolved(plan);
    if (st != PSCHED_OK) {
        psched_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return PSCHED_OK;
}

static psched_status build(const csv_file *f, psched_plan *plan, psched_schedule **out)
{
    psched_builder *b = NULL;
    size_t total = f->rows ? f->row_end[f->rows - 1] : 0;
    psched_status st = psched__builder_create_for(plan, total, &b);
    if (st != PSCHED_OK)
        return st;
    for (uint32_t d = 0; d < f->rows && st == PSCHED_OK; d++) {
        size_t first = d ? f->row_end[d - 1] : 0, last = f->row_end[d];
        st = psched_builder_reserve(b, d, last - first);
        for (size_t i = first; i < last && st == PSCHED_OK; i++) {
            const csv_op *op = &f->ops[i];
            st = psched_builder_append(b, d, (psched_op_kind)op->kind, op->stage, op->mb,
                                       op->flags);
        }
    }
    if (st == PSCHED_OK)
        st = psched__builder_finish(b, plan, "csv", out);
    psched__builder_destroy(b);
    return st;
}

psched_status psched_import_csv(const char *text, size_t length, const psched_plan *plan,
                                psched_schedule **out)
{
    pthread_once(&kind_names_once, fill_kind_names);
    if (out)
        *out = NULL;
    if (!out || (!text && length))
        return psched_fail(PSCHED_EINVAL, "psched_import_csv: out must not be NULL, and text "
                           "only when length is 0");
    csv_file f = {0};
    psched_plan *resolved = NULL;
    psched_status st = parse_text(&f, text ? text : "", length);
    if (st == PSCHED_OK)
        st = resolve_plan(&f, plan, &resolved);
    if (st == PSCHED_OK) {
        st = build(&f, resolved, out);
        if (st != PSCHED_OK)
            psched_plan_destroy(resolved);
    }
    psched__dealloc(f.ops);
    psched__dealloc(f.row_end);
    return st;
}
