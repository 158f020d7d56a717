/*
 * pglog.c - the PG log, the PG info and the index of recent request ids.
 *
 * On disk everything lives in the omap of the PG's meta object (pglog.h
 * lists the keys), written in the same store transaction as the op that
 * produced it: after a crash the log says exactly which ops the objects
 * reflect, and a resent op is recognised by its reqid (also after a
 * primary change, since replicas keep the same records).
 *
 * In memory only what the dup check needs is kept: a ring of (reqid,
 * version, result) in seq order with a chained hash on the reqid.  Log
 * entries and dup records form one seq-ordered sequence (the oldest
 * entries become dups when the log is trimmed), so one ring holds both
 * and trimming is "drop the oldest" at both ends of the bound.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "pglog.h"
#include "store.h"

#define ENTRY_V 1
#define DUP_V 1
#define INFO_V 2	/* 2: lacks_since */

static void enc_version(struct enc *e, struct pg_version v)
{
	enc_u64(e, v.epoch);
	enc_u64(e, v.seq);
}

static struct pg_version dec_version(struct dec *d)
{
	struct pg_version v;

	v.epoch = dec_u64(d);
	v.seq = dec_u64(d);
	return v;
}

void pglog_entry_encode(const struct pglog_entry *le, struct enc *e)
{
	size_t h = enc_begin(e, ENTRY_V, 1);

	enc_version(e, le->version);
	enc_u64(e, le->client);
	enc_u64(e, le->tid);
	enc_u8(e, le->op);
	enc_u32(e, (uint32_t)le->result);
	enc_version(e, le->prior);
	enc_blob(e, le->oid, le->oid_len);
	enc_end(e, h);
}

int pglog_entry_decode(struct dec *d, struct pglog_entry *le)
{
	struct dec b;
	size_t n = 0;

	if (dec_msg_begin(d, ENTRY_V, &b))
		return d->err;
	le->version = dec_version(&b);
	le->client = dec_u64(&b);
	le->tid = dec_u64(&b);
	le->op = dec_u8(&b);
	le->result = (int32_t)dec_u32(&b);
	le->prior = dec_version(&b);
	le->oid = dec_blob(&b, &n, STORE_NAME_MAX);
	le->oid_len = (uint32_t)n;
	if (!b.err && (le->op < PGLOG_MODIFY || le->op > PGLOG_DELETE || n == 0 ||
		       memchr(le->oid, 0, n)))
		dec_fail(&b, -EBADMSG);
	if (!b.err && pg_version_cmp(le->prior, le->version) >= 0)
		dec_fail(&b, -EBADMSG);
	return dec_end(d, &b);
}

void pglog_dup_encode(const struct pglog_dup *du, struct enc *e)
{
	size_t h = enc_begin(e, DUP_V, 1);

	enc_version(e, du->version);
	enc_u64(e, du->client);
	enc_u64(e, du->tid);
	enc_u32(e, (uint32_t)du->result);
	enc_end(e, h);
}

int pglog_dup_decode(struct dec *d, struct pglog_dup *du)
{
	struct dec b;

	if (dec_msg_begin(d, DUP_V, &b))
		return d->err;
	du->version = dec_version(&b);
	du->client = dec_u64(&b);
	du->tid = dec_u64(&b);
	du->result = (int32_t)dec_u32(&b);
	return dec_end(d, &b);
}

static void enc_osds(struct enc *e, uint8_t n, const int32_t *osds)
{
	enc_u8(e, n);
	for (uint8_t i = 0; i < n; i++)
		enc_u32(e, (uint32_t)osds[i]);
}

static uint8_t dec_osds(struct dec *d, int32_t *osds)
{
	uint8_t n = dec_u8(d);

	if (n > OSDMAP_SIZE_MAX) {
		dec_fail(d, -EBADMSG);
		return 0;
	}
	for (uint8_t i = 0; i < n; i++) {
		osds[i] = (int32_t)dec_u32(d);
		if (osds[i] < -1 || osds[i] >= OSDMAP_OSD_MAX)
			dec_fail(d, -EBADMSG);
	}
	return n;
}

