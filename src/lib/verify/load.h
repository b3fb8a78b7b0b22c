/* Background traffic for verify: what the verify engine calls while it works. */
#ifndef PSC_VERIFY_LOAD_H
#define PSC_VERIFY_LOAD_H

#include "pattern/check.h"

/* Queue another batch of copies on every path whose last batch is done. NULL: nothing. */
psc_status_t psc__load_pump(psc_load_t *l);

/* Wait for every path, check what its copies wrote, and poison the destinations again. NULL: nothing. */
psc_status_t psc__load_settle(psc_load_t *l);

/* psc_load_start and psc_load_stop, the caller's CUDA state already saved; the context a load runs on. */
psc_status_t psc__load_start(psc_context_t *ctx, const int *devices, int ndev, psc_load_t **out);
psc_status_t psc__load_stop(psc_load_t *l, psc_load_path_report_t *out, int cap, int *n);
psc_context_t *psc__load_context(const psc_load_t *l);

/*
 * psc_load_start and psc_load_stop whole (ctx and load not NULL), for them and verify's suite: the work under the
 * guard; a load set up whose caller's CUDA state could not be put back is stopped, not handed over.
 */
psc_status_t psc__load_start_held(psc_context_t *ctx, const int *devices, int ndev, psc_load_t **out);
psc_status_t psc__load_stop_held(psc_load_t *l, psc_load_path_report_t *out, int cap, int *n);

#endif
