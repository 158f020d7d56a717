/*
 * fuse_unmount.c - atoll-fuse's unmount within a bound (fuse_unmount.h).
 *
 * Once the kernel's side of the mount is gone (fusermount3 -u, umount) or
 * a signal asked atoll-fuse to stop, it hands over what it still holds:
 * the calls in flight (the CLOSEs behind releases, a size push), the
 * buffered data (fd_shutdown), the changes the MDS answered but has not
 * journaled (it waits for MT_MDS_SAFE), then SESSION_END.  Each of those
 * waits for the MDS or the OSDs, and a hard mount waits for as long as
 * the MDS is away; at unmount nobody is left to wait for, so the MDS and
 * the OSDs get UNMOUNT_GRACE_MS from the end of the session, counted by
 * the ender thread.  When the grace runs out it gives up: the data path
 * stops waiting (fd_abandon); if the MDS still owes an answer or is away,
 * its connection is closed for good (every call fails ENOTCONN, nothing
 * waits for a reconnect: fr_give_up); what may be lost is logged.
 * SESSION_END itself waits SESSION_END_MS at most.  So atoll-fuse is gone
 * at most UNMOUNT_GRACE_MS + SESSION_END_MS plus its own teardown after
 * the unmount (doc/fs.md promises 10 s).
 *
 * The ender notices the end without polling: poll(2) on the /dev/fuse fd
 * reports POLLERR once the kernel aborted the connection (the unmount),
 * and the stop signals (SIGTERM, SIGINT, SIGHUP: libfuse's handler runs
 * first) and the loop's own end write to an eventfd.
 *
 * unmount.lock protects the flags of struct unmount_state; nothing else
 * is locked under it (the give-up runs after it is let go).
 */
#include "fuse_unmount.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "fuse_call.h"
#include "fuse_data.h"
#include "fuse_replay.h"
#include "log.h"
#include "mono.h"
#include "msg.h"

#define UNMOUNT_GRACE_MS 5000u
#define SESSION_END_MS 2000u

static struct unmount_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* CLOCK_MONOTONIC: ending, done */
	int efd;		/* eventfd: stop now */
	int fuse_fd;
	bool ending;		/* the ender saw the end: the grace runs */
	bool done;		/* main handed over everything: no give-up */
	bool gave_up;
	pthread_t thr;
	bool thr_on;
} unmount = { .lock = PTHREAD_MUTEX_INITIALIZER, .efd = -1, .fuse_fd = -1 };

/* The stop signals' handlers before ours (libfuse's). */
static struct sigaction old_actions[NSIG];
static volatile sig_atomic_t stop_signalled;	/* a stop signal came */

/* A stop signal: libfuse's handler (fuse_session_exit), then wake the
 * ender.  Only async-signal-safe calls. */
static void on_stop_signal(int sig)
{
	const uint64_t one = 1;

	stop_signalled = 1;
	if (sig > 0 && sig < NSIG && old_actions[sig].sa_handler != SIG_DFL &&
	    old_actions[sig].sa_handler != SIG_IGN)
		old_actions[sig].sa_handler(sig);
	if (unmount.efd >= 0 && write(unmount.efd, &one, sizeof(one)) < 0) {
		/* the counter is full: the ender is awake already */
	}
}

/* The grace ran out (the ender): nothing waits for the OSDs from now on,
 * nor for the MDS if it still owes an answer or is away (an MDS that owes
 * nothing still gets SESSION_END, SESSION_END_MS at most). */
static void give_up(void)
{
	bool mds_owed = fr_owed() || fc_owed();

	if (mds_owed) {
		log_warn("fuse", "the MDS at %s did not answer within %u s of the unmount of %s "
			 "(%s); giving up on it: its calls fail with ENOTCONN", fc_mds_addr(),
			 UNMOUNT_GRACE_MS / 1000, fc_mountpoint(),
			 fc_mds_open() ? "connected, no answer" : "not connected");
		fc_close_for_good();	/* the calls in flight fail now */
		fr_give_up();
	}
	if (!fd_abandon(fc_mountpoint(), UNMOUNT_GRACE_MS / 1000) && !mds_owed)
		log_warn("fuse", "the unmount of %s took more than %u s; giving up on what is "
			 "left", fc_mountpoint(), UNMOUNT_GRACE_MS / 1000);
}

/* How often the ender looks at /dev/fuse for the end of the mount.  It
 * does not sleep in a poll of it: every request the kernel queues wakes
 * each poller of /dev/fuse (POLLIN asked for or not), and that thread
 * then woke with every FUSE request - five a touch, a fifth of all of
 * atoll-fuse's context switches.  200 ms is nothing against the grace. */
#define ENDER_CHECK_MS 200

