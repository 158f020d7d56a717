/*
 * cmd_osd.c - the osd commands: tree, ls, dump, out, in, reweight,
 * set/unset (flags), rm.
 *
 * Changes go through cmd_map_change() as one incremental; an OSD's
 * record is copied from the map and edited, so fields a command does not
 * touch are kept as they are.  rm refuses an OSD that is up or in.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "mon.h"

static double wt(uint32_t w)
{
	return (double)w / OSD_WEIGHT_ONE;
}

static const struct osdmap_osd *osd_get(struct mon *mon, int32_t id)
{
	const struct osdmap_osd *o = osdmap_osd(mon->map, id);

	return o && (o->state & OSD_ST_EXISTS) ? o : NULL;
}

static int host_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int cmd_osd_tree(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap *map = mon->map;
	const char **hosts = calloc(map->max_osd + 1, sizeof(*hosts));
	uint32_t nh = 0;
	cJSON *jh = NULL;

	if (!hosts)
		return cmd_fail(o, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < map->max_osd; i++) {
		const struct osdmap_osd *x = &map->osds[i];
		bool dup = false;

		if (!(x->state & OSD_ST_EXISTS))
			continue;
		for (uint32_t k = 0; k < nh && !dup; k++)
			dup = strcmp(hosts[k], x->host) == 0;
		if (!dup)
			hosts[nh++] = x->host;
	}
	qsort(hosts, nh, sizeof(*hosts), host_cmp);
	if (o->json)
		jh = cJSON_AddArrayToObject(o->j, "hosts");
	else
		fprintf(o->txt, "%-6s %-20s %8s %-6s %8s\n", "ID", "HOST", "WEIGHT",
			"STATUS", "REWEIGHT");
	for (uint32_t k = 0; k < nh; k++) {
		double hw = 0;
		cJSON *h = NULL, *ho = NULL;

		for (uint32_t i = 0; i < map->max_osd; i++)
			if ((map->osds[i].state & OSD_ST_EXISTS) &&
			    !strcmp(map->osds[i].host, hosts[k]))
				hw += wt(map->osds[i].weight);
		if (o->json) {
			h = cJSON_CreateObject();
			cJSON_AddStringToObject(h, "name", hosts[k]);
			cJSON_AddNumberToObject(h, "weight", hw);
			ho = cJSON_AddArrayToObject(h, "osds");
			cJSON_AddItemToArray(jh, h);
		} else {
			fprintf(o->txt, "%-6s %-20s %8.4f\n", "", hosts[k][0] ? hosts[k] :
				"(not booted)", hw);
		}
		for (uint32_t i = 0; i < map->max_osd; i++) {
			const struct osdmap_osd *x = &map->osds[i];
			bool up = x->state & OSD_ST_UP;

			if (!(x->state & OSD_ST_EXISTS) || strcmp(x->host, hosts[k]))
				continue;
			if (o->json) {
				cJSON *j = cJSON_CreateObject();

				cJSON_AddNumberToObject(j, "id", i);
				cJSON_AddNumberToObject(j, "weight", wt(x->weight));
				cJSON_AddNumberToObject(j, "reweight", wt(x->reweight));
				cJSON_AddStringToObject(j, "status", (x->state & OSD_ST_DESTROYED) ?
							"destroyed" : up ? "up" : "down");
				cJSON_AddBoolToObject(j, "in", x->reweight > 0);
				cJSON_AddStringToObject(j, "addr", x->addr);
				cJSON_AddItemToArray(ho, j);
			} else {
				char name[16];

				snprintf(name, sizeof(name), "osd.%u", i);
				fprintf(o->txt, "%-6u   %-18s %8.4f %-6s %8.4f%s\n", i, name,
					wt(x->weight), (x->state & OSD_ST_DESTROYED) ? "destroyed" :
					up ? "up" : "down", wt(x->reweight),
					(x->state & OSD_ST_DRAIN) ? " draining" : "");
			}
		}
	}
	free(hosts);
	return 0;
}

int cmd_osd_ls(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	cJSON *arr = NULL;

	if (o->json) {
		cJSON_Delete(o->j);
		o->j = arr = cJSON_CreateArray();
	}
	for (uint32_t i = 0; i < mon->map->max_osd; i++) {
		if (!(mon->map->osds[i].state & OSD_ST_EXISTS))
			continue;
		if (arr)
			cJSON_AddItemToArray(arr, cJSON_CreateNumber(i));
		else
			fprintf(o->txt, "%u\n", i);
	}
	return 0;
}

int cmd_osd_dump(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap *map = mon->map;
	char fsid[37], uuid[37];

	mon_uuid_format(map->fsid, fsid);
	if (o->json) {
		cJSON *x;

		cJSON_AddStringToObject(o->j, "fsid", fsid);
		cJSON_AddNumberToObject(o->j, "epoch", (double)map->epoch);
		cJSON_AddNumberToObject(o->j, "created_ms", (double)map->created_ms);
		cJSON_AddNumberToObject(o->j, "modified_ms", (double)map->modified_ms);
		x = cJSON_AddArrayToObject(o->j, "flags");
		if (map->flags & OSDMAP_F_NOOUT)
			cJSON_AddItemToArray(x, cJSON_CreateString("noout"));
		cJSON_AddNumberToObject(o->j, "nearfull_ratio", map->nearfull_ratio / 10000.0);
		cJSON_AddNumberToObject(o->j, "backfillfull_ratio",
					map->backfillfull_ratio / 10000.0);
		cJSON_AddNumberToObject(o->j, "full_ratio", map->full_ratio / 10000.0);
		x = cJSON_AddArrayToObject(o->j, "osds");
		for (uint32_t i = 0; i < map->max_osd; i++) {
			const struct osdmap_osd *d = &map->osds[i];
			cJSON *j, *s;

			if (!(d->state & OSD_ST_EXISTS))
				continue;
			j = cJSON_CreateObject();
			mon_uuid_format(d->uuid, uuid);
			cJSON_AddNumberToObject(j, "id", i);
			cJSON_AddStringToObject(j, "uuid", uuid);
			cJSON_AddBoolToObject(j, "up", !!(d->state & OSD_ST_UP));
			cJSON_AddBoolToObject(j, "in", d->reweight > 0);
			cJSON_AddStringToObject(j, "host", d->host);
			cJSON_AddStringToObject(j, "addr", d->addr);
			cJSON_AddNumberToObject(j, "weight", wt(d->weight));
			cJSON_AddNumberToObject(j, "reweight", wt(d->reweight));
			cJSON_AddNumberToObject(j, "up_from", (double)d->up_from);
			cJSON_AddNumberToObject(j, "down_at", (double)d->down_at);
			s = cJSON_AddArrayToObject(j, "state");
			cJSON_AddItemToArray(s, cJSON_CreateString("exists"));
			if (d->state & OSD_ST_UP)
				cJSON_AddItemToArray(s, cJSON_CreateString("up"));
			if (d->state & OSD_ST_NEARFULL)
				cJSON_AddItemToArray(s, cJSON_CreateString("nearfull"));
			if (d->state & OSD_ST_BACKFILLFULL)
				cJSON_AddItemToArray(s, cJSON_CreateString("backfillfull"));
			if (d->state & OSD_ST_FULL)
				cJSON_AddItemToArray(s, cJSON_CreateString("full"));
			if (d->state & OSD_ST_DRAIN)
				cJSON_AddItemToArray(s, cJSON_CreateString("draining"));
			if (d->state & OSD_ST_DESTROYED)
				cJSON_AddItemToArray(s, cJSON_CreateString("destroyed"));
			cJSON_AddItemToArray(x, j);
		}
		x = cJSON_AddArrayToObject(o->j, "pools");
		for (uint32_t i = 0; i < map->npools; i++)
			cJSON_AddItemToArray(x, cmd_pool_json(&map->pools[i]));
		return 0;
	}
	fprintf(o->txt, "epoch %llu\nfsid %s\nflags %s\n", (unsigned long long)map->epoch,
		fsid, map->flags & OSDMAP_F_NOOUT ? "noout" : "");
	fprintf(o->txt, "full_ratio %.2f\nbackfillfull_ratio %.2f\nnearfull_ratio %.2f\n",
		map->full_ratio / 10000.0, map->backfillfull_ratio / 10000.0,
		map->nearfull_ratio / 10000.0);
	for (uint32_t i = 0; i < map->npools; i++)
		cmd_pool_line(o->txt, &map->pools[i]);
	for (uint32_t i = 0; i < map->max_osd; i++) {
		const struct osdmap_osd *d = &map->osds[i];

		if (!(d->state & OSD_ST_EXISTS))
			continue;
		mon_uuid_format(d->uuid, uuid);
		fprintf(o->txt, "osd.%u %s %s weight %.4f reweight %.4f up_from %llu "
			"down_at %llu host '%s' addr %s uuid %s\n", i,
			d->state & OSD_ST_UP ? "up" : "down", d->reweight ? "in" : "out",
			wt(d->weight), wt(d->reweight), (unsigned long long)d->up_from,
			(unsigned long long)d->down_at, d->host, d->addr[0] ? d->addr : "-",
			uuid);
	}
	return 0;
}

/* A map change that sets one OSD's record to rec. */
static int change_osd(struct mon *mon, struct cmd_out *o, const struct osdmap_osd *rec)
{
	struct osdmap_inc inc;
	int r;

	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_osd(&inc, rec);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return cmd_fail(o, r, "out of memory");
	}
	return cmd_map_change(mon, &inc, o);
}

