/*
 * p2pscope compare, the real binary on the recorded runs of tests/data/compare (tests/data/README.md says
 * how each was made): its text, exit codes, --fail-above, --json, and every kind of bad input. No driver is
 * given to it: compare must not need one.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "run_binary.h"

#define DATA TEST_DATA "/compare/"

static const char *const psc__no_driver[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};

/* The line of out that starts with prefix (after the table's indentation, none), or fail. */
static const char *psc__line(const char *out, const char *prefix)
{
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, strlen(prefix)) == 0)
            return p;
    fail_msg("no line starting '%s' in:\n%s", prefix, out);
    return NULL;
}

/* The rest of the line at p, without its newline. */
static char *psc__rest(const char *p)
{
    return strndup(p, strcspn(p, "\n"));
}

static int psc__ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);

    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* A run against itself: no difference, no mark, exit 0 even with --fail-above 0. */
static void test_same_run(void **state)
{
    static const char *const runs[] = {DATA "bw_a.json", DATA "lat_a.json", DATA "coll_a.json", DATA "report_a.json"};

    (void)state;
    for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
        psc__run_t r = psc__run((const char *[]){"compare", runs[k], runs[k], "--fail-above", "0", NULL}, psc__no_driver);

        if (r.rc != 0)
            fprintf(stderr, "%s%s", r.out, r.err);
        assert_int_equal(r.rc, 0);
        assert_string_equal(r.err, "");
        assert_non_null(strstr(r.out, "Machine and options: no differences recorded"));
        assert_null(strstr(r.out, "  WORSE"));
        assert_null(strstr(r.out, "better\n"));
        assert_null(strstr(r.out, "Only in"));
        assert_non_null(strstr(r.out, "\n--fail-above 0: no case got worse"));
        psc__free(&r);
    }
}

/* A regression beyond the noise is marked and fails --fail-above 5; an improvement is marked better; a change
 * within the noise is not marked and fails nothing, even above PCT; the machine's differences come first. */
