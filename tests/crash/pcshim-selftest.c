/*
 * pcshim-selftest.c - checks the power-cut shim and the disk rebuild on
 * plain files, without the store: a child writes through every call the
 * shim wraps (write, writev, pwrite, pwritev, pwritev2, aio with O_DIRECT,
 * O_DSYNC fds, ftruncate, fallocate, four threads at once), snapshotting
 * what it has synced; the parent rebuilds the disk from the log with every
 * write kept (must equal the files as left), with every unsynced write
 * lost (must equal the snapshots), at random, and with no unsynced write
 * kept whole; then it cuts the log short and checks that the reader stops
 * cleanly at the damaged record.  Then the calls libraft and libuv make:
 * aio through raw syscall(__NR_io_submit) with and without RWF_DSYNC,
 * pwritev and fdatasync as raw syscalls, a file created, synced and renamed
 * into place with a folder sync, one created with no folder sync, one
 * unlinked; the whole folder rebuilt by pc_rebuild_tree, with every write
 * and name change kept (equal to the folder as left) and with none that
 * was not synced (the synced state).
 *
 * usage: pcshim-selftest SHIM.so            (parent)
 *        pcshim-selftest --child WDIR SDIR  (run by the parent, under the shim)
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pcdisk.h"

#define FAIL(...) do { \
	fprintf(stderr, "pcshim-selftest: " __VA_ARGS__); \
	fputc('\n', stderr); \
	goto out; \
} while (0)

#define CHECK_SYS(x) do { \
	if ((x) < 0) { \
		fprintf(stderr, "pcshim-selftest child: %s failed at line %d: %s\n", \
			#x, __LINE__, strerror(errno)); \
		exit(2); \
	} \
} while (0)

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (i % 8 == 0)
			seed = pc_rand(&seed) | 1;
		p[i] = (unsigned char)(seed >> (8 * (i % 8)));
	}
}

static void snap(const char *wdir, const char *sdir, const char *name)
{
	char a[4096], b[4096];

	snprintf(a, sizeof(a), "%s/%s", wdir, name);
	snprintf(b, sizeof(b), "%s/%s.snap", sdir, name);
	if (pc_copy_file(a, b) < 0) {
		fprintf(stderr, "pcshim-selftest child: snapshot of %s failed\n", a);
		exit(2);
	}
}

struct thr {
	int fd;
	int idx;
};

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	unsigned char buf[3000];
	int i;

	for (i = 0; i < 200; i++) {
		fill(buf, sizeof(buf), (uint64_t)t->idx * 1000 + (uint64_t)i);
		if (pwrite(t->fd, buf, sizeof(buf), (off_t)(t->idx * 1000000 + i * 3000)) != sizeof(buf))
			abort();
	}
	return NULL;
}

/* One aio write through the raw syscalls, as libraft issues it. */
static void raw_aio_write(unsigned long ctx, int fd, void *buf, size_t len, long long off,
			  int rw_flags)
{
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;

	io_prep_pwrite(&cb, fd, buf, len, off);
	cb.aio_rw_flags = rw_flags;
	if (syscall(SYS_io_submit, ctx, 1L, cbs) != 1 ||
	    syscall(SYS_io_getevents, ctx, 1L, 1L, &ev, NULL) != 1 || (long)ev.res != (long)len) {
		fprintf(stderr, "pcshim-selftest child: raw aio write failed: %s\n", strerror(errno));
		exit(2);
	}
}

