/*
 * msg_conn.c - one messenger connection, on the loop thread: dialling,
 * the hello handshake, framed reads and writes, and the calls waiting
 * for replies.
 *
 * The states and the events each accepts are listed in msgr_int.h; every
 * failure goes through conn_fail(), which either resets a dialled
 * connection for a redial (BACKOFF) or closes it for good (CLOSED).
 *
 * Sending: messages accepted from the outq wait in sq (in order); one
 * sendmsg() takes as many of them as fit in IOV_BATCH iovecs, pointing at
 * each message's own header, front, data and crc, so data is never
 * copied.  When the socket is full we wait for EPOLLOUT.  Another thread
 * may write a reply itself while the connection is idle (send_direct,
 * under wlock, which the loop holds while it writes); what it could not
 * write whole waits in tx_part and goes first.
 *
 * Replies of msg_call_rx are received into the caller's buffer, leased
 * at the header (rx_lease_begin) and given back when the frame ends, is
 * dropped, or the lease is revoked (msg_conn_rx_revoke).  Big data gets
 * a crc of its own (rx_dcrc, then msg.data_crc) combined with the
 * front's for the check.
 *
 * Receiving: small frames are read many at a time into rbuf and parsed
 * from there; once a frame's header is in, its front and data get their
 * own buffers (data is one malloc of data_len that the upper layer may
 * keep), and the rest of a big payload is read straight into them with
 * readv() (the tail of the iovec still catches whatever follows into
 * rbuf).  Before each new frame the connection's unfreed received bytes
 * are compared with inflight_max: above it, reading pauses (EPOLLIN off)
 * until msg_free() kicks us, so at most inflight_max + one frame is held.
 */
#include <errno.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "atoll_assert.h"
#include "crc32c.h"
#include "encode.h"
#include "log.h"
#include "mono.h"
#include "msgr_int.h"

#define container_of(p, type, member) \
	((type *)(void *)((char *)(p) - offsetof(type, member)))

#define IOV_BATCH	128	/* iovecs per sendmsg: 32 small frames */
#define TX_SENDS_MAX	16	/* sendmsg calls per flush, for fairness */
#define RX_READS_MAX	16	/* reads per readable event, for fairness */
#define MSG_DATA_ALIGN	4096u	/* received data of whole 4 KiB blocks is aligned */
#define MSG_CRC_SPLIT_MIN (64u * 1024)	/* data this big gets its own crc */

static void conn_fail(struct msg_conn *c, int err);
static void conn_flush(struct msg_conn *c);
static void conn_readable(struct msg_conn *c);

static size_t frame_len(const struct msg *m)
{
	return MSG_HEADER_LEN + (size_t)m->front_len + m->data_len + MSG_TRAILER_LEN;
}

static bool fsid_zero(const uint8_t fsid[16])
{
	for (int i = 0; i < 16; i++)
		if (fsid[i])
			return false;
	return true;
}

