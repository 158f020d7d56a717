/*
 * msg_auth.c - authentication in the messenger's handshake (loop thread),
 * and the struct msg_auth an upper layer fills (any thread).
 *
 * With msgr_config.auth set, a connection comes up in four frames
 * (doc/security.md): the dialler's hello carries an auth_hello_req
 * (methods and modes offered, entity name, nonce Nc); the acceptor's
 * hello an auth_hello_rep (method and mode chosen, fresh challenge Ns);
 * then a MSG_T_AUTH from the dialler (its proof: a MAC with its key, or
 * an authorizer) and one from the acceptor (its proof back, and for the
 * key method the monitor's sealed reply).  Both proofs cover the
 * transcript, the SHA-256 of both hello fronts as sent, so a middleman
 * who rewrites the offered modes or anything else breaks them.  Only
 * then msg_handshake.c opens the connection, with the identity this
 * file proved in place of the one the hello declared.
 *
 * Apart from msg_handshake.c (how any connection comes up) so that the
 * hostile-peer work on msg_rx.c/msg_conn.c and this one stay apart: the
 * messenger's other files call in here through four msg_auth__ hooks.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "encode.h"
#include "log.h"
#include "mono.h"
#include "msg_auth.h"
#include "msg_frame.h"
#include "msgr_int.h"

struct msg_auth_ticket {
	bool have;
	uint64_t expires;
	uint8_t session_key[AUTH_KEY_LEN];
	uint8_t *ticket;
	size_t ticket_len;
};

struct msg_auth {
	pthread_mutex_t lock;		/* everything below */
	char entity[AUTH_NAME_MAX + 1];
	uint8_t type;			/* MSG_ENTITY_* of entity */
	uint8_t key[AUTH_KEY_LEN];
	uint32_t skew;
	int64_t clock_offset;
	bool allow_none;		/* auth_allow_none */
	uint64_t client_id;
	struct msg_auth_ticket tk[AUTH_SVC_MDS + 1];	/* by service */
	struct auth_secrets secrets;			/* .n == 0: none */
	msg_auth_lookup_fn lookup;
	void *lookup_arg;
	msg_auth_lookup_fn prev_lookup;
	msg_auth_issue_fn issue;
	void *issue_arg;
	uint32_t modes[MSG_MODE_CLASSES];	/* AUTH_MODE_* allowed, by class */
};

/* One connection's handshake (loop thread). */
enum { MA_START, MA_HELLO_SENT, MA_WAIT_PROOF, MA_WAIT_DONE };
struct msg_auth_conn {
	int st;
	uint8_t *dfront;		/* the dialler's hello front */
	size_t dlen;
	uint8_t nc[AUTH_NONCE_LEN], ns[AUTH_NONCE_LEN];
	uint8_t transcript[AUTH_HASH_LEN];
	uint32_t method;
	char entity[AUTH_NAME_MAX + 1];	/* the dialler's, from its hello */
	uint64_t want_id;		/* the client id the dialler had */
	uint8_t key[AUTH_KEY_LEN];	/* the key both ends prove */
	struct msg_identity declared;	/* the peer's hello */
	uint64_t features;
	uint32_t offered;		/* the dialler's offered modes */
	uint32_t mode;			/* chosen; 0: none (refused) */
};

/* ---- the upper layer's object ---- */

struct msg_auth *msg_auth_new(const char *entity, const uint8_t key[AUTH_KEY_LEN])
{
	struct msg_auth *a;
	uint8_t type;

	if (auth_entity_check(entity, &type) < 0)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	pthread_mutex_init(&a->lock, NULL);
	strcpy(a->entity, entity);
	a->type = type;
	memcpy(a->key, key, AUTH_KEY_LEN);
	a->skew = 30;
	a->modes[MSG_MODE_MON] = AUTH_MODE_SECURE;
	a->modes[MSG_MODE_CLIENT] = AUTH_MODE_CRC;
	a->modes[MSG_MODE_CLUSTER] = AUTH_MODE_CRC;
	return a;
}

int msg_auth_set_modes(struct msg_auth *a, enum msg_mode_class cls, uint32_t modes)
{
	if ((unsigned int)cls >= MSG_MODE_CLASSES || !modes ||
	    (modes & ~(AUTH_MODE_CRC | AUTH_MODE_SECURE)))
		return -EINVAL;
	pthread_mutex_lock(&a->lock);
	a->modes[cls] = modes;
	pthread_mutex_unlock(&a->lock);
	return 0;
}

uint32_t msg_auth_modes(const struct msg_auth *a, enum msg_mode_class cls)
{
	uint32_t m;

	if ((unsigned int)cls >= MSG_MODE_CLASSES)
		return 0;
	pthread_mutex_lock((pthread_mutex_t *)&a->lock);
	m = a->modes[cls];
	pthread_mutex_unlock((pthread_mutex_t *)&a->lock);
	return m;
}

