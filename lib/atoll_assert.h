/*
 * atoll_assert.h - checks that stay in production builds.
 *
 * ATOLL_ASSERT(cond, fmt, ...) logs what failed, where and the caller's
 * context (which object, which PG) to the log and to stderr, then aborts.
 * Use it for invariants of on-disk and on-wire data and of internal state;
 * never for input a peer or user can send (that gets an error return).
 */
#ifndef ATOLL_ASSERT_H
#define ATOLL_ASSERT_H

void atoll__assert_fail(const char *expr, const char *file, int line,
			const char *func, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 5, 6)));

#define ATOLL_ASSERT(cond, ...) do { \
	if (__builtin_expect(!(cond), 0)) \
		atoll__assert_fail(#cond, __FILE__, __LINE__, __func__, __VA_ARGS__); \
} while (0)

#endif
