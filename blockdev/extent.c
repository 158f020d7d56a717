/*
 * extent.c - splitting a byte range of an image over its data objects.
 * Object sizes are powers of two, so the object number and the offset
 * inside it are a shift and a mask; the split is pure arithmetic and
 * tested without a cluster (tests/image/test_image_unit.c).
 */
#include "image-int.h"

bool img_valid_object_size(uint64_t osize)
{
	return osize >= ATOLL_IMAGE_MIN_OBJECT_SIZE && osize <= ATOLL_IMAGE_MAX_OBJECT_SIZE &&
	       (osize & (osize - 1)) == 0;
}

size_t img_split(uint64_t off, uint64_t len, uint64_t osize,
		 struct img_piece *out, size_t max)
{
	uint64_t done = 0;
	size_t n = 0;

	while (done < len) {
		uint64_t pos = off + done;
		uint64_t objoff = pos & (osize - 1);
		uint64_t chunk = osize - objoff;

		if (chunk > len - done)
			chunk = len - done;
		if (n < max) {
			out[n].objno = pos / osize;
			out[n].objoff = objoff;
			out[n].len = chunk;
			out[n].bufoff = done;
		}
		n++;
		done += chunk;
	}
	return n;
}
