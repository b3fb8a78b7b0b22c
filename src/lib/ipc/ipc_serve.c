/*
 * A worker of p2pscope ipc (psc_ipc_worker_main): one process on one GPU,
 * connected to the coordinator (ipc_run.c), doing what each request says
 * with its own context: share memory, import the other workers', copy into
 * and out of the imports, answer and start flag round trips, release. Every
 * request is checked before it is acted on; one it cannot accept ends the
 * worker with an ERROR naming why. It ends on BYE, on a closed connection,
 * or when no request comes within the run's timeout.
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/channel.h"
#include "ipc/ipc_measure.h"
#include "ipc/ipc_proto.h"
#include "ipc/ipc_serve.h"
#include "share/share.h"
#include "proc/worker.h"
#include "lat/flag.h"

#define PSC__FIRST_WAIT_MS 60000 /* for CONFIG, before the run's own timeout is known */

typedef struct {
    psc_context_t *ctx;
    psc_ipc_chan_t *ch;
    int rank, nranks, gpu;
    uint64_t size;
    double timeout_ms;
    psc_measure_opts_t measure;
    psc_share_t *own[PSC_IPC_METHODS + 1];
    psc_share_t *imp[PSC_IPC_METHODS + 1][PSC_IPC_MAX_RANKS];
    psc_share_msg_t pending;     /* the last SHARE(_FD) received, for the next IMPORT; fd -1 none */
    int have_pending;
    psc_flag_pong_t pong;
    int pong_running;
    int in_process;              /* worker 0 of a joined run: a thread of the caller's process */
} psc_ipc_worker_t;

/* Where the flag words start: after the copies' bytes, aligned for the flag kernels' 4-byte words and more. */
static uint64_t psc__tail(const psc_ipc_worker_t *w)
{
    return (w->size + 255) & ~(uint64_t)255;
}

static CUdeviceptr psc__dptr(const psc_share_t *s, uint64_t off)
{
    return (CUdeviceptr)(uintptr_t)psc_share_ptr(s) + off;
}

/* A failed op: its status and the context's reason into the answer. */
static void psc__ans_fail(psc_ipc_worker_t *w, psc_ipc_ans_t *a, psc_status_t st)
{
    a->status = st;
    snprintf(a->why, sizeof(a->why), "%s", w->ctx ? psc_context_last_error(w->ctx) : "no context");
}

static void psc__drop_pending(psc_ipc_worker_t *w)
{
    if (w->have_pending && w->pending.fd >= 0)
        close(w->pending.fd);
    w->have_pending = 0;
    w->pending.fd = -1;
}

static psc_status_t psc__op_config(psc_ipc_worker_t *w, const psc_ipc_op_t *op, psc_ipc_ans_t *a)
{
    char why[256];
    psc_status_t st;
    const char *corrupt = getenv("P2PSCOPE_TEST_CORRUPT_OFFSET");

    if (w->ctx)
        return psc__fail(w->ctx, PSC_ERR_INVALID, "a second CONFIG: accepted one per run");
    if ((st = psc_context_create(&w->ctx, why, sizeof(why))) != PSC_OK) {
        a->status = st;
        snprintf(a->why, sizeof(a->why), "%s", why);
        return st;
    }
    w->gpu = -1;
    for (int i = 0; i < psc_device_count(w->ctx); i++) {
        psc_device_info_t info;

        if (psc_device_info(w->ctx, i, &info) == PSC_OK && strcmp(info.uuid, op->uuid) == 0)
            w->gpu = i;
    }
    if (w->gpu < 0)
        return psc__fail(w->ctx, PSC_ERR_INVALID, "GPU %s is not one this worker sees (CUDA_VISIBLE_DEVICES?)",
                         op->uuid);
    if (corrupt && *corrupt) {
        psc_test_hooks_t h;
        char *end = NULL;

        psc__test_hooks_default(&h);
        h.corrupt_offset = strtoll(corrupt, &end, 10);
        if (*end || h.corrupt_offset < 0)
            return psc__fail(w->ctx, PSC_ERR_INVALID, "P2PSCOPE_TEST_CORRUPT_OFFSET \"%.40s\": accepted a byte offset",
                             corrupt);
        if ((st = psc__test_hooks_set(w->ctx, &h)) != PSC_OK)
            return st;
    }
    w->size = op->size;
    w->timeout_ms = op->timeout_ms;
    w->measure = op->measure;
    a->gpu = w->gpu;
    a->ngpu = psc_device_count(w->ctx);
    return PSC_OK;
}

