/*
 * `p2pscope p2pbw`: cuda-samples' p2pBandwidthLatencyTest's stdout line for
 * line (its title, devices, peer access lines and note, the connectivity
 * matrix, each matrix under its title, its closing note), "N/A" where
 * p2pscope measured nothing, and the same figures as a JSON object.
 */
#ifndef PSC_REPORT_RENDER_P2PBW_H
#define PSC_REPORT_RENDER_P2PBW_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope.h"
#include "report/p2pbw_map.h"

typedef struct {
    int p2p_read;       /* --p2p_read: the read matrices too */
    int sm_copy;        /* --sm_copy: P2P-enabled bandwidth from the SM tests */
    unsigned num_elems; /* --numElems: ints a copy */
} psc_p2pbw_render_opts_t;

/* The whole text; devs: the GPUs' facts, r->ndev of them. */
void psc_render_p2pbw(FILE *f, const psc_p2pbw_t *r, const psc_device_info_t *devs, const psc_p2pbw_render_opts_t *o);
/* One matrix as the sample prints it (a latency matrix: its GPU rows, then its CPU rows under "   CPU"). */
void psc_render_p2pbw_matrix(FILE *f, int m, const psc_p2pbw_t *r, const psc_p2pbw_render_opts_t *o);
/* Each failed case, "p2pscope: <test> <case>: <reason>" a line; their count. */
int psc_render_p2pbw_failures(FILE *f, const psc_p2pbw_t *r);

/* The figures: options, connectivity, each shown matrix (title, unit, direction, values with null for N/A),
 * the failed cases; NULL out of memory. */
json_t *psc_json_p2pbw(const psc_p2pbw_t *r, const psc_p2pbw_render_opts_t *o);

#endif
