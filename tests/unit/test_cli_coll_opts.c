/*
 * `p2pscope coll` with the rest of nccl-tests 2.19.6's options (-N -p -y -C -S -J -R -x -D -V -M -u -I -K, -z 3):
 * each parsed to its meaning or refused in one line (exit 2), and each one's effect on the fake driver and NCCL:
 * the lines and columns nccl-tests prints for it, and what the fake NCCL saw (FAKE_NCCL_LOG: buffers, streams,
 * registrations, the communicators' config).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "cli.h"
#include "cli_parse.h"
#include "run_binary.h"

static void test_parse_values(void **state)
{
    psc_cli_opts_t o;

    (void)state;
    assert_int_equal(PARSE(&o, "coll"), 0); /* nccl-tests' defaults */
    assert_int_equal(o.coll.run_cycles, 1);
    assert_int_equal(o.coll.cta_policy, -1);
    assert_int_equal(o.coll.register_mode + o.coll.unalign + o.coll.per_iter + o.coll.stream_null, 0);
    assert_int_equal(o.coll_cputime + o.coll_timestamps + o.coll_memory + o.coll_forever, 0);
    assert_null(o.coll_json_nccl);
    assert_int_equal(PARSE(&o, "coll", "-N", "3", "-p", "1", "-y", "1", "-C", "1", "-S", "1", "-J", "/tmp/n.json", "-R",
                           "2", "-x", "1", "-D", "0", "-V", "16", "-M", "1", "-u", "3", "-I", "1", "-K", "2", "-z", "3"),
                     0);
    assert_int_equal(o.coll.run_cycles, 3);
    assert_int_equal(o.coll.parallel_init, 1);
    assert_int_equal(o.coll.stream_null, 1);
    assert_int_equal(o.coll_cputime, 1);
    assert_int_equal(o.coll_timestamps, 1);
    assert_string_equal(o.coll_json_nccl, "/tmp/n.json");
    assert_int_equal(o.coll.register_mode, 2);
    assert_int_equal(o.coll.cta_policy, 1);
    assert_int_equal(o.coll.device_impl, 0);
    assert_int_equal(o.coll.device_ctas, 16);
    assert_int_equal(o.coll_memory, 1);
    assert_int_equal(o.coll.unalign, 3);
    assert_int_equal(o.coll.per_iter, 1);
    assert_int_equal(o.coll.per_iter_skip, 2);
    assert_int_equal(o.coll.blocking, 3);
    /* nccl-tests' long names */
    assert_int_equal(PARSE(&o, "coll", "--run_cycles", "0", "--parallel_init", "0", "--stream_null", "0",
                           "--report_cputime", "0", "--report_timestamps", "1",
                           "--local_register", "1", "--cta_policy", "2", "--device_implementation", "0",
                           "--device_cta_count", "128", "--memory", "0", "--unalign", "1", "--per_iter_timing", "1",
                           "--per_iter_skip", "0"),
                     0);
    assert_int_equal(o.coll_forever, 1); /* -N 0: one cycle a run, runs until stopped */
    assert_int_equal(o.coll.run_cycles, 1);
    assert_int_equal(o.coll.register_mode, 1);
    assert_int_equal(o.coll.cta_policy, 2);
    assert_int_equal(o.coll.device_ctas, 128);
    assert_int_equal(o.coll_timestamps, 1);
    assert_int_equal(PARSE(&o, "coll", "--output_file", "a.JSON"), 0); /* nccl-tests' suffix test ignores case */
    assert_string_equal(o.coll_json_nccl, "a.JSON");
}

static void bad(const char *want, int rc)
{
    if (rc != PSC_EXIT_USAGE || !strstr(err, want))
        fail_msg("rc %d, '%s' lacks '%s'", rc, err, want);
}

