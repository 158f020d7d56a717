/*
 * fuse_main.c - atoll-fuse: mounts an atoll file system with libfuse3's
 * low-level (inode) API, multi-threaded.
 *
 * Metadata goes to atoll-mds (mds_proto.h, one call per op: the request
 * thread waits for it, or, for the changes whose answer to the kernel
 * needs only the reply (create, mkdir, unlink, rmdir, rename, a clean
 * release), the messenger's loop thread answers the kernel when the reply
 * comes: "calls answered from the loop thread"; a change answered before
 * the MDS journaled it is kept until the MDS says it is safe, and resent
 * after a restart: "Unsafe requests" below); permissions are checked here
 * (fuse_perm.c), not by the kernel; file data goes straight to the OSDs: block B of inode I is object
 * "I.B" (16 hex digits each) of the data pool, 4 MiB blocks: fuse_data.c,
 * with write-back and read-ahead; flush (every close), fsync and release
 * push the largest size this client wrote to the MDS (the file size is
 * the MDS's) and return once the OSDs have the data durable.
 * Close-to-open consistency: a file's page cache and read-ahead are
 * dropped at open.
 * Metadata the MDS leased (fuse_cache.c) is answered from the cache and
 * the kernel keeps it for the lease's time; the MDS revokes a lease
 * before another client changes what it covers (MT_MDS_NOTIFY), and the
 * cache and the kernel drop it.  Without leases (-o nolease, or an MDS
 * with them off) the kernel caches entries and attributes for 1 s.
 * doc/fs.md describes the design and what is still missing.
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <atoll/atoll.h>

#include "config.h"
#include "deadline.h"
#include "encode.h"
#include "fault.h"
#include "fuse_cache.h"
#include "fuse_daemon.h"
#include "fuse_data.h"
#include "fuse_loop.h"
#include "fuse_perm.h"
#include "log.h"
#include "mds_proto.h"
#include "msg.h"

#define CALL_TIMEOUT_MS 60000u
/* An open for execve (the kernel's __FMODE_EXEC in the open flags): the
 * file must be executable by the caller. */
#define FMODE_EXEC_FLAG 0x20
#define NEG_ENTRY_TIMEOUT 1.0	/* s: a name the kernel may know absent */
/* A setattr that sets atime and mtime to "now" within this long of this
 * client's create of the file (touch's futimens after its open(O_CREAT))
 * is answered from the cache: the create set all three times to "now"
 * already, so the file reads as if both happened in one tick of a clock
 * this coarse (ext4's own timestamps tick every 4 ms). */
#define TOUCH_FOLD_NS (10ull * 1000000ull)

/* st_blksize: programs size their buffers from it (cp takes at least
 * 128 KiB, stdio and Python take it as is).  1 MiB (max_write) cost
 * Python's reads of whole files three times their time: a 1 MiB buffer
 * per open beside the 1 MB read made glibc give the heap's top back at
 * each close, so each read faulted its buffer in anew, and a page fault
 * is slow in this VM (doc/benchmarks.md, file system results of
 * 2026-12-03 15:47).  cp's writes stay 128 KiB and more; fuse_data.c
 * gathers them into objects anyway. */
#define BLKSIZE_DEFAULT (128 << 10)

static struct {
	struct atoll_cluster *cl;
	struct atoll_ioctx *data;
	struct msgr *msgr;
	struct msg_conn *mds;
	uint64_t client_id;
	uint64_t next_reqid;
	bool perm;		/* atoll-fuse checks permissions (fuse_perm.c),
				 * not the kernel (default_permissions) */
	bool async_rm;		/* removals answered here (doc/fs.md) */
	bool async_create;	/* creates and mkdir answered here (doc/fs.md) */
	uint32_t blksize;	/* st_blksize (-o blksize) */
	/* held from an asynchronous removal's check of the exclusive lease
	 * to its request's sending, and by a revoke of exclusivity before
	 * its ack: the ack follows every such removal on the connection */
	pthread_mutex_t async_mu;
	uint64_t async_rms, async_fails;	/* removals answered here; of
						 * those, refused by the MDS */
	uint64_t async_creates, async_create_fails;	/* the same of creates */
	uint64_t aseq;		/* under async_mu: the order of the calls
				 * answered here (acall.aseq) */
	/* fault injection (fault fuse_async_hold=1, tests): removals and
	 * creates answered here are held (under async_mu) until a revoke of
	 * exclusivity, another call (held_flush) or the unmount sends them,
	 * as if they were slow to reach the MDS */
	bool async_hold;
	/* gathering (-o gather_us, [fuse] fuse_gather_us, default GATHER_US;
	 * 0: off): the
	 * changes answered here wait up to this long for others, then go
	 * together (held, sent by the closer thread), so that the MDS and
	 * this client's loop thread wake once for several */
	unsigned gather_us;
	struct acall **held;
	size_t nheld, held_cap;
} g = { .async_mu = PTHREAD_MUTEX_INITIALIZER };

/* Unsafe requests (early replies, doc/fs.md): a change the MDS answered
 * but has not journaled yet (its reply named journal entry jseq).  The
 * client keeps each one, encoded as it will resend it, in the order of
 * the replies (the MDS's order of applying them), until an MT_MDS_SAFE
 * with seq >= jseq arrives.  When the connection breaks (an MDS restart)
 * each becomes "to resend" (jseq RESEND) and the replayer thread sends
 * them again, in order, before any new request goes out: the MDS answers
 * one it journaled from its index of answered requests, applies the
 * others again (a create keeps its inode number).  fsync and fsyncdir
 * return once every change before them is safe.  ulock protects the
 * list, safe_seq and replay; ucond signals a change of any of them. */
#define RESEND UINT64_MAX

struct unsafe {
	struct unsafe *next;
	uint64_t reqid, jseq;
	void *buf;		/* the request's front, MDS_L_REPLAY set */
	size_t len;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* the replayer's own: replay, recount, gone or stop moved.  Not
	 * cond, which every answered change broadcasts: the replayer would
	 * wake for each (a futex wake and two context switches per rmdir) */
	pthread_cond_t rcond;
	struct unsafe *head, *tail;
	uint64_t n;
	uint64_t safe_seq;	/* the MDS said: journaled up to here */
	bool replay;		/* entries wait to be resent: new calls wait */
	/* The unmount gave up on the MDS (its grace ran out, "Unmounting"):
	 * the connection is closed for good and nobody waits for it to
	 * come back; every call fails with ENOTCONN. */
	bool gone;
	bool stop;
	/* Reconnects so far (read atomically; written under lock), and
	 * "some open was answered across one: re-count it" (fd_open): the
	 * replayer re-counts this client's opens with the MDS after each
	 * reconnect (doc/fs.md, "Open files across a restart"). */
	uint64_t gen;
	bool recount;
	pthread_t thr;
	bool thr_on;
	unsigned async_n;	/* changes answered here, not by the MDS yet */
	/* Calls answered here (acall.here) that went to the MDS and did not
	 * end yet, and of those the ones a broken connection cut off: kept
	 * in the order they were answered (aseq), the replayer sends them
	 * again after the unsafe ones and before anything newer, so a
	 * restarted MDS applies them in their order (a create before the
	 * creates in its new folder, before its removal). */
	unsigned ncut;
	struct acall *here_head;	/* those sent and not ended, not cut */
	struct acall *cut;
	bool cut_busy;		/* the replayer is sending the first one */
} u = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	.rcond = PTHREAD_COND_INITIALIZER };

uint64_t fm_gen(void)
{
	return __atomic_load_n(&u.gen, __ATOMIC_ACQUIRE);
}

void fm_recount_wanted(void)
{
	pthread_mutex_lock(&u.lock);
	u.recount = true;
	pthread_cond_signal(&u.rcond);
	pthread_mutex_unlock(&u.lock);
}

struct opts {
	char *conf, *mon, *mds;
	char *log, *log_level;	/* -o log=FILE, log_level=LVL */
	int nolease, kernel_perms, fuse_perms, sync_close, noasync_rm, noasync_create;
	int writeback_mb, readahead_mb, kernel_ra_kb;
	int blksize;
	int gather_us;		/* -1: atoll.conf's fuse_gather_us */
};

static void to_stat(const struct mds_inode *in, struct stat *st)
{
	uint64_t size = fd_stat_size(in->ino, in->size);

	if (S_ISDIR(in->mode))
		size = 4096;	/* what ext4 shows for a small directory */
	memset(st, 0, sizeof(*st));
	st->st_ino = in->ino;
	st->st_mode = in->mode;
	st->st_nlink = in->nlink;
	st->st_uid = in->uid;
	st->st_gid = in->gid;
	st->st_rdev = in->rdev;
	st->st_size = (off_t)size;
	st->st_blksize = g.blksize;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
	st->st_atim.tv_sec = (time_t)(in->atime / 1000000000ull);
	st->st_atim.tv_nsec = (long)(in->atime % 1000000000ull);
	st->st_mtim.tv_sec = (time_t)(in->mtime / 1000000000ull);
	st->st_mtim.tv_nsec = (long)(in->mtime % 1000000000ull);
	st->st_ctim.tv_sec = (time_t)(in->ctime / 1000000000ull);
	st->st_ctim.tv_nsec = (long)(in->ctime % 1000000000ull);
}

/* ---- calls to the MDS ------------------------------------------------------ */

/* A call to the MDS made by a thread that waits for its answer: the
 * reply callback ends with cw_finish. */
struct call_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int err;		/* the call's, or the decoder's */
};
#define CALL_WAIT_INIT { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER }

static void cw_finish(struct call_wait *cw, int err)
{
	pthread_mutex_lock(&cw->mu);
	cw->err = err;
	cw->done = true;
	pthread_cond_signal(&cw->cv);
	pthread_mutex_unlock(&cw->mu);
}

/* Waits for cw_finish; cw's error. */
static int cw_call_wait(struct call_wait *cw)
{
	pthread_mutex_lock(&cw->mu);
	while (!cw->done)
		pthread_cond_wait(&cw->cv, &cw->mu);
	pthread_mutex_unlock(&cw->mu);
	return cw->err;
}

/* Sends m (NULL: -ENOMEM) to the MDS and waits until reply(arg, ...)
 * called cw_finish; the transport's error, or cw's. */
static int cw_call(struct msg *m, void (*reply)(void *arg, struct msg *r, int err), void *arg,
		   struct call_wait *cw)
{
	int ret = m ? msg_call(g.mds, m, CALL_TIMEOUT_MS, reply, arg) : -ENOMEM;

	return ret ? ret : cw_call_wait(cw);
}

struct waiter {
	struct call_wait cw;
	const struct mds_req *rq;
	struct mds_reply *rp;
	uint64_t t_send;
	struct lc_info ci;
};

/* Under u.lock: drops the entries up to seq (the MDS journaled them). */
static void unsafe_drop_upto(uint64_t seq)
{
	struct unsafe **pp = &u.head, *e;

	u.tail = NULL;
	while ((e = *pp)) {
		if (e->jseq != RESEND && e->jseq <= seq) {
			*pp = e->next;
			free(e->buf);
			free(e);
			u.n--;
			continue;
		}
		u.tail = e;
		pp = &e->next;
	}
	pthread_cond_broadcast(&u.cond);
}

/* The loop thread (in the connection's order with MT_MDS_SAFE): keeps a
 * request the MDS answered unsafe. */
static void unsafe_add(const struct mds_req *rq, const struct mds_reply *rp)
{
	struct mds_req *c = malloc(sizeof(*c));
	struct unsafe *e = calloc(1, sizeof(*e));
	struct enc en;

	if (!c || !e)
		goto oom;
	*c = *rq;
	c->lflags = (c->lflags & ~MDS_L_WANT) | MDS_L_REPLAY;
	if ((rq->op == MDS_OP_MKNOD || rq->op == MDS_OP_MKDIR || rq->op == MDS_OP_SYMLINK) &&
	    rp->rc == 0 && rp->ninodes)
		c->replay_ino = rp->in[0].ino;
	/* a create's open is not counted again by its resend: the file may
	 * be closed since (its CLOSE answered, never resent), and a restarted
	 * MDS learns the opens from the re-count (reopen_all) */
	if (rq->op == MDS_OP_MKNOD)
		c->flags &= ~0x2u;
	enc_init(&en);
	mds_req_encode(&en, c);
	e->buf = enc_take(&en, &e->len);
	if (!e->buf) {
		enc_free(&en);
		goto oom;
	}
	free(c);
	e->reqid = rq->reqid;
	e->jseq = rp->jseq;
	pthread_mutex_lock(&u.lock);
	if (e->jseq <= u.safe_seq) {
		pthread_mutex_unlock(&u.lock);
		free(e->buf);
		free(e);
		return;
	}
	if (u.tail)
		u.tail->next = e;
	else
		u.head = e;
	u.tail = e;
	u.n++;
	pthread_mutex_unlock(&u.lock);
	return;
oom:
	/* cannot keep it for a resend: lose nothing silently */
	log_error("fuse", "out of memory keeping an unsafe request; exiting (the MDS "
		  "has it in memory, a restart of the MDS now would lose it)");
	exit(1);
}

/* Eviction (doc/fs.md, "What an evicted client is told"): the MDS answers MDS_RC_EVICTED once
 * it evicted this client (it missed the reconnect window after an MDS
 * restart, or its connection was gone for the session timeout), with a
 * sentence saying which MDS and why.  Its id is blocklisted: nothing it
 * sends can succeed again.  The client says so once, in one line, drops
 * its cache and stays mounted: every call fails with EIO (as on a local
 * disk that failed) until it is unmounted.  It does not unmount itself:
 * the path would then lead to the folder under the mount, and a program
 * would go on writing there, unaware. */
static bool evicted;
static const char *mountpoint = "the mount";

static void evicted_note(const char *why)	/* the loop thread */
{
	if (__atomic_exchange_n(&evicted, true, __ATOMIC_ACQ_REL))
		return;
	/* the log, stderr (a foreground mount's terminal) and syslog */
	char line[1024];
	snprintf(line, sizeof(line), "this client was evicted (%s): what it had not written "
		 "to the cluster is lost, the OSDs refuse its writes and every call on %s fails "
		 "with EIO from now on; unmount it (fusermount3 -u %s) and mount it again",
		 why[0] ? why : "the MDS gave no reason", mountpoint, mountpoint);
	log_error("fuse", "%s", line);
	if (!log_to_stderr())
		fprintf(stderr, "atoll-fuse: %s\n", line);	/* a foreground mount's terminal */
	syslog(LOG_ERR, "%s", line);
	lc_revoke(NULL, 0, true);
}

/* The protocol version of the MDS's last reply (mds_reply.version). */
static uint8_t mds_version;

