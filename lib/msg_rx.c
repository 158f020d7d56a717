/*
 * msg_rx.c - a messenger connection's receive path, on the loop thread:
 * reading the socket, cutting frames out of the byte stream, checking
 * them, and handing each to the handshake, to the call it answers or to
 * the upper layer; the flow control that pauses reading; and replies
 * received straight into a caller's buffer.  It is apart from msg_conn.c
 * because this is where the peer's bytes come in and memory is spent on
 * its say-so, and it grows with every limit put on that.
 *
 * Receiving: small frames are read many at a time into rbuf and parsed
 * from there; once a frame's header is in and its budget admits it
 * (msg_budget.c: otherwise reading pauses, EPOLLIN off, until msg_free()
 * gives enough back), its front and data get their own buffers (data is
 * one malloc that the upper layer may keep), and the rest of a big
 * payload is read straight into them with readv() (the tail of the iovec
 * still catches whatever follows into rbuf).  The buffers grow as the
 * bytes arrive (rx_grow: 4 MiB, then four times more each time, up to
 * the frame's length, each step charged to the pool and waited for when
 * it does not fit), so that a header announcing 64 MiB that never come
 * costs a message of the budget and little memory: at most the larger
 * of 4 MiB (untouched: not resident) and four times what arrived.
 *
 * Replies of msg_call_rx are received into the caller's buffer, leased
 * at the header (rx_lease_begin) and given back when the frame ends, is
 * dropped, or the lease is revoked (msg_conn_rx_revoke).  Big data gets
 * a crc of its own (rx_dcrc, then msg.data_crc) combined with the
 * front's for the check; for a daemon that asks (msgr_config.block_crcs:
 * the OSD), computed block by block, each 4 KiB block's crc kept
 * (msg.data_bcrc, for the store's checksums) and joined into the data's
 * through a table, so the bytes are read once.
 *
 * Failures go through msg_conn__fail() (msg_conn.c), which resets or
 * closes the connection: each step that can fail returns whether c can
 * go on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "atoll_assert.h"
#include "crc32c.h"
#include "log.h"
#include "mono.h"
#include "msg_secure.h"
#include "msgr_int.h"

#define RX_READS_MAX	16	/* reads per readable event, for fairness */
#define MSG_DATA_ALIGN	4096u	/* received data of whole 4 KiB blocks is aligned */
#define MSG_CRC_SPLIT_MIN (64u * 1024)	/* data this big gets its own crc */
/* A payload's first buffer, at most: an object write's largest (4 MiB)
 * fits whole, so its bytes are never copied to a bigger buffer */
#define RX_ALLOC_FIRST	(4u << 20)
#define RX_ALLOC_GROWTH	4		/* then it grows this many times */

/* ---- reply data in the caller's buffer (msg_call_rx) ---- */

/* data_free of a reply received into a leased buffer: not ours. */
static void rx_data_kept(void *arg)
{
	(void)arg;
}

/* The messenger is done writing the leased buffer of rx_msg. */
static void rx_lease_end(struct msg_conn *c)
{
	const struct msg_rxbuf_ops *ops = c->rx_lease;

	if (!ops)
		return;
	c->rx_lease = NULL;
	ops->put(c->rx_lease_arg);
}

/* At a reply's header: its data goes into the buffer of the call it
 * answers, when that call asked for it and its owner still lends it. */
static void *rx_lease_begin(struct msg_conn *c, const struct msg_hdr *h)
{
	struct msgr_call *call = msg_conn__call_find(c->msgr, h->tid);
	void *buf;

	if (!call || call->conn != c || !call->sent || !call->rx)
		return NULL;
	buf = call->rx->get(call->rx_arg, h->data_len);
	if (buf) {
		c->rx_lease = call->rx;
		c->rx_lease_arg = call->rx_arg;
	}
	return buf;
}

void msg_conn_rx_revoke(struct msg_conn *c)
{
	struct msg *m = c->rx_msg;
	size_t got;
	void *copy;

	ATOLL_ASSERT(msgr_on_loop(c->msgr), "msg_conn_rx_revoke called off the loop thread");
	if (!c->rx_lease)
		return;
	got = c->rx_got > m->front_len ? c->rx_got - m->front_len : 0;
	copy = m->data_len % MSG_DATA_ALIGN == 0 ? aligned_alloc(MSG_DATA_ALIGN, m->data_len)
						: malloc(m->data_len);
	if (copy) {
		memcpy(copy, m->data, got);
		m->data_free = NULL;
		c->rx_dcap = m->data_len;
	} else {
		/* the frame cannot be finished: the next read fails c */
		log_error("msgr", "connection '%s' fails: cannot allocate %u bytes", c->addr,
			  m->data_len);
		c->rx_broken = true;
	}
	m->data = copy;
	rx_lease_end(c);
}

