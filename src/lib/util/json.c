/* JSON helpers (jansson) for every JSON the library writes or reads: strings, values in messages, parse errors. */
#include "util/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

json_t *psc__json_text(const char *s, size_t max)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)u), o = 0;
    char *buf = malloc(n * 3 + 1);
    json_t *j;

    if (!buf)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t len = psc__utf8_seq(u + i, n - i), plen = len;
        const char *piece = (const char *)u + i;

        if (len == PSC__UTF8_CUT)
            break; /* a fixed-size field truncated inside a character */
        if (len == 0) {
            piece = "\xef\xbf\xbd"; /* U+FFFD for a byte that is not UTF-8 */
            plen = 3;
            len = 1;
        }
        if (max && o + plen > max)
            break;
        memcpy(buf + o, piece, plen);
        o += plen;
        i += len;
    }
    j = json_stringn(buf, o);
    free(buf);
    return j;
}

const char *psc__json_dump(json_t *v, char *buf, size_t len)
{
    char *text;

    if (!v) {
        snprintf(buf, len, "missing");
        return buf;
    }
    text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII); /* a cut never splits a character */
    if (text && strlen(text) > 40) {
        size_t cut = 36;

        for (size_t k = cut - 6; k < 36; k++)
            cut = text[k] == '\\' ? k : cut; /* not inside an escape such as \u00e9 */
        memcpy(text + cut, "...", 4);
    }
    snprintf(buf, len, "%s", text ? text : "the value");
    free(text);
    return buf;
}

void psc__json_parse_error(char *errbuf, size_t errlen, const char *path, const json_error_t *jerr)
{
    snprintf(errbuf, errlen, "%s:%d: not valid JSON: %s", path, jerr->line, jerr->text);
    for (char *c = errbuf; errlen && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

void psc__json_set(json_t *o, const char *key, json_t *v, int *bad)
{
    if (!o || !v || json_object_set_new(o, key, v) != 0)
        *bad = 1;
}

void psc__json_push(json_t *a, json_t *v, int *bad)
{
    if (!a || !v || json_array_append_new(a, v) != 0)
        *bad = 1;
}

json_t *psc__json_u64(uint64_t x)
{
    return x <= INT64_MAX ? json_integer((json_int_t)x) : json_null();
}
