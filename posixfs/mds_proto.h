/*
 * mds_proto.h - the messages between atoll-fuse and atoll-mds
 * (message types 60..79, reserved for the MDS in lib/proto.h).
 *
 * One request type carries every metadata op (a client waits for the
 * reply, same type with MSG_F_REPLY).  Request and reply fronts are one
 * versioned section each (encode.h), so a newer side may append fields.
 * Decoders are bounds-checked and cap every string and count.
 * doc/fs-design.md ("Client protocol") describes the protocol and what
 * each op does.
 */
#ifndef ATOLL_MDS_PROTO_H
#define ATOLL_MDS_PROTO_H

#include <stdint.h>
#include <stddef.h>
#include <time.h>

struct enc;
struct dec;

enum {
	MT_MDS_REQUEST = 60,
	MT_MDS_NOTIFY = 62,	/* mds -> client: lease revoke; the client acks
				 * with a reply of the same type (MSG_F_REPLY) */
	MT_MDS_STATUS = 63,	/* anyone -> mds: its state; reply same type */
	MT_MDS_SAFE = 64,	/* mds -> client: journaled up to a sequence
				 * number (struct mds_safe; no reply) */
	MT_MDS_FLUSH = 65,	/* client -> mds: journal what is queued now,
				 * someone waits for it (fsync); no body, no
				 * reply; MDS_PROTO_V 7 and later */
};

#define MDS_NAME_MAX	255u
#define MDS_PATH_MAX	4096u
#define MDS_READDIR_MAX	4096u	/* entries in one READDIR reply */
#define MDS_BLOCK_SIZE	(4u << 20)
#define MDS_ROOT_INO	1u
#define MDS_XATTR_MAX	65536u	/* one value; also a LISTXATTR reply */
/* A file's largest size: what an off_t holds.  A SETATTR to more gets
 * -EFBIG; a CLOSE/FSYNC reporting more keeps the file's size
 * (doc/limits.md, "MDS"). */
#define MDS_FILE_SIZE_MAX	((uint64_t)INT64_MAX)

enum mds_op {
	MDS_OP_SESSION = 1,	/* reply: data pool name in target; with
				 * MDS_L_REPLAY: "reconnected, resends done" */
	MDS_OP_LOOKUP,		/* ino = parent, name */
	MDS_OP_GETATTR,		/* ino */
	MDS_OP_SETATTR,		/* ino, setmask + values; size_hint */
	MDS_OP_MKNOD,		/* ino = parent, name, mode, rdev, flags (MDS_F_EXCL) */
	MDS_OP_MKDIR,		/* ino = parent, name, mode */
	MDS_OP_UNLINK,		/* ino = parent, name */
	MDS_OP_RMDIR,		/* ino = parent, name */
	MDS_OP_RENAME,		/* ino/name -> ino2/name2, flags (RENAME_*) */
	MDS_OP_LINK,		/* ino = target inode, ino2/name2 = new name */
	MDS_OP_SYMLINK,		/* ino = parent, name, target */
	MDS_OP_READLINK,	/* ino */
	MDS_OP_READDIR,		/* ino, cookie (entries after it), max */
	MDS_OP_STATFS,
	MDS_OP_OPEN,		/* ino */
	MDS_OP_CLOSE,		/* ino, size_hint, s_mtime (when MDS_SET_MTIME) */
	MDS_OP_FSYNC,		/* ino, size_hint */
	MDS_OP_SETXATTR,	/* ino, name, value, flags (XATTR_CREATE/REPLACE) */
	MDS_OP_GETXATTR,	/* ino, name -> value */
	MDS_OP_LISTXATTR,	/* ino -> value: names, each NUL-terminated */
	MDS_OP_REMOVEXATTR,	/* ino, name */
	MDS_OP_SESSION_END,	/* v3: the client unmounts (no reconnect expected) */
	MDS_OP_LANDED,		/* v6: ino, ino2 = the number of the client's FSYNC
				 * with MDS_L_INFLIGHT whose writes are durable now */
	MDS_OP_INOS,		/* v9: max = how many inode numbers the client
				 * wants for its asynchronous creates; reply:
				 * ino_first, ino_count */
	MDS_OP_MAX_
};

