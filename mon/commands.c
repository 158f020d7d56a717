/*
 * commands.c - the monitor's admin commands (MT_MON_COMMAND).
 *
 * A command is a JSON object {"prefix": "...", args..., "format": ...}
 * (doc/cli.md lists every one).  Each handler reads its arguments with
 * the arg_* helpers (a missing or mistyped one is -EINVAL with a
 * sentence naming it), changes the map only through mon_map_change(),
 * and renders its result itself, as JSON or as plain text: the CLI only
 * prints what comes back, so the two renderings live side by side here.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "mon.h"
#include "msg.h"
#include "placement.h"

struct cmd_out {
	int rc;
	char status[512];
	bool json;
	cJSON *j;		/* JSON result (format json) */
	FILE *txt;		/* plain text result */
	char *txtbuf;
	size_t txtlen;
	void *bin;		/* binary result (mon backup), malloc'd */
	size_t binlen;
};

static int fail(struct cmd_out *o, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct cmd_out *o, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->status, sizeof(o->status), fmt, ap);
	va_end(ap);
	o->rc = rc;
	return rc;
}

static void say(struct cmd_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(struct cmd_out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->status, sizeof(o->status), fmt, ap);
	va_end(ap);
}

/* ---- arguments ------------------------------------------------------ */

static int arg_str(cJSON *a, const char *name, bool required, const char **out,
		   struct cmd_out *o)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(a, name);

	*out = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return fail(o, -EINVAL, "argument '%s' is missing", name);
		return 0;
	}
	if (!cJSON_IsString(v))
		return fail(o, -EINVAL, "argument '%s' must be a string", name);
	*out = v->valuestring;
	return 0;
}

/* An integer argument; *present tells whether it was given. */
static int arg_int(cJSON *a, const char *name, int64_t min, int64_t max, int64_t *out,
		   bool *present, struct cmd_out *o)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(a, name);
	double d;
	char *end;

	*present = false;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsNumber(v)) {
		d = v->valuedouble;
	} else if (cJSON_IsString(v)) {
		errno = 0;
		d = strtod(v->valuestring, &end);
		if (errno || end == v->valuestring || *end)
			return fail(o, -EINVAL, "argument '%s': '%s' is not a number",
				    name, v->valuestring);
	} else {
		return fail(o, -EINVAL, "argument '%s' must be a number", name);
	}
	if (d != floor(d) || d < (double)min || d > (double)max)
		return fail(o, -EINVAL, "argument '%s' must be a whole number from "
			    "%lld to %lld", name, (long long)min, (long long)max);
	*out = (int64_t)d;
	*present = true;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on") ||
	    !strcmp(s, "1"))
		*out = true;
	else if (!strcasecmp(s, "false") || !strcasecmp(s, "no") ||
		 !strcasecmp(s, "off") || !strcmp(s, "0"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static int arg_bool(cJSON *a, const char *name, bool def, bool *out, struct cmd_out *o)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(a, name);

	*out = def;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsBool(v)) {
		*out = cJSON_IsTrue(v);
		return 0;
	}
	if (cJSON_IsString(v) && parse_bool(v->valuestring, out) == 0)
		return 0;
	return fail(o, -EINVAL, "argument '%s' must be true or false", name);
}

/* "ids": [1, 2] or 1 or "1". */
static int arg_ids(cJSON *a, int32_t *ids, uint32_t *n, struct cmd_out *o)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "ids"), *it;

	*n = 0;
	if (!v)
		v = cJSON_GetObjectItemCaseSensitive(a, "id");
	if (!v)
		return fail(o, -EINVAL, "argument 'ids' is missing (a list of OSD ids)");
	if (!cJSON_IsArray(v)) {
		double x = cJSON_IsNumber(v) ? v->valuedouble :
			   cJSON_IsString(v) ? strtod(v->valuestring, NULL) : -1;

		if (x != floor(x) || x < 0 || x >= OSDMAP_OSD_MAX)
			return fail(o, -EINVAL, "argument 'ids' must hold OSD ids (whole "
				    "numbers from 0 to %d)", OSDMAP_OSD_MAX - 1);
		ids[(*n)++] = (int32_t)x;
		return 0;
	}
	cJSON_ArrayForEach(it, v) {
		if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) ||
		    it->valuedouble < 0 || it->valuedouble >= OSDMAP_OSD_MAX)
			return fail(o, -EINVAL, "argument 'ids' must hold OSD ids (whole "
				    "numbers from 0 to %d)", OSDMAP_OSD_MAX - 1);
		if (*n == OSDMAP_OSD_MAX)
			return fail(o, -EINVAL, "argument 'ids' holds too many ids");
		ids[(*n)++] = (int32_t)it->valuedouble;
	}
	if (!*n)
		return fail(o, -EINVAL, "argument 'ids' is empty; name at least one OSD");
	return 0;
}

/* ---- small renderers ------------------------------------------------ */

static void human_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, len, "%.1f %s", v, u[i]);
}

static double wt(uint32_t w)
{
	return (double)w / OSD_WEIGHT_ONE;
}

static const char *fd_name(uint8_t fd)
{
	return fd == POOL_FD_OSD ? "osd" : "host";
}

static const struct osdmap_osd *osd_get(struct mon *mon, int32_t id)
{
	const struct osdmap_osd *o = osdmap_osd(mon->map, id);

	return o && (o->state & OSD_ST_EXISTS) ? o : NULL;
}

