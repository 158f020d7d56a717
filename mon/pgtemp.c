/*
 * pgtemp.c - temporary acting sets (doc/recovery.md, "Backfill").
 *
 * While members of a PG's up set are backfilled they are not complete,
 * so they must neither be its primary nor count toward min_size.  The
 * primary then asks (MT_OSD_PG_TEMP) for a temporary acting set of
 * complete OSDs, and asks again with none once backfill is done.  The
 * monitor only checks that the request comes from the PG's primary in the
 * current map (an older primary's request is stale) and that the OSDs it
 * names exist and are up; which OSDs are complete is the primary's call,
 * it is the one that peered.
 *
 * Requests are collected while a batch of events is handled and go into
 * one map change after it (mon_pg_temp_flush): when an OSD joins, many
 * PGs ask at once, and one epoch for all of them spares every OSD a map
 * per PG.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "mon.h"
#include "msg.h"
#include "placement.h"

void mon_handle_osd_pg_temp(struct mon *mon, struct msg *m)
{
	struct msg_identity p = msg_conn_peer(m->conn);
	struct osd_pg_temp_req q;
	struct dec d;

	dec_init(&d, m->front, m->front_len);
	if (osd_pg_temp_req_decode(&d, &q) < 0) {
		log_warn("mon", "malformed pg_temp request from %s", msg_conn_addr(m->conn));
		goto out;
	}
	if (p.type != MSG_ENTITY_OSD || q.from < 0 || p.id != (uint64_t)q.from) {
		log_warn("mon", "pg_temp request for osd.%d from %s refused: only that OSD's "
			 "own connection may send it", q.from, msg_conn_addr(m->conn));
		goto out;
	}
	for (uint32_t i = 0; i < mon->npgt; i++) {
		if (mon->pgt[i].pool == q.pool && mon->pgt[i].pg == q.pg) {
			mon->pgt[i] = q;	/* the newest request counts */
			goto out;
		}
	}
	if (mon->npgt == mon->pgt_cap) {
		uint32_t cap = mon->pgt_cap ? mon->pgt_cap * 2 : 64;
		struct osd_pg_temp_req *v = realloc(mon->pgt, cap * sizeof(*v));

		if (!v)
			goto out;
		mon->pgt = v;
		mon->pgt_cap = cap;
	}
	mon->pgt[mon->npgt++] = q;
out:
	msg_free(m);
}

/* Whether q still makes sense against the current map. */
static bool request_valid(const struct mon *mon, const struct osd_pg_temp_req *q)
{
	const struct osdmap_pool *pool = osdmap_pool(mon->map, q->pool);
	int32_t acting[OSDMAP_SIZE_MAX], primary = -1;

	if (!pool || q->pg >= pool->pg_num ||
	    placement_acting(mon->map, pool, q->pg, acting, &primary) < 0 ||
	    primary != q->from) {
		log_info("mon", "pg_temp request of osd.%d for pg %u.%x is stale: ignored",
			 q->from, q->pool, q->pg);
		return false;
	}
	for (uint8_t i = 0; i < q->n; i++) {
		if (!osdmap_osd_up(mon->map, q->osds[i]))
			return false;
		for (uint8_t j = 0; j < i; j++)
			if (q->osds[j] == q->osds[i])
				return false;
	}
	return true;
}

void mon_pg_temp_flush(struct mon *mon)
{
	const struct osdmap *map = mon->map;
	struct osdmap_pg_temp *list;
	struct osdmap_inc inc;
	uint32_t n = 0;
	bool changed = false;
	bool *valid;

	if (!mon->npgt)
		return;
	list = calloc(map->npg_temp + mon->npgt, sizeof(*list));
	valid = calloc(mon->npgt, sizeof(*valid));
	if (!list || !valid)
		goto out;
	for (uint32_t k = 0; k < mon->npgt; k++)
		valid[k] = request_valid(mon, &mon->pgt[k]);
	/* the current entries the requests leave alone */
	for (uint32_t i = 0; i < map->npg_temp; i++) {
		const struct osdmap_pg_temp *t = &map->pg_temp[i];
		bool replaced = false;

		for (uint32_t k = 0; k < mon->npgt && !replaced; k++)
			replaced = valid[k] && mon->pgt[k].pool == t->pool &&
				   mon->pgt[k].pg == t->pg;
		if (!replaced)
			list[n++] = *t;
		else
			changed = true;
	}
	for (uint32_t k = 0; k < mon->npgt; k++) {
		const struct osd_pg_temp_req *q = &mon->pgt[k];

		if (!valid[k])
			continue;
		changed = true;
		if (!q->n)
			continue;
		list[n].pool = q->pool;
		list[n].pg = q->pg;
		list[n].n = q->n;
		memcpy(list[n].osds, q->osds, q->n * sizeof(int32_t));
		n++;
	}
	if (changed) {
		/* no change when the new list is the old one */
		changed = n != map->npg_temp;
		for (uint32_t i = 0; !changed && i < n; i++) {
			const struct osdmap_pg_temp *a = &list[i], *b = NULL;

			for (uint32_t j = 0; j < map->npg_temp && !b; j++)
				if (map->pg_temp[j].pool == a->pool && map->pg_temp[j].pg == a->pg)
					b = &map->pg_temp[j];
			changed = !b || b->n != a->n ||
				  memcmp(a->osds, b->osds, a->n * sizeof(int32_t));
		}
	}
	if (changed) {
		uint64_t epoch = 0;

		osdmap_inc_init(&inc, 0);
		if (osdmap_inc_set_pg_temp(&inc, list, n) == 0 &&
		    mon_map_change(mon, &inc, &epoch) == 0)
			log_info("mon", "pg_temp: %u requests, %u entries in epoch %llu",
				 mon->npgt, n, (unsigned long long)epoch);
		else
			osdmap_inc_clear(&inc);
	}
out:
	free(list);
	free(valid);
	mon->npgt = 0;
}
