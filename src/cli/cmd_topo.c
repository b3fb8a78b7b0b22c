/* topo: how the GPUs connect, live or from a recording; --save records this machine. */
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "report/render_topo.h"
#include "report/text.h"

psc_facts_t *psc_cli_facts(psc_context_t *ctx, const psc_cli_opts_t *o, int examine, int *rc)
{
    psc_facts_t *f = psc_facts_new();
    char err[512];
    psc_status_t st;

    if (!f) {
        psc_report_printf(stderr, "p2pscope: out of host memory\n");
        *rc = PSC_EXIT_NO_MEMORY;
        return NULL;
    }
    st = o->topology ? psc_facts_load(o->topology, f, err, sizeof(err))
         : examine   ? psc_facts_examine(ctx, f)
                     : psc_facts_gather(ctx, f);
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", o->topology ? err : psc_context_last_error(ctx));
        *rc = psc_cli_exit_of(st, st == PSC_ERR_NO_DEVICE || !o->topology ? PSC_EXIT_ENV : PSC_EXIT_USAGE);
        psc_facts_free(f);
        return NULL;
    }
    *rc = PSC_EXIT_OK;
    return f;
}

/* Write facts JSON to --json's target; with_xml for recordings. */
static int psc__facts_json_out(const psc_facts_t *f, const char *path)
{
    char err[512];
    psc_status_t st;

    if (path && path[0] && path[0] != '-') {
        st = psc_facts_save(f, path, err, sizeof(err));
        if (st != PSC_OK) {
            psc_report_printf(stderr, "p2pscope: %s\n", err);
            return PSC_EXIT_FAILED;
        }
        return PSC_EXIT_OK;
    }
    {
        char *text = psc_facts_json(f, 0);

        if (!text) {
            psc_report_printf(stderr, "p2pscope: out of host memory while writing the facts as JSON\n");
            return PSC_EXIT_NO_MEMORY;
        }
        /* the failed write's errno kept for main's one line about stdout, before anything resets it */
        if (fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
            psc_cli_stdout_errno = errno;
        free(text);
    }
    return PSC_EXIT_OK;
}

int psc_cmd_topo(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    char err[512];
    int rc = PSC_EXIT_OK;
    psc_facts_t *f = psc_cli_facts(ctx, o, 0, &rc);

    if (!f)
        return rc;
    /* Live: what maps GPU memory for the CPU (it tries each backend on a page of device memory). */
    if (!o->topology && psc_facts_probe_gpumap(ctx, f) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", psc_context_last_error(ctx));
        psc_facts_free(f);
        return PSC_EXIT_ENV;
    }
    f->keep_identifiers = o->identify;
    if (psc_cli_tables(o))
        psc_render_topo(stdout, f);
    if (o->json)
        rc = psc__facts_json_out(f, o->json_path);
    if (rc == PSC_EXIT_OK && o->save) {
        if (psc_facts_save(f, o->save, err, sizeof(err)) != PSC_OK) {
            psc_report_printf(stderr, "p2pscope: %s\n", err);
            rc = PSC_EXIT_FAILED;
        } else if (psc_cli_tables(o)) {
            psc_render_topo_saved(stdout, o->save);
        }
    }
    psc_facts_free(f);
    return rc;
}
