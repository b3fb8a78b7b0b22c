/*
 * psc_share_* on the fake driver, whose VMM allocations are memfds: an
 * allocation exported as a descriptor and imported (here, by the same
 * process, which the driver allows for VMM) is the same bytes at another
 * address, with access for exactly the GPUs asked; legacy handles refuse to
 * open in their own process; fabric handles say why they are unsupported;
 * bad messages and GPU lists are refused; nothing leaks.
 */
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_context.h"
#include "process_checks.h"

static int (*vmm_live)(void);
static void (*vmm_fabric)(int);

static int setup(void **state)
{
    void *h;

    psc_test_fake_driver("contexts", "2");
    setenv("FAKE_CUDA_UUID", "7", 1); /* GPUs with UUIDs, which messages name */
    if (psc_test_open_ctx(state) != 0)
        return -1;
    h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return -1;
    *(void **)&vmm_live = dlsym(h, "fake_cuda_vmm_live");
    *(void **)&vmm_fabric = dlsym(h, "fake_cuda_vmm_fabric");
    /* h kept open: the fake stays loaded after psc_context_destroy, so teardown can ask it what is left */
    return vmm_live && vmm_fabric ? 0 : -1;
}

static void test_vmm_fd_round_trip(void **state)
{
    size_t n = 3u << 20; /* not a multiple of the 2 MiB granularity: rounded up */
    int fds = psc_test_open_fds(), gpu1 = 1;
    psc_share_t *mine = NULL, *theirs = NULL;
    psc_share_msg_t msg;
    unsigned acc = 99;
    unsigned char *a, *b;

    (void)state;
    assert_int_equal(psc_share_alloc(g_ctx, PSC_SHARE_VMM_FD, 0, n, &mine), PSC_OK);
    assert_int_equal(psc_share_kind(mine), PSC_SHARE_VMM_FD);
    assert_int_equal(psc_share_size(mine), n);
    assert_int_equal(psc_share_gpu(mine), 0);
    a = psc_share_ptr(mine);
    assert_non_null(a);
    for (size_t i = 0; i < n; i++)
        a[i] = (unsigned char)(i * 13 + 5);
    assert_int_equal(psc_share_export(g_ctx, mine, &msg), PSC_OK);
    assert_true(msg.fd >= 0);

    assert_int_equal(psc_share_import(g_ctx, &msg, &gpu1, 1, &theirs), PSC_OK);
    close(msg.fd); /* the caller's to close once sent: the import holds its own */
    b = psc_share_ptr(theirs);
    assert_ptr_not_equal(a, b);
    assert_int_equal(psc_share_size(theirs), n);
    assert_int_equal(psc_share_gpu(theirs), 0); /* the memory is GPU 0's, mapped for GPU 1 */
    assert_memory_equal(a, b, n);
    b[n - 1] ^= 0xFF; /* one allocation: a write through either address shows through the other */
    assert_int_equal(a[n - 1], (unsigned char)(((n - 1) * 13 + 5) ^ 0xFF));

    /* Access for exactly the GPUs asked, on each side. */
    assert_int_equal(psc_share_access(g_ctx, theirs, 1, &acc), PSC_OK);
    assert_int_equal(acc, PSC_ACCESS_READWRITE);
    assert_int_equal(psc_share_access(g_ctx, theirs, 0, &acc), PSC_OK);
    assert_int_equal(acc, PSC_ACCESS_NONE);
    assert_int_equal(psc_share_access(g_ctx, mine, 0, &acc), PSC_OK);
    assert_int_equal(acc, PSC_ACCESS_READWRITE);
    assert_int_equal(psc_share_access(g_ctx, mine, 1, &acc), PSC_OK);
    assert_int_equal(acc, PSC_ACCESS_NONE);
    acc = 99;
    assert_int_equal(psc_share_access(g_ctx, mine, 2, &acc), PSC_ERR_INVALID);
    assert_int_equal(acc, 99);

    /* Both GPUs of the importer at once. */
    {
        int both[2] = {0, 1};
        psc_share_t *two = NULL;

        assert_int_equal(psc_share_export(g_ctx, mine, &msg), PSC_OK);
        assert_int_equal(psc_share_import(g_ctx, &msg, both, 2, &two), PSC_OK);
        close(msg.fd);
        for (int g = 0; g < 2; g++) {
            assert_int_equal(psc_share_access(g_ctx, two, g, &acc), PSC_OK);
            assert_int_equal(acc, PSC_ACCESS_READWRITE);
        }
        assert_int_equal(psc_share_free(two), PSC_OK);
    }
    assert_int_equal(psc_share_free(theirs), PSC_OK);
    assert_int_equal(psc_share_free(mine), PSC_OK);
    assert_int_equal(vmm_live(), 0);
    assert_int_equal(psc_test_open_fds(), fds);
}

