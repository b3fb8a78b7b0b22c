/*
 * p2pscope ipc's coordinator (psc_ipc_run): the same paths measured inside
 * this process first (ipc_local.c), then one worker per listed GPU started
 * and driven through its requests (ipc/ipc_proto.h) method by method: every
 * worker shares memory, every worker imports every other's, each ordered
 * pair's copies and round trips run one at a time, then all is released
 * (imports first, so no exporter frees memory still mapped elsewhere).
 * Any failure of a worker (an end, an ERROR, a malformed answer, a timeout)
 * ends the run naming it; psc__ipc_run_destroy then ends and reaps them all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/channel.h"
#include "ipc/ipc_join.h"
#include "ipc/ipc_local.h"
#include "ipc/ipc_measure.h"
#include "ipc/ipc_proto.h"
#include "proc/workers.h"
#include "opts.h"
#include "xfer/bw.h"

#define PSC__GRACE_MS 2000

typedef struct {
    psc_context_t *ctx;
    const psc_ipc_opts_t *o;
    psc_ipc_run_t *run;
    psc_ipc_self_t *self;               /* worker 0's thread when the workers join (opts.publish) */
    int published;                      /* opts.publish was called */
    psc_ipc_report_t *rep;
    int n;
    psc_ipc_ans_t ans;                  /* the last answer */
    psc_share_msg_t msg[PSC_IPC_MAX_RANKS]; /* each worker's export of the method in hand; fd -1 none */
    int shared[PSC_IPC_MAX_RANKS];
} psc_ipc_coord_t;

static int64_t psc__dl(const psc_ipc_coord_t *co)
{
    return psc__ipc_deadline((int64_t)co->o->timeout_ms);
}

static psc_status_t psc__ipc_failed(psc_ipc_coord_t *co, const psc_ipc_err_t *err)
{
    return psc__fail(co->ctx, err->st == PSC_OK ? PSC_ERR_IO : err->st, "p2pscope ipc: %s", err->msg);
}

/* One request to worker `rank` and its answer into co->ans (checked); a refused op is the answer's status. */
static psc_status_t psc__ask(psc_ipc_coord_t *co, int rank, const psc_ipc_op_t *op)
{
    psc_ipc_err_t err = {PSC_OK, ""};
    psc_ipc_msg_t m;
    psc_status_t st;

    if ((st = psc__ipc_run_send(co->run, rank, PSC_IPC_REQUEST, 0, op, sizeof(*op), NULL, 0, psc__dl(co), &err)) !=
            PSC_OK ||
        (st = psc__ipc_run_recv(co->run, rank, &m, NULL, psc__dl(co), &err)) != PSC_OK)
        return psc__ipc_failed(co, &err);
    if (m.type != PSC_IPC_REPLY || m.len != sizeof(co->ans)) {
        psc__ipc_msg_close_fds(&m);
        return psc__fail(co->ctx, PSC_ERR_IO, "p2pscope ipc: worker %d answered with a %s of %u bytes: accepted "
                         "a REPLY of %zu", rank, psc__ipc_type_name(m.type), m.len, sizeof(co->ans));
    }
    memcpy(&co->ans, m.payload, sizeof(co->ans));
    if (psc__ipc_ans_check(&co->ans, op->op, co->n, &err) != PSC_OK)
        return psc__fail(co->ctx, PSC_ERR_IO, "p2pscope ipc: worker %d: %s", rank, err.msg);
    return PSC_OK;
}

static psc_ipc_op_t psc__op(unsigned code, int method, int peer)
{
    psc_ipc_op_t op;

    memset(&op, 0, sizeof(op));
    op.magic = PSC_IPC_OP_MAGIC;
    op.op = code;
    op.method = method;
    op.peer = peer;
    return op;
}

/* A request every worker must do (a failed one ends the run, naming the worker). */
static psc_status_t psc__ask_ok(psc_ipc_coord_t *co, int rank, const psc_ipc_op_t *op, const char *what)
{
    psc_status_t st = psc__ask(co, rank, op);

    if (st == PSC_OK && co->ans.status != PSC_OK)
        return psc__fail(co->ctx, co->ans.status, "p2pscope ipc: worker %d (GPU %d) could not %s: %s", rank,
                         co->rep->gpu[rank], what, co->ans.why);
    return st;
}

