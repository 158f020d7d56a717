/*
 * mon_metrics.c - what a monitor exports at /metrics (doc/metrics.md).
 *
 * Every monitor exports its own place in the quorum (term, commit and
 * applied index, lag, leadership); only the one serving as leader
 * exports the cluster-wide view (health per code, OSDs up and in, pool
 * usage, PG states), since only its view is current: the others' series
 * are hidden, so a scraper of every monitor sees one copy.
 *
 * The monitor thread copies its state into gauges (mon_metrics_tick,
 * mon->lock held) at most once a second; a scrape reads only those
 * atomics and never takes mon->lock, so an open dashboard or a slow
 * scraper cannot delay a proposal or an election.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "metrics_http.h"
#include "mon.h"
#include "mon_metrics.h"
#include "pgstats.h"

#define TICK_MS 1000

/* the families only the leader shows */
static const char *const cluster_families[] = {
	"atoll_health_status", "atoll_health_check", "atoll_cluster_osds",
	"atoll_cluster_osds_up", "atoll_cluster_osds_in", "atoll_cluster_total_bytes",
	"atoll_cluster_used_bytes", "atoll_cluster_osdmap_epoch", "atoll_cluster_pgs",
	"atoll_cluster_pgs_by_state", "atoll_cluster_degraded_objects",
	"atoll_cluster_misplaced_objects", "atoll_cluster_unfound_objects",
	"atoll_cluster_recovered_objects_per_second", "atoll_pool_objects",
	"atoll_pool_stored_bytes", "atoll_pool_pgs",
	"atoll_cluster_client_read_ops_per_second", "atoll_cluster_client_write_ops_per_second",
	"atoll_cluster_client_read_bytes_per_second",
	"atoll_cluster_client_write_bytes_per_second",
	"atoll_cluster_recovered_bytes_per_second", "atoll_cluster_recovery_left_bytes",
	"atoll_mon_member_lag_entries",
};
#define NCLUSTER (sizeof(cluster_families) / sizeof(cluster_families[0]))

/* A series made for a label value seen at a tick (a code, a pool, a PG
 * state): set to 0 at each tick unless seen again. */
struct dyn {
	struct dyn *next;
	char key[168];
	struct metric *m;
	bool seen;
};

struct mon_metrics {
	struct metrics *reg;
	struct metrics_server *srv;
	uint64_t next_ms;
	bool shown;
	struct metric *term, *commit, *applied, *lag, *leader, *members, *epoch;
	struct metric *status, *osds, *up, *in, *total, *used, *cepoch;
	struct metric *pgs, *degraded, *misplaced, *unfound, *rate;
	struct metric *rd_ops, *wr_ops, *rd_bytes, *wr_bytes, *rec_bytes, *rec_left;
	struct metric *clog_seq;
	struct dyn *dyn;
};

/* The series of family for label=value, made once. */
static struct dyn *dyn_get(struct mon_metrics *mm, const char *family, const char *help,
			   const char *label, const char *value)
{
	char key[168];
	struct dyn *d;

	snprintf(key, sizeof(key), "%s/%s", family, value);
	for (d = mm->dyn; d; d = d->next)
		if (!strcmp(d->key, key))
			return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	snprintf(d->key, sizeof(d->key), "%s", key);
	d->m = metrics_gauge(mm->reg, family, help, label, value, NULL);
	d->next = mm->dyn;
	mm->dyn = d;
	return d;
}

static void dyn_set(struct mon_metrics *mm, const char *family, const char *help,
		    const char *label, const char *value, int64_t v)
{
	struct dyn *d = dyn_get(mm, family, help, label, value);

	if (d) {
		metric_set(d->m, v);
		d->seen = true;
	}
}

#define HELP_CHECK "1 when the health check of this code is raised, else 0 (leader only)"
#define HELP_POOL_OBJ "Objects in the pool, from the PGs' last reports (leader only)"
#define HELP_POOL_BYTES "Logical bytes stored in the pool, from the PGs' last reports (leader only)"
#define HELP_POOL_PGS "PGs of the pool (leader only)"
#define HELP_MEMBER_LAG "Log entries committed on the leader that the member has not " \
	"applied, by its last status report (leader only)"
