/* hwloc XML recordings parsed in a child process under limits (xml_sandbox.h), handed back only when whole. */
#define _GNU_SOURCE
#include "machine/xml_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/safe_read.h"

#if defined(__SANITIZE_ADDRESS__)
#define PSC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PSC_ASAN 1
#endif
#endif

/* Memory the child may map on top of what it inherited (a driver may have reserved much). */
#define PSC_XML_CHILD_MEMORY (1ull << 30)

/*
 * What the child answers: a kind byte, the text's length in 8 bytes
 * (little-endian), the text. Only a whole answer counts: a child killed
 * half-way through its XML must not hand the caller a cut one to parse.
 */
enum { PSC__REPLY_OK = 'O', PSC__REPLY_REFUSED = 'E', PSC__REPLY_LIMIT = 'L' };
#define PSC__REPLY_HEAD 9

static unsigned psc__time_limit = 10;

unsigned psc__xml_sandbox_set_time_limit(unsigned seconds)
{
    unsigned old = psc__time_limit;

    psc__time_limit = seconds ? seconds : 1;
    return old;
}

static void __attribute__((noreturn)) psc__child_reply(int fd, char kind, const char *text, size_t len)
{
    char head[PSC__REPLY_HEAD];

    head[0] = kind;
    for (int i = 0; i < 8; i++)
        head[1 + i] = (char)((uint64_t)len >> (8 * i));
    _exit(psc__write_all(fd, head, sizeof(head)) == 0 && psc__write_all(fd, text, len) == 0 ? 0 : 1);
}

/* Limits on the child: CPU time, no core file, no file written, memory. */
static void psc__child_limits(unsigned seconds)
{
    struct rlimit cpu = {seconds, seconds + 1}, zero = {0, 0};
    sigset_t all;

    /* The caller's handlers (a crash reporter, say) have no business in here. */
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    setrlimit(RLIMIT_CPU, &cpu);
    setrlimit(RLIMIT_CORE, &zero);
    setrlimit(RLIMIT_FSIZE, &zero);
#ifndef PSC_ASAN
    {
        /* AddressSanitizer reserves terabytes of address space up front: no such limit under it. */
        unsigned long long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");

        if (f && fscanf(f, "%llu", &pages) == 1) {
            rlim_t cap = (rlim_t)(pages * (unsigned long long)sysconf(_SC_PAGESIZE) + PSC_XML_CHILD_MEMORY);
            struct rlimit mem = {cap, cap};

            setrlimit(RLIMIT_AS, &mem);
        }
        if (f)
            fclose(f);
    }
#endif
}

/* The result's shape: sizes every later bitmap and walk depends on. */
static int psc__check_shape(hwloc_topology_t t, char *msg, size_t len)
{
    static const int special[] = {HWLOC_TYPE_DEPTH_NUMANODE,  HWLOC_TYPE_DEPTH_BRIDGE, HWLOC_TYPE_DEPTH_PCI_DEVICE,
                                  HWLOC_TYPE_DEPTH_OS_DEVICE, HWLOC_TYPE_DEPTH_MISC,   HWLOC_TYPE_DEPTH_MEMCACHE};
    static const hwloc_obj_type_t indexed[] = {HWLOC_OBJ_PU, HWLOC_OBJ_NUMANODE};
    int depth = hwloc_topology_get_depth(t);
    unsigned long long total = 0;

    if (depth > PSC_XML_MAX_DEPTH) {
        snprintf(msg, len, "%d levels deep: accepted recordings of up to %d", depth, PSC_XML_MAX_DEPTH);
        return -1;
    }
    for (int d = 0; d < depth; d++)
        total += (unsigned)hwloc_get_nbobjs_by_depth(t, (unsigned)d);
    for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
        total += (unsigned)hwloc_get_nbobjs_by_depth(t, special[i]);
    if (total > PSC_XML_MAX_OBJECTS) {
        snprintf(msg, len, "more than %d objects: accepted recordings of up to %d", PSC_XML_MAX_OBJECTS,
                 PSC_XML_MAX_OBJECTS);
        return -1;
    }
    for (size_t i = 0; i < sizeof(indexed) / sizeof(indexed[0]); i++) {
        hwloc_obj_t o = NULL;

        while ((o = hwloc_get_next_obj_by_type(t, indexed[i], o)))
            if (o->os_index >= PSC_XML_MAX_OS_INDEX) {
                snprintf(msg, len, "a %s with OS index %u: accepted recordings of OS indexes below %d",
                         hwloc_obj_type_string(indexed[i]), o->os_index, PSC_XML_MAX_OS_INDEX);
                return -1;
            }
    }
    return 0;
}

/* hwloc loads its own export again and finds the same shape: the caller parses only XML that passed here. */
static int psc__check_export(const char *xml, char *msg, size_t len)
{
    hwloc_topology_t t;
    int bad;

    if (hwloc_topology_init(&t) != 0)
        return -1;
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    bad = hwloc_topology_set_xmlbuffer(t, xml, (int)strlen(xml) + 1) != 0 || hwloc_topology_load(t) != 0;
    if (bad)
        snprintf(msg, len, "hwloc could not read back what it made of it");
    else
        bad = psc__check_shape(t, msg, len) != 0;
    hwloc_topology_destroy(t);
    return bad ? -1 : 0;
}

