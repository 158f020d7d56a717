/*
 * auth_entry.c - encoders and decoders of the monitors' auth state
 * (auth_entry.h): the auth log entries and a snapshot's auth section.
 *
 *   entry:    "ATAUTHE1", then one versioned section: u8 op and its
 *             fields.  A map-change entry starts with its section's
 *             version and compat bytes (1, 1) and an incarnation entry
 *             with "ATINCARN", so none looks like another.
 *   section:  "ATAUTHS1", then one versioned section with the whole
 *             state; it follows the state blob and the incarnation
 *             trailer in a snapshot (mapchange.c).
 *
 * An entity is: str name, raw key[32], u32 ncaps, then ncaps times str
 * service, str caps; its name and caps are checked as a keyring file's
 * are (keyring_set, keyring_set_caps), and a name appears once.  Every
 * decoder fails cleanly (-EBADMSG) on short, long or absurd input;
 * tests/fuzz/fuzz_mon_auth.c drives them.
 */
#include <errno.h>
#include <string.h>

#include "auth_entry.h"
#include "encode.h"

#define AUTH_ENTRY_MAGIC	"ATAUTHE1"
#define AUTH_STATE_MAGIC	"ATAUTHS1"

static void ents_encode(const struct keyring *kr, struct enc *out)
{
	enc_u32(out, kr->n);
	for (uint32_t i = 0; i < kr->n; i++) {
		const struct keyring_entry *en = &kr->e[i];

		enc_str(out, en->name);
		enc_raw(out, en->key, AUTH_KEY_LEN);
		enc_u32(out, en->ncaps);
		for (uint32_t j = 0; j < en->ncaps; j++) {
			enc_str(out, en->caps[j].service);
			enc_str(out, en->caps[j].caps);
		}
	}
}

static int ents_decode(struct dec *d, struct keyring *kr)
{
	char name[AUTH_NAME_MAX + 1], svc[16], caps[AUTH_CAPS_MAX + 1];
	uint32_t n = dec_count(d, KEYRING_ENTRIES_MAX, 4 + 1 + AUTH_KEY_LEN + 4);

	for (uint32_t i = 0; i < n && !d->err; i++) {
		const void *key;
		uint32_t nc;

		if (dec_str(d, name, AUTH_NAME_MAX) < 0)
			return -EBADMSG;
		key = dec_raw(d, AUTH_KEY_LEN);
		nc = dec_count(d, KEYRING_CAPS_MAX, 8);
		if (!key || d->err || keyring_find(kr, name) || keyring_set(kr, name, key) < 0)
			return -EBADMSG;
		for (uint32_t j = 0; j < nc; j++) {
			if (dec_str(d, svc, sizeof(svc) - 1) < 0 ||
			    dec_str(d, caps, AUTH_CAPS_MAX) < 0)
				return -EBADMSG;
			/* a service twice would be one on re-encoding */
			if (kr->e[kr->n - 1].ncaps != j ||
			    keyring_set_caps(kr, name, svc, caps) < 0 ||
			    kr->e[kr->n - 1].ncaps != j + 1)
				return -EBADMSG;
		}
	}
	return d->err ? -EBADMSG : 0;
}

static void gen_encode(const struct mon_auth_gen *g, struct enc *out)
{
	enc_u64(out, g->gen);
	enc_u64(out, g->start);
	enc_raw(out, g->key, AUTH_KEY_LEN);
}

static int gen_decode(struct dec *d, struct mon_auth_gen *g)
{
	const void *k;

	g->gen = dec_u64(d);
	g->start = dec_u64(d);
	k = dec_raw(d, AUTH_KEY_LEN);
	if (!k || d->err || g->gen == 0)
		return -EBADMSG;
	memcpy(g->key, k, AUTH_KEY_LEN);
	return 0;
}

static bool range_ok(const struct mon_auth_range *r)
{
	return r->member && r->first && r->first < r->end && r->end <= MON_AUTH_SEQ_MAX + 1;
}

