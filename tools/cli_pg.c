/*
 * cli_pg.c - `atoll pg query PGID` and `atoll pg stat`, and what the
 * commands that talk to a PG's primary share with cli_scrub.c.
 *
 * `pg stat` is a monitor command: a summary of the PG statistics the OSDs
 * report.  `pg query` asks the PG's primary itself (MT_OSD_PG_QUERY,
 * lib/scrub_proto.h), since the monitor only knows what the beacons said a
 * moment ago: it finds the primary in `pg ls` and its address in `osd
 * dump`, and asks again with a fresh map while the answer is that the OSD
 * is not the primary any more or cannot be reached (for up to
 * PG_CALL_RETRIES seconds).
 */
#include "cli_pg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_call.h"
#include "scrub_proto.h"

#define PG_QUERY_TIMEOUT_MS	10000u
#define PG_CALL_RETRIES		20

cJSON *cli_pg_mon_json(struct cli *cl, const char *prefix, const char *pool, int *ret)
{
	cJSON *cmd = cJSON_CreateObject(), *j = NULL;
	char *json, *status = NULL, *out = NULL;
	int r;

	cJSON_AddStringToObject(cmd, "prefix", prefix);
	cJSON_AddStringToObject(cmd, "format", "json");
	if (pool)
		cJSON_AddStringToObject(cmd, "pool", pool);
	json = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);
	if (!json) {
		cli_err("out of memory");
		*ret = CLI_EXIT_ERROR;
		return NULL;
	}
	r = atoll_mon_command(cl->c, json, &status, &out, NULL);
	free(json);
	if (r < 0) {
		cli_err("%s", status && *status ? status : atoll_strerror(r));
		*ret = cli_exit_code(r);
	} else if (!(j = cJSON_Parse(out ? out : ""))) {
		cli_err("the monitor's answer to '%s' is not JSON", prefix);
		*ret = CLI_EXIT_ERROR;
	}
	atoll_free(status);
	atoll_free(out);
	return j;
}

const char *cli_pg_osd_addr(const cJSON *dump, int id)
{
	const cJSON *o;

	cJSON_ArrayForEach(o, cJSON_GetObjectItem(dump, "osds")) {
		const cJSON *i = cJSON_GetObjectItem(o, "id");

		if (cJSON_IsNumber(i) && i->valueint == id) {
			if (!cJSON_IsTrue(cJSON_GetObjectItem(o, "up")))
				return NULL;
			return cJSON_GetStringValue(cJSON_GetObjectItem(o, "addr"));
		}
	}
	return NULL;
}

int cli_pg_primary_of(const cJSON *pgs, const char *pgid)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, pgs) {
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(p, "pgid")) ?: "", pgid)) {
			const cJSON *pr = cJSON_GetObjectItem(p, "primary");

			return cJSON_IsNumber(pr) ? pr->valueint : -1;
		}
	}
	return -1;
}

bool cli_pg_retryable(int err)
{
	return err == -ESTALE || err == -EAGAIN || err == -EBUSY || err == -ECONNREFUSED ||
	       err == -ENOTCONN || err == -ECONNRESET;
}

/* ---- pg query ------------------------------------------------------------ */

static int query_once(struct cli_msgr *cm, const char *addr, uint32_t pool, uint32_t pg,
		      struct pg_query_reply *rep)
{
	struct pg_query_req req = { .pool = pool, .pg = pg };
	struct msg *reply = NULL;
	struct enc e;
	struct dec d;
	int r;

	enc_init(&e);
	pg_query_req_encode(&req, &e);
	r = cli_msgr_call(cm, addr, MT_OSD_PG_QUERY, &e, PG_QUERY_TIMEOUT_MS, &reply);
	enc_free(&e);
	if (r)
		return r;
	dec_init(&d, reply->front, reply->front_len);
	r = pg_query_reply_decode(&d, rep);
	msg_free(reply);
	return r ? r : rep->rc;
}

static void ver_str(struct pgq_version v, char *buf, size_t len)
{
	snprintf(buf, len, "%llu'%llu", (unsigned long long)v.epoch, (unsigned long long)v.seq);
}

