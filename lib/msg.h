/*
 * msg.h - the messenger: every connection atoll makes (client<->mon,
 * client<->osd, osd<->osd, osd<->mon) goes through it.
 *
 * One event loop thread (epoll) per messenger owns every socket.  A frame
 * on the wire is
 *
 *   header (32 bytes, little-endian):
 *     u32 magic "ATM1" (MSG_MAGIC)
 *     u16 type            message type (proto.h, MT_*)
 *     u16 flags           MSG_F_*
 *     u64 tid             request id; a reply carries its request's tid
 *     u32 front_len       encoded fields (encode.h)
 *     u32 data_len        bulk bytes (object data), sent without copying
 *     u32 reserved (0)
 *     u32 header crc32c   over the 28 bytes before it
 *   front (front_len bytes), data (data_len bytes)
 *   u32 crc32c over front then data
 *
 * In the secure wire mode (chosen in an authenticated handshake) every
 * frame after the handshake is sealed instead: the header and the
 * payload each encrypted with AES-256-GCM and followed by a 16-byte tag,
 * no crc (msg_secure.h, doc/messenger.md "Secure mode").
 *
 * A connection starts with a handshake in both directions: a MT_HELLO
 * frame carrying the cluster fsid, the sender's identity (entity type and
 * id), its feature bits and an authentication blob (empty until the
 * authentication issue fills it).  A peer with a non-zero fsid different
 * from ours, a bad magic, a bad crc, a frame longer than the configured
 * maximum or any other frame before the hello closes the connection (and
 * is logged); the messenger keeps serving every other connection.
 *
 * Keepalive: every keepalive_ms the loop sends each open connection an
 * empty MSG_T_KEEPALIVE frame, and a connection that received nothing for
 * keepalive_timeout_ms (while we were reading from it) is taken as broken:
 * a dialled one redials, an accepted one closes.  TCP alone can take
 * minutes to notice a peer behind a partition, and then more to
 * retransmit once the path is back; this bounds both (doc/messenger.md).
 *
 * Flow control: a received message is charged from its header until the
 * upper layer frees it (msg_free): the whole frame to its connection
 * (inflight_max bytes, conn_frames_max messages) and, on an accepted
 * connection, its memory as it is allocated to the pool of its peer's
 * class (clients, or cluster peers: mon, osd, mds).  What does not fit
 * stops the loop reading that connection alone, so a fast sender is
 * slowed to what the receiver can take and clients never stop peers.  Accepted connections
 * also take slots (in all, per address, handshaking, reserved for peers;
 * see struct msgr_config).  Sending never blocks: callers that produce
 * load (the client library) throttle themselves.
 *
 * Threads: the callbacks of msgr_ops and msg_call replies run on the loop
 * thread and must not block.  msg_send, msg_call, msg_reply, msgr_connect,
 * msg_conn_close, msg_free, msgr_timer, msgr_timer_cancel and the refcount
 * calls are safe from any thread.  Never call msgr_destroy from a callback.
 *
 * The implementation: messenger.c (the loop and the entry points),
 * msg_conn.c (one connection's state machine), msg_handshake.c (how a
 * connection comes up), msg_rx.c (its receive path), msg_frame.c (the
 * wire format), msg.c (messages), msg_addr.c (addresses);
 * doc/messenger.md explains the choices.
 */
#ifndef ATOLL_MSG_H
#define ATOLL_MSG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MSG_MAGIC		0x314d5441u	/* "ATM1" little-endian */
#define MSG_HEADER_LEN		32u
#define MSG_F_REPLY		0x0001u		/* answers the request of the same tid */

/* Message types 1..MSG_T_RESERVED_MAX belong to the messenger itself
 * (proto.h starts above them); msg_send() refuses them. */
#define MSG_T_HELLO		1u
#define MSG_T_KEEPALIVE		2u		/* empty; consumed by the messenger */
#define MSG_T_AUTH		3u		/* the handshake's proofs (msg_auth.c) */
#define MSG_T_RESERVED_MAX	9u

/* Default limits (doc/protocol.md, "Limits"): one op's payload is at
 * most 64 MiB; a frame may be a little bigger for its fields. */