void mon_auth_entry_encode(const struct mon_auth_entry *e, struct enc *out)
{
	size_t h;

	enc_raw(out, AUTH_ENTRY_MAGIC, 8);
	h = enc_begin(out, 1, 1);
	enc_u8(out, e->op);
	switch (e->op) {
	case MON_AUTH_BOOT:
		enc_raw(out, e->idkey, AUTH_KEY_LEN);
		/* fall through */
	case MON_AUTH_PUT:
		ents_encode(&e->ents, out);
		if (e->op == MON_AUTH_PUT) {
			enc_u64(out, e->now);
			enc_u64(out, e->prev_until);
			enc_u64(out, e->client);
			enc_u64(out, e->seq);
		}
		break;
	case MON_AUTH_RM:
		enc_str(out, e->name);
		enc_u64(out, e->client);
		enc_u64(out, e->seq);
		break;
	case MON_AUTH_IDRANGE:
		enc_u64(out, e->range.member);
		enc_u64(out, e->range.first);
		enc_u64(out, e->range.end);
		enc_u64(out, e->range.at);
		break;
	case MON_AUTH_SECRET:
		enc_u8(out, e->service);
		gen_encode(&e->secret, out);
		break;
	}
	enc_end(out, h);
}

int mon_auth_entry_decode(const void *buf, size_t len, struct mon_auth_entry *e)
{
	struct dec d, body;
	const void *k;
	uint8_t ver;
	int r = 0;

	memset(e, 0, sizeof(*e));
	if (len < 8 || memcmp(buf, AUTH_ENTRY_MAGIC, 8) != 0)
		return 0;
	dec_init(&d, (const uint8_t *)buf + 8, len - 8);
	if (dec_begin(&d, 1, &body, &ver) < 0)
		return -EBADMSG;
	e->op = dec_u8(&body);
	switch (e->op) {
	case MON_AUTH_BOOT:
		k = dec_raw(&body, AUTH_KEY_LEN);
		if (!k)
			return -EBADMSG;
		memcpy(e->idkey, k, AUTH_KEY_LEN);
		/* fall through */
	case MON_AUTH_PUT:
		r = ents_decode(&body, &e->ents);
		if (!r && e->op == MON_AUTH_PUT) {
			e->now = dec_u64(&body);
			e->prev_until = dec_u64(&body);
			e->client = dec_u64(&body);
			e->seq = dec_u64(&body);
			if (body.err || e->ents.n == 0 ||
			    (e->prev_until && e->prev_until < e->now))
				r = -EBADMSG;
		}
		break;
	case MON_AUTH_RM:
		if (dec_str(&body, e->name, AUTH_NAME_MAX) < 0 ||
		    auth_entity_check(e->name, NULL) < 0)
			r = -EBADMSG;
		e->client = dec_u64(&body);
		e->seq = dec_u64(&body);
		break;
	case MON_AUTH_IDRANGE:
		e->range.member = dec_u64(&body);
		e->range.first = dec_u64(&body);
		e->range.end = dec_u64(&body);
		e->range.at = dec_u64(&body);
		if (body.err || !range_ok(&e->range))
			r = -EBADMSG;
		break;
	case MON_AUTH_SECRET:
		e->service = dec_u8(&body);
		if (gen_decode(&body, &e->secret) < 0 ||
		    (e->service != AUTH_SVC_OSD && e->service != AUTH_SVC_MDS))
			r = -EBADMSG;
		break;
	default:
		r = -EBADMSG;
	}
	if (r < 0 || body.err || dec_end(&d, &body) < 0)
		return -EBADMSG;
	return 1;
}

void mon_auth_entry_clear(struct mon_auth_entry *e)
{
	keyring_free(&e->ents);
	auth_wipe(e, sizeof(*e));
}

