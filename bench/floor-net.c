/*
 * floor-net.c - floor-bench's wire: frames as atoll's crc wire mode sends
 * them and one epoll loop per process over non-blocking sockets, built
 * the way lib/messenger.c is (doc/messenger.md) so that the floor pays
 * what the messenger must: the frames queued in a pass leave together in
 * one sendmsg per connection; small frames are read many at a time into
 * a 64 KiB buffer and copied into their own 4 KiB-aligned buffer, a big
 * payload's rest is read straight into its buffer; every header and
 * payload crc is checked.  Payload buffers come from a free list of one
 * size, used by the loop thread only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "crc32c.h"
#include "floor.h"

void *fl_alloc(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, ALIGN, bytes))
		fl_die("out of memory (%zu bytes)", bytes);
	return p;
}

/* The payload buffers: all of o->size bytes, 4 KiB-aligned for O_DIRECT;
 * used by the loop thread only (the disk thread hands them back through
 * the done list). */
void *fl_buf_get(struct node *n)
{
	void *b = n->pool;

	if (!b)
		return fl_alloc(n->o->size);
	n->pool = *(void **)b;
	return b;
}

void fl_buf_put(struct node *n, void *b)
{
	*(void **)b = n->pool;
	n->pool = b;
}

struct hdr fl_hdr(uint16_t type, uint64_t tid, uint64_t off, uint32_t len,
		  uint32_t dcrc, uint32_t rlen)
{
	struct hdr h = { .magic = MAGIC, .type = type, .tid = tid, .off = off, .len = len,
			 .dcrc = dcrc, .rlen = rlen };

	h.hcrc = atoll__crc32c(0, &h, offsetof(struct hdr, hcrc));
	return h;
}

/* ---- sending ---- */

void fl_tx_push(struct node *n, struct conn *c, const struct hdr *h, const char *data,
		void *release)
{
	struct txe *e;

	if (c->txn == TX_CAP)
		fl_die("more than %d frames queued for %s", TX_CAP, c->peer);
	e = &c->tx[(c->txhead + c->txn++) % TX_CAP];
	e->h = *h;
	e->data = data;
	e->release = release;
	if (!c->dirty) {
		c->dirty = true;
		n->dirty[n->ndirty++] = c;
	}
}

static void iov_add(struct iovec *iov, int *k, const void *p, size_t len, size_t *skip)
{
	if (*skip >= len) {
		*skip -= len;
		return;
	}
	iov[*k].iov_base = (char *)p + *skip;
	iov[(*k)++].iov_len = len - *skip;
	*skip = 0;
}

static void watch(struct node *n, struct conn *c, bool out)
{
	struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0),
				  .data.u64 = (uint64_t)(c - n->conn) };

	if (out == c->out)
		return;
	if (epoll_ctl(n->ep, EPOLL_CTL_MOD, c->fd, &ev))
		fl_die("epoll_ctl: %s", strerror(errno));
	c->out = out;
}

/* Writes the queued frames, many per sendmsg, until done or the socket is
 * full (then EPOLLOUT says when to go on). */
static void conn_flush(struct node *n, struct conn *c)
{
	while (c->txn) {
		struct iovec iov[IOV_SEND];
		struct msghdr m = { .msg_iov = iov };
		size_t skip = c->txoff, total = 0;
		ssize_t r;
		int k = 0;

		for (unsigned i = 0; i < c->txn && k + 2 <= IOV_SEND; i++) {
			struct txe *e = &c->tx[(c->txhead + i) % TX_CAP];

			iov_add(iov, &k, &e->h, sizeof(e->h), &skip);
			if (e->h.len)
				iov_add(iov, &k, e->data, e->h.len, &skip);
		}
		for (int i = 0; i < k; i++)
			total += iov[i].iov_len;
		m.msg_iovlen = (size_t)k;
		r = sendmsg(c->fd, &m, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			fl_die("sending to %s: %s", c->peer, strerror(errno));
		}
		for (size_t left = (size_t)r; left;) {
			struct txe *e = &c->tx[c->txhead];
			size_t rest = sizeof(e->h) + e->h.len - c->txoff;

			if (left < rest) {
				c->txoff += left;
				break;
			}
			left -= rest;
			c->txoff = 0;
			if (e->release)
				fl_buf_put(n, e->release);
			c->txhead = (c->txhead + 1) % TX_CAP;
			c->txn--;
		}
		if ((size_t)r < total)
			break;
	}
	watch(n, c, c->txn > 0);
}

/* ---- receiving ---- */

static void check_hdr(struct node *n, struct conn *c, const struct hdr *h)
{
	if (h->magic != MAGIC)
		fl_die("bad magic 0x%08x from %s", h->magic, c->peer);
	if (h->hcrc != atoll__crc32c(0, h, offsetof(struct hdr, hcrc)))
		fl_die("header crc mismatch from %s", c->peer);
	if (h->len > n->o->size || (!h->len && h->dcrc))
		fl_die("frame of %" PRIu32 " bytes from %s (at most %" PRIu32 ")", h->len, c->peer,
		       n->o->size);
}

static void payload_done(struct node *n, struct conn *c, const struct hdr *h, char *buf,
			 uint32_t crc)
{
	if (crc != h->dcrc)
		fl_die("payload crc mismatch from %s (tid %" PRIu64 ")", c->peer, h->tid);
	fl_dispatch(n, c, h, buf);
}

/* Takes the complete frames out of rbuf; a payload that is not all there
 * gets its buffer, and the rest of it is read straight into that. */
