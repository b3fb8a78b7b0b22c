/*
 * nvbandwidth 0.8's 35 single-node test cases, in its order, each with the
 * p2pscope bandwidth test that measures it and where each cell of
 * nvbandwidth's matrices comes from (nvbw_map.h). The one place that maps
 * nvbandwidth's names: `p2pscope nvbandwidth`, `bw -t` and p2pscope(1)'s
 * table follow it. Titles are nvbandwidth's own lines, verbatim (its
 * testcases_ce.cpp and testcases_sm.cpp at v0.8).
 */
#include <stdlib.h>
#include <string.h>

#include "report/nvbw_map.h"

#define H PSC_NVBW_HOST
#define R PSC_NVBW_ROW
#define C PSC_NVBW_COL
#define A PSC_NVBW_ALL
#define BW " bandwidth (GB/s)"
/* One matrix: its title, and the cell's transfer from -> to. */
#define M1(title, f, t) 1, {{"", title, f, t, 0}}
/* GPU <-> GPU both ways: the copy into the row GPU, the copy out of it, their sum (nvbandwidth's 1, 2, Total). */
#define M3(e, one, two)                                                                                             \
    3, {{"_" #one "1", "memcpy " e " GPU(row) <-> GPU(column) " #two "1" BW, C, R, 0},                               \
        {"_" #one "2", "memcpy " e " GPU(row) <-> GPU(column) " #two "2" BW, R, C, 0},                               \
        {"_total", "memcpy " e " GPU(row) <-> GPU(column) Total" BW, C, R, 1}}
#define FIRST "the median of that GPU's own transfer in a case of every GPU at once"
#define BIDIR_NOTE "the median of that direction's transfer while the other direction runs"
#define AGG "the case's aggregate: all bytes over the longest transfer's time"

static const psc_nvbw_test_t psc__nvbw[] = {
    {"host_to_device_memcpy_ce", "host_to_gpu_ce", "", M1("memcpy CE CPU(row) -> GPU(column)" BW, H, C)},
    {"device_to_host_memcpy_ce", "gpu_to_host_ce", "", M1("memcpy CE CPU(row) <- GPU(column)" BW, C, H)},
    {"host_to_device_bidirectional_memcpy_ce", "host_gpu_bidir_ce", BIDIR_NOTE,
     M1("memcpy CE CPU(row) <-> GPU(column)" BW, H, C)},
    {"device_to_host_bidirectional_memcpy_ce", "host_gpu_bidir_ce", BIDIR_NOTE,
     M1("memcpy CE CPU(row) <-> GPU(column)" BW, C, H)},
    {"device_to_device_memcpy_read_ce", "gpu_to_gpu_read_ce", "row: the reading GPU",
     M1("memcpy CE GPU(row) -> GPU(column)" BW, C, R)},
    {"device_to_device_memcpy_write_ce", "gpu_to_gpu_write_ce", "row: the writing GPU",
     M1("memcpy CE GPU(row) <- GPU(column)" BW, R, C)},
    {"device_to_device_bidirectional_memcpy_read_ce", "gpu_to_gpu_bidir_read_ce", BIDIR_NOTE, M3("CE", read, Read)},
    {"device_to_device_bidirectional_memcpy_write_ce", "gpu_to_gpu_bidir_write_ce", BIDIR_NOTE, M3("CE", write, Write)},
    {"all_to_host_memcpy_ce", "all_to_host_ce", FIRST, M1("memcpy CE CPU(row) <- GPU(column)" BW, C, H)},
    {"all_to_host_bidirectional_memcpy_ce", "all_host_bidir_ce", FIRST,
     M1("memcpy CE CPU(row) <-> GPU(column)" BW, C, H)},
    {"host_to_all_memcpy_ce", "host_to_all_ce", FIRST, M1("memcpy CE CPU(row) -> GPU(column)" BW, H, C)},
    {"host_to_all_bidirectional_memcpy_ce", "all_host_bidir_ce", FIRST,
     M1("memcpy CE CPU(row) <-> GPU(column)" BW, H, C)},
    {"all_to_one_write_ce", "all_to_one_write_ce", AGG, M1("memcpy CE GPU(row) <- GPU(column)" BW, A, C)},
    {"all_to_one_read_ce", "all_to_one_read_ce", AGG, M1("memcpy CE GPU(row) -> GPU(column)" BW, A, C)},
    {"one_to_all_write_ce", "one_to_all_write_ce", AGG, M1("memcpy CE GPU(row) -> GPU(column)" BW, C, A)},
    {"one_to_all_read_ce", "one_to_all_read_ce", AGG, M1("memcpy CE GPU(row) <- GPU(column)" BW, C, A)},
    {"host_to_device_memcpy_sm", "host_to_gpu_sm", "", M1("memcpy SM CPU(row) -> GPU(column)" BW, H, C)},
    {"device_to_host_memcpy_sm", "gpu_to_host_sm", "", M1("memcpy SM CPU(row) <- GPU(column)" BW, C, H)},
    {"host_to_device_bidirectional_memcpy_sm", "host_gpu_bidir_sm", BIDIR_NOTE,
     M1("memcpy SM CPU(row) <-> GPU(column)" BW, H, C)},
    {"device_to_host_bidirectional_memcpy_sm", "host_gpu_bidir_sm", BIDIR_NOTE,
     M1("memcpy SM CPU(row) <-> GPU(column)" BW, C, H)},
    {"device_to_device_memcpy_read_sm", "gpu_to_gpu_read_sm", "row: the reading GPU",
     M1("memcpy SM GPU(row) -> GPU(column)" BW, C, R)},
    {"device_to_device_memcpy_write_sm", "gpu_to_gpu_write_sm", "row: the writing GPU",
     M1("memcpy SM GPU(row) <- GPU(column)" BW, R, C)},
    {"device_to_device_bidirectional_memcpy_read_sm", "gpu_to_gpu_bidir_read_sm", BIDIR_NOTE, M3("SM", read, Read)},
    {"device_to_device_bidirectional_memcpy_write_sm", "gpu_to_gpu_bidir_write_sm", BIDIR_NOTE, M3("SM", write, Write)},
    {"all_to_host_memcpy_sm", "all_to_host_sm", FIRST, M1("memcpy SM CPU(row) <- GPU(column)" BW, C, H)},
    {"all_to_host_bidirectional_memcpy_sm", "all_host_bidir_sm", FIRST,
     M1("memcpy SM CPU(row) <-> GPU(column)" BW, C, H)},
    {"host_to_all_memcpy_sm", "host_to_all_sm", FIRST, M1("memcpy SM CPU(row) -> GPU(column)" BW, H, C)},
    {"host_to_all_bidirectional_memcpy_sm", "all_host_bidir_sm", FIRST,
     M1("memcpy SM CPU(row) <-> GPU(column)" BW, H, C)},
    {"all_to_one_write_sm", "all_to_one_write_sm", AGG, M1("memcpy SM GPU(row) <- GPU(column)" BW, A, C)},
    {"all_to_one_read_sm", "all_to_one_read_sm", AGG, M1("memcpy SM GPU(row) -> GPU(column)" BW, A, C)},
    {"one_to_all_write_sm", "one_to_all_write_sm", AGG, M1("memcpy SM GPU(row) -> GPU(column)" BW, C, A)},
    {"one_to_all_read_sm", "one_to_all_read_sm", AGG, M1("memcpy SM GPU(row) <- GPU(column)" BW, C, A)},
    {"host_device_latency_sm", NULL, "a latency test: p2pscope lat -t host_to_gpu_chase measures a host pointer chase",
     M1("memory latency SM CPU(row) <-> GPU(column) (ns)", H, C)},
    {"device_to_device_latency_sm", NULL,
     "a latency test: p2pscope lat -t gpu_to_gpu_chase_sequential measures it nvbandwidth's way",
     M1("Device to Device Latency SM GPU(row) <-> GPU(column) (ns)", C, R)},
    {"device_local_copy", "gpu_local_ce", "", M1("memcpy local GPU(column)" BW, C, C)},
};

int psc_nvbw_test_count(void)
{
    return (int)(sizeof(psc__nvbw) / sizeof(psc__nvbw[0]));
}

const psc_nvbw_test_t *psc_nvbw_test_at(int index)
{
    return index >= 0 && index < psc_nvbw_test_count() ? &psc__nvbw[index] : NULL;
}

int psc_nvbw_test_find(const char *name_or_index)
{
    char *end;
    long i = strtol(name_or_index, &end, 10);

    /* nvbandwidth's rule: a word that is all number is an index, anything else a name */
    if (*name_or_index && !*end)
        return i >= 0 && i < psc_nvbw_test_count() ? (int)i : -1;
    for (int k = 0; k < psc_nvbw_test_count(); k++)
        if (strcmp(psc__nvbw[k].name, name_or_index) == 0)
            return k;
    return -1;
}

int psc_nvbw_bw_test(const char *name, const char **note)
{
    psc_bw_test_t t;

    for (int k = 0; k < psc_nvbw_test_count(); k++) {
        if (strcmp(psc__nvbw[k].name, name) != 0)
            continue;
        if (!psc__nvbw[k].test || psc_bw_test_from_name(psc__nvbw[k].test, &t) != PSC_OK) {
            if (note)
                *note = psc__nvbw[k].note;
            return -2;
        }
        return t;
    }
    return -1;
}

int psc_nvbw_matrix_rows(const psc_nvbw_matrix_t *m, int ngpus)
{
    return m->from == PSC_NVBW_ROW || m->to == PSC_NVBW_ROW ? ngpus : 1;
}
