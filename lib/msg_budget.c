/*
 * msg_budget.c - how much received data the messenger holds on a peer's
 * say-so.  Every received message is charged, from its header until the
 * upper layer frees it, to its connection and, for an accepted
 * connection, to the pool of its peer's class (clients, or cluster peers:
 * mon, osd, mds).  What does not fit pauses reading that connection alone
 * until enough is freed.
 *
 * A connection is charged a frame's whole cost at its header (bytes and
 * one message): that bounds what one peer can have in flight.  A pool is
 * charged what is allocated for its frames: the header at once, then
 * each step of the buffers as the bytes arrive (msg_rx.c grows them: at
 * most the larger of 4 MiB and four times what arrived).  So a header
 * announcing 64 MiB that never come holds a message slot, not 64 MiB of
 * the pool, and legitimate frames keep flowing past it.  Charging only
 * what arrived could deadlock: frames half received, each waiting for a
 * step that the others hold, nothing delivered that could be freed.  So
 * when the pool holds no delivered message (nothing a handler will free),
 * one frame at a time may grow past the limit and finish (the pool's
 * `over`); the memory held is then at most bytes_max plus one frame, and
 * a frame bigger than the whole pool goes through the same way.
 *
 * Waiting: connections paused in a frame (gwait) are woken before those
 * paused at a header (hwait), since finishing a frame frees memory
 * sooner; each list wakes one at a time in the order they came (the
 * woken one takes what it needs and wakes the next if room is left), so
 * that a big frame is not starved by small ones.
 *
 * Threads: admission and growth run on the loop; release on whatever
 * thread frees the message.  The pools are under budget->lock; a
 * connection's own counts are atomics whose update and the loop's pause
 * are each a store then a load (sequentially consistent), so that a
 * pause and a concurrent free never miss each other.
 */
#include <errno.h>
#include <stdlib.h>

#include "atoll_assert.h"
#include "log.h"
#include "mono.h"
#include "msgr_int.h"

#define FRAME_OVERHEAD	(MSG_HEADER_LEN + MSG_TRAILER_LEN)

struct msg_budget *msg_budget__new(const struct msgr_config *cfg)
{
	struct msg_budget *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	atomic_init(&b->ref, 1);
	pthread_mutex_init(&b->lock, NULL);
	b->pool[MSG_CLASS_CLIENT].bytes_max = cfg->client_bytes_max;
	b->pool[MSG_CLASS_CLIENT].frames_max = cfg->client_frames_max;
	b->pool[MSG_CLASS_PEER].bytes_max = cfg->peer_bytes_max;
	b->pool[MSG_CLASS_PEER].frames_max = cfg->peer_frames_max;
	return b;
}

