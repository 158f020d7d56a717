/*
 * mds.h - atoll-mds internals: struct mds, which holds the state of each
 * module (the metadata cache, the journal, the applier: each declared in
 * its own header, included here), and the calls of the smaller modules.
 * doc/fs-design.md describes the design; mds_txn.c changes the namespace,
 * mds_journal.c journals the changes, mds_applier.c writes them to the
 * objects (mds_store.c), mds_cache.c keeps them in memory, mds_open.c
 * opens and closes it all, mds_ops.c answers the client's requests,
 * mds_lease.c grants and revokes the clients' leases, mds_main.c starts
 * the daemon.
 *
 * Lock order (one direction only): m->lock (the namespace: the cache,
 * the transactions, the session lists; held by whoever handles a
 * request) before journal.lock (mds_journal.c) and before
 * applier.lock (mds_applier.c) and ans_lock (mds_answered.c); the
 * journal's and the applier's locks are never held together.
 */
#ifndef ATOLL_MDS_H
#define ATOLL_MDS_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "deadline.h"
#include "mds_proto.h"
#include "mds_applier.h"
#include "mds_cache.h"
#include "mds_follow.h"
#include "mds_journal.h"
#include "mds_txn.h"
#include "mds_store.h"

struct msg_conn;

struct atoll_cluster;
struct atoll_ioctx;

#define MDS_INODE_SHARDS	16u
#define MDS_INO_RANGE		4096u	/* ino_hw grows by this much */

/* The wall clock, ns (inode times, eviction times). */
static inline uint64_t mds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Requests already answered, so that one resent after a lost connection
 * (or replayed from the journal after a restart) is not applied twice:
 * the last MDS_DONE_MAX of each client (mds_answered.c). */
#define MDS_DONE_MAX	8192u
struct mds_done {
	uint64_t client, reqid, ino;
	uint64_t seq;		/* its journal entry (0: journaled before a restart) */
	int32_t rc;
};

/* A journaled request (the index a replay of every journal entry ever
 * written would rebuild): kept in journal order by whoever journals
 * (the journaler, or the worker with early replies off), written whole
 * to the object fs.answered when a segment rolls, loaded at start before
 * the replay (doc/fs-design.md, "Index of answered requests"). */
struct mds_ans {
	uint64_t client, reqid, ino;
};

/* Entries kept per client (mds_answered.c): each starts with the client
 * and the request id (u64s). */
#define MDS_RINGS_BITS	8
struct mds_ring;
struct mds_rings {
	struct mds_ring **ht;
	size_t esize;
};
int mds_rings_init(struct mds_rings *rs, size_t esize);
void mds_rings_fini(struct mds_rings *rs);
void *mds_rings_add(struct mds_rings *rs, uint64_t client);
void *mds_rings_find(struct mds_rings *rs, uint64_t client, uint64_t reqid);
void mds_rings_forget(struct mds_rings *rs, uint64_t client);
int mds_rings_each(struct mds_rings *rs, int (*fn)(void *arg, const void *e), void *arg);

