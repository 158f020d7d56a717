/*
 * msg_timer.h - the messenger's timers: a binary min-heap of deadlines.
 *
 * Nodes are embedded in their owner (a pending call, a connection, a
 * timer of msgr_timer()), so arming a timer allocates nothing and a
 * node knows its heap slot, which makes cancelling O(log n).  The heap is
 * not thread-safe: the messenger holds its timer lock around every call.
 * Equal deadlines fire in the order they were armed.
 */
#ifndef ATOLL_MSG_TIMER_H
#define ATOLL_MSG_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


struct tnode {
	uint64_t when;		/* CLOCK_MONOTONIC, ns */
	uint64_t seq;		/* arming order, breaks ties */
	size_t idx;		/* slot in the heap; TNODE_IDLE when not armed */
};

#define TNODE_IDLE	SIZE_MAX

struct theap {
	struct tnode **v;
	size_t n, cap;
	uint64_t seq;
};

void theap_init(struct theap *h);
void theap_free(struct theap *h);		/* nodes belong to their owners */
static inline void tnode_init(struct tnode *t) { t->idx = TNODE_IDLE; }
static inline bool tnode_armed(const struct tnode *t) { return t->idx != TNODE_IDLE; }
/* Arms t at when (re-arms it if armed).  -ENOMEM. */
int theap_add(struct theap *h, struct tnode *t, uint64_t when);
/* Disarms t; true if it was armed. */
bool theap_del(struct theap *h, struct tnode *t);
/* The earliest node, or NULL. */
static inline struct tnode *theap_top(const struct theap *h) { return h->n ? h->v[0] : NULL; }
/* Disarms and returns the earliest node if it is due at now, else NULL. */
struct tnode *theap_pop_due(struct theap *h, uint64_t now);

#endif
