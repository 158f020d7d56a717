/*
 * caps.h - capability strings of the monitor and OSD services
 * (doc/caps.md): their parser and the checks the daemons make with them.
 *
 * A caps string comes from the monitors (mon_auth_caps) or from a ticket
 * (msg_conn_caps); it is untrusted text until parsed here.  The parsers
 * are bounds-checked, take a NUL-terminated string of at most
 * CAPS_STR_MAX bytes, never allocate, and on error fill err with a
 * sentence that names the offending clause (`auth add`/`auth caps`
 * print it as is).
 *
 * OSD grammar: clauses separated by ',' or ';':
 *   allow r|w|x (letters in any combination, e.g. rw, rwx) [pool=NAME]
 *         [object_prefix=PFX]
 *   allow *                    everything, admin included
 *   profile osd                everything (another OSD)
 *   profile mds|client         rw on every pool
 * 'x' is the admin cap (scrub, repair, `pg query`).  An op is allowed
 * when one clause covers its pool, its object name and its access.
 *
 * Monitor grammar: clauses separated by ',' or ';':
 *   allow r | allow rw | allow rwx | allow *
 *   profile osd|mds|client|bootstrap-osd|blocklist
 * and an entity holds the union of its clauses.
 *
 * Thread-safe: pure functions of their arguments.
 */
#ifndef ATOLL_CAPS_H
#define ATOLL_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CAPS_STR_MAX		1024u	/* bytes of a caps string */
#define CAPS_CLAUSES_MAX	16u
#define CAPS_POOL_MAX		63u	/* OSDMAP_POOL_NAME_MAX */
#define CAPS_PREFIX_MAX		255u

/* OSD access bits (what an op needs, what a clause grants). */
#define CAPS_R		0x1u
#define CAPS_W		0x2u
#define CAPS_X		0x4u	/* admin: scrub, repair, pg query */

struct osd_cap_clause {
	uint8_t access;			/* CAPS_R|CAPS_W|CAPS_X */
	bool any_pool;
	bool any_object;
	char pool[CAPS_POOL_MAX + 1];
	uint16_t prefix_len;
	char prefix[CAPS_PREFIX_MAX + 1];
};

struct osd_caps {
	uint32_t n;
	struct osd_cap_clause c[CAPS_CLAUSES_MAX];
};

/* 0 and *out, or -EINVAL with a sentence in err ("" parses to no
 * clause: nothing allowed). */
int caps_parse_osd(const char *s, struct osd_caps *out, char *err, size_t errlen);
/* Whether caps allow access (CAPS_* bits, all needed) to object oid
 * (oid_len bytes) of pool pool_name.  pool_name NULL: an op on no
 * particular pool (allowed by a clause without pool=). */
bool caps_osd_allows(const struct osd_caps *caps, const char *pool_name, const char *oid,
		     size_t oid_len, uint32_t access);

/* Monitor caps: what a clause grants. */
#define MON_CAP_R		0x01u	/* read: status, maps, subscriptions */
#define MON_CAP_W		0x02u	/* change the maps and pools */
#define MON_CAP_ALL		0x04u	/* allow * (or rwx): everything */
#define MON_CAP_OSD		0x08u	/* profile osd: boot, beacons, failures... */
#define MON_CAP_MDS		0x10u	/* profile mds: MDS beacons */
#define MON_CAP_BOOTSTRAP_OSD	0x20u	/* profile bootstrap-osd: OSD_NEW */
#define MON_CAP_BLOCKLIST	0x40u	/* profile blocklist: add/rm entries */

struct mon_caps {
	uint32_t grants;		/* MON_CAP_* the clauses give, expanded */
};

/* What a monitor command or message needs (one of these).  0 is no
 * declared need: only `allow *` passes it, so a table entry that forgot
 * its need is safe. */
enum mon_need {
	MON_NEED_UNSET = 0,
	MON_NEED_R,		/* reads: status, maps, subscribe */
	MON_NEED_W,		/* changes */
	MON_NEED_ALL,		/* auth and destructive commands */
	MON_NEED_OSD,		/* what OSDs send about themselves */
	MON_NEED_MDS,		/* MDS beacons */
	MON_NEED_BOOTSTRAP_OSD,	/* OSD_NEW */
	MON_NEED_BLOCKLIST,	/* blocklist add/rm */
};

int caps_parse_mon(const char *s, struct mon_caps *out, char *err, size_t errlen);
bool caps_mon_allows(const struct mon_caps *caps, enum mon_need need);
/* "r", "rw", "*", "profile osd", ...: the cap a need names in messages. */
const char *caps_mon_need_name(enum mon_need need);

#endif
