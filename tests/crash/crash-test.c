/*
 * crash-test.c - kills the store at random moments and checks that what
 * it acknowledged survived and that nothing half-applied is visible.
 *
 * Modes:
 *   kill      kill -9 crash-child at random moments and reopen the files
 *             as they are (the page cache survives a kill);
 *   powercut  run crash-child under powercut_shim.so, then rebuild the disk
 *             a power cut would leave (pcdisk.c) and reopen that;
 *   unsafe    powercut against a store opened with unsafe_skip_data_flush:
 *             passes only if the harness catches the damage;
 *   nokvsync  powercut where the shim pretends the kv's syncs never
 *             happened (a store that forgot to sync its kv): passes only
 *             if the harness catches that too;
 *   unsafelog powercut against a store opened with unsafe_skip_log_flush
 *             (batches that write only their log record skip the block
 *             flush): passes only if the harness catches it.
 *
 * Each round: run the child from the state the last round left, kill it,
 * then in a forked verifier open the store (every other round read-only
 * first: the log replayed
 * into memory only: reads go through the log's index and the overlay of
 * logged attribute/omap mutations), read the ledger (m = number of
 * applied transactions), check that m covers every acknowledged one and
 * that the whole store equals the model after exactly transactions
 * 0..m-1; then read-write: the log is checkpointed into the blocks and
 * the kv; check the same again) and that a deep fsck is clean.  The model is advanced to m and the next
 * round continues from there.  The verifier runs in its own process so
 * that a store that crashes on what it finds is reported, not fatal.
 *
 * In powercut mode each round also cuts power at an earlier point of the
 * child's write log (mostly right after an acknowledgement, the
 * child logging each one through its ack file): that copy is verified with
 * what had been acknowledged by then, and thrown away.  Cuts right after an
 * acknowledgement are where a store that acknowledges too early is caught.
 * When the log has acknowledgements made while the block file had writes
 * no completed sync covered, one more cut goes right after one of them,
 * with each of those writes lost or torn (early_cuts()).
 *
 * A forgotten flush that other flushes usually cover.  commit.c
 * write_data() once returned early for a batch without copy-on-write
 * data, so a batch whose data had all been prewritten (prewrite.c: large
 * aligned writes, on the device at queue time) went to its kv commit
 * without a block flush.  The harness as it was then passed with that
 * store in 5 runs of 5: batches of 32 transactions nearly always carry
 * some copy-on-write data, whose flush covered the prewrites, and the cut
 * after an acknowledgement seldom fell between the ack and the next block
 * flush, and even then lost the write in one cut of three only.  Three things make
 * it visible now: the mixed workload has runs of large-aligned-writes-only
 * transactions (workload.c gen_aligned), half the power-cut rounds keep
 * 1-6 transactions in flight (small batches), and the extra cut above.
 * Measured with that line put back in a copy of the tree (release build):
 * crash-powercut failed in 30 runs of 30 (seeds 1001-1030; the first bad
 * round 1 to 12, median 2-3) and in 20 of 20 under meson test with random
 * seeds; with the workload and in-flight changes alone, 10 of 10, later;
 * with the extra cut alone, 3 of 6.  The store as it is passed all of 21
 * runs (seeds 1001-1012, 9 under meson test) and made no exposed
 * acknowledgement in any of them, so the extra cut costs it nothing; the
 * larger writes cost crash-powercut a few seconds (17-28 s, was 16-20 s).
 *
 * The seed is printed; ATOLL_TEST_SEED=N replays a run.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crash-proto.h"
#include "pcdisk.h"
#include "workload.h"
#include "testutil.h"

#define SKIP 77
#define COUNT_PLAN_TIMEOUT_MS 5000

enum mode { MODE_KILL, MODE_POWERCUT, MODE_UNSAFE, MODE_NOKVSYNC, MODE_UNSAFELOG };

struct harness {
	enum mode mode;
	const char *name;		/* for messages: crash-kill, ... */
	uint64_t seed;
	uint64_t rng;			/* kill timing and power-cut fates */
	enum wl_profile prof;
	const char *child_path, *shim_path;
	char root[1024], w[1100], wblock[1200], wkv[1200], d[1100], logp[1100];
	char x[1100], xblock[1200], xkv[1200], ackp[1200];
	const char *vblock, *vkv;	/* the store the verifier opens */
	struct wl_model model;
	/* totals */
	unsigned rounds, verified, lost;
	unsigned early, early_after_ack;	/* extra cuts at earlier log points */
	unsigned early_exposed;		/* ... after an ack, block writes unsynced */
	unsigned inflight;		/* the child's --inflight this round */
	uint64_t acked_total;
	struct pc_stats pc;
	unsigned printed;		/* problems printed by this verifier */
};

/* the child currently running, for the signal handler */
static volatile pid_t running_child = -1;
static char *cleanup_root;
static bool verbose;		/* ATOLL_CRASH_VERBOSE: a line per round */

