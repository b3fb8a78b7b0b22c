/*
 * The matrices of cuda-samples' p2pBandwidthLatencyTest in its order, each
 * with the p2pscope test its cells come from (p2pbw_map.h), and the cell
 * rule: the diagonal from the local copy tests, the sample's staged-copy
 * fallback where two GPUs cannot reach each other, a read matrix's data
 * going column -> row.
 */
#include <string.h>

#include "report/p2pbw_map.h"

#define LOFF "gpu_to_gpu_copy_p2p_off_ce"
#define BOFF "gpu_to_gpu_p2p_off_ce"
#define BBOFF "gpu_to_gpu_bidir_p2p_off_ce"

static const psc_p2pbw_matrix_t psc__p2pbw[] = {
    {"unidirectional_p2p_disabled_bandwidth_gbs", "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)", PSC_P2PBW_BW,
     BOFF, BOFF, NULL, 0, 0},
    {"unidirectional_p2p_enabled_write_bandwidth_gbs", "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)",
     PSC_P2PBW_BW, "gpu_to_gpu_write_ce", "gpu_to_gpu_write_sm", BOFF, 0, 0},
    {"unidirectional_p2p_enabled_read_bandwidth_gbs", "Unidirectional P2P=Enabled Bandwidth (P2P Reads) Matrix (GB/s)",
     PSC_P2PBW_BW, "gpu_to_gpu_read_ce", "gpu_to_gpu_read_sm", BOFF, 1, 1},
    {"bidirectional_p2p_disabled_bandwidth_gbs", "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)", PSC_P2PBW_BIDIR,
     BBOFF, BBOFF, NULL, 0, 0},
    {"bidirectional_p2p_enabled_bandwidth_gbs", "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", PSC_P2PBW_BIDIR,
     "gpu_to_gpu_bidir_write_ce", "gpu_to_gpu_bidir_write_sm", BBOFF, 0, 0},
    {"p2p_disabled_latency_gpu_us", "P2P=Disabled Latency Matrix (us)", PSC_P2PBW_LAT_GPU, LOFF, LOFF, NULL, 0, 0},
    {"p2p_disabled_latency_cpu_us", "", PSC_P2PBW_LAT_CPU, LOFF, LOFF, NULL, 0, 0},
    {"p2p_enabled_write_latency_gpu_us", "P2P=Enabled Latency (P2P Writes) Matrix (us)", PSC_P2PBW_LAT_GPU,
     "gpu_to_gpu_copy_ce", "gpu_to_gpu_copy_sm", LOFF, 0, 0},
    {"p2p_enabled_write_latency_cpu_us", "", PSC_P2PBW_LAT_CPU, "gpu_to_gpu_copy_ce", "gpu_to_gpu_copy_sm", LOFF, 0,
     0},
    /* the copies issued by the reading GPU, the row's, its data from the column's */
    {"p2p_enabled_read_latency_gpu_us", "P2P=Enabled Latency (P2P Reads) Matrix (us)", PSC_P2PBW_LAT_GPU,
     "gpu_to_gpu_copy_read_ce", "gpu_to_gpu_copy_read_sm", LOFF, 1, 1},
    {"p2p_enabled_read_latency_cpu_us", "", PSC_P2PBW_LAT_CPU, "gpu_to_gpu_copy_read_ce", "gpu_to_gpu_copy_read_sm",
     LOFF, 1, 1},
};

int psc_p2pbw_matrix_count(void)
{
    return (int)(sizeof(psc__p2pbw) / sizeof(psc__p2pbw[0]));
}

const psc_p2pbw_matrix_t *psc_p2pbw_matrix_at(int i)
{
    return i >= 0 && i < psc_p2pbw_matrix_count() ? &psc__p2pbw[i] : NULL;
}

int psc_p2pbw_matrix_shown(const psc_p2pbw_matrix_t *m, int p2p_read)
{
    return !m->only_read || p2p_read;
}

/* The bandwidth figure of the named test between src and dst (both ways for bidir): 1 and *out when it passed. */
static int psc__p2pbw_bw(const psc_bw_suite_t *s, const char *name, int bidir, int src, int dst, double *out)
{
    psc_bw_test_t t;

    if (!s || psc_bw_test_from_name(name, &t) != PSC_OK)
        return 0;
    for (int k = 0; k < s->ntests; k++) {
        const psc_bw_result_t *res = s->results + s->tests[k].first;

        for (size_t i = 0; s->tests[k].test == t && i < s->tests[k].n; i++) {
            const psc_bw_case_t *c = &res[i].c;

            if (res[i].status != PSC_RESULT_PASSED)
                continue;
            if (bidir && ((c->src == src && c->dst == dst) || (c->src == dst && c->dst == src))) {
                *out = res[i].stats.median;
                return 1;
            }
            for (int x = 0; !bidir && x < c->nxfer; x++)
                if (c->xfer[x].src == src && c->xfer[x].dst == dst) {
                    *out = res[i].xfer_gbs[x];
                    return 1;
                }
        }
    }
    return 0;
}

/* The 16-byte copy's GPU time (cpu: the CPU's time to queue it) of the named test, src -> dst, in us. */
static int psc__p2pbw_lat(const psc_lat_suite_t *s, const char *name, int cpu, int src, int dst, double *out)
{
    psc_lat_test_t t;

    if (!s || psc_lat_test_from_name(name, &t) != PSC_OK)
        return 0;
    for (int k = 0; k < s->ntests; k++) {
        const psc_lat_result_t *res = s->results + s->tests[k].first;

        for (size_t i = 0; s->tests[k].test == t && i < s->tests[k].n; i++) {
            if (res[i].status != PSC_RESULT_PASSED || res[i].c.src != src || res[i].c.dst != dst)
                continue;
            for (unsigned z = 0; z < res[i].nsizes; z++)
                if (res[i].sizes[z] == PSC_P2PBW_LAT_BYTES) {
                    *out = (cpu ? res[i].submit[z].p50 : res[i].lat[z].p50) / 1e3;
                    return 1;
                }
        }
    }
    return 0;
}

int psc_p2pbw_cell(const psc_p2pbw_matrix_t *m, const psc_p2pbw_t *r, int sm_copy, int row, int col, double *out)
{
    const int lat = m->kind == PSC_P2PBW_LAT_GPU || m->kind == PSC_P2PBW_LAT_CPU, cpu = m->kind == PSC_P2PBW_LAT_CPU;
    const int src = m->read ? col : row, dst = m->read ? row : col;
    const char *name = sm_copy ? m->sm_test : m->test;
    double v;

    if (row < 0 || col < 0 || row >= r->ndev || col >= r->ndev)
        return 0;
    if (row == col) { /* the sample's copy inside the GPU: bytes read and written both count */
        if (lat)
            return psc__p2pbw_lat(r->lat, "gpu_local_copy_ce", cpu, row, row, out);
        if (!psc__p2pbw_bw(r->bw, "gpu_local_ce", 0, row, row, &v))
            return 0;
        *out = 2 * v;
        return 1;
    }
    if (m->fallback && !r->can_access[row][col]) /* without peer access the sample's copy is staged */
        name = m->fallback;
    if (!name)
        return 0;
    if (lat)
        return psc__p2pbw_lat(r->lat, name, cpu, src, dst, out);
    return psc__p2pbw_bw(r->bw, name, m->kind == PSC_P2PBW_BIDIR, src, dst, out);
}
