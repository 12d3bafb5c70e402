/* The one allocation path of the library, so tests can fail the N-th
 * allocation and check that every caller recovers (PSCHED_ENOMEM, no leak). */
#include "internal.h"

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