/* SIGTERM from a test runner's timeout: take the child and the files with
 * us.  pc_rmtree is not async-signal-safe; we are about to _exit anyway. */
static void on_signal(int sig)
{
	pid_t p = running_child;

	if (p > 0) {
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
	if (cleanup_root)
		pc_rmtree(cleanup_root);
	_exit(128 + sig);
}

static void open_options(const char *block, const char *kv, struct store_options *o)
{
	memset(o, 0, sizeof(*o));
	o->size_of = sizeof(*o);
	o->block_path = block;
	o->kv_path = kv;
	o->kv_max = CRASH_KV_MAX;
}

/* 0, SKIP or -1 */
static int make_store(struct harness *h)
{
	struct store_options o;
	struct store *st;
	int r;

	if (pc_mkdir(h->w) < 0 || pc_mkdir(h->wkv) < 0) {
		fprintf(stderr, "%s: cannot create '%s': %s\n", h->name, h->w, strerror(errno));
		return -1;
	}
	open_options(h->wblock, h->wkv, &o);
	o.block_size = CRASH_BLOCK_SIZE;
	r = store_mkfs(&o);
	if (r == -EINVAL) {
		fprintf(stderr, "%s: store_mkfs on '%s' says EINVAL (no O_DIRECT on this "
			"file system?); set TMPDIR to a disk file system; skipping\n",
			h->name, h->root);
		return SKIP;
	}
	if (r < 0) {
		fprintf(stderr, "%s: store_mkfs '%s' failed: %s\n", h->name, h->wblock, strerror(-r));
		return -1;
	}
	r = store_open(&o, &st);
	if (r < 0) {
		fprintf(stderr, "%s: store_open after mkfs failed: %s\n", h->name, strerror(-r));
		return -1;
	}
	r = wl_setup_store(st);
	store_close(st);
	if (r < 0) {
		fprintf(stderr, "%s: creating the collections and the ledger failed: %s\n",
			h->name, strerror(-r));
		return -1;
	}
	wl_model_init(&h->model);
	if (h->mode != MODE_KILL) {
		/* mkfs preallocated the block; a hole-keeping copy reads the
		 * same and makes every later copy cheap */
		char tmp[1300];

		snprintf(tmp, sizeof(tmp), "%s.sparse", h->wblock);
		r = pc_copy_file(h->wblock, tmp);
		if (r < 0 || rename(tmp, h->wblock) < 0) {
			fprintf(stderr, "%s: cannot make '%s' sparse: %s\n", h->name,
				h->wblock, strerror(r < 0 ? -r : errno));
			return -1;
		}
	}
	return 0;
}

/* ---- the child ------------------------------------------------------- */

struct plan {
	bool by_count;
	unsigned count;		/* kill after this many acknowledgements */
	unsigned delay_ms;	/* or this long after the start */
};

struct outcome {
	bool ready;		/* the store opened */
	bool exited;		/* the child ended by itself */
	int status;
	int64_t acked;		/* highest acknowledged txn + 1, 0 if none */
	unsigned nacks;
	int failed_err;		/* from CRASH_MSG_FAILED / ORDER */
	uint32_t failed_kind;
	uint64_t failed_n;
	bool timed_out;		/* a by_count plan that never reached its count */
};

static void take_msgs(int fd, struct outcome *out, bool *eof)
{
	struct crash_msg buf[256];
	ssize_t n;
	size_t i;

	n = read(fd, buf, sizeof(buf));
	if (n == 0) {
		*eof = true;
		return;
	}
	if (n < 0) {
		if (errno != EINTR && errno != EAGAIN)
			*eof = true;
		return;
	}
	/* records are 16 bytes and the pipe delivers whole writes: n is a multiple */
	for (i = 0; i < (size_t)n / sizeof(buf[0]); i++) {
		switch (buf[i].kind) {
		case CRASH_MSG_READY:
			out->ready = true;
			break;
		case CRASH_MSG_DONE:
			out->nacks++;
			if ((int64_t)buf[i].n + 1 > out->acked)
				out->acked = (int64_t)buf[i].n + 1;
			break;
		case CRASH_MSG_FAILED:
		case CRASH_MSG_ORDER:
			out->failed_kind = buf[i].kind;
			out->failed_err = buf[i].err;
			out->failed_n = buf[i].n;
			break;
		default:
			break;
		}
	}
}

static int spawn_child(struct harness *h, int wfd, bool shim, bool unsafe)
{
	char seed[32], start[32], fdstr[16], prof[16], inflight[16];
	pid_t pid;

	snprintf(seed, sizeof(seed), "%" PRIu64, h->seed);
	snprintf(start, sizeof(start), "%" PRIu64, h->model.applied);
	snprintf(fdstr, sizeof(fdstr), "%d", wfd);
	snprintf(prof, sizeof(prof), "%d", (int)h->prof);
	snprintf(inflight, sizeof(inflight), "%u", h->inflight);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *args[] = {
			(char *)h->child_path, "--block", h->wblock, "--kv", h->wkv,
			"--seed", seed, "--start", start, "--fd", fdstr, "--profile", prof,
			"--ack-file", h->ackp, "--inflight", inflight,
			unsafe ? (h->mode == MODE_UNSAFELOG ? "--unsafe-skip-log-flush"
							    : "--unsafe-skip-data-flush") : NULL,
			NULL,
		};

		/* die with the parent, whatever kills it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		if (getppid() == 1)
			_exit(126);
		if (fcntl(wfd, F_SETFD, 0) < 0)
			_exit(126);
		if (shim) {
			const char *asan = getenv("ASAN_OPTIONS");
			char buf[1024];

			setenv("LD_PRELOAD", h->shim_path, 1);
			setenv("ATOLL_PC_DIR", h->w, 1);
			setenv("ATOLL_PC_LOG", h->logp, 1);
			if (h->mode == MODE_NOKVSYNC)
				setenv("ATOLL_PC_NOSYNC", "kv/data.mdb", 1);
			/* the shim comes before an ASan runtime in the load order */
			snprintf(buf, sizeof(buf), "%s%sverify_asan_link_order=0",
				 asan ? asan : "", asan ? ":" : "");
			setenv("ASAN_OPTIONS", buf, 1);
		}
		execv(h->child_path, args);
		fprintf(stderr, "%s: cannot run '%s': %s\n", h->name, h->child_path, strerror(errno));
		_exit(127);
	}
	running_child = pid;
	return pid;
}