static psc_status_t psc__configure(psc_ipc_coord_t *co, uint64_t size)
{
    psc_status_t st = PSC_OK;

    for (int r = 0; r < co->n && st == PSC_OK; r++) {
        psc_ipc_op_t op = psc__op(PSC_IPC_OP_CONFIG, 0, 0);
        psc_device_info_t info;

        if ((st = psc_device_info(co->ctx, co->rep->gpu[r], &info)) != PSC_OK)
            break;
        if (!info.uuid[0])
            return psc__fail(co->ctx, PSC_ERR_UNSUPPORTED, "p2pscope ipc: GPU %d has no UUID, by which its worker would "
                             "find it", co->rep->gpu[r]);
        op.size = size;
        op.timeout_ms = co->o->timeout_ms;
        op.measure = co->o->measure;
        op.measure.size = size;
        snprintf(op.uuid, sizeof(op.uuid), "%s", info.uuid);
        st = psc__ask_ok(co, r, &op, "start");
    }
    return st;
}

static void psc__close_msgs(psc_ipc_coord_t *co)
{
    for (int r = 0; r < co->n; r++) {
        if (co->msg[r].fd >= 0)
            close(co->msg[r].fd);
        co->msg[r].fd = -1;
    }
}

/* Every worker's memory of method m; *ok 0 (and reason) when a worker cannot make it here. */
static psc_status_t psc__share_all(psc_ipc_coord_t *co, int m, psc_ipc_method_t *meth, int *ok)
{
    psc_ipc_err_t err = {PSC_OK, ""};
    psc_status_t st;

    *ok = 1;
    memset(co->shared, 0, sizeof(co->shared));
    for (int r = 0; r < co->n; r++) {
        psc_ipc_op_t op = psc__op(PSC_IPC_OP_SHARE, m, 0);

        if ((st = psc__ask(co, r, &op)) != PSC_OK)
            return st;
        if (co->ans.status != PSC_OK) {
            *ok = 0;
            snprintf(meth->reason, sizeof(meth->reason), "worker %d (GPU %d): %s", r, co->rep->gpu[r], co->ans.why);
            return PSC_OK;
        }
        co->shared[r] = 1;
        for (int i = 0; i < co->rep->npairs; i++) /* the exporter's figure, on every pair it exports to */
            if (co->rep->pairs[i].method == m && co->rep->pairs[i].exporter == r)
                co->rep->pairs[i].export_us = co->ans.export_us;
        if (psc__ipc_recv_share(psc__ipc_run_chan(co->run, r), &co->msg[r], psc__dl(co), &err) != PSC_OK)
            return psc__ipc_failed(co, &err);
    }
    return PSC_OK;
}

static psc_ipc_pair_t *psc__pair(psc_ipc_coord_t *co, int m, int i, int e)
{
    for (int k = 0; k < co->rep->npairs; k++) {
        psc_ipc_pair_t *p = &co->rep->pairs[k];

        if (p->method == m && p->importer == i && p->exporter == e)
            return p;
    }
    return NULL;
}

static void psc__pair_fail(psc_ipc_pair_t *p, const char *what, const char *why)
{
    if (p->status == PSC_RESULT_FAILED)
        return; /* the first reason stands */
    p->status = PSC_RESULT_FAILED;
    snprintf(p->reason, sizeof(p->reason), "%.60s: %.400s", what, why);
}

static psc_status_t psc__import(psc_ipc_coord_t *co, psc_ipc_pair_t *p)
{
    psc_ipc_err_t err = {PSC_OK, ""};
    psc_ipc_op_t op = psc__op(PSC_IPC_OP_IMPORT, p->method, p->exporter);
    const psc_share_msg_t *msg = &co->msg[p->exporter];
    psc_status_t st;

    if ((st = psc__ipc_run_send(co->run, p->importer, msg->fd >= 0 ? PSC_IPC_SHARE_FD : PSC_IPC_SHARE, 0, msg->bytes,
                                PSC_SHARE_MSG_LEN, msg->fd >= 0 ? &msg->fd : NULL, msg->fd >= 0, psc__dl(co), &err)) !=
        PSC_OK)
        return psc__ipc_failed(co, &err);
    if ((st = psc__ask(co, p->importer, &op)) != PSC_OK)
        return st;
    if (co->ans.status != PSC_OK) {
        psc__pair_fail(p, "import", co->ans.why);
        return PSC_OK;
    }
    p->import_us = co->ans.import_us;
    p->map_us = co->ans.map_us;
    p->first_touch_us = co->ans.first_touch_us;
    p->touch_us = co->ans.touch_us;
    p->naccess = co->ans.naccess;
    memcpy(p->access, co->ans.access, sizeof(p->access));
    p->status = PSC_RESULT_PASSED;
    return PSC_OK;
}

