/*
 * fuse_close.h - the calls to the MDS nobody waits for (fuse_close.c):
 * CLOSE of a file (in batches) and LANDED of a file's writes, and the
 * closer thread, which also sends the gathered changes of fuse_here.c.
 */
#ifndef ATOLL_FUSE_CLOSE_H
#define ATOLL_FUSE_CLOSE_H

#include <stdint.h>

/* After the mount: starts the closer thread.  fcl_stop: at unmount,
 * before the calls in flight are drained: what is gathered goes now,
 * later closes one at a time. */
void fcl_start(void);
void fcl_stop(void);
/* Sends CLOSE of ino (nothing written; ogen: the reconnect its open was
 * counted under) without waiting for the reply: gathered with others
 * for a few milliseconds (doc/fs-design-client.md, "Closes in batches"). */
void fcl_close_async(uint64_t ino, uint64_t ogen);
/* LANDED for ino's mark (its writes are durable), without waiting. */
void fcl_landed_async(uint64_t ino, uint64_t mark);
/* Under here.lock (fuse_here.c): the first change held: the closer sends
 * it (and those after it) within fh_gather_us(). */
void fcl_gather_kick(void);

#endif
