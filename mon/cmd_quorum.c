/*
 * cmd_quorum.c - "quorum status" (alias "mon stat"): the monitors, who
 * leads, the term, the commit and applied indexes, each member's lag and
 * what each member last said of its state (applied index, epoch and a
 * digest of the whole replicated state, equal on members at the same
 * epoch).  Answered by the leader, from its quorum view (quorum.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <raft.h>

#include "cmd.h"
#include "mono.h"

static const char *role_name(int role)
{
	switch (role) {
	case RAFT_LEADER: return "leader";
	case RAFT_CANDIDATE: return "candidate";
	case RAFT_FOLLOWER: return "follower";
	default: return "unavailable";
	}
}

int cmd_quorum_status(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct mon_qview *v = &mon->qv;
	const char *leader = "";
	uint64_t now = mono_now_ms();
	char dg[20];

	(void)a;
	for (uint32_t i = 0; i < v->nmembers; i++)
		if (v->members[i].id == v->leader_id)
			leader = v->members[i].name;
	if (o->json) {
		cJSON *ms = cJSON_AddArrayToObject(o->j, "members");

		cJSON_AddStringToObject(o->j, "leader", leader);
		cJSON_AddNumberToObject(o->j, "term", (double)v->term);
		cJSON_AddNumberToObject(o->j, "commit_index", (double)v->commit_index);
		cJSON_AddNumberToObject(o->j, "applied_index", (double)v->applied_index);
		cJSON_AddNumberToObject(o->j, "epoch", (double)mon->map->epoch);
		cJSON_AddNumberToObject(o->j, "incarnation", (double)mon_incarnation(mon));
		/* the map history this monitor keeps: first_epoch..epoch */
		cJSON_AddNumberToObject(o->j, "first_epoch",
					(double)mon_store_first_epoch(mon->store));
		cJSON_AddNumberToObject(o->j, "election_timeout_ms",
					(double)mon->opts.election_ms);
		for (uint32_t i = 0; i < v->nmembers; i++) {
			const struct mon_qmember *m = &v->members[i];
			cJSON *j = cJSON_CreateObject();

			cJSON_AddStringToObject(j, "name", m->name);
			cJSON_AddStringToObject(j, "addr", m->addr);
			cJSON_AddNumberToObject(j, "id", (double)m->id);
			cJSON_AddBoolToObject(j, "voter", m->voter);
			cJSON_AddStringToObject(j, "role", m->id == v->leader_id ? "leader" :
						m->voter ? "follower" : "non-voter");
			cJSON_AddNumberToObject(j, "match_index", (double)m->match);
			cJSON_AddNumberToObject(j, "lag", (double)(v->commit_index > m->match ?
								  v->commit_index - m->match : 0));
			cJSON_AddNumberToObject(j, "applied_index", (double)m->applied);
			cJSON_AddNumberToObject(j, "epoch", (double)m->epoch);
			snprintf(dg, sizeof(dg), "%016" PRIx64, m->digest);
			cJSON_AddStringToObject(j, "digest", dg);
			cJSON_AddNumberToObject(j, "status_age_ms", m->status_ms ?
						(double)(now - m->status_ms) : -1);
			cJSON_AddItemToArray(ms, j);
		}
		return 0;
	}
	fprintf(o->txt, "leader %s, term %llu, committed %llu, applied %llu, epoch %llu, "
		"incarnation %llu (this monitor: %s)\n", leader[0] ? leader : "(none)",
		(unsigned long long)v->term, (unsigned long long)v->commit_index,
		(unsigned long long)v->applied_index, (unsigned long long)mon->map->epoch,
		(unsigned long long)mon_incarnation(mon), role_name(v->role));
	fprintf(o->txt, "map history kept: epochs %llu..%llu\n",
		(unsigned long long)mon_store_first_epoch(mon->store),
		(unsigned long long)mon->map->epoch);
	fprintf(o->txt, "%-8s %-22s %3s %-9s %8s %5s %8s %7s %-16s\n", "NAME", "ADDR", "ID",
		"ROLE", "MATCH", "LAG", "APPLIED", "EPOCH", "DIGEST");
	for (uint32_t i = 0; i < v->nmembers; i++) {
		const struct mon_qmember *m = &v->members[i];

		fprintf(o->txt, "%-8s %-22s %3llu %-9s %8llu %5llu %8llu %7llu %016" PRIx64 "\n",
			m->name, m->addr, (unsigned long long)m->id,
			m->id == v->leader_id ? "leader" : m->voter ? "follower" : "non-voter",
			(unsigned long long)m->match,
			(unsigned long long)(v->commit_index > m->match ?
					     v->commit_index - m->match : 0),
			(unsigned long long)m->applied, (unsigned long long)m->epoch, m->digest);
	}
	return 0;
}