static int map_change(struct mon *mon, struct osdmap_inc *inc, struct cmd_out *o)
{
	uint64_t epoch = 0;
	int r = mon_map_change(mon, inc, &epoch);

	if (r < 0)
		return fail(o, r == -EIO ? -EIO : r, "the monitor could not record the "
			    "change (%s); nothing changed, retry", strerror(-r));
	if (o->json)
		cJSON_AddNumberToObject(o->j, "epoch", (double)epoch);
	else
		fprintf(o->txt, "epoch %llu\n", (unsigned long long)epoch);
	return 0;
}

static void no_change(struct mon *mon, struct cmd_out *o)
{
	if (o->json)
		cJSON_AddNumberToObject(o->j, "epoch", (double)mon->map->epoch);
	else
		fprintf(o->txt, "epoch %llu\n", (unsigned long long)mon->map->epoch);
}

/* ---- status, health ------------------------------------------------- */

struct usage {
	uint64_t total, used, avail, objects, bytes;
};

static void cluster_usage(struct mon *mon, struct usage *u)
{
	memset(u, 0, sizeof(*u));
	for (uint32_t i = 0; i < mon->map->max_osd && i < OSDMAP_OSD_MAX; i++) {
		if (!(mon->map->osds[i].state & OSD_ST_EXISTS))
			continue;
		u->total += mon->osds[i].total;
		u->used += mon->osds[i].used;
		u->avail += mon->osds[i].avail;
	}
	for (uint32_t i = 0; i < mon->map->npools; i++) {
		struct mon_pg_pool *pp = mon_pg_pool(mon, mon->map->pools[i].id);

		for (uint32_t pg = 0; pp && pg < pp->pg_num; pg++) {
			if (!pp->pgs[pg].reported)
				continue;
			u->objects += pp->pgs[pg].st.objects;
			u->bytes += pp->pgs[pg].st.bytes;
		}
	}
}

static int cmd_status(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap *map = mon->map;
	uint32_t total = 0, up = 0, in = 0, npg = 0;
	struct { char name[160]; uint32_t n; } st[32];
	uint32_t nst = 0;
	char fsid[37], b1[32], b2[32], b3[32];
	struct usage u;
	const char *health = mon_health_status(mon);

	for (uint32_t i = 0; i < map->max_osd; i++) {
		if (!(map->osds[i].state & OSD_ST_EXISTS))
			continue;
		total++;
		up += !!(map->osds[i].state & OSD_ST_UP);
		in += map->osds[i].reweight > 0;
	}
	for (uint32_t i = 0; i < map->npools; i++) {
		struct mon_pg_pool *pp = mon_pg_pool(mon, map->pools[i].id);

		for (uint32_t pg = 0; pp && pg < pp->pg_num; pg++) {
			bool unknown;
			uint32_t s = mon_pg_state(mon, &pp->pgs[pg], &unknown);
			char name[160];
			uint32_t k;

			npg++;
			if (unknown)
				snprintf(name, sizeof(name), "unknown");
			else
				pg_state_str(s, name, sizeof(name));
			for (k = 0; k < nst && strcmp(st[k].name, name); k++)
				;
			if (k == nst && nst < 32) {
				snprintf(st[k].name, sizeof(st[k].name), "%s", name);
				st[k].n = 0;
				nst++;
			}
			if (k < nst)
				st[k].n++;
		}
	}
	cluster_usage(mon, &u);
	mon_uuid_format(map->fsid, fsid);
	if (o->json) {
		cJSON *x, *s;

		cJSON_AddStringToObject(o->j, "fsid", fsid);
		cJSON_AddNumberToObject(o->j, "epoch", (double)map->epoch);
		cJSON_AddStringToObject(o->j, "health", health);
		x = cJSON_AddArrayToObject(o->j, "flags");
		if (map->flags & OSDMAP_F_NOOUT)
			cJSON_AddItemToArray(x, cJSON_CreateString("noout"));
		x = cJSON_AddObjectToObject(o->j, "osds");
		cJSON_AddNumberToObject(x, "total", total);
		cJSON_AddNumberToObject(x, "up", up);
		cJSON_AddNumberToObject(x, "in", in);
		cJSON_AddNumberToObject(o->j, "pools", map->npools);
		x = cJSON_AddObjectToObject(o->j, "pgs");
		cJSON_AddNumberToObject(x, "total", npg);
		s = cJSON_AddObjectToObject(x, "states");
		for (uint32_t k = 0; k < nst; k++)
			cJSON_AddNumberToObject(s, st[k].name, st[k].n);
		x = cJSON_AddObjectToObject(o->j, "usage");
		cJSON_AddNumberToObject(x, "total", (double)u.total);
		cJSON_AddNumberToObject(x, "used", (double)u.used);
		cJSON_AddNumberToObject(x, "avail", (double)u.avail);
		cJSON_AddNumberToObject(x, "objects", (double)u.objects);
		return 0;
	}
	fprintf(o->txt, "cluster:\n  id:     %s\n  health: %s\n", fsid, health);
	fprintf(o->txt, "  epoch:  %llu%s\n", (unsigned long long)map->epoch,
		map->flags & OSDMAP_F_NOOUT ? " (flags: noout)" : "");
	fprintf(o->txt, "osd:     %u osds: %u up, %u in\n", total, up, in);
	fprintf(o->txt, "pools:   %u pools, %u pgs\n", map->npools, npg);
	fprintf(o->txt, "pgs:    ");
	for (uint32_t k = 0; k < nst; k++)
		fprintf(o->txt, "%s %u %s", k ? "," : "", st[k].n, st[k].name);
	fprintf(o->txt, "%s\n", nst ? "" : " none");
	human_bytes(u.used, b1, sizeof(b1));
	human_bytes(u.avail, b2, sizeof(b2));
	human_bytes(u.total, b3, sizeof(b3));
	fprintf(o->txt, "usage:   %llu objects, %s used, %s / %s avail\n",
		(unsigned long long)u.objects, b1, b2, b3);
	return 0;
}

