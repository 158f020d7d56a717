/*
 * fuse_replay.h - atoll-fuse's unsafe requests and their replay after a
 * reconnect (fuse_replay.c; doc/fs-design.md, "Early replies").
 *
 * A change the MDS answered before journaling it is kept until the MDS
 * says it is safe, and resent, in order, when the connection breaks
 * (an MDS restart), before any newer call; so are the changes answered
 * here (fuse_here.c) that a break cut off.  fsync waits until every
 * change before it is safe.
 */
#ifndef ATOLL_FUSE_REPLAY_H
#define ATOLL_FUSE_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "mds_proto.h"

struct acall;

/* Starts the replayer thread (fc_connect, before the MDS is dialled):
 * 0 or -errno.  fr_stop: stops it (at the very end; no-op when it never
 * started). */
int fr_start(void);
void fr_stop(void);

/* The reconnects to the MDS so far (opens are counted per reconnect:
 * fuse_data.h, fd_open).  fr_recount_wanted: wakes the replayer to
 * re-count the flagged opens (fd_opens). */
uint64_t fr_gen(void);
void fr_recount_wanted(void);

/* The loop thread (in the connection's order with MT_MDS_SAFE): keeps a
 * request the MDS answered unsafe (rp->jseq). */
void fr_unsafe_add(const struct mds_req *rq, const struct mds_reply *rp);
/* The loop thread: MT_MDS_SAFE, the MDS journaled up to seq. */
void fr_safe(uint64_t seq);
/* The loop thread: the MDS connection broke; everything unsafe is to be
 * resent, then the cut calls answered here, before any newer call. */
void fr_broke(void);

/* Waits while a reconnect's resends run; false when the unmount gave up
 * on the MDS (nothing waits for it any more). */
bool fr_wait_replayed(void);
/* Whether a reconnect's resends run now (and the unmount did not give
 * up): a call sent now would have to wait. */
bool fr_replaying(void);
/* fc_call_async, before sending a: waits for a reconnect's resends; a
 * call answered here (a->here) takes its place among those in flight,
 * behind what the replayer resent.  Returns the connection epoch to send
 * on (epoch, or the one read under the lock for a call answered here). */
uint64_t fr_before_send(struct acall *a, uint64_t epoch);
/* A call answered here ended: no longer in flight. */
void fr_here_done(struct acall *a);
/* A call answered here, cut off by a broken connection: it waits for the
 * replayer, in its order; false when the unmount gave up on the MDS (it
 * fails then). */
bool fr_cut_add(struct acall *a);

/* A change answered here before the MDS answered it: counted, unless a
 * reconnect's resends run (false: the MDS must answer it, for order).
 * fr_async_end: one such change less (it was answered, or not counted
 * after all).  fsync waits for those counted. */
bool fr_async_begin(void);
void fr_async_end(void);

/* fsync, fsyncdir: waits until every change this client made before
 * (request ids up to the current one) is journaled.  timeout_s 0: for
 * as long as it takes; else false when still not after that long.
 * false at once when the unmount gave up on the MDS.
 * fr_unsafe_wait_all: 0 once every change before is journaled; -EIO
 * when the unmount gave up on the MDS first (fsync must not report them
 * durable). */
bool fr_unsafe_wait(unsigned timeout_s);
int fr_unsafe_wait_all(void);

/* The unmount: whether the MDS still owes something (resends to run,
 * changes not journaled); fr_give_up: the grace ran out, every call
 * fails ENOTCONN from now on and the cut calls fail; fr_log_lost: one
 * line per change never journaled (the first 32). */
bool fr_owed(void);
void fr_give_up(void);
void fr_log_lost(void);

#endif
