/*
 * test_messenger.c - lib/messenger.c, msg_conn.c, msg_handshake.c,
 * msg_rx.c and msg_frame.c: the wire format, requests and replies
 * between two messengers over loopback, the limits at their edges,
 * every kind of bad input from a raw socket (the connection closes,
 * others keep working), timeouts, peer death and redial, flow control,
 * and shutdown.
 *
 * Criterion runs each test in its own process.  Waits poll with a
 * deadline rather than sleep a fixed time, so the suite stays fast and
 * does not flake under the sanitizers.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crc32c.h"
#include "encode.h"
#include "log.h"
#include "msg.h"
#include "testutil.h"
#include "msg_frame.h"

#define T_ECHO		100	/* reply with the same front and data */
#define T_SUM		101	/* reply with data_len and the data's crc */
#define T_DROP		102	/* no reply */
#define T_HOLD		103	/* kept by the node until the test frees it */
#define T_ONEWAY	104	/* counted, front is a sequence number */
#define T_TWICE		105	/* replied to twice */
#define T_BOGUS		106	/* a reply with a wrong tid, then the right one */

#define WAIT_MS		5000
#define HELD_MAX	512

static const uint8_t FSID_A[16] = { 0xa1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t FSID_B[16] = { 0xb1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t FSID_ZERO[16];


/* ---- a messenger with a scripted dispatcher ---- */

struct node {
	struct msgr *m;
	char addr[64];
	atomic_int connected, closed, dispatched, oneway, replies_seen;
	atomic_int last_closed_err;
	atomic_bool order_ok;
	atomic_uint next_seq;
	atomic_uint_least64_t max_inflight;
	pthread_mutex_t lock;		/* protects held, nheld */
	struct msg *held[HELD_MAX];
	int nheld;
};

static struct msg *make_msg(uint16_t type, const void *front, size_t front_len,
			    const void *data, size_t data_len)
{
	struct enc e;
	struct msg *m;

	enc_init(&e);
	enc_raw(&e, front, front_len);
	m = msg_new(type, &e);
	cr_assert_not_null(m);
	enc_free(&e);
	if (data_len)
		cr_assert_eq(msg_set_data(m, data, data_len), 0);
	return m;
}

static struct msg *make_u32(uint16_t type, uint32_t v)
{
	struct enc e;
	struct msg *m;

	enc_init(&e);
	enc_u32(&e, v);
	m = msg_new(type, &e);
	cr_assert_not_null(m);
	enc_free(&e);
	return m;
}

/* The u32 a front starts with, UINT32_MAX when it has none.  Callbacks
 * run on a loop thread, where a Criterion assertion must not fire: they
 * count failures instead, and the test checks the counts. */
static uint32_t front_u32(const struct msg *m)
{
	struct dec d;
	uint32_t v;

	if (!m)
		return UINT32_MAX;
	dec_init(&d, m->front, m->front_len);
	v = dec_u32(&d);
	return d.err ? UINT32_MAX : v;
}

static void node_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct node *n = arg;
	uint64_t infl = msg_conn_inflight(c), seen;
	struct msg *r;
	struct enc e;

	atomic_fetch_add(&n->dispatched, 1);
	seen = atomic_load(&n->max_inflight);
	while (infl > seen && !atomic_compare_exchange_weak(&n->max_inflight, &seen, infl))
		;
	if (m->flags & MSG_F_REPLY)
		atomic_fetch_add(&n->replies_seen, 1);	/* must never happen */
	switch (m->type) {
	case T_ECHO:
		r = make_msg(T_ECHO, m->front, m->front_len, m->data, m->data_len);
		msg_reply(c, m, r);
		break;
	case T_SUM:
		enc_init(&e);
		enc_u32(&e, m->data_len);
		enc_u32(&e, atoll__crc32c(0, m->data, m->data_len));
		r = msg_new(T_SUM, &e);
		enc_free(&e);
		msg_reply(c, m, r);
		break;
	case T_HOLD:
		pthread_mutex_lock(&n->lock);
		if (n->nheld < HELD_MAX) {
			n->held[n->nheld++] = m;
			m = NULL;
		}
		pthread_mutex_unlock(&n->lock);
		if (m)
			abort();	/* the test holds too many */
		return;
	case T_ONEWAY:
		if (front_u32(m) != atomic_fetch_add(&n->next_seq, 1))
			atomic_store(&n->order_ok, false);
		atomic_fetch_add(&n->oneway, 1);
		break;
	case T_TWICE:
		msg_reply(c, m, make_u32(T_TWICE, 1));
		msg_reply(c, m, make_u32(T_TWICE, 2));
		break;
	case T_BOGUS:
		r = make_u32(T_BOGUS, 1);
		r->tid = m->tid + 1000000;
		r->flags = MSG_F_REPLY;
		msg_send(c, r);
		msg_reply(c, m, make_u32(T_BOGUS, 2));
		break;
	default:
		break;
	}
	msg_free(m);
}

static void node_connected(void *arg, struct msg_conn *c)
{
	struct node *n = arg;

	if (!msg_conn_is_open(c))
		abort();
	atomic_fetch_add(&n->connected, 1);
}

static void node_closed(void *arg, struct msg_conn *c, int err)
{
	struct node *n = arg;

	atomic_store(&n->last_closed_err, err);
	atomic_fetch_add(&n->closed, 1);
}

static const struct msgr_ops node_ops = {
	.dispatch = node_dispatch,
	.connected = node_connected,
	.closed = node_closed,
};

static struct msgr_config node_cfg(uint8_t type, uint64_t id, const uint8_t fsid[16])
{
	struct msgr_config cfg = {
		.size_of = sizeof(cfg),
		.me = { .type = type, .id = id },
		.features = 0xfeed0000u + id,
		.reconnect_min_ms = 10,
		.reconnect_max_ms = 100,
	};

	memcpy(cfg.fsid, fsid, 16);
	return cfg;
}

/* Starts n; listens on listen ("127.0.0.1:0" for a free port) unless NULL. */
static void node_start(struct node *n, const struct msgr_config *cfg, const char *listen)
{
	memset(n, 0, sizeof(*n));
	pthread_mutex_init(&n->lock, NULL);
	atomic_store(&n->order_ok, true);
	cr_assert_eq(msgr_create(cfg, &node_ops, n, &n->m), 0);
	if (listen)
		cr_assert_eq(msgr_listen(n->m, listen, n->addr, sizeof(n->addr)), 0);
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
	n->m = NULL;
	node_free_held(n);	/* after destroy on purpose: conns outlive it */
}

static struct node *server_a(void)
{
	static struct node s;
	struct msgr_config cfg = node_cfg(MSG_ENTITY_OSD, 7, FSID_A);

	node_start(&s, &cfg, "127.0.0.1:0");
	return &s;
}

/* ---- waiting for calls ---- */

struct waiter {
	atomic_int fired;
	int err;
	struct msg *reply;
};

static void on_reply(void *arg, struct msg *reply, int err)
{
	struct waiter *w = arg;

	w->err = err;
	w->reply = reply;
	atomic_fetch_add(&w->fired, 1);
}

/* One T_ECHO call on c; returns the error, checks the echo. */
static int echo_call(struct msg_conn *c, uint32_t v, uint32_t timeout_ms)
{
	struct waiter w = { 0 };
	int err;

	cr_assert_eq(msg_call(c, make_u32(T_ECHO, v), timeout_ms, on_reply, &w), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w.fired) == 1, WAIT_MS + (int)timeout_ms),
		  "call never completed");
	err = w.err;
	if (!err) {
		cr_assert_not_null(w.reply);
		cr_expect_eq(w.reply->type, T_ECHO);
		cr_expect(w.reply->flags & MSG_F_REPLY);
		cr_expect_eq(front_u32(w.reply), v);
		msg_free(w.reply);
	} else {
		cr_assert_null(w.reply);
	}
	return err;
}

/* A fresh client can talk to server: it keeps serving. */
static void assert_serves(struct node *server)
{
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 99, FSID_ZERO);
	struct msg_conn *c;
	struct node cl;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, server->addr);
	cr_assert_not_null(c);
	cr_assert_eq(echo_call(c, 4242, 0), 0, "the server stopped serving");
	msg_conn_put(c);
	node_stop(&cl);
}

/* ---- raw sockets ---- */

