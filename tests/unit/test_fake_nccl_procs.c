/*
 * The fake libnccl (tests/fakes/fake_libnccl.c) with one rank per process, as
 * `mpirun -np N p2pscope coll` runs it in CI: rank 0 makes the id, a pipe
 * carries it to the others (MPI's broadcast), each joins with
 * ncclCommInitRank. Every collective of every type and op, in place and out
 * of place, gives byte for byte what the one-process fake (ncclCommInitAll)
 * gives, and known values where they are easy to state; groups, a send/recv
 * ring, 64 MiB buffers, non-blocking comms polled to the end, refused joins,
 * a rank killed or leaving at a known call, and no rendezvous file or
 * descriptor left behind. Buffers are plain host memory: the fake only copies.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "driver/nccl.h"

enum { K_ALLREDUCE, K_ALLGATHER, K_REDUCESCATTER, K_BROADCAST, K_REDUCE, K_ALLTOALL, K_N };
#define MAXN 4

static psc_nccl_t g_nc;
static char g_dir[64];
static int g_rank = -1;

/* In a child: a failed check says where and ends the child with status 1. */
#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "rank %d: %s:%d: %s\n", g_rank, __FILE__, __LINE__, #cond);      \
            _exit(1);                                                                        \
        }                                                                                    \
    } while (0)

typedef struct {
    int rc;         /* the call's result */
    int ok;         /* calls that succeeded */
    long long t_ns; /* CLOCK_MONOTONIC when the report was made */
} report_t;

typedef void (*rank_fn)(int rank, int n, psc_ncclUniqueId id, int rep, void *arg);

typedef struct {
    int n;
    pid_t pid[MAXN];
    int rep[MAXN]; /* read ends of the ranks' report pipes */
} ranks_t;

