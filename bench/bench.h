/* Shared by the benchmark's files: timing of repeated calls and the peak
 * resident memory of one call. Not part of the library. */
#ifndef PSCHED_BENCH_H
#define PSCHED_BENCH_H

#include <stdbool.h>
#include <stddef.h>

/* One call of the measured operation; false when it failed. */
typedef bool (*bench_fn)(void *arg);

typedef enum bench_clock {
    /* CPU time of the calling thread: what the code costs, whatever else
     * shares the machine (the default). */
    BENCH_CLOCK_CPU,
    /* Wall-clock time: what a user waits on an otherwise idle machine. */
    BENCH_CLOCK_WALL
} bench_clock;

typedef struct bench_cfg {
    bench_clock clock;
    double min_time;   /* seconds of samples to collect per measurement */
    double sample_s;   /* a sample repeats the call until it lasts this long */
    int min_samples;   /* at least this many samples, even for slow calls */
    int max_samples;
} bench_cfg;

/* Seconds per call: median, fastest and slowest sample. */
typedef struct bench_stats {
    double median, min, max;
    int samples; /* samples taken */
    long batch;  /* calls per sample (times are divided by it) */
} bench_stats;

/* Seconds on the configured clock. */
double bench_now(bench_clock clock);

/* One warm-up call, then samples of `batch` calls each, where the batch is
 * sized so a sample lasts cfg->sample_s (clock resolution and call
 * overhead stay negligible) and the sample count so the whole measurement
 * lasts about cfg->min_time. False when a call fails. */
bool bench_time(bench_fn fn, void *arg, const bench_cfg *cfg, bench_stats *out);

/* True when bench_peak_bytes can measure on this system. */
bool bench_memory_available(void);

/* Peak resident bytes one call of fn adds on top of what the process holds
 * before it: free heap memory is handed back to the system, the kernel's
 * resident high-water mark is reset to the current resident size
 * (/proc/self/clear_refs, "5"), fn runs once, and the new high-water mark
 * (VmHWM) minus the resident size before the call (VmRSS) is the answer.
 * Negative when the method is unavailable or the call failed. */
double bench_peak_bytes(bench_fn fn, void *arg);

/* Resident bytes of the process (VmRSS) once free heap memory is handed
 * back to the system; negative when unavailable. Two readings around a call
 * whose result is kept give what the result holds. */
double bench_resident_bytes(void);

/* One measured line of any section of the benchmark. */
typedef struct bench_record {
    const char *section, *schedule, *operation, *note;
    unsigned p, m, v;
    size_t ops;
    bench_stats t;
    double bytes; /* bytes processed per call, 0 when not a byte stream */
    double mem;   /* peak resident bytes per call, < 0 when not measured */
    double kept;  /* resident bytes the call's result holds, < 0 when not measured */
    double ratio; /* scaling: time over the previous size's, 0 for the first */
} bench_record;

/* Checks the records against the targets of issue 7 and prints one line
 * per target (text), or the "targets" member of the JSON object. */
void bench_targets(const bench_record *records, size_t count, bool json);

#endif
