/*
 * transport.c - libraft's connections between monitors, carried over the
 * atoll messenger as MT_MON_RAFT frames.
 *
 * libraft's disk and network layer (raft_uv) wants a byte stream per
 * connection (a uv_stream_t it reads and writes) and a transport that
 * dials and accepts them.  We give it one end of a socketpair per stream;
 * the other end ("pump") lives on the same libuv loop (the raft thread,
 * quorum.c) and is copied to and from MT_MON_RAFT frames on the
 * messenger connection to that monitor.  So Raft traffic gets what every
 * atoll connection gets: the fsid check, the peer's identity (only
 * MSG_ENTITY_MON peers may open a stream), the frame limits, keepalive.
 *
 * Frame (front): u8 kind, u8 from_dialer, u64 stream id; OPEN adds the
 * dialer's raft id and raft address; DATA carries the bytes as the
 * message's data; STATUS (stream 0) carries a member's raft id, applied
 * index, epoch and state digest to the leader (quorum status).  A stream lives on one messenger connection and dies
 * with it: when that connection closes, every stream on it is closed
 * (raft_uv redials through us and resends what it must).
 *
 * Threads: every function here runs on the raft thread (the libuv loop)
 * except mon_rt_post(), which the messenger's loop thread calls; it only
 * queues the frame and wakes the loop (uv_async).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "encode.h"
#include "entry.h"
#include "log.h"
#include "mono.h"
#include "mon.h"
#include "msg.h"

/* The frame kinds (entry.h); STATUS carries a member's applied index,
 * epoch and state digest for the leader's quorum status (no stream). */
#define RT_OPEN		MON_RT_OPEN
#define RT_DATA		MON_RT_DATA
#define RT_CLOSE	MON_RT_CLOSE

#define RT_READ_MAX	(256u << 10)	/* bytes per DATA frame at most */
#define RT_PEERS_MAX	(MONMAP_MONS_MAX * 2)

struct rt_stream {
	struct rt_stream *next;
	struct rt *t;
	struct msg_conn *c;		/* ref held */
	uint64_t sid;
	bool dialer;			/* we opened it */
	bool closing;
	uv_pipe_t pump;
};

/* A queued event from the messenger's thread. */
struct rt_ev {
	struct rt_ev *next;
	struct msg *m;			/* a frame, or NULL: c closed */
	struct msg_conn *c;		/* ref held */
};

struct rt_connect {
	struct rt_connect *next;
	struct raft_uv_connect *req;
	uv_stream_t *stream;
	int status;
	struct msg_conn *c;		/* waiting for it to open (no ref) */
	uint64_t give_up_ms;		/* monotonic */
};

/* How long a stream waits for the messenger connection to its peer to
 * come up before the attempt fails (raft_uv then retries in a second). */
#define RT_CONNECT_WAIT_MS	500

struct rt {
	struct raft_uv_transport *tr;
	struct mon *mon;
	struct msgr *msgr;
	uv_loop_t *loop;
	raft_id id;
	char address[128];
	raft_uv_accept_cb accept_cb;
	uv_async_t async;
	bool closing;
	raft_uv_transport_close_cb close_cb;
	unsigned open_handles;		/* pumps + async not yet closed */

	struct rt_stream *streams;
	uint64_t next_sid;
	struct rt_connect *done;	/* connects to complete on the loop */
	struct rt_connect *waiting;	/* connects waiting for their peer */

	struct { char addr[OSDMAP_ADDR_MAX + 1]; struct msg_conn *c; } peers[RT_PEERS_MAX];
	unsigned npeers;

	pthread_mutex_t qlock;		/* protects q, qtail, dead */
	struct rt_ev *q, *qtail;
	bool dead;			/* closed: mon_rt_post drops */
};

static void free_raft_handle(uv_handle_t *h)
{
	raft_free(h);
}

static struct rt *g_rt;		/* one transport per process */
static pthread_mutex_t g_rt_lock = PTHREAD_MUTEX_INITIALIZER; /* protects g_rt */

