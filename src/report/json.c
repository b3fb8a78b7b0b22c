#define _GNU_SOURCE
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "render.h"

static json_t *psc__json_device(const psc_device_info_t *d)
{
    json_t *o = json_object();
    char cc[16], pci_id[16];

    snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
    snprintf(pci_id, sizeof(pci_id), "%04x:%04x", d->pci_device_id & 0xffff, d->pci_device_id >> 16);
    json_object_set_new(o, "index", json_integer(d->index));
    json_object_set_new(o, "nvml_index", d->nvml_index >= 0 ? json_integer(d->nvml_index) : json_null());
    json_object_set_new(o, "name", json_string(d->name));
    json_object_set_new(o, "pci_bus_id", json_string(d->pci_bus_id));
    json_object_set_new(o, "uuid", d->uuid[0] ? json_string(d->uuid) : json_null());
    json_object_set_new(o, "pci_id", d->pci_device_id ? json_string(pci_id) : json_null()); /* vendor:device */
    json_object_set_new(o, "memory_bytes", json_integer((json_int_t)d->memory_bytes));
    json_object_set_new(o, "sm_count", json_integer(d->sm_count));
    json_object_set_new(o, "compute_capability", json_string(cc));
    json_object_set_new(o, "copy_engines", json_integer(d->async_engines));
    json_object_set_new(o, "numa_node", d->numa_node >= 0 ? json_integer(d->numa_node) : json_null());
    json_object_set_new(o, "memory_bus_width_bits", json_integer(d->mem_bus_width_bits));
    json_object_set_new(o, "memory_peak_gbs", d->mem_peak_gbs > 0 ? json_real(d->mem_peak_gbs) : json_null());
    json_object_set_new(o, "sm_clock_mhz", d->sm_clock_mhz >= 0 ? json_integer(d->sm_clock_mhz) : json_null());
    json_object_set_new(o, "sm_clock_max_mhz",
                        d->sm_clock_max_mhz >= 0 ? json_integer(d->sm_clock_max_mhz) : json_null());
    json_object_set_new(o, "memory_clock_mhz", d->mem_clock_mhz >= 0 ? json_integer(d->mem_clock_mhz) : json_null());
    json_object_set_new(o, "temperature_c", d->temperature_c >= 0 ? json_integer(d->temperature_c) : json_null());
    return o;
}

json_t *psc_json_run_new(const char *command, const psc_system_info_t *sys, const psc_device_info_t *devs,
                         int ndev)
{
    json_t *run = json_object(), *tool = json_object(), *system = json_object(), *gpus = json_array();
    char host[256] = "", when[32] = "";
    time_t now = time(NULL);
    struct tm tm;

    if (gethostname(host, sizeof(host) - 1) != 0)
        host[0] = '\0';
    if (gmtime_r(&now, &tm))
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(tool, "name", json_string("p2pscope"));
    json_object_set_new(tool, "version", json_string(PSC_VERSION_STRING));
    json_object_set_new(run, "tool", tool);
    json_object_set_new(run, "command", json_string(command));
    json_object_set_new(run, "hostname", json_string(host));
    json_object_set_new(run, "started_utc", json_string(when));
    json_object_set_new(system, "driver_release", sys->driver_release[0] ? json_string(sys->driver_release) : json_null());
    json_object_set_new(system, "cuda_driver_version", json_integer(sys->cuda_driver_version));
    json_object_set_new(system, "nvml_loaded", json_boolean(sys->nvml_loaded));
    json_object_set_new(system, "device_order", json_string(sys->device_order));
    json_object_set_new(system, "cuda_visible_devices",
                        sys->visible_devices[0] ? json_string(sys->visible_devices) : json_null());
    json_object_set_new(system, "device_count", json_integer(sys->device_count));
    json_object_set_new(run, "system", system);
    for (int i = 0; i < ndev; i++)
        json_array_append_new(gpus, psc__json_device(&devs[i]));
    json_object_set_new(run, "devices", gpus);
    json_object_set_new(run, "units", json_pack("{s:s}", "bandwidth", "GB/s, 1 GB = 1e9 bytes"));
    json_object_set_new(run, "tests", json_array());
    return run;
}

void psc_json_run_set_parameters(json_t *run, const psc_measure_opts_t *o, const int *devs, int ndev,
                                 const psc_bw_test_t *tests, int ntests)
{
    json_t *p = json_object(), *d = json_array(), *t = json_array();

    for (int i = 0; i < ndev; i++)
        json_array_append_new(d, json_integer(devs[i]));
    for (int i = 0; i < ntests; i++)
        json_array_append_new(t, json_string(psc_bw_test_name(tests[i])));
    json_object_set_new(p, "size_bytes", o->size ? json_integer((json_int_t)o->size) : json_string("per test"));
    json_object_set_new(p, "iterations", o->iterations ? json_integer(o->iterations) : json_string("auto"));
    json_object_set_new(p, "warmup", json_integer(o->warmup));
    json_object_set_new(p, "min_samples", json_integer(o->samples));
    json_object_set_new(p, "max_samples", json_integer(o->max_samples));
    json_object_set_new(p, "stable_pct", json_real(o->stable_pct));
    json_object_set_new(p, "host_numa_node", o->host_node >= 0 ? json_integer(o->host_node) : json_string("nearest"));
    json_object_set_new(p, "gate_timeout_ms", json_real(o->gate_timeout_ms));
    json_object_set_new(p, "seed", json_integer((json_int_t)(o->seed & 0x7fffffffffffffffull)));
    json_object_set_new(p, "devices", d);
    json_object_set_new(p, "tests", t);
    json_object_set_new(run, "parameters", p);
}