static long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int read_full(int fd, void *buf, size_t len)
{
    size_t got = 0;

    while (got < len) {
        ssize_t r = read(fd, (char *)buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static void report(int fd, int rc, int ok)
{
    report_t r = {rc, ok, now_ns()};

    CHECK(write(fd, &r, sizeof(r)) == (ssize_t)sizeof(r));
}

/* n ranks in n processes; rank 0 makes the id and the pipe hands it to the others. */
static void ranks_start(ranks_t *rs, int n, rank_fn fn, void *arg)
{
    int idp[2];

    assert_int_equal(pipe2(idp, O_CLOEXEC), 0);
    rs->n = n;
    for (int r = 0; r < n; r++) {
        int rp[2];
        assert_int_equal(pipe2(rp, O_CLOEXEC), 0);
        rs->pid[r] = fork();
        assert_true(rs->pid[r] >= 0);
        if (rs->pid[r] == 0) {
            psc_ncclUniqueId id;
            g_rank = r;
            close(rp[0]);
            for (int k = 0; k < r; k++)
                close(rs->rep[k]);
            if (r == 0) {
                CHECK(g_nc.get_unique_id(&id) == PSC_NCCL_SUCCESS);
                for (int k = 1; k < n; k++) /* 128 bytes: one atomic pipe write each */
                    CHECK(write(idp[1], &id, sizeof(id)) == (ssize_t)sizeof(id));
            } else {
                CHECK(read_full(idp[0], &id, sizeof(id)) == 0);
            }
            close(idp[0]);
            close(idp[1]);
            fn(r, n, id, rp[1], arg);
            _exit(0);
        }
        close(rp[1]);
        rs->rep[r] = rp[0];
    }
    close(idp[0]);
    close(idp[1]);
}

/* Each rank's wait status; its report pipe closed. */
static void ranks_wait(ranks_t *rs, int *status)
{
    for (int r = 0; r < rs->n; r++) {
        assert_int_equal(waitpid(rs->pid[r], &status[r], 0), rs->pid[r]);
        close(rs->rep[r]);
    }
}

static void ranks_run(int n, rank_fn fn, void *arg)
{
    ranks_t rs;
    int st[MAXN];

    ranks_start(&rs, n, fn, arg);
    ranks_wait(&rs, st);
    for (int r = 0; r < n; r++) {
        assert_true(WIFEXITED(st[r]));
        assert_int_equal(WEXITSTATUS(st[r]), 0);
    }
}

static int dir_entries(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static psc_ncclComm_t join(int rank, int n, psc_ncclUniqueId id)
{
    psc_ncclComm_t c = NULL;

    CHECK(g_nc.comm_init_rank(&c, n, id, rank) == PSC_NCCL_SUCCESS);
    return c;
}

/* ---------------------------------------------------------------- every collective against the one-process fake */

static size_t tsize(int dt)
{
    static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    return s[dt];
}

static size_t in_elems(int kind, size_t count, int n)
{
    return kind == K_REDUCESCATTER || kind == K_ALLTOALL ? count * (size_t)n : count;
}

static size_t out_elems(int kind, size_t count, int n)
{
    return kind == K_ALLGATHER || kind == K_ALLTOALL ? count * (size_t)n : count;
}

/* Pseudo-random bytes; floating types kept finite (an exponent bit cleared), so every op is defined. */
static void fill(unsigned char *p, size_t elems, int dt, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

    for (size_t i = 0; i < elems * tsize(dt); i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)(x >> 24);
    }
    for (size_t i = 0; i < elems; i++) {
        unsigned char *hi = p + (i + 1) * tsize(dt) - 1; /* little-endian: the sign and exponent byte */
        if (dt == PSC_DT_FLOAT16)
            *hi &= 0xbb;
        else if (dt == PSC_DT_BFLOAT16 || dt == PSC_DT_FLOAT32 || dt == PSC_DT_FLOAT64)
            *hi &= 0xbf;
    }
}

static psc_ncclResult_t coll(int kind, const void *s, void *r, size_t count, int dt, int op, int root,
                             psc_ncclComm_t c)
{
    switch (kind) {
    case K_ALLREDUCE: return g_nc.all_reduce(s, r, count, dt, op, c, NULL);
    case K_ALLGATHER: return g_nc.all_gather(s, r, count, dt, c, NULL);
    case K_REDUCESCATTER: return g_nc.reduce_scatter(s, r, count, dt, op, c, NULL);
    case K_BROADCAST: return g_nc.broadcast(s, r, count, dt, root, c, NULL);
    case K_REDUCE: return g_nc.reduce(s, r, count, dt, op, root, c, NULL);
    default: return g_nc.all_to_all(s, r, count, dt, c, NULL);
    }
}

static int open_fds(void)
{
    return dir_entries("/proc/self/fd");
}

static void sweep_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    const size_t count = 37;
    psc_ncclComm_t c, ref[MAXN];
    unsigned char *in[MAXN], *want[MAXN], *buf, *snd;
    int fds = open_fds(), checked = 0;

    (void)arg;
    c = join(rank, n, id);
    CHECK(g_nc.comm_init_all(ref, n, NULL) == PSC_NCCL_SUCCESS);
    for (int k = 0; k < n; k++) {
        CHECK((in[k] = malloc(count * MAXN * 8)) && (want[k] = malloc(count * MAXN * 8)));
    }
    CHECK((buf = malloc(count * MAXN * 8)) && (snd = malloc(count * MAXN * 8)));
    for (int kind = 0; kind < K_N; kind++)
        for (int dt = 0; dt < 10; dt++)
            for (int op = 0; op < PSC_OP_N; op++) {
                int reducing = kind == K_ALLREDUCE || kind == K_REDUCESCATTER || kind == K_REDUCE;
                int root = (dt + op) % n;
                size_t ts = tsize(dt), ib = in_elems(kind, count, n) * ts, ob = out_elems(kind, count, n) * ts;
                if (!reducing && op > 0)
                    continue;
                for (int k = 0; k < n; k++) {
                    fill(in[k], in_elems(kind, count, n), dt, (uint64_t)((kind * 16 + dt) * 8 + op) * 8 + (uint64_t)k);
                    memset(want[k], 0xa5, ob);
                }
                CHECK(g_nc.group_start() == PSC_NCCL_SUCCESS);
                for (int k = 0; k < n; k++)
                    CHECK(coll(kind, in[k], want[k], count, dt, op, root, ref[k]) == PSC_NCCL_SUCCESS);
                CHECK(g_nc.group_end() == PSC_NCCL_SUCCESS);
                for (int inplace = 0; inplace < 2; inplace++) {
                    const void *s = snd;
                    void *r = buf, *out = buf;
                    if (!inplace) {
                        memcpy(snd, in[rank], ib);
                        memset(buf, 0xa5, ob);
                    } else if (kind == K_ALLGATHER) {
                        memset(buf, 0xa5, ob);
                        memcpy(buf + (size_t)rank * count * ts, in[rank], ib);
                        s = buf + (size_t)rank * count * ts;
                    } else if (kind == K_REDUCESCATTER) {
                        memcpy(buf, in[rank], ib);
                        s = buf;
                        r = out = buf + (size_t)rank * count * ts;
                    } else {
                        memcpy(buf, in[rank], ib);
                        s = buf;
                    }
                    CHECK(coll(kind, s, r, count, dt, op, root, c) == PSC_NCCL_SUCCESS);
                    if (kind == K_REDUCE && rank != root && inplace)
                        continue; /* a non-root's buffer: its input, left alone */
                    if (memcmp(out, want[rank], ob) != 0) {
                        fprintf(stderr, "rank %d: kind %d type %d op %d inplace %d differs\n", rank, kind, dt, op,
                                inplace);
                        _exit(1);
                    }
                    if (!inplace)
                        CHECK(memcmp(snd, in[rank], ib) == 0); /* the input untouched */
                    checked++;
                }
            }
    CHECK(checked > 300);
    CHECK(g_nc.comm_destroy(c) == PSC_NCCL_SUCCESS);
    for (int k = 0; k < n; k++) {
        CHECK(g_nc.comm_destroy(ref[k]) == PSC_NCCL_SUCCESS);
        free(in[k]);
        free(want[k]);
    }
    free(buf);
    free(snd);
    CHECK(open_fds() == fds); /* the rendezvous's descriptor closed */
    report(rep, 0, checked);
}

static void test_every_collective(void **state)
{
    (void)state;
    for (int n = 2; n <= MAXN; n++)
        ranks_run(n, sweep_rank, NULL);
}

/* Values stated here, not by the fake: int32 sums, a gather's layout, a broadcast from the last rank. */
static void known_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    psc_ncclComm_t c = join(rank, n, id);
    int32_t s[8 * MAXN], r[8 * MAXN];

    (void)arg;
    for (int i = 0; i < 8; i++)
        s[i] = 100 * (rank + 1) + i;
    CHECK(g_nc.all_reduce(s, r, 8, PSC_DT_INT32, PSC_OP_SUM, c, NULL) == PSC_NCCL_SUCCESS);
    for (int i = 0; i < 8; i++)
        CHECK(r[i] == 100 * n * (n + 1) / 2 + n * i);
    CHECK(g_nc.all_gather(s, r, 8, PSC_DT_INT32, c, NULL) == PSC_NCCL_SUCCESS);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < 8; i++)
            CHECK(r[k * 8 + i] == 100 * (k + 1) + i);
    CHECK(g_nc.broadcast(s, s, 8, PSC_DT_INT32, n - 1, c, NULL) == PSC_NCCL_SUCCESS);
    for (int i = 0; i < 8; i++)
        CHECK(s[i] == 100 * n + i);
    CHECK(g_nc.comm_destroy(c) == PSC_NCCL_SUCCESS);
    report(rep, 0, 1);
}

