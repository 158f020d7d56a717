/*
 * space.c - space grants: a replica's store never fills under a write
 * its primary already logged.
 *
 * The monitor's full ratio stops writes only after a beacon reported the
 * store past it and the new map reached the primaries; a fast writer can
 * fill the rest of a store meanwhile, and a replica whose store then
 * refuses a logged write leaves its PG to re-read its log and recover an
 * object it has no room for.  So every replica tells each primary how
 * many more bytes it may send: the answer to every ping carries a grant,
 * a share of the room left below osd_failsafe_full_ratio after what it
 * granted the other OSDs and did not receive yet:
 *
 *     free  = limit - used (queued writes counted) - other grants' rest
 *     grant = free / number of up OSDs
 *
 * A primary charges each write's bytes to every replica it sends them to,
 * counted from when the granting ping left (bytes sent earlier went
 * before the ping on the same connection, so the replica counted them in
 * its use).  A write whose bytes no grant covers waits while a new ping
 * asks for one; if a grant asked after the write arrived still does not
 * cover it, the write fails with -ENOSPC before anything is logged
 * (unless bytes we sent since that ask are still in flight: then it asks
 * again, a few times).  Our
 * own writes are checked against the same room exactly.  A primary keeps
 * a grant for half the heartbeat grace, the replica counts it for the
 * whole grace: never the other way round, whatever the delays.
 *
 * A write flagged OSD_REQF_FULL_TRY (the MDS's journal and namespace)
 * needs no grant: it may go on into the reserve between the failsafe ratio
 * and the store's end, half of which our own store keeps for it; such
 * writes are small, and the grants keep the other writes out of there.
 *
 * A store is as full as the fuller of its data area and its kv, the kv's
 * use counted in bytes of the data area at the store's scale (data area
 * size / kv size: osd_used_bytes), so the grants are in those bytes too
 * and a write costs a store its data bytes plus its kv estimate at that
 * store's scale, which the replica tells with each grant (kv_scale).  The
 * estimate: SPACE_KV_COST times what the write adds to the kv, which is
 * a fixed SPACE_KV_PER_OP for the log entry, the onode and the PG info,
 * the data of a write small enough to go inline (osd_store_inline_max),
 * and the names and values of attributes and omap entries set: the store
 * holds logged kv mutations at four times their size until its checkpoint
 * (store_statfs's kv_held), and LMDB keeps them in pages about half full.
 * It errs high (a store that stopped inlining because its kv is half full
 * still pays for inline data): a grant that is spent early only asks for
 * the next one sooner, and each grant reads the kv's real use.  Reading that use walks
 * the kv's free list, so it is read for each grant and each beacon, and
 * the estimates of the writes since then add to it.  Ops that only
 * remove (deletes, truncates, attribute and omap removals, guards) cost
 * nothing, so that deletes work on a full cluster.
 *
 * Recovery and backfill bytes are not granted: a member takes a chunk
 * only while it leaves the grants their room (osd_space_admits) and
 * refuses it with -ENOSPC otherwise, which the copier retries later.
 *
 * Loop thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "osd.h"
#include "pg.h"
#include "store.h"

/* How often a write asks again for a grant that bytes in flight used up. */
#define SPACE_TRIES 4

/* The kv bytes of a write's log entry, onode and PG info: a bound. */
#define SPACE_KV_PER_OP 512
/* What a kv byte written costs the kv until it is checkpointed
 * (KV_OVERLAY_COST in the store). */
#define SPACE_KV_COST 4

/* Our store's use (writes queued and not committed counted), the limit
 * (osd_failsafe_full_ratio) and the size, in bytes of the data area; the
 * kv's use, scaled, counts when it is the larger: read when with_kv (which
 * costs a walk of the kv's free list), else the last read plus the
 * estimates of the writes since. */
struct space_numbers {
	uint64_t used, limit, total;
};

static bool space_numbers(struct osd *osd, struct space_numbers *n, bool with_kv)
{
	struct store_statfs sf;

	if ((with_kv ? store_statfs(osd->store, &sf) : store_statfs_quick(osd->store, &sf)) < 0 ||
	    !sf.total)
		return false;
	if (with_kv)
		osd_space_note_statfs(osd, &sf);
	n->used = sf.used > osd->kv_used_scaled + osd->kv_since ? sf.used :
		  osd->kv_used_scaled + osd->kv_since;
	n->used += atomic_load(&osd->inflight_bytes);
	n->limit = (uint64_t)((unsigned __int128)sf.total * osd->failsafe_ratio / 10000);
	n->total = sf.total;
	return true;
}