/* The IP:PORT part of a raft address "NAME@IP:PORT". */
static const char *addr_of(const char *address)
{
	const char *at = strchr(address, '@');

	return at ? at + 1 : address;
}

static int send_frame(struct rt_stream *s, uint8_t kind, const void *data, size_t len)
{
	struct mon_rt_frame f;
	struct enc e;
	struct msg *m;

	memset(&f, 0, sizeof(f));
	f.kind = kind;
	f.from_dialer = s->dialer;
	f.sid = s->sid;
	if (kind == RT_OPEN) {
		f.id = s->t->id;
		snprintf(f.addr, sizeof(f.addr), "%s", s->t->address);
	}
	enc_init(&e);
	mon_rt_frame_encode(&f, &e);
	m = msg_new(MT_MON_RAFT, &e);
	enc_free(&e);
	if (!m)
		return -ENOMEM;
	if (len && msg_set_data(m, data, len) < 0) {
		msg_free(m);
		return -ENOMEM;
	}
	return msg_send(s->c, m);
}

static void maybe_closed(struct rt *t)
{
	if (t->closing && t->open_handles == 0 && t->close_cb) {
		raft_uv_transport_close_cb cb = t->close_cb;

		t->close_cb = NULL;
		cb(t->tr);
	}
}

static void pump_closed(uv_handle_t *h)
{
	struct rt_stream *s = h->data;
	struct rt *t = s->t;

	msg_conn_put(s->c);
	free(s);
	t->open_handles--;
	maybe_closed(t);
}

/* Closes a stream's pump (the raft end then reads EOF) and unlinks it. */
static void stream_close(struct rt_stream *s, bool tell_peer)
{
	struct rt_stream **pp;

	if (s->closing)
		return;
	s->closing = true;
	for (pp = &s->t->streams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	if (tell_peer)
		send_frame(s, RT_CLOSE, NULL, 0);
	uv_close((uv_handle_t *)&s->pump, pump_closed);
}

static void pump_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	(void)h;
	(void)hint;
	buf->base = malloc(RT_READ_MAX);
	buf->len = buf->base ? RT_READ_MAX : 0;
}

/* Bytes raft wrote on its end: to the peer. */
static void pump_read(uv_stream_t *h, ssize_t n, const uv_buf_t *buf)
{
	struct rt_stream *s = h->data;

	if (n > 0) {
		if (send_frame(s, RT_DATA, buf->base, (size_t)n) < 0)
			stream_close(s, false);
	} else if (n < 0) {
		stream_close(s, true);
	}
	free(buf->base);
}

struct rt_write {
	uv_write_t req;
	void *data;
};

static void pump_written(uv_write_t *req, int status)
{
	struct rt_write *w = (struct rt_write *)req;

	(void)status;
	free(w->data);
	free(w);
}

/* Makes a socketpair: *raft_end for libraft (raft_malloc'd, it frees
 * it), the other end becomes s's pump. */
static int stream_pair(struct rt *t, struct rt_stream *s, uv_stream_t **raft_end)
{
	int fds[2];
	uv_pipe_t *p;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) < 0)
		return -errno;
	p = raft_malloc(sizeof(*p));
	if (!p) {
		close(fds[0]);
		close(fds[1]);
		return -ENOMEM;
	}
	uv_pipe_init(t->loop, p, 0);
	uv_pipe_open(p, fds[0]);
	uv_pipe_init(t->loop, &s->pump, 0);
	uv_pipe_open(&s->pump, fds[1]);
	s->pump.data = s;
	t->open_handles++;
	s->next = t->streams;
	t->streams = s;
	uv_read_start((uv_stream_t *)&s->pump, pump_alloc, pump_read);
	*raft_end = (uv_stream_t *)p;
	return 0;
}

static struct rt_stream *stream_find(struct rt *t, struct msg_conn *c, uint64_t sid,
				     bool dialer)
{
	for (struct rt_stream *s = t->streams; s; s = s->next)
		if (s->c == c && s->sid == sid && s->dialer == dialer)
			return s;
	return NULL;
}

