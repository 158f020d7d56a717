/*
 * fuse_here.c - the changes atoll-fuse answers itself (fuse_here.h;
 * doc/fs-design-client.md, "Asynchronous removals", "Asynchronous creates").
 *
 * Under an exclusive lease of a folder (no other client holds anything
 * of it), a create, mkdir, unlink or rmdir in it is answered to the
 * kernel at once, from the cache (lc_create_here, lc_remove_here), and
 * sent to the MDS behind: the MDS must agree, and when it does not (no
 * room, say) the change is logged and the cache drops what it made up.
 * A create takes its inode number from the ranges the MDS granted
 * (fuse_grants.c).  The changes wait up to gather_us for others and go
 * together (the closer thread of fuse_close.c sends them), so that the
 * MDS and this client's loop thread wake once for several; any other
 * call sends them first (fh_flush), and so does a revoke of the
 * exclusivity before its ack (fh_revoke_excl).  A reconnect's resends
 * keep them in order (fuse_replay.c).
 *
 * Locking.  here.lock is held from a change's check of the exclusive
 * lease to its request's sending (or holding), and by a revoke of
 * exclusivity until its cache drop: so the ack of a revoke follows on
 * the connection every change answered under the lease.  It protects
 * the held list and aseq.  The lock order of atoll-fuse:
 *
 *   here.lock (this file)
 *     -> replay.lock (fuse_replay.c)
 *     -> calls_in_flight.lock (fuse_call.c; never held with replay.lock)
 *     -> close_batch.lock (fuse_close.c)
 *     -> grants.lock (fuse_grants.c)
 *     -> the cache's locks (fuse_cache.c), the messenger's
 *
 * A lock is taken only after those above it in this list, never the
 * other way; the locks below here.lock are not held with each other,
 * except that the cache's and the messenger's are taken under any.
 */
#include "fuse_here.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fault.h"
#include "fuse_cache.h"
#include "fuse_call.h"
#include "fuse_close.h"
#include "fuse_data.h"
#include "fuse_grants.h"
#include "fuse_ops.h"
#include "fuse_perm.h"
#include "fuse_replay.h"
#include "log.h"

#define GATHER_MAX 64u		/* held changes that go at once */

static struct here_state {
	pthread_mutex_t lock;
	bool async_rm;		/* removals answered here */
	bool async_create;	/* creates and mkdir answered here */
	/* fault injection (fault fuse_async_hold=1, tests): the changes
	 * answered here are held (under lock) until a revoke of
	 * exclusivity, another call (fh_flush) or the unmount sends them,
	 * as if they were slow to reach the MDS */
	bool hold;
	/* gathering (-o gather_us, [fuse] fuse_gather_us; 0: off): the
	 * changes answered here wait up to this long for others, then go
	 * together (held, sent by the closer thread), so that the MDS and
	 * this client's loop thread wake once for several */
	unsigned gather_us;
	uint64_t aseq;		/* under lock: the order of the calls
				 * answered here (acall.aseq) */
	struct acall **held;	/* under lock; nheld also read atomically */
	size_t nheld, held_cap;
	uint64_t rms, rm_fails;	/* removals answered here; of those,
				 * refused by the MDS (atomic) */
	uint64_t creates, create_fails;	/* the same of creates */
} here = { .lock = PTHREAD_MUTEX_INITIALIZER };

void fh_init(bool async_rm, bool async_create, unsigned gather_us)
{
	here.async_rm = async_rm;
	here.async_create = async_create;
	here.gather_us = gather_us;
	here.hold = (async_rm || async_create) && fault_get_int("fuse_async_hold", 0) == 1;
	if (here.hold)
		log_warn("fuse", "fault injection: removals and creates answered here wait for "
			 "a revoke or the unmount before they go to the MDS");
}

bool fh_enabled(void)
{
	return here.async_rm || here.async_create;
}

unsigned fh_gather_us(void)
{
	return here.gather_us;
}

static void held_send(bool may_wait);