static psc_status_t psc__op_share(psc_ipc_worker_t *w, const psc_ipc_op_t *op, psc_ipc_ans_t *a,
                                  psc_share_msg_t *msg)
{
    double t0;
    psc_status_t st;

    if (w->own[op->method])
        return psc__fail(w->ctx, PSC_ERR_INVALID, "%s memory is shared already", psc_ipc_method_name(op->method));
    if ((st = psc_share_alloc(w->ctx, op->method, w->gpu, psc__tail(w) + PSC_IPC_TAIL, &w->own[op->method])) != PSC_OK)
        return st;
    t0 = psc__now_ns();
    st = psc_share_export(w->ctx, w->own[op->method], msg);
    a->export_us = (psc__now_ns() - t0) / 1e3;
    return st;
}

/* A 4 KiB copy out of the import into scratch, to completion: its wall time in us. */
static psc_status_t psc__touch(psc_ipc_worker_t *w, const psc_share_t *s, CUdeviceptr scratch, double *us)
{
    double t0 = psc__now_ns();
    psc_status_t st;
    psc_context_t *ctx = w->ctx;

    if ((st = psc__gpu_use(ctx, w->gpu)) == PSC_OK &&
        (st = PSC_CU(ctx, cuMemcpyAsync, (scratch, psc__dptr(s, 0), PSC_IPC_TOUCH_BYTES, ctx->gpu[w->gpu].stream))) == PSC_OK)
        st = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[w->gpu].stream));
    *us = (psc__now_ns() - t0) / 1e3;
    return st;
}

static psc_status_t psc__op_import(psc_ipc_worker_t *w, const psc_ipc_op_t *op, psc_ipc_ans_t *a)
{
    psc_share_t **slot = &w->imp[op->method][op->peer];
    CUdeviceptr scratch = 0;
    psc_status_t st;

    if (!w->have_pending)
        return psc__fail(w->ctx, PSC_ERR_INVALID, "IMPORT without the peer's SHARE message before it");
    if (*slot)
        return psc__fail(w->ctx, PSC_ERR_INVALID, "rank %d's %s memory is imported already", op->peer,
                         psc_ipc_method_name(op->method));
    st = psc_share_import(w->ctx, &w->pending, &w->gpu, 1, slot);
    psc__drop_pending(w);
    if (st != PSC_OK)
        return st;
    if (psc_share_kind(*slot) != (psc_share_kind_t)op->method || psc_share_size(*slot) != psc__tail(w) + PSC_IPC_TAIL)
        return psc__fail(w->ctx, PSC_ERR_INVALID, "rank %d shared %zu bytes of another kind: accepted %llu bytes of %s",
                         op->peer, psc_share_size(*slot), (unsigned long long)(psc__tail(w) + PSC_IPC_TAIL),
                         psc_ipc_method_name(op->method));
    psc__share_times(*slot, &a->import_us, &a->map_us);
    if ((st = psc__dev_scratch(w->ctx, w->gpu, PSC_IPC_TOUCH_BYTES, &scratch)) == PSC_OK &&
        (st = psc__touch(w, *slot, scratch, &a->first_touch_us)) == PSC_OK)
        st = psc__touch(w, *slot, scratch, &a->touch_us);
    psc__dev_scratch_free(w->ctx, w->gpu, scratch);
    a->gpu = psc_share_gpu(*slot);
    a->naccess = psc_device_count(w->ctx);
    /* Legacy memory is asked in the importer's context only: another GPU's would be made for the question. */
    for (int g = 0; st == PSC_OK && g < a->naccess; g++)
        if (op->method == PSC_SHARE_LEGACY && g != w->gpu)
            a->access[g] = PSC_IPC_ACCESS_NOT_ASKED;
        else
            st = psc_share_access(w->ctx, *slot, g, &a->access[g]);
    return st;
}

