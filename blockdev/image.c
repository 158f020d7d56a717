/*
 * image.c - images as a whole: create, remove, list, stat, breaking a
 * dead writer's lock, and the library version.
 *
 * Creating claims the name first (img_id.<name> created exclusively: two
 * concurrent creators cannot both win), then writes the header, then the
 * directory entry used for listing.  Removing goes the other way, holding
 * the writer lock, so a crash half way leaves an image that still opens
 * or a name that remove can finish off (every step tolerates -ENOENT).
 */
#include "image-int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

int atoll_image_version(const char **str)
{
	if (str)
		*str = "0.2.0";
	return ATOLL_IMAGE_VERSION_NUMBER;
}

static uint64_t random64(void)
{
	uint64_t v = 0;

	while (getrandom(&v, sizeof(v), 0) != sizeof(v) || v == 0)
		;
	return v;
}

int atoll_image_create(struct atoll_ioctx *io, const char *name, uint64_t size,
		       const struct atoll_image_create_options *opt)
{
	struct img_header *h = NULL;
	struct atoll_op *op = NULL;
	char oid[IMG_OID_MAX];
	struct atoll_kv kv;
	char *js = NULL;
	int r;

	if (!io || img_check_name(name))
		return -EINVAL;
	if (size % 512 || size > ATOLL_IMAGE_MAX_SIZE)
		return -EINVAL;
	if (opt && opt->size_of < sizeof(size_t))
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->object_size = ATOLL_IMAGE_DEFAULT_OBJECT_SIZE;
	if (opt && opt->size_of >= offsetof(struct atoll_image_create_options, object_size) +
				    sizeof(opt->object_size) && opt->object_size)
		h->object_size = opt->object_size;
	r = -EINVAL;
	if (!img_valid_object_size(h->object_size))
		goto out;
	if (opt && opt->size_of >= offsetof(struct atoll_image_create_options, features) +
				    sizeof(opt->features) && opt->features)
		goto out;
	snprintf(h->name, sizeof(h->name), "%s", name);
	snprintf(h->id, sizeof(h->id), "%016" PRIx64, random64());
	h->size = size;
	h->created_ns = img_now_ns();
	js = img_header_encode(h);
	r = -ENOMEM;
	if (!js)
		goto out;

	/* 1: claim the name */
	op = atoll_op_create(0);
	if (!op)
		goto out;
	img_oid_id(oid, name);
	atoll_op_create_object(op, 1);
	atoll_op_write_full(op, h->id, 16);
	r = atoll_op_operate(op, io, oid, 0);
	atoll_op_release(op);
	op = NULL;
	if (r)
		goto out;
	/* 2: the header, with a free lock */
	op = atoll_op_create(0);
	r = -ENOMEM;
	if (!op)
		goto out;
	img_oid_header(oid, h->id);
	atoll_op_create_object(op, 1);
	atoll_op_write_full(op, js, strlen(js));
	atoll_op_setxattr(op, "lock", "none", 4);
	r = atoll_op_operate(op, io, oid, 0);
	if (r)
		goto out;
	/* 3: the directory */
	kv = (struct atoll_kv){ name, strlen(name), h->id, 16 };
	r = atoll_omap_set(io, IMG_DIRECTORY, &kv, 1, 0);
out:
	atoll_op_release(op);
	free(js);
	free(h);
	return r;
}

int img_list_prefix(struct atoll_ioctx *io, const char *prefix, img_list_cb cb, void *arg)
{
	struct atoll_list *l = NULL;
	size_t plen = strlen(prefix);
	const char *oid;
	int r;

	r = atoll_list_open(io, &l, 0);
	if (r)
		return r;
	while ((r = atoll_list_next(l, &oid)) == 0) {
		if (strncmp(oid, prefix, plen))
			continue;
		r = cb(oid, arg);
		if (r)
			break;
	}
	atoll_list_close(l);
	return r == -ENOENT ? 0 : r;
}

struct rm_ctx {
	struct atoll_ioctx *io;
	int err;
};

static int rm_one(const char *oid, void *arg)
{
	struct rm_ctx *rc = arg;
	int r = atoll_remove(rc->io, oid, 0);

	if (r && r != -ENOENT && !rc->err)
		rc->err = r;
	return 0;
}

/* Removes every object whose name starts with prefix. */
static int rm_prefix(struct atoll_ioctx *io, const char *prefix)
{
	struct rm_ctx rc = { io, 0 };
	int r = img_list_prefix(io, prefix, rm_one, &rc);

	return r ? r : rc.err;
}

