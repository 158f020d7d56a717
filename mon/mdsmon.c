/*
 * mdsmon.c - the MDS daemons' roles: which atoll-mds is the active one
 * of each file system, which ones wait as standbys, and the failover.
 *
 * Every atoll-mds beacons (MT_MDS_BEACON) every mds_beacon_interval.  The
 * first one of a file system (its pair of pools) gets the active role by
 * an epoch-numbered grant in the map (struct osdmap_mds); the others are
 * standbys.  An active that stops beaconing for mds_beacon_grace, stops
 * cleanly, or comes back as a new instance of the same name loses the
 * role in one map change that also blocklists its instance (every OSD
 * refuses its reads and writes from that epoch on) and grants the role to
 * a live standby: the new active's ops carry an epoch at least that one,
 * so no OSD serves them before it refuses the old one (doc/fs-design.md,
 * "Standby MDS daemons").
 *
 * When each instance last beaconed is kept here, in memory, not in the
 * map: a monitor that starts (or a new leader) counts every record as
 * heard from when it first looks at it.  Every change goes through
 * mds_commit(), the one call of mon_map_change() in this file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "config.h"
#include "encode.h"
#include "log.h"
#include "mon.h"
#include "msg.h"

#define SUB "mon"
/* a fenced instance stays blocklisted this long (it never comes back:
 * an atoll-mds that finds itself fenced starts over as a new instance) */
#define MDS_FENCE_SECONDS	(24 * 3600)

/* The last beacon of one instance (monitor thread only). */
struct mds_seen {
	uint64_t instance;
	uint64_t last_ms;		/* monotonic */
	uint8_t state;			/* enum mds_beacon_state; 0 = not heard */
	uint64_t jseg, jseq;		/* its place in the journal (the beacon's) */
};

static struct {
	uint64_t grace_ms;		/* mds_beacon_grace */
	struct mds_seen seen[2 * OSDMAP_MDS_MAX];
	size_t nseen;
} g = { .grace_ms = 3000 };

int mon_mds_init(struct mon *mon, char *err, size_t errlen)
{
	int r = config_get_duration_ms(mon->cfg, "mon", "mds_beacon_grace", 3000,
				       &g.grace_ms, err, errlen);

	if (r < 0)
		return r;
	if (g.grace_ms < 100) {
		snprintf(err, errlen, "mds_beacon_grace (%llu ms) is below 100 ms; use e.g. "
			 "mds_beacon_grace = 3s", (unsigned long long)g.grace_ms);
		return -EINVAL;
	}
	return 0;
}

void mon_mds_takeover(struct mon *mon)
{
	(void)mon;
	/* beacons go to the leader only: what this monitor heard in an
	 * earlier term of its own is stale, and every instance counts as
	 * heard from now, like on a monitor that never led */
	g.nseen = 0;
}

/* The record of instance (made "heard now" when new to this monitor). */
static struct mds_seen *seen_get(uint64_t instance, uint64_t now)
{
	for (size_t i = 0; i < g.nseen; i++)
		if (g.seen[i].instance == instance)
			return &g.seen[i];
	if (g.nseen == sizeof(g.seen) / sizeof(g.seen[0]))
		g.seen[0] = g.seen[--g.nseen];	/* the oldest goes */
	g.seen[g.nseen] = (struct mds_seen){ .instance = instance, .last_ms = now };
	return &g.seen[g.nseen++];
}

/* Forgets instances the map no longer has. */
static void seen_prune(const struct osdmap *m)
{
	size_t j = 0;

	for (size_t i = 0; i < g.nseen; i++)
		if (osdmap_mds_find(m, g.seen[i].instance))
			g.seen[j++] = g.seen[i];
	g.nseen = j;
}

static const char *seen_state_name(uint8_t s)
{
	switch (s) {
	case MDS_BEACON_STANDBY: return "standby";
	case MDS_BEACON_REPLAYING: return "replaying";
	case MDS_BEACON_RECONNECT: return "reconnect";
	case MDS_BEACON_ACTIVE: return "active";
	default: return "unknown";
	}
}

/* A working copy of the map's MDS list, and the instances to fence. */
struct mds_work {
	struct osdmap_mds l[OSDMAP_MDS_MAX];
	uint32_t n;
	uint64_t fence[OSDMAP_MDS_MAX + 1];
	uint32_t nfence;
	bool changed;
};

