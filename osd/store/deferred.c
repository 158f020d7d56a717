/*
 * deferred.c - small writes journaled in the kv, applied in place later.
 *
 * A durable 4 KiB write through the copy-on-write path costs three device
 * round trips before it can be acknowledged: the data write, its flush,
 * and the kv commit's flush.  Small writes (up to defer_max bytes) take a
 * shorter way: their blocks go into the batch's kv commit itself, as one
 * "blob" per batch (key: the commit's sequence number; value: a header
 * listing object id, logical block, target block and crc per slot, then
 * the 4 KiB slots), and the chunk record marks each such block deferred
 * with the blob and slot holding its content.  One flush, the kv's,
 * makes the write durable.  Readers of a deferred block read the slot.
 *
 * Later (enough journaled, or the store is idle, or at open after a
 * crash) the commit thread applies the blobs: it writes every slot that
 * is still current to its block in place, flushes the block, then in one
 * kv transaction clears the deferred marks and deletes the blobs.  This
 * is the one case where a block that held acknowledged data is
 * overwritten in place (DESIGN.md allows it for a journaled small write):
 * until the marks are cleared, readers take the slot, and a crash in
 * between just applies the blob again at the next open.  A blob is
 * applied only once its commit is durable and no reader that began
 * before it is left (such a reader could still be reading the old
 * content of the block being overwritten).
 *
 * Blob values are stored without the kv's whole-value crc (a read of one
 * slot would have to check them all): the header has its own crc32c and
 * each slot is checked against the crc in its chunk record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "crc32c.h"
#include "log.h"

#define BS STORE_BLOCK_SIZE
#define BLOB_MAGIC 0x424c4244u	/* "DBLB" */
#define BLOB_HDR 16u
#define BLOB_ENT 32u

struct blob_ent {
	uint64_t id;
	uint64_t lblk;
	uint64_t pblk;
	uint32_t crc;
	uint32_t pad;
};

_Static_assert(sizeof(struct blob_ent) == BLOB_ENT, "blob entry layout");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "blob header is little-endian");

int dblob_add(struct batch *b, uint64_t id, uint64_t lblk, uint64_t pblk,
	      const uint8_t *data, uint32_t crc, uint16_t *slot)
{
	struct dblob *d = &b->blob;

	if (d->n >= DBLOB_SLOTS_MAX)
		return -ENOSPC;
	if (d->n == d->cap) {
		uint32_t cap = d->cap ? d->cap * 2 : 16;
		struct blob_ent *e = realloc(d->ents, cap * sizeof(*e));
		uint8_t *nd;

		if (!e)
			return -ENOMEM;
		d->ents = e;
		nd = realloc(d->data, (size_t)cap * BS);
		if (!nd)
			return -ENOMEM;
		d->data = nd;
		d->cap = cap;
	}
	d->ents[d->n] = (struct blob_ent){ id, lblk, pblk, crc, 0 };
	memcpy(d->data + (size_t)d->n * BS, data, BS);
	*slot = (uint16_t)d->n++;
	return 0;
}

void dblob_free(struct dblob *d)
{
	free(d->ents);
	free(d->data);
	memset(d, 0, sizeof(*d));
}

int dblob_put(struct batch *b)
{
	struct dblob *d = &b->blob;
	uint8_t k[8];
	MDB_val key = { 8, k }, val;
	uint32_t hdr[4];
	uint8_t *p;
	int rc;

	if (!d->n)
		return 0;
	put_be64(k, d->seq);
	val.mv_size = BLOB_HDR + (size_t)d->n * (BLOB_ENT + BS);
	val.mv_data = NULL;
	rc = mdb_put(b->txn, b->st->kv.deferred, &key, &val, MDB_RESERVE);
	if (rc)
		return kv_err(rc);
	p = val.mv_data;
	hdr[0] = BLOB_MAGIC;
	hdr[1] = d->n;
	hdr[2] = atoll__crc32c(0, d->ents, (size_t)d->n * BLOB_ENT);
	hdr[3] = 0;
	memcpy(p, hdr, BLOB_HDR);
	memcpy(p + BLOB_HDR, d->ents, (size_t)d->n * BLOB_ENT);
	memcpy(p + BLOB_HDR + (size_t)d->n * BLOB_ENT, d->data, (size_t)d->n * BS);
	b->changed = true;
	return 0;
}

