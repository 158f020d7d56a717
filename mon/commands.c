/*
 * commands.c - the monitor's admin commands (MT_MON_COMMAND): decoding,
 * dispatch, the reply, and the helpers every handler shares.
 *
 * A command is a JSON object {"prefix": "...", args..., "format": ...}
 * (doc/cli.md lists every one).  Each handler reads its arguments with
 * the cmd_arg_* helpers (a missing or mistyped one is -EINVAL with a
 * sentence naming it), changes the map only through mon_map_change()
 * (cmd_map_change), and renders its result itself, as JSON or as plain
 * text: the CLI only prints what comes back, so the two renderings live
 * side by side in each handler.  The handlers live by concept in
 * cmd_status.c, cmd_osd.c and cmd_pool.c; this file keeps the table.
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"
#include "cmd.h"
#include "encode.h"
#include "log.h"
#include "mon.h"
#include "msg.h"

int cmd_fail(struct cmd_out *o, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->status, sizeof(o->status), fmt, ap);
	va_end(ap);
	o->rc = rc;
	return rc;
}

void cmd_say(struct cmd_out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(o->status, sizeof(o->status), fmt, ap);
	va_end(ap);
}

/* ---- arguments ------------------------------------------------------ */

int cmd_arg_str(cJSON *a, const char *name, bool required, const char **out,
		struct cmd_out *o)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(a, name);

	*out = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return cmd_fail(o, -EINVAL, "argument '%s' is missing", name);
		return 0;
	}
	if (!cJSON_IsString(v))
		return cmd_fail(o, -EINVAL, "argument '%s' must be a string", name);
	*out = v->valuestring;
	return 0;
}

/* An integer argument; *present tells whether it was given. */
int cmd_arg_int(cJSON *a, const char *name, int64_t min, int64_t max, int64_t *out,
		bool *present, struct cmd_out *o)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(a, name);
	double d;
	char *end;

	*present = false;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsNumber(v)) {
		d = v->valuedouble;
	} else if (cJSON_IsString(v)) {
		errno = 0;
		d = strtod(v->valuestring, &end);
		if (errno || end == v->valuestring || *end)
			return cmd_fail(o, -EINVAL, "argument '%s': '%s' is not a number",
					name, v->valuestring);
	} else {
		return cmd_fail(o, -EINVAL, "argument '%s' must be a number", name);
	}
	if (d != floor(d) || d < (double)min || d > (double)max)
		return cmd_fail(o, -EINVAL, "argument '%s' must be a whole number from "
				"%lld to %lld", name, (long long)min, (long long)max);
	*out = (int64_t)d;
	*present = true;
	return 0;
}

int cmd_parse_bool(const char *s, bool *out)
{
	if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on") ||
	    !strcmp(s, "1"))
		*out = true;
	else if (!strcasecmp(s, "false") || !strcasecmp(s, "no") ||
		 !strcasecmp(s, "off") || !strcmp(s, "0"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

int cmd_arg_bool(cJSON *a, const char *name, bool def, bool *out, struct cmd_out *o)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(a, name);

	*out = def;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (cJSON_IsBool(v)) {
		*out = cJSON_IsTrue(v);
		return 0;
	}
	if (cJSON_IsString(v) && cmd_parse_bool(v->valuestring, out) == 0)
		return 0;
	return cmd_fail(o, -EINVAL, "argument '%s' must be true or false", name);
}

/* "ids": [1, 2] or 1 or "1". */
int cmd_arg_ids(cJSON *a, int32_t *ids, uint32_t *n, struct cmd_out *o)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "ids"), *it;

	*n = 0;
	if (!v)
		v = cJSON_GetObjectItemCaseSensitive(a, "id");
	if (!v)
		return cmd_fail(o, -EINVAL, "argument 'ids' is missing (a list of OSD ids)");
	if (!cJSON_IsArray(v)) {
		double x = cJSON_IsNumber(v) ? v->valuedouble :
			   cJSON_IsString(v) ? strtod(v->valuestring, NULL) : -1;

		if (x != floor(x) || x < 0 || x >= OSDMAP_OSD_MAX)
			return cmd_fail(o, -EINVAL, "argument 'ids' must hold OSD ids (whole "
					"numbers from 0 to %d)", OSDMAP_OSD_MAX - 1);
		ids[(*n)++] = (int32_t)x;
		return 0;
	}
	cJSON_ArrayForEach(it, v) {
		if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) ||
		    it->valuedouble < 0 || it->valuedouble >= OSDMAP_OSD_MAX)
			return cmd_fail(o, -EINVAL, "argument 'ids' must hold OSD ids (whole "
					"numbers from 0 to %d)", OSDMAP_OSD_MAX - 1);
		if (*n == OSDMAP_OSD_MAX)
			return cmd_fail(o, -EINVAL, "argument 'ids' holds too many ids");
		ids[(*n)++] = (int32_t)it->valuedouble;
	}
	if (!*n)
		return cmd_fail(o, -EINVAL, "argument 'ids' is empty; name at least one OSD");
	return 0;
}

