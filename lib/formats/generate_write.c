/* psched_generate_write: generate, validate and export without holding
 * the schedule's psched_ops or its text. For the compute CSV the
 * generator writes into a compact builder (4 bytes per op), the codes are
 * validated on one byte per cell (lib/core/compact.c) and written row by
 * row through the CSV writer's window, decoded a block at a time. Whatever
 * the compact form cannot hold or cannot prove valid takes the
 * psched_schedule path, so statuses and messages are psched_validate()'s. */
#include "formats.h"

/* ops decoded at a time (a pair is never split: one more op then) */
#define DECODE_BLOCK 4096

static psched_status write_compact(const psched_compact *c, psched_write_fn write, void *user)
{
    psched_op *block = psched__reallocarray(NULL, DECODE_BLOCK + 1, sizeof *block);
    if (!block)
        return PSCHED_ENOMEM_FAIL();
    psched_csv_writer *w = NULL;
    psched_status st = psched__csv_open(c->plan, c->offset[c->devices], false, write, user, &w);
    for (uint32_t d = 0; d < c->devices && st == PSCHED_OK; d++) {
        size_t n = c->offset[d + 1] - c->offset[d];
        for (size_t at = 0; at < n && st == PSCHED_OK;) {
            size_t k = n - at < DECODE_BLOCK ? n - at : DECODE_BLOCK;
            /* validated: an overlapped op is followed by its partner */
            if (c->code[c->offset[d] + at + k - 1] & PSCHED_CODE_OVERLAP)
                k++;
            psched__compact_decode(c, d, at, k, block);
            st = psched__csv_cells(w, block, k);
            at += k;
        }
        if (st == PSCHED_OK)
            st = psched__csv_end_row(w);
    }
    if (w) {
        psched_status closed = psched__csv_close(w, st == PSCHED_OK);
        if (st == PSCHED_OK)
            st = closed;
    }
    psched__dealloc(block);
    return st;
}

psched_status psched_generate_write(const psched_plan *plan, const char *name,
                                    psched_format format, uint32_t flags, psched_write_fn write,
                                    void *user)
{
    if (!write)
        return psched_fail(PSCHED_EINVAL, "psched_generate_write: write must not be NULL");
    if ((unsigned)format > (unsigned)PSCHED_FORMAT_CSV_COMMS_PYTORCH)
        return psched_fail(PSCHED_EINVAL, "psched_generate_write: unknown format %d (csv 0, "
                                          "ascii 1, json 2, csv-comms 3, chrome 4, svg 5, "
                                          "csv-comms-pytorch 6)", (int)format);
    if (flags & ~(uint32_t)PSCHED_EXPORT_COLOR)
        return psched_fail(PSCHED_EINVAL, "psched_generate_write: unknown flags 0x%x (only "
                           "PSCHED_EXPORT_COLOR = 0x%x is defined)",
                           (unsigned)flags, (unsigned)PSCHED_EXPORT_COLOR);
    psched_schedule *s = NULL;
    psched_compact *c = NULL;
    psched_status st = psched__generate_ex(plan, name, format == PSCHED_FORMAT_CSV, &s, &c);
    if (st != PSCHED_OK)
        return st;
    if (c) {
        if (psched__compact_valid(c)) {
            st = write_compact(c, write, user);
            psched__compact_destroy(c);
            return st;
        }
        if ((st = psched__compact_expand(c, &s)) != PSCHED_OK)
            return st;
    }
    st = psched_validate(s);
    if (st == PSCHED_OK)
        st = psched_export_write(s, NULL, format, flags, write, user);
    psched_schedule_destroy(s);
    return st;
}