#define MDS_F_EXCL	0x1u
#define MDS_INOS_MAX	4096u	/* numbers in one INOS reply */

/* mds_req.lflags (protocol v2) */
#define MDS_L_WANT	0x1u	/* grant leases on what the reply returns */
#define MDS_L_PLUS	0x2u	/* READDIR: each entry's inode record too */
#define MDS_L_REPLAY	0x4u	/* v3: a resend of a request answered before
				 * an MDS restart or a broken connection */
#define MDS_L_REOPEN	0x8u	/* v5, OPEN with REPLAY: after a reconnect, "this
				 * client holds ino open max times" (its count
				 * raised to that, not added: ogen = the
				 * reconnect) */
#define MDS_L_INFLIGHT	0x10u	/* v6, FSYNC: the file's writes are still in
				 * flight (a close that does not wait): other
				 * clients' opens wait for LANDED; ino2 = the
				 * client's number for this flush */
#define MDS_L_EXCL_OK	0x20u	/* v8: the requester takes exclusive directory
				 * leases (MDS_LEASE_EXCL*): it removes entries
				 * of such a directory on its own (MDS_L_ASYNC) */
#define MDS_L_ASYNC	0x40u	/* v8, UNLINK/RMDIR: answered by the client
				 * already (doc/fs-design-client.md,
				 * "Asynchronous removals"); ino2 = the inode
				 * it saw under name: only that is removed
				 * (else -ENOENT, nothing changes).
				 * v9, MKNOD/MKDIR: answered by the client with
				 * inode number replay_ino, from a range INOS gave
				 * it, and times s_mtime ("Asynchronous creates") */

#define MDS_L_MANY	0x80u	/* v9, CLOSE: value holds several closes, each
				 * 16 bytes (ino, then ogen, little-endian
				 * u64s), at most MDS_CLOSE_MANY of them; ino is
				 * the first one's (doc/fs-design-client.md,
				 * "Closes in batches") */
#define MDS_CLOSE_MANY	256u

/* What changed, in a reply (for the requester's own cache) and in a
 * revoke (MT_MDS_NOTIFY): the attributes of an inode (and its data, when
 * its size or mtime moved), or one entry of a directory. */
#define MDS_CHG_ATTR	0x1u	/* ino's attributes */
#define MDS_CHG_DATA	0x2u	/* with ATTR: its size or mtime too */
#define MDS_CHG_DENT	0x4u	/* the entry `name` of directory ino */
#define MDS_CHG_PERM	0x8u	/* with ATTR: its mode, uid or gid too */
#define MDS_CHG_EXCL	0x10u	/* revoke only: the holder's exclusive lease of
				 * directory ino ends (v8; the holder sends its
				 * asynchronous removals there before it acks) */
#define MDS_CHG_MAX	32u	/* items in one reply or revoke */

struct mds_chg {
	uint32_t kind;		/* MDS_CHG_* */
	uint64_t ino;
	char name[MDS_NAME_MAX + 1];	/* DENT only */
};

/* A revoke: the MDS -> a client holding a lease that one of the items
 * covers.  The client drops what it cached, then acks. */
struct mds_notify {
	uint32_t n;
	struct mds_chg c[MDS_CHG_MAX];
};

/* setattr mask */
#define MDS_SET_MODE	0x01u
#define MDS_SET_UID	0x02u
#define MDS_SET_GID	0x04u
#define MDS_SET_SIZE	0x08u
#define MDS_SET_ATIME	0x10u
#define MDS_SET_MTIME	0x20u
#define MDS_SET_CTIME	0x40u
#define MDS_SET_ATIME_NOW 0x80u
#define MDS_SET_MTIME_NOW 0x100u

