/*
 * heartbeat.c - liveness: OSD<->OSD pings, failure reports, and the
 * beacon to the monitor; also the table of connections to other OSDs.
 *
 * Every osd_heartbeat_interval the OSD pings every other up OSD (simple,
 * and at the cluster sizes a PG-sharing subset would save little) and
 * sends the monitor its beacon: store usage, the states of the PGs it is
 * primary of, slow ops and store errors.  A peer silent for longer than
 * osd_heartbeat_grace, or whose connection is refused, is reported to the
 * monitor with MT_OSD_FAILURE (again every interval while it lasts; the
 * monitor decides, from several reporters, to mark it down).
 *
 * Leases: the monitor answers every beacon with a lease, osd_lease long
 * (half the grace by default), counted here from when the beacon was
 * sent.  Client ops are executed only while a lease holds (ops.c); an
 * OSD cut off from the monitor stops serving when it runs out, and the
 * monitor marks an OSD down on peer reports only after the last lease it
 * granted has run out — so a PG's new interval never serves while its
 * old primary, behind a partition, still does (doc/osd.md, "Leases").
 *
 * Loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "msg_auth.h"
#include "osd_metrics.h"
#include "pg.h"
#include "store.h"

struct osd_peer *osd_peer_slot(struct osd *osd, int32_t id)
{
	if (id < 0 || id >= OSDMAP_OSD_MAX)
		return NULL;
	if ((uint32_t)id >= osd->npeers) {
		uint32_t n = (uint32_t)id + 16;
		struct osd_peer *p = realloc(osd->peers, n * sizeof(*p));

		if (!p)
			return NULL;
		memset(p + osd->npeers, 0, (n - osd->npeers) * sizeof(*p));
		osd->peers = p;
		osd->npeers = n;
	}
	return &osd->peers[id];
}

/* Forgets the link to a peer, but not what we granted it as a replica
 * (space.c): that is about the peer, and it may still spend it. */
static void peer_reset(struct osd_peer *p)
{
	struct osd_peer keep = *p;

	if (p->conn) {
		msg_conn_close(p->conn);
		msg_conn_put(p->conn);
	}
	memset(p, 0, sizeof(*p));
	p->given = keep.given;
}

struct msg_conn *osd_peer_conn(struct osd *osd, int32_t id)
{
	const struct osdmap_osd *o;
	struct osd_peer *p;

	if (!osd->map || id == osd->whoami)
		return NULL;
	o = osdmap_osd(osd->map, id);
	if (!o || !(o->state & OSD_ST_UP) || !o->addr[0])
		return NULL;
	p = osd_peer_slot(osd, id);
	if (!p)
		return NULL;
	if (p->conn && strcmp(p->addr, o->addr))
		peer_reset(p);
	if (!p->conn) {
		p->conn = msgr_connect(osd->msgr, o->addr);
		if (!p->conn)
			return NULL;
		snprintf(p->addr, sizeof(p->addr), "%s", o->addr);
		msg_conn_set_priv(p->conn, (void *)(intptr_t)(id + 1));
		p->last_rx_ms = mono_now_ms();
	}
	return p->conn;
}

void osd_hb_map_changed(struct osd *osd)
{
	for (uint32_t id = 0; id < osd->npeers; id++) {
		struct osd_peer *p = &osd->peers[id];
		const struct osdmap_osd *o = osdmap_osd(osd->map, (int32_t)id);

		if (!p->conn)
			continue;
		if (!o || !(o->state & OSD_ST_UP) || strcmp(p->addr, o->addr))
			peer_reset(p);
	}
}

static void report_failure(struct osd *osd, int32_t id, uint32_t for_ms, bool immediate)
{
	struct osd_failure f = {
		.reporter = osd->whoami,
		.target = id,
		.epoch = osd->map ? osd->map->epoch : 0,
		.failed_for_ms = for_ms,
		.immediate = immediate,
	};
	struct msg *m;
	struct enc e;

	if (!osd->monc)
		return;
	log_info("hb", "reporting osd.%d as failed (%s)", id,
		 immediate ? "connection refused" : "no ping reply");
	enc_init(&e);
	osd_failure_encode(&f, &e);
	m = msg_new(MT_OSD_FAILURE, &e);
	enc_free(&e);
	if (m)
		monc_send(osd->monc, m);
}

void osd_conn_closed(struct osd *osd, struct msg_conn *c, int err)
{
	intptr_t v = (intptr_t)msg_conn_priv(c);
	int32_t id = (int32_t)v - 1;
	struct osd_peer *p;

	if (v <= 0 || id >= (int32_t)osd->npeers)
		return;
	p = &osd->peers[id];
	if (p->conn != c)
		return;
	if (err == -ECONNREFUSED && osdmap_osd_up(osd->map, id) && !p->refused) {
		p->refused = true;
		report_failure(osd, id, (uint32_t)(mono_now_ms() - p->last_rx_ms), true);
	}
}

