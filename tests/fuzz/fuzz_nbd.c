/*
 * fuzz_nbd.c - libFuzzer target for atoll-nbd's decoders of what a client
 * sends (blockdev/nbd/nbd_decode.c): client flags, option headers, the
 * data of NBD_OPT_GO/INFO/EXPORT_NAME/LIST_META_CONTEXT/SET_META_CONTEXT,
 * and transmission request headers with the server's decision on each.
 *
 * The first byte chooses what the rest is:
 *   0  a client's whole byte stream, as the server reads it: client flags,
 *      options (header, then its data) until GO or EXPORT_NAME succeeds,
 *      then request headers (each write followed by its data) against an
 *      export of 64 MiB, read-only when its name has '@', with block
 *      status when SET_META_CONTEXT chose base:allocation for it;
 *   1  requests alone: export size (8 bytes), flags (1 byte: read-only,
 *      base:allocation), then request headers as above;
 *   2  one option's data: the next byte picks the decoder.
 * A decoder must fail cleanly or succeed; what it accepts is checked
 * against the bytes (names re-encoded must give the input back, a meta
 * context request is walked again here independently), and every request
 * the server would issue lies inside the export and its limits.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nbd_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_EXPORT_SIZE (64ull << 20)

struct stream {
	const uint8_t *p;
	size_t left;
};

static const uint8_t *take(struct stream *s, size_t n)
{
	const uint8_t *p = s->p;

	if (s->left < n)
		return NULL;
	s->p += n;
	s->left -= n;
	return p;
}

static void check_name(const char *name, const uint8_t *src, size_t len)
{
	if (len > NBD_MAX_NAME_LEN || strlen(name) != len || memcmp(name, src, len))
		abort();
}

static void check_go(const uint8_t *p, size_t len, struct nbd_opt_go *go)
{
	size_t nlen;
	bool want_name = false, want_desc = false;

	if (nbd_opt_go_decode(p, len, go))
		return;
	/* Accepted: the data is exactly name, count, requests. */
	nlen = strlen(go->name);
	if (len != 4 + nlen + 2 + 2 * (size_t)go->nreq || nbd_get32(p) != nlen ||
	    nbd_get16(p + 4 + nlen) != go->nreq)
		abort();
	check_name(go->name, p + 4, nlen);
	for (size_t i = 0; i < go->nreq; i++) {
		uint16_t r = nbd_get16(p + 4 + nlen + 2 + 2 * i);

		want_name |= r == NBD_INFO_NAME;
		want_desc |= r == NBD_INFO_DESCRIPTION;
	}
	if (want_name != go->want_name || want_desc != go->want_desc)
		abort();
}

static void check_export_name(const uint8_t *p, size_t len, char *name)
{
	if (nbd_opt_export_name_decode(p, len, name) == 0)
		check_name(name, p, len);
}

/* The meta context request walked again, independently: -1 if malformed,
 * else whether base:allocation is chosen. */
static int meta_reference(bool set, const uint8_t *p, size_t len)
{
	size_t off = 0;
	uint32_t n, nq;
	int chosen = 0;

	if (len < 4 || (n = nbd_get32(p)) > NBD_MAX_NAME_LEN || n > len - 4 ||
	    memchr(p + 4, 0, n))
		return -1;
	off = 4 + (size_t)n;
	if (len - off < 4)
		return -1;
	nq = nbd_get32(p + off);
	off += 4;
	for (uint32_t i = 0; i < nq; i++) {
		if (len - off < 4 || (n = nbd_get32(p + off)) > NBD_MAX_NAME_LEN ||
		    n > len - off - 4 || memchr(p + off + 4, 0, n))
			return -1;
		off += 4;
		if ((n == 15 && memcmp(p + off, "base:allocation", 15) == 0) ||
		    (!set && n == 5 && memcmp(p + off, "base:", 5) == 0))
			chosen = 1;
		off += n;
	}
	if (off != len)
		return -1;
	return chosen || (!set && nq == 0);
}

static void check_meta(bool set, const uint8_t *p, size_t len, struct nbd_opt_meta *m)
{
	int ret = nbd_opt_meta_decode(set, p, len, m), ref = meta_reference(set, p, len);

	if ((ret == 0) != (ref >= 0))
		abort();
	if (ret)
		return;
	if (m->base_allocation != (ref == 1))
		abort();
	check_name(m->name, p + 4, nbd_get32(p));
}

