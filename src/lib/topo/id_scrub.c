/* Identifiers out of hwloc XML (see id_scrub.h). */
#define _GNU_SOURCE
#include "topo/id_scrub.h"

#include <stdlib.h>
#include <string.h>

int psc__hwloc_info_identifies(const char *name, unsigned long len)
{
    static const char *const exact[] = {
        "HostName",           /* the root object's */
        "DMIProductSerial", "DMIProductUUID", "DMIBoardSerial", "DMIChassisSerial", "DMIBoardAssetTag",
        "DMIChassisAssetTag",
        "NVIDIAUUID",         /* an NVML OS device's GPU UUID */
        "Address",            /* a network OS device's MAC address */
        "NodeGUID", "SysImageGUID",
        "LinuxCgroup",        /* a container's id */
    };

    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
        if (len == strlen(exact[i]) && strncmp(name, exact[i], len) == 0)
            return 1;
    /* InfiniBand ports' addresses: Port1GID0, Port1LID, Port1LMC */
    return len > 4 && strncmp(name, "Port", 4) == 0 &&
           (memmem(name, len, "GID", 3) || memmem(name, len, "LID", 3) || memmem(name, len, "LMC", 3));
}

/*
 * The info element at p ("<info name=\"N\" value=\"V\"/>", as hwloc writes it, the value's quotes escaped):
 * 1 when N identifies the machine, with *end just past the element; 0 otherwise (kept as it is).
 */
static int psc__identifying_info(const char *p, const char **end)
{
    const char *name = p + 6, *q, *value;

    while (*name == ' ')
        name++;
    if (strncmp(name, "name=\"", 6) != 0 || !(q = strchr(name + 6, '"')))
        return 0;
    value = q + 1;
    while (*value == ' ')
        value++;
    if (strncmp(value, "value=\"", 7) != 0 || !(*end = strchr(value + 7, '"')))
        return 0;
    for (++*end; **end == ' '; ++*end)
        ;
    if (strncmp(*end, "/>", 2) != 0)
        return 0;
    *end += 2;
    return psc__hwloc_info_identifies(name + 6, (unsigned long)(q - name - 6));
}

char *psc__hwloc_xml_scrub(const char *xml)
{
    size_t n = strlen(xml), used = 0;
    char *out = malloc(n + 1);
    const char *p = xml;

    if (!out)
        return NULL;
    for (;;) {
        const char *tag = strstr(p, "<info "), *end = NULL, *from;

        if (!tag || !psc__identifying_info(tag, &end)) {
            const char *upto = tag ? tag + 6 : xml + n;

            memcpy(out + used, p, (size_t)(upto - p));
            used += (size_t)(upto - p);
            if (!tag)
                break;
            p = upto;
            continue;
        }
        /* the element goes, with the indentation before it and the line break after it */
        from = tag;
        while (from > p && (from[-1] == ' ' || from[-1] == '\t'))
            from--;
        memcpy(out + used, p, (size_t)(from - p));
        used += (size_t)(from - p);
        p = end;
        if (*p == '\n')
            p++;
    }
    out[used] = '\0';
    return out;
}
