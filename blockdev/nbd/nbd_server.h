/*
 * nbd_server.h - atoll-nbd's internal types: the server, its exports
 * (one open image each, shared by every connection to it) and a client
 * connection.
 *
 * Threads.  The main thread accepts connections.  Each connection has a
 * reader thread (negotiation, then reading requests and issuing them as
 * asynchronous image requests) and a writer thread (sending replies, in
 * the order requests complete).  Image completions run on libatoll's
 * threads: when nothing else is being sent they write the reply
 * themselves, without blocking (MSG_DONTWAIT), and leave whatever the
 * socket did not take to the writer; otherwise they queue it and signal
 * the writer.  So a client that does not read its replies never blocks
 * the library (and through it other clients); it only stops its own
 * reader through the memory budget.  Over TLS, completions never send:
 * a TLS session cannot take a write without blocking, so every reply
 * goes through the writer (which corks small replies together).
 */
#ifndef ATOLL_NBD_SERVER_H
#define ATOLL_NBD_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <atoll/atoll.h>
#include <atoll/image.h>

#include "nbd_acl.h"
#include "nbd_proto.h"
#include "nbd_tls.h"

#define NBD_SUBSYS "nbd"

/* Limits (doc/nbd.md, doc/limits.md; those on what a client sends are in
 * nbd_proto.h).  Defaults of the atoll.conf keys: bytes of request
 * payload (write data and read buffers) one connection may hold at a time
 * (nbd_conn_max_bytes) and all connections together
 * (nbd_max_bytes_in_flight), and connections (nbd_max_connections); a
 * reader waits for room, a connection past the count is closed at once.
 * Requests in flight per connection are fixed. */
#define NBD_CONN_BUDGET_BYTES	(64u << 20)
#define NBD_TOTAL_BUDGET_BYTES	(128u << 20)
#define NBD_MAX_CONNS		256u
/* Connections from one IP address (nbd_max_connections_per_addr). */
#define NBD_MAX_CONNS_PER_ADDR	16u
/* Connections closed to make room (below) and not yet gone: past this
 * many, a new connection is refused instead. */
#define NBD_MAX_EVICTING	64u
/* A write's data must all arrive within this long of its request header
 * (nbd_write_data_timeout; the connection is closed otherwise): a header
 * whose data never comes would hold its bytes of nbd_max_bytes_in_flight
 * for ever.  While serving, a connection's socket wakes its reader every
 * NBD_SERVE_RCVTIMEO_MS to look at the clock. */
#define NBD_WRITE_DATA_TIMEOUT_MS	30000u
#define NBD_SERVE_RCVTIMEO_MS		1000u
/* the stack of a connection's reader and writer threads */
#define NBD_THREAD_STACK	(256u << 10)
/* malloc arenas (M_ARENA_MAX) of atoll-nbd's threads */
#define NBD_MALLOC_ARENAS	4
#define NBD_CONN_MAX_INFLIGHT	256
/* Extents in one block status reply. */
#define NBD_MAX_EXTENTS		1024
/* Discard and write-zeroes are issued in pieces of at most this size. */
#define NBD_ZERO_PIECE		(64ull << 20)
/* The longest wait for another writer's lease to end (nbd_export.c). */
#define NBD_LEASE_WAIT_MAX_S	60
/* A client has this long to finish negotiating. */
#define NBD_NEGOTIATE_TIMEOUT_S	30

struct nbd_server;

/* One export: an image (or image@snap) opened once, shared by all the
 * connections that chose it, closed when the last one leaves. */
struct nbd_export {
	struct nbd_server *srv;
	struct nbd_export *next;	/* in srv->exports; srv->lock */
	char *name;			/* the export name the client gave */
	struct atoll_image *img;	/* NULL while opening */
	int open_rc;			/* result of the open, once done */
	bool opening;			/* srv->lock; waiters on srv->cond */
	bool closing;		/* the last connection left; being closed (table lock) */
	unsigned refs;			/* srv->lock */
	bool read_only;
	uint64_t size;
};

/* The transmission flags for an export. */
uint16_t nbd_export_flags(const struct nbd_export *ex);
/* Finds or opens export `name`; 0 and a reference, or a negative errno
 * (-ENOENT no such image, -EBUSY locked by another writer, ...). */
