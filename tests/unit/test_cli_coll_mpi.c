/*
 * `p2pscope coll` as one process per GPU under a real mpirun (the MPI the
 * binary was built with): NCCL's id goes from rank 0 to every rank, one
 * table comes out (rank 0's) naming every rank, wrong elements in any rank
 * count in it, a hung collective ends the job at the timeout naming the
 * collective and size, and a rank that dies ends the others. Built only
 * where MPI was found: as a unit test on the fake driver and the fake NCCL
 * (ranks in several processes), and (PSC_ON_GPU) as tests/gpu's on this
 * machine's GPUs (one rank per GPU), skipped (77) without a driver or GPU.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "p2pscope.h"

/* run_binary.h runs P2PSCOPE_BIN: here mpirun, whose arguments then name the real binary (P2PSCOPE_REAL). */
#define P2PSCOPE_BIN MPIEXEC
#include "run_binary.h"

#define MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_rmaps_base_oversubscribe=1"
#if PSC_ON_GPU
#define FAKE_ENV MPI_ENV, "NCCL_NVLS_ENABLE=0"
#else
#define FAKE_ENV                                                                                                    \
    "P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", "FAKE_CUDA_MODE=contexts", \
        "FAKE_CUDA_COUNT=2", "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_UUID=7", "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, MPI_ENV
#endif

static int ngpu = 2; /* the fake's; on a GPU machine, its count */
static char np[16];

static int count(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static psc__run_t mpirun(const char *const *args, const char *const *extra_env)
{
    const char *env[24] = {FAKE_ENV};
    const char *argv[40] = {"-np", np, P2PSCOPE_REAL, "coll"};
    int n = 4, e = 0;

    while (env[e])
        e++;
    for (int i = 0; extra_env && extra_env[i] && e < 23; i++)
        env[e++] = extra_env[i];
    env[e] = NULL;
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return psc__run(argv, env);
}

/* One table for the job: rank 0's header, a line per rank (each its own process), the rows, the footer. */
static void test_one_table(void **state)
{
    psc__run_t r = mpirun((const char *[]){"-b", "64", "-e", "4K", "-f", "4", "-n", "3", NULL}, NULL);
    char line[64];

    (void)state;
    if (r.rc != 0)
        fail_msg("rc %d, stdout:\n%s\nstderr:\n%s", r.rc, r.out, r.err);
    assert_int_equal(count(r.out, "# nccl-tests version 2.19.6"), 1);
    assert_int_equal(count(r.out, "# nThread 1 nGpus 1 minBytes 64 maxBytes 4096"), 1);
    assert_int_equal(count(r.out, "#  Rank "), ngpu);
    for (int k = 0; k < ngpu; k++) {
        snprintf(line, sizeof(line), "#  Rank %2d Group  0 Pid ", k);
        assert_int_equal(count(r.out, line), 1);
    }
    assert_int_equal(count(r.out, "\n          64            16     float     sum      -1 "), 1); /* NCCL's row */
    /* our all-reduce (the processes joined) in its own table after nccl-tests', a commented row a size */
    assert_int_equal(count(r.out, "\n# p2pscope's all-reduce (psc_allreduce_sum)"), 1);
    assert_int_equal(count(r.out, "\n#         64     float     sum      -1 "), 1);
    assert_int_equal(count(r.out, "\n#       4096     float     sum      -1 "), 1);
    assert_int_equal(count(r.out, "halves with wrong elements 0 OK\n"), 1);
    assert_int_equal(count(r.out, "# Out of bounds values : 0 OK\n"), 1);
    assert_int_equal(count(r.out, "# Collective test concluded: all_reduce_perf\n"), 1);
    psc__free(&r);
}

/* The JSON (rank 0's): every rank in its own process, the rows checked in both halves. */
static void test_json_names_every_process(void **state)
{
    psc__run_t r = mpirun((const char *[]){"sendrecv", "-b", "1K", "-e", "1K", "--json", NULL}, NULL);
    json_error_t je;
    json_t *doc, *coll, *ranks;

    (void)state;
    if (r.rc != 0)
        fail_msg("rc %d, stderr:\n%s", r.rc, r.err);
    doc = json_loads(r.out, 0, &je);
    if (!doc)
        fail_msg("not one JSON document (%s): %s", je.text, r.out);
    coll = json_object_get(doc, "coll");
    assert_non_null(coll);
    assert_int_equal(json_integer_value(json_object_get(coll, "nprocs")), ngpu);
    ranks = json_object_get(coll, "ranks");
    assert_int_equal(json_array_size(ranks), ngpu);
    if (ngpu >= 2)
        assert_true(json_integer_value(json_object_get(json_array_get(ranks, 0), "pid")) !=
                    json_integer_value(json_object_get(json_array_get(ranks, 1), "pid")));
    json_decref(doc);
    psc__free(&r);
}

#if PSC_ON_GPU
/* Whether /proc/PID's environment holds both NAME=value strings. */
static int environ_has(const char *pid, const char *a, const char *b)
{
    char path[64], buf[65536];
    int fd, fa = 0, fb = 0;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%s/environ", pid);
    if ((fd = open(path, O_RDONLY)) < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(buf + i) + 1) {
        buf[n] = '\0';
        fa |= strcmp(buf + i, a) == 0;
        fb |= strcmp(buf + i, b) == 0;
    }
    return fa && fb;
}

/* The process of this job (its environment holds mark) that is rank `rank`; 0 while there is none. */
static pid_t rank_process(const char *mark, int rank)
{
    char want[48];
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = 0;

    snprintf(want, sizeof(want), "OMPI_COMM_WORLD_RANK=%d", rank);
    while (d && !found && (e = readdir(d)))
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && environ_has(e->d_name, mark, want))
            found = (pid_t)atoi(e->d_name);
    if (d)
        closedir(d);
    return found;
}

