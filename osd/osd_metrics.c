/*
 * osd_metrics.c - what an OSD exports at /metrics (doc/metrics.md).
 *
 * Three sources, each read where it is safe: ops are counted when they
 * are answered, on whatever thread answers them, with atomic adds on
 * series created here at start (no lookup, no lock per op); the PG
 * states, recovery, scrub and space figures are copied into gauges by
 * the loop thread each time it builds its beacon for the monitor, so a
 * scrape reads what the monitor was last told and never enters the
 * loop's state; ops in flight, slow ops and queued bytes are atomics
 * and the op list (under ops_lock), read at the scrape.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "metrics.h"
#include "metrics_http.h"
#include "osd_metrics.h"
#include "pg.h"
#include "store.h"

enum { OT_READ, OT_WRITE, OT_NR };
static const char *const op_type[OT_NR] = { "read", "write" };

/* sub-op names by enum osd_opcode (lib/proto.h) */
static const char *const subop_name[] = {
	[OSD_OP_READ] = "read", [OSD_OP_STAT] = "stat", [OSD_OP_WRITE] = "write",
	[OSD_OP_WRITE_FULL] = "write_full", [OSD_OP_APPEND] = "append",
	[OSD_OP_TRUNCATE] = "truncate", [OSD_OP_ZERO] = "zero", [OSD_OP_REMOVE] = "remove",
	[OSD_OP_CREATE] = "create", [OSD_OP_GETXATTR] = "getxattr",
	[OSD_OP_GETXATTRS] = "getxattrs", [OSD_OP_SETXATTR] = "setxattr",
	[OSD_OP_RMXATTR] = "rmxattr", [OSD_OP_CMPXATTR] = "cmpxattr",
	[OSD_OP_ASSERT_VERSION] = "assert_version", [OSD_OP_ASSERT_EXISTS] = "assert_exists",
	[OSD_OP_OMAP_GET] = "omap_get", [OSD_OP_OMAP_GET_KEYS] = "omap_get_keys",
	[OSD_OP_OMAP_SET] = "omap_set", [OSD_OP_OMAP_RM] = "omap_rm",
	[OSD_OP_OMAP_CLEAR] = "omap_clear", [OSD_OP_LIST] = "list",
};
#define SUBOP_NR (sizeof(subop_name) / sizeof(subop_name[0]))

/* PG state bits (lib/proto.h) and their names */
static const char *const pg_state_name[] = {
	"creating", "peering", "active", "clean", "degraded", "undersized", "remapped",
	"recovering", "backfilling", "down", "incomplete", "stale", "inconsistent", "inactive",
};
#define PG_STATE_NR (sizeof(pg_state_name) / sizeof(pg_state_name[0]))

struct osd_metrics {
	struct metrics *reg;
	struct metrics_server *srv;
	struct osd *osd;
	struct metric *ops[OT_NR], *op_errors[OT_NR], *op_latency[OT_NR];
	struct metric *subops[SUBOP_NR];
	struct metric *bytes_read, *bytes_written;
	struct metric *in_flight, *inflight_bytes, *slow, *store_errors;
	struct metric *pg_state[PG_STATE_NR], *pgs_primary;
	struct metric *degraded, *misplaced, *unfound, *scrub_errors;
	struct metric *copied_objects, *copied_bytes;
	struct metric *space_total, *space_used, *stored, *objects;
	struct metric *kv_max, *kv_used, *compressed_saved;
	struct metric *map_epoch, *mapwait[2], *mapwait_refused, *mapwait_expired;
	struct metric *pg_waiting, *rec_active;
};

