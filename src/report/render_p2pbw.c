/*
 * p2pBandwidthLatencyTest's text and p2pscope p2pbw's JSON from one run
 * (render_p2pbw.h). The layout follows the sample's printf calls: "   D\D"
 * and "%6d " column heads, "%6d " row heads, "%6.02f " cells; the
 * connectivity matrix's "     D\D", "%6d" heads and "%6d\t" row heads.
 */
#include <stdio.h>
#include <string.h>

#include "p2pscope/version.h"
#include "report/json.h"
#include "report/render_p2pbw.h"

static void psc__p2pbw_head(FILE *f, const char *corner, int n)
{
    fprintf(f, "%s", corner);
    for (int j = 0; j < n; j++)
        fprintf(f, "%6d ", j);
    fprintf(f, "\n");
}

static void psc__p2pbw_rows(FILE *f, const psc_p2pbw_matrix_t *m, const psc_p2pbw_t *r, int sm_copy)
{
    for (int i = 0; i < r->ndev; i++) {
        fprintf(f, "%6d ", i);
        for (int j = 0; j < r->ndev; j++) {
            double v;

            if (psc_p2pbw_cell(m, r, sm_copy, i, j, &v))
                fprintf(f, "%6.02f ", v);
            else
                fprintf(f, "%6s ", "N/A");
        }
        fprintf(f, "\n");
    }
}

void psc_render_p2pbw_matrix(FILE *f, int m, const psc_p2pbw_t *r, const psc_p2pbw_render_opts_t *o)
{
    const psc_p2pbw_matrix_t *x = psc_p2pbw_matrix_at(m);

    if (!x || !psc_p2pbw_matrix_shown(x, o->p2p_read))
        return;
    if (x->kind == PSC_P2PBW_LAT_CPU) { /* under its GPU matrix, after a blank line */
        fprintf(f, "\n");
        psc__p2pbw_head(f, "   CPU", r->ndev);
    } else {
        fprintf(f, "%s\n", x->title);
        psc__p2pbw_head(f, x->kind == PSC_P2PBW_LAT_GPU ? "   GPU" : "   D\\D", r->ndev);
    }
    psc__p2pbw_rows(f, x, r, o->sm_copy);
}

/* The device lines, each pair's peer access and the sample's note, the connectivity matrix. */
static void psc__p2pbw_devices(FILE *f, const psc_p2pbw_t *r, const psc_device_info_t *devs)
{
    for (int i = 0; i < r->ndev; i++) {
        unsigned dom = 0, bus = 0, dev = 0;

        if (sscanf(devs[i].pci_bus_id, "%x:%x:%x", &dom, &bus, &dev) != 3)
            dom = bus = dev = 0;
        fprintf(f, "Device: %d, %s, pciBusID: %x, pciDeviceID: %x, pciDomainID:%x\n", i, devs[i].name, bus, dev, dom);
    }
    for (int i = 0; i < r->ndev; i++)
        for (int j = 0; j < r->ndev; j++)
            if (i != j)
                fprintf(f, "Device=%d %s Access Peer Device=%d\n", i, r->can_access[i][j] ? "CAN" : "CANNOT", j);
    fprintf(f, "\n***NOTE: In case a device doesn't have P2P access to other one, it falls back to normal memcopy "
               "procedure.\nSo you can see lesser Bandwidth (GB/s) and unstable Latency (us) in those cases.\n\n");
    fprintf(f, "P2P Connectivity Matrix\n     D\\D");
    for (int j = 0; j < r->ndev; j++)
        fprintf(f, "%6d", j);
    fprintf(f, "\n");
    for (int i = 0; i < r->ndev; i++) {
        fprintf(f, "%6d\t", i);
        for (int j = 0; j < r->ndev; j++)
            fprintf(f, "%6d", r->can_access[i][j] ? 1 : 0);
        fprintf(f, "\n");
    }
}

void psc_render_p2pbw(FILE *f, const psc_p2pbw_t *r, const psc_device_info_t *devs, const psc_p2pbw_render_opts_t *o)
{
    fprintf(f, "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n");
    psc__p2pbw_devices(f, r, devs);
    for (int m = 0; m < psc_p2pbw_matrix_count(); m++)
        psc_render_p2pbw_matrix(f, m, r, o);
    fprintf(f, "\nNOTE: The CUDA Samples are not meant for performance measurements. Results may vary when GPU Boost "
               "is enabled.\n");
}

/* Calls fn for each failed case of the run (test, source, destination, why); their count. */
typedef void (*psc__p2pbw_fail_fn)(void *user, const char *test, int src, int dst, const char *reason);
static int psc__p2pbw_each_failure(const psc_p2pbw_t *r, psc__p2pbw_fail_fn fn, void *user)
{
    int n = 0;

    for (size_t i = 0; r->bw && i < r->bw->nresults; i++) {
        const psc_bw_result_t *x = &r->bw->results[i];

        if (x->status == PSC_RESULT_FAILED && ++n)
            fn(user, psc_bw_test_name(x->c.test), x->c.src, x->c.dst, x->reason);
    }
    for (size_t i = 0; r->lat && i < r->lat->nresults; i++) {
        const psc_lat_result_t *x = &r->lat->results[i];

        if (x->status == PSC_RESULT_FAILED && ++n)
            fn(user, psc_lat_test_info(x->c.test)->name, x->c.src, x->c.dst, x->reason);
    }
    return n;
}

static void psc__p2pbw_fail_line(void *user, const char *test, int src, int dst, const char *reason)
{
    fprintf((FILE *)user, "p2pscope: %s GPU %d -> GPU %d: %s\n", test, src, dst, reason);
}

