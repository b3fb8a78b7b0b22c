/* p2pscope: parse, open the driver, run one command, map the outcome to an exit code. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "job.h"
#include "report/html_page.h"
#include "report/json.h"
#include "report/text.h"

/*
 * A symbolic link to nothing is written by making its target (the writer follows links): the target's path,
 * relative to the link's directory where it is relative, into buf; 0, or -1 when path is no dangling link.
 */
static int psc__dangling_target(const char *path, char *buf, size_t len)
{
    char target[PATH_MAX], copy[PATH_MAX];
    struct stat sb;
    ssize_t n;

    if (lstat(path, &sb) != 0 || !S_ISLNK(sb.st_mode) || stat(path, &sb) == 0)
        return -1;
    if ((n = readlink(path, target, sizeof(target) - 1)) < 0)
        return -1;
    target[n] = '\0';
    snprintf(copy, sizeof(copy), "%s", path);
    n = target[0] == '/' ? snprintf(buf, len, "%s", target) : snprintf(buf, len, "%s/%s", dirname(copy), target);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

/*
 * Refuse a JSON path that cannot be written before spending minutes measuring: a name too long, a directory or
 * socket, a parent that is no writable directory (that of a symlink's target, followed as the writer does). A
 * device or FIFO (/dev/null, /dev/stdout) is written in place.
 */
static int psc__check_json_path(const char *path, int quiet)
{
    char copy[PATH_MAX], target[PATH_MAX], *real = NULL;
    const char *dir, *why = NULL;
    struct stat sb;
    int rc = PSC_EXIT_OK;

    /* Devices and open descriptors by name (/dev/stdout, /dev/fd/N): the writer takes them as they are. */
    if (!path || strcmp(path, "-") == 0 || strncmp(path, "/dev/", 5) == 0 || strncmp(path, "/proc/", 6) == 0)
        return PSC_EXIT_OK;
    if (psc_page_name_too_long(path)) {
        if (!quiet)
            psc_report_printf(stderr, "p2pscope: cannot write %s: its name is longer than %d bytes\n", path, NAME_MAX);
        return PSC_EXIT_USAGE;
    }
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode) || S_ISSOCK(sb.st_mode)) {
            if (!quiet)
                psc_report_printf(stderr, "p2pscope: %s is a %s: accepted a file path\n", path,
                        S_ISDIR(sb.st_mode) ? "directory" : "socket");
            return PSC_EXIT_USAGE;
        }
        if (!S_ISREG(sb.st_mode))
            return PSC_EXIT_OK;
        real = realpath(path, NULL);
    }
    snprintf(copy, sizeof(copy), "%s", real ? real : psc__dangling_target(path, target, sizeof(target)) == 0 ? target
                                                                                                           : path);
    dir = dirname(copy);
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        why = "is not a directory";
    else if (access(dir, W_OK) != 0)
        why = "is missing or not writable";
    if (why) {
        if (!quiet)
            psc_report_printf(stderr, "p2pscope: cannot write %s: directory %s %s\n", path, dir, why);
        rc = PSC_EXIT_USAGE;
    }
    free(real);
    return rc;
}

/* --html FILE as --json's; --svg and --csv directories: writable, or a missing one's parent writable. */
static int psc__check_page_paths(const psc_cli_opts_t *o, int quiet)
{
    const char *dirs[2] = {o->svg_dir, o->csv_dir}, *names[2] = {"--svg", "--csv"};
    char err[512];
    int rc = psc__check_json_path(o->html_path, quiet);

    for (int k = 0; k < 2 && rc == PSC_EXIT_OK; k++)
        if (dirs[k] && psc_page_check_dir(dirs[k], names[k], err, sizeof(err)) != PSC_OK) {
            if (!quiet)
                psc_report_printf(stderr, "p2pscope: %s\n", err);
            rc = PSC_EXIT_USAGE;
        }
    return rc;
}

int psc_cli_check_devices(const psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int n = psc_device_count(ctx);

    for (int i = 0; i < o->ndev; i++) {
        if (o->devs[i] >= n) {
            psc_report_printf(stderr, "p2pscope: GPU %d does not exist: accepted 0 to %d (this machine has %d GPU%s)\n",
                    o->devs[i], n - 1, n, n == 1 ? "" : "s");
            return PSC_EXIT_USAGE;
        }
    }
    return PSC_EXIT_OK;
}

