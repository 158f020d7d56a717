/*
 * msgr_int.h - the messenger's private structures, shared by
 * messenger.c (the loop, the public entry points), msg_conn.c (one
 * connection's state machine, writes, calls and closing),
 * msg_handshake.c (dial, accept, the hello), msg_rx.c (reads),
 * msg.c (messages) and msg_addr.c (addresses).
 *
 * Who may touch what:
 *   - fields marked [loop] belong to the loop thread (or to the thread
 *     running msgr_destroy once the loop has stopped);
 *   - fields marked [lock] are under msgr->lock, taken from any thread;
 *   - atomics are read and written anywhere.
 * A connection is freed when its last reference goes, on whatever thread
 * drops it; while it is registered with the loop the messenger holds one
 * reference, so the loop never sees freed memory.
 */
#ifndef ATOLL_MSGR_INT_H
#define ATOLL_MSGR_INT_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "auth.h"
#include "msg.h"
#include "msg_frame.h"
#include "msg_idtab.h"
#include "msg_timer.h"

#define MSG_ADDR_MAX	64	/* "[ipv6]:port" and a NUL */
#define MSG_RBUF_SIZE	(64u * 1024)
#define MSG_RBUF_HS_SIZE (2u * 1024)	/* an accepted connection's until its hello */

#define container_of(p, type, member) \
	((type *)(void *)((char *)(p) - offsetof(type, member)))

/* What an epoll event's data.ptr points at: every source starts with
 * its kind. */
enum ep_kind {
	EP_WAKE,
	EP_LISTEN,
	EP_CONN,
	EP_WATCH,
};

struct ep_src {
	enum ep_kind kind;
};

/* msgr_watch_fd: fn(arg) on the loop when fd is readable. */
struct msgr_watch {
	struct ep_src ep;
	int fd;
	void (*fn)(void *arg);
	void *arg;
	struct msgr_watch *next;
};

/* A timer of the loop: an embedded heap node and what to do when due.
 * fire runs on the loop thread with no lock held. */
struct mtimer {
	struct tnode n;
	void (*fire)(struct msgr *m, struct mtimer *t);
};

struct msgr_listener {
	struct ep_src ep;
	int fd;
	struct msgr_listener *next;
	struct msgr *msgr;
	/* [loop] accept failing for lack of resources (EMFILE, ENFILE,
	 * ENOMEM, ENOBUFS): the listener leaves epoll for backoff_ms */
	bool paused;
	uint32_t backoff_ms;
	struct mtimer timer;
	char addr[MSG_ADDR_MAX];
};

/* At most one log line per interval for an event a peer can repeat at
 * will (refused connections, accept failures); the lines left out are
 * counted in the next one. [loop] */
struct msgr_ratelog {
	uint64_t next_ns;
	uint32_t dropped;
};

/*
 * Receive budgets (msg_budget.c).  A connection's class comes from its
 * peer's identity after the hello: mon, osd and mds are cluster peers,
 * anything else is a client.  Each class of accepted connections draws
 * on a pool of its own, so that clients pausing on theirs never stop a
 * peer's.  Dialled connections (whose peers we chose) draw on none: they
 * have the per-connection limit only.
 */
enum msg_class {
	MSG_CLASS_NONE = 0,	/* dialled, or not open yet */
	MSG_CLASS_CLIENT = 1,
	MSG_CLASS_PEER = 2,
	MSG_CLASS_NR = 3,
};

/* A list of connections paused for a pool, in the order they came; each
 * holds a reference while listed. [budget lock] */
struct msg_waitq {
	struct msg_conn *head, *tail;
};

/* [budget lock] */
struct msg_pool {
	uint64_t bytes, bytes_max;	/* allocated for its messages */
	uint32_t frames, frames_max;	/* messages, from header to msg_free */
	uint32_t delivered;		/* of which handed to the upper layer */
	struct msg_conn *over;		/* receiving the one frame allowed past
					 * bytes_max (nothing delivered held) */
	struct msg_waitq hwait;		/* paused at a header */
	struct msg_waitq gwait;		/* paused in a frame, for its buffer to grow */
	uint64_t pauses;		/* times a connection waited (stats, tests) */
};

/* The pools of a messenger.  Reference counted: the messenger and every
 * accepted connection hold one, so that a message freed after
 * msgr_destroy still returns its bytes to valid memory. */