int msg_mode_parse(const char *s, uint32_t *modes)
{
	if (!strcmp(s, "crc"))
		*modes = AUTH_MODE_CRC;
	else if (!strcmp(s, "secure"))
		*modes = AUTH_MODE_SECURE;
	else if (!strcmp(s, "prefer-secure"))
		*modes = AUTH_MODE_CRC | AUTH_MODE_SECURE;
	else
		return -EINVAL;
	return 0;
}

const char *msg_mode_name(uint32_t modes)
{
	switch (modes) {
	case AUTH_MODE_CRC: return "crc";
	case AUTH_MODE_SECURE: return "secure";
	case AUTH_MODE_CRC | AUTH_MODE_SECURE: return "prefer-secure";
	default: return "?";
	}
}

void msg_auth_free(struct msg_auth *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < sizeof(a->tk) / sizeof(a->tk[0]); i++)
		free(a->tk[i].ticket);
	pthread_mutex_destroy(&a->lock);
	auth_wipe(a, sizeof(*a));
	free(a);
}

const char *msg_auth_entity(const struct msg_auth *a)
{
	return a->entity;
}

void msg_auth_set_key_lookup(struct msg_auth *a, msg_auth_lookup_fn fn, void *arg)
{
	pthread_mutex_lock(&a->lock);
	a->lookup = fn;
	a->lookup_arg = arg;
	pthread_mutex_unlock(&a->lock);
}

void msg_auth_set_prev_lookup(struct msg_auth *a, msg_auth_lookup_fn fn)
{
	pthread_mutex_lock(&a->lock);
	a->prev_lookup = fn;
	pthread_mutex_unlock(&a->lock);
}

void msg_auth_set_issuer(struct msg_auth *a, msg_auth_issue_fn fn, void *arg)
{
	pthread_mutex_lock(&a->lock);
	a->issue = fn;
	a->issue_arg = arg;
	pthread_mutex_unlock(&a->lock);
}

void msg_auth_set_secrets(struct msg_auth *a, const struct auth_secrets *s)
{
	pthread_mutex_lock(&a->lock);
	a->secrets = *s;
	pthread_mutex_unlock(&a->lock);
}

static int set_ticket_locked(struct msg_auth *a, const struct auth_grant *g, uint64_t client_id)
{
	struct msg_auth_ticket *t;
	uint8_t *copy;

	if (g->service < AUTH_SVC_OSD || g->service > AUTH_SVC_MDS || !g->ticket_len ||
	    g->ticket_len > AUTH_TICKET_MAX)
		return -EINVAL;
	copy = malloc(g->ticket_len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, g->ticket, g->ticket_len);
	t = &a->tk[g->service];
	free(t->ticket);
	t->ticket = copy;
	t->ticket_len = g->ticket_len;
	t->expires = g->expires;
	memcpy(t->session_key, g->session_key, AUTH_KEY_LEN);
	t->have = true;
	a->client_id = client_id;
	return 0;
}

int msg_auth_set_ticket(struct msg_auth *a, const struct auth_grant *g, uint64_t client_id)
{
	int r;

	pthread_mutex_lock(&a->lock);
	r = set_ticket_locked(a, g, client_id);
	pthread_mutex_unlock(&a->lock);
	return r;
}

uint64_t msg_auth_client_id(const struct msg_auth *a)
{
	uint64_t id;

	pthread_mutex_lock((pthread_mutex_t *)&a->lock);
	id = a->client_id;
	pthread_mutex_unlock((pthread_mutex_t *)&a->lock);
	return id;
}

void msg_auth_want_client_id(struct msg_auth *a, uint64_t id)
{
	pthread_mutex_lock(&a->lock);
	if (!a->client_id)
		a->client_id = id;
	pthread_mutex_unlock(&a->lock);
}

void msg_auth_set_allow_none(struct msg_auth *a, bool allow)
{
	pthread_mutex_lock(&a->lock);
	a->allow_none = allow;
	pthread_mutex_unlock(&a->lock);
}

bool msg_auth_allows_none(const struct msg_auth *a)
{
	bool r;

	pthread_mutex_lock((pthread_mutex_t *)&a->lock);
	r = a->allow_none;
	pthread_mutex_unlock((pthread_mutex_t *)&a->lock);
	return r;
}

void msg_auth_set_skew(struct msg_auth *a, uint32_t skew)
{
	pthread_mutex_lock(&a->lock);
	a->skew = skew;
	pthread_mutex_unlock(&a->lock);
}

