/*
 * coll under mpirun: one process per GPU (or -g GPUs), on one node or many.
 * Each process takes the GPUs its rank on its node names (nccl-tests' rule:
 * node-local rank x GPUs per process, from NCCL_TESTS_DEVICE), the NCCL id
 * goes from rank 0 to all by MPI, the figures are combined by MPI, and rank
 * 0 alone prints the table. A rank whose run fails says why and ends the
 * job (the others would otherwise wait in a collective for it).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "job.h"
#include "report/text.h"

static int psc__bcast(void *buf, size_t len, void *arg)
{
    return psc_cli_job_bcast(arg, buf, (int)len) != PSC_EXIT_OK;
}

static int psc__allreduce(double *v, int n, int how, void *arg)
{
    return psc_cli_job_allreduce(arg, v, n, how) != PSC_EXIT_OK;
}

static int psc__allgather(const void *mine, void *all, size_t len, void *arg)
{
    return psc_cli_job_allgather(arg, mine, all, (int)len) != PSC_EXIT_OK;
}

/* This process's GPUs: --devices' entries for its node-local rank, else nccl-tests' numbering. */
static int psc__gpus(const psc_context_t *ctx, const psc_cli_opts_t *o, const psc_cli_job_t *job, int *devs)
{
    int per = o->coll_gpus ? o->coll_gpus : 1, n = psc_device_count(ctx);
    /* nccl-tests: NCCL_TESTS_DEVICE names the first GPU outright (a wrapper per rank sets it), else the local rank */
    int base = !o->ndev && o->coll_first_gpu >= 0 ? o->coll_first_gpu : job->local_rank * per;

    if (o->ndev) {
        if (o->ndev != job->local_size) {
            psc_report_printf(stderr, "p2pscope (rank %d): --devices lists %d GPU%s for the %d ranks on this node: accepted one "
                    "per rank of a node, in their order\n", job->rank, o->ndev, o->ndev == 1 ? "" : "s",
                    job->local_size);
            return -1;
        }
        devs[0] = o->devs[job->local_rank];
        return 1;
    }
    if (base + per > n) {
        psc_report_printf(stderr, "p2pscope (rank %d): rank %d of this node takes GPU%s %d%s%.0d, but the node shows %d: accepted "
                "at most %d rank%s per node with -g %d (mpirun -N)\n", job->rank, job->local_rank, per > 1 ? "s" : "",
                base, per > 1 ? " to " : "", per > 1 ? base + per - 1 : 0, n, n / per, n / per == 1 ? "" : "s", per);
        return -1;
    }
    for (int i = 0; i < per; i++)
        devs[i] = base + i;
    return per;
}

int psc_cmd_coll_job(const psc_cli_opts_t *o, psc_cli_job_t *job, int *argc, char ***argv)
{
    psc_coll_procs_t procs;
    psc_context_t *ctx = NULL;
    int devs[PSC_CLI_MAX_DEVS], ndev, rc, ran = 0;
    char why[512];

    if ((rc = psc_cli_job_start(job, 0, argc, argv, why, sizeof(why))) != PSC_EXIT_OK) {
        if (job->rank == 0)
            psc_report_printf(stderr, "p2pscope: %s\n", why);
        psc_cli_job_end(job);
        return rc;
    }
    if (psc_context_create(&ctx, why, sizeof(why)) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope (rank %d): %s\n", job->rank, why);
        rc = PSC_EXIT_ENV;
    } else if ((ndev = psc__gpus(ctx, o, job, devs)) < 0) {
        rc = PSC_EXIT_ENV;
    } else {
        memset(&procs, 0, sizeof(procs));
        procs.nprocs = job->size;
        procs.proc = job->rank;
        procs.arg = job;
        procs.bcast = psc__bcast;
        procs.allreduce = psc__allreduce;
        procs.allgather = psc__allgather;
        rc = psc_cmd_coll_run(ctx, o, devs, ndev, &procs, &ran);
    }
    psc_context_destroy(ctx);
    /* a run that ended gave every rank the same verdict; one that failed may have failed in this rank alone */
    if (!ran)
        psc_cli_job_abort(job, rc);
    psc_cli_job_end(job);
    return rc;
}
