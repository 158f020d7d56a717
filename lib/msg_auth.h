/*
 * msg_auth.h - authentication in the messenger's handshake
 * (doc/security.md, "The handshake").
 *
 * An upper layer that runs with `auth = ticket` makes one struct
 * msg_auth, fills it with what its entity holds, and passes it in
 * msgr_config.auth; the messenger then opens a connection only after
 * both ends proved themselves, and msg_conn_peer() returns the
 * authenticated identity.  Without it (auth = none) nothing changes.
 *
 * What each role fills:
 *   every entity    its name and key (msg_auth_new)
 *   a monitor       msg_auth_set_key_lookup: entity name -> key, and
 *                   msg_auth_set_issuer: the client id, tickets and
 *                   service secrets sealed into the reply of a key proof
 *   an OSD / MDS    its service's secrets: from a monitor's reply, or
 *                   msg_auth_set_secrets
 *   a dialler       nothing more: the tickets of the monitor's reply are
 *                   kept here and presented to OSDs and MDSs
 *
 * Threads: the loop thread reads a msg_auth during handshakes; every
 * function here is safe from any thread (one mutex).  The msg_auth must
 * outlive every messenger that uses it.
 */
#ifndef ATOLL_MSG_AUTH_H
#define ATOLL_MSG_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "auth.h"

struct msg_auth;

/* A monitor's lookup: 0 and the entity's key, or -ENOENT. */
typedef int (*msg_auth_lookup_fn)(void *arg, const char *entity,
				  uint8_t key[AUTH_KEY_LEN]);
/* A monitor's issuer, after entity proved its key: fills r (client id,
 * grants with malloc'ed sealed tickets, which the messenger frees, and
 * a daemon's service secrets).  want_id is the client id the entity
 * had before (0: none), which the issuer keeps when it did assign it to
 * that entity.  0 or a negative errno (refused). */
typedef int (*msg_auth_issue_fn)(void *arg, const char *entity, uint64_t want_id,
				 uint64_t now, struct auth_reply *r);

/* NULL on ENOMEM or an invalid entity name. */
struct msg_auth *msg_auth_new(const char *entity, const uint8_t key[AUTH_KEY_LEN]);
void msg_auth_free(struct msg_auth *a);
const char *msg_auth_entity(const struct msg_auth *a);
void msg_auth_set_key_lookup(struct msg_auth *a, msg_auth_lookup_fn fn, void *arg);
/* A monitor's second lookup (same arg as the first): the key an entity
 * had before a rotation, while it is still accepted; tried when a proof
 * does not verify with the current key. */
void msg_auth_set_prev_lookup(struct msg_auth *a, msg_auth_lookup_fn fn);
void msg_auth_set_issuer(struct msg_auth *a, msg_auth_issue_fn fn, void *arg);
/* Replaces the service secrets this daemon accepts tickets with. */
void msg_auth_set_secrets(struct msg_auth *a, const struct auth_secrets *s);
/* Keeps a ticket (copied) for service; replaces the older one. */
int msg_auth_set_ticket(struct msg_auth *a, const struct auth_grant *g, uint64_t client_id);
/* The client id the monitors assigned (0 before the first reply). */
uint64_t msg_auth_client_id(const struct msg_auth *a);
/* Before the first login: ask the monitors for client id id (one they
 * gave this entity on another session), so that two sessions of one
 * process (atoll-fuse's cluster handle and its MDS messenger) are one
 * client.  Nothing when a is logged in already. */
void msg_auth_want_client_id(struct msg_auth *a, uint64_t id);
/* Turning authentication on (auth_allow_none): a peer whose hello
 * carries no auth section is taken as with auth = none (its declared
 * identity, no caps checked by the messenger), dialled or accepted;
 * a peer that authenticates still must succeed. */
void msg_auth_set_allow_none(struct msg_auth *a, bool allow);
bool msg_auth_allows_none(const struct msg_auth *a);
/* Seconds of clock skew tolerated (default 30), and an offset added to
 * this process's wall clock (tests of skew). */
void msg_auth_set_skew(struct msg_auth *a, uint32_t skew);
void msg_auth_set_clock_offset(struct msg_auth *a, int64_t offset);
uint32_t msg_auth_skew(const struct msg_auth *a);
uint64_t msg_auth_now(const struct msg_auth *a);
/* This process's wall clock in milliseconds with the offset above: what
 * a daemon reports in its beacons (CLOCK_SKEW).  a may be NULL (auth =
 * none: no offset). */
uint64_t msg_auth_wall_ms(const struct msg_auth *a);

/* Wire modes (doc/messenger.md, "Secure mode").  Each class of
 * connection has a policy: the AUTH_MODE_* it allows, AUTH_MODE_CRC
 * ("crc"), AUTH_MODE_SECURE ("secure") or both ("prefer-secure": secure
 * whenever the other end allows it).  A connection with a monitor at
 * either end is of class MON; else one with a client at either end is
 * of class CLIENT; else (daemon to daemon) CLUSTER.  Defaults: MON
 * secure, CLIENT and CLUSTER crc.  A dialler that shares no mode with
 * its peer fails its attempt with -ENOPROTOOPT (ops.closed). */
enum msg_mode_class {
	MSG_MODE_MON = 0,
	MSG_MODE_CLIENT = 1,
	MSG_MODE_CLUSTER = 2,
	MSG_MODE_CLASSES = 3,
};
/* -EINVAL unless modes is AUTH_MODE_CRC, AUTH_MODE_SECURE or both. */
int msg_auth_set_modes(struct msg_auth *a, enum msg_mode_class cls, uint32_t modes);
uint32_t msg_auth_modes(const struct msg_auth *a, enum msg_mode_class cls);
/* "crc", "secure", "prefer-secure" -> a policy; -EINVAL for anything else. */
int msg_mode_parse(const char *s, uint32_t *modes);
/* The policy's name ("crc", "secure", "prefer-secure"; "?" otherwise). */
const char *msg_mode_name(uint32_t modes);

/* For issuers: a fresh session key and a ticket for entity sealed with
 * secret, as grant g (g->ticket malloc'ed). */
int msg_auth_make_grant(const struct auth_secret *secret, uint8_t service,
			const char *entity, uint64_t client_id, const char *caps,
			uint64_t now, uint32_t ttl, struct auth_grant *g);

#endif
