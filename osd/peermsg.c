/*
 * peermsg.c - what every handler of a message from another OSD does the
 * same way: the prologue (a malformed message is logged, answered and
 * dropped; one sent with a map newer than ours waits for it), the lookup
 * of the PG it is for in the sender's interval, and the plain {rc, epoch}
 * reply with its reading on the sender's side.
 *
 * The handlers (replication.c, peering.c, objcopy.c, recovery.c,
 * backfill.c) decode their own fronts; this file only holds what comes
 * after the decode, so that a change to the rules (how a peer's epoch is
 * waited for, what a malformed message gets) is made once.  Everything
 * runs on the messenger's loop thread.
 */
#include <errno.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "pg.h"

bool osd_peermsg_admit(struct osd *osd, struct msg_conn *c, struct msg *m, int bad,
		       uint64_t epoch, uint32_t pool, uint32_t pg, const char *subsys,
		       const char *what, uint16_t reply_type)
{
	if (bad) {
		log_warn(subsys, "malformed %s from %s: %s", what, msg_conn_addr(c),
			 strerror(-bad));
		if (reply_type)
			osd_peermsg_reply_rc(osd, c, m, reply_type, -EINVAL);
		msg_free(m);
		return false;
	}
	if (!osd->map || epoch > osd->map->epoch) {
		struct osd_mapwait_key k = { .epoch = epoch, .pool = pool, .pg = pg,
					     .reply_type = reply_type };

		osd_map_wait(osd, &k, c, m);
		return false;
	}
	return true;
}

struct pg *osd_peermsg_pg(struct osd *osd, uint32_t pool, uint32_t pgid, uint64_t sis, int *r)
{
	struct pg *pg = osd_pg_find(osd, pool, pgid);

	*r = 0;
	if (!pg || pg->info.same_interval_since != sis)
		*r = -ESTALE;
	else if (pg->reloading)
		*r = -EIO;
	return *r ? NULL : pg;
}

void osd_peermsg_reply_rc(struct osd *osd, struct msg_conn *c, const struct msg *req,
			  uint16_t type, int rc)
{
	osd_peermsg_reply_rc_at(c, req, type, rc, osd->map ? osd->map->epoch : 0);
}

void osd_peermsg_reply_rc_at(struct msg_conn *c, const struct msg *req, uint16_t type, int rc,
			     uint64_t epoch)
{
	struct rc_reply rr = { .rc = rc, .epoch = epoch };
	struct msg *m;
	struct enc e;

	enc_init(&e);
	rc_reply_encode(&rr, &e);
	m = msg_new(type, &e);
	enc_free(&e);
	if (m)
		msg_reply(c, req, m);
}

int osd_peermsg_rc_take(struct msg *reply, int err)
{
	struct rc_reply rr = { .rc = err };
	struct dec d;

	if (!reply)
		return err;
	dec_init(&d, reply->front, reply->front_len);
	if (rc_reply_decode(&d, &rr))
		rr.rc = -EBADMSG;
	msg_free(reply);
	return rr.rc;
}
