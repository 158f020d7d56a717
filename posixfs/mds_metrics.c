/*
 * mds_metrics.c - what atoll-mds exports at /metrics (doc/metrics.md):
 * requests by op with their handling time, sessions and connected
 * clients, leases (the MDS's caps), the journal's and the applier's lag,
 * the metadata cache.
 *
 * The numbers come from mds_status.c's snapshot, which the thread
 * handling requests refreshes after each one under a small lock never
 * held across I/O; the scrape copies it on the metrics thread, so a
 * worker stuck on the cluster does not hold up a scrape, nor a scrape
 * the worker.  Handling times are observed on the handling thread with
 * atomic adds.  One MDS per process: the state is this file's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "mds.h"
#include "mds_metrics.h"
#include "metrics.h"
#include "metrics_http.h"

static struct {
	struct metrics *reg;
	struct metrics_server *srv;
	struct mds *m;
	struct metric *requests[MDS_OP_MAX_], *latency[MDS_OP_MAX_];
	struct metric *malformed, *state, *clients, *sessions, *inodes;
	struct metric *leases, *leases_max, *grants, *revokes, *revoke_timeouts;
	struct metric *jseq, *jdurable, *jlag, *alag;
	struct metric *cache_bytes, *cache_max, *cache_nodes, *hits, *misses, *evictions;
} M;

static void collect(void *arg)
{
	struct mds_status s;
	uint64_t applied;

	(void)arg;
	mds_status_snapshot(&s);
	for (uint32_t op = 1; op < MDS_OP_MAX_ && op < MDS_STATUS_OPS_MAX; op++)
		metric_set(M.requests[op], (int64_t)s.op_count[op]);
	metric_set(M.malformed, (int64_t)s.malformed);
	metric_set(M.state, s.state);
	metric_set(M.clients, s.nclients);
	metric_set(M.sessions, (int64_t)s.sessions);
	metric_set(M.inodes, (int64_t)s.inodes);
	metric_set(M.leases, (int64_t)s.leases);
	metric_set(M.leases_max, (int64_t)s.leases_max);
	metric_set(M.grants, (int64_t)s.grants);
	metric_set(M.revokes, (int64_t)s.revokes);
	metric_set(M.revoke_timeouts, (int64_t)s.revoke_timeouts);
	metric_set(M.jseq, (int64_t)s.j_seq);
	metric_set(M.jdurable, (int64_t)s.j_durable);
	metric_set(M.jlag, s.j_seq > s.j_durable ? (int64_t)(s.j_seq - s.j_durable) : 0);
	if (s.state == MDS_STATE_ACTIVE && M.m) {
		/* aseq is the handling thread's; a word read atomically */
		uint64_t made = __atomic_load_n(&M.m->aseq, __ATOMIC_RELAXED);

		applied = __atomic_load_n(&M.m->applier.applied_aseq, __ATOMIC_ACQUIRE);
		metric_set(M.alag, made > applied ? (int64_t)(made - applied) : 0);
	}
	metric_set(M.cache_bytes, (int64_t)s.cache_bytes);
	metric_set(M.cache_max, (int64_t)s.cache_max);
	metric_set(M.cache_nodes, (int64_t)s.cache_nodes);
	metric_set(M.hits, (int64_t)s.cache_hits);
	metric_set(M.misses, (int64_t)s.cache_misses);
	metric_set(M.evictions, (int64_t)s.cache_evictions);
}

