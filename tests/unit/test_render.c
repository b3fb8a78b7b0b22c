/*
 * p2pscope render: a JSON run drawn again without a GPU. On the fake driver, a run's own --html, --csv and --svg
 * against `render` of its --json, file for file and byte for byte (bw with a sweep, a failure and --no-verify,
 * report with its topology and findings, lat, one GPU with tests that had no case); render's refusals (one line,
 * exit 2, nothing written) with no driver at all; the loader on the recorded runs of tests/data/render; the
 * facts of a report keeping the PCIe paths the run recorded.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "scratch_dir.h"

#include "run_binary.h"

#include "lib/p2pscope_private.h"
#include "report/run_load.h"

/* render loads no driver: one that cannot be found proves it (a command that opened it would exit 3). */
static const char *const psc__no_driver[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};
static const char *const psc__fake[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=contexts",
                                        "FAKE_CUDA_KERNELS=1", "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1",
                                        NULL};
static const char *const psc__fake_one[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=contexts",
                                            "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_COUNT=1",
                                            "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", NULL};

static int setup(void **state)
{
    (void)state;
    return psc_scratch_make("psc-render");
}

static int teardown(void **state)
{
    (void)state;
    return psc_scratch_remove();
}

static char *psc__file(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    char err[256];

    if (psc_read_file_bounded(path, 64u << 20, &text, &len, err, sizeof(err)) != PSC_OK)
        fail_msg("%s", err);
    return text;
}

/*
 * What a page may show differently from the live run's: the start (the JSON's is stamped when it is written,
 * the page's when the page is, milliseconds apart: a second may tick between) and the wall time (measured at
 * each write). Each start "YYYY-MM-DDTHH:MM:SSZ" and the wall time's cell become '#'s.
 */
static void psc__mask(char *s)
{
    static const char wall[] = "<th>wall time</th><td>";

    for (char *p = s; *p; p++) {
        int iso = strlen(p) >= 20 && p[4] == '-' && p[7] == '-' && p[10] == 'T' && p[13] == ':' && p[16] == ':' &&
                  p[19] == 'Z';

        for (int k = 0; iso && k < 19; k++)
            if (k != 4 && k != 7 && k != 10 && k != 13 && k != 16)
                p[k] = '#';
    }
    for (char *p = strstr(s, wall); p; p = strstr(p + 1, wall))
        for (char *q = p + sizeof(wall) - 1; *q && *q != '<'; q++)
            *q = '#';
}

/*
 * Where a and b differ, the offset of the first difference that is not a number within a sub-pixel of the
 * other's, or one unit of its last printed decimal (-1: none). A figure's geometry comes from the measured
 * values, and the JSON holds them as its writer rounds them (10 significant digits): the live page's coordinates
 * may differ from the rendered page's in the third decimal (564.5 against 564.503906), and a value on a rounding
 * boundary may print one last digit apart (18491.1 against 18491.0, from 18491.0500001 and its JSON 18491.05);
 * every word, and every number further apart, must be the same.
 */
/* One unit of the last decimal printed in the number from p to end; 0 for a whole number (counts stay exact). */
static double psc__last_digit(const char *p, const char *end)
{
    const char *dot = memchr(p, '.', (size_t)(end - p));
    double unit = 1;

    if (!dot)
        return 0;
    for (const char *q = dot + 1; q < end && *q >= '0' && *q <= '9'; q++)
        unit /= 10;
    return unit;
}

static long psc__first_difference(const char *a, const char *b)
{
    const char *p = a, *q = b;

    while (*p || *q) {
        if ((*p >= '0' && *p <= '9') && (*q >= '0' && *q <= '9')) {
            char *pe, *qe;
            double x = strtod(p, &pe), y = strtod(q, &qe);

            double unit = psc__last_digit(p, pe) > psc__last_digit(q, qe) ? psc__last_digit(p, pe)
                                                                               : psc__last_digit(q, qe);

            if (fabs(x - y) > 0.01 && fabs(x - y) > unit * 1.000001)
                return p - a;
            p = pe;
            q = qe;
            continue;
        }
        if (*p != *q)
            return p - a;
        p++;
        q++;
    }
    return -1;
}

