/*
 * thrash_client.c - the writer/verifier of the thrash test (thrash.sh).
 *
 *   thrash-client CONF POOL SEED LEDGER [THREADS]
 *
 * The ledger workload (tools/ledger.h: THREADS worker threads, default 8,
 * mutate and read objects t0..t(6 x THREADS - 1) of POOL with an exact
 * model of what was acknowledged) driven from stdin while thrash.sh and the
 * ha tests kill and restart daemons.  Every acknowledged mutation is
 * appended to LEDGER (one line: object, op, offset, length, the version
 * the cluster returned, crc of the content).  `atoll verify` runs the same
 * workload for a user.
 *
 * Commands on stdin: "mark LABEL [OBJECT...]" notes the moment (e.g. a
 * daemon was just killed): the first mutation issued after it and
 * acknowledged (on one of the OBJECTs, e.g. those whose PG's primary was
 * killed, when named) prints "mark LABEL: first write acknowledged after N ms"; "stall" prints "stall: longest op
 * N ms" over the ops finished since the previous "stall" (or the start)
 * and starts a new window; "stop" ends the workload (threads finish their
 * op) and prints the counts and "longest op N ms, longest gap between
 * acknowledged writes N ms" over the whole run; "verify" reads every
 * object once and compares it with the model; the program prints its
 * counts and exits 0 only if nothing was lost, wrong or stale and no op
 * failed with anything but a timeout (the tests also require 0 timeouts).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atoll/atoll.h"
#include "ledger.h"

static void print_counts(struct ledger *l, const char *when)
{
	struct ledger_counts c;

	ledger_counts(l, &c);
	printf("%s: creates %" PRIu64 " overwrites %" PRIu64 " appends %" PRIu64
	       " deletes %" PRIu64 " reads %" PRIu64 " timeouts %" PRIu64 " errors %" PRIu64
	       " lost %" PRIu64 " wrong %" PRIu64 " stale %" PRIu64 " version_bad %" PRIu64 "\n",
	       when, c.creates, c.overwrites, c.appends, c.deletes, c.reads,
	       c.timeouts, c.errors, c.lost, c.wrong, c.stale, c.version_bad);
	fflush(stdout);
}

/* "mark LABEL [OBJECT...]" and "stall" while the workload runs; false on
 * "stop". */
static bool command(struct ledger *l, char *line)
{
	if (strncmp(line, "stop", 4) == 0)
		return false;
	if (strncmp(line, "mark", 4) == 0) {
		char *save = NULL, *label = strtok_r(line + 4, " \n", &save), *objs[64], *w;
		int n = 0;

		while ((w = strtok_r(NULL, " \n", &save)) && n < 64)
			objs[n++] = w;
		int r = ledger_mark(l, label ? label : "", objs, n, stdout);

		if (r == -EINVAL)
			fprintf(stderr, "mark %s: an object named is not tN of this workload; "
				"ignored\n", label ? label : "");
		else if (r)
			fprintf(stderr, "mark %s: too many marks; ignored\n", label ? label : "");
	} else if (strncmp(line, "stall", 5) == 0) {
		printf("stall: longest op %.0f ms\n", (double)ledger_stall(l) / 1e6);
		fflush(stdout);
	}
	return true;
}

int main(int argc, char **argv)
{
	struct ledger_opts o = { .threads = 8, .prefix = "", .who = "thrash-client" };
	struct atoll_cluster *cl;
	struct atoll_ioctx *io;
	struct ledger_counts c;
	struct ledger *l;
	uint64_t op_max, gap_max, n;
	char line[8192];
	int r;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: thrash-client CONF POOL SEED LEDGER [THREADS]\n");
		return 2;
	}
	if (argc == 6) {
		o.threads = atoi(argv[5]);
		if (o.threads < 1 || o.threads > LEDGER_THREADS_MAX) {
			fprintf(stderr, "thrash-client: THREADS must be 1..%d\n",
				LEDGER_THREADS_MAX);
			return 2;
		}
	}
	o.seed = strtoull(argv[3], NULL, 10);
	o.record = fopen(argv[4], "w");
	if (!o.record) {
		perror(argv[4]);
		return 1;
	}
	setvbuf(o.record, NULL, _IOLBF, 0);
	r = atoll_cluster_create(&cl, argv[1], 0);
	if (!r)
		r = atoll_cluster_connect(cl);
	if (!r)
		r = atoll_ioctx_create(cl, argv[2], &io, 0);
	if (r) {
		fprintf(stderr, "thrash-client: cannot connect: %s\n", atoll_strerror(r));
		return 1;
	}
	l = ledger_start(io, &o);
	if (!l) {
		fprintf(stderr, "thrash-client: cannot start the workload (out of memory)\n");
		return 1;
	}
	printf("running\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && command(l, line))
		;
	ledger_stop(l);
	print_counts(l, "stopped");
	ledger_timing(l, &op_max, &gap_max);
	printf("longest op %.0f ms, longest gap between acknowledged writes %.0f ms\n",
	       (double)op_max / 1e6, (double)gap_max / 1e6);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "verify", 6) != 0)
		;
	n = ledger_verify(l);
	printf("verified %" PRIu64 " objects\n", n);
	print_counts(l, "final");
	ledger_counts(l, &c);
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(cl);
	ledger_free(l);
	fclose(o.record);
	return ledger_bad(&c) ? 1 : 0;
}