static int cmd_health(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	bool detail;
	cJSON *h, *c;
	int r = arg_bool(a, "detail", false, &detail, o);

	if (r < 0)
		return r;
	h = mon_health(mon, detail);
	if (!h)
		return fail(o, -ENOMEM, "out of memory");
	if (o->json) {
		cJSON_Delete(o->j);
		o->j = h;
		return 0;
	}
	fprintf(o->txt, "%s\n", cJSON_GetStringValue(cJSON_GetObjectItem(h, "status")));
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(h, "checks")) {
		cJSON *d;

		fprintf(o->txt, "%s: %s; fix: %s\n",
			cJSON_GetStringValue(cJSON_GetObjectItem(c, "code")),
			cJSON_GetStringValue(cJSON_GetObjectItem(c, "summary")),
			cJSON_GetStringValue(cJSON_GetObjectItem(c, "fix")));
		cJSON_ArrayForEach(d, cJSON_GetObjectItem(c, "detail"))
			fprintf(o->txt, "    %s\n", cJSON_GetStringValue(d));
	}
	cJSON_Delete(h);
	return 0;
}

/* ---- osd ------------------------------------------------------------ */

static int host_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmd_osd_tree(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap *map = mon->map;
	const char **hosts = calloc(map->max_osd + 1, sizeof(*hosts));
	uint32_t nh = 0;
	cJSON *jh = NULL;

	if (!hosts)
		return fail(o, -ENOMEM, "out of memory");
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
				cJSON_AddStringToObject(j, "status", up ? "up" : "down");
				cJSON_AddBoolToObject(j, "in", x->reweight > 0);
				cJSON_AddStringToObject(j, "addr", x->addr);
				cJSON_AddItemToArray(ho, j);
			} else {
				char name[16];

				snprintf(name, sizeof(name), "osd.%u", i);
				fprintf(o->txt, "%-6u   %-18s %8.4f %-6s %8.4f\n", i, name,
					wt(x->weight), up ? "up" : "down", wt(x->reweight));
			}
		}
	}
	free(hosts);
	return 0;
}

static int cmd_osd_ls(struct mon *mon, cJSON *a, struct cmd_out *o)
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

static cJSON *pool_json(const struct osdmap_pool *p)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddNumberToObject(j, "id", p->id);
	cJSON_AddStringToObject(j, "name", p->name);
	cJSON_AddNumberToObject(j, "size", p->size);
	cJSON_AddNumberToObject(j, "min_size", p->min_size);
	cJSON_AddNumberToObject(j, "pg_num", p->pg_num);
	cJSON_AddStringToObject(j, "failure_domain", fd_name(p->failure_domain));
	cJSON_AddBoolToObject(j, "compress", !!(p->flags & POOL_F_COMPRESS));
	cJSON_AddNumberToObject(j, "created", (double)p->created);
	return j;
}

static void pool_line(FILE *f, const struct osdmap_pool *p)
{
	fprintf(f, "pool %u '%s' size %u min_size %u pg_num %u failure_domain %s%s "
		"created %llu\n", p->id, p->name, p->size, p->min_size, p->pg_num,
		fd_name(p->failure_domain), p->flags & POOL_F_COMPRESS ? " compress" : "",
		(unsigned long long)p->created);
}

static int cmd_osd_dump(struct mon *mon, cJSON *a, struct cmd_out *o)
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
			cJSON_AddItemToArray(x, j);
		}
		x = cJSON_AddArrayToObject(o->j, "pools");
		for (uint32_t i = 0; i < map->npools; i++)
			cJSON_AddItemToArray(x, pool_json(&map->pools[i]));
		return 0;
	}
	fprintf(o->txt, "epoch %llu\nfsid %s\nflags %s\n", (unsigned long long)map->epoch,
		fsid, map->flags & OSDMAP_F_NOOUT ? "noout" : "");
	fprintf(o->txt, "full_ratio %.2f\nbackfillfull_ratio %.2f\nnearfull_ratio %.2f\n",
		map->full_ratio / 10000.0, map->backfillfull_ratio / 10000.0,
		map->nearfull_ratio / 10000.0);
	for (uint32_t i = 0; i < map->npools; i++)
		pool_line(o->txt, &map->pools[i]);
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

