/*
 * fuse_grants.h - the inode numbers the MDS granted this client for the
 * creates it answers itself (fuse_grants.c; doc/fs-design-client.md,
 * "Asynchronous creates").
 */
#ifndef ATOLL_FUSE_GRANTS_H
#define ATOLL_FUSE_GRANTS_H

#include <stdbool.h>
#include <stdint.h>

/* Under here.lock (fuse_here.c), so that numbers are taken in increasing
 * order: the next number (0: none now), and *ask: whether to ask the MDS
 * for more (fg_ask, once here.lock is let go). */
uint64_t fg_take(bool *ask);
/* Under here.lock: ino, just taken, was not used after all. */
void fg_untake(uint64_t ino);
/* Asks the MDS for a range (not under here.lock: it may wait for a
 * reconnect's resends). */
void fg_ask(void);

#endif
