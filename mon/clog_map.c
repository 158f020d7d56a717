/*
 * clog_map.c - the cluster log lines a map change says ("osd.3 down",
 * "pool 'rbd' (id 1) created: size 3, min_size 2, 64 pgs", "flag noout
 * set", and a count of OSDs after any OSD change).
 *
 * Every member makes them when it applies the map change (clog.c), from
 * the map before, the incremental and the map after: a pure function of
 * replicated data with the leader's time in the incremental, so every
 * member appends the same lines with the same seqs, and the lines of a
 * map change can no more be lost than the change itself.  pg_temp
 * changes say nothing (recovery's own bookkeeping; the leader's PG
 * summaries tell the story).  In the mon_entry library so that
 * tests/mon/test_mon_clog.c checks the wording without a monitor.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clog.h"
#include "osdmap.h"

static const struct osdmap_osd *osd_of(const struct osdmap *m, uint32_t id)
{
	static const struct osdmap_osd none;

	return id < m->max_osd ? &m->osds[id] : &none;
}

static void say(mon_clog_add_fn *add, void *arg, uint8_t sev, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void say(mon_clog_add_fn *add, void *arg, uint8_t sev, const char *fmt, ...)
{
	char text[MON_CLOG_TEXT_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	add(arg, sev, text);
}

static void weight_str(uint32_t w, char *buf, size_t len)
{
	snprintf(buf, len, "%.2f", (double)w / OSD_WEIGHT_ONE);
}

/* One OSD record of the change: true when up, in or existence changed
 * (the count line follows). */
static bool describe_osd(const struct osdmap_osd *a, const struct osdmap_osd *b,
			 uint32_t id, mon_clog_add_fn *add, void *arg)
{
	bool existed = a->state & OSD_ST_EXISTS, exists = b->state & OSD_ST_EXISTS;
	bool was_up = existed && (a->state & OSD_ST_UP), up = exists && (b->state & OSD_ST_UP);
	bool was_in = existed && a->reweight > 0, in = exists && b->reweight > 0;
	const uint32_t fullmask = OSD_ST_NEARFULL | OSD_ST_BACKFILLFULL | OSD_ST_FULL;
	bool counts = false;
	char w1[16], w2[16];

	if (!existed && exists) {
		/* an id made by `osd new` has no host or weight until it boots */
		if (b->host[0])
			say(add, arg, MON_CLOG_INF, "osd.%u created on host %s", id, b->host);
		else
			say(add, arg, MON_CLOG_INF, "osd.%u created", id);
		counts = true;
	}
	if (existed && !exists) {
		say(add, arg, MON_CLOG_INF, "osd.%u removed", id);
		return true;
	}
	if (!exists)
		return counts;
	if (!(a->state & OSD_ST_DESTROYED) && (b->state & OSD_ST_DESTROYED))
		say(add, arg, MON_CLOG_WRN, "osd.%u destroyed: its id waits for a new disk", id);
	if (was_up && !up) {
		say(add, arg, MON_CLOG_WRN, "osd.%u down", id);
		counts = true;
	} else if (!was_up && up) {
		say(add, arg, MON_CLOG_INF, "osd.%u up (boot) at %s on host %s", id, b->addr,
		    b->host[0] ? b->host : "?");
		counts = true;
	} else if (was_up && up && a->up_from != b->up_from) {
		say(add, arg, MON_CLOG_WRN, "osd.%u restarted: up again at %s", id, b->addr);
	}
	if (was_in && !in) {
		say(add, arg, MON_CLOG_WRN, "osd.%u out: its data moves to the other OSDs", id);
		counts = true;
	} else if (!was_in && in && existed) {
		say(add, arg, MON_CLOG_INF, "osd.%u in", id);
		counts = true;
	} else if (was_in && in && a->reweight != b->reweight) {
		weight_str(b->reweight, w1, sizeof(w1));
		weight_str(a->reweight, w2, sizeof(w2));
		say(add, arg, MON_CLOG_INF, "osd.%u reweighted to %s (was %s)", id, w1, w2);
	}
	/* the first weight comes with the first boot (its disk's size) */
	if (existed && a->weight && a->weight != b->weight) {
		weight_str(b->weight, w1, sizeof(w1));
		weight_str(a->weight, w2, sizeof(w2));
		say(add, arg, MON_CLOG_INF, "osd.%u weight %s (was %s)", id, w1, w2);
	}
	if (!(a->state & OSD_ST_DRAIN) && (b->state & OSD_ST_DRAIN))
		say(add, arg, MON_CLOG_INF, "osd.%u draining: out, to be removed once empty", id);
	if ((a->state & fullmask) != (b->state & fullmask)) {
		if (b->state & OSD_ST_FULL)
			say(add, arg, MON_CLOG_ERR, "osd.%u full: writes to its PGs are refused", id);
		else if (b->state & OSD_ST_BACKFILLFULL)
			say(add, arg, MON_CLOG_WRN, "osd.%u backfillfull: no backfill to it", id);
		else if (b->state & OSD_ST_NEARFULL)
			say(add, arg, MON_CLOG_WRN, "osd.%u nearfull", id);
		else
			say(add, arg, MON_CLOG_INF, "osd.%u no longer near full", id);
	}
	return counts;
}

