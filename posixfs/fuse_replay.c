/*
 * fuse_replay.c - atoll-fuse's unsafe requests and their replay
 * (fuse_replay.h; doc/fs-design.md, "Early replies").
 *
 * A change the MDS answered but has not journaled yet (its reply named
 * journal entry jseq) is kept here, encoded as it will be resent, in the
 * order of the replies (the MDS's order of applying them), until an
 * MT_MDS_SAFE with seq >= jseq arrives.  When the connection breaks (an
 * MDS restart) each becomes "to resend" (jseq RESEND) and the replayer
 * thread sends them again, in order, before any new request goes out:
 * the MDS answers one it journaled from its index of answered requests,
 * applies the others again (a create keeps its inode number).  Then the
 * calls answered here (fuse_here.c) that the break cut off, in the order
 * they were answered; then the re-count of this client's opens, then
 * "resends done" (SESSION with MDS_L_REPLAY), which ends the MDS's
 * reconnect window for this client.  fsync and fsyncdir return once
 * every change before them is safe.
 *
 * Locking.  replay.lock protects all of struct replay_state; cond
 * signals a change of the list, safe_seq, replaying, gone, async_n or
 * the lists of calls answered here; rcond wakes the replayer alone.
 * The lock order of atoll-fuse (fuse_here.c has it whole): here.lock
 * (fuse_here.c) before replay.lock, never the other way; nothing of
 * atoll-fuse is locked under replay.lock (the messenger's epoch and the
 * log are).  calls_in_flight.lock (fuse_call.c) is never held with it.
 */
#include "fuse_replay.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "fuse_cache.h"
#include "fuse_call.h"
#include "fuse_data.h"
#include "log.h"
#include "mono.h"
#include "msg.h"

#define RESEND UINT64_MAX

/* One request the MDS answered unsafe. */
struct unsafe_req {
	struct unsafe_req *next;
	uint64_t reqid, jseq;
	void *buf;		/* the request's front, MDS_L_REPLAY set */
	size_t len;
};

static struct replay_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* the replayer's own: replaying, recount, gone or stop moved.  Not
	 * cond, which every answered change broadcasts: the replayer would
	 * wake for each (a futex wake and two context switches per rmdir) */
	pthread_cond_t rcond;
	struct unsafe_req *head, *tail;
	uint64_t n;
	uint64_t safe_seq;	/* the MDS said: journaled up to here */
	bool replaying;		/* entries wait to be resent: new calls wait */
	/* The unmount gave up on the MDS (its grace ran out, fuse_unmount.c):
	 * the connection is closed for good and nobody waits for it to
	 * come back; every call fails with ENOTCONN. */
	bool gone;
	bool stop;
	/* Reconnects so far (read atomically; written under lock), and
	 * "some open was answered across one: re-count it" (fd_open): the
	 * replayer re-counts this client's opens with the MDS after each
	 * reconnect (doc/fs-design.md, "Open files across a restart"). */
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
} replay = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
	     .rcond = PTHREAD_COND_INITIALIZER };

uint64_t fr_gen(void)
{
	return __atomic_load_n(&replay.gen, __ATOMIC_ACQUIRE);
}

void fr_recount_wanted(void)
{
	pthread_mutex_lock(&replay.lock);
	replay.recount = true;
	pthread_cond_signal(&replay.rcond);
	pthread_mutex_unlock(&replay.lock);
}

/* ---- the unsafe requests ---------------------------------------------------- */

/* Under replay.lock: drops the entries up to seq (the MDS journaled them). */
static void unsafe_drop_upto(uint64_t seq)
{
	struct unsafe_req **pp = &replay.head, *e;

	replay.tail = NULL;
	while ((e = *pp)) {
		if (e->jseq != RESEND && e->jseq <= seq) {
			*pp = e->next;
			free(e->buf);
			free(e);
			replay.n--;
			continue;
		}
		replay.tail = e;
		pp = &e->next;
	}
	pthread_cond_broadcast(&replay.cond);
}

