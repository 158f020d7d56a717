/*
 * testutil.c - the checks, clock and waiting of testutil.h, shared by the
 * C test programs so that each reports a failure the same way and none
 * carries its own copy.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mono.h"
#include "testutil.h"

int tu_failures;

void tu_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s:%d: %s: ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	tu_failures++;
}

void tu_ok(const char *name, bool ok, const char *file, int line)
{
	if (!ok) {
		fprintf(stderr, "FAIL %s (%s:%d)\n", name, file, line);
		exit(1);
	}
	printf("ok %s\n", name);
}

void tu_die(const char *fmt, ...)
{
	va_list ap;

	fputs("FAIL: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

uint64_t tu_now_ns(void)
{
	return mono_now_ns();
}

uint64_t tu_now_ms(void)
{
	return tu_now_ns() / 1000000u;
}

double tu_now_ms_f(void)
{
	return tu_now_ns() / 1e6;
}

double tu_now_s(void)
{
	return tu_now_ns() / 1e9;
}

void tu_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

bool tu_wait_for(bool (*pred)(void *arg), void *arg, unsigned timeout_ms, unsigned every_ms)
{
	uint64_t end = tu_now_ms() + timeout_ms;

	for (;;) {
		if (pred(arg))
			return true;
		if (tu_now_ms() >= end)
			return false;
		tu_sleep_ms(every_ms);
	}
}