static void handle_frame(struct rt *t, struct msg *m)
{
	struct msg_identity who = msg_conn_peer(m->conn);
	struct mon_rt_frame f;
	struct rt_stream *s;

	if (who.type != MSG_ENTITY_MON) {
		log_warn("mon", "raft frame from non-monitor %s dropped", msg_conn_addr(m->conn));
		return;
	}
	if (mon_rt_frame_decode(m->front, m->front_len, &f) < 0) {
		log_warn("mon", "malformed raft frame from %s dropped", msg_conn_addr(m->conn));
		return;
	}
	/* a frame from the dialer names a stream we accepted, and back */
	s = stream_find(t, m->conn, f.sid, !f.from_dialer);
	switch (f.kind) {
	case MON_RT_STATUS:
		mon_quorum_peer_status(t->mon, f.id, f.applied, f.epoch, f.digest, f.wall_ms);
		return;
	case RT_OPEN: {
		uv_stream_t *end;

		if (s) {
			log_warn("mon", "raft stream %llu from %s opened twice",
				 (unsigned long long)f.sid, msg_conn_addr(m->conn));
			return;
		}
		if (t->closing || !t->accept_cb)
			return;
		if (!mon_quorum_knows(t->mon, f.id)) {
			/* not in our configuration: a member of an older
			 * incarnation (rebuilt without it) or one removed,
			 * back on its old store: it cannot vote us out */
			log_debug("mon", "raft stream from raft id %llu at %s refused: not "
				  "a member", (unsigned long long)f.id, msg_conn_addr(m->conn));
			return;
		}
		s = calloc(1, sizeof(*s));
		if (!s)
			return;
		s->t = t;
		s->c = m->conn;
		msg_conn_get(s->c);
		s->sid = f.sid;
		s->dialer = false;
		if (stream_pair(t, s, &end) < 0) {
			msg_conn_put(s->c);
			free(s);
			return;
		}
		t->accept_cb(t->tr, f.id, f.addr, end);
		return;
	}
	case RT_DATA: {
		struct rt_write *w;
		uv_buf_t b;

		if (!s || !m->data_len)
			return;
		w = calloc(1, sizeof(*w));
		if (!w)
			return;
		w->data = m->data;	/* taken from the message */
		m->data = NULL;
		b = uv_buf_init(w->data, m->data_len);
		if (uv_write(&w->req, (uv_stream_t *)&s->pump, &b, 1, pump_written) < 0) {
			free(w->data);
			free(w);
			stream_close(s, true);
		}
		return;
	}
	case RT_CLOSE:
		if (s)
			stream_close(s, false);
		return;
	}
}

static void conn_closed(struct rt *t, struct msg_conn *c)
{
	struct rt_stream *s = t->streams, *next;

	for (; s; s = next) {
		next = s->next;
		if (s->c == c)
			stream_close(s, false);
	}
}

static void on_async(uv_async_t *a)
{
	struct rt *t = a->data;
	struct rt_ev *ev, *next;
	struct rt_connect *cn, *cnext;

	pthread_mutex_lock(&t->qlock);
	ev = t->q;
	t->q = t->qtail = NULL;
	pthread_mutex_unlock(&t->qlock);
	for (; ev; ev = next) {
		next = ev->next;
		if (ev->m) {
			handle_frame(t, ev->m);
			msg_free(ev->m);
		} else {
			conn_closed(t, ev->c);
			msg_conn_put(ev->c);
		}
		free(ev);
	}
	cn = t->done;
	t->done = NULL;
	for (; cn; cn = cnext) {
		cnext = cn->next;
		cn->req->cb(cn->req, cn->stream, cn->status);
		free(cn);
	}
}

