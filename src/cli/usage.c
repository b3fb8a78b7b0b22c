/*
 * The help texts: `p2pscope --help` (every command and option) and
 * `p2pscope COMMAND --help` (that command's purpose, the options it takes,
 * an example), from one table of commands and one of options, so the two
 * never disagree. coll's own help is coll_options.c's (nccl-tests' options).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define C(x) (1u << PSC_CMD_##x)
#define MEASURE (C(REPORT) | C(BW) | C(LAT) | C(COPY) | C(IPC))
/* The commands that take the whole measurement's options: bw's suites, ipc's copies, nvlink --watch's traffic. */
#define RUNS (C(REPORT) | C(BW) | C(IPC) | C(NVLINK))

static const struct {
    psc_cli_cmd_t cmd;
    const char *name;
    const char *purpose; /* lines; the general help indents the ones after the first */
    const char *example;
} psc__cmds[] = {
    {PSC_CMD_REPORT, "report", "(default) the GPUs, then every bandwidth test", "p2pscope report --json=run.json"},
    {PSC_CMD_DEVICES, "devices", "the GPUs, the driver and how GPUs are numbered", "p2pscope devices"},
    {PSC_CMD_BW, "bw", "bandwidth tests: all, or those named with --test",
     "p2pscope bw -t 'gpu_to_gpu_*_ce' -d 0,1 -b 4K -e 1G"},
    {PSC_CMD_LAT, "lat", "latency tests: pointer chases, flag round trips, small and synchronous copies",
     "p2pscope lat -t gpu_to_gpu_chase -d 0,1"},
    {PSC_CMD_VERIFY, "verify", "every path moves the right bytes: patterns, sizes, unaligned offsets, canaries",
     "p2pscope verify --seconds 600"},
    {PSC_CMD_LIST, "list", "the names of the bandwidth tests", "p2pscope list"},
    {PSC_CMD_TOPO, "topo", "how the GPUs connect: path matrix, P2P access and attributes, PCIe, BAR1, IOMMU, ACS",
     "p2pscope topo --save machine.json"},
    {PSC_CMD_NVLINK, "nvlink", "every NVLink: state, speed, remote end, capabilities, traffic counters",
     "p2pscope nvlink --watch -t gpu_to_gpu_write_ce"},
    {PSC_CMD_DOCTOR, "doctor", "what is wrong with the paths between the GPUs, with evidence and a fix",
     "p2pscope doctor --topology machine.json"},
    {PSC_CMD_COPY, "copy",
     "psc_copy against the driver's copy call per path and size (1 B to 1 GiB by default),\n"
     "or with --calibrate, measure psc_copy's routes on this machine into a file",
     "p2pscope copy -d 0,1 --calibrate routes.json"},
    {PSC_CMD_IPC, "ipc",
     "between processes: one worker process per GPU shares memory by CUDA IPC and VMM;\n"
     "bandwidth, round trips and costs beside the same paths in one process",
     "p2pscope ipc --method legacy,vmm_fd -d 0,1"},
    {PSC_CMD_COMPARE, "compare",
     "two JSON runs of one command (bw, report, lat, coll), A.json then B.json: what differs\n"
     "about the machine and the options, then each case's change, marked where it is beyond\n"
     "the runs' noise",
     "p2pscope compare before.json after.json --fail-above 5"},
    {PSC_CMD_RENDER, "render",
     "a JSON run of bw, report or lat (--json) drawn again without a GPU: the same page,\n"
     "figures and CSV tables --html, --svg and --csv wrote at the run's end",
     "p2pscope render run.json --html run.html --csv tables"},
    {PSC_CMD_CHECK, "check",
     "the node's health in seconds (a scheduler's prolog): GPUs, NVLinks, PCIe, ECC, clocks against\n"
     "--expect (auto by default), the key paths' bandwidth and latency, bytes checked on every path\n"
     "under load, an all-reduce, the doctor; exit 0 healthy, 1 unhealthy, 3 cannot check",
     "p2pscope check --json=node.json --baseline last-week.json"},
    /* nvbandwidth's options and help are nvbw_options.c's: no example here */
    {PSC_CMD_NVBW, "nvbandwidth",
     "as nvbandwidth 0.8: its tests, text and -j JSON, measured by p2pscope's bw\n"
     "tests; its options (p2pscope nvbandwidth --help)",
     NULL},
    /* p2pBandwidthLatencyTest's options and help are p2pbw_options.c's: no example here */
    {PSC_CMD_P2PBW, "p2pbw",
     "as cuda-samples' p2pBandwidthLatencyTest: its matrices, measured by p2pscope's\n"
     "bw and lat tests; its options (p2pscope p2pbw --help)",
     NULL},
    /* nccl-tests' options and help are coll_options.c's: no example here */
    {PSC_CMD_COLL, "coll",
     "NCCL's collectives in nccl-tests' table, every timed operation checked;\n"
     "one process for every GPU, or one per GPU under mpirun (p2pscope coll --help)",
     NULL},
};