int nbd_export_get(struct nbd_server *srv, const char *name, struct nbd_export **out);
/* Drops a reference; the last one closes the image. */
void nbd_export_put(struct nbd_export *ex);
/* Writes the names of the pool's images into *names (malloc'd, each
 * NUL-terminated, *len bytes in all).  0 or a negative errno. */
int nbd_export_list(struct nbd_server *srv, char **names, size_t *len);
/* Closes every export (shutdown, after all connections are gone). */
void nbd_export_close_all(struct nbd_server *srv);

struct nbd_server {
	struct atoll_cluster *cluster;
	struct atoll_ioctx *io;
	const char *pool;
	unsigned lease_ms;		/* image lock lease; 0 = the library's */
	pthread_mutex_t lock;		/* exports, conns, nconns */
	pthread_cond_t cond;		/* an export finished opening; a conn left */
	struct nbd_export *exports;
	struct nbd_conn *conns;
	unsigned nconns;		/* evicted ones too, until their thread ends */
	unsigned max_conns;		/* nbd_max_connections */
	unsigned max_conns_per_addr;	/* nbd_max_connections_per_addr */
	unsigned nevicting;		/* closed for room, thread not ended yet */
	uint64_t write_data_timeout_ms;	/* nbd_write_data_timeout */
	uint64_t refused_conns;		/* past max_conns, since start */
	uint64_t refused_logged_ms;	/* the last log line about them */
	/* the bytes of requests in flight, all connections together:
	 * budget_lock, taken inside a connection's qlock, never around it */
	pthread_mutex_t budget_lock;
	pthread_cond_t budget_cond;	/* bytes given back */
	size_t budget_used;
	size_t budget_max;		/* nbd_max_bytes_in_flight */
	size_t conn_budget_max;		/* nbd_conn_max_bytes */
	volatile int stopping;
	uint64_t next_conn_id;
	/* TLS (doc/nbd.md, "TLS"); read-only once serving */
	enum nbd_tls_mode tls_mode;
	struct nbd_tls_server *tls;	/* NULL when tls_mode is off */
	struct nbd_acl *acl;		/* NULL: every client may use every image;
					 * acl_lock (SIGHUP replaces it) */
	char *acl_path;			/* --tls-exports, for the reloads */
	pthread_rwlock_t acl_lock;
};

/* May conn's client (its TLS identity) use export name?  nbd_negotiate.c;
 * takes srv->acl_lock for reading. */
bool nbd_allowed(const struct nbd_conn *conn, const char *name);

/* A request in flight (transmission phase). */
struct nbd_req {
	struct nbd_conn *conn;
	struct nbd_req *next;		/* in conn's reply queue; conn->qlock */
	struct nbd_request rq;
	uint64_t t_start;		/* mono_now_ns() at its header (metrics) */
	uint8_t *buf;			/* write data or read buffer */
	size_t budget;			/* bytes charged to conn's budget */
	int err;			/* the reply's error (negative errno) or 0 */
	unsigned pieces;		/* image requests still running; qlock */
	int64_t nextents;		/* block status: extents filled */
	struct atoll_image_extent *ext;
	/* the reply, once built: hdr[0, hlen) then data[0, dlen); sent bytes
	 * of it so far (a direct send may leave the rest to the writer) */
	uint8_t hdr[NBD_STRUCTURED_REPLY_SIZE + 6 + 128];
	size_t hlen;
	const uint8_t *data;
	size_t dlen;
	size_t sent;
	bool built;
};

/* Negotiation states (nbd_negotiate.c); transmission follows NEG_DONE. */
enum nbd_neg_state {
	NEG_GREETING,		/* send NBDMAGIC IHAVEOPT flags */
	NEG_CLIENT_FLAGS,	/* read the client's 32-bit flags */
	NEG_OPTION,		/* read and answer one option, repeatedly */
	NEG_DONE,		/* an export was chosen: transmission */
	NEG_CLOSE,		/* abort, error or EOF: close the socket */
};

struct nbd_conn {
	struct nbd_server *srv;
	struct nbd_conn *next;		/* in srv->conns; srv->lock */
	uint64_t id;
	int fd;
	char peer[64];
	uint32_t addr;			/* the client's IPv4 address (network order) */
	bool serving;			/* negotiation done; srv->lock */
	bool evicted;			/* closed to make room; srv->lock */

