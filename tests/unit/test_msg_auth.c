/*
 * test_msg_auth.c - the messenger with authentication on (lib/msg_auth.c):
 * two or three messengers over loopback playing monitor, OSD and client.
 * A client proves its key to the "monitor" and gets a client id and an
 * OSD ticket in the same handshake, then opens a connection to the "OSD"
 * with that ticket; peers see the proved identity.  Refused: a wrong key,
 * a peer without authentication, a hello that declares another identity
 * than the key proves, a ticket sealed with a secret the OSD does not
 * hold; the refusing side keeps serving.  Wire modes: monitor
 * connections are secure by default, others follow ms_client_mode;
 * secure connections carry big data both ways; a daemon that requires
 * secure refuses a dialler that offers only crc.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth_config.h"
#include "config.h"
#include "encode.h"
#include "msg.h"
#include "msg_auth.h"
#include "msg_frame.h"

#define T_ECHO		100
#define CALL_MS		3000

static const uint8_t FSID[16] = { 0xa1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

struct node {
	struct msgr *m;
	struct msg_auth *auth;
	char addr[64];
	atomic_int connected;
	atomic_int peer_type;
	atomic_ullong peer_id;
	atomic_uint mode;	/* msg_conn_mode of the last connection */
	atomic_int authenticated;	/* msg_conn_authenticated of the last one */
	/* the last accepted peer's msg_conn_entity/caps/auth_expires
	 * (written by the loop thread before connected is counted) */
	char peer_entity[80];
	char peer_caps[80];
	uint64_t peer_expires;
	atomic_int cache_kept;		/* msg_conn_cache_set kept ours */
};

static void node_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct enc e;
	struct msg *r;

	(void)arg;
	enc_init(&e);
	enc_raw(&e, m->front, m->front_len);
	r = msg_new(T_ECHO, &e);
	enc_free(&e);
	if (r && m->data_len && msg_set_data(r, m->data, m->data_len) < 0) {
		msg_free(r);
		r = NULL;
	}
	if (r)
		msg_reply(c, m, r);
	msg_free(m);
}

static void node_connected(void *arg, struct msg_conn *c)
{
	struct node *n = arg;
	struct msg_identity who = msg_conn_peer(c);

	atomic_store(&n->peer_type, who.type);
	atomic_store(&n->peer_id, who.id);
	atomic_store(&n->mode, msg_conn_mode(c));
	atomic_store(&n->authenticated, msg_conn_authenticated(c));
	snprintf(n->peer_entity, sizeof(n->peer_entity), "%s", msg_conn_entity(c));
	snprintf(n->peer_caps, sizeof(n->peer_caps), "%s", msg_conn_caps(c));
	n->peer_expires = msg_conn_auth_expires(c);
	{
		/* the upper layer's cache: the first pointer set stays */
		char *p = strdup("parsed"), *q = strdup("late");

		if (msg_conn_cache_set(c, p, free) != p)
			free(p);	/* one was cached before (not kept) */
		else if (msg_conn_cache(c) == p && msg_conn_cache_set(c, q, free) == p)
			atomic_fetch_add(&n->cache_kept, 1);
		free(q);	/* never kept: p was cached first */
	}
	atomic_fetch_add(&n->connected, 1);
}

static const struct msgr_ops node_ops = {
	.dispatch = node_dispatch,
	.connected = node_connected,
};

static void node_start(struct node *n, uint8_t type, uint64_t id, struct msg_auth *auth,
		       bool listen)
{
	struct msgr_config cfg = {
		.size_of = sizeof(cfg), .me = { .type = type, .id = id },
		.handshake_timeout_ms = 2000, .reconnect_min_ms = 20, .reconnect_max_ms = 100,
		.auth = auth,
	};

	memcpy(cfg.fsid, FSID, sizeof(FSID));
	n->auth = auth;
	cr_assert_eq(msgr_create(&cfg, &node_ops, n, &n->m), 0);
	if (listen)
		cr_assert_eq(msgr_listen(n->m, "127.0.0.1:0", n->addr, sizeof(n->addr)), 0);
	cr_assert_eq(msgr_start(n->m), 0);
}