static int set_reweight(struct mon *mon, cJSON *a, struct cmd_out *o, bool in)
{
	int32_t *ids = malloc(OSDMAP_OSD_MAX * sizeof(*ids));
	struct osdmap_inc inc;
	uint32_t n;
	int r;

	if (!ids)
		return fail(o, -ENOMEM, "out of memory");
	r = arg_ids(a, ids, &n, o);
	for (uint32_t i = 0; r == 0 && i < n; i++)
		if (!osd_get(mon, ids[i]))
			r = fail(o, -ENOENT, "osd.%d does not exist; list OSDs with: "
				 "atoll osd ls", ids[i]);
	if (r < 0)
		goto out_free;
	osdmap_inc_init(&inc, 0);
	for (uint32_t i = 0; i < n; i++) {
		struct osdmap_osd x = *osd_get(mon, ids[i]);
		uint32_t want = in ? OSD_WEIGHT_ONE : 0;

		mon->osds[ids[i]].auto_out = false;
		if ((in && x.reweight > 0) || (!in && x.reweight == 0))
			continue;
		x.reweight = want;
		r = osdmap_inc_set_osd(&inc, &x);
		if (r < 0) {
			osdmap_inc_clear(&inc);
			fail(o, r, "out of memory");
			goto out_free;
		}
	}
	if (!inc.nosds) {
		osdmap_inc_clear(&inc);
		say(o, "%s already %s", n == 1 ? "the OSD is" : "the OSDs are",
		    in ? "in" : "out");
		no_change(mon, o);
		goto out_free;
	}
	say(o, "marked %u OSD%s %s", inc.nosds, inc.nosds == 1 ? "" : "s", in ? "in" : "out");
	r = map_change(mon, &inc, o);
out_free:
	free(ids);
	return r;
}

static int cmd_osd_out(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return set_reweight(mon, a, o, false);
}

static int cmd_osd_in(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return set_reweight(mon, a, o, true);
}

static int cmd_osd_reweight(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	cJSON *w = cJSON_GetObjectItemCaseSensitive(a, "weight");
	struct osdmap_inc inc;
	struct osdmap_osd x;
	int64_t id;
	bool present;
	double v;
	int r;

	r = arg_int(a, "id", 0, OSDMAP_OSD_MAX - 1, &id, &present, o);
	if (r < 0)
		return r;
	if (!present)
		return fail(o, -EINVAL, "argument 'id' is missing");
	if (cJSON_IsNumber(w))
		v = w->valuedouble;
	else if (cJSON_IsString(w))
		v = strtod(w->valuestring, NULL);
	else
		return fail(o, -EINVAL, "argument 'weight' is missing (a number from 0 to 1)");
	if (!(v >= 0 && v <= 1))
		return fail(o, -EINVAL, "weight must be from 0 to 1 (0 = out, 1 = fully in)");
	if (!osd_get(mon, (int32_t)id))
		return fail(o, -ENOENT, "osd.%lld does not exist; list OSDs with: atoll osd ls",
			    (long long)id);
	x = *osd_get(mon, (int32_t)id);
	x.reweight = (uint32_t)lround(v * OSD_WEIGHT_ONE);
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_osd(&inc, &x);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return fail(o, r, "out of memory");
	}
	say(o, "reweighted osd.%lld to %.4f", (long long)id, v);
	return map_change(mon, &inc, o);
}

static int set_flag(struct mon *mon, cJSON *a, struct cmd_out *o, bool set)
{
	struct osdmap_inc inc;
	const char *flag;
	uint32_t f = mon->map->flags;
	int r = arg_str(a, "flag", true, &flag, o);

	if (r < 0)
		return r;
	if (strcmp(flag, "noout") != 0)
		return fail(o, -EINVAL, "unknown flag '%s'; the flags are: noout", flag);
	f = set ? f | OSDMAP_F_NOOUT : f & ~OSDMAP_F_NOOUT;
	if (f == mon->map->flags) {
		say(o, "noout is already %s", set ? "set" : "unset");
		no_change(mon, o);
		return 0;
	}
	osdmap_inc_init(&inc, 0);
	inc.has_flags = true;
	inc.flags = f;
	say(o, "noout is %s", set ? "set" : "unset");
	return map_change(mon, &inc, o);
}

static int cmd_osd_set(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return set_flag(mon, a, o, true);
}

static int cmd_osd_unset(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	return set_flag(mon, a, o, false);
}

static int cmd_osd_rm(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_osd *x;
	struct osdmap_osd rec;
	struct osdmap_inc inc;
	int64_t id;
	bool present;
	int r;

	r = arg_int(a, "id", 0, OSDMAP_OSD_MAX - 1, &id, &present, o);
	if (r < 0)
		return r;
	if (!present) {
		uint32_t n;
		int32_t ids[1];
		cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "ids");

		if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 1)
			return fail(o, -EINVAL, "argument 'id' is missing");
		r = arg_ids(a, ids, &n, o);
		if (r < 0)
			return r;
		id = ids[0];
	}
	x = osd_get(mon, (int32_t)id);
	if (!x)
		return fail(o, -ENOENT, "osd.%lld does not exist; list OSDs with: atoll osd ls",
			    (long long)id);
	if (x->state & OSD_ST_UP)
		return fail(o, -EBUSY, "osd.%lld is still up; stop it first (SIGTERM, or "
			    "atoll-cluster osd stop %lld)", (long long)id, (long long)id);
	if (x->reweight > 0)
		return fail(o, -EBUSY, "osd.%lld is still in; mark it out first with: "
			    "atoll osd out %lld, and wait for its data to move",
			    (long long)id, (long long)id);
	memset(&rec, 0, sizeof(rec));
	rec.id = (uint32_t)id;
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_osd(&inc, &rec);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return fail(o, r, "out of memory");
	}
	say(o, "removed osd.%lld", (long long)id);
	r = map_change(mon, &inc, o);
	if (r == 0) {
		struct mon_osd_info *info = &mon->osds[id];

		free(info->slow);
		memset(info, 0, sizeof(*info));
	}
	return r;
}

