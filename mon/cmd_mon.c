/*
 * cmd_mon.c - membership at run time: "mon add NAME ADDR" and
 * "mon rm NAME", through the replicated log, one change at a time.
 *
 * A new member joins as a non-voter (it replicates the log but does not
 * count for the majority) and is promoted to voter once libraft saw it
 * catch up; until then it cannot slow the quorum down.  Its raft id is
 * mon_member_id(NAME), so the new monitor's --mkfs --join and this
 * command agree on it without a round trip.  Removing the leader hands
 * leadership to another voter first; the command is then answered with a
 * MONMAP and the client sends it again to the new leader, which removes
 * the old one.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "log.h"
#include "msg.h"

static const struct mon_qmember *find_member(struct mon *mon, const char *name)
{
	for (uint32_t i = 0; i < mon->qv.nmembers; i++)
		if (!strcmp(mon->qv.members[i].name, name))
			return &mon->qv.members[i];
	return NULL;
}

int cmd_mon_add(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct mon_qmember *m;
	const char *name, *addr;
	char ip[64];
	uint16_t port;
	uint64_t id;
	int r;

	if (cmd_arg_str(a, "name", true, &name, o) < 0 ||
	    cmd_arg_str(a, "addr", true, &addr, o) < 0)
		return o->rc;
	if (!mon_name_ok(name))
		return cmd_fail(o, -EINVAL, "monitor name '%s' is not 1 to %d of [A-Za-z0-9_-]",
				name, MONMAP_NAME_MAX);
	if (msg_parse_addr(addr, ip, sizeof(ip), &port) < 0 || port == 0 ||
	    strlen(addr) > OSDMAP_ADDR_MAX)
		return cmd_fail(o, -EINVAL, "'%s' is not IP:PORT", addr);
	id = mon_member_id(name);
	m = find_member(mon, name);
	if (m && m->voter)
		return cmd_fail(o, -EEXIST, "mon.%s is already a member (at %s)", name, m->addr);
	if (m && strcmp(m->addr, addr) != 0)
		return cmd_fail(o, -EEXIST, "mon.%s is joining at %s, not %s; remove it first "
				"with: atoll mon rm %s", name, m->addr, addr, name);
	for (uint32_t i = 0; i < mon->qv.nmembers; i++)
		if (!strcmp(mon->qv.members[i].addr, addr) && mon->qv.members[i].id != id)
			return cmd_fail(o, -EEXIST, "mon.%s already uses %s",
					mon->qv.members[i].name, addr);
	if (mon->qv.nmembers >= MONMAP_MONS_MAX && !m)
		return cmd_fail(o, -ENOSPC, "the quorum has %d monitors, the most it can have",
				MONMAP_MONS_MAX);
	if (!m) {
		r = mon_quorum_member(mon, MON_MEMBER_ADD, id, name, addr);
		if (r < 0)
			return cmd_fail(o, r, "cannot add mon.%s: %s", name,
					r == -EBUSY ? "another membership change is under way; "
					"retry" : strerror(-r));
		log_info("mon", "mon.%s (raft id %llu) at %s added as a non-voter", name,
			 (unsigned long long)id, addr);
	}
	r = mon_quorum_member(mon, MON_MEMBER_STANDBY, id, NULL, NULL);
	if (r < 0 && r != -EINVAL)
		return cmd_fail(o, r, "cannot make mon.%s a non-voter: %s", name, strerror(-r));
	r = mon_quorum_member(mon, MON_MEMBER_PROMOTE, id, NULL, NULL);
	if (r < 0)
		return cmd_fail(o, r, "mon.%s is a non-voter but was not promoted: %s; start it "
				"(atoll-mon --mkfs --data DIR --name %s --fsid FSID --addr %s "
				"--join, then atoll-mon --data DIR) and run this command again",
				name, r == -ETIMEDOUT ? "it did not catch up with the log" :
				strerror(-r), name, addr);
	log_info("mon", "mon.%s is a voter", name);
	cmd_say(o, "mon.%s (raft id %llu) at %s is a voting member", name,
		(unsigned long long)id, addr);
	if (o->json)
		cJSON_AddNumberToObject(o->j, "id", (double)id);
	else
		fprintf(o->txt, "mon.%s id %llu\n", name, (unsigned long long)id);
	return 0;
}

int cmd_mon_rm(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct mon_qmember *m;
	const char *name;
	uint32_t voters = 0;
	uint64_t id;
	int r;

	if (cmd_arg_str(a, "name", true, &name, o) < 0)
		return o->rc;
	m = find_member(mon, name);
	if (!m)
		return cmd_fail(o, -ENOENT, "mon.%s is not a member; see: atoll quorum status",
				name);
	for (uint32_t i = 0; i < mon->qv.nmembers; i++)
		voters += mon->qv.members[i].voter;
	if (m->voter && voters == 1)
		return cmd_fail(o, -EBUSY, "mon.%s is the last voting member", name);
	id = m->id;
	if (id == mon->self.id) {
		/* the leader goes last: it stops serving, hands over, and the
		 * client resends to the new leader (doc/quorum.md) */
		log_info("mon", "mon.%s to be removed: handing leadership over", name);
		mon->qv.ready = false;
		mon->qv.changed = true;
		r = mon_quorum_member(mon, MON_MEMBER_TRANSFER, 0, NULL, NULL);
		if (mon->qv.role == RAFT_LEADER_STATE && mon->qv.leader_id == mon->self.id) {
			/* nobody took over: serve again */
			mon->qv.ready = true;
			return cmd_fail(o, -EAGAIN, "no other voter took over the leadership "
					"(%s); retry", r < 0 ? strerror(-r) : "timed out");
		}
		return MON_ENOTLEADER;
	}
	r = mon_quorum_member(mon, MON_MEMBER_REMOVE, id, NULL, NULL);
	if (r < 0)
		return cmd_fail(o, r, "cannot remove mon.%s: %s", name,
				r == -EBUSY ? "another membership change is under way; retry" :
				strerror(-r));
	log_info("mon", "mon.%s removed", name);
	cmd_say(o, "mon.%s removed; stop it and remove its folder", name);
	return 0;
}