void pg_info_encode(const struct pg_info *info, struct enc *e)
{
	size_t h = enc_begin(e, INFO_V, 1);

	enc_u32(e, info->pool);
	enc_u32(e, info->pg);
	enc_version(e, info->last_update);
	enc_version(e, info->last_complete);
	enc_version(e, info->log_tail);
	enc_u64(e, info->last_epoch_started);
	enc_u64(e, info->same_interval_since);
	enc_osds(e, info->nacting, info->acting);
	enc_u32(e, (uint32_t)info->primary);
	enc_u32(e, info->npast);
	for (uint32_t i = 0; i < info->npast; i++) {
		const struct pg_interval *iv = &info->past[i];
		size_t hi = enc_begin(e, 1, 1);

		enc_u64(e, iv->first);
		enc_u64(e, iv->last);
		enc_osds(e, iv->nacting, iv->acting);
		enc_u32(e, (uint32_t)iv->primary);
		enc_u8(e, iv->maybe_went_rw);
		enc_end(e, hi);
	}
	enc_u64(e, info->lacks_since);
	enc_end(e, h);
}

int pg_info_decode(struct dec *d, struct pg_info *info)
{
	struct dec b;
	uint8_t v;

	memset(info, 0, sizeof(*info));
	if (dec_begin(d, INFO_V, &b, &v))
		return d->err;
	info->pool = dec_u32(&b);
	info->pg = dec_u32(&b);
	info->last_update = dec_version(&b);
	info->last_complete = dec_version(&b);
	info->log_tail = dec_version(&b);
	info->last_epoch_started = dec_u64(&b);
	info->same_interval_since = dec_u64(&b);
	info->nacting = dec_osds(&b, info->acting);
	info->primary = (int32_t)dec_u32(&b);
	info->npast = dec_count(&b, PG_PAST_INTERVALS_MAX, 6);
	if (!b.err && info->npast) {
		info->past = calloc(info->npast, sizeof(*info->past));
		if (!info->past)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; !b.err && i < info->npast; i++) {
		struct pg_interval *iv = &info->past[i];
		struct dec ib;

		if (dec_msg_begin(&b, 1, &ib))
			break;
		iv->first = dec_u64(&ib);
		iv->last = dec_u64(&ib);
		iv->nacting = dec_osds(&ib, iv->acting);
		iv->primary = (int32_t)dec_u32(&ib);
		iv->maybe_went_rw = dec_u8(&ib);
		if (!ib.err && iv->first > iv->last)
			dec_fail(&ib, -EBADMSG);
		dec_end(&b, &ib);
	}
	if (v >= 2)
		info->lacks_since = dec_u64(&b);
	if (!b.err && (pg_version_cmp(info->log_tail, info->last_update) > 0 ||
		       pg_version_cmp(info->last_complete, info->last_update) > 0 ||
		       info->pg >= OSDMAP_PG_MAX))
		dec_fail(&b, -EBADMSG);
	int r = dec_end(d, &b);

	if (r) {
		free(info->past);
		info->past = NULL;
		info->npast = 0;
	}
	return r;
}

void pg_info_clear(struct pg_info *info)
{
	free(info->past);
	info->past = NULL;
	info->npast = 0;
}

int pg_info_copy(struct pg_info *dst, const struct pg_info *src)
{
	struct pg_interval *past = NULL;

	if (src->npast) {
		past = malloc(src->npast * sizeof(*past));
		if (!past)
			return -ENOMEM;
		memcpy(past, src->past, src->npast * sizeof(*past));
	}
	*dst = *src;
	dst->past = past;
	return 0;
}

int pg_info_add_past(struct pg_info *info, const struct pg_interval *iv)
{
	for (uint32_t i = 0; i < info->npast; i++)
		if (info->past[i].first == iv->first && info->past[i].last == iv->last)
			return 0;
	if (info->npast == PG_PAST_INTERVALS_MAX) {
		/* the oldest goes, but a hole last: forgetting one would let
		 * the PG go active on a history it cannot see (peering.c) */
		uint32_t drop = 0;

		while (drop + 1 < info->npast && pg_interval_is_hole(&info->past[drop]))
			drop++;
		memmove(info->past + drop, info->past + drop + 1,
			(info->npast - drop - 1) * sizeof(*iv));
		info->npast--;
	}
	struct pg_interval *p = realloc(info->past, (info->npast + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	info->past = p;
	/* keep them ordered by first epoch */
	uint32_t at = info->npast;

	while (at > 0 && p[at - 1].first > iv->first)
		at--;
	memmove(p + at + 1, p + at, (info->npast - at) * sizeof(*p));
	p[at] = *iv;
	info->npast++;
	return 0;
}

void pg_info_prune_past(struct pg_info *info, uint64_t before)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < info->npast; i++)
		if (info->past[i].last >= before)
			info->past[j++] = info->past[i];
	info->npast = j;
	if (!j) {
		free(info->past);
		info->past = NULL;
	}
}

