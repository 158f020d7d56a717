/*
 * gen_store_corpus.c - writes the seed corpus for fuzz_store_records.c.
 *
 *   gen-store-corpus DIR
 *
 * Run once by hand (the output is committed under corpus/store_records/);
 * kept so the seeds can be regenerated when a record layout changes.
 * Each file is the selector byte of fuzz_store_records.c (0 chunk, 1 onode,
 * 2 stats) followed by a record made by the store's own encoders: chunks
 * empty, full, fragmented, scattered, journaled and compressed, a version 1
 * chunk, onodes inline and chunked, the counters, log records (with data
 * blocks, kv mutations or both); then a few truncated,
 * refused and garbage inputs so that the fuzzer starts next to the error
 * paths too.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_file.h"
#include "crc32c.h"
#include "store-int.h"

enum { SEL_CHUNK = 0, SEL_ONODE = 1, SEL_STATS = 2, SEL_WALREC = 3,
       SEL_WALREC_FIXCRC = 7 };

/* A kv mutation of a log record (doc/store-format.md) at p; returns its
 * bytes. */
static size_t kvop_put(uint8_t *p, uint8_t type, uint8_t db, uint64_t id, const char *k,
		       const char *v)
{
	uint16_t kl = (uint16_t)(k ? strlen(k) : 0);
	uint32_t vl = (uint32_t)(v ? strlen(v) : 0);

	p[0] = type;
	p[1] = db;
	memcpy(p + 2, &kl, 2);
	memcpy(p + 4, &vl, 4);
	memcpy(p + 8, &id, 8);
	memcpy(p + 16, k, kl);
	memcpy(p + 16 + kl, v, vl);
	return 16u + kl + vl;
}

/* A chunk record mutation (database 4, record version 3): set chunk idx
 * of object id to c (NULL: remove it); returns its bytes. */
static size_t kvop_chunk(uint8_t *p, uint64_t id, uint32_t idx, const struct chunk *c)
{
	uint8_t k[4] = { (uint8_t)(idx >> 24), (uint8_t)(idx >> 16), (uint8_t)(idx >> 8),
			 (uint8_t)idx };
	uint16_t kl = 4;
	uint32_t vl = c ? (uint32_t)chunk_encode(c, p + 20) : 0;

	p[0] = c ? 1 : 2;
	p[1] = 4;
	memcpy(p + 2, &kl, 2);
	memcpy(p + 4, &vl, 4);
	memcpy(p + 8, &id, 8);
	memcpy(p + 16, k, 4);
	return 20u + vl;
}

/* The kv mutations of an OSD's replicated write and of a remove: set the
 * version attribute, a pg-log omap entry, remove an omap key, clear. */
static size_t kvops_build(uint8_t *p)
{
	size_t n = 0;

	n += kvop_put(p + n, 1, 0, 3, "_v", "\x01\x00\x00\x00\x00\x00\x00\x07");
	n += kvop_put(p + n, 1, 1, 9, "0000000012.00000000000000000042", "pglog-entry");
	n += kvop_put(p + n, 2, 1, 9, "0000000012.00000000000000000001", NULL);
	n += kvop_put(p + n, 2, 0, 3, "gone", NULL);
	n += kvop_put(p + n, 3, 0, 4, NULL, NULL);
	n += kvop_put(p + n, 3, 1, 4, NULL, NULL);
	return n;
}

/* A write-ahead log record of nent data blocks and kvbytes of kv
 * mutations (kv) as doc/store-format.md lays it out (record version
 * version) into buf; returns its bytes. */
