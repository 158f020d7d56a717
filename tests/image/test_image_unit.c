/*
 * test_image_unit.c - libatoll-image without a cluster: splitting ranges
 * over objects, name and argument checks, header encoding.
 */
#include "image-int.h"
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;

int main(void)
{
	struct img_piece p[8];
	struct img_header *h = calloc(2, sizeof(*h));
	struct atoll_image *img = NULL;
	char *s;
	size_t n;

	n = img_split(4096 - 10, 20, 4096, p, 8);
	TU_OK("split_across_boundary", n == 2 && p[0].objno == 0 && p[0].objoff == 4086 &&
	      p[0].len == 10 && p[1].objno == 1 && p[1].objoff == 0 && p[1].len == 10 &&
	      p[1].bufoff == 10);
	n = img_split(0, 3 * 4096, 4096, p, 8);
	TU_OK("split_whole_objects", n == 3 && p[2].objno == 2 && p[2].len == 4096);
	n = img_split(100, 0, 4096, p, 8);
	TU_OK("split_empty", n == 0);
	n = img_split(0, 100 * 4096, 4096, p, 8);
	TU_OK("split_counts_past_max", n == 100);
	n = img_split((1ull << 40) - 1, 2, 1 << 22, p, 8);
	TU_OK("split_high_offsets", n == 2 && p[1].objno == (1ull << 40) >> 22);

	TU_OK("object_size_power_of_two", img_valid_object_size(4 << 20) &&
	      !img_valid_object_size(3 << 20) && !img_valid_object_size(2048) &&
	      !img_valid_object_size(128 << 20));
	TU_OK("names", img_check_name("vm-1.disk") == 0 && img_check_name("") == -EINVAL &&
	      img_check_name("a@b") == -EINVAL && img_check_name("a/b") == -EINVAL &&
	      img_check_name("a b") == -EINVAL);

	strcpy(h->name, "x");
	strcpy(h->id, "0123456789abcdef");
	h->size = 1ull << 40;
	h->object_size = 1 << 22;
	h->snap_seq = 3;
	h->nsnaps = 1;
	h->snaps[0] = (struct img_snap){ 3, 1 << 20, 5, "s" };
	s = img_header_encode(h);
	TU_OK("header_roundtrip", s && img_header_decode(s, strlen(s), &h[1]) == 0 &&
	      h[1].size == h->size && h[1].nsnaps == 1 && h[1].snaps[0].id == 3 &&
	      !strcmp(h[1].snaps[0].name, "s"));
	free(s);
	TU_OK("header_garbage_refused", img_header_decode("{\"size\":1}", 10, &h[1]) == -EBADMSG);
	TU_OK("header_truncated_refused", img_header_decode("{\"format\"", 9, &h[1]) == -EBADMSG);

	TU_OK("open_null_args", atoll_image_open(NULL, "x", NULL, &img) == -EINVAL);
	TU_OK("create_null_io", atoll_image_create(NULL, "x", 512, NULL) == -EINVAL);
	TU_OK("close_null", atoll_image_close(NULL) == 0);
	TU_OK("aio_null_image", atoll_image_aio_read(NULL, NULL, 0, 0, NULL, 0) == -EINVAL);
	TU_OK("version", atoll_image_version(NULL) == ATOLL_IMAGE_VERSION_NUMBER);
	free(h);
	return fails ? 1 : 0;
}
