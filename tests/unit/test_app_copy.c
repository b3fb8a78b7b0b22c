/*
 * psc_copy without a GPU: the route choice (pure), and the call itself on the
 * fake driver, whose copy kernels and cuMemcpyAsync move the bytes on the
 * host so each route's result can be checked: which route ran, on which
 * stream, that the bytes arrived, and that bad input queues nothing.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <cuda.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "fake_context.h"
#include "xfer/route.h"

static void *(*fake_current)(void);
static void (*fake_set_current)(void *);
static void *(*fake_primary)(int);
static int (*fake_peer)(int, int);
static void (*fake_set_peer)(int, int, int);
static void (*fake_run_copies)(int);
static int (*fake_launches)(void);
static int (*fake_memcpys)(void);
static const char *(*fake_last_kernel)(void);
static unsigned (*fake_last_grid)(void);
static unsigned (*fake_last_block)(void);
static void *(*fake_last_stream)(void);
static void *(*fake_foreign_stream)(void);
static void (*fake_mark_managed)(const void *);
static int (*fake_nops)(void);
static int (*fake_op)(int, void **, void **);
static void (*fake_fail_launches)(int);
static void *(*fake_op_ctx)(int);
static void (*fake_capture_set)(void *, unsigned long long);
static int (*fake_ptr_queries)(int);
static int (*fake_set_current_calls)(void);
static int (*fake_peer_memcpys)(void);
static void (*fake_peer_last)(int *, int *);
static void (*fake_replay_copies)(int);
static CUresult (*get_proc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

/* A driver entry point of the fake, as the library gets it. */
static void *fake_fn(const char *name)
{
    CUdriverProcAddressQueryResult st;
    void *fn = NULL;

    get_proc(name, &fn, 12000, 0, &st);
    return fn;
}

/* n bytes of device memory on GPU g (allocated in its primary context, as the runtime would). */
static void *dev_alloc(int g, size_t n)
{
    CUresult (*mem_alloc)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))fake_fn("cuMemAlloc");
    void *was = fake_current();
    CUdeviceptr d = 0;

    fake_set_current(fake_primary(g));
    assert_int_equal(mem_alloc(&d, n), CUDA_SUCCESS);
    fake_set_current(was);
    return (void *)(uintptr_t)d;
}

static void dev_free(void *p)
{
    CUresult (*mem_free)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))fake_fn("cuMemFree");

    mem_free((CUdeviceptr)(uintptr_t)p);
}

static void *pinned_alloc(size_t n)
{
    CUresult (*host_alloc)(void **, size_t, unsigned) = (CUresult(*)(void **, size_t, unsigned))fake_fn("cuMemHostAlloc");
    void *p = NULL;

    assert_int_equal(host_alloc(&p, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
    return p;
}

static void pinned_free(void *p)
{
    CUresult (*free_host)(void *) = (CUresult(*)(void *))fake_fn("cuMemFreeHost");

    free_host(p);
}

/* A stream of GPU g's primary context. */
static CUstream stream_on(int g)
{
    CUresult (*create)(CUstream *, unsigned) = (CUresult(*)(CUstream *, unsigned))fake_fn("cuStreamCreate");
    void *was = fake_current();
    CUstream s = NULL;

    fake_set_current(fake_primary(g));
    assert_int_equal(create(&s, 0), CUDA_SUCCESS);
    fake_set_current(was);
    return s;
}

static void stream_free(CUstream s)
{
    CUresult (*destroy)(CUstream) = (CUresult(*)(CUstream))fake_fn("cuStreamDestroy");

    destroy(s);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 131 + (i >> 8));
}

static int setup(void **state)
{
    void *h;

    psc_test_fake_driver("contexts", "2");
    if (psc_test_open_ctx(state) != 0)
        return -1;
    h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return -1;
    *(void **)&fake_current = dlsym(h, "fake_cuda_current");
    *(void **)&fake_set_current = dlsym(h, "fake_cuda_set_current");
    *(void **)&fake_primary = dlsym(h, "fake_cuda_primary");
    *(void **)&fake_peer = dlsym(h, "fake_cuda_peer");
    *(void **)&fake_set_peer = dlsym(h, "fake_cuda_set_peer");
    *(void **)&fake_run_copies = dlsym(h, "fake_cuda_run_copies");
    *(void **)&fake_launches = dlsym(h, "fake_cuda_launches");
    *(void **)&fake_memcpys = dlsym(h, "fake_cuda_memcpys");
    *(void **)&fake_last_kernel = dlsym(h, "fake_cuda_last_kernel");
    *(void **)&fake_last_grid = dlsym(h, "fake_cuda_last_grid");
    *(void **)&fake_last_block = dlsym(h, "fake_cuda_last_block");
    *(void **)&fake_last_stream = dlsym(h, "fake_cuda_last_stream");
    *(void **)&fake_foreign_stream = dlsym(h, "fake_cuda_foreign_stream");
    *(void **)&fake_mark_managed = dlsym(h, "fake_cuda_mark_managed");
    *(void **)&fake_nops = dlsym(h, "fake_cuda_nops");
    *(void **)&fake_op = dlsym(h, "fake_cuda_op");
    *(void **)&fake_fail_launches = dlsym(h, "fake_cuda_fail_launches");
    *(void **)&fake_op_ctx = dlsym(h, "fake_cuda_op_ctx");
    *(void **)&fake_capture_set = dlsym(h, "fake_cuda_capture_set");
    *(void **)&get_proc = dlsym(h, "cuGetProcAddress_v2");
    *(void **)&fake_ptr_queries = dlsym(h, "fake_cuda_ptr_queries");
    *(void **)&fake_set_current_calls = dlsym(h, "fake_cuda_set_current_calls");
    *(void **)&fake_peer_memcpys = dlsym(h, "fake_cuda_peer_memcpys");
    *(void **)&fake_peer_last = dlsym(h, "fake_cuda_peer_last");
    *(void **)&fake_replay_copies = dlsym(h, "fake_cuda_graph_replay_copies");
    dlclose(h);
    if (!fake_run_copies || !get_proc || !fake_foreign_stream || !fake_op || !fake_fail_launches || !fake_op_ctx ||
        !fake_capture_set || !fake_ptr_queries || !fake_set_current_calls || !fake_peer_memcpys || !fake_peer_last ||
        !fake_replay_copies)
        return -1;
    fake_run_copies(1);
    return 0;
}

static int teardown(void **state)
{
    fake_run_copies(0);
    return psc_test_close_ctx(state);
}

/* ------------------------------------------------------------ the pure choice */

static psc_copy_path_t path_of(int src, int dst, int stream_gpu, uint64_t n)
{
    psc_copy_path_t p;

    memset(&p, 0, sizeof(p));
    p.src = (psc_endpoint_t){src, 0, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE, 0x10000};
    p.dst = (psc_endpoint_t){dst, 0, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE, 0x20000};
    p.stream_gpu = stream_gpu;
    p.n = n;
    p.aligned = 1;
    p.far = -1;
    return p;
}

/* The path with the far GPU's view looked at: it may read and write both ends. */
static psc_copy_path_t path_far(int src, int dst, int stream_gpu, uint64_t n)
{
    psc_copy_path_t p = path_of(src, dst, stream_gpu, n);

    p.far = src == stream_gpu ? dst : src;
    p.far_src = p.src;
    p.far_dst = p.dst;
    p.far_aligned = 1;
    return p;
}

static void test_defaults(void **state)
{
    psc_copy_path_t p = path_of(0, 1, 1, 1 << 20);
    psc_route_t r;

    (void)state;
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_SM);
    assert_int_equal(r.issuer, 1);
    assert_int_equal(r.stream_gpu, 1);
    assert_int_equal(r.src, 0);
    assert_int_equal(r.dst, 1);
    assert_int_equal(r.calibrated, 0);
    assert_int_equal(r.peer_off, 0);
    assert_non_null(strstr(r.why, "built-in"));
    assert_non_null(strstr(r.why, "gpu0 -> gpu1"));

    p.n = PSC_ROUTE_SM_PEER_MAX; /* the last size the SM kernel takes */
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_SM);
    p.n = PSC_ROUTE_SM_PEER_MAX + 1;
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);

    p = path_of(0, 0, 0, 4096); /* inside one GPU */
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    p = path_of(PSC_HOST, 0, 0, 4096);
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_non_null(strstr(r.why, "host -> gpu0"));
}

