/*
 * fuzz_store_records.c - libFuzzer target for the store's kv records.
 *
 * The first input byte (mod 4) picks the decoder the rest goes to:
 *   0  chunk_decode()   a chunk record (block map, crcs, journal slots)
 *   1  onode_decode()   an onode (id, size, flags, inline data)
 *   2  stats_decode()   the store's counters
 *   3  wal_hdr_decode() + wal_rec_verify(): a write-ahead log record as
 *      read at open (wal.c), padded to whole blocks; with bit 2 of the
 *      first byte set the header's crc is fixed up first, so that inputs
 *      reach the table, kv mutation (wal_kvops_decode) and block checks
 *      behind it
 * Whatever the input, decoding must fail cleanly or succeed; the
 * sanitizers catch any out-of-bounds read.  A record that decodes must
 * also hold the invariants the rest of the store relies on without
 * checking again (read.c, write.c and deferred.c index arrays and size
 * buffers by these fields), and must survive a re-encode/decode round
 * trip unchanged; any violation aborts so libFuzzer keeps the input.
 * chunk_encode() is given a heap buffer of exactly CHUNK_REC_MAX bytes so
 * that ASan reports an encoder that writes past its documented bound.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "store-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define STATS_REC_MAX 64	/* stats_encode()'s documented bound */

/* What the store assumes of any chunk that chunk_decode() accepted. */
static void chunk_check_invariants(const struct chunk *c)
{
	uint64_t sum = 0;
	struct runvec rv = { 0 };

	if (c->flags & ~CHUNK_COMPRESSED)
		abort();
	if (c->flags & CHUNK_COMPRESSED) {
		/* read.c decompresses into lblocks blocks and reads cblocks
		 * blocks of clen bytes; write.c counts lblocks - cblocks saved. */
		if (c->cblocks < 1 || c->cblocks > c->lblocks || c->lblocks > CHUNK_BLOCKS)
			abort();
		if (c->clen <= (uint32_t)(c->cblocks - 1) * STORE_BLOCK_SIZE ||
		    c->clen > (uint32_t)c->cblocks * STORE_BLOCK_SIZE)
			abort();
		/* the uncompressed fields must not leak into a compressed chunk */
		if (c->present || c->deferred)
			abort();
	} else {
		/* a journaled block is a present block whose data is in the kv */
		if (c->deferred & ~c->present)
			abort();
		if (c->lblocks || c->cblocks || c->clen)
			abort();
	}
	if (chunk_empty(c) != (chunk_used_blocks(c) == 0))
		abort();
	if (chunk_runs(c, &rv) < 0)
		goto out_free_runs;	/* ENOMEM: not the decoder's fault */
	for (size_t i = 0; i < rv.n; i++)
		sum += rv.v[i].len;
	if (sum != chunk_used_blocks(c))
		abort();
out_free_runs:
	runvec_free(&rv);
}

static void chunk_check_equal(const struct chunk *a, const struct chunk *b)
{
	if (a->flags != b->flags)
		abort();
	if (a->flags & CHUNK_COMPRESSED) {
		if (a->lblocks != b->lblocks || a->cblocks != b->cblocks ||
		    a->clen != b->clen || a->pblk[0] != b->pblk[0] ||
		    memcmp(a->crc, b->crc, sizeof(a->crc[0]) * a->cblocks) != 0)
			abort();
		return;
	}
	if (a->present != b->present || a->deferred != b->deferred)
		abort();
	for (unsigned i = 0; i < CHUNK_BLOCKS; i++) {
		if ((a->present & (1ull << i)) &&
		    (a->pblk[i] != b->pblk[i] || a->crc[i] != b->crc[i]))
			abort();
		if ((a->deferred & (1ull << i)) &&
		    (a->dseq[i] != b->dseq[i] || a->dslot[i] != b->dslot[i]))
			abort();
	}
}

static void fuzz_chunk(const uint8_t *data, size_t size)
{
	struct chunk *c, *again;
	uint8_t *buf, *buf2;
	size_t len, len2;

	/* struct chunk is about 1.5 KiB: keep it off the fuzzer's stack */
	c = malloc(sizeof(*c));
	again = malloc(sizeof(*again));
	buf = malloc(CHUNK_REC_MAX);
	buf2 = malloc(CHUNK_REC_MAX);
	if (!c || !again || !buf || !buf2)
		goto out_free;

	if (chunk_decode(c, data, size) != 0)
		goto out_free;
	chunk_check_invariants(c);

	len = chunk_encode(c, buf);
	if (len > CHUNK_REC_MAX)
		abort();
	/* compat 2 exactly when blocks are journaled (older readers refuse) */
	if (len < 6 || buf[0] != 2 || buf[1] != (c->deferred ? 2 : 1))
		abort();
	if (chunk_decode(again, buf, len) != 0)
		abort();
	chunk_check_equal(c, again);

	/* the encoding is canonical: encoding the copy gives the same bytes */
	len2 = chunk_encode(again, buf2);
	if (len2 != len || memcmp(buf, buf2, len) != 0)
		abort();
out_free:
	free(buf2);
	free(buf);
	free(again);
	free(c);
}

