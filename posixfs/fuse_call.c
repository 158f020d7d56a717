/*
 * fuse_call.c - atoll-fuse's calls to the MDS (fuse_call.h): the one
 * connection to the MDS, the calls a request thread waits for, and the
 * calls answered from the messenger's loop thread (those in flight are
 * counted, so that the unmount drains them before the session goes).
 *
 * One call per metadata operation.  The request thread waits for it, or,
 * for the changes whose answer to the kernel needs only the reply
 * (create, mkdir, unlink, rmdir, rename, a clean release), the loop
 * thread answers the kernel when the reply comes (struct acall).  A reply
 * the MDS gave before it journaled the change goes to fuse_replay.c (kept
 * until MT_MDS_SAFE, resent after a restart); every call waits for a
 * reconnect's resends and goes behind the changes answered here and
 * still held (fuse_here.c).  The MDS's own messages (journaled-up-to,
 * lease revokes) and the connection's break are dispatched here too.
 *
 * Which MDS: the active one the monitors name in the map (`mds stat`),
 * unless -o mds= names one.  A thread of its own (follow_active) asks
 * them again whenever the library's map moves to a new epoch (the roles
 * are in the map) and every 10 s; when the role moved to another MDS,
 * the connection is redialled there (msg_conn_retarget: a reset as after
 * an MDS restart, so the unsafe requests are resent first,
 * fuse_replay.c) - no remount.
 *
 * Locks: inflight.lock (the count of calls in flight) is a leaf, never
 * held with another.  fc_call_async takes replay.lock (fuse_replay.c)
 * and may be called under here.lock (fuse_here.c, which gives the order).
 */
#include "fuse_call.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atoll/atoll.h>
#include <cjson/cJSON.h>

#include "auth_config.h"
#include "config.h"
#include "deadline.h"
#include "encode.h"
#include "fuse_cache.h"
#include "fuse_data.h"
#include "fuse_here.h"
#include "fuse_replay.h"
#include "log.h"
#include "mds_caps.h"
#include "mono.h"
#include "msg.h"

#define CALL_TIMEOUT_MS 60000u

/* The connection to the cluster and to the MDS.  Set up by fc_connect
 * before the mount (one thread), read by every thread after; torn down
 * by fc_disconnect once every thread but main ended. */
static struct mds_conn {
	struct atoll_cluster *cl;
	struct atoll_ioctx *data;
	struct msgr *msgr;
	struct msg_auth *auth;		/* NULL with auth = none; outlives msgr */
	struct msg_conn *auth_mon;	/* the monitor session renewing its tickets */
	struct msg_conn *mds;
	char mds_addr[64];		/* where mds dials (addr_lock) */
	bool mds_fixed;			/* -o mds=: never moved */
	const char *meta_pool;		/* the file system's, or NULL: the first */
	char data_pool[128];		/* the session's (set once, before follow) */
	char caps_root[MDS_CAPS_PATH_MAX + 1];	/* the path of the key's mds caps, else "/" */
	pthread_t follower;
	bool following;
	const char *mountpoint;		/* named in messages */
	uint64_t client_id;
	uint64_t next_reqid;		/* atomic */
	/* The protocol version of the MDS's last reply (mds_reply.version;
	 * atomic) */
	uint8_t mds_version;
	/* Calls waiting in fc_call_from (atomic; the unmount's give-up
	 * closes the MDS connection when any is left). */
	unsigned calls_waiting;
	/* Eviction (doc/fs-design.md, "What an evicted client is told"):
	 * said once (atomic exchange) */
	bool evicted;
} conn = { .mountpoint = "the mount" };

/* protects conn.mds_addr; follow.lock/cond wake and stop the follower */
static pthread_mutex_t addr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
} follow = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/* Calls in flight (those that will answer a kernel request, and the
 * CLOSEs a release sends behind its answer): the session and the
 * messenger may not go before they ended (fc_acall_drain at unmount).
 * lock protects n; cond signals n reaching 0. */
static struct calls_in_flight {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned n;
} inflight = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

const char *fc_mountpoint(void)
{
	return conn.mountpoint;
}

const char *fc_mds_addr(void)
{
	/* a message's name of it: a copy per thread, taken under the lock */
	static __thread char copy[64];

	pthread_mutex_lock(&addr_lock);
	snprintf(copy, sizeof(copy), "%s", conn.mds_addr);
	pthread_mutex_unlock(&addr_lock);
	return copy;
}

