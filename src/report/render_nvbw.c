/*
 * nvbandwidth 0.8's text and -j JSON from a bw suite (render_nvbw.h). The
 * layout follows its output.cpp and json_output.cpp: matrices with a
 * 10-wide column per GPU and two decimals, "N/A" where nothing was
 * measured, the SUM line (N/A counted as 0), and in JSON each cell as a
 * string of six significant digits, a bidirectional test's three matrices
 * appended to one "bandwidth_matrix" with the last one's sum and title.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "p2pscope/version.h"
#include "report/render_nvbw.h"

/* What nvbandwidth computes over a matrix: the sum, min and max with N/A as 0, and the count of cells above 0. */
typedef struct {
    double sum, min, max;
    int count;
} psc__nvbw_sums_t;

/* The mapped test's results in the suite: 1 with *res and *n, 0 when it did not run. */
static int psc__nvbw_results(const psc_nvbw_test_t *t, const psc_bw_suite_t *s, const psc_bw_result_t **res,
                             size_t *n)
{
    psc_bw_test_t bt;

    if (!s || !t->test || psc_bw_test_from_name(t->test, &bt) != PSC_OK)
        return 0;
    for (int k = 0; k < s->ntests; k++)
        if (s->tests[k].test == bt) {
            *res = s->results + s->tests[k].first;
            *n = s->tests[k].n;
            return 1;
        }
    return 0;
}

static int psc__nvbw_end(psc_nvbw_end_t e, const int *devs, int row, int col)
{
    switch (e) {
    case PSC_NVBW_HOST: return PSC_HOST;
    case PSC_NVBW_ROW: return devs[row];
    case PSC_NVBW_COL: return devs[col];
    default: return PSC_ALL;
    }
}

/* One matrix's cell, not a sum: a transfer's median, or where an end is every GPU the case's aggregate median. */
static int psc__nvbw_one(const psc_nvbw_matrix_t *m, const psc_bw_result_t *res, size_t n, const int *devs, int row,
                         int col, double *out)
{
    const int from = psc__nvbw_end(m->from, devs, row, col), to = psc__nvbw_end(m->to, devs, row, col);

    for (size_t r = 0; r < n; r++) {
        if (res[r].status != PSC_RESULT_PASSED)
            continue;
        if (from == PSC_ALL || to == PSC_ALL) {
            if (res[r].c.src == from && res[r].c.dst == to) {
                *out = res[r].stats.median;
                return 1;
            }
            continue;
        }
        for (int x = 0; x < res[r].c.nxfer; x++)
            if (res[r].c.xfer[x].src == from && res[r].c.xfer[x].dst == to) {
                *out = res[r].xfer_gbs[x];
                return 1;
            }
    }
    return 0;
}

int psc_nvbw_cell(const psc_nvbw_test_t *t, int m, const psc_bw_result_t *res, size_t n, const int *devs, int row,
                  int col, double *out)
{
    double a, b;

    if (m < 0 || m >= t->nmatrices)
        return 0;
    if (!t->m[m].sum_of_two)
        return psc__nvbw_one(&t->m[m], res, n, devs, row, col, out);
    if (!psc__nvbw_one(&t->m[0], res, n, devs, row, col, &a) || !psc__nvbw_one(&t->m[1], res, n, devs, row, col, &b))
        return 0;
    *out = a + b;
    return 1;
}

/* nvbandwidth's figures over matrix m: N/A counts as 0 for the sum, min and max. */
static psc__nvbw_sums_t psc__nvbw_sums(const psc_nvbw_test_t *t, int m, const psc_bw_result_t *res, size_t n,
                                        const psc_bw_suite_t *s)
{
    psc__nvbw_sums_t z = {0, DBL_MAX, DBL_MIN, 0};
    const int rows = psc_nvbw_matrix_rows(&t->m[m], s->ndev);

    for (int r = 0; r < rows; r++)
        for (int c = 0; c < s->ndev; c++) {
            double v = 0;

            if (!psc_nvbw_cell(t, m, res, n, s->devices, r, c, &v))
                v = 0;
            z.sum += v;
            z.min = v < z.min ? v : z.min;
            z.max = v > z.max ? v : z.max;
            z.count += v > 0;
        }
    return z;
}

/* The reason of the first failed case; NULL when none failed. */
static const char *psc__nvbw_failure(const psc_bw_result_t *res, size_t n)
{
    for (size_t r = 0; r < n; r++)
        if (res[r].status == PSC_RESULT_FAILED)
            return res[r].reason;
    return NULL;
}

/* Whether any case of it passed: nvbandwidth runs a test (else waives it) when it has a path to measure. */
static int psc__nvbw_ran(const psc_bw_result_t *res, size_t n)
{
    for (size_t r = 0; r < n; r++)
        if (res[r].status != PSC_RESULT_WAIVED)
            return 1;
    return 0;
}

void psc_render_nvbw_version(FILE *f)
{
    fprintf(f, "nvbandwidth Version: %s\nBuilt from Git version: p2pscope %s\n\n", PSC_NVBW_VERSION,
            PSC_VERSION_STRING);
}

