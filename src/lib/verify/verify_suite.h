/*
 * The verify suite's run (verify/suite.c), without the findings that
 * psc_verify_run_suite (api_findings.c) adds. Named apart from the suites'
 * common checks, which were lib/suite.h and are now in runner/runner.h.
 * Internal.
 */
#ifndef PSC_VERIFY_VERIFY_SUITE_H
#define PSC_VERIFY_VERIFY_SUITE_H

#include "internal.h"

/*
 * psc_verify_run_suite's arguments, refusals and run, its findings left
 * NULL: the suite's cases, the load and the stress run, the paths that
 * failed counted. *out only on success; free with psc_verify_suite_free.
 */
psc_status_t psc__verify_run_suite(psc_context_t *ctx, const psc_verify_suite_opts_t *opts, psc_verify_suite_t **out);

#endif
