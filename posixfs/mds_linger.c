/*
 * mds_linger.c - the files a rename replaced, kept openable for a moment
 * (doc/fs-design.md, "Rename over a file").
 *
 * Why: a reader's kernel resolves the name to an inode number, then opens
 * that number.  A rename over the name in between removed the old inode,
 * and its OPEN failed: the reader saw ENOENT for a name that never went
 * missing.  On a local file system the open succeeds on the old file (the
 * lookup holds it); here the old inode stays as an orphan (nlink 0,
 * MDS_INO_ORPHAN, journaled as such) for MDS_LINGER_MS, so such an open
 * gets the old file, as it would there.  Past that bound an open gets
 * ENOENT, which atoll-fuse turns into ESTALE (the kernel then looks the
 * name up again: fuse_cache.c, lc_ino_err).
 *
 * The table (in memory, its own lock: the loop thread's timer asks
 * whether something is due) holds the numbers in the order they came,
 * which is the order they fall due; a hash answers "is ino lingering"
 * for a close.  After an MDS restart the table is empty and the orphans
 * found at start are removed after the reconnect window, as any orphan.
 * Over MDS_LINGER_MAX the victim is removed at once, as before.
 */
#include "mds.h"

#include <pthread.h>
#include <stdlib.h>

#include "mono.h"

#define LINGER_BUCKETS	4096u

struct linger {
	uint64_t ino;
	uint64_t due_ns;	/* mono_now_ns() */
	struct linger *next;	/* in the order of due_ns */
	struct linger *hnext;	/* in its bucket */
};

static struct {
	pthread_mutex_t lock;
	struct linger *head, *tail;
	struct linger *hash[LINGER_BUCKETS];
	size_t n;
} lg = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct linger **bucket_slot(uint64_t ino)
{
	struct linger **pp = &lg.hash[ino % LINGER_BUCKETS];

	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->hnext;
	return pp;
}

bool mds_linger_add(uint64_t ino)
{
	struct linger *l;
	bool ok = false;

	pthread_mutex_lock(&lg.lock);
	if (*bucket_slot(ino)) {
		ok = true;	/* (an orphan is never named again) */
		goto out;
	}
	if (lg.n >= MDS_LINGER_MAX || !(l = malloc(sizeof(*l))))
		goto out;
	l->ino = ino;
	l->due_ns = mono_now_ns() + (uint64_t)MDS_LINGER_MS * 1000000ull;
	l->next = NULL;
	l->hnext = lg.hash[ino % LINGER_BUCKETS];
	lg.hash[ino % LINGER_BUCKETS] = l;
	if (lg.tail)
		lg.tail->next = l;
	else
		lg.head = l;
	lg.tail = l;
	lg.n++;
	ok = true;
out:
	pthread_mutex_unlock(&lg.lock);
	return ok;
}

bool mds_linger_holds(uint64_t ino)
{
	pthread_mutex_lock(&lg.lock);
	bool held = *bucket_slot(ino) != NULL;
	pthread_mutex_unlock(&lg.lock);
	return held;
}

bool mds_linger_due(void)
{
	pthread_mutex_lock(&lg.lock);
	bool due = lg.head && lg.head->due_ns <= mono_now_ns();
	pthread_mutex_unlock(&lg.lock);
	return due;
}

size_t mds_linger_take(uint64_t *inos, size_t max)
{
	size_t n = 0;
	uint64_t now = mono_now_ns();

	pthread_mutex_lock(&lg.lock);
	while (n < max && lg.head && lg.head->due_ns <= now) {
		struct linger *l = lg.head;
		lg.head = l->next;
		if (!lg.head)
			lg.tail = NULL;
		struct linger **pp = bucket_slot(l->ino);
		*pp = l->hnext;
		lg.n--;
		inos[n++] = l->ino;
		free(l);
	}
	pthread_mutex_unlock(&lg.lock);
	return n;
}
