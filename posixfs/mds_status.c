/*
 * mds_status.c - what the MDS tells `atoll fs status` (MT_MDS_STATUS):
 * its state, its connected clients, the namespace's size, the journal's
 * position, how many requests of each op it served and its metadata
 * cache (size, bound, hits, misses, evictions).
 *
 * The answer is made on the messenger's loop thread, never behind the
 * worker: a worker stuck on the cluster (journaling while the OSDs are
 * down) must not hide the MDS's status.  So the worker copies the few
 * numbers the status shows into a snapshot after every request (under a
 * small lock of its own that is never held across I/O), and the loop
 * thread keeps the list of client sessions: a connection counts as a
 * client from its first MT_MDS_REQUEST until it closes (a mount opens its
 * session at once; after an MDS restart a mount counts again from its
 * next request).  `atoll fs status` itself sends no MT_MDS_REQUEST, so it
 * never counts as a client.
 */
#include "mds.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "encode.h"
#include "log.h"
#include "mono.h"
#include "msg.h"

#define SUB "mds"

struct session {
	struct msg_conn *c;
	uint64_t id;
	char addr[64];
	uint64_t requests;
	uint64_t since_ms;
	struct session *prev, *next;
};

static struct {
	pthread_mutex_t lock;
	uint64_t start_ms;
	struct mds_status snap;		/* everything but the clients */
	struct session *sessions;
	uint32_t nsessions;
	struct mds *m;			/* its journal position is read live */
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

void mds_status_init(struct mds *m)
{
	pthread_mutex_lock(&g.lock);
	g.m = m;
	g.start_ms = mono_now_ms();
	g.snap.state = MDS_STATE_REPLAYING;
	snprintf(g.snap.meta_pool, sizeof(g.snap.meta_pool), "%s", m->meta_pool);
	snprintf(g.snap.data_pool, sizeof(g.snap.data_pool), "%s", m->data_pool);
	g.snap.nops = MDS_OP_MAX_;
	pthread_mutex_unlock(&g.lock);
}

void mds_status_set_addr(const char *addr)
{
	pthread_mutex_lock(&g.lock);
	snprintf(g.snap.addr, sizeof(g.snap.addr), "%s", addr);
	pthread_mutex_unlock(&g.lock);
}

void mds_status_set_session_timeout(uint32_t ms)
{
	pthread_mutex_lock(&g.lock);
	g.snap.session_timeout_ms = ms;
	pthread_mutex_unlock(&g.lock);
}

void mds_status_set_state(uint32_t state)
{
	pthread_mutex_lock(&g.lock);
	g.snap.state = state;
	pthread_mutex_unlock(&g.lock);
}

/* The thread handling requests (the worker, or the loop thread while the
 * worker is idle: one at a time, mds_main.c) is the only writer of these
 * fields of m, so it reads them without m->lock. */
void mds_status_sync(const struct mds *m)
{
	struct mds_status ls;

	uint64_t inflight, iwaits, itimeouts;

	mds_lease_stats(&ls);	/* its own lock, never taken inside ours */
	mds_inflight_stats(&inflight, &iwaits, &itimeouts);	/* so is this one */
	pthread_mutex_lock(&g.lock);
	g.snap.inflight = inflight;
	g.snap.inflight_waits = iwaits;
	g.snap.inflight_timeouts = itimeouts;
	g.snap.lease_ms = ls.lease_ms;
	g.snap.leases = ls.leases;
	g.snap.leases_max = ls.leases_max;
	g.snap.grants = ls.grants;
	g.snap.revokes = ls.revokes;
	g.snap.revoke_timeouts = ls.revoke_timeouts;
	g.snap.inodes = m->ninodes;
	g.snap.next_ino = m->next_ino;
	g.snap.ino_hw = m->ino_hw;
	g.snap.j_seg = m->journal.seg;
	g.snap.j_entries = m->journal.seg_entries;
	g.snap.j_offset = m->journal.seg_bytes;
	g.snap.j_seq = m->journal.seq;
	g.snap.sessions = m->nsess;
	g.snap.cache_bytes = m->cache.bytes;
	g.snap.cache_max = m->cache.max;
	g.snap.cache_nodes = m->cache.n;
	g.snap.cache_hits = m->cache.hits;
	g.snap.cache_misses = m->cache.misses;
	g.snap.cache_evictions = m->cache.evictions;
	pthread_mutex_unlock(&g.lock);
}

void mds_status_served(const struct mds *m, uint32_t op, bool malformed)
{
	pthread_mutex_lock(&g.lock);
	if (malformed) {
		g.snap.malformed++;
	} else {
		g.snap.requests++;
		if (op < MDS_STATUS_OPS_MAX)
			g.snap.op_count[op]++;
	}
	pthread_mutex_unlock(&g.lock);
	mds_status_sync(m);
}

void mds_status_client_request(struct msg_conn *c)
{
	struct session *s = msg_conn_priv(c);

	pthread_mutex_lock(&g.lock);
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			goto out;
		s->c = c;
		s->id = msg_conn_peer(c).id;
		snprintf(s->addr, sizeof(s->addr), "%s", msg_conn_addr(c));
		s->since_ms = mono_now_ms();
		s->next = g.sessions;
		if (g.sessions)
			g.sessions->prev = s;
		g.sessions = s;
		g.nsessions++;
		msg_conn_set_priv(c, s);
		log_info(SUB, "client %llu connected from %s (%u connected)",
			 (unsigned long long)s->id, s->addr, g.nsessions);
	}
	s->requests++;
out:
	pthread_mutex_unlock(&g.lock);
}

