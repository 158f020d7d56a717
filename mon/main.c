/*
 * main.c - atoll-mon: options, start-up (--mkfs, --restore, run), signals,
 * and the monitor thread's event loop.
 *
 * The messenger's loop thread only queues what arrives (mon_post); the
 * main thread drains the queue and runs every handler, plus a periodic
 * tick (failure detection).  One thread owning all monitor state keeps
 * the map, its store and the statistics free of locks, and lets a map
 * change block on its fsync without stalling the network loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atoll/atoll.h"
#include "config.h"
#include "deadline.h"
#include "encode.h"
#include "log.h"
#include "mon.h"
#include "mon_metrics.h"
#include "dashboard.h"
#include "msg.h"
#include "msg_auth.h"
#include "msg_config.h"
#include "privdrop.h"

#define WHO "mon"

static volatile sig_atomic_t g_stop;

/* ---- small utilities shared by mon/ -------------------------------- */

uint64_t mon_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void mon_uuid_format(const uint8_t u[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	int k = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[k++] = '-';
		out[k++] = hex[u[i] >> 4];
		out[k++] = hex[u[i] & 15];
	}
	out[k] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int mon_uuid_parse(const char *s, uint8_t u[16])
{
	int n = 0;

	for (const char *p = s; *p; p++) {
		int hi, lo;

		if (*p == '-')
			continue;
		if (n == 16 || (hi = hexval(p[0])) < 0 || (lo = hexval(p[1])) < 0)
			return -EINVAL;
		u[n++] = (uint8_t)(hi << 4 | lo);
		p++;
	}
	return n == 16 ? 0 : -EINVAL;
}

/* ---- options -------------------------------------------------------- */

int mon_opts_load(const struct config *cfg, struct mon_opts *o, char *err, size_t errlen)
{
	double nf, bf, ff;
	int64_t v;
	int r;

	memset(o, 0, sizeof(*o));
	if ((r = config_get_duration_ms(cfg, WHO, "osd_heartbeat_grace", 20000,
					&o->heartbeat_grace_ms, err, errlen)) < 0 ||
	    (r = config_get_duration_ms(cfg, WHO, "mon_osd_down_out_interval", 600000,
					&o->down_out_interval_ms, err, errlen)) < 0 ||
	    (r = config_get_duration_ms(cfg, WHO, "osd_op_complaint_time", 30000,
					&o->op_complaint_ms, err, errlen)) < 0)
		return r;
	if ((r = config_get_int(cfg, WHO, "mon_osd_min_down_reporters", 2, 1, 1000, &v,
				err, errlen)) < 0)
		return r;
	o->min_down_reporters = (uint32_t)v;
	if ((r = config_get_double(cfg, WHO, "mon_osd_nearfull_ratio", 0.85, 0, 1, &nf,
				   err, errlen)) < 0 ||
	    (r = config_get_double(cfg, WHO, "mon_osd_backfillfull_ratio", 0.90, 0, 1, &bf,
				   err, errlen)) < 0 ||
	    (r = config_get_double(cfg, WHO, "mon_osd_full_ratio", 0.95, 0, 1, &ff,
				   err, errlen)) < 0)
		return r;
	if (!(nf <= bf && bf <= ff)) {
		snprintf(err, errlen, "the capacity ratios must grow: nearfull %.2f <= "
			 "backfillfull %.2f <= full %.2f", nf, bf, ff);
		return -EINVAL;
	}
	o->nearfull_ratio = (uint32_t)(nf * 10000 + 0.5);
	o->backfillfull_ratio = (uint32_t)(bf * 10000 + 0.5);
	o->full_ratio = (uint32_t)(ff * 10000 + 0.5);
	if ((r = config_get_int(cfg, WHO, "osd_pool_default_size", 3, 1, OSDMAP_SIZE_MAX,
				&v, err, errlen)) < 0)
		return r;
	o->pool_default_size = (uint32_t)v;
	if ((r = config_get_int(cfg, WHO, "osd_pool_default_min_size", 0, 0,
				OSDMAP_SIZE_MAX, &v, err, errlen)) < 0)
		return r;
	o->pool_default_min_size = (uint32_t)v;
	if (o->pool_default_min_size > o->pool_default_size) {
		snprintf(err, errlen, "osd_pool_default_min_size %u is larger than "
			 "osd_pool_default_size %u", o->pool_default_min_size,
			 o->pool_default_size);
		return -EINVAL;
	}
	if ((r = config_get_int(cfg, WHO, "osd_pool_default_pg_num", 64, 1, OSDMAP_PG_MAX,
				&v, err, errlen)) < 0)
		return r;
	o->pool_default_pg_num = (uint32_t)v;
	/* An OSD serves client ops only under a lease, which must run out
	 * before the grace after which a silent OSD is marked down. */
	if ((r = config_get_duration_ms(cfg, WHO, "osd_lease", o->heartbeat_grace_ms / 2,
					&o->lease_ms, err, errlen)) < 0)
		return r;
	if (o->lease_ms == 0 || o->lease_ms >= o->heartbeat_grace_ms ||
	    o->lease_ms > UINT32_MAX) {
		snprintf(err, errlen, "osd_lease (%llu ms) must be more than 0 and less than "
			 "osd_heartbeat_grace (%llu ms); leave it unset for half the grace",
			 (unsigned long long)o->lease_ms,
			 (unsigned long long)o->heartbeat_grace_ms);
		return -EINVAL;
	}
	/* An election timeout short enough that a leader's death stalls map
	 * changes for well under 3 s (doc/quorum.md), long enough that a
	 * loaded host does not start needless elections. */
	if ((r = config_get_duration_ms(cfg, WHO, "mon_election_timeout", 1000,
					&o->election_ms, err, errlen)) < 0)
		return r;
	if (o->election_ms < 100 || o->election_ms > 60000) {
		snprintf(err, errlen, "mon_election_timeout (%llu ms) must be from 100 ms "
			 "to 60 s", (unsigned long long)o->election_ms);
		return -EINVAL;
	}
	if ((r = config_get_int(cfg, WHO, "mon_snapshot_threshold", 1024, 4, 1 << 24, &v,
				err, errlen)) < 0)
		return r;
	o->snapshot_threshold = (uint32_t)v;
	if ((r = config_get_double(cfg, WHO, "mon_clock_drift_bound", 0.05, 0, 1, &nf,
				   err, errlen)) < 0)
		return r;
	o->drift_ppm = (uint32_t)(nf * 1000000 + 0.5);
	/* the history kept below the trim point's other bounds (doc/quorum.md,
	 * "Trimming the map history") */
	if ((r = config_get_int(cfg, WHO, "mon_min_map_history", 500, 1, 1 << 24, &v,
				err, errlen)) < 0)
		return r;
	o->min_map_history = (uint32_t)v;
	if ((r = config_get_int(cfg, WHO, "mon_trim_batch", 30, 1, 1 << 20, &v,
				err, errlen)) < 0)
		return r;
	o->trim_batch = (uint32_t)v;
	/* free space kept on the monitor's disk (diskcheck.c) */
	if ((r = config_get_size(cfg, WHO, "mon_data_min_free", 64ull << 20,
				 &o->data_min_free, err, errlen)) < 0)
		return r;
	/* the clock difference tickets tolerate: CLOCK_SKEW beyond it */
	if ((r = config_get_int(cfg, WHO, "auth_clock_skew", 30, 0, 3600, &v,
				err, errlen)) < 0)
		return r;
	o->clock_skew_ms = (uint64_t)v * 1000;
	/* anonymous memory (memcheck.c; doc/limits.md, "Monitor") */
	if ((r = config_get_size(cfg, WHO, "mon_memory_target", 50ull * 1000 * 1000,
				 &o->memory_target, err, errlen)) < 0)
		return r;
	if (o->memory_target < (8u << 20)) {
		snprintf(err, errlen, "mon_memory_target must be at least 8M");
		return -ERANGE;
	}
	/* the cluster log (clog.c; doc/quorum.md, "The cluster log") */
	if ((r = config_get_int(cfg, WHO, "mon_cluster_log_lines", MON_CLOG_KEEP_DEFAULT,
				MON_CLOG_KEEP_MIN, MON_CLOG_KEEP_MAX, &v, err, errlen)) < 0)
		return r;
	o->clog_keep = (uint32_t)v;
	if ((r = config_get_duration_ms(cfg, WHO, "mon_cluster_log_interval", 2000,
					&o->clog_interval_ms, err, errlen)) < 0)
		return r;
	if (o->clog_interval_ms < 100 || o->clog_interval_ms > 60000) {
		snprintf(err, errlen, "mon_cluster_log_interval (%llu ms) must be from 100 ms "
			 "to 60 s", (unsigned long long)o->clog_interval_ms);
		return -EINVAL;
	}
	/* check often enough that "down after grace" is late by a fifth at most */
	o->tick_ms = o->heartbeat_grace_ms / 5;
	if (o->tick_ms < 50)
		o->tick_ms = 50;
	if (o->tick_ms > 1000)
		o->tick_ms = 1000;
	return 0;
}

/* ---- the event queue ----------------------------------------------- */

static void mon_post(struct mon *mon, struct mon_ev *ev)
{
	pthread_mutex_lock(&mon->qlock);
	ev->next = NULL;
	if (mon->qtail)
		mon->qtail->next = ev;
	else
		mon->qhead = ev;
	mon->qtail = ev;
	pthread_cond_signal(&mon->qcond);
	pthread_mutex_unlock(&mon->qlock);
}

/* Loop thread: a message arrived. */
static void on_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct mon *mon = arg;
	struct mon_ev *ev = calloc(1, sizeof(*ev));

	if (m->type == MT_MON_RAFT) {
		free(ev);
		mon_rt_post(c, m);
		return;
	}
	if (!ev || mon->stop) {
		free(ev);
		msg_free(m);
		return;
	}
	ev->type = MON_EV_MSG;
	ev->m = m;
	mon_post(mon, ev);
}

