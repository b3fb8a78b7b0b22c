/*
 * Workers that join a run from elsewhere (psc_ipc_opts_t's publish: one
 * rank per GPU under mpirun). The coordinator makes the listener only,
 * serves worker 0 in a thread of its own process, and hands the rendezvous
 * to its caller, whose other ranks call psc_ipc_worker_join. Nothing is
 * spawned, killed or reaped: a joined worker's end is its closed connection.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ipc/ipc_join.h"
#include "ipc/ipc_serve.h"

struct psc_ipc_self {
    pthread_t thread;
    int started;
    psc_ipc_worker_conf_t conf;
    psc_ipc_err_t err; /* the thread's, read after the join */
    int rc;
};

static void *psc__self_main(void *arg)
{
    psc_ipc_self_t *self = arg;

    self->rc = psc__ipc_serve(&self->conf, &self->err);
    return NULL;
}

psc_status_t psc__ipc_join_start(int nworkers, int (*publish)(const char *, void *), void *arg, int *published,
                                 psc_ipc_run_t **run_out, psc_ipc_self_t **self_out, psc_ipc_err_t *err)
{
    char rdv[PSC_IPC_RENDEZVOUS_LEN];
    psc_ipc_run_t *run = NULL;
    psc_ipc_self_t *self;
    const char *path;
    psc_status_t st;
    int e;

    if (!(self = calloc(1, sizeof(*self))))
        return psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "no memory for the run's own worker");
    if ((st = psc__ipc_run_listen(nworkers, &run, err)) != PSC_OK)
        goto fail;
    path = psc__ipc_listener_path(psc__ipc_run_listener(run));
    if ((st = psc__ipc_rendezvous_format(path, psc__ipc_run_token(run), nworkers, rdv, sizeof(rdv), err)) != PSC_OK ||
        (st = psc__ipc_worker_conf_rendezvous(&self->conf, rdv, 0, err)) != PSC_OK)
        goto fail;
    self->conf.in_process = 1;
    *published = 1;
    if (publish(rdv, arg) != 0) {
        st = psc__ipc_fail(err, PSC_ERR_IO, "the caller's publish could not hand the rendezvous to the other "
                           "workers");
        goto fail;
    }
    /* After publish, however long it took: the listener waits, and worker 0's own waits start now. */
    if ((e = pthread_create(&self->thread, NULL, psc__self_main, self)) != 0) {
        st = psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "cannot start the thread of worker 0: %s", strerror(e));
        goto fail;
    }
    self->started = 1;
    *run_out = run;
    *self_out = self;
    return PSC_OK;
fail:
    psc__ipc_run_destroy(run, 0);
    psc__ipc_join_end(self, NULL);
    return st;
}

int psc__ipc_join_end(psc_ipc_self_t *self, psc_ipc_err_t *err)
{
    int rc = 0;

    if (!self)
        return 0;
    if (self->started) {
        pthread_join(self->thread, NULL);
        rc = self->rc;
        if (rc != 0 && err)
            *err = self->err;
    }
    free(self);
    return rc;
}

psc_status_t psc_ipc_worker_join(const char *rendezvous, int rank, char *why, size_t len)
{
    psc_ipc_worker_conf_t conf;
    psc_ipc_err_t err = {PSC_OK, ""};
    psc_status_t st = PSC_OK;

    if (rank < 1)
        st = psc__ipc_fail(&err, PSC_ERR_INVALID, "psc_ipc_worker_join: rank %d: accepted 1 and up (worker 0 is "
                           "the coordinator's own)", rank);
    else if ((st = psc__ipc_worker_conf_rendezvous(&conf, rendezvous, rank, &err)) == PSC_OK &&
             psc__ipc_serve(&conf, &err) != 0)
        st = err.st != PSC_OK ? err.st : PSC_ERR_IO;
    if (st != PSC_OK && why && len)
        snprintf(why, len, "%s", err.msg);
    return st;
}
