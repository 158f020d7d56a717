/*
 * test_mon_mds.c - the MDS daemons' roles (mon/mdsmon.c) against a real
 * atoll-mon: MT_MDS_BEACON from made-up instances, the map's MDS list
 * and blocklist as a subscriber receives them, and `mds stat`.
 */
#include <criterion/criterion.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define GRACE_MS 800

static struct mh h;
static uint32_t meta, data;

static uint32_t pool_id(const char *name)
{
	uint32_t id = 0;

	pthread_mutex_lock(&h.lock);
	const struct osdmap_pool *p = h.map ? osdmap_pool_by_name(h.map, name) : NULL;
	if (p)
		id = p->id;
	pthread_mutex_unlock(&h.lock);
	return id;
}

static void setup(void)
{
	static const char *sets[] = {
		"mds_beacon_grace=800ms",	/* GRACE_MS */
		"osd_pool_default_pg_num=4",
		NULL,
	};

	mh_init(&h, sets);
	mh_start(&h);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"m\"}", NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"d\"}", NULL, NULL), 0);
	mh_subscribe(&h, 0);
	cr_assert(mh_wait_epoch(&h, 3, 5000));
	meta = pool_id("m");
	data = pool_id("d");
	cr_assert(meta && data);
}

static void teardown(void)
{
	mh_free(&h);
}

TestSuite(mon_mds, .init = setup, .fini = teardown, .timeout = 60);

static void drop_msg(void *arg, struct msg_conn *c, struct msg *m)
{
	(void)arg;
	(void)c;
	msg_free(m);	/* the monitor's one-way MONMAP */
}

/* Sends a beacon of inst over a connection whose handshake says it is
 * the client inst (the monitor takes an instance's beacons only from
 * its own connection: mon/mdsmon.c); decodes the reply into r. */
static void beacon_call(uint64_t inst, struct enc *e, struct rc_reply *r)
{
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops ops = { .dispatch = drop_msg };
	struct msgr *msgr;
	struct msg_conn *c;
	struct msg *rep;
	struct dec d;

	mc.me.type = MSG_ENTITY_CLIENT;
	mc.me.id = inst;
	cr_assert_eq(msgr_create(&mc, &ops, NULL, &msgr), 0);
	cr_assert_eq(msgr_start(msgr), 0);
	c = msgr_connect(msgr, h.addr);
	cr_assert(c);
	rep = mh_call_on(&h, c, MT_MDS_BEACON, e);
	cr_assert(rep, "no answer to a beacon");
	dec_init(&d, rep->front, rep->front_len);
	cr_assert_eq(rc_reply_decode(&d, r), 0);
	msg_free(rep);
	msg_conn_close(c);
	msg_conn_put(c);
	msgr_destroy(msgr);
}

/* A beacon of instance inst named name; the reply's rc (and epoch). */
static int beacon(uint64_t inst, const char *name, uint32_t flags, uint64_t *epoch)
{
	struct mds_beacon b = { .instance = inst, .meta_pool = meta, .data_pool = data,
				.flags = flags, .state = MDS_BEACON_STANDBY };
	struct rc_reply r;
	struct enc e;

	snprintf(b.name, sizeof(b.name), "%s", name);
	snprintf(b.addr, sizeof(b.addr), "127.0.0.2:%u", (unsigned)(7000 + inst % 1000));
	enc_init(&e);
	mds_beacon_encode(&b, &e);
	beacon_call(inst, &e, &r);
	if (epoch)
		*epoch = r.epoch;
	return r.rc;
}

/* inst's record in the received map: its state (0: none), grant epoch */
static uint8_t state_of(uint64_t inst, uint64_t *grant)
{
	uint8_t s = 0;

	pthread_mutex_lock(&h.lock);
	const struct osdmap_mds *d = osdmap_mds_find(h.map, inst);
	if (d) {
		s = d->state;
		if (grant)
			*grant = d->grant_epoch;
	}
	pthread_mutex_unlock(&h.lock);
	return s;
}

static bool fenced(uint64_t inst)
{
	pthread_mutex_lock(&h.lock);
	bool f = osdmap_blocklisted(h.map, inst, (uint64_t)time(NULL) * 1000);
	pthread_mutex_unlock(&h.lock);
	return f;
}

static uint64_t map_epoch(void)
{
	pthread_mutex_lock(&h.lock);
	uint64_t e = h.map->epoch;
	pthread_mutex_unlock(&h.lock);
	return e;
}