/*
 * Started by mpirun as one of several ranks: only ipc and coll run that way (rank 0
 * prints what every rank decides alike; the others stay quiet until they
 * run a worker).
 */
static int psc__main_ranks(const psc_cli_opts_t *o, psc_cli_job_t *job, int *argc, char ***argv)
{
    if (o->cmd == PSC_CMD_IPC)
        return psc_cmd_ipc_job(o, job, argc, argv);
    if (o->cmd == PSC_CMD_COLL)
        return psc_cmd_coll_job(o, job, argc, argv);
    if (job->rank == 0)
        psc_report_printf(stderr, "p2pscope: started by %s as one of %d ranks, but this command runs in one process: run it "
                "without mpirun; only `p2pscope ipc` and `p2pscope coll` run as one rank per GPU\n", job->launcher,
                job->size);
    return PSC_EXIT_USAGE;
}

/* --help (the command's page, or the general one) or --version (with the MPI the build has). */
static int psc__help_or_version(const psc_cli_opts_t *o)
{
    if (o->help) {
        if (o->cmd == PSC_CMD_COLL)
            psc_cli_usage_coll();
        else if (o->cmd == PSC_CMD_NVBW)
            psc_cli_usage_nvbw();
        else if (o->cmd == PSC_CMD_P2PBW)
            psc_cli_usage_p2pbw();
        else if (!o->cmd_given || psc_cli_usage_cmd(o->cmd) != 0)
            psc_cli_usage();
        if (ferror(stdout)) /* the text outgrew stdio's buffer: the failed write's errno, before anything resets it */
            psc_cli_stdout_errno = errno;
        return PSC_EXIT_OK;
    }
    printf("p2pscope %s\n", PSC_VERSION_STRING);
    if (psc_cli_mpi_library())
        printf("built with MPI: %s (p2pscope ipc and coll run one rank per GPU, check --fleet one per node, under its "
               "mpirun)\n",
               psc_cli_mpi_library());
    else
        printf("built without MPI (p2pscope ipc starts its own workers, coll drives every GPU from one process; "
               "mpirun and check --fleet are refused)\n");
    return PSC_EXIT_OK;
}

/* Every file and directory the run will write (--json, --save, --calibrate, the pages) is writable; quiet: no line. */
static int psc__check_out_paths(const psc_cli_opts_t *o, int quiet)
{
    int rc;

    if ((rc = psc__check_json_path(o->json_path, quiet)) != PSC_EXIT_OK ||
        (rc = psc__check_json_path(o->save, quiet)) != PSC_EXIT_OK ||
        (rc = psc__check_json_path(o->coll_json_nccl, quiet)) != PSC_EXIT_OK ||
        (rc = psc__check_json_path(o->calibrate, quiet)) != PSC_EXIT_OK)
        return rc;
    return psc__check_page_paths(o, quiet);
}

/* A command that needs the driver: a context, -d checked against it, the test hooks set, the command, no context. */
int psc_cli_run_on_driver(const psc_cli_opts_t *o)
{
    char err[512];
    psc_context_t *ctx = NULL;
    psc_status_t st;
    int rc;

    st = psc_context_create(&ctx, err, sizeof(err));
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", err);
        return psc_cli_exit_of(st, PSC_EXIT_ENV);
    }
    rc = psc_cli_check_devices(ctx, o);
    /* ipc's workers take the corruption hook from the environment (cmd_ipc); the baseline in this process stays clean. */
    if (rc == PSC_EXIT_OK && o->cmd != PSC_CMD_IPC && psc_test_hooks_set(ctx, &o->hooks) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", psc_context_last_error(ctx));
        rc = PSC_EXIT_USAGE;
    }
    if (rc == PSC_EXIT_OK)
        switch (o->cmd) {
        case PSC_CMD_DEVICES: rc = psc_cmd_devices(ctx, o); break;
        case PSC_CMD_TOPO: rc = psc_cmd_topo(ctx, o); break;
        case PSC_CMD_DOCTOR: rc = psc_cmd_doctor(ctx, o); break;
        case PSC_CMD_NVLINK: rc = psc_cmd_nvlink(ctx, o); break;
        case PSC_CMD_LAT: rc = psc_cmd_lat(ctx, o); break;
        case PSC_CMD_VERIFY: rc = psc_cmd_verify(ctx, o); break;
        case PSC_CMD_COPY: rc = psc_cmd_copy(ctx, o); break;
        case PSC_CMD_IPC: rc = psc_cmd_ipc(ctx, o); break;
        case PSC_CMD_COLL: rc = psc_cmd_coll(ctx, o); break;
        case PSC_CMD_CHECK: rc = psc_cmd_check(ctx, o); break;
        case PSC_CMD_NVBW: rc = psc_cmd_nvbw(ctx, o); break;
        case PSC_CMD_P2PBW: rc = psc_cmd_p2pbw(ctx, o); break;
        default: rc = psc_cmd_bw(ctx, o); break;
        }
    psc_context_destroy(ctx);
    return rc;
}