uint64_t fc_epoch(void)
{
	return msg_conn_epoch(conn.mds);
}

uint64_t fc_client_id(void)
{
	return conn.client_id;
}

uint64_t fc_last_reqid(void)
{
	return __atomic_load_n(&conn.next_reqid, __ATOMIC_RELAXED);
}

/* ---- calls a thread waits for ------------------------------------------------ */

void fc_wait_done(struct fc_wait *cw, int err)
{
	pthread_mutex_lock(&cw->mu);
	cw->err = err;
	cw->done = true;
	pthread_cond_signal(&cw->cv);
	pthread_mutex_unlock(&cw->mu);
}

int fc_wait(struct fc_wait *cw)
{
	pthread_mutex_lock(&cw->mu);
	while (!cw->done)
		pthread_cond_wait(&cw->cv, &cw->mu);
	pthread_mutex_unlock(&cw->mu);
	return cw->err;
}

int fc_send_wait(struct msg *m, unsigned timeout_ms,
		 void (*reply)(void *arg, struct msg *r, int err), void *arg, struct fc_wait *cw)
{
	unsigned tmo = timeout_ms ? timeout_ms : CALL_TIMEOUT_MS;
	int ret = m ? msg_call(conn.mds, m, tmo, reply, arg) : -ENOMEM;

	return ret ? ret : fc_wait(cw);
}

/* A call of fc_call_from: on_reply decodes into rp, ci. */
struct waiter {
	struct fc_wait cw;
	const struct mds_req *rq;
	struct mds_reply *rp;
	uint64_t t_send;
	struct lc_info ci;
};

/* Eviction (doc/fs-design.md, "What an evicted client is told"): the MDS
 * answers MDS_RC_EVICTED once it evicted this client (it missed the
 * reconnect window after an MDS restart, or its connection was gone for
 * the session timeout), with a sentence saying which MDS and why.  Its
 * id is blocklisted: nothing it sends can succeed again.  The client says so once, in one line, drops
 * its cache and stays mounted: every call fails with EIO (as on a local
 * disk that failed) until it is unmounted.  It does not unmount itself:
 * the path would then lead to the folder under the mount, and a program
 * would go on writing there, unaware. */
void fc_evicted(const char *why)
{
	if (__atomic_exchange_n(&conn.evicted, true, __ATOMIC_ACQ_REL))
		return;
	/* the log, stderr (a foreground mount's terminal) and syslog */
	char line[1024];
	snprintf(line, sizeof(line), "this client was evicted (%s): what it had not written "
		 "to the cluster is lost, the OSDs refuse its writes and every call on %s fails "
		 "with EIO from now on; unmount it (fusermount3 -u %s) and mount it again",
		 why[0] ? why : "the MDS gave no reason", conn.mountpoint, conn.mountpoint);
	log_error("fuse", "%s", line);
	if (!log_to_stderr())
		fprintf(stderr, "atoll-fuse: %s\n", line);	/* a foreground mount's terminal */
	syslog(LOG_ERR, "%s", line);
	lc_revoke(NULL, 0, true);
}

uint8_t fc_mds_version(void)
{
	return __atomic_load_n(&conn.mds_version, __ATOMIC_RELAXED);
}

/* The loop thread: decodes the reply and hands it to the cache here, in
 * the order of the connection (a revoke that follows it comes after). */
static void on_reply(void *arg, struct msg *reply, int err)
{
	struct waiter *w = arg;

	if (!err) {
		struct dec d;
		dec_init(&d, reply->front, reply->front_len);
		if (mds_reply_decode(&d, w->rp)) {
			err = -EBADMSG;
		} else {
			__atomic_store_n(&conn.mds_version, w->rp->version, __ATOMIC_RELAXED);
			if (w->rp->rc == MDS_RC_EVICTED)
				fc_evicted(w->rp->target);
			for (uint32_t i = 0; !w->rp->rc && i < w->rp->ninodes && i < 2; i++)
				fd_dns_note(w->rp->in[i].ino, w->rp->in[i].dns);
			for (uint32_t i = 0; w->rp->plus && i < w->rp->nplus; i++)
				fd_dns_note(w->rp->plus[i].ino, w->rp->plus[i].dns);
			lc_reply(w->rq, w->rp, w->t_send, &w->ci);
			if (w->rp->jseq)
				fr_unsafe_add(w->rq, w->rp);
		}
	}
	msg_free(reply);
	fc_wait_done(&w->cw, err);
}

