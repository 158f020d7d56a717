/*
 * mds_main.c - atoll-mds: options, start-up (connect to the cluster,
 * create the pools and the file system when missing, replay the journal,
 * load the namespace), then serve.
 *
 * Requests are handled one at a time, in arrival order (a change is
 * applied in memory and answered; mds_journal.c's journaler journals
 * changes in batches behind the replies and mds_applier.c writes the
 * objects behind that), so the namespace needs no finer locking.  Who handles
 * one: the messenger's loop thread itself when the worker is idle with
 * nothing queued and the request cannot block (serve_inline: no wait for
 * the cluster, the journal or another client), which saves two thread
 * hand-offs per request; else the worker thread, in order behind what is
 * queued.  A change that other clients' leases cover is handled on the
 * loop thread up to its reply, then handed to the worker, which revokes
 * those leases (mds_lease.c: it waits for acks that arrive on the loop
 * thread) and replies; everything after it waits in the queue meanwhile,
 * so nobody is answered from the new state before the revokes are acked.
 * After a restart the worker first holds the reconnect window (below).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

#include <atoll/atoll.h>

#include "auth.h"
#include "mds_access.h"
#include "config.h"
#include "encode.h"
#include "fault.h"
#include "log.h"
#include "mono.h"
#include "mds.h"
#include "mds_metrics.h"
#include "msg.h"
#include "msg_config.h"
#include "privdrop.h"
#include "client/client.h"

#define SUB "mds"

static volatile sig_atomic_t g_stop;

struct work {
	struct msg *m;		/* NULL: time out the sessions whose connection is gone,
				 * and remove the replaced files done lingering */
	/* handled on the loop thread already: the revoke and reply are left */
	struct mds_req *rq;
	struct mds_reply *rp;
	struct work *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct work *head, *tail;
	bool busy;		/* the worker is handling a request */
	bool inline_ok;		/* the loop thread may handle requests (serve_inline) */
} q = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void serve_one(struct mds *mds, struct msg *m);
static bool serve_inline(struct mds *mds, struct msg *m);

/* Sessions whose connection is gone this long are evicted (0: never;
 * mds_session_timeout_ms); the loop thread checks every tick. */
static uint32_t session_timeout_ms = 60000;
/* How long an open waits for another client's writes in flight
 * (mds_inflight.c): the lease time, at least 5 s. */
static uint32_t inflight_wait_ms = 30000;
static struct msgr *g_msgr;
static char g_addr[64];
/* an expiry is queued (set by the loop thread, cleared by the worker) */
static bool expire_queued;

static void q_push(struct work *w)
{
	w->next = NULL;
	pthread_mutex_lock(&q.lock);
	if (q.tail)
		q.tail->next = w;
	else
		q.head = w;
	q.tail = w;
	pthread_cond_signal(&q.cond);
	pthread_mutex_unlock(&q.lock);
}

/* LANDED (a client's writes of a file it closed are durable) is taken
 * here on the loop thread, never behind the worker: the worker may be
 * waiting for it (an open of that file by another client).  True when m
 * was one (answered and freed). */
static bool serve_landed(struct mds *mds, struct msg_conn *c, struct msg *m)
{
	struct mds_req rq;
	struct mds_reply rp = { 0 };
	struct dec d;
	struct enc e;
	uint32_t op;

	/* every request passes here: only its op is read */
	if (mds_req_peek_op(m->front, m->front_len, &op) || op != MDS_OP_LANDED)
		return false;
	dec_init(&d, m->front, m->front_len);
	if (mds_req_decode(&d, &rq))
		return false;	/* the worker says why */
	mds_sess_seen(rq.client, c);
	mds_inflight_landed(rq.ino, rq.client, rq.ino2);
	mds_status_served(mds, rq.op, false);
	enc_init(&e);
	mds_reply_encode(&e, &rp);
	struct msg *r = msg_new(MT_MDS_REQUEST, &e);
	enc_free(&e);
	if (r)
		msg_reply(c, m, r);
	msg_free(m);
	return true;
}

static void on_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct mds *mds = arg;
	struct work *w;

	if (m->type == MT_MDS_STATUS) {
		/* answered here, not behind the worker (mds_status.c) */
		mds_status_reply(c, m);
		msg_free(m);
		return;
	}
	if (m->type == MT_MDS_FLUSH) {
		/* a client's fsync waits for the journal: no gathering */
		mds_journal_hurry(mds);
		msg_free(m);
		return;
	}
	if (m->type != MT_MDS_REQUEST) {
		log_warn(SUB, "unexpected message type %u from %s; ignoring it",
			 m->type, msg_conn_addr(c));
		msg_free(m);
		return;
	}
	mds_status_client_request(c);
	if (serve_landed(mds, c, m))
		return;
	/* the worker idle, nothing queued: nothing handled before it is
	 * still waiting for its reply, so order is kept */
	pthread_mutex_lock(&q.lock);
	bool mine = q.inline_ok && !q.head && !q.busy;
	pthread_mutex_unlock(&q.lock);
	if (mine && serve_inline(mds, m))
		return;
	w = calloc(1, sizeof(*w));
	if (!w) {
		msg_free(m);
		return;
	}
	w->m = m;
	q_push(w);
}

static void on_closed(void *arg, struct msg_conn *c, int err)
{
	(void)arg;
	(void)err;
	mds_sess_closed(c);	/* its session times out unless it comes back */
	mds_lease_closed(c);
	mds_status_client_closed(c);
}

static void serve_finish(struct mds *mds, struct msg *m, struct mds_req *rq,
			 struct mds_reply *rp);
static void serve_reply(struct mds *mds, struct msg *m, struct mds_req *rq,
			struct mds_reply *rp);

static bool is_evicted(const struct mds *mds, uint64_t client)
{
	for (size_t i = 0; i < mds->nevicted; i++)
		if (mds->evicted[i] == client)
			return true;
	return false;
}

/* The directories rq reads or changes that another client holds
 * exclusively: into chg (room for 4); how many. */
static uint32_t excl_held(struct mds *mds, struct msg_conn *c, const struct mds_req *rq,
			  struct mds_chg *chg)
{
	uint64_t dirs[4];
	unsigned n = mds_cache_req_dirs(mds, rq, dirs);

	return n ? mds_lease_excl_others(c, dirs, n, chg) : 0;
}

/* Worker: when another client holds a directory of rq exclusively, ends
 * that (it acks once it sent its asynchronous removals there) and puts m
 * back at the end of the queue, behind those removals: true (m is the
 * queue's now). */