struct msg_budget {
	atomic_int ref;
	pthread_mutex_t lock;		/* protects pool[] and the conns' pw_* */
	struct msg_pool pool[MSG_CLASS_NR];
};

/* Connection slots of accepted connections (msg_admit.c). [loop] */
enum msg_slot {
	SLOT_NONE = 0,		/* dialled, or not admitted */
	SLOT_HANDSHAKE,
	SLOT_CLIENT,
	SLOT_PEER,
};

struct msgr_slots {
	uint32_t accepted;		/* every state */
	uint32_t handshaking, clients, peers;
	struct idtab addrs;		/* struct msg_addr_count by address key */
	struct msg_conn *hs_head, *hs_tail;	/* handshaking, oldest first */
	struct msgr_ratelog log_refused, log_evicted;
	uint64_t refused, evicted;	/* counters (stats, tests) */
};

/*
 * A connection's states and the events each accepts:
 *   NEW         dialled, not started     kick DIAL -> CONNECTING
 *   CONNECTING  connect(2) in progress   writable -> HANDSHAKE; error,
 *                                        handshake timer -> BACKOFF
 *   HANDSHAKE   TCP up, waiting for the  hello -> OPEN; any other frame,
 *               peer's hello             bad input, timer -> BACKOFF/CLOSED
 *   OPEN        messages flow            bad input, EOF -> BACKOFF/CLOSED
 *   BACKOFF     dialled, waiting         redial timer -> CONNECTING
 *   CLOSED      for good                 nothing
 * A dialled connection that is referenced goes to BACKOFF on failure,
 * anything else to CLOSED; msg_conn_close() and msgr_destroy() go to
 * CLOSED from any state.
 */
enum conn_state {
	CS_NEW,
	CS_CONNECTING,
	CS_HANDSHAKE,
	CS_OPEN,
	CS_BACKOFF,
	CS_CLOSED,
};

enum rx_stage {
	RX_HDR,		/* waiting for a 32-byte header */
	RX_BODY,	/* filling front then data */
	RX_TAIL,	/* waiting for the payload crc */
};

/* Work handed to the loop from any thread (msgr_kick). */
#define KICK_SEND	0x01u	/* outq has messages */
#define KICK_DIAL	0x02u	/* start dialling */
#define KICK_CLOSE	0x04u	/* msg_conn_close() */
#define KICK_UNREF	0x08u	/* the last caller reference went */
#define KICK_RESUME	0x10u	/* msg_free() brought inflight down */
#define KICK_RETARGET	0x20u	/* msg_conn_retarget(): redial elsewhere now */
#define KICK_POOL	0x40u	/* the receive pool has room for c's frame */

/* A pending msg_call.  Created by the caller's thread, handed to the loop
 * with its request; from then on [loop]. */
struct msgr_call {
	struct idnode h;		/* key: tid, in msgr->calls */
	struct mtimer timer;		/* timeout, when deadline != 0 */
	uint64_t deadline;		/* ns, 0 = none */
	msg_reply_fn fn;
	void *arg;
	struct msg_conn *conn;
	struct msg *msg;		/* the request while not yet written */
	bool sent;			/* whole request written: await reply */
	struct msgr_call *dnext;	/* msgr->direct: written, not registered */
	bool armed;			/* timer armed by msg_conn__call_direct */
	bool for_epoch;			/* msg_call_epoch: only in epoch */
	uint64_t epoch;
	const struct msg_rxbuf_ops *rx;	/* msg_call_rx: the reply's data buffer */
	void *rx_arg;
	struct msgr_call *prev, *next;	/* conn->calls */
};

struct msg_conn {
	struct ep_src ep;
	struct msgr *msgr;
	atomic_int ref;			/* memory: loop, messages, kicks, callers */
	atomic_int uref;		/* callers' references (dialled: keep it up) */
	bool dialled;
	uint32_t frame_max;		/* copies of the config, so that a late */
	uint64_t inflight_max;		/* msg_free never reads the msgr */
	uint32_t frames_max;
	struct msg_budget *budget;	/* accepted: the msgr's pools (a reference) */
	char addr[MSG_ADDR_MAX];
	struct sockaddr_storage sa;
	socklen_t salen;
	void *priv;

