/*
 * messenger.c - the messenger: its event loop and its public entry points.
 *
 * One thread per struct msgr runs an epoll loop that owns every socket;
 * msg_conn.c holds one connection's state machine (writes, calls,
 * closing), msg_handshake.c how it comes up (dial, accept, hello) and
 * msg_rx.c its reads.  Other threads read no socket and write one only
 * for a reply or one-way message on an idle connection (a direct send,
 * msg_conn__send_direct, under the connection's wlock); otherwise they
 * append to a connection's outq under msgr->lock and "kick" the connection,
 * which puts it on the msgr's kick list and wakes the loop through an
 * eventfd.  The eventfd is written only when the list goes from empty
 * to non-empty (wake_pending), so a burst of sends costs one wakeup, and
 * never by the loop itself: work queued from a callback is picked up
 * before the loop sleeps again.  One pass of the loop is
 *   kicks (drain queues, flush sockets) -> due timers -> free closed
 *   connections -> epoll_wait -> events (read, dispatch, write)
 * so everything sent while handling a batch of events leaves in one
 * writev per connection.
 *
 * Timers (call timeouts, handshake deadlines, redial backoff and
 * msgr_timer()) share one min-heap under msgr->tlock; epoll_wait sleeps
 * until the earliest.
 */
#include "msgr_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "atoll_assert.h"
#include "auth.h"
#include "crc32c.h"
#include "log.h"
#include "mono.h"

#define LOOP_EVENTS		64
#define LOOP_TIMERS_MAX		4096	/* timers fired per pass */
#define ACCEPT_BATCH		64
#define LISTEN_BACKLOG		1024
#define SLEEP_MAX_MS		60000

/* The messenger whose loop runs on this thread, if any. */
static __thread struct msgr *tls_loop;
/* msgr_hold: how deep this thread holds its wake-ups, and the messenger
 * it owes one. */
static __thread unsigned int tls_hold;
static __thread struct msgr *tls_held;

/* ---- waking the loop ---- */

