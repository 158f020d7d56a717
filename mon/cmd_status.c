/*
 * cmd_status.c - the commands that report on the whole cluster: status,
 * health, df, pg stat and pg ls.
 *
 * They only read: the map, the OSDs' beacons and the PG statistics
 * (pgstats.c), and the client I/O and recovery rates derived from the
 * beacons (iorate.c).  A PG never reported is shown as "unknown" with the acting
 * set placement computes for it, so a new pool is visible at once.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "mon.h"
#include "pgstats.h"
#include "placement.h"

/* ---- status, health ------------------------------------------------- */

static void add_recovery_json(cJSON *j, const struct mon_pg_summary *ps);
static void recovery_sentence(const struct mon_pg_summary *ps, char *buf, size_t len);
static void add_io_json(struct mon *mon, cJSON *j, const struct mon_pg_summary *ps);
static void io_lines(struct mon *mon, const struct mon_pg_summary *ps, FILE *f);

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

int cmd_status(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap *map = mon->map;
	uint32_t total = 0, up = 0, in = 0;
	struct mon_pg_summary *ps = malloc(sizeof(*ps));
	char fsid[37], b1[32], b2[32], b3[32];
	struct usage u;
	const char *health = mon_health_status(mon);

	if (!ps)
		return cmd_fail(o, -ENOMEM, "out of memory");

	for (uint32_t i = 0; i < map->max_osd; i++) {
		if (!(map->osds[i].state & OSD_ST_EXISTS))
			continue;
		total++;
		up += !!(map->osds[i].state & OSD_ST_UP);
		in += map->osds[i].reweight > 0;
	}
	mon_pg_summarize(mon, ps);
	cluster_usage(mon, &u);
	mon_uuid_format(map->fsid, fsid);
	if (o->json) {
		cJSON *x, *s;

		cJSON_AddStringToObject(o->j, "fsid", fsid);
		cJSON_AddNumberToObject(o->j, "epoch", (double)map->epoch);
		/* the map history kept (doc/quorum.md, "Trimming the map history") */
		cJSON_AddNumberToObject(o->j, "first_epoch",
					(double)mon_store_first_epoch(mon->store));
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
		cJSON_AddNumberToObject(x, "total", ps->total);
		s = cJSON_AddObjectToObject(x, "states");
		for (uint32_t k = 0; k < ps->nstates; k++)
			cJSON_AddNumberToObject(s, ps->states[k].name, ps->states[k].n);
		add_recovery_json(o->j, ps);
		add_io_json(mon, o->j, ps);
		x = cJSON_AddObjectToObject(o->j, "usage");
		cJSON_AddNumberToObject(x, "total", (double)u.total);
		cJSON_AddNumberToObject(x, "used", (double)u.used);
		cJSON_AddNumberToObject(x, "avail", (double)u.avail);
		cJSON_AddNumberToObject(x, "objects", (double)u.objects);
		free(ps);
		return 0;
	}
	fprintf(o->txt, "cluster:\n  id:     %s\n  health: %s\n", fsid, health);
	fprintf(o->txt, "  epoch:  %llu (history kept from %llu)%s\n",
		(unsigned long long)map->epoch,
		(unsigned long long)mon_store_first_epoch(mon->store),
		map->flags & OSDMAP_F_NOOUT ? " (flags: noout)" : "");
	fprintf(o->txt, "osd:     %u osds: %u up, %u in\n", total, up, in);
	fprintf(o->txt, "pools:   %u pools, %u pgs\n", map->npools, ps->total);
	fprintf(o->txt, "pgs:    ");
	for (uint32_t k = 0; k < ps->nstates; k++)
		fprintf(o->txt, "%s %u %s", k ? "," : "", ps->states[k].n, ps->states[k].name);
	fprintf(o->txt, "%s\n", ps->nstates ? "" : " none");
	if (ps->degraded || ps->misplaced || ps->unfound || ps->recovering_pgs) {
		char line[512];

		recovery_sentence(ps, line, sizeof(line));
		fprintf(o->txt, "recovery: %s\n", line);
	}
	io_lines(mon, ps, o->txt);
	free(ps);
	cmd_human_bytes(u.used, b1, sizeof(b1));
	cmd_human_bytes(u.avail, b2, sizeof(b2));
	cmd_human_bytes(u.total, b3, sizeof(b3));
	fprintf(o->txt, "usage:   %llu objects, %s used, %s / %s avail\n",
		(unsigned long long)u.objects, b1, b2, b3);
	return 0;
}