static void describe_pool(const struct osdmap_pool *a, const struct osdmap_pool *b,
			  mon_clog_add_fn *add, void *arg)
{
	char what[MON_CLOG_TEXT_MAX + 1];
	size_t off = 0;

	if (!a) {
		say(add, arg, MON_CLOG_INF, "pool '%s' (id %u) created: size %u, min_size %u, "
		    "%u pgs, failure domain %s%s", b->name, b->id, b->size, b->min_size,
		    b->pg_num, b->failure_domain == POOL_FD_OSD ? "osd" : "host",
		    b->flags & POOL_F_COMPRESS ? ", compressed" : "");
		return;
	}
	what[0] = '\0';
#define ADD(...) do { \
		if (off < sizeof(what)) { \
			int k_ = snprintf(what + off, sizeof(what) - off, __VA_ARGS__); \
			if (k_ > 0) \
				off += (size_t)k_; \
		} \
	} while (0)
	if (strcmp(a->name, b->name))
		ADD("%sname '%s'", off ? ", " : "", b->name);
	if (a->size != b->size)
		ADD("%ssize %u (was %u)", off ? ", " : "", b->size, a->size);
	if (a->min_size != b->min_size)
		ADD("%smin_size %u (was %u)", off ? ", " : "", b->min_size, a->min_size);
	if (a->pg_num != b->pg_num)
		ADD("%spg_num %u (was %u)", off ? ", " : "", b->pg_num, a->pg_num);
	if ((a->flags ^ b->flags) & POOL_F_COMPRESS)
		ADD("%scompression %s", off ? ", " : "", b->flags & POOL_F_COMPRESS ? "on" : "off");
	if (a->failure_domain != b->failure_domain)
		ADD("%sfailure domain %s", off ? ", " : "",
		    b->failure_domain == POOL_FD_OSD ? "osd" : "host");
#undef ADD
	if (off)
		say(add, arg, MON_CLOG_INF, "pool '%s' (id %u) changed: %s", a->name, a->id, what);
}

static bool blocked(const struct osdmap *m, uint64_t client)
{
	for (uint32_t i = 0; i < m->nblocklist; i++)
		if (m->blocklist[i].client == client)
			return true;
	return false;
}

static void describe_blocklist(const struct osdmap *a, const struct osdmap *b,
			       mon_clog_add_fn *add, void *arg)
{
	uint32_t added = 0, removed = 0;
	uint64_t first_added = 0;

	for (uint32_t i = 0; i < b->nblocklist; i++)
		if (!blocked(a, b->blocklist[i].client) && !added++)
			first_added = b->blocklist[i].client;
	for (uint32_t i = 0; i < a->nblocklist; i++)
		removed += !blocked(b, a->blocklist[i].client);
	if (added == 1)
		say(add, arg, MON_CLOG_WRN, "client.%llu blocklisted (fenced)",
		    (unsigned long long)first_added);
	else if (added)
		say(add, arg, MON_CLOG_WRN, "%u clients blocklisted (fenced)", added);
	if (removed)
		say(add, arg, MON_CLOG_INF, "%u blocklist entr%s removed", removed,
		    removed == 1 ? "y" : "ies");
}