#define HELP_PG_STATE "PGs in each combination of states, as `atoll status` shows them " \
	"(leader only)"

int mon_metrics_start(struct mon *mon, char *err, size_t errlen)
{
	struct mon_metrics *mm;
	struct metrics *r;
	const char *addr = NULL;
	char who[64];
	int rc;

	mon->metrics = NULL;
	snprintf(who, sizeof(who), "mon.%s", mon->self.name);
	rc = config_get_str(mon->cfg, who, "metrics_addr", NULL, &addr, err, errlen);
	if (rc < 0 || !addr || !*addr)
		return rc;
	mm = calloc(1, sizeof(*mm));
	r = metrics_new();
	if (!mm || !r) {
		free(mm);
		metrics_free(r);
		return -ENOMEM;
	}
	mm->reg = r;
	metric_set(metrics_gauge(r, "atoll_mon_info", "This monitor's name (always 1)",
				 "mon", mon->self.name, NULL), 1);
	mm->term = metrics_gauge(r, "atoll_mon_term", "The raft term this monitor is in", NULL);
	mm->commit = metrics_gauge(r, "atoll_mon_commit_index",
		"The index of the last log entry this monitor knows committed", NULL);
	mm->applied = metrics_gauge(r, "atoll_mon_applied_index",
		"The index of the last log entry this monitor applied", NULL);
	mm->lag = metrics_gauge(r, "atoll_mon_apply_lag_entries",
		"Committed log entries this monitor has not applied yet", NULL);
	mm->leader = metrics_gauge(r, "atoll_mon_leader",
		"1 while this monitor serves as the leader, else 0", NULL);
	mm->members = metrics_gauge(r, "atoll_mon_quorum_members",
		"Members of the monitor cluster (raft configuration)", NULL);
	mm->epoch = metrics_gauge(r, "atoll_mon_osdmap_epoch",
		"The OSD map epoch this monitor holds", NULL);
	mm->clog_seq = metrics_gauge(r, "atoll_mon_cluster_log_last_seq",
		"The seq of the last cluster log line this monitor applied", NULL);
	mm->status = metrics_gauge(r, "atoll_health_status",
		"The cluster's health: 0 HEALTH_OK, 1 HEALTH_WARN, 2 HEALTH_ERR (leader only)", NULL);
	/* every health code (mon_health_codes, health.c) is exported as 0
	 * when it does not apply, so an alert rule sees a series either way */
	for (size_t i = 0; mon_health_codes[i]; i++)
		dyn_set(mm, "atoll_health_check", HELP_CHECK, "code", mon_health_codes[i], 0);
	mm->osds = metrics_gauge(r, "atoll_cluster_osds", "OSD ids in the map (leader only)", NULL);
	mm->up = metrics_gauge(r, "atoll_cluster_osds_up", "OSDs up (leader only)", NULL);
	mm->in = metrics_gauge(r, "atoll_cluster_osds_in", "OSDs in (leader only)", NULL);
	mm->total = metrics_gauge(r, "atoll_cluster_total_bytes",
		"Store bytes of the up OSDs, from their beacons (leader only)", NULL);
	mm->used = metrics_gauge(r, "atoll_cluster_used_bytes",
		"Store bytes used on the up OSDs, from their beacons (leader only)", NULL);
	mm->cepoch = metrics_gauge(r, "atoll_cluster_osdmap_epoch",
		"The cluster's OSD map epoch (leader only)", NULL);
	mm->pgs = metrics_gauge(r, "atoll_cluster_pgs", "PGs in the map (leader only)", NULL);
	mm->degraded = metrics_gauge(r, "atoll_cluster_degraded_objects",
		"Object copies acting members lack (leader only)", NULL);
	mm->misplaced = metrics_gauge(r, "atoll_cluster_misplaced_objects",
		"Object copies still to backfill (leader only)", NULL);
	mm->unfound = metrics_gauge(r, "atoll_cluster_unfound_objects",
		"Objects no member has a good copy of (leader only)", NULL);
	mm->rate = metrics_gauge(r, "atoll_cluster_recovered_objects_per_second",
		"Objects recovered per second over the last 30 s (leader only)", NULL);
	mm->rd_ops = metrics_gauge(r, "atoll_cluster_client_read_ops_per_second",
		"Client read ops per second over the last 10 s, from the OSDs' beacons "
		"(leader only)", NULL);
	mm->wr_ops = metrics_gauge(r, "atoll_cluster_client_write_ops_per_second",
		"Client write ops per second over the last 10 s (leader only)", NULL);
	mm->rd_bytes = metrics_gauge(r, "atoll_cluster_client_read_bytes_per_second",
		"Bytes read by clients per second over the last 10 s (leader only)", NULL);
	mm->wr_bytes = metrics_gauge(r, "atoll_cluster_client_write_bytes_per_second",
		"Bytes written by clients per second over the last 10 s (leader only)", NULL);
	mm->rec_bytes = metrics_gauge(r, "atoll_cluster_recovered_bytes_per_second",
		"Bytes recovered or backfilled per second over the last 30 s (leader only)", NULL);
	mm->rec_left = metrics_gauge(r, "atoll_cluster_recovery_left_bytes",
		"Bytes left to recover or backfill, estimated from each PG's mean object size "
		"(leader only)", NULL);
	rc = metrics_add_process(r, "mon");
	if (rc == 0)
		rc = metrics_add_msgr(r, mon->msgr);
	if (rc == 0)
		rc = metrics_server_start(r, addr, &mm->srv, err, errlen);
	if (rc < 0) {
		metrics_free(r);
		free(mm);
		return rc;
	}
	for (size_t i = 0; i < NCLUSTER; i++)
		metrics_show(r, cluster_families[i], false);
	mon->metrics = mm;
	return 0;
}