static bool excl_wait(struct mds *mds, struct msg *m, const struct mds_req *rq)
{
	struct mds_chg chg[4];
	uint32_t n = excl_held(mds, m->conn, rq, chg);

	if (!n)
		return false;
	mds_lease_revoke(m->conn, chg, n);
	struct work *w = calloc(1, sizeof(*w));
	if (!w)
		return false;	/* handled now: it may miss those removals */
	w->m = m;
	q_push(w);
	return true;
}

static void serve_one(struct mds *mds, struct msg *m)
{
	struct mds_req *rq = malloc(sizeof(*rq));
	struct mds_reply *rp = calloc(1, sizeof(*rp));
	struct dec d;

	if (!rq || !rp)
		goto out;
	dec_init(&d, m->front, m->front_len);
	if (mds_req_decode(&d, rq)) {
		log_warn(SUB, "a malformed request from %s; ignoring it",
			 msg_conn_addr(m->conn));
		mds_status_served(mds, 0, true);
		goto out;
	}
	mds_sess_seen(rq->client, m->conn);
	if (is_evicted(mds, rq->client)) {
		char why[200];
		mds_sess_reason(rq->client, why, sizeof(why));
		log_warn(SUB, "refusing %s from client %llu: it was evicted (%s); it must "
			 "remount", mds_op_name(rq->op), (unsigned long long)rq->client, why);
		/* the client tells its user why (doc/fs-design.md, "What
		 * an evicted client is told") */
		rp->rc = MDS_RC_EVICTED;
		snprintf(rp->target, sizeof(rp->target), "the MDS at %s evicted client %llu: %s",
			 g_addr, (unsigned long long)rq->client, why);
		goto answer;
	}
	/* the client's MDS caps (mds_access.c): before anything else */
	pthread_mutex_lock(&mds->lock);
	rp->rc = mds_access_check(mds, m->conn, rq);
	pthread_mutex_unlock(&mds->lock);
	if (rp->rc)
		goto answer;
	if (excl_wait(mds, m, rq)) {
		free(rp);
		free(rq);
		return;
	}
	/* close-to-open: another client's writes of a file it closed
	 * land first (mds_inflight.c) */
	if ((rq->op == MDS_OP_OPEN || (rq->op == MDS_OP_SETATTR && (rq->setmask & MDS_SET_SIZE))) &&
	    !(rq->lflags & MDS_L_REPLAY))
		mds_inflight_wait(rq->ino, rq->client, inflight_wait_ms);
	mds->nchg = 0;
	mds->cur_conn = m->conn;
	mds->cur_op = rq->op;
	mds->cur_seq = 0;
	uint64_t t0 = mono_now_ns();
	mds_handle(mds, rq, rp);
	mds_metrics_request(rq->op, mono_now_ns() - t0);
	rp->jseq = mds->cur_seq;	/* unsafe until MT_MDS_SAFE says so */
	mds->cur_conn = NULL;
	mds->cur_op = 0;
	serve_finish(mds, m, rq, rp);
	return;
answer:
	serve_reply(mds, m, rq, rp);
	return;
out:
	free(rp);
	free(rq);
	msg_free(m);
}

/* The rest of a request handled up to its reply: the revoke of the
 * other clients' leases it changed (they ack, or their lease runs out;
 * the worker only: the acks arrive on the loop thread), then the reply.
 * Frees m, rq, rp. */
static void serve_finish(struct mds *mds, struct msg *m, struct mds_req *rq,
			 struct mds_reply *rp)
{
	/* the others' caches first (they ack or their lease runs out), then
	 * the requester's: its reply lists the changes and grants leases */
	mds_lease_revoke(m->conn, mds->chg, mds->nchg);
	rp->nchg = mds->nchg;
	memcpy(rp->chg, mds->chg, mds->nchg * sizeof(*rp->chg));
	mds_lease_grant(m->conn, rq, rp);
	serve_reply(mds, m, rq, rp);
}

static void serve_reply(struct mds *mds, struct msg *m, struct mds_req *rq,
			struct mds_reply *rp)
{
	struct enc e;

	mds_status_served(mds, rq->op, false);
	log_debug(SUB, "%s ino %llu '%s' -> %d", mds_op_name(rq->op),
		  (unsigned long long)rq->ino, rq->name, rp->rc);
	enc_init(&e);
	mds_reply_encode(&e, rp);
	struct msg *r = msg_new(MT_MDS_REQUEST, &e);
	enc_free(&e);
	if (r)
		msg_reply(m->conn, m, r);
	if (mds->crash_now) {
		/* fault injection: the reply goes out, the change never
		 * reaches the journal; only the client's resend saves it */
		usleep(300000);
		log_warn(SUB, "fault injection: exiting with answered changes not journaled");
		_exit(9);
	}
	free(rp->ents);
	free(rp->plus);
	free(rp->value);
	free(rp);
	free(rq);
	msg_free(m);
}

/* Can the loop thread handle rq without blocking?  Not a resend (one may
 * wait for the journal), nor a truncate (waits for the applier), nor a
 * session (writes fs.sessions), nor extended attributes (loaded from the
 * cluster on first use); and the journal queue has room (a full one
 * makes a change wait for the journaler), and everything it reads is in
 * the metadata cache (a miss loads from the cluster: mds_cache_has_req),
 * and no other client holds a directory it touches exclusively
 * (excl_wait).  The ino_hw bump of mds_txn_alloc_ino, one synchronous write
 * per 4,096 new inodes, is allowed (also for an INOS range). */
static bool inline_ok(struct mds *mds, struct msg_conn *c, const struct mds_req *rq)
{
	struct mds_chg chg[4];

	if ((rq->lflags & MDS_L_REPLAY) || !mds_cache_has_req(mds, rq) ||
	    excl_held(mds, c, rq, chg))
		return false;
	switch (rq->op) {
	case MDS_OP_OPEN:
		/* another client's writes in flight: the worker waits */
		return !mds_inflight_other(rq->ino, rq->client);
	case MDS_OP_LOOKUP:
	case MDS_OP_GETATTR:
	case MDS_OP_READLINK:
	case MDS_OP_READDIR:
		return true;
	case MDS_OP_STATFS:
		return mds_statfs_fresh();	/* else the worker waits for the monitor */
	case MDS_OP_INOS:
		return true;
	case MDS_OP_SETATTR:
		if (rq->setmask & MDS_SET_SIZE)
			return false;
		/* fall through */
	case MDS_OP_MKNOD:
	case MDS_OP_MKDIR:
	case MDS_OP_SYMLINK:
	case MDS_OP_UNLINK:
	case MDS_OP_RMDIR:
	case MDS_OP_RENAME:
	case MDS_OP_LINK:
	case MDS_OP_CLOSE:
	case MDS_OP_FSYNC:
		return mds_journal_room(mds);
	default:
		return false;
	}
}