/* ---- reading ---- */

void msg_conn__resume(struct msg_conn *c)
{
	if (!atomic_load(&c->rx_paused))
		return;
	/* the frame that paused c tries its budget again (conn_rx_header) */
	atomic_store(&c->rx_paused, false);
	msg_conn__update_events(c);
	msg_conn__readable(c);
}

/* Where the body's next bytes go: the rest of the front or of the data,
 * as far as its buffer goes (rx_grow makes room first). */
static uint8_t *rx_target(struct msg_conn *c, size_t *len)
{
	struct msg *m = c->rx_msg;

	if (c->rx_got < m->front_len) {
		*len = c->rx_fcap - c->rx_got;
		return (uint8_t *)m->front + c->rx_got;
	}
	*len = c->rx_dcap - (c->rx_got - m->front_len);
	return (uint8_t *)m->data + (c->rx_got - m->front_len);
}

enum rx_room {
	RX_ROOM,	/* the next byte has a place */
	RX_WAIT,	/* the pool has no room for more: c paused */
	RX_NOMEM,	/* c must fail */
};

/* Makes room in rx_msg's front or data for the next body byte: the
 * buffers grow as bytes arrive (RX_ALLOC_FIRST, then RX_ALLOC_GROWTH
 * times more, up to the length announced), each step charged to the
 * pool (msg_budget__grow), keeping data of whole 4 KiB blocks aligned. */
static enum rx_room rx_grow(struct msg_conn *c)
{
	struct msg *m = c->rx_msg;
	bool front = c->rx_got < m->front_len;
	uint32_t len = front ? m->front_len : m->data_len, *cap = front ? &c->rx_fcap : &c->rx_dcap;
	size_t pos = front ? c->rx_got : c->rx_got - m->front_len;
	void **buf = front ? &m->front : &m->data;
	uint64_t want;
	void *nb;

	if (pos < *cap)
		return RX_ROOM;
	want = *cap ? (uint64_t)*cap * RX_ALLOC_GROWTH : RX_ALLOC_FIRST;
	if (want > len)
		want = len;
	if (!msg_budget__grow(c, m, want - *cap))
		return RX_WAIT;
	if (!front && len % MSG_DATA_ALIGN == 0) {
		/* Data of whole 4 KiB blocks is page-aligned (malloc's large
		 * allocations need not be: jemalloc offsets them by a random
		 * cache line) so that the OSD's store can write it with
		 * O_DIRECT as it is, without a bounce copy. */
		nb = aligned_alloc(MSG_DATA_ALIGN, want);
		if (nb && pos)
			memcpy(nb, *buf, pos);
		if (nb)
			free(*buf);
	} else {
		nb = realloc(*buf, want);
	}
	if (!nb) {
		log_error("msgr", "closing connection '%s': cannot allocate %llu bytes for a "
			  "frame of %llu", c->addr, (unsigned long long)want,
			  (unsigned long long)m->front_len + m->data_len);
		return RX_NOMEM;	/* charged: msg_free gives it back */
	}
	*buf = nb;
	*cap = (uint32_t)want;
	return RX_ROOM;
}

/* The data's crc over n more bytes at p (split frames): block by block,
 * each whole block's crc kept in data_bcrc and joined into rx_dcrc. */
static void rx_data_crc(struct msg_conn *c, const uint8_t *p, size_t n)
{
	const struct crc32c_shift *shift = atoll__crc32c_shift_4k();
	struct msg *m = c->rx_msg;
	size_t pos = c->rx_got - m->front_len;	/* p's offset in the data */

	while (n) {
		size_t k = MSG_DATA_ALIGN - pos % MSG_DATA_ALIGN;

		if (k > n)
			k = n;
		c->rx_bpart = atoll__crc32c(c->rx_bpart, p, k);
		pos += k;
		p += k;
		n -= k;
		if (pos % MSG_DATA_ALIGN == 0) {
			size_t b = pos / MSG_DATA_ALIGN - 1;

			if (m->data_bcrc)
				m->data_bcrc[b] = c->rx_bpart;
			c->rx_dcrc = b ? atoll__crc32c_shift_combine(shift, c->rx_dcrc, c->rx_bpart)
				       : c->rx_bpart;
			c->rx_bpart = 0;
		}
	}
}

