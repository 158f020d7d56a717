/*
 * mapchange.c - the one path through which the cluster map changes, and
 * the subscriptions that receive every change.
 *
 * mon_map_change() is the only function that makes an epoch: on the
 * leader it numbers the incremental, checks it applies to a copy of the
 * map, and proposes it to the replicated log (quorum.c) with the epoch it
 * was made against and the request id of the command being handled.
 * Once the entry is committed on a majority, every member applies it
 * (mon_state_apply): it commits incremental + full map to LMDB, swaps the
 * map in, records the request id, and only then pushes the incremental to
 * its own subscribers.  Apply reads no clock (the leader put the time in
 * the incremental) and skips an entry made against another epoch than the
 * current one, so a deposed leader's late proposal cannot fork the map.
 *
 * A trim entry (trim.c) moves the first epoch every member's store keeps;
 * what each store holds is not part of the replicated state (a member
 * that installed a snapshot keeps less), so the digest leaves it out.
 *
 * The replicated state is the map plus the request-id table, the
 * incarnation (rebuild.c), the auth state (auth.c: its entries are
 * applied there) and the cluster log (clog.c: its entries are applied
 * there; a map change's own lines are added here); a snapshot of it is
 * mon_state_encode(), a digest of it mon_state_digest().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "atoll_assert.h"
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
	mon_map_msg_encode(full, incs, ninc, mon_store_first_epoch(mon->store), &e);
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


void mon_reqid_record(struct mon *mon, uint64_t client, uint64_t seq, uint64_t epoch)
{
	uint32_t i;

	if (!client && !seq)
		return;
	if (mon->nreqids < MON_REQIDS_MAX) {
		i = (mon->reqid_head + mon->nreqids++) % MON_REQIDS_MAX;
	} else {
		i = mon->reqid_head;
		mon->reqid_head = (mon->reqid_head + 1) % MON_REQIDS_MAX;
	}
	mon->reqids[i].client = client;
	mon->reqids[i].seq = seq;
	mon->reqids[i].epoch = epoch;
}

const struct mon_reqent *mon_reqid_find(struct mon *mon, const struct mon_reqid *id)
{
	if (!id->client && !id->seq)
		return NULL;
	for (uint32_t k = 0; k < mon->nreqids; k++) {
		const struct mon_reqent *r = &mon->reqids[(mon->reqid_head + k) % MON_REQIDS_MAX];

		if (r->client == id->client && r->seq == id->seq)
			return r;
	}
	return NULL;
}

int mon_map_change(struct mon *mon, struct osdmap_inc *inc, uint64_t *epoch)
{
	struct osdmap *next;
	struct mon_entry ent;
	struct enc e;
	int64_t res = 0;
	int r;

	if (!mon->qv.ready) {
		r = MON_ENOTLEADER;
		goto out_clear;
	}
	inc->epoch = mon->map->epoch + 1;
	/* the leader reads the clock; apply never does */
	inc->modified_ms = mon_wall_ms();
	/* refuse a bad incremental here, before it is in the log */
	next = osdmap_clone(mon->map);
	if (!next) {
		r = -ENOMEM;
		goto out_clear;
	}
	r = osdmap_apply(next, inc);
	osdmap_free(next);
	if (r < 0) {
		log_error("mon", "epoch %llu does not apply to the map: %s",
			  (unsigned long long)inc->epoch, strerror(-r));
		goto out_clear;
	}
	enc_init(&e);
	ent.type = MON_ENTRY_MAP_CHANGE;
	ent.base = mon->map->epoch;
	ent.client = mon->cur_reqid.client;
	ent.seq = mon->cur_reqid.seq;
	ent.inc = *inc;		/* borrowed for the encoding */
	mon_entry_encode(&ent, &e);
	r = e.err;
	if (r == 0)
		r = mon_quorum_propose(mon, e.buf, e.len, &res);
	enc_free(&e);
	if (r == 0 && res < 0)
		r = (int)res;
	if (r < 0) {
		log_info("mon", "epoch %llu not committed: %s",
			 (unsigned long long)inc->epoch, r == MON_ENOTLEADER ?
			 "not the leader" : strerror(-r));
		goto out_clear;
	}
	if (epoch)
		*epoch = (uint64_t)res;
