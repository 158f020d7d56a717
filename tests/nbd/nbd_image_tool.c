/*
 * nbd_image_tool.c - creates, snapshots and removes images for the NBD
 * tests, through libatoll-image, so that the tests do not depend on the
 * CLI's output format; and acts as a second writer (the CLI writes no
 * data) for the lock and fencing tests.
 *
 *   nbd-image-tool CONF POOL create NAME SIZE_BYTES
 *   nbd-image-tool CONF POOL snap NAME SNAP
 *   nbd-image-tool CONF POOL rm NAME
 *   nbd-image-tool CONF POOL write NAME OFF LEN BYTE
 *        opens NAME for writing, writes LEN bytes of value BYTE at OFF
 *   nbd-image-tool CONF POOL hold NAME OFF
 *        opens NAME for writing, writes 4096 bytes of 'A' at OFF, prints
 *        "ready CLIENT_ID", waits for a line on stdin, then tries two late
 *        writes of 'B' at OFF + 4096: through the image (fenced handles
 *        refuse it) and straight to the data object (only the OSDs'
 *        blocklist refuses that one), and prints
 *        "late image_write=RC object_write=RC close=RC".
 *   nbd-image-tool CONF POOL bench NAME SECONDS rand|seq read|write BS QD
 *        the image library alone, without NBD (bench/nbd-bench.sh compares
 *        it with atoll-nbd): QD asynchronous requests of BS bytes kept in
 *        flight for SECONDS, issued from one thread as atoll-nbd does;
 *        prints "IOPS MiB/s".
 * Exit status: 0, or 1 with one line on stderr saying what failed.
 */
#include <atoll/atoll.h>
#include <atoll/image.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static int open_writer(struct atoll_ioctx *io, const char *name, struct atoll_image **img)
{
	int ret = atoll_image_open(io, name, NULL, img);

	if (ret == -EBUSY)
		fprintf(stderr, "nbd-image-tool: cannot open image '%s' for writing: another "
			"writer holds its lock (%s)\n", name, atoll_strerror(ret));
	else if (ret)
		fprintf(stderr, "nbd-image-tool: cannot open image '%s' for writing: %s\n",
			name, atoll_strerror(ret));
	return ret;
}

static int do_write(struct atoll_ioctx *io, const char *name, uint64_t off, size_t len,
		    int byte)
{
	struct atoll_image *img = NULL;
	char *buf = malloc(len ? len : 1);
	int64_t got;
	int ret;

	if (!buf)
		return -ENOMEM;
	memset(buf, byte, len);
	ret = open_writer(io, name, &img);
	if (ret)
		goto out;
	got = atoll_image_write(img, buf, len, off, 0);
	ret = got < 0 ? (int)got : 0;
	if (ret)
		fprintf(stderr, "nbd-image-tool: write to image '%s' failed: %s\n", name,
			atoll_strerror(ret));
	got = atoll_image_close(img);
	if (!ret)
		ret = (int)got;
out:
	free(buf);
	return ret;
}

/* The writer that gets fenced: see the usage above. */
static int do_hold(struct atoll_ioctx *io, const char *name, uint64_t off)
{
	struct atoll_image_info info = { .size_of = sizeof(info) };
	struct atoll_image *img = NULL;
	char a[4096], b[4096], oid[160], line[64];
	uint64_t osz;
	int64_t got;
	int ret, oret, cret;

	memset(a, 'A', sizeof(a));
	memset(b, 'B', sizeof(b));
	ret = open_writer(io, name, &img);
	if (ret)
		return ret;
	got = atoll_image_write(img, a, sizeof(a), off, 0);
	if (got < 0) {
		fprintf(stderr, "nbd-image-tool: write to image '%s' failed: %s\n", name,
			atoll_strerror((int)got));
		atoll_image_close(img);
		return (int)got;
	}
	ret = atoll_image_get_info(img, &info);
	if (ret) {
		atoll_image_close(img);
		return ret;
	}
	osz = info.object_size;
	snprintf(oid, sizeof(oid), "%s%016" PRIx64, info.prefix, (off + 4096) / osz);
	printf("ready %" PRIu64 "\n", info.lock_owner);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	got = atoll_image_write(img, b, sizeof(b), off + 4096, 0);
	ret = got < 0 ? (int)got : 0;
	oret = atoll_write(io, oid, b, sizeof(b), (off + 4096) % osz, 0);
	cret = atoll_image_close(img);
	printf("late image_write=%d object_write=%d close=%d\n", ret, oret, cret);
	fflush(stdout);
	return 0;
}

/* bench: slots in flight, refilled by the main thread as they complete. */
struct bench {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned done;		/* completions not yet refilled */
	unsigned inflight;
	int err;
	uint64_t ops;
};