static psc_status_t psc__pair_bw(psc_ipc_coord_t *co, psc_ipc_pair_t *p, int k)
{
    psc_ipc_op_t op = psc__op(PSC_IPC_OP_BW, p->method, p->exporter);
    psc_status_t st;

    op.bw = k;
    if ((st = psc__ask(co, p->importer, &op)) != PSC_OK)
        return st;
    if (co->ans.status != PSC_OK) {
        psc__pair_fail(p, psc_ipc_bw_name(k), co->ans.why);
        return PSC_OK;
    }
    p->bw[k] = co->ans.bw;
    if (p->bw[k].status == PSC_RESULT_FAILED)
        psc__pair_fail(p, psc_ipc_bw_name(k), p->bw[k].reason);
    return PSC_OK;
}

/* The exporter answers, the importer asks: a round trip through each one's imported memory. */
static psc_status_t psc__pair_rtt(psc_ipc_coord_t *co, psc_ipc_pair_t *p)
{
    psc_ipc_op_t pong = psc__op(PSC_IPC_OP_PONG, p->method, p->importer);
    psc_ipc_op_t ping = psc__op(PSC_IPC_OP_PING, p->method, p->exporter);
    psc_ipc_op_t end = psc__op(PSC_IPC_OP_PONG_END, p->method, p->importer);
    psc_status_t st;
    int late;

    pong.round_trips = ping.round_trips = psc__ipc_round_trips(co->o, p->gpu_importer, p->gpu_exporter);
    if ((st = psc__ask(co, p->exporter, &pong)) != PSC_OK)
        return st;
    if (co->ans.status != PSC_OK) {
        psc__pair_fail(p, "round trips (the answering side)", co->ans.why);
        return PSC_OK;
    }
    /* The responder runs now: it is ended (answered or given up) on every path below. */
    if ((st = psc__ask(co, p->importer, &ping)) != PSC_OK)
        return st;
    if (co->ans.status != PSC_OK)
        psc__pair_fail(p, "round trips", co->ans.why);
    else if (co->ans.gave_up)
        psc__pair_fail(p, "round trips", "no answer came through the imported memory in time");
    else
        p->rtt_ns = co->ans.rtt_ns;
    if ((st = psc__ask(co, p->exporter, &end)) != PSC_OK)
        return st;
    late = co->ans.status == PSC_OK && co->ans.gave_up;
    if (co->ans.status != PSC_OK)
        psc__pair_fail(p, "round trips (the answering side)", co->ans.why);
    else if (late && p->status != PSC_RESULT_FAILED)
        psc__pair_fail(p, "round trips", "the answering side waited in vain for a flag");
    return PSC_OK;
}

/* Imports first, then each worker's own memory; the release times onto the pairs. */
static psc_status_t psc__release(psc_ipc_coord_t *co, int m)
{
    psc_status_t st = PSC_OK;

    for (int r = 0; r < co->n && st == PSC_OK; r++) {
        psc_ipc_op_t op = psc__op(PSC_IPC_OP_UNIMPORT, m, 0);

        if ((st = psc__ask_ok(co, r, &op, "release what it imported")) != PSC_OK)
            break;
        for (int e = 0; e < co->n; e++) {
            psc_ipc_pair_t *p = psc__pair(co, m, r, e);

            if (p && co->ans.release_us[e] >= 0)
                p->release_us = co->ans.release_us[e];
        }
    }
    for (int r = 0; r < co->n && st == PSC_OK; r++) {
        psc_ipc_op_t op = psc__op(PSC_IPC_OP_UNSHARE, m, 0);

        if (co->shared[r])
            st = psc__ask_ok(co, r, &op, "free its shared memory");
    }
    psc__close_msgs(co);
    return st;
}

