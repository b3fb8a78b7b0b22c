/*
 * Write-combining copies (see wc_copy.h). The mapping's side is accessed
 * through volatile pointers of the exact width so the compiler neither
 * merges, splits nor turns the loops into a memcpy call (whose accesses on
 * uncached memory are not ours to choose); the host side is read and written
 * with memcpy of fixed sizes, which compiles to single unaligned moves.
 */
#include "gpumap/wc_copy.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define PSC__WC_X86 1
#endif

#define PSC__WC_RUN 64 /* a write-combining buffer: one cache line */

psc_wc_level_t psc__wc_best(void)
{
#if PSC__WC_X86
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("sse4.1") ? PSC_WC_AVX : PSC_WC_SSE2;
#else
    return PSC_WC_PLAIN;
#endif
}

/* The widest access of 8, 4, 2 or 1 bytes that addr is aligned for and n covers. */
static size_t psc__wc_width(uintptr_t addr, size_t n)
{
    size_t w = 8;

    while (w > 1 && ((addr & (w - 1)) || n < w))
        w >>= 1;
    return w;
}

/* n bytes in scalar stores, each naturally aligned on the mapping's side. */
static void psc__wc_store_plain(unsigned char *d, const unsigned char *s, size_t n)
{
    while (n) {
        size_t w = psc__wc_width((uintptr_t)d, n);

        switch (w) {
        case 8: { uint64_t v; memcpy(&v, s, 8); *(volatile uint64_t *)(void *)d = v; break; }
        case 4: { uint32_t v; memcpy(&v, s, 4); *(volatile uint32_t *)(void *)d = v; break; }
        case 2: { uint16_t v; memcpy(&v, s, 2); *(volatile uint16_t *)(void *)d = v; break; }
        default: *(volatile uint8_t *)d = *s; break;
        }
        d += w, s += w, n -= w;
    }
}

static void psc__wc_load_plain(unsigned char *d, const unsigned char *s, size_t n)
{
    while (n) {
        size_t w = psc__wc_width((uintptr_t)s, n);

        switch (w) {
        case 8: { uint64_t v = *(const volatile uint64_t *)(const void *)s; memcpy(d, &v, 8); break; }
        case 4: { uint32_t v = *(const volatile uint32_t *)(const void *)s; memcpy(d, &v, 4); break; }
        case 2: { uint16_t v = *(const volatile uint16_t *)(const void *)s; memcpy(d, &v, 2); break; }
        default: *d = *(const volatile uint8_t *)s; break;
        }
        d += w, s += w, n -= w;
    }
}

#if PSC__WC_X86
/* Bytes before p reaches a multiple of `align`, at most n. */
static size_t psc__wc_head(uintptr_t p, size_t align, size_t n)
{
    size_t h = (align - (p & (align - 1))) & (align - 1);

    return h < n ? h : n;
}

/* Whole 64-byte runs to a 64-byte-aligned d; returns the bytes copied. */
static size_t psc__wc_runs_sse2(unsigned char *d, const unsigned char *s, size_t n)
{
    size_t done = 0;

    for (; n - done >= PSC__WC_RUN; done += PSC__WC_RUN) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + done));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + done + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + done + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + done + 48));

        _mm_stream_si128((__m128i *)(void *)(d + done), a);
        _mm_stream_si128((__m128i *)(void *)(d + done + 16), b);
        _mm_stream_si128((__m128i *)(void *)(d + done + 32), c);
        _mm_stream_si128((__m128i *)(void *)(d + done + 48), e);
    }
    return done;
}

__attribute__((target("avx"))) static size_t psc__wc_runs_avx(unsigned char *d, const unsigned char *s, size_t n)
{
    size_t done = 0;

    for (; n - done >= PSC__WC_RUN; done += PSC__WC_RUN) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(s + done));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(s + done + 32));

        _mm256_stream_si256((__m256i *)(void *)(d + done), a);
        _mm256_stream_si256((__m256i *)(void *)(d + done + 32), b);
    }
    _mm256_zeroupper();
    return done;
}

