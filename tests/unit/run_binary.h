/*
 * For the tests that run the real p2pscope binary (P2PSCOPE_BIN): run it with
 * arguments and added environment, capture its exit code, stdout and stderr,
 * and expect a one-line error. A crash or a hang (60 s) fails the test.
 */
#ifndef PSC_TESTS_RUN_BINARY_H
#define PSC_TESTS_RUN_BINARY_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P2PSCOPE_BIN
#error "P2PSCOPE_BIN must name the binary under test"
#endif

typedef struct {
    int rc;
    char *out, *err;
} psc__run_t;

static inline char *psc__slurp(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    ssize_t n;

    lseek(fd, 0, SEEK_SET);
    while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 2)
            buf = realloc(buf, cap *= 2);
    }
    buf[len] = '\0';
    close(fd);
    return buf;
}

/* Run the binary with args; env is "NAME=value" pairs (NULL-terminated) added to ours; stdout to stdout_path if set. */
static inline psc__run_t psc__run_to(const char *const *args, const char *const *env, const char *stdout_path)
{
    char outp[] = "/tmp/psc-out-XXXXXX", errp[] = "/tmp/psc-err-XXXXXX";
    int fo = mkstemp(outp), fe = mkstemp(errp), status = 0;
    char *argv[32] = {P2PSCOPE_BIN};
    psc__run_t r;
    pid_t pid;

    assert_true(fo >= 0 && fe >= 0);
    unlink(outp);
    unlink(errp);
    for (int i = 0; args[i]; i++) {
        assert_true(i < 30); /* more would be dropped silently: a test's mistake */
        argv[i + 1] = (char *)args[i];
    }
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        if (stdout_path) {
            int fd = open(stdout_path, O_WRONLY);

            if (fd < 0)
                _exit(126);
            dup2(fd, fo);
        }
        alarm(60); /* a hang fails the test instead of holding it */
        dup2(fo, 1);
        dup2(fe, 2);
        execv(P2PSCOPE_BIN, argv);
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status)); /* never a crash */
    r.rc = WEXITSTATUS(status);
    r.out = psc__slurp(fo);
    r.err = psc__slurp(fe);
    return r;
}

static inline psc__run_t psc__run(const char *const *args, const char *const *env)
{
    return psc__run_to(args, env, NULL);
}

static inline int psc__lines(const char *s)
{
    int n = 0;

    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static inline void psc__free(psc__run_t *r)
{
    free(r->out);
    free(r->err);
}

/* One line on stderr containing want, nothing on stdout, the exit code. */
static inline void psc__expect_error(const char *const *args, const char *const *env, int rc, const char *want)
{
    psc__run_t r = psc__run(args, env);

    if (r.rc != rc || !strstr(r.err, want) || psc__lines(r.err) != 1)
        fprintf(stderr, "rc=%d stderr=%s", r.rc, r.err);
    assert_int_equal(r.rc, rc);
    assert_non_null(strstr(r.err, want));
    assert_int_equal(psc__lines(r.err), 1);
    assert_string_equal(r.out, "");
    psc__free(&r);
}

#endif