static void work_remove(struct mds_work *w, uint32_t i, const char *why)
{
	const struct osdmap_mds *d = &w->l[i];

	if (d->state == OSDMAP_MDS_ACTIVE) {
		log_warn(SUB, "mds.%s (client.%" PRIu64 ") loses the active role: %s; it is "
			 "blocklisted", d->name, d->instance, why);
		w->fence[w->nfence++] = d->instance;
	} else {
		log_info(SUB, "mds.%s (client.%" PRIu64 ") is no longer a standby: %s", d->name,
			 d->instance, why);
	}
	w->l[i] = w->l[--w->n];
	w->changed = true;
}

/* Every file system without an active gets a live standby promoted: one
 * this monitor heard a beacon from, if any (after a monitor start the
 * records of the map count as heard, though their daemons may be gone). */
static void work_promote(struct mds_work *w, uint64_t now)
{
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < w->n; i++) {
			struct osdmap_mds *d = &w->l[i];
			const struct mds_seen *s;
			bool has_active = false;

			if (d->state != OSDMAP_MDS_STANDBY)
				continue;
			for (uint32_t j = 0; j < w->n; j++)
				has_active |= w->l[j].state == OSDMAP_MDS_ACTIVE &&
					      w->l[j].meta_pool == d->meta_pool &&
					      w->l[j].data_pool == d->data_pool;
			s = seen_get(d->instance, now);
			if (has_active || now - s->last_ms > g.grace_ms || (pass == 0 && !s->state))
				continue;
			d->state = OSDMAP_MDS_ACTIVE;
			d->grant_epoch = 0;	/* this change's epoch (osdmap_apply) */
			w->changed = true;
			log_info(SUB, "mds.%s (client.%" PRIu64 ") gets the active role of pools "
				 "%u/%u", d->name, d->instance, d->meta_pool, d->data_pool);
		}
}

/* THE map change of this file: the new MDS list, plus a blocklist entry
 * for every fenced instance, in one epoch.  0 and the epoch, or an error
 * (the map is unchanged). */
static int mds_commit(struct mon *mon, const struct mds_work *w, uint64_t *epoch)
{
	const struct osdmap *m = mon->map;
	struct osdmap_blocklist *bl = NULL;
	struct osdmap_inc inc;
	uint64_t wall = mon_wall_ms();
	uint32_t nbl = 0;
	int r;

	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_mds(&inc, w->l, w->n);
	if (r == 0 && w->nfence) {
		bl = calloc((size_t)m->nblocklist + w->nfence, sizeof(*bl));
		if (!bl) {
			r = -ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < m->nblocklist; i++) {
			bool dup = false;

			for (uint32_t k = 0; k < w->nfence; k++)
				dup |= m->blocklist[i].client == w->fence[k];
			if (m->blocklist[i].until_ms > wall && !dup)
				bl[nbl++] = m->blocklist[i];
		}
		for (uint32_t k = 0; k < w->nfence; k++)
			bl[nbl++] = (struct osdmap_blocklist){
				.client = w->fence[k],
				.until_ms = wall + MDS_FENCE_SECONDS * 1000ull };
		r = nbl > OSDMAP_BLOCKLIST_MAX ? -E2BIG : osdmap_inc_set_blocklist(&inc, bl, nbl);
	}
	if (r == 0) {
		free(bl);	/* the increment holds its own copy */
		/* the one path of every map change (mapchange.c) */
		return mon_map_change(mon, &inc, epoch);
	}
out:
	free(bl);
	osdmap_inc_clear(&inc);
	return r;
}

/* Takes beacon b (NULL: only the timers), expires the silent, promotes
 * standbys, and commits what changed.  The map's epoch after it in
 * *epoch. */
