/*
 * The run document as JSON (json.h): its head (tool, machine, GPUs), the results of each command, written
 * atomically to a file or to stdout.
 */
#define _GNU_SOURCE
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/p2pscope_private.h"
#include "render.h"

json_t *psc_json_str(const char *s)
{
    return psc_json_text(s, 0);
}

json_t *psc_json_real_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* The object, or NULL (freed) when one of its inserts failed. */
json_t *psc_json_done(json_t *o, int bad)
{
    if (!bad)
        return o;
    json_decref(o);
    return NULL;
}

static int psc__identify;

void psc_json_identify(int on) { psc__identify = on != 0; }
int psc_json_identifying(void) { return psc__identify; }

static json_t *psc__json_device(const psc_device_info_t *d)
{
    json_t *o = json_object();
    char cc[16], pci_id[16];
    int bad = 0;

    snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
    snprintf(pci_id, sizeof(pci_id), "%04x:%04x", d->pci_device_id & 0xffff, d->pci_device_id >> 16);
    psc_json_set(o, "index", json_integer(d->index), &bad);
    psc_json_set(o, "nvml_index", d->nvml_index >= 0 ? json_integer(d->nvml_index) : json_null(), &bad);
    psc_json_set(o, "name", psc_json_str(d->name), &bad);
    psc_json_set(o, "pci_bus_id", psc_json_str(d->pci_bus_id), &bad);
    psc_json_set(o, "uuid", psc__identify && d->uuid[0] ? psc_json_str(d->uuid) : json_null(), &bad);
    psc_json_set(o, "pci_id", d->pci_device_id ? psc_json_str(pci_id) : json_null(), &bad); /* vendor:device */
    psc_json_set(o, "memory_bytes", json_integer((json_int_t)d->memory_bytes), &bad);
    psc_json_set(o, "sm_count", json_integer(d->sm_count), &bad);
    psc_json_set(o, "compute_capability", psc_json_str(cc), &bad);
    psc_json_set(o, "copy_engines", json_integer(d->async_engines), &bad);
    psc_json_set(o, "numa_node", d->numa_node >= 0 ? json_integer(d->numa_node) : json_null(), &bad);
    psc_json_set(o, "memory_bus_width_bits", json_integer(d->mem_bus_width_bits), &bad);
    psc_json_set(o, "memory_peak_gbs", d->mem_peak_gbs > 0 ? json_real(d->mem_peak_gbs) : json_null(), &bad);
    psc_json_set(o, "sm_clock_mhz", d->sm_clock_mhz >= 0 ? json_integer(d->sm_clock_mhz) : json_null(), &bad);
    psc_json_set(o, "sm_clock_max_mhz",
                        d->sm_clock_max_mhz >= 0 ? json_integer(d->sm_clock_max_mhz) : json_null(), &bad);
    psc_json_set(o, "memory_clock_mhz", d->mem_clock_mhz >= 0 ? json_integer(d->mem_clock_mhz) : json_null(), &bad);
    psc_json_set(o, "temperature_c", d->temperature_c >= 0 ? json_integer(d->temperature_c) : json_null(), &bad);
    return psc_json_done(o, bad);
}

