/*
 * crash-proto.h - what crash-child tells the crash test through its pipe,
 * and the store geometry both use.
 */
#ifndef ATOLL_CRASH_PROTO_H
#define ATOLL_CRASH_PROTO_H

#include <stdint.h>

#define CRASH_BLOCK_SIZE	(256ull << 20)	/* sparse: only used blocks cost */
#define CRASH_KV_MAX		(64ull << 20)

enum crash_msg_kind {
	CRASH_MSG_READY = 1,	/* store opened; n = first txn it will queue */
	CRASH_MSG_DONE = 2,	/* txn n acknowledged (durable) */
	CRASH_MSG_FAILED = 3,	/* txn n (or the open) failed with err */
	CRASH_MSG_ORDER = 4,	/* txn n completed out of queue order */
	CRASH_MSG_CLOSED = 5,	/* ran --max txns and closed the store */
};

struct crash_msg {
	uint32_t kind;
	int32_t err;
	uint64_t n;
};

#endif