static void test_known_values(void **state)
{
    (void)state;
    ranks_run(3, known_rank, NULL);
}

/* ---------------------------------------------------------------- groups, a ring, big buffers, non-blocking */

static void group_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    psc_ncclComm_t c = join(rank, n, id);
    int64_t a[4], b[4], o1[4], o2[4], o[4];

    (void)arg;
    for (int i = 0; i < 4; i++) {
        a[i] = rank + 1;
        b[i] = (int64_t)(rank + 2) * (i + 1);
    }
    /* two all-reduces in one group */
    CHECK(g_nc.group_start() == PSC_NCCL_SUCCESS);
    CHECK(g_nc.all_reduce(a, o1, 4, PSC_DT_INT64, PSC_OP_SUM, c, NULL) == PSC_NCCL_SUCCESS);
    CHECK(g_nc.all_reduce(b, o2, 4, PSC_DT_INT64, PSC_OP_MAX, c, NULL) == PSC_NCCL_SUCCESS);
    CHECK(g_nc.group_end() == PSC_NCCL_SUCCESS);
    for (int i = 0; i < 4; i++) {
        CHECK(o1[i] == n * (n + 1) / 2);
        CHECK(o2[i] == (int64_t)(n + 1) * (i + 1));
    }
    /* performed in call order: the second one's result is what stays */
    CHECK(g_nc.group_start() == PSC_NCCL_SUCCESS);
    CHECK(g_nc.all_reduce(a, o, 4, PSC_DT_INT64, PSC_OP_SUM, c, NULL) == PSC_NCCL_SUCCESS);
    CHECK(g_nc.all_reduce(b, o, 4, PSC_DT_INT64, PSC_OP_MIN, c, NULL) == PSC_NCCL_SUCCESS);
    CHECK(g_nc.group_end() == PSC_NCCL_SUCCESS);
    for (int i = 0; i < 4; i++)
        CHECK(o[i] == 2 * (i + 1));
    /* a ring of sends and receives, out of place then in place */
    for (int inplace = 0; inplace < 2; inplace++) {
        int32_t s[16], r[16], *rp = inplace ? s : r;
        for (int i = 0; i < 16; i++) {
            s[i] = 1000 * rank + i;
            r[i] = -1;
        }
        CHECK(g_nc.group_start() == PSC_NCCL_SUCCESS);
        CHECK(g_nc.send(s, 16, PSC_DT_INT32, (rank + 1) % n, c, NULL) == PSC_NCCL_SUCCESS);
        CHECK(g_nc.recv(rp, 16, PSC_DT_INT32, (rank + n - 1) % n, c, NULL) == PSC_NCCL_SUCCESS);
        CHECK(g_nc.group_end() == PSC_NCCL_SUCCESS);
        for (int i = 0; i < 16; i++)
            CHECK(rp[i] == 1000 * ((rank + n - 1) % n) + i);
    }
    CHECK(g_nc.comm_destroy(c) == PSC_NCCL_SUCCESS);
    report(rep, 0, 1);
}

