/*
 * floor-bench.c - the floor of issue 36: what a replicated atoll write or
 * a read costs at the wire and disk level, with no atoll logic in between,
 * so that atoll's CPU per op can be held against it (doc/benchmarks.md,
 * "The floor").
 *
 *   floor-bench write4k|write4m|read4k|read4m [--seconds N] [--dir DIR]
 *               [--inflight N] [--file-size SIZE] [--keep]
 *
 * One command runs every role, each in its own process: the client (this
 * process) and, forked from it so that its rusage of its children counts
 * them (bench/cpumeter.py), a primary and two replicas (reads: the
 * primary alone).  They talk TCP over 127.0.0.2-4 with frames like
 * atoll's crc wire mode: a 40-byte header with its own crc32c, then the
 * payload, whose crc32c (lib/crc32c.h: isa-l) is in the header and
 * checked by every receiver.  Each process runs one epoll loop over
 * non-blocking sockets the way lib/messenger.c does: the frames queued
 * in a pass leave together in one sendmsg, small frames are read many at
 * a time into a 64 KiB buffer, a big payload straight into its own
 * 4 KiB-aligned buffer.
 *
 * Writes: the primary checks the client's crc, queues the payload for its
 * disk thread and forwards it, with the client's crc, to both replicas
 * at once.  The disk thread of each server takes every write queued since
 * its last flush, writes them with libaio (O_DIRECT, into a file
 * preallocated with fallocate) and fdatasyncs once for the batch (group
 * commit, as the store's commit thread does); the loop acknowledges once
 * the batch is durable.  The primary answers the client once its own
 * write and both replicas' acks are in.
 * Reads: the primary reads with libaio (O_DIRECT) from its loop thread,
 * computes the crc of the data and answers; the client checks it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libaio.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"

#define MAGIC		0x31524c46u	/* "FLR1" */
#define RBUF_SIZE	(64 * 1024)	/* small frames are read into this */
#define TX_CAP		4096		/* frames queued per connection */
#define IOV_SEND	128		/* iovecs per sendmsg, as the messenger */
#define INFLIGHT_MAX	1024
#define ALIGN		4096
#define STALL_NS	(30 * 1000000000ull)	/* no answer for this long: fail */
#define ID_DISK		8		/* epoll ids beside the connections 0..2 */
#define ID_AIO		9

enum { T_WRITE = 1, T_WRITE_ACK, T_REP, T_REP_ACK, T_READ, T_READ_REPLY };
enum role { R_CLIENT, R_PRIMARY, R_REPLICA };

/* The frame header, host byte order (both ends are this machine). */
struct hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t resv;
	uint64_t tid;
	uint64_t off;		/* file offset of the write or read */
	uint32_t len;		/* payload bytes after the header */
	uint32_t dcrc;		/* crc32c of the payload (0 when none) */
	uint32_t rlen;		/* T_READ: the bytes asked for */
	uint32_t hcrc;		/* crc32c of the 36 bytes before it */
};
_Static_assert(sizeof(struct hdr) == 40, "the header is 40 bytes");

struct opts {
	const char *workload;
	bool write;
	uint32_t size;		/* bytes per op */
	int inflight;
	double seconds;
	uint64_t file_size;
	const char *dir;
	bool keep;		/* reads: keep the prefilled file for the next run */
};

/* One queued frame; data stays the caller's until sent, then release (if
 * not NULL) goes back to the pool. */
struct txe {
	struct hdr h;
	const char *data;
	void *release;
};

struct conn {
	int fd;
	const char *peer;	/* in messages */
	char *rbuf;		/* RBUF_SIZE bytes, rlen of them received */
	size_t rlen;
	struct hdr cur;		/* the frame whose payload is read into curbuf */
	char *curbuf;
	size_t curhave;
	uint32_t curcrc;	/* crc of curbuf's first curhave bytes */
	struct txe *tx;		/* ring of TX_CAP: txn frames from txhead */
	unsigned txhead, txn;
	size_t txoff;		/* bytes of tx[txhead] already sent */
	bool out;		/* EPOLLOUT watched */
	bool dirty;		/* on the node's list to flush at the end of the pass */
};

/* A write for the disk thread (the first member of struct op). */
struct dio {
	struct dio *next;
	struct iocb cb;
	void *buf;
	uint64_t off;
	uint32_t len;
};

/* The disk thread of a server: group commit of the writes the loop queues.
 * mu protects q, done, waiting and stop. */
struct disk {
	int fd;
	int efd;		/* the loop's eventfd: written when done turns non-empty */
	int cap;
	io_context_t ctx;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct dio *q, **qtail;
	struct dio *done, **dtail;
	bool waiting, stop;
};

/* An op in a server: a write (disk, then the acks) or a read. */
struct op {
	struct dio d;
	uint64_t tid;		/* the sender's */
	int pending;		/* primary: own write + replica acks still missing */
};

