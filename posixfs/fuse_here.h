/*
 * fuse_here.h - the changes atoll-fuse answers itself (fuse_here.c):
 * creates, mkdir, unlink and rmdir in a folder this mount holds
 * exclusively are answered at once and sent to the MDS behind
 * (doc/fs-design-client.md, "Asynchronous removals", "Asynchronous creates").
 */
#ifndef ATOLL_FUSE_HERE_H
#define ATOLL_FUSE_HERE_H

#define FUSE_USE_VERSION 35

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

#include "mds_proto.h"

#define FH_GATHER_US_DEFAULT 1000u	/* -o gather_us, fuse_gather_us */
#define FH_GATHER_US_MAX 100000u

/* Before the mount: which changes may be answered here (-o noasync_rm,
 * -o noasync_create, nolease turn them off) and how long they wait for
 * others before they go to the MDS together (gather_us, microseconds;
 * 0: each at once).  Reads the fault fuse_async_hold. */
void fh_init(bool async_rm, bool async_create, unsigned gather_us);
/* Whether any change may be answered here (requests then ask the MDS
 * for exclusive leases: MDS_L_EXCL_OK). */
bool fh_enabled(void);
/* The gathering time, microseconds (the closer thread waits it out). */
unsigned fh_gather_us(void);

/* create (fi: open it too) or mkdir of name in parent, answered here:
 * true when req is answered (else the MDS is to answer it). */
bool fh_create(fuse_req_t req, uint32_t op, fuse_ino_t parent, const char *name,
	       mode_t mode, struct fuse_file_info *fi);
/* unlink or rmdir of name in parent, answered here: true when req is
 * answered. */
bool fh_remove(fuse_req_t req, uint32_t op, fuse_ino_t parent, const char *name);

/* The changes answered here and held back (gathering, or the fault
 * fuse_async_hold) go before any other call, which may concern them:
 * every call to the MDS calls this first.  may_wait: the caller may wait
 * for a reconnect's resends (not the loop thread, nor a thread that
 * answers the kernel); else, while they run, they stay held (the closer
 * thread tries again). */
void fh_flush(bool may_wait);
/* The FUSE loop ended: what is held goes now (the caller may wait). */
void fh_send_held(void);
/* The loop thread: a revoke (the n changes c) that ends an exclusive
 * lease.  The changes answered under it are sent first, and the cache
 * drops what c covers, both under here.lock: the ack that follows is
 * behind every such change on the connection. */
void fh_revoke_excl(const struct mds_chg *c, uint32_t n);
/* At unmount: logs how many changes were answered here, and how many of
 * those the MDS refused. */
void fh_log_counts(void);

#endif
