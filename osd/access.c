/*
 * access.c - what a peer may ask of an OSD, in one place (doc/caps.md):
 * which peers may send each message type (osd_access_msg, from the
 * table below), what each sub-op of a client op needs (osd_subop_access)
 * and whether the caps of the peer's ticket allow an op
 * (osd_access_op) or an admin request (osd_access_admin).
 *
 * The caps of a connection are parsed once, at its first op, and cached
 * on it (msg_conn_cache_set).  A ticket's caps are fixed, so a cap
 * change or `auth rm` reaches an open connection by its ticket's end:
 * an op that arrives after the ticket expired (plus the clock skew)
 * closes the connection unanswered, the client redials with the ticket
 * it renewed at three quarters of the lifetime (with the caps of now)
 * and resends what was in flight.  With auth = none everything is
 * allowed, as before.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"
#include "log.h"
#include "mono.h"
#include "msg.h"
#include "msg_auth.h"
#include "osd.h"
#include "proto.h"

/* Refusals are logged at most once a second for each message type (a
 * peer can repeat them at will); the next line says how many were left
 * out.  Any thread. */
#define REFUSAL_KINDS	128u
static atomic_uint_least64_t refusal_next_ms[REFUSAL_KINDS];
static atomic_uint refusal_dropped[REFUSAL_KINDS];

static bool refusal_log(uint16_t type)
{
	unsigned int k = type % REFUSAL_KINDS, d;
	uint64_t now = mono_now_ms(), next = atomic_load(&refusal_next_ms[k]);

	if (now < next ||
	    !atomic_compare_exchange_strong(&refusal_next_ms[k], &next, now + 1000)) {
		atomic_fetch_add(&refusal_dropped[k], 1);
		return false;
	}
	d = atomic_exchange(&refusal_dropped[k], 0);
	if (d)
		log_warn("osd", "(and %u more refusals of message type %u in the last second, "
			 "left out)", d, type);
	return true;
}

/* Who may send a message type to an OSD. */
enum from {
	FROM_ANY,		/* anyone authenticated: the handler checks caps */
	FROM_OSD,		/* an osd.* of this cluster */
	FROM_OUR_MON,		/* a monitor of the session we dialled */
};

static const struct {
	uint16_t type;
	enum from from;
} msg_table[] = {
	{ MT_MON_MAP, FROM_OUR_MON },
	{ MT_OSD_OP, FROM_ANY },	/* osd_access_op */
	{ MT_REP_OP, FROM_OSD },
	{ MT_OSD_PING, FROM_OSD },
	{ MT_PG_QUERY, FROM_OSD },
	{ MT_PG_LOG, FROM_OSD },
	{ MT_PG_PUSH, FROM_OSD },
	{ MT_PG_SCAN, FROM_OSD },
	{ MT_PG_SCRUB, FROM_OSD },
	{ MT_OSD_SCRUB, FROM_ANY },	/* osd_access_admin */
	{ MT_OSD_PG_QUERY, FROM_ANY },	/* osd_access_admin */
};

/* What each sub-op needs, indexed by its code (doc/caps.md). */
static const uint8_t subop_access[] = {
	[OSD_OP_READ] = CAPS_R,
	[OSD_OP_STAT] = CAPS_R,
	[OSD_OP_WRITE] = CAPS_W,
	[OSD_OP_WRITE_FULL] = CAPS_W,
	[OSD_OP_APPEND] = CAPS_W,
	[OSD_OP_TRUNCATE] = CAPS_W,
	[OSD_OP_ZERO] = CAPS_W,
	[OSD_OP_REMOVE] = CAPS_W,
	[OSD_OP_CREATE] = CAPS_W,
	[OSD_OP_GETXATTR] = CAPS_R,
	[OSD_OP_GETXATTRS] = CAPS_R,
	[OSD_OP_SETXATTR] = CAPS_W,
	[OSD_OP_RMXATTR] = CAPS_W,
	[OSD_OP_CMPXATTR] = CAPS_R,
	[OSD_OP_ASSERT_VERSION] = CAPS_R,
	[OSD_OP_ASSERT_EXISTS] = CAPS_R,
	[OSD_OP_OMAP_GET] = CAPS_R,
	[OSD_OP_OMAP_GET_KEYS] = CAPS_R,
	[OSD_OP_OMAP_SET] = CAPS_W,
	[OSD_OP_OMAP_RM] = CAPS_W,
	[OSD_OP_OMAP_CLEAR] = CAPS_W,
	[OSD_OP_LIST] = CAPS_R,
};

uint32_t osd_subop_access(uint16_t code)
{
	if (code >= sizeof(subop_access) || !subop_access[code])
		return CAPS_R | CAPS_W | CAPS_X;	/* unknown: only allow * */
	return subop_access[code];
}

static bool is_osd_peer(struct msg_conn *c)
{
	const char *entity = msg_conn_entity(c);

	/* entity "" : auth none, or a connection we dialled (the peer
	 * proved the OSD service secret) */
	return msg_conn_peer(c).type == MSG_ENTITY_OSD &&
	       (!*entity || !strncmp(entity, "osd.", 4));
}

/* A peer taken without authentication while it is being turned on
 * (auth_allow_none): treated as with auth = none. */
