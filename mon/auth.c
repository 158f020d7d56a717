/*
 * auth.c - the monitor's side of authentication (doc/security.md): the
 * auth state the monitors replicate (every entity's key and caps, the
 * service secrets, the client id ranges), key lookups and the tickets,
 * client ids and service secrets a monitor hands out.
 *
 * The state changes only through auth log entries (auth_entry.h), which
 * the leader makes: it draws every key, secret and id key with
 * RAND_bytes and puts the bytes in the entry, and it reads the clock for
 * a secret's start time, so that applying an entry (mon_auth_apply, raft
 * thread) reads no clock and no random source and every member ends with
 * the same state.  What the leader proposes by itself (mon_auth_tick):
 *   - BOOT, once, when the state is empty: the entities of its keyring
 *     file (atoll-cluster writes it), so a new cluster needs nothing
 *     typed; later entities come from `atoll auth` commands (cmd_auth.c);
 *   - SECRET: each service keeps three secrets (previous, current,
 *     next), a new one every auth_secret_period; tickets are sealed with
 *     the current one, daemons receive all three;
 *   - IDRANGE: a range of client id numbers for each monitor that has
 *     none, whose range this monitor (the leader) used up, or whose
 *     range is auth_secret_period old (a follower's use is not seen
 *     here; one that used its range up refuses new ids until then, and
 *     its clients go to another monitor).
 * mon.'s key is not in the state: monitors authenticate each other with
 * it before there is a quorum, so each reads it from its keyring file.
 *
 * Client ids are seq << 31 | tag: seq comes from the monitor's range
 * (unique across monitors), tag is 31 bits of HMAC(id key of the state,
 * seq, entity), so any monitor recognises an id given to that entity and
 * keeps it (want_id) across renewals and failovers.  A monitor writes the
 * highest seq it may have given to DIR/auth_ids before giving it, so a
 * restarted monitor never gives a seq twice.
 *
 * Locks: ma->lock guards st and the id cursor; the raft thread takes it
 * inside mon->lock when it applies, the messenger's loop thread alone
 * when it looks up keys and issues.  The monitor thread reads st under
 * mon->lock (no writer then).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auth_config.h"
#include "auth_entry.h"
#include "config.h"
#include "encode.h"
#include "log.h"
#include "mon.h"
#include "msg_auth.h"

#define WHO		"mon"
#define RANGE_SIZE	65536u	/* client id seqs per range */
#define MARK_STEP	256u	/* seqs written ahead to DIR/auth_ids */

struct mon_auth {
	pthread_mutex_t lock;		/* st, cur, end, mark */
	bool on;			/* auth = ticket */
	struct keyring kr;		/* this monitor's keyring file */
	uint8_t mon_key[AUTH_KEY_LEN];
	uint32_t ttl, period;
	uint32_t grace;			/* auth_rotate_grace, seconds */
	uint64_t self_id;		/* this monitor's raft id */
	struct mon_auth_state st;
	uint64_t cur, end;		/* this monitor's next seq, its range's end */
	uint64_t mark;			/* DIR/auth_ids: seqs below may have been given */
	char markpath[4096];
	uint64_t retry_ms;		/* mon_auth_tick: no proposal before */
	bool importable, warned;	/* kr holds more than mon. */
};

static int svc_index(uint8_t service)
{
	return service == AUTH_SVC_OSD ? 0 : 1;
}

/* ---- this monitor's client ids ---- */

static int mark_write(struct mon_auth *ma, uint64_t mark)
{
	char tmp[4200], buf[32];
	int fd, n, r = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", ma->markpath);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", mark);
	if (write(fd, buf, (size_t)n) != n || fsync(fd) < 0)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, ma->markpath) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	else
		ma->mark = mark;
	return r;
}

static void mark_read(struct mon_auth *ma)
{
	FILE *f = fopen(ma->markpath, "re");
	unsigned long long v = 0;

	if (!f)
		return;
	if (fscanf(f, "%llu", &v) == 1)
		ma->mark = v;
	fclose(f);
}

/* A range for this monitor was applied (or restored): seqs below the
 * mark may have been given before a restart. */
static void self_range(struct mon_auth *ma, const struct mon_auth_range *r)
{
	ma->cur = r->first > ma->mark ? r->first : ma->mark;
	ma->end = r->end;
}