/* The loop thread, the worker idle and nothing queued: handles m when
 * it cannot block (inline_ok), up to its reply; a change that other
 * clients' leases cover goes on to the worker for the revoke.  False:
 * m is untouched, for the worker. */
static bool serve_inline(struct mds *mds, struct msg *m)
{
	struct mds_req *rq = malloc(sizeof(*rq));
	struct mds_reply *rp = calloc(1, sizeof(*rp));
	/* made before the change: a revoke must be able to go to the worker
	 * (this thread cannot wait for the acks, which arrive on it) */
	struct work *w = calloc(1, sizeof(*w));
	struct dec d;

	if (!rq || !rp || !w)
		goto no;
	dec_init(&d, m->front, m->front_len);
	if (mds_req_decode(&d, rq))
		goto no;	/* the worker says why */
	mds_sess_seen(rq->client, m->conn);
	if (!inline_ok(mds, m->conn, rq) || is_evicted(mds, rq->client) ||
	    mds_access_limited(mds, m->conn))
		goto no;
	mds->nchg = 0;
	mds->cur_conn = m->conn;
	mds->cur_op = rq->op;
	mds->cur_seq = 0;
	uint64_t t0 = mono_now_ns();
	mds_handle(mds, rq, rp);
	mds_metrics_request(rq->op, mono_now_ns() - t0);
	rp->jseq = mds->cur_seq;
	mds->cur_conn = NULL;
	mds->cur_op = 0;
	if (mds_lease_revoke_needed(m->conn, mds->chg, mds->nchg)) {
		w->m = m;
		w->rq = rq;
		w->rp = rp;
		q_push(w);
		return true;
	}
	free(w);
	serve_finish(mds, m, rq, rp);
	return true;
no:
	free(w);
	free(rp);
	free(rq);
	return false;
}

/* ---- the reconnect window ---------------------------------------------------
 *
 * After a restart the MDS serves only the clients' resends (MDS_L_REPLAY),
 * their "resends done" (SESSION with MDS_L_REPLAY) and their SESSION_END
 * (an unmount: the client is done and not evicted) until every client
 * with a session from before (fs.sessions) is done, or reconnect_ms
 * passed; every other request waits, in order.  A client not back by then
 * is evicted: its session goes, it is blocklisted in the OSD map (the
 * OSDs refuse its writes), and the loss is logged. */

#define EVICT_BLOCKLIST_SECONDS MDS_EVICT_SECONDS

static bool req_peek(const struct msg *m, struct mds_req *rq)
{
	struct dec d;

	dec_init(&d, m->front, m->front_len);
	return mds_req_decode(&d, rq) == 0;
}

struct released {
	struct mds *mds;
	uint64_t *gone;		/* orphans nobody holds open any more */
	size_t ngone, cap;
};

static void release_open(void *arg, uint64_t ino, int count)
{
	struct released *r = arg;
	struct mds_node *n = mds_cache_get(r->mds, ino);

	if (!n)
		return;
	n->opens = n->opens > count ? n->opens - count : 0;
	if (n->opens || n->a.nlink || ino == MDS_ROOT_INO)
		return;
	if (r->ngone == r->cap) {
		size_t nc = r->cap ? 2 * r->cap : 16;
		uint64_t *g = realloc(r->gone, nc * sizeof(*g));
		if (!g)
			return;	/* purged at the next start */
		r->gone = g;
		r->cap = nc;
	}
	r->gone[r->ngone++] = ino;
}

/* Under mds->lock: removes the orphans inos (unlinked, open nowhere)
 * and purges their data, as the last CLOSE would, and revokes the other
 * clients' leases on them.  The number removed. */
static size_t orphans_remove(struct mds *mds, const uint64_t *inos, size_t n)
{
	struct mds_txn *t = n ? malloc(sizeof(*t)) : NULL;
	size_t done = 0;

	for (size_t i = 0; t && i < n; i++) {
		mds_txn_init(t);
		struct mds_node *node = mds_cache_get(mds, inos[i]);
		if (!node || node->a.nlink || node->opens || inos[i] == MDS_ROOT_INO ||
		    !mds_txn_inode(mds, t, inos[i]))
			continue;	/* named again, or re-opened: not an orphan */
		mds_txn_remove(t, inos[i], true);
		mds->nchg = 0;
		mds_txn_commit(mds, t);
		done++;
		uint32_t nc = mds->nchg;
		struct mds_chg chg[MDS_CHG_MAX];
		memcpy(chg, mds->chg, nc * sizeof(*chg));
		pthread_mutex_unlock(&mds->lock);
		mds_lease_revoke(NULL, chg, nc);
		pthread_mutex_lock(&mds->lock);
	}
	free(t);
	return done;
}

/* Under mds->lock: the files the client held open are closed; the
 * orphans among them are removed (orphans_remove).  Their number. */
static size_t release_opens(struct mds *mds, uint64_t client)
{
	struct released r = { .mds = mds };

	mds_sess_take_opens(client, release_open, &r);
	size_t n = orphans_remove(mds, r.gone, r.ngone);
	free(r.gone);
	return n;
}

/* After the reconnect window (or at once when there is none): the
 * orphans found at start, and those whose last name or open went in the
 * window, are removed unless a client re-counted an open of theirs
 * (doc/fs-design.md, "Open files across a restart"). */
static void orphans_after_window(struct mds *mds)
{
	pthread_mutex_lock(&mds->lock);
	mds->reconnecting = false;
	uint64_t *inos = mds->orphans;
	size_t n = mds->norphans, kept = 0;
	mds->orphans = NULL;
	mds->norphans = mds->orphans_cap = 0;
	size_t removed = orphans_remove(mds, inos, n);
	for (size_t i = 0; i < n; i++) {
		struct mds_node *node = mds_cache_get(mds, inos[i]);
		kept += node && node->opens > 0;
	}
	mds_status_sync(mds);
	pthread_mutex_unlock(&mds->lock);
	free(inos);
	if (n)
		log_info(SUB, "%zu unlinked file(s) open before the restart: %zu removed with "
			 "their data, %zu still open on a client", n, removed, kept);
}

/* Evicts a client (the worker): refused from now on (persisted in
 * fs.evicted), its session dropped, its opens released, blocklisted in
 * the OSD map.  why: a sentence saying why, logged and told to the
 * client when it asks again. */
