/*
 * crash-child.c - the process the crash tests kill.
 *
 * Opens a store and queues the workload's transactions start, start+1, ...
 * (workload.c), up to --inflight at once, and reports each completion to
 * the parent through a pipe as soon as its callback fires: a report on the
 * pipe means "the store acknowledged this transaction".  Runs until killed
 * (or until --max transactions, then closes the store cleanly).
 *
 * Reports are 16-byte records written with one write() each, so that a
 * kill never leaves half a record in the pipe.  With --ack-file, each
 * acknowledged txn number is also written (8 bytes, at offset 0) to that
 * file before the report: under the power-cut shim this puts every
 * acknowledgement into the write log, in order with the store's own I/O,
 * so the test can cut power at any point of the log and know what had been
 * acknowledged by then.
 *
 * usage: crash-child --block PATH --kv DIR --seed N --start N --fd N
 *                    [--profile N] [--inflight N] [--max N] [--ack-file PATH]
 *                    [--unsafe-skip-data-flush] [--unsafe-skip-log-flush]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crash-proto.h"
#include "workload.h"

static int report_fd = -1;
static int ack_fd = -1;

/* inflight and next_done are protected by lock; cond signals a completion */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static unsigned inflight;
static uint64_t next_done;

static void send_msg(uint32_t kind, int32_t err, uint64_t n)
{
	struct crash_msg m = { kind, err, n };

	/* a full pipe blocks us until the parent reads: fine */
	while (write(report_fd, &m, sizeof(m)) < 0) {
		if (errno != EINTR)
			_exit(4);	/* the parent went away */
	}
}

static void done_cb(void *arg, int r)
{
	uint64_t n = (uint64_t)(uintptr_t)arg;

	pthread_mutex_lock(&lock);
	if (n != next_done) {
		fprintf(stderr, "crash-child: txn %llu completed while txn %llu was "
			"expected next (completions out of queue order)\n",
			(unsigned long long)n, (unsigned long long)next_done);
		send_msg(CRASH_MSG_ORDER, 0, n);
		_exit(3);
	}
	if (r < 0) {
		fprintf(stderr, "crash-child: txn %llu failed: %s\n",
			(unsigned long long)n, strerror(-r));
		send_msg(CRASH_MSG_FAILED, r, n);
		_exit(3);
	}
	next_done++;
	if (ack_fd >= 0 && pwrite(ack_fd, &n, sizeof(n), 0) != sizeof(n)) {
		fprintf(stderr, "crash-child: writing the ack file failed: %s\n", strerror(errno));
		_exit(3);
	}
	send_msg(CRASH_MSG_DONE, 0, n);
	inflight--;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
}

static void usage(void)
{
	fprintf(stderr, "usage: crash-child --block PATH --kv DIR --seed N --start N --fd N "
		"[--profile N] [--inflight N] [--max N] [--ack-file PATH] "
		"[--unsafe-skip-data-flush] [--unsafe-skip-log-flush]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "block", required_argument, NULL, 'b' },
		{ "kv", required_argument, NULL, 'k' },
		{ "seed", required_argument, NULL, 's' },
		{ "start", required_argument, NULL, 'n' },
		{ "fd", required_argument, NULL, 'f' },
		{ "profile", required_argument, NULL, 'p' },
		{ "inflight", required_argument, NULL, 'i' },
		{ "max", required_argument, NULL, 'm' },
		{ "unsafe-skip-data-flush", no_argument, NULL, 'u' },
		{ "unsafe-skip-log-flush", no_argument, NULL, 'L' },
		{ "ack-file", required_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	struct store_options opt;
	struct store *st = NULL;
	uint64_t seed = 0, start = 0, max = UINT64_MAX, n;
	unsigned limit = 32;
	enum wl_profile prof = WL_PROFILE_MIXED;
	int c, r;

	memset(&opt, 0, sizeof(opt));
	opt.size_of = sizeof(opt);
	opt.kv_max = CRASH_KV_MAX;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'b': opt.block_path = optarg; break;
		case 'k': opt.kv_path = optarg; break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': start = strtoull(optarg, NULL, 0); break;
		case 'f': report_fd = atoi(optarg); break;
		case 'p': prof = (enum wl_profile)atoi(optarg); break;
		case 'i': limit = (unsigned)atoi(optarg); break;
		case 'm': max = strtoull(optarg, NULL, 0); break;
		case 'u': opt.unsafe_skip_data_flush = true; break;
		case 'L': opt.unsafe_skip_log_flush = true; break;
		case 'a':
			ack_fd = open(optarg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (ack_fd < 0) {
				fprintf(stderr, "crash-child: cannot open '%s': %s\n",
					optarg, strerror(errno));
				return 2;
			}
			break;
		default: usage();
		}
	}
	if (!opt.block_path || !opt.kv_path || report_fd < 0 || limit == 0)
		usage();

	r = store_open(&opt, &st);
	if (r < 0) {
		fprintf(stderr, "crash-child: cannot open store '%s': %s\n",
			opt.block_path, strerror(-r));
		send_msg(CRASH_MSG_FAILED, r, start);
		return 3;
	}
	send_msg(CRASH_MSG_READY, 0, start);
	next_done = start;

	for (n = start; n - start < max; n++) {
		struct wl_txn wt;
		struct store_txn *t;

		pthread_mutex_lock(&lock);
		while (inflight >= limit)
			pthread_cond_wait(&cond, &lock);
		inflight++;
		pthread_mutex_unlock(&lock);

		wl_gen(seed, n, prof, &wt);
		t = store_txn_new();
		if (!t) {
			fprintf(stderr, "crash-child: out of memory\n");
			return 3;
		}
		r = wl_to_store(&wt, t);
		wl_txn_release(&wt);
		if (r < 0) {
			fprintf(stderr, "crash-child: building txn %llu failed: %s\n",
				(unsigned long long)n, strerror(-r));
			store_txn_free(t);
			send_msg(CRASH_MSG_FAILED, r, n);
			return 3;
		}
		r = store_queue(st, t, done_cb, (void *)(uintptr_t)n);
		if (r < 0) {
			fprintf(stderr, "crash-child: queueing txn %llu failed: %s\n",
				(unsigned long long)n, strerror(-r));
			send_msg(CRASH_MSG_FAILED, r, n);
			return 3;
		}
	}
	store_close(st);
	send_msg(CRASH_MSG_CLOSED, 0, n);
	return 0;
}