uint32_t msg_auth_skew(const struct msg_auth *a)
{
	struct msg_auth *m = (struct msg_auth *)a;
	uint32_t skew;

	pthread_mutex_lock(&m->lock);
	skew = m->skew;
	pthread_mutex_unlock(&m->lock);
	return skew;
}

void msg_auth_set_clock_offset(struct msg_auth *a, int64_t offset)
{
	pthread_mutex_lock(&a->lock);
	a->clock_offset = offset;
	pthread_mutex_unlock(&a->lock);
}

uint64_t msg_auth_now(const struct msg_auth *a)
{
	return (uint64_t)((int64_t)time(NULL) + a->clock_offset);
}

uint64_t msg_auth_wall_ms(const struct msg_auth *a)
{
	struct timespec ts;
	int64_t ms;

	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (a)
		ms += a->clock_offset * 1000;
	return ms > 0 ? (uint64_t)ms : 0;
}

int msg_auth_make_grant(const struct auth_secret *secret, uint8_t service,
			const char *entity, uint64_t client_id, const char *caps,
			uint64_t now, uint32_t ttl, struct auth_grant *g)
{
	struct auth_ticket t = { .service = service, .client_id = client_id,
				 .issued = now, .expires = now + ttl };
	struct enc e;
	size_t len;
	int r;

	memset(g, 0, sizeof(*g));
	if (strlen(entity) > AUTH_NAME_MAX || strlen(caps) > AUTH_CAPS_MAX)
		return -EINVAL;
	strcpy(t.entity, entity);
	strcpy(t.caps, caps);
	r = auth_random(t.session_key, AUTH_KEY_LEN);
	if (r < 0)
		return r;
	enc_init(&e);
	r = auth_ticket_seal(&t, secret, &e);
	if (!r) {
		g->ticket = enc_take(&e, &len);
		g->ticket_len = len;
		r = g->ticket ? 0 : -ENOMEM;
	}
	if (!r) {
		g->service = service;
		g->expires = t.expires;
		memcpy(g->session_key, t.session_key, AUTH_KEY_LEN);
	}
	enc_free(&e);
	auth_wipe(&t, sizeof(t));
	return r;
}

/* ---- the handshake (loop thread) ---- */

/* The class of a connection between entity types a and b. */
static enum msg_mode_class mode_class(uint8_t a, uint8_t b)
{
	if (a == MSG_ENTITY_MON || b == MSG_ENTITY_MON)
		return MSG_MODE_MON;
	if (a == MSG_ENTITY_CLIENT || b == MSG_ENTITY_CLIENT)
		return MSG_MODE_CLIENT;
	return MSG_MODE_CLUSTER;
}

static const char *const mode_key[MSG_MODE_CLASSES] = {
	"ms_mon_mode", "ms_client_mode", "ms_cluster_mode",
};

/* What a dialler of type me offers: it does not know yet what it
 * dials, so the modes of a monitor connection and of its other class
 * (client, or cluster for a daemon); it checks the acceptor's choice
 * against the class it turns out to be (rx_hello_dialler). */
static uint32_t dialler_offer(struct msg_auth *a, uint8_t me)
{
	uint32_t m;

	pthread_mutex_lock(&a->lock);
	m = a->modes[MSG_MODE_MON];
	if (me != MSG_ENTITY_MON)
		m |= a->modes[me == MSG_ENTITY_CLIENT ? MSG_MODE_CLIENT : MSG_MODE_CLUSTER];
	pthread_mutex_unlock(&a->lock);
	return m;
}

static const char *mode_str(uint32_t m)
{
	return m == AUTH_MODE_SECURE ? "secure" : m == AUTH_MODE_CRC ? "crc" : "crc or secure";
}

/* Secure mode from here on when the handshake chose it: the connection
 * keys of both directions (doc/security.md, "The handshake"). */
static int start_secure(struct msg_conn *c, struct msg_auth_conn *ac)
{
	uint8_t keys[2 * AUTH_KEY_LEN];
	int r;

	if (ac->mode != AUTH_MODE_SECURE)
		return 0;
	r = auth_conn_keys(ac->key, ac->nc, ac->ns, ac->transcript, keys);
	if (!r)
		r = c->dialled ? msg_conn__secure(c, keys, keys + AUTH_KEY_LEN)
			       : msg_conn__secure(c, keys + AUTH_KEY_LEN, keys);
	auth_wipe(keys, sizeof(keys));
	return r;
}

static uint8_t service_of(uint8_t entity_type)
{
	switch (entity_type) {
	case MSG_ENTITY_OSD: return AUTH_SVC_OSD;
	case MSG_ENTITY_MDS: return AUTH_SVC_MDS;
	case MSG_ENTITY_MON: return AUTH_SVC_MON;
	default: return 0;
	}
}