/* Runs the child under plan, kills it, reaps it; 0 or -1 (could not run). */
static int run_child(struct harness *h, const struct plan *p, bool shim, bool unsafe,
		     struct outcome *out)
{
	int pfd[2];
	pid_t pid;
	double t0, deadline;
	bool eof = false;

	memset(out, 0, sizeof(*out));
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	pid = spawn_child(h, pfd[1], shim, unsafe);
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return -1;
	}
	t0 = tu_now_ms_f();
	deadline = t0 + (p->by_count ? COUNT_PLAN_TIMEOUT_MS : p->delay_ms);
	while (!eof) {
		struct pollfd pf = { pfd[0], POLLIN, 0 };
		double left = deadline - tu_now_ms_f();
		int pr;

		if (p->by_count && out->nacks >= p->count)
			break;
		if (left <= 0) {
			out->timed_out = p->by_count;
			break;
		}
		pr = poll(&pf, 1, (int)(left + 0.999));
		if (pr > 0)
			take_msgs(pfd[0], out, &eof);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &out->status, 0) < 0 && errno == EINTR)
		;
	running_child = -1;
	out->exited = !(WIFSIGNALED(out->status) && WTERMSIG(out->status) == SIGKILL);
	/* the child is gone: everything it wrote is in the pipe, then EOF */
	while (!eof)
		take_msgs(pfd[0], out, &eof);
	close(pfd[0]);
	return 0;
}

/* ---- verification ---------------------------------------------------- */

#define MAX_PRINTED 25

/* Prints the first MAX_PRINTED problems of a verification, then counts. */
static void print_problem(void *arg, const char *msg)
{
	struct harness *h = arg;

	if (++h->printed <= MAX_PRINTED)
		fprintf(stderr, "%s: round %u: %s\n", h->name, h->rounds, msg);
	else if (h->printed == MAX_PRINTED + 1)
		fprintf(stderr, "%s: round %u: (more problems not shown)\n", h->name, h->rounds);
}

/* Runs in the forked verifier: writes the ledger count (int64, negative
 * errno if unreadable) to fd, then returns the number of problems. */
