/*
 * fuse_cache.h - atoll-fuse's cache of leased metadata (fuse_cache.c):
 * inode records under attribute leases and whole directory listings
 * under directory leases, the invalidations a revoke brings, and the
 * kernel's own caches kept in step with them.
 *
 * Threads: lc_reply and lc_revoke run on the messenger's loop thread (in
 * the order the MDS's messages arrive, which is what keeps the cache
 * right); everything else on FUSE's request threads.  One mutex inside
 * protects the cache; the kernel is told on a thread of its own.
 */
#ifndef ATOLL_FUSE_CACHE_H
#define ATOLL_FUSE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "fuse_dirents.h"
#include "mds_proto.h"

struct fuse_session;

/* What a request thread needs to give the kernel timeouts for what a
 * reply told it: the cache's sequence when the reply arrived, and its
 * lease's end (0: none). */
struct lc_info {
	uint64_t seq;
	uint64_t exp;		/* CLOCK_MONOTONIC ns */
	uint32_t lease_ms;
	uint64_t dir_lease;
};

/* on: leases; kn_track: atoll-fuse checks permissions itself (no
 * default_permissions), so the names the kernel holds are tracked. */
int lc_init(bool on, bool kn_track);
bool lc_on(void);
/* Starts telling the kernel (after the mount). */
int lc_start(struct fuse_session *se);
void lc_stop(void);

/* Loop thread: a decoded reply to a request sent at t_send: applies what
 * it changed (the requester's own change: cached listings it changed are
 * patched when the request tells the entry's new state, else dropped),
 * caches what it leased. */
void lc_reply(const struct mds_req *rq, const struct mds_reply *rp, uint64_t t_send,
	      struct lc_info *ci);
/* Request threads: unlink (rmdir: is_dir) of name in dir answered here,
 * without the MDS (doc/fs-design-client.md, "Asynchronous removals"):
 * possible while this client holds dir exclusively with its listing (for
 * rmdir the victim too, empty).  1: done in the cache (the victim in *ino;
 * the caller sends the MDS the removal, MDS_L_ASYNC, before anything else
 * may end the exclusivity), 0: ask the MDS, < 0: the answer (-ENOTDIR,
 * -EISDIR, -ENOTEMPTY, known from the listing). */
int lc_remove_here(uint64_t dir, const char *name, bool is_dir, uint64_t *ino);
/* Request threads: a create (mkdir: in->mode S_IFDIR) of name in dir
 * answered here, without the MDS (doc/fs-design-client.md, "Asynchronous
 * creates"): possible while this client holds dir exclusively with its
 * listing and record.  in: the new record (number, mode, owner, times);
 * the set-group-ID rule, links and generation are applied here.  1: done
 * in the cache (ci for the kernel's timeouts; the caller sends the MDS the
 * create, MDS_L_ASYNC, before anything else may end the exclusivity), 0:
 * ask the MDS, -EEXIST: the listing has name. */
int lc_create_here(uint64_t dir, const char *name, struct mds_inode *in, struct lc_info *ci);
/* Loop thread: a revoke (or a lost MDS session: all = true). */
void lc_revoke(const struct mds_chg *c, uint32_t n, bool all);

/* Request threads.  Hold the kernel barrier (lc_kbar_enter/leave) from
 * reading the cache or checking a reply's freshness until the reply to
 * the kernel went out: an invalidation of the kernel then never overtakes
 * a reply that carried what it invalidates. */
void lc_kbar_enter(void);
void lc_kbar_leave(void);
/* Seconds the kernel may cache ino's attributes (is_dir: the entries of
 * directory ino) after a reply with ci: the lease left, 0 when something
 * invalidated it since, 1 s without a lease. */
double lc_timeout(uint64_t ino, const struct lc_info *ci);
/* An open of file ino (after the MDS's reply to it, before the reply to
 * the kernel; also a create): true when the kernel may keep the pages it
 * caches of it (FOPEN_KEEP_CACHE) — an earlier open under a lease
 * synchronized them, and leases without a gap have covered the file
 * since, so another client's change would have been revoked here (the
 * record dropped).  Either way the pages count as synchronized from this
 * open on, while its lease runs. */
bool lc_open_keep(uint64_t ino);
/* The MDS's error for a call about inode ino by number (open, getattr):
 * -ENOENT there means the inode is gone, not a name (a rename over the
 * file, or an unlink, between the kernel's lookup and this call): its
 * record is dropped and -ESTALE returned, on which the kernel walks the
 * path again with LOOKUP_REVAL and opens what the name is now (the new
 * file of a rename over it), so a reader never sees ENOENT for a name
 * that never went missing.  Other errors come back as they are. */
int lc_ino_err(uint64_t ino, int err);
/* The cached record of ino; returns the seconds left, or < 0 when none. */
double lc_attr(uint64_t ino, struct mds_inode *out);
/* The cached record of a file this client created (MKNOD) at most
 * within_ns ago and nobody changed since (no revoke, no change of its
 * own): seconds its lease has left, or < 0. */
double lc_attr_new(uint64_t ino, uint64_t within_ns, struct mds_inode *out);
/* In a cached listing of dir: 1 found (ino, mode), 0 not in it,
 * < 0 no listing.  *left: seconds its lease has left. */
int lc_dir_lookup(uint64_t dir, const char *name, uint64_t *ino, uint32_t *mode,
		  double *left);
/* A copy of dir's cached listing (malloc'd, names too: lc_ents_free)
 * and its generation; -ENOENT when none. */
int lc_dir_get(uint64_t dir, struct lc_ent **ents, size_t *n, uint64_t *gen);
/* Caches a listing read with ci (the first page's info): refused (0)
 * when something changed dir since; else its generation.  Takes ents. */
uint64_t lc_dir_put(uint64_t dir, struct lc_ent *ents, size_t n, const struct lc_info *ci);
/* Seconds the lease of listing gen of dir has left; 0 when it is gone. */
double lc_dir_left(uint64_t dir, uint64_t gen);
/* An extended attribute of ino cached with its record: 1 (a malloc'd
 * copy in *val, *len), 0 cached as absent, -1 not cached. */
int lc_xattr(uint64_t ino, const char *name, void **val, uint32_t *len);

/* What a permission check needs of an inode. */
struct lc_perm {
	uint32_t mode, uid, gid;
};

/* ino's mode and owner while its attribute lease runs (also after this
 * client's own changes of its times, size or links): 0, or -ENOENT. */
int lc_perm(uint64_t ino, struct lc_perm *out);
/* The timeout the kernel may keep entry (dir, name) for, at most t: 0
 * unless dir is leased here and searchable by everyone (mode 0111), for
 * at most what its lease has left; the name is noted so that a change
 * of dir's mode or owner invalidates it in the kernel.  Call under the
 * kernel barrier, up to the reply.  Without tracking: t. */
double lc_kname(uint64_t dir, const char *name, double t);

#endif
