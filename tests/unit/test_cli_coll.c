/*
 * `p2pscope coll` on the command line without a GPU: nccl-tests' options
 * land where they mean what nccl-tests means, every bad value is one line
 * and exit 2; the binary on the fake driver and NCCL prints nccl-tests'
 * table (rank 0 only), exits 1 on a wrong element or a timeout, 3 without
 * NCCL or a driver, and writes JSON on request.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "one_cpu.h"
#include <jansson.h>

#include "cli.h"
#include "cli_parse.h"
#include "run_binary.h"

static void test_parse_defaults_and_values(void **state)
{
    psc_cli_opts_t o;

    (void)state;
    unsetenv("NCCL_TESTS_DEVICE");
    assert_int_equal(PARSE(&o, "coll"), 0);
    assert_int_equal(o.cmd, PSC_CMD_COLL);
    assert_int_equal(o.coll.coll, PSC_COLL_ALL_REDUCE);
    assert_int_equal(o.coll.dtype, PSC_DT_FLOAT32);
    assert_int_equal(o.coll.op, PSC_OP_SUM);
    assert_int_equal(o.coll.min_bytes, 32u << 20);
    assert_int_equal(o.coll.max_bytes, 32u << 20);
    assert_int_equal(o.coll.iters, 20);
    assert_int_equal(o.coll.check, 1);
    assert_int_equal(o.coll_gpus, 0);
    assert_int_equal(o.coll_first_gpu, -1);
    assert_int_equal(o.coll.impls, PSC_COLL_IMPL_ALL);
    assert_int_equal(o.coll.per_op, 0); /* as nccl-tests: no operation timed alone unless asked */
    assert_int_equal(PARSE(&o, "coll", "--per-op"), 0);
    assert_int_equal(o.coll.per_op, 1);
    assert_int_equal(o.identify, 0);
    assert_int_equal(PARSE(&o, "coll", "--identify", "--json"), 0); /* the ranks' host names in the JSON */
    assert_int_equal(o.identify, 1);
    assert_int_equal(PARSE(&o, "coll", "--impl", "nccl"), 0);
    assert_int_equal(o.coll.impls, PSC_COLL_IMPL_NCCL);
    assert_int_equal(PARSE(&o, "coll", "--impl=p2pscope", "-d", "half"), 0);
    assert_int_equal(o.coll.impls, PSC_COLL_IMPL_P2PSCOPE);
    assert_int_equal(PARSE(&o, "coll", "--impl", "p2pscope", "-d", "all", "-o", "all"), 0); /* its part of them */
    assert_int_equal(PARSE(&o, "coll", "all_gather", "--impl", "all"), 0);
    assert_int_equal(o.coll.impls, PSC_COLL_IMPL_ALL);
    assert_int_equal(PARSE(&o, "coll", "reduce_scatter_perf", "-b", "8", "-e", "1.5G", "-f", "2", "-n", "7", "-w", "0",
                           "-m", "4", "-c", "3", "-o", "max", "-d", "bfloat16", "-r", "-1", "-z", "2", "-T", "0.5",
                           "-a", "3", "-g", "2", "-t", "1", "--seed", "9", "--no-per-op"),
                     0);
    assert_int_equal(o.coll.coll, PSC_COLL_REDUCE_SCATTER);
    assert_int_equal(o.coll.min_bytes, 8);
    assert_int_equal(o.coll.max_bytes, 3ull << 29);
    assert_int_equal(o.coll.step_factor, 2);
    assert_int_equal(o.coll.iters, 7);
    assert_int_equal(o.coll.warmup_iters, 0);
    assert_int_equal(o.coll.agg_iters, 4);
    assert_int_equal(o.coll.check, 3);
    assert_int_equal(o.coll.op, PSC_OP_MAX);
    assert_int_equal(o.coll.dtype, PSC_DT_BFLOAT16);
    assert_int_equal(o.coll.root, -1);
    assert_int_equal(o.coll.blocking, 2);
    assert_true(o.coll.timeout_s == 0.5);
    assert_int_equal(o.coll.time_of, PSC_COLL_TIME_MAX);
    assert_int_equal(o.coll_gpus, 2);
    assert_int_equal(o.coll.seed, 9);
    assert_int_equal(o.coll.per_op, 0);
    /* nccl-tests' long names, "all", its size units (a B after them allowed), another collective's aliases */
    assert_int_equal(PARSE(&o, "coll", "alltoall", "--minbytes", "64K", "--maxbytes", "1MB", "--stepbytes", "4k",
                           "--datatype", "all", "--op", "all", "--cudagraph", "10", "--devices", "1,0"),
                     0);
    assert_int_equal(o.coll.coll, PSC_COLL_ALL_TO_ALL);
    assert_int_equal(o.coll.min_bytes, 64u << 10);
    assert_int_equal(o.coll.max_bytes, 1u << 20);
    assert_int_equal(o.coll.step_bytes, 4u << 10);
    assert_int_equal(o.coll.dtype, -1);
    assert_int_equal(o.coll.op, -1);
    assert_int_equal(o.coll.graph_launches, 10);
    assert_int_equal(o.ndev, 2);
    assert_int_equal(o.devs[0], 1);
    assert_int_equal(PARSE(&o, "coll", "allreduce", "--json="), PSC_EXIT_USAGE); /* as every command refuses it */
    assert_non_null(strstr(err, "empty --json file name"));
    assert_int_equal(PARSE(&o, "coll", "allreduce", "--json=/tmp/x.json"), 0);
    assert_int_equal(o.coll.coll, PSC_COLL_ALL_REDUCE);
    assert_int_equal(o.json, 1);
    assert_string_equal(o.json_path, "/tmp/x.json");
    assert_int_equal(PARSE(&o, "coll", "sendrecv_perf", "-d", "int8"), 0);
    assert_int_equal(o.coll.coll, PSC_COLL_SEND_RECV);
    assert_int_equal(o.coll.dtype, PSC_DT_INT8);
    setenv("NCCL_TESTS_DEVICE", "3", 1);
    assert_int_equal(PARSE(&o, "coll", "-g", "1"), 0);
    assert_int_equal(o.coll_first_gpu, 3);
    unsetenv("NCCL_TESTS_DEVICE");
}

