/*
 * powercut_shim.c - LD_PRELOAD shim that records, for the power-cut test,
 * every write and every sync a process makes to files under one directory.
 *
 * kill -9 cannot show a missing flush: the page cache survives it.  So the
 * crash test runs its child under this shim and afterwards rebuilds "what
 * the disk would hold after a power cut" from the log (pcdisk.c): writes
 * that a completed sync covers are kept, later ones are lost, applied or
 * torn at random.
 *
 * Environment: ATOLL_PC_DIR (the directory whose files are watched) and
 * ATOLL_PC_LOG (the log file, outside that directory).  Without both the
 * shim only passes calls through.  ATOLL_PC_NOSYNC=<path relative to the
 * dir> drops that file's syncs from the log: the harness's own test, a
 * stand-in for a program that never syncs the file.
 *
 * Blind spots: writes through stdio (glibc opens those files internally)
 * and through shared writable mappings.  The latter are flagged in the log
 * (PC_BLIND) so that the rebuild refuses to trust it; the store writes
 * neither way.
 *
 * A record is appended after the real call has returned and before the
 * wrapper returns to the caller, so anything the program knows to be
 * written is in the log before the program can ask for it to be synced.
 * A sync remembers the log position at the time it was called (start_seq):
 * writes logged before that position were complete when the sync began.
 * Aio writes are recorded when io_getevents hands their completion back.
 * sync_file_range() is passed through without a record on purpose: it
 * flushes no disk cache and no metadata, so it makes nothing durable.
 *
 * Thread safety: one mutex (log_lock) serialises log appends and the
 * sequence counter; the fd table is read and written with atomics.  The
 * shim allocates nothing after start-up and keeps errno as the real call
 * left it.
 */
/* the real symbols are the 64-bit ones; keep the plain names plain */
#undef _FILE_OFFSET_BITS

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pclog.h"

#define FD_MAX		65536
#define AIO_SYNC_SLOTS	256
#define FD_TRACKED	0x10000u	/* fdtab value: tracked, low 16 bits = fid */
#define FD_DSYNC	0x20000u

static struct {
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*pwrite)(int, const void *, size_t, off_t);
	ssize_t (*pwritev)(int, const struct iovec *, int, off_t);
	ssize_t (*pwritev2)(int, const struct iovec *, int, off_t, int);
	int (*open)(const char *, int, ...);
	int (*openat)(int, const char *, int, ...);
	int (*close)(int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fsync)(int);
	int (*fdatasync)(int);
	int (*sync_file_range)(int, off_t, off_t, unsigned int);
	void (*sync)(void);
	int (*syncfs)(int);
	int (*ftruncate)(int, off_t);
	int (*truncate)(const char *, off_t);
	int (*fallocate)(int, int, off_t, off_t);
	int (*posix_fallocate)(int, off_t, off_t);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*io_submit)(io_context_t, long, struct iocb **);
	int (*io_getevents)(io_context_t, long, long, struct io_event *, struct timespec *);
	int (*io_pgetevents)(io_context_t, long, long, struct io_event *,
			     struct timespec *, sigset_t *);
} real;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* both env vars set and the log opened; set once by the constructor,
 * before the program's threads exist */
static bool active;
static int log_fd = -1;
static char watch_dir[PATH_MAX];	/* canonical, no trailing slash */
static size_t watch_len;

/* log_lock protects next_seq (also read atomically without it), the file
 * names table and the log file's append position. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_seq;
static char file_names[PC_MAX_FILES][PC_PATH_MAX];
static unsigned nfiles;
/* ATOLL_PC_NOSYNC names one file whose syncs are not recorded: the test of
 * the harness itself, a stand-in for a program that never syncs that file */
static const char *nosync_name;
static int nosync_fid = -1;

/* fd -> FD_TRACKED | FD_DSYNC | fid; 0 = not ours.  Atomics only. */
static uint32_t fdtab[FD_MAX];