/* ---- pools ---------------------------------------------------------- */

static int pool_arg(struct mon *mon, cJSON *a, const struct osdmap_pool **p,
		    struct cmd_out *o)
{
	const char *name;
	int r = arg_str(a, "name", true, &name, o);

	if (r < 0)
		return r;
	*p = osdmap_pool_by_name(mon->map, name);
	if (!*p)
		return fail(o, -ENOENT, "pool '%s' does not exist; list pools with: "
			    "atoll pool ls", name);
	return 0;
}

static bool pool_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > OSDMAP_POOL_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

/* The default failure domain: host, unless every OSD that exists sits
 * on one host (*host gets it). */
static uint8_t default_fd(struct mon *mon, const char **host)
{
	const char *h = NULL;

	*host = NULL;
	for (uint32_t i = 0; i < mon->map->max_osd; i++) {
		const struct osdmap_osd *x = &mon->map->osds[i];

		if (!(x->state & OSD_ST_EXISTS) || !x->host[0])
			continue;
		if (h && strcmp(h, x->host))
			return POOL_FD_HOST;
		h = x->host;
	}
	*host = h;
	return h ? POOL_FD_OSD : POOL_FD_HOST;
}

static int parse_fd(const char *s, uint8_t *fd)
{
	if (!strcmp(s, "host"))
		*fd = POOL_FD_HOST;
	else if (!strcmp(s, "osd"))
		*fd = POOL_FD_OSD;
	else
		return -EINVAL;
	return 0;
}

static int cmd_pool_create(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	struct osdmap_pool p;
	struct osdmap_inc inc;
	const char *name, *fds, *onehost = NULL;
	int64_t size, min_size, pg_num;
	bool has_size, has_min, has_pg, compress;
	int r;

	if ((r = arg_str(a, "name", true, &name, o)) < 0 ||
	    (r = arg_int(a, "size", 1, OSDMAP_SIZE_MAX, &size, &has_size, o)) < 0 ||
	    (r = arg_int(a, "min_size", 1, OSDMAP_SIZE_MAX, &min_size, &has_min, o)) < 0 ||
	    (r = arg_int(a, "pg_num", 1, OSDMAP_PG_MAX, &pg_num, &has_pg, o)) < 0 ||
	    (r = arg_str(a, "failure_domain", false, &fds, o)) < 0 ||
	    (r = arg_bool(a, "compress", false, &compress, o)) < 0)
		return r;
	if (!pool_name_ok(name))
		return fail(o, -EINVAL, "pool name '%s' is not valid; use 1 to %d letters, "
			    "digits, '_', '.' or '-'", name, OSDMAP_POOL_NAME_MAX);
	if (osdmap_pool_by_name(mon->map, name))
		return fail(o, -EEXIST, "pool '%s' already exists", name);
	if (mon->map->npools >= OSDMAP_POOL_MAX)
		return fail(o, -ENOSPC, "the cluster has %d pools, the most it can hold; "
			    "remove one with: atoll pool rm NAME NAME --yes-i-really-mean-it",
			    OSDMAP_POOL_MAX);
	memset(&p, 0, sizeof(p));
	p.id = mon->map->pool_next_id;
	snprintf(p.name, sizeof(p.name), "%s", name);
	p.size = (uint8_t)(has_size ? size : mon->opts.pool_default_size);
	if (has_min)
		p.min_size = (uint8_t)min_size;
	else if (mon->opts.pool_default_min_size && !has_size)
		p.min_size = (uint8_t)mon->opts.pool_default_min_size;
	else
		p.min_size = p.size - p.size / 2;
	if (p.min_size > p.size)
		return fail(o, -EINVAL, "min_size %u is larger than size %u; min_size must "
			    "be from 1 to size", p.min_size, p.size);
	p.pg_num = (uint32_t)(has_pg ? pg_num : mon->opts.pool_default_pg_num);
	if (fds) {
		if (parse_fd(fds, &p.failure_domain) < 0)
			return fail(o, -EINVAL, "failure domain '%s' is not known; use host "
				    "or osd", fds);
	} else {
		p.failure_domain = default_fd(mon, &onehost);
	}
	p.flags = compress ? POOL_F_COMPRESS : 0;
	p.created = mon->map->epoch + 1;
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_pool(&inc, &p);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return fail(o, r, "out of memory");
	}
	if (onehost)
		say(o, "pool '%s' created with failure domain osd, because every OSD is "
		    "on host '%s'", name, onehost);
	else
		say(o, "pool '%s' created", name);
	if (o->json) {
		cJSON_AddNumberToObject(o->j, "pool", p.id);
		cJSON_AddStringToObject(o->j, "name", p.name);
		cJSON_AddStringToObject(o->j, "failure_domain", fd_name(p.failure_domain));
	}
	r = map_change(mon, &inc, o);
	if (r == 0)
		log_info("mon", "pool %u '%s' created (size %u min_size %u pg_num %u "
			 "failure domain %s)", p.id, p.name, p.size, p.min_size, p.pg_num,
			 fd_name(p.failure_domain));
	return r;
}