/* ---- small renderers ------------------------------------------------ */

void cmd_human_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)b;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, len, "%.1f %s", v, u[i]);
}

int cmd_map_change(struct mon *mon, struct osdmap_inc *inc, struct cmd_out *o)
{
	uint64_t epoch = 0;
	int r = mon_map_change(mon, inc, &epoch);

	if (r < 0)
		return cmd_fail(o, r == -EIO ? -EIO : r, "the monitor could not record the "
				"change (%s); nothing changed, retry", strerror(-r));
	if (o->json)
		cJSON_AddNumberToObject(o->j, "epoch", (double)epoch);
	else
		fprintf(o->txt, "epoch %llu\n", (unsigned long long)epoch);
	return 0;
}

void cmd_no_change(struct mon *mon, struct cmd_out *o)
{
	if (o->json)
		cJSON_AddNumberToObject(o->j, "epoch", (double)mon->map->epoch);
	else
		fprintf(o->txt, "epoch %llu\n", (unsigned long long)mon->map->epoch);
}

/* ---- dispatch ------------------------------------------------------- */

/* What a command does to the monitor's store: nothing (a read), adds to
 * it (a write, refused while the monitor's disk is low on space), or
 * removes from the cluster or fences a client (a delete or a blocklist:
 * still taken until the last quarter of that space, so that room can be
 * made and an evicted client stays fenced; diskcheck.c). */
enum cmd_kind { CMD_READ, CMD_WRITE, CMD_FREES, CMD_READ_APPLIED };