/* aio fsync iocbs in flight: iocb -> seq when submitted; under log_lock */
static struct {
	struct iocb *cb;
	uint64_t start;
} aio_syncs[AIO_SYNC_SLOTS];

static void *sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static void *aio_sym(const char *name, const char *version)
{
	void *p = dlvsym(RTLD_NEXT, name, version);

	return p ? p : dlsym(RTLD_NEXT, name);
}

/* Resolves the real functions; safe to run from any first call. */
static void shim_init(void)
{
	real.write = sym("write");
	real.writev = sym("writev");
	real.pwrite = sym("pwrite64");
	real.pwritev = sym("pwritev64");
	real.pwritev2 = sym("pwritev64v2");
	real.open = sym("open64");
	real.openat = sym("openat64");
	real.close = sym("close");
	real.dup = sym("dup");
	real.dup2 = sym("dup2");
	real.dup3 = sym("dup3");
	real.fsync = sym("fsync");
	real.fdatasync = sym("fdatasync");
	real.sync_file_range = sym("sync_file_range");
	real.sync = sym("sync");
	real.syncfs = sym("syncfs");
	real.ftruncate = sym("ftruncate64");
	real.truncate = sym("truncate64");
	real.fallocate = sym("fallocate64");
	real.posix_fallocate = sym("posix_fallocate64");
	real.mmap = sym("mmap64");
	real.io_submit = aio_sym("io_submit", "LIBAIO_0.1");
	real.io_getevents = aio_sym("io_getevents", "LIBAIO_0.4");
	real.io_pgetevents = aio_sym("io_pgetevents", "LIBAIO_0.5");
}

/* Starts recording.  Runs from our constructor only, never from the first
 * wrapped call: a sanitizer runtime makes such calls (mmap, open) while it
 * initialises, before realpath() and friends may be used. */
static void shim_activate(void)
{
	const char *dir, *logp;

	dir = getenv("ATOLL_PC_DIR");
	logp = getenv("ATOLL_PC_LOG");
	nosync_name = getenv("ATOLL_PC_NOSYNC");
	if (!dir || !logp || !realpath(dir, watch_dir))
		return;
	watch_len = strlen(watch_dir);
	log_fd = real.open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (log_fd < 0) {
		fprintf(stderr, "powercut_shim: cannot open log '%s': %s\n",
			logp, strerror(errno));
		abort();
	}
	active = true;
}

__attribute__((constructor)) static void shim_ctor(void)
{
	pthread_once(&init_once, shim_init);
	shim_activate();
}

static inline void ensure_init(void)
{
	pthread_once(&init_once, shim_init);
}

static uint32_t fdt_get(int fd)
{
	if (fd < 0 || fd >= FD_MAX)
		return 0;
	return __atomic_load_n(&fdtab[fd], __ATOMIC_ACQUIRE);
}

static void fdt_set(int fd, uint32_t v)
{
	if (fd >= 0 && fd < FD_MAX)
		__atomic_store_n(&fdtab[fd], v, __ATOMIC_RELEASE);
}

static uint64_t seq_now(void)
{
	return __atomic_load_n(&next_seq, __ATOMIC_ACQUIRE);
}

/* Writes all of iov to the log; the caller holds log_lock.  A failure here
 * would make the log lie, so it aborts. */
static void log_write_all(struct iovec *iov, int cnt)
{
	while (cnt > 0) {
		int n = cnt > IOV_MAX ? IOV_MAX : cnt;
		ssize_t w = real.writev(log_fd, iov, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			abort();
		}
		while (cnt > 0 && (size_t)w >= iov->iov_len) {
			w -= iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= w;
		}
	}
}

/* Appends one record whose payload is the first paylen bytes of data[0..n).
 * data may be modified (trimmed); n may be 0. */
