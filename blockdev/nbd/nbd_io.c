/*
 * nbd_io.c - whole reads and writes on a connection's blocking socket.
 *
 * Sockets stay blocking: each connection has its own reader and writer
 * thread, so blocking is how a slow client slows only itself.  MSG_NOSIGNAL
 * keeps a client that hangs up from killing the server with SIGPIPE.
 */
#include "nbd_server.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/types.h>
#include <unistd.h>

int nbd_read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = recv(fd, p + done, len - done, 0);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return done == 0 ? -ENODATA : -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return -ETIMEDOUT;	/* SO_RCVTIMEO during negotiation */
		return -errno;
	}
	return 0;
}

int nbd_write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, p + done, len - done, MSG_NOSIGNAL);

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

int nbd_skip(int fd, size_t len)
{
	uint8_t scratch[4096];

	while (len > 0) {
		size_t n = len < sizeof(scratch) ? len : sizeof(scratch);
		int ret = nbd_read_full(fd, scratch, n);

		if (ret)
			return ret == -ENODATA ? -ECONNRESET : ret;
		len -= n;
	}
	return 0;
}

int nbd_write2(int fd, const void *a, size_t alen, const void *b, size_t blen)
{
	struct iovec iov[2] = {
		{ .iov_base = (void *)a, .iov_len = alen },
		{ .iov_base = (void *)b, .iov_len = blen },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = blen ? 2 : 1 };

	while (mh.msg_iovlen > 0) {
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (mh.msg_iovlen > 0 && (size_t)n >= mh.msg_iov[0].iov_len) {
			n -= (ssize_t)mh.msg_iov[0].iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen > 0) {
			mh.msg_iov[0].iov_base = (uint8_t *)mh.msg_iov[0].iov_base + n;
			mh.msg_iov[0].iov_len -= (size_t)n;
		}
	}
	return 0;
}
