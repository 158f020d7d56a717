/*
 * objecter.c - sends object ops to the right OSD and sees them through
 * map changes, lost connections and timeouts.
 *
 * A request (struct client_req) is targeted from the map the handle holds
 * (placement_object_pg + placement_acting -> the primary -> its address;
 * the primaries are cached per map, client_pgc)
 * and sent as one MT_OSD_OP over the session to that OSD, with a request
 * id {client id, tid} that stays the same for every resend: an OSD that
 * already applied it answers with the first result, so a resend can never
 * apply a write twice.  A request is resent (OSD_REQF_RESEND) when
 *   - the OSD answers -ESTALE (it has a newer map, or is not the primary):
 *     we wait for the epoch it names, or retry shortly if it is not newer;
 *   - the call fails with -ECONNRESET: retry shortly on the current map
 *     (the messenger redials) and ask the monitor for anything newer;
 *   - a new map moves the request's PG to another primary;
 *   - a reply names another request id (ours is lost: resend).
 * A PG without a primary waits for a new map.  The first final reply from
 * any attempt finishes the request; an error reply of an older attempt is
 * ignored (sctx->attempt).
 *
 * State lives under the cluster's lock; the messenger is only called with
 * the lock dropped (see client.h).  A request is reference counted: its
 * place in the list, each send in flight and each armed timer hold one.
 * The throttle (ops and bytes in flight) blocks callers of atoll_aio_*,
 * except on the messenger's thread (a completion callback issuing more
 * ops), which must never block.
 */
#include "client.h"
#include "encode.h"
#include "msg.h"
#include "osdmap.h"
#include "placement.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct send_ctx {
	struct client_req *r;
	uint32_t attempt;
	struct msg_conn *conn;	/* sent on (the rx lease's connection) */
};

static void req_kick(struct client_req *r);

struct client_req *client_req_new(struct atoll_ioctx *io, const char *oid,
				  struct atoll_op *op, bool own_op,
				  struct atoll_completion *comp)
{
	struct client_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->c = io->c;
	r->pool = io->pool;
	r->req_flags = io->req_flags;
	if (oid) {
		r->oid_len = strnlen(oid, PROTO_OID_MAX);
		memcpy(r->oid, oid, r->oid_len);
	}
	r->op = op;
	r->own_op = own_op;
	r->comp = comp;
	r->target = -1;
	return r;
}

void client_req_free(struct client_req *r)
{
	if (!r)
		return;
	if (r->own_op)
		atoll_op_release(r->op);
	free(r);
}

static void req_put(struct client_req *r)
{
	struct atoll_cluster *c = r->c;
	int refs;

	pthread_mutex_lock(&c->lock);
	refs = --r->refs;
	pthread_mutex_unlock(&c->lock);
	if (refs == 0)
		client_req_free(r);
}

/* Marks r finished: out of the list, out of the throttle, timer off.
 * Called with the lock held; false when it was finished already. */
static bool req_done_locked(struct client_req *r)
{
	struct atoll_cluster *c = r->c;

	if (r->done)
		return false;
	r->done = true;
	if (r->prev)
		r->prev->next = r->next;
	else
		c->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
	c->inflight_ops--;
	c->inflight_bytes -= r->bytes;
	pthread_cond_broadcast(&c->throttle_cond);
	if (r->timer && c->msgr && msgr_timer_cancel(c->msgr, r->timer))
		r->refs--;	/* the timer's; the list's is still held */
	r->timer = 0;
	/* a resend still waiting would hold its reference past a shutdown
	 * that stops the loop before the timer runs */
	if (r->retry_timer && c->msgr && msgr_timer_cancel(c->msgr, r->retry_timer))
		r->refs--;
	r->retry_timer = 0;
	return true;
}

/* Completes a request marked done: outputs, completion, the list's
 * reference.  Called without the lock.  While a message still reads the
 * caller's write buffer (r->data_holds), the completion is left to the
 * last req_data_release(). */