#define MSG_DEFAULT_FRAME_MAX	((64u << 20) + (1u << 20))
#define MSG_DEFAULT_INFLIGHT_MAX (256ull << 20)
/* Server-side limits of accepted connections (doc/limits.md, "Messenger") */
#define MSG_DEFAULT_CONN_FRAMES_MAX	1024u
#define MSG_DEFAULT_POOL_BYTES		(64ull << 20)
#define MSG_DEFAULT_POOL_FRAMES		4096u
#define MSG_DEFAULT_CONNS_MAX		4096u
#define MSG_DEFAULT_CONNS_PER_ADDR	256u
#define MSG_DEFAULT_PEER_RESERVED	256u
#define MSG_DEFAULT_HANDSHAKES_MAX	1024u
#define MSG_DEFAULT_HANDSHAKES_PER_ADDR	64u
#define MSG_DEFAULT_HS_RCVBUF		(16u << 10)
#define MSG_DEFAULT_FRAME_TIMEOUT_MS	60000u

enum msg_entity {
	MSG_ENTITY_NONE = 0,
	MSG_ENTITY_CLIENT = 1,
	MSG_ENTITY_MON = 2,
	MSG_ENTITY_OSD = 3,
	MSG_ENTITY_MDS = 4,
};

struct msg_identity {
	uint8_t type;		/* enum msg_entity */
	uint64_t id;		/* osd id, mon rank, or a client's random id */
};

struct msg_conn;
struct msgr;
struct msgr_call;

/*
 * A message.  front and data are owned by the message (freed by msg_free)
 * unless data was attached with msg_set_data_ref().  A received message
 * holds a reference on its connection (->conn) until it is freed; its
 * data is one malloc'ed buffer of data_len bytes (NULL when empty) that
 * the upper layer may take (set ->data to NULL before msg_free).  Make
 * messages with msg_new() only: the messenger uses the private fields.
 */
struct msg {
	uint16_t type;
	uint16_t flags;
	uint64_t tid;
	void *front;
	uint32_t front_len;
	void *data;
	uint32_t data_len;
	struct msg_conn *conn;	/* received messages only */
	/* crc32c(0, data, data_len) when data_crc_known: set on received
	 * messages with big data (the receive pass computes it anyway), or
	 * by msg_set_data_crc() */
	bool data_crc_known;
	uint32_t data_crc;
	/* With data_crc on a received message in crc mode, when the
	 * messenger keeps them (msgr_config.block_crcs): crc32c(0, block) of
	 * every whole 4 KiB block of data, in order (data_len / 4096 of
	 * them), from the same receive pass, so that a store can take its
	 * block checksums from it instead of reading the bytes again.  NULL
	 * otherwise.  Owned by the message; attaching other data drops it. */
	uint32_t *data_bcrc;
	/* private */
	void (*data_free)(void *arg);
	void *data_free_arg;
	uint64_t charged;	/* bytes counted against conn's inflight */
	uint8_t cls;		/* the receive pool charged (msg_budget.c) */
	bool delivered;		/* handed to the upper layer */
	uint64_t pcharged;	/* bytes counted against the pool */
	struct msg *q_next, *q_prev;	/* the messenger's send queue */
	struct msgr_call *call;		/* msg_call's record until sent */
	bool call_direct;		/* a call written by its caller: its
					 * call counts as sent, so after a
					 * reset it is dropped, not resent */
	uint8_t wire_hdr[MSG_HEADER_LEN];
	uint8_t wire_tail[4];		/* payload crc32c, little-endian */
	bool tail_set;			/* wire_tail computed (crc mode only) */
	/* secure mode: the whole frame sealed for the connection it is
	 * being written on (msg_secure.h), from its first write until it
	 * is written or that connection's socket goes */
	uint8_t *sealed;
	size_t sealed_len;
};

/* A new message of type; front takes the bytes of an encoder (the
 * encoder is left empty).  Returns NULL on ENOMEM or when e->err is set. */
struct enc;
struct msg *msg_new(uint16_t type, struct enc *front);
/* Copies len bytes into the message's data. -ENOMEM. */
int msg_set_data(struct msg *m, const void *p, size_t len);
/* Attaches data without copying: free_fn(arg) is called once the bytes
 * are sent (or the message is dropped); free_fn may be NULL when the
 * caller keeps p alive until the message is freed. */
void msg_set_data_ref(struct msg *m, void *p, size_t len,
		      void (*free_fn)(void *arg), void *arg);
