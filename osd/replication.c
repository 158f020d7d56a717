/*
 * replication.c - primary-copy replication of writes (MT_REP_OP).
 *
 * The primary sends every other member of the acting set (but one that is
 * being recovered without the writes: recovery.c) the op's
 * resolved mutation list and its log entry, in parallel with its own
 * commit; the write bytes go by reference to the client's message (no
 * copy for the usual single write).  A replica applies the list, the log
 * entry and the info in one store transaction and answers once that is
 * durable.  The primary answers the client after its own commit and every
 * replica's answer (ops.c, osd_op_write_done).
 *
 * Fencing: a REP_OP names the interval it belongs to (same_interval_since
 * of the primary).  A replica whose map is older waits for the map first.
 * A replica already in a newer interval still applies it until it peers
 * or answers a peering query for the newer interval (pg->sealed_sis), and
 * refuses it with -ESTALE from then on: so the members that stay agree on
 * the log when the primary peers (the primary's query follows its REP_OPs
 * on the same connection).  The
 * primary does not fail a write whose replica connection broke or which a
 * replica refused: the map change that follows ends the interval, and the
 * op is answered -ESTALE then (pg_abort_ops) so that the client resends
 * and the dup index answers it once the PG is active again.  When no map
 * change comes because the replica is alive (its connection was reset,
 * e.g. over a damaged frame), the PG peers again in the same interval
 * (rep_lost_arm).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "encode.h"
#include "fault.h"
#include "log.h"
#include "pg.h"
#include "store.h"

static void data_ref_put(void *arg)
{
	osd_op_put(arg);
}

/* ---- a REP_OP lost with its connection ---------------------------------- */

#define REP_LOST_CHECK_MS	250	/* how often it looks, */
#define REP_LOST_CHECKS		80	/* and for how long (20 s) */

struct rep_lost {
	struct pg *pg;
	uint64_t sis, gen;	/* the interval and peering round it was lost in */
	uint64_t since_ms;	/* when */
	uint32_t checks;
};

/* Every other member of the acting set is up in our map and answered a
 * heartbeat after since_ms. */
static bool members_heard(struct pg *pg, uint64_t since_ms)
{
	struct osd *osd = pg->osd;

	for (uint8_t i = 0; i < pg->info.nacting; i++) {
		int32_t id = pg->info.acting[i];
		const struct osdmap_osd *o;

		if (id == osd->whoami)
			continue;
		o = osd->map ? osdmap_osd(osd->map, id) : NULL;
		if (!o || !(o->state & OSD_ST_UP) || id < 0 || (uint32_t)id >= osd->npeers ||
		    osd->peers[id].last_rx_ms <= since_ms)
			return false;
	}
	return true;
}

static void rep_lost_check(void *arg)
{
	struct rep_lost *rl = arg;
	struct pg *pg = rl->pg;

	if (rl->gen == pg->peer_gen && rl->sis == pg->info.same_interval_since &&
	    !pg->reloading) {
		if (members_heard(pg, rl->since_ms)) {
			pg->rep_lost = NULL;
			free(rl);
			pg_repeer(pg, "a replicated write was lost with its connection to a "
				  "replica that is up", false);
			return;
		}
		if (++rl->checks < REP_LOST_CHECKS &&
		    msgr_timer(pg->osd->msgr, REP_LOST_CHECK_MS, rep_lost_check, rl))
			return;
	}
	pg->rep_lost = NULL;
	free(rl);
}

/* A REP_OP of pg (this interval) got no answer: its connection broke.  A
 * replica that died is marked down and the map change ends the interval.
 * But a replica that is alive (its connection was reset, e.g. because a
 * frame arrived damaged: the messenger refuses it before anything is
 * applied) would never see that write, and every later one would wait
 * for it.  So once every member has answered a heartbeat since, and the
 * interval has not ended, the PG peers again: the ops in flight are
 * answered -ESTALE (clients resend; the dup index answers those that were
 * applied) and recovery brings the replica the writes it missed. */
static void rep_lost_arm(struct pg *pg)
{
	struct rep_lost *rl;

	if (pg->rep_lost || pg->reloading)
		return;
	rl = calloc(1, sizeof(*rl));
	if (!rl)
		return;	/* the map change, if any, ends it */
	rl->pg = pg;
	rl->sis = pg->info.same_interval_since;
	rl->gen = pg->peer_gen;
	rl->since_ms = mono_now_ms();
	if (!msgr_timer(pg->osd->msgr, REP_LOST_CHECK_MS, rep_lost_check, rl)) {
		free(rl);
		return;
	}
	pg->rep_lost = rl;
}

