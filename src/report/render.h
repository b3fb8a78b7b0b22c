/* Text rendering of inventory and bandwidth results. */
#ifndef PSC_REPORT_RENDER_H
#define PSC_REPORT_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include "p2pscope/bench.h"

/* "gpu3", "host" or "all" (PSC_ALL) into buf. */
const char *psc_endpoint_name(int endpoint, char *buf, size_t len);
/* What to say after "NVML ": "loaded", or why not ("not loaded: libnvidia-ml.so.1: cannot open ..."). */
const char *psc_nvml_state(const psc_system_info_t *sys);

/* The GPUs' table alone: a field not known (memory, SMs and compute capability 0, copy engines -1: a recording)
 * is "?". */
void psc_render_devices_table(FILE *f, const psc_device_info_t *devs, int ndev);
void psc_render_devices(FILE *f, const psc_system_info_t *sys, const psc_device_info_t *devs, int ndev);

/* A case in one line: "gpu0 -> gpu1", "host <-> gpu0", "all -> gpu1", "ring", ... */
const char *psc_case_label(const psc_bw_case_t *c, char *buf, size_t len);

/* A run's last line, "wall time: N s" and note (may be ""), after a blank line. */
void psc_render_wall_time(FILE *f, double wall_s, const char *note);

/* A test's heading, "name: title"; with no result (n 0) the line that it was waived for want of GPUs, and 0. */
int psc_render_test_head(FILE *f, const char *name, const char *title, size_t n, int min_gpus);

/*
 * One test's results as a table with units in the title: a src(row) ->
 * dst(column) matrix for single GPU -> GPU transfers, a row of GPUs for host
 * and local copies, and a row per transfer plus the total for concurrent
 * cases. Waived and failed cells point to notes under the table.
 */
void psc_render_bw(FILE *f, psc_bw_test_t test, const psc_bw_result_t *res, size_t n, const int *devs, int ndev);

/* A size sweep of one test: a row per case, a column per size (res holds every size's results). */
void psc_render_sweep(FILE *f, psc_bw_test_t test, const psc_bw_result_t *res, size_t n);

/* GPU -> GPU with P2P on and off, with the speed-up; nothing when either test is missing. */
void psc_render_p2p_compare(FILE *f, const psc_bw_result_t *res, size_t n);

/* Host <-> GPU by host memory kind side by side (pinned, pageable, write-combined, registered), copy engine. */
void psc_render_hostmem_compare(FILE *f, const psc_bw_result_t *res, size_t n);

/* Per path, where the SM kernel beats the copy engine in a sweep (tests named *_ce with an *_sm twin). */
void psc_render_crossover(FILE *f, const psc_bw_result_t *res, size_t n);

/* 4096 -> "4K", 1 GiB -> "1G", 4099 -> "4099" (powers of 1024, as bw's sweeps name sizes). */
const char *psc_render_size_text(uint64_t s, char *buf, size_t len);

/* A bandwidth test's engine as the JSON and CSV name it: "copy_engine", "sm", "cpu_gpumap". */
const char *psc_render_engine_key(psc_engine_t engine);

#endif
