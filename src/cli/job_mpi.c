/* A build with MPI: join the launcher's job, check it is one node's, and pass rank 0's words to every rank. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "job.h"

const char *psc_cli_mpi_library(void)
{
    static char name[96];
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;

    if (name[0])
        return name;
    /* One of the calls MPI allows before MPI_Init. Its first phrase: "Open MPI v4.1.4". */
    if (MPI_Get_library_version(v, &n) != MPI_SUCCESS || n <= 0) {
        snprintf(name, sizeof(name), "MPI %d.%d", MPI_VERSION, MPI_SUBVERSION);
        return name;
    }
    v[n < (int)sizeof(v) ? n : (int)sizeof(v) - 1] = '\0';
    v[strcspn(v, ",\n")] = '\0';
    snprintf(name, sizeof(name), "%.90s", v);
    return name;
}

int psc_cli_job_join(psc_cli_job_t *job, int *argc, char ***argv, char *why, size_t len)
{
    int size = 0, rank = -1, provided = MPI_THREAD_SINGLE;

    /* Funneled: rank 0 serves its worker in a second thread, which makes no MPI call. */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        snprintf(why, len, "MPI_Init_thread failed under %s: accepted a job mpirun started", job->launcher);
        return PSC_EXIT_ENV;
    }
    job->mpi = 1;
    if (provided < MPI_THREAD_FUNNELED) {
        snprintf(why, len, "this MPI (%s) gives no MPI_THREAD_FUNNELED, which rank 0's second thread needs",
                 psc_cli_mpi_library());
        return PSC_EXIT_ENV;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size != job->size || rank != job->rank) {
        snprintf(why, len, "%s's environment says rank %d of %d, but MPI says rank %d of %d: this p2pscope's MPI "
                 "(%s) is not the launcher's: run it with the mpirun of the MPI it was built with", job->launcher,
                 job->rank, job->size, rank, size, psc_cli_mpi_library());
        return PSC_EXIT_ENV;
    }
    return PSC_EXIT_OK;
}

int psc_cli_job_start(psc_cli_job_t *job, int one_node, int *argc, char ***argv, char *why, size_t len)
{
    MPI_Comm node;
    int size = job->size, local = 0, local_rank = 0, rc = psc_cli_job_join(job, argc, argv, why, len);

    if (rc != PSC_EXIT_OK)
        return rc;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) {
        snprintf(why, len, "MPI could not tell which ranks share this node (MPI_Comm_split_type)");
        return PSC_EXIT_ENV;
    }
    MPI_Comm_size(node, &local);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_free(&node);
    job->local_rank = local_rank;
    job->local_size = local;
    if (one_node && local != size) {
        snprintf(why, len, "the %d ranks span more than one node (%d on this one): GPU memory is shared between the "
                 "processes of one node: accepted one rank per GPU of one node (mpirun -np G --host HOST:G)", size,
                 local);
        return PSC_EXIT_USAGE;
    }
    return PSC_EXIT_OK;
}

int psc_cli_job_bcast(psc_cli_job_t *job, void *buf, int len)
{
    const struct timespec ms = {0, 1000000};
    MPI_Request req;
    int done = 0;

    if (!job->mpi || MPI_Ibcast(buf, len, MPI_BYTE, 0, MPI_COMM_WORLD, &req) != MPI_SUCCESS)
        return PSC_EXIT_FAILED;
    for (;;) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return PSC_EXIT_FAILED;
        if (done)
            return PSC_EXIT_OK;
        nanosleep(&ms, NULL);
    }
}

int psc_cli_job_allreduce(psc_cli_job_t *job, double *v, int n, int how)
{
    MPI_Op op = how == PSC_COLL_MIN ? MPI_MIN : how == PSC_COLL_MAX ? MPI_MAX : MPI_SUM;

    if (!job->mpi || MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, op, MPI_COMM_WORLD) != MPI_SUCCESS)
        return PSC_EXIT_FAILED;
    return PSC_EXIT_OK;
}

int psc_cli_job_allgather(psc_cli_job_t *job, const void *mine, void *all, int len)
{
    if (!job->mpi || MPI_Allgather(mine, len, MPI_BYTE, all, len, MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS)
        return PSC_EXIT_FAILED;
    return PSC_EXIT_OK;
}

int psc_cli_job_send0(psc_cli_job_t *job, int tag, const void *buf, int len)
{
    if (!job->mpi || MPI_Send(buf, len, MPI_BYTE, 0, tag, MPI_COMM_WORLD) != MPI_SUCCESS)
        return PSC_EXIT_FAILED;
    return PSC_EXIT_OK;
}

int psc_cli_job_take(psc_cli_job_t *job, char **buf, int *len, int *from, int *tag)
{
    MPI_Status st;
    int flag = 0, n = 0;
    char *p;

    if (!job->mpi || MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
        return -1;
    if (!flag)
        return 0;
    if (MPI_Get_count(&st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0 || !(p = malloc((size_t)n + 1)))
        return -1;
    /* the message probed: its source and tag, so no other is taken in its place */
    if (MPI_Recv(p, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        free(p);
        return -1;
    }
    p[n] = '\0';
    *buf = p;
    *len = n;
    *from = st.MPI_SOURCE;
    *tag = st.MPI_TAG;
    return 1;
}

void psc_cli_job_abort(psc_cli_job_t *job, int code)
{
    if (job->mpi)
        MPI_Abort(MPI_COMM_WORLD, code);
}

void psc_cli_job_end(psc_cli_job_t *job)
{
    if (job->mpi)
        MPI_Finalize();
    job->mpi = 0;
}
