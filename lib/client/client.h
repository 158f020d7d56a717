/*
 * client.h - private types of libatoll's client (the "objecter"), shared
 * by the files of lib/client/ and by nothing else.
 *
 * Locking: one mutex per cluster handle (atoll_cluster.lock) protects the
 * map, the OSD sessions, the list of requests in flight and the throttle.
 * It is never held while calling into the messenger's send paths
 * (msg_call, msg_send, msg_conn_close), whose callbacks may take it.
 * Completions have their own mutex (completion.c).
 */
#ifndef ATOLL_CLIENT_H
#define ATOLL_CLIENT_H

#include "atoll/atoll.h"
#include "errors.h"
#include "proto.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct msgr;
struct msg;
struct msg_conn;
struct osdmap;

/* Default limits (doc/protocol.md, "Limits"). */
#define CLIENT_OBJECT_MAX	(128ull << 20)	/* bytes of one object */
#define CLIENT_PAYLOAD_MAX	(64ull << 20)	/* bytes of one op */
#define CLIENT_KV_MAX		10000u		/* key/value entries of one op */
#define CLIENT_THROTTLE_OPS	1024u
#define CLIENT_THROTTLE_BYTES	(256ull << 20)
/* A resend after -ESTALE from an OSD no newer than us, or after a lost
 * connection, waits this long so that a flapping peer is not hammered. */
#define CLIENT_RETRY_MS		50u

/* The primary of every PG of one pool on the current map, computed on
 * first use (objecter.c): placing a PG takes microseconds, and a client
 * doing small ops at a high rate would otherwise spend much of its time
 * there.  Forgotten at every map change (client_pgcache_reset). */
struct client_pgc {
	uint32_t pool;
	uint32_t pg_num;
	int32_t *primary;	/* pg_num entries; CLIENT_PGC_UNKNOWN until placed */
};
#define CLIENT_PGC_UNKNOWN	INT32_MIN

/* One connection to an OSD, opened on first use. */
struct client_session {
	int32_t osd;
	char addr[64];
	struct msg_conn *conn;	/* one reference, ours */
};

struct atoll_cluster {
	pthread_mutex_t lock;		/* everything below unless said */
	pthread_cond_t map_cond;	/* signalled on every new map */
	pthread_cond_t throttle_cond;	/* signalled when ops finish */

	struct config *cfg;		/* set before connect, read-only after */
	uint64_t op_timeout_ms;		/* 0 = never */
	uint64_t mount_timeout_ms;
	uint64_t throttle_ops;
	uint64_t throttle_bytes;

	uint64_t id;			/* random, or with authentication the
					 * monitors' id for this client */
	struct msgr *msgr;
	struct msg_auth *auth;		/* NULL with auth = none; outlives msgr */
	/* The entity type its hellos declare: MSG_ENTITY_CLIENT (0 means
	 * that); atoll-mds sets MSG_ENTITY_MDS before connecting, so that
	 * its beacons and its data I/O are admitted as a cluster peer's,
	 * not in the clients' pools (doc/limits.md, "Messenger"). */
	uint32_t entity_type;
	struct monc *monc;		/* the monitors (lib/monc.h) */
	bool connected;			/* connect succeeded */
	bool shutting_down;
	uint64_t mon_seq;		/* the last command's mon_reqid.seq */

	struct osdmap *map;		/* NULL until the first map */
	uint64_t map_refused;		/* epochs refused (rolled-back monitor) */

	struct client_session *sessions;
	size_t nsessions;

	/* PG placement on the current map (client_pgc) */
	struct placement_ctx *pc_ctx;	/* built on the first op after a map change */
	struct client_pgc *pc_pools;
	size_t pc_npools;

	/* requests not yet finished, and the throttle */
	struct client_req *reqs;	/* doubly linked */
	uint64_t next_tid;
	uint64_t inflight_ops;
	uint64_t inflight_bytes;
};

struct atoll_ioctx {
	struct atoll_cluster *c;
	uint32_t pool;
	char name[64];
	uint32_t req_flags;		/* OSD_REQF_* every op carries */
};

/* ---- completions (completion.c) ---- */

