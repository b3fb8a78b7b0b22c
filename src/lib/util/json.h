/*
 * The library's JSON helpers (jansson), for every JSON it writes or reads
 * (facts, calibrations, reports): any C string as a JSON string, a value as a
 * message shows it, a parse error as one line.
 */
#ifndef PSC_UTIL_JSON_H
#define PSC_UTIL_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Any C string as a JSON string jansson accepts: a character cut short at the
 * end is dropped, a byte that is not UTF-8 becomes U+FFFD, and the result
 * stops at a character boundary within max bytes (0: no limit). NULL only
 * when out of memory.
 */
json_t *psc__json_text(const char *s, size_t max);

/*
 * jansson's parse error as one line into errbuf: "PATH:LINE: not valid JSON: what", with the control
 * characters of the text it quotes (a newline inside a string, say) shown as '?'.
 */
void psc__json_parse_error(char *errbuf, size_t errlen, const char *path, const json_error_t *jerr);

/* Insert (set) or append (push) v, remembering a failure in *bad instead of dropping it (o, a or v NULL fails). */
void psc__json_set(json_t *o, const char *key, json_t *v, int *bad);
void psc__json_push(json_t *a, json_t *v, int *bad);

/* A byte count or offset as a JSON integer; null above what JSON's integers hold here (INT64_MAX). */
json_t *psc__json_u64(uint64_t x);

/* A value as an error message shows it: its JSON text cut at 40 characters; "missing" for NULL. */
const char *psc__json_dump(json_t *v, char *buf, size_t len);

#endif
