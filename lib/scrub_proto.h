/*
 * scrub_proto.h - the messages of deep scrub and repair (doc/scrub.md).
 *
 * MT_OSD_SCRUB: anyone (`atoll pg deep-scrub|repair`) -> a PG's primary:
 *   deep-scrub the PG, and repair it if asked.  The reply, of the same type,
 *   comes when the scrub is over: every inconsistency found, per member.
 * MT_PG_SCRUB: the primary -> each member of the acting set: the member's
 *   scrub map of the PG: every object with its size and the crc32c of its
 *   data, attributes and key/value map, or the error reading it gave.
 * Both encodings are versioned sections (lib/encode.h); every decoder is
 * bounds-checked.
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

struct pg_scrub_req {
	uint32_t pool;
	uint32_t pg;
	uint64_t epoch;		/* the primary's map */
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

const char *scrub_kind_name(uint8_t kind);

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
