/*
 * cli_scrub.c - `atoll pg scrub|deep-scrub|repair PGID|POOL` and `atoll osd
 * scrub N [--deep]`: asks a PG's primary to scrub the PG (shallow: the
 * copies' metadata; deep: their data too; repair: deep, and fix), and
 * prints what it found.  `osd scrub N` scrubs the PGs whose primary is
 * osd.N, one after the other: the PGs it only holds copies of are
 * scrubbed by their own primaries' schedules (doc/scrub.md).
 *
 * The PGs and their primaries come from the monitor (`pg ls`), the OSDs'
 * addresses from the map (`osd dump`); then each primary gets one
 * MT_OSD_SCRUB through the messenger (cli_call.h) and answers when the
 * scrub is over.  A primary that is not one any more (-ESTALE), a PG busy
 * recovering (-EBUSY) or peering (-EAGAIN) is asked again, with a fresh
 * map, for up to SCRUB_RETRY_S seconds (a PG busy with another scrub is
 * asked again sooner: scrubs are short); the first attempt of every PG
 * uses the one `pg ls` and `osd dump` the command starts with.  Exit status: 0 when every PG is
 * consistent (after repair, with repair), 1 otherwise.
 */
#include "cli_pg.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_call.h"
#include "scrub_proto.h"

#define SCRUB_TIMEOUT_MS	(30u * 60 * 1000)
#define SCRUB_RETRY_S		30
#define SCRUB_BUSY_RETRY_US	200000	/* after -EBUSY */
#define SCRUB_RETRY_US		1000000	/* after the others */

/* One PG's scrub: 0 and the reply, or an -errno worth a retry or not.
 * The first attempt uses the caller's pgs and dump; a retry (the primary
 * moved, or the PG was busy) asks the monitor again. */
static int scrub_one(struct cli *cl, struct cli_msgr *cm, const cJSON *pgs0,
		     const cJSON *dump0, const char *pgid, uint32_t pool, uint32_t pg,
		     bool deep, bool repair, struct osd_scrub_reply *rep)
{
	struct osd_scrub_req req = { .pool = pool, .pg = pg, .repair = repair,
				     .deep = deep || repair };
	time_t until = time(NULL) + SCRUB_RETRY_S;
	int r = -EAGAIN, ret = 0;

	for (int attempt = 0; attempt == 0 || time(NULL) < until; attempt++) {
		cJSON *pgs = NULL, *dump = NULL;
		const char *addr = NULL;
		struct msg *reply = NULL;
		struct enc e;
		struct dec d;
		int primary;

		if (attempt) {
			usleep(r == -EBUSY ? SCRUB_BUSY_RETRY_US : SCRUB_RETRY_US);
			pgs = cli_pg_mon_json(cl, "pg ls", NULL, &ret);
			dump = pgs ? cli_pg_mon_json(cl, "osd dump", NULL, &ret) : NULL;
			if (!dump) {
				cJSON_Delete(pgs);
				return -EIO;	/* said why */
			}
		}
		primary = cli_pg_primary_of(pgs ? pgs : pgs0, pgid);
		if (primary >= 0)
			addr = cli_pg_osd_addr(dump ? dump : dump0, primary);
		if (addr) {
			enc_init(&e);
			osd_scrub_req_encode(&req, &e);
			r = cli_msgr_call(cm, addr, MT_OSD_SCRUB, &e, SCRUB_TIMEOUT_MS, &reply);
			enc_free(&e);
			if (!r) {
				dec_init(&d, reply->front, reply->front_len);
				r = osd_scrub_reply_decode(&d, rep);
				if (!r)
					r = rep->rc;
				msg_free(reply);
			}
		} else {
			r = -EAGAIN;	/* no primary up yet */
		}
		cJSON_Delete(pgs);
		cJSON_Delete(dump);
		if (!cli_pg_retryable(r))
			return r;
		osd_scrub_reply_clear(rep);
	}
	return r;
}

/* What to scrub: one PG, a pool's PGs, or those osd.N is primary of. */
struct scrub_sel {
	bool deep, repair;
	const char *pgid;	/* one PG */
	const char *pool;	/* a pool's */
	int osd;		/* >= 0: osd scrub N */
};