/* ---- client I/O and recovery progress ---------------------------------- */

/* The ETA in seconds of what is left (object copies), from the object
 * rate or else the byte rate; 0: not known. */
static uint64_t eta_s(const struct mon_pg_summary *ps, const struct mon_io_rates *io)
{
	uint64_t left = ps->degraded + ps->misplaced;

	if (!left)
		return 0;
	if (ps->rate > 0)
		return (uint64_t)((double)left / ps->rate + 0.5);
	if (io->recovery_bytes_per_s > 0 && io->recovery_left_bytes)
		return (uint64_t)((double)io->recovery_left_bytes / io->recovery_bytes_per_s +
				  0.5);
	return 0;
}

static void add_io_json(struct mon *mon, cJSON *j, const struct mon_pg_summary *ps)
{
	cJSON *x = cJSON_AddObjectToObject(j, "io"), *r = cJSON_GetObjectItem(j, "recovery");
	struct mon_io_rates io;
	uint64_t eta;

	mon_io_rates(mon, &io);
	cJSON_AddNumberToObject(x, "window_s", io.window_s);
	cJSON_AddNumberToObject(x, "read_ops_per_s", io.read_ops_per_s);
	cJSON_AddNumberToObject(x, "write_ops_per_s", io.write_ops_per_s);
	cJSON_AddNumberToObject(x, "read_bytes_per_s", io.read_bytes_per_s);
	cJSON_AddNumberToObject(x, "write_bytes_per_s", io.write_bytes_per_s);
	if (!r)
		return;
	cJSON_AddNumberToObject(r, "objects_left", (double)(ps->degraded + ps->misplaced));
	cJSON_AddNumberToObject(r, "bytes_left", (double)io.recovery_left_bytes);
	cJSON_AddNumberToObject(r, "bytes_per_s", io.recovery_bytes_per_s);
	eta = eta_s(ps, &io);
	if (eta && !cJSON_GetObjectItem(r, "eta_s"))
		cJSON_AddNumberToObject(r, "eta_s", (double)eta);
}

/* io:       client 1.2 MiB/s rd, 3.4 MiB/s wr, 10 op/s rd, 20 op/s wr (last 10 s)
 * progress: 120 object copies left (about 2.3 MiB), 12.0 objects/s, 4.5 MiB/s,
 *           about 10 s left */
static void io_lines(struct mon *mon, const struct mon_pg_summary *ps, FILE *f)
{
	uint64_t left = ps->degraded + ps->misplaced, eta;
	char b1[32], b2[32], b3[32];
	struct mon_io_rates io;

	mon_io_rates(mon, &io);
	cmd_human_bytes((uint64_t)io.read_bytes_per_s, b1, sizeof(b1));
	cmd_human_bytes((uint64_t)io.write_bytes_per_s, b2, sizeof(b2));
	fprintf(f, "io:       client %s/s rd, %s/s wr, %.0f op/s rd, %.0f op/s wr (last %u s)\n",
		b1, b2, io.read_ops_per_s, io.write_ops_per_s, io.window_s);
	if (!left)
		return;
	cmd_human_bytes(io.recovery_left_bytes, b1, sizeof(b1));
	cmd_human_bytes((uint64_t)io.recovery_bytes_per_s, b2, sizeof(b2));
	fprintf(f, "progress: recovery/backfill: %llu object copies left (about %s), "
		"%.1f objects/s, %s/s", (unsigned long long)left, b1, ps->rate, b2);
	eta = eta_s(ps, &io);
	if (eta) {
		mon_pg_duration_str(eta, b3, sizeof(b3));
		fprintf(f, ", about %s left (ETA)\n", b3);
	} else {
		fprintf(f, ", ETA unknown (%s)\n", ps->recovering_pgs ?
			"no copy finished lately" : "no recovery running");
	}
}

/* ---- pg stat ----------------------------------------------------------- */

static void add_recovery_json(cJSON *j, const struct mon_pg_summary *ps)
{
	cJSON *x = cJSON_AddObjectToObject(j, "recovery");

	cJSON_AddNumberToObject(x, "objects", (double)ps->objects);
	cJSON_AddNumberToObject(x, "object_copies", (double)ps->copies);
	cJSON_AddNumberToObject(x, "degraded", (double)ps->degraded);
	cJSON_AddNumberToObject(x, "misplaced", (double)ps->misplaced);
	cJSON_AddNumberToObject(x, "unfound", (double)ps->unfound);
	cJSON_AddNumberToObject(x, "recovering_pgs", ps->recovering_pgs);
	cJSON_AddNumberToObject(x, "objects_per_s", ps->rate);
	if (ps->rate > 0 && (ps->degraded || ps->misplaced))
		cJSON_AddNumberToObject(x, "eta_s",
					(double)(uint64_t)((double)(ps->degraded + ps->misplaced) /
							   ps->rate + 0.5));
}

