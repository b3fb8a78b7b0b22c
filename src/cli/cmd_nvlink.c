/* nvlink: every link of every GPU (state, speed, remote end, capabilities, traffic); --watch shows which links carried a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_doctor.h"
#include "report/table.h"
#include "report/text.h"

static const char *psc__yn(int v)
{
    return v < 0 ? "?" : v ? "yes" : "no";
}

static void psc__remote(const psc_facts_t *f, const psc_nvlink_facts_t *nl, char *buf, size_t len)
{
    if (nl->active != 1)
        snprintf(buf, len, "-");
    else if (nl->remote == PSC_REMOTE_GPU && nl->remote_gpu >= 0 && nl->remote_gpu < f->ngpu)
        snprintf(buf, len, "gpu%d %s", nl->remote_gpu, f->gpu[nl->remote_gpu].pci_bus_id);
    else
        snprintf(buf, len, "%s %s", nl->remote == PSC_REMOTE_SWITCH ? "NVSwitch" : nl->remote == PSC_REMOTE_CPU ? "CPU"
                                                                 : nl->remote == PSC_REMOTE_GPU ? "GPU" : "?",
                 nl->remote_bus_id[0] ? nl->remote_bus_id : "(not visible here)");
}

/* Link table of one GPU; before/after counters (may be NULL) add the traffic columns. */
static void psc__links(const psc_facts_t *f, int i, const uint64_t *tx0, const uint64_t *rx0, const uint64_t *tx1,
                       const uint64_t *rx1, int ncount)
{
    static const char *const head[] = {"link", "state", "version", "GB/s/dir", "remote", "P2P", "sysmem",
                                       "P2P atomics", "sysmem atomics", "tx (MB)", "rx (MB)"};
    const psc_gpu_facts_t *g = &f->gpu[i];
    const unsigned cols = tx1 ? 11 : 9;
    psc_table_t *t;

    if (g->nvlink_count <= 0) {
        psc_report_printf(stdout, "\ngpu%d %s (%s): no NVLink\n", i, g->name, g->pci_bus_id);
        return;
    }
    t = psc_table_new((unsigned)g->nvlink_count + 1, cols);
    if (!t)
        return;
    psc_report_printf(stdout, "\ngpu%d %s (%s): %d links%s\n", i, g->name, g->pci_bus_id, g->nvlink_count,
                              tx1 ? "; traffic during the watched tests, 1 MB = 1e6 bytes" : "");
    for (unsigned c = 0; c < cols; c++)
        psc_table_set(t, 0, c, "%s", head[c]);
    for (int l = 0; l < g->nvlink_count; l++) {
        const psc_nvlink_facts_t *nl = &g->nvlinks[l];
        unsigned r = (unsigned)l + 1;
        char remote[64];

        psc__remote(f, nl, remote, sizeof(remote));
        psc_table_set(t, r, 0, "%d", l);
        psc_table_set(t, r, 1, "%s", nl->active == 1 ? "active" : nl->active == 0 ? "inactive" : "?");
        psc_table_set(t, r, 2, nl->version > 0 ? "%d" : "?", nl->version);
        psc_table_set(t, r, 3, nl->speed_gbs > 0 ? "%.3f" : "-", nl->speed_gbs);
        psc_table_set(t, r, 4, "%s", remote);
        psc_table_set(t, r, 5, "%s", psc__yn(nl->cap_p2p));
        psc_table_set(t, r, 6, "%s", psc__yn(nl->cap_sysmem));
        psc_table_set(t, r, 7, "%s", psc__yn(nl->cap_p2p_atomics));
        psc_table_set(t, r, 8, "%s", psc__yn(nl->cap_sysmem_atomics));
        if (tx1 && l < ncount) {
            psc_table_set(t, r, 9, "%.1f", (double)(tx1[l] - tx0[l]) / 1e6);
            psc_table_set(t, r, 10, "%.1f", (double)(rx1[l] - rx0[l]) / 1e6);
        }
    }
    psc_table_render(t, stdout);
    psc_table_free(t);
}

typedef struct {
    uint64_t tx[PSC_MAX_NVLINKS], rx[PSC_MAX_NVLINKS];
    int n;
} psc__counters_t;