static void req_complete(struct client_req *r, int64_t result,
			 const struct osd_op_reply *rep, const struct msg *m)
{
	struct atoll_cluster *c = r->c;
	uint64_t version = rep ? rep->version : 0;
	struct msg_conn *leased;
	bool later;

	/* A reply still being received into the caller's buffer (another
	 * attempt's) must stop writing it before the outputs are filled and
	 * the caller gets its buffer back.  Off the loop thread (a failure
	 * with no data to fill) the completion waits for the lease instead. */
	pthread_mutex_lock(&c->lock);
	leased = r->rx_lease ? r->rx_conn : NULL;
	pthread_mutex_unlock(&c->lock);
	if (leased && c->msgr && msgr_on_loop(c->msgr))
		msg_conn_rx_revoke(leased);
	if (r->op && (rep || result < 0))
		client_op_fill(r->op, rep, m ? m->data : NULL, m ? m->data_len : 0);
	if (r->post)
		result = r->post(r, result);
	pthread_mutex_lock(&c->lock);
	later = r->data_holds > 0;
	if (later) {
		r->finish_pending = true;
		r->finish_result = result;
		r->finish_version = version;
	}
	pthread_mutex_unlock(&c->lock);
	if (!later)
		client_completion_finish(r->comp, result, version);
	req_put(r);
}

/* The messenger is done with a message that was sent from the caller's
 * buffer (written, or dropped with its connection): any thread. */
static void req_data_release(void *arg)
{
	struct client_req *r = arg;
	struct atoll_cluster *c = r->c;
	bool finish;

	pthread_mutex_lock(&c->lock);
	finish = --r->data_holds == 0 && r->finish_pending;
	if (finish)
		r->finish_pending = false;
	pthread_mutex_unlock(&c->lock);
	if (finish)
		client_completion_finish(r->comp, r->finish_result, r->finish_version);
	req_put(r);
}

/* Closes the session to osd (lock held); its conn goes to *out for the
 * caller to close without the lock.  Messages queued there are dropped
 * and calls sent there fail with -ECONNRESET (their ops resend). */
static void session_drop_locked(struct atoll_cluster *c, int32_t osd, struct msg_conn **out)
{
	*out = NULL;
	for (size_t i = 0; i < c->nsessions; i++) {
		if (c->sessions[i].osd == osd) {
			*out = c->sessions[i].conn;
			c->sessions[i].conn = NULL;
			return;
		}
	}
}

static void req_fail(struct client_req *r, int err)
{
	struct atoll_cluster *c = r->c;
	bool mine;

	pthread_mutex_lock(&c->lock);
	mine = req_done_locked(r);
	pthread_mutex_unlock(&c->lock);
	if (mine)
		req_complete(r, err, NULL, NULL);
}

static void req_retry_cb(void *arg)
{
	struct client_req *r = arg;

	pthread_mutex_lock(&r->c->lock);
	r->retry_timer = 0;
	pthread_mutex_unlock(&r->c->lock);
	req_kick(r);
	req_put(r);
}

/* Resends r after a short pause (lock held). */
static void req_retry_later_locked(struct client_req *r)
{
	struct atoll_cluster *c = r->c;

	r->target = -1;
	if (r->retry_timer)
		return;		/* one resend waits already */
	r->refs++;
	r->retry_timer = msgr_timer(c->msgr, CLIENT_RETRY_MS, req_retry_cb, r);
	if (!r->retry_timer)
		r->refs--;	/* ENOMEM: the next map change kicks it */
}

/* msg_call_rx: the reply's data may go straight into the caller's read
 * buffer, when it is the reply of the latest send of a request still in
 * flight (loop thread). */
static void *req_rx_get(void *arg, uint32_t len)
{
	struct send_ctx *sctx = arg;
	struct client_req *r = sctx->r;
	struct atoll_cluster *c = r->c;
	void *buf = NULL;

	pthread_mutex_lock(&c->lock);
	if (!r->done && !r->rx_lease && sctx->attempt == r->attempt &&
	    len <= r->op->outs[0].len) {
		r->rx_lease = true;
		r->rx_conn = sctx->conn;
		r->data_holds++;
		r->refs++;
		buf = r->op->outs[0].buf;
	}
	pthread_mutex_unlock(&c->lock);
	return buf;
}

/* The messenger writes the buffer no more (loop thread). */
static void req_rx_put(void *arg)
{
	struct send_ctx *sctx = arg;
	struct client_req *r = sctx->r;

	pthread_mutex_lock(&r->c->lock);
	r->rx_lease = false;
	r->rx_conn = NULL;
	pthread_mutex_unlock(&r->c->lock);
	req_data_release(r);
}

