/*
 * floor-bench.c - the floor of issue 36: what a replicated atoll write or
 * a read costs at the wire and disk level, with no atoll logic in between,
 * so that atoll's CPU per op can be held against it (doc/benchmarks.md,
 * "The floor").
 *
 *   floor-bench write4k|write4m|read4k|read4m [--seconds N] [--dir DIR]
 *               [--inflight N] [--file-size SIZE] [--keep]
 *
 * One command runs every role, each in its own process: the client (this
 * process) and, forked from it so that its rusage of its children counts
 * them (bench/cpumeter.py), a primary and two replicas (reads: the
 * primary alone), over TCP on 127.0.0.2-4 (floor-net.c: the frames and
 * the loop; floor-roles.c: what each role does).  This file holds the
 * options, the start and the stop of the processes (whatever happens,
 * none and no file stays behind), the client and the report: one JSON
 * object with the field names of `atoll bench --format json`.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "floor.h"

static const char *role_name = "client";
pid_t fl_parent_pid;
static pid_t kids[3];
static const char *kid_names[3];
static int nkids;
static char files[3][PATH_MAX + 64];	/* the parent unlinks these at the end */
static int nfiles;

static void cleanup(void)
{
	for (int i = 0; i < nkids; i++)
		if (kids[i] > 0)
			kill(kids[i], SIGKILL);
	for (int i = 0; i < nkids; i++)
		if (kids[i] > 0)
			waitpid(kids[i], NULL, 0);
	nkids = 0;
	for (int i = 0; i < nfiles; i++)
		unlink(files[i]);
	nfiles = 0;
}

static void on_signal(int sig)
{
	cleanup();			/* kill, waitpid and unlink are async-signal-safe */
	_exit(128 + sig);
}

void fl_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "floor-bench: %s: ", role_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (getpid() == fl_parent_pid)
		cleanup();
	exit(1);
}

/* ---- the client and main ---- */

static void client(const struct opts *o, struct node *n, const struct sockaddr_in *primary)
{
	n->role = R_CLIENT;
	n->o = o;
	n->ep = epoll_create1(EPOLL_CLOEXEC);
	n->slots = calloc((size_t)o->inflight, sizeof(*n->slots));
	if (n->ep < 0 || !n->slots)
		fl_die("set-up: %s", strerror(errno));
	for (int i = 0; o->write && i < o->inflight; i++) {
		n->slots[i].buf = fl_alloc(o->size);
		for (size_t j = 0; j < o->size / sizeof(uint64_t); j++)
			((uint64_t *)n->slots[i].buf)[j] = (i + 1) * j * 0x9e3779b97f4a7c15ull;
	}
	n->rnd = fl_now_ns() | 1;
	fl_conn_init(n, 0, fl_dial(primary, "the primary"), "the primary");
	n->t_start = fl_now_ns();
	n->t_end = n->t_start + (uint64_t)(o->seconds * 1e9);
	n->active = o->inflight;
	for (int i = 0; i < o->inflight; i++)
		fl_client_start(n, &n->slots[i]);
	fl_run_loop(n);
	close(n->conn[0].fd);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: floor-bench WORKLOAD [--seconds N] [--dir DIR] [--inflight N]\n"
		"                   [--file-size SIZE] [--keep]\n"
		"\n"
		"The floor of issue 36: a client, a primary and two replicas (four processes,\n"
		"TCP on 127.0.0.2-4) doing what a replicated atoll write or a read does on the\n"
		"wire and the disk (crc32c-checked frames, O_DIRECT libaio, group commit with\n"
		"fdatasync), with nothing in between.  Prints one JSON object on stdout (ops,\n"
		"seconds, iops, MBps, lat_avg_ms, ...; the names of 'atoll bench --format json').\n"
		"\n"
		"workloads:\n"
		"  write4k   4 KiB writes, each to the next 4 KiB of the files, 16 in flight\n"
		"  write4m   4 MiB writes, the same way, 16 in flight\n"
		"  read4k    4 KiB reads at random offsets of a prefilled file, 32 in flight\n"
		"  read4m    4 MiB reads at random 4 MiB offsets, 16 in flight\n"
		"\n"
		"options:\n"
		"  --seconds N       how long to issue ops (default 10)\n"
		"  --dir DIR         the folder of the data files (default %s)\n"
		"  --inflight N      ops in flight, 1..%d\n"
		"  --file-size SIZE  bytes per file, with K, M or G: each server's file for\n"
		"                    writes (default 2G; the writes wrap around), the primary's\n"
		"                    prefilled file for reads (default 4G)\n"
		"  --keep            reads: keep the prefilled file (DIR/floor-bench-read.SIZE)\n"
		"                    and use it again next time instead of writing it anew;\n"
		"                    a run without --keep removes it\n",
		FLOOR_SCRATCH, INFLIGHT_MAX);
}

