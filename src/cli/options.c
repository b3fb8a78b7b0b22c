/*
 * The command line into psc_cli_opts_t (cli.h): the command word, each option group, and the checks of what
 * goes with what; coll's options are coll_options.c's, compare's compare_options.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/html_page.h"
#include "report/nvbw_map.h"
#include "report/text.h"

enum { OPT_GATE_TIMEOUT = 256, OPT_IDENTIFY, OPT_JSON, OPT_TEST_CORRUPT, OPT_TOPOLOGY, OPT_SAVE, OPT_WATCH, OPT_HOST_NODE, OPT_MAX_SAMPLES, OPT_STABLE, OPT_SECONDS, OPT_TEST_FAULT, OPT_NO_VERIFY, OPT_NO_LOAD, OPT_CALIBRATE, OPT_CALIBRATION, OPT_NO_HOST,
       OPT_METHOD, OPT_ROUND_TRIPS, OPT_NO_LOCAL };
enum { OPT_EXPECT = 400 }; /* --expect: apart from the list above, which other options extend */
/* --html, --svg, --csv (the page, its figures, the tables): numbered apart so other options can join the list above. */
enum { OPT_HTML = 512, OPT_SVG, OPT_CSV };
enum { OPT_BASELINE = 600, OPT_FLEET, OPT_FLEET_BOUND }; /* check --baseline, --fleet, --fleet-bound */