static psc_status_t psc__imported(psc_ipc_worker_t *w, const psc_ipc_op_t *op, psc_share_t **out)
{
    if (!w->imp[op->method][op->peer] || !w->own[op->method])
        return psc__fail(w->ctx, PSC_ERR_INVALID, "rank %d's %s memory is not imported here (or none of its own)",
                         op->peer, psc_ipc_method_name(op->method));
    *out = w->imp[op->method][op->peer];
    return PSC_OK;
}

static psc_status_t psc__op_bw(psc_ipc_worker_t *w, const psc_ipc_op_t *op, psc_ipc_ans_t *a)
{
    psc_buffer_t *mine = NULL, other;
    psc_share_t *imp;
    psc_measure_opts_t o = w->measure;
    psc_status_t st;

    if ((st = psc__imported(w, op, &imp)) != PSC_OK)
        return st;
    o.size = w->size;
    other = (psc_buffer_t){.kind = PSC_MEM_DEVICE, .gpu = w->gpu, .node = -1, .size = w->size,
                           .dptr = psc__dptr(imp, 0), .in_use = 1};
    if ((st = psc__buffer_get(w->ctx, PSC_MEM_DEVICE, w->gpu, -1, w->size, &mine)) != PSC_OK)
        return st;
    st = psc__ipc_bw(w->ctx, op->bw, w->gpu, psc_share_gpu(imp), mine, &other, &o, &a->bw);
    psc__buffer_put(mine);
    return st;
}

/* Zero one word of own shared memory (a flag), to completion. */
static psc_status_t psc__zero_word(psc_ipc_worker_t *w, CUdeviceptr p)
{
    static const uint32_t zero[4];
    psc_status_t st;

    if ((st = psc__gpu_use(w->ctx, w->gpu)) != PSC_OK)
        return st;
    return PSC_CU(w->ctx, cuMemcpyHtoD, (p, zero, sizeof(zero)));
}

static uint64_t psc__timeout_ns(const psc_ipc_worker_t *w)
{
    return (uint64_t)(w->timeout_ms * 1e6);
}

static psc_status_t psc__op_pong(psc_ipc_worker_t *w, const psc_ipc_op_t *op)
{
    psc_share_t *imp;
    psc_status_t st;

    if (w->pong_running)
        return psc__fail(w->ctx, PSC_ERR_INVALID, "PONG while one runs: accepted after PONG_END");
    if ((st = psc__imported(w, op, &imp)) != PSC_OK ||
        (st = psc__zero_word(w, psc__dptr(w->own[op->method], psc__tail(w) + PSC_IPC_FLAG_OFF))) != PSC_OK ||
        (st = psc__flag_pong_start(w->ctx, w->gpu, psc__dptr(w->own[op->method], psc__tail(w) + PSC_IPC_FLAG_OFF),
                                   psc__dptr(imp, psc__tail(w) + PSC_IPC_ANS_OFF), op->round_trips, psc__timeout_ns(w),
                                   &w->pong)) != PSC_OK)
        return st;
    w->pong_running = 1;
    return PSC_OK;
}

static psc_status_t psc__op_pong_end(psc_ipc_worker_t *w, psc_ipc_ans_t *a)
{
    int gave_up = 0;
    psc_status_t st;

    if (!w->pong_running)
        return psc__fail(w->ctx, PSC_ERR_INVALID, "PONG_END without a PONG");
    w->pong_running = 0;
    if ((st = psc__flag_pong_end(w->ctx, &w->pong, &gave_up)) == PSC_OK)
        a->gave_up = gave_up;
    return st;
}

