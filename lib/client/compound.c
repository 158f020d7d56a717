/*
 * compound.c - atoll_op: several sub-ops on one object, applied by the
 * primary OSD atomically and in order (atoll_op_* builders, operate).
 *
 * A builder appends one struct osd_subop (proto.h) that points at the
 * caller's buffers (they stay valid until the op completes, as the header
 * says) and, for reads, a struct client_out naming where the result goes.
 * Builders cannot return errors, so the first one is kept in op->err and
 * operate returns it; every limit the OSD enforces is checked here first
 * so that a bad call fails at once with a precise errno instead of after
 * a round trip.  Outputs are decoded into the caller's pointers once,
 * when the reply arrives (client_op_fill).
 */
#include "client.h"
#include "encode.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int client_check_oid(const char *oid)
{
	size_t n;

	if (!oid || !*oid)
		return -EINVAL;
	n = strnlen(oid, PROTO_OID_MAX + 1);
	return n > PROTO_OID_MAX ? -ENAMETOOLONG : 0;
}

int client_check_xattr_name(const char *name)
{
	size_t n;

	if (!name || !*name)
		return -EINVAL;
	n = strnlen(name, PROTO_XATTR_NAME_MAX + 1);
	return n > PROTO_XATTR_NAME_MAX ? -ENAMETOOLONG : 0;
}

struct atoll_op *atoll_op_create(unsigned flags)
{
	struct atoll_op *op;

	if (atoll__check_flags("atoll_op_create", flags, 0) < 0) {
		errno = EINVAL;
		return NULL;
	}
	/* Only the header is zeroed: the sub-op slots (~12 KiB) are set as
	 * client_op_add() takes them, so a one-write op touches one of 64. */
	op = malloc(sizeof(struct atoll_op));
	if (op)
		memset(op, 0, offsetof(struct atoll_op, ops));
	if (!op)
		atoll__error(-ENOMEM, "atoll_op_create: out of memory");
	return op;
}

void client_op_clear(struct atoll_op *op)
{
	for (uint32_t i = 0; i < op->nops; i++) {
		free(op->ops[i].kv);
		op->ops[i].kv = NULL;
		free(op->strs[i]);
		op->strs[i] = NULL;
	}
}

void atoll_op_release(struct atoll_op *op)
{
	if (!op)
		return;
	client_op_clear(op);
	free(op);
}

static void op_fail(struct atoll_op *op, int err)
{
	if (!op->err)
		op->err = err;
}

struct osd_subop *client_op_add(struct atoll_op *op, uint16_t code)
{
	struct osd_subop *s;

	if (op->err)
		return NULL;
	if (op->nops >= PROTO_OPS_MAX) {
		op_fail(op, -E2BIG);
		return NULL;
	}
	s = &op->ops[op->nops];
	memset(s, 0, sizeof(*s));
	memset(&op->outs[op->nops], 0, sizeof(op->outs[0]));
	op->strs[op->nops] = NULL;
	s->code = code;
	op->nops++;
	if (osd_op_is_write(code))
		op->has_write = true;
	return s;
}

static struct client_out *op_out(struct atoll_op *op, struct osd_subop *s)
{
	op->has_read = true;
	return &op->outs[s - op->ops];
}

/* Attaches a copy of an xattr name to s (checked). */
static void op_name(struct atoll_op *op, struct osd_subop *s, const char *name)
{
	int r = client_check_xattr_name(name);
	char *copy;

	if (r < 0) {
		op_fail(op, r);
		return;
	}
	copy = strdup(name);
	if (!copy) {
		op_fail(op, -ENOMEM);
		return;
	}
	op->strs[s - op->ops] = copy;
	s->name = copy;
	s->name_len = (uint32_t)strlen(copy);
	op->payload += s->name_len;
}

static void op_data(struct atoll_op *op, struct osd_subop *s, const void *buf,
		    size_t len)
{
	if (len && !buf) {
		op_fail(op, -EINVAL);
		return;
	}
	if (len > CLIENT_PAYLOAD_MAX) {
		op_fail(op, -E2BIG);
		return;
	}
	s->data = len ? buf : NULL;
	s->data_len = (uint32_t)len;
	s->len = len;
	op->payload += len;
}

/* Copies a caller's kv array into s (keys checked; values only when
 * with_vals). */
