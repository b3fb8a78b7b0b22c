/*
 * check --fleet: one rank per node under mpirun. Every rank runs its node's check in a child process (so a check
 * that crashes or is killed leaves the rank to say so) and sends rank 0 two small messages, its host name at once
 * and its check's summary at the end, by point-to-point sends (no collective, which a hung rank would hold). Rank 0
 * takes them as they come, against the deadline -T, and prints the fleet: a node that did not report by then is
 * unreachable. When mpirun ends the job (a rank's process died: Open MPI then stops every rank with SIGTERM), rank 0
 * prints the table with the nodes it has, the others unreachable. docs/METHOD.md says why this holds for 1,000 nodes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "job.h"
#include "report/fleet.h"
#include "report/json.h"
#include "report/text.h"

#define PSC__TAG_HELLO 0x5c1
#define PSC__TAG_REPORT 0x5c2
#define PSC__ENDING "no report: mpirun is ending the job (a rank's process or its node died)"
#define PSC__FLEET_TIMEOUT_S 600.0 /* -T's default: a check takes about 15 s on 2 GPUs, minutes on 8 with a slow link */

/* The node's check in a child process: its summary and its stderr through pipes, its end. */
typedef struct {
    pid_t pid;
    int fd[2];                   /* summary, stderr; -1 once closed */
    char *out;                   /* the summary (up to PSC_FLEET_MAX_SUMMARY bytes) */
    size_t nout;
    char err[1024];              /* the last bytes of its stderr */
    size_t nerr;
    int status, done;
} psc__child_t;

/* MPI_Init returned; SIGTERM: mpirun is ending the job; SIGCONT: 1 seen (it may be), 2 the files written then */
static volatile sig_atomic_t psc__joined, psc__ended, psc__warned;

/* mpirun ends the job when a rank's process dies: before MPI_Init returned, nothing to show (rank 0 would wait in
 * it until killed), one line; after it, the gathering stops and the table names the nodes not heard from. */
static void psc__on_term(int sig)
{
    static const char msg[] = "p2pscope: check --fleet: mpirun ended the job before every rank joined it (a rank "
                              "died at its start): no fleet table\n";
    (void)sig;
    if (!psc__joined) {
        if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
            _exit(PSC_EXIT_FAILED);
        _exit(PSC_EXIT_FAILED);
    }
    psc__ended = 1;
}

static void psc__on_cont(int sig)
{
    (void)sig;
    if (!psc__warned)
        psc__warned = 1;
}

/* SIGTERM and SIGCONT caught; SIGPIPE ignored: a stdout mpirun no longer forwards is a failed write (main says
 * so), not death before the files are written. */
