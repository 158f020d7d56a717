/*
 * nbd_transmit.c - the transmission phase of one connection: read
 * requests, check them, issue them as asynchronous image requests, and
 * send the replies in the order the requests complete.
 *
 * The reader thread (the connection's own) reads one request header at a
 * time.  A request that is wrong (unknown command or flags, out of range,
 * too long to read) is answered with the protocol's error and reading goes
 * on; only a request whose payload we cannot or will not read (a write
 * over NBD_MAX_PAYLOAD) and a bad magic end the connection.  Requests in
 * flight are bounded by bytes (NBD_CONN_BUDGET_BYTES) and by count: the
 * reader waits for replies to go out before reading on, so one client
 * holds a bounded amount of memory however it behaves.
 *
 * Completions queue their reply and send the queue themselves, as much
 * as the socket takes at once (MSG_DONTWAIT: they never block), those on
 * a libatoll thread once the completions that came together have run;
 * the writer thread sends the rest.  Whoever sends a reply frees it and
 * gives its bytes back to the budget.
 * Over TLS only the writer sends (a session cannot take a write without
 * blocking); it corks replies while more are queued.  No write is cached: an image write completes when it is
 * durable on every replica, so a write's reply means durable, FUA costs
 * nothing, and FLUSH only has to wait for the writes issued before it
 * (the image library's flush does exactly that, for every connection).
 */
#include "nbd_metrics.h"
#include "nbd_server.h"
#include "mono.h"

#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static const char *cmd_name(uint16_t type)
{
	switch (type) {
	case NBD_CMD_READ: return "read";
	case NBD_CMD_WRITE: return "write";
	case NBD_CMD_DISC: return "disc";
	case NBD_CMD_FLUSH: return "flush";
	case NBD_CMD_TRIM: return "trim";
	case NBD_CMD_WRITE_ZEROES: return "write-zeroes";
	case NBD_CMD_BLOCK_STATUS: return "block-status";
	default: return "unknown";
	}
}

/* ---- building replies ----------------------------------------------- */

static void chunk_header(uint8_t *hdr, uint16_t flags, uint16_t type, uint64_t cookie,
			 uint32_t len)
{
	nbd_put32(hdr, NBD_STRUCTURED_REPLY_MAGIC);
	nbd_put16(hdr + 4, flags);
	nbd_put16(hdr + 6, type);
	nbd_put64(hdr + 8, cookie);
	nbd_put32(hdr + 16, len);
}

static void build_simple(struct nbd_req *req)
{
	bool data = req->rq.type == NBD_CMD_READ && !req->err;

	nbd_put32(req->hdr, NBD_SIMPLE_REPLY_MAGIC);
	nbd_put32(req->hdr + 4, nbd_errno_to_wire(req->err));
	nbd_put64(req->hdr + 8, req->rq.cookie);
	req->hlen = NBD_SIMPLE_REPLY_SIZE;
	req->data = data ? req->buf : NULL;
	req->dlen = data ? req->rq.length : 0;
}

static void build_structured_error(struct nbd_req *req)
{
	const char *msg = atoll_strerror(req->err);
	size_t mlen = strlen(msg);

	if (mlen > sizeof(req->hdr) - NBD_STRUCTURED_REPLY_SIZE - 6)
		mlen = sizeof(req->hdr) - NBD_STRUCTURED_REPLY_SIZE - 6;
	chunk_header(req->hdr, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_ERROR, req->rq.cookie,
		     (uint32_t)(6 + mlen));
	nbd_put32(req->hdr + 20, nbd_errno_to_wire(req->err));
	nbd_put16(req->hdr + 24, (uint16_t)mlen);
	memcpy(req->hdr + 26, msg, mlen);
	req->hlen = NBD_STRUCTURED_REPLY_SIZE + 6 + mlen;
	req->data = NULL;
	req->dlen = 0;
}

static void build_structured_read(struct nbd_req *req)
{
	req->data = NULL;
	req->dlen = 0;
	if (req->rq.length == 0) {
		chunk_header(req->hdr, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_NONE,
			     req->rq.cookie, 0);
		req->hlen = NBD_STRUCTURED_REPLY_SIZE;
		return;
	}
	chunk_header(req->hdr, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_OFFSET_DATA, req->rq.cookie,
		     8 + req->rq.length);
	nbd_put64(req->hdr + 20, req->rq.offset);
	req->hlen = NBD_STRUCTURED_REPLY_SIZE + 8;
	req->data = req->buf;
	req->dlen = req->rq.length;
}