static int verify_in_child(struct harness *h, int64_t acked, int fd)
{
	struct store_options o;
	struct store *st;
	int64_t applied;
	int problems = 0, r;
	double t0 = tu_now_ms_f(), ta, tb, tc;

	open_options(h->vblock, h->vkv, &o);
	/* Every other round first read-only: the log's records are replayed
	 * into memory, not checkpointed, so every read goes through the log's
	 * index and the overlay of its kv mutations (merged listings
	 * included).  (Every round would cost the suite's time budget.) */
	bool ro_first = h->rounds % 2 == 0;

	o.readonly = ro_first;
	r = store_open(&o, &st);
	if (r < 0) {
		applied = r;
		if (write(fd, &applied, sizeof(applied)) < 0)
			return 1;
		fprintf(stderr, "%s: round %u: store_open after the crash failed: %s\n",
			h->name, h->rounds, strerror(-r));
		return 1;
	}
	applied = wl_read_ledger(st);
	if (write(fd, &applied, sizeof(applied)) < 0)
		problems++;
	if (applied < 0) {
		fprintf(stderr, "%s: round %u: reading the ledger failed: %s\n",
			h->name, h->rounds, strerror((int)-applied));
		problems++;
		goto out_close;
	}
	if ((uint64_t)applied < h->model.applied) {
		fprintf(stderr, "%s: round %u: the store went back: %" PRId64 " txns applied, "
			"%" PRIu64 " were before this round\n", h->name, h->rounds,
			applied, h->model.applied);
		problems++;
		goto out_close;
	}
	if (applied < acked) {
		fprintf(stderr, "%s: round %u: LOST acknowledged txns: the store has %" PRId64
			" txns applied but txn %" PRId64 " was acknowledged\n",
			h->name, h->rounds, applied, acked - 1);
		problems++;
	}
	if ((uint64_t)applied > h->model.applied + 10000000) {
		fprintf(stderr, "%s: round %u: the ledger says %" PRId64 " txns, absurd\n",
			h->name, h->rounds, applied);
		problems++;
		goto out_close;
	}
	ta = tu_now_ms_f();
	wl_model_advance(&h->model, h->seed, h->prof, (uint64_t)applied);
	tb = tu_now_ms_f();
	problems += wl_verify(st, &h->model, print_problem, h);
	tc = tu_now_ms_f();
	/* Then read-write: open checkpoints the log (blocks in place, kv
	 * mutations into the kv) and the same state must read back. */
	if (ro_first) {
		store_close(st);
		o.readonly = false;
		r = store_open(&o, &st);
	}
	if (r < 0) {
		fprintf(stderr, "%s: round %u: store_open (read-write) after the crash failed: %s\n",
			h->name, h->rounds, strerror(-r));
		return problems + 1;
	}
	if (wl_read_ledger(st) != applied) {
		fprintf(stderr, "%s: round %u: the ledger changed from %" PRId64 " to %" PRId64
			" at the read-write open\n", h->name, h->rounds, applied, wl_read_ledger(st));
		problems++;
	}
	if (ro_first)
		problems += wl_verify(st, &h->model, print_problem, h);
	r = store_fsck(st, true, print_problem, h);
	if (verbose)
		fprintf(stderr, "%s: round %u: open %.0f ms, model %.0f ms, compare %.0f ms, "
			"fsck %.0f ms\n", h->name, h->rounds, ta - t0, tb - ta, tc - tb,
			tu_now_ms_f() - tc);
	if (r < 0) {
		fprintf(stderr, "%s: round %u: fsck could not run: %s\n",
			h->name, h->rounds, strerror(-r));
		problems++;
	} else {
		problems += r;
	}
out_close:
	ta = tu_now_ms_f();
	store_close(st);
	if (verbose)
		fprintf(stderr, "%s: round %u: close %.0f ms\n", h->name, h->rounds, tu_now_ms_f() - ta);
	return problems;
}

/* Prints the txns of this round, so a failure can be read without a rerun. */
static void describe_round(struct harness *h, uint64_t from, uint64_t to)
{
	char buf[2048];
	struct wl_txn t;
	uint64_t n;

	if (to > from + 40)
		from = to - 40;
	for (n = from; n < to; n++) {
		wl_gen(h->seed, n, h->prof, &t);
		wl_describe(&t, buf, sizeof(buf));
		wl_txn_release(&t);
		fprintf(stderr, "%s:   %s\n", h->name, buf);
	}
}

/* Verifies the store in dir (with block and kv inside) after a crash.
 * Returns 0 (clean; with advance, the model is advanced to the store's
 * state), 1 (problems, printed) or -1 (could not run). */
static int verify(struct harness *h, const char *block, const char *kv, int64_t acked,
		  int64_t queued_hint, bool advance)
{
	int pfd[2], status;
	int64_t applied = -1;
	uint64_t before;
	pid_t pid;
	ssize_t n;

	h->vblock = block;
	h->vkv = kv;
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int problems;

		close(pfd[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		problems = verify_in_child(h, acked, pfd[1]);
		wl_model_free(&h->model);
		exit(problems ? 1 : 0);
	}
	running_child = pid;
	close(pfd[1]);
	n = read(pfd[0], &applied, sizeof(applied));
	close(pfd[0]);
	before = h->model.applied;
	/* advance our copy of the model while the verifier checks the store */
	if (advance && n == sizeof(applied) && applied >= 0 && (uint64_t)applied >= before &&
	    (uint64_t)applied <= before + 10000000)
		wl_model_advance(&h->model, h->seed, h->prof, (uint64_t)applied);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	running_child = -1;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "%s: round %u: the verifier died of signal %d (the store "
			"crashed while reading what the crash left)\n",
			h->name, h->rounds, WTERMSIG(status));
	} else if (WEXITSTATUS(status) == 0 && n == sizeof(applied) && applied >= 0) {
		return 0;
	}
	if (n == sizeof(applied) && applied >= 0 && (uint64_t)applied >= before) {
		fprintf(stderr, "%s: seed %" PRIu64 ": the round started at txn %" PRIu64
			", the store holds %" PRId64 ", %" PRId64 " were acknowledged; "
			"the round's last txns:\n", h->name, h->seed, before,
			applied, acked);
		describe_round(h, before,
			       (uint64_t)(applied > queued_hint ? applied : queued_hint));
	}
	return 1;
}

