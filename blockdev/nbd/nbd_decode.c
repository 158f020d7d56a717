/*
 * nbd_decode.c - pure decoders of what an NBD client sends: the client
 * flags, option headers and the data of each option we take, and
 * transmission request headers with the decision of what to do with them.
 *
 * Why apart from the state machines: these are the parts that interpret
 * untrusted bytes, and kept free of sockets, threads and the image they
 * can be fuzzed alone (tests/fuzz/fuzz_nbd.c) and reasoned about alone.
 * nbd_negotiate.c and nbd_transmit.c read the socket, call these, and act.
 * Every function takes a buffer and its length, never reads past it, and
 * bounds every count and string by what is left and by nbd_proto.h's
 * limits before it copies anything.
 */
#include "nbd_proto.h"

#include <errno.h>

/* A bounded view of one option's data. */
struct opt_cursor {
	const uint8_t *p;
	size_t left;
};

static int cur_u16(struct opt_cursor *c, uint16_t *v)
{
	if (c->left < 2)
		return -EINVAL;
	*v = nbd_get16(c->p);
	c->p += 2;
	c->left -= 2;
	return 0;
}

static int cur_u32(struct opt_cursor *c, uint32_t *v)
{
	if (c->left < 4)
		return -EINVAL;
	*v = nbd_get32(c->p);
	c->p += 4;
	c->left -= 4;
	return 0;
}

/* A length-prefixed string as a NUL-terminated copy in out (which holds
 * NBD_MAX_NAME_LEN + 1 bytes); -EINVAL when short, long or holding a NUL. */
static int cur_string(struct opt_cursor *c, char *out)
{
	uint32_t len;

	if (cur_u32(c, &len) || len > c->left || len > NBD_MAX_NAME_LEN)
		return -EINVAL;
	if (memchr(c->p, 0, len))
		return -EINVAL;
	memcpy(out, c->p, len);
	out[len] = 0;
	c->p += len;
	c->left -= len;
	return 0;
}

int nbd_client_flags_decode(const uint8_t p[NBD_CLIENT_FLAGS_SIZE], bool *fixed,
			    bool *no_zeroes)
{
	uint32_t f = nbd_get32(p);

	if (f & ~(uint32_t)(NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES))
		return -EPROTO;
	*fixed = f & NBD_FLAG_C_FIXED_NEWSTYLE;
	*no_zeroes = f & NBD_FLAG_C_NO_ZEROES;
	return 0;
}

int nbd_option_decode(const uint8_t p[NBD_OPTION_HEADER_SIZE], struct nbd_option *o)
{
	if (nbd_get64(p) != NBD_IHAVEOPT)
		return -EPROTO;
	o->opt = nbd_get32(p + 8);
	o->len = nbd_get32(p + 12);
	if (o->len > NBD_MAX_OPTION_LEN)
		return -EMSGSIZE;
	return 0;
}

int nbd_opt_go_decode(const uint8_t *data, size_t len, struct nbd_opt_go *out)
{
	struct opt_cursor c = { data, len };
	uint16_t req;

	out->want_name = false;
	out->want_desc = false;
	if (cur_string(&c, out->name) || cur_u16(&c, &out->nreq) ||
	    c.left != (size_t)out->nreq * 2)
		return -EINVAL;
	while (cur_u16(&c, &req) == 0) {
		if (req == NBD_INFO_NAME)
			out->want_name = true;
		else if (req == NBD_INFO_DESCRIPTION)
			out->want_desc = true;
		/* NBD_INFO_EXPORT and BLOCK_SIZE are always sent; others ignored */
	}
	return 0;
}

int nbd_opt_export_name_decode(const uint8_t *data, size_t len,
			       char name[NBD_MAX_NAME_LEN + 1])
{
	if (len == 0 || len > NBD_MAX_NAME_LEN || memchr(data, 0, len))
		return -EINVAL;
	memcpy(name, data, len);
	name[len] = 0;
	return 0;
}

int nbd_opt_meta_decode(bool set, const uint8_t *data, size_t len, struct nbd_opt_meta *out)
{
	static const char base_ns[] = "base:";
	struct opt_cursor c = { data, len };
	char query[NBD_MAX_NAME_LEN + 1];

	out->base_allocation = false;
	if (cur_string(&c, out->name) || cur_u32(&c, &out->nqueries))
		return -EINVAL;
	/* Each query takes at least its 4-byte length: a count beyond what
	 * is left is refused before the loop runs, however large. */
	if (out->nqueries > c.left / 4)
		return -EINVAL;
	for (uint32_t i = 0; i < out->nqueries; i++) {
		if (cur_string(&c, query))
			return -EINVAL;
		if (strcmp(query, NBD_META_BASE_ALLOCATION) == 0 ||
		    (!set && strcmp(query, base_ns) == 0))
			out->base_allocation = true;
	}
	if (c.left != 0)
		return -EINVAL;		/* trailing bytes after the queries */
	if (!set && out->nqueries == 0)
		out->base_allocation = true;	/* list everything we have */
	return 0;
}