static int raw_connect(const char *addr)
{
	char ip[64];
	uint16_t port;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd;

	cr_assert_eq(msg_parse_addr(addr, ip, sizeof(ip), &port), 0);
	sin.sin_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static void raw_write(int fd, const void *p, size_t len)
{
	cr_assert_eq(send(fd, p, len, MSG_NOSIGNAL), (ssize_t)len);
}

static void raw_hello(int fd, const uint8_t fsid[16])
{
	struct msg_hello h = { .who = { MSG_ENTITY_CLIENT, 5 } };
	struct enc e;

	memcpy(h.fsid, fsid, 16);
	enc_init(&e);
	msg_hello_frame(&e, &h);
	cr_assert_eq(e.err, 0);
	raw_write(fd, e.buf, e.len);
	enc_free(&e);
}

/* A whole frame with a correct header and payload crc, in one send: a
 * peer that closes the connection once it has read a header it refuses
 * would make a later send of the same frame fail (ECONNRESET). */
static void raw_frame(int fd, uint16_t type, uint16_t flags, uint64_t tid,
		      const void *front, uint32_t front_len)
{
	struct msg_hdr h = { .type = type, .flags = flags, .tid = tid,
			     .front_len = front_len };
	uint32_t crc = msg_payload_crc(front, front_len, NULL, 0);
	size_t len = MSG_HEADER_LEN + front_len + 4;
	uint8_t *f = malloc(len);

	cr_assert_not_null(f);
	msg_hdr_encode(f, &h);
	if (front_len)
		memcpy(f + MSG_HEADER_LEN, front, front_len);
	for (int i = 0; i < 4; i++)
		f[MSG_HEADER_LEN + front_len + (size_t)i] = (uint8_t)(crc >> (8 * i));
	raw_write(fd, f, len);
	free(f);
}

/* True when the peer closes fd within ms (whatever it sends first is
 * read and dropped, e.g. its hello). */
static bool raw_closed(int fd, int ms)
{
	uint8_t buf[4096];

	for (int waited = 0; waited < ms; waited += 10) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 10) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
	}
	return false;
}

/* ---- the wire format ---- */

Test(msg_frame, header_round_trips)
{
	struct msg_hdr h = { .type = 0xbeef, .flags = MSG_F_REPLY, .tid = 0x0102030405060708ull,
			     .front_len = 17, .data_len = 4096 }, g;
	uint8_t buf[MSG_HEADER_LEN];

	msg_hdr_encode(buf, &h);
	cr_expect_eq(buf[0], 'A');
	cr_expect_eq(buf[3], '1');
	cr_assert_eq(msg_hdr_decode(buf, 1 << 20, &g), 0);
	cr_expect_eq(g.type, h.type);
	cr_expect_eq(g.flags, h.flags);
	cr_expect_eq(g.tid, h.tid);
	cr_expect_eq(g.front_len, h.front_len);
	cr_expect_eq(g.data_len, h.data_len);
}

Test(msg_frame, header_rejects_magic_crc_and_size)
{
	struct msg_hdr h = { .type = 200, .front_len = 10, .data_len = 20 }, g;
	uint8_t buf[MSG_HEADER_LEN];

	msg_hdr_encode(buf, &h);
	cr_expect_eq(msg_hdr_decode(buf, 30, &g), 0, "front + data == frame_max is fine");
	cr_expect_eq(msg_hdr_decode(buf, 29, &g), -EMSGSIZE);
	buf[8] ^= 1;
	cr_expect_eq(msg_hdr_decode(buf, 30, &g), -EBADMSG);
	buf[8] ^= 1;
	buf[0] ^= 1;
	cr_expect_eq(msg_hdr_decode(buf, 30, &g), -EPROTO);
	/* Lengths whose sum overflows 32 bits are still over the limit. */
	h.front_len = UINT32_MAX;
	h.data_len = UINT32_MAX;
	msg_hdr_encode(buf, &h);
	cr_expect_eq(msg_hdr_decode(buf, UINT32_MAX, &g), -EMSGSIZE);
}

Test(msg_frame, whole_frame_decodes_and_checks_payload_crc)
{
	struct msg_hello hello = { .fsid = { 1 }, .who = { MSG_ENTITY_MON, 3 } };
	const uint8_t *front, *data;
	struct msg_hdr h;
	struct enc e;
	size_t used;

	enc_init(&e);
	msg_hello_frame(&e, &hello);
	cr_assert_eq(e.err, 0);
	for (size_t len = 0; len < e.len; len++)
		cr_expect_eq(msg_frame_decode(e.buf, len, 1024, &h, &front, &data, &used),
			     -EAGAIN);
	cr_assert_eq(msg_frame_decode(e.buf, e.len, 1024, &h, &front, &data, &used), 0);
	cr_expect_eq(used, e.len);
	cr_expect_eq(h.type, MSG_T_HELLO);
	e.buf[MSG_HEADER_LEN + 2] ^= 0x40;
	cr_expect_eq(msg_frame_decode(e.buf, e.len, 1024, &h, &front, &data, &used), -EBADMSG);
	enc_free(&e);
}

Test(msg_frame, hello_round_trips)
{
	struct msg_hello h = { .who = { MSG_ENTITY_OSD, 12 }, .features = 0x55,
			       .auth = "secret", .auth_len = 6 }, g;
	struct enc e;

	memcpy(h.fsid, FSID_A, 16);
	enc_init(&e);
	msg_hello_encode(&e, &h);
	cr_assert_eq(e.err, 0);
	cr_assert_eq(msg_hello_decode(e.buf, e.len, &g), 0);
	cr_expect_eq(memcmp(g.fsid, FSID_A, 16), 0);
	cr_expect_eq(g.who.type, MSG_ENTITY_OSD);
	cr_expect_eq(g.who.id, 12);
	cr_expect_eq(g.features, 0x55);
	cr_expect_eq(g.auth_len, 6);
	cr_expect_eq(memcmp(g.auth, "secret", 6), 0);
	/* Every truncation fails cleanly. */
	for (size_t len = 0; len < e.len; len++)
		cr_expect_eq(msg_hello_decode(e.buf, len, &g), -EBADMSG, "len %zu", len);
	enc_free(&e);
}

Test(msg_frame, hello_rejects_big_auth_unknown_entity_and_trailing_bytes)
{
	static uint8_t big[MSG_HELLO_AUTH_MAX + 1];
	struct msg_hello h = { .who = { MSG_ENTITY_CLIENT, 1 }, .auth = big }, g;
	struct enc e;
	size_t sec;

	h.auth_len = sizeof(big);
	enc_init(&e);
	msg_hello_encode(&e, &h);
	cr_expect_eq(e.err, -E2BIG, "the writer refuses an auth blob over the cap");
	enc_free(&e);

	/* Written by hand: a blob over the cap is -E2BIG for the reader. */
	enc_init(&e);
	sec = enc_begin(&e, 1, 1);
	enc_raw(&e, FSID_A, 16);
	enc_u8(&e, MSG_ENTITY_CLIENT);
	enc_u64(&e, 1);
	enc_u64(&e, 0);
	enc_blob(&e, big, sizeof(big));
	enc_end(&e, sec);
	cr_expect_eq(msg_hello_decode(e.buf, e.len, &g), -E2BIG);
	enc_free(&e);

	h.auth_len = 0;
	h.who.type = 9;
	enc_init(&e);
	msg_hello_encode(&e, &h);
	cr_expect_eq(msg_hello_decode(e.buf, e.len, &g), -EBADMSG);
	enc_reset(&e);
	h.who.type = MSG_ENTITY_MON;
	msg_hello_encode(&e, &h);
	enc_u8(&e, 0);
	cr_expect_eq(msg_hello_decode(e.buf, e.len, &g), -EBADMSG);
	enc_free(&e);
}

Test(msg_frame, newer_hello_fields_are_skipped)
{
	struct msg_hello g;
	struct enc e;
	size_t sec;

	enc_init(&e);
	sec = enc_begin(&e, 3, 1);
	enc_raw(&e, FSID_B, 16);
	enc_u8(&e, MSG_ENTITY_MDS);
	enc_u64(&e, 2);
	enc_u64(&e, 7);
	enc_blob(&e, NULL, 0);
	enc_u64(&e, 0xdeadbeef);	/* a field of version 3 */
	enc_end(&e, sec);
	cr_assert_eq(msg_hello_decode(e.buf, e.len, &g), 0);
	cr_expect_eq(g.who.type, MSG_ENTITY_MDS);
	cr_expect_eq(g.features, 7);
	enc_free(&e);
}

Test(msg_addr, parse_accepts_ipv4_ipv6_and_refuses_junk)
{
	char ip[64];
	uint16_t port;

	cr_assert_eq(msg_parse_addr("127.0.0.1:6789", ip, sizeof(ip), &port), 0);
	cr_expect_str_eq(ip, "127.0.0.1");
	cr_expect_eq(port, 6789);
	cr_assert_eq(msg_parse_addr("[::1]:0", ip, sizeof(ip), &port), 0);
	cr_expect_str_eq(ip, "::1");
	cr_expect_eq(port, 0);
	cr_expect_eq(msg_parse_addr("127.0.0.1", ip, sizeof(ip), &port), -EINVAL);
	cr_expect_eq(msg_parse_addr("127.0.0.1:65536", ip, sizeof(ip), &port), -EINVAL);
	cr_expect_eq(msg_parse_addr("127.0.0.1:-1", ip, sizeof(ip), &port), -EINVAL);
	cr_expect_eq(msg_parse_addr("127.0.0.1:80x", ip, sizeof(ip), &port), -EINVAL);
	cr_expect_eq(msg_parse_addr(":80", ip, sizeof(ip), &port), -EINVAL);
	cr_expect_eq(msg_parse_addr("::1:80", ip, sizeof(ip), &port), -EINVAL);
	cr_expect_eq(msg_parse_addr("[::1]80", ip, sizeof(ip), &port), -EINVAL);
	cr_expect_eq(msg_parse_addr("", ip, sizeof(ip), &port), -EINVAL);
	cr_expect_eq(msg_parse_addr("127.0.0.1:1", ip, 4, &port), -ENAMETOOLONG);
}