void pglog_key(char kind, uint64_t seq, uint8_t out[PGLOG_KEY_LEN])
{
	out[0] = (uint8_t)kind;
	for (int i = 0; i < 8; i++)
		out[1 + i] = (uint8_t)(seq >> (56 - 8 * i));
}

/* ---- the in-memory index ------------------------------------------------ */

static uint32_t hash_reqid(uint64_t client, uint64_t tid)
{
	uint64_t x = client * 0x9e3779b97f4a7c15ull ^ (tid + 0x632be59bd9b4e019ull);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (uint32_t)x;
}

int pglog_init(struct pglog *l, uint32_t log_max, uint32_t dups_max)
{
	memset(l, 0, sizeof(*l));
	if (log_max == 0)
		return -EINVAL;
	l->log_max = log_max;
	l->dups_max = dups_max;
	l->cap = log_max + dups_max;
	l->nbuckets = 16;
	while (l->nbuckets < l->cap)
		l->nbuckets <<= 1;
	l->ring = calloc(l->cap, sizeof(*l->ring));
	l->buckets = malloc(l->nbuckets * sizeof(*l->buckets));
	if (!l->ring || !l->buckets) {
		pglog_destroy(l);
		return -ENOMEM;
	}
	memset(l->buckets, 0xff, l->nbuckets * sizeof(*l->buckets));
	return 0;
}

void pglog_destroy(struct pglog *l)
{
	free(l->ring);
	free(l->buckets);
	l->ring = NULL;
	l->buckets = NULL;
}

uint32_t pglog_nlog(const struct pglog *l)
{
	return l->count < l->log_max ? l->count : l->log_max;
}

uint32_t pglog_ndups(const struct pglog *l)
{
	return l->count - pglog_nlog(l);
}

/* Ring position of the i-th oldest record. */
static uint32_t pos(const struct pglog *l, uint32_t i)
{
	return (l->first + i) % l->cap;
}

bool pglog_find(const struct pglog *l, uint64_t client, uint64_t tid,
		struct pg_version *version, int32_t *result)
{
	int32_t i = l->buckets[hash_reqid(client, tid) & (l->nbuckets - 1)];

	while (i >= 0) {
		const struct pglog_slot *s = &l->ring[i];

		if (s->client == client && s->tid == tid) {
			if (version)
				*version = s->version;
			if (result)
				*result = s->result;
			return true;
		}
		i = s->hnext;
	}
	return false;
}

static void drop_oldest(struct pglog *l)
{
	uint32_t idx = pos(l, 0);
	struct pglog_slot *s = &l->ring[idx];
	int32_t *pp = &l->buckets[hash_reqid(s->client, s->tid) & (l->nbuckets - 1)];

	while (*pp >= 0 && *pp != (int32_t)idx)
		pp = &l->ring[*pp].hnext;
	if (*pp == (int32_t)idx)
		*pp = s->hnext;
	l->first = (l->first + 1) % l->cap;
	l->count--;
}

static void push(struct pglog *l, uint64_t client, uint64_t tid, struct pg_version v,
		 int32_t result)
{
	if (l->count == l->cap)
		drop_oldest(l);
	uint32_t idx = pos(l, l->count);
	struct pglog_slot *s = &l->ring[idx];
	int32_t *b = &l->buckets[hash_reqid(client, tid) & (l->nbuckets - 1)];

	s->client = client;
	s->tid = tid;
	s->version = v;
	s->result = result;
	s->hnext = *b;
	*b = (int32_t)idx;
	l->count++;
}

int pglog_load(struct pglog *l, uint64_t client, uint64_t tid, struct pg_version v,
	       int32_t result)
{
	/* records are in seq order; a gap (an op whose transaction failed
	 * after later ones were queued) is tolerated */
	if (l->count && v.seq <= l->ring[pos(l, l->count - 1)].version.seq)
		return -EUCLEAN;
	push(l, client, tid, v, result);
	return 0;
}

