/*
 * cli_admin.c - the admin commands: JSON monitor commands (doc/cli.md).
 *
 * Each command turns its words into the JSON object the monitor expects
 * ({"prefix": "pool create", "name": ..., "format": "json"}), sends it
 * with atoll_mon_command() and prints what comes back: the output on
 * stdout exactly as the monitor rendered it (plain text or JSON), the
 * status sentence on stderr.  The CLI never renders cluster data itself,
 * so the plain and JSON views cannot drift apart.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Sends cmd (consumed) and prints the reply; writes the output to
 * out_file instead of stdout when given (mon backup). */
static int send_cmd(struct cli *cl, cJSON *cmd, const char *out_file)
{
	char *status, *out;
	size_t outlen;
	int ret;

	ret = cli_mon_call(cl, cmd, cl->json && !out_file, &status, &out, &outlen);
	if (ret)
		return ret;
	if (out_file) {
		int fd = open(out_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		size_t done = 0;

		if (fd >= 0 && fchmod(fd, 0600) < 0) {	/* an older file's mode */
			close(fd);
			fd = -1;
		}
		if (fd < 0) {
			cli_err("cannot create '%s': %s", out_file, strerror(errno));
			ret = CLI_EXIT_ERROR;
			goto out_free_reply;
		}
		while (done < outlen) {
			ssize_t n = write(fd, out + done, outlen - done);

			if (n <= 0) {
				cli_err("cannot write '%s': %s", out_file, strerror(errno));
				close(fd);
				ret = CLI_EXIT_ERROR;
				goto out_free_reply;
			}
			done += n;
		}
		if (fsync(fd) != 0 || close(fd) != 0) {
			cli_err("cannot write '%s': %s", out_file, strerror(errno));
			ret = CLI_EXIT_ERROR;
			goto out_free_reply;
		}
		if (!cl->json)
			fprintf(stderr, "wrote %zu bytes to %s\n", outlen, out_file);
		else
			printf("{\"file\":\"%s\",\"bytes\":%zu}\n", out_file, outlen);
	} else if (out && outlen) {
		fwrite(out, 1, outlen, stdout);
		if (out[outlen - 1] != '\n')
			putchar('\n');
	}
	if (status && *status && !out_file)
		fprintf(stderr, "%s\n", status);
	ret = CLI_EXIT_OK;
out_free_reply:
	atoll_free(status);
	atoll_free(out);
	return ret;
}

static cJSON *new_cmd(const char *prefix)
{
	cJSON *cmd = cJSON_CreateObject();

	if (cmd)
		cJSON_AddStringToObject(cmd, "prefix", prefix);
	return cmd;
}

/* Commands without arguments, and those whose only argument is the
 * optional word "detail". */
static int run_simple(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;
	bool detail_ok = strcmp(c->args, "[detail]") == 0;

	if (argc > 1 || (argc == 1 && !(detail_ok && strcmp(argv[0], "detail") == 0)))
		return cli_usage(c, "unexpected argument '%s'", argv[0]);
	cmd = new_cmd(c->words);
	if (argc == 1)
		cJSON_AddBoolToObject(cmd, "detail", 1);
	return send_cmd(cl, cmd, NULL);
}

static int parse_id(const char *s, int64_t *id)
{
	uint64_t v;

	if (strncmp(s, "osd.", 4) == 0)
		s += 4;
	if (cli_parse_uint(s, INT32_MAX, &v))
		return -EINVAL;
	*id = (int64_t)v;
	return 0;
}

/* osd out|in ID... */
static int run_osd_ids(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd, *ids;
	int64_t id;

	if (argc < 1)
		return cli_usage(c, "give at least one OSD id");
	cmd = new_cmd(c->words);
	ids = cJSON_AddArrayToObject(cmd, "ids");
	for (int i = 0; i < argc; i++) {
		if (parse_id(argv[i], &id)) {
			cJSON_Delete(cmd);
			return cli_usage(c, "'%s' is not an OSD id (a number such as 2)", argv[i]);
		}
		cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)id));
	}
	return send_cmd(cl, cmd, NULL);
}

/* osd rm ID */
static int run_osd_rm(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;
	int64_t id;

	if (argc != 1)
		return cli_usage(c, "give one OSD id");
	if (parse_id(argv[0], &id))
		return cli_usage(c, "'%s' is not an OSD id (a number such as 2)", argv[0]);
	cmd = new_cmd(c->words);
	cJSON_AddNumberToObject(cmd, "id", (double)id);
	return send_cmd(cl, cmd, NULL);
}