static void psc__catch_term(void)
{
    sigaction(SIGTERM, &(struct sigaction){.sa_handler = psc__on_term}, NULL);
    if (psc__joined)
        sigaction(SIGCONT, &(struct sigaction){.sa_handler = psc__on_cont}, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Fork the node's check: the child runs check as usual, its summary to the pipe instead of any output. */
static int psc__child_start(const psc_cli_opts_t *o, psc__child_t *ch)
{
    int out[2], err[2];
    pid_t parent = getpid();

    memset(ch, 0, sizeof(*ch));
    ch->fd[0] = ch->fd[1] = -1;
    if (pipe2(out, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]), close(out[1]);
        return -1;
    }
    fflush(NULL);
    if ((ch->pid = fork()) == 0) {
        psc_cli_opts_t copy = *o;

        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the rank gone (mpirun's end, MPI_Abort): its check goes too */
        if (getppid() != parent)
            _exit(PSC_EXIT_FAILED);
        close(out[0]), close(err[0]);
        dup2(err[1], STDERR_FILENO);
        copy.fleet_out = out[1];
        copy.json = 0, copy.json_path = NULL, copy.html_path = NULL; /* the fleet's outputs are rank 0's */
        _exit(psc_cli_run_on_driver(&copy));
    }
    close(out[1]), close(err[1]);
    if (ch->pid < 0) {
        close(out[0]), close(err[0]);
        return -1;
    }
    ch->fd[0] = out[0];
    ch->fd[1] = err[0];
    return 0;
}

/* Read what the child wrote, up to timeout_ms (-1: until something comes); 1 once it ended and was reaped. */
static int psc__child_step(psc__child_t *ch, int timeout_ms)
{
    struct pollfd p[2] = {{ch->fd[0], POLLIN, 0}, {ch->fd[1], POLLIN, 0}};
    char buf[4096];

    if (ch->done)
        return 1;
    if (poll(p, 2, timeout_ms) < 0 && errno != EINTR)
        return 0;
    for (int k = 0; k < 2; k++) {
        ssize_t n;

        if (ch->fd[k] < 0 || !(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
            continue;
        if ((n = read(ch->fd[k], buf, sizeof(buf))) <= 0) {
            if (n == 0 || errno != EINTR)
                close(ch->fd[k]), ch->fd[k] = -1;
            continue;
        }
        if (k == 1) { /* the last line is what it says: keep the end */
            size_t cap = sizeof(ch->err) - 1, m = (size_t)n < cap ? (size_t)n : cap, keep = cap - m;

            if (ch->nerr > keep) {
                memmove(ch->err, ch->err + ch->nerr - keep, keep);
                ch->nerr = keep;
            }
            memcpy(ch->err + ch->nerr, buf + (size_t)n - m, m);
            ch->err[ch->nerr += m] = '\0';
        } else if (ch->nout + (size_t)n <= PSC_FLEET_MAX_SUMMARY) {
            char *grown = realloc(ch->out, ch->nout + (size_t)n + 1);

            if (grown) {
                memcpy(grown + ch->nout, buf, (size_t)n);
                grown[ch->nout += (size_t)n] = '\0';
                ch->out = grown;
            }
        }
    }
    if (ch->fd[0] >= 0 || ch->fd[1] >= 0 || waitpid(ch->pid, &ch->status, 0) != ch->pid)
        return 0;
    return ch->done = 1;
}

/* The child's end as the rank reports it to rank 0 (malloc'd; NULL out of memory). */
static char *psc__child_message(const psc__child_t *ch, const char *host)
{
    int code = WIFEXITED(ch->status) ? WEXITSTATUS(ch->status) : -1;
    int sig = WIFSIGNALED(ch->status) ? WTERMSIG(ch->status) : -1;

    return psc_fleet_message(host, code, sig, ch->err, ch->out);
}

/* A rank but 0: the host name at once, the check's report when it ends, then the job left. Always 0. */
static int psc__rank(psc_cli_job_t *job, psc__child_t *ch, const char *host)
{
    char *msg;

    psc_cli_job_send0(job, PSC__TAG_HELLO, host, (int)strlen(host) + 1);
    while (!psc__child_step(ch, -1))
        ;
    msg = psc__child_message(ch, host);
    if (!msg) /* out of memory: the least that says so */
        msg = strdup("{}");
    if (msg)
        psc_cli_job_send0(job, PSC__TAG_REPORT, msg, (int)strlen(msg));
    free(msg);
    free(ch->out);
    psc_cli_job_end(job);
    return PSC_EXIT_OK; /* the fleet's verdict is rank 0's: a rank that exits 1 would make mpirun end the job */
}

/* A message at rank 0: a host name, or a rank's report (its node then counted). */
static void psc__take(psc_fleet_t *f, int from, int tag, const char *buf, int len, size_t *pending)
{
    psc_fleet_node_t *nd;

    if (from < 0 || (size_t)from >= f->n)
        return;
    nd = &f->nodes[from];
    if (tag == PSC__TAG_HELLO) {
        snprintf(nd->host, sizeof(nd->host), "%.*s", len, buf);
    } else if (tag == PSC__TAG_REPORT && !nd->reached && !nd->why[0]) {
        psc_fleet_node_take(nd, buf, (size_t)len);
        if (!nd->why[0] && !nd->reached)
            snprintf(nd->why, sizeof(nd->why), "its report is empty");
        (*pending)--;
        /* each node's own verdict as it comes (the first within one check's time); outliers need them all */
        psc_report_printf(stderr, "p2pscope check --fleet: %zu of %zu reported: rank %d (%s) %s%.200s\n",
                          f->n - *pending, f->n, nd->rank, nd->host[0] ? nd->host : "?",
                          !nd->reached ? "unreachable: " : nd->check_exit ? "failed its check: " : "passed its check",
                          nd->reached && !nd->check_exit ? "" : nd->why);
    }
}

/* Rank 0's own check ended: its node, as another rank's report would say it. */
static void psc__take_own(psc_fleet_t *f, const psc__child_t *ch, const char *host, size_t *pending)
{
    char *msg = psc__child_message(ch, host);

    if (msg)
        psc__take(f, 0, PSC__TAG_REPORT, msg, (int)strlen(msg), pending);
    else {
        snprintf(f->nodes[0].why, sizeof(f->nodes[0].why), "out of host memory for its report");
        (*pending)--;
    }
    free(msg);
}

/* Rank 0: the reports as they come, until all came (*pending: those missing), -T passed, mpirun ends the job or
 * sends SIGCONT. */
static void psc__gather(psc_cli_job_t *job, psc_fleet_t *f, psc__child_t *own, const char *host, double t0,
                        size_t *pending)
{
    int ok = 1;

    while (*pending && !psc__ended && psc__warned != 1 && psc_cli_now() - t0 < f->timeout_s && ok) {
        char *buf = NULL;
        int len = 0, from = -1, tag = 0, got = 0;

        /* the wait: rank 0's own check's pipes for a millisecond, or the pause between polls once it ended */
        if (!own->done && psc__child_step(own, 1))
            psc__take_own(f, own, host, pending);
        else if (own->done)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        while (job->mpi && (got = psc_cli_job_take(job, &buf, &len, &from, &tag)) == 1) {
            psc__take(f, from, tag, buf, len, pending);
            free(buf);
        }
        ok = !job->mpi || got == 0;
    }
}

/* The nodes that did not report: why, from how the wait ended; rank 0's own check stopped if it is one. */
static void psc__unreached(psc_fleet_t *f, psc__child_t *own)
{
    for (size_t i = 0; i < f->n; i++) {
        psc_fleet_node_t *nd = &f->nodes[i];

        if (nd->reached || nd->why[0])
            continue;
        if (psc__ended)
            snprintf(nd->why, sizeof(nd->why), "%s", PSC__ENDING);
        else
            snprintf(nd->why, sizeof(nd->why), "no report within -T %g s (its check hangs, or the node is down)",
                     f->timeout_s);
    }
    if (!own->done) {
        kill(own->pid, SIGKILL);
        waitpid(own->pid, NULL, 0);
    }
}

/* The fleet's JSON to --json's target: rc, or the exit code of a failed write. */
static int psc__fleet_json(const psc_fleet_t *f, const psc_cli_opts_t *o, int rc)
{
    json_t *doc = json_pack("{s:s,s:s,s:o}", "command", "check --fleet", "version", PSC_VERSION_STRING, "fleet",
                            psc_json_fleet(f, psc_fleet_exit(f)));

    if (!doc) {
        psc_report_printf(stderr, "p2pscope: out of host memory: the fleet's JSON was not written\n");
        return PSC_EXIT_NO_MEMORY;
    }
    if (psc_cli_write_json(doc, o) != PSC_EXIT_OK)
        rc = PSC_EXIT_FAILED;
    json_decref(doc);
    return rc;
}

/* The fleet's files: its JSON where it goes to a file, its page. rc, or the exit code of a failed write. */
static int psc__fleet_files(const psc_fleet_t *f, const psc_cli_opts_t *o, int rc)
{
    char err[512], *page;

    if (o->json && psc_cli_tables(o))
        rc = psc__fleet_json(f, o, rc);
    if (!o->html_path || rc == PSC_EXIT_NO_MEMORY)
        return rc;
    if (!(page = psc_html_fleet(f, "p2pscope check --fleet"))) {
        psc_report_printf(stderr, "p2pscope: out of host memory: the page was not written\n");
        return PSC_EXIT_NO_MEMORY;
    }
    if (psc_write_file_atomic(o->html_path, page, strlen(page), err, sizeof(err)) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", err);
        rc = PSC_EXIT_FAILED;
    }
    free(page);
    return rc;
}

/* The files first (when mpirun ends the job its forwarding of stdout may be gone), then the table, or the verdict
 * on stderr and the JSON on stdout. The exit code. */
static int psc__fleet_outputs(const psc_fleet_t *f, const psc_cli_opts_t *o)
{
    int rc = psc__fleet_files(f, o, psc_fleet_exit(f));

    if (psc_cli_tables(o))
        psc_render_fleet(stdout, f);
    else
        psc_render_fleet_verdict(stderr, f);
    if (o->json && !psc_cli_tables(o) && rc != PSC_EXIT_NO_MEMORY)
        rc = psc__fleet_json(f, o, rc);
    return rc;
}

/*
 * mpirun sent SIGCONT, which Open MPI sends a second before it stops every rank when one died: the files as they
 * stand, the nodes not heard from yet named so, in case the end comes before another word. The gathering goes on,
 * and the final files replace these (a SIGCONT of another cause costs one write).
 */
static void psc__provisional(const psc_fleet_t *f, const psc_cli_opts_t *o, double t0)
{
    psc_fleet_t p = *f;

    if (!(o->json && psc_cli_tables(o)) && !o->html_path)
        return;
    if (!(p.nodes = malloc(f->n * sizeof(*p.nodes))))
        return;
    memcpy(p.nodes, f->nodes, f->n * sizeof(*p.nodes));
    for (size_t i = 0; i < p.n; i++)
        if (!p.nodes[i].reached && !p.nodes[i].why[0])
            snprintf(p.nodes[i].why, sizeof(p.nodes[i].why), "%s", PSC__ENDING);
    p.wall_s = psc_cli_now() - t0;
    if (psc_fleet_judge(&p) == PSC_OK)
        psc__fleet_files(&p, o, PSC_EXIT_OK);
    free(p.nodes);
}

/* Rank 0: gather, judge, print; then leave the job, or end it where a rank still runs (hung: no MPI_Finalize). */
static int psc__rank0(const psc_cli_opts_t *o, psc_cli_job_t *job, psc__child_t *own, const char *host, double t0)
{
    psc_fleet_t f = {.n = (size_t)job->size, .bound_pct = o->fleet_bound,
                     .timeout_s = o->timeout_s > 0 ? o->timeout_s : PSC__FLEET_TIMEOUT_S};
    size_t pending = (size_t)job->size;
    int rc;

    if (!(f.nodes = calloc(f.n, sizeof(*f.nodes)))) {
        psc_report_printf(stderr, "p2pscope: out of host memory for %zu nodes\n", f.n);
        psc_cli_job_abort(job, PSC_EXIT_NO_MEMORY);
        return PSC_EXIT_NO_MEMORY;
    }
    for (size_t i = 0; i < f.n; i++)
        f.nodes[i].rank = (int)i, f.nodes[i].check_exit = -1;
    snprintf(f.nodes[0].host, sizeof(f.nodes[0].host), "%s", host);
    psc__gather(job, &f, own, host, t0, &pending);
    while (psc__warned == 1 && pending && !psc__ended) { /* SIGCONT: the files as they stand, then on */
        psc__provisional(&f, o, t0);
        psc__warned = 2;
        psc__gather(job, &f, own, host, t0, &pending);
    }
    psc__unreached(&f, own);
    f.wall_s = psc_cli_now() - t0;
    rc = psc_fleet_judge(&f) == PSC_OK ? psc__fleet_outputs(&f, o) : PSC_EXIT_NO_MEMORY;
    free(f.nodes);
    free(own->out);
    fflush(stdout);
    if (pending && !psc__ended) /* a rank that never reported still runs: only an abort ends it */
        psc_cli_job_abort(job, rc);
    if (!psc__ended)
        psc_cli_job_end(job);
    return rc;
}

int psc_cmd_check_fleet(const psc_cli_opts_t *o, psc_cli_job_t *job, int *argc, char ***argv)
{
    const double t0 = psc_cli_now();
    psc__child_t ch;
    char host[64] = "", why[512];
    int rc;

    if (!psc_cli_mpi_library()) {
        if (job->rank == 0)
            psc_report_printf(stderr, "p2pscope: check --fleet needs MPI, and this p2pscope was built without it (no "
                              "mpicc was found when it was built): run check on each node alone, or rebuild where "
                              "Open MPI's mpicc is found (apt-get install libopenmpi-dev openmpi-bin)\n");
        return PSC_EXIT_USAGE;
    }
    gethostname(host, sizeof(host) - 1);
    /* the check's process first, before MPI is joined: it shares nothing of MPI's */
    if (psc__child_start(o, &ch) != 0) {
        psc_report_printf(stderr, "p2pscope: cannot start the node's check: %s\n", strerror(errno));
        return PSC_EXIT_ENV;
    }
    if (job->rank == 0)
        psc__catch_term();
    if (job->launcher && (rc = psc_cli_job_join(job, argc, argv, why, sizeof(why))) != PSC_EXIT_OK) {
        if (job->rank == 0)
            psc_report_printf(stderr, "p2pscope: %s\n", why);
        kill(ch.pid, SIGKILL);
        waitpid(ch.pid, NULL, 0);
        free(ch.out);
        psc_cli_job_end(job);
        return rc;
    }
    if (job->rank != 0)
        return psc__rank(job, &ch, host);
    psc__joined = 1;
    psc__catch_term(); /* again: MPI_Init may set handlers of its own */
    return psc__rank0(o, job, &ch, host, t0);
}
