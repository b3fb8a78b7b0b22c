/*
 * The doctor's NCCL rules: what NCCL's version and the NCCL_* settings of the
 * environment do to the paths NCCL takes between these GPUs. Pure, as
 * rules.c's are. The effects named are those NCCL's documentation gives
 * (docs.nvidia.com/deeplearning/nccl, "Environment Variables").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "doctor/rules.h"
#include "driver/nccl.h"

#define PSC__NCCL_CURRENT 21900     /* 2.19.0: see rule_nccl_old */
#define PSC__NCCL_BUFFSIZE 4194304  /* NCCL's default NCCL_BUFFSIZE (4 MiB) */
#define PSC__NCCL_FEW_CHANNELS 4    /* NCCL_MAX_NCHANNELS below this caps large transfers */

const char *psc__nccl_setting(const psc_nccl_facts_t *n, const char *name)
{
    if (!n || !n->known)
        return NULL;
    for (int k = 0; k < n->nsettings && k < PSC_MAX_NCCL_ENV; k++)
        if (strcmp(n->settings[k].name, name) == 0)
            return n->settings[k].value;
    return NULL;
}

/* An integer setting as NCCL parses it (strtoll, base 0); 0 when unset or not a number. */
static long long psc__nccl_int(const psc_nccl_facts_t *n, const char *name, int *set)
{
    const char *v = psc__nccl_setting(n, name);
    char *end;
    long long x;

    *set = 0;
    if (!v || !*v)
        return 0;
    x = strtoll(v, &end, 0);
    if (end == v || *end)
        return 0;
    *set = 1;
    return x;
}

int psc__nccl_flag(const psc_nccl_facts_t *n, const char *name)
{
    int set;

    return psc__nccl_int(n, name, &set) != 0;
}

static const char *const psc__nccl_paths[] = {"LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS"};

const char *psc__nccl_path_name(int rank)
{
    return rank >= 0 && rank < (int)(sizeof(psc__nccl_paths) / sizeof(psc__nccl_paths[0])) ? psc__nccl_paths[rank]
                                                                                          : "?";
}

int psc__nccl_p2p_level(const psc_nccl_facts_t *n)
{
    /* NCCL's older integer form: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS. */
    static const int legacy[] = {0, 3, 4, 6, 7};
    const char *v = psc__nccl_setting(n, "NCCL_P2P_LEVEL");
    char *end;
    long x;

    if (!v || !*v)
        return -1;
    for (int k = 0; k < (int)(sizeof(psc__nccl_paths) / sizeof(psc__nccl_paths[0])); k++)
        if (strcasecmp(v, psc__nccl_paths[k]) == 0)
            return k;
    x = strtol(v, &end, 10);
    if (end == v || *end || x < 0)
        return -1;
    return x < 4 ? legacy[x] : 7;
}

int psc__nccl_path_rank(psc_path_t path)
{
    switch (path) {
    case PSC_PATH_NVLINK: return 1;
    case PSC_PATH_PIX: return 3;
    case PSC_PATH_PXB: return 4;
    case PSC_PATH_PHB:
    case PSC_PATH_NODE: return 6; /* NCCL's PHB: through the CPU, within one NUMA node */
    case PSC_PATH_SYS: return 7;
    default: return -1;
    }
}

/* "NCCL_P2P_DISABLE=1", or "" when unset. */
static const char *psc__shown(const psc_nccl_facts_t *n, const char *name, char *buf, size_t len)
{
    const char *v = psc__nccl_setting(n, name);

    snprintf(buf, len, "%s%s%s", v ? name : "", v ? "=" : "", v ? v : "");
    return buf;
}

/* Ordered pairs with peer access, and the first of them. */
static int psc__access_pairs(const psc_facts_t *f, int *fi, int *fj)
{
    int c = 0;

    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++)
            if (i != j && f->pair[i][j].can_access == 1 && c++ == 0)
                *fi = i, *fj = j;
    return c;
}

static int psc__no_access_pairs(const psc_facts_t *f)
{
    int c = 0;

    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++)
            c += i != j && f->pair[i][j].can_access == 0;
    return c;
}