/* osd destroy ID --yes-i-really-mean-it */
static int run_osd_destroy(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;
	int64_t id;

	if (argc != 2 || strcmp(argv[1], "--yes-i-really-mean-it"))
		return cli_usage(c, "give one OSD id and --yes-i-really-mean-it: the OSD's "
				 "current disk can never join again");
	if (parse_id(argv[0], &id))
		return cli_usage(c, "'%s' is not an OSD id (a number such as 2)", argv[0]);
	cmd = new_cmd(c->words);
	cJSON_AddNumberToObject(cmd, "id", (double)id);
	return send_cmd(cl, cmd, NULL);
}

/* osd reweight ID W */
static int run_osd_reweight(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;
	int64_t id;
	char *end;
	double w;

	if (argc != 2)
		return cli_usage(c, "give an OSD id and a weight between 0 and 1");
	if (parse_id(argv[0], &id))
		return cli_usage(c, "'%s' is not an OSD id (a number such as 2)", argv[0]);
	w = strtod(argv[1], &end);
	if (*end || end == argv[1] || w < 0 || w > 1)
		return cli_usage(c, "'%s' is not a weight between 0 and 1", argv[1]);
	cmd = new_cmd(c->words);
	cJSON_AddNumberToObject(cmd, "id", (double)id);
	cJSON_AddNumberToObject(cmd, "weight", w);
	return send_cmd(cl, cmd, NULL);
}

/* osd set|unset FLAG */
static int run_osd_flag(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;

	if (argc != 1)
		return cli_usage(c, "give one flag (noout)");
	cmd = new_cmd(c->words);
	cJSON_AddStringToObject(cmd, "flag", argv[0]);
	return send_cmd(cl, cmd, NULL);
}

/* osd map POOL OBJECT, or osd map --what-if CHANGE [--what-if CHANGE]... */
static int run_osd_map(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd, *changes;

	if (argc >= 1 && strcmp(argv[0], "--what-if") == 0) {
		cmd = new_cmd("osd what-if");
		changes = cJSON_AddArrayToObject(cmd, "changes");
		for (int i = 0; i < argc; i += 2) {
			if (strcmp(argv[i], "--what-if") != 0 || i + 1 >= argc) {
				cJSON_Delete(cmd);
				return cli_usage(c, "--what-if needs a change, e.g. 'out 3' or "
						 "'add host=h4 weight=1'");
			}
			cJSON_AddItemToArray(changes, cJSON_CreateString(argv[i + 1]));
		}
		return send_cmd(cl, cmd, NULL);
	}
	if (argc != 2)
		return cli_usage(c, "give a pool name and an object name");
	cmd = new_cmd(c->words);
	cJSON_AddStringToObject(cmd, "pool", argv[0]);
	cJSON_AddStringToObject(cmd, "object", argv[1]);
	return send_cmd(cl, cmd, NULL);
}

/* pool create NAME [--size N] [--min-size N] [--pg N] [--failure-domain D] [--compress] */
static int run_pool_create(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	const char *name = NULL;
	cJSON *cmd = new_cmd(c->words);
	uint64_t v;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *key = NULL;

		if (strcmp(a, "--compress") == 0) {
			cJSON_AddBoolToObject(cmd, "compress", 1);
			continue;
		}
		if (strcmp(a, "--size") == 0)
			key = "size";
		else if (strcmp(a, "--min-size") == 0)
			key = "min_size";
		else if (strcmp(a, "--pg") == 0 || strcmp(a, "--pg-num") == 0)
			key = "pg_num";
		else if (strcmp(a, "--failure-domain") == 0)
			key = "failure_domain";
		if (key) {
			if (i + 1 >= argc) {
				cJSON_Delete(cmd);
				return cli_usage(c, "option '%s' needs a value", a);
			}
			a = argv[++i];
			if (strcmp(key, "failure_domain") == 0) {
				if (strcmp(a, "host") && strcmp(a, "osd")) {
					cJSON_Delete(cmd);
					return cli_usage(c, "--failure-domain '%s': use host or osd", a);
				}
				cJSON_AddStringToObject(cmd, key, a);
			} else {
				if (cli_parse_uint(a, 65536, &v)) {
					cJSON_Delete(cmd);
					return cli_usage(c, "'%s' is not a number (for %s)", a, argv[i - 1]);
				}
				cJSON_AddNumberToObject(cmd, key, (double)v);
			}
			continue;
		}
		if (a[0] == '-' && a[1]) {
			cJSON_Delete(cmd);
			return cli_usage(c, "unknown option '%s'", a);
		}
		if (name) {
			cJSON_Delete(cmd);
			return cli_usage(c, "one pool name only ('%s' and '%s')", name, a);
		}
		name = a;
	}
	if (!name) {
		cJSON_Delete(cmd);
		return cli_usage(c, "give the new pool's name");
	}
	cJSON_AddStringToObject(cmd, "name", name);
	return send_cmd(cl, cmd, NULL);
}

