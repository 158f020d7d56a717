/*
 * scrub_proto.h - the messages an operator's command sends a PG's primary
 * (scrub, deep scrub, repair, query) and those of scrub between OSDs
 * (doc/scrub.md).
 *
 * MT_OSD_SCRUB: anyone (`atoll pg scrub|deep-scrub|repair`) -> a PG's
 *   primary: scrub the PG (shallow: metadata only; deep: data too), and
 *   repair it if asked.  The reply, of the same type, comes when the scrub
 *   is over: every inconsistency found, per member.
 * MT_PG_SCRUB: the primary -> each member of the acting set: the member's
 *   scrub map of the PG: every object with its size and the crc32c of its
 *   attributes (they hold its version), and for a deep scrub of its data
 *   and key/value map, or the error reading it gave.  With
 *   PG_SCRUB_F_STAMP it only asks the member to record the scrub stamps.
 * MT_OSD_PG_QUERY: anyone (`atoll pg query`) -> a PG's primary: what the
 *   primary knows of the PG (struct pg_query_reply).
 * Every encoding is a versioned section (lib/encode.h); every decoder is
 * bounds-checked.  Version 2 added the shallow flag, the stamps and the
 * query; a version 1 request decodes as a deep scrub.
 */
#ifndef ATOLL_SCRUB_PROTO_H
#define ATOLL_SCRUB_PROTO_H

#include <stdint.h>

#include "encode.h"
#include "osdmap.h"
#include "proto.h"

#define SCRUB_ERRORS_MAX	10000u	/* reported in one reply */
#define SCRUB_MAP_MAX		(1u << 20)	/* objects in one scrub map */

struct osd_scrub_req {
	uint32_t pool;
	uint32_t pg;
	uint8_t repair;
	uint8_t deep;		/* v2; 0: shallow (metadata only); repair implies deep */
};

enum scrub_kind {
	SCRUB_MISSING = 1,	/* the member lacks an object the others have */
	SCRUB_EXTRA = 2,	/* the member has an object the authority lacks */
	SCRUB_READ_ERROR = 3,	/* reading it failed (a checksum: -EIO) */
	SCRUB_MISMATCH = 4,	/* size, data, attributes or omap differ */
};

struct scrub_error {
	char oid[PROTO_OID_MAX + 1];
	int32_t osd;
	uint8_t kind;		/* enum scrub_kind */
	uint8_t repaired;
};

struct osd_scrub_reply {
	int32_t rc;		/* 0, or why the scrub could not run */
	uint64_t epoch;
	uint32_t objects;	/* in the authoritative map */
	uint8_t nmembers;
	int32_t members[OSDMAP_SIZE_MAX];
	uint32_t nerrors;
	struct scrub_error *errors;	/* decoded: malloc'd, scrub_reply_clear */
};

#define PG_SCRUB_F_SHALLOW	1u	/* no data, no omap read */
#define PG_SCRUB_F_STAMP	2u	/* record the stamps, build no map */

struct pg_scrub_req {
	uint32_t pool;
	uint32_t pg;
	uint64_t epoch;		/* the primary's map */
	uint8_t flags;		/* v2: PG_SCRUB_F_* */
	uint64_t last_scrub;	/* v2, with F_STAMP: wall clock seconds */
	uint64_t last_deep;
};

/* When a PG was last scrubbed (wall clock seconds, 0 = never), as each
 * member keeps it in its PG meta object under SCRUB_STAMPS_KEY. */
#define SCRUB_STAMPS_KEY	"scrub_stamps"
struct scrub_stamps {
	uint64_t last_scrub;	/* shallow or deep */
	uint64_t last_deep;
};

struct scrub_obj {
	char *oid;		/* malloc'd */
	uint64_t size;
	uint32_t data_crc;
	uint32_t attr_crc;
	uint32_t omap_crc;
	int32_t err;		/* a read error: the crcs mean nothing */
};

struct pg_scrub_map {
	int32_t rc;		/* -ENOENT: no such PG here */
	uint32_t n;
	struct scrub_obj *objs;	/* in name order; scrub_map_clear */
};

