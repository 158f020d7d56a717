/*
 * pcdisk.c - turns a power-cut log into the disk a power cut would leave.
 *
 * The durable copy of each file (taken before the child ran) gets, in log
 * order, every write that a later completed sync of the same file covers
 * (or that went through O_DSYNC), and for each write after that point a
 * random fate: lost, applied whole, or torn (a random subset of the 4 KiB
 * pieces it covers, cut at 4 KiB file offsets: the unit a disk writes
 * atomically in this model).  Applying in log order keeps "a newer write
 * of the same page never reaches the disk before an older one", which is
 * what a page cache and a disk queue give.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pcdisk.h"

#define PIECE 4096u

int pc_log_load(const char *path, struct pc_log *lg)
{
	struct stat sb;
	size_t pos = 0, cap = 0;
	int fd, r = 0;

	memset(lg, 0, sizeof(*lg));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;	/* no log: nothing was written */
	if (fstat(fd, &sb) < 0) {
		r = -errno;
		goto out_close;
	}
	lg->size = (size_t)sb.st_size;
	if (lg->size) {
		lg->map = mmap(NULL, lg->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (lg->map == MAP_FAILED) {
			lg->map = NULL;
			r = -errno;
			goto out_close;
		}
	}
	while (lg->size - pos >= sizeof(struct pc_rec)) {
		struct pc_entry e;
		struct pc_sum sum;
		uint64_t want;

		memcpy(&e.h, lg->map + pos, sizeof(e.h));
		if (e.h.magic != PC_MAGIC || e.h.len > lg->size - pos - sizeof(e.h))
			break;
		e.data = lg->map + pos + sizeof(e.h);
		want = e.h.sum;
		e.h.sum = 0;
		pc_sum_init(&sum);
		pc_sum_update(&sum, e.data, e.h.len);
		pc_sum_update(&sum, &e.h, sizeof(e.h));
		e.h.sum = want;
		if (pc_sum_final(&sum) != want || e.h.seq != lg->n)
			break;
		if (e.h.type == PC_OPEN) {
			if (e.h.fid >= PC_MAX_FILES || lg->names[e.h.fid])
				break;
			lg->names[e.h.fid] = strndup((const char *)e.data, e.h.len);
			lg->fid_flags[e.h.fid] = e.h.flags;
			if (!lg->names[e.h.fid]) {
				r = -ENOMEM;
				goto out_close;
			}
		}
		if (lg->n == cap) {
			size_t ncap = cap ? 2 * cap : 1024;
			struct pc_entry *ne = realloc(lg->ents, ncap * sizeof(*ne));

			if (!ne) {
				r = -ENOMEM;
				goto out_close;
			}
			lg->ents = ne;
			cap = ncap;
		}
		lg->ents[lg->n++] = e;
		pos += sizeof(e.h) + e.h.len;
	}
	lg->tail_bytes = lg->size - pos;
out_close:
	close(fd);
	if (r < 0)
		pc_log_free(lg);
	return r;
}

void pc_log_free(struct pc_log *lg)
{
	unsigned i;

	if (lg->map)
		munmap(lg->map, lg->size);
	free(lg->ents);
	for (i = 0; i < PC_MAX_FILES; i++)
		free(lg->names[i]);
	memset(lg, 0, sizeof(*lg));
}

static int full_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t w = pwrite(fd, p, len, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* data NULL: write zeros */
static int put_range(int fd, const unsigned char *data, uint64_t off, uint64_t len)
{
	static const unsigned char zeros[65536];
	int r;

	if (data)
		return full_pwrite(fd, data, len, off);
	while (len) {
		size_t l = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);

		r = full_pwrite(fd, zeros, l, off);
		if (r < 0)
			return r;
		off += l;
		len -= l;
	}
	return 0;
}