/* ---- the messenger ---- */

Test(messenger, listen_binds_the_given_address_and_reports_the_port)
{
	struct msgr_config cfg = node_cfg(MSG_ENTITY_OSD, 1, FSID_A);
	char bound[64];
	struct msgr *m;

	cr_assert_eq(msgr_create(&cfg, &node_ops, NULL, &m), 0);
	cr_assert_eq(msgr_listen(m, "127.0.0.1:0", bound, sizeof(bound)), 0);
	cr_expect_eq(strncmp(bound, "127.0.0.1:", 10), 0, "bound '%s'", bound);
	cr_expect_neq(strcmp(bound, "127.0.0.1:0"), 0, "the real port is reported");
	cr_expect_eq(msgr_listen(m, "127.0.0.1", NULL, 0), -EINVAL);
	cr_expect_neq(msgr_listen(m, bound, NULL, 0), 0, "the port is taken");
	msgr_destroy(m);
	msgr_destroy(NULL);
}

Test(messenger, create_refuses_a_config_without_size)
{
	struct msgr_config cfg = node_cfg(MSG_ENTITY_OSD, 1, FSID_A);
	struct msgr *m;

	cfg.size_of = 0;
	cr_expect_eq(msgr_create(&cfg, &node_ops, NULL, &m), -EINVAL);
	cr_expect_null(m);
}

Test(messenger, call_gets_its_reply_and_the_peer_is_known)
{
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 42, FSID_ZERO);
	struct msg_identity peer;
	uint8_t fsid[16];
	struct msg_conn *c;
	struct node cl;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_not_null(c);
	cr_expect_eq(msg_conn_peer(c).type, MSG_ENTITY_NONE, "unknown before the handshake");
	cr_assert_eq(echo_call(c, 1234, 0), 0);
	peer = msg_conn_peer(c);
	cr_expect_eq(peer.type, MSG_ENTITY_OSD);
	cr_expect_eq(peer.id, 7);
	cr_expect_eq(msg_conn_features(c), 0xfeed0007u);
	cr_expect(msg_conn_is_open(c));
	cr_expect_str_eq(msg_conn_addr(c), s->addr);
	cr_expect_eq(msg_conn_msgr(c), cl.m);
	msg_conn_set_priv(c, &cl);
	cr_expect_eq(msg_conn_priv(c), &cl);
	msgr_fsid(cl.m, fsid);
	cr_expect_eq(memcmp(fsid, FSID_A, 16), 0, "the client learnt the fsid");
	cr_expect_eq(atomic_load(&cl.connected), 1);
	cr_expect(TU_WAIT_FOR(atomic_load(&s->connected) == 1, WAIT_MS));
	cr_expect_eq(atomic_load(&s->replies_seen), 0);

	/* Data travels too, both ways. */
	{
		static uint8_t data[100000];
		struct waiter w = { 0 };

		for (size_t i = 0; i < sizeof(data); i++)
			data[i] = (uint8_t)(i * 7);
		cr_assert_eq(msg_call(c, make_msg(T_ECHO, "x", 1, data, sizeof(data)), 0,
				      on_reply, &w), 0);
		cr_assert(TU_WAIT_FOR(atomic_load(&w.fired) == 1, WAIT_MS));
		cr_assert_eq(w.err, 0);
		cr_assert_eq(w.reply->data_len, sizeof(data));
		cr_expect_eq(memcmp(w.reply->data, data, sizeof(data)), 0);
		cr_expect_eq(w.reply->conn, c);
		msg_free(w.reply);
	}
	msg_conn_put(c);
	cr_expect(TU_WAIT_FOR(atomic_load(&s->closed) == 1, WAIT_MS),
		  "putting the last reference closes a dialled connection");
	node_stop(&cl);
	node_stop(s);
}

Test(messenger, one_way_messages_arrive_in_order)
{
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct msg_conn *c;
	struct node cl;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_not_null(c);
	for (uint32_t i = 0; i < 5000; i++)
		cr_assert_eq(msg_send(c, make_u32(T_ONEWAY, i)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&s->oneway) == 5000, WAIT_MS));
	cr_expect(atomic_load(&s->order_ok));
	cr_expect(TU_WAIT_FOR(msg_conn_queued(c) == 0, WAIT_MS));
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(s);
}

struct many {
	atomic_int done, bad;
};

struct many_call {
	struct many *all;
	uint32_t v;
};

static void on_many(void *arg, struct msg *reply, int err)
{
	struct many_call *mc = arg;

	if (err || front_u32(reply) != mc->v)
		atomic_fetch_add(&mc->all->bad, 1);
	msg_free(reply);
	atomic_fetch_add(&mc->all->done, 1);
}

Test(messenger, thousand_calls_in_flight)
{
	static struct many_call calls[1000];
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct many all = { 0 };
	struct msg_conn *c;
	struct node cl;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_not_null(c);
	for (uint32_t i = 0; i < 1000; i++) {
		calls[i].all = &all;
		calls[i].v = i * 3 + 1;
		cr_assert_eq(msg_call(c, make_u32(T_ECHO, calls[i].v), 10000, on_many,
				      &calls[i]), 0);
	}
	cr_assert(TU_WAIT_FOR(atomic_load(&all.done) == 1000, WAIT_MS));
	cr_expect_eq(atomic_load(&all.bad), 0);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(s);
}

/* Callers on their own threads, each waiting for its reply before the
 * next call, so the connection is often idle and calls leave from the
 * callers' threads (msg_conn__call_direct); every 64th carries 4 MiB,
 * which the socket takes only in part.  Every reply must come, right. */
struct caller {
	struct msg_conn *c;
	uint32_t base;
	uint8_t *big;
	atomic_int bad;
};

#define CALLER_CALLS	1500
#define BIG_LEN		(4u << 20)

static void *caller_main(void *arg)
{
	struct caller *k = arg;

	for (uint32_t i = 0; i < CALLER_CALLS; i++) {
		struct waiter w = { 0 };
		uint32_t v = k->base + i;
		bool big = i % 64 == 63;
		uint8_t front[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
				     (uint8_t)(v >> 24) };
		struct msg *m = make_msg(T_ECHO, front, 4, big ? k->big : NULL, big ? BIG_LEN : 0);

		if (msg_call(k->c, m, 10000, on_reply, &w) < 0) {
			atomic_fetch_add(&k->bad, 1);
			continue;
		}
		while (!atomic_load(&w.fired))
			sched_yield();
		if (w.err || front_u32(w.reply) != v ||
		    w.reply->data_len != (big ? BIG_LEN : 0) ||
		    (big && memcmp(w.reply->data, k->big, BIG_LEN))) {
			fprintf(stderr, "call %u big %d: err %d v %u len %u\n", v, big, w.err,
				w.reply ? front_u32(w.reply) : 0, w.reply ? w.reply->data_len : 0);
			atomic_fetch_add(&k->bad, 1);
		}
		msg_free(w.reply);
	}
	return NULL;
}

Test(messenger, calls_from_many_threads_each_waiting_get_their_replies)
{
	static struct caller k[4];
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	pthread_t t[4];
	uint8_t *big = malloc(BIG_LEN);
	struct msg_conn *c;
	struct node cl;

	cr_assert_not_null(big);
	for (uint32_t i = 0; i < BIG_LEN; i++)
		big[i] = (uint8_t)(i * 13 + 5);
	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_not_null(c);
	cr_assert_eq(echo_call(c, 1, 1000), 0);
	for (int i = 0; i < 4; i++) {
		k[i] = (struct caller){ .c = c, .base = (uint32_t)i << 24, .big = big };
		cr_assert_eq(pthread_create(&t[i], NULL, caller_main, &k[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_expect_eq(atomic_load(&k[i].bad), 0, "caller %d: wrong or missing replies", i);
	}
	cr_expect(TU_WAIT_FOR(msg_conn_queued(c) == 0, WAIT_MS));
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(s);
	free(big);
}

Test(messenger, reserved_types_are_refused)
{
	struct node *s = server_a();
	struct msg_conn *c = msgr_connect(s->m, s->addr);

	cr_assert_not_null(c);
	cr_expect_eq(msg_send(c, make_u32(MSG_T_HELLO, 0)), -EINVAL);
	cr_expect_eq(msg_send(c, make_u32(MSG_T_RESERVED_MAX, 0)), -EINVAL);
	cr_expect_eq(msg_send(c, NULL), -EINVAL);
	cr_expect_null(msgr_connect(s->m, "not an address"));
	msg_conn_put(c);
	node_stop(s);
}

Test(messenger, payload_of_exactly_frame_max_round_trips_one_more_is_refused)
{
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	size_t len = MSG_DEFAULT_FRAME_MAX - 4;	/* the front is one u32 */
	struct waiter w = { 0 };
	struct msg_conn *c;
	struct node cl;
	uint8_t *data;
	struct msg *m;
	struct dec d;

	data = malloc(len + 1);
	cr_assert_not_null(data);
	for (size_t i = 0; i < len + 1; i += 4096)
		data[i] = (uint8_t)(i >> 12);
	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_not_null(c);

	m = make_u32(T_SUM, 0);
	msg_set_data_ref(m, data, len, NULL, NULL);
	cr_assert_eq(msg_call(c, m, 0, on_reply, &w), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w.fired) == 1, 4 * WAIT_MS));
	cr_assert_eq(w.err, 0);
	dec_init(&d, w.reply->front, w.reply->front_len);
	cr_expect_eq(dec_u32(&d), len);
	cr_expect_eq(dec_u32(&d), atoll__crc32c(0, data, len));
	msg_free(w.reply);

	m = make_u32(T_SUM, 0);
	msg_set_data_ref(m, data, len + 1, NULL, NULL);
	cr_expect_eq(msg_call(c, m, 0, on_reply, &w), -EMSGSIZE);
	m = make_u32(T_SUM, 0);
	msg_set_data_ref(m, data, len + 1, NULL, NULL);
	cr_expect_eq(msg_send(c, m), -EMSGSIZE);
	cr_expect_eq(atomic_load(&w.fired), 1, "a refused call never calls back");
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(s);
	free(data);
}

static int data_freed;

static void count_free(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&data_freed, 1, __ATOMIC_SEQ_CST);
}