static int id_tag(const uint8_t key[AUTH_KEY_LEN], const char *entity, uint64_t seq,
		  uint32_t *tag)
{
	uint8_t mac[AUTH_MAC_LEN], sb[8];
	int err;

	for (int i = 0; i < 8; i++)
		sb[i] = (uint8_t)(seq >> (8 * i));
	err = auth_mac(key, "atoll auth v1 client id", sb, sizeof(sb), entity,
		       strlen(entity), mac);
	*tag = ((uint32_t)mac[0] | (uint32_t)mac[1] << 8 | (uint32_t)mac[2] << 16 |
		(uint32_t)mac[3] << 24) & 0x7fffffffu;
	return err;
}

/* want_id when the state gave it to entity, else the next of this
 * monitor's range (-EAGAIN: none left, until the leader reserves more).
 * ma->lock held. */
static int client_id(struct mon_auth *ma, const char *entity, uint64_t want_id,
		     uint64_t *id)
{
	uint64_t seq = want_id >> 31;
	uint32_t tag = 0;
	int err;

	if (want_id && want_id <= INT64_MAX && seq && seq < ma->st.id_next &&
	    !id_tag(ma->st.idkey, entity, seq, &tag) && tag == (want_id & 0x7fffffffu)) {
		*id = want_id;
		return 0;
	}
	if (!ma->cur || ma->cur >= ma->end)
		return -EAGAIN;
	seq = ma->cur;
	if (seq >= ma->mark) {
		err = mark_write(ma, seq + MARK_STEP);
		if (err < 0) {
			log_error("mon", "cannot write '%s': %s; no new client ids",
				  ma->markpath, strerror(-err));
			return err;
		}
	}
	ma->cur++;
	err = id_tag(ma->st.idkey, entity, seq, &tag);
	*id = seq << 31 | tag;
	return err;
}

/* ---- lookups and tickets (the messenger's loop thread) ---- */

static int lookup(void *arg, const char *entity, uint8_t key[AUTH_KEY_LEN])
{
	struct mon_auth *ma = arg;
	const struct keyring_entry *en;
	int r = -ENOENT;

	if (!strcmp(entity, "mon.")) {
		memcpy(key, ma->mon_key, AUTH_KEY_LEN);
		return 0;
	}
	pthread_mutex_lock(&ma->lock);
	en = keyring_find(&ma->st.ents, entity);
	if (en) {
		memcpy(key, en->key, AUTH_KEY_LEN);
		r = 0;
	}
	pthread_mutex_unlock(&ma->lock);
	return r;
}

/* A key replaced by a rotation, while it is accepted. */
static int prev_lookup(void *arg, const char *entity, uint8_t key[AUTH_KEY_LEN])
{
	struct mon_auth *ma = arg;
	uint64_t now = (uint64_t)time(NULL);
	int r = -ENOENT;

	pthread_mutex_lock(&ma->lock);
	for (uint32_t i = 0; i < ma->st.nprev; i++)
		if (!strcmp(ma->st.prev[i].name, entity) && now <= ma->st.prev[i].until) {
			memcpy(key, ma->st.prev[i].key, AUTH_KEY_LEN);
			r = 0;
		}
	pthread_mutex_unlock(&ma->lock);
	return r;
}

static void prev_drop(struct mon_auth_state *st, uint32_t i)
{
	auth_wipe(&st->prev[i], sizeof(st->prev[i]));
	memmove(st->prev + i, st->prev + i + 1, (st->nprev - i - 1) * sizeof(st->prev[0]));
	st->nprev--;
}

/* Forgets name's replaced keys (auth rm), or those expired at now. */
static void prev_forget(struct mon_auth_state *st, const char *name, uint64_t now)
{
	for (uint32_t i = st->nprev; i-- > 0;)
		if ((name && !strcmp(st->prev[i].name, name)) ||
		    (!name && st->prev[i].until < now))
			prev_drop(st, i);
}

static const char *caps_of(const struct keyring_entry *en, const char *service)
{
	for (uint32_t i = 0; en && i < en->ncaps; i++)
		if (!strcmp(en->caps[i].service, service))
			return en->caps[i].caps;
	return "";
}

/* The secret tickets are sealed with: the current one (the middle of
 * previous, current, next), NULL while the service has none. */
static const struct mon_auth_gen *sealing(const struct mon_auth_svc *s)
{
	if (!s->n)
		return NULL;
	return &s->g[s->n >= 2 ? s->n - 2 : 0];
}