/* At the scrape (metrics thread): what atomics and the op list say. */
static void collect(void *arg)
{
	struct osd_metrics *om = arg;
	struct osd *osd = om->osd;
	uint64_t now = mono_now_ms();
	int64_t slow = 0;

	metric_set(om->in_flight, atomic_load(&osd->ops_in_flight));
	/* counted once, in the beacon's totals (osd_metrics_op_done) */
	for (int t = 0; t < OT_NR; t++)
		metric_set(om->ops[t], (int64_t)atomic_load(&osd->io_ops[t]));
	metric_set(om->bytes_read, (int64_t)atomic_load(&osd->io_bytes[OT_READ]));
	metric_set(om->bytes_written, (int64_t)atomic_load(&osd->io_bytes[OT_WRITE]));
	metric_set(om->copied_objects, (int64_t)atomic_load(&osd->io_rec_objects));
	metric_set(om->copied_bytes, (int64_t)atomic_load(&osd->io_rec_bytes));
	metric_set(om->inflight_bytes, (int64_t)atomic_load(&osd->inflight_bytes));
	metric_set(om->store_errors, (int64_t)atomic_load(&osd->store_errors));
	pthread_mutex_lock(&osd->ops_lock);
	for (struct osd_op *op = osd->ops_head; op; op = op->gnext)
		if (now - op->start_ms >= osd->complaint_ms)
			slow++;
	pthread_mutex_unlock(&osd->ops_lock);
	metric_set(om->slow, slow);
}

