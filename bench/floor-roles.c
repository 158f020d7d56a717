/*
 * floor-roles.c - what each role of floor-bench does with a frame, and
 * the servers' disks.
 *
 * Writes: the primary checks the client's crc (floor-net.c), queues the
 * payload for its disk thread and forwards it, with the client's crc, to
 * both replicas at once.  The disk thread of each server takes every
 * write queued since its last flush, writes them with libaio (O_DIRECT,
 * into a file preallocated with fallocate) and fdatasyncs once for the
 * batch (group commit, as the store's commit thread does); the loop
 * acknowledges once the batch is durable.  The primary answers the client
 * once its own write and both replicas' acks are in.
 * Reads: the primary reads with libaio (O_DIRECT) from its loop thread,
 * computes the crc of the data and answers.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "floor.h"

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
			fl_die("io_submit: %s", strerror(-r));
		sub += r;
	}
	while (got < n) {
		int r = io_getevents(ctx, n - got, n - got, ev + got, NULL);

		if (r == -EINTR)
			continue;
		if (r < 0)
			fl_die("io_getevents: %s", strerror(-r));
		got += r;
	}
	for (int i = 0; i < n; i++) {
		struct dio *x = ev[i].data;

		if ((long)ev[i].res != (long)x->len)
			fl_die("write of %" PRIu32 " bytes at %" PRIu64 ": %s", x->len, x->off,
			       (long)ev[i].res < 0 ? strerror(-(int)(long)ev[i].res) : "short write");
	}
}

static void *disk_main(void *arg)
{
	struct disk *d = arg;
	struct iocb **cbs = calloc((size_t)d->cap, sizeof(*cbs));
	struct io_event *ev = calloc((size_t)d->cap, sizeof(*ev));

	if (!cbs || !ev)
		fl_die("out of memory");
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
				fl_die("more than %d writes queued", d->cap);
			io_prep_pwrite(&x->cb, d->fd, x->buf, x->len, (long long)x->off);
			x->cb.data = x;
			cbs[k++] = &x->cb;
			last = x;
		}
		aio_run(d->ctx, cbs, k, ev);
		if (fdatasync(d->fd))
			fl_die("fdatasync: %s", strerror(errno));
		pthread_mutex_lock(&d->mu);
		was_empty = !d->done;
		*d->dtail = batch;
		d->dtail = &last->next;
		pthread_mutex_unlock(&d->mu);
		if (was_empty && eventfd_write(d->efd, 1))
			fl_die("eventfd_write: %s", strerror(errno));
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
		fl_die("more than %d ops in flight", n->o->inflight);
	n->freeops = (struct op *)op->d.next;
	return op;
}

static void op_put(struct node *n, struct op *op)
{
	op->d.next = (struct dio *)n->freeops;	/* d is op's first member */
	n->freeops = op;
}

/* Primary: one of its write's three parts (own write, two acks) is done. */
static void primary_part_done(struct node *n, struct op *op)
{
	struct hdr h;

	if (--op->pending)
		return;
	h = fl_hdr(T_WRITE_ACK, op->tid, op->d.off, 0, 0, 0);
	fl_tx_push(n, &n->conn[0], &h, NULL, NULL);
	fl_buf_put(n, op->d.buf);
	op_put(n, op);
}

static void client_answer(struct node *n, struct conn *c, const struct hdr *h, char *payload)
{
	struct slot *s;
	uint64_t t = fl_now_ns();

	if (h->tid >= (uint64_t)n->o->inflight || !n->slots[h->tid].busy)
		fl_die("answer to an unknown tid %" PRIu64, h->tid);
	if (h->type == T_READ_REPLY) {
		if (h->len != n->o->size)
			fl_die("read reply of %" PRIu32 " bytes, asked %" PRIu32, h->len, n->o->size);
		fl_buf_put(n, payload);
	}
	s = &n->slots[h->tid];
	s->busy = false;
	n->ops_done++;
	n->lat_sum += t - s->t0;
	if (n->nlat == n->latcap) {
		n->latcap = n->latcap ? 2 * n->latcap : 65536;
		n->lat = realloc(n->lat, n->latcap * sizeof(*n->lat));
		if (!n->lat)
			fl_die("out of memory");
	}
	n->lat[n->nlat++] = (float)(t - s->t0) / 1e6f;
	n->t_last = t;
	if (t < n->t_end)
		fl_client_start(n, s);
	else
		n->active--;
}