static void bad(const char *want, int rc)
{
    if (rc != PSC_EXIT_USAGE || !strstr(err, want))
        fail_msg("rc %d, '%s' lacks '%s'", rc, err, want);
}

static void test_parse_errors(void **state)
{
    psc_cli_opts_t o;

    (void)state;
    bad("bad -b '0': accepted a size from 1 B", PARSE(&o, "coll", "-b", "0"));
    bad("bad -e '8X'", PARSE(&o, "coll", "-e", "8X"));
    bad("bad --minbytes '-1'", PARSE(&o, "coll", "--minbytes", "-1"));
    bad("invalid sizes: -b 16 > -e 8", PARSE(&o, "coll", "-b", "16", "-e", "8"));
    bad("accepted sum, prod, max, min, avg or all", PARSE(&o, "coll", "-o", "mulsum"));
    bad("accepted int8, uint8", PARSE(&o, "coll", "-d", "fp8"));
    bad("bad -z '4'", PARSE(&o, "coll", "-z", "4"));
    bad("bad -t '2': accepted 1", PARSE(&o, "coll", "-t", "2"));
    bad("bad -g '0'", PARSE(&o, "coll", "-g", "0"));
    bad("bad -f '0'", PARSE(&o, "coll", "-f", "0"));
    bad("bad -n '0'", PARSE(&o, "coll", "-n", "0"));
    bad("bad -T 'x'", PARSE(&o, "coll", "-T", "x"));
    bad("bad -a '4'", PARSE(&o, "coll", "-a", "4"));
    bad("-z and -G exclude each other", PARSE(&o, "coll", "-z", "1", "-G", "5"));
    bad("-g and --devices exclude each other", PARSE(&o, "coll", "-g", "1", "--devices", "0"));
    bad("unknown option '-q' for coll: accepted -b -e", PARSE(&o, "coll", "-q", "2"));
    bad("unknown option '--bogus' for coll", PARSE(&o, "coll", "--bogus"));
    bad("-b needs a value", PARSE(&o, "coll", "-b"));
    bad("unknown collective 'gather'", PARSE(&o, "coll", "gather"));
    bad("bad --impl 'mpi': accepted nccl, p2pscope or all", PARSE(&o, "coll", "--impl", "mpi"));
    bad("--impl p2pscope: p2pscope's collectives do not do broadcast -o sum -d float: accepted all_reduce or "
        "reduce_scatter with -o sum, or all_gather, with -d float, half, bfloat16 or all",
        PARSE(&o, "coll", "broadcast", "--impl", "p2pscope"));
    bad("do not do all_gather -o sum -d int8", PARSE(&o, "coll", "all_gather", "-d", "int8", "--impl", "p2pscope"));
    assert_int_equal(PARSE(&o, "coll", "all_gather", "--impl", "p2pscope", "-o", "max"), 0); /* it has no op */
    bad("do not do all_reduce -o prod -d float", PARSE(&o, "coll", "--impl", "p2pscope", "-o", "prod"));
    bad("do not do reduce_scatter -o sum -d int32", PARSE(&o, "coll", "reduce_scatter", "-d", "int32", "--impl",
                                                          "p2pscope"));
    assert_int_equal(PARSE(&o, "coll", "reduce_scatter", "--impl", "p2pscope"), 0);
    bad("unexpected argument 'extra'", PARSE(&o, "coll", "broadcast", "extra"));
    setenv("NCCL_TESTS_DEVICE", "x", 1);
    bad("NCCL_TESTS_DEVICE='x'", PARSE(&o, "coll"));
    unsetenv("NCCL_TESTS_DEVICE");
}

