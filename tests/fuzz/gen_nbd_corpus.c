/*
 * gen_nbd_corpus.c - writes the seed corpus for fuzz_nbd.c.
 *
 *   gen-nbd-corpus DIR
 *
 * Run once by hand (the output is committed under corpus/nbd/).  Each
 * seed starts with the mode byte of fuzz_nbd.c: 0 a client's whole byte
 * stream, 1 requests alone, 2 one option's data.  The streams are what
 * nbdinfo, qemu-img, nbd-client and libnbd send (fixed newstyle, the
 * options in their usual order, then requests of every kind), followed by
 * the malformed cases atoll-nbd must survive: bad magic, absurd lengths,
 * strings that overrun their option, offsets at and past the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_file.h"
#include "nbd_proto.h"

struct buf {
	uint8_t b[1 << 16];
	size_t n;
};

static void raw(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > sizeof(b->b))
		abort();
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void u8(struct buf *b, uint8_t v)
{
	raw(b, &v, 1);
}

static void u16(struct buf *b, uint16_t v)
{
	uint8_t p[2];

	nbd_put16(p, v);
	raw(b, p, 2);
}

static void u32(struct buf *b, uint32_t v)
{
	uint8_t p[4];

	nbd_put32(p, v);
	raw(b, p, 4);
}

static void u64(struct buf *b, uint64_t v)
{
	uint8_t p[8];

	nbd_put64(p, v);
	raw(b, p, 8);
}

static void str(struct buf *b, const char *s)
{
	u32(b, (uint32_t)strlen(s));
	raw(b, s, strlen(s));
}

/* An option with data d. */
static void option(struct buf *b, uint32_t opt, const struct buf *d)
{
	u64(b, NBD_IHAVEOPT);
	u32(b, opt);
	u32(b, d ? (uint32_t)d->n : 0);
	if (d)
		raw(b, d->b, d->n);
}

static void go_data(struct buf *d, const char *name, int nreq)
{
	d->n = 0;
	str(d, name);
	u16(d, (uint16_t)nreq);
	for (int i = 0; i < nreq; i++)
		u16(d, (uint16_t)(i == 0 ? NBD_INFO_BLOCK_SIZE : i == 1 ? NBD_INFO_NAME :
				  NBD_INFO_DESCRIPTION));
}

static void meta_data(struct buf *d, const char *name, int nq, const char **q)
{
	d->n = 0;
	str(d, name);
	u32(d, (uint32_t)nq);
	for (int i = 0; i < nq; i++)
		str(d, q[i]);
}

static void request(struct buf *b, uint16_t flags, uint16_t type, uint64_t off, uint32_t len)
{
	static uint64_t cookie = 1;

	u32(b, NBD_REQUEST_MAGIC);
	u16(b, flags);
	u16(b, type);
	u64(b, cookie++);
	u64(b, off);
	u32(b, len);
	if (type == NBD_CMD_WRITE && len <= 4096)
		for (uint32_t i = 0; i < len; i++)
			u8(b, (uint8_t)i);
}

/* A libnbd-style start: fixed newstyle, structured replies, base:allocation,
 * then GO on name. */