static int psc__watch(psc_context_t *ctx, const psc_cli_opts_t *o, const psc_facts_t *f)
{
    psc__counters_t *before = calloc((size_t)f->ngpu, sizeof(*before)), *after = calloc((size_t)f->ngpu, sizeof(*after));
    const size_t cap = (size_t)PSC_CLI_MAX_DEVS * PSC_CLI_MAX_DEVS;
    psc_bw_result_t *res = calloc(cap, sizeof(*res));
    psc_bw_test_t tests[PSC_CLI_MAX_TESTS] = {0};
    int ntests = o->ntests ? o->ntests : 1, devs[PSC_CLI_MAX_DEVS], ndev = 0, rc = PSC_EXIT_OK;
    size_t done = 0, total = 0;
    uint64_t moved = 0;

    if (!before || !after || !res) {
        rc = PSC_EXIT_ENV;
        goto out;
    }
    for (int i = 0; i < f->ngpu; i++)
        devs[ndev++] = i;
    if (o->ntests)
        memcpy(tests, o->tests, sizeof(tests[0]) * (size_t)o->ntests);
    else
        psc_bw_test_from_name("gpu_to_gpu_write_ce", &tests[0]);
    for (int i = 0; i < f->ngpu; i++)
        if (psc_nvlink_counters(ctx, i, before[i].tx, before[i].rx, &before[i].n) != PSC_OK)
            before[i].n = 0;
    for (int t = 0; t < ntests; t++) {
        size_t n = 0;

        psc_bw_cases(ctx, tests[t], devs, ndev, NULL, 0, &n);
        total += n;
    }
    for (int t = 0; t < ntests; t++) {
        size_t n = psc_cli_run_cases(ctx, &o->measure, tests[t], devs, ndev, res, cap, &done, total);

        for (size_t k = 0; k < n; k++) {
            moved += res[k].status == PSC_RESULT_PASSED ? res[k].bytes_per_sample * (o->measure.warmup + res[k].nsamples) : 0;
            if (res[k].status == PSC_RESULT_FAILED)
                rc = PSC_EXIT_FAILED;
        }
    }
    for (int i = 0; i < f->ngpu; i++)
        if (psc_nvlink_counters(ctx, i, after[i].tx, after[i].rx, &after[i].n) != PSC_OK)
            after[i].n = 0;
    printf("watched: %zu case%s moved %.1f MB of payload (1 MB = 1e6 bytes)\n", done, done == 1 ? "" : "s",
           (double)moved / 1e6);
    for (int i = 0; i < f->ngpu; i++) {
        if (!after[i].n)
            printf("\ngpu%d: NVLink counters not available\n", i);
        else
            psc__links(f, i, before[i].tx, before[i].rx, after[i].tx, after[i].rx, after[i].n);
    }
out:
    free(res);
    free(after);
    free(before);
    return rc;
}

/* Each GPU's links as the facts record them: {"command": "nvlink", "source", "gpus": [{index, name, pci_bus_id, nvlinks}]}. */
static int psc__json(const psc_facts_t *f, const psc_cli_opts_t *o, int rc)
{
    json_t *facts = psc_json_facts(f), *gpus = json_array();
    json_t *doc = json_pack("{s:{s:s,s:s},s:s,s:o}", "tool", "name", "p2pscope", "version", PSC_VERSION_STRING,
                            "command", "nvlink", "source", psc_json_str(f->source));
    size_t i;
    json_t *g;
    int bad = 0;

    if (!facts || !gpus || !doc) {
        json_decref(facts);
        json_decref(gpus);
        json_decref(doc);
        fprintf(stderr, "p2pscope: out of host memory\n");
        return PSC_EXIT_NO_MEMORY;
    }
    json_array_foreach(json_object_get(facts, "gpus"), i, g)
        bad |= json_array_append_new(gpus, json_pack("{s:i,s:O,s:O,s:O}", "index", (int)i, "name",
                                                     json_object_get(g, "name"), "pci_bus_id",
                                                     json_object_get(g, "pci_bus_id"), "nvlinks",
                                                     json_object_get(g, "nvlinks"))) != 0;
    bad |= json_object_set_new(doc, "gpus", gpus) != 0;
    bad |= json_object_set_new(doc, "exit_code", json_integer(rc)) != 0;
    if (psc_cli_write_json(bad ? NULL : doc, o) != PSC_EXIT_OK)
        rc = PSC_EXIT_FAILED;
    json_decref(doc);
    json_decref(facts);
    return rc;
}

int psc_cmd_nvlink(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int rc, any = 0;
    psc_facts_t *f = psc_cli_facts(ctx, o, &rc);

    if (!f)
        return rc;
    for (int i = 0; i < f->ngpu; i++)
        any |= f->gpu[i].nvlink_count > 0;
    if (o->watch) {
        rc = psc__watch(ctx, o, f);
    } else {
        for (int i = 0; psc_cli_tables(o) && i < f->ngpu; i++)
            psc__links(f, i, NULL, NULL, NULL, NULL, 0);
        rc = any ? PSC_EXIT_OK : PSC_EXIT_NA;
        if (o->json)
            rc = psc__json(f, o, rc);
    }
    psc_facts_free(f);
    return rc;
}