static const char *entity_type_name(uint8_t t)
{
	switch (t) {
	case MSG_ENTITY_CLIENT: return "client";
	case MSG_ENTITY_MON: return "mon";
	case MSG_ENTITY_OSD: return "osd";
	case MSG_ENTITY_MDS: return "mds";
	default: return "none";
	}
}

void msg_auth__conn_free(struct msg_conn *c)
{
	struct msg_auth_conn *ac = c->auth;

	if (!ac)
		return;
	free(ac->dfront);
	auth_wipe(ac, sizeof(*ac));
	free(ac);
	c->auth = NULL;
}

void msg_auth__conn_broke(struct msg_conn *c, int err)
{
	struct msg_auth_conn *ac = c->auth;

	if (!c->dialled || !ac || ac->st != MA_WAIT_DONE || ac->method != AUTH_METHOD_TICKET ||
	    err == -EACCES)
		return;		/* -EACCES: rx_done said why already */
	atomic_store(&c->ticket_refused, true);
	msgr__peer_warn(c, "'%s' closed the connection after our ticket for '%s': it refuses "
			"the ticket (is a clock off? see CLOCK_SKEW in 'atoll health detail'), "
			"or it does not know the service secret yet", c->addr, msg_auth_entity(c->msgr->cfg.auth));
}

/* A fresh handshake state for c (a redial starts over). */
static struct msg_auth_conn *conn_state(struct msg_conn *c)
{
	msg_auth__conn_free(c);
	c->auth_renew_ns = 0;
	c->auth = calloc(1, sizeof(*c->auth));
	return c->auth;
}

/* A whole MSG_T_AUTH frame with front in e's bytes -> c->hs_buf. */
static int set_auth_frame(struct msg_conn *c, const struct enc *front)
{
	struct msg_hdr hdr = { .type = MSG_T_AUTH, .front_len = (uint32_t)front->len };
	uint32_t crc = msg_payload_crc(front->buf, front->len, NULL, 0);
	size_t len = MSG_HEADER_LEN + front->len + MSG_TRAILER_LEN;
	uint8_t *f;

	if (front->err)
		return front->err;
	f = malloc(len);
	if (!f)
		return -ENOMEM;
	msg_hdr_encode(f, &hdr);
	memcpy(f + MSG_HEADER_LEN, front->buf, front->len);
	for (int i = 0; i < 4; i++)
		f[MSG_HEADER_LEN + front->len + i] = (uint8_t)(crc >> (8 * i));
	free(c->hs_buf);
	c->hs_buf = f;
	c->hs_len = len;
	c->hs_off = 0;
	return 0;
}

int msg_auth__hello_blob(struct msg_conn *c, struct enc *blob)
{
	struct msg_auth *a = c->msgr->cfg.auth;
	struct msg_auth_conn *ac = c->dialled ? conn_state(c) : c->auth;
	int r;

	if (!ac)
		return -ENOMEM;
	if (c->dialled) {
		struct auth_hello_req rq = { .methods = AUTH_METHOD_KEY | AUTH_METHOD_TICKET,
					     .modes = dialler_offer(a, c->msgr->cfg.me.type) };

		r = auth_random(ac->nc, AUTH_NONCE_LEN);
		if (r < 0)
			return r;
		memcpy(rq.nonce, ac->nc, AUTH_NONCE_LEN);
		ac->offered = rq.modes;	/* checked against the acceptor's choice */
		strcpy(rq.entity, a->entity);
		pthread_mutex_lock(&a->lock);
		rq.want_id = a->client_id;	/* the same id across renewals */
		pthread_mutex_unlock(&a->lock);
		auth_hello_req_encode(&rq, blob);
	} else {
		struct auth_hello_rep rp = { .method = ac->method, .mode = ac->mode };

		memcpy(rp.challenge, ac->ns, AUTH_NONCE_LEN);
		auth_hello_rep_encode(&rp, blob);
	}
	return blob->err;
}

int msg_auth__hello_sent(struct msg_conn *c, const void *front, size_t len)
{
	struct msg_auth_conn *ac = c->auth;

	if (!ac)
		return -ENOMEM;
	if (c->dialled) {
		ac->dfront = malloc(len ? len : 1);
		if (!ac->dfront)
			return -ENOMEM;
		memcpy(ac->dfront, front, len);
		ac->dlen = len;
		ac->st = MA_HELLO_SENT;
		return 0;
	}
	ac->st = MA_WAIT_PROOF;
	return auth_transcript(ac->dfront, ac->dlen, front, len, ac->transcript);
}

static void refuse(struct msg_conn *c, const char *what)
{
	struct msg_auth_conn *ac = c->auth;

	/* a stranger can fail as often as it connects: rate-limited */
	msgr__peer_warn(c, "authentication of '%s'%s%s%s failed: %s", c->addr,
			ac && ac->entity[0] ? " as '" : "", ac && ac->entity[0] ? ac->entity : "",
			ac && ac->entity[0] ? "'" : "", what);
}

