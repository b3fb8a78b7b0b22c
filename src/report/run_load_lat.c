/*
 * A lat run's latency suite read back (run_load.h): each result as psc_json_lat_result
 * wrote it (per size its distributions and the samples kept), grouped into their tests
 * in the order run, a test with no case kept as one; the GPUs are the run's devices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/run_load.h"

/* A distribution of psc_json_pctl; 0, or -1. */
static int psc__pctl(const json_t *o, psc_pctl_t *p)
{
    long long n;

    if (!json_is_object(o) || psc_rl_int(o, "n", 0, 1u << 31, 0, 0, &n) || psc_rl_num(o, "min", 0, 0, &p->min) ||
        psc_rl_num(o, "p50", 0, 0, &p->p50) || psc_rl_num(o, "p90", 0, 0, &p->p90) ||
        psc_rl_num(o, "p99", 0, 0, &p->p99) || psc_rl_num(o, "max", 0, 0, &p->max) ||
        psc_rl_num(o, "mean", 0, 0, &p->mean))
        return -1;
    p->n = (unsigned)n;
    return 0;
}

/* Size k of a result: its bytes, its distributions, the samples kept. */
static psc_status_t psc__size(const psc_rl_t *l, const json_t *e, const char *field, unsigned k, psc_lat_result_t *r)
{
    static const char *const second[] = {"cpu_submit", "cumemcpy", "unmap"};
    const json_t *bytes = json_object_get(e, "bytes"), *raw = json_object_get(e, "samples");

    if (!bytes)
        bytes = json_object_get(e, "working_set_bytes");
    if (!json_is_object(e) || !json_is_integer(bytes) || json_integer_value(bytes) < 0 ||
        psc__pctl(json_object_get(e, "latency"), &r->lat[k]) != 0)
        return psc_rl_bad(l, field, "has sizes[%u] without bytes (or working_set_bytes) and a latency distribution",
                          k);
    r->sizes[k] = (uint64_t)json_integer_value(bytes);
    for (size_t f = 0; f < sizeof(second) / sizeof(second[0]); f++)
        if (json_object_get(e, second[f]) && psc__pctl(json_object_get(e, second[f]), &r->submit[k]) != 0)
            return psc_rl_bad(l, field, "has sizes[%u].%s that is no distribution", k, second[f]);
    if (!json_is_array(raw) || json_array_size(raw) > PSC_LAT_KEEP)
        return psc_rl_bad(l, field, "has sizes[%u].samples that is not an array of at most %d", k, PSC_LAT_KEEP);
    r->nkept[k] = (unsigned)json_array_size(raw);
    for (size_t i = 0; i < json_array_size(raw); i++) {
        if (!json_is_number(json_array_get(raw, i)))
            return psc_rl_bad(l, field, "has sizes[%u].samples[%zu] that is not a number", k, i);
        r->kept[k][i] = (float)json_number_value(json_array_get(raw, i));
    }
    return PSC_OK;
}

/* "gpuA -> gpuB" into the case's endpoints; 0, or -1. */
static int psc__direction(const char *dir, psc_lat_case_t *c)
{
    const char *arrow = dir ? strstr(dir, " -> ") : NULL;
    char a[16];

    if (!arrow || (size_t)(arrow - dir) >= sizeof(a))
        return -1;
    memcpy(a, dir, (size_t)(arrow - dir));
    a[arrow - dir] = '\0';
    return psc_rl_endpoint(a, &c->src) || psc_rl_endpoint(arrow + 4, &c->dst) ? -1 : 0;
}