/* Whole 64-byte runs from a 64-byte-aligned s (16 would do for the loads); returns the bytes copied. */
static size_t psc__wc_loads_sse2(unsigned char *d, const unsigned char *s, size_t n)
{
    size_t done = 0;

    for (; n - done >= PSC__WC_RUN; done += PSC__WC_RUN) {
        __m128i a = _mm_load_si128((const __m128i *)(const void *)(s + done));
        __m128i b = _mm_load_si128((const __m128i *)(const void *)(s + done + 16));
        __m128i c = _mm_load_si128((const __m128i *)(const void *)(s + done + 32));
        __m128i e = _mm_load_si128((const __m128i *)(const void *)(s + done + 48));

        _mm_storeu_si128((__m128i *)(void *)(d + done), a);
        _mm_storeu_si128((__m128i *)(void *)(d + done + 16), b);
        _mm_storeu_si128((__m128i *)(void *)(d + done + 32), c);
        _mm_storeu_si128((__m128i *)(void *)(d + done + 48), e);
    }
    return done;
}

/* The same with streaming loads (movntdqa), which fetch a write-combined line once instead of four times. */
__attribute__((target("avx"))) static size_t psc__wc_loads_stream(unsigned char *d, const unsigned char *s,
                                                                   size_t n)
{
    size_t done = 0;

    for (; n - done >= PSC__WC_RUN; done += PSC__WC_RUN) {
        __m128i a = _mm_stream_load_si128((__m128i *)(uintptr_t)(s + done));
        __m128i b = _mm_stream_load_si128((__m128i *)(uintptr_t)(s + done + 16));
        __m128i c = _mm_stream_load_si128((__m128i *)(uintptr_t)(s + done + 32));
        __m128i e = _mm_stream_load_si128((__m128i *)(uintptr_t)(s + done + 48));

        _mm_storeu_si128((__m128i *)(void *)(d + done), a);
        _mm_storeu_si128((__m128i *)(void *)(d + done + 16), b);
        _mm_storeu_si128((__m128i *)(void *)(d + done + 32), c);
        _mm_storeu_si128((__m128i *)(void *)(d + done + 48), e);
    }
    return done;
}
#endif

void psc__wc_write(void *dst, const void *src, size_t n, psc_wc_level_t level)
{
    unsigned char *d = dst;
    const unsigned char *s = src;

    if (level > psc__wc_best())
        level = psc__wc_best();
#if PSC__WC_X86
    if (level != PSC_WC_PLAIN) {
        size_t h = psc__wc_head((uintptr_t)d, PSC__WC_RUN, n), done;

        if (n - h >= PSC__WC_RUN) { /* else no whole run: all scalar */
            psc__wc_store_plain(d, s, h);
            d += h, s += h, n -= h;
            done = level == PSC_WC_AVX ? psc__wc_runs_avx(d, s, n) : psc__wc_runs_sse2(d, s, n);
            d += done, s += done, n -= done;
        }
    }
    psc__wc_store_plain(d, s, n);
    _mm_sfence(); /* non-temporal and write-combined stores are weakly ordered: drain them before any later store */
#else
    (void)level;
    psc__wc_store_plain(d, s, n);
#if defined(__aarch64__)
    /* the GPU is the observer, beyond the inner-shareable domain a C11 fence (dmb ish) orders for */
    __asm__ volatile("dmb oshst" ::: "memory");
#else
    atomic_thread_fence(memory_order_seq_cst);
#endif
#endif
}

void psc__wc_read(void *dst, const void *src, size_t n, psc_wc_level_t level)
{
    unsigned char *d = dst;
    const unsigned char *s = src;

    if (level > psc__wc_best())
        level = psc__wc_best();
#if PSC__WC_X86
    if (level != PSC_WC_PLAIN) {
        /* runs from a whole line: each run's four streaming loads then share one line's fetch */
        size_t h = psc__wc_head((uintptr_t)s, PSC__WC_RUN, n), done;

        if (n - h >= PSC__WC_RUN) {
            psc__wc_load_plain(d, s, h);
            d += h, s += h, n -= h;
            done = level == PSC_WC_AVX ? psc__wc_loads_stream(d, s, n) : psc__wc_loads_sse2(d, s, n);
            d += done, s += done, n -= done;
        }
    }
#else
    (void)level;
#endif
    psc__wc_load_plain(d, s, n);
}