/* The caller of req: the request acts as its uid and gid. */
void fc_req_cred(struct mds_req *rq, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	rq->uid = ctx->uid;
	rq->gid = ctx->gid;
}

void fc_req_init(struct mds_req *rq, fuse_req_t req, uint32_t op)
{
	memset(rq, 0, sizeof(*rq));
	rq->op = op;
	rq->client = conn.client_id;
	rq->reqid = __atomic_add_fetch(&conn.next_reqid, 1, __ATOMIC_RELAXED);
	rq->lflags = lc_on() ? MDS_L_WANT | (fh_enabled() ? MDS_L_EXCL_OK : 0u) : 0;
	if (req)
		fc_req_cred(rq, req);
}

static int call_from(const struct mds_req *rq, struct mds_reply *rp, struct lc_info *ci,
		     int first)
{
	int ret = -EIO;

	memset(rp, 0, sizeof(*rp));
	if (ci)
		memset(ci, 0, sizeof(*ci));
	for (int attempt = first; attempt < 5; attempt++) {
		/* resent unsafe requests go first (the replayer thread): a
		 * call made for a connection that broke since is refused */
		uint64_t epoch = msg_conn_epoch(conn.mds);
		fr_wait_replayed();
		fh_flush(true);	/* the changes answered here before it go first */
		struct waiter w = { .cw = FC_WAIT_INIT, .rq = rq, .rp = rp,
				    .t_send = mono_now_ns() };
		struct enc e;
		enc_init(&e);
		if (attempt) {
			/* a resend: the MDS may have answered it (its index) */
			struct mds_req *r2 = malloc(sizeof(*r2));
			if (!r2)
				return -ENOMEM;
			*r2 = *rq;
			r2->lflags |= MDS_L_REPLAY;
			mds_req_encode(&e, r2);
			free(r2);
		} else {
			mds_req_encode(&e, rq);
		}
		struct msg *m = msg_new(MT_MDS_REQUEST, &e);
		enc_free(&e);
		if (!m)
			return -ENOMEM;
		ret = msg_call_epoch(conn.mds, epoch, m, CALL_TIMEOUT_MS, on_reply, &w);
		if (ret == -ECONNRESET) {
			ret = -EIO;
			continue;
		}
		if (ret)
			return ret;
		fc_wait(&w.cw);
		if (w.cw.err == -ECONNRESET) {
			ret = -EIO;
			usleep(200000);
			continue;
		}
		if (w.cw.err)
			return w.cw.err == -ETIMEDOUT || w.cw.err == -EBADMSG ? -EIO : w.cw.err;
		if (ci)
			*ci = w.ci;
		return rp->rc == MDS_RC_EVICTED ? -EIO : rp->rc;
	}
	return ret;
}

int fc_call_from(const struct mds_req *rq, struct mds_reply *rp, struct lc_info *ci, int first)
{
	__atomic_add_fetch(&conn.calls_waiting, 1, __ATOMIC_RELAXED);
	int ret = call_from(rq, rp, ci, first);
	__atomic_sub_fetch(&conn.calls_waiting, 1, __ATOMIC_RELAXED);
	return ret;
}

int fc_call_ci(const struct mds_req *rq, struct mds_reply *rp, struct lc_info *ci)
{
	return fc_call_from(rq, rp, ci, 0);
}

int fc_call(const struct mds_req *rq, struct mds_reply *rp)
{
	return fc_call_ci(rq, rp, NULL);
}

int fc_size_call(fuse_req_t req, uint64_t ino, uint32_t op, const uint64_t *size,
		 uint64_t mtime, uint64_t *msize, uint64_t ogen, uint64_t mark)
{
	struct mds_req rq;
	struct mds_reply rp;

	fc_req_init(&rq, req, op);
	rq.ino = ino;
	rq.ogen = ogen;
	if (mark) {
		rq.lflags |= MDS_L_INFLIGHT;
		rq.ino2 = mark;
	}
	if (size) {
		rq.size_hint = *size;
		rq.setmask = MDS_SET_MTIME;
		rq.s_mtime = mtime;
	}
	int ret = fc_call(&rq, &rp);
	free(rp.ents);
	if (ret == 0 && rp.ninodes)
		*msize = rp.in[0].size;
	return ret;
}

/* ---- calls answered from the loop thread ------------------------------------ */

