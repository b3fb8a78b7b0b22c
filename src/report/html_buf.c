/* The writers' growing text buffer (html_buf.h), and XML escaping of text from outside. */
#include "html_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/p2pscope_private.h"

void psc_buf_add(psc_buf_t *b, const char *s, size_t n)
{
    if (b->bad)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *p;

        while (cap < b->len + n + 1)
            cap *= 2;
        if (!(p = realloc(b->p, cap))) {
            b->bad = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void psc_buf_puts(psc_buf_t *b, const char *s)
{
    psc_buf_add(b, s, strlen(s));
}

void psc_buf_printf(psc_buf_t *b, const char *fmt, ...)
{
    char small[512], *big;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->bad = 1;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        psc_buf_add(b, small, (size_t)n);
        return;
    }
    if (!(big = malloc((size_t)n + 1))) {
        b->bad = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    psc_buf_add(b, big, (size_t)n);
    free(big);
}

void psc_buf_clean(psc_buf_t *b, const char *s, const char *keep, const char *(*sub)(unsigned char c))
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t left = strlen((const char *)p);

    while (*p) {
        size_t n = psc_utf8_seq(p, left);
        const char *with;
        char hex[8];

        if (n == 0 || n == PSC_UTF8_CUT) { /* cut short by the end: not UTF-8 either */
            psc_buf_puts(b, "\xef\xbf\xbd"); /* U+FFFD */
            p++;
            left--;
            continue;
        }
        if ((n == 1 && ((*p < 0x20 && !strchr(keep, *p)) || *p == 0x7f)) || (n == 2 && p[0] == 0xc2 && p[1] <= 0x9f)) {
            snprintf(hex, sizeof(hex), "\\x%02x", n == 1 ? p[0] : p[1]);
            psc_buf_puts(b, hex);
        } else if (n == 1 && sub && (with = sub(*p)) != NULL) {
            psc_buf_puts(b, with);
        } else {
            psc_buf_add(b, (const char *)p, n);
        }
        p += n;
        left -= n;
    }
}

static const char *psc__entity(unsigned char c)
{
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&#39;";
    default: return NULL;
    }
}

void psc_buf_esc(psc_buf_t *b, const char *s)
{
    psc_buf_clean(b, s, "\t\n", psc__entity);
}

char *psc_buf_take(psc_buf_t *b)
{
    char *p = b->bad ? NULL : b->p;

    if (b->bad)
        free(b->p);
    else if (!p)
        p = calloc(1, 1);
    b->p = NULL;
    b->len = b->cap = 0;
    b->bad = 0;
    return p;
}

void psc_buf_free(psc_buf_t *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->bad = 0;
}

const char psc_page_css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Arial,sans-serif;margin:24px auto;"
    "max-width:1320px;padding:0 16px;color:#202020;background:#fff;line-height:1.4}"
    "h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:36px}"
    "h3{font-size:16px;margin:24px 0 6px}.sub{color:#555;margin:0 0 16px}"
    "table{border-collapse:collapse;margin:8px 0 12px;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "table.kv th{width:220px}"
    "figure{margin:8px 0 16px;overflow-x:auto}figure svg{display:block}"
    "figcaption{font-size:12px;color:#555}"
    ".sev-error{background:#fde2e1}.sev-warning{background:#fff3cd}.sev-info{background:#e7f1fb}"
    ".fail{color:#b00020;font-weight:bold}.note{font-size:13px;color:#444}"
    "nav a{margin-right:14px}code{font-size:12px}summary{cursor:pointer;font-size:13px;color:#333}";
