/*
 * osdmon.c - the OSDs' lifecycle as the monitor sees it: ids for new
 * OSDs, boot (up), beacons (heartbeat + capacity), failure reports,
 * clean stops, and the timers that mark silent OSDs down and long-down
 * OSDs out.
 *
 * Failure detection has two inputs.  Beacons: an up OSD with no beacon
 * for osd_heartbeat_grace is marked down.  Reports from peers: an OSD is
 * marked down at once when OSDs on mon_osd_min_down_reporters distinct
 * other hosts report it (fewer when the cluster has fewer other hosts
 * with OSDs up, never fewer than one; a one-host cluster counts reporter
 * OSDs instead of hosts).  An "immediate" report (connection refused)
 * counts as soon as it arrives; a timed one the reporter sends only after
 * its own grace.  Reports expire after a grace period.
 *
 * Every change goes through mon_map_change(); replies to BOOT and
 * STOPPING are sent only after it returned, i.e. once durable.
 *
 * Who may speak for an OSD: BOOT, BEACON, FAILURE (as the reporter) and
 * STOPPING are taken only from a connection whose handshake said it is
 * that very OSD (MSG_ENTITY_OSD with the id the message names), so a
 * client, or another OSD, cannot mark an OSD up or down by claiming its
 * id.  NEW comes before the OSD has an id (atoll-osd --mkfs): it is taken
 * from any OSD identity, whatever its id.  Requests are refused with
 * -EPERM, one-way messages ignored; both are logged.  With auth =
 * ticket the identity is the proved one and the entity name must be
 * that OSD's (access.c checks the caps before); with auth = none it is
 * declared, which stops mistakes and confused peers, not an attacker.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "mon.h"
#include "pgstats.h"
#include "msg.h"

/* The record of id as inc would leave it (inc's copy, else the map's). */
static struct osdmap_osd osd_rec(struct mon *mon, const struct osdmap_inc *inc, int32_t id)
{
	struct osdmap_osd o;
	const struct osdmap_osd *p;

	for (uint32_t i = 0; inc && i < inc->nosds; i++)
		if ((int32_t)inc->osds[i].id == id)
			return inc->osds[i];
	p = osdmap_osd(mon->map, id);
	if (p)
		return *p;
	memset(&o, 0, sizeof(o));
	o.id = (uint32_t)id;
	return o;
}

static bool osd_exists(const struct osdmap_osd *o)
{
	return o && (o->state & OSD_ST_EXISTS);
}

static void reply_front(struct msg *req, uint16_t type, struct enc *e)
{
	struct msg *r = msg_new(type, e);

	if (!r) {
		log_warn("mon", "cannot build a reply to %s", msg_conn_addr(req->conn));
		return;
	}
	msg_reply(req->conn, req, r);
}

static void drop_reports(struct mon *mon, int32_t target)
{
	size_t j = 0;

	for (size_t i = 0; i < mon->nreports; i++)
		if (mon->reports[i].target != target && mon->reports[i].reporter != target)
			mon->reports[j++] = mon->reports[i];
	mon->nreports = j;
}

int mon_osd_mark_down(struct mon *mon, struct osdmap_inc *inc, int32_t id)
{
	struct osdmap_osd o = osd_rec(mon, inc, id);

	o.state &= ~OSD_ST_UP;
	o.down_at = mon->map->epoch + 1;
	o.down_stamp_ms = mon_wall_ms();
	mon->osds[id].fencing = false;
	drop_reports(mon, id);
	return osdmap_inc_set_osd(inc, &o);
}

void mon_osd_takeover(struct mon *mon)
{
	uint64_t now = mono_now_ms();
	/* A predecessor may have gone on granting leases, each lasting
	 * osd_lease, for up to two election timeouts after the majority last
	 * heard from it (libraft checks its contact with a majority once per
	 * election timeout); with clocks that drift apart by the bound, every
	 * such lease ends before this (doc/quorum.md, "Leases across a
	 * leader change"). */
	uint64_t hold = (mon->opts.lease_ms + 2 * mon->opts.election_ms) *
			(1000000 + mon->opts.drift_ppm) / 1000000;

	/* every OSD up in the map gets a fresh grace and is assumed to hold a
	 * lease until hold has passed: none is marked down before */
	mon->nreports = 0;
	mon->npgt = 0;		/* pg_temp asks made to a previous leader */
	for (uint32_t i = 0; i < OSDMAP_OSD_MAX; i++) {
		struct mon_osd_info *info = &mon->osds[i];

		info->fencing = false;
		info->lease_until_ms = 0;
		if (i < mon->map->max_osd && (mon->map->osds[i].state & OSD_ST_UP)) {
			info->last_beacon_ms = now;
			info->lease_until_ms = now + hold;
		}
	}
	log_info("mon", "taking over: OSDs up in epoch %llu may hold leases for %llu ms",
		 (unsigned long long)mon->map->epoch, (unsigned long long)hold);
}

