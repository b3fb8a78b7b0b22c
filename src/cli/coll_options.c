/*
 * `p2pscope coll [COLLECTIVE] [OPTIONS]`: nccl-tests' options with
 * nccl-tests' meanings (so its users' command lines carry over: -d is the
 * type here, as there), plus p2pscope's own long options.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

enum { OPT_DEVICES = 256, OPT_IDENTIFY, OPT_JSON, OPT_NO_PER_OP, OPT_SEED, OPT_EXPLAIN, OPT_IMPL, OPT_PER_OP,
       OPT_COMPUTE_LOAD };
enum { OPT_COLL_EXPECT = 400 }; /* --expect, as options.c's */

static const struct option psc__coll_opts[] = {
    {"nthreads", required_argument, NULL, 't'},
    {"ngpus", required_argument, NULL, 'g'},
    {"minbytes", required_argument, NULL, 'b'},
    {"maxbytes", required_argument, NULL, 'e'},
    {"stepbytes", required_argument, NULL, 'i'},
    {"stepfactor", required_argument, NULL, 'f'},
    {"iters", required_argument, NULL, 'n'},
    {"agg_iters", required_argument, NULL, 'm'},
    {"warmup_iters", required_argument, NULL, 'w'},
    {"check", required_argument, NULL, 'c'},
    {"op", required_argument, NULL, 'o'},
    {"datatype", required_argument, NULL, 'd'},
    {"root", required_argument, NULL, 'r'},
    {"blocking", required_argument, NULL, 'z'},
    {"timeout", required_argument, NULL, 'T'},
    {"cudagraph", required_argument, NULL, 'G'},
    {"average", required_argument, NULL, 'a'},
    {"devices", required_argument, NULL, OPT_DEVICES},
    {"json", optional_argument, NULL, OPT_JSON},
    {"identify", no_argument, NULL, OPT_IDENTIFY},
    {"per-op", no_argument, NULL, OPT_PER_OP},
    {"no-per-op", no_argument, NULL, OPT_NO_PER_OP},
    {"seed", required_argument, NULL, OPT_SEED},
    {"explain", no_argument, NULL, OPT_EXPLAIN},
    {"impl", required_argument, NULL, OPT_IMPL},
    {"compute-load", no_argument, NULL, OPT_COMPUTE_LOAD},
    {"expect", required_argument, NULL, OPT_COLL_EXPECT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

#define PSC__COLL_ACCEPTED                                                                                     \
    "accepted -b -e -i -f -n -m -w -c -o -d -r -z -T -G -a -g -t 1, --devices, --json, --per-op, --no-per-op, " \
    "--seed, --explain, --impl, --compute-load, --expect, -h"

void psc_cli_usage_coll(void)
{
    printf("usage: p2pscope coll [COLLECTIVE] [OPTIONS]\n"
           "       mpirun -np N [-N PER_NODE] p2pscope coll [COLLECTIVE] [OPTIONS]\n"
           "\n"
           "NCCL's collectives (libnccl.so.2, loaded at run time) in nccl-tests' table, line for line (13\n"
           "fields per row, one row per size, its summary lines), measured as nccl-tests measures them. Each\n"
           "timed operation writes its own slot of the buffers, and every slot's output is checked after the\n"
           "timed loop, beside -c extra checked runs; #wrong counts the wrong elements. Alone, one process\n"
           "drives every GPU (or -g/--devices); under mpirun each process drives one GPU (or -g) chosen by its\n"
           "rank on its node, on one node or many, and rank 0 prints. p2pscope's own tables follow nccl-tests'\n"
           "last line, every line of them a comment (#) with header words of their own.\n"
           "\n"
           "COLLECTIVE: all_reduce (default), all_gather, reduce_scatter, broadcast, reduce, alltoall,\n"
           "            sendrecv (nccl-tests' program names, all_reduce_perf ..., are accepted too)\n"
           "\n"
           "nccl-tests' options (the same meanings and defaults, but -T's):\n"
           "  -b, --minbytes SIZE       smallest size per rank (default 32M); K/M/G/T are powers of 1024\n"
           "  -e, --maxbytes SIZE       largest size (default 32M)\n"
           "  -i, --stepbytes SIZE      sizes grow by this much (default 1M) ...\n"
           "  -f, --stepfactor N        ... or by this factor\n"
           "  -n, --iters N             timed operations per row (default 20)\n"
           "  -m, --agg_iters N         operations per group call (default 1)\n"
           "  -w, --warmup_iters N      warm-up operations per size (default 1)\n"
           "  -c, --check N             extra checked runs per row (default 1); 0: nothing checked (N/A)\n"
           "  -o, --op NAME             sum, prod, max, min, avg, or all (default sum)\n"
           "  -d, --datatype NAME       int8 uint8 int32 uint32 int64 uint64 half float double bfloat16, or\n"
           "                            all (default float)\n"
           "  -r, --root N              broadcast, reduce: the root rank, -1 every rank (default 0)\n"
           "  -z, --blocking N          1 wait for each operation and meet, 2 wait only (default 0)\n"
           "  -T, --timeout SECONDS     the longest wait for NCCL or the GPUs; then the communicators are\n"
           "                            aborted and the run fails naming the collective and size (default\n"
           "                            300, where nccl-tests has none; 0 none)\n"
           "  -G, --cudagraph N         capture the timed operations in a CUDA graph, replay it N times\n"
           "  -a, --average N           the processes' times: 0 rank 0's, 1 mean (default), 2 min, 3 max\n"
           "  -g, --ngpus N             GPUs per process (default: every GPU alone, one under mpirun);\n"
           "                            NCCL_TESTS_DEVICE names the first\n"
           "  -t, --nthreads 1          one thread per process (the only value accepted)\n"
           "\n"
           "p2pscope's options:\n"
           "      --devices LIST        the GPUs of this process, e.g. 0,1 (instead of -g)\n"
           "      --json[=FILE]         the report as JSON, to FILE or stdout instead of the table\n"
           "      --identify            --json: keep the ranks' host names and the GPUs' UUIDs (left out)\n"
           "      --per-op              each operation's own time too (CUDA events, an extra eager loop per\n"
           "                            row): p50, p99, max in a table of p2pscope's (default off)\n"
           "      --no-per-op           not (the default)\n"
           "      --seed N              the checked data's seed (default 1)\n"
           "      --explain             after the run, the doctor on it: why the bus bandwidth is below what\n"
           "                            bw measures between the same GPUs (measured here), if it can tell\n"
           "      --impl WHO            nccl, p2pscope or all (default): whose rows. p2pscope's own all-reduce\n"
           "                            and reduce-scatter (sum, float/half/bfloat16, 1 to 8 GPUs, one per\n"
           "                            process under mpirun) are timed and checked as NCCL's, after NCCL's\n"
           "                            row of each size; their rows go to a table of their own after\n"
           "                            nccl-tests' (beside NCCL's time), or to nccl-tests' table alone\n"
           "      --compute-load        each row's timed loop again while every GPU computes (a matrix-\n"
           "                            multiply-like kernel on every SM, on a stream of its own): the\n"
           "                            collective's time then, and how much it slowed the compute, in a\n"
           "                            table of p2pscope's\n"
           "      --expect FILE         after the run, its figures against FILE's bounds (EXPECTATION FILES\n"
           "                            in p2pscope(1)); a miss is a line and exit 1\n"
           "\n"
           "Exit codes: 0 every element right, 1 a wrong element (or a failed run), 2 usage error,\n"
           "3 no driver, GPU or NCCL, 4 out of memory.\n");
}

/* nccl-tests' sizes: a number (a fraction too) and K, M, G or T (powers of 1024), a B or iB after it allowed. */
static int psc__size(const char *arg, uint64_t *out)
{
    double v, mult = 1;
    char *end;

    if (!arg || *arg < '0' || *arg > '9')
        return -1;
    errno = 0;
    v = strtod(arg, &end);
    if (errno || !isfinite(v))
        return -1;
    switch (*end) {
    case 'K': case 'k': mult = 1024.0, end++; break;
    case 'M': case 'm': mult = 1048576.0, end++; break;
    case 'G': case 'g': mult = 1073741824.0, end++; break;
    case 'T': case 't': mult = 1099511627776.0, end++; break;
    default: break;
    }
    if (mult > 1 && strcasecmp(end, "iB") == 0)
        end += 2;
    if (strcasecmp(end, "B") == 0)
        end++;
    if (*end || v * mult < 1 || v * mult > 1099511627776.0)
        return -1;
    *out = (uint64_t)(v * mult);
    return 0;
}

static int psc__int(const char *arg, long lo, long hi, int *out)
{
    char *end;
    long v;

    if (!arg || !*arg)
        return -1;
    errno = 0;
    v = strtol(arg, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* A name of the table (type or op), or "all" (-1); the index or -2. */
static int psc__name(const char *arg, const char *(*name)(int), int n)
{
    if (strcmp(arg, "all") == 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(arg, name(i)) == 0)
            return i;
    return -2;
}

static int psc__collective(const char *word, int *coll)
{
    static const struct { const char *alias; int coll; } extra[] = {
        {"allreduce", PSC_COLL_ALL_REDUCE}, {"allgather", PSC_COLL_ALL_GATHER},
        {"reducescatter", PSC_COLL_REDUCE_SCATTER}, {"all_to_all", PSC_COLL_ALL_TO_ALL},
        {"send_recv", PSC_COLL_SEND_RECV},
    };

    for (int c = 0; c < PSC_COLL_N; c++)
        if (strcmp(word, psc_coll_name(c)) == 0 || strcmp(word, psc_coll_perf_name(c)) == 0) {
            *coll = c;
            return 0;
        }
    for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
        if (strcmp(word, extra[i].alias) == 0) {
            *coll = extra[i].coll;
            return 0;
        }
    return -1;
}

#define PSC__BAD(...) (snprintf(err, errlen, __VA_ARGS__), PSC_EXIT_USAGE)

/* nccl-tests' sizes and counts: -b -e -i (the sizes), -f, -n -m -w -c (operations and checks), -g -t (GPUs, threads). */
static int psc__coll_count_option(int c, const char *arg, const char *name, psc_cli_opts_t *o, char *err,
                                  size_t errlen)
{
    psc_coll_opts_t *co = &o->coll;
    int v;

    switch (c) {
    case 'b':
    case 'e':
    case 'i':
        if (psc__size(arg, c == 'b' ? &co->min_bytes : c == 'e' ? &co->max_bytes : &co->step_bytes) != 0)
            return PSC__BAD("bad %s '%s': accepted a size from 1 B to 1T, e.g. 8, 64K, 1.5G", name, arg);
        return 0;
    case 'f':
        if (psc__int(arg, 1, 1024, &v) != 0)
            return PSC__BAD("bad %s '%s': accepted 1 to 1024 (1: add -i instead)", name, arg);
        co->step_factor = (unsigned)v;
        return 0;
    case 'n':
        return psc__int(arg, 1, 1000000, &co->iters) ? PSC__BAD("bad %s '%s': accepted 1 to 1000000", name, arg) : 0;
    case 'm':
        return psc__int(arg, 1, 1024, &co->agg_iters) ? PSC__BAD("bad %s '%s': accepted 1 to 1024", name, arg) : 0;
    case 'w':
        return psc__int(arg, 0, 100000, &co->warmup_iters) ? PSC__BAD("bad %s '%s': accepted 0 to 100000", name, arg)
                                                            : 0;
    case 'c':
        return psc__int(arg, 0, 1000, &co->check) ? PSC__BAD("bad %s '%s': accepted 0 to 1000", name, arg) : 0;
    case 'g':
        return psc__int(arg, 1, PSC_CLI_MAX_DEVS, &o->coll_gpus)
                   ? PSC__BAD("bad %s '%s': accepted 1 to %d GPUs per process", name, arg, PSC_CLI_MAX_DEVS)
                   : 0;
    case 't':
        return psc__int(arg, 1, 1, &v) ? PSC__BAD("bad %s '%s': accepted 1 (one thread drives a process's GPUs; use "
                                                  "-g for more GPUs, mpirun for more processes)", name, arg)
                                       : 0;
    default:
        return PSC_CLI_NOT_MINE;
    }
}

/* nccl-tests' choices of what runs and how: -o -d (op, type), -r (root), -z (blocking), -T, -G (graphs), -a. */
static int psc__coll_kind_option(int c, const char *arg, const char *name, psc_cli_opts_t *o, char *err,
                                 size_t errlen)
{
    psc_coll_opts_t *co = &o->coll;

    switch (c) {
    case 'o':
        if ((co->op = psc__name(arg, psc_redop_name, PSC_OP_N)) < -1)
            return PSC__BAD("bad %s '%s': accepted sum, prod, max, min, avg or all", name, arg);
        return 0;
    case 'd':
        if ((co->dtype = psc__name(arg, psc_dtype_name, PSC_DT_N)) < -1)
            return PSC__BAD("bad %s '%s': accepted int8, uint8, int32, uint32, int64, uint64, half, float, double, "
                            "bfloat16 or all", name, arg);
        return 0;
    case 'r':
        return psc__int(arg, -1, 1 << 20, &co->root) ? PSC__BAD("bad %s '%s': accepted a rank, or -1 for every rank",
                                                                 name, arg)
                                                      : 0;
    case 'z':
        return psc__int(arg, 0, 2, &co->blocking)
                   ? PSC__BAD("bad %s '%s': accepted 0, 1 (wait and meet after each operation) or 2 (wait)", name, arg)
                   : 0;
    case 'T':
        return psc_cli_double(arg, 0, 1e6, &co->timeout_s)
                   ? PSC__BAD("bad %s '%s': accepted seconds from 0 (no limit) to 1e6", name, arg)
                   : 0;
    case 'G':
        return psc__int(arg, 0, 100000, &co->graph_launches) ? PSC__BAD("bad %s '%s': accepted 0 to 100000", name, arg)
                                                              : 0;
    case 'a':
        return psc__int(arg, 0, 3, &co->time_of) ? PSC__BAD("bad %s '%s': accepted 0 (rank 0's), 1 (mean), 2 (min) or "
                                                            "3 (max)", name, arg)
                                                  : 0;
    default:
        return PSC_CLI_NOT_MINE;
    }
}

/* p2pscope's own long options: the GPUs, the outputs, --per-op, --explain, --expect, --impl, --seed. */
static int psc__coll_own_option(int c, const char *arg, const char *name, psc_cli_opts_t *o, char *err,
                                size_t errlen)
{
    psc_coll_opts_t *co = &o->coll;

    switch (c) {
    case OPT_DEVICES: return psc_cli_parse_devices(o, arg, err, errlen);
    case OPT_JSON: return psc_cli_parse_json(o, arg, err, errlen);
    case OPT_NO_PER_OP: co->per_op = 0; return 0;
    case OPT_PER_OP: co->per_op = 1; return 0;
    case OPT_COMPUTE_LOAD: co->compute_load = 1; return 0;
    case OPT_IDENTIFY: o->identify = 1; return 0;
    case OPT_EXPLAIN: o->coll_explain = 1; return 0;
    case OPT_COLL_EXPECT:
        if (strcmp(arg, "auto") == 0)
            return PSC__BAD("--expect auto sets bandwidth bounds (bw, report): accepted --expect FILE with coll");
        o->expect = arg;
        return psc_cli_expect_check_file(arg, err, errlen);
    case OPT_IMPL:
        if (strcmp(arg, "nccl") == 0)
            co->impls = PSC_COLL_IMPL_NCCL;
        else if (strcmp(arg, "p2pscope") == 0)
            co->impls = PSC_COLL_IMPL_P2PSCOPE;
        else if (strcmp(arg, "all") == 0)
            co->impls = PSC_COLL_IMPL_ALL;
        else
            return PSC__BAD("bad %s '%s': accepted nccl, p2pscope or all", name, arg);
        return 0;
    case OPT_SEED: {
        unsigned long s;

        if (psc_cli_uint(arg, 0xffffffffu, &s) != 0)
            return PSC__BAD("bad %s '%s': accepted 0 to 4294967295", name, arg);
        co->seed = (uint32_t)s;
        return 0;
    }
    default:
        return PSC_CLI_NOT_MINE;
    }
}

/* One option from getopt: handed to its group; -h, a missing value and an unknown option here. */
static int psc__coll_option(int c, const char *arg, const char *name, psc_cli_opts_t *o, char *err, size_t errlen)
{
    static const psc_cli_option_group_t groups[] = {
        psc__coll_count_option, psc__coll_kind_option, psc__coll_own_option, psc_cli_help_option,
    };
    int rc = psc_cli_option_groups(groups, sizeof(groups) / sizeof(groups[0]), c, arg, name, o, err, errlen);

    if (rc != PSC_CLI_NOT_MINE)
        return rc;
    switch (c) {
    case ':': return PSC__BAD("%s needs a value (see p2pscope coll --help)", name);
    default: return PSC__BAD("unknown option '%s' for coll: " PSC__COLL_ACCEPTED, name);
    }
}

/* The option as typed, for messages: "--name" for a long one (idx), "-c" for a short one, or the word getopt skipped. */
static void psc__typed(int c, int idx, char **argv, char *name, size_t len)
{
    if (idx >= 0)
        snprintf(name, len, "--%s", psc__coll_opts[idx].name);
    else if ((c == '?' || c == ':') && optopt > 0 && optopt < 256)
        snprintf(name, len, "-%c", optopt);
    else if (c > 0 && c < 256 && c != '?' && c != ':')
        snprintf(name, len, "-%c", c);
    else
        snprintf(name, len, "%.*s", (int)strcspn(argv[optind - 1], "="), argv[optind - 1]);
}

int psc_cli_parse_coll(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    int first = 2, c;
    const char *dev;

    o->cmd = PSC_CMD_COLL;
    psc_coll_opts_default(&o->coll);
    o->coll.per_op = 0; /* nccl-tests times no operation alone unless asked (its -I): --per-op */
    o->coll_first_gpu = -1;
    if ((dev = getenv("NCCL_TESTS_DEVICE")) && *dev &&
        psc__int(dev, 0, PSC_CLI_MAX_DEVS - 1, &o->coll_first_gpu) != 0)
        return PSC__BAD("NCCL_TESTS_DEVICE='%s': accepted a GPU index from 0 to %d", dev, PSC_CLI_MAX_DEVS - 1);
    if (argc > 2 && argv[2][0] != '-') {
        if (psc__collective(argv[2], &o->coll.coll) != 0)
            return PSC__BAD("unknown collective '%s': accepted all_reduce, all_gather, reduce_scatter, broadcast, "
                            "reduce, alltoall, sendrecv", argv[2]);
        first = 3;
    }
    optind = 0;
    opterr = 0;
    argv[first - 1] = argv[0];
    for (;;) {
        char name[64];
        int rc, idx = -1;

        c = getopt_long(argc - first + 1, argv + first - 1, ":t:g:b:e:i:f:n:m:w:c:o:d:r:z:T:G:a:h", psc__coll_opts,
                        &idx);
        if (c == -1)
            break;
        psc__typed(c, idx, argv + first - 1, name, sizeof(name));
        if ((rc = psc__coll_option(c, optarg, name, o, err, errlen)) != 0)
            return rc;
    }
    if (optind < argc - first + 1)
        return PSC__BAD("unexpected argument '%s' (see p2pscope coll --help)", argv[first - 1 + optind]);
    if (o->coll.min_bytes > o->coll.max_bytes)
        return PSC__BAD("invalid sizes: -b %llu > -e %llu (accepted min <= max)",
                        (unsigned long long)o->coll.min_bytes, (unsigned long long)o->coll.max_bytes);
    if (o->coll.blocking && o->coll.graph_launches)
        return PSC__BAD("-z and -G exclude each other: a graph replays its operations without the host");
    if (o->coll_gpus && o->ndev)
        return PSC__BAD("-g and --devices exclude each other: accepted one of them");
    /* what the command line alone shows; the ranks only the run knows (psc_coll_run refuses those) */
    if (o->coll.impls == PSC_COLL_IMPL_P2PSCOPE &&
        ((o->coll.coll != PSC_COLL_ALL_REDUCE && o->coll.coll != PSC_COLL_REDUCE_SCATTER) ||
         (o->coll.op != -1 && o->coll.op != PSC_OP_SUM) ||
         (o->coll.dtype != -1 && o->coll.dtype != PSC_DT_FLOAT32 && o->coll.dtype != PSC_DT_FLOAT16 &&
          o->coll.dtype != PSC_DT_BFLOAT16)))
        return PSC__BAD("--impl p2pscope: p2pscope's collectives do not do %s -o %s -d %s: accepted all_reduce or "
                        "reduce_scatter with -o sum and -d float, half, bfloat16 or all (or --impl nccl|all)",
                        psc_coll_name(o->coll.coll),
                        o->coll.op == -1 ? "all" : psc_redop_name(o->coll.op),
                        o->coll.dtype == -1 ? "all" : psc_dtype_name(o->coll.dtype));
    return 0;
}