#define FAKE_ENV "P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1", \
                 "FAKE_CUDA_MODE=contexts", "FAKE_CUDA_KERNELS=1", "FAKE_CUDA_COUNT=2"

static int count_rows(const char *out)
{
    int n = 0;

    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += *p != '#' && *p != '\n';
    return n;
}

/* nccl-tests' table on the fake: its header lines, a row per size, the footer; exit 0. */
static void test_binary_table(void **state)
{
    static const char *const env[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, NULL};
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"coll", "all_gather", "-b", "64", "-e", "4K", "-f", "4", "-n", "3", NULL}, env);
    if (r.rc != 0)
        fprintf(stderr, "%s%s", r.out, r.err);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    assert_true(strncmp(r.out, "# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807\n",
                        strlen("# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807\n")) == 0);
    assert_non_null(strstr(r.out, "\n# Collective test starting: all_gather_perf\n"));
    assert_non_null(strstr(r.out, "\n# nThread 1 nGpus 2 minBytes 64 maxBytes 4096 step: 4(factor) warmup iters: 1 "
                                  "iters: 3 agg iters: 1 validation: 1 graph: 0 unalign: 0\n"));
    assert_non_null(strstr(r.out, "#  Rank  1 Group  0 Pid "));
    assert_int_equal(count_rows(r.out), 4); /* 64, 256, 1024, 4096 */
    assert_non_null(strstr(r.out, "\n          64             8     float    none      -1 "));
    assert_non_null(strstr(r.out, "\n# Out of bounds values : 0 OK\n"));
    assert_non_null(strstr(r.out, "\n# Collective test concluded: all_gather_perf\n#\n\n"));
    psc__free(&r);
    /* NCCL's last warning: nccl-tests' last line says it instead of the blank one */
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "--impl", "nccl", NULL},
                 (const char *const[]){FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL,
                                       "FAKE_NCCL_WARN=NET/Plugin: Could not find: libnccl-net.so", NULL});
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "\n# Collective test concluded: all_reduce_perf\n#\n# error: NET/Plugin: Could not "
                                  "find: libnccl-net.so\n"));
    psc__free(&r);
    /* NCCL_TESTS_DEVICE without -g: nccl-tests' one GPU from there */
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "--impl", "nccl", NULL},
                 (const char *const[]){FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, "NCCL_TESTS_DEVICE=1", NULL});
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "# nThread 1 nGpus 1 "));
    assert_int_equal(count_rows(r.out), 1);
    assert_non_null(strstr(r.out, "#  Rank  0 Group  0 Pid "));
    assert_non_null(strstr(r.out, " device  1 ["));
    psc__free(&r);
}

/* Lines of out that begin with prefix. */
static int count_prefix(const char *out, const char *prefix)
{
    int n = 0;

    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += strncmp(p, prefix, strlen(prefix)) == 0;
    return n;
}

/* Times s occurs in out. */
static int count_str(const char *out, const char *s)
{
    int n = 0;

    for (const char *p = strstr(out, s); p; p = strstr(p + 1, s))
        n++;
    return n;
}

