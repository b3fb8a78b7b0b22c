/*
 * The doctor's integrity evidence: the one fold rule over bandwidth, verify
 * and stress results into hand-built facts, psc_doctor's p2p_corrupts finding
 * from it, and the peer check on a context of the fake driver (whose copies
 * cannot run, so no pair may be called good or bad).
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "p2pscope/bench.h"

static psc_facts_t *facts_of(int ngpu)
{
    psc_facts_t *f = psc_facts_new();

    assert_non_null(f);
    f->ngpu = ngpu;
    return f;
}

static psc_bw_case_t one(int src, int dst)
{
    psc_bw_case_t c;

    memset(&c, 0, sizeof(c));
    c.src = src;
    c.dst = dst;
    c.issuer = src >= 0 ? src : dst;
    c.nxfer = 1;
    c.xfer[0] = (psc_xfer_t){src, dst, c.issuer};
    return c;
}

static psc_bw_result_t bw(psc_bw_case_t c, psc_result_status_t st, uint64_t bad)
{
    psc_bw_result_t r;

    memset(&r, 0, sizeof(r));
    r.c = c;
    r.status = st;
    r.verify.bad_bytes = bad;
    r.verify.first_bad_offset = bad ? 0 : -1;
    r.verify.checked = 1; /* the destinations were checked (bw --no-verify leaves 0) */
    return r;
}

static psc_verify_result_t vr(psc_bw_case_t c, psc_result_status_t st, uint64_t bad)
{
    psc_verify_result_t r;

    memset(&r, 0, sizeof(r));
    r.c = c;
    r.status = st;
    r.bad_bytes = bad;
    r.bytes_checked = 4096;
    return r;
}

static size_t corrupts(const psc_facts_t *f, int i, int j, psc_severity_t *sev)
{
    psc_finding_t v[256];
    size_t n = psc_doctor(f, v, 256), hits = 0;
    char want[64];

    assert_true(n <= 256);
    snprintf(want, sizeof(want), "gpu%d to gpu%d", i, j);
    for (size_t k = 0; k < n; k++)
        if (strcmp(v[k].rule, "p2p_corrupts") == 0) {
            hits++;
            assert_non_null(strstr(v[k].what, want)); /* the only one expected names this pair */
            *sev = v[k].severity;
        }
    return hits;
}

/* A pass marks the transfer's ordered pair good, and only that pair. */
static void test_pass_sets_one(void **state)
{
    psc_facts_t *f = facts_of(3);
    psc_bw_result_t r = bw(one(0, 1), PSC_RESULT_PASSED, 0);

    (void)state;
    psc_facts_note_bw(f, &r, 1);
    assert_int_equal(f->pair[0][1].integrity, 1);
    assert_int_equal(f->pair[1][0].integrity, -1);
    assert_int_equal(f->pair[0][2].integrity, -1);
    psc_facts_free(f);
}

/* Wrong bytes mark the pair bad, and a later pass does not clear it; a later failure keeps it. */
static void test_bad_bytes_stick(void **state)
{
    psc_facts_t *f = facts_of(2);
    psc_bw_result_t r[3] = {bw(one(0, 1), PSC_RESULT_PASSED, 0), bw(one(0, 1), PSC_RESULT_FAILED, 7),
                            bw(one(0, 1), PSC_RESULT_PASSED, 0)};

    (void)state;
    psc_facts_note_bw(f, r, 1);
    assert_int_equal(f->pair[0][1].integrity, 1);
    psc_facts_note_bw(f, r + 1, 2);
    assert_int_equal(f->pair[0][1].integrity, 0);
    assert_int_equal(f->pair[1][0].integrity, -1);
    psc_facts_free(f);
}

/* A failure without wrong bytes (a driver error) or a waiver is no evidence either way. */
static void test_failed_or_waived_change_nothing(void **state)
{
    psc_facts_t *f = facts_of(2);
    psc_bw_result_t r[2] = {bw(one(0, 1), PSC_RESULT_FAILED, 0), bw(one(1, 0), PSC_RESULT_WAIVED, 0)};

    (void)state;
    psc_facts_note_bw(f, r, 2);
    assert_int_equal(f->pair[0][1].integrity, -1);
    assert_int_equal(f->pair[1][0].integrity, -1);
    f->pair[0][1].integrity = 1;
    psc_facts_note_bw(f, r, 1);
    assert_int_equal(f->pair[0][1].integrity, 1);
    psc_facts_free(f);
}

/* Host memory, a GPU's own memory and GPUs the facts do not hold are not peer pairs. */
static void test_only_gpu_to_gpu_pairs(void **state)
{
    psc_facts_t *f = facts_of(2);
    psc_bw_result_t r[4] = {bw(one(PSC_HOST, 1), PSC_RESULT_FAILED, 5), bw(one(0, PSC_HOST), PSC_RESULT_FAILED, 5),
                            bw(one(1, 1), PSC_RESULT_FAILED, 5), bw(one(0, 2), PSC_RESULT_FAILED, 5)};

    (void)state;
    psc_facts_note_bw(f, r, 4);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            assert_int_equal(f->pair[i][j].integrity, -1);
    psc_facts_note_bw(NULL, r, 4); /* no facts (a report without topology): nothing to do */
    psc_facts_free(f);
}