void mon_osd_fini(struct mon *mon)
{
	if (!mon->osds)
		return;
	for (uint32_t i = 0; i < OSDMAP_OSD_MAX; i++)
		free(mon->osds[i].slow);
	free(mon->osds);
	mon->osds = NULL;
	free(mon->reports);
	mon->reports = NULL;
	mon->nreports = 0;
}

/* Whether m's connection is osd.id's own (any_id: any OSD's); logs and
 * returns false when it is not. */
static bool from_osd(const struct msg *m, int32_t id, bool any_id, const char *what)
{
	struct msg_identity p = msg_conn_peer(m->conn);
	static const char *const types[] = { "unknown", "client", "mon", "osd", "mds" };
	const char *type = p.type < sizeof(types) / sizeof(types[0]) ? types[p.type] :
			   "unknown";

	const char *entity = msg_conn_entity(m->conn);
	char want[32];

	/* with auth, the proved entity name too: client.bootstrap-osd's
	 * connection has an OSD identity (for OSD_NEW) but speaks for none */
	snprintf(want, sizeof(want), "osd.%d", id);
	if (*entity && !any_id && strcmp(entity, want)) {
		log_warn("mon", "%s for osd.%d from %s refused: the connection authenticated "
			 "as '%s'; only osd.%d's own key may send it", what, id,
			 msg_conn_addr(m->conn), entity, id);
		return false;
	}
	if (p.type == MSG_ENTITY_OSD && (any_id || (id >= 0 && p.id == (uint64_t)id)))
		return true;
	if (any_id)
		log_warn("mon", "%s from %s refused: the connection identified itself as "
			 "%s.%llu, not as an OSD", what, msg_conn_addr(m->conn), type,
			 (unsigned long long)p.id);
	else
		log_warn("mon", "%s for osd.%d from %s refused: the connection identified "
			 "itself as %s.%llu; only osd.%d's own connection may send it", what,
			 id, msg_conn_addr(m->conn), type, (unsigned long long)p.id, id);
	return false;
}

/* ---- OSD_NEW -------------------------------------------------------- */

static int osd_new(struct mon *mon, const struct osd_new_req *q, int32_t *id)
{
	const struct osdmap *map = mon->map;
	struct osdmap_inc inc;
	struct osdmap_osd o;
	int r;

	for (uint32_t i = 0; i < map->max_osd; i++) {
		if (osd_exists(&map->osds[i]) &&
		    memcmp(map->osds[i].uuid, q->uuid, 16) == 0) {
			/* the same disk asking again: the same id */
			*id = (int32_t)i;
			return 0;
		}
	}
	if (q->want_id >= OSDMAP_OSD_MAX || q->want_id < -1)
		return -EINVAL;
	if (q->want_id >= 0) {
		*id = q->want_id;
		o = osd_rec(mon, NULL, *id);
		if (osd_exists(&o) && (o.state & OSD_ST_UP))
			return -EBUSY;
		/* a replaced disk keeps the id (new uuid, same place), once
		 * the old one was declared gone: atoll osd destroy N */
		if (osd_exists(&o) && !(o.state & OSD_ST_DESTROYED))
			return -EEXIST;
	} else {
		int32_t i;

		for (i = 0; i < OSDMAP_OSD_MAX; i++) {
			const struct osdmap_osd *p = osdmap_osd(map, i);

			if (!osd_exists(p))
				break;
		}
		if (i == OSDMAP_OSD_MAX)
			return -ENOSPC;
		*id = i;
		memset(&o, 0, sizeof(o));
		o.id = (uint32_t)i;
	}
	if (!osd_exists(&o)) {
		memset(&o, 0, sizeof(o));
		o.id = (uint32_t)*id;
		o.reweight = OSD_WEIGHT_ONE;	/* in, with weight 0 until it boots */
	}
	o.state = OSD_ST_EXISTS;
	memcpy(o.uuid, q->uuid, 16);
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_osd(&inc, &o);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return r;
	}
	mon->osds[*id].auto_out = false;
	return mon_map_change(mon, &inc, NULL);
}