/* Parse; then help or version, the output paths, a rank of a job, the commands without a driver, or the driver's. */
static int psc__main(int *argcp, char ***argvp, psc_cli_job_t *job)
{
    char err[512];
    psc_cli_opts_t o;
    int rc;

    rc = psc_cli_parse(*argcp, *argvp, &o, err, sizeof(err));
    if (rc != 0) {
        if (job->rank == 0) /* every rank of a job parses the same words */
            psc_report_printf(stderr, "p2pscope: %s\n", err);
        return rc;
    }
    if ((o.help || o.version) && job->rank != 0)
        return PSC_EXIT_OK;
    psc_json_identify(o.identify);
    if (o.help || o.version)
        return psc__help_or_version(&o);
    /* The ranks of a job check alike (one node); rank 0 says it. */
    if ((rc = psc__check_out_paths(&o, job->rank != 0)) != PSC_EXIT_OK)
        return rc;
    if (o.fleet) /* one rank per node, or a fleet of this node alone */
        return psc_cmd_check_fleet(&o, job, argcp, argvp);
    if (job->size > 1)
        return psc__main_ranks(&o, job, argcp, argvp);
    if (o.cmd == PSC_CMD_NVBW && o.nvbw.list) /* nvbandwidth -l: its names, no driver */
        return psc_cmd_nvbw_list();
    if (o.cmd == PSC_CMD_LAT && o.list_tests)
        return psc_cmd_lat_list(&o);
    if (o.cmd == PSC_CMD_LIST || o.list_tests)
        return psc_cmd_list(&o);
    if (o.cmd == PSC_CMD_COMPARE) /* files only: no driver */
        return psc_cmd_compare(&o);
    if (o.cmd == PSC_CMD_RENDER) /* a file only: no driver */
        return psc_cmd_render(&o);
    if (o.topology)
        return o.cmd == PSC_CMD_TOPO ? psc_cmd_topo(NULL, &o)
               : o.cmd == PSC_CMD_NVLINK ? psc_cmd_nvlink(NULL, &o)
               : o.cmd == PSC_CMD_DEVICES ? psc_cmd_devices(NULL, &o) : psc_cmd_doctor(NULL, &o);
    return psc_cli_run_on_driver(&o);
}

/* Output that did not reach stdout (a full disk, a closed pipe) is a failed run, not a silent 0. */
int main(int argc, char **argv)
{
    psc_cli_job_t job;
    int rc, failed;

    /* A worker psc_ipc_run started (this program again): its own life, before any parsing or context. */
    if (argc > 1 && strcmp(argv[1], PSC_IPC_WORKER_ARG) == 0)
        return psc_ipc_worker_main();
    /* A file-size limit (ulimit -f) makes a write fail with EFBIG, which the writers report and clean up after
     * (no temporary file left), rather than kill the process mid-write. */
    signal(SIGXFSZ, SIG_IGN);
    psc_cli_job_detect(&job);
    rc = psc__main(&argc, &argv, &job);
    failed = ferror(stdout);

    errno = 0;
    if (fclose(stdout) != 0 || failed) {
        int e = errno ? errno : psc_cli_stdout_errno;

        psc_report_printf(stderr, "p2pscope: cannot write to standard output%s%s\n", e ? ": " : "", e ? strerror(e) : "");
        if (rc == PSC_EXIT_OK)
            rc = PSC_EXIT_FAILED;
    }
    return rc;
}