/* The acceptor got the dialler's hello: choose a method, draw Ns. */
static int rx_hello_acceptor(struct msg_conn *c, const struct msg_hello *h,
			     const void *front, size_t len)
{
	struct msg_auth *a = c->msgr->cfg.auth;
	struct msg_auth_conn *ac = conn_state(c);
	struct auth_hello_req rq;
	struct dec d;
	bool key_ok, ticket_ok;
	int r;

	if (!ac)
		return -ENOMEM;
	dec_init(&d, h->auth, h->auth_len);
	if (!h->auth_len || auth_hello_req_decode(&d, &rq) < 0) {
		refuse(c, h->auth_len ? "a malformed auth section in its hello"
				      : "it does not authenticate (auth = none on its side?)");
		return -EACCES;
	}
	strcpy(ac->entity, rq.entity);
	memcpy(ac->nc, rq.nonce, AUTH_NONCE_LEN);
	ac->want_id = rq.want_id;
	pthread_mutex_lock(&a->lock);
	key_ok = a->lookup && (rq.methods & AUTH_METHOD_KEY);
	ticket_ok = a->secrets.n && (rq.methods & AUTH_METHOD_TICKET);
	pthread_mutex_unlock(&a->lock);
	if (!rq.entity[0] || (!key_ok && !ticket_ok)) {
		refuse(c, "it offers no method this daemon accepts");
		return -EACCES;
	}
	{
		/* the mode: from what it offers and what we allow, secure
		 * when both can; none, and our hello says so before we
		 * close (msg_auth__refused), so that the dialler can tell
		 * its user why */
		enum msg_mode_class cls = mode_class(c->msgr->cfg.me.type, h->who.type);
		uint32_t allow = msg_auth_modes(a, cls), both = allow & rq.modes;

		ac->offered = rq.modes;
		ac->mode = both & AUTH_MODE_SECURE ? AUTH_MODE_SECURE : both & AUTH_MODE_CRC;
		if (!ac->mode)
			msgr__peer_warn(c, "refusing connection '%s' as '%s': it offers wire mode "
					"%s and %s = %s here", c->addr, rq.entity,
					mode_str(rq.modes & (AUTH_MODE_CRC | AUTH_MODE_SECURE)),
					mode_key[cls], msg_mode_name(allow));
	}
	ac->method = key_ok ? AUTH_METHOD_KEY : AUTH_METHOD_TICKET;
	r = auth_random(ac->ns, AUTH_NONCE_LEN);
	if (r < 0)
		return r;
	ac->dfront = malloc(len ? len : 1);
	if (!ac->dfront)
		return -ENOMEM;
	memcpy(ac->dfront, front, len);
	ac->dlen = len;
	ac->declared = h->who;
	ac->features = h->features;
	return 0;
}