Test(messenger, referenced_data_is_released_once_sent_or_dropped)
{
	static uint8_t data[1000];
	struct node *s = server_a();
	struct msg_conn *c = msgr_connect(s->m, s->addr);
	struct msg *m;

	cr_assert_not_null(c);
	m = make_u32(T_DROP, 0);
	msg_set_data_ref(m, data, sizeof(data), count_free, NULL);
	cr_assert_eq(msg_send(c, m), 0);
	cr_assert(TU_WAIT_FOR(__atomic_load_n(&data_freed, __ATOMIC_SEQ_CST) == 1, WAIT_MS));
	m = make_u32(MSG_T_HELLO, 0);
	msg_set_data_ref(m, data, sizeof(data), count_free, NULL);
	cr_expect_eq(msg_send(c, m), -EINVAL);
	cr_expect_eq(__atomic_load_n(&data_freed, __ATOMIC_SEQ_CST), 2);
	msg_conn_put(c);
	node_stop(s);
}

Test(messenger, oversized_header_from_raw_socket_closes_it)
{
	struct node *s = server_a();
	struct msg_hdr h = { .type = T_ECHO, .data_len = MSG_DEFAULT_FRAME_MAX + 1 };
	uint8_t hdr[MSG_HEADER_LEN];
	int fd;

	msg_hdr_encode(hdr, &h);
	fd = raw_connect(s->addr);
	raw_hello(fd, FSID_A);
	raw_write(fd, hdr, sizeof(hdr));
	cr_expect(raw_closed(fd, WAIT_MS));
	close(fd);

	/* Before the hello the limit is the hello's. */
	h.data_len = MSG_HELLO_FRAME_MAX + 1;
	h.type = MSG_T_HELLO;
	msg_hdr_encode(hdr, &h);
	fd = raw_connect(s->addr);
	raw_write(fd, hdr, sizeof(hdr));
	cr_expect(raw_closed(fd, WAIT_MS));
	close(fd);
	assert_serves(s);
	cr_expect_eq(atomic_load(&s->dispatched), 1, "only assert_serves' call got through");
	node_stop(s);
}

Test(messenger, fsid_mismatch_is_refused)
{
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_B);
	struct msg_conn *c;
	struct node cl;
	int fd;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_not_null(c);
	cr_expect_eq(echo_call(c, 1, 300), -ETIMEDOUT);
	cr_expect_eq(atomic_load(&cl.connected), 0);
	cr_expect_geq(atomic_load(&cl.closed), 1, "each refused attempt is reported");
	/* The acceptor hangs up on a hello of another cluster. */
	cr_expect_eq(atomic_load(&cl.last_closed_err), -ECONNRESET);
	cr_expect_eq(atomic_load(&s->connected), 0);
	cr_expect_eq(atomic_load(&s->dispatched), 0);
	cr_expect(!msg_conn_is_open(c));
	msg_conn_put(c);
	node_stop(&cl);

	fd = raw_connect(s->addr);
	raw_hello(fd, FSID_B);
	cr_expect(raw_closed(fd, WAIT_MS));
	close(fd);
	assert_serves(s);
	node_stop(s);
}

Test(messenger, server_with_zero_fsid_accepts_anyone_and_dialler_keeps_its_own)
{
	struct msgr_config scfg = node_cfg(MSG_ENTITY_MON, 0, FSID_ZERO);
	struct msgr_config ccfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_B);
	struct node s, cl;
	struct msg_conn *c;
	uint8_t fsid[16];

	node_start(&s, &scfg, "127.0.0.1:0");
	node_start(&cl, &ccfg, NULL);
	c = msgr_connect(cl.m, s.addr);
	cr_assert_eq(echo_call(c, 5, 0), 0);
	msgr_fsid(s.m, fsid);
	cr_expect_eq(memcmp(fsid, FSID_ZERO, 16), 0, "an acceptor adopts nothing");
	msgr_fsid(cl.m, fsid);
	cr_expect_eq(memcmp(fsid, FSID_B, 16), 0);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

/* Sends bytes from a raw socket (after a hello when hello is set) and
 * checks that the server closes that connection and keeps serving. */
static void expect_refused(struct node *s, bool hello, const void *p, size_t len,
			   bool shut)
{
	int fd = raw_connect(s->addr);

	if (hello)
		raw_hello(fd, FSID_A);
	if (len)
		raw_write(fd, p, len);
	if (shut)
		shutdown(fd, SHUT_WR);
	cr_expect(raw_closed(fd, WAIT_MS), "the connection stayed open");
	close(fd);
	assert_serves(s);
}

Test(messenger, garbage_before_hello_closes_the_connection)
{
	struct node *s = server_a();
	uint8_t junk[200];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	expect_refused(s, false, junk, sizeof(junk), false);
	node_stop(s);
}

Test(messenger, bad_magic_after_hello_closes_the_connection)
{
	struct node *s = server_a();
	struct msg_hdr h = { .type = T_ECHO };
	uint8_t hdr[MSG_HEADER_LEN];

	msg_hdr_encode(hdr, &h);
	hdr[1] = 'X';
	expect_refused(s, true, hdr, sizeof(hdr), false);
	cr_expect_eq(atomic_load(&s->dispatched), 1);
	node_stop(s);
}

