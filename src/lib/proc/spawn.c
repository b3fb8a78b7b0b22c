/* Starting one child program as a run's workers start (spawn.h): fork, async-signal-safe setup, execve. */
#define _GNU_SOURCE
#include "proc/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define PSC__CLOSE_RANGE_CLOEXEC (1u << 2) /* linux/close_range.h, Linux 5.11 */

int psc__ipc_no_pidfd;

/* arg with each placeholder replaced; malloc'd, NULL without memory. */
static char *psc__subst(const char *arg, const psc_ipc_kv_t *subst, int n)
{
    size_t cap = strlen(arg) + 1, o = 0;
    char *out;

    for (const char *p = arg; *p;) {
        int hit = 0;

        for (int k = 0; k < n && !hit; k++)
            if (subst[k].name[0] && strncmp(p, subst[k].name, strlen(subst[k].name)) == 0) {
                cap += strlen(subst[k].value);
                p += strlen(subst[k].name);
                hit = 1;
            }
        if (!hit)
            p++;
    }
    out = malloc(cap);
    if (!out)
        return NULL;
    for (const char *p = arg; *p;) {
        int hit = 0;

        for (int k = 0; k < n && !hit; k++)
            if (subst[k].name[0] && strncmp(p, subst[k].name, strlen(subst[k].name)) == 0) {
                memcpy(out + o, subst[k].value, strlen(subst[k].value));
                o += strlen(subst[k].value);
                p += strlen(subst[k].name);
                hit = 1;
            }
        if (!hit)
            out[o++] = *p++;
    }
    out[o] = '\0';
    return out;
}

static void psc__free_strv(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

/* The child's argv and environment, made before fork: the child may only call async-signal-safe functions. */
static psc_status_t psc__vectors(const char *const *argv, const psc_ipc_kv_t *subst, int nsubst,
                                 const psc_ipc_kv_t *env, int nenv, const char *who, char ***av, char ***ev,
                                 psc_ipc_err_t *err)
{
    size_t na = 0, ne = 0, k = 0;
    char **a = NULL, **e = NULL;

    while (argv[na])
        na++;
    while (environ && environ[ne])
        ne++;
    a = calloc(na + 1, sizeof(*a));
    e = calloc(ne + (size_t)nenv + 1, sizeof(*e));
    if (!a || !e)
        goto nomem;
    for (size_t i = 0; i < na; i++)
        if (!(a[i] = psc__subst(argv[i], subst, nsubst)))
            goto nomem;
    for (size_t i = 0; i < ne; i++) {
        int replaced = 0;

        for (int v = 0; v < nenv; v++) {
            size_t l = strlen(env[v].name);

            replaced |= strncmp(environ[i], env[v].name, l) == 0 && environ[i][l] == '=';
        }
        if (!replaced && !(e[k++] = strdup(environ[i])))
            goto nomem;
    }
    for (int v = 0; v < nenv; v++) {
        size_t l = strlen(env[v].name) + strlen(env[v].value) + 2;

        if (!(e[k] = malloc(l)))
            goto nomem;
        snprintf(e[k++], l, "%s=%s", env[v].name, env[v].value);
    }
    *av = a;
    *ev = e;
    return PSC_OK;
nomem:
    psc__free_strv(a);
    psc__free_strv(e);
    return psc__ipc_fail(err, PSC_ERR_NO_MEMORY, "no memory for %s's arguments", who);
}

/* In the child, between fork and execve: async-signal-safe calls only. */
static void __attribute__((noreturn)) psc__child(pid_t parent, int devnull, int errfd, int maxfd, char **av, char **ev)
{
    struct sigaction dfl;
    sigset_t none;
    int e;

    /* Dies with the parent; the parent may have died before this line. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
        e = ESRCH;
        (void)!write(errfd, &e, sizeof(e));
        _exit(127);
    }
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    /* Ignored signals stay ignored across exec, and so does the mask: the child starts clean. */
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (devnull >= 0)
        dup2(devnull, STDIN_FILENO);
    /* The caller's other descriptors (a GPU driver's, a socket) are no business of the child's. */
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, PSC__CLOSE_RANGE_CLOEXEC) == 0)
        maxfd = 3;
#endif
    for (int fd = 3; fd < maxfd; fd++)
        if (fd != errfd) {
            int fl = fcntl(fd, F_GETFD);

            if (fl >= 0 && !(fl & FD_CLOEXEC))
                fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
        }
    execve(av[0], av, ev);
    e = errno;
    (void)!write(errfd, &e, sizeof(e));
    _exit(127);
}

/* Descriptors the child looks at without close_range: up to the limit, bounded (higher ones are a rare caller's). */
static int psc__max_fd(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536)
        return 65536;
    return (int)rl.rlim_cur;
}

psc_status_t psc__ipc_spawn(const char *const *argv, const psc_ipc_kv_t *subst, int nsubst, const psc_ipc_kv_t *env,
                            int nenv, const char *who, pid_t *pid_out, int *pidfd_out, psc_ipc_err_t *err)
{
    char **av = NULL, **ev = NULL;
    int pipefd[2] = {-1, -1}, child_errno = 0, maxfd = psc__max_fd(), devnull = -1;
    pid_t parent = getpid(), pid;
    psc_status_t st;
    ssize_t got;

    if (!argv || !argv[0] || !strchr(argv[0], '/'))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "%s: program %s: accepted a path with a '/'", who,
                             argv && argv[0] ? argv[0] : "(none)");
    st = psc__vectors(argv, subst, nsubst, env, nenv, who, &av, &ev, err);
    if (st != PSC_OK)
        return st;
    devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        st = psc__ipc_fail(err, PSC_ERR_IO, "%s: pipe: %s", who, strerror(errno));
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        st = psc__ipc_fail(err, PSC_ERR_IO, "%s: fork: %s", who, strerror(errno));
        goto out;
    }
    if (pid == 0)
        psc__child(parent, devnull, pipefd[1], maxfd, av, ev);
    close(pipefd[1]);
    pipefd[1] = -1;
    /* EOF: execve succeeded (the pipe closed on exec); an errno: it failed, and the child ends at once. */
    do
        got = read(pipefd[0], &child_errno, sizeof(child_errno));
    while (got < 0 && errno == EINTR);
    if (got > 0) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        st = psc__ipc_fail(err, PSC_ERR_IO, "%s: cannot execute %s: %s", who, argv[0],
                           child_errno == ESRCH ? "the parent ended as it started" : strerror(child_errno));
        goto out;
    }
    *pid_out = pid;
    *pidfd_out = -1;
#ifdef SYS_pidfd_open
    if (!psc__ipc_no_pidfd)
        *pidfd_out = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
out:
    if (devnull >= 0)
        close(devnull);
    if (pipefd[0] >= 0)
        close(pipefd[0]);
    if (pipefd[1] >= 0)
        close(pipefd[1]);
    psc__free_strv(av);
    psc__free_strv(ev);
    return st;
}
