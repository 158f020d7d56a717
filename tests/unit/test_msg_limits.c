/*
 * test_msg_limits.c - the messenger's server-side limits (msg_budget.c,
 * msg_admit.c, the listener's backoff in messenger.c): receive budgets
 * that pause one connection and resume it when messages are freed, the
 * cluster peers' pool that a full client pool does not stop, frames
 * bigger than a budget, a header whose payload never comes, connection
 * slots (per address, handshaking, reserved for peers) and accept()
 * failing for lack of descriptors.
 *
 * Two messengers in one process over loopback, plus raw sockets for what
 * no well-behaved peer does.  Criterion runs each test in its own
 * process (the descriptor limit test changes its own RLIMIT_NOFILE).
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "encode.h"
#include "log.h"
#include "msg.h"
#include "testutil.h"
#include "msg_config.h"
#include "msg_frame.h"
#include "msgr_int.h"

#define T_HOLD		100	/* kept until the test frees it */
#define T_ECHO		101	/* answered with the same data */
#define HELD_MAX	256
#define WAIT_MS		5000

static const uint8_t FSID[16] = { 0xc1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };


struct node {
	struct msgr *m;
	char addr[64];
	atomic_int connected, dispatched;
	pthread_mutex_t lock;		/* protects held, nheld */
	struct msg *held[HELD_MAX];
	int nheld;
};

static void node_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct node *n = arg;

	atomic_fetch_add(&n->dispatched, 1);
	if (m->type == T_HOLD) {
		pthread_mutex_lock(&n->lock);
		if (n->nheld < HELD_MAX) {
			n->held[n->nheld++] = m;
			m = NULL;
		}
		pthread_mutex_unlock(&n->lock);
		if (m)
			abort();
		return;
	}
	if (m->type == T_ECHO) {
		struct msg *r = msg_new(T_ECHO, NULL);

		if (!r || msg_set_data(r, m->data, m->data_len) < 0)
			abort();
		msg_reply(c, m, r);
	}
	msg_free(m);
}

static void node_connected(void *arg, struct msg_conn *c)
{
	(void)c;
	atomic_fetch_add(&((struct node *)arg)->connected, 1);
}

static const struct msgr_ops node_ops = { .dispatch = node_dispatch,
					  .connected = node_connected };

static struct msgr_config cfg_of(uint8_t type, uint64_t id)
{
	struct msgr_config cfg = {
		.size_of = sizeof(cfg),
		.me = { .type = type, .id = id },
		.reconnect_min_ms = 10,
		.reconnect_max_ms = 100,
	};

	memcpy(cfg.fsid, FSID, 16);
	return cfg;
}

static void node_start(struct node *n, const struct msgr_config *cfg, bool listen)
{
	memset(n, 0, sizeof(*n));
	pthread_mutex_init(&n->lock, NULL);
	cr_assert_eq(msgr_create(cfg, &node_ops, n, &n->m), 0);
	if (listen)
		cr_assert_eq(msgr_listen(n->m, "127.0.0.1:0", n->addr, sizeof(n->addr)), 0);
	cr_assert_eq(msgr_start(n->m), 0);
}

static void node_free_held(struct node *n)
{
	pthread_mutex_lock(&n->lock);
	for (int i = 0; i < n->nheld; i++)
		msg_free(n->held[i]);
	n->nheld = 0;
	pthread_mutex_unlock(&n->lock);
}

static void node_stop(struct node *n)
{
	msgr_destroy(n->m);
	node_free_held(n);
	pthread_mutex_destroy(&n->lock);
}

/* Waits until n's dispatch count stops moving, and returns it. */
static int settled(struct node *n)
{
	int seen;

	do {
		seen = atomic_load(&n->dispatched);
		usleep(150 * 1000);
	} while (seen != atomic_load(&n->dispatched));
	return seen;
}

