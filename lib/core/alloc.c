/* The one allocation path of the library, so tests can fail the N-th
 * allocation and check that every caller recovers (PSCHED_ENOMEM, no leak). */
#define _DEFAULT_SOURCE /* madvise, for memadvise.h */
#include "internal.h"
#include "memadvise.h"

#include <stdlib.h>

static _Thread_local long fail_after = -1;

void psched__alloc_fail_after(long count)
{
    fail_after = count;
}

static bool should_fail(void)
{
    if (fail_after < 0)
        return false;
    if (fail_after == 0)
        return true;
    fail_after--;
    return false;
}

void *psched__malloc(size_t size)
{
    if (should_fail())
        return NULL;
    return malloc(size ? size : 1);
}

void *psched__calloc(size_t n, size_t size)
{
    if (should_fail())
        return NULL;
    if (n == 0 || size == 0)
        return calloc(1, 1);
    return calloc(n, size);
}

void *psched__realloc(void *p, size_t size)
{
    if (should_fail())
        return NULL;
    return realloc(p, size ? size : 1);
}

void *psched__reallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    return psched__realloc(p, n * size);
}

void *psched__malloc_array_huge(size_t n, size_t size)
{
    const size_t huge = (size_t)2 << 20;
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    if (bytes < PSCHED_HUGE_ADVICE_MIN || bytes > SIZE_MAX - huge)
        return psched__malloc(bytes);
    if (should_fail())
        return NULL;
    /* whole huge pages from the first byte: one fault per 2 MiB (where
     * the kernel grants them) instead of one per 4 KiB */
    void *p = NULL;
    if (posix_memalign(&p, huge, (bytes + huge - 1) & ~(huge - 1)) != 0)
        return NULL;
    psched__advise_huge(p, (bytes + huge - 1) & ~(huge - 1));
    return p;
}

void psched__dealloc(void *p)
{
    free(p);
}

void psched_free(void *p)
{
    free(p);
}

void *psched__grow(void *array, size_t *cap, size_t len, size_t elem, size_t first)
{
    if (len < *cap)
        return array;
    size_t n = *cap ? 2 * *cap : first;
    void *v = psched__reallocarray(array, n, elem);
    if (v)
        *cap = n;
    return v;
}
