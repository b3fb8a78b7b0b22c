/* A build without MPI: a job of several ranks is refused with what to do instead. */
#include <stdio.h>

#include "cli.h"
#include "job.h"

const char *psc_cli_mpi_library(void)
{
    return NULL;
}

int psc_cli_job_start(psc_cli_job_t *job, int one_node, int *argc, char ***argv, char *why, size_t len)
{
    (void)one_node;
    (void)argc;
    (void)argv;
    snprintf(why, len, "this p2pscope was built without MPI (no mpicc was found when it was built), so under %s "
             "each of the %d ranks would run alone: run it without mpirun (ipc starts a worker per GPU, coll drives every "
             "GPU from one process), or "
             "rebuild where Open MPI's mpicc is found (apt-get install libopenmpi-dev openmpi-bin)",
             job->launcher ? job->launcher : "a launcher", job->size);
    return PSC_EXIT_USAGE;
}

int psc_cli_job_join(psc_cli_job_t *job, int *argc, char ***argv, char *why, size_t len)
{
    return psc_cli_job_start(job, 0, argc, argv, why, len);
}

int psc_cli_job_bcast(psc_cli_job_t *job, void *buf, int len)
{
    (void)job;
    (void)buf;
    (void)len;
    return PSC_EXIT_FAILED;
}

int psc_cli_job_allreduce(psc_cli_job_t *job, double *v, int n, int how)
{
    (void)job, (void)v, (void)n, (void)how;
    return PSC_EXIT_FAILED;
}

int psc_cli_job_allgather(psc_cli_job_t *job, const void *mine, void *all, int len)
{
    (void)job, (void)mine, (void)all, (void)len;
    return PSC_EXIT_FAILED;
}

int psc_cli_job_send0(psc_cli_job_t *job, int tag, const void *buf, int len)
{
    (void)job, (void)tag, (void)buf, (void)len;
    return PSC_EXIT_FAILED;
}

int psc_cli_job_take(psc_cli_job_t *job, char **buf, int *len, int *from, int *tag)
{
    (void)job, (void)buf, (void)len, (void)from, (void)tag;
    return -1;
}

void psc_cli_job_abort(psc_cli_job_t *job, int code)
{
    (void)job, (void)code;
}

void psc_cli_job_end(psc_cli_job_t *job)
{
    (void)job;
}
