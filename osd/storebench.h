/*
 * storebench.h - what the two halves of atoll-storebench share: the
 * options, the op engine that keeps ops in flight and times them
 * (storebench_run.c), the output, and the store helpers the workloads
 * (storebench.c) are written with.
 *
 * Everything shared carries the prefix sb_ (the storebench program).
 */
#ifndef ATOLL_OSD_STOREBENCH_H
#define ATOLL_OSD_STOREBENCH_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

#define OBJ_SIZE	(4 * MiB)	/* objects of write, overwrite, read sets */
#define IO_SIZE		4096u		/* overwrite and read size */

/* Collection ids of the benchmark's data sets. */
#define COLL_WRITE	1
#define COLL_READ	2
#define COLL_OVERWRITE	3
#define COLL_SMALL	10

/* The command line's settings (storebench.c). */
struct sb_opts {
	const char *dir;
	bool dir_given;
	bool keep;
	bool no_zero;		/* mkfs without writing zeros over the block */
	uint64_t size;
	double seconds;
	uint64_t count;
	unsigned qd;		/* 0 = each test's default */
	unsigned flushers;	/* 0 = the store's default */
	uint64_t prefill;
	uint64_t overwrite_set;
	uint64_t small_count;
	uint32_t small_size;
	uint32_t small_batch;
	uint64_t small_reads;
	unsigned stall_s;
	uint64_t seed;
	int tests;
	const char *log;	/* --log LEVEL, passed on to the measuring process */
};

extern struct sb_opts sb_opt;
/* Set by SIGINT/SIGTERM (sb_on_signal): stop issuing, report, clean up. */
extern volatile sig_atomic_t sb_interrupted;
/* Our own temporary folder (empty: none), removed by sb_cleanup_tmp(). */
extern char sb_tmp_dir[PATH_MAX];

void sb_on_signal(int sig);
/* xorshift64*, one stream per thread from the seed (0 means 1). */
void sb_rng_init(uint64_t seed);
uint64_t sb_rnd(void);
void sb_fill_random(void *buf, size_t len);
/* Stamps a 4 KiB block of a data set with its object and block number;
 * the read test checks the stamp (sb_read_done). */
void sb_stamp_block(void *blk, uint64_t obj, uint64_t bno);
/* Prints "atoll-storebench: MESSAGE", removes our temporary folder and
 * exits 1 (130 once interrupted). */
void sb_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void sb_rm_tree(const char *path);
void sb_cleanup_tmp(void);
const char *sb_errstr(int r);
int sb_cmp_u64(const void *a, const void *b);

/* Output: one "store<TAB>name<TAB>value<TAB>unit" line on stdout; the
 * human summary on stderr. */
void sb_metric(const char *name, double v, const char *unit);
void sb_human(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the op engine: qd ops in flight, each timed from issue to completion */

struct run;

struct slot {
	struct run *run;
	uint64_t t0;
	void *buf;		/* read buffer (read test) */
	uint64_t obj, bno;	/* what a read expects to find */
	unsigned idx;
};

/* Issues one op on s (s->t0 is set); returns 0 or a negative errno, in
 * which case no completion will come. */
typedef int (*submit_fn)(struct run *r, struct slot *s, uint64_t seq);

struct run {
	const char *what;
	struct store *st;
	unsigned qd;
	uint64_t limit_ops;	/* stop issuing after this many (0 = no limit) */
	double seconds;		/* stop issuing after this long (0 = no limit) */
	submit_fn submit;
	bool verify_reads;
	size_t expect_len;	/* read completions must return this many bytes */
	/* chain: a completion issues the next op itself, on the store's
	 * thread, as an event-driven caller (and fio) would; the main thread
	 * only fills the queue at the start and waits. */
	bool chain;
	uint64_t deadline;	/* ns, 0 = none */
	uint64_t seq;		/* ops issued (under lock) */

	pthread_mutex_t lock;	/* protects everything below */
	pthread_cond_t cond;	/* signalled when a slot comes back */
	struct slot *slots;
	unsigned *free_stack;
	unsigned nfree;
	uint64_t done;
	uint64_t verify_errors;
	int first_err;
	uint64_t *lat;		/* ns per completed op */
	size_t nlat, cap;

	uint64_t elapsed_ns;	/* first issue to last completion */
};

struct result {
	double secs, iops, mbps, p50_us, p99_us, max_us;
	uint64_t ops;
};

struct store_paths {
	char block[PATH_MAX];
	char kv[PATH_MAX];
};

/* Completions to give the store, with the slot as their argument. */
void sb_txn_done(void *arg, int r);
void sb_read_done(void *arg, int64_t n);
/* qd slots (with a bufsize buffer each when not 0); the caller sets
 * submit and the limits, then sb_run_go, sb_run_result, sb_run_fini. */
void sb_run_init(struct run *r, const char *what, struct store *st, unsigned qd,
		 size_t bufsize);
void sb_run_fini(struct run *r);
/* Runs ops until the time or count limit, keeping qd in flight; returns
 * 0 or the first error of any op. */
int sb_run_go(struct run *r);
struct result sb_run_result(struct run *r, size_t op_bytes);
/* The figures of res as metrics named PREFIX_MBps, ..., and as a line of
 * the human summary. */
void sb_report(const char *prefix, const struct result *res);
void sb_human_result(const char *what, const struct result *res);

/* ---- the store ------------------------------------------------------- */

void sb_paths_of(struct store_paths *p, const char *dir);
void sb_opts_of(struct store_options *so, const struct store_paths *p, uint64_t block_size,
		uint64_t kv_max);
/* Opens the store in dir, creating it (block_size, kv_max) first when the
 * folder holds none. */
struct store *sb_open_or_create(const char *dir, uint64_t block_size, uint64_t kv_max,
				bool *created);
/* Drops the page cache of every file under dir (a cold reopen). */
void sb_drop_cache(const char *dir);
void sb_ensure_coll(struct store *st, uint64_t coll);
uint64_t sb_count_objects(struct store *st, uint64_t coll);
uint64_t sb_free_bytes(struct store *st);
/* "P.0000000042" */
void sb_obj_name(char *out, size_t n, char prefix, uint64_t i);

#endif
