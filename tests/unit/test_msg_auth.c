/*
 * test_msg_auth.c - the messenger with authentication on (lib/msg_auth.c):
 * two or three messengers over loopback playing monitor, OSD and client.
 * A client proves its key to the "monitor" and gets a client id and an
 * OSD ticket in the same handshake, then opens a connection to the "OSD"
 * with that ticket; peers see the proved identity.  Refused: a wrong key,
 * a peer without authentication, a hello that declares another identity
 * than the key proves, a ticket sealed with a secret the OSD does not
 * hold; the refusing side keeps serving.
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
	pthread_mutex_t caps_lock;
	char caps[64];		/* msg_conn_caps of the last peer */
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
	pthread_mutex_lock(&n->caps_lock);
	snprintf(n->caps, sizeof(n->caps), "%s", msg_conn_caps(c));
	pthread_mutex_unlock(&n->caps_lock);
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
	/* the ticket's caps reach the service's upper layer */
	pthread_mutex_lock(&osd.caps_lock);
	cr_assert_str_eq(osd.caps, "allow rw");
	pthread_mutex_unlock(&osd.caps_lock);
	/* the monitor's peer proved a key: no ticket, no caps */
	pthread_mutex_lock(&mon.caps_lock);
	cr_assert_str_eq(mon.caps, "");
	pthread_mutex_unlock(&mon.caps_lock);
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
	node_stop(&cl);
	node_stop(&osd);
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
