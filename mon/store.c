/*
 * store.c - the monitor's durable state: an LMDB environment in
 * DIR/store holding every epoch's incremental, the latest full map and
 * a little metadata (the fsid, the first and last epoch).
 *
 * Why this shape: an incremental per epoch is what subscribers need to
 * catch up cheaply and what a replicated log (a monitor quorum, later)
 * will ship; the latest full map makes start-up O(1) instead of a replay.
 * Both are written in one LMDB transaction, and LMDB fsyncs on commit, so
 * "committed" here means "durable": the caller publishes only after.
 *
 * Keys (one unnamed database):
 *   "fsid"            16 bytes
 *   "first", "last"   u64 little-endian epochs: the incrementals kept are
 *                     first..last; first = last + 1 when none is (a
 *                     snapshot installed, mon_store_reset)
 *   "full"            the encoded full map of epoch "last"
 *   "inc" + be64(E)   the encoded incremental producing epoch E
 *   "seed"            a restored backup's full map: the replicated
 *                     state's starting point (absent: an empty map)
 *   "seed_auth"       a restored backup's auth state (keys, caps, service
 *                     secrets: auth_entry.h), the auth state's starting
 *                     point (absent: none, the keyring is imported)
 *
 * The history is trimmed from below by a replicated trim entry
 * (mon_store_trim, trim.c says when): "first" moves up and the
 * incrementals under it are deleted in one transaction.
 *
 * With a quorum the store is no longer the source of truth: the raft log
 * and its snapshots are (quorum.c).  The store is what every member
 * applied, kept for subscribers; an entry replayed after a restart is
 * written again with the same bytes, and a snapshot installed from the
 * leader starts the kept history at its epoch (mon_store_reset).
 */
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "encode.h"
#include "log.h"
#include "auth_entry.h"
#include "mon.h"

#define STORE_MAP_SIZE		(4ull << 30)	/* sparse; the map is small */
#define BACKUP_MAGIC		"ATMONBK3"	/* with the auth section */
#define BACKUP_MAGIC_V2		"ATMONBK2"	/* before it: still restored */
/* Client ids that may have been handed out after a backup was taken: a
 * restored state skips this many (doc/security.md, "Backups"). */
#define RESTORE_ID_SKIP		(1ull << 24)

static void remove_store(const char *dir);

struct mon_store {
	MDB_env *env;
	MDB_dbi dbi;
	uint64_t first, last;
	uint8_t fsid[16];
};

static int lmdb_err(int r)
{
	if (r == 0)
		return 0;
	if (r == MDB_NOTFOUND)
		return -ENOENT;
	if (r == MDB_MAP_FULL)
		return -ENOSPC;
	if (r > 0)
		return -r;
	return -EIO;
}

static void inc_key(uint64_t epoch, uint8_t key[11])
{
	memcpy(key, "inc", 3);
	for (int i = 0; i < 8; i++)
		key[3 + i] = (uint8_t)(epoch >> (56 - 8 * i));
}

