/*
 * cmd_osdmap.c - `osd map POOL OBJECT`: where the current map places an
 * object (its PG, the up and acting sets, the primary), like Ceph's
 * `ceph osd map`.
 *
 * It answers from the monitor's map with the same placement code every
 * client and OSD runs, so an operator (or a test that then inspects the
 * stopped OSDs' stores) learns where an object should be without
 * computing placement itself.  It only reads; the object need not exist.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "mon.h"
#include "placement.h"
#include "proto.h"

static void set_json(cJSON *o, const char *name, const int32_t *ids, int n)
{
	cJSON *arr = cJSON_AddArrayToObject(o, name);

	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
}

static void set_txt(FILE *f, const int32_t *ids, int n)
{
	fputc('[', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%d", i ? "," : "", ids[i]);
	fputc(']', f);
}

int cmd_osd_map(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_pool *p;
	int32_t raw[OSDMAP_SIZE_MAX], up[OSDMAP_SIZE_MAX], acting[OSDMAP_SIZE_MAX];
	int32_t primary = -1;
	const char *pool, *oid;
	uint32_t pg;
	char pgid[24];
	int nraw, nup = 0, nact, r;

	if ((r = cmd_arg_str(a, "pool", true, &pool, o)) < 0 ||
	    (r = cmd_arg_str(a, "object", true, &oid, o)) < 0)
		return r;
	if (!oid[0] || strlen(oid) > PROTO_OID_MAX)
		return cmd_fail(o, -EINVAL, "an object name has 1 to %u bytes", PROTO_OID_MAX);
	p = osdmap_pool_by_name(mon->map, pool);
	if (!p)
		return cmd_fail(o, -ENOENT, "pool '%s' does not exist; list pools with: "
				"atoll pool ls", pool);
	pg = placement_object_pg(p, oid, strlen(oid));
	nraw = placement_raw(mon->map, p, pg, raw);
	if (nraw < 0)
		return cmd_fail(o, nraw, "cannot place PG %u.%x: %s", p->id, pg, strerror(-nraw));
	/* up: the raw set without holes and down OSDs, in order */
	for (uint32_t i = 0; i < p->size && i < OSDMAP_SIZE_MAX; i++)
		if (raw[i] >= 0 && osdmap_osd_up(mon->map, raw[i]))
			up[nup++] = raw[i];
	nact = placement_acting(mon->map, p, pg, acting, &primary);
	if (nact < 0)
		return cmd_fail(o, nact, "cannot place PG %u.%x: %s", p->id, pg, strerror(-nact));
	snprintf(pgid, sizeof(pgid), "%u.%x", p->id, pg);
	if (o->json) {
		cJSON_AddNumberToObject(o->j, "epoch", (double)mon->map->epoch);
		cJSON_AddStringToObject(o->j, "pool", p->name);
		cJSON_AddNumberToObject(o->j, "pool_id", p->id);
		cJSON_AddStringToObject(o->j, "object", oid);
		cJSON_AddNumberToObject(o->j, "pg", pg);
		cJSON_AddStringToObject(o->j, "pgid", pgid);
		set_json(o->j, "up", up, nup);
		cJSON_AddNumberToObject(o->j, "up_primary", nup ? up[0] : -1);
		set_json(o->j, "acting", acting, nact);
		cJSON_AddNumberToObject(o->j, "primary", primary);
		return 0;
	}
	fprintf(o->txt, "osdmap e%llu pool '%s' (%u) object '%s' -> pg %s -> up ",
		(unsigned long long)mon->map->epoch, p->name, p->id, oid, pgid);
	set_txt(o->txt, up, nup);
	fprintf(o->txt, " p%d acting ", nup ? up[0] : -1);
	set_txt(o->txt, acting, nact);
	fprintf(o->txt, " p%d\n", primary);
	return 0;
}
