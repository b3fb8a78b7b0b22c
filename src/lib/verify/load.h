/* Background traffic for verify: what the verify engine calls while it works. */
#ifndef PSC_VERIFY_LOAD_H
#define PSC_VERIFY_LOAD_H

#include "pattern/check.h"

/* Queue another batch of copies on every path whose last batch is done. NULL: nothing. */
psc_status_t psc__load_pump(psc_load_t *l);

/* Wait for every path, check what its copies wrote, and poison the destinations again. NULL: nothing. */
psc_status_t psc__load_settle(psc_load_t *l);

#endif