static void test_parse_refusals(void **state)
{
    psc_cli_opts_t o;

    (void)state;
    bad("bad -N '-1': accepted 1 to 1000 cycles, or 0", PARSE(&o, "coll", "-N", "-1"));
    bad("bad -N '1001'", PARSE(&o, "coll", "-N", "1001"));
    bad("bad -p '2': accepted 0 or 1", PARSE(&o, "coll", "-p", "2"));
    bad("bad -y 'x': accepted 0 or 1", PARSE(&o, "coll", "-y", "x"));
    bad("bad -C '2'", PARSE(&o, "coll", "-C", "2"));
    bad("bad -S '-1'", PARSE(&o, "coll", "-S", "-1"));
    bad("bad -M '3'", PARSE(&o, "coll", "-M", "3"));
    bad("bad -I '2'", PARSE(&o, "coll", "-I", "2"));
    bad("bad -R '3': accepted 0, 1 (local registration) or 2 (symmetric windows)", PARSE(&o, "coll", "-R", "3"));
    bad("bad -x '3': accepted 0 (default), 1 (efficiency) or 2 (zero)", PARSE(&o, "coll", "-x", "3"));
    bad("bad -x '-1'", PARSE(&o, "coll", "-x", "-1"));
    bad("bad -V '0': accepted 1 to 128", PARSE(&o, "coll", "-V", "0"));
    bad("bad -V '129'", PARSE(&o, "coll", "-V", "129"));
    bad("bad -u '-1': accepted 0 to 1024 elements", PARSE(&o, "coll", "-u", "-1"));
    bad("bad -u '1025'", PARSE(&o, "coll", "-u", "1025"));
    bad("bad -D '-1'", PARSE(&o, "coll", "-D", "-1"));
    bad("bad -z '4': accepted 0, 1 (wait and meet after each operation), 2 (wait) or 3", PARSE(&o, "coll", "-z", "4"));
    bad("bad -J 'out.txt': accepted a file name ending in .json", PARSE(&o, "coll", "-J", "out.txt"));
    bad("bad --output_file 'a.json/b'", PARSE(&o, "coll", "--output_file", "a.json/b"));
    bad("-K 2: per-iteration skip (-K) requires per-iteration timing (-I 1)", PARSE(&o, "coll", "-K", "2"));
    bad("-K 5: accepted 0 to 4 (-n 5 iterations", PARSE(&o, "coll", "-I", "1", "-n", "5", "-K", "5"));
    bad("-D 1: device implementation (-D > 0) requires enabling symmetric memory registration (-R 2)",
        PARSE(&o, "coll", "-D", "1", "-R", "1"));
    bad("-G excludes -I (per-iteration timing is incompatible with CUDA graph mode)",
        PARSE(&o, "coll", "-G", "2", "-I", "1"));
    bad("-G excludes -y", PARSE(&o, "coll", "-y", "1", "-G", "2"));
    bad("-z and -G exclude each other", PARSE(&o, "coll", "-z", "3", "-G", "2"));
    bad("--impl p2pscope excludes -u and -y", PARSE(&o, "coll", "--impl", "p2pscope", "-u", "1"));
    bad("-N 0 runs until stopped: it excludes --json, -J", PARSE(&o, "coll", "-N", "0", "-J", "x.json"));
    bad("-N 0 runs until stopped", PARSE(&o, "coll", "-N", "0", "--json"));
    bad("-R needs a value", PARSE(&o, "coll", "-R"));
}

#define FAKE_ENV "P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", \
                 "FAKE_CUDA_MODE=contexts", "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_COUNT=2", \
                 "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL

/* Rows of nccl-tests' table: lines that are neither comments nor blank. */
static int count_rows(const char *out)
{
    int n = 0;

    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += *p != '#' && *p != '\n';
    return n;
}

static int count_str(const char *out, const char *s)
{
    int n = 0;

    for (const char *p = strstr(out, s); p; p = strstr(p + 1, s))
        n++;
    return n;
}

/* The first row's fields (whitespace-separated), or -1 without a row. */
static int row_fields(const char *out, char fields[][32], int cap)
{
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        char line[1024], *save = NULL, *tok;
        int n = 0;

        if (*p == '#' || *p == '\n')
            continue;
        snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
        for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save), n++)
            if (n < cap)
                snprintf(fields[n], 32, "%s", tok);
        return n;
    }
    return -1;
}

