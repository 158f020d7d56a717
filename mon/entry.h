/*
 * entry.h - the monitors' replicated bytes: a log entry (a map change),
 * a snapshot of the state, and the MT_MON_RAFT frame between monitors.
 *
 * Pure encoders and bounds-checked decoders (entry.c), kept apart from
 * the monitor's state so that tests/fuzz links them alone.
 */
#ifndef ATOLL_MON_ENTRY_H
#define ATOLL_MON_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "osdmap.h"

struct enc;

#define MON_ENTRY_MAP_CHANGE	1
#define MON_ENTRY_TRIM		2

/* A map change: inc (epoch base + 1) made against epoch base, for the
 * command of request id {client, seq} ({0, 0}: none).
 * A trim: every member drops the incrementals of epochs below first
 * from its store (mapchange.c); base, client, seq and inc are unused. */
struct mon_entry {
	uint8_t type;			/* MON_ENTRY_* */
	uint64_t base;
	uint64_t client, seq;
	struct osdmap_inc inc;
	uint64_t first;			/* MON_ENTRY_TRIM: the first epoch kept */
};
void mon_entry_encode(const struct mon_entry *e, struct enc *out);
/* 0, or -EBADMSG (malformed, or an unknown type); e->inc is cleared by
 * mon_entry_clear() either way.  Trailing bytes after the entry (the
 * log's padding to 8 bytes) are ignored. */
int mon_entry_decode(const void *buf, size_t len, struct mon_entry *e);
void mon_entry_clear(struct mon_entry *e);

/* A mutating command applied (the replicated request-id table). */
struct mon_reqent {
	uint64_t client, seq;
	uint64_t epoch;			/* the epoch it made */
};
#define MON_REQIDS_MAX	1024

/* The whole replicated state: the map and the request-id table (n
 * entries, oldest first). */
void mon_state_blob_encode(const struct osdmap *m, const struct mon_reqent *ents,
			   uint32_t n, struct enc *out);
/* *map is the caller's (osdmap_free); ents holds MON_REQIDS_MAX. */
int mon_state_blob_decode(const void *buf, size_t len, struct osdmap **map,
			  struct mon_reqent *ents, uint32_t *n);

/* The monitor cluster's incarnation (incarnation.c, rebuild.c). */
void mon_incarnation_entry_encode(uint64_t inc, struct enc *out);
/* 1 and *inc (> 0) for an incarnation entry; 0: not one (a map change);
 * -EBADMSG: one, malformed. */
int mon_incarnation_entry_decode(const void *buf, size_t len, uint64_t *inc);
void mon_incarnation_trailer_encode(uint64_t inc, struct enc *out);
/* The length of the state blob before the trailer (len when there is
 * none) and *inc (1 when there is none). */
size_t mon_incarnation_trailer_decode(const void *buf, size_t len, uint64_t *inc);

/* MT_MON_RAFT (transport.c). */
enum { MON_RT_OPEN = 1, MON_RT_DATA = 2, MON_RT_CLOSE = 3, MON_RT_STATUS = 4 };
#define MON_RT_ADDR_MAX	127
struct mon_rt_frame {
	uint8_t kind;			/* MON_RT_* */
	uint8_t from_dialer;		/* 0 or 1 */
	uint64_t sid;			/* the stream; 0 for STATUS */
	uint64_t id;			/* OPEN, STATUS: the sender's raft id (> 0) */
	char addr[MON_RT_ADDR_MAX + 1];	/* OPEN: its raft address */
	uint64_t applied, epoch, digest; /* STATUS */
	uint64_t wall_ms;		/* STATUS: the sender's wall clock (0 from
					 * an older monitor: absent) */
};
void mon_rt_frame_encode(const struct mon_rt_frame *f, struct enc *out);
int mon_rt_frame_decode(const void *buf, size_t len, struct mon_rt_frame *f);

#endif
