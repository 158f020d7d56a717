/*
 * cli_verify.c - `atoll verify`: checks a live cluster with the ledger
 * workload (ledger.h), e.g. through a maintenance.
 *
 *   atoll verify POOL SECONDS [-t THREADS] [--prefix P] [--ledger FILE] [--keep]
 *
 * THREADS workers (default 8) write, overwrite, append to, delete and read
 * 6 objects each, named P t0, P t1, ... (P defaults to
 * "atoll-verify.HOST.PID."), for SECONDS (Ctrl-C ends it early), keeping
 * an exact model of what the cluster acknowledged; then every object is
 * read once more.  A line every 10 s and a summary report the ops and
 * every problem: lost (an acknowledged object is missing), wrong (content
 * that no acknowledged write left), stale (the content before the last
 * acknowledged write), a version that went back, ops that failed.  Exit 0
 * when there is none, 1 otherwise.  The objects are removed at the end
 * unless --keep; --ledger FILE records every acknowledged mutation.
 */
#include "cli.h"
#include "ledger.h"
#include "mono.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void print_line(FILE *f, const char *when, const struct ledger_counts *c)
{
	fprintf(f, "%s: %" PRIu64 " writes (%" PRIu64 " creates, %" PRIu64 " overwrites, %"
		PRIu64 " appends), %" PRIu64 " deletes, %" PRIu64 " reads; %" PRIu64
		" timeouts, %" PRIu64 " errors, %" PRIu64 " lost, %" PRIu64 " wrong, %" PRIu64
		" stale, %" PRIu64 " bad versions\n", when,
		c->creates + c->overwrites + c->appends, c->creates, c->overwrites, c->appends,
		c->deletes, c->reads, c->timeouts, c->errors, c->lost, c->wrong, c->stale,
		c->version_bad);
	fflush(f);
}

static void print_json(const struct ledger_counts *c, uint64_t verified, double secs)
{
	printf("{\"seconds\": %.1f, \"creates\": %" PRIu64 ", \"overwrites\": %" PRIu64
	       ", \"appends\": %" PRIu64 ", \"deletes\": %" PRIu64 ", \"reads\": %" PRIu64
	       ", \"verified\": %" PRIu64 ", \"timeouts\": %" PRIu64 ", \"errors\": %" PRIu64
	       ", \"lost\": %" PRIu64 ", \"wrong\": %" PRIu64 ", \"stale\": %" PRIu64
	       ", \"version_bad\": %" PRIu64 ", \"ok\": %s}\n", secs, c->creates,
	       c->overwrites, c->appends, c->deletes, c->reads, verified, c->timeouts,
	       c->errors, c->lost, c->wrong, c->stale, c->version_bad,
	       ledger_bad(c) ? "false" : "true");
}