static int issue(void *arg, const char *entity, uint64_t want_id, uint64_t now,
		 struct auth_reply *r)
{
	static const struct { uint8_t svc; const char *name; } svcs[] = {
		{ AUTH_SVC_OSD, "osd" }, { AUTH_SVC_MDS, "mds" },
	};
	struct mon_auth *ma = arg;
	const struct keyring_entry *en = NULL;
	bool is_mon = !strcmp(entity, "mon.");
	int err = 0;

	pthread_mutex_lock(&ma->lock);
	if (!is_mon) {
		en = keyring_find(&ma->st.ents, entity);
		if (!en) {
			err = -ENOENT;
			goto out_unlock;
		}
	}
	/* monitors talk to each other before there is a state: they need
	 * no client id of a range (all of them are 1, an id below 2^31 that
	 * no client gets) and no tickets */
	if (is_mon) {
		r->client_id = 1;
		if (!ma->st.booted)
			goto out_unlock;
	} else if (!ma->st.booted) {
		err = -EAGAIN;
		goto out_unlock;
	} else {
		err = client_id(ma, entity, want_id, &r->client_id);
		if (err < 0) {
			log_info("mon", "no client id for '%s' yet: %s", entity, strerror(-err));
			goto out_unlock;
		}
	}
	for (size_t i = 0; i < sizeof(svcs) / sizeof(svcs[0]) && !err; i++) {
		const struct mon_auth_gen *g = sealing(&ma->st.svc[svc_index(svcs[i].svc)]);
		struct auth_secret s;

		if (!g) {
			err = is_mon ? 0 : -EAGAIN;
			break;
		}
		s.gen = g->gen;
		memcpy(s.key, g->key, AUTH_KEY_LEN);
		err = msg_auth_make_grant(&s, svcs[i].svc, entity, r->client_id,
					  caps_of(en, svcs[i].name), now, ma->ttl, &r->g[r->n]);
		if (!err)
			r->n++;
		auth_wipe(&s, sizeof(s));
	}
	/* a service's daemons get its secrets */
	if (!err && (!strncmp(entity, "osd.", 4) || !strncmp(entity, "mds.", 4))) {
		const struct mon_auth_svc *sv;

		r->secrets.service = entity[0] == 'o' ? AUTH_SVC_OSD : AUTH_SVC_MDS;
		sv = &ma->st.svc[svc_index(r->secrets.service)];
		for (uint32_t i = 0; i < sv->n && r->secrets.n < AUTH_SECRETS_MAX; i++) {
			r->secrets.s[r->secrets.n].gen = sv->g[i].gen;
			memcpy(r->secrets.s[r->secrets.n].key, sv->g[i].key, AUTH_KEY_LEN);
			r->secrets.n++;
		}
	}
out_unlock:
	pthread_mutex_unlock(&ma->lock);
	return err;
}

/* ---- the replicated state (raft thread, mon->lock held) ---- */

static int apply_put(struct mon_auth *ma, const struct keyring *ents, uint64_t now,
		     uint64_t prev_until)
{
	struct mon_auth_state *st = &ma->st;
	uint32_t fresh = 0;

	for (uint32_t i = 0; i < ents->n; i++)
		fresh += !keyring_find(&ma->st.ents, ents->e[i].name);
	if (ma->st.ents.n + fresh > KEYRING_ENTRIES_MAX)
		return -ENOSPC;
	if (now)
		prev_forget(st, NULL, now);
	for (uint32_t i = 0; i < ents->n; i++) {
		const struct keyring_entry *src = &ents->e[i], *old;
		int r;

		if (!strcmp(src->name, "mon."))
			continue;	/* each monitor's own file holds it */
		old = keyring_find(&st->ents, src->name);
		if (prev_until && old && memcmp(old->key, src->key, AUTH_KEY_LEN)) {
			prev_forget(st, src->name, 0);
			if (st->nprev == MON_AUTH_PREV_MAX)
				prev_drop(st, 0);
			snprintf(st->prev[st->nprev].name, sizeof(st->prev[0].name), "%s",
				 src->name);
			memcpy(st->prev[st->nprev].key, old->key, AUTH_KEY_LEN);
			st->prev[st->nprev++].until = prev_until;
		}
		r = keyring_set(&ma->st.ents, src->name, src->key);
		if (r < 0)
			return r;	/* ENOMEM: checked names cannot fail */
		for (uint32_t k = 0; k < ma->st.ents.n; k++)
			if (!strcmp(ma->st.ents.e[k].name, src->name)) {
				ma->st.ents.e[k].ncaps = src->ncaps;
				memcpy(ma->st.ents.e[k].caps, src->caps, sizeof(src->caps));
			}
	}
	return (int)ents->n;
}

