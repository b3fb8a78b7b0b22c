#include "b/b.h"

int psc_fixture_b(int n)
{
    return n > 0 ? psc_fixture_a(n - 1) : 1;
}