void msgr__wake(struct msgr *m)
{
	uint64_t one = 1;

	/* Only EAGAIN can fail (the counter is full, so the loop wakes). */
	if (write(m->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_error("msgr", "cannot wake the messenger loop: %s", strerror(errno));
}

void msgr_hold(void)
{
	tls_hold++;
}

void msgr_hold_flush(void)
{
	struct msgr *m = tls_held;

	tls_held = NULL;
	if (m)
		msgr__wake(m);
}

void msgr_release(void)
{
	if (!tls_hold || --tls_hold)
		return;
	msgr_hold_flush();
}

/* Under m->lock, for a kick that must wake m's loop: true when this
 * thread holds its wake-ups and takes the wake-up for msgr_release (one
 * messenger at a time: another one's is woken now).  The loop then does
 * not count as woken (wake_pending), so another thread's kick still wakes
 * it: a held message never keeps another thread's from leaving. */
static bool hold_wake_locked(struct msgr *m)
{
	if (!tls_hold || (tls_held && tls_held != m))
		return false;
	tls_held = m;
	m->wake_pending = false;
	return true;
}

/* Under msgr->lock.  True when the caller must wake the loop after
 * unlocking. */
bool msgr__kick_locked(struct msg_conn *c, unsigned int flags)
{
	struct msgr *m = c->msgr;

	c->kick |= flags;
	if (!c->on_kick) {
		c->on_kick = true;
		msg_conn__hold(c);	/* the kick list's reference */
		c->kick_next = NULL;
		if (m->kick_tail)
			m->kick_tail->kick_next = c;
		else
			m->kick_head = c;
		m->kick_tail = c;
	}
	if (m->wake_pending || tls_loop == m)
		return false;
	m->wake_pending = true;
	return true;
}

void msgr__kick(struct msg_conn *c, unsigned int flags)
{
	struct msgr *m = c->msgr;
	bool wake;

	pthread_mutex_lock(&m->lock);
	wake = msgr__kick_locked(c, flags);
	pthread_mutex_unlock(&m->lock);
	if (wake)
		msgr__wake(m);
}

/* ---- timers ---- */

int msgr__arm(struct msgr *m, struct mtimer *t, uint64_t when)
{
	bool first;
	int r;

	pthread_mutex_lock(&m->tlock);
	r = theap_add(&m->timers, &t->n, when);
	first = r == 0 && theap_top(&m->timers) == &t->n;
	pthread_mutex_unlock(&m->tlock);
	/* The loop may sleep past the new deadline: wake it to recompute. */
	if (first && tls_loop != m)
		msgr__wake(m);
	return r;
}

void msgr__disarm(struct msgr *m, struct mtimer *t)
{
	pthread_mutex_lock(&m->tlock);
	theap_del(&m->timers, &t->n);
	pthread_mutex_unlock(&m->tlock);
}

struct ptimer {
	struct mtimer t;
	struct idnode h;	/* key: id, in msgr->ptimers */
	msgr_timer_fn fn;
	void *arg;
};

static void ptimer_fire(struct msgr *m, struct mtimer *t)
{
	struct ptimer *pt = container_of(t, struct ptimer, t);

	pthread_mutex_lock(&m->tlock);
	idtab_del(&m->ptimers, &pt->h);
	pthread_mutex_unlock(&m->tlock);
	pt->fn(pt->arg);
	free(pt);
}

uint64_t msgr_timer(struct msgr *m, uint32_t ms, msgr_timer_fn fn, void *arg)
{
	struct ptimer *pt = calloc(1, sizeof(*pt));
	uint64_t id;
	bool first;

	if (!pt)
		return 0;
	tnode_init(&pt->t.n);
	pt->t.fire = ptimer_fire;
	pt->fn = fn;
	pt->arg = arg;
	pthread_mutex_lock(&m->tlock);
	if (theap_add(&m->timers, &pt->t.n, mono_now_ns() + (uint64_t)ms * 1000000u) < 0) {
		pthread_mutex_unlock(&m->tlock);
		free(pt);
		return 0;
	}
	id = m->next_timer_id++;
	pt->h.key = id;
	idtab_add(&m->ptimers, &pt->h);
	first = theap_top(&m->timers) == &pt->t.n;
	pthread_mutex_unlock(&m->tlock);
	if (first && tls_loop != m)
		msgr__wake(m);
	return id;
}

bool msgr_timer_cancel(struct msgr *m, uint64_t id)
{
	struct idnode *h;
	struct ptimer *pt = NULL;

	pthread_mutex_lock(&m->tlock);
	h = idtab_find(&m->ptimers, id);
	if (h) {
		pt = container_of(h, struct ptimer, h);
		/* Not in the heap: the loop popped it and is about to run it. */
		if (theap_del(&m->timers, &pt->t.n))
			idtab_del(&m->ptimers, &pt->h);
		else
			pt = NULL;
	}
	pthread_mutex_unlock(&m->tlock);
	free(pt);
	return pt != NULL;
}

bool msgr_on_loop(const struct msgr *m)
{
	return tls_loop == m;
}

bool msgr_defer(void (*fn)(void *arg), void *arg)
{
	struct msgr *m = tls_loop;

	if (!m)
		return false;
	if (m->ndefers == m->defers_cap) {
		size_t cap = m->defers_cap ? m->defers_cap * 2 : 64;
		struct msgr_deferred *v = realloc(m->defers, cap * sizeof(*v));

		if (!v)
			return false;
		m->defers = v;
		m->defers_cap = cap;
	}
	m->defers[m->ndefers++] = (struct msgr_deferred){ fn, arg };
	return true;
}

/* Runs the deferred calls (in the order they came), and those they defer. */
static void loop_defers(struct msgr *m)
{
	for (size_t i = 0; i < m->ndefers; i++) {
		struct msgr_deferred d = m->defers[i];

		d.fn(d.arg);	/* may append: m->defers may move */
	}
	m->ndefers = 0;
}

/* ---- the loop ---- */

static void loop_kicks(struct msgr *m)
{
	struct msg_conn *c, *run = NULL, **tailp = &run, *next;

	pthread_mutex_lock(&m->lock);
	for (c = m->kick_head; c; c = c->kick_next) {
		c->kick_run = c->kick;
		c->kick = 0;
		c->on_kick = false;
		*tailp = c;
		tailp = &c->run_next;
	}
	*tailp = NULL;
	m->kick_head = m->kick_tail = NULL;
	m->wake_pending = false;
	pthread_mutex_unlock(&m->lock);

	for (c = run; c; c = next) {
		next = c->run_next;
		msg_conn__kicked(c, c->kick_run);
		msg_conn__drop(c);	/* the kick list's reference */
	}
}

static void loop_timers(struct msgr *m)
{
	uint64_t now = mono_now_ns();

	for (int i = 0; i < LOOP_TIMERS_MAX; i++) {
		struct tnode *t;

		pthread_mutex_lock(&m->tlock);
		t = theap_pop_due(&m->timers, now);
		pthread_mutex_unlock(&m->tlock);
		if (!t)
			break;
		container_of(t, struct mtimer, n)->fire(m, container_of(t, struct mtimer, n));
	}
}

void msgr__bury(struct msg_conn *c)
{
	struct msgr *m = c->msgr;

	pthread_mutex_lock(&m->lock);
	if (c->all_prev)
		c->all_prev->all_next = c->all_next;
	else
		m->all = c->all_next;
	if (c->all_next)
		c->all_next->all_prev = c->all_prev;
	c->all_prev = c->all_next = NULL;
	pthread_mutex_unlock(&m->lock);
	c->grave_next = m->grave;
	m->grave = c;
}

/* Drops the references of connections closed during this pass: not
 * earlier, because an event for one of them may still be in the batch. */
static void loop_reap(struct msgr *m)
{
	while (m->grave) {
		struct msg_conn *c = m->grave;

		m->grave = c->grave_next;
		msg_conn__drop(c);
	}
}

static int loop_timeout(struct msgr *m)
{
	struct tnode *top;
	uint64_t now, when = 0;
	bool busy;

	pthread_mutex_lock(&m->lock);
	busy = m->kick_head != NULL;
	pthread_mutex_unlock(&m->lock);
	if (busy)
		return 0;
	pthread_mutex_lock(&m->tlock);
	top = theap_top(&m->timers);
	if (top)
		when = top->when;
	pthread_mutex_unlock(&m->tlock);
	if (!top)
		return -1;
	now = mono_now_ns();
	if (when <= now)
		return 0;
	if (when - now >= (uint64_t)SLEEP_MAX_MS * 1000000u)
		return SLEEP_MAX_MS;
	return (int)((when - now + 999999u) / 1000000u);
}

#define ACCEPT_BACKOFF_MIN_MS	10
#define ACCEPT_BACKOFF_MAX_MS	1000
#define ACCEPT_LOG_MS		10000

/* The backoff of a paused listener ran out: it listens again (level
 * triggered: a waiting connection wakes it at once). */
static void listener_resume(struct msgr *m, struct mtimer *t)
{
	struct msgr_listener *l = container_of(t, struct msgr_listener, timer);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &l->ep };

	if (!l->paused)
		return;
	if (epoll_ctl(m->epfd, EPOLL_CTL_MOD, l->fd, &ev) < 0) {
		log_error("msgr", "cannot watch the listener '%s' again: %s", l->addr,
			  strerror(errno));
		return;
	}
	l->paused = false;
}

/* accept() failed for lack of a resource (descriptors, memory): the
 * connection stays in the backlog, so the level-triggered listener
 * would wake us at once, forever.  Stop watching it for a while
 * (doubling up to a second while it keeps failing), and say so at most
 * once per interval. */
static void listener_pause(struct msgr *m, struct msgr_listener *l, int err)
{
	struct epoll_event ev = { .events = 0, .data.ptr = &l->ep };
	uint32_t dropped;

	l->backoff_ms = l->backoff_ms ? l->backoff_ms * 2 : ACCEPT_BACKOFF_MIN_MS;
	if (l->backoff_ms > ACCEPT_BACKOFF_MAX_MS)
		l->backoff_ms = ACCEPT_BACKOFF_MAX_MS;
	if (msgr__ratelog(&m->log_accept, ACCEPT_LOG_MS, &dropped))
		log_warn("msgr", "cannot accept connections on '%s': %s; not accepting for "
			 "%u ms (%u more failures since the last line); raise the limit of open "
			 "files (ulimit -n) or lower ms_max_conns", l->addr, strerror(err),
			 l->backoff_ms, dropped);
	if (epoll_ctl(m->epfd, EPOLL_CTL_MOD, l->fd, &ev) < 0 ||
	    msgr__arm(m, &l->timer, mono_now_ns() + (uint64_t)l->backoff_ms * 1000000u) < 0) {
		log_error("msgr", "cannot pause the listener '%s'", l->addr);
		ev.events = EPOLLIN;
		epoll_ctl(m->epfd, EPOLL_CTL_MOD, l->fd, &ev);
		return;
	}
	l->paused = true;
}

static void loop_accept(struct msgr *m, struct msgr_listener *l)
{
	if (l->paused)
		return;
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd;

		fd = accept4(l->fd, (struct sockaddr *)&ss, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int err = errno;

			if (err == EINTR || err == ECONNABORTED)
				continue;
			if (err == EAGAIN)
				return;
			if (err == EMFILE || err == ENFILE || err == ENOMEM || err == ENOBUFS) {
				listener_pause(m, l, err);
				return;
			}
			log_warn("msgr", "cannot accept a connection on '%s': %s", l->addr,
				 strerror(err));
			return;
		}
		l->backoff_ms = 0;
		msg_conn__accepted(m, fd, (struct sockaddr *)&ss, len);
	}
}

