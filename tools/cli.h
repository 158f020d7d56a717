/*
 * cli.h - the `atoll` admin CLI: shared state and helpers.
 *
 * The CLI uses only the public API (include/atoll/atoll.h): admin
 * commands are JSON monitor commands (doc/cli.md, atoll_mon_command) whose
 * output the monitor renders; object commands and bench use the object
 * calls.  Every command handler takes the words after its command name
 * and returns the process exit code (CLI_EXIT_*).
 */
#ifndef ATOLL_TOOLS_CLI_H
#define ATOLL_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atoll/atoll.h"

/* Exit codes (doc/cli.md, "Exit codes"). */
enum {
	CLI_EXIT_OK = 0,
	CLI_EXIT_ERROR = 1,	/* the command failed (a sentence says why) */
	CLI_EXIT_USAGE = 2,	/* bad command line */
	CLI_EXIT_NOENT = 3,	/* no such pool, object or OSD (ENOENT) */
	CLI_EXIT_CONNECT = 4,	/* the monitor cannot be reached */
};

struct cli {
	const char *conf;	/* --conf, or NULL: $ATOLL_CONF, ./atoll.conf, ... */
	const char *mon;	/* -m/--mon ADDR, or NULL */
	const char *keyring;	/* --keyring FILE, or NULL: the configured one */
	bool json;		/* --format json */
	struct atoll_cluster *c;	/* after cli_connect() */
};

struct cli_cmd {
	const char *words;	/* "pool create" */
	const char *args;	/* "NAME [--size N] ..." */
	const char *help;	/* one or more lines */
	int (*run)(struct cli *cl, const struct cli_cmd *cmd, int argc, char **argv);
};

/* cli.c */
int cli_connect(struct cli *cl);
/* Sends the monitor command cmd (consumed; with "format": "json" added
 * when json_out): 0 with the reply's status and output (atoll_free
 * them), or an exit code after printing why on stderr. */
struct cJSON;
int cli_mon_call(struct cli *cl, struct cJSON *cmd, bool json_out, char **status, char **out,
		 size_t *outlen);
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_usage(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int cli_exit_code(int err);
int cli_parse_uint(const char *s, uint64_t max, uint64_t *out);
void cli_human_bytes(double v, char *buf, size_t len);

/* cli_admin.c: monitor commands */
extern const struct cli_cmd cli_admin_cmds[];
/* cli_backup.c: mon backup */
int cli_mon_backup(struct cli *cl, const struct cli_cmd *c, int argc, char **argv);
/* cli_objects.c: put/get/rm/stat/ls */
extern const struct cli_cmd cli_object_cmds[];
/* cli_bench.c */
extern const struct cli_cmd cli_bench_cmds[];
/* cli_verify.c: verify (the ledger workload) */
extern const struct cli_cmd cli_verify_cmds[];
/* cli_image.c: image ... and osd blocklist ... */
extern const struct cli_cmd cli_image_cmds[];

/* cli_fs.c: fs status (speaks the MDS protocol: see the file's comment) */
extern const struct cli_cmd cli_fs_cmds[];
extern const struct cli_cmd cli_scrub_cmds[];
/* cli_auth.c: auth add|get-or-create|get|ls|rm|caps|rotate|import */
extern const struct cli_cmd cli_auth_cmds[];
/* `auth get-or-create ENTITY SERVICE CAPS...` (caps: ncaps strings, in
 * pairs): prints the keyring section, or merges it into out_path (NULL:
 * print).  A CLI exit status. */
int cli_auth_get_or_create(struct cli *cl, const char *entity, const char *const *caps,
			   int ncaps, const char *out_path);
/* cli_pg.c: pg stat, pg query */
extern const struct cli_cmd cli_pg_cmds[];
/* cli_watch.c: watch (atoll -w), the cluster log */
extern const struct cli_cmd cli_watch_cmds[];

/* cli_progress.c: the progress bar of commands that run over a second,
 * on stderr, only when stdout and stderr are terminals and not with
 * --format json. */
enum cli_progress_unit { CLI_PROGRESS_BYTES, CLI_PROGRESS_SECONDS };
struct cli_progress {
	bool enabled, shown;
	const char *what;
	enum cli_progress_unit unit;
	double t0, drawn_at;
	double done, total;	/* total 0: unknown */
};
void cli_progress_init(struct cli_progress *p, const struct cli *cl, const char *what,
		       enum cli_progress_unit unit);
void cli_progress_update(struct cli_progress *p, double done, double total);
/* Erases the bar before the command prints a line (it comes back at the
 * next update). */
void cli_progress_clear(struct cli_progress *p);
/* Draws the final state and ends the line (nothing if it never showed). */
void cli_progress_done(struct cli_progress *p);

/* Opens an I/O context on pool with the CLI's standard message for a
 * missing pool; returns an exit code. */
int cli_open_pool(struct cli *cl, const char *pool, struct atoll_ioctx **io);

#endif
