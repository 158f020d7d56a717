/*
 * mds_role.c - atoll-mds's role: its beacons to the monitors, the wait
 * for the active role as a standby, and what it does when it loses it.
 *
 * The monitors grant the active role of a file system to one atoll-mds
 * at a time, by an epoch-numbered record in the map (lib/osdmap.h, struct
 * osdmap_mds; mon/mdsmon.c).  A thread of its own beacons every
 * mds_beacon_interval and looks at the map the client library holds:
 * until the map names this instance active, main() waits
 * (mds_role_wait_grant); once granted, a map that does not name it
 * active any more, a blocklist entry for it, a beacon answered -ESTALE
 * or an OSD refusing a journal write (-EPERM) all mean the same: another
 * MDS has the role, this one is fenced.  It must not write again, and it
 * cannot take anything back, so it starts over as a new instance
 * (execv of itself: a new client id, a standby) - the simplest state that
 * is certainly right.
 *
 * The grant's epoch holds the blocklist entry of the active before:
 * main() waits until the client library has that epoch before the first
 * read of the journal, and every op the library sends carries its map
 * epoch, which an OSD waits for before it serves the op (osd/ops.c).  So
 * no OSD serves this MDS's journal before it refuses the old one.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atoll/atoll.h>

#include "client/client.h"
#include "deadline.h"
#include "encode.h"
#include "fault.h"
#include "log.h"
#include "mds.h"
#include "mono.h"
#include "msg.h"
#include "msg_auth.h"
#include "osdmap.h"
#include "proto.h"

#define SUB "mds"

static struct {
	pthread_mutex_t lock;		/* everything below */
	pthread_cond_t cond;		/* grant, stop */
	struct atoll_cluster *cl;
	struct mds *m;			/* the journal position in the beacons */
	char **argv;			/* for the start over */
	volatile sig_atomic_t *stop;	/* main's SIGTERM flag */
	struct mds_beacon b;		/* the next beacon's content */
	uint64_t grant_epoch;		/* 0 until granted */
	bool quit;			/* the thread ends */
	bool started;
	pthread_t thread;
	uint32_t interval_ms;
	/* the last beacon's answer (a call in flight at most) */
	bool in_flight;
	int last_rc;
	/* fault injection (tests/ha): the map and the beacons' answers never
	 * fence it, so that only the OSDs' refusals can (they must) */
	bool fence_blind;
} r = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

void mds_role_fenced(const char *why)
{
	log_error(SUB, "mds.%s (client.%" PRIu64 ") lost the active role: %s; it writes "
		  "nothing more and starts over as a standby", r.b.name, r.b.instance, why);
	printf("atoll-mds: fenced (%s); starting over as a standby\n", why);
	fflush(stdout);
	if (r.argv) {
		execv("/proc/self/exe", r.argv);
		log_error(SUB, "cannot start over (%s); exiting", strerror(errno));
	}
	_exit(75);
}

static bool r_quit(void)
{
	pthread_mutex_lock(&r.lock);
	bool q = r.quit;
	pthread_mutex_unlock(&r.lock);
	return q;
}

static void on_reply(void *arg, struct msg *reply, int err)
{
	struct rc_reply rep = { -EIO, 0 };

	(void)arg;
	if (!err) {
		struct dec d;

		dec_init(&d, reply->front, reply->front_len);
		if (rc_reply_decode(&d, &rep))
			rep.rc = -EBADMSG;
	}
	msg_free(reply);
	pthread_mutex_lock(&r.lock);
	r.in_flight = false;
	r.last_rc = err ? err : rep.rc;
	pthread_cond_broadcast(&r.cond);
	pthread_mutex_unlock(&r.lock);
}

static void send_beacon(void)
{
	struct enc e;
	struct msg *m;

	pthread_mutex_lock(&r.lock);
	if (r.in_flight) {
		pthread_mutex_unlock(&r.lock);
		return;
	}
	r.b.epoch = atoll_cluster_epoch(r.cl);
	/* where it is in the journal: a standby (and an active replaying)
	 * what it followed, an active what it journaled (atomic loads: the
	 * follower and the journaler store them) */
	if (r.b.state == MDS_BEACON_STANDBY || r.b.state == MDS_BEACON_REPLAYING) {
		r.b.jseg = __atomic_load_n(&r.m->follow.pub_seg, __ATOMIC_ACQUIRE);
		r.b.jseq = __atomic_load_n(&r.m->follow.pub_seq, __ATOMIC_ACQUIRE);
	} else {
		r.b.jseg = __atomic_load_n(&r.m->journal.pub_seg, __ATOMIC_ACQUIRE);
		r.b.jseq = __atomic_load_n(&r.m->journal.pub_durable, __ATOMIC_ACQUIRE);
	}
	r.b.wall_ms = msg_auth_wall_ms(r.cl->auth);
	enc_init(&e);
	mds_beacon_encode(&r.b, &e);
	r.in_flight = true;
	pthread_mutex_unlock(&r.lock);
	m = msg_new(MT_MDS_BEACON, &e);
	enc_free(&e);
	if (!m || client_mon_call(r.cl, m, r.interval_ms * 4, on_reply, NULL) < 0) {
		pthread_mutex_lock(&r.lock);
		r.in_flight = false;
		pthread_mutex_unlock(&r.lock);
	}
}