/* The whole text of the file at path (NUL-terminated, to be freed). */
static char *file_text(const char *path)
{
    int fd = open(path, O_RDONLY);

    return fd < 0 ? strdup("") : psc__slurp(fd);
}

/*
 * A rank that stops answering (SIGSTOP, as a host that hangs) after the first row: the other rank's operation
 * never completes, it gives up at -T naming the call (the watchdog aborts real NCCL's blocking communicators
 * from its thread), and the job ends, not hangs. On the GPUs only: the fake NCCL lets a rank go on without
 * its peers, so a stopped rank hangs nothing there (test_timeout_ends_the_job covers the fake's hang).
 */
static void test_stopped_rank_ends_at_timeout(void **state)
{
    char log[] = "/tmp/psc-coll-stop-XXXXXX", mark[64], *text = NULL;
    const char *env[24] = {FAKE_ENV};
    const char *argv[] = {MPIEXEC, "-np", np, P2PSCOPE_REAL, "coll", "all_reduce", "-b", "8", "-e", "64K", "-f", "4",
                          "-n", "200000", "-T", "5", "--impl", "nccl", NULL}; /* about 4 s a row */
    int fd = mkstemp(log), status = 0, e = 0, ended = 0;
    pid_t job, stopped = 0;
    double t0, t_stop = 0;

    (void)state;
    if (ngpu < 2)
        skip(); /* one rank: none to stop */
    assert_true(fd >= 0);
    snprintf(mark, sizeof(mark), "PSC_TEST_STOP_JOB=%d", (int)getpid());
    while (env[e])
        e++;
    env[e++] = mark;
    env[e] = NULL;
    job = fork();
    assert_true(job >= 0);
    if (job == 0) {
        for (int i = 0; env[i]; i++)
            putenv((char *)env[i]);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(MPIEXEC, (char *const *)argv);
        _exit(127);
    }
    t0 = now_s();
    /* the first row out (the ranks are in their timed loops), then rank 1 stopped; the job's end awaited */
    while (!ended && now_s() - t0 < 120) {
        struct timespec tick = {0, 50 * 1000 * 1000};

        if (waitpid(job, &status, WNOHANG) == job) {
            ended = 1;
            break;
        }
        if (!stopped) {
            free(text);
            text = file_text(log);
            if (strstr(text, "       8             2     float     sum") && (stopped = rank_process(mark, 1)) > 0) {
                assert_int_equal(kill(stopped, SIGSTOP), 0);
                t_stop = now_s();
            }
        }
        nanosleep(&tick, NULL); /* polling the job's state, not standing in for a synchronisation */
    }
    if (!ended) { /* the test's failure: the job hung; nothing left behind */
        kill(job, SIGKILL);
        waitpid(job, &status, 0);
    }
    if (stopped > 0) {
        kill(stopped, SIGKILL);
        kill(stopped, SIGCONT);
    }
    free(text);
    text = file_text(log);
    unlink(log);
    close(fd);
    if (!stopped || !ended)
        fprintf(stderr, "%s\n", text);
    assert_true(stopped > 0);      /* the job got as far as its first row */
    assert_true(ended);            /* and ended by itself */
    assert_true(now_s() - t_stop < 5 + 40);
    assert_true(!WIFEXITED(status) || WEXITSTATUS(status) != 0);
    assert_non_null(strstr(text, "not done after 5 s"));
    assert_null(strstr(text, "# Out of bounds values"));
    free(text);
}
#endif

