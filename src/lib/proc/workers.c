/*
 * A run of worker processes (workers.h): starting them, waiting for their connections and messages, and
 * noticing, naming and reaping a worker that ends early.
 */
#define _GNU_SOURCE
#include "proc/workers.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/spawn.h"

typedef struct {
    pid_t pid;
    int pidfd;            /* -1: polled with waitpid(WNOHANG) */
    psc_ipc_chan_t *chan; /* NULL until it passed the handshake, and after it closed */
    int reaped, status, unknown; /* its end: wait status, or unknown (reaped by someone else) */
    int bye;              /* BYE sent: an exit with status 0 is its normal end */
    char ended[120];      /* how it ended, once reaped */
} psc__worker_t;

struct psc_ipc_run {
    int n;
    psc__worker_t *w;
    pid_t *pids; /* [n] for the handshake's check */
    psc_ipc_listener_t *lst;
    psc_ipc_token_t token;
    int spawned; /* 1: the workers are this process's children; 0: they started elsewhere (mpirun) */
    int next;    /* where a receive from any worker starts looking: each gets its turn */
};

/* ---- ends of workers ---- */

static void psc__describe_end(const psc_ipc_run_t *run, int i)
{
    psc__worker_t *w = &run->w[i];
    int n = snprintf(w->ended, sizeof(w->ended), "worker %d (pid %ld) ", i, (long)w->pid);

    if (n < 0 || (size_t)n >= sizeof(w->ended))
        return;
    if (w->unknown)
        snprintf(w->ended + n, sizeof(w->ended) - (size_t)n, "ended, reaped elsewhere: how is not known");
    else if (WIFEXITED(w->status))
        snprintf(w->ended + n, sizeof(w->ended) - (size_t)n, "exited with status %d", WEXITSTATUS(w->status));
    else if (WIFSIGNALED(w->status))
        snprintf(w->ended + n, sizeof(w->ended) - (size_t)n, "killed by signal %d%s", WTERMSIG(w->status),
                 WCOREDUMP(w->status) ? " (core dumped)" : "");
    else
        snprintf(w->ended + n, sizeof(w->ended) - (size_t)n, "ended with wait status 0x%x", (unsigned)w->status);
}

