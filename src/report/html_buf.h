/* A growing text buffer for the HTML, SVG and CSV writers, with XML escaping of text from outside. */
#ifndef PSC_REPORT_HTML_BUF_H
#define PSC_REPORT_HTML_BUF_H

#include <stddef.h>

typedef struct {
    char *p;      /* always terminated once anything was added; NULL before */
    size_t len, cap;
    int bad;      /* an append ran out of memory: the text is incomplete, never to be written */
} psc_buf_t;

void psc_buf_add(psc_buf_t *b, const char *s, size_t n);
void psc_buf_puts(psc_buf_t *b, const char *s);
void psc_buf_printf(psc_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * s appended clean: bytes that are not UTF-8 as U+FFFD; control characters
 * (C0 but those in keep, DEL, C1) as the text "\xNN", NN the character's code
 * (for C0 and DEL the byte, as psc_text_escape; for C1 one byte, where
 * psc_text_escape writes both of its UTF-8 bytes); any other ASCII character
 * as sub(c) gives it (NULL: as it is). s NULL: nothing; sub may be NULL.
 */
void psc_buf_clean(psc_buf_t *b, const char *s, const char *keep, const char *(*sub)(unsigned char c));
/*
 * s as XML/HTML character data or attribute value: psc_buf_clean keeping tab
 * and newline (XML refuses the other control characters, a reader cannot see
 * them), & < > " ' as entities.
 */
void psc_buf_esc(psc_buf_t *b, const char *s);
/* The text (the caller frees it), or NULL when an append failed; b is reset either way. */
char *psc_buf_take(psc_buf_t *b);
void psc_buf_free(psc_buf_t *b);

/* The pages' style sheet (a run's page and compare's), inline in each. */
extern const char psc_page_css[];

#endif