static void test_groups_and_ring(void **state)
{
    (void)state;
    ranks_run(2, group_rank, NULL);
    ranks_run(4, group_rank, NULL);
}

static void big_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    const size_t count = (64u << 20) / sizeof(float);
    psc_ncclComm_t c = join(rank, n, id);
    float *s = malloc(count * sizeof(float)), *r = malloc(count * sizeof(float));

    (void)arg;
    CHECK(s && r);
    for (size_t i = 0; i < count; i++)
        s[i] = (float)(i & 1023) + (float)rank;
    CHECK(g_nc.all_reduce(s, r, count, PSC_DT_FLOAT32, PSC_OP_SUM, c, NULL) == PSC_NCCL_SUCCESS);
    for (size_t i = 0; i < count; i++)
        CHECK(r[i] == (float)(n * (i & 1023)) + (float)(n * (n - 1) / 2));
    CHECK(g_nc.all_reduce(s, s, count, PSC_DT_FLOAT32, PSC_OP_MAX, c, NULL) == PSC_NCCL_SUCCESS);
    for (size_t i = 0; i < count; i++)
        CHECK(s[i] == (float)(i & 1023) + (float)(n - 1));
    CHECK(g_nc.comm_destroy(c) == PSC_NCCL_SUCCESS);
    free(s);
    free(r);
    report(rep, 0, 1);
}

static void test_64mib_buffers(void **state)
{
    (void)state;
    ranks_run(2, big_rank, NULL);
}

static psc_ncclResult_t poll_done(psc_ncclComm_t c)
{
    psc_ncclResult_t st;

    do {
        CHECK(g_nc.comm_get_async_error(c, &st) == PSC_NCCL_SUCCESS);
    } while (st == PSC_NCCL_IN_PROGRESS);
    return st;
}

