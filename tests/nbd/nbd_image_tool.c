/*
 * nbd_image_tool.c - creates, snapshots and removes images for the NBD
 * tests, through libatoll-image, so that the tests do not depend on the
 * CLI's output format.
 *
 *   nbd-image-tool CONF POOL create NAME SIZE_BYTES
 *   nbd-image-tool CONF POOL snap NAME SNAP
 *   nbd-image-tool CONF POOL rm NAME
 */
#include <atoll/atoll.h>
#include <atoll/image.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct atoll_cluster *c = NULL;
	struct atoll_ioctx *io = NULL;
	int ret;

	if (argc < 5) {
		fprintf(stderr, "usage: nbd-image-tool CONF POOL create|snap|rm NAME [ARG]\n");
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
	else
		ret = -22;
out:
	if (ret)
		fprintf(stderr, "nbd-image-tool %s: %s\n", argv[3], atoll_strerror(ret));
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	return ret ? 1 : 0;
}
