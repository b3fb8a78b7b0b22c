/*
 * p2pscope ipc without a GPU: psc_ipc_run's refusals of bad options, the
 * checks of requests and answers (ipc/ipc_proto.h), and real worker
 * processes (this binary again, on the fake driver) refusing forged
 * requests with an ERROR that names what was wrong, then ending.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "fake_context.h"
#include "internal.h"
#include "ipc/ipc_proto.h"
#include "proc/workers.h"
#include "process_checks.h"

static psc_ipc_op_t op_of(unsigned code)
{
    psc_ipc_op_t op;

    memset(&op, 0, sizeof(op));
    op.magic = PSC_IPC_OP_MAGIC;
    op.op = code;
    op.method = PSC_SHARE_VMM_FD;
    op.peer = 1;
    op.round_trips = 10;
    return op;
}

static psc_ipc_op_t config_op(void)
{
    psc_ipc_op_t op = op_of(PSC_IPC_OP_CONFIG);

    op.size = 4096;
    op.timeout_ms = 1000;
    psc_measure_opts_default(&op.measure);
    snprintf(op.uuid, sizeof(op.uuid), "GPU-x");
    return op;
}

static void refused(const psc_ipc_op_t *op, const char *words)
{
    psc_ipc_err_t err = {PSC_OK, ""};

    assert_int_equal(psc__ipc_op_check(op, 0, 2, &err), PSC_ERR_INVALID);
    if (!strstr(err.msg, words))
        fail_msg("\"%s\" does not say \"%s\"", err.msg, words);
}

static void test_requests_checked(void **state)
{
    psc_ipc_op_t op = config_op();
    psc_ipc_err_t err = {PSC_OK, ""};

    (void)state;
    assert_int_equal(psc__ipc_op_check(&op, 0, 2, &err), PSC_OK);
    op.magic ^= 1;
    refused(&op, "magic");
    op = config_op(), op.op = 0;
    refused(&op, "request 0");
    op = config_op(), op.op = PSC_IPC_OP_LAST + 1;
    refused(&op, "accepted 1 to");
    op = config_op(), op.size = 0;
    refused(&op, "copy size 0");
    op = config_op(), op.size = (1ull << 40) + 1;
    refused(&op, "copy size");
    op = config_op(), op.timeout_ms = NAN;
    refused(&op, "timeout");
    op = config_op(), op.measure.samples = 0;
    refused(&op, "samples");
    op = config_op(), op.measure.struct_size = 8;
    refused(&op, "struct size");
    op = config_op(), memset(op.uuid, 'A', sizeof(op.uuid));
    refused(&op, "UUID");
    op = config_op(), op.uuid[0] = '\0';
    refused(&op, "UUID");

    op = op_of(PSC_IPC_OP_SHARE);
    assert_int_equal(psc__ipc_op_check(&op, 0, 2, &err), PSC_OK);
    op.method = PSC_SHARE_EVENT;
    refused(&op, "sharing method 4");
    op.method = 0;
    refused(&op, "sharing method 0");
    op = op_of(PSC_IPC_OP_BW);
    assert_int_equal(psc__ipc_op_check(&op, 0, 2, &err), PSC_OK);
    op.peer = 0; /* itself */
    refused(&op, "peer rank 0");
    op.peer = 2;
    refused(&op, "peer rank 2");
    op.peer = -1;
    refused(&op, "peer rank -1");
    op = op_of(PSC_IPC_OP_BW), op.bw = PSC_IPC_NBW;
    refused(&op, "copy 4");
    op.bw = -1;
    refused(&op, "copy -1");
    op = op_of(PSC_IPC_OP_PING), op.round_trips = 0;
    refused(&op, "0 round trips");
    op = op_of(PSC_IPC_OP_PONG), op.round_trips = PSC_IPC_MAX_ROUND_TRIPS + 1;
    refused(&op, "round trips");
    op = op_of(PSC_IPC_OP_PONG), op.round_trips = PSC_IPC_MAX_ROUND_TRIPS;
    assert_int_equal(psc__ipc_op_check(&op, 0, 2, &err), PSC_OK);
}