/*
 * out read as a parser of nccl-tests reads it: "#" lines and blank lines
 * skipped, every other line a row of exactly 13 fields, the first its size;
 * each size once; the table's header once; "Out of bounds values" and "Avg
 * bus bandwidth" once each, with their figures. The rows' count.
 */
static int parse_as_nccl_tests(const char *out, long long *sizes, int cap)
{
    int rows = 0, oob = -1;
    double avg = -1;
    const char *p;

    for (p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        char line[512], *save = NULL, *tok;
        int fields = 0;
        long long size = -1;

        snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
        if (line[0] == '#' || line[strspn(line, " \t")] == '\0')
            continue;
        for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
            if (fields++ == 0)
                size = atoll(tok);
        if (fields != 13)
            fail_msg("a row of %d fields, not nccl-tests' 13: %.*s", fields, (int)strcspn(p, "\n"), p);
        for (int i = 0; i < rows && i < cap; i++)
            if (sizes[i] == size)
                fail_msg("size %lld in two rows: a parser of nccl-tests would take the second for the first", size);
        if (rows < cap)
            sizes[rows] = size;
        rows++;
    }
    assert_int_equal(count_str(out, "out-of-place"), 1);
    assert_int_equal(count_str(out, "in-place"), 1);
    assert_int_equal(count_prefix(out, "# Out of bounds values : "), 1);
    assert_int_equal(count_prefix(out, "# Avg bus bandwidth    : "), 1);
    p = strstr(out, "\n# Out of bounds values : ");
    assert_int_equal(sscanf(p, "\n# Out of bounds values : %d", &oob), 1);
    p = strstr(out, "\n# Avg bus bandwidth    : ");
    assert_int_equal(sscanf(p, "\n# Avg bus bandwidth    : %lf", &avg), 1);
    assert_true(oob >= 0 && avg >= 0);
    return rows;
}

/*
 * The default run (NCCL's rows and p2pscope's, each operation timed alone
 * too) as nccl-tests' parsers read it: one row per size, 13 fields each, the
 * summary lines once. p2pscope's own rows and times come after nccl-tests'
 * last line, every line a comment with header words of their own.
 */