static void emit(uint16_t type, uint16_t fid, uint32_t flags, uint64_t off,
		 uint64_t arg, const struct iovec *data, int n, size_t paylen)
{
	struct iovec stackv[64];
	struct iovec *iov = stackv;
	struct pc_rec h;
	struct pc_sum psum;
	size_t left = paylen;
	int cnt = 1, i;
	int saved = errno;

	pc_sum_init(&psum);
	if (n + 1 > 64) {
		/* big vectors: emit them as one record per element */
		uint64_t o = off;

		for (i = 0; i < n && left > 0; i++) {
			size_t l = data[i].iov_len < left ? data[i].iov_len : left;

			emit(type, fid, flags, o, arg, &data[i], 1, l);
			o += l;
			left -= l;
		}
		errno = saved;
		return;
	}
	for (i = 0; i < n && left > 0; i++) {
		size_t l = data[i].iov_len < left ? data[i].iov_len : left;

		iov[cnt].iov_base = data[i].iov_base;
		iov[cnt].iov_len = l;
		pc_sum_update(&psum, data[i].iov_base, l);
		cnt++;
		left -= l;
	}
	memset(&h, 0, sizeof(h));
	h.magic = PC_MAGIC;
	h.type = type;
	h.fid = fid;
	h.flags = flags;
	h.len = (uint32_t)(paylen - left);
	h.off = off;
	h.arg = arg;
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);

	pthread_mutex_lock(&log_lock);
	h.seq = next_seq;
	pc_sum_update(&psum, &h, sizeof(h));
	h.sum = pc_sum_final(&psum);
	log_write_all(iov, cnt);
	__atomic_store_n(&next_seq, h.seq + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&log_lock);
	errno = saved;
}

/* fid for a canonical path under the watched dir, emitting PC_OPEN the
 * first time; -1 if the path is not ours or the table is full. */
static int fid_for_path(const char *canon)
{
	const char *rel;
	unsigned i;
	int fid = -1;
	struct iovec v;

	if (strncmp(canon, watch_dir, watch_len) != 0 || canon[watch_len] != '/')
		return -1;
	rel = canon + watch_len + 1;
	if (strlen(rel) >= PC_PATH_MAX)
		return -1;
	pthread_mutex_lock(&log_lock);
	for (i = 0; i < nfiles; i++)
		if (strcmp(file_names[i], rel) == 0) {
			fid = (int)i;
			break;
		}
	if (fid < 0 && nfiles < PC_MAX_FILES) {
		fid = (int)nfiles++;
		strcpy(file_names[fid], rel);
		if (nosync_name && strcmp(nosync_name, rel) == 0)
			__atomic_store_n(&nosync_fid, fid, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&log_lock);
		v.iov_base = (void *)rel;
		v.iov_len = strlen(rel);
		emit(PC_OPEN, (uint16_t)fid, 0, 0, 0, &v, 1, v.iov_len);
		return fid;
	}
	pthread_mutex_unlock(&log_lock);
	return fid;
}

static void emit_sync(uint16_t fid, uint64_t start)
{
	if ((int)fid == __atomic_load_n(&nosync_fid, __ATOMIC_ACQUIRE))
		return;
	emit(PC_SYNC, fid, 0, 0, start, NULL, 0, 0);
}

/* After a successful open: track fd if its file lies under the dir. */
static void track_open(int fd, int flags)
{
	char link[64], canon[PATH_MAX];
	ssize_t n;
	int fid;
	int saved = errno;

	if (!active || fd < 0)
		return;
	fdt_set(fd, 0);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, canon, sizeof(canon) - 1);
	if (n <= 0)
		goto out;
	canon[n] = '\0';
	fid = fid_for_path(canon);
	if (fid < 0)
		goto out;
	fdt_set(fd, FD_TRACKED | (flags & O_DSYNC ? FD_DSYNC : 0) | (uint32_t)fid);
	if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY)
		emit(PC_TRUNC, (uint16_t)fid, 0, 0, 0, NULL, 0, 0);
out:
	errno = saved;
}