/* The extents go into req->buf (sized for them by the reader). */
static void build_block_status(struct nbd_req *req)
{
	uint8_t *p = req->buf;
	uint32_t n = 0, covered = 0;

	for (int64_t i = 0; i < req->nextents; i++) {
		uint64_t len = req->ext[i].len;
		uint32_t fl = req->ext[i].flags & (NBD_STATE_HOLE | NBD_STATE_ZERO);

		if (len == 0)
			continue;
		if (len > req->rq.length - covered)	/* never past the request */
			len = req->rq.length - covered;
		if (len == 0)
			break;
		nbd_put32(p + 24 + 8 * n, (uint32_t)len);
		nbd_put32(p + 24 + 8 * n + 4, fl);
		covered += (uint32_t)len;
		n++;
	}
	if (n == 0) {	/* the library promises at least one; be safe anyway */
		req->err = -EIO;
		build_structured_error(req);
		return;
	}
	chunk_header(p, NBD_REPLY_FLAG_DONE, NBD_REPLY_TYPE_BLOCK_STATUS, req->rq.cookie,
		     4 + 8 * n);
	nbd_put32(p + 20, NBD_META_ID_BASE_ALLOCATION);
	req->hlen = 0;
	req->data = p;
	req->dlen = 24 + 8 * (size_t)n;
}

static void build_reply(struct nbd_conn *conn, struct nbd_req *req)
{
	bool payload_cmd = req->rq.type == NBD_CMD_READ ||
			   req->rq.type == NBD_CMD_BLOCK_STATUS;

	if (req->built)
		return;
	req->built = true;
	req->sent = 0;
	if (!conn->structured || !payload_cmd)
		build_simple(req);
	else if (req->err)
		build_structured_error(req);
	else if (req->rq.type == NBD_CMD_READ)
		build_structured_read(req);
	else
		build_block_status(req);
}

/* Sends what is left of req's reply (writer thread, blocking).  0 once all
 * of it is out; -ETIMEDOUT when the socket's send timeout passed (req->sent
 * says how far it got); another negative errno when the client is gone. */
static int send_rest(int fd, struct nbd_req *req, int flags)
{
	while (req->sent < req->hlen + req->dlen) {
		struct iovec iov[2];
		struct msghdr mh = { .msg_iov = iov };
		ssize_t n;

		if (req->sent < req->hlen) {
			iov[0].iov_base = req->hdr + req->sent;
			iov[0].iov_len = req->hlen - req->sent;
			iov[1].iov_base = (void *)req->data;
			iov[1].iov_len = req->dlen;
			mh.msg_iovlen = req->dlen ? 2 : 1;
		} else {
			iov[0].iov_base = (void *)(req->data + (req->sent - req->hlen));
			iov[0].iov_len = req->dlen - (req->sent - req->hlen);
			mh.msg_iovlen = 1;
		}
		n = sendmsg(fd, &mh, flags | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -ETIMEDOUT;
			return -errno;
		}
		req->sent += (size_t)n;
	}
	return 0;
}

/* TLS: the bytes of replies gathered before they go out as records (while
 * more replies are queued), and the largest record's payload. */
#define TLS_CORK_MAX	(64u << 10)
#define TLS_RECORD_MAX	16384u

static int tls_flush(struct nbd_conn *conn)
{
	if (!conn->tls_corked)
		return 0;
	conn->tls_corked = false;
	conn->corked = 0;
	return nbd_tls_uncork(conn->tls);
}

/* Sends req's whole reply through the TLS session (writer thread): the
 * header and a small payload join the cork; a large payload fills the
 * current record, then goes out uncorked.  The cork is flushed when no
 * other reply waits (more false) or it holds TLS_CORK_MAX. */