struct slot {			/* the client's ops in flight */
	uint64_t t0;
	char *buf;		/* writes: the payload */
	bool busy;
};

struct node {
	enum role role;
	const struct opts *o;
	int ep;
	struct conn conn[3];	/* client: [0] primary; primary: [0] client, [1] [2] replicas;
				 * replica: [0] primary */
	struct conn *dirty[3];
	int ndirty;
	void *pool;		/* free payload buffers of o->size bytes */
	bool finished;
	/* servers */
	int fd;			/* the data file */
	struct disk disk;
	struct op *ops, *freeops;
	io_context_t actx;	/* primary, reads: libaio on the loop thread */
	int aefd;
	struct iocb **rq;	/* reads to submit at the end of the pass */
	int nrq;
	/* client */
	struct slot *slots;
	int active;
	uint64_t seq, next_off, rnd, t_start, t_end, t_last, ops_done, lat_sum;
	float *lat;
	size_t nlat, latcap;
};

static const char *role_name = "client";
static pid_t parent_pid;
static pid_t kids[3];
static const char *kid_names[3];
static int nkids;
static char files[3][PATH_MAX + 64];	/* the parent unlinks these at the end */
static int nfiles;

static void cleanup(void)
{
	for (int i = 0; i < nkids; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	for (int i = 0; i < nkids; i++)
		if (kids[i] > 0)
			waitpid(kids[i], NULL, 0);
	nkids = 0;
	for (int i = 0; i < nfiles; i++)
		unlink(files[i]);
	nfiles = 0;
}

static void on_signal(int sig)
{
	cleanup();			/* kill, waitpid and unlink are async-signal-safe */
	_exit(128 + sig);
}

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "floor-bench: %s: ", role_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (getpid() == parent_pid)
		cleanup();
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *alloc_aligned(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, ALIGN, bytes))
		die("out of memory (%zu bytes)", bytes);
	return p;
}

/* The payload buffers: all of o->size bytes, 4 KiB-aligned for O_DIRECT;
 * used by the loop thread only (the disk thread hands them back through
 * the done list). */
static void *buf_get(struct node *n)
{
	void *b = n->pool;

	if (!b)
		return alloc_aligned(n->o->size);
	n->pool = *(void **)b;
	return b;
}

static void buf_put(struct node *n, void *b)
{
	*(void **)b = n->pool;
	n->pool = b;
}

static struct hdr hdr_make(uint16_t type, uint64_t tid, uint64_t off, uint32_t len,
			   uint32_t dcrc, uint32_t rlen)
{
	struct hdr h = { .magic = MAGIC, .type = type, .tid = tid, .off = off, .len = len,
			 .dcrc = dcrc, .rlen = rlen };

	h.hcrc = atoll__crc32c(0, &h, offsetof(struct hdr, hcrc));
	return h;
}

/* ---- sending ---- */

static void tx_push(struct node *n, struct conn *c, const struct hdr *h, const char *data,
		    void *release)
{
	struct txe *e;

	if (c->txn == TX_CAP)
		die("more than %d frames queued for %s", TX_CAP, c->peer);
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
		die("epoll_ctl: %s", strerror(errno));
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
			die("sending to %s: %s", c->peer, strerror(errno));
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
				buf_put(n, e->release);
			c->txhead = (c->txhead + 1) % TX_CAP;
			c->txn--;
		}
		if ((size_t)r < total)
			break;
	}
	watch(n, c, c->txn > 0);
}

/* ---- receiving ---- */

static void dispatch(struct node *n, struct conn *c, const struct hdr *h, char *payload);

static void check_hdr(struct node *n, struct conn *c, const struct hdr *h)
{
	if (h->magic != MAGIC)
		die("bad magic 0x%08x from %s", h->magic, c->peer);
	if (h->hcrc != atoll__crc32c(0, h, offsetof(struct hdr, hcrc)))
		die("header crc mismatch from %s", c->peer);
	if (h->len > n->o->size || (!h->len && h->dcrc))
		die("frame of %" PRIu32 " bytes from %s (at most %" PRIu32 ")", h->len, c->peer,
		    n->o->size);
}

static void payload_done(struct node *n, struct conn *c, const struct hdr *h, char *buf,
			 uint32_t crc)
{
	if (crc != h->dcrc)
		die("payload crc mismatch from %s (tid %" PRIu64 ")", c->peer, h->tid);
	dispatch(n, c, h, buf);
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
			dispatch(n, c, &h, NULL);
			continue;
		}
		avail = c->rlen - at;
		buf = buf_get(n);
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
			die("reading from %s: %s", c->peer, strerror(errno));
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

/* ---- the disk thread (writes) ---- */

/* Submits n iocbs and waits for them all; any short or failed one ends
 * the process. */