static uint64_t pool_bytes(struct node *n, enum msg_class cls, uint32_t *frames)
{
	uint64_t bytes, pauses;
	uint32_t f;

	msg_budget__usage(n->m->budget, cls, &bytes, &f, &pauses);
	if (frames)
		*frames = f;
	return bytes;
}

static void send_hold(struct msg_conn *c, int count, size_t size)
{
	static uint8_t data[1 << 20];

	cr_assert_leq(size, sizeof(data));
	for (int i = 0; i < count; i++) {
		struct msg *m = msg_new(T_HOLD, NULL);

		cr_assert_not_null(m);
		msg_set_data_ref(m, data, size, NULL, NULL);
		cr_assert_eq(msg_send(c, m), 0);
	}
}

/* One call with size bytes of data, answered with them: 0 or an error. */
static int echo_within(struct msg_conn *c, size_t size, uint32_t timeout_ms)
{
	struct msg *m = msg_new(T_ECHO, NULL), *r = NULL;
	uint8_t *data = calloc(1, size ? size : 1);
	int err;

	cr_assert_not_null(m);
	cr_assert_not_null(data);
	cr_assert_eq(msg_set_data(m, data, size), 0);
	err = msg_call_wait(c, m, timeout_ms, &r);
	if (!err && r->data_len != size)
		err = -EBADMSG;
	msg_free(r);
	free(data);
	return err;
}

static int echo(struct msg_conn *c, size_t size)
{
	return echo_within(c, size, WAIT_MS);
}

#define FRAME(size)	(MSG_HEADER_LEN + (uint64_t)(size) + MSG_TRAILER_LEN)

/* ---- receive budgets ---- */

Test(msg_limits, full_client_pool_pauses_the_connection_until_messages_are_freed)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1), ccfg = cfg_of(MSG_ENTITY_CLIENT, 9);
	struct node s, cl;
	struct msg_conn *c;

	scfg.client_bytes_max = 1 << 20;
	node_start(&s, &scfg, true);
	node_start(&cl, &ccfg, false);
	c = msgr_connect(cl.m, s.addr);
	send_hold(c, 20, 256 << 10);
	cr_assert(TU_WAIT_FOR(atomic_load(&s.dispatched) > 0, WAIT_MS));
	/* three fit in 1 MiB; the fourth waits with its header read */
	cr_expect_eq(settled(&s), 3);
	cr_expect_leq(pool_bytes(&s, MSG_CLASS_CLIENT, NULL), 1 << 20);
	cr_expect_eq(pool_bytes(&s, MSG_CLASS_PEER, NULL), 0);
	for (int i = 0; i < 500 && atomic_load(&s.dispatched) < 20; i++) {
		node_free_held(&s);
		usleep(10 * 1000);
	}
	cr_expect(TU_WAIT_FOR(atomic_load(&s.dispatched) == 20, WAIT_MS), "only %d arrived",
		  atomic_load(&s.dispatched));
	node_free_held(&s);
	cr_expect(TU_WAIT_FOR(pool_bytes(&s, MSG_CLASS_CLIENT, NULL) == 0, WAIT_MS));
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

Test(msg_limits, cluster_peers_are_served_while_the_client_pool_is_full)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1);
	struct msgr_config ccfg = cfg_of(MSG_ENTITY_CLIENT, 9), pcfg = cfg_of(MSG_ENTITY_OSD, 2);
	struct node s, cl, peer;
	struct msg_conn *c, *p, *c2;

	scfg.client_bytes_max = 1 << 20;
	node_start(&s, &scfg, true);
	node_start(&cl, &ccfg, false);
	node_start(&peer, &pcfg, false);
	c = msgr_connect(cl.m, s.addr);
	send_hold(c, 40, 256 << 10);
	cr_assert(TU_WAIT_FOR(atomic_load(&s.dispatched) >= 3, WAIT_MS));
	settled(&s);
	/* a peer's requests use the peer pool: answered at once */
	p = msgr_connect(peer.m, s.addr);
	for (int i = 0; i < 20; i++)
		cr_assert_eq(echo(p, 512 << 10), 0, "a cluster peer was paused by clients");
	/* another client's frame that does not fit waits for the client
	 * pool (held messages are not freed) */
	c2 = msgr_connect(cl.m, s.addr);
	cr_expect_eq(echo_within(c2, 512 << 10, 500), -ETIMEDOUT);
	cr_expect_gt(pool_bytes(&s, MSG_CLASS_CLIENT, NULL), 0);
	msg_conn_put(c2);
	msg_conn_put(p);
	msg_conn_put(c);
	node_stop(&peer);
	node_stop(&cl);
	node_stop(&s);
}

