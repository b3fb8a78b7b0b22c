/*
 * Worker processes (src/lib/proc/workers.c) with a real program
 * (ipc_test_worker): start, handshake, messages and descriptors both ways,
 * and each way a worker can end mid-run (exit status, abort, SIGKILL of its
 * own or from outside, an ERROR) named in bounded time, watched by pidfd and
 * by polling. Afterwards no worker is left: each pid is reaped (waitpid says
 * ECHILD, kill(pid, 0) fails), the run directory is gone and no descriptor
 * leaked.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc/workers.h"
#include "process_checks.h"

static void expect_error(psc_status_t got, const psc_ipc_err_t *e, psc_status_t want, const char *part)
{
    if (got != want || !strstr(e->msg, part))
        fail_msg("status %d, wanted %d; message \"%s\", wanted a part \"%s\"", got, want, e->msg, part);
}

static const char *const plain_argv[] = {IPC_TEST_WORKER, NULL};

typedef struct {
    psc_ipc_run_t *run;
    pid_t pids[8];
    int n;
    char dir[128];
    int fds_before;
} fixture_t;

static void start(fixture_t *f, int n, const char *const *argv)
{
    psc_ipc_err_t e = {0};

    f->fds_before = psc_test_open_fds();
    f->n = n;
    if (psc__ipc_run_start(n, argv, &f->run, &e) != PSC_OK)
        fail_msg("start: %s", e.msg);
    for (int i = 0; i < n; i++)
        f->pids[i] = psc__ipc_run_pid(f->run, i);
    snprintf(f->dir, sizeof(f->dir), "%s", psc__ipc_listener_dir(psc__ipc_run_listener(f->run)));
}

static void start_connected(fixture_t *f, int n)
{
    psc_ipc_err_t e = {0};

    start(f, n, plain_argv);
    if (psc__ipc_run_connect(f->run, psc__ipc_deadline(10000), &e) != PSC_OK)
        fail_msg("connect: %s", e.msg);
}

/* Destroy, then prove nothing is left: no child, no directory, no descriptor. */
static void destroy_and_check(fixture_t *f, int grace_ms)
{
    struct stat sb;

    psc__ipc_run_destroy(f->run, grace_ms);
    for (int i = 0; i < f->n; i++) {
        assert_int_equal(waitpid(f->pids[i], NULL, WNOHANG), -1);
        assert_int_equal(errno, ECHILD);
        assert_int_equal(kill(f->pids[i], 0), -1);
    }
    assert_int_equal(lstat(f->dir, &sb), -1);
    assert_int_equal(psc_test_open_fds(), f->fds_before);
}

static void request(fixture_t *f, int rank, const char *cmd)
{
    psc_ipc_err_t e = {0};

    if (psc__ipc_run_send(f->run, rank, PSC_IPC_REQUEST, 0, cmd, (uint32_t)strlen(cmd), NULL, 0,
                          psc__ipc_deadline(5000), &e) != PSC_OK)
        fail_msg("send \"%s\" to %d: %s", cmd, rank, e.msg);
}

static void reply_from(fixture_t *f, int rank, char *out, size_t cap)
{
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    int from = -2;

    if (psc__ipc_run_recv(f->run, rank, &m, &from, psc__ipc_deadline(5000), &e) != PSC_OK)
        fail_msg("reply from %d: %s", rank, e.msg);
    assert_int_equal(from, rank);
    assert_int_equal(m.type, PSC_IPC_REPLY);
    snprintf(out, cap, "%.*s", (int)m.len, (const char *)m.payload);
}