static void nonblocking_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    psc_ncclConfig_t cfg;
    psc_ncclComm_t c;
    psc_ncclResult_t rc;
    int32_t s[3] = {rank + 1, 2, rank}, r[3] = {0, 0, 0};

    (void)arg;
    psc__nccl_config_init(&cfg, 0, g_nc.version);
    rc = g_nc.comm_init_rank_config(&c, n, id, rank, &cfg);
    CHECK(rc == PSC_NCCL_SUCCESS || rc == PSC_NCCL_IN_PROGRESS);
    CHECK(poll_done(c) == PSC_NCCL_SUCCESS);
    for (int round = 0; round < 20; round++) {
        rc = g_nc.all_reduce(s, r, 3, PSC_DT_INT32, PSC_OP_PROD, c, NULL);
        CHECK(rc == PSC_NCCL_SUCCESS || rc == PSC_NCCL_IN_PROGRESS);
        CHECK(poll_done(c) == PSC_NCCL_SUCCESS);
        CHECK(r[0] == (n == 2 ? 2 : 6) && r[1] == (1 << n) && r[2] == 0);
    }
    CHECK(g_nc.comm_destroy(c) == PSC_NCCL_SUCCESS);
    report(rep, 0, 1);
}

static void test_nonblocking_polled(void **state)
{
    (void)state;
    ranks_run(2, nonblocking_rank, NULL);
    ranks_run(3, nonblocking_rank, NULL);
}

/* Polled as a caller should: yielding the CPU, so the helper thread of FAKE_NCCL_MODE=async can run. */
static psc_ncclResult_t poll_yielding(psc_ncclComm_t c)
{
    psc_ncclResult_t st;

    do {
        CHECK(g_nc.comm_get_async_error(c, &st) == PSC_NCCL_SUCCESS);
        if (st == PSC_NCCL_IN_PROGRESS)
            sched_yield();
    } while (st == PSC_NCCL_IN_PROGRESS);
    return st;
}

/*
 * FAKE_NCCL_MODE=async: a non-blocking rank's every call answers
 * ncclInProgress at once, in a group or not, init too (its work is a helper
 * thread's), and settles to the right result; a blocking rank's does not.
 */
static void async_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    psc_ncclConfig_t cfg;
    psc_ncclComm_t c;
    int32_t s[3] = {rank + 1, 2, rank}, r[3] = {0, 0, 0};
    int blocking = *(const int *)arg;

    psc__nccl_config_init(&cfg, blocking, g_nc.version);
    CHECK(g_nc.comm_init_rank_config(&c, n, id, rank, &cfg) == (blocking ? PSC_NCCL_SUCCESS : PSC_NCCL_IN_PROGRESS));
    CHECK(poll_yielding(c) == PSC_NCCL_SUCCESS);
    for (int round = 0; round < 10; round++) {
        memset(r, 0, sizeof(r));
        if (round & 1) {
            CHECK(g_nc.group_start() == PSC_NCCL_SUCCESS);
            CHECK(g_nc.all_reduce(s, r, 3, PSC_DT_INT32, PSC_OP_SUM, c, NULL) == PSC_NCCL_SUCCESS);
            CHECK(g_nc.group_end() == (blocking ? PSC_NCCL_SUCCESS : PSC_NCCL_IN_PROGRESS));
        } else {
            CHECK(g_nc.all_reduce(s, r, 3, PSC_DT_INT32, PSC_OP_SUM, c, NULL) ==
                  (blocking ? PSC_NCCL_SUCCESS : PSC_NCCL_IN_PROGRESS));
        }
        CHECK(poll_yielding(c) == PSC_NCCL_SUCCESS);
        CHECK(r[0] == n * (n + 1) / 2 && r[1] == 2 * n && r[2] == n * (n - 1) / 2);
    }
    CHECK(g_nc.comm_destroy(c) == PSC_NCCL_SUCCESS);
    report(rep, 0, 1);
}

static void test_async_mode(void **state)
{
    int blocking;

    (void)state;
    setenv("FAKE_NCCL_MODE", "async", 1);
    blocking = 0;
    ranks_run(2, async_rank, &blocking);
    ranks_run(3, async_rank, &blocking);
    blocking = 1;
    ranks_run(2, async_rank, &blocking);
    unsetenv("FAKE_NCCL_MODE");
}