static void rep_reply(void *arg, struct msg *reply, int err)
{
	struct osd_op *op = arg;
	struct rc_reply rr = { .rc = osd_peermsg_rc_take(reply, err) };

	if (rr.rc == -ECONNRESET || rr.rc == -ESHUTDOWN || rr.rc == -ETIMEDOUT ||
	    rr.rc == -ESTALE || rr.rc == -ENOTCONN) {
		/* wait for the map change that ends this interval, or peer
		 * again if the replica is alive */
		log_debug("rep", "pg %u.%x: replica did not take '%s': %s; waiting for "
			  "the next map", op->pg->pool, op->pg->pgid, op->oid,
			  strerror(-rr.rc));
		if (rr.rc != -ESHUTDOWN && rr.rc != -ESTALE && !op->aborted &&
		    op->sis == op->pg->info.same_interval_since)
			rep_lost_arm(op->pg);
		osd_op_put(op);
		return;
	}
	if (rr.rc < 0 && !op->aborted) {
		char why[STORE_NAME_MAX + 96];

		snprintf(why, sizeof(why), "a replica did not apply the write to '%s' (%s)",
			 op->oid, strerror(-rr.rc));
		/* -ERANGE: it missed an earlier one (rep_lost_arm) */
		pg_repeer(op->pg, why, rr.rc != -ERANGE);
	}
	op->t_reps = mono_now_ns();
	osd_op_write_done(op, rr.rc);
}

/* Fault injection (tests/cluster/rep_flip.sh): osd_rep_flip=N flips a
 * byte of the N-th REP_OP's data after its crc was taken, as a bad NIC or
 * cable would: the replica must refuse it before applying it. */
static bool rep_flip_due(void)
{
	static int64_t sent;
	int64_t n = fault_get_int("osd_rep_flip", 0);

	return n > 0 && ++sent == n;
}

void pg_replicate(struct pg *pg, struct osd_op *op)
{
	struct osd *osd = pg->osd;
	struct osd_rep_op rep = {
		.pool = pg->pool,
		.pg = pg->pgid,
		.epoch = osd->map->epoch,
		.same_interval_since = pg->info.same_interval_since,
		.entry = op->entry,
		.nmuts = op->nmuts,
		.muts = op->muts,
	};
	const void *data = NULL;
	size_t data_len = 0;
	uint32_t nwrites = 0;

	/* a backfill target that already has the object gets it again once
	 * the write is done (backfill.c) */
	pg_backfill_note_write(pg, op->oid);
	/* a member recovered meanwhile gets the object again (recovery.c) */
	pg_recovery_note_write(pg, op->oid);
	for (uint32_t i = 0; i < op->nmuts; i++) {
		if (op->muts[i].kind == MUT_WRITE) {
			nwrites++;
			data = op->muts[i].data;
			data_len += op->muts[i].len;
		}
	}
	for (uint8_t i = 0; i < pg->info.nacting; i++) {
		int32_t id = pg->info.acting[i];
		struct msg_conn *c;
		struct msg *m;
		struct enc e;

		if (id == osd->whoami || pg_recovery_skips(pg, id))
			continue;
		c = osd_peer_conn(osd, id);
		if (!c) {
			log_warn("rep", "pg %u.%x: replica osd.%d is not reachable; the write "
				 "to '%s' waits for the next map", pg->pool, pg->pgid, id, op->oid);
			rep_lost_arm(pg);
			continue;
		}
		enc_init(&e);
		osd_rep_op_encode(&rep, &e);
		m = msg_new(MT_REP_OP, &e);
		enc_free(&e);
		if (!m) {
			log_error("rep", "pg %u.%x: out of memory sending a write to osd.%d",
				  pg->pool, pg->pgid, id);
			continue;
		}
		if (nwrites == 1 && data_len && rep_flip_due()) {
			/* a byte flipped on the wire: the crc is the right data's */
			uint8_t *bad = malloc(data_len);

			if (!bad) {
				msg_free(m);
				continue;
			}
			memcpy(bad, data, data_len);
			bad[data_len / 2] ^= 0x10;
			msg_set_data_ref(m, bad, data_len, free, bad);
			msg_set_data_crc(m, atoll__crc32c(0, data, data_len));
			log_warn("rep", "pg %u.%x: fault osd_rep_flip: a byte of the write to '%s' "
				 "flipped on its way to osd.%d", pg->pool, pg->pgid, op->oid, id);
		} else if (nwrites == 1) {
			atomic_fetch_add(&op->refs, 1);
			msg_set_data_ref(m, (void *)data, data_len, data_ref_put, op);
			/* the client's data as it came: its crc is known */
			if (data == op->m->data && data_len == op->m->data_len &&
			    op->m->data_crc_known)
				msg_set_data_crc(m, op->m->data_crc);
		} else if (nwrites > 1) {
			uint8_t *buf = malloc(data_len), *p = buf;

			if (!buf) {
				msg_free(m);
				continue;
			}
			for (uint32_t k = 0; k < op->nmuts; k++) {
				if (op->muts[k].kind == MUT_WRITE) {
					memcpy(p, op->muts[k].data, op->muts[k].len);
					p += op->muts[k].len;
				}
			}
			msg_set_data_ref(m, buf, data_len, free, buf);
		}
		op->pending++;
		atomic_fetch_add(&op->refs, 1);
		if (msg_call(c, m, 0, rep_reply, op) < 0) {
			/* rep_reply is not called: wait for the map change */
			op->pending--;
			osd_op_put(op);
			rep_lost_arm(pg);
		}
	}
}