struct acall *fc_acall_new(fuse_req_t req, uint32_t op, void (*done)(struct acall *, int))
{
	struct acall *a = calloc(1, sizeof(*a));

	if (!a) {
		if (req)
			fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	a->req = req;
	a->done = done;
	a->gen0 = fr_gen();
	fc_req_init(&a->rq, req, op);
	return a;
}

void fc_acall_finish(struct acall *a, int ret)
{
	if (a->here)
		fr_here_done(a);
	a->done(a, ret);
	pthread_mutex_lock(&inflight.lock);
	if (--inflight.n == 0)
		pthread_cond_broadcast(&inflight.cond);
	pthread_mutex_unlock(&inflight.lock);
}

void fc_acall_drain(void)
{
	pthread_mutex_lock(&inflight.lock);
	while (inflight.n)
		pthread_cond_wait(&inflight.cond, &inflight.lock);
	pthread_mutex_unlock(&inflight.lock);
}

void fc_acall_free(struct acall *a)
{
	free(a->own);
	free(a->rp.ents);
	free(a->rp.plus);
	free(a->rp.value);
	free(a);
}

static void *acall_retry(void *arg)
{
	struct acall *a = arg;
	int ret = fc_call_from(&a->rq, &a->rp, &a->ci, 1);

	fc_acall_finish(a, ret);
	return NULL;
}

/* The MDS restarts: a's call goes again from a thread that may wait
 * (for the resends, then the reply); false if no thread could start. */
static bool acall_retry_start(struct acall *a)
{
	pthread_t t;
	pthread_attr_t at;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	int r = pthread_create(&t, &at, acall_retry, a);
	pthread_attr_destroy(&at);
	return r == 0;
}

static void on_areply(void *arg, struct msg *reply, int err)
{
	struct acall *a = arg;

	if (!err) {
		struct dec d;
		dec_init(&d, reply->front, reply->front_len);
		if (mds_reply_decode(&d, &a->rp)) {
			err = -EBADMSG;
		} else {
			__atomic_store_n(&conn.mds_version, a->rp.version, __ATOMIC_RELAXED);
			for (uint32_t i = 0; !a->rp.rc && i < a->rp.ninodes && i < 2; i++)
				fd_dns_note(a->rp.in[i].ino, a->rp.in[i].dns);
			lc_reply(&a->rq, &a->rp, a->t_send, &a->ci);
			if (a->rp.jseq)
				fr_unsafe_add(&a->rq, &a->rp);
		}
	}
	msg_free(reply);
	if (err == -ECONNRESET) {
		if (a->here ? fr_cut_add(a) : acall_retry_start(a))
			return;
		err = -EIO;
	}
	if (err)
		fc_acall_finish(a, err == -ETIMEDOUT || err == -EBADMSG ? -EIO : err);
	else
		fc_acall_finish(a, a->rp.rc);
}

void fc_call_async(struct acall *a)
{
	pthread_mutex_lock(&inflight.lock);
	inflight.n++;
	pthread_mutex_unlock(&inflight.lock);
	uint64_t epoch = fr_before_send(a, msg_conn_epoch(conn.mds));	/* as call_from */
	if (!a->here)
		fh_flush(true);	/* the changes answered here before it go first */
	memset(&a->rp, 0, sizeof(a->rp));
	memset(&a->ci, 0, sizeof(a->ci));
	a->t_send = mono_now_ns();
	struct enc e;
	enc_init(&e);
	mds_req_encode(&e, &a->rq);
	struct msg *m = msg_new(MT_MDS_REQUEST, &e);
	enc_free(&e);
	int ret = m ? msg_call_epoch(conn.mds, epoch, m, CALL_TIMEOUT_MS, on_areply, a) : -ENOMEM;
	if (ret == -ECONNRESET && (a->here ? fr_cut_add(a) : acall_retry_start(a)))
		return;
	if (ret)
		fc_acall_finish(a, ret == -ECONNRESET ? -EIO : ret);
}

/* ---- the MDS's messages, the connection ----------------------------------- */

void fc_hurry(void)
{
	if (fc_mds_version() < 7)
		return;
	struct msg *m = msg_new(MT_MDS_FLUSH, NULL);
	if (m)
		msg_send(conn.mds, m);	/* a broken connection: the resends go at once */
}

/* The loop thread: MT_MDS_SAFE (fuse_replay.c drops what is journaled),
 * or a revoke from the MDS.  The cache drops what it
 * covers at once and queues the kernel's invalidations (done on a thread
 * of their own, fuse_cache.c), then we ack: the MDS answers the change
 * once every holder acked. */
static void on_mds_msg(void *arg, struct msg_conn *c, struct msg *m)
{
	(void)arg;
	if (c != conn.mds) {
		msg_free(m);	/* the monitor session of auth: its maps */
		return;
	}
	if (m->type == MT_MDS_SAFE) {
		struct mds_safe sf;
		struct dec d;
		dec_init(&d, m->front, m->front_len);
		if (mds_safe_decode(&d, &sf) == 0)
			fr_safe(sf.seq);
	} else if (m->type == MT_MDS_NOTIFY && !(m->flags & MSG_F_REPLY)) {
		struct mds_notify *n = malloc(sizeof(*n));
		struct dec d;
		struct enc e;
		dec_init(&d, m->front, m->front_len);
		if (n && mds_notify_decode(&d, n) == 0) {
			/* an end of exclusivity: the changes answered under
			 * it are on their way before the ack (fh_revoke_excl) */
			bool excl = false;
			for (uint32_t i = 0; i < n->n; i++)
				excl |= (n->c[i].kind & MDS_CHG_EXCL) != 0;
			if (excl)
				fh_revoke_excl(n->c, n->n);
			else
				lc_revoke(n->c, n->n, false);
			for (uint32_t i = 0; i < n->n; i++)
				if (n->c[i].kind & MDS_CHG_DATA)
					fd_invalidate(n->c[i].ino);	/* read-ahead */
		} else {
			log_warn("fuse", "a malformed lease revoke from the MDS; dropping "
				 "every cached entry");
			lc_revoke(NULL, 0, true);
		}
		if (n) {
			n->n = 0;
			enc_init(&e);
			mds_notify_encode(&e, n);
			struct msg *r = msg_new(MT_MDS_NOTIFY, &e);
			enc_free(&e);
			if (r)
				msg_reply(c, m, r);
		}
		free(n);
	}
	msg_free(m);
}

/* The loop thread: the MDS connection broke (a restart, or the active
 * role moved): the MDS forgot our leases, so everything cached goes, the
 * kernel's too. */
static void on_mds_closed(void *arg, struct msg_conn *c, int err)
{
	(void)arg;
	(void)err;
	if (c != conn.mds)
		return;		/* the monitor session of auth, renewing */
	lc_revoke(NULL, 0, true);
	/* what the MDS answered but did not journal: resent, first */
	fr_broke();
	pthread_mutex_lock(&follow.lock);
	pthread_cond_broadcast(&follow.cond);	/* look for the active one now */
	pthread_mutex_unlock(&follow.lock);
}

/* The active MDS of our file system as the monitors name it: 1 and its
 * address (and name) in addr, 0 when they know the file system but none
 * is active now, -ENOENT when they know no MDS at all, or an error. */
static int find_active(char *addr, size_t len, char *name, size_t nlen)
{
	char *out = NULL, *status = NULL;
	cJSON *j = NULL, *fs;
	int ret = atoll_mon_command(conn.cl, "{\"prefix\":\"mds stat\",\"format\":\"json\"}",
				    &status, &out, NULL);

	if (ret)
		goto out;
	j = cJSON_Parse(out);
	ret = -ENOENT;
	cJSON_ArrayForEach(fs, cJSON_GetObjectItem(j, "filesystems")) {
		const char *mp = cJSON_GetStringValue(cJSON_GetObjectItem(fs, "meta_pool"));
		const char *dp = cJSON_GetStringValue(cJSON_GetObjectItem(fs, "data_pool"));
		cJSON *act = cJSON_GetObjectItem(fs, "active");
		const char *a = cJSON_GetStringValue(cJSON_GetObjectItem(act, "addr"));
		const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(act, "name"));

		if ((conn.meta_pool && (!mp || strcmp(mp, conn.meta_pool))) ||
		    (conn.data_pool[0] && (!dp || strcmp(dp, conn.data_pool))))
			continue;
		ret = 0;
		if (a && *a && strcmp(a + strlen(a) - 2, ":0")) {
			snprintf(addr, len, "%s", a);
			snprintf(name, nlen, "%s", n ? n : "?");
			ret = 1;
		}
		break;
	}
out:
	cJSON_Delete(j);
	atoll_free(out);
	atoll_free(status);
	return ret;
}