void mon_handle_osd_new(struct mon *mon, struct msg *m)
{
	struct osd_new_req q;
	struct osd_new_reply rep;
	struct dec d;
	struct enc e;
	int r;

	memset(&rep, 0, sizeof(rep));
	rep.id = -1;
	dec_init(&d, m->front, m->front_len);
	r = osd_new_req_decode(&d, &q);
	if (r == 0 && !from_osd(m, -1, true, "osd new"))
		r = -EPERM;
	if (r == 0)
		r = osd_new(mon, &q, &rep.id);
	rep.rc = r;
	if (r < 0)
		rep.id = -1;
	memcpy(rep.fsid, mon->map->fsid, 16);
	if (r == 0)
		log_info("mon", "osd.%d registered by %s", rep.id, msg_conn_addr(m->conn));
	else
		log_warn("mon", "osd new from %s refused: %s", msg_conn_addr(m->conn),
			 strerror(-r));
	enc_init(&e);
	osd_new_reply_encode(&rep, &e);
	reply_front(m, MT_OSD_NEW, &e);
	enc_free(&e);
	msg_free(m);
}

/* ---- OSD_BOOT ------------------------------------------------------- */

void mon_handle_osd_boot(struct mon *mon, struct msg *m)
{
	struct osd_boot_req q;
	struct osd_boot_reply rep;
	struct osdmap_inc inc;
	struct osdmap_osd o;
	struct dec d;
	struct enc e;
	int r;

	memset(&rep, 0, sizeof(rep));
	dec_init(&d, m->front, m->front_len);
	r = osd_boot_req_decode(&d, &q);
	if (r < 0) {
		snprintf(rep.status, sizeof(rep.status), "malformed boot request");
		goto out_reply;
	}
	if (!from_osd(m, q.id, false, "boot")) {
		r = -EPERM;
		snprintf(rep.status, sizeof(rep.status), "osd.%d boots only over a "
			 "connection made as osd.%d (the messenger identity)", q.id, q.id);
		goto out_reply;
	}
	if (q.id >= 0 && q.id < OSDMAP_OSD_MAX && q.have_epoch > mon->map->epoch) {
		/* the OSD has seen epochs we do not have: our history was rolled
		 * back (an older backup restored).  Checked before anything else:
		 * the OSD may not even exist in our older map. */
		r = -ESTALE;
		mon->osds[q.id].ahead_epoch = q.have_epoch;
		mon->osds[q.id].ahead_ms = mono_now_ms();
		snprintf(rep.status, sizeof(rep.status), "osd.%d has seen map epoch %llu "
			 "but the monitors are at epoch %llu (restored from an older "
			 "backup?); restore the newest backup (doc/admin.md, \"Restoring an "
			 "older backup\")", q.id,
			 (unsigned long long)q.have_epoch, (unsigned long long)mon->map->epoch);
		log_error("mon", "%s", rep.status);
		goto out_reply;
	}
	o = osd_rec(mon, NULL, q.id);
	if (q.id < 0 || q.id >= OSDMAP_OSD_MAX || !osd_exists(&o)) {
		r = -EINVAL;
		snprintf(rep.status, sizeof(rep.status), "osd.%d does not exist in the "
			 "map; create it with: atoll-osd --mkfs --data DIR --mon %s",
			 q.id, mon->addr);
		goto out_reply;
	}
	if (memcmp(o.uuid, q.uuid, 16) != 0) {
		char have[37], want[37];

		r = -EINVAL;
		mon_uuid_format(q.uuid, have);
		mon_uuid_format(o.uuid, want);
		snprintf(rep.status, sizeof(rep.status), "osd.%d in the map is disk %s "
			 "but this store is %s; to replace the disk keeping the id, "
			 "run: atoll-osd --mkfs --id %d", q.id, want, have, q.id);
		goto out_reply;
	}
	o.state |= OSD_ST_UP;
	snprintf(o.addr, sizeof(o.addr), "%s", q.addr);
	if (q.host[0])
		snprintf(o.host, sizeof(o.host), "%s", q.host);
	if (q.weight)
		o.weight = q.weight;
	o.up_from = mon->map->epoch + 1;
	if (mon->osds[q.id].auto_out) {
		/* it was marked out only because it stayed down: back in */
		o.reweight = OSD_WEIGHT_ONE;
		mon->osds[q.id].auto_out = false;
	}
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_osd(&inc, &o);
	if (r == 0) {
		drop_reports(mon, q.id);
		r = mon_map_change(mon, &inc, &rep.epoch);
	} else {
		osdmap_inc_clear(&inc);
	}
	if (r < 0) {
		snprintf(rep.status, sizeof(rep.status), "the monitor could not record "
			 "the boot (%s); retry", strerror(-r));
		goto out_reply;
	}
	mon->osds[q.id].last_beacon_ms = mono_now_ms();
	mon->osds[q.id].fencing = false;
	mon->osds[q.id].ahead_epoch = 0;
	log_info("mon", "osd.%d up at %s host '%s' in epoch %llu", q.id, o.addr,
		 o.host, (unsigned long long)rep.epoch);
out_reply:
	rep.rc = r;
	if (r < 0)
		log_warn("mon", "boot of osd.%d refused: %s", q.id, rep.status);
	enc_init(&e);
	osd_boot_reply_encode(&rep, &e);
	reply_front(m, MT_OSD_BOOT, &e);
	enc_free(&e);
	msg_free(m);
}