Test(msg_limits, frame_bigger_than_the_pool_is_taken_when_nothing_else_is_held)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1), ccfg = cfg_of(MSG_ENTITY_CLIENT, 9);
	struct node s, cl;
	struct msg_conn *c;

	scfg.client_bytes_max = 256 << 10;
	scfg.inflight_max = 256 << 10;
	node_start(&s, &scfg, true);
	node_start(&cl, &ccfg, false);
	c = msgr_connect(cl.m, s.addr);
	for (int i = 0; i < 3; i++)
		cr_expect_eq(echo(c, 4 << 20), 0);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

Test(msg_limits, messages_per_connection_are_capped)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1), ccfg = cfg_of(MSG_ENTITY_CLIENT, 9);
	struct node s, cl;
	struct msg_conn *c;

	scfg.conn_frames_max = 4;
	node_start(&s, &scfg, true);
	node_start(&cl, &ccfg, false);
	c = msgr_connect(cl.m, s.addr);
	send_hold(c, 10, 100);
	cr_assert(TU_WAIT_FOR(atomic_load(&s.dispatched) > 0, WAIT_MS));
	cr_expect_eq(settled(&s), 4);
	node_free_held(&s);
	cr_expect(TU_WAIT_FOR(atomic_load(&s.dispatched) == 8, WAIT_MS));
	node_free_held(&s);
	cr_expect(TU_WAIT_FOR(atomic_load(&s.dispatched) == 10, WAIT_MS));
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

/* ---- raw sockets ---- */

static int raw_connect_from(const char *from, const char *addr)
{
	struct sockaddr_in sin = { .sin_family = AF_INET }, src = { .sin_family = AF_INET };
	char ip[64];
	uint16_t port;
	int fd;

	cr_assert_eq(msg_parse_addr(addr, ip, sizeof(ip), &port), 0);
	sin.sin_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	if (from) {
		cr_assert_eq(inet_pton(AF_INET, from, &src.sin_addr), 1);
		cr_assert_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	}
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static void raw_hello(int fd, uint8_t type)
{
	struct msg_hello h = { .who = { type, 5 } };
	struct enc e;

	memcpy(h.fsid, FSID, 16);
	enc_init(&e);
	msg_hello_frame(&e, &h);
	cr_assert_eq(send(fd, e.buf, e.len, MSG_NOSIGNAL), (ssize_t)e.len);
	enc_free(&e);
}

/* True when the server closed fd within ms (what it sends is read and
 * dropped: its hello, keepalives). */
static bool raw_closed(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[4096];

	for (int waited = 0; waited < ms; waited += 10) {
		if (poll(&p, 1, 10) == 1) {
			ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (r == 0 || (r < 0 && errno != EAGAIN))
				return true;
		}
	}
	return false;
}

/* The bytes allocated so far for the data of the frame that s's
 * accepted connections are receiving (the largest). */
static uint32_t rx_data_alloc(struct node *s)
{
	uint32_t most = 0;

	pthread_mutex_lock(&s->m->lock);
	for (struct msg_conn *c = s->m->all; c; c = c->all_next)
		if (!c->dialled && c->rx_dcap > most)
			most = c->rx_dcap;
	pthread_mutex_unlock(&s->m->lock);
	return most;
}

Test(msg_limits, header_whose_payload_never_comes_costs_budget_not_memory)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1);
	struct msg_hdr h = { .type = T_HOLD, .data_len = 64u << 20 };
	uint8_t hdr[MSG_HEADER_LEN], chunk[64 << 10] = { 0 };
	struct node s;
	int fd;

	scfg.client_bytes_max = 128u << 20;
	scfg.frame_timeout_ms = 1500;
	scfg.keepalive_ms = 200;
	node_start(&s, &scfg, true);
	fd = raw_connect_from(NULL, s.addr);
	raw_hello(fd, MSG_ENTITY_CLIENT);
	msg_hdr_encode(hdr, &h);
	cr_assert_eq(send(fd, hdr, sizeof(hdr), MSG_NOSIGNAL), (ssize_t)sizeof(hdr));
	/* the header costs a message and its own bytes, not 64 MiB */
	cr_assert(TU_WAIT_FOR(pool_bytes(&s, MSG_CLASS_CLIENT, NULL) == FRAME(0), WAIT_MS));
	/* 2 MiB of it arrive: the buffer and the charge follow them */
	for (int i = 0; i < 32; i++)
		cr_assert_eq(send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL), (ssize_t)sizeof(chunk));
	usleep(200 * 1000);
	cr_expect_leq(rx_data_alloc(&s), 4u << 20, "%u bytes allocated for 2 MiB received",
		      rx_data_alloc(&s));
	cr_expect_leq(pool_bytes(&s, MSG_CLASS_CLIENT, NULL), FRAME(4u << 20));
	/* then nothing: the frame's time runs out and its budget comes back */
	cr_expect(raw_closed(fd, 4000), "the trickling connection was not closed");
	cr_expect(TU_WAIT_FOR(pool_bytes(&s, MSG_CLASS_CLIENT, NULL) == 0, WAIT_MS));
	close(fd);
	node_stop(&s);
}