uint8_t fm_mds_version(void)
{
	return __atomic_load_n(&mds_version, __ATOMIC_RELAXED);
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
			__atomic_store_n(&mds_version, w->rp->version, __ATOMIC_RELAXED);
			if (w->rp->rc == MDS_RC_EVICTED)
				evicted_note(w->rp->target);
			lc_reply(w->rq, w->rp, w->t_send, &w->ci);
			if (w->rp->jseq)
				unsafe_add(w->rq, w->rp);
		}
	}
	msg_free(reply);
	cw_finish(&w->cw, err);
}

/* The caller of req: the request acts as its uid and gid. */
static void req_cred(struct mds_req *rq, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	rq->uid = ctx->uid;
	rq->gid = ctx->gid;
}

static void req_init(struct mds_req *rq, fuse_req_t req, uint32_t op)
{
	memset(rq, 0, sizeof(*rq));
	rq->op = op;
	rq->client = g.client_id;
	rq->reqid = __atomic_add_fetch(&g.next_reqid, 1, __ATOMIC_RELAXED);
	rq->lflags = lc_on() ? MDS_L_WANT | (g.async_rm || g.async_create ? MDS_L_EXCL_OK : 0u)
			     : 0;
	if (req)
		req_cred(rq, req);
}

/* Calls waiting in mds_call_from (atomic; the unmount's give-up closes
 * the MDS connection when any is left). */
static unsigned calls_waiting;

static void held_send_(bool may_wait);
static void gather_kick(void);
#define held_send() held_send_(true)

/* The changes answered here and held back (gathering, or the fault
 * injection g.async_hold) go before any other call, which may concern
 * them (the size a close pushes of a file created here). */
static void held_flush(bool may_wait)
{
	/* nheld is written under g.async_mu; a change this thread held it
	 * sees without the lock, one another thread holds now needs no order */
	if ((!g.async_hold && !g.gather_us) || !__atomic_load_n(&g.nheld, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&g.async_mu);
	if (g.nheld)
		held_send_(may_wait);
	pthread_mutex_unlock(&g.async_mu);
}

static int mds_call_from_(const struct mds_req *rq, struct mds_reply *rp, struct lc_info *ci,
			  int first)
{
	int ret = -EIO;

	memset(rp, 0, sizeof(*rp));
	if (ci)
		memset(ci, 0, sizeof(*ci));
	for (int attempt = first; attempt < 5; attempt++) {
		/* resent unsafe requests go first (the replayer thread): a
		 * call made for a connection that broke since is refused */
		uint64_t epoch = msg_conn_epoch(g.mds);
		pthread_mutex_lock(&u.lock);
		while (u.replay && !u.gone)
			pthread_cond_wait(&u.cond, &u.lock);
		pthread_mutex_unlock(&u.lock);
		held_flush(true);	/* the changes answered here before it go first */
		struct waiter w = { .cw = CALL_WAIT_INIT, .rq = rq, .rp = rp,
				    .t_send = lc_now() };
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
		ret = msg_call_epoch(g.mds, epoch, m, CALL_TIMEOUT_MS, on_reply, &w);
		if (ret == -ECONNRESET) {
			ret = -EIO;
			continue;
		}
		if (ret)
			return ret;
		cw_call_wait(&w.cw);
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

/* Sends rq and waits for the reply; returns rp->rc or a transport error.
 * A call cut off by a broken connection (the MDS restarting) is sent
 * again on the redialled connection; -ENOTCONN once the unmount gave up
 * on the MDS. */
static int mds_call_from(const struct mds_req *rq, struct mds_reply *rp, struct lc_info *ci,
			 int first)
{
	__atomic_add_fetch(&calls_waiting, 1, __ATOMIC_RELAXED);
	int ret = mds_call_from_(rq, rp, ci, first);
	__atomic_sub_fetch(&calls_waiting, 1, __ATOMIC_RELAXED);
	return ret;
}

static int mds_call_ci(const struct mds_req *rq, struct mds_reply *rp, struct lc_info *ci)
{
	return mds_call_from(rq, rp, ci, 0);
}

static int mds_call(const struct mds_req *rq, struct mds_reply *rp)
{
	return mds_call_ci(rq, rp, NULL);
}

/* ---- calls answered from the loop thread ------------------------------------ */

/* A change whose answer to the kernel needs nothing but the MDS's reply
 * (unlink, rmdir, rename, create, mkdir ...): the request thread sends it
 * and goes back to FUSE; the loop thread, which receives the reply, also
 * answers the kernel (done).  This saves the wake-up of a waiting request
 * thread per MDS call.  done never blocks on the loop thread (the kernel
 * barrier's readers never wait for the loop); a call cut off by a broken
 * connection is finished by a thread of its own (resent, as mds_call_ci). */
struct acall {
	fuse_req_t req;
	struct mds_req rq;
	struct mds_reply rp;
	struct lc_info ci;
	uint64_t t_send;
	struct fuse_file_info fi;	/* create: a copy (libfuse's is on its stack) */
	bool has_fi;
	uint64_t gen0;			/* fm_gen() when it was made (fd_open) */
	/* answered here already (an asynchronous create or removal): kept
	 * in order across a reconnect (u.cut) */
	bool here;
	uint64_t aseq;
	uint64_t epoch;			/* the connection's it went on (here) */
	struct acall *here_next, **here_prev;	/* u.here_head, while sent */
	struct acall *cut_next;
	void *own;			/* freed with it (rq.value of a CLOSE batch) */
	void (*done)(struct acall *a, int ret);	/* answers the kernel, frees a */
};

/* Calls in flight (those that will answer a kernel request, and the
 * CLOSEs a release sends behind its answer): the session and the
 * messenger may not go before they ended (acall_drain at unmount). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned n;
} ap = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/* A call of op whose answer done gives; NULL when out of memory (req, if
 * any, is then answered ENOMEM). */
static struct acall *acall_new(fuse_req_t req, uint32_t op, void (*done)(struct acall *, int))
{
	struct acall *a = calloc(1, sizeof(*a));

	if (!a) {
		if (req)
			fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	a->req = req;
	a->done = done;
	a->gen0 = fm_gen();
	req_init(&a->rq, req, op);
	return a;
}

/* Under u.lock: a call answered here is no longer in flight. */
static void here_unlink(struct acall *a)
{
	if (!a->here_prev)
		return;
	*a->here_prev = a->here_next;
	if (a->here_next)
		a->here_next->here_prev = a->here_prev;
	a->here_prev = NULL;
	a->here_next = NULL;
	pthread_cond_broadcast(&u.cond);
}

/* a->done, then one call less in flight. */
static void acall_finish(struct acall *a, int ret)
{
	if (a->here) {
		pthread_mutex_lock(&u.lock);
		here_unlink(a);
		pthread_mutex_unlock(&u.lock);
	}
	a->done(a, ret);
	pthread_mutex_lock(&ap.lock);
	if (--ap.n == 0)
		pthread_cond_broadcast(&ap.cond);
	pthread_mutex_unlock(&ap.lock);
}

/* At unmount, before the session goes: waits for the calls still in
 * flight, those that answer the kernel and the CLOSEs behind a release
 * (they end with the MDS's reply, or fail once the unmount gives up on
 * the MDS: bounded by the grace, "unmounting within a bound"). */
static void acall_drain(void)
{
	pthread_mutex_lock(&ap.lock);
	while (ap.n)
		pthread_cond_wait(&ap.cond, &ap.lock);
	pthread_mutex_unlock(&ap.lock);
}

static void acall_free(struct acall *a)
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
	int ret = mds_call_from(&a->rq, &a->rp, &a->ci, 1);

	acall_finish(a, ret);
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

/* A call answered here, cut off by a broken connection: it waits for
 * the replayer (cut_resend), in its order; false when the unmount gave up
 * on the MDS (it fails then). */
static bool cut_add(struct acall *a)
{
	pthread_mutex_lock(&u.lock);
	bool ok = !u.gone;
	here_unlink(a);
	if (ok) {
		struct acall **pp = &u.cut;
		while (*pp && (*pp)->aseq < a->aseq)
			pp = &(*pp)->cut_next;
		a->cut_next = *pp;
		*pp = a;
		u.ncut++;
		pthread_cond_broadcast(&u.cond);
	}
	pthread_mutex_unlock(&u.lock);
	return ok;
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
			__atomic_store_n(&mds_version, a->rp.version, __ATOMIC_RELAXED);
			lc_reply(&a->rq, &a->rp, a->t_send, &a->ci);
			if (a->rp.jseq)
				unsafe_add(&a->rq, &a->rp);
		}
	}
	msg_free(reply);
	if (err == -ECONNRESET) {
		if (a->here ? cut_add(a) : acall_retry_start(a))
			return;
		err = -EIO;
	}
	if (err)
		acall_finish(a, err == -ETIMEDOUT || err == -EBADMSG ? -EIO : err);
	else
		acall_finish(a, a->rp.rc);
}

/* Sends a->rq; a->done answers the kernel (here on failure to send). */
static void mds_call_async(struct acall *a)
{
	pthread_mutex_lock(&ap.lock);
	ap.n++;
	pthread_mutex_unlock(&ap.lock);
	uint64_t epoch = msg_conn_epoch(g.mds);	/* as mds_call_from_ */
	pthread_mutex_lock(&u.lock);
	while (u.replay && !u.gone)
		pthread_cond_wait(&u.cond, &u.lock);
	if (a->here) {
		/* its place is behind what the replayer resent (cut_resend) */
		epoch = msg_conn_epoch(g.mds);
		a->epoch = epoch;
		a->here_next = u.here_head;
		if (u.here_head)
			u.here_head->here_prev = &a->here_next;
		a->here_prev = &u.here_head;
		u.here_head = a;
	}
	pthread_mutex_unlock(&u.lock);
	if (!a->here)
		held_flush(true);	/* the changes answered here before it go first */
	memset(&a->rp, 0, sizeof(a->rp));
	memset(&a->ci, 0, sizeof(a->ci));
	a->t_send = lc_now();
	struct enc e;
	enc_init(&e);
	mds_req_encode(&e, &a->rq);
	struct msg *m = msg_new(MT_MDS_REQUEST, &e);
	enc_free(&e);
	int ret = m ? msg_call_epoch(g.mds, epoch, m, CALL_TIMEOUT_MS, on_areply, a) : -ENOMEM;
	if (ret == -ECONNRESET && (a->here ? cut_add(a) : acall_retry_start(a)))
		return;
	if (ret)
		acall_finish(a, ret == -ECONNRESET ? -EIO : ret);
}

/* ---- resending unsafe requests ------------------------------------------- */

struct rwait {
	struct call_wait cw;
	struct unsafe *e;
	struct acall *a;	/* cut_resend */
};

/* The loop thread: the answer to a resent request.  Safe already (the
 * MDS had journaled it, or it is journaled by now): forget it; else it
 * waits for the new MDS's MT_MDS_SAFE like any other. */
static void on_resent(void *arg, struct msg *reply, int err)
{
	struct rwait *w = arg;
	struct mds_reply *rp = calloc(1, sizeof(*rp));

	if (!err && rp) {
		struct dec d;
		dec_init(&d, reply->front, reply->front_len);
		if (mds_reply_decode(&d, rp))
			err = -EBADMSG;
		else if (rp->rc == MDS_RC_EVICTED)
			evicted_note(rp->target);
		else if (rp->rc && rp->rc != -EEXIST && rp->rc != -ENOENT)
			log_warn("fuse", "the MDS refused resent request %" PRIu64 ": %s",
				 w->e->reqid, strerror(-rp->rc));
	}
	pthread_mutex_lock(&u.lock);
	if (!err) {
		if (rp && rp->jseq > u.safe_seq) {
			w->e->jseq = rp->jseq;
		} else {
			w->e->jseq = 0;
			unsafe_drop_upto(0);
		}
	}
	pthread_mutex_unlock(&u.lock);
	if (rp) {
		free(rp->ents);
		free(rp->plus);
		free(rp->value);
	}
	free(rp);
	msg_free(reply);
	cw_finish(&w->cw, err);
}

/* Resends every entry marked RESEND, oldest first, one at a time (each
 * one's answer before the next goes: the MDS applies them in this order).
 * 0 when all went, else the transport's error (the connection broke). */
static int unsafe_resend(void)
{
	uint64_t sent = 0;

	for (;;) {
		pthread_mutex_lock(&u.lock);
		struct unsafe *e = u.head;
		while (e && e->jseq != RESEND)
			e = e->next;
		if (!e) {
			pthread_mutex_unlock(&u.lock);
			break;
		}
		struct enc en;
		enc_init(&en);
		enc_raw(&en, e->buf, e->len);
		e->jseq = RESEND - 1;	/* in flight: never dropped by a SAFE */
		pthread_mutex_unlock(&u.lock);
		struct msg *m = msg_new(MT_MDS_REQUEST, &en);
		enc_free(&en);
		struct rwait w = { .cw = CALL_WAIT_INIT, .e = e };
		int ret = cw_call(m, on_resent, &w, &w.cw);

		if (ret) {
			pthread_mutex_lock(&u.lock);
			if (e->jseq == RESEND - 1)
				e->jseq = RESEND;
			pthread_mutex_unlock(&u.lock);
			return ret;
		}
		sent++;
	}
	if (sent)
		log_info("fuse", "resent %" PRIu64 " unsafe request(s) to the MDS", sent);
	return 0;
}

/* The loop thread: the answer to a call answered here, sent again. */
static void on_cut_reply(void *arg, struct msg *reply, int err)
{
	struct rwait *w = arg;
	struct acall *a = w->a;

	if (!err) {
		struct dec d;
		dec_init(&d, reply->front, reply->front_len);
		if (mds_reply_decode(&d, &a->rp)) {
			err = -EBADMSG;
		} else {
			if (a->rp.rc == MDS_RC_EVICTED)
				evicted_note(a->rp.target);
			lc_reply(&a->rq, &a->rp, a->t_send, &a->ci);
			if (a->rp.jseq)
				unsafe_add(&a->rq, &a->rp);
		}
	}
	msg_free(reply);
	cw_finish(&w->cw, err);
}

/* After the unsafe resends: the calls answered here that a broken
 * connection cut off (u.cut), oldest first, one at a time, before any
 * newer call goes (u.replay holds them).  Waits (at most CUT_WAIT_S) until
 * every such call in flight was cut, so none is left behind.  0 when all
 * went, else the transport's error (the connection broke again: the
 * rest stay, in order, for the next pass). */
#define CUT_WAIT_S 3	/* well inside the MDS's reconnect window (10 s) */
static int cut_resend(void)
{
	struct timespec end;
	unsigned sent = 0;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += CUT_WAIT_S;
	pthread_mutex_lock(&u.lock);
	for (;;) {
		/* those sent on an older connection than the current one:
		 * the break fails them (cut_add); a call sent on the new one
		 * (it saw the epoch move before the break's report) is not
		 * waited for: a restarted MDS holds it back until the
		 * reconnect window ends, after these */
		uint64_t now_epoch = msg_conn_epoch(g.mds);
		unsigned old = 0;
		for (struct acall *a = u.here_head; a; a = a->here_next)
			old += a->epoch < now_epoch;
		if (!old || u.gone)
			break;
		if (pthread_cond_timedwait(&u.cond, &u.lock, &end) == ETIMEDOUT) {
			log_warn("fuse", "%u call(s) answered here are still in flight on the "
				 "broken MDS connection; resending the %u cut off", old, u.ncut);
			break;
		}
	}
	pthread_mutex_unlock(&u.lock);
	for (;;) {
		pthread_mutex_lock(&u.lock);
		struct acall *a = u.cut;
		u.cut_busy = a != NULL;
		pthread_mutex_unlock(&u.lock);
		if (!a)
			break;
		struct rwait w = { .cw = CALL_WAIT_INIT, .a = a };
		struct mds_req *r2 = malloc(sizeof(*r2));
		struct enc e;
		if (!r2)
			return -ENOMEM;
		*r2 = a->rq;
		/* the MDS may have applied it; no lease while replaying (a
		 * revoke of it would wait for g.async_mu) */
		r2->lflags = (r2->lflags & ~MDS_L_WANT) | MDS_L_REPLAY;
		enc_init(&e);
		mds_req_encode(&e, r2);
		free(r2);
		struct msg *m = msg_new(MT_MDS_REQUEST, &e);
		enc_free(&e);
		memset(&a->rp, 0, sizeof(a->rp));
		a->t_send = lc_now();
		int ret = cw_call(m, on_cut_reply, &w, &w.cw);
		pthread_mutex_lock(&u.lock);
		u.cut_busy = false;
		bool over = !ret || u.gone;	/* else it goes again, first */
		if (over) {
			u.cut = a->cut_next;
			u.ncut--;
		}
		pthread_mutex_unlock(&u.lock);
		if (over)
			acall_finish(a, ret ? -ENOTCONN : a->rp.rc == MDS_RC_EVICTED ? -EIO : a->rp.rc);
		if (ret)
			return ret;
		sent++;
	}
	if (sent)
		log_info("fuse", "resent %u change(s) answered here to the MDS", sent);
	return 0;
}

/* The unmount gave up on the MDS: the calls cut off fail. */
static void cut_fail_all(void)
{
	pthread_mutex_lock(&u.lock);
	struct acall *a = u.cut;
	if (a && u.cut_busy) {
		/* the replayer's: it ends it (u.gone) */
		struct acall *first = a;
		a = first->cut_next;
		first->cut_next = NULL;
		u.ncut = 1;
	} else {
		u.cut = NULL;
		u.ncut = 0;
	}
	pthread_mutex_unlock(&u.lock);
	while (a) {
		struct acall *next = a->cut_next;
		acall_finish(a, -ENOTCONN);
		a = next;
	}
}

/* A call of the replayer's own (the re-count of opens, "resends done"):
 * an error in the reply is logged, what saying what was refused (NULL:
 * nothing logged). */
struct rcall {
	struct call_wait cw;
	const char *what;
};

static void on_rcall(void *arg, struct msg *reply, int err)
{
	struct rcall *w = arg;
	struct mds_reply *rp = err ? NULL : calloc(1, sizeof(*rp));

	if (rp) {
		struct dec d;
		dec_init(&d, reply->front, reply->front_len);
		if (!mds_reply_decode(&d, rp)) {
			if (rp->rc == MDS_RC_EVICTED)
				evicted_note(rp->target);
			else if (rp->rc && w->what)
				log_warn("fuse", "the MDS refused %s: %s", w->what,
					 strerror(-rp->rc));
		}
		free(rp->ents);
		free(rp->plus);
		free(rp->value);
		free(rp);
	}
	msg_free(reply);
	cw_finish(&w->cw, err);
}

/* Sends rq and waits for the reply: 0, or the transport's error. */
static int rcall(const struct mds_req *rq, const char *what)
{
	struct rcall w = { .cw = CALL_WAIT_INIT, .what = what };
	struct enc e;

	enc_init(&e);
	mds_req_encode(&e, rq);
	struct msg *m = msg_new(MT_MDS_REQUEST, &e);
	enc_free(&e);
	return cw_call(m, on_rcall, &w, &w.cw);
}

/* After the resends: SESSION with MDS_L_REPLAY tells a restarted MDS
 * that this client is back (its reconnect window waits for that). */
static int session_resume(void)
{
	struct mds_req *rq = calloc(1, sizeof(*rq));

	if (!rq)
		return -ENOMEM;
	rq->op = MDS_OP_SESSION;
	rq->client = g.client_id;
	rq->lflags = MDS_L_REPLAY;
	int ret = rcall(rq, NULL);
	free(rq);
	return ret;
}

/* Tells the MDS how many times this client holds each open inode (all of
 * them after a reconnect, else those fd_open flagged), as of reconnect
 * gen: the MDS counts opens in memory only, and a restarted one knows
 * none; a CLOSE of an open counted before gen is not counted down
 * (doc/fs.md, "Open files across a restart").  0, or the transport's
 * error (then the flags are set again: tried on the next pass). */
static int reopen_all(bool only_flagged)
{
	uint64_t gen = fm_gen();
	struct fd_open_ent *v = NULL;
	size_t n = fd_opens(gen, only_flagged, &v);
	struct mds_req *rq = n ? malloc(sizeof(*rq)) : NULL;
	int ret = n && !rq ? -ENOMEM : 0;

	for (size_t i = 0; i < n && !ret; i++) {
		req_init(rq, NULL, MDS_OP_OPEN);
		rq->lflags = MDS_L_REPLAY | MDS_L_REOPEN;
		rq->ino = v[i].ino;
		rq->max = v[i].count;
		rq->ogen = gen;
		ret = rcall(rq, "the count of a file held open, after the reconnect");
	}
	free(rq);
	if (ret)
		fd_opens_flag(v, n);
	else if (n)
		log_info("fuse", "told the MDS of %zu open file(s) after the reconnect", n);
	free(v);
	return ret;
}

static void *replayer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&u.lock);
	for (;;) {
		while ((!u.replay || u.gone) && !(u.recount && !u.gone) && !u.stop)
			pthread_cond_wait(&u.rcond, &u.lock);
		if (u.stop)
			break;
		if (!u.replay) {
			/* an open answered across a reconnect: re-counted */
			u.recount = false;
			pthread_mutex_unlock(&u.lock);
			if (reopen_all(true)) {
				usleep(200000);
				fm_recount_wanted();
			}
			pthread_mutex_lock(&u.lock);
			continue;
		}
		u.recount = false;	/* the full pass below re-counts all */
		pthread_mutex_unlock(&u.lock);
		int ret = unsafe_resend();
		if (!ret)
			ret = cut_resend();
		if (!ret)
			ret = reopen_all(false);
		if (!ret)
			ret = session_resume();
		if (ret)
			usleep(200000);	/* the MDS is not back yet */
		pthread_mutex_lock(&u.lock);
		bool left = false;
		for (struct unsafe *e = u.head; e && !left; e = e->next)
			left = e->jseq == RESEND;
		if (!left && !ret) {
			u.replay = false;
			pthread_cond_broadcast(&u.cond);
		}
	}
	pthread_mutex_unlock(&u.lock);
	return NULL;
}