Test(mon_mds, the_first_is_active_the_second_a_standby)
{
	uint64_t e1, e2, grant = 0;

	cr_assert_eq(beacon(11, "a", 0, &e1), 0);
	cr_assert(mh_wait_epoch(&h, e1, 5000));
	cr_expect_eq(state_of(11, &grant), OSDMAP_MDS_ACTIVE);
	cr_expect_eq(grant, e1, "granted in the epoch that added it");
	cr_assert_eq(beacon(12, "b", 0, &e2), 0);
	cr_assert(mh_wait_epoch(&h, e2, 5000));
	cr_expect_eq(state_of(12, NULL), OSDMAP_MDS_STANDBY, "a second MDS is a standby");
	cr_expect_eq(state_of(11, &grant), OSDMAP_MDS_ACTIVE);
	cr_expect_eq(grant, e1);
	/* beacons that change nothing make no epoch */
	cr_assert_eq(beacon(11, "a", 0, &e1), 0);
	cr_assert_eq(beacon(12, "b", 0, &e2), 0);
	cr_expect_eq(e1, e2);
	cr_expect_eq(e2, map_epoch());
}

Test(mon_mds, a_silent_active_is_fenced_and_a_standby_promoted_in_one_epoch)
{
	uint64_t e, grant = 0;

	cr_assert_eq(beacon(21, "a", 0, NULL), 0);
	cr_assert_eq(beacon(22, "b", 0, &e), 0);
	cr_assert(mh_wait_epoch(&h, e, 5000));
	cr_assert_eq(state_of(21, NULL), OSDMAP_MDS_ACTIVE);
	/* only b goes on beaconing */
	for (int i = 0; i < 40 && state_of(22, NULL) != OSDMAP_MDS_ACTIVE; i++) {
		cr_assert_eq(beacon(22, "b", 0, &e), 0);
		mh_wait_epoch(&h, e, 1000);
		usleep(100000);
	}
	cr_assert_eq(state_of(22, &grant), OSDMAP_MDS_ACTIVE, "b was not promoted");
	cr_expect_eq(state_of(21, NULL), 0, "a is still in the map");
	cr_expect(fenced(21), "a is not blocklisted");
	cr_expect_not(fenced(22));
	/* one change: the grant's epoch is the one that blocklists a */
	cr_assert(mh_wait_epoch(&h, grant, 1000));
	cr_expect_eq(beacon(21, "a", 0, NULL), -ESTALE, "the fenced instance is told");
	cr_expect_eq(state_of(21, NULL), 0, "a fenced instance never comes back");
	cr_expect(mh_wait_log(&h, "loses the active role: no beacon for", 1, 1000));
}

Test(mon_mds, a_clean_stop_gives_the_role_away_at_once)
{
	uint64_t e;

	cr_assert_eq(beacon(31, "a", 0, NULL), 0);
	cr_assert_eq(beacon(32, "b", 0, &e), 0);
	cr_assert(mh_wait_epoch(&h, e, 5000));
	cr_assert_eq(beacon(31, "a", MDS_BEACON_F_STOPPING, &e), 0);
	cr_assert(mh_wait_epoch(&h, e, 5000));
	cr_expect_eq(state_of(32, NULL), OSDMAP_MDS_ACTIVE);
	cr_expect_eq(state_of(31, NULL), 0);
	cr_expect(fenced(31));
	/* a standby that stops just leaves */
	cr_assert_eq(beacon(33, "c", 0, NULL), 0);
	cr_assert_eq(beacon(33, "c", MDS_BEACON_F_STOPPING, &e), 0);
	cr_assert(mh_wait_epoch(&h, e, 5000));
	cr_expect_eq(state_of(33, NULL), 0);
	cr_expect_not(fenced(33));
}

Test(mon_mds, a_new_instance_of_the_active_name_replaces_it_at_once)
{
	uint64_t e, grant = 0;

	cr_assert_eq(beacon(41, "a", 0, &e), 0);
	cr_assert(mh_wait_epoch(&h, e, 5000));
	cr_assert_eq(beacon(42, "a", 0, &e), 0);	/* mds.a restarted */
	cr_assert(mh_wait_epoch(&h, e, 5000));
	cr_expect_eq(state_of(41, NULL), 0);
	cr_expect(fenced(41));
	cr_expect_eq(state_of(42, &grant), OSDMAP_MDS_ACTIVE);
	cr_expect_eq(grant, e);
}