	pthread_mutex_t plock;		/* protects peer, peer_features, auth_* */
	struct msg_identity peer;
	uint64_t peer_features;
	/* Accepted with auth = ticket: who the peer proved it is, the caps
	 * of its ticket ("" for a key proof) and the ticket's expiry (0:
	 * none).  Set once before the connection opens. */
	char auth_entity[AUTH_NAME_MAX + 1];
	char *auth_caps;
	uint64_t auth_expires;
	/* msg_conn_cache_set: the upper layer's (e.g. parsed caps) */
	_Atomic(void *) ucache;
	void (*ucache_free)(void *);

	atomic_bool open;		/* state == CS_OPEN, for other threads */
	atomic_bool dead;		/* closed for good; set under msgr->lock */
	atomic_bool ticket_refused;	/* the acceptor closed our last handshake
					 * after our ticket (msg_conn_ticket_refused) */
	atomic_bool ordered;		/* msg_conn_set_ordered, before any call */
	atomic_uint_least64_t epoch;	/* ordered: resets; moves under msgr->lock */
	atomic_uint_least64_t inflight;	/* bytes of received, unfreed messages */
	atomic_uint rx_frames;		/* received, unfreed messages */
	atomic_bool rx_paused;		/* reading stopped by flow control */
	/* [budget lock] waiting for room in a pool of budget */
	bool pw_listed;			/* on a wait list of the pool */
	bool pw_grow;			/* that list is gwait (else hwait) */
	bool pw_woken;			/* taken off it to try again: goes first */
	struct msg_conn *pw_next;
	atomic_uint_least64_t queued;	/* bytes queued, not yet written */
	atomic_uint calls_out;		/* calls made and not yet ended */

	/* Writing to the socket: the loop, or a thread sending directly
	 * (msg_conn__submit: a reply or one-way message on an idle
	 * connection goes out from the sender's thread, without waking
	 * the loop).  Taken before msgr->lock, never while calling out. */
	pthread_mutex_t wlock;
	bool tx_idle;			/* [wlock] open, nothing waits to be written */
	/* [wlock] secure mode: seals every frame written (msg_secure.h);
	 * NULL in crc mode and while the connection is not open */
	struct msg_secure *tx_sec;
	struct msg *tx_part;		/* [wlock] written in part by a direct sender */
	size_t tx_part_off;

	/* [lock] msg_conn_retarget's address, taken by the loop */
	bool retarget;
	struct sockaddr_storage retarget_sa;
	socklen_t retarget_salen;

	/* [lock] */
	struct msg *outq_head, **outq_tailp;
	unsigned int kick;		/* KICK_* waiting for the loop */
	bool on_kick;
	struct msg_conn *kick_next;
	struct msg_conn *all_prev, *all_next;	/* msgr->all */

	/* [loop] */
	unsigned int kick_run;		/* flags taken by the running kick pass */
	struct msg_conn *run_next;
	struct msg_conn *grave_next;
	enum conn_state state;
	int fd;
	uint32_t ev_mask;		/* events registered with epoll */
	bool wr_blocked;		/* socket full: wait for EPOLLOUT */
	struct msg *sq_head, *sq_tail;	/* accepted for sending, in order */
	size_t wr_off;			/* bytes of sq_head's frame written */
	uint8_t *hs_buf;		/* our hello (or auth) frame while unsent */
	struct msg_auth_conn *auth;	/* [loop] the handshake's proofs (msg_auth.c) */
	bool auth_none;			/* [loop] the peer does not authenticate and
					 * auth_allow_none let it in: this
					 * connection runs as with auth = none */
	uint64_t auth_renew_ns;		/* [loop] a monitor session that brought
					 * tickets redials then, for fresh ones
					 * (0: never) */
	size_t hs_len, hs_off;
	struct msgr_call *calls;	/* registered calls, queued or sent */
	struct mtimer hs_timer;		/* connect + handshake deadline */
	uint64_t last_rx_ns;		/* [loop] when bytes last came in (keepalive) */
	struct mtimer redial_timer;
	uint32_t backoff_ms;		/* next redial delay */
	/* slots (msg_admit.c) */
	enum msg_slot slot;
	uint8_t cls;			/* enum msg_class, set at the hello */
	uint64_t addr_key;
	struct msg_conn *hs_prev, *hs_next;	/* msgr->slots.hs_* */
	/* receive side */
	uint8_t *rbuf;			/* rbuf_size bytes */
	size_t rbuf_size;
	size_t rpos, rlen;		/* unparsed bytes are rbuf[rpos, rlen) */
	enum rx_stage rx_stage;
	struct msg_hdr rx_hdr;
	struct msg *rx_msg;		/* the frame being received */
	size_t rx_got;			/* front + data bytes filled */
	uint32_t rx_fcap, rx_dcap;	/* bytes allocated for front, data so far */
	uint64_t rx_start_ns;		/* when the frame's header came */
	uint32_t rx_crc;		/* the payload's, or the front's when split */
	bool rx_split;			/* big data: its own crc (msg.data_crc) */
	uint32_t rx_dcrc;		/* crc32c of the data's whole 4 KiB
					 * blocks so far, when split */
	uint32_t rx_bpart;		/* ... and of the block being filled */
	/* rx_msg's data is a buffer leased from the caller (msg_call_rx)
	 * while rx_lease is set: put(rx_lease_arg) gives it back */
	const struct msg_rxbuf_ops *rx_lease;
	void *rx_lease_arg;
	bool rx_broken;			/* a revoke ran out of memory: fail c */
	/* secure mode: opens every frame received (NULL: crc mode) */
	struct msg_secure *rx_sec;
	atomic_uint mode;		/* AUTH_MODE_* of the open connection */
};

