/*
 * mds_statfs.c - statfs from the cluster's capacity
 * (doc/fs-design-client.md, "statfs").
 *
 * The numbers come from the monitor's `df` (the raw capacity the OSDs
 * report, and the data pool's replica count), divided by the data pool's
 * replica count as Ceph does for a pool's "max avail": a file of N bytes
 * takes N x size of raw space, so that is what `df` on the mount can
 * promise.  A thread of its own asks the monitor, never the thread
 * handling a request (the messenger's loop thread answers statfs inline):
 * a statfs finds the numbers in a cache; when they are older than
 * STATFS_FRESH_MS it wakes the thread, and on the worker (which may wait)
 * waits a little for the new ones.  So `df` costs the monitor at most one
 * question per second however often it is run, and nothing while nobody
 * runs it.
 */
#include "mds.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atoll/atoll.h>

#include "log.h"
#include "mono.h"

#define SUB "mds"
#define STATFS_FRESH_MS	1000u	/* numbers younger than this are served as they are */
#define STATFS_WAIT_MS	1000u	/* the worker waits this long at most for new ones */
#define STATFS_BSIZE	4096u
#define STATFS_INODE_BYTES 4096u	/* f_ffree: one block per new file */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* both ways: a fetch is wanted; one finished */
	pthread_t thr;
	bool on, stop, want;
	struct atoll_cluster *cl;
	char pool[128];
	uint64_t total, avail;	/* bytes, already divided by the replica count */
	bool have;
	uint64_t at_ms;		/* when they were fetched (0: never) */
	uint64_t gen;		/* fetches done (a waiter sees its own) */
	bool warned;
} sf = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static double num_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* One `df` from the monitor: the raw total and avail over the data
 * pool's replica count.  0, or -errno (the cache keeps the old ones). */
static int fetch(uint64_t *total, uint64_t *avail)
{
	char *status = NULL, *out = NULL;
	size_t outlen = 0;
	cJSON *j = NULL, *p;
	int ret = atoll_mon_command(sf.cl, "{\"prefix\":\"df\",\"format\":\"json\"}",
				    &status, &out, &outlen);

	if (ret)
		goto out;
	ret = -EBADMSG;
	j = out ? cJSON_ParseWithLength(out, outlen) : NULL;
	double t = num_of(j, "total"), a = num_of(j, "avail"), size = 0;
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(j, "pools")) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name");
		if (cJSON_IsString(n) && !strcmp(n->valuestring, sf.pool))
			size = num_of(p, "size");
	}
	if (t < 0 || a < 0 || size < 1)
		goto out;
	*total = (uint64_t)(t / size);
	*avail = (uint64_t)(a / size);
	if (*avail > *total)
		*avail = *total;
	ret = 0;
out:
	cJSON_Delete(j);
	atoll_free(status);
	atoll_free(out);
	return ret;
}

static void *statfs_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&sf.lock);
	for (;;) {
		while (!sf.want && !sf.stop)
			pthread_cond_wait(&sf.cond, &sf.lock);
		if (sf.stop)
			break;
		pthread_mutex_unlock(&sf.lock);
		uint64_t total = 0, avail = 0;
		int ret = fetch(&total, &avail);
		pthread_mutex_lock(&sf.lock);
		sf.want = false;
		sf.at_ms = mono_now_ms();	/* a failure too: asked again in a second */
		sf.gen++;
		if (!ret) {
			sf.total = total;
			sf.avail = avail;
			sf.have = true;
			sf.warned = false;
		} else if (!sf.warned) {
			sf.warned = true;
			log_warn(SUB, "cannot get the cluster's capacity from the monitor (%s); "
				 "statfs answers %s until it answers", atoll_strerror(ret),
				 sf.have ? "the last numbers" : "zeros");
		}
		pthread_cond_broadcast(&sf.cond);
	}
	pthread_mutex_unlock(&sf.lock);
	return NULL;
}

int mds_statfs_start(struct mds *m)
{
	int ret;

	sf.cl = m->cl;
	snprintf(sf.pool, sizeof(sf.pool), "%s", m->data_pool);
	sf.want = true;	/* the first numbers before the first df */
	ret = -pthread_create(&sf.thr, NULL, statfs_main, NULL);
	sf.on = ret == 0;
	return ret;
}

void mds_statfs_stop(void)
{
	if (!sf.on)
		return;
	pthread_mutex_lock(&sf.lock);
	sf.stop = true;
	pthread_cond_broadcast(&sf.cond);
	pthread_mutex_unlock(&sf.lock);
	pthread_join(sf.thr, NULL);
	sf.on = false;
}

bool mds_statfs_fresh(void)
{
	pthread_mutex_lock(&sf.lock);
	bool fresh = sf.at_ms && mono_now_ms() - sf.at_ms < STATFS_FRESH_MS;
	if (!fresh && !sf.want) {
		sf.want = true;
		pthread_cond_broadcast(&sf.cond);
	}
	pthread_mutex_unlock(&sf.lock);
	return fresh;
}

static __thread bool may_wait;	/* the worker: may wait for the monitor */

void mds_statfs_may_wait(void)
{
	may_wait = true;
}

void mds_statfs_get(uint64_t ninodes, struct mds_statfs *st)
{
	pthread_mutex_lock(&sf.lock);
	if (sf.on && (!sf.at_ms || mono_now_ms() - sf.at_ms >= STATFS_FRESH_MS)) {
		uint64_t gen = sf.gen;
		if (!sf.want) {
			sf.want = true;
			pthread_cond_broadcast(&sf.cond);
		}
		struct timespec ts = deadline_ms(CLOCK_REALTIME, STATFS_WAIT_MS);
		while (may_wait && sf.gen == gen && !sf.stop)
			if (pthread_cond_timedwait(&sf.cond, &sf.lock, &ts) == ETIMEDOUT)
				break;
	}
	memset(st, 0, sizeof(*st));
	st->bsize = STATFS_BSIZE;
	st->blocks = sf.total / STATFS_BSIZE;
	st->bfree = st->bavail = sf.avail / STATFS_BSIZE;
	pthread_mutex_unlock(&sf.lock);
	st->ffree = (st->bavail * STATFS_BSIZE) / STATFS_INODE_BYTES;
	st->files = ninodes + st->ffree;
}