void fr_unsafe_add(const struct mds_req *rq, const struct mds_reply *rp)
{
	struct mds_req *c = malloc(sizeof(*c));
	struct unsafe_req *e = calloc(1, sizeof(*e));
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
	pthread_mutex_lock(&replay.lock);
	if (e->jseq <= replay.safe_seq) {
		pthread_mutex_unlock(&replay.lock);
		free(e->buf);
		free(e);
		return;
	}
	if (replay.tail)
		replay.tail->next = e;
	else
		replay.head = e;
	replay.tail = e;
	replay.n++;
	pthread_mutex_unlock(&replay.lock);
	return;
oom:
	/* cannot keep it for a resend: lose nothing silently */
	log_error("fuse", "out of memory keeping an unsafe request; exiting (the MDS "
		  "has it in memory, a restart of the MDS now would lose it)");
	exit(1);
}

void fr_safe(uint64_t seq)
{
	pthread_mutex_lock(&replay.lock);
	if (seq > replay.safe_seq)
		replay.safe_seq = seq;
	unsafe_drop_upto(seq);
	pthread_mutex_unlock(&replay.lock);
}

void fr_broke(void)
{
	pthread_mutex_lock(&replay.lock);
	__atomic_store_n(&replay.gen, replay.gen + 1, __ATOMIC_RELEASE);	/* opens: re-counted */
	replay.safe_seq = 0;	/* a restarted MDS counts from its journal */
	for (struct unsafe_req *e = replay.head; e; e = e->next)
		e->jseq = RESEND;
	replay.replaying = true;	/* then "resends done" (the reconnect window) */
	pthread_cond_signal(&replay.rcond);
	pthread_mutex_unlock(&replay.lock);
}

bool fr_wait_replayed(void)
{
	pthread_mutex_lock(&replay.lock);
	while (replay.replaying && !replay.gone)
		pthread_cond_wait(&replay.cond, &replay.lock);
	bool gone = replay.gone;
	pthread_mutex_unlock(&replay.lock);
	return !gone;
}

bool fr_replaying(void)
{
	pthread_mutex_lock(&replay.lock);
	bool replaying = replay.replaying && !replay.gone;
	pthread_mutex_unlock(&replay.lock);
	return replaying;
}

/* ---- the calls answered here ----------------------------------------------- */

uint64_t fr_before_send(struct acall *a, uint64_t epoch)
{
	pthread_mutex_lock(&replay.lock);
	while (replay.replaying && !replay.gone)
		pthread_cond_wait(&replay.cond, &replay.lock);
	if (a->here) {
		/* its place is behind what the replayer resent (cut_resend) */
		epoch = fc_epoch();
		a->epoch = epoch;
		a->here_next = replay.here_head;
		if (replay.here_head)
			replay.here_head->here_prev = &a->here_next;
		a->here_prev = &replay.here_head;
		replay.here_head = a;
	}
	pthread_mutex_unlock(&replay.lock);
	return epoch;
}

/* Under replay.lock: a call answered here is no longer in flight. */
static void here_unlink(struct acall *a)
{
	if (!a->here_prev)
		return;
	*a->here_prev = a->here_next;
	if (a->here_next)
		a->here_next->here_prev = a->here_prev;
	a->here_prev = NULL;
	a->here_next = NULL;
	pthread_cond_broadcast(&replay.cond);
}

void fr_here_done(struct acall *a)
{
	pthread_mutex_lock(&replay.lock);
	here_unlink(a);
	pthread_mutex_unlock(&replay.lock);
}

bool fr_cut_add(struct acall *a)
{
	pthread_mutex_lock(&replay.lock);
	bool ok = !replay.gone;
	here_unlink(a);
	if (ok) {
		struct acall **pp = &replay.cut;
		while (*pp && (*pp)->aseq < a->aseq)
			pp = &(*pp)->cut_next;
		a->cut_next = *pp;
		*pp = a;
		replay.ncut++;
		pthread_cond_broadcast(&replay.cond);
	}
	pthread_mutex_unlock(&replay.lock);
	return ok;
}

bool fr_async_begin(void)
{
	pthread_mutex_lock(&replay.lock);
	bool ok = !replay.replaying && !replay.gone;
	if (ok)
		replay.async_n++;
	pthread_mutex_unlock(&replay.lock);
	return ok;
}

void fr_async_end(void)
{
	pthread_mutex_lock(&replay.lock);
	if (--replay.async_n == 0)
		pthread_cond_broadcast(&replay.cond);
	pthread_mutex_unlock(&replay.lock);
}

/* ---- resending -------------------------------------------------------------- */