static void test_regression(void **state)
{
    psc__run_t r;
    char *line;

    (void)state;
    r = psc__run((const char *[]){"compare", DATA "bw_a.json", DATA "bw_b.json", "--fail-above", "2", NULL},
                 psc__no_driver);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.err, "");
    /* First the machine: driver, CUDA, a clock, the tests chosen; then the cases. */
    assert_true(psc__line(r.out, "Machine and options that differ") < psc__line(r.out, "Cases in both runs"));
    assert_non_null(psc__line(r.out, "  system.driver_release: null -> 580.159.04\n"));
    assert_non_null(psc__line(r.out, "  system.cuda_driver_version: 13000 -> 13010\n"));
    assert_non_null(psc__line(r.out, "  devices[1].sm_clock_mhz: null -> 1755\n"));
    assert_non_null(psc__line(r.out, "  parameters.tests[2]: (absent) -> gpu_local_ce\n"));
    line = psc__rest(psc__line(r.out, "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB "));
    assert_non_null(strstr(line, " -20.0 %"));
    assert_true(psc__ends_with(line, "WORSE > 2 %"));
    free(line);
    line = psc__rest(psc__line(r.out, "gpu_to_gpu_read_ce gpu1 -> gpu0 4 KiB "));
    assert_true(psc__ends_with(line, "+15.0 %  better"));
    free(line);
    line = psc__rest(psc__line(r.out, "host_to_gpu_ce host -> gpu0 4 KiB ")); /* -3 %, within the noise */
    assert_true(psc__ends_with(line, " -3.0 %"));
    free(line);
    assert_non_null(psc__line(r.out, "Marks: WORSE and better where the runs' intervals (min..max"));
    /* Apart: the case B lost, the case B gained. */
    assert_non_null(strstr(r.out, "\nOnly in A (1 case):\n  host_to_gpu_ce host -> gpu1 4 KiB\n"));
    assert_non_null(strstr(r.out, "\nOnly in B (1 case):\n  gpu_local_ce gpu0 -> gpu0 4 KiB\n"));
    /* One line naming the failed case alone, last. */
    line = psc__rest(psc__line(r.out, "--fail-above 2: 1 case got worse"));
    assert_true(psc__ends_with(line, ": gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB (-20.0 %)"));
    assert_true(psc__ends_with(r.out, "(-20.0 %)\n"));
    free(line);
    psc__free(&r);

    /* 20 % worse is not worse than 25 %. */
    r = psc__run((const char *[]){"compare", DATA "bw_a.json", DATA "bw_b.json", "--fail-above", "25", NULL},
                 psc__no_driver);
    assert_int_equal(r.rc, 0);
    line = psc__rest(psc__line(r.out, "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB "));
    assert_true(psc__ends_with(line, "WORSE"));
    free(line);
    psc__free(&r);

    /* Without --fail-above a regression is shown, not failed. */
    r = psc__run((const char *[]){"compare", DATA "bw_a.json", DATA "bw_b.json", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_null(strstr(r.out, "--fail-above"));
    psc__free(&r);
}

/* An improvement alone: marked better, exit 0 with --fail-above 0. */
static void test_improvement(void **state)
{
    psc__run_t r = psc__run((const char *[]){"compare", DATA "bw_a.json", DATA "bw_better.json", "--fail-above", "0",
                                             NULL},
                            psc__no_driver);
    char *line;

    (void)state;
    assert_int_equal(r.rc, 0);
    line = psc__rest(psc__line(r.out, "gpu_to_gpu_read_ce gpu1 -> gpu0 4 KiB "));
    assert_true(psc__ends_with(line, "+15.0 %  better"));
    free(line);
    assert_null(strstr(r.out, "  WORSE"));
    psc__free(&r);
    /* The other way round it is a loss. */
    r = psc__run((const char *[]){"compare", DATA "bw_better.json", DATA "bw_a.json", "--fail-above", "0", NULL},
                 psc__no_driver);
    assert_int_equal(r.rc, 1);
    line = psc__rest(psc__line(r.out, "gpu_to_gpu_read_ce gpu1 -> gpu0 4 KiB "));
    assert_true(psc__ends_with(line, "-13.0 %  WORSE > 0 %"));
    free(line);
    psc__free(&r);
}

/* Latency up is worse, down is better. */
static void test_lat(void **state)
{
    psc__run_t r = psc__run((const char *[]){"compare", DATA "lat_a.json", DATA "lat_b.json", "--fail-above", "5", NULL},
                            psc__no_driver);
    char *line;

    (void)state;
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "[ns, p50, lower is better;"));
    line = psc__rest(psc__line(r.out, "gpu_gpu_flag gpu0 -> gpu1 4 B "));
    assert_true(psc__ends_with(line, "+30.0 %  WORSE > 5 %"));
    free(line);
    line = psc__rest(psc__line(r.out, "gpu_to_gpu_chase gpu0 -> gpu1 2 MiB "));
    assert_true(psc__ends_with(line, "-50.0 %  better"));
    free(line);
    line = psc__rest(psc__line(r.out, "--fail-above 5: 1 case"));
    assert_true(psc__ends_with(line, ": gpu_gpu_flag gpu0 -> gpu1 4 B (+30.0 %)"));
    free(line);
    psc__free(&r);
}

/* coll per row and placement: a slower operation, a failing one; a 30 % slower loop inside the spread is no
 * failure of --fail-above 10. The report: a failing case fails. */
