/* Pattern fill, poison and on-GPU check of buffers. */
#ifndef PSC_VERIFY_VERIFY_H
#define PSC_VERIFY_VERIFY_H

#include <string.h>

#include "mem/buffer.h"

/* Fill the buffer with the pattern of `seed` on its GPU, and wait. */
psc_status_t psc__pattern_fill(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed);

typedef struct {
    uint64_t bad_bytes;
    int64_t first_bad;  /* -1 when none */
    uint8_t expected, found;
} psc_check_t;

/* Check the buffer against the pattern of `seed` on its GPU; *out is the verdict. */
psc_status_t psc__pattern_check(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed,
                                psc_check_t *out);

/* Check n buffers (at most PSC_MAX_XFERS) at once: every GPU checks one of its own at a time, the CPU the pageable ones. */
psc_status_t psc__pattern_check_many(psc_context_t *ctx, const psc_buffer_t *const *b, const uint64_t *seed, int n,
                                     psc_check_t *out);

/* Test hook: flip one byte of the buffer, and wait. */
psc_status_t psc__flip_byte(psc_context_t *ctx, const psc_buffer_t *b, uint64_t offset);

/* Fold one sample's check into a report. */
void psc__verify_report_add(psc_verify_report_t *r, const psc_check_t *c);

#endif