Test(msg_limits, stalled_big_headers_do_not_stop_other_clients)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1), ccfg = cfg_of(MSG_ENTITY_CLIENT, 9);
	struct msg_hdr h = { .type = T_HOLD, .data_len = 64u << 20 };
	uint8_t hdr[MSG_HEADER_LEN];
	struct node s, cl;
	struct msg_conn *c;
	int fds[16];

	node_start(&s, &scfg, true);
	node_start(&cl, &ccfg, false);
	msg_hdr_encode(hdr, &h);
	for (int i = 0; i < 16; i++) {
		char from[32];

		snprintf(from, sizeof(from), "127.0.0.%d", 2 + i % 8);
		fds[i] = raw_connect_from(from, s.addr);
		raw_hello(fds[i], MSG_ENTITY_CLIENT);
		cr_assert_eq(send(fds[i], hdr, sizeof(hdr), MSG_NOSIGNAL), (ssize_t)sizeof(hdr));
	}
	cr_assert(TU_WAIT_FOR(pool_bytes(&s, MSG_CLASS_CLIENT, NULL) == 16 * FRAME(0), WAIT_MS));
	c = msgr_connect(cl.m, s.addr);
	for (int i = 0; i < 50; i++)
		cr_assert_eq(echo_within(c, 64 << 10, 2000), 0, "call %d", i);
	cr_expect_eq(echo(c, 8 << 20), 0);
	for (int i = 0; i < 16; i++)
		close(fds[i]);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

