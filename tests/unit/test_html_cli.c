/*
 * --html, --svg, --csv through the real binary: refused with one line (exit 2)
 * before any driver is touched when a path cannot be written or the command
 * takes none; written at a run's end on the fake driver, a failed check
 * included (exit 1, the failure in the tables); nothing written when the run
 * never produced results.
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

#include "scratch_dir.h"

#include "run_binary.h"

/* Past the parser, the driver would answer "no driver" (exit 3): exit 2 proves the check came first. */
static const char *const psc__no_driver[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};
static const char *const psc__fake[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=contexts",
                                        "FAKE_CUDA_KERNELS=1", "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1",
                                        NULL};


static int setup(void **state)
{
    (void)state;
    return psc_scratch_make("psc-page");
}

static int teardown(void **state)
{
    (void)state;
    return psc_scratch_remove();
}

static char *psc__read(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = calloc(1, 1 << 20);

    assert_non_null(f);
    assert_non_null(buf);
    assert_true(fread(buf, 1, (1 << 20) - 1, f) > 0);
    fclose(f);
    return buf;
}

static void test_refused_before_measuring(void **state)
{
    const char *file = psc__path("a-file");

    (void)state;
    fclose(fopen(file, "w"));
    psc__expect_error((const char *[]){"bw", "--csv", file, NULL}, psc__no_driver, 2, "not a directory");
    psc__expect_error((const char *[]){"report", "--csv", "/nonexistent/x/tables", NULL}, psc__no_driver, 2,
                      "/nonexistent/x");
    psc__expect_error((const char *[]){"topo", "--csv", psc__path("t"), NULL}, psc__no_driver, 2,
                      "go with report, bw and lat");
    psc__expect_error((const char *[]){"bw", "-l", "--csv", psc__path("t"), NULL}, psc__no_driver, 2,
                      "not --list");
    psc__expect_error((const char *[]){"lat", "--csv=", NULL}, psc__no_driver, 2, "empty --csv");
#ifdef P2PSCOPE_HAVE_CAIRO
    psc__expect_error((const char *[]){"report", "--html", "/nonexistent/dir/page.html", NULL}, psc__no_driver, 2,
                      "/nonexistent/dir");
    psc__expect_error((const char *[]){"report", "--html", psc__dir, NULL}, psc__no_driver, 2, "is a directory");
    psc__expect_error((const char *[]){"lat", "--svg", file, NULL}, psc__no_driver, 2, "not a directory");
    psc__expect_error((const char *[]){"doctor", "--html", psc__path("p.html"), NULL}, psc__no_driver, 2,
                      "go with report, bw and lat");
#else
    psc__expect_error((const char *[]){"report", "--html", psc__path("p.html"), NULL}, psc__no_driver, 2,
                      "built without cairo: install libcairo2-dev and rebuild");
    psc__expect_error((const char *[]){"bw", "--svg", psc__path("svg"), NULL}, psc__no_driver, 2,
                      "built without cairo");
#endif
    assert_int_equal(psc_scratch_entries(psc__dir), 1); /* the file made above, nothing else */
}

/* Inside --csv DIR / --svg DIR the names are the tool's: a planted link or FIFO there is refused before measuring. */
static void test_planted_links_refused(void **state)
{
    char dir[256], outside[256], link[300], text[64] = "";
    FILE *f;

    (void)state;
    snprintf(dir, sizeof(dir), "%s", psc__path("planted")); /* psc__path's buffers are reused */
    snprintf(outside, sizeof(outside), "%s", psc__path("outside.txt"));
    assert_int_equal(mkdir(dir, 0777), 0);
    f = fopen(outside, "w");
    fputs("keep", f);
    fclose(f);
    snprintf(link, sizeof(link), "%s/bw.csv", dir);
    assert_int_equal(symlink(outside, link), 0);
    psc__expect_error((const char *[]){"bw", "--csv", dir, NULL}, psc__no_driver, 2, "bw.csv, a symlink");
    unlink(link);
    assert_int_equal(symlink("/dev/full", link), 0);
    psc__expect_error((const char *[]){"bw", "--csv", dir, NULL}, psc__no_driver, 2, "a symlink");
    unlink(link);
    snprintf(link, sizeof(link), "%s/gpus.csv", dir);
    assert_int_equal(mkfifo(link, 0600), 0);
    psc__expect_error((const char *[]){"report", "--csv", dir, NULL}, psc__no_driver, 2, "a FIFO");
    unlink(link);
    /* A symlink to a file outside, named like a figure; then a DIR that is a link to nothing. */
    snprintf(link, sizeof(link), "%s/gpu_to_gpu_write_ce.svg", dir);
    assert_int_equal(symlink(outside, link), 0);
#ifdef P2PSCOPE_HAVE_CAIRO
    psc__expect_error((const char *[]){"bw", "--svg", dir, NULL}, psc__no_driver, 2, "a symlink");
#endif
    unlink(link);
    assert_int_equal(symlink(psc__path("nowhere"), psc__path("dangling")), 0);
    psc__expect_error((const char *[]){"bw", "--csv", psc__path("dangling"), NULL}, psc__no_driver, 2,
                      "symlink to nothing");
    f = fopen(outside, "r");
    assert_non_null(fgets(text, sizeof(text), f));
    fclose(f);
    assert_string_equal(text, "keep");
    assert_int_equal(psc_scratch_entries(dir), 0);
    assert_int_equal(access(psc__path("nowhere"), F_OK), -1);
    unlink(psc__path("dangling"));
    unlink(outside);
    rmdir(dir);
}

