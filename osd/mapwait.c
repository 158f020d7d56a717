/*
 * mapwait.c - messages that name a map epoch newer than the OSD's wait
 * here ("parked") until that map arrives, within bounds.
 *
 * A client op or a peer's message (REP_OP, PG query, log, push, scan)
 * that carries a future epoch cannot be judged yet: the OSD holds it and
 * dispatches it again, in arrival order, once its map reaches the epoch
 * (osdmap_client.c calls osd_mapwait_wake).  The epoch is whatever the
 * sender wrote, so the wait is bounded: in count and bytes per daemon,
 * in count per connection and per PG, and in time.  Clients and cluster
 * peers (mon, osd, mds identities) have separate budgets so that a client
 * flood cannot refuse a replica's REP_OPs.
 *
 * What happens past a bound or after the timeout:
 *   - a client's op is answered -EAGAIN with our epoch: the client library
 *     retries shortly (objecter.c) and the op goes on once the map is in,
 *     so a real but late epoch costs a retry, never the user's op; a
 *     made-up epoch only ever costs the client its own retries;
 *   - a client's other message is answered -EAGAIN when it has an answer
 *     type, else dropped;
 *   - a cluster peer's connection is closed, dropping all its parked
 *     messages: a peer's messages on one connection form a sequence
 *     (REP_OPs apply in order), so refusing one and taking the next would
 *     break it, while a closed connection is what every sender already
 *     handles (its calls fail -ECONNRESET and it waits for the next map).
 *
 * Loop thread only (the timer too); the list is in arrival order, the
 * per-connection and per-PG counts are taken by walking it (it is short:
 * its length is bounded by the daemon-wide count).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg.h"

/* One parked message. */
struct map_waiter {
	struct map_waiter *next;
	struct osd_mapwait_key k;
	struct osd_reqid reqid;		/* k.is_op: for the answer */
	struct msg_conn *conn;
	struct msg *m;
	uint64_t bytes;			/* charged to mw->bytes[cls] */
	uint64_t deadline_ms;
	uint8_t cls;			/* MW_CLIENT or MW_PEER */
};

#define MW_SWEEP_MS 250u	/* how often the timeout is checked at most */

static bool is_cluster_peer(const struct msg_conn *c)
{
	uint32_t t = msg_conn_peer(c).type;

	return t == MSG_ENTITY_MON || t == MSG_ENTITY_OSD || t == MSG_ENTITY_MDS;
}

void osd_mapwait_init(struct osd_mapwait *mw)
{
	memset(mw, 0, sizeof(*mw));
	mw->tail = &mw->head;
	mw->max_ops = OSD_MAPWAIT_DEFAULT_OPS;
	mw->max_bytes = OSD_MAPWAIT_DEFAULT_BYTES;
	mw->max_per_conn = OSD_MAPWAIT_DEFAULT_PER_CONN;
	mw->max_per_pg = OSD_MAPWAIT_DEFAULT_PER_PG;
	mw->timeout_ms = OSD_MAPWAIT_DEFAULT_TIMEOUT_MS;
}

int osd_mapwait_check(const struct osd_mapwait *mw, uint8_t cls, const struct msg_conn *c,
		      uint32_t pool, uint32_t pg, uint64_t bytes)
{
	uint32_t on_conn = 0, on_pg = 0;

	if (mw->n[cls] >= mw->max_ops || mw->bytes[cls] + bytes > mw->max_bytes)
		return -EAGAIN;
	for (const struct map_waiter *w = mw->head; w; w = w->next) {
		if (w->conn == c)
			on_conn++;
		if (w->cls == cls && w->k.pool == pool && w->k.pg == pg)
			on_pg++;
	}
	if (on_conn >= mw->max_per_conn || on_pg >= mw->max_per_pg)
		return -EAGAIN;
	return 0;
}

/* The answer a parked client message gets when it is let go (takes m). */
static void refuse_client(struct osd *osd, const struct map_waiter *w, int rc)
{
	if (w->k.is_op)
		osd_op_reply_bare(osd, w->conn, w->m, &w->reqid, rc);
	else if (w->k.reply_type)
		osd_peermsg_reply_rc(osd, w->conn, w->m, w->k.reply_type, rc);
	msg_free(w->m);
}

/* Unlinks and frees every waiter of conn (its messages are dropped). */
static void drop_conn(struct osd *osd, struct msg_conn *c)
{
	struct osd_mapwait *mw = &osd->mw;
	struct map_waiter **pp = &mw->head;

	while (*pp) {
		struct map_waiter *w = *pp;

		if (w->conn != c) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		mw->n[w->cls]--;
		mw->bytes[w->cls] -= w->bytes;
		msg_free(w->m);
		msg_conn_put(w->conn);
		free(w);
	}
	mw->tail = &mw->head;
	while (*mw->tail)
		mw->tail = &(*mw->tail)->next;
}

/* A cluster peer went past a bound: its connection ends (see the top). */
static void close_peer(struct osd *osd, struct msg_conn *c, const char *why)
{
	static const char *const names[] = { "none", "client", "mon", "osd", "mds" };
	uint8_t t = msg_conn_peer(c).type;

	log_warn("map", "closing the connection of %s.%llu at %s: %s; it reconnects and "
		 "resends", t < 5 ? names[t] : "peer",
		 (unsigned long long)msg_conn_peer(c).id, msg_conn_addr(c), why);
	msg_conn_get(c);
	drop_conn(osd, c);
	msg_conn_close(c);
	msg_conn_put(c);
}