static void bench_cb(struct atoll_completion *comp, void *arg)
{
	struct bench *b = arg;
	int64_t result = atoll_completion_return(comp);

	atoll_completion_release(comp);
	pthread_mutex_lock(&b->lock);
	if (result < 0 && !b->err)
		b->err = (int)result;
	b->done++;
	b->inflight--;
	b->ops++;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static int do_bench(struct atoll_ioctx *io, const char *name, double secs, bool rnd,
		    bool wr, size_t bs, unsigned qd)
{
	struct atoll_completion *comp;
	struct bench b = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct atoll_image_open_options ro = { .size_of = sizeof(ro),
					       .flags = ATOLL_IMAGE_OPEN_READ_ONLY };
	struct atoll_image *img = NULL;
	uint64_t size, nblocks, seq = 0, ops0 = 0;
	double t0, t1 = 0;
	char *buf;
	int ret;

	buf = malloc(bs * qd);
	if (!buf || !bs || !qd)
		return -ENOMEM;
	memset(buf, 0x5a, bs * qd);
	ret = wr ? open_writer(io, name, &img) : atoll_image_open(io, name, &ro, &img);
	if (ret)
		goto out_free_buf;
	size = atoll_image_size(img);
	nblocks = size / bs;
	if (!nblocks) {
		ret = -EINVAL;
		goto out_close;
	}
	srand(1);
	t0 = tu_now_s();
	pthread_mutex_lock(&b.lock);
	b.done = qd;
	for (;;) {
		while (b.done && !b.err) {
			uint64_t blk = rnd ? ((uint64_t)rand() * RAND_MAX + rand()) % nblocks
					   : seq++ % nblocks;
			char *p = buf + (b.done - 1) * bs;

			b.done--;
			b.inflight++;
			pthread_mutex_unlock(&b.lock);
			ret = atoll_completion_create(bench_cb, &b, NULL, &comp);
			if (!ret)
				ret = wr ? atoll_image_aio_write(img, p, bs, blk * bs, comp, 0)
					 : atoll_image_aio_read(img, p, bs, blk * bs, comp, 0);
			if (ret)
				atoll_completion_release(comp);
			pthread_mutex_lock(&b.lock);
			if (ret) {
				b.err = ret;
				b.inflight--;
			}
		}
		if (b.err || (t1 && tu_now_s() >= t1))
			break;
		if (!t1 && tu_now_s() - t0 >= 2) {		/* 2 s of ramp, like fio's */
			t0 = tu_now_s();
			t1 = t0 + secs;
			ops0 = b.ops;
		}
		pthread_cond_wait(&b.cond, &b.lock);
	}
	t1 = tu_now_s();
	ops0 = b.ops - ops0;
	while (b.inflight)
		pthread_cond_wait(&b.cond, &b.lock);
	ret = b.err;
	pthread_mutex_unlock(&b.lock);
	if (!ret)
		printf("%.0f %.1f\n", ops0 / (t1 - t0), ops0 * (double)bs / (1 << 20) / (t1 - t0));
out_close:
	atoll_image_close(img);
out_free_buf:
	free(buf);
	return ret;
}

int main(int argc, char **argv)
{
	struct atoll_cluster *c = NULL;
	struct atoll_ioctx *io = NULL;
	int ret;

	if (argc < 5) {
		fprintf(stderr, "usage: nbd-image-tool CONF POOL create|snap|rm|write|hold|bench NAME "
			"[ARG...]\n");
		return 2;
	}
	ret = atoll_cluster_create(&c, argv[1], 0);
	if (!ret)
		ret = atoll_cluster_connect(c);
	if (!ret)
		ret = atoll_ioctx_create(c, argv[2], &io, 0);
	if (ret)
		goto out;
	if (strcmp(argv[3], "create") == 0 && argc == 6)
		ret = atoll_image_create(io, argv[4], strtoull(argv[5], NULL, 0), NULL);
	else if (strcmp(argv[3], "snap") == 0 && argc == 6)
		ret = atoll_image_snap_create(io, argv[4], argv[5], 0, 0);
	else if (strcmp(argv[3], "rm") == 0)
		ret = atoll_image_remove(io, argv[4], ATOLL_IMAGE_REMOVE_SNAPSHOTS);
	else if (strcmp(argv[3], "write") == 0 && argc == 8)
		ret = do_write(io, argv[4], strtoull(argv[5], NULL, 0),
			       strtoull(argv[6], NULL, 0), (int)strtol(argv[7], NULL, 0));
	else if (strcmp(argv[3], "bench") == 0 && argc == 10)
		ret = do_bench(io, argv[4], strtod(argv[5], NULL), strcmp(argv[6], "rand") == 0,
			       strcmp(argv[7], "write") == 0, strtoull(argv[8], NULL, 0),
			       (unsigned)strtoul(argv[9], NULL, 0));
	else if (strcmp(argv[3], "hold") == 0 && argc == 6)
		ret = do_hold(io, argv[4], strtoull(argv[5], NULL, 0));
	else
		ret = -EINVAL;
out:
	if (ret)
		fprintf(stderr, "nbd-image-tool %s: %s (%d)\n", argv[3], atoll_strerror(ret), ret);
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	return ret ? 1 : 0;
}