int mds_metrics_start(const struct config *conf, const char *name, struct mds *m,
		      char *err, size_t errlen)
{
	const char *addr = NULL;
	struct metrics *r;
	char who[80];
	int rc;

	snprintf(who, sizeof(who), "mds.%s", name);
	rc = config_get_str(conf, who, "metrics_addr", NULL, &addr, err, errlen);
	if (rc < 0 || !addr || !*addr)
		return rc;
	r = metrics_new();
	if (!r)
		return -ENOMEM;
	M.reg = r;
	M.m = m;
	metric_set(metrics_gauge(r, "atoll_mds_info", "This MDS's name (always 1)",
				 "mds", name, NULL), 1);
	for (uint32_t op = 1; op < MDS_OP_MAX_; op++) {
		M.requests[op] = metrics_counter(r, "atoll_mds_requests_total",
			"Requests answered, by op", "op", mds_op_name(op), NULL);
		M.latency[op] = metrics_histogram(r, "atoll_mds_request_latency_seconds",
			"Time to handle a request (with early replies, journaling "
			"happens after)", metrics_latency_ns_bounds,
			metrics_latency_ns_nbounds, 1e-9, "op", mds_op_name(op), NULL);
	}
	M.malformed = metrics_counter(r, "atoll_mds_malformed_requests_total",
		"Requests that did not decode", NULL);
	M.state = metrics_gauge(r, "atoll_mds_state",
		"0 standby, 1 replaying, 2 active, 3 reconnect (clients' resends only)", NULL);
	M.clients = metrics_gauge(r, "atoll_mds_clients",
		"Connected clients (connections that sent a request)", NULL);
	M.sessions = metrics_gauge(r, "atoll_mds_sessions",
		"Sessions held (mounts that did not unmount, connected or not)", NULL);
	M.inodes = metrics_gauge(r, "atoll_mds_inodes", "Inodes in the namespace", NULL);
	M.leases = metrics_gauge(r, "atoll_mds_leases",
		"Leases (the clients' caps on attributes and directories) held now", NULL);
	M.leases_max = metrics_gauge(r, "atoll_mds_leases_max", "The bound of the lease table", NULL);
	M.grants = metrics_counter(r, "atoll_mds_lease_grants_total",
		"Leases granted or renewed", NULL);
	M.revokes = metrics_counter(r, "atoll_mds_lease_revokes_total",
		"Lease revokes sent (one per client per change)", NULL);
	M.revoke_timeouts = metrics_counter(r, "atoll_mds_lease_revoke_timeouts_total",
		"Revokes neither acknowledged nor closed in time", NULL);
	M.jseq = metrics_gauge(r, "atoll_mds_journal_queued_seq",
		"Sequence number of the last journal entry queued", NULL);
	M.jdurable = metrics_gauge(r, "atoll_mds_journal_durable_seq",
		"Every journal entry up to this sequence number is durable", NULL);
	M.jlag = metrics_gauge(r, "atoll_mds_journal_lag_entries",
		"Journal entries answered (early replies) and not yet durable", NULL);
	M.alag = metrics_gauge(r, "atoll_mds_applier_lag_entries",
		"Changes applied in memory and not yet written to the metadata objects", NULL);
	M.cache_bytes = metrics_gauge(r, "atoll_mds_cache_bytes", "Bytes the metadata cache holds", NULL);
	M.cache_max = metrics_gauge(r, "atoll_mds_cache_max_bytes", "The metadata cache's bound", NULL);
	M.cache_nodes = metrics_gauge(r, "atoll_mds_cache_inodes", "Inodes cached", NULL);
	M.hits = metrics_counter(r, "atoll_mds_cache_hits_total", "Cache lookups that hit", NULL);
	M.misses = metrics_counter(r, "atoll_mds_cache_misses_total",
		"Cache lookups that loaded from the objects", NULL);
	M.evictions = metrics_counter(r, "atoll_mds_cache_evictions_total", "Inodes evicted", NULL);
	rc = metrics_add_process(r, "mds");
	if (rc == 0)
		rc = metrics_on_collect(r, collect, NULL, NULL);
	if (rc == 0)
		rc = metrics_server_start(r, addr, &M.srv, err, errlen);
	if (rc < 0) {
		metrics_free(r);
		memset(&M, 0, sizeof(M));
	}
	return rc;
}

int mds_metrics_add_msgr(struct msgr *msgr)
{
	return M.reg ? metrics_add_msgr(M.reg, msgr) : 0;
}

void mds_metrics_request(uint32_t op, uint64_t ns)
{
	if (M.reg && op > 0 && op < MDS_OP_MAX_)
		metric_observe(M.latency[op], ns);
}

void mds_metrics_stop(void)
{
	metrics_server_stop(M.srv);
	M.srv = NULL;
}
