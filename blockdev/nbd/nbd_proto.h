/*
 * nbd_proto.h - the NBD wire protocol as atoll-nbd speaks it: constants
 * and the big-endian field helpers.
 *
 * Everything on the wire is big-endian.  The numbers follow the protocol
 * document of the NBD project (doc/proto.md there); only what atoll-nbd
 * sends or accepts is listed.  Kept free of server state so that a fuzz
 * target or a unit test can include it alone.
 */
#ifndef ATOLL_NBD_PROTO_H
#define ATOLL_NBD_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Handshake. */
#define NBD_MAGIC		0x4e42444d41474943ULL	/* "NBDMAGIC" */
#define NBD_IHAVEOPT		0x49484156454f5054ULL	/* "IHAVEOPT" */
#define NBD_REP_MAGIC		0x0003e889045565a9ULL

/* Handshake flags (server) and client flags. */
#define NBD_FLAG_FIXED_NEWSTYLE	(1u << 0)
#define NBD_FLAG_NO_ZEROES	(1u << 1)
#define NBD_FLAG_C_FIXED_NEWSTYLE (1u << 0)
#define NBD_FLAG_C_NO_ZEROES	(1u << 1)

/* Options. */
#define NBD_OPT_EXPORT_NAME	1
#define NBD_OPT_ABORT		2
#define NBD_OPT_LIST		3
#define NBD_OPT_STARTTLS	5
#define NBD_OPT_INFO		6
#define NBD_OPT_GO		7
#define NBD_OPT_STRUCTURED_REPLY 8
#define NBD_OPT_LIST_META_CONTEXT 9
#define NBD_OPT_SET_META_CONTEXT 10

/* Option replies. */
#define NBD_REP_ACK		1u
#define NBD_REP_SERVER		2u
#define NBD_REP_INFO		3u
#define NBD_REP_META_CONTEXT	4u
#define NBD_REP_FLAG_ERROR	(1u << 31)
#define NBD_REP_ERR_UNSUP	(NBD_REP_FLAG_ERROR | 1u)
#define NBD_REP_ERR_POLICY	(NBD_REP_FLAG_ERROR | 2u)
#define NBD_REP_ERR_INVALID	(NBD_REP_FLAG_ERROR | 3u)
#define NBD_REP_ERR_PLATFORM	(NBD_REP_FLAG_ERROR | 4u)
#define NBD_REP_ERR_TLS_REQD	(NBD_REP_FLAG_ERROR | 5u)
#define NBD_REP_ERR_UNKNOWN	(NBD_REP_FLAG_ERROR | 6u)
#define NBD_REP_ERR_SHUTDOWN	(NBD_REP_FLAG_ERROR | 7u)
#define NBD_REP_ERR_TOO_BIG	(NBD_REP_FLAG_ERROR | 9u)

/* NBD_REP_INFO types. */
#define NBD_INFO_EXPORT		0
#define NBD_INFO_NAME		1
#define NBD_INFO_DESCRIPTION	2
#define NBD_INFO_BLOCK_SIZE	3

/* Transmission flags (per export). */
#define NBD_FLAG_HAS_FLAGS	(1u << 0)
#define NBD_FLAG_READ_ONLY	(1u << 1)
#define NBD_FLAG_SEND_FLUSH	(1u << 2)
#define NBD_FLAG_SEND_FUA	(1u << 3)
#define NBD_FLAG_ROTATIONAL	(1u << 4)
#define NBD_FLAG_SEND_TRIM	(1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES (1u << 6)
#define NBD_FLAG_SEND_DF	(1u << 7)
#define NBD_FLAG_CAN_MULTI_CONN	(1u << 8)
#define NBD_FLAG_SEND_FAST_ZERO	(1u << 11)

