/*
 * ops.c - the simple object calls (write, read, stat, xattrs, omap ...),
 * each one a compound op of a single step.
 *
 * Building them on atoll_op keeps one path to the OSD: the same checks,
 * the same resend logic, the same output decoding.  The asynchronous form
 * owns a private atoll_op that is freed with the request; a step whose
 * result is not the op's result (bytes read, an attribute's length) sets
 * a post hook that turns the step's output into it.  The synchronous
 * forms are "issue, wait, release" over the asynchronous ones, as the
 * header promises.
 */
#include "client.h"

#include <errno.h>
#include <stdlib.h>

/* Submits a single-step op built by the caller (taking it over). */
static int submit_own(struct atoll_ioctx *io, const char *oid,
		      struct atoll_completion *comp, struct atoll_op *op,
		      int64_t (*post)(struct client_req *, int64_t))
{
	struct client_req *req;
	int r;

	if (!op)
		return -ENOMEM;
	r = client_op_check(op);
	if (r < 0)
		goto out_release;
	req = client_req_new(io, oid, op, true, comp);
	if (!req) {
		r = -ENOMEM;
		goto out_release;
	}
	req->post = post;
	return client_submit(io->c, req);

out_release:
	atoll_op_release(op);
	return r;
}

/* The checks every object call shares; call names it in the message
 * atoll_last_error() returns.  No object call knows a flag yet. */
static int check_call(const char *call, struct atoll_ioctx *io, const char *oid,
		      struct atoll_completion *comp, unsigned flags)
{
	int r;

	if (!io || !comp)
		return atoll__error(-EINVAL, "%s: %s is NULL", call, io ? "comp" : "io");
	r = atoll__check_flags(call, flags, 0);
	if (r < 0)
		return r;
	r = client_check_oid(oid);
	if (r < 0)
		return atoll__error(r, "%s: bad object name: %s", call, atoll_strerror(r));
	return 0;
}

/* Waits for an async call issued with a private completion. */
static int64_t run_sync(struct atoll_completion *comp, int issued)
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
		r_ = run_sync(comp_, (call)); \
	r_; \
})

/* SYNC for a synchronous call named name whose flags the asynchronous
 * call checks: refused flags are reported under the name the caller
 * used. */
#define SYNC_FLAGS(name, flags, call) \
	((int64_t)atoll__check_flags(name, flags, 0) ?: SYNC(call))

static int64_t post_bytes(struct client_req *r, int64_t result)
{
	return result < 0 ? result : r->op->outs[0].got;
}

static int64_t post_xattr(struct client_req *r, int64_t result)
{
	const struct client_out *o = &r->op->outs[0];

	if (result < 0)
		return result;
	if ((size_t)o->got > o->len)
		return -ERANGE;
	return o->got;
}

/* ---- asynchronous ---- */

int atoll_aio_write(struct atoll_ioctx *io, const char *oid,
		    struct atoll_completion *comp,
		    const void *buf, size_t len, uint64_t off, unsigned flags)
{
	struct atoll_op *op;
	int r = check_call("atoll_aio_write", io, oid, comp, flags);

	if (r < 0)
		return r;
	op = atoll_op_create(0);
	if (op)
		atoll_op_write(op, buf, len, off);
	return submit_own(io, oid, comp, op, NULL);
}

int atoll_aio_write_full(struct atoll_ioctx *io, const char *oid,
			 struct atoll_completion *comp, const void *buf, size_t len,
			 unsigned flags)
{
	struct atoll_op *op;
	int r = check_call("atoll_aio_write_full", io, oid, comp, flags);

	if (r < 0)
		return r;
	op = atoll_op_create(0);
	if (op)
		atoll_op_write_full(op, buf, len);
	return submit_own(io, oid, comp, op, NULL);
}

int atoll_aio_append(struct atoll_ioctx *io, const char *oid,
		     struct atoll_completion *comp, const void *buf, size_t len,
		     unsigned flags)
{
	struct atoll_op *op;
	int r = check_call("atoll_aio_append", io, oid, comp, flags);

	if (r < 0)
		return r;
	op = atoll_op_create(0);
	if (op)
		atoll_op_append(op, buf, len);
	return submit_own(io, oid, comp, op, NULL);
}