/* ---- OSD_BEACON ----------------------------------------------------- */

/* Answers a beacon with a lease while the OSD is up and not being fenced
 * and this leader hears from a majority (a one-way beacon, from an older
 * OSD or a test, gets no answer). */
static void grant_lease(struct mon *mon, const struct msg *m, const struct osdmap_osd *o,
			struct mon_osd_info *info)
{
	struct osd_lease l = { .rc = 0, .epoch = mon->map->epoch,
			       .lease_ms = (uint32_t)mon->opts.lease_ms };
	struct enc e;

	if (!m->tid)
		return;
	if (!(o->state & OSD_ST_UP) || info->fencing) {
		l.rc = -ESTALE;
		l.lease_ms = 0;
	} else if (!mon_quorum_in_contact(mon, mono_now_ms())) {
		/* perhaps cut off from the majority: no lease, the OSD asks
		 * again with its next beacon */
		l.rc = -EAGAIN;
		l.lease_ms = 0;
	} else {
		info->lease_until_ms = info->last_beacon_ms + mon->opts.lease_ms;
	}
	enc_init(&e);
	osd_lease_encode(&l, &e);
	reply_front((struct msg *)m, MT_OSD_BEACON, &e);
	enc_free(&e);
}

static uint32_t full_flags(const struct osdmap *map, uint64_t used, uint64_t total)
{
	uint64_t ratio;

	if (!total)
		return 0;
	ratio = used * 10000 / total;
	if (ratio >= map->full_ratio)
		return OSD_ST_FULL | OSD_ST_BACKFILLFULL | OSD_ST_NEARFULL;
	if (ratio >= map->backfillfull_ratio)
		return OSD_ST_BACKFILLFULL | OSD_ST_NEARFULL;
	if (ratio >= map->nearfull_ratio)
		return OSD_ST_NEARFULL;
	return 0;
}