struct mds {
	struct atoll_cluster *cl;
	struct atoll_ioctx *meta, *data;
	char data_pool[128], meta_pool[128];
	pthread_mutex_t lock;
	uint64_t ninodes;	/* inodes in the namespace (cached or not) */
	struct mds_cache cache;	/* m->lock */
	uint64_t aseq;		/* the last change applied in memory */
	struct mds_journal journal;
	struct mds_applier applier;
	struct mds_follow follow;	/* the journal read as a standby (mds_follow.c) */
	uint64_t next_ino, ino_hw;
	uint64_t nreq;
	bool auth_on;	/* auth = ticket: each client's MDS caps are checked (mds_access.c) */
	struct mds_rings done;	/* struct mds_done, per client (m->lock) */
	struct mds_rings ans;	/* struct mds_ans: the journaled ones (ans_lock) */
	pthread_mutex_t ans_lock;
	bool crash_now;		/* the worker exits after sending this reply */
	struct msg_conn *cur_conn;	/* the requester of the request being handled */
	uint32_t cur_op;	/* its op (0: a change of the MDS's own) */
	uint64_t cur_seq;	/* the journal entry of its change (0: none) */
	/* Sessions (doc/fs-design.md, "Reconnect window and eviction"):
	 * the ids of the clients with a session, persisted as the keys of
	 * fs.sessions (a mount adds its own, an unmount removes it),
	 * loaded at start: those the reconnect window waits for. */
	uint64_t *sess;
	size_t nsess, sess_cap;
	/* Limits (atoll.conf, doc/limits.md "MDS"): sessions (a new one past
	 * it is refused MDS_RC_TOO_MANY_SESSIONS) and the files one client
	 * holds open (an open past it is refused -EMFILE). */
	uint32_t max_sessions;		/* mds_max_sessions */
	uint32_t max_open_per_session;	/* mds_session_max_open_files */
	/* Orphans (no names left) whose removal waits for the reconnect
	 * window's end: the clients re-count their opens in it
	 * (doc/fs-design.md, "Open files across a restart").  m->lock. */
	bool reconnecting;
	uint64_t *orphans;
	size_t norphans, orphans_cap;
	/* evicted clients: their requests are refused, so a late resend
	 * never lands after the others moved on (persisted in fs.evicted) */
	uint64_t *evicted;
	size_t nevicted;
	/* what the request being handled changed (mds_lease_note, at each
	 * commit): revoked from other clients' leases, and sent back to the
	 * requester.  The worker resets it before each request. */
	uint32_t nchg;
	struct mds_chg chg[MDS_CHG_MAX];
};

/* mds_open.c */
int mds_open(struct mds *m);		/* mkfs if needed, replay, load */
/* Notes an orphan (nlink 0, open nowhere) to remove after the reconnect
 * window (mds_main.c), which removes those nobody re-opened; false
 * outside the window (remove it now).  m->lock. */
bool mds_open_orphan_defer(struct mds *m, uint64_t ino);
void mds_close(struct mds *m);
/* mds_inos.c, under m->lock: a range of at most want numbers for
 * client's asynchronous creates (INOS), and whether ino is one of
 * client's numbers known unused (then it counts as used from now on). */
int mds_inos_grant(struct mds *m, uint64_t client, uint32_t want, uint64_t *first,
		   uint32_t *count);
bool mds_inos_take(uint64_t client, uint64_t ino);
/* mds_linger.c: the file a rename replaced stays an orphan this long, so
 * that an open of it resolved just before the rename still succeeds;
 * at most MDS_LINGER_MAX of them (more are removed at once).  Its own
 * lock.  add: false when the table is full; holds: ino lingers (its
 * last close leaves it to the sweep); due: one's time is over; take: up
 * to max of those, out of the table (the caller removes them). */
#define MDS_LINGER_MS	5000u
#define MDS_LINGER_MAX	65536u
bool mds_linger_add(uint64_t ino);
bool mds_linger_holds(uint64_t ino);
bool mds_linger_due(void);
size_t mds_linger_take(uint64_t *inos, size_t max);

void mds_done_add(struct mds *m, uint64_t client, uint64_t reqid, int32_t rc,
		  uint64_t ino, uint64_t seq);
const struct mds_done *mds_done_find(struct mds *m, uint64_t client, uint64_t reqid);
/* The journaled requests (mds_answered.c): noted by whoever journals,
 * kept in fs.answered across segments. */
int mds_answered_init(struct mds *m);
void mds_answered_fini(struct mds *m);
void mds_ans_add(struct mds *m, uint64_t client, uint64_t reqid, uint64_t ino);
int mds_ans_store(struct mds *m);
int mds_ans_load(struct mds *m);
void mds_answered_forget(struct mds *m, uint64_t client);

/* mds_status.c: the answer to MT_MDS_STATUS.  The *_client_* calls and
 * mds_status_reply run on the messenger's loop thread; mds_status_sync
 * and mds_status_served on the thread handling requests, one at a time
 * (the only writer of the numbers they copy). */