/* The names and raw syscalls of libraft and libuv: files e, n/f, n/g. */
static void child_names(const char *wdir, const char *sdir, unsigned char *abuf)
{
	char path[4096], path2[4096];
	unsigned long ctx = 0;
	struct iovec v;
	int e, f, dfd;

	/* e: raw aio, dsync and not; raw pwritev and fdatasync */
	snprintf(path, sizeof(path), "%s/e", wdir);
	CHECK_SYS(e = open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT, 0644));
	CHECK_SYS(syscall(SYS_io_setup, 8L, &ctx));
	fill(abuf, 4096, 20);
	raw_aio_write(ctx, e, abuf, 4096, 4096, RWF_DSYNC);	/* durable */
	fill(abuf, 4096, 21);
	v = (struct iovec){ abuf, 4096 };
	CHECK_SYS(syscall(SYS_pwritev, (long)e, &v, 1L, 8192L, 0L));
	CHECK_SYS(syscall(SYS_fdatasync, (long)e));
	snap(wdir, sdir, "e");
	fill(abuf, 4096, 22);
	raw_aio_write(ctx, e, abuf, 4096, 0, 0);		/* not durable */
	raw_aio_write(ctx, e, abuf, 4096, 12288, 0);		/* not durable */
	CHECK_SYS(syscall(SYS_io_destroy, ctx));
	CHECK_SYS(syscall(SYS_close, (long)e));

	/* n/f: written to n/tmp, synced, renamed into place, folder synced;
	 * n/g: created after the folder's last sync; n/h: created, synced
	 * with its folder, then unlinked with no folder sync */
	snprintf(path, sizeof(path), "%s/n", wdir);
	CHECK_SYS(mkdir(path, 0755));
	CHECK_SYS(dfd = open(path, O_RDONLY | O_DIRECTORY));
	snprintf(path, sizeof(path), "%s/n/h", wdir);
	CHECK_SYS(f = open(path, O_WRONLY | O_CREAT, 0644));
	CHECK_SYS(close(f));
	snprintf(path, sizeof(path), "%s/n/tmp", wdir);
	CHECK_SYS(f = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644));
	fill(abuf, 5000, 23);
	CHECK_SYS(pwrite(f, abuf, 5000, 0));
	CHECK_SYS(fsync(f));
	CHECK_SYS(close(f));
	snprintf(path2, sizeof(path2), "%s/n/f", wdir);
	CHECK_SYS(rename(path, path2));
	CHECK_SYS(fsync(dfd));
	snprintf(path, sizeof(path), "%s/n/h", wdir);
	CHECK_SYS(unlink(path));
	snprintf(path, sizeof(path), "%s/n/g", wdir);
	CHECK_SYS(f = open(path, O_WRONLY | O_CREAT, 0644));
	CHECK_SYS(write(f, abuf, 100));
	CHECK_SYS(fsync(f));		/* its content, not its name */
	CHECK_SYS(close(f));
	CHECK_SYS(close(dfd));
	/* the top folder synced: a, b, c, d, e, other are there for good */
	CHECK_SYS(dfd = open(wdir, O_RDONLY | O_DIRECTORY));
	CHECK_SYS(fsync(dfd));
	CHECK_SYS(close(dfd));
}

