/*
 * msg_conn.c - one messenger connection on the loop thread, once it has
 * a socket: its lifetime, its epoll registration, the send queue and the
 * framed writes, the calls waiting for replies, closing and redialling,
 * keepalives, and the entry points the loop calls.  How a connection
 * comes up (dial, accept, the hello) is in msg_handshake.c; the receive
 * path (rbuf, frames, flow control) is in msg_rx.c.
 *
 * The states and the events each accepts are listed in msgr_int.h; every
 * failure goes through msg_conn__fail(), which either resets a dialled
 * connection for a redial (BACKOFF) or closes it for good (CLOSED).
 *
 * Sending: messages accepted from the outq wait in sq (in order); one
 * sendmsg() takes as many of them as fit in IOV_BATCH iovecs, pointing at
 * each message's own header, front, data and crc, so data is never
 * copied.  When the socket is full we wait for EPOLLOUT.  Another thread
 * may write a reply itself while the connection is idle (send_direct,
 * under wlock, which the loop holds while it writes); what it could not
 * write whole waits in tx_part and goes first.
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
#include "log.h"
#include "mono.h"
#include "msgr_int.h"

#define IOV_BATCH	128	/* iovecs per sendmsg: 32 small frames */
#define TX_SENDS_MAX	16	/* sendmsg calls per flush, for fairness */

/* ---- lifetime ---- */

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
	atomic_init(&c->rx_frames, 0);
	atomic_init(&c->rx_paused, false);
	atomic_init(&c->queued, 0);
	atomic_init(&c->calls_out, 0);
	c->dialled = dialled;
	c->frame_max = m->cfg.frame_max;
	c->inflight_max = m->cfg.inflight_max;
	c->frames_max = m->cfg.conn_frames_max;
	pthread_mutex_init(&c->plock, NULL);
	pthread_mutex_init(&c->wlock, NULL);
	c->outq_tailp = &c->outq_head;
	c->state = dialled ? CS_NEW : CS_HANDSHAKE;
	c->fd = -1;
	tnode_init(&c->hs_timer.n);
	c->hs_timer.fire = msg_conn__hs_timeout;
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
	msg_auth__conn_free(c);
	msg_budget__put(c->budget);
	free(c->peer_caps);
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

void msg_conn__update_events(struct msg_conn *c)
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

int msg_conn__attach_fd(struct msg_conn *c, int fd)
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
	atomic_fetch_sub(&c->queued, msg_conn__frame_len(m));
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
struct msgr_call *msg_conn__call_find(struct msgr *mr, uint64_t tid)
{
	struct idnode *n = idtab_find(&mr->calls, tid);

	if (!n && atomic_load(&mr->direct_any)) {
		msg_conn__take_direct(mr);
		n = idtab_find(&mr->calls, tid);
	}
	return n ? container_of(n, struct msgr_call, h) : NULL;
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
		atomic_fetch_sub(&c->queued, msg_conn__frame_len(m));
		m->call = NULL;
		msg_free(m);
		if (call) {
			call->next = *calls;
			*calls = call;
		}
	}
}