/* A temporary file name for the fake NCCL's log (FAKE_NCCL_LOG) or a JSON output, removed first. */
static void tmp_name(char *buf, size_t len, const char *what)
{
    snprintf(buf, len, "%s/p2pscope-collopts-%d-%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid(),
             what);
    unlink(buf);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t len = 0;

    if (!f)
        return strdup("");
    buf = calloc(1, 1 << 20);
    len = fread(buf, 1, (1 << 20) - 1, f);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

/* A run with FAKE_NCCL_LOG set (and version, "" for the fake's default): its log's text. */
static char *run_logged(const char *const *args, const char *version, int want_rc, char **out)
{
    char log[256], logenv[300], verenv[64];
    psc__run_t r;
    char *text;

    tmp_name(log, sizeof(log), "nccl.log");
    snprintf(logenv, sizeof(logenv), "FAKE_NCCL_LOG=%s", log);
    snprintf(verenv, sizeof(verenv), "FAKE_NCCL_VERSION=%s", version);
    r = psc__run((const char **)args, (const char *const[]){FAKE_ENV, logenv, verenv, NULL});
    if (r.rc != want_rc)
        fail_msg("rc %d, not %d: %s%s", r.rc, want_rc, r.out, r.err);
    text = read_all(log);
    unlink(log);
    if (out)
        *out = strdup(r.out);
    psc__free(&r);
    return text;
}

/* Every ncclAllReduce the log holds: its send and recv pointers mod 16 are `mod`; returns how many. */
static int allreduce_mod16(const char *log, unsigned mod)
{
    int n = 0;

    for (const char *p = strstr(log, "ncclAllReduce "); p; p = strstr(p + 1, "ncclAllReduce ")) {
        void *s = NULL, *r = NULL;
        int rank;

        assert_int_equal(sscanf(p, "ncclAllReduce rank=%d send=%p recv=%p", &rank, &s, &r), 3);
        if ((uintptr_t)s % 16 != mod || (uintptr_t)r % 16 != mod)
            fail_msg("a buffer at %p / %p, not %u past 16 B: %.80s", s, r, mod, p);
        n++;
    }
    return n;
}

/* -u N: nccl-tests' misaligned buffers, N elements past the allocation, the data still checked right. */
static void test_binary_unalign(void **state)
{
    char *log, *out;

    (void)state;
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "256", "-f", "4", "-n", "3", "--impl", "nccl",
                                           NULL}, "", 0, NULL);
    assert_true(allreduce_mod16(log, 0) > 0);
    free(log);
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "256", "-f", "4", "-n", "3", "-u", "1", NULL}, "",
                     0, &out);
    assert_true(allreduce_mod16(log, 4) > 0); /* one float */
    assert_non_null(strstr(out, " graph: 0 unalign: 1\n"));
    assert_non_null(strstr(out, "# Out of bounds values : 0 OK\n"));
    assert_non_null(strstr(out, "# p2pscope's all-reduce not run: -u and -y are for NCCL's rows"));
    free(log);
    free(out);
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "2", "-u", "3", "-d", "half",
                                           "--impl", "nccl", NULL}, "", 0, NULL);
    assert_true(allreduce_mod16(log, 6) > 0); /* three halves */
    free(log);
}

/* -R 1 and 2: the send and receive buffers of every rank registered (and deregistered); before 2.27 and 2.19, nccl-tests' lines. */
static void test_binary_register(void **state)
{
    char *log, *out;

    (void)state;
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "256", "-f", "4", "-n", "3", "-R", "1", NULL}, "",
                     0, NULL);
    assert_int_equal(count_str(log, "ncclCommRegister rank=0 "), 2);
    assert_int_equal(count_str(log, "ncclCommRegister rank=1 "), 2);
    assert_int_equal(count_str(log, " size=256\n"), 4); /* maxBytes, as nccl-tests registers */
    assert_int_equal(count_str(log, "ncclCommDeregister "), 4);
    assert_int_equal(count_str(log, "ncclCommWindowRegister "), 0);
    free(log);
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "3", "-R", "2", NULL}, "", 0, &out);
    assert_int_equal(count_str(log, "ncclCommWindowRegister "), 4);
    assert_int_equal(count_str(log, " flags=1\n"), 4); /* NCCL_WIN_COLL_SYMMETRIC */
    assert_int_equal(count_str(log, "ncclCommWindowDeregister "), 4);
    assert_true(strncmp(out, "# nccl-tests version", 20) == 0);
    free(log);
    free(out);
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "3", "-R", "2", NULL}, "22600", 0,
                     &out);
    assert_true(strncmp(out, "Option -R 2 (symmetric) is not supported before NCCL 2.27. Defaulting to local "
                             "registration\n# nccl-tests version", 100) == 0);
    assert_int_equal(count_str(log, "ncclCommRegister "), 4);
    free(log);
    free(out);
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "3", "-R", "1", NULL}, "21800", 0,
                     &out);
    assert_true(strncmp(out, "Option -R (register) is not supported before NCCL 2.19. Ignoring\n", 64) == 0);
    assert_null(strstr(log, "Register"));
    free(log);
    free(out);
}