static void op_kv(struct atoll_op *op, struct osd_subop *s,
		  const struct atoll_kv *kv, size_t n, bool with_vals)
{
	if (n && !kv) {
		op_fail(op, -EINVAL);
		return;
	}
	if (n > CLIENT_KV_MAX || op->nkv + n > CLIENT_KV_MAX) {
		op_fail(op, -E2BIG);
		return;
	}
	if (!n)
		return;
	s->kv = calloc(n, sizeof(*s->kv));
	if (!s->kv) {
		op_fail(op, -ENOMEM);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!kv[i].key || !kv[i].klen) {
			op_fail(op, -EINVAL);
			return;
		}
		if (kv[i].klen > PROTO_OMAP_KEY_MAX) {
			op_fail(op, -ENAMETOOLONG);
			return;
		}
		s->kv[i].key = kv[i].key;
		s->kv[i].klen = (uint32_t)kv[i].klen;
		op->payload += kv[i].klen;
		if (with_vals) {
			if (kv[i].vlen && !kv[i].val) {
				op_fail(op, -EINVAL);
				return;
			}
			if (kv[i].vlen > CLIENT_PAYLOAD_MAX) {
				op_fail(op, -E2BIG);
				return;
			}
			s->kv[i].val = kv[i].vlen ? kv[i].val : "";
			s->kv[i].vlen = (uint32_t)kv[i].vlen;
			op->payload += kv[i].vlen;
		}
	}
	s->nkv = (uint32_t)n;
	op->nkv += (uint32_t)n;
}

/* ---- guards ---- */

void atoll_op_assert_exists(struct atoll_op *op)
{
	if (op)
		client_op_add(op, OSD_OP_ASSERT_EXISTS);
}

void atoll_op_assert_version(struct atoll_op *op, uint64_t ver)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_ASSERT_VERSION)))
		return;
	s->off = ver;
}

void atoll_op_create_object(struct atoll_op *op, int exclusive)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_CREATE)))
		return;
	if (exclusive)
		s->flags = OSD_OPF_EXCL;
}

void atoll_op_cmpxattr(struct atoll_op *op, const char *name, enum atoll_cmp cmp,
		       const void *val, size_t len)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_CMPXATTR)))
		return;
	if (cmp < ATOLL_CMP_EQ || cmp > ATOLL_CMP_LE || (len && !val)) {
		op_fail(op, -EINVAL);
		return;
	}
	if (len > CLIENT_PAYLOAD_MAX) {
		op_fail(op, -E2BIG);
		return;
	}
	op_name(op, s, name);
	/* enum atoll_cmp and enum osd_cmp share their values */
	s->off = (uint64_t)cmp;
	s->val = len ? val : "";
	s->val_len = (uint32_t)len;
	op->payload += len;
}

/* ---- changes ---- */

static void check_extent(struct atoll_op *op, uint64_t off, uint64_t len)
{
	if (off > CLIENT_OBJECT_MAX || len > CLIENT_OBJECT_MAX - off)
		op_fail(op, -EFBIG);
}

void atoll_op_write(struct atoll_op *op, const void *buf, size_t len, uint64_t off)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_WRITE)))
		return;
	op_data(op, s, buf, len);
	check_extent(op, off, len);
	s->off = off;
}

void atoll_op_write_full(struct atoll_op *op, const void *buf, size_t len)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_WRITE_FULL)))
		return;
	op_data(op, s, buf, len);
	check_extent(op, 0, len);
}

void atoll_op_append(struct atoll_op *op, const void *buf, size_t len)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_APPEND)))
		return;
	op_data(op, s, buf, len);
	check_extent(op, 0, len);
}

void atoll_op_truncate(struct atoll_op *op, uint64_t size)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_TRUNCATE)))
		return;
	check_extent(op, size, 0);
	s->off = size;
}

void atoll_op_zero(struct atoll_op *op, uint64_t off, uint64_t len)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_ZERO)))
		return;
	check_extent(op, off, len);
	s->off = off;
	s->len = len;
}

void atoll_op_remove(struct atoll_op *op)
{
	if (op)
		client_op_add(op, OSD_OP_REMOVE);
}

