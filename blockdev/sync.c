/*
 * sync.c - the synchronous calls: issue the asynchronous one with a
 * private completion, wait for it, release it (as libatoll's synchronous
 * calls do).  Nothing else; the behaviour lives in io.c.
 */
#include "image-int.h"

#include <errno.h>

/* Waits for an asynchronous call issued with comp (issued is its return)
 * and releases comp. */
static int64_t wait_for(struct atoll_completion *comp, int issued)
{
	int64_t r = issued;

	if (issued == 0)
		r = atoll_completion_wait(comp);
	atoll_completion_release(comp);
	return r;
}

#define SYNC(call) ({ \
	struct atoll_completion *comp_; \
	int64_t r_ = atoll_completion_create(NULL, NULL, NULL, &comp_); \
	if (r_ == 0) \
		r_ = wait_for(comp_, (call)); \
	r_; \
})

int64_t atoll_image_read(struct atoll_image *img, void *buf, size_t len, uint64_t off,
			 unsigned flags)
{
	return SYNC(atoll_image_aio_read(img, buf, len, off, comp_, flags));
}

int64_t atoll_image_write(struct atoll_image *img, const void *buf, size_t len,
			  uint64_t off, unsigned flags)
{
	return SYNC(atoll_image_aio_write(img, buf, len, off, comp_, flags));
}

int atoll_image_discard(struct atoll_image *img, uint64_t off, uint64_t len,
			unsigned flags)
{
	return (int)SYNC(atoll_image_aio_discard(img, off, len, comp_, flags));
}

int atoll_image_write_zeroes(struct atoll_image *img, uint64_t off, uint64_t len,
			     unsigned flags)
{
	return (int)SYNC(atoll_image_aio_write_zeroes(img, off, len, comp_, flags));
}

int atoll_image_flush(struct atoll_image *img, unsigned flags)
{
	return (int)SYNC(atoll_image_aio_flush(img, comp_, flags));
}

int64_t atoll_image_block_status(struct atoll_image *img, uint64_t off, uint64_t len,
				 struct atoll_image_extent *ext, size_t max, unsigned flags)
{
	return SYNC(atoll_image_aio_block_status(img, off, len, ext, max, comp_, flags));
}