/* Each option's lines (as the general help shows them) and the commands it applies to. */
static const struct {
    unsigned cmds;
    const char *text;
} psc__opts[] = {
    {C(BW) | C(REPORT) | C(LAT) | C(VERIFY) | C(NVLINK),
     "  -t, --test NAME[,NAME...]  bandwidth tests to run, by name or glob (\"*_sm\"); repeatable\n"},
    {C(BW) | C(LAT), "  -l, --list                 list the bandwidth tests with a line each\n"},
    {MEASURE | C(VERIFY) | C(CHECK),
     "  -d, --devices LIST         GPUs to use, e.g. 0,1 (default: all); ipc: a worker per entry,\n"
     "                             0,0 puts two on GPU 0 (the default on a machine with one GPU)\n"},
    {C(REPORT) | C(BW) | C(IPC) | C(NVLINK) | C(CHECK),
     "  -s, --size SIZE            bytes per copy (default: 512MiB for GPU paths, 32MiB with pinned\n"
     "                             host memory, 64MiB pageable, 128MiB with P2P off); K/M/G/T and\n"
     "                             KiB/MiB/GiB/TiB are powers of 1024,\n"
     "                             KB/MB/GB/TB powers of 1000\n"},
    {C(REPORT) | C(BW) | C(COPY), "  -b, --min-bytes SIZE       with -e: a size sweep from SIZE ...\n"},
    {C(REPORT) | C(BW) | C(COPY) | C(VERIFY), "  -e, --max-bytes SIZE       ... to SIZE ...\n"},
    {C(REPORT) | C(BW) | C(COPY), "  -f, --step-factor N        ... multiplying by N (default 2)\n"},
    {C(REPORT) | C(BW) | C(IPC) | C(NVLINK),
     "  -i, --iterations N         copies per timed sample, 1 to 100000 (default: about 256 MiB worth,\n"
     "                             512 MiB with pinned host memory, 4 to 1000 copies)\n"},
    {MEASURE | C(NVLINK), "  -n, --samples N            at least N timed samples, 1-%d (default 3); the median is reported\n"},
    {RUNS, "      --max-samples N        sample until the median is stable, up to N (default 16)\n"},
    {RUNS, "      --stable PCT           stable: the last three medians within PCT percent (default 0.5)\n"},
    {RUNS, "  -w, --warmup N             untimed samples before them (default 1)\n"},
    {C(REPORT) | C(BW) | C(NVLINK),
     "      --host-node N          put host memory on NUMA node N (default: the GPU's nearest)\n"},
    {C(REPORT) | C(BW), "      --no-verify            bw, report: do not check the destinations after each sample\n"},
    {RUNS,
     "      --gate-timeout MS      how long a GPU waits for the host to queue a sample (default 5000)\n"},
    {~0u & ~C(RENDER), "      --json[=FILE]          write the results as JSON to FILE, or to stdout instead of tables\n"
          "                             (not with nvlink --watch); devices and FIFOs are written in place\n"},
    {C(REPORT) | C(BW) | C(LAT) | C(RENDER),
     "      --html FILE            the run as one self-contained page: tables, heatmaps, sweeps' curves,\n"
     "                             latency distributions, the doctor's findings (needs cairo)\n"},
    {C(COMPARE), "      --html FILE            the comparison as one self-contained page (needs no cairo)\n"},
    {C(CHECK), "      --html FILE            the check as one self-contained page: each item's verdict, figure and\n"
               "                             bound (needs no cairo)\n"},
    {C(REPORT) | C(BW) | C(LAT) | C(RENDER), "      --svg DIR              the page's figures as SVG files in DIR (needs cairo)\n"},
    {C(REPORT) | C(BW) | C(LAT) | C(RENDER) | C(COMPARE),
     "      --csv DIR              the run's tables as CSV files in DIR (bw.csv or lat.csv, gpus.csv, ...;\n"
     "                             compare: cases.csv, differences.csv, only.csv)\n"},
    {C(TOPO) | C(NVLINK) | C(DOCTOR) | C(DEVICES), "      --topology FILE        topo, nvlink, doctor, devices: replay a "
                                                  "recording (hwloc XML,\n"
                                                  "                             captured /sys tree, or --save JSON)\n"},
    {C(TOPO), "      --save FILE            topo: record this machine's facts (JSON, hwloc XML inside) for replay\n"},
    {~0u & ~C(LIST) & ~C(COMPARE) & ~C(RENDER), "      --identify             --json, --save: keep what identifies the machine (host name, GPU\n"
                     "                             UUIDs, serial numbers, MAC addresses); left out by default\n"},
    {C(VERIFY), "      --seconds N            verify: repeat with new seeds for N seconds (a stress test)\n"},
    {C(VERIFY) | C(CHECK), "      --no-load              verify, check: no background copies on the other paths while checking\n"},
    {C(NVLINK), "      --watch                nvlink: run the --test tests (default gpu_to_gpu_write_ce) and show\n"
                "                             the bytes each link carried\n"},
    {C(COPY), "      --calibrate FILE       copy: time every route of every path and write the crossovers to FILE\n"
              "                             (for psc_copy_calibration_load); -b/-e/-f/-n/-d/--no-host apply\n"},
    {C(COPY), "      --calibration FILE     copy: route the benchmark's copies by FILE (default: built-in routes)\n"},
    {C(COPY), "      --no-host              copy: GPU <-> GPU paths only (default: host <-> GPU paths too)\n"},
    {C(IPC), "      --method LIST          ipc: legacy, vmm_fd, vmm_fabric, comma separated (default: all three)\n"},
    {C(IPC), "      --round-trips N        ipc: flag round trips per pair and method, 1-1000000 (default 10000)\n"},
    {C(IPC), "      --no-local             ipc: skip the same paths inside one process (no ratio)\n"},
    {C(IPC) | C(CHECK), "  -T, --timeout SECONDS      ipc: the longest wait for a worker's start or reply (default 120);\n"
                        "                             check --fleet: for every node's report (default 600)\n"},
    {C(COMPARE), "      --fail-above PCT       compare: exit 1 when a case got worse by more than PCT percent\n"
                 "                             beyond the runs' noise, or fails now where it passed\n"},
    {C(REPORT) | C(BW) | C(LAT) | C(CHECK),
     "      --expect FILE|auto     after the run, its figures against FILE's bounds (EXPECTATION FILES in\n"
     "                             p2pscope(1)), or auto: bw bounds from this machine's NVLink and PCIe;\n"
     "                             each miss a line, exit 1 on any (check: auto by default)\n"},
    {C(CHECK), "      --baseline FILE        check: against an earlier check's JSON of this node; a figure worse\n"
               "                             beyond the noise by more than its tolerance fails\n"},
    {C(CHECK), "      --fleet                check: one rank per node under mpirun (mpirun -N 1 --hostfile H):\n"
               "                             every node at once, one table at rank 0 with each node's verdict\n"
               "                             and key figures beside the fleet's median; exit 1 when a node is\n"
               "                             unhealthy, an outlier or unreachable (no report within -T)\n"},
    {C(CHECK), "      --fleet-bound PCT      check --fleet: flag a node worse than the fleet's median by more than\n"
               "                             PCT percent (default: each item's --baseline tolerance)\n"},
};