struct rwait {
	struct fc_wait cw;
	struct unsafe_req *e;
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
			fc_evicted(rp->target);
		else if (rp->rc && rp->rc != -EEXIST && rp->rc != -ENOENT)
			log_warn("fuse", "the MDS refused resent request %" PRIu64 ": %s",
				 w->e->reqid, strerror(-rp->rc));
	}
	pthread_mutex_lock(&replay.lock);
	if (!err) {
		if (rp && rp->jseq > replay.safe_seq) {
			w->e->jseq = rp->jseq;
		} else {
			w->e->jseq = 0;
			unsafe_drop_upto(0);
		}
	}
	pthread_mutex_unlock(&replay.lock);
	if (rp) {
		free(rp->ents);
		free(rp->plus);
		free(rp->value);
	}
	free(rp);
	msg_free(reply);
	fc_wait_done(&w->cw, err);
}

/* Resends every entry marked RESEND, oldest first, one at a time (each
 * one's answer before the next goes: the MDS applies them in this order).
 * 0 when all went, else the transport's error (the connection broke). */
static int unsafe_resend(void)
{
	uint64_t sent = 0;

	for (;;) {
		pthread_mutex_lock(&replay.lock);
		struct unsafe_req *e = replay.head;
		while (e && e->jseq != RESEND)
			e = e->next;
		if (!e) {
			pthread_mutex_unlock(&replay.lock);
			break;
		}
		struct enc en;
		enc_init(&en);
		enc_raw(&en, e->buf, e->len);
		e->jseq = RESEND - 1;	/* in flight: never dropped by a SAFE */
		pthread_mutex_unlock(&replay.lock);
		struct msg *m = msg_new(MT_MDS_REQUEST, &en);
		enc_free(&en);
		struct rwait w = { .cw = FC_WAIT_INIT, .e = e };
		int ret = fc_send_wait(m, 0, on_resent, &w, &w.cw);

		if (ret) {
			pthread_mutex_lock(&replay.lock);
			if (e->jseq == RESEND - 1)
				e->jseq = RESEND;
			pthread_mutex_unlock(&replay.lock);
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
				fc_evicted(a->rp.target);
			lc_reply(&a->rq, &a->rp, a->t_send, &a->ci);
			if (a->rp.jseq)
				fr_unsafe_add(&a->rq, &a->rp);
		}
	}
	msg_free(reply);
	fc_wait_done(&w->cw, err);
}

/* After the unsafe resends: the calls answered here that a broken
 * connection cut off (replay.cut), oldest first, one at a time, before
 * any newer call goes (replay.replaying holds them).  Waits (at most
 * CUT_WAIT_S) until every such call in flight was cut, so none is left
 * behind.  0 when all
 * went, else the transport's error (the connection broke again: the
 * rest stay, in order, for the next pass). */
