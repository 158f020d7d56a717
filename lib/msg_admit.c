/*
 * msg_admit.c - connection slots of a listening messenger: how many
 * accepted connections it keeps, from whom, and which it refuses, so that
 * a flood of connections costs a bounded amount and cannot take the
 * places of the cluster's own daemons.  All on the loop thread.
 *
 * An accepted connection takes a handshaking slot until its hello (auth =
 * none) or until its proof is checked (auth = ticket: msg_conn__open),
 * then a client or a peer slot (its class: mon, osd and mds are cluster
 * peers), so that without a key nobody holds a peer's slot.  Limits (struct msgr_config):
 *   - conns_max connections in all, of which peer_reserved only peers
 *     may hold: clients are refused at their hello once they hold
 *     conns_max - peer_reserved;
 *   - conns_per_addr client connections from one address (peers are not
 *     counted: a host runs several daemons and many clients may share an
 *     address with them);
 *   - handshakes_max connections waiting for their hello in all: a new
 *     one closes the oldest (a half-open handshake is worth less than a
 *     fresh one, and so a slow flood cannot keep a peer out), and
 *     handshakes_per_addr from one address, beyond which new ones are
 *     refused (so that one address cannot push everyone else out).
 * A refused connection is closed at once (the peer sees its connection
 * reset during the handshake and, if it is ours, redials with backoff);
 * one log line per interval says so, with the count of those left out.
 *
 * Addresses are counted in a hash by a 64-bit key: an IPv4 address (or
 * an IPv4-mapped IPv6 one) as it is, any other IPv6 address hashed (two
 * addresses whose hashes collide share a count).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mono.h"
#include "msgr_int.h"

#define ADMIT_LOG_MS	10000	/* one line per reason and interval */

struct msg_addr_count {
	struct idnode h;	/* key: addr_key() */
	uint32_t hs, clients;
};

bool msgr__ratelog(struct msgr_ratelog *r, uint32_t interval_ms, uint32_t *dropped)
{
	uint64_t now = mono_now_ns();

	if (now < r->next_ns) {
		r->dropped++;
		return false;
	}
	r->next_ns = now + (uint64_t)interval_ms * 1000000u;
	*dropped = r->dropped;
	r->dropped = 0;
	return true;
}

static uint64_t addr_key(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return 1ull << 32 | ((const struct sockaddr_in *)ss)->sin_addr.s_addr;
	if (ss->ss_family == AF_INET6) {
		const uint8_t *a = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
		static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */
		uint32_t v4;

		if (!memcmp(a, mapped, sizeof(mapped))) {
			memcpy(&v4, a + 12, 4);
			return 1ull << 32 | v4;
		}
		for (int i = 0; i < 16; i++)
			h = (h ^ a[i]) * 0x100000001b3ull;
		return h | 1ull << 63;
	}
	return 0;
}

static struct msg_addr_count *addr_get(struct msgr *m, uint64_t key, bool create)
{
	struct idnode *n = idtab_find(&m->slots.addrs, key);
	struct msg_addr_count *a;

	if (n || !create)
		return n ? container_of(n, struct msg_addr_count, h) : NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->h.key = key;
	idtab_add(&m->slots.addrs, &a->h);
	return a;
}

static void addr_put(struct msgr *m, struct msg_addr_count *a)
{
	if (a->hs || a->clients)
		return;
	idtab_del(&m->slots.addrs, &a->h);
	free(a);
}

static void refused(struct msgr *m, struct msg_conn *c, const char *why)
{
	uint32_t dropped;

	m->slots.refused++;
	if (msgr__ratelog(&m->slots.log_refused, ADMIT_LOG_MS, &dropped))
		log_warn("msgr", "refusing connection '%s': %s (%u more refused since the "
			 "last line); see doc/limits.md", c->addr, why, dropped);
}

static void hs_unlink(struct msgr *m, struct msg_conn *c)
{
	if (c->hs_prev)
		c->hs_prev->hs_next = c->hs_next;
	else
		m->slots.hs_head = c->hs_next;
	if (c->hs_next)
		c->hs_next->hs_prev = c->hs_prev;
	else
		m->slots.hs_tail = c->hs_prev;
	c->hs_prev = c->hs_next = NULL;
}

