/*
 * monc.h - the monitor client: one session to one monitor of the quorum,
 * kept by hunting among them.  The client library (lib/client/cluster.c)
 * and the OSD (osd/main.c) both speak to the monitors through it.
 *
 * Who the monitors are: mon_host (a comma and/or space separated list of
 * "ip:port", monc_parse_hosts) plus the members of the last MONMAP
 * accepted (lib/proto.h), or of one saved earlier (monc_seed).  A MONMAP
 * of another fsid (once the messenger knows ours) or of an older
 * incarnation than one seen is refused.
 *
 * The session: monc dials one candidate at a time.  The first one is
 * picked at random, the next ones in order (round robin); a refused or
 * silent dial (no handshake within attempt_ms), a session that closes,
 * and a MONMAP that names no leader move on to the next candidate after
 * an exponential backoff with jitter (struct monc_hunt); a MONMAP (one-way
 * or the reply to a request) naming another member as leader switches to
 * that member at once.  When a session opens, ops.session_open runs (the
 * owner resubscribes to maps, an OSD boots again if it must).
 *
 * Requests (monc_call): sent to the current session; a request that the
 * monitor answers with a MONMAP (it does not serve it: a follower, or a
 * member that knows no leader) or whose session breaks is sent again, as
 * a new request, once the next session opens, until its timeout.  One-way
 * messages (monc_send) go to the current session, or wait (at most
 * MONC_ONEWAY_MAX, oldest dropped) for the next one.  Those sent on a
 * session before it is confirmed (a MONMAP names its monitor as leader,
 * or 1 s passed without a MONMAP) are kept, and sent again on the next
 * session if this one is left for the leader: a follower drops them.
 *
 * Wiring: the owner creates its messenger, then monc with it, and passes
 * its messenger callbacks through monc first: monc_dispatch,
 * monc_connected, monc_closed return true for what is monc's (its
 * connections, MONMAP messages), which the owner then leaves alone.
 * Teardown: monc_stop (fails the calls with -ESHUTDOWN, closes the
 * session), msgr_destroy, monc_destroy.
 *
 * Threads: every function is safe from any thread except monc_call_wait
 * (never the loop thread) and monc_destroy (after msgr_destroy).  The
 * ops and the reply functions run on the loop thread, without monc's
 * lock: they may call monc again.
 */
#ifndef ATOLL_MONC_H
#define ATOLL_MONC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg.h"
#include "osdmap.h"
#include "proto.h"

/* mon_host entries, and candidates in all (mon_host + a monmap's) */
#define MONC_HOSTS_MAX		16
#define MONC_CANDS_MAX		(MONC_HOSTS_MAX + MONMAP_MONS_MAX)
#define MONC_ONEWAY_MAX		256
#define MONC_BACKOFF_MIN_MS	100u
#define MONC_BACKOFF_MAX_MS	2000u
#define MONC_ATTEMPT_MS		2000u

typedef char monc_addr_t[OSDMAP_ADDR_MAX + 1];

/* Parses a mon_host value: "ip:port" entries separated by commas and/or
 * white space; duplicates are dropped.  Returns the number of entries
 * (>= 1) written to out, or -EINVAL with a sentence in err for an empty
 * list, a malformed entry (named, with its position) or more than max
 * entries. */
int monc_parse_hosts(const char *s, monc_addr_t *out, uint32_t max, char *err, size_t errlen);

/*
 * The hunt: which candidate to dial next and how long to wait first.
 * Pure (no clock, no I/O) so that the order and the backoff are tested
 * alone.  The first candidate is random (seed), the next ones follow in
 * order.  After the k-th failure in a row (k >= 1) the wait is
 * d = min(max_ms, min_ms * 2^(k-1)), with jitter: a uniform draw in
 * [d/2, d].  A session that opens resets k.
 */
struct monc_hunt {
	uint32_t n;		/* candidates */
	uint32_t next;		/* the one monc_hunt_next returns */
	uint32_t fails;		/* failures in a row */
	uint32_t min_ms, max_ms;
	uint64_t rng;		/* xorshift state, never 0 */
};
void monc_hunt_init(struct monc_hunt *h, uint32_t n, uint32_t min_ms, uint32_t max_ms,
		    uint64_t seed);
/* The candidate to dial now (advances the round robin). */
uint32_t monc_hunt_next(struct monc_hunt *h);
/* Counts a failed attempt; returns the wait before the next one. */
uint32_t monc_hunt_failed(struct monc_hunt *h);
/* A session opened: the next failure waits min_ms again. */
void monc_hunt_reset(struct monc_hunt *h);
/* The next attempt goes to idx (a leader named by a MONMAP). */
void monc_hunt_goto(struct monc_hunt *h, uint32_t idx);
/* The candidate list grew to n (the order of the old ones is kept). */
void monc_hunt_resize(struct monc_hunt *h, uint32_t n);

