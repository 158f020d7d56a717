/*
 * kv.c - the store's metadata in LMDB, with a crc32c on every value.
 *
 * LMDB gives atomic, crash-safe transactions and cheap reads from its
 * memory map, but keeps no checksums: a flipped bit in a value would be
 * returned as data.  So every value is stored as [crc32c LE][payload] and
 * checked on every read (-EIO on mismatch).  Keys are big-endian where
 * they hold numbers, so that LMDB's memcmp order is numeric order.
 *
 * The environment runs with MDB_NOMETASYNC: a commit writes and syncs its
 * pages, then writes its meta page without a sync.  The commit thread
 * fires completions only after a later sync (the next commit's, or an
 * explicit mdb_env_sync) has made that meta page durable.  LMDB keeps two
 * meta pages and reuses only pages freed two commits back, so a lost
 * meta write just rolls back to the previous commit intact.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "crc32c.h"
#include "log.h"
#include "store-int.h"

void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return v;
}

void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

size_t key_onode(uint8_t *k, uint64_t coll, const char *oid, size_t len)
{
	put_be64(k, coll);
	memcpy(k + 8, oid, len);
	return 8 + len;
}

size_t key_id(uint8_t *k, uint64_t id, const void *suffix, size_t slen)
{
	put_be64(k, id);
	if (slen)
		memcpy(k + 8, suffix, slen);
	return 8 + slen;
}

size_t key_chunk(uint8_t *k, uint64_t id, uint32_t idx)
{
	put_be64(k, id);
	put_be32(k + 8, idx);
	return 12;
}

MDB_dbi kvdb_dbi(const struct kv *kv, int db)
{
	switch (db) {
	case KVDB_OMAP:
		return kv->omap;
	case KVDB_ONODE:
		return kv->onodes;
	case KVDB_META:
		return kv->meta;
	case KVDB_CHUNK:
		return kv->chunks;
	default:
		return kv->attrs;
	}
}

int kvdb_of(const struct kv *kv, MDB_dbi dbi)
{
	return dbi == kv->omap ? KVDB_OMAP : dbi == kv->onodes ? KVDB_ONODE :
	       dbi == kv->meta ? KVDB_META : dbi == kv->chunks ? KVDB_CHUNK : KVDB_ATTR;
}

size_t kvdb_key(uint8_t *out, int db, uint64_t id, const void *k, size_t kl)
{
	if (db == KVDB_META) {
		memcpy(out, k, kl);	/* the counters' keys are bare names */
		return kl;
	}
	return key_id(out, id, k, kl);
}

int kv_err(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return 0;
	case MDB_NOTFOUND:
		return -ENOENT;
	case MDB_KEYEXIST:
		return -EEXIST;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL:
	case MDB_PAGE_FULL:
		return -ENOSPC;
	case MDB_READERS_FULL:
		return -EAGAIN;
	case MDB_BAD_VALSIZE:
		return -EINVAL;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
	case MDB_VERSION_MISMATCH:
		return -EUCLEAN;
	default:
		return rc > 0 ? -rc : -EIO;
	}
}

static int open_dbi(MDB_txn *t, const char *name, unsigned flags, MDB_dbi *dbi)
{
	return kv_err(mdb_dbi_open(t, name, flags, dbi));
}

int kv_open(struct kv *kv, const char *path, uint64_t map_size, bool create, bool readonly)
{
	unsigned envflags = MDB_NOMETASYNC | MDB_NORDAHEAD;
	unsigned dbflags = create ? MDB_CREATE : 0;
	MDB_txn *t = NULL;
	MDB_envinfo info;
	int r;

	memset(kv, 0, sizeof(*kv));
	if (readonly)
		envflags |= MDB_RDONLY;
	r = kv_err(mdb_env_create(&kv->env));
	if (r)
		return r;
	mdb_env_set_maxdbs(kv->env, 8);
	mdb_env_set_maxreaders(kv->env, 1024);
	if (map_size) {
		r = kv_err(mdb_env_set_mapsize(kv->env, map_size));
		if (r)
			goto out_close;
	}
	r = kv_err(mdb_env_open(kv->env, path, envflags, 0600));
	if (r) {
		log_error("store", "cannot open key-value store '%s': %s", path,
			  mdb_strerror(r > 0 ? r : -r));
		goto out_close;
	}
	mdb_env_info(kv->env, &info);
	kv->map_size = info.me_mapsize;
	{
		MDB_stat st;

		mdb_env_stat(kv->env, &st);
		kv->psize = st.ms_psize;
	}
	r = kv_err(mdb_txn_begin(kv->env, NULL, readonly ? MDB_RDONLY : 0, &t));
	if (r)
		goto out_close;
	if ((r = open_dbi(t, "meta", dbflags, &kv->meta)) ||
	    (r = open_dbi(t, "colls", dbflags, &kv->colls)) ||
	    (r = open_dbi(t, "onodes", dbflags, &kv->onodes)) ||
	    (r = open_dbi(t, "chunks", dbflags, &kv->chunks)) ||
	    (r = open_dbi(t, "attrs", dbflags, &kv->attrs)) ||
	    (r = open_dbi(t, "omap", dbflags, &kv->omap)) ||
	    (r = open_dbi(t, "deferred", dbflags, &kv->deferred))) {
		mdb_txn_abort(t);
		goto out_close;
	}
	/* Commit, also when read-only: LMDB closes handles opened in an
	 * aborted transaction. */
	r = kv_err(mdb_txn_commit(t));
	if (r)
		goto out_close;
	return 0;

out_close:
	mdb_env_close(kv->env);
	kv->env = NULL;
	return r;
}

