/*
 * Option structs that grow without breaking the ABI: each begins with
 * struct_size, which the caller's psc_*_opts_default() macro sets to the size
 * the caller was compiled with. The library reads that many bytes over its
 * own defaults, so a caller built against an older (shorter) struct gets the
 * defaults for the fields it does not know; a longer one (a newer header than
 * this library) or an uninitialised one is refused. The defaults live here
 * too, below the runs that take the options (xfer/, lat/, verify/).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "opts.h"

#define PSC__COPY_MAX_BYTES (1ull << 40) /* 1 TiB, as psc_size_parse */

/* Each struct's defaults, the fields that are not zero (psc__defaults clears the rest and sets struct_size). */
static void psc__measure_opts_fill(void *p)
{
    psc_measure_opts_t *o = p;

    o->size = 0;        /* each test's own */
    o->iterations = 0;  /* enough copies for about 256 MiB a sample */
    o->warmup = 1;
    o->samples = 3;
    o->max_samples = 16;
    o->stable_pct = 0.5;
    o->gate_timeout_ms = 5000.0;
    o->seed = 0x70327073636f7065ull; /* "p2pscope" */
    o->host_node = -1;
    o->verify = 1;
}

static void psc__lat_opts_fill(void *p)
{
    psc_lat_opts_t *o = p;

    o->samples = 64;
    o->hops = 1024;
    o->copies = 100;
    o->timeout_ms = 2000;
}

static void psc__verify_opts_fill(void *p)
{
    psc_verify_opts_t *o = p;

    o->max_size = (256ull << 20) + 7; /* verify/integrity.c's largest size, included */
    o->pattern_mask = (1u << PSC_PATTERN_KINDS) - 1;
    o->unaligned = 1;
    o->seed = 0x7665726966790000ull; /* "verify" */
}

/* psc_copy_calibrate's and psc_copy_bench's sweep: the same but for the samples. */
static void psc__copy_cal_opts_fill(void *p)
{
    psc_copy_cal_opts_t *o = p;

    o->min_size = 1;
    o->max_size = 1ull << 30;
    o->factor = 2;
    o->samples = 3;
    o->host = 1;
}

static void psc__copy_bench_opts_fill(void *p)
{
    psc_copy_bench_opts_t *o = p;

    o->min_size = 1;
    o->max_size = 1ull << 30;
    o->factor = 2;
    o->samples = 9;
    o->host = 1;
}

static void psc__ipc_opts_fill(void *p);

static void psc__coll_opts_fill(void *p)
{
    psc_coll_opts_t *o = p;

    o->coll = PSC_COLL_ALL_REDUCE;
    o->dtype = PSC_DT_FLOAT32;
    o->op = PSC_OP_SUM;
    o->root = 0;
    o->min_bytes = o->max_bytes = 32ull << 20; /* nccl-tests' defaults */
    o->step_factor = 1;
    o->step_bytes = 1ull << 20;
    o->warmup_iters = 1;
    o->iters = 20;
    o->agg_iters = 1;
    o->check = 1;
    o->time_of = PSC_COLL_TIME_MEAN;
    o->timeout_s = 300;
    o->per_op = 1;
    o->seed = 1;
    o->impls = PSC_COLL_IMPL_ALL;
    o->run_cycles = 1;
    o->cta_policy = -1;
    o->tune_own = 1;
}

