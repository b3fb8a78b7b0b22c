/* The suites' pages (render_suite.h): what bw, report, lat, verify, list, doctor and topo print around the tables. */
#include <jansson.h>

#include "report/json.h"
#include "report/render.h"
#include "report/render_doctor.h"
#include "report/render_lat.h"
#include "report/render_load.h"
#include "report/render_suite.h"
#include "report/render_verify.h"

void psc_render_bw_suite(FILE *f, const psc_bw_suite_t *s)
{
    for (int t = 0; t < s->ntests; t++) {
        const psc_suite_test_t *st = &s->tests[t];

        if (s->nsizes > 1)
            psc_render_sweep(f, st->test, s->results + st->first, st->n);
        else
            psc_render_bw(f, st->test, s->results + st->first, st->n, s->devices, s->ndev);
    }
    psc_render_p2p_compare(f, s->results, s->nresults);
    if (s->nsizes == 1)
        psc_render_hostmem_compare(f, s->results, s->nresults);
    if (s->nsizes > 1)
        psc_render_crossover(f, s->results, s->nresults);
}

void psc_render_bw_footer(FILE *f, const psc_bw_suite_t *s, int verified, double wall_s)
{
    double run_ms = 0, verify_ms = 0;

    for (size_t k = 0; k < s->nresults; k++) {
        run_ms += s->results[k].run_ms;
        verify_ms += s->results[k].verify_ms;
    }
    fprintf(f, "\nwall time: %.1f s", wall_s);
    if (verified && run_ms > 0)
        fprintf(f, "; checking the data took %.2f s of the cases' %.1f s (%.1f %%)", verify_ms / 1e3, run_ms / 1e3,
                100.0 * verify_ms / run_ms);
    else if (!verified)
        fprintf(f, "; data not checked (--no-verify)");
    fprintf(f, "\n");
}

static json_t *psc__json_waived(psc_bw_test_t t, const char *why)
{
    return json_pack("{s:s,s:s,s:s,s:o}", "name", psc_bw_test_name(t), "title", psc_bw_test_title(t), "status",
                     "waived", "reason", psc_json_str(why));
}

/* The suite's sizes in the order run (one 0: each test's own size) into the run's parameters, where it has them. */
static psc_status_t psc__json_sizes(json_t *run, const psc_bw_suite_t *s)
{
    json_t *p = json_object_get(run, "parameters"), *sizes = json_array();
    int bad = 0;

    for (int k = 0; k < s->nsizes; k++)
        psc_json_push(sizes, json_integer((json_int_t)s->sizes[k]), &bad);
    if (!json_is_object(p)) {
        json_decref(sizes);
        return PSC_OK;
    }
    psc_json_set(p, "sizes_bytes", psc_json_done(sizes, bad), &bad);
    return bad ? psc_json_run_set(run, "parameters", NULL) : PSC_OK;
}

psc_status_t psc_json_run_add_bw_suite(json_t *run, const psc_bw_suite_t *s)
{
    psc_status_t st = psc__json_sizes(run, s);

    for (int t = 0; t < s->ntests; t++) {
        const psc_suite_test_t *e = &s->tests[t];

        for (size_t k = e->first; k < e->first + e->n; k++)
            if (psc_json_run_add_test(run, psc_json_bw_result(&s->results[k])) != PSC_OK)
                st = PSC_ERR_NO_MEMORY;
        if (e->n == 0 && psc_json_run_add_test(run, psc__json_waived(e->test, "needs more GPUs than selected")) != PSC_OK)
            st = PSC_ERR_NO_MEMORY;
    }
    return st;
}

/* A latency test with no case on the GPUs chosen: its name, waived, and no size. */
static json_t *psc__json_lat_waived(psc_lat_test_t t)
{
    const psc_lat_test_info_t *ti = psc_lat_test_info(t);

    return json_pack("{s:s,s:s,s:s,s:s,s:[]}", "name", ti ? ti->name : "unknown", "title", ti ? ti->title : "unknown",
                     "status", "waived", "reason", "needs more GPUs than selected", "sizes");
}

