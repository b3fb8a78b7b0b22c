/*
 * What shapes NCCL, in the doctor: each NCCL rule fires on its facts and
 * stays quiet without them; the NCCL facts round-trip through JSON and an
 * older recording without them loads as "not known"; gathering reads the
 * fake NCCL's version and the NCCL_* settings without changing the
 * environment; psc_doctor_coll's branches on hand-made runs.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "p2pscope/bench.h"
#include "report/render_doctor.h"

#define OLD_RECORDING TEST_DATA "/h200x2-nv18.json"
#define MAXF 256

static psc_finding_t g_found[MAXF];

static size_t run(const psc_facts_t *f)
{
    size_t n = psc_doctor(f, g_found, MAXF);

    assert_true(n <= MAXF);
    for (size_t k = 1; k < n; k++)
        assert_true(g_found[k - 1].severity >= g_found[k].severity);
    return n;
}

static size_t run_coll(const psc_facts_t *f, const psc_coll_report_t *c, double bw)
{
    size_t n = psc_doctor_coll(f, c, bw, g_found, MAXF);

    assert_true(n <= MAXF);
    assert_int_equal(psc_doctor_coll(f, c, bw, NULL, 0), n); /* counting only: the same count */
    for (size_t k = 1; k < n; k++)
        assert_true(g_found[k - 1].severity >= g_found[k].severity);
    return n;
}

static const psc_finding_t *find(size_t n, const char *rule)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(g_found[k].rule, rule) == 0)
            return &g_found[k];
    return NULL;
}

static size_t count_prefix(size_t n, const char *prefix)
{
    size_t c = 0;

    for (size_t k = 0; k < n; k++)
        c += strncmp(g_found[k].rule, prefix, strlen(prefix)) == 0;
    return c;
}

/* The finding exists, with sev, and its text and evidence hold what they must. */
static const psc_finding_t *want(size_t n, const char *rule, psc_severity_t sev, const char *in_what,
                                 const char *in_evidence)
{
    const psc_finding_t *x = find(n, rule);

    if (!x)
        fail_msg("no %s finding", rule);
    assert_int_equal(x->severity, sev);
    if (in_what && !strstr(x->what, in_what))
        fail_msg("%s: \"%s\" lacks \"%s\"", rule, x->what, in_what);
    if (in_evidence && !strstr(x->evidence, in_evidence))
        fail_msg("%s: evidence \"%s\" lacks \"%s\"", rule, x->evidence, in_evidence);
    assert_true(x->fix[0] != '\0');
    return x;
}

/* n GPUs, every pair on path with can_access access, a current NCCL loaded, no settings. */
static psc_facts_t *machine(int n, psc_path_t path, int access)
{
    psc_facts_t *f = psc_facts_new();

    assert_non_null(f);
    snprintf(f->source, sizeof(f->source), "test");
    f->has_driver = 1;
    f->ngpu = n;
    f->host.numa_nodes = 1;
    f->host.hypervisor = 0;
    f->host.iommu = 0;
    f->nccl.known = f->nccl.loaded = 1;
    f->nccl.version = 22807;
    snprintf(f->nccl.path, sizeof(f->nccl.path), "libnccl.so.2");
    for (int i = 0; i < n; i++) {
        snprintf(f->gpu[i].name, sizeof(f->gpu[i].name), "NVIDIA H200");
        snprintf(f->gpu[i].pci_bus_id, sizeof(f->gpu[i].pci_bus_id), "0000:%02x:00.0", 0x10 * (i + 1));
        f->gpu[i].numa_node = 0;
        f->gpu[i].nvlink_count = 0;
        for (int j = 0; j < n; j++) {
            f->pair[i][j].path = i == j ? PSC_PATH_SELF : path;
            f->pair[i][j].nvlinks = i != j && path == PSC_PATH_NVLINK ? 18 : 0;
            f->pair[i][j].can_access = i == j ? -1 : access;
        }
    }
    return f;
}

static void set(psc_facts_t *f, const char *name, const char *value)
{
    psc_nccl_setting_t *s = &f->nccl.settings[f->nccl.nsettings++];

    snprintf(s->name, sizeof(s->name), "%s", name);
    snprintf(s->value, sizeof(s->value), "%s", value);
}

/* ---------------------------------------------------------------- the rules on the facts */

static void test_current_nccl_without_settings_is_quiet(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    size_t n;

    (void)state;
    n = run(f);
    assert_int_equal(count_prefix(n, "nccl_"), 0);
    assert_null(find(n, "not_checked_nccl"));
    psc_facts_free(f);
}