/* "2026-11-30 14:05:09 UTC (125 s ago)", or "never" */
static void stamp_str(uint64_t s, char *buf, size_t len)
{
	time_t t = (time_t)s, now = time(NULL);
	struct tm tm;
	char when[32];

	if (!s) {
		snprintf(buf, len, "never");
		return;
	}
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(buf, len, "%s (%lld s ago)", when, (long long)(now - t));
}

static cJSON *osds_json(const int32_t *v, uint8_t n)
{
	cJSON *a = cJSON_CreateArray();

	for (uint8_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
	return a;
}

static cJSON *ver_json(struct pgq_version v)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "epoch", (double)v.epoch);
	cJSON_AddNumberToObject(o, "seq", (double)v.seq);
	return o;
}

static void print_query_json(const char *pgid, const struct pg_query_reply *r)
{
	cJSON *j = cJSON_CreateObject(), *a;
	char *s;

	cJSON_AddStringToObject(j, "pgid", pgid);
	cJSON_AddNumberToObject(j, "epoch", (double)r->epoch);
	cJSON_AddStringToObject(j, "state", r->state_name);
	cJSON_AddItemToObject(j, "up", osds_json(r->up, r->nup));
	cJSON_AddItemToObject(j, "acting", osds_json(r->acting, r->nacting));
	cJSON_AddNumberToObject(j, "primary", r->primary);
	cJSON_AddNumberToObject(j, "last_epoch_started", (double)r->last_epoch_started);
	cJSON_AddNumberToObject(j, "same_interval_since", (double)r->same_interval_since);
	cJSON_AddItemToObject(j, "last_update", ver_json(r->last_update));
	cJSON_AddItemToObject(j, "last_complete", ver_json(r->last_complete));
	cJSON_AddItemToObject(j, "log_tail", ver_json(r->log_tail));
	cJSON_AddItemToObject(j, "log_head", ver_json(r->last_update));
	cJSON_AddNumberToObject(j, "log_entries", r->log_entries);
	cJSON_AddNumberToObject(j, "objects", (double)r->objects);
	cJSON_AddNumberToObject(j, "bytes", (double)r->bytes);
	a = cJSON_AddArrayToObject(j, "peers");
	for (uint32_t i = 0; i < r->npeers; i++) {
		const struct pgq_peer *p = &r->peers[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "osd", p->osd);
		cJSON_AddBoolToObject(o, "replied", p->flags & PGQ_PEER_REPLIED);
		cJSON_AddBoolToObject(o, "has_pg", p->flags & PGQ_PEER_HAS_PG);
		if ((p->flags & PGQ_PEER_REPLIED) && (p->flags & PGQ_PEER_HAS_PG)) {
			cJSON_AddItemToObject(o, "last_update", ver_json(p->last_update));
			cJSON_AddItemToObject(o, "last_complete", ver_json(p->last_complete));
			cJSON_AddNumberToObject(o, "last_epoch_started",
						(double)p->last_epoch_started);
		}
		cJSON_AddItemToArray(a, o);
	}
	cJSON_AddNumberToObject(j, "missing", (double)r->missing);
	a = cJSON_AddArrayToObject(j, "recovery");
	for (uint32_t i = 0; i < r->ntargets; i++) {
		const struct pgq_target *t = &r->targets[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "osd", t->osd);
		cJSON_AddStringToObject(o, "kind", t->kind == PGQ_RECOVERY ? "log" : "backfill");
		cJSON_AddBoolToObject(o, "complete", t->complete);
		cJSON_AddNumberToObject(o, "objects_done", (double)t->done);
		cJSON_AddNumberToObject(o, "objects_total", (double)t->todo);
		if (t->kind == PGQ_BACKFILL)
			cJSON_AddStringToObject(o, "backfill_position", t->pos);
		cJSON_AddItemToArray(a, o);
	}
	a = cJSON_AddObjectToObject(j, "scrub");
	cJSON_AddNumberToObject(a, "last_scrub", (double)r->stamps.last_scrub);
	cJSON_AddNumberToObject(a, "last_deep_scrub", (double)r->stamps.last_deep);
	cJSON_AddStringToObject(a, "running", r->scrubbing == 2 ? "deep" :
				r->scrubbing == 1 ? "shallow" : "no");
	cJSON_AddNumberToObject(a, "errors", r->scrub_errors);
	{
		cJSON *b = cJSON_AddArrayToObject(a, "inconsistent");

		for (uint32_t i = 0; i < r->nbad; i++) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddStringToObject(o, "object", r->bad[i].oid);
			cJSON_AddNumberToObject(o, "osd", r->bad[i].osd);
			cJSON_AddStringToObject(o, "error", scrub_kind_name(r->bad[i].kind));
			cJSON_AddItemToArray(b, o);
		}
	}
	s = cJSON_PrintUnformatted(j);
	if (s)
		printf("%s\n", s);
	free(s);
	cJSON_Delete(j);
}

