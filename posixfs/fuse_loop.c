/*
 * fuse_loop.c - atoll-fuse's FUSE request loop (fuse_loop.h).
 *
 * libfuse's multi-threaded loop starts a worker whenever all are busy and
 * keeps every one it started reading /dev/fuse; the kernel hands each
 * request to the reader that waited longest.  A program making its calls
 * one at a time (rm -rf, touch, mkdir) sends its next call while the
 * worker that answered the last one is still on its way back to the
 * device, so "all busy" happens all the time: ten workers, each call
 * answered by the next one in turn, each wake-up a context switch on a
 * cold thread.  With two workers at most the rm -rf of 10,000 files made
 * 30,000 context switches instead of 44,000 and took a third less time;
 * but two workers cannot wait for the OSDs for four readers at once (4
 * parallel cold reads took three times as long).
 *
 * So: FL_READERS workers read /dev/fuse; the others wait here, parked,
 * the last parked the first woken.  A worker done with a request reads
 * again while readers are missing, else parks.  When every reader took a
 * request, nothing happens at once: the next request waits for one of
 * them to come back, which is a matter of microseconds when they answer
 * from memory.  Only when no reader came back within FL_STARVE_US does
 * the watcher thread wake a parked worker (or start one, up to
 * max_threads); and for FL_EAGER_MS from then on a reader that leaves
 * none wakes or starts another at once and no worker parks, as in
 * libfuse's loop: requests that block (a write waiting for room, a read
 * waiting for the OSDs, an MDS call, a handler waiting for the kernel)
 * get their workers.  The watcher sleeps untimed while some reader is
 * there, and waits out FL_STARVE_US from the moment none is (it used to
 * look every FL_STARVE_US while requests came: its lock then held up the
 * readers a few hundred times a second).
 *
 * The end: the session exits (the kernel ended the mount, or libfuse's
 * stop handlers ran on a signal); the main thread, which looks every
 * FL_CHECK_MS, wakes the parked workers and interrupts the readers still
 * in read(2) with FL_WAKE_SIG (a handler that does nothing, installed
 * without SA_RESTART), again every FL_WAKE_MS until each ended: a signal
 * that came just before a reader's read is lost.  (libfuse's loop cancels
 * them instead; a thread cancelled in read(2) leaves the redzones of its
 * instrumented frames poisoned, and AddressSanitizer then faults at the
 * thread's end.)  Workers in a handler end when it returns.
 */
#define FUSE_USE_VERSION 35
#include "fuse_loop.h"

#include <errno.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deadline.h"
#include "log.h"
#include "mono.h"

#define FL_READERS 2u		/* workers reading /dev/fuse, at most */
#define FL_STARVE_US 1000u	/* no reader for this long: one more */
#define FL_EAGER_MS 200u	/* after a starving: more workers at once for this long */
#define FL_CHECK_MS 200		/* how often main looks whether the session ended */
#define FL_MAX_THREADS 64u	/* a bound on max_threads */
#define FL_WAKE_SIG SIGUSR1	/* interrupts a reader's read(2) at the end */
#define FL_WAKE_MS 10		/* how often the end interrupts the readers left */

struct fl_worker {
	pthread_t thr;
	pthread_cond_t cv;
	bool go;			/* woken to read (parked) */
	bool reading;			/* in (or about to enter) read(2); atomic */
	bool done;			/* its loop ended (under fl.mu) */
	struct fl_worker *next_parked;
	struct fuse_buf buf;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t watch_cv;
	struct fuse_session *se;
	unsigned max_threads;
	unsigned readers;		/* reading, or woken to read */
	unsigned nthreads;
	struct fl_worker *parked;	/* last parked first */
	struct fl_worker *w[FL_MAX_THREADS];
	uint64_t starved_ns;		/* when readers went to 0 (0: there are some) */
	uint64_t last_ns;		/* the last request taken */
	uint64_t eager_until_ns;	/* requests block now: no waiting for a reader */
	bool watching;			/* the watcher is not in its untimed sleep */
	bool exit;
	pthread_t watcher;
	bool watcher_on;
	sem_t ended;			/* a worker saw the session end */
} fl = { .mu = PTHREAD_MUTEX_INITIALIZER, .watch_cv = PTHREAD_COND_INITIALIZER };