static bool selected(const struct scrub_sel *sel, const cJSON *p, const char *pgid)
{
	if (sel->pgid)
		return strcmp(pgid, sel->pgid) == 0;
	if (sel->osd >= 0) {
		const cJSON *pr = cJSON_GetObjectItem(p, "primary");

		return cJSON_IsNumber(pr) && pr->valueint == sel->osd;
	}
	return true;
}

static int scrub_pgs(struct cli *cl, const struct scrub_sel *sel);

static int run_scrub(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct scrub_sel sel = { .osd = -1 };

	if (argc != 1)
		return cli_usage(c, "give one PG id (e.g. 1.1a) or one pool name");
	sel.repair = strcmp(c->words, "pg repair") == 0;
	sel.deep = sel.repair || strcmp(c->words, "pg deep-scrub") == 0;
	if (strchr(argv[0], '.'))
		sel.pgid = argv[0];
	else
		sel.pool = argv[0];
	return scrub_pgs(cl, &sel);
}

/* osd scrub N [--deep] */
static int run_osd_scrub(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct scrub_sel sel = { .osd = -1 };
	const char *id = NULL;
	uint64_t v;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--deep") == 0)
			sel.deep = true;
		else if (!id)
			id = argv[i];
		else
			return cli_usage(c, "unexpected argument '%s'", argv[i]);
	}
	if (id && strncmp(id, "osd.", 4) == 0)
		id += 4;
	if (!id || cli_parse_uint(id, INT32_MAX, &v))
		return cli_usage(c, "give one OSD id, e.g. 3 (see: atoll osd tree)");
	sel.osd = (int)v;
	return scrub_pgs(cl, &sel);
}