/* FAKE_NCCL_HANG=1 in every rank's process: the all-reduce never completes, until a peer aborts. */
static void hang_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    int(*go)[2] = arg;
    psc_ncclConfig_t cfg;
    psc_ncclComm_t c;
    psc_ncclResult_t rc, st;
    int32_t s = 5, r = -1;
    char b;

    psc__nccl_config_init(&cfg, 0, g_nc.version);
    rc = g_nc.comm_init_rank_config(&c, n, id, rank, &cfg);
    CHECK(rc == PSC_NCCL_SUCCESS || rc == PSC_NCCL_IN_PROGRESS);
    CHECK(poll_done(c) == PSC_NCCL_SUCCESS);
    CHECK(g_nc.all_reduce(&s, &r, 1, PSC_DT_INT32, PSC_OP_SUM, c, NULL) == PSC_NCCL_IN_PROGRESS);
    report(rep, 0, 0);
    CHECK(read_full(go[rank][0], &b, 1) == 0); /* every rank has called */
    CHECK(g_nc.comm_get_async_error(c, &st) == PSC_NCCL_SUCCESS);
    CHECK(st == PSC_NCCL_IN_PROGRESS && r == -1);
    report(rep, 0, 0);
    if (rank == 0) {
        CHECK(read_full(go[rank][0], &b, 1) == 0); /* every rank has checked */
        CHECK(g_nc.comm_abort(c) == PSC_NCCL_SUCCESS);
        report(rep, 0, 1);
        return;
    }
    CHECK(read_full(go[rank][0], &b, 1) == 0); /* rank 0 has aborted */
    st = poll_done(c);
    CHECK(r == -1);
    report(rep, st, 1);
    CHECK(g_nc.comm_abort(c) == PSC_NCCL_SUCCESS);
}

static void test_hang_until_abort(void **state)
{
    int go[2][2], st[2];
    ranks_t rs;
    report_t rep;
    char b = 'g';

    (void)state;
    for (int r = 0; r < 2; r++)
        assert_int_equal(pipe2(go[r], O_CLOEXEC), 0);
    setenv("FAKE_NCCL_HANG", "1", 1);
    ranks_start(&rs, 2, hang_rank, go);
    unsetenv("FAKE_NCCL_HANG");
    for (int r = 0; r < 2; r++)
        assert_int_equal(read_full(rs.rep[r], &rep, sizeof(rep)), 0);
    for (int r = 0; r < 2; r++)
        assert_int_equal(write(go[r][1], &b, 1), 1);
    for (int r = 0; r < 2; r++)
        assert_int_equal(read_full(rs.rep[r], &rep, sizeof(rep)), 0);
    assert_int_equal(write(go[0][1], &b, 1), 1);
    assert_int_equal(read_full(rs.rep[0], &rep, sizeof(rep)), 0);
    assert_int_equal(write(go[1][1], &b, 1), 1);
    assert_int_equal(read_full(rs.rep[1], &rep, sizeof(rep)), 0);
    assert_int_equal(rep.rc, PSC_NCCL_REMOTE_ERROR);
    ranks_wait(&rs, st);
    for (int r = 0; r < 2; r++) {
        assert_true(WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0);
        close(go[r][0]);
        close(go[r][1]);
    }
}

/* ---------------------------------------------------------------- refused joins */

static void twice_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    psc_ncclComm_t c = NULL;
    psc_ncclResult_t rc;
    int tried_twice = 0;

    (void)rank;
    (void)arg;
    rc = g_nc.comm_init_rank(&c, n, id, 0); /* both say rank 0: one is refused and comes back as 1 */
    if (rc == PSC_NCCL_INVALID_USAGE) {
        tried_twice = 1;
        rc = g_nc.comm_init_rank(&c, n, id, 1);
    }
    CHECK(rc == PSC_NCCL_SUCCESS);
    CHECK(g_nc.comm_destroy(c) == PSC_NCCL_SUCCESS);
    report(rep, rc, tried_twice);
}

static void count_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    psc_ncclComm_t c = NULL;
    psc_ncclResult_t rc = g_nc.comm_init_rank(&c, rank == 0 ? n : n + 1, id, rank);

    (void)arg;
    if (rc == PSC_NCCL_SUCCESS || c)
        g_nc.comm_abort(c);
    report(rep, rc, 0);
}

