/* a calls b and b calls a: the planted call circle. */
#include "a/a.h"

int psc_fixture_a(int n)
{
    return n > 0 ? psc_fixture_b(n - 1) : 0;
}
