/*
 * txn.c - building transactions.
 *
 * A transaction is a list of ops with their arguments copied in, so the
 * caller may reuse its buffers at once.  Builders check what can be
 * checked without the store (lengths, names); everything that depends on
 * the store's state is checked when the commit thread applies the ops.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store-int.h"

struct store_txn *store_txn_new(void)
{
	struct store_txn *t = calloc(1, sizeof(*t));

	if (t)
		t->frees_only = true;
	return t;
}

void prewrite_free(struct prewrite *pw)
{
	if (!pw)
		return;
	runvec_free(&pw->runs);
	free(pw->crc);
	free(pw->iocbs);
	free(pw);
}

void txn_op_free(struct op *op)
{
	prewrite_free(op->prew);
	op->prew = NULL;
	free(op->oid);
	if (!op->data_ref)
		free(op->data);
	free(op->key);
	free(op->crcs);
	op->crcs = NULL;
	if (op->release)
		op->release(op->release_arg);
	op->release = NULL;
}

void store_txn_free(struct store_txn *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		txn_op_free(&t->ops[i]);
	free(t->ops);
	free(t);
}

size_t store_txn_ops(const struct store_txn *t)
{
	return t ? t->n : 0;
}

int oid_check(const char *oid)
{
	if (!oid)
		return -EINVAL;
	size_t n = strnlen(oid, STORE_NAME_MAX + 1);

	if (n == 0)
		return -EINVAL;
	if (n > STORE_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* Appends an op; copies oid, data (dlen bytes) and key (klen bytes, plus
 * a NUL so attribute names stay strings). */
static int add_op(struct store_txn *t, enum op_type type, uint64_t coll, const char *oid,
		  const void *data, size_t dlen, const void *key, size_t klen)
{
	struct op *op;
	int r;

	if (!t)
		return -EINVAL;
	if (oid && (r = oid_check(oid)))
		return r;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4;
		struct op *v = realloc(t->ops, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->ops = v;
		t->cap = cap;
	}
	op = &t->ops[t->n];
	memset(op, 0, sizeof(*op));
	op->type = type;
	op->coll = coll;
	if (oid && !(op->oid = strdup(oid)))
		goto out_nomem;
	if (dlen && type != OP_WRITE) {
		/* attribute and omap values only go into the kv */
		if (!(op->data = malloc(dlen)))
			goto out_nomem;
		memcpy(op->data, data, dlen);
	} else if (dlen) {
		/* Aligned and padded to whole blocks, so that an aligned write
		 * can go to the device straight from here (write.c). */
		size_t padded = (dlen + STORE_BLOCK_SIZE - 1) / STORE_BLOCK_SIZE * STORE_BLOCK_SIZE;

		if (posix_memalign(&op->data, STORE_BLOCK_SIZE, padded)) {
			op->data = NULL;
			goto out_nomem;
		}
		memcpy(op->data, data, dlen);
		memset((char *)op->data + dlen, 0, padded - dlen);
	}
	op->len = dlen;
	if (key) {
		op->key = malloc(klen + 1);
		if (!op->key)
			goto out_nomem;
		memcpy(op->key, key, klen);
		((char *)op->key)[klen] = 0;
		op->klen = klen;
	}
	t->n++;
	if (type != OP_REMOVE && type != OP_RMATTR && type != OP_OMAP_RM &&
	    type != OP_OMAP_CLEAR && type != OP_COLL_REMOVE)
		t->frees_only = false;
	return 0;

out_nomem:
	txn_op_free(op);
	return -ENOMEM;
}

int store_txn_coll_create(struct store_txn *t, uint64_t coll, uint32_t flags)
{
	int r;

	if (flags & ~STORE_COLL_COMPRESS)
		return -EINVAL;
	r = add_op(t, OP_COLL_CREATE, coll, NULL, NULL, 0, NULL, 0);
	if (!r)
		t->ops[t->n - 1].flags = flags;
	return r;
}

int store_txn_coll_remove(struct store_txn *t, uint64_t coll)
{
	return add_op(t, OP_COLL_REMOVE, coll, NULL, NULL, 0, NULL, 0);
}

int store_txn_touch(struct store_txn *t, uint64_t coll, const char *oid)
{
	return add_op(t, OP_TOUCH, coll, oid ? oid : "", NULL, 0, NULL, 0);
}

int store_txn_create(struct store_txn *t, uint64_t coll, const char *oid)
{
	return add_op(t, OP_CREATE, coll, oid ? oid : "", NULL, 0, NULL, 0);
}

int store_txn_write(struct store_txn *t, uint64_t coll, const char *oid,
		    uint64_t off, const void *data, size_t len, uint32_t flags)
{
	int r;

	if ((flags & ~STORE_WRITE_COMPRESS) || (len && !data) || off + len < off)
		return -EINVAL;
	if (len > STORE_DEFAULT_OBJECT_MAX * 8)
		return -EFBIG;
	r = add_op(t, OP_WRITE, coll, oid ? oid : "", data, len, NULL, 0);
	if (!r) {
		t->ops[t->n - 1].off = off;
		t->ops[t->n - 1].flags = flags;
	}
	return r;
}