/* ---- replica side ----------------------------------------------------------- */

struct rep_apply {
	struct osd *osd;
	struct pg *pg;
	struct msg_conn *conn;
	struct msg *m;
	uint64_t bytes;		/* its write bytes, in osd->inflight_bytes */
	uint64_t epoch;		/* our map's when it came: the answer's */
};

/* The answer to a REP_OP, and ra's end.  Any thread. */
static void rep_answer(struct rep_apply *ra, int rc)
{
	atomic_fetch_sub(&ra->osd->inflight_bytes, ra->bytes);
	osd_peermsg_reply_rc_at(ra->conn, ra->m, MT_REP_OP, rc, ra->epoch);
	msg_free(ra->m);
	msg_conn_put(ra->conn);
	free(ra);
}

/* Durable: answered from the store's completion thread, which saves
 * waking the loop for it (the primary waits for this answer). */
static void rep_durable(void *arg)
{
	rep_answer(arg, 0);
}

/* Failed (loop thread): the PG reads its log again. */
static void rep_failed(void *arg, int r)
{
	struct rep_apply *ra = arg;

	log_error("rep", "pg %u.%x: applying a replicated write failed: %s",
		  ra->pg->pool, ra->pg->pgid, strerror(-r));
	pg_fail(ra->pg, r);
	rep_answer(ra, -EIO);
}

/* A REP_OP's data buffer, shared by the store's by-reference writes. */
struct rep_buf {
	atomic_uint refs;
	void *buf;
};

static void rep_buf_hold(void *arg)
{
	struct rep_buf *b = arg;

	atomic_fetch_add(&b->refs, 1);
}

static void rep_buf_put(void *arg)
{
	struct rep_buf *b = arg;

	if (atomic_fetch_sub(&b->refs, 1) == 1) {
		free(b->buf);
		free(b);
	}
}

