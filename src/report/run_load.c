/*
 * A JSON run read back for the page writers (run_load.h): the file, its command and
 * layout, the machine (system, GPUs), the measurement's parameters, the facts and
 * the findings; the suites in run_load_bw.c and run_load_lat.c. Then render's one call.
 */
#define _GNU_SOURCE
#include "report/run_load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/p2pscope_private.h"
#include "report/json.h"
#include "report/run_read.h"

static const char psc__accepted[] = "accepted: a JSON run written by p2pscope bw, report or lat with --json";

psc_status_t psc_rl_bad(const psc_rl_t *l, const char *field, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(l->err, l->errlen, "%s: %s%s%s (%s)", l->path, field, field[0] ? " " : "", what, psc__accepted);
    return PSC_ERR_INVALID;
}

psc_status_t psc_rl_oom(const psc_rl_t *l)
{
    snprintf(l->err, l->errlen, "%s: out of host memory", l->path);
    return PSC_ERR_NO_MEMORY;
}

int psc_rl_int(const json_t *o, const char *key, long long lo, long long hi, int nullable, long long dflt,
               long long *v)
{
    const json_t *x = json_object_get(o, key);

    if (nullable && (!x || json_is_null(x))) {
        *v = dflt;
        return 0;
    }
    if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi)
        return -1;
    *v = json_integer_value(x);
    return 0;
}

int psc_rl_num(const json_t *o, const char *key, int nullable, double dflt, double *v)
{
    const json_t *x = json_object_get(o, key);

    if (nullable && (!x || json_is_null(x))) {
        *v = dflt;
        return 0;
    }
    if (!json_is_number(x) || !isfinite(json_number_value(x)))
        return -1;
    *v = json_number_value(x);
    return 0;
}

int psc_rl_str(const json_t *o, const char *key, int nullable, char *buf, size_t len)
{
    const json_t *x = json_object_get(o, key);

    if (nullable && (!x || json_is_null(x))) {
        buf[0] = '\0';
        return 0;
    }
    if (!json_is_string(x) || json_string_length(x) >= len || strlen(json_string_value(x)) != json_string_length(x))
        return -1; /* too long for its place, or a NUL inside: not what a writer wrote */
    memcpy(buf, json_string_value(x), json_string_length(x) + 1);
    return 0;
}

int psc_rl_endpoint(const char *name, int *out)
{
    unsigned long g;
    char *end;

    if (!name)
        return -1;
    if (strcmp(name, "host") == 0 || strcmp(name, "all") == 0) {
        *out = name[0] == 'h' ? PSC_HOST : PSC_ALL;
        return 0;
    }
    if (strncmp(name, "gpu", 3) != 0 || name[3] < '0' || name[3] > '9')
        return -1;
    g = strtoul(name + 3, &end, 10);
    if (*end || g >= PSC_MAX_GPUS || (name[3] == '0' && name[4]))
        return -1;
    *out = (int)g;
    return 0;
}

void psc_rl_join(psc_suite_test_t *tests, int *ntests, size_t nresults, int test, int no_case)
{
    psc_suite_test_t *last = *ntests ? &tests[*ntests - 1] : NULL;

    if (no_case || !last || last->n == 0 || last->test != test) {
        last = &tests[(*ntests)++];
        last->test = test;
        last->first = nresults;
        last->n = 0;
    }
    last->n += !no_case;
}

psc_status_t psc_rl_caseless(const psc_rl_t *l, const json_t *t, size_t i, psc_status_t (*lookup)(const char *, int *),
                             const char *unknown, psc_suite_test_t *tests, int *ntests, size_t nresults, int *caseless)
{
    char field[32];
    int test;

    snprintf(field, sizeof(field), "tests[%zu]", i);
    *caseless = 0;
    if (!json_is_object(t))
        return psc_rl_bad(l, field, "is not an object");
    if (json_object_get(t, "direction"))
        return PSC_OK;
    if (lookup(json_string_value(json_object_get(t, "name")), &test) != PSC_OK)
        return psc_rl_bad(l, field, "%s", unknown);
    psc_rl_join(tests, ntests, nresults, test, 1);
    *caseless = 1;
    return PSC_OK;
}

