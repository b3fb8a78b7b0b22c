/* psc_copy_bench's samples folded into a row: each figure a median, each comparison a median of paired samples. */
#ifndef PSC_XFER_COPY_BENCH_FOLD_H
#define PSC_XFER_COPY_BENCH_FOLD_H

#include "p2pscope/bench.h"

#define PSC_CB_MAX_SAMPLES 64u /* samples of each way of copying per size */

/* The ways psc_copy_bench queues a copy; a row holds a sample of each, taken in turn. */
typedef enum {
    PSC_CB_PLAN,   /* the planned route's own driver call (psc__copy_plan_enqueue): the calibration, the launch cost */
    PSC_CB_PSC,    /* psc_copy itself, checks and all */
    PSC_CB_PREP,   /* psc_copy_run of the bed's prepared copy */
    PSC_CB_DRIVER, /* cuMemcpyAsync on every path: the call psc_copy replaces, with the same arguments */
    PSC_CB_METHODS
} psc_cb_method_t;

/*
 * Samples k = 0..n-1 (n <= PSC_CB_MAX_SAMPLES) of every method, taken side by
 * side: gpu_us[m][k] the time per copy, cpu_us[m][k] the CPU time per call.
 * Sets the row's times (medians) and its speedups and CPU over as the medians
 * of sample k's driver / psc, driver / prepared and psc CPU - launch CPU: a
 * machine that slows between samples slows both sides of a pair. Samples that
 * are not positive leave the figures built on them 0.
 */
void psc__copy_bench_fold(double gpu_us[PSC_CB_METHODS][PSC_CB_MAX_SAMPLES],
                          double cpu_us[PSC_CB_METHODS][PSC_CB_MAX_SAMPLES], unsigned n, psc_copy_bench_row_t *row);

#endif
