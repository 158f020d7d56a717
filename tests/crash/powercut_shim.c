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
 * shim only passes calls through.  ATOLL_PC_NOSYNC=<list> drops the syncs
 * of the files it names from the log and logs their O_DSYNC/RWF_DSYNC
 * writes as plain ones: the harness's own test, a stand-in for a program
 * that never syncs those files.  The list is comma-separated paths relative
 * to the dir; one ending in a star is a prefix ("raft/" and a star: every
 * file in raft/; a lone star: every file and folder; "." the dir itself).
 *
 * Names: creating a file (O_CREAT on a path that did not exist), rename()
 * and unlink() of a path under the dir are logged, and so are syncs of a
 * folder's fd (fsync of a directory), so that the rebuild can tell which
 * name changes a power cut keeps (pc_rebuild_tree).
 *
 * Aio: through libaio (io_submit, io_getevents, io_pgetevents) and through
 * syscall(__NR_io_submit, ...) and its siblings, as libraft and libuv issue
 * them; every other syscall() number passes through untouched.  A write on
 * an O_DSYNC fd or with RWF_DSYNC/RWF_SYNC is logged as durable when its
 * completion is handed back (io_getevents).
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
#include <sys/syscall.h>
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
	long (*syscall)(long, ...);
	int (*rename)(const char *, const char *);
	int (*renameat)(int, const char *, int, const char *);
	int (*renameat2)(int, const char *, int, const char *, unsigned int);
	int (*unlink)(const char *);
	int (*unlinkat)(int, const char *, int);
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
static bool table_full;		/* PC_BLIND of PC_FID_ALL logged once */
/* ATOLL_PC_NOSYNC: the files whose syncs are not recorded (see the top);
 * nosync_fid[fid] is set when the fid's path matches the list */
static char nosync_list[4096];
static bool nosync_fid[PC_MAX_FILES];

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
	real.syscall = sym("syscall");
	real.rename = sym("rename");
	real.renameat = sym("renameat");
	real.renameat2 = sym("renameat2");
	real.unlink = sym("unlink");
	real.unlinkat = sym("unlinkat");
}

/* Starts recording.  Runs from our constructor only, never from the first
 * wrapped call: a sanitizer runtime makes such calls (mmap, open) while it
 * initialises, before realpath() and friends may be used. */
static void shim_activate(void)
{
	const char *dir, *logp, *ns;

	dir = getenv("ATOLL_PC_DIR");
	logp = getenv("ATOLL_PC_LOG");
	ns = getenv("ATOLL_PC_NOSYNC");
	if (ns)
		snprintf(nosync_list, sizeof(nosync_list), "%s", ns);
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

/* Does rel match an entry of ATOLL_PC_NOSYNC? */
static bool nosync_match(const char *rel)
{
	const char *p = nosync_list;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n > 0 && p[n - 1] == '*' ? strncmp(rel, p, n - 1) == 0
					      : strlen(rel) == n && strncmp(rel, p, n) == 0)
			return true;
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

/* fid for a canonical path under the watched dir (or the dir itself, ".")
 * emitting PC_OPEN the first time; -1 if the path is not ours or the table
 * is full.  dir: the path is a folder (recorded on PC_OPEN). */
static int fid_for_path_kind(const char *canon, bool dir)
{
	const char *rel;
	unsigned i;
	int fid = -1;
	struct iovec v;
	bool full;

	if (strncmp(canon, watch_dir, watch_len) != 0)
		return -1;
	if (canon[watch_len] == '\0')
		rel = ".";
	else if (canon[watch_len] == '/')
		rel = canon + watch_len + 1;
	else
		return -1;
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
		if (nosync_list[0] && nosync_match(rel))
			__atomic_store_n(&nosync_fid[fid], true, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&log_lock);
		v.iov_base = (void *)rel;
		v.iov_len = strlen(rel);
		emit(PC_OPEN, (uint16_t)fid, dir ? PC_F_DIR : 0, 0, 0, &v, 1, v.iov_len);
		return fid;
	}
	full = fid < 0 && !table_full;
	if (full)
		table_full = true;
	pthread_mutex_unlock(&log_lock);
	/* a file we cannot follow: the rebuild must not trust this log */
	if (full)
		emit(PC_BLIND, PC_FID_ALL, 0, 0, 3, NULL, 0, 0);
	return fid;
}

static int fid_for_path(const char *canon)
{
	return fid_for_path_kind(canon, false);
}