static psc_ipc_ans_t *ans_of(unsigned op)
{
    static psc_ipc_ans_t a;

    memset(&a, 0, sizeof(a));
    a.magic = PSC_IPC_OP_MAGIC;
    a.op = op;
    a.naccess = 1;
    a.gpu = 0;
    a.ngpu = 1;
    a.rtt_ns.n = 1;
    for (int i = 0; i < PSC_IPC_MAX_RANKS; i++)
        a.release_us[i] = -1;
    return &a;
}

static void ans_refused(const psc_ipc_ans_t *a, unsigned op, const char *words)
{
    psc_ipc_err_t err = {PSC_OK, ""};

    assert_int_equal(psc__ipc_ans_check(a, op, 2, &err), PSC_ERR_INVALID);
    if (!strstr(err.msg, words))
        fail_msg("\"%s\" does not say \"%s\"", err.msg, words);
}

static void test_answers_checked(void **state)
{
    psc_ipc_err_t err = {PSC_OK, ""};
    psc_ipc_ans_t *a;

    (void)state;
    for (unsigned op = PSC_IPC_OP_CONFIG; op <= PSC_IPC_OP_LAST; op++)
        assert_int_equal(psc__ipc_ans_check(ans_of(op), op, 2, &err), PSC_OK);
    ans_refused(ans_of(PSC_IPC_OP_BW), PSC_IPC_OP_PING, "where 7 was asked");
    a = ans_of(PSC_IPC_OP_BW), a->magic = 0;
    ans_refused(a, PSC_IPC_OP_BW, "answer to request");
    a = ans_of(PSC_IPC_OP_BW), memset(a->why, 'x', sizeof(a->why));
    ans_refused(a, PSC_IPC_OP_BW, "reason is not terminated");
    a = ans_of(PSC_IPC_OP_BW), a->status = 1;
    ans_refused(a, PSC_IPC_OP_BW, "status 1");
    a = ans_of(PSC_IPC_OP_BW), a->status = PSC_ERR_IO - 1;
    ans_refused(a, PSC_IPC_OP_BW, "status");
    a = ans_of(PSC_IPC_OP_BW), a->status = PSC_ERR_UNSUPPORTED, a->export_us = -5; /* a refusal: its reason only */
    assert_int_equal(psc__ipc_ans_check(a, PSC_IPC_OP_BW, 2, &err), PSC_OK);
    a = ans_of(PSC_IPC_OP_CONFIG), a->gpu = 1; /* of 1 GPU */
    ans_refused(a, PSC_IPC_OP_CONFIG, "GPU 1 of 1");
    a = ans_of(PSC_IPC_OP_CONFIG), a->ngpu = PSC_MAX_GPUS + 1;
    ans_refused(a, PSC_IPC_OP_CONFIG, "worker on GPU");
    a = ans_of(PSC_IPC_OP_IMPORT), a->import_us = -1;
    ans_refused(a, PSC_IPC_OP_IMPORT, "negative");
    a = ans_of(PSC_IPC_OP_IMPORT), a->first_touch_us = INFINITY;
    ans_refused(a, PSC_IPC_OP_IMPORT, "negative or not a number");
    a = ans_of(PSC_IPC_OP_IMPORT), a->naccess = 0;
    ans_refused(a, PSC_IPC_OP_IMPORT, "access on 0 GPUs");
    a = ans_of(PSC_IPC_OP_IMPORT), a->access[0] = 2;
    ans_refused(a, PSC_IPC_OP_IMPORT, "access 2 on GPU 0");
    a = ans_of(PSC_IPC_OP_IMPORT), a->access[0] = PSC_IPC_ACCESS_NOT_ASKED;
    assert_int_equal(psc__ipc_ans_check(a, PSC_IPC_OP_IMPORT, 2, &err), PSC_OK);
    a = ans_of(PSC_IPC_OP_UNIMPORT), a->release_us[1] = -2;
    ans_refused(a, PSC_IPC_OP_UNIMPORT, "release time of rank 1");
    a = ans_of(PSC_IPC_OP_PING), a->rtt_ns.n = 0;
    ans_refused(a, PSC_IPC_OP_PING, "without figures");
    a->gave_up = 1; /* no figures expected then */
    assert_int_equal(psc__ipc_ans_check(a, PSC_IPC_OP_PING, 2, &err), PSC_OK);
    a = ans_of(PSC_IPC_OP_BW), a->bw.nsamples = PSC_MAX_SAMPLES + 1;
    ans_refused(a, PSC_IPC_OP_BW, "sample count");
    a = ans_of(PSC_IPC_OP_BW), a->bw.status = 3;
    ans_refused(a, PSC_IPC_OP_BW, "bad status");
    a = ans_of(PSC_IPC_OP_BW), a->bw.nsamples = 2, a->bw.samples_gbs[1] = NAN;
    ans_refused(a, PSC_IPC_OP_BW, "sample that is negative");
}

