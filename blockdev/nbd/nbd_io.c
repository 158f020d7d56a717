/*
 * nbd_io.c - whole reads and writes on a connection: on its blocking
 * socket, or through its TLS session once NBD_OPT_STARTTLS succeeded.
 *
 * Sockets stay blocking: each connection has its own reader and writer
 * thread, so blocking is how a slow client slows only itself.  MSG_NOSIGNAL
 * keeps a client that hangs up from killing the server with SIGPIPE.  The
 * plain path is the system call alone; TLS costs one test of conn->tls.
 */
#include "nbd_server.h"
#include "mono.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

int nbd_conn_read_by(struct nbd_conn *conn, void *buf, size_t len, uint64_t deadline_ms)
{
	uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n;

		if (conn->tls) {
			n = nbd_tls_recv(conn->tls, p + done, len - done);
			if (n == -ETIMEDOUT)
				goto timed_out;
			if (n < 0)
				return (int)n;
		} else {
			n = recv(conn->fd, p + done, len - done, 0);
		}
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return done == 0 ? -ENODATA : -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
timed_out:	/* the socket's SO_RCVTIMEO passed with nothing read */
		if (deadline_ms == NBD_NO_DEADLINE ||
		    (deadline_ms && mono_now_ms() < deadline_ms))
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