void kv_close(struct kv *kv)
{
	if (kv->env)
		mdb_env_close(kv->env);
	kv->env = NULL;
}

int kv_unwrap(const MDB_val *raw, const void **v, size_t *vl)
{
	const uint8_t *p = raw->mv_data;
	uint32_t want;

	if (raw->mv_size < 4)
		return -EIO;
	want = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
	if (atoll__crc32c(0, p + 4, raw->mv_size - 4) != want)
		return -EIO;
	*v = p + 4;
	*vl = raw->mv_size - 4;
	return 0;
}

int kv_get(MDB_txn *t, MDB_dbi dbi, const void *k, size_t kl, const void **v, size_t *vl)
{
	MDB_val key = { kl, (void *)k }, val;
	int rc = mdb_get(t, dbi, &key, &val);

	if (rc)
		return kv_err(rc);
	return kv_unwrap(&val, v, vl);
}

/* LMDB refuses writes in a read-only transaction with EACCES: the commit
 * thread applies a batch in one while a checkpoint holds the write lock,
 * and learns here that the batch needs a writer after all. */
static __thread bool write_refused;

static int note_refused(int rc)
{
	if (rc == EACCES)
		write_refused = true;
	return rc;
}

bool kv_write_refused_take(void)
{
	bool r = write_refused;

	write_refused = false;
	return r;
}

int kv_put(MDB_txn *t, MDB_dbi dbi, const void *k, size_t kl, const void *v, size_t vl)
{
	MDB_val key = { kl, (void *)k }, val = { vl + 4, NULL };
	uint32_t crc;
	uint8_t *p;
	int rc;

	rc = note_refused(mdb_put(t, dbi, &key, &val, MDB_RESERVE));
	if (rc)
		return kv_err(rc);
	p = val.mv_data;
	if (vl)
		memcpy(p + 4, v, vl);
	crc = atoll__crc32c(0, p + 4, vl);
	p[0] = (uint8_t)crc;
	p[1] = (uint8_t)(crc >> 8);
	p[2] = (uint8_t)(crc >> 16);
	p[3] = (uint8_t)(crc >> 24);
	return 0;
}

int kv_del(MDB_txn *t, MDB_dbi dbi, const void *k, size_t kl)
{
	MDB_val key = { kl, (void *)k };

	return kv_err(note_refused(mdb_del(t, dbi, &key, NULL)));
}

int kv_cursor_del(MDB_cursor *c)
{
	return note_refused(mdb_cursor_del(c, 0));
}

int64_t kv_del_prefix(MDB_txn *t, MDB_dbi dbi, const void *prefix, size_t plen)
{
	MDB_cursor *c;
	MDB_val key = { plen, (void *)prefix }, val;
	int64_t n = 0;
	int rc;

	rc = mdb_cursor_open(t, dbi, &c);
	if (rc)
		return kv_err(rc);
	rc = mdb_cursor_get(c, &key, &val, MDB_SET_RANGE);
	while (rc == 0 && key.mv_size >= plen && memcmp(key.mv_data, prefix, plen) == 0) {
		rc = kv_cursor_del(c);
		if (rc)
			break;
		n++;
		rc = mdb_cursor_get(c, &key, &val, MDB_GET_CURRENT);
		if (rc == EINVAL || rc == MDB_NOTFOUND) {
			/* Deleted the last entry: nothing after it. */
			rc = MDB_NOTFOUND;
			break;
		}
	}
	mdb_cursor_close(c);
	if (rc && rc != MDB_NOTFOUND)
		return kv_err(rc);
	return n;
}

int kv_coll_get(struct kv *kv, MDB_txn *t, uint64_t coll, uint32_t *flags)
{
	uint8_t k[8];
	const void *v;
	size_t vl;
	int r;

	put_be64(k, coll);
	r = kv_get(t, kv->colls, k, 8, &v, &vl);
	if (r)
		return r;
	if (vl < 4)
		return -EIO;
	if (flags)
		memcpy(flags, v, 4);
	return 0;
}

int kv_used_bytes(struct kv *kv, MDB_txn *t, uint64_t *used)
{
	MDB_envinfo info;
	MDB_cursor *c;
	MDB_val key, val;
	uint64_t freepg = 0;
	int rc;

	mdb_env_info(kv->env, &info);
	rc = mdb_cursor_open(t, 0 /* FREE_DBI */, &c);
	if (rc)
		return kv_err(rc);
	while ((rc = mdb_cursor_get(c, &key, &val, MDB_NEXT)) == 0) {
		if (val.mv_size >= sizeof(size_t))
			freepg += *(const size_t *)val.mv_data;	/* IDL: count first */
	}
	mdb_cursor_close(c);
	if (rc != MDB_NOTFOUND)
		return kv_err(rc);
	uint64_t pages = (uint64_t)info.me_last_pgno + 1;

	*used = (pages > freepg ? pages - freepg : 0) * kv->psize;
	return 0;
}