void mon_metrics_stop(struct mon *mon)
{
	struct mon_metrics *mm = mon->metrics;
	struct dyn *d, *dn;

	if (!mm)
		return;
	metrics_server_stop(mm->srv);
	metrics_free(mm->reg);
	for (d = mm->dyn; d; d = dn) {
		dn = d->next;
		free(d);
	}
	free(mm);
	mon->metrics = NULL;
}

static int sev_of(const char *s)
{
	if (s && !strcmp(s, "HEALTH_OK"))
		return 0;
	if (s && !strcmp(s, "HEALTH_WARN"))
		return 1;
	return 2;
}

/* The cluster-wide view (leader, mon->lock held). */
static void cluster_tick(struct mon *mon, struct mon_metrics *mm)
{
	const struct osdmap *map = mon->map;
	struct mon_pg_summary *s;
	int64_t nosd = 0, up = 0, in = 0, total = 0, used = 0;
	cJSON *h, *c;

	for (struct dyn *d = mm->dyn; d; d = d->next)
		d->seen = false;
	h = mon_health(mon, false);
	if (h) {
		metric_set(mm->status,
			   sev_of(cJSON_GetStringValue(cJSON_GetObjectItem(h, "status"))));
		cJSON_ArrayForEach(c, cJSON_GetObjectItem(h, "checks")) {
			const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(c, "code"));

			if (code)
				dyn_set(mm, "atoll_health_check", HELP_CHECK, "code", code, 1);
		}
		cJSON_Delete(h);
	}
	for (uint32_t i = 0; map && i < map->max_osd; i++) {
		if (!(map->osds[i].state & OSD_ST_EXISTS))
			continue;
		nosd++;
		if (osdmap_osd_up(map, (int32_t)i)) {
			up++;
			total += (int64_t)mon->osds[i].total;
			used += (int64_t)mon->osds[i].used;
		}
		in += osdmap_osd_in(map, (int32_t)i) && map->osds[i].weight > 0;
	}
	metric_set(mm->osds, nosd);
	metric_set(mm->up, up);
	metric_set(mm->in, in);
	metric_set(mm->total, total);
	metric_set(mm->used, used);
	metric_set(mm->cepoch, map ? (int64_t)map->epoch : 0);
	for (size_t i = 0; i < mon->npgpools; i++) {
		const struct mon_pg_pool *pp = &mon->pgpools[i];
		const char *name = NULL;
		int64_t objects = 0, bytes = 0;

		for (uint32_t p = 0; map && p < map->npools; p++)
			if (map->pools[p].id == pp->pool)
				name = map->pools[p].name;
		if (!name)
			continue;	/* deleted: its series drop to 0 below */
		for (uint32_t g = 0; g < pp->pg_num; g++)
			if (pp->pgs[g].reported) {
				objects += (int64_t)pp->pgs[g].st.objects;
				bytes += (int64_t)pp->pgs[g].st.bytes;
			}
		dyn_set(mm, "atoll_pool_objects", HELP_POOL_OBJ, "pool", name, objects);
		dyn_set(mm, "atoll_pool_stored_bytes", HELP_POOL_BYTES, "pool", name, bytes);
		dyn_set(mm, "atoll_pool_pgs", HELP_POOL_PGS, "pool", name, pp->pg_num);
	}
	s = calloc(1, sizeof(*s));
	if (s) {
		mon_pg_summarize(mon, s);
		metric_set(mm->pgs, s->total);
		metric_set(mm->degraded, (int64_t)s->degraded);
		metric_set(mm->misplaced, (int64_t)s->misplaced);
		metric_set(mm->unfound, (int64_t)s->unfound);
		metric_set(mm->rate, (int64_t)s->rate);
		{
			struct mon_io_rates io;

			mon_io_rates(mon, &io);
			metric_set(mm->rd_ops, (int64_t)(io.read_ops_per_s + 0.5));
			metric_set(mm->wr_ops, (int64_t)(io.write_ops_per_s + 0.5));
			metric_set(mm->rd_bytes, (int64_t)io.read_bytes_per_s);
			metric_set(mm->wr_bytes, (int64_t)io.write_bytes_per_s);
			metric_set(mm->rec_bytes, (int64_t)io.recovery_bytes_per_s);
			metric_set(mm->rec_left, (int64_t)io.recovery_left_bytes);
		}
		for (uint32_t i = 0; i < s->nstates && i < PG_SUMMARY_STATES; i++)
			dyn_set(mm, "atoll_cluster_pgs_by_state", HELP_PG_STATE, "state",
				s->states[i].name, s->states[i].n);
		free(s);
	}
	/* each member's distance behind the leader, by the status it sends
	 * five times a second (quorum.c) */
	for (uint32_t i = 0; i < mon->qv.nmembers; i++) {
		const struct mon_qmember *m = &mon->qv.members[i];
		uint64_t applied = m->id == mon->self.id ? mon->qv.applied_index : m->applied;

		dyn_set(mm, "atoll_mon_member_lag_entries", HELP_MEMBER_LAG, "mon",
			m->name[0] ? m->name : "?", mon->qv.commit_index > applied ?
			(int64_t)(mon->qv.commit_index - applied) : 0);
	}
	for (struct dyn *d = mm->dyn; d; d = d->next)
		if (!d->seen)
			metric_set(d->m, 0);
}