void msg_conn__got_reply(struct msg_conn *c, struct msg *m)
{
	struct msgr *mr = c->msgr;
	struct msgr_call *call = msg_conn__call_find(mr, m->tid);

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
	msg_conn__rx_reset(c);
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
	msg_budget__forget(c);		/* no longer waits for a pool */
	msg_admit__closed(c);		/* its slot is free */
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

void msg_conn__fail(struct msg_conn *c, int err)
{
	if (c->state == CS_CLOSED)
		return;
	if (c->dialled && atomic_load(&c->uref) > 0 && !atomic_load(&c->dead) &&
	    !c->msgr->shutting_down)
		conn_reset(c, err);
	else
		msg_conn__close(c, err, -ECONNRESET);
}

/* The redial timer of a connection in BACKOFF (armed by conn_reset). */
static void conn_redial(struct msgr *mr, struct mtimer *t)
{
	struct msg_conn *c = container_of(t, struct msg_conn, redial_timer);

	if (c->state == CS_BACKOFF)
		msg_conn__dial(c);
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
	atomic_fetch_add(&c->queued, msg_conn__frame_len(d));
	return;
fail:
	msg_free(d);
}

/* A written message: a call now waits for its reply. */
static void conn_sent(struct msg_conn *c, struct msg *m)
{
	atomic_fetch_sub(&c->queued, msg_conn__frame_len(m));
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
		size_t left = msg_conn__frame_len(m) - c->wr_off;

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
	msg_conn__update_events(c);
	return 0;
}

void msg_conn__flush(struct msg_conn *c)
{
	int err;

	pthread_mutex_lock(&c->wlock);
	conn_take_part(c);
	err = conn_flush_locked(c);
	c->tx_idle = !err && c->state == CS_OPEN && c->fd >= 0 && !c->sq_head &&
		     !c->hs_buf && !c->wr_blocked;
	pthread_mutex_unlock(&c->wlock);
	if (err)
		msg_conn__fail(c, err);
}

/* Writes m on the caller's thread (c idle, wlock held; unlocks it).
 * What the socket does not take is the loop's, first in line. */
static void direct_write(struct msg_conn *c, struct msg *m)
{
	struct iovec iov[4];
	struct msghdr mh = { .msg_iov = iov };
	size_t total = 0, skip = 0, len = msg_conn__frame_len(m);
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
 * (msg_conn__call_find: the reply may come in the pass that began before the call
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
	/* a frame trickling in holds its budget no longer than this */
	if (!c->dialled && c->rx_stage != RX_HDR && !atomic_load(&c->rx_paused) &&
	    now - c->rx_start_ns > (uint64_t)mr->cfg.frame_timeout_ms * 1000000u) {
		log_warn("msgr", "closing connection '%s': a frame of %llu bytes is not whole "
			 "%u ms after its header (ms_frame_timeout)", c->addr,
			 (unsigned long long)c->rx_hdr.front_len + c->rx_hdr.data_len,
			 mr->cfg.frame_timeout_ms);
		msg_conn__fail(c, -ETIMEDOUT);
		return;
	}
	if (now - c->last_rx_ns > timeout) {
		log_warn("msgr", "connection '%s': nothing received for %llu ms; taking it as "
			 "broken%s", c->addr, (unsigned long long)(now - c->last_rx_ns) / 1000000u,
			 c->dialled ? " and dialling again" : "");
		msg_conn__fail(c, -ETIMEDOUT);
		return;
	}
	if (c->auth_renew_ns && now >= c->auth_renew_ns) {
		/* msg_auth.c: the handshake again renews tickets and secrets */
		log_info("msgr", "connection '%s': renewing its tickets", c->addr);
		c->auth_renew_ns = 0;
		msg_conn__fail(c, -EKEYEXPIRED);
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
		msg_conn__connect_done(c);
		return;
	}
	if (c->state != CS_HANDSHAKE && c->state != CS_OPEN)
		return;
	if (events & EPOLLOUT) {
		c->wr_blocked = false;
		msg_conn__flush(c);
		if (c->fd < 0)
			return;
	}
	if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		return;
	if (!atomic_load(&c->rx_paused))
		msg_conn__readable(c);
	else if (events & (EPOLLERR | EPOLLHUP))
		msg_conn__fail(c, -ECONNRESET);	/* paused, and the socket is gone */
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
		msg_conn__flush(c);
	}
	if (flags & KICK_RETARGET) {
		struct msgr *mr = c->msgr;
		bool moved = false;

		pthread_mutex_lock(&mr->lock);
		if (c->retarget) {
			moved = c->salen != c->retarget_salen ||
				memcmp(&c->sa, &c->retarget_sa, c->salen) != 0;
			c->sa = c->retarget_sa;
			c->salen = c->retarget_salen;
			c->retarget = false;
		}
		pthread_mutex_unlock(&mr->lock);
		if (moved) {
			msgr__format_addr((struct sockaddr *)&c->sa, c->addr, sizeof(c->addr));
			c->backoff_ms = mr->cfg.reconnect_min_ms;
			if (c->state == CS_BACKOFF) {
				msgr__disarm(mr, &c->redial_timer);
				msg_conn__dial(c);
			} else if (c->state == CS_CONNECTING || c->state == CS_HANDSHAKE ||
				   c->state == CS_OPEN) {
				msg_conn__fail(c, -ECONNRESET);	/* redials there */
			}
			if (c->state == CS_CLOSED)
				return;
		}
	}
	if ((flags & KICK_DIAL) && c->state == CS_NEW)
		msg_conn__dial(c);
	if ((flags & (KICK_RESUME | KICK_POOL)) && c->fd >= 0 &&
	    (c->state == CS_OPEN || c->state == CS_HANDSHAKE))
		msg_conn__resume(c);
}