Test(msg_limits, frames_half_received_cannot_deadlock_the_pool)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1), ccfg = cfg_of(MSG_ENTITY_CLIENT, 9);
	struct node s, cl[4];
	struct msg_conn *c[4];
	atomic_int ok = 0;

	/* four clients' 4 MiB frames against a 2 MiB pool: each can only
	 * finish past the limit, one at a time */
	scfg.client_bytes_max = 2 << 20;
	node_start(&s, &scfg, true);
	for (int i = 0; i < 4; i++) {
		node_start(&cl[i], &ccfg, false);
		c[i] = msgr_connect(cl[i].m, s.addr);
	}
	for (int round = 0; round < 3; round++) {
		struct msg_waiter w[4] = { MSG_WAITER_INIT, MSG_WAITER_INIT, MSG_WAITER_INIT,
					   MSG_WAITER_INIT };
		static uint8_t data[4 << 20];

		for (int i = 0; i < 4; i++) {	/* all four at once */
			struct msg *m = msg_new(T_ECHO, NULL);

			cr_assert_not_null(m);
			msg_set_data_ref(m, data, sizeof(data), NULL, NULL);
			cr_assert_eq(msg_call(c[i], m, WAIT_MS, msg_waiter_done, &w[i]), 0);
		}
		for (int i = 0; i < 4; i++) {
			struct msg *r;

			if (msg_waiter_wait(&w[i], &r) == 0 && r->data_len == sizeof(data))
				ok++;
			msg_free(r);
		}
	}
	cr_expect_eq(ok, 12);
	cr_expect(TU_WAIT_FOR(pool_bytes(&s, MSG_CLASS_CLIENT, NULL) == 0, WAIT_MS));
	{
		uint64_t bytes, pauses;
		uint32_t frames;

		msg_budget__usage(s.m->budget, MSG_CLASS_CLIENT, &bytes, &frames, &pauses);
		cr_expect_gt(pauses, 0, "no frame ever waited: the test tests nothing");
	}
	for (int i = 0; i < 4; i++) {
		msg_conn_put(c[i]);
		node_stop(&cl[i]);
	}
	node_stop(&s);
}

/* ---- connection slots ---- */

Test(msg_limits, clients_over_the_per_address_limit_are_refused_peers_are_not)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1);
	struct node s;
	int fds[5], peer;

	scfg.conns_per_addr = 3;
	node_start(&s, &scfg, true);
	for (int i = 0; i < 5; i++) {
		fds[i] = raw_connect_from(NULL, s.addr);
		raw_hello(fds[i], MSG_ENTITY_CLIENT);
		if (i < 3)
			cr_assert(TU_WAIT_FOR(atomic_load(&s.connected) == i + 1, WAIT_MS));
	}
	cr_expect(raw_closed(fds[3], 2000));
	cr_expect(raw_closed(fds[4], 2000));
	cr_expect(!raw_closed(fds[0], 100));
	peer = raw_connect_from(NULL, s.addr);
	raw_hello(peer, MSG_ENTITY_OSD);
	cr_expect(TU_WAIT_FOR(atomic_load(&s.connected) == 4, WAIT_MS), "a peer was refused");
	/* another address has slots of its own */
	fds[3] = raw_connect_from("127.0.0.2", s.addr);
	raw_hello(fds[3], MSG_ENTITY_CLIENT);
	cr_expect(TU_WAIT_FOR(atomic_load(&s.connected) == 5, WAIT_MS));
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	close(peer);
	node_stop(&s);
}

Test(msg_limits, reserved_slots_take_a_peer_when_clients_hold_the_rest)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_MON, 0);
	struct node s;
	int fds[3], peer;

	scfg.conns_max = 4;
	scfg.peer_reserved = 2;
	node_start(&s, &scfg, true);
	for (int i = 0; i < 3; i++) {
		fds[i] = raw_connect_from(NULL, s.addr);
		raw_hello(fds[i], MSG_ENTITY_CLIENT);
	}
	cr_assert(TU_WAIT_FOR(atomic_load(&s.connected) == 2, WAIT_MS));
	cr_expect(raw_closed(fds[2], 2000), "a third client took a reserved slot");
	peer = raw_connect_from(NULL, s.addr);
	raw_hello(peer, MSG_ENTITY_MON);
	cr_expect(TU_WAIT_FOR(atomic_load(&s.connected) == 3, WAIT_MS), "the peer was refused");
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(peer);
	node_stop(&s);
}

