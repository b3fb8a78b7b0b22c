/*
 * Fill and check whole buffers with a data pattern: on the buffer's GPU with
 * the one fill and check kernel family, on the CPU for pageable memory; and
 * the one fold of "bad bytes, and the first of them" every check reports.
 */
#ifndef PSC_PATTERN_CHECK_H
#define PSC_PATTERN_CHECK_H

#include "mem/buffer.h"
#include "pattern/pattern.h"

/* A check's verdict: how many bytes differ, and the first of them. */
typedef struct {
    uint64_t bad_bytes;
    int64_t first_bad;  /* -1 when none */
    uint8_t expected, found;
} psc_check_t;

#define PSC_CHECK_CLEAN ((psc_check_t){0, -1, 0, 0})

/*
 * The fold: c's bad bytes add to acc's, and acc keeps the first bad byte it
 * was given (earlier folds win). Returns 1 when c's first bad byte became
 * acc's, so a caller can note where it came from.
 */
static inline int psc__check_fold(psc_check_t *acc, const psc_check_t *c)
{
    acc->bad_bytes += c->bad_bytes;
    if (!c->bad_bytes || c->first_bad < 0 || acc->first_bad >= 0)
        return 0;
    acc->first_bad = c->first_bad;
    acc->expected = c->expected;
    acc->found = c->found;
    return 1;
}

/* The same fold into a public report's four fields (bad bytes, first bad offset, expected, found). */
static inline int psc__check_fold_fields(uint64_t *bad_bytes, int64_t *first_bad, uint8_t *expected, uint8_t *found,
                                         const psc_check_t *c)
{
    psc_check_t acc = {*bad_bytes, *first_bad, *expected, *found};
    int first = psc__check_fold(&acc, c);

    *bad_bytes = acc.bad_bytes;
    *first_bad = acc.first_bad;
    *expected = acc.expected;
    *found = acc.found;
    return first;
}

/* One byte compared: a bad one folds in as a check of its own. */
static inline void psc__check_byte(psc_check_t *acc, uint64_t off, uint8_t want, uint8_t got)
{
    psc_check_t one = {1, (int64_t)off, want, got};

    if (want != got)
        psc__check_fold(acc, &one);
}

/* Fill the buffer as e says, on its GPU (the CPU for pageable memory), and wait. */
psc_status_t psc__expect_fill(psc_context_t *ctx, const psc_buffer_t *b, const psc_expect_t *e);

/* Check n buffers (at most PSC_MAX_XFERS) against e[i]: each GPU checks one of its own at a time, the CPU the pageable ones. */
psc_status_t psc__expect_check_many(psc_context_t *ctx, const psc_buffer_t *const *b, const psc_expect_t *e, int n,
                                    psc_check_t *out);

/* Check one buffer against e. */
psc_status_t psc__expect_check(psc_context_t *ctx, const psc_buffer_t *b, const psc_expect_t *e, psc_check_t *out);

/* The RANDOM pattern of `seed` over a whole buffer: what a bandwidth or latency copy carries. */
psc_status_t psc__pattern_fill(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed);
psc_status_t psc__pattern_check(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed, psc_check_t *out);
psc_status_t psc__pattern_check_many(psc_context_t *ctx, const psc_buffer_t *const *b, const uint64_t *seed, int n,
                                     psc_check_t *out);

/* Test hook: flip one byte of the buffer (xor 0x5A), and wait. */
psc_status_t psc__pattern_flip(psc_context_t *ctx, const psc_buffer_t *b, uint64_t offset);

/* Fold one sample's check into a bandwidth report (a sample with bad bytes counts once). */
void psc__check_report_add(psc_verify_report_t *r, const psc_check_t *c);

#endif
