/*
 * superblock.c - block 0 of the store's device: who it belongs to.
 *
 * 4 KiB: the magic "ATOLLSB1", a versioned section (format version, block
 * size, uuid, device blocks, first data block) and a crc32c of the first
 * 4092 bytes in the last four.  The kv keeps the same uuid, so that a
 * block and a kv of different stores are never opened together.  The
 * superblock is written by mkfs, and again only when a read-write open
 * moves a store of format 2 to format 3 (store.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "encode.h"
#include "log.h"
#include "store-int.h"

static const char sb_magic[8] = { 'A', 'T', 'O', 'L', 'L', 'S', 'B', '1' };

void uuid_format(const uint8_t u[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	char *p = out;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[u[i] >> 4];
		*p++ = hex[u[i] & 15];
	}
	*p = 0;
}

int sb_write(int fd, const uint8_t uuid[16], uint64_t nblocks, uint64_t data_start,
	     uint32_t format)
{
	uint8_t *blk = bio_alloc(STORE_BLOCK_SIZE);
	struct enc e;
	size_t h;
	uint32_t crc;
	int r;

	if (!blk)
		return -ENOMEM;
	enc_init(&e);
	enc_raw(&e, sb_magic, sizeof(sb_magic));
	h = enc_begin(&e, 1, 1);
	enc_u32(&e, format);
	enc_u32(&e, STORE_BLOCK_SIZE);
	enc_raw(&e, uuid, 16);
	enc_u64(&e, nblocks);
	enc_u64(&e, data_start);
	enc_end(&e, h);
	r = e.err;
	if (!r && e.len > STORE_BLOCK_SIZE - 4)
		r = -EOVERFLOW;
	if (r)
		goto out;
	memcpy(blk, e.buf, e.len);
	crc = atoll__crc32c(0, blk, STORE_BLOCK_SIZE - 4);
	memcpy(blk + STORE_BLOCK_SIZE - 4, &crc, 4);	/* little-endian host */
	r = bio_pwrite(fd, blk, STORE_BLOCK_SIZE, 0);
	if (!r && fdatasync(fd))
		r = -errno;
out:
	enc_free(&e);
	free(blk);
	return r;
}

int sb_read(int fd, uint8_t uuid[16], uint64_t *nblocks, uint64_t *data_start,
	    uint32_t *format)
{
	uint8_t *blk = bio_alloc(STORE_BLOCK_SIZE);
	struct dec d, body;
	uint32_t crc, fmt, bs;
	int r;

	if (!blk)
		return -ENOMEM;
	r = bio_pread(fd, blk, STORE_BLOCK_SIZE, 0);
	if (r)
		goto out;
	if (memcmp(blk, sb_magic, sizeof(sb_magic)) != 0) {
		r = -ENODATA;	/* not a store (or wiped) */
		goto out;
	}
	memcpy(&crc, blk + STORE_BLOCK_SIZE - 4, 4);
	if (atoll__crc32c(0, blk, STORE_BLOCK_SIZE - 4) != crc) {
		r = -EUCLEAN;
		goto out;
	}
	dec_init(&d, blk + sizeof(sb_magic), STORE_BLOCK_SIZE - 4 - sizeof(sb_magic));
	r = dec_msg_begin(&d, 1, &body);
	if (r)
		goto out_unclean;
	fmt = dec_u32(&body);
	bs = dec_u32(&body);
	const void *u = dec_raw(&body, 16);

	*nblocks = dec_u64(&body);
	*data_start = dec_u64(&body);
	r = dec_end(&d, &body);
	if (r || !u)
		goto out_unclean;
	if (fmt < STORE_FORMAT_OLDEST || fmt > STORE_FORMAT_VERSION) {
		log_error("store", "the store has on-disk format %u and this build reads formats "
			  "%u to %u only; make a new store (mkfs) and move the data", fmt,
			  STORE_FORMAT_OLDEST, STORE_FORMAT_VERSION);
		r = -EUCLEAN;
		goto out;
	}
	if (bs != STORE_BLOCK_SIZE || *data_start < SB_DATA_START + WAL_MIN_BLOCKS ||
	    *data_start >= *nblocks) {
		r = -EUCLEAN;
		goto out;
	}
	memcpy(uuid, u, 16);
	if (format)
		*format = fmt;
	r = 0;
	goto out;
out_unclean:
	r = -EUCLEAN;
out:
	free(blk);
	return r;
}
