/*
 * nbd_negotiate.c - the NBD handshake and option haggling, as an explicit
 * state machine per connection (fixed newstyle only, no oldstyle).
 *
 *   GREETING ──send──▶ CLIENT_FLAGS ──read──▶ OPTION ⟲ (LIST, INFO,
 *   STRUCTURED_REPLY, LIST/SET_META_CONTEXT, STARTTLS, unknown → error reply)
 *   OPTION ── GO / EXPORT_NAME ──▶ DONE (transmission)
 *   any state ── ABORT, EOF, bad magic, absurd length ──▶ CLOSE
 *
 * TLS (--tls): NBD_OPT_STARTTLS is acknowledged in plain text, then the
 * TLS handshake runs on the socket and the options go on inside TLS, with
 * everything negotiated before forgotten (structured replies, meta
 * contexts: a man in the middle could have chosen them; nbdkit's
 * CVE-2021-3716).  Nothing is read ahead of the STARTTLS option, so no
 * plain byte a client sent after it can be taken as coming from inside
 * TLS.  Under --tls=require every option but STARTTLS and ABORT gets
 * NBD_REP_ERR_TLS_REQD before TLS (EXPORT_NAME, which has no error reply,
 * closes), so nothing is listed or opened.  The export rules
 * (--tls-exports, nbd_acl.c) filter LIST and refuse INFO, GO and
 * EXPORT_NAME of an image the client's TLS identity may not use, before
 * the image is opened.
 *
 * Each state accepts only its own input; anything else moves to CLOSE.
 * Option data is bounded (NBD_MAX_OPTION_LEN): a longer option closes the
 * connection instead of reading what the client claims to send.  The
 * negotiation runs on the connection's reader thread with a receive
 * timeout, so a client that stops talking frees its slot.  The bytes
 * themselves are decoded by nbd_decode.c (fuzzed); this file reads the
 * socket and answers.
 */
#include "nbd_server.h"

#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int send_reply(struct nbd_conn *conn, uint32_t opt, uint32_t type,
		      const void *data, uint32_t len)
{
	uint8_t hdr[20];
	int ret;

	nbd_put64(hdr, NBD_REP_MAGIC);
	nbd_put32(hdr + 8, opt);
	nbd_put32(hdr + 12, type);
	nbd_put32(hdr + 16, len);
	ret = nbd_conn_write(conn, hdr, sizeof(hdr));
	if (!ret && len)
		ret = nbd_conn_write(conn, data, len);
	return ret;
}