/* Reap worker i if it has ended (block: wait for it). 1 when it is reaped. */
static int psc__reap(psc_ipc_run_t *run, int i, int block)
{
    psc__worker_t *w = &run->w[i];
    pid_t r;
    int status = 0;

    if (w->reaped || w->pid <= 0)
        return w->reaped;
    do
        r = waitpid(w->pid, &status, block ? 0 : WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return 0;
    w->reaped = 1;
    w->status = status;
    w->unknown = r < 0;
    if (w->pidfd >= 0) {
        close(w->pidfd);
        w->pidfd = -1;
    }
    psc__describe_end(run, i);
    return 1;
}

/* An end that is an error: any but exit status 0 after BYE. */
static int psc__abnormal(const psc__worker_t *w)
{
    return w->reaped && !(w->bye && !w->unknown && WIFEXITED(w->status) && WEXITSTATUS(w->status) == 0);
}

/* Look for ends; the first abnormal one (in rank order) fails with its description. */
static psc_status_t psc__check_ends(psc_ipc_run_t *run, psc_ipc_err_t *err)
{
    for (int i = 0; i < run->n; i++)
        psc__reap(run, i, 0);
    for (int i = 0; i < run->n; i++)
        if (psc__abnormal(&run->w[i]))
            return psc__ipc_fail(err, PSC_ERR_IO, "%s", run->w[i].ended);
    return PSC_OK;
}

/* A worker already known to have ended abnormally: the run has failed, every later wait says so at once. */
static psc_status_t psc__ended_before(const psc_ipc_run_t *run, psc_ipc_err_t *err)
{
    for (int i = 0; i < run->n; i++)
        if (psc__abnormal(&run->w[i]))
            return psc__ipc_fail(err, PSC_ERR_IO, "%s", run->w[i].ended);
    return PSC_OK;
}

/* Wait up to ms (and the deadline) for worker i to end; 1 when it did (never for one started elsewhere). */
static int psc__wait_end(psc_ipc_run_t *run, int i, int ms, int64_t deadline)
{
    int64_t until = psc__ipc_deadline(ms);

    if (run->w[i].pid <= 0)
        return 0;
    if (deadline < until)
        until = deadline;
    while (!psc__reap(run, i, 0)) {
        int64_t left = until - psc__ipc_now();
        struct pollfd p = {.fd = run->w[i].pidfd, .events = POLLIN};
        int wait_ms;

        if (left <= 0)
            return 0;
        wait_ms = (int)((left + 999999) / 1000000);
        if (p.fd < 0 && wait_ms > PSC_IPC_POLL_MS)
            wait_ms = PSC_IPC_POLL_MS;
        poll(p.fd >= 0 ? &p : NULL, p.fd >= 0 ? 1 : 0, wait_ms);
    }
    return 1;
}

/* ---- the event loop shared by connect and receive ---- */

typedef struct {
    struct pollfd *p;
    int n;
    int any_pidfd_missing;
} psc__pollset_t;

static void psc__add(psc__pollset_t *s, int fd)
{
    s->p[s->n].fd = fd;
    s->p[s->n].events = POLLIN;
    s->p[s->n].revents = 0;
    s->n++;
}

static void psc__add_ends(psc_ipc_run_t *run, psc__pollset_t *s)
{
    for (int i = 0; i < run->n; i++) {
        if (run->w[i].reaped || run->w[i].pid <= 0)
            continue;
        if (run->w[i].pidfd >= 0)
            psc__add(s, run->w[i].pidfd);
        else
            s->any_pidfd_missing = 1;
    }
}

/* Poll the set until something is ready or the deadline: <0 a poll error (errno), else what poll returned. */
static int psc__poll(psc__pollset_t *s, int64_t deadline)
{
    int64_t left = deadline - psc__ipc_now();
    int ms = left <= 0 ? 0 : (int)((left + 999999) / 1000000 > 1000000000 ? 1000000000 : (left + 999999) / 1000000);
    int rc;

    if (s->any_pidfd_missing && ms > PSC_IPC_POLL_MS)
        ms = PSC_IPC_POLL_MS;
    rc = poll(s->p, (nfds_t)s->n, ms);
    if (rc < 0 && errno == EINTR)
        return 0;
    return rc;
}

/* A channel failed on worker i: name how the worker ended when it ends soon, else the channel's reason. */
static psc_status_t psc__chan_failed(psc_ipc_run_t *run, int i, int64_t deadline, psc_status_t st,
                                     const psc_ipc_err_t *why, psc_ipc_err_t *err)
{
    if (st == PSC_ERR_IO && psc__wait_end(run, i, 1000, deadline) && psc__abnormal(&run->w[i]))
        return psc__ipc_fail(err, PSC_ERR_IO, "%s", run->w[i].ended);
    if (st == PSC_ERR_IO && run->w[i].reaped && !psc__abnormal(&run->w[i]))
        return psc__ipc_fail(err, PSC_ERR_IO, "%s (after BYE), so nothing more comes from it", run->w[i].ended);
    return psc__ipc_fail(err, st, "%s", why->msg);
}

/* ---- start ---- */

/* Start worker rank, told where to connect and as whom in its environment and, where argv asks, its arguments. */
static psc_status_t psc__spawn(psc_ipc_run_t *run, int rank, const char *const *argv, psc_ipc_err_t *err)
{
    char hex[PSC_IPC_TOKEN_HEX], r[16], n[16], who[32];
    const char *path = psc__ipc_listener_path(run->lst);
    const psc_ipc_kv_t subst[] = {{"@SOCKET@", path}, {"@TOKEN@", hex}, {"@RANK@", r}, {"@NRANKS@", n}};
    const psc_ipc_kv_t env[] = {{PSC_IPC_ENV_SOCKET, path}, {PSC_IPC_ENV_TOKEN, hex}, {PSC_IPC_ENV_RANK, r},
                                  {PSC_IPC_ENV_NRANKS, n}};
    psc_status_t st;

    psc__ipc_token_format(&run->token, hex);
    snprintf(r, sizeof(r), "%d", rank);
    snprintf(n, sizeof(n), "%d", run->n);
    snprintf(who, sizeof(who), "worker %d", rank);
    st = psc__ipc_spawn(argv, subst, 4, env, 4, who, &run->w[rank].pid, &run->w[rank].pidfd, err);
    if (st == PSC_OK)
        run->pids[rank] = run->w[rank].pid;
    return st;
}

psc_status_t psc__ipc_run_start(int nworkers, const char *const *argv, psc_ipc_run_t **out, psc_ipc_err_t *err)
{
    psc_ipc_run_t *run;
    psc_status_t st;

    if (nworkers < 1 || nworkers > PSC_IPC_MAX_WORKERS || !argv || !argv[0] || !strchr(argv[0], '/') || !out)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a run of %d workers of %s: accepted 1 to %d workers and a "
                             "program given by a path with a '/'", nworkers, argv && argv[0] ? argv[0] : "(none)",
                             PSC_IPC_MAX_WORKERS);
    if (access(argv[0], X_OK) != 0)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "worker program %s: %s: accepted an executable file", argv[0],
                             strerror(errno));
    run = calloc(1, sizeof(*run));
    if (!run || !(run->w = calloc((size_t)nworkers, sizeof(*run->w))) ||
        !(run->pids = calloc((size_t)nworkers, sizeof(*run->pids)))) {
        if (run)
            free(run->w);
        free(run);
        return psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "no memory for a run of %d workers", nworkers);
    }
    run->n = nworkers;
    run->spawned = 1;
    for (int i = 0; i < nworkers; i++) {
        run->w[i].pidfd = -1;
        run->pids[i] = -1;
    }
    st = psc__ipc_token_make(&run->token, err);
    if (st == PSC_OK)
        st = psc__ipc_listen(&run->token, nworkers, geteuid(), &run->lst, err);
    if (st != PSC_OK)
        goto fail;
    for (int i = 0; i < nworkers && st == PSC_OK; i++)
        st = psc__spawn(run, i, argv, err);
    if (st != PSC_OK)
        goto fail;
    *out = run;
    return PSC_OK;
