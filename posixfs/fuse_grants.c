/*
 * fuse_grants.c - the inode numbers the MDS granted this client
 * (fuse_grants.h; doc/fs-design-client.md, "Asynchronous creates").
 *
 * A create answered here (fuse_here.c) needs its inode number before
 * the MDS sees it: the MDS grants ranges of numbers (MDS_OP_INOS), this
 * file holds the range in use and the next one, asked for when the first
 * is half used.  Numbers are taken in increasing order under here.lock,
 * so they reach the MDS in that order too (its table then knows each
 * unused without a look in the metadata pool).  A reconnect drops them
 * (the MDS may have restarted and forgotten them: they would still be
 * unique, only slower to check).
 *
 * grants.lock is taken after here.lock (fuse_here.c gives the order) and
 * by the loop thread (a grant's reply); nothing is locked under it.
 */
#include "fuse_grants.h"

#include <pthread.h>
#include <string.h>

#include "fuse_call.h"
#include "fuse_replay.h"
#include "log.h"

#define INOS_WANT 1024u

static struct grants {
	pthread_mutex_t lock;
	uint64_t next, end;	/* the range in use */
	uint64_t snext, send;	/* the next one */
	uint64_t gen;		/* fr_gen() of the ranges */
	bool asking;
} grants = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void inos_done(struct acall *a, int ret)
{
	pthread_mutex_lock(&grants.lock);
	grants.asking = false;
	if (!ret && a->rp.ino_count && a->gen0 == grants.gen) {
		if (grants.next >= grants.end) {
			grants.next = a->rp.ino_first;
			grants.end = a->rp.ino_first + a->rp.ino_count;
		} else {
			grants.snext = a->rp.ino_first;
			grants.send = a->rp.ino_first + a->rp.ino_count;
		}
	} else if (ret) {
		log_debug("fuse", "no inode numbers from the MDS: %s", strerror(-ret));
	}
	pthread_mutex_unlock(&grants.lock);
	fc_acall_free(a);
}

void fg_ask(void)
{
	struct acall *a = fc_acall_new(NULL, MDS_OP_INOS, inos_done);

	if (!a) {
		pthread_mutex_lock(&grants.lock);
		grants.asking = false;
		pthread_mutex_unlock(&grants.lock);
		return;
	}
	a->rq.max = INOS_WANT;
	fc_call_async(a);
}

uint64_t fg_take(bool *ask)
{
	uint64_t ino = 0, gen = fr_gen();

	pthread_mutex_lock(&grants.lock);
	if (grants.gen != gen) {
		grants.next = grants.end = grants.snext = grants.send = 0;
		grants.gen = gen;
	}
	if (grants.next >= grants.end && grants.snext < grants.send) {
		grants.next = grants.snext;
		grants.end = grants.send;
		grants.snext = grants.send = 0;
	}
	if (grants.next < grants.end)
		ino = grants.next++;
	*ask = !grants.asking && grants.snext >= grants.send &&
	       grants.end - grants.next < INOS_WANT / 2;
	if (*ask)
		grants.asking = true;
	pthread_mutex_unlock(&grants.lock);
	return ino;
}

void fg_untake(uint64_t ino)
{
	pthread_mutex_lock(&grants.lock);
	if (grants.next == ino + 1)
		grants.next = ino;
	pthread_mutex_unlock(&grants.lock);
}