static void loop_events(struct msgr *m, int timeout)
{
	struct epoll_event ev[LOOP_EVENTS];
	uint64_t v;
	int n;

	n = epoll_wait(m->epfd, ev, LOOP_EVENTS, timeout);
	/* A reply read below may answer a call its caller wrote itself
	 * (msg_conn__call_direct) before the reply came: register those. */
	msg_conn__take_direct(m);
	if (n < 0) {
		if (errno != EINTR)
			log_error("msgr", "epoll_wait failed: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < n; i++) {
		struct ep_src *src = ev[i].data.ptr;

		switch (src->kind) {
		case EP_WAKE:
			if (read(m->wakefd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_error("msgr", "cannot read the wake eventfd: %s",
					  strerror(errno));
			break;
		case EP_LISTEN:
			loop_accept(m, (struct msgr_listener *)src);
			break;
		case EP_CONN:
			msg_conn__event((struct msg_conn *)src, ev[i].events);
			break;
		case EP_WATCH: {
			struct msgr_watch *w = (struct msgr_watch *)src;

			w->fn(w->arg);
			break;
		}
		}
	}
}

/* Every keepalive_ms: each open connection gets a keepalive, or fails
 * when it has been silent too long (msg_conn__keepalive). */
static void keepalive_tick(struct msgr *m, struct mtimer *t)
{
	uint64_t now = mono_now_ns();
	struct msg_conn **v = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&m->lock);
	for (struct msg_conn *c = m->all; c; c = c->all_next) {
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct msg_conn **nv = realloc(v, nc * sizeof(*nv));

			if (!nv)
				break;
			v = nv;
			cap = nc;
		}
		msg_conn__hold(c);
		v[n++] = c;
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < n; i++) {
		msg_conn__keepalive(v[i], now);
		msg_conn__drop(v[i]);
	}
	free(v);
	if (!m->shutting_down &&
	    msgr__arm(m, t, now + (uint64_t)m->cfg.keepalive_ms * 1000000u) < 0)
		log_error("msgr", "cannot arm the keepalive timer: out of memory");
}

/* Closes every connection (calls fail with -ESHUTDOWN) and drops what
 * waits on the kick list.  On the loop thread as it ends, or on the
 * destroying thread when the loop never ran. */
static void loop_shutdown(struct msgr *m)
{
	struct msg_conn *c;

	m->shutting_down = true;
	for (;;) {
		pthread_mutex_lock(&m->lock);
		c = m->all;
		if (c)
			msg_conn__hold(c);
		pthread_mutex_unlock(&m->lock);
		if (!c)
			break;
		msg_conn__close(c, -ESHUTDOWN, -ESHUTDOWN);
		msg_conn__drop(c);
		loop_reap(m);
	}
	/* Kicks of closed connections: nothing left to do but let go. */
	loop_kicks(m);
	loop_reap(m);
	loop_defers(m);
}

static void *loop_main(void *arg)
{
	struct msgr *m = arg;

	pthread_setname_np(pthread_self(), "atoll-msgr");
	tls_loop = m;
	if (msgr__arm(m, &m->ka_timer, mono_now_ns() + (uint64_t)m->cfg.keepalive_ms * 1000000u) < 0)
		log_error("msgr", "cannot arm the keepalive timer: out of memory");
	while (!atomic_load(&m->stop)) {
		loop_kicks(m);
		loop_timers(m);
		loop_reap(m);
		loop_defers(m);
		loop_events(m, loop_timeout(m));
	}
	loop_shutdown(m);
	tls_loop = NULL;
	return NULL;
}

/* ---- the messenger ---- */

int msgr_create(const struct msgr_config *cfg, const struct msgr_ops *ops,
		void *arg, struct msgr **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct msgr *m;
	size_t n;
	int r = -ENOMEM;

	*out = NULL;
	/* A config from an older caller is shorter: the rest stays zero
	 * (defaults).  Every field of the first version is required. */
	if (!cfg || cfg->size_of < offsetof(struct msgr_config, reconnect_max_ms) + 4)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	n = cfg->size_of < sizeof(m->cfg) ? cfg->size_of : sizeof(m->cfg);
	memcpy(&m->cfg, cfg, n);
	m->cfg.size_of = sizeof(m->cfg);
	if (!m->cfg.frame_max)
		m->cfg.frame_max = MSG_DEFAULT_FRAME_MAX;
	if (!m->cfg.inflight_max)
		m->cfg.inflight_max = MSG_DEFAULT_INFLIGHT_MAX;
	if (!m->cfg.handshake_timeout_ms)
		m->cfg.handshake_timeout_ms = 10000;
	if (!m->cfg.reconnect_min_ms)
		m->cfg.reconnect_min_ms = 50;
	if (!m->cfg.reconnect_max_ms)
		m->cfg.reconnect_max_ms = 5000;
	if (m->cfg.reconnect_max_ms < m->cfg.reconnect_min_ms)
		m->cfg.reconnect_max_ms = m->cfg.reconnect_min_ms;
	if (!m->cfg.keepalive_ms)
		m->cfg.keepalive_ms = 1000;
	if (!m->cfg.keepalive_timeout_ms)
		m->cfg.keepalive_timeout_ms = 10000;
	if (m->cfg.keepalive_timeout_ms < 2 * m->cfg.keepalive_ms)
		m->cfg.keepalive_timeout_ms = 2 * m->cfg.keepalive_ms;
#define DEFAULT(field, value) do { if (!m->cfg.field) m->cfg.field = (value); } while (0)
	DEFAULT(conn_frames_max, MSG_DEFAULT_CONN_FRAMES_MAX);
	DEFAULT(client_bytes_max, MSG_DEFAULT_POOL_BYTES);
	DEFAULT(client_frames_max, MSG_DEFAULT_POOL_FRAMES);
	DEFAULT(peer_bytes_max, MSG_DEFAULT_POOL_BYTES);
	DEFAULT(peer_frames_max, MSG_DEFAULT_POOL_FRAMES);
	DEFAULT(conns_max, MSG_DEFAULT_CONNS_MAX);
	DEFAULT(conns_per_addr, MSG_DEFAULT_CONNS_PER_ADDR);
	DEFAULT(peer_reserved, MSG_DEFAULT_PEER_RESERVED);
	DEFAULT(handshakes_max, MSG_DEFAULT_HANDSHAKES_MAX);
	DEFAULT(handshakes_per_addr, MSG_DEFAULT_HANDSHAKES_PER_ADDR);
	DEFAULT(handshake_rcvbuf, MSG_DEFAULT_HS_RCVBUF);
	DEFAULT(frame_timeout_ms, MSG_DEFAULT_FRAME_TIMEOUT_MS);
#undef DEFAULT
	if (m->cfg.peer_reserved > m->cfg.conns_max)
		m->cfg.peer_reserved = m->cfg.conns_max;
	tnode_init(&m->ka_timer.n);
	m->ka_timer.fire = keepalive_tick;
	if (ops)
		m->ops = *ops;
	m->arg = arg;
	memcpy(m->fsid, m->cfg.fsid, sizeof(m->fsid));
	atomic_init(&m->stop, false);
	atomic_init(&m->next_tid, 1);
	m->next_timer_id = 1;
	theap_init(&m->timers);
	pthread_mutex_init(&m->lock, NULL);
	m->direct_tailp = &m->direct_head;
	pthread_mutex_init(&m->tlock, NULL);
	if (idtab_init(&m->calls) < 0)
		goto out_free_m;
	if (idtab_init(&m->ptimers) < 0)
		goto out_free_calls;
	if (idtab_init(&m->slots.addrs) < 0)
		goto out_free_ptimers;
	m->budget = msg_budget__new(&m->cfg);
	if (!m->budget)
		goto out_free_ptimers;
	m->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (m->epfd < 0) {
		r = -errno;
		goto out_free_ptimers;
	}
	m->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (m->wakefd < 0) {
		r = -errno;
		goto out_close_epfd;
	}
	m->wake_ep.kind = EP_WAKE;
	ev.data.ptr = &m->wake_ep;
	if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->wakefd, &ev) < 0) {
		r = -errno;
		goto out_close_wakefd;
	}
	*out = m;
	return 0;