void atoll_op_setxattr(struct atoll_op *op, const char *name, const void *val, size_t len)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_SETXATTR)))
		return;
	op_name(op, s, name);
	if (len && !val) {
		op_fail(op, -EINVAL);
		return;
	}
	if (len > CLIENT_PAYLOAD_MAX) {
		op_fail(op, -E2BIG);
		return;
	}
	s->val = len ? val : "";
	s->val_len = (uint32_t)len;
	op->payload += len;
}

void atoll_op_rmxattr(struct atoll_op *op, const char *name)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_RMXATTR)))
		return;
	op_name(op, s, name);
}

void atoll_op_omap_set(struct atoll_op *op, const struct atoll_kv *kv, size_t n)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_OMAP_SET)))
		return;
	op_kv(op, s, kv, n, true);
}

void atoll_op_omap_rm(struct atoll_op *op, const struct atoll_kv *keys, size_t n)
{
	struct osd_subop *s;

	if (!op || !(s = client_op_add(op, OSD_OP_OMAP_RM)))
		return;
	op_kv(op, s, keys, n, false);
}

void atoll_op_omap_clear(struct atoll_op *op)
{
	if (op)
		client_op_add(op, OSD_OP_OMAP_CLEAR);
}

/* ---- reads ---- */

void atoll_op_read(struct atoll_op *op, uint64_t off, size_t len, void *buf,
		   size_t *bytes_read, int *rval)
{
	struct osd_subop *s;
	struct client_out *o;

	if (!op || !(s = client_op_add(op, OSD_OP_READ)))
		return;
	o = op_out(op, s);
	if (len && !buf) {
		op_fail(op, -EINVAL);
		return;
	}
	if (len > CLIENT_PAYLOAD_MAX) {
		op_fail(op, -E2BIG);
		return;
	}
	s->off = off;
	s->len = len;
	/* the reply carries the bytes: count them against the payload */
	op->payload += len;
	*o = (struct client_out){ .kind = OUT_READ, .rval = rval, .buf = buf,
				  .len = len, .bytes_read = bytes_read };
}

void atoll_op_stat(struct atoll_op *op, uint64_t *size, uint64_t *mtime_ns, int *rval)
{
	struct osd_subop *s;
	struct client_out *o;

	if (!op || !(s = client_op_add(op, OSD_OP_STAT)))
		return;
	o = op_out(op, s);
	*o = (struct client_out){ .kind = OUT_STAT, .rval = rval, .size = size,
				  .mtime_ns = mtime_ns };
}

void atoll_op_getxattr(struct atoll_op *op, const char *name,
		       struct atoll_kv_iter **out, int *rval)
{
	struct osd_subop *s;
	struct client_out *o;

	if (!op || !(s = client_op_add(op, OSD_OP_GETXATTR)))
		return;
	o = op_out(op, s);
	op_name(op, s, name);
	*o = (struct client_out){ .kind = OUT_XATTR_ITER, .rval = rval, .iter = out,
				  .name = s->name };
	if (out)
		*out = NULL;
}

void atoll_op_omap_list(struct atoll_op *op, const void *after, size_t afterlen,
			size_t max, struct atoll_kv_iter **out, int *more, int *rval)
{
	struct osd_subop *s;
	struct client_out *o;

	if (!op || !(s = client_op_add(op, OSD_OP_OMAP_GET)))
		return;
	o = op_out(op, s);
	if ((afterlen && !after) || afterlen > PROTO_OMAP_KEY_MAX) {
		op_fail(op, afterlen > PROTO_OMAP_KEY_MAX ? -ENAMETOOLONG : -EINVAL);
		return;
	}
	if (max == 0)
		max = 1000;
	if (max > CLIENT_KV_MAX)
		max = CLIENT_KV_MAX;
	s->name = afterlen ? after : NULL;
	s->name_len = (uint32_t)afterlen;
	s->len = max;
	*o = (struct client_out){ .kind = OUT_KV_ITER, .rval = rval, .iter = out,
				  .more = more };
	if (out)
		*out = NULL;
	if (more)
		*more = 0;
}

void atoll_op_omap_get(struct atoll_op *op, const struct atoll_kv *keys, size_t n,
		       struct atoll_kv_iter **out, int *rval)
{
	struct osd_subop *s;
	struct client_out *o;