/* The follower thread: when the monitors name another active MDS than
 * the one the connection dials, it dials that one.  The roles live in
 * the map, so it asks the monitors (`mds stat`) only when the map the
 * library holds moved to a new epoch (it looks ten times a second: a
 * local read), when its connection broke, and every 10 s besides. */
static void *follow_active(void *arg)
{
	uint64_t asked_epoch = 0, asked_ms = 0;
	bool was_open = true, retry = false;

	(void)arg;
	pthread_mutex_lock(&follow.lock);
	while (!follow.stop) {
		struct timespec ts = deadline_ms(CLOCK_REALTIME, 100);
		pthread_cond_timedwait(&follow.cond, &follow.lock, &ts);
		if (follow.stop)
			break;
		pthread_mutex_unlock(&follow.lock);
		uint64_t epoch = atoll_cluster_epoch(conn.cl), now = mono_now_ms();
		bool open = msg_conn_is_open(conn.mds), broke = was_open && !open;
		char addr[64], name[40];
		int f = 0;
		was_open = open;
		if (retry || broke || epoch != asked_epoch || now - asked_ms >= 10000) {
			f = find_active(addr, sizeof(addr), name, sizeof(name));
			/* the monitors not reached: again at the next look (not
			 * for an answer, e.g. -EINVAL from a monitor without
			 * `mds stat`: that waits for the next epoch) */
			retry = f == -ETIMEDOUT || f == -ENOTCONN || f == -ECONNRESET ||
				f == -ECONNREFUSED;
			asked_epoch = epoch;
			asked_ms = now;
		}
		if (f == 1) {
			pthread_mutex_lock(&addr_lock);
			bool moved = strcmp(addr, conn.mds_addr) != 0;
			if (moved)
				snprintf(conn.mds_addr, sizeof(conn.mds_addr), "%s", addr);
			pthread_mutex_unlock(&addr_lock);
			if (moved) {
				log_warn("fuse", "%s: the active MDS is now mds.%s at %s; "
					 "reconnecting there (its unsafe requests are resent)",
					 conn.mountpoint, name, addr);
				msg_conn_retarget(conn.mds, addr);
			}
		}
		pthread_mutex_lock(&follow.lock);
	}
	pthread_mutex_unlock(&follow.lock);
	return NULL;
}

