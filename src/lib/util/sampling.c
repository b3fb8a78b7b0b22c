/* Adaptive sampling's stop rule and size sweeps: pure arithmetic. */
#include <stdlib.h>
#include <string.h>

#include "p2pscope_private.h"

static double psc__median_of(const double *v, unsigned n)
{
    psc_stats_t s;

    return psc_stats_compute(v, n, &s) == PSC_OK ? s.median : 0.0;
}

int psc__sampling_stable(const double *samples, unsigned n, double pct)
{
    double m[3], lo, hi;

    if (!samples || n < 3 || pct < 0)
        return 0;
    for (unsigned k = 0; k < 3; k++)
        m[k] = psc__median_of(samples, n - 2 + k);
    lo = hi = m[0];
    for (unsigned k = 1; k < 3; k++) {
        lo = m[k] < lo ? m[k] : lo;
        hi = m[k] > hi ? m[k] : hi;
    }
    return hi > 0 && (hi - lo) / hi * 100.0 <= pct;
}

int psc_size_sweep(uint64_t min, uint64_t max, unsigned factor, uint64_t *out, int cap)
{
    int n = 0;

    if (min < 1 || max < min || factor < 2)
        return 0;
    for (uint64_t s = min; s <= max; s *= factor) {
        if (out && n < cap)
            out[n] = s;
        n++;
        if (s > UINT64_MAX / factor)
            break;
    }
    return n;
}