static void node_stop(struct node *n)
{
	msgr_destroy(n->m);
	msg_auth_free(n->auth);
}

/* One echo call from n to addr: 0 or the call's error. */
static int echo(struct node *n, const char *addr)
{
	struct msg_conn *c = msgr_connect(n->m, addr);
	struct msg *req, *rep = NULL;
	struct enc e;
	int r;

	cr_assert_not_null(c);
	enc_init(&e);
	enc_u32(&e, 42);
	req = msg_new(T_ECHO, &e);
	enc_free(&e);
	r = msg_call_wait(c, req, CALL_MS, &rep);
	msg_free(rep);
	msg_conn_put(c);
	return r;
}

/* ---- the "monitor": keys by name, tickets sealed with its secret ---- */

static uint8_t admin_key[AUTH_KEY_LEN], osd1_key[AUTH_KEY_LEN];
static struct auth_secrets osd_secrets = { .service = AUTH_SVC_OSD, .n = 1 };
static uint32_t ticket_ttl = 60;
static atomic_ullong seen_want_id;	/* what the last handshake asked for */

static int mon_lookup(void *arg, const char *entity, uint8_t key[AUTH_KEY_LEN])
{
	(void)arg;
	if (!strcmp(entity, "client.admin"))
		memcpy(key, admin_key, AUTH_KEY_LEN);
	else if (!strcmp(entity, "osd.1"))
		memcpy(key, osd1_key, AUTH_KEY_LEN);
	else
		return -ENOENT;
	return 0;
}

static int mon_issue(void *arg, const char *entity, uint64_t want_id, uint64_t now,
		     struct auth_reply *r)
{
	(void)arg;
	atomic_store(&seen_want_id, want_id);
	r->client_id = strncmp(entity, "client.", 7) ? 7 : 1234;
	r->n = 1;
	if (!strncmp(entity, "osd.", 4))
		r->secrets = osd_secrets;
	return msg_auth_make_grant(&osd_secrets.s[0], AUTH_SVC_OSD, entity, r->client_id,
				   "allow rw", now, ticket_ttl, &r->g[0]);
}

static void keys_init(void)
{
	cr_assert_eq(auth_random(admin_key, sizeof(admin_key)), 0);
	cr_assert_eq(auth_random(osd1_key, sizeof(osd1_key)), 0);
	osd_secrets.s[0].gen = 1;
	cr_assert_eq(auth_random(osd_secrets.s[0].key, AUTH_KEY_LEN), 0);
}

static void mon_start(struct node *mon)
{
	uint8_t monkey[AUTH_KEY_LEN] = { 0 };
	struct msg_auth *a = msg_auth_new("mon.", monkey);

	cr_assert_not_null(a);
	msg_auth_set_key_lookup(a, mon_lookup, NULL);
	msg_auth_set_issuer(a, mon_issue, NULL);
	node_start(mon, MSG_ENTITY_MON, 0, a, true);
}

Test(msg_auth, client_proves_its_key_and_gets_an_id_and_a_ticket)
{
	struct node mon = { 0 }, cl = { 0 };
	struct msg_auth *a;

	keys_init();
	mon_start(&mon);
	a = msg_auth_new("client.admin", admin_key);
	node_start(&cl, MSG_ENTITY_CLIENT, 999, a, false);
	cr_assert_eq(echo(&cl, mon.addr), 0);
	cr_assert_eq(atomic_load(&mon.peer_type), MSG_ENTITY_CLIENT);
	/* the monitors' id, not the one the client picked */
	cr_assert_eq(atomic_load(&mon.peer_id), 1234);
	cr_assert_eq(msg_auth_client_id(a), 1234);
	node_stop(&cl);
	node_stop(&mon);
}

