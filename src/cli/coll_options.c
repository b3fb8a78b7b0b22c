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
       OPT_COMPUTE_LOAD, OPT_NO_TUNE };
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
    {"run_cycles", required_argument, NULL, 'N'},
    {"parallel_init", required_argument, NULL, 'p'},
    {"stream_null", required_argument, NULL, 'y'},
    {"report_cputime", required_argument, NULL, 'C'},
    {"report_timestamps", required_argument, NULL, 'S'},
    {"output_file", required_argument, NULL, 'J'},
    {"local_register", required_argument, NULL, 'R'},
    {"cta_policy", required_argument, NULL, 'x'},
    {"device_implementation", required_argument, NULL, 'D'},
    {"device_cta_count", required_argument, NULL, 'V'},
    {"memory", required_argument, NULL, 'M'},
    {"unalign", required_argument, NULL, 'u'},
    {"per_iter_timing", required_argument, NULL, 'I'},
    {"per_iter_skip", required_argument, NULL, 'K'},
    {"devices", required_argument, NULL, OPT_DEVICES},
    {"json", optional_argument, NULL, OPT_JSON},
    {"identify", no_argument, NULL, OPT_IDENTIFY},
    {"per-op", no_argument, NULL, OPT_PER_OP},
    {"no-per-op", no_argument, NULL, OPT_NO_PER_OP},
    {"seed", required_argument, NULL, OPT_SEED},
    {"explain", no_argument, NULL, OPT_EXPLAIN},
    {"impl", required_argument, NULL, OPT_IMPL},
    {"compute-load", no_argument, NULL, OPT_COMPUTE_LOAD},
    {"no-tune", no_argument, NULL, OPT_NO_TUNE},
    {"expect", required_argument, NULL, OPT_COLL_EXPECT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

#define PSC__COLL_ACCEPTED                                                                                     \
    "accepted -b -e -i -f -n -m -w -N -p -c -o -d -r -z -y -T -G -C -S -J -a -R -x -D -V -M -u -I -K -g -t 1, "  \
    "--devices, --json, --per-op, --no-per-op, --seed, --explain, --impl, --compute-load, --no-tune, --expect, -h"

/* nccl-tests' options beyond the common ones, in its order. */
static const char psc__usage_more[] =
           "  -N, --run_cycles N        the sizes' rows N times over, in one table (default 1; 0: until stopped,\n"
           "                            the rows as they come and no footer, as nccl-tests)\n"
           "  -p, --parallel_init 0|1   each thread makes its communicators (one thread here: the same calls; the\n"
           "                            header says so)\n"
           "  -y, --stream_null 0|1     the operations on each GPU's default (legacy) stream\n"
           "  -C, --report_cputime 0|1  the time columns are the host's time to issue the operations (cputime)\n"
           "  -S, --report_timestamps 0|1  a time stamp after each row\n"
           "  -J, --output_file FILE    nccl-tests' own JSON (FILE ends in .json), beside the table\n"
           "  -R, --local_register 0|1|2  1 register the buffers with NCCL (ncclCommRegister, NCCL 2.19), 2 as\n"
           "                            symmetric windows (ncclCommWindowRegister, NCCL 2.27) (default 0)\n"
           "  -x, --cta_policy 0|1|2    NCCL's CTA policy (NCCL 2.27; 2 NCCL 2.28) (default NCCL's)\n"
           "  -D, --device_implementation N  0 NCCL's collectives (default); nccl-tests' device-API kernels are\n"
           "                            not in p2pscope: N > 0 is refused (NCCL 2.28 named where it is older)\n"
           "  -V, --device_cta_count N  CTAs of a device implementation, 1 to 128 (needs NCCL 2.28)\n"
           "  -M, --memory 0|1          the GPU memory line after the summary\n"
           "  -u, --unalign N           the buffers begin N elements past their allocation (default 0)\n"
           "  -I, --per_iter_timing 0|1 each timed iteration between CUDA events: min, max, p99, cv% columns\n"
           "  -K, --per_iter_skip N     -I's figures leave out the first N iterations (default 0)\n";

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
           "  -z, --blocking N          1 wait for each operation and meet, 2 wait only, 3 wait and meet after each\n"
           "                            iteration, its time without the meeting (default 0)\n"
           "  -T, --timeout SECONDS     the longest wait for NCCL or the GPUs; then the communicators are\n"
           "                            aborted and the run fails naming the collective and size (default\n"
           "                            300, where nccl-tests has none; 0 none)\n"
           "  -G, --cudagraph N         capture the timed operations in a CUDA graph, replay it N times\n"
           "  -a, --average N           the processes' times: 0 rank 0's, 1 mean (default), 2 min, 3 max\n"
           "  -g, --ngpus N             GPUs per process (default: every GPU alone, one under mpirun);\n"
           "                            NCCL_TESTS_DEVICE names the first\n"
           "  -t, --nthreads 1          one thread per process (the only value accepted)\n"
           "%s"
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
           "      --no-tune             p2pscope's all-reduce by its own kernels and copy engines only; by\n"
           "                            default its group is first tuned beside NCCL (psc_allreduce_tune)\n"
           "                            and each size goes the way that timed faster, its table saying\n"
           "                            which way each row ran (one-shot, two-shot, copy-engines, nccl)\n"
           "      --expect FILE         after the run, its figures against FILE's bounds (EXPECTATION FILES\n"
           "                            in p2pscope(1)); a miss is a line and exit 1\n"
           "\n"
           "Exit codes: 0 every element right, 1 a wrong element (or a failed run), 2 usage error,\n"
           "3 no driver, GPU or NCCL, 4 out of memory.\n", psc__usage_more);
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
        return psc__int(arg, 0, 3, &co->blocking)
                   ? PSC__BAD("bad %s '%s': accepted 0, 1 (wait and meet after each operation), 2 (wait) or 3 (wait "
                              "and meet after each iteration)", name, arg)
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