static int send_tls(struct nbd_conn *conn, struct nbd_req *req, bool more)
{
	struct nbd_tls *t = conn->tls;
	size_t first = req->dlen;
	int ret;

	if (!conn->tls_corked) {
		nbd_tls_cork(t);
		conn->tls_corked = true;
	}
	ret = nbd_tls_send(t, req->hdr, req->hlen);
	conn->corked += req->hlen;
	if (!ret && req->dlen) {
		if (conn->corked + first > TLS_CORK_MAX && first > TLS_RECORD_MAX - req->hlen)
			first = TLS_RECORD_MAX - req->hlen;
		ret = nbd_tls_send(t, req->data, first);
		conn->corked += first;
		if (!ret && first < req->dlen) {
			ret = tls_flush(conn);
			if (!ret)
				ret = nbd_tls_send(t, req->data + first, req->dlen - first);
		}
	}
	if (!ret && (!more || conn->corked >= TLS_CORK_MAX))
		ret = tls_flush(conn);
	return ret;
}

static void req_free(struct nbd_req *req)
{
	free(req->buf);
	free(req->ext);
	free(req);
}

/* A reply was sent (ret 0) or could not be (the client is gone): give
 * its bytes back to the budget.  Called with qlock held. */
static void reply_gone(struct nbd_conn *conn, struct nbd_req *req, int ret)
{
	if (ret && !conn->dead) {
		/* The client is gone: drop later replies, wake the reader. */
		conn->dead = true;
		shutdown(conn->fd, SHUT_RDWR);
	}
	conn->budget_used -= req->budget;
	nbd_budget_put(conn->srv, req->budget);
	conn->inflight--;
	if (conn->reader_waits)
		pthread_cond_signal(&conn->qcond);
	if (conn->reader_done && conn->inflight == 0)
		pthread_cond_signal(&conn->wcond);	/* the drain is over */
}

static void log_failure(struct nbd_conn *conn, const struct nbd_req *req)
{
	if (req->err && req->err != -EINVAL && req->err != -ENOSPC && req->err != -EPERM &&
	    req->err != -ECONNRESET)
		log_warn(NBD_SUBSYS, "%s: %s of %u bytes at %llu on '%s' failed: %s",
			 conn->peer, cmd_name(req->rq.type), req->rq.length,
			 (unsigned long long)req->rq.offset, conn->export->name,
			 atoll_strerror(req->err));
}

/* ---- the reply queue ------------------------------------------------ */

/* Replies sent by one sendmsg at most (a header and a payload each). */
#define REPLY_BATCH 32

/* Sends the queued replies: up to REPLY_BATCH of them in one sendmsg that
 * does not block.  What the socket does not take at once goes back to the
 * head of the queue, for the writer; so does everything while the writer
 * is sending.  deferred: this is the call queue_reply deferred (it clears
 * conn->flush_pending, which keeps the writer, and so conn, alive). */
static void flush_replies(struct nbd_conn *conn, bool deferred)
{
	struct nbd_req *batch[REPLY_BATCH];
	struct iovec iov[2 * REPLY_BATCH];
	size_t n = 0, niov = 0, done = 0;
	ssize_t sent = 0;

	pthread_mutex_lock(&conn->qlock);
	if (deferred)
		conn->flush_pending = false;
	if (conn->sending || conn->dead || !conn->qhead) {
		/* the writer sends (or drops) them, and may be waiting for
		 * this flush to be over before it ends */
		pthread_cond_signal(&conn->wcond);
		pthread_mutex_unlock(&conn->qlock);
		return;
	}
	while (conn->qhead && n < REPLY_BATCH) {
		batch[n++] = conn->qhead;
		conn->qhead = conn->qhead->next;
	}
	if (!conn->qhead)
		conn->qtail = NULL;
	conn->sending = true;
	pthread_mutex_unlock(&conn->qlock);

	for (size_t i = 0; i < n; i++) {
		struct nbd_req *req = batch[i];

		/* the first may be partly out already (req->sent) */
		build_reply(conn, req);
		if (req->sent < req->hlen)
			iov[niov++] = (struct iovec){ req->hdr + req->sent, req->hlen - req->sent };
		if (req->dlen) {
			size_t skip = req->sent > req->hlen ? req->sent - req->hlen : 0;

			iov[niov++] = (struct iovec){ (void *)(req->data + skip), req->dlen - skip };
		}
	}
	do
		sent = sendmsg(conn->fd, &(struct msghdr){ .msg_iov = iov, .msg_iovlen = niov },
			       MSG_DONTWAIT | MSG_NOSIGNAL);
	while (sent < 0 && errno == EINTR);
	/* The replies the socket took whole; the next one may be partly out. */
	if (sent > 0) {
		size_t left = (size_t)sent;

		while (done < n &&
		       left >= batch[done]->hlen + batch[done]->dlen - batch[done]->sent) {
			left -= batch[done]->hlen + batch[done]->dlen - batch[done]->sent;
			done++;
		}
		if (done < n)
			batch[done]->sent += left;
	}

	int err = sent < 0 ? errno : 0;

	pthread_mutex_lock(&conn->qlock);
	conn->sending = false;
	if (err && err != EAGAIN && err != EWOULDBLOCK) {
		/* the client is gone: these replies are dropped */
		for (size_t i = 0; i < n; i++)
			reply_gone(conn, batch[i], -err);
		done = n;
	} else {
		for (size_t i = 0; i < done; i++)
			reply_gone(conn, batch[i], 0);
		if (done < n) {
			/* back to the head, in order: the writer goes on */
			batch[n - 1]->next = conn->qhead;
			for (size_t i = n - 1; i > done; i--)
				batch[i - 1]->next = batch[i];
			conn->qhead = batch[done];
			if (!conn->qtail)
				conn->qtail = batch[n - 1];
		}
	}
	if (conn->qhead)
		pthread_cond_signal(&conn->wcond);
	pthread_mutex_unlock(&conn->qlock);
	for (size_t i = 0; i < done; i++)
		req_free(batch[i]);
}

