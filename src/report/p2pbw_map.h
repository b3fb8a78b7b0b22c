/*
 * cuda-samples' p2pBandwidthLatencyTest's matrices and where each cell of
 * `p2pscope p2pbw`'s comes from: the one table (p2pbw_map.c) that its text,
 * its JSON and p2pscope(1) follow, and the cell rule (which p2pscope test's
 * case, which figure, the sample's fallback where P2P is not possible).
 */
#ifndef PSC_REPORT_P2PBW_MAP_H
#define PSC_REPORT_P2PBW_MAP_H

#include "p2pscope/bench.h"
#include "lib/p2pscope_private.h"

/* The sample's default: 40,000,000 ints a copy. */
#define PSC_P2PBW_DEFAULT_ELEMS 40000000u
/* Its copies per bandwidth timing (its "repeat"), and the latency copies' size: one int4. */
#define PSC_P2PBW_REPEAT 5u
#define PSC_P2PBW_LAT_BYTES 16u

typedef enum {
    PSC_P2PBW_BW,  /* GB/s: a transfer's median; diagonal: the local copy's, bytes read and written */
    PSC_P2PBW_BIDIR, /* GB/s: both directions' aggregate median; diagonal as PSC_P2PBW_BW */
    PSC_P2PBW_LAT_GPU, /* us: GPU time per 16-byte copy (median) */
    PSC_P2PBW_LAT_CPU  /* us: CPU time to queue one (median) */
} psc_p2pbw_kind_t;

typedef struct {
    const char *key;       /* JSON key */
    const char *title;     /* the sample's line above the matrix, verbatim ("" for the CPU latency, printed below the GPU's) */
    psc_p2pbw_kind_t kind;
    const char *test;      /* the p2pscope test off the diagonal (bw or lat); NULL: none measures it (N/A) */
    const char *sm_test;   /* the same with --sm_copy; NULL: none */
    const char *fallback;  /* the test taken where the GPUs cannot reach each other (the sample's staged copy); NULL */
    int read;              /* the row GPU reads: the cell's data goes column -> row */
    int only_read;         /* printed only with --p2p_read */
} psc_p2pbw_matrix_t;

int psc_p2pbw_matrix_count(void);
const psc_p2pbw_matrix_t *psc_p2pbw_matrix_at(int i); /* NULL out of range */
/* Whether matrix m is printed (and in JSON) with these options. */
int psc_p2pbw_matrix_shown(const psc_p2pbw_matrix_t *m, int p2p_read);

/* The cell (row, col) of matrix m from a run: 1 and *out, or 0 where nothing measured it (printed "N/A"). */
int psc_p2pbw_cell(const psc_p2pbw_matrix_t *m, const psc_p2pbw_t *r, int sm_copy, int row, int col, double *out);

#endif
