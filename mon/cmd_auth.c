/*
 * cmd_auth.c - `atoll auth ...`: the entities, keys and caps of the
 * monitors' auth state (auth.c, doc/security.md).  Every command needs
 * monitor caps `allow *`; every change is one auth log entry (a PUT or an
 * RM) with the key the leader drew in it.  A key leaves the monitor only
 * in the reply to the command that made it (add, get-or-create of a new
 * entity, rotate) or over a secure session (get, get-or-create of an
 * existing entity); `auth ls` never shows one.
 *
 * Arguments: "entity" (the name) and "caps", a list [SERVICE, CAPS, ...]
 * with SERVICE one of mon, osd, mds.  Replies are keyring text (plain) or
 * {"entity", "key", "caps": {SERVICE: CAPS}} (json).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth_entry.h"
#include "cmd.h"
#include "msg.h"

static bool service_ok(const char *s)
{
	return !strcmp(s, "mon") || !strcmp(s, "osd") || !strcmp(s, "mds");
}

/* The caller must hold monitor caps `allow *`. */
static int check_admin(struct mon *mon, struct cmd_out *o)
{
	const char *who = o->conn ? msg_conn_entity(o->conn) : "";
	char caps[AUTH_CAPS_MAX + 1];

	if (!mon_auth_ready(mon))
		return cmd_fail(o, -EOPNOTSUPP, "the monitors keep no keys: authentication is "
				"off (auth = none in atoll.conf) or not set up yet; retry");
	if (!*who || mon_auth_caps(mon, who, "mon", caps, sizeof(caps)) < 0 ||
	    strcmp(caps, "allow *") != 0)
		return cmd_fail(o, -EACCES, "'%s' may not manage keys: that needs monitor "
				"caps 'allow *' (atoll auth caps NAME mon 'allow *')",
				*who ? who : "?");
	return 0;
}

/* The "entity" argument: a valid name the state may hold. */
static int arg_entity(cJSON *a, const char **name, struct cmd_out *o)
{
	int r = cmd_arg_str(a, "entity", true, name, o);

	if (r < 0)
		return r;
	if (!strcmp(*name, "mon."))
		return cmd_fail(o, -EINVAL, "'mon.' is the monitors' own key: each monitor "
				"reads it from its keyring file, the auth commands do not hold it");
	if (auth_entity_check(*name, NULL) < 0)
		return cmd_fail(o, -EINVAL, "'%s' is not an entity name: TYPE.ID with TYPE "
				"client, osd (ID a number) or mds, at most %u bytes of "
				"[A-Za-z0-9_.-]", *name, AUTH_NAME_MAX);
	return 0;
}

/* The "caps" argument into en (ncaps = 0 when absent). */
static int arg_caps(cJSON *a, struct keyring_entry *en, struct cmd_out *o)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "caps"), *it;
	const char *svc = NULL;

	en->ncaps = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return cmd_fail(o, -EINVAL, "argument 'caps' must be a list: SERVICE CAPS ...");
	cJSON_ArrayForEach(it, v) {
		if (!cJSON_IsString(it))
			return cmd_fail(o, -EINVAL, "argument 'caps' must hold strings");
		if (!svc) {
			svc = it->valuestring;
			if (!service_ok(svc))
				return cmd_fail(o, -EINVAL, "unknown service '%s': caps are for "
						"mon, osd or mds", svc);
			for (uint32_t i = 0; i < en->ncaps; i++)
				if (!strcmp(en->caps[i].service, svc))
					return cmd_fail(o, -EINVAL, "caps for '%s' given twice",
							svc);
			continue;
		}
		if (strlen(it->valuestring) > AUTH_CAPS_MAX || strchr(it->valuestring, '\n'))
			return cmd_fail(o, -EINVAL, "the caps of '%s' must be one line of at most "
					"%u bytes", svc, AUTH_CAPS_MAX);
		snprintf(en->caps[en->ncaps].service, sizeof(en->caps[0].service), "%s", svc);
		snprintf(en->caps[en->ncaps].caps, sizeof(en->caps[0].caps), "%s",
			 it->valuestring);
		en->ncaps++;
		svc = NULL;
	}
	if (svc)
		return cmd_fail(o, -EINVAL, "service '%s' has no caps after it: give SERVICE "
				"CAPS pairs", svc);
	return 0;
}

