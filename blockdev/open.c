/*
 * open.c - opening and closing images, what an open handle reports, and
 * resizing.  A writer handle takes the lock (lock.c) and starts the
 * ticker that keeps it; read-only and snapshot handles take nothing and
 * read the header once (a snapshot never changes; the head of a
 * read-only handle may, and the handle does not follow it).
 */
#include "image-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int atoll_image_open(struct atoll_ioctx *io, const char *spec,
		     const struct atoll_image_open_options *opt,
		     struct atoll_image **out)
{
	struct atoll_image *img;
	char name[ATOLL_IMAGE_NAME_MAX + 1], *at;
	const char *snap = NULL;
	unsigned flags = 0;
	int r;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!io || !spec || strlen(spec) > 2 * ATOLL_IMAGE_NAME_MAX + 1)
		return -EINVAL;
	if (opt && (opt->size_of < offsetof(struct atoll_image_open_options, lease_ms) ||
		    (opt->flags & ~(ATOLL_IMAGE_OPEN_READ_ONLY | ATOLL_IMAGE_OPEN_BREAK_LOCK))))
		return -EINVAL;
	if (opt)
		flags = opt->flags;
	at = strchr(spec, '@');
	if ((at ? (size_t)(at - spec) : strlen(spec)) > ATOLL_IMAGE_NAME_MAX)
		return -EINVAL;
	memcpy(name, spec, at ? (size_t)(at - spec) : strlen(spec) + 1);
	if (at) {
		name[at - spec] = 0;
		snap = at + 1;
		if (img_check_name(snap))
			return -EINVAL;
		flags |= ATOLL_IMAGE_OPEN_READ_ONLY;
	}
	if (img_check_name(name))
		return -EINVAL;
	img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	pthread_mutex_init(&img->lock, NULL);
	pthread_mutex_init(&img->hdr_mutex, NULL);
	pthread_cond_init(&img->cond, NULL);
	pthread_cond_init(&img->tick_cond, NULL);
	img->io = io;
	img->c = atoll_ioctx_get_cluster(io);
	if (opt && opt->size_of >= sizeof(struct atoll_image_open_options))
		img->opt = *opt;
	img->lease_ms = img->opt.lease_ms ? img->opt.lease_ms : IMG_DEFAULT_LEASE_MS;
	if (img->lease_ms < 300)
		img->lease_ms = 300;
	img->read_only = flags & ATOLL_IMAGE_OPEN_READ_ONLY;
	r = img_header_read_name(io, name, &img->hdr);
	if (r)
		goto out_free;
	memcpy(img->name, name, sizeof(name));
	memcpy(img->id, img->hdr.id, sizeof(img->id));
	img->object_size = img->hdr.object_size;
	img->size = img->hdr.size;
	img->latest_snap = img->hdr.nsnaps ? img->hdr.snaps[img->hdr.nsnaps - 1].id : 0;
	if (snap) {
		const struct img_snap *s = img_snap_by_name(&img->hdr, snap);

		r = -ENOENT;
		if (!s)
			goto out_free;
		img->snap_id = s->id;
		img->size = s->size;
	}
	if (!img->read_only) {
		r = img_lock_acquire(img, flags & ATOLL_IMAGE_OPEN_BREAK_LOCK);
		if (r)
			goto out_free;
		img->size = img->hdr.size;
		img->latest_snap = img->hdr.nsnaps ? img->hdr.snaps[img->hdr.nsnaps - 1].id : 0;
		r = img_ticker_start(img);
		if (r) {
			img_lock_release(img);
			goto out_free;
		}
	}
	*out = img;
	return 0;
out_free:
	pthread_cond_destroy(&img->cond);
	pthread_cond_destroy(&img->tick_cond);
	pthread_mutex_destroy(&img->hdr_mutex);
	pthread_mutex_destroy(&img->lock);
	free(img);
	return r;
}

int atoll_image_close(struct atoll_image *img)
{
	int r;

	if (!img)
		return 0;
	pthread_mutex_lock(&img->lock);
	while (img->inflight)
		pthread_cond_wait(&img->cond, &img->lock);
	pthread_mutex_unlock(&img->lock);
	if (!img->read_only) {
		img_ticker_stop(img);
		if (!img->fenced)
			img_lock_release(img);
	}
	r = img->async_err;
	img_cow_free(img);
	pthread_cond_destroy(&img->cond);
	pthread_cond_destroy(&img->tick_cond);
	pthread_mutex_destroy(&img->hdr_mutex);
	pthread_mutex_destroy(&img->lock);
	free(img);
	return r;
}

uint64_t atoll_image_size(struct atoll_image *img)
{
	uint64_t s;

	if (!img)
		return 0;
	pthread_mutex_lock(&img->lock);
	s = img->size;
	pthread_mutex_unlock(&img->lock);
	return s;
}

uint64_t atoll_image_object_size(struct atoll_image *img)
{
	return img ? img->object_size : 0;
}

int atoll_image_is_read_only(struct atoll_image *img)
{
	return img ? img->read_only : 1;
}

int atoll_image_get_info(struct atoll_image *img, struct atoll_image_info *info)
{
	if (!img || !info || info->size_of < sizeof(size_t))
		return -EINVAL;
	pthread_mutex_lock(&img->lock);
	img_fill_info(&img->hdr, img->size, info);
	pthread_mutex_unlock(&img->lock);
	return 0;
}

int atoll_image_lock_status(struct atoll_image *img)
{
	int r;

	if (!img)
		return -EINVAL;
	if (img->read_only)
		return -EROFS;
	pthread_mutex_lock(&img->lock);
	r = img->fenced;
	pthread_mutex_unlock(&img->lock);
	return r;
}

void atoll_image_quiesce_done(struct atoll_image *img, int rc)
{
	if (!img)
		return;
	pthread_mutex_lock(&img->lock);
	img->quiesce_pending = false;
	img->quiesce_rc = rc;
	pthread_cond_broadcast(&img->cond);
	pthread_mutex_unlock(&img->lock);
}

int atoll_image_resize(struct atoll_image *img, uint64_t size, unsigned flags)
{
	struct img_header *h;
	uint64_t osize, old, first, last;
	int r = 0;

	if (!img || flags)
		return -EINVAL;
	if (img->read_only)
		return -EROFS;
	if (size % 512 || size > ATOLL_IMAGE_MAX_SIZE)
		return -EINVAL;
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_lock(&img->hdr_mutex);
	pthread_mutex_lock(&img->lock);
	r = img->fenced;
	if (!r)
		img_pause_locked(img);
	old = img->size;
	*h = img->hdr;
	pthread_mutex_unlock(&img->lock);
	if (r)
		goto out;
	osize = img->object_size;
	if (size < old) {
		/* objects wholly past the end go, the one across it is cut */
		first = (size + osize - 1) / osize;
		last = (old + osize - 1) / osize;
		for (uint64_t o = first; !r && o < last; o++)
			r = img_obj_trim(img, o, 0);
		if (!r && size % osize)
			r = img_obj_trim(img, size / osize, size % osize);
	}
	if (!r) {
		h->size = size;
		r = img_header_commit(img, h);
	}
	img_resume(img);
out:
	pthread_mutex_unlock(&img->hdr_mutex);
	free(h);
	return r;
}