/*
 * An import is released in the context that opened it: a process that imported GPU 0's memory for GPU 1 alone
 * never makes a context on GPU 0 (on H200 that took 130 ms and showed as the release's cost).
 */
static void test_import_released_where_opened(void **state)
{
    int (*retains)(int) = (int (*)(int))psc_test_fake_sym("fake_cuda_retains");
    psc_context_t *other = NULL;
    psc_share_t *mine = NULL, *theirs = NULL;
    psc_share_msg_t msg;
    char err[256];
    int gpu1 = 1, before;

    (void)state;
    assert_non_null(retains);
    assert_int_equal(psc_share_alloc(g_ctx, PSC_SHARE_VMM_FD, 0, 2u << 20, &mine), PSC_OK);
    assert_int_equal(psc_share_export(g_ctx, mine, &msg), PSC_OK);
    assert_int_equal(psc_context_create(&other, err, sizeof(err)), PSC_OK);
    before = retains(0);
    assert_int_equal(psc_share_import(other, &msg, &gpu1, 1, &theirs), PSC_OK);
    close(msg.fd);
    assert_int_equal(psc_share_free(theirs), PSC_OK);
    assert_int_equal(retains(0), before);
    psc_context_destroy(other);
    assert_int_equal(psc_share_free(mine), PSC_OK);
    assert_int_equal(vmm_live(), 0);
}

static void test_legacy_and_fabric(void **state)
{
    psc_share_t *s = NULL, *in = (psc_share_t *)0x1;
    psc_share_msg_t msg;

    (void)state;
    assert_int_equal(psc_share_alloc(g_ctx, PSC_SHARE_LEGACY, 1, 4096, &s), PSC_OK);
    assert_int_equal(psc_share_export(g_ctx, s, &msg), PSC_OK);
    assert_int_equal(msg.fd, -1);
    assert_int_equal(psc_share_import(g_ctx, &msg, NULL, 0, &in), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "exported by this process"));
    assert_ptr_equal(in, (psc_share_t *)0x1);
    assert_int_equal(psc_share_free(s), PSC_OK);

    /* No IMEX channel: unsupported, and why. */
    s = NULL;
    assert_int_equal(psc_share_alloc(g_ctx, PSC_SHARE_VMM_FABRIC, 0, 4096, &s), PSC_ERR_UNSUPPORTED);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "IMEX"));
    assert_null(s);
    assert_int_equal(vmm_live(), 0);
    /* Where the platform allows it: a handle in the bytes, no descriptor. */
    vmm_fabric(1);
    assert_int_equal(psc_share_alloc(g_ctx, PSC_SHARE_VMM_FABRIC, 0, 4096, &s), PSC_OK);
    assert_int_equal(psc_share_export(g_ctx, s, &msg), PSC_OK);
    assert_int_equal(msg.fd, -1);
    in = NULL;
    assert_int_equal(psc_share_import(g_ctx, &msg, NULL, 0, &in), PSC_OK);
    *(volatile char *)psc_share_ptr(s) = 42;
    assert_int_equal(*(volatile char *)psc_share_ptr(in), 42);
    assert_int_equal(psc_share_free(in), PSC_OK);
    assert_int_equal(psc_share_free(s), PSC_OK);
    vmm_fabric(0);
    assert_int_equal(vmm_live(), 0);
}