/* The end of each struct's last field in the first release (0.1): the smallest struct_size accepted. */
#define PSC__END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
#define PSC__MEASURE_V0 PSC__END(psc_measure_opts_t, reserved0)
#define PSC__LAT_V0 PSC__END(psc_lat_opts_t, timeout_ms)
#define PSC__VERIFY_V0 PSC__END(psc_verify_opts_t, load)
/* In the release that brought them (0.2). */
#define PSC__COPY_CAL_V0 PSC__END(psc_copy_cal_opts_t, reserved0)
#define PSC__COPY_BENCH_V0 PSC__END(psc_copy_bench_opts_t, calibration)
#define PSC__IPC_V0 PSC__END(psc_ipc_opts_t, worker_path)
#define PSC__COLL_V0 PSC__END(psc_coll_opts_t, procs)
/* In the release that brought them (0.2: the suites' positional arguments). */
#define PSC__BW_SUITE_V0 PSC__END(psc_bw_suite_opts_t, user)
#define PSC__VERIFY_STRESS_V0 PSC__END(psc_verify_stress_opts_t, user)
#define PSC__VERIFY_SUITE_V0 PSC__END(psc_verify_suite_opts_t, user)
#define PSC__LAT_SUITE_V0 PSC__END(psc_lat_suite_opts_t, user)
#define PSC__BW_RUN_TEST_V0 PSC__END(psc_bw_run_test_opts_t, user)
#define PSC__LAT_RUN_TEST_V0 PSC__END(psc_lat_run_test_opts_t, user)

/* One kind of option struct: its name in messages, its size here and in its first release, its defaults. */
typedef struct {
    const char *what;
    size_t size;
    size_t v0;
    void (*fill)(void *o);
} psc__opts_kind_t;

static const psc__opts_kind_t psc__measure_kind = {"measure", sizeof(psc_measure_opts_t), PSC__MEASURE_V0,
                                                   psc__measure_opts_fill};
static const psc__opts_kind_t psc__lat_kind = {"lat", sizeof(psc_lat_opts_t), PSC__LAT_V0, psc__lat_opts_fill};
static const psc__opts_kind_t psc__verify_kind = {"verify", sizeof(psc_verify_opts_t), PSC__VERIFY_V0,
                                                  psc__verify_opts_fill};
static const psc__opts_kind_t psc__copy_cal_kind = {"copy_cal", sizeof(psc_copy_cal_opts_t), PSC__COPY_CAL_V0,
                                                    psc__copy_cal_opts_fill};
static const psc__opts_kind_t psc__copy_bench_kind = {"copy_bench", sizeof(psc_copy_bench_opts_t),
                                                      PSC__COPY_BENCH_V0, psc__copy_bench_opts_fill};
static const psc__opts_kind_t psc__ipc_kind = {"ipc", sizeof(psc_ipc_opts_t), PSC__IPC_V0, psc__ipc_opts_fill};
static const psc__opts_kind_t psc__coll_kind = {"coll", sizeof(psc_coll_opts_t), PSC__COLL_V0, psc__coll_opts_fill};

/* Room for the largest of them. */
typedef union {
    psc_measure_opts_t measure;
    psc_lat_opts_t lat;
    psc_verify_opts_t verify;
    psc_copy_cal_opts_t copy_cal;
    psc_copy_bench_opts_t copy_bench;
    psc_ipc_opts_t ipc;
    psc_coll_opts_t coll;
    psc_bw_suite_opts_t bw_suite;
    psc_verify_stress_opts_t verify_stress;
    psc_verify_suite_opts_t verify_suite;
    psc_lat_suite_opts_t lat_suite;
    psc_bw_run_test_opts_t bw_run_test;
    psc_lat_run_test_opts_t lat_run_test;
} psc__any_opts_t;

/* The defaults in full, every field, struct_size the library's own. */
static void psc__defaults(const psc__opts_kind_t *k, void *out)
{
    memset(out, 0, k->size);
    memcpy(out, &k->size, sizeof(k->size));
    k->fill(out);
}

static void psc__ipc_opts_fill(void *p)
{
    psc_ipc_opts_t *o = p;

    psc__defaults(&psc__measure_kind, &o->measure);
    o->methods = 0;     /* legacy, VMM fd and fabric */
    o->bw = 0;          /* all four copies */
    o->round_trips = 10000;
    o->timeout_ms = 120000;
}