static void put_u64le(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64le(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t get_u32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static int put(MDB_txn *t, MDB_dbi dbi, const void *k, size_t klen,
	       const void *v, size_t vlen)
{
	MDB_val key = { klen, (void *)k }, val = { vlen, (void *)v };

	return lmdb_err(mdb_put(t, dbi, &key, &val, 0));
}

static int get(MDB_txn *t, MDB_dbi dbi, const void *k, size_t klen, MDB_val *v)
{
	MDB_val key = { klen, (void *)k };

	return lmdb_err(mdb_get(t, dbi, &key, v));
}

static int env_open(const char *dir, bool create, struct mon_store **out,
		    char *err, size_t errlen)
{
	struct mon_store *s;
	char path[4096];
	struct stat st;
	MDB_txn *t;
	int r;

	*out = NULL;
	if (snprintf(path, sizeof(path), "%s/store", dir) >= (int)sizeof(path)) {
		snprintf(err, errlen, "data folder path '%s' is too long", dir);
		return -ENAMETOOLONG;
	}
	if (create) {
		if (stat(path, &st) == 0) {
			snprintf(err, errlen, "'%s' already holds a monitor store; "
				 "remove it first or use another --data folder", path);
			return -EEXIST;
		}
		/* the folder holds the raft log and its snapshots, and they
		 * hold every key: its owner alone may read it */
		if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || chmod(dir, 0700) < 0) {
			r = -errno;
			snprintf(err, errlen, "cannot create data folder '%s': %s",
				 dir, strerror(errno));
			return r;
		}
		if (mkdir(path, 0700) < 0) {
			r = -errno;
			snprintf(err, errlen, "cannot create '%s': %s", path, strerror(errno));
			return r;
		}
	} else if (stat(path, &st) < 0) {
		snprintf(err, errlen, "data folder '%s' has no monitor store; create one "
			 "with: atoll-mon --mkfs --data %s", dir, dir);
		return -ENOENT;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	r = lmdb_err(mdb_env_create(&s->env));
	if (r < 0)
		goto out_free;
	mdb_env_set_mapsize(s->env, STORE_MAP_SIZE);
	r = lmdb_err(mdb_env_open(s->env, path, 0, 0600));
	if (r < 0) {
		snprintf(err, errlen, "cannot open the monitor store '%s': %s",
			 path, mdb_strerror(-r));
		goto out_env;
	}
	r = lmdb_err(mdb_txn_begin(s->env, NULL, 0, &t));
	if (r < 0)
		goto out_env;
	r = lmdb_err(mdb_dbi_open(t, NULL, 0, &s->dbi));
	if (r < 0) {
		mdb_txn_abort(t);
		goto out_env;
	}
	if (!create) {
		MDB_val v;

		/* an empty store (a new member, no epoch applied yet) is fine */
		r = get(t, s->dbi, "last", 4, &v);
		if (r == -ENOENT)
			goto empty;
		r = get(t, s->dbi, "fsid", 4, &v);
		if (r == 0 && v.mv_size == 16)
			memcpy(s->fsid, v.mv_data, 16);
		if (r == 0)
			r = get(t, s->dbi, "first", 5, &v);
		if (r == 0 && v.mv_size == 8)
			s->first = get_u64le(v.mv_data);
		if (r == 0)
			r = get(t, s->dbi, "last", 4, &v);
		if (r == 0 && v.mv_size == 8)
			s->last = get_u64le(v.mv_data);
		/* first == last + 1: no incremental kept (a snapshot installed) */
		if (r < 0 || s->last == 0 || s->first == 0 || s->first > s->last + 1) {
			mdb_txn_abort(t);
			snprintf(err, errlen, "the monitor store '%s' is incomplete (was "
				 "--mkfs interrupted?); recreate it or restore a backup "
				 "with: atoll-mon --restore FILE --data %s", path, dir);
			r = -EUCLEAN;
			goto out_env;
		}
	}
empty:
	r = lmdb_err(mdb_txn_commit(t));
	if (r < 0)
		goto out_env;
	*out = s;
	return 0;

out_env:
	mdb_env_close(s->env);
out_free:
	free(s);
	if (!err[0])
		snprintf(err, errlen, "cannot open the monitor store in '%s': %s",
			 dir, strerror(-r));
	return r;
}

int mon_store_create(const char *dir, struct mon_store **out, char *err, size_t errlen)
{
	err[0] = '\0';
	return env_open(dir, true, out, err, errlen);
}

int mon_store_open(const char *dir, struct mon_store **out, char *err, size_t errlen)
{
	err[0] = '\0';
	return env_open(dir, false, out, err, errlen);
}

void mon_store_close(struct mon_store *s)
{
	if (!s)
		return;
	mdb_env_close(s->env);
	free(s);
}

uint64_t mon_store_first_epoch(struct mon_store *s)
{
	return s->first;
}

/* Writes one epoch in txn t (no commit). */
static int write_epoch(struct mon_store *s, MDB_txn *t, const void *inc, size_t inclen,
		       uint64_t epoch, const void *full, size_t fulllen,
		       const uint8_t fsid[16], bool set_last)
{
	uint8_t key[11], u[8];
	int r;

	inc_key(epoch, key);
	r = put(t, s->dbi, key, sizeof(key), inc, inclen);
	if (r == 0 && full)
		r = put(t, s->dbi, "full", 4, full, fulllen);
	put_u64le(u, epoch);
	if (r == 0 && set_last)
		r = put(t, s->dbi, "last", 4, u, 8);
	if (r == 0 && (s->first == 0 || epoch < s->first)) {
		put_u64le(u, epoch);
		r = put(t, s->dbi, "first", 5, u, 8);
	}
	if (r == 0 && s->last == 0)
		r = put(t, s->dbi, "fsid", 4, fsid, 16);
	return r;
}

int mon_store_commit(struct mon_store *s, const struct osdmap_inc *inc,
		     const struct osdmap *m)
{
	struct enc ei, ef;
	MDB_txn *t;
	int r;

	/* never skip an epoch; one at or below the last is the replay of a
	 * log entry after a restart: the same bytes are written again */
	if (inc->epoch > s->last + 1 || inc->epoch == 0 || m->epoch != inc->epoch)
		return -EINVAL;
	if (inc->epoch <= s->last && inc->epoch < s->first)
		return 0;		/* below the kept history: nothing to do */
	enc_init(&ei);
	enc_init(&ef);
	osdmap_inc_encode(inc, &ei);
	osdmap_encode(m, &ef);
	r = ei.err ? ei.err : ef.err;
	if (r < 0)
		goto out_free;
	r = lmdb_err(mdb_txn_begin(s->env, NULL, 0, &t));
	if (r < 0)
		goto out_free;
	r = write_epoch(s, t, ei.buf, ei.len, inc->epoch,
			inc->epoch >= s->last ? ef.buf : NULL, ef.len, m->fsid,
			inc->epoch >= s->last);
	if (r < 0) {
		mdb_txn_abort(t);
		goto out_free;
	}
	/* mdb_txn_commit fsyncs (the env has neither MDB_NOSYNC nor
	 * MDB_NOMETASYNC): once it returns 0 the epoch survives a crash */
	r = lmdb_err(mdb_txn_commit(t));
	if (r < 0)
		goto out_free;
	if (s->first == 0)
		s->first = inc->epoch;
	if (s->last == 0)
		memcpy(s->fsid, m->fsid, 16);
	if (inc->epoch > s->last)
		s->last = inc->epoch;
out_free:
	enc_free(&ei);
	enc_free(&ef);
	if (r < 0)
		log_error("store", "cannot commit epoch %llu: %s",
			  (unsigned long long)inc->epoch, strerror(-r));
	return r;
}

/* Decodes the full map kept under key (*out owned by the caller). */
static int load_map(struct mon_store *s, const char *key, struct osdmap **out)
{
	MDB_txn *t;
	MDB_val v;
	struct dec d;
	int r;

	*out = NULL;
	r = lmdb_err(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t));
	if (r < 0)
		return r;
	r = get(t, s->dbi, key, strlen(key), &v);
	if (r == 0) {
		dec_init(&d, v.mv_data, v.mv_size);
		r = osdmap_decode(&d, out);
	}
	mdb_txn_abort(t);
	return r;
}

int mon_store_load_seed(struct mon_store *s, struct osdmap **out)
{
	return load_map(s, "seed", out);
}

int mon_store_load_seed_auth(struct mon_store *s, void **buf, size_t *len)
{
	MDB_txn *t;
	MDB_val v;
	int r;

	*buf = NULL;
	r = lmdb_err(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t));
	if (r < 0)
		return r;
	r = get(t, s->dbi, "seed_auth", 9, &v);
	if (r == 0) {
		*buf = malloc(v.mv_size ? v.mv_size : 1);
		if (*buf) {
			memcpy(*buf, v.mv_data, v.mv_size);
			*len = v.mv_size;
		} else {
			r = -ENOMEM;
		}
	}
	mdb_txn_abort(t);
	return r;
}

