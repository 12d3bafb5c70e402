/* Timing and memory measurement for pipesched-bench. See bench.h. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

double bench_now(bench_clock clock)
{
    struct timespec t;
    clock_gettime(clock == BENCH_CLOCK_CPU ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Samples so the measurement lasts about min_time, within the bounds; odd,
 * so the median is one sample. */
static int sample_count(const bench_cfg *cfg, double per_sample)
{
    double want = per_sample > 0 ? cfg->min_time / per_sample : cfg->max_samples;
    int n = want > cfg->max_samples ? cfg->max_samples : (int)want;
    if (n < cfg->min_samples)
        n = cfg->min_samples;
    return n | 1;
}

bool bench_time(bench_fn fn, void *arg, const bench_cfg *cfg, bench_stats *out)
{
    double t0 = bench_now(cfg->clock);
    if (!fn(arg))
        return false;
    double once = bench_now(cfg->clock) - t0;
    long batch = 1;
    if (once < cfg->sample_s)
        batch = once > 1e-9 ? (long)(cfg->sample_s / once) + 1 : 100000;
    if (batch > 100000)
        batch = 100000;
    int n = sample_count(cfg, once * (double)batch);
    double *t = malloc(sizeof *t * (size_t)n);
    if (!t)
        return false;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        t0 = bench_now(cfg->clock);
        for (long k = 0; k < batch && ok; k++)
            ok = fn(arg);
        t[i] = (bench_now(cfg->clock) - t0) / (double)batch;
    }
    if (ok) {
        qsort(t, (size_t)n, sizeof *t, cmp_double);
        out->median = t[n / 2];
        out->min = t[0];
        out->max = t[n - 1];
        out->samples = n;
        out->batch = batch;
    }
    free(t);
    return ok;
}

/* A "Vm...:   1234 kB" line of /proc/self/status, in bytes; -1 if absent. */
static double status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    double bytes = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, n) == 0 && line[n] == ':') {
            bytes = 1024.0 * strtod(line + n + 1, NULL);
            break;
        }
    }
    fclose(f);
    return bytes;
}

/* Resets the kernel's peak resident size (VmHWM) to the current one. */
static bool reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

bool bench_memory_available(void)
{
    return reset_peak() && status_bytes("VmHWM") >= 0 && status_bytes("VmRSS") >= 0;
}

double bench_peak_bytes(bench_fn fn, void *arg)
{
#if defined(__GLIBC__)
    /* Free heap pages would be reused without raising the resident size;
     * handing them back makes every page the call touches count. */
    malloc_trim(0);
#endif
    if (!reset_peak())
        return -1;
    double before = status_bytes("VmRSS");
    if (before < 0 || !fn(arg))
        return -1;
    double peak = status_bytes("VmHWM");
    return peak < 0 ? -1 : peak - before;
}

double bench_resident_bytes(void)
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
    return status_bytes("VmRSS");
}
