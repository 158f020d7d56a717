/*
 * cluster.c - the cluster handle: configuration, the connection to the
 * monitor, the map it keeps current, and monitor commands.
 *
 * connect() starts a messenger as entity CLIENT with a random 64-bit id
 * (the "client.N" every request id carries, so it must not repeat between
 * handles: getrandom, never a counter) and a monitor client (lib/monc.h)
 * over mon_host, which hunts among the monitors and follows the leader;
 * the map is subscribed to each time a session with a monitor opens (so
 * a restarted or another monitor is subscribed from the epoch we hold).
 * Commands carry a request id {client id, seq} so that one resent across
 * a leader change is applied once.  Maps are
 * applied strictly in order: a full map only if newer than ours, then
 * each incremental that follows our epoch; a gap asks for the missing
 * epochs again.  A full map of an epoch we hold with different content
 * (a monitor restored from an older backup that diverged) is refused, so
 * placement never silently changes under an epoch number.  The fsid is
 * taken from the first map and given to the messenger, which from then
 * on refuses peers of another cluster.
 */
#include "client.h"
#include "auth_config.h"
#include "config.h"
#include "deadline.h"
#include "encode.h"
#include "log.h"
#include "monc.h"
#include "msg.h"
#include "osdmap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#define CLIENT_WHO		"client"
#define DEFAULT_MON_HOST	"127.0.0.1:6789"
#define DEFAULT_MOUNT_MS	30000u

/* The keys atoll_cluster_set accepts, with how their value is checked. */
enum key_kind { KEY_STR, KEY_ADDRS, KEY_DURATION, KEY_INT, KEY_SIZE, KEY_LEVEL };
static const struct {
	const char *key;
	enum key_kind kind;
} known_keys[] = {
	{ "mon_host", KEY_ADDRS },
	{ "client_op_timeout", KEY_DURATION },
	{ "client_mount_timeout", KEY_DURATION },
	{ "client_inflight_ops", KEY_INT },
	{ "client_inflight_bytes", KEY_SIZE },
	{ "log_level", KEY_LEVEL },
	{ "log_file", KEY_STR },
	/* authentication (doc/security.md): the entity and its keyring */
	{ "auth_name", KEY_STR },
	{ "keyring", KEY_STR },
	/* testing only: messenger fault injection (doc/daemons.md) */
	{ "ms_inject_dup_permille", KEY_INT },
	{ "ms_inject_reset_permille", KEY_INT },
};

/* "client-op-timeout" == "client_op_timeout", as config.h compares. */
static bool key_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a == '-' ? '_' : *a, y = *b == '-' ? '_' : *b;

		if (x >= 'A' && x <= 'Z')
			x = (char)(x - 'A' + 'a');
		if (x != y)
			return false;
	}
	return *a == *b;
}

/* Reads the numeric settings from cfg into c (lock held or not shared);
 * a bad value is -EINVAL, with the getter's sentence for
 * atoll_last_error(), prefixed by call. */
static int read_settings(struct atoll_cluster *c, const struct config *cfg,
			 const char *call)
{
	char err[256] = "";
	int64_t ops;
	int r;

	r = config_get_duration_ms(cfg, CLIENT_WHO, "client_op_timeout", 0,
				   &c->op_timeout_ms, err, sizeof(err));
	if (r == 0)
		r = config_get_duration_ms(cfg, CLIENT_WHO, "client_mount_timeout",
					   DEFAULT_MOUNT_MS, &c->mount_timeout_ms, err, sizeof(err));
	if (r == 0)
		r = config_get_int(cfg, CLIENT_WHO, "client_inflight_ops",
				   CLIENT_THROTTLE_OPS, 1, 1 << 20, &ops, err, sizeof(err));
	if (r == 0) {
		c->throttle_ops = (uint64_t)ops;
		r = config_get_size(cfg, CLIENT_WHO, "client_inflight_bytes",
				    CLIENT_THROTTLE_BYTES, &c->throttle_bytes, err, sizeof(err));
	}
	if (r == 0 && c->throttle_bytes == 0) {
		snprintf(err, sizeof(err), "option 'client_inflight_bytes' must not be 0");
		r = -EINVAL;
	}
	if (r < 0)
		return atoll__error(-EINVAL, "%s: %s", call, err);
	return 0;
}

