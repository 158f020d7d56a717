/*
 * fuzz_image_header.c - libFuzzer target for an image's header object
 * (blockdev/header.c): the JSON anyone with access to the pool can write
 * as img_header.<id>, and the "lock" attribute beside it.
 *
 * The first input byte picks the decoder, the rest is its input.  A
 * header that decodes must hold what the library relies on (terminated
 * names, a valid object size, a size within the image maximum,
 * snapshots in id order no newer than snap_seq) and its encoding must
 * decode again and encode the same; a lock value that parses must format
 * and parse back to the same value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct img_header h1, h2;

static void check_header(const char *p, size_t n)
{
	char *s1, *s2;

	if (img_header_decode(p, n, &h1) < 0)
		return;
	if (!memchr(h1.name, 0, sizeof(h1.name)) || !memchr(h1.id, 0, sizeof(h1.id)) ||
	    !img_valid_object_size(h1.object_size) || h1.size > ATOLL_IMAGE_MAX_SIZE ||
	    h1.nsnaps > IMG_SNAPS_MAX)
		abort();
	for (uint32_t i = 0; i < h1.nsnaps; i++)
		if (h1.snaps[i].id > h1.snap_seq || (i && h1.snaps[i].id <= h1.snaps[i - 1].id))
			abort();
	s1 = img_header_encode(&h1);
	if (!s1)
		abort();
	if (img_header_decode(s1, strlen(s1), &h2) < 0)
		abort();
	s2 = img_header_encode(&h2);
	if (!s2 || strcmp(s1, s2))
		abort();
	free(s1);
	free(s2);
}

static void check_lock(const char *p, size_t n)
{
	char s[IMG_LOCK_MAX + 1], out[IMG_LOCK_MAX];
	struct img_lockval lv, again;

	/* the attribute as img_header_read keeps it: under IMG_LOCK_MAX,
	 * NUL-terminated */
	if (n >= IMG_LOCK_MAX)
		n = IMG_LOCK_MAX - 1;
	memcpy(s, p, n);
	s[n] = 0;
	if (img_lock_parse(s, &lv) < 0)
		return;
	img_lock_format(out, &lv);
	if (img_lock_parse(out, &again) < 0 || memcmp(&lv, &again, sizeof(lv)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] % 2 == 0)
		check_header((const char *)data + 1, size - 1);
	else
		check_lock((const char *)data + 1, size - 1);
	return 0;
}