struct ping_ctx {
	struct osd *osd;
	int32_t id;
	struct msg_conn *conn;
	uint64_t sent_ns;	/* when it left */
	uint64_t sent_bytes;	/* the peer's write bytes sent by then (space.c) */
};

static void ping_reply(void *arg, struct msg *reply, int err)
{
	struct ping_ctx *ctx = arg;
	struct osd *osd = ctx->osd;
	struct osd_ping pi = { 0 };

	if (!err) {
		struct dec d;

		dec_init(&d, reply->front, reply->front_len);
		err = osd_ping_decode(&d, &pi);
	}
	if ((uint32_t)ctx->id < osd->npeers && osd->peers[ctx->id].conn == ctx->conn) {
		struct osd_peer *p = &osd->peers[ctx->id];

		if (!err) {
			p->last_rx_ms = mono_now_ms();
			p->first_unanswered_ms = 0;
			p->failed_reported = false;
			p->refused = false;
		}
		osd_space_granted(osd, ctx->id, pi.grant, pi.grant_seq, pi.kv_scale, ctx->sent_ns,
				  ctx->sent_bytes, err != 0);
	} else {
		/* a reset link: the peer's grant is gone with it; writes
		 * waiting for it ask again */
		osd_space_granted(osd, -1, 0, 0, 0, 0, 0, true);
	}
	msg_free(reply);
	free(ctx);
}

void osd_ping_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	struct osd_ping pi;
	struct msg *r;
	struct dec d;
	struct enc e;

	dec_init(&d, m->front, m->front_len);
	if (osd_ping_decode(&d, &pi) == 0) {
		pi.grant = osd_space_give(osd, pi.from, pi.grant_seq, &pi.grant_seq, &pi.kv_scale);
		pi.from = osd->whoami;
		pi.epoch = osd->map ? osd->map->epoch : 0;
		enc_init(&e);
		osd_ping_encode(&pi, &e);
		r = msg_new(MT_OSD_PING, &e);
		enc_free(&e);
		if (r)
			msg_reply(c, m, r);
	}
	msg_free(m);
}

/* Pings peer id on c; its answer is also a space grant (space.c). */
static int ping_send(struct osd *osd, int32_t id, struct msg_conn *c, struct osd_peer *p)
{
	struct osd_ping pi = { .from = osd->whoami, .epoch = osd->map->epoch,
			       .stamp_ms = mono_now_ms(), .grant_seq = p->grant_seq };
	struct ping_ctx *ctx = malloc(sizeof(*ctx));
	struct msg *m;
	struct enc e;

	if (!ctx)
		return -ENOMEM;
	ctx->osd = osd;
	ctx->id = id;
	ctx->conn = c;
	ctx->sent_ns = mono_now_ns();
	ctx->sent_bytes = p->sent;
	enc_init(&e);
	osd_ping_encode(&pi, &e);
	m = msg_new(MT_OSD_PING, &e);
	enc_free(&e);
	if (!m || msg_call(c, m, (uint32_t)osd->hb_grace_ms, ping_reply, ctx) < 0) {
		free(ctx);
		return -ENOMEM;
	}
	p->ask_ns = ctx->sent_ns;
	return 0;
}

static void ping_all(struct osd *osd)
{
	uint64_t now = mono_now_ms();

	if (!osd->map || osd->stopping)
		return;
	for (uint32_t i = 0; i < osd->map->max_osd; i++) {
		int32_t id = (int32_t)i;
		struct osd_peer *p;
		struct msg_conn *c;

		if (id == osd->whoami || !osdmap_osd_up(osd->map, id))
			continue;
		c = osd_peer_conn(osd, id);
		p = osd_peer_slot(osd, id);
		if (!c || !p)
			continue;
		/* Silence counts from the first ping not yet answered, not
		 * from the last reply or from when the connection was made:
		 * an OSD that was slow to start (store open, a loaded
		 * machine) must not report peers it has not pinged yet. */
		if (!p->first_unanswered_ms)
			p->first_unanswered_ms = now;
		uint64_t silent = now - p->first_unanswered_ms;

		if (silent > osd->hb_grace_ms) {
			report_failure(osd, id, (uint32_t)silent, false);
			p->failed_reported = true;
		} else if (p->refused) {
			report_failure(osd, id, (uint32_t)silent, true);
		}
		ping_send(osd, id, c, p);
	}
}

int osd_hb_ping(struct osd *osd, int32_t id)
{
	struct msg_conn *c = osd_peer_conn(osd, id);
	struct osd_peer *p = osd_peer_slot(osd, id);

	if (!c || !p)
		return -ENOTCONN;
	if (!p->first_unanswered_ms)
		p->first_unanswered_ms = mono_now_ms();
	return ping_send(osd, id, c, p);
}

bool osd_lease_valid(struct osd *osd)
{
	if (mono_now_ms() < osd->lease_until_ms)
		return true;
	if (!osd->lease_lost_logged && osd->booted) {
		log_warn("hb", "no lease from the monitor: serving no client op until it "
			 "renews it, or another OSD takes over");
		osd->lease_lost_logged = true;
	}
	return false;
}