int atoll_cluster_create(struct atoll_cluster **out, const char *conf, unsigned flags)
{
	struct atoll_cluster *c;
	int r;

	char err[512] = "";

	if (!out)
		return atoll__error(-EINVAL, "atoll_cluster_create: out is NULL");
	*out = NULL;
	r = atoll__check_flags("atoll_cluster_create", flags, 0);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return atoll__error(-ENOMEM, "atoll_cluster_create: out of memory");
	r = config_load(&c->cfg, conf, err, sizeof(err));
	if (r < 0) {
		/* a missing named file is ENOENT; anything else is a bad file,
		 * and the message names the file and the line */
		if (r != -ENOENT && r != -ENOMEM && r != -EACCES)
			r = -EINVAL;
		atoll__error(r, "%s", err[0] ? err : atoll_strerror(r));
		goto out_free;
	}
	r = read_settings(c, c->cfg, "atoll_cluster_create");
	if (r < 0)
		goto out_free_cfg;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->map_cond, NULL);
	pthread_cond_init(&c->throttle_cond, NULL);
	*out = c;
	return 0;

out_free_cfg:
	config_free(c->cfg);
out_free:
	free(c);
	return r;
}

static int check_value(enum key_kind kind, const char *key, const char *value)
{
	char err[256] = "";
	struct config *t;
	monc_addr_t hosts[MONC_HOSTS_MAX];
	uint64_t u;
	int64_t i;
	int r;

	switch (kind) {
	case KEY_STR:
		return 0;
	case KEY_ADDRS:
		if (monc_parse_hosts(value, hosts, MONC_HOSTS_MAX, err, sizeof(err)) < 0)
			return atoll__error(-EINVAL, "atoll_cluster_set: option '%s': %s", key,
					    err);
		return 0;
	case KEY_LEVEL:
		if (log_level_parse(value) < 0)
			return atoll__error(-EINVAL, "atoll_cluster_set: option '%s': '%s' is "
					    "not a log level", key, value);
		return 0;
	default:
		break;
	}
	t = config_new();
	if (!t)
		return atoll__error(-ENOMEM, "atoll_cluster_set: out of memory");
	r = config_set_override(t, key, value);
	if (r < 0)
		snprintf(err, sizeof(err), "option '%s': '%s' is not a valid value", key, value);
	else if (kind == KEY_DURATION)
		r = config_get_duration_ms(t, CLIENT_WHO, key, 0, &u, err, sizeof(err));
	else if (kind == KEY_INT)
		r = config_get_int(t, CLIENT_WHO, key, 0, 1, 1 << 20, &i, err, sizeof(err));
	else if (kind == KEY_SIZE)
		r = config_get_size(t, CLIENT_WHO, key, 0, &u, err, sizeof(err));
	config_free(t);
	if (r < 0)
		return atoll__error(-EINVAL, "atoll_cluster_set: %s", err);
	return 0;
}

int atoll_cluster_set(struct atoll_cluster *c, const char *key, const char *value)
{
	int r;

	if (!c || !key || !value)
		return atoll__error(-EINVAL, "atoll_cluster_set: %s is NULL",
				    !c ? "c" : !key ? "key" : "value");
	for (size_t i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++) {
		if (!key_eq(key, known_keys[i].key))
			continue;
		r = check_value(known_keys[i].kind, known_keys[i].key, value);
		if (r < 0)
			return r;
		pthread_mutex_lock(&c->lock);
		r = config_set_override(c->cfg, known_keys[i].key, value);
		if (r < 0)
			atoll__error(-EINVAL, "atoll_cluster_set: option '%s': '%s' is not a "
				     "valid value", known_keys[i].key, value);
		else
			r = read_settings(c, c->cfg, "atoll_cluster_set");
		pthread_mutex_unlock(&c->lock);
		return r < 0 ? -EINVAL : 0;
	}
	return atoll__error(-EINVAL, "atoll_cluster_set: unknown option '%s'", key);
}

