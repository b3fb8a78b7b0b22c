/* The test hooks' defaults (test_hooks.h): no fault injected, nothing corrupted. */
#include <string.h>

#include "test_hooks.h"

void psc__test_hooks_default(psc_test_hooks_t *h)
{
    memset(h, 0, sizeof(*h));
    h->corrupt_offset = -1;
    h->fault = PSC_FAULT_NONE;
}