static size_t walrec_build_v(uint8_t *buf, uint16_t version, uint32_t nent, uint16_t flags,
			     const uint8_t *kv, uint32_t kvbytes)
{
	uint32_t magic = 0x4c415741u, crc;
	uint32_t tb = (uint32_t)((64 + nent * 32 + kvbytes + 4095) / 4096);
	uint64_t lsn = 7, vpos = 130, seq = 41;
	uint32_t nblocks = tb + nent, pad = kvbytes;

	memset(buf, 0, (size_t)nblocks * 4096);
	memcpy(buf + 0, &magic, 4);
	memcpy(buf + 4, &version, 2);
	memcpy(buf + 6, &flags, 2);
	memcpy(buf + 12, &nent, 4);
	memcpy(buf + 16, &lsn, 8);
	memcpy(buf + 24, &vpos, 8);
	memcpy(buf + 32, &seq, 8);
	memcpy(buf + 40, &nblocks, 4);
	memcpy(buf + 44, &pad, 4);
	for (int i = 0; i < 16; i++)
		buf[48 + i] = (uint8_t)(0xa0 + i);	/* the store's uuid */
	for (uint32_t j = 0; j < nent; j++) {
		uint8_t *blk = buf + (size_t)(tb + j) * 4096, *e = buf + 64 + (size_t)j * 32;
		uint64_t pblk = 5000 + j, id = 3, lblk = j;

		memset(blk, (int)(0x11 * (j + 1)), 4096);
		crc = atoll__crc32c(0, blk, 4096);
		memcpy(e, &pblk, 8);
		memcpy(e + 8, &id, 8);
		memcpy(e + 16, &lblk, 8);
		memcpy(e + 24, &crc, 4);
	}
	if (kvbytes)
		memcpy(buf + 64 + (size_t)nent * 32, kv, kvbytes);
	crc = atoll__crc32c(0, buf, 64 + (size_t)nent * 32 + kvbytes);
	memcpy(buf + 8, &crc, 4);
	return (size_t)nblocks * 4096;
}

static size_t walrec_build_kv(uint8_t *buf, uint32_t nent, uint16_t flags, const uint8_t *kv,
			      uint32_t kvbytes)
{
	return walrec_build_v(buf, 1, nent, flags, kv, kvbytes);
}

static size_t walrec_build(uint8_t *buf, uint32_t nent, uint16_t flags)
{
	return walrec_build_kv(buf, nent, flags, NULL, 0);
}


static int write_file(const char *dir, const char *name, uint8_t sel,
		      const void *buf, size_t len)
{
	return corpus_write(dir, name, &sel, 1, buf, len);	/* selector byte first */
}

/* Marks blocks [first, first+len) present at pblk onwards. */
static void chunk_run(struct chunk *c, unsigned first, unsigned len, uint64_t pblk)
{
	for (unsigned i = first; i < first + len; i++) {
		c->present |= 1ull << i;
		c->pblk[i] = pblk + (i - first);
		c->crc[i] = 0x9e3779b9u * (i + 1);
	}
}

static void chunk_fragmented(struct chunk *c)
{
	memset(c, 0, sizeof(*c));
	chunk_run(c, 0, 4, 5000);
	chunk_run(c, 4, 4, 9000);	/* adjacent blocks, not adjacent on disk */
	chunk_run(c, 10, 2, 200);
	chunk_run(c, 20, 1, 77);
	chunk_run(c, 40, 24, 7000);
}

static int write_chunk(const char *dir, const char *name, const struct chunk *c)
{
	uint8_t buf[CHUNK_REC_MAX];
	size_t len = chunk_encode(c, buf);

	return write_file(dir, name, SEL_CHUNK, buf, len);
}

static int write_onode(const char *dir, const char *name, const struct onode *o,
		       size_t cut)
{
	void *buf;
	size_t len;
	int r;

	if (onode_encode(o, &buf, &len) != 0)
		return -1;
	r = write_file(dir, name, SEL_ONODE, buf, cut && cut < len ? cut : len);
	free(buf);
	return r;
}