/* The caller's struct_size bytes of in over the defaults, into out (the library's full size). */
static psc_status_t psc__adopt(psc_context_t *ctx, const psc__opts_kind_t *k, const void *in, void *out,
                               char *errbuf, size_t errlen)
{
    char why[200];
    size_t size = 0;

    psc__defaults(k, out);
    if (in)
        memcpy(&size, in, sizeof(size));
    if (in && size >= k->v0 && size <= k->size) {
        memcpy(out, in, size);
        memcpy(out, &k->size, sizeof(k->size)); /* struct_size: the whole struct is now set */
        return PSC_OK;
    }
    if (!in)
        snprintf(why, sizeof(why), "no %s options given", k->what);
    else
        snprintf(why, sizeof(why), "%s options not set up by psc_%s_opts_default (struct_size %zu; accepted %zu to %zu)",
                 k->what, k->what, size, k->v0, k->size);
    if (ctx)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s", why);
    if (errbuf && errlen)
        snprintf(errbuf, errlen, "%s", why);
    return PSC_ERR_INVALID;
}

/*
 * The defaults in full, written as far as the caller's struct reaches; struct_size keeps the caller's own
 * size, so a struct from a newer header than this library is refused when used, not half read.
 */
static void psc__init(const psc__opts_kind_t *k, void *o, size_t struct_size)
{
    psc__any_opts_t full;

    if (!o || struct_size < sizeof(size_t))
        return;
    psc__defaults(k, &full);
    memcpy(&full, &struct_size, sizeof(struct_size));
    memcpy(o, &full, struct_size < k->size ? struct_size : k->size);
}

void psc_measure_opts_init(psc_measure_opts_t *o, size_t struct_size)
{
    psc__init(&psc__measure_kind, o, struct_size);
}

void psc_lat_opts_init(psc_lat_opts_t *o, size_t struct_size)
{
    psc__init(&psc__lat_kind, o, struct_size);
}

void psc_verify_opts_init(psc_verify_opts_t *o, size_t struct_size)
{
    psc__init(&psc__verify_kind, o, struct_size);
}

void psc_copy_cal_opts_init(psc_copy_cal_opts_t *o, size_t struct_size)
{
    psc__init(&psc__copy_cal_kind, o, struct_size);
}

void psc_copy_bench_opts_init(psc_copy_bench_opts_t *o, size_t struct_size)
{
    psc__init(&psc__copy_bench_kind, o, struct_size);
}

void psc_ipc_opts_init(psc_ipc_opts_t *o, size_t struct_size)
{
    psc__init(&psc__ipc_kind, o, struct_size);
}

void psc_coll_opts_init(psc_coll_opts_t *o, size_t struct_size)
{
    psc__init(&psc__coll_kind, o, struct_size);
}

psc_status_t psc__ipc_opts_adopt(psc_context_t *ctx, const psc_ipc_opts_t *in, psc_ipc_opts_t *out)
{
    return psc__adopt(ctx, &psc__ipc_kind, in, out, NULL, 0);
}

psc_status_t psc__measure_opts_adopt(psc_context_t *ctx, const psc_measure_opts_t *in, psc_measure_opts_t *out,
                                     char *errbuf, size_t errlen)
{
    return psc__adopt(ctx, &psc__measure_kind, in, out, errbuf, errlen);
}

psc_status_t psc__lat_opts_adopt(psc_context_t *ctx, const psc_lat_opts_t *in, psc_lat_opts_t *out)
{
    return psc__adopt(ctx, &psc__lat_kind, in, out, NULL, 0);
}

psc_status_t psc__verify_opts_adopt(psc_context_t *ctx, const psc_verify_opts_t *in, psc_verify_opts_t *out)
{
    return psc__adopt(ctx, &psc__verify_kind, in, out, NULL, 0);
}

psc_status_t psc__coll_opts_adopt(psc_context_t *ctx, const psc_coll_opts_t *in, psc_coll_opts_t *out)
{
    return psc__adopt(ctx, &psc__coll_kind, in, out, NULL, 0);
}

/*
 * The sweep and GPUs of psc_copy_calibrate and psc_copy_bench, which share
 * them: one line naming the field and what is accepted.
 */