static void aio_run(io_context_t ctx, struct iocb **cbs, int n, struct io_event *ev)
{
	int sub = 0, got = 0;

	while (sub < n) {
		int r = io_submit(ctx, n - sub, cbs + sub);

		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r < 0)
			die("io_submit: %s", strerror(-r));
		sub += r;
	}
	while (got < n) {
		int r = io_getevents(ctx, n - got, n - got, ev + got, NULL);

		if (r == -EINTR)
			continue;
		if (r < 0)
			die("io_getevents: %s", strerror(-r));
		got += r;
	}
	for (int i = 0; i < n; i++) {
		struct dio *x = ev[i].data;

		if ((long)ev[i].res != (long)x->len)
			die("write of %" PRIu32 " bytes at %" PRIu64 ": %s", x->len, x->off,
			    (long)ev[i].res < 0 ? strerror(-(int)(long)ev[i].res) : "short write");
	}
}

static void *disk_main(void *arg)
{
	struct disk *d = arg;
	struct iocb **cbs = calloc((size_t)d->cap, sizeof(*cbs));
	struct io_event *ev = calloc((size_t)d->cap, sizeof(*ev));

	if (!cbs || !ev)
		die("out of memory");
	prctl(PR_SET_NAME, "floor-disk");
	for (;;) {
		struct dio *batch, *last = NULL;
		bool was_empty;
		int k = 0;

		pthread_mutex_lock(&d->mu);
		while (!d->q && !d->stop) {
			d->waiting = true;
			pthread_cond_wait(&d->cv, &d->mu);
			d->waiting = false;
		}
		batch = d->q;
		d->q = NULL;
		d->qtail = &d->q;
		pthread_mutex_unlock(&d->mu);
		if (!batch)
			break;
		for (struct dio *x = batch; x; x = x->next) {
			if (k == d->cap)
				die("more than %d writes queued", d->cap);
			io_prep_pwrite(&x->cb, d->fd, x->buf, x->len, (long long)x->off);
			x->cb.data = x;
			cbs[k++] = &x->cb;
			last = x;
		}
		aio_run(d->ctx, cbs, k, ev);
		if (fdatasync(d->fd))
			die("fdatasync: %s", strerror(errno));
		pthread_mutex_lock(&d->mu);
		was_empty = !d->done;
		*d->dtail = batch;
		d->dtail = &last->next;
		pthread_mutex_unlock(&d->mu);
		if (was_empty && eventfd_write(d->efd, 1))
			die("eventfd_write: %s", strerror(errno));
	}
	free(cbs);
	free(ev);
	return NULL;
}

static void disk_queue(struct disk *d, struct dio *x)
{
	bool wake;

	x->next = NULL;
	pthread_mutex_lock(&d->mu);
	*d->qtail = x;
	d->qtail = &x->next;
	wake = d->waiting;
	pthread_mutex_unlock(&d->mu);
	if (wake)
		pthread_cond_signal(&d->cv);
}

/* ---- the roles ---- */

static struct op *op_get(struct node *n)
{
	struct op *op = n->freeops;

	if (!op)
		die("more than %d ops in flight", n->o->inflight);
	n->freeops = (struct op *)op->d.next;
	return op;
}

static void op_put(struct node *n, struct op *op)
{
	op->d.next = &n->freeops->d;
	n->freeops = op;
}

/* Primary: one of its write's three parts (own write, two acks) is done. */
static void primary_part_done(struct node *n, struct op *op)
{
	struct hdr h;

	if (--op->pending)
		return;
	h = hdr_make(T_WRITE_ACK, op->tid, op->d.off, 0, 0, 0);
	tx_push(n, &n->conn[0], &h, NULL, NULL);
	buf_put(n, op->d.buf);
	op_put(n, op);
}

static void client_start(struct node *n, struct slot *s);

static void client_answer(struct node *n, struct conn *c, const struct hdr *h, char *payload)
{
	struct slot *s;
	uint64_t t = now_ns();

	if (h->tid >= (uint64_t)n->o->inflight || !n->slots[h->tid].busy)
		die("answer to an unknown tid %" PRIu64, h->tid);
	if (h->type == T_READ_REPLY) {
		if (h->len != n->o->size)
			die("read reply of %" PRIu32 " bytes, asked %" PRIu32, h->len, n->o->size);
		buf_put(n, payload);
	}
	s = &n->slots[h->tid];
	s->busy = false;
	n->ops_done++;
	n->lat_sum += t - s->t0;
	if (n->nlat == n->latcap) {
		n->latcap = n->latcap ? 2 * n->latcap : 65536;
		n->lat = realloc(n->lat, n->latcap * sizeof(*n->lat));
		if (!n->lat)
			die("out of memory");
	}
	n->lat[n->nlat++] = (float)(t - s->t0) / 1e6f;
	n->t_last = t;
	if (t < n->t_end)
		client_start(n, s);
	else
		n->active--;
}