void fl_dispatch(struct node *n, struct conn *c, const struct hdr *h, char *payload)
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
		if (c != &n->conn[0] || h->len != o->size || h->off % ALIGN ||
		    h->off + h->len > o->file_size)
			fl_die("write of %" PRIu32 " bytes at %" PRIu64 " from %s", h->len, h->off,
			       c->peer);
		op = op_get(n);
		op->tid = h->tid;
		op->d.buf = payload;
		op->d.off = h->off;
		op->d.len = h->len;
		if (n->role == R_PRIMARY) {
			op->pending = 3;
			f = fl_hdr(T_REP, (uint64_t)(op - n->ops), h->off, h->len, h->dcrc, 0);
			fl_tx_push(n, &n->conn[1], &f, payload, NULL);
			fl_tx_push(n, &n->conn[2], &f, payload, NULL);
		}
		disk_queue(&n->disk, &op->d);
		return;
	case R_PRIMARY * 16 + T_REP_ACK:
		if (c == &n->conn[0] || h->tid >= (uint64_t)o->inflight ||
		    n->ops[h->tid].pending <= 0)
			fl_die("replica ack for tid %" PRIu64 " from %s", h->tid, c->peer);
		primary_part_done(n, &n->ops[h->tid]);
		return;
	case R_PRIMARY * 16 + T_READ:
		if (o->write || h->rlen != o->size || h->off % ALIGN ||
		    h->off + h->rlen > o->file_size)
			fl_die("read of %" PRIu32 " bytes at %" PRIu64 " from %s", h->rlen, h->off,
			       c->peer);
		op = op_get(n);
		op->tid = h->tid;
		op->d.buf = fl_buf_get(n);
		op->d.off = h->off;
		op->d.len = h->rlen;
		io_prep_pread(&op->d.cb, n->fd, op->d.buf, op->d.len, (long long)op->d.off);
		io_set_eventfd(&op->d.cb, n->aefd);
		op->d.cb.data = op;
		n->rq[n->nrq++] = &op->d.cb;
		return;
	}
	fl_die("unexpected frame type %u from %s", h->type, c->peer);
}

/* The loop: the disk thread's finished batches. */
void fl_disk_reap(struct node *n)
{
	struct dio *x, *next;
	eventfd_t v;

	if (eventfd_read(n->disk.efd, &v) && errno != EAGAIN)
		fl_die("eventfd_read: %s", strerror(errno));
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
		h = fl_hdr(T_REP_ACK, op->tid, op->d.off, 0, 0, 0);
		fl_tx_push(n, &n->conn[0], &h, NULL, NULL);
		fl_buf_put(n, op->d.buf);
		op_put(n, op);
	}
}

/* The loop, primary of a read workload: the reads libaio finished. */
void fl_aio_reap(struct node *n)
{
	struct io_event ev[64];
	eventfd_t v;

	if (eventfd_read(n->aefd, &v)) {
		if (errno == EAGAIN)
			return;
		fl_die("eventfd_read: %s", strerror(errno));
	}
	while (v) {
		int r = io_getevents(n->actx, 1, v < 64 ? (long)v : 64, ev, NULL);

		if (r == -EINTR)
			continue;
		if (r < 0)
			fl_die("io_getevents: %s", strerror(-r));
		v -= (eventfd_t)r;
		for (int i = 0; i < r; i++) {
			struct op *op = ev[i].data;
			struct hdr h;

			if ((long)ev[i].res != (long)op->d.len)
				fl_die("read of %" PRIu32 " bytes at %" PRIu64 ": %s", op->d.len,
				       op->d.off, (long)ev[i].res < 0 ?
				       strerror(-(int)(long)ev[i].res) : "short read");
			h = fl_hdr(T_READ_REPLY, op->tid, op->d.off, op->d.len,
				   atoll__crc32c(0, op->d.buf, op->d.len), 0);
			fl_tx_push(n, &n->conn[0], &h, op->d.buf, op->d.buf);
			op_put(n, op);
		}
	}
}