static void psc__same_file(const char *live, const char *again)
{
    char *a = psc__file(live), *b = psc__file(again);
    long at;

    psc__mask(a);
    psc__mask(b);
    if ((at = psc__first_difference(a, b)) >= 0)
        fail_msg("%s and %s differ at byte %ld: '%.60s' against '%.60s'", live, again, at,
                 a + (at > 20 ? at - 20 : 0), b + (at > 20 ? at - 20 : 0));
    free(a);
    free(b);
}

/* Every file of live is in again with the same bytes, and again has no other. */
static void psc__same_dir(const char *live, const char *again)
{
    DIR *d = opendir(live);
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d))) {
        char a[512], b[512];

        if (e->d_name[0] == '.')
            continue;
        snprintf(a, sizeof(a), "%s/%s", live, e->d_name);
        snprintf(b, sizeof(b), "%s/%s", again, e->d_name);
        psc__same_file(a, b);
        n++;
    }
    closedir(d);
    assert_true(n > 0);
    assert_int_equal(psc_scratch_entries(again), n);
}

/* The time after key in text ("2026-12-07T05:52:33Z"), as seconds since 1970. */
static time_t psc__time_after(const char *text, const char *key)
{
    const char *at = strstr(text, key);
    struct tm tm;

    memset(&tm, 0, sizeof(tm));
    assert_non_null(at);
    assert_non_null(strptime(at + strlen(key), "%Y-%m-%dT%H:%M:%SZ", &tm));
    return timegm(&tm);
}

/* The JSON's start is the run's, as the live page's is (a run's document is made after bw's and lat's tests). */
static void psc__same_start(const char *json, const char *html)
{
    char *j = psc__file(json), *h = psc__file(html);
    long d = (long)(psc__time_after(j, "\"started_utc\": \"") - psc__time_after(h, "<th>started (UTC)</th><td>"));

    assert_true(d >= -1 && d <= 1);
    free(j);
    free(h);
}

/* args with --json, --csv and (cairo) --html, --svg under NAME; live exits want_rc; then render, and the same files. */
static void psc__live_then_render(const char *name, const char *const *args, const char *const *env, int want_rc)
{
    char json[256], html[256], csv[256], svg[256], html2[256], csv2[256], svg2[256];
    const char *argv[32];
    int n = 0;
    psc__run_t r;

    snprintf(json, sizeof(json), "%s/%s.json", psc__dir, name);
    snprintf(html, sizeof(html), "%s/%s.html", psc__dir, name);
    snprintf(csv, sizeof(csv), "%s/%s-csv", psc__dir, name);
    snprintf(svg, sizeof(svg), "%s/%s-svg", psc__dir, name);
    snprintf(html2, sizeof(html2), "%s/%s-again.html", psc__dir, name);
    snprintf(csv2, sizeof(csv2), "%s/%s-again-csv", psc__dir, name);
    snprintf(svg2, sizeof(svg2), "%s/%s-again-svg", psc__dir, name);
    for (; args[n]; n++)
        argv[n] = args[n];
    argv[n++] = "--json";
    argv[n++] = json;
    argv[n++] = "--csv";
    argv[n++] = csv;
#ifdef P2PSCOPE_HAVE_CAIRO
    argv[n++] = "--html";
    argv[n++] = html;
    argv[n++] = "--svg";
    argv[n++] = svg;
#endif
    argv[n] = NULL;
    r = psc__run(argv, env);
    if (r.rc != want_rc)
        fprintf(stderr, "%s: rc=%d stderr=%s", name, r.rc, r.err);
    assert_int_equal(r.rc, want_rc);
    psc__free(&r);
    r = psc__run((const char *[]){"render", json, "--csv", csv2, "--html", html2, "--svg", svg2, NULL}, psc__no_driver);
#ifndef P2PSCOPE_HAVE_CAIRO
    psc__free(&r);
    r = psc__run((const char *[]){"render", json, "--csv", csv2, NULL}, psc__no_driver);
#endif
    if (r.rc != 0)
        fprintf(stderr, "render %s: rc=%d stderr=%s", name, r.rc, r.err);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "");
    psc__free(&r);
    psc__same_dir(csv, csv2);
#ifdef P2PSCOPE_HAVE_CAIRO
    psc__same_start(json, html);
    psc__same_file(html, html2);
    psc__same_dir(svg, svg2);
#endif
}

static void test_bw_sweep_same(void **state)
{
    (void)state;
    psc__live_then_render("sweep",
                          (const char *[]){"bw", "-t", "gpu_to_gpu_write_ce,gpu_to_gpu_write_sm,host_to_gpu_ce", "-b",
                                           "4K", "-e", "16K", "-n", "3", NULL},
                          psc__fake, 0);
}