static int apply_range(struct mon_auth *ma, const struct mon_auth_range *rg)
{
	struct mon_auth_state *st = &ma->st;
	uint32_t i;

	if (rg->first != st->id_next)
		return -ESTALE;	/* a deposed leader's, made against older state */
	for (i = 0; i < st->nranges; i++)
		if (st->ranges[i].member == rg->member)
			break;
	if (i == st->nranges) {
		if (st->nranges == MON_AUTH_RANGES_MAX) {
			/* the oldest range goes (a monitor removed long ago) */
			memmove(st->ranges, st->ranges + 1,
				(MON_AUTH_RANGES_MAX - 1) * sizeof(st->ranges[0]));
			i = --st->nranges;
		}
		st->nranges++;
	}
	st->ranges[i] = *rg;
	st->id_next = rg->end;
	if (rg->member == ma->self_id)
		self_range(ma, rg);
	return 0;
}

static int apply_secret(struct mon_auth *ma, uint8_t service, const struct mon_auth_gen *g)
{
	struct mon_auth_svc *s = &ma->st.svc[svc_index(service)];
	uint64_t want = s->n ? s->g[s->n - 1].gen + 1 : 1;

	if (g->gen != want)
		return -ESTALE;
	if (s->n == MON_AUTH_GENS) {
		auth_wipe(&s->g[0], sizeof(s->g[0]));
		memmove(s->g, s->g + 1, (MON_AUTH_GENS - 1) * sizeof(s->g[0]));
		s->n--;
	}
	s->g[s->n++] = *g;
	return 0;
}

bool mon_auth_apply(struct mon *mon, const void *buf, size_t len, int64_t *res)
{
	struct mon_auth *ma = mon->auth;
	struct mon_auth_entry e;
	int r = mon_auth_entry_decode(buf, len, &e);

	if (r != 0 && !ma) {
		/* a program that only replays the log (no auth set up) */
		mon_auth_entry_clear(&e);
		*res = 0;
		return true;
	}
	if (r == 0) {
		mon_auth_entry_clear(&e);
		return false;
	}
	if (r < 0) {
		log_error("mon", "malformed auth entry in the log (%zu bytes): skipped", len);
		mon_auth_entry_clear(&e);
		*res = -EBADMSG;
		return true;
	}
	pthread_mutex_lock(&ma->lock);
	switch (e.op) {
	case MON_AUTH_PUT:
		r = apply_put(ma, &e.ents, e.now, e.prev_until);
		break;
	case MON_AUTH_RM:
		r = keyring_remove(&ma->st.ents, e.name);
		prev_forget(&ma->st, e.name, 0);
		break;
	case MON_AUTH_BOOT:
		if (ma->st.booted) {
			r = -EEXIST;
			break;
		}
		r = apply_put(ma, &e.ents, 0, 0);
		if (r >= 0) {
			memcpy(ma->st.idkey, e.idkey, AUTH_KEY_LEN);
			ma->st.booted = true;
			log_info("mon", "auth state created: %u entities", ma->st.ents.n);
		}
		break;
	case MON_AUTH_IDRANGE:
		r = apply_range(ma, &e.range);
		break;
	case MON_AUTH_SECRET:
		r = apply_secret(ma, e.service, &e.secret);
		if (r >= 0)
			log_info("mon", "service secret %llu of the %s service made (rotation)",
				 (unsigned long long)e.secret.gen,
				 e.service == AUTH_SVC_OSD ? "osd" : "mds");
		break;
	}
	pthread_mutex_unlock(&ma->lock);
	/* a resent command is answered, not redone (commands.c) */
	if (r >= 0 && (e.op == MON_AUTH_PUT || e.op == MON_AUTH_RM))
		mon_reqid_record(mon, e.client, e.seq, mon->map ? mon->map->epoch : 0);
	mon->digest = 0;
	mon_auth_entry_clear(&e);
	*res = r;
	return true;
}

void mon_auth_state_append(struct mon *mon, struct enc *e)
{
	mon_auth_state_encode(&mon->auth->st, e);
}