json_t *psc_json_bw_result(const psc_bw_result_t *r)
{
    const psc_bw_test_info_t *ti = psc_bw_test_info(r->c.test);
    json_t *t = json_object(), *samples = json_array(), *v = json_object(), *xfers = json_array();
    char label[48], a[16], b[16], iss[16];

    json_object_set_new(t, "name", json_string(psc_bw_test_name(r->c.test)));
    json_object_set_new(t, "title", json_string(psc_bw_test_title(r->c.test)));
    json_object_set_new(t, "direction", json_string(psc_case_label(&r->c, label, sizeof(label))));
    json_object_set_new(t, "src", json_string(psc_endpoint_name(r->c.src, a, sizeof(a))));
    json_object_set_new(t, "dst", json_string(psc_endpoint_name(r->c.dst, b, sizeof(b))));
    json_object_set_new(t, "issuer", json_string(psc_endpoint_name(r->c.issuer, iss, sizeof(iss))));
    json_object_set_new(t, "engine", json_string(ti && ti->engine == PSC_ENGINE_SM ? "sm" : "copy_engine"));
    if (ti && (r->c.src == PSC_HOST || r->c.dst == PSC_HOST))
        json_object_set_new(t, "host_memory", json_string(psc_hostmem_name(ti->hostmem)));
    json_object_set_new(t, "host_numa_node", r->host_node >= 0 ? json_integer(r->host_node) : json_null());
    json_object_set_new(t, "status", json_string(psc_result_status_string(r->status)));
    json_object_set_new(t, "reason", r->reason[0] ? json_string(r->reason) : json_null());
    json_object_set_new(t, "unit", json_string("GB/s"));
    json_object_set_new(t, "bytes_per_copy", json_integer((json_int_t)r->size));
    json_object_set_new(t, "copies_per_sample", json_integer(r->iterations));
    json_object_set_new(t, "bytes_per_sample", json_integer((json_int_t)r->bytes_per_sample));
    json_object_set_new(t, "timed_with_gate", json_boolean(r->gated));
    for (int k = 0; k < r->c.nxfer; k++) {
        const psc_xfer_t *x = &r->c.xfer[k];
        char a[16], b[16], iss[16];

        json_array_append_new(xfers, json_pack("{s:s,s:s,s:s,s:o}", "src", psc_endpoint_name(x->src, a, sizeof(a)),
                                               "dst", psc_endpoint_name(x->dst, b, sizeof(b)), "issuer",
                                               psc_endpoint_name(x->issuer, iss, sizeof(iss)), "median_gbs",
                                               r->status == PSC_RESULT_PASSED ? json_real(r->xfer_gbs[k]) : json_null()));
    }
    json_object_set_new(t, "transfers", xfers);
    for (unsigned k = 0; k < r->nsamples; k++)
        json_array_append_new(samples, json_real(r->samples_gbs[k]));
    json_object_set_new(t, "samples", samples);
    if (r->nsamples)
        json_object_set_new(t, "stats", json_pack("{s:i,s:f,s:f,s:f,s:f,s:f}", "n", (json_int_t)r->stats.n,
                                                  "median", r->stats.median, "min", r->stats.min, "max",
                                                  r->stats.max, "mean", r->stats.mean, "stddev", r->stats.stddev));
    else
        json_object_set_new(t, "stats", json_null());
    json_object_set_new(t, "run_ms", json_real(r->run_ms));
    json_object_set_new(v, "ms", json_real(r->verify_ms));
    json_object_set_new(v, "checked_samples", json_integer(r->verify.checked));
    json_object_set_new(v, "bad_samples", json_integer(r->verify.bad_samples));
    json_object_set_new(v, "bad_bytes", json_integer((json_int_t)r->verify.bad_bytes));
    if (r->verify.first_bad_offset >= 0) {
        json_object_set_new(v, "first_bad_offset", json_integer(r->verify.first_bad_offset));
        json_object_set_new(v, "expected", json_integer(r->verify.expected));
        json_object_set_new(v, "found", json_integer(r->verify.found));
    } else {
        json_object_set_new(v, "first_bad_offset", json_null());
    }
    json_object_set_new(t, "verify", v);
    return t;
}

void psc_json_run_add_test(json_t *run, json_t *test)
{
    json_array_append_new(json_object_get(run, "tests"), test);
}

void psc_json_run_finish(json_t *run, double wall_s, int exit_code)
{
    json_object_set_new(run, "wall_s", json_real(wall_s));
    json_object_set_new(run, "exit_code", json_integer(exit_code));
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