/* inode flags */
#define MDS_INO_ORPHAN	0x1u	/* no names left, still open somewhere */
#define MDS_INO_XATTRS	0x2u	/* has extended attributes (fs.xattr.INO) */
#define MDS_INO_DIROBJ	0x4u	/* directories: had entries, so fs.dir.INO may exist */

struct mds_inode {
	uint64_t ino;
	uint32_t mode;		/* S_IF* | permission bits */
	uint32_t uid, gid;
	uint32_t nlink;
	uint64_t rdev;
	uint64_t size;
	/* ns since the epoch, negative before 1970 (1677..2262; outside
	 * that, clamped: mds_time_ns) */
	int64_t atime, mtime, ctime;
	uint64_t gen;
	uint32_t flags;
	/* The data namespace (doc/fs-design.md, "Data namespaces"): 0, or
	 * the number of the directory that carries it.  A file's data
	 * objects are named under it (mds_data_oid); a new inode takes its
	 * parent's.  Appended to the wire form (an older peer reads 0). */
	uint64_t dns;
	/* directories: the one that names it (0: unknown).  In the MDS's
	 * inode records and journal only, not in the client protocol. */
	uint64_t parent;
};

struct mds_req {
	uint32_t op;
	uint32_t uid, gid;
	uint64_t client;	/* the client's id (its session) */
	uint64_t ino, ino2;
	char name[MDS_NAME_MAX + 1];
	char name2[MDS_NAME_MAX + 1];
	uint32_t mode;
	uint32_t flags;
	uint64_t rdev;
	uint32_t setmask;
	uint32_t s_mode, s_uid, s_gid;
	uint64_t s_size;
	int64_t s_atime, s_mtime, s_ctime;	/* as mds_inode's times */
	uint64_t size_hint;	/* largest size the client wrote */
	char cookie[MDS_NAME_MAX + 1];	/* readdir: entries after this name */
	uint32_t max;
	char target[MDS_PATH_MAX + 1];	/* symlink */
	uint64_t reqid;		/* unique per client: a resent request is answered once */
	const void *value;	/* setxattr; decoded: points into the message */
	uint32_t vlen;
	uint32_t lflags;	/* MDS_L_* (v2; 0 from a v1 client) */
	/* v3, with MDS_L_REPLAY: the inode number the first reply of this
	 * create gave (the client names data objects by it; the MDS keeps it) */
	uint64_t replay_ino;
	/* v5: the client's reconnect count (doc/fs-design.md, "Open files
	 * across a restart").  OPEN with MDS_L_REOPEN: the reconnect it
	 * re-counts the opens for; CLOSE: the one under which the open it
	 * ends was last counted (an older one than the last re-count: not
	 * counted down, the re-count left it out already).  0: an older
	 * client. */
	uint64_t ogen;
};

struct mds_dirent {
	char name[MDS_NAME_MAX + 1];
	uint64_t ino;
	uint32_t mode;		/* S_IF* only */
};

struct mds_statfs {
	uint64_t blocks, bfree, bavail, files, ffree;
	uint32_t bsize;
};