static void fsid_str(const uint8_t fsid[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", fsid[i]);
}

/* ---- lifetime ---- */

static void conn_hs_timeout(struct msgr *m, struct mtimer *t);
static void conn_redial(struct msgr *m, struct mtimer *t);

struct msg_conn *msg_conn__alloc(struct msgr *m, bool dialled)
{
	struct msg_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ep.kind = EP_CONN;
	c->msgr = m;
	atomic_init(&c->ref, 1);
	atomic_init(&c->uref, 0);
	atomic_init(&c->open, false);
	atomic_init(&c->dead, false);
	atomic_init(&c->epoch, 0);
	atomic_init(&c->ordered, false);
	atomic_init(&c->inflight, 0);
	atomic_init(&c->rx_paused, false);
	atomic_init(&c->queued, 0);
	atomic_init(&c->calls_out, 0);
	c->dialled = dialled;
	c->frame_max = m->cfg.frame_max;
	c->inflight_max = m->cfg.inflight_max;
	pthread_mutex_init(&c->plock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	c->outq_tailp = &c->outq_head;
	c->state = dialled ? CS_NEW : CS_HANDSHAKE;
	c->fd = -1;
	tnode_init(&c->hs_timer.n);
	c->hs_timer.fire = conn_hs_timeout;
	tnode_init(&c->redial_timer.n);
	c->redial_timer.fire = conn_redial;
	c->backoff_ms = m->cfg.reconnect_min_ms;
	snprintf(c->addr, sizeof(c->addr), "?");
	return c;
}

void msg_conn__hold(struct msg_conn *c)
{
	atomic_fetch_add(&c->ref, 1);
}

/* The last reference may go on any thread, after the connection closed
 * (the messenger's own reference lasts until then): nothing here may
 * touch the messenger, which may be gone. */
static void conn_free(struct msg_conn *c)
{
	ATOLL_ASSERT(c->fd < 0 && !c->sq_head && !c->outq_head && !c->calls,
		     "connection '%s' freed while still in use", c->addr);
	free(c->rbuf);
	free(c->hs_buf);
	pthread_mutex_destroy(&c->plock);
	pthread_mutex_destroy(&c->wlock);
	free(c);
}

void msg_conn__drop(struct msg_conn *c)
{
	int prev = atomic_fetch_sub(&c->ref, 1);

	ATOLL_ASSERT(prev > 0, "connection '%s' reference count below zero", c->addr);
	if (prev == 1)
		conn_free(c);
}

/* ---- epoll registration ---- */

static uint32_t conn_want(const struct msg_conn *c)
{
	if (c->state == CS_CONNECTING)
		return EPOLLOUT;
	return (atomic_load(&c->rx_paused) ? 0 : EPOLLIN) | (c->wr_blocked ? EPOLLOUT : 0);
}

static void conn_update_events(struct msg_conn *c)
{
	struct epoll_event ev = { .events = conn_want(c), .data.ptr = &c->ep };

	if (c->fd < 0 || ev.events == c->ev_mask)
		return;
	if (epoll_ctl(c->msgr->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
		log_error("msgr", "cannot watch connection '%s': %s", c->addr, strerror(errno));
		return;
	}
	c->ev_mask = ev.events;
}

static int conn_attach_fd(struct msg_conn *c, int fd)
{
	struct epoll_event ev = { .data.ptr = &c->ep };
	int one = 1;

	/* Requests are small and latency-bound; our writes are already
	 * batched, so Nagle would only add delay. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->fd = fd;
	ev.events = conn_want(c);
	if (epoll_ctl(c->msgr->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		c->fd = -1;
		return -errno;
	}
	c->ev_mask = ev.events;
	return 0;
}

/* ---- the send queue ---- */

static void sq_append(struct msg_conn *c, struct msg *m)
{
	m->q_next = NULL;
	m->q_prev = c->sq_tail;
	if (c->sq_tail)
		c->sq_tail->q_next = m;
	else
		c->sq_head = m;
	c->sq_tail = m;
}

static void sq_unlink(struct msg_conn *c, struct msg *m)
{
	if (m->q_prev)
		m->q_prev->q_next = m->q_next;
	else
		c->sq_head = m->q_next;
	if (m->q_next)
		m->q_next->q_prev = m->q_prev;
	else
		c->sq_tail = m->q_prev;
	m->q_next = m->q_prev = NULL;
}

/* A frame a direct sender wrote in part goes first in sq, its written
 * part accounted (wlock held, and sq had nothing before it). */
static void conn_take_part(struct msg_conn *c)
{
	struct msg *m = c->tx_part;

	if (!m)
		return;
	c->tx_part = NULL;
	m->q_prev = NULL;
	m->q_next = c->sq_head;
	if (c->sq_head)
		c->sq_head->q_prev = m;
	else
		c->sq_tail = m;
	c->sq_head = m;
	c->wr_off = c->tx_part_off;
}

/* A message leaves the queue unsent (dropped). */
static void sq_drop(struct msg_conn *c, struct msg *m)
{
	sq_unlink(c, m);
	atomic_fetch_sub(&c->queued, frame_len(m));
	msg_free(m);
}

static struct msg *outq_take(struct msg_conn *c)
{
	struct msgr *mr = c->msgr;
	struct msg *head;

	pthread_mutex_lock(&mr->lock);
	head = c->outq_head;
	c->outq_head = NULL;
	c->outq_tailp = &c->outq_head;
	pthread_mutex_unlock(&mr->lock);
	return head;
}

/* ---- calls ---- */

static void call_unlink(struct msgr *mr, struct msgr_call *call)
{
	struct msg_conn *c = call->conn;

	idtab_del(&mr->calls, &call->h);
	if (call->prev)
		call->prev->next = call->next;
	else
		c->calls = call->next;
	if (call->next)
		call->next->prev = call->prev;
	call->prev = call->next = NULL;
	msgr__disarm(mr, &call->timer);
}

/* The call a reply answers: one its caller wrote itself may have been
 * written after the loop's last look at msgr->direct, and answered
 * since (its reply read in the same pass): a miss looks there too. */
static struct msgr_call *call_find(struct msgr *mr, uint64_t tid)
{
	struct idnode *n = idtab_find(&mr->calls, tid);

	if (!n && atomic_load(&mr->direct_any)) {
		msg_conn__take_direct(mr);
		n = idtab_find(&mr->calls, tid);
	}
	return n ? container_of(n, struct msgr_call, h) : NULL;
}

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
	struct msgr_call *call = call_find(c->msgr, h->tid);
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
	} else {
		/* the frame cannot be finished: the next read fails c */
		log_error("msgr", "connection '%s' fails: cannot allocate %u bytes", c->addr,
			  m->data_len);
		c->rx_broken = true;
	}
	m->data = copy;
	rx_lease_end(c);
}

/* Ends a registered call with err: its request is dropped if it has not
 * started to leave (a partly written frame must be finished). */
static void call_abort(struct msgr_call *call, int err)
{
	struct msg_conn *c = call->conn;
	struct msg *m = call->msg;

	call_unlink(c->msgr, call);
	/* its reply is being received into the caller's buffer: no more */
	if (call->rx && c->rx_lease && c->rx_lease_arg == call->rx_arg)
		msg_conn_rx_revoke(c);
	if (m) {
		m->call = NULL;
		call->msg = NULL;
		if (m != c->sq_head || c->wr_off == 0)
			sq_drop(c, m);
	}
	atomic_fetch_sub(&c->calls_out, 1);
	call->fn(call->arg, NULL, err);
	free(call);
}

static void call_timeout(struct msgr *mr, struct mtimer *t)
{
	msg_conn__take_direct(mr);	/* it may be a direct call's */
	call_abort(container_of(t, struct msgr_call, timer), -ETIMEDOUT);
}

static void call_register(struct msg_conn *c, struct msgr_call *call)
{
	struct msgr *mr = c->msgr;

	idtab_add(&mr->calls, &call->h);
	call->prev = NULL;
	call->next = c->calls;
	if (c->calls)
		c->calls->prev = call;
	c->calls = call;
	call->timer.fire = call_timeout;
	if (call->deadline && !call->armed && msgr__arm(mr, &call->timer, call->deadline) < 0) {
		log_error("msgr", "cannot arm the timeout of a call on '%s': out of memory",
			  c->addr);
		call_abort(call, -ENOMEM);
	}
}

/* Takes the calls of c that were sent (all of them when all is set) off
 * c, onto a list for calls_fail: detached first, because the callbacks
 * may queue new calls on c. */
static struct msgr_call *conn_detach_calls(struct msg_conn *c, bool all)
{
	struct msgr_call *call, *next, *done = NULL;

	msg_conn__take_direct(c->msgr);	/* calls written by their callers */

	for (call = c->calls; call; call = next) {
		next = call->next;
		if (!all && !call->sent)
			continue;
		call_unlink(c->msgr, call);
		if (call->msg) {
			call->msg->call = NULL;
			call->msg = NULL;
		}
		call->next = done;
		done = call;
	}
	return done;
}

static void calls_fail(struct msgr_call *done, int err)
{
	struct msgr_call *call;

	while ((call = done)) {
		done = call->next;
		atomic_fetch_sub(&call->conn->calls_out, 1);
		call->fn(call->arg, NULL, err);
		free(call);
	}
}

/* Fails the calls of c that were sent (all of them when all is set). */
static void conn_fail_calls(struct msg_conn *c, bool all, int err)
{
	calls_fail(conn_detach_calls(c, all), err);
}

/* Drops what c had not written, the requests that never reached the loop
 * (outq: not registered anywhere) included; the calls among them go onto
 * *calls, for calls_fail.  ordered: the epoch moves on in the same hold
 * of the messenger's lock (msg_conn__submit's check). */
static void conn_drop_unsent(struct msg_conn *c, bool ordered, struct msgr_call **calls)
{
	struct msgr *mr = c->msgr;
	struct msg *m, *next;

	while (c->sq_head)
		sq_drop(c, c->sq_head);
	pthread_mutex_lock(&mr->lock);
	if (ordered)
		atomic_fetch_add(&c->epoch, 1);
	m = c->outq_head;
	c->outq_head = NULL;
	c->outq_tailp = &c->outq_head;
	pthread_mutex_unlock(&mr->lock);
	for (; m; m = next) {
		struct msgr_call *call = m->call;

		next = m->q_next;
		atomic_fetch_sub(&c->queued, frame_len(m));
		m->call = NULL;
		msg_free(m);
		if (call) {
			call->next = *calls;
			*calls = call;
		}
	}
}

static void conn_got_reply(struct msg_conn *c, struct msg *m)
{
	struct msgr *mr = c->msgr;
	struct msgr_call *call = call_find(mr, m->tid);

	if (!call || call->conn != c || !call->sent) {
		log_debug("msgr", "dropping a reply from '%s' with unknown tid %llu",
			  c->addr, (unsigned long long)m->tid);
		msg_free(m);
		return;
	}
	call_unlink(mr, call);
	atomic_fetch_sub(&c->calls_out, 1);
	call->fn(call->arg, m, 0);
	free(call);
}

/* Moves what other threads queued into sq, registering its calls. */
static void conn_take_outq(struct msg_conn *c)
{
	struct msg *m, *next;

	/* What a direct sender left unfinished goes first; and from now on
	 * sq has messages, so direct senders must queue behind them. */
	pthread_mutex_lock(&c->wlock);
	m = outq_take(c);
	if (m)
		c->tx_idle = false;
	conn_take_part(c);
	pthread_mutex_unlock(&c->wlock);
	for (; m; m = next) {
		next = m->q_next;
		sq_append(c, m);
		if (m->call)
			call_register(c, m->call);
	}
}

/* ---- closing ---- */

/* Whether the upper layer hears of c ending now (ops.closed): an open
 * connection, or a dialled one's attempt (so that a refused or silent
 * peer is reported at once).  An accepted connection that never finished
 * its handshake was never seen by the upper layer. */
static bool conn_reports_close(const struct msg_conn *c)
{
	return c->state == CS_OPEN ||
	       (c->dialled && (c->state == CS_CONNECTING || c->state == CS_HANDSHAKE));
}

static void conn_drop_socket(struct msg_conn *c)
{
	struct msgr *mr = c->msgr;

	pthread_mutex_lock(&c->wlock);
	c->tx_idle = false;
	conn_take_part(c);
	/* a direct call's request, partly written: its call counts as sent
	 * and fails with the others (msg_conn__call_direct) */
	if (c->sq_head && c->sq_head->call_direct)
		sq_drop(c, c->sq_head);
	if (c->fd >= 0)
		close(c->fd);	/* also leaves the epoll set */
	c->fd = -1;
	pthread_mutex_unlock(&c->wlock);
	c->ev_mask = 0;
	c->wr_blocked = false;
	msgr__disarm(mr, &c->hs_timer);
	free(c->hs_buf);
	c->hs_buf = NULL;
	c->hs_len = c->hs_off = 0;
	/* A partly written frame goes again, whole, on the next connection
	 * (the peer discards the piece it got). */
	c->wr_off = 0;
	rx_lease_end(c);
	c->rx_broken = false;
	msg_free(c->rx_msg);	/* not charged: ->conn is not set yet */
	c->rx_msg = NULL;
	c->rx_stage = RX_HDR;
	c->rpos = c->rlen = 0;
	atomic_store(&c->rx_paused, false);
	atomic_store(&c->open, false);
}

void msg_conn__close(struct msg_conn *c, int err, int call_err)
{
	struct msgr *mr = c->msgr;
	bool report;

	if (c->state == CS_CLOSED)
		return;
	pthread_mutex_lock(&mr->lock);
	atomic_store(&c->dead, true);	/* from now on msg_send refuses */
	pthread_mutex_unlock(&mr->lock);
	report = conn_reports_close(c);
	conn_drop_socket(c);
	msgr__disarm(mr, &c->redial_timer);
	c->state = CS_CLOSED;
	log_debug("msgr", "connection '%s' closed for good (%s)", c->addr, strerror(-err));

	struct msgr_call *calls = conn_detach_calls(c, true);
	conn_drop_unsent(c, false, &calls);
	calls_fail(calls, call_err);
	free(c->rbuf);
	c->rbuf = NULL;
	if (report && mr->ops.closed)
		mr->ops.closed(mr->arg, c, err);
	msgr__bury(c);
}

/* A dialled connection failed: drop the socket, fail what was sent,
 * keep what was not, and redial after the backoff delay. */
static void conn_reset(struct msg_conn *c, int err)
{
	struct msgr *mr = c->msgr;
	bool report = conn_reports_close(c);
	uint32_t delay = c->backoff_ms;

	conn_drop_socket(c);
	c->state = CS_BACKOFF;
	if (atomic_load(&c->ordered)) {
		/* nothing of the old epoch goes on the next connection, and
		 * the upper layer hears of the break before any call fails
		 * (msg_conn_set_ordered) */
		struct msgr_call *calls = conn_detach_calls(c, true);
		conn_drop_unsent(c, true, &calls);
		if (report && mr->ops.closed)
			mr->ops.closed(mr->arg, c, err);
		calls_fail(calls, -ECONNRESET);
	} else {
		conn_fail_calls(c, false, -ECONNRESET);
		if (report && mr->ops.closed)
			mr->ops.closed(mr->arg, c, err);
	}
	if (c->state != CS_BACKOFF)
		return;
	c->backoff_ms = delay > mr->cfg.reconnect_max_ms / 2 ? mr->cfg.reconnect_max_ms
							       : delay * 2;
	if (msgr__arm(mr, &c->redial_timer, mono_now_ns() + (uint64_t)delay * 1000000u) < 0) {
		log_error("msgr", "cannot schedule a redial of '%s': out of memory", c->addr);
		msg_conn__close(c, -ENOMEM, -ECONNRESET);
	}
}

static void conn_fail(struct msg_conn *c, int err)
{
	if (c->state == CS_CLOSED)
		return;
	if (c->dialled && atomic_load(&c->uref) > 0 && !atomic_load(&c->dead) &&
	    !c->msgr->shutting_down)
		conn_reset(c, err);
	else
		msg_conn__close(c, err, -ECONNRESET);
}

/* ---- handshake ---- */

static int conn_make_hello(struct msg_conn *c)
{
	struct msgr *mr = c->msgr;
	struct msg_hello h = { .who = mr->cfg.me, .features = mr->cfg.features };
	struct enc e;
	size_t len;

	pthread_mutex_lock(&mr->lock);
	memcpy(h.fsid, mr->fsid, sizeof(h.fsid));
	pthread_mutex_unlock(&mr->lock);
	enc_init(&e);
	msg_hello_frame(&e, &h);
	free(c->hs_buf);
	c->hs_buf = enc_take(&e, &len);
	if (!c->hs_buf) {
		enc_free(&e);
		return -ENOMEM;
	}
	c->hs_len = len;
	c->hs_off = 0;
	return 0;
}

static void conn_hs_timeout(struct msgr *mr, struct mtimer *t)
{
	struct msg_conn *c = container_of(t, struct msg_conn, hs_timer);

	if (c->state != CS_CONNECTING && c->state != CS_HANDSHAKE)
		return;
	if (c->dialled)
		log_info("msgr", "cannot connect to '%s': no handshake within %u ms",
			 c->addr, mr->cfg.handshake_timeout_ms);
	else
		log_warn("msgr", "closing connection '%s': no hello within %u ms",
			 c->addr, mr->cfg.handshake_timeout_ms);
	conn_fail(c, -ETIMEDOUT);
}

static int conn_arm_handshake(struct msg_conn *c)
{
	struct msgr *mr = c->msgr;

	return msgr__arm(mr, &c->hs_timer, mono_now_ns() +
			 (uint64_t)mr->cfg.handshake_timeout_ms * 1000000u);
}

/* The peer's hello arrived (msg is ours to free).  False when c failed. */
static bool conn_rx_hello(struct msg_conn *c, struct msg *msg)
{
	struct msgr *mr = c->msgr;
	struct msg_hello h;
	uint8_t ours[16];
	bool mismatch = false;
	int r;

	r = msg->data_len ? -EBADMSG : msg_hello_decode(msg->front, msg->front_len, &h);
	if (r < 0) {
		log_warn("msgr", "closing connection '%s': malformed hello (%s)",
			 c->addr, strerror(-r));
		msg_free(msg);
		conn_fail(c, r);
		return false;
	}
	pthread_mutex_lock(&mr->lock);
	memcpy(ours, mr->fsid, sizeof(ours));
	if (!fsid_zero(h.fsid) && !fsid_zero(ours) && memcmp(h.fsid, ours, sizeof(ours)))
		mismatch = true;
	else if (c->dialled && fsid_zero(ours) && !fsid_zero(h.fsid))
		memcpy(mr->fsid, h.fsid, sizeof(mr->fsid));	/* learnt */
	pthread_mutex_unlock(&mr->lock);
	if (mismatch) {
		char theirs_s[33], ours_s[33];

		fsid_str(h.fsid, theirs_s);
		fsid_str(ours, ours_s);
		log_warn("msgr", "closing connection '%s': it belongs to cluster fsid %s, "
			 "ours is %s; check the peer's configuration", c->addr, theirs_s, ours_s);
		msg_free(msg);
		conn_fail(c, -EACCES);
		return false;
	}
	pthread_mutex_lock(&c->plock);
	c->peer = h.who;
	c->peer_features = h.features;
	pthread_mutex_unlock(&c->plock);
	msg_free(msg);	/* h.auth pointed into it; not used yet */

	if (!c->dialled && conn_make_hello(c) < 0) {
		log_error("msgr", "closing connection '%s': out of memory", c->addr);
		conn_fail(c, -ENOMEM);
		return false;
	}
	msgr__disarm(mr, &c->hs_timer);
	c->last_rx_ns = mono_now_ns();
	c->state = CS_OPEN;
	atomic_store(&c->open, true);
	c->backoff_ms = mr->cfg.reconnect_min_ms;
	log_debug("msgr", "connection '%s' open (peer type %u id %llu)", c->addr,
		  h.who.type, (unsigned long long)h.who.id);
	if (mr->ops.connected)
		mr->ops.connected(mr->arg, c);
	if (c->state != CS_OPEN)
		return false;
	conn_flush(c);
	return c->state == CS_OPEN && !atomic_load(&c->dead);
}

/* ---- dialling ---- */

static void conn_tcp_up(struct msg_conn *c)
{
	c->state = CS_HANDSHAKE;
	if (conn_make_hello(c) < 0) {
		conn_fail(c, -ENOMEM);
		return;
	}
	conn_update_events(c);
	conn_flush(c);
}

static void conn_dial(struct msg_conn *c)
{
	int fd, r, err;

	if (!c->rbuf) {
		c->rbuf = malloc(MSG_RBUF_SIZE);
		if (!c->rbuf) {
			c->state = CS_CONNECTING;
			conn_fail(c, -ENOMEM);
			return;
		}
	}
	fd = socket(c->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		log_warn("msgr", "cannot connect to '%s': %s", c->addr, strerror(-err));
		c->state = CS_CONNECTING;
		conn_fail(c, err);
		return;
	}
	r = connect(fd, (struct sockaddr *)&c->sa, c->salen);
	err = r < 0 ? -errno : 0;
	c->state = CS_CONNECTING;
	if (err && err != -EINPROGRESS) {
		close(fd);
		log_debug("msgr", "cannot connect to '%s': %s", c->addr, strerror(-err));
		conn_fail(c, err);
		return;
	}
	err = conn_attach_fd(c, fd);
	if (!err)
		err = conn_arm_handshake(c);
	if (err) {
		if (c->fd < 0)
			close(fd);
		log_error("msgr", "cannot connect to '%s': %s", c->addr, strerror(-err));
		conn_fail(c, err);
		return;
	}
	if (r == 0)
		conn_tcp_up(c);
}

static void conn_connect_done(struct msg_conn *c)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		log_debug("msgr", "cannot connect to '%s': %s", c->addr, strerror(err));
		conn_fail(c, -err);
		return;
	}
	conn_tcp_up(c);
}