static void test_binary_parsed_as_nccl_tests(void **state)
{
    static const char *const env[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, NULL};
    long long sizes[8];
    const char *tail;
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "4K", "-f", "4", "-n", "3", "--per-op", NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_int_equal(parse_as_nccl_tests(r.out, sizes, 8), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(sizes[i], 64ll << (2 * i));
    tail = strstr(r.out, "\n# Collective test concluded: all_reduce_perf\n#\n\n");
    assert_non_null(tail);
    tail += strlen("\n# Collective test concluded: all_reduce_perf\n#\n\n");
    assert_true(strncmp(tail, "# p2pscope ", strlen("# p2pscope ")) == 0);
    assert_non_null(strstr(tail, "\n# p2pscope's all-reduce (psc_allreduce_sum)"));
    assert_non_null(strstr(tail, "\n# p2pscope coll: each timed operation alone"));
    assert_int_equal(count_prefix(tail, "#         64     float     sum      -1  "), 3); /* own row, each op: nccl's, own's */
    psc__free(&r);
}

/*
 * p2pscope's rows: in a table of their own after nccl-tests' text (beside
 * NCCL's time, their average and wrong elements apart from nccl-tests'
 * summary); nothing of it where only NCCL's rows run; in nccl-tests' table
 * where they run alone; every row in JSON with its "impl".
 */
static void test_binary_own_table(void **state)
{
    static const char *const env[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, NULL};
    static const char *const own_wrong[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, "FAKE_AR_CORRUPT=0", NULL};
    static const char *const corrupt[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=/nonexistent/libnccl.so.2", "FAKE_AR_CORRUPT=0",
                                          NULL};
    long long sizes[4];
    psc__run_t r;
    const char *own;
    json_t *doc, *rows;

    (void)state;
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "256", "-f", "4", "-n", "3", NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_int_equal(parse_as_nccl_tests(r.out, sizes, 4), 2);
    assert_null(strstr(r.out, "impl"));
    own = strstr(r.out, "\n# p2pscope's all-reduce (psc_allreduce_sum), timed and checked as NCCL's rows above\n");
    assert_non_null(own);
    assert_true(strstr(r.out, "\n# Collective test concluded") < own);
    assert_non_null(strstr(own, "      oop_us    oop_busbw    oop_wrong  oop_vs_nccl       oop_way        ip_us     "
                                "ip_busbw     ip_wrong   ip_vs_nccl        ip_way\n"));
    assert_non_null(strstr(r.out, "\n# p2pscope's all-reduce: tuned beside NCCL (psc_allreduce_tune): "));
    for (int i = 0; i < 2; i++) { /* each half's way: the kernel's or NCCL's, as the fakes' times fell */
        const char *row = strstr(own, i ? "\n#        256     float     sum      -1  " : "\n#         64     float     sum      -1  ");
        char way[2][16];

        assert_non_null(row);
        assert_int_equal(sscanf(row + 1, "# %*s %*s %*s %*s %*s %*s %*s %*s %15s %*s %*s %*s %*s %15s", way[0], way[1]), 2);
        for (int k = 0; k < 2; k++)
            if (strcmp(way[k], "one-shot") && strcmp(way[k], "nccl"))
                fail_msg("row %d half %d ran '%s': accepted one-shot or nccl", i, k, way[k]);
    }
    assert_non_null(strstr(own, "\n# p2pscope's all-reduce: avg busbw "));
    assert_non_null(strstr(own, " GB/s; halves with wrong elements 0 OK\n"));
    assert_null(strstr(r.out, "each timed operation alone")); /* not asked (--per-op) */
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "broadcast", "-b", "64", "-e", "64", NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_int_equal(count_rows(r.out), 1);
    assert_null(strstr(r.out, "p2pscope")); /* nccl-tests' text alone */
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "all_gather", "-b", "64", "-e", "64", NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_int_equal(count_rows(r.out), 1); /* nccl-tests' table: NCCL's row */
    assert_non_null(strstr(r.out, "\n# p2pscope's all-gather (psc_allreduce_all_gather), timed and checked"));
    assert_non_null(strstr(r.out, "\n# p2pscope's all-gather: avg busbw "));
    assert_non_null(strstr(r.out, " GB/s; halves with wrong elements 0 OK\n"));
    psc__free(&r);
    /* its wrong elements: its summary and the exit code, not nccl-tests' "Out of bounds values" of NCCL's rows */
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "--no-tune", NULL}, own_wrong);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "\n# Out of bounds values : 0 OK\n"));
    assert_non_null(strstr(r.out, " GB/s; halves with wrong elements 2 FAILED\n"));
    psc__free(&r);
    /* alone, without NCCL: nccl-tests' table is its; a wrong element in its rows fails the run */
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "--impl", "p2pscope", NULL}, corrupt);
    assert_int_equal(r.rc, 1);
    assert_int_equal(parse_as_nccl_tests(r.out, sizes, 4), 1);
    assert_non_null(strstr(r.out, "\n# Out of bounds values : 2 FAILED\n"));
    assert_null(strstr(r.out, "p2pscope's all-reduce (psc_allreduce_sum)"));
    assert_non_null(strstr(r.err, "wrong elements in 2 rows; the first: rank 0, out of place, slot 0, element 0: "));
    /* no NCCL to tune beside: said, and the ways its rows ran in a table of their own */
    assert_non_null(strstr(r.out, "\n# p2pscope's all-reduce: not tuned: "));
    assert_non_null(strstr(r.out, "\n#      bytes      type       oop_way        ip_way\n"
                                  "#         64     float      one-shot      one-shot\n"));
    psc__free(&r);
    /* --no-tune: nothing tuned, nothing said of it, its own kernel's way */
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "--no-tune", NULL}, env);
    assert_int_equal(r.rc, 0);
    assert_null(strstr(r.out, "tuned"));
    assert_non_null(strstr(r.out, "\n#         64     float     sum      -1  "));
    assert_int_equal(count_str(r.out, " one-shot"), 2);
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "--json", NULL}, env);
    assert_int_equal(r.rc, 0);
    doc = json_loads(r.out, 0, NULL);
    assert_non_null(doc);
    rows = json_object_get(json_object_get(doc, "coll"), "rows");
    assert_int_equal(json_array_size(rows), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "impl")), "nccl");
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 1), "impl")), "p2pscope");
    assert_null(json_object_get(json_object_get(json_array_get(rows, 0), "out_of_place"), "way")); /* NCCL's row */
    for (int k = 0; k < 2; k++) {
        const char *way = json_string_value(json_object_get(json_object_get(json_array_get(rows, 1), k ? "in_place" :
                                                                            "out_of_place"), "way"));

        assert_non_null(way);
        assert_true(strcmp(way, "one-shot") == 0 || strcmp(way, "nccl") == 0);
    }
    assert_true(json_is_true(json_object_get(json_object_get(doc, "coll"), "own_tuned")));
    assert_true(json_is_real(json_object_get(json_object_get(doc, "coll"), "own_avg_busbw_gbs")));
    json_decref(doc);
    psc__free(&r);
}