json_t *psc_json_run_new(const char *command, const psc_system_info_t *sys, const psc_device_info_t *devs,
                         int ndev)
{
    json_t *run = json_object(), *tool = json_object(), *system = json_object(), *gpus = json_array();
    char host[256] = "", when[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    int bad = 0;

    if (gethostname(host, sizeof(host) - 1) != 0)
        host[0] = '\0';
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    psc_json_set(tool, "name", psc_json_str("p2pscope"), &bad);
    psc_json_set(tool, "version", psc_json_str(psc_version(NULL, NULL, NULL)), &bad);
    psc_json_set(run, "tool", tool, &bad);
    psc_json_set(run, "run_format", json_integer(PSC_RUN_FORMAT), &bad);
    psc_json_set(run, "command", psc_json_str(command), &bad);
    psc_json_set(run, "hostname", psc__identify && host[0] ? psc_json_str(host) : json_null(), &bad);
    psc_json_set(run, "started_utc", psc_json_str(when), &bad);
    psc_json_set(system, "driver_release", sys->driver_release[0] ? psc_json_str(sys->driver_release) : json_null(), &bad);
    psc_json_set(system, "cuda_driver_version", json_integer(sys->cuda_driver_version), &bad);
    psc_json_set(system, "nvml_loaded", json_boolean(sys->nvml_loaded), &bad);
    psc_json_set(system, "nvml_note", sys->nvml_note[0] ? psc_json_str(sys->nvml_note) : json_null(), &bad);
    psc_json_set(system, "device_order", psc_json_str(sys->device_order), &bad);
    psc_json_set(system, "cuda_visible_devices",
                        sys->visible_devices[0] ? psc_json_str(sys->visible_devices) : json_null(), &bad);
    psc_json_set(system, "device_count", json_integer(sys->device_count), &bad);
    psc_json_set(system, "numa_nodes", json_integer(sys->numa_nodes), &bad);
    psc_json_set(run, "system", system, &bad);
    for (int i = 0; i < ndev; i++)
        psc_json_push(gpus, psc__json_device(&devs[i]), &bad);
    psc_json_set(run, "devices", gpus, &bad);
    psc_json_set(run, "units", json_pack("{s:o}", "bandwidth", psc_json_str("GB/s, 1 GB = 1e9 bytes")), &bad);
    psc_json_set(run, "tests", json_array(), &bad);
    return psc_json_done(run, bad);
}

/*
 * A part that could not be added marks the document incomplete: callers
 * need not check every step, since finishing it then fails and nothing is
 * written.
 */
static psc_status_t psc__run_status(json_t *run, int bad)
{
    if (bad)
        json_object_set_new(run, "incomplete", json_true());
    return bad ? PSC_ERR_NO_MEMORY : PSC_OK;
}

psc_status_t psc_json_run_set(json_t *run, const char *key, json_t *value)
{
    int bad = 0;

    psc_json_set(run, key, value, &bad);
    return psc__run_status(run, bad);
}

psc_status_t psc_json_run_set_parameters(json_t *run, const psc_measure_opts_t *o, const int *devs, int ndev,
                                         const psc_bw_test_t *tests, int ntests)
{
    json_t *p = json_object(), *d = json_array(), *t = json_array();
    int bad = 0;

    for (int i = 0; i < ndev; i++)
        psc_json_push(d, json_integer(devs[i]), &bad);
    for (int i = 0; i < ntests; i++)
        psc_json_push(t, psc_json_str(psc_bw_test_name(tests[i])), &bad);
    psc_json_set(p, "size_bytes", o->size ? json_integer((json_int_t)o->size) : psc_json_str("per test"), &bad);
    psc_json_set(p, "iterations", o->iterations ? json_integer(o->iterations) : psc_json_str("auto"), &bad);
    psc_json_set(p, "warmup", json_integer(o->warmup), &bad);
    psc_json_set(p, "min_samples", json_integer(o->samples), &bad);
    psc_json_set(p, "max_samples", json_integer(o->max_samples), &bad);
    psc_json_set(p, "stable_pct", json_real(o->stable_pct), &bad);
    psc_json_set(p, "host_numa_node", o->host_node >= 0 ? json_integer(o->host_node) : psc_json_str("nearest"), &bad);
    psc_json_set(p, "gate_timeout_ms", json_real(o->gate_timeout_ms), &bad);
    psc_json_set(p, "verify", json_boolean(o->verify), &bad);
    psc_json_set(p, "seed", json_integer((json_int_t)(o->seed & 0x7fffffffffffffffull)), &bad);
    psc_json_set(p, "devices", d, &bad);
    psc_json_set(p, "tests", t, &bad);
    psc_json_set(run, "parameters", p, &bad);
    return psc__run_status(run, bad);
}

/* The coefficient of variation in percent (psc_stats_cv_pct), or null where it means nothing. */
static json_t *psc__cv_json(const psc_stats_t *s)
{
    double cv;

    return psc_stats_cv_pct(s, &cv) ? json_real(cv) : json_null();
}

json_t *psc_json_bw_result(const psc_bw_result_t *r)
{
    const psc_bw_test_info_t *ti = psc_bw_test_info(r->c.test);
    json_t *t = json_object(), *samples = json_array(), *v = json_object(), *xfers = json_array();
    char label[48], a[16], b[16], iss[16];
    int bad = 0;

    psc_json_set(t, "name", psc_json_str(psc_bw_test_name(r->c.test)), &bad);
    psc_json_set(t, "title", psc_json_str(psc_bw_test_title(r->c.test)), &bad);
    psc_json_set(t, "direction", psc_json_str(psc_case_label(&r->c, label, sizeof(label))), &bad);
    psc_json_set(t, "src", psc_json_str(psc_endpoint_name(r->c.src, a, sizeof(a))), &bad);
    psc_json_set(t, "dst", psc_json_str(psc_endpoint_name(r->c.dst, b, sizeof(b))), &bad);
    psc_json_set(t, "issuer", psc_json_str(psc_endpoint_name(r->c.issuer, iss, sizeof(iss))), &bad);
    psc_json_set(t, "engine", psc_json_str(psc_render_engine_key(ti ? ti->engine : PSC_ENGINE_CE)), &bad);
    if (ti && (r->c.src == PSC_HOST || r->c.dst == PSC_HOST))
        psc_json_set(t, "host_memory", psc_json_str(psc_hostmem_name(ti->hostmem)), &bad);
    psc_json_set(t, "host_numa_node", r->host_node >= 0 ? json_integer(r->host_node) : json_null(), &bad);
    psc_json_set(t, "status", psc_json_str(psc_result_status_string(r->status)), &bad);
    psc_json_set(t, "reason", r->reason[0] ? psc_json_str(r->reason) : json_null(), &bad);
    psc_json_set(t, "unit", psc_json_str("GB/s"), &bad);
    psc_json_set(t, "bytes_per_copy", json_integer((json_int_t)r->size), &bad);
    psc_json_set(t, "copies_per_sample", json_integer(r->iterations), &bad);
    psc_json_set(t, "bytes_per_sample", json_integer((json_int_t)r->bytes_per_sample), &bad);
    psc_json_set(t, "timed_with_gate", json_boolean(r->gated), &bad);
    for (int k = 0; k < r->c.nxfer; k++) {
        const psc_xfer_t *x = &r->c.xfer[k];
        char a[16], b[16], iss[16];

        psc_json_push(xfers,
                  json_pack("{s:o,s:o,s:o,s:o}", "src", psc_json_str(psc_endpoint_name(x->src, a, sizeof(a))), "dst",
                            psc_json_str(psc_endpoint_name(x->dst, b, sizeof(b))), "issuer",
                            psc_json_str(psc_endpoint_name(x->issuer, iss, sizeof(iss))), "median_gbs",
                            r->status == PSC_RESULT_PASSED ? json_real(r->xfer_gbs[k]) : json_null()),
                  &bad);
    }
    psc_json_set(t, "transfers", xfers, &bad);
    for (unsigned k = 0; k < r->nsamples; k++)
        psc_json_push(samples, json_real(r->samples_gbs[k]), &bad);
    psc_json_set(t, "samples", samples, &bad);
    if (r->nsamples)
        psc_json_set(t, "stats",
                 json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:o}", "n", (json_int_t)r->stats.n, "median", r->stats.median, "min",
                           r->stats.min, "max", r->stats.max, "mean", r->stats.mean, "stddev", r->stats.stddev,
                           "cv_pct", psc__cv_json(&r->stats)),
                 &bad);
    else
        psc_json_set(t, "stats", json_null(), &bad);
    psc_json_set(t, "run_ms", json_real(r->run_ms), &bad);
    psc_json_set(v, "ms", json_real(r->verify_ms), &bad);
    psc_json_set(v, "checked_samples", json_integer(r->verify.checked), &bad);
    psc_json_set(v, "bad_samples", json_integer(r->verify.bad_samples), &bad);
    psc_json_set(v, "bad_bytes", json_integer((json_int_t)r->verify.bad_bytes), &bad);
    if (r->verify.first_bad_offset >= 0) {
        psc_json_set(v, "first_bad_offset", json_integer(r->verify.first_bad_offset), &bad);
        psc_json_set(v, "expected", json_integer(r->verify.expected), &bad);
        psc_json_set(v, "found", json_integer(r->verify.found), &bad);
    } else {
        psc_json_set(v, "first_bad_offset", json_null(), &bad);
    }
    psc_json_set(t, "verify", v, &bad);
    return psc_json_done(t, bad);
}

