/*
 * Fuzz the loaders of a JSON run: compare's (p2pscope compare A.json B.json, psc_cmp_run_load) and render's
 * (p2pscope render RUN.json, psc_run_doc_load), and every user of what they read: the comparison (its text,
 * JSON and page), and the run's page, its figures and its CSV tables drawn in memory.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "report/compare.h"
#include "report/html_page.h"
#include "report/run_load.h"

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
    psc_compare_page_write(c, 0, "/dev/null", NULL, err, sizeof(err)); /* the page, written in place */
    psc_compare_free(c);
}

/* A run render loads is drawn as the page, the figures and the tables would be, in memory. */
static void psc__draw(const psc_run_doc_t *r)
{
    psc_page_t p;
    size_t n = 0;
    psc_csv_file_t *csv;

    psc_run_doc_page(r, &p);
    csv = psc_csv_render(&p, &n);
    psc_csv_free(csv, n);
#ifdef P2PSCOPE_HAVE_CAIRO
    {
        psc_page_figs_t figs = {0, NULL};

        if (psc_page_figures(&p, &figs) == PSC_OK)
            free(psc_html_render(&p, &figs));
        psc_page_figs_free(&figs);
    }
#endif
}

static void psc__render_run(const char *path)
{
    psc_run_doc_t *r = NULL;
    char err[512] = "";

    if (psc_run_doc_load(path, &r, err, sizeof(err)) == PSC_OK) {
        psc__draw(r);
        psc_run_doc_free(r);
    } else if (strchr(err, '\n') || !err[0]) {
        abort(); /* a reason is one line */
    }
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
    if (path)
        psc__render_run(path);
    return 0;
}