static int child(const char *wdir, const char *sdir)
{
	char path[4096];
	unsigned char *buf, *abuf;
	struct iovec iov[3];
	io_context_t ctx = 0;
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;
	pthread_t th[4];
	struct thr ta[4];
	int a, b, c, d, i;

	buf = malloc(1 << 20);
	if (!buf || posix_memalign((void **)&abuf, 4096, 1 << 20))
		return 2;

	/* file a: plain fd, every kind of write, one fsync in the middle */
	snprintf(path, sizeof(path), "%s/a", wdir);
	CHECK_SYS(a = open(path, O_RDWR | O_CREAT, 0644));
	fill(buf, 10000, 1);
	CHECK_SYS(pwrite(a, buf, 10000, 123));
	fill(buf, 5000, 2);
	CHECK_SYS(lseek(a, 7000, SEEK_SET));
	CHECK_SYS(write(a, buf, 5000));
	fill(buf, 3 * 4096, 3);
	iov[0] = (struct iovec){ buf, 100 };
	iov[1] = (struct iovec){ buf + 100, 4096 };
	iov[2] = (struct iovec){ buf + 4196, 777 };
	CHECK_SYS(writev(a, iov, 3));
	CHECK_SYS(pwritev(a, iov, 3, 50000));
	CHECK_SYS(ftruncate(a, 40000));
	CHECK_SYS(fallocate(a, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192));
	CHECK_SYS(fsync(a));
	snap(wdir, sdir, "a");
	fill(buf, 20000, 4);
	CHECK_SYS(pwrite(a, buf, 20000, 30000));
	CHECK_SYS(pwritev2(a, iov, 2, 1000, 0));
	CHECK_SYS(ftruncate(a, 45000));
	CHECK_SYS(fallocate(a, 0, 100000, 5000));	/* grows the file */

	/* file b: O_DSYNC, durable at once; opened through openat + creat */
	snprintf(path, sizeof(path), "%s/b", wdir);
	CHECK_SYS(b = creat(path, 0644));
	CHECK_SYS(close(b));
	CHECK_SYS(b = openat(AT_FDCWD, path, O_WRONLY | O_DSYNC));
	fill(buf, 9000, 5);
	CHECK_SYS(pwrite(b, buf, 9000, 4095));
	CHECK_SYS(pwritev2(b, iov, 3, 20000, RWF_DSYNC));

	/* file c: O_DIRECT with aio, fdatasync in the middle; pwritev aio too */
	snprintf(path, sizeof(path), "%s/c", wdir);
	CHECK_SYS(c = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644));
	CHECK_SYS(io_setup(8, &ctx));
	fill(abuf, 1 << 20, 6);
	io_prep_pwrite(&cb, c, abuf, 1 << 20, 4096);
	if (io_submit(ctx, 1, cbs) != 1 || io_getevents(ctx, 1, 1, &ev, NULL) != 1 ||
	    (long)ev.res != 1 << 20)
		return 2;
	CHECK_SYS(fdatasync(c));
	snap(wdir, sdir, "c");
	fill(abuf, 8192, 7);
	iov[0] = (struct iovec){ abuf, 4096 };
	iov[1] = (struct iovec){ abuf + 4096, 4096 };
	io_prep_pwritev(&cb, c, iov, 2, 8192);
	if (io_submit(ctx, 1, cbs) != 1 || io_getevents(ctx, 1, 1, &ev, NULL) != 1 ||
	    (long)ev.res != 8192)
		return 2;
	io_destroy(ctx);

	/* file d: four threads at once, synced at the end */
	snprintf(path, sizeof(path), "%s/d", wdir);
	CHECK_SYS(d = open(path, O_RDWR | O_CREAT, 0644));
	for (i = 0; i < 4; i++) {
		ta[i] = (struct thr){ d, i };
		pthread_create(&th[i], NULL, thr_main, &ta[i]);
	}
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_SYS(fdatasync(d));
	snap(wdir, sdir, "d");

	/* a file we never rebuild, and the fd reused after close */
	CHECK_SYS(close(d));
	snprintf(path, sizeof(path), "%s/other", wdir);
	CHECK_SYS(d = open(path, O_RDWR | O_CREAT, 0644));
	CHECK_SYS(pwrite(d, buf, 100, 0));
	close(a);
	close(b);
	close(c);
	close(d);
	child_names(wdir, sdir, abuf);
	free(buf);
	free(abuf);
	return 0;
}

static int same_file(const char *x, const char *y)
{
	FILE *f = fopen(x, "rb"), *g = fopen(y, "rb");
	int r = 0, cf, cg;
	long pos = 0;

	if (!f || !g)
		goto out;
	do {
		cf = fgetc(f);
		cg = fgetc(g);
		if (cf != cg) {
			fprintf(stderr, "pcshim-selftest: '%s' and '%s' differ at byte %ld\n",
				x, y, pos);
			goto out;
		}
		pos++;
	} while (cf != EOF);
	r = 1;
out:
	if (f)
		fclose(f);
	if (g)
		fclose(g);
	return r;
}

static const char *const rebuilt[] = { "a", "b", "c", "d", NULL };

/* Rebuilds into dir from empty files with the given fate. */
static int rebuild(const struct pc_log *lg, const char *dir, enum pc_fate fate,
		   struct pc_stats *st)
{
	char err[512];
	uint64_t rng = 42;