static void log_write(int fd, uint32_t t, bool durable, uint32_t extra,
		      uint64_t off, const struct iovec *v, int n, size_t len)
{
	uint32_t flags = extra;

	if ((t & FD_DSYNC) || durable)
		flags |= PC_F_DURABLE;
	emit(PC_WRITE, (uint16_t)(t & 0xffff), flags, off, 0, v, n, len);
}

/* ---- open / close ---------------------------------------------------- */

static int mode_arg_needed(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	int fd;

	ensure_init();
	if (mode_arg_needed(flags)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	fd = real.open(path, flags, mode);
	track_open(fd, flags);
	return fd;
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	int fd;

	ensure_init();
	if (mode_arg_needed(flags)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	fd = real.openat(dirfd, path, flags, mode);
	track_open(fd, flags);
	return fd;
}

int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));

int __open_2(const char *path, int flags);
int __open_2(const char *path, int flags)
{
	return open(path, flags);
}

int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));

int __openat_2(int dirfd, const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags)
{
	return openat(dirfd, path, flags);
}

int __openat64_2(int dirfd, const char *path, int flags) __attribute__((alias("__openat_2")));

int creat(const char *path, mode_t mode)
{
	return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

int creat64(const char *path, mode_t mode) __attribute__((alias("creat")));

int close(int fd)
{
	ensure_init();
	fdt_set(fd, 0);	/* before the real close: the number may be reused at once */
	return real.close(fd);
}

int dup(int fd)
{
	int r;

	ensure_init();
	r = real.dup(fd);
	if (r >= 0)
		fdt_set(r, fdt_get(fd));
	return r;
}

int dup2(int fd, int to)
{
	int r;

	ensure_init();
	r = real.dup2(fd, to);
	if (r >= 0 && r != fd)
		fdt_set(r, fdt_get(fd));
	return r;
}

int dup3(int fd, int to, int flags)
{
	int r;

	ensure_init();
	r = real.dup3(fd, to, flags);
	if (r >= 0)
		fdt_set(r, fdt_get(fd));
	return r;
}

/* ---- writes ---------------------------------------------------------- */

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	uint32_t t;
	ssize_t r;
	struct iovec v = { (void *)buf, len };

	ensure_init();
	t = fdt_get(fd);
	r = real.pwrite(fd, buf, len, off);
	if (r > 0 && t)
		log_write(fd, t, false, 0, (uint64_t)off, &v, 1, (size_t)r);
	return r;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off) __attribute__((alias("pwrite")));

/* write()/writev() at the file position: the position after the call less
 * what was written is where it went (also for O_APPEND). */
static uint64_t pos_before(int fd, ssize_t written)
{
	int saved = errno;
	off_t pos = lseek(fd, 0, SEEK_CUR);

	errno = saved;
	return (uint64_t)(pos - written);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	uint32_t t;
	ssize_t r;
	struct iovec v = { (void *)buf, len };

	ensure_init();
	t = fdt_get(fd);
	r = real.write(fd, buf, len);
	if (r > 0 && t)
		log_write(fd, t, false, 0, pos_before(fd, r), &v, 1, (size_t)r);
	return r;
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	uint32_t t;
	ssize_t r;

	ensure_init();
	t = fdt_get(fd);
	r = real.writev(fd, iov, n);
	if (r > 0 && t)
		log_write(fd, t, false, 0, pos_before(fd, r), iov, n, (size_t)r);
	return r;
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	uint32_t t;
	ssize_t r;

	ensure_init();
	t = fdt_get(fd);
	r = real.pwritev(fd, iov, n, off);
	if (r > 0 && t)
		log_write(fd, t, false, 0, (uint64_t)off, iov, n, (size_t)r);
	return r;
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off) __attribute__((alias("pwritev")));