/* Loop thread: a connection closed; the monitor thread drops its
 * subscription (the reference taken here keeps c valid until then). */
static void on_closed(void *arg, struct msg_conn *c, int err)
{
	struct mon *mon = arg;
	struct mon_ev *ev;

	if (msg_conn_peer(c).type == MSG_ENTITY_MON)
		mon_rt_post(c, NULL);
	if (mon->stop)
		return;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return;
	log_debug("mon", "connection %s closed: %s", msg_conn_addr(c), strerror(-err));
	msg_conn_get(c);
	ev->type = MON_EV_CLOSED;
	ev->c = c;
	mon_post(mon, ev);
}

/* Loop thread: a handshake completed; non-monitors get a MONMAP. */
static void on_connected(void *arg, struct msg_conn *c)
{
	struct mon *mon = arg;
	struct mon_ev *ev;

	if (mon->stop || msg_conn_peer(c).type == MSG_ENTITY_MON)
		return;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return;
	msg_conn_get(c);
	ev->type = MON_EV_CONNECTED;
	ev->c = c;
	mon_post(mon, ev);
}

void mon_wake(struct mon *mon)
{
	pthread_mutex_lock(&mon->qlock);
	pthread_cond_signal(&mon->qcond);
	pthread_mutex_unlock(&mon->qlock);
}

