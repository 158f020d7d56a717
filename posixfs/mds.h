/*
 * mds.h - atoll-mds internals: the namespace's cache in memory, transactions
 * (one journal entry each), the journal and the object store layout.
 * doc/fs.md describes the layout; mds_ns.c keeps the namespace and
 * persists it, mds_ops.c answers the client's requests, mds_lease.c
 * grants and revokes the clients' leases, mds_main.c starts the daemon.
 */
#ifndef ATOLL_MDS_H
#define ATOLL_MDS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "deadline.h"
#include "mds_proto.h"

struct msg_conn;

struct atoll_cluster;
struct atoll_ioctx;

#define MDS_INODE_SHARDS	16u
#define MDS_INO_RANGE		4096u	/* ino_hw grows by this much */
#define MDS_SEG_ENTRIES		1024u	/* journal entries per segment (at least) */
#define MDS_CACHE_MB		256u	/* the metadata cache's bound (mds_cache_mb) */

/* A directory entry: a node of the directory's AVL tree, ordered by name
 * (bytewise), so that inserts, removals and "the first name after X"
 * (readdir's positions) are O(log n) at any size. */
struct mds_dent {
	struct mds_dent *l, *r;
	uint64_t ino;
	uint32_t mode;		/* S_IF* */
	int h;			/* height of the subtree */
	char name[];
};

struct mds_xattr {
	char *name;
	void *val;
	uint32_t len;
};

/* A cached inode (doc/fs.md, "The metadata cache"): its record, and for a
 * directory its entries once loaded (dir_loaded).  A node whose last
 * change (aseq) the applier has not written to the objects yet, or that a
 * client holds open, is pinned; the others are evicted least recently
 * used first when the cache is over its bound, and loaded again on use. */
struct mds_node {
	struct mds_inode a;
	char *link;		/* symlink target or NULL */
	struct mds_dent *dents;	/* directories: the entries (AVL root) */
	size_t nents;		/* entries (valid once dir_loaded) */
	size_t ent_bytes;	/* memory of the entries */
	bool dir_loaded;
	bool gone;		/* removed in memory, not yet in the objects */
	int opens;		/* open handles of all clients (memory only) */
	struct mds_xattr *xa;	/* loaded on first use (xa_loaded) */
	size_t nxa;
	bool xa_loaded;
	uint64_t aseq;		/* the last change to it, in mds_commit order */
	size_t mem;		/* bytes counted in m->cache_bytes */
	struct mds_node *hnext;
	struct mds_node *lprev, *lnext;	/* LRU list: lru_head is the newest */
};

/* One change: working copies of the inodes it touches and the dentry
 * updates it makes.  mds_commit() journals it, then applies it. */
enum mds_upd_type {
	MDS_U_DENT_SET = 1,
	MDS_U_DENT_RM = 2,
	MDS_U_INODE_PUT = 3,
	MDS_U_INODE_RM = 4,	/* also removes the directory object */
	MDS_U_PURGE = 5,	/* data objects of blocks [0, size) */
	MDS_U_TRUNC = 6,	/* data beyond size up to old_size */
	MDS_U_HW = 7,		/* ino_hw */
	MDS_U_XATTR_SET = 8,	/* ino, name = txn's xval */
	MDS_U_XATTR_RM = 9,	/* ino, name */
	MDS_U_PARENT = 10,	/* directory ino is named in dir (its ".." key) */
};

struct mds_upd {
	uint8_t type;
	uint64_t dir;
	char name[MDS_NAME_MAX + 1];
	uint64_t ino;
	uint32_t mode;
	struct mds_inode in;	/* INODE_PUT */
	uint64_t size, old_size;
};

#define MDS_TXN_INODES	6
#define MDS_TXN_UPDS	16

struct mds_txn {
	int nw;
	struct {
		struct mds_inode in;
		bool dirty, removed;
		uint64_t purge_size;
		bool purge;
		uint64_t trunc_from, trunc_to;
		bool trunc;
	} w[MDS_TXN_INODES];
	int nu;
	uint64_t link_ino;	/* a symlink whose record the txn puts (link) */
	/* a second symlink of the txn (RENAME_EXCHANGE of two): an inode
	 * record is written with its target, so every symlink a txn puts
	 * carries it (mds_txn_inode fills these in) */
	uint64_t link2_ino;
	uint64_t client, reqid;	/* the request that made it (0: none) */
	uint64_t res_ino;	/* the inode its reply names */
	uint64_t aseq;		/* memory only: its place in mds_commit order */
	uint32_t xlen;
	/* the fields above are cleared by mds_txn_init; the ones below are
	 * read only up to nu, link_ino/link2_ino and xlen (80 KiB in all:
	 * clearing them cost each request a page-sized memset) */
	struct mds_upd u[MDS_TXN_UPDS];
	char link[MDS_PATH_MAX + 1];	/* the target of symlink link_ino */
	char link2[MDS_PATH_MAX + 1];
	uint8_t xval[MDS_XATTR_MAX];	/* a new attribute's value */
};

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
 * the replay (doc/fs.md, "Index of answered requests"). */
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