static void dispatch(struct node *n, struct conn *c, const struct hdr *h, char *payload)
{
	const struct opts *o = n->o;
	struct op *op;
	struct hdr f;

	switch (n->role * 16 + h->type) {
	case R_CLIENT * 16 + T_WRITE_ACK:
	case R_CLIENT * 16 + T_READ_REPLY:
		client_answer(n, c, h, payload);
		return;
	case R_PRIMARY * 16 + T_WRITE:
	case R_REPLICA * 16 + T_REP:
		if (c != &n->conn[0] || h->len != o->size || h->off % ALIGN || h->off + h->len > o->file_size)
			die("write of %" PRIu32 " bytes at %" PRIu64 " from %s", h->len, h->off,
			    c->peer);
		op = op_get(n);
		op->tid = h->tid;
		op->d.buf = payload;
		op->d.off = h->off;
		op->d.len = h->len;
		if (n->role == R_PRIMARY) {
			op->pending = 3;
			f = hdr_make(T_REP, (uint64_t)(op - n->ops), h->off, h->len, h->dcrc, 0);
			tx_push(n, &n->conn[1], &f, payload, NULL);
			tx_push(n, &n->conn[2], &f, payload, NULL);
		}
		disk_queue(&n->disk, &op->d);
		return;
	case R_PRIMARY * 16 + T_REP_ACK:
		if (c == &n->conn[0] || h->tid >= (uint64_t)o->inflight ||
		    n->ops[h->tid].pending <= 0)
			die("replica ack for tid %" PRIu64 " from %s", h->tid, c->peer);
		primary_part_done(n, &n->ops[h->tid]);
		return;
	case R_PRIMARY * 16 + T_READ:
		if (o->write || h->rlen != o->size || h->off % ALIGN ||
		    h->off + h->rlen > o->file_size)
			die("read of %" PRIu32 " bytes at %" PRIu64 " from %s", h->rlen, h->off,
			    c->peer);
		op = op_get(n);
		op->tid = h->tid;
		op->d.buf = buf_get(n);
		op->d.off = h->off;
		op->d.len = h->rlen;
		io_prep_pread(&op->d.cb, n->fd, op->d.buf, op->d.len, (long long)op->d.off);
		io_set_eventfd(&op->d.cb, n->aefd);
		op->d.cb.data = op;
		n->rq[n->nrq++] = &op->d.cb;
		return;
	}
	die("unexpected frame type %u from %s", h->type, c->peer);
}

/* The loop: the disk thread's finished batches. */
static void disk_reap(struct node *n)
{
	struct dio *x, *next;
	eventfd_t v;

	if (eventfd_read(n->disk.efd, &v) && errno != EAGAIN)
		die("eventfd_read: %s", strerror(errno));
	pthread_mutex_lock(&n->disk.mu);
	x = n->disk.done;
	n->disk.done = NULL;
	n->disk.dtail = &n->disk.done;
	pthread_mutex_unlock(&n->disk.mu);
	for (; x; x = next) {
		struct op *op = (struct op *)x;
		struct hdr h;

		next = x->next;
		if (n->role == R_PRIMARY) {
			primary_part_done(n, op);
			continue;
		}
		h = hdr_make(T_REP_ACK, op->tid, op->d.off, 0, 0, 0);
		tx_push(n, &n->conn[0], &h, NULL, NULL);
		buf_put(n, op->d.buf);
		op_put(n, op);
	}
}

/* The loop, primary of a read workload: the reads libaio finished. */
static void aio_reap(struct node *n)
{
	struct io_event ev[64];
	eventfd_t v;

	if (eventfd_read(n->aefd, &v)) {
		if (errno == EAGAIN)
			return;
		die("eventfd_read: %s", strerror(errno));
	}
	while (v) {
		int r = io_getevents(n->actx, 1, v < 64 ? (long)v : 64, ev, NULL);

		if (r == -EINTR)
			continue;
		if (r < 0)
			die("io_getevents: %s", strerror(-r));
		v -= (eventfd_t)r;
		for (int i = 0; i < r; i++) {
			struct op *op = ev[i].data;
			struct hdr h;

			if ((long)ev[i].res != (long)op->d.len)
				die("read of %" PRIu32 " bytes at %" PRIu64 ": %s", op->d.len,
				    op->d.off, (long)ev[i].res < 0 ?
				    strerror(-(int)(long)ev[i].res) : "short read");
			h = hdr_make(T_READ_REPLY, op->tid, op->d.off, op->d.len,
				     atoll__crc32c(0, op->d.buf, op->d.len), 0);
			tx_push(n, &n->conn[0], &h, op->d.buf, op->d.buf);
			op_put(n, op);
		}
	}
}