struct msg_conn;
struct msg;
void mds_status_init(struct mds *m);
void mds_status_set_addr(const char *addr);
void mds_status_set_state(uint32_t state);	/* enum mds_state */
void mds_status_set_session_timeout(uint32_t ms);
void mds_status_sync(const struct mds *m);
/* Counts one request of op (or a malformed one), then syncs. */
void mds_status_served(const struct mds *m, uint32_t op, bool malformed);
/* A client request arrived on c: c counts as a client until it closes. */
void mds_status_client_request(struct msg_conn *c);
void mds_status_client_closed(struct msg_conn *c);
void mds_status_reply(struct msg_conn *c, const struct msg *req);
/* A copy of what the status says (any thread; no clients list:
 * nclients counts them, clients is NULL).  state 0 before the MDS
 * became active. */
void mds_status_snapshot(struct mds_status *out);

/* mds_lease.c: leases and their revocation (doc/fs-design-client.md,
 * "Leases").  lease_ms 0 turns leases off; max bounds the records held. */
int mds_lease_init(uint32_t lease_ms, uint64_t max);
void mds_lease_fini(void);
/* Worker: records what txn t changes in m->chg (before it is applied). */
void mds_lease_note(struct mds *m, const struct mds_txn *t);
/* Worker: grants the leases rp lets c cache (sets rp->lease_ms, dir_lease). */
void mds_lease_grant(struct msg_conn *c, const struct mds_req *rq, struct mds_reply *rp);
/* Worker: revokes chg from every client but c that holds a lease it
 * covers; returns once each acked, closed or saw its lease run out. */
void mds_lease_revoke(struct msg_conn *c, const struct mds_chg *chg, uint32_t n);
/* The directories of inos (n <= 4) other clients than c's hold
 * exclusively: one MDS_CHG_EXCL item each in chg (room for n); how many.
 * A request touching one waits for their revoke (mds_lease_revoke). */
uint32_t mds_lease_excl_others(struct msg_conn *c, const uint64_t *inos, unsigned n,
			       struct mds_chg *chg);
/* Would mds_lease_revoke(c, chg, n) tell anyone (and wait)? */
bool mds_lease_revoke_needed(struct msg_conn *c, const struct mds_chg *chg, uint32_t n);
/* Loop thread: c closed; its leases are void. */
void mds_lease_closed(struct msg_conn *c);
void mds_lease_stats(struct mds_status *s);

/* mds_session.c: fs.sessions, loaded at start with fs.evicted */
int mds_session_load(struct mds *m);
bool mds_session_known(const struct mds *m, uint64_t client);
int mds_session_add(struct mds *m, uint64_t client);
int mds_session_drop(struct mds *m, uint64_t client);
/* fs.evicted: a client refused from now on, across restarts too */
#define MDS_EVICT_SECONDS	3600	/* also its blocklist time */
#define MDS_EVICTED_MAX		4096u
int mds_session_evicted_add(struct mds *m, uint64_t client);

/* mds_inflight.c: files a client closed with its writes still in flight
 * (FSYNC with MDS_L_INFLIGHT, LANDED; doc/fs-design-client.md, "Closing
 * without waiting").  Own lock; never taken around m->lock.  add: -ENOSPC
 * past MDS_INFLIGHT_MAX marks (the client then waits for its writes
 * itself, as before).  landed: the client's mark on ino goes if its number
 * is at most seq (CLOSE: UINT64_MAX).  wait (worker): until no other
 * client than client marks ino, or timeout_ms (then those marks are
 * dropped, logged, -ETIMEDOUT). */
#define MDS_INFLIGHT_MAX	65536u
int mds_inflight_add(uint64_t ino, uint64_t client, uint64_t seq);
void mds_inflight_landed(uint64_t ino, uint64_t client, uint64_t seq);
void mds_inflight_drop_client(uint64_t client);
bool mds_inflight_other(uint64_t ino, uint64_t client);
int mds_inflight_wait(uint64_t ino, uint64_t client, uint32_t timeout_ms);
void mds_inflight_stats(uint64_t *marks, uint64_t *waits, uint64_t *timeouts);

/* mds_session.c: per client, the connection of its last request and
 * since when it is gone (own lock), its open files (m->lock), why it was
 * evicted (doc/fs-design.md, "Sessions whose client is gone") */