Test(msg_limits, a_new_handshake_closes_the_oldest_when_all_slots_wait)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1), ccfg = cfg_of(MSG_ENTITY_CLIENT, 9);
	struct node s, cl;
	struct msg_conn *c;
	int fds[6];

	scfg.handshakes_max = 4;
	node_start(&s, &scfg, true);
	node_start(&cl, &ccfg, false);
	for (int i = 0; i < 6; i++)
		fds[i] = raw_connect_from("127.0.0.2", s.addr);	/* silent */
	cr_expect(raw_closed(fds[0], 2000));
	cr_expect(raw_closed(fds[1], 2000));
	cr_expect(!raw_closed(fds[5], 100));
	/* a real client still gets in (and pushes out one more) */
	c = msgr_connect(cl.m, s.addr);
	cr_expect_eq(echo(c, 100), 0);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

Test(msg_limits, one_address_cannot_hold_more_handshakes_than_its_share)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1);
	struct node s;
	int fds[3], other;

	scfg.handshakes_per_addr = 2;
	node_start(&s, &scfg, true);
	for (int i = 0; i < 3; i++)
		fds[i] = raw_connect_from("127.0.0.3", s.addr);
	cr_expect(raw_closed(fds[2], 2000));
	cr_expect(!raw_closed(fds[0], 100));
	other = raw_connect_from("127.0.0.4", s.addr);
	cr_expect(!raw_closed(other, 200));
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(other);
	node_stop(&s);
}

/* The socket of s's accepted connection (the only one), or -1. */
static int accepted_fd(struct node *s)
{
	int fd = -1;

	pthread_mutex_lock(&s->m->lock);
	for (struct msg_conn *c = s->m->all; c; c = c->all_next)
		if (!c->dialled)
			fd = c->fd;
	pthread_mutex_unlock(&s->m->lock);
	return fd;
}

Test(msg_limits, handshaking_socket_has_a_small_receive_buffer_until_its_hello)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1);
	int fd, sfd, size = 0, lock = -1, fresh = 0, probe;
	socklen_t len = sizeof(int);
	struct node s;

	node_start(&s, &scfg, true);
	probe = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(getsockopt(probe, SOL_SOCKET, SO_RCVBUF, &fresh, &len), 0);
	close(probe);
	fd = raw_connect_from(NULL, s.addr);
	cr_assert(TU_WAIT_FOR((sfd = accepted_fd(&s)) >= 0, WAIT_MS));
	cr_assert_eq(getsockopt(sfd, SOL_SOCKET, SO_RCVBUF, &size, &len), 0);
	cr_expect_leq(size, 2 * MSG_DEFAULT_HS_RCVBUF, "%d bytes before the hello", size);
	raw_hello(fd, MSG_ENTITY_CLIENT);
	cr_assert(TU_WAIT_FOR(atomic_load(&s.connected) == 1, WAIT_MS));
	cr_assert_eq(getsockopt(sfd, SOL_SOCKET, SO_RCVBUF, &size, &len), 0);
	cr_assert_eq(getsockopt(sfd, SOL_SOCKET, SO_BUF_LOCK, &lock, &len), 0);
	cr_expect_eq(size, fresh, "%d bytes after the hello, a new socket has %d", size, fresh);
	cr_expect_eq(lock, 0, "the kernel does not size the buffer again");
	close(fd);
	node_stop(&s);
}

Test(msg_limits, bad_frames_from_many_connections_log_a_few_lines)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1);
	char path[] = "/tmp/atoll-test-msglim-XXXXXX", buf[65536];
	uint8_t junk[MSG_HEADER_LEN];
	int lines = 0, fd;
	struct node s;
	ssize_t n;

	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(log_open("test", LOG_LVL_WARN, path), 0);
	node_start(&s, &scfg, true);
	memset(junk, 'x', sizeof(junk));
	for (int i = 0; i < 50; i++) {
		int c = raw_connect_from(NULL, s.addr);

		cr_assert_eq(send(c, junk, sizeof(junk), MSG_NOSIGNAL), (ssize_t)sizeof(junk));
		cr_expect(raw_closed(c, WAIT_MS));
		close(c);
	}
	node_stop(&s);
	log_close();
	n = read(fd, buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	for (char *p = buf; (p = strstr(p, "bad magic")); p++)
		lines++;
	cr_expect(lines >= 1 && lines <= 5, "%d lines for 50 bad connections: %s", lines, buf);
	close(fd);
	unlink(path);
}

