/*
 * header.c - an image's header object: its JSON encoding, and reading and
 * writing it.  The header is small (size, object size, snapshots) and is
 * rewritten whole; every rewrite is one compound op guarded by the writer
 * lock (the "lock" xattr must still hold exactly the value the writer
 * set), so a writer whose lock was broken cannot change it any more.
 */
#include "image-int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HDR_READ_MAX (1u << 20)

static cJSON *num(uint64_t v)
{
	/* decimal strings keep 64-bit values exact */
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return cJSON_CreateString(buf);
}

static int get_u64(const cJSON *o, const char *k, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	char *end;

	if (!cJSON_IsString(v) || !v->valuestring[0])
		return -EBADMSG;
	*out = strtoull(v->valuestring, &end, 10);
	return *end ? -EBADMSG : 0;
}

static int get_str(const cJSON *o, const char *k, char *out, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsString(v) || strlen(v->valuestring) >= len)
		return -EBADMSG;
	strcpy(out, v->valuestring);
	return 0;
}

char *img_header_encode(const struct img_header *h)
{
	cJSON *o = cJSON_CreateObject(), *a;
	char *s = NULL;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "format", 1);
	cJSON_AddStringToObject(o, "name", h->name);
	cJSON_AddStringToObject(o, "id", h->id);
	cJSON_AddItemToObject(o, "size", num(h->size));
	cJSON_AddItemToObject(o, "object_size", num(h->object_size));
	cJSON_AddItemToObject(o, "features", num(h->features));
	cJSON_AddItemToObject(o, "created_ns", num(h->created_ns));
	cJSON_AddItemToObject(o, "snap_seq", num(h->snap_seq));
	a = cJSON_AddArrayToObject(o, "snaps");
	for (uint32_t i = 0; a && i < h->nsnaps; i++) {
		cJSON *sn = cJSON_CreateObject();

		if (!sn)
			break;
		cJSON_AddItemToObject(sn, "id", num(h->snaps[i].id));
		cJSON_AddStringToObject(sn, "name", h->snaps[i].name);
		cJSON_AddItemToObject(sn, "size", num(h->snaps[i].size));
		cJSON_AddItemToObject(sn, "created_ns", num(h->snaps[i].created_ns));
		cJSON_AddItemToArray(a, sn);
	}
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* Checks what the rest of the library relies on: a valid object size, a
 * size that fits, snapshots with growing ids no newer than snap_seq. */
int img_header_decode(const char *buf, size_t len, struct img_header *h)
{
	cJSON *o = cJSON_ParseWithLength(buf, len);
	const cJSON *a, *sn;
	uint64_t prev = 0;
	int r = -EBADMSG;

	memset(h, 0, sizeof(*h) - sizeof(h->lock) - sizeof(h->version));
	if (!o)
		return -EBADMSG;
	if (get_str(o, "name", h->name, sizeof(h->name)) || get_str(o, "id", h->id, sizeof(h->id)) ||
	    get_u64(o, "size", &h->size) || get_u64(o, "object_size", &h->object_size) ||
	    get_u64(o, "features", &h->features) || get_u64(o, "created_ns", &h->created_ns) ||
	    get_u64(o, "snap_seq", &h->snap_seq))
		goto out;
	if (!img_valid_object_size(h->object_size) || h->size > ATOLL_IMAGE_MAX_SIZE)
		goto out;
	a = cJSON_GetObjectItemCaseSensitive(o, "snaps");
	if (!cJSON_IsArray(a))
		goto out;
	cJSON_ArrayForEach(sn, a) {
		struct img_snap *s;

		if (h->nsnaps >= IMG_SNAPS_MAX)
			goto out;
		s = &h->snaps[h->nsnaps];
		if (get_u64(sn, "id", &s->id) || get_str(sn, "name", s->name, sizeof(s->name)) ||
		    get_u64(sn, "size", &s->size) || get_u64(sn, "created_ns", &s->created_ns))
			goto out;
		if (s->id <= prev || s->id > h->snap_seq || s->size > ATOLL_IMAGE_MAX_SIZE)
			goto out;
		prev = s->id;
		h->nsnaps++;
	}
	r = 0;
out:
	cJSON_Delete(o);
	return r;
}