static void __attribute__((noreturn)) psc__child(int fd, const char *xml, const char *fsroot, unsigned seconds,
                                                 pid_t parent)
{
    char msg[256];
    hwloc_topology_t t;
    char *buf = NULL;
    int null, len = 0;
    const char *refused = xml ? "not an hwloc XML topology hwloc can load" : "hwloc could not read a /sys tree there";

    /* A child blocked on a FIFO uses no CPU time: it dies with the caller instead. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(1);
    psc__child_limits(seconds);
    /* The caller's HWLOC_* settings (HWLOC_XMLFILE, HWLOC_COMPONENTS, ...) would change what is parsed. */
    clearenv();
#ifdef SYS_close_range
    /* Another thread's parse pipe held open in here would keep its EOF from coming. */
    if (fd != 3 && dup2(fd, 3) == 3)
        fd = 3;
    if (fd == 3)
        syscall(SYS_close_range, 4u, ~0u, 0u);
#endif
    /* One line from the caller, not hwloc's own complaints. */
    null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
    }
    /*
     * hwloc's GPU plugins (CUDA, NVML, OpenCL, ROCm SMI, Level Zero, GL) would query this machine's devices
     * into another machine's tree, and they abort under the child's memory limit (seen with Ubuntu's hwloc
     * 2.10): never loaded here. Set before hwloc reads its components, in the child only.
     */
    if (setenv("HWLOC_PLUGINS_BLACKLIST", "hwloc_cuda,hwloc_nvml,hwloc_opencl,hwloc_rsmi,hwloc_levelzero,hwloc_gl",
               1) != 0)
        psc__child_reply(fd, PSC__REPLY_REFUSED, "hwloc could not start", strlen("hwloc could not start"));
    if (hwloc_topology_init(&t) != 0)
        psc__child_reply(fd, PSC__REPLY_REFUSED, "hwloc could not start", strlen("hwloc could not start"));
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (xml && hwloc_topology_set_xmlbuffer(t, xml, (int)strlen(xml) + 1) != 0)
        psc__child_reply(fd, PSC__REPLY_REFUSED, refused, strlen(refused));
    /*
     * hwloc 2 reads a captured /sys tree only through HWLOC_FSROOT: set here, the caller's stays as it was.
     * Without the x86 backend, which would read this machine's CPUID into another machine's tree.
     */
    if (!xml && (setenv("HWLOC_FSROOT", fsroot, 1) != 0 ||
                 setenv("HWLOC_COMPONENTS", "-x86,-cuda,-nvml,-opencl,-rsmi,-levelzero,-gl", 1) != 0))
        psc__child_reply(fd, PSC__REPLY_REFUSED, refused, strlen(refused));
    if (hwloc_topology_load(t) != 0)
        psc__child_reply(fd, PSC__REPLY_REFUSED, refused, strlen(refused));
    if (psc__check_shape(t, msg, sizeof(msg)) != 0)
        psc__child_reply(fd, PSC__REPLY_LIMIT, msg, strlen(msg));
    if (hwloc_topology_export_xmlbuffer(t, &buf, &len, 0) != 0 || len < 1) {
        snprintf(msg, sizeof(msg), "hwloc could not write it back as XML");
        psc__child_reply(fd, PSC__REPLY_LIMIT, msg, strlen(msg));
    }
    if (psc__check_export(buf, msg, sizeof(msg)) != 0)
        psc__child_reply(fd, PSC__REPLY_LIMIT, msg, strlen(msg));
    psc__child_reply(fd, PSC__REPLY_OK, buf, strlen(buf));
}

/*
 * Objects in the text, counted before any parsing: 10^5 siblings cost hwloc
 * minutes. One pass by hand: strstr in a loop is quadratic under ASan, whose
 * interceptor measures the whole rest of the text on every call.
 */
static size_t psc__count_objects(const char *xml)
{
    size_t n = 0;

    for (const char *p = xml; *p; p++)
        n += *p == '<' && strncmp(p, "<object", 7) == 0;
    return n;
}

static double psc__now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Everything the child writes, up to cap bytes: 0 at its end (EOF), 1 when the deadline passed first, -1 else. */
static int psc__read_reply(int fd, char *buf, size_t cap, size_t *got, double deadline)
{
    *got = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        double left = deadline - psc__now();
        int rc;
        ssize_t n;

        if (left <= 0)
            return 1;
        rc = poll(&p, 1, (int)(left * 1000) + 1);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return -1;
        if (rc == 0)
            continue;
        n = read(fd, buf + *got, cap - *got);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n == 0)
            return 0;
        if (n < 0 || (*got += (size_t)n) >= cap)
            return -1;
    }
}

