/* Aligned text tables: first column left-aligned, the others right-aligned. */
#ifndef PSC_REPORT_TABLE_H
#define PSC_REPORT_TABLE_H

#include <stdio.h>

typedef struct psc_table psc_table_t;

/* rows x cols cells, all empty; NULL when out of memory or a size is 0. */
psc_table_t *psc_table_new(unsigned rows, unsigned cols);
void psc_table_free(psc_table_t *t);

/* printf into a cell; out-of-range cells are ignored. */
void psc_table_set(psc_table_t *t, unsigned row, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
const char *psc_table_get(const psc_table_t *t, unsigned row, unsigned col);

/* Row 0's first n cells: names[0] to names[n - 1]; PSC_TABLE_HEADER(t, "a", "b") counts them itself. */
void psc_table_header(psc_table_t *t, const char *const *names, unsigned n);
#define PSC_TABLE_HEADER(t, ...)                                        \
    psc_table_header((t), (const char *const[]){__VA_ARGS__},          \
                     sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

/* Left-align the first n columns (default 1); the rest stay right-aligned. */
void psc_table_left_columns(psc_table_t *t, unsigned n);

/*
 * A GPU matrix's labels: `corner` (may be NULL) at row 0, column 0, and
 * "gpuN" along row 0 and down column 0 for each of the n GPUs (devs NULL: 0 to n-1).
 */
void psc_table_gpu_labels(psc_table_t *t, const char *corner, const int *devs, int n);

/* Row 0 is the header. Columns are separated by two spaces; no trailing blanks. */
void psc_table_render(const psc_table_t *t, FILE *f);
/* Only the first n rows (a table filled from the top, sized for the worst case). */
void psc_table_render_rows(const psc_table_t *t, FILE *f, unsigned n);

#endif