void msg_budget__put(struct msg_budget *b)
{
	if (!b || atomic_fetch_sub(&b->ref, 1) != 1)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/* ---- pools (budget->lock held) ---- */

/* A new frame's header: a message slot and room in the pool. */
static bool pool_fits_header(const struct msg_pool *p)
{
	return p->frames < p->frames_max && (p->bytes == 0 || p->bytes < p->bytes_max);
}

/* inc more bytes for c's frame. */
static bool pool_fits_growth(struct msg_pool *p, const struct msg_conn *c, uint64_t inc)
{
	if (p->bytes + inc <= p->bytes_max || p->over == c)
		return true;
	return p->delivered == 0 && !p->over;
}

static void waitq_remove(struct msg_waitq *q, struct msg_conn *c)
{
	struct msg_conn **pp = &q->head, *prev = NULL;

	while (*pp && *pp != c) {
		prev = *pp;
		pp = &(*pp)->pw_next;
	}
	ATOLL_ASSERT(*pp == c, "connection '%s' not on its pool's wait list", c->addr);
	*pp = c->pw_next;
	if (q->tail == c)
		q->tail = prev;
	c->pw_next = NULL;
	c->pw_listed = false;
}

/* The connection whose turn it is, taken off its list (its reference
 * goes with it), or NULL: a frame waiting to grow first, then a header. */
static struct msg_conn *pool_pop(struct msg_pool *p)
{
	struct msg_conn *w = NULL;

	if (p->gwait.head && pool_fits_growth(p, p->gwait.head, 1))
		w = p->gwait.head;
	else if (p->hwait.head && pool_fits_header(p))
		w = p->hwait.head;
	if (!w)
		return NULL;
	waitq_remove(w->pw_grow ? &p->gwait : &p->hwait, w);
	w->pw_woken = true;
	return w;
}

/* c waits: at the head of its list when it had been woken (it keeps its
 * turn), else at the tail. */
static void pool_wait(struct msg_pool *p, struct msg_conn *c, bool grow)
{
	struct msg_waitq *q = grow ? &p->gwait : &p->hwait;

	if (c->pw_listed)
		return;
	msg_conn__hold(c);
	c->pw_listed = true;
	c->pw_grow = grow;
	if (c->pw_woken || !q->head) {
		c->pw_next = q->head;
		q->head = c;
		if (!q->tail)
			q->tail = c;
	} else {
		c->pw_next = NULL;
		q->tail->pw_next = c;
		q->tail = c;
	}
	c->pw_woken = false;
	p->pauses++;
}

/* Tells a woken connection to try again (outside the lock). */
static void wake(struct msg_conn *w)
{
	if (!w)
		return;
	msgr__kick(w, KICK_POOL);
	msg_conn__drop(w);	/* the wait list's reference */
}

/* c pauses for its pool (lock held; unlocks). */
static void pause_for_pool(struct msg_budget *b, struct msg_pool *p, struct msg_conn *c,
			   bool grow)
{
	pool_wait(p, c, grow);
	atomic_store(&c->rx_paused, true);
	pthread_mutex_unlock(&b->lock);
	msg_conn__update_events(c);
}

/* ---- a connection's own limits ---- */

static bool conn_fits(struct msg_conn *c, uint64_t cost)
{
	uint64_t held = atomic_load(&c->inflight);

	if (atomic_load(&c->rx_frames) >= c->frames_max)
		return false;
	return held == 0 || held + cost <= c->inflight_max;
}

bool msg_budget__admit(struct msg_conn *c, struct msg *m, uint64_t cost)
{
	struct msg_budget *b = c->budget;
	struct msg_conn *next = NULL;

	/* The store of rx_paused then load of the counts pairs with
	 * msg_free's update of the counts then load of rx_paused: either
	 * msg_free sees the pause and kicks, or we see its update here. */
	if (!conn_fits(c, cost)) {
		atomic_store(&c->rx_paused, true);
		if (!conn_fits(c, cost)) {
			msg_conn__update_events(c);
			msg_budget__forget(c);	/* a pool's turn goes on */
			return false;
		}
		atomic_store(&c->rx_paused, false);
	}
	if (b && c->cls != MSG_CLASS_NONE) {
		struct msg_pool *p = &b->pool[c->cls];

		pthread_mutex_lock(&b->lock);
		/* newcomers queue behind those already waiting */
		if (!pool_fits_header(p) || (p->hwait.head && !c->pw_woken)) {
			pause_for_pool(b, p, c, false);
			return false;
		}
		c->pw_woken = false;
		p->bytes += FRAME_OVERHEAD;
		p->frames++;
		next = pool_pop(p);	/* room left: the next one's turn */
		pthread_mutex_unlock(&b->lock);
		m->cls = c->cls;
		m->pcharged = FRAME_OVERHEAD;
	}
	atomic_fetch_add(&c->inflight, cost);
	atomic_fetch_add(&c->rx_frames, 1);
	m->charged = cost;
	wake(next);
	return true;
}

bool msg_budget__grow(struct msg_conn *c, struct msg *m, uint64_t inc)
{
	struct msg_budget *b = c->budget;
	struct msg_pool *p;

	if (!b || m->cls == MSG_CLASS_NONE)
		return true;
	p = &b->pool[m->cls];
	pthread_mutex_lock(&b->lock);
	if (!pool_fits_growth(p, c, inc)) {
		pause_for_pool(b, p, c, true);
		return false;
	}
	if (p->bytes + inc > p->bytes_max)
		p->over = c;	/* the one frame past the limit */
	c->pw_woken = false;
	p->bytes += inc;
	m->pcharged += inc;
	pthread_mutex_unlock(&b->lock);
	return true;
}

void msg_budget__delivered(struct msg_conn *c, struct msg *m)
{
	struct msg_budget *b = c->budget;
	struct msg_pool *p;

	if (!b || m->cls == MSG_CLASS_NONE)
		return;
	p = &b->pool[m->cls];
	pthread_mutex_lock(&b->lock);
	if (p->over == c)
		p->over = NULL;	/* it is whole: held until freed */
	p->delivered++;
	m->delivered = true;
	pthread_mutex_unlock(&b->lock);
}

void msg_budget__release(struct msg_conn *c, struct msg *m)
{
	uint64_t left = atomic_fetch_sub(&c->inflight, m->charged) - m->charged;
	unsigned int frames = atomic_fetch_sub(&c->rx_frames, 1) - 1;
	struct msg_budget *b = c->budget;
	struct msg_conn *w = NULL;

	if (b && m->cls != MSG_CLASS_NONE) {
		struct msg_pool *p = &b->pool[m->cls];

		pthread_mutex_lock(&b->lock);
		ATOLL_ASSERT(p->bytes >= m->pcharged && p->frames > 0,
			     "receive pool %u released below zero by '%s'", m->cls, c->addr);
		p->bytes -= m->pcharged;
		p->frames--;
		if (m->delivered)
			p->delivered--;
		else if (p->over == c)
			p->over = NULL;	/* dropped before it was whole */
		w = pool_pop(p);
		pthread_mutex_unlock(&b->lock);
	}
	m->charged = 0;
	m->pcharged = 0;
	m->cls = MSG_CLASS_NONE;
	m->delivered = false;
	/* c's own limits: see msg_budget__admit on the pairing */
	if ((left < c->inflight_max || frames < c->frames_max) && atomic_load(&c->rx_paused))
		msgr__kick(c, KICK_RESUME);
	wake(w);
}

void msg_budget__forget(struct msg_conn *c)
{
	struct msg_budget *b = c->budget;
	struct msg_conn *next = NULL;
	bool listed = false;
	struct msg_pool *p;

	if (!b || c->cls == MSG_CLASS_NONE)
		return;
	p = &b->pool[c->cls];
	pthread_mutex_lock(&b->lock);
	if (c->pw_listed) {
		waitq_remove(c->pw_grow ? &p->gwait : &p->hwait, c);
		listed = true;
	}
	if (c->pw_woken) {
		/* it will not use its turn: the next one's */
		c->pw_woken = false;
		next = pool_pop(p);
	}
	pthread_mutex_unlock(&b->lock);
	if (listed)
		msg_conn__drop(c);
	wake(next);
}

void msg_budget__usage(struct msg_budget *b, enum msg_class cls, uint64_t *bytes,
		       uint32_t *frames, uint64_t *pauses)
{
	pthread_mutex_lock(&b->lock);
	*bytes = b->pool[cls].bytes;
	*frames = b->pool[cls].frames;
	*pauses = b->pool[cls].pauses;
	pthread_mutex_unlock(&b->lock);
}