static psc_status_t psc__op_ping(psc_ipc_worker_t *w, const psc_ipc_op_t *op, psc_ipc_ans_t *a)
{
    psc_share_t *imp;
    double *ns = NULL, npc = 0;
    int gave_up = 0;
    psc_status_t st;

    if ((st = psc__imported(w, op, &imp)) != PSC_OK)
        return st;
    if (!(ns = calloc(op->round_trips, sizeof(*ns))))
        return psc__fail(w->ctx, PSC_ERR_NO_MEMORY, "out of host memory for %u round trips", op->round_trips);
    if ((st = psc__zero_word(w, psc__dptr(w->own[op->method], psc__tail(w) + PSC_IPC_ANS_OFF))) == PSC_OK &&
        (st = psc__flag_ping(w->ctx, w->gpu, psc__dptr(imp, psc__tail(w) + PSC_IPC_FLAG_OFF),
                             psc__dptr(w->own[op->method], psc__tail(w) + PSC_IPC_ANS_OFF), op->round_trips,
                             psc__timeout_ns(w), ns, &npc, &gave_up)) == PSC_OK) {
        a->gave_up = gave_up;
        if (!gave_up)
            st = psc__ipc_rtt_pctl(w->ctx, ns, op->round_trips, &a->rtt_ns);
    }
    free(ns);
    return st;
}

static psc_status_t psc__op_unimport(psc_ipc_worker_t *w, const psc_ipc_op_t *op, psc_ipc_ans_t *a)
{
    psc_status_t st = PSC_OK, r;

    for (int p = 0; p < PSC_IPC_MAX_RANKS; p++) {
        double t0 = psc__now_ns();

        a->release_us[p] = -1;
        if (!w->imp[op->method][p])
            continue;
        r = psc_share_free(w->imp[op->method][p]);
        w->imp[op->method][p] = NULL;
        a->release_us[p] = (psc__now_ns() - t0) / 1e3;
        st = st == PSC_OK ? r : st;
    }
    return st;
}

static psc_status_t psc__op_unshare(psc_ipc_worker_t *w, const psc_ipc_op_t *op)
{
    psc_status_t st = psc_share_free(w->own[op->method]);

    w->own[op->method] = NULL;
    return st;
}

/*
 * Test hook (p2pscope's own tests only): P2PSCOPE_TEST_IPC_DIE="RANK:OP" makes worker RANK kill itself
 * with SIGKILL when request OP comes, as a crash mid-run would end it; "RANK:OP:after" once it has
 * answered it. Never in a worker that runs inside the caller's process (worker 0 of a joined run).
 */
static void psc__test_die(const psc_ipc_worker_t *w, unsigned op, int answered)
{
    const char *die = getenv("P2PSCOPE_TEST_IPC_DIE");
    int rank = -1;
    unsigned at = 0;
    char when[8] = "";

    if (w->in_process || !die || sscanf(die, "%d:%u:%7s", &rank, &at, when) < 2)
        return;
    if (rank == w->rank && at == op && answered == (strcmp(when, "after") == 0))
        raise(SIGKILL);
}

/* One request: checked, done, answered (and for SHARE, the message after the answer). */
static psc_status_t psc__serve_request(psc_ipc_worker_t *w, const psc_ipc_msg_t *m, psc_ipc_err_t *err)
{
    psc_ipc_op_t op;
    psc_ipc_ans_t *a;
    psc_share_msg_t share = {.fd = -1};
    psc_status_t st;
    int64_t dl;

    if (m->len != sizeof(op))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a request of %u bytes: accepted %zu", m->len, sizeof(op));
    memcpy(&op, m->payload, sizeof(op));
    if ((st = psc__ipc_op_check(&op, w->rank, w->nranks, err)) != PSC_OK)
        return st;
    psc__test_die(w, op.op, 0);
    if (!w->ctx && op.op != PSC_IPC_OP_CONFIG)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "request %u before CONFIG", op.op);
    if (!(a = calloc(1, sizeof(*a))))
        return psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "out of host memory for an answer");
    a->magic = PSC_IPC_OP_MAGIC;
    a->op = op.op;
    switch (op.op) {
    case PSC_IPC_OP_CONFIG: st = psc__op_config(w, &op, a); break;
    case PSC_IPC_OP_SHARE: st = psc__op_share(w, &op, a, &share); break;
    case PSC_IPC_OP_IMPORT: st = psc__op_import(w, &op, a); break;
    case PSC_IPC_OP_BW: st = psc__op_bw(w, &op, a); break;
    case PSC_IPC_OP_PONG: st = psc__op_pong(w, &op); break;
    case PSC_IPC_OP_PONG_END: st = psc__op_pong_end(w, a); break;
    case PSC_IPC_OP_PING: st = psc__op_ping(w, &op, a); break;
    case PSC_IPC_OP_UNIMPORT: st = psc__op_unimport(w, &op, a); break;
    default: st = psc__op_unshare(w, &op); break;
    }
    if (st != PSC_OK && a->status == PSC_OK)
        psc__ans_fail(w, a, st);
    dl = psc__ipc_deadline((int64_t)w->timeout_ms); /* the run's own timeout once CONFIG set it */
    st = psc__ipc_send(w->ch, PSC_IPC_REPLY, 0, a, sizeof(*a), NULL, 0, dl, err);
    if (st == PSC_OK && op.op == PSC_IPC_OP_SHARE && a->status == PSC_OK)
        st = psc__ipc_send_share(w->ch, &share, dl, err);
    if (share.fd >= 0)
        close(share.fd);
    free(a);
    if (st == PSC_OK)
        psc__test_die(w, op.op, 1);
    return st;
}

