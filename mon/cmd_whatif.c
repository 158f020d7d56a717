/*
 * cmd_whatif.c - `osd what-if CHANGE...` (`atoll osd map --what-if`): what
 * a change of the OSDs would move, computed with the placement code every
 * client and OSD runs, on a copy of the current map; nothing is changed.
 *
 * Changes (applied in order to the copy):
 *   add host=NAME [weight=W]   a new OSD (the next free id, as `atoll-osd
 *                              --mkfs` would get) on host NAME, up and in,
 *                              weight W (TiB; default the mean of the
 *                              existing OSDs' weights)
 *   out ID | in ID             mark an OSD out / in
 *   reweight ID R              its reweight, 0..1
 *   weight ID W                its placement weight (TiB)
 *   down ID | up ID            as if it stopped or started
 *   rm ID                      remove it from the map
 *
 * For every PG of every pool it compares the up set now (the raw set
 * without down OSDs) with the up set after the change: a PG whose set
 * changes is remapped, each OSD in the new set and not in the old one
 * needs a copy of the PG (its bytes, from the last reports), each OSD
 * that leaves the set drops one.  Those are the PGs and bytes that
 * backfill will move once the change is made.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "mon.h"
#include "placement.h"

#define WHATIF_CHANGES_MAX	32

/* A number of TiB as a 16.16 weight; -1 when out of range. */
static int64_t weight_of(const char *s)
{
	char *end;
	double w = strtod(s, &end);

	if (end == s || *end || !isfinite(w) || w < 0 || w > 65535.0)
		return -1;
	return (int64_t)(w * 65536.0 + 0.5);
}

static int osd_arg(const struct osdmap *m, const char *s, const char *change,
		   struct osdmap_osd *out, struct cmd_out *o)
{
	char *end;
	long id = s ? strtol(s, &end, 10) : -1;
	const struct osdmap_osd *rec;

	if (!s || end == s || *end || id < 0 || id >= OSDMAP_OSD_MAX)
		return cmd_fail(o, -EINVAL, "'%s': give an OSD id", change);
	rec = osdmap_osd(m, (int32_t)id);
	if (!rec || !(rec->state & OSD_ST_EXISTS))
		return cmd_fail(o, -ENOENT, "'%s': osd.%ld does not exist", change, id);
	*out = *rec;
	return 0;
}