/* A failed check (its reason in the page and bw.csv), and a run with the checks off (the context says so). */
static void test_bw_failed_and_unchecked_same(void **state)
{
    (void)state;
    psc__live_then_render("corrupt",
                          (const char *[]){"bw", "-t", "gpu_to_gpu_write_ce,host_to_gpu_ce", "-s", "1M", "-n", "3",
                                           "--test-corrupt-offset", "5", NULL},
                          psc__fake, 1);
    psc__live_then_render("unchecked",
                          (const char *[]){"bw", "-t", "gpu_to_gpu_read_ce,all_to_one_write_ce,gpu_to_host_ce", "-s",
                                           "1M", "-n", "3", "--no-verify", NULL},
                          psc__fake, 0);
}

static void test_report_same(void **state)
{
    (void)state;
    psc__live_then_render("report",
                          (const char *[]){"report", "-t", "gpu_to_gpu_read_ce,ring_write_ce,host_to_all_ce", "-s",
                                           "1M", "-n", "3", NULL},
                          psc__fake, 0);
    /* every test on one GPU: those that need two have no case, a heading each */
    psc__live_then_render("report1", (const char *[]){"report", "-s", "64K", "-n", "3", NULL}, psc__fake_one, 0);
}

static void test_lat_same(void **state)
{
    (void)state;
    psc__live_then_render("lat",
                          (const char *[]){"lat", "-t", "gpu_to_gpu_chase,gpu_gpu_flag,gpu_to_gpu_copy_ce,"
                                           "host_to_gpu_sync_copy", "-n", "8", NULL},
                          psc__fake, 0);
    psc__live_then_render("lat1", (const char *[]){"lat", "-n", "8", NULL}, psc__fake_one, 0);
}

/* A run that does not load: one line naming what was wrong, exit 2, and no file or directory made. */
static void psc__refused(const char *run, const char *want)
{
    const int before = psc_scratch_entries(psc__dir);

    psc__expect_error((const char *[]){"render", run, "--html", psc__path("out.html"), "--csv", psc__path("out-csv"),
                                       NULL},
                      psc__no_driver, 2, want);
    assert_int_equal(psc_scratch_entries(psc__dir), before);
}