void osd_space_note_statfs(struct osd *osd, const struct store_statfs *sf)
{
	if (!sf->kv_max || !sf->total)
		return;
	osd->kv_scale = (uint32_t)((unsigned __int128)sf->total * 1024 / sf->kv_max);
	osd->kv_used_scaled = (uint64_t)((unsigned __int128)(sf->kv_used + sf->kv_held) * sf->total /
						sf->kv_max);
	osd->kv_since = 0;
}

void osd_space_need_add(const struct osd *osd, struct space_need *n, uint64_t data_len,
			uint64_t kv_len)
{
	if (!data_len && !kv_len)
		return;
	if (!n->data && !n->kv)
		n->kv = SPACE_KV_COST * SPACE_KV_PER_OP;
	n->data += data_len;
	if (data_len <= osd->inline_max)
		n->kv += SPACE_KV_COST * data_len;
	n->kv += SPACE_KV_COST * kv_len;
}

/* What need costs a store whose kv bytes count scale/1024 bytes of its
 * data area (0: an OSD that grants data bytes only). */
static uint64_t cost(const struct space_need *need, uint32_t scale)
{
	return need->data + (uint64_t)((unsigned __int128)need->kv * scale / 1024);
}

/* What peer p may still send us: the most any grant it may still use
 * leaves (a grant covers the bytes received since it was given). */
static uint64_t outstanding(const struct osd *osd, const struct osd_peer *p, uint64_t now_ms)
{
	const struct osd_given *gv = &p->given;
	uint64_t most = 0;

	for (uint8_t i = 0; i < gv->n; i++) {
		uint64_t spent = gv->recv - gv->g[i].recv_at;

		if (now_ms - gv->g[i].ms <= osd->hb_grace_ms && gv->g[i].bytes > spent &&
		    gv->g[i].bytes - spent > most)
			most = gv->g[i].bytes - spent;
	}
	if (gv->floor && now_ms - gv->floor_ms <= osd->hb_grace_ms && gv->floor > most)
		most = gv->floor;
	return most;
}

static uint64_t outstanding_but(struct osd *osd, int32_t but, uint64_t now_ms)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < osd->npeers; i++)
		if ((int32_t)i != but)
			sum += outstanding(osd, &osd->peers[i], now_ms);
	return sum;
}

/* The peer holds grant `held`: the ones before it are done with. */
static void given_held(struct osd_given *gv, uint64_t held)
{
	uint8_t k = 0;

	for (uint8_t i = 0; i < gv->n; i++)
		if (gv->g[i].seq >= held)
			gv->g[k++] = gv->g[i];
	gv->n = k;
	if (gv->floor && gv->floor_seq < held)
		gv->floor = 0;
}