/* Parses one change and applies it to m. */
static int apply_change(struct mon *mon, struct osdmap *m, const char *change,
			cJSON *added, struct cmd_out *o)
{
	char buf[256], *save = NULL, *tok[4], *verb, *arg, *arg2;
	struct osdmap_osd rec;
	struct osdmap_inc inc;
	int r, ntok = 0;

	if (strlen(change) >= sizeof(buf))
		return cmd_fail(o, -EINVAL, "a change is at most %zu bytes", sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", change);
	for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (ntok == 4)
			return cmd_fail(o, -EINVAL, "'%s': too many words", change);
		tok[ntok++] = t;
	}
	if (!ntok)
		return cmd_fail(o, -EINVAL, "an empty change; give e.g. 'out 3' or 'add host=h4'");
	verb = tok[0];
	arg = ntok > 1 ? tok[1] : NULL;
	arg2 = ntok > 2 ? tok[2] : NULL;
	memset(&rec, 0, sizeof(rec));
	if (strcmp(verb, "add") == 0) {
		const char *host = NULL;
		int64_t w = -1;
		uint64_t sum = 0, n = 0;
		int32_t id;

		for (int i = 1; i < ntok; i++) {
			if (strncmp(tok[i], "host=", 5) == 0 && tok[i][5]) {
				host = tok[i] + 5;
			} else if (strncmp(tok[i], "weight=", 7) == 0) {
				w = weight_of(tok[i] + 7);
				if (w < 0)
					return cmd_fail(o, -EINVAL, "'%s': weight takes TiB, 0 to "
							"65535", change);
			} else {
				return cmd_fail(o, -EINVAL, "'%s': add takes host=NAME and "
						"weight=TIB, not '%s'", change, tok[i]);
			}
		}
		if (!host)
			return cmd_fail(o, -EINVAL, "'%s': add needs host=NAME", change);
		if (strlen(host) > OSDMAP_HOST_MAX)
			return cmd_fail(o, -EINVAL, "'%s': a host name has at most %u bytes",
					change, OSDMAP_HOST_MAX);
		for (id = 0; id < (int32_t)m->max_osd; id++) {
			const struct osdmap_osd *p = &m->osds[id];

			if (!(p->state & OSD_ST_EXISTS))
				break;
			if (p->weight) {
				sum += p->weight;
				n++;
			}
		}
		for (int32_t j = id; j < (int32_t)m->max_osd; j++)
			if ((m->osds[j].state & OSD_ST_EXISTS) && m->osds[j].weight) {
				sum += m->osds[j].weight;
				n++;
			}
		if (id >= OSDMAP_OSD_MAX)
			return cmd_fail(o, -ENOSPC, "'%s': no free OSD id", change);
		if (w < 0)
			w = n ? (int64_t)(sum / n) : 65536;
		rec.id = (uint32_t)id;
		rec.state = OSD_ST_EXISTS | OSD_ST_UP;
		snprintf(rec.host, sizeof(rec.host), "%s", host);
		rec.weight = (uint32_t)w;
		rec.reweight = OSD_WEIGHT_ONE;
		cJSON_AddItemToArray(added, cJSON_CreateNumber(id));
	} else if (ntok > 2 && strcmp(verb, "reweight") && strcmp(verb, "weight")) {
		return cmd_fail(o, -EINVAL, "'%s': '%s' takes one OSD id", change, verb);
	} else if (strcmp(verb, "rm") == 0) {
		if ((r = osd_arg(m, arg, change, &rec, o)) < 0)
			return r;
		memset(&rec, 0, sizeof(rec));
		rec.id = (uint32_t)strtol(arg, NULL, 10);
	} else if (strcmp(verb, "out") == 0 || strcmp(verb, "in") == 0 ||
		   strcmp(verb, "down") == 0 || strcmp(verb, "up") == 0) {
		if ((r = osd_arg(m, arg, change, &rec, o)) < 0)
			return r;
		if (verb[0] == 'o')
			rec.reweight = 0;
		else if (verb[0] == 'i')
			rec.reweight = OSD_WEIGHT_ONE;
		else if (verb[0] == 'd')
			rec.state &= ~OSD_ST_UP;
		else
			rec.state |= OSD_ST_UP;
	} else if (strcmp(verb, "reweight") == 0 || strcmp(verb, "weight") == 0) {
		int64_t w;

		if ((r = osd_arg(m, arg, change, &rec, o)) < 0)
			return r;
		w = arg2 ? weight_of(arg2) : -1;
		if (verb[0] == 'r' && (w < 0 || w > OSD_WEIGHT_ONE))
			return cmd_fail(o, -EINVAL, "'%s': reweight takes 0 to 1", change);
		if (verb[0] == 'w' && w < 0)
			return cmd_fail(o, -EINVAL, "'%s': weight takes TiB, 0 to 65535", change);
		if (verb[0] == 'r')
			rec.reweight = (uint32_t)w;
		else
			rec.weight = (uint32_t)w;
	} else {
		return cmd_fail(o, -EINVAL, "'%s': unknown change '%s'; use add host=NAME "
				"[weight=W], out ID, in ID, reweight ID R, weight ID W, down ID, "
				"up ID or rm ID", change, verb);
	}
	(void)mon;
	osdmap_inc_init(&inc, m->epoch + 1);
	r = osdmap_inc_set_osd(&inc, &rec);
	if (r == 0)
		r = osdmap_apply(m, &inc);
	osdmap_inc_clear(&inc);
	if (r < 0)
		return cmd_fail(o, r, "'%s': the map refuses it: %s", change, strerror(-r));
	return 0;
}