/* Requests until the stream ends or the server would close. */
static void requests(struct stream *s, const struct nbd_request_limits *lim)
{
	const uint8_t *hdr;

	while ((hdr = take(s, NBD_REQUEST_SIZE)) != NULL) {
		struct nbd_request_plan plan;
		struct nbd_request rq;
		bool writes;

		nbd_request_plan(hdr, lim, &rq, &plan);
		if (plan.action == NBD_RQ_CLOSE || plan.action == NBD_RQ_DISC)
			return;
		if (plan.payload && (rq.type != NBD_CMD_WRITE || plan.payload != rq.length ||
				     plan.payload > NBD_MAX_PAYLOAD))
			abort();
		if (rq.type == NBD_CMD_WRITE && plan.payload != rq.length)
			abort();
		if (plan.action == NBD_RQ_REFUSE) {
			if (plan.err >= 0)
				abort();
		} else {
			writes = rq.type == NBD_CMD_WRITE || rq.type == NBD_CMD_TRIM ||
				 rq.type == NBD_CMD_WRITE_ZEROES;
			if (plan.err || (writes && lim->read_only))
				abort();
			switch (rq.type) {
			case NBD_CMD_READ:
				if (rq.length > NBD_MAX_PAYLOAD)
					abort();
				/* fall through */
			case NBD_CMD_WRITE:
			case NBD_CMD_TRIM:
			case NBD_CMD_WRITE_ZEROES:
				if (rq.offset > lim->size || rq.length > lim->size - rq.offset ||
				    plan.length != rq.length)
					abort();
				break;
			case NBD_CMD_FLUSH:
				if (rq.offset || rq.length || rq.flags)
					abort();
				break;
			case NBD_CMD_BLOCK_STATUS:
				if (!lim->meta_alloc || rq.offset >= lim->size ||
				    plan.length == 0 || plan.length > rq.length ||
				    plan.length > lim->size - rq.offset)
					abort();
				break;
			default:
				abort();
			}
		}
		/* The payload follows; a truncated one ends the stream. */
		if (!take(s, plan.payload))
			return;
	}
}

/* Mode 0: the whole conversation, as the server reads it. */
static void conversation(struct stream *s)
{
	static struct nbd_opt_go go;
	static struct nbd_opt_meta meta;
	static char name[NBD_MAX_NAME_LEN + 1], meta_name[NBD_MAX_NAME_LEN + 1];
	struct nbd_request_limits lim = { .size = FUZZ_EXPORT_SIZE };
	bool fixed, no_zeroes, structured = false, meta_alloc = false;
	const uint8_t *p;

	p = take(s, NBD_CLIENT_FLAGS_SIZE);
	if (!p || nbd_client_flags_decode(p, &fixed, &no_zeroes))
		return;
	for (;;) {
		struct nbd_option o;
		const char *chosen = NULL;

		p = take(s, NBD_OPTION_HEADER_SIZE);
		if (!p || nbd_option_decode(p, &o))
			return;
		if (o.len > NBD_MAX_OPTION_LEN)
			abort();
		p = take(s, o.len);
		if (!p)
			return;
		if (!fixed && o.opt != NBD_OPT_EXPORT_NAME)
			return;
		switch (o.opt) {
		case NBD_OPT_EXPORT_NAME:
			check_export_name(p, o.len, name);
			if (nbd_opt_export_name_decode(p, o.len, name))
				return;
			chosen = name;
			break;
		case NBD_OPT_ABORT:
			return;
		case NBD_OPT_STRUCTURED_REPLY:
			structured |= o.len == 0;
			break;
		case NBD_OPT_INFO:
		case NBD_OPT_GO:
			check_go(p, o.len, &go);
			if (o.opt == NBD_OPT_GO && nbd_opt_go_decode(p, o.len, &go) == 0 &&
			    go.name[0])
				chosen = go.name;
			break;
		case NBD_OPT_LIST_META_CONTEXT:
		case NBD_OPT_SET_META_CONTEXT:
			check_meta(o.opt == NBD_OPT_SET_META_CONTEXT, p, o.len, &meta);
			if (o.opt == NBD_OPT_SET_META_CONTEXT && structured &&
			    nbd_opt_meta_decode(true, p, o.len, &meta) == 0) {
				meta_alloc = meta.base_allocation;
				memcpy(meta_name, meta.name, sizeof(meta_name));
			}
			break;
		default:
			break;
		}
		if (chosen) {
			lim.read_only = strchr(chosen, '@') != NULL;
			lim.meta_alloc = meta_alloc && strcmp(meta_name, chosen) == 0;
			requests(s, &lim);
			return;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nbd_opt_go go;
	static struct nbd_opt_meta meta;
	static char name[NBD_MAX_NAME_LEN + 1];
	struct stream s = { data + 1, size ? size - 1 : 0 };
	struct nbd_request_limits lim;
	const uint8_t *p;

	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		conversation(&s);
		break;
	case 1:
		p = take(&s, 9);
		if (!p)
			break;
		lim.size = nbd_get64(p);
		lim.read_only = p[8] & 1;
		lim.meta_alloc = p[8] & 2;
		requests(&s, &lim);
		break;
	case 2:
		p = take(&s, 1);
		if (!p)
			break;
		switch (p[0] % 4) {
		case 0:
			check_go(s.p, s.left, &go);
			break;
		case 1:
			check_export_name(s.p, s.left, name);
			break;
		default:
			check_meta(p[0] % 4 == 3, s.p, s.left, &meta);
			break;
		}
		break;
	}
	return 0;
}