/* Applies the 4 KiB pieces of [off, off+len) that the coin picks. */
static int put_torn(int fd, const unsigned char *data, uint64_t off, uint64_t len,
		    uint64_t *rng)
{
	uint64_t p = off, end = off + len;
	int r;

	while (p < end) {
		uint64_t next = (p / PIECE + 1) * PIECE;

		if (next > end)
			next = end;
		if (pc_below(rng, 2)) {
			r = put_range(fd, data ? data + (p - off) : NULL, p, next - p);
			if (r < 0)
				return r;
		}
		p = next;
	}
	return 0;
}

int pc_put(int fd, const unsigned char *data, uint64_t off, uint64_t len, bool torn,
	   uint64_t *rng)
{
	return torn ? put_torn(fd, data, off, len, rng) : put_range(fd, data, off, len);
}

static int grow_to(int fd, uint64_t size)
{
	struct stat sb;

	if (fstat(fd, &sb) < 0)
		return -errno;
	if ((uint64_t)sb.st_size < size && ftruncate(fd, (off_t)size) < 0)
		return -errno;
	return 0;
}

int pc_reconstruct(const struct pc_log *lg, size_t nrec, const char *ddir,
		   const char *const files[], enum pc_fate fate, uint64_t *rng,
		   struct pc_stats *st, char *err, size_t errlen)
{
	int fds[PC_MAX_FILES];
	uint64_t synced[PC_MAX_FILES];	/* writes with seq < this are durable */
	uint64_t synced_all = 0;
	unsigned i;
	size_t k;
	int r = -1;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < PC_MAX_FILES; i++) {
		fds[i] = -1;
		synced[i] = 0;
	}
	if (nrec > lg->n)
		nrec = lg->n;
	for (k = 0; k < nrec; k++) {
		const struct pc_rec *h = &lg->ents[k].h;

		if (h->type != PC_SYNC)
			continue;
		if (h->fid == PC_FID_ALL) {
			if (h->arg > synced_all)
				synced_all = h->arg;
		} else if (h->fid < PC_MAX_FILES && h->arg > synced[h->fid]) {
			synced[h->fid] = h->arg;
		}
	}
	for (i = 0; i < PC_MAX_FILES; i++) {
		char path[4096];
		unsigned f;

		if (!lg->names[i])
			continue;
		for (f = 0; files[f]; f++)
			if (strcmp(files[f], lg->names[i]) == 0)
				break;
		if (!files[f])
			continue;
		snprintf(path, sizeof(path), "%s/%s", ddir, lg->names[i]);
		fds[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fds[i] < 0) {
			snprintf(err, errlen, "cannot open durable copy '%s': %s",
				 path, strerror(errno));
			goto out_close;
		}
		if (synced_all > synced[i])
			synced[i] = synced_all;
	}

	for (k = 0; k < nrec; k++) {
		const struct pc_entry *e = &lg->ents[k];
		const struct pc_rec *h = &e->h;
		int fd = h->fid < PC_MAX_FILES ? fds[h->fid] : -1;
		bool durable;
		unsigned choice;
		int w = 0;

		st->records++;
		/* name changes: this model follows files that keep their names */
		if (h->type == PC_OPEN || h->type == PC_SYNC || h->type == PC_CREATE ||
		    h->type == PC_RENAME || h->type == PC_UNLINK)
			continue;
		if (fd < 0) {
			st->ignored++;
			continue;
		}
		if (h->type == PC_BLIND) {
			snprintf(err, errlen, "the shim could not follow a change of '%s' "
				 "(shared writable mmap, unusual fallocate or aio sync overflow); "
				 "the power-cut model does not hold for this program",
				 lg->names[h->fid]);
			goto out_close;
		}
		durable = (h->flags & PC_F_DURABLE) || h->seq < synced[h->fid];
		if (durable || fate == PC_FATE_KEEP_ALL)
			choice = 1;
		else if (fate == PC_FATE_LOSE_ALL)
			choice = 0;
		else if (fate == PC_FATE_NOT_WHOLE)
			choice = pc_below(rng, 2) ? 2 : 0;
		else
			choice = (unsigned)pc_below(rng, 3);	/* 0 lost, 1 applied, 2 torn */
		if (durable)
			st->durable++;
		else if (choice == 0)
			st->lost++;
		else if (choice == 1)
			st->applied++;
		else
			st->torn++;
		if (choice == 0)
			continue;

		switch (h->type) {
		case PC_WRITE:
			w = choice == 1 ? put_range(fd, e->data, h->off, h->len)
					: put_torn(fd, e->data, h->off, h->len, rng);
			break;
		case PC_ZERO:
			w = choice == 1 ? put_range(fd, NULL, h->off, h->arg)
					: put_torn(fd, NULL, h->off, h->arg, rng);
			break;
		case PC_TRUNC:
			if (ftruncate(fd, (off_t)h->arg) < 0)
				w = -errno;
			break;
		case PC_EXTEND:
			w = grow_to(fd, h->arg);
			break;
		default:
			snprintf(err, errlen, "log record %zu has unknown type %u",
				 k, (unsigned)h->type);
			goto out_close;
		}
		if (w < 0) {
			snprintf(err, errlen, "cannot apply log record %zu to '%s': %s",
				 k, lg->names[h->fid], strerror(-w));
			goto out_close;
		}
	}
	r = 0;
