/*
 * fault.h - the one switch for test-only fault injection.
 *
 * Tests make a daemon misbehave on purpose (exit after N journal commits,
 * fail the Nth write, hold changes back, drop a reply) through a single
 * environment variable:
 *
 *   ATOLL_FAULTS="mds_crash_after_commits=3,mds_crash_op=rename"
 *
 * a comma-separated list of name=value pairs (a bare name means "1").
 * Every fault point asks fault_get()/fault_get_int() for its name; the
 * names in use are listed in doc/testing.md "Fault injection".  Each
 * process reads the variable once, at its first query.
 *
 * Production builds can compile every fault point out: with the meson
 * option -Dfault_injection=false, ATOLL_FAULT_INJECTION is not defined,
 * fault_get() is a constant NULL and the compiler removes the fault code.
 * Tests that need faults skip (exit 77) when fault_enabled() is false.
 */
#ifndef ATOLL_FAULT_H
#define ATOLL_FAULT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef ATOLL_FAULT_INJECTION
/* The value of fault name, or NULL when ATOLL_FAULTS does not name it.
 * The string stays valid for the life of the process. */
const char *fault_get(const char *name);
static inline bool fault_enabled(void) { return true; }
#else
static inline const char *fault_get(const char *name) { (void)name; return (const char *)0; }
static inline bool fault_enabled(void) { return false; }
#endif

/* fault_get() read as a whole number: def when the fault is not named or
 * its value is not a number. */
static inline int64_t fault_get_int(const char *name, int64_t def)
{
	const char *v = fault_get(name);
	char *end;
	long long n;

	if (!v || !*v)
		return def;
	n = strtoll(v, &end, 10);
	return *end ? def : (int64_t)n;
}

#endif