static void psc__worker_end(psc_ipc_worker_t *w)
{
    int gave_up;

    psc__drop_pending(w);
    if (w->pong_running)
        psc__flag_pong_end(w->ctx, &w->pong, &gave_up);
    psc_context_destroy(w->ctx); /* frees every share still held (a run that ended early) */
    psc__ipc_chan_close(w->ch);
}

int psc__ipc_serve(const psc_ipc_worker_conf_t *conf, psc_ipc_err_t *err)
{
    psc_ipc_worker_t w;
    psc_status_t st;
    int rc = 1;

    memset(&w, 0, sizeof(w));
    w.pending.fd = -1;
    w.timeout_ms = PSC__FIRST_WAIT_MS;
    if (psc__ipc_worker_connect(conf, psc__ipc_deadline(PSC__FIRST_WAIT_MS), &w.ch, err) != PSC_OK)
        return 1;
    w.rank = conf->rank;
    w.nranks = conf->nranks;
    w.in_process = conf->in_process;
    for (;;) {
        psc_ipc_msg_t m;

        if ((st = psc__ipc_recv(w.ch, &m, psc__ipc_deadline((int64_t)w.timeout_ms), err)) != PSC_OK)
            break;
        if (m.type == PSC_IPC_BYE) {
            rc = 0;
            break;
        }
        if (m.type == PSC_IPC_SHARE || m.type == PSC_IPC_SHARE_FD) {
            psc__drop_pending(&w);
            memcpy(w.pending.bytes, m.payload, PSC_SHARE_MSG_LEN);
            w.pending.fd = m.type == PSC_IPC_SHARE_FD ? m.fds[0] : -1;
            w.have_pending = 1;
            continue;
        }
        if (m.type != PSC_IPC_REQUEST) {
            psc__ipc_msg_close_fds(&m);
            psc__ipc_fail(err, PSC_ERR_INVALID, "a %s message: accepted REQUEST, SHARE, SHARE_FD, BYE",
                          psc__ipc_type_name(m.type));
            psc__ipc_send_error(w.ch, err->msg, psc__ipc_deadline(1000), NULL);
            break;
        }
        if ((st = psc__serve_request(&w, &m, err)) != PSC_OK) {
            psc__ipc_send_error(w.ch, err->msg, psc__ipc_deadline(1000), NULL);
            break;
        }
    }
    if (rc != 0 && !err->msg[0])
        psc__ipc_fail(err, PSC_ERR_IO, "ended");
    psc__worker_end(&w);
    return rc;
}

int psc_ipc_worker_main(void)
{
    psc_ipc_worker_conf_t conf;
    psc_ipc_err_t err = {PSC_OK, ""};
    int rc;

    if (psc__ipc_worker_conf_env(&conf, &err) != PSC_OK) {
        fprintf(stderr, "p2pscope ipc worker: %s\n", err.msg);
        return 1;
    }
    if ((rc = psc__ipc_serve(&conf, &err)) != 0)
        fprintf(stderr, "p2pscope ipc worker %d: %s\n", conf.rank, err.msg);
    return rc;
}