static void test_sm_blocked(void **state)
{
    psc_copy_path_t p = path_of(0, 1, 1, 4096);
    psc_route_t r;

    (void)state;
    p.src.access = 0; /* gpu1 cannot read gpu0's memory: peer access off */
    p.src.dptr = 0;
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_int_equal(r.peer_off, 1);
    assert_non_null(strstr(r.why, "psc_peer_enable"));

    p = path_of(0, 1, 0, 4096);
    p.dst.access = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ; /* read-only destination: no kernel writes */
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);

    p = path_of(0, 1, 1, 1 << 20);
    p.aligned = 0; /* too large to go byte by byte */
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_int_equal(r.peer_off, 0);
    p.n = PSC_ROUTE_SM_UNALIGNED_MAX;
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_SM);

    p = path_of(0, 1, 1, 4096);
    p.dst.managed = 1;
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_non_null(strstr(r.why, "managed"));
}

/* A calibration where the SM kernel wins below 1 MiB and the copy engine from 1 MiB, on gpu0 -> gpu1 by gpu0. */
static psc_calibration_t *cal_make(void)
{
    static psc_cal_route_t routes[2];
    static psc_calibration_t cal;
    uint64_t sizes[4] = {4096, 65536, 1 << 20, 16 << 20};
    double sm[4] = {3, 4, 12, 100}, ce[4] = {8, 9, 10, 50};

    memset(routes, 0, sizeof(routes));
    for (int k = 0; k < 2; k++) {
        routes[k] = (psc_cal_route_t){.src = 0, .dst = 1, .stream_gpu = 0, .issuer = 0, .nsizes = 4};
        routes[k].engine = k ? PSC_ENGINE_SM : PSC_ENGINE_CE;
        memcpy(routes[k].size, sizes, sizeof(sizes));
        memcpy(routes[k].us, k ? sm : ce, sizeof(sm));
    }
    memset(&cal, 0, sizeof(cal));
    cal.ngpu = 2;
    cal.nroute = 2;
    cal.route = routes;
    return &cal;
}

static void test_calibrated(void **state)
{
    psc_calibration_t *cal = cal_make();
    psc_copy_path_t p = path_of(0, 1, 0, 65536);
    psc_route_t r;
    double mid;

    (void)state;
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_SM);
    assert_int_equal(r.calibrated, 1);
    assert_true(r.predicted_us == 4);
    p.n = 1 << 20;
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_true(r.predicted_us == 10);
    assert_non_null(strstr(r.why, "calibrated"));

    /* Between measured sizes: log-log, so the geometric middle takes the geometric mean. */
    mid = psc__route_predict(cal, 0, 1, 0, 0, PSC_ENGINE_SM, 16384);
    assert_true(mid > 3.4 && mid < 3.5); /* sqrt(3*4) = 3.46 */
    assert_true(psc__route_predict(cal, 0, 1, 0, 0, PSC_ENGINE_SM, 1) == 3);            /* below: the smallest */
    assert_true(psc__route_predict(cal, 0, 1, 0, 0, PSC_ENGINE_CE, 32 << 20) == 100);   /* beyond: with the bytes */
    assert_true(psc__route_predict(cal, 1, 0, 0, 0, PSC_ENGINE_CE, 4096) < 0);          /* not measured */

    /* A path the calibration did not measure falls back to the defaults. */
    p = path_of(1, 0, 0, 1 << 20);
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.calibrated, 0);
    assert_int_equal(r.engine, PSC_ENGINE_SM);

    /* Calibrated SM, but peer access is off: the copy engine, and the route says what would be faster. */
    p = path_of(0, 1, 0, 4096);
    p.dst.access = 0;
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_int_equal(r.peer_off, 1);
    assert_true(r.predicted_us == 8);
}

/*
 * gpu0 -> gpu1 from a stream on gpu0, every route measured: at 64 KiB gpu1's SM kernel (a hop) is fastest,
 * at 16 MiB gpu1's copy engine (a hop), by 6 %.
 */
static psc_calibration_t *cal_hop(void)
{
    static psc_cal_route_t routes[4];
    static psc_calibration_t cal;
    uint64_t sizes[4] = {4096, 65536, 1 << 20, 16 << 20};
    double us[4][4] = {{8, 9, 10, 50}, {6, 7, 12, 100}, {9, 10, 11, 47}, {3, 4, 9, 80}}; /* CE0 SM0 CE1 SM1 */

    for (int k = 0; k < 4; k++) {
        routes[k] = (psc_cal_route_t){.src = 0, .dst = 1, .stream_gpu = 0, .issuer = k < 2 ? 0 : 1, .nsizes = 4};
        routes[k].engine = k & 1 ? PSC_ENGINE_SM : PSC_ENGINE_CE;
        memcpy(routes[k].size, sizes, sizeof(sizes));
        memcpy(routes[k].us, us[k], sizeof(us[k]));
    }
    memset(&cal, 0, sizeof(cal));
    cal.ngpu = 2;
    cal.nroute = 4;
    cal.route = routes;
    return &cal;
}

static void test_hop_choice(void **state)
{
    psc_calibration_t *cal = cal_hop();
    psc_copy_path_t p = path_far(0, 1, 0, 65536);
    psc_route_t r;

    (void)state;
    assert_int_equal(psc__route_far_worth(cal, &p, 1), 1); /* 4 us against 7 */
    cal->route[3].us[1] = 8; /* gpu1's SM kernel beats gpu0's copy engine (9) but not its SM kernel (7) */
    assert_int_equal(psc__route_far_worth(cal, &p, 1), 0);
    cal->route[3].us[1] = 4;
    p.stream_gpu = 1; /* the stream on gpu1: nothing measured */
    assert_int_equal(psc__route_far_worth(cal, &p, 0), 0);
    p.stream_gpu = 0;
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_SM);
    assert_int_equal(r.issuer, 1);
    assert_int_equal(r.stream_gpu, 0);
    assert_int_equal(r.hop, 1);
    assert_int_equal(r.calibrated, 1);
    assert_int_equal(r.peer_off, 0);
    assert_true(r.predicted_us == 4);
    assert_non_null(strstr(r.why, "SM kernel by gpu1 (a hop), ordered by events"));
    assert_non_null(strstr(r.why, "SM by gpu1 4.00 us"));

    p.n = 16 << 20; /* the far copy engine, by 3 us of 50 */
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_int_equal(r.issuer, 1);
    assert_int_equal(r.hop, 1);
    assert_true(r.predicted_us == 47);
    cal->route[2].us[3] = 48; /* by 2 us of 50: within the margin, the driver's own call */
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.hop, 0);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_int_equal(r.issuer, 0);
    assert_int_equal(psc__route_far_worth(cal, &p, 1), 0);
    cal->route[2].us[3] = 47;

    /* gpu1 cannot read gpu0's memory (peer access off there): the best route that can run, and why not the hop. */
    p = path_far(0, 1, 0, 65536);
    p.far_src.access = 0;
    p.far_src.dptr = 0;
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_SM);
    assert_int_equal(r.issuer, 0);
    assert_int_equal(r.hop, 0);
    assert_int_equal(r.peer_off, 1);
    assert_true(r.predicted_us == 7);
    assert_non_null(strstr(r.why, "not the SM kernel by gpu1 (a hop): peer access from gpu1 to gpu0 is off"));
    p.n = 16 << 20; /* blocked, but the far copy engine needs no peer access */
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_int_equal(r.hop, 1);
    assert_int_equal(r.peer_off, 0);

    /* The far GPU's view not looked at: no hop. */
    p = path_of(0, 1, 0, 65536);
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.hop, 0);
    assert_int_equal(r.issuer, 0);
    assert_true(r.predicted_us == 7);

    /* The defaults never hop: from the source's stream, its copy engine; from the destination's, its SMs. */
    p = path_far(0, 1, 0, 65536);
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.hop, 0);
    assert_int_equal(r.issuer, 0);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    p = path_far(0, 1, 1, 65536);
    psc__route_choose(NULL, &p, &r, 1);
    assert_int_equal(r.hop, 0);
    assert_int_equal(r.issuer, 1);
    assert_int_equal(r.engine, PSC_ENGINE_SM);

    /* Managed memory: no SM kernel anywhere, and not for want of peer access. */
    p = path_far(0, 1, 0, 65536);
    p.src.managed = 1;
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_int_equal(r.issuer, 0); /* 9 us, the far copy engine 10 */
    assert_int_equal(r.peer_off, 0);

    /* Only the stream GPU's copy engine measured, or all but it: nothing to choose between, the defaults. */
    cal->nroute = 1;
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.calibrated, 0);
    assert_int_equal(r.hop, 0);
    cal->route++;
    cal->nroute = 3;
    p = path_far(0, 1, 0, 65536);
    psc__route_choose(cal, &p, &r, 1);
    assert_int_equal(r.calibrated, 0);
    assert_true(r.predicted_us == 0);
    assert_int_equal(r.hop, 0);
    cal->route--;
    cal->nroute = 4;
}