__attribute__((format(printf, 1, 2), noreturn))
static void bad(const char *fmt, ...)
{
	va_list ap;

	fputs("floor-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("; see floor-bench --help\n", stderr);
	exit(2);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		bad("--file-size takes a size like 4G, not '%s'", s);
	switch (*end) {
	case 'G': case 'g': v <<= 10;	/* fall through */
	case 'M': case 'm': v <<= 10;	/* fall through */
	case 'K': case 'k': v <<= 10;
		end++;
		break;
	}
	if (*end || v > (1ull << 50))
		bad("--file-size takes a size like 4G, not '%s'", s);
	return v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	static const struct { const char *name; bool write; uint32_t size; int inflight; } w[] = {
		{ "write4k", true, 4096, 16 }, { "write4m", true, 4 << 20, 16 },
		{ "read4k", false, 4096, 32 }, { "read4m", false, 4 << 20, 16 },
	};
	struct stat st;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			exit(0);
		}
	if (argc < 2)
		bad("no workload given");
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (!strcmp(argv[1], w[i].name)) {
			o->workload = w[i].name;
			o->write = w[i].write;
			o->size = w[i].size;
			o->inflight = w[i].inflight;
			o->file_size = w[i].write ? 2ull << 30 : 4ull << 30;
		}
	if (!o->workload)
		bad("unknown workload '%s' (write4k, write4m, read4k or read4m)", argv[1]);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!strcmp(a, "--keep")) {
			o->keep = true;
			continue;
		}
		if (strcmp(a, "--seconds") && strcmp(a, "--dir") && strcmp(a, "--inflight") &&
		    strcmp(a, "--file-size"))
			bad("unknown argument '%s'", a);
		if (!v)
			bad("%s needs a value", a);
		i++;
		if (!strcmp(a, "--dir")) {
			o->dir = v;
		} else if (!strcmp(a, "--file-size")) {
			o->file_size = parse_size(v);
		} else if (!strcmp(a, "--seconds")) {
			o->seconds = strtod(v, &end);
			if (*end || end == v || !(o->seconds > 0 && o->seconds <= 86400))
				bad("--seconds takes a number of seconds (0..86400], not '%s'", v);
		} else {
			long x = strtol(v, &end, 10);

			if (*end || end == v || x < 1 || x > INFLIGHT_MAX)
				bad("--inflight takes a number from 1 to %d, not '%s'", INFLIGHT_MAX, v);
			o->inflight = (int)x;
		}
	}
	if (o->file_size % o->size || o->file_size < (uint64_t)o->size * o->inflight)
		bad("--file-size must be a multiple of the op size (%" PRIu32 " bytes) and hold "
		    "the %d ops in flight", o->size, o->inflight);
	if (o->keep && o->write)
		bad("--keep is for the reads' prefilled file");
	if (!strcmp(o->dir, FLOOR_SCRATCH) && mkdir(o->dir, 0755) && errno != EEXIST)
		bad("cannot create the folder '%s': %s", o->dir, strerror(errno));
	if (strlen(o->dir) > PATH_MAX)
		bad("the folder's name is too long");
	if (stat(o->dir, &st) || !S_ISDIR(st.st_mode))
		bad("'%s' is not a folder", o->dir);
}

static void spawn(const struct opts *o, enum role role, const char *name, const char *path,
		  int lfd, const int *fds, int nfds, int readyfd, const struct sockaddr_in *reps)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fl_die("fork: %s", strerror(errno));
	if (!pid) {
		role_name = name;
		nkids = 0;	/* the parent's to stop and to clean */
		nfiles = 0;
		for (int i = 0; i < nfds; i++)
			if (fds[i] != lfd)
				close(fds[i]);
		fl_server(o, role, path, lfd, readyfd, reps);
	}
	kid_names[nkids] = name;
	kids[nkids++] = pid;
}