static void test_echo_and_normal_end(void **state)
{
    fixture_t f;
    psc_ipc_err_t e = {0};
    char got[64];
    int seen[3] = {0};

    (void)state;
    start_connected(&f, 3);
    assert_string_equal(psc__ipc_run_ended(f.run, 2), "");
    for (int i = 0; i < 3; i++) {
        char cmd[32];

        snprintf(cmd, sizeof(cmd), "echo hello %d", i);
        request(&f, i, cmd);
    }
    /* From any worker: each answers once, with its own text. */
    for (int k = 0; k < 3; k++) {
        psc_ipc_msg_t m;
        char want[32];
        int from = -1;

        assert_int_equal(psc__ipc_run_recv(f.run, -1, &m, &from, psc__ipc_deadline(5000), &e), PSC_OK);
        assert_true(from >= 0 && from < 3);
        assert_false(seen[from]);
        seen[from] = 1;
        snprintf(want, sizeof(want), "hello %d", from);
        assert_int_equal(m.len, strlen(want));
        assert_memory_equal(m.payload, want, m.len);
    }
    request(&f, 1, "echo again");
    reply_from(&f, 1, got, sizeof(got));
    assert_string_equal(got, "again");
    assert_int_equal(psc__ipc_run_finish(f.run, psc__ipc_deadline(5000), &e), PSC_OK);
    snprintf(got, sizeof(got), "worker 2 (pid %ld) exited with status 0", (long)f.pids[2]);
    assert_string_equal(psc__ipc_run_ended(f.run, 2), got);
    destroy_and_check(&f, 1000);
}

static void test_told_where_and_who(void **state)
{
    static const char *const argv[] = {IPC_TEST_WORKER, "--args", "@SOCKET@", "@TOKEN@", "@RANK@", "@NRANKS@",
                                       "x=@RANK@/@NRANKS@", NULL};
    fixture_t f;
    char hex[PSC_IPC_TOKEN_HEX], got[512], want[512];
    const char *path;

    (void)state;
    start(&f, 2, argv);
    assert_int_equal(psc__ipc_run_connect(f.run, psc__ipc_deadline(10000), NULL), PSC_OK);
    path = psc__ipc_listener_path(psc__ipc_run_listener(f.run));
    /* Every worker in: the socket and its directory are gone already (a kill of this process leaves nothing). */
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(access(f.dir, F_OK), -1);
    psc__ipc_token_format(psc__ipc_run_token(f.run), hex);
    for (int i = 0; i < 2; i++) {
        request(&f, i, "whoami");
        reply_from(&f, i, got, sizeof(got));
        snprintf(want, sizeof(want), "%d 2 %s %s --args %s %s %d 2 x=%d/2", i, path, hex, path, hex, i, i);
        assert_string_equal(got, want);
    }
    assert_int_equal(psc__ipc_run_finish(f.run, psc__ipc_deadline(5000), NULL), PSC_OK);
    destroy_and_check(&f, 1000);
}

/* The worker starts clean whatever the caller has: no stray descriptor, stdin from /dev/null, signals at defaults. */
static void test_worker_starts_clean(void **state)
{
    struct sigaction ign = {0}, old_pipe;
    sigset_t usr1, old_mask;
    fixture_t f;
    char got[256];
    int stray = dup(STDERR_FILENO); /* not close-on-exec */

    (void)state;
    assert_true(stray > 2);
    ign.sa_handler = SIG_IGN;
    assert_int_equal(sigaction(SIGPIPE, &ign, &old_pipe), 0);
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    assert_int_equal(sigprocmask(SIG_BLOCK, &usr1, &old_mask), 0);
    start_connected(&f, 1);
    request(&f, 0, "state");
    reply_from(&f, 0, got, sizeof(got));
    assert_string_equal(got, "fds=0,1,2, stdin=/dev/null sigpipe=default usr1=open");
    assert_int_equal(psc__ipc_run_finish(f.run, psc__ipc_deadline(5000), NULL), PSC_OK);
    destroy_and_check(&f, 1000);
    /* And the caller's own are as they were. */
    {
        struct sigaction now;
        sigset_t mask;

        assert_int_equal(sigaction(SIGPIPE, &old_pipe, &now), 0);
        assert_true(now.sa_handler == SIG_IGN);
        assert_int_equal(sigprocmask(SIG_SETMASK, &old_mask, &mask), 0);
        assert_true(sigismember(&mask, SIGUSR1));
    }
    assert_true(fcntl(stray, F_GETFD) >= 0 && !(fcntl(stray, F_GETFD) & FD_CLOEXEC));
    close(stray);
}

