/* A build without MPI: a job of several ranks is refused with what to do instead. */
#include <stdio.h>

#include "cli.h"
#include "job.h"

const char *psc_cli_mpi_library(void)
{
    return NULL;
}

int psc_cli_job_start(psc_cli_job_t *job, int *argc, char ***argv, char *why, size_t len)
{
    (void)argc;
    (void)argv;
    snprintf(why, len, "this p2pscope was built without MPI (no mpicc was found when it was built), so under %s "
             "each of the %d ranks would run alone: run it without mpirun (it starts a worker per GPU itself), or "
             "rebuild where Open MPI's mpicc is found (apt-get install libopenmpi-dev openmpi-bin)",
             job->launcher ? job->launcher : "a launcher", job->size);
    return PSC_EXIT_USAGE;
}

int psc_cli_job_bcast(psc_cli_job_t *job, void *buf, int len)
{
    (void)job;
    (void)buf;
    (void)len;
    return PSC_EXIT_FAILED;
}

void psc_cli_job_end(psc_cli_job_t *job)
{
    (void)job;
}
