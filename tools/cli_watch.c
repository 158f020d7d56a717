/*
 * cli_watch.c - `atoll watch` (also `atoll -w`): streams the cluster log
 * as `ceph -w` does (doc/cli.md; the log itself: doc/quorum.md, "The
 * cluster log").
 *
 * It prints the last lines, then asks the monitors every --interval for
 * the lines after the last seq it printed (`log` with "since"), through
 * the ordinary command path: a command goes to the leader, and across a
 * leader change the library resends it to the new one.  The lines and
 * their seqs are part of the monitors' replicated state, so the new
 * leader answers from the same seq: nothing is printed twice and nothing
 * is skipped.  The monitor's answer is always asked as JSON (the seqs);
 * the CLI renders each line itself, in the monitor's own plain form
 * (TIME [SEV] message) or, with --format json, as one JSON object per
 * line.  Output is flushed after each answer, so a pipe sees lines as
 * they come.  `atoll log last [N]` prints the last lines once, as the
 * monitor renders them.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WATCH_LAST_DEFAULT	10

struct watch {
	struct cli *cl;
	uint64_t seq;		/* the last seq printed (or known to exist) */
	unsigned errors;	/* failed asks in a row */
};

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void print_line(struct watch *w, cJSON *l)
{
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItem(l, "time"));
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(l, "severity"));
	const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(l, "message"));

	if (w->cl->json) {
		char *txt = cJSON_PrintUnformatted(l);

		if (txt)
			printf("%s\n", txt);
		free(txt);
		return;
	}
	printf("%s [%s] %s\n", t ? t : "?", s ? s : "?", m ? m : "");
}

/* One ask: cmd is consumed.  0 with *more set, or a negative errno (said
 * on stderr). */
static int ask(struct watch *w, cJSON *cmd, bool first, bool *more)
{
	char *status = NULL, *out = NULL, *json;
	cJSON *rep = NULL, *l;
	bool printed = false;
	double last_seq;
	int r;

	*more = false;
	cJSON_AddStringToObject(cmd, "format", "json");
	json = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);
	if (!json)
		return -ENOMEM;
	r = atoll_mon_command(w->cl->c, json, &status, &out, NULL);
	free(json);
	if (r == -EINVAL || r == -EACCES || r == -EPERM) {
		/* refused, not unanswered: asking again changes nothing */
		cli_err("watch: %s", status && *status ? status : atoll_strerror(r));
		goto out_free;
	}
	if (r < 0) {
		if (w->errors++ == 0 || w->errors % 30 == 0)
			cli_err("watch: the monitors did not answer (%s); asking again",
				status && *status ? status : atoll_strerror(r));
		goto out_free;
	}
	if (w->errors)
		cli_err("watch: the monitors answer again; going on after seq %llu",
			(unsigned long long)w->seq);
	w->errors = 0;
	rep = cJSON_Parse(out ? out : "");
	if (!rep || !cJSON_IsNumber(cJSON_GetObjectItem(rep, "last_seq"))) {
		cli_err("watch: the monitor's answer to 'log' is not what was expected");
		r = -EBADMSG;
		goto out_free;
	}
	last_seq = cJSON_GetObjectItem(rep, "last_seq")->valuedouble;
	if (cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "missed")) > 0)
		cli_err("watch: %.0f lines were trimmed from the cluster log before they were "
			"read (mon_cluster_log_lines)",
			cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "missed")));
	cJSON_ArrayForEach(l, cJSON_GetObjectItem(rep, "lines")) {
		double seq = cJSON_GetNumberValue(cJSON_GetObjectItem(l, "seq"));

		/* a line at or before the last one printed would be a repeat */
		if (!first && seq <= (double)w->seq)
			continue;
		print_line(w, l);
		w->seq = (uint64_t)seq;
		printed = true;
	}
	if (first && !printed) {
		/* nothing to show first: new lines are those after the last */
		w->seq = (uint64_t)last_seq;
	} else if (!first && last_seq < (double)w->seq) {
		cli_err("watch: the cluster log starts again at seq %.0f (the monitors were "
			"rebuilt or restored)", last_seq);
		w->seq = (uint64_t)last_seq;
	}
	*more = cJSON_IsTrue(cJSON_GetObjectItem(rep, "more"));
	fflush(stdout);
out_free:
	cJSON_Delete(rep);
	atoll_free(status);
	atoll_free(out);
	return r < 0 ? r : 0;
}

