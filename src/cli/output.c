/* What every command does at its end: stamp the JSON run and write it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/text.h"

double psc_cli_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int psc_cli_stdout_errno;

int psc_cli_exit_of(psc_status_t st, int otherwise)
{
    return st == PSC_OK ? PSC_EXIT_OK : st == PSC_ERR_NO_MEMORY ? PSC_EXIT_NO_MEMORY : otherwise;
}

int psc_cli_same_file(const char *x, const char *y)
{
    struct stat a, b;

    if (!x || !y || stat(x, &a) != 0 || stat(y, &b) != 0)
        return 0;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int psc_cli_write_json(const json_t *doc, const psc_cli_opts_t *o)
{
    const int to_stdout = !o->json_path || strcmp(o->json_path, "-") == 0;
    psc_status_t st;
    char err[512];

    if (!doc) {
        psc_report_printf(stderr, "p2pscope: out of host memory: the JSON results are incomplete and were not written\n");
        return PSC_EXIT_NO_MEMORY;
    }
    fflush(stdout); /* tables first, when the JSON goes to /dev/stdout too */
    st = psc_json_write(doc, o->json_path, err, sizeof(err));
    if (st != PSC_OK) {
        if (to_stdout && ferror(stdout)) /* main reports a failed stdout, once */
            psc_cli_stdout_errno = errno;
        else
            psc_report_printf(stderr, "p2pscope: %s\n", err);
        return psc_cli_exit_of(st, PSC_EXIT_FAILED);
    }
    return PSC_EXIT_OK;
}

json_t *psc_cli_run_begin(psc_context_t *ctx, const psc_cli_opts_t *o, const char *command,
                          const psc_device_info_t *info, int n, psc_system_info_t *sys)
{
    psc_system_info(ctx, sys);
    if (psc_cli_tables(o))
        psc_render_devices(stdout, sys, info, n);
    return o->json ? psc_json_run_new(command, sys, info, n) : NULL;
}

/*
 * The run's start (the document is made once the GPUs are known, after bw's and lat's measurements) and the
 * words typed, as the page shows them (render draws the page again from the run).
 */
static void psc__stamp_start(json_t *run, const psc_cli_opts_t *o, double wall_s)
{
    const char *command = json_string_value(json_object_get(run, "command"));
    char *line = command ? psc_cli_command_line(command, o) : NULL, when[32];

    psc_cli_started_utc(wall_s, when, sizeof(when));
    psc_json_run_set(run, "started_utc", psc_json_str(when));
    psc_json_run_set(run, "command_line", line ? psc_json_str(line) : NULL); /* NULL: incomplete, not written */
    free(line);
}

int psc_cli_write_run(json_t *run, const psc_cli_opts_t *o, double wall_s, int rc)
{
    int wrc;

    if (!run)
        return rc;
    psc__stamp_start(run, o, wall_s);
    if (psc_json_run_finish(run, wall_s, rc) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: out of host memory: the JSON results are incomplete and were not written\n");
        return PSC_EXIT_NO_MEMORY;
    }
    wrc = psc_cli_write_json(run, o);
    return wrc != PSC_EXIT_OK ? wrc : rc;
}