ssize_t pwritev2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
	uint32_t t;
	ssize_t r;

	ensure_init();
	t = fdt_get(fd);
	r = real.pwritev2(fd, iov, n, off, flags);
	if (r > 0 && t) {
		uint64_t o = (off == -1 || (flags & RWF_APPEND)) ? pos_before(fd, r)
								 : (uint64_t)off;

		log_write(fd, t, flags & (RWF_DSYNC | RWF_SYNC), 0, o, iov, n, (size_t)r);
	}
	return r;
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int n, off_t off, int flags)
	__attribute__((alias("pwritev2")));

/* ---- syncs ----------------------------------------------------------- */

static int do_sync(int fd, int (*fn)(int))
{
	uint32_t t;
	uint64_t start;
	int r;

	ensure_init();
	t = fdt_get(fd);
	start = seq_now();
	r = fn(fd);
	if (r == 0 && t)
		emit_sync((uint16_t)(t & 0xffff), start);
	return r;
}

int fsync(int fd)
{
	ensure_init();
	return do_sync(fd, real.fsync);
}

int fdatasync(int fd)
{
	ensure_init();
	return do_sync(fd, real.fdatasync);
}

int sync_file_range(int fd, off_t off, off_t len, unsigned int flags)
{
	ensure_init();
	/* deliberately not a sync: see the comment at the top */
	return real.sync_file_range(fd, off, len, flags);
}

int sync_file_range64(int fd, off_t off, off_t len, unsigned int flags)
	__attribute__((alias("sync_file_range")));

void sync(void)
{
	uint64_t start;

	ensure_init();
	start = seq_now();
	real.sync();
	if (active)
		emit(PC_SYNC, PC_FID_ALL, 0, 0, start, NULL, 0, 0);
}

int syncfs(int fd)
{
	uint64_t start;
	int r;

	ensure_init();
	start = seq_now();
	r = real.syncfs(fd);
	if (r == 0 && active)
		emit(PC_SYNC, PC_FID_ALL, 0, 0, start, NULL, 0, 0);
	return r;
}

/* ---- size changes ---------------------------------------------------- */

int ftruncate(int fd, off_t len)
{
	uint32_t t;
	int r;

	ensure_init();
	t = fdt_get(fd);
	r = real.ftruncate(fd, len);
	if (r == 0 && t)
		emit(PC_TRUNC, (uint16_t)(t & 0xffff), 0, 0, (uint64_t)len, NULL, 0, 0);
	return r;
}

int ftruncate64(int fd, off_t len) __attribute__((alias("ftruncate")));

int truncate(const char *path, off_t len)
{
	char canon[PATH_MAX];
	int r, fid;

	ensure_init();
	r = real.truncate(path, len);
	if (r == 0 && active) {
		int saved = errno;

		if (realpath(path, canon) && (fid = fid_for_path(canon)) >= 0)
			emit(PC_TRUNC, (uint16_t)fid, 0, 0, (uint64_t)len, NULL, 0, 0);
		errno = saved;
	}
	return r;
}

int truncate64(const char *path, off_t len) __attribute__((alias("truncate")));

int fallocate(int fd, int mode, off_t off, off_t len)
{
	uint32_t t;
	int r;

	ensure_init();
	t = fdt_get(fd);
	r = real.fallocate(fd, mode, off, len);
	if (r == 0 && t) {
		uint16_t fid = (uint16_t)(t & 0xffff);

		if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
			emit(PC_BLIND, fid, 0, (uint64_t)off, (uint64_t)mode, NULL, 0, 0);
		else if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
			emit(PC_ZERO, fid, 0, (uint64_t)off, (uint64_t)len, NULL, 0, 0);
		if (!(mode & FALLOC_FL_KEEP_SIZE))
			emit(PC_EXTEND, fid, 0, 0, (uint64_t)(off + len), NULL, 0, 0);
	}
	return r;
}

int fallocate64(int fd, int mode, off_t off, off_t len) __attribute__((alias("fallocate")));

int posix_fallocate(int fd, off_t off, off_t len)
{
	uint32_t t;
	int r;

	ensure_init();
	t = fdt_get(fd);
	r = real.posix_fallocate(fd, off, len);
	if (r == 0 && t)
		emit(PC_EXTEND, (uint16_t)(t & 0xffff), 0, 0, (uint64_t)(off + len), NULL, 0, 0);
	return r;
}