void mon_rt_post(struct msg_conn *c, struct msg *m)
{
	struct rt_ev *ev = calloc(1, sizeof(*ev));
	struct rt *t;

	pthread_mutex_lock(&g_rt_lock);
	t = g_rt;
	if (!ev || !t) {
		pthread_mutex_unlock(&g_rt_lock);
		free(ev);
		msg_free(m);
		return;
	}
	ev->m = m;
	ev->c = c;
	if (!m)
		msg_conn_get(c);
	pthread_mutex_lock(&t->qlock);
	if (t->dead) {
		pthread_mutex_unlock(&t->qlock);
		pthread_mutex_unlock(&g_rt_lock);
		if (!m)
			msg_conn_put(c);
		msg_free(m);
		free(ev);
		return;
	}
	if (t->qtail)
		t->qtail->next = ev;
	else
		t->q = ev;
	t->qtail = ev;
	pthread_mutex_unlock(&t->qlock);
	uv_async_send(&t->async);
	pthread_mutex_unlock(&g_rt_lock);
}

/* ---- the raft_uv_transport interface -------------------------------- */

static int rt_init(struct raft_uv_transport *tr, raft_id id, const char *address)
{
	struct rt *t = tr->impl;

	t->id = id;
	snprintf(t->address, sizeof(t->address), "%s", address);
	return 0;
}

static int rt_listen(struct raft_uv_transport *tr, raft_uv_accept_cb cb)
{
	struct rt *t = tr->impl;

	t->accept_cb = cb;
	return 0;
}

static struct msg_conn *peer_conn(struct rt *t, const char *addr)
{
	for (unsigned i = 0; i < t->npeers; i++)
		if (!strcmp(t->peers[i].addr, addr))
			return t->peers[i].c;
	if (t->npeers == RT_PEERS_MAX || strlen(addr) > OSDMAP_ADDR_MAX)
		return NULL;
	t->peers[t->npeers].c = msgr_connect(t->msgr, addr);
	if (!t->peers[t->npeers].c)
		return NULL;
	strcpy(t->peers[t->npeers].addr, addr);
	return t->peers[t->npeers++].c;
}

/* Opens a stream on c for cn (status 0), or leaves cn failed. */
static void open_stream(struct rt *t, struct msg_conn *c, struct rt_connect *cn)
{
	struct rt_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return;
	s->t = t;
	s->c = c;
	msg_conn_get(c);
	s->sid = ++t->next_sid;
	s->dialer = true;
	if (stream_pair(t, s, &cn->stream) != 0) {
		msg_conn_put(c);
		free(s);
		return;
	}
	if (send_frame(s, RT_OPEN, NULL, 0) == 0) {
		cn->status = 0;
		return;
	}
	/* raft never got the stream: close its end too */
	uv_close((uv_handle_t *)cn->stream, free_raft_handle);
	cn->stream = NULL;
	stream_close(s, false);
}

static void finish(struct rt *t, struct rt_connect *cn)
{
	/* the callback must not run inside connect: finish on the loop */
	cn->next = t->done;
	t->done = cn;
	uv_async_send(&t->async);
}

/* A stream to id opens as soon as the messenger connection to it is up
 * (it is dialled on first use and redials in the background); an attempt
 * that waited RT_CONNECT_WAIT_MS for it fails, and raft_uv retries. */
static int rt_connect(struct raft_uv_transport *tr, struct raft_uv_connect *req,
		      raft_id id, const char *address, raft_uv_connect_cb cb)
{
	struct rt *t = tr->impl;
	struct rt_connect *cn = calloc(1, sizeof(*cn));
	struct msg_conn *c;

	(void)id;
	if (!cn)
		return RAFT_NOMEM;
	req->cb = cb;
	cn->req = req;
	cn->status = RAFT_NOCONNECTION;
	c = peer_conn(t, addr_of(address));
	if (c && !msg_conn_is_open(c)) {
		cn->c = c;
		cn->give_up_ms = mono_now_ms() + RT_CONNECT_WAIT_MS;
		cn->next = t->waiting;
		t->waiting = cn;
		return 0;
	}
	if (c)
		open_stream(t, c, cn);
	finish(t, cn);
	return 0;
}