static void test_coll_report(void **state)
{
    psc__run_t r = psc__run((const char *[]){"compare", DATA "coll_a.json", DATA "coll_b.json", "--fail-above", "10",
                                             NULL},
                            psc__no_driver);
    char *line;

    (void)state;
    assert_int_equal(r.rc, 1);
    line = psc__rest(psc__line(r.out, "all_reduce 4 KiB float sum nccl out-of-place "));
    assert_true(psc__ends_with(line, "+30.0 %"));
    free(line);
    line = psc__rest(psc__line(r.out, "all_reduce 4 KiB float sum nccl in-place "));
    assert_non_null(strstr(line, " 9.49  FAILED "));
    assert_true(psc__ends_with(line, " -  FAILS now"));
    free(line);
    line = psc__rest(psc__line(r.out, "--fail-above 10: 2 cases"));
    assert_true(psc__ends_with(line, ": all_reduce 1 KiB float sum nccl out-of-place (+250.0 %), all_reduce 4 KiB float "
                                     "sum nccl in-place (failed)"));
    free(line);
    psc__free(&r);
    r = psc__run((const char *[]){"compare", DATA "report_a.json", DATA "report_b.json", "--fail-above", "50", NULL},
                 psc__no_driver);
    assert_int_equal(r.rc, 1);
    line = psc__rest(psc__line(r.out, "host_to_gpu_ce host -> gpu0 4 KiB "));
    assert_true(psc__ends_with(line, "FAILS now"));
    free(line);
    assert_non_null(psc__line(r.out, "gpu_to_gpu_read_ce "));
    psc__free(&r);
}

