/*
 * deadline.h - the absolute time a timed wait takes: "now on clock clk,
 * plus ns nanoseconds", normalized (tv_nsec below one second).
 *
 * pthread_cond_timedwait uses the condition's clock (CLOCK_REALTIME
 * unless pthread_condattr_setclock said otherwise), sem_timedwait always
 * CLOCK_REALTIME: the caller names the clock its wait uses.
 */
#ifndef ATOLL_DEADLINE_H
#define ATOLL_DEADLINE_H

#include <stdint.h>
#include <time.h>

static inline struct timespec deadline_ns(clockid_t clk, uint64_t ns)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	uint64_t sum = (uint64_t)ts.tv_nsec + ns % 1000000000ull;
	ts.tv_sec += (time_t)(ns / 1000000000ull + sum / 1000000000ull);
	ts.tv_nsec = (long)(sum % 1000000000ull);
	return ts;
}

static inline struct timespec deadline_ms(clockid_t clk, uint64_t ms)
{
	return deadline_ns(clk, ms * 1000000ull);
}

#endif
