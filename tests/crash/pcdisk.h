/*
 * pcdisk.h - rebuilding "the disk after a power cut" from a power-cut log
 * (pclog.h), plus the small file helpers the crash tests share.
 */
#ifndef ATOLL_PCDISK_H
#define ATOLL_PCDISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pclog.h"

struct pc_entry {
	struct pc_rec h;		/* copied out: records are unaligned in the log */
	const unsigned char *data;	/* h.len bytes inside the mapped log */
};

struct pc_log {
	unsigned char *map;
	size_t size;
	struct pc_entry *ents;
	size_t n;
	size_t tail_bytes;		/* bytes after the last whole record (a cut record) */
	char *names[PC_MAX_FILES];	/* fid -> path relative to the watched dir */
	uint32_t fid_flags[PC_MAX_FILES];	/* the PC_OPEN record's flags (PC_F_DIR) */
};

/* Reads the log at path; a record cut short or damaged ends it (its bytes
 * are counted in tail_bytes).  0 or a negative errno. */
int pc_log_load(const char *path, struct pc_log *lg);
void pc_log_free(struct pc_log *lg);

enum pc_fate {
	PC_FATE_RANDOM,		/* each unsynced write lost, applied or torn */
	PC_FATE_KEEP_ALL,	/* every logged write reaches the disk */
	PC_FATE_LOSE_ALL,	/* only synced and O_DSYNC writes reach it */
	PC_FATE_NOT_WHOLE,	/* each unsynced write lost or torn, never whole:
				 * a write that something durable depends on
				 * without a sync is (nearly) always damaged */
};

struct pc_stats {
	uint64_t records;
	uint64_t durable;	/* synced or O_DSYNC: applied */
	uint64_t lost;
	uint64_t applied;	/* unsynced but applied whole */
	uint64_t torn;		/* unsynced, some 4 KiB pieces applied */
	uint64_t ignored;	/* records for files we do not rebuild */
	uint64_t names_kept;	/* pc_rebuild_tree: name changes a power cut kept */
	uint64_t names_lost;	/* ... and those it undid */
};

/* Applies the log's first nrec records to the durable copies ddir/<rel>
 * of the files named in files[] (NULL-terminated relative paths), as a
 * power cut right after record nrec-1 would leave them (nrec = lg->n: at
 * the end of the log).  rng drives the random choices.
 * Returns 0, or -1 with a sentence in err (also when the log says the shim
 * was blind to a change of one of those files). */
int pc_reconstruct(const struct pc_log *lg, size_t nrec, const char *ddir,
		   const char *const files[], enum pc_fate fate, uint64_t *rng,
		   struct pc_stats *st, char *err, size_t errlen);

/* Rebuilds a whole folder: base is the folder as it was on disk when the
 * logged program started (every file in it durable), out (made, must not
 * exist) gets the folder a power cut right after record nrec-1 would leave.
 * Files are followed by name as the program saw them (creates, renames,
 * unlinks); their content as pc_reconstruct does.  A name change is kept
 * if a sync of its folder began after it; of the others, a prefix in log
 * order (a journalling file system's order; its length picked at random,
 * all with PC_FATE_KEEP_ALL, none with PC_FATE_LOSE_ALL).  Paths listed in
 * skip (NULL-terminated, relative) are left out of out, and the shim being
 * blind to them is no error (LMDB's shared-mapped lock file).
 * Returns 0, or -1 with a sentence in err. */
int pc_rebuild_tree(const struct pc_log *lg, size_t nrec, const char *base, const char *out,
		    const char *const skip[], enum pc_fate fate, uint64_t *rng,
		    struct pc_stats *st, char *err, size_t errlen);

/* Copies a file keeping holes; creates or replaces dst.  0 or -errno. */
/* Writes [off, off+len) of fd from data (NULL: zeros); torn: only the
 * 4 KiB pieces a coin from rng picks.  0 or -errno. */
int pc_put(int fd, const unsigned char *data, uint64_t off, uint64_t len, bool torn,
	   uint64_t *rng);
int pc_copy_file(const char *src, const char *dst);
/* rm -rf; 0 or -errno (a missing path is fine). */
int pc_rmtree(const char *path);
/* mkdir -p of one level, fine if it exists. */
int pc_mkdir(const char *path);
/* The fid the log gave to the file at rel, or -1. */
int pc_log_fid(const struct pc_log *lg, const char *rel);

/* splitmix64: small, fast, and the same on every machine. */
static inline uint64_t pc_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in [0, n) (n > 0; the bias is irrelevant here) */
static inline uint64_t pc_below(uint64_t *s, uint64_t n)
{
	return pc_rand(s) % n;
}

#endif