int mon_store_reset(struct mon_store *s, const struct osdmap *m)
{
	struct enc ef;
	uint8_t u[8];
	MDB_txn *t;
	int r;

	if (m->epoch <= s->last)
		return 0;	/* the history here already reaches it */
	enc_init(&ef);
	osdmap_encode(m, &ef);
	r = ef.err;
	if (r < 0)
		goto out_free;
	r = lmdb_err(mdb_txn_begin(s->env, NULL, 0, &t));
	if (r < 0)
		goto out_free;
	/* the history kept starts after the snapshot: no incremental yet
	 * (first = last + 1), the full map is the snapshot's */
	put_u64le(u, m->epoch);
	r = put(t, s->dbi, "full", 4, ef.buf, ef.len);
	if (r == 0)
		r = put(t, s->dbi, "last", 4, u, 8);
	put_u64le(u, m->epoch + 1);
	if (r == 0)
		r = put(t, s->dbi, "first", 5, u, 8);
	if (r == 0)
		r = put(t, s->dbi, "fsid", 4, m->fsid, 16);
	if (r < 0) {
		mdb_txn_abort(t);
		goto out_free;
	}
	r = lmdb_err(mdb_txn_commit(t));
	if (r == 0) {
		s->last = m->epoch;
		s->first = m->epoch + 1;
		memcpy(s->fsid, m->fsid, 16);
	}
out_free:
	enc_free(&ef);
	return r;
}