/* Checks a blob value; on success *n and *ents describe it. */
static int blob_parse(const MDB_val *v, uint32_t *n, const struct blob_ent **ents,
		      const uint8_t **data)
{
	const uint8_t *p = v->mv_data;
	uint32_t hdr[4];

	if (v->mv_size < BLOB_HDR)
		return -EIO;
	memcpy(hdr, p, BLOB_HDR);
	if (hdr[0] != BLOB_MAGIC || hdr[1] == 0 || hdr[1] > DBLOB_SLOTS_MAX ||
	    v->mv_size != BLOB_HDR + (size_t)hdr[1] * (BLOB_ENT + BS))
		return -EIO;
	if (atoll__crc32c(0, p + BLOB_HDR, (size_t)hdr[1] * BLOB_ENT) != hdr[2])
		return -EIO;
	*n = hdr[1];
	*ents = (const struct blob_ent *)(p + BLOB_HDR);	/* 16-aligned in the map */
	*data = p + BLOB_HDR + (size_t)hdr[1] * BLOB_ENT;
	return 0;
}

int dblob_read(struct store *st, MDB_txn *t, struct batch *b, uint64_t seq, uint16_t slot,
	       uint32_t crc, void *out)
{
	uint8_t k[8];
	MDB_val key = { 8, k }, val;
	const uint8_t *p;
	uint32_t n;
	int rc;

	if (b && seq == b->blob.seq && slot < b->blob.n) {
		p = b->blob.data + (size_t)slot * BS;
	} else {
		put_be64(k, seq);
		rc = mdb_get(t, st->kv.deferred, &key, &val);
		if (rc) {
			log_error("store", "journaled block (blob %llu slot %u) is missing",
				  (unsigned long long)seq, slot);
			return -EIO;
		}
		p = val.mv_data;
		if (val.mv_size < BLOB_HDR)
			return -EIO;
		memcpy(&n, p + 4, 4);
		if (slot >= n || val.mv_size != BLOB_HDR + (size_t)n * (BLOB_ENT + BS))
			return -EIO;
		p += BLOB_HDR + (size_t)n * BLOB_ENT + (size_t)slot * BS;
	}
	if (atoll__crc32c(0, p, BS) != crc) {
		log_error("store", "checksum mismatch in journaled block (blob %llu slot %u)",
			  (unsigned long long)seq, slot);
		return -EIO;
	}
	memcpy(out, p, BS);
	return 0;
}

static uint64_t oldest_reader(struct store *st)
{
	uint64_t oldest;

	pthread_mutex_lock(&st->rlock);
	oldest = st->readers.next != &st->readers ? st->readers.next->seq : UINT64_MAX;
	pthread_mutex_unlock(&st->rlock);
	return oldest;
}

/* Applies journaled blobs: every durable blob no reader can still need
 * the old blocks of, at most max_blocks slots (0 = all).  Commit thread
 * (or open) only; the caller has made every committed batch durable.
 * Returns the number of slots consumed or a negative errno. */