int atoll_image_remove(struct atoll_ioctx *io, const char *name, unsigned flags)
{
	struct atoll_image_open_options o = { sizeof(o), 0, 0, NULL, NULL };
	struct atoll_image *img = NULL;
	char oid[IMG_OID_MAX], prefix[IMG_OID_MAX];
	char id[17] = "";
	struct atoll_kv kv;
	int64_t n;
	int r;

	if (!io || img_check_name(name) || (flags & ~ATOLL_IMAGE_REMOVE_SNAPSHOTS))
		return -EINVAL;
	img_oid_id(oid, name);
	n = atoll_read(io, oid, id, 16, 0, 0);
	if (n < 0)
		return (int)n;
	if (n != 16)
		return -EBADMSG;
	id[16] = 0;
	r = atoll_image_open(io, name, &o, &img);
	if (r && r != -ENOENT)
		return r;	/* -EBUSY: a writer holds it */
	if (img) {
		if (img->hdr.nsnaps && !(flags & ATOLL_IMAGE_REMOVE_SNAPSHOTS)) {
			atoll_image_close(img);
			return -ENOTEMPTY;
		}
	}
	snprintf(prefix, sizeof(prefix), "img_data.%s.", id);
	r = rm_prefix(io, prefix);
	if (!r) {
		snprintf(prefix, sizeof(prefix), "img_snap.%s.", id);
		r = rm_prefix(io, prefix);
	}
	if (img) {
		/* the header goes with the lock; close then finds it gone */
		img_oid_header(prefix, id);
		if (!r) {
			r = atoll_remove(io, prefix, 0);
			if (r == -ENOENT)
				r = 0;
		}
		img->stopping = true;
		atoll_image_close(img);
	}
	if (r)
		return r;
	kv = (struct atoll_kv){ name, strlen(name), NULL, 0 };
	r = atoll_omap_rm(io, IMG_DIRECTORY, &kv, 1, 0);
	if (r && r != -ENOENT)
		return r;
	r = atoll_remove(io, oid, 0);
	return r == -ENOENT ? 0 : r;
}

int64_t atoll_image_list(struct atoll_ioctx *io, char *buf, size_t len)
{
	struct atoll_kv_iter *it = NULL;
	char after[ATOLL_IMAGE_NAME_MAX + 1] = "";
	size_t alen = 0, need = 0;
	int more = 1, r;

	if (!io || (len && !buf))
		return -EINVAL;
	while (more) {
		const void *k, *v;
		size_t kl, vl;

		r = atoll_omap_list(io, IMG_DIRECTORY, alen ? after : NULL, alen, 1000, &it,
				    &more, 0);
		if (r == -ENOENT)
			return 0;
		if (r)
			return r;
		while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
			if (need + kl + 1 <= len) {
				memcpy(buf + need, k, kl);
				buf[need + kl] = 0;
			}
			need += kl + 1;
			if (kl < sizeof(after)) {
				memcpy(after, k, kl);
				alen = kl;
			}
		}
		atoll_kv_iter_free(it);
		it = NULL;
	}
	return (int64_t)need;
}

/* Fills the fields of info that fit in its size_of. */
#define SET_INFO(info, field, val) do { \
	if ((info)->size_of >= offsetof(struct atoll_image_info, field) + sizeof((info)->field)) \
		(info)->field = (val); \
} while (0)

void img_fill_info(const struct img_header *h, uint64_t size, struct atoll_image_info *info)
{
	struct img_lockval lv;
	bool locked = img_lock_parse(h->lock, &lv) == 0 && lv.expires_ns > img_now_ns();

	SET_INFO(info, size, size);
	SET_INFO(info, object_size, h->object_size);
	SET_INFO(info, num_objects, (size + h->object_size - 1) / h->object_size);
	SET_INFO(info, features, h->features);
	if (info->size_of >= offsetof(struct atoll_image_info, id) + sizeof(info->id))
		memcpy(info->id, h->id, sizeof(info->id));
	if (info->size_of >= offsetof(struct atoll_image_info, prefix) + sizeof(info->prefix))
		snprintf(info->prefix, sizeof(info->prefix), "img_data.%s.", h->id);
	SET_INFO(info, num_snaps, h->nsnaps);
	SET_INFO(info, lock_owner, locked ? lv.client : 0);
	SET_INFO(info, lock_expires_ns, locked ? lv.expires_ns : 0);
	SET_INFO(info, created_ns, h->created_ns);
}

int atoll_image_stat(struct atoll_ioctx *io, const char *name,
		     struct atoll_image_info *info)
{
	struct img_header *h;
	int r;

	if (!io || !info || info->size_of < sizeof(size_t))
		return -EINVAL;
	if (img_check_name(name))
		return -EINVAL;
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	r = img_header_read_name(io, name, h);
	if (!r)
		img_fill_info(h, h->size, info);
	free(h);
	return r;
}

int atoll_image_break_lock(struct atoll_ioctx *io, const char *name, unsigned flags)
{
	struct img_header *h;
	struct img_lockval lv;
	char oid[IMG_OID_MAX];
	int r, tries;

	if (!io || flags || img_check_name(name))
		return -EINVAL;
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	/* A renewal may change the value between our read and our guarded
	 * write; once the holder is blocklisted its renewals stop, so a few
	 * rounds settle it. */
	for (tries = 0; tries < 20; tries++) {
		struct atoll_op *op;

		r = img_header_read_name(io, name, h);
		if (r)
			break;
		if (img_lock_parse(h->lock, &lv)) {
			r = 0;		/* nobody holds it */
			break;
		}
		r = img_blocklist(atoll_ioctx_get_cluster(io), lv.client);
		if (r)
			break;
		op = atoll_op_create(0);
		r = -ENOMEM;
		if (!op)
			break;
		img_oid_header(oid, h->id);
		atoll_op_cmpxattr(op, "lock", ATOLL_CMP_EQ, h->lock, strlen(h->lock));
		atoll_op_setxattr(op, "lock", "none", 4);
		r = atoll_op_operate(op, io, oid, 0);
		atoll_op_release(op);
		if (r != -ECANCELED)
			break;
	}
	free(h);
	return r;
}