static void test_descriptors_both_ways(void **state)
{
    fixture_t f;
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    unsigned char b[1000];
    char got[64];
    int fd;

    (void)state;
    start_connected(&f, 2);
    /* Worker to parent: a memfd of known bytes, read back here. */
    request(&f, 1, "memfd 1000");
    assert_int_equal(psc__ipc_run_recv(f.run, 1, &m, NULL, psc__ipc_deadline(5000), &e), PSC_OK);
    assert_int_equal(m.type, PSC_IPC_FD);
    assert_int_equal(m.nfds, 1);
    assert_int_equal(pread(m.fds[0], b, sizeof(b), 0), (ssize_t)sizeof(b));
    for (int i = 0; i < 1000; i++)
        assert_int_equal(b[i], (unsigned char)((i * 7 + 1) & 0xff));
    psc__ipc_msg_close_fds(&m);
    /* Parent to worker: it answers with the bytes read through the descriptor. */
    fd = memfd_create("psc-test", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "through the fd", 14), 14);
    assert_int_equal(psc__ipc_run_send(f.run, 0, PSC_IPC_FD, 0, "", 0, &fd, 1, psc__ipc_deadline(5000), &e), PSC_OK);
    close(fd);
    reply_from(&f, 0, got, sizeof(got));
    assert_string_equal(got, "through the fd");
    assert_int_equal(psc__ipc_run_finish(f.run, psc__ipc_deadline(5000), &e), PSC_OK);
    destroy_and_check(&f, 1000);
}

/* Worker 1 ends as cmd makes it (outside: SIGKILL from here) while the parent waits on worker 0 or on any. */
static void death_case(const char *cmd, int from_rank, const char *says)
{
    fixture_t f;
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    char want[128], got[32];
    int64_t t0;

    start_connected(&f, 2);
    if (strcmp(cmd, "outside") == 0) {
        request(&f, 1, "block");
        reply_from(&f, 1, got, sizeof(got));
        assert_string_equal(got, "blocking");
        assert_int_equal(kill(f.pids[1], SIGKILL), 0);
    } else {
        request(&f, 1, cmd);
    }
    t0 = psc__ipc_now();
    snprintf(want, sizeof(want), "worker 1 (pid %ld) %s", (long)f.pids[1], says);
    expect_error(psc__ipc_run_recv(f.run, from_rank, &m, NULL, psc__ipc_deadline(20000), &e), &e, PSC_ERR_IO, want);
    /* Noticed in bounded time, far from the deadline. */
    assert_true(psc__ipc_now() - t0 < 3000 * 1000000LL);
    assert_non_null(strstr(psc__ipc_run_ended(f.run, 1), says));
    /* The run stays failed: a later wait says the same at once. */
    expect_error(psc__ipc_run_recv(f.run, 0, &m, NULL, psc__ipc_deadline(20000), &e), &e, PSC_ERR_IO, want);
    destroy_and_check(&f, 1000);
}

static void deaths(void)
{
    death_case("exit 3", -1, "exited with status 3");
    death_case("exit 0", 0, "exited with status 0");
    death_case("abort", 0, "killed by signal 6");
    death_case("sigkill", -1, "killed by signal 9");
    death_case("outside", 0, "killed by signal 9");
    death_case("outside", 1, "killed by signal 9");
}

static void test_deaths_named_pidfd(void **state)
{
    (void)state;
    psc__ipc_no_pidfd = 0;
    deaths();
}

static void test_deaths_named_polling(void **state)
{
    (void)state;
    psc__ipc_no_pidfd = 1;
    deaths();
    psc__ipc_no_pidfd = 0;
}

