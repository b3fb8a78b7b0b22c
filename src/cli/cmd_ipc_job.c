/*
 * ipc as one rank per GPU under mpirun (one node). Rank 0 measures the
 * baselines, coordinates the run and serves worker 0 itself; ranks 1..N-1
 * join the run it publishes. The rendezvous (it carries the run's token)
 * reaches them by MPI, never by a command line. Rank 0 alone prints: the
 * tables, the JSON, and every refusal the ranks share. Two words go from
 * rank 0 to all: before the run, go (the rendezvous) or stop; after it, rank
 * 0's exit code, which every rank returns. A joined rank speaks only of a
 * failure of its own (one rank 0 did not see).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "job.h"
#include "report/text.h"

/* What rank 0 tells the others before the run: go (the rendezvous), or stop (rendezvous empty). */
typedef struct {
    int go;
    char rendezvous[PSC_IPC_RENDEZVOUS_LEN];
} psc_ipc_word_t;

typedef struct {
    psc_cli_job_t *job;
    int sent;
} psc_ipc_herald_t;

static int psc__tell(psc_ipc_herald_t *h, const char *rendezvous)
{
    psc_ipc_word_t w;

    memset(&w, 0, sizeof(w));
    w.go = rendezvous != NULL;
    if (rendezvous)
        snprintf(w.rendezvous, sizeof(w.rendezvous), "%s", rendezvous);
    h->sent = 1;
    return psc_cli_job_bcast(h->job, &w, (int)sizeof(w));
}

/* psc_ipc_run's publish: the rendezvous, or NULL when the run ended before its workers could join. */
static int psc__publish(const char *rendezvous, void *arg)
{
    return psc__tell(arg, rendezvous) != PSC_EXIT_OK;
}

/* Rank r's GPU: -d's r-th entry, else GPU r (node-local rank r: the job is one node's). */
static int psc__rank_gpus(const psc_context_t *ctx, const psc_cli_opts_t *o, const psc_cli_job_t *job, int *devs)
{
    int n = psc_device_count(ctx);

    if (o->ndev && o->ndev != job->size) {
        psc_report_printf(stderr, "p2pscope: -d lists %d GPU%s for %d ranks: accepted one GPU per rank, in rank order (a GPU "
                "may be listed twice)\n", o->ndev, o->ndev == 1 ? "" : "s", job->size);
        return PSC_EXIT_USAGE;
    }
    if (!o->ndev && job->size > n) {
        psc_report_printf(stderr, "p2pscope: %d ranks, but this node shows %d GPU%s: accepted at most one rank per GPU, or -d "
                "with one GPU per rank (a GPU may be listed twice: -d 0,0)\n", job->size, n, n == 1 ? "" : "s");
        return PSC_EXIT_ENV;
    }
    for (int r = 0; r < job->size; r++)
        devs[r] = o->ndev ? o->devs[r] : r;
    return psc_cli_check_devices(ctx, o); /* -d's GPUs exist; the default's are below the count */
}

static int psc__rank0(const psc_cli_opts_t *o, psc_cli_job_t *job)
{
    psc_ipc_herald_t h = {job, 0};
    int devs[PSC_CLI_MAX_DEVS];
    psc_context_t *ctx = NULL;
    char err[512];
    psc_status_t st;
    int rc;

    if (job->size > PSC_CLI_MAX_DEVS) {
        psc_report_printf(stderr, "p2pscope: %d ranks: accepted 2 to %d\n", job->size, PSC_CLI_MAX_DEVS);
        rc = PSC_EXIT_USAGE;
    } else if ((st = psc_context_create(&ctx, err, sizeof(err))) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", err);
        rc = psc_cli_exit_of(st, PSC_EXIT_ENV);
    } else if ((rc = psc__rank_gpus(ctx, o, job, devs)) == PSC_EXIT_OK) {
        rc = psc_cmd_ipc_run(ctx, o, devs, job->size, psc__publish, &h);
    }
    psc_context_destroy(ctx);
    if (!h.sent) /* stopped before the run: the others stop too */
        psc__tell(&h, NULL);
    return rc;
}

/* A joined rank: its worker's life; 0, or 1 with why (a failure of its own, or the run's end rank 0 names). */
static int psc__rank_n(psc_cli_job_t *job, char *why, size_t len)
{
    psc_ipc_word_t w;

    memset(&w, 0, sizeof(w));
    if (psc_cli_job_bcast(job, &w, (int)sizeof(w)) != PSC_EXIT_OK) {
        snprintf(why, len, "no word from rank 0 (MPI_Ibcast failed)");
        return PSC_EXIT_FAILED;
    }
    if (!w.go)
        return PSC_EXIT_OK; /* rank 0 stopped before the run, and says why */
    w.rendezvous[sizeof(w.rendezvous) - 1] = '\0';
    return psc_ipc_worker_join(w.rendezvous, job->rank, why, len) == PSC_OK ? PSC_EXIT_OK : PSC_EXIT_FAILED;
}

int psc_cmd_ipc_job(const psc_cli_opts_t *o, psc_cli_job_t *job, int *argc, char ***argv)
{
    char why[512];
    int rc = psc_cli_ipc_corrupt_env(o); /* each rank's worker reads it from its own environment */

    if (rc != PSC_EXIT_OK)
        return rc;
    if ((rc = psc_cli_job_start(job, 1, argc, argv, why, sizeof(why))) != PSC_EXIT_OK) {
        if (job->rank == 0)
            psc_report_printf(stderr, "p2pscope: %s\n", why);
        psc_cli_job_end(job);
        return rc;
    }
    if (job->rank == 0) {
        rc = psc__rank0(o, job);
        if (psc_cli_job_bcast(job, &rc, (int)sizeof(rc)) != PSC_EXIT_OK && rc == PSC_EXIT_OK)
            rc = PSC_EXIT_FAILED;
    } else {
        int own = psc__rank_n(job, why, sizeof(why)), rc0 = PSC_EXIT_FAILED;

        psc_cli_job_bcast(job, &rc0, (int)sizeof(rc0));
        /* Rank 0 named what ended the run; a failure it did not see is this rank's to say. */
        if (own != PSC_EXIT_OK && rc0 == PSC_EXIT_OK)
            psc_report_printf(stderr, "p2pscope ipc: rank %d: %s\n", job->rank, why);
        rc = rc0 != PSC_EXIT_OK ? rc0 : own;
    }
    psc_cli_job_end(job);
    return rc;
}