static psc_status_t psc__result(const psc_rl_t *l, const json_t *t, size_t i, psc_lat_result_t *r)
{
    const json_t *sizes = json_object_get(t, "sizes");
    const char *st = json_string_value(json_object_get(t, "status"));
    char field[32];
    psc_status_t rc;
    int k = PSC_RESULT_PASSED;

    snprintf(field, sizeof(field), "tests[%zu]", i);
    while (st && k <= PSC_RESULT_WAIVED && strcmp(st, psc_result_status_string((psc_result_status_t)k)) != 0)
        k++;
    if (psc_lat_test_from_name(json_string_value(json_object_get(t, "name")), &r->c.test) != PSC_OK)
        return psc_rl_bad(l, field, "names no latency test of this p2pscope (p2pscope lat -l)");
    if (!st || k > PSC_RESULT_WAIVED || psc_rl_str(t, "reason", 1, r->reason, sizeof(r->reason)))
        return psc_rl_bad(l, field, "has no status (passed, failed, waived) or a reason that is no string");
    if (psc__direction(json_string_value(json_object_get(t, "direction")), &r->c) ||
        psc_rl_endpoint(json_string_value(json_object_get(t, "issuer")), &r->c.issuer) ||
        psc_rl_num(t, "gpu_ns_per_cycle", 1, 0, &r->ns_per_cycle))
        return psc_rl_bad(l, field, "has no direction \"SRC -> DST\", issuer (gpuN, host) or gpu_ns_per_cycle");
    if (!json_is_array(sizes) || json_array_size(sizes) > PSC_LAT_MAX_SIZES)
        return psc_rl_bad(l, field, "has no sizes array of at most %d", PSC_LAT_MAX_SIZES);
    r->status = (psc_result_status_t)k;
    r->nsizes = (unsigned)json_array_size(sizes);
    for (unsigned z = 0; z < r->nsizes; z++)
        if ((rc = psc__size(l, json_array_get(sizes, z), field, z, r)) != PSC_OK)
            return rc;
    return PSC_OK;
}

/* Entry i into the suite, as run_load_bw.c's: a result joins its test; no direction, a test with no case. */
static psc_status_t psc__entry(const psc_rl_t *l, const json_t *t, size_t i, psc_lat_suite_t *s)
{
    psc_lat_result_t *r = &s->results[s->nresults];
    int caseless;
    psc_status_t st = psc_rl_caseless(l, t, i, psc_lat_test_from_name,
                                      "names no latency test of this p2pscope (p2pscope lat -l)", s->tests,
                                      &s->ntests, s->nresults, &caseless);

    if (st != PSC_OK || caseless || (st = psc__result(l, t, i, r)) != PSC_OK)
        return st;
    psc_rl_counted(s->tests, &s->ntests, &s->nresults, &s->nfailed, r->c.test, r->status == PSC_RESULT_FAILED);
    return PSC_OK;
}

psc_status_t psc_rl_lat_suite(const psc_rl_t *l, const json_t *doc, const psc_run_doc_t *r, psc_lat_suite_t **out)
{
    const json_t *tests = json_object_get(doc, "tests"), *timers = json_object_get(doc, "timers");
    psc_lat_suite_t *s;
    psc_status_t st;
    size_t n;

    if (!json_is_array(tests))
        return psc_rl_bad(l, "tests", "is not an array");
    n = json_array_size(tests);
    if (!(s = calloc(1, sizeof(*s))) || !(s->tests = calloc(n + 1, sizeof(*s->tests))) ||
        !(s->results = calloc(n + 1, sizeof(*s->results)))) {
        st = psc_rl_oom(l);
        goto fail;
    }
    if (!json_is_object(timers) || psc_rl_num(timers, "gpu_globaltimer_step_ns", 0, 0, &s->gpu_timer_ns) ||
        psc_rl_num(timers, "host_monotonic_resolution_ns", 0, 0, &s->host_timer_ns)) {
        st = psc_rl_bad(l, "timers", "lacks gpu_globaltimer_step_ns or host_monotonic_resolution_ns");
        goto fail;
    }
    s->ndev = r->ndev;
    for (int i = 0; i < r->ndev; i++)
        s->devices[i] = r->devs[i].index;
    for (size_t i = 0; i < n; i++)
        if ((st = psc__entry(l, json_array_get(tests, i), i, s)) != PSC_OK)
            goto fail;
    *out = s;
    return PSC_OK;
fail:
    if (s) {
        free(s->tests);
        free(s->results);
        free(s);
    }
    return st;
}