static const struct {
	const char *prefix;
	int (*fn)(struct mon *mon, cJSON *args, struct cmd_out *o);
	enum cmd_kind kind;
	enum mon_need need;	/* the mon cap it needs (access.c, doc/caps.md) */
} commands[] = {
	{ "status", cmd_status, CMD_READ, MON_NEED_R },
	{ "health", cmd_health, CMD_READ, MON_NEED_R },
	/* clog.c: the cluster log; committed lines never change, so a leader
	 * answers from what it applied, with no barrier (a raft entry) per
	 * poll of every watcher */
	{ "log", cmd_log, CMD_READ_APPLIED, MON_NEED_R },
	{ "osd tree", cmd_osd_tree, CMD_READ, MON_NEED_R },
	{ "osd ls", cmd_osd_ls, CMD_READ, MON_NEED_R },
	{ "osd dump", cmd_osd_dump, CMD_READ, MON_NEED_R },
	{ "osd out", cmd_osd_out, CMD_WRITE, MON_NEED_W },
	{ "osd in", cmd_osd_in, CMD_WRITE, MON_NEED_W },
	{ "osd reweight", cmd_osd_reweight, CMD_WRITE, MON_NEED_W },
	{ "osd set", cmd_osd_set, CMD_WRITE, MON_NEED_W },
	{ "osd unset", cmd_osd_unset, CMD_WRITE, MON_NEED_W },
	{ "osd rm", cmd_osd_rm, CMD_FREES, MON_NEED_ALL },
	{ "osd drain", cmd_osd_drain, CMD_WRITE, MON_NEED_W },
	{ "osd destroy", cmd_osd_destroy, CMD_FREES, MON_NEED_ALL },
	{ "osd map", cmd_osd_map, CMD_READ, MON_NEED_R },	/* cmd_osdmap.c */
	{ "osd what-if", cmd_osd_whatif, CMD_READ, MON_NEED_R },	/* cmd_whatif.c */
	{ "osd blocklist add", cmd_osd_blocklist_add, CMD_FREES, MON_NEED_BLOCKLIST },	/* cmd_blocklist.c */
	{ "osd blocklist rm", cmd_osd_blocklist_rm, CMD_FREES, MON_NEED_BLOCKLIST },
	{ "osd blocklist ls", cmd_osd_blocklist_ls, CMD_READ, MON_NEED_R },
	{ "mds stat", cmd_mds_stat, CMD_READ, MON_NEED_R },	/* mdsmon.c */
	{ "pool create", cmd_pool_create, CMD_WRITE, MON_NEED_W },
	{ "pool ls", cmd_pool_ls, CMD_READ, MON_NEED_R },
	{ "pool rm", cmd_pool_rm, CMD_FREES, MON_NEED_ALL },
	{ "pool get", cmd_pool_get, CMD_READ, MON_NEED_R },
	{ "pool set", cmd_pool_set, CMD_WRITE, MON_NEED_W },
	{ "df", cmd_df, CMD_READ, MON_NEED_R },
	{ "pg ls", cmd_pg_ls, CMD_READ, MON_NEED_R },
	{ "pg stat", cmd_pg_stat, CMD_READ, MON_NEED_R },
	{ "mon backup", cmd_mon_backup, CMD_READ, MON_NEED_ALL },	/* cmd_backup.c */
	{ "quorum status", cmd_quorum_status, CMD_READ, MON_NEED_R },	/* cmd_quorum.c */
	{ "mon stat", cmd_quorum_status, CMD_READ, MON_NEED_R },
	{ "mon add", cmd_mon_add, CMD_WRITE, MON_NEED_ALL },	/* cmd_mon.c */
	{ "mon rm", cmd_mon_rm, CMD_FREES, MON_NEED_ALL },
	{ "auth add", cmd_auth_add, CMD_WRITE, MON_NEED_ALL },	/* cmd_auth.c */
	{ "auth get-or-create", cmd_auth_get_or_create, CMD_WRITE, MON_NEED_ALL },
	{ "auth get", cmd_auth_get, CMD_READ, MON_NEED_ALL },
	{ "auth ls", cmd_auth_ls, CMD_READ, MON_NEED_ALL },
	{ "auth rm", cmd_auth_rm, CMD_FREES, MON_NEED_ALL },
	{ "auth caps", cmd_auth_caps, CMD_WRITE, MON_NEED_ALL },
	{ "auth rotate", cmd_auth_rotate, CMD_WRITE, MON_NEED_ALL },
	{ "auth import", cmd_auth_import, CMD_WRITE, MON_NEED_ALL },
};

static void run_command(struct mon *mon, struct msg_conn *conn, const char *json,
			struct cmd_out *o)
{
	cJSON *a = cJSON_Parse(json);
	const char *prefix, *fmt;
	size_t i;

	if (!a || !cJSON_IsObject(a)) {
		cmd_fail(o, -EINVAL, "the command is not a JSON object");
		goto out;
	}
	if (cmd_arg_str(a, "format", false, &fmt, o) < 0)
		goto out;
	o->json = fmt && !strcmp(fmt, "json");
	if (o->json)
		o->j = cJSON_CreateObject();
	if (cmd_arg_str(a, "prefix", true, &prefix, o) < 0)
		goto out;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].prefix, prefix))
			break;
	if (i == sizeof(commands) / sizeof(commands[0])) {
		cmd_fail(o, -EINVAL, "unknown command '%s'; see doc/cli.md for the list", prefix);
		goto out;
	}
	{
		char why[512];

		if (mon_access_check(mon, conn, commands[i].need, why, sizeof(why)) < 0) {
			cmd_fail(o, -EACCES, "command '%s' refused: %s", prefix, why);
			if (mon_access_refusal_log(MT_MON_COMMAND))
				log_warn("mon", "command '%s' from %s refused: %s", prefix,
					 msg_conn_addr(conn), why);
			goto out;
		}
	}
	if (commands[i].kind != CMD_READ && commands[i].kind != CMD_READ_APPLIED &&
	    mon_disk_refuses(mon, commands[i].kind == CMD_FREES, o) < 0)
		goto out;
	o->rc = commands[i].fn(mon, a, o);
	log_debug("mon", "command '%s': %d", prefix, o->rc);