int mon_store_trim(struct mon_store *s, uint64_t first)
{
	uint8_t key[11], u[8];
	uint64_t to, ep;
	MDB_txn *t;
	int r;

	/* never past the last epoch: first = last + 1 keeps none, as after
	 * a snapshot was installed */
	to = first < s->last + 1 ? first : s->last + 1;
	if (s->last == 0 || to <= s->first)
		return 0;	/* already trimmed there (a replay, or a snapshot) */
	r = lmdb_err(mdb_txn_begin(s->env, NULL, 0, &t));
	if (r < 0)
		return r;
	for (ep = s->first; ep < to && r == 0; ep++) {
		MDB_val k = { sizeof(key), key };

		inc_key(ep, key);
		r = lmdb_err(mdb_del(t, s->dbi, &k, NULL));
		if (r == -ENOENT)
			r = 0;
	}
	put_u64le(u, to);
	if (r == 0)
		r = put(t, s->dbi, "first", 5, u, 8);
	if (r < 0) {
		mdb_txn_abort(t);
		return r;
	}
	r = lmdb_err(mdb_txn_commit(t));
	if (r == 0)
		s->first = to;
	return r;
}

int mon_store_load_latest(struct mon_store *s, struct osdmap **out)
{
	int r = load_map(s, "full", out);

	if (r == 0 && (*out)->epoch != s->last) {
		osdmap_free(*out);
		*out = NULL;
		r = -EUCLEAN;
	}
	return r;
}

int mon_store_load_incs(struct mon_store *s, uint64_t first, uint64_t last,
			struct osdmap_inc **incs)
{
	struct osdmap_inc *a;
	uint64_t n, i;
	MDB_txn *t;
	int r;

	*incs = NULL;
	if (first < s->first || last > s->last || first > last)
		return -ERANGE;
	n = last - first + 1;
	a = calloc(n, sizeof(*a));
	if (!a)
		return -ENOMEM;
	r = lmdb_err(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t));
	if (r < 0) {
		free(a);
		return r;
	}
	for (i = 0; i < n && r == 0; i++) {
		uint8_t key[11];
		MDB_val v;
		struct dec d;

		inc_key(first + i, key);
		r = get(t, s->dbi, key, sizeof(key), &v);
		if (r < 0)
			break;
		dec_init(&d, v.mv_data, v.mv_size);
		r = osdmap_inc_decode(&d, &a[i]);
		if (r == 0 && a[i].epoch != first + i)
			r = -EUCLEAN;
		if (r < 0) {
			i++;	/* clear this one too */
			break;
		}
	}
	mdb_txn_abort(t);
	if (r < 0) {
		for (uint64_t j = 0; j < i; j++)
			osdmap_inc_clear(&a[j]);
		free(a);
		return r;
	}
	*incs = a;
	return 0;
}

/*
 * Backup file (doc/admin.md, "Backing up the monitors"), written in
 * pieces so that a history of any length fits through bounded replies:
 *
 *   head:    "ATMONBK3" fsid[16] u64 first u64 last u64 incarnation
 *            u32 len + full map (the full map of epoch last)
 *            u32 len + auth state (len 0: authentication is off)
 *   history: for each epoch first..last: u32 len + its incremental
 *   trailer: u32 crc32c of every byte before it
 *
 * first is the oldest epoch whose incremental is kept: 1, or later on a
 * member that installed a snapshot or trimmed; first = last + 1 means no
 * incremental at all (the full map alone).  The monitor answers the head
 * and then ranges of the history; an incremental at or below last never
 * changes, so pieces fetched one after another make one consistent file.
 */
#define BACKUP_REC_MAX		(64u << 20)