out_close_wakefd:
	close(m->wakefd);
out_close_epfd:
	close(m->epfd);
out_free_ptimers:
	msg_budget__put(m->budget);
	idtab_free(&m->slots.addrs);
	idtab_free(&m->ptimers);
out_free_calls:
	idtab_free(&m->calls);
out_free_m:
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->tlock);
	free(m);
	return r;
}

/* The receive buffer a TCP socket starts with (tcp_rmem's default),
 * which an accepted connection gets back at its hello. */
static int tcp_rmem_default(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_rmem", "re");
	int lo, def = 131072;

	if (f) {
		if (fscanf(f, "%d %d", &lo, &def) != 2 || def <= 0)
			def = 131072;
		fclose(f);
	}
	return def;
}

int msgr_listen(struct msgr *m, const char *addr, char *bound, size_t boundlen)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct sockaddr_storage ss;
	struct msgr_listener *l;
	socklen_t len;
	int one = 1, r;

	r = msgr__resolve(addr, &ss, &len);
	if (r < 0)
		return r;
	if (!m->rcvbuf_default)
		m->rcvbuf_default = tcp_rmem_default();
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->ep.kind = EP_LISTEN;
	l->msgr = m;
	tnode_init(&l->timer.n);
	l->timer.fire = listener_resume;
	l->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		r = -errno;
		goto out_free_l;
	}
	/* SO_REUSEADDR: a restarted daemon binds its port again at once,
	 * despite connections of its previous life in TIME_WAIT. */
	if (setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(l->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(l->fd, (struct sockaddr *)&ss, len) < 0 ||
	    listen(l->fd, LISTEN_BACKLOG) < 0) {
		r = -errno;
		goto out_close_fd;
	}
	len = sizeof(ss);
	if (getsockname(l->fd, (struct sockaddr *)&ss, &len) < 0) {
		r = -errno;
		goto out_close_fd;
	}
	ev.data.ptr = &l->ep;
	if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, l->fd, &ev) < 0) {
		r = -errno;
		goto out_close_fd;
	}
	msgr__format_addr((struct sockaddr *)&ss, l->addr, sizeof(l->addr));
	if (bound)
		snprintf(bound, boundlen, "%s", l->addr);
	pthread_mutex_lock(&m->lock);
	l->next = m->listeners;
	m->listeners = l;
	pthread_mutex_unlock(&m->lock);
	return 0;