void psc_render_nvbw_list(FILE *f)
{
    fprintf(f, "Index, Name:\n\tDescription\n=======================\n");
    for (int i = 0; i < psc_nvbw_test_count(); i++) {
        const psc_nvbw_test_t *t = psc_nvbw_test_at(i);

        if (t->test)
            fprintf(f, "%d, %s:\n\tp2pscope bw test %s%s%s\n\n", i, t->name, t->test, *t->note ? ": " : "", t->note);
        else
            fprintf(f, "%d, %s:\n\tnot run here (printed as waived): %s\n\n", i, t->name, t->note);
    }
}

/* nvbandwidth's name of a GPU: its name and PCI domain:bus:device, "NAME (0000001b:00:00)" style. */
static void psc__nvbw_gpu_name(const psc_device_info_t *d, char *buf, size_t len)
{
    unsigned dom = 0, bus = 0, dev = 0;

    if (sscanf(d->pci_bus_id, "%x:%x:%x", &dom, &bus, &dev) != 3)
        dom = bus = dev = 0;
    snprintf(buf, len, "%s (%08x:%02x:%02x)", d->name, dom, bus, dev);
}

void psc_render_nvbw_machine(FILE *f, const psc_system_info_t *sys, const psc_device_info_t *devs, int n,
                             const psc_nvbw_render_opts_t *o)
{
    char name[PSC_NAME_LEN + 32];

    if (o->warning)
        fprintf(f, "%s\n", o->warning);
    /* nvbandwidth prints the driver's CUDA version on both lines (its runtime's is overwritten) */
    fprintf(f, "CUDA Runtime Version: %d\nCUDA Driver Version: %d\nDriver Version: %s\n\n%s\n",
            sys->cuda_driver_version, sys->cuda_driver_version, sys->driver_release, o->hostname);
    for (int i = 0; i < n; i++) {
        psc__nvbw_gpu_name(&devs[i], name, sizeof(name));
        fprintf(f, "Device %d: %s\n", i, name);
    }
    fprintf(f, "\n");
}

/* One matrix as nvbandwidth's operator<< prints it, then its SUM (or PERF) line and, with -v, MIN, MAX, AVG. */
static void psc__nvbw_matrix(FILE *f, const psc_nvbw_test_t *t, int m, const psc_bw_result_t *res, size_t n,
                             const psc_bw_suite_t *s, const psc_nvbw_render_opts_t *o)
{
    const psc__nvbw_sums_t z = psc__nvbw_sums(t, m, res, n, s);
    const int rows = psc_nvbw_matrix_rows(&t->m[m], s->ndev);

    fprintf(f, "%s\n  ", t->m[m].title);
    for (int c = 0; c < s->ndev; c++)
        fprintf(f, "%10d", c);
    fprintf(f, "\n");
    for (int r = 0; r < rows; r++) {
        fprintf(f, "%2d", r);
        for (int c = 0; c < s->ndev; c++) {
            double v;

            if (psc_nvbw_cell(t, m, res, n, s->devices, r, c, &v))
                fprintf(f, "%10.2f", v);
            else
                fprintf(f, "%10s", "N/A");
        }
        fprintf(f, "\n");
    }
    if (o->perf)
        fprintf(f, "\n&&&& PERF %s%s %.2f +GB/s\n", t->name, t->m[m].key_suffix, z.sum);
    else
        fprintf(f, "\nSUM %s%s %.2f\n", t->name, t->m[m].key_suffix, z.sum);
    if (o->verbose)
        fprintf(f, "MIN %s%s %.2f\nMAX %s%s %.2f\nAVG %s%s %.2f\n", t->name, t->m[m].key_suffix, z.min, t->name,
                t->m[m].key_suffix, z.max, t->name, t->m[m].key_suffix, z.sum / z.count);
    fprintf(f, "\n");
}

void psc_render_nvbw_test(FILE *f, const psc_nvbw_test_t *t, const psc_bw_suite_t *suite,
                          const psc_nvbw_render_opts_t *o)
{
    const psc_bw_result_t *res = NULL;
    const char *failed;
    size_t n = 0;

    if (!psc__nvbw_results(t, suite, &res, &n) || !psc__nvbw_ran(res, n)) {
        fprintf(f, "Waived: %s\n", t->test ? "" : t->note);
        return;
    }
    fprintf(f, "Running %s.\n", t->name);
    for (int m = 0; m < t->nmatrices; m++)
        psc__nvbw_matrix(f, t, m, res, n, suite, o);
    if ((failed = psc__nvbw_failure(res, n)))
        fprintf(f, "Error: %s\n", failed);
}

void psc_render_nvbw_footer(FILE *f)
{
    fprintf(f, "NOTE: The reported results may not reflect the full capabilities of the platform.\n"
               "Performance can vary with software drivers, hardware clocks, and system topology.\n\n");
}

/* json_object_set_new that remembers a failure (out of memory) in *bad. */
static void psc__nvbw_set(json_t *o, const char *key, json_t *v, int *bad)
{
    if (!v || json_object_set_new(o, key, v) != 0)
        *bad = 1;
}