static void client_start(struct node *n, struct slot *s)
{
	const struct opts *o = n->o;
	struct hdr h;
	uint64_t tid = (uint64_t)(s - n->slots), off;

	s->busy = true;
	s->t0 = now_ns();
	if (o->write) {
		off = n->next_off;
		n->next_off = (n->next_off + o->size) % o->file_size;
		memcpy(s->buf, &n->seq, sizeof(n->seq));	/* every payload differs */
		n->seq++;
		h = hdr_make(T_WRITE, tid, off, o->size, atoll__crc32c(0, s->buf, o->size), 0);
		tx_push(n, &n->conn[0], &h, s->buf, NULL);
		return;
	}
	n->rnd ^= n->rnd << 13;		/* xorshift64 */
	n->rnd ^= n->rnd >> 7;
	n->rnd ^= n->rnd << 17;
	off = n->rnd % (o->file_size / o->size) * o->size;
	h = hdr_make(T_READ, tid, off, 0, 0, o->size);
	tx_push(n, &n->conn[0], &h, NULL, NULL);
}

static void conn_init(struct node *n, int id, int fd, const char *peer)
{
	struct conn *c = &n->conn[id];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)id };
	int one = 1;

	c->fd = fd;
	c->peer = peer;
	c->rbuf = malloc(RBUF_SIZE);
	c->tx = calloc(TX_CAP, sizeof(*c->tx));
	if (!c->rbuf || !c->tx)
		die("out of memory");
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) ||
	    epoll_ctl(n->ep, EPOLL_CTL_ADD, fd, &ev))
		die("setting up the connection to %s: %s", peer, strerror(errno));
}

static void ep_add(struct node *n, int fd, uint64_t id)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = id };

	if (epoll_ctl(n->ep, EPOLL_CTL_ADD, fd, &ev))
		die("epoll_ctl: %s", strerror(errno));
}

/* One epoll thread; each pass: the reads to submit and the frames queued
 * in the last pass (one sendmsg per connection), then the events: the
 * sockets, the disk's and libaio's completions. */
static void run_loop(struct node *n)
{
	uint64_t progress = now_ns(), seen = 0;

	while (!n->finished && !(n->role == R_CLIENT && !n->active)) {
		struct epoll_event ev[16];
		int k;

		for (int sub = 0; sub < n->nrq;) {
			int r = io_submit(n->actx, n->nrq - sub, n->rq + sub);

			if (r == -EINTR || r == -EAGAIN)
				continue;
			if (r < 0)
				die("io_submit: %s", strerror(-r));
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
			die("epoll_wait: %s", strerror(errno));
		}
		for (int i = 0; i < k && !n->finished; i++) {
			uint64_t id = ev[i].data.u64;
			struct conn *c = &n->conn[id < 3 ? id : 0];

			if (id == ID_DISK) {
				disk_reap(n);
			} else if (id == ID_AIO) {
				aio_reap(n);
			} else {
				if ((ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) &&
				    !conn_read(n, c)) {
					/* only the peer upstream of a server may leave, and
					 * only once it has every answer */
					if (n->role == R_CLIENT || id)
						die("%s closed the connection", c->peer);
					n->finished = true;
				} else if (ev[i].events & EPOLLOUT) {
					conn_flush(n, c);
				}
			}
		}
		if (n->role == R_CLIENT) {
			if (n->ops_done != seen) {
				seen = n->ops_done;
				progress = now_ns();
			} else if (now_ns() - progress > STALL_NS) {
				die("no answer from the primary for 30 s");
			}
		}
	}
}

/* ---- set-up of the processes ---- */

static int listen_on(const char *ip, struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	inet_pton(AF_INET, ip, &a->sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)a, sizeof(*a)) || listen(fd, 4) ||
	    getsockname(fd, (struct sockaddr *)a, &len))
		die("cannot listen on %s: %s", ip, strerror(errno));
	return fd;
}

static int dial(const struct sockaddr_in *a, const char *peer)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)a, sizeof(*a)))
		die("cannot connect to %s: %s", peer, strerror(errno));
	return fd;
}

/* The primary's file for the reads: the one a run with --keep left, or a
 * new one, unnamed (O_TMPFILE) so that nothing stays behind whatever
 * happens, prefilled, then named when kept. */
static int open_read_file(const struct opts *o, const char *path)
{
	char proc[64], *buf;
	struct stat st;
	int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);

	if (fd >= 0 && !fstat(fd, &st) && (uint64_t)st.st_size == o->file_size)
		return fd;
	if (fd >= 0)
		close(fd);
	fd = open(o->dir, O_TMPFILE | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0)
		die("cannot create a file in '%s' with O_DIRECT: %s", o->dir, strerror(errno));
	if (fallocate(fd, 0, 0, (off_t)o->file_size))
		die("cannot preallocate %" PRIu64 " bytes in '%s': %s", o->file_size, o->dir,
		    strerror(errno));
	buf = alloc_aligned(4 << 20);
	for (size_t i = 0; i < (4 << 20) / sizeof(uint64_t); i++)
		((uint64_t *)buf)[i] = i * 0x9e3779b97f4a7c15ull;
	for (uint64_t off = 0; off < o->file_size; off += 4 << 20) {
		size_t len = o->file_size - off < (4 << 20) ? o->file_size - off : 4 << 20;

		memcpy(buf, &off, sizeof(off));
		if (pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
			die("prefilling the file: %s", errno ? strerror(errno) : "short write");
	}
	free(buf);
	if (fdatasync(fd))
		die("prefilling the file: %s", strerror(errno));
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (o->keep && linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW))
		die("cannot name the prefilled file '%s': %s", path, strerror(errno));
	return fd;
}

