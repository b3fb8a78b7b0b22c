/*
 * How this process was started: alone, or as one rank of a launcher's job
 * (mpirun), read from the launcher's environment (job_env.c); and, in a
 * build with MPI (job_mpi.c; job_nompi.c without), the few collective calls
 * the commands that run one rank per GPU need. Only the CLI links MPI: the
 * library knows nothing of it.
 */
#ifndef PSC_CLI_JOB_H
#define PSC_CLI_JOB_H

#include <stddef.h>

typedef struct psc_cli_job {
    int size, rank;          /* the launcher's ranks; 1 and 0 when alone */
    const char *launcher;    /* "Open MPI", "an MPI launcher (PMI)", or NULL when alone */
    int mpi;                 /* MPI_Init was called (psc_cli_job_start) */
    int local_rank, local_size; /* this node's ranks (psc_cli_job_start) */
} psc_cli_job_t;

/* From the environment: OMPI_COMM_WORLD_SIZE/RANK (Open MPI), PMI_SIZE/RANK (MPICH's Hydra and others). */
void psc_cli_job_detect(psc_cli_job_t *job);

/* The MPI this binary was built with ("Open MPI v4.1.4"), or NULL for a build without MPI. */
const char *psc_cli_mpi_library(void);

/*
 * Join the job (MPI_Init) and check it suits a command that runs one rank
 * per GPU: a build with MPI, the environment's rank and size those MPI
 * gives, and with one_node all ranks on one node. Sets the node-local rank.
 * PSC_EXIT_OK, or an exit code with one line in why (every rank gets the
 * same verdict).
 */
int psc_cli_job_start(psc_cli_job_t *job, int one_node, int *argc, char ***argv, char *why, size_t len);

/* Join the job (MPI_Init) and check MPI's rank and size are the environment's; no collective call after it
 * (check --fleet: a rank that hangs must hold no other). PSC_EXIT_OK, or an exit code with one line in why. */
int psc_cli_job_join(psc_cli_job_t *job, int *argc, char ***argv, char *why, size_t len);

/*
 * Rank 0's len bytes of buf to every rank. The waiting ranks poll (every
 * millisecond) rather than spin, so they take no CPU from rank 0's
 * measurements meanwhile. PSC_EXIT_OK or PSC_EXIT_FAILED.
 */
int psc_cli_job_bcast(psc_cli_job_t *job, void *buf, int len);

/* v[0..n) combined over the ranks in place: how PSC_COLL_SUM, _MIN or _MAX. PSC_EXIT_OK or PSC_EXIT_FAILED. */
int psc_cli_job_allreduce(psc_cli_job_t *job, double *v, int n, int how);
/* Every rank's len bytes of mine into all (rank order), in every rank. */
int psc_cli_job_allgather(psc_cli_job_t *job, const void *mine, void *all, int len);
/* End every rank of the job with code (a rank that failed alone: the others would wait for it). */
void psc_cli_job_abort(psc_cli_job_t *job, int code);

/*
 * check --fleet's point-to-point messages, no collective: len bytes of buf to rank 0 under tag (returns once MPI
 * has them or rank 0 took them); and at rank 0, a message any rank sent, never waiting: 1 with *buf (malloc'd,
 * *len bytes and a NUL after them), *from and *tag; 0 when none has arrived; -1 on an MPI error or out of memory.
 */
int psc_cli_job_send0(psc_cli_job_t *job, int tag, const void *buf, int len);
int psc_cli_job_take(psc_cli_job_t *job, char **buf, int *len, int *from, int *tag);

/* Leave the job (MPI_Finalize) where psc_cli_job_start joined it. */
void psc_cli_job_end(psc_cli_job_t *job);

#endif