Test(messenger, bad_header_crc_closes_the_connection_and_is_logged)
{
	struct node *s;
	struct msg_hdr h = { .type = T_ECHO, .tid = 3 };
	uint8_t hdr[MSG_HEADER_LEN];
	char path[] = "/tmp/atoll-test-msgr-XXXXXX", buf[8192];
	ssize_t n;
	int fd;

	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(log_open("test", LOG_LVL_WARN, path), 0);
	s = server_a();
	msg_hdr_encode(hdr, &h);
	hdr[10] ^= 0xff;
	expect_refused(s, true, hdr, sizeof(hdr), false);
	node_stop(s);
	log_close();
	n = read(fd, buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_expect(strstr(buf, "bad header crc"), "log: %s", buf);
	cr_expect(strstr(buf, "closing connection '127.0.0.1:"), "log: %s", buf);
	close(fd);
	unlink(path);
}

Test(messenger, bad_payload_crc_closes_the_connection)
{
	struct node *s = server_a();
	struct msg_hdr h = { .type = T_ECHO, .tid = 3, .front_len = 4 };
	uint8_t frame[MSG_HEADER_LEN + 8] = { 0 };

	msg_hdr_encode(frame, &h);
	memcpy(frame + MSG_HEADER_LEN, "abcd", 4);	/* crc left zero: wrong */
	expect_refused(s, true, frame, sizeof(frame), false);
	cr_expect_eq(atomic_load(&s->dispatched), 1);
	node_stop(s);
}

Test(messenger, truncated_frame_closes_the_connection)
{
	struct node *s = server_a();
	struct msg_hdr h = { .type = T_ECHO, .tid = 3, .front_len = 100 };
	uint8_t frame[MSG_HEADER_LEN + 10] = { 0 };

	msg_hdr_encode(frame, &h);
	expect_refused(s, true, frame, sizeof(frame), true);
	cr_expect_eq(atomic_load(&s->dispatched), 1);
	node_stop(s);
}

Test(messenger, message_before_hello_closes_the_connection)
{
	struct node *s = server_a();
	int fd = raw_connect(s->addr);

	raw_frame(fd, T_ECHO, 0, 1, "abcd", 4);
	cr_expect(raw_closed(fd, WAIT_MS));
	close(fd);

	fd = raw_connect(s->addr);
	raw_hello(fd, FSID_A);
	raw_frame(fd, MSG_T_HELLO, 0, 0, NULL, 0);	/* a second hello */
	cr_expect(raw_closed(fd, WAIT_MS));
	close(fd);
	assert_serves(s);
	cr_expect_eq(atomic_load(&s->dispatched), 1);
	node_stop(s);
}

Test(messenger, silent_peer_is_closed_after_the_handshake_timeout)
{
	struct msgr_config cfg = node_cfg(MSG_ENTITY_OSD, 1, FSID_A);
	struct node s;
	int fd;

	cfg.handshake_timeout_ms = 200;
	node_start(&s, &cfg, "127.0.0.1:0");
	fd = raw_connect(s.addr);
	cr_expect(raw_closed(fd, WAIT_MS));
	close(fd);
	assert_serves(&s);
	node_stop(&s);
}

Test(messenger, keepalives_hold_an_idle_connection_and_a_silent_peer_is_dropped)
{
	struct msgr_config scfg = node_cfg(MSG_ENTITY_OSD, 7, FSID_A);
	struct msgr_config ccfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct node s, cl;
	struct msg_conn *c;
	int fd;

	/* generous against a loaded machine: the loop may be late by a lot */
	scfg.keepalive_ms = ccfg.keepalive_ms = 100;
	scfg.keepalive_timeout_ms = ccfg.keepalive_timeout_ms = 1500;
	node_start(&s, &scfg, "127.0.0.1:0");
	node_start(&cl, &ccfg, NULL);
	c = msgr_connect(cl.m, s.addr);
	cr_assert_eq(echo_call(c, 1, 0), 0);
	/* idle for several timeouts: the keepalives hold it open */
	usleep(4000 * 1000);
	cr_expect_eq(atomic_load(&cl.closed), 0);
	cr_expect_eq(atomic_load(&s.closed), 0);
	cr_expect_eq(atomic_load(&s.dispatched), 1, "a keepalive reached the upper layer");
	cr_expect_eq(echo_call(c, 2, 0), 0);
	cr_expect_eq(atomic_load(&cl.connected), 1);

	/* a peer that completes the handshake, then says nothing (a peer
	 * behind a partition): dropped after the timeout */
	fd = raw_connect(s.addr);
	raw_hello(fd, FSID_A);
	cr_expect(raw_closed(fd, WAIT_MS));
	close(fd);
	cr_expect(TU_WAIT_FOR(atomic_load(&s.closed) == 1, WAIT_MS));
	cr_expect_eq(atomic_load(&s.last_closed_err), -ETIMEDOUT);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

Test(messenger, raw_client_gets_a_reply_and_unknown_tids_are_dropped)
{
	struct node *s = server_a();
	uint8_t buf[4096];
	size_t have = 0, used;
	const uint8_t *front, *data;
	struct msg_hdr h;
	int fd = raw_connect(s->addr), frames = 0;

	raw_hello(fd, FSID_A);
	raw_frame(fd, T_ECHO, 0, 77, "wxyz", 4);
	/* Expect the server's hello, then the echo with tid 77. */
	while (frames < 2) {
		ssize_t n = recv(fd, buf + have, sizeof(buf) - have, 0);

		cr_assert_gt(n, 0);
		have += (size_t)n;
		while (msg_frame_decode(buf, have, 1 << 20, &h, &front, &data, &used) == 0) {
			if (frames == 0) {
				struct msg_hello hello;

				cr_expect_eq(h.type, MSG_T_HELLO);
				cr_assert_eq(msg_hello_decode(front, h.front_len, &hello), 0);
				cr_expect_eq(hello.who.id, 7);
				cr_expect_eq(memcmp(hello.fsid, FSID_A, 16), 0);
			} else {
				cr_expect_eq(h.type, T_ECHO);
				cr_expect_eq(h.tid, 77);
				cr_expect_eq(h.flags, MSG_F_REPLY);
				cr_expect_eq(memcmp(front, "wxyz", 4), 0);
			}
			frames++;
			memmove(buf, buf + used, have - used);
			have -= used;
		}
	}
	/* A reply nobody asked for is dropped, the connection lives on. */
	raw_frame(fd, T_ECHO, MSG_F_REPLY, 123456, "r", 1);
	raw_frame(fd, T_DROP, 0, 1, NULL, 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&s->dispatched) == 2, WAIT_MS));
	cr_expect_eq(atomic_load(&s->replies_seen), 0);
	close(fd);
	node_stop(s);
}

Test(messenger, duplicate_and_wrong_tid_replies_are_dropped)
{
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct waiter w1 = { 0 }, w2 = { 0 };
	struct msg_conn *c;
	struct node cl;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_eq(msg_call(c, make_u32(T_TWICE, 0), 0, on_reply, &w1), 0);
	cr_assert_eq(msg_call(c, make_u32(T_BOGUS, 0), 0, on_reply, &w2), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w2.fired) == 1, WAIT_MS));
	cr_assert_eq(echo_call(c, 9, 0), 0);	/* everything before it arrived */
	cr_expect_eq(atomic_load(&w1.fired), 1);
	cr_expect_eq(front_u32(w1.reply), 1);
	cr_expect_eq(front_u32(w2.reply), 2, "the reply with the wrong tid was dropped");
	cr_expect_eq(atomic_load(&cl.dispatched), 0, "stray replies are not dispatched");
	msg_free(w1.reply);
	msg_free(w2.reply);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(s);
}

Test(messenger, call_times_out)
{
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct waiter w = { 0 };
	struct msg_conn *c;
	struct node cl;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_eq(msg_call(c, make_u32(T_DROP, 0), 100, on_reply, &w), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w.fired) == 1, WAIT_MS));
	cr_expect_eq(w.err, -ETIMEDOUT);
	cr_expect_null(w.reply);
	cr_expect_eq(echo_call(c, 3, 1000), 0, "the connection is still fine");
	cr_expect_eq(atomic_load(&w.fired), 1);

	/* A call that cannot even be sent times out too. */
	{
		struct msg_conn *nowhere = msgr_connect(cl.m, "127.0.0.1:1");
		struct waiter w2 = { 0 };

		cr_assert_eq(msg_call(nowhere, make_u32(T_ECHO, 0), 100, on_reply, &w2), 0);
		cr_assert(TU_WAIT_FOR(atomic_load(&w2.fired) == 1, WAIT_MS));
		cr_expect_eq(w2.err, -ETIMEDOUT);
		msg_conn_put(nowhere);
	}
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(s);
}

Test(messenger, peer_death_resets_calls_and_the_connection_redials)
{
	struct msgr_config scfg = node_cfg(MSG_ENTITY_OSD, 7, FSID_A);
	struct msgr_config ccfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct node s, cl;
	struct waiter w = { 0 };
	struct msg_conn *c;
	char addr[64];

	node_start(&s, &scfg, "127.0.0.1:0");
	snprintf(addr, sizeof(addr), "%s", s.addr);
	node_start(&cl, &ccfg, NULL);
	c = msgr_connect(cl.m, addr);
	cr_assert_eq(msg_call(c, make_u32(T_HOLD, 0), 0, on_reply, &w), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&s.dispatched) == 1, WAIT_MS));
	node_stop(&s);		/* frees the held request after the messenger */
	cr_assert(TU_WAIT_FOR(atomic_load(&w.fired) == 1, WAIT_MS));
	cr_expect_eq(w.err, -ECONNRESET);
	cr_expect(TU_WAIT_FOR(atomic_load(&cl.closed) >= 1, WAIT_MS));
	cr_expect(!msg_conn_is_open(c));

	/* Messages sent while the peer is away wait for it. */
	for (uint32_t i = 0; i < 10; i++)
		cr_assert_eq(msg_send(c, make_u32(T_ONEWAY, i)), 0);
	usleep(100 * 1000);	/* a few failed redials */
	node_start(&s, &scfg, addr);
	cr_expect_str_eq(s.addr, addr);
	cr_expect_eq(echo_call(c, 11, 0), 0);
	cr_expect_eq(atomic_load(&s.oneway), 10);
	cr_expect(atomic_load(&s.order_ok));
	cr_expect_eq(atomic_load(&cl.connected), 2);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

/* A call of an ordered connection that notes how many breaks its node
 * had heard of when it failed. */
struct owaiter {
	struct waiter w;
	struct node *n;
	atomic_int closed_seen;
};

static void on_oreply(void *arg, struct msg *reply, int err)
{
	struct owaiter *o = arg;

	atomic_store(&o->closed_seen, atomic_load(&o->n->closed));
	on_reply(&o->w, reply, err);
}

