/* Text from outside (GPU names, recordings, kernel command lines, driver reasons) made safe for a terminal. */
#ifndef PSC_REPORT_TEXT_H
#define PSC_REPORT_TEXT_H

#include <stddef.h>
#include <stdio.h>

/*
 * Copy in to out (len bytes, always terminated) with control characters
 * written as \xNN: C0 and DEL, and C1 (U+0080 to U+009F, UTF-8 "\xc2\x80" to
 * "\xc2\x9f"), so that no escape sequence reaches the terminal. keep names
 * C0 characters let through as they are (e.g. "\n\t"; NULL: none). The
 * length of the escaped text, cut or not.
 */
size_t psc_text_escape(const char *in, const char *keep, char *out, size_t len);

/* fprintf, with every control character but newline and tab escaped as above. */
int psc_report_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