psc_status_t psc_json_run_add_test(json_t *run, json_t *test)
{
    int bad = 0;

    psc_json_push(json_object_get(run, "tests"), test, &bad);
    return psc__run_status(run, bad);
}

psc_status_t psc_json_run_finish(json_t *run, double wall_s, int exit_code)
{
    int bad = 0;

    psc_json_set(run, "wall_s", json_real(wall_s), &bad);
    psc_json_set(run, "exit_code", json_integer(exit_code), &bad);
    return bad || json_object_get(run, "incomplete") ? PSC_ERR_NO_MEMORY : PSC_OK;
}

psc_status_t psc_json_write(const json_t *doc, const char *path, char *errbuf, size_t errlen)
{
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    size_t len;
    psc_status_t st = PSC_OK;

    if (!text) {
        snprintf(errbuf, errlen, "out of host memory");
        return PSC_ERR_NO_MEMORY;
    }
    len = strlen(text);
    if (!path || strcmp(path, "-") == 0) {
        if (fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) != 0) {
            snprintf(errbuf, errlen, "cannot write JSON to stdout: %s", strerror(errno));
            st = PSC_ERR_IO;
        }
    } else {
        char *with_nl = realloc(text, len + 2);

        if (!with_nl) {
            snprintf(errbuf, errlen, "out of host memory");
            st = PSC_ERR_NO_MEMORY;
        } else {
            text = with_nl;
            text[len] = '\n';
            text[len + 1] = '\0';
            st = psc_write_file_atomic(path, text, len + 1, errbuf, errlen);
        }
    }
    free(text);
    return st;
}
