/*
 * The text names of paths and links, below both the facts (facts.c) and
 * their JSON form (facts_json.c), which both print them.
 */
#include <stdio.h>

#include "p2pscope.h"

const char *psc_path_label(psc_path_t path, int nvlinks, char *buf, size_t len)
{
    static const char *const names[] = {"?", "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS"};

    if (path == PSC_PATH_NVLINK)
        snprintf(buf, len, "NV%d", nvlinks);
    else
        snprintf(buf, len, "%s", (unsigned)path < sizeof(names) / sizeof(names[0]) ? names[path] : "?");
    return buf;
}

const char *psc_pcie_label(int gen, int width, char *buf, size_t len)
{
    char g[16] = "?", w[16] = "?";

    if (gen > 0)
        snprintf(g, sizeof(g), "%d", gen);
    if (width > 0)
        snprintf(w, sizeof(w), "%d", width);
    snprintf(buf, len, "Gen%s x%s", g, w);
    return buf;
}