out_clear:
	osdmap_inc_clear(inc);
	return r;
}

/* Applies a map change entry: deterministic (no clock, no random); an
 * entry made against another epoch than the current one (a deposed
 * leader's) changes nothing. */
int64_t mon_state_apply(struct mon *mon, const void *buf, size_t len)
{
	struct mon_entry ent;
	struct osdmap *next;
	int64_t res;
	int r;

	if (mon_rebuild_apply(mon, buf, len, &res))
		return res;	/* an incarnation entry (rebuild.c) */
	if (mon_auth_apply(mon, buf, len, &res))
		return res;	/* an auth entry (auth.c) */
	if (mon_clog_apply(mon, buf, len, &res))
		return res;	/* cluster log lines (clog.c) */
	r = mon_entry_decode(buf, len, &ent);
	if (r < 0) {
		mon_entry_clear(&ent);
		log_error("mon", "malformed entry in the log (%zu bytes): skipped", len);
		return -EBADMSG;
	}
	if (ent.type == MON_ENTRY_TRIM) {
		/* every member drops the same epochs from its store; one whose
		 * history already starts later (a snapshot installed) or a
		 * replay after a restart drops nothing */
		r = mon_store_trim(mon->store, ent.first);
		ATOLL_ASSERT(r == 0, "the monitor store cannot trim the map history below "
			     "epoch %llu: %s", (unsigned long long)ent.first, strerror(-r));
		log_info("mon", "map history kept: epochs %llu..%llu",
			 (unsigned long long)mon_store_first_epoch(mon->store),
			 (unsigned long long)mon->map->epoch);
		mon_entry_clear(&ent);
		return (int64_t)mon_store_first_epoch(mon->store);
	}
	if (ent.base != mon->map->epoch) {
		log_info("mon", "map change made at epoch %llu skipped: the map is at %llu",
			 (unsigned long long)ent.base, (unsigned long long)mon->map->epoch);
		mon_entry_clear(&ent);
		return -ESTALE;
	}
	next = osdmap_clone(mon->map);
	ATOLL_ASSERT(next, "out of memory applying epoch %llu",
		     (unsigned long long)ent.base + 1);
	r = osdmap_apply(next, &ent.inc);
	if (r < 0) {
		/* the leader checked it: it does not apply on any member */
		log_error("mon", "epoch %llu does not apply to the map: %s; skipped",
			  (unsigned long long)ent.inc.epoch, strerror(-r));
		osdmap_free(next);
		mon_entry_clear(&ent);
		return r;
	}
	if (ent.inc.epoch == 1)
		next->created_ms = ent.inc.modified_ms;
	/* LMDB keeps the history for subscribers; a replay after a restart
	 * writes the same epochs again */
	r = mon_store_commit(mon->store, &ent.inc, next);
	ATOLL_ASSERT(r == 0, "the monitor store cannot record committed epoch %llu: %s",
		     (unsigned long long)ent.inc.epoch, strerror(-r));
	{
		struct osdmap *old = mon->map;

		mon->map = next;
		/* every member says the same lines about it (clog.c) */
		mon_clog_map_applied(mon, old, &ent.inc);
		osdmap_free(old);
	}
	mon_reqid_record(mon, ent.client, ent.seq, ent.inc.epoch);
	mon->digest = 0;
	log_info("mon", "epoch %llu committed", (unsigned long long)mon->map->epoch);

	for (size_t i = 0; i < mon->nsubs; i++) {
		struct mon_sub *s = &mon->subs[i];

		if (s->sent + 1 == ent.inc.epoch)
			send_maps(mon, s, NULL, &ent.inc, 1, ent.inc.epoch);
		else if (s->sent < ent.inc.epoch)
			/* it missed some (a failed send): send the full map */
			send_maps(mon, s, mon->map, NULL, 0, ent.inc.epoch);
	}
	mon_pg_sync(mon);
	mon_entry_clear(&ent);
	return (int64_t)mon->map->epoch;
}