void psc_rl_counted(psc_suite_test_t *tests, int *ntests, size_t *nresults, size_t *nfailed, int test, int failed)
{
    psc_rl_join(tests, ntests, *nresults, test, 0);
    *nfailed += failed != 0;
    (*nresults)++;
}

/* The command, and whether this p2pscope reads its layout. */
static psc_status_t psc__kind(const psc_rl_t *l, const json_t *doc, psc_run_doc_t *r)
{
    const json_t *tool = json_object_get(doc, "tool"), *fmt = json_object_get(doc, "run_format");
    const char *cmd = json_string_value(json_object_get(doc, "command"));
    const char *tname = json_string_value(json_object_get(tool, "name"));

    if (!json_is_object(doc) || !tname || strcmp(tname, "p2pscope") != 0 || !cmd)
        return psc_rl_bad(l, "", "is not a p2pscope run: no tool.name \"p2pscope\" and command");
    if (strcmp(cmd, "bw") != 0 && strcmp(cmd, "report") != 0 && strcmp(cmd, "lat") != 0) {
        snprintf(l->err, l->errlen, "%s: a p2pscope %.40s run: render draws runs of bw, report or lat written with "
                 "--json (the commands with a page)", l->path, cmd);
        return PSC_ERR_INVALID;
    }
    if (!fmt)
        return psc_rl_bad(l, "", "has no run_format: written by a p2pscope older than render (run it again)");
    if (!json_is_integer(fmt) || json_integer_value(fmt) < 1)
        return psc_rl_bad(l, "run_format", "is not a layout number");
    if (json_integer_value(fmt) > PSC_RUN_FORMAT) {
        snprintf(l->err, l->errlen, "%s: run_format %lld: written by a newer p2pscope (this one, %s, reads run_format "
                 "%d and older): render it with that p2pscope", l->path, (long long)json_integer_value(fmt),
                 PSC_VERSION_STRING, PSC_RUN_FORMAT);
        return PSC_ERR_INVALID;
    }
    snprintf(r->command, sizeof(r->command), "%s", cmd);
    return PSC_OK;
}

static psc_status_t psc__system(const psc_rl_t *l, const json_t *doc, psc_system_info_t *s)
{
    const json_t *o = json_object_get(doc, "system"), *nvml = json_object_get(o, "nvml_loaded");
    long long cuda, count, numa;

    if (!json_is_object(o) || !json_is_boolean(nvml) ||
        psc_rl_str(o, "driver_release", 1, s->driver_release, sizeof(s->driver_release)) ||
        psc_rl_str(o, "nvml_note", 1, s->nvml_note, sizeof(s->nvml_note)) ||
        psc_rl_str(o, "device_order", 0, s->device_order, sizeof(s->device_order)) ||
        psc_rl_str(o, "cuda_visible_devices", 1, s->visible_devices, sizeof(s->visible_devices)) ||
        psc_rl_int(o, "cuda_driver_version", 0, 1000000, 0, 0, &cuda) ||
        psc_rl_int(o, "device_count", 0, PSC_MAX_GPUS, 0, 0, &count) ||
        psc_rl_int(o, "numa_nodes", 0, 1 << 20, 0, 0, &numa))
        return psc_rl_bad(l, "system", "lacks a field or has one of the wrong type or size (driver_release, "
                          "cuda_driver_version, nvml_loaded, nvml_note, device_order, cuda_visible_devices, "
                          "device_count, numa_nodes)");
    s->nvml_loaded = json_is_true(nvml);
    s->cuda_driver_version = (int)cuda;
    s->device_count = s->driver_device_count = (int)count;
    s->numa_nodes = (int)numa;
    return PSC_OK;
}