static void *ender_main(void *arg)
{
	struct pollfd pe = { .fd = unmount.efd, .events = POLLIN };
	bool ended = false;

	(void)arg;
	for (;;) {
		int n = poll(&pe, 1, ENDER_CHECK_MS);
		if (n > 0)
			break;	/* a signal or the loop's end (fu_ending) */
		if (n < 0 && errno != EINTR)
			break;
		/* POLLERR (or HUP/NVAL) without waiting: the kernel ended the mount */
		struct pollfd pf = { .fd = unmount.fuse_fd, .events = 0 };
		if (poll(&pf, 1, 0) > 0) {
			ended = true;
			break;
		}
	}
	log_info("fuse", "%s %s: the MDS and the OSDs get up to %u s to take what this client "
		 "still holds", ended ? "the kernel ended the mount of" : "stopping the mount of",
		 fc_mountpoint(), UNMOUNT_GRACE_MS / 1000);
	pthread_mutex_lock(&unmount.lock);
	unmount.ending = true;
	pthread_cond_broadcast(&unmount.cond);
	uint64_t end = mono_now_ns() + UNMOUNT_GRACE_MS * 1000000ull;
	struct timespec ts = { .tv_sec = (time_t)(end / 1000000000ull),
			       .tv_nsec = (long)(end % 1000000000ull) };
	while (!unmount.done)
		if (pthread_cond_timedwait(&unmount.cond, &unmount.lock, &ts) == ETIMEDOUT)
			break;
	if (!unmount.done) {
		unmount.gave_up = true;
		pthread_mutex_unlock(&unmount.lock);
		give_up();
		return NULL;
	}
	pthread_mutex_unlock(&unmount.lock);
	return NULL;
}

void fu_start(struct fuse_session *se)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	pthread_condattr_t ca;

	unmount.fuse_fd = fuse_session_fd(se);
	unmount.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&unmount.cond, &ca);
	pthread_condattr_destroy(&ca);
	if (unmount.efd < 0 || pthread_create(&unmount.thr, NULL, ender_main, NULL) != 0) {
		log_error("fuse", "cannot start the thread that bounds the unmount (%s): an "
			  "unmount while the MDS is away may wait for it", strerror(errno));
		return;
	}
	unmount.thr_on = true;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa;
		if (sigaction(sigs[i], NULL, &old_actions[sigs[i]]) != 0 ||
		    (old_actions[sigs[i]].sa_flags & SA_SIGINFO))
			continue;
		sa = old_actions[sigs[i]];
		sa.sa_handler = on_stop_signal;
		sigaction(sigs[i], &sa, NULL);
	}
}

bool fu_signalled(void)
{
	return stop_signalled != 0;
}

bool fu_bounded(void)
{
	return unmount.thr_on;
}

void fu_ending(void)
{
	const uint64_t one = 1;

	if (!unmount.thr_on)
		return;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction cur;
		if (sigaction(sig, NULL, &cur) == 0 && cur.sa_handler == on_stop_signal)
			sigaction(sig, &old_actions[sig], NULL);
	}
	if (write(unmount.efd, &one, sizeof(one)) < 0) {
		/* full: the ender is awake already */
	}
	pthread_mutex_lock(&unmount.lock);
	while (!unmount.ending)
		pthread_cond_wait(&unmount.cond, &unmount.lock);
	pthread_mutex_unlock(&unmount.lock);
}

void fu_stop(void)
{
	if (!unmount.thr_on)
		return;
	pthread_mutex_lock(&unmount.lock);
	unmount.done = true;
	pthread_cond_broadcast(&unmount.cond);
	pthread_mutex_unlock(&unmount.lock);
	pthread_join(unmount.thr, NULL);
	unmount.thr_on = false;
	close(unmount.efd);
	unmount.efd = -1;
}

static void on_session_end(void *arg, struct msg *reply, int err)
{
	struct fc_wait *w = arg;

	msg_free(reply);
	fc_wait_done(w, err);
}

void fu_session_end(void)
{
	struct mds_req *rq = calloc(1, sizeof(*rq));
	struct fc_wait w = FC_WAIT_INIT;
	struct enc e;
	int ret = -ENOMEM;

	/* after the resends and "resends done" of a reconnect (a restarted
	 * MDS would take a later SESSION flagged REPLAY as a new session);
	 * not at all once the unmount gave up on the MDS */
	if (!fr_wait_replayed()) {
		ret = -ENOTCONN;
		goto out;
	}
	if (!rq)
		goto out;
	fc_req_init(rq, NULL, MDS_OP_SESSION_END);
	enc_init(&e);
	mds_req_encode(&e, rq);
	struct msg *m = msg_new(MT_MDS_REQUEST, &e);
	enc_free(&e);
	ret = fc_send_wait(m, SESSION_END_MS, on_session_end, &w, &w);
out:
	if (ret)
		log_warn("fuse", "the MDS at %s did not take the end of this client's session "
			 "(%s); it ends the session itself once the connection is gone for its "
			 "session timeout", fc_mds_addr(),
			 ret == -ETIMEDOUT ? "no answer in time" :
			 ret == -ENOTCONN ? "the unmount gave up on it" : strerror(-ret));
	free(rq);
}
