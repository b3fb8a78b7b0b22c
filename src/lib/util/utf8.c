/* UTF-8 sequences checked one at a time (utf8.h), for repairing text that comes from outside. */
#include "util/utf8.h"

size_t psc__utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0], cp, min;
    size_t len;

    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    for (size_t k = 1; k < len; k++) {
        if (k >= n)
            return PSC__UTF8_CUT;
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[k] & 0x3f);
    }
    return cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? 0 : len;
}