static void flush_deferred(void *arg)
{
	flush_replies(arg, true);
}

/* A request is complete (any thread); its reply joins the queue.  On a
 * library thread the queue is sent once the completions that came with it
 * have run (atoll_defer), so their replies leave together; elsewhere it is
 * sent from here.  Either way without blocking, and without waking the
 * writer for every request.  Over TLS, or once the client is gone, the
 * writer sends (or drops) them. */
static void queue_reply(struct nbd_req *req)
{
	struct nbd_conn *conn = req->conn;
	bool now = false;

	log_failure(conn, req);
	nbd_metrics_done(req);
	pthread_mutex_lock(&conn->qlock);
	req->next = NULL;
	if (conn->qtail)
		conn->qtail->next = req;
	else
		conn->qhead = req;
	conn->qtail = req;
	if (conn->tls || conn->dead) {
		if (!conn->sending)	/* else the sender signals when done */
			pthread_cond_signal(&conn->wcond);
	} else if (!conn->flush_pending) {
		if (atoll_defer(flush_deferred, conn) == 1)
			conn->flush_pending = true;
		else
			now = true;
	}
	pthread_mutex_unlock(&conn->qlock);
	if (now)
		flush_replies(conn, false);
}

/* One piece of a request finished with rc (from a library thread, or from
 * the reader when a piece was refused at once).  The last one queues the
 * reply; the first error wins. */
static void piece_done(struct nbd_req *req, int64_t rc)
{
	struct nbd_conn *conn = req->conn;
	bool last;

	pthread_mutex_lock(&conn->qlock);
	if (rc < 0 && !req->err)
		req->err = (int)rc;
	if (req->rq.type == NBD_CMD_BLOCK_STATUS && rc >= 0)
		req->nextents = rc;
	last = --req->pieces == 0;
	pthread_mutex_unlock(&conn->qlock);
	if (last)
		queue_reply(req);
}

/* A piece's completion fired: report it; nobody else holds it. */
static void piece_cb(struct atoll_completion *comp, void *arg)
{
	piece_done(arg, atoll_completion_return(comp));
	atoll_completion_release(comp);
}

/* A completion for one piece of req, or NULL (out of memory). */
static struct atoll_completion *piece_comp(struct nbd_req *req)
{
	struct atoll_completion *comp;

	return atoll_completion_create(piece_cb, req, NULL, &comp) ? NULL : comp;
}

/* What an aio call returned for a piece; a refused piece's completion
 * never fires, so it is released here. */
static int piece_issued(int ret, struct atoll_completion *comp)
{
	if (ret)
		atoll_completion_release(comp);
	return ret;
}

/* ---- the writer thread ---------------------------------------------- */

/* Sends the queued replies, in order, blocking as the client reads them;
 * MSG_MORE while more are queued, so a burst leaves in few segments. */