static const struct option psc__long_opts[] = {
    {"test", required_argument, NULL, 't'},
    {"devices", required_argument, NULL, 'd'},
    {"size", required_argument, NULL, 's'},
    {"iterations", required_argument, NULL, 'i'},
    {"samples", required_argument, NULL, 'n'},
    {"warmup", required_argument, NULL, 'w'},
    {"list", no_argument, NULL, 'l'},
    {"min-bytes", required_argument, NULL, 'b'},
    {"max-bytes", required_argument, NULL, 'e'},
    {"step-factor", required_argument, NULL, 'f'},
    {"host-node", required_argument, NULL, OPT_HOST_NODE},
    {"max-samples", required_argument, NULL, OPT_MAX_SAMPLES},
    {"stable", required_argument, NULL, OPT_STABLE},
    {"seconds", required_argument, NULL, OPT_SECONDS},
    {"test-fault", required_argument, NULL, OPT_TEST_FAULT},
    {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
    {"no-load", no_argument, NULL, OPT_NO_LOAD},
    {"calibrate", required_argument, NULL, OPT_CALIBRATE},
    {"calibration", required_argument, NULL, OPT_CALIBRATION},
    {"no-host", no_argument, NULL, OPT_NO_HOST},
    {"method", required_argument, NULL, OPT_METHOD},
    {"round-trips", required_argument, NULL, OPT_ROUND_TRIPS},
    {"no-local", no_argument, NULL, OPT_NO_LOCAL},
    {"timeout", required_argument, NULL, 'T'},
    {"gate-timeout", required_argument, NULL, OPT_GATE_TIMEOUT},
    {"json", optional_argument, NULL, OPT_JSON},
    {"test-corrupt-offset", required_argument, NULL, OPT_TEST_CORRUPT},
    {"topology", required_argument, NULL, OPT_TOPOLOGY},
    {"save", required_argument, NULL, OPT_SAVE},
    {"watch", no_argument, NULL, OPT_WATCH},
    {"identify", no_argument, NULL, OPT_IDENTIFY},
    {"expect", required_argument, NULL, OPT_EXPECT},
    {"html", required_argument, NULL, OPT_HTML},
    {"svg", required_argument, NULL, OPT_SVG},
    {"csv", required_argument, NULL, OPT_CSV},
    {"baseline", required_argument, NULL, OPT_BASELINE},
    {"fleet", no_argument, NULL, OPT_FLEET},
    {"fleet-bound", required_argument, NULL, OPT_FLEET_BOUND},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/*
 * Split a comma list into items, each handed to one(); any length, and an
 * empty list or an empty item (",", "a,,b", "a,") is a usage error naming what.
 */
static int psc__each_item(const char *arg, const char *what, const char *accepted,
                          int (*one)(psc_cli_opts_t *, const char *, char *, size_t), psc_cli_opts_t *o, char *err,
                          size_t errlen)
{
    const char *p = arg;

    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *item;
        int rc;

        if (len == 0) {
            snprintf(err, errlen, "empty %s in '%s': accepted %s", what, arg, accepted);
            return PSC_EXIT_USAGE;
        }
        item = strndup(p, len);
        if (!item) {
            snprintf(err, errlen, "out of host memory");
            return PSC_EXIT_NO_MEMORY;
        }
        rc = one(o, item, err, errlen);
        free(item);
        if (rc != 0 || !comma)
            return rc;
        p = comma + 1;
    }
}

/* How many of the n bandwidth tests copy (verify checks those; the one-way tests only read or only write). */
static int psc__copies_among(const int *tests, int n)
{
    int k = 0;

    for (int i = 0; i < n && i < PSC_CLI_MAX_TESTS; i++)
        k += psc_bw_test_info(tests[i])->access == PSC_BW_ACCESS_COPY;
    return k;
}

static int psc__add_test(psc_cli_opts_t *o, const char *name, char *err, size_t errlen)
{
    int found[PSC_CLI_MAX_TESTS];
    int lat = o->cmd == PSC_CMD_LAT;
    int n = lat ? psc_lat_test_match(name, found, PSC_CLI_MAX_TESTS) : psc_bw_test_match(name, found, PSC_CLI_MAX_TESTS);
    const char *note = NULL;

    if (n == 0 && !lat) { /* nvbandwidth's name of a test: the p2pscope test that measures it (nvbw_map.c) */
        if ((found[0] = psc_nvbw_bw_test(name, &note)) >= 0)
            n = 1;
        else if (found[0] == -2) {
            snprintf(err, errlen, "nvbandwidth's %.100s is no bandwidth test here: %s", name, note);
            return PSC_EXIT_USAGE;
        }
    }
    if (n == 0) {
        snprintf(err, errlen, "no test named '%.200s': accepted a name or glob from 'p2pscope %s -l', e.g. %s", name,
                 lat ? "lat" : "bw", lat ? "gpu_to_gpu_chase or '*_flag'" : "gpu_to_gpu_read_ce or '*_sm'");
        return PSC_EXIT_USAGE;
    }
    for (int k = 0; k < n && k < PSC_CLI_MAX_TESTS; k++) {
        int dup = 0;

        if (!lat && o->cmd == PSC_CMD_VERIFY && psc_bw_test_info(found[k])->access != PSC_BW_ACCESS_COPY) {
            if (psc__copies_among(found, n)) /* a glob: the tests of it that copy */
                continue;
            snprintf(err, errlen, "%s %s: verify checks copies by copy engines and SM copy kernels; accepted a test that "
                     "copies that way ('p2pscope bw -t %s' measures and checks it)", name,
                     psc_bw_test_info(found[k])->access == PSC_BW_ACCESS_READ    ? "only reads"
                     : psc_bw_test_info(found[k])->access == PSC_BW_ACCESS_WRITE ? "only writes"
                                                                                 : "copies by bulk copies (TMA)",
                     name);
            return PSC_EXIT_USAGE;
        }
        for (int i = 0; i < o->ntests; i++)
            dup |= o->tests[i] == found[k];
        if (!dup && o->ntests < PSC_CLI_MAX_TESTS)
            o->tests[o->ntests++] = found[k];
    }
    return 0;
}

static int psc__add_device(psc_cli_opts_t *o, const char *tok, char *err, size_t errlen)
{
    unsigned long v;

    if (psc_cli_uint(tok, PSC_CLI_MAX_DEVS - 1, &v) != 0) {
        snprintf(err, errlen, "bad GPU index '%.40s' in --devices: accepted a comma list of indexes 0 to %d, e.g. 0,1, or 'all'",
                 tok, PSC_CLI_MAX_DEVS - 1);
        return PSC_EXIT_USAGE;
    }
    /* ipc starts a worker per entry: a GPU named twice gets two (the way one GPU measures between processes). */
    for (int i = 0; i < o->ndev && o->cmd != PSC_CMD_IPC; i++) {
        if (o->devs[i] == (int)v) {
            snprintf(err, errlen, "GPU %lu named twice in --devices", v);
            return PSC_EXIT_USAGE;
        }
    }
    if (o->ndev >= PSC_CLI_MAX_DEVS) {
        snprintf(err, errlen, "too many entries in --devices: accepted at most %d", PSC_CLI_MAX_DEVS);
        return PSC_EXIT_USAGE;
    }
    o->devs[o->ndev++] = (int)v;
    return 0;
}

static int psc__set_devices(psc_cli_opts_t *o, const char *arg, char *err, size_t errlen)
{
    o->ndev = 0;
    if (strcmp(arg, "all") == 0)
        return 0;
    return psc__each_item(arg, "GPU index", "a comma list of indexes, e.g. 0,1, or 'all'", psc__add_device, o, err,
                          errlen);
}

static int psc__add_method(psc_cli_opts_t *o, const char *name, char *err, size_t errlen)
{
    for (int kind = PSC_SHARE_LEGACY; kind <= PSC_SHARE_VMM_FABRIC; kind++) {
        if (strcmp(name, psc_ipc_method_name(kind)) == 0) {
            o->ipc_methods |= 1u << kind;
            return 0;
        }
    }
    snprintf(err, errlen, "unknown method '%.40s' in --method: accepted legacy, vmm_fd, vmm_fabric (comma separated)",
             name);
    return PSC_EXIT_USAGE;
}

static int psc__command(const char *word, psc_cli_opts_t *o, char *err, size_t errlen)
{
    const int cmd = psc_cli_command_of(word);

    if (cmd >= 0 && cmd != PSC_CMD_COLL && cmd != PSC_CMD_COMPARE && cmd != PSC_CMD_RENDER &&
        cmd != PSC_CMD_NVBW && cmd != PSC_CMD_P2PBW) { /* those are parsed apart */
        o->cmd = (psc_cli_cmd_t)cmd;
        o->cmd_given = 1;
        return 0;
    }
    snprintf(err, errlen, "unknown command '%s'; accepted: report, devices, bw, lat, verify, copy, ipc, coll, compare, render, nvbandwidth, p2pbw, list, topo, nvlink, doctor, check (see p2pscope --help)", word);
    return PSC_EXIT_USAGE;
}

/* `p2pscope help [COMMAND]` and `p2pscope --help COMMAND` (argv[2]: the command, or none): that command's help. */
static int psc__help_for(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    int cmd;

    o->help = 1;
    if (argc < 3)
        return 0;
    if (argc > 3) {
        snprintf(err, errlen, "help takes one command, not '%s' too (see p2pscope --help)", argv[3]);
        return PSC_EXIT_USAGE;
    }
    if ((cmd = psc_cli_command_of(argv[2])) < 0)
        return psc__command(argv[2], o, err, errlen); /* its message: the accepted commands */
    o->cmd = (psc_cli_cmd_t)cmd;
    o->cmd_given = 1;
    return 0;
}

/* What is measured: the tests (-t, -l), the GPUs (-d), one size (-s) or a sweep (-b, -e, -f). */
static int psc__what_option(int c, const char *arg, const char *optname, psc_cli_opts_t *o, char *err, size_t errlen)
{
    unsigned long v;

    (void)optname;
    switch (c) {
    case 't':
        return psc__each_item(arg, "test name", "a comma list of names or globs from 'p2pscope bw -l' or 'p2pscope lat -l'",
                              psc__add_test, o, err, errlen);
    case 'd':
        return psc__set_devices(o, arg, err, errlen);
    case 's':
        if (psc_size_parse(arg, &o->measure.size) != PSC_OK) {
            snprintf(err, errlen, "bad size '%s': accepted 1 B to 1 TiB, e.g. 4096, 64K, 512MiB, 1GB", arg);
            return PSC_EXIT_USAGE;
        }
        return 0;
    case 'b':
    case 'e':
        if (psc_size_parse(arg, c == 'b' ? &o->sweep_min : &o->sweep_max) != PSC_OK) {
            snprintf(err, errlen, "bad %s '%s': accepted 1 B to 1 TiB, e.g. 4K, 64M, 1G",
                     c == 'b' ? "--min-bytes" : "--max-bytes", arg);
            return PSC_EXIT_USAGE;
        }
        return 0;
    case 'f':
        if (psc_cli_uint(arg, 1024, &v) != 0 || v < 2) {
            snprintf(err, errlen, "bad --step-factor '%s': accepted 2 to 1024", arg);
            return PSC_EXIT_USAGE;
        }
        o->sweep_factor = (unsigned)v;
        return 0;
    case 'l':
        o->list_tests = 1;
        return 0;
    default:
        return PSC_CLI_NOT_MINE;
    }
}

/* How each figure is measured: host memory's node, samples and their cap, iterations, warm-up, the gate's timeout. */
static int psc__measure_option(int c, const char *arg, const char *optname, psc_cli_opts_t *o, char *err,
                               size_t errlen)
{
    unsigned long v;

    (void)optname;
    switch (c) {
    case OPT_HOST_NODE:
        if (psc_cli_uint(arg, 4095, &v) != 0) {
            snprintf(err, errlen, "bad --host-node '%s': accepted a NUMA node number (0, 1, ...)", arg);
            return PSC_EXIT_USAGE;
        }
        o->measure.host_node = (int)v;
        return 0;
    case OPT_MAX_SAMPLES:
        if (psc_cli_uint(arg, PSC_MAX_SAMPLES, &v) != 0 || v < 1) {
            snprintf(err, errlen, "bad --max-samples '%s': accepted 1 to %d", arg, PSC_MAX_SAMPLES);
            return PSC_EXIT_USAGE;
        }
        o->measure.max_samples = (unsigned)v;
        return 0;
    case OPT_STABLE:
        if (psc_cli_double(arg, 0, 100, &o->measure.stable_pct) != 0) {
            snprintf(err, errlen, "bad --stable '%s': accepted a percentage from 0 to 100", arg);
            return PSC_EXIT_USAGE;
        }
        return 0;
    case 'i':
        if (psc_cli_uint(arg, 100000, &v) != 0 || v < 1) {
            snprintf(err, errlen, "bad --iterations '%s': accepted 1 to 100000", arg);
            return PSC_EXIT_USAGE;
        }
        o->measure.iterations = (unsigned)v;
        return 0;
    case 'n':
        if (psc_cli_uint(arg, PSC_MAX_SAMPLES, &v) != 0 || v < 1) {
            snprintf(err, errlen, "bad --samples '%s': accepted 1 to %d", arg, PSC_MAX_SAMPLES);
            return PSC_EXIT_USAGE;
        }
        o->measure.samples = (unsigned)v;
        o->samples_given = 1;
        return 0;
    case 'w':
        if (psc_cli_uint(arg, 100, &v) != 0) {
            snprintf(err, errlen, "bad --warmup '%s': accepted 0 to 100", arg);
            return PSC_EXIT_USAGE;
        }
        o->measure.warmup = (unsigned)v;
        return 0;
    case OPT_GATE_TIMEOUT:
        if (psc_cli_uint(arg, 600000, &v) != 0 || v < 1) {
            snprintf(err, errlen, "bad --gate-timeout '%s': accepted 1 to 600000 (milliseconds)", arg);
            return PSC_EXIT_USAGE;
        }
        o->measure.gate_timeout_ms = (double)v;
        return 0;
    default:
        return PSC_CLI_NOT_MINE;
    }
}

/* Where results go and what they are read against: --json, --html, --svg, --csv, --expect; and topo's, nvlink's own. */
static int psc__output_option(int c, const char *arg, const char *optname, psc_cli_opts_t *o, char *err,
                              size_t errlen)
{
    switch (c) {
    case OPT_JSON:
        return psc_cli_parse_json(o, arg, err, errlen);
    case OPT_HTML:
    case OPT_SVG:
    case OPT_CSV:
        if (!*arg) {
            snprintf(err, errlen, "empty %s %s: accepted a %s path", optname, c == OPT_HTML ? "file name" : "directory",
                     c == OPT_HTML ? "file" : "directory");
            return PSC_EXIT_USAGE;
        }
        *(c == OPT_HTML ? &o->html_path : c == OPT_SVG ? &o->svg_dir : &o->csv_dir) = arg;
        return 0;
    case OPT_EXPECT:
        o->expect = arg;
        return psc_cli_expect_check_file(arg, err, errlen);
    case OPT_BASELINE:
        if (!*arg) {
            snprintf(err, errlen, "empty --baseline file name: accepted the JSON of an earlier check (--json=FILE)");
            return PSC_EXIT_USAGE;
        }
        o->baseline = arg;
        return 0;
    case OPT_FLEET:
        o->fleet = 1;
        return 0;
    case OPT_FLEET_BOUND:
        if (psc_cli_double(arg, 0.1, 100, &o->fleet_bound) != 0) {
            snprintf(err, errlen, "bad --fleet-bound '%s': accepted 0.1 to 100 (percent below the fleet's median)", arg);
            return PSC_EXIT_USAGE;
        }
        return 0;
    case OPT_TOPOLOGY:
        o->topology = arg;
        return 0;
    case OPT_SAVE:
        o->save = arg;
        return 0;
    case OPT_WATCH:
        o->watch = 1;
        return 0;
    case OPT_IDENTIFY:
        o->identify = 1;
        return 0;
    default:
        return PSC_CLI_NOT_MINE;
    }
}

/* --test-fault KIND:OFFSET[:LEN[:SIZE]]: verify's planted fault, to prove that the check finds it. */
static int psc__test_fault(const char *arg, psc_cli_opts_t *o, char *err, size_t errlen)
{
    char kind[16];
    unsigned long long off = 0, len = 1, size = 0;
    int got = sscanf(arg, "%15[a-z]:%llu:%llu:%llu", kind, &off, &len, &size);

    o->hooks.fault = got < 2 ? PSC_FAULT_NONE
                      : strcmp(kind, "flip") == 0 ? PSC_FAULT_FLIP
                      : strcmp(kind, "drop") == 0 ? PSC_FAULT_DROP
                      : strcmp(kind, "misplace") == 0 ? PSC_FAULT_MISPLACE : PSC_FAULT_NONE;
    if (o->hooks.fault == PSC_FAULT_NONE || len < 1) {
        snprintf(err, errlen, "bad --test-fault '%s': accepted flip|drop|misplace:OFFSET[:LEN[:SIZE]]", arg);
        return PSC_EXIT_USAGE;
    }
    o->hooks.fault_offset = off;
    o->hooks.fault_len = len;
    o->hooks.fault_size = size;
    return 0;
}

/* The checking of the data: verify's --seconds and --no-load, bw's --no-verify, the planted corruption and faults. */
static int psc__verify_option(int c, const char *arg, const char *optname, psc_cli_opts_t *o, char *err,
                              size_t errlen)
{
    unsigned long v;
    char *end;

    (void)optname;
    switch (c) {
    case OPT_SECONDS:
        if (psc_cli_uint(arg, 86400, &v) != 0 || v < 1) {
            snprintf(err, errlen, "bad --seconds '%s': accepted 1 to 86400", arg);
            return PSC_EXIT_USAGE;
        }
        o->seconds = (unsigned)v;
        return 0;
    case OPT_NO_VERIFY:
        o->measure.verify = 0;
        return 0;
    case OPT_NO_LOAD:
        o->no_load = 1;
        return 0;
    case OPT_TEST_CORRUPT:
        errno = 0;
        o->hooks.corrupt_offset = strtoll(arg, &end, 10);
        if (errno || *end || arg == end || o->hooks.corrupt_offset < 0) {
            snprintf(err, errlen, "bad --test-corrupt-offset '%s': accepted a byte offset below --size", arg);
            return PSC_EXIT_USAGE;
        }
        return 0;
    case OPT_TEST_FAULT:
        return psc__test_fault(arg, o, err, errlen);
    default:
        return PSC_CLI_NOT_MINE;
    }
}

/* copy's options (--calibrate, --calibration, --no-host) and ipc's (--method, --round-trips, --no-local, --timeout). */
static int psc__copy_ipc_option(int c, const char *arg, const char *optname, psc_cli_opts_t *o, char *err,
                                size_t errlen)
{
    unsigned long v;

    switch (c) {
    case OPT_CALIBRATE:
    case OPT_CALIBRATION:
        if (!*arg) {
            snprintf(err, errlen, "empty %s file name: accepted a file path", optname);
            return PSC_EXIT_USAGE;
        }
        *(c == OPT_CALIBRATE ? &o->calibrate : &o->calibration) = arg;
        return 0;
    case OPT_NO_HOST:
        o->no_host = 1;
        return 0;
    case OPT_METHOD:
        o->ipc_methods = 0; /* the last --method wins, as -d does */
        return psc__each_item(arg, "method", "legacy, vmm_fd, vmm_fabric (comma separated)", psc__add_method, o,
                              err, errlen);
    case OPT_ROUND_TRIPS:
        if (psc_cli_uint(arg, 1000000, &v) != 0 || v < 1) {
            snprintf(err, errlen, "bad --round-trips '%s': accepted 1 to 1000000", arg);
            return PSC_EXIT_USAGE;
        }
        o->round_trips = (unsigned)v;
        return 0;
    case OPT_NO_LOCAL:
        o->no_local = 1;
        return 0;
    case 'T':
        /* psc_ipc_run's range, 1 ms to an hour; "nan" and "inf" fail it. check --fleet's wait takes the same. */
        if (psc_cli_double(arg, 0.001, 3600, &o->timeout_s) != 0) {
            snprintf(err, errlen, "bad --timeout '%s': accepted 0.001 to 3600 (seconds)", arg);
            return PSC_EXIT_USAGE;
        }
        return 0;
    default:
        return PSC_CLI_NOT_MINE;
    }
}

/* One option from getopt: handed to its group; -h, -V, a missing value and an unknown option here. */
static int psc__option(int c, const char *arg, const char *optname, psc_cli_opts_t *o, char *err, size_t errlen)
{
    static const psc_cli_option_group_t groups[] = {
        psc__what_option,   psc__measure_option,  psc__output_option,
        psc__verify_option, psc__copy_ipc_option, psc_cli_help_option,
    };
    int rc = psc_cli_option_groups(groups, sizeof(groups) / sizeof(groups[0]), c, arg, optname, o, err, errlen);

    if (rc != PSC_CLI_NOT_MINE)
        return rc;
    switch (c) {
    case ':':
        snprintf(err, errlen, "option %s needs a value (see p2pscope --help)", optname);
        return PSC_EXIT_USAGE;
    default:
        snprintf(err, errlen, "unknown option '%s' (see p2pscope --help for the accepted ones)", optname);
        return PSC_EXIT_USAGE;
    }
}

/*
 * The option as the user wrote it, for messages: getopt's optind points past
 * the value, or stays inside a cluster like -s4Kq, so it cannot name it.
 */
static void psc__option_name(int c, int idx, char **argv, char *buf, size_t len)
{
    const char *word = optind > 0 ? argv[optind - 1] : "";
    int key = c == '?' || c == ':' ? optopt : c;

    if (idx >= 0) {
        snprintf(buf, len, "--%s", psc__long_opts[idx].name);
        return;
    }
    if (key == 0) { /* an unknown long option: the word getopt stepped over */
        snprintf(buf, len, "%.*s", (int)strcspn(word, "="), word);
        return;
    }
    /* A long option missing its value has its own word; long-only options have no letter. */
    if (key >= 256 || (c == ':' && strncmp(word, "--", 2) == 0)) {
        for (const struct option *lo = psc__long_opts; lo->name; lo++)
            if (lo->val == key) {
                snprintf(buf, len, "--%s", lo->name);
                return;
            }
    }
    snprintf(buf, len, "-%c", key);
}

/* copy takes a sweep (-b/-e/-f), -n, -d and its own options; what it would ignore is refused. */
static int psc__copy_check(const psc_cli_opts_t *o, char *err, size_t errlen)
{
    if (o->calibrate && o->calibration) {
        snprintf(err, errlen, "--calibrate and --calibration exclude each other (a calibration is measured with the "
                              "built-in routes)");
        return PSC_EXIT_USAGE;
    }
    if (o->ntests || o->measure.size || o->list_tests) {
        snprintf(err, errlen, "copy takes no --test, --size or --list: accepted a sweep with -b MIN -e MAX [-f N]");
        return PSC_EXIT_USAGE;
    }
    if (o->sweep_factor > 16) {
        snprintf(err, errlen, "bad --step-factor %u for copy: accepted 2 to 16", o->sweep_factor);
        return PSC_EXIT_USAGE;
    }
    return 0;
}

/* ipc measures GPU memory between processes, every copy checked, at one size; what it would ignore is refused. */
static int psc__ipc_check(const psc_cli_opts_t *o, char *err, size_t errlen)
{
    if (o->ntests || o->list_tests || o->sweep_min || o->sweep_max || o->sweep_factor ||
        o->measure.host_node >= 0) {
        snprintf(err, errlen, "ipc takes no --test, --list, sweep (-b/-e/-f) or --host-node: accepted -d, --method, "
                              "-s, -n, --round-trips, --no-local, --timeout, --json");
        return PSC_EXIT_USAGE;
    }
    if (o->ndev == 1) {
        snprintf(err, errlen, "ipc needs two workers or more: accepted e.g. -d 0,1, or -d %d,%d for two on GPU %d",
                 o->devs[0], o->devs[0], o->devs[0]);
        return PSC_EXIT_USAGE;
    }
    if (o->ndev > PSC_IPC_MAX_RANKS) {
        snprintf(err, errlen, "ipc takes at most %d workers in --devices", PSC_IPC_MAX_RANKS);
        return PSC_EXIT_USAGE;
    }
    if (o->hooks.corrupt_offset >= 0 && !o->measure.size &&
        (uint64_t)o->hooks.corrupt_offset >= PSC_IPC_DEFAULT_SIZE) {
        snprintf(err, errlen, "corruption offset %lld out of range: accepted 0 to --size - 1 (default %llu MiB)",
                 (long long)o->hooks.corrupt_offset, (unsigned long long)(PSC_IPC_DEFAULT_SIZE >> 20));
        return PSC_EXIT_USAGE;
    }
    return 0;
}

/* --html, --svg and --csv write a run's results: bw, report and lat; the figures need cairo. */
static int psc__page_check(const psc_cli_opts_t *o, char *err, size_t errlen)
{
    if (!o->html_path && !o->svg_dir && !o->csv_dir)
        return 0;
    if (o->cmd == PSC_CMD_CHECK && !o->svg_dir && !o->csv_dir)
        return 0; /* check's page is a table: no figure, no cairo */
    if ((o->cmd != PSC_CMD_REPORT && o->cmd != PSC_CMD_BW && o->cmd != PSC_CMD_LAT) || o->list_tests) {
        snprintf(err, errlen, "--html, --svg and --csv go with report, bw and lat (a run, not --list)");
        return PSC_EXIT_USAGE;
    }
    return psc_cli_figures_check(o, err, errlen);
}

int psc_cli_figures_check(const psc_cli_opts_t *o, char *err, size_t errlen)
{
    if ((o->html_path || o->svg_dir) && !psc_page_have_figures()) {
        snprintf(err, errlen, "this p2pscope was built without cairo: install libcairo2-dev and rebuild "
                              "(--html and --svg draw with it; --csv needs no cairo)");
        return PSC_EXIT_USAGE;
    }
    return 0;
}

/* --expect, the pages and --save go with the commands whose results they hold. */
static int psc__output_check(const psc_cli_opts_t *o, char *err, size_t errlen)
{
    int rc;

    if (o->expect && o->cmd != PSC_CMD_BW && o->cmd != PSC_CMD_REPORT && o->cmd != PSC_CMD_LAT &&
        o->cmd != PSC_CMD_CHECK) {
        snprintf(err, errlen, "--expect goes with bw, report, lat, coll and check");
        return PSC_EXIT_USAGE;
    }
    if (o->expect && strcmp(o->expect, "auto") == 0 && o->cmd == PSC_CMD_LAT) {
        snprintf(err, errlen, "--expect auto sets bandwidth bounds (bw, report, check): accepted --expect FILE with lat");
        return PSC_EXIT_USAGE;
    }
    if ((rc = psc__page_check(o, err, errlen)) != 0)
        return rc;
    if (o->save && (o->cmd != PSC_CMD_TOPO || o->topology)) {
        snprintf(err, errlen, "--save goes with topo on a live machine (not with --topology)");
        return PSC_EXIT_USAGE;
    }
    return 0;
}

/* The options typed (getopt's codes), for the check that each goes with the command. */
typedef struct {
    int code[64];
    int n;
} psc__given_t;

/* Each option typed goes with the command, as its help lists them: one it would ignore is refused. */
static int psc__given_check(const psc_cli_opts_t *o, const psc__given_t *g, char *err, size_t errlen)
{
    for (int k = 0; k < g->n; k++)
        for (const struct option *l = psc__long_opts; l->name; l++) {
            char with[160];

            if (l->val != g->code[k])
                continue;
            if (!psc_cli_option_goes_with(o->cmd, l->name, with, sizeof(with))) {
                snprintf(err, errlen, "--%s does not go with %s: accepted with %s", l->name,
                         psc_cli_cmd_name(o->cmd), with);
                return PSC_EXIT_USAGE;
            }
            break;
        }
    return 0;
}

/* getopt over the words after the command (argv[0] stands for the program); *max_given: --max-samples was typed. */
static int psc__parse_options(int argc, char **argv, psc_cli_opts_t *o, int *max_given, psc__given_t *given,
                              char *err, size_t errlen)
{
    int c, rc;

    optind = 0; /* GNU: full reinitialisation, so the parser can run more than once */
    opterr = 0;
    for (;;) {
        char name[64];
        int idx = -1;

        c = getopt_long(argc, argv, ":t:d:s:i:n:w:lb:e:f:T:hV", psc__long_opts, &idx);
        if (c == -1)
            break;
        psc__option_name(c, idx, argv, name, sizeof(name));
        *max_given |= c == OPT_MAX_SAMPLES;
        if (given->n < (int)(sizeof(given->code) / sizeof(given->code[0])))
            given->code[given->n++] = c;
        /* --json FILE as --html FILE: the next word, unless it is an option or a command */
        if (c == OPT_JSON && !optarg && optind < argc && argv[optind][0] != '-' && psc_cli_command_of(argv[optind]) < 0)
            optarg = argv[optind++];
        if ((rc = psc__option(c, optarg, name, o, err, errlen)) != 0)
            return rc;
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s' (see p2pscope --help)", argv[optind]);
        return PSC_EXIT_USAGE;
    }
    return 0;
}

/* The measurement's options together: samples and their cap, one size or a sweep, a planted corruption within it. */
static int psc__measure_check(psc_cli_opts_t *o, int max_given, char *err, size_t errlen)
{
    /* -n raises the cap with it; --max-samples below -n is an error the check names. */
    if (o->measure.max_samples < o->measure.samples && !max_given)
        o->measure.max_samples = o->measure.samples;
    if (o->cmd != PSC_CMD_VERIFY && (o->sweep_min || o->sweep_max) &&
        (!o->sweep_min || !o->sweep_max || o->sweep_min > o->sweep_max)) {
        snprintf(err, errlen, "a size sweep needs -b MIN and -e MAX with MIN <= MAX");
        return PSC_EXIT_USAGE;
    }
    if (o->sweep_min && o->measure.size) {
        snprintf(err, errlen, "--size and a sweep (-b/-e) exclude each other");
        return PSC_EXIT_USAGE;
    }
    if (o->sweep_min && !o->sweep_factor)
        o->sweep_factor = 2;
    if (psc_measure_opts_check(&o->measure, err, errlen) != PSC_OK)
        return PSC_EXIT_USAGE;
    if (o->hooks.corrupt_offset >= 0 && !o->measure.verify) {
        snprintf(err, errlen, "a corruption test needs verification on (--test-corrupt-offset without --no-verify)");
        return PSC_EXIT_USAGE;
    }
    if (o->hooks.corrupt_offset >= 0 && o->measure.size && (uint64_t)o->hooks.corrupt_offset >= o->measure.size) {
        snprintf(err, errlen, "corruption offset %lld out of range: accepted 0 to --size - 1",
                 (long long)o->hooks.corrupt_offset);
        return PSC_EXIT_USAGE;
    }
    return 0;
}

/* --fleet goes with check; -T with ipc and check --fleet, --fleet-bound with check --fleet. */
static int psc__fleet_check(const psc_cli_opts_t *o, char *err, size_t errlen)
{
    if (o->fleet && o->cmd != PSC_CMD_CHECK) {
        snprintf(err, errlen, "--fleet goes with check");
        return PSC_EXIT_USAGE;
    }
    if (o->timeout_s > 0 && o->cmd != PSC_CMD_IPC && !o->fleet) {
        snprintf(err, errlen, "-T/--timeout goes with ipc and check --fleet");
        return PSC_EXIT_USAGE;
    }
    if (o->fleet_bound > 0 && !o->fleet) {
        snprintf(err, errlen, "--fleet-bound goes with check --fleet");
        return PSC_EXIT_USAGE;
    }
    return 0;
}

/* Each command's own options go with it alone: topo's, verify's, nvlink's, copy's, ipc's, the outputs'. */
static int psc__command_check(psc_cli_opts_t *o, char *err, size_t errlen)
{
    int rc;

    if (o->topology && ((o->cmd != PSC_CMD_TOPO && o->cmd != PSC_CMD_DOCTOR && o->cmd != PSC_CMD_NVLINK &&
                         o->cmd != PSC_CMD_DEVICES) || o->watch)) {
        snprintf(err, errlen, "--topology goes with topo, nvlink, doctor or devices (not with --watch)");
        return PSC_EXIT_USAGE;
    }
    if (o->topology && o->cmd == PSC_CMD_DEVICES && (o->json || o->identify)) {
        snprintf(err, errlen, "devices --topology shows the recorded GPUs' table: --json and --identify go with devices "
                              "on a live machine (topo --topology FILE --json writes the recording's facts)");
        return PSC_EXIT_USAGE;
    }
    if (!o->measure.verify && o->cmd != PSC_CMD_BW && o->cmd != PSC_CMD_REPORT) {
        snprintf(err, errlen, "--no-verify goes with bw and report");
        return PSC_EXIT_USAGE;
    }
    if (o->seconds && o->cmd != PSC_CMD_VERIFY) {
        snprintf(err, errlen, "--seconds goes with verify");
        return PSC_EXIT_USAGE;
    }
    if (o->no_load && o->cmd != PSC_CMD_VERIFY && o->cmd != PSC_CMD_CHECK) {
        snprintf(err, errlen, "--no-load goes with verify and check");
        return PSC_EXIT_USAGE;
    }
    if (o->hooks.fault && o->cmd != PSC_CMD_VERIFY && o->cmd != PSC_CMD_CHECK) {
        snprintf(err, errlen, "--test-fault goes with verify and check");
        return PSC_EXIT_USAGE;
    }
    if (o->baseline && o->cmd != PSC_CMD_CHECK) {
        snprintf(err, errlen, "--baseline goes with check");
        return PSC_EXIT_USAGE;
    }
    if (o->cmd == PSC_CMD_VERIFY && o->sweep_max)
        o->verify.max_size = o->sweep_max; /* verify -e SIZE: the largest copy */
    /* The watched traffic has no JSON form yet: say so rather than ignore --json. */
    if (o->json && o->watch) {
        snprintf(err, errlen, "--json does not go with nvlink --watch (accepted: nvlink --json, without --watch)");
        return PSC_EXIT_USAGE;
    }
    if (o->watch && o->cmd != PSC_CMD_NVLINK) {
        snprintf(err, errlen, "--watch goes with nvlink");
        return PSC_EXIT_USAGE;
    }
    if ((o->calibrate || o->calibration || o->no_host) && o->cmd != PSC_CMD_COPY) {
        snprintf(err, errlen, "--calibrate, --calibration and --no-host go with copy");
        return PSC_EXIT_USAGE;
    }
    if (o->cmd == PSC_CMD_COPY && (rc = psc__copy_check(o, err, errlen)) != 0)
        return rc;
    if ((o->ipc_methods || o->round_trips || o->no_local) && o->cmd != PSC_CMD_IPC) {
        snprintf(err, errlen, "--method, --round-trips and --no-local go with ipc");
        return PSC_EXIT_USAGE;
    }
    if ((rc = psc__fleet_check(o, err, errlen)) != 0)
        return rc;
    if (o->cmd == PSC_CMD_IPC && (rc = psc__ipc_check(o, err, errlen)) != 0)
        return rc;
    return psc__output_check(o, err, errlen);
}

/* Whole command lines but coll's, compare's, render's and nvbandwidth's: the defaults, the command word, the options, then their checks. */
static int psc__parse(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    int first = 1, rc, max_given = 0;
    psc__given_t given = {.n = 0};

    memset(o, 0, sizeof(*o));
    psc_measure_opts_default(&o->measure);
    psc_verify_opts_default(&o->verify);
    psc_test_hooks_default(&o->hooks);
    o->cmd = PSC_CMD_REPORT;
    if (argc > 1 && (strcmp(argv[1], "help") == 0 ||
                     ((strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) && argc == 3 && argv[2][0] != '-')))
        return psc__help_for(argc, argv, o, err, errlen);
    if (argc > 1 && strcmp(argv[1], "coll") == 0) /* nccl-tests' options: -d is the type there */
        return psc_cli_parse_coll(argc, argv, o, err, errlen);
    if (argc > 1 && strcmp(argv[1], "compare") == 0) /* two file names and its own options */
        return psc_cli_parse_compare(argc, argv, o, err, errlen);
    if (argc > 1 && strcmp(argv[1], "render") == 0) /* a file name and where its page goes */
        return psc_cli_parse_render(argc, argv, o, err, errlen);
    if (argc > 1 && strcmp(argv[1], "nvbandwidth") == 0) /* nvbandwidth's options: -b is MiB, -d another thing */
        return psc_cli_parse_nvbw(argc, argv, o, err, errlen);
    if (argc > 1 && strcmp(argv[1], "p2pbw") == 0) /* the sample's options: --numElems=N, --p2p_read, --sm_copy */
        return psc_cli_parse_p2pbw(argc, argv, o, err, errlen);
    if (argc > 1 && argv[1][0] != '-') {
        if ((rc = psc__command(argv[1], o, err, errlen)) != 0)
            return rc;
        first = 2;
    }
    o->args = (const char *const *)argv + first; /* the words after the command, for the page's context */
    o->nargs = argc - first;
    argv[first - 1] = argv[0];
    if ((rc = psc__parse_options(argc - first + 1, argv + first - 1, o, &max_given, &given, err, errlen)) != 0 ||
        (rc = psc__measure_check(o, max_given, err, errlen)) != 0 || (rc = psc__command_check(o, err, errlen)) != 0)
        return rc;
    return o->help ? 0 : psc__given_check(o, &given, err, errlen);
}

int psc_cli_parse(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    int rc = psc__parse(argc, argv, o, err, errlen);

    /* Messages quote what was typed: one line, and no escape sequence reaches the terminal. */
    if (rc != 0 && errlen) {
        char *raw = strdup(err);

        if (raw) {
            psc_text_escape(raw, NULL, err, errlen);
            free(raw);
        }
    }
    return rc;
}

int psc_cli_expect_check_file(const char *arg, char *err, size_t errlen)
{
    psc_expect_t *e = NULL;
    psc_status_t st;

    if (strcmp(arg, "auto") == 0)
        return 0;
    if (!*arg) {
        snprintf(err, errlen, "empty --expect file name: accepted a file of rules, or auto");
        return PSC_EXIT_USAGE;
    }
    st = psc_expect_load(arg, &e, err, errlen); /* a wrong line stops the command before it measures */
    psc_expect_free(e);
    return st == PSC_OK ? 0 : st == PSC_ERR_NO_MEMORY ? PSC_EXIT_NO_MEMORY : PSC_EXIT_USAGE;
}

int psc_cli_parse_devices(psc_cli_opts_t *o, const char *arg, char *err, size_t errlen)
{
    return psc__set_devices(o, arg, err, errlen);
}

int psc_cli_parse_json(psc_cli_opts_t *o, const char *arg, char *err, size_t errlen)
{
    o->json = 1;
    o->json_path = arg;
    if (arg && !*arg) {
        snprintf(err, errlen, "empty --json file name: accepted --json (stdout) or --json=FILE");
        return PSC_EXIT_USAGE;
    }
    return 0;
}