/* The dialler got the acceptor's hello: send the proof. */
static int rx_hello_dialler(struct msg_conn *c, const struct msg_hello *h,
			    const void *front, size_t len)
{
	struct msg_auth *a = c->msgr->cfg.auth;
	struct msg_auth_conn *ac = c->auth;
	struct auth_hello_rep rp;
	struct auth_proof_msg pm = { 0 };
	uint8_t proof[AUTH_MAC_LEN];
	struct enc body, front_e;
	struct dec d;
	int r;

	if (!a || !ac || ac->st != MA_HELLO_SENT)
		return -EPROTO;
	dec_init(&d, h->auth, h->auth_len);
	if (!h->auth_len || auth_hello_rep_decode(&d, &rp) < 0) {
		refuse(c, h->auth_len ? "a malformed auth section in its hello"
				      : "the peer does not authenticate (auth = none on its side?)");
		return -EACCES;
	}
	{
		enum msg_mode_class cls = mode_class(c->msgr->cfg.me.type, h->who.type);
		uint32_t allow = msg_auth_modes(a, cls);

		if (!rp.mode) {
			log_warn("msgr", "cannot connect to '%s': it refuses wire mode %s (%s = %s "
				 "here); its configuration and ours must share a mode", c->addr,
				 mode_str(ac->offered), mode_key[cls], msg_mode_name(allow));
			return -ENOPROTOOPT;
		}
		/* secure, once offered, is always fine: crc only when this
		 * class allows it */
		if ((rp.mode != AUTH_MODE_CRC && rp.mode != AUTH_MODE_SECURE) ||
		    !(rp.mode & ac->offered) ||
		    (rp.mode == AUTH_MODE_CRC && !(allow & AUTH_MODE_CRC))) {
			log_warn("msgr", "cannot connect to '%s': it chose wire mode %s, which "
				 "%s = %s here does not allow", c->addr, mode_str(rp.mode),
				 mode_key[cls], msg_mode_name(allow));
			return -ENOPROTOOPT;
		}
		ac->mode = rp.mode;
	}
	memcpy(ac->ns, rp.challenge, AUTH_NONCE_LEN);
	ac->method = rp.method;
	ac->declared = h->who;
	ac->features = h->features;
	r = auth_transcript(ac->dfront, ac->dlen, front, len, ac->transcript);
	if (r < 0)
		return r;
	enc_init(&body);
	enc_init(&front_e);
	pthread_mutex_lock(&a->lock);
	if (rp.method == AUTH_METHOD_KEY) {
		memcpy(ac->key, a->key, AUTH_KEY_LEN);
		r = auth_client_proof(ac->key, ac->transcript, proof);
		if (!r)
			enc_raw(&body, proof, sizeof(proof));
	} else if (rp.method == AUTH_METHOD_TICKET) {
		uint8_t svc = service_of(h->who.type);
		struct msg_auth_ticket *t = svc >= AUTH_SVC_OSD ? &a->tk[svc] : NULL;

		if (!t || !t->have) {
			pthread_mutex_unlock(&a->lock);
			log_warn("msgr", "cannot authenticate to '%s' (%s): no ticket for that "
				 "service yet; tickets come from the monitors", c->addr,
				 entity_type_name(h->who.type));
			r = -ENOKEY;
			goto out_free;
		}
		memcpy(ac->key, t->session_key, AUTH_KEY_LEN);
		r = auth_authorizer_build(t->ticket, t->ticket_len, t->session_key,
					  a->client_id, a->entity, ac->transcript, &body);
	} else {
		r = -EPROTO;
	}
	pthread_mutex_unlock(&a->lock);
	if (r < 0) {
		refuse(c, "it chose a method this side cannot use");
		goto out_free;
	}
	pm.method = rp.method;
	pm.body = body.buf;
	pm.body_len = body.len;
	auth_proof_msg_encode(&pm, &front_e);
	r = set_auth_frame(c, &front_e);
	if (r < 0)
		goto out_free;
	/* the server's proof covers what we sent: keep it in dfront's place */
	free(ac->dfront);
	ac->dfront = malloc(front_e.len);
	if (!ac->dfront) {
		r = -ENOMEM;
		goto out_free;
	}
	memcpy(ac->dfront, front_e.buf, front_e.len);
	ac->dlen = front_e.len;
	ac->st = MA_WAIT_DONE;
out_free:
	auth_wipe(proof, sizeof(proof));
	enc_free(&body);
	enc_free(&front_e);
	return r;
}

int msg_auth__rx_hello(struct msg_conn *c, const struct msg_hello *h,
		       const void *front, size_t len)
{
	if (c->dialled)
		return rx_hello_dialler(c, h, front, len);
	if (c->auth && c->auth->st != MA_START)
		return -EPROTO;
	return rx_hello_acceptor(c, h, front, len);
}

bool msg_auth__hello_done(const struct msg_conn *c)
{
	return c->auth && c->auth->st != MA_START;
}

bool msg_auth__refused(const struct msg_conn *c)
{
	return !c->dialled && c->auth && !c->auth->mode;
}

/* The identity the dialler proved (acceptor side). */
static int proved_identity(struct msg_conn *c, const char *entity, uint64_t client_id,
			   struct msg_identity *who)
{
	struct msg_auth_conn *ac = c->auth;
	uint8_t type;

	if (auth_entity_check(entity, &type) < 0)
		return -EACCES;
	/* the bootstrap key exists to make OSDs: an OSD without an id yet
	 * (atoll-osd --mkfs) proves it and declares itself an OSD */
	if (!strcmp(entity, "client.bootstrap-osd") && ac->declared.type == MSG_ENTITY_OSD) {
		*who = ac->declared;
		return 0;
	}
	/* any entity may act as a client (the MDS reads and writes objects
	 * as one): it is then a client, with the id of its ticket */
	if (ac->declared.type == MSG_ENTITY_CLIENT && type != MSG_ENTITY_CLIENT) {
		who->type = MSG_ENTITY_CLIENT;
		who->id = client_id ? client_id : ac->declared.id;
		return 0;
	}
	if (ac->declared.type != type) {
		refuse(c, "its hello declares another entity type than its key proves");
		return -EACCES;
	}
	who->type = type;
	who->id = ac->declared.id;
	if (type == MSG_ENTITY_OSD) {
		uint64_t n = strtoull(entity + 4, NULL, 10);

		if (ac->declared.id != n) {
			refuse(c, "its hello declares another osd id than its key proves");
			return -EACCES;
		}
	} else if ((type == MSG_ENTITY_CLIENT || type == MSG_ENTITY_MDS) && client_id) {
		/* the monitors' id, not the one it picked: an MDS's cluster
		 * handle is a client of the OSDs and its id its instance */
		who->id = client_id;
	}
	return 0;
}