/* A 0|1 switch of nccl-tests'. */
static int psc__flag(const char *arg, const char *name, int *out, char *err, size_t errlen)
{
    return psc__int(arg, 0, 1, out) ? PSC__BAD("bad %s '%s': accepted 0 or 1", name, arg) : 0;
}

/* -J FILE: nccl-tests writes JSON only to a name ending in .json (nothing otherwise); refused here, as unwritable. */
static int psc__json_file(const char *arg, const char *name, psc_cli_opts_t *o, char *err, size_t errlen)
{
    const char *dot = strrchr(arg, '.'), *slash = strrchr(arg, '/');

    if (!dot || (slash && slash > dot) || strcasecmp(dot, ".json") != 0)
        return PSC__BAD("bad %s '%s': accepted a file name ending in .json (nccl-tests writes nothing to another)", name,
                        arg);
    o->coll_json_nccl = arg; /* its path checked as --json's, before the run (main.c) */
    return 0;
}

/* nccl-tests' other options: -N -p -y -C -S -J -R -x -D -V -M -u -I -K. */
static int psc__coll_more_option(int c, const char *arg, const char *name, psc_cli_opts_t *o, char *err,
                                 size_t errlen)
{
    psc_coll_opts_t *co = &o->coll;

    switch (c) {
    case 'N':
        if (psc__int(arg, 0, 1000, &co->run_cycles) != 0)
            return PSC__BAD("bad %s '%s': accepted 1 to 1000 cycles, or 0 for cycles until stopped", name, arg);
        o->coll_forever = co->run_cycles == 0;
        co->run_cycles += o->coll_forever; /* -N 0: one cycle a run, run after run */
        return 0;
    case 'p': return psc__flag(arg, name, &co->parallel_init, err, errlen);
    case 'y': return psc__flag(arg, name, &co->stream_null, err, errlen);
    case 'C': return psc__flag(arg, name, &o->coll_cputime, err, errlen);
    case 'S': return psc__flag(arg, name, &o->coll_timestamps, err, errlen);
    case 'M': return psc__flag(arg, name, &o->coll_memory, err, errlen);
    case 'I': return psc__flag(arg, name, &co->per_iter, err, errlen);
    case 'J': return psc__json_file(arg, name, o, err, errlen);
    case 'R':
        return psc__int(arg, 0, 2, &co->register_mode)
                   ? PSC__BAD("bad %s '%s': accepted 0, 1 (local registration) or 2 (symmetric windows)", name, arg)
                   : 0;
    case 'x':
        return psc__int(arg, 0, 2, &co->cta_policy)
                   ? PSC__BAD("bad %s '%s': accepted 0 (default), 1 (efficiency) or 2 (zero)", name, arg)
                   : 0;
    case 'D':
        return psc__int(arg, 0, 1 << 20, &co->device_impl) ? PSC__BAD("bad %s '%s': accepted 0 or more", name, arg)
                                                              : 0;
    case 'V':
        return psc__int(arg, 1, 128, &co->device_ctas) ? PSC__BAD("bad %s '%s': accepted 1 to 128", name, arg) : 0;
    case 'u':
        return psc__int(arg, 0, 1024, &co->unalign) ? PSC__BAD("bad %s '%s': accepted 0 to 1024 elements", name, arg)
                                                     : 0;
    case 'K':
        return psc__int(arg, 0, 1000000, &co->per_iter_skip) ? PSC__BAD("bad %s '%s': accepted 0 or more", name, arg)
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
    case OPT_NO_TUNE: co->tune_own = 0; return 0;
    case OPT_IDENTIFY: o->identify = 1; return 0;
    case OPT_EXPLAIN: o->coll_explain = 1; return 0;
    case OPT_COLL_EXPECT:
        if (strcmp(arg, "auto") == 0)
            return PSC__BAD("--expect auto sets bandwidth bounds (bw, report, check): accepted --expect FILE with coll");
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
        psc__coll_count_option, psc__coll_kind_option, psc__coll_more_option, psc__coll_own_option,
        psc_cli_help_option,
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

/* nccl-tests' checks of its other options together (it disables what it cannot do; refused here, one line each). */
static int psc__coll_combos(psc_cli_opts_t *o, char *err, size_t errlen)
{
    const psc_coll_opts_t *co = &o->coll;

    if (co->graph_launches && (co->per_iter || co->stream_null))
        return PSC__BAD("-G excludes %s: accepted one of them", co->per_iter ? "-I (per-iteration timing is "
                        "incompatible with CUDA graph mode)" : "-y (a graph is captured from a stream of the run's own)");
    if (co->per_iter_skip && !co->per_iter)
        return PSC__BAD("-K %d: per-iteration skip (-K) requires per-iteration timing (-I 1)", co->per_iter_skip);
    if (co->per_iter_skip >= co->iters)
        return PSC__BAD("-K %d: accepted 0 to %d (-n %d iterations, one at least left)", co->per_iter_skip,
                        co->iters - 1, co->iters);
    if (co->device_impl > 0 && co->register_mode != 2)
        return PSC__BAD("-D %d: device implementation (-D > 0) requires enabling symmetric memory registration (-R 2)",
                        co->device_impl);
    if (co->impls == PSC_COLL_IMPL_P2PSCOPE && (co->unalign || co->stream_null))
        return PSC__BAD("--impl p2pscope excludes -u and -y: p2pscope's own collectives take 16-byte aligned buffers "
                        "on streams of their own (accepted --impl nccl|all)");
    if (o->coll_forever && (o->json || o->coll_json_nccl || o->expect || o->coll_explain))
        return PSC__BAD("-N 0 runs until stopped: it excludes --json, -J, --expect and --explain, which need its end");
    return 0;
}

int psc_cli_parse_coll(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    int first = 2, c, bad;
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
    o->coll_argc = argc - first + 1; /* -J's "args": the program, then the options, as nccl-tests' */
    o->coll_argv = argv + first - 1;
    for (;;) {
        char name[64];
        int rc, idx = -1;

        c = getopt_long(argc - first + 1, argv + first - 1, ":t:g:b:e:i:f:n:m:w:N:p:I:K:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:",
                        psc__coll_opts,
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
    if ((bad = psc__coll_combos(o, err, errlen)) != 0)
        return bad;
    if (o->coll_gpus && o->ndev)
        return PSC__BAD("-g and --devices exclude each other: accepted one of them");
    /* what the command line alone shows; the ranks only the run knows (psc_coll_run refuses those) */
    if (o->coll.impls == PSC_COLL_IMPL_P2PSCOPE &&
        ((o->coll.coll != PSC_COLL_ALL_REDUCE && o->coll.coll != PSC_COLL_REDUCE_SCATTER &&
          o->coll.coll != PSC_COLL_ALL_GATHER) ||
         (o->coll.op != -1 && o->coll.op != PSC_OP_SUM && o->coll.coll != PSC_COLL_ALL_GATHER) ||
         (o->coll.dtype != -1 && o->coll.dtype != PSC_DT_FLOAT32 && o->coll.dtype != PSC_DT_FLOAT16 &&
          o->coll.dtype != PSC_DT_BFLOAT16)))
        return PSC__BAD("--impl p2pscope: p2pscope's collectives do not do %s -o %s -d %s: accepted all_reduce or "
                        "reduce_scatter with -o sum, or all_gather, with -d float, half, bfloat16 or all (or --impl "
                        "nccl|all)",
                        psc_coll_name(o->coll.coll),
                        o->coll.op == -1 ? "all" : psc_redop_name(o->coll.op),
                        o->coll.dtype == -1 ? "all" : psc_dtype_name(o->coll.dtype));
    return 0;
}
