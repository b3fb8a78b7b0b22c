/* Aligned text tables (table.h): cells kept, column widths measured, the first column left-aligned. */
#include "table.h"
#include "text.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PSC_CELL_LEN 64

struct psc_table {
    unsigned rows, cols, left;
    char (*cells)[PSC_CELL_LEN];
};

psc_table_t *psc_table_new(unsigned rows, unsigned cols)
{
    psc_table_t *t;

    if (!rows || !cols)
        return NULL;
    t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->cells = calloc((size_t)rows * cols, PSC_CELL_LEN);
    if (!t->cells) {
        free(t);
        return NULL;
    }
    t->rows = rows;
    t->cols = cols;
    t->left = 1;
    return t;
}

void psc_table_free(psc_table_t *t)
{
    if (!t)
        return;
    free(t->cells);
    free(t);
}

void psc_table_set(psc_table_t *t, unsigned row, unsigned col, const char *fmt, ...)
{
    char raw[PSC_CELL_LEN];
    va_list ap;

    if (!t || row >= t->rows || col >= t->cols)
        return;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    /* A cell is one line of plain text, whatever a name from outside holds. */
    psc_text_escape(raw, NULL, t->cells[row * t->cols + col], PSC_CELL_LEN);
}

const char *psc_table_get(const psc_table_t *t, unsigned row, unsigned col)
{
    if (!t || row >= t->rows || col >= t->cols)
        return NULL;
    return t->cells[row * t->cols + col];
}

void psc_table_left_columns(psc_table_t *t, unsigned n)
{
    if (t)
        t->left = n;
}

void psc_table_render(const psc_table_t *t, FILE *f)
{
    if (t)
        psc_table_render_rows(t, f, t->rows);
}

void psc_table_render_rows(const psc_table_t *t, FILE *f, unsigned rows)
{
    size_t *width;

    if (!t)
        return;
    if (rows > t->rows)
        rows = t->rows;
    width = calloc(t->cols, sizeof(*width));
    if (!width)
        return;
    for (unsigned r = 0; r < rows; r++)
        for (unsigned c = 0; c < t->cols; c++) {
            size_t len = strlen(t->cells[r * t->cols + c]);
            if (len > width[c])
                width[c] = len;
        }
    for (unsigned r = 0; r < rows; r++) {
        char line[t->cols * (PSC_CELL_LEN + 2) + 1];
        size_t pos = 0;

        for (unsigned c = 0; c < t->cols; c++) {
            const char *cell = t->cells[r * t->cols + c];
            int w = (int)width[c];

            if (c < t->left)
                pos += (size_t)sprintf(line + pos, c == 0 ? "%-*s" : "  %-*s", w, cell);
            else
                pos += (size_t)sprintf(line + pos, "  %*s", w, cell);
        }
        while (pos > 0 && line[pos - 1] == ' ')
            pos--;
        line[pos] = '\0';
        fprintf(f, "%s\n", line);
    }
    free(width);
}

void psc_table_header(psc_table_t *t, const char *const *names, unsigned n)
{
    for (unsigned c = 0; c < n; c++)
        psc_table_set(t, 0, c, "%s", names[c]);
}

void psc_table_gpu_labels(psc_table_t *t, const char *corner, const int *devs, int n)
{
    if (corner)
        psc_table_set(t, 0, 0, "%s", corner);
    for (int i = 0; i < n; i++) {
        psc_table_set(t, 0, (unsigned)i + 1, "gpu%d", devs ? devs[i] : i);
        psc_table_set(t, (unsigned)i + 1, 0, "gpu%d", devs ? devs[i] : i);
    }
}