/* The acceptor: check the proof, answer with ours, open. */
static bool rx_proof(struct msg_conn *c, struct msg *m)
{
	struct msg_auth *a = c->msgr->cfg.auth;
	struct msg_auth_conn *ac = c->auth;
	struct auth_proof_msg pm;
	struct auth_done_msg dm = { 0 };
	struct auth_reply rep;
	struct auth_ticket t = { 0 };
	struct msg_identity who = { 0 };
	uint8_t want[AUTH_MAC_LEN];
	uint64_t client_id = 0;
	struct enc sealed, out;
	struct dec d;
	bool have_reply = false;
	int r;

	memset(&rep, 0, sizeof(rep));
	enc_init(&sealed);
	enc_init(&out);
	dec_init(&d, m->front, m->front_len);
	r = m->data_len ? -EBADMSG : auth_proof_msg_decode(&d, &pm);
	if (r < 0 || pm.method != ac->method) {
		refuse(c, "a malformed proof");
		r = -EACCES;
		goto out;
	}
	if (pm.method == AUTH_METHOD_KEY) {
		msg_auth_lookup_fn lookup, prev;
		void *larg;

		pthread_mutex_lock(&a->lock);
		lookup = a->lookup;
		prev = a->prev_lookup;
		larg = a->lookup_arg;
		pthread_mutex_unlock(&a->lock);
		if (!lookup || lookup(larg, ac->entity, ac->key) < 0) {
			refuse(c, "no such entity");
			r = -EACCES;
			goto out;
		}
		r = auth_client_proof(ac->key, ac->transcript, want);
		/* a key rotated a moment ago: its holder may not have the
		 * new keyring yet (the reply is sealed with the key it has) */
		if (!r && pm.body_len == AUTH_MAC_LEN && !auth_equal(want, pm.body, AUTH_MAC_LEN) &&
		    prev && prev(larg, ac->entity, ac->key) == 0)
			r = auth_client_proof(ac->key, ac->transcript, want);
		if (r < 0 || pm.body_len != AUTH_MAC_LEN ||
		    !auth_equal(want, pm.body, AUTH_MAC_LEN)) {
			refuse(c, "bad proof (wrong key)");
			r = -EACCES;
			goto out;
		}
	} else {
		struct auth_secrets sec;
		uint32_t skew;
		uint64_t now = msg_auth_now(a);

		pthread_mutex_lock(&a->lock);
		sec = a->secrets;
		skew = a->skew;
		pthread_mutex_unlock(&a->lock);
		r = auth_authorizer_verify(&sec, pm.body, pm.body_len, ac->transcript, now,
					   skew, &t);
		auth_wipe(&sec, sizeof(sec));
		if (r == -EKEYEXPIRED) {
			char why[200];
			time_t tnow = (time_t)now;
			struct tm tm;

			gmtime_r(&tnow, &tm);
			snprintf(why, sizeof(why), "its ticket is expired or not yet valid by "
				 "this host's clock (%04d-%02d-%02d %02d:%02d:%02d UTC, %u s of "
				 "skew allowed); is this host's clock off? see CLOCK_SKEW in "
				 "'atoll health detail'", tm.tm_year + 1900, tm.tm_mon + 1,
				 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, skew);
			refuse(c, why);
			r = -EACCES;
			goto out;
		}
		if (r < 0) {
			refuse(c, r == -EKEYREJECTED ? "its ticket is for another service or entity" :
				  r == -ENOKEY ? "its ticket's service secret is unknown here" :
				  "bad authorizer");
			r = -EACCES;
			goto out;
		}
		if (strcmp(t.entity, ac->entity)) {
			refuse(c, "its ticket is for another entity than its hello names");
			r = -EACCES;
			goto out;
		}
		memcpy(ac->key, t.session_key, AUTH_KEY_LEN);
		client_id = t.client_id;
		/* what msg_conn_caps gives the upper layer */
		c->auth_caps = strdup(t.caps);
		if (!c->auth_caps) {
			r = -ENOMEM;
			goto out;
		}
		c->auth_expires = t.expires;
	}
	if (pm.method == AUTH_METHOD_KEY) {
		msg_auth_issue_fn issue;
		void *iarg;

		pthread_mutex_lock(&a->lock);
		issue = a->issue;
		iarg = a->issue_arg;
		pthread_mutex_unlock(&a->lock);
		if (issue) {
			r = issue(iarg, ac->entity, ac->want_id, msg_auth_now(a), &rep);
			have_reply = true;
			if (r < 0) {
				refuse(c, "the monitor refused to issue tickets");
				r = -EACCES;
				goto out;
			}
			client_id = rep.client_id;
			r = auth_reply_seal(ac->key, &rep, &sealed);
			if (r < 0)
				goto out;
		}
	}
	r = proved_identity(c, ac->entity, client_id, &who);
	if (r < 0)
		goto out;
	snprintf(c->auth_entity, sizeof(c->auth_entity), "%s", ac->entity);
	r = auth_server_proof(ac->key, ac->transcript, m->front, m->front_len, dm.proof);
	if (r < 0)
		goto out;
	dm.reply = sealed.buf;
	dm.reply_len = sealed.len;
	auth_done_msg_encode(&dm, &out);
	r = set_auth_frame(c, &out);
out:
	if (have_reply)
		for (uint32_t i = 0; i < rep.n && i < AUTH_GRANTS_MAX; i++)
			free((void *)rep.g[i].ticket);
	auth_wipe(&rep, sizeof(rep));
	auth_wipe(&t, sizeof(t));
	auth_wipe(sealed.buf, sealed.len);
	enc_free(&sealed);
	enc_free(&out);
	msg_free(m);
	if (r < 0) {
		msg_conn__fail(c, r);
		return false;
	}
	log_debug("msgr", "'%s' authenticated as '%s' (wire mode %s)", c->addr, ac->entity,
		  mode_str(ac->mode));
	r = start_secure(c, ac);
	if (r < 0) {
		msg_conn__fail(c, r);
		return false;
	}
	{
		uint64_t features = ac->features;

		msg_auth__conn_free(c);
		return msg_conn__open(c, who, features);
	}
}

