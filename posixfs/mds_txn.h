/*
 * mds_txn.h - transactions (mds_txn.c): one change of the namespace, its
 * working inodes and updates, and its journal encoding (mds_codec.c).
 */
#ifndef ATOLL_MDS_TXN_H
#define ATOLL_MDS_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mds_proto.h"

struct dec;
struct enc;
struct mds;

/* One change: working copies of the inodes it touches and the dentry
 * updates it makes.  mds_txn_commit() journals it, then applies it. */
enum mds_upd_type {
	MDS_U_DENT_SET = 1,
	MDS_U_DENT_RM = 2,
	MDS_U_INODE_PUT = 3,
	MDS_U_INODE_RM = 4,	/* also removes the directory object */
	MDS_U_PURGE = 5,	/* data objects of blocks [0, size) */
	MDS_U_TRUNC = 6,	/* data beyond size up to old_size */
	MDS_U_HW = 7,		/* ino_hw */
	MDS_U_XATTR_SET = 8,	/* ino, name = txn's xval */
	MDS_U_XATTR_RM = 9,	/* ino, name */
	MDS_U_PARENT = 10,	/* directory ino is named in dir (its ".." key) */
};

struct mds_upd {
	uint8_t type;
	uint64_t dir;
	char name[MDS_NAME_MAX + 1];
	uint64_t ino;
	uint32_t mode;
	struct mds_inode in;	/* INODE_PUT */
	uint64_t size, old_size;
};

#define MDS_TXN_INODES	6
#define MDS_TXN_UPDS	16

struct mds_txn {
	int nw;
	struct {
		struct mds_inode in;
		bool dirty, removed;
		uint64_t purge_size;
		bool purge;
		uint64_t trunc_from, trunc_to;
		bool trunc;
	} w[MDS_TXN_INODES];
	int nu;
	uint64_t link_ino;	/* a symlink whose record the txn puts (link) */
	/* a second symlink of the txn (RENAME_EXCHANGE of two): an inode
	 * record is written with its target, so every symlink a txn puts
	 * carries it (mds_txn_inode fills these in) */
	uint64_t link2_ino;
	uint64_t client, reqid;	/* the request that made it (0: none) */
	uint64_t res_ino;	/* the inode its reply names */
	uint64_t aseq;		/* memory only: its place in mds_txn_commit order */
	uint32_t xlen;
	/* the fields above are cleared by mds_txn_init; the ones below are
	 * read only up to nu, link_ino/link2_ino and xlen (80 KiB in all:
	 * clearing them cost each request a page-sized memset) */
	struct mds_upd u[MDS_TXN_UPDS];
	char link[MDS_PATH_MAX + 1];	/* the target of symlink link_ino */
	char link2[MDS_PATH_MAX + 1];
	uint8_t xval[MDS_XATTR_MAX];	/* a new attribute's value */
};

/* A change as the journaler and the applier queue it: its journal body
 * (what replay decodes too), a few hundred bytes instead of the 80 KiB
 * struct mds_txn that made it, whose copies cost each change page faults
 * and a 15 KiB memcpy twice. */
struct mds_packed {
	uint8_t *body;		/* malloc'd; txn_encode's bytes */
	size_t len;
	uint64_t aseq;		/* the txn's (memory only) */
};

void mds_txn_init(struct mds_txn *t);
/* A working copy of ino in the txn (NULL when ino does not exist). */
struct mds_inode *mds_txn_inode(struct mds *m, struct mds_txn *t, uint64_t ino);
struct mds_inode *mds_txn_new_inode(struct mds_txn *t, uint64_t ino);
void mds_txn_remove(struct mds_txn *t, uint64_t ino, bool purge);
void mds_txn_trunc(struct mds_txn *t, uint64_t ino, uint64_t from, uint64_t to);
void mds_txn_dent_set(struct mds_txn *t, uint64_t dir, const char *name,
		      uint64_t ino, uint32_t mode);
void mds_txn_dent_rm(struct mds_txn *t, uint64_t dir, const char *name);
/* The symlink target to store with inode ino's record in t ("": none). */
const char *mds_txn_link(const struct mds_txn *t, uint64_t ino);
void mds_txn_xattr(struct mds_txn *t, uint64_t ino, const char *name,
		   const void *val, uint32_t len, bool remove);
/* Journals the txn, then applies it in memory and to the objects.  A
 * journal failure is fatal (the daemon exits; a restart replays). */
int mds_txn_commit(struct mds *m, struct mds_txn *t);
/* A new inode number for t's create (a new range of them is persisted
 * in fs.super first, synchronously, every MDS_INO_RANGE numbers). */
int mds_txn_alloc_ino(struct mds *m, struct mds_txn *t, uint64_t *ino);

/* A txn's journal body: encoded (0 or -ENOMEM), decoded (from d, or from
 * p: 0 or -errno of a malformed body). */
int mds_txn_pack(const struct mds_txn *t, struct mds_packed *p);
void mds_txn_encode(struct enc *e, const struct mds_txn *t);
int mds_txn_decode(struct dec *d, struct mds_txn *t);
int mds_txn_unpack(const struct mds_packed *p, struct mds_txn *t);

/* A journal entry in a segment object: u32 body length, u32 crc32c of
 * the sequence number and the body, u64 sequence number (all host order),
 * then the body (mds_txn_encode's bytes).  mds_journal_frame appends one
 * to e; mds_journal_entry_decode reads the one at buf (n bytes left in
 * the segment): 0 with *body, *len and *seq, or -EBADMSG for a short,
 * overlong or corrupt one (a torn entry: replay stops there). */
#define MDS_JOURNAL_FRAME_HDR	16u
void mds_journal_frame(struct enc *e, const uint8_t *body, size_t blen, uint64_t seq);
int mds_journal_entry_decode(const uint8_t *buf, size_t n, const uint8_t **body,
			     size_t *len, uint64_t *seq);

#endif