static bool open_access(struct osd *osd, struct msg_conn *c)
{
	return !osd->auth_on || !msg_conn_authenticated(c);
}

bool osd_access_msg(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	size_t i;
	bool ok;

	for (i = 0; i < sizeof(msg_table) / sizeof(msg_table[0]); i++)
		if (msg_table[i].type == m->type)
			break;
	if (i == sizeof(msg_table) / sizeof(msg_table[0])) {
		/* a type without a row: nobody may send it (with auth; without,
		 * osd_dispatch ignores it) */
		if (open_access(osd, c))
			return true;
		if (refusal_log(m->type))
			log_warn("osd", "message of type %u from %s ('%s') refused: no OSD "
				 "takes it", m->type, msg_conn_addr(c), msg_conn_entity(c));
		msg_free(m);
		return false;
	}
	switch (msg_table[i].from) {
	case FROM_ANY:
		ok = true;
		break;
	case FROM_OSD:
		ok = is_osd_peer(c);
		break;
	case FROM_OUR_MON:
	default:
		ok = monc_owns(osd->monc, c);
		break;
	}
	if (!ok && refusal_log(m->type)) {
		const char *entity = msg_conn_entity(c);

		log_warn("osd", "message of type %u from %s ('%s') refused: only %s send it",
			 m->type, msg_conn_addr(c), *entity ? entity : "unauthenticated",
			 msg_table[i].from == FROM_OSD ? "OSDs of this cluster" :
			 "the monitors this OSD dialled");
	}
	if (!ok)
		msg_free(m);
	return ok;
}

/* The parsed caps of c's ticket, parsed at the first call; NULL when they
 * do not parse (logged once: nothing is allowed). */
static const struct osd_caps *conn_caps(struct msg_conn *c)
{
	static const struct osd_caps none;
	struct osd_caps *p = msg_conn_cache(c), *won;
	char err[256];

	if (p)
		return p;
	p = malloc(sizeof(*p));
	if (!p)
		return NULL;
	if (caps_parse_osd(msg_conn_caps(c), p, err, sizeof(err)) < 0) {
		log_warn("osd", "the osd caps of '%s' (%s) do not parse: %s; it may do nothing",
			 msg_conn_entity(c), msg_conn_addr(c), err);
		/* cache the empty set: nothing allowed, logged once */
		*p = none;
	}
	won = msg_conn_cache_set(c, p, free);
	if (won != p)
		free(p);
	return won;
}

/* true when c's ticket has expired beyond the skew: c is closed. */
static bool expired(struct osd *osd, struct msg_conn *c)
{
	uint64_t exp = msg_conn_auth_expires(c);

	if (!exp || msg_auth_now(osd->auth) <= exp + msg_auth_skew(osd->auth))
		return false;
	log_info("osd", "closing the connection of '%s' (%s): its ticket expired; it "
		 "redials with a fresh one", msg_conn_entity(c), msg_conn_addr(c));
	msg_conn_close(c);
	return true;
}

int osd_access_op(struct osd *osd, struct msg_conn *c, const struct osd_op_req *req,
		  const char *pool_name)
{
	const struct osd_caps *caps;
	uint32_t need = 0;

	if (open_access(osd, c) || is_osd_peer(c))
		return 0;
	if (expired(osd, c))
		return -ECONNRESET;
	for (uint32_t i = 0; i < req->nops; i++)
		need |= osd_subop_access(req->ops[i].code);
	caps = conn_caps(c);
	if (!caps)
		return -ENOMEM;
	if (caps_osd_allows(caps, pool_name, req->nops == 1 && req->ops[0].code == OSD_OP_LIST ?
			    NULL : req->oid, req->oid_len, need))
		return 0;
	if (refusal_log(MT_OSD_OP))
		log_warn("ops", "op on '%.*s' in pool '%s' from '%s' (%s) refused: its osd caps "
			 "'%s' do not allow %s%s%s", (int)(req->oid_len > 64 ? 64 : req->oid_len),
			 req->oid ? req->oid : "", pool_name, msg_conn_entity(c),
			 msg_conn_addr(c), msg_conn_caps(c), need & CAPS_R ? "r" : "",
			 need & CAPS_W ? "w" : "", need & CAPS_X ? "x" : "");
	return -EPERM;
}

int osd_access_admin(struct osd *osd, struct msg_conn *c, uint16_t type, uint32_t pool)
{
	const struct osdmap_pool *p = osd->map ? osdmap_pool(osd->map, pool) : NULL;
	const struct osd_caps *caps;

	if (open_access(osd, c) || is_osd_peer(c))
		return 0;
	if (expired(osd, c))
		return -ECONNRESET;
	caps = conn_caps(c);
	if (!caps)
		return -ENOMEM;
	if (caps_osd_allows(caps, p ? p->name : NULL, NULL, 0, CAPS_X))
		return 0;
	if (refusal_log(type))
		log_warn("osd", "admin request from '%s' (%s) refused: its osd caps '%s' lack "
			 "'x' (allow rwx or allow *)", msg_conn_entity(c), msg_conn_addr(c),
			 msg_conn_caps(c));
	return -EPERM;
}
