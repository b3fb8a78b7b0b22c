/* The watchdog of host calls that may block (watchdog.h): one thread per owner, woken about once per timeout. */
#include "util/watchdog.h"

#include <time.h>

int64_t psc__mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *psc__watchdog_main(void *arg)
{
    psc_watchdog_t *w = arg;

    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        int64_t d = __atomic_load_n(&w->deadline, __ATOMIC_ACQUIRE), now = psc__mono_ns(), until;
        struct timespec ts;

        /* still the same call, still armed: it is late */
        if (d > 0 && now >= d &&
            __atomic_compare_exchange_n(&w->deadline, &d, PSC__WATCHDOG_FIRED, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            w->fire(w->arg); /* the blocked call returns; its owner learns it at disarm */
            continue;
        }
        /* none armed (or fired): a call armed from now on is late no sooner than a timeout from now */
        until = d > 0 ? d : now + w->timeout_ns;
        ts.tv_sec = (time_t)(until / 1000000000);
        ts.tv_nsec = (long)(until % 1000000000);
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int psc__watchdog_start(psc_watchdog_t *w, int64_t timeout_ns, void (*fire)(void *arg), void *arg)
{
    pthread_condattr_t ca;
    int e;

    w->timeout_ns = timeout_ns < 1 ? 1 : timeout_ns;
    w->fire = fire;
    w->arg = arg;
    w->stop = 0;
    w->deadline = 0;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if ((e = pthread_create(&w->thread, NULL, psc__watchdog_main, w)) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        return e;
    }
    w->started = 1;
    return 0;
}

void psc__watchdog_stop(psc_watchdog_t *w)
{
    if (!w->started)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->started = 0;
}

void psc__watchdog_arm(psc_watchdog_t *w)
{
    if (w->started)
        __atomic_store_n(&w->deadline, psc__mono_ns() + w->timeout_ns, __ATOMIC_RELEASE);
}

int psc__watchdog_late(psc_watchdog_t *w)
{
    return w->started && __atomic_load_n(&w->deadline, __ATOMIC_ACQUIRE) == PSC__WATCHDOG_FIRED;
}

int psc__watchdog_disarm(psc_watchdog_t *w)
{
    if (!w->started || __atomic_exchange_n(&w->deadline, 0, __ATOMIC_ACQ_REL) != PSC__WATCHDOG_FIRED)
        return 0;
    pthread_mutex_lock(&w->mu); /* the thread holds it until fire() is done */
    pthread_mutex_unlock(&w->mu);
    return 1;
}