static void test_bad_input(void **state)
{
    psc_share_t *s = NULL, *in = (psc_share_t *)0x1;
    psc_share_msg_t msg, bad;
    int list[3];

    (void)state;
    assert_int_equal(psc_share_alloc(g_ctx, PSC_SHARE_VMM_FD, 2, 4096, &s), PSC_ERR_INVALID);
    assert_int_equal(psc_share_alloc(g_ctx, PSC_SHARE_VMM_FD, 0, 0, &s), PSC_ERR_INVALID);
    assert_int_equal(psc_share_alloc(g_ctx, PSC_SHARE_EVENT, 0, 4096, &s), PSC_ERR_INVALID);
    assert_int_equal(psc_share_alloc(g_ctx, (psc_share_kind_t)9, 0, 4096, &s), PSC_ERR_INVALID);
    assert_null(s);
    assert_int_equal(psc_share_alloc(g_ctx, PSC_SHARE_VMM_FD, 0, 4096, &s), PSC_OK);
    assert_int_equal(psc_share_export(g_ctx, s, &msg), PSC_OK);

    bad = msg; /* forged bytes */
    bad.bytes[0] ^= 1;
    assert_int_equal(psc_share_import(g_ctx, &bad, NULL, 0, &in), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "magic"));
    bad = msg; /* the descriptor lost on the way */
    bad.fd = -1;
    assert_int_equal(psc_share_import(g_ctx, &bad, NULL, 0, &in), PSC_ERR_INVALID);
    bad = msg; /* a GPU this process does not see */
    bad.bytes[32 + 5] = bad.bytes[32 + 5] == 'a' ? 'b' : 'a';
    assert_int_equal(psc_share_import(g_ctx, &bad, NULL, 0, &in), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "does not see"));

    list[0] = 1;
    list[1] = 1;
    assert_int_equal(psc_share_import(g_ctx, &msg, list, 2, &in), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "twice"));
    list[1] = 2;
    assert_int_equal(psc_share_import(g_ctx, &msg, list, 2, &in), PSC_ERR_INVALID);
    assert_int_equal(psc_share_import(g_ctx, &msg, list, 3, &in), PSC_ERR_INVALID);
    assert_int_equal(psc_share_import(g_ctx, &msg, list, -1, &in), PSC_ERR_INVALID);
    assert_ptr_equal(in, (psc_share_t *)0x1); /* nothing handed out on a refusal */
    assert_int_equal(vmm_live(), 1);         /* and nothing imported */
    close(msg.fd);
    assert_int_equal(psc_share_export(NULL, s, &msg), PSC_ERR_INVALID);
    assert_int_equal(psc_share_export(g_ctx, NULL, &msg), PSC_ERR_INVALID);
    assert_int_equal(psc_share_free(NULL), PSC_OK);
    assert_int_equal(psc_share_free(s), PSC_OK);
}

/* What the application does not free, psc_context_destroy does. */
static void test_destroy_frees(void **state)
{
    psc_context_t *ctx = NULL;
    psc_share_t *s = NULL, *in = NULL;
    psc_share_msg_t msg;
    char err[256];
    int fds = psc_test_open_fds();

    (void)state;
    assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_share_alloc(ctx, PSC_SHARE_VMM_FD, 1, 4096, &s), PSC_OK);
    assert_int_equal(psc_share_export(ctx, s, &msg), PSC_OK);
    assert_int_equal(psc_share_import(ctx, &msg, NULL, 0, &in), PSC_OK);
    close(msg.fd);
    assert_int_equal(vmm_live(), 2);
    psc_context_destroy(ctx);
    assert_int_equal(vmm_live(), 0);
    assert_int_equal(psc_test_open_fds(), fds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vmm_fd_round_trip),
        cmocka_unit_test(test_import_released_where_opened),
        cmocka_unit_test(test_legacy_and_fabric),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_destroy_frees),
    };

    return cmocka_run_group_tests(tests, setup, psc_test_close_ctx);
}