enum reweight_how { RW_OUT, RW_IN, RW_DRAIN };

/* out: reweight 0; in: reweight 1, no longer draining; drain: out, and
 * health follows its PGs until none is left on it. */
static int set_reweight(struct mon *mon, cJSON *a, struct cmd_out *o, enum reweight_how how)
{
	static const char *const done[] = { "out", "in", "out to drain" };
	bool in = how == RW_IN;
	int32_t *ids = malloc(OSDMAP_OSD_MAX * sizeof(*ids));
	struct osdmap_inc inc;
	uint32_t n;
	int r;

	if (!ids)
		return cmd_fail(o, -ENOMEM, "out of memory");
	r = cmd_arg_ids(a, ids, &n, o);
	for (uint32_t i = 0; r == 0 && i < n; i++)
		if (!osd_get(mon, ids[i]))
			r = cmd_fail(o, -ENOENT, "osd.%d does not exist; list OSDs with: "
				     "atoll osd ls", ids[i]);
	if (r < 0)
		goto out_free;
	osdmap_inc_init(&inc, 0);
	for (uint32_t i = 0; i < n; i++) {
		struct osdmap_osd x = *osd_get(mon, ids[i]);
		uint32_t want = in ? OSD_WEIGHT_ONE : 0, state = x.state;

		mon->osds[ids[i]].auto_out = false;
		if (how == RW_IN)
			state &= ~OSD_ST_DRAIN;
		else if (how == RW_DRAIN)
			state |= OSD_ST_DRAIN;
		if (((in && x.reweight > 0) || (!in && x.reweight == 0)) && state == x.state)
			continue;
		if (!in || x.reweight == 0)
			x.reweight = want;
		x.state = state;
		r = osdmap_inc_set_osd(&inc, &x);
		if (r < 0) {
			osdmap_inc_clear(&inc);
			cmd_fail(o, r, "out of memory");
			goto out_free;
		}
	}
	if (!inc.nosds) {
		osdmap_inc_clear(&inc);
		cmd_say(o, "%s already %s", n == 1 ? "the OSD is" : "the OSDs are", done[how]);
		cmd_no_change(mon, o);
		goto out_free;
	}
	cmd_say(o, "marked %u OSD%s %s", inc.nosds, inc.nosds == 1 ? "" : "s", done[how]);
	if (how == RW_DRAIN)
		cmd_say(o, "its PGs move to other OSDs now; `atoll health` says when it "
			"holds none, then stop it and run: atoll osd rm ID");
	r = cmd_map_change(mon, &inc, o);
out_free:
	free(ids);
	return r;
}