static void fuzz_onode(const uint8_t *data, size_t size)
{
	struct onode o, again;
	void *buf = NULL;
	size_t len;
	int r;

	r = onode_decode(&o, data, size);
	if (r != 0)
		goto out_clear_o;
	if (!o.exists || o.id == 0 || o.inline_len > o.size ||
	    (o.flags & ONODE_CHUNKED && o.inline_len) ||
	    (o.inline_len != 0) != (o.inl != NULL))
		abort();

	if (onode_encode(&o, &buf, &len) != 0)
		goto out_clear_o;
	r = onode_decode(&again, buf, len);
	if (r == -ENOMEM)
		goto out_clear_again;
	if (r != 0 || again.id != o.id || again.size != o.size || again.flags != o.flags ||
	    again.inline_len != o.inline_len ||
	    (o.inline_len && memcmp(again.inl, o.inl, o.inline_len) != 0))
		abort();
out_clear_again:
	onode_clear(&again);
out_clear_o:
	free(buf);
	onode_clear(&o);
}

static void fuzz_stats(const uint8_t *data, size_t size)
{
	struct stats s, again;
	uint8_t *buf;
	size_t len;

	buf = malloc(STATS_REC_MAX);
	if (!buf)
		return;
	if (stats_decode(&s, data, size) != 0)
		goto out_free_buf;
	len = stats_encode(&s, buf);
	if (len > STATS_REC_MAX)
		abort();
	if (stats_decode(&again, buf, len) != 0 || memcmp(&s, &again, sizeof(s)) != 0)
		abort();
out_free_buf:
	free(buf);
}

/* A decoded kv mutation lies inside the section it came from. */
struct kvop_bounds {
	const uint8_t *p;
	size_t len;
};

static int kvop_check(void *arg, const struct wal_kvop *op)
{
	const struct kvop_bounds *b = arg;

	if (op->k < b->p || op->k + op->kl > b->p + b->len || op->v < op->k ||
	    op->v + op->vl > b->p + b->len || op->kl > STORE_OMAP_KEY_MAX)
		abort();
	if (op->db == KVDB_CHUNK) {
		/* What the overlay and the checkpoint take as it is: a chunk
		 * number, and a record that decodes to a sound chunk. */
		struct chunk c;

		if (op->kl != 4 || op->type == KVOP_CLEAR ||
		    (op->type == KVOP_SET && chunk_decode(&c, op->v, op->vl)))
			abort();
		if (op->type == KVOP_SET)
			chunk_check_invariants(&c);
	}
	return 0;
}

/* A log record image: whatever the bytes, decoding stays inside the
 * blocks given, and what it accepts fits them. */
#define WAL_FUZZ_MAX_BLOCKS 64u

static void fuzz_walrec(const uint8_t *data, size_t size, bool fix_crc)
{
	struct wal_hdr_info h;
	uint64_t nblk = (size + STORE_BLOCK_SIZE - 1) / STORE_BLOCK_SIZE, vpos, nbad = 99;
	uint8_t uuid[16], *buf;
	bool *bad;

	if (size < 64)
		return;
	if (nblk > WAL_FUZZ_MAX_BLOCKS)
		nblk = WAL_FUZZ_MAX_BLOCKS;
	buf = calloc(nblk, STORE_BLOCK_SIZE);
	if (!buf)
		return;
	memcpy(buf, data, size < nblk * STORE_BLOCK_SIZE ? size : nblk * STORE_BLOCK_SIZE);
	/* The place and the store it claims, so that those checks pass. */
	memcpy(&vpos, buf + 24, 8);
	memcpy(uuid, buf + 48, 16);
	if (fix_crc) {
		uint32_t nent, kvbytes, crc, zero = 0;
		size_t tl;

		memcpy(&nent, buf + 12, 4);
		memcpy(&kvbytes, buf + 44, 4);
		tl = 64 + (size_t)nent * 32 + kvbytes;
		if (tl <= nblk * STORE_BLOCK_SIZE) {
			memcpy(buf + 8, &zero, 4);
			crc = atoll__crc32c(0, buf, tl);
			memcpy(buf + 8, &crc, 4);
		}
	}
	if (wal_hdr_decode(buf, vpos, uuid, WAL_FUZZ_MAX_BLOCKS, nblk, &h) == 0) {
		if (h.nblocks > nblk || h.nent >= h.nblocks ||
		    64 + (uint64_t)h.nent * 32 + h.kvbytes > (uint64_t)(h.nblocks - h.nent) * STORE_BLOCK_SIZE)
			abort();
		bad = calloc(h.nent ? h.nent : 1, sizeof(bool));
		if (bad && wal_rec_verify(buf, &h, bad, &nbad) == 0) {
			struct kvop_bounds kb = { buf + 64 + (size_t)h.nent * 32, h.kvbytes };

			if (nbad > h.nent)
				abort();
			/* A verified record's kv mutations decode, inside their section. */
			if (wal_kvops_decode(kb.p, kb.len, KVDB_MAX, kvop_check, &kb) < 0)
				abort();
		}
		free(bad);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] % 4) {
	case 0:
		fuzz_chunk(data + 1, size - 1);
		break;
	case 1:
		fuzz_onode(data + 1, size - 1);
		break;
	case 2:
		fuzz_stats(data + 1, size - 1);
		break;
	default:
		fuzz_walrec(data + 1, size - 1, (data[0] >> 2) & 1);
		break;
	}
	return 0;
}