/*
 * Every row's time in the table's columns 6 and 10 (out of place, in place), us: the largest into *max_us; the
 * rows counted.
 */
static int table_times(const char *out, double *max_us)
{
    int rows = 0;

    *max_us = 0;
    for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        double t[2];

        if (*p == '#' || *p == '\n')
            continue;
        if (sscanf(p, "%*s %*s %*s %*s %*s %lf %*s %*s %*s %lf", &t[0], &t[1]) != 2)
            fail_msg("a row without its two times: %.*s", (int)strcspn(p, "\n"), p);
        for (int k = 0; k < 2; k++)
            if (t[k] > *max_us)
                *max_us = t[k];
        rows++;
    }
    return rows;
}

/*
 * Pinned to one CPU (as mpirun binds each rank), with a fake NCCL whose
 * non-blocking communicators hand each call to a new thread as NCCL 2.28's
 * do: no operation may cost a scheduler tick (a wait that never yields made
 * every one 4 ms), one GPU or two, one operation per call or four (-m).
 */
static void test_binary_pinned_one_cpu(void **state)
{
    static const char *const env[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, "FAKE_NCCL_MODE=async", NULL};
    const char *const *const runs[] = {
        (const char *const[]){"coll", "-b", "8", "-e", "2K", "-f", "4", "-n", "40", "--impl", "nccl", NULL},
        (const char *const[]){"coll", "-b", "8", "-e", "2K", "-f", "4", "-n", "40", "--impl", "nccl", "--devices",
                              "1", NULL},
        (const char *const[]){"coll", "all_gather", "-b", "64", "-e", "4K", "-f", "4", "-n", "10", "-m", "4",
                              "--impl", "nccl", "-T", "5", NULL},
        (const char *const[]){"coll", "sendrecv", "-b", "8", "-e", "2K", "-f", "4", "-n", "40", "--devices", "0",
                              NULL},
    };
    cpu_set_t was;

    (void)state;
    psc_test_pin_one_cpu(&was); /* the child inherits it */
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        psc__run_t r = psc__run((const char **)runs[i], env);
        double max_us;
        int rows;

        if (r.rc != 0)
            fprintf(stderr, "%s%s", r.out, r.err);
        assert_int_equal(r.rc, 0);
        rows = table_times(r.out, &max_us);
        assert_int_equal(rows, i == 2 ? 4 : 5); /* 8 B .. 2 KiB by 4, or 64 B .. 4 KiB */
        if (max_us >= 500) { /* a tick is 1 to 4 ms; -m 4 shares one among 4 operations */
            fprintf(stderr, "%s", r.out);
            fail_msg("run %zu: an operation took %.0f us on one CPU (a scheduler tick: a wait that does not yield "
                     "to NCCL's thread)", i, max_us);
        }
        psc__free(&r);
    }
    assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
}