fail:
    psc__ipc_run_destroy(run, 0);
    return st;
}

psc_status_t psc__ipc_run_listen(int nworkers, psc_ipc_run_t **out, psc_ipc_err_t *err)
{
    psc_ipc_run_t *run;
    psc_status_t st;

    if (nworkers < 1 || nworkers > PSC_IPC_MAX_WORKERS || !out)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a run of %d workers: accepted 1 to %d", nworkers,
                             PSC_IPC_MAX_WORKERS);
    run = calloc(1, sizeof(*run));
    if (!run || !(run->w = calloc((size_t)nworkers, sizeof(*run->w)))) {
        free(run);
        return psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "no memory for a run of %d workers", nworkers);
    }
    run->n = nworkers;
    for (int i = 0; i < nworkers; i++)
        run->w[i].pidfd = -1;
    st = psc__ipc_token_make(&run->token, err);
    if (st == PSC_OK)
        st = psc__ipc_listen(&run->token, nworkers, geteuid(), &run->lst, err);
    if (st != PSC_OK) {
        psc__ipc_run_destroy(run, 0);
        return st;
    }
    *out = run;
    return PSC_OK;
}

/* ---- connect ---- */

#define PSC__PENDING_MAX 16

typedef struct {
    psc_ipc_chan_t *c;
    int64_t hello_by;
} psc__pending_t;

static void psc__missing(const psc_ipc_run_t *run, char *out, size_t cap)
{
    size_t o = 0;
    int shown = 0;

    out[0] = '\0';
    for (int i = 0; i < run->n && o + 24 < cap; i++)
        if (!run->w[i].chan) {
            int k = snprintf(out + o, cap - o, "%s%d", shown++ ? ", " : "", i);

            o += k > 0 ? (size_t)k : 0;
        }
}

/* Connections accepted that have not said their HELLO yet. */
typedef struct {
    psc__pending_t p[PSC__PENDING_MAX];
    int n;
} psc__pendings_t;

/* Connections that said their HELLO take their worker's place (or are closed); those whose time for it is up too. */
static void psc__pending_settle(psc_ipc_run_t *run, psc__pendings_t *pend, int64_t deadline)
{
    for (int k = 0; k < pend->n;) {
        psc__pending_t *q = &pend->p[k];
        struct pollfd p = {.fd = psc__ipc_chan_fd(q->c), .events = POLLIN};
        int r;

        if (poll(&p, 1, 0) == 0 && psc__ipc_now() < q->hello_by && psc__ipc_now() < deadline) {
            k++;
            continue;
        }
        if (psc__ipc_hello_take(run->lst, q->c, run->spawned ? run->pids : NULL,
                                q->hello_by < deadline ? q->hello_by : deadline, &r, NULL) == PSC_OK)
            run->w[r].chan = q->c;
        else
            psc__ipc_chan_close(q->c);
        *q = pend->p[--pend->n];
    }
}