/* ------------------------------------------------------------ the call on the fake driver */

static void test_copy_routes(void **state)
{
    size_t n = 3 << 20, off = 4096;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *want = malloc(n);
    CUstream s1 = stream_on(1);
    psc_route_t r;
    int was = -1;

    (void)state;
    fill(a, n, 7);
    memcpy(want, a, n);
    fake_set_peer(1, 0, 0);
    fake_set_current(fake_primary(0)); /* the application's own current context */
    fake_run_copies(1);

    /* Peer access off: the copy engine, on the caller's stream. */
    assert_int_equal(psc_copy_route(g_ctx, b, a, 1 << 20, (struct CUstream_st *)s1, &r), PSC_OK);
    assert_int_equal(r.engine, PSC_ENGINE_CE);
    assert_int_equal(r.peer_off, 1);
    assert_int_equal(psc_copy(g_ctx, b, a, 1 << 20, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_memcpys(), 1);
    assert_int_equal(fake_launches(), 0);
    assert_ptr_equal(fake_last_stream(), s1);
    assert_memory_equal(b, want, 1 << 20);
    assert_ptr_equal(fake_current(), fake_primary(0));
    assert_int_equal(fake_peer(1, 0), 0); /* never turned on by a copy */

    /* The explicit call turns it on and says it was off; now the SM kernel of the stream's GPU. */
    assert_int_equal(psc_peer_enable(g_ctx, 1, 0, &was), PSC_OK);
    assert_int_equal(was, 0);
    assert_int_equal(fake_peer(1, 0), 1);
    assert_ptr_equal(fake_current(), fake_primary(0));
    memset(b, 0, n);
    assert_int_equal(psc_copy(g_ctx, b + off, a + off, 2 << 20, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_launches(), 1);
    assert_int_equal(fake_memcpys(), 1);
    assert_non_null(strstr(fake_last_kernel(), "psc_copy_u"));
    assert_int_equal(fake_last_block(), 256);
    assert_int_equal(fake_last_grid(), (2u << 20) / (16 * 256)); /* one 16-byte word per thread */
    assert_ptr_equal(fake_last_stream(), s1);
    assert_memory_equal(b + off, want + off, 2 << 20);
    assert_int_equal(b[off - 1], 0); /* nothing outside the range */
    assert_int_equal(b[off + (2 << 20)], 0);
    assert_ptr_equal(fake_current(), fake_primary(0));
    assert_int_equal(fake_peer(1, 0), 1); /* left on */

    /* Unaligned and small: the byte kernel. */
    assert_int_equal(psc_copy(g_ctx, b + 1, a + 3, 1000, (struct CUstream_st *)s1), PSC_OK);
    assert_string_equal(fake_last_kernel(), "psc_copy_bytes");
    assert_memory_equal(b + 1, want + 3, 1000);

    /* The explicit call says when it was on already, and turns it off again. */
    assert_int_equal(psc_peer_enable(g_ctx, 1, 0, &was), PSC_OK);
    assert_int_equal(was, 1);
    assert_int_equal(psc_peer_disable(g_ctx, 1, 0, &was), PSC_OK);
    assert_int_equal(was, 1);
    assert_int_equal(fake_peer(1, 0), 0);

    stream_free(s1);
    dev_free(a);
    dev_free(b);
    free(want);
}

static void test_copy_host_and_default_stream(void **state)
{
    size_t n = 1 << 16;
    unsigned char *h = pinned_alloc(n), *d = dev_alloc(0, n);

    (void)state;
    fill(h, n, 3);
    fake_set_current(fake_primary(0));
    fake_run_copies(1);
    /* NULL: the default stream of the current context (GPU 0's). */
    assert_int_equal(psc_copy(g_ctx, d, h, n, NULL), PSC_OK);
    assert_int_equal(fake_memcpys(), 1);
    assert_memory_equal(d, h, n);
    /* Managed memory goes by the copy engine even where the defaults would take the SM kernel. */
    fake_mark_managed(d);
    {
        unsigned char *e = dev_alloc(1, n);
        psc_route_t r;

        fake_set_peer(1, 0, 1);
        assert_int_equal(psc_copy_route(g_ctx, e, d, n, NULL, &r), PSC_OK);
        assert_int_equal(r.engine, PSC_ENGINE_CE);
        fake_set_peer(1, 0, 0);
        dev_free(e);
    }
    pinned_free(h);
    dev_free(d);
}

/* The k-th logged driver operation; its stream and event through the pointers. */
static int op_at(int k, void **stream, void **event)
{
    return fake_op(k, stream, event);
}

static void *stream_ctx(void *s)
{
    CUresult (*get_ctx)(CUstream, CUcontext *) = (CUresult(*)(CUstream, CUcontext *))fake_fn("cuStreamGetCtx");
    CUcontext c = NULL;

    assert_int_equal(get_ctx((CUstream)s, &c), CUDA_SUCCESS);
    return c;
}

/* A hop: the caller's stream forks to the far GPU's hop stream and joins back, in this order. */
static void assert_hop_ops(CUstream caller, int issuer, char copy_op, void **hop_stream)
{
    void *st[5], *ev[5];
    const char want[5] = {'R', 'W', copy_op, 'R', 'W'};

    assert_int_equal(fake_nops(), 5);
    for (int k = 0; k < 5; k++)
        assert_int_equal(op_at(k, &st[k], &ev[k]), want[k]);
    assert_ptr_equal(st[0], caller);    /* the fork event on the caller's stream, after its work */
    assert_ptr_not_equal(st[1], caller); /* the hop stream waits for it */
    assert_ptr_equal(ev[1], ev[0]);
    assert_ptr_equal(stream_ctx(st[1]), fake_primary(issuer)); /* a stream of the issuing GPU */
    assert_ptr_equal(fake_op_ctx(4), fake_op_ctx(0)); /* the caller's stream, the same (NULL resolves alike) */
    assert_ptr_equal(st[2], st[1]);     /* the copy runs there */
    assert_ptr_equal(st[3], st[1]);     /* then the join event */
    assert_ptr_not_equal(ev[3], ev[0]);
    assert_ptr_equal(st[4], caller);    /* which the caller's stream waits for */
    assert_ptr_equal(ev[4], ev[3]);
    *hop_stream = st[1];
}

static void test_copy_hop(void **state)
{
    size_t n = 16 << 20;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *want = malloc(n);
    CUstream s0 = stream_on(0);
    void *hop = NULL, *again = NULL, *st, *ev;
    psc_route_t r;

    (void)state;
    fill(a, n, 11);
    memcpy(want, a, n);
    g_ctx->copy_cal = cal_hop();
    fake_set_peer(0, 1, 0);
    fake_set_peer(1, 0, 1); /* gpu1 may read gpu0's memory: its SM kernel can pull */
    fake_set_current(fake_primary(1)); /* the application's current context: not the stream's */

    assert_int_equal(psc_copy_route(g_ctx, b, a, 65536, (struct CUstream_st *)s0, &r), PSC_OK);
    assert_int_equal(r.hop, 1);
    assert_int_equal(r.issuer, 1);
    assert_int_equal(r.engine, PSC_ENGINE_SM);

    fake_run_copies(1);
    assert_int_equal(psc_copy(g_ctx, b, a, 65536, (struct CUstream_st *)s0), PSC_OK);
    assert_memory_equal(b, want, 65536);
    assert_non_null(strstr(fake_last_kernel(), "psc_copy_u"));
    assert_hop_ops(s0, 1, 'K', &hop);
    assert_ptr_equal(fake_current(), fake_primary(1));

    /* The same hop stream and events each time (nothing made per copy); the far copy engine at 16 MiB. */
    fake_run_copies(1);
    memset(b, 0, n);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK);
    assert_memory_equal(b, want, n);
    assert_int_equal(fake_memcpys(), 1);
    assert_int_equal(fake_launches(), 0);
    assert_hop_ops(s0, 1, 'M', &again);
    assert_ptr_equal(again, hop);

    /* The copy fails on the far GPU: the error is the launch's, and the hop stream still joins back. */
    fake_run_copies(1);
    fake_fail_launches(1);
    assert_int_equal(psc_copy(g_ctx, b, a, 65536, (struct CUstream_st *)s0), PSC_ERR_DRIVER);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "cuLaunchKernel"));
    assert_int_equal(fake_nops(), 4);
    assert_int_equal(op_at(2, &st, &ev), 'R');
    assert_ptr_equal(st, hop);
    assert_int_equal(op_at(3, &st, &ev), 'W');
    assert_ptr_equal(st, s0);
    assert_ptr_equal(fake_current(), fake_primary(1));

    /* gpu1 may no longer read gpu0's memory: no hop by SM kernel; gpu0's own SM kernel, with peer access to gpu1. */
    fake_set_peer(1, 0, 0);
    fake_set_peer(0, 1, 1);
    fake_run_copies(1);
    assert_int_equal(psc_copy_route(g_ctx, b, a, 65536, (struct CUstream_st *)s0, &r), PSC_OK);
    assert_int_equal(r.hop, 0);
    assert_int_equal(r.peer_off, 1);
    assert_int_equal(psc_copy(g_ctx, b, a, 65536, (struct CUstream_st *)s0), PSC_OK);
    assert_int_equal(fake_nops(), 1);
    assert_int_equal(op_at(0, &st, &ev), 'K');
    assert_ptr_equal(st, s0);

    /* The legacy stream of the current context (gpu0's) as the caller's: fork and join on it, gpu0 current. */
    fake_set_peer(1, 0, 1);
    fake_set_current(fake_primary(0));
    fake_run_copies(1);
    assert_int_equal(psc_copy(g_ctx, b, a, 65536, NULL), PSC_OK);
    assert_hop_ops(NULL, 1, 'K', &again);
    assert_ptr_equal(fake_op_ctx(0), fake_primary(0));
    assert_ptr_equal(again, hop);

    /* In a graph capture: the hop stream joins it, and stays out of bounds for other streams until it ends. */
    {
        CUstream s0b = stream_on(0);

        fake_capture_set(s0, 7);
        fake_run_copies(1);
        assert_int_equal(psc_copy(g_ctx, b, a, 65536, (struct CUstream_st *)s0), PSC_OK);
        assert_hop_ops(s0, 1, 'K', &again);
        assert_int_equal(psc_copy_route(g_ctx, b, a, 65536, (struct CUstream_st *)s0b, &r), PSC_OK);
        assert_int_equal(r.hop, 0);
        assert_non_null(strstr(r.why, "no hop: the far GPU's hop stream is in another graph capture"));
        fake_run_copies(1);
        assert_int_equal(psc_copy(g_ctx, b, a, 65536, (struct CUstream_st *)s0b), PSC_OK); /* by gpu0 itself */
        assert_int_equal(fake_nops(), 1);
        assert_int_equal(op_at(0, &st, &ev), 'K');
        assert_ptr_equal(st, s0b);
        fake_run_copies(1); /* the capture's own copies still hop */
        assert_int_equal(psc_copy(g_ctx, b, a, 65536, (struct CUstream_st *)s0), PSC_OK);
        assert_hop_ops(s0, 1, 'K', &again);
        fake_capture_set(s0, 0); /* the capture ends: every stream in it leaves */
        fake_capture_set(hop, 0);
        fake_run_copies(1);
        assert_int_equal(psc_copy(g_ctx, b, a, 65536, (struct CUstream_st *)s0b), PSC_OK);
        assert_hop_ops(s0b, 1, 'K', &again);
        stream_free(s0b);
    }

    g_ctx->copy_cal = NULL; /* static: not the context's to free */
    fake_set_peer(0, 1, 0);
    stream_free(s0);
    dev_free(a);
    dev_free(b);
    free(want);
}