void mon_handle_osd_beacon(struct mon *mon, struct msg *m)
{
	const uint32_t mask = OSD_ST_NEARFULL | OSD_ST_BACKFILLFULL | OSD_ST_FULL;
	struct osd_beacon b;
	struct mon_osd_info *info;
	struct osdmap_osd o;
	struct dec d;
	uint32_t flags;

	dec_init(&d, m->front, m->front_len);
	if (osd_beacon_decode(&d, &b) < 0) {
		log_warn("mon", "malformed beacon from %s", msg_conn_addr(m->conn));
		goto out_free;
	}
	if (!from_osd(m, b.id, false, "beacon"))
		goto out_clear;
	if (b.id >= 0 && b.id < OSDMAP_OSD_MAX) {
		char who[24];

		snprintf(who, sizeof(who), "osd.%d", b.id);
		mon_clock_note(mon, who, b.wall_ms);
	}
	if (b.id >= 0 && b.id < OSDMAP_OSD_MAX && b.epoch > mon->map->epoch) {
		/* an OSD ahead of our map (our history was rolled back): no lease,
		 * so it stops serving when the one it holds runs out, rather than
		 * serving while we change an older map (MON_EPOCH_BEHIND) */
		if (mon->osds[b.id].ahead_epoch != b.epoch)
			log_error("mon", "osd.%d has seen map epoch %llu but the monitors "
				  "are at epoch %llu (restored from an older backup?); it "
				  "gets no lease", b.id, (unsigned long long)b.epoch,
				  (unsigned long long)mon->map->epoch);
		mon->osds[b.id].ahead_epoch = b.epoch;
		mon->osds[b.id].ahead_ms = mono_now_ms();
		goto out_clear;
	}
	o = osd_rec(mon, NULL, b.id);
	if (b.id < 0 || b.id >= OSDMAP_OSD_MAX || !osd_exists(&o)) {
		log_warn("mon", "beacon from unknown osd.%d at %s", b.id,
			 msg_conn_addr(m->conn));
		goto out_clear;
	}
	info = &mon->osds[b.id];
	info->last_beacon_ms = mono_now_ms();
	grant_lease(mon, m, &o, info);
	info->total = b.total;
	info->used = b.used;
	info->avail = b.avail;
	info->store_errors = b.store_errors;
	info->beacon_epoch = b.epoch;
	free(info->slow);
	info->slow = b.slow;
	info->nslow = b.nslow;
	b.slow = NULL;
	b.nslow = 0;
	mon_pg_update(mon, b.id, b.pgs, b.npg);
	mon_io_note(mon, b.id, &b.io);

	flags = full_flags(mon->map, b.used, b.total);
	if ((o.state & mask) != flags) {
		struct osdmap_inc inc;

		o.state = (o.state & ~mask) | flags;
		osdmap_inc_init(&inc, 0);
		if (osdmap_inc_set_osd(&inc, &o) == 0) {
			log_info("mon", "osd.%d is %s (%llu of %llu bytes used)", b.id,
				 flags & OSD_ST_FULL ? "full" : flags & OSD_ST_BACKFILLFULL ?
				 "backfillfull" : flags ? "nearfull" : "no longer near full",
				 (unsigned long long)b.used, (unsigned long long)b.total);
			mon_map_change(mon, &inc, NULL);
		} else {
			osdmap_inc_clear(&inc);
		}
	}
out_clear:
	osd_beacon_clear(&b);
out_free:
	msg_free(m);
}

/* ---- OSD_FAILURE ---------------------------------------------------- */

/* Distinct hosts (other than the target's) with an up OSD, and whether
 * every up OSD sits on the target's host. */
static uint32_t other_hosts(struct mon *mon, const char *host)
{
	const char *seen[64];
	uint32_t n = 0;

	for (uint32_t i = 0; i < mon->map->max_osd; i++) {
		const struct osdmap_osd *o = &mon->map->osds[i];
		bool dup = false;

		if (!(o->state & OSD_ST_UP) || strcmp(o->host, host) == 0)
			continue;
		for (uint32_t j = 0; j < n && !dup; j++)
			dup = strcmp(seen[j], o->host) == 0;
		if (!dup && n < 64)
			seen[n++] = o->host;
	}
	return n;
}

static bool enough_reports(struct mon *mon, int32_t target)
{
	const struct osdmap_osd *t = osdmap_osd(mon->map, target);
	uint32_t domains = other_hosts(mon, t->host);
	bool by_osd = domains == 0;
	const char *seen[64];
	uint32_t n = 0, need;

	for (size_t i = 0; i < mon->nreports; i++) {
		const struct mon_report *r = &mon->reports[i];
		const struct osdmap_osd *rep;
		const char *key;
		bool dup = false;

		if (r->target != target)
			continue;
		rep = osdmap_osd(mon->map, r->reporter);
		if (!rep || !(rep->state & OSD_ST_UP))
			continue;
		if (by_osd) {
			n++;	/* reporters are distinct per (reporter, target) */
			continue;
		}
		if (strcmp(rep->host, t->host) == 0)
			continue;
		key = rep->host;
		for (uint32_t j = 0; j < n && !dup; j++)
			dup = strcmp(seen[j], key) == 0;
		if (!dup && n < 64)
			seen[n++] = key;
	}
	if (by_osd) {
		/* one host: the other up OSDs are the possible reporters */
		uint32_t up = 0;

		for (uint32_t i = 0; i < mon->map->max_osd; i++)
			if ((mon->map->osds[i].state & OSD_ST_UP) && (int32_t)i != target)
				up++;
		domains = up;
	}
	need = mon->opts.min_down_reporters;
	if (need > domains)
		need = domains;
	if (need < 1)
		need = 1;
	return n >= need;
}