static const struct msg_rxbuf_ops req_rx_ops = {
	.get = req_rx_get,
	.put = req_rx_put,
};

/* Whether the reply of r can be received into the caller's buffer: one
 * read into a buffer of its own. */
static bool req_rx_direct(const struct client_req *r)
{
	const struct atoll_op *op = r->op;

	return op && op->nops == 1 && op->outs[0].kind == OUT_READ && op->outs[0].buf &&
	       op->outs[0].len;
}

static void req_timeout_cb(void *arg)
{
	struct client_req *r = arg;
	struct msg_conn *stuck = NULL;
	int err = -ETIMEDOUT;

	pthread_mutex_lock(&r->c->lock);
	r->timer = 0;
	/* an OSD that keeps refusing our ticket (its clock is off: CLOCK_SKEW)
	 * is a refusal, not a slow cluster: say so */
	for (size_t i = 0; !r->done && r->target >= 0 && i < r->c->nsessions; i++)
		if (r->c->sessions[i].osd == r->target && r->c->sessions[i].conn &&
		    msg_conn_ticket_refused(r->c->sessions[i].conn))
			err = -EKEYREJECTED;
	/* A message of this op still queued on its connection holds the
	 * caller's buffer; close that connection so that the message is
	 * dropped and the completion can fire (others on it resend).  A
	 * reply received into the buffer is revoked by req_complete. */
	if (!r->done && r->data_holds > (r->rx_lease ? 1 : 0) && r->target >= 0)
		session_drop_locked(r->c, r->target, &stuck);
	pthread_mutex_unlock(&r->c->lock);
	if (stuck) {
		msg_conn_close(stuck);
		msg_conn_put(stuck);
	}
	req_fail(r, err);
	req_put(r);
}

static void req_reply(void *arg, struct msg *m, int err)
{
	struct send_ctx *sctx = arg;
	struct client_req *r = sctx->r;
	struct atoll_cluster *c = r->c;
	uint32_t attempt = sctx->attempt;
	struct osd_op_reply rep;
	bool resub = false, mine = false;
	struct dec d;
	int rc;

	free(sctx);
	memset(&rep, 0, sizeof(rep));
	if (!err) {
		dec_init(&d, m->front, m->front_len);
		rc = osd_op_reply_decode(&d, m->data_len, &rep);
		if (rc < 0) {
			err = -EBADMSG;
		} else if (rep.reqid.client == 0 && rep.reqid.tid == 0 && rep.result < 0) {
			/* the OSD could not decode our request: final */
		} else if (rep.reqid.client != c->id || rep.reqid.tid != r->tid) {
			/* an answer to another request: ours is lost, resend
			 * (same reqid: an OSD that applied it answers from its
			 * log) */
			err = -ECONNRESET;
		}
	}

	pthread_mutex_lock(&c->lock);
	if (r->done)
		goto out_unlock;
	if (err == -ESHUTDOWN || (err == -EBADMSG && attempt == r->attempt)) {
		mine = req_done_locked(r);
		goto out_unlock;
	}
	if (err) {
		/* a lost connection: only the latest send counts */
		if (attempt == r->attempt) {
			req_retry_later_locked(r);
			resub = true;
		}
		goto out_unlock;
	}
	if (rep.result == -ESTALE || rep.result == -EAGAIN) {
		if (attempt != r->attempt)
			goto out_unlock;
		if (c->map && rep.epoch > c->map->epoch) {
			/* the OSD knows a newer map: wait for it */
			r->target = -1;
			r->need_epoch = rep.epoch;
			resub = true;
		} else {
			req_retry_later_locked(r);
		}
		goto out_unlock;
	}
	/* a final answer, from whichever attempt */
	mine = req_done_locked(r);

out_unlock:
	pthread_mutex_unlock(&c->lock);
	if (resub)
		client_resubscribe(c);
	if (mine)
		req_complete(r, err ? err : rep.result, err ? NULL : &rep, m);
	osd_op_reply_clear(&rep);
	msg_free(m);
	req_put(r);
}

/* The session to osd at addr, opened if needed (lock held).  A session
 * whose address changed is replaced; its old conn goes to *old. */
