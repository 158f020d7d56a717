/*
 * osdmap.h - the cluster map: which OSDs exist, where they are, whether
 * they are up and in, and which pools there are.  The monitor is its only
 * author; every OSD and client holds a copy of some epoch and computes
 * placement from it (placement.h).
 *
 * A map changes only by an incremental (struct osdmap_inc) that takes
 * epoch E to E+1.  The monitor builds the incremental, makes it durable,
 * then publishes it; everyone else applies incrementals in order, or
 * takes a full map.  Both encodings are versioned sections (encode.h), so
 * that fields can be appended later.
 */
#ifndef ATOLL_OSDMAP_H
#define ATOLL_OSDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct enc;
struct dec;

#define OSDMAP_HOST_MAX		63	/* host name bytes */
#define OSDMAP_ADDR_MAX		63	/* "ip:port" bytes */
#define OSDMAP_POOL_NAME_MAX	63
#define OSDMAP_OSD_MAX		4096	/* ids 0..4095 */
#define OSDMAP_POOL_MAX		1024	/* pools in one map */
#define OSDMAP_PG_MAX		65536	/* pg_num of one pool */
#define OSDMAP_SIZE_MAX		10	/* replicas of one pool */
#define OSDMAP_PG_TEMP_MAX	65536	/* pg_temp entries in one map */
#define OSDMAP_BLOCKLIST_MAX	65536	/* blocklist entries in one map */
#define OSDMAP_RATIO_MAX	10000	/* ratios are parts per 10,000 */
#define OSDMAP_MDS_MAX		64	/* MDS daemons in one map */
#define OSDMAP_MDS_NAME_MAX	31	/* "a" of mds.a: [A-Za-z0-9_-] */

/* Weights are 16.16 fixed point: 0x10000 is 1.0. */
#define OSD_WEIGHT_ONE		0x10000u

/* osdmap_osd.state bits */
#define OSD_ST_EXISTS		0x01u	/* the id is allocated */
#define OSD_ST_UP		0x02u	/* running and reachable */
#define OSD_ST_DRAIN		0x04u	/* out to be removed: atoll osd drain */
#define OSD_ST_DESTROYED	0x08u	/* its disk is gone; the id waits for a new one */
#define OSD_ST_NEARFULL		0x10u	/* used past nearfull_ratio */
#define OSD_ST_BACKFILLFULL	0x20u	/* used past backfillfull_ratio */
#define OSD_ST_FULL		0x40u	/* used past full_ratio: writes -ENOSPC */

/* osdmap.flags */
#define OSDMAP_F_NOOUT		0x01u	/* do not mark down OSDs out */

/* pool failure domains */
enum pool_fd {
	POOL_FD_HOST = 0,
	POOL_FD_OSD = 1,
};

/* pool flags */
#define POOL_F_COMPRESS		0x01u	/* lz4 in the OSDs' stores */

struct osdmap_osd {
	uint32_t id;
	uint32_t state;			/* OSD_ST_* */
	uint8_t uuid[16];		/* the store's uuid (disk identity) */
	char host[OSDMAP_HOST_MAX + 1];
	char addr[OSDMAP_ADDR_MAX + 1];	/* "ip:port" while up */
	uint32_t weight;		/* placement weight (capacity), 16.16 */
	uint32_t reweight;		/* 0 = out, OSD_WEIGHT_ONE = fully in */
	uint64_t up_from;		/* epoch it last came up */
	uint64_t down_at;		/* epoch it last went down */
	uint64_t down_stamp_ms;		/* wall clock of the last down (for
					 * marking out after the interval) */
};

struct osdmap_pool {
	uint32_t id;
	char name[OSDMAP_POOL_NAME_MAX + 1];
	uint8_t size;
	uint8_t min_size;
	uint8_t failure_domain;		/* enum pool_fd */
	uint32_t pg_num;
	uint32_t flags;			/* POOL_F_* */
	uint64_t created;		/* epoch */
};

/* A temporary acting set for one PG (the recovery issue uses it: while a
 * new OSD backfills, the old members keep serving). */
struct osdmap_pg_temp {
	uint32_t pool;
	uint32_t pg;
	uint8_t n;
	int32_t osds[OSDMAP_SIZE_MAX];
};

