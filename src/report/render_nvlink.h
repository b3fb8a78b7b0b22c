/* nvlink: each GPU's links as text (with the watched traffic) and JSON. */
#ifndef PSC_REPORT_RENDER_NVLINK_H
#define PSC_REPORT_RENDER_NVLINK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "p2pscope.h"

/*
 * GPU gpu's link table (state, version, speed, remote end, capabilities), or
 * a line saying it has no NVLink. traffic (may be NULL) adds tx and rx in MB:
 * "?" where not known, empty for a link the counters do not have.
 */
void psc_render_nvlink(FILE *f, const psc_facts_t *facts, int gpu, const psc_nvlink_gpu_traffic_t *traffic);

/* nvlink --watch: the payload the cases moved, then every GPU's links with their traffic. */
void psc_render_nvlink_watch(FILE *f, const psc_facts_t *facts, const psc_nvlink_traffic_t *traffic, size_t cases,
                             uint64_t moved_bytes);

/* {"tool", "command": "nvlink", "source", "gpus": [{index, name, pci_bus_id, nvlinks}], "exit_code"}; NULL out of memory. */
json_t *psc_json_nvlink(const psc_facts_t *facts, int exit_code);

#endif
