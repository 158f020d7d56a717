/*
 * mds_inflight.c - files whose data a client is still writing after
 * their close (doc/fs-design-client.md, "Closing without waiting").
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
	struct mark *next;	/* the bucket's */
};

/* Buckets by inode: every OPEN asks whether its inode has a mark (on the
 * loop thread), so that look is one short chain, not the whole table. */
#define NBUCKET 1024u

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a mark went */
	struct mark *b[NBUCKET];
	size_t n;
	uint64_t waits, timeouts;
} I = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static struct mark **bucket(uint64_t ino)
{
	return &I.b[(ino ^ (ino >> 10)) % NBUCKET];
}

/* Under I.lock: unlinks and frees *pp. */
static void del(struct mark **pp)
{
	struct mark *k = *pp;

	*pp = k->next;
	free(k);
	I.n--;
}

int mds_inflight_add(uint64_t ino, uint64_t client, uint64_t seq)
{
	int ret = 0;

	pthread_mutex_lock(&I.lock);
	struct mark *k = *bucket(ino);
	while (k && !(k->ino == ino && k->client == client))
		k = k->next;
	if (k) {
		if (seq > k->seq)
			k->seq = seq;
	} else if (I.n >= MDS_INFLIGHT_MAX) {
		ret = -ENOSPC;
	} else if (!(k = malloc(sizeof(*k)))) {
		ret = -ENOMEM;
	} else {
		*k = (struct mark){ ino, client, seq, *bucket(ino) };
		*bucket(ino) = k;
		I.n++;
	}
	pthread_mutex_unlock(&I.lock);
	return ret;
}

void mds_inflight_landed(uint64_t ino, uint64_t client, uint64_t seq)
{
	pthread_mutex_lock(&I.lock);
	for (struct mark **pp = bucket(ino); *pp; pp = &(*pp)->next)
		if ((*pp)->ino == ino && (*pp)->client == client) {
			if ((*pp)->seq <= seq) {
				del(pp);
				pthread_cond_broadcast(&I.cond);
			}
			break;
		}
	pthread_mutex_unlock(&I.lock);
}

void mds_inflight_drop_client(uint64_t client)
{
	pthread_mutex_lock(&I.lock);
	for (size_t i = 0; I.n && i < NBUCKET; i++)
		for (struct mark **pp = &I.b[i]; *pp;)
			if ((*pp)->client == client)
				del(pp);
			else
				pp = &(*pp)->next;
	pthread_cond_broadcast(&I.cond);
	pthread_mutex_unlock(&I.lock);
}

/* Under I.lock: a mark of ino by a client other than client. */
static struct mark *other(uint64_t ino, uint64_t client)
{
	for (struct mark *k = *bucket(ino); k; k = k->next)
		if (k->ino == ino && k->client != client)
			return k;
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
	struct timespec dl = deadline_ms(CLOCK_REALTIME, timeout_ms);
	int ret = 0;

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
			for (struct mark **pp = bucket(ino); *pp;)
				if ((*pp)->ino == ino && (*pp)->client != client)
					del(pp);
				else
					pp = &(*pp)->next;
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