static int run_watch(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct watch w = { .cl = cl };
	uint64_t last = WATCH_LAST_DEFAULT, since = 0, interval_ms = 1000;
	bool has_since = false, more;
	int ret;

	for (int i = 0; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--last") && v) {
			if (cli_parse_uint(v, 10000, &last))
				return cli_usage(c, "--last '%s': give a number of lines (0..10000)", v);
			i++;
		} else if (!strcmp(argv[i], "--since") && v) {
			if (cli_parse_uint(v, INT64_MAX, &since))
				return cli_usage(c, "--since '%s': give a seq (a whole number)", v);
			has_since = true;
			i++;
		} else if (!strcmp(argv[i], "--interval") && v) {
			char *end;
			double s = strtod(v, &end);

			if (end == v || *end || !(s >= 0.1 && s <= 60))
				return cli_usage(c, "--interval '%s': give seconds from 0.1 to 60", v);
			interval_ms = (uint64_t)(s * 1000 + 0.5);
			i++;
		} else {
			return cli_usage(c, "unexpected argument '%s'", argv[i]);
		}
	}
	ret = cli_connect(cl);
	if (ret)
		return ret;
	if (has_since) {
		w.seq = since;
	} else {
		cJSON *cmd = cJSON_CreateObject();

		cJSON_AddStringToObject(cmd, "prefix", "log");
		cJSON_AddNumberToObject(cmd, "last", (double)last);
		/* the first answer must come: without it there is no seq */
		while ((ret = ask(&w, cmd, true, &more)) < 0) {
			if (ret == -EINVAL || ret == -EACCES || ret == -EPERM)
				return cli_exit_code(ret);
			sleep_ms(interval_ms);
			cmd = cJSON_CreateObject();
			cJSON_AddStringToObject(cmd, "prefix", "log");
			cJSON_AddNumberToObject(cmd, "last", (double)last);
		}
	}
	for (;;) {
		cJSON *cmd = cJSON_CreateObject();

		cJSON_AddStringToObject(cmd, "prefix", "log");
		cJSON_AddNumberToObject(cmd, "since", (double)w.seq);
		ret = ask(&w, cmd, false, &more);
		if (ret == -EINVAL || ret == -EACCES || ret == -EPERM)
			return cli_exit_code(ret);
		if (ret < 0 || !more)
			sleep_ms(interval_ms);
	}
}

/* log last [N]: the monitor renders the lines (plain or JSON) */
static int run_log_last(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	uint64_t n = 20;
	char *status, *out;
	size_t outlen;
	cJSON *cmd;
	int ret;

	if (argc > 1)
		return cli_usage(c, "unexpected argument '%s'", argv[1]);
	if (argc == 1 && cli_parse_uint(argv[0], 10000, &n))
		return cli_usage(c, "'%s' is not a number of lines (0..10000)", argv[0]);
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "prefix", "log");
	cJSON_AddNumberToObject(cmd, "last", (double)n);
	ret = cli_mon_call(cl, cmd, cl->json, &status, &out, &outlen);
	if (ret)
		return ret;
	if (out && outlen) {
		fwrite(out, 1, outlen, stdout);
		if (out[outlen - 1] != '\n')
			putchar('\n');
	}
	atoll_free(status);
	atoll_free(out);
	return CLI_EXIT_OK;
}

const struct cli_cmd cli_watch_cmds[] = {
	{ "watch", "[--last N] [--since SEQ] [--interval SECONDS]",
	  "Streams the cluster log, as `ceph -w` does (also: atoll -w): prints the\n"
	  "last N lines (default 10), then each new line as the monitors add it,\n"
	  "until interrupted.  Lines say OSDs going up, down, in and out, pools and\n"
	  "map changes, a summary of PG states with recovery progress every\n"
	  "mon_cluster_log_interval while they change, health checks raised and\n"
	  "cleared, and which monitor leads.  The monitors keep the log in their\n"
	  "replicated state with a seq per line, so the stream goes on across a\n"
	  "leader change with no line lost or repeated.\n"
	  "\n"
	  "  --last N            lines to show first (0: only new ones)\n"
	  "  --since SEQ         start after the line of that seq instead\n"
	  "  --interval SECONDS  how often to ask for new lines (default 1)\n"
	  "  --format json       one JSON object per line: seq, stamp_ms, time,\n"
	  "                      severity (INF, WRN, ERR), message\n"
	  "\n"
	  "The plain form is `TIME [SEV] message`, times in UTC.\n",
	  run_watch },
	{ "log last", "[N]",
	  "The last N lines of the cluster log (default 20), as `atoll watch` prints\n"
	  "them; with --format json the monitor's answer: first_seq, last_seq and\n"
	  "the lines with their seq, stamp_ms, time, severity and message.\n",
	  run_log_last },
	{ NULL, NULL, NULL, NULL },
};