static void evict(struct mds *mds, uint64_t client, const char *why)
{
	char cmd[160];
	char *status = NULL;

	log_warn(SUB, "evicting client %llu: %s; it is blocklisted for %d s (the OSDs refuse "
		 "its writes): remount it", (unsigned long long)client, why,
		 EVICT_BLOCKLIST_SECONDS);
	mds_sess_set_reason(client, why);
	pthread_mutex_lock(&mds->lock);
	/* refused first (also after a restart), then the session goes */
	int ret = mds_session_evicted_add(mds, client);
	if (ret)
		log_warn(SUB, "cannot persist the eviction of client %llu (%s): a restarted "
			 "MDS would not refuse it", (unsigned long long)client,
			 atoll_strerror(ret));
	ret = mds_session_drop(mds, client);
	size_t purged = release_opens(mds, client);
	mds_status_sync(mds);
	pthread_mutex_unlock(&mds->lock);
	if (purged)
		log_info(SUB, "client %llu held %zu unlinked file(s) open: purged",
			 (unsigned long long)client, purged);
	if (ret)
		log_warn(SUB, "cannot drop the session of client %llu: %s",
			 (unsigned long long)client, atoll_strerror(ret));
	snprintf(cmd, sizeof(cmd),
		 "{\"prefix\":\"osd blocklist add\",\"client\":\"%llu\",\"seconds\":%d}",
		 (unsigned long long)client, EVICT_BLOCKLIST_SECONDS);
	ret = atoll_mon_command(mds->cl, cmd, &status, NULL, NULL);
	if (ret)
		log_error(SUB, "cannot blocklist the evicted client %llu (%s): %s; its late "
			  "writes may still land", (unsigned long long)client,
			  atoll_strerror(ret), status ? status : "");
	else
		atoll_cluster_wait_for_latest_map(mds->cl);
	atoll_free(status);
}

static void reconnect_window(struct mds *mds, unsigned ms)
{
	size_t n = mds->nsess, nback = 0;
	uint64_t *exp = n ? malloc(n * sizeof(*exp)) : NULL;
	bool *back = n ? calloc(n, sizeof(*back)) : NULL;
	struct work *held = NULL, **htail = &held;
	struct mds_req *rq = malloc(sizeof(*rq));

	if (!n || !exp || !back || !rq)
		goto out;
	memcpy(exp, mds->sess, n * sizeof(*exp));
	pthread_mutex_lock(&mds->lock);
	mds->reconnecting = true;	/* orphans wait for the clients' re-counts */
	pthread_mutex_unlock(&mds->lock);
	mds_status_set_state(MDS_STATE_RECONNECT);
	mds_role_set_state(MDS_BEACON_RECONNECT);
	log_info(SUB, "reconnect window: waiting up to %u ms for %zu client(s) to resend "
		 "what was not journaled", ms, n);
	uint64_t deadline = mono_now_ms() + ms;
	while (!g_stop && nback < n) {
		pthread_mutex_lock(&q.lock);
		while (!q.head && !g_stop) {
			uint64_t now = mono_now_ms();
			if (now >= deadline)
				break;
			struct timespec ts = deadline_ms(CLOCK_REALTIME, deadline - now);
			pthread_cond_timedwait(&q.cond, &q.lock, &ts);
		}
		struct work *w = q.head;
		if (w) {
			q.head = w->next;
			if (!q.head)
				q.tail = NULL;
		}
		pthread_mutex_unlock(&q.lock);
		if (!w)
			break;	/* the window is over */
		bool ok = req_peek(w->m, rq);
		/* SESSION_END too: a client unmounting right after the
		 * restart sends it once its resends are answered; it changes
		 * nothing a resend depends on, and held until the window's
		 * end it kept the client's unmount waiting for clients that
		 * will never come back */
		bool ending = ok && rq->op == MDS_OP_SESSION_END;
		if (ok && ((rq->lflags & MDS_L_REPLAY) || ending)) {
			if (rq->op == MDS_OP_SESSION || ending)
				for (size_t i = 0; i < n; i++)
					if (exp[i] == rq->client && !back[i]) {
						back[i] = true;
						nback++;
					}
			serve_one(mds, w->m);
			free(w);
			continue;
		}
		w->next = NULL;	/* waits for the window's end */
		*htail = w;
		htail = &w->next;
	}
	char why[200];
	snprintf(why, sizeof(why), "it did not reconnect within %u ms of the MDS's restart, so "
		 "the changes the MDS had answered it but not journaled are lost", ms);
	for (size_t i = 0; i < n; i++)
		if (!back[i])
			evict(mds, exp[i], why);
	log_info(SUB, "reconnect window over: %zu of %zu client(s) back", nback, n);
	/* what waited goes first, in its order */
	pthread_mutex_lock(&q.lock);
	if (held) {
		*htail = q.head;
		if (!q.head)
			q.tail = (struct work *)((char *)htail - offsetof(struct work, next));
		q.head = held;
	}
	pthread_mutex_unlock(&q.lock);
out:
	mds_status_set_state(MDS_STATE_ACTIVE);
	mds_role_set_state(MDS_BEACON_ACTIVE);
	free(rq);
	free(back);
	free(exp);
}

/* ---- sessions whose connection is gone ----------------------------------------
 *
 * A client that dies without unmounting leaves its session (and its open
 * files) behind.  The loop thread looks every tick for clients whose
 * connection is gone for session_timeout_ms (mds_session.c) and queues
 * one work item for the worker, which evicts them in order with the
 * requests (so the loop thread never races it on the namespace). */

static uint32_t expire_tick_ms(void)
{
	uint32_t t = session_timeout_ms / 4;

	return t < 100 ? 100 : t > 1000 ? 1000 : t;
}

static void expire_tick(void *arg)
{
	struct mds *mds = arg;
	uint64_t id;

	if (!__atomic_load_n(&expire_queued, __ATOMIC_ACQUIRE) &&
	    ((session_timeout_ms && mds_sess_expired(session_timeout_ms, &id, 1)) ||
	     mds_linger_due())) {
		struct work *w = calloc(1, sizeof(*w));
		if (w) {
			__atomic_store_n(&expire_queued, true, __ATOMIC_RELEASE);
			q_push(w);
		}
	}
	if (!g_stop)
		msgr_timer(g_msgr, expire_tick_ms(), expire_tick, mds);
}

/* The files a rename replaced whose time to linger is over
 * (mds_linger.c): removed, unless open (their last close does it).  A
 * few at a time: each may wait for revokes, and the requests queued
 * meanwhile go between two batches.  True when more are due. */
static bool linger_sweep(struct mds *mds)
{
	uint64_t inos[32];
	size_t n = mds_linger_take(inos, 32);

	if (n) {
		pthread_mutex_lock(&mds->lock);
		orphans_remove(mds, inos, n);
		pthread_mutex_unlock(&mds->lock);
	}
	return mds_linger_due();
}

