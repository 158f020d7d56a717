/*
 * chunk.c - the store's kv records: onodes, chunks and counters.
 *
 * Each record is one versioned section of lib/encode.h, so later versions
 * can append fields.  Decoders check every field against what the store
 * can hold (block counts, bitmaps, lengths) and answer -EUCLEAN for a
 * record that does not make sense, which fsck reports and reads turn
 * into -EIO: a damaged record is never followed to a wrong block.
 *
 * Chunk record, uncompressed: flags, presence bitmap (bit i = block i of
 * the chunk has data), the physical runs of the present blocks in order
 * (u8 count, then u8 first, u8 length, u64 physical block), then one
 * crc32c per present block.  Compressed: flags, logical blocks, lz4
 * length, physical start, physical blocks, one crc32c per physical block.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "store-int.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "chunk_encode() and stats_encode() copy host integers as little-endian");

void onode_clear(struct onode *o)
{
	free(o->inl);
	memset(o, 0, sizeof(*o));
}

int onode_decode(struct onode *o, const void *v, size_t vl)
{
	struct dec d, body;
	const void *inl;
	size_t ilen;
	int r;

	memset(o, 0, sizeof(*o));
	dec_init(&d, v, vl);
	r = dec_msg_begin(&d, 1, &body);
	if (r)
		return -EUCLEAN;
	o->id = dec_u64(&body);
	o->size = dec_u64(&body);
	o->flags = dec_u32(&body);
	inl = dec_blob(&body, &ilen, 1u << 20);
	r = dec_end(&d, &body);
	if (r || !inl || ilen > o->size || (o->flags & ONODE_CHUNKED && ilen) || o->id == 0)
		return -EUCLEAN;
	if (ilen) {
		o->inl = malloc(ilen);
		if (!o->inl)
			return -ENOMEM;
		memcpy(o->inl, inl, ilen);
	}
	o->inline_len = (uint32_t)ilen;
	o->exists = true;
	return 0;
}

int onode_encode(const struct onode *o, void **v, size_t *vl)
{
	struct enc e;
	size_t h;

	enc_init(&e);
	h = enc_begin(&e, 1, 1);
	enc_u64(&e, o->id);
	enc_u64(&e, o->size);
	enc_u32(&e, o->flags);
	enc_blob(&e, o->inl, o->inline_len);
	enc_end(&e, h);
	*v = enc_take(&e, vl);
	return *v ? 0 : -ENOMEM;
}

bool chunk_empty(const struct chunk *c)
{
	return c->flags & CHUNK_COMPRESSED ? c->cblocks == 0 : c->present == 0;
}

size_t chunk_encode(const struct chunk *c, uint8_t *buf)
{
	uint8_t *p = buf;
	uint8_t *body, *nruns;

	/* Hand-rolled rather than through struct enc: this is the hot path of
	 * every write and the layout is the same versioned section. */
	*p++ = 2;		/* version */
	/* Journaled blocks must not be read from the device by a reader that
	 * does not know about them: then only version-2 readers may decode. */
	*p++ = c->deferred ? 2 : 1;	/* compat */
	body = p;
	p += 4;			/* body length, patched below */
	*p++ = c->flags;
	if (c->flags & CHUNK_COMPRESSED) {
		*p++ = c->lblocks;
		memcpy(p, &c->clen, 4), p += 4;
		memcpy(p, &c->pblk[0], 8), p += 8;
		*p++ = c->cblocks;
		memcpy(p, c->crc, 4u * c->cblocks);
		p += 4u * c->cblocks;
	} else {
		memcpy(p, &c->present, 8), p += 8;
		nruns = p++;
		*nruns = 0;
		for (unsigned i = 0; i < CHUNK_BLOCKS; i++) {
			if (!(c->present & (1ull << i)))
				continue;
			unsigned j = i + 1;

			while (j < CHUNK_BLOCKS && (c->present & (1ull << j)) &&
			       c->pblk[j] == c->pblk[j - 1] + 1)
				j++;
			*p++ = (uint8_t)i;
			*p++ = (uint8_t)(j - i);
			memcpy(p, &c->pblk[i], 8), p += 8;
			(*nruns)++;
			i = j - 1;
		}
		for (unsigned i = 0; i < CHUNK_BLOCKS; i++)
			if (c->present & (1ull << i)) {
				memcpy(p, &c->crc[i], 4);
				p += 4;
			}
		/* version 2: journaled blocks */
		memcpy(p, &c->deferred, 8), p += 8;
		for (unsigned i = 0; i < CHUNK_BLOCKS; i++)
			if (c->deferred & (1ull << i)) {
				memcpy(p, &c->dseq[i], 8), p += 8;
				memcpy(p, &c->dslot[i], 2), p += 2;
			}
	}
	uint32_t blen = (uint32_t)(p - body - 4);

	memcpy(body, &blen, 4);	/* the encoding is little-endian: so is x86 */
	return (size_t)(p - buf);
}