int psc_render_p2pbw_failures(FILE *f, const psc_p2pbw_t *r)
{
    return psc__p2pbw_each_failure(r, psc__p2pbw_fail_line, f);
}

/* What a matrix's cell (row, column) is, in words. */
static const char *psc__p2pbw_direction(const psc_p2pbw_matrix_t *m)
{
    if (m->kind == PSC_P2PBW_BIDIR)
        return "GPU(row) <-> GPU(column), both directions at once, their total; diagonal: the local copy";
    if (m->read)
        return "GPU(column) -> GPU(row), issued by the row GPU (a read); diagonal: the local copy";
    return "GPU(row) -> GPU(column), issued by the row GPU (a write); diagonal: the local copy";
}

static json_t *psc__p2pbw_values(const psc_p2pbw_matrix_t *m, const psc_p2pbw_t *r, int sm_copy, int *bad)
{
    json_t *rows = json_array();

    for (int i = 0; rows && i < r->ndev; i++) {
        json_t *row = json_array();

        for (int j = 0; row && j < r->ndev; j++) {
            double v;

            psc_json_push(row, psc_p2pbw_cell(m, r, sm_copy, i, j, &v) ? json_real(v) : json_null(), bad);
        }
        psc_json_push(rows, row, bad);
    }
    *bad |= !rows;
    return rows;
}

static json_t *psc__p2pbw_matrices(const psc_p2pbw_t *r, const psc_p2pbw_render_opts_t *o, int *bad)
{
    json_t *all = json_object();
    const char *title = "";

    for (int k = 0; all && k < psc_p2pbw_matrix_count(); k++) {
        const psc_p2pbw_matrix_t *m = psc_p2pbw_matrix_at(k);
        const int lat = m->kind == PSC_P2PBW_LAT_GPU || m->kind == PSC_P2PBW_LAT_CPU;
        json_t *x;

        title = *m->title ? m->title : title; /* the CPU figures sit under the GPU's title */
        if (!psc_p2pbw_matrix_shown(m, o->p2p_read) || !(x = json_object())) {
            *bad |= psc_p2pbw_matrix_shown(m, o->p2p_read);
            continue;
        }
        psc_json_set(x, "title", psc_json_str(title), bad);
        psc_json_set(x, "figure", psc_json_str(m->kind == PSC_P2PBW_LAT_CPU   ? "CPU time to queue one 16-byte copy"
                                               : m->kind == PSC_P2PBW_LAT_GPU ? "GPU time per 16-byte copy"
                                                                              : "bandwidth, 1 GB = 1e9 bytes"),
                     bad);
        psc_json_set(x, "unit", psc_json_str(lat ? "us" : "GB/s"), bad);
        psc_json_set(x, "direction", psc_json_str(psc__p2pbw_direction(m)), bad);
        psc_json_set(x, "values", psc__p2pbw_values(m, r, o->sm_copy, bad), bad);
        psc_json_set(all, m->key, x, bad);
    }
    *bad |= !all;
    return all;
}

typedef struct {
    json_t *list;
    int *bad;
} psc__p2pbw_fail_json_t;

static void psc__p2pbw_fail_obj(void *user, const char *test, int src, int dst, const char *reason)
{
    psc__p2pbw_fail_json_t *u = user;
    json_t *x = json_object();

    psc_json_set(x, "test", psc_json_str(test), u->bad);
    psc_json_set(x, "src", json_integer(src), u->bad);
    psc_json_set(x, "dst", json_integer(dst), u->bad);
    psc_json_set(x, "reason", psc_json_str(reason), u->bad);
    psc_json_push(u->list, x, u->bad);
}

/* Each failed case (its cells are null): test, source and destination GPUs, why. */
static json_t *psc__p2pbw_failures(const psc_p2pbw_t *r, int *bad)
{
    psc__p2pbw_fail_json_t u = {json_array(), bad};

    if (u.list)
        psc__p2pbw_each_failure(r, psc__p2pbw_fail_obj, &u);
    *bad |= !u.list;
    return u.list;
}

json_t *psc_json_p2pbw(const psc_p2pbw_t *r, const psc_p2pbw_render_opts_t *o)
{
    json_t *doc = json_object(), *opts = json_object(), *conn = json_array();
    int bad = !doc || !opts || !conn;

    psc_json_set(opts, "p2p_read", json_boolean(o->p2p_read), &bad);
    psc_json_set(opts, "sm_copy", json_boolean(o->sm_copy), &bad);
    psc_json_set(opts, "num_elems", json_integer(o->num_elems), &bad);
    psc_json_set(opts, "bytes_per_copy", json_integer((json_int_t)o->num_elems * 4), &bad);
    for (int i = 0; conn && i < r->ndev; i++) {
        json_t *row = json_array();

        for (int j = 0; row && j < r->ndev; j++)
            psc_json_push(row, json_integer(r->can_access[i][j] != 0), &bad);
        psc_json_push(conn, row, &bad);
    }
    psc_json_set(doc, "sample", psc_json_str("p2pBandwidthLatencyTest"), &bad);
    psc_json_set(doc, "options", opts, &bad);
    psc_json_set(doc, "p2p_connectivity", conn, &bad);
    psc_json_set(doc, "matrices", psc__p2pbw_matrices(r, o, &bad), &bad);
    psc_json_set(doc, "failed", psc__p2pbw_failures(r, &bad), &bad);
    return psc_json_done(doc, bad);
}