static void conn_redial(struct msgr *mr, struct mtimer *t)
{
	struct msg_conn *c = container_of(t, struct msg_conn, redial_timer);

	if (c->state == CS_BACKOFF)
		conn_dial(c);
}

void msg_conn__accepted(struct msgr *mr, int fd, const struct sockaddr *sa,
			socklen_t salen)
{
	struct msg_conn *c = msg_conn__alloc(mr, false);
	int err = -ENOMEM;

	if (!c || !(c->rbuf = malloc(MSG_RBUF_SIZE)))
		goto out_drop_c;
	if ((size_t)salen > sizeof(c->sa))
		salen = sizeof(c->sa);
	memcpy(&c->sa, sa, salen);
	c->salen = salen;
	msgr__format_addr(sa, c->addr, sizeof(c->addr));
	err = conn_attach_fd(c, fd);
	if (err)
		goto out_drop_c;
	err = conn_arm_handshake(c);
	if (err)
		goto out_drop_c;
	pthread_mutex_lock(&mr->lock);
	c->all_next = mr->all;
	if (mr->all)
		mr->all->all_prev = c;
	mr->all = c;
	pthread_mutex_unlock(&mr->lock);
	log_debug("msgr", "accepted connection '%s'", c->addr);
	return;

out_drop_c:
	log_error("msgr", "cannot accept a connection: %s", strerror(-err));
	close(fd);		/* also leaves the epoll set */
	if (c) {
		c->fd = -1;
		msg_conn__drop(c);
	}
}