/* Asks the MDS to journal what it holds now (MT_MDS_FLUSH): an MDS
 * older than protocol 7 does not know the message, and journals at
 * once anyway. */
static void mds_hurry(void)
{
	if (fm_mds_version() < 7)
		return;
	struct msg *m = msg_new(MT_MDS_FLUSH, NULL);
	if (m)
		msg_send(g.mds, m);	/* a broken connection: the resends go at once */
}

/* fsync, fsyncdir: waits until every change this client made before
 * (request ids up to the current one) is journaled.  timeout_s 0: for
 * as long as it takes; else false when still not after that long.
 * false at once when the unmount gave up on the MDS (u.gone). */
static bool unsafe_wait(unsigned timeout_s)
{
	uint64_t upto = __atomic_load_n(&g.next_reqid, __ATOMIC_RELAXED);
	struct timespec end;
	bool ok = true, hurried = false;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += timeout_s;
	pthread_mutex_lock(&u.lock);
	for (;;) {
		/* a removal answered here before its MDS reply counts too */
		bool pending = u.async_n > 0;
		for (struct unsafe *e = u.head; e && !pending; e = e->next)
			pending = e->reqid <= upto;
		if (!pending)
			break;
		if (u.gone) {
			ok = false;
			break;
		}
		if (!hurried) {
			/* the MDS gathers journal entries for a moment: tell
			 * it that somebody waits (once; after a reconnect the
			 * resends are journaled at once) */
			hurried = true;
			pthread_mutex_unlock(&u.lock);
			mds_hurry();
			pthread_mutex_lock(&u.lock);
			continue;
		}
		if (!timeout_s) {
			pthread_cond_wait(&u.cond, &u.lock);
		} else if (pthread_cond_timedwait(&u.cond, &u.lock, &end) == ETIMEDOUT) {
			ok = false;
			break;
		}
	}
	pthread_mutex_unlock(&u.lock);
	return ok;
}

/* 0 once every change before is journaled; -EIO when the unmount gave
 * up on the MDS first (fsync must not report them durable). */
static int unsafe_wait_all(void)
{
	return unsafe_wait(0) ? 0 : -EIO;
}

/* ---- replies ------------------------------------------------------------- */

/* The kernel may keep the entry (parent, name) as long as the reply's
 * directory lease covers parent. */
static double entry_timeout(const struct lc_info *ci, uint64_t parent)
{
	if (ci->exp && ci->dir_lease != parent)
		return 0;
	return lc_timeout(parent, ci);
}

static void fill_entry(struct fuse_entry_param *e, const struct mds_inode *in,
		       double entry_tmo, double attr_tmo)
{
	memset(e, 0, sizeof(*e));
	e->ino = in->ino;
	e->generation = in->gen;
	to_stat(in, &e->attr);
	e->attr_timeout = attr_tmo;
	e->entry_timeout = entry_tmo;
}

/* An entry (parent, name) from a reply with ci (lc_kbar: see fuse_cache.h). */
static void reply_entry(fuse_req_t req, const struct mds_inode *in,
			const struct lc_info *ci, uint64_t parent, const char *name)
{
	struct fuse_entry_param e;

	lc_kbar_enter();
	fill_entry(&e, in, lc_kname(parent, name, entry_timeout(ci, parent)),
		   lc_timeout(in->ino, ci));
	fuse_reply_entry(req, &e);
	lc_kbar_leave();
}

static void reply_attr(fuse_req_t req, const struct mds_inode *in, const struct lc_info *ci)
{
	struct stat st;

	lc_kbar_enter();
	to_stat(in, &st);
	fuse_reply_attr(req, &st, lc_timeout(in->ino, ci));
	lc_kbar_leave();
}

/* fuse_data.c's size push (fuse_data.h). */
int fm_size_call(fuse_req_t req, uint64_t ino, uint32_t op, const uint64_t *size,
		 uint64_t mtime, uint64_t *msize, uint64_t ogen, uint64_t mark)
{
	struct mds_req rq;
	struct mds_reply rp;

	req_init(&rq, req, op);
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
	int ret = mds_call(&rq, &rp);
	free(rp.ents);
	if (ret == 0 && rp.ninodes)
		*msize = rp.in[0].size;
	return ret;
}

int fm_unsafe_wait_all(void)
{
	return unsafe_wait_all();
}

/* CLOSE and LANDED go without a caller waiting: what failed is logged
 * (a CLOSE the MDS did not take keeps the open counted there; a lost
 * LANDED ends at the CLOSE after the writes, or at the MDS's bound). */
static void bg_done(struct acall *a, int ret)
{
	if (a->rq.op == MDS_OP_CLOSE && ret && ret != -ENOENT)
		log_warn("fuse", "the MDS did not take the close of inode %" PRIu64 ": %s",
			 a->rq.ino, strerror(-ret));
	else if (ret)
		log_debug("fuse", "%s of inode %" PRIu64 ": %s", mds_op_name(a->rq.op),
			  a->rq.ino, strerror(-ret));
	acall_free(a);
}

static void bg_call(uint32_t op, uint64_t ino, uint64_t ino2, uint64_t ogen)
{
	struct acall *a = acall_new(NULL, op, bg_done);

	if (!a) {
		log_warn("fuse", "out of memory sending %s of inode %" PRIu64 ": %s",
			 mds_op_name(op), ino, op == MDS_OP_CLOSE ?
			 "the MDS keeps counting this open (an unlinked file's purge waits "
			 "for its next start)" :
			 "other mounts' opens of it wait for the MDS's bound");
		return;
	}
	a->rq.ino = ino;
	a->rq.ino2 = ino2;
	a->rq.ogen = ogen;
	mds_call_async(a);
}

/* Closes in batches (doc/fs.md, "Closes in batches"): a clean file's
 * CLOSE (nothing to push: the open count only) waits up to
 * CLOSE_GATHER_MS for others, and they go as one request (MDS_L_MANY):
 * one MDS request instead of one per touch.  Nothing waits for a CLOSE;
 * an unlinked file's purge waits those few ms longer. */
#define CLOSE_GATHER_MS 5

struct close_ent {
	uint64_t ino, ogen;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct close_ent e[MDS_CLOSE_MANY];
	unsigned n;
	bool held;		/* changes answered here are held (gathering) */
	bool on, stop;
	pthread_t thr;
} cb = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void close_batch_send(const struct close_ent *e, unsigned n)
{
	if (n == 1 || fm_mds_version() < 9) {
		for (unsigned i = 0; i < n; i++)
			bg_call(MDS_OP_CLOSE, e[i].ino, 0, e[i].ogen);
		return;
	}
	struct acall *a = acall_new(NULL, MDS_OP_CLOSE, bg_done);
	struct enc en;
	size_t len = 0;
	enc_init(&en);
	for (unsigned i = 0; i < n; i++) {
		enc_u64(&en, e[i].ino);
		enc_u64(&en, e[i].ogen);
	}
	void *v = enc_take(&en, &len);
	if (!a || !v) {
		enc_free(&en);
		free(v);
		if (a)
			acall_free(a);
		for (unsigned i = 0; i < n; i++)	/* one at a time, then */
			bg_call(MDS_OP_CLOSE, e[i].ino, 0, e[i].ogen);
		return;
	}
	a->own = v;
	a->rq.value = v;
	a->rq.vlen = (uint32_t)len;
	a->rq.ino = e[0].ino;
	a->rq.lflags |= MDS_L_MANY;
	mds_call_async(a);
}

