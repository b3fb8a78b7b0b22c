/* A JSON run read safely from a file (run_read.h), the one reader of compare's and render's runs. */
#include "report/run_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/p2pscope_private.h"

psc_status_t psc_run_json_read(const char *path, const char *accepted, json_t **doc, char **text, size_t *len,
                               char *err, size_t errlen)
{
    json_error_t jerr;
    char *buf = NULL;
    size_t n = 0;
    json_t *d;
    psc_status_t st = psc_read_file_bounded(path, PSC_RUN_MAX_FILE, &buf, &n, err, errlen);

    if (st != PSC_OK) {
        size_t used = strlen(err);

        if (st != PSC_ERR_NO_MEMORY && used < errlen)
            snprintf(err + used, errlen - used, " (%s)", accepted);
        return st;
    }
    d = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &jerr);
    if (!d) {
        /* jansson's text may quote the file: no control character reaches the one line */
        for (char *c = jerr.text; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
        snprintf(err, errlen, "%s: not valid JSON (line %d: %s) (%s)", path, jerr.line, jerr.text, accepted);
        free(buf);
        return PSC_ERR_INVALID;
    }
    *doc = d;
    if (text) {
        *text = buf;
        *len = n;
    } else {
        free(buf);
    }
    return PSC_OK;
}
