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