void mon_handle_osd_failure(struct mon *mon, struct msg *m)
{
	struct osd_failure f;
	const struct osdmap_osd *t, *rep;
	struct mon_report *r = NULL;
	struct dec d;

	dec_init(&d, m->front, m->front_len);
	if (osd_failure_decode(&d, &f) < 0) {
		log_warn("mon", "malformed failure report from %s", msg_conn_addr(m->conn));
		goto out_free;
	}
	if (!from_osd(m, f.reporter, false, "failure report"))
		goto out_free;
	t = osdmap_osd(mon->map, f.target);
	rep = osdmap_osd(mon->map, f.reporter);
	if (!t || !(t->state & OSD_ST_UP) || !rep || !(rep->state & OSD_ST_UP) ||
	    f.reporter == f.target)
		goto out_free;
	if (f.epoch && f.epoch < t->up_from)
		goto out_free;	/* about an earlier life of the target */
	for (size_t i = 0; i < mon->nreports; i++)
		if (mon->reports[i].reporter == f.reporter &&
		    mon->reports[i].target == f.target)
			r = &mon->reports[i];
	if (!r) {
		if (mon->nreports == mon->reports_cap) {
			size_t cap = mon->reports_cap ? mon->reports_cap * 2 : 32;
			struct mon_report *n = realloc(mon->reports, cap * sizeof(*n));

			if (!n)
				goto out_free;
			mon->reports = n;
			mon->reports_cap = cap;
		}
		r = &mon->reports[mon->nreports++];
		r->reporter = f.reporter;
		r->target = f.target;
	}
	r->stamp_ms = mono_now_ms();
	r->immediate = f.immediate;
	log_info("mon", "osd.%d reports osd.%d failed (%s)", f.reporter, f.target,
		 f.immediate ? "connection refused" : "no heartbeat");
	if (enough_reports(mon, f.target)) {
		struct mon_osd_info *info = &mon->osds[f.target];
		uint64_t now = mono_now_ms();
		struct osdmap_inc inc;
		uint64_t epoch;

		/* A refused connection means no process listens there: the
		 * OSD is dead and holds no lease.  Otherwise it may be alive
		 * behind a partition, serving reads under its lease: it is
		 * no longer renewed, and the OSD is marked down (a new
		 * interval starts) only once it has run out. */
		if (!f.immediate && now < info->lease_until_ms) {
			if (!info->fencing)
				log_info("mon", "osd.%d reported failed: it is marked down when "
					 "its lease runs out, in %llu ms", f.target,
					 (unsigned long long)(info->lease_until_ms - now));
			info->fencing = true;
			goto out_free;
		}
		osdmap_inc_init(&inc, 0);
		if (mon_osd_mark_down(mon, &inc, f.target) == 0 &&
		    mon_map_change(mon, &inc, &epoch) == 0) {
			log_info("mon", "osd.%d marked down by peer reports in epoch %llu",
				 f.target, (unsigned long long)epoch);
			mon_clog_say(mon, MON_CLOG_WRN, "osd.%d marked down: its peers report it "
				     "failed (%s)", f.target, f.immediate ? "connection refused" :
				     "no heartbeat");
		} else
			osdmap_inc_clear(&inc);
	}
out_free:
	msg_free(m);
}

/* ---- OSD_STOPPING --------------------------------------------------- */