static void *closer_main(void *arg)
{
	static struct close_ent batch[MDS_CLOSE_MANY];	/* one closer */

	(void)arg;
	pthread_mutex_lock(&cb.mu);
	for (;;) {
		while (!cb.n && !cb.held && !cb.stop)
			pthread_cond_wait(&cb.cv, &cb.mu);
		if (!cb.n && !cb.held)
			break;	/* stopping, nothing left */
		struct timespec dl = deadline_ns(CLOCK_REALTIME, cb.held ? g.gather_us * 1000ull :
						 CLOSE_GATHER_MS * 1000000ull);
		while ((cb.n || cb.held) && cb.n < MDS_CLOSE_MANY && !cb.stop &&
		       pthread_cond_timedwait(&cb.cv, &cb.mu, &dl) != ETIMEDOUT)
			;
		bool held = cb.held, stopping = cb.stop;
		cb.held = false;
		unsigned n = cb.n;
		memcpy(batch, cb.e, n * sizeof(*batch));
		cb.n = 0;
		pthread_mutex_unlock(&cb.mu);
		/* while a reconnect's resends run they stay held and this
		 * tries again, unless the mount is ending: then it waits (a
		 * retry would spin) */
		if (held)
			held_flush(stopping);
		if (n)
			close_batch_send(batch, n);
		pthread_mutex_lock(&cb.mu);
	}
	pthread_mutex_unlock(&cb.mu);
	return NULL;
}

static void close_batch_start(void)
{
	pthread_mutex_lock(&cb.mu);
	cb.on = pthread_create(&cb.thr, NULL, closer_main, NULL) == 0;
	pthread_mutex_unlock(&cb.mu);
}

/* At unmount, before the calls in flight are drained: what is gathered
 * goes now, later closes one at a time. */
static void close_batch_stop(void)
{
	pthread_mutex_lock(&cb.mu);
	bool on = cb.on;
	cb.on = false;
	cb.stop = true;
	pthread_cond_broadcast(&cb.cv);
	pthread_mutex_unlock(&cb.mu);
	if (on)
		pthread_join(cb.thr, NULL);
}

/* Under g.async_mu: the first change held: the closer sends it (and
 * those after it) within g.gather_us. */
static void gather_kick(void)
{
	pthread_mutex_lock(&cb.mu);
	bool on = cb.on;
	if (on) {
		cb.held = true;
		pthread_cond_signal(&cb.cv);
	}
	pthread_mutex_unlock(&cb.mu);
	(void)on;	/* none before the mount or after its end: a call or the
			 * unmount sends them */
}

void fm_close_async(uint64_t ino, uint64_t ogen)
{
	struct close_ent full[MDS_CLOSE_MANY];
	unsigned nfull = 0;

	pthread_mutex_lock(&cb.mu);
	if (!cb.on) {
		pthread_mutex_unlock(&cb.mu);
		bg_call(MDS_OP_CLOSE, ino, 0, ogen);
		return;
	}
	cb.e[cb.n].ino = ino;
	cb.e[cb.n].ogen = ogen;
	if (++cb.n == 1 && !cb.held) {
		pthread_cond_signal(&cb.cv);
	} else if (cb.n == MDS_CLOSE_MANY) {
		nfull = cb.n;
		memcpy(full, cb.e, nfull * sizeof(*full));
		cb.n = 0;
	}
	pthread_mutex_unlock(&cb.mu);
	if (nfull)
		close_batch_send(full, nfull);
}

void fm_landed_async(uint64_t ino, uint64_t mark)
{
	bg_call(MDS_OP_LANDED, ino, mark, 0);
}

/* ---- permissions (fuse_perm.c) ----------------------------------------------- */

/* Sends rq (a getattr or a lookup) and takes the mode and owner of the
 * record it answers. */
static int perm_call(struct mds_req *rq, struct lc_perm *p)
{
	struct mds_reply rp;
	int ret = mds_call(rq, &rp);

	free(rp.ents);
	if (ret)
		return ret;
	p->mode = rp.in[0].mode;
	p->uid = rp.in[0].uid;
	p->gid = rp.in[0].gid;
	return 0;
}

/* ino's mode and owner: leased here, else from the MDS (and leased). */
static int perm_get(fuse_req_t req, uint64_t ino, struct lc_perm *p)
{
	struct mds_req rq;

	if (lc_perm(ino, p) == 0)
		return 0;
	req_init(&rq, req, MDS_OP_GETATTR);
	rq.ino = ino;
	return perm_call(&rq, p);
}

/* May the caller do mask (FP_*) on dir?  Also keeps dir's record leased
 * here (for uid 0 too), which lets entries of dir be cached by the kernel
 * (lc_kname).  *dp: dir's record, when not NULL. */
static int perm_dir(fuse_req_t req, struct fp_cred *c, uint64_t dir, int mask,
		    struct lc_perm *dp)
{
	struct lc_perm d;
	int ret = perm_get(req, dir, &d);

	if (ret)
		return ret;
	if (!S_ISDIR(d.mode))
		return -ENOTDIR;
	if (dp)
		*dp = d;
	return fp_access(c, &d, mask);
}

/* The record of entry (dir, name), from the cached listing or the MDS. */
static int perm_ent(fuse_req_t req, uint64_t dir, const char *name, struct lc_perm *p)
{
	struct mds_req rq;
	uint64_t ino;
	uint32_t mode;
	double left;

	if (lc_dir_lookup(dir, name, &ino, &mode, &left) == 1 && perm_get(req, ino, p) == 0)
		return 0;
	req_init(&rq, req, MDS_OP_LOOKUP);
	rq.ino = dir;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	return perm_call(&rq, p);
}

/* Removing entry (dir, name): write and search on dir, the sticky bit;
 * *victim (when not NULL): the entry's record, read when needed (always
 * when want_victim). */
static int perm_remove(fuse_req_t req, struct fp_cred *c, uint64_t dir, const char *name,
		       bool want_victim, struct lc_perm *victim, bool *have)
{
	struct lc_perm d, v;
	int ret = perm_dir(req, c, dir, FP_W | FP_X, &d);

	*have = false;
	if (ret)
		return ret;
	bool sticky = (d.mode & S_ISVTX) && !fp_root(c) && c->uid != d.uid;
	if (!sticky && !want_victim)
		return 0;
	ret = perm_ent(req, dir, name, &v);
	if (ret == -ENOENT)
		return 0;	/* the MDS says so (unlink), or a new name (rename) */
	if (ret)
		return ret;
	*have = true;
	if (victim)
		*victim = v;
	return fp_sticky(c, &d, &v);
}