/* "8 of 360 object copies degraded (2.2%), 0 misplaced, 0 unfound;
 * recovering at 3.5 objects/s, about 2 s left" */
static void recovery_sentence(const struct mon_pg_summary *ps, char *buf, size_t len)
{
	size_t off;
	char eta[48];

	off = (size_t)snprintf(buf, len, "%llu of %llu object copies degraded (%.1f%%), %llu "
			       "misplaced, %llu unfound", (unsigned long long)ps->degraded,
			       (unsigned long long)ps->copies,
			       ps->copies ? 100.0 * (double)ps->degraded / (double)ps->copies : 0.0,
			       (unsigned long long)ps->misplaced, (unsigned long long)ps->unfound);
	if (off >= len)
		return;
	if (ps->rate > 0 && (ps->degraded || ps->misplaced)) {
		mon_pg_duration_str((uint64_t)((double)(ps->degraded + ps->misplaced) / ps->rate +
					       0.5), eta, sizeof(eta));
		snprintf(buf + off, len - off, "; recovering at %.1f objects/s, about %s left",
			 ps->rate, eta);
	} else if (ps->recovering_pgs) {
		snprintf(buf + off, len - off, "; %u pgs recovering, no object copied in the "
			 "last %u s", ps->recovering_pgs, PG_RATE_WINDOW_S);
	} else if (ps->degraded || ps->misplaced) {
		snprintf(buf + off, len - off, "; no recovery running");
	}
}

int cmd_pg_stat(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	struct mon_pg_summary *ps = malloc(sizeof(*ps));
	char b1[32], line[512];

	(void)a;
	if (!ps)
		return cmd_fail(o, -ENOMEM, "out of memory");
	mon_pg_summarize(mon, ps);
	if (o->json) {
		cJSON *s;

		cJSON_AddNumberToObject(o->j, "pgs", ps->total);
		s = cJSON_AddObjectToObject(o->j, "states");
		for (uint32_t k = 0; k < ps->nstates; k++)
			cJSON_AddNumberToObject(s, ps->states[k].name, ps->states[k].n);
		cJSON_AddNumberToObject(o->j, "inactive", ps->inactive);
		cJSON_AddNumberToObject(o->j, "inconsistent", ps->inconsistent);
		cJSON_AddNumberToObject(o->j, "bytes", (double)ps->bytes);
		add_recovery_json(o->j, ps);
		free(ps);
		return 0;
	}
	fprintf(o->txt, "%u pgs:", ps->total);
	for (uint32_t k = 0; k < ps->nstates; k++)
		fprintf(o->txt, "%s %u %s", k ? "," : "", ps->states[k].n, ps->states[k].name);
	cmd_human_bytes(ps->bytes, b1, sizeof(b1));
	recovery_sentence(ps, line, sizeof(line));
	fprintf(o->txt, "; %llu objects, %s; %s", (unsigned long long)ps->objects, b1, line);
	if (ps->inactive)
		fprintf(o->txt, "; %u pgs inactive (no I/O)", ps->inactive);
	if (ps->inconsistent)
		fprintf(o->txt, "; %u pgs inconsistent", ps->inconsistent);
	fprintf(o->txt, "\n");
	free(ps);
	return 0;
}

int cmd_health(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	bool detail;
	cJSON *h, *c;
	int r = cmd_arg_bool(a, "detail", false, &detail, o);

	if (r < 0)
		return r;
	h = mon_health(mon, detail);
	if (!h)
		return cmd_fail(o, -ENOMEM, "out of memory");
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
		if (detail)
			fprintf(o->txt, "    see: %s\n",
				cJSON_GetStringValue(cJSON_GetObjectItem(c, "doc")));
	}
	cJSON_Delete(h);
	return 0;
}

/* ---- df, pg ls ------------------------------------------------------ */

int cmd_df(struct mon *mon, cJSON *a, struct cmd_out *o)
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
		cmd_human_bytes(u.total, b1, sizeof(b1));
		cmd_human_bytes(u.used, b2, sizeof(b2));
		cmd_human_bytes(u.avail, b3, sizeof(b3));
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
			cmd_human_bytes(bytes, b1, sizeof(b1));
			fprintf(o->txt, "%-24s %6u %12llu %12s\n", p->name, p->id,
				(unsigned long long)objects, b1);
		}
	}
	return 0;
}

