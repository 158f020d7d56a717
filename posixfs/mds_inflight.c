/*
 * mds_inflight.c - files whose data a client is still writing after
 * their close (doc/fs.md, "Closing without waiting").
 *
 * A client's close (FLUSH) sends the file's buffered writes and pushes
 * its size with FSYNC + MDS_L_INFLIGHT without waiting for the writes:
 * the MDS marks (inode, client) with the client's sequence number.  The
 * client sends LANDED with that number once every write it had sent
 * before that flush is durable; its CLOSE (after the writes) or the end
 * of its session clears its marks too.  Until then another client's
 * OPEN of the inode, or its change of the size, waits (on the worker;
 * the loop thread takes LANDED), so that it reads what the closed file
 * holds: close-to-open, without the closing client waiting for three
 * replicas' flushes.
 *
 * A small table with its own lock: the loop thread (LANDED) and the
 * worker (FSYNC, OPEN, the waits) both use it.  Taken inside the
 * namespace lock (m->lock) at times, never around it.
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"

struct mark {
	uint64_t ino, client, seq;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a mark went */
	struct mark *v;
	size_t n, cap;
	uint64_t waits, timeouts;
} I = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static struct mark *find(uint64_t ino, uint64_t client)
{
	for (size_t i = 0; i < I.n; i++)
		if (I.v[i].ino == ino && I.v[i].client == client)
			return &I.v[i];
	return NULL;
}

static void del_at(size_t i)
{
	I.v[i] = I.v[--I.n];
}

int mds_inflight_add(uint64_t ino, uint64_t client, uint64_t seq)
{
	int ret = 0;

	pthread_mutex_lock(&I.lock);
	struct mark *k = find(ino, client);
	if (k) {
		if (seq > k->seq)
			k->seq = seq;
	} else if (I.n == I.cap && I.cap >= MDS_INFLIGHT_MAX) {
		ret = -ENOSPC;
	} else {
		if (I.n == I.cap) {
			size_t nc = I.cap ? 2 * I.cap : 64;
			struct mark *v = realloc(I.v, nc * sizeof(*v));
			if (!v) {
				ret = -ENOMEM;
				goto out;
			}
			I.v = v;
			I.cap = nc;
		}
		I.v[I.n++] = (struct mark){ ino, client, seq };
	}
out:
	pthread_mutex_unlock(&I.lock);
	return ret;
}

void mds_inflight_landed(uint64_t ino, uint64_t client, uint64_t seq)
{
	pthread_mutex_lock(&I.lock);
	for (size_t i = 0; i < I.n; i++)
		if (I.v[i].ino == ino && I.v[i].client == client && I.v[i].seq <= seq) {
			del_at(i);
			pthread_cond_broadcast(&I.cond);
			break;
		}
	pthread_mutex_unlock(&I.lock);
}

void mds_inflight_drop_client(uint64_t client)
{
	pthread_mutex_lock(&I.lock);
	for (size_t i = 0; i < I.n;)
		if (I.v[i].client == client)
			del_at(i);
		else
			i++;
	pthread_cond_broadcast(&I.cond);
	pthread_mutex_unlock(&I.lock);
}

/* Under I.lock: a mark of ino by a client other than client. */
static struct mark *other(uint64_t ino, uint64_t client)
{
	for (size_t i = 0; i < I.n; i++)
		if (I.v[i].ino == ino && I.v[i].client != client)
			return &I.v[i];
	return NULL;
}

bool mds_inflight_other(uint64_t ino, uint64_t client)
{
	pthread_mutex_lock(&I.lock);
	bool r = other(ino, client) != NULL;
	pthread_mutex_unlock(&I.lock);
	return r;
}

int mds_inflight_wait(uint64_t ino, uint64_t client, uint32_t timeout_ms)
{
	struct timespec dl;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&I.lock);
	struct mark *k = other(ino, client);
	if (k)
		I.waits++;
	while ((k = other(ino, client))) {
		if (pthread_cond_timedwait(&I.cond, &I.lock, &dl) == ETIMEDOUT &&
		    (k = other(ino, client))) {
			/* the writer is stuck (its OSDs?) or gone without its
			 * session ending yet: go on without its data */
			log_warn("mds", "inode %" PRIu64 ": client %" PRIu64 " closed it with writes "
				 "in flight and did not say they landed within %u ms; answering "
				 "client %" PRIu64 " without them", ino, k->client, timeout_ms,
				 client);
			I.timeouts++;
			for (size_t i = 0; i < I.n;)
				if (I.v[i].ino == ino && I.v[i].client != client)
					del_at(i);
				else
					i++;
			ret = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&I.lock);
	return ret;
}

void mds_inflight_stats(uint64_t *marks, uint64_t *waits, uint64_t *timeouts)
{
	pthread_mutex_lock(&I.lock);
	*marks = I.n;
	*waits = I.waits;
	*timeouts = I.timeouts;
	pthread_mutex_unlock(&I.lock);
}
