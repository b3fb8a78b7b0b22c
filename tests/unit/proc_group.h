/*
 * For the tests of psc_allreduce_join: forked processes that talk through a
 * shared page (a process-shared barrier and a slot each): the allgather of
 * psc_ar_procs_t, and a runner that forks the processes, opens a context in
 * each and collects their exit codes. Each process's context is its own,
 * opened after the fork (CUDA does not survive fork()).
 */
#ifndef PSC_TESTS_PROC_GROUP_H
#define PSC_TESTS_PROC_GROUP_H

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "p2pscope.h"

#define PSC_TEST_NP_MAX 8
#define PSC_TEST_REC_MAX 512

typedef struct {
    pthread_barrier_t bar;
    unsigned char slot[PSC_TEST_NP_MAX][PSC_TEST_REC_MAX];
} psc_test_channel_t;

/* One process's end of the channel (psc_ar_procs_t's arg). */
typedef struct {
    psc_test_channel_t *ch;
    int nprocs, proc;
} psc_test_proc_t;

/* This process's record into its slot, then everyone's out; a second barrier so no slot is overwritten early. */
static int psc_test_allgather(const void *mine, void *all, size_t len, void *arg)
{
    psc_test_proc_t *pa = arg;

    if (len > PSC_TEST_REC_MAX)
        return -1;
    memcpy(pa->ch->slot[pa->proc], mine, len);
    pthread_barrier_wait(&pa->ch->bar);
    for (int p = 0; p < pa->nprocs; p++)
        memcpy((unsigned char *)all + (size_t)p * len, pa->ch->slot[p], len);
    pthread_barrier_wait(&pa->ch->bar);
    return 0;
}

/* Wait until every process of the group gets here. */
static inline void psc_test_procs_barrier(const psc_ar_procs_t *procs)
{
    pthread_barrier_wait(&((psc_test_proc_t *)procs->arg)->ch->bar);
}

/* A process's part: its exit code (0 done, 77 skipped, else failed, with a line on stderr). */
typedef int (*psc_test_role_t)(psc_context_t *ctx, int proc, int nprocs, int gpu, const psc_ar_procs_t *procs);

/* In process proc's child: a context, or NULL with *code the exit code (77: no driver or GPU). */
typedef psc_context_t *(*psc_test_opener_t)(int proc, int *code);

/*
 * Fork nprocs processes (gpus[p] for process p), each opening its context and
 * playing role, alarm(limit_s) against a hang. Returns 0 when every one
 * exited 0, 77 when every one skipped, else 1 (each failure said on stderr).
 */
static inline int psc_test_run_procs(psc_test_role_t role, int nprocs, const int *gpus, psc_test_opener_t open,
                                     unsigned limit_s)
{
    psc_test_channel_t *ch = mmap(NULL, sizeof(*ch), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_barrierattr_t at;
    pid_t pid[PSC_TEST_NP_MAX];
    int failed = 0, skipped = 0, started = 0;

    if (ch == MAP_FAILED || nprocs < 1 || nprocs > PSC_TEST_NP_MAX)
        return 1;
    pthread_barrierattr_init(&at);
    pthread_barrierattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
    if (pthread_barrier_init(&ch->bar, &at, (unsigned)nprocs) != 0)
        return 1;
    fflush(NULL);
    for (int p = 0; p < nprocs; p++, started++) {
        if ((pid[p] = fork()) < 0)
            break;
        if (pid[p] == 0) {
            psc_test_proc_t pa = {ch, nprocs, p};
            psc_ar_procs_t procs = {nprocs, p, &pa, psc_test_allgather};
            psc_context_t *ctx;
            int code = 1;

            alarm(limit_s);
            if ((ctx = open(p, &code)) == NULL)
                _exit(code);
            code = role(ctx, p, nprocs, gpus[p], &procs);
            psc_context_destroy(ctx);
            fflush(NULL); /* _exit flushes nothing */
            _exit(code);
        }
    }
    for (int p = 0; p < started; p++) {
        int ws = 0;

        if (waitpid(pid[p], &ws, 0) != pid[p] || !WIFEXITED(ws) || (WEXITSTATUS(ws) != 0 && WEXITSTATUS(ws) != 77)) {
            fprintf(stderr, "process %d ended with wait status 0x%x\n", p, ws);
            failed = 1;
        }
        skipped += WIFEXITED(ws) && WEXITSTATUS(ws) == 77;
    }
    pthread_barrier_destroy(&ch->bar);
    munmap(ch, sizeof(*ch));
    if (failed || started < nprocs)
        return 1;
    return skipped == nprocs ? 77 : skipped ? 1 : 0;
}

#endif