static void test_missing_nccl(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    const psc_finding_t *x;
    size_t n;

    (void)state;
    f->nccl.loaded = 0;
    f->nccl.version = 0;
    snprintf(f->nccl.note, sizeof(f->nccl.note), "no NCCL: libnccl.so.2 could not be loaded (not found)");
    n = run(f);
    x = want(n, "nccl_missing", PSC_SEV_INFO, "libnccl.so.2", "not found");
    assert_non_null(strstr(x->fix, "libnccl2"));
    assert_non_null(strstr(x->fix, "P2PSCOPE_LIBNCCL"));
    f->ngpu = 0; /* no GPU: coll could not run anyway */
    assert_null(find(run(f), "nccl_missing"));
    f->ngpu = 2;
    f->nccl.loaded = 1;
    f->nccl.version = 22807;
    assert_null(find(run(f), "nccl_missing"));
    psc_facts_free(f);
}

static void test_old_nccl(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    size_t n;

    (void)state;
    f->nccl.version = 21805;
    n = run(f);
    want(n, "nccl_old", PSC_SEV_INFO, "NCCL 2.18.5 is older than 2.19", "21805");
    f->nccl.version = 21900;
    assert_null(find(run(f), "nccl_old"));
    f->nccl.version = 21805;
    f->nccl.loaded = 0; /* a version is only read from a loaded NCCL */
    assert_null(find(run(f), "nccl_old"));
    psc_facts_free(f);
}

static void test_p2p_disabled(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    size_t n;

    (void)state;
    set(f, "NCCL_P2P_DISABLE", "1");
    n = run(f);
    want(n, "nccl_p2p_disabled", PSC_SEV_WARNING, "host memory (SHM)", "NCCL_P2P_DISABLE=1");
    assert_null(find(n, "nccl_shm_disabled")); /* said once, by nccl_p2p_disabled */
    set(f, "NCCL_SHM_DISABLE", "1");
    n = run(f);
    want(n, "nccl_p2p_disabled", PSC_SEV_WARNING, "network transport only", "NCCL_SHM_DISABLE=1");
    assert_null(find(n, "nccl_shm_disabled"));
    f->pair[0][1].integrity = 0; /* P2P gives wrong bytes: disabling it is the fix */
    assert_null(find(run(f), "nccl_p2p_disabled"));
    psc_facts_free(f);

    f = machine(2, PSC_PATH_NVLINK, 1);
    set(f, "NCCL_P2P_DISABLE", "0");
    assert_null(find(run(f), "nccl_p2p_disabled"));
    psc_facts_free(f);

    f = machine(2, PSC_PATH_SYS, 0); /* no pair could use P2P anyway */
    set(f, "NCCL_P2P_DISABLE", "1");
    assert_null(find(run(f), "nccl_p2p_disabled"));
    psc_facts_free(f);
}

static void test_shm_disabled(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_SYS, 0);
    size_t n;

    (void)state;
    set(f, "NCCL_SHM_DISABLE", "1");
    n = run(f);
    want(n, "nccl_shm_disabled", PSC_SEV_WARNING, "network transport only", "2 ordered GPU pairs without peer");
    psc_facts_free(f);

    f = machine(2, PSC_PATH_NVLINK, 1); /* every pair has P2P: SHM would not be used */
    set(f, "NCCL_SHM_DISABLE", "1");
    assert_null(find(run(f), "nccl_shm_disabled"));
    psc_facts_free(f);
}

static void test_p2p_level(void **state)
{
    static const struct {
        psc_path_t path;
        const char *level;
        int fires;
    } cases[] = {
        {PSC_PATH_PHB, "PIX", 1},  {PSC_PATH_PIX, "PIX", 0},  {PSC_PATH_SYS, "SYS", 0}, {PSC_PATH_NODE, "PXB", 1},
        {PSC_PATH_NODE, "PHB", 0}, {PSC_PATH_PXB, "1", 1},    {PSC_PATH_PXB, "2", 0},   {PSC_PATH_NVLINK, "LOC", 1},
        {PSC_PATH_NVLINK, "nvl", 0}, {PSC_PATH_PIX, "NVL", 1}, {PSC_PATH_SYS, "bogus", 0}, {PSC_PATH_SYS, "4", 0},
    };

    (void)state;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        psc_facts_t *f = machine(2, cases[k].path, 1);
        size_t n;

        set(f, "NCCL_P2P_LEVEL", cases[k].level);
        n = run(f);
        if (cases[k].fires)
            want(n, "nccl_p2p_level", PSC_SEV_WARNING, "NCCL does not use P2P", cases[k].level);
        else if (find(n, "nccl_p2p_level"))
            fail_msg("NCCL_P2P_LEVEL=%s on path %d: %s", cases[k].level, cases[k].path, find(n, "nccl_p2p_level")->what);
        psc_facts_free(f);
    }
}