/* --json=FILE: the table on stdout, the comparison in the file; --json: the comparison alone on stdout. */
static void test_json(void **state)
{
    char dir[] = "/tmp/psc-compare-XXXXXX", path[64], arg[80];
    json_error_t jerr;
    json_t *doc, *cases;
    psc__run_t r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/cmp.json", dir);
    snprintf(arg, sizeof(arg), "--json=%s", path);
    r = psc__run((const char *[]){"compare", DATA "bw_a.json", DATA "bw_b.json", "--fail-above", "5", arg, NULL},
                 psc__no_driver);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "Cases in both runs"));
    psc__free(&r);
    doc = json_load_file(path, 0, &jerr);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "command")), "compare");
    assert_string_equal(json_string_value(json_object_get(doc, "compared")), "bw");
    assert_true(json_is_true(json_object_get(doc, "higher_is_better")));
    assert_int_equal(json_array_size(json_object_get(doc, "differences")), 4);
    assert_int_equal(json_array_size(json_object_get(doc, "failed")), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "failed"), 0)),
                        "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB");
    cases = json_object_get(doc, "cases");
    assert_int_equal(json_array_size(cases), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cases, 0), "verdict")), "worse");
    assert_string_equal(json_string_value(json_object_get(json_array_get(cases, 1), "verdict")), "better");
    assert_string_equal(json_string_value(json_object_get(json_array_get(cases, 2), "verdict")), "within_noise");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(cases, 0), "a"), "samples")), 5);
    assert_int_equal(json_array_size(json_object_get(doc, "only_in_a")), 1);
    assert_int_equal(json_array_size(json_object_get(doc, "only_in_b")), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "only_in_a"), 0), "case")),
                        "host_to_gpu_ce host -> gpu1 4 KiB");
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "only_in_a"), 0), "status")),
                        "passed");
    assert_int_equal(json_integer_value(json_object_get(doc, "exit_code")), 1);
    json_decref(doc);
    unlink(path);
    rmdir(dir);

    r = psc__run((const char *[]){"compare", DATA "lat_a.json", DATA "lat_b.json", "--json", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    doc = json_loads(r.out, 0, &jerr); /* JSON alone */
    assert_non_null(doc);
    assert_true(json_is_false(json_object_get(doc, "higher_is_better")));
    assert_true(json_is_null(json_object_get(doc, "fail_above_pct")));
    json_decref(doc);
    psc__free(&r);
    /* JSON alone on stdout and a failed --fail-above: its one line on stderr. */
    r = psc__run((const char *[]){"compare", DATA "lat_a.json", DATA "lat_b.json", "--json", "--fail-above", "5", NULL},
                 psc__no_driver);
    assert_int_equal(r.rc, 1);
    doc = json_loads(r.out, 0, &jerr);
    assert_non_null(doc);
    assert_int_equal(json_array_size(json_object_get(doc, "failed")), 1);
    json_decref(doc);
    assert_int_equal(psc__lines(r.err), 1);
    assert_non_null(strstr(r.err, "1 case worse than --fail-above 5 allows"));
    psc__free(&r);
}

/* Bad input: exit 2, one line naming what is accepted, nothing on stdout, no output file; never a hang. */
static void test_bad_input(void **state)
{
    char dir[] = "/tmp/psc-compare-XXXXXX", out[64], arg[80], f[12][80];
    const char *const texts[] = {
        "hello\n",
        NULL, /* truncated: the first half of bw_a.json */
        "{\"foo\": 1}\n",
        "# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807\n#  Rank  0 Group  0 Pid  1 on host "
        "device  0 [0000:10:00] NVIDIA H200\n",
        "{\"tool\": {\"name\": \"p2pscope\", \"version\": \"0.1.0\"}, \"command\": \"verify\", \"paths\": []}\n",
        "{\"tool\": {\"name\": \"p2pscope\"}, \"command\": \"bw\", \"tests\": [{\"name\": \"x\", \"status\": \"passed\", "
        "\"bytes_per_copy\": 4096, \"stats\": {\"median\": \"fast\", \"min\": 1, \"max\": 2, \"n\": 3}}]}\n",
        "{\"tool\": {\"name\": \"p2pscope\"}, \"command\": \"bw\", \"tests\": [{\"name\": \"x\", \"status\": \"passed\", "
        "\"bytes_per_copy\": 4096, \"stats\": {\"median\": 5, \"min\": 1, \"max\": 2, \"n\": 3}}]}\n",
        "{\"tool\": {\"name\": \"p2pscope\"}, \"command\": \"lat\", \"tests\": [{\"name\": \"x\", \"status\": \"maybe\"}]}\n",
        "",
    };
    const char *const wants[] = {"not valid JSON",          "not valid JSON",        "is not a p2pscope run",
                                 "not valid JSON",          "not comparable yet",    "tests[0].stats lacks a number",
                                 "tests[0].stats has min 1, median 5", "tests[0] has status 'maybe'", "not valid JSON"};
    struct stat sb;
    char *bw;
    size_t n = 0;
    FILE *fp;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof(out), "%s/out.json", dir);
    snprintf(arg, sizeof(arg), "--json=%s", out);
    fp = fopen(DATA "bw_a.json", "r");
    assert_non_null(fp);
    bw = calloc(1, 1 << 16);
    n = fread(bw, 1, (1 << 16) - 1, fp);
    fclose(fp);
    bw[n / 2] = '\0';
    for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) {
        snprintf(f[k], sizeof(f[k]), "%s/bad%zu.json", dir, k);
        fp = fopen(f[k], "w");
        assert_non_null(fp);
        fputs(texts[k] ? texts[k] : bw, fp);
        fclose(fp);
        /* As A and as B, each with a good run on the other side. */
        psc__expect_error((const char *[]){"compare", f[k], DATA "bw_a.json", arg, NULL}, psc__no_driver, 2, wants[k]);
        psc__expect_error((const char *[]){"compare", DATA "bw_a.json", f[k], "--fail-above", "5", arg, NULL},
                          psc__no_driver, 2, wants[k]);
        assert_int_equal(stat(out, &sb), -1);
        /* Every line also names the file and what is accepted. */
        {
            psc__run_t r = psc__run((const char *[]){"compare", f[k], DATA "bw_a.json", NULL}, psc__no_driver);

            assert_non_null(strstr(r.err, "accepted"));
            assert_non_null(strstr(r.err, f[k]));
            psc__free(&r);
        }
    }
    free(bw);
    /* Two runs of different commands; a missing file; a directory; a FIFO nobody writes (refused, no wait). */
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "lat_a.json", arg, NULL}, psc__no_driver, 2,
                      "accepted two runs of the same command");
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", "/nonexistent/run.json", arg, NULL},
                      psc__no_driver, 2, "/nonexistent/run.json: no such file or directory (accepted");
    psc__expect_error((const char *[]){"compare", DATA, DATA "bw_a.json", arg, NULL}, psc__no_driver, 2,
                      "a directory, not a regular file (accepted");
    snprintf(f[0], sizeof(f[0]), "%s/fifo", dir);
    assert_int_equal(mkfifo(f[0], 0600), 0);
    psc__expect_error((const char *[]){"compare", f[0], DATA "bw_a.json", arg, NULL}, psc__no_driver, 2,
                      "a FIFO, not a regular file");
    assert_int_equal(stat(out, &sb), -1);
    /* The command line. */
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", NULL}, psc__no_driver, 2,
                      "compare needs two runs: accepted: p2pscope compare A.json B.json");
    psc__expect_error((const char *[]){"compare", NULL}, psc__no_driver, 2, "compare needs two runs");
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "bw_a.json", DATA "bw_a.json", NULL},
                      psc__no_driver, 2, "not a third");
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "bw_a.json", "--fail-above", "-5", NULL},
                      psc__no_driver, 2, "bad --fail-above '-5': accepted a percentage");
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "bw_a.json", "--fail-above", "5x", NULL},
                      psc__no_driver, 2, "bad --fail-above '5x'");
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "bw_a.json", "--fail-above", NULL},
                      psc__no_driver, 2, "--fail-above needs a value");
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "bw_a.json", "--size", "4K", NULL},
                      psc__no_driver, 2, "unknown option '--size' for compare");
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "bw_a.json", "-t", "x", NULL}, psc__no_driver,
                      2, "unknown option '-t' for compare");
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "bw_a.json", "--json=", NULL}, psc__no_driver,
                      2, "empty --json file name");
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "bw_a.json", "--json=/nonexistent-dir/x.json",
                                       NULL},
                      psc__no_driver, 2, "cannot write /nonexistent-dir/x.json");
    for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++)
        unlink(f[k]);
    unlink(f[0]);
    rmdir(dir);
}

