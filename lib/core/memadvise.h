/* Advice to the kernel about the library's largest arrays (a schedule's op
 * records, a report's op times, the execution engine's position index).
 *
 * Each is written once, front to back, right after it is allocated, so
 * with 4 KiB pages a million-op schedule takes thousands of first-touch
 * page faults, which cost as much as generating the ops. Asking for
 * transparent huge pages cuts that to a handful where the system leaves
 * the choice to the program (THP "madvise" mode); elsewhere the call is a
 * no-op. Pages no op is written to are still never made resident: the
 * kernel only backs a huge page when something in it is touched.
 *
 * Linux only. A file including this header defines _DEFAULT_SOURCE before
 * its first #include, so <sys/mman.h> declares madvise and MADV_HUGEPAGE. */
#ifndef PSCHED_MEMADVISE_H
#define PSCHED_MEMADVISE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Arrays below this size take few faults; leave them alone. */
#define PSCHED_HUGE_ADVICE_MIN (4u << 20)

/* Advise huge pages for the whole 2 MiB-aligned pages inside [p, p+bytes). */
static inline void psched__advise_huge(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (!p || bytes < PSCHED_HUGE_ADVICE_MIN)
        return;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice: failure changes nothing */
#else
    (void)p;
    (void)bytes;
#endif
}

#endif