/* pool rm NAME NAME --yes-i-really-mean-it */
static int run_pool_rm(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	const char *names[2] = { NULL, NULL };
	int nnames = 0, yes = 0;
	cJSON *cmd;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--yes-i-really-mean-it") == 0)
			yes = 1;
		else if (argv[i][0] == '-' && argv[i][1])
			return cli_usage(c, "unknown option '%s'", argv[i]);
		else if (nnames < 2)
			names[nnames++] = argv[i];
		else
			return cli_usage(c, "too many names");
	}
	if (nnames == 0)
		return cli_usage(c, "give the pool's name twice and --yes-i-really-mean-it");
	cmd = new_cmd(c->words);
	cJSON_AddStringToObject(cmd, "name", names[0]);
	if (names[1])
		cJSON_AddStringToObject(cmd, "confirm_name", names[1]);
	if (yes)
		cJSON_AddBoolToObject(cmd, "yes", 1);
	return send_cmd(cl, cmd, NULL);
}

/* pool get NAME [VAR] */
static int run_pool_get(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;

	if (argc < 1 || argc > 2)
		return cli_usage(c, "give a pool name and optionally a variable");
	cmd = new_cmd(c->words);
	cJSON_AddStringToObject(cmd, "name", argv[0]);
	if (argc == 2)
		cJSON_AddStringToObject(cmd, "var", argv[1]);
	return send_cmd(cl, cmd, NULL);
}

/* pool set NAME VAR VAL */
static int run_pool_set(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;

	if (argc != 3)
		return cli_usage(c, "give a pool name, a variable and its value");
	cmd = new_cmd(c->words);
	cJSON_AddStringToObject(cmd, "name", argv[0]);
	cJSON_AddStringToObject(cmd, "var", argv[1]);
	cJSON_AddStringToObject(cmd, "val", argv[2]);
	return send_cmd(cl, cmd, NULL);
}

/* pg ls [POOL] [--state S[,S...]] */
static int run_pg_ls(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	const char *pool = NULL, *state = NULL;
	cJSON *cmd;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--state") == 0) {
			if (++i == argc)
				return cli_usage(c, "--state needs a state, e.g. --state degraded");
			state = argv[i];
		} else if (strncmp(argv[i], "--state=", 8) == 0) {
			state = argv[i] + 8;
		} else if (!pool && argv[i][0] != '-') {
			pool = argv[i];
		} else {
			return cli_usage(c, "unexpected argument '%s'", argv[i]);
		}
	}
	cmd = new_cmd(c->words);
	if (pool)
		cJSON_AddStringToObject(cmd, "pool", pool);
	if (state)
		cJSON_AddStringToObject(cmd, "state", state);
	return send_cmd(cl, cmd, NULL);
}

/* mon add NAME IP:PORT, mon rm NAME */
static int run_mon_member(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	bool add = strcmp(c->words, "mon add") == 0;
	cJSON *cmd;

	if (argc != (add ? 2 : 1))
		return cli_usage(c, add ? "give the new monitor's name and IP:PORT" :
				 "give the monitor's name");
	cmd = new_cmd(c->words);
	cJSON_AddStringToObject(cmd, "name", argv[0]);
	if (add)
		cJSON_AddStringToObject(cmd, "addr", argv[1]);
	return send_cmd(cl, cmd, NULL);
}