static int cmd_pool_ls(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	bool detail;
	int r = arg_bool(a, "detail", false, &detail, o);

	if (r < 0)
		return r;
	if (o->json) {
		cJSON_Delete(o->j);
		o->j = cJSON_CreateArray();
	}
	for (uint32_t i = 0; i < mon->map->npools; i++) {
		const struct osdmap_pool *p = &mon->map->pools[i];

		if (o->json)
			cJSON_AddItemToArray(o->j, pool_json(p));
		else if (detail)
			pool_line(o->txt, p);
		else
			fprintf(o->txt, "%s\n", p->name);
	}
	return 0;
}

static int cmd_pool_rm(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_pool *p;
	const char *confirm, *name;
	struct osdmap_inc inc;
	bool yes;
	int r;

	if ((r = arg_str(a, "name", true, &name, o)) < 0 ||
	    (r = arg_str(a, "confirm_name", false, &confirm, o)) < 0 ||
	    (r = arg_bool(a, "yes", false, &yes, o)) < 0)
		return r;
	if ((r = pool_arg(mon, a, &p, o)) < 0)
		return r;
	if (!confirm || strcmp(confirm, name) || !yes)
		return fail(o, -EPERM, "this destroys every object in pool '%s'; to do it "
			    "type: atoll pool rm %s %s --yes-i-really-mean-it",
			    name, name, name);
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_rm_pool(&inc, p->id);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return fail(o, r, "out of memory");
	}
	say(o, "pool '%s' removed", name);
	log_info("mon", "pool %u '%s' removed", p->id, name);
	return map_change(mon, &inc, o);
}

static const char *pool_vars[] = { "size", "min_size", "pg_num", "failure_domain",
				   "compress", NULL };

static void pool_var(const struct osdmap_pool *p, const char *var, struct cmd_out *o)
{
	if (!strcmp(var, "size") || !strcmp(var, "min_size") || !strcmp(var, "pg_num")) {
		uint32_t v = !strcmp(var, "size") ? p->size :
			     !strcmp(var, "min_size") ? p->min_size : p->pg_num;

		if (o->json)
			cJSON_AddNumberToObject(o->j, var, v);
		else
			fprintf(o->txt, "%s: %u\n", var, v);
	} else if (!strcmp(var, "failure_domain")) {
		if (o->json)
			cJSON_AddStringToObject(o->j, var, fd_name(p->failure_domain));
		else
			fprintf(o->txt, "%s: %s\n", var, fd_name(p->failure_domain));
	} else if (!strcmp(var, "compress")) {
		bool c = p->flags & POOL_F_COMPRESS;

		if (o->json)
			cJSON_AddBoolToObject(o->j, var, c);
		else
			fprintf(o->txt, "%s: %s\n", var, c ? "true" : "false");
	}
}

static bool known_var(const char *var)
{
	for (int i = 0; pool_vars[i]; i++)
		if (!strcmp(pool_vars[i], var))
			return true;
	return false;
}

static int cmd_pool_get(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_pool *p;
	const char *var;
	int r;

	if ((r = pool_arg(mon, a, &p, o)) < 0 || (r = arg_str(a, "var", false, &var, o)) < 0)
		return r;
	if (var && !known_var(var))
		return fail(o, -EINVAL, "pool variable '%s' is not known; the variables "
			    "are: size, min_size, pg_num, failure_domain, compress", var);
	for (int i = 0; pool_vars[i]; i++)
		if (!var || !strcmp(var, pool_vars[i]))
			pool_var(p, pool_vars[i], o);
	return 0;
}

static int cmd_pool_set(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_pool *p;
	struct osdmap_pool n;
	struct osdmap_inc inc;
	const char *var, *val;
	cJSON *vj;
	char num[32];
	long v = 0;
	char *end;
	int r;

	if ((r = pool_arg(mon, a, &p, o)) < 0 || (r = arg_str(a, "var", true, &var, o)) < 0)
		return r;
	vj = cJSON_GetObjectItemCaseSensitive(a, "val");
	if (cJSON_IsNumber(vj)) {
		snprintf(num, sizeof(num), "%.17g", vj->valuedouble);
		val = num;
	} else if (cJSON_IsBool(vj)) {
		val = cJSON_IsTrue(vj) ? "true" : "false";
	} else if ((r = arg_str(a, "val", true, &val, o)) < 0) {
		return r;
	}
	if (!known_var(var))
		return fail(o, -EINVAL, "pool variable '%s' is not known; the variables "
			    "are: size, min_size, failure_domain, compress", var);
	if (!strcmp(var, "pg_num"))
		return fail(o, -EOPNOTSUPP, "changing pg_num of an existing pool is not "
			    "supported yet");
	n = *p;
	if (!strcmp(var, "size") || !strcmp(var, "min_size")) {
		errno = 0;
		v = strtol(val, &end, 10);
		if (errno || end == val || *end)
			return fail(o, -EINVAL, "%s: '%s' is not a whole number", var, val);
	}
	if (!strcmp(var, "size")) {
		if (v < 1 || v > OSDMAP_SIZE_MAX)
			return fail(o, -EINVAL, "size must be from 1 to %d", OSDMAP_SIZE_MAX);
		n.size = (uint8_t)v;
		if (n.min_size > n.size)
			n.min_size = n.size;
	} else if (!strcmp(var, "min_size")) {
		if (v < 1 || v > n.size)
			return fail(o, -EINVAL, "min_size must be from 1 to the pool's size "
				    "(%u)", n.size);
		n.min_size = (uint8_t)v;
	} else if (!strcmp(var, "failure_domain")) {
		if (parse_fd(val, &n.failure_domain) < 0)
			return fail(o, -EINVAL, "failure domain '%s' is not known; use host "
				    "or osd", val);
	} else if (!strcmp(var, "compress")) {
		bool c;

		if (parse_bool(val, &c) < 0)
			return fail(o, -EINVAL, "compress must be true or false");
		n.flags = c ? n.flags | POOL_F_COMPRESS : n.flags & ~POOL_F_COMPRESS;
	}
	if (!memcmp(&n, p, sizeof(n))) {
		say(o, "pool '%s' already has %s %s", p->name, var, val);
		no_change(mon, o);
		return 0;
	}
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_pool(&inc, &n);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return fail(o, r, "out of memory");
	}
	say(o, "set pool '%s' %s to %s", p->name, var, val);
	return map_change(mon, &inc, o);
}