struct msgr {
	struct msgr_config cfg;
	struct msgr_ops ops;
	void *arg;
	int epfd;
	int wakefd;			/* eventfd: kicks and early timers */
	struct ep_src wake_ep;
	struct msgr_watch *watches;	/* [lock] msgr_watch_fd's */
	pthread_t thread;
	bool started;
	atomic_bool stop;

	pthread_mutex_t lock;		/* [lock] fields of msgr and msg_conn */
	uint8_t fsid[16];
	struct msg_conn *kick_head, *kick_tail;
	struct msgr_deferred *defers;	/* msgr_defer: loop thread only */
	size_t ndefers, defers_cap;
	bool wake_pending;		/* wakefd written, loop not yet drained */
	struct msg_conn *all;		/* every registered connection */
	/* calls written by their caller's thread (msg_conn__call_direct),
	 * in order, for the loop to register (msg_conn__take_direct) */
	struct msgr_call *direct_head, **direct_tailp;
	atomic_bool direct_any;
	struct msgr_listener *listeners;

	atomic_uint_least64_t next_tid;

	pthread_mutex_t tlock;		/* protects timers, ptimers, next_timer_id */
	struct theap timers;
	struct idtab ptimers;		/* msgr_timer()s by id */
	uint64_t next_timer_id;

	/* [loop] */
	struct idtab calls;		/* struct msgr_call by tid */
	struct msg_conn *grave;		/* closed this pass; reference dropped later */
	struct mtimer ka_timer;		/* keepalive.c-like tick (messenger.c) */
	bool shutting_down;
	struct msgr_slots slots;
	struct msgr_ratelog log_accept;
	struct msgr_ratelog log_peer;	/* msgr__peer_warn */
	struct msg_budget *budget;
	int rcvbuf_default;		/* a new TCP socket's SO_RCVBUF (tcp_rmem[1]) */
};

/* messenger.c */
void msgr__kick(struct msg_conn *c, unsigned int flags);
bool msgr__kick_locked(struct msg_conn *c, unsigned int flags);
void msgr__wake(struct msgr *m);
struct msgr_deferred {
	void (*fn)(void *arg);
	void *arg;
};
int msgr__arm(struct msgr *m, struct mtimer *t, uint64_t when);
void msgr__disarm(struct msgr *m, struct mtimer *t);
/* Unlinks c from msgr->all and drops the messenger's reference after
 * the current pass of the loop. */
void msgr__bury(struct msg_conn *c);
/* msg_addr.c: "ip:port" -> a socket address (-EINVAL, -EHOSTUNREACH);
 * a socket address -> "ip:port". */
int msgr__resolve(const char *addr, struct sockaddr_storage *ss, socklen_t *len);
void msgr__format_addr(const struct sockaddr *sa, char *buf, size_t len);
/* Queues m (nothing locked) on c, with its frame encoded: -EMSGSIZE,
 * -ENOTCONN.  m stays the caller's on error.  (The public entry points
 * refuse the messenger's own types before.) */
int msg_conn__submit(struct msg_conn *c, struct msg *m, struct msgr_call *call);

/* msg_conn.c */
/* The keepalive tick for one connection (loop thread): sends it a
 * keepalive, or fails it when it has been silent too long. */