static void *writer_main(void *arg)
{
	struct nbd_conn *conn = arg;
	bool flush;

	pthread_mutex_lock(&conn->qlock);
	for (;;) {
		struct nbd_req *req;
		bool more;
		int ret = 0;

		while ((!conn->qhead || conn->sending || conn->flush_pending) &&
		       !(conn->reader_done && conn->inflight == 0 && !conn->flush_pending))
			pthread_cond_wait(&conn->wcond, &conn->qlock);
		if (!conn->qhead || conn->sending || conn->flush_pending)
			break;
		req = conn->qhead;
		conn->qhead = req->next;
		if (!conn->qhead)
			conn->qtail = NULL;
		more = conn->qhead != NULL;
		conn->sending = true;
		pthread_mutex_unlock(&conn->qlock);

		if (!conn->dead) {
			build_reply(conn, req);
			if (conn->tls)
				ret = send_tls(conn, req, more);
			else
				ret = send_rest(conn->fd, req, more ? MSG_MORE : 0);
		}
		pthread_mutex_lock(&conn->qlock);
		conn->sending = false;
		reply_gone(conn, req, ret);
		pthread_mutex_unlock(&conn->qlock);
		req_free(req);
		pthread_mutex_lock(&conn->qlock);
	}
	conn->writer_exited = true;
	flush = conn->tls && !conn->dead;
	pthread_mutex_unlock(&conn->qlock);
	if (flush)
		tls_flush(conn);	/* defensive: the last reply flushed already */
	return NULL;
}

/* ---- reading and issuing requests (reader thread) -------------------- */

void nbd_budget_put(struct nbd_server *srv, size_t bytes)
{
	if (!bytes)
		return;
	pthread_mutex_lock(&srv->budget_lock);
	srv->budget_used -= bytes;
	pthread_cond_broadcast(&srv->budget_cond);
	pthread_mutex_unlock(&srv->budget_lock);
}

/* Waits until bytes more fit in the server's budget (all connections),
 * then charges them.  Alone in flight a request always fits, so one
 * larger than the budget still runs.  Rechecks conn->dead every second:
 * false when the client went away meanwhile. */
static bool server_budget_take(struct nbd_conn *conn, size_t bytes)
{
	struct nbd_server *srv = conn->srv;
	bool ok = true;

	pthread_mutex_lock(&srv->budget_lock);
	while (srv->budget_used && srv->budget_used + bytes > srv->budget_max) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		nbd_conn_unhold(conn);
		pthread_cond_timedwait(&srv->budget_cond, &srv->budget_lock, &ts);
		nbd_conn_rehold(conn);
		if (__atomic_load_n(&conn->dead, __ATOMIC_RELAXED) || srv->stopping) {
			ok = false;
			break;
		}
	}
	if (ok)
		srv->budget_used += bytes;
	pthread_mutex_unlock(&srv->budget_lock);
	return ok;
}

/* Waits until bytes more fit in the connection's budget and then in the
 * server's, charges them to both and counts one more request in flight.
 * false if the writer gave up on the client meanwhile (nothing charged). */
static bool budget_take(struct nbd_conn *conn, size_t bytes)
{
	bool ok;

	pthread_mutex_lock(&conn->qlock);
	while (!conn->dead && (conn->inflight >= NBD_CONN_MAX_INFLIGHT ||
			       (conn->budget_used &&
				conn->budget_used + bytes > conn->srv->conn_budget_max))) {
		conn->reader_waits = true;
		nbd_conn_unhold(conn);	/* what it waits for may be held */
		pthread_cond_wait(&conn->qcond, &conn->qlock);
		nbd_conn_rehold(conn);
		conn->reader_waits = false;
	}
	ok = !conn->dead;
	if (ok) {
		conn->budget_used += bytes;
		conn->inflight++;
	}
	pthread_mutex_unlock(&conn->qlock);
	if (ok && bytes && !server_budget_take(conn, bytes)) {
		pthread_mutex_lock(&conn->qlock);
		conn->budget_used -= bytes;
		conn->inflight--;
		if (conn->reader_done && conn->inflight == 0)
			pthread_cond_signal(&conn->wcond);
		pthread_mutex_unlock(&conn->qlock);
		ok = false;
	}
	return ok;
}