int atoll_aio_read(struct atoll_ioctx *io, const char *oid,
		   struct atoll_completion *comp, void *buf, size_t len, uint64_t off,
		   unsigned flags)
{
	struct atoll_op *op;
	int r = check_call("atoll_aio_read", io, oid, comp, flags);

	if (r < 0)
		return r;
	op = atoll_op_create(0);
	if (op)
		atoll_op_read(op, off, len, buf, NULL, NULL);
	return submit_own(io, oid, comp, op, post_bytes);
}

int atoll_aio_stat(struct atoll_ioctx *io, const char *oid,
		   struct atoll_completion *comp, uint64_t *size, uint64_t *mtime_ns,
		   unsigned flags)
{
	struct atoll_op *op;
	int r = check_call("atoll_aio_stat", io, oid, comp, flags);

	if (r < 0)
		return r;
	op = atoll_op_create(0);
	if (op)
		atoll_op_stat(op, size, mtime_ns, NULL);
	return submit_own(io, oid, comp, op, NULL);
}

int atoll_aio_remove(struct atoll_ioctx *io, const char *oid,
		     struct atoll_completion *comp, unsigned flags)
{
	struct atoll_op *op;
	int r = check_call("atoll_aio_remove", io, oid, comp, flags);

	if (r < 0)
		return r;
	op = atoll_op_create(0);
	if (op)
		atoll_op_remove(op);
	return submit_own(io, oid, comp, op, NULL);
}

int atoll_aio_truncate(struct atoll_ioctx *io, const char *oid,
		       struct atoll_completion *comp, uint64_t size, unsigned flags)
{
	struct atoll_op *op;
	int r = check_call("atoll_aio_truncate", io, oid, comp, flags);

	if (r < 0)
		return r;
	op = atoll_op_create(0);
	if (op)
		atoll_op_truncate(op, size);
	return submit_own(io, oid, comp, op, NULL);
}

/* ---- synchronous ---- */

int atoll_write(struct atoll_ioctx *io, const char *oid,
		const void *buf, size_t len, uint64_t off, unsigned flags)
{
	return (int)SYNC_FLAGS("atoll_write", flags,
			atoll_aio_write(io, oid, comp_, buf, len, off, flags));
}

int atoll_write_full(struct atoll_ioctx *io, const char *oid,
		     const void *buf, size_t len, unsigned flags)
{
	return (int)SYNC_FLAGS("atoll_write_full", flags,
			atoll_aio_write_full(io, oid, comp_, buf, len, flags));
}

int atoll_append(struct atoll_ioctx *io, const char *oid,
		 const void *buf, size_t len, unsigned flags)
{
	return (int)SYNC_FLAGS("atoll_append", flags,
			atoll_aio_append(io, oid, comp_, buf, len, flags));
}

int64_t atoll_read(struct atoll_ioctx *io, const char *oid,
		   void *buf, size_t len, uint64_t off, unsigned flags)
{
	return SYNC_FLAGS("atoll_read", flags,
			atoll_aio_read(io, oid, comp_, buf, len, off, flags));
}

int atoll_stat(struct atoll_ioctx *io, const char *oid,
	       uint64_t *size, uint64_t *mtime_ns, unsigned flags)
{
	return (int)SYNC_FLAGS("atoll_stat", flags,
			atoll_aio_stat(io, oid, comp_, size, mtime_ns, flags));
}

int atoll_remove(struct atoll_ioctx *io, const char *oid, unsigned flags)
{
	return (int)SYNC_FLAGS("atoll_remove", flags,
			atoll_aio_remove(io, oid, comp_, flags));
}

int atoll_truncate(struct atoll_ioctx *io, const char *oid, uint64_t size, unsigned flags)
{
	return (int)SYNC_FLAGS("atoll_truncate", flags,
			atoll_aio_truncate(io, oid, comp_, size, flags));
}

/* ---- attributes ---- */

static int aio_getxattr(struct atoll_ioctx *io, const char *oid,
			struct atoll_completion *comp, const char *name,
			void *buf, size_t len, unsigned flags)
{
	struct atoll_op *op;
	int r = check_call("atoll_getxattr", io, oid, comp, flags);

	if (r < 0)
		return r;
	if (len && !buf)
		return -EINVAL;
	op = atoll_op_create(0);
	if (op) {
		atoll_op_getxattr(op, name, NULL, NULL);
		if (!op->err) {
			op->outs[0].kind = OUT_XATTR_BUF;
			op->outs[0].buf = buf;
			op->outs[0].len = len;
		}
	}
	return submit_own(io, oid, comp, op, post_xattr);
}