static struct client_session *session_get_locked(struct atoll_cluster *c, int32_t osd,
						 const char *addr,
						 struct msg_conn **old)
{
	struct client_session *s = NULL, *n;

	*old = NULL;
	for (size_t i = 0; i < c->nsessions; i++) {
		if (c->sessions[i].osd == osd) {
			s = &c->sessions[i];
			break;
		}
	}
	if (s && strcmp(s->addr, addr) != 0) {
		*old = s->conn;
		s->conn = NULL;
	}
	if (!s) {
		n = realloc(c->sessions, (c->nsessions + 1) * sizeof(*n));
		if (!n)
			return NULL;
		c->sessions = n;
		s = &c->sessions[c->nsessions++];
		memset(s, 0, sizeof(*s));
		s->osd = osd;
	}
	if (!s->conn) {
		snprintf(s->addr, sizeof(s->addr), "%s", addr);
		s->conn = msgr_connect(c->msgr, addr);
		if (!s->conn)
			return NULL;
	}
	return s;
}

void client_pgcache_reset(struct atoll_cluster *c)
{
	for (size_t i = 0; i < c->pc_npools; i++)
		free(c->pc_pools[i].primary);
	free(c->pc_pools);
	c->pc_pools = NULL;
	c->pc_npools = 0;
	placement_ctx_free(c->pc_ctx);
	c->pc_ctx = NULL;
}

/* The cache of pool's PG primaries (lock held); NULL on ENOMEM. */
static struct client_pgc *pgcache_pool_locked(struct atoll_cluster *c,
					      const struct osdmap_pool *pool)
{
	struct client_pgc *pc, *n;

	for (size_t i = 0; i < c->pc_npools; i++)
		if (c->pc_pools[i].pool == pool->id)
			return c->pc_pools[i].pg_num == pool->pg_num ? &c->pc_pools[i] : NULL;
	if (!c->pc_ctx && !(c->pc_ctx = placement_ctx_new(c->map)))
		return NULL;
	n = realloc(c->pc_pools, (c->pc_npools + 1) * sizeof(*n));
	if (!n)
		return NULL;
	c->pc_pools = n;
	pc = &n[c->pc_npools];
	pc->primary = malloc(((size_t)pool->pg_num + 1) * sizeof(*pc->primary));
	if (!pc->primary)
		return NULL;
	for (uint32_t i = 0; i < pool->pg_num; i++)
		pc->primary[i] = CLIENT_PGC_UNKNOWN;
	pc->pool = pool->id;
	pc->pg_num = pool->pg_num;
	c->pc_npools++;
	return pc;
}

/* The primary of pool's pg on the current map, -1 for none (lock held). */
static int32_t pg_primary_locked(struct atoll_cluster *c, const struct osdmap_pool *pool,
				 uint32_t pg)
{
	struct client_pgc *pc = pgcache_pool_locked(c, pool);
	int32_t acting[OSDMAP_SIZE_MAX], primary = -1;

	if (pc && pc->primary[pg] != CLIENT_PGC_UNKNOWN)
		return pc->primary[pg];
	if (pc)
		placement_ctx_acting(c->pc_ctx, pool, pg, acting, &primary);
	else
		placement_acting(c->map, pool, pg, acting, &primary);	/* ENOMEM: uncached */
	if (pc)
		pc->primary[pg] = primary;
	return primary;
}

/* Where r goes on the current map (lock held): 0 and the primary, or
 * -EAGAIN when its PG has no primary, -ENOENT when the pool is gone. */
static int req_target_locked(struct client_req *r, uint32_t *pg, int32_t *primary)
{
	const struct osdmap *map = r->c->map;
	const struct osdmap_pool *pool;

	pool = osdmap_pool(map, r->pool);
	if (!pool)
		return -ENOENT;
	if (r->fixed_pg) {
		if (r->pg >= pool->pg_num)
			return -ENOENT;
		*pg = r->pg;
	} else {
		*pg = placement_object_pg(pool, r->oid, r->oid_len);
	}
	*primary = pg_primary_locked(r->c, pool, *pg);
	if (*primary < 0 || !osdmap_osd_up(map, *primary))
		return -EAGAIN;
	return 0;
}