int pglog_write_info(const struct pg_info *info, struct store_txn *txn, uint64_t coll)
{
	struct enc e;
	int r;

	enc_init(&e);
	pg_info_encode(info, &e);
	r = e.err ? e.err : store_txn_omap_set(txn, coll, PG_META_OID, "info", 4, e.buf, e.len);
	enc_free(&e);
	return r;
}

int pglog_append(struct pglog *l, struct pg_info *info, const struct pglog_entry *le,
		 struct store_txn *txn, uint64_t coll)
{
	uint8_t key[PGLOG_KEY_LEN];
	struct enc e;
	int r;

	if (le->version.seq != info->last_update.seq + 1)
		return -EINVAL;
	enc_init(&e);
	pglog_entry_encode(le, &e);
	pglog_key('l', le->version.seq, key);
	r = e.err ? e.err : store_txn_omap_set(txn, coll, PG_META_OID, key, sizeof(key),
					       e.buf, e.len);
	if (r)
		goto out;
	/* Trim: the entry log_max back becomes a dup record. */
	if (l->count >= l->log_max) {
		const struct pglog_slot *sl = &l->ring[pos(l, l->count - l->log_max)];
		uint64_t s = sl->version.seq;
		struct pglog_dup du = {
			.version = sl->version, .client = sl->client,
			.tid = sl->tid, .result = sl->result,
		};

		pglog_key('l', s, key);
		r = store_txn_omap_rm(txn, coll, PG_META_OID, key, sizeof(key));
		if (r)
			goto out;
		if (l->dups_max) {
			enc_reset(&e);
			pglog_dup_encode(&du, &e);
			pglog_key('d', s, key);
			r = e.err ? e.err : store_txn_omap_set(txn, coll, PG_META_OID, key,
							       sizeof(key), e.buf, e.len);
			if (r)
				goto out;
		}
		info->log_tail = sl->version;
	}
	if (l->count == l->cap && l->dups_max) {
		pglog_key('d', l->ring[pos(l, 0)].version.seq, key);
		r = store_txn_omap_rm(txn, coll, PG_META_OID, key, sizeof(key));
		if (r)
			goto out;
	}
	push(l, le->client, le->tid, le->version, le->result);
	info->last_update = le->version;
	info->last_complete = le->version;
	r = pglog_write_info(info, txn, coll);
out:
	enc_free(&e);
	return r;
}

/* ---- reading at startup -------------------------------------------------- */

struct read_ctx {
	struct pglog *l;
	int err;
};

static int read_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct read_ctx *c = arg;
	const uint8_t *k = key;
	struct dec d;
	int r;

	if (klen != PGLOG_KEY_LEN || (k[0] != 'l' && k[0] != 'd'))
		return 0;
	dec_init(&d, val, vlen);
	if (k[0] == 'd') {
		struct pglog_dup du;

		r = pglog_dup_decode(&d, &du);
		if (!r)
			r = pglog_load(c->l, du.client, du.tid, du.version, du.result);
	} else {
		struct pglog_entry le;

		r = pglog_entry_decode(&d, &le);
		if (!r)
			r = pglog_load(c->l, le.client, le.tid, le.version, le.result);
	}
	if (r) {
		c->err = r == -EBADMSG ? -EUCLEAN : r;
		return 1;
	}
	return 0;
}

int pglog_read(struct store *st, uint64_t coll, struct pg_info *info, struct pglog *l)
{
	struct read_ctx c = { .l = l };
	void *val = NULL;
	size_t vlen = 0;
	struct dec d;
	int r;

	r = store_omap_get(st, coll, PG_META_OID, "info", 4, &val, &vlen);
	if (r == -ENODATA)
		return -ENOENT;
	if (r)
		return r;
	dec_init(&d, val, vlen);
	r = pg_info_decode(&d, info);
	free(val);
	if (r)
		return -EUCLEAN;
	/* "d" keys sort before "l" keys, and each run is in seq order, so
	 * the records come oldest first. */
	r = store_omap_list(st, coll, PG_META_OID, NULL, 0, 0, read_one, &c);
	if (r < 0 || c.err) {
		pg_info_clear(info);
		return c.err ? c.err : r;
	}
	return 0;
}