static const struct osdmap_mds *mds_of(const struct osdmap *m, uint64_t instance)
{
	for (uint32_t i = 0; i < m->nmds; i++)
		if (m->mds[i].instance == instance)
			return &m->mds[i];
	return NULL;
}

static void describe_mds(const struct osdmap *a, const struct osdmap *b,
			 mon_clog_add_fn *add, void *arg)
{
	for (uint32_t i = 0; i < b->nmds; i++) {
		const struct osdmap_mds *n = &b->mds[i], *o = mds_of(a, n->instance);

		if (n->state == OSDMAP_MDS_ACTIVE && (!o || o->state != OSDMAP_MDS_ACTIVE))
			say(add, arg, MON_CLOG_INF, "mds.%s active for the file system of pools "
			    "%u/%u", n->name, n->meta_pool, n->data_pool);
		else if (!o)
			say(add, arg, MON_CLOG_INF, "mds.%s standby", n->name);
	}
	for (uint32_t i = 0; i < a->nmds; i++)
		if (!mds_of(b, a->mds[i].instance))
			say(add, arg, a->mds[i].state == OSDMAP_MDS_ACTIVE ? MON_CLOG_WRN :
			    MON_CLOG_INF, "mds.%s gone%s", a->mds[i].name,
			    a->mds[i].state == OSDMAP_MDS_ACTIVE ? " (was active)" : "");
}

void mon_clog_describe_map(const struct osdmap *old, const struct osdmap_inc *inc,
			   const struct osdmap *new, mon_clog_add_fn *add, void *arg)
{
	bool counts = false;

	if (new->epoch == 1)
		say(add, arg, MON_CLOG_INF, "cluster created (map epoch 1)");
	for (uint32_t i = 0; i < inc->nosds; i++) {
		uint32_t id = inc->osds[i].id;

		counts |= describe_osd(osd_of(old, id), osd_of(new, id), id, add, arg);
	}
	for (uint32_t i = 0; i < inc->npools; i++) {
		const struct osdmap_pool *b = osdmap_pool(new, inc->pools[i].id);

		if (b)
			describe_pool(osdmap_pool(old, b->id), b, add, arg);
	}
	for (uint32_t i = 0; i < inc->nrm_pools; i++) {
		const struct osdmap_pool *a = osdmap_pool(old, inc->rm_pools[i]);

		if (a && !osdmap_pool(new, a->id))
			say(add, arg, MON_CLOG_WRN, "pool '%s' (id %u) deleted", a->name, a->id);
	}
	if (inc->has_flags && (old->flags ^ new->flags) & OSDMAP_F_NOOUT)
		say(add, arg, new->flags & OSDMAP_F_NOOUT ? MON_CLOG_WRN : MON_CLOG_INF,
		    "flag noout %s", new->flags & OSDMAP_F_NOOUT ? "set: down OSDs stay in" :
		    "unset");
	if (inc->has_ratios && (old->nearfull_ratio != new->nearfull_ratio ||
				old->backfillfull_ratio != new->backfillfull_ratio ||
				old->full_ratio != new->full_ratio))
		say(add, arg, MON_CLOG_INF, "full ratios: nearfull %.1f%%, backfillfull %.1f%%, "
		    "full %.1f%%", new->nearfull_ratio / 100.0, new->backfillfull_ratio / 100.0,
		    new->full_ratio / 100.0);
	if (inc->has_blocklist)
		describe_blocklist(old, new, add, arg);
	if (inc->has_mds)
		describe_mds(old, new, add, arg);
	if (counts) {
		uint32_t total = 0, up = 0, in = 0;

		for (uint32_t i = 0; i < new->max_osd; i++) {
			if (!(new->osds[i].state & OSD_ST_EXISTS))
				continue;
			total++;
			up += !!(new->osds[i].state & OSD_ST_UP);
			in += new->osds[i].reweight > 0;
		}
		say(add, arg, MON_CLOG_INF, "osdmap e%llu: %u osds: %u up, %u in",
		    (unsigned long long)new->epoch, total, up, in);
	}
}