static psc_status_t psc__copy_sweep_check(psc_context_t *ctx, const char *what, const int *devices, int ndev,
                                          uint64_t min_size, uint64_t max_size, unsigned factor, unsigned samples,
                                          int host, int reserved0)
{
    int d[PSC_MAX_GPUS];

    if (min_size < 1 || min_size > max_size)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s options: min_size %llu: accepted 1 to max_size (%llu)", what,
                         (unsigned long long)min_size, (unsigned long long)max_size);
    if (max_size > PSC__COPY_MAX_BYTES)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s options: max_size %llu: accepted min_size to 1 TiB (%llu)", what,
                         (unsigned long long)max_size, (unsigned long long)PSC__COPY_MAX_BYTES);
    if (factor < 2 || factor > 16)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s options: factor %u: accepted 2 to 16", what, factor);
    if (samples < 1 || samples > 1000)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s options: samples %u: accepted 1 to 1000", what, samples);
    if (host != 0 && host != 1)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s options: host %d: accepted 0 or 1", what, host);
    if (reserved0 != 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s options: reserved0 %d: accepted 0", what, reserved0);
    if (ndev < 0 || (ndev > 0 && !devices))
        return psc__fail(ctx, PSC_ERR_INVALID, "%s options: devices %s with ndev %d: accepted ndev 0 (every GPU) or "
                         "a list of ndev GPUs", what, devices ? "given" : "NULL", ndev);
    if (ctx && psc__resolve_devices(ctx, devices, ndev, d, PSC_MAX_GPUS) < 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s options: devices: a GPU out of range or named twice: accepted "
                         "distinct GPUs 0 to %d", what, ctx->ndev - 1);
    return PSC_OK;
}

psc_status_t psc__copy_cal_opts_adopt(psc_context_t *ctx, const psc_copy_cal_opts_t *in, psc_copy_cal_opts_t *out)
{
    psc_copy_cal_opts_t o;
    psc_status_t st;

    st = psc__adopt(ctx, &psc__copy_cal_kind, in, &o, NULL, 0);
    if (st == PSC_OK)
        st = psc__copy_sweep_check(ctx, "copy_cal", o.devices, o.ndev, o.min_size, o.max_size, o.factor, o.samples,
                                   o.host, o.reserved0);
    if (st == PSC_OK)
        *out = o;
    return st;
}

psc_status_t psc__copy_bench_opts_adopt(psc_context_t *ctx, const psc_copy_bench_opts_t *in,
                                        psc_copy_bench_opts_t *out)
{
    psc_copy_bench_opts_t o;
    psc_status_t st;

    st = psc__adopt(ctx, &psc__copy_bench_kind, in, &o, NULL, 0);
    if (st == PSC_OK)
        st = psc__copy_sweep_check(ctx, "copy_bench", o.devices, o.ndev, o.min_size, o.max_size, o.factor, o.samples,
                                   o.host, o.reserved0);
    if (st == PSC_OK && o.calibration && !*o.calibration)
        st = psc__fail(ctx, PSC_ERR_INVALID, "copy_bench options: calibration \"\": accepted a file path, or NULL "
                       "for the built-in defaults");
    if (st == PSC_OK)
        *out = o;
    return st;
}

/* The suites' and whole tests' options: every default zero but struct_size (every test, every GPU, one size, the
 * run's own options at their defaults, no progress). */
static void psc__zero_fill(void *o)
{
    (void)o;
}

static const psc__opts_kind_t psc__bw_suite_kind = {"bw_suite", sizeof(psc_bw_suite_opts_t), PSC__BW_SUITE_V0,
                                                    psc__zero_fill};
static const psc__opts_kind_t psc__verify_stress_kind = {"verify_stress", sizeof(psc_verify_stress_opts_t),
                                                         PSC__VERIFY_STRESS_V0, psc__zero_fill};
static const psc__opts_kind_t psc__verify_suite_kind = {"verify_suite", sizeof(psc_verify_suite_opts_t),
                                                        PSC__VERIFY_SUITE_V0, psc__zero_fill};
static const psc__opts_kind_t psc__lat_suite_kind = {"lat_suite", sizeof(psc_lat_suite_opts_t), PSC__LAT_SUITE_V0,
                                                     psc__zero_fill};
static const psc__opts_kind_t psc__bw_run_test_kind = {"bw_run_test", sizeof(psc_bw_run_test_opts_t),
                                                       PSC__BW_RUN_TEST_V0, psc__zero_fill};