static void expire_sessions(struct mds *mds)
{
	uint64_t ids[64];
	size_t n = session_timeout_ms ? mds_sess_expired(session_timeout_ms, ids, 64) : 0;
	char why[200];

	snprintf(why, sizeof(why), "its connection was gone for %u ms (mds_session_timeout_ms) "
		 "and it did not come back: it died or lost the network without unmounting",
		 session_timeout_ms);
	for (size_t i = 0; i < n; i++) {
		/* it may have come back since the loop thread looked */
		if (!mds_sess_gone(ids[i], session_timeout_ms))
			continue;
		pthread_mutex_lock(&mds->lock);
		bool known = mds_session_known(mds, ids[i]) && !is_evicted(mds, ids[i]);
		if (!known)
			release_opens(mds, ids[i]);	/* none: it ended its session */
		pthread_mutex_unlock(&mds->lock);
		if (known)
			evict(mds, ids[i], why);
		mds_sess_forget(ids[i]);
	}
	struct work *w = linger_sweep(mds) ? calloc(1, sizeof(*w)) : NULL;
	if (w)
		q_push(w);	/* the next batch, behind what is queued */
	else
		__atomic_store_n(&expire_queued, false, __ATOMIC_RELEASE);
}

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
	pthread_cond_broadcast(&q.cond);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: atoll-mds [options]\n"
		"  --conf FILE        atoll.conf (default: $ATOLL_CONF, ./atoll.conf, /etc/atoll/atoll.conf)\n"
		"  -m, --mon LIST     the monitors, IP:PORT[,IP:PORT...] (mon_host)\n"
		"  --addr IP:PORT     where clients reach this MDS once it is the active one\n"
		"                     (mds_addr; default 127.0.0.1:6800)\n"
		"  --name NAME        this daemon's name, mds.NAME (mds_name; [A-Za-z0-9_-];\n"
		"                     default: from the address, e.g. 127-0-0-1-6800)\n"
		"  --meta-pool NAME   metadata pool (mds_meta_pool; default fs_meta; created if missing)\n"
		"  --data-pool NAME   data pool (mds_data_pool; default fs_data; created if missing)\n"
		"  --lease-ms MS      how long clients may cache metadata (mds_lease_ms; default\n"
		"                     30000; 0: no leases, clients cache for 1 s)\n"
		"  --lease-max N      lease records held at most (mds_lease_max; default 1048576)\n"
		"  --early-reply 0|1  answer a change once applied in memory and journal in\n"
		"                     batches (mds_early_reply; default 1; 0: journal each\n"
		"                     change before its reply)\n"
		"  --reconnect-ms MS  after a restart, how long clients have to resend what\n"
		"                     was not journaled before others' requests are served and\n"
		"                     the missing ones evicted (mds_reconnect_ms; default 10000)\n"
		"  --session-timeout-ms MS  a client whose connection is gone this long is\n"
		"                     evicted: its session ends, the files it held open close\n"
		"                     (mds_session_timeout_ms; default 60000; 0: never)\n"
		"  --cache-mb MB      memory for cached metadata (mds_cache_mb; default 256)\n"
		"  (in atoll.conf only: mds_journal_gather_ms, mds_apply_gather_ms,\n"
		"   mds_standby_follow_ms; doc/daemons.md)\n"
		"  --log FILE         log file (default: stderr)\n"
		"  --log-level LVL    error, warn, info, debug, trace (default info)\n"
		"  --user NAME        started as root: become NAME once the port is open\n"
		"  -h, --help         this text\n"
		"  --version          the version, and whether this build has the test-only\n"
		"                     fault injection (ATOLL_FAULTS, doc/testing.md)\n"
		"The first start on an empty metadata pool creates the file system.  Any\n"
		"number of atoll-mds may run for the same pools: the monitors make one the\n"
		"active one, the others wait as standbys (doc/fs-design.md).\n");
}

/* The [mds] option key of atoll.conf, a number of milliseconds up to max
 * (def when it is not set), into *out; false (said on stderr) when it is
 * not such a number. */
static bool conf_ms(const struct config *conf, const char *key, uint64_t def,
		    unsigned long max, uint64_t *out)
{
	const char *v = config_get(conf, "mds", key, NULL);
	char *end = NULL;
	unsigned long n = v ? strtoul(v, &end, 10) : def;

	if ((v && (*end || end == v)) || n > max) {
		fprintf(stderr, "atoll-mds: %s '%s' is not a number of milliseconds up to %lu; "
			"use e.g. %s = %llu in [mds] of atoll.conf\n", key, v, max, key,
			(unsigned long long)def);
		return false;
	}
	*out = n;
	return true;
}

static int ensure_pool(struct atoll_cluster *cl, const char *name)
{
	struct atoll_pool_options o = { .size_of = sizeof(o) };
	int ret;

	/* an existing pool needs no create (which needs `allow rw` on the
	 * monitors: an MDS with `profile mds` uses the pools it is given) */
	if (atoll_pool_lookup(cl, name) >= 0)
		return 0;
	ret = atoll_pool_create(cl, name, &o);

	if (ret == -EEXIST)
		return 0;
	if (ret == 0)
		log_info(SUB, "created pool '%s'", name);
	return ret;
}

