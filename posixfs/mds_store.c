/*
 * mds_store.c - the namespace as objects of the metadata pool
 * (doc/fs-design.md, "Namespace layout in the metadata pool"): the
 * objects' names, the inode record's encoding, reading them (omap pages,
 * whole objects), and writing journaled changes to them.
 *
 * A journal entry lists final states, so writing one twice gives the
 * same result: replay and the applier both call mds_store_apply*.  A
 * batch of changes is written with each (object, key) once, at its last
 * value, every object's ops in flight at once (mds_store_apply_omap):
 * one round trip for the whole batch.  Nothing here takes a lock; the
 * callers order the writes (the applier thread, or replay before any
 * thread starts).
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <atoll/atoll.h>

#include "encode.h"

void mds_store_oid_inodes(char *b, size_t n, uint64_t ino)
{
	snprintf(b, n, "fs.inodes.%02x", (unsigned)(ino % MDS_INODE_SHARDS));
}

void mds_store_oid_dir(char *b, size_t n, uint64_t ino)
{
	snprintf(b, n, "fs.dir.%016" PRIx64, ino);
}

void mds_store_oid_xattr(char *b, size_t n, uint64_t ino)
{
	snprintf(b, n, "fs.xattr.%016" PRIx64, ino);
}

void mds_store_oid_seg(char *b, size_t n, uint64_t seg)
{
	snprintf(b, n, "fs.journal.%016" PRIx64, seg);
}


/* Calls fn for every omap entry of oid; a missing object has none. */
int mds_store_omap_each(struct mds *m, const char *oid,
		     int (*fn)(struct mds *m, void *arg, const void *k, size_t kl,
			       const void *v, size_t vl), void *arg)
{
	char after[MDS_NAME_MAX + 1];
	size_t alen = 0;
	int more = 1, ret;

	while (more) {
		struct atoll_kv_iter *it = NULL;
		const void *k, *v;
		size_t kl, vl;
		ret = atoll_omap_list(m->meta, oid, alen ? after : NULL, alen, 1000, &it, &more, 0);
		if (ret == -ENOENT)
			return 0;
		if (ret)
			return ret;
		while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
			ret = fn(m, arg, k, kl, v, vl);
			if (ret) {
				atoll_kv_iter_free(it);
				return ret;
			}
			if (kl <= MDS_NAME_MAX) {
				memcpy(after, k, kl);
				alen = kl;
			}
		}
		atoll_kv_iter_free(it);
	}
	return 0;
}

/* Reads the whole object oid of the metadata pool into *buf (malloc'd,
 * the caller frees it; *len bytes): 0, -ENOENT when it does not exist, or
 * another negative errno. */
int mds_store_read(struct mds *m, const char *oid, uint8_t **buf, size_t *len)
{
	uint64_t size = 0, mt;
	int ret = atoll_stat(m->meta, oid, &size, &mt, 0);

	if (ret)
		return ret;
	*buf = malloc(size ? size : 1);
	if (!*buf)
		return -ENOMEM;
	int64_t got = atoll_read(m->meta, oid, *buf, size, 0, 0);
	if (got < 0) {
		free(*buf);
		*buf = NULL;
		return (int)got;
	}
	*len = (size_t)got;
	return 0;
}

static int ignore_enoent(int r)
{
	return r == -ENOENT ? 0 : r;
}

int mds_store_inode_put(struct mds *m, const struct mds_inode *in, const char *link)
{
	char oid[64], key[17];
	struct enc e;
	size_t len;
	void *buf;
	int ret;

	enc_init(&e);
	mds_store_record_encode(&e, in, link);
	buf = enc_take(&e, &len);
	if (!buf) {
		enc_free(&e);
		return -ENOMEM;
	}
	mds_store_oid_inodes(oid, sizeof(oid), in->ino);
	snprintf(key, sizeof(key), "%016" PRIx64, in->ino);
	struct atoll_kv kv = { key, 16, buf, len };
	ret = atoll_omap_set(m->meta, oid, &kv, 1, 0);
	free(buf);
	return ret;
}