static void given_add(struct osd_given *gv, uint64_t bytes, uint64_t now_ms)
{
	if (!gv->seq) {
		/* numbers that grow across our restarts: a peer still
		 * holding a grant of our last life never seems ahead */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		gv->seq = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	if (gv->n == OSD_GIVEN_MAX) {
		/* no room: the oldest's rest stays counted, as a floor */
		uint64_t spent = gv->recv - gv->g[0].recv_at;
		uint64_t rest = gv->g[0].bytes > spent ? gv->g[0].bytes - spent : 0;

		if (rest > gv->floor)
			gv->floor = rest;
		gv->floor_seq = gv->g[0].seq;
		gv->floor_ms = gv->g[0].ms;
		memmove(&gv->g[0], &gv->g[1], (OSD_GIVEN_MAX - 1) * sizeof(gv->g[0]));
		gv->n--;
	}
	gv->g[gv->n].seq = ++gv->seq;
	gv->g[gv->n].bytes = bytes;
	gv->g[gv->n].recv_at = gv->recv;
	gv->g[gv->n].ms = now_ms;
	gv->n++;
}

uint64_t osd_space_give(struct osd *osd, int32_t to, uint64_t held, uint64_t *seq,
			uint32_t *kv_scale)
{
	uint64_t now = mono_now_ms(), others, free, grant;
	struct osd_peer *p = osd_peer_slot(osd, to);
	struct space_numbers n;
	uint32_t up = 0;

	*seq = 0;
	*kv_scale = 0;
	if (!p || to == osd->whoami || !space_numbers(osd, &n, true))
		return 0;
	*kv_scale = osd->kv_scale;
	given_held(&p->given, held);
	others = outstanding_but(osd, to, now);
	free = n.limit > n.used + others ? n.limit - n.used - others : 0;
	for (uint32_t i = 0; osd->map && i < osd->map->max_osd; i++)
		if (osdmap_osd_up(osd->map, (int32_t)i))
			up++;
	grant = free / (up ? up : 1);
	given_add(&p->given, grant, now);
	*seq = p->given.seq;
	return grant;
}

void osd_space_received(struct osd *osd, int32_t from, const struct space_need *need)
{
	struct osd_peer *p = osd_peer_slot(osd, from);

	osd->kv_since += cost(&(struct space_need){ 0, need->kv }, osd->kv_scale);
	if (p)
		p->given.recv += cost(need, osd->kv_scale);
}

/* Does our store take bytes more, beside others (bytes other OSDs may
 * still send us)?  Up to the failsafe limit, or with reserve up to
 * halfway between it and the store's end.  Without numbers the store
 * answers for itself. */
static bool space_fits(struct osd *osd, uint64_t bytes, uint64_t others, bool reserve)
{
	struct space_numbers n;

	for (int pass = 0; pass < 2; pass++) {
		/* the kv estimates err high: measure before refusing on them */
		if (pass && !osd->kv_since)
			return false;
		if (!space_numbers(osd, &n, pass > 0))
			return !pass;
		uint64_t bound = reserve ? n.limit + (n.total - n.limit) / 2 : n.limit;

		if (n.used + others + bytes <= bound)
			return true;
	}
	return false;
}

bool osd_space_admits(struct osd *osd, uint64_t bytes)
{
	return space_fits(osd, bytes, outstanding_but(osd, -1, mono_now_ms()), false);
}

/* Charges need to every replica of pg that gets it, and to our kv. */
static void charge(struct osd *osd, const struct pg *pg, const struct space_need *need)
{
	for (uint8_t i = 0; i < pg->info.nacting; i++) {
		int32_t id = pg->info.acting[i];
		struct osd_peer *p;

		if (id != osd->whoami && !pg_recovery_skips(pg, id) &&
		    (p = osd_peer_slot(osd, id)))
			p->sent += cost(need, p->kv_scale);
	}
	osd->kv_since += cost(&(struct space_need){ 0, need->kv }, osd->kv_scale);
}

int osd_space_take_reserve(struct osd *osd, const struct pg *pg, const struct space_need *need)
{
	if (!need->data && !need->kv)
		return 0;
	if (!space_fits(osd, cost(need, osd->kv_scale), 0, true))
		return -ENOSPC;
	charge(osd, pg, need);	/* the replicas count them against our grant */
	return 0;
}

int osd_space_take(struct osd *osd, const struct pg *pg, const struct space_need *need,
		   uint64_t *since_ns, uint8_t *tries)
{
	uint64_t now = mono_now_ns(), keep_ns = osd->hb_grace_ms / 2 * 1000000;
	bool wait = false;

	if (!need->data && !need->kv)
		return 0;
	if (!osd_space_admits(osd, cost(need, osd->kv_scale)))
		return -ENOSPC;
	for (uint8_t i = 0; i < pg->info.nacting; i++) {
		int32_t id = pg->info.acting[i];
		struct osd_peer *p;

		if (id == osd->whoami || pg_recovery_skips(pg, id) ||
		    !(p = osd_peer_slot(osd, id)))
			continue;
		bool valid = p->grant_asked_ns && now - p->grant_asked_ns < keep_ns;

		if (valid && p->sent - p->sent_at_grant + cost(need, p->kv_scale) <= p->grant)
			continue;
		if (valid && p->grant_asked_ns >= *since_ns) {
			/* a fresh answer.  Bytes we sent since it was asked
			 * are in flight: once they are in the peer's use a
			 * new grant is its share of what is left without
			 * them.  Ask again (a few times), then give up. */
			if (p->sent == p->sent_at_grant || *tries >= SPACE_TRIES)
				return -ENOSPC;
			(*tries)++;
			*since_ns = now;
		}
		if (p->ask_failed_ns >= *since_ns)
			continue;	/* unreachable: replication waits for the map */
		if (p->ask_ns < *since_ns && osd_hb_ping(osd, id) < 0) {
			p->ask_failed_ns = now;
			continue;
		}
		wait = true;
	}
	if (wait) {
		osd->space_waiting = true;
		return -EAGAIN;
	}
	charge(osd, pg, need);
	return 0;
}

void osd_space_granted(struct osd *osd, int32_t id, uint64_t grant, uint64_t seq,
		       uint32_t kv_scale, uint64_t asked_ns, uint64_t sent_then, bool failed)
{
	struct osd_peer *p = osd_peer_slot(osd, id);

	if (p) {
		if (p->ask_ns && p->ask_ns <= asked_ns)
			p->ask_ns = 0;
		if (failed) {
			if (asked_ns > p->ask_failed_ns)
				p->ask_failed_ns = asked_ns;
		} else if (asked_ns > p->grant_asked_ns) {
			p->grant = grant;
			p->grant_seq = seq;
			p->kv_scale = kv_scale;
			p->grant_asked_ns = asked_ns;
			p->sent_at_grant = sent_then;
		}
	}
	if (osd->space_waiting) {
		osd->space_waiting = false;
		osd_pgs_kick_ops(osd);
	}
}