/* bw_a.json with its first test waived (peer access lost) and a failed test only in B: path gets the file. */
static void psc__waived_run(char *path)
{
    json_t *doc = json_load_file(DATA "bw_a.json", 0, NULL), *tests, *t, *extra;
    int fd = mkstemp(path);

    assert_true(fd >= 0);
    assert_non_null(doc);
    tests = json_object_get(doc, "tests");
    t = json_array_get(tests, 0);
    json_object_set_new(t, "status", json_string("waived"));
    json_object_set_new(t, "reason", json_string("peer access not supported"));
    json_object_set_new(t, "stats", json_null());
    json_object_set_new(t, "samples", json_array());
    extra = json_deep_copy(t);
    json_object_set_new(extra, "name", json_string("gpu_to_gpu_write_ce"));
    json_object_set_new(extra, "status", json_string("failed"));
    json_array_append_new(tests, extra);
    assert_int_equal(json_dumpfd(doc, fd, 0), 0);
    close(fd);
    json_decref(doc);
}

/* Passed in A, waived in B: "WAIVED now", failing --fail-above, named last and in "failed"; a case in one run
 * only shows its status (text and JSON). */
static void test_waived_now(void **state)
{
    char b[] = "/tmp/psc-compare-waived-XXXXXX", dir[] = "/tmp/psc-compare-XXXXXX", out[64], arg[80], *line;
    const char *label = "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB";
    json_t *doc, *only;
    psc__run_t r;

    (void)state;
    psc__waived_run(b);
    r = psc__run((const char *[]){"compare", DATA "bw_a.json", b, "--fail-above", "50", NULL}, psc__no_driver);
    assert_int_equal(r.rc, 1);
    line = psc__rest(psc__line(r.out, "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB "));
    assert_non_null(strstr(line, "waived"));
    assert_true(psc__ends_with(line, "WAIVED now"));
    free(line);
    assert_non_null(strstr(r.out, "\nOnly in B (1 case):\n  gpu_to_gpu_write_ce gpu0 -> gpu1 4 KiB (FAILED)\n"));
    line = psc__rest(psc__line(r.out, "--fail-above 50: 1 case got worse"));
    assert_true(psc__ends_with(line, ": gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB (waived now)"));
    free(line);
    psc__free(&r);
    /* Without --fail-above: shown, exit 0. */
    r = psc__run((const char *[]){"compare", DATA "bw_a.json", b, NULL}, psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "WAIVED now\n"));
    psc__free(&r);
    /* The JSON: the verdict, the failed list, the status of a case in one run only. */
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof(out), "%s/cmp.json", dir);
    snprintf(arg, sizeof(arg), "--json=%s", out);
    r = psc__run((const char *[]){"compare", DATA "bw_a.json", b, "--fail-above", "50", arg, NULL}, psc__no_driver);
    assert_int_equal(r.rc, 1);
    psc__free(&r);
    doc = json_load_file(out, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "cases"), 0), "verdict")),
                        "now_waived");
    assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "failed"), 0)), label);
    only = json_array_get(json_object_get(doc, "only_in_b"), 0);
    assert_string_equal(json_string_value(json_object_get(only, "case")), "gpu_to_gpu_write_ce gpu0 -> gpu1 4 KiB");
    assert_string_equal(json_string_value(json_object_get(only, "status")), "failed");
    assert_int_equal(json_array_size(json_object_get(doc, "only_in_a")), 0);
    json_decref(doc);
    unlink(out);
    rmdir(dir);
    unlink(b);
}