/* The stream on the destination's GPU; the source's GPU (far) pushes by its SM kernel. */
static void test_copy_hop_to_source(void **state)
{
    static psc_cal_route_t routes[2];
    static psc_calibration_t cal;
    size_t n = 65536;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *want = malloc(n);
    CUstream s1 = stream_on(1);
    void *hop = NULL;
    psc_route_t r;

    (void)state;
    for (int k = 0; k < 2; k++) {
        routes[k] = (psc_cal_route_t){.src = 0, .dst = 1, .stream_gpu = 1, .issuer = k ? 0 : 1, .nsizes = 1};
        routes[k].engine = k ? PSC_ENGINE_SM : PSC_ENGINE_CE;
        routes[k].size[0] = 4096;
        routes[k].us[0] = k ? 2 : 10;
    }
    memset(&cal, 0, sizeof(cal));
    cal.ngpu = 2;
    cal.nroute = 2;
    cal.route = routes;
    fill(a, n, 3);
    memcpy(want, a, n);
    g_ctx->copy_cal = &cal;
    fake_set_peer(0, 1, 1); /* gpu0 may write gpu1's memory */
    fake_set_current(fake_primary(1));
    assert_int_equal(psc_copy_route(g_ctx, b, a, n, (struct CUstream_st *)s1, &r), PSC_OK);
    assert_int_equal(r.hop, 1);
    assert_int_equal(r.issuer, 0);
    fake_run_copies(1);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s1), PSC_OK);
    assert_hop_ops(s1, 0, 'K', &hop);
    assert_memory_equal(b, want, n);
    assert_ptr_equal(fake_current(), fake_primary(1));
    g_ctx->copy_cal = NULL;
    fake_set_peer(0, 1, 0);
    stream_free(s1);
    dev_free(a);
    dev_free(b);
    free(want);
}