/* A forked server: its file, its peers, ready, then the loop until its
 * upstream peer leaves. */
__attribute__((noreturn))
static void server(const struct opts *o, enum role role, const char *path, int lfd,
		   int readyfd, const struct sockaddr_in *reps)
{
	struct node n = { .role = role, .o = o, .fd = -1 };
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent_pid)
		exit(1);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	prctl(PR_SET_NAME, role == R_PRIMARY ? "floor-primary" : "floor-replica");
	n.ep = epoll_create1(EPOLL_CLOEXEC);
	n.ops = calloc((size_t)o->inflight, sizeof(*n.ops));
	if (n.ep < 0 || !n.ops)
		die("set-up: %s", strerror(errno));
	for (int i = o->inflight - 1; i >= 0; i--)
		op_put(&n, &n.ops[i]);
	if (o->write) {
		/* unlinked at once: the file goes whatever happens to us */
		n.fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
		if (n.fd < 0)
			die("cannot create '%s' with O_DIRECT: %s", path, strerror(errno));
		unlink(path);
		if (fallocate(n.fd, 0, 0, (off_t)o->file_size))
			die("cannot preallocate %" PRIu64 " bytes for '%s': %s", o->file_size,
			    path, strerror(errno));
		n.disk = (struct disk){ .fd = n.fd, .cap = o->inflight };
		n.disk.qtail = &n.disk.q;
		n.disk.dtail = &n.disk.done;
		n.disk.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (n.disk.efd < 0 || io_setup(o->inflight, &n.disk.ctx) ||
		    pthread_mutex_init(&n.disk.mu, NULL) || pthread_cond_init(&n.disk.cv, NULL) ||
		    pthread_create(&n.disk.th, NULL, disk_main, &n.disk))
			die("starting the disk thread: %s", strerror(errno));
		ep_add(&n, n.disk.efd, ID_DISK);
	} else {
		n.fd = open_read_file(o, path);
		n.aefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		n.rq = calloc((size_t)o->inflight, sizeof(*n.rq));
		if (n.aefd < 0 || !n.rq || io_setup(o->inflight, &n.actx))
			die("setting up libaio: %s", strerror(errno));
		ep_add(&n, n.aefd, ID_AIO);
	}
	if (role == R_PRIMARY && o->write) {
		conn_init(&n, 1, dial(&reps[0], "replica1"), "replica1");
		conn_init(&n, 2, dial(&reps[1], "replica2"), "replica2");
	}
	if (write(readyfd, "r", 1) != 1)
		die("cannot tell the client it is ready: %s", strerror(errno));
	close(readyfd);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		die("accept: %s", strerror(errno));
	close(lfd);
	conn_init(&n, 0, fd, role == R_PRIMARY ? "the client" : "the primary");
	run_loop(&n);
	if (o->write) {
		pthread_mutex_lock(&n.disk.mu);
		n.disk.stop = true;
		pthread_mutex_unlock(&n.disk.mu);
		pthread_cond_signal(&n.disk.cv);
		pthread_join(n.disk.th, NULL);
	}
	exit(0);
}

/* ---- the client and main ---- */