/* A run that passed with its checks off proved nothing: no evidence. */
static void test_unchecked_pass_is_no_evidence(void **state)
{
    psc_facts_t *f = facts_of(2);
    psc_bw_result_t r = bw(one(0, 1), PSC_RESULT_PASSED, 0);

    (void)state;
    r.verify.checked = 0;
    psc_facts_note_bw(f, &r, 1);
    assert_int_equal(f->pair[0][1].integrity, -1);
    psc_facts_free(f);
}

/* A copy staged through host memory with peer access off says nothing about P2P: no evidence either way. */
static void test_p2p_off_is_no_evidence(void **state)
{
    psc_facts_t *f = facts_of(2);
    psc_bw_case_t off = one(0, 1), on = one(1, 0);
    psc_bw_result_t r[2];

    (void)state;
    assert_int_equal(psc_bw_test_from_name("gpu_to_gpu_p2p_off_ce", &off.test), PSC_OK);
    assert_int_equal(psc_bw_test_from_name("gpu_to_gpu_write_ce", &on.test), PSC_OK);
    r[0] = bw(off, PSC_RESULT_FAILED, 7);
    r[1] = bw(on, PSC_RESULT_PASSED, 0);
    psc_facts_note_bw(f, r, 2);
    assert_int_equal(f->pair[0][1].integrity, -1);
    assert_int_equal(f->pair[1][0].integrity, 1);
    psc_facts_free(f);
}

/* Every GPU -> GPU transfer of a concurrent case counts, not only the case's summary endpoints. */
static void test_concurrent_case_marks_each_transfer(void **state)
{
    psc_facts_t *f = facts_of(3);
    psc_bw_case_t ring = one(PSC_ALL, PSC_ALL);
    psc_bw_result_t r;

    (void)state;
    ring.nxfer = 3;
    ring.xfer[0] = (psc_xfer_t){0, 1, 0};
    ring.xfer[1] = (psc_xfer_t){1, 2, 1};
    ring.xfer[2] = (psc_xfer_t){2, 0, 2};
    r = bw(ring, PSC_RESULT_PASSED, 0);
    psc_facts_note_bw(f, &r, 1);
    assert_int_equal(f->pair[0][1].integrity, 1);
    assert_int_equal(f->pair[1][2].integrity, 1);
    assert_int_equal(f->pair[2][0].integrity, 1);
    assert_int_equal(f->pair[1][0].integrity, -1);
    r = bw(ring, PSC_RESULT_FAILED, 1);
    psc_facts_note_bw(f, &r, 1);
    assert_int_equal(f->pair[0][1].integrity, 0);
    assert_int_equal(f->pair[1][2].integrity, 0);
    assert_int_equal(f->pair[2][0].integrity, 0);
    psc_facts_free(f);
}

/* verify's results fold by the same rule. */
static void test_verify_results_same_rule(void **state)
{
    psc_facts_t *f = facts_of(2);
    psc_verify_result_t r[3] = {vr(one(0, 1), PSC_RESULT_PASSED, 0), vr(one(1, 0), PSC_RESULT_FAILED, 3),
                                vr(one(1, 0), PSC_RESULT_PASSED, 0)};

    (void)state;
    psc_facts_note_verify(f, r, 3);
    assert_int_equal(f->pair[0][1].integrity, 1);
    assert_int_equal(f->pair[1][0].integrity, 0);
    r[0] = vr(one(0, 1), PSC_RESULT_FAILED, 0);
    psc_facts_note_verify(f, r, 1);
    assert_int_equal(f->pair[0][1].integrity, 1);
    psc_facts_free(f);
}

/* A stress record: wrong bytes in any pass count even when the kept result failed for another reason. */
static void test_stress_sums(void **state)
{
    psc_facts_t *f = facts_of(3);
    psc_verify_path_sum_t s[3];

    (void)state;
    memset(s, 0, sizeof(s));
    s[0].last = vr(one(0, 1), PSC_RESULT_FAILED, 0); /* e.g. a driver error first, wrong bytes later */
    s[0].bad_bytes = 9;
    s[0].passes = 3;
    s[1].last = vr(one(1, 2), PSC_RESULT_PASSED, 0);
    s[1].passes = 2;
    s[1].bytes_checked = 8192;
    s[2].last = vr(one(2, 0), PSC_RESULT_PASSED, 0); /* never ran: no evidence */
    s[2].passes = 0;
    psc_facts_note_verify_sums(f, s, 3);
    assert_int_equal(f->pair[0][1].integrity, 0);
    assert_int_equal(f->pair[1][2].integrity, 1);
    assert_int_equal(f->pair[2][0].integrity, -1);
    psc_facts_free(f);
}