/* The dialler: check the acceptor's proof, keep the reply, open. */
static bool rx_done(struct msg_conn *c, struct msg *m)
{
	struct msg_auth *a = c->msgr->cfg.auth;
	struct msg_auth_conn *ac = c->auth;
	struct auth_done_msg dm;
	struct auth_reply rep;
	struct msg_identity who = ac->declared;
	uint8_t want[AUTH_MAC_LEN], *plain = NULL;
	size_t plen = 0;
	uint64_t features = ac->features;
	struct dec d;
	int r;

	dec_init(&d, m->front, m->front_len);
	r = m->data_len ? -EBADMSG : auth_done_msg_decode(&d, &dm);
	if (r < 0) {
		refuse(c, "a malformed answer to our proof");
		goto out;
	}
	r = auth_server_proof(ac->key, ac->transcript, ac->dfront, ac->dlen, want);
	if (!r && !auth_equal(want, dm.proof, AUTH_MAC_LEN)) {
		refuse(c, "the peer could not prove itself (a fake daemon, or a tampered "
		       "handshake)");
		r = -EACCES;
	}
	if (r < 0)
		goto out;
	if (dm.reply_len) {
		r = auth_reply_open(ac->key, dm.reply, dm.reply_len, &rep, &plain, &plen);
		if (r < 0) {
			refuse(c, "the monitor's reply does not open");
			goto out;
		}
		uint64_t now = msg_auth_now(a), first = UINT64_MAX;

		pthread_mutex_lock(&a->lock);
		for (uint32_t i = 0; i < rep.n && !r; i++) {
			r = set_ticket_locked(a, &rep.g[i], rep.client_id);
			if (rep.g[i].expires < first)
				first = rep.g[i].expires;
		}
		/* renew at three quarters of the shortest life (doc/security.md) */
		if (rep.n && first > now)
			c->auth_renew_ns = mono_now_ns() + (first - now) * 750000000ull;
		a->client_id = rep.client_id;
		if (rep.secrets.n && rep.secrets.service == service_of(a->type))
			a->secrets = rep.secrets;
		pthread_mutex_unlock(&a->lock);
		auth_wipe(&rep, sizeof(rep));
		if (r < 0)
			goto out;
	}
out:
	if (!r)
		r = start_secure(c, ac);
	auth_wipe(plain, plen);
	free(plain);
	msg_free(m);
	if (r < 0) {
		msg_conn__fail(c, r == -ENOMEM ? r : -EACCES);
		return false;
	}
	msg_auth__conn_free(c);
	return msg_conn__open(c, who, features);
}

bool msg_conn__rx_auth(struct msg_conn *c, struct msg *m)
{
	struct msg_auth_conn *ac = c->auth;

	if (!c->msgr->cfg.auth || !ac ||
	    ac->st != (c->dialled ? MA_WAIT_DONE : MA_WAIT_PROOF)) {
		log_warn("msgr", "closing connection '%s': an auth frame out of turn", c->addr);
		msg_free(m);
		msg_conn__fail(c, -EPROTO);
		return false;
	}
	return c->dialled ? rx_done(c, m) : rx_proof(c, m);
}