static void test_p2p_level_skips_pairs_without_access(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_SYS, 0);

    (void)state;
    set(f, "NCCL_P2P_LEVEL", "PIX");
    assert_null(find(run(f), "nccl_p2p_level")); /* no P2P to lose */
    psc_facts_free(f);
}

static void test_settings_that_tune(void **state)
{
    static const struct {
        const char *name, *value, *rule;
        int fires;
    } cases[] = {
        {"NCCL_NVLS_ENABLE", "0", "nccl_nvls_off", 1},          {"NCCL_NVLS_ENABLE", "1", "nccl_nvls_off", 0},
        {"NCCL_CUMEM_ENABLE", "0", "nccl_cumem_off", 1},        {"NCCL_CUMEM_ENABLE", "1", "nccl_cumem_off", 0},
        {"NCCL_ALGO", "Ring", "nccl_forced", 1},                {"NCCL_PROTO", "Simple", "nccl_forced", 1},
        {"NCCL_MAX_NCHANNELS", "2", "nccl_few_channels", 1},    {"NCCL_MAX_NCHANNELS", "16", "nccl_few_channels", 0},
        {"NCCL_BUFFSIZE", "1048576", "nccl_small_buffsize", 1}, {"NCCL_BUFFSIZE", "8388608", "nccl_small_buffsize", 0},
        {"NCCL_BUFFSIZE", "0x100000", "nccl_small_buffsize", 1}, {"NCCL_IB_DISABLE", "1", "nccl_net_set", 1},
        {"NCCL_IB_DISABLE", "0", "nccl_net_set", 0},            {"NCCL_NET", "Socket", "nccl_net_set", 1},
        {"NCCL_DEBUG", "TRACE", "nccl_debug_trace", 1},         {"NCCL_DEBUG", "INFO", "nccl_debug_trace", 0},
    };

    (void)state;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
        size_t n;

        f->gpu[0].nvlink_count = 1; /* an NVSwitch machine */
        f->gpu[0].nvlinks[0].active = 1;
        f->gpu[0].nvlinks[0].remote = PSC_REMOTE_SWITCH;
        n = run(f);
        assert_null(find(n, cases[k].rule)); /* not without the setting */
        set(f, cases[k].name, cases[k].value);
        n = run(f);
        if (cases[k].fires) {
            want(n, cases[k].rule, PSC_SEV_INFO, cases[k].name, cases[k].value);
        } else if (find(n, cases[k].rule)) {
            fail_msg("%s=%s: %s", cases[k].name, cases[k].value, find(n, cases[k].rule)->what);
        }
        psc_facts_free(f);
    }
}

static void test_nvls_off_needs_nvswitch(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1); /* direct NVLinks, no switch */

    (void)state;
    set(f, "NCCL_NVLS_ENABLE", "0");
    assert_null(find(run(f), "nccl_nvls_off"));
    psc_facts_free(f);
}

static void test_not_checked_without_facts(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    size_t n;

    (void)state;
    memset(&f->nccl, 0, sizeof(f->nccl)); /* facts made before p2pscope read NCCL */
    n = run(f);
    want(n, "not_checked_nccl", PSC_SEV_INFO, "not checked", "test");
    assert_int_equal(count_prefix(n, "nccl_"), 0);
    psc_facts_free(f);
}

/* The doctor's text: one line of NCCL facts under the summary, none when they are not known. */
static char *render(const psc_facts_t *f)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);

    assert_non_null(m);
    psc_render_findings(m, f, g_found, run(f));
    assert_int_equal(fclose(m), 0);
    return text;
}

static void test_text_shows_nccl_facts(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    char *text;

    (void)state;
    set(f, "NCCL_P2P_DISABLE", "1");
    set(f, "NCCL_ALGO", "Ring");
    set(f, "NCCL_NET", "a\nb"); /* as a recording may hold it */
    text = render(f);
    assert_non_null(
        strstr(text, "\nnccl: 2.28.7 (libnccl.so.2); settings: NCCL_P2P_DISABLE=1 NCCL_ALGO=Ring NCCL_NET=a\\x0ab\n"));
    free(text);
    f->nccl.nsettings = 0;
    f->nccl.loaded = 0;
    snprintf(f->nccl.note, sizeof(f->nccl.note), "no NCCL: gone");
    text = render(f);
    assert_non_null(strstr(text, "\nnccl: not loaded (no NCCL: gone); settings: none"));
    free(text);
    f->nccl.known = 0;
    text = render(f);
    assert_null(strstr(text, "\nnccl:"));
    free(text);
    psc_facts_free(f);
}