void mds_sess_seen(uint64_t client, struct msg_conn *c);
void mds_sess_absent(uint64_t client);	/* a session loaded at start: gone since now */
void mds_sess_closed(struct msg_conn *c);	/* loop thread */
/* Clients whose connection is gone for timeout_ms or more (up to max). */
size_t mds_sess_expired(uint32_t timeout_ms, uint64_t *out, size_t max);
bool mds_sess_gone(uint64_t client, uint32_t timeout_ms);	/* still */
void mds_sess_forget(uint64_t client);
/* Counts delta more (or fewer) opens of ino by client.  gen: with delta
 * < 0 (a CLOSE), the reconnect its open was last counted under; an open
 * re-counted since (mds_sess_reopen with a newer gen) is not counted
 * down.  Returns how many it counted (delta, or 0). */
int mds_sess_open(uint64_t client, uint64_t ino, int delta, uint64_t gen);
/* Whether client may open ino once more: 0, or -EMFILE when it holds max
 * files open already and ino is not one of them (m->lock). */
int mds_sess_open_check(uint64_t client, uint64_t ino, uint32_t max);
/* A re-count after a reconnect (gen): client holds ino open count
 * times; the count is raised to that, never lowered.  Returns the change
 * (to add to the inode's opens). */
int mds_sess_reopen(uint64_t client, uint64_t ino, int count, uint64_t gen);
/* Removes the client's opens, calling fn for each inode; their number. */
size_t mds_sess_take_opens(uint64_t client, void (*fn)(void *arg, uint64_t ino, int count),
			   void *arg);
void mds_sess_set_reason(uint64_t client, const char *why);
void mds_sess_reason(uint64_t client, char *buf, size_t len);
void mds_sess_fini(void);

/* mds_purge.c: removes of data objects in flight, MDS_RM_INFLIGHT at a time, across
 * calls of mds_data_remove_range (the applier's round: the purges of many
 * removed files go together, and the OSDs commit them together). */
#define MDS_RM_INFLIGHT 32u
struct atoll_completion;
struct mds_rm_batch {
	struct atoll_completion *c[MDS_RM_INFLIGHT];
	unsigned n;
	int err;
};
/* Waits for the removes in flight: the first error (a missing object is
 * none). */
int mds_rm_batch_wait(struct mds_rm_batch *b);
/* Removes the objects of blocks first..last of ino (of data namespace
 * dns), into b (NULL: its own batch, waited for before it returns). */
int mds_data_remove_range(struct mds *m, uint64_t dns, uint64_t ino, uint64_t first,
			  uint64_t last, struct mds_rm_batch *b);

/* mds_statfs.c: statfs from the monitor's df, cached for a second */
int mds_statfs_start(struct mds *m);
void mds_statfs_stop(void);
/* Are the cached numbers fresh?  (If not, a refresh is asked.) */
bool mds_statfs_fresh(void);
/* The numbers; on the thread that called mds_statfs_may_wait (the
 * worker), stale ones are refreshed first (a second at most). */
void mds_statfs_get(uint64_t ninodes, struct mds_statfs *st);
void mds_statfs_may_wait(void);

/* mds_role.c: the beacons, the wait for the active role, the fencing
 * (doc/fs-design.md, "Standby MDS daemons").  start: the beacon thread
 * (m->cl, m->meta and m->data open); name is the daemon's (mds.NAME),
 * addr where it serves once active, argv what mds_role_fenced executes
 * again.  wait_grant: blocks until the map names this instance active
 * (the grant's epoch) or *stop (0).  fenced: logs why and starts over as
 * a new instance (never returns).  set_state: enum mds_beacon_state for
 * the beacons.  stop: ends the thread and tells the monitors this MDS
 * stops (they give the role away at once). */
int mds_role_start(struct mds *m, const char *name, const char *addr, uint32_t interval_ms,
		   char **argv, volatile sig_atomic_t *stop);
uint64_t mds_role_wait_grant(void);
/* The same, for ms milliseconds at most (0: not granted yet). */
uint64_t mds_role_wait_grant_ms(uint32_t ms);
void mds_role_fenced(const char *why) __attribute__((noreturn));
void mds_role_set_state(uint8_t state);
void mds_role_set_addr(const char *addr);
void mds_role_stop(void);

/* mds_ops.c */
void mds_handle(struct mds *m, const struct mds_req *rq, struct mds_reply *rp);

#endif