static psc_status_t psc__method(psc_ipc_coord_t *co, int m, psc_ipc_method_t *meth)
{
    psc_status_t st;
    int ok;

    if ((st = psc__share_all(co, m, meth, &ok)) != PSC_OK)
        return st;
    meth->available = ok;
    for (int k = 0; ok && k < co->rep->npairs && st == PSC_OK; k++)
        if (co->rep->pairs[k].method == m)
            st = psc__import(co, &co->rep->pairs[k]);
    for (int k = 0; ok && k < co->rep->npairs && st == PSC_OK; k++) {
        psc_ipc_pair_t *p = &co->rep->pairs[k];

        if (p->method != m || p->status != PSC_RESULT_PASSED)
            continue;
        for (int b = 0; b < PSC_IPC_NBW && st == PSC_OK; b++)
            if (co->o->bw & (1u << b))
                st = psc__pair_bw(co, p, b);
        if (st == PSC_OK && p->status == PSC_RESULT_PASSED)
            st = psc__pair_rtt(co, p);
    }
    if (st != PSC_OK)
        return st;
    return psc__release(co, m);
}

/* The pairs of the methods asked, with this process's own figures of their GPU pairs. */
static psc_status_t psc__plan(psc_ipc_coord_t *co, const psc_ipc_local_t *local)
{
    psc_ipc_report_t *rep = co->rep;
    int k = 0;

    rep->pairs = calloc((size_t)PSC_IPC_METHODS * (size_t)co->n * (size_t)co->n, sizeof(*rep->pairs));
    if (!rep->pairs)
        return psc__fail(co->ctx, PSC_ERR_NO_MEMORY, "out of host memory for the pairs of %d workers", co->n);
    for (int m = PSC_SHARE_LEGACY; m <= PSC_SHARE_VMM_FABRIC; m++)
        for (int i = 0; (co->o->methods & (1u << m)) && i < co->n; i++)
            for (int e = 0; e < co->n; e++) {
                psc_ipc_pair_t *p = &rep->pairs[k];

                if (e == i)
                    continue;
                p->method = m;
                p->importer = i;
                p->exporter = e;
                p->gpu_importer = rep->gpu[i];
                p->gpu_exporter = rep->gpu[e];
                p->status = PSC_RESULT_WAIVED; /* until imported */
                snprintf(p->reason, sizeof(p->reason), "not imported");
                psc__ipc_local_get(local, p);
                k++;
            }
    rep->npairs = k;
    return PSC_OK;
}

/* Drop the pairs of methods that could not run; a passed pair has no reason left. */
static void psc__compact(psc_ipc_report_t *rep)
{
    int k = 0;

    for (int i = 0; i < rep->npairs; i++) {
        psc_ipc_pair_t *p = &rep->pairs[i];

        if (!rep->methods[p->method - 1].available)
            continue;
        if (p->status == PSC_RESULT_PASSED)
            p->reason[0] = '\0';
        if (k != i)
            rep->pairs[k] = *p;
        k++;
    }
    rep->npairs = k;
}