/* ---- MONMAP --------------------------------------------------------- */

void mon_monmap(struct mon *mon, struct monmap_msg *mm)
{
	const struct mon_qview *v = &mon->qv;
	bool leader_known = v->leader_id &&
		(v->leader_id != mon->self.id || v->ready) &&
		mono_now_ms() - v->leader_seen_ms < mon->opts.election_ms;

	memset(mm, 0, sizeof(*mm));
	memcpy(mm->fsid, mon->fsid, 16);
	mm->incarnation = mon_incarnation(mon);
	mm->epoch = v->conf_index ? v->conf_index : 1;
	mm->term = v->term;
	mm->leader = -1;
	mm->self = -1;
	for (uint32_t i = 0; i < v->nmembers && mm->nmons < MONMAP_MONS_MAX; i++) {
		struct monmap_member *m = &mm->mons[mm->nmons];
		bool me = v->members[i].id == mon->self.id;

		snprintf(m->name, sizeof(m->name), "%s", v->members[i].name[0] ?
			 v->members[i].name : "mon");
		/* our own address as bound (a test binds port 0) */
		snprintf(m->addr, sizeof(m->addr), "%.63s", me ? mon->addr : v->members[i].addr);
		m->id = v->members[i].id;
		m->voter = v->members[i].voter;
		if (me)
			mm->self = (int32_t)mm->nmons;
		if (leader_known && m->id == v->leader_id)
			mm->leader = (int32_t)mm->nmons;
		mm->nmons++;
	}
	if (!mm->nmons) {
		/* before the first poll: ourselves only */
		snprintf(mm->mons[0].name, sizeof(mm->mons[0].name), "%s", mon->self.name);
		snprintf(mm->mons[0].addr, sizeof(mm->mons[0].addr), "%.63s", mon->addr);
		mm->mons[0].id = mon->self.id;
		mm->mons[0].voter = true;
		mm->self = 0;
		mm->nmons = 1;
	}
}

static struct msg *monmap_msg(struct mon *mon)
{
	struct monmap_msg mm;
	struct enc e;
	struct msg *m;

	mon_monmap(mon, &mm);
	enc_init(&e);
	monmap_msg_encode(&mm, &e);
	m = msg_new(MT_MON_MONMAP, &e);
	enc_free(&e);
	return m;
}

/* A request this monitor does not serve: a MONMAP instead (a reply for a
 * request, one-way otherwise), so the sender goes to the leader. */
void mon_redirect(struct mon *mon, struct msg *m)
{
	struct msg *r = monmap_msg(mon);

	if (r) {
		if (m->tid)
			msg_reply(m->conn, m, r);
		else
			msg_send(m->conn, r);
	}
	msg_free(m);
}

static void peer_add(struct mon *mon, struct msg_conn *c)
{
	struct msg *m = monmap_msg(mon);

	if (m)
		msg_send(c, m);
	if (mon->npeers == mon->peers_cap) {
		size_t cap = mon->peers_cap ? mon->peers_cap * 2 : 32;
		struct msg_conn **n = realloc(mon->peers, cap * sizeof(*n));

		if (!n)
			return;
		mon->peers = n;
		mon->peers_cap = cap;
	}
	msg_conn_get(c);
	mon->peers[mon->npeers++] = c;
}

static void peer_del(struct mon *mon, struct msg_conn *c)
{
	for (size_t i = 0; i < mon->npeers; i++) {
		if (mon->peers[i] != c)
			continue;
		msg_conn_put(c);
		mon->peers[i] = mon->peers[--mon->npeers];
		return;
	}
}

static void handle_subscribe(struct mon *mon, struct msg *m)
{
	struct mon_subscribe s;
	struct dec d;

	dec_init(&d, m->front, m->front_len);
	if (mon_subscribe_decode(&d, &s) < 0)
		log_warn("mon", "malformed subscribe from %s", msg_conn_addr(m->conn));
	else
		mon_subscribe(mon, m->conn, s.have);
	msg_free(m);
}

/* Whether a leader is known (ourselves once serving, or another one we
 * heard from within an election timeout). */
static bool leader_known(struct mon *mon)
{
	const struct mon_qview *v = &mon->qv;

	if (v->ready)
		return true;
	return v->leader_id && v->leader_id != mon->self.id &&
	       mono_now_ms() - v->leader_seen_ms < mon->opts.election_ms;
}