static void test_options_refused(void **state)
{
    static const struct {
        const char *field, *words;
    } cases[] = {
        {"methods", "methods 0x1"},     {"methods16", "methods 0x10"}, {"bw", "copies 0x10"},
        {"trips0", "0 round trips"},    {"timeout", "timeout 0 ms"},   {"nolocal", "no_local 2"},
        {"path", "absolute path"},      {"noverify", "verification off"}, {"size", "size"},
    };
    psc_ipc_report_t *r = (psc_ipc_report_t *)&r;
    int one = 0, bad = 7;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        psc_ipc_opts_t o;

        psc_ipc_opts_default(&o);
        if (!strcmp(cases[i].field, "methods")) o.methods = 1;
        if (!strcmp(cases[i].field, "methods16")) o.methods = 1u << 4;
        if (!strcmp(cases[i].field, "bw")) o.bw = 1u << PSC_IPC_NBW;
        if (!strcmp(cases[i].field, "trips0")) o.round_trips = 0;
        if (!strcmp(cases[i].field, "timeout")) o.timeout_ms = 0;
        if (!strcmp(cases[i].field, "nolocal")) o.no_local = 2;
        if (!strcmp(cases[i].field, "path")) o.worker_path = "p2pscope";
        if (!strcmp(cases[i].field, "noverify")) o.measure.verify = 0;
        if (!strcmp(cases[i].field, "size")) o.measure.size = (1ull << 40) + 1;
        assert_int_equal(psc_ipc_run(g_ctx, NULL, 0, &o, &r), PSC_ERR_INVALID);
        if (!strstr(psc_context_last_error(g_ctx), cases[i].words))
            fail_msg("%s: \"%s\" does not say \"%s\"", cases[i].field, psc_context_last_error(g_ctx), cases[i].words);
    }
    assert_ptr_equal(r, (psc_ipc_report_t *)&r); /* untouched on failure */
    {
        psc_ipc_opts_t o;

        psc_ipc_opts_default(&o);
        assert_int_equal(psc_ipc_run(g_ctx, &one, 1, &o, &r), PSC_ERR_INVALID);
        assert_non_null(strstr(psc_context_last_error(g_ctx), "one worker"));
        assert_int_equal(psc_ipc_run(g_ctx, &bad, 1, &o, &r), PSC_ERR_INVALID);
        assert_non_null(strstr(psc_context_last_error(g_ctx), "GPU 7 does not exist"));
        assert_int_equal(psc_ipc_run(g_ctx, NULL, 2, &o, &r), PSC_ERR_INVALID);
        assert_int_equal(psc_ipc_run(g_ctx, NULL, 0, &o, NULL), PSC_ERR_INVALID);
        o.struct_size = 3;
        assert_int_equal(psc_ipc_run(g_ctx, NULL, 0, &o, &r), PSC_ERR_INVALID);
    }
    assert_ptr_equal(r, (psc_ipc_report_t *)&r);
}