int mon_auth_state_restore(struct mon *mon, const void *buf, size_t len)
{
	struct mon_auth *ma = mon->auth;
	struct mon_auth_state st;
	int r = mon_auth_state_decode(buf, len, &st);

	if (r < 0) {
		keyring_free(&st.ents);
		return r;
	}
	pthread_mutex_lock(&ma->lock);
	keyring_free(&ma->st.ents);
	auth_wipe(&ma->st, sizeof(ma->st));
	ma->st = st;
	ma->cur = ma->end = 0;
	for (uint32_t i = 0; i < st.nranges; i++)
		if (st.ranges[i].member == ma->self_id)
			self_range(ma, &st.ranges[i]);
	pthread_mutex_unlock(&ma->lock);
	return 0;
}

/* ---- the leader's proposals (monitor thread, mon->lock held) ---- */

int mon_auth_propose(struct mon *mon, const struct mon_auth_entry *e, int64_t *res)
{
	struct enc enc;
	int r;

	enc_init(&enc);
	mon_auth_entry_encode(e, &enc);
	r = enc.err ? enc.err : mon_quorum_propose(mon, enc.buf, enc.len, res);
	auth_wipe(enc.buf, enc.len);
	enc_free(&enc);
	return r;
}

static const struct mon_auth_range *range_of(const struct mon_auth_state *st,
					     uint64_t member)
{
	for (uint32_t i = 0; i < st->nranges; i++)
		if (st->ranges[i].member == member)
			return &st->ranges[i];
	return NULL;
}

/* What the state lacks, one entry per call; 0 when nothing. */
static int next_entry(struct mon *mon, struct mon_auth_entry *e)
{
	struct mon_auth *ma = mon->auth;
	uint64_t now = (uint64_t)time(NULL);
	int r;

	memset(e, 0, sizeof(*e));
	if (!ma->st.booted) {
		/* a file with mon. alone would make a state nobody can manage:
		 * wait for a leader whose file has the admin's key */
		if (!ma->importable) {
			if (!ma->warned)
				log_warn("mon", "the keyring file holds no entity but mon.: "
					 "nothing to start the monitors' keys with; give this "
					 "monitor a keyring with client.admin (doc/admin.md)");
			ma->warned = true;
			return 0;
		}
		e->op = MON_AUTH_BOOT;
		for (uint32_t i = 0; i < ma->kr.n; i++) {
			r = keyring_set(&e->ents, ma->kr.e[i].name, ma->kr.e[i].key);
			if (r < 0)
				return r;
			e->ents.e[e->ents.n - 1].ncaps = ma->kr.e[i].ncaps;
			memcpy(e->ents.e[e->ents.n - 1].caps, ma->kr.e[i].caps,
			       sizeof(ma->kr.e[i].caps));
		}
		return auth_random(e->idkey, sizeof(e->idkey)) ?: 1;
	}
	for (uint32_t v = 0; v < MON_AUTH_SVCS; v++) {
		const struct mon_auth_svc *s = &ma->st.svc[v];

		if (s->n < MON_AUTH_GENS || s->g[s->n - 1].start + ma->period <= now) {
			e->op = MON_AUTH_SECRET;
			e->service = v == 0 ? AUTH_SVC_OSD : AUTH_SVC_MDS;
			e->secret.gen = s->n ? s->g[s->n - 1].gen + 1 : 1;
			e->secret.start = now;
			return auth_random(e->secret.key, AUTH_KEY_LEN) ?: 1;
		}
	}
	for (uint32_t i = 0; i < mon->qv.nmembers; i++) {
		uint64_t id = mon->qv.members[i].id;

		const struct mon_auth_range *rg = range_of(&ma->st, id);
		bool used_up;

		pthread_mutex_lock(&ma->lock);
		used_up = id == ma->self_id && ma->cur >= ma->end;
		pthread_mutex_unlock(&ma->lock);
		/* the leader cannot see how much of a follower's range is used:
		 * each gets a fresh one every auth_secret_period */
		if (rg && !used_up && rg->at + ma->period > now)
			continue;
		if (ma->st.id_next + RANGE_SIZE > MON_AUTH_SEQ_MAX + 1)
			return 0;	/* 2^32 ids given: none left */
		e->op = MON_AUTH_IDRANGE;
		e->range.member = id;
		e->range.first = ma->st.id_next;
		e->range.end = ma->st.id_next + RANGE_SIZE;
		e->range.at = now;
		return 1;
	}
	return 0;
}