static const char psc__footer[] =
    "Bandwidth is in GB/s, 1 GB = 1e9 bytes. Matrices are src(row) -> dst(column).\n"
    "Exit codes: 0 all passed, 1 a check failed, 2 usage error, 3 no driver/GPU or too few GPUs,\n"
    "4 out of memory, 77 nothing applicable.\n";

/* The options of the commands in mask, then -h and -V. */
static void psc__options(unsigned mask, const char *help)
{
    printf("Options:\n");
    for (size_t i = 0; i < sizeof(psc__opts) / sizeof(psc__opts[0]); i++) {
        const char *t = psc__opts[i].text, *d = strstr(t, "%d"); /* -n's: the largest sample count */

        if (!(psc__opts[i].cmds & mask))
            continue;
        if (d)
            printf("%.*s%d%s", (int)(d - t), t, PSC_MAX_SAMPLES, d + 2);
        else
            fputs(t, stdout);
    }
    printf("  -h, --help                 %s\n"
           "  -V, --version              the version\n",
           help);
}

void psc_cli_usage(void)
{
    printf("usage: p2pscope [COMMAND] [OPTIONS]\n\nCommands:\n");
    for (size_t i = 0; i < sizeof(psc__cmds) / sizeof(psc__cmds[0]); i++) {
        const char *p = psc__cmds[i].purpose, *nl;

        printf("  %-9s ", psc__cmds[i].name);
        while ((nl = strchr(p, '\n'))) {
            printf("%.*s\n            ", (int)(nl - p), p);
            p = nl + 1;
        }
        printf("%s\n", p);
    }
    printf("\n");
    psc__options(~0u, "this text; p2pscope COMMAND --help: that command's");
    printf("\n%s", psc__footer);
}