/* ---- maps ---- */

void client_resubscribe(struct atoll_cluster *c)
{
	struct mon_subscribe sub;
	struct msg *m;
	struct enc e;

	if (!c->monc)
		return;
	pthread_mutex_lock(&c->lock);
	sub.have = c->map ? c->map->epoch : 0;
	pthread_mutex_unlock(&c->lock);
	enc_init(&e);
	mon_subscribe_encode(&sub, &e);
	m = msg_new(MT_MON_SUBSCRIBE, &e);
	enc_free(&e);
	if (m)
		monc_send(c->monc, m);	/* a lost one is sent again on the next session */
}

/* Applies a MAP message (loop thread). */
static void handle_map(struct atoll_cluster *c, struct msg *m)
{
	struct mon_map_msg mm;
	bool changed = false, gap = false, first = false;
	uint8_t fsid[16];
	struct dec d;

	dec_init(&d, m->front, m->front_len);
	if (mon_map_msg_decode(&d, &mm) < 0)
		return;

	pthread_mutex_lock(&c->lock);
	if (mm.full) {
		if (c->map && memcmp(mm.full->fsid, c->map->fsid, 16) != 0) {
			/* another cluster's map: refuse all of it */
			c->map_refused++;
			goto out_unlock;
		}
		if (c->map && mm.full->epoch == c->map->epoch &&
		    !osdmap_equal(mm.full, c->map)) {
			/* the same epoch with other content: a rolled-back
			 * monitor; refuse it and what follows it */
			c->map_refused++;
			goto out_unlock;
		}
		if (!c->map || mm.full->epoch > c->map->epoch) {
			first = !c->map;
			osdmap_free(c->map);
			c->map = mm.full;
			mm.full = NULL;
			changed = true;
		}
	}
	for (uint32_t i = 0; c->map && i < mm.ninc; i++) {
		if (mm.incs[i].epoch <= c->map->epoch)
			continue;	/* known already */
		if (mm.incs[i].epoch != c->map->epoch + 1 ||
		    osdmap_apply(c->map, &mm.incs[i]) < 0) {
			gap = true;
			break;
		}
		changed = true;
	}
	if (!c->map)
		gap = true;	/* incrementals without a base: ask again */
	if (changed || gap)
		client_pgcache_reset(c);	/* the map may have changed in place */
	if (changed) {
		memcpy(fsid, c->map->fsid, sizeof(fsid));
		pthread_cond_broadcast(&c->map_cond);
	}

out_unlock:
	pthread_mutex_unlock(&c->lock);
	mon_map_msg_clear(&mm);
	if (first)
		msgr_set_fsid(c->msgr, fsid);
	if (gap)
		client_resubscribe(c);
	if (changed)
		client_map_changed(c);
}

static void on_dispatch(void *arg, struct msg_conn *conn, struct msg *m)
{
	struct atoll_cluster *c = arg;

	if (monc_dispatch(c->monc, conn, m))
		return;
	if (m->type == MT_MON_MAP)
		handle_map(c, m);
	msg_free(m);
}

static void on_connected(void *arg, struct msg_conn *conn)
{
	struct atoll_cluster *c = arg;

	monc_connected(c->monc, conn);
}

static void on_closed(void *arg, struct msg_conn *conn, int err)
{
	struct atoll_cluster *c = arg;

	monc_closed(c->monc, conn, err);
}

/* monc: a session with a monitor opened (loop thread) */
static void on_mon_session(void *arg, struct msg_conn *conn)
{
	(void)conn;
	client_resubscribe(arg);
}