void fl_client_start(struct node *n, struct slot *s)
{
	const struct opts *o = n->o;
	struct hdr h;
	uint64_t tid = (uint64_t)(s - n->slots), off;

	s->busy = true;
	s->t0 = fl_now_ns();
	if (o->write) {
		off = n->next_off;
		n->next_off = (n->next_off + o->size) % o->file_size;
		memcpy(s->buf, &n->seq, sizeof(n->seq));	/* every payload differs */
		n->seq++;
		h = fl_hdr(T_WRITE, tid, off, o->size, atoll__crc32c(0, s->buf, o->size), 0);
		fl_tx_push(n, &n->conn[0], &h, s->buf, NULL);
		return;
	}
	n->rnd ^= n->rnd << 13;		/* xorshift64 */
	n->rnd ^= n->rnd >> 7;
	n->rnd ^= n->rnd << 17;
	off = n->rnd % (o->file_size / o->size) * o->size;
	h = fl_hdr(T_READ, tid, off, 0, 0, o->size);
	fl_tx_push(n, &n->conn[0], &h, NULL, NULL);
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
		fl_die("cannot create a file in '%s' with O_DIRECT: %s", o->dir, strerror(errno));
	if (fallocate(fd, 0, 0, (off_t)o->file_size))
		fl_die("cannot preallocate %" PRIu64 " bytes in '%s': %s", o->file_size, o->dir,
		       strerror(errno));
	buf = fl_alloc(4 << 20);
	for (size_t i = 0; i < (4 << 20) / sizeof(uint64_t); i++)
		((uint64_t *)buf)[i] = i * 0x9e3779b97f4a7c15ull;
	for (uint64_t off = 0; off < o->file_size; off += 4 << 20) {
		size_t len = o->file_size - off < (4 << 20) ? o->file_size - off : 4 << 20;

		memcpy(buf, &off, sizeof(off));
		errno = 0;
		if (pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
			fl_die("prefilling the file: %s", errno ? strerror(errno) : "short write");
	}
	free(buf);
	if (fdatasync(fd))
		fl_die("prefilling the file: %s", strerror(errno));
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (o->keep && linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW))
		fl_die("cannot name the prefilled file '%s': %s", path, strerror(errno));
	return fd;
}

/* A forked server: its file, its peers, ready, then the loop until its
 * upstream peer leaves. */
void fl_server(const struct opts *o, enum role role, const char *path, int lfd,
	       int readyfd, const struct sockaddr_in *reps)
{
	struct node n = { .role = role, .o = o, .fd = -1 };
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != fl_parent_pid)
		exit(1);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	prctl(PR_SET_NAME, role == R_PRIMARY ? "floor-primary" : "floor-replica");
	n.ep = epoll_create1(EPOLL_CLOEXEC);
	n.ops = calloc((size_t)o->inflight, sizeof(*n.ops));
	if (n.ep < 0 || !n.ops)
		fl_die("set-up: %s", strerror(errno));
	for (int i = o->inflight - 1; i >= 0; i--)
		op_put(&n, &n.ops[i]);
	if (o->write) {
		/* unlinked at once: the file goes whatever happens to us */
		n.fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
		if (n.fd < 0)
			fl_die("cannot create '%s' with O_DIRECT: %s", path, strerror(errno));
		unlink(path);
		if (fallocate(n.fd, 0, 0, (off_t)o->file_size))
			fl_die("cannot preallocate %" PRIu64 " bytes for '%s': %s", o->file_size,
			       path, strerror(errno));
		n.disk = (struct disk){ .fd = n.fd, .cap = o->inflight };
		n.disk.qtail = &n.disk.q;
		n.disk.dtail = &n.disk.done;
		n.disk.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (n.disk.efd < 0 || io_setup(o->inflight, &n.disk.ctx) ||
		    pthread_mutex_init(&n.disk.mu, NULL) || pthread_cond_init(&n.disk.cv, NULL) ||
		    pthread_create(&n.disk.th, NULL, disk_main, &n.disk))
			fl_die("starting the disk thread: %s", strerror(errno));
		fl_ep_add(&n, n.disk.efd, ID_DISK);
	} else {
		n.fd = open_read_file(o, path);
		n.aefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		n.rq = calloc((size_t)o->inflight, sizeof(*n.rq));
		if (n.aefd < 0 || !n.rq || io_setup(o->inflight, &n.actx))
			fl_die("setting up libaio: %s", strerror(errno));
		fl_ep_add(&n, n.aefd, ID_AIO);
	}
	if (role == R_PRIMARY && o->write) {
		fl_conn_init(&n, 1, fl_dial(&reps[0], "replica1"), "replica1");
		fl_conn_init(&n, 2, fl_dial(&reps[1], "replica2"), "replica2");
	}
	if (write(readyfd, "r", 1) != 1)
		fl_die("cannot tell the client it is ready: %s", strerror(errno));
	close(readyfd);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		fl_die("accept: %s", strerror(errno));
	close(lfd);
	fl_conn_init(&n, 0, fd, role == R_PRIMARY ? "the client" : "the primary");
	fl_run_loop(&n);
	if (o->write) {
		pthread_mutex_lock(&n.disk.mu);
		n.disk.stop = true;
		pthread_mutex_unlock(&n.disk.mu);
		pthread_cond_signal(&n.disk.cv);
		pthread_join(n.disk.th, NULL);
	}
	exit(0);
}