static void handle_msg(struct mon *mon, struct msg *m)
{
	if (m->flags & MSG_F_REPLY) {
		msg_free(m);
		return;
	}
	/* followers serve subscriptions only; the leader serves everything;
	 * a member that knows no leader serves nothing */
	if (m->type == MT_MON_SUBSCRIBE ? !leader_known(mon) : !mon->qv.ready) {
		mon_redirect(mon, m);
		return;
	}
	if (!mon_access_msg(mon, m))
		return;
	switch (m->type) {
	case MT_MON_SUBSCRIBE:
		handle_subscribe(mon, m);
		break;
	case MT_MON_COMMAND:
		mon_handle_command(mon, m);
		break;
	case MT_OSD_NEW:
		mon_handle_osd_new(mon, m);
		break;
	case MT_OSD_BOOT:
		mon_handle_osd_boot(mon, m);
		break;
	case MT_OSD_BEACON:
		mon_handle_osd_beacon(mon, m);
		break;
	case MT_OSD_FAILURE:
		mon_handle_osd_failure(mon, m);
		break;
	case MT_OSD_STOPPING:
		mon_handle_osd_stopping(mon, m);
		break;
	case MT_OSD_PG_TEMP:
		mon_handle_osd_pg_temp(mon, m);
		break;
	case MT_MDS_BEACON:
		mon_handle_mds_beacon(mon, m);
		break;
	default:
		log_warn("mon", "message of unknown type %u from %s ignored", m->type,
			 msg_conn_addr(m->conn));
		msg_free(m);
	}
}

static void drain(struct mon *mon, bool process)
{
	struct mon_ev *ev, *next;

	pthread_mutex_lock(&mon->qlock);
	ev = mon->qhead;
	mon->qhead = mon->qtail = NULL;
	pthread_mutex_unlock(&mon->qlock);
	for (; ev; ev = next) {
		next = ev->next;
		if (ev->type == MON_EV_MSG) {
			if (process)
				handle_msg(mon, ev->m);
			else
				msg_free(ev->m);
		} else if (ev->type == MON_EV_CONNECTED) {
			if (process)
				peer_add(mon, ev->c);
			msg_conn_put(ev->c);
		} else {
			mon_unsubscribe(mon, ev->c);
			peer_del(mon, ev->c);
			msg_conn_put(ev->c);
		}
		free(ev);
	}
}

static void sync_ratios(struct mon *mon);

/* Acts on what the raft thread saw: MONMAPs to every non-monitor when the
 * leader or the membership changed; a new leader takes over the OSDs'
 * leases before it serves (doc/quorum.md). */
static void quorum_events(struct mon *mon)
{
	if (!mon->qv.changed)
		return;
	mon->qv.changed = false;
	if (mon->qv.ready && (!mon->serving || mon->serving_term != mon->qv.term)) {
		/* leading (again, maybe after a term of someone else's) */
		mon->serving = true;
		mon->serving_term = mon->qv.term;
		mon_osd_takeover(mon);
		mon_mds_takeover(mon);
		sync_ratios(mon);
	} else if (!mon->qv.ready && mon->serving) {
		mon->serving = false;
	}
	for (size_t i = 0; i < mon->npeers; i++) {
		struct msg *m = monmap_msg(mon);

		if (m)
			msg_send(mon->peers[i], m);
	}
}

/* At start, requests wait (queued) until a leader is known, or for a few
 * election timeouts: a client that asks a monitor just started gets an
 * answer, not a MONMAP saying "no leader". */
static bool settled(struct mon *mon, uint64_t start_ms)
{
	if (mon->qv.ready || (mon->qv.leader_id && mon->qv.leader_id != mon->self.id))
		return true;
	return mono_now_ms() - start_ms > 3 * mon->opts.election_ms;
}

static void mon_run(struct mon *mon)
{
	uint64_t start = mono_now_ms();

	mon->next_tick_ms = start + mon->opts.tick_ms;
	pthread_mutex_lock(&mon->lock);
	while (!g_stop) {
		/* read under mon->lock: the raft thread writes the view */
		bool wait_leader = !settled(mon, start);
		struct timespec ts;
		uint64_t now;

		pthread_mutex_unlock(&mon->lock);
		pthread_mutex_lock(&mon->qlock);
		if (!mon->qhead || wait_leader) {
			/* wake at least every 50 ms to notice a signal */
			ts = deadline_ms(CLOCK_REALTIME, 50);
			pthread_cond_timedwait(&mon->qcond, &mon->qlock, &ts);
		}
		pthread_mutex_unlock(&mon->qlock);
		pthread_mutex_lock(&mon->lock);
		quorum_events(mon);
		mon_metrics_tick(mon);
		mon_dashboard_tick(mon);
		if (!settled(mon, start))
			continue;
		drain(mon, true);
		if (!mon->serving)
			continue;
		mon_pg_temp_flush(mon);
		mon_rebuild_tick(mon);
		mon_auth_tick(mon);
		if (mon->serving)
			mon_clog_tick(mon);
		now = mono_now_ms();
		if (now >= mon->next_tick_ms) {
			/* beacons that queued up while the batch above ran (a map
			 * commit's fsync can be slow) count before silence is judged */
			drain(mon, true);
			if (mon->serving) {
				mon_osd_tick(mon);
				mon_mds_tick(mon);
				mon_trim_tick(mon);
			}
			mon_memcheck_tick(mon);
			mon->next_tick_ms = now + mon->opts.tick_ms;
		}
	}
	pthread_mutex_unlock(&mon->lock);
}