static void test_bad_input(void **state)
{
    size_t n = 1 << 16;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *pageable = malloc(n);
    CUstream s0 = stream_on(0);
    void *foreign = fake_foreign_stream();
    psc_route_t r, untouched;

    (void)state;
    fake_set_current(fake_primary(1));
    fake_run_copies(1);
    memset(&r, 0x5C, sizeof(r));
    untouched = r;

    assert_int_equal(psc_copy(g_ctx, NULL, a, 16, (struct CUstream_st *)s0), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "destination address is NULL"));
    assert_int_equal(psc_copy(g_ctx, b, NULL, 16, (struct CUstream_st *)s0), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "source address is NULL"));

    assert_int_equal(psc_copy(g_ctx, b, pageable, 16, (struct CUstream_st *)s0), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "not memory CUDA knows"));
    assert_int_equal(psc_copy(g_ctx, pageable, a, 16, (struct CUstream_st *)s0), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "destination"));

    assert_int_equal(psc_copy(g_ctx, a + 100, a, 200, (struct CUstream_st *)s0), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "overlap"));
    assert_int_equal(psc_copy(g_ctx, a, a + 100, 101, (struct CUstream_st *)s0), PSC_ERR_INVALID);
    assert_int_equal(psc_copy(g_ctx, a, a + 100, 100, (struct CUstream_st *)s0), PSC_OK); /* touching is not overlapping */

    assert_int_equal(psc_copy(g_ctx, b, a + 1, n, (struct CUstream_st *)s0), PSC_ERR_INVALID); /* one byte past */
    assert_non_null(strstr(psc_context_last_error(g_ctx), "past the end"));
    assert_int_equal(psc_copy(g_ctx, b + n - 8, a, 9, (struct CUstream_st *)s0), PSC_ERR_INVALID);
    assert_int_equal(psc_copy(g_ctx, b + n - 8, a, 8, (struct CUstream_st *)s0), PSC_OK);

    assert_int_equal(psc_copy(g_ctx, b, a, 16, (struct CUstream_st *)foreign), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "primary context"));

    assert_int_equal(psc_copy_route(g_ctx, b, pageable, 16, (struct CUstream_st *)s0, &r), PSC_ERR_INVALID);
    assert_memory_equal(&r, &untouched, sizeof(r)); /* outputs only on success */
    assert_int_equal(psc_copy_route(g_ctx, b, a, 0, (struct CUstream_st *)s0, &r), PSC_ERR_INVALID);
    assert_int_equal(psc_copy(g_ctx, NULL, NULL, 0, (struct CUstream_st *)s0), PSC_OK); /* 0 bytes: nothing */

    /* Two good copies were queued, and nothing for the refused ones; the caller's context stayed. */
    assert_int_equal(fake_memcpys() + fake_launches(), 2);
    assert_ptr_equal(fake_current(), fake_primary(1));

    assert_int_equal(psc_peer_enable(g_ctx, 0, 0, NULL), PSC_ERR_INVALID);
    assert_int_equal(psc_peer_enable(g_ctx, 0, 2, NULL), PSC_ERR_INVALID);
    assert_int_equal(psc_copy(NULL, b, a, 16, NULL), PSC_ERR_INVALID);

    free(foreign);
    free(pageable);
    stream_free(s0);
    dev_free(a);
    dev_free(b);
}

/* ------------------------------------------------------------ what costs the CPU: routes, remembered facts */

/*
 * The built-in routes between GPUs, as the copies queue: from the source's stream the driver's own call
 * (cuMemcpyPeerAsync, whose CPU cost is below a kernel launch's, and the source's copy engine is fast),
 * though peer access is on both ways and the SM kernel could run; from the destination's stream its SM kernel.
 */
static void test_copy_source_stream_driver(void **state)
{
    size_t n = 1 << 16;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *want = malloc(n);
    CUstream s0 = stream_on(0), s1 = stream_on(1);
    int peers = fake_peer_memcpys();
    psc_route_t r;

    (void)state;
    fill(a, n, 5);
    memcpy(want, a, n);
    fake_set_peer(0, 1, 1);
    fake_set_peer(1, 0, 1);
    fake_set_current(fake_primary(0));
    for (uint64_t k = 1; k <= n; k *= 4) { /* 1 B to 64 KiB: every small size */
        assert_int_equal(psc_copy_route(g_ctx, b, a, k, (struct CUstream_st *)s0, &r), PSC_OK);
        assert_int_equal(r.engine, PSC_ENGINE_CE);
        assert_int_equal(r.issuer, 0);
        assert_non_null(strstr(r.why, "source GPU's stream"));
    }
    fake_run_copies(1);
    memset(b, 0, n);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK);
    assert_int_equal(fake_launches(), 0);
    assert_int_equal(fake_memcpys(), 1);
    assert_int_equal(fake_peer_memcpys(), peers); /* cuMemcpyAsync (UVA), which a graph can capture */
    assert_ptr_equal(fake_last_stream(), s0);
    assert_memory_equal(b, want, n);

    /* From the destination's stream: gpu1's SM kernel reads over the link. */
    fake_run_copies(1);
    memset(b, 0, n);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_launches(), 1);
    assert_int_equal(fake_memcpys(), 0);
    assert_ptr_equal(fake_last_stream(), s1);
    assert_memory_equal(b, want, n);
    assert_ptr_equal(fake_current(), fake_primary(0));

    /* Inside one GPU: the driver's cuMemcpyAsync, not a kernel (a launch costs the CPU more). */
    fake_run_copies(1);
    assert_int_equal(psc_copy(g_ctx, a + n / 2, a, n / 2, (struct CUstream_st *)s0), PSC_OK);
    assert_int_equal(fake_launches(), 0);
    assert_int_equal(fake_memcpys(), 1);
    assert_int_equal(fake_peer_memcpys(), peers);

    fake_set_peer(0, 1, 0);
    fake_set_peer(1, 0, 0);
    stream_free(s0);
    stream_free(s1);
    dev_free(a);
    dev_free(b);
    free(want);
}

/* A small deterministic generator for the property below. */
static unsigned next_rand(unsigned *x)
{
    *x = *x * 1103515245u + 12345u;
    return (*x >> 8) & 0xFFFF;
}

/*
 * Whatever the calibration measured, the route chosen is never predicted slower than the driver's call (the
 * stream GPU's copy engine), and another is chosen only where it was measured at least 5 % faster.
 */
static void test_calibrated_never_slower(void **state)
{
    static psc_cal_route_t routes[4];
    psc_calibration_t cal;
    uint64_t sizes[6] = {1, 4096, 65536, 1 << 20, 16 << 20, 1 << 30};
    unsigned x = 12345;
    int other = 0;

    (void)state;
    memset(&cal, 0, sizeof(cal));
    cal.ngpu = 2;
    cal.nroute = 4;
    cal.route = routes;
    for (int trial = 0; trial < 400; trial++) {
        for (int k = 0; k < 4; k++) {
            routes[k] = (psc_cal_route_t){.src = 0, .dst = 1, .stream_gpu = 0, .issuer = k < 2 ? 0 : 1, .nsizes = 6};
            routes[k].engine = k & 1 ? PSC_ENGINE_SM : PSC_ENGINE_CE;
            memcpy(routes[k].size, sizes, sizeof(sizes));
            for (int i = 0; i < 6; i++) /* around the copy engine's time, within +-20 % or wildly off */
                routes[k].us[i] = (double)(i + 1) * (trial & 1 ? 0.8 + next_rand(&x) / 163840.0
                                                               : 0.05 + next_rand(&x) / 8192.0);
        }
        for (int i = 0; i < 6; i++) {
            psc_copy_path_t p = path_far(0, 1, 0, sizes[i] + (uint64_t)(trial % 3) * sizes[i] / 3);
            double ce = psc__route_predict(&cal, 0, 1, 0, 0, PSC_ENGINE_CE, p.n);
            psc_route_t r;

            psc__route_choose(&cal, &p, &r, 0);
            assert_int_equal(r.calibrated, 1);
            assert_true(r.predicted_us <= ce);
            if (r.engine != PSC_ENGINE_CE || r.issuer != 0) {
                assert_true(r.predicted_us <= ce * 0.95); /* the margin: 5 % */
                other++;
            }
            /* the far GPU is looked at only where one of its routes is chosen */
            assert_int_equal(psc__route_far_worth(&cal, &p, 1), r.hop);
        }
    }
    assert_true(other > 100); /* the other routes were chosen too: the property was not met by always the same */
}