int64_t atoll_getxattr(struct atoll_ioctx *io, const char *oid, const char *name,
		       void *buf, size_t len, unsigned flags)
{
	return SYNC(aio_getxattr(io, oid, comp_, name, buf, len, flags));
}

/* Issues op (taking it over) for the synchronous call named call. */
static int aio_one_op(const char *call, struct atoll_ioctx *io, const char *oid,
		      struct atoll_completion *comp, struct atoll_op *op, unsigned flags)
{
	int r = check_call(call, io, oid, comp, flags);

	if (r < 0) {
		atoll_op_release(op);
		return r;
	}
	return submit_own(io, oid, comp, op, NULL);
}

int atoll_setxattr(struct atoll_ioctx *io, const char *oid, const char *name,
		   const void *val, size_t len, unsigned flags)
{
	struct atoll_op *op = atoll_op_create(0);

	if (op)
		atoll_op_setxattr(op, name, val, len);
	return (int)SYNC(aio_one_op("atoll_setxattr", io, oid, comp_, op, flags));
}

int atoll_rmxattr(struct atoll_ioctx *io, const char *oid, const char *name,
		  unsigned flags)
{
	struct atoll_op *op = atoll_op_create(0);

	if (op)
		atoll_op_rmxattr(op, name);
	return (int)SYNC(aio_one_op("atoll_rmxattr", io, oid, comp_, op, flags));
}

int atoll_getxattrs(struct atoll_ioctx *io, const char *oid, struct atoll_kv_iter **out,
		    unsigned flags)
{
	struct atoll_op *op;
	struct osd_subop *s;

	if (!out)
		return -EINVAL;
	*out = NULL;
	op = atoll_op_create(0);
	/* no public builder: a read step of its own */
	if (op && (s = client_op_add(op, OSD_OP_GETXATTRS))) {
		op->outs[op->nops - 1] = (struct client_out){ .kind = OUT_KV_ITER, .iter = out };
		op->has_read = true;
	}
	return (int)SYNC(aio_one_op("atoll_getxattrs", io, oid, comp_, op, flags));
}

/* ---- key/value maps ---- */

int atoll_omap_set(struct atoll_ioctx *io, const char *oid,
		   const struct atoll_kv *kv, size_t n, unsigned flags)
{
	struct atoll_op *op = atoll_op_create(0);

	if (op)
		atoll_op_omap_set(op, kv, n);
	return (int)SYNC(aio_one_op("atoll_omap_set", io, oid, comp_, op, flags));
}

int atoll_omap_get(struct atoll_ioctx *io, const char *oid,
		   const struct atoll_kv *keys, size_t n, struct atoll_kv_iter **out,
		   unsigned flags)
{
	struct atoll_op *op;

	if (!out)
		return -EINVAL;
	*out = NULL;
	op = atoll_op_create(0);
	if (op)
		atoll_op_omap_get(op, keys, n, out, NULL);
	return (int)SYNC(aio_one_op("atoll_omap_get", io, oid, comp_, op, flags));
}

int atoll_omap_list(struct atoll_ioctx *io, const char *oid,
		    const void *after, size_t afterlen, size_t max,
		    struct atoll_kv_iter **out, int *more, unsigned flags)
{
	struct atoll_op *op;

	if (!out)
		return -EINVAL;
	*out = NULL;
	op = atoll_op_create(0);
	if (op)
		atoll_op_omap_list(op, after, afterlen, max, out, more, NULL);
	return (int)SYNC(aio_one_op("atoll_omap_list", io, oid, comp_, op, flags));
}

int atoll_omap_rm(struct atoll_ioctx *io, const char *oid,
		  const struct atoll_kv *keys, size_t n, unsigned flags)
{
	struct atoll_op *op = atoll_op_create(0);

	if (op)
		atoll_op_omap_rm(op, keys, n);
	return (int)SYNC(aio_one_op("atoll_omap_rm", io, oid, comp_, op, flags));
}

int atoll_omap_clear(struct atoll_ioctx *io, const char *oid, unsigned flags)
{
	struct atoll_op *op = atoll_op_create(0);

	if (op)
		atoll_op_omap_clear(op);
	return (int)SYNC(aio_one_op("atoll_omap_clear", io, oid, comp_, op, flags));
}
