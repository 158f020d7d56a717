/*
 * mds_applier.c - the applier: a thread that writes journaled changes to
 * the namespace's objects (mds_store.c), in journal order, behind the
 * replies.
 *
 * Once a change is in the journal it is durable: replay rebuilds the
 * objects from it.  So the objects (directory and inode omaps) are written
 * by this thread, behind the reply, in journal order, while the worker
 * answers the next request: a metadata change costs the client one
 * cluster round trip (the journal append) instead of two.  The applier
 * takes up to APPLY_BATCH queued changes at once and writes each (object,
 * key) of them once, with its last value (mds_store_apply_omap), so a
 * backlog costs one round trip, not one per change.  A round first
 * gathers for up to mds_apply_gather_ms (unless a batch is full, or
 * someone waits for the queue to drain): a client's changes one at a time
 * (rm -rf) came a few per journal batch, and each round wrote the
 * directory and up to 16 inode shards for them, three times the journal's
 * own writes.  What must hold before a reply waits for the queue to drain
 * (mds_applier_drain): data trimmed by a truncate (a client may write the
 * same blocks right after the reply; a removed inode's data is purged
 * behind the reply), and every entry of a segment before the segment is
 * dropped (mds_journal.c's roll).
 *
 * Locking: applier.lock protects the queue, its length, busy, stop and
 * drainers; applier.cond signals a change of any of them (both ways).
 * The applier never takes the namespace lock (m->lock), and nobody takes
 * another lock while holding applier.lock, so it is the innermost: the
 * worker may queue under m->lock, the journaler queues holding nothing.
 * applier.applied_aseq (every change up to it is in the objects) is
 * stored with release by whoever wrote the changes (the applier; the
 * queueing thread when no memory was left to queue one) and loaded with
 * acquire by the cache's trim.
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include <atoll/atoll.h>

#include "log.h"

#define SUB "mds"

#define APPLY_BATCH 1024u	/* changes the applier writes in one round */

/* Under alock, with something queued: waits until a batch is full, the
 * gathering time is over, someone drains or the MDS stops. */
static void apply_gather(struct mds *m)
{
	if (!m->applier.gather_ms)
		return;
	struct timespec dl = deadline_ms(CLOCK_REALTIME, m->applier.gather_ms);
	while (m->applier.len < APPLY_BATCH && !m->applier.drainers && !m->applier.stop)
		if (pthread_cond_timedwait(&m->applier.cond, &m->applier.lock, &dl) == ETIMEDOUT)
			break;
}

static void *applier_main(void *arg)
{
	struct mds *m = arg;
	const struct mds_txn *ts[APPLY_BATCH];
	/* the round's changes unpacked: kept from round to round (a txn is
	 * 80 KiB, of which a change uses a few hundred bytes) */
	struct mds_txn **sc = calloc(APPLY_BATCH, sizeof(*sc));
	struct mds_store_buf kb = { .u = NULL };

	if (!sc) {
		log_error(SUB, "out of memory starting the applier; exiting");
		exit(1);
	}
	pthread_mutex_lock(&m->applier.lock);
	for (;;) {
		while (!m->applier.head && !m->applier.stop)
			pthread_cond_wait(&m->applier.cond, &m->applier.lock);
		if (!m->applier.head)
			break;	/* stop, and nothing left */
		apply_gather(m);
		/* the oldest changes, up to a batch; the worker only appends
		 * behind them, so they stay put while the lock is dropped */
		size_t n = 0;
		struct mds_apply *first = m->applier.head;
		for (struct mds_apply *a = first; a && n < APPLY_BATCH; a = a->next)
			n++;
		m->applier.busy = true;
		pthread_mutex_unlock(&m->applier.lock);
		int ret = 0;
		size_t k = 0;
		for (struct mds_apply *a = first; k < n && !ret; a = a->next, k++) {
			if (!sc[k] && !(sc[k] = malloc(sizeof(*sc[k]))))
				ret = -ENOMEM;
			else if (mds_txn_unpack(&a->p, sc[k]))
				ret = -EBADMSG;	/* our own encoding: cannot be */
			ts[k] = sc[k];
		}
		if (!ret)
			ret = mds_store_apply_omap(m, ts, n, &kb);
		/* the data removes of the whole round in flight together (the
		 * purges of an rm of many files: the OSDs commit them together) */
		struct mds_rm_batch rb = { .n = 0 };
		for (size_t i = 0; i < n && !ret; i++)
			ret = mds_store_apply_rest(m, ts[i], &rb);
		int rret = mds_rm_batch_wait(&rb);
		ret = ret ? ret : rret;
		if (ret == -EPERM)
			mds_role_fenced("an OSD refused a write (blocklisted)");
		if (ret) {
			log_error(SUB, "cannot apply a journaled change (%s); exiting so that "
				  "a restart replays it", atoll_strerror(ret));
			exit(1);
		}
		/* in mds_txn_commit order: everything up to the last is written */
		__atomic_store_n(&m->applier.applied_aseq, ts[n - 1]->aseq, __ATOMIC_RELEASE);
		pthread_mutex_lock(&m->applier.lock);
		for (size_t i = 0; i < n; i++) {
			struct mds_apply *a = m->applier.head;
			m->applier.head = a->next;
			m->applier.len--;
			free(a->p.body);
			free(a);
		}
		if (!m->applier.head)
			m->applier.tail = NULL;
		m->applier.busy = false;
		pthread_cond_broadcast(&m->applier.cond);
	}
	pthread_mutex_unlock(&m->applier.lock);
	for (size_t k = 0; k < APPLY_BATCH; k++)
		free(sc[k]);
	free(sc);
	mds_store_buf_free(&kb);
	return NULL;
}