/* Every cuPointerGetAttributes that asked for the memory type: a full look-up. */
static int full_lookups(void)
{
    return fake_ptr_queries(1);
}

/*
 * Repeated copies of the same buffers look their facts up once; each later call asks the driver one short
 * question per buffer and makes no context change where the stream's GPU is current.
 */
static void test_copy_remembers_buffers(void **state)
{
    size_t n = 1 << 16;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *want = malloc(n);
    CUstream s0 = stream_on(0), s1 = stream_on(1);
    int full, calls, sets;

    (void)state;
    fill(a, n, 9);
    memcpy(want, a, n);
    fake_set_current(fake_primary(0));
    fake_run_copies(1);
    full = full_lookups();
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK);
    assert_int_equal(full_lookups(), full + 2); /* the first call: both buffers */
    full = full_lookups();
    calls = fake_ptr_queries(0);
    sets = fake_set_current_calls();
    for (int k = 0; k < 100; k++) /* the same copy, and other sizes and offsets of the same buffers */
        assert_int_equal(psc_copy(g_ctx, b + (k % 7) * 16, a + (k % 5) * 16, n / 2 + (size_t)k, (struct CUstream_st *)s0),
                         PSC_OK);
    assert_int_equal(full_lookups(), full);
    assert_int_equal(fake_ptr_queries(0), calls + 200); /* one check per buffer per call */
    assert_int_equal(fake_set_current_calls(), sets);   /* gpu0 current: nothing to change or put back */
    assert_int_equal(fake_memcpys(), 101);
    assert_memory_equal(b + 16, want + 4 * 16, n / 2 + 99); /* the last: k = 99 */

    /* The stream on another GPU: that GPU's view is looked up once too, and the caller's context put back. */
    fake_set_peer(1, 0, 1);
    full = full_lookups();
    sets = fake_set_current_calls();
    for (int k = 0; k < 10; k++)
        assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(full_lookups(), full + 2);
    assert_int_equal(fake_set_current_calls(), sets + 20); /* gpu1's made current and gpu0's put back, each call */
    assert_ptr_equal(fake_current(), fake_primary(0));
    assert_string_equal(fake_last_kernel(), "psc_copy_u4"); /* the SM kernel: peer access from gpu1 is on */

    /* Peer access turned off behind the library's back: the next call sees it (no kernel that would fault). */
    fake_set_peer(1, 0, 0);
    fake_run_copies(1);
    memset(b, 0, n);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_launches(), 0);
    assert_int_equal(fake_memcpys(), 1);
    assert_memory_equal(b, want, n);

    stream_free(s0);
    stream_free(s1);
    dev_free(a);
    dev_free(b);
    free(want);
}

/*
 * A buffer freed and another allocated at its address (another GPU's now): psc_copy must not use what it
 * remembered of the old one. A freed buffer is refused as before.
 */
static void test_copy_address_reused(void **state)
{
    size_t n = 1 << 16;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *b2, *want = malloc(n);
    CUstream s1 = stream_on(1);
    int full;
    psc_route_t r;

    (void)state;
    fill(a, n, 13);
    memcpy(want, a, n);
    fake_set_peer(1, 0, 1);
    fake_set_current(fake_primary(1));
    fake_run_copies(1);
    for (int k = 0; k < 3; k++) /* remembered: gpu0 -> gpu1 from gpu1's stream, by gpu1's SM kernel */
        assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_launches(), 3);

    dev_free(b);
    full = full_lookups();
    fake_run_copies(1);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s1), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "not memory CUDA knows"));
    assert_int_equal(fake_launches() + fake_memcpys(), 0);
    assert_int_equal(full_lookups(), full + 1); /* the freed one looked up again, and refused */

    setenv("FAKE_CUDA_REUSE_ADDRESS", "1", 1);
    b2 = dev_alloc(0, n / 2); /* at b's address, on gpu0, half the size */
    unsetenv("FAKE_CUDA_REUSE_ADDRESS");
    assert_ptr_equal(b2, b);
    assert_int_equal(psc_copy_route(g_ctx, b2, a, n / 2, (struct CUstream_st *)s1, &r), PSC_OK);
    assert_int_equal(r.dst, 0);
    fake_run_copies(1);
    memset(b2, 0, n / 2);
    /* Past the new, smaller allocation's end: refused (the old size would have let it through). */
    assert_int_equal(psc_copy(g_ctx, b2, a, n, (struct CUstream_st *)s1), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "past the end"));
    /* gpu0 -> gpu0 from gpu1's stream: the driver's copy with gpu0 at both ends, not gpu1's kernel. */
    assert_int_equal(psc_copy(g_ctx, b2, a, n / 2, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_launches(), 0);
    assert_int_equal(fake_memcpys(), 1);
    assert_memory_equal(b2, want, n / 2);

    /* And back to a buffer on gpu1 at that address, copied from gpu0's stream: the driver's copy, right bytes. */
    dev_free(b2);
    setenv("FAKE_CUDA_REUSE_ADDRESS", "1", 1);
    b = dev_alloc(1, n);
    unsetenv("FAKE_CUDA_REUSE_ADDRESS");
    assert_ptr_equal(b, b2);
    {
        CUstream s0 = stream_on(0);

        fake_run_copies(1);
        assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK);
        assert_int_equal(fake_memcpys(), 1);
        assert_int_equal(fake_launches(), 0);
        assert_memory_equal(b, want, n);
        stream_free(s0);
    }

    fake_set_peer(1, 0, 0);
    stream_free(s1);
    dev_free(a);
    dev_free(b);
    free(want);
}