int posix_fallocate64(int fd, off_t off, off_t len) __attribute__((alias("posix_fallocate")));

/* A shared writable mapping of a watched file changes it behind our back:
 * say so, so that the test fails loudly instead of trusting a blind log. */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	uint32_t t;
	void *p;

	ensure_init();
	t = fdt_get(fd);
	p = real.mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && t && (prot & PROT_WRITE) && (flags & MAP_SHARED))
		emit(PC_BLIND, (uint16_t)(t & 0xffff), 0, (uint64_t)off, 0, NULL, 0, 0);
	return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

/* ---- aio ------------------------------------------------------------- */

int io_submit(io_context_t ctx, long nr, struct iocb **ios)
{
	uint64_t start;
	int r, i;

	ensure_init();
	start = seq_now();
	r = real.io_submit(ctx, nr, ios);
	if (!active)
		return r;
	for (i = 0; i < r; i++) {
		struct iocb *cb = ios[i];
		int op = cb->aio_lio_opcode;

		if ((op == IO_CMD_FSYNC || op == IO_CMD_FDSYNC) && fdt_get(cb->aio_fildes)) {
			unsigned s;

			pthread_mutex_lock(&log_lock);
			for (s = 0; s < AIO_SYNC_SLOTS; s++)
				if (!aio_syncs[s].cb) {
					aio_syncs[s].cb = cb;
					aio_syncs[s].start = start;
					break;
				}
			pthread_mutex_unlock(&log_lock);
			if (s == AIO_SYNC_SLOTS)
				emit(PC_BLIND, 0, 0, 0, 1, NULL, 0, 0);
		}
	}
	return r;
}

static void aio_completed(struct io_event *evs, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct iocb *cb = evs[i].obj;
		long res = (long)evs[i].res;
		uint32_t t = fdt_get(cb->aio_fildes);
		int op = cb->aio_lio_opcode;
		bool dsync = cb->aio_rw_flags & (RWF_DSYNC | RWF_SYNC);

		if (!t)
			continue;
		if (op == IO_CMD_PWRITE && res > 0) {
			struct iovec v = { cb->u.c.buf, cb->u.c.nbytes };

			log_write(cb->aio_fildes, t, dsync, PC_F_AIO,
				  (uint64_t)cb->u.c.offset, &v, 1, (size_t)res);
		} else if (op == IO_CMD_PWRITEV && res > 0) {
			log_write(cb->aio_fildes, t, dsync, PC_F_AIO,
				  (uint64_t)cb->u.v.offset, cb->u.v.vec, (int)cb->u.v.nr,
				  (size_t)res);
		} else if (op == IO_CMD_FSYNC || op == IO_CMD_FDSYNC) {
			uint64_t start = UINT64_MAX;
			unsigned s;

			pthread_mutex_lock(&log_lock);
			for (s = 0; s < AIO_SYNC_SLOTS; s++)
				if (aio_syncs[s].cb == cb) {
					aio_syncs[s].cb = NULL;
					start = aio_syncs[s].start;
					break;
				}
			pthread_mutex_unlock(&log_lock);
			if (res == 0 && start != UINT64_MAX)
				emit_sync((uint16_t)(t & 0xffff), start);
		}
	}
}

int io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *evs,
		 struct timespec *timeout)
{
	int r;

	ensure_init();
	r = real.io_getevents(ctx, min_nr, nr, evs, timeout);
	if (r > 0 && active)
		aio_completed(evs, r);
	return r;
}

int io_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *evs,
		  struct timespec *timeout, sigset_t *sigmask)
{
	int r;

	ensure_init();
	r = real.io_pgetevents(ctx, min_nr, nr, evs, timeout, sigmask);
	if (r > 0 && active)
		aio_completed(evs, r);
	return r;
}