static void *fl_main(void *arg);

/* Under fl.mu: one more reader, woken or started; false when neither. */
static bool fl_add_reader(void)
{
	struct fl_worker *p = fl.parked;

	if (p) {
		fl.parked = p->next_parked;
		p->go = true;
		pthread_cond_signal(&p->cv);
		fl.readers++;
		return true;
	}
	if (fl.nthreads >= fl.max_threads)
		return false;
	struct fl_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return false;
	pthread_cond_init(&w->cv, NULL);
	if (pthread_create(&w->thr, NULL, fl_main, w) != 0) {
		log_warn("fuse", "cannot start a FUSE worker (%s); going on with %u",
			 strerror(errno), fl.nthreads);
		pthread_cond_destroy(&w->cv);
		free(w);
		return false;
	}
	fl.w[fl.nthreads++] = w;
	fl.readers++;
	return true;
}

static bool is_forget(const struct fuse_buf *b)
{
	uint32_t op;

	if ((b->flags & FUSE_BUF_IS_FD) || b->size < 8)
		return false;
	memcpy(&op, (const char *)b->mem + 4, 4);	/* fuse_in_header.opcode */
	return op == FUSE_FORGET || op == FUSE_BATCH_FORGET;
}

static void *fl_main(void *arg)
{
	struct fl_worker *w = arg;

	for (;;) {
		/* reading first, then the check: the end interrupts readers */
		__atomic_store_n(&w->reading, true, __ATOMIC_SEQ_CST);
		if (fuse_session_exited(fl.se))
			break;
		int res = fuse_session_receive_buf(fl.se, &w->buf);
		__atomic_store_n(&w->reading, false, __ATOMIC_SEQ_CST);
		if (res == -EINTR)
			continue;
		if (res <= 0) {
			if (res < 0)
				fuse_session_exit(fl.se);
			break;	/* 0: the kernel ended the mount (libfuse exits it) */
		}
		if (is_forget(&w->buf)) {
			/* no answer, no wait: still a reader (an rm -rf's
			 * FORGET of the file just removed comes beside the
			 * next call) */
			fuse_session_process_buf(fl.se, &w->buf);
			continue;
		}
		pthread_mutex_lock(&fl.mu);
		fl.last_ns = mono_now_ns();
		if (--fl.readers == 0) {
			if (fl.last_ns < fl.eager_until_ns && fl_add_reader()) {
				/* requests block (the watcher saw it): as libfuse */
			} else {
				fl.starved_ns = fl.last_ns;
				if (!fl.watching)
					pthread_cond_signal(&fl.watch_cv);
			}
		}
		pthread_mutex_unlock(&fl.mu);
		fuse_session_process_buf(fl.se, &w->buf);
		pthread_mutex_lock(&fl.mu);
		if (fl.exit) {
			pthread_mutex_unlock(&fl.mu);
			break;
		}
		if (fl.readers < FL_READERS || mono_now_ns() < fl.eager_until_ns) {
			fl.readers++;
			fl.starved_ns = 0;
			pthread_mutex_unlock(&fl.mu);
			continue;
		}
		w->go = false;
		w->next_parked = fl.parked;
		fl.parked = w;
		while (!w->go && !fl.exit)
			pthread_cond_wait(&w->cv, &fl.mu);
		bool stop = fl.exit;
		pthread_mutex_unlock(&fl.mu);
		if (stop)
			break;
	}
	__atomic_store_n(&w->reading, false, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&fl.mu);
	w->done = true;
	pthread_mutex_unlock(&fl.mu);
	sem_post(&fl.ended);
	return NULL;
}

static void fl_on_wake(int sig)
{
	(void)sig;	/* only to interrupt read(2) */
}

/* The watcher: a reader more when none came back within FL_STARVE_US of
 * the moment the last one left (fl.starved_ns). */