/* ---- writing ---- */

static int add_iov(struct iovec *iov, int n, const void *p, size_t len,
		   size_t *skip, size_t *total)
{
	if (*skip >= len) {
		*skip -= len;
		return n;
	}
	iov[n].iov_base = (char *)p + *skip;
	iov[n].iov_len = len - *skip;
	*total += len - *skip;
	*skip = 0;
	return n + 1;
}

/* ---- fault injection (msgr_config inject_*, tests only) ---- */

/* The loop thread's own xorshift: true permille times in a thousand. */
static bool inject_hit(uint32_t permille)
{
	static __thread uint64_t x;

	if (!permille)
		return false;
	if (!x)
		x = ((uint64_t)(uintptr_t)&x << 16) ^ (uint64_t)getpid() ^ 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x % 1000 < permille;
}

/* The connection to reset once the bytes just written are accounted. */
static __thread struct msg_conn *inject_reset_conn;

/* Queues a copy of the written request m (same frame, same tid) behind
 * the others.  The copy owns its bytes: the caller's data may be gone
 * by the time it is written. */
static void conn_inject_dup(struct msg_conn *c, const struct msg *m)
{
	struct msg *d = calloc(1, sizeof(*d));

	if (!d)
		return;
	d->type = m->type;
	d->flags = m->flags;
	d->tid = m->tid;
	if (m->front_len) {
		d->front = malloc(m->front_len);
		if (!d->front)
			goto fail;
		memcpy(d->front, m->front, m->front_len);
		d->front_len = m->front_len;
	}
	if (m->data_len && msg_set_data(d, m->data, m->data_len) < 0)
		goto fail;
	memcpy(d->wire_hdr, m->wire_hdr, sizeof(d->wire_hdr));
	memcpy(d->wire_tail, m->wire_tail, sizeof(d->wire_tail));
	sq_append(c, d);
	atomic_fetch_add(&c->queued, frame_len(d));
	return;
fail:
	msg_free(d);
}