/* ---------------------------------------------------------------- JSON */

static char g_dir[] = "/tmp/psc-doctor-nccl-XXXXXX";

static psc_status_t save_load(const psc_facts_t *in, psc_facts_t *out, char *err, size_t errlen)
{
    char path[128];
    psc_status_t st;

    snprintf(path, sizeof(path), "%s/rec.json", g_dir);
    st = psc_facts_save(in, path, err, errlen);
    if (st == PSC_OK)
        st = psc_facts_load(path, out, err, errlen);
    unlink(path);
    return st;
}

static void test_old_recording_loads_as_not_known(void **state)
{
    psc_facts_t *f = psc_facts_new();
    char err[512] = "";
    size_t n;

    (void)state;
    assert_int_equal(psc_facts_load(OLD_RECORDING, f, err, sizeof(err)), PSC_OK);
    assert_int_equal(f->nccl.known, 0);
    assert_int_equal(f->nccl.nsettings, 0);
    n = run(f);
    want(n, "not_checked_nccl", PSC_SEV_INFO, "NCCL", OLD_RECORDING);
    assert_int_equal(count_prefix(n, "nccl_"), 0);
    psc_facts_free(f);
}

static void test_json_round_trip(void **state)
{
    psc_facts_t *f = psc_facts_new(), *g = psc_facts_new();
    char err[512] = "";

    (void)state;
    assert_int_equal(psc_facts_load(OLD_RECORDING, f, err, sizeof(err)), PSC_OK);
    f->nccl.known = 1;
    f->nccl.loaded = 1;
    f->nccl.version = 21805;
    snprintf(f->nccl.path, sizeof(f->nccl.path), "/opt/nccl/lib/libnccl.so.2");
    set(f, "NCCL_P2P_LEVEL", "PIX");
    set(f, "NCCL_ALGO", "Ring,Tree");
    set(f, "NCCL_SOCKET_IFNAME", "=eth0");
    assert_int_equal(save_load(f, g, err, sizeof(err)), PSC_OK);
    assert_int_equal(g->nccl.known, 1);
    assert_int_equal(g->nccl.loaded, 1);
    assert_int_equal(g->nccl.version, 21805);
    assert_string_equal(g->nccl.path, f->nccl.path);
    assert_string_equal(g->nccl.note, "");
    assert_int_equal(g->nccl.nsettings, 3);
    for (int k = 0; k < 3; k++) { /* in the order read */
        assert_string_equal(g->nccl.settings[k].name, f->nccl.settings[k].name);
        assert_string_equal(g->nccl.settings[k].value, f->nccl.settings[k].value);
    }

    /* Not loaded: the reason survives, the version stays unknown. */
    memset(&f->nccl, 0, sizeof(f->nccl));
    f->nccl.known = 1;
    snprintf(f->nccl.path, sizeof(f->nccl.path), "libnccl.so.2");
    snprintf(f->nccl.note, sizeof(f->nccl.note), "no NCCL: libnccl.so.2 could not be loaded");
    assert_int_equal(save_load(f, g, err, sizeof(err)), PSC_OK);
    assert_int_equal(g->nccl.known, 1);
    assert_int_equal(g->nccl.loaded, 0);
    assert_int_equal(g->nccl.version, 0);
    assert_string_equal(g->nccl.note, f->nccl.note);
    assert_int_equal(g->nccl.nsettings, 0);

    /* Not known: written as null, read back as not known. */
    memset(&f->nccl, 0, sizeof(f->nccl));
    g->nccl.known = 1;
    assert_int_equal(save_load(f, g, err, sizeof(err)), PSC_OK);
    assert_int_equal(g->nccl.known, 0);
    psc_facts_free(f);
    psc_facts_free(g);
}

/* The old recording with "nccl" set to text; refused naming want, or (want NULL) loaded. */
static void nccl_doc(const char *nccl_json, const char *want_err)
{
    json_error_t jerr;
    json_t *doc = json_load_file(OLD_RECORDING, 0, &jerr), *v = json_loads(nccl_json, JSON_DECODE_ANY, &jerr);
    psc_facts_t *f = psc_facts_new();
    char path[128], err[512] = "";
    psc_status_t st;

    assert_non_null(doc);
    assert_non_null(v);
    assert_int_equal(json_object_set_new(doc, "nccl", v), 0);
    snprintf(path, sizeof(path), "%s/hostile.json", g_dir);
    assert_int_equal(json_dump_file(doc, path, 0), 0);
    f->ngpu = 5; /* the caller's, untouched by a refused load */
    st = psc_facts_load(path, f, err, sizeof(err));
    unlink(path);
    json_decref(doc);
    if (!want_err) {
        if (st != PSC_OK)
            fail_msg("%s: %s", nccl_json, err);
    } else {
        if (st != PSC_ERR_INVALID || !strstr(err, want_err))
            fail_msg("%s: got %d \"%s\", want \"%s\"", nccl_json, st, err, want_err);
        assert_int_equal(f->ngpu, 5);
        assert_null(strchr(err, '\n'));
    }
    psc_facts_free(f);
}