/* -y 1: every operation on the NULL (legacy default) stream; without it, on a stream of the run's own. */
static void test_binary_stream_null(void **state)
{
    char *log;

    (void)state;
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "3", "-y", "1", NULL}, "", 0, NULL);
    assert_true(count_str(log, "ncclAllReduce ") > 0);
    assert_int_equal(count_str(log, "ncclAllReduce "), count_str(log, " stream=(nil)\n"));
    free(log);
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "3", "--impl", "nccl", NULL}, "", 0,
                     NULL);
    assert_true(count_str(log, "ncclAllReduce ") > 0);
    assert_int_equal(count_str(log, " stream=(nil)\n"), 0);
    free(log);
}

/* -x: ncclConfig_t.CTAPolicy; 2 needs 2.28 (nccl-tests' line, left unset), nothing before 2.27. */
static void test_binary_cta_policy(void **state)
{
    char *log, *out;

    (void)state;
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "2", "-x", "2", NULL}, "", 0, NULL);
    assert_int_equal(count_str(log, "CTAPolicy=2\n"), 2);
    free(log);
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "2", NULL}, "", 0, NULL);
    assert_int_equal(count_str(log, "CTAPolicy=-2147483648\n"), 2); /* NCCL_CONFIG_UNDEF_INT: NCCL's default */
    free(log);
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "2", "-x", "2", NULL}, "22700", 0,
                     &out);
    assert_null(strstr(log, "CTAPolicy=2")); /* the config's version stays below 2.27's: NCCL reads no policy */
    assert_true(strncmp(out, "Option -x (cta_policy) 2 is not supported before NCCL 2.28. Ignoring\n", 69) == 0);
    free(log);
    free(out);
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "2", "-x", "1", NULL}, "22700", 0,
                     NULL);
    assert_int_equal(count_str(log, "CTAPolicy=1\n"), 2);
    free(log);
}

/* -N 2: the sizes' rows twice in one table (one header, one summary); -p 1 and -z 3: nccl-tests' header lines. */
static void test_binary_cycles_and_header_lines(void **state)
{
    static const char *const env[] = {FAKE_ENV, NULL};
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "256", "-f", "4", "-n", "2", "-N", "2", "-p", "1", "-z",
                                  "3", "--impl", "nccl", NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_int_equal(count_rows(r.out), 4);
    assert_int_equal(count_str(r.out, "\n          64            16     float     sum      -1  "), 2);
    assert_int_equal(count_str(r.out, "out-of-place"), 1);
    assert_int_equal(count_str(r.out, "# Avg bus bandwidth"), 1);
    assert_non_null(strstr(r.out, "\n# Blocking Enabled: wait and barrier after each outer iteration (-n); time "
                                  "excludes barrier \n# Parallel Init Enabled: threads call into NcclInitRank "
                                  "concurrently \n#\n# Using devices\n"));
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-n", "2", "--impl", "nccl", NULL}, env);
    assert_int_equal(count_rows(r.out), 1);
    assert_null(strstr(r.out, "Parallel Init"));
    psc__free(&r);
}

/* -C 1: "cputime" columns; -S 1: a "timestamp" column, each row ending in its time. */
static void test_binary_cputime_timestamps(void **state)
{
    static const char *const env[] = {FAKE_ENV, NULL};
    char f[24][32];
    int y, mo, d, h, mi, s;
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-n", "2", "-C", "1", "-S", "1", "--impl", "nccl",
                                  NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "\n#       size         count      type   redop    root  cputime   algbw   busbw  "
                                  "#wrong  cputime   algbw   busbw  #wrong           timestamp\n"));
    assert_non_null(strstr(r.out, "\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)  "
                                  "           (us)  (GB/s)  (GB/s)           %Y-%m-%d %H:%M:%S\n"));
    assert_int_equal(row_fields(r.out, f, 24), 15); /* nccl-tests' 13, and the date and time */
    assert_int_equal(sscanf(f[13], "%d-%d-%d", &y, &mo, &d), 3);
    assert_int_equal(sscanf(f[14], "%d:%d:%d", &h, &mi, &s), 3);
    assert_true(y >= 2024 && mo >= 1 && mo <= 12);
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-n", "2", "--impl", "nccl", NULL}, env);
    assert_null(strstr(r.out, "cputime"));
    assert_int_equal(row_fields(r.out, f, 24), 13);
    psc__free(&r);
}