/* One worker (this binary, on the fake driver) sent `payload`; what it reported back. */
static void worker_refuses(const void *payload, uint32_t len, int configure_first, const char *words)
{
    const char *argv[] = {"/proc/self/exe", PSC_IPC_WORKER_ARG, NULL};
    psc_ipc_err_t err = {PSC_OK, ""};
    psc_ipc_run_t *run = NULL;
    psc_ipc_msg_t m;
    int64_t dl = psc__ipc_deadline(20000);

    assert_int_equal(psc__ipc_run_start(2, argv, &run, &err), PSC_OK);
    assert_int_equal(psc__ipc_run_connect(run, dl, &err), PSC_OK);
    if (configure_first) {
        psc_ipc_op_t op = config_op();
        psc_device_info_t info;

        assert_int_equal(psc_device_info(g_ctx, 0, &info), PSC_OK);
        snprintf(op.uuid, sizeof(op.uuid), "%s", info.uuid);
        assert_int_equal(psc__ipc_run_send(run, 0, PSC_IPC_REQUEST, 0, &op, sizeof(op), NULL, 0, dl, &err), PSC_OK);
        assert_int_equal(psc__ipc_run_recv(run, 0, &m, NULL, dl, &err), PSC_OK);
        assert_int_equal(m.type, PSC_IPC_REPLY);
        assert_int_equal(((const psc_ipc_ans_t *)(const void *)m.payload)->status, PSC_OK);
    }
    assert_int_equal(psc__ipc_run_send(run, 0, PSC_IPC_REQUEST, 0, payload, len, NULL, 0, dl, &err), PSC_OK);
    assert_int_equal(psc__ipc_run_recv(run, 0, &m, NULL, dl, &err), PSC_ERR_IO);
    if (!strstr(err.msg, "worker 0") || !strstr(err.msg, "reported") || !strstr(err.msg, words))
        fail_msg("\"%s\" does not name the worker and \"%s\"", err.msg, words);
    psc__ipc_run_destroy(run, 2000);
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* every worker reaped */
}

static void test_worker_refuses_forged_requests(void **state)
{
    psc_ipc_op_t op = config_op();
    char shorter[16] = {0};

    (void)state;
    op.magic = 0xdeadbeef;
    worker_refuses(&op, sizeof(op), 0, "magic");
    worker_refuses(shorter, sizeof(shorter), 0, "a request of 16 bytes");
    op = op_of(PSC_IPC_OP_SHARE);
    worker_refuses(&op, sizeof(op), 0, "before CONFIG");
    op = op_of(PSC_IPC_OP_PING);
    op.peer = 0; /* the worker itself */
    worker_refuses(&op, sizeof(op), 1, "peer rank 0");
}

static psc_ipc_opts_t fake_opts(void)
{
    psc_ipc_opts_t o;

    psc_ipc_opts_default(&o);
    o.measure.size = (64u << 10) + 3;
    o.measure.iterations = 2;
    o.measure.samples = o.measure.max_samples = 3;
    o.round_trips = 500;
    o.timeout_ms = 20000;
    return o;
}

/*
 * Workers that join from elsewhere (opts.publish), as mpirun's ranks would:
 * the publish callback starts this binary with "__ipc-join RANK", the
 * rendezvous on its standard input (never its arguments).
 */
typedef struct {
    int n;             /* workers in the run: joiners are ranks 1 .. n-1 */
    int refuse;        /* publish fails */
    int published;     /* calls with a rendezvous */
    int stopped;       /* calls with NULL: the run ended before its workers could join */
    char dir[PSC_IPC_RENDEZVOUS_LEN]; /* the run's directory, from the rendezvous */
    pid_t pid[4];
} joiners_t;

static int start_joiners(const char *rendezvous, void *arg)
{
    joiners_t *j = arg;
    char *slash;

    if (!rendezvous) {
        j->stopped++;
        return 0;
    }
    j->published++;
    snprintf(j->dir, sizeof(j->dir), "%s", strrchr(rendezvous, ' ') + 1);
    if ((slash = strrchr(j->dir, '/')))
        *slash = '\0';
    if (j->refuse)
        return 1;
    for (int r = 1; r < j->n; r++) {
        char rank[16];
        int fd[2];

        snprintf(rank, sizeof(rank), "%d", r);
        assert_int_equal(pipe(fd), 0);
        j->pid[r] = fork();
        assert_true(j->pid[r] >= 0);
        if (j->pid[r] == 0) {
            dup2(fd[0], 0);
            close(fd[0]);
            close(fd[1]);
            execl("/proc/self/exe", "test_ipc_run", "__ipc-join", rank, (char *)NULL);
            _exit(127);
        }
        close(fd[0]);
        assert_int_equal(write(fd[1], rendezvous, strlen(rendezvous)), (ssize_t)strlen(rendezvous));
        close(fd[1]);
    }
    return 0;
}

/* A joiner's life: the rendezvous from stdin, psc_ipc_worker_join, its reason on stderr. */
static int joiner_main(const char *rank)
{
    char rdv[PSC_IPC_RENDEZVOUS_LEN + 1], why[512];
    ssize_t n = read(0, rdv, sizeof(rdv) - 1);
    psc_status_t st;

    rdv[n > 0 ? n : 0] = '\0';
    st = psc_ipc_worker_join(rdv, atoi(rank), why, sizeof(why));
    if (st != PSC_OK)
        fprintf(stderr, "joiner %s: %s\n", rank, why);
    return st == PSC_OK ? 0 : 1;
}