/* ---- power cut ------------------------------------------------------- */

static const char *const durable_files[] = { "block", "kv/data.mdb", NULL };

static int copy_durable(struct harness *h, const char *from, const char *to)
{
	char a[1400], b[1400];
	unsigned i;
	int r;

	if (pc_rmtree(to) < 0 || pc_mkdir(to) < 0)
		return -1;
	snprintf(a, sizeof(a), "%s/kv", to);
	if (pc_mkdir(a) < 0)
		return -1;
	for (i = 0; durable_files[i]; i++) {
		snprintf(a, sizeof(a), "%s/%s", from, durable_files[i]);
		snprintf(b, sizeof(b), "%s/%s", to, durable_files[i]);
		r = pc_copy_file(a, b);
		if (r < 0) {
			fprintf(stderr, "%s: cannot copy '%s': %s\n", h->name, a, strerror(-r));
			return -1;
		}
	}
	return 0;
}

/* Copies w's durable files to d, before the child runs. */
static int save_durable(struct harness *h)
{
	if (copy_durable(h, h->w, h->d) < 0)
		return -1;
	if (unlink(h->logp) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

/* The acknowledgements of a log: ack[i] is the record index of the i-th;
 * exposed lists those made while the block file had a write that no
 * completed sync of it covered (seq >= every sync's start).  Returns the
 * number of acks, or -1 (out of memory); *nexposed gets the others. */
static long find_acks(const struct pc_log *lg, size_t **ack, size_t **exposed, size_t *nexposed)
{
	int ackfid = pc_log_fid(lg, "acks"), blockfid = pc_log_fid(lg, "block");
	uint64_t synced = 0;		/* block writes with seq < this are durable */
	int64_t last_write = -1;	/* seq of the last unsynced block write */
	size_t k, n = 0, ne = 0;

	*ack = calloc(lg->n + 1, sizeof(**ack));
	*exposed = calloc(lg->n + 1, sizeof(**exposed));
	if (!*ack || !*exposed) {
		free(*ack);
		free(*exposed);
		return -1;
	}
	for (k = 0; k < lg->n; k++) {
		const struct pc_rec *r = &lg->ents[k].h;

		if (r->type == PC_SYNC && ((int)r->fid == blockfid || r->fid == PC_FID_ALL) &&
		    r->arg > synced)
			synced = r->arg;
		else if (r->type == PC_WRITE && blockfid >= 0 && (int)r->fid == blockfid &&
			 !(r->flags & PC_F_DURABLE))
			last_write = (int64_t)r->seq;
		else if (r->type == PC_WRITE && ackfid >= 0 && (int)r->fid == ackfid) {
			(*ack)[n++] = k;
			if (last_write >= 0 && (uint64_t)last_write >= synced)
				(*exposed)[ne++] = k;
		}
	}
	*nexposed = ne;
	return (long)n;
}

/* A power cut right after record cut-1 of the log, verified on a scratch
 * copy of d (the disk before the child ran) with what had been
 * acknowledged by then, and thrown away.  0, 1 (problems) or -1. */
static int cut_and_verify(struct harness *h, const struct pc_log *lg, size_t cut,
			  enum pc_fate fate, const char *kind)
{
	int ackfid = pc_log_fid(lg, "acks");
	int64_t acked = 0;
	struct pc_stats st;
	char err[512];
	size_t k;
	int r;

	for (k = 0; k < cut; k++) {
		const struct pc_entry *e = &lg->ents[k];
		uint64_t n;

		if (e->h.type != PC_WRITE || (int)e->h.fid != ackfid || e->h.len != 8)
			continue;
		memcpy(&n, e->data, 8);
		if ((int64_t)n + 1 > acked)
			acked = (int64_t)n + 1;
	}
	if (copy_durable(h, h->d, h->x) < 0)
		return -1;
	if (pc_reconstruct(lg, cut, h->x, durable_files, fate, &h->rng, &st,
			   err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", h->name, err);
		return -1;
	}
	h->early++;
	if (verbose)
		fprintf(stderr, "%s: round %u: early cut %s, after record %zu of %zu, %" PRId64
			" acknowledged by then\n", h->name, h->rounds, kind, cut, lg->n, acked);
	r = verify(h, h->xblock, h->xkv, acked, acked, false);
	if (r == 0)
		h->verified++;
	else if (r > 0)
		fprintf(stderr, "%s: round %u: the failed cut was %s, after record %zu of %zu "
			"of the write log\n", h->name, h->rounds, kind, cut, lg->n);
	pc_rmtree(h->x);
	return r;
}

/* Power cuts at earlier points of the log:
 *  - one in every round: two times in three right after an
 *    acknowledgement, else at any record; unsynced writes lost, applied
 *    whole or torn at random;
 *  - one more when the log has "exposed" acknowledgements (find_acks: made
 *    while the block file had unsynced writes): right after one of them,
 *    every unsynced write lost or torn, never applied whole
 *    (PC_FATE_NOT_WHOLE).  If the acknowledged data is among those writes
 *    -- a batch whose data reached the device without a block flush before
 *    its kv commit -- it is damaged for certain, not in one cut of three.
 *    The store as it should be acknowledges only after the block flush
 *    that follows its last block write (commit.c), so this cut is rare
 *    when nothing is wrong.
 * 0, 1 (problems) or -1. */
static int early_cuts(struct harness *h, const struct pc_log *lg)
{
	size_t *acks, *exposed, nexposed, cut;
	const char *kind = "at a random record";
	long nacks;
	int r;

	nacks = find_acks(lg, &acks, &exposed, &nexposed);
	if (nacks < 0) {
		fprintf(stderr, "%s: out of memory\n", h->name);
		return -1;
	}
	if (nacks && pc_below(&h->rng, 3)) {
		cut = acks[pc_below(&h->rng, (uint64_t)nacks)] + 1;
		kind = "right after an acknowledgement";
		h->early_after_ack++;
	} else {
		cut = (size_t)pc_below(&h->rng, lg->n + 1);
	}
	r = cut_and_verify(h, lg, cut, PC_FATE_RANDOM, kind);
	if (r == 0 && nexposed) {
		cut = exposed[pc_below(&h->rng, nexposed)] + 1;
		h->early_after_ack++;
		h->early_exposed++;
		r = cut_and_verify(h, lg, cut, PC_FATE_NOT_WHOLE,
				   "right after an acknowledgement with block writes not "
				   "yet flushed, each of them lost or torn");
	}
	free(acks);
	free(exposed);
	return r;
}

/* After the kill: d + the log's surviving writes becomes the new w. */
static int power_cut(struct harness *h, const struct pc_log *lg)
{
	struct pc_stats st;
	char err[512];
	unsigned i;
	int r;

	r = pc_reconstruct(lg, lg->n, h->d, durable_files, PC_FATE_RANDOM, &h->rng, &st,
			   err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", h->name, err);
		return -1;
	}
	/* Flush the rebuilt files here, not in the child's first commit, so
	 * that the child's kill window is spent on its own work. */
	for (i = 0; durable_files[i]; i++) {
		char path[1300];
		int fd;

		snprintf(path, sizeof(path), "%s/%s", h->d, durable_files[i]);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0) {
			fdatasync(fd);
			close(fd);
		}
	}
	h->pc.records += st.records;
	h->pc.durable += st.durable;
	h->pc.lost += st.lost;
	h->pc.applied += st.applied;
	h->pc.torn += st.torn;
	if (pc_rmtree(h->w) < 0 || rename(h->d, h->w) < 0) {
		fprintf(stderr, "%s: cannot move the rebuilt disk into place: %s\n",
			h->name, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- rounds ---------------------------------------------------------- */

static void pick_plan(struct harness *h, struct plan *p)
{
	memset(p, 0, sizeof(*p));
	h->inflight = 32;
	if (h->mode == MODE_UNSAFE || h->mode == MODE_NOKVSYNC || h->mode == MODE_UNSAFELOG) {
		p->by_count = true;
		p->count = 16 + (unsigned)pc_below(&h->rng, 64);
		/* few in flight: batches of one run (small overwrites only) */
		if (h->mode == MODE_UNSAFELOG)
			h->inflight = 1 + (unsigned)pc_below(&h->rng, 3);
		return;
	}
	p->by_count = pc_below(&h->rng, 2);
	if (p->by_count)
		p->count = (unsigned)pc_below(&h->rng, 65);
	else
		p->delay_ms = (unsigned)pc_below(&h->rng, h->mode == MODE_KILL ? 301 : 201);
	/* Half the power-cut rounds keep only a few transactions in flight:
	 * small batches, each acknowledged by the next one's kv flush or by
	 * an idle sync, so that a batch of prewritten data only (a run of
	 * workload.c gen_aligned) is followed by no other batch's block flush
	 * before its acknowledgement. */
	if (h->mode == MODE_POWERCUT && pc_below(&h->rng, 2))
		h->inflight = 1 + (unsigned)pc_below(&h->rng, 6);
}

/* One round; 0 clean, 1 verification failed, 2 the child misbehaved,
 * -1 harness error. */
static int round_once(struct harness *h)
{
	bool shim = h->mode != MODE_KILL;
	struct outcome out;
	struct plan p;
	double t0 = tu_now_ms_f(), ts, t1, t2;
	uint64_t before;
	int r;

	pick_plan(h, &p);
	if (shim && save_durable(h) < 0)
		return -1;
	ts = tu_now_ms_f();
	if (run_child(h, &p, shim, h->mode == MODE_UNSAFE || h->mode == MODE_UNSAFELOG, &out) < 0) {
		fprintf(stderr, "%s: cannot start the child: %s\n", h->name, strerror(errno));
		return -1;
	}
	if (out.failed_kind) {
		fprintf(stderr, "%s: round %u: the child reports txn %" PRIu64 " %s: %s\n",
			h->name, h->rounds, out.failed_n,
			out.failed_kind == CRASH_MSG_ORDER ? "completed out of order" : "failed",
			strerror(-out.failed_err));
		return 2;
	}
	if (out.exited && !(WIFEXITED(out.status) && WEXITSTATUS(out.status) == 0)) {
		if (WIFSIGNALED(out.status))
			fprintf(stderr, "%s: round %u: the child died of signal %d\n",
				h->name, h->rounds, WTERMSIG(out.status));
		else
			fprintf(stderr, "%s: round %u: the child exited with %d\n",
				h->name, h->rounds, WEXITSTATUS(out.status));
		return 2;
	}
	if (out.timed_out)
		fprintf(stderr, "%s: round %u: only %u of %u acknowledgements in %d ms; "
			"killed anyway\n", h->name, h->rounds, out.nacks, p.count,
			COUNT_PLAN_TIMEOUT_MS);
	h->acked_total += out.nacks;
	t1 = tu_now_ms_f();
	if (shim) {
		struct pc_log lg;

		r = pc_log_load(h->logp, &lg);
		if (r < 0) {
			fprintf(stderr, "%s: cannot read the power-cut log '%s': %s\n",
				h->name, h->logp, strerror(-r));
			return -1;
		}
		r = h->mode == MODE_POWERCUT ? early_cuts(h, &lg) : 0;
		if (r == 0)
			r = power_cut(h, &lg);
		pc_log_free(&lg);
		if (r != 0)
			return r;
	}
	t2 = tu_now_ms_f();
	before = h->model.applied;
	r = verify(h, h->wblock, h->wkv, out.acked, out.acked, true);
	if (verbose)
		fprintf(stderr, "%s: round %u: %s %u, inflight %u, %u acks, applied %" PRIu64
			" -> %" PRIu64 ", save %.0f ms, child %.0f ms, rebuild %.0f ms, "
			"verify %.0f ms\n", h->name, h->rounds,
			p.by_count ? "after acks" : "after ms", p.by_count ? p.count : p.delay_ms,
			h->inflight, out.nacks, before, h->model.applied, ts - t0, t1 - ts, t2 - t1,
			tu_now_ms_f() - t2);
	if (r == 0)
		h->verified++;
	else if (r > 0 && (int64_t)h->model.applied < out.acked)
		h->lost++;
	return r;
}

static void usage(void)
{
	fprintf(stderr, "usage: crash-test --mode kill|powercut|unsafe|nokvsync|unsafelog --child PATH "
		"[--shim PATH] [--rounds N] [--seed N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "child", required_argument, NULL, 'c' },
		{ "shim", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	static struct harness hs;
	struct harness *h = &hs;
	struct sigaction sa;
	const char *env, *tmp, *what;
	unsigned rounds = 0, i;
	bool seed_given = false;
	double t0 = tu_now_ms_f();
	int c, rc = 1, r = 0;

	h->mode = MODE_KILL;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (strcmp(optarg, "kill") == 0)
				h->mode = MODE_KILL;
			else if (strcmp(optarg, "powercut") == 0)
				h->mode = MODE_POWERCUT;
			else if (strcmp(optarg, "unsafe") == 0)
				h->mode = MODE_UNSAFE;
			else if (strcmp(optarg, "nokvsync") == 0)
				h->mode = MODE_NOKVSYNC;
			else if (strcmp(optarg, "unsafelog") == 0)
				h->mode = MODE_UNSAFELOG;
			else
				usage();
			break;
		case 'c': h->child_path = optarg; break;
		case 's': h->shim_path = optarg; break;
		case 'r': rounds = (unsigned)atoi(optarg); break;
		case 'S': h->seed = strtoull(optarg, NULL, 0); seed_given = true; break;
		default: usage();
		}
	}
	if (!h->child_path || (h->mode != MODE_KILL && !h->shim_path))
		usage();
	h->name = h->mode == MODE_KILL ? "crash-kill"
		: h->mode == MODE_POWERCUT ? "crash-powercut"
		: h->mode == MODE_UNSAFE ? "crash-unsafe"
		: h->mode == MODE_UNSAFELOG ? "crash-unsafelog" : "crash-nokvsync";
	h->prof = h->mode == MODE_UNSAFE ? WL_PROFILE_DATA : WL_PROFILE_MIXED;
	/* a mode that must be caught stops at the first catch: up to 40
	 * rounds (inside its 180 s) costs nothing when it is caught early; 20 let an
	 * unsafe_skip_log_flush store through (the cuts fall where the
	 * timing puts them; seed 5078447672111 was caught after 5 cuts in a
	 * rerun) */
	if (!rounds)
		rounds = h->mode == MODE_KILL ? 50 : h->mode == MODE_POWERCUT ? 20 : 40;
	verbose = getenv("ATOLL_CRASH_VERBOSE") != NULL;
	env = getenv("ATOLL_TEST_SEED");
	if (env && *env) {
		h->seed = strtoull(env, NULL, 0);
		seed_given = true;
	}
	if (!seed_given)
		h->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	h->rng = h->seed ^ 0x5eedc0ffee;
	printf("%s: seed %" PRIu64 " (ATOLL_TEST_SEED=%" PRIu64 " replays it), %u rounds\n",
	       h->name, h->seed, h->seed, rounds);
	fflush(stdout);

	tmp = getenv("TMPDIR");
	snprintf(h->root, sizeof(h->root), "%.900s/atoll-crash-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(h->root)) {
		fprintf(stderr, "%s: mkdtemp '%s': %s\n", h->name, h->root, strerror(errno));
		return 1;
	}
	cleanup_root = h->root;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* a closed stdout or stderr must not stop us before the cleanup */
	signal(SIGPIPE, SIG_IGN);
	snprintf(h->w, sizeof(h->w), "%.1000s/w", h->root);
	snprintf(h->wblock, sizeof(h->wblock), "%.1000s/block", h->w);
	snprintf(h->wkv, sizeof(h->wkv), "%.1000s/kv", h->w);
	snprintf(h->d, sizeof(h->d), "%.1000s/d", h->root);
	snprintf(h->logp, sizeof(h->logp), "%.1000s/pclog", h->root);
	snprintf(h->ackp, sizeof(h->ackp), "%.1000s/acks", h->w);
	snprintf(h->x, sizeof(h->x), "%.1000s/x", h->root);
	snprintf(h->xblock, sizeof(h->xblock), "%.1000s/block", h->x);
	snprintf(h->xkv, sizeof(h->xkv), "%.1000s/kv", h->x);

	r = make_store(h);
	if (r == SKIP) {
		rc = SKIP;
		goto out_rm;
	}
	if (r < 0)
		goto out_rm;

	for (i = 0; i < rounds; i++) {
		h->rounds = i + 1;
		r = round_once(h);
		if (r != 0)
			break;
	}

	switch (h->mode) {
	case MODE_KILL:
		printf("crash: %u kills, %u verified, %u lost; %" PRIu64 " txns applied, "
		       "%" PRIu64 " acknowledgements; seed %" PRIu64 "; %.1f s\n",
		       h->rounds, h->verified, h->lost, h->model.applied, h->acked_total,
		       h->seed, (tu_now_ms_f() - t0) / 1e3);
		rc = r == 0 && h->verified == rounds ? 0 : 1;
		break;
	case MODE_POWERCUT:
		printf("crash: %u power cuts (%u at the kill, %u earlier in the write log, "
		       "%u of them right after an acknowledgement, %u of those with block "
		       "writes not yet flushed), %u verified, %u lost; "
		       "%" PRIu64 " txns applied, %" PRIu64 " acknowledgements; writes after "
		       "the last sync: %" PRIu64 " lost, %" PRIu64 " applied, %" PRIu64
		       " torn (%" PRIu64 " durable); seed %" PRIu64 "; %.1f s\n",
		       h->rounds + h->early, h->rounds, h->early, h->early_after_ack,
		       h->early_exposed, h->verified, h->lost, h->model.applied, h->acked_total,
		       h->pc.lost, h->pc.applied, h->pc.torn, h->pc.durable,
		       h->seed, (tu_now_ms_f() - t0) / 1e3);
		rc = r == 0 && h->verified == rounds + h->early ? 0 : 1;
		break;
	case MODE_UNSAFE:
	case MODE_NOKVSYNC:
	case MODE_UNSAFELOG:
		what = h->mode == MODE_UNSAFE ? "unsafe_skip_data_flush"
			: h->mode == MODE_UNSAFELOG ? "unsafe_skip_log_flush"
						    : "a kv that is never synced";
		if (r == 1) {
			printf("crash: %s CAUGHT after %u power cuts (%u clean before); "
			       "seed %" PRIu64 "; %.1f s\n", what, h->rounds, h->verified,
			       h->seed, (tu_now_ms_f() - t0) / 1e3);
			rc = 0;
		} else if (r == 0) {
			printf("crash: %s NOT caught in %u power cuts (%u verified clean): "
			       "the harness is blind to it; seed %" PRIu64 "\n",
			       what, h->rounds, h->verified, h->seed);
			rc = 1;
		} else {
			printf("crash: the %s run broke down before the verifier could "
			       "judge it (see above); seed %" PRIu64 "\n", what, h->seed);
			rc = 1;
		}
		break;
	}
out_rm:
	wl_model_free(&h->model);
	env = getenv("ATOLL_CRASH_KEEP");
	if (env && ((rc != 0 && rc != SKIP) || strcmp(env, "always") == 0))
		fprintf(stderr, "%s: kept '%s' for inspection\n", h->name, h->root);
	else
		pc_rmtree(h->root);
	cleanup_root = NULL;
	return rc;
}