Test(msg_auth, wrong_key_refused_and_the_monitor_keeps_serving)
{
	struct node mon = { 0 }, bad = { 0 }, good = { 0 };
	uint8_t wrong[AUTH_KEY_LEN];

	keys_init();
	mon_start(&mon);
	cr_assert_eq(auth_random(wrong, sizeof(wrong)), 0);
	node_start(&bad, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.admin", wrong), false);
	cr_assert_neq(echo(&bad, mon.addr), 0);
	cr_assert_eq(atomic_load(&mon.connected), 0);
	cr_assert_eq(msg_auth_client_id(bad.auth), 0);
	node_start(&good, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.admin", admin_key), false);
	cr_assert_eq(echo(&good, mon.addr), 0);
	node_stop(&bad);
	node_stop(&good);
	node_stop(&mon);
}

Test(msg_auth, unknown_entity_refused)
{
	struct node mon = { 0 }, cl = { 0 };

	keys_init();
	mon_start(&mon);
	node_start(&cl, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.eve", admin_key), false);
	cr_assert_neq(echo(&cl, mon.addr), 0);
	cr_assert_eq(atomic_load(&mon.connected), 0);
	node_stop(&cl);
	node_stop(&mon);
}

Test(msg_auth, peer_without_authentication_refused_both_ways)
{
	struct node mon = { 0 }, plain = { 0 }, plain_srv = { 0 }, cl = { 0 };

	keys_init();
	mon_start(&mon);
	node_start(&plain, MSG_ENTITY_CLIENT, 1, NULL, false);
	cr_assert_neq(echo(&plain, mon.addr), 0);
	cr_assert_eq(atomic_load(&mon.connected), 0);
	/* and a client with auth on does not talk to a daemon without it */
	node_start(&plain_srv, MSG_ENTITY_OSD, 1, NULL, true);
	node_start(&cl, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.admin", admin_key), false);
	cr_assert_neq(echo(&cl, plain_srv.addr), 0);
	cr_assert_eq(echo(&cl, mon.addr), 0);
	node_stop(&cl);
	node_stop(&plain_srv);
	node_stop(&plain);
	node_stop(&mon);
}

Test(msg_auth, hello_declaring_another_identity_refused)
{
	struct node mon = { 0 }, cl = { 0 };

	keys_init();
	mon_start(&mon);
	/* client.admin's key, but the hello says osd.1 */
	node_start(&cl, MSG_ENTITY_OSD, 1, msg_auth_new("client.admin", admin_key), false);
	cr_assert_neq(echo(&cl, mon.addr), 0);
	cr_assert_eq(atomic_load(&mon.connected), 0);
	node_stop(&cl);
	node_stop(&mon);
}

Test(msg_auth, ticket_from_the_monitor_opens_the_osd)
{
	struct node mon = { 0 }, osd = { 0 }, cl = { 0 };
	struct msg_auth *oa;

	keys_init();
	mon_start(&mon);
	/* the OSD learns its service's secrets from the monitor */
	oa = msg_auth_new("osd.1", osd1_key);
	node_start(&osd, MSG_ENTITY_OSD, 1, oa, true);
	cr_assert_eq(echo(&osd, mon.addr), 0);
	cr_assert_eq(atomic_load(&mon.peer_type), MSG_ENTITY_OSD);
	cr_assert_eq(atomic_load(&mon.peer_id), 1);
	node_start(&cl, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.admin", admin_key), false);
	/* no ticket yet: refused without a word on the wire */
	cr_assert_neq(echo(&cl, osd.addr), 0);
	cr_assert_eq(echo(&cl, mon.addr), 0);
	cr_assert_eq(echo(&cl, osd.addr), 0);
	cr_assert_eq(atomic_load(&osd.peer_type), MSG_ENTITY_CLIENT);
	cr_assert_eq(atomic_load(&osd.peer_id), 1234);
	/* what the OSD knows of the peer: its entity, its ticket's caps and
	 * expiry; the monitor knows the entity, and no ticket caps */
	cr_assert_str_eq(osd.peer_entity, "client.admin");
	cr_assert_str_eq(osd.peer_caps, "allow rw");
	cr_assert_gt(osd.peer_expires, msg_auth_now(oa));
	cr_assert_str_eq(mon.peer_entity, "client.admin");
	cr_assert_str_eq(mon.peer_caps, "");
	cr_assert_eq(mon.peer_expires, 0);
	cr_assert_gt(atomic_load(&osd.cache_kept), 0);
	node_stop(&cl);
	node_stop(&osd);
	node_stop(&mon);
}

Test(msg_auth, ticket_under_a_secret_the_osd_lacks_refused)
{
	struct node mon = { 0 }, osd = { 0 }, cl = { 0 };
	struct auth_secrets other = { .service = AUTH_SVC_OSD, .n = 1 };
	struct msg_auth *oa;

	keys_init();
	mon_start(&mon);
	other.s[0].gen = 1;
	cr_assert_eq(auth_random(other.s[0].key, AUTH_KEY_LEN), 0);
	oa = msg_auth_new("osd.1", osd1_key);
	msg_auth_set_secrets(oa, &other);
	node_start(&osd, MSG_ENTITY_OSD, 1, oa, true);
	node_start(&cl, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.admin", admin_key), false);
	cr_assert_eq(echo(&cl, mon.addr), 0);
	cr_assert_neq(echo(&cl, osd.addr), 0);
	cr_assert_eq(atomic_load(&osd.connected), 0);
	node_stop(&cl);
	node_stop(&osd);
	node_stop(&mon);
}

Test(msg_auth, expired_ticket_refused)
{
	struct node mon = { 0 }, osd = { 0 }, cl = { 0 };
	struct msg_auth *oa;

	keys_init();
	mon_start(&mon);
	oa = msg_auth_new("osd.1", osd1_key);
	msg_auth_set_secrets(oa, &osd_secrets);
	msg_auth_set_clock_offset(oa, 60 + 20);	/* ttl 60 s, within the 30 s skew */
	node_start(&osd, MSG_ENTITY_OSD, 1, oa, true);
	node_start(&cl, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.admin", admin_key), false);
	cr_assert_eq(echo(&cl, mon.addr), 0);
	cr_assert_eq(echo(&cl, osd.addr), 0);
	msg_auth_set_clock_offset(oa, 60 + 40);	/* beyond it */
	cr_assert_neq(echo(&cl, osd.addr), 0);
	/* the dialler knows it was its ticket that was refused */
	struct msg_conn *c = msgr_connect(cl.m, osd.addr);
	bool refused = false;

	cr_assert_not_null(c);
	for (int i = 0; i < 200 && !refused; i++) {
		refused = msg_conn_ticket_refused(c);
		if (!refused)
			usleep(10000);
	}
	cr_assert(refused, "msg_conn_ticket_refused stays false");
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&osd);
	node_stop(&mon);
}

/* auth_allow_none (turning authentication on): peers without
 * authentication are taken, both ways, as unauthenticated; a peer that
 * authenticates still proves itself. */
Test(msg_auth, allow_none_takes_peers_without_authentication_both_ways)
{
	struct node mon = { 0 }, plain = { 0 }, plain_srv = { 0 }, cl = { 0 };
	struct msg_auth *ca;

	keys_init();
	mon_start(&mon);
	msg_auth_set_allow_none(mon.auth, true);
	node_start(&plain, MSG_ENTITY_CLIENT, 7, NULL, false);
	cr_assert_eq(echo(&plain, mon.addr), 0);
	cr_assert_eq(atomic_load(&mon.peer_id), 7);	/* declared */
	cr_assert_eq(atomic_load(&mon.authenticated), 0);
	/* one with a key still authenticates (the monitors' id) */
	ca = msg_auth_new("client.admin", admin_key);
	msg_auth_set_allow_none(ca, true);
	node_start(&cl, MSG_ENTITY_CLIENT, 8, ca, false);
	cr_assert_eq(echo(&cl, mon.addr), 0);
	cr_assert_eq(atomic_load(&mon.peer_id), 1234);
	cr_assert_eq(atomic_load(&mon.authenticated), 1);
	/* and it talks to a daemon without authentication */
	node_start(&plain_srv, MSG_ENTITY_OSD, 1, NULL, true);
	cr_assert_eq(echo(&cl, plain_srv.addr), 0);
	cr_assert_eq(atomic_load(&plain_srv.peer_id), 8);
	/* a wrong key is still refused */
	{
		struct node bad = { 0 };
		uint8_t wrong[AUTH_KEY_LEN];
		struct msg_auth *ba;

		cr_assert_eq(auth_random(wrong, sizeof(wrong)), 0);
		ba = msg_auth_new("client.admin", wrong);
		msg_auth_set_allow_none(ba, true);
		node_start(&bad, MSG_ENTITY_CLIENT, 9, ba, false);
		cr_assert_neq(echo(&bad, mon.addr), 0);
		node_stop(&bad);
	}
	node_stop(&cl);
	node_stop(&plain_srv);
	node_stop(&plain);
	node_stop(&mon);
}

/* A raw socket: a well-formed hello without auth, then a request. */
Test(msg_auth, raw_socket_with_a_fake_hello_gets_nowhere)
{
	struct node mon = { 0 }, cl = { 0 };
	struct msg_hello h = { .who = { .type = MSG_ENTITY_CLIENT, .id = 5 } };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char ip[32];
	uint16_t port;
	uint8_t buf[256];
	struct enc e;
	ssize_t n;
	int fd;

	keys_init();
	mon_start(&mon);
	cr_assert_eq(msg_parse_addr(mon.addr, ip, sizeof(ip), &port), 0);
	sa.sin_port = htons(port);
	inet_pton(AF_INET, ip, &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	memcpy(h.fsid, FSID, sizeof(FSID));
	enc_init(&e);
	msg_hello_frame(&e, &h);
	cr_assert_eq(write(fd, e.buf, e.len), (ssize_t)e.len);
	enc_free(&e);
	/* the monitor closes without a hello of its own */
	n = read(fd, buf, sizeof(buf));
	cr_assert(n <= 0, "got %zd bytes", n);
	close(fd);
	cr_assert_eq(atomic_load(&mon.connected), 0);
	node_start(&cl, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.admin", admin_key), false);
	cr_assert_eq(echo(&cl, mon.addr), 0);
	node_stop(&cl);
	node_stop(&mon);
}

Test(msg_auth, monitor_session_renews_its_tickets_before_they_expire)
{
	struct node mon = { 0 }, cl = { 0 };
	struct msg_conn *c;

	keys_init();
	ticket_ttl = 4;		/* renewed after 3 s */
	mon_start(&mon);
	node_start(&cl, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.admin", admin_key), false);
	c = msgr_connect(cl.m, mon.addr);
	cr_assert_not_null(c);
	for (int i = 0; i < 2000 && atomic_load(&mon.connected) < 1; i++)
		usleep(1000);
	cr_assert_eq(atomic_load(&mon.connected), 1);
	/* a second handshake on the same dialled connection, by itself */
	for (int i = 0; i < 8000 && atomic_load(&mon.connected) < 2; i++)
		usleep(1000);
	cr_assert_geq(atomic_load(&mon.connected), 2);
	/* and it asked to keep the client id it had */
	cr_assert_eq(atomic_load(&seen_want_id), 1234);
	msg_conn_put(c);
	node_stop(&cl);
	node_stop(&mon);
}

/* ---- wire modes ---- */

/* An echo of data_len bytes on a connection of n to addr; 0 or the
 * call's error, the connection's mode in *mode. */
static int echo_data(struct node *n, const char *addr, uint32_t data_len, uint32_t *mode)
{
	struct msg_conn *c = msgr_connect(n->m, addr);
	uint8_t *data = malloc(data_len);
	struct msg *req, *rep = NULL;
	struct enc e;
	int r;

	cr_assert_not_null(c);
	cr_assert_not_null(data);
	for (uint32_t i = 0; i < data_len; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	enc_init(&e);
	enc_u32(&e, 42);
	req = msg_new(T_ECHO, &e);
	enc_free(&e);
	cr_assert_eq(msg_set_data(req, data, data_len), 0);
	r = msg_call_wait(c, req, 10000, &rep);
	if (!r) {
		cr_expect_eq(rep->data_len, data_len);
		cr_expect(rep->data_len == data_len && !memcmp(rep->data, data, data_len),
			  "echoed data differ");
	}
	*mode = msg_conn_mode(c);
	msg_free(rep);
	msg_conn_put(c);
	free(data);
	return r;
}

Test(msg_auth, monitor_connections_are_secure_by_default)
{
	struct node mon = { 0 }, cl = { 0 };
	uint32_t mode = 0;

	keys_init();
	mon_start(&mon);
	node_start(&cl, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.admin", admin_key), false);
	cr_assert_eq(echo_data(&cl, mon.addr, 100000, &mode), 0);
	cr_expect_eq(mode, AUTH_MODE_SECURE);
	cr_expect_eq(atomic_load(&mon.mode), AUTH_MODE_SECURE);
	node_stop(&cl);
	node_stop(&mon);
}

/* A monitor, an OSD with ms_client_mode osd_modes, and a client with
 * cl_modes that has its ticket: the mode of an echo of data_len. */
static int osd_echo(uint32_t osd_modes, uint32_t cl_modes, uint32_t data_len, uint32_t *mode)
{
	struct node mon = { 0 }, osd = { 0 }, cl = { 0 };
	struct msg_auth *oa, *ca;
	uint32_t mm;
	int r;

	keys_init();
	mon_start(&mon);
	oa = msg_auth_new("osd.1", osd1_key);
	cr_assert_eq(msg_auth_set_modes(oa, MSG_MODE_CLIENT, osd_modes), 0);
	node_start(&osd, MSG_ENTITY_OSD, 1, oa, true);
	cr_assert_eq(echo(&osd, mon.addr), 0);		/* its secrets */
	ca = msg_auth_new("client.admin", admin_key);
	cr_assert_eq(msg_auth_set_modes(ca, MSG_MODE_CLIENT, cl_modes), 0);
	node_start(&cl, MSG_ENTITY_CLIENT, 1, ca, false);
	cr_assert_eq(echo_data(&cl, mon.addr, 10, &mm), 0);	/* its ticket */
	*mode = 0;
	r = echo_data(&cl, osd.addr, data_len, mode);
	if (!r)
		cr_expect_eq(atomic_load(&osd.mode), *mode);
	node_stop(&cl);
	node_stop(&osd);
	node_stop(&mon);
	return r;
}

Test(msg_auth, osd_connections_follow_ms_client_mode)
{
	uint32_t mode;

	cr_assert_eq(osd_echo(AUTH_MODE_CRC, AUTH_MODE_CRC, 1000, &mode), 0);
	cr_expect_eq(mode, AUTH_MODE_CRC);
	/* a client that prefers secure and an OSD that allows only crc */
	cr_assert_eq(osd_echo(AUTH_MODE_CRC, AUTH_MODE_CRC | AUTH_MODE_SECURE, 1000, &mode), 0);
	cr_expect_eq(mode, AUTH_MODE_CRC);
	/* an OSD that prefers secure: the client offers it (for monitors) */
	cr_assert_eq(osd_echo(AUTH_MODE_CRC | AUTH_MODE_SECURE, AUTH_MODE_CRC, 1000, &mode), 0);
	cr_expect_eq(mode, AUTH_MODE_SECURE);
}

Test(msg_auth, secure_connection_carries_4mib_both_ways)
{
	uint32_t mode;

	cr_assert_eq(osd_echo(AUTH_MODE_SECURE, AUTH_MODE_SECURE, 4u << 20, &mode), 0);
	cr_expect_eq(mode, AUTH_MODE_SECURE);
}

Test(msg_auth, secure_requiring_osd_gets_secure_and_crc_only_osd_refuses_secure_client)
{
	uint32_t mode;

	/* the client offers secure too (for monitors) and takes it */
	cr_assert_eq(osd_echo(AUTH_MODE_SECURE, AUTH_MODE_CRC, 10, &mode), 0);
	cr_expect_eq(mode, AUTH_MODE_SECURE);
	/* a crc-only OSD and a client that requires secure share nothing */
	cr_assert_neq(osd_echo(AUTH_MODE_CRC, AUTH_MODE_SECURE, 10, &mode), 0);
}

Test(msg_auth, secure_monitor_refuses_a_crc_only_dialler_and_keeps_serving)
{
	struct node mon = { 0 }, crc = { 0 }, good = { 0 };
	struct msg_auth *a = msg_auth_new("client.admin", admin_key);
	uint32_t mode;

	keys_init();
	mon_start(&mon);
	cr_assert_eq(msg_auth_set_modes(a, MSG_MODE_MON, AUTH_MODE_CRC), 0);
	node_start(&crc, MSG_ENTITY_CLIENT, 1, a, false);
	cr_assert_neq(echo(&crc, mon.addr), 0);
	cr_assert_eq(atomic_load(&mon.connected), 0);
	node_start(&good, MSG_ENTITY_CLIENT, 1, msg_auth_new("client.admin", admin_key), false);
	cr_assert_eq(echo_data(&good, mon.addr, 10, &mode), 0);
	cr_expect_eq(mode, AUTH_MODE_SECURE);
	node_stop(&crc);
	node_stop(&good);
	node_stop(&mon);
}

Test(msg_auth, mode_names_parse)
{
	uint32_t m;

	cr_expect_eq(msg_mode_parse("crc", &m), 0);
	cr_expect_eq(m, AUTH_MODE_CRC);
	cr_expect_eq(msg_mode_parse("secure", &m), 0);
	cr_expect_eq(m, AUTH_MODE_SECURE);
	cr_expect_eq(msg_mode_parse("prefer-secure", &m), 0);
	cr_expect_eq(m, AUTH_MODE_CRC | AUTH_MODE_SECURE);
	cr_expect_str_eq(msg_mode_name(m), "prefer-secure");
	cr_expect_eq(msg_mode_parse("tls", &m), -EINVAL);
	cr_expect_eq(msg_mode_parse("", &m), -EINVAL);
}

/* Many calls in flight on a secure connection whose client resets it
 * right after some writes and writes some requests twice (the fault
 * injections of msgr_config): frames queued when the socket goes are
 * sealed again under the next connection's keys, duplicates get their
 * own sequence numbers; every call ends, and every reply that comes
 * carries its own request's data. */
struct inflight {
	atomic_int done, ok, reset;
	atomic_int bad;
};

struct one_call {
	struct inflight *f;
	uint32_t seed;
};

static void one_call_done(void *arg, struct msg *reply, int err)
{
	struct one_call *oc = arg;

	if (!err) {
		bool good = reply->data_len == 20000;

		for (uint32_t i = 0; good && i < reply->data_len; i++)
			good = ((uint8_t *)reply->data)[i] == (uint8_t)(oc->seed + i);
		if (!good)
			atomic_fetch_add(&oc->f->bad, 1);
		atomic_fetch_add(&oc->f->ok, 1);
	} else if (err == -ECONNRESET) {
		atomic_fetch_add(&oc->f->reset, 1);
	} else {
		atomic_fetch_add(&oc->f->bad, 1);
	}
	msg_free(reply);
	atomic_fetch_add(&oc->f->done, 1);
}

Test(msg_auth, secure_connection_survives_resets_and_duplicate_writes)
{
	struct node mon = { 0 }, cl = { 0 };
	struct msgr_config cfg = {
		.size_of = sizeof(cfg), .me = { .type = MSG_ENTITY_CLIENT, .id = 1 },
		.handshake_timeout_ms = 2000, .reconnect_min_ms = 5, .reconnect_max_ms = 20,
		.inject_reset_permille = 10, .inject_dup_permille = 30,
	};
	/* N calls, and more until a reset came: one call in a hundred
	 * resets, so 300 alone see none about once in twenty runs */
	enum { N = 300, NMAX = 3000 };
	static struct one_call calls[NMAX];
	struct inflight f = { 0 };
	struct msg_conn *c;
	uint8_t *data = malloc(20000);

	keys_init();
	mon_start(&mon);
	cfg.auth = msg_auth_new("client.admin", admin_key);
	memcpy(cfg.fsid, FSID, sizeof(FSID));
	cl.auth = cfg.auth;
	cr_assert_eq(msgr_create(&cfg, &node_ops, &cl, &cl.m), 0);
	cr_assert_eq(msgr_start(cl.m), 0);
	c = msgr_connect(cl.m, mon.addr);
	cr_assert_not_null(c);
	/* in waves of 30, so that replies come between the resets */
	int n = 0;
	for (int i = 0; i < N || (i < NMAX && (i % 30 || !atomic_load(&f.reset))); i++, n++) {
		struct msg *m = msg_new(T_ECHO, NULL);

		calls[i].f = &f;
		calls[i].seed = (uint32_t)i * 13;
		for (uint32_t k = 0; k < 20000; k++)
			data[k] = (uint8_t)(calls[i].seed + k);
		cr_assert_eq(msg_set_data(m, data, 20000), 0);
		cr_assert_eq(msg_call(c, m, 20000, one_call_done, &calls[i]), 0);
		for (int w = 0; (i + 1) % 30 == 0 && w < 3000 && atomic_load(&f.done) <= i; w++)
			usleep(10000);
	}
	cr_assert_eq(atomic_load(&f.done), n, "%d of %d calls ended", atomic_load(&f.done), n);
	cr_expect_eq(atomic_load(&f.bad), 0, "%d calls ended wrong", atomic_load(&f.bad));
	cr_expect_gt(atomic_load(&f.ok), N / 4, "%d calls answered, %d reset",
		     atomic_load(&f.ok), atomic_load(&f.reset));
	cr_expect_gt(atomic_load(&f.reset), 0, "no reset injected");
	cr_expect_eq(msg_conn_mode(c), msg_conn_is_open(c) ? AUTH_MODE_SECURE : AUTH_MODE_CRC);
	msg_conn_put(c);
	free(data);
	node_stop(&cl);
	node_stop(&mon);
}

/* The modes come from atoll.conf (auth_config_load): defaults, a value
 * per key, and a clear refusal of an unknown one. */
Test(msg_auth, wire_modes_read_from_atoll_conf)
{
	char dir[] = "/tmp/atoll-msgauth-XXXXXX", path[128], text[512], err[256] = "";
	struct keyring kr = { 0 };
	struct config *cfg = NULL;
	struct msg_auth *a = NULL;

	keys_init();
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keyring", dir);
	cr_assert_eq(keyring_set(&kr, "client.admin", admin_key), 0);
	cr_assert_eq(keyring_save(path, &kr), 0);
	keyring_free(&kr);

	snprintf(text, sizeof(text), "[global]\nauth = ticket\nkeyring = %s\n", path);
	cr_assert_eq(config_load_string(&cfg, text, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(auth_config_load(cfg, "client", "client.admin", NULL, &a, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(msg_auth_modes(a, MSG_MODE_MON), AUTH_MODE_SECURE);
	cr_expect_eq(msg_auth_modes(a, MSG_MODE_CLIENT), AUTH_MODE_CRC);
	cr_expect_eq(msg_auth_modes(a, MSG_MODE_CLUSTER), AUTH_MODE_CRC);
	msg_auth_free(a);
	config_free(cfg);

	snprintf(text, sizeof(text), "[global]\nauth = ticket\nkeyring = %s\nms_mon_mode = "
		 "prefer-secure\nms_client_mode = secure\nms_cluster_mode = secure\n", path);
	cr_assert_eq(config_load_string(&cfg, text, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(auth_config_load(cfg, "client", "client.admin", NULL, &a, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(msg_auth_modes(a, MSG_MODE_MON), AUTH_MODE_CRC | AUTH_MODE_SECURE);
	cr_expect_eq(msg_auth_modes(a, MSG_MODE_CLIENT), AUTH_MODE_SECURE);
	cr_expect_eq(msg_auth_modes(a, MSG_MODE_CLUSTER), AUTH_MODE_SECURE);
	msg_auth_free(a);
	config_free(cfg);

	snprintf(text, sizeof(text), "[global]\nauth = ticket\nkeyring = %s\nms_client_mode = "
		 "tls\n", path);
	cr_assert_eq(config_load_string(&cfg, text, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(auth_config_load(cfg, "client", "client.admin", NULL, &a, err, sizeof(err)),
		     -EINVAL);
	cr_expect_null(a);
	cr_expect(strstr(err, "ms_client_mode") && strstr(err, "'tls'"), "%s", err);
	config_free(cfg);
	unlink(path);
	rmdir(dir);
}
