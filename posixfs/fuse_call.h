/*
 * fuse_call.h - atoll-fuse's calls to the MDS (fuse_call.c): the
 * connection, calls a thread waits for, and calls answered from the
 * messenger's loop thread ("calls in flight").
 *
 * Every call goes behind the resends of a reconnect (fuse_replay.h) and
 * behind the changes this client answered itself and still holds
 * (fuse_here.h).  A call cut off by a broken connection (the MDS
 * restarting) is sent again on the redialled connection.
 */
#ifndef ATOLL_FUSE_CALL_H
#define ATOLL_FUSE_CALL_H

#define FUSE_USE_VERSION 35

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fuse_cache.h"
#include "mds_proto.h"

struct atoll_ioctx;
struct msg;

/* ---- the connection ---- */

/* Connects to the cluster (conf, mon: -o conf=, -o mon=, either NULL),
 * starts the replayer (fuse_replay.h), dials the MDS and opens the
 * session; *data: the data pool the MDS names.  The MDS: mds_addr (-o
 * mds=) when not NULL, always; else the active one the monitors name in
 * the map (of the file system of metadata pool meta_pool, when not NULL),
 * followed when the role moves (a thread asks them again at every new map
 * epoch); else fallback.  0, or
 * -errno after saying why on stderr.  mountpoint is named in the
 * messages.  root: the directory the mount shows (--root, -o subdir=);
 * NULL: the path of the key's mds caps (its keyring entry), else "/". */
int fc_connect(const char *conf, const char *mon, const char *mds_addr,
	       const char *fallback, const char *meta_pool, const char *mountpoint,
	       const char *root, struct atoll_ioctx **data);
/* At the very end: closes the MDS connection, the messenger, the data
 * pool and the cluster (each only if it was opened). */
void fc_disconnect(void);
/* The names messages give: the mount point and the MDS's address. */
const char *fc_mountpoint(void);
const char *fc_mds_addr(void);
/* The MDS's protocol version (mds_reply.version of its last reply; 6 and
 * later know in-flight marks, 7 MT_MDS_FLUSH, 8 asynchronous removals, 9
 * asynchronous creates and batched closes). */
uint8_t fc_mds_version(void);
/* The messenger's epoch of the MDS connection (it moves at a redial). */
uint64_t fc_epoch(void);
/* This client's id (the cluster's). */
uint64_t fc_client_id(void);
/* The latest request id handed out (fsync waits for those up to it). */
uint64_t fc_last_reqid(void);
/* The unmount gave up on the MDS: closes its connection for good (every
 * call in flight fails).  fc_owed: a call waits or is in flight, or the
 * connection is not open (the MDS owes an answer). */
void fc_close_for_good(void);
bool fc_owed(void);
/* Whether the MDS connection is open now. */
bool fc_mds_open(void);
/* Asks the MDS to journal what it holds now (MT_MDS_FLUSH; older MDSs
 * journal at once anyway). */
void fc_hurry(void);
/* The MDS evicted this client (why: its sentence): said once, in the
 * log, on stderr and in syslog; every cached entry goes.  The loop
 * thread. */
void fc_evicted(const char *why);

/* ---- calls a thread waits for ---- */

/* A call made by a thread that waits for its answer: the reply callback
 * ends with fc_wait_done. */
struct fc_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int err;		/* the call's, or the decoder's */
};
#define FC_WAIT_INIT { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER }
void fc_wait_done(struct fc_wait *w, int err);
/* Waits for fc_wait_done; w's error. */
int fc_wait(struct fc_wait *w);
/* Sends m (NULL: -ENOMEM) to the MDS, as it is (no wait for resends),
 * and waits until reply(arg, ...) called fc_wait_done(w); timeout_ms 0:
 * the calls' usual bound.  The transport's error, or w's. */
int fc_send_wait(struct msg *m, unsigned timeout_ms,
		 void (*reply)(void *arg, struct msg *r, int err), void *arg, struct fc_wait *w);

/* A request of op from this client (req: the caller of a FUSE request,
 * whose uid and gid it acts as; NULL: none). */
void fc_req_init(struct mds_req *rq, fuse_req_t req, uint32_t op);
/* The request acts as req's caller. */
void fc_req_cred(struct mds_req *rq, fuse_req_t req);

/* Sends rq and waits for the reply; returns rp->rc or a transport error
 * (-ENOTCONN once the unmount gave up on the MDS).  ci (may be NULL):
 * the leases the reply carried.  rp's arrays are the caller's to free. */
int fc_call(const struct mds_req *rq, struct mds_reply *rp);
int fc_call_ci(const struct mds_req *rq, struct mds_reply *rp, struct lc_info *ci);
/* The same, as a resend (MDS_L_REPLAY) from attempt first on. */
int fc_call_from(const struct mds_req *rq, struct mds_reply *rp, struct lc_info *ci, int first);

/* fuse_data.c's size push: the MDS request op (FSYNC or CLOSE) for ino,
 * with size (NULL: nothing to push) and mtime; *msize gets the MDS's
 * size after it (unchanged when it sent none); mark (FSYNC, not 0): the
 * writes are still in flight, MDS_L_INFLIGHT with this number (-EAGAIN:
 * the MDS did not mark it; wait for them and push again).  0 or -errno. */
int fc_size_call(fuse_req_t req, uint64_t ino, uint32_t op, const uint64_t *size,
		 uint64_t mtime, uint64_t *msize, uint64_t ogen, uint64_t mark);

/* ---- calls answered from the loop thread ---- */

/* A change whose answer to the kernel needs nothing but the MDS's reply
 * (unlink, rmdir, rename, create, mkdir ...): the request thread sends it
 * and goes back to FUSE; the loop thread, which receives the reply, also
 * answers the kernel (done).  This saves the wake-up of a waiting request
 * thread per MDS call.  done never blocks on the loop thread (the kernel
 * barrier's readers never wait for the loop); a call cut off by a broken
 * connection is finished by a thread of its own (resent, as fc_call_ci). */
struct acall {
	fuse_req_t req;
	struct mds_req rq;
	struct mds_reply rp;
	struct lc_info ci;
	uint64_t t_send;
	struct fuse_file_info fi;	/* create: a copy (libfuse's is on its stack) */
	bool has_fi;
	uint64_t gen0;			/* fr_gen() when it was made (fd_open) */
	/* answered here already (an asynchronous create or removal,
	 * fuse_here.c): kept in order across a reconnect (fuse_replay.c) */
	bool here;
	uint64_t aseq;
	uint64_t epoch;			/* the connection's it went on (here) */
	struct acall *here_next, **here_prev;	/* fuse_replay.c's, while sent */
	struct acall *cut_next;
	void *own;			/* freed with it (rq.value of a CLOSE batch) */
	void (*done)(struct acall *a, int ret);	/* answers the kernel, frees a */
};

/* A call of op whose answer done gives; NULL when out of memory (req, if
 * any, is then answered ENOMEM). */
struct acall *fc_acall_new(fuse_req_t req, uint32_t op, void (*done)(struct acall *, int));
void fc_acall_free(struct acall *a);
/* Sends a->rq; a->done answers the kernel (here on failure to send).
 * May wait for a reconnect's resends. */
void fc_call_async(struct acall *a);
/* a->done, then one call less in flight. */
void fc_acall_finish(struct acall *a, int ret);
/* At unmount, before the session goes: waits for the calls still in
 * flight, those that answer the kernel and the CLOSEs behind a release
 * (they end with the MDS's reply, or fail once the unmount gives up on
 * the MDS: bounded by the grace, fuse_unmount.c). */
void fc_acall_drain(void);

#endif