/* The workers not in by the deadline: how many came, which did not, and what the listener refused. */
static psc_status_t psc__connect_timeout(const psc_ipc_run_t *run, int64_t start, psc_ipc_err_t *err)
{
    char missing[200], note[300];

    psc__missing(run, missing, sizeof(missing));
    psc__ipc_listener_refusal_note(run->lst, note, sizeof(note));
    return psc__ipc_fail(err, PSC_ERR_TIMEOUT, "%d of %d workers connected within %lld ms (missing: %s)%s",
                         psc__ipc_listener_connected(run->lst), run->n,
                         (long long)((psc__ipc_now() - start) / 1000000), missing, note);
}

/* Wait on the listener (while a pending place is free: first in s), the pending connections and the workers' ends,
 * until the deadline or the first pending HELLO's time; what psc__poll returns. */
static int psc__connect_poll(psc_ipc_run_t *run, psc__pollset_t *s, const psc__pendings_t *pend, int64_t deadline)
{
    int64_t wake = deadline;

    if (pend->n < PSC__PENDING_MAX)
        psc__add(s, psc__ipc_listener_fd(run->lst));
    for (int k = 0; k < pend->n; k++)
        psc__add(s, psc__ipc_chan_fd(pend->p[k].c));
    psc__add_ends(run, s);
    for (int k = 0; k < pend->n; k++)
        if (pend->p[k].hello_by < wake)
            wake = pend->p[k].hello_by;
    return psc__poll(s, wake);
}

/* A new connection from the listener joins the pending ones, given the listener's time to say HELLO. */
static psc_status_t psc__pending_accept(psc_ipc_run_t *run, psc__pendings_t *pend, psc_ipc_err_t *err)
{
    psc_ipc_chan_t *c = NULL;
    int got = psc__ipc_accept_raw(run->lst, &c, err);

    if (got < 0)
        return (psc_status_t)got;
    if (got > 0) {
        pend->p[pend->n].c = c;
        pend->p[pend->n++].hello_by = psc__ipc_deadline(psc__ipc_listener_hello_ms(run->lst));
    }
    return PSC_OK;
}

psc_status_t psc__ipc_run_connect(psc_ipc_run_t *run, int64_t deadline, psc_ipc_err_t *err)
{
    psc__pendings_t pend;
    struct pollfd *pfd = calloc((size_t)run->n + PSC__PENDING_MAX + 1, sizeof(*pfd));
    int64_t start = psc__ipc_now();
    psc_status_t st = PSC_OK;

    if (!pfd)
        return psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "no memory to wait for %d workers", run->n);
    pend.n = 0;
    while (psc__ipc_listener_connected(run->lst) < run->n) {
        psc__pollset_t s = {pfd, 0, 0};

        st = psc__check_ends(run, err);
        if (st != PSC_OK)
            break;
        psc__pending_settle(run, &pend, deadline);
        if (psc__ipc_listener_connected(run->lst) == run->n)
            break;
        if (psc__ipc_now() >= deadline) {
            st = psc__connect_timeout(run, start, err);
            break;
        }
        if (psc__connect_poll(run, &s, &pend, deadline) < 0) {
            st = psc__ipc_fail(err, PSC_ERR_IO, "poll while waiting for workers: %s", strerror(errno));
            break;
        }
        if (pend.n < PSC__PENDING_MAX && s.p[0].revents && (st = psc__pending_accept(run, &pend, err)) != PSC_OK)
            break;
    }
    for (int k = 0; k < pend.n; k++)
        psc__ipc_chan_close(pend.p[k].c);
    free(pfd);
    /* Every worker is in: the socket's place is of no more use, and a kill of this process leaves nothing there. */
    if (st == PSC_OK)
        psc__ipc_listener_retire(run->lst);
    return st;
}

/* ---- use ---- */

int psc__ipc_run_size(const psc_ipc_run_t *run)
{
    return run->n;
}