struct mds_reply {
	int32_t rc;
	uint32_t ninodes;
	struct mds_inode in[2];	/* the target; for create ops the parent too */
	uint32_t nents;
	struct mds_dirent *ents;	/* malloc'd by the decoder / owned by the encoder's caller */
	uint32_t more;
	char target[MDS_PATH_MAX + 1];	/* readlink, session (data pool) */
	struct mds_statfs st;
	void *value;		/* getxattr/listxattr; malloc'd by the decoder */
	uint32_t vlen;
	/* v2: leases.  lease_ms > 0: the requester holds an attribute lease
	 * on every inode of in[] and plus[], and a directory lease on
	 * dir_lease (its entries) when not 0, for lease_ms from when it sent
	 * the request (the MDS counts from later, so it never lets a lease
	 * go before the client does). */
	uint32_t lease_ms;
	uint64_t dir_lease;
	uint32_t nplus;		/* READDIR with MDS_L_PLUS: = nents */
	struct mds_inode *plus;	/* malloc'd by the decoder */
	uint32_t nchg;		/* what this request changed */
	struct mds_chg chg[MDS_CHG_MAX];
	/* v3: the change is applied in memory and will be journal entry
	 * jseq; it is safe (durable) once an MT_MDS_SAFE with seq >= jseq
	 * came on this connection.  0: nothing to wait for. */
	uint64_t jseq;
	/* v4: a second directory leased with lease_ms (0: none): MKDIR's
	 * new directory, so that its creator caches its listing (empty)
	 * and answers lookups of names not in it without asking */
	uint64_t dir_lease2;
	/* v8: MDS_LEASE_EXCL*: which of dir_lease, dir_lease2 is exclusive
	 * (no other client holds a directory lease of it; asked for with
	 * MDS_L_EXCL_OK) */
	uint32_t lease_flags;
	/* v9, INOS: the client may use ino_first .. ino_first + ino_count - 1
	 * for its asynchronous creates, each once */
	uint64_t ino_first;
	uint32_t ino_count;
	/* decoded only: the version of the reply's section (MDS_PROTO_V of
	 * the MDS that sent it; 6 and later know MDS_L_INFLIGHT) */
	uint8_t version;
};

#define MDS_LEASE_EXCL	0x1u	/* dir_lease is exclusive */
#define MDS_LEASE_EXCL2	0x2u	/* dir_lease2 is exclusive */

/* A reply's rc when the MDS evicted the requester (it missed the
 * reconnect window, or its connection was gone for the session timeout):
 * the client is refused for good and must remount; the reply's target
 * says which MDS evicted it and why (doc/fs-design.md, "What an evicted
 * client is told"). */
#define MDS_RC_EVICTED	(-ESHUTDOWN)
/* The MDS holds mds_max_sessions sessions already: a SESSION (a mount) is
 * refused with this; the client says so and does not mount. */
#define MDS_RC_TOO_MANY_SESSIONS	(-EUSERS)

/* MT_MDS_SAFE: every journal entry up to seq is durable. */
struct mds_safe {
	uint64_t seq;
};

/* The MDS's answer to MT_MDS_STATUS (the request's front is empty):
 * what `atoll fs status` shows.  A client counts as connected from its
 * first request on a connection until that connection closes. */
enum mds_state {
	MDS_STATE_REPLAYING = 1,	/* loading the namespace, replaying the journal */
	MDS_STATE_ACTIVE = 2,		/* serving requests */
	MDS_STATE_RECONNECT = 3,	/* after a restart: only clients' resends */
};

#define MDS_STATUS_CLIENTS_MAX	4096u	/* listed in one reply */
#define MDS_STATUS_OPS_MAX	64u	/* per-op counters in one reply */

struct mds_client_info {
	uint64_t id;			/* the client's id (its messenger identity) */
	char addr[64];
	uint64_t requests;		/* requests received on this connection */
	uint64_t connected_ms;		/* how long it has been connected */
};