/* -I 1 (and -K): nccl-tests' per-iteration header and four columns a half. */
static void test_binary_per_iter(void **state)
{
    static const char *const env[] = {FAKE_ENV, NULL};
    char f[24][32];
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-n", "4", "-I", "1", "-K", "1", "-S", "1", "--impl",
                                  "nccl", NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "\n# Per-Iteration Report: CUDA event timing; i_* uses max over process rows; "
                                  "summary skips first 1 iterations \n"));
    assert_non_null(strstr(r.out, "out-of-place (+ per-iteration)"));
    assert_non_null(strstr(r.out, "  #wrong    i_min    i_max    i_p99    i_cv%     time  "));
    assert_non_null(strstr(r.out, "i_cv%           timestamp\n"));
    assert_int_equal(row_fields(r.out, f, 24), 23); /* 5, 4 + 4 a half, the stamp once at the end (date, time) */
    assert_non_null(strchr(f[21], '-'));
    assert_true(atof(f[9]) <= atof(f[11]) && atof(f[11]) <= atof(f[10]) + 1e-9); /* i_min <= i_p99 <= i_max */
    psc__free(&r);
    /* p2pscope's own JSON holds them too: each half's iterations, its host time, the options */
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-n", "4", "-I", "1", "-N", "2", "-u", "2",
                                  "--impl", "nccl", "--json", NULL}, env);
    assert_int_equal(r.rc, 0);
    {
        json_error_t je;
        json_t *doc = json_loads(r.out, 0, &je), *coll = json_object_get(doc, "coll"), *half;

        assert_non_null(coll);
        assert_int_equal(json_integer_value(json_object_get(coll, "run_cycles")), 2);
        assert_int_equal(json_integer_value(json_object_get(coll, "unalign")), 2);
        assert_int_equal(json_array_size(json_object_get(coll, "rows")), 2);
        half = json_object_get(json_array_get(json_object_get(coll, "rows"), 1), "in_place");
        assert_true(json_number_value(json_object_get(half, "cpu_time_us")) > 0);
        assert_int_equal(json_array_size(json_object_get(json_object_get(half, "per_iteration_us"), "times")), 4);
        assert_true(json_is_object(json_object_get(coll, "memory_bytes")));
        json_decref(doc);
    }
    psc__free(&r);
}

/* -M 1: nccl-tests' memory line after "Collective test concluded", the buffers counted. */
static void test_binary_memory(void **state)
{
    static const char *const env[] = {FAKE_ENV, NULL};
    psc__run_t r;
    const char *p;

    (void)state;
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "1M", "-f", "1024", "-n", "2", "-M", "1", "--impl", "nccl",
                                  NULL}, env);
    assert_int_equal(r.rc, 0);
    p = strstr(r.out, "\n# Collective test concluded: all_reduce_perf\n# GPU memory usage     : Initialization ");
    assert_non_null(p);
    /* two 1 MiB buffers and the check's words: "2.00 MB" */
    assert_non_null(strstr(p, " | User-Allocated 2.00 MB | Collective "));
    assert_non_null(strstr(p, " | Total  "));
    psc__free(&r);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/*
 * -I's figures as nccl-tests sums them up (util.cu's computeIterStats), from the times it lists: after the
 * skipped ones, min, max, mean, p50 = sorted[m/2], p95 and p99 at nearest rank min(m-1, (m*p+99)/100-1),
 * stdev over m, cv% = stdev / mean * 100.
 */
