/*
 * version.c - the version of the library actually loaded.
 *
 * ATOLL_VERSION_STRING comes from meson (the project version) while the
 * numeric macros live in the public header; the test suite checks that
 * the two agree, so a release bump cannot update only one of them.
 */
#include "atoll/atoll.h"

#ifndef ATOLL_VERSION_STRING
#error "ATOLL_VERSION_STRING must be defined by the build (lib/meson.build)"
#endif

int atoll_version(const char **str)
{
	if (str)
		*str = ATOLL_VERSION_STRING;
	return ATOLL_VERSION_NUMBER;
}