#define CUT_WAIT_S 3	/* well inside the MDS's reconnect window (10 s) */
static int cut_resend(void)
{
	struct timespec end;
	unsigned sent = 0;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += CUT_WAIT_S;
	pthread_mutex_lock(&replay.lock);
	for (;;) {
		/* those sent on an older connection than the current one:
		 * the break fails them (cut_add); a call sent on the new one
		 * (it saw the epoch move before the break's report) is not
		 * waited for: a restarted MDS holds it back until the
		 * reconnect window ends, after these */
		uint64_t now_epoch = fc_epoch();
		unsigned old = 0;
		for (struct acall *a = replay.here_head; a; a = a->here_next)
			old += a->epoch < now_epoch;
		if (!old || replay.gone)
			break;
		if (pthread_cond_timedwait(&replay.cond, &replay.lock, &end) == ETIMEDOUT) {
			log_warn("fuse", "%u call(s) answered here are still in flight on the "
				 "broken MDS connection; resending the %u cut off", old, replay.ncut);
			break;
		}
	}
	pthread_mutex_unlock(&replay.lock);
	for (;;) {
		pthread_mutex_lock(&replay.lock);
		struct acall *a = replay.cut;
		replay.cut_busy = a != NULL;
		pthread_mutex_unlock(&replay.lock);
		if (!a)
			break;
		struct rwait w = { .cw = FC_WAIT_INIT, .a = a };
		struct mds_req *r2 = malloc(sizeof(*r2));
		struct enc e;
		if (!r2)
			return -ENOMEM;
		*r2 = a->rq;
		/* the MDS may have applied it; no lease while replaying (a
		 * revoke of it would wait for here.lock) */
		r2->lflags = (r2->lflags & ~MDS_L_WANT) | MDS_L_REPLAY;
		enc_init(&e);
		mds_req_encode(&e, r2);
		free(r2);
		struct msg *m = msg_new(MT_MDS_REQUEST, &e);
		enc_free(&e);
		memset(&a->rp, 0, sizeof(a->rp));
		a->t_send = mono_now_ns();
		int ret = fc_send_wait(m, 0, on_cut_reply, &w, &w.cw);
		pthread_mutex_lock(&replay.lock);
		replay.cut_busy = false;
		bool over = !ret || replay.gone;	/* else it goes again, first */
		if (over) {
			replay.cut = a->cut_next;
			replay.ncut--;
		}
		pthread_mutex_unlock(&replay.lock);
		if (over)
			fc_acall_finish(a, ret ? -ENOTCONN : a->rp.rc == MDS_RC_EVICTED ? -EIO : a->rp.rc);
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
	pthread_mutex_lock(&replay.lock);
	struct acall *a = replay.cut;
	if (a && replay.cut_busy) {
		/* the replayer's: it ends it (replay.gone) */
		struct acall *first = a;
		a = first->cut_next;
		first->cut_next = NULL;
		replay.ncut = 1;
	} else {
		replay.cut = NULL;
		replay.ncut = 0;
	}
	pthread_mutex_unlock(&replay.lock);
	while (a) {
		struct acall *next = a->cut_next;
		fc_acall_finish(a, -ENOTCONN);
		a = next;
	}
}

/* A call of the replayer's own (the re-count of opens, "resends done"):
 * an error in the reply is logged, what saying what was refused (NULL:
 * nothing logged). */
struct rcall {
	struct fc_wait cw;
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
				fc_evicted(rp->target);
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
	fc_wait_done(&w->cw, err);
}

/* Sends rq and waits for the reply: 0, or the transport's error. */
static int rcall(const struct mds_req *rq, const char *what)
{
	struct rcall w = { .cw = FC_WAIT_INIT, .what = what };
	struct enc e;

	enc_init(&e);
	mds_req_encode(&e, rq);
	struct msg *m = msg_new(MT_MDS_REQUEST, &e);
	enc_free(&e);
	return fc_send_wait(m, 0, on_rcall, &w, &w.cw);
}

/* After the resends: SESSION with MDS_L_REPLAY tells a restarted MDS
 * that this client is back (its reconnect window waits for that). */
static int session_resume(void)
{
	struct mds_req *rq = calloc(1, sizeof(*rq));

	if (!rq)
		return -ENOMEM;
	rq->op = MDS_OP_SESSION;
	rq->client = fc_client_id();
	rq->lflags = MDS_L_REPLAY;
	int ret = rcall(rq, NULL);
	free(rq);
	return ret;
}

/* Tells the MDS how many times this client holds each open inode (all of
 * them after a reconnect, else those fd_open flagged), as of reconnect
 * gen: the MDS counts opens in memory only, and a restarted one knows
 * none; a CLOSE of an open counted before gen is not counted down
 * (doc/fs-design.md, "Open files across a restart").  0, or the transport's
 * error (then the flags are set again: tried on the next pass). */
static int reopen_all(bool only_flagged)
{
	uint64_t gen = fr_gen();
	struct fd_open_ent *v = NULL;
	size_t n = fd_opens(gen, only_flagged, &v);
	struct mds_req *rq = n ? malloc(sizeof(*rq)) : NULL;
	int ret = n && !rq ? -ENOMEM : 0;

	for (size_t i = 0; i < n && !ret; i++) {
		fc_req_init(rq, NULL, MDS_OP_OPEN);
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
	pthread_mutex_lock(&replay.lock);
	for (;;) {
		while ((!replay.replaying || replay.gone) && !(replay.recount && !replay.gone) &&
		       !replay.stop)
			pthread_cond_wait(&replay.rcond, &replay.lock);
		if (replay.stop)
			break;
		if (!replay.replaying) {
			/* an open answered across a reconnect: re-counted */
			replay.recount = false;
			pthread_mutex_unlock(&replay.lock);
			if (reopen_all(true)) {
				usleep(200000);
				fr_recount_wanted();
			}
			pthread_mutex_lock(&replay.lock);
			continue;
		}
		replay.recount = false;	/* the full pass below re-counts all */
		pthread_mutex_unlock(&replay.lock);
		int ret = unsafe_resend();
		if (!ret)
			ret = cut_resend();
		if (!ret)
			ret = reopen_all(false);
		if (!ret)
			ret = session_resume();
		if (ret)
			usleep(200000);	/* the MDS is not back yet */
		pthread_mutex_lock(&replay.lock);
		bool left = false;
		for (struct unsafe_req *e = replay.head; e && !left; e = e->next)
			left = e->jseq == RESEND;
		if (!left && !ret) {
			replay.replaying = false;
			pthread_cond_broadcast(&replay.cond);
		}
	}
	pthread_mutex_unlock(&replay.lock);
	return NULL;
}

int fr_start(void)
{
	int ret = -pthread_create(&replay.thr, NULL, replayer_main, NULL);

	replay.thr_on = ret == 0;
	return ret;
}

void fr_stop(void)
{
	if (!replay.thr_on)
		return;
	pthread_mutex_lock(&replay.lock);
	replay.stop = true;
	pthread_cond_broadcast(&replay.cond);
	pthread_cond_signal(&replay.rcond);
	pthread_mutex_unlock(&replay.lock);
	pthread_join(replay.thr, NULL);
	replay.thr_on = false;
}

/* ---- fsync, the unmount ----------------------------------------------------- */

bool fr_unsafe_wait(unsigned timeout_s)
{
	uint64_t upto = fc_last_reqid();
	struct timespec end;
	bool ok = true, hurried = false;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += timeout_s;
	pthread_mutex_lock(&replay.lock);
	for (;;) {
		/* a removal answered here before its MDS reply counts too */
		bool pending = replay.async_n > 0;
		for (struct unsafe_req *e = replay.head; e && !pending; e = e->next)
			pending = e->reqid <= upto;
		if (!pending)
			break;
		if (replay.gone) {
			ok = false;
			break;
		}
		if (!hurried) {
			/* the MDS gathers journal entries for a moment: tell
			 * it that somebody waits (once; after a reconnect the
			 * resends are journaled at once) */
			hurried = true;
			pthread_mutex_unlock(&replay.lock);
			fc_hurry();
			pthread_mutex_lock(&replay.lock);
			continue;
		}
		if (!timeout_s) {
			pthread_cond_wait(&replay.cond, &replay.lock);
		} else if (pthread_cond_timedwait(&replay.cond, &replay.lock, &end) == ETIMEDOUT) {
			ok = false;
			break;
		}
	}
	pthread_mutex_unlock(&replay.lock);
	return ok;
}

int fr_unsafe_wait_all(void)
{
	return fr_unsafe_wait(0) ? 0 : -EIO;
}

bool fr_owed(void)
{
	pthread_mutex_lock(&replay.lock);
	bool owed = replay.replaying || replay.head;
	pthread_mutex_unlock(&replay.lock);
	return owed;
}

void fr_give_up(void)
{
	pthread_mutex_lock(&replay.lock);
	replay.gone = true;
	pthread_cond_broadcast(&replay.cond);
	pthread_cond_signal(&replay.rcond);
	pthread_mutex_unlock(&replay.lock);
	cut_fail_all();
}

/* The changes the MDS answered but never said it journaled: the MDS went
 * away (or never answered) before it did, and a crash of it before the
 * journal loses them: for the user to check. */
void fr_log_lost(void)
{
	struct mds_req *rq = malloc(sizeof(*rq));
	uint64_t n = 0;

	pthread_mutex_lock(&replay.lock);
	for (struct unsafe_req *e = replay.head; e; e = e->next)
		n++;
	if (n)
		log_error("fuse", "%" PRIu64 " change(s) the MDS at %s answered were not journaled "
			  "when %s was unmounted: they may be lost if the MDS stopped without "
			  "journaling them", n, fc_mds_addr(), fc_mountpoint());
	unsigned i = 0;
	for (struct unsafe_req *e = replay.head; e && rq && i < 32; e = e->next, i++) {
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
	pthread_mutex_unlock(&replay.lock);
	free(rq);
}
