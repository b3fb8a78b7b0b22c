/* Fuzz the hwloc XML recording loader (topo --topology FILE.xml) and every reader of what it loads. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = psc_fuzz_write_file("topology.xml", data, size);

    if (path)
        psc_fuzz_load_and_use(path);
    return 0;
}