/* Rate-limited: one line per 10 s with the count since the last. */
static void note_refused(struct osd_mapwait *mw, const struct msg_conn *c, const char *why)
{
	uint64_t now = mono_now_ms();

	mw->refused++;
	if (mw->refused_logged_ms && now - mw->refused_logged_ms < 10000)
		return;
	log_warn("map", "refusing messages with a future map epoch (%s; last from %s); "
		 "%llu refused so far; the limits are osd_map_wait_* in atoll.conf",
		 why, msg_conn_addr(c), (unsigned long long)mw->refused);
	mw->refused_logged_ms = now;
}

static void sweep(void *arg);

static void arm(struct osd *osd)
{
	struct osd_mapwait *mw = &osd->mw;
	uint64_t ms = mw->timeout_ms < MW_SWEEP_MS ? mw->timeout_ms : MW_SWEEP_MS;

	if (mw->timer || !mw->head || !osd->msgr)
		return;
	mw->timer = msgr_timer(osd->msgr, (uint32_t)(ms ? ms : 1), sweep, osd);
}

/* Lets go of what waited past the timeout (loop thread, by timer). */
static void sweep(void *arg)
{
	struct osd *osd = arg;
	struct osd_mapwait *mw = &osd->mw;
	uint64_t now = mono_now_ms();
	struct map_waiter **pp;

	mw->timer = 0;
	if (atomic_load(&osd->closing))
		return;
again:
	for (pp = &mw->head; *pp; pp = &(*pp)->next) {
		struct map_waiter *w = *pp;

		if (w->deadline_ms > now)
			continue;
		mw->expired++;
		if (w->cls == MW_PEER) {
			/* drops w and everything else of its connection */
			close_peer(osd, w->conn, "a message waited for a map past "
				   "osd_map_wait_timeout");
			goto again;
		}
		*pp = w->next;
		mw->n[w->cls]--;
		mw->bytes[w->cls] -= w->bytes;
		note_refused(mw, w->conn, "waited past osd_map_wait_timeout");
		refuse_client(osd, w, -EAGAIN);
		msg_conn_put(w->conn);
		free(w);
		goto again;
	}
	mw->tail = &mw->head;
	while (*mw->tail)
		mw->tail = &(*mw->tail)->next;
	arm(osd);
}

void osd_map_wait(struct osd *osd, const struct osd_mapwait_key *k, struct msg_conn *c,
		  struct msg *m)
{
	struct osd_mapwait *mw = &osd->mw;
	uint8_t cls = is_cluster_peer(c) ? MW_PEER : MW_CLIENT;
	uint64_t bytes = sizeof(struct map_waiter) + sizeof(*m) + m->front_len + m->data_len;
	struct map_waiter w0 = { .k = *k, .conn = c, .m = m, .cls = cls };
	struct map_waiter *w;
	int r;

	if (k->reqid)
		w0.reqid = *k->reqid;
	w0.k.reqid = NULL;
	r = osd_mapwait_check(mw, cls, c, k->pool, k->pg, bytes);
	w = r ? NULL : malloc(sizeof(*w));
	if (!w) {
		if (cls == MW_PEER) {
			close_peer(osd, c, r ? "too many messages wait for a newer map "
				   "(osd_map_wait_* limits)" : "out of memory");
			msg_free(m);
			return;
		}
		note_refused(mw, c, r ? "over the osd_map_wait_* limits" : "out of memory");
		refuse_client(osd, &w0, r ? r : -ENOMEM);
		return;
	}
	log_debug("map", "message type %u from %s waits for epoch %llu (ours: %llu)", m->type,
		  msg_conn_addr(c), (unsigned long long)k->epoch,
		  osd->map ? (unsigned long long)osd->map->epoch : 0ull);
	*w = w0;
	w->bytes = bytes;
	w->deadline_ms = mono_now_ms() + mw->timeout_ms;
	msg_conn_get(c);
	*mw->tail = w;
	mw->tail = &w->next;
	mw->n[cls]++;
	mw->bytes[cls] += bytes;
	arm(osd);
}

void osd_mapwait_wake(struct osd *osd)
{
	struct osd_mapwait *mw = &osd->mw;
	struct map_waiter *ready = NULL, **rt = &ready, **pp = &mw->head;

	while (*pp) {
		struct map_waiter *w = *pp;

		if (w->k.epoch <= osd->map->epoch) {
			*pp = w->next;
			w->next = NULL;
			*rt = w;
			rt = &w->next;
			mw->n[w->cls]--;
			mw->bytes[w->cls] -= w->bytes;
		} else {
			pp = &w->next;
		}
	}
	mw->tail = pp;
	/* dispatching may park again (a still newer epoch): the list is
	 * consistent before the first call */
	while (ready) {
		struct map_waiter *w = ready;

		ready = w->next;
		osd_dispatch(osd, w->conn, w->m);
		msg_conn_put(w->conn);
		free(w);
	}
}

void osd_mapwait_free(struct osd *osd)
{
	struct osd_mapwait *mw = &osd->mw;

	while (mw->head) {
		struct map_waiter *w = mw->head;

		mw->head = w->next;
		msg_free(w->m);
		msg_conn_put(w->conn);
		free(w);
	}
	mw->tail = &mw->head;
	mw->n[0] = mw->n[1] = 0;
	mw->bytes[0] = mw->bytes[1] = 0;
}
