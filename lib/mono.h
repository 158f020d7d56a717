/*
 * mono.h - the monotonic clock, read in one place: mono_now_ns(),
 * mono_now_ms() and mono_now_s() are CLOCK_MONOTONIC in nanoseconds, in
 * milliseconds and in (fractional) seconds.
 *
 * Every timeout, lease, timer and duration in atoll is measured on this
 * clock (wall-clock jumps must not expire a lease or fire a timer early);
 * wall time (CLOCK_REALTIME) is for what is shown to a user or stored.
 * Header-only so that a program may use it without linking lib/ (the
 * timed waits' absolute deadlines are in deadline.h).
 */
#ifndef ATOLL_MONO_H
#define ATOLL_MONO_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mono_now_ns(void)
{
	struct timespec mono_ts;	/* a name no includer's global shadows */

	clock_gettime(CLOCK_MONOTONIC, &mono_ts);
	return (uint64_t)mono_ts.tv_sec * 1000000000ull + (uint64_t)mono_ts.tv_nsec;
}

static inline uint64_t mono_now_ms(void)
{
	return mono_now_ns() / 1000000ull;
}

static inline double mono_now_s(void)
{
	return (double)mono_now_ns() / 1e9;
}

#endif