int osd_metrics_start(struct osd *osd, const char *who, char *err, size_t errlen)
{
	const char *addr = NULL;
	struct osd_metrics *om;
	struct metrics *r;
	char id[16];
	int rc;

	osd->metrics = NULL;
	rc = config_get_str(osd->conf, who, "metrics_addr", NULL, &addr, err, errlen);
	if (rc < 0 || !addr || !*addr)
		return rc;
	om = calloc(1, sizeof(*om));
	r = metrics_new();
	if (!om || !r) {
		free(om);
		metrics_free(r);
		return -ENOMEM;
	}
	om->reg = r;
	om->osd = osd;
	snprintf(id, sizeof(id), "%d", osd->whoami);
	for (int t = 0; t < OT_NR; t++) {
		om->ops[t] = metrics_counter(r, "atoll_osd_ops_total",
			"Client ops answered by this OSD as primary, by type (write: any op "
			"with a sub-op that changes the object)", "type", op_type[t], NULL);
		om->op_errors[t] = metrics_counter(r, "atoll_osd_op_errors_total",
			"Client ops answered with an error", "type", op_type[t], NULL);
		om->op_latency[t] = metrics_histogram(r, "atoll_osd_op_latency_seconds",
			"Time from an op's arrival to its answer (writes: durable on every "
			"acting member)", metrics_latency_ns_bounds, metrics_latency_ns_nbounds,
			1e-9, "type", op_type[t], NULL);
	}
	for (unsigned i = 1; i < SUBOP_NR; i++)
		om->subops[i] = metrics_counter(r, "atoll_osd_subops_total",
			"Sub-ops of the client ops answered, by op code", "op", subop_name[i], NULL);
	om->bytes_read = metrics_counter(r, "atoll_osd_read_bytes_total",
		"Object data bytes returned to clients by reads", NULL);
	om->bytes_written = metrics_counter(r, "atoll_osd_written_bytes_total",
		"Object data bytes of client writes that succeeded (as primary; "
		"replication to the other members not counted)", NULL);
	om->in_flight = metrics_gauge(r, "atoll_osd_ops_in_flight",
		"Client ops received and not yet answered (queued or executing)", NULL);
	om->inflight_bytes = metrics_gauge(r, "atoll_osd_write_queue_bytes",
		"Write bytes queued to the store and not yet committed (client and replica)", NULL);
	om->slow = metrics_gauge(r, "atoll_osd_slow_ops",
		"Ops in flight for longer than osd_op_complaint_time", NULL);
	om->store_errors = metrics_counter(r, "atoll_osd_store_errors_total",
		"Checksum and I/O errors the store reported", NULL);
	for (unsigned i = 0; i < PG_STATE_NR; i++)
		om->pg_state[i] = metrics_gauge(r, "atoll_osd_pgs",
			"PGs this OSD is primary of that are in a state (one PG counts in each "
			"of its states)", "state", pg_state_name[i], NULL);
	om->pgs_primary = metrics_gauge(r, "atoll_osd_pgs_primary",
		"PGs this OSD is primary of", NULL);
	om->degraded = metrics_gauge(r, "atoll_osd_recovery_degraded_objects",
		"Object copies acting members lack (left to recover), in this OSD's PGs", NULL);
	om->misplaced = metrics_gauge(r, "atoll_osd_backfill_misplaced_objects",
		"Object copies still to backfill to up members, in this OSD's PGs", NULL);
	om->unfound = metrics_gauge(r, "atoll_osd_unfound_objects",
		"Objects no member has a good copy of, in this OSD's PGs", NULL);
	om->scrub_errors = metrics_gauge(r, "atoll_osd_scrub_errors",
		"Inconsistencies the last deep scrub of this OSD's PGs left unrepaired", NULL);
	om->copied_objects = metrics_counter(r, "atoll_osd_recovery_objects_total",
		"Objects copied whole to or from a peer (recovery, backfill, scrub repair)", NULL);
	om->copied_bytes = metrics_counter(r, "atoll_osd_recovery_bytes_total",
		"Object data bytes of those copies", NULL);
	om->space_total = metrics_gauge(r, "atoll_osd_store_total_bytes",
		"Size of the store's data area", NULL);
	om->space_used = metrics_gauge(r, "atoll_osd_store_used_bytes",
		"Bytes used as the monitor's full ratios see it (the larger of the data "
		"area's and the kv's share)", NULL);
	om->stored = metrics_gauge(r, "atoll_osd_store_stored_bytes",
		"Logical bytes of every object in the store", NULL);
	om->objects = metrics_gauge(r, "atoll_osd_store_objects", "Objects in the store", NULL);
	om->kv_max = metrics_gauge(r, "atoll_osd_store_kv_size_bytes",
		"Size of the store's key-value map (LMDB)", NULL);
	om->kv_used = metrics_gauge(r, "atoll_osd_store_kv_used_bytes",
		"Key-value bytes in use", NULL);
	om->compressed_saved = metrics_gauge(r, "atoll_osd_store_compression_saved_bytes",
		"Bytes compression saved", NULL);
	om->map_epoch = metrics_gauge(r, "atoll_osd_map_epoch", "The OSD's map epoch", NULL);
	om->pg_waiting = metrics_gauge(r, "atoll_osd_pg_waiting_ops",
		"Client ops queued in PGs (for peering, the lease, space or an earlier op "
		"on the same object)", NULL);
	om->rec_active = metrics_gauge(r, "atoll_osd_recovery_active_objects",
		"Objects being copied to or from peers now (osd_recovery_max_active slots in use)",
		NULL);
	om->mapwait[MW_CLIENT] = metrics_gauge(r, "atoll_osd_map_wait_messages",
		"Messages parked until the OSD has the newer map they name", "class", "client", NULL);
	om->mapwait[MW_PEER] = metrics_gauge(r, "atoll_osd_map_wait_messages",
		"Messages parked until the OSD has the newer map they name", "class", "cluster", NULL);
	om->mapwait_refused = metrics_counter(r, "atoll_osd_map_wait_refused_total",
		"Messages refused past the map-wait bounds", NULL);
	om->mapwait_expired = metrics_counter(r, "atoll_osd_map_wait_expired_total",
		"Parked messages let go at osd_map_wait_timeout", NULL);
	metric_set(metrics_gauge(r, "atoll_osd_info", "This OSD's id (always 1)",
				 "osd", id, NULL), 1);
	rc = metrics_add_process(r, "osd");
	if (rc == 0)
		rc = metrics_add_msgr(r, osd->msgr);
	if (rc == 0)
		rc = metrics_on_collect(r, collect, om, NULL);
	if (rc == 0)
		rc = metrics_server_start(r, addr, &om->srv, err, errlen);
	if (rc < 0) {
		metrics_free(r);
		free(om);
		return rc;
	}
	osd->metrics = om;
	return 0;
}

void osd_metrics_stop(struct osd *osd)
{
	struct osd_metrics *om = osd->metrics;

	if (!om)
		return;
	metrics_server_stop(om->srv);
	/* the registry stays: threads still answering ops may count; it
	 * goes with the process */
}