void mon_handle_osd_stopping(struct mon *mon, struct msg *m)
{
	struct osd_stopping s;
	struct rc_reply rep = { 0, 0 };
	const struct osdmap_osd *o;
	struct dec d;
	struct enc e;

	dec_init(&d, m->front, m->front_len);
	rep.rc = osd_stopping_decode(&d, &s);
	if (rep.rc < 0)
		goto out_reply;
	if (!from_osd(m, s.id, false, "stopping")) {
		rep.rc = -EPERM;
		goto out_reply;
	}
	o = osdmap_osd(mon->map, s.id);
	if (!osd_exists(o)) {
		rep.rc = -ENOENT;
		goto out_reply;
	}
	rep.epoch = mon->map->epoch;
	if (o->state & OSD_ST_UP) {
		struct osdmap_inc inc;

		osdmap_inc_init(&inc, 0);
		rep.rc = mon_osd_mark_down(mon, &inc, s.id);
		if (rep.rc == 0)
			rep.rc = mon_map_change(mon, &inc, &rep.epoch);
		else
			osdmap_inc_clear(&inc);
		if (rep.rc == 0) {
			log_info("mon", "osd.%d stopping: down in epoch %llu", s.id,
				 (unsigned long long)rep.epoch);
			mon_clog_say(mon, MON_CLOG_INF, "osd.%d marked itself down: it stops",
				     s.id);
		}
	}
out_reply:
	enc_init(&e);
	rc_reply_encode(&rep, &e);
	reply_front(m, MT_OSD_STOPPING, &e);
	enc_free(&e);
	msg_free(m);
}

/* ---- timers --------------------------------------------------------- */

void mon_osd_tick(struct mon *mon)
{
	const struct osdmap *map = mon->map;
	uint64_t now = mono_now_ms(), wall = mon_wall_ms();
	uint64_t grace = mon->opts.heartbeat_grace_ms;
	struct osdmap_inc inc;
	size_t j = 0;

	/* expire old reports */
	for (size_t i = 0; i < mon->nreports; i++)
		if (now - mon->reports[i].stamp_ms <= grace)
			mon->reports[j++] = mon->reports[i];
	mon->nreports = j;

	osdmap_inc_init(&inc, 0);
	for (uint32_t i = 0; i < map->max_osd && i < OSDMAP_OSD_MAX; i++) {
		const struct osdmap_osd *o = &map->osds[i];
		struct mon_osd_info *info = &mon->osds[i];

		if (!(o->state & OSD_ST_EXISTS))
			continue;
		/* never before a lease we (or a predecessor) may have granted
		 * has run out */
		if ((o->state & OSD_ST_UP) && now < info->lease_until_ms)
			continue;
		if ((o->state & OSD_ST_UP) && now - info->last_beacon_ms > grace) {
			log_info("mon", "osd.%u sent no beacon for %llu ms: marking it down",
				 i, (unsigned long long)(now - info->last_beacon_ms));
			mon_clog_say(mon, MON_CLOG_WRN, "osd.%u marked down: no beacon for %.1f s "
				     "(osd_heartbeat_grace)", i,
				     (double)(now - info->last_beacon_ms) / 1000);
			mon_osd_mark_down(mon, &inc, (int32_t)i);
		} else if ((o->state & OSD_ST_UP) && info->fencing && now >= info->lease_until_ms) {
			log_info("mon", "osd.%u reported failed, and its lease has run out: "
				 "marking it down", i);
			mon_clog_say(mon, MON_CLOG_WRN, "osd.%u marked down: its peers report it "
				     "failed and its lease ran out", i);
			mon_osd_mark_down(mon, &inc, (int32_t)i);
		} else if (!(o->state & OSD_ST_UP) && o->reweight > 0 &&
			   o->down_stamp_ms && !(map->flags & OSDMAP_F_NOOUT) &&
			   wall >= o->down_stamp_ms &&
			   wall - o->down_stamp_ms >= mon->opts.down_out_interval_ms) {
			struct osdmap_osd r = *o;

			log_info("mon", "osd.%u down for %llu s: marking it out", i,
				 (unsigned long long)(wall - o->down_stamp_ms) / 1000);
			mon_clog_say(mon, MON_CLOG_WRN, "osd.%u marked out: down for %llu s "
				     "(mon_osd_down_out_interval)", i,
				     (unsigned long long)(wall - o->down_stamp_ms) / 1000);
			r.reweight = 0;
			info->auto_out = true;
			osdmap_inc_set_osd(&inc, &r);
		}
	}
	if (inc.nosds)
		mon_map_change(mon, &inc, NULL);
	else
		osdmap_inc_clear(&inc);
}
