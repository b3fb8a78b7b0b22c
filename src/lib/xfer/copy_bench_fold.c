/* psc_copy_bench's samples folded into a row (see copy_bench_fold.h). */
#include <stdlib.h>

#include "internal.h"
#include "xfer/copy_bench_fold.h"

/* The median of the positive values of v[0..n-1] (reordered); 0 when there is none. */
static double psc__cb_median(double *v, unsigned n)
{
    unsigned k = 0;

    for (unsigned i = 0; i < n; i++)
        if (v[i] > 0)
            v[k++] = v[i];
    if (!k)
        return 0;
    qsort(v, k, sizeof(double), psc__cmp_double);
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

/* The median of a[k] / b[k] over the samples where both are positive; 0 when there is none. */
static double psc__cb_paired_ratio(const double *a, const double *b, unsigned n)
{
    double r[PSC_CB_MAX_SAMPLES];
    unsigned k = 0;

    for (unsigned i = 0; i < n; i++)
        if (a[i] > 0 && b[i] > 0)
            r[k++] = a[i] / b[i];
    return psc__cb_median(r, k);
}

void psc__copy_bench_fold(double gpu_us[PSC_CB_METHODS][PSC_CB_MAX_SAMPLES],
                          double cpu_us[PSC_CB_METHODS][PSC_CB_MAX_SAMPLES], unsigned n, psc_copy_bench_row_t *row)
{
    double over[PSC_CB_MAX_SAMPLES];
    unsigned k = 0;

    if (n > PSC_CB_MAX_SAMPLES)
        n = PSC_CB_MAX_SAMPLES;
    row->speedup = psc__cb_paired_ratio(gpu_us[PSC_CB_DRIVER], gpu_us[PSC_CB_PSC], n);
    row->prep_speedup = psc__cb_paired_ratio(gpu_us[PSC_CB_DRIVER], gpu_us[PSC_CB_PREP], n);
    for (unsigned i = 0; i < n; i++) /* a difference may be negative: its median over every measured pair */
        if (cpu_us[PSC_CB_PSC][i] > 0 && cpu_us[PSC_CB_PLAN][i] > 0)
            over[k++] = cpu_us[PSC_CB_PSC][i] - cpu_us[PSC_CB_PLAN][i];
    if (k) {
        qsort(over, k, sizeof(double), psc__cmp_double);
        row->cpu_over_us = k % 2 ? over[k / 2] : (over[k / 2 - 1] + over[k / 2]) / 2;
    } else {
        row->cpu_over_us = 0;
    }
    row->driver_us = psc__cb_median(gpu_us[PSC_CB_DRIVER], n);
    row->psc_us = psc__cb_median(gpu_us[PSC_CB_PSC], n);
    row->prep_us = psc__cb_median(gpu_us[PSC_CB_PREP], n);
    row->driver_cpu_us = psc__cb_median(cpu_us[PSC_CB_DRIVER], n);
    row->psc_cpu_us = psc__cb_median(cpu_us[PSC_CB_PSC], n);
    row->prep_cpu_us = psc__cb_median(cpu_us[PSC_CB_PREP], n);
    row->launch_cpu_us = psc__cb_median(cpu_us[PSC_CB_PLAN], n);
}
