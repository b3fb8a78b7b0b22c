/* Text rendering of inventory and bandwidth results. */
#ifndef PSC_REPORT_RENDER_H
#define PSC_REPORT_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include "p2pscope.h"

/* "gpu3" or "host" into buf. */
const char *psc_endpoint_name(int endpoint, char *buf, size_t len);

void psc_render_devices(FILE *f, const psc_system_info_t *sys, const psc_device_info_t *devs, int ndev);

/*
 * One test's results as a table with units in the title: a src(row) ->
 * dst(column) matrix for GPU->GPU tests, a row of GPUs otherwise. Waived and
 * failed cells point to notes under the table.
 */
void psc_render_bw(FILE *f, psc_bw_test_t test, const psc_bw_result_t *res, size_t n,
                   const int *devs, int ndev, unsigned samples);

#endif
