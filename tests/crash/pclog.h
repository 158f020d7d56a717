/*
 * pclog.h - the power-cut log written by powercut_shim.so and read back by
 * the crash tests (pcdisk.c).
 *
 * The shim appends one record per event that matters for durability, in
 * the order the events completed: a file being opened (its path, once per
 * file), a completed write (with its data), a completed sync, a truncate
 * or fallocate, and the name changes of the folder: a file created, renamed
 * or unlinked.  Every record carries a sequence number (its position in
 * the log) and a checksum over header and payload, so that a reader can
 * stop cleanly at a record that a kill -9 cut short.
 *
 * Durability rule the reader applies: a write is durable if it was made on
 * an O_DSYNC/O_SYNC fd (or with RWF_DSYNC), or if a sync of the same file
 * completed whose start_seq is greater than the write's seq (the sync was
 * called after the write had returned).  A name change (create, rename,
 * unlink) is durable if a sync of its folder (an fsync of the directory's
 * fd, logged as PC_SYNC of the folder's fid) began after it.
 *
 * Header only: the shim must not depend on anything but libc.
 */
#ifndef ATOLL_PCLOG_H
#define ATOLL_PCLOG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PC_MAGIC	0x474c4350u	/* "PCLG" */
#define PC_FID_ALL	0xffffu		/* sync()/syncfs(): every file */
#define PC_MAX_FILES	4096u	/* paths named in one log */
#define PC_PATH_MAX	1024u

enum pc_type {
	PC_OPEN = 1,	/* fid gets a name: payload = path relative to the dir */
	PC_WRITE = 2,	/* off, len bytes of payload */
	PC_SYNC = 3,	/* arg = seq at the time the sync was called */
	PC_TRUNC = 4,	/* arg = new size */
	PC_ZERO = 5,	/* off, arg = length: punched or zeroed range */
	PC_EXTEND = 6,	/* arg = size the file grows to (fallocate) */
	PC_BLIND = 7,	/* something the shim cannot see (shared writable mmap, ...) */
	PC_CREATE = 8,	/* the path fid now names a new, empty file */
	PC_RENAME = 9,	/* the file at fid now lives at fid arg (replacing it) */
	PC_UNLINK = 10,	/* the path fid names nothing any more */
};

#define PC_F_DURABLE	0x1u	/* written through O_DSYNC/O_SYNC or RWF_DSYNC */
#define PC_F_AIO	0x2u	/* completed through io_getevents */
#define PC_F_DIR	0x4u	/* on PC_OPEN: the path is a directory */

struct pc_rec {
	uint32_t magic;
	uint16_t type;
	uint16_t fid;
	uint32_t flags;
	uint32_t len;		/* payload bytes after the header */
	uint64_t seq;
	uint64_t off;
	uint64_t arg;
	uint64_t sum;		/* pc_sum() of the header (sum = 0) and payload */
};

/* A cheap 64-bit checksum over a byte stream; it only has to catch a
 * record cut short or garbage after it, not an adversary.  Streaming: the
 * result does not depend on how the bytes are split between calls. */
struct pc_sum {
	uint64_t h;
	uint64_t word;		/* bytes of an incomplete word, little end first */
	unsigned nword;
};

static inline void pc_sum_init(struct pc_sum *s)
{
	s->h = 0xcbf29ce484222325ull;
	s->word = 0;
	s->nword = 0;
}

static inline void pc_sum_word(struct pc_sum *s, uint64_t w)
{
	s->h = (s->h ^ w) * 0x100000001b3ull;
	s->h ^= s->h >> 29;
}

static inline void pc_sum_update(struct pc_sum *s, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t w;

	while (n && s->nword) {
		s->word |= (uint64_t)*b++ << (8 * s->nword);
		n--;
		if (++s->nword == 8) {
			pc_sum_word(s, s->word);
			s->word = 0;
			s->nword = 0;
		}
	}
	while (n >= 8) {
		memcpy(&w, b, 8);
		pc_sum_word(s, w);
		b += 8;
		n -= 8;
	}
	while (n--)
		s->word |= (uint64_t)*b++ << (8 * s->nword++);
}

static inline uint64_t pc_sum_final(struct pc_sum *s)
{
	pc_sum_word(s, s->word ^ ((uint64_t)s->nword << 56));
	return s->h;
}

#endif