void osd_metrics_op_done(const struct osd_op *op, int result, uint64_t read_bytes)
{
	struct osd_metrics *om = op->osd->metrics;
	int t = op->is_write ? OT_WRITE : OT_READ;
	uint64_t written = 0;

	/* the beacon's counters are kept with metrics off too */
	for (uint32_t i = 0; i < op->req.nops && i < PROTO_OPS_MAX; i++) {
		uint16_t code = op->req.ops[i].code;

		if (code == OSD_OP_WRITE || code == OSD_OP_WRITE_FULL || code == OSD_OP_APPEND)
			written += op->req.ops[i].data_len;
	}
	atomic_fetch_add(&op->osd->io_ops[t], 1);
	if (result >= 0) {
		atomic_fetch_add(&op->osd->io_bytes[OT_READ], read_bytes);
		atomic_fetch_add(&op->osd->io_bytes[OT_WRITE], written);
	}
	if (!om)
		return;
	metric_observe(om->op_latency[t], mono_now_ns() - op->t_recv);
	if (result < 0)
		metric_inc(om->op_errors[t]);
	for (uint32_t i = 0; i < op->req.nops && i < PROTO_OPS_MAX; i++) {
		uint16_t code = op->req.ops[i].code;

		if (code < SUBOP_NR)
			metric_inc(om->subops[code]);
	}
}

void osd_metrics_beacon(struct osd *osd, const struct osd_beacon *b,
			const struct store_statfs *sf)
{
	struct osd_metrics *om = osd->metrics;
	int64_t st[PG_STATE_NR] = {0};
	int64_t degraded = 0, misplaced = 0, unfound = 0, scrub = 0;

	if (!om)
		return;
	for (uint32_t i = 0; i < b->npg; i++) {
		const struct pg_stat *p = &b->pgs[i];

		for (unsigned s = 0; s < PG_STATE_NR; s++)
			if (p->state & (1u << s))
				st[s]++;
		degraded += (int64_t)p->degraded;
		misplaced += (int64_t)p->misplaced;
		unfound += (int64_t)p->unfound;
		scrub += p->scrub_errors;
	}
	for (unsigned s = 0; s < PG_STATE_NR; s++)
		metric_set(om->pg_state[s], st[s]);
	metric_set(om->pgs_primary, b->npg);
	metric_set(om->degraded, degraded);
	metric_set(om->misplaced, misplaced);
	metric_set(om->unfound, unfound);
	metric_set(om->scrub_errors, scrub);
	metric_set(om->map_epoch, (int64_t)b->epoch);
	{
		int64_t waiting = 0;

		for (uint32_t i = 0; i < osd->pg_buckets; i++)
			for (const struct pg *pg = osd->pgs[i]; pg; pg = pg->hnext)
				waiting += pg->nwaiting;
		metric_set(om->pg_waiting, waiting);
	}
	metric_set(om->rec_active, osd->rec_active);
	metric_set(om->mapwait[MW_CLIENT], osd->mw.n[MW_CLIENT]);
	metric_set(om->mapwait[MW_PEER], osd->mw.n[MW_PEER]);
	metric_set(om->mapwait_refused, (int64_t)osd->mw.refused);
	metric_set(om->mapwait_expired, (int64_t)osd->mw.expired);
	if (sf) {
		metric_set(om->space_total, (int64_t)b->total);
		metric_set(om->space_used, (int64_t)b->used);
		metric_set(om->stored, (int64_t)sf->stored);
		metric_set(om->objects, (int64_t)sf->objects);
		metric_set(om->kv_max, (int64_t)sf->kv_max);
		metric_set(om->kv_used, (int64_t)sf->kv_used);
		metric_set(om->compressed_saved, (int64_t)sf->compressed_saved);
	}
}

void osd_metrics_copied(struct osd *osd, uint64_t bytes)
{
	atomic_fetch_add(&osd->io_rec_objects, 1);
	atomic_fetch_add(&osd->io_rec_bytes, bytes);
}