/* Discard and write-zeroes in pieces the library takes. */
static void issue_ranges(struct nbd_req *req)
{
	struct atoll_image *img = req->conn->export->img;
	uint64_t off = req->rq.offset, end = off + req->rq.length;
	unsigned zflags = (req->rq.flags & NBD_CMD_FLAG_NO_HOLE) ? ATOLL_IMAGE_ZERO_NO_HOLE : 0;

	req->pieces = 1;	/* our own, until every piece is issued */
	while (off < end) {
		uint64_t len = end - off < NBD_ZERO_PIECE ? end - off : NBD_ZERO_PIECE;
		struct atoll_completion *comp = piece_comp(req);
		int ret;

		pthread_mutex_lock(&req->conn->qlock);
		req->pieces++;
		pthread_mutex_unlock(&req->conn->qlock);
		if (!comp)
			ret = -ENOMEM;
		else if (req->rq.type == NBD_CMD_TRIM)
			ret = piece_issued(atoll_image_aio_discard(img, off, len, comp, 0), comp);
		else
			ret = piece_issued(atoll_image_aio_write_zeroes(img, off, len, comp, zflags),
					   comp);
		if (ret) {
			piece_done(req, ret);
			break;
		}
		off += len;
	}
	piece_done(req, 0);
}

static void issue(struct nbd_req *req, uint64_t len)
{
	struct nbd_conn *conn = req->conn;
	struct atoll_image *img = conn->export->img;
	struct atoll_completion *comp;
	int ret;

	req->pieces = 1;
	switch (req->rq.type) {
	case NBD_CMD_TRIM:
	case NBD_CMD_WRITE_ZEROES:
		issue_ranges(req);
		return;
	case NBD_CMD_READ:
	case NBD_CMD_WRITE:
	case NBD_CMD_FLUSH:
	case NBD_CMD_BLOCK_STATUS:
		break;
	default:
		piece_done(req, -EINVAL);
		return;
	}
	comp = piece_comp(req);
	if (!comp) {
		piece_done(req, -ENOMEM);
		return;
	}
	switch (req->rq.type) {
	case NBD_CMD_READ:
		ret = atoll_image_aio_read(img, req->buf, len, req->rq.offset, comp, 0);
		break;
	case NBD_CMD_WRITE:
		ret = atoll_image_aio_write(img, req->buf, len, req->rq.offset, comp, 0);
		break;
	case NBD_CMD_FLUSH:
		ret = atoll_image_aio_flush(img, comp, 0);
		break;
	default:	/* NBD_CMD_BLOCK_STATUS: len clipped at the end by the plan */
		ret = atoll_image_aio_block_status(img, req->rq.offset, len, req->ext,
						   (req->rq.flags & NBD_CMD_FLAG_REQ_ONE) ?
						   1 : NBD_MAX_EXTENTS, comp, 0);
		break;
	}
	if (piece_issued(ret, comp))
		piece_done(req, ret);
}

/* A block status reply (header, context id, extents) and the extents the
 * library fills, charged to the budget like read data. */
#define BS_REPLY_BYTES (24 + 8 * (size_t)NBD_MAX_EXTENTS)
#define BS_EXT_BYTES (NBD_MAX_EXTENTS * sizeof(struct atoll_image_extent))