int64_t deferred_apply(struct store *st, uint64_t max_blocks)
{
	struct bio_write *w = NULL;
	uint8_t **bufs = NULL;
	size_t nw = 0, capw = 0;
	uint64_t limit = oldest_reader(st), consumed = 0, last_seq = 0;
	MDB_txn *t = NULL;
	MDB_cursor *cur = NULL;
	MDB_val k, v;
	int rc, r = 0;

	pthread_mutex_lock(&st->alloc_lock);
	rc = mdb_txn_begin(st->kv.env, NULL, 0, &t);
	if (rc) {
		r = kv_err(rc);
		goto out_unlock;
	}
	rc = mdb_cursor_open(t, st->kv.deferred, &cur);
	if (rc) {
		r = kv_err(rc);
		goto out_abort;
	}
	/* Pass 1: find the slots still current and queue their writes. */
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		const struct blob_ent *ents;
		const uint8_t *data;
		uint32_t n;
		uint64_t seq;

		if (k.mv_size != 8) {
			r = -EIO;
			break;
		}
		seq = get_be64(k.mv_data);
		if (seq > limit || (max_blocks && consumed >= max_blocks))
			break;
		if (blob_parse(&v, &n, &ents, &data)) {
			log_error("store", "journal blob %llu is damaged; its blocks read as -EIO "
				  "until repaired", (unsigned long long)seq);
			r = -EIO;
			break;
		}
		for (uint32_t s = 0; s < n; s++) {
			struct blob_ent e;
			struct chunk c;
			uint8_t ck[12];
			const void *cv;
			size_t cvl;
			unsigned i;

			memcpy(&e, &ents[s], sizeof(e));
			i = (unsigned)(e.lblk % CHUNK_BLOCKS);
			r = kv_get(t, st->kv.chunks, ck, key_chunk(ck, e.id, (uint32_t)(e.lblk / CHUNK_BLOCKS)),
				   &cv, &cvl);
			if (r == -ENOENT) {
				r = 0;
				continue;	/* object gone or block dropped since */
			}
			if (!r)
				r = chunk_decode(&c, cv, cvl) ? -EIO : 0;
			if (r)
				goto out_cursor;
			if (!(c.deferred & (1ull << i)) || c.dseq[i] != seq || c.dslot[i] != s ||
			    c.pblk[i] != e.pblk)
				continue;	/* rewritten since: a newer slot or block holds it */
			if (atoll__crc32c(0, data + (size_t)s * BS, BS) != c.crc[i]) {
				log_error("store", "journaled block (blob %llu slot %u) has a bad "
					  "checksum; left journaled", (unsigned long long)seq, s);
				continue;
			}
			if (nw == capw) {
				size_t cap = capw ? capw * 2 : 64;
				struct bio_write *nwv = realloc(w, cap * sizeof(*nwv));
				uint8_t **nb;

				if (!nwv) {
					r = -ENOMEM;
					goto out_cursor;
				}
				w = nwv;
				nb = realloc(bufs, cap * sizeof(*nb));
				if (!nb) {
					r = -ENOMEM;
					goto out_cursor;
				}
				bufs = nb;
				capw = cap;
			}
			bufs[nw] = bio_alloc(BS);
			if (!bufs[nw]) {
				r = -ENOMEM;
				goto out_cursor;
			}
			memcpy(bufs[nw], data + (size_t)s * BS, BS);
			w[nw] = (struct bio_write){ e.pblk * BS, BS, bufs[nw] };
			nw++;
			c.deferred &= ~(1ull << i);
			{
				uint8_t rec[CHUNK_REC_MAX];

				r = kv_put(t, st->kv.chunks, ck, 12, rec, chunk_encode(&c, rec));
			}
			if (r)
				goto out_cursor;
		}
		consumed += n;
		last_seq = seq;
	}
	if (rc && rc != MDB_NOTFOUND && !r)
		r = kv_err(rc);
	if (r || !last_seq)
		goto out_cursor;
	/* Pass 2: write the blocks in place and make them durable. */
	r = bio_write_all(st->wctx, st->bfd, w, nw);
	if (!r && nw && fdatasync(st->bfd))
		r = -EIO;
	if (r) {
		log_error("store", "applying journaled writes failed; the store stops writing");
		pthread_mutex_lock(&st->qlock);
		st->failed = -EIO;
		pthread_mutex_unlock(&st->qlock);
		goto out_cursor;
	}
	/* Pass 3: drop the applied blobs, in the same kv commit as the marks. */
	rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
	while (!rc && k.mv_size == 8 && get_be64(k.mv_data) <= last_seq) {
		rc = mdb_cursor_del(cur, 0);
		if (rc)
			break;
		rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
	}
	if (rc && rc != MDB_NOTFOUND && rc != EINVAL) {
		r = kv_err(rc);
		goto out_cursor;
	}
	mdb_cursor_close(cur);
	cur = NULL;
	rc = mdb_txn_commit(t);
	t = NULL;
	if (rc) {
		r = kv_err(rc);
		goto out_unlock;
	}
	r = 0;
	st->deferred_blocks -= min_u64(consumed, st->deferred_blocks);
	st->commit_seq++;
	pthread_mutex_lock(&st->rlock);
	st->durable_seq = st->commit_seq;
	pthread_mutex_unlock(&st->rlock);
out_cursor:
	if (cur)
		mdb_cursor_close(cur);
out_abort:
	if (t)
		mdb_txn_abort(t);
out_unlock:
	pthread_mutex_unlock(&st->alloc_lock);
	for (size_t i = 0; i < nw; i++)
		free(bufs[i]);
	free(bufs);
	free(w);
	return r ? r : (int64_t)consumed;
}

int deferred_count(struct store *st, MDB_txn *t, uint64_t *blocks, uint64_t *max_seq)
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	*blocks = 0;
	*max_seq = 0;
	rc = mdb_cursor_open(t, st->kv.deferred, &cur);
	if (rc)
		return kv_err(rc);
	while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
		uint32_t n = 0;

		if (v.mv_size >= BLOB_HDR)
			memcpy(&n, (uint8_t *)v.mv_data + 4, 4);
		*blocks += n;
		if (k.mv_size == 8)
			*max_seq = get_be64(k.mv_data);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : kv_err(rc);
}