int main(int argc, char **argv)
{
	const char *conf_path = NULL, *mon = NULL, *addr = NULL, *meta = NULL,
		   *data = NULL, *logf = NULL, *lvl = NULL, *lease = NULL, *lmax = NULL,
		   *early = NULL, *recon = NULL, *stimeout = NULL, *cache = NULL,
		   *name = NULL, *user = NULL;
	static const struct option lo[] = {
		{ "conf", required_argument, NULL, 'c' },
		{ "mon", required_argument, NULL, 'm' },
		{ "addr", required_argument, NULL, 'a' },
		{ "name", required_argument, NULL, 'N' },
		{ "meta-pool", required_argument, NULL, 'M' },
		{ "data-pool", required_argument, NULL, 'D' },
		{ "log", required_argument, NULL, 'l' },
		{ "lease-ms", required_argument, NULL, 'T' },
		{ "lease-max", required_argument, NULL, 'X' },
		{ "early-reply", required_argument, NULL, 'E' },
		{ "reconnect-ms", required_argument, NULL, 'R' },
		{ "session-timeout-ms", required_argument, NULL, 'S' },
		{ "cache-mb", required_argument, NULL, 'C' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "user", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct config *conf = NULL;
	struct mds mds = { 0 };
	struct msgr *msgr = NULL;
	char err[256], bound[64];
	int c, ret, rc = 1;

	while ((c = getopt_long(argc, argv, "m:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c': conf_path = optarg; break;
		case 'm': mon = optarg; break;
		case 'a': addr = optarg; break;
		case 'N': name = optarg; break;
		case 'M': meta = optarg; break;
		case 'D': data = optarg; break;
		case 'l': logf = optarg; break;
		case 'L': lvl = optarg; break;
		case 'T': lease = optarg; break;
		case 'X': lmax = optarg; break;
		case 'E': early = optarg; break;
		case 'R': recon = optarg; break;
		case 'S': stimeout = optarg; break;
		case 'C': cache = optarg; break;
		case 'U': user = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': {
			const char *v;

			atoll_version(&v);
			printf("atoll-mds %s\nfault injection: %s\n", v, fault_enabled() ? "on" : "off");
			return 0;
		}
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "atoll-mds: unexpected argument '%s'; see --help\n", argv[optind]);
		return 2;
	}
	if (config_load(&conf, conf_path, err, sizeof(err)) < 0) {
		fprintf(stderr, "atoll-mds: %s\n", err);
		return 1;
	}
	if (user && config_set_override(conf, "user", user) < 0) {
		fprintf(stderr, "atoll-mds: --user '%s' is not a valid user name\n", user);
		goto out;
	}
	if (!addr)
		addr = config_get(conf, "mds", "mds_addr", NULL);
	if (!addr)
		addr = "127.0.0.1:6800";
	if (!name)
		name = config_get(conf, "mds", "mds_name", NULL);
	char defname[OSDMAP_MDS_NAME_MAX + 1];
	if (!name) {
		/* one daemon per address: a restart there is the same daemon */
		snprintf(defname, sizeof(defname), "%s", addr);
		for (char *p = defname; *p; p++)
			if (*p == '.' || *p == ':')
				*p = '-';
		name = defname;
	}
	{
		size_t nl = strlen(name);
		bool ok = nl >= 1 && nl <= OSDMAP_MDS_NAME_MAX;
		for (size_t i = 0; ok && i < nl; i++)
			ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
			     (name[i] >= '0' && name[i] <= '9') || name[i] == '_' || name[i] == '-';
		if (!ok) {
			fprintf(stderr, "atoll-mds: the name '%s' is not 1 to %d of [A-Za-z0-9_-]; "
				"use e.g. --name a (the daemon mds.a)\n", name, OSDMAP_MDS_NAME_MAX);
			goto out;
		}
	}
	if (!meta)
		meta = config_get(conf, "mds", "mds_meta_pool", NULL);
	if (!data)
		data = config_get(conf, "mds", "mds_data_pool", NULL);
	snprintf(mds.meta_pool, sizeof(mds.meta_pool), "%s", meta ? meta : "fs_meta");
	snprintf(mds.data_pool, sizeof(mds.data_pool), "%s", data ? data : "fs_data");
	if (!lvl)
		lvl = config_get(conf, "mds", "log_level", NULL);
	if (!logf)
		logf = config_get(conf, "mds", "log_file", NULL);
	if (!lease)
		lease = config_get(conf, "mds", "mds_lease_ms", NULL);
	if (!lmax)
		lmax = config_get(conf, "mds", "mds_lease_max", NULL);
	if (!early)
		early = config_get(conf, "mds", "mds_early_reply", NULL);
	if (early && strcmp(early, "0") && strcmp(early, "1")) {
		fprintf(stderr, "atoll-mds: mds_early_reply '%s' is neither 0 nor 1; use "
			"--early-reply 1 (batched journal) or 0 (journal each change)\n", early);
		goto out;
	}
	mds.journal.early = !early || !strcmp(early, "1");
	if (!recon)
		recon = config_get(conf, "mds", "mds_reconnect_ms", NULL);
	char *rend = NULL;
	unsigned long reconnect_ms = recon ? strtoul(recon, &rend, 10) : 10000;
	if ((recon && (*rend || rend == recon)) || reconnect_ms > 600000) {
		fprintf(stderr, "atoll-mds: mds_reconnect_ms '%s' is not a number of milliseconds "
			"up to 600000; use e.g. --reconnect-ms 10000\n", recon);
		goto out;
	}
	if (!stimeout)
		stimeout = config_get(conf, "mds", "mds_session_timeout_ms", NULL);
	unsigned long st_ms = stimeout ? strtoul(stimeout, &rend, 10) : 60000;
	if ((stimeout && (*rend || rend == stimeout)) || st_ms > 86400000) {
		fprintf(stderr, "atoll-mds: mds_session_timeout_ms '%s' is not a number of "
			"milliseconds up to 86400000; use e.g. --session-timeout-ms 60000\n",
			stimeout);
		goto out;
	}
	session_timeout_ms = (uint32_t)st_ms;
	if (!cache)
		cache = config_get(conf, "mds", "mds_cache_mb", NULL);
	char *cend = NULL;
	unsigned long long cache_mb = cache ? strtoull(cache, &cend, 10) : MDS_CACHE_MB;
	if ((cache && (*cend || cend == cache)) || cache_mb < 1 || cache_mb > (1ull << 30)) {
		fprintf(stderr, "atoll-mds: mds_cache_mb '%s' is not a number of MiB of at "
			"least 1; use e.g. --cache-mb 256\n", cache);
		goto out;
	}
	mds.cache.max = (uint64_t)cache_mb << 20;
	uint64_t beacon_ms, pending_max = 0;
	if (!conf_ms(conf, "mds_beacon_interval_ms", 500, 60000, &beacon_ms))
		goto out;
	uint64_t follow_ms;
	if (!conf_ms(conf, "mds_standby_follow_ms", MDS_STANDBY_FOLLOW_MS, 60000, &follow_ms))
		goto out;
	{
		/* doc/limits.md, "MDS" */
		int64_t v[2];
		char lerr[512];

		if (config_get_int(conf, "mds", "mds_max_sessions", 1024, 1, 1 << 24, &v[0],
				   lerr, sizeof(lerr)) < 0 ||
		    config_get_int(conf, "mds", "mds_session_max_open_files", 16384, 1, 1 << 24,
				   &v[1], lerr, sizeof(lerr)) < 0 ||
		    config_get_size(conf, "mds", "mds_session_max_pending_bytes", 8u << 20,
				    &pending_max, lerr, sizeof(lerr)) < 0) {
			fprintf(stderr, "atoll-mds: %s\n", lerr);
			goto out;
		}
		if (pending_max < (1u << 20)) {
			fprintf(stderr, "atoll-mds: mds_session_max_pending_bytes must be at least "
				"1M\n");
			goto out;
		}
		mds.max_sessions = (uint32_t)v[0];
		mds.max_open_per_session = (uint32_t)v[1];
	}
	if (!conf_ms(conf, "mds_apply_gather_ms", MDS_APPLY_GATHER_MS, 10000,
		     &mds.applier.gather_ms) ||
	    !conf_ms(conf, "mds_journal_gather_ms", MDS_JOURNAL_GATHER_MS, 10000,
		     &mds.journal.gather_ms))
		goto out;
	char *end = NULL;
	unsigned long lease_ms = lease ? strtoul(lease, &end, 10) : 30000;
	if ((lease && (*end || end == lease)) || lease_ms > 3600000) {
		fprintf(stderr, "atoll-mds: mds_lease_ms '%s' is not a number of milliseconds "
			"up to 3600000; use e.g. --lease-ms 30000\n", lease);
		goto out;
	}
	unsigned long long lease_max = lmax ? strtoull(lmax, &end, 10) : 1048576;
	if ((lmax && (*end || end == lmax)) || lease_max < 16) {
		fprintf(stderr, "atoll-mds: mds_lease_max '%s' is not a number of at least 16; "
			"use e.g. --lease-max 1048576\n", lmax);
		goto out;
	}
	inflight_wait_ms = lease_ms > 5000 ? (uint32_t)lease_ms : 5000;
	if (mds_lease_init((uint32_t)lease_ms, lease_max)) {
		fprintf(stderr, "atoll-mds: out of memory for the lease table\n");
		goto out;
	}
	int level = lvl ? log_level_parse(lvl) : LOG_LVL_INFO;
	if (level < 0) {
		fprintf(stderr, "atoll-mds: unknown log level '%s'; use error, warn, info, debug or trace\n", lvl);
		goto out;
	}
	if (log_open("mds", (enum log_level)level, logf) < 0) {
		fprintf(stderr, "atoll-mds: cannot open the log file '%s'\n", logf);
		goto out;
	}

	ret = atoll_cluster_create(&mds.cl, conf_path, 0);
	if (!ret && mon)
		ret = atoll_cluster_set(mds.cl, "mon_host", mon);
	/* with authentication, the MDS's client proves mds.NAME's key: the
	 * monitors' reply brings the MDS service secrets its own messenger
	 * checks the file-system clients' tickets with */
	if (!ret) {
		char entity[AUTH_NAME_MAX + 1];

		snprintf(entity, sizeof(entity), "mds.%s", name);
		ret = atoll_cluster_set(mds.cl, "auth_name", entity);
		/* its hellos say MDS: its beacons travel in the monitors' peer
		 * pool, where a flood of clients cannot delay them */
		mds.cl->entity_type = MSG_ENTITY_MDS;
	}
	if (!ret)
		ret = atoll_cluster_connect(mds.cl);
	if (ret) {
		log_error(SUB, "cannot connect to the cluster: %s; check --mon/--conf "
			  "and that the monitor runs", atoll_strerror(ret));
		goto out;
	}
	if ((ret = ensure_pool(mds.cl, mds.meta_pool)) ||
	    (ret = ensure_pool(mds.cl, mds.data_pool)) ||
	    (ret = atoll_ioctx_create(mds.cl, mds.meta_pool, &mds.meta, 0)) ||
	    (ret = atoll_ioctx_create(mds.cl, mds.data_pool, &mds.data, 0)) ||
	    /* the journal and the namespace go on when the cluster is full,
	     * so that files can be deleted (doc/osd.md, "Space") */
	    (ret = atoll_ioctx_set_flags(mds.meta, ATOLL_IOCTX_FULL_TRY))) {
		log_error(SUB, "cannot open the pools '%s' and '%s': %s", mds.meta_pool,
			  mds.data_pool, atoll_strerror(ret));
		goto out;
	}
	/* A standby until the monitors grant this instance the active role
	 * (mds_role.c): it does not listen before, and it writes nothing; it
	 * follows the journal every follow_ms (mds_follow.c), so that the
	 * replay at its start reads only what it has not read yet. */
	struct sigaction sa0 = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa0, NULL);
	sigaction(SIGINT, &sa0, NULL);
	if ((ret = mds_metrics_start(conf, name, &mds, err, sizeof(err)))) {
		log_error(SUB, "%s", err);
		goto out;
	}
	if ((ret = mds_role_start(&mds, name, addr, (uint32_t)beacon_ms, argv, &g_stop))) {
		log_error(SUB, "cannot start the beacon thread: %s", atoll_strerror(ret));
		goto out;
	}
	log_info(SUB, "mds.%s (client.%llu): a standby of pools '%s' and '%s' until the "
		 "monitors grant it the active role", name,
		 (unsigned long long)atoll_cluster_id(mds.cl), mds.meta_pool, mds.data_pool);
	printf("atoll-mds: standby mds.%s on %s\n", name, addr);
	fflush(stdout);
	uint64_t grant = mds_role_wait_grant_ms(0);
	if (!grant && follow_ms && !g_stop) {
		if ((ret = mds_follow_start(&mds))) {
			log_error(SUB, "cannot set up the metadata cache: %s", atoll_strerror(ret));
			goto out;
		}
		log_info(SUB, "following the journal every %llu ms while a standby",
			 (unsigned long long)follow_ms);
		while (!g_stop && !(grant = mds_role_wait_grant_ms((uint32_t)follow_ms)))
			mds_follow_step(&mds);
	}
	if (!grant && !g_stop)
		grant = mds_role_wait_grant();
	if (!grant || g_stop) {	/* stopped as a standby (maybe granted just now) */
		rc = 0;
		goto out;
	}
	/* the grant's epoch blocklists the active before: every op from here
	 * on carries it at least, so no OSD serves one before it refuses the
	 * old active's (mds_role.c) */
	if ((ret = client_wait_epoch(mds.cl, grant, 0))) {
		log_error(SUB, "cannot get map epoch %llu: %s", (unsigned long long)grant,
			  atoll_strerror(ret));
		goto out;
	}
	log_info(SUB, "mds.%s has the active role since epoch %llu (map epoch %llu)", name,
		 (unsigned long long)grant, (unsigned long long)atoll_cluster_epoch(mds.cl));
	mds_role_set_state(MDS_BEACON_REPLAYING);
	/* Listen first, so that `atoll fs status` answers "replaying" while
	 * the namespace loads; client requests wait in the queue until the
	 * worker loop below starts. */
	/* a connection's requests not yet handled (their bytes): past
	 * mds_session_max_pending_bytes the messenger stops reading from it
	 * until the worker catches up (paused, never refused: a client's
	 * requests are an ordered sequence) */
	struct msgr_config mc = { .size_of = sizeof(mc), .inflight_max = pending_max };
	struct msgr_ops ops = { .dispatch = on_dispatch, .closed = on_closed };
	mc.me.type = MSG_ENTITY_MDS;
	mc.me.id = 0;
	mc.auth = mds.cl->auth;	/* the client's: freed after msgr_destroy */
	mds.auth_on = mc.auth != NULL;
	mds_status_init(&mds);
	if ((ret = msgr_config_read(conf, "mds", &mc, err, sizeof(err)))) {
		log_error(SUB, "%s", err);
		goto out;
	}
	if ((ret = msgr_create(&mc, &ops, &mds, &msgr)) ||
	    (ret = msgr_listen(msgr, addr, bound, sizeof(bound))) ||
	    (ret = msgr_start(msgr))) {
		log_error(SUB, "cannot listen on %s: %s; pick another --addr", addr,
			  atoll_strerror(ret));
		goto out;
	}
	mds_metrics_add_msgr(msgr);
	/* the port is open: root is no longer needed (no local data folder) */
	if ((ret = priv_drop_config(conf, "mds", NULL, 0, err, sizeof(err))) < 0) {
		log_error(SUB, "%s", err);
		goto out;
	}
	mds_status_set_addr(bound);
	mds_role_set_addr(bound);
	snprintf(g_addr, sizeof(g_addr), "%s", bound);
	mds_status_set_session_timeout(session_timeout_ms);
	g_msgr = msgr;
	/* fault injection (tests): small segments, so that a few changes
	 * roll them; no MT_MDS_SAFE, so that the clients resend everything */
	int64_t segs = fault_get_int("mds_seg_entries", 0);
	if (segs > 0) {
		mds.journal.seg_max = (uint64_t)segs;
		log_warn(SUB, "fault injection: journal segments roll after %lld entries",
			 (long long)segs);
	}
	if (fault_get_int("mds_drop_safe", 0) == 1) {
		mds.journal.drop_safe = true;
		log_warn(SUB, "fault injection: no MT_MDS_SAFE is sent (the clients keep "
			 "every request)");
	}
	ret = mds_open(&mds);
	if (ret) {
		log_error(SUB, "cannot load the file system: %s", atoll_strerror(ret));
		goto out;
	}
	/* the sessions of before: gone until their clients come back */
	for (size_t i = 0; i < mds.nsess; i++)
		mds_sess_absent(mds.sess[i]);
	if ((ret = mds_statfs_start(&mds))) {
		log_error(SUB, "cannot start the statfs thread: %s", atoll_strerror(ret));
		goto out;
	}
	mds_statfs_may_wait();	/* this thread is the worker */
	int64_t fault = fault_get_int("mds_crash_after_commits", 0);
	if (fault > 0) {
		const char *op_name = fault_get("mds_crash_op");
		mds.journal.crash_after = (uint64_t)fault;
		for (uint32_t op = 1; op_name && op < MDS_OP_MAX_ && !mds.journal.crash_op; op++)
			if (!strcmp(mds_op_name(op), op_name))
				mds.journal.crash_op = op;
		log_warn(SUB, "fault injection: will exit after journaling %llu more change(s)%s%s",
			 (unsigned long long)mds.journal.crash_after,
			 mds.journal.crash_op ? " of op " : "", mds.journal.crash_op ? op_name : "");
	}

	fault = fault_get_int("mds_crash_before_journal", 0);
	if (fault > 0 && mds.journal.early) {
		mds.journal.crash_hold = (uint64_t)fault;
		log_warn(SUB, "fault injection: will answer change %lld, then exit before "
			 "journaling it", (long long)fault);
	}
	fault = fault_get_int("mds_journal_delay_ms", 0);
	if (fault > 0) {
		mds.journal.delay_ms = (unsigned)fault;
		log_warn(SUB, "fault injection: every journal append waits %lld ms",
			 (long long)fault);
	}
	log_info(SUB, "early replies %s", mds.journal.early ? "on (batched journal)" :
		 "off (each change journaled before its reply)");
	mds_status_sync(&mds);
	mds_status_set_state(MDS_STATE_ACTIVE);
	mds_role_set_state(MDS_BEACON_ACTIVE);
	log_info(SUB, "serving the file system on %s", bound);
	printf("atoll-mds: serving on %s\n", bound);
	fflush(stdout);

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (mds.nsess && reconnect_ms)
		reconnect_window(&mds, (unsigned)reconnect_ms);
	orphans_after_window(&mds);

	/* also when sessions never expire: it sweeps mds_linger.c's table */
	msgr_timer(msgr, expire_tick_ms(), expire_tick, &mds);
	if (session_timeout_ms)
		log_info(SUB, "a client whose connection is gone for %u ms is evicted",
			 session_timeout_ms);
	/* the loop thread handles what it can from now on (serve_inline);
	 * not with the journal-crash faults, which count the changes the
	 * worker makes */
	pthread_mutex_lock(&q.lock);
	q.inline_ok = mds.journal.early && !mds.journal.crash_hold && !mds.journal.crash_after;
	pthread_mutex_unlock(&q.lock);
	log_info(SUB, "requests handled on the messenger's thread when the worker is idle: %s",
		 q.inline_ok ? "yes" : "no");
	while (!g_stop) {
		pthread_mutex_lock(&q.lock);
		while (!q.head && !g_stop) {
			q.busy = false;
			pthread_cond_wait(&q.cond, &q.lock);
		}
		struct work *w = q.head;
		if (w) {
			q.head = w->next;
			if (!q.head)
				q.tail = NULL;
			q.busy = true;
		}
		pthread_mutex_unlock(&q.lock);
		if (w) {
			if (!w->m)
				expire_sessions(&mds);
			else if (w->rq)
				serve_finish(&mds, w->m, w->rq, w->rp);
			else
				serve_one(&mds, w->m);
			free(w);
		}
	}
	log_info(SUB, "stopping");
	rc = 0;
out:
	mds_metrics_stop();	/* its scrapes read the messenger and the journal */
	mds_journal_stop(&mds);	/* journals what is queued, tells the clients */
	msgr_destroy(msgr);
	mds_statfs_stop();
	while (q.head) {
		struct work *w = q.head;
		q.head = w->next;
		msg_free(w->m);	/* NULL for an expiry: fine */
		free(w->rq);
		free(w->rp);
		free(w);
	}
	mds_close(&mds);
	mds_role_stop();	/* the journal is written: the role goes at once */
	mds_sess_fini();
	free(mds.evicted);
	mds_lease_fini();
	atoll_ioctx_destroy(mds.meta);
	atoll_ioctx_destroy(mds.data);
	atoll_cluster_shutdown(mds.cl);
	config_free(conf);
	return rc;
}