static int has_inc(struct mon_store *s, MDB_txn *t, uint64_t epoch)
{
	uint8_t key[11];
	MDB_val v;

	inc_key(epoch, key);
	return get(t, s->dbi, key, sizeof(key), &v);
}

int mon_store_backup_head(struct mon_store *s, const void *auth, size_t alen, void **buf,
			  size_t *len, uint64_t *first, uint64_t *last)
{
	struct enc e;
	MDB_txn *t;
	MDB_val v;
	int r;

	*buf = NULL;
	if (s->last == 0)
		return -ENODATA;
	r = lmdb_err(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t));
	if (r < 0)
		return r;
	*last = s->last;
	*first = s->first;
	/* a store reset by a snapshot keeps the full map of its first epoch,
	 * not its incremental */
	while (*first <= *last && has_inc(s, t, *first) == -ENOENT)
		(*first)++;
	enc_init(&e);
	enc_raw(&e, BACKUP_MAGIC, 8);
	enc_raw(&e, s->fsid, 16);
	enc_u64(&e, *first);
	enc_u64(&e, *last);
	r = get(t, s->dbi, "incarnation", 11, &v);
	enc_u64(&e, r == 0 && v.mv_size == 8 ? get_u64le(v.mv_data) : 1);
	r = get(t, s->dbi, "full", 4, &v);
	if (r == 0) {
		enc_blob(&e, v.mv_data, v.mv_size);
		enc_u32(&e, (uint32_t)alen);
		enc_raw(&e, auth, alen);
	}
	mdb_txn_abort(t);
	if (r == 0)
		r = e.err;
	if (r == 0) {
		*buf = enc_take(&e, len);
		r = *buf ? 0 : -ENOMEM;
	}
	enc_free(&e);
	return r;
}

int mon_store_backup_incs(struct mon_store *s, uint64_t from, uint64_t to, size_t max,
			  void **buf, size_t *len, uint64_t *next)
{
	struct enc e;
	MDB_txn *t;
	uint64_t ep;
	int r;

	*buf = NULL;
	if (from > to || to > s->last || from < s->first)
		return -ERANGE;
	r = lmdb_err(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t));
	if (r < 0)
		return r;
	enc_init(&e);
	/* at least one record, then as many as fit in max */
	for (ep = from; ep <= to && r == 0; ep++) {
		uint8_t key[11];
		MDB_val v;

		inc_key(ep, key);
		r = get(t, s->dbi, key, sizeof(key), &v);
		if (r == -ENOENT)
			r = -ERANGE;	/* trimmed meanwhile */
		if (r < 0)
			break;
		if (ep > from && e.len + 4 + v.mv_size > max)
			break;
		enc_blob(&e, v.mv_data, v.mv_size);
	}
	mdb_txn_abort(t);
	if (r == 0)
		r = e.err;
	if (r == 0) {
		*next = ep;
		*buf = enc_take(&e, len);
		r = *buf ? 0 : -ENOMEM;
	}
	enc_free(&e);
	return r;
}

void mon_store_remove(const char *dir)
{
	remove_store(dir);
}

static void remove_store(const char *dir)
{
	static const char *const files[] = { "data.mdb", "lock.mdb" };
	char path[4096];

	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/store/%s", dir, files[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/store", dir);
	rmdir(path);
}

/* Reads n bytes of the backup, adding them to the checksum. */
static int bk_read(FILE *f, void *p, size_t n, uint32_t *crc)
{
	if (n && fread(p, 1, n, f) != n)
		return -EBADMSG;
	*crc = atoll__crc32c(*crc, p, n);
	return 0;
}

/* Reads one length-prefixed record (malloc'd into *p; an empty one only
 * when allowed: *p NULL). */
static int bk_record_opt(FILE *f, void **p, size_t *n, uint32_t *crc, bool empty_ok)
{
	uint8_t l[4];

	*p = NULL;
	if (bk_read(f, l, 4, crc) < 0)
		return -EBADMSG;
	*n = get_u32le(l);
	if (*n == 0 && empty_ok)
		return 0;
	if (*n == 0 || *n > BACKUP_REC_MAX)
		return -EBADMSG;
	*p = malloc(*n);
	if (!*p)
		return -ENOMEM;
	return bk_read(f, *p, *n, crc);
}