pid_t psc__ipc_run_pid(const psc_ipc_run_t *run, int rank)
{
    return rank >= 0 && rank < run->n ? run->w[rank].pid : -1;
}

psc_ipc_chan_t *psc__ipc_run_chan(psc_ipc_run_t *run, int rank)
{
    return rank >= 0 && rank < run->n ? run->w[rank].chan : NULL;
}

psc_ipc_listener_t *psc__ipc_run_listener(psc_ipc_run_t *run)
{
    return run->lst;
}

const psc_ipc_token_t *psc__ipc_run_token(const psc_ipc_run_t *run)
{
    return &run->token;
}

const char *psc__ipc_run_ended(const psc_ipc_run_t *run, int rank)
{
    return rank >= 0 && rank < run->n && run->w[rank].reaped ? run->w[rank].ended : "";
}

static psc_status_t psc__rank_ok(const psc_ipc_run_t *run, int rank, int any_ok, psc_ipc_err_t *err)
{
    if ((rank < 0 && !(any_ok && rank == -1)) || rank >= run->n)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "worker %d: accepted 0 to %d%s", rank, run->n - 1,
                             any_ok ? ", or -1 for any" : "");
    if (rank >= 0 && !run->w[rank].chan)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "worker %d is not connected%s%s", rank,
                             run->w[rank].reaped ? ": " : "", run->w[rank].reaped ? run->w[rank].ended : "");
    return PSC_OK;
}

psc_status_t psc__ipc_run_send(psc_ipc_run_t *run, int rank, unsigned type, uint32_t flags, const void *payload,
                               uint32_t len, const int *fds, int nfds, int64_t deadline, psc_ipc_err_t *err)
{
    psc_ipc_err_t why = {0};
    psc_status_t st = psc__rank_ok(run, rank, 0, err);

    /* A run with a worker gone has failed: nothing more is sent in it. */
    if (st == PSC_OK)
        st = psc__check_ends(run, err);
    if (st != PSC_OK)
        return st;
    st = psc__ipc_send(run->w[rank].chan, type, flags, payload, len, fds, nfds, deadline, &why);
    if (st != PSC_OK)
        return psc__chan_failed(run, rank, deadline, st, &why, err);
    if (type == PSC_IPC_BYE)
        run->w[rank].bye = 1;
    return PSC_OK;
}

/* Receive on worker i's ready channel; an ERROR from it is a failure. */
static psc_status_t psc__take(psc_ipc_run_t *run, int i, psc_ipc_msg_t *msg, int64_t deadline, psc_ipc_err_t *err)
{
    psc_ipc_err_t why = {0};
    psc_ipc_msg_t m;
    psc_status_t st = psc__ipc_recv(run->w[i].chan, &m, deadline, &why);

    if (st != PSC_OK)
        return psc__chan_failed(run, i, deadline, st, &why, err);
    if (m.type == PSC_IPC_ERROR) {
        char text[200];

        psc__ipc_msg_error_text(&m, text, sizeof(text));
        return psc__ipc_fail(err, PSC_ERR_IO, "%s reported: %s", psc__ipc_chan_peer(run->w[i].chan), text);
    }
    *msg = m;
    return PSC_OK;
}

/* What one wait of psc__ipc_run_recv polls: s's first nchan entries are channels to take a message from, the next
 * nwatch other workers' channels watched for their closing; who[k] is entry k's worker. */
typedef struct {
    psc__pollset_t s;
    int *who;
    int nchan, nwatch;
} psc__recv_set_t;

/* The channels to receive from: rank's, or (rank -1) every connected one, from the worker after the last served. */
static void psc__recv_channels(const psc_ipc_run_t *run, int rank, psc__recv_set_t *rs)
{
    for (int k = 0; k < run->n; k++) {
        int i = rank >= 0 ? rank : (run->next + k) % run->n;

        if (run->w[i].chan && !psc__ipc_chan_broken(run->w[i].chan)) {
            rs->who[rs->nchan++] = i;
            psc__add(&rs->s, psc__ipc_chan_fd(run->w[i].chan));
        }
        if (rank >= 0)
            break;
    }
}

/*
 * Workers started elsewhere have no pidfd: while one is waited for, the others' ends are seen as their
 * connections closing (a spawned worker's end wakes the poll through its pidfd, added after these).
 */