/* psc_doctor reports the folded evidence as p2p_corrupts, an error, for that ordered pair alone. */
static void test_doctor_reports_p2p_corrupts(void **state)
{
    psc_facts_t *f = facts_of(2);
    psc_bw_result_t good = bw(one(1, 0), PSC_RESULT_PASSED, 0), bad = bw(one(0, 1), PSC_RESULT_FAILED, 1);
    psc_severity_t sev = PSC_SEV_INFO;

    (void)state;
    psc_facts_note_bw(f, &good, 1);
    assert_int_equal(corrupts(f, 0, 1, &sev), 0);
    psc_facts_note_bw(f, &bad, 1);
    assert_int_equal(corrupts(f, 0, 1, &sev), 1);
    assert_int_equal(sev, PSC_SEV_ERROR);
    psc_facts_free(f);
}

/*
 * The peer check on the fake driver: a pair without peer access is not
 * tried (its value stays), and a copy that cannot run leaves "not run".
 */
static void test_check_integrity_fake_driver(void **state)
{
    psc_context_t *ctx = NULL;
    psc_facts_t *f = facts_of(2);
    char err[256];

    (void)state;
    assert_int_equal(psc_facts_check_integrity(NULL, f), PSC_ERR_INVALID);
    assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK);
    assert_int_equal(psc_facts_check_integrity(ctx, NULL), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(ctx), "psc_facts_check_integrity"));
    f->pair[0][1].can_access = 1;
    f->pair[1][0].can_access = 0;
    f->pair[1][0].integrity = 0;
    /* Facts of another machine (a recording), or of another GPU count: refused, naming why. */
    snprintf(f->source, sizeof(f->source), "machine.json");
    assert_int_equal(psc_facts_check_integrity(ctx, f), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(ctx), "not this context's machine"));
    snprintf(f->source, sizeof(f->source), "live");
    f->ngpu = 3;
    assert_int_equal(psc_facts_check_integrity(ctx, f), PSC_ERR_INVALID);
    f->ngpu = 2;
    assert_int_equal(psc_facts_check_integrity(ctx, f), PSC_OK);
    assert_int_equal(f->pair[0][1].integrity, -1);
    assert_int_equal(f->pair[1][0].integrity, 0);
    psc_context_destroy(ctx);
    psc_facts_free(f);
}

/*
 * On the fake driver's "contexts" mode (contexts and peer access work, kernels
 * do not launch): the check leaves the caller's current context and peer
 * access as they were, and runs that fail without wrong bytes prove nothing.
 */
static void test_check_integrity_keeps_caller_state(void **state)
{
    void *const caller = (void *)0xC0FFEE0;
    void *(*current)(void);
    void (*set_current)(void *);
    int (*peer)(int, int);
    void (*set_peer)(int, int, int);
    psc_context_t *ctx = NULL;
    psc_facts_t *f = facts_of(2);
    char err[256];
    void *h;

    (void)state;
    setenv("FAKE_CUDA_MODE", "contexts", 1);
    assert_int_equal(psc_context_create(&ctx, err, sizeof(err)), PSC_OK);
    h = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_NOLOAD); /* the copy the library loaded */
    assert_non_null(h);
    *(void **)&current = dlsym(h, "fake_cuda_current");
    *(void **)&set_current = dlsym(h, "fake_cuda_set_current");
    *(void **)&peer = dlsym(h, "fake_cuda_peer");
    *(void **)&set_peer = dlsym(h, "fake_cuda_set_peer");
    assert_true(current && set_current && peer && set_peer);
    f->pair[0][1].can_access = f->pair[1][0].can_access = 1;
    snprintf(f->source, sizeof(f->source), "live");
    set_current(caller);
    set_peer(0, 1, 0);
    set_peer(1, 0, 1);
    assert_int_equal(psc_facts_check_integrity(ctx, f), PSC_OK);
    assert_ptr_equal(current(), caller);
    assert_int_equal(peer(0, 1), 0);
    assert_int_equal(peer(1, 0), 1);
    assert_int_equal(f->pair[0][1].integrity, -1);
    assert_int_equal(f->pair[1][0].integrity, -1);
    set_peer(1, 0, 0);
    set_current(NULL);
    psc_context_destroy(ctx);
    psc_facts_free(f);
    dlclose(h);
    setenv("FAKE_CUDA_MODE", "gpus", 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pass_sets_one),
        cmocka_unit_test(test_bad_bytes_stick),
        cmocka_unit_test(test_failed_or_waived_change_nothing),
        cmocka_unit_test(test_only_gpu_to_gpu_pairs),
        cmocka_unit_test(test_p2p_off_is_no_evidence),
        cmocka_unit_test(test_unchecked_pass_is_no_evidence),
        cmocka_unit_test(test_concurrent_case_marks_each_transfer),
        cmocka_unit_test(test_verify_results_same_rule),
        cmocka_unit_test(test_stress_sums),
        cmocka_unit_test(test_doctor_reports_p2p_corrupts),
        cmocka_unit_test(test_check_integrity_fake_driver),
        cmocka_unit_test(test_check_integrity_keeps_caller_state),
    };

    setenv("P2PSCOPE_LIBCUDA", FAKE_LIBCUDA, 1);
    setenv("P2PSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("FAKE_CUDA_MODE", "gpus", 1);
    setenv("FAKE_CUDA_COUNT", "2", 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
