/*
 * The shared-memory message another process sends: what the exporter
 * writes reads back the same, and every field a forger or a bug could get
 * wrong is refused with a reason naming it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "share/share_msg.h"

static psc_share_hdr_t sample(psc_share_kind_t kind)
{
    psc_share_hdr_t h;

    memset(&h, 0, sizeof(h));
    h.kind = kind;
    h.size = kind == PSC_SHARE_EVENT ? 0 : 1000003;
    h.alloc_size = kind == PSC_SHARE_EVENT ? 0 : 2u << 20;
    h.pid = 42; /* one byte: a test sets it to 0 */
    strcpy(h.uuid, "GPU-5c6e8ae8-9cd6-8d25-d0ef-be721e5f66d9");
    if (kind != PSC_SHARE_VMM_FD)
        for (int i = 0; i < PSC_SHARE_HANDLE_LEN; i++)
            h.handle[i] = (unsigned char)(i * 7 + 1);
    return h;
}

static void test_round_trip(void **state)
{
    psc_share_kind_t kinds[] = {PSC_SHARE_LEGACY, PSC_SHARE_VMM_FD, PSC_SHARE_VMM_FABRIC, PSC_SHARE_EVENT};

    (void)state;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        psc_share_hdr_t h = sample(kinds[k]), back;
        unsigned char b[PSC_SHARE_MSG_LEN];
        char why[256] = "";

        psc__share_msg_encode(&h, b);
        assert_int_equal(psc__share_msg_decode(b, kinds[k] == PSC_SHARE_VMM_FD ? 7 : -1, &back, why, sizeof(why)),
                         PSC_OK);
        assert_memory_equal(&h, &back, sizeof(h));
        assert_int_equal(b[0], 'P'); /* little-endian "PSC1" */
        assert_int_equal(b[3], '1');
    }
}

/* Encode a good legacy message, spoil it, and expect the refusal to name the field. */
typedef struct {
    size_t off;      /* byte to change */
    unsigned char v; /* its new value */
    const char *why;
} spoil_t;

static void test_forged(void **state)
{
    static const spoil_t cases[] = {
        {0, 'X', "magic"},
        {4, 2, "version 2"},
        {6, 0, "kind 0"},
        {6, 5, "kind 5"},
        {8 + 7, 0x7f, "size"},            /* the size far beyond the allocation */
        {16 + 5, 0x10, "at most 1 TiB"},  /* an allocation of 16 TiB */
        {24, 0, "process id 0"},
        {24 + 3, 0x80, "process id"},     /* a negative pid */
        {28, 1, "reserved"},
        {32, 'X', "UUID"},                /* "XPU-" */
        {32 + 10, 'g', "UUID"},           /* not a hex digit */
        {32 + 47, 'A', "UUID"},           /* no terminating NUL */
        {32 + 45, 'A', "UUID"},           /* text after the NUL */
        {PSC_SHARE_MSG_LEN - 1, 1, "reserved"},
    };
    psc_share_hdr_t h = sample(PSC_SHARE_LEGACY), out;
    unsigned char good[PSC_SHARE_MSG_LEN];

    (void)state;
    psc__share_msg_encode(&h, good);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unsigned char b[PSC_SHARE_MSG_LEN];
        char why[256] = "";

        memcpy(b, good, sizeof(b));
        b[cases[i].off] = cases[i].v;
        memset(&out, 0x5A, sizeof(out));
        if (psc__share_msg_decode(b, -1, &out, why, sizeof(why)) != PSC_ERR_INVALID)
            fail_msg("byte %zu = 0x%02x: accepted", cases[i].off, cases[i].v);
        if (!strstr(why, cases[i].why))
            fail_msg("byte %zu = 0x%02x: \"%s\" does not name %s", cases[i].off, cases[i].v, why, cases[i].why);
        assert_int_equal(((unsigned char *)&out)[0], 0x5A); /* nothing written on a refusal */
    }
}

static void test_descriptor_and_handle_rules(void **state)
{
    unsigned char b[PSC_SHARE_MSG_LEN];
    psc_share_hdr_t h, out;
    char why[256];

    (void)state;
    h = sample(PSC_SHARE_VMM_FD); /* a VMM_FD message needs its descriptor */
    psc__share_msg_encode(&h, b);
    assert_int_equal(psc__share_msg_decode(b, -1, &out, why, sizeof(why)), PSC_ERR_INVALID);
    assert_non_null(strstr(why, "no file descriptor came with it"));
    assert_int_equal(psc__share_msg_decode(b, 0, &out, why, sizeof(why)), PSC_OK); /* 0 is a descriptor */
    h.handle[9] = 1; /* and carries no handle */
    psc__share_msg_encode(&h, b);
    assert_int_equal(psc__share_msg_decode(b, 5, &out, why, sizeof(why)), PSC_ERR_INVALID);
    assert_non_null(strstr(why, "handle bytes set"));

    h = sample(PSC_SHARE_LEGACY); /* the other kinds: a handle, no descriptor */
    psc__share_msg_encode(&h, b);
    assert_int_equal(psc__share_msg_decode(b, 5, &out, why, sizeof(why)), PSC_ERR_INVALID);
    assert_non_null(strstr(why, "a file descriptor came with it"));
    memset(h.handle, 0, sizeof(h.handle));
    psc__share_msg_encode(&h, b);
    assert_int_equal(psc__share_msg_decode(b, -1, &out, why, sizeof(why)), PSC_ERR_INVALID);
    assert_non_null(strstr(why, "no handle"));

    h = sample(PSC_SHARE_LEGACY); /* sizes: 1 B up to the allocation */
    h.size = 0;
    psc__share_msg_encode(&h, b);
    assert_int_equal(psc__share_msg_decode(b, -1, &out, why, sizeof(why)), PSC_ERR_INVALID);
    h.size = h.alloc_size;
    psc__share_msg_encode(&h, b);
    assert_int_equal(psc__share_msg_decode(b, -1, &out, why, sizeof(why)), PSC_OK);
    h.size = h.alloc_size + 1;
    psc__share_msg_encode(&h, b);
    assert_int_equal(psc__share_msg_decode(b, -1, &out, why, sizeof(why)), PSC_ERR_INVALID);
    h.size = h.alloc_size = PSC_SHARE_MAX_BYTES; /* 1 TiB: the largest */
    psc__share_msg_encode(&h, b);
    assert_int_equal(psc__share_msg_decode(b, -1, &out, why, sizeof(why)), PSC_OK);

    h = sample(PSC_SHARE_EVENT); /* an event has no size */
    h.size = h.alloc_size = 4096;
    psc__share_msg_encode(&h, b);
    assert_int_equal(psc__share_msg_decode(b, -1, &out, why, sizeof(why)), PSC_ERR_INVALID);
    assert_non_null(strstr(why, "an event with a size"));

    h = sample(PSC_SHARE_LEGACY); /* MIG instances spell their UUIDs "MIG-" */
    strcpy(h.uuid, "MIG-5c6e8ae8-9cd6-8d25-d0ef-be721e5f66d9");
    psc__share_msg_encode(&h, b);
    assert_int_equal(psc__share_msg_decode(b, -1, &out, why, sizeof(why)), PSC_OK);
    assert_int_equal(psc__share_msg_decode(b, -1, &out, NULL, 0), PSC_OK); /* no buffer for a reason: fine */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_forged),
        cmocka_unit_test(test_descriptor_and_handle_rules),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