struct atoll_completion {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	atoll_callback_t cb;
	void *arg;
	atoll_free_t free_arg;		/* called with arg when comp is freed */
	int refs;			/* the caller's and an op's */
	bool used;			/* given to an op already */
	bool complete;
	int64_t rval;
	uint64_t version;
};

/* Marks comp as taken by an op (and takes the op's reference); -EINVAL
 * when it was used before. */
int client_completion_take(struct atoll_completion *comp);
/* Undoes client_completion_take for an op refused after all: comp fires
 * never and may be given to another op. */
void client_completion_untake(struct atoll_completion *comp);
/* Sets the result, wakes waiters, runs the callback, drops the op's
 * reference.  Called once per taken completion. */
void client_completion_finish(struct atoll_completion *comp, int64_t rval,
			      uint64_t version);

/* ---- compound ops (compound.c) ---- */

enum client_out_kind {
	OUT_NONE = 0,
	OUT_READ,		/* buf, len, *bytes_read */
	OUT_STAT,		/* *size, *mtime_ns */
	OUT_XATTR_ITER,		/* one entry (name, value) into *iter */
	OUT_XATTR_BUF,		/* value copied into buf (len) */
	OUT_KV_ITER,		/* kv list (+ more) into *iter */
	OUT_NAMES,		/* LIST: names into *iter, *more */
};

struct client_out {
	enum client_out_kind kind;
	int *rval;
	void *buf;
	size_t len;
	size_t *bytes_read;
	uint64_t *size;
	uint64_t *mtime_ns;
	struct atoll_kv_iter **iter;
	int *more;
	const char *name;	/* OUT_XATTR_ITER: the attribute's name */
	/* filled on completion for the simple ops (ops.c) */
	int64_t got;		/* bytes read / value length */
};

struct atoll_op {
	int err;			/* first builder error */
	bool has_write, has_read;
	uint32_t nops;
	uint32_t nkv;			/* entries across every sub-op */
	uint64_t payload;		/* bytes across every sub-op */
	/* slots [0, nops) of these are set; the rest are not initialized
	 * (atoll_op_create zeroes the fields above only) */
	struct osd_subop ops[PROTO_OPS_MAX];
	struct client_out outs[PROTO_OPS_MAX];
	char *strs[PROTO_OPS_MAX];	/* owned copies (names) */
};

/* A new sub-op of code in op's next slot (its slots set to zero), or
 * NULL (and op->err set) when op is full. */
struct osd_subop *client_op_add(struct atoll_op *op, uint16_t code);
/* Checks that op can be sent (sizes, mixing); 0 or a negative errno. */
int client_op_check(const struct atoll_op *op);
/* Fills the caller's outputs of op from a reply (called once). */
void client_op_fill(struct atoll_op *op, const struct osd_op_reply *r,
		    const uint8_t *data, size_t data_len);
/* Frees what the builders allocated; op itself is not freed. */
void client_op_clear(struct atoll_op *op);

/* Name checks: 0, -EINVAL (NULL/empty) or -ENAMETOOLONG. */
int client_check_oid(const char *oid);
int client_check_xattr_name(const char *name);

/* ---- the objecter (objecter.c) ---- */

struct client_req {
	struct client_req *prev, *next;	/* cluster's list, under lock */
	struct atoll_cluster *c;
	int refs;			/* list, each send, the timer */
	uint64_t tid;			/* reqid.tid, kept across resends */
	uint32_t pool;
	uint32_t req_flags;		/* the ioctx's OSD_REQF_* */
	bool fixed_pg;			/* PG-level op (LIST) */
	uint32_t pg;
	char oid[PROTO_OID_MAX + 1];
	size_t oid_len;
	struct atoll_op *op;
	bool own_op;			/* free op with the request */
	struct atoll_completion *comp;
	/* done: finished (under lock); attempt: the send whose reply
	 * counts; target: the OSD it was sent to (-1 = not sent) */
	bool done;
	bool sent_once;
	uint32_t attempt;
	int32_t target;
	uint64_t need_epoch;		/* waiting for this map epoch */
	uint64_t timer;			/* op timeout timer, 0 = none */
	uint64_t retry_timer;		/* a pending resend (req_retry_later_locked), 0 = none */
	uint64_t bytes;			/* charged to the throttle */
	/* Messages still holding the caller's write buffer by reference
	 * (sent from it without a copy).  The caller may free the buffer
	 * once the completion fires, so the completion waits until every
	 * such message is written or dropped (finish_* keep its result). */
	int data_holds;
	/* The reply of the latest send is being received straight into the
	 * caller's read buffer (msg_call_rx; counted in data_holds too):
	 * finishing the request on the loop thread revokes it first. */
	bool rx_lease;
	struct msg_conn *rx_conn;
	bool finish_pending;
	int64_t finish_result;
	uint64_t finish_version;
	/* result of a simple op's own post-processing (ops.c) */
	int64_t (*post)(struct client_req *r, int64_t result);
	void *post_arg;
};