int img_header_read(struct atoll_ioctx *io, const char *id, struct img_header *h)
{
	char oid[IMG_OID_MAX];
	struct atoll_op *op = atoll_op_create(0);
	struct atoll_completion *comp = NULL;
	struct atoll_kv_iter *xa = NULL;
	size_t n = 0;
	char *buf = malloc(HDR_READ_MAX);
	const void *k, *v;
	size_t kl, vl;
	int r = -ENOMEM;

	if (!op || !buf)
		goto out;
	img_oid_header(oid, id);
	atoll_op_read(op, 0, HDR_READ_MAX, buf, &n, NULL);
	atoll_op_getxattr(op, "lock", &xa, NULL);
	r = atoll_completion_create(NULL, NULL, NULL, &comp);
	if (r)
		goto out;
	r = atoll_aio_op_operate(op, io, oid, comp, 0);
	if (r)
		goto out;
	r = (int)atoll_completion_wait(comp);
	if (r < 0)
		goto out;
	r = img_header_decode(buf, n, h);
	if (r)
		goto out;
	h->version = atoll_completion_version(comp);
	h->lock[0] = 0;
	if (xa && atoll_kv_iter_next(xa, &k, &kl, &v, &vl) == 0) {
		if (vl >= sizeof(h->lock)) {
			r = -EBADMSG;
			goto out;
		}
		memcpy(h->lock, v, vl);
		h->lock[vl] = 0;
	}
out:
	atoll_kv_iter_free(xa);
	atoll_completion_release(comp);
	atoll_op_release(op);
	free(buf);
	return r;
}

int img_header_read_name(struct atoll_ioctx *io, const char *name, struct img_header *h)
{
	char oid[IMG_OID_MAX], id[32];
	int64_t n;

	if (img_check_name(name))
		return -EINVAL;
	img_oid_id(oid, name);
	n = atoll_read(io, oid, id, sizeof(id) - 1, 0, 0);
	if (n < 0)
		return (int)n;
	if (n != 16)
		return -EBADMSG;
	id[n] = 0;
	return img_header_read(io, id, h);
}

int img_header_write(struct atoll_ioctx *io, const struct img_header *h)
{
	char oid[IMG_OID_MAX];
	struct atoll_op *op;
	char *s = img_header_encode(h);
	int r = -ENOMEM;

	op = atoll_op_create(0);
	if (!s || !op)
		goto out;
	img_oid_header(oid, h->id);
	atoll_op_cmpxattr(op, "lock", ATOLL_CMP_EQ, h->lock, strlen(h->lock));
	atoll_op_write_full(op, s, strlen(s));
	r = atoll_op_operate(op, io, oid, 0);
out:
	atoll_op_release(op);
	free(s);
	return r;
}

int img_lock_parse(const char *s, struct img_lockval *lv)
{
	memset(lv, 0, sizeof(*lv));
	if (!s[0] || !strcmp(s, "none"))
		return -ENOENT;
	if (sscanf(s, "client=%" SCNu64 " expires=%" SCNu64 " cookie=%" SCNx64,
		   &lv->client, &lv->expires_ns, &lv->cookie) != 3)
		return -EBADMSG;
	return 0;
}

void img_lock_format(char *out, const struct img_lockval *lv)
{
	snprintf(out, IMG_LOCK_MAX, "client=%" PRIu64 " expires=%" PRIu64 " cookie=%016" PRIx64,
		 lv->client, lv->expires_ns, lv->cookie);
}

const struct img_snap *img_snap_by_name(const struct img_header *h, const char *name)
{
	for (uint32_t i = 0; i < h->nsnaps; i++)
		if (!strcmp(h->snaps[i].name, name))
			return &h->snaps[i];
	return NULL;
}