/* ---- start-up ------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: atoll-mon --mkfs --data DIR [--name NAME] [--fsid UUID]\n"
"                 [--initial NAME=IP:PORT,...] [--conf F] [--set K=V]...\n"
"       atoll-mon --mkfs --join --data DIR --name NAME --fsid UUID --addr IP:PORT\n"
"       atoll-mon --data DIR [--addr IP:PORT] [--conf F] [--set K=V]... [--log FILE]\n"
"       atoll-mon --restore FILE --data DIR [--name NAME] [--addr IP:PORT]\n"
"       atoll-mon --rebuild --data DIR --yes-i-lost-the-majority\n"
"\n"
"The monitor: holds the cluster map, detects failed OSDs, answers admin\n"
"commands (atoll ...).  See doc/daemons.md.\n"
"\n"
"  --mkfs          create a monitor store in DIR (a new fsid unless --fsid)\n"
"  --name NAME     the monitor's name for --mkfs (default a)\n"
"  --initial LIST  the first members, NAME=IP:PORT,... (raft ids 1..N in\n"
"                  order; every member made with the same list and --fsid);\n"
"                  without it the monitor is the only member, at --addr\n"
"  --join          with --mkfs: a member to add to a running quorum (then:\n"
"                  atoll mon add NAME IP:PORT)\n"
"  --data DIR      the monitor's folder (the store is DIR/store)\n"
"  --addr IP:PORT  the address to bind (default: the member's own address)\n"
"  --fsid UUID     the cluster id for --mkfs\n"
"  --restore FILE  create DIR's store from a backup (atoll mon backup FILE)\n"
"  --rebuild       disaster recovery: the majority of the monitors is lost for\n"
"                  good; make this stopped survivor a one-member quorum of a\n"
"                  new incarnation (with --yes-i-lost-the-majority; see\n"
"                  doc/admin.md, \"Disaster recovery from one survivor\")\n"
"  --conf FILE     the configuration file\n"
"  --set K=V       a configuration option (wins over the file; repeatable)\n"
"  --user NAME     started as root: become NAME once the port and the store are\n"
"                  open, after giving it DIR (as --set user=NAME)\n"
"  --log FILE      log to FILE instead of stderr\n"
"  --help, --version\n");
}

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "atoll-mon: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* Parses --initial "NAME=IP:PORT,NAME=IP:PORT,..." (raft ids 1..N in
 * order). */
static int parse_initial(const char *s, struct mon_member *all, unsigned *n)
{
	char buf[4096], *save = NULL, *tok;

	*n = 0;
	if (strlen(s) >= sizeof(buf))
		return die("--initial is too long");
	strcpy(buf, s);
	for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		char *eq = strchr(tok, '='), ip[64];
		uint16_t port;

		if (*n == MONMAP_MONS_MAX)
			return die("--initial names more than %d monitors", MONMAP_MONS_MAX);
		if (!eq)
			return die("--initial member '%s' is not NAME=IP:PORT", tok);
		*eq = '\0';
		if (!mon_name_ok(tok))
			return die("monitor name '%s' is not 1 to %d of [A-Za-z0-9_-]", tok,
				   MONMAP_NAME_MAX);
		if (msg_parse_addr(eq + 1, ip, sizeof(ip), &port) < 0 || port == 0 ||
		    strlen(eq + 1) > OSDMAP_ADDR_MAX)
			return die("--initial member '%s': '%s' is not IP:PORT", tok, eq + 1);
		for (unsigned i = 0; i < *n; i++)
			if (!strcmp(all[i].name, tok) || !strcmp(all[i].addr, eq + 1))
				return die("--initial names '%s' or '%s' twice", tok, eq + 1);
		snprintf(all[*n].name, sizeof(all[*n].name), "%s", tok);
		snprintf(all[*n].addr, sizeof(all[*n].addr), "%s", eq + 1);
		all[*n].id = *n + 1;
		(*n)++;
	}
	if (!*n)
		return die("--initial names no monitor");
	return 0;
}

