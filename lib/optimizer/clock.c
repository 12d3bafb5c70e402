/* The clock every solver's deadline reads: the monotonic clock, or a test
 * clock set per thread. Depends on nothing in the optimizer. */
#include "optimizer.h"

#include <math.h>
#include <time.h>

static _Thread_local double (*test_clock)(void);

void psched__set_test_clock(double (*clock)(void))
{
    test_clock = clock;
}

int psched__glpk_ms_left(double deadline)
{
    return (int)fmin(fmax(1, (deadline - psched__now()) * 1000.0), 2e9);
}

double psched__now(void)
{
    if (test_clock)
        return test_clock();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