/* Sends (or resends) r to its primary on the current map. */
static void req_kick(struct client_req *r)
{
	struct atoll_cluster *c = r->c;
	struct osd_op_req req;
	struct client_session *s;
	struct msg_conn *old = NULL, *conn;
	const struct osdmap_osd *o;
	struct send_ctx *sctx;
	const void *data;
	size_t data_len;
	bool owned, resub = false, rx;
	struct msg *m;
	struct enc e;
	uint32_t pg;
	int32_t primary;
	int rc;

	pthread_mutex_lock(&c->lock);
	if (r->done || c->shutting_down) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	rc = req_target_locked(r, &pg, &primary);
	if (rc == -EAGAIN) {
		/* no primary: wait for a newer map */
		r->target = -1;
		r->need_epoch = c->map->epoch + 1;
		pthread_mutex_unlock(&c->lock);
		client_resubscribe(c);
		return;
	}
	if (rc < 0)
		goto out_fail;
	o = osdmap_osd(c->map, primary);
	s = session_get_locked(c, primary, o->addr, &old);
	if (!s) {
		rc = -ENOMEM;
		goto out_fail;
	}
	memset(&req, 0, sizeof(req));
	req.reqid.client = c->id;
	req.reqid.tid = r->tid;
	req.epoch = c->map->epoch;
	req.pool = r->pool;
	req.pg = pg;
	req.flags = r->req_flags | (r->sent_once ? OSD_REQF_RESEND : 0);
	req.oid = r->oid;
	req.oid_len = (uint32_t)r->oid_len;
	req.nops = r->op->nops;
	req.ops = r->op->ops;
	enc_init(&e);
	rc = osd_op_req_encode(&req, &e, &data, &data_len, &owned);
	m = rc < 0 ? NULL : msg_new(MT_OSD_OP, &e);
	enc_free(&e);
	if (!m) {
		if (owned)
			free((void *)data);
		rc = rc < 0 ? rc : -ENOMEM;
		goto out_fail;
	}
	sctx = malloc(sizeof(*sctx));
	if (!sctx) {
		msg_free(m);
		if (owned)
			free((void *)data);
		rc = -ENOMEM;
		goto out_fail;
	}
	if (data_len && owned) {
		msg_set_data_ref(m, (void *)data, data_len, free, (void *)data);
	} else if (data_len) {
		/* the caller's own buffer: hold the completion until sent */
		r->data_holds++;
		r->refs++;
		msg_set_data_ref(m, (void *)data, data_len, req_data_release, r);
	}
	r->attempt++;
	r->target = primary;
	r->sent_once = true;
	r->need_epoch = 0;
	r->refs++;
	sctx->r = r;
	sctx->attempt = r->attempt;
	conn = s->conn;
	sctx->conn = conn;
	rx = req_rx_direct(r);
	msg_conn_get(conn);
	pthread_mutex_unlock(&c->lock);

	if (old) {
		msg_conn_close(old);
		msg_conn_put(old);
	}
	rc = msg_call_rx(conn, m, 0, req_reply, sctx, rx ? &req_rx_ops : NULL, sctx);
	msg_conn_put(conn);
	if (rc < 0) {
		/* not sent (the session was closed under us): retry */
		pthread_mutex_lock(&c->lock);
		if (!r->done && sctx->attempt == r->attempt) {
			req_retry_later_locked(r);
			resub = true;
		}
		pthread_mutex_unlock(&c->lock);
		free(sctx);
		req_put(r);
		if (resub)
			client_resubscribe(c);
	}
	return;

out_fail:
	pthread_mutex_unlock(&c->lock);
	if (old) {
		msg_conn_close(old);
		msg_conn_put(old);
	}
	req_fail(r, rc);
}