/* The up set: the raw set without holes and down OSDs, in order. */
static int up_set(const struct placement_ctx *pc, const struct osdmap *m,
		  const struct osdmap_pool *p, uint32_t pg, int32_t *up)
{
	int32_t raw[OSDMAP_SIZE_MAX];
	int n = 0, r = placement_ctx_raw(pc, p, pg, raw);

	if (r < 0)
		return r;
	for (uint32_t i = 0; i < p->size && i < OSDMAP_SIZE_MAX; i++)
		if (raw[i] >= 0 && osdmap_osd_up(m, raw[i]))
			up[n++] = raw[i];
	return n;
}

static bool member(const int32_t *set, int n, int32_t id)
{
	for (int i = 0; i < n; i++)
		if (set[i] == id)
			return true;
	return false;
}

static cJSON *set_json(const int32_t *ids, int n)
{
	cJSON *arr = cJSON_CreateArray();

	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
	return arr;
}

static void set_txt(FILE *f, const int32_t *ids, int n)
{
	fputc('[', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%d", i ? "," : "", ids[i]);
	fputc(']', f);
}

struct osd_delta {
	int64_t gain, lose;	/* PG copies */
	uint64_t bytes_in;
};

int cmd_osd_whatif(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	cJSON *changes = cJSON_GetObjectItem(a, "changes"), *c, *pgs = NULL, *added;
	struct placement_ctx *before = NULL, *after = NULL;
	struct osd_delta *delta = NULL;
	struct osdmap *m = NULL;
	uint64_t total = 0, remapped = 0, copies = 0, bytes = 0, unknown = 0;
	uint32_t nosd;
	int r = 0, listed = 0;

	if (!cJSON_IsArray(changes) || cJSON_GetArraySize(changes) == 0 ||
	    cJSON_GetArraySize(changes) > WHATIF_CHANGES_MAX)
		return cmd_fail(o, -EINVAL, "give 1 to %d changes, e.g. 'out 3' or "
				"'add host=h4 weight=1'", WHATIF_CHANGES_MAX);
	added = cJSON_CreateArray();
	m = osdmap_clone(mon->map);
	if (!m || !added) {
		r = cmd_fail(o, -ENOMEM, "out of memory");
		goto out;
	}
	cJSON_ArrayForEach(c, changes) {
		if (!cJSON_IsString(c)) {
			r = cmd_fail(o, -EINVAL, "each change is a string, e.g. 'out 3'");
			goto out;
		}
		if ((r = apply_change(mon, m, c->valuestring, added, o)) < 0)
			goto out;
	}
	before = placement_ctx_new(mon->map);
	after = placement_ctx_new(m);
	nosd = m->max_osd > mon->map->max_osd ? m->max_osd : mon->map->max_osd;
	delta = calloc(nosd ? nosd : 1, sizeof(*delta));
	if (!before || !after || !delta) {
		r = cmd_fail(o, -ENOMEM, "out of memory");
		goto out;
	}
	if (o->json)
		pgs = cJSON_AddArrayToObject(o->j, "pgs");
	for (uint32_t i = 0; i < mon->map->npools; i++) {
		const struct osdmap_pool *p = &mon->map->pools[i];
		const struct osdmap_pool *q = osdmap_pool(m, p->id);
		struct mon_pg_pool *pp = mon_pg_pool(mon, p->id);

		for (uint32_t pg = 0; q && pg < p->pg_num; pg++) {
			int32_t from[OSDMAP_SIZE_MAX], to[OSDMAP_SIZE_MAX];
			int nf = up_set(before, mon->map, p, pg, from);
			int nt = up_set(after, m, q, pg, to);
			uint64_t pgbytes = 0;
			bool same;
			int newc = 0;

			if (nf < 0 || nt < 0) {
				r = cmd_fail(o, nf < 0 ? nf : nt, "cannot place PG %u.%x",
					     p->id, pg);
				goto out;
			}
			total++;
			same = nf == nt && memcmp(from, to, (size_t)nf * sizeof(*from)) == 0;
			if (same)
				continue;
			remapped++;
			if (pp && pg < pp->pg_num && pp->pgs[pg].reported)
				pgbytes = pp->pgs[pg].st.bytes;
			else
				unknown++;
			for (int k = 0; k < nt; k++)
				if (!member(from, nf, to[k])) {
					newc++;
					delta[to[k]].gain++;
					delta[to[k]].bytes_in += pgbytes;
				}
			for (int k = 0; k < nf; k++)
				if (!member(to, nt, from[k]))
					delta[from[k]].lose++;
			copies += (uint64_t)newc;
			bytes += pgbytes * (uint64_t)newc;
			if (o->json) {
				cJSON *e = cJSON_CreateObject();
				char pgid[24];

				snprintf(pgid, sizeof(pgid), "%u.%x", p->id, pg);
				cJSON_AddStringToObject(e, "pgid", pgid);
				cJSON_AddItemToObject(e, "from", set_json(from, nf));
				cJSON_AddItemToObject(e, "to", set_json(to, nt));
				cJSON_AddNumberToObject(e, "new_copies", newc);
				cJSON_AddNumberToObject(e, "bytes", (double)pgbytes);
				cJSON_AddItemToArray(pgs, e);
			} else if (listed++ < 50) {
				fprintf(o->txt, "pg %u.%x ", p->id, pg);
				set_txt(o->txt, from, nf);
				fprintf(o->txt, " -> ");
				set_txt(o->txt, to, nt);
				fprintf(o->txt, "  %d new cop%s, %llu bytes each\n", newc,
					newc == 1 ? "y" : "ies", (unsigned long long)pgbytes);
			}
		}
	}
	if (o->json) {
		cJSON *osds = cJSON_AddArrayToObject(o->j, "osds");

		cJSON_AddNumberToObject(o->j, "epoch", (double)mon->map->epoch);
		cJSON_AddItemToObject(o->j, "added", added);
		added = NULL;
		cJSON_AddNumberToObject(o->j, "pgs_total", (double)total);
		cJSON_AddNumberToObject(o->j, "pgs_remapped", (double)remapped);
		cJSON_AddNumberToObject(o->j, "copies", (double)copies);
		cJSON_AddNumberToObject(o->j, "bytes", (double)bytes);
		cJSON_AddNumberToObject(o->j, "pgs_unreported", (double)unknown);
		for (uint32_t i = 0; i < nosd; i++) {
			cJSON *e;

			if (!delta[i].gain && !delta[i].lose)
				continue;
			e = cJSON_CreateObject();
			cJSON_AddNumberToObject(e, "osd", i);
			cJSON_AddNumberToObject(e, "gain", (double)delta[i].gain);
			cJSON_AddNumberToObject(e, "lose", (double)delta[i].lose);
			cJSON_AddNumberToObject(e, "bytes_in", (double)delta[i].bytes_in);
			cJSON_AddItemToArray(osds, e);
		}
		goto out;
	}
	if (listed > 50)
		fprintf(o->txt, "... and %d more PGs (--format json lists all)\n", listed - 50);
	fprintf(o->txt, "%llu of %llu PGs would be remapped: %llu new PG copies, %llu bytes "
		"to copy%s\n", (unsigned long long)remapped, (unsigned long long)total,
		(unsigned long long)copies, (unsigned long long)bytes,
		unknown ? " (some PGs have not reported their size: counted as 0)" : "");
	for (uint32_t i = 0; i < nosd; i++)
		if (delta[i].gain || delta[i].lose)
			fprintf(o->txt, "osd.%u: +%lld PG copies (%llu bytes in), -%lld\n", i,
				(long long)delta[i].gain, (unsigned long long)delta[i].bytes_in,
				(long long)delta[i].lose);
out:
	cJSON_Delete(added);
	placement_ctx_free(before);
	placement_ctx_free(after);
	free(delta);
	osdmap_free(m);
	return r;
}
