/*
 * Pins the calling thread, and the processes it starts from then on, to the first CPU it may run on, as mpirun's
 * default binding does to a rank; *was gets the set to put back (sched_setaffinity(0, sizeof(*was), was)). For
 * tests that fail when a wait starves another thread of that one CPU. Needs _GNU_SOURCE and cmocka included first.
 */
#ifndef PSC_TEST_ONE_CPU_H
#define PSC_TEST_ONE_CPU_H

#include <sched.h>

static inline void psc_test_pin_one_cpu(cpu_set_t *was)
{
    cpu_set_t one;

    assert_int_equal(sched_getaffinity(0, sizeof(*was), was), 0);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, was)) {
            CPU_SET(c, &one);
            break;
        }
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
}

#endif
