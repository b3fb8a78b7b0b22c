/* The run-time version query: the library's version, which may differ from the header's the caller built with. */
#include "p2pscope.h"

const char *psc_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = PSC_VERSION_MAJOR;
    if (minor)
        *minor = PSC_VERSION_MINOR;
    if (patch)
        *patch = PSC_VERSION_PATCH;
    return PSC_VERSION_STRING;
}