#if !PSC_ON_GPU
/* A wrong element in every rank's output: counted over the ranks in the one table; every rank exits 1. */
static void test_wrong_elements_every_rank(void **state)
{
    psc__run_t r = mpirun((const char *[]){"-b", "256", "-e", "512", "-n", "2", "--impl", "nccl", NULL},
                          (const char *const[]){"FAKE_NCCL_CORRUPT=0", NULL});
    const char *row;

    (void)state;
    assert_int_equal(r.rc, 1);
    /* one row (256 B); each half: 2 timed slots (512 B of 256 B) x 2 ranks, one wrong element each */
    row = strstr(r.out, "\n         256            64     float     sum      -1 ");
    assert_non_null(row);
    assert_int_equal(count(r.out, "\n         256            64 "), 1);
    { /* the columns, whatever the times' widths: out of place's and in place's #wrong */
        double t1, a1, b1, t2, a2, b2;
        long long bytes, elems, wrong1 = -1, wrong2 = -1;
        char type[16], op[16];
        int root;

        assert_int_equal(sscanf(row + 1, "%lld %lld %15s %15s %d %lf %lf %lf %lld %lf %lf %lf %lld", &bytes, &elems,
                                type, op, &root, &t1, &a1, &b1, &wrong1, &t2, &a2, &b2, &wrong2),
                         13);
        assert_int_equal(wrong1, 4);
        assert_int_equal(wrong2, 4);
    }
    assert_int_equal(count(r.out, "# Out of bounds values : 2 FAILED\n"), 1);
    assert_int_equal(count(r.err, "p2pscope coll: wrong elements in 2 rows"), 1);
    psc__free(&r);
}

/*
 * A wrong element in our all-reduce's output in every process: its row (in
 * p2pscope's table after nccl-tests') counts them, NCCL's row (nccl-tests'
 * table, 13 fields) none.
 */