int psc_cli_usage_cmd(psc_cli_cmd_t cmd)
{
    for (size_t i = 0; i < sizeof(psc__cmds) / sizeof(psc__cmds[0]); i++) {
        if (psc__cmds[i].cmd != cmd || !psc__cmds[i].example)
            continue;
        printf("usage: p2pscope %s%s [OPTIONS]\n\n%s\n\n", psc__cmds[i].name,
               cmd == PSC_CMD_COMPARE ? " A.json B.json" : cmd == PSC_CMD_RENDER ? " RUN.json" : "",
               psc__cmds[i].purpose);
        psc__options(1u << cmd, "this text (p2pscope --help: every command)");
        printf("\nExample:\n  %s\n\n%s", psc__cmds[i].example, psc__footer);
        return 0;
    }
    return -1;
}

int psc_cli_command_of(const char *word)
{
    for (size_t i = 0; i < sizeof(psc__cmds) / sizeof(psc__cmds[0]); i++)
        if (strcmp(word, psc__cmds[i].name) == 0)
            return (int)psc__cmds[i].cmd;
    return -1;
}

const char *psc_cli_cmd_name(psc_cli_cmd_t cmd)
{
    for (size_t i = 0; i < sizeof(psc__cmds) / sizeof(psc__cmds[0]); i++)
        if (psc__cmds[i].cmd == cmd)
            return psc__cmds[i].name;
    return "?";
}

int psc_cli_option_goes_with(psc_cli_cmd_t cmd, const char *name, char *with, size_t len)
{
    const size_t n = strlen(name);
    unsigned cmds = 0;
    int listed = 0;
    size_t used = 0;

    /* an option may have a line per group of commands (check's --html says what its page holds): all of them */
    for (size_t i = 0; i < sizeof(psc__opts) / sizeof(psc__opts[0]); i++) {
        const char *p = strstr(psc__opts[i].text, "--"); /* the option's own long name comes first */

        if (!p || strncmp(p + 2, name, n) != 0 || p[2 + n] == '-' || (p[2 + n] >= 'a' && p[2 + n] <= 'z'))
            continue;
        listed = 1;
        cmds |= psc__opts[i].cmds;
    }
    if (!listed || (cmds & (1u << cmd)))
        return 1; /* not in the help (the tests' hidden options): each checks its own command */
    with[0] = '\0';
    for (size_t k = 0; k < sizeof(psc__cmds) / sizeof(psc__cmds[0]); k++)
        if (cmds & (1u << psc__cmds[k].cmd) && used < len)
            used += (size_t)snprintf(with + used, len - used, "%s%s", used ? ", " : "", psc__cmds[k].name);
    return 0;
}
