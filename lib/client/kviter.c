/*
 * kviter.c - atoll_kv_iter: key/value results handed to the caller
 * (xattrs, omap entries, listing batches).
 *
 * An iterator owns one copy of the bytes it came from and an array of
 * entries pointing into that copy, so the reply message can be freed at
 * once and the pointers handed out stay valid until the iterator is
 * freed.  The OSD's kv list is "u32 n, then n x (blob key, blob value)",
 * optionally followed by "u8 more"; it is decoded with the bounded
 * decoder of encode.h, so a malformed list is -EBADMSG, never a crash.
 */
#include "client.h"
#include "encode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct kv_ent {
	const void *key;
	size_t klen;
	const void *val;
	size_t vlen;
};

struct atoll_kv_iter {
	size_t n;
	size_t pos;
	struct kv_ent *ents;
	uint8_t *bytes;		/* the copy the entries point into */
};

static const uint8_t empty_byte;

int client_kv_iter_decode(const void *p, size_t len, struct atoll_kv_iter **out,
			  int *more)
{
	struct atoll_kv_iter *it;
	struct dec d;
	uint32_t n;
	int r;

	*out = NULL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->bytes = malloc(len ? len : 1);
	if (!it->bytes) {
		r = -ENOMEM;
		goto out_free_it;
	}
	if (len)
		memcpy(it->bytes, p, len);
	dec_init(&d, it->bytes, len);
	/* each entry is at least two u32 lengths */
	n = dec_count(&d, UINT32_MAX, 8);
	if (d.err) {
		r = d.err;
		goto out_free_it;
	}
	it->ents = calloc(n ? n : 1, sizeof(*it->ents));
	if (!it->ents) {
		r = -ENOMEM;
		goto out_free_it;
	}
	for (uint32_t i = 0; i < n && !d.err; i++) {
		struct kv_ent *e = &it->ents[i];

		e->key = dec_blob(&d, &e->klen, UINT32_MAX);
		e->val = dec_blob(&d, &e->vlen, UINT32_MAX);
		if (!e->key)
			e->key = &empty_byte;
		if (!e->val)
			e->val = &empty_byte;
	}
	if (d.err) {
		r = d.err;
		goto out_free_it;
	}
	it->n = n;
	if (more)
		*more = dec_left(&d) ? dec_u8(&d) != 0 : 0;
	*out = it;
	return 0;

out_free_it:
	atoll_kv_iter_free(it);
	return r;
}

int client_kv_iter_one(const void *k, size_t klen, const void *v, size_t vlen,
		       struct atoll_kv_iter **out)
{
	struct atoll_kv_iter *it;

	*out = NULL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->ents = calloc(1, sizeof(*it->ents));
	it->bytes = malloc(klen + vlen + 1);
	if (!it->ents || !it->bytes) {
		atoll_kv_iter_free(it);
		return -ENOMEM;
	}
	if (klen)
		memcpy(it->bytes, k, klen);
	if (vlen)
		memcpy(it->bytes + klen, v, vlen);
	it->ents[0] = (struct kv_ent){ it->bytes, klen, it->bytes + klen, vlen };
	it->n = 1;
	*out = it;
	return 0;
}

int atoll_kv_iter_next(struct atoll_kv_iter *it, const void **key, size_t *klen,
		       const void **val, size_t *vlen)
{
	const struct kv_ent *e;

	if (!it)
		return -EINVAL;
	if (it->pos >= it->n)
		return -ENOENT;
	e = &it->ents[it->pos++];
	if (key)
		*key = e->key;
	if (klen)
		*klen = e->klen;
	if (val)
		*val = e->val;
	if (vlen)
		*vlen = e->vlen;
	return 0;
}

size_t atoll_kv_iter_count(const struct atoll_kv_iter *it)
{
	return it ? it->n : 0;
}

void atoll_kv_iter_free(struct atoll_kv_iter *it)
{
	if (!it)
		return;
	free(it->ents);
	free(it->bytes);
	free(it);
}