/* --json=FILE naming one of the runs is refused before anything is read or written; operands after "--" count. */
static void test_output_is_input(void **state)
{
    char a[] = "/tmp/psc-compare-in-XXXXXX", arg[80], before[1 << 12], after[1 << 12];
    int fd = mkstemp(a);
    FILE *fp;
    size_t n, m;
    psc__run_t r;

    (void)state;
    assert_true(fd >= 0);
    fp = fopen(DATA "bw_a.json", "r");
    assert_non_null(fp);
    n = fread(before, 1, sizeof(before), fp);
    fclose(fp);
    assert_int_equal(write(fd, before, n), (ssize_t)n);
    close(fd);
    snprintf(arg, sizeof(arg), "--json=%s", a);
    psc__expect_error((const char *[]){"compare", a, DATA "bw_b.json", arg, NULL}, psc__no_driver, 2,
                      "would replace the run");
    psc__expect_error((const char *[]){"compare", DATA "bw_b.json", a, arg, NULL}, psc__no_driver, 2,
                      "would replace the run");
    fp = fopen(a, "r");
    assert_non_null(fp);
    m = fread(after, 1, sizeof(after), fp);
    fclose(fp);
    assert_int_equal(m, n);
    assert_memory_equal(before, after, n);
    unlink(a);
    /* after "--" the words are operands */
    r = psc__run((const char *[]){"compare", "--fail-above", "50", "--", DATA "bw_a.json", DATA "bw_a.json", NULL},
                 psc__no_driver);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "Cases in both runs"));
    psc__free(&r);
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", "--", DATA "bw_a.json", DATA "bw_a.json", NULL},
                      psc__no_driver, 2, "not a third");
}

static char *psc__slurp_path(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 1 << 20);

    assert_non_null(f);
    assert_non_null(buf);
    assert_true(fread(buf, 1, (1 << 20) - 1, f) > 0);
    fclose(f);
    return buf;
}