void mon_auth_state_encode(const struct mon_auth_state *s, struct enc *out)
{
	size_t h;

	enc_raw(out, AUTH_STATE_MAGIC, 8);
	h = enc_begin(out, 1, 1);
	enc_u8(out, s->booted ? 1 : 0);
	enc_raw(out, s->idkey, AUTH_KEY_LEN);
	enc_u64(out, s->id_next);
	enc_u32(out, s->nranges);
	for (uint32_t i = 0; i < s->nranges; i++) {
		enc_u64(out, s->ranges[i].member);
		enc_u64(out, s->ranges[i].first);
		enc_u64(out, s->ranges[i].end);
		enc_u64(out, s->ranges[i].at);
	}
	for (uint32_t v = 0; v < MON_AUTH_SVCS; v++) {
		enc_u32(out, s->svc[v].n);
		for (uint32_t i = 0; i < s->svc[v].n; i++)
			gen_encode(&s->svc[v].g[i], out);
	}
	ents_encode(&s->ents, out);
	enc_u32(out, s->nprev);
	for (uint32_t i = 0; i < s->nprev; i++) {
		enc_str(out, s->prev[i].name);
		enc_raw(out, s->prev[i].key, AUTH_KEY_LEN);
		enc_u64(out, s->prev[i].until);
	}
	enc_end(out, h);
}

int mon_auth_state_decode(const void *buf, size_t len, struct mon_auth_state *s)
{
	struct dec d, body;
	const void *k;
	uint8_t ver, booted;

	memset(s, 0, sizeof(*s));
	s->id_next = 1;
	if (len < 8 || memcmp(buf, AUTH_STATE_MAGIC, 8) != 0)
		return 0;
	dec_init(&d, (const uint8_t *)buf + 8, len - 8);
	if (dec_begin(&d, 1, &body, &ver) < 0)
		return -EBADMSG;
	booted = dec_u8(&body);
	k = dec_raw(&body, AUTH_KEY_LEN);
	s->id_next = dec_u64(&body);
	s->nranges = dec_count(&body, MON_AUTH_RANGES_MAX, 32);
	if (!k || body.err || booted > 1 || s->id_next == 0 ||
	    s->id_next > MON_AUTH_SEQ_MAX + 1)
		return -EBADMSG;
	s->booted = booted;
	memcpy(s->idkey, k, AUTH_KEY_LEN);
	for (uint32_t i = 0; i < s->nranges; i++) {
		s->ranges[i].member = dec_u64(&body);
		s->ranges[i].first = dec_u64(&body);
		s->ranges[i].end = dec_u64(&body);
		s->ranges[i].at = dec_u64(&body);
		if (body.err || !range_ok(&s->ranges[i]) || s->ranges[i].end > s->id_next)
			return -EBADMSG;
	}
	for (uint32_t v = 0; v < MON_AUTH_SVCS; v++) {
		s->svc[v].n = dec_count(&body, MON_AUTH_GENS, 48);
		for (uint32_t i = 0; i < s->svc[v].n; i++)
			if (gen_decode(&body, &s->svc[v].g[i]) < 0 ||
			    (i && s->svc[v].g[i].gen <= s->svc[v].g[i - 1].gen))
				return -EBADMSG;
	}
	if (body.err || ents_decode(&body, &s->ents) < 0)
		return -EBADMSG;
	s->nprev = dec_count(&body, MON_AUTH_PREV_MAX, 4 + 1 + AUTH_KEY_LEN + 8);
	for (uint32_t i = 0; i < s->nprev; i++) {
		const void *pk;

		if (dec_str(&body, s->prev[i].name, AUTH_NAME_MAX) < 0 ||
		    auth_entity_check(s->prev[i].name, NULL) < 0)
			return -EBADMSG;
		pk = dec_raw(&body, AUTH_KEY_LEN);
		s->prev[i].until = dec_u64(&body);
		if (!pk || body.err)
			return -EBADMSG;
		memcpy(s->prev[i].key, pk, AUTH_KEY_LEN);
	}
	if (body.err || dec_end(&d, &body) < 0)
		return -EBADMSG;
	return 1;
}