/* Reads and serves requests until DISC, EOF or a fatal protocol error. */
static void reader_loop(struct nbd_conn *conn)
{
	const struct nbd_request_limits lim = {
		.size = conn->export->size,
		.read_only = conn->export->read_only,
		.meta_alloc = conn->meta_alloc,
	};

	for (;;) {
		uint8_t hdr[NBD_REQUEST_SIZE];
		struct nbd_request_plan plan;
		struct nbd_request rq;
		struct nbd_req *req;
		size_t bytes = 0;
		bool bs;
		int err, ret;

		ret = nbd_conn_read_by(conn, hdr, sizeof(hdr), NBD_NO_DEADLINE);
		if (ret) {
			if (ret != -ENODATA && !conn->dead)
				log_info(NBD_SUBSYS, "%s: connection lost: %s", conn->peer,
					 atoll_strerror(ret));
			return;
		}
		nbd_request_plan(hdr, &lim, &rq, &plan);
		switch (plan.action) {
		case NBD_RQ_CLOSE:
			if (nbd_get32(hdr) != NBD_REQUEST_MAGIC)
				log_warn(NBD_SUBSYS, "%s: bad request magic 0x%08x; closing",
					 conn->peer, nbd_get32(hdr));
			else
				log_warn(NBD_SUBSYS, "%s: write of %u bytes is over the "
					 "%u-byte limit; closing", conn->peer, rq.length,
					 NBD_MAX_PAYLOAD);
			return;
		case NBD_RQ_DISC:
			return;
		case NBD_RQ_REFUSE:
		case NBD_RQ_ISSUE:
			break;
		}
		err = plan.err;
		bs = !err && rq.type == NBD_CMD_BLOCK_STATUS;
		if (rq.type == NBD_CMD_WRITE)
			bytes = plan.payload;	/* write data is read even when refused */
		else if (!err && rq.type == NBD_CMD_READ)
			bytes = rq.length;
		else if (bs)
			bytes = BS_REPLY_BYTES;
		if (!budget_take(conn, bytes + (bs ? BS_EXT_BYTES : 0)))
			return;
		req = calloc(1, sizeof(*req));
		if (req)
			req->t_start = mono_now_ns();
		if (req && bytes)
			req->buf = malloc(bytes);
		if (req && bs)
			req->ext = calloc(NBD_MAX_EXTENTS, sizeof(*req->ext));
		if (!req || (bytes && !req->buf) || (bs && !req->ext)) {
			log_error(NBD_SUBSYS, "%s: out of memory; closing", conn->peer);
			if (req)
				req_free(req);
			pthread_mutex_lock(&conn->qlock);
			conn->budget_used -= bytes + (bs ? BS_EXT_BYTES : 0);
			nbd_budget_put(conn->srv, bytes + (bs ? BS_EXT_BYTES : 0));
			conn->inflight--;
			pthread_cond_broadcast(&conn->qcond);
			pthread_mutex_unlock(&conn->qlock);
			return;
		}
		req->conn = conn;
		req->rq = rq;
		req->budget = bytes + (bs ? BS_EXT_BYTES : 0);
		if (rq.type == NBD_CMD_WRITE) {
			ret = nbd_conn_read_by(conn, req->buf, rq.length,
					       mono_now_ms() + conn->srv->write_data_timeout_ms);
			if (ret) {
				log_info(NBD_SUBSYS, "%s: connection lost in a write's data: %s",
					 conn->peer, atoll_strerror(ret));
				pthread_mutex_lock(&conn->qlock);
				conn->dead = true;	/* nobody to answer */
				pthread_mutex_unlock(&conn->qlock);
				req->pieces = 1;
				piece_done(req, -ECONNRESET);
				return;
			}
		}
		if (err) {
			log_debug(NBD_SUBSYS, "%s: %s at %llu+%u refused: %s", conn->peer,
				  cmd_name(rq.type), (unsigned long long)rq.offset, rq.length,
				  atoll_strerror(err));
			req->pieces = 1;
			piece_done(req, err);
			continue;
		}
		issue(req, plan.length);
	}
}

void nbd_transmit(struct nbd_conn *conn)
{
	pthread_attr_t attr;
	int ret;

	/* the reader's stack size (nbd_main.c): the default 8 MiB, once per
	 * connection, is a gigabyte of address space under many clients */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, NBD_THREAD_STACK);
	ret = pthread_create(&conn->writer, &attr, writer_main, conn);
	pthread_attr_destroy(&attr);
	if (ret) {
		log_error(NBD_SUBSYS, "%s: cannot start a writer thread: %s", conn->peer,
			  atoll_strerror(-ret));
		return;
	}
	conn->writer_started = true;
	/* requests are read through a buffer (nbd_io.c); without one, one
	 * receive per header as before */
	conn->rbuf = malloc(sizeof(*conn->rbuf));
	if (conn->rbuf)
		conn->rbuf->pos = conn->rbuf->len = 0;
	/* The requests of one receive leave together: the reader releases
	 * them before each receive and each wait (conn_unhold). */
	atoll_hold();
	conn->holding = true;
	reader_loop(conn);
	conn->holding = false;
	atoll_release();
	free(conn->rbuf);
	conn->rbuf = NULL;

	/* No more requests: let the writer drain what is in flight. */
	pthread_mutex_lock(&conn->qlock);
	conn->reader_done = true;
	pthread_cond_signal(&conn->wcond);
	pthread_mutex_unlock(&conn->qlock);
	pthread_join(conn->writer, NULL);
	conn->writer_started = false;
}