json_t *psc_json_nvbw_new(const psc_system_info_t *sys, const psc_device_info_t *devs, int n,
                          const psc_nvbw_render_opts_t *o)
{
    json_t *doc = json_object(), *nv = json_object(), *list = json_array();
    char name[PSC_NAME_LEN + 32], line[PSC_NAME_LEN + 512];
    int bad = !doc || !nv || !list;

    for (int i = 0; !bad && i < n; i++) {
        psc__nvbw_gpu_name(&devs[i], name, sizeof(name));
        snprintf(line, sizeof(line), "%d: %s: (%s)", i, name, o->hostname);
        bad |= json_array_append_new(list, json_string(line)) != 0;
    }
    if (!bad) {
        psc__nvbw_set(nv, "version", json_string(PSC_NVBW_VERSION), &bad);
        psc__nvbw_set(nv, "git_version", json_string("p2pscope " PSC_VERSION_STRING), &bad);
        psc__nvbw_set(nv, "CUDA Runtime Version", json_integer(sys->cuda_driver_version), &bad);
        psc__nvbw_set(nv, "Driver Version", json_string(sys->driver_release), &bad);
        psc__nvbw_set(nv, "GPU Device list", json_incref(list), &bad);
        psc__nvbw_set(nv, "testcases", json_array(), &bad);
        if (o->warning)
            psc__nvbw_set(nv, "warning", json_string(o->warning), &bad);
        psc__nvbw_set(doc, "nvbandwidth", json_incref(nv), &bad);
    }
    json_decref(list);
    json_decref(nv);
    if (bad) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* Matrix m's rows appended to "bandwidth_matrix" (cells as nvbandwidth's stringstream writes them), its sum,
 * title and, with -v, min, max and average set on tc, as each of nvbandwidth's addTestcaseResults does. */
static int psc__nvbw_json_matrix(json_t *tc, const psc_nvbw_test_t *t, int m, const psc_bw_result_t *res, size_t n,
                                 const psc_bw_suite_t *s, const psc_nvbw_render_opts_t *o)
{
    const psc__nvbw_sums_t z = psc__nvbw_sums(t, m, res, n, s);
    json_t *rows = json_object_get(tc, "bandwidth_matrix");
    int bad = 0;

    if (!rows && (rows = json_array()))
        psc__nvbw_set(tc, "bandwidth_matrix", rows, &bad);
    for (int r = 0; rows && !bad && r < psc_nvbw_matrix_rows(&t->m[m], s->ndev); r++) {
        json_t *row = json_array();

        for (int c = 0; row && !bad && c < s->ndev; c++) {
            char cell[32] = "N/A";
            double v;

            if (psc_nvbw_cell(t, m, res, n, s->devices, r, c, &v))
                snprintf(cell, sizeof(cell), "%g", v);
            bad |= json_array_append_new(row, json_string(cell)) != 0;
        }
        bad |= !row || json_array_append_new(rows, row) != 0;
    }
    psc__nvbw_set(tc, "sum", json_real(z.sum), &bad);
    psc__nvbw_set(tc, "bandwidth_description", json_string(t->m[m].title), &bad);
    psc__nvbw_set(tc, "status", json_string("Passed"), &bad);
    if (o->verbose) {
        psc__nvbw_set(tc, "min", json_real(z.min), &bad);
        psc__nvbw_set(tc, "max", json_real(z.max), &bad);
        if (z.count) /* nvbandwidth divides by zero there; JSON has no NaN */
            psc__nvbw_set(tc, "average", json_real(z.sum / z.count), &bad);
    }
    return !rows || bad ? -1 : 0;
}

int psc_json_nvbw_add_test(json_t *doc, const psc_nvbw_test_t *t, const psc_bw_suite_t *suite,
                           const psc_nvbw_render_opts_t *o)
{
    json_t *list = json_object_get(json_object_get(doc, "nvbandwidth"), "testcases"), *tc = json_object();
    const psc_bw_result_t *res = NULL;
    const char *failed;
    size_t n = 0;
    int bad = !list || !tc;

    psc__nvbw_set(tc, "name", json_string(t->name), &bad);
    if (!bad && (!psc__nvbw_results(t, suite, &res, &n) || !psc__nvbw_ran(res, n)))
        psc__nvbw_set(tc, "status", json_string("Waived"), &bad);
    else
        for (int m = 0; !bad && m < t->nmatrices; m++)
            bad |= psc__nvbw_json_matrix(tc, t, m, res, n, suite, o) != 0;
    if (!bad && res && (failed = psc__nvbw_failure(res, n))) {
        psc__nvbw_set(tc, "status", json_string("Error"), &bad);
        psc__nvbw_set(tc, "error", json_string(failed), &bad);
    }
    if (bad || json_array_append_new(list, tc) != 0) {
        json_decref(bad ? tc : NULL);
        return -1;
    }
    return 0;
}

int psc_json_nvbw_print(FILE *f, const json_t *doc)
{
    /* jsoncpp's styled writer sorts the keys; nvbandwidth adds a blank line after the document */
    if (json_dumpf(doc, f, JSON_INDENT(3) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17)) != 0)
        return -1;
    return fputs("\n\n", f) < 0 ? -1 : 0;
}