static void test_refused_joins(void **state)
{
    ranks_t rs;
    report_t rep[2];
    int st[2];
    psc_ncclComm_t c = NULL;
    psc_ncclUniqueId id;

    (void)state;
    assert_int_equal(g_nc.get_unique_id(&id), PSC_NCCL_SUCCESS);
    assert_int_equal(g_nc.comm_init_rank(&c, 2, id, 2), PSC_NCCL_INVALID_ARGUMENT);
    assert_int_equal(g_nc.comm_init_rank(&c, 2, id, -1), PSC_NCCL_INVALID_ARGUMENT);
    assert_null(c);
    assert_int_equal(dir_entries(g_dir), 1);
    assert_int_equal(g_nc.comm_init_rank(&c, 1, id, 0), PSC_NCCL_SUCCESS); /* one rank: all in, file gone */
    assert_int_equal(dir_entries(g_dir), 0);
    assert_int_equal(g_nc.comm_destroy(c), PSC_NCCL_SUCCESS);

    ranks_start(&rs, 2, twice_rank, NULL);
    for (int r = 0; r < 2; r++)
        assert_int_equal(read_full(rs.rep[r], &rep[r], sizeof(rep[r])), 0);
    ranks_wait(&rs, st);
    assert_int_equal(rep[0].ok + rep[1].ok, 1); /* exactly one was refused */
    for (int r = 0; r < 2; r++)
        assert_true(WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0);

    /* ranks that disagree on the count: both fail, neither waits for ranks that never come */
    ranks_start(&rs, 2, count_rank, NULL);
    for (int r = 0; r < 2; r++)
        assert_int_equal(read_full(rs.rep[r], &rep[r], sizeof(rep[r])), 0);
    ranks_wait(&rs, st);
    for (int r = 0; r < 2; r++) {
        assert_true(WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0);
        assert_true(rep[r].rc == PSC_NCCL_INVALID_USAGE || rep[r].rc == PSC_NCCL_REMOTE_ERROR);
    }
    assert_true(rep[0].rc == PSC_NCCL_INVALID_USAGE || rep[1].rc == PSC_NCCL_INVALID_USAGE);
}

/* ---------------------------------------------------------------- deaths */

/* Rank 0 joins and then waits to be killed; the others call an all-reduce it never joins. */
static void victim_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    psc_ncclComm_t c = join(rank, n, id);
    int32_t s = 1, r = -1;
    psc_ncclResult_t rc;

    (void)arg;
    report(rep, 0, 0); /* joined: about to wait (rank 0) or call (the others) */
    if (rank == 0)
        for (;;)
            pause();
    rc = g_nc.all_reduce(&s, &r, 1, PSC_DT_INT32, PSC_OP_SUM, c, NULL);
    report(rep, rc, r == -1);
    CHECK(g_nc.comm_abort(c) == PSC_NCCL_SUCCESS);
}

static void test_killed_rank(void **state)
{
    ranks_t rs;
    report_t rep;
    int st[3];
    long long t_kill;

    (void)state;
    ranks_start(&rs, 3, victim_rank, NULL);
    for (int r = 0; r < 3; r++)
        assert_int_equal(read_full(rs.rep[r], &rep, sizeof(rep)), 0);
    t_kill = now_ns();
    assert_int_equal(kill(rs.pid[0], SIGKILL), 0);
    /* not reaped yet: a zombie counts as dead */
    for (int r = 1; r < 3; r++) {
        assert_int_equal(read_full(rs.rep[r], &rep, sizeof(rep)), 0);
        assert_true(rep.rc == PSC_NCCL_REMOTE_ERROR || rep.rc == PSC_NCCL_SYSTEM_ERROR);
        assert_int_equal(rep.ok, 1); /* the output left alone */
        assert_true(rep.t_ns - t_kill < 2000000000LL);
    }
    ranks_wait(&rs, st);
    assert_true(WIFSIGNALED(st[0]) && WTERMSIG(st[0]) == SIGKILL);
    for (int r = 1; r < 3; r++)
        assert_true(WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0);
}

static void exit_at_rank(int rank, int n, psc_ncclUniqueId id, int rep, void *arg)
{
    psc_ncclComm_t c = join(rank, n, id);
    psc_ncclResult_t rc = PSC_NCCL_SUCCESS;
    int ok = 0;

    (void)arg;
    for (int i = 0; i < 5 && rc == PSC_NCCL_SUCCESS; i++) {
        int32_t s = rank + i, r = -1;
        rc = g_nc.all_reduce(&s, &r, 1, PSC_DT_INT32, PSC_OP_SUM, c, NULL);
        if (rc == PSC_NCCL_SUCCESS) {
            CHECK(r == n * (n - 1) / 2 + n * i);
            ok++;
        }
    }
    report(rep, rc, ok);
    g_nc.comm_abort(c);
}