/* A written message: a call now waits for its reply. */
static void conn_sent(struct msg_conn *c, struct msg *m)
{
	atomic_fetch_sub(&c->queued, frame_len(m));
	if (m->call && inject_hit(c->msgr->cfg.inject_dup_permille))
		conn_inject_dup(c, m);
	if (m->call && inject_hit(c->msgr->cfg.inject_reset_permille))
		inject_reset_conn = c;
	if (m->call) {
		m->call->sent = true;
		m->call->msg = NULL;
		m->call = NULL;
	}
	msg_free(m);
}

static void conn_consume(struct msg_conn *c, size_t w)
{
	if (c->hs_buf) {
		size_t k = c->hs_len - c->hs_off < w ? c->hs_len - c->hs_off : w;

		c->hs_off += k;
		w -= k;
		if (c->hs_off == c->hs_len) {
			free(c->hs_buf);
			c->hs_buf = NULL;
			c->hs_len = c->hs_off = 0;
		}
	}
	while (w) {
		struct msg *m = c->sq_head;
		size_t left = frame_len(m) - c->wr_off;

		if (w < left) {
			c->wr_off += w;
			break;
		}
		w -= left;
		c->wr_off = 0;
		sq_unlink(c, m);
		conn_sent(c, m);
	}
}

/* Writes what sq holds (wlock held); a negative errno when c failed. */
static int conn_flush_locked(struct msg_conn *c)
{
	if (c->fd < 0 || c->wr_blocked ||
	    (c->state != CS_HANDSHAKE && c->state != CS_OPEN))
		return 0;
	for (int sends = 0;; sends++) {
		struct iovec iov[IOV_BATCH];
		struct msghdr mh = { .msg_iov = iov };
		size_t total = 0, skip = 0;
		struct msg *m;
		ssize_t w;
		int n = 0;

		if (c->hs_buf) {
			skip = c->hs_off;
			n = add_iov(iov, n, c->hs_buf, c->hs_len, &skip, &total);
		}
		if (c->state == CS_OPEN) {
			skip = c->wr_off;
			for (m = c->sq_head; m && n + 4 <= IOV_BATCH; m = m->q_next) {
				n = add_iov(iov, n, m->wire_hdr, MSG_HEADER_LEN, &skip, &total);
				if (m->front_len)
					n = add_iov(iov, n, m->front, m->front_len, &skip, &total);
				if (m->data_len)
					n = add_iov(iov, n, m->data, m->data_len, &skip, &total);
				n = add_iov(iov, n, m->wire_tail, MSG_TRAILER_LEN, &skip, &total);
			}
		}
		if (!n)
			break;
		if (sends == TX_SENDS_MAX) {
			/* Let the other connections have the loop: go on in
			 * the next pass. */
			msgr__kick(c, KICK_SEND);
			break;
		}
		mh.msg_iovlen = (size_t)n;
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				c->wr_blocked = true;
				break;
			}
			log_debug("msgr", "connection '%s' failed: %s", c->addr, strerror(errno));
			return -errno;
		}
		conn_consume(c, (size_t)w);
		if (inject_reset_conn == c) {
			inject_reset_conn = NULL;
			log_debug("msgr", "injected reset of connection '%s'", c->addr);
			return -ECONNRESET;
		}
		if ((size_t)w < total) {
			c->wr_blocked = true;	/* EPOLLOUT says when there is room */
			break;
		}
	}
	conn_update_events(c);
	return 0;
}