static void check_iter_stats(const json_t *it, int skip)
{
    const json_t *t = json_object_get(it, "times_us");
    int n = (int)json_array_size(t), m = n - skip, k95, k99;
    double v[64], sum = 0, var = 0, avg;

    assert_true(m >= 1 && n <= 64);
    assert_int_equal(json_integer_value(json_object_get(it, "skipped_iterations")), skip);
    for (int i = 0; i < m; i++)
        sum += v[i] = json_number_value(json_array_get(t, (size_t)(i + skip)));
    qsort(v, (size_t)m, sizeof(double), cmp_d);
    avg = sum / m;
    for (int i = 0; i < m; i++)
        var += (v[i] - avg) * (v[i] - avg);
    k95 = (m * 95 + 99) / 100 - 1 < m - 1 ? (m * 95 + 99) / 100 - 1 : m - 1;
    k99 = (m * 99 + 99) / 100 - 1 < m - 1 ? (m * 99 + 99) / 100 - 1 : m - 1;
    assert_float_equal(num(it, "min_us"), v[0], 2e-6);
    assert_float_equal(num(it, "max_us"), v[m - 1], 2e-6);
    assert_float_equal(num(it, "p50_us"), v[m / 2], 2e-6);
    assert_float_equal(num(it, "p95_us"), v[k95], 2e-6);
    assert_float_equal(num(it, "p99_us"), v[k99], 2e-6);
    assert_float_equal(num(it, "avg_us"), avg, 2e-6);
    assert_float_equal(num(it, "stdev_us"), sqrt(var / m), 2e-6);
    assert_float_equal(num(it, "cv_pct"), avg > 0 ? sqrt(var / m) / avg * 100 : 0, 1e-4);
}

/* -J FILE: nccl-tests' JSON (its keys, its strings for booleans), announced first, as nccl-tests does. */
static void test_binary_nccl_json(void **state)
{
    static const char *const env[] = {FAKE_ENV, NULL};
    char path[256];
    json_error_t je;
    json_t *doc, *res, *cfg;
    psc__run_t r;

    (void)state;
    tmp_name(path, sizeof(path), "out.json");
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "256", "-f", "4", "-n", "7", "-I", "1", "-K", "2", "-C",
                                  "1", "-J", path, NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_true(strncmp(r.out, "# Writing JSON output to ", 25) == 0);
    doc = json_load_file(path, 0, &je);
    if (!doc)
        fail_msg("%s: %s", path, je.text);
    assert_int_equal(json_integer_value(json_object_get(doc, "version")), 3);
    assert_int_equal(json_integer_value(json_object_get(doc, "nccl_version")), 22807);
    assert_true(json_is_string(json_object_get(doc, "start_time")) && json_is_string(json_object_get(doc, "end_time")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "args"), 1)), "-b");
    cfg = json_object_get(doc, "config");
    assert_int_equal(json_integer_value(json_object_get(cfg, "ngpus")), 2);
    assert_int_equal(json_integer_value(json_object_get(cfg, "step_factor")), 4);
    assert_string_equal(json_string_value(json_object_get(cfg, "per_iter_timing")), "true");
    assert_string_equal(json_string_value(json_object_get(cfg, "blocking_collectives")), "false");
    assert_int_equal(json_array_size(json_object_get(cfg, "devices")), 1); /* one per process, as nccl-tests' */
    res = json_object_get(doc, "results");
    assert_int_equal(json_array_size(res), 2); /* NCCL's rows: nccl-tests' table's */
    assert_string_equal(json_string_value(json_object_get(json_array_get(res, 0), "root")), "    -1");
    assert_true(json_is_real(json_object_get(json_object_get(json_array_get(res, 0), "out_of_place"), "cpu_time")));
    assert_null(json_object_get(json_object_get(json_array_get(res, 0), "out_of_place"), "time"));
    assert_true(json_is_real(json_object_get(json_object_get(json_array_get(res, 1), "in_place"), "nwrong")));
    assert_int_equal(json_array_size(json_object_get(json_object_get(json_array_get(res, 1), "in_place_per_iter"),
                                                     "times_us")), 7);
    for (size_t i = 0; i < 2; i++) {
        check_iter_stats(json_object_get(json_array_get(res, i), "out_of_place_per_iter"), 2);
        check_iter_stats(json_object_get(json_array_get(res, i), "in_place_per_iter"), 2);
    }
    assert_int_equal(json_integer_value(json_object_get(json_array_get(res, 1), "actual_iterations")), 7);
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "average_bus_bandwidth"), "okay")),
                        "unchecked");
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "out_of_bounds"), "okay")), "true");
    assert_true(json_is_array(json_object_get(doc, "errors")));
    json_decref(doc);
    psc__free(&r);
    unlink(path);
    /* refused before the run: an unwritable place leaves nothing and runs nothing */
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-J", "/nonexistent/dir/out.json", NULL}, env);
    assert_int_equal(r.rc, PSC_EXIT_USAGE);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "cannot write /nonexistent/dir/out.json"));
    psc__free(&r);
}

