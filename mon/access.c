/*
 * access.c - what an authenticated peer may send to a monitor, in one
 * place (doc/caps.md): the table below gives, for every message type,
 * the monitor cap it needs; commands need what their entry in
 * commands.c's table says (mon_access_command).  With auth = none
 * everything is allowed, as before.
 *
 * The caps are looked up (mon_auth_caps) and parsed for each message:
 * they are a few dozen bytes, messages to a monitor are few, and a cap
 * change or `auth rm` then applies to the very next message of an open
 * session.  Who may speak for which OSD (osd.N's boot only from osd.N)
 * is osdmon.c's from_osd(), on the proved identity.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "caps.h"
#include "encode.h"
#include "log.h"
#include "mon.h"
#include "mono.h"
#include "msg.h"
#include "proto.h"

/* The refusal a request gets (one-way messages get none). */
enum refusal { RF_NONE, RF_OSD_NEW, RF_OSD_BOOT, RF_RC };

static const struct {
	uint16_t type;
	const char *name;
	enum mon_need need;
	enum refusal refusal;
} msg_table[] = {
	{ MT_MON_SUBSCRIBE, "MON_SUBSCRIBE", MON_NEED_R, RF_NONE },
	{ MT_MON_COMMAND, "MON_COMMAND", MON_NEED_R, RF_NONE },	/* + the command's */
	{ MT_OSD_NEW, "OSD_NEW", MON_NEED_BOOTSTRAP_OSD, RF_OSD_NEW },
	{ MT_OSD_BOOT, "OSD_BOOT", MON_NEED_OSD, RF_OSD_BOOT },
	{ MT_OSD_BEACON, "OSD_BEACON", MON_NEED_OSD, RF_NONE },
	{ MT_OSD_FAILURE, "OSD_FAILURE", MON_NEED_OSD, RF_NONE },
	{ MT_OSD_STOPPING, "OSD_STOPPING", MON_NEED_OSD, RF_RC },
	{ MT_OSD_PG_TEMP, "OSD_PG_TEMP", MON_NEED_OSD, RF_NONE },
	{ MT_MDS_BEACON, "MDS_BEACON", MON_NEED_MDS, RF_RC },
};

/* Refusals are logged at most once a second for each message type (a
 * peer can repeat them at will); the next line says how many were left
 * out.  The monitor thread only. */
#define REFUSAL_KINDS	128u

bool mon_access_refusal_log(uint16_t type)
{
	static uint64_t next_ms[REFUSAL_KINDS];
	static uint32_t dropped[REFUSAL_KINDS];
	unsigned int k = type % REFUSAL_KINDS;
	uint64_t now = mono_now_ms();

	if (now < next_ms[k]) {
		dropped[k]++;
		return false;
	}
	next_ms[k] = now + 1000;
	if (dropped[k])
		log_warn("mon", "(and %u more refusals of message type %u in the last "
			 "second, left out)", dropped[k], type);
	dropped[k] = 0;
	return true;
}

int mon_access_check(struct mon *mon, struct msg_conn *c, enum mon_need need, char *why,
		     size_t whylen)
{
	const char *entity = msg_conn_entity(c);
	char caps[CAPS_STR_MAX + 1], err[256];
	struct mon_caps mc;
	int r;

	/* auth = none, or a peer taken without authentication while it is
	 * being turned on (auth_allow_none): as with auth = none */
	if (!mon->auth || !msg_conn_authenticated(c))
		return 0;
	if (!*entity) {
		snprintf(why, whylen, "the connection is not authenticated");
		return -EACCES;
	}
	r = mon_auth_caps(mon, entity, "mon", caps, sizeof(caps));
	if (r == -ENOENT) {
		snprintf(why, whylen, "entity '%s' no longer exists", entity);
		return -EACCES;
	}
	if (r < 0 || caps_parse_mon(caps, &mc, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "the mon caps of '%s' do not parse (%s)", entity,
			 r < 0 ? strerror(-r) : err);
		return -EACCES;
	}
	if (!caps_mon_allows(&mc, need)) {
		snprintf(why, whylen, "'%s' lacks the mon cap '%s' (it has '%s'); grant it "
			 "with: atoll auth caps %s mon '%s'", entity, caps_mon_need_name(need),
			 caps, entity, caps_mon_need_name(need));
		return -EACCES;
	}
	return 0;
}

static void refuse(struct msg *m, enum refusal rf, int rc, const char *why)
{
	struct enc e;
	struct msg *r;

	if (rf == RF_NONE)
		return;
	enc_init(&e);
	if (rf == RF_OSD_NEW) {
		struct osd_new_reply rep = { .rc = rc, .id = -1 };

		osd_new_reply_encode(&rep, &e);
	} else if (rf == RF_OSD_BOOT) {
		struct osd_boot_reply rep = { .rc = rc };

		/* the status sentence, cut to what a boot reply carries */
		snprintf(rep.status, sizeof(rep.status), "%.*s", (int)sizeof(rep.status) - 1, why);
		osd_boot_reply_encode(&rep, &e);
	} else {
		struct rc_reply rep = { .rc = rc };

		rc_reply_encode(&rep, &e);
	}
	r = msg_new(m->type, &e);
	enc_free(&e);
	if (r)
		msg_reply(m->conn, m, r);
}

bool mon_access_msg(struct mon *mon, struct msg *m)
{
	char why[512];
	size_t i;

	for (i = 0; i < sizeof(msg_table) / sizeof(msg_table[0]); i++)
		if (msg_table[i].type == m->type)
			break;
	if (i == sizeof(msg_table) / sizeof(msg_table[0])) {
		if (!mon->auth)
			return true;	/* handle_msg logs the unknown type */
		if (mon_access_refusal_log(m->type))
			log_warn("mon", "message of type %u from %s refused: no monitor takes "
				 "it", m->type, msg_conn_addr(m->conn));
		msg_free(m);
		return false;
	}
	if (mon_access_check(mon, m->conn, msg_table[i].need, why, sizeof(why)) == 0)
		return true;
	if (mon_access_refusal_log(m->type))
		log_warn("mon", "%s from %s refused: %s", msg_table[i].name,
			 msg_conn_addr(m->conn), why);
	refuse(m, msg_table[i].refusal, -EACCES, why);
	msg_free(m);
	return false;
}