/* Waits until every queued change is applied (the worker calls it). */
void mds_applier_drain(struct mds *m)
{
	pthread_mutex_lock(&m->applier.lock);
	m->applier.drainers++;
	pthread_cond_broadcast(&m->applier.cond);	/* the applier stops gathering */
	while (m->applier.head)
		pthread_cond_wait(&m->applier.cond, &m->applier.lock);
	m->applier.drainers--;
	pthread_mutex_unlock(&m->applier.lock);
}

int mds_applier_start(struct mds *m)
{
	int ret;

	pthread_mutex_init(&m->applier.lock, NULL);
	pthread_cond_init(&m->applier.cond, NULL);
	ret = -pthread_create(&m->applier.thread, NULL, applier_main, m);
	if (ret == 0)
		m->applier.on = true;
	return ret;
}

void mds_applier_stop(struct mds *m)
{
	if (!m->applier.on)
		return;
	pthread_mutex_lock(&m->applier.lock);
	m->applier.stop = true;
	pthread_cond_broadcast(&m->applier.cond);
	pthread_mutex_unlock(&m->applier.lock);
	pthread_join(m->applier.thread, NULL);
	m->applier.on = false;
}

static void apply_failed(int ret)
{
	if (ret == -EPERM)
		mds_role_fenced("an OSD refused a write (blocklisted)");
	log_error(SUB, "cannot apply a journaled change (%s); exiting so that a restart "
		  "replays it", atoll_strerror(ret));
	exit(1);
}

/* Applies the change p holds here and now (no memory to queue it), in
 * order: the caller drained the queue. */
static void apply_now(struct mds *m, const struct mds_packed *p)
{
	struct mds_txn *t = malloc(sizeof(*t));
	int ret = !t ? -ENOMEM : mds_txn_unpack(p, t) ? -EBADMSG : mds_store_apply(m, t);

	free(t);
	if (ret)
		apply_failed(ret);
	__atomic_store_n(&m->applier.applied_aseq, p->aseq, __ATOMIC_RELEASE);
}

/* Hands a journaled change to the applier (in journal order), which
 * takes p's body. */
void mds_applier_queue(struct mds *m, struct mds_packed *p)
{
	struct mds_apply *a = malloc(sizeof(*a));

	if (!a) {
		/* no memory for the queue: apply it here, in order */
		mds_applier_drain(m);
		apply_now(m, p);
		free(p->body);
		p->body = NULL;
		return;
	}
	a->next = NULL;
	a->p = *p;
	p->body = NULL;
	pthread_mutex_lock(&m->applier.lock);
	while (m->applier.len >= MDS_APPLY_MAX)
		pthread_cond_wait(&m->applier.cond, &m->applier.lock);
	if (m->applier.tail)
		m->applier.tail->next = a;
	else
		m->applier.head = a;
	m->applier.tail = a;
	m->applier.len++;
	pthread_cond_broadcast(&m->applier.cond);
	pthread_mutex_unlock(&m->applier.lock);
}

/* A change journaled by its worker (no early replies), unpacked. */
void mds_applier_queue_txn(struct mds *m, const struct mds_txn *t)
{
	struct mds_packed p;
	int ret;

	if (!mds_txn_pack(t, &p)) {
		mds_applier_queue(m, &p);
		return;
	}
	mds_applier_drain(m);	/* no memory to pack it: here, in order */
	if ((ret = mds_store_apply(m, t)))
		apply_failed(ret);
	__atomic_store_n(&m->applier.applied_aseq, t->aseq, __ATOMIC_RELEASE);
}