	if (!op || !(s = client_op_add(op, OSD_OP_OMAP_GET_KEYS)))
		return;
	o = op_out(op, s);
	op_kv(op, s, keys, n, false);
	*o = (struct client_out){ .kind = OUT_KV_ITER, .rval = rval, .iter = out };
	if (out)
		*out = NULL;
}

/* ---- sending and results ---- */

int client_op_check(const struct atoll_op *op)
{
	if (!op)
		return -EINVAL;
	if (op->err)
		return op->err;
	if (!op->nops)
		return -EINVAL;
	if (op->has_write && op->has_read)
		return -EINVAL;
	if (op->payload > CLIENT_PAYLOAD_MAX)
		return -E2BIG;
	if (op->nkv > CLIENT_KV_MAX)
		return -E2BIG;
	return 0;
}

static int fill_one(struct client_out *o, const uint8_t *p, size_t n)
{
	struct dec d;
	size_t c;

	switch (o->kind) {
	case OUT_NONE:
		return 0;
	case OUT_READ:
		c = n < o->len ? n : o->len;
		if (c && p != o->buf)	/* not received into it already */
			memcpy(o->buf, p, c);
		if (o->bytes_read)
			*o->bytes_read = c;
		o->got = (int64_t)c;
		return 0;
	case OUT_STAT: {
		uint64_t size, mtime;

		dec_init(&d, p, n);
		size = dec_u64(&d);
		mtime = dec_u64(&d);
		if (d.err)
			return -EBADMSG;
		if (o->size)
			*o->size = size;
		if (o->mtime_ns)
			*o->mtime_ns = mtime;
		return 0;
	}
	case OUT_XATTR_ITER:
		o->got = (int64_t)n;
		if (!o->iter)
			return 0;
		return client_kv_iter_one(o->name, strlen(o->name), p, n, o->iter);
	case OUT_XATTR_BUF:
		o->got = (int64_t)n;
		if (n <= o->len && n)
			memcpy(o->buf, p, n);
		return 0;
	case OUT_KV_ITER:
	case OUT_NAMES: {
		struct atoll_kv_iter *it = NULL;
		int more = 0, r;

		r = client_kv_iter_decode(p, n, &it, &more);
		if (r < 0)
			return r;
		o->got = (int64_t)atoll_kv_iter_count(it);
		if (o->more)
			*o->more = more;
		if (o->iter)
			*o->iter = it;
		else
			atoll_kv_iter_free(it);
		return 0;
	}
	}
	return 0;
}

void client_op_fill(struct atoll_op *op, const struct osd_op_reply *r,
		    const uint8_t *data, size_t data_len)
{
	size_t pos = 0;

	for (uint32_t i = 0; i < op->nops; i++) {
		struct client_out *o = &op->outs[i];
		int rv = -EIO;
		uint32_t n = 0;

		if (r && i < r->nops) {
			rv = r->rvals[i];
			n = r->out_lens[i];
			if (n > data_len - pos) {
				rv = -EBADMSG;
				n = 0;
			}
		}
		if (rv >= 0 && o->kind != OUT_NONE) {
			int fr = fill_one(o, data + pos, n);

			if (fr < 0)
				rv = fr;
		}
		pos += n;
		if (o->rval)
			*o->rval = rv;
	}
}

int atoll_aio_op_operate(struct atoll_op *op, struct atoll_ioctx *io, const char *oid,
			 struct atoll_completion *comp, unsigned flags)
{
	struct client_req *req;
	int r;

	if (!io || !comp || flags)
		return -EINVAL;
	r = client_check_oid(oid);
	if (r < 0)
		return r;
	r = client_op_check(op);
	if (r < 0)
		return r;
	req = client_req_new(io, oid, op, false, comp);
	if (!req)
		return -ENOMEM;
	return client_submit(io->c, req);
}

int atoll_op_operate(struct atoll_op *op, struct atoll_ioctx *io, const char *oid,
		     unsigned flags)
{
	struct atoll_completion *comp;
	int64_t r;

	r = atoll_completion_create(NULL, NULL, NULL, &comp);
	if (r < 0)
		return (int)r;
	r = atoll_aio_op_operate(op, io, oid, comp, flags);
	if (r == 0)
		r = atoll_completion_wait(comp);
	atoll_completion_release(comp);
	return (int)r;
}