static int bk_record(FILE *f, void **p, size_t *n, uint32_t *crc)
{
	return bk_record_opt(f, p, n, crc, false);
}

/* The backup's auth state, checked and made safe to start from: the
 * client ids given out after the backup are unknown, so the restored
 * state skips RESTORE_ID_SKIP of them and every monitor's range is
 * dropped (each gets a fresh one).  *out malloc'd; -EBADMSG: malformed. */
static int restored_auth(const void *p, size_t n, void **out, size_t *outlen)
{
	struct mon_auth_state *st = calloc(1, sizeof(*st));
	struct enc e;
	int r;

	*out = NULL;
	if (!st)
		return -ENOMEM;
	r = mon_auth_state_decode(p, n, st);
	if (r != 1 || !st->booted) {
		r = -EBADMSG;
		goto out;
	}
	st->id_next = st->id_next + RESTORE_ID_SKIP > MON_AUTH_SEQ_MAX ? MON_AUTH_SEQ_MAX :
		      st->id_next + RESTORE_ID_SKIP;
	st->nranges = 0;
	enc_init(&e);
	mon_auth_state_encode(st, &e);
	r = e.err;
	if (!r) {
		*out = enc_take(&e, outlen);
		r = *out ? 0 : -ENOMEM;
	}
	auth_wipe(e.buf, e.len);
	enc_free(&e);
out:
	keyring_free(&st->ents);
	auth_wipe(st, sizeof(*st));
	free(st);
	return r;
}