/* ---- df, pg ls ------------------------------------------------------ */

static int cmd_df(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	struct usage u;
	cJSON *arr = NULL;
	char b1[32], b2[32], b3[32];

	cluster_usage(mon, &u);
	if (o->json) {
		cJSON_AddNumberToObject(o->j, "total", (double)u.total);
		cJSON_AddNumberToObject(o->j, "used", (double)u.used);
		cJSON_AddNumberToObject(o->j, "avail", (double)u.avail);
		arr = cJSON_AddArrayToObject(o->j, "pools");
	} else {
		human_bytes(u.total, b1, sizeof(b1));
		human_bytes(u.used, b2, sizeof(b2));
		human_bytes(u.avail, b3, sizeof(b3));
		fprintf(o->txt, "RAW: %s total, %s used, %s avail\n\n", b1, b2, b3);
		fprintf(o->txt, "%-24s %6s %12s %12s\n", "POOL", "ID", "OBJECTS", "BYTES");
	}
	for (uint32_t i = 0; i < mon->map->npools; i++) {
		const struct osdmap_pool *p = &mon->map->pools[i];
		struct mon_pg_pool *pp = mon_pg_pool(mon, p->id);
		uint64_t objects = 0, bytes = 0;

		for (uint32_t pg = 0; pp && pg < pp->pg_num; pg++) {
			if (!pp->pgs[pg].reported)
				continue;
			objects += pp->pgs[pg].st.objects;
			bytes += pp->pgs[pg].st.bytes;
		}
		if (arr) {
			cJSON *j = cJSON_CreateObject();

			cJSON_AddNumberToObject(j, "id", p->id);
			cJSON_AddStringToObject(j, "name", p->name);
			cJSON_AddNumberToObject(j, "objects", (double)objects);
			cJSON_AddNumberToObject(j, "bytes", (double)bytes);
			cJSON_AddNumberToObject(j, "size", p->size);
			cJSON_AddItemToArray(arr, j);
		} else {
			human_bytes(bytes, b1, sizeof(b1));
			fprintf(o->txt, "%-24s %6u %12llu %12s\n", p->name, p->id,
				(unsigned long long)objects, b1);
		}
	}
	return 0;
}

static int cmd_pg_ls(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_pool *only = NULL;
	struct placement_ctx *pc;
	const char *name;
	int r;

	if ((r = arg_str(a, "pool", false, &name, o)) < 0)
		return r;
	if (name) {
		only = osdmap_pool_by_name(mon->map, name);
		if (!only)
			return fail(o, -ENOENT, "pool '%s' does not exist; list pools with: "
				    "atoll pool ls", name);
	}
	pc = placement_ctx_new(mon->map);
	if (!pc)
		return fail(o, -ENOMEM, "out of memory");
	if (o->json) {
		cJSON_Delete(o->j);
		o->j = cJSON_CreateArray();
	} else {
		fprintf(o->txt, "%-10s %-36s %10s %12s %s\n", "PG", "STATE", "OBJECTS",
			"BYTES", "ACTING");
	}
	for (uint32_t i = 0; i < mon->map->npools; i++) {
		const struct osdmap_pool *p = &mon->map->pools[i];
		struct mon_pg_pool *pp;

		if (only && only->id != p->id)
			continue;
		pp = mon_pg_pool(mon, p->id);
		for (uint32_t pg = 0; pp && pg < pp->pg_num; pg++) {
			const struct mon_pg *e = &pp->pgs[pg];
			int32_t acting[OSDMAP_SIZE_MAX], primary = -1;
			int nact = 0;
			bool unknown;
			uint32_t st = mon_pg_state(mon, e, &unknown);
			char state[160], pgid[24], act[128];
			size_t off = 0;

			if (unknown) {
				snprintf(state, sizeof(state), "unknown");
				nact = placement_ctx_acting(pc, p, pg, acting, &primary);
				if (nact < 0)
					nact = 0;
			} else {
				pg_state_str(st, state, sizeof(state));
				nact = e->st.nacting;
				for (int k = 0; k < nact; k++)
					acting[k] = e->st.acting[k];
				primary = nact ? acting[0] : -1;
			}
			snprintf(pgid, sizeof(pgid), "%u.%u", p->id, pg);
			if (o->json) {
				cJSON *j = cJSON_CreateObject(), *x;

				cJSON_AddStringToObject(j, "pgid", pgid);
				cJSON_AddNumberToObject(j, "pool", p->id);
				cJSON_AddNumberToObject(j, "pg", pg);
				cJSON_AddStringToObject(j, "state", state);
				x = cJSON_AddArrayToObject(j, "acting");
				for (int k = 0; k < nact; k++)
					cJSON_AddItemToArray(x, cJSON_CreateNumber(acting[k]));
				cJSON_AddNumberToObject(j, "primary", primary);
				cJSON_AddNumberToObject(j, "objects",
							unknown ? 0 : (double)e->st.objects);
				cJSON_AddNumberToObject(j, "bytes",
							unknown ? 0 : (double)e->st.bytes);
				if (!unknown)
					cJSON_AddNumberToObject(j, "reported_by", e->reporter);
				cJSON_AddItemToArray(o->j, j);
				continue;
			}
			act[0] = '\0';
			for (int k = 0; k < nact && off < sizeof(act); k++)
				off += (size_t)snprintf(act + off, sizeof(act) - off, "%s%d",
							k ? "," : "", acting[k]);
			fprintf(o->txt, "%-10s %-36s %10llu %12llu [%s]\n", pgid, state,
				unknown ? 0ull : (unsigned long long)e->st.objects,
				unknown ? 0ull : (unsigned long long)e->st.bytes, act);
		}
	}
	placement_ctx_free(pc);
	return 0;
}