static void test_error_from_a_worker(void **state)
{
    fixture_t f;
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    char want[128];

    (void)state;
    start_connected(&f, 2);
    request(&f, 0, "error");
    snprintf(want, sizeof(want), "worker 0 (pid %ld) reported: the test asked for an error", (long)f.pids[0]);
    expect_error(psc__ipc_run_recv(f.run, -1, &m, NULL, psc__ipc_deadline(5000), &e), &e, PSC_ERR_IO, want);
    destroy_and_check(&f, 1000);
}

/* Wait until pid has ended, without reaping it (that is the run's job): its pidfd becomes readable. */
static void wait_gone(pid_t pid)
{
#ifdef SYS_pidfd_open
    struct pollfd p = {.fd = (int)syscall(SYS_pidfd_open, pid, 0), .events = POLLIN};

    if (p.fd >= 0) {
        assert_int_equal(poll(&p, 1, 5000), 1);
        close(p.fd);
        return;
    }
#endif
    /* No pidfds: a zombie's state in /proc says it has ended. */
    for (int i = 0; i < 5000; i++) {
        char path[64], buf[256];
        FILE *f;
        char *rp;

        snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
        f = fopen(path, "r");
        assert_non_null(f);
        rp = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
        fclose(f);
        if (rp && rp[1] == ' ' && rp[2] == 'Z')
            return;
        poll(NULL, 0, 1);
    }
    fail_msg("pid %ld did not end", (long)pid);
}

static void test_sending_to_a_dead_worker(void **state)
{
    fixture_t f;
    psc_ipc_err_t e = {0};
    char want[128];
    int st = PSC_OK;

    (void)state;
    start_connected(&f, 1);
    assert_int_equal(kill(f.pids[0], SIGKILL), 0);
    wait_gone(f.pids[0]);
    snprintf(want, sizeof(want), "worker 0 (pid %ld) killed by signal 9", (long)f.pids[0]);
    st = psc__ipc_run_send(f.run, 0, PSC_IPC_REQUEST, 0, "echo x", 6, NULL, 0, psc__ipc_deadline(5000), &e);
    expect_error(st, &e, PSC_ERR_IO, want);
    destroy_and_check(&f, 1000);
}

static void death_before_connecting(void)
{
    static const char *const argv[] = {IPC_TEST_WORKER, "exit-early", "7", NULL};
    fixture_t f;
    psc_ipc_err_t e = {0};
    int64_t t0;

    start(&f, 2, argv);
    t0 = psc__ipc_now();
    /* Both end: the one seen first is named (the lower rank when both are). */
    expect_error(psc__ipc_run_connect(f.run, psc__ipc_deadline(20000), &e), &e, PSC_ERR_IO, "worker ");
    assert_non_null(strstr(e.msg, "exited with status 7"));
    assert_true(psc__ipc_now() - t0 < 3000 * 1000000LL);
    destroy_and_check(&f, 1000);
}

static void test_death_before_connecting(void **state)
{
    (void)state;
    death_before_connecting();
    psc__ipc_no_pidfd = 1;
    death_before_connecting();
    psc__ipc_no_pidfd = 0;
}

static void test_never_connecting_times_out_and_is_killed(void **state)
{
    static const char *const argv[] = {IPC_TEST_WORKER, "no-connect", NULL};
    fixture_t f;
    psc_ipc_err_t e = {0};
    int64_t t0;

    (void)state;
    start(&f, 2, argv);
    t0 = psc__ipc_now();
    expect_error(psc__ipc_run_connect(f.run, t0 + 300 * 1000000LL, &e), &e, PSC_ERR_TIMEOUT,
                 "0 of 2 workers connected within");
    assert_non_null(strstr(e.msg, "(missing: 0, 1)"));
    assert_true(psc__ipc_now() - t0 >= 300 * 1000000LL && psc__ipc_now() - t0 < 1500 * 1000000LL);
    destroy_and_check(&f, 1000);
}

