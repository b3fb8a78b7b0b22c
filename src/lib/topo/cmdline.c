/* The kernel command line's P2P parameters (see cmdline.h). */
#include "topo/cmdline.h"

#include <string.h>

/* A parameter is kept when its name (up to '=') is one of these, or starts with one ending in '.' or '_'. */
static const char *const psc__p2p_params[] = {
    "iommu",             /* iommu=pt|off|force..., and iommu.passthrough=, iommu.strict= below */
    "iommu.",
    "intel_iommu",       /* intel_iommu=on|off|sm_on... */
    "amd_iommu",         /* amd_iommu=off|pgtbl_v2..., amd_iommu_dump, amd_iommu_intr= */
    "amd_iommu_",
    "pcie_acs_override", /* the ACS override patch */
    "pci",               /* pci=noats|realloc|nommconf|... */
    "pcie_aspm",
    "pcie_ports",
    "pci_p2pdma",
    "nvidia.",           /* the NVIDIA module's parameters (NVreg_...) */
    "nvidia_",
    "vfio_iommu_type1.", /* GPU passthrough */
    "vfio-pci.",
    "vfio_pci.",
    "swiotlb",           /* bounce buffers under DMA */
};

/* Whether the token tok (n bytes) is a parameter to keep. */
static int psc__keep(const char *tok, size_t n)
{
    size_t name = 0;

    while (name < n && tok[name] != '=')
        name++;
    for (size_t i = 0; i < sizeof(psc__p2p_params) / sizeof(psc__p2p_params[0]); i++) {
        const char *p = psc__p2p_params[i];
        size_t k = strlen(p);
        int prefix = p[k - 1] == '.' || p[k - 1] == '_';

        if (prefix ? name > k && strncmp(tok, p, k) == 0 : name == k && strncmp(tok, p, k) == 0)
            return 1;
    }
    return 0;
}

void psc__cmdline_p2p(const char *line, char *out, size_t len)
{
    size_t used = 0;

    if (!len)
        return;
    memset(out, 0, len); /* the whole field: facts compare byte for byte */
    while (line && *line) {
        size_t n = 0;
        int quoted = 0;

        while (*line == ' ' || *line == '\t' || *line == '\n')
            line++;
        /* a token ends at white space outside double quotes (the kernel's own rule: param="a b") */
        while (line[n] && (quoted || (line[n] != ' ' && line[n] != '\t' && line[n] != '\n'))) {
            if (line[n] == '"')
                quoted = !quoted;
            n++;
        }
        if (n && psc__keep(line, n) && used + (used > 0) + n < len) {
            if (used)
                out[used++] = ' ';
            memcpy(out + used, line, n);
            used += n;
            out[used] = '\0';
        }
        line += n;
    }
}