static void conn_flush(struct msg_conn *c)
{
	int err;

	pthread_mutex_lock(&c->wlock);
	conn_take_part(c);
	err = conn_flush_locked(c);
	c->tx_idle = !err && c->state == CS_OPEN && c->fd >= 0 && !c->sq_head &&
		     !c->hs_buf && !c->wr_blocked;
	pthread_mutex_unlock(&c->wlock);
	if (err)
		conn_fail(c, err);
}

/* Writes m on the caller's thread (c idle, wlock held; unlocks it).
 * What the socket does not take is the loop's, first in line. */
static void direct_write(struct msg_conn *c, struct msg *m)
{
	struct iovec iov[4];
	struct msghdr mh = { .msg_iov = iov };
	size_t total = 0, skip = 0, len = frame_len(m);
	ssize_t w;
	int n = 0;

	n = add_iov(iov, n, m->wire_hdr, MSG_HEADER_LEN, &skip, &total);
	if (m->front_len)
		n = add_iov(iov, n, m->front, m->front_len, &skip, &total);
	if (m->data_len)
		n = add_iov(iov, n, m->data, m->data_len, &skip, &total);
	n = add_iov(iov, n, m->wire_tail, MSG_TRAILER_LEN, &skip, &total);
	mh.msg_iovlen = (size_t)n;
	do
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (w < 0 && errno == EINTR);
	if ((size_t)w == len) {
		pthread_mutex_unlock(&c->wlock);
		msg_free(m);
		return;
	}
	/* The rest (all of it after an error: the loop meets the error
	 * itself) is the loop's, first in line. */
	c->tx_part = m;
	c->tx_part_off = w > 0 ? (size_t)w : 0;
	c->tx_idle = false;
	atomic_fetch_add(&c->queued, len);
	pthread_mutex_unlock(&c->wlock);
	msgr__kick(c, KICK_SEND);
}

/* A direct send (msg_conn__submit, any thread but the loop's): m goes
 * out on the caller's thread when c is idle, open and nothing is queued
 * before it.  True when m was taken (written whole and freed, or
 * written in part and left to the loop). */
bool msg_conn__send_direct(struct msg_conn *c, struct msg *m)
{
	bool idle;

	pthread_mutex_lock(&c->wlock);
	pthread_mutex_lock(&c->msgr->lock);
	idle = c->tx_idle && !c->outq_head && !atomic_load(&c->dead);
	pthread_mutex_unlock(&c->msgr->lock);
	if (!idle) {
		pthread_mutex_unlock(&c->wlock);
		return false;
	}
	direct_write(c, m);
	return true;
}

/* A call written by its caller's thread, which saves the loop's wake-up
 * per request (a FUSE thread's MDS call, an application's object op).
 * The call is complete (sent, its request no longer its own) before it
 * is handed to the loop, and its caller never touches it again: the
 * reply may end it (on the loop) as soon as the bytes are out.  The loop
 * registers it after each epoll_wait, when a reply's tid is not known
 * (call_find: the reply may come in the pass that began before the call
 * was written), before it fails a connection's calls, and before it
 * fires a call's timeout (armed here, so that it holds while the loop
 * sleeps).  A request the socket took only in part counts as sent: after
 * a reset its rest is dropped rather than resent (the peer discards a
 * partial frame), and the call fails like any sent call. */