void msg_conn__keepalive(struct msg_conn *c, uint64_t now_ns);
struct msg_conn *msg_conn__alloc(struct msgr *m, bool dialled);
void msg_conn__hold(struct msg_conn *c);
void msg_conn__drop(struct msg_conn *c);
void msg_conn__event(struct msg_conn *c, uint32_t events);
void msg_conn__kicked(struct msg_conn *c, unsigned int flags);
/* Writes m (no call) at once on the caller's thread if c is idle; true
 * when m was taken. */
bool msg_conn__send_direct(struct msg_conn *c, struct msg *m);
/* Writes call's request m at once on the caller's thread if c is idle,
 * leaving the call for the loop to register: 1 when m was taken, 0 when
 * the caller must queue it, -ECONNRESET when it was made for an epoch
 * that has ended. */
int msg_conn__call_direct(struct msg_conn *c, struct msg *m, struct msgr_call *call);
/* On the loop: registers the calls msg_conn__call_direct left. */
void msg_conn__take_direct(struct msgr *mr);
/* Closes c for good: calls fail with call_err, closed() gets err. */
void msg_conn__close(struct msg_conn *c, int err, int call_err);
/* The rest of this block is shared by msg_conn.c, msg_handshake.c and
 * msg_rx.c only; all of it runs on the loop thread. */
/* c failed with err: a dialled connection someone holds is reset for a
 * redial (BACKOFF) unless the messenger is shutting down; any other is
 * closed for good. */
void msg_conn__fail(struct msg_conn *c, int err);
/* Writes our hello, then what sq holds, as far as the socket takes
 * them; fails c on a write error. */
void msg_conn__flush(struct msg_conn *c);
/* Tells epoll what c waits for now (its state, rx_paused, wr_blocked). */
void msg_conn__update_events(struct msg_conn *c);
/* Makes fd c's socket (TCP_NODELAY) and registers it with epoll. */
int msg_conn__attach_fd(struct msg_conn *c, int fd);
/* The registered call of tid (one written by its caller's thread
 * included), or NULL. */
struct msgr_call *msg_conn__call_find(struct msgr *mr, uint64_t tid);
/* A reply m arrived on c: it ends its call (or is dropped). */
void msg_conn__got_reply(struct msg_conn *c, struct msg *m);
/* The bytes of m in crc mode: header, front, data, trailer. */
static inline size_t msg_conn__frame_len(const struct msg *m)
{
	return MSG_HEADER_LEN + (size_t)m->front_len + m->data_len + MSG_TRAILER_LEN;
}
/* The bytes of m as it is written: sealed, or in crc mode. */
static inline size_t msg_conn__wire_len(const struct msg *m)
{
	return m->sealed ? m->sealed_len : msg_conn__frame_len(m);
}
/* The payload crc of m into wire_tail, once (crc mode). */
void msg_conn__set_tail(struct msg *m);
/* Secure mode is on for c's next handshake-free frames: tx and rx are
 * the two directions' connection keys (loop thread, before
 * msg_conn__open).  -ENOMEM/-EIO. */
int msg_conn__secure(struct msg_conn *c, const uint8_t tx[AUTH_KEY_LEN],
		     const uint8_t rx[AUTH_KEY_LEN]);

/* msg_handshake.c */
/* A listener accepted fd: a new connection waits for the peer's hello. */
void msg_conn__accepted(struct msgr *m, int fd, const struct sockaddr *sa,
			socklen_t salen);
/* Dials c (NEW, or BACKOFF when its redial timer fires). */
void msg_conn__dial(struct msg_conn *c);
/* The socket of a connecting c became writable: TCP is up or failed. */
void msg_conn__connect_done(struct msg_conn *c);
/* hs_timer's fire: no connection or no hello in time. */
void msg_conn__hs_timeout(struct msgr *mr, struct mtimer *t);
/* The peer's hello arrived (msg is ours to free): c opens.  False when
 * c failed or can take no more now. */
bool msg_conn__rx_hello(struct msg_conn *c, struct msg *msg);
/* Opens c with the peer's (proved or declared) identity: the end of a
 * handshake.  False when c failed or closed meanwhile. */
bool msg_conn__open(struct msg_conn *c, struct msg_identity who, uint64_t features);

/* msg_auth.c: the proofs of an authenticated handshake (loop thread) */
struct msg_hello;
struct enc;
/* Our hello's auth section. */
int msg_auth__hello_blob(struct msg_conn *c, struct enc *blob);
/* Our hello's front as written (the transcript). */
int msg_auth__hello_sent(struct msg_conn *c, const void *front, size_t len);
/* The peer's hello: the acceptor chooses, the dialler proves (its
 * MSG_T_AUTH frame goes in hs_buf).  A negative errno fails c. */
