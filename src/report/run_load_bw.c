/*
 * A bw or report run's bandwidth suite read back (run_load.h): the GPUs and sizes of its
 * parameters, each result as psc_json_bw_result wrote it, the results grouped into their
 * tests in the order run, and a test with no case on the GPUs chosen kept as one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/run_load.h"

/* passed, failed, waived (psc_result_status_string's); 0, or -1. */
static int psc__status(const json_t *o, psc_result_status_t *st)
{
    const char *s = json_string_value(json_object_get(o, "status"));

    if (!s)
        return -1;
    for (int k = PSC_RESULT_PASSED; k <= PSC_RESULT_WAIVED; k++)
        if (strcmp(s, psc_result_status_string((psc_result_status_t)k)) == 0) {
            *st = (psc_result_status_t)k;
            return 0;
        }
    return -1;
}

static psc_status_t psc__xfers(const psc_rl_t *l, const json_t *t, const char *field, psc_bw_result_t *r)
{
    const json_t *a = json_object_get(t, "transfers");

    if (!json_is_array(a) || json_array_size(a) > PSC_MAX_XFERS)
        return psc_rl_bad(l, field, "has no transfers array of at most %d", PSC_MAX_XFERS);
    r->c.nxfer = (int)json_array_size(a);
    for (size_t k = 0; k < json_array_size(a); k++) {
        const json_t *x = json_array_get(a, k);
        psc_xfer_t *e = &r->c.xfer[k];

        if (psc_rl_endpoint(json_string_value(json_object_get(x, "src")), &e->src) ||
            psc_rl_endpoint(json_string_value(json_object_get(x, "dst")), &e->dst) ||
            psc_rl_endpoint(json_string_value(json_object_get(x, "issuer")), &e->issuer) || e->issuer < 0 ||
            psc_rl_num(x, "median_gbs", 1, 0, &r->xfer_gbs[k]))
            return psc_rl_bad(l, field, "has transfers[%zu] without src, dst, issuer (gpuN, host) or median_gbs", k);
    }
    return PSC_OK;
}

static psc_status_t psc__samples(const psc_rl_t *l, const json_t *t, const char *field, psc_bw_result_t *r)
{
    const json_t *a = json_object_get(t, "samples"), *s = json_object_get(t, "stats");
    long long n;

    if (!json_is_array(a) || json_array_size(a) > PSC_MAX_SAMPLES)
        return psc_rl_bad(l, field, "has no samples array of at most %d", PSC_MAX_SAMPLES);
    r->nsamples = (unsigned)json_array_size(a);
    for (size_t k = 0; k < json_array_size(a); k++) {
        const json_t *v = json_array_get(a, k);

        if (!json_is_number(v))
            return psc_rl_bad(l, field, "has samples[%zu] that is not a number", k);
        r->samples_gbs[k] = json_number_value(v);
    }
    if (json_is_null(s) && r->nsamples == 0)
        return PSC_OK;
    if (!json_is_object(s) || psc_rl_int(s, "n", 0, PSC_MAX_SAMPLES, 0, 0, &n) ||
        psc_rl_num(s, "median", 0, 0, &r->stats.median) || psc_rl_num(s, "min", 0, 0, &r->stats.min) ||
        psc_rl_num(s, "max", 0, 0, &r->stats.max) || psc_rl_num(s, "mean", 0, 0, &r->stats.mean) ||
        psc_rl_num(s, "stddev", 0, 0, &r->stats.stddev))
        return psc_rl_bad(l, field, "has stats without n, median, min, max, mean or stddev (null without samples)");
    r->stats.n = (unsigned)n;
    return PSC_OK;
}

static psc_status_t psc__verify(const psc_rl_t *l, const json_t *t, const char *field, psc_bw_result_t *r)
{
    const json_t *v = json_object_get(t, "verify");
    long long checked, bad, bytes, off, exp = 0, found = 0;

    if (!json_is_object(v) || psc_rl_num(v, "ms", 0, 0, &r->verify_ms) ||
        psc_rl_int(v, "checked_samples", 0, 1 << 30, 0, 0, &checked) ||
        psc_rl_int(v, "bad_samples", 0, 1 << 30, 0, 0, &bad) || psc_rl_int(v, "bad_bytes", 0, INT64_MAX, 0, 0, &bytes) ||
        psc_rl_int(v, "first_bad_offset", 0, INT64_MAX, 1, -1, &off) ||
        (off >= 0 && (psc_rl_int(v, "expected", 0, 255, 0, 0, &exp) || psc_rl_int(v, "found", 0, 255, 0, 0, &found))))
        return psc_rl_bad(l, field, "has a verify object without ms, checked_samples, bad_samples, bad_bytes or "
                          "first_bad_offset (with expected and found bytes)");
    r->verify.checked = (unsigned)checked;
    r->verify.bad_samples = (unsigned)bad;
    r->verify.bad_bytes = (uint64_t)bytes;
    r->verify.first_bad_offset = off;
    r->verify.expected = (uint8_t)exp;
    r->verify.found = (uint8_t)found;
    return PSC_OK;
}

