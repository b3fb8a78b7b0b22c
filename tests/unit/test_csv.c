/*
 * --csv: the run's tables as CSV files, read back by an RFC 4180 reader here:
 * a header row, one row per case (and per size), every row as wide as its
 * header, text from outside quoted and escaped; and the files written under a
 * directory made for them (psc_page_write), the directory checked up front.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "p2pscope_private.h"
#include "report/html_page.h"

/* ------------------------------------------------------------ a small RFC 4180 reader */

#define MAXF 32
typedef struct {
    int nrows;
    int nf[64];
    char *f[64][MAXF];
} psc__csv_t;

/* Parse text into rows of fields; -1 on anything RFC 4180 refuses (a stray quote, a bare CR). */
static int psc__csv_parse(const char *text, psc__csv_t *out)
{
    const char *p = text;

    memset(out, 0, sizeof(*out));
    while (*p && out->nrows < 64) {
        int r = out->nrows++;

        for (;;) {
            char *field = calloc(strlen(p) + 1, 1);
            size_t n = 0;

            assert_non_null(field);
            if (*p == '"') {
                for (p++;; p++) {
                    if (!*p)
                        return -1;
                    if (*p == '"' && p[1] == '"')
                        field[n++] = *p++;
                    else if (*p == '"')
                        break;
                    else
                        field[n++] = *p;
                }
                p++;
            } else {
                while (*p && *p != ',' && *p != '\r' && *p != '\n') {
                    if (*p == '"')
                        return -1;
                    field[n++] = *p++;
                }
            }
            assert_true(out->nf[r] < MAXF);
            out->f[r][out->nf[r]++] = field;
            if (*p == ',') {
                p++;
                continue;
            }
            if (p[0] == '\r' && p[1] == '\n') {
                p += 2;
                break;
            }
            return -1; /* every record ends with CRLF */
        }
    }
    return 0;
}

static void psc__csv_free(psc__csv_t *c)
{
    for (int r = 0; r < c->nrows; r++)
        for (int k = 0; k < c->nf[r]; k++)
            free(c->f[r][k]);
}

static int psc__col(const psc__csv_t *c, const char *name)
{
    for (int k = 0; k < c->nf[0]; k++)
        if (strcmp(c->f[0][k], name) == 0)
            return k;
    fail_msg("no column %s", name);
    return -1;
}

/* ------------------------------------------------------------ a run, as 2x H200 recorded it */

static psc_bw_test_t T(const char *name)
{
    psc_bw_test_t t = -1;

    assert_int_equal(psc_bw_test_from_name(name, &t), PSC_OK);
    return t;
}

static psc_bw_result_t psc__result(const char *test, int src, int dst, uint64_t size, psc_result_status_t st,
                                   double gbs, const char *reason)
{
    psc_bw_result_t r;

    memset(&r, 0, sizeof(r));
    r.c = (psc_bw_case_t){.test = T(test), .src = src, .dst = dst, .issuer = src, .nxfer = 1};
    r.c.xfer[0] = (psc_xfer_t){src, dst, src};
    r.size = size;
    r.iterations = 4;
    r.gated = 1;
    r.host_node = -1;
    r.status = st;
    r.verify.first_bad_offset = -1;
    if (st != PSC_RESULT_WAIVED) { /* a case that failed on wrong data has its figures too: not shown */
        r.nsamples = 3;
        for (unsigned k = 0; k < 3; k++)
            r.samples_gbs[k] = gbs - 1 + k;
        psc_stats_compute(r.samples_gbs, 3, &r.stats);
        r.xfer_gbs[0] = gbs;
    }
    snprintf(r.reason, sizeof(r.reason), "%s", reason ? reason : "");
    return r;
}

typedef struct {
    psc_system_info_t sys;
    psc_device_info_t devs[2];
    psc_bw_result_t res[5];
    psc_suite_test_t tests[2];
    psc_bw_suite_t bw;
    psc_finding_t findings[1];
    psc_page_t page;
} psc__run_t;