static void show(const struct keyring_entry *en, bool with_key, struct cmd_out *o,
		 cJSON *into)
{
	if (o->json) {
		cJSON *j = into ? cJSON_CreateObject() : o->j, *c;
		char hex[2 * AUTH_KEY_LEN + 1];

		cJSON_AddStringToObject(j, "entity", en->name);
		if (with_key) {
			auth_key_to_hex(en->key, hex);
			cJSON_AddStringToObject(j, "key", hex);
			auth_wipe(hex, sizeof(hex));
		}
		c = cJSON_AddObjectToObject(j, "caps");
		for (uint32_t i = 0; i < en->ncaps; i++)
			cJSON_AddStringToObject(c, en->caps[i].service, en->caps[i].caps);
		if (into)
			cJSON_AddItemToArray(into, j);
	} else {
		keyring_entry_write(o->txt, en, with_key);
	}
}

/* One PUT entry with en (key and caps as given); rotated: en's old key
 * stays accepted for auth_rotate_grace. */
static int put(struct mon *mon, const struct keyring_entry *en, bool rotated,
	       struct cmd_out *o)
{
	struct mon_auth_entry e;
	int64_t res = 0;
	int r;

	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_PUT;
	e.client = mon->cur_reqid.client;
	e.seq = mon->cur_reqid.seq;
	e.now = (uint64_t)time(NULL);
	if (rotated && mon_auth_rotate_grace(mon))
		e.prev_until = e.now + mon_auth_rotate_grace(mon);
	r = keyring_set(&e.ents, en->name, en->key);
	if (!r) {
		e.ents.e[0].ncaps = en->ncaps;
		memcpy(e.ents.e[0].caps, en->caps, sizeof(en->caps));
		r = mon_auth_propose(mon, &e, &res);
	}
	mon_auth_entry_clear(&e);
	if (r == 0 && res < 0)
		r = (int)res;
	if (r == -ENOSPC)
		return cmd_fail(o, r, "the monitors hold %u entities already; remove some with: "
				"atoll auth rm NAME", KEYRING_ENTRIES_MAX);
	if (r < 0)
		return cmd_fail(o, r, "the monitor could not record the change (%s); retry",
				strerror(-r));
	return 0;
}

static int secure_only(struct cmd_out *o, const char *name)
{
	if (o->conn && msg_conn_mode(o->conn) == AUTH_MODE_SECURE)
		return 0;
	return cmd_fail(o, -EPERM, "the key of '%s' leaves a monitor only over a secure "
			"session; set ms_mon_mode = secure in atoll.conf", name);
}

/* add and get-or-create */
static int create(struct mon *mon, cJSON *a, struct cmd_out *o, bool or_get)
{
	const struct keyring_entry *old;
	struct keyring_entry *en;
	const char *name;
	int r;

	if ((r = check_admin(mon, o)) < 0 || (r = arg_entity(a, &name, o)) < 0)
		return r;
	en = calloc(1, sizeof(*en));
	if (!en)
		return cmd_fail(o, -ENOMEM, "out of memory");
	if ((r = arg_caps(a, en, o)) < 0)
		goto out_free;
	old = keyring_find(mon_auth_entities(mon), name);
	if (old && !or_get) {
		r = cmd_fail(o, -EEXIST, "'%s' exists already; see it with: atoll auth get %s",
			     name, name);
		goto out_free;
	}
	if (old) {
		/* the caller asked for these caps: another set is a mistake */
		bool same = en->ncaps == 0 || en->ncaps == old->ncaps;

		for (uint32_t i = 0; same && i < en->ncaps; i++) {
			bool found = false;

			for (uint32_t k = 0; k < old->ncaps; k++)
				found |= !strcmp(en->caps[i].service, old->caps[k].service) &&
					 !strcmp(en->caps[i].caps, old->caps[k].caps);
			same = found;
		}
		if (!same) {
			r = cmd_fail(o, -EINVAL, "'%s' exists with other caps; change them with: "
				     "atoll auth caps %s ...", name, name);
			goto out_free;
		}
		if ((r = secure_only(o, name)) < 0)
			goto out_free;
		show(old, true, o, NULL);
		cmd_say(o, "'%s' exists already", name);
		r = 0;
		goto out_free;
	}
	snprintf(en->name, sizeof(en->name), "%s", name);
	r = auth_random(en->key, AUTH_KEY_LEN);
	if (r < 0) {
		cmd_fail(o, r, "cannot draw a key: %s", strerror(-r));
		goto out_free;
	}
	r = put(mon, en, false, o);
	if (r == 0) {
		show(en, true, o, NULL);
		cmd_say(o, "added '%s'", name);
	}
out_free:
	auth_wipe(en, sizeof(*en));
	free(en);
	return r;
}

int cmd_auth_add(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return create(mon, a, o, false);
}

int cmd_auth_get_or_create(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return create(mon, a, o, true);
}

/* The entity named by "entity", or NULL with o failed. */
static const struct keyring_entry *existing(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct keyring_entry *en;
	const char *name;

	if (check_admin(mon, o) < 0 || arg_entity(a, &name, o) < 0)
		return NULL;
	en = keyring_find(mon_auth_entities(mon), name);
	if (!en)
		cmd_fail(o, -ENOENT, "no entity '%s'; see: atoll auth ls", name);
	return en;
}

