/* What every command does at its end: stamp the JSON run and write it. */
#include <stdio.h>
#include <time.h>

#include "cli.h"
#include "report/json.h"

double psc_cli_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int psc_cli_write_run(json_t *run, const psc_cli_opts_t *o, double wall_s, int rc)
{
    char err[512];

    if (!run)
        return rc;
    psc_json_run_finish(run, wall_s, rc);
    fflush(stdout); /* tables first, when the JSON goes to /dev/stdout too */
    if (psc_json_write(run, o->json_path, err, sizeof(err)) != PSC_OK) {
        fprintf(stderr, "p2pscope: %s\n", err);
        return PSC_EXIT_FAILED;
    }
    return rc;
}