static int psc__any_corrupt(const psc_facts_t *f)
{
    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++)
            if (i != j && f->pair[i][j].integrity == 0)
                return 1;
    return 0;
}

static int psc__nvswitch(const psc_facts_t *f)
{
    for (int i = 0; i < f->ngpu; i++)
        for (int l = 0; l < f->gpu[i].nvlink_count && l < PSC_MAX_NVLINKS; l++)
            if (f->gpu[i].nvlinks[l].remote == PSC_REMOTE_SWITCH && f->gpu[i].nvlinks[l].active == 1)
                return 1;
    return 0;
}

static void rule_nccl_missing(const psc_facts_t *f, psc__findings_t *fs)
{
    const psc_nccl_facts_t *n = &f->nccl;

    if (!n->known || n->loaded || f->ngpu < 1)
        return;
    psc__add(fs, PSC_SEV_INFO, "nccl_missing",
             "install NCCL (Debian/Ubuntu: apt-get install libnccl2; or NVIDIA's packages), or set P2PSCOPE_LIBNCCL "
             "to the path of a libnccl.so.2",
             n->note[0] ? n->note : n->path, "NCCL (%s) could not be loaded: p2pscope coll needs it", n->path);
}

/*
 * 2.19 as the oldest current release: NVLink SHARP (NVLS) came in 2.17, and
 * the 2.18.1 release notes list as known issues data corruption with LL128
 * over Tree on HGX H100 and hangs with IB SHARP, fixed in later releases;
 * the coll results of this project were taken on 2.28.
 */
static void rule_nccl_old(const psc_facts_t *f, psc__findings_t *fs)
{
    const psc_nccl_facts_t *n = &f->nccl;
    char have[32], ev[320];

    if (!n->known || !n->loaded || n->version <= 0 || n->version >= PSC__NCCL_CURRENT)
        return;
    snprintf(ev, sizeof(ev), "ncclGetVersion: %d in %s", n->version, n->path);
    psc__add(fs, PSC_SEV_INFO, "nccl_old", "install NCCL 2.19 or newer (libnccl2), or point P2PSCOPE_LIBNCCL at one",
             ev,
             "NCCL %s is older than 2.19: later releases fix hangs and data corruption their release notes list "
             "(2.18.1's: LL128 on HGX H100, IB SHARP), and NVLink SHARP needs 2.17 or newer",
             psc__nccl_version_string(n->version, have, sizeof(have)));
}

static void rule_nccl_p2p(const psc_facts_t *f, psc__findings_t *fs)
{
    const psc_nccl_facts_t *n = &f->nccl;
    int i = 0, j = 0, pairs = psc__access_pairs(f, &i, &j), shm_off = psc__nccl_flag(n, "NCCL_SHM_DISABLE");
    char a[160], b[160], ev[512];

    if (!psc__nccl_flag(n, "NCCL_P2P_DISABLE") || !pairs || psc__any_corrupt(f))
        return; /* with wrong bytes on some pair, turning P2P off is the fix p2p_corrupts gives */
    snprintf(ev, sizeof(ev), "%s%s%s; %d ordered GPU pairs with peer access (first gpu%d -> gpu%d)",
             psc__shown(n, "NCCL_P2P_DISABLE", a, sizeof(a)), shm_off ? " " : "",
             shm_off ? psc__shown(n, "NCCL_SHM_DISABLE", b, sizeof(b)) : "", pairs, i, j);
    psc__add(fs, PSC_SEV_WARNING, "nccl_p2p_disabled",
             "unset NCCL_P2P_DISABLE (and NCCL_SHM_DISABLE) unless P2P is known to give wrong data here", ev,
             "NCCL_P2P_DISABLE turns off NCCL's P2P transport although these GPUs reach each other: their traffic "
             "goes %s, at a fraction of the peer bandwidth bw measures",
             shm_off ? "through the network transport only (NCCL_SHM_DISABLE too)" : "through host memory (SHM)");
}

