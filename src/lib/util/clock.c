/* The one clock of the library's own timing: CLOCK_MONOTONIC in nanoseconds. */
#include <time.h>

#include "internal.h"

double psc__now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