int cmd_osd_out(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return set_reweight(mon, a, o, RW_OUT);
}

int cmd_osd_drain(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return set_reweight(mon, a, o, RW_DRAIN);
}

int cmd_osd_in(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return set_reweight(mon, a, o, RW_IN);
}

int cmd_osd_reweight(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	cJSON *w = cJSON_GetObjectItemCaseSensitive(a, "weight");
	struct osdmap_osd x;
	int64_t id;
	bool present;
	double v;
	int r;

	r = cmd_arg_int(a, "id", 0, OSDMAP_OSD_MAX - 1, &id, &present, o);
	if (r < 0)
		return r;
	if (!present)
		return cmd_fail(o, -EINVAL, "argument 'id' is missing");
	if (cJSON_IsNumber(w))
		v = w->valuedouble;
	else if (cJSON_IsString(w))
		v = strtod(w->valuestring, NULL);
	else
		return cmd_fail(o, -EINVAL, "argument 'weight' is missing (a number from 0 to 1)");
	if (!(v >= 0 && v <= 1))
		return cmd_fail(o, -EINVAL, "weight must be from 0 to 1 (0 = out, 1 = fully in)");
	if (!osd_get(mon, (int32_t)id))
		return cmd_fail(o, -ENOENT, "osd.%lld does not exist; list OSDs with: atoll osd ls",
				(long long)id);
	x = *osd_get(mon, (int32_t)id);
	x.reweight = (uint32_t)lround(v * OSD_WEIGHT_ONE);
	cmd_say(o, "reweighted osd.%lld to %.4f", (long long)id, v);
	return change_osd(mon, o, &x);
}