/* The data's crc once every byte is in (split frames): the last partial
 * block joined in. */
static uint32_t rx_data_crc_end(const struct msg_conn *c)
{
	uint32_t tail = c->rx_msg->data_len % MSG_DATA_ALIGN;

	if (!tail)
		return c->rx_dcrc;
	if (c->rx_msg->data_len < MSG_DATA_ALIGN)
		return c->rx_bpart;
	return atoll__crc32c_combine(c->rx_dcrc, c->rx_bpart, tail);
}

/* Up to k more body bytes: copied from src, or (src NULL) already read
 * into rx_target() by readv (they have their place).  Returns how many
 * were taken; *room says why it stopped short. */
static size_t rx_fill(struct msg_conn *c, const uint8_t *src, size_t k, enum rx_room *room)
{
	size_t done = 0;

	*room = RX_ROOM;
	while (k) {
		size_t len, n;
		uint8_t *dst;

		*room = rx_grow(c);
		if (*room != RX_ROOM)
			return done;
		dst = rx_target(c, &len);

		n = k < len ? k : len;
		if (src) {
			memcpy(dst, src, n);
			src += n;
		}
		if (c->rx_sec)	/* opened in place; a failure here fails the tag */
			(void)msg_secure_body_update(c->rx_sec, dst, n);
		else if (c->rx_split && c->rx_got >= c->rx_msg->front_len && c->rx_msg->data_bcrc)
			rx_data_crc(c, dst, n);
		else if (c->rx_split && c->rx_got >= c->rx_msg->front_len)
			c->rx_dcrc = atoll__crc32c(c->rx_dcrc, dst, n);
		else
			c->rx_crc = atoll__crc32c(c->rx_crc, dst, n);
		c->rx_got += n;
		k -= n;
		done += n;
	}
	if (c->rx_got == c->rx_msg->front_len + (size_t)c->rx_msg->data_len)
		c->rx_stage = RX_TAIL;
	return done;
}

static bool conn_rx_header(struct msg_conn *c)
{
	uint32_t limit = c->state == CS_OPEN ? c->frame_max : MSG_HELLO_FRAME_MAX;
	struct msg_hdr h;
	struct msg *m;
	int r;

	/* secure mode: opened again, from rbuf, if c pauses at this header */
	r = c->rx_sec ? msg_secure_open_hdr(c->rx_sec, c->rbuf + c->rpos, limit, &h)
		      : msg_hdr_decode(c->rbuf + c->rpos, limit, &h);
	if (r < 0) {
		if (r == -EACCES || r == -EIO)
			msgr__peer_warn(c, "closing connection '%s': a frame header fails its "
					"authentication tag (secure mode: tampered, replayed, "
					"reordered or dropped frames)", c->addr);
		else if (r == -EMSGSIZE)
			msgr__peer_warn(c, "closing connection '%s': a frame of %llu bytes is over "
					"the limit of %u", c->addr,
					(unsigned long long)h.front_len + h.data_len, limit);
		else
			msgr__peer_warn(c, "closing connection '%s': %s", c->addr,
					r == -EPROTO ? "bad magic (not an atoll messenger peer)"
						     : "bad header crc");
		msg_conn__fail(c, r);
		return false;
	}
	if (c->state == CS_HANDSHAKE && h.type != MSG_T_HELLO &&
	    !(h.type == MSG_T_AUTH && c->msgr->cfg.auth)) {
		msgr__peer_warn(c, "closing connection '%s': a message of type %u before the hello",
				c->addr, h.type);
		msg_conn__fail(c, -EPROTO);
		return false;
	}
	if (c->state == CS_OPEN && (h.type == MSG_T_HELLO || h.type == MSG_T_AUTH)) {
		msgr__peer_warn(c, "closing connection '%s': a second %s", c->addr,
				h.type == MSG_T_HELLO ? "hello" : "handshake");
		msg_conn__fail(c, -EPROTO);
		return false;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		log_error("msgr", "closing connection '%s': out of memory", c->addr);
		msg_conn__fail(c, -ENOMEM);
		return false;
	}
	/* An open connection's frame is charged from now until msg_free
	 * (msg_budget.c), or c pauses with the header left in rbuf, to be
	 * read again on resume.  An empty keepalive costs nothing: it is
	 * freed as soon as it is whole. */
	if (c->state == CS_OPEN &&
	    !(h.type == MSG_T_KEEPALIVE && h.front_len == 0 && h.data_len == 0)) {
		if (!msg_budget__admit(c, m, MSG_HEADER_LEN + (uint64_t)h.front_len + h.data_len +
						     MSG_TRAILER_LEN)) {
			free(m);
			return false;
		}
		m->conn = c;
		msg_conn__hold(c);
	}
	/* The reply to a msg_call_rx: into the caller's buffer if it lends
	 * it; other buffers are allocated as the bytes come (rx_grow). */
	c->rx_fcap = c->rx_dcap = 0;
	if (h.data_len && (h.flags & MSG_F_REPLY) && c->state == CS_OPEN &&
	    (m->data = rx_lease_begin(c, &h))) {
		m->data_free = rx_data_kept;
		c->rx_dcap = h.data_len;
	}
	m->type = h.type;
	m->flags = h.flags;
	m->tid = h.tid;
	m->front_len = h.front_len;
	m->data_len = h.data_len;
	c->rx_hdr = h;
	c->rx_msg = m;
	c->rx_got = 0;
	c->rx_crc = 0;
	c->rx_dcrc = 0;
	/* Big data gets a crc of its own, combined with the front's for the
	 * check, so that whoever forwards it need not compute it again. */
	c->rx_split = !c->rx_sec && h.data_len >= MSG_CRC_SPLIT_MIN;
	c->rx_bpart = 0;
	/* without room for the blocks' crcs the data's crc is still right */
	if (c->rx_split && c->msgr->cfg.block_crcs)
		m->data_bcrc = malloc(h.data_len / MSG_DATA_ALIGN * sizeof(uint32_t));
	c->rx_start_ns = mono_now_ns();
	c->rpos += c->rx_sec ? MSG_SECURE_HDR_LEN : MSG_HEADER_LEN;
	if (c->rx_sec && msg_secure_body_begin(c->rx_sec) < 0) {
		log_error("msgr", "closing connection '%s': the crypto library failed", c->addr);
		msg_conn__fail(c, -EIO);
		return false;
	}
	c->rx_stage = h.front_len || h.data_len ? RX_BODY : RX_TAIL;
	return true;
}