/* MT_OSD_PG_QUERY */
struct pg_query_req {
	uint32_t pool;
	uint32_t pg;
};

#define PGQ_PEERS_MAX		(2 * OSDMAP_SIZE_MAX + 8)
#define PGQ_TARGETS_MAX		(2 * OSDMAP_SIZE_MAX)
#define PGQ_BAD_MAX		8u

struct pgq_version {
	uint64_t epoch;
	uint64_t seq;
};

#define PGQ_PEER_REPLIED	1u
#define PGQ_PEER_HAS_PG		2u

/* What peering heard from one OSD that may hold the PG. */
struct pgq_peer {
	int32_t osd;
	uint8_t flags;		/* PGQ_PEER_* */
	struct pgq_version last_update;
	struct pgq_version last_complete;
	uint64_t last_epoch_started;
};

enum pgq_target_kind {
	PGQ_RECOVERY = 1,	/* an acting member brought up to date from the log */
	PGQ_BACKFILL = 2,	/* an up member outside the acting set, by a full scan */
};

/* One member being recovered or backfilled. */
struct pgq_target {
	int32_t osd;
	uint8_t kind;		/* enum pgq_target_kind */
	uint8_t complete;
	uint64_t todo;		/* objects to copy, known so far */
	uint64_t done;		/* copied (or removed) */
	char pos[PROTO_OID_MAX + 1];	/* backfill: objects <= pos are covered */
};

struct pg_query_reply {
	int32_t rc;		/* -ESTALE: not the primary (any more) */
	uint64_t epoch;		/* the primary's map */
	uint32_t pool;
	uint32_t pg;
	uint32_t state;		/* PG_ST_* */
	char state_name[160];	/* "active+clean" */
	int32_t primary;
	uint8_t nup;
	int32_t up[OSDMAP_SIZE_MAX];
	uint8_t nacting;
	int32_t acting[OSDMAP_SIZE_MAX];
	uint64_t last_epoch_started;	/* the epoch it last went active */
	uint64_t same_interval_since;
	struct pgq_version last_update;	/* the log's head */
	struct pgq_version last_complete;
	struct pgq_version log_tail;
	uint32_t log_entries;
	uint64_t objects;
	uint64_t bytes;
	uint32_t npeers;
	struct pgq_peer peers[PGQ_PEERS_MAX];
	uint32_t ntargets;
	struct pgq_target targets[PGQ_TARGETS_MAX];
	uint64_t missing;	/* objects some acting member still lacks */
	struct scrub_stamps stamps;
	uint8_t scrubbing;	/* 0, 1 shallow, 2 deep */
	uint32_t scrub_errors;	/* left unrepaired by the last scrub */
	uint32_t nbad;
	struct scrub_error bad[PGQ_BAD_MAX];	/* the first of them */
};

const char *scrub_kind_name(uint8_t kind);

void scrub_stamps_encode(const struct scrub_stamps *s, struct enc *e);
int scrub_stamps_decode(struct dec *d, struct scrub_stamps *s);
void pg_query_req_encode(const struct pg_query_req *r, struct enc *e);
int pg_query_req_decode(struct dec *d, struct pg_query_req *r);
void pg_query_reply_encode(const struct pg_query_reply *r, struct enc *e);
int pg_query_reply_decode(struct dec *d, struct pg_query_reply *r);

void osd_scrub_req_encode(const struct osd_scrub_req *r, struct enc *e);
int osd_scrub_req_decode(struct dec *d, struct osd_scrub_req *r);
void osd_scrub_reply_encode(const struct osd_scrub_reply *r, struct enc *e);
int osd_scrub_reply_decode(struct dec *d, struct osd_scrub_reply *r);
void osd_scrub_reply_clear(struct osd_scrub_reply *r);

void pg_scrub_req_encode(const struct pg_scrub_req *r, struct enc *e);
int pg_scrub_req_decode(struct dec *d, struct pg_scrub_req *r);
void pg_scrub_map_encode(const struct pg_scrub_map *m, struct enc *e);
int pg_scrub_map_decode(struct dec *d, struct pg_scrub_map *m);
void pg_scrub_map_clear(struct pg_scrub_map *m);

#endif
