/*
 * cli_bench.c - `atoll bench`: throughput and latency, as `rados bench`.
 *
 *   atoll bench POOL SECONDS write|seq|rand|cleanup [-b SIZE] [-t N]
 *               [--no-cleanup] [--max-ops N] [--run-name NAME]
 *
 * write: whole objects of SIZE (default 4 MiB) with write_full, N in
 * flight (default 16).  With --no-cleanup the objects stay and a small
 * metadata object (default "benchmark_last_metadata", or --run-name)
 * records their prefix, count and size, so that `seq` (every object in
 * order, whole, starting over after the last, for SECONDS) and `rand`
 * (reads of SIZE, default the object size, at random aligned offsets of
 * random objects) read them later;
 * `cleanup` removes them.  Without --no-cleanup write removes its objects
 * at the end, also when a write failed.
 *
 * The engine keeps N async ops in flight: completion callbacks (library
 * threads) record the latency and hand their slot back under bench.lock;
 * the main thread issues ops into free slots and prints one table row a
 * second.  MB/s here are MiB/s (2^20 bytes), as in fio's and rados' output.
 */
#include "cli.h"
#include "config.h"
#include "deadline.h"
#include "mono.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum bench_mode { B_WRITE, B_SEQ, B_RAND, B_REMOVE };

struct bench;

struct slot {
	struct bench *b;
	int idx;
	double t0;
	uint64_t bytes;
	char *buf;			/* read buffer (reads only) */
	char oid[300];
};