/* ---- operations ------------------------------------------------------------ */

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	if (strlen(name) > MDS_NAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (g.perm) {
		struct fp_cred c;
		fp_cred_init(&c, req);
		if ((ret = perm_dir(req, &c, parent, FP_X, NULL))) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	/* from a leased listing of parent and a leased record: no MDS */
	uint64_t ino;
	uint32_t mode;
	double dleft, aleft;
	struct mds_inode in;
	lc_kbar_enter();
	int hit = lc_dir_lookup(parent, name, &ino, &mode, &dleft);
	if (hit == 0) {
		/* not in the leased listing: ENOENT, and the kernel may keep
		 * the negative entry (a revoke invalidates it: another
		 * client's create in parent) for at most NEG_ENTRY_TIMEOUT:
		 * a lost MDS connection drops the listing, but the names
		 * answered negative are not known to invalidate */
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.entry_timeout = lc_kname(parent, name, dleft < NEG_ENTRY_TIMEOUT ? dleft
					   : NEG_ENTRY_TIMEOUT);
		fuse_reply_entry(req, &e);
		lc_kbar_leave();
		return;
	}
	if (hit == 1 && (aleft = lc_attr(ino, &in)) > 0) {
		struct fuse_entry_param e;
		fill_entry(&e, &in, lc_kname(parent, name, dleft), aleft);
		fuse_reply_entry(req, &e);
		lc_kbar_leave();
		return;
	}
	lc_kbar_leave();
	struct lc_info ci;
	req_init(&rq, req, MDS_OP_LOOKUP);
	rq.ino = parent;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	ret = mds_call_ci(&rq, &rp, &ci);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		reply_entry(req, &rp.in[0], &ci, parent, name);
}

/* Answers req with ino's leased record (made by this client at most
 * within_ns ago when within_ns > 0): true if it did. */
static bool reply_attr_cached(fuse_req_t req, fuse_ino_t ino, uint64_t within_ns)
{
	struct mds_inode in;
	double left;

	lc_kbar_enter();
	left = within_ns ? lc_attr_new(ino, within_ns, &in) : lc_attr(ino, &in);
	if (left > 0) {
		struct stat st;

		to_stat(&in, &st);
		fuse_reply_attr(req, &st, left);
	}
	lc_kbar_leave();
	return left > 0;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	struct lc_info ci;

	if (reply_attr_cached(req, ino, 0))
		return;
	req_init(&rq, req, MDS_OP_GETATTR);
	rq.ino = ino;
	ret = mds_call_ci(&rq, &rp, &ci);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		reply_attr(req, &rp.in[0], &ci);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct mds_req rq;
	struct mds_reply rp;
	uint32_t mode = attr->st_mode;
	int ret;

	if (g.perm) {
		struct fp_cred c;
		struct lc_perm p;
		fp_cred_init(&c, req);
		if ((ret = perm_get(req, ino, &p)) ||
		    (ret = fp_setattr(&c, &p, to_set, attr, fi != NULL, &mode))) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	/* touch's "now" right after this client's create: nothing to do */
	const int times_now = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW |
			      FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW;
	if ((to_set & ~(times_now | FUSE_SET_ATTR_CTIME)) == 0 &&
	    (to_set & FUSE_SET_ATTR_ATIME_NOW) && (to_set & FUSE_SET_ATTR_MTIME_NOW)) {
		if (fd_clean(ino) && reply_attr_cached(req, ino, TOUCH_FOLD_NS))
			return;
	}
	req_init(&rq, req, MDS_OP_SETATTR);
	rq.ino = ino;
	if (to_set & FUSE_SET_ATTR_MODE) {
		rq.setmask |= MDS_SET_MODE;
		rq.s_mode = mode;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		rq.setmask |= MDS_SET_UID;
		rq.s_uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		rq.setmask |= MDS_SET_GID;
		rq.s_gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		rq.setmask |= MDS_SET_SIZE;
		rq.s_size = (uint64_t)attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		rq.setmask |= MDS_SET_ATIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME) {
		rq.setmask |= MDS_SET_ATIME;
		rq.s_atime = (uint64_t)attr->st_atim.tv_sec * 1000000000ull + (uint64_t)attr->st_atim.tv_nsec;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		rq.setmask |= MDS_SET_MTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME) {
		rq.setmask |= MDS_SET_MTIME;
		rq.s_mtime = (uint64_t)attr->st_mtim.tv_sec * 1000000000ull + (uint64_t)attr->st_mtim.tv_nsec;
	}
	/* the MDS gets this client's written data and size first, then the
	 * change (a truncate must not meet a write still in flight) */
	if (to_set & FUSE_SET_ATTR_SIZE) {
		ret = fd_wb_flush(ino);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
		/* the new size replaces what this client wrote */
		rq.size_hint = fd_set_size(ino, rq.s_size);
	} else {
		/* its data need not have landed: other clients' opens wait
		 * for it as after a close */
		ret = fd_close_push(req, ino);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
		rq.size_hint = fd_size_hint(ino);
	}
	struct lc_info ci;
	ret = mds_call_ci(&rq, &rp, &ci);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		reply_attr(req, &rp.in[0], &ci);
}

/* make_node's answer (the loop thread, or the resend's thread). */
/* The answer to a create (fi: open it too) or a mknod/mkdir/symlink of
 * in, made in parent under name, from the MDS or answered here. */
static void reply_created(fuse_req_t req, const struct mds_inode *in, const struct lc_info *ci,
			  uint64_t parent, const char *name, struct fuse_file_info *fi,
			  uint64_t gen0)
{
	if (!fi) {
		reply_entry(req, in, ci, parent, name);
		return;
	}
	struct fuse_entry_param e;
	fd_open(in->ino, 0, true, gen0);
	fi->keep_cache = 0;
	(void)lc_open_keep(in->ino);	/* a new file: nothing cached yet */
	lc_kbar_enter();
	fill_entry(&e, in, lc_kname(parent, name, entry_timeout(ci, parent)),
		   lc_timeout(in->ino, ci));
	fuse_reply_create(req, &e, fi);
	lc_kbar_leave();
}

static void make_node_done(struct acall *a, int ret)
{
	const struct mds_inode *in = &a->rp.in[0];
	uint64_t parent = a->rq.ino;

	if (ret)
		fuse_reply_err(a->req, -ret);
	else
		reply_created(a->req, in, &a->ci, parent, a->rq.name,
			      a->has_fi ? &a->fi : NULL, a->gen0);
	acall_free(a);
}

static void make_node(fuse_req_t req, uint32_t op, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev, const char *target, struct fuse_file_info *fi)
{
	int ret;

	if (strlen(name) > MDS_NAME_MAX || (target && strlen(target) > MDS_PATH_MAX)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (g.perm) {
		struct fp_cred c;
		fp_cred_init(&c, req);
		if ((ret = perm_dir(req, &c, parent, FP_W | FP_X, NULL))) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	struct acall *a = acall_new(req, op, make_node_done);
	if (!a)
		return;
	if (fi) {
		a->fi = *fi;
		a->has_fi = true;
	}
	struct mds_req *rq = &a->rq;
	rq->ino = parent;
	snprintf(rq->name, sizeof(rq->name), "%s", name);
	rq->mode = mode & ~fuse_req_ctx(req)->umask;
	if (op == MDS_OP_MKNOD && !(mode & S_IFMT))
		rq->mode |= S_IFREG;
	rq->rdev = rdev;
	rq->flags = MDS_F_EXCL | (fi ? 0x2u : 0);
	if (target)
		snprintf(rq->target, sizeof(rq->target), "%s", target);
	mds_call_async(a);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	make_node(req, MDS_OP_MKNOD, parent, name, mode, rdev, NULL, NULL);
}

static bool create_here(fuse_req_t req, uint32_t op, fuse_ino_t parent, const char *name,
			mode_t mode, struct fuse_file_info *fi);

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	if (!create_here(req, MDS_OP_MKDIR, parent, name, mode | S_IFDIR, NULL))
		make_node(req, MDS_OP_MKDIR, parent, name, mode | S_IFDIR, 0, NULL, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make_node(req, MDS_OP_SYMLINK, parent, name, S_IFLNK | 0777, 0, link, NULL);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	if (!create_here(req, MDS_OP_MKNOD, parent, name, (mode & 07777) | S_IFREG, fi))
		make_node(req, MDS_OP_MKNOD, parent, name, (mode & 07777) | S_IFREG, 0, NULL, fi);
}

/* unlink, rmdir, rename: may the caller?  (may_delete, may_create, and a
 * directory moved to another parent needs write permission on itself to
 * change its "..") */
static int perm_change(fuse_req_t req, uint32_t op, fuse_ino_t a, const char *n1,
		       fuse_ino_t b, const char *n2, unsigned flags)
{
	struct fp_cred c;
	struct lc_perm src, dst;
	bool have_src, have_dst;
	int ret;

	fp_cred_init(&c, req);
	if (op != MDS_OP_RENAME)
		return perm_remove(req, &c, a, n1, false, NULL, &have_src);
	bool moves = a != b;
	if ((ret = perm_remove(req, &c, a, n1, moves, &src, &have_src)))
		return ret;
	if ((ret = perm_remove(req, &c, b, n2, moves && (flags & 2u), &dst, &have_dst)))
		return ret;
	if (moves && have_src && S_ISDIR(src.mode) && (ret = fp_access(&c, &src, FP_W)))
		return ret;
	if (moves && have_dst && (flags & 2u) && S_ISDIR(dst.mode) &&
	    (ret = fp_access(&c, &dst, FP_W)))
		return ret;
	return 0;
}

static void simple_done(struct acall *a, int ret)
{
	fuse_reply_err(a->req, -ret);
	acall_free(a);
}

static void simple(fuse_req_t req, uint32_t op, fuse_ino_t a, const char *n1,
		   fuse_ino_t b, const char *n2, unsigned flags)
{
	int ret;

	if (strlen(n1) > MDS_NAME_MAX || (n2 && strlen(n2) > MDS_NAME_MAX)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (g.perm && (ret = perm_change(req, op, a, n1, b, n2, flags))) {
		fuse_reply_err(req, -ret);
		return;
	}
	struct acall *c = acall_new(req, op, simple_done);
	if (!c)
		return;
	c->rq.ino = a;
	c->rq.ino2 = b;
	snprintf(c->rq.name, sizeof(c->rq.name), "%s", n1);
	if (n2)
		snprintf(c->rq.name2, sizeof(c->rq.name2), "%s", n2);
	c->rq.flags = flags;
	mds_call_async(c);
}

/* The MDS's answer to a removal answered here already: it must agree.
 * -ENOENT: another client's change came first (the MDS removes only the
 * inode this client saw).  Anything else cannot reach the application
 * any more: logged, and the directory's listing dropped (resynchronized
 * from the MDS on next use). */
/* One asynchronous removal less in flight (unsafe_wait waits for none). */
static void async_n_down(void)
{
	pthread_mutex_lock(&u.lock);
	if (--u.async_n == 0)
		pthread_cond_broadcast(&u.cond);
	pthread_mutex_unlock(&u.lock);
}

static void async_rm_done(struct acall *a, int ret)
{
	if (ret && ret != -ENOENT) {
		__atomic_add_fetch(&g.async_fails, 1, __ATOMIC_RELAXED);
		log_warn("fuse", "the MDS refused the removal of '%s' in directory %llu "
			 "(%s) that this mount had already answered; the name stays",
			 a->rq.name, (unsigned long long)a->rq.ino, strerror(-ret));
		/* the listing goes, and the kernel's (negative) entry of name */
		struct mds_chg c = { .kind = MDS_CHG_DENT, .ino = a->rq.ino };
		snprintf(c.name, sizeof(c.name), "%s", a->rq.name);
		lc_revoke(&c, 1, false);
	}
	acall_free(a);
	async_n_down();
}

/* Under g.async_mu: a removal held back (fault injection). */
static bool held_add(struct acall *a)
{
	if (g.nheld == g.held_cap) {
		size_t nc = g.held_cap ? 2 * g.held_cap : 64;
		struct acall **nh = realloc(g.held, nc * sizeof(*nh));
		if (!nh)
			return false;
		g.held = nh;
		g.held_cap = nc;
	}
	g.held[g.nheld] = a;
	__atomic_store_n(&g.nheld, g.nheld + 1, __ATOMIC_RELAXED);
	return true;
}

/* Under g.async_mu: sends the changes held back, in order.  may_wait:
 * the caller may wait for a reconnect's resends (not the loop thread, nor
 * a thread that answers the kernel); else, while they run, they stay
 * held (the closer tries again). */
static void held_send_(bool may_wait)
{
	pthread_mutex_lock(&u.lock);
	bool replay = u.replay && !u.gone;
	pthread_mutex_unlock(&u.lock);
	if (replay && !may_wait) {
		gather_kick();
		return;
	}
	for (size_t i = 0; i < g.nheld; i++)
		mds_call_async(g.held[i]);
	__atomic_store_n(&g.nheld, 0, __ATOMIC_RELAXED);
}

#define GATHER_US 1000u		/* default of g.gather_us */
#define GATHER_US_MAX 100000u
#define GATHER_MAX 64u		/* held changes that go at once */

/* The frame of a change answered here.  here_begin takes g.async_mu and
 * counts the change, unless a reconnect's resends run (false: the MDS
 * answers, as it must for order).  here_end lets g.async_mu go; r is 1
 * when the change was answered here (and here_send took a), 0 when the
 * MDS is to answer it, < 0 an error req is answered with.  It returns
 * whether req is answered. */
static bool here_begin(void)
{
	pthread_mutex_lock(&g.async_mu);
	pthread_mutex_lock(&u.lock);
	bool ok = !u.replay && !u.gone;
	if (ok)
		u.async_n++;
	pthread_mutex_unlock(&u.lock);
	return ok;
}

static bool here_end(fuse_req_t req, struct acall *a, bool counted, int r)
{
	pthread_mutex_unlock(&g.async_mu);
	if (r == 1)
		return true;
	if (counted)
		async_n_down();
	acall_free(a);
	if (r < 0)
		fuse_reply_err(req, -r);
	return r < 0;
}

/* Under g.async_mu: a change answered here goes to the MDS, at once or
 * held (gathering; the fault injection holds until a revoke, another
 * call or the unmount). */
static void here_send(struct acall *a)
{
	a->here = true;
	a->aseq = ++g.aseq;
	if ((g.async_hold || g.gather_us) && held_add(a)) {
		if (g.async_hold)
			return;
		if (g.nheld >= GATHER_MAX)
			held_send_(false);
		else if (g.nheld == 1)
			gather_kick();
		return;
	}
	mds_call_async(a);
}

/* unlink/rmdir answered without waiting for the MDS, under an exclusive
 * lease of the directory (doc/fs.md, "Asynchronous removals"): true when
 * req is answered. */
static bool remove_here(fuse_req_t req, uint32_t op, fuse_ino_t parent, const char *name)
{
	uint64_t victim = 0;
	int r;

	if (!g.async_rm || strlen(name) > MDS_NAME_MAX ||
	    __atomic_load_n(&mds_version, __ATOMIC_RELAXED) < 8)
		return false;
	if (g.perm && perm_change(req, op, parent, name, 0, NULL, 0))
		return false;	/* the MDS answers (and says why) */
	/* no FUSE request of its own: the kernel is answered here */
	struct acall *a = acall_new(NULL, op, async_rm_done);
	if (!a)
		return false;
	req_cred(&a->rq, req);
	bool counted = here_begin();
	r = counted ? lc_remove_here(parent, name, op == MDS_OP_RMDIR, &victim) : 0;
	if (r == 1) {
		a->rq.ino = parent;
		a->rq.ino2 = victim;
		a->rq.lflags |= MDS_L_ASYNC;
		snprintf(a->rq.name, sizeof(a->rq.name), "%s", name);
		here_send(a);	/* no wait: not replaying (checked above) */
	}
	bool answered = here_end(req, a, counted, r);
	if (r != 1)
		return answered;
	__atomic_add_fetch(&g.async_rms, 1, __ATOMIC_RELAXED);
	fuse_reply_err(req, 0);
	return true;
}

/* ---- asynchronous creates (doc/fs.md, "Asynchronous creates") ---------------- */

/* The inode numbers the MDS gave this client (INOS): the range in use
 * and the next one, asked for when the first is half used.  Numbers are
 * taken in increasing order under g.async_mu, so they reach the MDS in
 * that order too (its table then knows each unused without a look in the
 * metadata pool).  A reconnect drops them (the MDS may have restarted
 * and forgotten them: they would still be unique, only slower to check). */
#define INOS_WANT 1024u

static struct {
	pthread_mutex_t mu;	/* after g.async_mu; the loop thread takes it */
	uint64_t next, end;
	uint64_t snext, send;
	uint64_t gen;		/* fm_gen() of the ranges */
	bool asking;
} ip = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void inos_done(struct acall *a, int ret)
{
	pthread_mutex_lock(&ip.mu);
	ip.asking = false;
	if (!ret && a->rp.ino_count && a->gen0 == ip.gen) {
		if (ip.next >= ip.end) {
			ip.next = a->rp.ino_first;
			ip.end = a->rp.ino_first + a->rp.ino_count;
		} else {
			ip.snext = a->rp.ino_first;
			ip.send = a->rp.ino_first + a->rp.ino_count;
		}
	} else if (ret) {
		log_debug("fuse", "no inode numbers from the MDS: %s", strerror(-ret));
	}
	pthread_mutex_unlock(&ip.mu);
	acall_free(a);
}

/* Asks the MDS for a range (not under g.async_mu: it may wait for a
 * reconnect's resends). */
static void inos_ask(void)
{
	struct acall *a = acall_new(NULL, MDS_OP_INOS, inos_done);

	if (!a) {
		pthread_mutex_lock(&ip.mu);
		ip.asking = false;
		pthread_mutex_unlock(&ip.mu);
		return;
	}
	a->rq.max = INOS_WANT;
	mds_call_async(a);
}

/* Under g.async_mu: the next number (0: none now), and whether to ask
 * for more (inos_ask, once g.async_mu is let go). */
static uint64_t ino_take(bool *ask)
{
	uint64_t ino = 0, gen = fm_gen();

	pthread_mutex_lock(&ip.mu);
	if (ip.gen != gen) {
		ip.next = ip.end = ip.snext = ip.send = 0;
		ip.gen = gen;
	}
	if (ip.next >= ip.end && ip.snext < ip.send) {
		ip.next = ip.snext;
		ip.end = ip.send;
		ip.snext = ip.send = 0;
	}
	if (ip.next < ip.end)
		ino = ip.next++;
	*ask = !ip.asking && ip.snext >= ip.send && ip.end - ip.next < INOS_WANT / 2;
	if (*ask)
		ip.asking = true;
	pthread_mutex_unlock(&ip.mu);
	return ino;
}

/* Under g.async_mu: ino, just taken, was not used after all. */
static void ino_untake(uint64_t ino)
{
	pthread_mutex_lock(&ip.mu);
	if (ip.next == ino + 1)
		ip.next = ino;
	pthread_mutex_unlock(&ip.mu);
}

/* The MDS's answer to a create answered here: it must agree.  A refusal
 * (no room for the record, say) cannot reach the application any more:
 * logged, and the name and the record dropped, so that the MDS answers
 * for them from now on (the inode is not there: ENOENT). */
static void async_create_done(struct acall *a, int ret)
{
	if (ret) {
		__atomic_add_fetch(&g.async_create_fails, 1, __ATOMIC_RELAXED);
		log_warn("fuse", "the MDS refused the %s of '%s' in directory %llu (%s) that "
			 "this mount had already answered; inode %llu is not there",
			 a->rq.op == MDS_OP_MKDIR ? "mkdir" : "create", a->rq.name,
			 (unsigned long long)a->rq.ino, strerror(-ret),
			 (unsigned long long)a->rq.replay_ino);
		struct mds_chg c[2] = { { .kind = MDS_CHG_DENT, .ino = a->rq.ino },
					{ .kind = MDS_CHG_ATTR, .ino = a->rq.replay_ino } };
		snprintf(c[0].name, sizeof(c[0].name), "%s", a->rq.name);
		lc_revoke(c, 2, false);
	}
	acall_free(a);
	async_n_down();
}

/* create (fi) and mkdir answered without waiting for the MDS, under an
 * exclusive lease of the directory: true when req is answered. */
static bool create_here(fuse_req_t req, uint32_t op, fuse_ino_t parent, const char *name,
			mode_t mode, struct fuse_file_info *fi)
{
	struct lc_info ci;
	struct mds_inode in;
	bool ask = false;
	int r = 0;

	if (!g.async_create || strlen(name) > MDS_NAME_MAX ||
	    __atomic_load_n(&mds_version, __ATOMIC_RELAXED) < 9)
		return false;
	if (g.perm) {
		struct fp_cred c;
		fp_cred_init(&c, req);
		if (perm_dir(req, &c, parent, FP_W | FP_X, NULL))
			return false;	/* make_node says why */
	}
	struct acall *a = acall_new(NULL, op, async_create_done);
	if (!a)
		return false;
	struct mds_req *rq = &a->rq;
	req_cred(rq, req);
	rq->ino = parent;
	snprintf(rq->name, sizeof(rq->name), "%s", name);
	rq->mode = mode & ~fuse_req_ctx(req)->umask;
	rq->flags = MDS_F_EXCL | (fi ? 0x2u : 0);
	rq->lflags |= MDS_L_ASYNC;
	/* the record as op_create in mds_ops.c makes it (lc_create_here
	 * adds the parent's part) */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&in, 0, sizeof(in));
	in.mode = op == MDS_OP_MKDIR ? S_IFDIR | (rq->mode & 07777) : rq->mode;
	in.uid = rq->uid;
	in.gid = rq->gid;
	in.atime = in.mtime = in.ctime = (uint64_t)ts.tv_sec * 1000000000ull +
					 (uint64_t)ts.tv_nsec;
	rq->s_mtime = in.mtime;
	uint64_t gen0 = a->gen0;
	bool counted = here_begin();
	if (counted && (in.ino = ino_take(&ask)))
		r = lc_create_here(parent, name, &in, &ci);
	if (r == 1) {
		rq->replay_ino = in.ino;
		here_send(a);	/* no wait: not replaying (checked above) */
	} else if (in.ino) {
		ino_untake(in.ino);
	}
	bool answered = here_end(req, a, counted, r);
	if (ask)
		inos_ask();
	if (r != 1)
		return answered;
	__atomic_add_fetch(&g.async_creates, 1, __ATOMIC_RELAXED);
	reply_created(req, &in, &ci, parent, name, fi, gen0);	/* a is the MDS call's now */
	return true;
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (!remove_here(req, MDS_OP_UNLINK, parent, name))
		simple(req, MDS_OP_UNLINK, parent, name, 0, NULL, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (!remove_here(req, MDS_OP_RMDIR, parent, name))
		simple(req, MDS_OP_RMDIR, parent, name, 0, NULL, 0);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	simple(req, MDS_OP_RENAME, parent, name, newparent, newname, flags);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	if (strlen(newname) > MDS_NAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (g.perm) {
		struct fp_cred c;
		struct lc_perm p;
		fp_cred_init(&c, req);
		if ((ret = perm_get(req, ino, &p)) || (ret = fp_link_source(&c, &p)) ||
		    (ret = perm_dir(req, &c, newparent, FP_W | FP_X, NULL))) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	req_init(&rq, req, MDS_OP_LINK);
	rq.ino = ino;
	rq.ino2 = newparent;
	snprintf(rq.name2, sizeof(rq.name2), "%s", newname);
	struct lc_info ci;
	ret = mds_call_ci(&rq, &rp, &ci);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		reply_entry(req, &rp.in[0], &ci, newparent, newname);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct mds_req rq;
	struct mds_reply *rp = malloc(sizeof(*rp));
	int ret;

	if (!rp) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	req_init(&rq, req, MDS_OP_READLINK);
	rq.ino = ino;
	ret = mds_call(&rq, rp);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_readlink(req, rp->target);
	free(rp);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct mds_req rq;
	struct mds_reply rp;
	struct statvfs sv;
	int ret;

	req_init(&rq, req, MDS_OP_STATFS);
	ret = mds_call(&rq, &rp);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = rp.st.bsize;
	sv.f_blocks = rp.st.blocks;
	sv.f_bfree = rp.st.bfree;
	sv.f_bavail = rp.st.bavail;
	sv.f_files = rp.st.files;
	sv.f_ffree = sv.f_favail = rp.st.ffree;
	sv.f_namemax = MDS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

/* ---- files ------------------------------------------------------------------ */

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	if (g.perm) {
		struct fp_cred c;
		struct lc_perm p;
		int acc = fi->flags & O_ACCMODE;
		int mask = acc == O_RDONLY ? FP_R : acc == O_WRONLY ? FP_W : FP_R | FP_W;
		if (fi->flags & O_TRUNC)
			mask |= FP_W;
		if (fi->flags & FMODE_EXEC_FLAG)
			mask = FP_X;	/* execve: MAY_EXEC alone (a 0711 binary runs) */
		fp_cred_init(&c, req);
		if ((ret = perm_get(req, ino, &p)) || (ret = fp_access(&c, &p, mask))) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	req_init(&rq, req, MDS_OP_OPEN);
	rq.ino = ino;
	uint64_t gen0 = fm_gen();
	ret = mds_call(&rq, &rp);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	fd_open(ino, rp.in[0].size, false, gen0);
	if (fi->flags & O_TRUNC) {
		fd_wb_flush(ino);	/* an error of old data no longer matters */
		req_init(&rq, req, MDS_OP_SETATTR);
		rq.ino = ino;
		rq.setmask = MDS_SET_SIZE;
		rq.s_size = 0;
		rq.size_hint = fd_set_size(ino, 0);
		ret = mds_call(&rq, &rp);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	/* close-to-open: the kernel drops what it caches of the file unless
	 * leases have covered it since an earlier open (lc_open_keep) */
	bool keep = lc_open_keep(ino);
	fi->keep_cache = keep && !(fi->flags & O_TRUNC);
	/* A reader's close has nothing of its own to push (a writer's
	 * close pushes what it wrote, close-to-open holds by that), so the
	 * kernel skips FLUSH for it (FOPEN_NOFLUSH; we take no POSIX locks,
	 * which FLUSH would release): one FUSE round trip less per read */
	fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
	fuse_reply_open(req, fi);
}

/* ---- directories -------------------------------------------------------------- */

struct dirh {
	struct lc_ent *ents;
	size_t n;
	fuse_ino_t parent;
	uint64_t gen;		/* the cached listing it copies (0: none) */
};

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (g.perm) {
		struct fp_cred c;
		fp_cred_init(&c, req);
		int ret = perm_dir(req, &c, ino, FP_R, NULL);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	struct dirh *d = calloc(1, sizeof(*d));

	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fuse_reply_open(req, fi);
}

/* Is every entry's record in the cache?  (readdirplus answers from it.) */
static bool dir_attrs_cached(const struct lc_ent *ents, size_t n)
{
	struct mds_inode in;

	for (size_t i = 0; i < n; i++)
		if (lc_attr(ents[i].ino, &in) <= 0)
			return false;
	return true;
}

/* Takes a snapshot of the whole directory (positions stay stable for the
 * life of the handle; rewinddir takes a new one): the leased listing when
 * the cache has it (and, for readdirplus, every entry's record), else
 * from the MDS, with the records (cached under their leases) and the
 * listing cached under the directory's lease. */
static int dir_fill(fuse_req_t req, fuse_ino_t ino, struct dirh *d, bool plus)
{
	struct mds_req *rq;
	struct mds_reply rp;
	struct lc_info ci0, ci;
	size_t cap = 0;
	int ret = 0;

	lc_ents_free(d->ents, d->n);
	d->ents = NULL;
	d->n = 0;
	d->gen = 0;
	if (lc_dir_get(ino, &d->ents, &d->n, &d->gen) == 0) {
		if (!plus || dir_attrs_cached(d->ents, d->n))
			return 0;
		lc_ents_free(d->ents, d->n);
		d->ents = NULL;
		d->n = 0;
		d->gen = 0;
	}
	rq = malloc(sizeof(*rq));
	if (!rq)
		return -ENOMEM;
	req_init(rq, req, MDS_OP_READDIR);
	rq->ino = ino;
	rq->max = MDS_READDIR_MAX;
	if (lc_on())
		rq->lflags |= MDS_L_PLUS;
	for (int page = 0;; page++) {
		ret = mds_call_ci(rq, &rp, page ? &ci : &ci0);
		if (ret)
			break;
		if (rp.nents && d->n + rp.nents > cap) {
			size_t ncap = cap ? cap * 2 : rp.nents;
			while (ncap < d->n + rp.nents)
				ncap *= 2;
			struct lc_ent *ne = realloc(d->ents, ncap * sizeof(*ne));
			if (!ne)
				ret = -ENOMEM;
			else {
				d->ents = ne;
				cap = ncap;
			}
		}
		for (uint32_t i = 0; !ret && i < rp.nents; i++) {
			struct lc_ent *e = &d->ents[d->n];
			e->name = strdup(rp.ents[i].name);
			if (!e->name) {
				ret = -ENOMEM;
				break;
			}
			e->ino = rp.ents[i].ino;
			e->mode = rp.ents[i].mode;
			d->n++;
		}
		if (!ret && rp.nents)
			snprintf(rq->cookie, sizeof(rq->cookie), "%s", rp.ents[rp.nents - 1].name);
		free(rp.ents);
		free(rp.plus);
		if (ret || !rp.more || !rp.nents)
			break;
	}
	free(rq);
	if (ret)
		return ret;
	/* cache a copy under the first page's lease (refused if anything
	 * changed the directory since that page arrived) */
	if (ci0.exp && entry_timeout(&ci0, ino) > 0) {
		struct lc_ent *copy = calloc(d->n ? d->n : 1, sizeof(*copy));
		size_t i;
		for (i = 0; copy && i < d->n; i++) {
			copy[i] = d->ents[i];
			if (!(copy[i].name = strdup(d->ents[i].name)))
				break;
		}
		if (copy && i == d->n)
			d->gen = lc_dir_put(ino, copy, d->n, &ci0);
		else
			lc_ents_free(copy, i);
	}
	return 0;
}

static void dir_list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi, bool plus)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	char *buf;
	size_t used = 0;

	if (off == 0) {
		int ret = dir_fill(req, ino, d, plus);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	lc_kbar_enter();
	/* the snapshot's entries are still what the MDS leased while the
	 * listing it copies is cached (a revoke drops it) */
	double dleft = plus && d->gen ? lc_dir_left(ino, d->gen) : 0;
	for (size_t i = (size_t)off; i < d->n + 2; i++) {
		struct fuse_entry_param e;
		const char *name;
		memset(&e, 0, sizeof(e));
		if (i == 0) {
			name = ".";
			e.attr.st_ino = ino;
			e.attr.st_mode = S_IFDIR;
		} else if (i == 1) {
			name = "..";
			e.attr.st_ino = d->parent ? d->parent : FUSE_ROOT_ID;	/* the kernel answers ".." itself */
			e.attr.st_mode = S_IFDIR;
		} else {
			const struct lc_ent *de = &d->ents[i - 2];
			struct mds_inode in;
			double left;
			name = de->name;
			e.attr.st_ino = de->ino;
			e.attr.st_mode = de->mode;
			/* with a leased record the kernel gets the entry and its
			 * attributes (no lookup, no getattr); without, the name */
			if (dleft > 0 && (left = lc_attr(de->ino, &in)) > 0)
				fill_entry(&e, &in, lc_kname(ino, name, dleft), left);
		}
		size_t need = plus ? fuse_add_direntry_plus(req, buf + used, size - used, name,
							    &e, (off_t)(i + 1))
				   : fuse_add_direntry(req, buf + used, size - used, name,
						       &e.attr, (off_t)(i + 1));
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	lc_kbar_leave();
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	dir_list(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	dir_list(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;

	if (d) {
		lc_ents_free(d->ents, d->n);
		free(d);
	}
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	/* the entries this client made are journaled */
	fuse_reply_err(req, -unsafe_wait_all());
}

/* ---- extended attributes ------------------------------------------------------ */

/* xattr_permission: security.* and system.* are the kernel's and the
 * MDS's business, trusted.* the kernel's (CAP_SYS_ADMIN); the others
 * (user.*) want read or write permission on the inode, and in a sticky
 * directory only its owner writes them. */
static int perm_xattr(fuse_req_t req, fuse_ino_t ino, const char *name, bool write)
{
	struct fp_cred c;
	struct lc_perm p;
	int ret;

	if (!g.perm || !strncmp(name, "security.", 9) || !strncmp(name, "system.", 7) ||
	    !strncmp(name, "trusted.", 8))
		return 0;
	fp_cred_init(&c, req);
	if ((ret = perm_get(req, ino, &p)))
		return ret;
	if (write && S_ISDIR(p.mode) && (p.mode & S_ISVTX) && !fp_owner(&c, &p))
		return -EPERM;
	return fp_access(&c, &p, write ? FP_W : FP_R);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	if (strlen(name) > MDS_NAME_MAX) {
		fuse_reply_err(req, ERANGE);
		return;
	}
	if (size > MDS_XATTR_MAX) {
		fuse_reply_err(req, E2BIG);
		return;
	}
	if (!strncmp(name, "system.posix_acl_", 17)) {
		/* POSIX ACLs are not supported yet: refusing them makes tools
		 * such as cp -a fall back to chmod (later: FUSE_CAP_POSIX_ACL) */
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if ((ret = perm_xattr(req, ino, name, true))) {
		fuse_reply_err(req, -ret);
		return;
	}
	req_init(&rq, req, MDS_OP_SETXATTR);
	rq.ino = ino;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	rq.value = value;
	rq.vlen = (uint32_t)size;
	rq.flags = (uint32_t)flags;
	ret = mds_call(&rq, &rp);
	free(rp.value);
	fuse_reply_err(req, -ret);
}

static void xattr_reply(fuse_req_t req, int ret, struct mds_reply *rp, size_t size)
{
	if (ret)
		fuse_reply_err(req, -ret);
	else if (size == 0)
		fuse_reply_xattr(req, rp->vlen);
	else if (rp->vlen > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, rp->value, rp->vlen);
	free(rp->value);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct mds_req rq;
	struct mds_reply rp;

	if (strlen(name) > MDS_NAME_MAX) {
		fuse_reply_err(req, ERANGE);
		return;
	}
	if (!strncmp(name, "system.posix_acl_", 17)) {
		/* never set (setxattr refuses them), so never there: `ls -l`
		 * asks for each file */
		fuse_reply_err(req, ENODATA);
		return;
	}
	int pret = perm_xattr(req, ino, name, false);
	if (pret) {
		fuse_reply_err(req, -pret);
		return;
	}
	/* `ls -l` asks for security.selinux of each file: a leased record
	 * without the xattrs flag has none (setting one changes the record,
	 * which revokes the lease); else the answer may be cached with it */
	struct mds_inode in;
	if (lc_attr(ino, &in) > 0 && !(in.flags & MDS_INO_XATTRS)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	memset(&rp, 0, sizeof(rp));
	int hit = lc_xattr(ino, name, &rp.value, &rp.vlen);
	if (hit >= 0) {
		xattr_reply(req, hit ? 0 : -ENODATA, &rp, size);
		return;
	}
	req_init(&rq, req, MDS_OP_GETXATTR);
	rq.ino = ino;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	int ret = mds_call(&rq, &rp);
	xattr_reply(req, ret, &rp, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct mds_req rq;
	struct mds_reply rp;

	req_init(&rq, req, MDS_OP_LISTXATTR);
	rq.ino = ino;
	int ret = mds_call(&rq, &rp);
	xattr_reply(req, ret, &rp, size);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	if (strlen(name) > MDS_NAME_MAX) {
		fuse_reply_err(req, ERANGE);
		return;
	}
	if ((ret = perm_xattr(req, ino, name, true))) {
		fuse_reply_err(req, -ret);
		return;
	}
	req_init(&rq, req, MDS_OP_REMOVEXATTR);
	rq.ino = ino;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	ret = mds_call(&rq, &rp);
	free(rp.value);
	fuse_reply_err(req, -ret);
}

/* access(2), chdir(2): the kernel asks only without default_permissions. */
static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct fp_cred c;
	struct lc_perm p;
	int ret = 0;

	if (g.perm && mask) {
		fp_cred_init(&c, req);
		if (!(ret = perm_get(req, ino, &p)))
			ret = fp_access(&c, &p, ((mask & R_OK) ? FP_R : 0) | ((mask & W_OK) ? FP_W : 0) |
						((mask & X_OK) ? FP_X : 0));
	}
	fuse_reply_err(req, -ret);
}

static void op_init(void *userdata, struct fuse_conn_info *conn);

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = fd_op_read,
	.write = fd_op_write,
	.flush = fd_op_flush,
	.release = fd_op_release,
	.fsync = fd_op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.create = op_create,
	.access = op_access,
};

/* ---- start-up ------------------------------------------------------------------ */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	/* 1 MiB writes instead of 128 KiB (libfuse 3.14's buffer holds 256
	 * pages, the kernel's default fs.fuse.max_pages_limit; reads follow
	 * from max_pages, conn->max_read must equal the max_read mount
	 * option): fewer requests; fuse_data.c gathers them into 4 MiB
	 * objects and reads whole objects ahead.
	 * No FUSE_CAP_WRITEBACK_CACHE: with it the kernel keeps the size
	 * and mtime of a file it caches pages of as its own and ignores the
	 * MDS's, so another client's writes would not show after its close
	 * (close-to-open, doc/fs.md "File data"). */
	conn->max_write = 1u << 20;
	conn->max_readahead = 4u << 20;
	/* With leases the kernel's pages of a file stay right by the
	 * revokes (inval_inode) and by the open's rule (lc_open_keep); the
	 * kernel's own rule would drop the pages this client just wrote, at
	 * the first getattr: its mtime is not the one the writer pushed.
	 * Without leases the kernel's rule adds to close-to-open. */
	if (lc_on())
		conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
}

static const struct fuse_opt opt_spec[] = {
	{ "conf=%s", offsetof(struct opts, conf), 0 },
	{ "mon=%s", offsetof(struct opts, mon), 0 },
	{ "mds=%s", offsetof(struct opts, mds), 0 },
	{ "nolease", offsetof(struct opts, nolease), 1 },
	{ "kernel_perms", offsetof(struct opts, kernel_perms), 1 },
	{ "fuse_perms", offsetof(struct opts, fuse_perms), 1 },
	{ "sync_close", offsetof(struct opts, sync_close), 1 },
	{ "noasync_rm", offsetof(struct opts, noasync_rm), 1 },
	{ "noasync_create", offsetof(struct opts, noasync_create), 1 },
	{ "writeback_mb=%d", offsetof(struct opts, writeback_mb), 0 },
	{ "readahead_mb=%d", offsetof(struct opts, readahead_mb), 0 },
	{ "kernel_readahead_kb=%d", offsetof(struct opts, kernel_ra_kb), 0 },
	{ "blksize=%d", offsetof(struct opts, blksize), 0 },
	{ "gather_us=%d", offsetof(struct opts, gather_us), 0 },
	{ "log=%s", offsetof(struct opts, log), 0 },
	{ "log_level=%s", offsetof(struct opts, log_level), 0 },
	FUSE_OPT_END
};

/* The loop thread: a revoke from the MDS.  The cache drops what it
 * covers at once and queues the kernel's invalidations (done on a thread
 * of their own, fuse_cache.c), then we ack: the MDS answers the change
 * once every holder acked. */
static void on_mds_msg(void *arg, struct msg_conn *c, struct msg *m)
{
	(void)arg;
	if (m->type == MT_MDS_SAFE) {
		struct mds_safe sf;
		struct dec d;
		dec_init(&d, m->front, m->front_len);
		if (mds_safe_decode(&d, &sf) == 0) {
			pthread_mutex_lock(&u.lock);
			if (sf.seq > u.safe_seq)
				u.safe_seq = sf.seq;
			unsafe_drop_upto(sf.seq);
			pthread_mutex_unlock(&u.lock);
		}
	} else if (m->type == MT_MDS_NOTIFY && !(m->flags & MSG_F_REPLY)) {
		struct mds_notify *n = malloc(sizeof(*n));
		struct dec d;
		struct enc e;
		dec_init(&d, m->front, m->front_len);
		if (n && mds_notify_decode(&d, n) == 0) {
			/* an end of exclusivity: the removals answered under
			 * it are on their way before the ack (g.async_mu) */
			bool excl = false;
			for (uint32_t i = 0; i < n->n; i++)
				excl |= (n->c[i].kind & MDS_CHG_EXCL) != 0;
			if (excl) {
				pthread_mutex_lock(&g.async_mu);
				held_send_(false);	/* the loop thread */
			}
			lc_revoke(n->c, n->n, false);
			if (excl)
				pthread_mutex_unlock(&g.async_mu);
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

/* The loop thread: the MDS connection broke (a restart): the MDS forgot
 * our leases, so everything cached goes, the kernel's too. */
static void on_mds_closed(void *arg, struct msg_conn *c, int err)
{
	(void)arg;
	(void)c;
	(void)err;
	lc_revoke(NULL, 0, true);
	/* what the MDS answered but did not journal: resend it, first */
	pthread_mutex_lock(&u.lock);
	__atomic_store_n(&u.gen, u.gen + 1, __ATOMIC_RELEASE);	/* opens: re-counted */
	u.safe_seq = 0;	/* a restarted MDS counts from its journal */
	for (struct unsafe *e = u.head; e; e = e->next)
		e->jseq = RESEND;
	u.replay = true;	/* then "resends done" (the reconnect window) */
	pthread_cond_signal(&u.rcond);
	pthread_mutex_unlock(&u.lock);
}

static int connect_all(struct opts *o)
{
	struct mds_req rq;
	struct mds_reply *rp = malloc(sizeof(*rp));
	int ret;

	if (!rp)
		return -ENOMEM;
	ret = atoll_cluster_create(&g.cl, o->conf, 0);
	if (!ret && o->mon)
		ret = atoll_cluster_set(g.cl, "mon_host", o->mon);
	if (!ret)
		ret = atoll_cluster_connect(g.cl);
	if (ret) {
		fprintf(stderr, "atoll-fuse: cannot connect to the cluster: %s; check "
			"-o conf=/-o mon= and that the monitor runs\n", atoll_strerror(ret));
		goto out;
	}
	g.client_id = atoll_cluster_id(g.cl);
	if ((ret = -pthread_create(&u.thr, NULL, replayer_main, NULL)))
		goto out;
	u.thr_on = true;
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops mops = { .dispatch = on_mds_msg, .closed = on_mds_closed };
	mc.me.type = MSG_ENTITY_CLIENT;
	mc.me.id = g.client_id;
	if ((ret = msgr_create(&mc, &mops, NULL, &g.msgr)) || (ret = msgr_start(g.msgr)))
		goto out;
	g.mds = msgr_connect(g.msgr, o->mds);
	if (!g.mds) {
		fprintf(stderr, "atoll-fuse: '%s' is not an MDS address (IP:PORT)\n", o->mds);
		ret = -EINVAL;
		goto out;
	}
	/* after a restart, the resends of what the MDS had not journaled
	 * reach it before anything newer (on_mds_closed, the replayer) */
	msg_conn_set_ordered(g.mds);
	req_init(&rq, NULL, MDS_OP_SESSION);
	ret = mds_call(&rq, rp);
	if (ret) {
		fprintf(stderr, "atoll-fuse: the MDS at %s does not answer: %s\n", o->mds,
			atoll_strerror(ret));
		goto out;
	}
	ret = atoll_ioctx_create(g.cl, rp->target, &g.data);
	if (ret)
		fprintf(stderr, "atoll-fuse: cannot open the data pool '%s': %s\n",
			rp->target, atoll_strerror(ret));
	else
		ret = fd_init(g.data, (uint64_t)o->writeback_mb << 20,
			      (uint64_t)o->readahead_mb << 20, !o->sync_close);
out:
	free(rp);
	return ret;
}

/* ---- unmounting within a bound ------------------------------------------------
 *
 * Once the kernel's side of the mount is gone (fusermount3 -u, umount) or
 * a signal asked atoll-fuse to stop, it hands over what it still holds:
 * the calls in flight (the CLOSEs behind releases, a size push), the
 * buffered data (fd_shutdown), the changes the MDS answered but has not
 * journaled (it waits for MT_MDS_SAFE), then SESSION_END.  Each of those
 * waits for the MDS or the OSDs, and a hard mount waits for as long as
 * the MDS is away; at unmount nobody is left to wait for, so the MDS and
 * the OSDs get UNMOUNT_GRACE_MS from the end of the session, counted by
 * the ender thread.  When the grace runs out it gives up: the data path
 * stops waiting (fd_abandon); if the MDS still owes an answer or is away,
 * its connection is closed for good (every call fails ENOTCONN, nothing
 * waits for a reconnect: u.gone); what may be lost is logged.
 * SESSION_END itself waits SESSION_END_MS at most.  So atoll-fuse is gone
 * at most UNMOUNT_GRACE_MS + SESSION_END_MS plus its own teardown after
 * the unmount (doc/fs.md promises 10 s).
 *
 * The ender notices the end without polling: poll(2) on the /dev/fuse fd
 * reports POLLERR once the kernel aborted the connection (the unmount),
 * and the stop signals (SIGTERM, SIGINT, SIGHUP: libfuse's handler runs
 * first) and the loop's own end write to an eventfd. */
#define UNMOUNT_GRACE_MS 5000u
#define FUSE_MAX_THREADS 10u	/* FUSE workers at most (libfuse's default too) */
#define SESSION_END_MS 2000u

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* CLOCK_MONOTONIC: ending, done */
	int efd;		/* eventfd: stop now */
	int fuse_fd;
	bool ending;		/* the ender saw the end: the grace runs */
	bool done;		/* main handed over everything: no give-up */
	bool gave_up;
	pthread_t thr;
	bool thr_on;
	const char *mds_addr;
} ux = { .lock = PTHREAD_MUTEX_INITIALIZER, .efd = -1, .fuse_fd = -1 };

static struct sigaction ux_old[NSIG];
static volatile sig_atomic_t ux_signalled;	/* a stop signal came */

/* A stop signal: libfuse's handler (fuse_session_exit), then wake the
 * ender.  Only async-signal-safe calls. */
static void ux_on_signal(int sig)
{
	const uint64_t one = 1;

	ux_signalled = 1;
	if (sig > 0 && sig < NSIG && ux_old[sig].sa_handler != SIG_DFL &&
	    ux_old[sig].sa_handler != SIG_IGN)
		ux_old[sig].sa_handler(sig);
	if (ux.efd >= 0 && write(ux.efd, &one, sizeof(one)) < 0) {
		/* the counter is full: the ender is awake already */
	}
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The grace ran out (the ender): nothing waits for the OSDs from now on,
 * nor for the MDS if it still owes an answer or is away (an MDS that owes
 * nothing still gets SESSION_END, SESSION_END_MS at most). */
static void ux_give_up(void)
{
	pthread_mutex_lock(&u.lock);
	bool mds_owed = u.replay || u.head || !msg_conn_is_open(g.mds);
	pthread_mutex_unlock(&u.lock);
	pthread_mutex_lock(&ap.lock);
	mds_owed = mds_owed || ap.n || __atomic_load_n(&calls_waiting, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ap.lock);
	if (mds_owed) {
		log_warn("fuse", "the MDS at %s did not answer within %u s of the unmount of %s "
			 "(%s); giving up on it: its calls fail with ENOTCONN", ux.mds_addr,
			 UNMOUNT_GRACE_MS / 1000, mountpoint,
			 msg_conn_is_open(g.mds) ? "connected, no answer" : "not connected");
		msg_conn_close(g.mds);	/* the calls in flight fail now */
		pthread_mutex_lock(&u.lock);
		u.gone = true;
		pthread_cond_broadcast(&u.cond);
		pthread_cond_signal(&u.rcond);
		pthread_mutex_unlock(&u.lock);
		cut_fail_all();
	}
	if (!fd_abandon(mountpoint, UNMOUNT_GRACE_MS / 1000) && !mds_owed)
		log_warn("fuse", "the unmount of %s took more than %u s; giving up on what is "
			 "left", mountpoint, UNMOUNT_GRACE_MS / 1000);
}

/* How often the ender looks at /dev/fuse for the end of the mount.  It
 * does not sleep in a poll of it: every request the kernel queues wakes
 * each poller of /dev/fuse (POLLIN asked for or not), and that thread
 * then woke with every FUSE request - five a touch, a fifth of all of
 * atoll-fuse's context switches.  200 ms is nothing against the grace. */
#define ENDER_CHECK_MS 200

static void *ender_main(void *arg)
{
	struct pollfd pe = { .fd = ux.efd, .events = POLLIN };
	bool ended = false;

	(void)arg;
	for (;;) {
		int n = poll(&pe, 1, ENDER_CHECK_MS);
		if (n > 0)
			break;	/* a signal or the loop's end (ux_ending) */
		if (n < 0 && errno != EINTR)
			break;
		/* POLLERR (or HUP/NVAL) without waiting: the kernel ended the mount */
		struct pollfd pf = { .fd = ux.fuse_fd, .events = 0 };
		if (poll(&pf, 1, 0) > 0) {
			ended = true;
			break;
		}
	}
	log_info("fuse", "%s %s: the MDS and the OSDs get up to %u s to take what this client "
		 "still holds", ended ? "the kernel ended the mount of" : "stopping the mount of",
		 mountpoint, UNMOUNT_GRACE_MS / 1000);
	pthread_mutex_lock(&ux.lock);
	ux.ending = true;
	pthread_cond_broadcast(&ux.cond);
	uint64_t end = mono_ns() + UNMOUNT_GRACE_MS * 1000000ull;
	struct timespec ts = { .tv_sec = (time_t)(end / 1000000000ull),
			       .tv_nsec = (long)(end % 1000000000ull) };
	while (!ux.done)
		if (pthread_cond_timedwait(&ux.cond, &ux.lock, &ts) == ETIMEDOUT)
			break;
	if (!ux.done) {
		ux.gave_up = true;
		pthread_mutex_unlock(&ux.lock);
		ux_give_up();
		return NULL;
	}
	pthread_mutex_unlock(&ux.lock);
	return NULL;
}

/* After the mount: starts the ender and puts ux_on_signal in front of
 * libfuse's stop handlers.  A failure is logged (the unmount is then
 * unbounded, as before). */
static void ux_start(struct fuse_session *se, const char *mds_addr)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	pthread_condattr_t ca;

	ux.mds_addr = mds_addr;
	ux.fuse_fd = fuse_session_fd(se);
	ux.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ux.cond, &ca);
	pthread_condattr_destroy(&ca);
	if (ux.efd < 0 || pthread_create(&ux.thr, NULL, ender_main, NULL) != 0) {
		log_error("fuse", "cannot start the thread that bounds the unmount (%s): an "
			  "unmount while the MDS is away may wait for it", strerror(errno));
		return;
	}
	ux.thr_on = true;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa;
		if (sigaction(sigs[i], NULL, &ux_old[sigs[i]]) != 0 ||
		    (ux_old[sigs[i]].sa_flags & SA_SIGINFO))
			continue;
		sa = ux_old[sigs[i]];
		sa.sa_handler = ux_on_signal;
		sigaction(sigs[i], &sa, NULL);
	}
}

/* The FUSE loop returned: the grace runs from now at the latest (an
 * unmount or a signal started it earlier).  libfuse's stop handlers are
 * back (fuse_remove_signal_handlers removes only its own).  Returns once
 * the ender stopped polling the session's fd (it may go now). */
static void ux_ending(void)
{
	const uint64_t one = 1;

	if (!ux.thr_on)
		return;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction cur;
		if (sigaction(sig, NULL, &cur) == 0 && cur.sa_handler == ux_on_signal)
			sigaction(sig, &ux_old[sig], NULL);
	}
	if (write(ux.efd, &one, sizeof(one)) < 0) {
		/* full: the ender is awake already */
	}
	pthread_mutex_lock(&ux.lock);
	while (!ux.ending)
		pthread_cond_wait(&ux.cond, &ux.lock);
	pthread_mutex_unlock(&ux.lock);
}

/* Everything is handed over (or given up): stops the ender. */
static void ux_stop(void)
{
	if (!ux.thr_on)
		return;
	pthread_mutex_lock(&ux.lock);
	ux.done = true;
	pthread_cond_broadcast(&ux.cond);
	pthread_mutex_unlock(&ux.lock);
	pthread_join(ux.thr, NULL);
	ux.thr_on = false;
	close(ux.efd);
	ux.efd = -1;
}

/* The changes the MDS answered but never said it journaled: the MDS went
 * away (or never answered) before it did, and a crash of it before the
 * journal loses them.  One line each (the first 32), for the user to
 * check. */
static void unsafe_log_lost(void)
{
	struct mds_req *rq = malloc(sizeof(*rq));
	uint64_t n = 0;

	pthread_mutex_lock(&u.lock);
	for (struct unsafe *e = u.head; e; e = e->next)
		n++;
	if (n)
		log_error("fuse", "%" PRIu64 " change(s) the MDS at %s answered were not journaled "
			  "when %s was unmounted: they may be lost if the MDS stopped without "
			  "journaling them", n, ux.mds_addr, mountpoint);
	unsigned i = 0;
	for (struct unsafe *e = u.head; e && rq && i < 32; e = e->next, i++) {
		struct dec d;
		dec_init(&d, e->buf, e->len);
		if (mds_req_decode(&d, rq) != 0)
			continue;
		if (rq->name2[0])
			log_error("fuse", "not journaled, may be lost: %s '%s' in folder %" PRIu64
				  " to '%s' in folder %" PRIu64 " (request %" PRIu64 ")",
				  mds_op_name(rq->op), rq->name, rq->ino, rq->name2, rq->ino2,
				  rq->reqid);
		else if (rq->name[0])
			log_error("fuse", "not journaled, may be lost: %s '%s' in folder %" PRIu64
				  " (request %" PRIu64 ")", mds_op_name(rq->op), rq->name,
				  rq->ino, rq->reqid);
		else if (rq->size_hint)
			log_error("fuse", "not journaled, may be lost: the size %" PRIu64 " of "
				  "inode %" PRIu64 " (%s, request %" PRIu64 ")", rq->size_hint,
				  rq->ino, mds_op_name(rq->op), rq->reqid);
		else
			log_error("fuse", "not journaled, may be lost: %s of inode %" PRIu64
				  " (request %" PRIu64 ")", mds_op_name(rq->op), rq->ino,
				  rq->reqid);
	}
	if (n > i)
		log_error("fuse", "... and %" PRIu64 " more change(s) not journaled", n - i);
	pthread_mutex_unlock(&u.lock);
	free(rq);
}

static void on_session_end(void *arg, struct msg *reply, int err)
{
	struct rwait *w = arg;

	msg_free(reply);
	cw_finish(&w->cw, err);
}

/* SESSION_END: the MDS may forget this client (no reconnect to wait
 * for).  Waits SESSION_END_MS at most: with no answer, the MDS drops the
 * session itself once the connection is gone for its session timeout
 * (it then evicts the client, which is gone anyway). */
static void session_end(void)
{
	struct mds_req *rq = calloc(1, sizeof(*rq));
	struct rwait w = { .cw = CALL_WAIT_INIT };
	struct enc e;
	int ret = -ENOMEM;

	/* after the resends and "resends done" of a reconnect (a restarted
	 * MDS would take a later SESSION flagged REPLAY as a new session) */
	pthread_mutex_lock(&u.lock);
	while (u.replay && !u.gone)
		pthread_cond_wait(&u.cond, &u.lock);
	bool gone = u.gone;
	pthread_mutex_unlock(&u.lock);
	if (gone) {
		ret = -ENOTCONN;
		goto out;
	}
	if (!rq)
		goto out;
	req_init(rq, NULL, MDS_OP_SESSION_END);
	enc_init(&e);
	mds_req_encode(&e, rq);
	struct msg *m = msg_new(MT_MDS_REQUEST, &e);
	enc_free(&e);
	ret = m ? msg_call(g.mds, m, SESSION_END_MS, on_session_end, &w) : -ENOMEM;
	if (!ret)
		ret = cw_call_wait(&w.cw);
out:
	if (ret)
		log_warn("fuse", "the MDS at %s did not take the end of this client's session "
			 "(%s); it ends the session itself once the connection is gone for its "
			 "session timeout", ux.mds_addr,
			 ret == -ETIMEDOUT ? "no answer in time" :
			 ret == -ENOTCONN ? "the unmount gave up on it" : strerror(-ret));
	free(rq);
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co;
	struct fuse_session *se = NULL;
	struct opts o = { .writeback_mb = (int)(FD_WB_MAX_DEFAULT >> 20),
			  .readahead_mb = (int)(FD_RA_MAX_DEFAULT >> 20),
			  .kernel_ra_kb = (int)FD_KERNEL_RA_KB_DEFAULT,
			  .blksize = BLKSIZE_DEFAULT, .gather_us = -1 };
	int ret = 1;

	if (fuse_opt_parse(&args, &o, opt_spec, NULL) == -1)
		return 1;
	if (fuse_parse_cmdline(&args, &co) != 0)
		return 1;
	if (co.show_help) {
		printf("usage: atoll-fuse MOUNTPOINT [-f] [-o options]\n"
		       "  -o conf=FILE    atoll.conf\n"
		       "  -o mon=ADDR     the monitor\n"
		       "  -o mds=IP:PORT  the MDS (default: mds_addr of atoll.conf or 127.0.0.1:6800)\n"
		       "  -o nolease      no leases: the kernel caches metadata for 1 s (and\n"
		       "                  checks permissions: default_permissions)\n"
		       "  -o kernel_perms the kernel checks permissions (default_permissions;\n"
		       "                  the default)\n"
		       "  -o fuse_perms   atoll-fuse checks permissions instead of the kernel:\n"
		       "                  one request less per change, but for a moment after a\n"
		       "                  chmod of a folder on this mount, names the kernel\n"
		       "                  cached in it stay reachable (see doc/fs.md)\n"
		       "  -o writeback_mb=N  memory for buffered writes (default %d; 0: each\n"
		       "                  write goes out at once)\n"
		       "  -o noasync_rm   every unlink and rmdir waits for the MDS (by default\n"
		       "                  one in a folder this mount alone uses is answered\n"
		       "                  at once and sent behind: doc/fs.md)\n"
		       "  -o noasync_create  every create and mkdir waits for the MDS (by\n"
		       "                  default one in a folder this mount alone uses is\n"
		       "                  answered at once and sent behind: doc/fs.md)\n"
		       "  -o sync_close   close waits until the file's writes are durable (by\n"
		       "                  default it sends them and returns; other mounts'\n"
		       "                  opens of the file wait for them: doc/fs.md)\n"
		       "  -o readahead_mb=N  memory for read-ahead (default %d; 0: none)\n"
		       "  -o kernel_readahead_kb=N  the kernel's read-ahead of the mount\n"
		       "                  (default %u, needs root; 0: the kernel's default)\n"
		       "  -o blksize=N    the st_blksize files show, the I/O size programs\n"
		       "                  pick from it (a power of two, 4096 to 4194304;\n"
		       "                  default %d)\n"
		       "  -o gather_us=N  changes answered here wait up to N microseconds\n"
		       "                  for others and go to the MDS together (default:\n"
		       "                  fuse_gather_us of atoll.conf, else %u; 0: each at once)\n"
		       "  -o log=FILE     log to FILE (appended, one line per event); without\n"
		       "                  it a mount in the background (no -f) logs nothing and\n"
		       "                  one in the foreground logs to stderr\n"
		       "  -o log_level=LVL  error, warn, info (the default), debug or trace\n"
		       "At unmount atoll-fuse gives the MDS and the OSDs 5 s to take what it\n"
		       "still holds, logs what they did not take, and exits: it is gone at most\n"
		       "10 s after its unmount (doc/fs.md).\n",
		       (int)(FD_WB_MAX_DEFAULT >> 20), (int)(FD_RA_MAX_DEFAULT >> 20),
		       FD_KERNEL_RA_KB_DEFAULT, BLKSIZE_DEFAULT, GATHER_US);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out;
	}
	if (co.show_version) {
		printf("atoll-fuse (libfuse %s)\n", fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (!co.mountpoint) {
		fprintf(stderr, "atoll-fuse: give a mount point; see --help\n");
		goto out;
	}
	if (co.clone_fd)
		fprintf(stderr, "atoll-fuse: -o clone_fd is ignored: atoll-fuse reads /dev/fuse "
			"with its own loop\n");
	mountpoint = co.mountpoint;	/* named when it is evicted */
	if (o.blksize < 4096 || o.blksize > (4 << 20) || (o.blksize & (o.blksize - 1))) {
		fprintf(stderr, "atoll-fuse: blksize=%d is not a power of two from 4096 to "
			"4194304\n", o.blksize);
		goto out;
	}
	g.blksize = (uint32_t)o.blksize;
	/* atoll.conf: mds_addr ([mds] or [global]) unless -o mds= names it,
	 * and the [fuse] options unless -o names them.  A file that cannot be
	 * read is reported by the cluster's connect below. */
	struct config *cf = NULL;
	char cerr[256];
	if (config_load(&cf, o.conf, cerr, sizeof(cerr)) != 0)
		cf = NULL;
	if (!o.mds) {
		const char *v = cf ? config_get(cf, "mds", "mds_addr", NULL) : NULL;
		o.mds = strdup(v ? v : "127.0.0.1:6800");
	}
	int64_t gather_us = o.gather_us == -1 ? (int64_t)GATHER_US : o.gather_us;
	if (o.gather_us == -1 && cf &&
	    config_get_int(cf, "fuse", "fuse_gather_us", GATHER_US, 0, GATHER_US_MAX, &gather_us,
			   cerr, sizeof(cerr)) != 0) {
		fprintf(stderr, "atoll-fuse: %s\n", cerr);
		config_free(cf);
		goto out;
	}
	config_free(cf);
	if (gather_us < 0 || gather_us > GATHER_US_MAX) {
		fprintf(stderr, "atoll-fuse: gather_us=%" PRId64 " is not from 0 to %u\n",
			gather_us, GATHER_US_MAX);
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	int lvl = o.log_level ? log_level_parse(o.log_level) : LOG_LVL_INFO;
	if (lvl < 0) {
		fprintf(stderr, "atoll-fuse: log level '%s' is not one of error, warn, info, "
			"debug, trace\n", o.log_level);
		goto out;
	}
	/* opened here, before the move to the background (and to "/"): a
	 * relative path is the caller's, and a failure reaches its terminal */
	if (o.log || co.foreground) {
		int e = log_open("fuse", (enum log_level)lvl, o.log);
		if (e) {
			fprintf(stderr, "atoll-fuse: cannot open the log file '%s': %s\n", o.log,
				strerror(-e));
			goto out;
		}
	}
	if (o.conf && o.conf[0] != '/') {
		/* fuse_daemonize() changes to "/": keep the file reachable */
		char *abs = realpath(o.conf, NULL);
		if (!abs) {
			fprintf(stderr, "atoll-fuse: cannot find the config file '%s'\n", o.conf);
			goto out;
		}
		free(o.conf);
		o.conf = abs;
	}
	/* Threads do not survive fork(): go to the background before
	 * connecting; the command returns once the mount is live. */
	ret = fdm_detach(co.foreground);
	if (ret) {
		fprintf(stderr, "atoll-fuse: cannot go to the background: %s\n", strerror(-ret));
		ret = 1;
		goto out;
	}
	ret = 1;
	/* Own checks only when asked: the kernel walks the names it caches
	 * without asking, and after this mount's chmod of a folder they can
	 * be dropped only once the chmod returned (the kernel holds the
	 * folder's lock until then), so a walk in between is not checked. */
	g.perm = !o.nolease && o.fuse_perms && !o.kernel_perms;
	g.async_rm = !o.nolease && !o.noasync_rm;
	g.async_create = !o.nolease && !o.noasync_create;
	g.gather_us = (unsigned)gather_us;
	g.async_hold = (g.async_rm || g.async_create) && fault_get_int("fuse_async_hold", 0) == 1;
	if (g.async_hold)
		log_warn("fuse", "fault injection: removals and creates answered here wait for "
			 "a revoke or the unmount before they go to the MDS");
	lc_init(!o.nolease, g.perm);
	fp_init();
	if (connect_all(&o))
		goto out;
	if (!g.perm)
		fuse_opt_add_arg(&args, "-odefault_permissions");
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, co.mountpoint) != 0)
		goto out_sig;
	if (lc_start(se))
		goto out_unmount;
	if (o.kernel_ra_kb > 0)
		fd_kernel_readahead(co.mountpoint, (unsigned)o.kernel_ra_kb);
	ux_start(se, o.mds);
	close_batch_start();
	fdm_ready();
	/* atoll-fuse's own loop (fuse_loop.c: two readers of /dev/fuse; it
	 * took a third fewer context switches than libfuse's for the same
	 * work, doc/fs.md "The request loop").  As libfuse's loop: a stop
	 * signal makes it return non-zero. */
	ret = fl_run(se, FUSE_MAX_THREADS) || ux_signalled ? 1 : 0;
	fuse_session_reset(se);
	pthread_mutex_lock(&g.async_mu);
	held_send();
	pthread_mutex_unlock(&g.async_mu);
	ux_ending();	/* the grace runs ("unmounting within a bound") */
	close_batch_stop();
	acall_drain();	/* no answer to the kernel after the session goes */
	if (g.async_rm || g.async_create)
		log_info("fuse", "removals answered here (asynchronous): %llu, creates "
			 "answered here: %llu; refused by the MDS after: %llu removals, %llu "
			 "creates",
			 (unsigned long long)__atomic_load_n(&g.async_rms, __ATOMIC_RELAXED),
			 (unsigned long long)__atomic_load_n(&g.async_creates, __ATOMIC_RELAXED),
			 (unsigned long long)__atomic_load_n(&g.async_fails, __ATOMIC_RELAXED),
			 (unsigned long long)__atomic_load_n(&g.async_create_fails,
							     __ATOMIC_RELAXED));
	fd_shutdown();	/* what is still buffered goes out */
	lc_stop();
out_unmount:
	fuse_session_unmount(se);
out_sig:
	fuse_remove_signal_handlers(se);
out:
	if (se)
		fuse_session_destroy(se);
	if (g.data) {
		/* a clean unmount: once our changes are journaled (after
		 * SESSION_END the MDS no longer waits for us to resend them),
		 * the MDS expects no reconnect from us.  Both within the
		 * grace (the ender gives up on the MDS: u.gone). */
		if (!unsafe_wait(ux.thr_on ? 0 : 30))
			unsafe_log_lost();
		session_end();
	}
	ux_stop();
	if (u.thr_on) {
		pthread_mutex_lock(&u.lock);
		u.stop = true;
		pthread_cond_broadcast(&u.cond);
		pthread_cond_signal(&u.rcond);
		pthread_mutex_unlock(&u.lock);
		pthread_join(u.thr, NULL);
	}
	msg_conn_put(g.mds);
	msgr_destroy(g.msgr);
	atoll_ioctx_destroy(g.data);
	atoll_cluster_shutdown(g.cl);
	free(co.mountpoint);
	free(o.conf);
	free(o.mon);
	free(o.mds);
	free(o.log);
	free(o.log_level);
	fuse_opt_free_args(&args);
	log_close();
	return ret;
}