/* `auth = ticket`: conn.auth from the keyring (NULL with auth = none). */
static int fc_auth_load(const char *conf)
{
	struct config *cfg = NULL;
	const char *name = NULL;
	char err[512];
	int ret;

	ret = config_load(&cfg, conf, err, sizeof(err));
	if (!ret)
		ret = config_get_str(cfg, "client", "auth_name", "client.admin", &name, err,
				     sizeof(err));
	struct keyring kr = { 0 };
	if (!ret)
		ret = auth_config_load(cfg, "client", name, &kr, &conn.auth, err, sizeof(err));
	if (ret)
		fprintf(stderr, "atoll-fuse: %s\n", err);
	/* the key's mds caps as its keyring says (informational there: the
	 * MDS checks the ticket's): their path is the default root */
	snprintf(conn.caps_root, sizeof(conn.caps_root), "/");
	const struct keyring_entry *ke = !ret && conn.auth ? keyring_find(&kr, name) : NULL;
	for (uint32_t i = 0; ke && i < ke->ncaps; i++) {
		struct mds_caps *mc = malloc(sizeof(*mc));
		if (mc && !strcmp(ke->caps[i].service, "mds") &&
		    !mds_caps_parse(ke->caps[i].caps, strlen(ke->caps[i].caps), mc, err,
				    sizeof(err)))
			snprintf(conn.caps_root, sizeof(conn.caps_root), "%s", mds_caps_root(mc));
		free(mc);
	}
	keyring_free(&kr);
	config_free(cfg);
	return ret;
}

/* Makes directory path (absolute) the mount's root: each name looked up
 * from the top; a clear message when it is missing or refused. */