static int mds_update(struct mon *mon, const struct mds_beacon *b, uint64_t *epoch)
{
	const struct osdmap *m = mon->map;
	uint64_t now = mono_now_ms();
	struct mds_work *w = calloc(1, sizeof(*w));
	int r = 0;

	if (!w)
		return -ENOMEM;
	w->n = m->nmds;
	memcpy(w->l, m->mds, m->nmds * sizeof(*m->mds));
	if (b) {
		struct mds_seen *s = seen_get(b->instance, now);
		uint32_t i;

		s->last_ms = now;
		s->state = b->state;
		s->jseg = b->jseg;
		s->jseq = b->jseq;
		for (i = 0; i < w->n && w->l[i].instance != b->instance; i++)
			;
		if (i < w->n) {
			if (b->flags & MDS_BEACON_F_STOPPING) {
				work_remove(w, i, "it stops");
			} else if (strcmp(w->l[i].addr, b->addr)) {
				snprintf(w->l[i].addr, sizeof(w->l[i].addr), "%s", b->addr);
				w->changed = true;
			}
		} else if (!(b->flags & MDS_BEACON_F_STOPPING)) {
			/* the same daemon started again: its old instance is gone */
			for (uint32_t j = 0; j < w->n;)
				if (!strcmp(w->l[j].name, b->name))
					work_remove(w, j, "it started again as a new instance");
				else
					j++;
			if (w->n == OSDMAP_MDS_MAX) {
				r = -ENOSPC;
				goto out;
			}
			struct osdmap_mds *d = &w->l[w->n++];
			memset(d, 0, sizeof(*d));
			d->instance = b->instance;
			snprintf(d->name, sizeof(d->name), "%s", b->name);
			snprintf(d->addr, sizeof(d->addr), "%s", b->addr);
			d->meta_pool = b->meta_pool;
			d->data_pool = b->data_pool;
			d->state = OSDMAP_MDS_STANDBY;
			w->changed = true;
			log_info(SUB, "mds.%s (client.%" PRIu64 ") at %s joins as a standby of "
				 "pools %u/%u", d->name, d->instance, d->addr, d->meta_pool,
				 d->data_pool);
		}
	}
	for (uint32_t i = 0; i < w->n;) {
		uint64_t last = seen_get(w->l[i].instance, now)->last_ms;

		if (now - last > g.grace_ms) {
			char why[96];

			snprintf(why, sizeof(why), "no beacon for %llu ms (mds_beacon_grace %llu ms)",
				 (unsigned long long)(now - last), (unsigned long long)g.grace_ms);
			work_remove(w, i, why);
		} else {
			i++;
		}
	}
	work_promote(w, now);
	*epoch = m->epoch;
	if (w->changed)
		r = mds_commit(mon, w, epoch);
	seen_prune(mon->map);
out:
	free(w);
	return r;
}

void mon_handle_mds_beacon(struct mon *mon, struct msg *m)
{
	struct mds_beacon b;
	struct rc_reply rep = { 0, mon->map->epoch };
	struct dec d;
	struct enc e;

	dec_init(&d, m->front, m->front_len);
	rep.rc = mds_beacon_decode(&d, &b);
	if (rep.rc < 0) {
		log_warn(SUB, "malformed MDS beacon from %s", msg_conn_addr(m->conn));
		rep.rc = -EINVAL;
		goto out_reply;
	}
	/* An instance speaks only for itself: its beacons come over the
	 * connection of its cluster handle, whose handshake carried the
	 * instance id, so a client cannot fence the active MDS by beaconing
	 * its name as a new instance.  The identity is declared, not proven,
	 * until authentication: this stops confused peers, not attackers. */
	if (msg_conn_peer(m->conn).id != b.instance) {
		log_warn(SUB, "beacon of mds.%s (client.%" PRIu64 ") from %s refused: the "
			 "connection identified itself with id %" PRIu64, b.name, b.instance,
			 msg_conn_addr(m->conn), msg_conn_peer(m->conn).id);
		rep.rc = -EPERM;
		goto out_reply;
	}
	{
		char who[OSDMAP_MDS_NAME_MAX + 8];

		snprintf(who, sizeof(who), "mds.%s", b.name);
		mon_clock_note(mon, who, b.wall_ms);
	}
	if (osdmap_blocklisted(mon->map, b.instance, mon_wall_ms())) {
		/* fenced: it must never act again; it starts over */
		rep.rc = -ESTALE;
		goto out_reply;
	}
	if (!osdmap_pool(mon->map, b.meta_pool) || !osdmap_pool(mon->map, b.data_pool)) {
		rep.rc = -ENOENT;
		goto out_reply;
	}
	rep.rc = mds_update(mon, &b, &rep.epoch);
	if (rep.rc < 0)
		log_warn(SUB, "the beacon of mds.%s (client.%" PRIu64 ") changed nothing: %s",
			 b.name, b.instance, strerror(-rep.rc));
out_reply:
	enc_init(&e);
	rc_reply_encode(&rep, &e);
	struct msg *r = msg_new(MT_MDS_BEACON, &e);
	enc_free(&e);
	if (r)
		msg_reply(m->conn, m, r);
	msg_free(m);
}

void mon_mds_tick(struct mon *mon)
{
	uint64_t epoch;

	if (mon->map->nmds)
		(void)mds_update(mon, NULL, &epoch);
}

/* ---- mds stat -------------------------------------------------------- */