Test(messenger, ordered_connection_keeps_nothing_of_an_epoch_that_broke)
{
	struct msgr_config scfg = node_cfg(MSG_ENTITY_OSD, 7, FSID_A);
	struct msgr_config ccfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct node s, cl;
	struct owaiter held = { .n = &cl }, away = { .n = &cl };
	struct waiter w = { 0 };
	struct msg_conn *c;
	char addr[64];

	node_start(&s, &scfg, "127.0.0.1:0");
	snprintf(addr, sizeof(addr), "%s", s.addr);
	node_start(&cl, &ccfg, NULL);
	c = msgr_connect(cl.m, addr);
	msg_conn_set_ordered(c);
	cr_assert_eq(echo_call(c, 1, 0), 0);
	uint64_t e0 = msg_conn_epoch(c);
	cr_assert_eq(msg_call_epoch(c, e0, make_u32(T_HOLD, 0), 0, on_oreply, &held), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&s.dispatched) == 2, WAIT_MS));
	node_stop(&s);

	/* the break is told before the call fails */
	cr_assert(TU_WAIT_FOR(atomic_load(&held.w.fired) == 1, WAIT_MS));
	cr_expect_eq(held.w.err, -ECONNRESET);
	cr_expect_geq(atomic_load(&held.closed_seen), 1, "the call failed before closed ran");
	uint64_t e1 = msg_conn_epoch(c);
	cr_expect_gt(e1, e0);

	/* a call made for the old epoch is refused at once, fn never runs */
	cr_expect_eq(msg_call_epoch(c, e0, make_u32(T_ECHO, 2), 0, on_reply, &w),
		     -ECONNRESET);
	/* what is queued while the peer is away goes with the next failed
	 * attempt: one-way messages and calls alike */
	for (uint32_t i = 0; i < 5; i++)
		cr_assert_eq(msg_send(c, make_u32(T_ONEWAY, i)), 0);
	cr_assert_eq(msg_call(c, make_u32(T_ECHO, 3), 0, on_oreply, &away), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&away.w.fired) == 1, WAIT_MS));
	cr_expect_eq(away.w.err, -ECONNRESET);
	cr_expect_gt(msg_conn_epoch(c), e1);

	/* the next epoch's calls reach the peer once it is back, alone */
	node_start(&s, &scfg, addr);
	struct waiter back = { 0 };
	for (int i = 0; i < 2000 && !atomic_load(&back.fired); i++) {
		/* each failed redial before the peer listens drops the call */
		memset(&back, 0, sizeof(back));
		cr_assert_eq(msg_call_epoch(c, msg_conn_epoch(c), make_u32(T_ECHO, 4), 0,
					    on_reply, &back), 0);
		cr_assert(TU_WAIT_FOR(atomic_load(&back.fired) == 1, WAIT_MS));
		if (back.err == -ECONNRESET)
			atomic_store(&back.fired, 0);
	}
	cr_expect_eq(back.err, 0);
	cr_expect_eq(front_u32(back.reply), 4);
	msg_free(back.reply);
	cr_expect_eq(atomic_load(&s.oneway), 0, "one-way messages of a broken epoch were delivered");
	cr_expect_eq(atomic_load(&w.fired), 0);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

Test(messenger, messages_queued_before_the_peer_listens_are_delivered)
{
	struct msgr_config scfg = node_cfg(MSG_ENTITY_OSD, 7, FSID_A);
	struct msgr_config ccfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct node s, cl;
	struct waiter w = { 0 };
	struct msg_conn *c;
	char addr[64];

	/* A free port: bind one, then let it go. */
	node_start(&s, &scfg, "127.0.0.1:0");
	snprintf(addr, sizeof(addr), "%s", s.addr);
	node_stop(&s);

	node_start(&cl, &ccfg, NULL);
	c = msgr_connect(cl.m, addr);
	for (uint32_t i = 0; i < 100; i++)
		cr_assert_eq(msg_send(c, make_u32(T_ONEWAY, i)), 0);
	cr_assert_eq(msg_call(c, make_u32(T_ECHO, 5), 0, on_reply, &w), 0);
	usleep(50 * 1000);
	cr_expect_gt(msg_conn_queued(c), 0);
	node_start(&s, &scfg, addr);
	cr_assert(TU_WAIT_FOR(atomic_load(&w.fired) == 1, WAIT_MS));
	cr_expect_eq(w.err, 0);
	cr_expect_eq(atomic_load(&s.oneway), 100);
	cr_expect(atomic_load(&s.order_ok));
	msg_free(w.reply);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

struct releaser {
	struct node *n;
	atomic_bool stop;
	atomic_int freed;
};

/* Frees held messages from a thread that is not the loop. */
static void *release_thread(void *arg)
{
	struct releaser *r = arg;

	while (!atomic_load(&r->stop)) {
		struct msg *batch[HELD_MAX];
		int n;

		pthread_mutex_lock(&r->n->lock);
		n = r->n->nheld;
		memcpy(batch, r->n->held, (size_t)n * sizeof(batch[0]));
		r->n->nheld = 0;
		pthread_mutex_unlock(&r->n->lock);
		for (int i = 0; i < n; i++)
			msg_free(batch[i]);
		atomic_fetch_add(&r->freed, n);
		usleep(1000);
	}
	return NULL;
}

Test(messenger, slow_receiver_stops_the_reader_until_messages_are_freed)
{
	enum { COUNT = 160, SIZE = 256 << 10, INFLIGHT = 1 << 20 };
	struct msgr_config scfg = node_cfg(MSG_ENTITY_OSD, 7, FSID_A);
	struct msgr_config ccfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct releaser rel = { 0 };
	struct node s, cl;
	struct msg_conn *c;
	pthread_t th;
	uint8_t *data;
	int seen;

	data = calloc(1, SIZE);
	cr_assert_not_null(data);
	scfg.inflight_max = INFLIGHT;
	node_start(&s, &scfg, "127.0.0.1:0");
	node_start(&cl, &ccfg, NULL);
	c = msgr_connect(cl.m, s.addr);
	for (int i = 0; i < COUNT; i++) {
		struct msg *m = make_u32(T_HOLD, (uint32_t)i);

		msg_set_data_ref(m, data, SIZE, NULL, NULL);
		cr_assert_eq(msg_send(c, m), 0);
	}
	/* The receiver takes what fits in its budget, then stops reading. */
	cr_assert(TU_WAIT_FOR(atomic_load(&s.dispatched) > 0, WAIT_MS));
	do {
		seen = atomic_load(&s.dispatched);
		usleep(200 * 1000);
	} while (seen != atomic_load(&s.dispatched));
	cr_expect_lt(seen, COUNT, "the reader did not stop");
	cr_expect_leq(atomic_load(&s.max_inflight),
		      INFLIGHT + SIZE + MSG_HEADER_LEN + 4 + 4 + 64);
	cr_expect_gt(msg_conn_queued(c), 16ull * SIZE, "the sender's queue did not grow: %llu",
		     (unsigned long long)msg_conn_queued(c));

	/* Freeing on another thread resumes the reader. */
	rel.n = &s;
	cr_assert_eq(pthread_create(&th, NULL, release_thread, &rel), 0);
	cr_expect(TU_WAIT_FOR(atomic_load(&s.dispatched) == COUNT, 4 * WAIT_MS));
	cr_expect(TU_WAIT_FOR(atomic_load(&rel.freed) == COUNT, WAIT_MS));
	atomic_store(&rel.stop, true);
	pthread_join(th, NULL);
	cr_expect_leq(atomic_load(&s.max_inflight),
		      INFLIGHT + SIZE + MSG_HEADER_LEN + 4 + 4 + 64);
	cr_expect(TU_WAIT_FOR(msg_conn_queued(c) == 0, WAIT_MS));
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
	free(data);
}

Test(messenger, destroy_fails_pending_calls_with_eshutdown)
{
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct waiter w[11] = { 0 };
	struct msg_conn *c, *nowhere;
	struct node cl;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	nowhere = msgr_connect(cl.m, "127.0.0.1:1");
	for (int i = 0; i < 10; i++)
		cr_assert_eq(msg_call(c, make_u32(T_HOLD, 0), 0, on_reply, &w[i]), 0);
	cr_assert_eq(msg_call(nowhere, make_u32(T_ECHO, 0), 0, on_reply, &w[10]), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&s->dispatched) == 10, WAIT_MS));
	msgr_destroy(cl.m);
	for (int i = 0; i < 11; i++) {
		cr_expect_eq(atomic_load(&w[i].fired), 1);
		cr_expect_eq(w[i].err, -ESHUTDOWN);
	}
	cr_expect_eq(atomic_load(&cl.last_closed_err), -ESHUTDOWN);
	cr_expect_geq(atomic_load(&cl.closed), 2, "the open one and an attempt of the other");
	/* The caller's references outlive the messenger. */
	cr_expect_eq(msg_send(c, make_u32(T_ONEWAY, 0)), -ENOTCONN);
	msg_conn_close(c);
	msg_conn_put(c);
	msg_conn_put(nowhere);
	node_stop(s);
}

