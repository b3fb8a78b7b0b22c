/* From a test's pattern and the chosen GPUs to the cases it runs, each a set of concurrent transfers. */
#include <string.h>

#include "internal.h"
#include "runner/runner.h"

typedef struct {
    psc_bw_case_t *out;
    size_t cap, n;
} psc__case_list_t;

static void psc__emit(psc__case_list_t *l, const psc_bw_case_t *c)
{
    if (l->out && l->n < l->cap)
        l->out[l->n] = *c;
    l->n++;
}

static void psc__add_xfer(psc_bw_case_t *c, int src, int dst, int issuer)
{
    if (c->nxfer < PSC_MAX_XFERS)
        c->xfer[c->nxfer++] = (psc_xfer_t){src, dst, issuer};
}

static psc_bw_case_t psc__case(psc_bw_test_t t, int src, int dst, int issuer)
{
    psc_bw_case_t c;

    memset(&c, 0, sizeof(c));
    c.test = t;
    c.src = src;
    c.dst = dst;
    c.issuer = issuer;
    return c;
}

/* The GPU that issues a GPU -> GPU transfer: the reader (destination) or the writer (source). */
static int psc__issuer(const psc_bw_test_info_t *ti, int src, int dst)
{
    return ti->by_reader ? dst : src;
}

static void psc__generate(const psc_bw_test_info_t *ti, psc_bw_test_t t, const int *d, int m, psc__case_list_t *l)
{
    psc_bw_case_t c;

    switch (ti->shape) {
    case PSC_SHAPE_PAIR:
    case PSC_SHAPE_P2P_OFF:
        for (int i = 0; i < m; i++)
            for (int j = 0; j < m; j++) {
                if (i == j)
                    continue;
                c = psc__case(t, d[i], d[j], psc__issuer(ti, d[i], d[j]));
                psc__add_xfer(&c, d[i], d[j], c.issuer);
                psc__emit(l, &c);
            }
        break;
    case PSC_SHAPE_PAIR_BIDIR:
    case PSC_SHAPE_P2P_OFF_BIDIR:
        for (int i = 0; i < m; i++)
            for (int j = i + 1; j < m; j++) {
                c = psc__case(t, d[i], d[j], PSC_ALL);
                psc__add_xfer(&c, d[i], d[j], psc__issuer(ti, d[i], d[j]));
                psc__add_xfer(&c, d[j], d[i], psc__issuer(ti, d[j], d[i]));
                psc__emit(l, &c);
            }
        break;
    case PSC_SHAPE_LOCAL:
    case PSC_SHAPE_H2D:
    case PSC_SHAPE_D2H:
    case PSC_SHAPE_HOST_BIDIR:
        for (int i = 0; i < m; i++) {
            int src = ti->shape == PSC_SHAPE_H2D || ti->shape == PSC_SHAPE_HOST_BIDIR ? PSC_HOST : d[i];
            int dst = ti->shape == PSC_SHAPE_D2H ? PSC_HOST : d[i];

            c = psc__case(t, src, dst, d[i]);
            psc__add_xfer(&c, src, dst, d[i]);
            if (ti->shape == PSC_SHAPE_HOST_BIDIR)
                psc__add_xfer(&c, d[i], PSC_HOST, d[i]);
            psc__emit(l, &c);
        }
        break;
    case PSC_SHAPE_ALL_TO_ONE:
    case PSC_SHAPE_ONE_TO_ALL:
        for (int k = 0; k < m; k++) {
            int to_one = ti->shape == PSC_SHAPE_ALL_TO_ONE;

            c = psc__case(t, to_one ? PSC_ALL : d[k], to_one ? d[k] : PSC_ALL, PSC_ALL);
            for (int o = 0; o < m; o++) {
                int src = to_one ? d[o] : d[k], dst = to_one ? d[k] : d[o];

                if (o != k)
                    psc__add_xfer(&c, src, dst, psc__issuer(ti, src, dst));
            }
            psc__emit(l, &c);
        }
        break;
    case PSC_SHAPE_RING:
        c = psc__case(t, PSC_ALL, PSC_ALL, PSC_ALL);
        for (int i = 0; i < m; i++)
            psc__add_xfer(&c, d[i], d[(i + 1) % m], psc__issuer(ti, d[i], d[(i + 1) % m]));
        psc__emit(l, &c);
        break;
    case PSC_SHAPE_HOST_TO_ALL:
    case PSC_SHAPE_ALL_TO_HOST:
    case PSC_SHAPE_ALL_HOST_BIDIR:
        c = psc__case(t, ti->shape == PSC_SHAPE_ALL_TO_HOST ? PSC_ALL : PSC_HOST,
                      ti->shape == PSC_SHAPE_HOST_TO_ALL ? PSC_ALL : PSC_HOST, PSC_ALL);
        for (int i = 0; i < m; i++) {
            if (ti->shape != PSC_SHAPE_ALL_TO_HOST)
                psc__add_xfer(&c, PSC_HOST, d[i], d[i]);
            if (ti->shape != PSC_SHAPE_HOST_TO_ALL)
                psc__add_xfer(&c, d[i], PSC_HOST, d[i]);
        }
        psc__emit(l, &c);
        break;
    }
}

psc_status_t psc_bw_cases(const psc_context_t *ctx, psc_bw_test_t test, const int *devices, int ndev,
                          psc_bw_case_t *cases, size_t cap, size_t *n)
{
    const psc_bw_test_info_t *ti = psc_bw_test_info(test);
    int d[PSC_MAX_XFERS], m;
    psc__case_list_t l = {cases, cap, 0};

    m = psc__cases_gpus(ctx, "psc_bw_cases", "bandwidth", psc_bw_registry(), test, devices, ndev, n, d, PSC_MAX_XFERS);
    if (m < 0)
        return PSC_ERR_INVALID; /* psc__cases_gpus recorded why */
    if (m >= ti->min_gpus)
        psc__generate(ti, test, d, m, &l);
    *n = l.n;
    return PSC_OK;
}