static void test_wrong_elements_own_rows(void **state)
{
    psc__run_t r = mpirun((const char *[]){"-b", "256", "-e", "512", "-n", "2", "--no-tune", NULL},
                          (const char *const[]){"FAKE_AR_CORRUPT=0", NULL});
    const char *nccl, *own;
    long long bytes = 0, w_oop = -1, w_ip = -1;
    char type[16], op[16], t[4][24];
    int root;

    (void)state;
    assert_int_equal(r.rc, 1);
    nccl = strstr(r.out, "\n         256            64     float     sum      -1 ");
    assert_non_null(nccl);
    assert_int_equal(count(r.out, "\n         256            64 "), 1); /* nccl-tests' table: NCCL's row alone */
    assert_int_equal(strncmp(strchr(nccl + 1, '\n') - 2, " 0", 2), 0);
    assert_int_equal(count(r.out, "# Out of bounds values : 0 OK\n"), 1);
    own = strstr(r.out, "\n#        256     float     sum      -1  ");
    assert_non_null(own);
    assert_int_equal(sscanf(own + 1, "# %lld %15s %15s %d %23s %23s %lld %*s %*s %23s %23s %lld", &bytes, type, op, &root,
                            t[0], t[1], &w_oop, t[2], t[3], &w_ip),
                     10);
    assert_int_equal(w_oop, 4); /* 2 timed slots x 2 ranks, one wrong element each */
    assert_int_equal(w_ip, 4);
    assert_non_null(strstr(r.out, " GB/s; halves with wrong elements 2 FAILED\n"));
    assert_int_equal(count(r.err, "p2pscope coll: wrong elements in 2 rows"), 1);
    psc__free(&r);
}

/*
 * A wrong element in one process only (rank 1's): every rank still takes the same turns (the extra checked
 * runs stop for all at once), so the job ends with the one table, not a hang; rank 0 says another rank saw it.
 */
static void test_wrong_elements_one_rank(void **state)
{
    static const char *const env[] = {FAKE_ENV, NULL};
    double t0 = now_s();
    /* (run_binary.h passes 30 arguments at most: -T on the second process only, whose give-up ends the job) */
    psc__run_t r = psc__run((const char *[]){"-np", "1", P2PSCOPE_REAL, "coll", "-b", "256", "-e", "256", "-n", "2",
                                             "--impl", "nccl", ":", "-np", "1", "-x", "FAKE_NCCL_CORRUPT=0",
                                             P2PSCOPE_REAL, "coll", "-b", "256", "-e", "256", "-n", "2", "-T", "20",
                                             "--impl", "nccl", NULL},
                            env);

    (void)state;
    if (r.rc != 1)
        fail_msg("rc %d, stdout:\n%s\nstderr:\n%s", r.rc, r.out, r.err);
    assert_true(now_s() - t0 < 15);
    assert_int_equal(count(r.out, "# Out of bounds values : 2 FAILED\n"), 1);
    assert_int_equal(count(r.err, "p2pscope coll: wrong elements in 2 rows; all found by other ranks than rank 0"), 1);
    psc__free(&r);
}

/*
 * A collective that never completes: every rank gives up at -T, naming it, and the job ends: in the tuning of
 * p2pscope's reduce-scatter beside NCCL's (the default), and in NCCL's rows (--no-tune).
 */
static void test_timeout_ends_the_job(void **state)
{
    (void)state;
    for (int tuned = 1; tuned >= 0; tuned--) {
        double t0 = now_s();
        psc__run_t r = mpirun((const char *[]){"reduce_scatter", "-b", "4K", "-e", "4K", "-T", "1",
                                               tuned ? NULL : "--no-tune", NULL},
                              (const char *const[]){"FAKE_NCCL_HANG=1", NULL});

        if (r.rc == 0 || now_s() - t0 >= 30)
            fail_msg("rc %d after %.1f s, stderr:\n%s", r.rc, now_s() - t0, r.err);
        /* the rank that timed out names the call; its abort may end the other's call first (NCCL's remote
           error), that one may report first ("timed out there"), and the job may end before the first one's line
           is out: one of them, in the tuning */
        if (tuned ? !strstr(r.err, "tuning p2pscope's reduce-scatter beside NCCL's: psc_allreduce") ||
                        (!strstr(r.err, "timing ncclReduceScatter of 16 B per part: a run not done after 1 s") &&
                         !strstr(r.err, "could not time its calls (timed out there)") &&
                         !strstr(r.err, "ncclGroupEnd failed: remote process exited"))
                  : !strstr(r.err, "reduce_scatter of 4096 B (float, sum)") || !strstr(r.err, "not done after 1 s"))
            fail_msg("%s: stderr:\n%s", tuned ? "tuned" : "--no-tune", r.err);
        assert_null(strstr(r.out, "# Out of bounds values"));
        psc__free(&r);
    }
}