Test(messenger, close_fails_calls_and_later_sends)
{
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct waiter w = { 0 }, w2 = { 0 };
	struct msg_conn *c;
	struct node cl;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_eq(msg_call(c, make_u32(T_HOLD, 0), 0, on_reply, &w), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&s->dispatched) == 1, WAIT_MS));
	msg_conn_close(c);
	cr_assert(TU_WAIT_FOR(atomic_load(&w.fired) == 1, WAIT_MS));
	cr_expect_eq(w.err, -ECONNRESET);
	cr_expect_eq(msg_send(c, make_u32(T_ONEWAY, 0)), -ENOTCONN);
	cr_expect_eq(msg_call(c, make_u32(T_ECHO, 0), 0, on_reply, &w2), -ENOTCONN);
	cr_expect(TU_WAIT_FOR(atomic_load(&cl.closed) == 1, WAIT_MS));
	cr_expect(TU_WAIT_FOR(atomic_load(&s->closed) == 1, WAIT_MS), "the server saw it go");
	usleep(50 * 1000);
	cr_expect_eq(atomic_load(&cl.connected), 1, "no redial after close");
	cr_expect_eq(atomic_load(&w2.fired), 0);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(s);
}

static atomic_int timer_hits;

static void on_timer(void *arg)
{
	atomic_fetch_add(&timer_hits, *(int *)arg);
}

/* msgr_defer: what a callback on the loop defers runs on the loop after
 * it, in order, what a deferred call defers in the same pass; off the
 * loop nothing is deferred. */
static char defer_log[8];
static atomic_int defer_n;
static struct msgr *defer_m;

static void defer_note(void *arg)
{
	int n = atomic_fetch_add(&defer_n, 1);

	cr_expect(msgr_on_loop(defer_m));
	if (n < (int)sizeof(defer_log))
		defer_log[n] = *(const char *)arg;
	if (*(const char *)arg == 'a')
		cr_expect(msgr_defer(defer_note, "c"));	/* runs in this pass */
}

static void defer_from_timer(void *arg)
{
	(void)arg;
	cr_expect(msgr_defer(defer_note, "a"));
	cr_expect(msgr_defer(defer_note, "b"));
	cr_expect_eq(atomic_load(&defer_n), 0, "deferred, not run at once");
}

Test(messenger, deferred_calls_run_on_the_loop_after_the_callback)
{
	struct msgr_config cfg = node_cfg(MSG_ENTITY_OSD, 1, FSID_A);

	cr_assert_eq(msgr_create(&cfg, &node_ops, NULL, &defer_m), 0);
	cr_assert_eq(msgr_start(defer_m), 0);
	cr_expect(!msgr_defer(defer_note, "x"), "not a loop thread");
	cr_assert(msgr_timer(defer_m, 0, defer_from_timer, NULL));
	cr_expect(TU_WAIT_FOR(atomic_load(&defer_n) == 3, WAIT_MS));
	cr_expect_str_eq(defer_log, "abc");
	msgr_destroy(defer_m);
}

Test(messenger, timers_fire_in_order_and_cancel)
{
	struct msgr_config cfg = node_cfg(MSG_ENTITY_OSD, 1, FSID_A);
	static int one = 1, hundred = 100, thousand = 1000;
	struct msgr *m;
	uint64_t t1, t2, t3;

	cr_assert_eq(msgr_create(&cfg, &node_ops, NULL, &m), 0);
	cr_assert_eq(msgr_start(m), 0);
	t1 = msgr_timer(m, 0, on_timer, &one);
	t2 = msgr_timer(m, 30, on_timer, &hundred);
	t3 = msgr_timer(m, 60000, on_timer, &thousand);
	cr_assert(t1 && t2 && t3 && t1 != t2 && t2 != t3);
	cr_expect(TU_WAIT_FOR(atomic_load(&timer_hits) == 101, WAIT_MS));
	cr_expect(!msgr_timer_cancel(m, t1), "already ran");
	cr_expect(msgr_timer_cancel(m, t3));
	cr_expect(!msgr_timer_cancel(m, t3));
	usleep(20 * 1000);
	cr_expect_eq(atomic_load(&timer_hits), 101);
	msgr_timer(m, 60000, on_timer, &thousand);	/* dropped by destroy */
	msgr_destroy(m);
	cr_expect_eq(atomic_load(&timer_hits), 101);
}

Test(messenger, destroy_without_start_fails_queued_calls)
{
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct waiter w = { 0 };
	struct msg_conn *c;
	struct msgr *m;

	cr_assert_eq(msgr_create(&cfg, &node_ops, NULL, &m), 0);
	c = msgr_connect(m, "127.0.0.1:1");
	cr_assert_not_null(c);
	cr_assert_eq(msg_call(c, make_u32(T_ECHO, 0), 0, on_reply, &w), 0);
	cr_assert_eq(msg_send(c, make_u32(T_ONEWAY, 0)), 0);
	msgr_destroy(m);
	cr_expect_eq(atomic_load(&w.fired), 1);
	cr_expect_eq(w.err, -ESHUTDOWN);
	msg_conn_put(c);
}

Test(messenger, accepted_connection_outlives_its_references_and_messages)
{
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct msg_conn *c, *sc;
	struct msg *held;
	struct node cl;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_eq(msg_send(c, make_u32(T_HOLD, 0)), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&s->dispatched) == 1, WAIT_MS));
	pthread_mutex_lock(&s->lock);
	held = s->held[0];
	s->nheld = 0;
	pthread_mutex_unlock(&s->lock);
	sc = held->conn;
	cr_expect_eq(msg_conn_peer(sc).type, MSG_ENTITY_CLIENT);
	cr_expect_eq(msg_conn_inflight(sc), MSG_HEADER_LEN + 4 + 4);
	msg_conn_get(sc);
	msg_conn_put(sc);	/* an accepted connection stays */
	cr_expect_eq(echo_call(c, 8, 0), 0);
	/* The client goes away: the server's message keeps its conn valid. */
	msg_conn_put(c);
	cr_expect(TU_WAIT_FOR(atomic_load(&s->closed) == 1, WAIT_MS));
	cr_expect(!msg_conn_is_open(sc));
	cr_expect_eq(msg_send(sc, make_u32(T_ONEWAY, 0)), -ENOTCONN);
	msg_free(held);
	node_stop(&cl);
	node_stop(s);
}

Test(messenger, refused_dial_is_reported_and_retried)
{
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct msg_conn *c;
	struct node cl;

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, "127.0.0.1:1");
	cr_assert_not_null(c);
	cr_assert(TU_WAIT_FOR(atomic_load(&cl.closed) >= 3, WAIT_MS), "no redial");
	cr_expect_eq(atomic_load(&cl.last_closed_err), -ECONNREFUSED);
	cr_expect_eq(atomic_load(&cl.connected), 0);
	msg_conn_put(c);
	node_stop(&cl);
}

Test(messenger, ipv6_loopback_works_when_the_host_has_it)
{
	struct msgr_config scfg = node_cfg(MSG_ENTITY_OSD, 7, FSID_A);
	struct msgr_config ccfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	struct node s, cl;
	struct msg_conn *c;
	struct msgr *probe;
	char bound[64];

	cr_assert_eq(msgr_create(&scfg, &node_ops, NULL, &probe), 0);
	if (msgr_listen(probe, "[::1]:0", bound, sizeof(bound)) < 0) {
		msgr_destroy(probe);
		cr_skip_test("no IPv6 loopback here");
	}
	msgr_destroy(probe);
	node_start(&s, &scfg, "[::1]:0");
	cr_expect_eq(strncmp(s.addr, "[::1]:", 6), 0, "bound '%s'", s.addr);
	node_start(&cl, &ccfg, NULL);
	c = msgr_connect(cl.m, s.addr);
	cr_assert_not_null(c);
	cr_expect_eq(echo_call(c, 6, 0), 0);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&s);
}

/* ---- crcs passed through, replies into the caller's buffer ---- */

/* The crc of big received data, and of each of its whole 4 KiB blocks,
 * are known and right (the last, partial block joined in). */
static void expect_data_crcs(const struct msg *m, const uint8_t *data, size_t len)
{
	cr_assert(m->data_crc_known);
	cr_expect_eq(m->data_crc, atoll__crc32c(0, data, len));
	cr_assert_not_null(m->data_bcrc);
	for (size_t b = 0; b < len / 4096; b++)
		cr_expect_eq(m->data_bcrc[b], atoll__crc32c(0, data + b * 4096, 4096),
			     "block %zu of %zu bytes", b, len);
}

/* Big echoes, of whole blocks and not: the data crc of the received
 * reply and its blocks' crcs are known, and a message sent with a crc
 * given by msg_set_data_crc() arrives intact. */
