/*
 * mds_cache.h - the metadata cache (mds_cache.c): the namespace's nodes
 * in memory, within a bound, loaded on first use.  Everything here is
 * under m->lock unless it says otherwise.
 */
#ifndef ATOLL_MDS_CACHE_H
#define ATOLL_MDS_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mds_proto.h"

struct mds;
struct mds_txn;

#define MDS_CACHE_MB		256u	/* the metadata cache's bound (mds_cache_mb) */

/* A directory entry: a node of the directory's AVL tree, ordered by name
 * (bytewise), so that inserts, removals and "the first name after X"
 * (readdir's positions) are O(log n) at any size. */
struct mds_dent {
	struct mds_dent *l, *r;
	uint64_t ino;
	uint32_t mode;		/* S_IF* */
	int h;			/* height of the subtree */
	char name[];
};

struct mds_xattr {
	char *name;
	void *val;
	uint32_t len;
};

/* A cached inode (doc/fs-design.md, "The metadata cache"): its record, and
 * for a directory its entries once loaded (dir_loaded).  A node whose last
 * change (aseq) the applier has not written to the objects yet, or that a
 * client holds open, is pinned; the others are evicted least recently used
 * first when the cache is over its bound, and loaded again on use. */
struct mds_node {
	struct mds_inode a;
	char *link;		/* symlink target or NULL */
	struct mds_dent *dents;	/* directories: the entries (AVL root) */
	size_t nents;		/* entries (valid once dir_loaded) */
	size_t ent_bytes;	/* memory of the entries */
	bool dir_loaded;
	bool gone;		/* removed in memory, not yet in the objects */
	int opens;		/* open handles of all clients (memory only) */
	struct mds_xattr *xa;	/* loaded on first use (xa_loaded) */
	size_t nxa;
	bool xa_loaded;
	uint64_t aseq;		/* the last change to it, in mds_txn_commit order */
	size_t mem;		/* bytes counted in m->cache.bytes */
	struct mds_node *hnext;
	struct mds_node *lprev, *lnext;	/* LRU list: cache.lru_head is the newest */
};

/* The metadata cache (doc/fs-design.md, "The metadata cache"): cached nodes
 * (records, listings, extended attributes) within max bytes, in a hash
 * table by inode number and an LRU list. */
struct mds_cache {
	struct mds_node **ht;
	size_t htsize;
	uint64_t max, bytes, n;	/* bound, bytes and nodes cached */
	uint64_t hits, misses, evictions;
	struct mds_node *lru_head, *lru_tail;
	bool load_err;		/* a load failed during this request */
};

/* mds_open: an empty cache of bound cache.max (0: MDS_CACHE_MB);
 * mds_close: frees every node. */
int mds_cache_init(struct mds *m);
void mds_cache_fini(struct mds *m);
/* The start's scan: caches a record read while under half the bound. */
void mds_cache_preload(struct mds *m, const struct mds_inode *in, const char *link);
/* The node of ino, loaded from the objects on a miss (NULL: no such
 * inode, or the load failed: m->load_err). */
struct mds_node *mds_cache_get(struct mds *m, uint64_t ino);
/* The node of ino if it is cached (no load). */
struct mds_node *mds_cache_find(struct mds *m, uint64_t ino);
/* Loads the entries of directory d (once; 0 or -errno). */
int mds_cache_dir_load(struct mds *m, struct mds_node *d);
/* The entry name of d (its entries loaded), or NULL. */
struct mds_dent *mds_cache_dir_find(struct mds_node *d, const char *name);
/* The first entry of d with a name > after ("" = from the start). */
struct mds_dent *mds_cache_dir_next(struct mds_node *d, const char *after);
/* The directory that names directory n (0: unknown). */
uint64_t mds_cache_dir_parent(struct mds *m, struct mds_node *n);
/* Loads the records of the inodes not cached among inos[0..n) in one
 * request per shard (readdir-plus pages). */
void mds_cache_prefetch(struct mds *m, const uint64_t *inos, size_t n);
/* Evicts unpinned nodes, least recently used first, until the cache is
 * within its bound (at the end of each request, under m->lock). */
void mds_cache_trim(struct mds *m);
/* Is everything request rq reads cached, so that it can be handled
 * without loading anything (the loop thread must not block)? */
bool mds_cache_has_req(struct mds *m, const struct mds_req *rq);
/* The directories rq reads or changes the entries of (at most 4): its
 * ino, a rename's or link's ino2, the directory an rmdir or a rename
 * over a directory removes.  Takes m->lock. */
unsigned mds_cache_req_dirs(struct mds *m, const struct mds_req *rq, uint64_t out[4]);
/* Loads the node's extended attributes (once). */
int mds_cache_xattr_load(struct mds *m, struct mds_node *n);
struct mds_xattr *mds_cache_xattr_find(struct mds_node *n, const char *name);
/* Applies committed txn t to the cached nodes (mds_txn_commit, before the
 * applier writes it): a change pins what it touches until written. */
void mds_cache_apply(struct mds *m, const struct mds_txn *t);

#endif