static void test_exit_at(void **state)
{
    ranks_t rs;
    report_t rep;
    int st[3];

    (void)state;
    setenv("FAKE_NCCL_EXIT_AT", "3", 1);
    setenv("FAKE_NCCL_EXIT_RANK", "1", 1);
    ranks_start(&rs, 3, exit_at_rank, NULL);
    unsetenv("FAKE_NCCL_EXIT_AT");
    unsetenv("FAKE_NCCL_EXIT_RANK");
    for (int r = 0; r < 3; r++) {
        if (r == 1) { /* it ends at its third call, before any report */
            assert_int_equal(read_full(rs.rep[r], &rep, sizeof(rep)), -1);
            continue;
        }
        assert_int_equal(read_full(rs.rep[r], &rep, sizeof(rep)), 0);
        assert_int_equal(rep.ok, 2);
        assert_true(rep.rc == PSC_NCCL_REMOTE_ERROR || rep.rc == PSC_NCCL_SYSTEM_ERROR);
    }
    ranks_wait(&rs, st);
    assert_true(WIFEXITED(st[1]) && WEXITSTATUS(st[1]) == 9);
    assert_true(WIFEXITED(st[0]) && WEXITSTATUS(st[0]) == 0);
    assert_true(WIFEXITED(st[2]) && WEXITSTATUS(st[2]) == 0);
}

/* ---------------------------------------------------------------- nothing left behind */

/* An id made and never used: its file lives until its maker exits. */
static void test_unused_id_removed_at_exit(void **state)
{
    int idp[2], gop[2], st;
    pid_t pid;
    psc_ncclUniqueId id;
    char go = 'g';

    (void)state;
    assert_int_equal(pipe2(idp, O_CLOEXEC), 0);
    assert_int_equal(pipe2(gop, O_CLOEXEC), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        CHECK(g_nc.get_unique_id(&id) == PSC_NCCL_SUCCESS);
        CHECK(write(idp[1], &id, sizeof(id)) == (ssize_t)sizeof(id));
        CHECK(read_full(gop[0], &go, 1) == 0);
        exit(0); /* exit, not _exit: the library's destructor runs */
    }
    close(idp[1]);
    close(gop[0]);
    assert_int_equal(read_full(idp[0], &id, sizeof(id)), 0);
    assert_non_null(strstr(id.internal, g_dir)); /* the id names a file in FAKE_NCCL_DIR */
    assert_int_equal(dir_entries(g_dir), 1);
    assert_int_equal(write(gop[1], &go, 1), 1);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(dir_entries(g_dir), 0);
    close(idp[0]);
    close(gop[1]);
}

static int setup(void **state)
{
    char why[512];

    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/fake-nccl-test-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    setenv("FAKE_NCCL_DIR", g_dir, 1);
    setenv("P2PSCOPE_LIBNCCL", FAKE_LIBNCCL, 1);
    unsetenv("FAKE_NCCL_VERSION");
    unsetenv("FAKE_NCCL_MODE");
    unsetenv("FAKE_NCCL_HANG");
    unsetenv("FAKE_NCCL_CORRUPT");
    return psc__nccl_load(&g_nc, why, sizeof(why)) == PSC_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    psc__nccl_unload(&g_nc);
    return rmdir(g_dir); /* fails if a rendezvous file was left behind */
}

/* After each test: the rendezvous files of its communicators are gone. */
static int none_left(void **state)
{
    (void)state;
    return dir_entries(g_dir) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_every_collective, none_left),
        cmocka_unit_test_teardown(test_known_values, none_left),
        cmocka_unit_test_teardown(test_groups_and_ring, none_left),
        cmocka_unit_test_teardown(test_64mib_buffers, none_left),
        cmocka_unit_test_teardown(test_nonblocking_polled, none_left),
        cmocka_unit_test_teardown(test_async_mode, none_left),
        cmocka_unit_test_teardown(test_hang_until_abort, none_left),
        cmocka_unit_test_teardown(test_killed_rank, none_left),
        cmocka_unit_test_teardown(test_exit_at, none_left),
        cmocka_unit_test_teardown(test_unused_id_removed_at_exit, none_left),
        cmocka_unit_test_teardown(test_refused_joins, none_left),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