static psc_status_t psc__check_opts(psc_context_t *ctx, const psc_ipc_opts_t *o, uint64_t *size)
{
    char why[256];
    psc_measure_opts_t m = o->measure, full;

    if (o->methods & ~((1u << PSC_SHARE_LEGACY) | (1u << PSC_SHARE_VMM_FD) | (1u << PSC_SHARE_VMM_FABRIC)))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: methods 0x%x: accepted bits 1<<%d (legacy), 1<<%d (VMM "
                         "fd), 1<<%d (fabric), or 0 for all", o->methods, PSC_SHARE_LEGACY, PSC_SHARE_VMM_FD,
                         PSC_SHARE_VMM_FABRIC);
    if (o->bw & ~((1u << PSC_IPC_NBW) - 1))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: copies 0x%x: accepted bits 1<<0 to 1<<%d, or 0 for all",
                         o->bw, PSC_IPC_NBW - 1);
    if (o->round_trips < 1 || o->round_trips > PSC_IPC_MAX_ROUND_TRIPS)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: %u round trips: accepted 1 to %u", o->round_trips,
                         PSC_IPC_MAX_ROUND_TRIPS);
    if (!(o->timeout_ms >= 1 && o->timeout_ms <= 3.6e6))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: timeout %g ms: accepted 1 to 3600000", o->timeout_ms);
    if (o->no_local != 0 && o->no_local != 1)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: no_local %d: accepted 0 or 1", o->no_local);
    if (o->worker_path && o->worker_path[0] != '/')
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: worker program \"%.80s\": accepted an absolute path",
                         o->worker_path);
    if (o->publish && o->worker_path)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: a worker program and publish: accepted one of them "
                         "(publish: the workers join from elsewhere, none is started)");
    m.size = m.size ? m.size : PSC_IPC_DEFAULT_SIZE;
    /* Adopted apart (its struct_size is the caller's), as psc_measure_opts_check does, then checked whole. */
    if (psc__measure_opts_adopt(NULL, &m, &full, why, sizeof(why)) != PSC_OK ||
        psc__measure_opts_check(&full, why, sizeof(why)) != PSC_OK)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: %s", why);
    if (!m.verify)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: verification off: accepted on (every copy is checked)");
    *size = m.size;
    return PSC_OK;
}

/* The workers' GPUs: the list (a GPU may be listed twice: two workers on it), or every GPU; one GPU gets two. */
static psc_status_t psc__ranks(psc_context_t *ctx, const int *devices, int ndev, int joined,
                               psc_ipc_report_t *rep)
{
    if (joined && ndev == 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: no GPUs listed with publish: accepted a list of one GPU "
                         "per worker (worker 0 this process's, the others the joining ranks')");
    if (ndev < 0 || ndev > PSC_IPC_MAX_RANKS || (ndev > 0 && !devices))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: %d GPUs listed: accepted 0 (all) or 2 to %d, with the list",
                         ndev, PSC_IPC_MAX_RANKS);
    if (ndev == 0) {
        rep->nranks = ctx->ndev > 1 ? ctx->ndev : 2;
        for (int r = 0; r < rep->nranks; r++)
            rep->gpu[r] = ctx->ndev > 1 ? r : 0;
    } else {
        rep->nranks = ndev;
        for (int r = 0; r < ndev; r++) {
            if (!psc__valid_gpu(ctx, devices[r]))
                return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: GPU %d does not exist (accepted: 0..%d)",
                                 devices[r], ctx->ndev - 1);
            rep->gpu[r] = devices[r];
        }
    }
    if (rep->nranks < 2)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: one worker measures nothing between processes: accepted "
                         "2 or more GPUs listed (the same GPU twice for two workers on it)");
    return PSC_OK;
}

/* Each worker's pid: this process's child, or (joined) the one SO_PEERCRED names. */
static void psc__pids(psc_ipc_coord_t *co)
{
    for (int r = 0; r < co->n; r++) {
        pid_t pid = psc__ipc_run_pid(co->run, r);
        uid_t uid;

        if (pid == 0 && psc__ipc_chan_peercred(psc__ipc_run_chan(co->run, r), &pid, &uid, NULL) != PSC_OK)
            pid = 0;
        co->rep->pid[r] = (int)pid;
    }
}

/* The workers: started here, or (opts.publish) worker 0 in a thread and the rest joining from elsewhere. */
static psc_status_t psc__workers(psc_ipc_coord_t *co, psc_ipc_err_t *err)
{
    const char *argv[] = {co->o->worker_path ? co->o->worker_path : "/proc/self/exe", PSC_IPC_WORKER_ARG, NULL};

    if (co->o->publish) {
        co->rep->joined = 1;
        return psc__ipc_join_start(co->n, co->o->publish, co->o->publish_arg, &co->published, &co->run, &co->self,
                                   err);
    }
    return psc__ipc_run_start(co->n, argv, &co->run, err);
}