/* Reap the joiners; each one's wait status. */
static void reap_joiners(const joiners_t *j, int *status)
{
    for (int r = 1; r < j->n; r++)
        assert_int_equal(waitpid(j->pid[r], &status[r], 0), j->pid[r]);
    psc_test_assert_no_children();
}

/*
 * Two workers on the fake's two GPUs, or both on GPU 0: every method, pair and copy, checked and compared;
 * started by the run, or (joined) worker 0 in this process and worker 1 joining from a process of its own.
 */
static void full_run(const int *dev, int joined)
{
    psc_ipc_opts_t o = fake_opts();
    psc_ipc_report_t *r = NULL;
    int per_method[PSC_IPC_METHODS] = {0};
    joiners_t j = {.n = 2};
    int threads = psc_test_threads(), status[2];

    if (joined) {
        o.publish = start_joiners;
        o.publish_arg = &j;
    }
    if (psc_ipc_run(g_ctx, dev, 2, &o, &r) != PSC_OK)
        fail_msg("psc_ipc_run: %s", psc_context_last_error(g_ctx));
    if (joined) {
        reap_joiners(&j, status);
        assert_true(WIFEXITED(status[1]) && WEXITSTATUS(status[1]) == 0);
        assert_int_equal(j.published, 1);
        assert_int_equal(j.stopped, 0);
        assert_int_equal(access(j.dir, F_OK), -1); /* the run's directory is gone */
        assert_int_equal(r->pid[0], getpid());
        assert_int_equal(r->pid[1], j.pid[1]);
        assert_int_equal(psc_test_threads_settled(threads), threads); /* worker 0's thread ended with the run */
    }
    psc_test_assert_no_children();
    assert_int_equal(r->joined, joined);
    assert_int_equal(r->nranks, 2);
    assert_int_equal(r->gpu[0], dev[0]);
    assert_int_equal(r->gpu[1], dev[1]);
    assert_true(r->pid[0] > 0 && r->pid[1] > 0 && r->pid[0] != r->pid[1]);
    assert_int_equal(r->size, o.measure.size);
    for (int m = 0; m < PSC_IPC_METHODS; m++)
        assert_true(r->methods[m].asked && r->methods[m].available);
    assert_int_equal(r->npairs, 6);
    for (int i = 0; i < r->npairs; i++) {
        const psc_ipc_pair_t *p = &r->pairs[i];
        unsigned trips = dev[0] == dev[1] ? 200 : o.round_trips;

        if (p->status != PSC_RESULT_PASSED)
            fail_msg("%s %d<-%d: %s", psc_ipc_method_name(p->method), p->importer, p->exporter, p->reason);
        per_method[p->method - 1]++;
        assert_int_equal(p->gpu_importer, dev[p->importer]);
        assert_int_equal(p->gpu_exporter, dev[p->exporter]);
        assert_int_equal(p->importer, 1 - p->exporter);
        for (int k = 0; k < PSC_IPC_NBW; k++) {
            assert_int_equal(p->bw[k].status, PSC_RESULT_PASSED);
            assert_true(p->bw[k].verify.checked >= 3 && p->bw[k].verify.bad_bytes == 0);
            assert_true(p->bw[k].stats.median > 0 && p->bw[k].size == o.measure.size);
            /* writes go from the importer's memory into the import, reads the other way; the importer issues */
            assert_int_equal(p->bw[k].c.xfer[0].src, k == PSC_IPC_CE_WRITE || k == PSC_IPC_SM_WRITE ? p->gpu_importer
                                                                                                       : p->gpu_exporter);
            assert_int_equal(p->bw[k].c.xfer[0].issuer, p->gpu_importer);
            assert_int_equal(p->bw_local[k].status, PSC_RESULT_PASSED);
            assert_true(p->bw_local[k].stats.median > 0);
        }
        assert_int_equal(p->rtt_ns.n, trips);
        assert_int_equal(p->rtt_local_ns.n, trips);
        assert_true(p->rtt_ns.p50 > 0 && p->rtt_ns.p99 >= p->rtt_ns.p50);
        assert_int_equal(p->naccess, 2);
        if (p->access[p->gpu_importer] != PSC_ACCESS_READWRITE)
            fail_msg("%s %d<-%d: access %u on the importer's GPU", psc_ipc_method_name(p->method), p->importer,
                     p->exporter, p->access[p->gpu_importer]);
        if (dev[0] != dev[1]) /* mapped for the importer's GPU only; legacy not asked on the other */
            assert_int_equal(p->access[p->gpu_exporter],
                             p->method == PSC_SHARE_LEGACY ? PSC_IPC_ACCESS_NOT_ASKED : PSC_ACCESS_NONE);
        assert_true(p->map_us == 0 || p->method != PSC_SHARE_LEGACY);
        assert_true(p->release_us > 0 && p->touch_us > 0 && p->first_touch_us > 0);
        assert_string_equal(p->reason, "");
    }
    for (int m = 0; m < PSC_IPC_METHODS; m++)
        assert_int_equal(per_method[m], 2);
    psc_ipc_report_free(r);
}

