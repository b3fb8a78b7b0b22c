/* a/a.h: the other half of the circle (b/b.h includes this, a/a.c includes b/b.h). */
