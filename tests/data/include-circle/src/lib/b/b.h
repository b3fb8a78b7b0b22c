/* Part of a planted include circle for scripts/check-includes.sh. */
#include "a/a.h"