/* An error reply with a sentence for the user (clients print it). */
static int send_error(struct nbd_conn *conn, uint32_t opt, uint32_t type,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int send_error(struct nbd_conn *conn, uint32_t opt, uint32_t type,
		      const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	log_debug(NBD_SUBSYS, "%s: option %u refused: %s", conn->peer, opt, msg);
	return send_reply(conn, opt, type, msg, (uint32_t)n);
}

/* The reply type for an export that cannot be opened. */
static uint32_t open_error_type(int err)
{
	switch (err) {
	case -ENOENT:
	case -EINVAL:
	case -ENAMETOOLONG:
		return NBD_REP_ERR_UNKNOWN;
	default:
		return NBD_REP_ERR_POLICY;
	}
}

static int send_open_error(struct nbd_conn *conn, uint32_t opt, const char *name, int err)
{
	const char *pool = conn->srv->pool;

	if (err == -ENOENT || err == -EINVAL || err == -ENAMETOOLONG)
		return send_error(conn, opt, open_error_type(err),
				  "image '%s' does not exist in pool '%s'; create it with: "
				  "atoll image create %s SIZE", name, pool, name);
	if (err == -EBUSY)
		return send_error(conn, opt, NBD_REP_ERR_POLICY,
				  "image '%s' is held by another writer; see: atoll image info %s",
				  name, name);
	return send_error(conn, opt, NBD_REP_ERR_POLICY, "cannot open image '%s': %s",
			  name, atoll_strerror(err));
}

/* Who the client is, for messages. */
bool nbd_allowed(const struct nbd_conn *conn, const char *name)
{
	struct nbd_server *srv = conn->srv;
	bool ok;

	pthread_rwlock_rdlock(&srv->acl_lock);
	ok = nbd_acl_allows(srv->acl, conn->identity, name);
	pthread_rwlock_unlock(&srv->acl_lock);
	return ok;
}

#define WHO_LEN 300
static const char *who(const struct nbd_conn *conn, char buf[WHO_LEN])
{
	if (!conn->identity[0])
		return conn->tls ? "TLS clients without an identity" : "clients without TLS";
	snprintf(buf, WHO_LEN, "TLS identity '%s'", conn->identity);
	return buf;
}

static int send_not_allowed(struct nbd_conn *conn, uint32_t opt, const char *name)
{
	char wb[WHO_LEN];

	log_info(NBD_SUBSYS, "%s: export '%s' refused: not allowed to %s", conn->peer, name,
		 who(conn, wb));
	return send_error(conn, opt, NBD_REP_ERR_POLICY,
			  "image '%s' is not among the exports allowed to %s; see "
			  "--tls-exports (doc/nbd.md, \"TLS\")", name, who(conn, wb));
}

/* NBD_OPT_STARTTLS: acknowledge, then the TLS handshake; the options
 * negotiated so far are forgotten.  A failed handshake closes. */
static int opt_starttls(struct nbd_conn *conn, uint32_t len)
{
	struct nbd_server *srv = conn->srv;
	char err[512];
	int ret;

	if (srv->tls_mode == NBD_TLS_OFF)
		return send_error(conn, NBD_OPT_STARTTLS, NBD_REP_ERR_POLICY,
				  "this atoll-nbd does not offer TLS; start it with "
				  "--tls=on or --tls=require (doc/nbd.md, \"TLS\")");
	if (len != 0)
		return send_error(conn, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID,
				  "NBD_OPT_STARTTLS takes no data");
	if (conn->tls)
		return send_error(conn, NBD_OPT_STARTTLS, NBD_REP_ERR_INVALID,
				  "TLS is already on");
	ret = send_reply(conn, NBD_OPT_STARTTLS, NBD_REP_ACK, NULL, 0);
	if (ret)
		return ret;
	ret = nbd_tls_handshake(srv->tls, conn->fd, &conn->tls, conn->identity,
				sizeof(conn->identity), err, sizeof(err));
	if (ret) {
		log_info(NBD_SUBSYS, "%s: %s; closing", conn->peer, err);
		return ret;
	}
	conn->structured = false;
	conn->meta_alloc = false;
	conn->meta_export[0] = 0;
	log_info(NBD_SUBSYS, "%s: TLS on (%s)%s%s%s", conn->peer, nbd_tls_cipher(conn->tls),
		 conn->identity[0] ? " for identity '" : ", no client identity",
		 conn->identity, conn->identity[0] ? "'" : "");
	return 0;
}

static int opt_list(struct nbd_conn *conn, uint32_t len)
{
	char *names = NULL;
	size_t total = 0;
	int ret;

	if (len != 0)
		return send_error(conn, NBD_OPT_LIST, NBD_REP_ERR_INVALID,
				  "NBD_OPT_LIST takes no data");
	ret = nbd_export_list(conn->srv, &names, &total);
	if (ret)
		return send_error(conn, NBD_OPT_LIST, NBD_REP_ERR_POLICY,
				  "cannot list the images of pool '%s': %s",
				  conn->srv->pool, atoll_strerror(ret));
	for (size_t off = 0; off < total && !ret;) {
		size_t n = strlen(names + off);
		uint8_t buf[4 + NBD_MAX_NAME_LEN];

		if (n > 0 && n <= NBD_MAX_NAME_LEN &&
		    nbd_allowed(conn, names + off)) {
			nbd_put32(buf, (uint32_t)n);
			memcpy(buf + 4, names + off, n);
			ret = send_reply(conn, NBD_OPT_LIST, NBD_REP_SERVER, buf,
					 (uint32_t)(4 + n));
		}
		off += n + 1;
	}
	free(names);
	if (ret)
		return ret;
	return send_reply(conn, NBD_OPT_LIST, NBD_REP_ACK, NULL, 0);
}

static int send_info_export(struct nbd_conn *conn, uint32_t opt, const struct nbd_export *ex)
{
	uint8_t buf[12];

	nbd_put16(buf, NBD_INFO_EXPORT);
	nbd_put64(buf + 2, ex->size);
	nbd_put16(buf + 10, nbd_export_flags(ex));
	return send_reply(conn, opt, NBD_REP_INFO, buf, sizeof(buf));
}

static int send_info_block_size(struct nbd_conn *conn, uint32_t opt)
{
	uint8_t buf[14];

	nbd_put16(buf, NBD_INFO_BLOCK_SIZE);
	nbd_put32(buf + 2, 1);			/* any alignment works */
	nbd_put32(buf + 6, 4096);		/* avoids read-modify-write in ext4 */
	nbd_put32(buf + 10, NBD_MAX_PAYLOAD);
	return send_reply(conn, opt, NBD_REP_INFO, buf, sizeof(buf));
}

static int send_info_name(struct nbd_conn *conn, uint32_t opt, uint16_t type,
			  const char *s)
{
	uint8_t buf[2 + NBD_MAX_NAME_LEN];
	size_t n = strlen(s);

	if (n > NBD_MAX_NAME_LEN)
		n = NBD_MAX_NAME_LEN;
	nbd_put16(buf, type);
	memcpy(buf + 2, s, n);
	return send_reply(conn, opt, NBD_REP_INFO, buf, (uint32_t)(2 + n));
}

/* NBD_OPT_INFO and NBD_OPT_GO: name, then a list of info requests. */
static int opt_info_go(struct nbd_conn *conn, uint32_t opt, const uint8_t *data, uint32_t len)
{
	struct nbd_opt_go go;
	const char *name = go.name;
	struct nbd_export *ex;
	int ret;

	if (nbd_opt_go_decode(data, len, &go))
		return send_error(conn, opt, NBD_REP_ERR_INVALID,
				  "malformed NBD_OPT_INFO/GO data");
	if (!name[0])
		return send_error(conn, opt, NBD_REP_ERR_UNKNOWN,
				  "atoll-nbd has no default export; give an image name "
				  "(nbd://HOST:PORT/IMAGE) or IMAGE@SNAP");
	if (!nbd_allowed(conn, name))
		return send_not_allowed(conn, opt, name);
	ret = nbd_export_get(conn->srv, name, &ex);
	if (ret)
		return send_open_error(conn, opt, name, ret);
	ret = send_info_export(conn, opt, ex);
	if (!ret)
		ret = send_info_block_size(conn, opt);
	if (!ret && go.want_name)
		ret = send_info_name(conn, opt, NBD_INFO_NAME, ex->name);
	if (!ret && go.want_desc) {
		char desc[256];

		snprintf(desc, sizeof(desc), "atoll image '%s' in pool '%s'%s", ex->name,
			 conn->srv->pool, ex->read_only ? " (read-only snapshot)" : "");
		ret = send_info_name(conn, opt, NBD_INFO_DESCRIPTION, desc);
	}
	/* from here on the connection serves: not closed to make room */
	if (!ret && opt == NBD_OPT_GO && !nbd_conn_claim_serving(conn))
		ret = -ECONNABORTED;
	if (!ret)
		ret = send_reply(conn, opt, NBD_REP_ACK, NULL, 0);
	if (ret || opt == NBD_OPT_INFO) {
		nbd_export_put(ex);
		return ret;
	}
	/* GO: contexts chosen for another export do not carry over. */
	if (conn->meta_alloc && strcmp(conn->meta_export, name) != 0)
		conn->meta_alloc = false;
	conn->export = ex;
	conn->state = NEG_DONE;
	return 0;
}

/* NBD_OPT_EXPORT_NAME: no error reply is possible; failure closes. */
static int opt_export_name(struct nbd_conn *conn, const uint8_t *data, uint32_t len)
{
	char name[NBD_MAX_NAME_LEN + 1];
	uint8_t buf[10 + 124];
	struct nbd_export *ex;
	int ret;

	if (nbd_opt_export_name_decode(data, len, name)) {
		conn->state = NEG_CLOSE;
		return 0;
	}
	if (!nbd_allowed(conn, name)) {
		char wb[WHO_LEN];

		log_info(NBD_SUBSYS, "%s: export '%s' refused: not allowed to %s", conn->peer,
			 name, who(conn, wb));
		conn->state = NEG_CLOSE;
		return 0;
	}
	ret = nbd_export_get(conn->srv, name, &ex);
	if (ret) {
		log_info(NBD_SUBSYS, "%s: export '%s' refused: %s", conn->peer, name,
			 atoll_strerror(ret));
		conn->state = NEG_CLOSE;
		return 0;
	}
	if (!nbd_conn_claim_serving(conn)) {
		nbd_export_put(ex);
		return -ECONNABORTED;
	}
	memset(buf, 0, sizeof(buf));
	nbd_put64(buf, ex->size);
	nbd_put16(buf + 8, nbd_export_flags(ex));
	ret = nbd_conn_write(conn, buf, conn->no_zeroes ? 10 : sizeof(buf));
	if (ret) {
		nbd_export_put(ex);
		return ret;
	}
	/* Structured replies and contexts need NBD_OPT_GO's error path in
	 * clients that negotiate them; they still apply here. */
	if (conn->meta_alloc && strcmp(conn->meta_export, name) != 0)
		conn->meta_alloc = false;
	conn->export = ex;
	conn->state = NEG_DONE;
	return 0;
}

/* NBD_OPT_LIST_META_CONTEXT and NBD_OPT_SET_META_CONTEXT: we have one
 * context, base:allocation, so the answer is it or nothing. */
static int opt_meta_context(struct nbd_conn *conn, uint32_t opt, const uint8_t *data,
			    uint32_t len)
{
	uint8_t rep[4 + sizeof(NBD_META_BASE_ALLOCATION)];
	bool set = opt == NBD_OPT_SET_META_CONTEXT;
	struct nbd_opt_meta meta;
	int ret = 0;

	if (set && !conn->structured)
		return send_error(conn, opt, NBD_REP_ERR_INVALID,
				  "negotiate NBD_OPT_STRUCTURED_REPLY before "
				  "NBD_OPT_SET_META_CONTEXT");
	if (nbd_opt_meta_decode(set, data, len, &meta))
		return send_error(conn, opt, NBD_REP_ERR_INVALID,
				  "malformed meta context request");
	if (set)
		conn->meta_alloc = false;
	if (meta.base_allocation) {
		nbd_put32(rep, NBD_META_ID_BASE_ALLOCATION);
		memcpy(rep + 4, NBD_META_BASE_ALLOCATION, strlen(NBD_META_BASE_ALLOCATION));
		ret = send_reply(conn, opt, NBD_REP_META_CONTEXT, rep,
				 (uint32_t)(4 + strlen(NBD_META_BASE_ALLOCATION)));
	}
	if (ret)
		return ret;
	if (set && meta.base_allocation) {
		conn->meta_alloc = true;
		snprintf(conn->meta_export, sizeof(conn->meta_export), "%s", meta.name);
	}
	return send_reply(conn, opt, NBD_REP_ACK, NULL, 0);
}

/* NEG_OPTION: one option header, its data, its answer. */
static int handle_option(struct nbd_conn *conn)
{
	uint8_t hdr[NBD_OPTION_HEADER_SIZE];
	struct nbd_option o;
	uint8_t *data = NULL;
	uint32_t opt, len;
	int ret;

	ret = nbd_conn_read(conn, hdr, sizeof(hdr));
	if (ret)
		return ret;
	ret = nbd_option_decode(hdr, &o);
	if (ret == -EPROTO) {
		log_info(NBD_SUBSYS, "%s: bad option magic; closing", conn->peer);
		return ret;
	}
	if (ret) {
		log_info(NBD_SUBSYS, "%s: option %u of %u bytes is too long; closing",
			 conn->peer, o.opt, o.len);
		return -EPROTO;
	}
	opt = o.opt;
	len = o.len;
	if (len) {
		data = malloc(len);
		if (!data)
			return -ENOMEM;
		ret = nbd_conn_read(conn, data, len);
		if (ret)
			goto out_free_data;
	}
	if (!conn->fixed && opt != NBD_OPT_EXPORT_NAME) {
		/* Plain newstyle: an option we do not take ends the session. */
		conn->state = NEG_CLOSE;
		goto out_free_data;
	}
	if (conn->srv->tls_mode == NBD_TLS_REQUIRE && !conn->tls &&
	    opt != NBD_OPT_STARTTLS && opt != NBD_OPT_ABORT) {
		if (opt == NBD_OPT_EXPORT_NAME) {	/* no error reply exists */
			log_info(NBD_SUBSYS, "%s: NBD_OPT_EXPORT_NAME without TLS; closing",
				 conn->peer);
			conn->state = NEG_CLOSE;
			goto out_free_data;
		}
		ret = send_error(conn, opt, NBD_REP_ERR_TLS_REQD,
				 "this atoll-nbd requires TLS: connect with nbds:// and a "
				 "PSK or certificate (doc/nbd.md, \"TLS\")");
		goto out_free_data;
	}
	switch (opt) {
	case NBD_OPT_EXPORT_NAME:
		ret = opt_export_name(conn, data, len);
		break;
	case NBD_OPT_ABORT:
		send_reply(conn, opt, NBD_REP_ACK, NULL, 0);	/* best effort */
		conn->state = NEG_CLOSE;
		break;
	case NBD_OPT_LIST:
		ret = opt_list(conn, len);
		break;
	case NBD_OPT_INFO:
	case NBD_OPT_GO:
		ret = opt_info_go(conn, opt, data, len);
		break;
	case NBD_OPT_STRUCTURED_REPLY:
		if (len != 0) {
			ret = send_error(conn, opt, NBD_REP_ERR_INVALID,
					 "NBD_OPT_STRUCTURED_REPLY takes no data");
			break;
		}
		conn->structured = true;
		ret = send_reply(conn, opt, NBD_REP_ACK, NULL, 0);
		break;
	case NBD_OPT_LIST_META_CONTEXT:
	case NBD_OPT_SET_META_CONTEXT:
		ret = opt_meta_context(conn, opt, data, len);
		break;
	case NBD_OPT_STARTTLS:
		ret = opt_starttls(conn, len);
		break;
	default:
		ret = send_error(conn, opt, NBD_REP_ERR_UNSUP, "option %u is not supported",
				 opt);
		break;
	}
out_free_data:
	free(data);
	return ret;
}

int nbd_negotiate(struct nbd_conn *conn)
{
	uint8_t buf[18];
	int ret = 0;

	conn->state = NEG_GREETING;
	while (!ret) {
		switch (conn->state) {
		case NEG_GREETING:
			nbd_put64(buf, NBD_MAGIC);
			nbd_put64(buf + 8, NBD_IHAVEOPT);
			nbd_put16(buf + 16, NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
			ret = nbd_conn_write(conn, buf, 18);
			conn->state = NEG_CLIENT_FLAGS;
			break;
		case NEG_CLIENT_FLAGS:
			ret = nbd_conn_read(conn, buf, 4);
			if (ret)
				break;
			ret = nbd_client_flags_decode(buf, &conn->fixed, &conn->no_zeroes);
			if (ret) {
				log_info(NBD_SUBSYS, "%s: unknown client flags 0x%x; closing",
					 conn->peer, nbd_get32(buf));
				break;
			}
			conn->state = NEG_OPTION;
			break;
		case NEG_OPTION:
			ret = handle_option(conn);
			break;
		case NEG_DONE:
			return 0;
		case NEG_CLOSE:
			return -ECONNABORTED;
		}
	}
	return ret;
}
