/*
 * testutil.h - what the C test programs (not the Criterion ones) share:
 * checks that report where they failed and count the failures, a fatal
 * failure, the monotonic clock, sleeping, and waiting for a condition
 * (a monitor command's answer, a map, a process) with a deadline.
 *
 * Built as the static library tests/common/libtestutil.a (tu_dep in
 * tests/meson.build).  Each test says what a failed check does with a
 * one-line CHECK of its own, e.g.
 *   #define CHECK(cond, ...) TU_CHECK(cond, goto out, __VA_ARGS__)
 * and exits non-zero when tu_failures is not 0.  Single-threaded use,
 * except tu_now_* and tu_sleep_ms.
 */
#ifndef ATOLL_TESTS_TESTUTIL_H
#define ATOLL_TESTS_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>

/* Checks failed so far (TU_CHECK). */
extern int tu_failures;

/* Reports "FAIL FILE:LINE: COND: MESSAGE" on stderr and counts it. */
void tu_fail(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* When cond is false: report it (the message is printf-style) and do
 * onfail (a statement: (void)0 to go on, goto out, return -1, ...). */
#define TU_CHECK(cond, onfail, ...) do {				\
	if (!(cond)) {							\
		tu_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);	\
		onfail;							\
	}								\
} while (0)

/* A named check that stops the test at the first failure: "ok NAME" on
 * stdout when cond holds, else "FAIL NAME (FILE:LINE)" and exit 1. */
#define TU_OK(name, cond) tu_ok((name), (cond) != 0, __FILE__, __LINE__)
void tu_ok(const char *name, bool ok, const char *file, int line);

/* "FAIL: MESSAGE" on stderr, exit 1: the test cannot go on. */
void tu_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* CLOCK_MONOTONIC. */
uint64_t tu_now_ns(void);
uint64_t tu_now_ms(void);
double tu_now_ms_f(void);	/* with the fraction, for timings */
double tu_now_s(void);
void tu_sleep_ms(unsigned ms);

/* Polls cond (an expression) every millisecond for up to ms; true once
 * it holds.  Header-only: the Criterion tests use it too. */
#define TU_WAIT_FOR(cond, ms) ({					\
	bool ok_ = false;						\
	for (int i_ = 0; i_ < (ms); i_++) {				\
		if (cond) {						\
			ok_ = true;					\
			break;						\
		}							\
		usleep(1000);						\
	}								\
	ok_ || (cond);							\
})

/* Calls pred(arg) until it returns true, every every_ms, for at most
 * timeout_ms: whether it did (pred is called at least once). */
bool tu_wait_for(bool (*pred)(void *arg), void *arg, unsigned timeout_ms, unsigned every_ms);

#endif