int msg_conn__call_direct(struct msg_conn *c, struct msg *m, struct msgr_call *call)
{
	struct msgr *mr = c->msgr;
	bool idle;

	pthread_mutex_lock(&c->wlock);
	pthread_mutex_lock(&mr->lock);
	idle = c->tx_idle && !c->outq_head && !atomic_load(&c->dead);
	if (idle && call->for_epoch && call->epoch != atomic_load(&c->epoch)) {
		pthread_mutex_unlock(&mr->lock);
		pthread_mutex_unlock(&c->wlock);
		return -ECONNRESET;	/* made for a connection that broke */
	}
	if (idle) {
		call->sent = true;
		call->msg = NULL;
		call->dnext = NULL;
		*mr->direct_tailp = call;
		mr->direct_tailp = &call->dnext;
		atomic_store(&mr->direct_any, true);
		/* armed here, after it is in the list (its timeout registers
		 * it first), so that its deadline holds while the loop sleeps */
		call->timer.fire = call_timeout;
		call->armed = call->deadline && msgr__arm(mr, &call->timer, call->deadline) == 0;
	}
	pthread_mutex_unlock(&mr->lock);
	if (!idle) {
		pthread_mutex_unlock(&c->wlock);
		return 0;
	}
	m->call = NULL;
	m->call_direct = true;
	direct_write(c, m);
	return 1;
}

void msg_conn__take_direct(struct msgr *mr)
{
	struct msgr_call *call, *next;

	if (!atomic_load(&mr->direct_any))
		return;
	pthread_mutex_lock(&mr->lock);
	call = mr->direct_head;
	mr->direct_head = NULL;
	mr->direct_tailp = &mr->direct_head;
	atomic_store(&mr->direct_any, false);
	pthread_mutex_unlock(&mr->lock);
	for (; call; call = next) {
		next = call->dnext;
		call->dnext = NULL;
		call_register(call->conn, call);
	}
}

/* ---- reading ---- */

/* Before each frame: pause reading above inflight_max.  The store of
 * rx_paused then load of inflight pairs with msg_free's update of
 * inflight then load of rx_paused (both sequentially consistent): either
 * msg_free sees the pause and kicks, or we see its update here. */
static bool conn_rx_budget(struct msg_conn *c)
{
	if (atomic_load(&c->inflight) <= c->inflight_max)
		return true;
	atomic_store(&c->rx_paused, true);
	if (atomic_load(&c->inflight) <= c->inflight_max) {
		atomic_store(&c->rx_paused, false);
		return true;
	}
	conn_update_events(c);
	return false;
}

static void conn_resume(struct msg_conn *c)
{
	if (!atomic_load(&c->rx_paused) || atomic_load(&c->inflight) > c->inflight_max)
		return;
	atomic_store(&c->rx_paused, false);
	conn_update_events(c);
	conn_readable(c);
}

/* Where the body's next bytes go: the rest of the front or of the data. */

static uint8_t *rx_target(struct msg_conn *c, size_t *len)
{
	struct msg *m = c->rx_msg;

	if (c->rx_got < m->front_len) {
		*len = m->front_len - c->rx_got;
		return (uint8_t *)m->front + c->rx_got;
	}
	*len = m->front_len + (size_t)m->data_len - c->rx_got;
	return (uint8_t *)m->data + (c->rx_got - m->front_len);
}

/* k more body bytes: copied from src, or (src NULL) already read into
 * rx_target() by readv. */
static void rx_fill(struct msg_conn *c, const uint8_t *src, size_t k)
{
	while (k) {
		size_t len, n;
		uint8_t *dst = rx_target(c, &len);

		n = k < len ? k : len;
		if (src) {
			memcpy(dst, src, n);
			src += n;
		}
		if (c->rx_split && c->rx_got >= c->rx_msg->front_len)
			c->rx_dcrc = atoll__crc32c(c->rx_dcrc, dst, n);
		else
			c->rx_crc = atoll__crc32c(c->rx_crc, dst, n);
		c->rx_got += n;
		k -= n;
	}
	if (c->rx_got == c->rx_msg->front_len + (size_t)c->rx_msg->data_len)
		c->rx_stage = RX_TAIL;
}