/* One GPU of "devices": what the page, its figures and gpus.csv show. */
static psc_status_t psc__device(const psc_rl_t *l, const json_t *o, size_t i, psc_device_info_t *d)
{
    long long v[11];
    char field[32], cc[16], pci[16] = "";
    unsigned ven, dev;

    snprintf(field, sizeof(field), "devices[%zu]", i);
    if (!json_is_object(o) || psc_rl_int(o, "index", 0, PSC_MAX_GPUS - 1, 0, 0, &v[0]) ||
        psc_rl_int(o, "nvml_index", 0, 1 << 20, 1, -1, &v[1]) || psc_rl_str(o, "name", 0, d->name, sizeof(d->name)) ||
        psc_rl_str(o, "pci_bus_id", 0, d->pci_bus_id, sizeof(d->pci_bus_id)) ||
        psc_rl_str(o, "uuid", 1, d->uuid, sizeof(d->uuid)) || psc_rl_str(o, "pci_id", 1, pci, sizeof(pci)) ||
        psc_rl_int(o, "memory_bytes", 0, INT64_MAX, 0, 0, &v[2]) || psc_rl_int(o, "sm_count", 0, 1 << 20, 0, 0, &v[3]) ||
        psc_rl_str(o, "compute_capability", 0, cc, sizeof(cc)) ||
        psc_rl_int(o, "copy_engines", 0, 1 << 10, 0, 0, &v[4]) ||
        psc_rl_int(o, "numa_node", 0, 1 << 20, 1, -1, &v[5]) ||
        psc_rl_int(o, "memory_bus_width_bits", 0, 1 << 20, 0, 0, &v[6]) ||
        psc_rl_num(o, "memory_peak_gbs", 1, 0, &d->mem_peak_gbs) ||
        psc_rl_int(o, "sm_clock_mhz", 0, 1 << 20, 1, -1, &v[7]) ||
        psc_rl_int(o, "sm_clock_max_mhz", 0, 1 << 20, 1, -1, &v[8]) ||
        psc_rl_int(o, "memory_clock_mhz", 0, 1 << 20, 1, -1, &v[9]) ||
        psc_rl_int(o, "temperature_c", 0, 1000, 1, -1, &v[10]))
        return psc_rl_bad(l, field, "lacks a field or has one of the wrong type or range");
    if (sscanf(cc, "%d.%d", &d->cc_major, &d->cc_minor) != 2 || d->cc_major < 0 || d->cc_minor < 0)
        return psc_rl_bad(l, field, "has compute_capability '%.15s', not MAJOR.MINOR", cc);
    if (pci[0] && sscanf(pci, "%4x:%4x", &ven, &dev) == 2)
        d->pci_device_id = (uint32_t)dev << 16 | ven;
    d->index = (int)v[0];
    d->nvml_index = (int)v[1];
    d->memory_bytes = (uint64_t)v[2];
    d->sm_count = (int)v[3];
    d->async_engines = (int)v[4];
    d->numa_node = (int)v[5];
    d->mem_bus_width_bits = (int)v[6];
    d->sm_clock_mhz = (int)v[7];
    d->sm_clock_max_mhz = (int)v[8];
    d->mem_clock_mhz = (int)v[9];
    d->temperature_c = (int)v[10];
    return PSC_OK;
}

static psc_status_t psc__devices(const psc_rl_t *l, const json_t *doc, psc_run_doc_t *r)
{
    const json_t *a = json_object_get(doc, "devices");
    psc_status_t st;

    if (!json_is_array(a) || json_array_size(a) > PSC_MAX_GPUS)
        return psc_rl_bad(l, "devices", "is not an array of at most %d GPUs", PSC_MAX_GPUS);
    r->ndev = (int)json_array_size(a);
    for (size_t i = 0; i < json_array_size(a); i++)
        if ((st = psc__device(l, json_array_get(a, i), i, &r->devs[i])) != PSC_OK)
            return st;
    return PSC_OK;
}

