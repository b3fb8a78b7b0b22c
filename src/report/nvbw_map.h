/*
 * nvbandwidth 0.8's test cases and the p2pscope bandwidth test each one maps
 * to: the one table (nvbw_map.c) that `p2pscope nvbandwidth`, `bw -t` with
 * nvbandwidth's names and render_nvbw.c read, and how each matrix cell of
 * nvbandwidth's output is taken from the p2pscope test's results.
 */
#ifndef PSC_REPORT_NVBW_MAP_H
#define PSC_REPORT_NVBW_MAP_H

#include "p2pscope/bench.h"

/* The nvbandwidth release whose tests, names and output layout are copied. */
#define PSC_NVBW_VERSION "v0.8"
/* Its defaults: -b 512 (MiB), -i 3 samples, --loopCount 16 copies per sample. */
#define PSC_NVBW_DEFAULT_MIB 512u
#define PSC_NVBW_DEFAULT_SAMPLES 3u
#define PSC_NVBW_DEFAULT_LOOPS 16u

/* Where a cell's copy starts or ends: the host, the cell's row GPU or column GPU, or every other GPU. */
typedef enum { PSC_NVBW_HOST, PSC_NVBW_ROW, PSC_NVBW_COL, PSC_NVBW_ALL } psc_nvbw_end_t;

/*
 * One matrix nvbandwidth prints for a test. Cell (row, column) holds the
 * median of the one transfer from `from` to `to` (a GPU -> GPU or host
 * transfer of the mapped test's case), or, where from or to is PSC_NVBW_ALL,
 * the aggregate median of the case whose summary is from -> to (all-to-one,
 * one-to-all); sum_of_two: the cell is the sum of the test's first two
 * matrices' cells (nvbandwidth's bidirectional "Total").
 */
typedef struct {
    const char *key_suffix;  /* appended to the test's name in the SUM line: "", "_read1", "_total" */
    const char *title;       /* nvbandwidth's line above the matrix, verbatim */
    psc_nvbw_end_t from, to;
    int sum_of_two;
} psc_nvbw_matrix_t;

typedef struct {
    const char *name;        /* nvbandwidth's test name */
    const char *test;        /* the p2pscope bw test measuring it; NULL: none (printed as nvbandwidth's waived test) */
    const char *note;        /* for -l: how the figure is taken, or what p2pscope measures instead */
    int nmatrices;
    psc_nvbw_matrix_t m[3];
} psc_nvbw_test_t;

/* nvbandwidth 0.8's tests in its order (its -l indexes). */
int psc_nvbw_test_count(void);
const psc_nvbw_test_t *psc_nvbw_test_at(int index); /* NULL out of range */
/* A test by nvbandwidth's name or index (as its -t takes them); -1 when none. */
int psc_nvbw_test_find(const char *name_or_index);
/* The p2pscope bw test an nvbandwidth name maps to; -1 when the name is none of nvbandwidth's, -2 when
 * p2pscope has no bandwidth test for it (then *note, if given, says what instead). */
int psc_nvbw_bw_test(const char *name, const char **note);
/* The matrix's rows: the GPUs where a cell's end is the row GPU, else 1. */
int psc_nvbw_matrix_rows(const psc_nvbw_matrix_t *m, int ngpus);

#endif