	/* negotiation results (reader thread only) */
	enum nbd_neg_state state;
	struct nbd_tls *tls;		/* after STARTTLS; else NULL (plain) */
	char identity[256];		/* TLS identity; "" without one */
	bool fixed;			/* the client said fixed newstyle */
	bool no_zeroes;
	bool structured;		/* NBD_OPT_STRUCTURED_REPLY acked */
	bool meta_alloc;		/* base:allocation selected */
	char meta_export[NBD_MAX_NAME_LEN + 1];	/* ... for this export */
	struct nbd_export *export;	/* chosen export (a reference) */

	/* transmission */
	pthread_t writer;
	bool writer_started;
	bool holding;			/* the reader holds its requests' wake-ups
					 * (atoll_hold; the reader's own) */
	pthread_mutex_t qlock;		/* everything below */
	pthread_cond_t qcond;		/* budget freed (the reader waits on it) */
	pthread_cond_t wcond;		/* work for the writer: a reply queued, the
					 * socket free again, or the drain done */
	bool reader_waits;		/* the reader waits on qcond */
	struct nbd_req *qhead, *qtail;	/* replies ready to send, completion order */
	size_t budget_used;		/* bytes held by requests in flight */
	unsigned inflight;		/* requests issued, reply not yet sent */
	bool sending;			/* a reply is being written (one at a time) */
	bool flush_pending;		/* flush_replies is deferred on a library
					 * thread: the replies queued wait for it */
	bool reader_done;		/* no more requests will come */
	bool dead;			/* socket failed: drop replies */
	bool writer_exited;
	bool tls_corked;		/* TLS: replies gather in the session's cork */
	size_t corked;			/* ... that many bytes (writer thread only) */
	struct nbd_rbuf *rbuf;		/* transmission: received ahead (reader only) */
};

/* Bytes received ahead of the requests read so far (nbd_io.c). */
#define NBD_RBUF_SIZE	(64u << 10)
struct nbd_rbuf {
	size_t pos, len;		/* data[pos, len) not read yet */
	uint8_t data[NBD_RBUF_SIZE];
};

/* nbd_io.c: whole reads and writes on the connection (its socket, or its
 * TLS session).  0, or -EPIPE / -ECONNRESET / -ETIMEDOUT / ... ; a clean
 * EOF before the first byte is -ENODATA.  nbd_conn_read fails -ETIMEDOUT
 * when the socket's receive timeout (SO_RCVTIMEO) passes with nothing
 * read; nbd_conn_read_by goes on reading until deadline_ms (mono_now_ms),
 * or for ever with NBD_NO_DEADLINE.  With conn->rbuf set, reads are served
 * from it first, and small ones refill it with whatever has arrived. */
#define NBD_NO_DEADLINE	UINT64_MAX
int nbd_conn_read(struct nbd_conn *conn, void *buf, size_t len);
int nbd_conn_read_by(struct nbd_conn *conn, void *buf, size_t len, uint64_t deadline_ms);
/* The reader, holding its requests' wake-ups (conn->holding), lets them
 * go before it blocks (a receive, a wait for budget) and holds again
 * after; no-ops when it does not hold. */
void nbd_conn_unhold(struct nbd_conn *conn);
void nbd_conn_rehold(struct nbd_conn *conn);
int nbd_conn_write(struct nbd_conn *conn, const void *buf, size_t len);

/* nbd_main.c: the negotiation is about to end in transmission (before the
 * final reply): from then on conn is not closed to make room for others
 * (nbd_max_connections).  false when it was already closed for that. */
bool nbd_conn_claim_serving(struct nbd_conn *conn);

/* nbd_transmit.c: gives bytes back to the server's budget (any thread). */
void nbd_budget_put(struct nbd_server *srv, size_t bytes);

/* nbd_negotiate.c: runs the negotiation state machine on conn; returns 0
 * when transmission starts (conn->export set), or a negative errno when
 * the connection is to be closed. */
int nbd_negotiate(struct nbd_conn *conn);

/* nbd_transmit.c: serves requests until the client disconnects; returns
 * when every request has completed and its reply was sent or dropped. */
void nbd_transmit(struct nbd_conn *conn);

#endif
