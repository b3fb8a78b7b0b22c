/*
 * A JSON run read from a file for compare and render: a regular file only (a FIFO or device refused before it
 * is opened), at most PSC_RUN_MAX_FILE bytes, parsed with duplicate keys refused; whatever is wrong is one line.
 */
#ifndef PSC_REPORT_RUN_READ_H
#define PSC_REPORT_RUN_READ_H

#include <jansson.h>
#include <stddef.h>

#include "p2pscope/bench.h"

/* Runs larger than this are refused before they are parsed (a 16-GPU report with sweeps is a few MiB; jansson
 * holds about 21 times the file's size in memory). */
#define PSC_RUN_MAX_FILE (32u << 20)

/*
 * path's JSON into *doc (and its text into *text, *len when text is not NULL: free it); PSC_ERR_INVALID (not
 * JSON), PSC_ERR_IO (not readable) with one line in err naming the file, what was wrong and then "(accepted)";
 * PSC_ERR_NO_MEMORY. Outputs written only on success.
 */
psc_status_t psc_run_json_read(const char *path, const char *accepted, json_t **doc, char **text, size_t *len,
                               char *err, size_t errlen);

#endif