static cJSON *daemon_json(const struct osdmap_mds *d, uint64_t now)
{
	cJSON *o = cJSON_CreateObject();
	const struct mds_seen *s = NULL;
	char id[32];

	for (size_t i = 0; i < g.nseen; i++)
		if (g.seen[i].instance == d->instance)
			s = &g.seen[i];
	snprintf(id, sizeof(id), "%" PRIu64, d->instance);
	cJSON_AddStringToObject(o, "name", d->name);
	cJSON_AddStringToObject(o, "addr", d->addr);
	cJSON_AddStringToObject(o, "instance", id);
	cJSON_AddStringToObject(o, "state", seen_state_name(s ? s->state : 0));
	cJSON_AddNumberToObject(o, "last_beacon_ms", s ? (double)(now - s->last_ms) : -1);
	/* an active's last journaled entry, a standby's last one followed */
	cJSON_AddNumberToObject(o, "journal_segment", s ? (double)s->jseg : 0);
	cJSON_AddNumberToObject(o, "journal_seq", s ? (double)s->jseq : 0);
	return o;
}

static const char *pool_name(const struct osdmap *m, uint32_t id)
{
	const struct osdmap_pool *p = osdmap_pool(m, id);

	return p ? p->name : "?";
}

/* `mds stat`: every file system's active, standbys, grant epoch and what
 * each daemon last said it does. */
int cmd_mds_stat(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap *m = mon->map;
	uint64_t now = mono_now_ms();
	cJSON *fss = NULL;
	bool *done = calloc(m->nmds + 1, sizeof(*done));

	(void)a;
	if (!done)
		return cmd_fail(o, -ENOMEM, "out of memory");
	if (o->json) {
		cJSON_AddNumberToObject(o->j, "epoch", (double)m->epoch);
		cJSON_AddNumberToObject(o->j, "beacon_grace_ms", (double)g.grace_ms);
		fss = cJSON_AddArrayToObject(o->j, "filesystems");
	} else {
		fprintf(o->txt, "epoch %" PRIu64 ", mds_beacon_grace %" PRIu64 " ms\n", m->epoch,
			g.grace_ms);
		if (!m->nmds)
			fprintf(o->txt, "no MDS daemon\n");
	}
	for (uint32_t i = 0; i < m->nmds; i++) {
		const struct osdmap_mds *first = &m->mds[i];
		const struct osdmap_mds *act;
		cJSON *fs = NULL, *sb = NULL;

		if (done[i])
			continue;
		act = osdmap_mds_active(m, first->meta_pool, first->data_pool);
		if (fss) {
			fs = cJSON_CreateObject();
			cJSON_AddStringToObject(fs, "meta_pool", pool_name(m, first->meta_pool));
			cJSON_AddStringToObject(fs, "data_pool", pool_name(m, first->data_pool));
			cJSON_AddNumberToObject(fs, "meta_pool_id", first->meta_pool);
			cJSON_AddNumberToObject(fs, "data_pool_id", first->data_pool);
			cJSON_AddNumberToObject(fs, "grant_epoch", act ? (double)act->grant_epoch : 0);
			if (act)
				cJSON_AddItemToObject(fs, "active", daemon_json(act, now));
			else
				cJSON_AddNullToObject(fs, "active");
			sb = cJSON_AddArrayToObject(fs, "standbys");
			cJSON_AddItemToArray(fss, fs);
		} else {
			fprintf(o->txt, "file system %s+%s: ", pool_name(m, first->meta_pool),
				pool_name(m, first->data_pool));
			if (act) {
				cJSON *j = daemon_json(act, now);
				fprintf(o->txt, "active mds.%s at %s (client.%" PRIu64 ", granted in "
					"epoch %" PRIu64 ", %s, journal %.0f:%.0f)\n", act->name,
					act->addr, act->instance, act->grant_epoch,
					cJSON_GetObjectItem(j, "state")->valuestring,
					cJSON_GetNumberValue(cJSON_GetObjectItem(j, "journal_segment")),
					cJSON_GetNumberValue(cJSON_GetObjectItem(j, "journal_seq")));
				cJSON_Delete(j);
			} else {
				fprintf(o->txt, "no active MDS\n");
			}
		}
		for (uint32_t k = i; k < m->nmds; k++) {
			const struct osdmap_mds *d = &m->mds[k];

			if (d->meta_pool != first->meta_pool || d->data_pool != first->data_pool)
				continue;
			done[k] = true;
			if (d->state != OSDMAP_MDS_STANDBY)
				continue;
			if (sb)
				cJSON_AddItemToArray(sb, daemon_json(d, now));
			else {
				cJSON *j = daemon_json(d, now);
				fprintf(o->txt, "  standby mds.%s at %s (client.%" PRIu64 ", "
					"journal followed to %.0f:%.0f)\n", d->name, d->addr,
					d->instance,
					cJSON_GetNumberValue(cJSON_GetObjectItem(j, "journal_segment")),
					cJSON_GetNumberValue(cJSON_GetObjectItem(j, "journal_seq")));
				cJSON_Delete(j);
			}
		}
	}
	free(done);
	o->rc = 0;
	return 0;
}