static const psc__opts_kind_t psc__lat_run_test_kind = {"lat_run_test", sizeof(psc_lat_run_test_opts_t),
                                                        PSC__LAT_RUN_TEST_V0, psc__zero_fill};

#define PSC__NO_RESERVED ((size_t)-1)

/* Adopted as the others are; then the int at reserved_at (PSC__NO_RESERVED: none) must be 0. */
static psc_status_t psc__zero_adopt(psc_context_t *ctx, const psc__opts_kind_t *k, const void *in, size_t reserved_at,
                                    void *out)
{
    int reserved0 = 0;
    psc_status_t st;

    if ((st = psc__adopt(ctx, k, in, out, NULL, 0)) != PSC_OK)
        return st;
    if (reserved_at != PSC__NO_RESERVED)
        memcpy(&reserved0, (const char *)out + reserved_at, sizeof(reserved0));
    if (reserved0 != 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s options: reserved0 %d: accepted 0", k->what, reserved0);
    return PSC_OK;
}

void psc_bw_suite_opts_init(psc_bw_suite_opts_t *o, size_t struct_size)
{
    psc__init(&psc__bw_suite_kind, o, struct_size);
}

void psc_verify_stress_opts_init(psc_verify_stress_opts_t *o, size_t struct_size)
{
    psc__init(&psc__verify_stress_kind, o, struct_size);
}

void psc_verify_suite_opts_init(psc_verify_suite_opts_t *o, size_t struct_size)
{
    psc__init(&psc__verify_suite_kind, o, struct_size);
}

void psc_lat_suite_opts_init(psc_lat_suite_opts_t *o, size_t struct_size)
{
    psc__init(&psc__lat_suite_kind, o, struct_size);
}

void psc_bw_run_test_opts_init(psc_bw_run_test_opts_t *o, size_t struct_size)
{
    psc__init(&psc__bw_run_test_kind, o, struct_size);
}

void psc_lat_run_test_opts_init(psc_lat_run_test_opts_t *o, size_t struct_size)
{
    psc__init(&psc__lat_run_test_kind, o, struct_size);
}

psc_status_t psc__bw_suite_opts_adopt(psc_context_t *ctx, const psc_bw_suite_opts_t *in, psc_bw_suite_opts_t *out)
{
    return psc__zero_adopt(ctx, &psc__bw_suite_kind, in, offsetof(psc_bw_suite_opts_t, reserved0), out);
}

psc_status_t psc__verify_stress_opts_adopt(psc_context_t *ctx, const psc_verify_stress_opts_t *in,
                                           psc_verify_stress_opts_t *out)
{
    return psc__zero_adopt(ctx, &psc__verify_stress_kind, in, PSC__NO_RESERVED, out);
}

psc_status_t psc__verify_suite_opts_adopt(psc_context_t *ctx, const psc_verify_suite_opts_t *in,
                                          psc_verify_suite_opts_t *out)
{
    return psc__zero_adopt(ctx, &psc__verify_suite_kind, in, offsetof(psc_verify_suite_opts_t, reserved0), out);
}

psc_status_t psc__lat_suite_opts_adopt(psc_context_t *ctx, const psc_lat_suite_opts_t *in, psc_lat_suite_opts_t *out)
{
    return psc__zero_adopt(ctx, &psc__lat_suite_kind, in, PSC__NO_RESERVED, out);
}

psc_status_t psc__bw_run_test_opts_adopt(psc_context_t *ctx, const psc_bw_run_test_opts_t *in,
                                         psc_bw_run_test_opts_t *out)
{
    return psc__zero_adopt(ctx, &psc__bw_run_test_kind, in, offsetof(psc_bw_run_test_opts_t, reserved0), out);
}

psc_status_t psc__lat_run_test_opts_adopt(psc_context_t *ctx, const psc_lat_run_test_opts_t *in,
                                          psc_lat_run_test_opts_t *out)
{
    return psc__zero_adopt(ctx, &psc__lat_run_test_kind, in, offsetof(psc_lat_run_test_opts_t, reserved0), out);
}