static void test_stubborn_worker_killed_after_grace(void **state)
{
    fixture_t f;
    char got[32];
    int64_t t0;

    (void)state;
    start_connected(&f, 2);
    request(&f, 0, "noterm");
    reply_from(&f, 0, got, sizeof(got));
    request(&f, 1, "block");
    reply_from(&f, 1, got, sizeof(got));
    t0 = psc__ipc_now();
    destroy_and_check(&f, 200);
    assert_true(psc__ipc_now() - t0 >= 200 * 1000000LL && psc__ipc_now() - t0 < 3000 * 1000000LL);
}

static void test_finish_names_a_worker_that_stays(void **state)
{
    static const char *const argv[] = {IPC_TEST_WORKER, "ignore-bye", NULL};
    fixture_t f;
    psc_ipc_err_t e = {0};
    char want[96];

    (void)state;
    start(&f, 1, argv);
    assert_int_equal(psc__ipc_run_connect(f.run, psc__ipc_deadline(10000), &e), PSC_OK);
    snprintf(want, sizeof(want), "worker 0 (pid %ld) still running at the deadline, after BYE", (long)f.pids[0]);
    expect_error(psc__ipc_run_finish(f.run, psc__ipc_deadline(300), &e), &e, PSC_ERR_TIMEOUT, want);
    destroy_and_check(&f, 200);
}

static void test_program_refused(void **state)
{
    static const char *const missing[] = {"/nonexistent/psc-worker", NULL};
    static const char *const bare[] = {"ipc_test_worker", NULL};
    char path[64];
    const char *garbage[] = {path, NULL};
    psc_ipc_run_t *run = NULL;
    psc_ipc_err_t e = {0};
    int fd, before = psc_test_open_fds();

    (void)state;
    expect_error(psc__ipc_run_start(1, missing, &run, &e), &e, PSC_ERR_INVALID, "No such file or directory");
    expect_error(psc__ipc_run_start(1, bare, &run, &e), &e, PSC_ERR_INVALID, "a program given by a path with a '/'");
    expect_error(psc__ipc_run_start(0, plain_argv, &run, &e), &e, PSC_ERR_INVALID, "accepted 1 to 1024 workers");
    /* Executable but no program: execve fails in the child, said here with its reason. */
    snprintf(path, sizeof(path), "/tmp/psc-notprog-XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "\x7f" "ELF garbage", 12), 12);
    close(fd);
    assert_int_equal(chmod(path, 0700), 0);
    expect_error(psc__ipc_run_start(2, garbage, &run, &e), &e, PSC_ERR_IO, "worker 0: cannot execute");
    assert_non_null(strstr(e.msg, "Exec format error"));
    assert_null(run);
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* the failed child was reaped */
    assert_int_equal(errno, ECHILD);
    unlink(path);
    assert_int_equal(psc_test_open_fds(), before);
}

/*
 * A stranger at the socket while the run waits for its worker: refused, and
 * the worker still comes in. The worker waits on a FIFO until the stranger
 * is in the backlog, so the stranger is taken first.
 */
static void test_stranger_during_connect(void **state)
{
    char fifo[64], dir[64];
    const char *argv[] = {IPC_TEST_WORKER, "wait-fifo", fifo, NULL};
    fixture_t f;
    psc_ipc_err_t e = {0};
    int ready[2], w, status;
    pid_t pid;
    char b;

    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/psc-fifo-XXXXXX");
    assert_non_null(mkdtemp(dir));
    assert_true(snprintf(fifo, sizeof(fifo), "%s/go", dir) < (int)sizeof(fifo));
    assert_int_equal(mkfifo(fifo, 0600), 0);
    start(&f, 1, argv);
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        unsigned char hello[PSC_IPC_TOKEN_SIZE + 8] = {0};
        psc_ipc_chan_t *c = NULL;
        psc_ipc_msg_t m;
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        close(ready[0]);
        snprintf(a.sun_path, sizeof(a.sun_path), "%s", psc__ipc_listener_path(psc__ipc_run_listener(f.run)));
        if (connect(s, (struct sockaddr *)&a, sizeof(a)) != 0 || psc__ipc_chan_wrap(s, "the parent", &c, NULL) ||
            psc__ipc_send(c, PSC_IPC_HELLO, 0, hello, sizeof(hello), NULL, 0, psc__ipc_deadline(5000), NULL))
            _exit(2);
        (void)!write(ready[1], "r", 1);
        _exit(psc__ipc_recv_type(c, PSC_IPC_WELCOME, &m, psc__ipc_deadline(5000), NULL) == PSC_OK ? 1 : 0);
    }
    close(ready[1]);
    assert_int_equal(read(ready[0], &b, 1), 1);
    close(ready[0]);
    /* Let the worker go: open blocks until it reads the FIFO, the close gives it its end. */
    w = open(fifo, O_WRONLY | O_CLOEXEC);
    assert_true(w >= 0);
    close(w);
    assert_int_equal(psc__ipc_run_connect(f.run, psc__ipc_deadline(10000), &e), PSC_OK);
    /* The stranger was refused (it exits 0 only then). */
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(psc__ipc_listener_refused(psc__ipc_run_listener(f.run)), 1);
    assert_non_null(strstr(psc__ipc_listener_refusal(psc__ipc_run_listener(f.run), 0), "wrong run token"));
    assert_int_equal(psc__ipc_run_finish(f.run, psc__ipc_deadline(5000), &e), PSC_OK);
    destroy_and_check(&f, 1000);
    unlink(fifo);
    rmdir(dir);
}