struct bench {
	pthread_mutex_t lock;		/* everything below that callbacks touch */
	pthread_cond_t cond;		/* a slot came back */
	struct atoll_ioctx *io;
	enum bench_mode mode;
	size_t op_size;
	uint64_t obj_size;
	int conc;
	struct slot *slots;
	int *free_slots, nfree;
	uint64_t started, finished, bytes;
	double *lat;			/* seconds, one per finished op */
	size_t nlat, caplat;
	double last_lat;
	int err;
	char err_oid[300];
	double t_last_done;
	/* objects */
	char prefix[256];
	uint64_t nobjects;		/* seq/rand/remove: how many exist */
	uint64_t next_obj;
	uint64_t max_ops;		/* 0 = no limit */
	char *wbuf;
	uint64_t rng;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void on_done(struct atoll_completion *comp, void *arg)
{
	struct slot *s = arg;
	struct bench *b = s->b;
	int64_t r = atoll_completion_return(comp);
	double t = mono_now_s(), lat = t - s->t0;

	atoll_completion_release(comp);
	pthread_mutex_lock(&b->lock);
	if (r < 0 && !(b->mode == B_REMOVE && r == -ENOENT) && b->err == 0) {
		b->err = (int)r;
		snprintf(b->err_oid, sizeof(b->err_oid), "%s", s->oid);
	}
	if (b->nlat == b->caplat) {
		size_t cap = b->caplat ? b->caplat * 2 : 65536;
		double *n = realloc(b->lat, cap * sizeof(*n));

		if (n) {
			b->lat = n;
			b->caplat = cap;
		}
	}
	if (b->nlat < b->caplat)
		b->lat[b->nlat++] = lat;
	b->last_lat = lat;
	b->finished++;
	if (r >= 0)
		b->bytes += b->mode == B_WRITE ? s->bytes : (b->mode == B_REMOVE ? 0 : (uint64_t)r);
	b->t_last_done = t;
	b->free_slots[b->nfree++] = s->idx;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

/* Whether another op may be issued (lock held). */
static bool more_ops(const struct bench *b)
{
	if (b->err)
		return false;
	if (b->max_ops && b->started >= b->max_ops)
		return false;
	if (b->mode == B_REMOVE && b->next_obj >= b->nobjects)
		return false;
	return true;
}

/* Issues one op in slot s (lock not held).  0 or a negative errno. */
static int issue(struct bench *b, struct slot *s)
{
	struct atoll_completion *comp;
	uint64_t obj, off = 0;
	int ret;

	ret = atoll_completion_create(on_done, s, NULL, &comp);
	if (ret)
		return ret;
	if (b->mode == B_RAND) {
		obj = rnd(&b->rng) % b->nobjects;
		if (b->obj_size > b->op_size)
			off = (rnd(&b->rng) % (b->obj_size / b->op_size)) * b->op_size;
	} else if (b->mode == B_SEQ) {
		obj = b->next_obj++ % b->nobjects;
	} else {
		obj = b->next_obj++;
	}
	snprintf(s->oid, sizeof(s->oid), "%s%" PRIu64, b->prefix, obj);
	s->bytes = b->op_size;
	s->t0 = mono_now_s();
	switch (b->mode) {
	case B_WRITE:
		ret = atoll_aio_write_full(b->io, s->oid, comp, b->wbuf, b->op_size, 0);
		break;
	case B_SEQ:
	case B_RAND:
		ret = atoll_aio_read(b->io, s->oid, comp, s->buf, b->op_size, off, 0);
		break;
	case B_REMOVE:
		ret = atoll_aio_remove(b->io, s->oid, comp, 0);
		break;
	}
	if (ret)
		atoll_completion_release(comp);
	return ret;
}

static void print_header(FILE *f)
{
	fprintf(f, "%5s %7s %9s %9s %9s %9s %9s %11s %11s\n", "sec", "cur ops",
		"started", "finished", "avg MB/s", "cur MB/s", "cur IOPS",
		"last lat ms", "avg lat ms");
}

/* Runs the engine for at most seconds (0 = until the objects run out). */
static int run_engine(struct bench *b, double seconds, FILE *table, struct cli_progress *bar)
{
	double t0 = mono_now_s(), end = t0 + (seconds > 0 ? seconds : 1e12), next_tick = t0 + 1;
	uint64_t prev_fin = 0, prev_bytes = 0;
	double lat_sum = 0;
	size_t lat_seen = 0;
	int sec = 0, ret = 0;

	if (table)
		print_header(table);
	pthread_mutex_lock(&b->lock);
	for (;;) {
		double t = mono_now_s();

		while (b->nfree > 0 && t < end && more_ops(b)) {
			struct slot *s = &b->slots[b->free_slots[--b->nfree]];

			b->started++;
			pthread_mutex_unlock(&b->lock);
			ret = issue(b, s);
			pthread_mutex_lock(&b->lock);
			if (ret) {
				b->free_slots[b->nfree++] = s->idx;
				b->started--;
				if (!b->err) {
					b->err = ret;
					snprintf(b->err_oid, sizeof(b->err_oid), "%s", s->oid);
				}
			}
		}
		if (b->nfree == b->conc && (t >= end || !more_ops(b)))
			break;
		if (t >= next_tick) {
			while (lat_seen < b->nlat)
				lat_sum += b->lat[lat_seen++];
			if (table) {
				double cur = (b->bytes - prev_bytes) / 1048576.0;

				cli_progress_clear(bar);
				fprintf(table, "%5d %7d %9" PRIu64 " %9" PRIu64 " %9.2f %9.2f %9" PRIu64
					" %11.3f %11.3f\n", sec, b->conc - b->nfree, b->started,
					b->finished, b->bytes / 1048576.0 / (t - t0), cur,
					b->finished - prev_fin, b->last_lat * 1e3,
					lat_seen ? lat_sum / lat_seen * 1e3 : 0.0);
				fflush(table);
			}
			prev_fin = b->finished;
			prev_bytes = b->bytes;
			sec++;
			next_tick += 1;
			if ((sec % 20) == 0 && table)
				print_header(table);
			if (seconds > 0)
				cli_progress_update(bar, t - t0, seconds);
		}
		{
			double wake = next_tick < end ? next_tick : end;
			struct timespec ts;

			if (b->nfree > 0 && t < end && more_ops(b))
				continue;
			wake -= mono_now_s();
			if (wake < 0.001)
				wake = 0.001;
			ts = deadline_ns(CLOCK_REALTIME, (uint64_t)(wake * 1e9));
			pthread_cond_timedwait(&b->cond, &b->lock, &ts);
		}
	}
	if (b->t_last_done < t0)
		b->t_last_done = mono_now_s();
	pthread_mutex_unlock(&b->lock);
	cli_progress_clear(bar);
	return b->err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)(p * (n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static void summary(struct bench *b, double elapsed, bool json, const char *mode)
{
	double sum = 0, mbps, iops;
	size_t n = b->nlat;

	qsort(b->lat, n, sizeof(double), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += b->lat[i];
	if (elapsed <= 0)
		elapsed = 1e-9;
	mbps = b->bytes / 1048576.0 / elapsed;
	iops = b->finished / elapsed;
	if (json) {
		printf("{\"mode\":\"%s\",\"seconds\":%.3f,\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64
		       ",\"op_size\":%zu,\"object_size\":%" PRIu64 ",\"concurrency\":%d,"
		       "\"MBps\":%.3f,\"iops\":%.1f,\"lat_avg_ms\":%.4f,\"lat_p50_ms\":%.4f,"
		       "\"lat_p99_ms\":%.4f,\"lat_max_ms\":%.4f,\"lat_min_ms\":%.4f}\n",
		       mode, elapsed, b->finished, b->bytes, b->op_size, b->obj_size, b->conc,
		       mbps, iops, n ? sum / n * 1e3 : 0, pct(b->lat, n, 0.5) * 1e3,
		       pct(b->lat, n, 0.99) * 1e3, n ? b->lat[n - 1] * 1e3 : 0,
		       n ? b->lat[0] * 1e3 : 0);
		return;
	}
	printf("Total time run:         %.3f s\n", elapsed);
	printf("Total %-17s%" PRIu64 "\n", b->mode == B_WRITE ? "writes made:" : "reads made:",
	       b->finished);
	printf("%-23s %zu\n", b->mode == B_WRITE ? "Write size:" : "Read size:", b->op_size);
	printf("Object size:            %" PRIu64 "\n", b->obj_size);
	printf("Concurrency:            %d\n", b->conc);
	printf("Bandwidth (MB/s):       %.2f\n", mbps);
	printf("Average IOPS:           %.0f\n", iops);
	printf("Average latency (ms):   %.3f\n", n ? sum / n * 1e3 : 0);
	printf("p50 latency (ms):       %.3f\n", pct(b->lat, n, 0.5) * 1e3);
	printf("p99 latency (ms):       %.3f\n", pct(b->lat, n, 0.99) * 1e3);
	printf("Max latency (ms):       %.3f\n", n ? b->lat[n - 1] * 1e3 : 0);
	printf("Min latency (ms):       %.3f\n", n ? b->lat[0] * 1e3 : 0);
}

static int bench_init(struct bench *b, struct atoll_ioctx *io, enum bench_mode mode,
		      size_t op_size, int conc)
{
	memset(b, 0, sizeof(*b));
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->io = io;
	b->mode = mode;
	b->op_size = op_size;
	b->conc = conc;
	b->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ 0x9e3779b97f4a7c15ull;
	b->slots = calloc(conc, sizeof(*b->slots));
	b->free_slots = calloc(conc, sizeof(int));
	if (!b->slots || !b->free_slots)
		return -ENOMEM;
	for (int i = 0; i < conc; i++) {
		b->slots[i].b = b;
		b->slots[i].idx = i;
		if (mode == B_SEQ || mode == B_RAND) {
			b->slots[i].buf = malloc(op_size ? op_size : 1);
			if (!b->slots[i].buf)
				return -ENOMEM;
		}
		b->free_slots[b->nfree++] = i;
	}
	return 0;
}

static void bench_fini(struct bench *b)
{
	if (b->slots)
		for (int i = 0; i < b->conc; i++)
			free(b->slots[i].buf);
	free(b->slots);
	free(b->free_slots);
	free(b->lat);
	free(b->wbuf);
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->cond);
}

/* The metadata object: "prefix objects object_size\n". */
static int read_meta(struct atoll_ioctx *io, const char *meta, char *prefix, size_t plen,
		     uint64_t *nobjects, uint64_t *obj_size)
{
	char buf[512], p[256];
	int64_t n = atoll_read(io, meta, buf, sizeof(buf) - 1, 0, 0);

	if (n < 0)
		return (int)n;
	buf[n] = 0;
	if (sscanf(buf, "%255s %" SCNu64 " %" SCNu64, p, nobjects, obj_size) != 3)
		return -EINVAL;
	snprintf(prefix, plen, "%s", p);
	return 0;
}

static int remove_objects(struct atoll_ioctx *io, const char *prefix, uint64_t n,
			  int conc, bool verbose)
{
	struct bench *b = malloc(sizeof(*b));
	int ret;

	if (!b)
		return -ENOMEM;
	ret = bench_init(b, io, B_REMOVE, 0, conc);
	if (ret == 0) {
		snprintf(b->prefix, sizeof(b->prefix), "%s", prefix);
		b->nobjects = n;
		if (verbose)
			fprintf(stderr, "removing %" PRIu64 " benchmark objects...\n", n);
		ret = run_engine(b, 0, NULL, NULL);
	}
	bench_fini(b);
	free(b);
	return ret;
}

static int run_bench(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	const char *pool = NULL, *mode_s = NULL, *secs_s = NULL;
	const char *meta = "benchmark_last_metadata";
	struct atoll_ioctx *io = NULL;
	struct bench *b = NULL;
	enum bench_mode mode;
	uint64_t op_size = 0, conc = 16, secs, max_ops = 0;
	bool cleanup = true, size_given = false;
	int npos = 0, ret, err;
	FILE *table;
	double elapsed;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-b") == 0 || strcmp(a, "--block-size") == 0) {
			if (i + 1 >= argc || config_parse_size(argv[++i], &op_size) ||
			    op_size == 0 || op_size > (64ull << 20))
				return cli_usage(c, "-b needs a size from 1 to 64M (e.g. 4K, 4M)");
			size_given = true;
		} else if (strcmp(a, "-t") == 0 || strcmp(a, "--concurrent-ios") == 0) {
			if (i + 1 >= argc || cli_parse_uint(argv[++i], 4096, &conc) || conc == 0)
				return cli_usage(c, "-t needs a number of ops in flight from 1 to 4096");
		} else if (strcmp(a, "--no-cleanup") == 0) {
			cleanup = false;
		} else if (strcmp(a, "--max-ops") == 0) {
			if (i + 1 >= argc || cli_parse_uint(argv[++i], UINT64_MAX, &max_ops))
				return cli_usage(c, "--max-ops needs a number");
		} else if (strcmp(a, "--run-name") == 0) {
			if (i + 1 >= argc)
				return cli_usage(c, "--run-name needs a name");
			meta = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			return cli_usage(c, "unknown option '%s'", a);
		} else if (npos == 0) {
			pool = a, npos++;
		} else if (npos == 1) {
			secs_s = a, npos++;
		} else if (npos == 2) {
			mode_s = a, npos++;
		} else {
			return cli_usage(c, "unexpected argument '%s'", a);
		}
	}
	if (npos != 3)
		return cli_usage(c, "give a pool, the seconds and write, seq, rand or cleanup");
	if (cli_parse_uint(secs_s, 86400, &secs))
		return cli_usage(c, "'%s' is not a number of seconds", secs_s);
	if (strcmp(mode_s, "write") == 0)
		mode = B_WRITE;
	else if (strcmp(mode_s, "seq") == 0)
		mode = B_SEQ;
	else if (strcmp(mode_s, "rand") == 0)
		mode = B_RAND;
	else if (strcmp(mode_s, "cleanup") == 0)
		mode = B_REMOVE;
	else
		return cli_usage(c, "'%s' is not a benchmark; use write, seq, rand or cleanup", mode_s);
	if (secs == 0 && mode != B_REMOVE)
		return cli_usage(c, "give at least 1 second");

	ret = cli_open_pool(cl, pool, &io);
	if (ret)
		return ret;
	b = malloc(sizeof(*b));
	if (!b) {
		ret = CLI_EXIT_ERROR;
		goto out;
	}
	memset(b, 0, sizeof(*b));
	table = cl->json ? stderr : stdout;

	if (mode == B_WRITE) {
		char host[64] = "host";

		if (!size_given)
			op_size = 4u << 20;
		err = bench_init(b, io, mode, op_size, (int)conc);
		b->wbuf = malloc(op_size);
		if (err || !b->wbuf) {
			cli_err("out of memory for %" PRIu64 " ops of %" PRIu64 " bytes", conc, op_size);
			ret = CLI_EXIT_ERROR;
			goto out_fini;
		}
		for (size_t i = 0; i < op_size; i++)
			b->wbuf[i] = (char)(rnd(&b->rng) >> 24);
		gethostname(host, sizeof(host) - 1);
		host[strcspn(host, ".")] = 0;
		snprintf(b->prefix, sizeof(b->prefix), "benchmark_data_%s_%d_object", host,
			 (int)getpid());
		b->obj_size = op_size;
		b->max_ops = max_ops;
		b->nobjects = UINT64_MAX;
		fprintf(table, "writing %" PRIu64 "-byte objects for up to %" PRIu64
			" s, %" PRIu64 " in flight, into pool '%s'\n", op_size, secs, conc, pool);
	} else {
		char prefix[256];
		uint64_t nobj, osz;

		err = read_meta(io, meta, prefix, sizeof(prefix), &nobj, &osz);
		if (err == -ENOENT) {
			cli_err("no benchmark objects in pool '%s' (no '%s'); write some first "
				"with: atoll bench %s 60 write --no-cleanup", pool, meta, pool);
			ret = CLI_EXIT_NOENT;
			goto out;
		}
		if (err) {
			cli_err("cannot read the benchmark metadata '%s': %s", meta,
				atoll_strerror(err));
			ret = cli_exit_code(err);
			goto out;
		}
		if (mode == B_REMOVE) {
			err = remove_objects(io, prefix, nobj, (int)conc, !cl->json);
			if (err == 0)
				err = atoll_remove(io, meta, 0);
			if (err) {
				cli_err("cleanup failed: %s", atoll_strerror(err));
				ret = cli_exit_code(err);
			}
			goto out;
		}
		if (!size_given || mode == B_SEQ)
			op_size = osz;
		if (op_size > osz)
			op_size = osz;
		err = bench_init(b, io, mode, op_size, (int)conc);
		if (err) {
			cli_err("out of memory for %" PRIu64 " ops of %" PRIu64 " bytes", conc, op_size);
			ret = CLI_EXIT_ERROR;
			goto out_fini;
		}
		snprintf(b->prefix, sizeof(b->prefix), "%s", prefix);
		b->nobjects = nobj;
		b->obj_size = osz;
		b->max_ops = max_ops;
		if (nobj == 0) {
			cli_err("the benchmark metadata '%s' lists no objects", meta);
			ret = CLI_EXIT_ERROR;
			goto out_fini;
		}
		fprintf(table, "reading (%s) %" PRIu64 "-byte pieces of %" PRIu64
			" objects of %" PRIu64 " bytes for up to %" PRIu64 " s, %" PRIu64
			" in flight\n", mode_s, op_size, nobj, osz, secs, conc);
	}

	{
		double t0 = mono_now_s();
		struct cli_progress bar;

		cli_progress_init(&bar, cl, mode_s, CLI_PROGRESS_SECONDS);
		err = run_engine(b, (double)secs, table, &bar);
		elapsed = b->t_last_done - t0;
	}
	if (err) {
		cli_err("%s of '%s' failed: %s", mode == B_WRITE ? "write" : "read",
			b->err_oid, atoll_strerror(err));
		ret = cli_exit_code(err);
		/* the objects written so far are removed, or kept, below */
	} else {
		summary(b, elapsed, cl->json, mode_s);
		ret = CLI_EXIT_OK;
	}
	if (mode == B_WRITE) {
		uint64_t written = b->next_obj;

		if (cleanup) {
			int e = remove_objects(io, b->prefix, written, (int)conc, !cl->json);

			if (e) {
				cli_err("removing the benchmark objects failed: %s", atoll_strerror(e));
				if (ret == CLI_EXIT_OK)
					ret = cli_exit_code(e);
			}
		} else {
			/* after a failed write too: `cleanup` then removes what
			 * was written (the objects that failed are skipped) */
			char m[512];
			int n = snprintf(m, sizeof(m), "%s %" PRIu64 " %" PRIu64 "\n", b->prefix,
					 written, op_size);

			err = atoll_write_full(io, meta, m, (size_t)n, 0);
			if (err) {
				cli_err("cannot write the benchmark metadata '%s': %s", meta,
					atoll_strerror(err));
				ret = cli_exit_code(err);
			}
		}
	}
out_fini:
	bench_fini(b);
out:
	free(b);
	atoll_ioctx_destroy(io);
	return ret;
}

const struct cli_cmd cli_bench_cmds[] = {
	{ "bench", "POOL SECONDS write|seq|rand|cleanup [-b SIZE] [-t N] [--no-cleanup] "
		   "[--max-ops N] [--run-name NAME]",
	  "Measures the cluster like `rados bench`: a table each second (ops in\n"
	  "flight, started, finished, MB/s, IOPS, latency) and a summary (bandwidth,\n"
	  "IOPS, latency average, p50, p99, max).  MB are MiB.\n"
	  "  write    writes whole objects of SIZE (-b, default 4M), N in flight\n"
	  "           (-t, default 16), for SECONDS or --max-ops objects; removes\n"
	  "           them at the end unless --no-cleanup, which keeps them and\n"
	  "           records them in the object 'benchmark_last_metadata' (or\n"
	  "           --run-name NAME) for seq and rand\n"
	  "  seq      reads the kept objects whole, in order, starting over after\n"
	  "           the last, for SECONDS\n"
	  "  rand     reads SIZE bytes (-b, default the object size) at a random\n"
	  "           aligned offset of a random kept object, for SECONDS\n"
	  "  cleanup  removes the kept objects and their metadata (SECONDS unused)\n"
	  "--format json prints the summary as one JSON object (the table goes to\n"
	  "stderr).\n",
	  run_bench },
	{ NULL, NULL, NULL, NULL },
};