/* A fenced client (the images issue): its ops are refused until expiry. */
struct osdmap_blocklist {
	uint64_t client;
	uint64_t until_ms;		/* wall clock */
};

/* The metadata service (doc/fs-design.md, "Standby MDS daemons"): every
 * atoll-mds that beacons to the monitors has one record, keyed by its
 * instance (the client id it reads and writes the pools with, which is
 * what a blocklist entry fences).  A file system is its pair of pools;
 * at most one record of a file system is ACTIVE, the others wait as
 * STANDBY.  grant_epoch is the epoch that made the active one active:
 * that epoch also holds the blocklist entry of the one before it, so an
 * OSD that serves an op of epoch >= grant_epoch refuses the old one. */
enum osdmap_mds_state {
	OSDMAP_MDS_STANDBY = 1,
	OSDMAP_MDS_ACTIVE = 2,
};

struct osdmap_mds {
	uint64_t instance;		/* its client id, > 0, unique in the map */
	char name[OSDMAP_MDS_NAME_MAX + 1];
	char addr[OSDMAP_ADDR_MAX + 1];	/* where it serves (once active) */
	uint32_t meta_pool, data_pool;	/* the file system it serves or waits for */
	uint8_t state;			/* enum osdmap_mds_state */
	/* ACTIVE: the epoch of the grant.  In an incremental, 0 means "the
	 * epoch this incremental makes" (osdmap_apply fills it in), so the
	 * monitor need not know the epoch before the change commits. */
	uint64_t grant_epoch;
};

struct osdmap {
	uint8_t fsid[16];
	uint64_t epoch;
	uint64_t created_ms;
	uint64_t modified_ms;
	uint32_t flags;			/* OSDMAP_F_* */
	/* capacity ratios in parts per 10,000 (e.g. 9500 = 95%) */
	uint32_t nearfull_ratio;
	uint32_t backfillfull_ratio;
	uint32_t full_ratio;
	uint32_t max_osd;		/* osds[] has max_osd slots, by id */
	struct osdmap_osd *osds;	/* slot i is id i; state 0 = unused */
	uint32_t npools;
	struct osdmap_pool *pools;	/* sorted by id */
	uint32_t pool_next_id;
	uint32_t npg_temp;
	struct osdmap_pg_temp *pg_temp;	/* sorted by (pool, pg), unique */
	uint32_t nblocklist;
	struct osdmap_blocklist *blocklist;	/* sorted by client, unique */
	/* appended (full map version 2): the MDS daemons, sorted by
	 * instance, unique; at most one ACTIVE per (meta_pool, data_pool) */
	uint32_t nmds;
	struct osdmap_mds *mds;
};

/* The change from epoch-1 to epoch.  Each record replaces the whole entry
 * of the same id (an osd or pool record is sent whole, not as a diff). */
struct osdmap_inc {
	uint64_t epoch;			/* the epoch this produces */
	uint64_t modified_ms;
	bool has_flags;
	uint32_t flags;
	bool has_ratios;
	uint32_t nearfull_ratio, backfillfull_ratio, full_ratio;
	uint32_t nosds;
	struct osdmap_osd *osds;	/* new or changed OSD records */
	uint32_t npools;
	struct osdmap_pool *pools;	/* new or changed pools */
	uint32_t nrm_pools;
	uint32_t *rm_pools;		/* pool ids removed */
	bool has_pg_temp;		/* pg_temp below replaces the whole list */
	uint32_t npg_temp;
	struct osdmap_pg_temp *pg_temp;
	bool has_blocklist;		/* blocklist below replaces the whole list */
	uint32_t nblocklist;
	struct osdmap_blocklist *blocklist;
	bool has_mds;			/* mds below replaces the whole list */
	uint32_t nmds;
	struct osdmap_mds *mds;
};

/* An empty map of epoch 0 with default ratios (85%, 90%, 95%) and
 * pool_next_id 1; fsid NULL means all zeros.  NULL on ENOMEM. */
struct osdmap *osdmap_new(const uint8_t fsid[16]);
void osdmap_free(struct osdmap *m);
struct osdmap *osdmap_clone(const struct osdmap *m);