/* ---- mon backup ----------------------------------------------------- */

static int cmd_mon_backup(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	int r = mon_store_backup(mon->store, &o->bin, &o->binlen);

	if (r < 0)
		return fail(o, r, "cannot read the monitor store: %s", strerror(-r));
	say(o, "backup of epochs %llu..%llu (%zu bytes)",
	    (unsigned long long)mon_store_first_epoch(mon->store),
	    (unsigned long long)mon->map->epoch, o->binlen);
	return 0;
}

/* ---- dispatch ------------------------------------------------------- */

static const struct {
	const char *prefix;
	int (*fn)(struct mon *mon, cJSON *args, struct cmd_out *o);
} commands[] = {
	{ "status", cmd_status },
	{ "health", cmd_health },
	{ "osd tree", cmd_osd_tree },
	{ "osd ls", cmd_osd_ls },
	{ "osd dump", cmd_osd_dump },
	{ "osd out", cmd_osd_out },
	{ "osd in", cmd_osd_in },
	{ "osd reweight", cmd_osd_reweight },
	{ "osd set", cmd_osd_set },
	{ "osd unset", cmd_osd_unset },
	{ "osd rm", cmd_osd_rm },
	{ "pool create", cmd_pool_create },
	{ "pool ls", cmd_pool_ls },
	{ "pool rm", cmd_pool_rm },
	{ "pool get", cmd_pool_get },
	{ "pool set", cmd_pool_set },
	{ "df", cmd_df },
	{ "pg ls", cmd_pg_ls },
	{ "mon backup", cmd_mon_backup },
};

static void run_command(struct mon *mon, const char *json, struct cmd_out *o)
{
	cJSON *a = cJSON_Parse(json);
	const char *prefix, *fmt;
	size_t i;

	if (!a || !cJSON_IsObject(a)) {
		fail(o, -EINVAL, "the command is not a JSON object");
		goto out;
	}
	if (arg_str(a, "format", false, &fmt, o) < 0)
		goto out;
	o->json = fmt && !strcmp(fmt, "json");
	if (o->json)
		o->j = cJSON_CreateObject();
	if (arg_str(a, "prefix", true, &prefix, o) < 0)
		goto out;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].prefix, prefix))
			break;
	if (i == sizeof(commands) / sizeof(commands[0])) {
		fail(o, -EINVAL, "unknown command '%s'; see doc/cli.md for the list", prefix);
		goto out;
	}
	o->rc = commands[i].fn(mon, a, o);
	log_debug("mon", "command '%s': %d", prefix, o->rc);
out:
	cJSON_Delete(a);
}

void mon_handle_command(struct mon *mon, struct msg *m)
{
	struct mon_command_reply rep;
	struct cmd_out o;
	struct msg *r;
	char *json = NULL, *jtxt = NULL;
	struct dec d;
	struct enc e;
	int rc;

	memset(&o, 0, sizeof(o));
	o.txt = open_memstream(&o.txtbuf, &o.txtlen);
	if (!o.txt) {
		msg_free(m);
		return;
	}
	dec_init(&d, m->front, m->front_len);
	rc = mon_command_decode(&d, &json);
	if (rc < 0)
		fail(&o, rc, "the command message is malformed");
	else
		run_command(mon, json, &o);
	fclose(o.txt);

	memset(&rep, 0, sizeof(rep));
	rep.rc = o.rc;
	rep.status = o.status;
	if (o.rc == 0 && o.bin) {
		rep.out = o.bin;
		rep.out_len = (uint32_t)o.binlen;
	} else if (o.rc == 0 && o.json && o.j) {
		jtxt = cJSON_PrintUnformatted(o.j);
		rep.out = jtxt;
		rep.out_len = jtxt ? (uint32_t)strlen(jtxt) : 0;
	} else if (o.rc == 0) {
		rep.out = o.txtbuf;
		rep.out_len = (uint32_t)o.txtlen;
	}
	enc_init(&e);
	mon_command_reply_encode(&rep, &e);
	r = msg_new(MT_MON_COMMAND, &e);
	enc_free(&e);
	if (r)
		msg_reply(m->conn, m, r);
	cJSON_Delete(o.j);
	free(jtxt);
	free(o.txtbuf);
	free(o.bin);
	free(json);
	msg_free(m);
}
