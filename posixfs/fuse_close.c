/*
 * fuse_close.c - the calls to the MDS that nobody waits for (fuse_close.h):
 * a clean file's CLOSE, batched, and LANDED (a file closed with its
 * writes in flight has them durable now).
 *
 * Closes in batches (doc/fs-design-client.md, "Closes in batches"): a
 * clean file's CLOSE (nothing to push: the open count only) waits up to
 * CLOSE_GATHER_MS for others, and they go as one request (MDS_L_MANY): one
 * MDS request instead of one per touch.  Nothing waits for a CLOSE; an
 * unlinked file's purge waits those few ms longer.  The closer thread that
 * sends them also sends the changes answered here and gathered
 * (fuse_here.c, fcl_gather_kick).
 *
 * close_batch.lock protects struct close_batch; it is taken after
 * here.lock (fuse_here.c gives the order), and nothing is locked under
 * it: the closer lets it go before it sends.
 */
#include "fuse_close.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "deadline.h"
#include "encode.h"
#include "fuse_call.h"
#include "fuse_here.h"
#include "log.h"
#include "mds_proto.h"

#define CLOSE_GATHER_MS 5

struct close_ent {
	uint64_t ino, ogen;
};

static struct close_batch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct close_ent e[MDS_CLOSE_MANY];
	unsigned n;
	bool held;		/* changes answered here are held (gathering) */
	bool on, stop;
	pthread_t thr;
} batch = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

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
	fc_acall_free(a);
}

static void bg_call(uint32_t op, uint64_t ino, uint64_t ino2, uint64_t ogen)
{
	struct acall *a = fc_acall_new(NULL, op, bg_done);

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
	fc_call_async(a);
}

static void close_batch_send(const struct close_ent *e, unsigned n)
{
	if (n == 1 || fc_mds_version() < 9) {
		for (unsigned i = 0; i < n; i++)
			bg_call(MDS_OP_CLOSE, e[i].ino, 0, e[i].ogen);
		return;
	}
	struct acall *a = fc_acall_new(NULL, MDS_OP_CLOSE, bg_done);
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
			fc_acall_free(a);
		for (unsigned i = 0; i < n; i++)	/* one at a time, then */
			bg_call(MDS_OP_CLOSE, e[i].ino, 0, e[i].ogen);
		return;
	}
	a->own = v;
	a->rq.value = v;
	a->rq.vlen = (uint32_t)len;
	a->rq.ino = e[0].ino;
	a->rq.lflags |= MDS_L_MANY;
	fc_call_async(a);
}

static void *closer_main(void *arg)
{
	static struct close_ent sending[MDS_CLOSE_MANY];	/* one closer */

	(void)arg;
	pthread_mutex_lock(&batch.lock);
	for (;;) {
		while (!batch.n && !batch.held && !batch.stop)
			pthread_cond_wait(&batch.cond, &batch.lock);
		if (!batch.n && !batch.held)
			break;	/* stopping, nothing left */
		struct timespec dl = deadline_ns(CLOCK_REALTIME, batch.held ? fh_gather_us() * 1000ull :
						 CLOSE_GATHER_MS * 1000000ull);
		while ((batch.n || batch.held) && batch.n < MDS_CLOSE_MANY && !batch.stop &&
		       pthread_cond_timedwait(&batch.cond, &batch.lock, &dl) != ETIMEDOUT)
			;
		bool held = batch.held, stopping = batch.stop;
		batch.held = false;
		unsigned n = batch.n;
		memcpy(sending, batch.e, n * sizeof(*sending));
		batch.n = 0;
		pthread_mutex_unlock(&batch.lock);
		/* while a reconnect's resends run they stay held and this
		 * tries again, unless the mount is ending: then it waits (a
		 * retry would spin) */
		if (held)
			fh_flush(stopping);
		if (n)
			close_batch_send(sending, n);
		pthread_mutex_lock(&batch.lock);
	}
	pthread_mutex_unlock(&batch.lock);
	return NULL;
}

void fcl_start(void)
{
	pthread_mutex_lock(&batch.lock);
	batch.on = pthread_create(&batch.thr, NULL, closer_main, NULL) == 0;
	pthread_mutex_unlock(&batch.lock);
}

void fcl_stop(void)
{
	pthread_mutex_lock(&batch.lock);
	bool on = batch.on;
	batch.on = false;
	batch.stop = true;
	pthread_cond_broadcast(&batch.cond);
	pthread_mutex_unlock(&batch.lock);
	if (on)
		pthread_join(batch.thr, NULL);
}

void fcl_gather_kick(void)
{
	pthread_mutex_lock(&batch.lock);
	bool on = batch.on;
	if (on) {
		batch.held = true;
		pthread_cond_signal(&batch.cond);
	}
	pthread_mutex_unlock(&batch.lock);
	(void)on;	/* none before the mount or after its end: a call or the
			 * unmount sends them */
}

void fcl_close_async(uint64_t ino, uint64_t ogen)
{
	struct close_ent full[MDS_CLOSE_MANY];
	unsigned nfull = 0;

	pthread_mutex_lock(&batch.lock);
	if (!batch.on) {
		pthread_mutex_unlock(&batch.lock);
		bg_call(MDS_OP_CLOSE, ino, 0, ogen);
		return;
	}
	batch.e[batch.n].ino = ino;
	batch.e[batch.n].ogen = ogen;
	if (++batch.n == 1 && !batch.held) {
		pthread_cond_signal(&batch.cond);
	} else if (batch.n == MDS_CLOSE_MANY) {
		nfull = batch.n;
		memcpy(full, batch.e, nfull * sizeof(*full));
		batch.n = 0;
	}
	pthread_mutex_unlock(&batch.lock);
	if (nfull)
		close_batch_send(full, nfull);
}

void fcl_landed_async(uint64_t ino, uint64_t mark)
{
	bg_call(MDS_OP_LANDED, ino, mark, 0);
}