	if (pc_mkdir(dir) < 0)
		return -1;
	if (pc_reconstruct(lg, lg->n, dir, rebuilt, fate, &rng, st, err, sizeof(err)) < 0) {
		fprintf(stderr, "pcshim-selftest: %s\n", err);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char root[] = "/tmp/atoll-pcshim-XXXXXX";
	char wdir[4200], sdir[4200], logp[4200], d1[4200], d2[4200], d3[4200], d4[4200];
	char x[4300], y[4300];
	struct pc_log lg = { 0 };
	struct pc_stats st;
	const char *shim;
	pid_t pid;
	int status, rc = 1, i;

	if (argc == 4 && strcmp(argv[1], "--child") == 0)
		return child(argv[2], argv[3]);
	if (argc != 2) {
		fprintf(stderr, "usage: pcshim-selftest SHIM.so\n");
		return 2;
	}
	shim = argv[1];
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(wdir, sizeof(wdir), "%s/w", root);
	snprintf(sdir, sizeof(sdir), "%s/s", root);
	snprintf(logp, sizeof(logp), "%s/log", root);
	snprintf(d1, sizeof(d1), "%s/keep", root);
	snprintf(d2, sizeof(d2), "%s/lose", root);
	snprintf(d3, sizeof(d3), "%s/random", root);
	snprintf(d4, sizeof(d4), "%s/notwhole", root);
	if (pc_mkdir(wdir) < 0 || pc_mkdir(sdir) < 0)
		FAIL("cannot make directories under %s", root);

	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		char *const args[] = { "/proc/self/exe", "--child", wdir, sdir, NULL };

		setenv("LD_PRELOAD", shim, 1);
		setenv("ATOLL_PC_DIR", wdir, 1);
		setenv("ATOLL_PC_LOG", logp, 1);
		/* an ASan build wants its runtime first; the shim goes first here */
		setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 0);
		execv("/proc/self/exe", args);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		FAIL("child under the shim failed (status 0x%x)", status);

	if (pc_log_load(logp, &lg) < 0 || lg.n == 0)
		FAIL("empty or unreadable log '%s'", logp);
	if (lg.tail_bytes)
		FAIL("log of a clean exit has %zu stray bytes at its end", lg.tail_bytes);

	/* every write kept: the rebuilt files equal what the child left */
	if (rebuild(&lg, d1, PC_FATE_KEEP_ALL, &st) < 0)
		goto out;
	if (st.ignored == 0)
		FAIL("the write to 'other' was not logged (or not ignored)");
	for (i = 0; rebuilt[i]; i++) {
		snprintf(x, sizeof(x), "%s/%s", wdir, rebuilt[i]);
		snprintf(y, sizeof(y), "%s/%s", d1, rebuilt[i]);
		if (!same_file(x, y))
			FAIL("keep-all rebuild of '%s' differs from the real file", rebuilt[i]);
	}
	/* every unsynced write lost: a, c, d equal their snapshots, b (O_DSYNC) is whole */
	if (rebuild(&lg, d2, PC_FATE_LOSE_ALL, &st) < 0)
		goto out;
	for (i = 0; rebuilt[i]; i++) {
		if (strcmp(rebuilt[i], "b") == 0)
			snprintf(x, sizeof(x), "%s/b", wdir);
		else
			snprintf(x, sizeof(x), "%s/%s.snap", sdir, rebuilt[i]);
		snprintf(y, sizeof(y), "%s/%s", d2, rebuilt[i]);
		if (!same_file(x, y))
			FAIL("lose-all rebuild of '%s' differs from its synced state", rebuilt[i]);
	}
	if (st.lost == 0 || st.durable == 0)
		FAIL("lose-all rebuild saw %llu lost and %llu durable records",
		     (unsigned long long)st.lost, (unsigned long long)st.durable);
	/* random fates run and account for every unsynced record */
	if (rebuild(&lg, d3, PC_FATE_RANDOM, &st) < 0)
		goto out;
	if (st.lost + st.applied + st.torn == 0)
		FAIL("random rebuild made no choice");
	/* lost or torn: no unsynced write reaches the disk whole */
	if (rebuild(&lg, d4, PC_FATE_NOT_WHOLE, &st) < 0)
		goto out;
	if (st.applied || st.lost + st.torn == 0)
		FAIL("not-whole rebuild applied %llu unsynced writes whole, %llu lost or torn",
		     (unsigned long long)st.applied, (unsigned long long)(st.lost + st.torn));