int nbd_request_decode(const uint8_t p[NBD_REQUEST_SIZE], struct nbd_request *r)
{
	if (nbd_get32(p) != NBD_REQUEST_MAGIC)
		return -EPROTO;
	r->flags = nbd_get16(p + 4);
	r->type = nbd_get16(p + 6);
	r->cookie = nbd_get64(p + 8);
	r->offset = nbd_get64(p + 16);
	r->length = nbd_get32(p + 24);
	return 0;
}

/* Flags each command accepts.  FUA is accepted everywhere it means
 * anything, and ignored: every write is durable when it completes. */
static uint16_t allowed_flags(uint16_t type)
{
	switch (type) {
	case NBD_CMD_WRITE:
	case NBD_CMD_TRIM:
		return NBD_CMD_FLAG_FUA;
	case NBD_CMD_WRITE_ZEROES:
		return NBD_CMD_FLAG_FUA | NBD_CMD_FLAG_NO_HOLE;
	case NBD_CMD_BLOCK_STATUS:
		return NBD_CMD_FLAG_REQ_ONE;
	default:
		return 0;
	}
}

/* The error a well-framed request gets before anything is issued, or 0. */
static int check_request(const struct nbd_request *rq, const struct nbd_request_limits *lim)
{
	bool writes = rq->type == NBD_CMD_WRITE || rq->type == NBD_CMD_TRIM ||
		      rq->type == NBD_CMD_WRITE_ZEROES;
	bool in_range = rq->offset <= lim->size && rq->length <= lim->size - rq->offset;

	switch (rq->type) {
	case NBD_CMD_READ:
	case NBD_CMD_WRITE:
	case NBD_CMD_FLUSH:
	case NBD_CMD_TRIM:
	case NBD_CMD_WRITE_ZEROES:
	case NBD_CMD_BLOCK_STATUS:
		break;
	default:
		return -EINVAL;		/* NBD_CMD_CACHE and anything unknown */
	}
	if (rq->flags & ~allowed_flags(rq->type))
		return -EINVAL;
	if (writes && lim->read_only)
		return -EPERM;
	switch (rq->type) {
	case NBD_CMD_READ:
		if (rq->length > NBD_MAX_PAYLOAD || !in_range)
			return -EINVAL;
		break;
	case NBD_CMD_WRITE:
	case NBD_CMD_WRITE_ZEROES:
		if (!in_range)
			return -ENOSPC;
		break;
	case NBD_CMD_TRIM:
		if (!in_range)
			return -EINVAL;
		break;
	case NBD_CMD_FLUSH:
		if (rq->offset || rq->length)
			return -EINVAL;
		break;
	case NBD_CMD_BLOCK_STATUS:
		if (!lim->meta_alloc || rq->length == 0 || rq->offset >= lim->size)
			return -EINVAL;
		break;
	}
	return 0;
}

void nbd_request_plan(const uint8_t p[NBD_REQUEST_SIZE], const struct nbd_request_limits *lim,
		      struct nbd_request *rq, struct nbd_request_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	if (nbd_request_decode(p, rq)) {
		memset(rq, 0, sizeof(*rq));
		plan->action = NBD_RQ_CLOSE;
		return;
	}
	if (rq->type == NBD_CMD_DISC) {
		plan->action = NBD_RQ_DISC;
		return;
	}
	if (rq->type == NBD_CMD_WRITE) {
		if (rq->length > NBD_MAX_PAYLOAD) {
			/* Its payload follows, and we will not read that much. */
			plan->action = NBD_RQ_CLOSE;
			return;
		}
		plan->payload = rq->length;	/* read even when refused */
	}
	plan->err = check_request(rq, lim);
	if (plan->err) {
		plan->action = NBD_RQ_REFUSE;
		return;
	}
	plan->action = NBD_RQ_ISSUE;
	plan->length = rq->length;
	if (rq->type == NBD_CMD_BLOCK_STATUS && plan->length > lim->size - rq->offset)
		plan->length = lim->size - rq->offset;
}