/* A change as the journaler and the applier queue it: its journal body
 * (what replay decodes too), a few hundred bytes instead of the 80 KiB
 * struct mds_txn that made it, whose copies cost each change page faults
 * and a 15 KiB memcpy twice. */
struct mds_packed {
	uint8_t *body;		/* malloc'd; txn_encode's bytes */
	size_t len;
	uint64_t aseq;		/* the txn's (memory only) */
};

/* A change applied in memory and answered, waiting for the journaler
 * (early replies, mds_ns.c): it goes to the journal in the next batch. */
struct mds_jent {
	struct mds_jent *next;
	struct msg_conn *conn;	/* the requester (a reference), told when safe */
	uint64_t seq;
	struct timespec due;	/* journal it by then (jgather_ms after queueing) */
	bool crash_after;	/* fault injection: exit once this is journaled */
	bool hold;		/* fault injection: never journal this one */
	uint64_t client, reqid, res_ino;	/* the txn's */
	struct mds_packed p;
};

/* A journaled change waiting for the applier (mds_ns.c) to write it to
 * the namespace objects. */
struct mds_apply {
	struct mds_apply *next;
	struct mds_packed p;
};

#define MDS_APPLY_MAX	512u	/* journaled changes not yet applied, at most */

struct mds {
	struct atoll_cluster *cl;
	struct atoll_ioctx *meta, *data;
	char data_pool[128], meta_pool[128];
	pthread_mutex_t lock;
	struct mds_node **ht;
	size_t htsize;
	uint64_t ninodes;	/* inodes in the namespace (cached or not) */
	/* The metadata cache (doc/fs.md, "The metadata cache"): cached nodes
	 * (records, listings, extended attributes) within cache_max bytes. */
	uint64_t cache_max, cache_bytes, ncached;
	uint64_t c_hits, c_misses, c_evictions;
	struct mds_node *lru_head, *lru_tail;
	uint64_t aseq;		/* the last change applied in memory */
	uint64_t applied_aseq;	/* every change up to it is in the objects (atomic) */
	bool load_err;		/* a load failed during this request */
	uint64_t next_ino, ino_hw;
	uint64_t seg, seg_entries, seq;
	uint64_t seg_bytes;	/* length of the current segment */
	uint64_t nreq;
	struct mds_rings done;	/* struct mds_done, per client (m->lock) */
	struct mds_rings ans;	/* struct mds_ans: the journaled ones (ans_lock) */
	pthread_mutex_t ans_lock;
	uint64_t seg_max;	/* entries per segment (ATOLL_MDS_SEG_ENTRIES) */
	bool drop_safe;		/* fault injection: never send MT_MDS_SAFE */
	uint64_t commits, crash_after;	/* fault injection (tests) */
	uint32_t crash_op;	/* 0, or only changes of this op count for crash_after */
	/* The applier: a thread that writes journaled changes to the
	 * namespace objects in journal order, behind the replies.  alock
	 * protects the queue, its length, `busy` and `stop`; acond signals
	 * a change of any of them (both ways). */
	pthread_t applier;
	bool applier_on, busy, stop;
	pthread_mutex_t alock;
	pthread_cond_t acond;
	struct mds_apply *aq_head, *aq_tail;
	unsigned aq_len;
	unsigned drainers;	/* threads in apply_drain: no gathering */
	uint64_t apply_gather_ms;	/* how long a round waits for more */
	/* Early replies (doc/fs.md, "Early replies"): the worker applies a
	 * change in memory, queues it here and replies; the journaler thread
	 * appends every queued change in one atoll_append (group commit),
	 * then hands them to the applier and tells the requesters (MT_MDS_SAFE).
	 * jlock protects the queue, durable_seq and jstop; jcond signals a
	 * change of any of them.  early false: the worker journals each
	 * change itself before replying (mds_early_reply off). */
	bool early, journaler_on, jstop;
	pthread_t journaler;
	pthread_mutex_t jlock;
	pthread_cond_t jcond;
	struct mds_jent *jq_head, *jq_tail;
	unsigned jq_len;
	uint64_t durable_seq;	/* every entry up to it is journaled */
	/* The journaler gathers entries for up to jgather_ms after the
	 * first of a batch was queued (ATOLL_MDS_JOURNAL_GATHER_MS), unless
	 * someone waits for an entry up to jhurry_seq to be durable (an
	 * fsync's MT_MDS_FLUSH, a truncate, a resend): mds_journal_hurry. */
	uint64_t jgather_ms, jhurry_seq;
	/* the last sequence number queued and the last journaled, for the
	 * status (read on the loop thread: atomic stores and loads) */
	uint64_t pub_seq, pub_durable;
	uint64_t batches;	/* appends made by the journaler */
	uint64_t crash_hold;	/* ATOLL_MDS_CRASH_BEFORE_JOURNAL */
	unsigned jdelay_ms;	/* ATOLL_MDS_JOURNAL_DELAY_MS */
	bool crash_now;		/* the worker exits after sending this reply */
	struct msg_conn *cur_conn;	/* the requester of the request being handled */
	uint32_t cur_op;	/* its op (0: a change of the MDS's own) */
	uint64_t cur_seq;	/* the journal entry of its change (0: none) */
	/* Sessions (doc/fs.md, "Reconnect window"): the ids of the clients
	 * with a session, persisted as the keys of fs.sessions (a mount adds
	 * its own, an unmount removes it), loaded at start: those the
	 * reconnect window waits for. */
	uint64_t *sess;
	size_t nsess, sess_cap;
	/* Orphans (no names left) whose removal waits for the reconnect
	 * window's end: the clients re-count their opens in it (doc/fs.md,
	 * "Open files across a restart").  m->lock. */
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

/* mds_ns.c */
int mds_open(struct mds *m);		/* mkfs if needed, replay, load */
/* Notes an orphan (nlink 0, open nowhere) to remove after the reconnect
 * window (mds_main.c), which removes those nobody re-opened; false
 * outside the window (remove it now).  m->lock. */
bool mds_orphan_defer(struct mds *m, uint64_t ino);
void mds_close(struct mds *m);
/* The node of ino, loaded from the objects on a miss (NULL: no such
 * inode, or the load failed: m->load_err). */
struct mds_node *mds_get(struct mds *m, uint64_t ino);
/* The node of ino if it is cached (no load). */
struct mds_node *mds_cached(struct mds *m, uint64_t ino);
/* Loads the entries of directory d (once; 0 or -errno). */
int mds_dir_load(struct mds *m, struct mds_node *d);
/* The entry name of d (its entries loaded), or NULL. */
struct mds_dent *mds_dir_find(struct mds_node *d, const char *name);
/* The first entry of d with a name > after ("" = from the start). */
struct mds_dent *mds_dir_next(struct mds_node *d, const char *after);
/* The directory that names directory n (0: unknown). */
uint64_t mds_dir_parent(struct mds *m, struct mds_node *n);
/* Loads the records of the inodes not cached among inos[0..n) in one
 * request per shard (readdir-plus pages). */
void mds_prefetch(struct mds *m, const uint64_t *inos, size_t n);
/* Evicts unpinned nodes, least recently used first, until the cache is
 * within its bound (at the end of each request, under m->lock). */
void mds_cache_trim(struct mds *m);
/* Is everything request rq reads cached, so that it can be handled
 * without loading anything (the loop thread must not block)? */
bool mds_req_cached(struct mds *m, const struct mds_req *rq);
/* The directories rq reads or changes the entries of (at most 4): its
 * ino, a rename's or link's ino2, the directory an rmdir or a rename
 * over a directory removes.  Takes m->lock. */
unsigned mds_req_dirs(struct mds *m, const struct mds_req *rq, uint64_t out[4]);
int mds_alloc_ino(struct mds *m, struct mds_txn *t, uint64_t *ino);
/* mds_inos.c, under m->lock: a range of at most want numbers for
 * client's asynchronous creates (INOS), and whether ino is one of
 * client's numbers known unused (then it counts as used from now on). */
int mds_inos_grant(struct mds *m, uint64_t client, uint32_t want, uint64_t *first,
		   uint32_t *count);
bool mds_inos_take(uint64_t client, uint64_t ino);
uint64_t mds_now(void);
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

void mds_txn_init(struct mds_txn *t);
/* A working copy of ino in the txn (NULL when ino does not exist). */
struct mds_inode *mds_txn_inode(struct mds *m, struct mds_txn *t, uint64_t ino);
struct mds_inode *mds_txn_new_inode(struct mds_txn *t, uint64_t ino);
void mds_txn_remove(struct mds_txn *t, uint64_t ino, bool purge);
void mds_txn_trunc(struct mds_txn *t, uint64_t ino, uint64_t from, uint64_t to);
void mds_txn_dent_set(struct mds_txn *t, uint64_t dir, const char *name,
		      uint64_t ino, uint32_t mode);
void mds_txn_dent_rm(struct mds_txn *t, uint64_t dir, const char *name);
/* Journals the txn, then applies it in memory and to the objects.  A
 * journal failure is fatal (the daemon exits; a restart replays). */
int mds_commit(struct mds *m, struct mds_txn *t);

void mds_done_add(struct mds *m, uint64_t client, uint64_t reqid, int32_t rc,
		  uint64_t ino, uint64_t seq);
/* Journaler: starts it (early replies on); stop flushes what is queued. */
int mds_journaler_start(struct mds *m);
void mds_journaler_stop(struct mds *m);
uint64_t mds_durable_seq(struct mds *m);
/* Journal everything queued so far without gathering more (somebody
 * waits for it: an fsync, MT_MDS_FLUSH). */
void mds_journal_hurry(struct mds *m);
/* Can a change be queued for the journaler without waiting?  (Only the
 * thread handling requests queues, so the answer holds until it does.) */
bool mds_journal_room(struct mds *m);
const struct mds_done *mds_done_find(struct mds *m, uint64_t client, uint64_t reqid);
/* The whole object oid of the metadata pool, malloc'd (-ENOENT: none). */
int mds_read_object(struct mds *m, const char *oid, uint8_t **buf, size_t *len);
/* The journaled requests (mds_answered.c): noted by whoever journals,
 * kept in fs.answered across segments. */
int mds_answered_init(struct mds *m);
void mds_answered_fini(struct mds *m);
void mds_ans_add(struct mds *m, uint64_t client, uint64_t reqid, uint64_t ino);
int mds_ans_store(struct mds *m);
int mds_ans_load(struct mds *m);
void mds_answered_forget(struct mds *m, uint64_t client);

/* Loads the node's extended attributes (once). */
int mds_xattr_load(struct mds *m, struct mds_node *n);
struct mds_xattr *mds_xattr_find(struct mds_node *n, const char *name);
void mds_txn_xattr(struct mds_txn *t, uint64_t ino, const char *name,
		   const void *val, uint32_t len, bool remove);

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

/* mds_lease.c: leases and their revocation (doc/fs.md, "Leases").
 * lease_ms 0 turns leases off; max bounds the records held. */
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

/* mds_ns.c: fs.sessions */
bool mds_session_known(const struct mds *m, uint64_t client);
int mds_session_add(struct mds *m, uint64_t client);
int mds_session_drop(struct mds *m, uint64_t client);
/* fs.evicted: a client refused from now on, across restarts too */
#define MDS_EVICT_SECONDS	3600	/* also its blocklist time */
#define MDS_EVICTED_MAX		4096u
int mds_evicted_add(struct mds *m, uint64_t client);

/* mds_inflight.c: files a client closed with its writes still in flight
 * (FSYNC with MDS_L_INFLIGHT, LANDED; doc/fs.md, "Closing without
 * waiting").  Own lock; never taken around m->lock.  add: -ENOSPC past
 * MDS_INFLIGHT_MAX marks (the client then waits for its writes itself,
 * as before).  landed: the client's mark on ino goes if its number is at
 * most seq (CLOSE: UINT64_MAX).  wait (worker): until no other client
 * than client marks ino, or timeout_ms (then those marks are dropped,
 * logged, -ETIMEDOUT). */
#define MDS_INFLIGHT_MAX	65536u
int mds_inflight_add(uint64_t ino, uint64_t client, uint64_t seq);
void mds_inflight_landed(uint64_t ino, uint64_t client, uint64_t seq);
void mds_inflight_drop_client(uint64_t client);
bool mds_inflight_other(uint64_t ino, uint64_t client);
int mds_inflight_wait(uint64_t ino, uint64_t client, uint32_t timeout_ms);
void mds_inflight_stats(uint64_t *marks, uint64_t *waits, uint64_t *timeouts);

/* mds_session.c: per client, the connection of its last request and
 * since when it is gone (own lock), its open files (m->lock), why it was
 * evicted (doc/fs.md, "Sessions whose client is gone") */
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
/* Removes the objects of blocks first..last of ino, into b (NULL: its own
 * batch, waited for before it returns). */
int mds_data_remove_range(struct mds *m, uint64_t ino, uint64_t first, uint64_t last,
			  struct mds_rm_batch *b);

/* mds_statfs.c: statfs from the monitor's df, cached for a second */
int mds_statfs_start(struct mds *m);
void mds_statfs_stop(void);
/* Are the cached numbers fresh?  (If not, a refresh is asked.) */
bool mds_statfs_fresh(void);
/* The numbers; on the thread that called mds_statfs_may_wait (the
 * worker), stale ones are refreshed first (a second at most). */
void mds_statfs_get(uint64_t ninodes, struct mds_statfs *st);
void mds_statfs_may_wait(void);

/* mds_ops.c */
void mds_handle(struct mds *m, const struct mds_req *rq, struct mds_reply *rp);

#endif