static void test_json_refuses_bad_nccl_facts(void **state)
{
    char many[4096];
    size_t o;

    (void)state;
    nccl_doc("null", NULL);
    nccl_doc("{\"loaded\": 0, \"settings\": []}", NULL);
    nccl_doc("5", "nccl: 5 is an integer: accepted an object or null");
    nccl_doc("{\"loaded\": 2}", "nccl.loaded: 2 is out of range");
    nccl_doc("{\"loaded\": 1}", "nccl.version: missing for a loaded NCCL");
    nccl_doc("{\"loaded\": 1, \"version\": -3}", "nccl.version: -3 is out of range");
    nccl_doc("{\"settings\": {}}", "nccl.settings: {} is an object: accepted an array");
    nccl_doc("{\"settings\": [5]}", "nccl.settings[0]: 5 is an integer: accepted an object");
    nccl_doc("{\"settings\": [{\"name\": \"PATH\", \"value\": \"/bin\"}]}",
             "nccl.settings[0].name: \"PATH\" is not an NCCL setting");
    nccl_doc("{\"settings\": [{\"name\": \"NCCL_ALGO\", \"value\": 3}]}",
             "nccl.settings[0].value: 3 is an integer: accepted a string");
    nccl_doc("{\"settings\": [{\"name\": \"NCCL_ALGO\", \"value\": \"Ring\"}, {\"name\": \"NCCL_ALGO\", "
             "\"value\": \"Tree\"}]}",
             "nccl.settings[1].name: NCCL_ALGO is also nccl.settings[0]'s");
    o = (size_t)snprintf(many, sizeof(many), "{\"settings\": [");
    for (int k = 0; k <= PSC_MAX_NCCL_ENV; k++)
        o += (size_t)snprintf(many + o, sizeof(many) - o, "%s{\"name\": \"NCCL_X%d\", \"value\": \"1\"}", k ? "," : "",
                              k);
    snprintf(many + o, sizeof(many) - o, "]}");
    nccl_doc(many, "nccl.settings: 25 settings: accepted at most 24");
}

/* ---------------------------------------------------------------- gathering */

static psc_context_t *g_ctx;

static const char *const g_vars[] = {"P2PSCOPE_LIBNCCL", "FAKE_NCCL_VERSION", "NCCL_P2P_DISABLE", "NCCL_ALGO",
                                     "NCCL_DEBUG", "NCCL_NOT_A_PATH_SETTING"};
static char *g_saved[sizeof(g_vars) / sizeof(g_vars[0])];

/* Each case sets what it needs; the caller's values come back after it. */
static int save_env(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(g_vars) / sizeof(g_vars[0]); k++) {
        const char *v = getenv(g_vars[k]);

        g_saved[k] = v ? strdup(v) : NULL;
        unsetenv(g_vars[k]);
    }
    return 0;
}

static int restore_env(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(g_vars) / sizeof(g_vars[0]); k++) {
        if (g_saved[k])
            setenv(g_vars[k], g_saved[k], 1);
        else
            unsetenv(g_vars[k]);
        free(g_saved[k]);
        g_saved[k] = NULL;
    }
    return 0;
}

