/*
 * atoll_assert.c - the failure path of ATOLL_ASSERT.
 *
 * A failed invariant is reported in the log (where an operator looks
 * first) and on stderr (which survives when the log is off or is a file
 * nobody reads, and which systemd captures), then the process aborts so
 * that a core dump holds the state.  The report is formatted into a stack
 * buffer and written with write(2): the heap or stdio may be what broke.
 */
#include "atoll_assert.h"
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void atoll__assert_fail(const char *expr, const char *file, int line,
			const char *func, const char *fmt, ...)
{
	char what[512];
	char report[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);

	log_msg(LOG_LVL_ERROR, "assert", "%s:%d: %s: assertion '%s' failed: %s",
		file, line, func, expr, what);

	if (!log_to_stderr()) {
		n = snprintf(report, sizeof(report),
			     "atoll: %s:%d: %s: assertion '%s' failed: %s\n",
			     file, line, func, expr, what);
		if (n < 0)
			n = 0;
		if ((size_t)n >= sizeof(report)) {
			n = sizeof(report) - 1;
			report[n - 1] = '\n';
		}
		if (write(STDERR_FILENO, report, (size_t)n) < 0) {
			/* Nothing more can be done: abort regardless. */
		}
	}
	abort();
}