/*
 * A rank that dies mid-run ends the others (NCCL's remote error, or mpirun ending the job) long before -T.
 * NCCL's rows only (here and above): the fake's own all-reduce across processes is slow enough (ms per call)
 * to make these timings depend on the machine's load.
 */
static void test_dead_rank_ends_the_others(void **state)
{
    double t0 = now_s();
    psc__run_t r = mpirun((const char *[]){"-b", "64", "-e", "4K", "-f", "4", "-T", "60", "--impl", "nccl", NULL},
                          (const char *const[]){"FAKE_NCCL_EXIT_AT=5", "FAKE_NCCL_EXIT_RANK=1", NULL});

    (void)state;
    assert_true(r.rc != 0);
    assert_true(now_s() - t0 < 30);
    assert_null(strstr(r.out, "# Out of bounds values"));
    psc__free(&r);
}

/* This process's GPUs: nccl-tests' rule (node-local rank x -g), or --devices per rank of the node; refusals. */
static void test_gpus_per_rank(void **state)
{
    psc__run_t r = mpirun((const char *[]){"-b", "64", "-e", "64", "--devices", "1,0", NULL}, NULL);

    (void)state;
    if (r.rc != 0)
        fail_msg("rc %d, stderr:\n%s", r.rc, r.err);
    assert_non_null(strstr(r.out, "#  Rank  0 Group  0 Pid "));
    assert_non_null(strstr(r.out, " device  1 [")); /* rank 0 on GPU 1 */
    psc__free(&r);
    r = mpirun((const char *[]){"-g", "2", "-b", "64", "-e", "64", NULL}, NULL);
    assert_true(r.rc != 0);
    assert_non_null(strstr(r.err, "rank 1 of this node takes GPUs 2 to 3, but the node shows 2: accepted at most 1 "
                                  "rank per node with -g 2"));
    psc__free(&r);
    /* NCCL_TESTS_DEVICE names the first GPU outright, as nccl-tests takes it (a wrapper sets it per rank) */
    snprintf(np, sizeof(np), "1");
    r = mpirun((const char *[]){"-b", "64", "-e", "64", NULL}, (const char *const[]){"NCCL_TESTS_DEVICE=1", NULL});
    snprintf(np, sizeof(np), "%d", ngpu);
    if (r.rc != 0)
        fail_msg("rc %d, stderr:\n%s", r.rc, r.err);
    assert_non_null(strstr(r.out, " device  1 ["));
    psc__free(&r);
    r = mpirun((const char *[]){"--devices", "0", NULL}, NULL);
    assert_true(r.rc != 0);
    assert_non_null(strstr(r.err, "--devices lists 1 GPU for the 2 ranks on this node"));
    psc__free(&r);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_table),
        cmocka_unit_test(test_json_names_every_process),
#if PSC_ON_GPU
        cmocka_unit_test(test_stopped_rank_ends_at_timeout),
#endif
#if !PSC_ON_GPU
        cmocka_unit_test(test_wrong_elements_every_rank),
        cmocka_unit_test(test_wrong_elements_own_rows),
        cmocka_unit_test(test_wrong_elements_one_rank),
        cmocka_unit_test(test_timeout_ends_the_job),
        cmocka_unit_test(test_dead_rank_ends_the_others),
        cmocka_unit_test(test_gpus_per_rank),
#endif
    };

#if PSC_ON_GPU
    {
        psc_context_t *ctx = NULL;
        char err[256];
        psc_status_t st = psc_context_create(&ctx, err, sizeof(err));

        if (st == PSC_ERR_NO_DRIVER || st == PSC_ERR_NO_DEVICE) {
            fprintf(stderr, "skipped: %s\n", err);
            return 77;
        }
        if (st != PSC_OK) {
            fprintf(stderr, "FAILED to open a context: %s\n", err);
            return 1;
        }
        ngpu = psc_device_count(ctx);
        psc_context_destroy(ctx);
    }
#endif
    snprintf(np, sizeof(np), "%d", ngpu);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