static void test_binary_failures(void **state)
{
    static const char *const corrupt[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, "FAKE_NCCL_CORRUPT=1", NULL};
    static const char *const hang[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, "FAKE_NCCL_HANG=1", NULL};
    static const char *const no_nccl[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=/nonexistent/libnccl.so.2", NULL};
    static const char *const slow[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, "NCCL_TESTS_MIN_BW=1e9", NULL};
    static const char *const no_driver[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "--no-tune", NULL}, corrupt);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "\n# Out of bounds values : 2 FAILED\n"));
    assert_non_null(strstr(r.err, "p2pscope coll: wrong elements in 2 rows; the first: rank 0, out of place, slot 0, "
                                  "element 1: "));
    assert_int_equal(psc__lines(r.err), 1);
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", NULL}, slow);
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.out, "\n# Avg bus bandwidth    : "));
    assert_non_null(strstr(r.out, " FAILED\n#\n# Collective test concluded"));
    psc__free(&r);
    psc__expect_error((const char *[]){"coll", "broadcast", "-b", "1K", "-e", "1K", "-T", "0.2", NULL}, hang, 1,
                      "p2pscope coll: broadcast of 1024 B (float, root 0), the warm-up: ncclGroupEnd not done after "
                      "0.2 s on ranks 0 to 1: NCCL communicators aborted");
    /* one GPU: no group, the collective's own call blocks (blocking communicators), the watchdog aborts it */
    psc__expect_error((const char *[]){"coll", "broadcast", "-b", "1K", "-e", "1K", "-T", "0.2", "--devices", "1", NULL},
                      hang, 1, "p2pscope coll: broadcast of 1024 B (float, root 0), the warm-up: ncclBroadcast not "
                      "done after 0.2 s on rank 0: NCCL communicators aborted");
    psc__expect_error((const char *[]){"coll", "-b", "64", "-e", "64", NULL}, no_nccl, 3, "NCCL");
    psc__expect_error((const char *[]){"coll", NULL}, no_driver, 3, "no NVIDIA driver");
    psc__expect_error((const char *[]){"coll", "reduce", "-r", "2", "-b", "64", "-e", "64", NULL}, corrupt, 2,
                      "root 2, but the run has 2 ranks (accepted 0 to 1");
    psc__expect_error((const char *[]){"coll", "-g", "3", NULL}, corrupt, 3, "-g 3 from GPU 0 needs GPUs 0 to 2");
    psc__expect_error((const char *[]){"coll", "-q", NULL}, no_driver, 2, "unknown option '-q' for coll");
}

static void test_binary_json(void **state)
{
    static const char *const env[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, NULL};
    psc__run_t r;
    json_error_t je;
    json_t *doc, *coll;

    (void)state;
    r = psc__run((const char *[]){"coll", "reduce", "-b", "256", "-e", "1K", "-f", "2", "-r", "-1", "--json", NULL},
                 env);
    assert_int_equal(r.rc, 0);
    doc = json_loads(r.out, 0, &je);
    assert_non_null(doc);
    coll = json_object_get(doc, "coll");
    assert_non_null(coll);
    assert_int_equal(json_array_size(json_object_get(coll, "rows")), 3 * 2); /* 3 sizes x 2 roots */
    json_decref(doc);
    psc__free(&r);
}

/*
 * --compute-load: nccl-tests' text as before (a parser sees the same rows), then a table of p2pscope's with a
 * line per row and half, each with its time alone and under the load; in JSON each row's "compute_load".
 * The fake's compute kernels run at once, before the collectives: none ran within the loop ("-", "partly").
 */
static void test_binary_compute_load(void **state)
{
    static const char *const env[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, NULL};
    long long sizes[4];
    const char *tail;
    psc__run_t r;
    json_error_t je;
    json_t *doc, *rows, *h;

    (void)state;
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "256", "-f", "4", "-n", "3", "--compute-load", NULL},
                 env);
    assert_int_equal(r.rc, 0);
    assert_int_equal(parse_as_nccl_tests(r.out, sizes, 4), 2);
    tail = strstr(r.out, "\n# p2pscope coll --compute-load: ");
    assert_non_null(tail);
    /* 2 sizes x (NCCL's row, p2pscope's) x 2 halves */
    assert_int_equal(count_prefix(tail + 1, "#         64     float     sum    -1      nccl  "), 2);
    assert_int_equal(count_prefix(tail + 1, "#        256     float     sum    -1  p2pscope  "), 2);
    assert_int_equal(count_str(tail, "  partly\n"), 8);
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-n", "3", "--impl", "nccl", "--compute-load",
                                  "--json", NULL},
                 env);
    assert_int_equal(r.rc, 0);
    doc = json_loads(r.out, 0, &je);
    assert_non_null(doc);
    assert_true(json_is_true(json_object_get(json_object_get(doc, "coll"), "compute_load")));
    rows = json_object_get(json_object_get(doc, "coll"), "rows");
    assert_int_equal(json_array_size(rows), 1);
    h = json_object_get(json_object_get(json_array_get(rows, 0), "compute_load"), "in_place");
    assert_true(json_real_value(json_object_get(h, "time_us")) > 0);
    assert_true(json_real_value(json_object_get(h, "compute_alone_us")) > 0);
    assert_true(json_is_null(json_object_get(h, "compute_slowdown")));
    assert_true(json_is_false(json_object_get(h, "covered")));
    json_decref(doc);
    psc__free(&r);
    /* without it: no table, and false */
    r = psc__run((const char *[]){"coll", "-b", "64", "-e", "64", "-n", "3", "--impl", "nccl", "--json", NULL}, env);
    assert_int_equal(r.rc, 0);
    doc = json_loads(r.out, 0, &je);
    assert_true(json_is_false(json_object_get(json_object_get(doc, "coll"), "compute_load")));
    assert_null(json_object_get(json_array_get(json_object_get(json_object_get(doc, "coll"), "rows"), 0),
                                "compute_load"));
    json_decref(doc);
    psc__free(&r);
}