static void psc__run_make(psc__run_t *r)
{
    memset(r, 0, sizeof(*r));
    r->sys.device_count = 2;
    r->sys.cuda_driver_version = 13000;
    snprintf(r->sys.driver_release, sizeof(r->sys.driver_release), "580.159.04");
    for (int i = 0; i < 2; i++) {
        r->devs[i].index = i;
        r->devs[i].nvml_index = i;
        r->devs[i].memory_bytes = 150ull << 30;
        r->devs[i].sm_count = 132;
        r->devs[i].cc_major = 9;
        r->devs[i].numa_node = 0;
        r->devs[i].sm_clock_mhz = 1980;
        r->devs[i].sm_clock_max_mhz = 1980;
        r->devs[i].mem_clock_mhz = 3201;
        r->devs[i].temperature_c = 31;
        snprintf(r->devs[i].pci_bus_id, sizeof(r->devs[i].pci_bus_id), "0000:%02x:00.0", 0x19 + i);
    }
    /* A name from outside with every character CSV must guard: comma, quote, a line break, a control byte. */
    snprintf(r->devs[0].name, sizeof(r->devs[0].name), "NVIDIA H200, \"SXM\"\nrev\x1b[31m");
    snprintf(r->devs[1].name, sizeof(r->devs[1].name), "NVIDIA H200");
    r->res[0] = psc__result("gpu_to_gpu_write_ce", 0, 1, 512ull << 20, PSC_RESULT_PASSED, 396.0, NULL);
    r->res[1] = psc__result("gpu_to_gpu_write_ce", 1, 0, 512ull << 20, PSC_RESULT_FAILED, 390.0, "wrong data at 777, \"0x12\"");
    r->res[2] = psc__result("host_to_gpu_ce", PSC_HOST, 0, 32ull << 20, PSC_RESULT_PASSED, 55.1, NULL);
    r->res[3] = psc__result("host_to_gpu_ce", PSC_HOST, 1, 32ull << 20, PSC_RESULT_WAIVED, 0, "no pinned memory");
    r->res[4] = psc__result("host_to_gpu_ce", PSC_HOST, 1, 32ull << 20, PSC_RESULT_PASSED, 53.5, NULL);
    r->tests[0] = (psc_suite_test_t){T("gpu_to_gpu_write_ce"), 0, 2};
    r->tests[1] = (psc_suite_test_t){T("host_to_gpu_ce"), 2, 3};
    r->bw.ndev = 2;
    r->bw.devices[1] = 1;
    r->bw.nsizes = 1;
    r->bw.ntests = 2;
    r->bw.tests = r->tests;
    r->bw.nresults = 5;
    r->bw.nfailed = 1;
    r->bw.results = r->res;
    r->findings[0].severity = PSC_SEV_WARNING;
    snprintf(r->findings[0].rule, sizeof(r->findings[0].rule), "bar1_small");
    snprintf(r->findings[0].what, sizeof(r->findings[0].what), "BAR1, 256 MiB, is below memory");
    snprintf(r->findings[0].evidence, sizeof(r->findings[0].evidence), "bar1 = 256 MiB; memory = 141 GiB");
    snprintf(r->findings[0].fix, sizeof(r->findings[0].fix), "enable \"Above 4G decoding\", then resizable BAR");
    r->page = (psc_page_t){.command = "report", .sys = &r->sys, .devs = r->devs, .ndev = 2, .bw = &r->bw,
                           .findings = r->findings, .nfindings = 1, .doctor_ran = 1,
                           .started_utc = "2026-11-22T10:00:00Z", .exit_code = 1};
}

static const char *psc__file(const psc_csv_file_t *f, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(f[k].name, name) == 0)
            return f[k].text;
    return NULL;
}

static void test_bw_rows(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    psc_csv_file_t *files;
    psc__csv_t c;
    size_t n = 0;

    (void)state;
    assert_non_null(run);
    psc__run_make(run);
    files = psc_csv_render(&run->page, &n);
    assert_non_null(files);
    assert_non_null(psc__file(files, n, "bw.csv"));
    assert_null(psc__file(files, n, "lat.csv"));      /* no latency in this run */
    assert_null(psc__file(files, n, "topology.csv")); /* no facts */
    assert_int_equal(psc__csv_parse(psc__file(files, n, "bw.csv"), &c), 0);
    assert_int_equal(c.nrows, 1 + 5); /* the header, then one row per case */
    for (int r = 1; r < c.nrows; r++)
        assert_int_equal(c.nf[r], c.nf[0]);
    assert_string_equal(c.f[1][psc__col(&c, "test")], "gpu_to_gpu_write_ce");
    assert_string_equal(c.f[1][psc__col(&c, "src")], "gpu0");
    assert_string_equal(c.f[1][psc__col(&c, "dst")], "gpu1");
    assert_string_equal(c.f[1][psc__col(&c, "direction")], "gpu0 -> gpu1");
    assert_string_equal(c.f[1][psc__col(&c, "bytes_per_copy")], "536870912");
    assert_string_equal(c.f[1][psc__col(&c, "median_gbs")], "396.000");
    assert_string_equal(c.f[1][psc__col(&c, "cv_pct")], "0.253"); /* 395, 396, 397: stddev 1 over mean 396 */
    assert_string_equal(c.f[1][psc__col(&c, "status")], "passed");
    /* A failed case: no figure, the reason kept whole through its comma and quotes. */
    assert_string_equal(c.f[2][psc__col(&c, "status")], "failed");
    assert_string_equal(c.f[2][psc__col(&c, "median_gbs")], "");
    assert_string_equal(c.f[2][psc__col(&c, "cv_pct")], "");
    assert_string_equal(c.f[2][psc__col(&c, "reason")], "wrong data at 777, \"0x12\"");
    assert_string_equal(c.f[3][psc__col(&c, "src")], "host");
    assert_string_equal(c.f[3][psc__col(&c, "host_memory")], "pinned");
    assert_string_equal(c.f[4][psc__col(&c, "status")], "waived");
    /* The title has a comma: quoted, read back whole. */
    assert_non_null(strchr(c.f[1][psc__col(&c, "title")], ','));
    psc__csv_free(&c);
    psc_csv_free(files, n);
    free(run);
}