void mon_rt_tick(struct raft_uv_transport *tr, const char *const *addrs, unsigned n)
{
	struct rt *t = tr->impl;
	struct rt_connect **pp = &t->waiting, *cn;
	uint64_t now = mono_now_ms();

	/* keep a connection to every member, so a stream opens at once */
	for (unsigned i = 0; i < n; i++)
		if (strcmp(addrs[i], t->address) != 0)
			peer_conn(t, addr_of(addrs[i]));
	while ((cn = *pp)) {
		bool open = msg_conn_is_open(cn->c);

		if (!open && now < cn->give_up_ms) {
			pp = &cn->next;
			continue;
		}
		*pp = cn->next;
		if (open)
			open_stream(t, cn->c, cn);
		finish(t, cn);
	}
}

static void async_closed(uv_handle_t *h)
{
	struct rt *t = h->data;

	t->open_handles--;
	maybe_closed(t);
}

static void rt_close(struct raft_uv_transport *tr, raft_uv_transport_close_cb cb)
{
	struct rt *t = tr->impl;
	struct rt_connect *cn, *next;

	t->closing = true;
	t->close_cb = cb;
	t->accept_cb = NULL;
	for (cn = t->waiting; cn; cn = next) {
		next = cn->next;
		cn->req->cb(cn->req, NULL, RAFT_CANCELED);
		free(cn);
	}
	t->waiting = NULL;
	for (cn = t->done; cn; cn = next) {
		next = cn->next;
		if (cn->stream)
			uv_close((uv_handle_t *)cn->stream, free_raft_handle);
		cn->req->cb(cn->req, NULL, RAFT_CANCELED);
		free(cn);
	}
	t->done = NULL;
	while (t->streams)
		stream_close(t->streams, true);
	pthread_mutex_lock(&g_rt_lock);
	g_rt = NULL;
	pthread_mutex_unlock(&g_rt_lock);
	pthread_mutex_lock(&t->qlock);
	t->dead = true;
	pthread_mutex_unlock(&t->qlock);
	uv_close((uv_handle_t *)&t->async, async_closed);
}

int mon_rt_status(struct raft_uv_transport *tr, const char *address, uint64_t id,
		  uint64_t applied, uint64_t epoch, uint64_t digest, uint64_t wall_ms)
{
	struct rt *t = tr->impl;
	struct msg_conn *c = peer_conn(t, addr_of(address));
	struct mon_rt_frame f;
	struct enc e;
	struct msg *m;

	if (!c || !msg_conn_is_open(c))
		return -ENOTCONN;
	memset(&f, 0, sizeof(f));
	f.kind = MON_RT_STATUS;
	f.from_dialer = 1;
	f.id = id;
	f.applied = applied;
	f.epoch = epoch;
	f.digest = digest;
	f.wall_ms = wall_ms;
	enc_init(&e);
	mon_rt_frame_encode(&f, &e);
	m = msg_new(MT_MON_RAFT, &e);
	enc_free(&e);
	return m ? msg_send(c, m) : -ENOMEM;
}

int mon_rt_create(struct raft_uv_transport *tr, uv_loop_t *loop, struct msgr *msgr,
		  struct mon *mon)
{
	struct rt *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	memset(tr, 0, sizeof(*tr));
	tr->impl = t;
	tr->init = rt_init;
	tr->listen = rt_listen;
	tr->connect = rt_connect;
	tr->close = rt_close;
	t->tr = tr;
	t->mon = mon;
	t->loop = loop;
	t->msgr = msgr;
	pthread_mutex_init(&t->qlock, NULL);
	uv_async_init(loop, &t->async, on_async);
	t->async.data = t;
	t->open_handles = 1;
	pthread_mutex_lock(&g_rt_lock);
	g_rt = t;
	pthread_mutex_unlock(&g_rt_lock);
	return 0;
}

/* After the transport's close callback ran and the loop is done. */
void mon_rt_destroy(struct raft_uv_transport *tr)
{
	struct rt *t = tr->impl;
	struct rt_ev *ev, *next;

	if (!t)
		return;
	for (unsigned i = 0; i < t->npeers; i++)
		msg_conn_put(t->peers[i].c);
	for (ev = t->q; ev; ev = next) {
		next = ev->next;
		if (!ev->m)
			msg_conn_put(ev->c);
		msg_free(ev->m);
		free(ev);
	}
	pthread_mutex_destroy(&t->qlock);
	free(t);
	tr->impl = NULL;
}
