/*
 * A watchdog for host calls that may block (watchdog.c): a thread sleeps until
 * the armed call's deadline and, only if it passes, calls the owner's fire
 * function (coll's and psc_allreduce_tune's: abort their NCCL communicators,
 * so a call blocked in NCCL returns). Arming is a clock read and an atomic
 * store; the thread wakes about once per timeout, never per call.
 */
#ifndef PSC_UTIL_WATCHDOG_H
#define PSC_UTIL_WATCHDOG_H

#include <pthread.h>
#include <stdint.h>

typedef struct {
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;                 /* under mu: the thread ends */
    int64_t deadline;         /* atomic: CLOCK_MONOTONIC ns when the armed call is late; 0 none armed;
                                 PSC__WATCHDOG_FIRED: it was late, fire() runs or ran */
    int64_t timeout_ns;
    void (*fire)(void *arg);  /* called by the thread, holding mu, once per late call */
    void *arg;
} psc_watchdog_t;

#define PSC__WATCHDOG_FIRED INT64_MIN

/* CLOCK_MONOTONIC in ns. */
int64_t psc__mono_ns(void);

/* The thread, for calls of at most timeout_ns (at least 1) each: 0, or the errno pthread_create gave. */
int psc__watchdog_start(psc_watchdog_t *w, int64_t timeout_ns, void (*fire)(void *arg), void *arg);

/* The thread ended and joined (nothing where it never started). */
void psc__watchdog_stop(psc_watchdog_t *w);

/* Before a call that may block: late a timeout from now. */
void psc__watchdog_arm(psc_watchdog_t *w);

/* Whether the armed call was found late (fire() may still be running: psc__watchdog_disarm waits for it). */
int psc__watchdog_late(psc_watchdog_t *w);

/* After the call: 1 when it was late (fire() has returned), else 0; disarmed either way. */
int psc__watchdog_disarm(psc_watchdog_t *w);

#endif