static int set_root(const char *path, struct mds_reply *rp)
{
	uint64_t ino = MDS_ROOT_INO;
	const char *p = path;
	struct mds_req rq;
	int ret;

	if (path[0] != '/') {
		fprintf(stderr, "atoll-fuse: the root '%s' is not an absolute path\n", path);
		return -EINVAL;
	}
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (!n)
			break;
		if (n > MDS_NAME_MAX) {
			fprintf(stderr, "atoll-fuse: a name of the root '%s' is too long\n", path);
			return -ENAMETOOLONG;
		}
		fc_req_init(&rq, NULL, MDS_OP_LOOKUP);
		rq.lflags = 0;	/* no lease: nothing cached under the numbers before the swap */
		rq.ino = ino;
		memcpy(rq.name, p, n);
		rq.name[n] = '\0';
		p += n;
		ret = fc_call(&rq, rp);
		if (ret == -EACCES || ret == -EPERM) {
			fprintf(stderr, "atoll-fuse: the root '%s' is outside what this key's mds "
				"caps allow (they allow '%s'); mount with --root inside it\n",
				path, conn.caps_root);
			return ret;
		}
		if (ret == -ENOENT) {
			fprintf(stderr, "atoll-fuse: the root '%s' does not exist; create it "
				"first (from a mount of its parent)\n", path);
			return ret;
		}
		if (ret) {
			fprintf(stderr, "atoll-fuse: cannot look up the root '%s': %s\n", path,
				atoll_strerror(ret));
			return ret;
		}
		if (!S_ISDIR(rp->in[0].mode)) {
			fprintf(stderr, "atoll-fuse: the root '%s' is not a directory\n", path);
			return -ENOTDIR;
		}
		ino = rp->in[0].ino;
		free(rp->ents);
		free(rp->plus);
		free(rp->value);
	}
	/* a path-limited key cannot see "/": ask for the root itself */
	fc_req_init(&rq, NULL, MDS_OP_GETATTR);
	rq.lflags = 0;
	rq.ino = ino;
	if ((ret = fc_call(&rq, rp))) {
		fprintf(stderr, "atoll-fuse: the root '%s' is outside what this key's mds caps "
			"allow (they allow '%s'): %s\n", path, conn.caps_root, atoll_strerror(ret));
		return ret;
	}
	mds_proto_set_root(ino);
	fd_dns_note(MDS_ROOT_INO, rp->in[0].dns);	/* the root's, under its new number */
	if (ino != MDS_ROOT_INO)
		log_info("fuse", "mounting '%s' (inode %" PRIu64 ") as the root", path, ino);
	return 0;
}

/* Authenticates conn.msgr to a monitor: its MDS ticket. */
static int fc_auth_login(const char *conf, const char *mon)
{
	struct config *cfg = NULL;
	char err[512];
	int ret;

	ret = config_load(&cfg, conf, err, sizeof(err));
	if (!ret && !mon)
		ret = config_get_str(cfg, "client", "mon_host", "127.0.0.1:6789", &mon, err,
				     sizeof(err));
	if (!ret)
		ret = auth_login(conn.msgr, mon, 10000, &conn.auth_mon, err, sizeof(err));
	if (ret)
		fprintf(stderr, "atoll-fuse: %s\n", err);
	config_free(cfg);
	return ret;
}