const struct cli_cmd cli_admin_cmds[] = {
	{ "health", "[detail]",
	  "HEALTH_OK, HEALTH_WARN or HEALTH_ERR, then each problem with its code\n"
	  "and how to fix it; `detail` says in sentences which OSDs, PGs, objects\n"
	  "and ops are concerned, what atoll is doing about it (when a down OSD\n"
	  "will be marked out, recovery's rate and the time left) and what you\n"
	  "can do.  Codes: doc/recovery.md, \"Health\".\n",
	  run_simple },
	{ "status", "",
	  "The cluster at a glance: health, OSDs up/in, pools, PG states,\n"
	  "recovery (degraded and misplaced copies, rate, time left), capacity.\n",
	  run_simple },
	{ "df", "", "Raw capacity, and the objects and bytes of each pool.\n", run_simple },
	{ "mds stat", "", "The MDS daemons' roles, per file system: the active one (name,\n"
	  "address, instance, the epoch of its grant, what it does: replaying,\n"
	  "reconnect or active) and the standbys (doc/fs-design.md).\n", run_simple },
	{ "osd tree", "", "Hosts and their OSDs with weights and status.\n", run_simple },
	{ "osd ls", "", "The ids of the OSDs that exist.\n", run_simple },
	{ "osd dump", "", "The whole current cluster map.\n", run_simple },
	{ "osd out", "ID...",
	  "Marks OSDs out: placement stops choosing them and their PGs move.\n",
	  run_osd_ids },
	{ "osd in", "ID...", "Marks OSDs in again.\n", run_osd_ids },
	{ "osd reweight", "ID WEIGHT",
	  "Sets an OSD's reweight, 0 (out) to 1 (full share).\n", run_osd_reweight },
	{ "osd set", "noout",
	  "Sets a flag; noout: OSDs that go down are not marked out (planned reboots).\n",
	  run_osd_flag },
	{ "osd unset", "noout", "Clears a flag.\n", run_osd_flag },
	{ "osd drain", "ID...",
	  "Marks OSDs out to remove them: their PGs move to other OSDs, and health\n"
	  "says when none is left on them (then stop them and `atoll osd rm`).\n",
	  run_osd_ids },
	{ "osd rm", "ID", "Removes an OSD that is down and out from the map.\n", run_osd_rm },
	{ "osd destroy", "ID --yes-i-really-mean-it",
	  "The disk of a down OSD is gone: its id keeps its place for a new disk\n"
	  "(atoll-osd --mkfs --id ID), which is then backfilled.\n",
	  run_osd_destroy },
	{ "osd map", "POOL OBJECT | --what-if CHANGE [--what-if CHANGE]...",
	  "Where the current map places an object: its PG, up and acting OSDs\n"
	  "and primary (the object need not exist).\n"
	  "With --what-if: what a change of the OSDs would move, computed on a copy\n"
	  "of the map (nothing changes): the PGs remapped, from which OSDs to which,\n"
	  "the PG copies and bytes to copy, per OSD.  Changes, applied in order:\n"
	  "'add host=NAME [weight=TIB]' (a new OSD, the next free id), 'out ID',\n"
	  "'in ID', 'reweight ID R', 'weight ID TIB', 'down ID', 'up ID', 'rm ID'.\n",
	  run_osd_map },
	{ "pool create", "NAME [--size N] [--min-size N] [--pg N] [--failure-domain host|osd] [--compress]",
	  "Creates a replicated pool.  Defaults: size 3 (osd_pool_default_size),\n"
	  "min-size size - size/2, 64 PGs, failure domain host (osd on a one-host\n"
	  "cluster); --compress stores objects lz4-compressed.\n",
	  run_pool_create },
	{ "pool ls", "[detail]", "The pools; with detail their settings.\n", run_simple },
	{ "pool rm", "NAME NAME --yes-i-really-mean-it",
	  "Deletes a pool and every object in it (the name twice, and the flag).\n",
	  run_pool_rm },
	{ "pool get", "NAME [VAR]",
	  "A pool's variables (size, min_size, pg_num, failure_domain, compress).\n",
	  run_pool_get },
	{ "pool set", "NAME VAR VALUE",
	  "Changes a pool's size, min_size, compress or failure_domain\n"
	  "(pg_num cannot change yet).\n",
	  run_pool_set },
	{ "pg ls", "[POOL] [--state S[,S...]]",
	  "Every PG with its state, objects and acting OSDs; --state lists only\n"
	  "the PGs in any of the states given: active, clean, peering, degraded,\n"
	  "undersized, recovering, backfilling, inactive (not active, unknown\n"
	  "included), inconsistent, down, remapped, stale, incomplete, creating.\n"
	  "With --format json, each PG also has its degraded and misplaced object\n"
	  "copies and its scrub stamps.\n",
	  run_pg_ls },
	{ "quorum status", "",
	  "The monitors: who leads, the term, the committed and applied log\n"
	  "indexes, and for each member its role, lag (log entries behind the\n"
	  "leader), applied index, map epoch and a digest of its whole replicated\n"
	  "state (members at the same epoch show the same digest).\n",
	  run_simple },
	{ "mon stat", "", "The same as `atoll quorum status`.\n", run_simple },
	{ "mon add", "NAME IP:PORT",
	  "Adds a monitor to the quorum: it joins as a non-voter and becomes a\n"
	  "voter once it caught up with the log.  Make it first, on its host, with\n"
	  "atoll-mon --mkfs --join --data DIR --name NAME --fsid FSID --addr IP:PORT\n"
	  "and start it (atoll-mon --data DIR).  One membership change at a time.\n",
	  run_mon_member },
	{ "mon rm", "NAME",
	  "Removes a monitor from the quorum (the leader hands leadership to\n"
	  "another voter first); then stop it and remove its folder.\n",
	  run_mon_member },
	{ "mon backup", "FILE [--chunk-size BYTES]",
	  "Writes the monitors' map history to FILE, fetched in pieces of at most\n"
	  "--chunk-size bytes (default and maximum 8 MiB) so that a history of\n"
	  "any length fits; restore a lost quorum with\n"
	  "atoll-mon --restore FILE --data DIR (doc/admin.md).\n",
	  cli_mon_backup },	/* cli_backup.c */
	{ NULL, NULL, NULL, NULL },
};