static void rx_parse(struct node *n, struct conn *c)
{
	size_t at = 0;

	while (c->rlen - at >= sizeof(struct hdr)) {
		struct hdr h;
		size_t avail;
		char *buf;

		memcpy(&h, c->rbuf + at, sizeof(h));
		check_hdr(n, c, &h);
		at += sizeof(h);
		if (!h.len) {
			fl_dispatch(n, c, &h, NULL);
			continue;
		}
		avail = c->rlen - at;
		buf = fl_buf_get(n);
		if (avail >= h.len) {
			memcpy(buf, c->rbuf + at, h.len);
			at += h.len;
			payload_done(n, c, &h, buf, atoll__crc32c(0, buf, h.len));
			continue;
		}
		memcpy(buf, c->rbuf + at, avail);
		at += avail;
		c->cur = h;
		c->curbuf = buf;
		c->curhave = avail;
		c->curcrc = atoll__crc32c(0, buf, avail);
		break;
	}
	memmove(c->rbuf, c->rbuf + at, c->rlen - at);
	c->rlen -= at;
}

/* Reads what the socket holds; false at end of stream. */
static bool conn_read(struct node *n, struct conn *c)
{
	for (;;) {
		struct iovec iov[2];
		size_t want = 0, got;
		ssize_t r;
		int k = 0;

		if (c->curbuf) {
			iov[k].iov_base = c->curbuf + c->curhave;
			iov[k++].iov_len = c->cur.len - c->curhave;
		}
		iov[k].iov_base = c->rbuf + c->rlen;
		iov[k++].iov_len = RBUF_SIZE - c->rlen;
		for (int i = 0; i < k; i++)
			want += iov[i].iov_len;
		r = readv(c->fd, iov, k);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return true;
			fl_die("reading from %s: %s", c->peer, strerror(errno));
		}
		if (!r)
			return false;
		got = (size_t)r;
		if (c->curbuf) {
			size_t part = c->cur.len - c->curhave;

			if (part > got)
				part = got;
			c->curcrc = atoll__crc32c(c->curcrc, c->curbuf + c->curhave, part);
			c->curhave += part;
			got -= part;
			if (c->curhave == c->cur.len) {
				char *b = c->curbuf;

				c->curbuf = NULL;
				payload_done(n, c, &c->cur, b, c->curcrc);
			}
		}
		c->rlen += got;
		rx_parse(n, c);
		if ((size_t)r < want)
			return true;	/* drained; level-triggered epoll tells of more */
	}
}

void fl_conn_init(struct node *n, int id, int fd, const char *peer)
{
	struct conn *c = &n->conn[id];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)id };
	int one = 1;

	c->fd = fd;
	c->peer = peer;
	c->rbuf = malloc(RBUF_SIZE);
	c->tx = calloc(TX_CAP, sizeof(*c->tx));
	if (!c->rbuf || !c->tx)
		fl_die("out of memory");
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) ||
	    epoll_ctl(n->ep, EPOLL_CTL_ADD, fd, &ev))
		fl_die("setting up the connection to %s: %s", peer, strerror(errno));
}

void fl_ep_add(struct node *n, int fd, uint64_t id)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = id };

	if (epoll_ctl(n->ep, EPOLL_CTL_ADD, fd, &ev))
		fl_die("epoll_ctl: %s", strerror(errno));
}

/* One epoll thread; each pass: the reads to submit and the frames queued
 * in the last pass (one sendmsg per connection), then the events: the
 * sockets, the disk's and libaio's completions. */
void fl_run_loop(struct node *n)
{
	uint64_t progress = fl_now_ns(), seen = 0;

	while (!n->finished && !(n->role == R_CLIENT && !n->active)) {
		struct epoll_event ev[16];
		int k;

		for (int sub = 0; sub < n->nrq;) {
			int r = io_submit(n->actx, n->nrq - sub, n->rq + sub);

			if (r == -EINTR || r == -EAGAIN)
				continue;
			if (r < 0)
				fl_die("io_submit: %s", strerror(-r));
			sub += r;
		}
		n->nrq = 0;
		for (int i = 0; i < n->ndirty; i++) {
			n->dirty[i]->dirty = false;
			conn_flush(n, n->dirty[i]);
		}
		n->ndirty = 0;
		k = epoll_wait(n->ep, ev, 16, 1000);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			fl_die("epoll_wait: %s", strerror(errno));
		}
		for (int i = 0; i < k && !n->finished; i++) {
			uint64_t id = ev[i].data.u64;
			struct conn *c = &n->conn[id < 3 ? id : 0];

			if (id == ID_DISK) {
				fl_disk_reap(n);
			} else if (id == ID_AIO) {
				fl_aio_reap(n);
			} else {
				if ((ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) &&
				    !conn_read(n, c)) {
					/* only the peer upstream of a server may leave, and
					 * only once it has every answer */
					if (n->role == R_CLIENT || id)
						fl_die("%s closed the connection", c->peer);
					n->finished = true;
				} else if (ev[i].events & EPOLLOUT) {
					conn_flush(n, c);
				}
			}
		}
		if (n->role == R_CLIENT) {
			if (n->ops_done != seen) {
				seen = n->ops_done;
				progress = fl_now_ns();
			} else if (fl_now_ns() - progress > STALL_NS) {
				fl_die("no answer from the primary for 30 s");
			}
		}
	}
}

/* ---- sockets ---- */

int fl_listen(const char *ip, struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	inet_pton(AF_INET, ip, &a->sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof(*a)) || listen(fd, 4) ||
	    getsockname(fd, (struct sockaddr *)a, &len))
		fl_die("cannot listen on %s: %s", ip, strerror(errno));
	return fd;
}

int fl_dial(const struct sockaddr_in *a, const char *peer)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)a, sizeof(*a)))
		fl_die("cannot connect to %s: %s", peer, strerror(errno));
	return fd;
}