Test(messenger, big_data_carries_its_crc_and_a_given_crc_is_used)
{
	static const size_t lens[] = { 256 * 1024, 64 * 1024 + 1000 };
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	size_t len = 256 * 1024;
	uint8_t *data = malloc(len);
	struct waiter w = { 0 }, w2 = { 0 };
	struct msg_conn *c;
	struct msg *m;
	struct node cl;

	cfg.block_crcs = true;	/* as the OSD keeps them */
	cr_assert_not_null(data);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	for (size_t k = 1; k < sizeof(lens) / sizeof(lens[0]); k++) {
		struct waiter wk = { 0 };

		cr_assert_eq(msg_call(c, make_msg(T_ECHO, "f", 1, data, lens[k]), 0, on_reply,
				      &wk), 0);
		cr_assert(TU_WAIT_FOR(atomic_load(&wk.fired) == 1, WAIT_MS));
		cr_assert_eq(wk.err, 0);
		expect_data_crcs(wk.reply, data, lens[k]);
		msg_free(wk.reply);
	}
	cr_assert_eq(msg_call(c, make_msg(T_ECHO, "f", 1, data, len), 0, on_reply, &w), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w.fired) == 1, WAIT_MS));
	cr_assert_eq(w.err, 0);
	expect_data_crcs(w.reply, data, len);
	/* forward the received data with its crc: the server checks it */
	m = make_msg(T_SUM, "g", 1, NULL, 0);
	msg_set_data_ref(m, w.reply->data, w.reply->data_len, NULL, NULL);
	msg_set_data_crc(m, w.reply->data_crc);
	cr_assert_eq(msg_call(c, m, 0, on_reply, &w2), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w2.fired) == 1, WAIT_MS));
	cr_assert_eq(w2.err, 0, "the frame with the given crc was refused");
	cr_expect_eq(front_u32(w2.reply), (uint32_t)len);
	msg_free(w2.reply);
	msg_free(w.reply);
	free(data);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(s);
}

struct lease {
	uint8_t *buf;
	size_t len;
	atomic_int gets, puts;
	atomic_int put_before_fn;	/* puts seen when fn ran */
	struct waiter w;
};

static void *lease_get(void *arg, uint32_t len)
{
	struct lease *l = arg;

	atomic_fetch_add(&l->gets, 1);
	return len <= l->len ? l->buf : NULL;
}

static void lease_put(void *arg)
{
	struct lease *l = arg;

	atomic_fetch_add(&l->puts, 1);
}

static const struct msg_rxbuf_ops lease_ops = { .get = lease_get, .put = lease_put };

static void lease_reply(void *arg, struct msg *reply, int err)
{
	struct lease *l = arg;

	atomic_store(&l->put_before_fn, atomic_load(&l->puts));
	on_reply(&l->w, reply, err);
}

Test(messenger, reply_data_goes_into_the_callers_buffer)
{
	struct node *s = server_a();
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_A);
	size_t len = 100000;
	uint8_t *data = malloc(len), *buf = calloc(1, len + 10);
	struct lease l = { .buf = buf, .len = len + 10 };
	struct msg_conn *c;
	struct node cl;

	cr_assert(data && buf);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 13 + 1);
	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, s->addr);
	cr_assert_eq(msg_call_rx(c, make_msg(T_ECHO, "f", 1, data, len), 0, lease_reply, &l,
				 &lease_ops, &l), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&l.w.fired) == 1, WAIT_MS));
	cr_assert_eq(l.w.err, 0);
	cr_expect_eq(l.w.reply->data, buf, "the reply was not received into the buffer");
	cr_expect_eq(l.w.reply->data_len, len);
	cr_expect_eq(memcmp(buf, data, len), 0);
	cr_expect_eq(atomic_load(&l.gets), 1);
	cr_expect_eq(atomic_load(&l.put_before_fn), 1, "put must come before the reply");
	msg_free(l.w.reply);	/* leaves the caller's buffer alone */
	cr_expect_eq(memcmp(buf, data, len), 0);
	free(data);
	free(buf);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(s);
}

/* A call that times out while its reply's data is being received into the
 * caller's buffer: the lease ends before fn runs, and the rest of the
 * frame never touches the buffer. */
Test(messenger, a_call_timing_out_mid_reply_no_longer_writes_the_buffer)
{
	struct msgr_config cfg = node_cfg(MSG_ENTITY_CLIENT, 1, FSID_ZERO);
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t slen = sizeof(sin);
	uint8_t in[4096], *data, *buf, hdr[MSG_HEADER_LEN], tail[4];
	size_t have = 0, used, len = 65536;
	struct lease l = { .len = 65536 };
	const uint8_t *front, *d;
	struct msg_hdr h, rh = { .type = T_ECHO, .flags = MSG_F_REPLY };
	struct msg_conn *c;
	struct node cl;
	char addr[64];
	int lfd, fd, frames = 0;
	uint32_t crc;

	data = malloc(len);
	buf = malloc(len);
	cr_assert(data && buf);
	l.buf = buf;
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 5 + 9);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(listen(lfd, 1), 0);
	cr_assert_eq(getsockname(lfd, (struct sockaddr *)&sin, &slen), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sin.sin_port));

	node_start(&cl, &cfg, NULL);
	c = msgr_connect(cl.m, addr);
	cr_assert_eq(msg_call_rx(c, make_u32(T_ECHO, 1), 300, lease_reply, &l, &lease_ops, &l), 0);
	fd = accept(lfd, NULL, NULL);
	cr_assert_geq(fd, 0);
	raw_hello(fd, FSID_A);
	while (frames < 2) {	/* the client's hello, then its request */
		ssize_t n = recv(fd, in + have, sizeof(in) - have, 0);

		cr_assert_gt(n, 0);
		have += (size_t)n;
		while (msg_frame_decode(in, have, 1 << 20, &h, &front, &d, &used) == 0) {
			if (frames++ == 1)
				rh.tid = h.tid;
			memmove(in, in + used, have - used);
			have -= used;
		}
	}
	/* the reply's header and a first part of its data, then nothing */
	rh.data_len = (uint32_t)len;
	msg_hdr_encode(hdr, &rh);
	raw_write(fd, hdr, sizeof(hdr));
	raw_write(fd, data, 1000);
	cr_assert(TU_WAIT_FOR(atomic_load(&l.w.fired) == 1, WAIT_MS));
	cr_expect_eq(l.w.err, -ETIMEDOUT);
	cr_expect_eq(atomic_load(&l.gets), 1, "the reply's data was not leased");
	cr_expect_eq(atomic_load(&l.put_before_fn), 1, "the lease outlived the call");
	memset(buf, 0xee, len);
	/* the rest arrives: it must go elsewhere, and the frame is dropped */
	raw_write(fd, data + 1000, len - 1000);
	crc = msg_payload_crc(NULL, 0, data, len);
	for (int i = 0; i < 4; i++)
		tail[i] = (uint8_t)(crc >> (8 * i));
	raw_write(fd, tail, sizeof(tail));
	usleep(200 * 1000);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(buf[i], 0xee, "byte %zu written after the timeout", i);
	cr_expect(msg_conn_is_open(c), "a whole frame after a revoke is fine");
	cr_expect_eq(atomic_load(&l.puts), 1);
	close(fd);
	close(lfd);
	msg_conn_put(c);
	node_stop(&cl);
	free(data);
	free(buf);
}

Test(messenger, retarget_moves_a_dialled_connection_to_another_server)
{
	struct msgr_config acfg = node_cfg(MSG_ENTITY_MDS, 1, FSID_A);
	struct msgr_config bcfg = node_cfg(MSG_ENTITY_MDS, 2, FSID_A);
	struct msgr_config ccfg = node_cfg(MSG_ENTITY_CLIENT, 3, FSID_A);
	struct node a, b, cl;
	struct waiter w = { 0 };
	struct msg_conn *c;

	node_start(&a, &acfg, "127.0.0.1:0");
	node_start(&b, &bcfg, "127.0.0.1:0");
	node_start(&cl, &ccfg, NULL);
	c = msgr_connect(cl.m, a.addr);
	cr_assert_eq(echo_call(c, 1, 0), 0);
	cr_expect_eq(msg_conn_peer(c).id, 1);
	/* a call held by a: reset by the move, as by a broken connection */
	cr_assert_eq(msg_call(c, make_u32(T_HOLD, 0), 0, on_reply, &w), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&a.dispatched) == 2, WAIT_MS));
	cr_assert_eq(msg_conn_retarget(c, b.addr), 0);
	cr_assert(TU_WAIT_FOR(atomic_load(&w.fired) == 1, WAIT_MS));
	cr_expect_eq(w.err, -ECONNRESET);
	cr_expect(TU_WAIT_FOR(atomic_load(&cl.closed) >= 1, WAIT_MS), "closed() was not told");
	cr_expect_eq(echo_call(c, 2, 0), 0, "no answer from the new server");
	cr_expect_eq(msg_conn_peer(c).id, 2);
	cr_expect_str_eq(msg_conn_addr(c), b.addr);
	cr_expect_eq(atomic_load(&b.dispatched), 1);
	/* the same address again changes nothing; a bad one is refused */
	int closed = atomic_load(&cl.closed);
	cr_assert_eq(msg_conn_retarget(c, b.addr), 0);
	cr_expect_eq(echo_call(c, 3, 0), 0);
	cr_expect_eq(atomic_load(&cl.closed), closed);
	cr_expect_eq(msg_conn_retarget(c, "nonsense"), -EINVAL);
	/* a connection waiting to redial (its server gone) dials the new one at once */
	node_stop(&b);
	cr_assert(TU_WAIT_FOR(!msg_conn_is_open(c), WAIT_MS));
	cr_assert_eq(msg_conn_retarget(c, a.addr), 0);
	cr_expect_eq(echo_call(c, 4, 0), 0);
	cr_expect_eq(msg_conn_peer(c).id, 1);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&a);
}