int chunk_decode(struct chunk *c, const void *v, size_t vl)
{
	struct dec d, body;
	uint8_t ver;
	int r;

	memset(c, 0, sizeof(*c));
	dec_init(&d, v, vl);
	r = dec_begin(&d, 2, &body, &ver);
	if (r)
		return -EUCLEAN;
	c->flags = dec_u8(&body);
	if (c->flags & ~CHUNK_COMPRESSED)
		return -EUCLEAN;
	if (c->flags & CHUNK_COMPRESSED) {
		c->lblocks = dec_u8(&body);
		c->clen = dec_u32(&body);
		c->pblk[0] = dec_u64(&body);
		c->cblocks = dec_u8(&body);
		if (body.err || c->lblocks == 0 || c->lblocks > CHUNK_BLOCKS ||
		    c->cblocks == 0 || c->cblocks > c->lblocks ||
		    c->clen == 0 || c->clen > (uint32_t)c->cblocks * STORE_BLOCK_SIZE ||
		    c->clen <= (uint32_t)(c->cblocks - 1) * STORE_BLOCK_SIZE)
			return -EUCLEAN;
		for (unsigned j = 0; j < c->cblocks; j++)
			c->crc[j] = dec_u32(&body);
	} else {
		uint64_t seen = 0;
		unsigned nruns;

		c->present = dec_u64(&body);
		nruns = dec_u8(&body);
		for (unsigned k = 0; k < nruns && !body.err; k++) {
			unsigned first = dec_u8(&body), len = dec_u8(&body);
			uint64_t pb = dec_u64(&body);

			if (len == 0 || first + len > CHUNK_BLOCKS)
				return -EUCLEAN;
			/* Every block of the run present, none in an earlier run:
			 * checked as bitmasks (this is on every read's path). */
			uint64_t mask = (len == 64 ? ~0ull : (1ull << len) - 1) << first;

			if ((seen & mask) || (c->present & mask) != mask)
				return -EUCLEAN;
			seen |= mask;
			for (unsigned i = 0; i < len; i++)
				c->pblk[first + i] = pb + i;
		}
		if (seen != c->present)
			return -EUCLEAN;
		/* The crcs of the present blocks, in block order: one bounds
		 * check for all of them. */
		unsigned np = (unsigned)__builtin_popcountll(c->present);
		const uint8_t *cp = dec_raw(&body, 4u * np);

		if (!cp)
			return -EUCLEAN;
		if (np == CHUNK_BLOCKS) {
			memcpy(c->crc, cp, 4u * CHUNK_BLOCKS);
		} else {
			unsigned k = 0;

			for (uint64_t m = c->present; m; m &= m - 1)
				memcpy(&c->crc[__builtin_ctzll(m)], cp + 4u * k++, 4);
		}
		if (ver >= 2) {
			c->deferred = dec_u64(&body);
			if (c->deferred & ~c->present)
				return -EUCLEAN;
			unsigned nd = (unsigned)__builtin_popcountll(c->deferred);
			const uint8_t *dp = nd ? dec_raw(&body, 10u * nd) : NULL;
			unsigned k = 0;

			if (nd && !dp)
				return -EUCLEAN;
			for (uint64_t m = c->deferred; m; m &= m - 1, k++) {
				unsigned i = (unsigned)__builtin_ctzll(m);

				memcpy(&c->dseq[i], dp + 10u * k, 8);
				memcpy(&c->dslot[i], dp + 10u * k + 8, 2);
			}
		}
	}
	r = dec_end(&d, &body);
	return r ? -EUCLEAN : 0;
}

int chunk_runs(const struct chunk *c, struct runvec *out)
{
	int r = 0;

	if (c->flags & CHUNK_COMPRESSED)
		return c->cblocks ? runvec_push(out, c->pblk[0], c->cblocks) : 0;
	for (unsigned i = 0; i < CHUNK_BLOCKS && !r; i++)
		if (c->present & (1ull << i))
			r = runvec_push(out, c->pblk[i], 1);
	return r;
}

uint64_t chunk_used_blocks(const struct chunk *c)
{
	if (c->flags & CHUNK_COMPRESSED)
		return c->cblocks;
	return (uint64_t)__builtin_popcountll(c->present);
}

int stats_decode(struct stats *s, const void *v, size_t vl)
{
	struct dec d, body;

	memset(s, 0, sizeof(*s));
	dec_init(&d, v, vl);
	if (dec_msg_begin(&d, 1, &body))
		return -EUCLEAN;
	s->objects = dec_u64(&body);
	s->stored = dec_u64(&body);
	s->used_blocks = dec_u64(&body);
	s->compressed_saved = dec_u64(&body);
	return dec_end(&d, &body) ? -EUCLEAN : 0;
}

size_t stats_encode(const struct stats *s, uint8_t *buf)
{
	uint8_t *p = buf;
	uint32_t blen = 32;

	*p++ = 1;
	*p++ = 1;
	memcpy(p, &blen, 4), p += 4;
	memcpy(p, &s->objects, 8), p += 8;
	memcpy(p, &s->stored, 8), p += 8;
	memcpy(p, &s->used_blocks, 8), p += 8;
	memcpy(p, &s->compressed_saved, 8), p += 8;
	return (size_t)(p - buf);
}