/* When, how long, how it ended, and the words typed. */
static psc_status_t psc__head(const psc_rl_t *l, const json_t *doc, psc_run_doc_t *r)
{
    const json_t *line = json_object_get(doc, "command_line");
    long long code;

    if (psc_rl_str(doc, "started_utc", 0, r->started_utc, sizeof(r->started_utc)) != 0)
        return psc_rl_bad(l, "started_utc", "is not a time string");
    if (psc_rl_num(doc, "wall_s", 0, 0, &r->wall_s) != 0 || r->wall_s < 0)
        return psc_rl_bad(l, "wall_s", "is not a number of seconds");
    if (psc_rl_int(doc, "exit_code", 0, 255, 0, 0, &code) != 0)
        return psc_rl_bad(l, "exit_code", "is not an exit code (0 to 255)");
    r->exit_code = (int)code;
    if (line && !json_is_null(line)) {
        if (!json_is_string(line) || strlen(json_string_value(line)) != json_string_length(line))
            return psc_rl_bad(l, "command_line", "is not a string");
        if (!(r->command_line = strdup(json_string_value(line))))
            return psc_rl_oom(l);
    }
    return PSC_OK;
}

/* bw, report: what the page says of the sampling and the checks. */
static psc_status_t psc__parameters(const psc_rl_t *l, const json_t *doc, psc_run_doc_t *r)
{
    const json_t *p = json_object_get(doc, "parameters"), *verify = json_object_get(p, "verify");
    long long warmup, lo, hi;
    psc_measure_opts_t *m = &r->measure;

    psc_measure_opts_default(m);
    if (!json_is_object(p) || !json_is_boolean(verify) || psc_rl_int(p, "warmup", 0, 1 << 30, 0, 0, &warmup) ||
        psc_rl_int(p, "min_samples", 1, PSC_MAX_SAMPLES, 0, 0, &lo) ||
        psc_rl_int(p, "max_samples", 1, PSC_MAX_SAMPLES, 0, 0, &hi) ||
        psc_rl_num(p, "stable_pct", 0, 0, &m->stable_pct))
        return psc_rl_bad(l, "parameters", "lacks warmup, min_samples, max_samples (1 to %d), stable_pct or verify",
                          PSC_MAX_SAMPLES);
    m->warmup = (unsigned)warmup;
    m->samples = (unsigned)lo;
    m->max_samples = (unsigned)hi;
    m->verify = json_is_true(verify);
    r->has_measure = 1;
    return PSC_OK;
}

static psc_status_t psc__findings(const psc_rl_t *l, const json_t *doc, psc_run_doc_t *r)
{
    static const char *const sev[] = {"info", "warning", "error"};
    const json_t *a = json_object_get(doc, "findings");

    if (!a)
        return PSC_OK; /* the doctor did not run */
    if (!json_is_array(a))
        return psc_rl_bad(l, "findings", "is not an array");
    if (!(r->findings = calloc(json_array_size(a) + 1, sizeof(*r->findings))))
        return psc_rl_oom(l);
    for (size_t k = 0; k < json_array_size(a); k++) {
        const json_t *o = json_array_get(a, k);
        psc_finding_t *v = &r->findings[k];
        const char *s = json_string_value(json_object_get(o, "severity"));
        char field[32];
        int i = 0;

        while (s && i < 3 && strcmp(s, sev[i]) != 0)
            i++;
        snprintf(field, sizeof(field), "findings[%zu]", k);
        if (!s || i == 3 || psc_rl_str(o, "rule", 0, v->rule, sizeof(v->rule)) ||
            psc_rl_str(o, "what", 0, v->what, sizeof(v->what)) ||
            psc_rl_str(o, "evidence", 0, v->evidence, sizeof(v->evidence)) ||
            psc_rl_str(o, "fix", 0, v->fix, sizeof(v->fix)))
            return psc_rl_bad(l, field, "lacks a severity (info, warning, error), rule, what, evidence or fix that "
                              "fits its place");
        v->severity = i == 0 ? PSC_SEV_INFO : i == 1 ? PSC_SEV_WARNING : PSC_SEV_ERROR;
    }
    r->nfindings = json_array_size(a);
    r->doctor_ran = 1;
    return PSC_OK;
}