static void test_full_run_two_gpus(void **state)
{
    const int dev[2] = {0, 1};

    (void)state;
    full_run(dev, 0);
}

static void test_full_run_one_gpu_twice(void **state)
{
    const int dev[2] = {1, 1};

    (void)state;
    full_run(dev, 0);
}

static void test_joined_run(void **state)
{
    const int two[2] = {0, 1}, one[2] = {1, 1};

    (void)state;
    full_run(two, 1);
    full_run(one, 1);
}

/*
 * A publish that fails ends the run at once: no worker, no thread, no run directory left. A run refused
 * before it could publish calls publish with NULL, so the caller's ranks stop.
 */
static void test_joined_publish_refused(void **state)
{
    const int dev[2] = {0, 1};
    psc_ipc_opts_t o = fake_opts();
    psc_ipc_report_t *r = NULL;
    joiners_t j = {.n = 2, .refuse = 1};
    int threads = psc_test_threads();

    (void)state;
    o.publish = start_joiners;
    o.publish_arg = &j;
    assert_int_equal(psc_ipc_run(g_ctx, dev, 2, &o, &r), PSC_ERR_IO);
    assert_null(r);
    assert_int_equal(j.published, 1);
    assert_int_equal(j.stopped, 0); /* called once: it failed, no second call */
    assert_non_null(strstr(psc_context_last_error(g_ctx), "publish"));
    assert_int_equal(access(j.dir, F_OK), -1); /* the run's directory is gone */
    assert_int_equal(psc_test_threads_settled(threads), threads);
    psc_test_assert_no_children();
    /* publish needs the GPUs listed, one per worker; and excludes a worker program: refused, publish told NULL */
    assert_int_equal(psc_ipc_run(g_ctx, NULL, 0, &o, &r), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "one GPU per worker"));
    assert_int_equal(j.stopped, 1);
    o.worker_path = "/bin/true";
    assert_int_equal(psc_ipc_run(g_ctx, dev, 2, &o, &r), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "publish"));
    assert_int_equal(j.published, 1);
    assert_int_equal(j.stopped, 2);
}

/* A joined worker killed mid-run: the run fails naming it (its connection closed), worker 0's thread ends. */
static void test_joined_worker_killed(void **state)
{
    const int dev[2] = {0, 1};
    psc_ipc_opts_t o = fake_opts();
    psc_ipc_report_t *r = NULL;
    joiners_t j = {.n = 2};
    int threads = psc_test_threads(), status[2];
    char die[16];

    (void)state;
    o.publish = start_joiners;
    o.publish_arg = &j;
    o.no_local = 1;
    o.methods = 1u << PSC_SHARE_VMM_FD;
    snprintf(die, sizeof(die), "1:%u", PSC_IPC_OP_BW);
    setenv("P2PSCOPE_TEST_IPC_DIE", die, 1);
    assert_int_equal(psc_ipc_run(g_ctx, dev, 2, &o, &r), PSC_ERR_IO);
    unsetenv("P2PSCOPE_TEST_IPC_DIE");
    assert_null(r);
    if (!strstr(psc_context_last_error(g_ctx), "worker 1"))
        fail_msg("%s", psc_context_last_error(g_ctx));
    reap_joiners(&j, status);
    assert_true(WIFSIGNALED(status[1]) && WTERMSIG(status[1]) == SIGKILL);
    assert_int_equal(psc_test_threads_settled(threads), threads);
}