static int store_data_trunc(struct mds *m, uint64_t dns, uint64_t ino, uint64_t from,
			    uint64_t to, struct mds_rm_batch *b)
{
	char oid[MDS_DATA_OID_MAX];
	uint64_t bs = MDS_BLOCK_SIZE;
	uint64_t first = from / bs;
	uint64_t last = to ? (to - 1) / bs : 0;
	int ret = 0;

	if (to <= from && from % bs == 0)
		return 0;
	if (from % bs) {
		mds_data_oid(oid, sizeof(oid), dns, ino, first);
		ret = ignore_enoent(atoll_truncate(m->data, oid, from % bs, 0));
		if (ret)
			return ret;
		first++;
	}
	/* many in flight; a pool listing for a huge sparse range (mds_purge.c) */
	return to > from ? mds_data_remove_range(m, dns, ino, first, last, b) : 0;
}

/* The omap updates of a batch of txns (in journal order), and the
 * removals of the objects of removed inodes: each (object, key) keeps
 * only its last update, then every object gets at most two ops, one
 * setting its keys and one removing them (the keys of the two are
 * distinct, so they may run in any order), or its removal alone, all in
 * flight at once: one round trip for the whole batch, however many
 * changes it holds. */
struct kvu {
	char oid[64];
	char key[MDS_NAME_MAX + 1];
	size_t klen;
	const void *val;
	size_t vlen;
	void *own;		/* an encoded inode record (val points here) */
	uint8_t dval[12];	/* a dentry's value (val is NULL: qsort moves it) */
	bool rm;
	bool gone;		/* the object is removed (no key) */
	size_t seq;		/* position in the batch */
};

struct pop {
	struct atoll_op *op;
	struct atoll_completion *c;
	struct atoll_kv *kv;
	bool rm;
};