/* report: the facts gathered before its tests, checked as a recording is (the library's loader). */
static psc_status_t psc__topology(const psc_rl_t *l, const json_t *doc, psc_run_doc_t *r)
{
    const json_t *t = json_object_get(doc, "topology");
    char name[512], *text;
    psc_status_t st;

    if (!t)
        return PSC_OK; /* not gathered */
    if (!json_is_object(t))
        return psc_rl_bad(l, "topology", "is not an object");
    if (!(text = json_dumps(t, JSON_COMPACT)))
        return psc_rl_oom(l);
    snprintf(name, sizeof(name), "%s: topology", l->path);
    st = psc_facts_load_run(name, text, strlen(text), &r->facts, l->err, l->errlen);
    free(text);
    if (st == PSC_ERR_NO_DEVICE)
        st = psc_rl_bad(l, "topology", "holds no GPU");
    return st;
}

void psc_run_doc_free(psc_run_doc_t *r)
{
    if (!r)
        return;
    free(r->command_line);
    if (r->bw) {
        free(r->bw->tests);
        free(r->bw->results);
        free(r->bw);
    }
    if (r->lat) {
        free(r->lat->tests);
        free(r->lat->results);
        free(r->lat);
    }
    psc_facts_free(r->facts);
    free(r->findings);
    free(r);
}

psc_status_t psc_run_doc_load(const char *path, psc_run_doc_t **out, char *err, size_t errlen)
{
    psc_rl_t l = {path, err, errlen};
    psc_run_doc_t *r = calloc(1, sizeof(*r));
    json_t *doc = NULL;
    psc_status_t st;

    if (!r)
        return psc_rl_oom(&l);
    if ((st = psc_run_json_read(path, psc__accepted, &doc, NULL, NULL, err, errlen)) != PSC_OK ||
        (st = psc__kind(&l, doc, r)) != PSC_OK || (st = psc__head(&l, doc, r)) != PSC_OK ||
        (st = psc__system(&l, doc, &r->sys)) != PSC_OK || (st = psc__devices(&l, doc, r)) != PSC_OK)
        goto fail;
    if (strcmp(r->command, "lat") == 0)
        st = psc_rl_lat_suite(&l, doc, r, &r->lat);
    else if ((st = psc__parameters(&l, doc, r)) == PSC_OK && (st = psc_rl_bw_suite(&l, doc, &r->bw)) == PSC_OK &&
             strcmp(r->command, "report") == 0 && (st = psc__topology(&l, doc, r)) == PSC_OK)
        st = psc__findings(&l, doc, r);
    if (st != PSC_OK)
        goto fail;
    json_decref(doc);
    *out = r;
    return PSC_OK;
fail:
    json_decref(doc);
    psc_run_doc_free(r);
    return st;
}

void psc_run_doc_page(const psc_run_doc_t *r, psc_page_t *p)
{
    memset(p, 0, sizeof(*p));
    p->command = r->command;
    p->command_line = r->command_line;
    p->sys = &r->sys;
    p->devs = r->devs;
    p->ndev = r->ndev;
    p->measure = r->has_measure ? &r->measure : NULL;
    p->bw = r->bw;
    p->lat = r->lat;
    p->facts = r->facts;
    p->findings = r->findings;
    p->nfindings = r->nfindings;
    p->doctor_ran = r->doctor_ran;
    p->started_utc = r->started_utc;
    p->wall_s = r->wall_s;
    p->exit_code = r->exit_code;
}

psc_status_t psc_render_run(const char *path, const char *html_path, const char *svg_dir, const char *csv_dir,
                            int *loaded, char *err, size_t errlen)
{
    psc_run_doc_t *r = NULL;
    psc_page_t p;
    psc_status_t st = psc_run_doc_load(path, &r, err, errlen);

    *loaded = st == PSC_OK;
    if (st != PSC_OK)
        return st;
    psc_run_doc_page(r, &p);
    st = psc_page_write(&p, html_path, svg_dir, csv_dir, err, errlen);
    psc_run_doc_free(r);
    return st;
}
