/* What the fuzz targets share: a scratch file or directory per process, and the checks every loaded facts object gets. */
#ifndef PSC_FUZZ_UTIL_H
#define PSC_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "p2pscope/bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A scratch directory of this process (made on first use, removed at exit). */
const char *psc_fuzz_scratch_dir(void);

/* Write data to the scratch file named `name` (e.g. "rec.json"); its path, or NULL. */
const char *psc_fuzz_write_file(const char *name, const uint8_t *data, size_t size);

/* Remove a tree without following any symbolic link in it. */
void psc_fuzz_remove_tree(const char *path);

/*
 * Load a recording and, when it loads, use every reader of the facts: JSON,
 * the doctor, the P2P reasons, the renderers (to /dev/null). Anything wrong
 * in there is a crash or a sanitizer report.
 */
void psc_fuzz_load_and_use(const char *path);

#endif