void osd_rep_op_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	struct rep_buf *hold;
	struct osd_rep_op rep;
	struct rep_apply *ra;
	struct store_txn *txn;
	char oid[STORE_NAME_MAX + 1];
	struct pg *pg;
	struct dec d;
	struct space_need need = { 0, 0 };
	uint64_t bytes = 0;
	int r;

	dec_init(&d, m->front, m->front_len);
	r = osd_rep_op_decode(&d, m->data, m->data_len, &rep);
	if (!osd_peermsg_admit(osd, c, m, r, rep.epoch, rep.pool, rep.pg, "rep", "replicated write", MT_REP_OP)) {
		if (!r)
			osd_rep_op_clear(&rep);
		return;
	}
	pg = osd_pg_find(osd, rep.pool, rep.pg);
	/* A REP_OP of an older interval is still applied until this OSD
	 * peers or answers a query for a newer one: the primary sent it
	 * before it saw the map change, and the members' logs must agree
	 * when peering starts (the query comes after it on the same
	 * connection).  After that it is refused. */
	if (!pg || rep.same_interval_since > pg->info.same_interval_since ||
	    (rep.same_interval_since != pg->info.same_interval_since &&
	     rep.same_interval_since < pg->sealed_sis)) {
		log_debug("rep", "pg %u.%x: refusing a write of interval %llu (ours: %llu)",
			  rep.pool, rep.pg, (unsigned long long)rep.same_interval_since,
			  pg ? (unsigned long long)pg->info.same_interval_since : 0ull);
		r = -ESTALE;
		goto refuse;
	}
	if (pg->reloading) {
		r = -EIO;
		goto refuse;
	}
	if (rep.entry.version.seq != pg->info.last_update.seq + 1) {
		log_error("rep", "pg %u.%x: replicated write %llu'%llu does not follow our "
			  "last update %llu'%llu", pg->pool, pg->pgid,
			  (unsigned long long)rep.entry.version.epoch,
			  (unsigned long long)rep.entry.version.seq,
			  (unsigned long long)pg->info.last_update.epoch,
			  (unsigned long long)pg->info.last_update.seq);
		r = -ERANGE;
		goto refuse;
	}
	/* an absurd change is refused here, before the store would fail the
	 * transaction and with it the PG */
	r = osd_muts_check(rep.muts, rep.nmuts, osd->object_max);
	if (r)
		goto refuse;
	memcpy(oid, rep.entry.oid, rep.entry.oid_len);
	oid[rep.entry.oid_len] = 0;
	for (uint32_t i = 0; i < rep.nmuts; i++) {
		const struct osd_mut *mu = &rep.muts[i];

		if (mu->kind == MUT_WRITE)
			osd_space_need_add(osd, &need, mu->len, 0);
		else if (mu->kind == MUT_SETATTR || mu->kind == MUT_OMAP_SET)
			osd_space_need_add(osd, &need, 0, (uint64_t)mu->name_len + mu->val_len);
	}
	bytes = need.data;
	/* charged to what we granted the sender (space.c) */
	if (msg_conn_peer(c).type == MSG_ENTITY_OSD)
		osd_space_received(osd, (int32_t)msg_conn_peer(c).id, &need);
	txn = store_txn_new();
	if (!txn) {
		r = -ENOMEM;
		goto refuse;
	}
	rep.entry.oid = oid;
	if (osd_muts_any_ref(rep.muts, rep.nmuts) && (hold = malloc(sizeof(*hold)))) {
		/* the store writes straight from the message's data buffer,
		 * which now lives until the store and this function are done */
		const struct osd_data_crcs dc = { m->data, m->data_len, m->data_bcrc };

		atomic_init(&hold->refs, 1);
		hold->buf = m->data;
		m->data = NULL;
		r = osd_muts_to_txn_ref(rep.muts, rep.nmuts, txn, pg->coll, oid, &dc,
					rep_buf_hold, rep_buf_put, hold);
		rep_buf_put(hold);
	} else {
		r = osd_muts_to_txn(rep.muts, rep.nmuts, txn, pg->coll, oid);
	}
	if (!r)
		r = pglog_append(&pg->log, &pg->info, &rep.entry, txn, pg->coll);
	if (r) {
		store_txn_free(txn);
		goto refuse;
	}
	ra = malloc(sizeof(*ra));
	if (!ra) {
		/* the log already has it: the store must too */
		ra = NULL;
	}
	if (ra) {
		ra->osd = osd;
		ra->pg = pg;
		ra->conn = c;
		msg_conn_get(c);
		ra->m = m;
		ra->bytes = bytes;
		ra->epoch = osd->map ? osd->map->epoch : 0;
		atomic_fetch_add(&osd->inflight_bytes, bytes);
	}
	osd_rep_op_clear(&rep);
	if (ra)
		pg_queue_txn_direct(pg, txn, rep_durable, rep_failed, ra);
	else
		pg_queue_txn(pg, txn, NULL, NULL);
	if (!ra)
		msg_free(m);
	return;
refuse:
	osd_rep_op_clear(&rep);
	osd_peermsg_reply_rc(osd, c, m, MT_REP_OP, r);
	msg_free(m);
}