int main(int argc, char **argv)
{
	static const uint8_t garbage[] = "\x02\x00\xff\xff\xff\x7fnot a record at all";
	static uint8_t inl[100];
	uint8_t buf[CHUNK_REC_MAX];
	struct chunk c;
	struct onode o;
	struct stats s;
	const char *dir;
	size_t len;
	uint32_t blen;
	int r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];

	/* ---- chunks ---- */
	memset(&c, 0, sizeof(c));
	r |= write_chunk(dir, "chunk-empty", &c);

	chunk_run(&c, 0, CHUNK_BLOCKS, 1000);
	r |= write_chunk(dir, "chunk-full", &c);

	chunk_fragmented(&c);
	r |= write_chunk(dir, "chunk-fragmented", &c);

	/* the longest record: every block its own run, journaled */
	memset(&c, 0, sizeof(c));
	for (unsigned i = 0; i < CHUNK_BLOCKS; i++) {
		chunk_run(&c, i, 1, 100000 - 2 * i);
		c.deferred |= 1ull << i;
		c.dseq[i] = 1000 + i / 8;
		c.dslot[i] = (uint16_t)(i % 8);
	}
	r |= write_chunk(dir, "chunk-scattered-deferred", &c);

	chunk_fragmented(&c);
	c.deferred = (1ull << 2) | (1ull << 10) | (1ull << 11) | (1ull << 63);
	c.dseq[2] = 41, c.dslot[2] = 0;
	c.dseq[10] = 41, c.dslot[10] = 1;
	c.dseq[11] = 42, c.dslot[11] = 0;
	c.dseq[63] = 0xffffffffffffull, c.dslot[63] = 0xffff;
	r |= write_chunk(dir, "chunk-deferred", &c);

	/* the same, from a writer whose compat is newer than ours */
	len = chunk_encode(&c, buf);
	buf[1] = 3;
	r |= write_file(dir, "chunk-compat-too-new", SEL_CHUNK, buf, len);

	memset(&c, 0, sizeof(c));
	c.flags = CHUNK_COMPRESSED;
	c.lblocks = 16;
	c.cblocks = 5;
	c.clen = 4 * STORE_BLOCK_SIZE + 123;
	c.pblk[0] = 123456;
	for (unsigned j = 0; j < c.cblocks; j++)
		c.crc[j] = 0xdeadbeefu ^ j;
	r |= write_chunk(dir, "chunk-compressed", &c);

	c.lblocks = CHUNK_BLOCKS;
	c.cblocks = 1;
	c.clen = 1;
	r |= write_chunk(dir, "chunk-compressed-tiny", &c);

	/* version 1 (before journaled blocks): no deferred bitmap at the end */
	chunk_fragmented(&c);
	len = chunk_encode(&c, buf) - 8;
	buf[0] = 1;
	blen = (uint32_t)(len - 6);
	memcpy(buf + 2, &blen, 4);
	r |= write_file(dir, "chunk-v1", SEL_CHUNK, buf, len);

	/* refused: a journaled block that is not present (block 9 is a hole) */
	chunk_fragmented(&c);
	len = chunk_encode(&c, buf);
	buf[len - 8 + 1] = 0x02;
	r |= write_file(dir, "chunk-deferred-not-present", SEL_CHUNK, buf, len);

	/* refused: cut in the middle of the runs */
	r |= write_file(dir, "chunk-truncated", SEL_CHUNK, buf, len / 3);

	/* ---- onodes ---- */
	for (size_t i = 0; i < sizeof(inl); i++)
		inl[i] = (uint8_t)(i * 7 + 1);
	memset(&o, 0, sizeof(o));
	o.id = 7;
	o.size = sizeof(inl);
	o.inline_len = sizeof(inl);
	o.inl = inl;
	r |= write_onode(dir, "onode-inline", &o, 0);
	r |= write_onode(dir, "onode-truncated", &o, 40);

	o.size = 4096;		/* inline data shorter than the object: zeros after */
	o.inline_len = 10;
	r |= write_onode(dir, "onode-inline-short", &o, 0);

	memset(&o, 0, sizeof(o));
	o.id = 0x123456789ull;
	o.size = 10ull << 20;
	o.flags = ONODE_CHUNKED;
	r |= write_onode(dir, "onode-chunked", &o, 0);

	/* ---- stats ---- */
	s.objects = 12345;
	s.stored = 987654321;
	s.used_blocks = 240000;
	s.compressed_saved = 4096ull * 1000;
	len = stats_encode(&s, buf);
	r |= write_file(dir, "stats", SEL_STATS, buf, len);

	r |= write_file(dir, "garbage", SEL_STATS, garbage, sizeof(garbage) - 1);
	r |= write_file(dir, "selector-only", SEL_CHUNK, NULL, 0);
	{
		static uint8_t rec[4 * 4096];
		size_t rl;

		rl = walrec_build(rec, 2, 0);
		r |= write_file(dir, "walrec", SEL_WALREC, rec, rl);
		rl = walrec_build(rec, 3, 1);
		rec[3 * 4096 + 100] ^= 0x40;	/* a torn or damaged data block */
		r |= write_file(dir, "walrec-kv-bad-block", SEL_WALREC, rec, rl);
		rl = walrec_build(rec, 1, 0);
		r |= write_file(dir, "walrec-short", SEL_WALREC, rec, rl - 100);
		rl = walrec_build(rec, 2, 0);
		memset(rec + 12, 0xff, 4);	/* nent far beyond the record */
		r |= write_file(dir, "walrec-fixcrc-huge-nent", SEL_WALREC_FIXCRC, rec, rl);

		/* Records with kv mutations (attributes, omap): with and
		 * without data blocks, a mutation cut short, a bad type. */
		uint8_t kv[512];
		uint32_t kl = (uint32_t)kvops_build(kv);

		rl = walrec_build_kv(rec, 1, 0, kv, kl);
		r |= write_file(dir, "walrec-kvops", SEL_WALREC, rec, rl);
		rl = walrec_build_kv(rec, 0, 1, kv, kl);
		r |= write_file(dir, "walrec-kvops-only", SEL_WALREC, rec, rl);
		rl = walrec_build_kv(rec, 0, 0, kv, kl - 5);
		r |= write_file(dir, "walrec-kvops-cut", SEL_WALREC, rec, rl);
		rl = walrec_build_kv(rec, 1, 0, kv, kl);
		rec[64 + 32] = 9;	/* no such mutation */
		r |= write_file(dir, "walrec-fixcrc-kvops-badtype", SEL_WALREC_FIXCRC, rec, rl);
		rl = walrec_build_kv(rec, 0, 0, kv, kl);
		memset(rec + 44, 0x7f, 2);	/* kvbytes beyond the record */
		r |= write_file(dir, "walrec-fixcrc-kvops-huge", SEL_WALREC_FIXCRC, rec, rl);

		/* Version 3: a small write into a hole (its block logged, its
		 * chunk record set) and a removed chunk; the same mutations in
		 * a version-2 record (refused); a chunk key cut to 3 bytes. */
		struct chunk ck;
		size_t cl = 0;

		memset(&ck, 0, sizeof(ck));
		chunk_run(&ck, 0, 1, 5000);
		chunk_run(&ck, 5, 3, 7000);
		cl += kvop_chunk(kv + cl, 3, 0, &ck);
		cl += kvop_chunk(kv + cl, 3, 2, NULL);
		rl = walrec_build_v(rec, 3, 1, 0, kv, (uint32_t)cl);
		r |= write_file(dir, "walrec-v3-chunks", SEL_WALREC, rec, rl);
		rl = walrec_build_v(rec, 2, 1, 0, kv, (uint32_t)cl);
		r |= write_file(dir, "walrec-v2-chunks-refused", SEL_WALREC, rec, rl);
		rl = walrec_build_v(rec, 3, 1, 0, kv, (uint32_t)cl);
		rec[64 + 32 + 2] = 3;	/* the first chunk key of 3 bytes */
		r |= write_file(dir, "walrec-fixcrc-v3-chunk-shortkey", SEL_WALREC_FIXCRC, rec, rl);
	}
	return r ? 1 : 0;
}
