/*
 * mds_applier.h - the applier (mds_applier.c): the thread that writes
 * journaled changes to the namespace's objects behind the replies.
 */
#ifndef ATOLL_MDS_APPLIER_H
#define ATOLL_MDS_APPLIER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "mds_txn.h"

struct mds;

/* A journaled change waiting for the applier (mds_applier.c) to write it to
 * the namespace objects. */
struct mds_apply {
	struct mds_apply *next;
	struct mds_packed p;
};

#define MDS_APPLY_MAX	2048u	/* journaled changes not yet applied, at most */
/* Default of mds_apply_gather_ms (atoll.conf [mds]): how long the
 * applier's round waits for more changes.  50 ms, not 20: touch of
 * 10,000 files made the OSDs spend a fifth less CPU (each round writes
 * the directory and up to 16 inode shards), and nothing waits for a
 * round but a truncate and a journal roll, which stop the gathering. */
#define MDS_APPLY_GATHER_MS	50u

/* The applier's state (m->applier); applier.lock protects the queue,
 * its length, busy, stop and drainers (mds_applier.c, "Locking"). */
struct mds_applier {
	pthread_t thread;
	bool on, busy, stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct mds_apply *head, *tail;
	unsigned len;
	unsigned drainers;	/* threads in mds_applier_drain: no gathering */
	uint64_t gather_ms;	/* how long a round waits for more (set before mds_open) */
	uint64_t applied_aseq;	/* every change up to it is in the objects (atomic) */
};

/* mds_open starts it (after replay); mds_close stops it once everything
 * queued is written. */
int mds_applier_start(struct mds *m);
void mds_applier_stop(struct mds *m);
/* Queues a journaled change, in journal order (p's body is the applier's
 * now; blocks while MDS_APPLY_MAX wait). */
void mds_applier_queue(struct mds *m, struct mds_packed *p);
void mds_applier_queue_txn(struct mds *m, const struct mds_txn *t);
/* Waits until every queued change is written (a truncate's trim, a
 * journal roll). */
void mds_applier_drain(struct mds *m);

#endif
