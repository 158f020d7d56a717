/*
 * cmd.h - what the files of the monitor's admin commands share.
 *
 * commands.c decodes MT_MON_COMMAND, finds the handler in its dispatch
 * table and sends the reply; the handlers live by concept in cmd_status.c
 * (status, health, df, pg ls), cmd_osd.c (osd ...) and cmd_pool.c
 * (pool ...).  Every name here starts with cmd_; all of it runs on the
 * monitor thread (mon.h).
 */
#ifndef ATOLL_MON_CMD_H
#define ATOLL_MON_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "mon.h"

/* One command's result: rc and a status sentence, plus either JSON (j,
 * format json), text (txt) or a binary blob (bin, mon backup). */
struct cmd_out {
	int rc;
	char status[512];
	bool json;
	cJSON *j;		/* JSON result (format json) */
	FILE *txt;		/* plain text result */
	char *txtbuf;
	size_t txtlen;
	void *bin;		/* binary result (mon backup), malloc'd */
	size_t binlen;
	struct msg_conn *conn;	/* the caller's session (its entity, its mode) */
};

/* A handler: reads its arguments from args, fills o, returns o->rc. */
typedef int cmd_fn(struct mon *mon, cJSON *args, struct cmd_out *o);

/* ---- commands.c: results and arguments ---- */
/* Sets o's rc and status sentence; returns rc. */
int cmd_fail(struct cmd_out *o, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Sets o's status sentence (success). */
void cmd_say(struct cmd_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A missing or mistyped argument fails o with -EINVAL naming it. */
int cmd_arg_str(cJSON *a, const char *name, bool required, const char **out,
		struct cmd_out *o);
/* An integer argument; *present tells whether it was given. */
int cmd_arg_int(cJSON *a, const char *name, int64_t min, int64_t max, int64_t *out,
		bool *present, struct cmd_out *o);
int cmd_arg_bool(cJSON *a, const char *name, bool def, bool *out, struct cmd_out *o);
/* "ids": [1, 2] or 1 or "1" (or "id"); ids holds OSDMAP_OSD_MAX. */
int cmd_arg_ids(cJSON *a, int32_t *ids, uint32_t *n, struct cmd_out *o);
/* true/yes/on/1, false/no/off/0; -EINVAL otherwise. */
int cmd_parse_bool(const char *s, bool *out);
void cmd_human_bytes(uint64_t b, char *buf, size_t len);
/* Commits inc through mon_map_change() and reports the new epoch. */
int cmd_map_change(struct mon *mon, struct osdmap_inc *inc, struct cmd_out *o);
/* Reports the current epoch (the command changed nothing). */
void cmd_no_change(struct mon *mon, struct cmd_out *o);

/* ---- cmd_status.c ---- */
cmd_fn cmd_status, cmd_health, cmd_df, cmd_pg_ls, cmd_pg_stat;

/* ---- clog.c: log [since SEQ | last N] ---- */
cmd_fn cmd_log;

/* ---- cmd_osd.c ---- */
cmd_fn cmd_osd_tree, cmd_osd_ls, cmd_osd_dump, cmd_osd_out, cmd_osd_in,
	cmd_osd_reweight, cmd_osd_set, cmd_osd_unset, cmd_osd_rm, cmd_osd_drain,
	cmd_osd_destroy;
/* ---- cmd_osdmap.c: osd map POOL OBJECT ---- */
cmd_fn cmd_osd_map;
/* ---- cmd_whatif.c: osd what-if CHANGE... ---- */
cmd_fn cmd_osd_whatif;
/* ---- cmd_blocklist.c: osd blocklist add|rm|ls ---- */
cmd_fn cmd_osd_blocklist_add, cmd_osd_blocklist_rm, cmd_osd_blocklist_ls;

/* ---- mdsmon.c: mds stat ---- */
cmd_fn cmd_mds_stat;
/* ---- cmd_quorum.c: quorum status, mon stat ---- */
cmd_fn cmd_quorum_status;
/* ---- cmd_mon.c: mon add, mon rm ---- */
cmd_fn cmd_mon_add, cmd_mon_rm;
/* ---- cmd_auth.c: auth add|get-or-create|get|ls|rm|caps|rotate ---- */
cmd_fn cmd_auth_add, cmd_auth_get_or_create, cmd_auth_get, cmd_auth_ls, cmd_auth_rm,
	cmd_auth_caps, cmd_auth_rotate, cmd_auth_import;
/* ---- cmd_backup.c: mon backup (streamed) ---- */
cmd_fn cmd_mon_backup;

/* ---- cmd_pool.c ---- */
cmd_fn cmd_pool_create, cmd_pool_ls, cmd_pool_rm, cmd_pool_get, cmd_pool_set;
/* A pool as JSON / as one line of text (pool ls --detail, osd dump). */
cJSON *cmd_pool_json(const struct osdmap_pool *p);
void cmd_pool_line(FILE *f, const struct osdmap_pool *p);

#endif