bool store_write_ref_ok(const void *data, uint64_t off, size_t len)
{
	return len && off % STORE_BLOCK_SIZE == 0 && len % STORE_BLOCK_SIZE == 0 &&
	       (uintptr_t)data % STORE_BLOCK_SIZE == 0;
}

int store_txn_write_ref(struct store_txn *t, uint64_t coll, const char *oid,
			uint64_t off, const void *data, size_t len, uint32_t flags,
			const uint32_t *crcs, void (*release)(void *arg), void *arg)
{
	struct op *op;
	int r;

	if (!store_write_ref_ok(data, off, len)) {
		r = store_txn_write(t, coll, oid, off, data, len, flags);
		if (release)
			release(arg);
		return r;
	}
	if ((flags & ~STORE_WRITE_COMPRESS) || off + len < off) {
		r = -EINVAL;
		goto out_release;
	}
	if (len > STORE_DEFAULT_OBJECT_MAX * 8) {
		r = -EFBIG;
		goto out_release;
	}
	/* the op without data, then the caller's bytes by reference */
	r = add_op(t, OP_WRITE, coll, oid ? oid : "", NULL, 0, NULL, 0);
	if (r)
		goto out_release;
	op = &t->ops[t->n - 1];
	op->data = (void *)data;
	op->data_ref = true;
	op->len = len;
	op->off = off;
	op->flags = flags;
	op->release = release;
	op->release_arg = arg;
	/* without room for them the blocks' crcs are computed */
	if (crcs && (op->crcs = malloc(len / STORE_BLOCK_SIZE * sizeof(uint32_t))))
		memcpy(op->crcs, crcs, len / STORE_BLOCK_SIZE * sizeof(uint32_t));
	return 0;

out_release:
	if (release)
		release(arg);
	return r;
}

int store_txn_zero(struct store_txn *t, uint64_t coll, const char *oid,
		   uint64_t off, uint64_t len)
{
	int r;

	if (off + len < off)
		return -EINVAL;
	r = add_op(t, OP_ZERO, coll, oid ? oid : "", NULL, 0, NULL, 0);
	if (!r) {
		t->ops[t->n - 1].off = off;
		t->ops[t->n - 1].len = len;
	}
	return r;
}

int store_txn_truncate(struct store_txn *t, uint64_t coll, const char *oid, uint64_t size)
{
	int r = add_op(t, OP_TRUNCATE, coll, oid ? oid : "", NULL, 0, NULL, 0);

	if (!r)
		t->ops[t->n - 1].off = size;
	return r;
}

int store_txn_remove(struct store_txn *t, uint64_t coll, const char *oid)
{
	return add_op(t, OP_REMOVE, coll, oid ? oid : "", NULL, 0, NULL, 0);
}

int store_txn_remove_if_exists(struct store_txn *t, uint64_t coll, const char *oid)
{
	int r = store_txn_remove(t, coll, oid);

	if (!r)
		t->ops[t->n - 1].flags = OPF_MISSING_OK;
	return r;
}

static int check_attr_name(const char *name)
{
	if (!name || !*name)
		return -EINVAL;
	if (strnlen(name, STORE_ATTR_NAME_MAX + 1) > STORE_ATTR_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int store_txn_setattr(struct store_txn *t, uint64_t coll, const char *oid,
		      const char *name, const void *val, size_t len)
{
	int r = check_attr_name(name);

	if (r)
		return r;
	if ((len && !val) || len > STORE_VALUE_MAX)
		return -EINVAL;
	return add_op(t, OP_SETATTR, coll, oid ? oid : "", val, len, name, strlen(name));
}

int store_txn_rmattr(struct store_txn *t, uint64_t coll, const char *oid, const char *name)
{
	int r = check_attr_name(name);

	if (r)
		return r;
	return add_op(t, OP_RMATTR, coll, oid ? oid : "", NULL, 0, name, strlen(name));
}

static int check_omap_key(const void *key, size_t klen)
{
	if (!key || klen == 0)
		return -EINVAL;
	if (klen > STORE_OMAP_KEY_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int store_txn_omap_set(struct store_txn *t, uint64_t coll, const char *oid,
		       const void *key, size_t klen, const void *val, size_t vlen)
{
	int r = check_omap_key(key, klen);

	if (r)
		return r;
	if ((vlen && !val) || vlen > STORE_VALUE_MAX)
		return -EINVAL;
	return add_op(t, OP_OMAP_SET, coll, oid ? oid : "", val, vlen, key, klen);
}

int store_txn_omap_rm(struct store_txn *t, uint64_t coll, const char *oid,
		      const void *key, size_t klen)
{
	int r = check_omap_key(key, klen);

	if (r)
		return r;
	return add_op(t, OP_OMAP_RM, coll, oid ? oid : "", NULL, 0, key, klen);
}

int store_txn_omap_clear(struct store_txn *t, uint64_t coll, const char *oid)
{
	return add_op(t, OP_OMAP_CLEAR, coll, oid ? oid : "", NULL, 0, NULL, 0);
}
