/*
 * mds_journal.h - the journal (mds_journal.c): segments of entries, one
 * per change, appended before the objects change; the journaler thread
 * that appends in batches behind early replies.
 */
#ifndef ATOLL_MDS_JOURNAL_H
#define ATOLL_MDS_JOURNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "mds_txn.h"

struct mds;
struct msg_conn;

#define MDS_SEG_ENTRIES		1024u	/* journal entries per segment (at least) */
/* Default of mds_journal_gather_ms (atoll.conf [mds]): how long an entry
 * may wait for others to share its append (mds_journal.c,
 * journal_gather). */
#define MDS_JOURNAL_GATHER_MS	10u

/* A change applied in memory and answered, waiting for the journaler
 * (early replies, mds_journal.c): it goes to the journal in the next batch. */
struct mds_jent {
	struct mds_jent *next;
	struct msg_conn *conn;	/* the requester (a reference), told when safe */
	uint64_t seq;
	struct timespec due;	/* journal it by then (gather_ms after queueing) */
	bool crash_after;	/* fault injection: exit once this is journaled */
	bool hold;		/* fault injection: never journal this one */
	uint64_t client, reqid, res_ino;	/* the txn's */
	struct mds_packed p;
};

/* The journal's state (m->journal); the lock order and who owns which
 * field: the top of mds_journal.c. */
struct mds_journal {
	uint64_t seg, seg_entries, seq;
	uint64_t seg_bytes;	/* length of the current segment */
	uint64_t seg_max;	/* entries per segment (fault mds_seg_entries) */
	/* Early replies (doc/fs-design.md, "Early replies"): the worker
	 * applies a change in memory, queues it here and replies; the journaler
	 * thread appends every queued change in one atoll_append (group
	 * commit), then hands them to the applier and tells the requesters
	 * (MT_MDS_SAFE).  lock protects the queue, durable_seq, hurry_seq
	 * and stop; cond signals a change of any of them.  early false: the
	 * worker journals each change itself before replying (mds_early_reply
	 * off). */
	bool early, on, stop;	/* on: the journaler runs */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct mds_jent *head, *tail;
	unsigned len;
	uint64_t durable_seq;	/* every entry up to it is journaled */
	/* The journaler gathers entries for up to gather_ms after the
	 * first of a batch was queued (mds_journal_gather_ms), unless
	 * someone waits for an entry up to hurry_seq to be durable (an
	 * fsync's MT_MDS_FLUSH, a truncate, a resend): mds_journal_hurry. */
	uint64_t gather_ms, hurry_seq;
	/* the last sequence number queued and the last journaled, for the
	 * status (read on the loop thread: atomic stores and loads) */
	uint64_t pub_seq, pub_durable;
	uint64_t pub_seg;	/* seg, for the beacons (atomic) */
	uint64_t batches;	/* appends made by the journaler */
	/* fault injection (tests, lib/fault.h names) */
	bool drop_safe;		/* mds_drop_safe: never send MT_MDS_SAFE */
	uint64_t commits, crash_after;	/* mds_crash_after_commits */
	uint32_t crash_op;	/* 0, or only changes of this op count (mds_crash_op) */
	uint64_t crash_hold;	/* mds_crash_before_journal */
	unsigned delay_ms;	/* mds_journal_delay_ms */
};

/* mkfs: the head names segment seg. */
int mds_journal_set_head(struct mds *m, uint64_t seg);
/* Start: replays the segment named by the head over the objects, then
 * rolls it. */
int mds_journal_replay(struct mds *m);
/* The journaler: starts it (early replies on); stop journals what is
 * queued, and tells the clients. */
int mds_journal_start(struct mds *m);
void mds_journal_stop(struct mds *m);
uint64_t mds_journal_durable_seq(struct mds *m);
/* Journal everything queued so far without gathering more (somebody
 * waits for it: an fsync, MT_MDS_FLUSH). */
void mds_journal_hurry(struct mds *m);
/* Can a change be queued for the journaler without waiting?  (Only the
 * thread handling requests queues, so the answer holds until it does.) */
bool mds_journal_room(struct mds *m);
/* mds_txn_commit: queues t for the journaler (early replies; its
 * sequence number), waits until seq is journaled, journals t here (no
 * early replies; a failure exits), counts the entry mds_journal_write
 * made (and rolls a full segment). */
uint64_t mds_journal_queue(struct mds *m, const struct mds_txn *t);
void mds_journal_wait(struct mds *m, uint64_t seq);
void mds_journal_write(struct mds *m, const struct mds_txn *t);
void mds_journal_written(struct mds *m);

#endif
