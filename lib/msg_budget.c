/*
 * msg_budget.c - how much received data the messenger holds on a peer's
 * say-so: every received message is charged, from its header until the
 * upper layer frees it, to its connection (bytes and messages) and, for
 * an accepted connection, to the pool of its peer's class (clients, or
 * cluster peers: mon, osd, mds).  A frame is read only once its whole
 * cost fits; otherwise reading stops for that connection alone until
 * enough is freed.
 *
 * Why whole frames: a frame admitted in part could wait forever for a
 * budget that other half-received frames hold.  Charging the whole cost
 * at the header means that every admitted frame can complete, so the
 * pools always drain.  Memory itself follows the data (msg_rx.c grows
 * the buffers as bytes arrive), so a header announcing 64 MiB that never
 * sends them costs budget, not memory, and for frame_timeout_ms only.
 *
 * A pool wakes the connections that wait for it in the order they came
 * (one at a time: the woken one takes what it needs and wakes the next
 * if room is left), so that a big frame is not starved by small ones.
 * A frame bigger than a whole budget is taken when nothing else is held.
 *
 * Threads: admission runs on the loop; release on whatever thread frees
 * the message.  The pools are under budget->lock; a connection's own
 * counts are atomics with the store-then-load pairing of msg_rx.c's
 * flow control, so that a pause and a concurrent free never miss each
 * other.
 */
#include <errno.h>
#include <stdlib.h>

#include "atoll_assert.h"
#include "log.h"
#include "mono.h"
#include "msgr_int.h"

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

static bool pool_fits(const struct msg_pool *p, uint64_t cost)
{
	if (p->frames >= p->frames_max)
		return false;
	return p->bytes == 0 || p->bytes + cost <= p->bytes_max;
}

static bool pool_has_room(const struct msg_pool *p)
{
	return p->frames < p->frames_max && p->bytes < p->bytes_max;
}

/* The first waiter, taken off the list to try again (its reference
 * goes with it), when the pool has room; NULL otherwise. */
static struct msg_conn *pool_pop(struct msg_pool *p)
{
	struct msg_conn *w = p->wait_head;

	if (!w || !pool_has_room(p))
		return NULL;
	p->wait_head = w->pw_next;
	if (!p->wait_head)
		p->wait_tail = NULL;
	w->pw_next = NULL;
	w->pw_listed = false;
	w->pw_woken = true;
	return w;
}

/* c waits: at the head when it had been woken (it keeps its turn). */
static void pool_wait(struct msg_pool *p, struct msg_conn *c)
{
	if (c->pw_listed)
		return;
	msg_conn__hold(c);
	c->pw_listed = true;
	if (c->pw_woken || !p->wait_head) {
		c->pw_next = p->wait_head;
		p->wait_head = c;
		if (!p->wait_tail)
			p->wait_tail = c;
	} else {
		c->pw_next = NULL;
		p->wait_tail->pw_next = c;
		p->wait_tail = c;
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
	 * msg_free's update of the counts then load of rx_paused (both
	 * sequentially consistent): either msg_free sees the pause and
	 * kicks, or we see its update here. */
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
		if (!pool_fits(p, cost) || (p->wait_head && !c->pw_woken)) {
			pool_wait(p, c);
			atomic_store(&c->rx_paused, true);
			pthread_mutex_unlock(&b->lock);
			msg_conn__update_events(c);
			return false;
		}
		c->pw_woken = false;
		p->bytes += cost;
		p->frames++;
		next = pool_pop(p);	/* room left: the next one's turn */
		pthread_mutex_unlock(&b->lock);
		m->cls = c->cls;
	}
	atomic_fetch_add(&c->inflight, cost);
	atomic_fetch_add(&c->rx_frames, 1);
	m->charged = cost;
	wake(next);
	return true;
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
		ATOLL_ASSERT(p->bytes >= m->charged && p->frames > 0,
			     "receive pool %u released below zero by '%s'", m->cls, c->addr);
		p->bytes -= m->charged;
		p->frames--;
		w = pool_pop(p);
		pthread_mutex_unlock(&b->lock);
	}
	m->charged = 0;
	m->cls = MSG_CLASS_NONE;
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

	if (!b || c->cls == MSG_CLASS_NONE)
		return;
	pthread_mutex_lock(&b->lock);
	{
		struct msg_pool *p = &b->pool[c->cls];

		if (c->pw_listed) {
			struct msg_conn **pp = &p->wait_head, *prev = NULL;

			while (*pp && *pp != c) {
				prev = *pp;
				pp = &(*pp)->pw_next;
			}
			ATOLL_ASSERT(*pp == c, "connection '%s' not on its pool's wait list",
				     c->addr);
			*pp = c->pw_next;
			if (p->wait_tail == c)
				p->wait_tail = prev;
			c->pw_next = NULL;
			c->pw_listed = false;
			listed = true;
		}
		if (c->pw_woken) {
			/* it will not use its turn: the next one's */
			c->pw_woken = false;
			next = pool_pop(p);
		}
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