static int set_flag(struct mon *mon, cJSON *a, struct cmd_out *o, bool set)
{
	struct osdmap_inc inc;
	const char *flag;
	uint32_t f = mon->map->flags;
	int r = cmd_arg_str(a, "flag", true, &flag, o);

	if (r < 0)
		return r;
	if (strcmp(flag, "noout") != 0)
		return cmd_fail(o, -EINVAL, "unknown flag '%s'; the flags are: noout", flag);
	f = set ? f | OSDMAP_F_NOOUT : f & ~OSDMAP_F_NOOUT;
	if (f == mon->map->flags) {
		cmd_say(o, "noout is already %s", set ? "set" : "unset");
		cmd_no_change(mon, o);
		return 0;
	}
	osdmap_inc_init(&inc, 0);
	inc.has_flags = true;
	inc.flags = f;
	cmd_say(o, "noout is %s", set ? "set" : "unset");
	return cmd_map_change(mon, &inc, o);
}

int cmd_osd_set(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return set_flag(mon, a, o, true);
}

int cmd_osd_unset(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return set_flag(mon, a, o, false);
}

/* The one OSD a command names ("id": N, or "ids": [N]); it must exist
 * and be down. */
static int arg_down_osd(struct mon *mon, cJSON *a, struct cmd_out *o, int64_t *id,
			const struct osdmap_osd **x)
{
	bool present;
	int r;

	r = cmd_arg_int(a, "id", 0, OSDMAP_OSD_MAX - 1, id, &present, o);
	if (r < 0)
		return r;
	if (!present) {
		uint32_t n;
		int32_t ids[1];
		cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "ids");

		if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 1)
			return cmd_fail(o, -EINVAL, "argument 'id' is missing");
		r = cmd_arg_ids(a, ids, &n, o);
		if (r < 0)
			return r;
		*id = ids[0];
	}
	*x = osd_get(mon, (int32_t)*id);
	if (!*x)
		return cmd_fail(o, -ENOENT, "osd.%lld does not exist; list OSDs with: atoll osd ls",
				(long long)*id);
	if ((*x)->state & OSD_ST_UP)
		return cmd_fail(o, -EBUSY, "osd.%lld is still up; stop it first (SIGTERM, or "
				"atoll-cluster osd stop %lld)", (long long)*id, (long long)*id);
	return 0;
}


int cmd_osd_rm(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_osd *x = NULL;
	struct osdmap_osd rec;
	int64_t id;
	int r;

	r = arg_down_osd(mon, a, o, &id, &x);
	if (r < 0)
		return r;
	if (x->reweight > 0)
		return cmd_fail(o, -EBUSY, "osd.%lld is still in; mark it out first with: "
				"atoll osd out %lld, and wait for its data to move",
				(long long)id, (long long)id);
	memset(&rec, 0, sizeof(rec));
	rec.id = (uint32_t)id;
	cmd_say(o, "removed osd.%lld", (long long)id);
	r = change_osd(mon, o, &rec);
	if (r == 0) {
		struct mon_osd_info *info = &mon->osds[id];

		free(info->slow);
		memset(info, 0, sizeof(*info));
	}
	return r;
}

/* The disk of a down OSD is gone for good: the id keeps its place (host,
 * weights) for a new disk made with atoll-osd --mkfs --id N, and the old
 * disk can no longer join (its uuid is forgotten). */
int cmd_osd_destroy(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_osd *x = NULL;
	struct osdmap_osd rec;
	int64_t id;
	int r;

	r = arg_down_osd(mon, a, o, &id, &x);
	if (r < 0)
		return r;
	if (x->state & OSD_ST_DESTROYED) {
		cmd_say(o, "osd.%lld is already destroyed", (long long)id);
		cmd_no_change(mon, o);
		return 0;
	}
	rec = *x;
	rec.state |= OSD_ST_DESTROYED;
	memset(rec.uuid, 0, sizeof(rec.uuid));
	cmd_say(o, "destroyed osd.%lld: its old disk can no longer join; make the new "
		"disk with: atoll-osd --mkfs --id %lld --data DIR, and start it",
		(long long)id, (long long)id);
	return change_osd(mon, o, &rec);
}