static int do_mkfs(const char *data, const char *fsid_str, const char *name,
		   const char *initial, const char *addr, bool join)
{
	struct mon_member all[MONMAP_MONS_MAX], self;
	struct mon_store *st;
	unsigned n = 0;
	uint8_t fsid[16];
	char err[512], fs[37];
	int r;

	if (!name)
		name = "a";
	if (!mon_name_ok(name))
		return die("--name '%s' is not 1 to %d of [A-Za-z0-9_-]", name, MONMAP_NAME_MAX);
	memset(&self, 0, sizeof(self));
	if (join) {
		char ip[64];
		uint16_t port;

		if (initial || !fsid_str || !addr)
			return die("--join takes --fsid and --addr IP:PORT (the cluster's fsid "
				   "and this monitor's address), not --initial");
		if (msg_parse_addr(addr, ip, sizeof(ip), &port) < 0 || port == 0 ||
		    strlen(addr) > OSDMAP_ADDR_MAX)
			return die("--addr '%s' is not IP:PORT", addr);
		snprintf(self.name, sizeof(self.name), "%s", name);
		snprintf(self.addr, sizeof(self.addr), "%s", addr);
		self.id = mon_member_id(name);
		n = 0;
	} else if (initial) {
		if (!fsid_str)
			return die("--initial needs --fsid: every initial member is made with "
				   "the same fsid");
		if (parse_initial(initial, all, &n) != 0)
			return 1;
		for (unsigned i = 0; i < n; i++)
			if (!strcmp(all[i].name, name))
				self = all[i];
		if (!self.id)
			return die("--name '%s' is not in --initial", name);
	} else {
		snprintf(self.name, sizeof(self.name), "%s", name);
		snprintf(self.addr, sizeof(self.addr), "%s", addr ? addr : "127.0.0.1:6789");
		self.id = 1;
		all[0] = self;
		n = 1;
	}
	if (fsid_str) {
		if (mon_uuid_parse(fsid_str, fsid) < 0)
			return die("--fsid '%s' is not a uuid (like "
				   "3f2a5c1e-0b7d-4e59-9a61-2c8e4f0d7b13)", fsid_str);
	} else if (getrandom(fsid, sizeof(fsid), 0) != sizeof(fsid)) {
		return die("cannot read random bytes for the fsid: %s", strerror(errno));
	} else {
		fsid[6] = (fsid[6] & 0x0f) | 0x40;	/* version 4 */
		fsid[8] = (fsid[8] & 0x3f) | 0x80;
	}
	/* the store starts empty: the first map is the first leader's first
	 * entry, so every member has the same one */
	r = mon_store_create(data, &st, err, sizeof(err));
	if (r < 0)
		return die("%s", err);
	mon_store_close(st);
	r = mon_quorum_mkfs(data, &self, all, n, fsid, err, sizeof(err));
	if (r < 0) {
		mon_store_remove(data);
		return die("%s", err);
	}
	mon_uuid_format(fsid, fs);
	printf("%s\n", fs);
	return 0;
}

static int do_restore(const char *data, const char *file, const char *name,
		      const char *addr)
{
	struct mon_member self;
	struct mon_store *st;
	struct osdmap *seed = NULL;
	uint64_t inc = 1;
	char err[512];
	FILE *f;
	int r;

	f = fopen(file, "rbe");
	if (!f)
		return die("cannot open backup '%s': %s", file, strerror(errno));
	r = mon_store_restore(data, f, err, sizeof(err));
	fclose(f);
	if (r < 0)
		return die("%s", err);
	/* a restored monitor is a new one-member quorum whose state starts
	 * at the backup's map */
	r = mon_store_open(data, &st, err, sizeof(err));
	if (r == 0) {
		r = mon_store_load_seed(st, &seed);
		if (r == 0)
			r = mon_store_incarnation(st, &inc);
		mon_store_close(st);
	}
	if (r < 0)
		return die("cannot read the restored store in '%s': %s", data, strerror(-r));
	memset(&self, 0, sizeof(self));
	snprintf(self.name, sizeof(self.name), "%s", name ? name : "a");
	snprintf(self.addr, sizeof(self.addr), "%s", addr ? addr : "127.0.0.1:6789");
	self.id = 1;
	r = mon_quorum_mkfs(data, &self, &self, 1, seed->fsid, err, sizeof(err));
	osdmap_free(seed);
	/* a new quorum: a new incarnation, so monitors of the one the backup
	 * came from, if any comes back, are never followed again */
	if (r == 0)
		r = mon_rebuild_mark(data, inc + 1, false, err, sizeof(err));
	if (r < 0) {
		mon_store_remove(data);
		return die("%s", err);
	}
	printf("restored '%s' into '%s/store'; start the monitor with: atoll-mon "
	       "--data %s --addr IP:PORT\n", file, data, data);
	return 0;
}

/* Applies the configured capacity ratios if the map's differ. */
static void sync_ratios(struct mon *mon)
{
	struct osdmap_inc inc;

	/* epoch 0 (a new cluster): the first leader makes epoch 1 */
	if (mon->map->epoch > 0 &&
	    mon->map->nearfull_ratio == mon->opts.nearfull_ratio &&
	    mon->map->backfillfull_ratio == mon->opts.backfillfull_ratio &&
	    mon->map->full_ratio == mon->opts.full_ratio)
		return;
	osdmap_inc_init(&inc, 0);
	inc.has_ratios = true;
	inc.nearfull_ratio = mon->opts.nearfull_ratio;
	inc.backfillfull_ratio = mon->opts.backfillfull_ratio;
	inc.full_ratio = mon->opts.full_ratio;
	if (mon_map_change(mon, &inc, NULL) == 0)
		log_info("mon", "capacity ratios set from the configuration");
}