/*
 * A joined worker that ends while another is answering (worker 1 gone once it answered PONG, while worker 0
 * pings through its memory) is seen by its connection closing, named at once, not after the other's wait.
 */
static void test_joined_worker_gone_while_other_answers(void **state)
{
    const int dev[2] = {0, 1};
    psc_ipc_opts_t o = fake_opts();
    psc_ipc_report_t *r = NULL;
    joiners_t j = {.n = 2};
    int status[2];
    char die[24];

    (void)state;
    o.publish = start_joiners;
    o.publish_arg = &j;
    o.no_local = 1;
    o.methods = 1u << PSC_SHARE_VMM_FD;
    o.bw = 1u << PSC_IPC_CE_WRITE;
    o.timeout_ms = 3000; /* worker 0's ping gives up then; the run is over before */
    snprintf(die, sizeof(die), "1:%u:after", PSC_IPC_OP_PONG);
    setenv("P2PSCOPE_TEST_IPC_DIE", die, 1);
    assert_int_equal(psc_ipc_run(g_ctx, dev, 2, &o, &r), PSC_ERR_IO);
    unsetenv("P2PSCOPE_TEST_IPC_DIE");
    if (!strstr(psc_context_last_error(g_ctx), "worker 1") ||
        !strstr(psc_context_last_error(g_ctx), "closed its connection while worker 0"))
        fail_msg("%s", psc_context_last_error(g_ctx));
    reap_joiners(&j, status);
    assert_true(WIFSIGNALED(status[1]) && WTERMSIG(status[1]) == SIGKILL);
}

/* psc_ipc_worker_join refuses what is not a rendezvous, or a rank it cannot be, with what is accepted. */
static void test_join_refusals(void **state)
{
    static const struct {
        const char *rdv;
        int rank;
        psc_status_t st;
        const char *words;
    } cases[] = {
        {"p2pscope-ipc 1 2 00112233445566778899aabbccddeeff /tmp/x/sock", 0, PSC_ERR_INVALID, "accepted 1 and up"},
        {"hello", 1, PSC_ERR_INVALID, "accepted the text psc_ipc_run handed"},
        {"p2pscope-ipc 2 2 00112233445566778899aabbccddeeff /tmp/x/sock", 1, PSC_ERR_INVALID, "accepted the text"},
        {"p2pscope-ipc 1 2", 1, PSC_ERR_INVALID, "without its worker count"},
        {"p2pscope-ipc 1 2 0011", 1, PSC_ERR_INVALID, "without its token"},
        {"p2pscope-ipc 1 2 0011 /tmp/x/sock", 1, PSC_ERR_INVALID, "32 hex"},
        {"p2pscope-ipc 1 2 00112233445566778899aabbccddeeff sock", 1, PSC_ERR_INVALID, "absolute path"},
        {"p2pscope-ipc 1 x 00112233445566778899aabbccddeeff /tmp/x/sock", 1, PSC_ERR_INVALID, "worker count"},
        {"p2pscope-ipc 1 2 00112233445566778899aabbccddeeff /tmp/x/sock", 2, PSC_ERR_INVALID, "worker rank"},
        /* well formed, but nobody listens there */
        {"p2pscope-ipc 1 2 00112233445566778899aabbccddeeff /nonexistent-p2pscope/sock", 1, PSC_ERR_IO, "sock"},
    };
    char why[512];

    (void)state;
    assert_int_equal(psc_ipc_worker_join(NULL, 1, why, sizeof(why)), PSC_ERR_INVALID);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        why[0] = '\0';
        if (psc_ipc_worker_join(cases[i].rdv, cases[i].rank, why, sizeof(why)) != cases[i].st ||
            !strstr(why, cases[i].words))
            fail_msg("case %zu (%s): \"%s\", expected %d with \"%s\"", i, cases[i].rdv, why, cases[i].st,
                     cases[i].words);
    }
}