void mds_status_client_closed(struct msg_conn *c)
{
	struct session *s = msg_conn_priv(c);

	if (!s)
		return;
	pthread_mutex_lock(&g.lock);
	if (s->prev)
		s->prev->next = s->next;
	else
		g.sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	g.nsessions--;
	log_info(SUB, "client %llu at %s disconnected (%u connected)",
		 (unsigned long long)s->id, s->addr, g.nsessions);
	pthread_mutex_unlock(&g.lock);
	msg_conn_set_priv(c, NULL);
	free(s);
}

void mds_status_snapshot(struct mds_status *out)
{
	pthread_mutex_lock(&g.lock);
	*out = g.snap;
	out->uptime_ms = mono_now_ms() - g.start_ms;
	if (g.m) {
		out->j_seq = __atomic_load_n(&g.m->journal.pub_seq, __ATOMIC_ACQUIRE);
		out->j_durable = __atomic_load_n(&g.m->journal.pub_durable, __ATOMIC_ACQUIRE);
	}
	out->nclients = g.nsessions;
	out->clients = NULL;
	pthread_mutex_unlock(&g.lock);
}

void mds_status_reply(struct msg_conn *c, const struct msg *req)
{
	struct mds_status *st = malloc(sizeof(*st));
	struct enc e;
	uint64_t now = mono_now_ms();

	if (!st)
		return;
	pthread_mutex_lock(&g.lock);
	g.snap.status_requests++;
	*st = g.snap;
	st->uptime_ms = now - g.start_ms;
	/* live, not from the last request: a test waits for the journal */
	st->j_seq = __atomic_load_n(&g.m->journal.pub_seq, __ATOMIC_ACQUIRE);
	st->j_durable = __atomic_load_n(&g.m->journal.pub_durable, __ATOMIC_ACQUIRE);
	st->nclients = 0;
	st->clients = calloc(g.nsessions ? g.nsessions : 1, sizeof(*st->clients));
	if (st->clients) {
		for (struct session *s = g.sessions;
		     s && st->nclients < MDS_STATUS_CLIENTS_MAX; s = s->next) {
			struct mds_client_info *ci = &st->clients[st->nclients++];
			ci->id = s->id;
			snprintf(ci->addr, sizeof(ci->addr), "%s", s->addr);
			ci->requests = s->requests;
			ci->connected_ms = now - s->since_ms;
		}
	}
	pthread_mutex_unlock(&g.lock);
	enc_init(&e);
	mds_status_encode(&e, st);
	struct msg *r = msg_new(MT_MDS_STATUS, &e);
	enc_free(&e);
	if (r)
		msg_reply(c, req, r);
	free(st->clients);
	free(st);
}