void fh_flush(bool may_wait)
{
	/* the size a close pushes of a file created here, say.  nheld is
	 * written under here.lock; a change this thread held it sees
	 * without the lock, one another thread holds now needs no order */
	if ((!here.hold && !here.gather_us) || !__atomic_load_n(&here.nheld, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&here.lock);
	if (here.nheld)
		held_send(may_wait);
	pthread_mutex_unlock(&here.lock);
}

void fh_send_held(void)
{
	pthread_mutex_lock(&here.lock);
	held_send(true);
	pthread_mutex_unlock(&here.lock);
}

void fh_revoke_excl(const struct mds_chg *c, uint32_t n)
{
	pthread_mutex_lock(&here.lock);
	held_send(false);	/* the loop thread */
	lc_revoke(c, n, false);
	pthread_mutex_unlock(&here.lock);
}

/* Under here.lock: a change held back (gathering, fault injection). */
static bool held_add(struct acall *a)
{
	if (here.nheld == here.held_cap) {
		size_t nc = here.held_cap ? 2 * here.held_cap : 64;
		struct acall **nh = realloc(here.held, nc * sizeof(*nh));
		if (!nh)
			return false;
		here.held = nh;
		here.held_cap = nc;
	}
	here.held[here.nheld] = a;
	__atomic_store_n(&here.nheld, here.nheld + 1, __ATOMIC_RELAXED);
	return true;
}

/* Under here.lock: sends the changes held back, in order.  may_wait:
 * the caller may wait for a reconnect's resends (not the loop thread, nor
 * a thread that answers the kernel); else, while they run, they stay
 * held (the closer tries again). */
static void held_send(bool may_wait)
{
	if (!may_wait && fr_replaying()) {
		fcl_gather_kick();
		return;
	}
	for (size_t i = 0; i < here.nheld; i++)
		fc_call_async(here.held[i]);
	__atomic_store_n(&here.nheld, 0, __ATOMIC_RELAXED);
}

/* The frame of a change answered here, under here.lock, which the
 * caller takes before here_count and lets go before here_settle:
 *
 *	pthread_mutex_lock(&here.lock);
 *	bool counted = here_count();
 *	r = counted ? (check the lease, take the change: 1, or 0) : 0;
 *	if (r == 1)
 *		here_send(a);
 *	pthread_mutex_unlock(&here.lock);
 *	answered = here_settle(req, a, counted, r);
 *
 * here_count counts the change, unless a reconnect's resends run (false:
 * the MDS answers, as it must for order).  here_settle: r is 1 when the
 * change was answered here (and here_send took a), 0 when the MDS is to
 * answer it, < 0 an error req is answered with; it frees a unless
 * here_send took it, and returns whether req is answered. */
static bool here_count(void)
{
	return fr_async_begin();
}

static bool here_settle(fuse_req_t req, struct acall *a, bool counted, int r)
{
	if (r == 1)
		return true;
	if (counted)
		fr_async_end();
	fc_acall_free(a);
	if (r < 0)
		fuse_reply_err(req, -r);
	return r < 0;
}

/* Under here.lock: a change answered here goes to the MDS, at once or
 * held (gathering; the fault injection holds until a revoke, another
 * call or the unmount). */
static void here_send(struct acall *a)
{
	a->here = true;
	a->aseq = ++here.aseq;
	if ((here.hold || here.gather_us) && held_add(a)) {
		if (here.hold)
			return;
		if (here.nheld >= GATHER_MAX)
			held_send(false);
		else if (here.nheld == 1)
			fcl_gather_kick();
		return;
	}
	fc_call_async(a);
}

/* ---- removals (doc/fs-design-client.md, "Asynchronous removals") ---- */

/* The MDS's answer to a removal answered here already: it must agree.
 * -ENOENT: another client's change came first (the MDS removes only the
 * inode this client saw).  Anything else cannot reach the application
 * any more: logged, and the directory's listing dropped (resynchronized
 * from the MDS on next use). */
static void async_rm_done(struct acall *a, int ret)
{
	if (ret && ret != -ENOENT) {
		__atomic_add_fetch(&here.rm_fails, 1, __ATOMIC_RELAXED);
		log_warn("fuse", "the MDS refused the removal of '%s' in directory %llu "
			 "(%s) that this mount had already answered; the name stays",
			 a->rq.name, (unsigned long long)a->rq.ino, strerror(-ret));
		/* the listing goes, and the kernel's (negative) entry of name */
		struct mds_chg c = { .kind = MDS_CHG_DENT, .ino = a->rq.ino };
		snprintf(c.name, sizeof(c.name), "%s", a->rq.name);
		lc_revoke(&c, 1, false);
	}
	fc_acall_free(a);
	fr_async_end();
}

bool fh_remove(fuse_req_t req, uint32_t op, fuse_ino_t parent, const char *name)
{
	uint64_t victim = 0;
	int r;

	if (!here.async_rm || strlen(name) > MDS_NAME_MAX ||
	    fc_mds_version() < 8)
		return false;
	if (fo_perm() && fo_perm_change(req, op, parent, name, 0, NULL, 0))
		return false;	/* the MDS answers (and says why) */
	/* no FUSE request of its own: the kernel is answered here */
	struct acall *a = fc_acall_new(NULL, op, async_rm_done);
	if (!a)
		return false;
	fc_req_cred(&a->rq, req);
	pthread_mutex_lock(&here.lock);
	bool counted = here_count();
	r = counted ? lc_remove_here(parent, name, op == MDS_OP_RMDIR, &victim) : 0;
	if (r == 1) {
		a->rq.ino = parent;
		a->rq.ino2 = victim;
		a->rq.lflags |= MDS_L_ASYNC;
		snprintf(a->rq.name, sizeof(a->rq.name), "%s", name);
		here_send(a);	/* no wait: not replaying (checked above) */
	}
	pthread_mutex_unlock(&here.lock);
	bool answered = here_settle(req, a, counted, r);
	if (r != 1)
		return answered;
	__atomic_add_fetch(&here.rms, 1, __ATOMIC_RELAXED);
	fuse_reply_err(req, 0);
	return true;
}

/* ---- creates (doc/fs-design-client.md, "Asynchronous creates") ----- */

/* The MDS's answer to a create answered here: it must agree.  A refusal
 * (no room for the record, say) cannot reach the application any more:
 * logged, and the name and the record dropped, so that the MDS answers
 * for them from now on (the inode is not there: ENOENT). */
static void async_create_done(struct acall *a, int ret)
{
	if (ret) {
		__atomic_add_fetch(&here.create_fails, 1, __ATOMIC_RELAXED);
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
	fc_acall_free(a);
	fr_async_end();
}

bool fh_create(fuse_req_t req, uint32_t op, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi)
{
	struct lc_info ci;
	struct mds_inode in;
	bool ask = false;
	int r = 0;

	if (!here.async_create || strlen(name) > MDS_NAME_MAX ||
	    fc_mds_version() < 9)
		return false;
	if (fo_perm()) {
		struct fp_cred c;
		fp_cred_init(&c, req);
		if (fo_perm_dir(req, &c, parent, FP_W | FP_X, NULL))
			return false;	/* make_node says why */
	}
	struct acall *a = fc_acall_new(NULL, op, async_create_done);
	if (!a)
		return false;
	struct mds_req *rq = &a->rq;
	fc_req_cred(rq, req);
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
	in.dns = fd_dns(parent);	/* as op_create: the parent's data namespace */
	in.atime = in.mtime = in.ctime = (uint64_t)ts.tv_sec * 1000000000ull +
					 (uint64_t)ts.tv_nsec;
	rq->s_mtime = in.mtime;
	uint64_t gen0 = a->gen0;
	pthread_mutex_lock(&here.lock);
	bool counted = here_count();
	if (counted && (in.ino = fg_take(&ask)))
		r = lc_create_here(parent, name, &in, &ci);
	if (r == 1) {
		rq->replay_ino = in.ino;
		fd_dns_note(in.ino, in.dns);
		here_send(a);	/* no wait: not replaying (checked above) */
	} else if (in.ino) {
		fg_untake(in.ino);
	}
	pthread_mutex_unlock(&here.lock);
	bool answered = here_settle(req, a, counted, r);
	if (ask)
		fg_ask();
	if (r != 1)
		return answered;
	__atomic_add_fetch(&here.creates, 1, __ATOMIC_RELAXED);
	fo_reply_created(req, &in, &ci, parent, name, fi, gen0);	/* a is the MDS call's now */
	return true;
}

void fh_log_counts(void)
{
	if (!fh_enabled())
		return;
	log_info("fuse", "removals answered here (asynchronous): %llu, creates "
		 "answered here: %llu; refused by the MDS after: %llu removals, %llu "
		 "creates",
		 (unsigned long long)__atomic_load_n(&here.rms, __ATOMIC_RELAXED),
		 (unsigned long long)__atomic_load_n(&here.creates, __ATOMIC_RELAXED),
		 (unsigned long long)__atomic_load_n(&here.rm_fails, __ATOMIC_RELAXED),
		 (unsigned long long)__atomic_load_n(&here.create_fails, __ATOMIC_RELAXED));
}