out_close_fd:
	close(l->fd);
out_free_l:
	free(l);
	return r;
}

int msgr_start(struct msgr *m)
{
	sigset_t all, old;
	int r;

	if (m->started)
		return -EALREADY;
	/* The loop takes no signals: they belong to the program's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&m->thread, NULL, loop_main, m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return -r;
	m->started = true;
	return 0;
}

void msgr_destroy(struct msgr *m)
{
	struct msgr_listener *l;

	if (!m)
		return;
	ATOLL_ASSERT(tls_loop != m, "msgr_destroy called from its own loop thread");
	if (m->started) {
		atomic_store(&m->stop, true);
		msgr__wake(m);
		pthread_join(m->thread, NULL);
	} else {
		tls_loop = m;	/* callbacks run as if on the loop */
		loop_shutdown(m);
		tls_loop = NULL;
	}
	while ((l = m->listeners)) {
		m->listeners = l->next;
		msgr__disarm(m, &l->timer);
		close(l->fd);
		free(l);
	}
	free(m->defers);
	while (m->watches) {
		struct msgr_watch *w = m->watches;

		m->watches = w->next;
		free(w);
	}
	msg_admit__free(m);
	msg_budget__put(m->budget);
	/* Timers that never ran: only msgr_timer()s are left (connections
	 * and calls disarmed theirs as they closed). */
	theap_free(&m->timers);
	for (size_t i = 0; i < idtab_nb(&m->ptimers); i++) {
		while (m->ptimers.b[i]) {
			struct ptimer *pt = container_of(m->ptimers.b[i], struct ptimer, h);

			idtab_del(&m->ptimers, &pt->h);
			free(pt);
		}
	}
	idtab_free(&m->ptimers);
	idtab_free(&m->calls);
	close(m->wakefd);
	close(m->epfd);
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->tlock);
	free(m);
}