/* ---- accept() failing ---- */

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

Test(msg_limits, out_of_descriptors_pauses_the_listener_instead_of_spinning)
{
	struct msgr_config scfg = cfg_of(MSG_ENTITY_OSD, 1);
	struct rlimit old, low;
	struct node s;
	int fds[4], top = 0;
	double cpu;

	node_start(&s, &scfg, true);
	for (int i = 0; i < 4; i++)
		fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	for (int i = 0; i < 4; i++)
		top = fds[i] > top ? fds[i] : top;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	int spare[64], nspare = 0;

	low.rlim_cur = (rlim_t)top + 1;	/* no descriptor left for accept() */
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (nspare < 64 && (spare[nspare] = dup(0)) >= 0)	/* fill the holes */
		nspare++;
	for (int i = 0; i < 4; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET };
		char ip[64];
		uint16_t port;

		cr_assert_eq(msg_parse_addr(s.addr, ip, sizeof(ip), &port), 0);
		sin.sin_port = htons(port);
		inet_pton(AF_INET, ip, &sin.sin_addr);
		cr_assert_eq(connect(fds[i], (struct sockaddr *)&sin, sizeof(sin)), 0);
	}
	cpu = cpu_s();
	usleep(1000 * 1000);
	cr_expect_lt(cpu_s() - cpu, 0.05, "the loop spun: %.2f s of CPU in 1 s",
		     cpu_s() - cpu);
	cr_expect_neq(s.m->log_accept.next_ns, 0, "accept() never failed");
	cr_expect_eq(s.m->slots.handshaking, 0);
	/* descriptors again: the waiting connections are taken */
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	for (int i = 0; i < nspare; i++)
		close(spare[i]);
	cr_expect(TU_WAIT_FOR(s.m->slots.handshaking == 4, WAIT_MS),
		  "accepted %u after the limit was raised", s.m->slots.handshaking);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	node_stop(&s);
}

/* ---- atoll.conf ---- */

Test(msg_limits, config_keys_fill_the_limits_and_a_bad_value_is_named)
{
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct config *conf;
	char err[256];

	cr_assert_eq(config_load_string(&conf, "[global]\nms_max_conns = 100\n"
					"[osd]\nms_client_inflight_bytes = 8M\n"
					"ms_handshake_rcvbuf = 0\nms_frame_timeout = 5s\n",
					err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(msgr_config_read(conf, "osd.1", &mc, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(mc.conns_max, 100);
	cr_expect_eq(mc.client_bytes_max, 8u << 20);
	cr_expect_eq(mc.peer_bytes_max, MSG_DEFAULT_POOL_BYTES);
	cr_expect_eq(mc.handshake_rcvbuf, UINT32_MAX, "0 leaves the kernel's buffer alone");
	cr_expect_eq(mc.frame_timeout_ms, 5000);
	cr_expect_eq(mc.frame_max, MSG_DEFAULT_FRAME_MAX);
	config_free(conf);

	cr_assert_eq(config_load_string(&conf, "[mon]\nms_max_handshakes = lots\n", err,
					sizeof(err)), 0);
	cr_expect_lt(msgr_config_read(conf, "mon", &mc, err, sizeof(err)), 0);
	cr_expect(strstr(err, "ms_max_handshakes"), "%s", err);
	config_free(conf);
	cr_assert_eq(config_load_string(&conf, "[mds]\nms_frame_max = 2G\n", err,
					sizeof(err)), 0);
	cr_expect_eq(msgr_config_read(conf, "mds", &mc, err, sizeof(err)), -ERANGE);
	cr_expect(strstr(err, "ms_frame_max"), "%s", err);
	config_free(conf);
}
