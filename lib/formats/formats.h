/* Per-format exporters behind psched_export() (format_csv.c). Private to
 * lib/: each takes validated arguments (schedule non-NULL, report NULL or of
 * the same device count, text non-NULL); the timeline formats (ascii,
 * chrome, svg) always get a report: psched_export simulates when the caller
 * passes none. */
#ifndef PSCHED_FORMATS_H
#define PSCHED_FORMATS_H

#include "internal.h"

/* pytorch: PyTorch's exact dialect (no batched-group cells, no header). */
PSCHED_INTERNAL psched_status psched__export_csv(const psched_schedule *schedule, bool pytorch,
                                                 char **text, size_t *length);
/* The same CSV handed to `write` in pieces (a 1 MiB window): pairs and
 * groups are checked before the first byte. */
PSCHED_INTERNAL psched_status psched__export_csv_write(const psched_schedule *schedule,
                                                       bool pytorch, psched_write_fn write,
                                                       void *user);
/* The CSV writer on its own, for sources other than a psched_schedule
 * (psched_generate_write's compact ops): open writes the chains header;
 * cells writes n ops of the current row (whole cells only: a pair or a
 * batched group never split between calls; pairs and groups well formed,
 * the caller has checked them); end_row ends the row; close flushes when
 * `flush` and frees. A write callback's refusal is PSCHED_EIO. */
typedef struct psched_csv_writer psched_csv_writer;
PSCHED_INTERNAL psched_status psched__csv_open(const psched_plan *plan, size_t total_ops,
                                               bool pytorch, psched_write_fn write, void *user,
                                               psched_csv_writer **out);
PSCHED_INTERNAL psched_status psched__csv_cells(psched_csv_writer *w, const psched_op *ops,
                                                size_t n);
PSCHED_INTERNAL psched_status psched__csv_end_row(psched_csv_writer *w);
PSCHED_INTERNAL psched_status psched__csv_close(psched_csv_writer *w, bool flush);
PSCHED_INTERNAL psched_status psched__export_ascii(const psched_schedule *schedule,
                                                   const psched_report *report, uint32_t flags,
                                                   char **text, size_t *length);
PSCHED_INTERNAL psched_status psched__export_json(const psched_schedule *schedule,
                                                  const psched_report *report, char **text,
                                                  size_t *length);
PSCHED_INTERNAL psched_status psched__export_chrome(const psched_schedule *schedule,
                                                    const psched_report *report, char **text,
                                                    size_t *length);
PSCHED_INTERNAL psched_status psched__export_svg(const psched_schedule *schedule,
                                                 const psched_report *report, char **text,
                                                 size_t *length);

#endif
