/* What every command does at its end: stamp the JSON run and write it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "report/json.h"

double psc_cli_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int psc_cli_stdout_errno;

int psc_cli_write_json(const json_t *doc, const psc_cli_opts_t *o)
{
    const int to_stdout = !o->json_path || strcmp(o->json_path, "-") == 0;
    char err[512];

    if (!doc) {
        fprintf(stderr, "p2pscope: out of host memory: the JSON results are incomplete and were not written\n");
        return PSC_EXIT_FAILED;
    }
    fflush(stdout); /* tables first, when the JSON goes to /dev/stdout too */
    if (psc_json_write(doc, o->json_path, err, sizeof(err)) != PSC_OK) {
        if (to_stdout && ferror(stdout)) /* main reports a failed stdout, once */
            psc_cli_stdout_errno = errno;
        else
            fprintf(stderr, "p2pscope: %s\n", err);
        return PSC_EXIT_FAILED;
    }
    return PSC_EXIT_OK;
}

int psc_cli_write_run(json_t *run, const psc_cli_opts_t *o, double wall_s, int rc)
{
    if (!run)
        return rc;
    if (psc_json_run_finish(run, wall_s, rc) != PSC_OK) {
        fprintf(stderr, "p2pscope: out of host memory: the JSON results are incomplete and were not written\n");
        return PSC_EXIT_FAILED;
    }
    return psc_cli_write_json(run, o) != PSC_EXIT_OK ? PSC_EXIT_FAILED : rc;
}