int msg_auth__rx_hello(struct msg_conn *c, const struct msg_hello *h,
		       const void *front, size_t len);
/* True once an acceptor has had the dialler's hello. */
bool msg_auth__hello_done(const struct msg_conn *c);
/* An acceptor that found no wire mode to share: its hello says so (mode
 * 0), then it closes. */
bool msg_auth__refused(const struct msg_conn *c);
/* A MSG_T_AUTH frame (m is ours to free): opens c, or fails it. */
bool msg_conn__rx_auth(struct msg_conn *c, struct msg *m);
void msg_auth__conn_free(struct msg_conn *c);
/* c fails with err: a dialler whose ticket the acceptor answered by
 * closing says so (the acceptor gives no reason on the wire). */
void msg_auth__conn_broke(struct msg_conn *c, int err);

/* msg_budget.c */
struct msg_budget *msg_budget__new(const struct msgr_config *cfg);
void msg_budget__put(struct msg_budget *b);
/* Before a frame of cost bytes is read on c (loop): true when c's own
 * limits and its pool have room, and then both are charged (m->charged
 * the whole cost to c, m->pcharged the header to the pool, m->cls);
 * false when c paused (reading stops until room is freed). */
bool msg_budget__admit(struct msg_conn *c, struct msg *m, uint64_t cost);
/* m's buffers grow by inc bytes (loop): true when its pool gives them
 * (charged to m->pcharged), false when c paused for them. */
bool msg_budget__grow(struct msg_conn *c, struct msg *m, uint64_t inc);
/* m is whole and goes to the upper layer (loop). */
void msg_budget__delivered(struct msg_conn *c, struct msg *m);
/* msg_free of a charged message (any thread): gives its bytes back and
 * wakes a connection that waits for them. */
void msg_budget__release(struct msg_conn *c, struct msg *m);
/* c closes (loop): off its pool's wait list, passing on a wake-up it
 * had not used. */
void msg_budget__forget(struct msg_conn *c);
/* Counts of a class's pool (tests, stats). */
void msg_budget__usage(struct msg_budget *b, enum msg_class cls, uint64_t *bytes,
		       uint32_t *frames, uint64_t *pauses);

/* msg_admit.c: connection slots of accepted connections (loop thread) */
/* c (accepted, address known) asks for a handshaking slot: 0, or a
 * negative errno when refused (the caller closes it).  May close the
 * oldest handshaking connection to make room. */
int msg_admit__accept(struct msgr *m, struct msg_conn *c);
/* c's hello named its peer: it moves to the client or peer slots; a
 * negative errno when refused (the caller fails it). */
int msg_admit__hello(struct msg_conn *c);
/* c closes: its slot is free again. */
void msg_admit__closed(struct msg_conn *c);
void msg_admit__free(struct msgr *m);
/* true when a line may be logged now; *dropped says how many were not */
bool msgr__ratelog(struct msgr_ratelog *r, uint32_t interval_ms, uint32_t *dropped);

/* A warning about what a peer did that it can repeat at will, once per
 * connection it opens (a bad frame, no hello): for accepted connections
 * at most one line per MSGR_PEER_LOG_MS per messenger, the next one
 * saying how many were left out.  Loop thread. */
#define MSGR_PEER_LOG_MS	1000
#define msgr__peer_warn(c, ...) do {						\
	uint32_t dropped_ = 0;							\
	if ((c)->dialled ||							\
	    msgr__ratelog(&(c)->msgr->log_peer, MSGR_PEER_LOG_MS, &dropped_)) {	\
		log_warn("msgr", __VA_ARGS__);					\
		if (dropped_)							\
			log_warn("msgr", "(and %u more such lines about peers in "	\
				 "the last %u ms, left out)", dropped_, MSGR_PEER_LOG_MS); \
	}									\
} while (0)

/* msg_rx.c */
/* c's socket is readable: reads and delivers what it can. */
void msg_conn__readable(struct msg_conn *c);
/* msg_free brought c's inflight down (KICK_RESUME): reading goes on if
 * it was paused. */
void msg_conn__resume(struct msg_conn *c);
/* c's socket went: the frame being received is dropped and the receive
 * state starts again. */
void msg_conn__rx_reset(struct msg_conn *c);

#endif
