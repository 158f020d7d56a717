/*
 * cli_scrub.c - `atoll pg deep-scrub|repair PGID|POOL`: asks a PG's primary
 * to deep-scrub the PG (and repair it), and prints what it found.
 *
 * The PGs and their primaries come from the monitor (`pg ls`), the OSDs'
 * addresses from the map (`osd dump`); then each primary gets one
 * MT_OSD_SCRUB through the messenger (cli_call.h) and answers when the
 * scrub is over.  A primary that is not one any more (-ESTALE), a PG busy
 * recovering (-EBUSY) or peering (-EAGAIN) is asked again, with a fresh
 * map, for up to SCRUB_RETRIES seconds; the first attempt of every PG
 * uses the one `pg ls` and `osd dump` the command starts with.  Exit status: 0 when every PG is
 * consistent (after repair, with repair), 1 otherwise.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_call.h"
#include "scrub_proto.h"

#define SCRUB_TIMEOUT_MS	(30u * 60 * 1000)
#define SCRUB_RETRIES		30

/* The JSON output of a monitor command; NULL (and a message) on error. */
static cJSON *mon_json(struct cli *cl, const char *prefix, const char *pool, int *ret)
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

/* osd.id's address from an `osd dump`; NULL when it is not up. */
static const char *osd_addr(const cJSON *dump, int id)
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

/* The primary pg ls names for pgid, or -1. */
static int primary_of(const cJSON *pgs, const char *pgid)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, pgs) {
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(p, "pgid")) ?: "", pgid))
			return cJSON_GetObjectItem(p, "primary")->valueint;
	}
	return -1;
}

/* One PG's scrub: 0 and the reply, or an -errno worth a retry or not.
 * The first attempt uses the caller's pgs and dump; a retry (the primary
 * moved, or the PG was busy) asks the monitor again. */
static int scrub_one(struct cli *cl, struct cli_msgr *cm, const cJSON *pgs0,
		     const cJSON *dump0, const char *pgid, uint32_t pool, uint32_t pg,
		     bool repair, struct osd_scrub_reply *rep)
{
	struct osd_scrub_req req = { .pool = pool, .pg = pg, .repair = repair };
	int r = -EAGAIN, ret = 0;

	for (int attempt = 0; attempt < SCRUB_RETRIES; attempt++) {
		cJSON *pgs = NULL, *dump = NULL;
		const char *addr = NULL;
		struct msg *reply = NULL;
		struct enc e;
		struct dec d;
		int primary;

		if (attempt) {
			sleep(1);
			pgs = mon_json(cl, "pg ls", NULL, &ret);
			dump = pgs ? mon_json(cl, "osd dump", NULL, &ret) : NULL;
			if (!dump) {
				cJSON_Delete(pgs);
				return -EIO;	/* said why */
			}
		}
		primary = primary_of(pgs ? pgs : pgs0, pgid);
		if (primary >= 0)
			addr = osd_addr(dump ? dump : dump0, primary);
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
		if (r != -ESTALE && r != -EAGAIN && r != -EBUSY && r != -ECONNREFUSED &&
		    r != -ENOTCONN && r != -ECONNRESET)
			return r;
		osd_scrub_reply_clear(rep);
	}
	return r;
}

static int run_scrub(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	bool repair = strcmp(c->words, "pg repair") == 0;
	bool one = argc == 1 && strchr(argv[0], '.') != NULL;
	struct cli_msgr *cm = NULL;
	cJSON *pgs, *dump, *p, *out = NULL;
	int ret = 0, bad = 0, scrubbed = 0;

	if (argc != 1)
		return cli_usage(c, "give one PG id (e.g. 1.1a) or one pool name");
	ret = cli_connect(cl);
	if (ret)
		return ret;
	pgs = mon_json(cl, "pg ls", one ? NULL : argv[0], &ret);
	dump = pgs ? mon_json(cl, "osd dump", NULL, &ret) : NULL;
	if (!dump) {
		cJSON_Delete(pgs);
		return ret;
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

		if (!pgid || (one && strcmp(pgid, argv[0])))
			continue;
		scrubbed++;
		memset(&rep, 0, sizeof(rep));
		r = scrub_one(cl, cm, pgs, dump, pgid, (uint32_t)cJSON_GetObjectItem(p, "pool")->valueint,
			      (uint32_t)cJSON_GetObjectItem(p, "pg")->valueint, repair, &rep);
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
		cli_err("there is no PG '%s'; see: atoll pg ls", argv[0]);
		return CLI_EXIT_NOENT;
	}
	return bad ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

const struct cli_cmd cli_scrub_cmds[] = {
	{ "pg deep-scrub", "PGID|POOL",
	  "Reads every copy of every object of a PG (or of every PG of a pool)\n"
	  "and compares them: size, data, attributes and key/value map.  Prints\n"
	  "each copy that is missing, extra, unreadable or different; exit status\n"
	  "1 when any is.  Writes to the PG wait while it runs.\n",
	  run_scrub },
	{ "pg repair", "PGID|POOL",
	  "A deep scrub that also repairs: every bad copy is replaced by the\n"
	  "primary's (or, when the primary's is the bad one, by a good one).\n",
	  run_scrub },
	{ NULL, NULL, NULL, NULL },
};