int fc_connect(const char *conf, const char *mon, const char *mds_addr,
	       const char *fallback, const char *meta_pool, const char *mountpoint,
	       const char *root, struct atoll_ioctx **data)
{
	struct mds_req rq;
	struct mds_reply *rp = malloc(sizeof(*rp));
	int ret;

	conn.mds_fixed = mds_addr != NULL;
	conn.meta_pool = meta_pool;
	snprintf(conn.mds_addr, sizeof(conn.mds_addr), "%s", mds_addr ? mds_addr : fallback);
	mds_addr = conn.mds_addr;
	conn.mountpoint = mountpoint;
	if (!rp)
		return -ENOMEM;
	ret = atoll_cluster_create(&conn.cl, conf, 0);
	if (!ret && mon)
		ret = atoll_cluster_set(conn.cl, "mon_host", mon);
	if (!ret)
		ret = atoll_cluster_connect(conn.cl);
	if (ret) {
		fprintf(stderr, "atoll-fuse: cannot connect to the cluster: %s; check "
			"-o conf=/-o mon= and that the monitor runs\n", atoll_strerror(ret));
		goto out;
	}
	conn.client_id = atoll_cluster_id(conn.cl);
	if (!conn.mds_fixed) {
		/* the active MDS; while there is none yet (a takeover), wait for
		 * it as long as a mount waits for the monitor */
		char a[64], n[40];
		int f = -EAGAIN;
		for (int i = 0; i < 600 && (f = find_active(a, sizeof(a), n, sizeof(n))) == 0; i++)
			usleep(100000);
		if (f == 1)
			snprintf(conn.mds_addr, sizeof(conn.mds_addr), "%s", a);
		else if (f == 0)
			fprintf(stderr, "atoll-fuse: the monitors name no active MDS; trying %s\n",
				mds_addr);
	}
	if ((ret = fr_start()))
		goto out;
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops mops = { .dispatch = on_mds_msg, .closed = on_mds_closed };
	mc.me.type = MSG_ENTITY_CLIENT;
	mc.me.id = conn.client_id;
	if ((ret = fc_auth_load(conf)))
		goto out;
	mc.auth = conn.auth;
	if ((ret = msgr_create(&mc, &mops, NULL, &conn.msgr)) || (ret = msgr_start(conn.msgr)))
		goto out;
	/* with authentication, the MDS takes only a ticket the monitors gave;
	 * it names the cluster handle's client id, so that the MDS's session
	 * and its connection (and the fencing of the OSD writes) are one id */
	if (conn.auth)
		msg_auth_want_client_id(conn.auth, conn.client_id);
	if (conn.auth && (ret = fc_auth_login(conf, mon)))
		goto out;
	conn.mds = msgr_connect(conn.msgr, mds_addr);
	if (!conn.mds) {
		fprintf(stderr, "atoll-fuse: '%s' is not an MDS address (IP:PORT)\n", mds_addr);
		ret = -EINVAL;
		goto out;
	}
	/* after a restart, the resends of what the MDS had not journaled
	 * reach it before anything newer (on_mds_closed, the replayer) */
	msg_conn_set_ordered(conn.mds);
	fc_req_init(&rq, NULL, MDS_OP_SESSION);
	ret = fc_call(&rq, rp);
	if (ret == MDS_RC_TOO_MANY_SESSIONS) {
		fprintf(stderr, "atoll-fuse: the MDS at %s refuses a new session: it serves "
			"mds_max_sessions clients already; unmount another client or raise "
			"mds_max_sessions in [mds] of atoll.conf\n", mds_addr);
		goto out;
	}
	if (ret) {
		fprintf(stderr, "atoll-fuse: the MDS at %s does not answer: %s\n", mds_addr,
			atoll_strerror(ret));
		goto out;
	}
	char pool[sizeof(rp->target)];
	snprintf(pool, sizeof(pool), "%s", rp->target);
	if ((ret = set_root(root ? root : conn.caps_root, rp)))
		goto out;
	snprintf(rp->target, sizeof(rp->target), "%s", pool);
	ret = atoll_ioctx_create(conn.cl, rp->target, &conn.data, 0);
	if (ret)
		fprintf(stderr, "atoll-fuse: cannot open the data pool '%s': %s\n",
			rp->target, atoll_strerror(ret));
	*data = conn.data;
	if (strlen(rp->target) < sizeof(conn.data_pool))	/* a pool name: 63 at most */
		memcpy(conn.data_pool, rp->target, strlen(rp->target) + 1);
	if (!ret && !conn.mds_fixed && pthread_create(&conn.follower, NULL, follow_active, NULL) == 0)
		conn.following = true;
out:
	free(rp);
	return ret;
}

void fc_disconnect(void)
{
	if (conn.following) {
		pthread_mutex_lock(&follow.lock);
		follow.stop = true;
		pthread_cond_broadcast(&follow.cond);
		pthread_mutex_unlock(&follow.lock);
		pthread_join(conn.follower, NULL);
		conn.following = false;
	}
	msg_conn_put(conn.mds);
	msg_conn_put(conn.auth_mon);
	conn.auth_mon = NULL;
	msgr_destroy(conn.msgr);
	msg_auth_free(conn.auth);	/* after the messenger, which reads it */
	conn.auth = NULL;
	atoll_ioctx_destroy(conn.data);
	atoll_cluster_shutdown(conn.cl);
	conn.mds = NULL;
	conn.msgr = NULL;
	conn.data = NULL;
	conn.cl = NULL;
}

bool fc_mds_open(void)
{
	return msg_conn_is_open(conn.mds);
}

void fc_close_for_good(void)
{
	msg_conn_close(conn.mds);
}

bool fc_owed(void)
{
	bool owed = !msg_conn_is_open(conn.mds);

	pthread_mutex_lock(&inflight.lock);
	owed = owed || inflight.n || __atomic_load_n(&conn.calls_waiting, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&inflight.lock);
	return owed;
}
