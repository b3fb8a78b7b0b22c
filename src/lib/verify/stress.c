/* verify --seconds: pass after pass over every case, each pass with its own data, until the time is up. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "opts.h"
#include "verify/integrity.h"
#include "verify/stress.h"

/* Golden-ratio step: consecutive passes' seeds differ in many bits. */
#define PSC__SEED_STEP 0x9E3779B97F4A7C15ull

static psc_status_t psc__run_default(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                                     psc_verify_result_t *out, void *user)
{
    (void)user;
    return psc__verify_run_held(ctx, c, o, out); /* o: adopted by psc_verify_stress */
}

static double psc__now_default(void *user)
{
    (void)user;
    return psc__now_ns() * 1e-9;
}

psc_status_t psc__verify_stress_hooked(const psc__stress_hooks_t *hooks, psc_context_t *ctx, const psc_bw_case_t *cases,
                                       size_t n, const psc_verify_opts_t *opts, double seconds,
                                       psc_verify_progress_fn progress, void *user, psc_verify_path_sum_t *sums,
                                       psc_verify_stress_info_t *info)
{
    psc_status_t (*run)(psc_context_t *, const psc_bw_case_t *, const psc_verify_opts_t *, psc_verify_result_t *,
                        void *) = hooks && hooks->run ? hooks->run : psc__run_default;
    double (*now)(void *) = hooks && hooks->now ? hooks->now : psc__now_default;
    void *hu = hooks ? hooks->user : NULL;
    psc_verify_stress_info_t in;
    double t0;

    if (!cases || !n || !opts || !sums || !(seconds >= 0)) /* !(>=) refuses NaN too */
        return PSC_ERR_INVALID;
    memset(&in, 0, sizeof(in));
    memset(sums, 0, n * sizeof(*sums));
    t0 = now(hu);
    for (unsigned pass = 0;; pass++) {
        psc_verify_opts_t vo = *opts;
        size_t ran = 0, tried = 0;

        vo.seed ^= (uint64_t)pass * PSC__SEED_STEP; /* each pass its own data */
        for (size_t k = 0; k < n; k++) {
            psc_verify_progress_t p;
            psc_verify_result_t r;

            /* The first pass covers every case; later ones stop when the time is up. */
            if (pass > 0 && now(hu) - t0 >= seconds)
                break;
            in.passes = pass + 1;
            p = (psc_verify_progress_t){now(hu) - t0, in.bytes_checked, pass + 1, k, n, &cases[k], NULL};
            if (progress)
                progress(&p, user);
            if (run(ctx, &cases[k], &vo, &r, hu) != PSC_OK) {
                memset(&r, 0, sizeof(r));
                r.c = cases[k];
                r.status = PSC_RESULT_FAILED;
                snprintf(r.reason, sizeof(r.reason), "invalid case");
            }
            if (!sums[k].passes || sums[k].last.status != PSC_RESULT_FAILED)
                sums[k].last = r;
            sums[k].copies += r.copies;
            sums[k].bytes_checked += r.bytes_checked;
            sums[k].bad_bytes += r.bad_bytes;
            sums[k].passes++;
            in.bytes_checked += r.bytes_checked;
            tried++;
            ran += r.copies > 0;
            if (progress) {
                p.elapsed_s = now(hu) - t0;
                p.bytes_checked = in.bytes_checked;
                p.result = &r;
                progress(&p, user);
            }
        }
        if (seconds <= 0 || now(hu) - t0 >= seconds)
            break;
        /* Another pass would fail the same way at once: a busy loop, not a stress test. */
        if (tried && !ran) {
            in.idle_pass = pass + 1;
            break;
        }
    }
    if (info)
        *info = in;
    return PSC_OK;
}

psc_status_t psc_verify_stress(psc_context_t *ctx, const psc_bw_case_t *cases, size_t n,
                               const psc_verify_stress_opts_t *opts, psc_verify_path_sum_t *sums,
                               psc_verify_stress_info_t *info)
{
    psc_verify_stress_opts_t o;
    psc_verify_opts_t full, dflt;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (opts && (st = psc__verify_stress_opts_adopt(ctx, opts, &o)) != PSC_OK)
        return st;
    if (!cases || !n || !opts || !sums || !(o.seconds >= 0)) /* !(>=) refuses NaN too */
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "psc_verify_stress: accepted cases and sums of n >= 1 entries, options, and seconds >= 0");
    /* Each pass copies the options: at this library's size, whatever header the caller was built with. */
    psc_verify_opts_default(&dflt);
    if ((st = psc__verify_opts_adopt(ctx, o.verify ? o.verify : &dflt, &full)) != PSC_OK)
        return st;
    return psc__verify_stress_hooked(NULL, ctx, cases, n, &full, o.seconds, o.progress, o.user, sums, info);
}