int client_wait_epoch(struct atoll_cluster *c, uint64_t epoch, uint64_t timeout_ms)
{
	struct timespec ts = deadline_ms(CLOCK_REALTIME, timeout_ms);
	int r = 0;

	msgr_hold_flush();
	pthread_mutex_lock(&c->lock);
	while (!c->map || c->map->epoch < epoch) {
		if (c->shutting_down) {
			r = -ESHUTDOWN;
			break;
		}
		if (timeout_ms == 0)
			pthread_cond_wait(&c->map_cond, &c->lock);
		else if (pthread_cond_timedwait(&c->map_cond, &c->lock, &ts) == ETIMEDOUT) {
			r = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

int atoll_cluster_connect(struct atoll_cluster *c)
{
	struct msgr_config mc;
	struct msgr_ops ops = {
		.dispatch = on_dispatch,
		.connected = on_connected,
		.closed = on_closed,
	};
	struct monc_ops mops = { .session_open = on_mon_session };
	struct monc_config mcc = { .size_of = sizeof(mcc) };
	const char *mon_host;
	char err[256] = "", tried[1024];
	int r;

	if (!c)
		return atoll__error(-EINVAL, "atoll_cluster_connect: c is NULL");
	if (c->msgr)
		return atoll__error(-EISCONN, "atoll_cluster_connect: already connected");
	r = config_get_str(c->cfg, CLIENT_WHO, "mon_host", DEFAULT_MON_HOST, &mon_host,
			   err, sizeof(err));
	if (r < 0)
		return atoll__error(-EINVAL, "atoll_cluster_connect: %s", err);
	do {
		if (getrandom(&c->id, sizeof(c->id), 0) != sizeof(c->id))
			return -errno ? -errno : -EIO;
	} while (c->id == 0);

	memset(&mc, 0, sizeof(mc));
	mc.size_of = sizeof(mc);
	mc.me.type = c->entity_type ? c->entity_type : MSG_ENTITY_CLIENT;
	mc.me.id = c->id;
	{
		const char *name = NULL;

		msg_auth_free(c->auth);
		c->auth = NULL;
		r = config_get_str(c->cfg, CLIENT_WHO, "auth_name", "client.admin", &name,
				   err, sizeof(err));
		if (!r)
			r = auth_config_load(c->cfg, CLIENT_WHO, name, NULL, &c->auth, err,
					     sizeof(err));
		if (r < 0)
			return atoll__error(r, "atoll_cluster_connect: %s", err);
		mc.auth = c->auth;
	}
	{
		int64_t dup = 0, reset = 0;

		if (config_get_int(c->cfg, CLIENT_WHO, "ms_inject_dup_permille", 0, 0, 1000,
				   &dup, err, sizeof(err)) < 0 ||
		    config_get_int(c->cfg, CLIENT_WHO, "ms_inject_reset_permille", 0, 0, 1000,
				   &reset, err, sizeof(err)) < 0)
			return atoll__error(-EINVAL, "atoll_cluster_connect: %s", err);
		mc.inject_dup_permille = (uint32_t)dup;
		mc.inject_reset_permille = (uint32_t)reset;
	}
	r = msgr_create(&mc, &ops, c, &c->msgr);
	if (r < 0) {
		atoll__error(r, "atoll_cluster_connect: cannot start the messenger: %s",
			     atoll_strerror(r));
		goto out;
	}
	r = msgr_start(c->msgr);
	if (r < 0) {
		atoll__error(r, "atoll_cluster_connect: cannot start the messenger: %s",
			     atoll_strerror(r));
		goto out_destroy;
	}
	mcc.mon_host = mon_host;
	mcc.who = "client";
	r = monc_create(c->msgr, &mcc, &mops, c, &c->monc, err, sizeof(err));
	if (r < 0) {
		atoll__error(r, "atoll_cluster_connect: %s", err);
		goto out_destroy;
	}
	monc_start(c->monc);
	r = client_wait_epoch(c, 1, c->mount_timeout_ms);
	if (r < 0) {
		if (r == -ETIMEDOUT && monc_all_refused(c->monc))
			r = -ECONNREFUSED;
		monc_describe(c->monc, tried, sizeof(tried));
		if (r == -ETIMEDOUT)
			atoll__error(r, "no answer from the monitors (%s) within "
				     "client_mount_timeout (%llu ms); check mon_host and that "
				     "the monitors run", tried,
				     (unsigned long long)c->mount_timeout_ms);
		else
			atoll__error(r, "cannot connect to the monitors (%s): %s; check "
				     "mon_host and that the monitors run", tried,
				     atoll_strerror(r));
		goto out_stop_monc;
	}
	/* the monitors assigned this client its id in the handshake: its
	 * request ids carry that one, which the OSDs check */
	if (c->auth && msg_auth_client_id(c->auth))
		c->id = msg_auth_client_id(c->auth);
	c->connected = true;
	return 0;

out_stop_monc:
	pthread_mutex_lock(&c->lock);
	c->shutting_down = true;
	pthread_mutex_unlock(&c->lock);
	monc_stop(c->monc);
out_destroy:
	msgr_destroy(c->msgr);
	c->msgr = NULL;
	msg_auth_free(c->auth);
	c->auth = NULL;
	monc_destroy(c->monc);
	c->monc = NULL;
	pthread_mutex_lock(&c->lock);
	c->shutting_down = false;
	client_pgcache_reset(c);
	osdmap_free(c->map);
	c->map = NULL;
	pthread_mutex_unlock(&c->lock);
out:
	return r;
}

void atoll_cluster_shutdown(struct atoll_cluster *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->shutting_down = true;
	pthread_cond_broadcast(&c->map_cond);
	pthread_cond_broadcast(&c->throttle_cond);
	pthread_mutex_unlock(&c->lock);
	client_sessions_close(c);
	monc_stop(c->monc);
	msgr_destroy(c->msgr);
	c->msgr = NULL;
	msg_auth_free(c->auth);
	c->auth = NULL;
	monc_destroy(c->monc);
	c->monc = NULL;
	/* nothing can answer what is left now */
	client_fail_all(c, -ESHUTDOWN);
	client_pgcache_reset(c);
	osdmap_free(c->map);
	config_free(c->cfg);
	pthread_cond_destroy(&c->throttle_cond);
	pthread_cond_destroy(&c->map_cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int atoll_cluster_fsid(struct atoll_cluster *c, char out[37])
{
	const uint8_t *u;

	if (!c || !out)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (!c->connected || !c->map) {
		pthread_mutex_unlock(&c->lock);
		return -ENOTCONN;
	}
	u = c->map->fsid;
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
		 u[11], u[12], u[13], u[14], u[15]);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

uint64_t atoll_cluster_id(struct atoll_cluster *c)
{
	return c ? c->id : 0;
}

uint64_t atoll_cluster_epoch(struct atoll_cluster *c)
{
	uint64_t e;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	e = c->map ? c->map->epoch : 0;
	pthread_mutex_unlock(&c->lock);
	return e;
}

/* ---- monitor commands ---- */

/* What the library hands out (command output, status) is malloc'd. */
void atoll_free(void *p)
{
	free(p);
}

int atoll_mon_command(struct atoll_cluster *c, const char *json,
		      char **status, char **out, size_t *outlen)
{
	struct mon_command_reply rep;
	struct mon_reqid id;
	bool conn;
	char *st = NULL, *o = NULL;
	struct msg *m, *reply;
	struct enc e;
	struct dec d;
	uint32_t timeout;
	int r;

	if (status)
		*status = NULL;
	if (out)
		*out = NULL;
	if (outlen)
		*outlen = 0;
	if (!c || !json || !*json)
		return -EINVAL;
	if (strnlen(json, PROTO_COMMAND_MAX + 1) > PROTO_COMMAND_MAX)
		return -E2BIG;
	pthread_mutex_lock(&c->lock);
	conn = c->connected && !c->shutting_down;
	id.client = c->id;
	id.seq = ++c->mon_seq;
	timeout = c->op_timeout_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)c->op_timeout_ms;
	pthread_mutex_unlock(&c->lock);
	if (!conn)
		return -ENOTCONN;

	enc_init(&e);
	mon_command_encode(json, &id, &e);
	m = msg_new(MT_MON_COMMAND, &e);
	enc_free(&e);
	if (!m)
		return -ENOMEM;
	/* resent to the leader across sessions until the timeout */
	r = monc_call_wait(c->monc, m, timeout, &reply);
	if (r == -ETIMEDOUT) {
		char tried[1024];

		return atoll__error(r, "no answer from the monitors (%s) within "
				    "client_op_timeout (%u ms)",
				    monc_describe(c->monc, tried, sizeof(tried)), timeout);
	}
	if (r)
		return r;
	dec_init(&d, reply->front, reply->front_len);
	r = mon_command_reply_decode(&d, &rep, &st);
	if (r < 0)
		goto out_free_reply;
	o = malloc((size_t)rep.out_len + 1);
	if (!o) {
		r = -ENOMEM;
		goto out_free_reply;
	}
	if (rep.out_len)
		memcpy(o, rep.out, rep.out_len);
	o[rep.out_len] = '\0';
	if (outlen)
		*outlen = rep.out_len;
	if (out) {
		*out = o;
		o = NULL;
	}
	if (status) {
		if (!st)
			st = strdup("");
		*status = st;
		st = NULL;
	}
	r = rep.rc;

out_free_reply:
	free(o);
	free(st);
	msg_free(reply);
	return r;
}

int client_mon_call(struct atoll_cluster *c, struct msg *m, uint32_t timeout_ms,
		    void (*fn)(void *arg, struct msg *reply, int err), void *arg)
{
	if (!c->connected || !c->monc) {
		msg_free(m);
		return -ENOTCONN;
	}
	/* to the leader, resent across sessions until the timeout */
	return monc_call(c->monc, m, timeout_ms, 0, fn, arg);
}

int client_map_copy(struct atoll_cluster *c, struct osdmap **out)
{
	int r = 0;

	pthread_mutex_lock(&c->lock);
	*out = c->map ? osdmap_clone(c->map) : NULL;
	if (c->map && !*out)
		r = -ENOMEM;
	pthread_mutex_unlock(&c->lock);
	return r;
}

int atoll_cluster_wait_for_latest_map(struct atoll_cluster *c)
{
	char *out = NULL;
	size_t len = 0;
	uint64_t epoch;
	int r;

	if (!c)
		return -EINVAL;
	r = atoll_mon_command(c, "{\"prefix\": \"status\", \"format\": \"json\"}",
			      NULL, &out, &len);
	if (r == 0)
		r = client_json_u64(out, len, "epoch", &epoch);
	free(out);
	if (r < 0)
		return r;
	return client_wait_epoch(c, epoch, c->mount_timeout_ms);
}

/* ---- tiny JSON helpers (commands are built and read here without a
 * JSON library: the monitor's replies we read are flat objects) ---- */

int client_json_u64(const char *json, size_t len, const char *key, uint64_t *out)
{
	char pat[64];
	const char *p, *end = json + len;
	size_t plen;

	if (!json)
		return -ENOENT;
	plen = (size_t)snprintf(pat, sizeof(pat), "\"%s\"", key);
	for (p = json; p && (size_t)(end - p) >= plen;
	     p = memchr(p + 1, '"', (size_t)(end - p - 1))) {
		const char *q;

		if (memcmp(p, pat, plen) != 0)
			continue;
		q = p + plen;
		while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
			q++;
		if (q >= end || *q != ':')
			continue;
		q++;
		while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
			q++;
		if (q >= end || *q < '0' || *q > '9')
			return -EBADMSG;
		*out = 0;
		for (; q < end && *q >= '0' && *q <= '9'; q++)
			*out = *out * 10 + (uint64_t)(*q - '0');
		return 0;
	}
	return -ENOENT;
}

int client_json_str(char *buf, size_t cap, size_t *pos, const char *s)
{
	size_t p = *pos;

#define PUT(ch) do { if (p + 1 >= cap) return -E2BIG; buf[p++] = (ch); } while (0)
	PUT('"');
	for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
		if (*u == '"' || *u == '\\') {
			PUT('\\');
			PUT((char)*u);
		} else if (*u < 0x20) {
			if (p + 7 >= cap)
				return -E2BIG;
			p += (size_t)snprintf(buf + p, cap - p, "\\u%04x", *u);
		} else {
			PUT((char)*u);
		}
	}
	PUT('"');
#undef PUT
	buf[p] = '\0';
	*pos = p;
	return 0;
}