void mon_auth_tick(struct mon *mon)
{
	struct mon_auth *ma = mon->auth;
	struct mon_auth_entry e;
	uint64_t now = mono_now_ms();
	int64_t res = 0;
	int r;

	if (!ma || !ma->on || !mon->serving || now < ma->retry_ms)
		return;
	r = next_entry(mon, &e);
	if (r > 0)
		r = mon_auth_propose(mon, &e, &res);
	if (r < 0 && r != MON_ENOTLEADER) {
		log_warn("mon", "cannot record an auth change: %s; retrying in a second",
			 strerror(-r));
		ma->retry_ms = now + 1000;
	}
	mon_auth_entry_clear(&e);
}

/* ---- what the commands read (monitor thread, mon->lock held) ---- */

const struct keyring *mon_auth_entities(struct mon *mon)
{
	return &mon->auth->st.ents;
}

uint32_t mon_auth_rotate_grace(struct mon *mon)
{
	return mon->auth ? mon->auth->grace : 0;
}

bool mon_auth_ready(struct mon *mon)
{
	return mon->auth && mon->auth->on && mon->auth->st.booted;
}

int mon_auth_caps(struct mon *mon, const char *entity, const char *service, char *out,
		  size_t outlen)
{
	struct mon_auth *ma = mon->auth;
	const struct keyring_entry *en;
	int r = 0;

	if (!ma)
		return -ENOENT;
	pthread_mutex_lock(&ma->lock);
	en = keyring_find(!strcmp(entity, "mon.") ? &ma->kr : &ma->st.ents, entity);
	if (!en)
		r = -ENOENT;
	else if ((size_t)snprintf(out, outlen, "%s", caps_of(en, service)) >= outlen)
		r = -ENAMETOOLONG;
	pthread_mutex_unlock(&ma->lock);
	return r;
}

/* ---- set-up ---- */

int mon_auth_setup(struct mon *mon, struct msg_auth **out, char *err, size_t errlen)
{
	struct mon_auth *ma = calloc(1, sizeof(*ma));
	const struct keyring_entry *en;
	int64_t ttl, period, grace;
	int r;

	*out = NULL;
	if (!ma)
		return -ENOMEM;
	pthread_mutex_init(&ma->lock, NULL);
	ma->st.id_next = 1;
	ma->self_id = mon->self.id;
	snprintf(ma->markpath, sizeof(ma->markpath), "%s/auth_ids",
		 mon->data_dir ? mon->data_dir : ".");
	mark_read(ma);
	mon->auth = ma;
	r = auth_config_load(mon->cfg, WHO, "mon.", &ma->kr, out, err, errlen);
	if (r < 0 || !*out)
		return r;	/* auth = none: the state is kept, never used */
	if ((r = config_get_int(mon->cfg, WHO, "auth_ticket_ttl", 43200, 4, 30 * 86400,
				&ttl, err, errlen)) < 0 ||
	    (r = config_get_int(mon->cfg, WHO, "auth_secret_period", ttl, ttl, 60 * 86400,
				&period, err, errlen)) < 0 ||
	    (r = config_get_int(mon->cfg, WHO, "auth_rotate_grace", 60, 0, 86400,
				&grace, err, errlen)) < 0)
		goto out_free_auth;
	ma->ttl = (uint32_t)ttl;
	ma->period = (uint32_t)period;
	ma->grace = (uint32_t)grace;
	en = keyring_find(&ma->kr, "mon.");
	memcpy(ma->mon_key, en->key, AUTH_KEY_LEN);
	ma->importable = ma->kr.n > 1;
	ma->on = true;
	msg_auth_set_key_lookup(*out, lookup, ma);
	msg_auth_set_prev_lookup(*out, prev_lookup);
	msg_auth_set_issuer(*out, issue, ma);
	log_info("mon", "authentication on: %u entities in the keyring file", ma->kr.n);
	return 0;

out_free_auth:
	msg_auth_free(*out);
	*out = NULL;
	return r;
}

void mon_auth_free(struct mon *mon)
{
	struct mon_auth *ma = mon->auth;

	if (!ma)
		return;
	keyring_free(&ma->kr);
	keyring_free(&ma->st.ents);
	pthread_mutex_destroy(&ma->lock);
	auth_wipe(ma, sizeof(*ma));
	free(ma);
	mon->auth = NULL;
}
