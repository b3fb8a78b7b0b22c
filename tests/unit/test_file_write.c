/*
 * psc_write_file_atomic: regular files replaced atomically with their mode,
 * symlinks written through, devices, FIFOs and /dev/stdout written in place,
 * the umask left alone. Writes to a device node of its own as root, never
 * to /dev/null (see null_device.h).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "scratch_dir.h"

#include "null_device.h"

#include "p2pscope/bench.h"
#include "p2pscope_private.h"

static char err[512];

static int psc__setup(void **state)
{
    (void)state;
    return psc_scratch_make("psc-file");
}

static int psc__teardown(void **state)
{
    (void)state;
    return psc_scratch_remove();
}

static void psc__expect_content(const char *path, const char *want)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_string_equal(buf, want);
}

static void psc__write(const char *path, const char *text)
{
    err[0] = '\0';
    if (psc_write_file_atomic(path, text, strlen(text), err, sizeof(err)) != PSC_OK)
        fprintf(stderr, "%s\n", err);
    assert_string_equal(err, "");
}

static void test_regular_file_keeps_its_mode(void **state)
{
    const char *p = psc__path("private.json");
    struct stat sb;
    int fd;

    (void)state;
    fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(fchmod(fd, 0600), 0);
    assert_int_equal(write(fd, "old old old", 11), 11);
    close(fd);
    psc__write(p, "new");
    psc__expect_content(p, "new");
    assert_int_equal(stat(p, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(sb.st_mode & 07777, 0600);
    assert_int_equal(sb.st_uid, geteuid());
    assert_int_equal(psc_scratch_entries(psc__dir), 1); /* no temporary left beside it */
}

static void test_new_file_gets_umask_mode(void **state)
{
    const mode_t masks[] = {022, 077};
    struct stat sb;

    (void)state;
    for (size_t i = 0; i < 2; i++) {
        const char *p = psc__path(i ? "new077" : "new022");
        mode_t saved = umask(masks[i]), now;

        psc__write(p, "x");
        now = umask(saved);
        assert_int_equal(now, masks[i]); /* the call left the umask as it found it */
        assert_int_equal(stat(p, &sb), 0);
        assert_int_equal(sb.st_mode & 07777, 0666 & ~masks[i]);
    }
}