/* A prepared copy: checked once, then each run is the route's driver call alone; bad use refused. */
static void test_copy_prepared(void **state)
{
    size_t n = 1 << 16;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *want = malloc(n);
    CUstream s0 = stream_on(0), s1 = stream_on(1);
    psc_copy_prep_t *p = NULL, *q = NULL;
    int calls, sets;

    (void)state;
    fill(a, n, 17);
    memcpy(want, a, n);
    fake_set_peer(1, 0, 1);
    fake_set_current(fake_primary(0));
    assert_int_equal(psc_copy_prepare(g_ctx, b, a, n, (struct CUstream_st *)s1, &p), PSC_OK);
    assert_non_null(p);
    assert_ptr_equal(fake_current(), fake_primary(0));
    calls = fake_ptr_queries(0);
    sets = fake_set_current_calls();
    fake_run_copies(1);
    memset(b, 0, n);
    for (int k = 0; k < 10; k++)
        assert_int_equal(psc_copy_run(g_ctx, p), PSC_OK);
    assert_int_equal(fake_ptr_queries(0), calls); /* nothing asked of the buffers */
    assert_int_equal(fake_launches(), 10);
    assert_ptr_equal(fake_last_stream(), s1);
    assert_memory_equal(b, want, n);
    assert_ptr_equal(fake_current(), fake_primary(0)); /* gpu1's made current for the launch, gpu0's put back */
    assert_int_equal(fake_set_current_calls(), sets + 20);
    fake_set_current(fake_primary(1)); /* the stream's GPU current: no context change at all */
    sets = fake_set_current_calls();
    assert_int_equal(psc_copy_run(g_ctx, p), PSC_OK);
    assert_int_equal(fake_set_current_calls(), sets);

    /* From the source's stream: the driver's copy. */
    assert_int_equal(psc_copy_prepare(g_ctx, b, a, n, (struct CUstream_st *)s0, &q), PSC_OK);
    fake_run_copies(1);
    assert_int_equal(psc_copy_run(g_ctx, q), PSC_OK);
    assert_int_equal(fake_memcpys(), 1);
    assert_int_equal(fake_launches(), 0);
    sets = fake_set_current_calls(); /* gpu1's current: the driver's copy on s0 as the caller would queue it */
    assert_int_equal(psc_copy_run(g_ctx, q), PSC_OK);
    assert_int_equal(fake_set_current_calls(), sets);
    assert_int_equal(fake_memcpys(), 2);
    assert_ptr_equal(fake_last_stream(), s0);
    psc_copy_prep_free(q);
    /* On the NULL and the per-thread stream (the current context's): gpu0's, where it was prepared, made current
     * for each run. */
    for (int k = 0; k < 2; k++) {
        CUstream cs = k ? CU_STREAM_PER_THREAD : NULL;

        fake_set_current(fake_primary(0));
        assert_int_equal(psc_copy_prepare(g_ctx, b, a, n, (struct CUstream_st *)cs, &q), PSC_OK);
        fake_set_current(fake_primary(1));
        sets = fake_set_current_calls();
        assert_int_equal(psc_copy_run(g_ctx, q), PSC_OK);
        assert_int_equal(fake_set_current_calls(), sets + 2);
        assert_ptr_equal(fake_current(), fake_primary(1));
        assert_int_equal(fake_memcpys(), 3 + k);
        assert_ptr_equal(fake_last_stream(), cs);
        psc_copy_prep_free(q);
    }

    q = (psc_copy_prep_t *)0x1;
    assert_int_equal(psc_copy_prepare(g_ctx, b, a, 0, (struct CUstream_st *)s0, &q), PSC_ERR_INVALID);
    assert_int_equal(psc_copy_prepare(g_ctx, b, a, n + 1, (struct CUstream_st *)s0, &q), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "past the end"));
    assert_ptr_equal(q, (psc_copy_prep_t *)0x1); /* set only on success */
    assert_int_equal(psc_copy_prepare(g_ctx, b, a, n, (struct CUstream_st *)s0, NULL), PSC_ERR_INVALID);
    assert_int_equal(psc_copy_run(g_ctx, NULL), PSC_ERR_INVALID);
    assert_int_equal(psc_copy_run(NULL, p), PSC_ERR_INVALID);
    psc_copy_prep_free(p);
    psc_copy_prep_free(NULL);

    fake_set_peer(1, 0, 0);
    stream_free(s0);
    stream_free(s1);
    dev_free(a);
    dev_free(b);
    free(want);
}

/*
 * Copies between GPUs captured into a CUDA graph (psc_copy warm and cold, and a prepared copy): the driver
 * refuses cuMemcpyPeerAsync in a capture and loses the capture, so the copy engine goes by cuMemcpyAsync; the
 * capture ends well and each replay moves the source's bytes as they are then.
 */
static void test_copy_captured(void **state)
{
    CUresult (*begin)(CUstream, CUstreamCaptureMode) =
        (CUresult(*)(CUstream, CUstreamCaptureMode))fake_fn("cuStreamBeginCapture");
    CUresult (*end)(CUstream, CUgraph *) = (CUresult(*)(CUstream, CUgraph *))fake_fn("cuStreamEndCapture");
    CUresult (*inst)(CUgraphExec *, CUgraph, unsigned long long) =
        (CUresult(*)(CUgraphExec *, CUgraph, unsigned long long))fake_fn("cuGraphInstantiateWithFlags");
    CUresult (*launch)(CUgraphExec, CUstream) = (CUresult(*)(CUgraphExec, CUstream))fake_fn("cuGraphLaunch");
    CUresult (*gfree)(CUgraph) = (CUresult(*)(CUgraph))fake_fn("cuGraphDestroy");
    CUresult (*xfree)(CUgraphExec) = (CUresult(*)(CUgraphExec))fake_fn("cuGraphExecDestroy");
    size_t n = 1 << 16;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *c = dev_alloc(1, n), *want = malloc(n);
    CUstream s0 = stream_on(0);
    psc_copy_prep_t *p = NULL;
    int peers = fake_peer_memcpys();

    (void)state;
    assert_non_null(begin);
    setenv("FAKE_CUDA_GRAPHS", "1", 1);
    fake_set_current(fake_primary(0));
    fill(a, n, 21);
    fake_run_copies(1);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK); /* b's plan remembered */
    assert_int_equal(psc_copy_prepare(g_ctx, c, a, n, (struct CUstream_st *)s0, &p), PSC_OK);
    for (int cold = 0; cold < 2; cold++) {
        CUgraph g = NULL;
        CUgraphExec x = NULL;
        psc_status_t st[3];
        CUresult e;

        if (cold) { /* nothing remembered: the copy planned inside the capture */
            psc_copy_prep_free(p);
            p = NULL;
            dev_free(b);
            b = dev_alloc(1, n);
        }
        assert_int_equal(begin(s0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
        st[0] = psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0);
        st[1] = p ? psc_copy_run(g_ctx, p) : PSC_OK;
        st[2] = psc_copy(g_ctx, b, a, n / 2, (struct CUstream_st *)s0); /* cold: a plan made in the capture */
        e = end(s0, &g);
        for (int k = 0; k < 3; k++)
            if (st[k] != PSC_OK)
                fail_msg("copy %d in the capture: %s", k, psc_context_last_error(g_ctx));
        assert_int_equal(e, CUDA_SUCCESS);
        assert_int_equal(fake_peer_memcpys(), peers);
        assert_int_equal(inst(&x, g, 0), CUDA_SUCCESS);
        fill(a, n, 22 + (unsigned)cold);
        memcpy(want, a, n);
        memset(b, 0, n);
        memset(c, 0, n);
        fake_replay_copies(1);
        assert_int_equal(launch(x, s0), CUDA_SUCCESS);
        fake_replay_copies(0);
        assert_memory_equal(b, want, n);
        if (!cold)
            assert_memory_equal(c, want, n);
        xfree(x);
        gfree(g);
    }
    unsetenv("FAKE_CUDA_GRAPHS");
    stream_free(s0);
    dev_free(a);
    dev_free(b);
    dev_free(c);
    free(want);
}

/*
 * The warm path: a kept plan that is the driver's call asks nothing of the buffers (no pointer query, no context
 * change where the stream's GPU is current); a kernel's plan confirms both buffers each call; what changed
 * under a kept plan (freed, another GPU's or host memory at the same address, peer access on) never makes a
 * kernel touch memory it may no longer use, and a copy the driver refuses is looked at again and said.
 */