/* A worker started by someone else (as mpirun would), told the path and token by its arguments. */
static pid_t start_elsewhere(psc_ipc_run_t *run, int rank, int n)
{
    char hex[PSC_IPC_TOKEN_HEX], r[16], nr[16];
    const char *path = psc__ipc_listener_path(psc__ipc_run_listener(run));
    pid_t pid;

    psc__ipc_token_format(psc__ipc_run_token(run), hex);
    snprintf(r, sizeof(r), "%d", rank);
    snprintf(nr, sizeof(nr), "%d", n);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *argv[] = {(char *)IPC_TEST_WORKER, (char *)"--args", (char *)path, hex, r, nr, NULL};

        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static void test_workers_started_elsewhere(void **state)
{
    psc_ipc_run_t *run = NULL;
    psc_ipc_err_t e = {0};
    psc_ipc_msg_t m;
    pid_t pids[2];
    char want[96];
    int status, before = psc_test_open_fds();

    (void)state;
    assert_int_equal(psc__ipc_run_listen(2, &run, &e), PSC_OK);
    for (int i = 0; i < 2; i++)
        pids[i] = start_elsewhere(run, i, 2);
    assert_int_equal(psc__ipc_run_connect(run, psc__ipc_deadline(10000), &e), PSC_OK);
    assert_int_equal(psc__ipc_run_pid(run, 1), 0);
    snprintf(want, sizeof(want), "worker 1 (pid %ld)", (long)pids[1]);
    assert_string_equal(psc__ipc_chan_peer(psc__ipc_run_chan(run, 1)), want);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(psc__ipc_run_send(run, i, PSC_IPC_REQUEST, 0, "echo hi", 7, NULL, 0, psc__ipc_deadline(5000),
                                           &e), PSC_OK);
        assert_int_equal(psc__ipc_run_recv(run, i, &m, NULL, psc__ipc_deadline(5000), &e), PSC_OK);
        assert_memory_equal(m.payload, "hi", 2);
    }
    assert_int_equal(psc__ipc_run_finish(run, psc__ipc_deadline(5000), &e), PSC_OK);
    psc__ipc_run_destroy(run, 1000);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }

    /* One that ends mid-run is seen by its closed connection, named. */
    assert_int_equal(psc__ipc_run_listen(1, &run, &e), PSC_OK);
    pids[0] = start_elsewhere(run, 0, 1);
    assert_int_equal(psc__ipc_run_connect(run, psc__ipc_deadline(10000), &e), PSC_OK);
    assert_int_equal(psc__ipc_run_send(run, 0, PSC_IPC_REQUEST, 0, "exit 3", 6, NULL, 0, psc__ipc_deadline(5000), &e),
                     PSC_OK);
    snprintf(want, sizeof(want), "worker 0 (pid %ld): closed the connection", (long)pids[0]);
    expect_error(psc__ipc_run_recv(run, -1, &m, NULL, psc__ipc_deadline(5000), &e), &e, PSC_ERR_IO, want);
    psc__ipc_run_destroy(run, 1000);
    assert_int_equal(waitpid(pids[0], &status, 0), pids[0]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    assert_int_equal(psc_test_open_fds(), before);
}