/* Submits a request (takes ownership of r: it is freed after it
 * finishes).  Blocks on the throttle unless called on the library's
 * thread.  Returns 0 (the completion will fire) or a negative errno (it
 * will not; r is freed). */
int client_submit(struct atoll_cluster *c, struct client_req *r);
/* A new request for op on oid in pool (oid may be NULL for PG ops). */
struct client_req *client_req_new(struct atoll_ioctx *io, const char *oid,
				  struct atoll_op *op, bool own_op,
				  struct atoll_completion *comp);
/* Frees a request that was never submitted. */
void client_req_free(struct client_req *r);
/* Rechecks every request after a new map (called without the lock). */
void client_map_changed(struct atoll_cluster *c);
/* Forgets the PG placements computed on the map (lock held): call it
 * whenever c->map changes or is freed. */
void client_pgcache_reset(struct atoll_cluster *c);
/* Closes every OSD session (shutdown). */
void client_sessions_close(struct atoll_cluster *c);
/* Fails every request not finished yet with err (shutdown). */
void client_fail_all(struct atoll_cluster *c, int err);

/* ---- the cluster (cluster.c) ---- */

/* Asks the monitor for maps after the one we hold. */
void client_resubscribe(struct atoll_cluster *c);
/* Waits (up to timeout_ms, 0 = forever) until the map is at least
 * epoch; 0 or -ETIMEDOUT. */
int client_wait_epoch(struct atoll_cluster *c, uint64_t epoch, uint64_t timeout_ms);
/* For atoll-mds (which links the client statically): a call to the
 * monitors' leader (monc_call: fn runs once, on the loop thread; resent
 * across monitor sessions until timeout_ms), -ENOTCONN before
 * atoll_cluster_connect; and a copy of the current map (*out NULL before
 * the first), -ENOMEM. */
int client_mon_call(struct atoll_cluster *c, struct msg *m, uint32_t timeout_ms,
		    void (*fn)(void *arg, struct msg *reply, int err), void *arg);
int client_map_copy(struct atoll_cluster *c, struct osdmap **out);
/* The value of "key": N in a JSON text (top level or not: the first
 * occurrence), or -ENOENT. */
int client_json_u64(const char *json, size_t len, const char *key, uint64_t *out);
/* Appends s to buf as a JSON string (quoted, escaped); -E2BIG if buf
 * is too small.  *pos advances. */
int client_json_str(char *buf, size_t cap, size_t *pos, const char *s);

/* ---- iterators (kviter.c) ---- */

/* An iterator over a copy of an OSD kv list ("u32 n, n x (blob, blob)",
 * then u8 more); *more gets the flag when more is not NULL.  kv_only:
 * keys without values (names).  -EBADMSG for a malformed list. */
int client_kv_iter_decode(const void *p, size_t len, struct atoll_kv_iter **out,
			  int *more);
/* An iterator holding one entry (copied). */
int client_kv_iter_one(const void *k, size_t klen, const void *v, size_t vlen,
		       struct atoll_kv_iter **out);

/* ---- listing cursor (list.c) ---- */

/* Encodes (pg, last name) as a cursor string; -ERANGE if buf is small. */
int client_cursor_encode(uint32_t pg, const char *name, size_t len, char *buf,
			 size_t cap);
/* Decodes a cursor: name gets up to PROTO_OID_MAX bytes + NUL. */
int client_cursor_decode(const char *cursor, uint32_t *pg, char *name,
			 size_t *len);

#endif