int cmd_auth_get(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct keyring_entry *en = existing(mon, a, o);

	if (!en)
		return o->rc;
	if (secure_only(o, en->name) < 0)
		return o->rc;
	show(en, true, o, NULL);
	return 0;
}

int cmd_auth_ls(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct keyring *kr;
	cJSON *arr = NULL;
	int r;

	(void)a;
	if ((r = check_admin(mon, o)) < 0)
		return r;
	kr = mon_auth_entities(mon);
	if (o->json)
		arr = cJSON_AddArrayToObject(o->j, "entities");
	for (uint32_t i = 0; i < kr->n; i++)
		show(&kr->e[i], false, o, arr);
	return 0;
}

int cmd_auth_rm(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct keyring_entry *en = existing(mon, a, o);
	struct mon_auth_entry e;
	int64_t res = 0;
	int r;

	if (!en)
		return o->rc;
	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_RM;
	e.client = mon->cur_reqid.client;
	e.seq = mon->cur_reqid.seq;
	snprintf(e.name, sizeof(e.name), "%s", en->name);
	r = mon_auth_propose(mon, &e, &res);
	if (r == 0 && res < 0)
		r = (int)res;
	if (r < 0)
		return cmd_fail(o, r, "the monitor could not record the change (%s); retry",
				strerror(-r));
	cmd_say(o, "removed '%s'", e.name);
	mon_auth_entry_clear(&e);
	return 0;
}

/* caps (new caps, the same key) and rotate (a new key, the same caps) */
static int change(struct mon *mon, cJSON *a, struct cmd_out *o, bool rotate)
{
	const struct keyring_entry *en = existing(mon, a, o);
	struct keyring_entry *nw;
	int r;

	if (!en)
		return o->rc;
	nw = malloc(sizeof(*nw));
	if (!nw)
		return cmd_fail(o, -ENOMEM, "out of memory");
	*nw = *en;
	r = rotate ? auth_random(nw->key, AUTH_KEY_LEN) : arg_caps(a, nw, o);
	if (r < 0) {
		if (rotate)
			cmd_fail(o, r, "cannot draw a key: %s", strerror(-r));
		goto out_free;
	}
	r = put(mon, nw, rotate, o);
	if (r == 0) {
		if (rotate)
			show(nw, true, o, NULL);
		cmd_say(o, rotate ? "new key for '%s'" : "caps of '%s' set", nw->name);
	}
out_free:
	auth_wipe(nw, sizeof(*nw));
	free(nw);
	return r;
}

int cmd_auth_caps(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return change(mon, a, o, false);
}

int cmd_auth_rotate(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return change(mon, a, o, true);
}

/* import: every entity of a keyring text, keys and caps as given (the
 * path atoll-cluster takes for a key it made, and a host's keys made
 * elsewhere); mon. is skipped. */
int cmd_auth_import(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	struct mon_auth_entry e;
	const char *text;
	char err[512];
	int64_t res = 0;
	uint32_t n = 0;
	int r;

	if ((r = check_admin(mon, o)) < 0 || (r = cmd_arg_str(a, "keyring", true, &text, o)) < 0)
		return r;
	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_PUT;
	e.client = mon->cur_reqid.client;
	e.seq = mon->cur_reqid.seq;
	e.now = (uint64_t)time(NULL);
	r = keyring_parse(text, strlen(text), &e.ents, err, sizeof(err));
	if (r < 0) {
		cmd_fail(o, r, "%s", err);
		goto out_clear;
	}
	for (uint32_t i = 0; i < e.ents.n; i++) {
		n += strcmp(e.ents.e[i].name, "mon.") != 0;
		for (uint32_t k = 0; k < e.ents.e[i].ncaps; k++)
			if (!service_ok(e.ents.e[i].caps[k].service)) {
				r = cmd_fail(o, -EINVAL, "'%s': unknown service '%s': caps are "
					     "for mon, osd or mds", e.ents.e[i].name,
					     e.ents.e[i].caps[k].service);
				goto out_clear;
			}
	}
	if (!n) {
		r = cmd_fail(o, -EINVAL, "the keyring holds no entity to import (mon. is not "
			     "imported)");
		goto out_clear;
	}
	r = mon_auth_propose(mon, &e, &res);
	if (r == 0 && res < 0)
		r = (int)res;
	if (r < 0) {
		cmd_fail(o, r, "the monitor could not record the change (%s); retry",
			 strerror(-r));
		goto out_clear;
	}
	cmd_say(o, "imported %u %s", n, n == 1 ? "entity" : "entities");
out_clear:
	mon_auth_entry_clear(&e);
	return r;
}