static void *fl_watch(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&fl.mu);
	while (!fl.exit) {
		if (!fl.starved_ns) {
			fl.watching = false;
			pthread_cond_wait(&fl.watch_cv, &fl.mu);
			fl.watching = true;
			continue;
		}
		uint64_t now = mono_now_ns(), due = fl.starved_ns + FL_STARVE_US * 1000ull;
		if (now >= due) {
			/* the requests block: more workers at once for a while */
			fl.eager_until_ns = now + FL_EAGER_MS * 1000000ull;
			if (fl_add_reader())
				fl.starved_ns = 0;
			else
				fl.starved_ns = now;	/* all busy: look again later */
			continue;
		}
		struct timespec ts = { .tv_sec = (time_t)(due / 1000000000ull),
				       .tv_nsec = (long)(due % 1000000000ull) };
		pthread_cond_timedwait(&fl.watch_cv, &fl.mu, &ts);
	}
	pthread_mutex_unlock(&fl.mu);
	return NULL;
}

int fl_run(struct fuse_session *se, unsigned max_threads)
{
	pthread_condattr_t ca;
	struct sigaction sa, old_wake;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fl_on_wake;	/* no SA_RESTART: read(2) returns EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(FL_WAKE_SIG, &sa, &old_wake) != 0)
		return -1;

	fl.se = se;
	fl.max_threads = max_threads < 2 ? 2 : max_threads > FL_MAX_THREADS ? FL_MAX_THREADS
									     : max_threads;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fl.watch_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (sem_init(&fl.ended, 0, 0) != 0) {
		sigaction(FL_WAKE_SIG, &old_wake, NULL);
		return -1;
	}
	pthread_mutex_lock(&fl.mu);
	fl.watching = true;
	fl.last_ns = mono_now_ns();
	fl.watcher_on = pthread_create(&fl.watcher, NULL, fl_watch, NULL) == 0;
	bool started = fl.watcher_on && fl_add_reader();
	for (unsigned i = 1; started && i < FL_READERS; i++)
		(void)fl_add_reader();
	pthread_mutex_unlock(&fl.mu);
	if (!started) {
		log_error("fuse", "cannot start the FUSE request loop's threads (%s)",
			  strerror(errno));
		if (fl.watcher_on) {
			pthread_mutex_lock(&fl.mu);
			fl.exit = true;
			pthread_cond_signal(&fl.watch_cv);
			pthread_mutex_unlock(&fl.mu);
			pthread_join(fl.watcher, NULL);
		}
		sem_destroy(&fl.ended);
		sigaction(FL_WAKE_SIG, &old_wake, NULL);
		return -1;
	}
	while (!fuse_session_exited(se)) {
		struct timespec ts = deadline_ms(CLOCK_REALTIME, FL_CHECK_MS);
		if (sem_timedwait(&fl.ended, &ts) == 0)
			break;	/* a worker's end: the session's */
	}
	pthread_mutex_lock(&fl.mu);
	fl.exit = true;
	for (struct fl_worker *p = fl.parked; p; p = p->next_parked)
		pthread_cond_signal(&p->cv);
	fl.parked = NULL;
	pthread_cond_signal(&fl.watch_cv);
	pthread_mutex_unlock(&fl.mu);
	pthread_join(fl.watcher, NULL);
	/* nthreads no longer moves: only the watcher starts workers now */
	for (;;) {
		bool left = false;
		pthread_mutex_lock(&fl.mu);
		for (unsigned i = 0; i < fl.nthreads; i++) {
			if (fl.w[i]->done)
				continue;
			left = true;
			if (__atomic_load_n(&fl.w[i]->reading, __ATOMIC_SEQ_CST))
				pthread_kill(fl.w[i]->thr, FL_WAKE_SIG);
		}
		pthread_mutex_unlock(&fl.mu);
		if (!left)
			break;
		struct timespec ts = { .tv_sec = 0, .tv_nsec = FL_WAKE_MS * 1000000L };
		nanosleep(&ts, NULL);
	}
	sigaction(FL_WAKE_SIG, &old_wake, NULL);
	for (unsigned i = 0; i < fl.nthreads; i++) {
		pthread_join(fl.w[i]->thr, NULL);
		pthread_cond_destroy(&fl.w[i]->cv);
		free(fl.w[i]->buf.mem);
		free(fl.w[i]);
	}
	fl.nthreads = 0;
	sem_destroy(&fl.ended);
	return 0;
}
