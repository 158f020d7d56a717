/*
 * mds_follow.h - reading the journal's current segment as it grows
 * (mds_follow.c): a standby follows the active's journal with it, and
 * the start's replay reads whatever the standby has not read yet.
 */
#ifndef ATOLL_MDS_FOLLOW_H
#define ATOLL_MDS_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mds_txn.h"

struct mds;

/* Default of mds_standby_follow_ms (atoll.conf [mds]): how often a
 * standby reads the new entries of the journal; 0: it does not follow. */
#define MDS_STANDBY_FOLLOW_MS	200u

/* One entry read from the segment: its journal body (what the applier
 * and replay decode), and the request it answered. */
struct mds_fent {
	struct mds_packed p;
	uint64_t client, reqid, res_ino;
};

/* What has been read of the current segment (m->follow).  Only the thread
 * that starts the MDS touches it (the standby's wait, then mds_open), so
 * it takes no lock; pub_seg and pub_seq are for the beacon thread (atomic
 * stores and loads). */
struct mds_follow {
	bool on;		/* a standby follows: the entries go to the cache too */
	bool broken;		/* a load failed while applying: start over */
	uint64_t seg;		/* the segment read (0: none yet) */
	uint64_t pos;		/* bytes of it read and checked */
	uint64_t seq;		/* the last entry's sequence number */
	struct mds_fent *ents;	/* its entries, in journal order */
	size_t n, cap;
	uint64_t restarts;	/* times it dropped what it read and started over */
	uint64_t pub_seg, pub_seq;
};

/* The standby: the cache (and m->lock) set up, so that the entries read
 * are applied to it (0 or -ENOMEM). */
int mds_follow_start(struct mds *m);
/* One round of the standby: the head, then the new entries of its
 * segment, checked and applied to the cache; a roll it sees (or anything
 * it cannot account for) drops what it read, and it starts over from the
 * head.  Writes nothing to the pools. */
void mds_follow_step(struct mds *m);
/* The start's replay (mds_journal_replay): the rest of segment seg from
 * where the standby stopped (everything when it read another segment or
 * did not follow): *tail entries read now; m->follow.ents then holds the
 * whole segment.  0 or -errno. */
int mds_follow_finish(struct mds *m, uint64_t seg, size_t *tail);
/* Frees the entries read (the cache stays: mds_follow_drop drops both). */
void mds_follow_free(struct mds *m);
/* The segment named by fs.journal.head (1 when there is none). */
int mds_follow_head(struct mds *m, uint64_t *seg);

#endif