static int run_verify(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct ledger_opts o = { .threads = 8, .who = "atoll verify" };
	const char *pool = NULL, *secs_s = NULL, *record = NULL;
	char prefix[128], host[64] = "host";
	struct sigaction sa, old;
	struct ledger_counts cnt;
	struct cli_progress bar;
	struct atoll_ioctx *io;
	struct ledger *l;
	uint64_t secs, threads = 8, verified;
	bool keep = false;
	FILE *out;
	double t0, next;
	int ret, e;

	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, ".")] = 0;
	snprintf(prefix, sizeof(prefix), "atoll-verify.%s.%d.", host, (int)getpid());
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-t") == 0 || strcmp(a, "--threads") == 0) {
			if (i + 1 >= argc ||
			    cli_parse_uint(argv[++i], LEDGER_THREADS_MAX, &threads) || !threads)
				return cli_usage(c, "-t needs a number of threads from 1 to %d",
						 LEDGER_THREADS_MAX);
		} else if (strcmp(a, "--prefix") == 0) {
			if (i + 1 >= argc || strlen(argv[i + 1]) > 100)
				return cli_usage(c, "--prefix needs an object-name prefix of at "
						 "most 100 bytes");
			snprintf(prefix, sizeof(prefix), "%s", argv[++i]);
		} else if (strcmp(a, "--ledger") == 0) {
			if (i + 1 >= argc)
				return cli_usage(c, "--ledger needs a file name");
			record = argv[++i];
		} else if (strcmp(a, "--keep") == 0) {
			keep = true;
		} else if (a[0] == '-' && a[1]) {
			return cli_usage(c, "unknown option '%s'", a);
		} else if (!pool) {
			pool = a;
		} else if (!secs_s) {
			secs_s = a;
		} else {
			return cli_usage(c, "unexpected argument '%s'", a);
		}
	}
	if (!secs_s)
		return cli_usage(c, "give a pool and the seconds to run");
	if (cli_parse_uint(secs_s, 7 * 86400, &secs) || !secs)
		return cli_usage(c, "'%s' is not a number of seconds from 1 to 604800", secs_s);
	o.threads = (int)threads;
	o.prefix = prefix;
	o.seed = (uint64_t)getpid() ^ (uint64_t)(mono_now_s() * 1e6);
	if (record) {
		o.record = fopen(record, "w");
		if (!o.record) {
			cli_err("cannot write the ledger '%s': %s", record, strerror(errno));
			return CLI_EXIT_ERROR;
		}
		setvbuf(o.record, NULL, _IOLBF, 0);
	}
	ret = cli_open_pool(cl, pool, &io);
	if (ret) {
		if (o.record)
			fclose(o.record);
		return ret;
	}
	out = cl->json ? stderr : stdout;
	l = ledger_start(io, &o);
	if (!l) {
		cli_err("cannot start %d worker threads (out of memory)", o.threads);
		atoll_ioctx_destroy(io);
		if (o.record)
			fclose(o.record);
		return CLI_EXIT_ERROR;
	}
	fprintf(out, "verifying pool '%s' for %" PRIu64 " s: %d threads on objects '%st0' to "
		"'%st%d' (Ctrl-C ends early)\n", pool, secs, o.threads, prefix, prefix,
		o.threads * LEDGER_PER_THREAD - 1);
	fflush(out);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, &old);
	cli_progress_init(&bar, cl, "verifying", CLI_PROGRESS_SECONDS);
	t0 = mono_now_s();
	next = t0 + 10;
	while (!interrupted && mono_now_s() - t0 < (double)secs) {
		usleep(100000);
		if (mono_now_s() >= next) {
			char when[32];

			snprintf(when, sizeof(when), "%.0f s", mono_now_s() - t0);
			ledger_counts(l, &cnt);
			cli_progress_clear(&bar);
			print_line(out, when, &cnt);
			next += 10;
		}
		cli_progress_update(&bar, mono_now_s() - t0, (double)secs);
	}
	cli_progress_done(&bar);
	sigaction(SIGINT, &old, NULL);
	ledger_stop(l);
	verified = ledger_verify(l);
	ledger_counts(l, &cnt);
	print_line(out, "total", &cnt);
	if (cl->json)
		print_json(&cnt, verified, mono_now_s() - t0);
	ret = ledger_bad(&cnt) ? CLI_EXIT_ERROR : CLI_EXIT_OK;
	if (ret)
		cli_err("the cluster returned data that disagrees with what it acknowledged "
			"(lines above name the first objects); keep the objects for a look "
			"with --keep");
	else
		fprintf(out, "verified %" PRIu64 " objects: nothing lost, wrong or stale\n",
			verified);
	if (!keep && (e = ledger_remove_objects(l)) != 0) {
		cli_err("removing the verify objects failed: %s", atoll_strerror(e));
		if (!ret)
			ret = cli_exit_code(e);
	}
	ledger_free(l);
	atoll_ioctx_destroy(io);
	if (o.record)
		fclose(o.record);
	return ret;
}

const struct cli_cmd cli_verify_cmds[] = {
	{ "verify", "POOL SECONDS [-t THREADS] [--prefix P] [--ledger FILE] [--keep]",
	  "Checks that the cluster keeps what it acknowledges, e.g. through a\n"
	  "maintenance: THREADS workers (default 8) write, overwrite, append to,\n"
	  "delete and read 6 objects each (named P t0, P t1, ...; P defaults to\n"
	  "'atoll-verify.HOST.PID.') for SECONDS (Ctrl-C ends early), with an exact\n"
	  "model of every acknowledged write, then read every object once more.\n"
	  "Reports lost objects, wrong or stale content, versions that went back\n"
	  "and failed ops (a line every 10 s and a total); exit 0 when there is\n"
	  "none.  The objects are removed at the end unless --keep; --ledger FILE\n"
	  "records every acknowledged write.  --format json prints the total as\n"
	  "one JSON object.\n",
	  run_verify },
	{ NULL, NULL, NULL, NULL },
};
