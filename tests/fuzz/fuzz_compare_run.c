/* Fuzz compare's run loader (p2pscope compare A.json B.json, psc_cmp_run_load) and every user of what it reads. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "report/compare.h"

/* A run that loads is compared with itself: nothing differs, nothing fails; rendered and written as JSON. */
static void psc__use(const psc_cmp_run_t *run)
{
    psc_compare_t *c = NULL;
    char err[512];
    FILE *devnull;
    json_t *doc;

    if (psc_compare(run, run, 0.0, &c, err, sizeof(err)) != PSC_OK)
        return; /* out of memory only: a run is always comparable with itself */
    if (c->ndiffs != 0 || c->nfailed != 0 || c->nonly_a != 0 || c->nonly_b != 0) {
        fprintf(stderr, "fuzz_compare_run: a run against itself: %zu differences, %zu failed, %zu/%zu alone\n",
                c->ndiffs, c->nfailed, c->nonly_a, c->nonly_b);
        abort();
    }
    if ((devnull = fopen("/dev/null", "w"))) {
        psc_render_compare(devnull, c);
        fclose(devnull);
    }
    doc = psc_json_compare(c, 0);
    json_decref(doc);
    psc_compare_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = psc_fuzz_write_file("run.json", data, size);
    psc_cmp_run_t *run = NULL;
    char err[512] = "";

    if (path && psc_cmp_run_load(path, &run, err, sizeof(err)) == PSC_OK) {
        psc__use(run);
        psc_cmp_run_free(run);
    } else if (strchr(err, '\n')) {
        abort(); /* a reason is one line */
    }
    return 0;
}
