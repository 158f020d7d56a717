/*
 * cli_pg.h - what the commands that talk to a PG's primary share
 * (cli_pg.c, cli_scrub.c): the monitor's view of the PGs and OSDs as
 * JSON, and finding a PG's primary and its address in it.
 */
#ifndef ATOLL_TOOLS_CLI_PG_H
#define ATOLL_TOOLS_CLI_PG_H

#include <cjson/cJSON.h>

#include "cli.h"

/* The JSON output of a monitor command (pool: its "pool" argument, or
 * NULL); NULL (a message said why, *ret is the exit code) on error. */
cJSON *cli_pg_mon_json(struct cli *cl, const char *prefix, const char *pool, int *ret);
/* osd.id's address from an `osd dump`; NULL when it is not up. */
const char *cli_pg_osd_addr(const cJSON *dump, int id);
/* The primary `pg ls` names for pgid, or -1. */
int cli_pg_primary_of(const cJSON *pgs, const char *pgid);
/* Whether err is worth asking again with a fresh map (the primary moved,
 * the PG is busy or peering, the OSD is restarting). */
bool cli_pg_retryable(int err);

extern const struct cli_cmd cli_pg_cmds[];

#endif