static void test_gather_reads_fake_nccl(void **state)
{
    psc_facts_t *f = psc_facts_new();

    (void)state;
    setenv("P2PSCOPE_LIBNCCL", FAKE_LIBNCCL, 1);
    setenv("FAKE_NCCL_VERSION", "21805", 1);
    setenv("NCCL_DEBUG", "INFO\nINJECTED", 1);
    setenv("NCCL_P2P_DISABLE", "1", 1);
    setenv("NCCL_NOT_A_PATH_SETTING", "1", 1);
    assert_int_equal(psc_facts_gather(g_ctx, f), PSC_OK);
    assert_int_equal(f->nccl.known, 1);
    assert_int_equal(f->nccl.loaded, 1);
    assert_int_equal(f->nccl.version, 21805);
    assert_string_equal(f->nccl.path, FAKE_LIBNCCL);
    assert_string_equal(f->nccl.note, "");
    /* In PSC_NCCL_ENV_NAMES' order; one line each; a setting that shapes no path is not kept. */
    assert_int_equal(f->nccl.nsettings, 2);
    assert_string_equal(f->nccl.settings[0].name, "NCCL_P2P_DISABLE");
    assert_string_equal(f->nccl.settings[0].value, "1");
    assert_string_equal(f->nccl.settings[1].name, "NCCL_DEBUG");
    assert_string_equal(f->nccl.settings[1].value, "INFO?INJECTED");
    /* Only read: the environment is as the test set it. */
    assert_string_equal(getenv("NCCL_DEBUG"), "INFO\nINJECTED");
    assert_string_equal(getenv("NCCL_P2P_DISABLE"), "1");
    assert_string_equal(getenv("P2PSCOPE_LIBNCCL"), FAKE_LIBNCCL);
    assert_null(getenv("NCCL_ALGO"));
    assert_non_null(find(run(f), "nccl_old"));
    psc_facts_free(f);

    /* Another version, read afresh. */
    f = psc_facts_new();
    setenv("FAKE_NCCL_VERSION", "22807", 1);
    assert_int_equal(psc_facts_gather(g_ctx, f), PSC_OK);
    assert_int_equal(f->nccl.version, 22807);
    assert_null(find(run(f), "nccl_old"));
    psc_facts_free(f);
}

static void test_gather_without_nccl(void **state)
{
    psc_facts_t *f = psc_facts_new();
    size_t n;

    (void)state;
    setenv("P2PSCOPE_LIBNCCL", "/nonexistent/libnccl.so.2", 1);
    assert_int_equal(psc_facts_gather(g_ctx, f), PSC_OK); /* the rest of the facts are unaffected */
    assert_true(f->ngpu > 0);
    assert_int_equal(f->nccl.known, 1);
    assert_int_equal(f->nccl.loaded, 0);
    assert_int_equal(f->nccl.version, 0);
    assert_string_equal(f->nccl.path, "/nonexistent/libnccl.so.2");
    assert_non_null(strstr(f->nccl.note, "/nonexistent/libnccl.so.2"));
    assert_null(strchr(f->nccl.note, '\n'));
    assert_int_equal(f->nccl.nsettings, 0);
    n = run(f);
    want(n, "nccl_missing", PSC_SEV_INFO, "/nonexistent/libnccl.so.2", "/nonexistent/libnccl.so.2");
    psc_facts_free(f);
}

/* ---------------------------------------------------------------- psc_doctor_coll */

#define MAXROWS 8
static psc_coll_row_t g_rows[MAXROWS];
static psc_coll_rank_t g_ranks[4];

/* An all-reduce over nranks GPUs (gpu0.. of machine()), sizes doubling up to top; busbw at each size. */
static psc_coll_report_t report(int nranks, uint64_t top, double busbw)
{
    psc_coll_report_t c;

    memset(&c, 0, sizeof(c));
    memset(g_rows, 0, sizeof(g_rows));
    memset(g_ranks, 0, sizeof(g_ranks));
    c.coll = PSC_COLL_ALL_REDUCE;
    c.nranks = nranks;
    c.nprocs = 1;
    c.ranks = g_ranks;
    for (int r = 0; r < nranks && r < 4; r++) {
        g_ranks[r].rank = r;
        snprintf(g_ranks[r].host, sizeof(g_ranks[r].host), "node1");
        snprintf(g_ranks[r].pci_bus_id, sizeof(g_ranks[r].pci_bus_id), "00000000:%02x:00.0", 0x10 * (r + 1));
    }
    c.rows = g_rows;
    c.nrows = 4;
    for (int k = 0; k < 4; k++) {
        g_rows[k].bytes = top >> (3 - k);
        for (int p = 0; p < 2; p++) {
            g_rows[k].r[p].ran = 1;
            g_rows[k].r[p].busbw_gbs = busbw;
        }
    }
    c.max_bytes = top;
    return c;
}

static void test_coll_nothing_to_explain(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    psc_coll_report_t c = report(2, 1ull << 30, 100);

    (void)state;
    assert_int_equal(psc_doctor_coll(f, NULL, 100, g_found, MAXF), 0);
    assert_int_equal(run_coll(f, &c, 150), 0); /* 67 % of the links: not far below */
    for (int k = 0; k < 4; k++)
        g_rows[k].r[0].ran = g_rows[k].r[1].ran = 0;
    assert_int_equal(run_coll(f, &c, 1000), 0); /* no row ran */
    psc_facts_free(f);
}