/*
 * When the parent dies, its workers die with it (PR_SET_PDEATHSIG): no
 * orphan. This test is the subreaper of the run's parent, so the orphaned
 * worker comes to it and is reaped here, with how it ended.
 */
static void test_no_orphan_when_the_parent_dies(void **state)
{
    int report[2], status = 0;
    pid_t parent, worker = -1, r = 0;
    char dir[108] = "", sock[128];

    (void)state;
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    assert_int_equal(pipe2(report, O_CLOEXEC), 0);
    parent = fork();
    assert_true(parent >= 0);
    if (parent == 0) {
        /* A worker that never connects: nothing but the death signal would end it. */
        static const char *const argv[] = {IPC_TEST_WORKER, "no-connect", NULL};
        psc_ipc_run_t *run = NULL;
        pid_t w;

        close(report[0]);
        if (psc__ipc_run_start(1, argv, &run, NULL) != PSC_OK)
            _exit(1);
        w = psc__ipc_run_pid(run, 0);
        (void)!write(report[1], &w, sizeof(w));
        (void)!write(report[1], psc__ipc_listener_dir(psc__ipc_run_listener(run)), sizeof(dir));
        for (;;)
            pause(); /* until killed, without ending the run */
    }
    close(report[1]);
    assert_int_equal(read(report[0], &worker, sizeof(worker)), (ssize_t)sizeof(worker));
    assert_int_equal(read(report[0], dir, sizeof(dir)), (ssize_t)sizeof(dir));
    dir[sizeof(dir) - 1] = '\0';
    close(report[0]);
    assert_int_equal(kill(parent, SIGKILL), 0);
    assert_int_equal(waitpid(parent, NULL, 0), parent);
    /* Killed, the parent could not remove its run directory: done here. */
    assert_true(snprintf(sock, sizeof(sock), "%s/" PSC_IPC_SOCKET_NAME, dir) < (int)sizeof(sock));
    assert_int_equal(unlink(sock), 0);
    assert_int_equal(rmdir(dir), 0);
    /* Bounded: a worker left running is killed here, and the test fails. */
    for (int i = 0; i < 500 && r == 0; i++) {
        r = waitpid(worker, &status, WNOHANG);
        if (r == 0)
            poll(NULL, 0, 10);
    }
    if (r == 0) {
        kill(worker, SIGKILL);
        waitpid(worker, NULL, 0);
    }
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
    assert_int_equal(r, worker);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_echo_and_normal_end),
        cmocka_unit_test(test_told_where_and_who),
        cmocka_unit_test(test_worker_starts_clean),
        cmocka_unit_test(test_descriptors_both_ways),
        cmocka_unit_test(test_deaths_named_pidfd),
        cmocka_unit_test(test_deaths_named_polling),
        cmocka_unit_test(test_error_from_a_worker),
        cmocka_unit_test(test_sending_to_a_dead_worker),
        cmocka_unit_test(test_death_before_connecting),
        cmocka_unit_test(test_never_connecting_times_out_and_is_killed),
        cmocka_unit_test(test_stubborn_worker_killed_after_grace),
        cmocka_unit_test(test_finish_names_a_worker_that_stays),
        cmocka_unit_test(test_program_refused),
        cmocka_unit_test(test_stranger_during_connect),
        cmocka_unit_test(test_workers_started_elsewhere),
        cmocka_unit_test(test_no_orphan_when_the_parent_dies),
    };

    /* A worker's death must never end this process through SIGPIPE. */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