int mon_store_restore(const char *dir, FILE *f, char *err, size_t errlen)
{
	struct mon_store *s = NULL;
	struct osdmap *replay = NULL, *full = NULL;
	uint8_t hdr[8 + 16 + 24], tail[4], extra;
	uint64_t first, last, ep, incarnation;
	uint32_t crc = 0;
	const uint8_t *fsid = hdr + 8;
	void *fp = NULL, *p = NULL, *ap = NULL;
	size_t fl, n, al = 0;
	bool v3;
	MDB_txn *t = NULL;
	uint8_t u[8];
	int r;

	err[0] = '\0';
	if (fread(hdr, 1, sizeof(hdr), f) != sizeof(hdr) ||
	    (memcmp(hdr, BACKUP_MAGIC, 8) != 0 && memcmp(hdr, BACKUP_MAGIC_V2, 8) != 0)) {
		snprintf(err, errlen, "the file is not a monitor backup (bad magic); take "
			 "one with: atoll mon backup FILE");
		return -EBADMSG;
	}
	v3 = memcmp(hdr, BACKUP_MAGIC, 8) == 0;
	crc = atoll__crc32c(0, hdr, sizeof(hdr));
	first = get_u64le(hdr + 24);
	last = get_u64le(hdr + 32);
	incarnation = get_u64le(hdr + 40);
	if (last == 0 || first == 0 || first > last + 1 || incarnation == 0)
		goto out_bad;
	r = bk_record(f, &fp, &fl, &crc);
	if (r == -ENOMEM)
		goto out;
	if (r < 0)
		goto out_bad;
	{
		struct dec fd;

		dec_init(&fd, fp, fl);
		if (osdmap_decode(&fd, &full) < 0 || full->epoch != last ||
		    memcmp(full->fsid, fsid, 16) != 0)
			goto out_bad;
	}
	if (v3) {
		r = bk_record_opt(f, &p, &n, &crc, true);
		if (r == 0 && p)
			r = restored_auth(p, n, &ap, &al);
		if (p)
			auth_wipe(p, n);
		free(p);
		p = NULL;
		if (r == -ENOMEM)
			goto out;
		if (r < 0)
			goto out_bad;
	}
	/* a history from epoch 1 is replayed and must give the full map; a
	 * partial one (a member that installed a snapshot) is checked epoch
	 * by epoch and the full map is the state */
	if (first == 1) {
		replay = osdmap_new(fsid);
		if (!replay) {
			r = -ENOMEM;
			goto out;
		}
	}
	r = mon_store_create(dir, &s, err, errlen);
	if (r < 0)
		goto out;
	r = lmdb_err(mdb_txn_begin(s->env, NULL, 0, &t));
	if (r < 0)
		goto out;
	for (ep = first; ep <= last; ep++) {
		struct osdmap_inc inc;
		struct dec id;

		r = bk_record(f, &p, &n, &crc);
		if (r == -ENOMEM)
			goto out;
		if (r < 0)
			goto out_bad;
		dec_init(&id, p, n);
		if (osdmap_inc_decode(&id, &inc) < 0)
			goto out_bad;
		r = inc.epoch != ep ? -EINVAL : replay ? osdmap_apply(replay, &inc) : 0;
		osdmap_inc_clear(&inc);
		if (r < 0)
			goto out_bad;
		r = write_epoch(s, t, p, n, ep, NULL, 0, fsid, true);
		free(p);
		p = NULL;
		if (r < 0)
			goto out;
		s->first = first;
		s->last = ep;
	}
	if (fread(tail, 1, 4, f) != 4 || get_u32le(tail) != crc ||
	    fread(&extra, 1, 1, f) != 0) {
		snprintf(err, errlen, "the monitor backup is damaged or cut short (its "
			 "checksum does not match); take a new one with: atoll mon "
			 "backup FILE");
		r = -EBADMSG;
		goto out;
	}
	if (replay) {
		/* the creation time is not in any incremental */
		replay->created_ms = full->created_ms;
		if (full->epoch != last || memcmp(full->fsid, fsid, 16) != 0 ||
		    (first == 1 && !osdmap_equal(full, replay)))
			goto out_bad;
	}
	put_u64le(u, last);
	r = put(t, s->dbi, "full", 4, fp, fl);
	/* no incremental kept: first = last + 1, as after a snapshot
	 * (mon_store_reset) */
	if (r == 0 && first > last) {
		uint8_t f1[8];

		put_u64le(f1, first);
		r = put(t, s->dbi, "first", 5, f1, 8);
	}
	if (r == 0)
		r = put(t, s->dbi, "last", 4, u, 8);
	/* the replicated state of the restored monitor starts from here */
	if (r == 0)
		r = put(t, s->dbi, "seed", 4, fp, fl);
	if (r == 0 && ap)
		r = put(t, s->dbi, "seed_auth", 9, ap, al);
	if (r == 0)
		r = put(t, s->dbi, "fsid", 4, fsid, 16);
	/* the incarnation the backup was taken in (atoll-mon --restore
	 * stamps the next one) */
	put_u64le(u, incarnation);
	if (r == 0)
		r = put(t, s->dbi, "incarnation", 11, u, 8);
	if (r == 0)
		r = lmdb_err(mdb_txn_commit(t));
	t = NULL;
	goto out;

out_bad:
	r = -EBADMSG;
	snprintf(err, errlen, "the monitor backup is damaged: its history does not "
		 "decode or does not replay to its full map");
out:
	free(p);
	free(fp);
	if (ap)
		auth_wipe(ap, al);
	free(ap);
	if (t)
		mdb_txn_abort(t);
	if (r < 0 && s) {
		mon_store_close(s);
		remove_store(dir);	/* never leave half a store behind */
	} else {
		mon_store_close(s);
	}
	osdmap_free(replay);
	osdmap_free(full);
	if (r < 0 && !err[0])
		snprintf(err, errlen, "cannot restore into '%s': %s", dir, strerror(-r));
	return r;
}

/* "incarnation": the monitor cluster's incarnation as last applied here
 * (rebuild.c); absent = 1. */
int mon_store_incarnation(struct mon_store *s, uint64_t *out)
{
	MDB_txn *t;
	MDB_val v;
	int r;

	*out = 1;
	r = lmdb_err(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t));
	if (r < 0)
		return r;
	r = get(t, s->dbi, "incarnation", 11, &v);
	if (r == 0 && v.mv_size == 8)
		*out = get_u64le(v.mv_data);
	mdb_txn_abort(t);
	return r == -ENOENT ? 0 : r;
}

int mon_store_set_incarnation(struct mon_store *s, uint64_t inc)
{
	uint8_t u[8];
	MDB_txn *t;
	int r;

	r = lmdb_err(mdb_txn_begin(s->env, NULL, 0, &t));
	if (r < 0)
		return r;
	put_u64le(u, inc);
	r = put(t, s->dbi, "incarnation", 11, u, 8);
	if (r < 0) {
		mdb_txn_abort(t);
		return r;
	}
	return lmdb_err(mdb_txn_commit(t));
}