static void test_coll_slow_without_a_cause(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    psc_coll_report_t c = report(2, 1ull << 30, 100);
    size_t n;

    (void)state;
    n = run_coll(f, &c, 250); /* 40 % */
    assert_int_equal(n, 1);
    want(n, "coll_slow_unknown", PSC_SEV_WARNING, "40%", "all_reduce");
    assert_non_null(strstr(g_found[0].fix, "NCCL_DEBUG=INFO"));
    assert_non_null(strstr(g_found[0].fix, "via P2P/IPC"));
    /* Without facts at all: still what to try. */
    n = run_coll(NULL, &c, 250);
    want(n, "coll_slow_unknown", PSC_SEV_WARNING, NULL, "not known");
    psc_facts_free(f);
}

/* The best busbw of the largest sizes decides, not a small size's. */
static void test_coll_largest_sizes_decide(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    psc_coll_report_t c = report(2, 1ull << 30, 10);
    size_t n;

    (void)state;
    g_rows[0].r[0].busbw_gbs = 500; /* 128 MiB: more than a factor 4 below the largest */
    n = run_coll(f, &c, 100);
    want(n, "coll_slow_unknown", PSC_SEV_WARNING, "busbw 10.0 GB/s", NULL);
    g_rows[2].r[1].busbw_gbs = 90; /* 512 MiB in place: within the largest sizes */
    assert_int_equal(run_coll(f, &c, 100), 0);
    psc_facts_free(f);
}

/* Our own all-reduce's rows beside NCCL's do not hide a slow NCCL; alone, they are what is judged. */
static void test_coll_own_rows_do_not_speak_for_nccl(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    psc_coll_report_t c = report(2, 1ull << 30, 10);
    size_t n;

    (void)state;
    c.nrows = 8;
    for (int k = 4; k < 8; k++) { /* a row of ours after each of NCCL's, fast */
        g_rows[k] = g_rows[k - 4];
        g_rows[k].impl = PSC_COLL_IMPL_P2PSCOPE;
        g_rows[k].r[0].busbw_gbs = g_rows[k].r[1].busbw_gbs = 95;
    }
    n = run_coll(f, &c, 100);
    want(n, "coll_slow_unknown", PSC_SEV_WARNING, "busbw 10.0 GB/s", NULL);
    for (int k = 0; k < 4; k++) /* NCCL's did not run: ours are judged */
        g_rows[k].r[0].ran = g_rows[k].r[1].ran = 0;
    assert_int_equal(run_coll(f, &c, 100), 0);
    psc_facts_free(f);
}

static void test_coll_one_rank_and_no_bw(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    psc_coll_report_t c = report(1, 1ull << 30, 0);
    size_t n;

    (void)state;
    n = run_coll(f, &c, 300);
    assert_int_equal(n, 1);
    want(n, "coll_one_rank", PSC_SEV_INFO, "0 by definition", NULL);
    c = report(2, 1ull << 30, 10);
    n = run_coll(f, &c, 0);
    assert_int_equal(n, 1);
    want(n, "coll_not_compared", PSC_SEV_INFO, NULL, NULL);
    psc_facts_free(f);
}

static void test_coll_p2p_settings(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    psc_coll_report_t c = report(2, 1ull << 30, 20);
    size_t n;

    (void)state;
    set(f, "NCCL_P2P_DISABLE", "1");
    n = run_coll(f, &c, 300);
    want(n, "coll_p2p_disabled", PSC_SEV_WARNING, "host memory (SHM)", NULL);
    assert_null(find(n, "coll_slow_unknown"));
    set(f, "NCCL_SHM_DISABLE", "1");
    n = run_coll(f, &c, 300);
    want(n, "coll_p2p_disabled", PSC_SEV_WARNING, "network transport", NULL);
    psc_facts_free(f);

    f = machine(2, PSC_PATH_NODE, 1);
    set(f, "NCCL_P2P_LEVEL", "PXB");
    n = run_coll(f, &c, 50);
    want(n, "coll_p2p_level", PSC_SEV_WARNING, "NCCL_P2P_LEVEL=PXB", NULL);
    want(n, "coll_p2p_level", PSC_SEV_WARNING, "(NODE apart)", NULL);
    assert_null(find(n, "coll_slow_unknown"));
    psc_facts_free(f);

    f = machine(2, PSC_PATH_NODE, 1);
    set(f, "NCCL_P2P_LEVEL", "PHB"); /* NCCL's PHB covers the NUMA node */
    n = run_coll(f, &c, 50);
    assert_null(find(n, "coll_p2p_level"));
    want(n, "coll_slow_unknown", PSC_SEV_WARNING, NULL, NULL);
    psc_facts_free(f);
}

