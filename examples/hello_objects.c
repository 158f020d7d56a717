/*
 * hello_objects.c - the smallest complete program using libatoll.
 *
 * Connects to a cluster, then writes, reads back, stats and removes a few
 * objects: first one at a time with the synchronous calls, then many at
 * once with the asynchronous ones (a completion per op, a callback that
 * counts them, user data the completion frees).  Every object call ends
 * with a flags argument, 0 here.  Build it against an installed atoll with
 *
 *   cc hello_objects.c $(pkg-config --cflags --libs atoll) -o hello_objects
 *
 * usage: hello_objects [CONF [POOL]]
 *   CONF  atoll.conf to read (default: $ATOLL_CONF, ./atoll.conf, ...)
 *   POOL  the pool to use (default "hello"; created when missing)
 * Exits 0 when every object read back equals what was written.
 */
#include <atoll/atoll.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NASYNC 32
#define ASYNC_LEN 65536

static int fail(const char *what, int64_t r)
{
	fprintf(stderr, "hello_objects: %s: %s\n", what, atoll_strerror((int)r));
	return 1;
}

/* For a call that failed on this thread: atoll_last_error() says more
 * than the errno (the config file and line, the monitor's address). */
static int fail_call(const char *what, int r)
{
	fprintf(stderr, "hello_objects: %s: %s (%s)\n", what, atoll_strerror(r),
		atoll_last_error());
	return 1;
}

/* Runs on a library thread: it must not block.  arg is the op's number,
 * malloc'd; the completion frees it (with free) after this callback. */
static atomic_int completed;
static void on_complete(struct atoll_completion *comp, void *arg)
{
	const int *op = arg;

	if (atoll_completion_return(comp) < 0)
		fprintf(stderr, "hello_objects: async op %d failed\n", *op);
	atomic_fetch_add(&completed, 1);
}

static int sync_demo(struct atoll_ioctx *io)
{
	const char *text = "hello, atoll";
	char back[64];
	uint64_t size, mtime;
	int64_t n;
	int r;

	r = atoll_write_full(io, "hello-sync", text, strlen(text), 0);
	if (r < 0)
		return fail("write 'hello-sync'", r);
	n = atoll_read(io, "hello-sync", back, sizeof(back), 0, 0);
	if (n < 0)
		return fail("read 'hello-sync'", n);
	if ((size_t)n != strlen(text) || memcmp(back, text, (size_t)n) != 0) {
		fprintf(stderr, "hello_objects: 'hello-sync' read back differs\n");
		return 1;
	}
	r = atoll_stat(io, "hello-sync", &size, &mtime, 0);
	if (r < 0)
		return fail("stat 'hello-sync'", r);
	printf("sync: wrote and read back %llu bytes\n", (unsigned long long)size);
	r = atoll_remove(io, "hello-sync", 0);
	if (r < 0)
		return fail("remove 'hello-sync'", r);
	n = atoll_read(io, "hello-sync", back, sizeof(back), 0, 0);
	if (n != -ENOENT) {
		fprintf(stderr, "hello_objects: 'hello-sync' still readable after remove\n");
		return 1;
	}
	return 0;
}

static int async_demo(struct atoll_ioctx *io)
{
	struct atoll_completion *comp[NASYNC];
	static unsigned char data[NASYNC][ASYNC_LEN], back[NASYNC][ASYNC_LEN];
	char name[NASYNC][32];
	int ret = 1, made = 0;
	int64_t r;

	for (int i = 0; i < NASYNC; i++) {
		snprintf(name[i], sizeof(name[i]), "hello-async-%d", i);
		for (int k = 0; k < ASYNC_LEN; k++)
			data[i][k] = (unsigned char)(i * 31 + k * 7);
	}
	/* issue every write, then wait for all */
	for (made = 0; made < NASYNC; made++) {
		int *op = malloc(sizeof(*op));

		if (!op) {
			fail("completion", -ENOMEM);
			goto out_release;
		}
		*op = made;
		r = atoll_completion_create(on_complete, op, free, &comp[made]);
		if (r < 0) {
			free(op);
			fail("completion", r);
			goto out_release;
		}
		r = atoll_aio_write_full(io, name[made], comp[made], data[made], ASYNC_LEN, 0);
		if (r < 0) {
			fail("aio write", r);
			made++;
			goto out_release;
		}
	}
	for (int i = 0; i < NASYNC; i++) {
		r = atoll_completion_wait(comp[i]);
		if (r < 0) {
			fail(name[i], r);
			goto out_release;
		}
		atoll_completion_release(comp[i]);
		comp[i] = NULL;
	}
	/* read them all back */
	for (int i = 0; i < NASYNC; i++) {
		atoll_completion_create(NULL, NULL, NULL, &comp[i]);
		r = atoll_aio_read(io, name[i], comp[i], back[i], ASYNC_LEN, 0, 0);
		if (r < 0) {
			fail("aio read", r);
			goto out_release;
		}
	}
	for (int i = 0; i < NASYNC; i++) {
		r = atoll_completion_wait(comp[i]);
		if (r != ASYNC_LEN || memcmp(back[i], data[i], ASYNC_LEN) != 0) {
			fprintf(stderr, "hello_objects: '%s' read back differs (%lld)\n",
				name[i], (long long)r);
			goto out_release;
		}
		atoll_completion_release(comp[i]);
		comp[i] = NULL;
	}
	/* and remove them */
	for (int i = 0; i < NASYNC; i++) {
		atoll_completion_create(NULL, NULL, NULL, &comp[i]);
		r = atoll_aio_remove(io, name[i], comp[i], 0);
		if (r < 0) {
			fail("aio remove", r);
			goto out_release;
		}
	}
	for (int i = 0; i < NASYNC; i++) {
		r = atoll_completion_wait(comp[i]);
		if (r < 0) {
			fail(name[i], r);
			goto out_release;
		}
	}
	printf("async: %d objects written, read back and removed (%d callbacks)\n",
	       NASYNC, atomic_load(&completed));
	ret = 0;

out_release:
	for (int i = 0; i < made; i++)
		atoll_completion_release(comp[i]);
	return ret;
}

int main(int argc, char **argv)
{
	const char *conf = argc > 1 ? argv[1] : NULL;
	const char *pool = argc > 2 ? argv[2] : "hello";
	struct atoll_cluster *c;
	struct atoll_ioctx *io;
	char fsid[37];
	int r, ret = 1;

	r = atoll_cluster_create(&c, conf, 0);
	if (r < 0)
		return fail_call("reading the configuration", r);
	r = atoll_cluster_connect(c);
	if (r < 0) {
		fail_call("connecting to the monitor", r);
		goto out_shutdown;
	}
	atoll_cluster_fsid(c, fsid);
	printf("connected to cluster %s as client.%llu\n", fsid,
	       (unsigned long long)atoll_cluster_id(c));
	if (atoll_pool_lookup(c, pool) == -ENOENT) {
		r = atoll_pool_create(c, pool, NULL);
		if (r < 0 && r != -EEXIST) {
			fail("creating the pool", r);
			goto out_shutdown;
		}
	}
	r = atoll_ioctx_create(c, pool, &io, 0);
	if (r < 0) {
		fail_call("opening the pool", r);
		goto out_shutdown;
	}
	if (sync_demo(io) == 0 && async_demo(io) == 0)
		ret = 0;
	atoll_ioctx_destroy(io);
out_shutdown:
	atoll_cluster_shutdown(c);
	return ret;
}
