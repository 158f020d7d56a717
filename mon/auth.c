/*
 * auth.c - the monitor's side of authentication (doc/security.md): it
 * knows every entity's key, checks key proofs, assigns client ids and
 * issues tickets for the OSD and MDS services, and hands those services'
 * daemons their service secrets.
 *
 * Interim, until keys live in the replicated state: the keys come from
 * the monitor's keyring file (every entity's, `atoll-cluster up` writes
 * it), a client id is 32 random bits and a 31-bit MAC of them and the
 * entity under mon.'s key (any monitor recognises, and keeps, an id a
 * monitor gave that entity, without agreeing on anything), and the
 * service secret of generation g is derived from the
 * shared `mon.` key, HKDF(key of mon., "service secret", service ‖ g),
 * with g = 1 + now / auth_secret_period: every monitor derives the same
 * secrets without exchanging a byte, a service daemon that learns them
 * learns nothing of mon.'s key, and rotation is the passing of time.  A
 * daemon gets generations g-1, g and g+1, so the tickets of the
 * previous, current and next period all open.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "auth_config.h"
#include "config.h"
#include "log.h"
#include "mon.h"

#define WHO	"mon"

struct mon_auth {
	pthread_mutex_t lock;		/* kr, loaded_mtime */
	struct keyring kr;
	char path[4096];
	struct timespec loaded_mtime;
	uint8_t mon_key[AUTH_KEY_LEN];
	uint32_t ttl, period;
};

/* An entity the keyring does not hold may have been added since
 * (atoll-cluster adds each new OSD's key): read the file again when it
 * changed.  Called with ma->lock held. */
static void reload_if_changed(struct mon_auth *ma)
{
	struct keyring kr;
	struct stat st;
	char err[512];

	if (stat(ma->path, &st) < 0 ||
	    (st.st_mtim.tv_sec == ma->loaded_mtime.tv_sec &&
	     st.st_mtim.tv_nsec == ma->loaded_mtime.tv_nsec))
		return;
	if (keyring_load(ma->path, &kr, err, sizeof(err)) < 0) {
		log_warn("mon", "%s; keeping the keys read before", err);
		keyring_free(&kr);
		return;
	}
	keyring_free(&ma->kr);
	ma->kr = kr;
	ma->loaded_mtime = st.st_mtim;
	log_info("mon", "keyring '%s' read again: %u entities", ma->path, kr.n);
}

static int lookup(void *arg, const char *entity, uint8_t key[AUTH_KEY_LEN])
{
	struct mon_auth *ma = arg;
	const struct keyring_entry *en;
	int r = -ENOENT;

	pthread_mutex_lock(&ma->lock);
	en = keyring_find(&ma->kr, entity);
	if (!en) {
		reload_if_changed(ma);
		en = keyring_find(&ma->kr, entity);
	}
	if (en) {
		memcpy(key, en->key, AUTH_KEY_LEN);
		r = 0;
	}
	pthread_mutex_unlock(&ma->lock);
	return r;
}

static int secret_of(const struct mon_auth *ma, uint8_t service, uint64_t gen,
		     struct auth_secret *s)
{
	uint8_t ctx[9];

	ctx[0] = service;
	for (int i = 0; i < 8; i++)
		ctx[1 + i] = (uint8_t)(gen >> (8 * i));
	s->gen = gen;
	return auth_hkdf(ma->mon_key, NULL, 0, "atoll auth v1 service secret", ctx,
			 sizeof(ctx), s->key, AUTH_KEY_LEN);
}

static const char *caps_of(const struct keyring_entry *en, const char *service)
{
	for (uint32_t i = 0; i < en->ncaps; i++)
		if (!strcmp(en->caps[i].service, service))
			return en->caps[i].caps;
	return "";
}

/* The tag of client id part r for entity: 31 bits of HMAC(mon.'s key),
 * so that any monitor recognises an id some monitor gave that entity. */
static int id_tag(const struct mon_auth *ma, const char *entity, uint32_t r, uint32_t *tag)
{
	uint8_t mac[AUTH_MAC_LEN], rb[4] = { (uint8_t)r, (uint8_t)(r >> 8),
					     (uint8_t)(r >> 16), (uint8_t)(r >> 24) };
	int err = auth_mac(ma->mon_key, "atoll auth v1 client id", rb, sizeof(rb), entity,
			   strlen(entity), mac);

	*tag = ((uint32_t)mac[0] | (uint32_t)mac[1] << 8 | (uint32_t)mac[2] << 16 |
		(uint32_t)mac[3] << 24) & 0x7fffffffu;
	return err;
}

/* A client id: 32 random bits then their 31-bit tag (never 0).  want_id
 * is kept when its tag is right for entity: a client keeps its id across
 * renewals and monitor failovers, and its request ids stay its own. */
static int client_id(const struct mon_auth *ma, const char *entity, uint64_t want_id,
		     uint64_t *id)
{
	uint32_t r = (uint32_t)(want_id >> 31), tag = 0;
	int err;

	if (want_id && want_id <= INT64_MAX && !id_tag(ma, entity, r, &tag) &&
	    tag == (want_id & 0x7fffffffu)) {
		*id = want_id;
		return 0;
	}
	do {
		err = auth_random(&r, sizeof(r));
		if (!err)
			err = id_tag(ma, entity, r, &tag);
		*id = (uint64_t)r << 31 | tag;
	} while (!err && !*id);
	return err;
}