/* One result, as psc_json_bw_result wrote it. */
static psc_status_t psc__result(const psc_rl_t *l, const json_t *t, size_t i, psc_bw_result_t *r)
{
    const json_t *gated = json_object_get(t, "timed_with_gate");
    long long size, iters, per_sample, node;
    char field[32];
    psc_status_t st;

    snprintf(field, sizeof(field), "tests[%zu]", i);
    if (psc_bw_test_from_name(json_string_value(json_object_get(t, "name")), &r->c.test) != PSC_OK)
        return psc_rl_bad(l, field, "names no bandwidth test of this p2pscope (p2pscope list)");
    if (psc__status(t, &r->status) || psc_rl_str(t, "reason", 1, r->reason, sizeof(r->reason)))
        return psc_rl_bad(l, field, "has no status (passed, failed, waived) or a reason that is no string");
    if (psc_rl_endpoint(json_string_value(json_object_get(t, "src")), &r->c.src) ||
        psc_rl_endpoint(json_string_value(json_object_get(t, "dst")), &r->c.dst) ||
        psc_rl_endpoint(json_string_value(json_object_get(t, "issuer")), &r->c.issuer))
        return psc_rl_bad(l, field, "has a src, dst or issuer that is not gpuN, host or all");
    if (!json_is_boolean(gated) || psc_rl_int(t, "bytes_per_copy", 0, INT64_MAX, 0, 0, &size) ||
        psc_rl_int(t, "copies_per_sample", 0, 1 << 30, 0, 0, &iters) ||
        psc_rl_int(t, "bytes_per_sample", 0, INT64_MAX, 0, 0, &per_sample) ||
        psc_rl_int(t, "host_numa_node", 0, 1 << 20, 1, -1, &node) || psc_rl_num(t, "run_ms", 0, 0, &r->run_ms))
        return psc_rl_bad(l, field, "lacks bytes_per_copy, copies_per_sample, bytes_per_sample, host_numa_node, "
                          "timed_with_gate or run_ms");
    r->size = (uint64_t)size;
    r->iterations = (unsigned)iters;
    r->bytes_per_sample = (uint64_t)per_sample;
    r->host_node = (int)node;
    r->gated = json_is_true(gated);
    if ((st = psc__xfers(l, t, field, r)) != PSC_OK || (st = psc__samples(l, t, field, r)) != PSC_OK)
        return st;
    return psc__verify(l, t, field, r);
}

/* The GPUs and the sizes the suite ran over. */
static psc_status_t psc__shape(const psc_rl_t *l, const json_t *doc, psc_bw_suite_t *s)
{
    const json_t *p = json_object_get(doc, "parameters"), *d = json_object_get(p, "devices"),
                 *z = json_object_get(p, "sizes_bytes");

    if (!json_is_array(d) || json_array_size(d) > PSC_MAX_GPUS)
        return psc_rl_bad(l, "parameters.devices", "is not an array of at most %d GPU indexes", PSC_MAX_GPUS);
    if (!json_is_array(z) || json_array_size(z) < 1 || json_array_size(z) > PSC_SUITE_MAX_SIZES)
        return psc_rl_bad(l, "parameters.sizes_bytes", "is not an array of 1 to %d sizes", PSC_SUITE_MAX_SIZES);
    s->ndev = (int)json_array_size(d);
    for (size_t k = 0; k < json_array_size(d); k++) {
        const json_t *g = json_array_get(d, k);

        if (!json_is_integer(g) || json_integer_value(g) < 0 || json_integer_value(g) >= PSC_MAX_GPUS)
            return psc_rl_bad(l, "parameters.devices", "has an entry that is no GPU index");
        s->devices[k] = (int)json_integer_value(g);
    }
    s->nsizes = (int)json_array_size(z);
    for (size_t k = 0; k < json_array_size(z); k++) {
        const json_t *v = json_array_get(z, k);

        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return psc_rl_bad(l, "parameters.sizes_bytes", "has an entry that is no byte count");
        s->sizes[k] = (uint64_t)json_integer_value(v);
    }
    return PSC_OK;
}

/* Entry i of tests into the suite: a result joins the test before it when it is of the same test (results run
   test after test); an entry with no direction is a test that had no case (psc_rl_caseless). */
static psc_status_t psc__entry(const psc_rl_t *l, const json_t *t, size_t i, psc_bw_suite_t *s)
{
    psc_bw_result_t *r = &s->results[s->nresults];
    int caseless;
    psc_status_t st = psc_rl_caseless(l, t, i, psc_bw_test_from_name,
                                      "names no bandwidth test of this p2pscope (p2pscope list)", s->tests,
                                      &s->ntests, s->nresults, &caseless);

    if (st != PSC_OK || caseless || (st = psc__result(l, t, i, r)) != PSC_OK)
        return st;
    psc_rl_counted(s->tests, &s->ntests, &s->nresults, &s->nfailed, r->c.test, r->status == PSC_RESULT_FAILED);
    return PSC_OK;
}

psc_status_t psc_rl_bw_suite(const psc_rl_t *l, const json_t *doc, psc_bw_suite_t **out)
{
    const json_t *tests = json_object_get(doc, "tests");
    psc_bw_suite_t *s;
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
    if ((st = psc__shape(l, doc, s)) != PSC_OK)
        goto fail;
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