/* Full map encoding.  Slots of state 0 are not written.  The decoder
 * refuses what the map's invariants forbid (see osdmap.c): strings without
 * room for their NUL, ids out of order, pools with size 0 or over
 * OSDMAP_SIZE_MAX, min_size 0 or over size, pg_num 0 or over OSDMAP_PG_MAX,
 * an unknown failure domain, duplicate pool names, reweight over
 * OSD_WEIGHT_ONE, ratios over OSDMAP_RATIO_MAX. */
void osdmap_encode(const struct osdmap *m, struct enc *e);
/* Decodes a full map into a new *out (NULL on error); -EBADMSG/-E2BIG on
 * bad input, -EPROTONOSUPPORT for a newer incompatible format, -ENOMEM. */
int osdmap_decode(struct dec *d, struct osdmap **out);

void osdmap_inc_init(struct osdmap_inc *inc, uint64_t epoch);
void osdmap_inc_clear(struct osdmap_inc *inc);	/* frees the arrays */
/* Builders that copy a record into inc (replacing one of the same id);
 * -EINVAL for a record the map would refuse, -ENOMEM.  An OSD record of
 * state 0 frees the id.  Setting a pool cancels a removal of the same id
 * and removing one cancels a set, so the order of calls does not matter. */
int osdmap_inc_set_osd(struct osdmap_inc *inc, const struct osdmap_osd *o);
int osdmap_inc_set_pool(struct osdmap_inc *inc, const struct osdmap_pool *p);
int osdmap_inc_rm_pool(struct osdmap_inc *inc, uint32_t pool);
/* Copy a whole new pg_temp / blocklist list into inc (any order; apply
 * sorts it and refuses duplicates); -E2BIG over the cap, -ENOMEM. */
int osdmap_inc_set_pg_temp(struct osdmap_inc *inc,
			   const struct osdmap_pg_temp *list, uint32_t n);
int osdmap_inc_set_blocklist(struct osdmap_inc *inc,
			     const struct osdmap_blocklist *list, uint32_t n);
/* Copy a whole new MDS list into inc; -E2BIG over OSDMAP_MDS_MAX,
 * -EINVAL for a record the map would refuse, -ENOMEM.  Apply refuses a
 * list with two records of one instance or two actives of one file
 * system. */
int osdmap_inc_set_mds(struct osdmap_inc *inc, const struct osdmap_mds *list, uint32_t n);
void osdmap_inc_encode(const struct osdmap_inc *inc, struct enc *e);
/* Decodes into *inc (which it initialises; on error it is left cleared). */
int osdmap_inc_decode(struct dec *d, struct osdmap_inc *inc);
/* Applies inc to m in place: -EINVAL unless inc->epoch == m->epoch + 1,
 * or if a record is invalid (a pool name used twice, a duplicate pg_temp
 * or blocklist entry), -ENOMEM; m is unchanged on any error.  Removing a
 * pool drops its pg_temp entries; a new pool id raises pool_next_id. */
int osdmap_apply(struct osdmap *m, const struct osdmap_inc *inc);

/* Lookups (NULL when missing). */
const struct osdmap_osd *osdmap_osd(const struct osdmap *m, int32_t id);
const struct osdmap_pool *osdmap_pool(const struct osdmap *m, uint32_t id);
const struct osdmap_pool *osdmap_pool_by_name(const struct osdmap *m, const char *name);
bool osdmap_osd_up(const struct osdmap *m, int32_t id);
bool osdmap_osd_in(const struct osdmap *m, int32_t id);
bool osdmap_blocklisted(const struct osdmap *m, uint64_t client, uint64_t now_ms);
/* The MDS record of instance / the active one of a file system (NULL
 * when there is none). */
const struct osdmap_mds *osdmap_mds_find(const struct osdmap *m, uint64_t instance);
const struct osdmap_mds *osdmap_mds_active(const struct osdmap *m, uint32_t meta_pool,
					   uint32_t data_pool);
/* Number of distinct hosts with at least one OSD that is in (exists and
 * reweight > 0). */
uint32_t osdmap_hosts_in(const struct osdmap *m);

/* True if a and b encode to the same bytes (the same epoch with
 * different content is how a rolled-back monitor is detected). */
bool osdmap_equal(const struct osdmap *a, const struct osdmap *b);

#endif