/* Pairs without P2P (by the driver or by NCCL_P2P_DISABLE) fall back to SHM; with SHM off too, to the network. */
static void rule_nccl_shm(const psc_facts_t *f, psc__findings_t *fs)
{
    const psc_nccl_facts_t *n = &f->nccl;
    int without = psc__no_access_pairs(f);
    char a[160], ev[512];

    if (!psc__nccl_flag(n, "NCCL_SHM_DISABLE") || psc__nccl_flag(n, "NCCL_P2P_DISABLE") || !without)
        return; /* with P2P disabled as well, nccl_p2p_disabled says it */
    snprintf(ev, sizeof(ev), "%s; %d ordered GPU pairs without peer access",
             psc__shown(n, "NCCL_SHM_DISABLE", a, sizeof(a)), without);
    psc__add(fs, PSC_SEV_WARNING, "nccl_shm_disabled", "unset NCCL_SHM_DISABLE", ev,
             "NCCL_SHM_DISABLE turns off NCCL's shared-memory transport: GPUs without peer access to each other "
             "exchange data through the network transport only");
}

static void rule_nccl_p2p_level(const psc_facts_t *f, psc__findings_t *fs)
{
    const psc_nccl_facts_t *n = &f->nccl;
    int level = psc__nccl_p2p_level(n), c = 0, fi = 0, fj = 0, worst = -1;
    char a[160], label[16], ev[512];

    if (level < 0 || psc__nccl_flag(n, "NCCL_P2P_DISABLE"))
        return;
    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++) {
            int r = psc__nccl_path_rank(f->pair[i][j].path);

            if (i == j || f->pair[i][j].can_access == 0 || r <= level)
                continue;
            if (c++ == 0)
                fi = i, fj = j;
            worst = r > worst ? r : worst;
        }
    if (!c)
        return;
    snprintf(ev, sizeof(ev), "%s (NCCL's %s); %d ordered GPU pairs farther apart, first gpu%d -> gpu%d over %s",
             psc__shown(n, "NCCL_P2P_LEVEL", a, sizeof(a)), psc__nccl_path_name(level), c, fi, fj,
             psc_path_label(f->pair[fi][fj].path, f->pair[fi][fj].nvlinks, label, sizeof(label)));
    psc__add(fs, PSC_SEV_WARNING, "nccl_p2p_level", "unset NCCL_P2P_LEVEL, or raise it to the pairs' path class", ev,
             "NCCL_P2P_LEVEL=%s is below the path class of %d GPU pairs here (up to %s): NCCL does not use P2P "
             "between them",
             psc__nccl_path_name(level), c, psc__nccl_path_name(worst));
}

static void rule_nccl_tuning(const psc_facts_t *f, psc__findings_t *fs)
{
    const psc_nccl_facts_t *n = &f->nccl;
    char a[160], b[160], ev[400];
    const char *algo = psc__nccl_setting(n, "NCCL_ALGO"), *proto = psc__nccl_setting(n, "NCCL_PROTO");
    long long v;
    int set;

    if (psc__nccl_setting(n, "NCCL_NVLS_ENABLE") && !psc__nccl_flag(n, "NCCL_NVLS_ENABLE") && psc__nvswitch(f))
        psc__add(fs, PSC_SEV_INFO, "nccl_nvls_off", "unset NCCL_NVLS_ENABLE",
                 psc__shown(n, "NCCL_NVLS_ENABLE", a, sizeof(a)),
                 "NCCL_NVLS_ENABLE=0 turns off NVLink SHARP on this NVSwitch machine: all-reduce may reach less bus "
                 "bandwidth");
    if (psc__nccl_setting(n, "NCCL_CUMEM_ENABLE") && !psc__nccl_flag(n, "NCCL_CUMEM_ENABLE"))
        psc__add(fs, PSC_SEV_INFO, "nccl_cumem_off", "unset NCCL_CUMEM_ENABLE unless a known problem needs it",
                 psc__shown(n, "NCCL_CUMEM_ENABLE", a, sizeof(a)),
                 "NCCL_CUMEM_ENABLE=0 makes NCCL allocate with cudaMalloc instead of the cuMem API: features built on "
                 "cuMem, NVLink SHARP among them, may be off");
    if (algo || proto) {
        snprintf(ev, sizeof(ev), "%s%s%s", psc__shown(n, "NCCL_ALGO", a, sizeof(a)), algo && proto ? " " : "",
                 psc__shown(n, "NCCL_PROTO", b, sizeof(b)));
        psc__add(fs, PSC_SEV_INFO, "nccl_forced", "unset NCCL_ALGO and NCCL_PROTO to let NCCL's tuner choose", ev,
                 "%s forces NCCL's choice of %s: sizes where another choice is faster may lose bandwidth", ev,
                 algo && proto ? "algorithm and protocol" : algo ? "algorithm" : "protocol");
    }
    v = psc__nccl_int(n, "NCCL_MAX_NCHANNELS", &set);
    if (set && v > 0 && v < PSC__NCCL_FEW_CHANNELS)
        psc__add(fs, PSC_SEV_INFO, "nccl_few_channels", "unset NCCL_MAX_NCHANNELS",
                 psc__shown(n, "NCCL_MAX_NCHANNELS", a, sizeof(a)),
                 "NCCL_MAX_NCHANNELS=%lld limits NCCL to %lld channel%s: large transfers may not reach the links' "
                 "bandwidth",
                 v, v, v == 1 ? "" : "s");
    v = psc__nccl_int(n, "NCCL_BUFFSIZE", &set);
    if (set && v > 0 && v < PSC__NCCL_BUFFSIZE)
        psc__add(fs, PSC_SEV_INFO, "nccl_small_buffsize", "unset NCCL_BUFFSIZE (NCCL's default is 4 MiB)",
                 psc__shown(n, "NCCL_BUFFSIZE", a, sizeof(a)),
                 "NCCL_BUFFSIZE=%lld is below NCCL's default of 4 MiB: large transfers may lose bandwidth", v);
}