static void test_text_from_outside(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    psc_csv_file_t *files;
    const char *gpus;
    psc__csv_t c;
    size_t n = 0;

    (void)state;
    assert_non_null(run);
    psc__run_make(run);
    files = psc_csv_render(&run->page, &n);
    assert_non_null(files);
    gpus = psc__file(files, n, "gpus.csv");
    assert_non_null(gpus);
    assert_null(strchr(gpus, '\x1b')); /* no escape sequence reaches a terminal that shows the file */
    assert_int_equal(psc__csv_parse(gpus, &c), 0);
    assert_int_equal(c.nrows, 3);
    assert_int_equal(c.nf[1], c.nf[0]);
    /* The line break and the escape byte as visible \xNN (one record per line), the quotes doubled and read back. */
    assert_string_equal(c.f[1][psc__col(&c, "name")], "NVIDIA H200, \"SXM\"\\x0arev\\x1b[31m");
    assert_string_equal(c.f[2][psc__col(&c, "pci_bus_id")], "0000:1a:00.0");
    assert_string_equal(c.f[2][psc__col(&c, "temperature_c")], "31");
    psc__csv_free(&c);
    assert_int_equal(psc__csv_parse(psc__file(files, n, "findings.csv"), &c), 0);
    assert_int_equal(c.nrows, 2);
    assert_string_equal(c.f[1][psc__col(&c, "fix")], "enable \"Above 4G decoding\", then resizable BAR");
    assert_string_equal(c.f[1][psc__col(&c, "severity")], "warning");
    psc__csv_free(&c);
    psc_csv_free(files, n);
    free(run);
}

/* Invalid UTF-8 becomes U+FFFD: a reader that decodes UTF-8 (every spreadsheet) never fails on the file. */
static void test_not_utf8(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    psc_csv_file_t *files;
    psc__csv_t c;
    size_t n = 0;

    (void)state;
    assert_non_null(run);
    psc__run_make(run);
    snprintf(run->devs[1].name, sizeof(run->devs[1].name), "H200 \xff\xc3(x)");
    files = psc_csv_render(&run->page, &n);
    assert_non_null(files);
    assert_int_equal(psc__csv_parse(psc__file(files, n, "gpus.csv"), &c), 0);
    assert_string_equal(c.f[2][psc__col(&c, "name")], "H200 \xef\xbf\xbd\xef\xbf\xbd(x)");
    psc__csv_free(&c);
    psc_csv_free(files, n);
    free(run);
}

/* Text that a spreadsheet would run as a formula (= + - @) is led by ', quoted or not. */
static void test_formula_text(void **state)
{
    static const char *const bad[] = {"=HYPERLINK(\"http://x\",\"y\")", "+1+cmd", "-2+3, x", "@SUM(A1)"};
    psc__run_t *run = malloc(sizeof(*run));
    psc_csv_file_t *files;
    psc__csv_t c;
    size_t n = 0;

    (void)state;
    assert_non_null(run);
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        char want[128];

        psc__run_make(run);
        snprintf(run->devs[1].name, sizeof(run->devs[1].name), "%s", bad[k]);
        snprintf(run->findings[0].what, sizeof(run->findings[0].what), "%s", bad[k]);
        files = psc_csv_render(&run->page, &n);
        assert_non_null(files);
        snprintf(want, sizeof(want), "'%s", bad[k]);
        assert_int_equal(psc__csv_parse(psc__file(files, n, "gpus.csv"), &c), 0);
        assert_string_equal(c.f[2][psc__col(&c, "name")], want);
        psc__csv_free(&c);
        assert_int_equal(psc__csv_parse(psc__file(files, n, "findings.csv"), &c), 0);
        assert_string_equal(c.f[1][psc__col(&c, "what")], want);
        psc__csv_free(&c);
        psc_csv_free(files, n);
    }
    /* A name merely holding those characters is left as it is. */
    psc__run_make(run);
    snprintf(run->devs[1].name, sizeof(run->devs[1].name), "H200 = SXM-5 @ +1");
    files = psc_csv_render(&run->page, &n);
    assert_non_null(files);
    assert_int_equal(psc__csv_parse(psc__file(files, n, "gpus.csv"), &c), 0);
    assert_string_equal(c.f[2][psc__col(&c, "name")], "H200 = SXM-5 @ +1");
    psc__csv_free(&c);
    psc_csv_free(files, n);
    free(run);
}