static bool conn_rx_header(struct msg_conn *c)
{
	uint32_t limit = c->state == CS_OPEN ? c->frame_max : MSG_HELLO_FRAME_MAX;
	struct msg_hdr h;
	struct msg *m;
	int r;

	r = msg_hdr_decode(c->rbuf + c->rpos, limit, &h);
	if (r < 0) {
		if (r == -EMSGSIZE)
			log_warn("msgr", "closing connection '%s': a frame of %llu bytes is over "
				 "the limit of %u", c->addr,
				 (unsigned long long)h.front_len + h.data_len, limit);
		else
			log_warn("msgr", "closing connection '%s': %s", c->addr,
				 r == -EPROTO ? "bad magic (not an atoll messenger peer)"
					      : "bad header crc");
		conn_fail(c, r);
		return false;
	}
	if (c->state == CS_HANDSHAKE && h.type != MSG_T_HELLO) {
		log_warn("msgr", "closing connection '%s': a message of type %u before the hello",
			 c->addr, h.type);
		conn_fail(c, -EPROTO);
		return false;
	}
	if (c->state == CS_OPEN && h.type == MSG_T_HELLO) {
		log_warn("msgr", "closing connection '%s': a second hello", c->addr);
		conn_fail(c, -EPROTO);
		return false;
	}
	m = calloc(1, sizeof(*m));
	if (m && h.front_len)
		m->front = malloc(h.front_len);
	/* The reply to a msg_call_rx: into the caller's buffer if it lends it. */
	if (m && h.data_len && (h.flags & MSG_F_REPLY) && c->state == CS_OPEN &&
	    (m->data = rx_lease_begin(c, &h)))
		m->data_free = rx_data_kept;
	/* Data of whole 4 KiB blocks is page-aligned (malloc's large
	 * allocations need not be: jemalloc offsets them by a random cache
	 * line) so that the OSD's store can write it with O_DIRECT as it is,
	 * without a bounce copy. */
	else if (m && h.data_len && h.data_len % MSG_DATA_ALIGN == 0)
		m->data = aligned_alloc(MSG_DATA_ALIGN, h.data_len);
	else if (m && h.data_len)
		m->data = malloc(h.data_len);
	if (!m || (h.front_len && !m->front) || (h.data_len && !m->data)) {
		rx_lease_end(c);
		log_error("msgr", "closing connection '%s': cannot allocate a frame of %llu bytes",
			  c->addr, (unsigned long long)h.front_len + h.data_len);
		msg_free(m);
		conn_fail(c, -ENOMEM);
		return false;
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
	c->rx_split = h.data_len >= MSG_CRC_SPLIT_MIN;
	c->rpos += MSG_HEADER_LEN;
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
		return conn_rx_hello(c, m);
	if (m->type == MSG_T_KEEPALIVE) {
		msg_free(m);	/* its arrival was all it had to say */
		return true;
	}
	m->conn = c;
	msg_conn__hold(c);
	m->charged = frame_len(m);
	atomic_fetch_add(&c->inflight, m->charged);
	if (m->flags & MSG_F_REPLY)
		conn_got_reply(c, m);
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
		conn_fail(c, -ENOMEM);
		return false;
	}
	for (;;) {
		size_t avail = c->rlen - c->rpos, need, len;
		const uint8_t *p;
		uint32_t crc;

		switch (c->rx_stage) {
		case RX_HDR:
			if (c->state == CS_OPEN && !conn_rx_budget(c))
				return false;
			if (avail < MSG_HEADER_LEN)
				return true;
			if (!conn_rx_header(c))
				return false;
			break;
		case RX_BODY:
			if (!avail)
				return true;
			need = c->rx_msg->front_len + (size_t)c->rx_msg->data_len - c->rx_got;
			len = avail < need ? avail : need;
			rx_fill(c, c->rbuf + c->rpos, len);
			c->rpos += len;
			break;
		case RX_TAIL:
			if (avail < MSG_TRAILER_LEN)
				return true;
			p = c->rbuf + c->rpos;
			crc = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			      (uint32_t)p[3] << 24;
			if (c->rx_split) {
				c->rx_msg->data_crc = c->rx_dcrc;
				c->rx_msg->data_crc_known = true;
				c->rx_crc = atoll__crc32c_combine(c->rx_crc, c->rx_dcrc,
							       c->rx_msg->data_len);
			}
			if (crc != c->rx_crc) {
				log_warn("msgr", "closing connection '%s': bad payload crc "
					 "(message type %u, %u + %u bytes)", c->addr,
					 c->rx_hdr.type, c->rx_hdr.front_len, c->rx_hdr.data_len);
				conn_fail(c, -EBADMSG);
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
		log_warn("msgr", "closing connection '%s': truncated frame (the peer "
			 "closed in the middle of it)", c->addr);
	else
		log_debug("msgr", "connection '%s' closed by the peer", c->addr);
	conn_fail(c, -ECONNRESET);
}

static void conn_readable(struct msg_conn *c)
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
			iov[n].iov_base = rx_target(c, &direct);
			iov[n++].iov_len = direct;
		}
		iov[n].iov_base = c->rbuf + c->rlen;
		iov[n++].iov_len = MSG_RBUF_SIZE - c->rlen;
		want = direct + MSG_RBUF_SIZE - c->rlen;
		r = readv(c->fd, iov, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			log_debug("msgr", "connection '%s' failed: %s", c->addr, strerror(errno));
			conn_fail(c, -errno);
			return;
		}
		if (r == 0) {
			conn_eof(c);
			return;
		}
		c->last_rx_ns = mono_now_ns();
		if (direct) {
			size_t k = (size_t)r < direct ? (size_t)r : direct;

			rx_fill(c, NULL, k);
			c->rlen += (size_t)r - k;
		} else {
			c->rlen += (size_t)r;
		}
		if ((size_t)r < want)
			break;		/* drained: epoll tells us when there is more */
	}
	conn_parse(c);
}

/* ---- keepalive ---- */

void msg_conn__keepalive(struct msg_conn *c, uint64_t now)
{
	struct msgr *mr = c->msgr;
	uint64_t timeout = (uint64_t)mr->cfg.keepalive_timeout_ms * 1000000u;
	struct msg *m;

	if (c->state != CS_OPEN || atomic_load(&c->dead))
		return;
	/* while we do not read from it, its silence is ours */
	if (atomic_load(&c->rx_paused))
		c->last_rx_ns = now;
	if (now - c->last_rx_ns > timeout) {
		log_warn("msgr", "connection '%s': nothing received for %llu ms; taking it as "
			 "broken%s", c->addr, (unsigned long long)(now - c->last_rx_ns) / 1000000u,
			 c->dialled ? " and dialling again" : "");
		conn_fail(c, -ETIMEDOUT);
		return;
	}
	m = msg_new(MSG_T_KEEPALIVE, NULL);
	if (m && msg_conn__submit(c, m, NULL) < 0)
		msg_free(m);
}

/* ---- entry points from the loop ---- */

void msg_conn__event(struct msg_conn *c, uint32_t events)
{
	if (c->fd < 0)
		return;		/* closed earlier in this batch */
	if (c->state == CS_CONNECTING) {
		conn_connect_done(c);
		return;
	}
	if (c->state != CS_HANDSHAKE && c->state != CS_OPEN)
		return;
	if (events & EPOLLOUT) {
		c->wr_blocked = false;
		conn_flush(c);
		if (c->fd < 0)
			return;
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		return;
	if (!atomic_load(&c->rx_paused))
		conn_readable(c);
	else if (events & (EPOLLERR | EPOLLHUP))
		conn_fail(c, -ECONNRESET);	/* paused, and the socket is gone */
}

void msg_conn__kicked(struct msg_conn *c, unsigned int flags)
{
	if (c->state == CS_CLOSED)
		return;
	if (flags & KICK_CLOSE) {
		msg_conn__close(c, -ECONNABORTED, -ECONNRESET);
		return;
	}
	if ((flags & KICK_UNREF) && c->dialled && atomic_load(&c->uref) == 0) {
		msg_conn__close(c, -ECONNABORTED, -ECONNRESET);
		return;
	}
	if (flags & KICK_SEND) {
		conn_take_outq(c);
		conn_flush(c);
	}
	if ((flags & KICK_DIAL) && c->state == CS_NEW)
		conn_dial(c);
	if ((flags & KICK_RESUME) && c->fd >= 0 &&
	    (c->state == CS_OPEN || c->state == CS_HANDSHAKE))
		conn_resume(c);
}
