/* a/a.h: one half of a planted circle for scripts/check-includes.sh (b/b.h includes this, a/a.c includes b/b.h). */
#ifndef FIXTURE_A_H
#define FIXTURE_A_H
#include "b/b.h"
int psc_fixture_a(int n);
#endif