static double tv_s(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct opts o = { .seconds = 10, .dir = FLOOR_SCRATCH };
	struct sigaction sa = { .sa_handler = on_signal };
	struct sockaddr_in ap, reps[2];
	struct node n = { 0 };
	struct rusage ru;
	double cpu[4], elapsed, total = 0;
	int fds[4], ready[2], got = 0;
	ssize_t r;
	char b[4];

	parse_args(argc, argv, &o);
	fl_parent_pid = getpid();
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o.write) {
		nfiles = 3;
		snprintf(files[0], sizeof(files[0]), "%s/floor-bench.%d.primary", o.dir, fl_parent_pid);
		snprintf(files[1], sizeof(files[1]), "%s/floor-bench.%d.replica1", o.dir, fl_parent_pid);
		snprintf(files[2], sizeof(files[2]), "%s/floor-bench.%d.replica2", o.dir, fl_parent_pid);
	} else {
		/* named only with --keep (open_read_file); a run without it
		 * leaves nothing, not even the file an earlier one kept */
		nfiles = o.keep ? 0 : 1;
		snprintf(files[0], sizeof(files[0]), "%s/floor-bench-read.%" PRIu64, o.dir,
			 o.file_size);
	}
	fds[0] = fl_listen("127.0.0.2", &ap);
	fds[1] = o.write ? fl_listen("127.0.0.3", &reps[0]) : -1;
	fds[2] = o.write ? fl_listen("127.0.0.4", &reps[1]) : -1;
	if (pipe2(ready, O_CLOEXEC))
		fl_die("pipe: %s", strerror(errno));
	fds[3] = ready[0];
	if (o.write) {
		spawn(&o, R_REPLICA, "replica1", files[1], fds[1], fds, 4, ready[1], NULL);
		spawn(&o, R_REPLICA, "replica2", files[2], fds[2], fds, 4, ready[1], NULL);
	}
	spawn(&o, R_PRIMARY, "primary", files[0], fds[0], fds, 4, ready[1], reps);
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(ready[1]);
	/* each server writes a byte once ready and closes its end (or dies) */
	while ((r = read(ready[0], b, sizeof(b))) != 0) {
		if (r < 0 && errno != EINTR)
			fl_die("waiting for the servers: %s", strerror(errno));
		got += r > 0 ? (int)r : 0;
	}
	close(ready[0]);
	if (got < nkids) {
		usleep(100000);		/* its end of the pipe closes just before it exits */
		for (int i = 0; i < nkids; i++)
			if (waitpid(kids[i], NULL, WNOHANG) == kids[i]) {
				kids[i] = 0;
				fl_die("the %s failed to start (its message is above)", kid_names[i]);
			}
		fl_die("a server failed to start (its message is above)");
	}
	client(&o, &n, &ap);
	for (int i = 0; i < nkids; i++) {
		int st;

		if (wait4(kids[i], &st, 0, &ru) < 0)
			fl_die("waiting for the %s: %s", kid_names[i], strerror(errno));
		kids[i] = 0;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			fl_die("the %s failed", kid_names[i]);
		cpu[i + 1] = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
	}
	for (int i = 0; i < nfiles; i++)
		unlink(files[i]);
	nfiles = 0;
	getrusage(RUSAGE_SELF, &ru);
	cpu[0] = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
	if (!n.ops_done)
		fl_die("no op finished");
	elapsed = (double)(n.t_last - n.t_start) / 1e9;
	qsort(n.lat, n.nlat, sizeof(*n.lat), cmp_float);
	printf("{\"workload\":\"%s\",\"seconds\":%.3f,\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64
	       ",\"op_size\":%" PRIu32 ",\"concurrency\":%d,\"file_size\":%" PRIu64
	       ",\"MBps\":%.3f,\"iops\":%.1f,\"lat_avg_ms\":%.4f,\"lat_p50_ms\":%.4f"
	       ",\"lat_p99_ms\":%.4f,\"lat_max_ms\":%.4f,\"cpu_s\":{\"client\":%.4f",
	       o.workload, elapsed, n.ops_done, n.ops_done * o.size, o.size, o.inflight,
	       o.file_size, (double)(n.ops_done * o.size) / 1048576.0 / elapsed,
	       (double)n.ops_done / elapsed, (double)n.lat_sum / (double)n.ops_done / 1e6,
	       n.lat[n.nlat / 2], n.lat[(size_t)((double)(n.nlat - 1) * 0.99)],
	       n.lat[n.nlat - 1], cpu[0]);
	total = cpu[0];
	for (int i = 0; i < nkids; i++) {
		printf(",\"%s\":%.4f", kid_names[i], cpu[i + 1]);
		total += cpu[i + 1];
	}
	printf("},\"process_cpu_us_per_op\":%.2f}\n", total / (double)n.ops_done * 1e6);
	return 0;
}