void psc_render_lat_timers(FILE *f, double gpu_ns, double host_ns)
{
    fprintf(f,
            "timers: GPU %%globaltimer steps of %.0f ns (SM cycles calibrated against it per launch); host "
            "CLOCK_MONOTONIC resolution %.0f ns\n",
            gpu_ns, host_ns);
}

void psc_render_lat_suite(FILE *f, const psc_lat_suite_t *s)
{
    for (int t = 0; t < s->ntests; t++)
        psc_render_lat(f, s->tests[t].test, s->results + s->tests[t].first, s->tests[t].n, s->devices, s->ndev);
}

psc_status_t psc_json_run_add_lat_suite(json_t *run, const psc_lat_suite_t *s)
{
    psc_status_t st = psc_json_run_set(run, "timers",
                                       json_pack("{s:f,s:f}", "gpu_globaltimer_step_ns", s->gpu_timer_ns,
                                                 "host_monotonic_resolution_ns", s->host_timer_ns));

    for (int t = 0; t < s->ntests; t++) {
        const psc_suite_test_t *e = &s->tests[t];

        for (size_t k = e->first; k < e->first + e->n; k++)
            if (psc_json_run_add_test(run, psc_json_lat_result(&s->results[k])) != PSC_OK)
                st = PSC_ERR_NO_MEMORY;
        if (e->n == 0 && psc_json_run_add_test(run, psc__json_lat_waived(e->test)) != PSC_OK)
            st = PSC_ERR_NO_MEMORY;
    }
    return st;
}

psc_status_t psc_json_run_add_verify_suite(json_t *run, const psc_verify_suite_t *s, uint64_t seed)
{
    json_t *arr = json_array();
    psc_status_t st = PSC_OK;

    for (size_t k = 0; arr && k < s->npaths; k++)
        if (json_array_append_new(arr, psc_json_verify_path(&s->paths[k])) != 0) {
            json_decref(arr);
            arr = NULL; /* the run is then incomplete, and not written */
        }
    if (psc_json_run_set(run, "paths", arr) != PSC_OK)
        st = PSC_ERR_NO_MEMORY;
    if (psc_json_run_set(run, "background", s->load_ran && s->load ? psc_json_load(s->load, s->nload) : json_null()) !=
        PSC_OK)
        st = PSC_ERR_NO_MEMORY;
    if (s->load_error[0] && psc_json_run_set(run, "background_error", psc_json_str(s->load_error)) != PSC_OK)
        st = PSC_ERR_NO_MEMORY;
    if (psc_json_run_set(run, "seed", json_integer((json_int_t)(seed & 0x7fffffffffffffffull))) != PSC_OK)
        st = PSC_ERR_NO_MEMORY;
    return st;
}

void psc_render_test_list(FILE *f, const psc_registry_t *reg, int width)
{
    for (int t = 0; t < psc_registry_count(reg); t++) {
        psc_registry_entry_t e;

        if (psc_registry_entry(reg, t, &e) == PSC_OK)
            fprintf(f, "%-*s %s\n", width, e.name, e.description);
    }
}

json_t *psc_json_test_list(const char *command, const psc_registry_t *reg)
{
    json_t *doc = json_pack("{s:{s:s,s:s},s:s,s:[]}", "tool", "name", "p2pscope", "version", PSC_VERSION_STRING,
                            "command", command, "tests");

    for (int t = 0; doc && t < psc_registry_count(reg); t++) {
        psc_registry_entry_t e;

        if (psc_registry_entry(reg, t, &e) == PSC_OK &&
            json_array_append_new(json_object_get(doc, "tests"),
                                  json_pack("{s:s,s:s,s:s,s:i}", "name", e.name, "title", e.title, "description",
                                            e.description, "min_gpus", e.min_gpus)) != 0) {
            json_decref(doc);
            doc = NULL; /* never a list with a test missing */
        }
    }
    return doc;
}

json_t *psc_json_doctor(const psc_facts_t *f, const psc_finding_t *v, size_t n, int exit_code)
{
    return json_pack("{s:{s:s,s:s},s:s,s:o,s:o,s:i}", "tool", "name", "p2pscope", "version", PSC_VERSION_STRING,
                     "command", "doctor", "findings", psc_json_findings(v, n), "facts", psc_json_facts(f), "exit_code",
                     exit_code);
}
