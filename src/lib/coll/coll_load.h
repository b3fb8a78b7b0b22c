/*
 * coll's compute load (coll_load.c, psc_coll_opts_t.compute_load): each local GPU kept busy by a
 * matrix-multiply-like kernel on a stream of its own while a row's timed loop runs again; the collective's time
 * then, and what it cost the compute. Internal: psc__ names.
 */
#ifndef PSC_COLL_LOAD_H
#define PSC_COLL_LOAD_H

#include "coll/coll_exec.h"

#define PSC_COLL_LOAD_KERNELS 512     /* compute kernels queued for one measurement, at most */
#define PSC_COLL_LOAD_KERNEL_US 200.0 /* a compute kernel's time alone, at least: a tenth of the loop it loads */
#define PSC_COLL_LOAD_WINDOW 10       /* the timed loop repeated until it lasts this many compute kernels */

typedef struct psc_coll_load psc_coll_load_t;

/* Streams, events and output on every local GPU of x, and the kernel's rounds for PSC_COLL_LOAD_KERNEL_US (each
   GPU timed alone, the slowest's taken). */
psc_status_t psc__coll_load_open(psc_coll_exec_t *x, psc_coll_load_t **out);
/* Free it (NULL: nothing), its streams idle first. */
void psc__coll_load_close(psc_coll_exec_t *x, psc_coll_load_t *l);

/*
 * The half's timed loop again (psc__coll_time, repeated to last PSC_COLL_LOAD_WINDOW compute kernels at
 * unloaded_sec per operation) while the compute kernels run, into *out (ran set); the processes' figures
 * combined (times as opts.time_of, the compute's by their mean).
 */
psc_status_t psc__coll_load_time(psc_coll_exec_t *x, psc_coll_load_t *l, const psc_coll_shape_t *sh, int in_place,
                                 double unloaded_sec, psc_coll_load_half_t *out);

/*
 * Pure: the mean time of the compute kernels that ran wholly within [from, to] (us; kernel i from at[i] to
 * at[i + 1], i < k), and their count in *n; NaN where none did.
 */
double psc__coll_load_within(const double *at, int k, double from, double to, int *n);

#endif
