/* Summary statistics of a set of samples: minimum, maximum, mean, median, standard deviation, their spread. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int psc__cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

psc_status_t psc_stats_compute(const double *values, unsigned n, psc_stats_t *out)
{
    psc_stats_t s = {0};
    double *v, sum = 0, sq = 0;

    if (!values || !out || n == 0)
        return PSC_ERR_INVALID;
    v = malloc(n * sizeof(*v));
    if (!v)
        return PSC_ERR_NO_MEMORY;
    memcpy(v, values, n * sizeof(*v));
    qsort(v, n, sizeof(*v), psc__cmp_double);
    s.n = n;
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    for (unsigned i = 0; i < n; i++)
        sum += v[i];
    s.mean = sum / n;
    for (unsigned i = 0; i < n; i++)
        sq += (v[i] - s.mean) * (v[i] - s.mean);
    s.stddev = n > 1 ? sqrt(sq / (n - 1)) : 0.0;
    free(v);
    *out = s;
    return PSC_OK;
}

int psc_stats_cv_pct(const psc_stats_t *s, double *pct)
{
    if (!s || !pct || s->n == 0 || !(s->mean > 0))
        return 0;
    *pct = 100.0 * s->stddev / s->mean;
    return 1;
}