struct monc;

struct monc_ops {
	/* A session opened (its handshake completed) on c.  May be NULL. */
	void (*session_open)(void *arg, struct msg_conn *c);
	/* A MONMAP was accepted that changes the members or the incarnation
	 * (an OSD saves it: monc_seed at the next start).  May be NULL. */
	void (*monmap)(void *arg, const struct monmap_msg *mm);
};

struct monc_config {
	size_t size_of;			/* sizeof(struct monc_config) */
	const char *mon_host;		/* required; monc_parse_hosts */
	uint32_t backoff_min_ms;	/* 0 = MONC_BACKOFF_MIN_MS */
	uint32_t backoff_max_ms;	/* 0 = MONC_BACKOFF_MAX_MS */
	uint32_t attempt_ms;		/* a dial without a handshake by then
					 * moves on; 0 = MONC_ATTEMPT_MS */
	const char *who;		/* log subsystem; NULL = "monc" */
};

/* -EINVAL (with err) for a bad mon_host, -ENOMEM.  Nothing is dialled
 * before monc_start. */
int monc_create(struct msgr *msgr, const struct monc_config *cfg, const struct monc_ops *ops,
		void *arg, struct monc **out, char *err, size_t errlen);
/* Adds the members of a saved monmap to the candidates and remembers its
 * incarnation (older ones are refused from then on).  Before monc_start.
 * -ESTALE for a monmap of another fsid than the messenger's, when known. */
int monc_seed(struct monc *mc, const struct monmap_msg *mm);
/* Starts hunting (the messenger must run). */
void monc_start(struct monc *mc);
/* Fails every call with -ESHUTDOWN, drops queued one-way messages and
 * closes the session; nothing is dialled any more.  Idempotent. */
void monc_stop(struct monc *mc);
/* Frees mc, after msgr_destroy.  NULL is fine. */
void monc_destroy(struct monc *mc);

/* The messenger's callbacks, passed through monc first: true when the
 * event was monc's (the owner does nothing more with it; monc_dispatch
 * then owns m). */
bool monc_dispatch(struct monc *mc, struct msg_conn *c, struct msg *m);
bool monc_connected(struct monc *mc, struct msg_conn *c);
bool monc_closed(struct monc *mc, struct msg_conn *c, int err);
/* True when c is one of monc's connections. */
bool monc_owns(const struct monc *mc, const struct msg_conn *c);

/* Flags of monc_call. */
#define MONC_CALL_ONCE	0x1u	/* send it at most once: a broken session or
				 * a MONMAP answer fails it (-EAGAIN) instead
				 * of a resend (an OSD's beacon: the next one
				 * follows anyway) */

/* A request of type with the front (and data) of m, sent to the leader
 * (see above).  Takes m (also on error).  fn(arg, reply, 0) with the
 * reply (fn owns it), or fn(arg, NULL, err): -ETIMEDOUT when timeout_ms
 * (0 = never) passed without an answer, -EAGAIN (MONC_CALL_ONCE),
 * -ESHUTDOWN after monc_stop.  Returns 0 (fn runs exactly once, on the
 * loop thread), or -EINVAL (flags), -ENOMEM, -ESHUTDOWN (fn never runs). */
int monc_call(struct monc *mc, struct msg *m, uint32_t timeout_ms, unsigned flags,
	      msg_reply_fn fn, void *arg);
/* monc_call that waits: 0 with *reply (the caller frees it) or the
 * error, *reply NULL.  Not on the loop thread. */
int monc_call_wait(struct monc *mc, struct msg *m, uint32_t timeout_ms, struct msg **reply);
/* A one-way message to the current session (queued until one opens).
 * Takes m.  0, or -ESHUTDOWN after monc_stop. */
int monc_send(struct monc *mc, struct msg *m);

/* Whether a session is open now, and whether one ever was. */
bool monc_is_open(struct monc *mc);
bool monc_ever_opened(struct monc *mc);
/* True when no session ever opened and every candidate refused the
 * connection (nothing listens: -ECONNREFUSED rather than a timeout). */
bool monc_all_refused(struct monc *mc);
/* The candidates and what happened when each was last tried, for an
 * error message: "127.0.0.1:1 (connection refused), 127.0.0.2:6789 (no
 * handshake)".  Returns buf. */
const char *monc_describe(struct monc *mc, char *buf, size_t len);
/* The address of the monitor of the open session into buf (empty when
 * none).  Returns buf. */
const char *monc_session_addr(struct monc *mc, char *buf, size_t len);

#endif
