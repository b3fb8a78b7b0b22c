/* What the suites (xfer/suite.c, lat/suite.c, verify/suite.c) check alike before anything runs. */
#ifndef PSC_SUITE_H
#define PSC_SUITE_H

#include "internal.h"

/* The GPUs: devices (ndev), or every GPU when ndev is 0; PSC_ERR_INVALID, recorded, for one out of range. */
psc_status_t psc__suite_devices(psc_context_t *ctx, const char *who, const int *devices, int ndev, int *out,
                                int *nout);

/*
 * The tests: tests (ntests), or 0..count-1 when ntests is 0; *out allocated (free it). PSC_ERR_INVALID for
 * an index out of range, PSC_ERR_UNSUPPORTED for a named test needing more than nd GPUs (min_gpus(t)).
 */
psc_status_t psc__suite_tests(psc_context_t *ctx, const char *who, const int *tests, int ntests, int count,
                              int (*min_gpus)(int), const char *(*name)(int), int nd, int named_devices,
                              psc_suite_test_t **out, int *nout);

#endif