int msgr_watch_fd(struct msgr *m, int fd, void (*fn)(void *arg), void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct msgr_watch *w;

	if (!m || fd < 0 || !fn)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->ep.kind = EP_WATCH;
	w->fd = fd;
	w->fn = fn;
	w->arg = arg;
	ev.data.ptr = &w->ep;
	pthread_mutex_lock(&m->lock);
	if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;

		pthread_mutex_unlock(&m->lock);
		free(w);
		return err;
	}
	w->next = m->watches;
	m->watches = w;
	pthread_mutex_unlock(&m->lock);
	return 0;
}

void msgr_set_fsid(struct msgr *m, const uint8_t fsid[16])
{
	pthread_mutex_lock(&m->lock);
	memcpy(m->fsid, fsid, sizeof(m->fsid));
	pthread_mutex_unlock(&m->lock);
}

void msgr_fsid(struct msgr *m, uint8_t fsid[16])
{
	pthread_mutex_lock(&m->lock);
	memcpy(fsid, m->fsid, sizeof(m->fsid));
	pthread_mutex_unlock(&m->lock);
}

/* ---- connections: the callers' side ---- */

struct msg_conn *msgr_connect(struct msgr *m, const char *addr)
{
	struct msg_conn *c;
	bool wake;

	c = msg_conn__alloc(m, true);
	if (!c)
		return NULL;
	if (msgr__resolve(addr, &c->sa, &c->salen) < 0) {
		msg_conn__drop(c);
		return NULL;
	}
	msgr__format_addr((struct sockaddr *)&c->sa, c->addr, sizeof(c->addr));
	atomic_store(&c->uref, 1);
	atomic_store(&c->ref, 2);	/* the caller's and the messenger's */
	pthread_mutex_lock(&m->lock);
	c->all_next = m->all;
	if (m->all)
		m->all->all_prev = c;
	m->all = c;
	wake = msgr__kick_locked(c, KICK_DIAL);
	pthread_mutex_unlock(&m->lock);
	if (wake)
		msgr__wake(m);
	return c;
}

int msg_conn_retarget(struct msg_conn *c, const char *addr)
{
	struct sockaddr_storage sa;
	socklen_t salen;
	struct msgr *m = c->msgr;
	bool wake;

	if (!c->dialled || msgr__resolve(addr, &sa, &salen) < 0)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	c->retarget_sa = sa;
	c->retarget_salen = salen;
	c->retarget = true;
	wake = msgr__kick_locked(c, KICK_RETARGET);
	pthread_mutex_unlock(&m->lock);
	if (wake)
		msgr__wake(m);
	return 0;
}

void msg_conn_get(struct msg_conn *c)
{
	atomic_fetch_add(&c->uref, 1);
	atomic_fetch_add(&c->ref, 1);
}

void msg_conn_put(struct msg_conn *c)
{
	int prev;

	if (!c)
		return;
	prev = atomic_fetch_sub(&c->uref, 1);
	ATOLL_ASSERT(prev > 0, "msg_conn_put on '%s' without a reference", c->addr);
	/* A dead connection's messenger may be gone: leave it alone. */
	if (prev == 1 && c->dialled && !atomic_load(&c->dead))
		msgr__kick(c, KICK_UNREF);
	msg_conn__drop(c);
}

void msg_conn_close(struct msg_conn *c)
{
	struct msgr *m = c->msgr;
	bool wake = false;

	if (atomic_load(&c->dead))
		return;
	pthread_mutex_lock(&m->lock);
	if (!atomic_load(&c->dead)) {
		atomic_store(&c->dead, true);
		wake = msgr__kick_locked(c, KICK_CLOSE);
	}
	pthread_mutex_unlock(&m->lock);
	if (wake)
		msgr__wake(m);
}

struct msg_identity msg_conn_peer(const struct msg_conn *c)
{
	struct msg_conn *cc = (struct msg_conn *)c;
	struct msg_identity id;

	pthread_mutex_lock(&cc->plock);
	id = c->peer;
	pthread_mutex_unlock(&cc->plock);
	return id;
}

/* auth_entity, auth_caps and auth_expires are written before the
 * connection opens (msg_auth.c) and never after: reading them needs no
 * lock once a message arrived on c. */
const char *msg_conn_entity(const struct msg_conn *c)
{
	return c->auth_entity;
}

