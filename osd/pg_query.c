/*
 * pg_query.c - the operator's view of a PG from its primary (doc/admin.md,
 * doc/scrub.md).
 *
 * `atoll pg query PGID` sends MT_OSD_PG_QUERY straight to the PG's primary
 * (the monitor only knows what the beacons said a few seconds ago): the
 * reply is the primary's state of the PG right now, its sets, its log's
 * bounds, what peering heard from each OSD, the members being recovered
 * or backfilled with their progress, and the scrub stamps and findings.
 *
 * The same figures, summed, go into the PG's beacon stats
 * (pg_stat_fill_extra), from which the monitor shows degraded and
 * misplaced objects, recovery rate and scrub findings:
 *   degraded  = for each acting member being recovered, the objects it
 *               still lacks; plus, while the acting set is short of the
 *               pool's size, the PG's objects once per missing member;
 *   misplaced = for each backfill target, the objects not yet copied;
 *   recovered = objects copied by this round of recovery and backfill
 *               (the monitor turns its growth into a rate);
 *   unfound   = 0: peering keeps a PG down rather than active without an
 *               authoritative copy of every object (doc/recovery.md).
 * Everything here runs on the loop thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "osd.h"
#include "pg.h"
#include "scrub_proto.h"

static struct pgq_version ver(struct pg_version v)
{
	return (struct pgq_version){ v.epoch, v.seq };
}

/* Recovery and backfill targets of pg, and the objects acting members
 * still lack. */
static uint32_t targets(const struct pg *pg, struct pgq_target *t, uint32_t max,
			uint64_t *missing)
{
	uint32_t n = pg_recovery_progress(pg, t, max);

	*missing = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!t[i].complete && t[i].todo > t[i].done)
			*missing += t[i].todo - t[i].done;
	n += pg_backfill_progress(pg, t + n, max - n);
	return n;
}

static void fill_reply(struct pg *pg, struct pg_query_reply *r)
{
	const struct pg_info *in = &pg->info;

	r->state = pg->state | (pg->scrub_errors ? PG_ST_INCONSISTENT : 0);
	pg_state_str(r->state, r->state_name, sizeof(r->state_name));
	r->primary = in->primary;
	r->nup = pg->nup <= OSDMAP_SIZE_MAX ? pg->nup : OSDMAP_SIZE_MAX;
	memcpy(r->up, pg->up, sizeof(r->up));
	r->nacting = in->nacting <= OSDMAP_SIZE_MAX ? in->nacting : OSDMAP_SIZE_MAX;
	memcpy(r->acting, in->acting, sizeof(r->acting));
	r->last_epoch_started = in->last_epoch_started;
	r->same_interval_since = in->same_interval_since;
	r->last_update = ver(in->last_update);
	r->last_complete = ver(in->last_complete);
	r->log_tail = ver(in->log_tail);
	r->log_entries = pglog_nlog(&pg->log);
	r->objects = pg->objects;
	r->bytes = pg->bytes;
	for (uint32_t i = 0; i < pg->nprobes && r->npeers < PGQ_PEERS_MAX; i++) {
		const struct pg_probe *p = &pg->probes[i];
		struct pgq_peer *q = &r->peers[r->npeers++];

		q->osd = p->osd;
		q->flags = (p->replied ? PGQ_PEER_REPLIED : 0) | (p->has_pg ? PGQ_PEER_HAS_PG : 0);
		if (p->replied && p->has_pg) {
			q->last_update = ver(p->info.last_update);
			q->last_complete = ver(p->info.last_complete);
			q->last_epoch_started = p->info.last_epoch_started;
		}
	}
	r->ntargets = targets(pg, r->targets, PGQ_TARGETS_MAX, &r->missing);
	r->stamps = pg->sched.stamps;
	r->scrubbing = pg->sched.running;
	r->scrub_errors = pg->scrub_errors;
	for (uint32_t i = 0; i < pg->sched.nbad && r->nbad < PGQ_BAD_MAX; i++)
		r->bad[r->nbad++] = pg->sched.bad[i];
}

void osd_pg_query_admin_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	struct pg_query_reply *r = calloc(1, sizeof(*r));
	struct pg_query_req req;
	struct msg *reply;
	struct pg *pg;
	struct enc e;
	struct dec d;

	if (!r)
		goto out_free_msg;
	dec_init(&d, m->front, m->front_len);
	if (pg_query_req_decode(&d, &req)) {
		log_warn("osd", "bad pg query from %s", msg_conn_addr(c));
		r->rc = -EBADMSG;
	} else {
		r->pool = req.pool;
		r->pg = req.pg;
		r->rc = osd_access_admin(osd, c, m->type, req.pool);
		if (r->rc == -ECONNRESET) {
			free(r);
			goto out_free_msg;
		}
		pg = r->rc ? NULL : osd_pg_find(osd, req.pool, req.pg);
		if (!r->rc && (!pg || !pg->is_primary))
			r->rc = -ESTALE;	/* the caller looks the primary up again */
		else if (!r->rc)
			fill_reply(pg, r);
	}
	r->epoch = osd->map ? osd->map->epoch : 0;
	enc_init(&e);
	pg_query_reply_encode(r, &e);
	reply = msg_new(MT_OSD_PG_QUERY, &e);
	enc_free(&e);
	if (reply)
		msg_reply(c, m, reply);
	free(r);
out_free_msg:
	msg_free(m);
}

void pg_stat_fill_extra(struct pg *pg, struct pg_stat *st)
{
	struct pgq_target t[PGQ_TARGETS_MAX];
	uint64_t missing;
	uint32_t n = targets(pg, t, PGQ_TARGETS_MAX, &missing);

	st->degraded = missing;
	if (pg->size > pg->info.nacting)
		st->degraded += pg->objects * (uint64_t)(pg->size - pg->info.nacting);
	for (uint32_t i = 0; i < n; i++) {
		if (t[i].kind == PGQ_BACKFILL && !t[i].complete && pg->objects > t[i].done)
			st->misplaced += pg->objects - t[i].done;
		st->recovered += t[i].done;
	}
	st->unfound = 0;
	st->last_epoch_started = pg->info.last_epoch_started;
	st->last_scrub = pg->sched.stamps.last_scrub;
	st->last_deep_scrub = pg->sched.stamps.last_deep;
	st->scrub_errors = pg->scrub_errors;
	for (uint32_t i = 0; i < pg->sched.nbad && st->nbad < PG_STAT_BAD_MAX; i++) {
		const struct scrub_error *b = &pg->sched.bad[i];
		struct pg_stat_bad *o = &st->bad[st->nbad++];
		size_t len = strlen(b->oid);

		o->osd = b->osd;
		o->kind = b->kind;
		if (len < sizeof(o->oid)) {
			memcpy(o->oid, b->oid, len + 1);
		} else {
			memcpy(o->oid, b->oid, sizeof(o->oid) - 4);
			memcpy(o->oid + sizeof(o->oid) - 4, "...", 4);
		}
	}
}
