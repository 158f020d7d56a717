/*
 * dashboard_state.c - what the dashboard shows of the monitor's state,
 * as JSON (doc/dashboard.md, "The data"): built on the monitor thread
 * with mon->lock held, from the same handlers that answer `atoll status`,
 * `health detail`, `osd tree`, `pg stat`, `mds stat` and `quorum status`
 * with --format json.  So the page shows exactly what the CLI shows, and
 * a field added to one of those commands (client I/O rates in `status`,
 * say) reaches the page without a change here.
 *
 * Nothing here does I/O: the monitor's memory only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "cmd.h"
#include "mon.h"
#include "pgstats.h"
#include "dashboard_int.h"

/* One command's JSON result (NULL when it failed). */
static cJSON *run(struct mon *mon, cmd_fn *fn, cJSON *args)
{
	struct cmd_out o;

	memset(&o, 0, sizeof(o));
	o.json = true;
	o.j = cJSON_CreateObject();
	if (!o.j)
		return NULL;
	if (fn(mon, args, &o) < 0) {
		cJSON_Delete(o.j);
		return NULL;
	}
	return o.j;
}

static void add(cJSON *root, const char *name, cJSON *item)
{
	if (item)
		cJSON_AddItemToObject(root, name, item);
	else
		cJSON_AddNullToObject(root, name);
}

/* The OSD tree with each OSD's store usage from its last beacon. */
static cJSON *osd_tree(struct mon *mon)
{
	cJSON *t = run(mon, cmd_osd_tree, NULL), *h, *o;

	if (!t)
		return NULL;
	cJSON_ArrayForEach(h, cJSON_GetObjectItem(t, "hosts")) {
		cJSON_ArrayForEach(o, cJSON_GetObjectItem(h, "osds")) {
			double id = cJSON_GetNumberValue(cJSON_GetObjectItem(o, "id"));
			const struct mon_osd_info *i;

			if (id < 0 || id >= OSDMAP_OSD_MAX)
				continue;
			i = &mon->osds[(uint32_t)id];
			cJSON_AddNumberToObject(o, "total_bytes", (double)i->total);
			cJSON_AddNumberToObject(o, "used_bytes", (double)i->used);
			cJSON_AddNumberToObject(o, "avail_bytes", (double)i->avail);
			cJSON_AddNumberToObject(o, "slow_ops", i->nslow);
		}
	}
	return t;
}

/* Every pool: its settings (as `pool ls --detail`) and what it holds. */
static cJSON *pools(struct mon *mon)
{
	cJSON *arr = cJSON_CreateArray();

	for (uint32_t i = 0; arr && i < mon->map->npools; i++) {
		const struct osdmap_pool *p = &mon->map->pools[i];
		struct mon_pg_pool *pp = mon_pg_pool(mon, p->id);
		uint64_t objects = 0, bytes = 0, degraded = 0;
		uint32_t clean = 0;
		cJSON *j = cmd_pool_json(p);

		for (uint32_t g = 0; pp && g < pp->pg_num; g++) {
			bool unknown;
			uint32_t st;

			if (!pp->pgs[g].reported)
				continue;
			objects += pp->pgs[g].st.objects;
			bytes += pp->pgs[g].st.bytes;
			degraded += pp->pgs[g].st.degraded;
			st = mon_pg_state(mon, &pp->pgs[g], &unknown);
			clean += !unknown && (st & PG_ST_ACTIVE) && (st & PG_ST_CLEAN);
		}
		cJSON_AddNumberToObject(j, "objects", (double)objects);
		cJSON_AddNumberToObject(j, "bytes", (double)bytes);
		cJSON_AddNumberToObject(j, "degraded", (double)degraded);
		cJSON_AddNumberToObject(j, "pgs_clean", clean);
		cJSON_AddItemToArray(arr, j);
	}
	return arr;
}

char *dash_snapshot(struct mon *mon)
{
	cJSON *root = cJSON_CreateObject(), *args = cJSON_CreateObject(), *dash;
	char *s = NULL;

	if (!root || !args)
		goto out;
	cJSON_AddBoolToObject(args, "detail", true);
	cJSON_AddNumberToObject(root, "generated_ms", (double)mon_wall_ms());
	cJSON_AddStringToObject(root, "monitor", mon->self.name);
	add(root, "status", run(mon, cmd_status, NULL));
	add(root, "health", run(mon, cmd_health, args));
	add(root, "osd_tree", osd_tree(mon));
	add(root, "pools", pools(mon));
	add(root, "pg", run(mon, cmd_pg_stat, NULL));
	add(root, "mds", run(mon, cmd_mds_stat, NULL));
	add(root, "quorum", run(mon, cmd_quorum_status, NULL));
	/* every monitor's dashboard: a page whose leader goes away asks
	 * them where the next one is */
	dash = cJSON_AddArrayToObject(root, "dashboards");
	for (uint32_t i = 0; dash && i < mon->qv.nmembers; i++) {
		char url[DASH_URL_MAX];

		dash_url_of(mon, mon->qv.members[i].name, mon->qv.members[i].addr, url,
			    sizeof(url));
		if (url[0])
			cJSON_AddItemToArray(dash, cJSON_CreateString(url));
	}
	s = cJSON_PrintUnformatted(root);
out:
	cJSON_Delete(args);
	cJSON_Delete(root);
	return s;
}

char *dash_sample(struct mon *mon, uint64_t *t_ms)
{
	struct mon_pg_summary *ps = malloc(sizeof(*ps));
	cJSON *j = cJSON_CreateObject(), *st, *io;
	uint64_t recovered = 0;
	char *s = NULL;

	if (!ps || !j)
		goto out;
	for (size_t i = 0; i < mon->npgpools; i++)
		for (uint32_t g = 0; g < mon->pgpools[i].pg_num; g++)
			if (mon->pgpools[i].pgs[g].reported)
				recovered += mon->pgpools[i].pgs[g].st.recovered;
	mon_pg_summarize(mon, ps);
	*t_ms = mon_wall_ms();
	cJSON_AddNumberToObject(j, "t", (double)*t_ms);
	/* counters (the page charts their rate of change) and levels */
	cJSON_AddNumberToObject(j, "recovered", (double)recovered);
	cJSON_AddNumberToObject(j, "objects", (double)ps->objects);
	cJSON_AddNumberToObject(j, "bytes", (double)ps->bytes);
	cJSON_AddNumberToObject(j, "degraded", (double)ps->degraded);
	cJSON_AddNumberToObject(j, "misplaced", (double)ps->misplaced);
	cJSON_AddNumberToObject(j, "unfound", (double)ps->unfound);
	cJSON_AddNumberToObject(j, "recovery_objects_per_s", ps->rate);
	/* the client I/O rates `atoll status` reports ("io": read and
	 * write bytes and ops per second), when it does, and its recovery
	 * bytes per second: the page charts them as they are */
	st = run(mon, cmd_status, NULL);
	io = st ? cJSON_DetachItemFromObject(st, "io") : NULL;
	if (io)
		cJSON_AddItemToObject(j, "client_io", io);
	io = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "recovery"), "bytes_per_s");
	if (cJSON_IsNumber(io))
		cJSON_AddNumberToObject(j, "recovery_bytes_per_s", io->valuedouble);
	cJSON_Delete(st);
	s = cJSON_PrintUnformatted(j);
out:
	cJSON_Delete(j);
	free(ps);
	return s;
}