/* Requests. */
#define NBD_REQUEST_MAGIC	0x25609513u
#define NBD_REQUEST_SIZE	28
#define NBD_CMD_READ		0
#define NBD_CMD_WRITE		1
#define NBD_CMD_DISC		2
#define NBD_CMD_FLUSH		3
#define NBD_CMD_TRIM		4
#define NBD_CMD_CACHE		5
#define NBD_CMD_WRITE_ZEROES	6
#define NBD_CMD_BLOCK_STATUS	7
#define NBD_CMD_FLAG_FUA	(1u << 0)
#define NBD_CMD_FLAG_NO_HOLE	(1u << 1)
#define NBD_CMD_FLAG_DF		(1u << 2)
#define NBD_CMD_FLAG_REQ_ONE	(1u << 3)
#define NBD_CMD_FLAG_FAST_ZERO	(1u << 4)

/* Replies. */
#define NBD_SIMPLE_REPLY_MAGIC	0x67446698u
#define NBD_SIMPLE_REPLY_SIZE	16
#define NBD_STRUCTURED_REPLY_MAGIC 0x668e33efu
#define NBD_STRUCTURED_REPLY_SIZE 20
#define NBD_REPLY_FLAG_DONE	(1u << 0)
#define NBD_REPLY_TYPE_NONE	0
#define NBD_REPLY_TYPE_OFFSET_DATA 1
#define NBD_REPLY_TYPE_OFFSET_HOLE 2
#define NBD_REPLY_TYPE_BLOCK_STATUS 5
#define NBD_REPLY_TYPE_ERROR	((1u << 15) | 1u)

/* base:allocation extent flags. */
#define NBD_STATE_HOLE		(1u << 0)
#define NBD_STATE_ZERO		(1u << 1)

/* Error values on the wire (fixed by the protocol, not the host's errno). */
#define NBD_EPERM		1
#define NBD_EIO			5
#define NBD_ENOMEM		12
#define NBD_EINVAL		22
#define NBD_ENOSPC		28
#define NBD_EOVERFLOW		75
#define NBD_ENOTSUP		95
#define NBD_ESHUTDOWN		108

/* The one metadata context we offer. */
#define NBD_META_BASE_ALLOCATION "base:allocation"
#define NBD_META_ID_BASE_ALLOCATION 1u

/* What atoll-nbd accepts from a client (doc/nbd.md).  The largest read or
 * write, advertised as the maximum block size: longer writes end the
 * connection (their payload is not read), longer reads get EINVAL.  One
 * option's data (names are at most 4 KiB by the protocol). */
#define NBD_MAX_PAYLOAD		(32u << 20)
#define NBD_MAX_OPTION_LEN	(64u << 10)
#define NBD_MAX_NAME_LEN	4096
#define NBD_OPTION_HEADER_SIZE	16
#define NBD_CLIENT_FLAGS_SIZE	4

