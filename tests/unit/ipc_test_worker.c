/*
 * A worker for test_ipc_workers: connects with the worker-side helper
 * (from its environment, or from "--args SOCKET TOKEN RANK NRANKS"), then
 * answers REQUESTs until BYE. A REQUEST's payload is a command:
 *   echo TEXT    REPLY with TEXT
 *   whoami       REPLY "rank nranks socket token" from its configuration, then its arguments
 *   state        REPLY "fds=0,1,2, stdin=/dev/null sigpipe=default usr1=open" (its socket left out)
 *   memfd N      FD: a memfd of N bytes, byte i = (i * 7 + rank) & 0xff, payload "N"
 *   exit N       exit with status N
 *   abort        abort()
 *   sigkill      SIGKILL itself
 *   block        REPLY "blocking", then wait until killed
 *   noterm       ignore SIGTERM, REPLY "blocking", then wait until killed
 *   error        send ERROR "the test asked for an error", exit 1
 * An FD message is answered with a REPLY of the bytes read back through the descriptor.
 * Modes before connecting (argv[1]): "exit-early N" exits with N, "no-connect" waits until killed,
 * "ignore-bye" connects and then never leaves on BYE, "wait-fifo PATH" reads the FIFO to its end first.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "proc/workers.h"

static void block_forever(void)
{
    for (;;)
        pause();
}

static int fail(const char *what, const psc_ipc_err_t *e)
{
    fprintf(stderr, "ipc_test_worker: %s: %s\n", what, e->msg);
    return 2;
}

int main(int argc, char **argv)
{
    psc_ipc_worker_conf_t conf;
    psc_ipc_err_t e = {0};
    psc_ipc_chan_t *c = NULL;
    int ignore_bye = 0;

    if (argc >= 3 && strcmp(argv[1], "exit-early") == 0)
        return atoi(argv[2]);
    if (argc >= 2 && strcmp(argv[1], "no-connect") == 0)
        block_forever();
    ignore_bye = argc >= 2 && strcmp(argv[1], "ignore-bye") == 0;
    if (argc >= 3 && strcmp(argv[1], "wait-fifo") == 0) {
        char b;
        int fd = open(argv[2], O_RDONLY | O_CLOEXEC);

        while (fd >= 0 && read(fd, &b, 1) > 0)
            ;
        if (fd >= 0)
            close(fd);
    }
    if (argc >= 6 && strcmp(argv[1], "--args") == 0) {
        if (psc__ipc_worker_conf_parse(&conf, argv[2], argv[3], argv[4], argv[5], &e) != PSC_OK)
            return fail("arguments", &e);
    } else if (psc__ipc_worker_conf_env(&conf, &e) != PSC_OK) {
        return fail("environment", &e);
    }
    if (psc__ipc_worker_connect(&conf, psc__ipc_deadline(10000), &c, &e) != PSC_OK)
        return fail("connect", &e);
    for (;;) {
        psc_ipc_msg_t m;
        char cmd[256], reply[1024];
        int64_t dl = psc__ipc_deadline(10000);

        if (psc__ipc_recv(c, &m, psc__ipc_deadline(60000), &e) != PSC_OK)
            return e.st == PSC_ERR_IO ? 6 : fail("receive", &e); /* the parent ended the run: quietly */
        if (m.type == PSC_IPC_BYE) {
            if (ignore_bye)
                block_forever();
            psc__ipc_chan_close(c);
            return 0;
        }
        if (m.type == PSC_IPC_FD) {
            ssize_t n = pread(m.fds[0], reply, sizeof(reply), 0);

            psc__ipc_msg_close_fds(&m);
            if (n < 0 || psc__ipc_send(c, PSC_IPC_REPLY, 0, reply, (uint32_t)n, NULL, 0, dl, &e) != PSC_OK)
                return fail("reply to FD", &e);
            continue;
        }
        if (m.type != PSC_IPC_REQUEST)
            return 3;
        snprintf(cmd, sizeof(cmd), "%.*s", (int)m.len, (const char *)m.payload);
        if (strncmp(cmd, "echo ", 5) == 0) {
            if (psc__ipc_send(c, PSC_IPC_REPLY, 0, cmd + 5, (uint32_t)strlen(cmd + 5), NULL, 0, dl, &e) != PSC_OK)
                return fail("echo", &e);
        } else if (strcmp(cmd, "state") == 0) {
            /* What it inherited: descriptors, stdin, SIGPIPE's disposition, blocked signals. */
            struct sigaction sa;
            sigset_t mask;
            char link[256] = "";
            size_t o = (size_t)snprintf(reply, sizeof(reply), "fds=");
            DIR *d = opendir("/proc/self/fd");
            struct dirent *de;

            while (d && (de = readdir(d)))
                if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d) && atoi(de->d_name) != psc__ipc_chan_fd(c) &&
                    o < sizeof(reply) - 16)
                    o += (size_t)snprintf(reply + o, sizeof(reply) - o, "%s,", de->d_name);
            if (d)
                closedir(d);
            if (readlink("/proc/self/fd/0", link, sizeof(link) - 1) < 0)
                link[0] = '\0';
            sigaction(SIGPIPE, NULL, &sa);
            sigprocmask(SIG_SETMASK, NULL, &mask);
            o += (size_t)snprintf(reply + o, sizeof(reply) - o, " stdin=%s sigpipe=%s usr1=%s", link,
                                  sa.sa_handler == SIG_IGN ? "ignored" : "default",
                                  sigismember(&mask, SIGUSR1) ? "blocked" : "open");
            if (psc__ipc_send(c, PSC_IPC_REPLY, 0, reply, (uint32_t)o, NULL, 0, dl, &e) != PSC_OK)
                return fail("state", &e);
        } else if (strcmp(cmd, "whoami") == 0) {
            char hex[PSC_IPC_TOKEN_HEX];
            size_t o;

            psc__ipc_token_format(&conf.token, hex);
            o = (size_t)snprintf(reply, sizeof(reply), "%d %d %s %s", conf.rank, conf.nranks, conf.path, hex);
            for (int i = 1; i < argc && o < sizeof(reply); i++)
                o += (size_t)snprintf(reply + o, sizeof(reply) - o, " %s", argv[i]);
            if (o >= sizeof(reply))
                o = sizeof(reply) - 1;
            if (psc__ipc_send(c, PSC_IPC_REPLY, 0, reply, (uint32_t)o, NULL, 0, dl, &e) != PSC_OK)
                return fail("whoami", &e);
        } else if (strncmp(cmd, "memfd ", 6) == 0) {
            int n = atoi(cmd + 6), fd = memfd_create("ipc-test", MFD_CLOEXEC);
            unsigned char *b = malloc((size_t)n);

            if (fd < 0 || !b)
                return 4;
            for (int i = 0; i < n; i++)
                b[i] = (unsigned char)((i * 7 + conf.rank) & 0xff);
            if (write(fd, b, (size_t)n) != n)
                return 4;
            free(b);
            if (psc__ipc_send(c, PSC_IPC_FD, 0, cmd + 6, (uint32_t)strlen(cmd + 6), &fd, 1, dl, &e) != PSC_OK)
                return fail("memfd", &e);
            close(fd);
        } else if (strncmp(cmd, "exit ", 5) == 0) {
            exit(atoi(cmd + 5));
        } else if (strcmp(cmd, "abort") == 0) {
            /* No core file from a test (a core_pattern pipe ignores RLIMIT_CORE; this it does not). */
            prctl(PR_SET_DUMPABLE, 0);
            abort();
        } else if (strcmp(cmd, "sigkill") == 0) {
            raise(SIGKILL);
        } else if (strcmp(cmd, "block") == 0 || strcmp(cmd, "noterm") == 0) {
            if (strcmp(cmd, "noterm") == 0)
                signal(SIGTERM, SIG_IGN);
            if (psc__ipc_send(c, PSC_IPC_REPLY, 0, "blocking", 8, NULL, 0, dl, &e) != PSC_OK)
                return fail("block", &e);
            block_forever();
        } else if (strcmp(cmd, "error") == 0) {
            psc__ipc_send_error(c, "the test asked for an error", dl, &e);
            return 1;
        } else {
            return 5;
        }
    }
}