static void test_written_at_the_end(void **state)
{
    const char *csv = psc__path("tables"), *html = psc__path("page.html"), *svg = psc__path("figures");
    psc__run_t r;
    char *text;

    (void)state;
    r = psc__run((const char *[]){"bw", "-t", "gpu_to_gpu_write_ce", "-s", "64K", "-n", "1", "--max-samples", "1",
                                  "-w", "0", "--csv", csv,
#ifdef P2PSCOPE_HAVE_CAIRO
                                  "--html", html, "--svg", svg,
#endif
                                  NULL},
                 psc__fake);
    if (r.rc != 0)
        fprintf(stderr, "%s", r.err);
    assert_int_equal(r.rc, 0);
    psc__free(&r);
    assert_int_equal(psc_scratch_entries(csv), 2); /* bw.csv, gpus.csv; no temporary file left */
    text = psc__read(psc__path("tables/bw.csv"));
    assert_int_equal(psc__lines(text), 1 + 2); /* the header, gpu0 -> gpu1, gpu1 -> gpu0 */
    assert_non_null(strstr(text, "\r\ngpu_to_gpu_write_ce,"));
    assert_non_null(strstr(text, ",65536,passed,"));
    free(text);
#ifdef P2PSCOPE_HAVE_CAIRO
    assert_int_equal(psc_scratch_entries(svg), 1);
    text = psc__read(psc__path("figures/gpu_to_gpu_write_ce.svg"));
    assert_int_equal(strncmp(text, "<?xml", 5), 0);
    assert_non_null(strstr(text, "</svg>"));
    free(text);
    text = psc__read(html);
    assert_non_null(strstr(text, "p2pscope bw -t gpu_to_gpu_write_ce -s 64K"));   /* the run's context */
    assert_non_null(strstr(text, "Fake GPU 1"));                                  /* the inventory */
    assert_non_null(strstr(text, "<svg "));
    free(text);
#else
    (void)html;
    (void)svg;
#endif
}

/* A check that failed is a result like any other: exit 1, and the tables say which case. */
static void test_failed_run_written(void **state)
{
    const char *csv = psc__path("failed");
    psc__run_t r;
    char *text;

    (void)state;
    r = psc__run((const char *[]){"bw", "-t", "gpu_to_gpu_write_ce", "-d", "0,1", "-s", "64K", "-n", "1",
                                  "--max-samples", "1", "-w", "0", "--test-corrupt-offset", "100", "--csv", csv, NULL},
                 psc__fake);
    assert_int_equal(r.rc, 1);
    psc__free(&r);
    text = psc__read(psc__path("failed/bw.csv"));
    assert_non_null(strstr(text, ",failed,"));
    free(text);
}

/* A run that ends before results (a GPU that does not exist) writes nothing, and makes no directory. */
static void test_nothing_without_results(void **state)
{
    const char *csv = psc__path("never");
    struct stat sb;

    (void)state;
    psc__expect_error((const char *[]){"bw", "-d", "7", "--csv", csv, NULL}, psc__fake, 2, "GPU 7 does not exist");
    assert_int_not_equal(stat(csv, &sb), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_planted_links_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_before_measuring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_written_at_the_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_run_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_without_results, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