/* The text refused before any process starts: nothing given, too many bytes, too many objects. */
static int psc__xml_precheck(const char *name, const char *xml, const char *fsroot, char *errbuf, size_t errlen)
{
    if (!xml && !fsroot) {
        snprintf(errbuf, errlen, "%s: nothing to parse", name);
        return -1;
    }
    if (xml && strlen(xml) > PSC_XML_MAX_BYTES) {
        snprintf(errbuf, errlen, "%s: larger than %u bytes: accepted recordings of up to %u", name,
                 PSC_XML_MAX_BYTES, PSC_XML_MAX_BYTES);
        return -1;
    }
    if (xml && psc__count_objects(xml) > PSC_XML_MAX_OBJECTS) {
        snprintf(errbuf, errlen, "%s: more than %d objects: accepted recordings of up to %d", name,
                 PSC_XML_MAX_OBJECTS, PSC_XML_MAX_OBJECTS);
        return -1;
    }
    return 0;
}

/* How the child ended (end: psc__read_reply's result; waited: waitpid's, status its status) and what it wrote
 * (buf, got bytes): the vetted text in place of buf's head, PSC_OK; else the reason in errbuf. */
static psc_status_t psc__reply_verdict(const char *name, unsigned seconds, char *buf, size_t got, size_t cap,
                                       int end, int waited, pid_t pid, int status, char *errbuf, size_t errlen)
{
    size_t len = 0;

    for (int i = 0; got >= PSC__REPLY_HEAD && i < 8; i++)
        len |= (size_t)(unsigned char)buf[1 + i] << (8 * i);
    if (end == 1) {
        snprintf(errbuf, errlen, "%s: parsing took longer than %u s", name, seconds);
    } else if (got >= cap) {
        snprintf(errbuf, errlen, "%s: hwloc's topology from it is larger than %u bytes of XML", name,
                 PSC_XML_MAX_BYTES);
    } else if (waited == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) {
        snprintf(errbuf, errlen, "%s: parsing took longer than %u s", name, seconds);
    } else if (waited == pid && WIFSIGNALED(status)) {
        snprintf(errbuf, errlen, "%s: hwloc could not parse this (it crashed: signal %d)", name, WTERMSIG(status));
    } else if (end != 0 || got < PSC__REPLY_HEAD || len != got - PSC__REPLY_HEAD ||
               (waited == pid && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))) {
        snprintf(errbuf, errlen, "%s: hwloc could not parse this (its process ended without a whole answer)", name);
    } else if (buf[0] == PSC__REPLY_OK) {
        buf[got] = '\0';
        memmove(buf, buf + PSC__REPLY_HEAD, len + 1);
        return PSC_OK;
    } else {
        buf[got] = '\0';
        snprintf(errbuf, errlen, "%s: %s", name, buf + PSC__REPLY_HEAD);
        return buf[0] == PSC__REPLY_REFUSED ? PSC_ERR_IO : PSC_ERR_INVALID;
    }
    return PSC_ERR_INVALID;
}

psc_status_t psc__xml_sandbox_parse(const char *name, const char *xml, const char *fsroot, char **vetted,
                                    char *errbuf, size_t errlen)
{
    size_t cap = PSC_XML_MAX_BYTES + PSC__REPLY_HEAD + 1, got = 0;
    unsigned seconds = psc__time_limit;
    psc_status_t st = PSC_ERR_INVALID;
    int fds[2], status = 0, end, waited;
    pid_t pid, parent = getpid();
    char *buf;

    if (psc__xml_precheck(name, xml, fsroot, errbuf, errlen) != 0)
        return PSC_ERR_INVALID;
    buf = malloc(cap + 1);
    if (!buf) {
        snprintf(errbuf, errlen, "%s: out of host memory", name);
        return PSC_ERR_NO_MEMORY;
    }
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(errbuf, errlen, "%s: cannot start a process to parse it: %s", name, strerror(errno));
        goto err_free;
    }
    pid = fork();
    if (pid < 0) {
        snprintf(errbuf, errlen, "%s: cannot start a process to parse it: %s", name, strerror(errno));
        close(fds[0]);
        close(fds[1]);
        goto err_free;
    }
    if (pid == 0) {
        close(fds[0]);
        psc__child(fds[1], xml, fsroot, seconds, parent);
    }
    close(fds[1]);
    end = psc__read_reply(fds[0], buf, cap, &got, psc__now() + seconds);
    /* Anything but the child's own end of output: it goes, so the wait below cannot block. */
    if (end != 0)
        kill(pid, SIGKILL);
    close(fds[0]);
    /* Always reaped, whatever happened; ECHILD where the caller has SIGCHLD ignored. */
    while ((waited = (int)waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    st = psc__reply_verdict(name, seconds, buf, got, cap, end, waited, pid, status, errbuf, errlen);
    if (st == PSC_OK) {
        char *small = realloc(buf, strlen(buf) + 1);

        *vetted = small ? small : buf;
        return PSC_OK;
    }
err_free:
    free(buf);
    return st;
}