const char *msg_conn_caps(const struct msg_conn *c)
{
	return c->auth_caps ? c->auth_caps : "";
}

uint64_t msg_conn_auth_expires(const struct msg_conn *c)
{
	return c->auth_expires;
}

void *msg_conn_cache(const struct msg_conn *c)
{
	return atomic_load(&((struct msg_conn *)c)->ucache);
}

void *msg_conn_cache_set(struct msg_conn *c, void *p, void (*free_fn)(void *))
{
	void *expect = NULL;

	pthread_mutex_lock(&c->plock);
	if (atomic_compare_exchange_strong(&c->ucache, &expect, p))
		c->ucache_free = free_fn;
	pthread_mutex_unlock(&c->plock);
	return expect ? expect : p;
}

uint64_t msg_conn_features(const struct msg_conn *c)
{
	struct msg_conn *cc = (struct msg_conn *)c;
	uint64_t f;

	pthread_mutex_lock(&cc->plock);
	f = c->peer_features;
	pthread_mutex_unlock(&cc->plock);
	return f;
}

uint32_t msg_conn_mode(const struct msg_conn *c)
{
	return atomic_load(&((struct msg_conn *)c)->mode);
}

const char *msg_conn_addr(const struct msg_conn *c)
{
	return c->addr;
}

bool msg_conn_is_open(const struct msg_conn *c)
{
	return atomic_load(&c->open);
}

bool msg_conn_authenticated(const struct msg_conn *c)
{
	return c->msgr->cfg.auth && !c->auth_none;
}

bool msg_conn_ticket_refused(const struct msg_conn *c)
{
	return atomic_load(&c->ticket_refused);
}

void msg_conn_set_priv(struct msg_conn *c, void *priv)
{
	c->priv = priv;
}

void *msg_conn_priv(const struct msg_conn *c)
{
	return c->priv;
}

struct msgr *msg_conn_msgr(const struct msg_conn *c)
{
	return c->msgr;
}

uint64_t msg_conn_inflight(const struct msg_conn *c)
{
	return atomic_load(&((struct msg_conn *)c)->inflight);
}

uint64_t msg_conn_queued(const struct msg_conn *c)
{
	return atomic_load(&((struct msg_conn *)c)->queued);
}

/* ---- sending ---- */

void msg_conn__set_tail(struct msg *m)
{
	uint32_t crc;

	if (m->tail_set)
		return;
	if (m->data_crc_known && m->data_len)
		crc = atoll__crc32c_combine(msg_payload_crc(m->front, m->front_len, NULL, 0),
					 m->data_crc, m->data_len);
	else
		crc = msg_payload_crc(m->front, m->front_len, m->data, m->data_len);
	for (unsigned int i = 0; i < 4; i++)
		m->wire_tail[i] = (uint8_t)(crc >> (8 * i));
	m->tail_set = true;
}

int msg_conn__submit(struct msg_conn *c, struct msg *m, struct msgr_call *call)
{
	struct msgr *mr = c->msgr;
	struct msg_hdr h;
	bool wake;

	if ((uint64_t)m->front_len + m->data_len > c->frame_max)
		return -EMSGSIZE;
	if (atomic_load(&c->dead))
		return -ENOTCONN;
	/* The frame is encoded here, on the caller's thread, so that the
	 * crc of a big payload does not hold up the loop. */
	h.type = m->type;
	h.flags = m->flags;
	h.tid = m->tid;
	h.front_len = m->front_len;
	h.data_len = m->data_len;
	msg_hdr_encode(m->wire_hdr, &h);
	/* In secure mode the frame is sealed as it is written (its
	 * sequence number is its place on the wire) and has no crc; should
	 * the connection come up again in crc mode, the loop computes it
	 * then (msg_conn__set_tail). */
	m->tail_set = false;
	if (atomic_load(&c->mode) != AUTH_MODE_SECURE)
		msg_conn__set_tail(m);
	m->call = call;
	m->q_next = NULL;
	m->q_prev = NULL;
	/* A message from another thread on an idle connection: write it now
	 * rather than wake the loop to do it (the OSD answers reads from its
	 * store's read thread).  A call too when it is the connection's only
	 * one (a thread that waits for each reply: a FUSE request's MDS
	 * call); with others in flight the loop writes many in one sendmsg,
	 * which is cheaper than a sendmsg per call from their threads (4 KiB
	 * reads at QD32 went from ~25,000 to ~19,000 per second when every
	 * call left from its caller).  Not while the fault injections of
	 * calls are on: they work on the loop's writes. */
	if (tls_loop != mr && atomic_load(&c->open)) {
		if (!call && msg_conn__send_direct(c, m))
			return 0;
		if (call && atomic_load(&c->calls_out) == 1 &&
		    !mr->cfg.inject_dup_permille &&
		    !mr->cfg.inject_reset_permille) {
			int r = msg_conn__call_direct(c, m, call);

			if (r < 0)
				m->call = NULL;
			if (r)
				return r < 0 ? r : 0;
		}
	}

	pthread_mutex_lock(&mr->lock);
	if (atomic_load(&c->dead)) {
		pthread_mutex_unlock(&mr->lock);
		m->call = NULL;
		return -ENOTCONN;
	}
	if (call && call->for_epoch && call->epoch != atomic_load(&c->epoch)) {
		pthread_mutex_unlock(&mr->lock);
		m->call = NULL;
		return -ECONNRESET;	/* made for a connection that broke */
	}
	*c->outq_tailp = m;
	c->outq_tailp = &m->q_next;
	atomic_fetch_add(&c->queued, MSG_HEADER_LEN + (uint64_t)m->front_len +
			 m->data_len + MSG_TRAILER_LEN);
	wake = msgr__kick_locked(c, KICK_SEND) && !hold_wake_locked(mr);
	pthread_mutex_unlock(&mr->lock);
	if (wake)
		msgr__wake(mr);
	return 0;
}

