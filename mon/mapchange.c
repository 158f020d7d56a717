/*
 * mapchange.c - the one path through which the cluster map changes, and
 * the subscriptions that receive every change.
 *
 * mon_map_change() is the only function that makes an epoch: it numbers
 * the incremental, applies it to a copy of the map (so a bad incremental
 * leaves the map as it was), commits incremental + full map durably,
 * swaps the copy in, and only then pushes the incremental to
 * subscribers.  Keeping it one function is deliberate: a replicated log
 * (a quorum of monitors) replaces "commit" with "commit on a majority"
 * here and nowhere else.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "mon.h"
#include "msg.h"

static void send_maps(struct mon *mon, struct mon_sub *sub, const struct osdmap *full,
		      const struct osdmap_inc *incs, uint32_t ninc, uint64_t upto)
{
	struct enc e;
	struct msg *m;
	int r;

	enc_init(&e);
	mon_map_msg_encode(full, incs, ninc, &e);
	m = msg_new(MT_MON_MAP, &e);
	enc_free(&e);
	if (!m) {
		log_warn("mon", "cannot build a map message for %s",
			 msg_conn_addr(sub->c));
		return;
	}
	r = msg_send(sub->c, m);
	if (r < 0)
		log_debug("mon", "map to %s not sent: %s", msg_conn_addr(sub->c),
			  strerror(-r));
	else
		sub->sent = upto;
}

int mon_map_change(struct mon *mon, struct osdmap_inc *inc, uint64_t *epoch)
{
	struct osdmap *next;
	int r;

	inc->epoch = mon->map->epoch + 1;
	inc->modified_ms = mon_wall_ms();
	next = osdmap_clone(mon->map);
	if (!next) {
		r = -ENOMEM;
		goto out_clear;
	}
	r = osdmap_apply(next, inc);
	if (r < 0) {
		log_error("mon", "epoch %llu does not apply to the map: %s",
			  (unsigned long long)inc->epoch, strerror(-r));
		goto out_free;
	}
	/* durable before anyone sees it */
	r = mon_store_commit(mon->store, inc, next);
	if (r < 0) {
		r = -EIO;
		goto out_free;
	}
	osdmap_free(mon->map);
	mon->map = next;
	next = NULL;
	if (epoch)
		*epoch = mon->map->epoch;
	log_info("mon", "epoch %llu committed", (unsigned long long)mon->map->epoch);

	for (size_t i = 0; i < mon->nsubs; i++) {
		struct mon_sub *s = &mon->subs[i];

		if (s->sent + 1 == inc->epoch)
			send_maps(mon, s, NULL, inc, 1, inc->epoch);
		else if (s->sent < inc->epoch)
			/* it missed some (a failed send): send the full map */
			send_maps(mon, s, mon->map, NULL, 0, inc->epoch);
	}
	mon_pg_sync(mon);
out_free:
	osdmap_free(next);
out_clear:
	osdmap_inc_clear(inc);
	return r;
}

void mon_subscribe(struct mon *mon, struct msg_conn *c, uint64_t have)
{
	struct mon_sub *sub = NULL;
	uint64_t last = mon->map->epoch;

	for (size_t i = 0; i < mon->nsubs; i++)
		if (mon->subs[i].c == c)
			sub = &mon->subs[i];
	if (!sub) {
		if (mon->nsubs == mon->subs_cap) {
			size_t cap = mon->subs_cap ? mon->subs_cap * 2 : 16;
			struct mon_sub *n = realloc(mon->subs, cap * sizeof(*n));

			if (!n) {
				log_warn("mon", "out of memory subscribing %s",
					 msg_conn_addr(c));
				return;
			}
			mon->subs = n;
			mon->subs_cap = cap;
		}
		sub = &mon->subs[mon->nsubs++];
		msg_conn_get(c);
		sub->c = c;
	}
	sub->sent = have;
	if (have == last)
		return;
	/* have > last: a subscriber ahead of us (a rolled-back monitor); it
	 * gets our full map and refuses it if it knows that epoch otherwise */
	if (have == 0 || have > last || have < mon_store_first_epoch(mon->store) ||
	    last - have > PROTO_MAPS_MAX) {
		send_maps(mon, sub, mon->map, NULL, 0, last);
		return;
	}
	{
		struct osdmap_inc *incs;
		uint32_t n = (uint32_t)(last - have);
		int r = mon_store_load_incs(mon->store, have + 1, last, &incs);

		if (r < 0) {
			log_warn("mon", "cannot read epochs %llu..%llu: %s; sending "
				 "the full map", (unsigned long long)have + 1,
				 (unsigned long long)last, strerror(-r));
			send_maps(mon, sub, mon->map, NULL, 0, last);
			return;
		}
		send_maps(mon, sub, NULL, incs, n, last);
		for (uint32_t i = 0; i < n; i++)
			osdmap_inc_clear(&incs[i]);
		free(incs);
	}
}

void mon_unsubscribe(struct mon *mon, struct msg_conn *c)
{
	for (size_t i = 0; i < mon->nsubs; i++) {
		if (mon->subs[i].c != c)
			continue;
		msg_conn_put(c);
		mon->subs[i] = mon->subs[--mon->nsubs];
		return;
	}
}