static void test_copy_warm_calls(void **state)
{
    CUresult (*reg)(void *, size_t, unsigned) = (CUresult(*)(void *, size_t, unsigned))fake_fn("cuMemHostRegister");
    CUresult (*unreg)(void *) = (CUresult(*)(void *))fake_fn("cuMemHostUnregister");
    size_t n = 1 << 16;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *want = malloc(n), *h;
    CUstream s0 = stream_on(0), s1 = stream_on(1);
    int calls, sets, full;

    (void)state;
    fill(a, n, 31);
    memcpy(want, a, n);
    fake_set_current(fake_primary(0));
    fake_run_copies(1);
    full = full_lookups();
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK); /* the driver's copy, kept */
    assert_int_equal(full_lookups(), full + 2);
    calls = fake_ptr_queries(0);
    sets = fake_set_current_calls();
    for (int k = 0; k < 100; k++)
        assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK);
    assert_int_equal(fake_ptr_queries(0), calls); /* no pointer query at all */
    assert_int_equal(fake_set_current_calls(), sets);
    assert_int_equal(fake_memcpys(), 101);
    assert_int_equal(fake_launches(), 0);
    assert_memory_equal(b, want, n);

    /* From gpu1's stream with peer access off: the copy engine for want of it, confirmed each call... */
    fake_set_current(fake_primary(1));
    fake_run_copies(1);
    for (int k = 0; k < 3; k++)
        assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_launches(), 0);
    calls = fake_ptr_queries(0);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_ptr_queries(0), calls + 2);
    /* ...so peer access turned on is seen at once: gpu1's SM kernel, its buffers confirmed each call. */
    fake_set_peer(1, 0, 1);
    fake_run_copies(1);
    memset(b, 0, n);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s1), PSC_OK);
    calls = fake_ptr_queries(0);
    for (int k = 0; k < 10; k++)
        assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_launches(), 11);
    assert_int_equal(fake_ptr_queries(0), calls + 20);
    assert_memory_equal(b, want, n);

    /* The kernel's destination freed and host memory registered at its address: no kernel on it. */
    dev_free(b);
    h = mmap(b, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    assert_ptr_equal(h, b);
    assert_int_equal(reg(h, n, 0), CUDA_SUCCESS);
    fake_run_copies(1);
    assert_int_equal(psc_copy(g_ctx, h, a, n, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_launches(), 0);
    assert_int_equal(fake_memcpys(), 1);
    assert_memory_equal(h, want, n);
    assert_int_equal(unreg(h), CUDA_SUCCESS);
    munmap(h, n);

    /* The driver's kept copy, its destination now another GPU's memory at the same address: still right. */
    b = dev_alloc(1, n);
    fake_set_current(fake_primary(0));
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK);
    dev_free(b);
    setenv("FAKE_CUDA_REUSE_ADDRESS", "1", 1);
    h = dev_alloc(0, n);
    unsetenv("FAKE_CUDA_REUSE_ADDRESS");
    assert_ptr_equal(h, b);
    fake_run_copies(1);
    calls = fake_ptr_queries(0);
    assert_int_equal(psc_copy(g_ctx, h, a, n, (struct CUstream_st *)s0), PSC_OK);
    assert_int_equal(fake_ptr_queries(0), calls); /* the kept call, unasked */
    assert_int_equal(fake_launches(), 0);
    assert_memory_equal(h, want, n);

    /* Its source freed: the driver refuses the kept call, and psc_copy says what the source is now. */
    dev_free(a);
    fake_run_copies(1);
    assert_int_equal(psc_copy(g_ctx, h, a, n, (struct CUstream_st *)s0), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "not memory CUDA knows"));
    assert_int_equal(fake_memcpys() + fake_launches(), 0);
    assert_ptr_equal(fake_current(), fake_primary(0));

    fake_set_peer(1, 0, 0);
    stream_free(s0);
    stream_free(s1);
    dev_free(h);
    free(want);
}

/* The thread's last copy again: straight to the driver, from any context where it is the driver's copy on a stream
 * the caller made, else only from the stream GPU's own context. */
static void test_copy_hot_again(void **state)
{
    size_t n = 4096;
    unsigned char *a = dev_alloc(0, n), *b = dev_alloc(1, n), *want = malloc(n);
    CUstream s0 = stream_on(0), s1 = stream_on(1);
    int calls, sets;

    (void)state;
    fill(a, n, 77);
    memcpy(want, a, n);
    fake_set_current(fake_primary(0));
    fake_run_copies(1);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK);
    calls = fake_ptr_queries(0);
    sets = fake_set_current_calls();
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK);
    assert_int_equal(fake_ptr_queries(0), calls);
    assert_int_equal(fake_set_current_calls(), sets);
    assert_int_equal(fake_memcpys(), 2);
    /* the same arguments from gpu1's context: the caller's own call on its stream s0, no context changed */
    fake_set_current(fake_primary(1));
    sets = fake_set_current_calls();
    memset(b, 0, n);
    assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)s0), PSC_OK);
    assert_int_equal(fake_set_current_calls(), sets);
    assert_ptr_equal(fake_current(), fake_primary(1));
    assert_ptr_equal(fake_last_stream(), s0);
    assert_int_equal(fake_memcpys(), 3);
    assert_memory_equal(b, want, n);
    /* the NULL and the per-thread stream are the current context's: kept from gpu0's, then gpu1's (whose SM
     * kernel reaches gpu0's memory) is no longer the kept call's stream, and psc_copy plans again for gpu1 */
    fake_set_peer(1, 0, 1);
    for (int k = 0; k < 2; k++) {
        CUstream cs = k ? CU_STREAM_PER_THREAD : NULL;
        int launched = fake_launches();

        fake_set_current(fake_primary(0));
        for (int j = 0; j < 2; j++)
            assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)cs), PSC_OK);
        assert_int_equal(fake_launches(), launched);
        fake_set_current(fake_primary(1));
        memset(b, 0, n);
        assert_int_equal(psc_copy(g_ctx, b, a, n, (struct CUstream_st *)cs), PSC_OK);
        assert_int_equal(fake_launches(), launched + 1);
        assert_ptr_equal(fake_last_stream(), cs);
        assert_memory_equal(b, want, n);
    }
    fake_set_peer(1, 0, 0);
    /* another size of the same buffers: not the kept call (the bytes past it stay as they were) */
    memset(b, 0, n);
    fake_set_current(fake_primary(0));
    assert_int_equal(psc_copy(g_ctx, b, a, n / 2, (struct CUstream_st *)s0), PSC_OK);
    assert_memory_equal(b, want, n / 2);
    assert_int_equal(b[n / 2], 0);
    /* gpu1's SM kernel from its stream (peer access on), kept: the call again moves the bytes again, by the
     * kernel, its buffers confirmed; and at an odd offset (the bytes kernel) */
    fake_set_peer(1, 0, 1);
    fake_set_current(fake_primary(1));
    for (size_t off = 0; off < 2; off++) {
        fake_run_copies(1);
        assert_int_equal(psc_copy(g_ctx, b + off, a + off, n - 2, (struct CUstream_st *)s1), PSC_OK);
        assert_int_equal(fake_launches(), 1);
        memset(b, 0, n);
        calls = fake_ptr_queries(0);
        assert_int_equal(psc_copy(g_ctx, b + off, a + off, n - 2, (struct CUstream_st *)s1), PSC_OK);
        assert_int_equal(fake_launches(), 2);
        assert_int_equal(fake_memcpys(), 0);
        assert_int_equal(fake_ptr_queries(0), calls + 2);
        assert_memory_equal(b + off, want + off, n - 2);
        assert_int_equal(b[n - 1], 0);
    }
    /* the kept kernel from gpu0's context (which may reach gpu1's memory too): launched from its stream's GPU's
     * context (gpu1's; the driver refuses a launch on another context's stream), gpu0's put back */
    fake_set_peer(0, 1, 1);
    fake_set_current(fake_primary(0));
    sets = fake_set_current_calls();
    assert_int_equal(psc_copy(g_ctx, b + 1, a + 1, n - 2, (struct CUstream_st *)s1), PSC_OK);
    assert_int_equal(fake_launches(), 3);
    assert_int_equal(fake_set_current_calls(), sets + 2);
    assert_ptr_equal(fake_current(), fake_primary(0));
    fake_set_peer(0, 1, 0);
    fake_set_peer(1, 0, 0);
    stream_free(s0);
    stream_free(s1);
    dev_free(a);
    dev_free(b);
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_sm_blocked),
        cmocka_unit_test(test_calibrated),
        cmocka_unit_test(test_hop_choice),
        cmocka_unit_test(test_copy_routes),
        cmocka_unit_test(test_copy_host_and_default_stream),
        cmocka_unit_test(test_copy_hop),
        cmocka_unit_test(test_copy_hop_to_source),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_copy_source_stream_driver),
        cmocka_unit_test(test_calibrated_never_slower),
        cmocka_unit_test(test_copy_remembers_buffers),
        cmocka_unit_test(test_copy_address_reused),
        cmocka_unit_test(test_copy_prepared),
        cmocka_unit_test(test_copy_captured),
        cmocka_unit_test(test_copy_warm_calls),
        cmocka_unit_test(test_copy_hot_again),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