static void print_osds(const char *label, const int32_t *v, uint8_t n)
{
	printf("%s[", label);
	for (uint8_t i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", v[i]);
	printf("]");
}

static void print_query_text(const char *pgid, const struct pg_query_reply *r)
{
	char a[64], b[64], c[64], bytes[32];

	printf("pg %s: %s (osd.%d's view at map epoch %llu)\n", pgid, r->state_name, r->primary,
	       (unsigned long long)r->epoch);
	print_osds("  up ", r->up, r->nup);
	print_osds(", acting ", r->acting, r->nacting);
	printf(", primary osd.%d\n", r->primary);
	printf("  went active in epoch %llu; this interval since epoch %llu\n",
	       (unsigned long long)r->last_epoch_started,
	       (unsigned long long)r->same_interval_since);
	ver_str(r->log_tail, a, sizeof(a));
	ver_str(r->last_update, b, sizeof(b));
	ver_str(r->last_complete, c, sizeof(c));
	printf("  log: tail %s, head (last_update) %s, %u entries; last_complete %s\n", a, b,
	       r->log_entries, c);
	cli_human_bytes((double)r->bytes, bytes, sizeof(bytes));
	printf("  %llu objects, %s\n", (unsigned long long)r->objects, bytes);
	for (uint32_t i = 0; i < r->npeers; i++) {
		const struct pgq_peer *p = &r->peers[i];

		if (!(p->flags & PGQ_PEER_REPLIED)) {
			printf("  peering asked osd.%d: no answer yet\n", p->osd);
		} else if (!(p->flags & PGQ_PEER_HAS_PG)) {
			printf("  peering asked osd.%d: it does not hold the PG\n", p->osd);
		} else {
			ver_str(p->last_update, a, sizeof(a));
			ver_str(p->last_complete, b, sizeof(b));
			printf("  peering asked osd.%d: last_update %s, last_complete %s, went "
			       "active in epoch %llu\n", p->osd, a, b,
			       (unsigned long long)p->last_epoch_started);
		}
	}
	printf("  missing: %llu objects on acting members\n", (unsigned long long)r->missing);
	for (uint32_t i = 0; i < r->ntargets; i++) {
		const struct pgq_target *t = &r->targets[i];

		if (t->kind == PGQ_RECOVERY)
			printf("  recovery of osd.%d from the log: %llu of %llu objects%s\n", t->osd,
			       (unsigned long long)t->done, (unsigned long long)t->todo,
			       t->complete ? " (complete)" : "");
		else
			printf("  backfill of osd.%d: %llu objects copied, position '%s'%s\n",
			       t->osd, (unsigned long long)t->done, t->pos[0] ? t->pos : "(start)",
			       t->complete ? " (complete)" : "");
	}
	if (!r->ntargets)
		printf("  recovery: none running\n");
	stamp_str(r->stamps.last_scrub, a, sizeof(a));
	stamp_str(r->stamps.last_deep, b, sizeof(b));
	printf("  last scrub: %s\n  last deep scrub: %s%s\n", a, b,
	       r->scrubbing == 2 ? "\n  a deep scrub is running" :
	       r->scrubbing == 1 ? "\n  a scrub is running" : "");
	if (r->scrub_errors)
		printf("  %u inconsistent copies; fix with: atoll pg repair %s\n", r->scrub_errors,
		       pgid);
	for (uint32_t i = 0; i < r->nbad; i++)
		printf("    '%s' on osd.%d: %s\n", r->bad[i].oid, r->bad[i].osd,
		       scrub_kind_name(r->bad[i].kind));
}

static int run_pg_query(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct pg_query_reply *rep = NULL;
	struct cli_msgr *cm = NULL;
	unsigned pool, pg;
	char tail;
	int ret, r = -EAGAIN;

	if (argc != 1 || sscanf(argv[0], "%u.%x%c", &pool, &pg, &tail) != 2)
		return cli_usage(c, "give one PG id, e.g. 1.1a (see: atoll pg ls)");
	ret = cli_connect(cl);
	if (ret)
		return ret;
	rep = calloc(1, sizeof(*rep));
	ret = cli_msgr_new(&cm);
	if (ret || !rep) {
		cli_err("cannot start a messenger: %s", strerror(ret ? -ret : ENOMEM));
		free(rep);
		return CLI_EXIT_ERROR;
	}
	for (int attempt = 0; attempt < PG_CALL_RETRIES; attempt++) {
		cJSON *pgs, *dump;
		const char *addr;
		int primary;

		if (attempt)
			sleep(1);
		pgs = cli_pg_mon_json(cl, "pg ls", NULL, &ret);
		dump = pgs ? cli_pg_mon_json(cl, "osd dump", NULL, &ret) : NULL;
		if (!dump) {
			cJSON_Delete(pgs);
			goto out_free;	/* said why */
		}
		primary = cli_pg_primary_of(pgs, argv[0]);
		if (primary < 0 && !attempt) {
			cJSON_Delete(pgs);
			cJSON_Delete(dump);
			cli_err("there is no PG '%s'; see: atoll pg ls", argv[0]);
			ret = CLI_EXIT_NOENT;
			goto out_free;
		}
		addr = primary >= 0 ? cli_pg_osd_addr(dump, primary) : NULL;
		r = addr ? query_once(cm, addr, pool, pg, rep) : -EAGAIN;
		cJSON_Delete(pgs);
		cJSON_Delete(dump);
		if (!cli_pg_retryable(r))
			break;
	}
	if (r) {
		cli_err("pg %s: its primary did not answer: %s; check it with: atoll pg ls, "
			"atoll osd tree", argv[0], strerror(-r));
		ret = CLI_EXIT_ERROR;
		goto out_free;
	}
	if (cl->json)
		print_query_json(argv[0], rep);
	else
		print_query_text(argv[0], rep);
	ret = CLI_EXIT_OK;
out_free:
	cli_msgr_free(cm);
	free(rep);
	return ret;
}

/* ---- pg stat -------------------------------------------------------------- */

static int run_pg_stat(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	char *status = NULL, *out = NULL;
	int ret;

	(void)argv;
	if (argc)
		return cli_usage(c, "pg stat takes no arguments");
	ret = cli_connect(cl);
	if (ret)
		return ret;
	ret = atoll_mon_command(cl->c, cl->json ? "{\"prefix\":\"pg stat\",\"format\":\"json\"}"
				: "{\"prefix\":\"pg stat\"}", &status, &out, NULL);
	if (ret < 0) {
		cli_err("%s", status && *status ? status : atoll_strerror(ret));
		ret = cli_exit_code(ret);
	} else {
		fputs(out ? out : "", stdout);
		if (out && *out && out[strlen(out) - 1] != '\n')
			putchar('\n');
		ret = CLI_EXIT_OK;
	}
	atoll_free(status);
	atoll_free(out);
	return ret;
}

const struct cli_cmd cli_pg_cmds[] = {
	{ "pg stat", "",
	  "One paragraph on all PGs: how many are in each state, the objects\n"
	  "degraded, misplaced and unfound, and the recovery rate.\n",
	  run_pg_stat },
	{ "pg query", "PGID",
	  "Asks the PG's primary OSD directly: its state, up and acting sets, the\n"
	  "epoch it went active, its log's tail and head, what each peer said\n"
	  "while peering, the objects missing, recovery and backfill progress\n"
	  "(with the backfill position), and the scrub stamps and findings.\n",
	  run_pg_query },
	{ NULL, NULL, NULL, NULL },
};