static psc_status_t psc__coordinate(psc_ipc_coord_t *co, uint64_t size)
{
    psc_ipc_err_t err = {PSC_OK, ""};
    psc_status_t st;

    if (psc__workers(co, &err) != PSC_OK || psc__ipc_run_connect(co->run, psc__dl(co), &err) != PSC_OK)
        return psc__ipc_failed(co, &err);
    psc__pids(co);
    if ((st = psc__configure(co, size)) != PSC_OK)
        return st;
    for (int m = PSC_SHARE_LEGACY; m <= PSC_SHARE_VMM_FABRIC && st == PSC_OK; m++)
        if (co->o->methods & (1u << m))
            st = psc__method(co, m, &co->rep->methods[m - 1]);
    if (st == PSC_OK && psc__ipc_run_finish(co->run, psc__dl(co), &err) != PSC_OK)
        st = psc__ipc_failed(co, &err);
    return st;
}

/* After the run (destroyed): worker 0's thread of a joined run ended; a clean run whose own worker failed fails. */
static psc_status_t psc__self_end(psc_ipc_coord_t *co, psc_status_t st)
{
    psc_ipc_err_t err = {PSC_OK, ""};

    if (psc__ipc_join_end(co->self, &err) != 0 && st == PSC_OK)
        st = psc__fail(co->ctx, err.st == PSC_OK ? PSC_ERR_IO : err.st, "p2pscope ipc: worker 0 (this process): %s",
                       err.msg);
    co->self = NULL;
    return st;
}

static psc_status_t psc__run(psc_context_t *ctx, const int *devices, int ndev, psc_ipc_opts_t o,
                             psc_ipc_report_t **out, int *published)
{
    psc_ipc_coord_t *co = NULL;
    psc_ipc_local_t *local = NULL;
    psc_ipc_report_t *rep = NULL;
    uint64_t size = 0;
    double t0 = psc__now_ns();
    psc_status_t st;

    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_ipc_run: no place for the report (accepted: a psc_ipc_report_t *)");
    o.methods = o.methods ? o.methods : (1u << PSC_SHARE_LEGACY) | (1u << PSC_SHARE_VMM_FD) | (1u << PSC_SHARE_VMM_FABRIC);
    o.bw = o.bw ? o.bw : (1u << PSC_IPC_NBW) - 1;
    if ((st = psc__check_opts(ctx, &o, &size)) != PSC_OK)
        return st;
    if (!(rep = calloc(1, sizeof(*rep))) || !(co = calloc(1, sizeof(*co)))) {
        free(rep);
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for the report");
    }
    *co = (psc_ipc_coord_t){.ctx = ctx, .o = &o, .rep = rep};
    for (int r = 0; r < PSC_IPC_MAX_RANKS; r++)
        co->msg[r].fd = -1;
    rep->size = size;
    for (int m = 0; m < PSC_IPC_METHODS; m++) {
        rep->methods[m].method = m + 1;
        rep->methods[m].asked = (o.methods >> (m + 1)) & 1;
    }
    if ((st = psc__ranks(ctx, devices, ndev, o.publish != NULL, rep)) != PSC_OK)
        goto out;
    co->n = rep->nranks;
    psc__guard_enter(ctx);
    st = psc__ipc_local_measure(ctx, rep->gpu, rep->nranks, &o, size, &local);
    st = psc__guard_leave(ctx, st);
    if (st != PSC_OK || (st = psc__plan(co, local)) != PSC_OK)
        goto out;
    st = psc__coordinate(co, size);
out:
    psc__close_msgs(co);
    psc__ipc_run_destroy(co->run, PSC__GRACE_MS);
    st = psc__self_end(co, st);
    *published = co->published;
    psc__ipc_local_free(local);
    free(co);
    if (st != PSC_OK) {
        psc_ipc_report_free(rep);
        return st;
    }
    psc__compact(rep);
    rep->run_ms = (psc__now_ns() - t0) / 1e3 / 1e3;
    *out = rep;
    return PSC_OK;
}

psc_status_t psc_ipc_run(psc_context_t *ctx, const int *devices, int ndev, const psc_ipc_opts_t *opts,
                         psc_ipc_report_t **out)
{
    psc_ipc_opts_t o;
    psc_status_t st;
    int published = 0;

    if (!ctx)
        return PSC_ERR_INVALID;
    if ((st = psc__ipc_opts_adopt(ctx, opts, &o)) != PSC_OK)
        return st;
    st = psc__run(ctx, devices, ndev, o, out, &published);
    if (o.publish && !published) /* ended before its workers could join: the caller's ranks are told so */
        o.publish(NULL, o.publish_arg);
    return st;
}
