/*
 * nbd_metrics.c - what atoll-nbd exports at /metrics (doc/metrics.md):
 * connections, requests by command with their time and result, bytes
 * read and written, the bytes of requests in flight.
 *
 * Requests are counted where they complete (a library thread or the
 * reader) with atomic adds on series made at start; the connection
 * count and the budget are words of the server read atomically at the
 * scrape, without its locks, so a scrape never waits behind a client.
 * One server per process: the state is this file's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "metrics.h"
#include "metrics_http.h"
#include "mono.h"
#include "nbd_metrics.h"
#include "nbd_server.h"

/* the commands (nbd_proto.h) counted by name */
static const struct { uint16_t type; const char *name; } cmds[] = {
	{ NBD_CMD_READ, "read" }, { NBD_CMD_WRITE, "write" }, { NBD_CMD_FLUSH, "flush" },
	{ NBD_CMD_TRIM, "trim" }, { NBD_CMD_WRITE_ZEROES, "write_zeroes" },
	{ NBD_CMD_BLOCK_STATUS, "block_status" },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static struct {
	struct metrics *reg;
	struct metrics_server *srv;
	struct nbd_server *nbd;
	struct metric *reqs[NCMDS], *errs[NCMDS], *lat[NCMDS];
	struct metric *read_bytes, *written_bytes;
	struct metric *conns, *accepted, *refused, *inflight, *inflight_max;
} M;

static void collect(void *arg)
{
	struct nbd_server *s = M.nbd;

	(void)arg;
	metric_set(M.conns, __atomic_load_n(&s->nconns, __ATOMIC_RELAXED));
	metric_set(M.accepted, (int64_t)__atomic_load_n(&s->next_conn_id, __ATOMIC_RELAXED));
	metric_set(M.refused, (int64_t)__atomic_load_n(&s->refused_conns, __ATOMIC_RELAXED));
	metric_set(M.inflight, (int64_t)__atomic_load_n(&s->budget_used, __ATOMIC_RELAXED));
	metric_set(M.inflight_max, (int64_t)s->budget_max);
}

int nbd_metrics_start(struct nbd_server *nbd, const char *conf)
{
	struct config *cfg = NULL;
	const char *addr = NULL;
	struct metrics *r = NULL;
	char err[512];
	int ret;

	ret = config_load(&cfg, conf, err, sizeof(err));
	if (ret == 0)
		ret = config_get_str(cfg, "nbd", "metrics_addr", NULL, &addr, err, sizeof(err));
	if (ret < 0)
		goto out_err;
	if (!addr || !*addr) {
		config_free(cfg);
		return 0;
	}
	r = metrics_new();
	if (!r) {
		snprintf(err, sizeof(err), "out of memory");
		goto out_err;
	}
	M.nbd = nbd;
	for (size_t i = 0; i < NCMDS; i++) {
		M.reqs[i] = metrics_counter(r, "atoll_nbd_requests_total",
			"Requests answered, by command", "op", cmds[i].name, NULL);
		M.errs[i] = metrics_counter(r, "atoll_nbd_request_errors_total",
			"Requests answered with an error, by command", "op", cmds[i].name, NULL);
		M.lat[i] = metrics_histogram(r, "atoll_nbd_request_latency_seconds",
			"Time from a request's header to its completion",
			metrics_latency_ns_bounds, metrics_latency_ns_nbounds, 1e-9,
			"op", cmds[i].name, NULL);
	}
	M.read_bytes = metrics_counter(r, "atoll_nbd_read_bytes_total",
		"Bytes returned by reads that succeeded", NULL);
	M.written_bytes = metrics_counter(r, "atoll_nbd_written_bytes_total",
		"Bytes of writes that succeeded", NULL);
	M.conns = metrics_gauge(r, "atoll_nbd_connections",
		"Client connections open (negotiating or serving)", NULL);
	M.accepted = metrics_counter(r, "atoll_nbd_connections_accepted_total",
		"Client connections accepted since start", NULL);
	M.refused = metrics_counter(r, "atoll_nbd_connections_refused_total",
		"Client connections refused past nbd_max_connections", NULL);
	M.inflight = metrics_gauge(r, "atoll_nbd_inflight_bytes",
		"Bytes of requests in flight (write data and read buffers), every connection", NULL);
	M.inflight_max = metrics_gauge(r, "atoll_nbd_inflight_max_bytes",
		"nbd_max_bytes_in_flight", NULL);
	ret = metrics_add_process(r, "nbd");
	if (ret == 0)
		ret = metrics_on_collect(r, collect, NULL, NULL);
	if (ret == 0)
		ret = metrics_server_start(r, addr, &M.srv, err, sizeof(err));
	if (ret < 0)
		goto out_err;
	M.reg = r;
	config_free(cfg);
	return 0;

out_err:
	fprintf(stderr, "atoll-nbd: %s\n", err);
	metrics_free(r);
	config_free(cfg);
	memset(&M, 0, sizeof(M));
	return -1;
}

void nbd_metrics_done(const struct nbd_req *req)
{
	size_t i;

	if (!M.reg)
		return;
	for (i = 0; i < NCMDS && cmds[i].type != req->rq.type; i++)
		;
	if (i == NCMDS)
		return;
	metric_inc(M.reqs[i]);
	metric_observe(M.lat[i], mono_now_ns() - req->t_start);
	if (req->err) {
		metric_inc(M.errs[i]);
	} else if (req->rq.type == NBD_CMD_READ) {
		metric_add(M.read_bytes, req->rq.length);
	} else if (req->rq.type == NBD_CMD_WRITE) {
		metric_add(M.written_bytes, req->rq.length);
	}
}

void nbd_metrics_stop(void)
{
	metrics_server_stop(M.srv);
	M.srv = NULL;
}