static void psc__recv_watch(const psc_ipc_run_t *run, int rank, psc__recv_set_t *rs)
{
    for (int i = 0; rank >= 0 && i < run->n; i++)
        if (i != rank && run->w[i].pid <= 0 && run->w[i].chan && !run->w[i].bye &&
            !psc__ipc_chan_broken(run->w[i].chan)) {
            rs->who[rs->nchan + rs->nwatch++] = i;
            psc__add(&rs->s, psc__ipc_chan_fd(run->w[i].chan));
            rs->s.p[rs->s.n - 1].events = POLLRDHUP;
        }
}

/* A watched worker that closed its connection while rank was answering fails the wait; PSC_OK when none did. */
static psc_status_t psc__recv_hangup(const psc_ipc_run_t *run, int rank, const psc__recv_set_t *rs, psc_ipc_err_t *err)
{
    for (int k = rs->nchan; k < rs->nchan + rs->nwatch; k++)
        if (rs->s.p[k].revents & (POLLRDHUP | POLLHUP | POLLERR))
            return psc__ipc_fail(err, PSC_ERR_IO, "%s: closed its connection while %s was answering",
                                 psc__ipc_chan_peer(run->w[rs->who[k]].chan), psc__ipc_chan_peer(run->w[rank].chan));
    return PSC_OK;
}

/* The first worker whose channel the poll found ready, -1 when none. */
static int psc__recv_ready(const psc__recv_set_t *rs)
{
    for (int k = 0; k < rs->nchan; k++)
        if (rs->s.p[k].revents)
            return rs->who[k];
    return -1;
}

/* No message by the deadline: from rank, or from any of nchan workers. */
static psc_status_t psc__recv_timeout(const psc_ipc_run_t *run, int rank, int nchan, int64_t start, psc_ipc_err_t *err)
{
    if (rank >= 0)
        return psc__ipc_fail(err, PSC_ERR_TIMEOUT, "%s: no message within %lld ms", psc__ipc_chan_peer(run->w[rank].chan),
                             (long long)((psc__ipc_now() - start) / 1000000));
    return psc__ipc_fail(err, PSC_ERR_TIMEOUT, "no message from any of %d workers within %lld ms", nchan,
                         (long long)((psc__ipc_now() - start) / 1000000));
}

psc_status_t psc__ipc_run_recv(psc_ipc_run_t *run, int rank, psc_ipc_msg_t *msg, int *from, int64_t deadline,
                               psc_ipc_err_t *err)
{
    struct pollfd *pfd;
    int *who;
    int64_t start = psc__ipc_now();
    psc_status_t st = psc__rank_ok(run, rank, 1, err);

    if (st != PSC_OK)
        return st;
    pfd = calloc(2 * (size_t)run->n, sizeof(*pfd));
    who = calloc((size_t)run->n, sizeof(*who));
    if (!pfd || !who) {
        free(pfd);
        free(who);
        return psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "no memory to wait for %d workers", run->n);
    }
    for (;;) {
        psc__recv_set_t rs = {{pfd, 0, 0}, who, 0, 0};
        int rc, i;

        if ((st = psc__ended_before(run, err)) != PSC_OK)
            break;
        psc__recv_channels(run, rank, &rs);
        if (rs.nchan == 0) {
            /* None to take from: rank's channel failed before (say why, and how the worker ended if it did). */
            st = rank >= 0 ? psc__take(run, rank, msg, deadline, err)
                           : psc__ipc_fail(err, PSC_ERR_INVALID, "no connected worker to receive from");
            break;
        }
        psc__recv_watch(run, rank, &rs);
        psc__add_ends(run, &rs.s);
        if ((rc = psc__poll(&rs.s, deadline)) < 0) {
            st = psc__ipc_fail(err, PSC_ERR_IO, "poll while waiting for workers: %s", strerror(errno));
            break;
        }
        if (rc > 0 && (st = psc__recv_hangup(run, rank, &rs, err)) != PSC_OK)
            break;
        /* What a worker sent before it ended is taken first; then its end. */
        if (rc > 0 && (i = psc__recv_ready(&rs)) >= 0) {
            if ((st = psc__take(run, i, msg, deadline, err)) == PSC_OK) {
                run->next = (i + 1) % run->n;
                if (from)
                    *from = i;
            }
            break;
        }
        if ((st = psc__check_ends(run, err)) != PSC_OK)
            break;
        if (psc__ipc_now() >= deadline) {
            st = psc__recv_timeout(run, rank, rs.nchan, start, err);
            break;
        }
    }
    free(pfd);
    free(who);
    return st;
}