int client_submit(struct atoll_cluster *c, struct client_req *r)
{
	bool on_loop;
	int rc;

	if (!c->connected) {
		client_req_free(r);
		return atoll__error(-ENOTCONN, "the cluster handle is not connected; call "
				    "atoll_cluster_connect first");
	}
	rc = client_completion_take(r->comp);
	if (rc < 0) {
		client_req_free(r);
		return rc;
	}
	r->bytes = r->op ? r->op->payload : 0;
	on_loop = msgr_on_loop(c->msgr);

	pthread_mutex_lock(&c->lock);
	/* Throttle: wait while the in-flight window is full; one op larger
	 * than the byte window goes alone. */
	while (!on_loop && !c->shutting_down &&
	       (c->inflight_ops >= c->throttle_ops ||
		(c->inflight_bytes && c->inflight_bytes + r->bytes > c->throttle_bytes))) {
		msgr_hold_flush();	/* what it waits for may be held */
		pthread_cond_wait(&c->throttle_cond, &c->lock);
	}
	if (c->shutting_down) {
		/* the header's shutdown rule: an op issued while shutdown runs
		 * (from a completion callback) is refused at once; checked
		 * under the lock, so it is never missed by client_fail_all */
		pthread_mutex_unlock(&c->lock);
		client_completion_untake(r->comp);
		client_req_free(r);
		return atoll__error(-ESHUTDOWN, "the cluster handle is shutting down");
	}
	c->inflight_ops++;
	c->inflight_bytes += r->bytes;
	r->tid = ++c->next_tid;
	r->refs = 1;
	r->next = c->reqs;
	if (c->reqs)
		c->reqs->prev = r;
	c->reqs = r;
	if (c->op_timeout_ms) {
		uint32_t ms = c->op_timeout_ms > UINT32_MAX ? UINT32_MAX
							   : (uint32_t)c->op_timeout_ms;

		r->refs++;
		r->timer = msgr_timer(c->msgr, ms, req_timeout_cb, r);
		if (!r->timer)
			r->refs--;
	}
	pthread_mutex_unlock(&c->lock);
	req_kick(r);
	return 0;
}

void client_map_changed(struct atoll_cluster *c)
{
	struct client_req **kick = NULL;
	struct msg_conn **close = NULL;
	size_t nkick = 0, nclose = 0, cap = 0;

	pthread_mutex_lock(&c->lock);
	if (!c->map) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	/* sessions to OSDs that went down or moved */
	close = calloc(c->nsessions + 1, sizeof(*close));
	for (size_t i = 0; close && i < c->nsessions; i++) {
		struct client_session *s = &c->sessions[i];
		const struct osdmap_osd *o = osdmap_osd(c->map, s->osd);

		if (s->conn && (!osdmap_osd_up(c->map, s->osd) || !o ||
				strcmp(o->addr, s->addr) != 0)) {
			close[nclose++] = s->conn;
			s->conn = NULL;
		}
	}
	for (struct client_req *r = c->reqs; r; r = r->next)
		cap++;
	kick = calloc(cap + 1, sizeof(*kick));
	for (struct client_req *r = c->reqs; kick && r; r = r->next) {
		uint32_t pg;
		int32_t primary = -1;
		int rc;

		if (r->target < 0) {
			if (r->need_epoch > c->map->epoch)
				continue;
		} else {
			rc = req_target_locked(r, &pg, &primary);
			if (rc == 0 && primary == r->target)
				continue;
		}
		r->refs++;
		kick[nkick++] = r;
	}
	pthread_mutex_unlock(&c->lock);

	for (size_t i = 0; i < nclose; i++) {
		msg_conn_close(close[i]);
		msg_conn_put(close[i]);
	}
	for (size_t i = 0; i < nkick; i++) {
		req_kick(kick[i]);
		req_put(kick[i]);
	}
	free(close);
	free(kick);
}

void client_sessions_close(struct atoll_cluster *c)
{
	struct client_session *s;
	size_t n;

	pthread_mutex_lock(&c->lock);
	s = c->sessions;
	n = c->nsessions;
	c->sessions = NULL;
	c->nsessions = 0;
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < n; i++) {
		if (!s[i].conn)
			continue;
		msg_conn_close(s[i].conn);
		msg_conn_put(s[i].conn);
	}
	free(s);
}

/* Fails every request still known (shutdown, after the messenger is
 * gone: nothing else can finish them). */
void client_fail_all(struct atoll_cluster *c, int err)
{
	for (;;) {
		struct client_req *r;

		pthread_mutex_lock(&c->lock);
		r = c->reqs;
		if (r)
			r->refs++;
		pthread_mutex_unlock(&c->lock);
		if (!r)
			return;
		req_fail(r, err);
		req_put(r);
	}
}