static void test_symlink_is_written_through(void **state)
{
    char target[256];
    struct stat sb;

    (void)state;
    assert_int_equal(mkdir(psc__path("real"), 0700), 0);
    psc__write(psc__path("real/out.json"), "old");
    assert_int_equal(chmod(psc__path("real/out.json"), 0640), 0);
    assert_int_equal(symlink("real/out.json", psc__path("link.json")), 0);
    psc__write(psc__path("link.json"), "through");
    assert_int_equal(lstat(psc__path("link.json"), &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_equal(readlink(psc__path("link.json"), target, sizeof(target)), 13);
    psc__expect_content(psc__path("real/out.json"), "through");
    assert_int_equal(stat(psc__path("real/out.json"), &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0640);
    assert_int_equal(psc_scratch_entries(psc__path("real")), 1);

    /* A dangling link makes its target. */
    assert_int_equal(symlink("real/later.json", psc__path("dangling.json")), 0);
    psc__write(psc__path("dangling.json"), "made");
    assert_int_equal(lstat(psc__path("dangling.json"), &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    psc__expect_content(psc__path("real/later.json"), "made");
}

static void test_fifo_is_written_in_place(void **state)
{
    const char *p = psc__path("fifo");
    char got[64] = "";
    struct stat sb;
    ssize_t n;
    int rd;

    (void)state;
    assert_int_equal(mkfifo(p, 0600), 0);
    /* No reader: an error saying so, at once, not a hang. */
    assert_int_equal(psc_write_file_atomic(p, "x", 1, err, sizeof(err)), PSC_ERR_IO);
    assert_non_null(strstr(err, "no process is reading it"));
    assert_int_equal(stat(p, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));

    /* We are the reader; a few bytes fit the pipe's buffer, so no second process is needed. */
    rd = open(p, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    psc__write(p, "through the fifo");
    n = read(rd, got, sizeof(got) - 1);
    close(rd);
    assert_int_equal(n, 16);
    got[n] = '\0';
    assert_string_equal(got, "through the fifo");
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    assert_int_equal(psc_scratch_entries(psc__dir), 1);
}

/* A reader that leaves mid-write is an error for the writer, not a SIGPIPE that ends the process. */
static void test_fifo_reader_leaving_is_an_error(void **state)
{
    const char *p = psc__path("fifo");
    const size_t len = 4u << 20; /* far above a pipe's buffer: the write outlives the reader */
    char *big = calloc(1, len), ready;
    int sync[2], status = 0;
    pid_t pid;

    (void)state;
    assert_non_null(big);
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(pipe(sync), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* reader: open, say so, wait for the first bytes, take one and leave */
        struct pollfd pfd = {.events = POLLIN};
        char c;

        pfd.fd = open(p, O_RDONLY | O_NONBLOCK);
        if (pfd.fd < 0 || write(sync[1], "r", 1) != 1)
            _exit(1);
        while (poll(&pfd, 1, -1) < 0)
            ;
        _exit(read(pfd.fd, &c, 1) == 1 ? 0 : 2);
    }
    close(sync[1]);
    assert_int_equal(read(sync[0], &ready, 1), 1);
    close(sync[0]);
    err[0] = '\0';
    assert_int_equal(psc_write_file_atomic(p, big, len, err, sizeof(err)), PSC_ERR_IO);
    assert_non_null(strstr(err, "Broken pipe"));
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    free(big);
}

static void test_missing_directory_fails_cleanly(void **state)
{
    (void)state;
    err[0] = '\0';
    assert_int_equal(psc_write_file_atomic(psc__path("nowhere/x.json"), "x", 1, err, sizeof(err)), PSC_ERR_IO);
    assert_non_null(strstr(err, "nowhere/x.json"));
    assert_null(strchr(err, '\n'));
    assert_int_equal(psc_scratch_entries(psc__dir), 0);
    assert_int_equal(psc_write_file_atomic(psc__dir, "x", 1, err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "is a directory"));
}

/* /dev/fd/N is the open descriptor itself, whatever it is: a socket (a journal) too. */
static void test_fd_name_is_a_socket(void **state)
{
    char path[32], buf[64];
    int sv[2];
    ssize_t n;

    (void)state;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    snprintf(path, sizeof(path), "/dev/fd/%d", sv[0]);
    psc__write(path, "to the socket");
    n = read(sv[1], buf, sizeof(buf) - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, "to the socket");
    close(sv[0]);
    close(sv[1]);
    assert_int_equal(psc_write_file_atomic("/dev/fd/999", "x", 1, err, sizeof(err)), PSC_ERR_IO);
    assert_non_null(strstr(err, "not open"));
}

/* A file name near NAME_MAX still has room for the temporary beside it. */
static void test_long_file_name(void **state)
{
    char name[256], path[512];

    (void)state;
    memset(name, 'n', 240);
    strcpy(name + 240, ".json");
    snprintf(path, sizeof(path), "%s/%s", psc__dir, name);
    psc__write(path, "long");
    psc__expect_content(path, "long");
    psc__write(path, "longer");
    psc__expect_content(path, "longer");
    assert_int_equal(psc_scratch_entries(psc__dir), 1);
}

static void test_dev_null_stays_a_device(void **state)
{
    struct stat before, after;
    char null[256];

    (void)state;
    if (psc_test_null_device(psc__dir, null, sizeof(null)) != 0)
        skip(); /* root on a nodev file system: no device that a regression could not harm */
    assert_int_equal(stat(null, &before), 0);
    assert_true(S_ISCHR(before.st_mode));
    psc__write(null, "gone");
    assert_int_equal(lstat(null, &after), 0);
    assert_true(S_ISCHR(after.st_mode));
    assert_int_equal(after.st_rdev, before.st_rdev);
    assert_int_equal(after.st_ino, before.st_ino);
    if (strcmp(null, "/dev/null") != 0)
        unlink(null);
}

/* /dev/stdout names the open file: written there, appended after what stdout already holds. */
static void test_dev_stdout_is_written_through(void **state)
{
    const char *p = psc__path("stdout.txt");
    struct stat before, after;
    int fd, status = 0;
    pid_t pid;

    (void)state;
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &before), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd, 1);
        if (write(1, "tables\n", 7) != 7)
            _exit(2);
        _exit(psc_write_file_atomic("/dev/stdout", "{}\n", 3, err, sizeof(err)) == PSC_OK ? 0 : 1);
    }
    close(fd);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    psc__expect_content(p, "tables\n{}\n");
    assert_int_equal(stat(p, &after), 0);
    assert_int_equal(after.st_ino, before.st_ino);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_regular_file_keeps_its_mode, psc__setup, psc__teardown),
        cmocka_unit_test_setup_teardown(test_new_file_gets_umask_mode, psc__setup, psc__teardown),
        cmocka_unit_test_setup_teardown(test_symlink_is_written_through, psc__setup, psc__teardown),
        cmocka_unit_test_setup_teardown(test_fifo_is_written_in_place, psc__setup, psc__teardown),
        cmocka_unit_test_setup_teardown(test_fifo_reader_leaving_is_an_error, psc__setup, psc__teardown),
        cmocka_unit_test_setup_teardown(test_missing_directory_fails_cleanly, psc__setup, psc__teardown),
        cmocka_unit_test_setup_teardown(test_long_file_name, psc__setup, psc__teardown),
        cmocka_unit_test_setup_teardown(test_fd_name_is_a_socket, psc__setup, psc__teardown),
        cmocka_unit_test_setup_teardown(test_dev_null_stays_a_device, psc__setup, psc__teardown),
        cmocka_unit_test_setup_teardown(test_dev_stdout_is_written_through, psc__setup, psc__teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