/* Closes the connection that has waited longest for its hello. */
static void evict_oldest(struct msgr *m)
{
	struct msg_conn *old = m->slots.hs_head;
	uint32_t dropped;

	m->slots.evicted++;
	if (msgr__ratelog(&m->slots.log_evicted, ADMIT_LOG_MS, &dropped))
		log_warn("msgr", "closing connection '%s': %u connections wait for their "
			 "hello, the oldest goes for a new one (%u more since the last line)",
			 old->addr, m->slots.handshaking, dropped);
	msg_conn__fail(old, -ETIMEDOUT);	/* accepted: closes, msg_admit__closed */
}

int msg_admit__accept(struct msgr *m, struct msg_conn *c)
{
	struct msgr_slots *s = &m->slots;
	struct msg_addr_count *a;

	c->addr_key = addr_key(&c->sa);
	a = addr_get(m, c->addr_key, false);
	if (a && a->hs >= m->cfg.handshakes_per_addr) {
		refused(m, c, "too many connections from this address wait for their hello "
			"(ms_max_handshakes_per_addr)");
		return -EBUSY;
	}
	if (s->accepted >= m->cfg.conns_max && !s->hs_head) {
		refused(m, c, "too many connections (ms_max_conns)");
		return -EBUSY;
	}
	while (s->hs_head && (s->handshaking >= m->cfg.handshakes_max ||
			      s->accepted >= m->cfg.conns_max))
		evict_oldest(m);
	a = addr_get(m, c->addr_key, true);
	if (!a)
		return -ENOMEM;
	a->hs++;
	s->accepted++;
	s->handshaking++;
	c->slot = SLOT_HANDSHAKE;
	c->hs_next = NULL;
	c->hs_prev = s->hs_tail;
	if (s->hs_tail)
		s->hs_tail->hs_next = c;
	else
		s->hs_head = c;
	s->hs_tail = c;
	return 0;
}

static bool peer_type(uint8_t type)
{
	return type == MSG_ENTITY_MON || type == MSG_ENTITY_OSD || type == MSG_ENTITY_MDS;
}

int msg_admit__hello(struct msg_conn *c)
{
	struct msgr *m = c->msgr;
	struct msgr_slots *s = &m->slots;
	struct msg_addr_count *a = addr_get(m, c->addr_key, false);
	bool peer;

	if (c->slot != SLOT_HANDSHAKE)
		return 0;
	pthread_mutex_lock(&c->plock);
	peer = peer_type(c->peer.type);
	pthread_mutex_unlock(&c->plock);
	if (!peer) {
		uint32_t room = m->cfg.conns_max > m->cfg.peer_reserved
					? m->cfg.conns_max - m->cfg.peer_reserved : 0;

		if (s->clients >= room) {
			refused(m, c, "too many client connections (ms_max_conns less "
				"ms_peer_reserved_conns)");
			return -EBUSY;
		}
		if (a && a->clients >= m->cfg.conns_per_addr) {
			refused(m, c, "too many client connections from this address "
				"(ms_max_conns_per_addr)");
			return -EBUSY;
		}
	}
	hs_unlink(m, c);
	s->handshaking--;
	if (a) {
		a->hs--;
		if (!peer)
			a->clients++;
	}
	if (peer) {
		s->peers++;
		c->slot = SLOT_PEER;
		c->cls = MSG_CLASS_PEER;
		if (a)
			addr_put(m, a);
	} else {
		s->clients++;
		c->slot = SLOT_CLIENT;
		c->cls = MSG_CLASS_CLIENT;
	}
	return 0;
}

void msg_admit__closed(struct msg_conn *c)
{
	struct msgr *m = c->msgr;
	struct msgr_slots *s = &m->slots;
	struct msg_addr_count *a;

	if (c->slot == SLOT_NONE)
		return;
	a = addr_get(m, c->addr_key, false);
	switch (c->slot) {
	case SLOT_HANDSHAKE:
		hs_unlink(m, c);
		s->handshaking--;
		if (a)
			a->hs--;
		break;
	case SLOT_CLIENT:
		s->clients--;
		if (a)
			a->clients--;
		break;
	case SLOT_PEER:
		s->peers--;
		break;
	case SLOT_NONE:
		break;
	}
	s->accepted--;
	c->slot = SLOT_NONE;
	if (a)
		addr_put(m, a);
}

void msg_admit__free(struct msgr *m)
{
	for (size_t i = 0; m->slots.addrs.b && i < idtab_nb(&m->slots.addrs); i++) {
		while (m->slots.addrs.b[i]) {
			struct msg_addr_count *a =
				container_of(m->slots.addrs.b[i], struct msg_addr_count, h);

			idtab_del(&m->slots.addrs, &a->h);
			free(a);
		}
	}
	idtab_free(&m->slots.addrs);
}
