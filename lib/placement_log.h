/*
 * placement_log.h - the fixed-point log of straw2 (placement.c): 2^44 *
 * log2(x) by exact repeated squaring in 64-bit integers, the same bits on
 * every machine.  It is part of the placement format: changing a bit
 * moves PGs.
 *
 * placement_log2_compute is run at build time by placement_log_gen.c,
 * which writes placement_log_tab (so no process pays ~15 ms to fill it
 * before its first placement); the unit test compares the two.
 */
#ifndef ATOLL_PLACEMENT_LOG_H
#define ATOLL_PLACEMENT_LOG_H

#include <stdint.h>

#define PLACEMENT_LOG_FRAC	44		/* fraction bits of the log */

/* placement_log_tab[u] = 2^44 * log2(u + 1), u = 0..65535. */
extern const uint64_t placement_log_tab[65536];

/* (a * b) >> 62 for a, b < 2^63, from 32-bit halves (no __int128, so it
 * is the same code on 32-bit hosts). */
static inline uint64_t placement_mul_shr62(uint64_t a, uint64_t b)
{
	uint64_t al = a & 0xffffffffu, ah = a >> 32;
	uint64_t bl = b & 0xffffffffu, bh = b >> 32;
	uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
	uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
	uint64_t lo = (mid << 32) | (ll & 0xffffffffu);
	uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);

	return (hi << 2) | (lo >> 62);
}

/* 2^44 * log2(x), x >= 1: the integer part is the top bit's index; each
 * fraction bit comes from squaring the mantissa (in [1, 2) as Q2.62):
 * a square of 2 or more means the bit is 1, and the mantissa is halved. */
static inline uint64_t placement_log2_compute(uint32_t x)
{
	unsigned int k = 31 - (unsigned int)__builtin_clz(x);
	uint64_t m = (uint64_t)x << (62 - k);
	uint64_t frac = 0;
	int i;

	for (i = PLACEMENT_LOG_FRAC - 1; i >= 0; i--) {
		m = placement_mul_shr62(m, m);
		if (m >> 63) {		/* m >= 2.0 */
			m >>= 1;
			frac |= 1ull << i;
		}
	}
	return ((uint64_t)k << PLACEMENT_LOG_FRAC) | frac;
}

#endif