/* Looks at the map: granted, or fenced (never returns then). */
static void check_map(void)
{
	struct osdmap *m = NULL;
	const struct osdmap_mds *me;
	char why[160] = "";
	int rc;

	if (client_map_copy(r.cl, &m) || !m)
		return;
	me = osdmap_mds_find(m, r.b.instance);
	pthread_mutex_lock(&r.lock);
	rc = r.last_rc;
	r.last_rc = 0;
	if (r.fence_blind)
		;	/* only the OSDs' refusals fence it (fault injection) */
	else if (rc == -ESTALE)
		snprintf(why, sizeof(why), "the monitors answer its beacon: fenced");
	else if (osdmap_blocklisted(m, r.b.instance, (uint64_t)time(NULL) * 1000))
		snprintf(why, sizeof(why), "map epoch %" PRIu64 " blocklists it", m->epoch);
	else if (r.grant_epoch && (!me || me->state != OSDMAP_MDS_ACTIVE))
		snprintf(why, sizeof(why), "map epoch %" PRIu64 " names %s", m->epoch,
			 me ? "it a standby" : "it no more");
	if (!*why && !r.grant_epoch && me && me->state == OSDMAP_MDS_ACTIVE) {
		r.grant_epoch = me->grant_epoch ? me->grant_epoch : m->epoch;
		pthread_cond_broadcast(&r.cond);
	}
	pthread_mutex_unlock(&r.lock);
	osdmap_free(m);
	if (*why)
		mds_role_fenced(why);
}

/* Beacons every interval; between them, looks at every new map as it
 * comes (a standby learns of its grant at once, not at its next beacon). */
static void *beacon_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&r.lock);
	while (!r.quit) {
		pthread_mutex_unlock(&r.lock);
		send_beacon();
		check_map();
		uint64_t until = mono_now_ms() + r.interval_ms;
		for (uint64_t now = mono_now_ms(); now < until && !r_quit(); now = mono_now_ms()) {
			/* -ETIMEDOUT or a new map: look either way */
			client_wait_epoch(r.cl, atoll_cluster_epoch(r.cl) + 1, until - now);
			check_map();
		}
		pthread_mutex_lock(&r.lock);
	}
	pthread_mutex_unlock(&r.lock);
	return NULL;
}

int mds_role_start(struct mds *m, const char *name, const char *addr, uint32_t interval_ms,
		   char **argv, volatile sig_atomic_t *stop)
{
	struct atoll_ioctx *meta = m->meta, *data = m->data;
	int ret;

	r.cl = m->cl;
	r.m = m;
	r.argv = argv;
	r.stop = stop;
	r.interval_ms = interval_ms ? interval_ms : 500;
	memset(&r.b, 0, sizeof(r.b));
	r.b.instance = atoll_cluster_id(m->cl);
	snprintf(r.b.name, sizeof(r.b.name), "%s", name);
	snprintf(r.b.addr, sizeof(r.b.addr), "%s", addr);
	r.b.meta_pool = meta->pool;
	r.b.data_pool = data->pool;
	r.b.state = MDS_BEACON_STANDBY;
	r.fence_blind = fault_get_int("mds_fence_blind", 0) == 1;
	if (r.fence_blind)
		log_warn(SUB, "fault injection: only an OSD's refusal of a write fences this MDS");
	ret = pthread_create(&r.thread, NULL, beacon_thread, NULL);
	if (ret)
		return -ret;
	r.started = true;
	return 0;
}

uint64_t mds_role_wait_grant(void)
{
	uint64_t g;

	pthread_mutex_lock(&r.lock);
	while (!r.grant_epoch && !*r.stop) {
		struct timespec ts = deadline_ms(CLOCK_REALTIME, 100);
		pthread_cond_timedwait(&r.cond, &r.lock, &ts);
	}
	g = r.grant_epoch;
	pthread_mutex_unlock(&r.lock);
	return g;
}

uint64_t mds_role_wait_grant_ms(uint32_t ms)
{
	struct timespec ts = deadline_ms(CLOCK_REALTIME, ms);
	uint64_t g;

	pthread_mutex_lock(&r.lock);
	while (!r.grant_epoch && !*r.stop)
		if (pthread_cond_timedwait(&r.cond, &r.lock, &ts) == ETIMEDOUT)
			break;
	g = r.grant_epoch;
	pthread_mutex_unlock(&r.lock);
	return g;
}

void mds_role_set_state(uint8_t state)
{
	bool now;

	pthread_mutex_lock(&r.lock);
	now = r.b.state != state;
	r.b.state = state;
	pthread_mutex_unlock(&r.lock);
	if (now && r.started)
		send_beacon();	/* fs status shows it at once */
}

void mds_role_set_addr(const char *addr)
{
	pthread_mutex_lock(&r.lock);
	snprintf(r.b.addr, sizeof(r.b.addr), "%s", addr);
	pthread_mutex_unlock(&r.lock);
}

void mds_role_stop(void)
{
	if (!r.started)
		return;
	pthread_mutex_lock(&r.lock);
	r.quit = true;
	pthread_cond_broadcast(&r.cond);
	pthread_mutex_unlock(&r.lock);
	pthread_join(r.thread, NULL);
	r.started = false;
	/* a clean stop: the monitors give the role away now, not after the
	 * grace (its journal is written: mds_journal_stop ran) */
	pthread_mutex_lock(&r.lock);
	r.b.flags |= MDS_BEACON_F_STOPPING;
	r.in_flight = false;	/* the thread's call may still be out: not waited for */
	pthread_mutex_unlock(&r.lock);
	send_beacon();
	pthread_mutex_lock(&r.lock);
	struct timespec ts = deadline_ms(CLOCK_REALTIME, 2000);
	while (r.in_flight)
		if (pthread_cond_timedwait(&r.cond, &r.lock, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&r.lock);
}