struct beacon_ctx {
	struct osd *osd;
	uint64_t sent_ms;
};

static void beacon_reply(void *arg, struct msg *reply, int err)
{
	struct beacon_ctx *ctx = arg;
	struct osd *osd = ctx->osd;
	struct osd_lease l;
	struct dec d;

	if (!err) {
		dec_init(&d, reply->front, reply->front_len);
		err = osd_lease_decode(&d, &l);
		msg_free(reply);
	}
	if (err || l.rc < 0 || atomic_load(&osd->stopping)) {
		log_debug("hb", "beacon: no lease (%s)", strerror(-(err ? err : l.rc)));
	} else if (ctx->sent_ms + l.lease_ms > osd->lease_until_ms) {
		bool had = mono_now_ms() < osd->lease_until_ms;

		osd->lease_until_ms = ctx->sent_ms + l.lease_ms;
		if (!had) {
			if (osd->lease_lost_logged)
				log_info("hb", "the monitor renewed our lease: serving again");
			osd->lease_lost_logged = false;
			osd_pgs_kick_ops(osd);
		}
	}
	free(ctx);
}

/* The store is as full as the fuller of its data area and its kv (small
 * objects' data, attributes, omap, the PG logs): the kv's share, in bytes
 * of the data area, when that is the larger.  What the monitor's full
 * ratios and df see, so that they guard the kv too.  The kv's pages in
 * use only: kv_held (its reserve and the deferred mutations at their
 * overlay cost, a fluctuating 1/64 and more of the store) would hide
 * the data's growth from df; the space grants count it (space.c). */
uint64_t osd_used_bytes(const struct store_statfs *sf)
{
	uint64_t used = sf->used;

	if (sf->kv_max && sf->total) {
		unsigned __int128 kv = (unsigned __int128)sf->kv_used * sf->total / sf->kv_max;

		if (kv > sf->total)
			kv = sf->total;
		if (kv > used)
			used = (uint64_t)kv;
	}
	return used;
}

void osd_hb_beacon(struct osd *osd)
{
	struct osd_beacon b = { .id = osd->whoami, .epoch = osd->map ? osd->map->epoch : 0 };
	struct store_statfs sf;
	bool have_sf = false;
	struct msg *m;
	struct enc e;

	if (store_statfs(osd->store, &sf) == 0) {
		have_sf = true;
		uint64_t used = osd_used_bytes(&sf);

		osd_space_note_statfs(osd, &sf);
		b.total = sf.total;
		b.used = used;
		b.avail = sf.total - used;
		if (osd->map && sf.total) {
			uint64_t ratio = used * 10000 / sf.total;

			atomic_store(&osd->local_full, ratio >= osd->failsafe_ratio);
		}
	}
	b.store_errors = atomic_load(&osd->store_errors);
	b.npg = osd_pgs_stats(osd, &b.pgs);
	b.nslow = osd_slow_ops(osd, &b.slow);
	b.wall_ms = msg_auth_wall_ms(osd->auth);
	b.io.read_ops = atomic_load(&osd->io_ops[0]);
	b.io.write_ops = atomic_load(&osd->io_ops[1]);
	b.io.read_bytes = atomic_load(&osd->io_bytes[0]);
	b.io.write_bytes = atomic_load(&osd->io_bytes[1]);
	b.io.recovery_objects = atomic_load(&osd->io_rec_objects);
	b.io.recovery_bytes = atomic_load(&osd->io_rec_bytes);
	osd_metrics_beacon(osd, &b, have_sf ? &sf : NULL);
	/* Only on an open session: a beacon queued meanwhile would go late,
	 * with a burst of others.  The lease counts from here, the first
	 * send (heartbeat.c's header): never later than the monitor saw it. */
	if (osd->monc && osd->booted && monc_is_open(osd->monc)) {
		struct beacon_ctx *ctx = malloc(sizeof(*ctx));

		enc_init(&e);
		osd_beacon_encode(&b, &e);
		m = msg_new(MT_OSD_BEACON, &e);
		enc_free(&e);
		if (ctx && m) {
			ctx->osd = osd;
			ctx->sent_ms = mono_now_ms();
			/* once: after a switch of monitor the next beacon goes */
			if (monc_call(osd->monc, m, (uint32_t)osd->hb_grace_ms, MONC_CALL_ONCE,
				      beacon_reply, ctx) < 0)
				free(ctx);
		} else {
			free(ctx);
			msg_free(m);
		}
	}
	free(b.pgs);
	free(b.slow);
}

static void hb_tick(void *arg)
{
	struct osd *osd = arg;

	if (osd->stopping || atomic_load(&osd->closing))
		return;
	ping_all(osd);
	osd_hb_beacon(osd);
	osd->hb_timer = msgr_timer(osd->msgr, (uint32_t)osd->hb_interval_ms, hb_tick, osd);
}

void osd_hb_start(struct osd *osd)
{
	osd->hb_timer = msgr_timer(osd->msgr, (uint32_t)osd->hb_interval_ms, hb_tick, osd);
}