static void rule_nccl_net(const psc_facts_t *f, psc__findings_t *fs)
{
    const psc_nccl_facts_t *n = &f->nccl;
    char a[160], b[160], ev[400];
    int ib_off = psc__nccl_flag(n, "NCCL_IB_DISABLE");
    const char *net = psc__nccl_setting(n, "NCCL_NET");

    if (!ib_off && !net)
        return;
    snprintf(ev, sizeof(ev), "%s%s%s", ib_off ? psc__shown(n, "NCCL_IB_DISABLE", a, sizeof(a)) : "",
             ib_off && net ? " " : "", psc__shown(n, "NCCL_NET", b, sizeof(b)));
    psc__add(fs, PSC_SEV_INFO, "nccl_net_set",
             "nothing to change for one node; across nodes check that the network NCCL then uses is the one meant",
             ev, "%s: this changes only traffic between nodes, not between the GPUs of one node",
             ib_off ? "NCCL_IB_DISABLE sends NCCL's traffic between nodes over sockets instead of InfiniBand/RoCE"
                    : "NCCL_NET picks the network NCCL uses between nodes");
}

static void rule_nccl_debug(const psc_facts_t *f, psc__findings_t *fs)
{
    const char *v = psc__nccl_setting(&f->nccl, "NCCL_DEBUG");
    char a[160];

    if (!v || strcasecmp(v, "TRACE") != 0)
        return;
    psc__add(fs, PSC_SEV_INFO, "nccl_debug_trace", "use NCCL_DEBUG=INFO (or WARN) for timed runs",
             psc__shown(&f->nccl, "NCCL_DEBUG", a, sizeof(a)),
             "NCCL_DEBUG=TRACE logs each call in NCCL builds with tracing, which slows small collectives");
}

static void rule_nccl_not_checked(const psc_facts_t *f, psc__findings_t *fs)
{
    if (f->nccl.known)
        return;
    psc__add(fs, PSC_SEV_INFO, "not_checked_nccl",
             "run p2pscope doctor on the machine itself, in the environment the NCCL jobs run with", f->source,
             "not checked: NCCL's version and NCCL_* settings (not in these facts)");
}

void psc__rules_nccl(const psc_facts_t *f, psc__findings_t *fs)
{
    rule_nccl_missing(f, fs);
    rule_nccl_old(f, fs);
    rule_nccl_p2p(f, fs);
    rule_nccl_shm(f, fs);
    rule_nccl_p2p_level(f, fs);
    rule_nccl_tuning(f, fs);
    rule_nccl_net(f, fs);
    rule_nccl_debug(f, fs);
    rule_nccl_not_checked(f, fs);
}