Test(mon_mds, another_file_system_has_its_own_active)
{
	uint64_t e = map_epoch();

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"d2\"}", NULL, NULL), 0);
	cr_assert(mh_wait_epoch(&h, e + 1, 5000));
	cr_assert_eq(beacon(51, "a", 0, NULL), 0);
	uint32_t d0 = data;
	data = pool_id("d2");
	cr_assert(data);
	cr_assert_eq(beacon(52, "b", 0, &e), 0);
	cr_assert(mh_wait_epoch(&h, e, 5000));
	cr_expect_eq(state_of(52, NULL), OSDMAP_MDS_ACTIVE);
	cr_expect_eq(state_of(51, NULL), OSDMAP_MDS_ACTIVE);
	data = d0;
}

Test(mon_mds, bad_beacons_are_refused)
{
	struct enc e;
	struct msg *rep;

	data = 999;
	cr_expect_eq(beacon(61, "a", 0, NULL), -ENOENT, "a pool that does not exist");
	data = pool_id("d");
	enc_init(&e);
	enc_u32(&e, 7);
	rep = mh_call(&h, MT_MDS_BEACON, &e);
	cr_assert(rep);
	struct rc_reply r;
	struct dec d;
	dec_init(&d, rep->front, rep->front_len);
	cr_assert_eq(rc_reply_decode(&d, &r), 0);
	cr_expect_eq(r.rc, -EINVAL);
	msg_free(rep);
	cr_expect_eq(map_epoch(), 3, "nothing changed");
}

Test(mon_mds, a_beacon_for_another_instance_than_the_connections_is_refused)
{
	struct mds_beacon b = { .instance = 71, .meta_pool = meta, .data_pool = data,
				.state = MDS_BEACON_STANDBY };
	struct rc_reply r;
	struct msg *rep;
	struct enc e;
	struct dec d;

	snprintf(b.name, sizeof(b.name), "a");
	snprintf(b.addr, sizeof(b.addr), "127.0.0.2:7071");
	enc_init(&e);
	mds_beacon_encode(&b, &e);
	rep = mh_call(&h, MT_MDS_BEACON, &e);	/* h's connection is another client */
	cr_assert(rep);
	dec_init(&d, rep->front, rep->front_len);
	cr_assert_eq(rc_reply_decode(&d, &r), 0);
	cr_expect_eq(r.rc, -EPERM);
	msg_free(rep);
	cr_expect_eq(map_epoch(), 3, "nothing changed");
}

Test(mon_mds, mds_stat_shows_active_standbys_and_grant)
{
	uint64_t e;
	char *out = NULL;

	cr_assert_eq(beacon(71, "a", 0, &e), 0);
	cr_assert_eq(beacon(72, "b", 0, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"mds stat\",\"format\":\"json\"}", NULL, &out), 0);
	cJSON *j = cJSON_Parse(out);
	cr_assert(j);
	cJSON *fs = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "filesystems"), 0);
	cr_assert(fs);
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(fs, "meta_pool")), "m");
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(fs, "data_pool")), "d");
	cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(fs, "grant_epoch")), (double)e);
	cJSON *act = cJSON_GetObjectItem(fs, "active");
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(act, "name")), "a");
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(act, "instance")), "71");
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(act, "state")), "standby",
			 "what it said in its beacon");
	cJSON *sb = cJSON_GetObjectItem(fs, "standbys");
	cr_expect_eq(cJSON_GetArraySize(sb), 1);
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(sb, 0),
								  "name")), "b");
	cJSON_Delete(j);
	free(out);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"mds stat\"}", NULL, &out), 0);
	cr_expect(strstr(out, "active mds.a at 127.0.0.2:7071"), "%s", out);
	cr_expect(strstr(out, "standby mds.b"), "%s", out);
	free(out);
}

Test(mon_mds, after_a_monitor_restart_a_standby_it_heard_is_preferred)
{
	uint64_t e, grant = 0;

	cr_assert_eq(beacon(81, "a", 0, NULL), 0);
	cr_assert_eq(beacon(82, "b", 0, &e), 0);
	cr_assert(mh_wait_epoch(&h, e, 5000));
	/* the whole cluster stops hard; the map keeps a and b */
	cr_assert_eq(mh_stop(&h), 0);
	mh_start(&h);
	mh_subscribe(&h, 0);
	/* mds.a comes back (a new instance); mds.b does not */
	cr_assert_eq(beacon(83, "a", 0, &e), 0);
	cr_assert(mh_wait_epoch(&h, e, 5000));
	cr_expect(fenced(81));
	cr_expect_eq(state_of(83, &grant), OSDMAP_MDS_ACTIVE,
		     "the role went to a standby not heard since the restart");
	cr_expect_eq(grant, e);
	cr_expect_eq(state_of(82, NULL), OSDMAP_MDS_STANDBY);
}