int msg_send(struct msg_conn *c, struct msg *m)
{
	int r;

	if (!m)
		return -EINVAL;
	if (m->type >= MSG_T_HELLO && m->type <= MSG_T_RESERVED_MAX) {
		msg_free(m);
		return -EINVAL;
	}
	r = msg_conn__submit(c, m, NULL);
	if (r < 0)
		msg_free(m);
	return r;
}

void msg_conn_set_ordered(struct msg_conn *c)
{
	atomic_store(&c->ordered, true);
}

uint64_t msg_conn_epoch(const struct msg_conn *c)
{
	return atomic_load(&((struct msg_conn *)c)->epoch);
}

static int call_submit(struct msg_conn *c, struct msg *m, uint32_t timeout_ms,
		       msg_reply_fn fn, void *arg, const struct msg_rxbuf_ops *rx,
		       void *rx_arg, const uint64_t *epoch);

int msg_call(struct msg_conn *c, struct msg *m, uint32_t timeout_ms,
	     msg_reply_fn fn, void *arg)
{
	return call_submit(c, m, timeout_ms, fn, arg, NULL, NULL, NULL);
}

void msg_waiter_done(void *arg, struct msg *reply, int err)
{
	struct msg_waiter *w = arg;

	pthread_mutex_lock(&w->lock);
	w->reply = reply;
	w->err = err;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int msg_waiter_wait(struct msg_waiter *w, struct msg **reply)
{
	msgr_hold_flush();
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	*reply = w->reply;
	return w->err;
}

int msg_call_wait(struct msg_conn *c, struct msg *m, uint32_t timeout_ms, struct msg **reply)
{
	struct msg_waiter w = MSG_WAITER_INIT;
	int r = msg_call(c, m, timeout_ms, msg_waiter_done, &w);

	*reply = NULL;
	return r < 0 ? r : msg_waiter_wait(&w, reply);
}

int msg_call_epoch(struct msg_conn *c, uint64_t epoch, struct msg *m, uint32_t timeout_ms,
		   msg_reply_fn fn, void *arg)
{
	return call_submit(c, m, timeout_ms, fn, arg, NULL, NULL, &epoch);
}

int msg_call_rx(struct msg_conn *c, struct msg *m, uint32_t timeout_ms,
		msg_reply_fn fn, void *arg, const struct msg_rxbuf_ops *rx, void *rx_arg)
{
	return call_submit(c, m, timeout_ms, fn, arg, rx, rx_arg, NULL);
}

static int call_submit(struct msg_conn *c, struct msg *m, uint32_t timeout_ms,
		       msg_reply_fn fn, void *arg, const struct msg_rxbuf_ops *rx,
		       void *rx_arg, const uint64_t *epoch)
{
	struct msgr_call *call;
	int r;

	if (!m)
		return -EINVAL;
	if (!fn || (m->type >= MSG_T_HELLO && m->type <= MSG_T_RESERVED_MAX)) {
		msg_free(m);
		return -EINVAL;
	}
	if (atomic_load(&c->dead)) {
		msg_free(m);
		return -ENOTCONN;
	}
	call = calloc(1, sizeof(*call));
	if (!call) {
		msg_free(m);
		return -ENOMEM;
	}
	m->tid = atomic_fetch_add(&c->msgr->next_tid, 1);
	m->flags &= (uint16_t)~MSG_F_REPLY;
	call->h.key = m->tid;
	tnode_init(&call->timer.n);
	call->deadline = timeout_ms ? mono_now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
	call->fn = fn;
	call->arg = arg;
	call->conn = c;
	call->msg = m;
	call->rx = rx && rx->get && rx->put ? rx : NULL;
	call->rx_arg = rx_arg;
	if (epoch) {
		call->for_epoch = true;
		call->epoch = *epoch;
	}
	atomic_fetch_add(&c->calls_out, 1);
	r = msg_conn__submit(c, m, call);
	if (r < 0) {
		atomic_fetch_sub(&c->calls_out, 1);
		free(call);
		msg_free(m);
	}
	return r;
}

int msg_reply(struct msg_conn *c, const struct msg *req, struct msg *reply)
{
	if (!reply)
		return -EINVAL;
	reply->tid = req->tid;
	reply->flags |= MSG_F_REPLY;
	return msg_send(c, reply);
}