/* `pg ls --state S[,S...]`: the states a PG may be in to be listed. */
static const struct {
	const char *name;
	uint32_t bit;		/* 0: inactive (not active, unknown included) */
} state_filters[] = {
	{ "active", PG_ST_ACTIVE }, { "clean", PG_ST_CLEAN }, { "peering", PG_ST_PEERING },
	{ "degraded", PG_ST_DEGRADED }, { "undersized", PG_ST_UNDERSIZED },
	{ "recovering", PG_ST_RECOVERING }, { "backfilling", PG_ST_BACKFILLING },
	{ "inconsistent", PG_ST_INCONSISTENT }, { "down", PG_ST_DOWN },
	{ "remapped", PG_ST_REMAPPED }, { "stale", PG_ST_STALE },
	{ "incomplete", PG_ST_INCOMPLETE }, { "creating", PG_ST_CREATING },
	{ "inactive", 0 },
};

/* Parses "degraded,inactive" into bits (bit 31: inactive); -EINVAL. */
static int parse_states(const char *s, uint32_t *mask, struct cmd_out *o)
{
	char buf[256], *save = NULL;

	*mask = 0;
	if (strlen(s) >= sizeof(buf))
		return cmd_fail(o, -EINVAL, "the state list '%s' is too long", s);
	snprintf(buf, sizeof(buf), "%s", s);
	for (char *t = strtok_r(buf, ",+", &save); t; t = strtok_r(NULL, ",+", &save)) {
		size_t k;

		for (k = 0; k < sizeof(state_filters) / sizeof(state_filters[0]); k++)
			if (strcmp(t, state_filters[k].name) == 0)
				break;
		if (k == sizeof(state_filters) / sizeof(state_filters[0]))
			return cmd_fail(o, -EINVAL, "unknown PG state '%s'; use any of: active, "
					"clean, peering, degraded, undersized, recovering, "
					"backfilling, inactive, inconsistent, down, remapped, "
					"stale, incomplete, creating", t);
		*mask |= state_filters[k].bit ? state_filters[k].bit : 1u << 31;
	}
	if (!*mask)
		return cmd_fail(o, -EINVAL, "give at least one PG state");
	return 0;
}

/* Whether a PG in st (unknown: never reported) is in any state of mask. */
static bool state_matches(uint32_t st, bool unknown, uint32_t mask)
{
	if ((mask & (1u << 31)) && (unknown || !(st & PG_ST_ACTIVE)))
		return true;
	return !unknown && (st & mask & ~(1u << 31));
}

int cmd_pg_ls(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_pool *only = NULL;
	struct placement_ctx *pc;
	const char *name, *states;
	uint32_t mask = 0;
	int r;

	if ((r = cmd_arg_str(a, "pool", false, &name, o)) < 0 ||
	    (r = cmd_arg_str(a, "state", false, &states, o)) < 0)
		return r;
	if (states && (r = parse_states(states, &mask, o)) < 0)
		return r;
	if (name) {
		only = osdmap_pool_by_name(mon->map, name);
		if (!only)
			return cmd_fail(o, -ENOENT, "pool '%s' does not exist; list pools with: "
					"atoll pool ls", name);
	}
	pc = placement_ctx_new(mon->map);
	if (!pc)
		return cmd_fail(o, -ENOMEM, "out of memory");
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

			if (mask && !state_matches(st, unknown, mask))
				continue;
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
			snprintf(pgid, sizeof(pgid), "%u.%x", p->id, pg);
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
				if (!unknown) {
					cJSON_AddNumberToObject(j, "reported_by", e->reporter);
					cJSON_AddNumberToObject(j, "degraded", (double)e->st.degraded);
					cJSON_AddNumberToObject(j, "misplaced", (double)e->st.misplaced);
					cJSON_AddNumberToObject(j, "unfound", (double)e->st.unfound);
					cJSON_AddNumberToObject(j, "last_epoch_started",
								(double)e->st.last_epoch_started);
					cJSON_AddNumberToObject(j, "last_epoch_clean",
								(double)e->st.last_epoch_clean);
					cJSON_AddNumberToObject(j, "last_scrub",
								(double)e->st.last_scrub);
					cJSON_AddNumberToObject(j, "last_deep_scrub",
								(double)e->st.last_deep_scrub);
					cJSON_AddNumberToObject(j, "scrub_errors", e->st.scrub_errors);
				}
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