void mon_state_encode(struct mon *mon, struct enc *e)
{
	struct mon_reqent ents[MON_REQIDS_MAX];

	for (uint32_t k = 0; k < mon->nreqids; k++)
		ents[k] = mon->reqids[(mon->reqid_head + k) % MON_REQIDS_MAX];
	mon_state_blob_encode(mon->map, ents, mon->nreqids, e);
	mon_rebuild_state_encode(mon, e);	/* the incarnation (rebuild.c) */
	if (mon->auth)
		mon_auth_state_append(mon, e);	/* keys, secrets, id ranges (auth.c) */
	mon_clog_state_append(mon, e);		/* the cluster log (clog.c) */
}

int mon_state_restore(struct mon *mon, const void *buf, size_t len)
{
	static struct mon_reqent ents[MON_REQIDS_MAX];	/* raft thread only */
	const uint8_t *p = buf;
	struct osdmap *map;
	uint32_t n;
	int r;

	size_t blob_end;

	r = mon_state_blob_decode(buf, mon_rebuild_state_restore(mon, buf, len), &map,
				  ents, &n);
	if (r < 0)
		return r;
	/* the auth section follows the blob and the incarnation trailer
	 * (which is there when the incarnation is above 1) */
	blob_end = 6 + ((size_t)p[2] | (size_t)p[3] << 8 | (size_t)p[4] << 16 |
			(size_t)p[5] << 24);
	if (mon->incarnation > 1)
		blob_end += 12;
	if (mon->auth) {
		r = mon_auth_state_restore(mon, p + (blob_end < len ? blob_end : len),
					   blob_end < len ? len - blob_end : 0);
		if (r < 0) {
			osdmap_free(map);
			return r;
		}
	}
	/* the tagged sections after the blob: auth (above), the cluster log */
	r = mon_clog_state_restore(mon, p + (blob_end < len ? blob_end : len),
				   blob_end < len ? len - blob_end : 0);
	if (r < 0) {
		osdmap_free(map);
		return r;
	}
	if (mon->incarnation > 1)
		mon_store_set_incarnation(mon->store, mon->incarnation);
	if (memcmp(map->fsid, mon->fsid, 16) != 0) {
		osdmap_free(map);
		return -EXDEV;
	}
	r = mon_store_reset(mon->store, map);
	if (r < 0) {
		osdmap_free(map);
		return r;
	}
	mon->nreqids = 0;
	mon->reqid_head = 0;
	for (uint32_t k = 0; k < n; k++)
		mon_reqid_record(mon, ents[k].client, ents[k].seq, ents[k].epoch);
	osdmap_free(mon->map);
	mon->map = map;
	mon->digest = 0;
	log_info("mon", "state restored from a snapshot at epoch %llu",
		 (unsigned long long)map->epoch);
	for (size_t i = 0; i < mon->nsubs; i++)
		if (mon->subs[i].sent != map->epoch)
			send_maps(mon, &mon->subs[i], mon->map, NULL, 0, map->epoch);
	mon_pg_sync(mon);
	return 0;
}

uint64_t mon_state_digest(struct mon *mon)
{
	struct enc e;
	uint64_t h;

	enc_init(&e);
	mon_state_encode(mon, &e);
	h = e.err ? 0 : XXH64(e.buf, e.len, 0);
	enc_free(&e);
	return h;
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
	/* an OSD far behind gets the incrementals it needs in batches (it
	 * asks for the next one after a full batch): it must see every
	 * interval; anyone else gets the full map */
	if (have == 0 || have > last || have < mon_store_first_epoch(mon->store) ||
	    (last - have > PROTO_MAPS_MAX && msg_conn_peer(c).type != MSG_ENTITY_OSD)) {
		send_maps(mon, sub, mon->map, NULL, 0, last);
		return;
	}
	if (last - have > PROTO_MAPS_MAX)
		last = have + PROTO_MAPS_MAX;
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