static int scrub_pgs(struct cli *cl, const struct scrub_sel *sel)
{
	bool one = sel->pgid != NULL;
	struct cli_msgr *cm = NULL;
	cJSON *pgs, *dump, *p, *out = NULL;
	int ret = 0, bad = 0, scrubbed = 0;

	ret = cli_connect(cl);
	if (ret)
		return ret;
	pgs = cli_pg_mon_json(cl, "pg ls", sel->pool, &ret);
	dump = pgs ? cli_pg_mon_json(cl, "osd dump", NULL, &ret) : NULL;
	if (!dump) {
		cJSON_Delete(pgs);
		return ret;
	}
	if (sel->osd >= 0) {
		const cJSON *o;
		bool found = false;

		cJSON_ArrayForEach(o, cJSON_GetObjectItem(dump, "osds")) {
			const cJSON *i = cJSON_GetObjectItem(o, "id");

			found |= cJSON_IsNumber(i) && i->valueint == sel->osd;
		}
		if (!found) {
			cJSON_Delete(pgs);
			cJSON_Delete(dump);
			cli_err("osd.%d does not exist; see: atoll osd tree", sel->osd);
			return CLI_EXIT_NOENT;
		}
		if (!cli_pg_osd_addr(dump, sel->osd)) {
			cJSON_Delete(pgs);
			cJSON_Delete(dump);
			cli_err("osd.%d is down; start it, or scrub its PGs' new primaries with: "
				"atoll pg scrub POOL", sel->osd);
			return CLI_EXIT_ERROR;
		}
	}
	ret = cli_msgr_new(&cm);
	if (ret) {
		cli_err("cannot start a messenger: %s", strerror(-ret));
		cJSON_Delete(pgs);
		cJSON_Delete(dump);
		return CLI_EXIT_ERROR;
	}
	if (cl->json)
		out = cJSON_CreateArray();
	cJSON_ArrayForEach(p, pgs) {
		const char *pgid = cJSON_GetStringValue(cJSON_GetObjectItem(p, "pgid"));
		struct osd_scrub_reply rep;
		uint32_t left = 0;
		int r;

		if (!pgid || !selected(sel, p, pgid))
			continue;
		scrubbed++;
		memset(&rep, 0, sizeof(rep));
		r = scrub_one(cl, cm, pgs, dump, pgid, (uint32_t)cJSON_GetObjectItem(p, "pool")->valueint,
			      (uint32_t)cJSON_GetObjectItem(p, "pg")->valueint, sel->deep,
			      sel->repair, &rep);
		if (r == -EIO) {
			ret = CLI_EXIT_ERROR;
			break;
		}
		for (uint32_t i = 0; i < rep.nerrors; i++)
			left += !rep.errors[i].repaired;
		if (r || left)
			bad++;
		if (out) {
			cJSON *j = cJSON_CreateObject(), *errs;

			cJSON_AddStringToObject(j, "pgid", pgid);
			cJSON_AddNumberToObject(j, "rc", r);
			cJSON_AddNumberToObject(j, "objects", rep.objects);
			errs = cJSON_AddArrayToObject(j, "inconsistent");
			for (uint32_t i = 0; i < rep.nerrors; i++) {
				cJSON *e = cJSON_CreateObject();

				cJSON_AddStringToObject(e, "object", rep.errors[i].oid);
				cJSON_AddNumberToObject(e, "osd", rep.errors[i].osd);
				cJSON_AddStringToObject(e, "error", scrub_kind_name(rep.errors[i].kind));
				cJSON_AddBoolToObject(e, "repaired", rep.errors[i].repaired);
				cJSON_AddItemToArray(errs, e);
			}
			cJSON_AddItemToArray(out, j);
		} else if (r) {
			printf("pg %s: not scrubbed: %s\n", pgid, strerror(-r));
		} else {
			printf("pg %s: %u objects on osd", pgid, rep.objects);
			for (uint8_t i = 0; i < rep.nmembers; i++)
				printf("%s%d", i ? "," : ".", rep.members[i]);
			printf(": %s", rep.nerrors ? "" : "consistent\n");
			if (rep.nerrors)
				printf("%u inconsistent, %u repaired\n", rep.nerrors, rep.nerrors - left);
			for (uint32_t i = 0; i < rep.nerrors; i++)
				printf("  '%s' on osd.%d: %s%s\n", rep.errors[i].oid, rep.errors[i].osd,
				       scrub_kind_name(rep.errors[i].kind),
				       rep.errors[i].repaired ? " (repaired)" : "");
		}
		osd_scrub_reply_clear(&rep);
	}
	if (out) {
		char *s = cJSON_PrintUnformatted(out);

		if (s)
			printf("%s\n", s);
		free(s);
		cJSON_Delete(out);
	}
	cli_msgr_free(cm);
	cJSON_Delete(pgs);
	cJSON_Delete(dump);
	if (ret)
		return ret;
	if (one && !scrubbed) {
		cli_err("there is no PG '%s'; see: atoll pg ls", sel->pgid);
		return CLI_EXIT_NOENT;
	}
	if (sel->osd >= 0 && !scrubbed && !cl->json)
		printf("osd.%d is the primary of no PG\n", sel->osd);
	return bad ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

const struct cli_cmd cli_scrub_cmds[] = {
	{ "pg scrub", "PGID|POOL",
	  "Compares the metadata of every copy of every object of a PG (or of\n"
	  "every PG of a pool): which objects each member has, their sizes,\n"
	  "versions and attributes; no data is read, so it is quick but does\n"
	  "not see damaged data (deep-scrub does).  Prints each copy that is\n"
	  "missing, extra or different; exit status 1 when any is.  PGs are also\n"
	  "scrubbed on a schedule (osd_scrub_interval, default 1 day).\n",
	  run_scrub },
	{ "pg deep-scrub", "PGID|POOL",
	  "Reads every copy of every object of a PG (or of every PG of a pool)\n"
	  "and compares them: size, data, attributes and key/value map.  Prints\n"
	  "each copy that is missing, extra, unreadable or different; exit status\n"
	  "1 when any is.  Writes to the PG wait while it runs.  Also run on a\n"
	  "schedule (osd_deep_scrub_interval, default 7 days).\n",
	  run_scrub },
	{ "pg repair", "PGID|POOL",
	  "A deep scrub that also repairs: every bad copy is replaced by the\n"
	  "primary's (or, when the primary's is the bad one, by a good one).\n",
	  run_scrub },
	{ "osd scrub", "N [--deep]",
	  "Scrubs (--deep: deep-scrubs) every PG whose primary is osd.N, one\n"
	  "after the other, and prints what each found, like pg scrub.\n",
	  run_osd_scrub },
	{ NULL, NULL, NULL, NULL },
};