static int psc__exists(const char *dir, const char *name)
{
    char path[512];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
}

static void test_write_dir(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    char base[] = "/tmp/psc-csv-XXXXXX", dir[256], file[256], err[512];

    (void)state;
    assert_non_null(run);
    psc__run_make(run);
    assert_non_null(mkdtemp(base));
    snprintf(dir, sizeof(dir), "%s/tables", base);
    /* Checked before anything is measured: a missing directory whose parent is writable is fine... */
    assert_int_equal(psc_page_check_dir(dir, "--csv", err, sizeof(err)), PSC_OK);
    /* ... one under a missing parent, or a file in its place, is not, with one line naming it. */
    snprintf(file, sizeof(file), "%s/none/tables", base);
    assert_int_equal(psc_page_check_dir(file, "--csv", err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "--csv"));
    assert_null(strchr(err, '\n'));
    snprintf(file, sizeof(file), "%s/a-file", base);
    fclose(fopen(file, "w"));
    assert_int_equal(psc_page_check_dir(file, "--csv", err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "not a directory"));
    /* Written: the directory made, each table a file, nothing left behind from the atomic writes. */
    assert_int_equal(psc_page_write(&run->page, NULL, NULL, dir, err, sizeof(err)), PSC_OK);
    assert_true(psc__exists(dir, "bw.csv"));
    assert_true(psc__exists(dir, "gpus.csv"));
    assert_true(psc__exists(dir, "findings.csv"));
    assert_false(psc__exists(dir, "lat.csv"));
    /* A directory that cannot be made: an error with its reason, not a crash. */
    assert_int_equal(psc_page_write(&run->page, NULL, NULL, file, err, sizeof(err)), PSC_ERR_IO);
    assert_true(strlen(err) > 0);
    {
        char cmd[600];

        snprintf(cmd, sizeof(cmd), "test \"$(ls -A '%s' | wc -l)\" = 3 && rm -rf '%s'", dir, base);
        assert_int_equal(system(cmd), 0);
    }
    free(run);
}

/* A link planted after the check (or a name the check missed) is replaced by the new file, never written through. */
static void test_links_in_dir_replaced(void **state)
{
    psc__run_t *run = malloc(sizeof(*run));
    char base[] = "/tmp/psc-csvl-XXXXXX", dir[256], outside[256], link[300], err[512], text[16] = "";
    struct stat sb;
    FILE *f;

    (void)state;
    assert_non_null(run);
    psc__run_make(run);
    assert_non_null(mkdtemp(base));
    snprintf(dir, sizeof(dir), "%s/tables", base);
    snprintf(outside, sizeof(outside), "%s/outside", base);
    assert_int_equal(mkdir(dir, 0777), 0);
    f = fopen(outside, "w");
    fputs("keep", f);
    fclose(f);
    snprintf(link, sizeof(link), "%s/bw.csv", dir);
    assert_int_equal(symlink(outside, link), 0);
    assert_int_equal(psc_page_check_dir(dir, "--csv", err, sizeof(err)), PSC_ERR_INVALID);
    assert_non_null(strstr(err, "symlink"));
    assert_null(strchr(err, '\n'));
    snprintf(link, sizeof(link), "%s/gpus.csv", dir);
    assert_int_equal(symlink("/dev/full", link), 0);
    snprintf(link, sizeof(link), "%s/findings.csv", dir);
    assert_int_equal(symlink("missing-target", link), 0);
    assert_int_equal(psc_page_write(&run->page, NULL, NULL, dir, err, sizeof(err)), PSC_OK);
    /* Each link became a regular file of ours; the file outside and the link's target untouched. */
    snprintf(link, sizeof(link), "%s/bw.csv", dir);
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    snprintf(link, sizeof(link), "%s/gpus.csv", dir);
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISREG(sb.st_mode) && sb.st_size > 0);
    snprintf(link, sizeof(link), "%s/missing-target", dir);
    assert_int_equal(lstat(link, &sb), -1);
    f = fopen(outside, "r");
    assert_non_null(fgets(text, sizeof(text), f));
    fclose(f);
    assert_string_equal(text, "keep");
    {
        char cmd[600];

        snprintf(cmd, sizeof(cmd), "test \"$(ls -A '%s' | wc -l)\" = 3 && rm -rf '%s'", dir, base);
        assert_int_equal(system(cmd), 0);
    }
    free(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bw_rows),
        cmocka_unit_test(test_text_from_outside),
        cmocka_unit_test(test_not_utf8),
        cmocka_unit_test(test_formula_text),
        cmocka_unit_test(test_write_dir),
        cmocka_unit_test(test_links_in_dir_replaced),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
