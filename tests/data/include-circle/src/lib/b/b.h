/* b/b.h: the other half of the planted include circle. */
#ifndef FIXTURE_B_H
#define FIXTURE_B_H
#include "a/a.h"
int psc_fixture_b(int n);
#endif