static void libnbd_start(struct buf *b, const char *name)
{
	static const char *q[] = { NBD_META_BASE_ALLOCATION };
	struct buf d;

	u8(b, 0);
	u32(b, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	option(b, NBD_OPT_STRUCTURED_REPLY, NULL);
	meta_data(&d, name, 1, q);
	option(b, NBD_OPT_SET_META_CONTEXT, &d);
	go_data(&d, name, 3);
	option(b, NBD_OPT_GO, &d);
}

static void every_request(struct buf *b)
{
	request(b, 0, NBD_CMD_READ, 0, 4096);
	request(b, 0, NBD_CMD_READ, 12345, 777);
	request(b, NBD_CMD_FLAG_FUA, NBD_CMD_WRITE, 4096, 512);
	request(b, 0, NBD_CMD_WRITE, 1, 3);
	request(b, 0, NBD_CMD_FLUSH, 0, 0);
	request(b, 0, NBD_CMD_TRIM, 1 << 20, 1 << 20);
	request(b, NBD_CMD_FLAG_NO_HOLE, NBD_CMD_WRITE_ZEROES, 2 << 20, 65536);
	request(b, 0, NBD_CMD_BLOCK_STATUS, 0, 64 << 20);
	request(b, NBD_CMD_FLAG_REQ_ONE, NBD_CMD_BLOCK_STATUS, 4096, 4096);
	request(b, 0, NBD_CMD_DISC, 0, 0);
}

static int put(const char *dir, const char *name, const struct buf *b)
{
	return corpus_write(dir, name, NULL, 0, b->b, b->n);
}

int main(int argc, char **argv)
{
	static const char *base_ns[] = { "base:" };
	static const char *two[] = { "qemu:dirty-bitmap:x", NBD_META_BASE_ALLOCATION };
	static struct buf b, d;
	const char *dir;
	int r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];

	/* libnbd (nbdinfo, nbdcopy, nbdsh) then every request. */
	b.n = 0;
	libnbd_start(&b, "disk");
	every_request(&b);
	r |= put(dir, "libnbd-session", &b);

	/* The same on a snapshot: every write is refused. */
	b.n = 0;
	libnbd_start(&b, "disk@snap1");
	every_request(&b);
	r |= put(dir, "libnbd-snapshot", &b);

	/* nbd-client / the kernel: NBD_OPT_EXPORT_NAME, simple replies. */
	b.n = 0;
	u8(&b, 0);
	u32(&b, NBD_FLAG_C_FIXED_NEWSTYLE);
	d.n = 0;
	raw(&d, "disk", 4);
	option(&b, NBD_OPT_EXPORT_NAME, &d);
	request(&b, 0, NBD_CMD_READ, 0, 1024);
	request(&b, 0, NBD_CMD_WRITE, 1024, 1024);
	request(&b, 0, NBD_CMD_FLUSH, 0, 0);
	request(&b, 0, NBD_CMD_DISC, 0, 0);
	r |= put(dir, "export-name", &b);

	/* Plain newstyle: only EXPORT_NAME is taken. */
	b.n = 0;
	u8(&b, 0);
	u32(&b, 0);
	option(&b, NBD_OPT_LIST, NULL);
	r |= put(dir, "plain-newstyle-list", &b);

	/* Listing and querying before choosing (nbdinfo --list, qemu-img). */
	b.n = 0;
	u8(&b, 0);
	u32(&b, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
	option(&b, NBD_OPT_LIST, NULL);
	option(&b, NBD_OPT_STRUCTURED_REPLY, NULL);
	meta_data(&d, "disk", 1, base_ns);
	option(&b, NBD_OPT_LIST_META_CONTEXT, &d);
	meta_data(&d, "disk", 0, NULL);
	option(&b, NBD_OPT_LIST_META_CONTEXT, &d);
	meta_data(&d, "disk", 2, two);
	option(&b, NBD_OPT_SET_META_CONTEXT, &d);
	go_data(&d, "disk", 1);
	option(&b, NBD_OPT_INFO, &d);
	option(&b, 99, NULL);
	option(&b, NBD_OPT_STARTTLS, NULL);
	go_data(&d, "disk", 0);
	option(&b, NBD_OPT_GO, &d);
	request(&b, 0, NBD_CMD_BLOCK_STATUS, 60 << 20, 8 << 20);
	request(&b, 0, NBD_CMD_CACHE, 0, 4096);
	request(&b, 0, 42, 0, 0);
	r |= put(dir, "list-info-go", &b);

	/* Abort. */
	b.n = 0;
	u8(&b, 0);
	u32(&b, NBD_FLAG_C_FIXED_NEWSTYLE);
	option(&b, NBD_OPT_ABORT, NULL);
	r |= put(dir, "abort", &b);

	/* Malformed negotiation. */
	b.n = 0;
	u8(&b, 0);
	u32(&b, 0xffffffffu);
	r |= put(dir, "bad-client-flags", &b);
	b.n = 0;
	u8(&b, 0);
	u32(&b, NBD_FLAG_C_FIXED_NEWSTYLE);
	u64(&b, 0x1122334455667788ull);
	u32(&b, NBD_OPT_GO);
	u32(&b, 0);
	r |= put(dir, "bad-option-magic", &b);
	b.n = 0;
	u8(&b, 0);
	u32(&b, NBD_FLAG_C_FIXED_NEWSTYLE);
	u64(&b, NBD_IHAVEOPT);
	u32(&b, NBD_OPT_GO);
	u32(&b, 0xfffffff0u);
	r |= put(dir, "option-too-long", &b);
	b.n = 0;
	u8(&b, 0);
	u32(&b, NBD_FLAG_C_FIXED_NEWSTYLE);
	d.n = 0;
	u32(&d, 4000);		/* name longer than the option */
	raw(&d, "disk", 4);
	u16(&d, 0);
	option(&b, NBD_OPT_GO, &d);
	d.n = 0;
	u32(&d, 4);
	raw(&d, "di\0k", 4);	/* embedded NUL */
	u16(&d, 0);
	option(&b, NBD_OPT_GO, &d);
	go_data(&d, "disk", 2);
	d.n -= 2;		/* one request short */
	option(&b, NBD_OPT_GO, &d);
	d.n = 0;
	str(&d, "disk");
	u32(&d, 0xffffffffu);	/* absurd query count */
	option(&b, NBD_OPT_SET_META_CONTEXT, &d);
	go_data(&d, "", 0);	/* no default export */
	option(&b, NBD_OPT_GO, &d);
	r |= put(dir, "malformed-options", &b);

	/* Requests alone: export of 1 MiB, base:allocation on. */
	b.n = 0;
	u8(&b, 1);
	u64(&b, 1 << 20);
	u8(&b, 2);
	request(&b, 0, NBD_CMD_READ, (1 << 20) - 512, 512);
	request(&b, 0, NBD_CMD_READ, (1 << 20) - 512, 513);
	request(&b, 0, NBD_CMD_READ, UINT64_MAX, 1);
	request(&b, 0, NBD_CMD_READ, 0, NBD_MAX_PAYLOAD + 1);
	request(&b, 0, NBD_CMD_WRITE, UINT64_MAX - 1, 2);
	request(&b, 0, NBD_CMD_WRITE_ZEROES, 1 << 20, 1);
	request(&b, 0, NBD_CMD_TRIM, 0, UINT32_MAX);
	request(&b, 0, NBD_CMD_BLOCK_STATUS, 1 << 20, 1);
	request(&b, 0, NBD_CMD_BLOCK_STATUS, 0, 0);
	request(&b, NBD_CMD_FLAG_DF, NBD_CMD_READ, 0, 1);
	request(&b, 0xffff, NBD_CMD_WRITE, 0, 1);
	request(&b, 0, NBD_CMD_FLUSH, 1, 0);
	request(&b, 0, NBD_CMD_WRITE, 0, NBD_MAX_PAYLOAD + 1);
	r |= put(dir, "requests-edges", &b);

	/* Requests alone on a read-only export without block status. */
	b.n = 0;
	u8(&b, 1);
	u64(&b, 64 << 20);
	u8(&b, 1);
	every_request(&b);
	r |= put(dir, "requests-read-only", &b);

	/* A bad request magic mid-stream. */
	b.n = 0;
	u8(&b, 1);
	u64(&b, 64 << 20);
	u8(&b, 0);
	request(&b, 0, NBD_CMD_READ, 0, 4096);
	u32(&b, 0x12345678);
	raw(&b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 24);
	r |= put(dir, "bad-request-magic", &b);

	/* One option's data for each decoder. */
	b.n = 0;
	u8(&b, 2);
	u8(&b, 0);
	go_data(&d, "image@snap", 3);
	raw(&b, d.b, d.n);
	r |= put(dir, "data-go", &b);
	b.n = 0;
	u8(&b, 2);
	u8(&b, 1);
	raw(&b, "vm-disk-7", 9);
	r |= put(dir, "data-export-name", &b);
	b.n = 0;
	u8(&b, 2);
	u8(&b, 2);
	meta_data(&d, "disk", 1, base_ns);
	raw(&b, d.b, d.n);
	r |= put(dir, "data-list-meta", &b);
	b.n = 0;
	u8(&b, 2);
	u8(&b, 3);
	meta_data(&d, "disk", 2, two);
	raw(&b, d.b, d.n);
	r |= put(dir, "data-set-meta", &b);

	return r ? 1 : 0;
}