static void client(const struct opts *o, struct node *n, const struct sockaddr_in *primary)
{
	n->role = R_CLIENT;
	n->o = o;
	n->ep = epoll_create1(EPOLL_CLOEXEC);
	n->slots = calloc((size_t)o->inflight, sizeof(*n->slots));
	if (n->ep < 0 || !n->slots)
		die("set-up: %s", strerror(errno));
	for (int i = 0; o->write && i < o->inflight; i++) {
		n->slots[i].buf = alloc_aligned(o->size);
		for (size_t j = 0; j < o->size / sizeof(uint64_t); j++)
			((uint64_t *)n->slots[i].buf)[j] = (i + 1) * j * 0x9e3779b97f4a7c15ull;
	}
	n->rnd = now_ns() | 1;
	conn_init(n, 0, dial(primary, "the primary"), "the primary");
	n->t_start = now_ns();
	n->t_end = n->t_start + (uint64_t)(o->seconds * 1e9);
	n->active = o->inflight;
	for (int i = 0; i < o->inflight; i++)
		client_start(n, &n->slots[i]);
	run_loop(n);
	close(n->conn[0].fd);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: floor-bench WORKLOAD [--seconds N] [--dir DIR] [--inflight N]\n"
		"                   [--file-size SIZE] [--keep]\n"
		"\n"
		"The floor of issue 36: a client, a primary and two replicas (four processes,\n"
		"TCP on 127.0.0.2-4) doing what a replicated atoll write or a read does on the\n"
		"wire and the disk (crc32c-checked frames, O_DIRECT libaio, group commit with\n"
		"fdatasync), with nothing in between.  Prints one JSON object on stdout (ops,\n"
		"seconds, iops, MBps, lat_avg_ms, ...; the names of 'atoll bench --format json').\n"
		"\n"
		"workloads:\n"
		"  write4k   4 KiB writes, each to the next 4 KiB of the files, 16 in flight\n"
		"  write4m   4 MiB writes, the same way, 16 in flight\n"
		"  read4k    4 KiB reads at random offsets of a prefilled file, 32 in flight\n"
		"  read4m    4 MiB reads at random 4 MiB offsets, 16 in flight\n"
		"\n"
		"options:\n"
		"  --seconds N       how long to issue ops (default 10)\n"
		"  --dir DIR         the folder of the data files (default %s)\n"
		"  --inflight N      ops in flight, 1..%d\n"
		"  --file-size SIZE  bytes per file, with K, M or G: each server's file for\n"
		"                    writes (default 2G; the writes wrap around), the primary's\n"
		"                    prefilled file for reads (default 4G)\n"
		"  --keep            reads: keep the prefilled file (DIR/floor-bench-read.SIZE)\n"
		"                    and use it again next time instead of writing it anew\n",
		FLOOR_SCRATCH, INFLIGHT_MAX);
}

__attribute__((format(printf, 1, 2), noreturn))
static void bad(const char *fmt, ...)
{
	va_list ap;

	fputs("floor-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("; see floor-bench --help\n", stderr);
	exit(2);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		bad("--file-size takes a size like 4G, not '%s'", s);
	switch (*end) {
	case 'G': case 'g': v <<= 10;	/* fall through */
	case 'M': case 'm': v <<= 10;	/* fall through */
	case 'K': case 'k': v <<= 10;
		end++;
		break;
	}
	if (*end || v > (1ull << 50))
		bad("--file-size takes a size like 4G, not '%s'", s);
	return v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct { const char *name; bool write; uint32_t size; int inflight; } w[] = {
		{ "write4k", true, 4096, 16 }, { "write4m", true, 4 << 20, 16 },
		{ "read4k", false, 4096, 32 }, { "read4m", false, 4 << 20, 16 },
	};
	struct stat st;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			exit(0);
		}
	if (argc < 2)
		bad("no workload given");
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (!strcmp(argv[1], w[i].name)) {
			o->workload = w[i].name;
			o->write = w[i].write;
			o->size = w[i].size;
			o->inflight = w[i].inflight;
			o->file_size = w[i].write ? 2ull << 30 : 4ull << 30;
		}
	if (!o->workload)
		bad("unknown workload '%s' (write4k, write4m, read4k or read4m)", argv[1]);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!strcmp(a, "--keep")) {
			o->keep = true;
			continue;
		}
		if (strcmp(a, "--seconds") && strcmp(a, "--dir") && strcmp(a, "--inflight") &&
		    strcmp(a, "--file-size"))
			bad("unknown argument '%s'", a);
		if (!v)
			bad("%s needs a value", a);
		i++;
		if (!strcmp(a, "--dir")) {
			o->dir = v;
		} else if (!strcmp(a, "--file-size")) {
			o->file_size = parse_size(v);
		} else if (!strcmp(a, "--seconds")) {
			o->seconds = strtod(v, &end);
			if (*end || end == v || !(o->seconds > 0 && o->seconds <= 86400))
				bad("--seconds takes a number of seconds (0..86400], not '%s'", v);
		} else {
			long x = strtol(v, &end, 10);

			if (*end || end == v || x < 1 || x > INFLIGHT_MAX)
				bad("--inflight takes a number from 1 to %d, not '%s'", INFLIGHT_MAX, v);
			o->inflight = (int)x;
		}
	}
	if (o->file_size % o->size || o->file_size < (uint64_t)o->size * o->inflight)
		bad("--file-size must be a multiple of the op size (%" PRIu32 " bytes) and hold "
		    "the %d ops in flight", o->size, o->inflight);
	if (o->keep && o->write)
		bad("--keep is for the reads' prefilled file");
	if (!strcmp(o->dir, FLOOR_SCRATCH) && mkdir(o->dir, 0755) && errno != EEXIST)
		bad("cannot create the folder '%s': %s", o->dir, strerror(errno));
	if (strlen(o->dir) > PATH_MAX)
		bad("the folder's name is too long");
	if (stat(o->dir, &st) || !S_ISDIR(st.st_mode))
		bad("'%s' is not a folder", o->dir);
}