/* Tells the messenger the crc32c of m's data, crc32c(0, data, data_len),
 * so that sending m does not compute it again: e.g. the data_crc of a
 * received message whose data is forwarded as it is (a primary OSD's
 * REP_OPs).  A wrong crc makes the peer drop the connection.  Attaching
 * other data (msg_set_data, msg_set_data_ref) forgets it. */
void msg_set_data_crc(struct msg *m, uint32_t crc);
/* Frees m (NULL is fine); for a received message this also returns its
 * bytes to the connection's flow-control budget. */
void msg_free(struct msg *m);

struct msgr_config {
	size_t size_of;			/* sizeof(struct msgr_config) */
	struct msg_identity me;
	uint8_t fsid[16];		/* all zero: not known yet (a client
					 * learns it from the monitor) */
	uint64_t features;
	uint32_t frame_max;		/* front + data; 0 = MSG_DEFAULT_FRAME_MAX */
	uint64_t inflight_max;		/* 0 = MSG_DEFAULT_INFLIGHT_MAX */
	uint32_t handshake_timeout_ms;	/* 0 = 10 s */
	uint32_t reconnect_min_ms;	/* first backoff; 0 = 50 ms */
	uint32_t reconnect_max_ms;	/* backoff cap; 0 = 5 s */
	/* Fault injection, for tests only (0 = off).  Of the request frames
	 * written for msg_call (never hellos, replies or one-way messages),
	 * this many per thousand are written a second time, same tid (the
	 * peer sees a duplicate; its second reply is dropped) ... */
	uint32_t inject_dup_permille;
	/* ... and this many per thousand reset the connection right after
	 * they are written (the call fails -ECONNRESET; a dialled connection
	 * redials). */
	uint32_t inject_reset_permille;
	uint32_t keepalive_ms;		/* 0 = 1 s */
	uint32_t keepalive_timeout_ms;	/* 0 = 10 s */
	/* Authentication (msg_auth.h): NULL = auth none.  Otherwise a
	 * connection opens only after both ends proved themselves, and
	 * msg_conn_peer() is the proved identity.  The caller's; it must
	 * outlive the messenger. */
	struct msg_auth *auth;
	/*
	 * Limits of what peers may make us hold (server side).  0 = the
	 * MSG_DEFAULT_* above; msgr_config_read() (msg_config.h) fills them
	 * from atoll.conf.  Received messages are charged from their
	 * header until msg_free(): per connection, the whole frame
	 * (inflight_max bytes, conn_frames_max messages, every
	 * connection) and, for accepted connections, to the pool of the
	 * peer's class (cluster peers: mon, osd, mds; clients: anything
	 * else) a message and the memory allocated as the bytes arrive.
	 * What does not fit pauses reading that connection (not the
	 * others) until enough is freed; one frame at a time may pass a
	 * pool's bytes while the pool holds no delivered message.
	 */
	uint32_t conn_frames_max;
	uint64_t client_bytes_max;
	uint32_t client_frames_max;
	uint64_t peer_bytes_max;
	uint32_t peer_frames_max;
	/* Accepted connections: at most conns_max in all, of which
	 * peer_reserved only cluster peers may take; at most
	 * conns_per_addr clients from one address; at most handshakes_max
	 * waiting for their hello (the oldest is closed for a new one) and
	 * handshakes_per_addr from one address.  Refused connections are
	 * closed at once. */
	uint32_t conns_max;
	uint32_t conns_per_addr;
	uint32_t peer_reserved;
	uint32_t handshakes_max;
	uint32_t handshakes_per_addr;
	/* SO_RCVBUF of an accepted socket until its hello (then the
	 * kernel's own sizing again); UINT32_MAX = leave it alone */
	uint32_t handshake_rcvbuf;
	/* An accepted connection must receive a frame whole within this
	 * of its header (a slow trickle holds its budget no longer) */
	uint32_t frame_timeout_ms;
	/* Received data of 64 KiB or more (crc mode) keeps each whole
	 * 4 KiB block's crc (msg.data_bcrc), from the receive pass, at the
	 * cost of a crc32c call per block: for a daemon whose store takes
	 * them (the OSD) */
	bool block_crcs;
};