/* --explain: the doctor after the table, lines nccl-tests' parsers skip, the links measured here; and in JSON. */
static void test_binary_explain(void **state)
{
    static const char *const p2p_off[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, "NCCL_P2P_DISABLE=1", NULL};
    static const char *const plain[] = {FAKE_ENV, "P2PSCOPE_LIBNCCL=" FAKE_LIBNCCL, "NCCL_P2P_DISABLE=", NULL};
    static const char *const args[] = {"coll", "-b", "64M", "-e", "64M", "-n", "1", "-w", "0", "-c", "0",
                                       "--no-per-op", "--explain", NULL};
    psc__run_t r;
    const char *tail;
    json_t *doc;

    (void)state;
    r = psc__run(args, p2p_off);
    assert_int_equal(r.rc, 0);
    tail = strstr(r.out, "\n# p2pscope coll: the doctor on this run\n#   links: ");
    assert_non_null(tail);
    assert_non_null(strstr(tail, "GB/s (gpu_to_gpu_write_ce, 64 MiB, the slowest of 2 ordered pairs"));
    assert_non_null(strstr(tail, "#   [warning] coll_p2p_disabled: "));
    for (const char *p = tail + 1; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        assert_true(*p == '#' || *p == '\0');
    psc__free(&r);
    r = psc__run(args, plain);
    assert_int_equal(r.rc, 0);
    assert_null(strstr(r.out, "coll_p2p_disabled"));
    assert_non_null(strstr(r.out, "#   [warning] coll_slow_unknown: ")); /* the fake NCCL is slow, for no reason the facts show */
    psc__free(&r);
    r = psc__run((const char *[]){"coll", "-b", "4K", "-e", "4K", "--no-per-op", "--explain", "--json", NULL}, p2p_off);
    assert_int_equal(r.rc, 0);
    doc = json_loads(r.out, 0, NULL);
    assert_non_null(doc);
    assert_true(json_is_array(json_object_get(json_object_get(doc, "explain"), "findings")));
    assert_true(json_real_value(json_object_get(json_object_get(doc, "explain"), "link_bw_gbs")) > 0);
    json_decref(doc);
    psc__free(&r);
}

/* Help names nccl-tests' options and the two ways to run. */
static void test_binary_help(void **state)
{
    psc__run_t r;

    (void)state;
    r = psc__run((const char *[]){"coll", "--help", NULL}, NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "usage: p2pscope coll [COLLECTIVE] [OPTIONS]"));
    assert_non_null(strstr(r.out, "mpirun -np N"));
    assert_non_null(strstr(r.out, "-d, --datatype NAME"));
    psc__free(&r);
#if !P2PSCOPE_HAVE_MPI
    psc__expect_error((const char *[]){"coll", NULL},
                      (const char *const[]){"OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=0", NULL}, 2,
                      "built without MPI (no mpicc was found when it was built), so under Open MPI each of the 2 "
                      "ranks would run alone");
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_defaults_and_values),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_binary_table),
        cmocka_unit_test(test_binary_parsed_as_nccl_tests),
        cmocka_unit_test(test_binary_own_table),
        cmocka_unit_test(test_binary_failures),
        cmocka_unit_test(test_binary_pinned_one_cpu),
        cmocka_unit_test(test_binary_json),
        cmocka_unit_test(test_binary_compute_load),
        cmocka_unit_test(test_binary_explain),
        cmocka_unit_test(test_binary_help),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