static int kvu_cmp(const void *a, const void *b)
{
	const struct kvu *x = a, *y = b;
	int c = strcmp(x->oid, y->oid);

	if (c)
		return c;
	if (x->klen != y->klen)
		return x->klen < y->klen ? -1 : 1;
	c = memcmp(x->key, y->key, x->klen);
	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Fills q from u (one omap update of t); false when u is no omap update. */
static bool kvu_from(struct kvu *q, const struct mds_txn *t, const struct mds_upd *u, int *err)
{
	memset(q, 0, sizeof(*q));
	switch (u->type) {
	case MDS_U_DENT_SET:
		for (int k = 0; k < 8; k++)
			q->dval[k] = (uint8_t)(u->ino >> (8 * k));
		for (int k = 0; k < 4; k++)
			q->dval[8 + k] = (uint8_t)(u->mode >> (8 * k));
		snprintf(q->key, sizeof(q->key), "%s", u->name);
		q->vlen = 12;
		mds_store_oid_dir(q->oid, sizeof(q->oid), u->dir);
		break;
	case MDS_U_DENT_RM:
		snprintf(q->key, sizeof(q->key), "%s", u->name);
		q->rm = true;
		mds_store_oid_dir(q->oid, sizeof(q->oid), u->dir);
		break;
	case MDS_U_PARENT:
		for (int k = 0; k < 8; k++)
			q->dval[k] = (uint8_t)(u->dir >> (8 * k));
		snprintf(q->key, sizeof(q->key), "..");
		q->vlen = 8;
		mds_store_oid_dir(q->oid, sizeof(q->oid), u->ino);
		break;
	case MDS_U_INODE_PUT: {
		struct enc e;
		size_t len;
		enc_init(&e);
		mds_store_record_encode(&e, &u->in, mds_txn_link(t, u->in.ino));
		q->own = enc_take(&e, &len);
		if (!q->own) {
			enc_free(&e);
			*err = -ENOMEM;
			return false;
		}
		q->val = q->own;
		q->vlen = len;
		snprintf(q->key, sizeof(q->key), "%016" PRIx64, u->in.ino);
		mds_store_oid_inodes(q->oid, sizeof(q->oid), u->in.ino);
		break;
	}
	case MDS_U_INODE_RM:
		snprintf(q->key, sizeof(q->key), "%016" PRIx64, u->ino);
		q->rm = true;
		mds_store_oid_inodes(q->oid, sizeof(q->oid), u->ino);
		break;
	case MDS_U_XATTR_SET:
		snprintf(q->key, sizeof(q->key), "%s", u->name);
		q->val = t->xval;
		q->vlen = t->xlen;
		mds_store_oid_xattr(q->oid, sizeof(q->oid), u->ino);
		break;
	case MDS_U_XATTR_RM:
		snprintf(q->key, sizeof(q->key), "%s", u->name);
		q->rm = true;
		mds_store_oid_xattr(q->oid, sizeof(q->oid), u->ino);
		break;
	default:
		return false;
	}
	q->klen = strlen(q->key);
	return true;
}

/* The objects a removed inode leaves (u is an INODE_RM): a directory's
 * if it ever had entries, the one of its extended attributes if it had
 * any.  Returns how many it filled in q (room for two). */
static size_t kvu_gone(struct kvu *q, const struct mds_upd *u)
{
	size_t n = 0;

	if (S_ISDIR(u->mode) && (u->in.flags & MDS_INO_DIROBJ)) {
		memset(&q[n], 0, sizeof(q[n]));
		mds_store_oid_dir(q[n].oid, sizeof(q[n].oid), u->ino);
		q[n++].gone = true;
	}
	if (u->in.flags & MDS_INO_XATTRS) {
		memset(&q[n], 0, sizeof(q[n]));
		mds_store_oid_xattr(q[n].oid, sizeof(q[n].oid), u->ino);
		q[n++].gone = true;
	}
	return n;
}

int mds_store_apply_omap(struct mds *m, const struct mds_txn *const *ts, size_t nt,
			    struct mds_store_buf *kb)
{
	size_t cap = 0, n = 0, nops = 0;
	struct kvu *u;
	struct pop *p = NULL;
	int ret = 0;

	for (size_t i = 0; i < nt; i++)
		cap += 3 * (size_t)ts[i]->nu;
	if (!cap)
		return 0;
	if (kb && kb->cap >= cap) {
		u = kb->u;
		memset(u, 0, cap * sizeof(*u));
	} else {
		u = calloc(cap, sizeof(*u));
		if (!u)
			return -ENOMEM;
		if (kb) {
			free(kb->u);
			kb->u = u;
			kb->cap = cap;
		}
	}
	for (size_t i = 0; i < nt; i++)
		for (int k = 0; k < ts[i]->nu; k++) {
			size_t n0 = n;
			if (kvu_from(&u[n], ts[i], &ts[i]->u[k], &ret))
				n++;
			if (ts[i]->u[k].type == MDS_U_INODE_RM)
				n += kvu_gone(&u[n], &ts[i]->u[k]);
			for (; n0 < n; n0++)
				u[n0].seq = n0;
		}
	if (ret)
		goto out;
	qsort(u, n, sizeof(*u), kvu_cmp);
	/* keep the last update of each (object, key): mark the others */
	for (size_t i = 0; i + 1 < n; i++)
		if (!strcmp(u[i].oid, u[i + 1].oid) && u[i].klen == u[i + 1].klen &&
		    !memcmp(u[i].key, u[i + 1].key, u[i].klen))
			u[i].klen = SIZE_MAX;
	p = calloc(n, sizeof(*p));
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	/* per object one op: its sets, then its removals (of other keys); or the
	 * object's removal alone (nothing names it after: inode numbers are
	 * not reused, so no later change of the batch sets a key of it) */
	for (size_t i = 0; i < n;) {
		size_t j = i;
		bool gone = false;
		while (j < n && !strcmp(u[j].oid, u[i].oid))
			gone |= u[j++].gone;
		if (gone) {
			struct pop *q = &p[nops];
			q->op = atoll_op_create(0);
			if (!q->op || atoll_completion_create(NULL, NULL, NULL, &q->c)) {
				ret = -ENOMEM;
				break;
			}
			nops++;
			q->rm = true;
			atoll_op_remove(q->op);
			int r = atoll_aio_op_operate(q->op, m->meta, u[i].oid, q->c, 0);
			if (r) {
				ret = r;
				atoll_completion_release(q->c);
				q->c = NULL;
				break;
			}
			i = j;
			continue;
		}
		size_t nset = 0, nrm = 0;
		for (size_t k = i; k < j; k++)
			if (u[k].klen != SIZE_MAX)
				*(u[k].rm ? &nrm : &nset) += 1;
		if (nset + nrm) {
			struct pop *q = &p[nops];
			q->kv = calloc(nset + nrm, sizeof(*q->kv));
			q->op = atoll_op_create(0);
			if (!q->kv || !q->op || atoll_completion_create(NULL, NULL, NULL, &q->c)) {
				ret = -ENOMEM;
				break;
			}
			nops++;
			size_t s = 0, r = nset;
			for (size_t k = i; k < j; k++)
				if (u[k].klen != SIZE_MAX)
					q->kv[u[k].rm ? r++ : s++] = (struct atoll_kv){
						u[k].key, u[k].klen,
						u[k].rm ? NULL : u[k].val ? u[k].val : u[k].dval,
						u[k].rm ? 0 : u[k].vlen };
			/* a removal alone may find the object gone */
			q->rm = !nset;
			if (nset)
				atoll_op_omap_set(q->op, q->kv, nset);
			if (nrm)
				atoll_op_omap_rm(q->op, q->kv + nset, nrm);
			int e = atoll_aio_op_operate(q->op, m->meta, u[i].oid, q->c, 0);
			if (e) {
				ret = e;
				atoll_completion_release(q->c);
				q->c = NULL;
			}
		}
		if (ret)
			break;
		i = j;
	}
	for (size_t i = 0; i < nops; i++) {
		if (p[i].c) {
			int r = (int)atoll_completion_wait(p[i].c);
			if (p[i].rm && r == -ENOENT)
				r = 0;	/* the object is gone: so are its keys */
			if (r && !ret)
				ret = r;
			atoll_completion_release(p[i].c);
		}
	}
out:
	for (size_t i = 0; p && i < n; i++) {
		atoll_op_release(p[i].op);
		free(p[i].kv);
	}
	for (size_t i = 0; i < n; i++)
		free(u[i].own);
	free(p);
	if (!kb)
		free(u);
	return ret;
}

/* The updates of a txn that are no omap changes: purging or trimming
 * file data, the inode allocator's high-water mark.  A removed inode's
 * objects are never named again (inode numbers are not reused), so these
 * may follow the omap updates of later txns of the same batch. */
/* The rest of a txn's updates, after its omap ones: data removes go
 * into b (NULL: waited for here), the caller waits for them. */
int mds_store_apply_rest(struct mds *m, const struct mds_txn *t, struct mds_rm_batch *b)
{
	int ret = 0;

	for (int i = 0; i < t->nu && !ret; i++) {
		const struct mds_upd *u = &t->u[i];
		switch (u->type) {
		case MDS_U_PURGE:
			ret = store_data_trunc(m, u->in.dns, u->ino, 0, u->size, b);
			break;
		case MDS_U_TRUNC:
			ret = store_data_trunc(m, u->in.dns, u->ino, u->size, u->old_size, b);
			break;
		case MDS_U_HW: {
			char v[17];
			snprintf(v, sizeof(v), "%016" PRIx64, u->ino);
			struct atoll_kv kv = { "ino_hw", 6, v, 16 };
			ret = atoll_omap_set(m->meta, "fs.super", &kv, 1, 0);
			break;
		}
		default:
			break;
		}
	}
	return ret;
}

int mds_store_apply(struct mds *m, const struct mds_txn *t)
{
	int ret = mds_store_apply_omap(m, &t, 1, NULL);

	return ret ? ret : mds_store_apply_rest(m, t, NULL);
}

void mds_store_buf_free(struct mds_store_buf *kb)
{
	free(kb->u);
	kb->u = NULL;
	kb->cap = 0;
}