out:
	cJSON_Delete(a);
}

/* Whether json is a command answered from the applied state without a
 * barrier (CMD_READ_APPLIED).  A leader whose first barrier passed has
 * applied every entry committed before it won, and what it applies after
 * only grows, so such a read never goes back: a deposed leader that does
 * not know it yet answers older lines, never other ones. */
static bool reads_applied(const char *json)
{
	cJSON *a = cJSON_Parse(json);
	const cJSON *p = a ? cJSON_GetObjectItemCaseSensitive(a, "prefix") : NULL;
	bool yes = false;

	if (cJSON_IsString(p))
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(commands[i].prefix, p->valuestring)) {
				yes = commands[i].kind == CMD_READ_APPLIED;
				break;
			}
	cJSON_Delete(a);
	return yes;
}

void mon_handle_command(struct mon *mon, struct msg *m)
{
	struct mon_command_reply rep;
	const struct mon_reqent *done;
	struct mon_reqid id = { 0, 0 };
	struct cmd_out o;
	struct msg *r;
	char *json = NULL, *jtxt = NULL;
	struct dec d;
	struct enc e;
	int rc;

	memset(&o, 0, sizeof(o));
	o.conn = m->conn;
	o.txt = open_memstream(&o.txtbuf, &o.txtlen);
	if (!o.txt) {
		msg_free(m);
		return;
	}
	dec_init(&d, m->front, m->front_len);
	rc = mon_command_decode(&d, &json, &id);
	if (rc < 0) {
		cmd_fail(&o, rc, "the command message is malformed");
	} else if ((done = mon_reqid_find(mon, &id))) {
		/* a resend of a command already applied: answered, not redone */
		cmd_say(&o, "already applied (a resent request), epoch %llu",
			(unsigned long long)done->epoch);
		if (strstr(json, "\"json\"")) {
			o.json = true;
			o.j = cJSON_CreateObject();
			cJSON_AddNumberToObject(o.j, "epoch", (double)done->epoch);
		} else {
			fprintf(o.txt, "epoch %llu\n", (unsigned long long)done->epoch);
		}
	} else if (!(mon->serving && mon->qv.ready && reads_applied(json)) &&
		   ((rc = mon_quorum_barrier(mon)) < 0 || !mon->qv.ready)) {
		/* reads are linearizable: answered after a barrier, by a leader */
		fclose(o.txt);
		free(o.txtbuf);
		free(json);
		mon_redirect(mon, m);
		return;
	} else {
		mon->cur_reqid = id;
		run_command(mon, m->conn, json, &o);
		mon->cur_reqid.client = mon->cur_reqid.seq = 0;
		if (o.rc < 0 && (o.rc == MON_ENOTLEADER || !mon->qv.ready)) {
			fclose(o.txt);
			cJSON_Delete(o.j);
			free(o.txtbuf);
			free(o.bin);
			free(json);
			mon_redirect(mon, m);
			return;
		}
	}
	fclose(o.txt);

	memset(&rep, 0, sizeof(rep));
	rep.rc = o.rc;
	rep.status = o.status;
	if (o.rc == 0 && o.bin) {
		rep.out = o.bin;
		rep.out_len = (uint32_t)o.binlen;
	} else if (o.rc == 0 && o.json && o.j) {
		jtxt = cJSON_PrintUnformatted(o.j);
		rep.out = jtxt;
		rep.out_len = jtxt ? (uint32_t)strlen(jtxt) : 0;
	} else if (o.rc == 0) {
		rep.out = o.txtbuf;
		rep.out_len = (uint32_t)o.txtlen;
	}
	enc_init(&e);
	mon_command_reply_encode(&rep, &e);
	r = msg_new(MT_MON_COMMAND, &e);
	enc_free(&e);
	if (r)
		msg_reply(m->conn, m, r);
	cJSON_Delete(o.j);
	free(jtxt);
	free(o.txtbuf);
	free(o.bin);
	free(json);
	msg_free(m);
}
