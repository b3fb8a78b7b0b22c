/* The doctor's rule files share one way of adding findings (rules.c's psc__add). Internal: psc__ names. */
#ifndef PSC_DOCTOR_RULES_H
#define PSC_DOCTOR_RULES_H

#include <stddef.h>

#include "p2pscope.h"

/*
 * Findings go straight into the caller's array, no allocation, so nothing can
 * be dropped: the rules run once per severity, most severe first, and each
 * pass keeps only the findings of its own severity. Every finding is counted;
 * the first cap are written.
 */
typedef struct {
    psc_finding_t *out;
    size_t cap, n;
    psc_severity_t pass;
} psc__findings_t;

void psc__add(psc__findings_t *fs, psc_severity_t sev, const char *rule, const char *fix, const char *evidence,
              const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The NCCL rules (rules_nccl.c), one pass. */
void psc__rules_nccl(const psc_facts_t *f, psc__findings_t *fs);

/* The rules on CPU mappings of GPU memory (rules_gpumap.c), one pass. */
void psc__rules_gpumap(const psc_facts_t *f, psc__findings_t *fs);

/* The value of an NCCL_* setting in the facts; NULL when not set or not known. */
const char *psc__nccl_setting(const psc_nccl_facts_t *n, const char *name);

/* A setting read as NCCL reads an integer: 1 when set to a nonzero integer, 0 otherwise. */
int psc__nccl_flag(const psc_nccl_facts_t *n, const char *name);

/* NCCL_P2P_LEVEL as NCCL's path rank (LOC 0 ... SYS 7); -1 unset or not understood. */
int psc__nccl_p2p_level(const psc_nccl_facts_t *n);

/* A pair's path as NCCL's path rank (NVL 1, PIX 3, PXB 4, PHB 6, SYS 7); -1 unknown or the same GPU. */
int psc__nccl_path_rank(psc_path_t path);

/* NCCL's name for a path rank: "LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS"; "?" otherwise. */
const char *psc__nccl_path_name(int rank);

#endif