struct msgr_ops {
	/* A request or one-way message (not a reply matched by msg_call).
	 * Takes ownership of m. */
	void (*dispatch)(void *arg, struct msg_conn *c, struct msg *m);
	/* The handshake of c completed (accepted or dialled); the peer's
	 * identity is known.  May be NULL. */
	void (*connected)(void *arg, struct msg_conn *c);
	/* c closed with err (negative errno): an open connection ended, or
	 * an attempt of a dialled connection failed (-ECONNREFUSED,
	 * -ETIMEDOUT, -ECONNRESET when the peer hung up, e.g. because it
	 * belongs to another cluster).  For a dialled
	 * connection that is still referenced, a reconnect follows.  Not
	 * called for an accepted connection that never completed its
	 * handshake.  May be NULL. */
	void (*closed)(void *arg, struct msg_conn *c, int err);
};

int msgr_create(const struct msgr_config *cfg, const struct msgr_ops *ops,
		void *arg, struct msgr **out);
/* Listens on "ip:port" (port 0 = any free port).  The address actually
 * bound is written to bound ("ip:port") when bound is not NULL.  Only the
 * given address is bound, never a wildcard unless asked for. */
int msgr_listen(struct msgr *m, const char *addr, char *bound, size_t boundlen);
/* Starts the loop thread. */
int msgr_start(struct msgr *m);
/* Stops the loop thread, closes every connection (pending calls complete
 * with -ESHUTDOWN, closed() runs for open ones) and frees everything;
 * timers that have not run are dropped.  NULL is fine.  Not from the
 * loop thread (a callback).  Connections the caller still holds stay
 * valid memory (closed for good) until their last msg_conn_put(). */
void msgr_destroy(struct msgr *m);
/* Learns the fsid (a client, after the monitor's hello). */
void msgr_set_fsid(struct msgr *m, const uint8_t fsid[16]);
void msgr_fsid(struct msgr *m, uint8_t fsid[16]);

/* A connection to addr ("ip:port"), returned at once with one reference
 * for the caller; messages sent before the handshake completes are queued.
 * While the caller holds its reference the connection redials with
 * exponential backoff after every failure; messages queued but not sent
 * stay queued, calls already sent fail with -ECONNRESET.  NULL for a
 * malformed address or ENOMEM. */
struct msg_conn *msgr_connect(struct msgr *m, const char *addr);
/* A dialled connection dials addr ("ip:port") from now on: now, when it
 * is waiting to redial, or after a reset of the connection it has (as a
 * broken connection: calls sent fail with -ECONNRESET, closed() is told;
 * an MDS client follows the active MDS to another address this way).
 * -EINVAL for a malformed address or an accepted connection. */
int msg_conn_retarget(struct msg_conn *c, const char *addr);
/* References held by the upper layer.  When the last one of a dialled
 * connection is put, it closes for good as msg_conn_close() does
 * (received messages keep the memory alive, not the connection).  An
 * accepted connection lives until its peer or msg_conn_close() ends it,
 * whatever the references.  msg_conn_put(NULL) is fine. */
void msg_conn_get(struct msg_conn *c);
void msg_conn_put(struct msg_conn *c);
/* Closes c for good (no redial); pending calls fail with -ECONNRESET. */
void msg_conn_close(struct msg_conn *c);
/* The peer's identity once connected; MSG_ENTITY_NONE before. */
struct msg_identity msg_conn_peer(const struct msg_conn *c);
/* With auth = ticket, on an accepted connection: the entity name the
 * peer proved ("osd.3", "client.admin"; "" when none, auth none or a
 * dialled connection), the caps string of the ticket it presented (""
 * when none: a key proof to a monitor, auth none) and that ticket's
 * expiry in wall-clock seconds (0: no ticket).  Stable once open; the
 * strings live as long as c. */
const char *msg_conn_entity(const struct msg_conn *c);
const char *msg_conn_caps(const struct msg_conn *c);
uint64_t msg_conn_auth_expires(const struct msg_conn *c);
/* One pointer the upper layer caches on a connection (e.g. the caps it
 * parsed from msg_conn_caps, once per connection), freed with free_fn
 * when c is.  Set once: msg_conn_cache_set returns the pointer that is
 * now cached, p or one another thread set first (then p is not kept:
 * the caller frees it).  msg_conn_cache NULL before. */
