/* The pieces report/check*.c build a check's items with (check.h has the model); not for other writers. */
#ifndef PSC_REPORT_CHECK_BUILD_H
#define PSC_REPORT_CHECK_BUILD_H

#include "report/check.h"

/* A new item (its state PASS until settled) or figure (value NAN, ok 1); NULL out of memory. */
psc_check_item_t *psc_check_item_new(psc_check_report_t *r, const char *name, const char *unit, int higher_better,
                                     double tol);
psc_check_figure_t *psc_check_fig_new(psc_check_item_t *it, const char *key);
/* Every rule of e of kind over test that applies to g's key, checked on value_of(rule, x) (the rule's figure,
 * in its unit; NAN where there is none): g->ok cleared by any miss, the rules kept. */
void psc_check_fig_bind(psc_check_figure_t *g, const psc_expect_t *e, int kind, const char *test,
                        double (*value_of)(const psc_expect_rule_t *rule, const void *x), const void *x);
/* An item skipped for why; an item failed because its stage did not run (why). */
psc_status_t psc_check_skip(psc_check_report_t *r, const char *name, const char *unit, int higher_better, double tol,
                            const char *why);
psc_status_t psc_check_lost(psc_check_report_t *r, const char *name, const char *unit, int higher_better, double tol,
                            const char *why);

/* The items of each part (check_parts.c). */
psc_status_t psc_check_inventory(psc_check_report_t *r, const psc_node_check_t *c, const psc_expect_t *e);
psc_status_t psc_check_integrity(psc_check_report_t *r, const psc_node_check_t *c);
psc_status_t psc_check_allreduce(psc_check_report_t *r, const psc_node_check_t *c, const psc_expect_t *e);
psc_status_t psc_check_doctor(psc_check_report_t *r, const psc_node_check_t *c);

#endif