static bool is_nosync(uint16_t fid)
{
	return fid < PC_MAX_FILES && __atomic_load_n(&nosync_fid[fid], __ATOMIC_ACQUIRE);
}

static void emit_sync(uint16_t fid, uint64_t start)
{
	if (is_nosync(fid))
		return;
	emit(PC_SYNC, fid, 0, 0, start, NULL, 0, 0);
}

/* Before an open with O_CREAT: will it make a new file?  (A race with
 * another thread making the same path is the program's own bug.) */
static bool will_create(int dirfd, const char *path, int flags)
{
	int saved = errno;
	bool r;

	if (!active || !(flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		return false;
	if (flags & O_EXCL)
		return true;
	r = faccessat(dirfd, path, F_OK, 0) < 0 && errno == ENOENT;
	errno = saved;
	return r;
}

/* After a successful open: track fd if its file lies under the dir. */
static void track_open(int fd, int flags, bool created)
{
	char link[64], canon[PATH_MAX];
	struct stat sb;
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
	fid = fid_for_path_kind(canon, fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode));
	if (fid < 0)
		goto out;
	fdt_set(fd, FD_TRACKED | (flags & O_DSYNC ? FD_DSYNC : 0) | (uint32_t)fid);
	if (created)
		emit(PC_CREATE, (uint16_t)fid, 0, 0, 0, NULL, 0, 0);
	else if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY)
		emit(PC_TRUNC, (uint16_t)fid, 0, 0, 0, NULL, 0, 0);
out:
	errno = saved;
}

static void log_write(int fd, uint32_t t, bool durable, uint32_t extra,
		      uint64_t off, const struct iovec *v, int n, size_t len)
{
	uint32_t flags = extra;

	if (off == UINT64_MAX)
		return;
	if (((t & FD_DSYNC) || durable) && !is_nosync((uint16_t)(t & 0xffff)))
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
	bool created;
	int fd;

	ensure_init();
	if (mode_arg_needed(flags)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	created = will_create(AT_FDCWD, path, flags);
	fd = real.open(path, flags, mode);
	track_open(fd, flags, created);
	return fd;
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));