/* Big-endian helpers: p points at enough bytes (callers check lengths). */
static inline void nbd_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void nbd_put32(uint8_t *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline void nbd_put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint16_t nbd_get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static inline uint32_t nbd_get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	       ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t nbd_get64(const uint8_t *p)
{
	return ((uint64_t)nbd_get32(p) << 32) | nbd_get32(p + 4);
}

/* A decoded transmission request header. */
struct nbd_request {
	uint16_t flags;
	uint16_t type;
	uint64_t cookie;	/* "handle" in older texts; echoed back */
	uint64_t offset;
	uint32_t length;
};

/*
 * nbd_decode.c: pure decoders of everything a client sends, apart from
 * the socket (which nbd_negotiate.c and nbd_transmit.c read), so that
 * tests/fuzz/fuzz_nbd.c reaches every one of them.  Each takes a buffer
 * and its length, checks every length and string against it and against
 * the limits above, and fails cleanly: 0 or a negative errno.  Names come
 * out NUL-terminated, without embedded NULs.
 */

/* The client's 32-bit flags: -EPROTO for a flag we do not know. */
int nbd_client_flags_decode(const uint8_t p[NBD_CLIENT_FLAGS_SIZE], bool *fixed,
			    bool *no_zeroes);

/* An option header: IHAVEOPT, option, data length. */
struct nbd_option {
	uint32_t opt;
	uint32_t len;
};
/* -EPROTO for a bad magic, -EMSGSIZE for data over NBD_MAX_OPTION_LEN
 * (both close the connection: the data is not read). */
int nbd_option_decode(const uint8_t p[NBD_OPTION_HEADER_SIZE], struct nbd_option *o);

/* NBD_OPT_INFO and NBD_OPT_GO: export name, then 16-bit info requests. */
struct nbd_opt_go {
	char name[NBD_MAX_NAME_LEN + 1];
	uint16_t nreq;
	bool want_name;		/* NBD_INFO_NAME asked for */
	bool want_desc;		/* NBD_INFO_DESCRIPTION asked for */
};
/* -EINVAL for a short or long string, an embedded NUL, or a request
 * count that does not match the bytes left. */
int nbd_opt_go_decode(const uint8_t *data, size_t len, struct nbd_opt_go *out);

/* NBD_OPT_EXPORT_NAME: the whole data is the name.  -EINVAL when empty,
 * too long or holding a NUL. */
int nbd_opt_export_name_decode(const uint8_t *data, size_t len,
			       char name[NBD_MAX_NAME_LEN + 1]);

/* NBD_OPT_LIST_META_CONTEXT and NBD_OPT_SET_META_CONTEXT: export name,
 * query count, queries.  The whole request is checked before any of it
 * is answered. */
struct nbd_opt_meta {
	char name[NBD_MAX_NAME_LEN + 1];
	uint32_t nqueries;
	/* base:allocation is selected (set: a query names it) or listed
	 * (list: a query names it or "base:", or there is no query). */
	bool base_allocation;
};
int nbd_opt_meta_decode(bool set, const uint8_t *data, size_t len, struct nbd_opt_meta *out);

/* Decodes the 28-byte request header; -EPROTO on bad magic. */
int nbd_request_decode(const uint8_t p[NBD_REQUEST_SIZE], struct nbd_request *r);

/* What the transmission checks need to know of the export. */
struct nbd_request_limits {
	uint64_t size;
	bool read_only;
	bool meta_alloc;	/* base:allocation was negotiated */
};

/* What the reader does with a request. */
enum nbd_request_action {
	NBD_RQ_ISSUE,		/* valid: issue it */
	NBD_RQ_REFUSE,		/* answer with .err (write data is read and dropped) */
	NBD_RQ_DISC,		/* NBD_CMD_DISC: finish what is in flight, close */
	NBD_RQ_CLOSE,		/* bad magic, or write data we will not read */
};

struct nbd_request_plan {
	enum nbd_request_action action;
	int err;		/* NBD_RQ_REFUSE: a negative errno for the reply */
	uint32_t payload;	/* bytes of write data after the header */
	uint64_t length;	/* to issue: block status is clipped at the end */
};

/* Decodes a request header and decides what to do with it. */
void nbd_request_plan(const uint8_t p[NBD_REQUEST_SIZE], const struct nbd_request_limits *lim,
		      struct nbd_request *rq, struct nbd_request_plan *plan);

/* A host errno (positive or negative) as the protocol's error value. */
static inline uint32_t nbd_errno_to_wire(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0: return 0;
	case 1: /* EPERM */ case 13: /* EACCES */ case 30: /* EROFS */
		return NBD_EPERM;
	case 12: return NBD_ENOMEM;
	case 22: return NBD_EINVAL;
	case 27: /* EFBIG */ case 28: /* ENOSPC */ case 122: /* EDQUOT */
		return NBD_ENOSPC;
	case 75: return NBD_EOVERFLOW;
	case 95: return NBD_ENOTSUP;
	case 108: return NBD_ESHUTDOWN;
	default: return NBD_EIO;
	}
}

#endif