static int do_run(struct config *cfg, const char *conf, const char *data, const char *addr,
		  const struct mon_opts *opts)
{
	struct msgr_config mc;
	struct msgr_ops ops = {
		.dispatch = on_dispatch,
		.connected = on_connected,
		.closed = on_closed,
	};
	struct sigaction sa;
	struct mon *mon;
	char err[512], fs[37];
	int r, rc = 1;

	mon = calloc(1, sizeof(*mon));
	if (!mon)
		return die("out of memory");
	mon->cfg = cfg;
	mon->opts = *opts;
	pthread_mutex_init(&mon->qlock, NULL);
	pthread_cond_init(&mon->qcond, NULL);
	pthread_mutex_init(&mon->lock, NULL);
	pthread_cond_init(&mon->pcond, NULL);
	mon->osds = calloc(OSDMAP_OSD_MAX, sizeof(*mon->osds));
	if (!mon->osds) {
		die("out of memory");
		goto out_free;
	}
	mon->data_dir = data;
	r = mon_store_open(data, &mon->store, err, sizeof(err));
	if (r < 0) {
		die("%s", err);
		goto out_free;
	}
	r = mon_member_load(data, &mon->self, mon->fsid, err, sizeof(err));
	if (r < 0) {
		die("%s", err);
		goto out_store;
	}
	r = mon_rebuild_load(mon, data, err, sizeof(err));
	if (r < 0) {
		die("%s", err[0] ? err : strerror(-r));
		goto out_store;
	}
	/* the replicated state starts empty (or at a restored backup's map);
	 * raft_start then restores the last snapshot and the log replays */
	r = mon_store_load_seed(mon->store, &mon->map);
	if (r == -ENOENT)
		mon->map = osdmap_new(mon->fsid);
	if (!mon->map || (r < 0 && r != -ENOENT)) {
		die("cannot read the monitor store in '%s': %s", data,
		    strerror(r < 0 ? -r : ENOMEM));
		goto out_store;
	}
	{
		const char *cf = config_get(cfg, WHO, "fsid", NULL);
		uint8_t want[16];

		if (cf && cf[0] && (mon_uuid_parse(cf, want) < 0 ||
				    memcmp(want, mon->fsid, 16) != 0)) {
			mon_uuid_format(mon->fsid, fs);
			die("the configured fsid '%s' is not this monitor's (%s); fix the "
			    "configuration or use the right --data folder", cf, fs);
			goto out_store;
		}
	}
	if (!addr)
		addr = mon->self.addr;

	memset(&mc, 0, sizeof(mc));
	mc.size_of = sizeof(mc);
	mc.me.type = MSG_ENTITY_MON;
	mc.me.id = mon->self.id;
	/* the monitor dials only the other monitors: a member back from a
	 * restart is found within a quarter second, not after a long backoff */
	mc.reconnect_min_ms = 50;
	mc.reconnect_max_ms = 250;
	memcpy(mc.fsid, mon->fsid, 16);
	r = msgr_config_read(cfg, WHO, &mc, err, sizeof(err));
	if (r < 0) {
		die("%s", err);
		goto out_store;
	}
	r = mon_auth_setup(mon, &mon->msg_auth, err, sizeof(err));
	if (r < 0) {
		die("%s", err);
		goto out_store;
	}
	{
		/* a restored backup's auth state is where the auth state starts,
		 * as its map is where the map starts */
		void *seed_auth = NULL;
		size_t sl = 0;

		r = mon_store_load_seed_auth(mon->store, &seed_auth, &sl);
		if (r == 0) {
			r = mon_auth_state_restore(mon, seed_auth, sl);
			auth_wipe(seed_auth, sl);
		}
		free(seed_auth);
		if (r < 0 && r != -ENOENT) {
			die("cannot read the restored auth state in '%s': %s", data,
			    strerror(-r));
			goto out_store;
		}
	}
	mc.auth = mon->msg_auth;
	r = msgr_create(&mc, &ops, mon, &mon->msgr);
	if (r < 0) {
		die("cannot start the messenger: %s", strerror(-r));
		goto out_store;
	}
	r = msgr_listen(mon->msgr, addr, mon->addr, sizeof(mon->addr));
	if (r < 0) {
		die("cannot listen on '%s': %s", addr, strerror(-r));
		goto out_msgr;
	}
	{
		/* the port and the store are open: root is no longer needed */
		const char *dirs[] = { data };

		r = priv_drop_config(cfg, WHO, dirs, 1, err, sizeof(err));
		if (r < 0) {
			die("%s", err);
			goto out_msgr;
		}
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	r = mon_mds_init(mon, err, sizeof(err));
	if (r < 0) {
		die("%s", err);
		goto out_msgr;
	}
	r = mon_metrics_start(mon, err, sizeof(err));
	if (r < 0) {
		die("%s", err);
		goto out_msgr;
	}
	r = mon_dashboard_start(mon, conf, err, sizeof(err));
	if (r < 0) {
		die("%s", err);
		goto out_msgr;
	}
	r = msgr_start(mon->msgr);
	if (r < 0) {
		die("cannot start the messenger: %s", strerror(-r));
		goto out_msgr;
	}
	r = mon_quorum_start(mon, data, err, sizeof(err));
	if (r < 0) {
		die("%s", err);
		goto out_quorum;
	}
	mon_uuid_format(mon->fsid, fs);
	log_info("mon", "mon.%s (raft id %llu) listening on %s, fsid %s",
		 mon->self.name, (unsigned long long)mon->self.id, mon->addr, fs);
	mon_run(mon);
	log_info("mon", "stopping");
	rc = 0;

out_quorum:
	mon->stop = 1;
	mon_quorum_stop(mon);
out_msgr:
	mon_dashboard_stop(mon);	/* its worker's handle talks to the cluster */
	mon_metrics_stop(mon);	/* its scrapes read the messenger */
	/* drop our references before the messenger goes away */
	mon->stop = 1;
	drain(mon, false);
	while (mon->nsubs)
		mon_unsubscribe(mon, mon->subs[0].c);
	while (mon->npeers)
		peer_del(mon, mon->peers[0]);
	msgr_destroy(mon->msgr);
	drain(mon, false);
out_store:
	msg_auth_free(mon->msg_auth);	/* after the messenger: it reads both */
	mon_auth_free(mon);
	osdmap_free(mon->map);
	mon_store_close(mon->store);
out_free:
	mon_osd_fini(mon);
	mon_pg_fini(mon);
	mon_clog_fini(mon);
	free(mon->subs);
	free(mon->peers);
	free(mon->pgt);
	pthread_cond_destroy(&mon->pcond);
	pthread_mutex_destroy(&mon->lock);
	pthread_cond_destroy(&mon->qcond);
	pthread_mutex_destroy(&mon->qlock);
	free(mon);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "mkfs", no_argument, NULL, 'm' },
		{ "data", required_argument, NULL, 'd' },
		{ "addr", required_argument, NULL, 'a' },
		{ "fsid", required_argument, NULL, 'f' },
		{ "name", required_argument, NULL, 'n' },
		{ "initial", required_argument, NULL, 'i' },
		{ "join", no_argument, NULL, 'j' },
		{ "restore", required_argument, NULL, 'R' },
		{ "rebuild", no_argument, NULL, 'B' },
		{ "yes-i-lost-the-majority", no_argument, NULL, 'Y' },
		{ "conf", required_argument, NULL, 'c' },
		{ "set", required_argument, NULL, 's' },
		{ "user", required_argument, NULL, 'u' },
		{ "log", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *data = NULL, *addr = NULL, *fsid = NULL, *restore = NULL;
	const char *name = NULL, *initial = NULL;
	const char *conf = NULL, *logfile = NULL, *level_s, *user = NULL;
	const char *sets[128];
	int nsets = 0, c, r, level;
	bool mkfs = false, join = false, rebuild = false, lost = false;
	struct config *cfg;
	struct mon_opts opts;
	char err[512];

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'm': mkfs = true; break;
		case 'd': data = optarg; break;
		case 'a': addr = optarg; break;
		case 'f': fsid = optarg; break;
		case 'n': name = optarg; break;
		case 'i': initial = optarg; break;
		case 'j': join = true; break;
		case 'R': restore = optarg; break;
		case 'B': rebuild = true; break;
		case 'Y': lost = true; break;
		case 'c': conf = optarg; break;
		case 'l': logfile = optarg; break;
		case 's':
			if (nsets == 128)
				return die("too many --set options (at most 128)");
			sets[nsets++] = optarg;
			break;
		case 'u': user = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': {
			const char *v;

			atoll_version(&v);
			printf("atoll-mon %s\n", v);
			return 0;
		}
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind < argc)
		return die("unexpected argument '%s'; see atoll-mon --help", argv[optind]);

	r = config_load(&cfg, conf, err, sizeof(err));
	if (r < 0)
		return die("%s", err);
	for (int i = 0; i < nsets; i++) {
		char key[128];
		const char *eq = strchr(sets[i], '=');

		if (!eq || eq == sets[i] || (size_t)(eq - sets[i]) >= sizeof(key)) {
			config_free(cfg);
			return die("--set '%s' is not KEY=VALUE, e.g. --set "
				   "osd_heartbeat_grace=3s", sets[i]);
		}
		memcpy(key, sets[i], (size_t)(eq - sets[i]));
		key[eq - sets[i]] = '\0';
		if (config_set_override(cfg, key, eq + 1) < 0) {
			config_free(cfg);
			return die("--set '%s' is not a valid option", sets[i]);
		}
	}
	if (user && config_set_override(cfg, "user", user) < 0) {
		config_free(cfg);
		return die("--user '%s' is not a valid user name", user);
	}
	r = 1;
	if (!data && config_get_str(cfg, WHO, "mon_data", NULL, &data, NULL, 0) < 0)
		data = NULL;
	if (!data) {
		die("no data folder; give one with --data DIR");
		goto out;
	}
	if (!logfile)
		config_get_str(cfg, WHO, "log_file", NULL, &logfile, NULL, 0);
	config_get_str(cfg, WHO, "log_level", "info", &level_s, NULL, 0);
	level = log_level_parse(level_s);
	if (level < 0) {
		die("log_level '%s' is not one of error, warn, info, debug, trace", level_s);
		goto out;
	}
	if (mon_opts_load(cfg, &opts, err, sizeof(err)) < 0) {
		die("%s", err);
		goto out;
	}
	if (!addr)
		config_get_str(cfg, WHO, "mon_addr", NULL, &addr, NULL, 0);
	if (restore) {
		r = do_restore(data, restore, name, addr);
		goto out;
	}
	if (rebuild) {
		r = mon_rebuild(data, lost);
		goto out;
	}
	if (mkfs) {
		const char *host = NULL;
		char first[OSDMAP_ADDR_MAX + 1];

		/* a lone member's address: --addr, mon_addr, else mon_host's first */
		if (!addr && config_get_str(cfg, WHO, "mon_host", NULL, &host, NULL, 0) == 0 &&
		    host) {
			size_t l = strcspn(host, ", ");

			snprintf(first, sizeof(first), "%.*s", (int)l, host);
			addr = first;
		}
		r = do_mkfs(data, fsid, name, initial, addr, join);
		goto out;
	}
	if (log_open(WHO, (enum log_level)level, logfile) < 0) {
		die("cannot open log file '%s': %s", logfile ? logfile : "(stderr)",
		    strerror(errno));
		goto out;
	}
	r = do_run(cfg, conf, data, addr, &opts);
	log_close();
out:
	config_free(cfg);
	return r;
}