static void spawn(const struct opts *o, enum role role, const char *name, const char *path,
		  int lfd, const int *fds, int nfds, int readyfd, const struct sockaddr_in *reps)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		role_name = name;
		nkids = 0;	/* the parent's to stop and to clean */
		nfiles = 0;
		for (int i = 0; i < nfds; i++)
			if (fds[i] != lfd)
				close(fds[i]);
		server(o, role, path, lfd, readyfd, reps);
	}
	kid_names[nkids] = name;
	kids[nkids++] = pid;
}

static double tv_s(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct opts o = { .seconds = 10, .dir = FLOOR_SCRATCH };
	struct sigaction sa = { .sa_handler = on_signal };
	struct sockaddr_in ap, reps[2];
	struct node n = { 0 };
	struct rusage ru;
	double cpu[4], elapsed, total = 0;
	int fds[4], ready[2], got = 0;
	ssize_t r;
	char b[4];

	parse_args(argc, argv, &o);
	parent_pid = getpid();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o.write) {
		nfiles = 3;
		snprintf(files[0], sizeof(files[0]), "%s/floor-bench.%d.primary", o.dir, parent_pid);
		snprintf(files[1], sizeof(files[1]), "%s/floor-bench.%d.replica1", o.dir, parent_pid);
		snprintf(files[2], sizeof(files[2]), "%s/floor-bench.%d.replica2", o.dir, parent_pid);
	} else {
		/* named only with --keep (open_read_file); a run without it
		 * leaves nothing, not even the file an earlier one kept */
		nfiles = o.keep ? 0 : 1;
		snprintf(files[0], sizeof(files[0]), "%s/floor-bench-read.%" PRIu64, o.dir,
			 o.file_size);
	}
	fds[0] = listen_on("127.0.0.2", &ap);
	fds[1] = o.write ? listen_on("127.0.0.3", &reps[0]) : -1;
	fds[2] = o.write ? listen_on("127.0.0.4", &reps[1]) : -1;
	if (pipe2(ready, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	fds[3] = ready[0];
	if (o.write) {
		spawn(&o, R_REPLICA, "replica1", files[1], fds[1], fds, 4, ready[1], NULL);
		spawn(&o, R_REPLICA, "replica2", files[2], fds[2], fds, 4, ready[1], NULL);
	}
	spawn(&o, R_PRIMARY, "primary", files[0], fds[0], fds, 4, ready[1], reps);
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(ready[1]);
	/* each server writes a byte once ready and closes its end (or dies) */
	while ((r = read(ready[0], b, sizeof(b))) != 0) {
		if (r < 0 && errno != EINTR)
			die("waiting for the servers: %s", strerror(errno));
		got += r > 0 ? (int)r : 0;
	}
	close(ready[0]);
	if (got < nkids)
		die("a server failed to start (its message is above)");
	client(&o, &n, &ap);
	for (int i = 0; i < nkids; i++) {
		int st;

		if (wait4(kids[i], &st, 0, &ru) < 0)
			die("waiting for the %s: %s", kid_names[i], strerror(errno));
		kids[i] = 0;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			die("the %s failed", kid_names[i]);
		cpu[i + 1] = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
	}
	for (int i = 0; i < nfiles; i++)
		unlink(files[i]);
	nfiles = 0;
	getrusage(RUSAGE_SELF, &ru);
	cpu[0] = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
	if (!n.ops_done)
		die("no op finished");
	elapsed = (double)(n.t_last - n.t_start) / 1e9;
	qsort(n.lat, n.nlat, sizeof(*n.lat), cmp_float);
	printf("{\"workload\":\"%s\",\"seconds\":%.3f,\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64
	       ",\"op_size\":%" PRIu32 ",\"concurrency\":%d,\"file_size\":%" PRIu64
	       ",\"MBps\":%.3f,\"iops\":%.1f,\"lat_avg_ms\":%.4f,\"lat_p50_ms\":%.4f"
	       ",\"lat_p99_ms\":%.4f,\"lat_max_ms\":%.4f,\"cpu_s\":{\"client\":%.4f",
	       o.workload, elapsed, n.ops_done, n.ops_done * o.size, o.size, o.inflight,
	       o.file_size, (double)(n.ops_done * o.size) / 1048576.0 / elapsed,
	       (double)n.ops_done / elapsed, (double)n.lat_sum / (double)n.ops_done / 1e6,
	       n.lat[n.nlat / 2], n.lat[(size_t)((double)(n.nlat - 1) * 0.99)],
	       n.lat[n.nlat - 1], cpu[0]);
	total = cpu[0];
	for (int i = 0; i < nkids; i++) {
		printf(",\"%s\":%.4f", kid_names[i], cpu[i + 1]);
		total += cpu[i + 1];
	}
	printf("},\"process_cpu_us_per_op\":%.2f}\n", total / (double)n.ops_done * 1e6);
	return 0;
}