static int psc__count(const char *s, const char *what)
{
    int n = 0;

    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* --html and --csv: the same verdicts as the text, a row per case in both runs, the cases in one run only. */
static void test_page(void **state)
{
    char dir[] = "/tmp/psc-compare-page-XXXXXX", html[80], csv[80], path[120], arg[100];
    char *page, *cases, *only, *diffs;
    psc__run_t r;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(html, sizeof(html), "%s/cmp.html", dir);
    snprintf(csv, sizeof(csv), "%s/tables", dir);
    r = psc__run((const char *[]){"compare", DATA "bw_a.json", DATA "bw_b.json", "--fail-above", "5", "--html", html,
                                  "--csv", csv, NULL}, psc__no_driver);
    assert_int_equal(r.rc, 1); /* the text's verdict: the pages change nothing of it */
    psc__free(&r);
    page = psc__slurp_path(html);
    assert_non_null(strstr(page, "<tr class=\"sev-error\"><td>gpu_to_gpu_read_ce gpu0 -&gt; gpu1 4 KiB</td>"
                                 "<td class=\"n\">52.65</td><td class=\"n\">52.55 .. 52.73 (5)</td>"
                                 "<td class=\"n\">42.12</td>"));
    assert_non_null(strstr(page, "<td class=\"n\">-20.0 %</td><td>WORSE &gt; 5 %</td></tr>"));
    assert_non_null(strstr(page, "<tr class=\"sev-info\"><td>gpu_to_gpu_read_ce gpu1 -&gt; gpu0 4 KiB</td>"));
    assert_non_null(strstr(page, "<td class=\"n\">+15.0 %</td><td>better</td></tr>"));
    assert_non_null(strstr(page, "<tr><td>system.cuda_driver_version</td><td>13000</td><td>13010</td></tr>"));
    assert_non_null(strstr(page, "<h3>Only in A (1 case)</h3>"));
    assert_non_null(strstr(page, "--fail-above 5: 1 case worse"));
    snprintf(path, sizeof(path), "%s/cases.csv", csv);
    cases = psc__slurp_path(path);
    assert_int_equal(psc__count(cases, "\r\n"), 1 + 3); /* the header and the three cases in both runs */
    assert_non_null(strstr(cases, "\r\ngpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB,passed,52.6512,52.5492,52.7319,5,passed,"
                                  "42.121,42.0394,42.1855,5,GB/s,-20.000,worse,yes\r\n"));
    assert_non_null(strstr(cases, ",15.000,better,no\r\n"));
    assert_non_null(strstr(cases, ",-3.000,within_noise,no\r\n"));
    snprintf(path, sizeof(path), "%s/only.csv", csv);
    only = psc__slurp_path(path);
    assert_string_equal(only, "run,case,status\r\nA,host_to_gpu_ce host -> gpu1 4 KiB,passed\r\n"
                              "B,gpu_local_ce gpu0 -> gpu0 4 KiB,passed\r\n");
    snprintf(path, sizeof(path), "%s/differences.csv", csv);
    diffs = psc__slurp_path(path);
    assert_non_null(strstr(diffs, "\r\nsystem.cuda_driver_version,13000,13010\r\n"));
    free(page);
    free(cases);
    free(only);
    free(diffs);
    /* refused before anything is read: a page over a run, a --csv under a file; a run that does not load: nothing */
    snprintf(arg, sizeof(arg), "%s/cmp.html", dir);
    psc__expect_error((const char *[]){"compare", arg, DATA "bw_b.json", "--html", arg, NULL}, psc__no_driver, 2,
                      "would replace the run");
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "bw_b.json", "--csv", DATA "bw_a.json/x",
                                       NULL}, psc__no_driver, 2, "is missing or not writable");
    snprintf(path, sizeof(path), "%s/none.html", dir);
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "lat_a.json", "--html", path, NULL},
                      psc__no_driver, 2, "accepted two runs of the same command");
    assert_int_equal(access(path, F_OK), -1);
    psc__expect_error((const char *[]){"compare", DATA "bw_a.json", DATA "bw_b.json", "--html=", NULL},
                      psc__no_driver, 2, "empty --html");
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

/* Its own help: the files, its option, an example; none of the measuring options. */
static void test_help(void **state)
{
    psc__run_t r = psc__run((const char *[]){"compare", "--help", NULL}, psc__no_driver);

    (void)state;
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "usage: p2pscope compare A.json B.json [OPTIONS]"));
    assert_non_null(strstr(r.out, "--fail-above PCT"));
    assert_non_null(strstr(r.out, "--json[=FILE]"));
    assert_non_null(strstr(r.out, "p2pscope compare before.json after.json --fail-above 5"));
    assert_null(strstr(r.out, "--samples"));
    assert_null(strstr(r.out, "--identify"));
    psc__free(&r);
    r = psc__run((const char *[]){"--help", NULL}, psc__no_driver);
    assert_non_null(strstr(r.out, "\n  compare   two JSON runs"));
    psc__free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_run), cmocka_unit_test(test_regression),  cmocka_unit_test(test_improvement),
        cmocka_unit_test(test_lat),      cmocka_unit_test(test_coll_report), cmocka_unit_test(test_json),
        cmocka_unit_test(test_bad_input), cmocka_unit_test(test_help),      cmocka_unit_test(test_waived_now),
        cmocka_unit_test(test_output_is_input), cmocka_unit_test(test_page),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