/* ---- end ---- */

/* A worker started elsewhere, sent BYE: wait for it to close its connection (what it still sends is dropped). */
static psc_status_t psc__closed_after_bye(psc_ipc_run_t *run, int i, int64_t deadline, psc_ipc_err_t *err)
{
    psc_ipc_chan_t *c = run->w[i].chan;

    while (c && !psc__ipc_chan_broken(c)) {
        psc_ipc_err_t why = {0};
        psc_ipc_msg_t m;
        psc_status_t st = psc__ipc_recv(c, &m, deadline, &why);

        if (st == PSC_OK) {
            psc__ipc_msg_close_fds(&m);
            continue;
        }
        if (st == PSC_ERR_TIMEOUT)
            return psc__ipc_fail(err, PSC_ERR_TIMEOUT, "%s still connected at the deadline, after BYE",
                                 psc__ipc_chan_peer(c));
        if (strstr(why.msg, ": closed the connection") && !strstr(why.msg, "in the middle"))
            return PSC_OK;
        return psc__ipc_fail(err, st, "%s", why.msg);
    }
    return PSC_OK;
}

psc_status_t psc__ipc_run_finish(psc_ipc_run_t *run, int64_t deadline, psc_ipc_err_t *err)
{
    psc_status_t st = PSC_OK;

    for (int i = 0; i < run->n; i++) {
        psc_ipc_err_t why = {0};

        if (!run->w[i].chan || run->w[i].reaped || run->w[i].bye)
            continue;
        if (psc__ipc_run_send(run, i, PSC_IPC_BYE, 0, NULL, 0, NULL, 0, deadline, &why) != PSC_OK && st == PSC_OK)
            st = psc__ipc_fail(err, why.st, "%s", why.msg);
    }
    for (int i = 0; i < run->n; i++) {
        psc__worker_t *w = &run->w[i];

        if (w->pid <= 0) {
            /* Started elsewhere: its normal end is closing the connection after BYE. */
            psc_status_t end = psc__closed_after_bye(run, i, deadline, err);

            if (end != PSC_OK && st == PSC_OK)
                st = end;
            continue;
        }
        if (!psc__wait_end(run, i, INT_MAX, deadline)) {
            if (st == PSC_OK)
                st = psc__ipc_fail(err, PSC_ERR_TIMEOUT, "worker %d (pid %ld) still running at the deadline%s", i,
                                   (long)w->pid, w->bye ? ", after BYE" : "");
            continue;
        }
        if (psc__abnormal(w) && st == PSC_OK)
            st = psc__ipc_fail(err, PSC_ERR_IO, "%s", w->ended);
    }
    return st;
}

void psc__ipc_run_destroy(psc_ipc_run_t *run, int grace_ms)
{
    int64_t until;
    int left = 0;

    if (!run)
        return;
    /* A worker that sees its connection close may end by itself. */
    for (int i = 0; i < run->n; i++) {
        psc__ipc_chan_close(run->w[i].chan);
        run->w[i].chan = NULL;
    }
    for (int i = 0; i < run->n; i++)
        if (run->w[i].pid > 0 && !psc__reap(run, i, 0)) {
            kill(run->w[i].pid, SIGTERM);
            left++;
        }
    until = psc__ipc_deadline(grace_ms);
    for (int i = 0; i < run->n && left; i++)
        if (run->w[i].pid > 0 && !run->w[i].reaped)
            psc__wait_end(run, i, grace_ms, until);
    /* An unreaped child keeps its pid: the signal reaches no other process. */
    for (int i = 0; i < run->n; i++)
        if (run->w[i].pid > 0 && !run->w[i].reaped) {
            kill(run->w[i].pid, SIGKILL);
            psc__reap(run, i, 1);
        }
    for (int i = 0; i < run->n; i++)
        if (run->w[i].pidfd >= 0)
            close(run->w[i].pidfd);
    psc__ipc_listener_close(run->lst);
    free(run->w);
    free(run->pids);
    free(run);
}