/* -D and -V: nccl-tests' device-API kernels are not in p2pscope: refused, naming NCCL 2.28 where it is older. */
static void test_binary_device_impl(void **state)
{
    char *log, *out;
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-D", "1", "-R", "2", NULL},
                 (const char *const[]){FAKE_ENV, NULL});
    assert_int_equal(r.rc, PSC_EXIT_USAGE);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "-D 1: nccl-tests' device implementations (its own kernels on NCCL 2.28.7's device "
                                  "API) are not in p2pscope: accepted -D 0\n"));
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-D", "1", "-R", "2", NULL},
                 (const char *const[]){FAKE_ENV, "FAKE_NCCL_VERSION=22700", NULL});
    assert_int_equal(r.rc, PSC_EXIT_ENV);
    assert_non_null(strstr(r.err, "Option -D (device implementation) requires NCCL >= 2.28.0 (loaded: 2.27.0)\n"));
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-V", "8", NULL},
                 (const char *const[]){FAKE_ENV, "FAKE_NCCL_VERSION=22700", NULL});
    assert_int_equal(r.rc, PSC_EXIT_ENV);
    assert_non_null(strstr(r.err, "Option -V (device CTA count) requires NCCL >= 2.28.0"));
    psc__free(&r);
    /* -V with 2.28 and NCCL's own collectives: taken, as nccl-tests takes it (it only shapes device kernels) */
    log = run_logged((const char *const[]){"coll", "-b", "64", "-e", "64", "-n", "2", "-V", "8", "-D", "0", NULL}, "",
                     0, &out);
    assert_true(count_str(out, "\n          64  ") == 1);
    free(log);
    free(out);
}

/*
 * -N 0: runs until stopped. The binary is started with its output in a file, and stopped once three runs' rows
 * are there: nccl-tests' head once, the rows of run after run, no footer.
 */
static void test_binary_forever(void **state)
{
    char path[256], *out = NULL;
    struct timespec nap = {0, 10 * 1000 * 1000};
    int status = 0, fd;
    pid_t pid;

    (void)state;
    tmp_name(path, sizeof(path), "forever.txt");
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        static const char *const env[] = {FAKE_ENV, NULL};

        for (int i = 0; env[i]; i++)
            putenv((char *)env[i]);
        dup2(fd, 1);
        execl(P2PSCOPE_BIN, P2PSCOPE_BIN, "coll", "-b", "64", "-e", "64", "-n", "2", "-N", "0", "--impl", "nccl",
              (char *)NULL);
        _exit(127);
    }
    close(fd);
    for (int waited = 0; waited < 3000; waited++) { /* up to 30 s for three runs */
        free(out);
        out = read_all(path);
        if (count_rows(out) >= 3 || waitpid(pid, &status, WNOHANG) == pid)
            break;
        nanosleep(&nap, NULL);
    }
    kill(pid, SIGTERM);
    waitpid(pid, &status, 0);
    assert_true(count_rows(out) >= 3);
    assert_int_equal(count_str(out, "# nccl-tests version"), 1);
    assert_int_equal(count_str(out, "out-of-place"), 1);
    assert_null(strstr(out, "# Avg bus bandwidth"));
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM); /* it was still running */
    free(out);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_binary_unalign),
        cmocka_unit_test(test_binary_register),
        cmocka_unit_test(test_binary_stream_null),
        cmocka_unit_test(test_binary_cta_policy),
        cmocka_unit_test(test_binary_cycles_and_header_lines),
        cmocka_unit_test(test_binary_cputime_timestamps),
        cmocka_unit_test(test_binary_per_iter),
        cmocka_unit_test(test_binary_memory),
        cmocka_unit_test(test_binary_nccl_json),
        cmocka_unit_test(test_binary_device_impl),
        cmocka_unit_test(test_binary_forever),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