int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	bool created;
	int fd;

	ensure_init();
	if (mode_arg_needed(flags)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	created = will_create(dirfd, path, flags);
	fd = real.openat(dirfd, path, flags, mode);
	track_open(fd, flags, created);
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
 * what was written is where it went (also for O_APPEND).  UINT64_MAX: the
 * fd has no position, so it is no file of ours (its number was reused
 * behind our back): it is forgotten. */
static uint64_t pos_before(int fd, ssize_t written)
{
	int saved = errno;
	off_t pos = lseek(fd, 0, SEEK_CUR);

	errno = saved;
	if (pos < written) {
		fdt_set(fd, 0);
		return UINT64_MAX;
	}
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

/* ---- names: rename, unlink ----------------------------------------- */

/* The canonical form of path (relative to dirfd) without resolving its
 * last component, which may not exist (any more); false if the folder
 * part cannot be resolved. */
static bool canon_at(int dirfd, const char *path, char *out)
{
	char full[PATH_MAX], dirpart[PATH_MAX], dircanon[PATH_MAX];
	const char *base;
	char *slash;
	int n;

	if (path[0] == '/' || dirfd == AT_FDCWD) {
		n = snprintf(full, sizeof(full), "%s", path);
	} else {
		char link[64], d[PATH_MAX];
		ssize_t l;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
		l = readlink(link, d, sizeof(d) - 1);
		if (l <= 0)
			return false;
		d[l] = '\0';
		n = snprintf(full, sizeof(full), "%s/%s", d, path);
	}
	if (n < 0 || (size_t)n >= sizeof(full))
		return false;
	slash = strrchr(full, '/');
	if (!slash) {
		snprintf(dirpart, sizeof(dirpart), ".");
		base = full;
	} else {
		*slash = '\0';
		snprintf(dirpart, sizeof(dirpart), "%s", slash == full ? "/" : full);
		base = slash + 1;
	}
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return false;
	if (!realpath(dirpart, dircanon))
		return false;
	n = snprintf(out, PATH_MAX, "%s/%s", strcmp(dircanon, "/") ? dircanon : "", base);
	return n > 0 && n < PATH_MAX;
}

/* Every fd on fid `from` now follows fid `to` (to < 0: not tracked any
 * more); fds on `to` itself lose it (it was replaced). */
static void fdt_retarget(int from, int to)
{
	int fd;

	for (fd = 0; fd < FD_MAX; fd++) {
		uint32_t v = __atomic_load_n(&fdtab[fd], __ATOMIC_ACQUIRE);

		if (!v)
			continue;
		if ((int)(v & 0xffff) == from)
			__atomic_store_n(&fdtab[fd],
					 to < 0 ? 0 : (v & ~0xffffu) | (uint32_t)to,
					 __ATOMIC_RELEASE);
		else if (to >= 0 && (int)(v & 0xffff) == to)
			__atomic_store_n(&fdtab[fd], 0, __ATOMIC_RELEASE);
	}
}

/* Where old and new lie before the call; logged after it succeeded. */
struct ren {
	bool ok_old, ok_new;
	char old[PATH_MAX], new[PATH_MAX];
};

static void ren_before(struct ren *rn, int od, const char *op, int nd, const char *np)
{
	int saved = errno;

	rn->ok_old = active && canon_at(od, op, rn->old);
	rn->ok_new = active && canon_at(nd, np, rn->new);
	errno = saved;
}

static void ren_after(struct ren *rn)
{
	int saved = errno;
	int from = rn->ok_old ? fid_for_path(rn->old) : -1;
	int to = rn->ok_new ? fid_for_path(rn->new) : -1;

	if (from >= 0 && to >= 0) {
		fdt_retarget(from, to);
		emit(PC_RENAME, (uint16_t)from, 0, 0, (uint64_t)to, NULL, 0, 0);
	} else if (to >= 0) {
		/* moved in from outside: a new file as far as the log goes
		 * (its content is not followed) */
		emit(PC_BLIND, (uint16_t)to, 0, 0, 0, NULL, 0, 0);
	} else if (from >= 0) {
		fdt_retarget(from, -1);
		emit(PC_UNLINK, (uint16_t)from, 0, 0, 0, NULL, 0, 0);
	}
	errno = saved;
}

int renameat2(int od, const char *op, int nd, const char *np, unsigned int flags)
{
	struct ren rn;
	int r;

	ensure_init();
	ren_before(&rn, od, op, nd, np);
	r = real.renameat2(od, op, nd, np, flags);
	if (r == 0 && active) {
		if (flags & RENAME_EXCHANGE)
			emit(PC_BLIND, 0, 0, 0, 2, NULL, 0, 0);
		else
			ren_after(&rn);
	}
	return r;
}

int renameat(int od, const char *op, int nd, const char *np)
{
	struct ren rn;
	int r;

	ensure_init();
	ren_before(&rn, od, op, nd, np);
	r = real.renameat(od, op, nd, np);
	if (r == 0 && active)
		ren_after(&rn);
	return r;
}

int rename(const char *op, const char *np)
{
	struct ren rn;
	int r;

	ensure_init();
	ren_before(&rn, AT_FDCWD, op, AT_FDCWD, np);
	r = real.rename(op, np);
	if (r == 0 && active)
		ren_after(&rn);
	return r;
}

static void unlinked(bool ok, const char *canon)
{
	int saved = errno;
	int fid = ok ? fid_for_path(canon) : -1;

	if (fid >= 0) {
		fdt_retarget(fid, -1);
		emit(PC_UNLINK, (uint16_t)fid, 0, 0, 0, NULL, 0, 0);
	}
	errno = saved;
}

int unlinkat(int dirfd, const char *path, int flags)
{
	char canon[PATH_MAX];
	bool ok;
	int r;

	ensure_init();
	ok = active && canon_at(dirfd, path, canon);
	r = real.unlinkat(dirfd, path, flags);
	if (r == 0 && active && !(flags & AT_REMOVEDIR))
		unlinked(ok, canon);
	return r;
}

int unlink(const char *path)
{
	char canon[PATH_MAX];
	bool ok;
	int r;

	ensure_init();
	ok = active && canon_at(AT_FDCWD, path, canon);
	r = real.unlink(path);
	if (r == 0 && active)
		unlinked(ok, canon);
	return r;
}

/* ---- aio ------------------------------------------------------------- */

/* The kernel's struct iocb and struct io_event have libaio's layout, so
 * both paths (libaio and raw syscalls) share these helpers.  libaio's own
 * functions are not called: they may go through syscall() themselves. */

static void aio_submitted(struct iocb **ios, int r, uint64_t start)
{
	int i;

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

/* libaio's calls return -errno; the raw syscalls -1 with errno set */
static long sys_io_submit(long ctx, long nr, struct iocb **ios)
{
	uint64_t start = seq_now();
	long r = real.syscall(SYS_io_submit, ctx, nr, ios);

	if (r > 0 && active)
		aio_submitted(ios, (int)r, start);
	return r;
}

static long sys_io_getevents(long ctx, long min_nr, long nr, struct io_event *evs,
			     struct timespec *timeout)
{
	long r = real.syscall(SYS_io_getevents, ctx, min_nr, nr, evs, timeout);

	if (r > 0 && active)
		aio_completed(evs, (int)r);
	return r;
}

static long sys_io_pgetevents(long ctx, long min_nr, long nr, struct io_event *evs,
			      struct timespec *timeout, void *usig)
{
	long r = real.syscall(SYS_io_pgetevents, ctx, min_nr, nr, evs, timeout, usig);

	if (r > 0 && active)
		aio_completed(evs, (int)r);
	return r;
}

int io_submit(io_context_t ctx, long nr, struct iocb **ios)
{
	long r;

	ensure_init();
	r = sys_io_submit((long)ctx, nr, ios);
	return r < 0 ? -errno : (int)r;
}

int io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *evs,
		 struct timespec *timeout)
{
	long r;

	ensure_init();
	r = sys_io_getevents((long)ctx, min_nr, nr, evs, timeout);
	return r < 0 ? -errno : (int)r;
}

int io_pgetevents(io_context_t ctx, long min_nr, long nr, struct io_event *evs,
		  struct timespec *timeout, sigset_t *sigmask)
{
	struct {
		const sigset_t *ss;
		size_t len;
	} usig = { sigmask, 8 };	/* the kernel's sigset is 64 bits */
	long r;

	ensure_init();
	r = sys_io_pgetevents((long)ctx, min_nr, nr, evs, timeout, sigmask ? &usig : NULL);
	return r < 0 ? -errno : (int)r;
}

/* A raw write syscall of fd: logged like the libc call of the same name. */
static long sys_write_at(long nr, long fd, const struct iovec *iov, int n, long off, int flags,
			 long r)
{
	uint32_t t = fdt_get((int)fd);

	if (r > 0 && t)
		log_write((int)fd, t, nr == SYS_pwritev2 && (flags & (RWF_DSYNC | RWF_SYNC)), 0,
			  off == -1 ? pos_before((int)fd, r) : (uint64_t)off, iov, n, (size_t)r);
	return r;
}

/* syscall(): the aio numbers and the raw writes and syncs (libuv issues
 * pwritev as syscall(__NR_pwritev)) are followed; every other number is
 * passed through untouched (six register-sized arguments, as the ABI
 * passes them whatever the call). */
long syscall(long nr, ...)
{
	struct iovec v;
	uint64_t start;
	long a[6], r;
	va_list ap;
	int i;

	ensure_init();
	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	switch (nr) {
	case SYS_io_submit:
		return sys_io_submit(a[0], a[1], (struct iocb **)a[2]);
	case SYS_io_getevents:
		return sys_io_getevents(a[0], a[1], a[2], (struct io_event *)a[3],
					(struct timespec *)a[4]);
	case SYS_io_pgetevents:
		return sys_io_pgetevents(a[0], a[1], a[2], (struct io_event *)a[3],
					 (struct timespec *)a[4], (void *)a[5]);
	case SYS_pwrite64:
		r = real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		v.iov_base = (void *)a[1];
		v.iov_len = (size_t)a[2];
		return sys_write_at(nr, a[0], &v, 1, a[3], 0, r);
	case SYS_pwritev:
	case SYS_pwritev2:
		/* x86-64 and the other 64-bit ABIs: the whole offset is a[3] */
		r = real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		return sys_write_at(nr, a[0], (const struct iovec *)a[1], (int)a[2], a[3],
				    (int)a[5], r);
	case SYS_close:		/* libuv closes this way */
		fdt_set((int)a[0], 0);
		return real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	case SYS_close_range:
		for (i = (int)a[0]; i >= 0 && i < FD_MAX && (unsigned long)i <= (unsigned long)a[1]; i++)
			fdt_set(i, 0);
		return real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	case SYS_fsync:
	case SYS_fdatasync:
		start = seq_now();
		r = real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		if (r == 0 && fdt_get((int)a[0]))
			emit_sync((uint16_t)(fdt_get((int)a[0]) & 0xffff), start);
		return r;
	default:
		return real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	}
}
