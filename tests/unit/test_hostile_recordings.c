/*
 * Recordings made by someone else cannot take the process down: XML that
 * crashes or swamps hwloc, special files as the recording or inside a
 * captured /sys tree, symbolic links leading out of a capture, unreadable
 * files, a v3 tag inside a comment, and the caller's environment.
 *
 * Every load that could crash or hang runs in a forked child with an alarm,
 * so a regression fails its test instead of taking the suite down.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>

#include "machine/host_topo.h"
#include "machine/xml_sandbox.h"
#include "p2pscope/bench.h"
#include "topo/sysfs_facts.h"

extern char **environ;

/* The captured /sys tree of test_topo_replay, extracted once: it takes seconds. */
#define CAPTURE "40intel64-2g2n4c+pci"
/* A bridge whose config space hwloc reads while discovering PCI. */
#define BRIDGE_CONFIG "/sys/devices/pci0000:00/0000:00:03.0/config"
#define SECRET "s3cret-outside-the-capture"

static char g_dir[64], g_cap[128];

/* What a load in a child gives back. */
typedef struct {
    int died;          /* signal that ended the child (SIGALRM: it hung), -1 other trouble, 0 none */
    int st;
    int ngpu;
    int children_left; /* parse processes not reaped */
    double seconds;
    char err[512];
    char cmdline[512];
} load_result_t;