static void test_wrong_byte_fails_its_pairs(void **state)
{
    psc_ipc_opts_t o = fake_opts();
    psc_ipc_report_t *r = NULL;

    (void)state;
    o.methods = 1u << PSC_SHARE_LEGACY;
    o.bw = 1u << PSC_IPC_CE_READ;
    setenv("P2PSCOPE_TEST_CORRUPT_OFFSET", "65538", 1);
    assert_int_equal(psc_ipc_run(g_ctx, NULL, 0, &o, &r), PSC_OK);
    unsetenv("P2PSCOPE_TEST_CORRUPT_OFFSET");
    assert_int_equal(r->npairs, 2);
    for (int i = 0; i < 2; i++) {
        const psc_ipc_pair_t *p = &r->pairs[i];

        assert_int_equal(p->status, PSC_RESULT_FAILED);
        assert_int_equal(p->bw[PSC_IPC_CE_READ].verify.first_bad_offset, 65538);
        if (!strstr(p->reason, "ce_read") || !strstr(p->reason, "offset 65538"))
            fail_msg("reason: %s", p->reason);
        assert_int_equal(p->bw_local[PSC_IPC_CE_READ].status, PSC_RESULT_PASSED); /* this process was not hooked */
        assert_int_equal(p->bw[PSC_IPC_CE_WRITE].status, 0); /* not asked: never run */
        assert_int_equal(p->bw[PSC_IPC_CE_WRITE].nsamples, 0);
        assert_int_equal(p->rtt_ns.n, 0); /* a failed pair's round trips are not run */
    }
    psc_ipc_report_free(r);
    psc_test_assert_no_children();
}

static void test_dead_worker_named(void **state)
{
    static const unsigned ops[] = {PSC_IPC_OP_CONFIG, PSC_IPC_OP_IMPORT, PSC_IPC_OP_BW, PSC_IPC_OP_PONG,
                                   PSC_IPC_OP_UNSHARE};
    psc_ipc_opts_t o = fake_opts();
    psc_ipc_report_t *r = NULL;

    (void)state;
    o.methods = 1u << PSC_SHARE_VMM_FD;
    o.no_local = 1;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        char die[16];

        snprintf(die, sizeof(die), "%d:%u", (int)(i & 1), ops[i]);
        setenv("P2PSCOPE_TEST_IPC_DIE", die, 1);
        assert_int_equal(psc_ipc_run(g_ctx, NULL, 0, &o, &r), PSC_ERR_IO);
        unsetenv("P2PSCOPE_TEST_IPC_DIE");
        assert_null(r);
        snprintf(die, sizeof(die), "worker %d", (int)(i & 1));
        if (!strstr(psc_context_last_error(g_ctx), die) || !strstr(psc_context_last_error(g_ctx), "signal 9"))
            fail_msg("op %u: %s", ops[i], psc_context_last_error(g_ctx));
        psc_test_assert_no_children();
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests_checked),
        cmocka_unit_test(test_answers_checked),
        cmocka_unit_test(test_options_refused),
        cmocka_unit_test(test_worker_refuses_forged_requests),
        cmocka_unit_test(test_full_run_two_gpus),
        cmocka_unit_test(test_full_run_one_gpu_twice),
        cmocka_unit_test(test_wrong_byte_fails_its_pairs),
        cmocka_unit_test(test_dead_worker_named),
        cmocka_unit_test(test_joined_run),
        cmocka_unit_test(test_joined_publish_refused),
        cmocka_unit_test(test_joined_worker_killed),
        cmocka_unit_test(test_joined_worker_gone_while_other_answers),
        cmocka_unit_test(test_join_refusals),
    };

    if (argc >= 2 && strcmp(argv[1], PSC_IPC_WORKER_ARG) == 0)
        return psc_ipc_worker_main(); /* started by psc_ipc_run or the test, the fake driver in its environment */
    if (argc >= 3 && strcmp(argv[1], "__ipc-join") == 0)
        return joiner_main(argv[2]);  /* started by start_joiners */
    psc_test_fake_driver("contexts", "2");
    setenv("FAKE_CUDA_UUID", "7", 1);    /* GPUs with UUIDs, which workers are told theirs by */
    setenv("FAKE_CUDA_KERNELS", "1", 1); /* the fake runs the kernels, in every process */
    setenv("FAKE_CUDA_FABRIC", "1", 1);  /* and its fabric handles work */
    return cmocka_run_group_tests(tests, psc_test_open_ctx, psc_test_close_ctx);
}
