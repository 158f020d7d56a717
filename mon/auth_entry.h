/*
 * auth_entry.h - the replicated bytes of the monitors' auth state
 * (doc/security.md, "The monitors' state"): the auth log entries and the
 * auth section of a snapshot.  Pure encoders and bounds-checked decoders
 * (auth_entry.c), in the mon_entry library so that tests/fuzz and
 * tests/unit link them alone.
 */
#ifndef ATOLL_MON_AUTH_ENTRY_H
#define ATOLL_MON_AUTH_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"

struct enc;

/* Auth entries (each carries every byte it sets: the leader drew the
 * keys, the secrets and the time; applying reads no clock, no random). */
enum {
	MON_AUTH_PUT = 1,	/* entities: set key and caps (add, caps, rotate) */
	MON_AUTH_RM = 2,	/* one entity removed */
	MON_AUTH_BOOT = 3,	/* the first state: imported entities, id key */
	MON_AUTH_IDRANGE = 4,	/* client ids reserved for one monitor */
	MON_AUTH_SECRET = 5,	/* a new service secret */
};

#define MON_AUTH_RANGES_MAX	16u	/* monitors holding a range (MONMAP_MONS_MAX) */
#define MON_AUTH_GENS		3u	/* previous, current, next */
#define MON_AUTH_SVCS		2u	/* [0] osd, [1] mds */
#define MON_AUTH_PREV_MAX	64u	/* rotated keys still accepted */
/* Client ids are seq << 31 | 31-bit tag, at most INT64_MAX: seq has 32 bits. */
#define MON_AUTH_SEQ_MAX	((1ull << 32) - 1)

struct mon_auth_range {
	uint64_t member;		/* the monitor's raft id (> 0) */
	uint64_t first, end;		/* its ids' seqs: first..end-1 */
	uint64_t at;			/* wall-clock seconds (the leader's) it was made */
};

struct mon_auth_gen {
	uint64_t gen;			/* > 0 */
	uint64_t start;			/* wall-clock seconds (the leader's) */
	uint8_t key[AUTH_KEY_LEN];
};

struct mon_auth_svc {
	uint32_t n;			/* oldest first */
	struct mon_auth_gen g[MON_AUTH_GENS];
};

/* A key replaced by a rotation, accepted until `until` (wall-clock
 * seconds) so that a program that read the old keyring just before the
 * new one was written still logs in. */
struct mon_auth_prev {
	char name[AUTH_NAME_MAX + 1];
	uint8_t key[AUTH_KEY_LEN];
	uint64_t until;
};

struct mon_auth_entry {
	uint8_t op;			/* MON_AUTH_* */
	struct keyring ents;		/* PUT, BOOT (owned: mon_auth_entry_clear) */
	/* PUT: the leader's time, and until when the replaced keys of ents
	 * stay accepted (0: they do not: caps or a new entity) */
	uint64_t now, prev_until;
	/* PUT, RM: the request id of the command ({0, 0}: none) */
	uint64_t client, seq;
	char name[AUTH_NAME_MAX + 1];	/* RM */
	uint8_t idkey[AUTH_KEY_LEN];	/* BOOT: the key of client id tags */
	struct mon_auth_range range;	/* IDRANGE */
	uint8_t service;		/* SECRET: AUTH_SVC_OSD or AUTH_SVC_MDS */
	struct mon_auth_gen secret;	/* SECRET */
};

/* The whole auth state (a snapshot's auth section). */
struct mon_auth_state {
	bool booted;			/* the BOOT entry was applied */
	uint8_t idkey[AUTH_KEY_LEN];
	uint64_t id_next;		/* the first seq no range holds */
	uint32_t nranges;
	struct mon_auth_range ranges[MON_AUTH_RANGES_MAX];
	struct mon_auth_svc svc[MON_AUTH_SVCS];
	struct keyring ents;		/* every entity but mon. */
	uint32_t nprev;			/* oldest first */
	struct mon_auth_prev prev[MON_AUTH_PREV_MAX];
};

void mon_auth_entry_encode(const struct mon_auth_entry *e, struct enc *out);
/* 1 and *e for an auth entry; 0: not one (another entry type); -EBADMSG:
 * one, malformed.  e->ents is the caller's to mon_auth_entry_clear() in
 * every case.  Trailing bytes (the log's padding) are ignored. */
int mon_auth_entry_decode(const void *buf, size_t len, struct mon_auth_entry *e);
void mon_auth_entry_clear(struct mon_auth_entry *e);

void mon_auth_state_encode(const struct mon_auth_state *s, struct enc *out);
/* 1 and *s when buf starts with an auth section; 0: it does not (a
 * snapshot from before, *s empty); -EBADMSG: malformed.  s->ents is the
 * caller's to keyring_free() in every case. */
int mon_auth_state_decode(const void *buf, size_t len, struct mon_auth_state *s);

#endif