static void writef(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * psc_facts_load(path) in a forked child killed by an alarm after `limit`
 * seconds. Asserts nothing itself, so the caller can put a capture back in
 * order first; assert_alive() then. as_nobody drops root first (for
 * permission tests that root would pass).
 */
/* load_guarded's died when root could not become nobody (a user namespace without that id, say). */
#define PSC__NO_NOBODY (-3)

static load_result_t load_guarded(const char *path, unsigned limit, int as_nobody)
{
    static const int crash[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
    load_result_t r;
    int fds[2], status = 0;
    ssize_t n;
    pid_t pid;

    memset(&r, 0, sizeof(r));
    r.died = -1;
    if (pipe(fds) != 0)
        return r;
    pid = fork();
    if (pid == 0) {
        psc_facts_t *f = psc_facts_new();
        double t0;

        close(fds[0]);
        /* cmocka's handlers would go on running the suite in here. */
        for (size_t i = 0; i < sizeof(crash) / sizeof(crash[0]); i++)
            signal(crash[i], SIG_DFL);
        alarm(limit);
        if (as_nobody && geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(3);
        t0 = now();
        r.st = psc_facts_load(path, f, r.err, sizeof(r.err));
        r.seconds = now() - t0;
        r.ngpu = f->ngpu;
        snprintf(r.cmdline, sizeof(r.cmdline), "%s", f->host.cmdline);
        r.children_left = !(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
        psc_facts_free(f);
        if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
            _exit(4);
        _exit(0);
    }
    close(fds[1]);
    n = pid > 0 ? read(fds[0], &r, sizeof(r)) : 0;
    close(fds[0]);
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        r.died = -1;
    else if (WIFSIGNALED(status))
        r.died = WTERMSIG(status);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
        r.died = PSC__NO_NOBODY;
    else
        r.died = WIFEXITED(status) && WEXITSTATUS(status) == 0 && n == (ssize_t)sizeof(r) ? 0 : -1;
    return r;
}

static void assert_alive(const load_result_t *r)
{
    if (r->died > 0)
        fail_msg("the load killed the process: signal %d%s", r->died, r->died == SIGALRM ? " (it hung)" : "");
    assert_int_equal(r->died, 0);
}

/* A one-machine hwloc v2 topology around `extra` objects of the machine. */
static void write_topology(const char *path, const char *machine_attrs, const char *pu_attrs, const char *extra,
                           size_t extra_count)
{
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    fprintf(fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
                "<topology version=\"2.0\">\n"
                "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\" %s allowed_cpuset=\"0x1\" nodeset=\"0x1\" "
                "complete_nodeset=\"0x1\" allowed_nodeset=\"0x1\" gp_index=\"1\">\n"
                "<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\" "
                "complete_nodeset=\"0x1\" gp_index=\"2\" local_memory=\"1000\"/>\n"
                "<object type=\"PU\" cpuset=\"0x1\" complete_cpuset=\"0x1\" nodeset=\"0x1\" complete_nodeset=\"0x1\" "
                "gp_index=\"3\" %s/>\n",
            machine_attrs, pu_attrs);
    for (size_t i = 0; i < extra_count; i++)
        fprintf(fp, extra, (unsigned)(i >> 16), (unsigned)(i >> 8) & 0xff, (unsigned)(i >> 3) & 0x1f,
                (unsigned)i & 7, (unsigned)(i + 10));
    fputs("</object>\n</topology>\n", fp);
    assert_int_equal(fclose(fp), 0);
}

static void assert_refused_quickly(const load_result_t *r, const char *words)
{
    assert_alive(r);
    if (!strstr(r->err, words))
        fail_msg("\"%s\" does not say \"%s\"", r->err, words);
    assert_int_equal(r->st, PSC_ERR_INVALID);
    assert_null(strchr(r->err, '\n'));
    assert_true(r->seconds < 9.0); /* a hang would run into the 10 s deadline */
    assert_false(r->children_left);
}

/* hwloc 2.9 dereferences the missing set: a segfault inside the caller before. */
static void test_xml_without_complete_cpuset(void **state)
{
    char path[160];
    load_result_t r;

    (void)state;
    snprintf(path, sizeof(path), "%s/no-complete-cpuset.xml", g_dir);
    write_topology(path, "", "os_index=\"0\"", "", 0);
    r = load_guarded(path, 30, 0);
    /* hwloc 2.9 crashes on it (a fixed hwloc refuses it): one line naming the file either way. */
    assert_alive(&r);
    if (r.st == PSC_ERR_INVALID)
        assert_refused_quickly(&r, "crashed");
    else
        assert_int_equal(r.st, PSC_ERR_IO);
    assert_null(strchr(r.err, '\n'));
    assert_non_null(strstr(r.err, path));
    unlink(path);
}

/* 10^5 GPUs side by side: tens of seconds in hwloc and our PCI walks before. */
static void test_xml_with_1e5_siblings(void **state)
{
    char path[160];
    load_result_t r;

    (void)state;
    snprintf(path, sizeof(path), "%s/siblings.xml", g_dir);
    write_topology(path, "complete_cpuset=\"0x1\"", "os_index=\"0\"",
                   "<object type=\"PCIDev\" pci_busid=\"%04x:%02x:%02x.%x\" pci_type=\"0302 [10de:1db5] "
                   "[10de:1249] a1\" pci_link_speed=\"0\" gp_index=\"%u\"/>\n",
                   100000);
    r = load_guarded(path, 10, 0);
    assert_refused_quickly(&r, "more than 65536 objects");
    unlink(path);
}

/* A bitmap sized by a PU's OS index: a gigabyte and fifteen seconds before. */
static void test_xml_with_huge_os_index(void **state)
{
    char path[160];
    load_result_t r;

    (void)state;
    snprintf(path, sizeof(path), "%s/huge-os-index.xml", g_dir);
    write_topology(path, "complete_cpuset=\"0x1\"", "os_index=\"2000000000\"", "", 0);
    r = load_guarded(path, 10, 0);
    assert_refused_quickly(&r, "OS index 2000000000");
    unlink(path);
}

/* The XML inside a JSON recording is someone else's too: the crashing one, in the H200 recording. */
static void test_json_with_crashing_xml(void **state)
{
    char path[160], xml[160];
    json_t *doc = json_load_file(TEST_DATA "/h200x2-nv18.json", 0, NULL);
    char *text = NULL;
    size_t len = 0;
    FILE *fp;
    load_result_t r;

    (void)state;
    assert_non_null(doc);
    snprintf(xml, sizeof(xml), "%s/no-complete-cpuset.xml", g_dir);
    write_topology(xml, "", "os_index=\"0\"", "", 0);
    fp = fopen(xml, "r");
    assert_non_null(fp);
    assert_true(getdelim(&text, &len, '\0', fp) > 0);
    fclose(fp);
    assert_int_equal(json_object_set_new(doc, "hwloc_xml", json_string(text)), 0);
    snprintf(path, sizeof(path), "%s/crashing-xml.json", g_dir);
    assert_int_equal(json_dump_file(doc, path, 0), 0);
    json_decref(doc);
    free(text);
    r = load_guarded(path, 10, 0);
    assert_alive(&r);
    assert_true(r.seconds < 9.0); /* a hang would run into the 10 s deadline */
    assert_false(r.children_left);
    /* Loaded without the XML, or refused naming it; either way one line and no crash. */
    if (r.st != PSC_OK && !(r.st == PSC_ERR_INVALID && strstr(r.err, "hwloc_xml") && strstr(r.err, "crashed")))
        fail_msg("status %d: %s", r.st, r.err);
    assert_null(strchr(r.err, '\n'));
    unlink(path);
    unlink(xml);
}

/* Opening a FIFO waits for a writer that never comes. */
static void test_fifo_as_recording(void **state)
{
    char path[160];
    load_result_t r;

    (void)state;
    snprintf(path, sizeof(path), "%s/topo.xml", g_dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    r = load_guarded(path, 5, 0);
    assert_refused_quickly(&r, "FIFO");
    assert_non_null(strstr(r.err, "accepted"));
    unlink(path);
}

/* Put a FIFO where one file of the capture is (or would be), load, put things back. */
static load_result_t load_capture_with_fifo(const char *rel)
{
    char path[256], saved[270];
    load_result_t r;
    int had;

    snprintf(path, sizeof(path), "%s%s", g_cap, rel);
    snprintf(saved, sizeof(saved), "%s.saved", path);
    had = access(path, F_OK) == 0;
    if (had)
        assert_int_equal(rename(path, saved), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    r = load_guarded(g_cap, 5, 0);
    assert_int_equal(unlink(path), 0);
    if (had)
        assert_int_equal(rename(saved, path), 0);
    return r;
}

static void test_fifo_as_captured_cmdline(void **state)
{
    load_result_t r = load_capture_with_fifo("/proc/cmdline");

    (void)state;
    assert_refused_quickly(&r, "FIFO");
    assert_non_null(strstr(r.err, "proc/cmdline"));
}

static void test_fifo_as_captured_bridge_config(void **state)
{
    load_result_t r = load_capture_with_fifo(BRIDGE_CONFIG);

    (void)state;
    assert_refused_quickly(&r, "FIFO");
    assert_non_null(strstr(r.err, "0000:00:03.0/config"));
}

/* proc/cmdline (the capture has none) -> a file outside the capture, or gone again. */
static void with_escaping_cmdline(int on)
{
    char path[256], outside[160];

    snprintf(path, sizeof(path), "%s/proc/cmdline", g_cap);
    snprintf(outside, sizeof(outside), "%s/outside", g_dir);
    if (on) {
        writef(outside, SECRET "\n");
        assert_int_equal(symlink(outside, path), 0);
    } else {
        assert_int_equal(unlink(path), 0);
        unlink(outside);
    }
}

static void test_capture_link_leading_outside(void **state)
{
    load_result_t r;

    (void)state;
    with_escaping_cmdline(1);
    r = load_guarded(g_cap, 10, 0);
    with_escaping_cmdline(0);
    assert_null(strstr(r.cmdline, SECRET));
    assert_null(strstr(r.err, SECRET));
    assert_refused_quickly(&r, "outside");
    assert_non_null(strstr(r.err, "proc/cmdline"));
}

/* Our own reads of a capture stay inside it even where the whole-tree check was not made. */
static void test_sysfs_reads_stay_inside(void **state)
{
    psc_host_facts_t h;

    (void)state;
    memset(&h, 0, sizeof(h));
    h.hypervisor = -1;
    with_escaping_cmdline(1);
    psc__sysfs_host(g_cap, &h);
    with_escaping_cmdline(0);
    assert_null(strstr(h.cmdline, SECRET));
    /* The files that are inside are still read: the capture's cpuinfo shows no hypervisor. */
    assert_int_equal(h.hypervisor, 0);
}

/* Unreadable is "permission denied", not missing and not "not hwloc XML"; root reads all, so drop it. */
static void test_unreadable_recordings(void **state)
{
    char sub[160], path[200], cmd[512];
    load_result_t r;

    (void)state;
    snprintf(sub, sizeof(sub), "%s/locked", g_dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(path, sizeof(path), "%s/topo.xml", sub);
    snprintf(cmd, sizeof(cmd), "cp %s/24em64t-2n6c2t-pci.xml %s", TEST_DATA, path);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(chmod(path, 0), 0);
    r = load_guarded(path, 10, 1);
    if (r.died == PSC__NO_NOBODY || (geteuid() != 0 && access(path, R_OK) == 0)) {
        chmod(path, 0644);
        unlink(path);
        rmdir(sub);
        skip(); /* nobody to become, or a process that reads past modes (CAP_DAC_OVERRIDE) */
    }
    assert_alive(&r);
    assert_int_equal(r.st, PSC_ERR_IO);
    if (!strstr(r.err, "permission denied"))
        fail_msg("\"%s\" does not say permission denied", r.err);
    /* A directory that may not be searched: the file is there, just not reachable. */
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(chmod(sub, 0), 0);
    r = load_guarded(path, 10, 1);
    assert_int_equal(chmod(sub, 0755), 0);
    assert_alive(&r);
    assert_int_equal(r.st, PSC_ERR_IO);
    if (!strstr(r.err, "permission denied"))
        fail_msg("\"%s\" does not say permission denied", r.err);
    unlink(path);
    rmdir(sub);
}

/* Only the root tag's version is rewritten for hwloc 2.x, not a match inside a comment before it. */
static void test_v3_tag_in_a_comment(void **state)
{
    char path[160], cmd[512];
    load_result_t r;

    (void)state;
    snprintf(path, sizeof(path), "%s/commented.xml", g_dir);
    /* The recording is format 3.0: it loads only when its real root tag is patched. */
    snprintf(cmd, sizeof(cmd),
             "sed '1a <!-- written as <topology version=\"3.0\"> by hwloc 3 -->' %s/24em64t-2n6c2t-pci.xml > %s",
             TEST_DATA, path);
    assert_int_equal(system(cmd), 0);
    r = load_guarded(path, 10, 0);
    assert_alive(&r);
    if (r.st != PSC_OK)
        fail_msg("%s: %s", path, r.err);
    assert_int_equal(r.ngpu, 3);
    unlink(path);
}

/* The caller's environment is left as it was: no HWLOC_FSROOT set and unset behind its back. */
static void test_environment_untouched(void **state)
{
    char **before = environ;
    psc_facts_t *f = psc_facts_new();
    char err[512];

    (void)state;
    assert_null(getenv("HWLOC_FSROOT"));
    assert_int_equal(psc_facts_load(g_cap, f, err, sizeof(err)), PSC_ERR_NO_DEVICE);
    assert_null(getenv("HWLOC_FSROOT"));
    /* setenv of a new name moves glibc's environ array; nothing of ours may do that. */
    assert_ptr_equal(environ, before);
    psc_facts_free(f);
}

/* The parent's deadline: hwloc blocked on a FIFO is killed, reaped, and reported. */
static void test_parse_deadline(void **state)
{
    char path[256], saved[270];
    psc_host_topo_t *t = NULL;
    unsigned old = psc__xml_sandbox_set_time_limit(1);
    char err[512];
    double t0;
    psc_status_t st;

    (void)state;
    snprintf(path, sizeof(path), "%s/proc/cpuinfo", g_cap);
    snprintf(saved, sizeof(saved), "%s.saved", path);
    assert_int_equal(rename(path, saved), 0);
    assert_int_equal(mkfifo(path, 0600), 0);
    t0 = now();
    /* Past psc__capture_check on purpose: this is what its deadline is for. */
    st = psc_host_topo_open_recorded(g_cap, NULL, g_cap, &t, err, sizeof(err));
    t0 = now() - t0;
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rename(saved, path), 0);
    psc__xml_sandbox_set_time_limit(old);
    assert_int_equal(st, PSC_ERR_INVALID);
    assert_null(t);
    assert_non_null(strstr(err, "longer than 1 s"));
    assert_true(t0 < 8.0); /* the 1 s deadline held, with room for a busy machine */
    assert_true(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
}

static int setup(void **state)
{
    char cmd[512];

    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/psc-hostile-XXXXXX");
    if (!mkdtemp(g_dir) || chmod(g_dir, 0755) != 0)
        return -1;
    snprintf(cmd, sizeof(cmd), "tar -C %s -xjf %s/40intel64-2g2n4c+pcilocality.tar.bz2", g_dir, TEST_DATA);
    snprintf(g_cap, sizeof(g_cap), "%s/" CAPTURE, g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[512];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xml_without_complete_cpuset),
        cmocka_unit_test(test_xml_with_1e5_siblings),
        cmocka_unit_test(test_xml_with_huge_os_index),
        cmocka_unit_test(test_json_with_crashing_xml),
        cmocka_unit_test(test_fifo_as_recording),
        cmocka_unit_test(test_fifo_as_captured_cmdline),
        cmocka_unit_test(test_fifo_as_captured_bridge_config),
        cmocka_unit_test(test_capture_link_leading_outside),
        cmocka_unit_test(test_sysfs_reads_stay_inside),
        cmocka_unit_test(test_unreadable_recordings),
        cmocka_unit_test(test_v3_tag_in_a_comment),
        cmocka_unit_test(test_environment_untouched),
        cmocka_unit_test(test_parse_deadline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
