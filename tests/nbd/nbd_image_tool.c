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
 * Exit status: 0, or 1 with one line on stderr saying what failed.
 */
#include <atoll/atoll.h>
#include <atoll/image.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	got = atoll_image_write(img, buf, len, off);
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
	got = atoll_image_write(img, a, sizeof(a), off);
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
	got = atoll_image_write(img, b, sizeof(b), off + 4096);
	ret = got < 0 ? (int)got : 0;
	oret = atoll_write(io, oid, b, sizeof(b), (off + 4096) % osz);
	cret = atoll_image_close(img);
	printf("late image_write=%d object_write=%d close=%d\n", ret, oret, cret);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct atoll_cluster *c = NULL;
	struct atoll_ioctx *io = NULL;
	int ret;

	if (argc < 5) {
		fprintf(stderr, "usage: nbd-image-tool CONF POOL create|snap|rm|write|hold NAME "
			"[ARG...]\n");
		return 2;
	}
	ret = atoll_cluster_create(&c, argv[1], 0);
	if (!ret)
		ret = atoll_cluster_connect(c);
	if (!ret)
		ret = atoll_ioctx_create(c, argv[2], &io);
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