void mon_metrics_tick(struct mon *mon)
{
	struct mon_metrics *mm = mon->metrics;
	uint64_t now = mono_now_ms();
	bool leader;

	if (!mm || now < mm->next_ms)
		return;
	mm->next_ms = now + TICK_MS;
	leader = mon->serving && mon->qv.ready;
	metric_set(mm->term, (int64_t)mon->qv.term);
	metric_set(mm->commit, (int64_t)mon->qv.commit_index);
	metric_set(mm->applied, (int64_t)mon->qv.applied_index);
	metric_set(mm->lag, mon->qv.commit_index > mon->qv.applied_index ?
		   (int64_t)(mon->qv.commit_index - mon->qv.applied_index) : 0);
	metric_set(mm->leader, leader);
	metric_set(mm->members, mon->qv.nmembers);
	metric_set(mm->epoch, mon->map ? (int64_t)mon->map->epoch : 0);
	metric_set(mm->clog_seq, (int64_t)(mon->clog.next_seq ? mon->clog.next_seq - 1 : 0));
	if (leader)
		cluster_tick(mon, mm);
	if (leader != mm->shown) {
		for (size_t i = 0; i < NCLUSTER; i++)
			metrics_show(mm->reg, cluster_families[i], leader);
		mm->shown = leader;
	}
}