void *msg_conn_cache(const struct msg_conn *c);
void *msg_conn_cache_set(struct msg_conn *c, void *p, void (*free_fn)(void *));
/* "ip:port" of the peer. */
const char *msg_conn_addr(const struct msg_conn *c);
bool msg_conn_is_open(const struct msg_conn *c);
/* True when the acceptor closed this dialled connection's last handshake
 * right after our ticket: it refuses the ticket (a clock beyond
 * auth_clock_skew, or a service secret it does not know); an op that
 * times out waiting on it fails with -EKEYREJECTED, not -ETIMEDOUT. */
bool msg_conn_ticket_refused(const struct msg_conn *c);
/* True when the peer proved its identity (auth = ticket); false with
 * auth = none, and for a peer admitted without authentication under
 * auth_allow_none (its identity is what its hello declared: treat it as
 * with auth = none).  Stable once the connection is open. */
bool msg_conn_authenticated(const struct msg_conn *c);
/* One pointer for the upper layer (e.g. the session of a client). */
void msg_conn_set_priv(struct msg_conn *c, void *priv);
void *msg_conn_priv(const struct msg_conn *c);
struct msgr *msg_conn_msgr(const struct msg_conn *c);
/* The peer's feature bits from its hello (0 before the handshake). */
uint64_t msg_conn_features(const struct msg_conn *c);
/* The wire mode the handshake chose: AUTH_MODE_SECURE (auth.h: every
 * frame sealed, doc/messenger.md "Secure mode") or AUTH_MODE_CRC (also
 * with auth = none, and before the connection opens).  A secret (an
 * entity's key) leaves a monitor only over a secure one. */
uint32_t msg_conn_mode(const struct msg_conn *c);
/* Bytes of received messages not yet freed (flow control), and bytes
 * queued for sending but not yet written to the socket. */
uint64_t msg_conn_inflight(const struct msg_conn *c);
uint64_t msg_conn_queued(const struct msg_conn *c);

/* Sends m (ownership passes, also on error).  -ENOTCONN when c was closed
 * for good, -EMSGSIZE over frame_max, -EINVAL for a type reserved to the
 * messenger (1..MSG_T_RESERVED_MAX). */
int msg_send(struct msg_conn *c, struct msg *m);
/* A request: assigns m->tid and calls fn(arg, reply, 0) with the reply
 * (fn owns it), or fn(arg, NULL, err) with -ETIMEDOUT after timeout_ms
 * (0 = never; counted from this call, also while the request waits for
 * a connection), -ECONNRESET when the connection broke after sending or
 * was closed, or -ESHUTDOWN.  When msg_call returns 0, fn is called
 * exactly once, on the loop thread; when it returns an error (those of
 * msg_send, -ENOMEM) fn is never called. */
typedef void (*msg_reply_fn)(void *arg, struct msg *reply, int err);
int msg_call(struct msg_conn *c, struct msg *m, uint32_t timeout_ms,
	     msg_reply_fn fn, void *arg);
/* msg_call() that waits for its answer, for a thread that has nothing
 * else to do meanwhile (never the loop thread: it would wait for itself).
 * 0 with the reply in *reply (the caller frees it), or the error of
 * msg_call() or of the call, *reply then NULL. */
int msg_call_wait(struct msg_conn *c, struct msg *m, uint32_t timeout_ms, struct msg **reply);
/* One caller's wait for one reply, for the synchronous calls built on the
 * asynchronous ones (msg_call_wait, monc_call_wait): pass msg_waiter_done
 * and &w as the call's callback, then msg_waiter_wait(&w, &reply), which
 * returns the call's error and hands over its reply (NULL on error). */
struct msg_waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
	struct msg *reply;
};
#define MSG_WAITER_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, NULL }
void msg_waiter_done(void *arg, struct msg *reply, int err);
int msg_waiter_wait(struct msg_waiter *w, struct msg **reply);
/*
 * Replies received straight into the caller's memory (a big read without
 * a copy).  msg_call_rx() is msg_call() plus rx: when the header of the
 * reply arrives, the loop calls rx->get(rx_arg, data_len), which returns
 * a buffer of at least data_len bytes, or NULL (the data is then
 * allocated as usual).  The reply's data is received into that buffer
 * and the reply's ->data points at it (msg_free leaves it alone);
 * rx->put(rx_arg) is called once the messenger will write it no more:
 * the frame is complete (before fn runs with it), was dropped (bad crc,
 * connection lost), or the lease was revoked.  Both run on the loop
 * thread.  Between get and put the buffer must stay valid: an upper
 * layer that wants it back earlier (its op timed out, another attempt
 * answered) calls msg_conn_rx_revoke() on the loop thread.  A call that
 * fails or times out while its reply is being received revokes the
 * lease itself before fn runs.
 */