out_close:
	for (i = 0; i < PC_MAX_FILES; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	static const unsigned char zeros[4096];

	while (n >= sizeof(zeros)) {
		if (memcmp(p, zeros, sizeof(zeros)) != 0)
			return false;
		p += sizeof(zeros);
		n -= sizeof(zeros);
	}
	return memcmp(p, zeros, n) == 0;
}

/* Copies [data, hole) of in to out, leaving 4 KiB runs of zeros as holes
 * (a preallocated block file reads as zeros and should not cost a copy). */
static int copy_range(int in, int out, off_t data, off_t hole, unsigned char *buf,
		      size_t bufsz)
{
	while (data < hole) {
		size_t want = (size_t)(hole - data) < bufsz ? (size_t)(hole - data) : bufsz;
		ssize_t n = pread(in, buf, want, data);
		size_t k;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		for (k = 0; k < (size_t)n; k += 4096) {
			size_t l = (size_t)n - k < 4096 ? (size_t)n - k : 4096;
			int r;

			if (all_zero(buf + k, l))
				continue;
			r = full_pwrite(out, buf + k, l, (uint64_t)data + k);
			if (r < 0)
				return r;
		}
		data += n;
	}
	return 0;
}

int pc_copy_file(const char *src, const char *dst)
{
	const size_t bufsz = 1u << 20;
	unsigned char *buf;
	struct stat sb;
	off_t pos = 0;
	int in, out, r = 0;

	buf = malloc(bufsz);
	if (!buf)
		return -ENOMEM;
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		r = -errno;
		goto out_free;
	}
	if (fstat(in, &sb) < 0) {
		r = -errno;
		goto out_close_in;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		r = -errno;
		goto out_close_in;
	}
	while (pos < sb.st_size) {
		off_t data = lseek(in, pos, SEEK_DATA), hole;

		if (data < 0) {
			if (errno == ENXIO)	/* only a hole up to the end */
				break;
			r = -errno;
			goto out_close_out;
		}
		hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0) {
			r = -errno;
			goto out_close_out;
		}
		r = copy_range(in, out, data, hole, buf, bufsz);
		if (r < 0)
			goto out_close_out;
		pos = hole;
	}
	if (ftruncate(out, sb.st_size) < 0)
		r = -errno;
out_close_out:
	close(out);
out_close_in:
	close(in);
out_free:
	free(buf);
	return r;
}

static int rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (type == FTW_DP)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

int pc_rmtree(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return -errno;
	return 0;
}

int pc_log_fid(const struct pc_log *lg, const char *rel)
{
	unsigned i;

	for (i = 0; i < PC_MAX_FILES; i++)
		if (lg->names[i] && strcmp(lg->names[i], rel) == 0)
			return (int)i;
	return -1;
}

int pc_mkdir(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}