/* A whole, checked frame.  False when c can take no more now. */
static bool conn_rx_deliver(struct msg_conn *c)
{
	struct msgr *mr = c->msgr;
	struct msg *m = c->rx_msg;

	c->rx_msg = NULL;
	rx_lease_end(c);	/* the data is in: the buffer is the caller's again */
	if (c->state == CS_HANDSHAKE)
		return m->type == MSG_T_AUTH ? msg_conn__rx_auth(c, m) : msg_conn__rx_hello(c, m);
	if (m->type == MSG_T_KEEPALIVE) {
		msg_free(m);	/* its arrival was all it had to say */
		return true;
	}
	msg_budget__delivered(c, m);
	if (m->flags & MSG_F_REPLY)
		msg_conn__got_reply(c, m);
	else if (mr->ops.dispatch)
		mr->ops.dispatch(mr->arg, c, m);
	else
		msg_free(m);
	return c->state == CS_OPEN && !atomic_load(&c->dead);
}

/* Parses what rbuf holds.  False when c failed, paused or was closed. */
static bool conn_parse(struct msg_conn *c)
{
	if (c->rx_broken) {
		msg_conn__fail(c, -ENOMEM);
		return false;
	}
	for (;;) {
		size_t avail = c->rlen - c->rpos, need, len;
		enum rx_room room;
		const uint8_t *p;
		uint32_t crc;

		switch (c->rx_stage) {
		case RX_HDR:
			if (avail < (c->rx_sec ? MSG_SECURE_HDR_LEN : MSG_HEADER_LEN))
				return true;
			if (!conn_rx_header(c))
				return false;
			break;
		case RX_BODY:
			if (!avail)
				return true;
			need = c->rx_msg->front_len + (size_t)c->rx_msg->data_len - c->rx_got;
			len = avail < need ? avail : need;
			c->rpos += rx_fill(c, c->rbuf + c->rpos, len, &room);
			if (room == RX_WAIT)
				return false;	/* paused: the rest stays in rbuf */
			if (room == RX_NOMEM) {
				msg_conn__fail(c, -ENOMEM);
				return false;
			}
			break;
		case RX_TAIL:
			if (c->rx_sec) {
				if (avail < MSG_SECURE_TAG_LEN)
					return true;
				if (msg_secure_body_end(c->rx_sec, c->rbuf + c->rpos) < 0) {
					msgr__peer_warn(c, "closing connection '%s': a frame fails its "
							"authentication tag (secure mode: tampered, "
							"replayed, reordered or dropped frames; message "
							"type %u, %u + %u bytes)", c->addr,
							c->rx_hdr.type, c->rx_hdr.front_len,
							c->rx_hdr.data_len);
					msg_conn__fail(c, -EBADMSG);
					return false;
				}
				c->rpos += MSG_SECURE_TAG_LEN;
				c->rx_stage = RX_HDR;
				if (!conn_rx_deliver(c))
					return false;
				break;
			}
			if (avail < MSG_TRAILER_LEN)
				return true;
			p = c->rbuf + c->rpos;
			crc = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			      (uint32_t)p[3] << 24;
			if (c->rx_split) {
				c->rx_msg->data_crc = c->rx_msg->data_bcrc ? rx_data_crc_end(c)
									    : c->rx_dcrc;
				c->rx_msg->data_crc_known = true;
				c->rx_crc = atoll__crc32c_combine(c->rx_crc, c->rx_msg->data_crc,
							       c->rx_msg->data_len);
			}
			if (crc != c->rx_crc) {
				msgr__peer_warn(c, "closing connection '%s': bad payload crc "
						"(message type %u, %u + %u bytes)", c->addr, c->rx_hdr.type,
						c->rx_hdr.front_len, c->rx_hdr.data_len);
				msg_conn__fail(c, -EBADMSG);
				return false;
			}
			c->rpos += MSG_TRAILER_LEN;
			c->rx_stage = RX_HDR;
			if (!conn_rx_deliver(c))
				return false;
			break;
		}
	}
}