static int issue(void *arg, const char *entity, uint64_t want_id, uint64_t now,
		 struct auth_reply *r)
{
	static const struct { uint8_t svc; const char *name; } svcs[] = {
		{ AUTH_SVC_OSD, "osd" }, { AUTH_SVC_MDS, "mds" },
	};
	struct mon_auth *ma = arg;
	const struct keyring_entry *en;
	uint64_t gen = 1 + now / ma->period;
	int err = 0;

	pthread_mutex_lock(&ma->lock);
	reload_if_changed(ma);	/* tickets carry the caps of now */
	en = keyring_find(&ma->kr, entity);
	if (!en) {
		pthread_mutex_unlock(&ma->lock);
		return -ENOENT;
	}
	err = client_id(ma, entity, want_id, &r->client_id);
	for (size_t i = 0; i < sizeof(svcs) / sizeof(svcs[0]) && !err; i++) {
		struct auth_secret s;

		err = secret_of(ma, svcs[i].svc, gen, &s);
		if (!err)
			err = msg_auth_make_grant(&s, svcs[i].svc, entity, r->client_id,
						  caps_of(en, svcs[i].name), now, ma->ttl,
						  &r->g[r->n]);
		if (!err)
			r->n++;
		auth_wipe(&s, sizeof(s));
	}
	pthread_mutex_unlock(&ma->lock);
	/* a service's daemons get its secrets */
	if (!err && (!strncmp(entity, "osd.", 4) || !strncmp(entity, "mds.", 4))) {
		r->secrets.service = entity[0] == 'o' ? AUTH_SVC_OSD : AUTH_SVC_MDS;
		for (uint64_t g = gen > 1 ? gen - 1 : gen; g <= gen + 1 && !err; g++)
			err = secret_of(ma, r->secrets.service, g, &r->secrets.s[r->secrets.n++]);
	}
	return err;
}

int mon_auth_caps(struct mon *mon, const char *entity, const char *service, char *out,
		  size_t outlen)
{
	struct mon_auth *ma = mon->auth;
	const struct keyring_entry *en;
	int r = -ENOENT;

	if (!ma)
		return -ENOENT;
	/* a stat per call: caps changed in the file apply to the next
	 * message (doc/caps.md, "Changing caps") */
	pthread_mutex_lock(&ma->lock);
	reload_if_changed(ma);
	en = keyring_find(&ma->kr, entity);
	if (en)
		r = snprintf(out, outlen, "%s", caps_of(en, service)) < (int)outlen ? 0 :
		    -ENAMETOOLONG;
	pthread_mutex_unlock(&ma->lock);
	return r;
}

int mon_auth_setup(struct mon *mon, struct msg_auth **out, char *err, size_t errlen)
{
	struct mon_auth *ma = calloc(1, sizeof(*ma));
	const struct keyring_entry *en;
	int64_t ttl, period;
	int r;

	*out = NULL;
	if (!ma)
		return -ENOMEM;
	pthread_mutex_init(&ma->lock, NULL);
	r = auth_config_load(mon->cfg, WHO, "mon.", &ma->kr, out, err, errlen);
	if (r < 0 || !*out)
		goto out_free;
	{
		const char *path = config_get(mon->cfg, WHO, "keyring", NULL);
		struct stat st;

		snprintf(ma->path, sizeof(ma->path), "%s", path ? path : "/etc/atoll/keyring");
		if (stat(ma->path, &st) == 0)
			ma->loaded_mtime = st.st_mtim;
	}
	if ((r = config_get_int(mon->cfg, WHO, "auth_ticket_ttl", 43200, 4, 30 * 86400,
				&ttl, err, errlen)) < 0 ||
	    (r = config_get_int(mon->cfg, WHO, "auth_secret_period", ttl, ttl, 60 * 86400,
				&period, err, errlen)) < 0)
		goto out_free_auth;
	ma->ttl = (uint32_t)ttl;
	ma->period = (uint32_t)period;
	en = keyring_find(&ma->kr, "mon.");
	memcpy(ma->mon_key, en->key, AUTH_KEY_LEN);
	msg_auth_set_key_lookup(*out, lookup, ma);
	msg_auth_set_issuer(*out, issue, ma);
	mon->auth = ma;
	log_info("mon", "authentication on: %u entities in the keyring", ma->kr.n);
	return 0;

out_free_auth:
	msg_auth_free(*out);
	*out = NULL;
out_free:
	keyring_free(&ma->kr);
	pthread_mutex_destroy(&ma->lock);
	free(ma);
	return r;
}

void mon_auth_free(struct mon *mon)
{
	struct mon_auth *ma = mon->auth;

	if (!ma)
		return;
	keyring_free(&ma->kr);
	pthread_mutex_destroy(&ma->lock);
	auth_wipe(ma, sizeof(*ma));
	free(ma);
	mon->auth = NULL;
}
