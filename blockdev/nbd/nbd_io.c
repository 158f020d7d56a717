/*
 * nbd_io.c - whole reads and writes on a connection: on its blocking
 * socket, or through its TLS session once NBD_OPT_STARTTLS succeeded.
 *
 * Sockets stay blocking: each connection has its own reader and writer
 * thread, so blocking is how a slow client slows only itself.  MSG_NOSIGNAL
 * keeps a client that hangs up from killing the server with SIGPIPE.  The
 * plain path is the system call alone; TLS costs one test of conn->tls.
 * In the transmission phase the reader receives into the connection's
 * buffer (conn->rbuf): one receive brings in every request header the
 * client has sent so far, instead of one system call per header.  Not
 * during the negotiation: bytes received ahead there could be the TLS
 * handshake's, which the session must read itself.
 */
#include "nbd_server.h"
#include "mono.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

void nbd_conn_unhold(struct nbd_conn *conn)
{
	if (conn->holding)
		atoll_release();
}

void nbd_conn_rehold(struct nbd_conn *conn)
{
	if (conn->holding)
		atoll_hold();
}

/* One receive of at most len bytes into buf: n > 0, 0 at EOF, or -errno
 * (-ETIMEDOUT when the socket's SO_RCVTIMEO passed with nothing read). */
static ssize_t conn_recv(struct nbd_conn *conn, void *buf, size_t len)
{
	for (;;) {
		ssize_t n;

		/* The requests issued since the last receive leave now,
		 * together: this may block. */
		nbd_conn_unhold(conn);
		if (conn->tls) {
			n = nbd_tls_recv(conn->tls, buf, len);
			nbd_conn_rehold(conn);
			return n;
		}
		n = recv(conn->fd, buf, len, 0);
		nbd_conn_rehold(conn);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -ETIMEDOUT;
		return -errno;
	}
}

int nbd_conn_read_by(struct nbd_conn *conn, void *buf, size_t len, uint64_t deadline_ms)
{
	uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		struct nbd_rbuf *rb = conn->rbuf;
		ssize_t n;

		if (rb && rb->pos < rb->len) {
			/* what an earlier receive brought in first */
			size_t k = rb->len - rb->pos < len - done ? rb->len - rb->pos : len - done;

			memcpy(p + done, rb->data + rb->pos, k);
			rb->pos += k;
			done += k;
			continue;
		}
		if (rb && len - done < NBD_RBUF_SIZE / 2) {
			/* a small read: receive as much as has come, for the
			 * requests behind this one too */
			n = conn_recv(conn, rb->data, NBD_RBUF_SIZE);
			if (n > 0) {
				rb->pos = 0;
				rb->len = (size_t)n;
				continue;
			}
		} else {
			n = conn_recv(conn, p + done, len - done);
			if (n > 0) {
				done += (size_t)n;
				continue;
			}
		}
		if (n == 0)
			return done == 0 ? -ENODATA : -ECONNRESET;
		if (n != -ETIMEDOUT)
			return (int)n;
		if (deadline_ms == NBD_NO_DEADLINE || (deadline_ms && mono_now_ms() < deadline_ms))
			continue;
		return -ETIMEDOUT;
	}
	return 0;
}

int nbd_conn_read(struct nbd_conn *conn, void *buf, size_t len)
{
	return nbd_conn_read_by(conn, buf, len, 0);
}

int nbd_conn_write(struct nbd_conn *conn, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t done = 0;

	if (conn->tls)
		return nbd_tls_send(conn->tls, buf, len);
	while (done < len) {
		ssize_t n = send(conn->fd, p + done, len - done, MSG_NOSIGNAL);

		if (n >= 0) {
			done += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -ETIMEDOUT;
		return -errno;
	}
	return 0;
}