	/* the whole folder, names included (pc_rebuild_tree) from an empty base */
	{
		static const char *const all[] = { "a", "b", "c", "d", "other", "e", "n/f", "n/g",
						   NULL };
		static const char *const gone[] = { "n/tmp", "n/h", NULL };
		char tb[4200], t1[4200], t2[4200], err[512];
		uint64_t rng = 7;
		struct stat sb;

		snprintf(tb, sizeof(tb), "%s/tbase", root);
		snprintf(t1, sizeof(t1), "%s/tkeep", root);
		snprintf(t2, sizeof(t2), "%s/tlose", root);
		if (pc_mkdir(tb) < 0)
			FAIL("cannot make %s", tb);
		if (pc_rebuild_tree(&lg, lg.n, tb, t1, NULL, PC_FATE_KEEP_ALL, &rng, &st, err,
				    sizeof(err)) < 0)
			FAIL("keep-all tree rebuild: %s", err);
		for (i = 0; all[i]; i++) {
			snprintf(x, sizeof(x), "%s/%s", wdir, all[i]);
			snprintf(y, sizeof(y), "%s/%s", t1, all[i]);
			if (!same_file(x, y))
				FAIL("keep-all tree rebuild of '%s' differs from the real file", all[i]);
		}
		for (i = 0; gone[i]; i++) {
			snprintf(y, sizeof(y), "%s/%s", t1, gone[i]);
			if (stat(y, &sb) == 0)
				FAIL("keep-all tree rebuild has '%s', renamed or unlinked", gone[i]);
		}
		if (pc_rebuild_tree(&lg, lg.n, tb, t2, NULL, PC_FATE_LOSE_ALL, &rng, &st, err,
				    sizeof(err)) < 0)
			FAIL("lose-all tree rebuild: %s", err);
		/* e: the raw dsync aio write and the synced raw pwritev only */
		snprintf(x, sizeof(x), "%s/e.snap", sdir);
		snprintf(y, sizeof(y), "%s/e", t2);
		if (!same_file(x, y))
			FAIL("lose-all tree rebuild of 'e' differs from its synced state");
		snprintf(x, sizeof(x), "%s/n/f", wdir);
		snprintf(y, sizeof(y), "%s/n/f", t2);
		if (!same_file(x, y))
			FAIL("lose-all tree rebuild lost 'n/f', synced and renamed with a folder sync");
		snprintf(y, sizeof(y), "%s/n/g", t2);
		if (stat(y, &sb) == 0)
			FAIL("lose-all tree rebuild kept 'n/g', made after its folder's last sync");
		snprintf(y, sizeof(y), "%s/n/h", t2);
		if (stat(y, &sb) < 0)
			FAIL("lose-all tree rebuild lost 'n/h', whose unlink was never synced");
		snprintf(y, sizeof(y), "%s/n/tmp", t2);
		if (stat(y, &sb) == 0)
			FAIL("lose-all tree rebuild has 'n/tmp', renamed with a folder sync");
		if (st.names_lost == 0 || st.names_kept == 0)
			FAIL("lose-all tree rebuild kept %llu and lost %llu name changes",
			     (unsigned long long)st.names_kept, (unsigned long long)st.names_lost);
	}

	/* a log cut inside its last record: the reader drops just that record */
	{
		size_t n = lg.n, full = lg.size;

		pc_log_free(&lg);
		if (truncate(logp, (off_t)full - 7) < 0)
			FAIL("truncate: %s", strerror(errno));
		if (pc_log_load(logp, &lg) < 0)
			FAIL("reload of the cut log failed");
		if (lg.n != n - 1 || lg.tail_bytes == 0)
			FAIL("cut log: %zu records (want %zu) and %zu tail bytes",
			     lg.n, n - 1, lg.tail_bytes);
	}
	printf("pcshim-selftest: %zu log records, keep-all, lose-all, random, not-whole, "
	       "folder (raw aio, names) and cut-log checks pass\n",
	       lg.n + 1);
	rc = 0;
out:
	pc_log_free(&lg);
	if (!getenv("ATOLL_CRASH_KEEP"))
		pc_rmtree(root);
	else
		fprintf(stderr, "pcshim-selftest: kept %s\n", root);
	return rc;
}