static void test_coll_pairs_of_the_run(void **state)
{
    psc_facts_t *f = machine(4, PSC_PATH_PIX, 1);
    psc_coll_report_t c = report(2, 1ull << 30, 5);
    size_t n;

    (void)state;
    f->pair[2][3].can_access = f->pair[3][2].can_access = 0; /* GPUs the run did not use */
    n = run_coll(f, &c, 50);
    assert_null(find(n, "coll_no_peer_access"));
    want(n, "coll_slow_unknown", PSC_SEV_WARNING, NULL, NULL);
    f->pair[1][0].can_access = 0; /* one of the run's */
    n = run_coll(f, &c, 50);
    want(n, "coll_no_peer_access", PSC_SEV_WARNING, "gpu1 cannot access gpu0", NULL);
    assert_null(find(n, "coll_slow_unknown"));
    /* Ranks on GPUs these facts do not have: every pair here is judged. */
    f->pair[1][0].can_access = 1;
    snprintf(g_ranks[0].pci_bus_id, sizeof(g_ranks[0].pci_bus_id), "0000:99:00.0");
    snprintf(g_ranks[1].pci_bus_id, sizeof(g_ranks[1].pci_bus_id), "0000:9a:00.0");
    n = run_coll(f, &c, 50);
    want(n, "coll_no_peer_access", PSC_SEV_WARNING, "gpu2 cannot access gpu3", NULL);
    psc_facts_free(f);
}

static void test_coll_small_sizes_and_nodes(void **state)
{
    psc_facts_t *f = machine(2, PSC_PATH_NVLINK, 1);
    psc_coll_report_t c = report(2, 32ull << 20, 20);
    size_t n;

    (void)state;
    n = run_coll(f, &c, 300);
    want(n, "coll_small_sizes", PSC_SEV_INFO, "32 MiB", NULL);
    assert_null(find(n, "coll_slow_unknown"));
    c = report(2, 64ull << 20, 20);
    n = run_coll(f, &c, 300);
    assert_null(find(n, "coll_small_sizes"));
    c = report(2, 1ull << 30, 20);
    snprintf(g_ranks[1].host, sizeof(g_ranks[1].host), "node2");
    n = run_coll(f, &c, 300);
    want(n, "coll_multi_node", PSC_SEV_INFO, "several nodes", NULL);
    assert_null(find(n, "coll_slow_unknown"));
    psc_facts_free(f);
}

static int setup(void **state)
{
    static const char *const nccl_env[] = {PSC_NCCL_ENV_NAMES};
    char err[256];

    /* the tests set the NCCL_* settings they count: none from the environment they run in (the GPU
       machines' scripts set NCCL_NVLS_ENABLE=0) */
    for (size_t k = 0; k < sizeof(nccl_env) / sizeof(nccl_env[0]); k++)
        unsetenv(nccl_env[k]);
    (void)state;
    if (!mkdtemp(g_dir))
        return -1;
    setenv("P2PSCOPE_LIBCUDA", FAKE_LIBCUDA, 1);
    setenv("P2PSCOPE_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("FAKE_CUDA_MODE", "gpus", 1);
    return psc_context_create(&g_ctx, err, sizeof(err)) == PSC_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    psc_context_destroy(g_ctx);
    return rmdir(g_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current_nccl_without_settings_is_quiet),
        cmocka_unit_test(test_missing_nccl),
        cmocka_unit_test(test_old_nccl),
        cmocka_unit_test(test_p2p_disabled),
        cmocka_unit_test(test_shm_disabled),
        cmocka_unit_test(test_p2p_level),
        cmocka_unit_test(test_p2p_level_skips_pairs_without_access),
        cmocka_unit_test(test_settings_that_tune),
        cmocka_unit_test(test_nvls_off_needs_nvswitch),
        cmocka_unit_test(test_not_checked_without_facts),
        cmocka_unit_test(test_text_shows_nccl_facts),
        cmocka_unit_test(test_old_recording_loads_as_not_known),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_json_refuses_bad_nccl_facts),
        cmocka_unit_test_setup_teardown(test_gather_reads_fake_nccl, save_env, restore_env),
        cmocka_unit_test_setup_teardown(test_gather_without_nccl, save_env, restore_env),
        cmocka_unit_test(test_coll_nothing_to_explain),
        cmocka_unit_test(test_coll_slow_without_a_cause),
        cmocka_unit_test(test_coll_largest_sizes_decide),
        cmocka_unit_test(test_coll_own_rows_do_not_speak_for_nccl),
        cmocka_unit_test(test_coll_one_rank_and_no_bw),
        cmocka_unit_test(test_coll_p2p_settings),
        cmocka_unit_test(test_coll_pairs_of_the_run),
        cmocka_unit_test(test_coll_small_sizes_and_nodes),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