struct msg_rxbuf_ops {
	void *(*get)(void *arg, uint32_t data_len);
	void (*put)(void *arg);
};
int msg_call_rx(struct msg_conn *c, struct msg *m, uint32_t timeout_ms,
		msg_reply_fn fn, void *arg, const struct msg_rxbuf_ops *rx, void *rx_arg);
/* On the loop thread only: if c is receiving a reply into a buffer
 * leased through msg_rxbuf_ops, the rest of that frame goes into a
 * buffer of the messenger's (what was received is copied) and put runs
 * before this returns.  Nothing happens otherwise. */
void msg_conn_rx_revoke(struct msg_conn *c);

/*
 * Ordered delivery across redials, for a session whose requests must
 * reach a restarted peer in an order the upper layer decides (the MDS's:
 * what a client resends after a restart goes before anything newer).
 * Call msg_conn_set_ordered() before the first message.  From then on a
 * reset of c, before it redials: drops every message not yet written
 * (one-way ones too), tells ops.closed, and only then fails every call,
 * sent or not, with -ECONNRESET; msg_conn_epoch() counts the resets.
 * msg_call_epoch() is msg_call() for a call that belongs to epoch (read
 * before the upper layer checked that the session may send): -ECONNRESET
 * at once, fn never called, when c was reset since.
 */
void msg_conn_set_ordered(struct msg_conn *c);
uint64_t msg_conn_epoch(const struct msg_conn *c);
int msg_call_epoch(struct msg_conn *c, uint64_t epoch, struct msg *m, uint32_t timeout_ms,
		   msg_reply_fn fn, void *arg);

/* Sends reply as the answer to req (copies req's tid, sets MSG_F_REPLY). */
int msg_reply(struct msg_conn *c, const struct msg *req, struct msg *reply);

/* Runs fn(arg) on the loop thread after ms milliseconds (0 = soon).
 * Returns a timer id for msgr_timer_cancel, or 0 on ENOMEM.  Both are
 * safe from any thread. */
typedef void (*msgr_timer_fn)(void *arg);
uint64_t msgr_timer(struct msgr *m, uint32_t ms, msgr_timer_fn fn, void *arg);
/* True if the timer was cancelled before it ran. */
bool msgr_timer_cancel(struct msgr *m, uint64_t id);
/* True on the loop thread. */
bool msgr_on_loop(const struct msgr *m);
/* fn(arg) runs on the loop thread whenever fd is readable (level
 * triggered: fn must read what made it so, e.g. an eventfd's count),
 * until msgr_destroy, which does not close fd.  Any thread.  0 or a
 * negative errno. */
int msgr_watch_fd(struct msgr *m, int fd, void (*fn)(void *arg), void *arg);
/* On a messenger's loop thread: fn(arg) runs on that thread once the
 * events at hand are handled, before the loop waits for more (calls made
 * while they are handled -- replies, completions -- can gather there into
 * one system call); true.  fn may defer again: it runs in the same pass.
 * false on any other thread, or out of memory: the caller does it now. */
bool msgr_defer(void (*fn)(void *arg), void *arg);

/* On a thread other than a loop's: between msgr_hold and msgr_release,
 * the messages this thread queues wake their loop only at msgr_release,
 * so that a row of them leaves in one pass of the loop (one system call
 * per connection) and the loop wakes once.  Nests; the outermost release
 * wakes.  A thread must release before it waits for anything those
 * messages lead to (their replies): until then they may not have left.
 * The messenger must outlive the hold. */
void msgr_hold(void);
void msgr_release(void);
/* Wakes now the loop a hold owes a wake-up, and goes on holding: called
 * before every wait of the library (a completion, a reply, the map, the
 * throttle), which may wait for those very messages. */
void msgr_hold_flush(void);

/* "ip:port" or "[ipv6]:port" -> its parts (ip without brackets);
 * -EINVAL for a malformed address or a port over 65535, -ENAMETOOLONG
 * when ip does not fit in iplen. */
int msg_parse_addr(const char *addr, char *ip, size_t iplen, uint16_t *port);

#endif
