/* Which launcher started this process, and as which rank of how many: its environment only, no MPI call. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "job.h"

/* A whole number from lo to hi in variable name, or -1. */
static int psc__env_int(const char *name, int lo, int hi)
{
    const char *s = getenv(name);
    char *end = NULL;
    long v;

    if (!s || !*s)
        return -1;
    v = strtol(s, &end, 10);
    return *end || v < lo || v > hi ? -1 : (int)v;
}

void psc_cli_job_detect(psc_cli_job_t *job)
{
    static const struct {
        const char *size, *rank, *name;
    } launchers[] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "Open MPI"},
        {"PMI_SIZE", "PMI_RANK", "an MPI launcher (PMI)"},
    };

    *job = (psc_cli_job_t){.size = 1, .rank = 0};
    for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
        int size = psc__env_int(launchers[i].size, 1, 1 << 20);
        int rank = psc__env_int(launchers[i].rank, 0, (1 << 20) - 1);

        if (size >= 1 && rank >= 0 && rank < size) {
            job->size = size;
            job->rank = rank;
            job->launcher = launchers[i].name;
            return;
        }
    }
}