/* A recorded run with one edit (python-free: the text replaced once), written to NAME. */
static const char *psc__edited(const char *name, const char *from, const char *to)
{
    char *text = psc__file(TEST_DATA "/render/report.json"), *at = strstr(text, from);
    const char *path = psc__path(name);
    FILE *f = fopen(path, "w");

    assert_non_null(at);
    assert_non_null(f);
    fprintf(f, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    fclose(f);
    free(text);
    return path;
}

static void test_bad_runs_refused(void **state)
{
    char *text = psc__file(TEST_DATA "/render/bw_sweep.json");
    const char *cut = psc__path("cut.json");
    FILE *f = fopen(cut, "w");

    (void)state;
    assert_non_null(f);
    fwrite(text, 1, strlen(text) / 2, f);
    fclose(f);
    free(text);
    psc__refused(cut, "not valid JSON");
    psc__refused(psc__path("missing.json"), "no such file");
    psc__refused(TEST_DATA "/compare/coll_a.json", "a p2pscope coll run: render draws runs of bw, report or lat");
    psc__refused(TEST_DATA "/compare/bw_a.json", "no run_format: written by a p2pscope older than render");
    psc__refused(psc__edited("newer.json", "\"run_format\": 1", "\"run_format\": 2"),
                 "run_format 2: written by a newer p2pscope");
    psc__refused(psc__edited("name.json", "\"name\": \"gpu_to_gpu_read_ce\"", "\"name\": \"gpu_to_gpu_warp_ce\""),
                 "tests[0] names no bandwidth test");
    psc__refused(psc__edited("src.json", "\"src\": \"gpu0\"", "\"src\": \"gpu0x\""), "not gpuN, host or all");
    psc__refused(psc__edited("samples.json", "\"samples\": [", "\"samples\": [\"x\", "), "not a number");
    psc__refused(psc__edited("path.json", "\"path\": \"?\"", "\"path\": \"NVX\""), "topology: pairs[0].path");
    psc__refused(psc__edited("sev.json", "\"severity\": \"info\"", "\"severity\": \"fatal\""),
                 "findings[0] lacks a severity");
    psc__refused(psc__edited("fmt.json", "\"run_format\": 1", "\"run_format\": \"1\""), "run_format is not");
}

static void test_options_refused(void **state)
{
    const char *run = TEST_DATA "/render/report.json", *copy = psc__path("copy.json");
    char *text = psc__file(run);
    FILE *f = fopen(copy, "w");

    (void)state;
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
    psc__expect_error((const char *[]){"render", run, "--json", NULL}, psc__no_driver, 2,
                      "unknown option '--json' for render");
    psc__expect_error((const char *[]){"render", run, "-d", "0", NULL}, psc__no_driver, 2,
                      "unknown option '-d' for render");
    psc__expect_error((const char *[]){"render", run, NULL}, psc__no_driver, 2, "writes nothing without --html");
    psc__expect_error((const char *[]){"render", "--csv", psc__path("c"), NULL}, psc__no_driver, 2, "needs a run");
    psc__expect_error((const char *[]){"render", run, run, "--csv", psc__path("c"), NULL}, psc__no_driver, 2,
                      "one run, not a second");
    psc__expect_error((const char *[]){"render", run, "--csv=", NULL}, psc__no_driver, 2, "empty --csv");
    /* the targets before the run: a missing run behind an unwritable --csv is refused for the --csv */
    psc__expect_error((const char *[]){"render", psc__path("none.json"), "--csv", "/nonexistent/x/t", NULL},
                      psc__no_driver, 2, "/nonexistent/x");
#ifdef P2PSCOPE_HAVE_CAIRO
    psc__expect_error((const char *[]){"render", copy, "--html", copy, NULL}, psc__no_driver, 2,
                      "would replace the run it draws");
    /* a page that cannot be written is a failed run (1), as the live run's */
    psc__expect_error((const char *[]){"render", run, "--html", "/dev/full", NULL}, psc__no_driver, 1, "/dev/full");
#endif
    text = psc__file(copy);
    assert_non_null(strstr(text, "\"run_format\": 1")); /* the run itself untouched */
    free(text);
}

static psc_run_doc_t *psc__load(const char *name)
{
    char path[512], err[512] = "";
    psc_run_doc_t *r = NULL;

    snprintf(path, sizeof(path), "%s/render/%s", TEST_DATA, name);
    if (psc_run_doc_load(path, &r, err, sizeof(err)) != PSC_OK)
        fail_msg("%s", err);
    return r;
}

static int psc__no_case(const psc_suite_test_t *t, int n)
{
    int k = 0;

    for (int i = 0; i < n; i++)
        k += t[i].n == 0;
    return k;
}

/* What the recorded runs hold comes back: sizes of a sweep, tests in the order run, tests with no case. */
static void test_loader_on_recordings(void **state)
{
    psc_run_doc_t *r = psc__load("bw_sweep.json");

    (void)state;
    assert_string_equal(r->command, "bw");
    assert_non_null(strstr(r->command_line, "-b 4K -e 16K"));
    assert_non_null(r->bw);
    assert_null(r->lat);
    assert_null(r->facts);
    assert_int_equal(r->doctor_ran, 0);
    assert_int_equal(r->bw->nsizes, 3);
    assert_true(r->bw->sizes[0] == 4096 && r->bw->sizes[1] == 8192 && r->bw->sizes[2] == 16384);
    assert_int_equal(r->bw->ntests, 3);
    assert_int_equal(r->bw->ndev, 2);
    for (int t = 0; t < 3; t++) /* two cases (ordered pairs; host -> each GPU) at three sizes each */
        assert_int_equal(r->bw->tests[t].n, 6);
    assert_string_equal(psc_bw_test_name(r->bw->tests[2].test), "host_to_gpu_ce");
    assert_int_equal(r->bw->results[r->bw->tests[2].first].c.src, PSC_HOST);
    assert_int_equal(r->bw->results[r->bw->tests[2].first].c.dst, 0);
    assert_int_equal(r->bw->results[0].nsamples, r->bw->results[0].stats.n);
    assert_true(r->has_measure && r->measure.samples == 3 && r->measure.verify == 1);
    psc_run_doc_free(r);

    r = psc__load("report.json");
    assert_string_equal(r->command, "report");
    assert_non_null(r->facts);
    assert_int_equal(r->facts->ngpu, 2);
    assert_string_equal(r->facts->source, "live");
    assert_int_equal(r->doctor_ran, 1);
    assert_int_equal(r->nfindings, 3);
    assert_int_equal(r->findings[0].severity, PSC_SEV_INFO);
    assert_int_equal(r->bw->nsizes, 1);
    assert_int_equal(r->bw->ntests, 3);
    psc_run_doc_free(r);

    r = psc__load("report_one_gpu.json");
    assert_int_equal(r->bw->ntests, 50);
    assert_int_equal(psc__no_case(r->bw->tests, r->bw->ntests), 19);
    assert_int_equal(r->ndev, 1);
    psc_run_doc_free(r);

    r = psc__load("lat_one_gpu.json");
    assert_string_equal(r->command, "lat");
    assert_null(r->bw);
    assert_false(r->has_measure);
    assert_int_equal(r->lat->ntests, 19);
    assert_int_equal(psc__no_case(r->lat->tests, r->lat->ntests), 6);
    assert_int_equal(r->lat->ndev, 1);
    assert_true(r->lat->gpu_timer_ns > 0);
    assert_true(r->lat->results[0].nsizes >= 1 && r->lat->results[0].nkept[0] > 0);
    psc_run_doc_free(r);
}

/* Each severity of a finding comes back as itself. */
static void test_findings_severities(void **state)
{
    static const char *const names[] = {"info", "warning", "error"};
    static const psc_severity_t sev[] = {PSC_SEV_INFO, PSC_SEV_WARNING, PSC_SEV_ERROR};

    (void)state;
    for (int k = 0; k < 3; k++) {
        char to[32], err[512] = "";
        psc_run_doc_t *r = NULL;
        const char *path;

        snprintf(to, sizeof(to), "\"severity\": \"%s\"", names[k]);
        path = psc__edited("severity.json", "\"severity\": \"info\"", to);
        assert_int_equal(psc_run_doc_load(path, &r, err, sizeof(err)), PSC_OK);
        assert_int_equal(r->findings[0].severity, sev[k]);
        assert_int_equal(r->findings[1].severity, PSC_SEV_INFO);
        psc_run_doc_free(r);
    }
}

/* A report's facts keep the PCIe path each pair recorded, though the JSON has no hwloc tree to derive it. */
static void test_facts_keep_recorded_paths(void **state)
{
    psc_facts_t *f = psc_facts_new(), *g = NULL;
    char err[512] = "", *text, *forged;
    json_t *doc;
    int pci = 0;

    (void)state;
    assert_int_equal(psc_facts_load(TEST_DATA "/pcie-two-sockets-asym.xml", f, err, sizeof(err)), PSC_OK);
    text = psc_facts_json(f, 0);
    assert_non_null(text);
    assert_int_equal(psc_facts_load_run("run.json: topology", text, strlen(text), &g, err, sizeof(err)), PSC_OK);
    assert_int_equal(g->ngpu, f->ngpu);
    assert_string_equal(g->source, f->source);
    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++) {
            assert_int_equal(g->pair[i][j].path, f->pair[i][j].path);
            pci += f->pair[i][j].path == PSC_PATH_SYS || f->pair[i][j].path == PSC_PATH_NODE;
        }
    assert_true(pci > 0); /* paths a derivation without the tree would lose */
    psc_facts_free(g);
    g = NULL;
    doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_object_set_new(json_array_get(json_object_get(doc, "pairs"), 0), "path", json_string("ZZ")), 0);
    forged = json_dumps(doc, 0);
    json_decref(doc);
    assert_non_null(forged);
    assert_int_equal(psc_facts_load_run("run.json: topology", forged, strlen(forged), &g, err, sizeof(err)),
                     PSC_ERR_INVALID);
    assert_null(g);
    assert_non_null(strstr(err, "pairs[0].path"));
    free(forged);
    free(text);
    psc_facts_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bw_sweep_same),
        cmocka_unit_test(test_bw_failed_and_unchecked_same),
        cmocka_unit_test(test_report_same),
        cmocka_unit_test(test_lat_same),
        cmocka_unit_test(test_bad_runs_refused),
        cmocka_unit_test(test_options_refused),
        cmocka_unit_test(test_loader_on_recordings),
        cmocka_unit_test(test_findings_severities),
        cmocka_unit_test(test_facts_keep_recorded_paths),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