static void conn_eof(struct msg_conn *c)
{
	if (c->rx_stage != RX_HDR || c->rlen > c->rpos)
		msgr__peer_warn(c, "closing connection '%s': truncated frame (the peer "
				"closed in the middle of it)", c->addr);
	else
		log_debug("msgr", "connection '%s' closed by the peer", c->addr);
	msg_conn__fail(c, -ECONNRESET);
}

void msg_conn__readable(struct msg_conn *c)
{
	for (int i = 0; i < RX_READS_MAX; i++) {
		struct iovec iov[2];
		size_t direct = 0, want;
		ssize_t r;
		int n = 0;

		if (!conn_parse(c))
			return;
		if (c->rpos == c->rlen) {
			c->rpos = c->rlen = 0;
		} else if (c->rpos) {
			memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
			c->rlen -= c->rpos;
			c->rpos = 0;
		}
		if (c->rx_stage == RX_BODY && c->rlen == 0) {
			enum rx_room room = rx_grow(c);

			if (room == RX_WAIT)
				return;		/* paused until the pool has room */
			if (room == RX_NOMEM) {
				msg_conn__fail(c, -ENOMEM);
				return;
			}
			iov[n].iov_base = rx_target(c, &direct);
			iov[n++].iov_len = direct;
		}
		iov[n].iov_base = c->rbuf + c->rlen;
		iov[n++].iov_len = c->rbuf_size - c->rlen;
		want = direct + c->rbuf_size - c->rlen;
		r = readv(c->fd, iov, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			log_debug("msgr", "connection '%s' failed: %s", c->addr, strerror(errno));
			msg_conn__fail(c, -errno);
			return;
		}
		if (r == 0) {
			conn_eof(c);
			return;
		}
		c->last_rx_ns = mono_now_ns();
		if (direct) {
			size_t k = (size_t)r < direct ? (size_t)r : direct;
			enum rx_room room;

			rx_fill(c, NULL, k, &room);	/* in place already: no growth */
			c->rlen += (size_t)r - k;
		} else {
			c->rlen += (size_t)r;
		}
		if ((size_t)r < want)
			break;		/* drained: epoll tells us when there is more */
	}
	conn_parse(c);
}

/* The socket went (conn_drop_socket): the frame being received and
 * what rbuf held are dropped, the lease given back, reading unpaused. */
void msg_conn__rx_reset(struct msg_conn *c)
{
	rx_lease_end(c);
	c->rx_broken = false;
	msg_free(c->rx_msg);	/* its budget goes back */
	c->rx_msg = NULL;
	msg_secure_free(c->rx_sec);	/* the keys were that socket's */
	c->rx_sec = NULL;
	c->rx_stage = RX_HDR;
	c->rpos = c->rlen = 0;
	atomic_store(&c->rx_paused, false);
}
