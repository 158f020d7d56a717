/*
 * floor.h - what the files of floor-bench share: the frame, the options,
 * a process's state (struct node) and the functions one file gives the
 * others (floor-net.c: frames, connections, the loop; floor-roles.c: what
 * each role does with a frame, the disk thread, the servers;
 * floor-bench.c: the processes, the options, the client, the report).
 */
#ifndef FLOOR_H
#define FLOOR_H

#include <libaio.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#define MAGIC		0x31524c46u	/* "FLR1" */
#define RBUF_SIZE	(64 * 1024)	/* small frames are read into this */
#define TX_CAP		4096		/* frames queued per connection */
#define IOV_SEND	128		/* iovecs per sendmsg, as the messenger */
#define INFLIGHT_MAX	1024
#define ALIGN		4096
#define STALL_NS	(30 * 1000000000ull)	/* no answer for this long: fail */
#define ID_DISK		8		/* epoll ids beside the connections 0..2 */
#define ID_AIO		9

enum { T_WRITE = 1, T_WRITE_ACK, T_REP, T_REP_ACK, T_READ, T_READ_REPLY };
enum role { R_CLIENT, R_PRIMARY, R_REPLICA };

/* The frame header, host byte order (both ends are this machine). */
struct hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t resv;
	uint64_t tid;
	uint64_t off;		/* file offset of the write or read */
	uint32_t len;		/* payload bytes after the header */
	uint32_t dcrc;		/* crc32c of the payload (0 when none) */
	uint32_t rlen;		/* T_READ: the bytes asked for */
	uint32_t hcrc;		/* crc32c of the 36 bytes before it */
};
_Static_assert(sizeof(struct hdr) == 40, "the header is 40 bytes");

struct opts {
	const char *workload;
	bool write;
	uint32_t size;		/* bytes per op */
	int inflight;
	double seconds;
	uint64_t file_size;
	const char *dir;
	bool keep;		/* reads: keep the prefilled file for the next run */
};

/* One queued frame; data stays the caller's until sent, then release (if
 * not NULL) goes back to the pool. */
struct txe {
	struct hdr h;
	const char *data;
	void *release;
};

struct conn {
	int fd;
	const char *peer;	/* in messages */
	char *rbuf;		/* RBUF_SIZE bytes, rlen of them received */
	size_t rlen;
	struct hdr cur;		/* the frame whose payload is read into curbuf */
	char *curbuf;
	size_t curhave;
	uint32_t curcrc;	/* crc of curbuf's first curhave bytes */
	struct txe *tx;		/* ring of TX_CAP: txn frames from txhead */
	unsigned txhead, txn;
	size_t txoff;		/* bytes of tx[txhead] already sent */
	bool out;		/* EPOLLOUT watched */
	bool dirty;		/* on the node's list to flush at the end of the pass */
};

/* A write for the disk thread (the first member of struct op). */
struct dio {
	struct dio *next;
	struct iocb cb;
	void *buf;
	uint64_t off;
	uint32_t len;
};

/* The disk thread of a server: group commit of the writes the loop queues.
 * mu protects q, done, waiting and stop. */
struct disk {
	int fd;
	int efd;		/* the loop's eventfd: written when done turns non-empty */
	int cap;
	io_context_t ctx;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct dio *q, **qtail;
	struct dio *done, **dtail;
	bool waiting, stop;
};

/* An op in a server: a write (disk, then the acks) or a read. */
struct op {
	struct dio d;
	uint64_t tid;		/* the sender's */
	int pending;		/* primary: own write + replica acks still missing */
};

struct slot {			/* the client's ops in flight */
	uint64_t t0;
	char *buf;		/* writes: the payload */
	bool busy;
};

struct node {
	enum role role;
	const struct opts *o;
	int ep;
	struct conn conn[3];	/* client: [0] primary; primary: [0] client, [1] [2] replicas;
				 * replica: [0] primary */
	struct conn *dirty[3];
	int ndirty;
	void *pool;		/* free payload buffers of o->size bytes */
	bool finished;
	/* servers */
	int fd;			/* the data file */
	struct disk disk;
	struct op *ops, *freeops;
	io_context_t actx;	/* primary, reads: libaio on the loop thread */
	int aefd;
	struct iocb **rq;	/* reads to submit at the end of the pass */
	int nrq;
	/* client */
	struct slot *slots;
	int active;
	uint64_t seq, next_off, rnd, t_start, t_end, t_last, ops_done, lat_sum;
	float *lat;
	size_t nlat, latcap;
};

static inline uint64_t fl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}


/* floor-bench.c */
extern pid_t fl_parent_pid;	/* the client's, which forks the servers */
__attribute__((format(printf, 1, 2), noreturn))
void fl_die(const char *fmt, ...);

/* floor-net.c */
void *fl_alloc(size_t bytes);
void *fl_buf_get(struct node *n);
void fl_buf_put(struct node *n, void *b);
struct hdr fl_hdr(uint16_t type, uint64_t tid, uint64_t off, uint32_t len, uint32_t dcrc,
		  uint32_t rlen);
void fl_tx_push(struct node *n, struct conn *c, const struct hdr *h, const char *data,
		void *release);
void fl_conn_init(struct node *n, int id, int fd, const char *peer);
void fl_ep_add(struct node *n, int fd, uint64_t id);
void fl_run_loop(struct node *n);
int fl_listen(const char *ip, struct sockaddr_in *a);
int fl_dial(const struct sockaddr_in *a, const char *peer);

/* floor-roles.c */
void fl_dispatch(struct node *n, struct conn *c, const struct hdr *h, char *payload);
void fl_disk_reap(struct node *n);
void fl_aio_reap(struct node *n);
void fl_client_start(struct node *n, struct slot *s);
__attribute__((noreturn))
void fl_server(const struct opts *o, enum role role, const char *path, int lfd, int readyfd,
	       const struct sockaddr_in *reps);

#endif
