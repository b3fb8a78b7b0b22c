/* Text from outside made safe for a terminal (text.h), and psc_report_printf, which every writer prints through. */
#include "text.h"

#include "lib/p2pscope_private.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

size_t psc_text_escape(const char *in, const char *keep, char *out, size_t len)
{
    size_t pos = 0;

    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        int c1 = p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
        size_t seq = *p < 0x80 ? 1 : psc_utf8_seq(p, strnlen((const char *)p, 4));
        char esc[16];
        size_t n;

        if (c1)
            n = (size_t)snprintf(esc, sizeof(esc), "\\x%02x\\x%02x", p[0], p[1]);
        else if (((*p < 0x20 || *p == 0x7f) && !(keep && strchr(keep, *p))) || seq == 0 || seq == PSC_UTF8_CUT)
            n = (size_t)snprintf(esc, sizeof(esc), "\\x%02x", *p); /* a control, or a byte that is not UTF-8 */
        else /* one character: its whole sequence */
            memcpy(esc, p, seq), esc[seq] = '\0', n = seq, p += seq - 1;
        p += c1;
        for (size_t k = 0; k < n; k++, pos++)
            if (pos + 1 < len)
                out[pos] = esc[k];
    }
    if (len)
        out[pos < len ? pos : len - 1] = '\0';
    return pos;
}

int psc_report_printf(FILE *f, const char *fmt, ...)
{
    char small[1024], *text = small, *safe;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return n;
    if ((size_t)n >= sizeof(small)) {
        text = malloc((size_t)n + 1);
        if (!text)
            return -1;
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    /* At most 8 bytes out for each byte in ("\xc2\x9b" for two). */
    safe = malloc((size_t)n * 4 + 1);
    if (safe) {
        psc_text_escape(text, "\n\t", safe, (size_t)n * 4 + 1);
        n = fputs(safe, f) < 0 ? -1 : (int)strlen(safe);
    } else {
        n = -1;
    }
    free(safe);
    if (text != small)
        free(text);
    return n;
}
