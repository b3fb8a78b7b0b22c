/* UTF-8 as the writers accept it: one sequence at a time, for repairing text from outside. */
#ifndef PSC_UTIL_UTF8_H
#define PSC_UTIL_UTF8_H

#include <stddef.h>

#define PSC__UTF8_CUT ((size_t)-1)

/*
 * Bytes of the valid UTF-8 sequence at s (n bytes left, n >= 1): 1 to 4; 0
 * when s does not start one (a stray byte, an overlong form, a surrogate,
 * beyond U+10FFFF); PSC__UTF8_CUT when it is a sound start that the end of
 * the text cuts short.
 */
size_t psc__utf8_seq(const unsigned char *s, size_t n);

#endif