struct mds_status {
	uint32_t state;			/* enum mds_state */
	uint64_t uptime_ms;
	char addr[64];			/* where the MDS serves */
	char meta_pool[128], data_pool[128];
	uint64_t inodes;		/* inodes in the namespace (root included) */
	uint64_t next_ino, ino_hw;
	uint64_t j_seg;			/* journal: the current segment */
	uint64_t j_entries;		/* entries in it */
	uint64_t j_offset;		/* its length in bytes (next append's offset) */
	uint64_t j_seq;			/* sequence number of the last entry */
	uint64_t requests;		/* every request answered (all ops) */
	uint64_t malformed;		/* requests that did not decode */
	uint64_t status_requests;	/* MT_MDS_STATUS, this one included */
	uint32_t nops;			/* op_count[op] for op < nops (mds_op) */
	uint64_t op_count[MDS_STATUS_OPS_MAX];
	uint32_t nclients;		/* connected clients */
	struct mds_client_info *clients;	/* malloc'd by the decoder */
	/* v2: leases */
	uint32_t lease_ms;		/* their duration; 0: leases are off */
	uint64_t leases;		/* held now (client, inode) */
	uint64_t leases_max;		/* the bound of the table */
	uint64_t grants;		/* leases granted or renewed */
	uint64_t revokes;		/* revokes sent (one per client per change) */
	uint64_t revoke_timeouts;	/* of those, neither acked nor closed in time */
	/* v4: the journal entries up to this sequence number are durable
	 * (j_seq: the last one queued); both read when the status is asked */
	uint64_t j_durable;
	/* appended: the sessions held (fs.sessions: mounts that did not
	 * unmount, connected or not) and the session timeout */
	uint64_t sessions;
	uint32_t session_timeout_ms;
	/* the metadata cache (optional, after j_durable): bytes cached and
	 * its bound, nodes cached, hits, misses (loads) and evictions */
	uint64_t cache_bytes, cache_max, cache_nodes;
	uint64_t cache_hits, cache_misses, cache_evictions;
	/* v6 (optional, after the cache): files closed with their writes in
	 * flight now (mds_inflight.c), opens that waited for such writes,
	 * and of those, waits that ran out */
	uint64_t inflight, inflight_waits, inflight_timeouts;
};

void mds_status_encode(struct enc *e, const struct mds_status *s);
/* s->clients is malloc'd (free it). */
int mds_status_decode(struct dec *d, struct mds_status *s);
const char *mds_state_name(uint32_t state);

/* A time as the protocol carries it (ns since the epoch, signed) from
 * seconds and nanoseconds (0..999999999), clamped to what an int64_t of
 * ns holds; and back (tv_nsec 0..999999999, tv_sec rounded down: -0.5 s
 * is -1 s + 500000000 ns, as struct timespec has it). */
int64_t mds_time_ns(int64_t sec, long nsec);
struct timespec mds_time_ts(int64_t ns);
void mds_inode_encode(struct enc *e, const struct mds_inode *in);
int mds_inode_decode(struct dec *d, struct mds_inode *in);
void mds_req_encode(struct enc *e, const struct mds_req *r);
int mds_req_decode(struct dec *d, struct mds_req *r);
/* The op of a request front alone (a dispatcher's look before it decodes
 * the rest): 0, or the decoder's error. */
int mds_req_peek_op(const void *front, size_t len, uint32_t *op);
void mds_reply_encode(struct enc *e, const struct mds_reply *r);
/* r->ents and r->value are malloc'd (free them). */
int mds_reply_decode(struct dec *d, struct mds_reply *r);
const char *mds_op_name(uint32_t op);
void mds_notify_encode(struct enc *e, const struct mds_notify *n);
int mds_notify_decode(struct dec *d, struct mds_notify *n);
void mds_safe_encode(struct enc *e, const struct mds_safe *s);
int mds_safe_decode(struct dec *d, struct mds_safe *s);

/* The name of data object blk of file ino of data namespace dns:
 * `INO.BLK` without a namespace, `nDNS.INO.BLK` with one (each 16 hex
 * digits).  MDS_DATA_OID_MAX bytes suffice. */
#define MDS_DATA_OID_MAX	64u
void mds_data_oid(char *b, size_t n, uint64_t dns, uint64_t ino, uint64_t blk);
/* The start every data object name of file ino has (mds_data_oid
 * without the block); its length. */
size_t mds_data_prefix(char *b, size_t n, uint64_t dns, uint64_t ino);
/* The object-name prefix of data namespace dns ("nDNS."), for OSD caps. */
void mds_dns_prefix(char *b, size_t n, uint64_t dns);
/* The extended attribute that sets a directory's data namespace (any
 * value; an admin's, on a directory without subdirectories) and reads
 * its prefix back. */
#define MDS_XATTR_DNS		"trusted.atoll.data_namespace"

/* atoll-fuse mounting directory ino as its root: swaps ino and 1 in what
 * it encodes and decodes from then on (mds_proto.c); 1 or 0: none. */
void mds_proto_set_root(uint64_t ino);

#endif
