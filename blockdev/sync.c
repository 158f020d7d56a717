/*
 * sync.c - the synchronous calls: issue the asynchronous one, wait for
 * its callback.  Nothing else; the behaviour lives in io.c.
 */
#include "image-int.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

struct waiter {
	pthread_mutex_t m;
	pthread_cond_t c;
	bool done;
	int64_t result;
};

static void wake(struct atoll_image *img, int64_t result, void *arg)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->m);
	w->result = result;
	w->done = true;
	pthread_cond_signal(&w->c);
	pthread_mutex_unlock(&w->m);
}

static int64_t wait_for(struct waiter *w, int r)
{
	if (r == 0) {
		pthread_mutex_lock(&w->m);
		while (!w->done)
			pthread_cond_wait(&w->c, &w->m);
		pthread_mutex_unlock(&w->m);
		r = 0;
	}
	pthread_cond_destroy(&w->c);
	pthread_mutex_destroy(&w->m);
	return r ? r : w->result;
}

#define WAITER(w) struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0 }

int64_t atoll_image_read(struct atoll_image *img, void *buf, size_t len, uint64_t off)
{
	WAITER(w);
	return wait_for(&w, atoll_image_aio_read(img, buf, len, off, wake, &w, 0));
}

int64_t atoll_image_write(struct atoll_image *img, const void *buf, size_t len, uint64_t off)
{
	WAITER(w);
	return wait_for(&w, atoll_image_aio_write(img, buf, len, off, wake, &w, 0));
}

int atoll_image_discard(struct atoll_image *img, uint64_t off, uint64_t len)
{
	WAITER(w);
	return (int)wait_for(&w, atoll_image_aio_discard(img, off, len, wake, &w, 0));
}

int atoll_image_write_zeroes(struct atoll_image *img, uint64_t off, uint64_t len,
			     unsigned flags)
{
	WAITER(w);
	return (int)wait_for(&w, atoll_image_aio_write_zeroes(img, off, len, wake, &w, flags));
}

int atoll_image_flush(struct atoll_image *img)
{
	WAITER(w);
	return (int)wait_for(&w, atoll_image_aio_flush(img, wake, &w, 0));
}

int64_t atoll_image_block_status(struct atoll_image *img, uint64_t off, uint64_t len,
				 struct atoll_image_extent *ext, size_t max)
{
	WAITER(w);
	return wait_for(&w, atoll_image_aio_block_status(img, off, len, ext, max, wake, &w, 0));
}
