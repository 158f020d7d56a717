/*
 * test_mon_osds.c - the OSD lifecycle against a real atoll-mon: ids,
 * boot, map subscriptions, clean stops, failure detection (silence and
 * peer reports), out after the interval, osd out/in/rm; and that only an
 * OSD's own connection speaks for it (suite mon_identity).
 *
 * Timing: the grace is short so the suite is quick, so an OSD that must
 * stay up is kept up by the harness's beacon pump, and every wait is for
 * a condition with a deadline (stretched under sanitizers), never a
 * fixed sleep that assumes how fast the machine is.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define GRACE_MS	1500
#define GRACE_STR	"1500ms"
#define OUT_MS		1500

static struct mh h;

static void setup(void)
{
	static const char *sets[] = {
		"osd_heartbeat_grace=" GRACE_STR,
		"mon_osd_down_out_interval=1500ms",	/* OUT_MS */
		"osd_pool_default_pg_num=4",
		NULL,
	};

	mh_init(&h, sets);
	mh_start(&h);
}

static void teardown(void)
{
	mh_free(&h);
}

TestSuite(mon_osds, .init = setup, .fini = teardown, .timeout = 60);

static int32_t new_osd(uint8_t seed)
{
	uint8_t u[16];
	int32_t id;

	mh_uuid(u, seed);
	cr_assert_eq(mh_osd_new(&h, u, -1, &id), 0);
	return id;
}

static uint64_t boot(int32_t id, uint8_t seed, const char *host)
{
	uint8_t u[16];
	uint64_t epoch = 0;
	char addr[32], st[256];

	mh_uuid(u, seed);
	snprintf(addr, sizeof(addr), "127.0.0.%d:%d", 2 + id, 6800 + id);
	cr_assert_eq(mh_osd_boot(&h, id, u, addr, host, &epoch, st, sizeof(st)), 0,
		     "boot osd.%d: %s", id, st);
	return epoch;
}

Test(mon_osds, new_gives_a_stable_id_per_uuid)
{
	uint8_t u0[16], u1[16], u5[16];
	int32_t a, b, c, d;

	mh_uuid(u0, 0);
	mh_uuid(u1, 1);
	mh_uuid(u5, 5);
	cr_assert_eq(mh_osd_new(&h, u0, -1, &a), 0);
	cr_assert_eq(mh_osd_new(&h, u1, -1, &b), 0);
	cr_assert_eq(mh_osd_new(&h, u0, -1, &c), 0);
	cr_assert_eq(a, 0);
	cr_assert_eq(b, 1);
	cr_assert_eq(c, 0, "the same uuid got a new id");
	cr_assert_eq(mh_osd_new(&h, u5, 7, &d), 0);
	cr_assert_eq(d, 7);

	/* persisted: a restarted monitor gives the same answer */
	cr_assert_eq(mh_stop(&h), 0);
	mh_start(&h);
	cr_assert_eq(mh_osd_new(&h, u1, -1, &c), 0);
	cr_assert_eq(c, 1);
}

Test(mon_osds, boot_marks_up_and_subscriber_gets_incrementals)
{
	int32_t id;
	uint64_t e1, e2;

	mh_subscribe(&h, 0);
	cr_assert(mh_wait_epoch(&h, 1, 5000), "no full map for have=0");
	cr_assert_eq(h.nfull, 1);
	id = new_osd(3);
	e1 = boot(id, 3, "hostA");
	cr_assert(mh_wait_epoch(&h, e1, 5000));
	cr_assert(osdmap_osd_up(h.map, id));
	cr_assert_str_eq(osdmap_osd(h.map, id)->host, "hostA");
	cr_assert_str_eq(osdmap_osd(h.map, id)->addr, "127.0.0.2:6800");
	cr_assert_eq(osdmap_osd(h.map, id)->up_from, e1);
	cr_assert_eq(mh_osd_stopping(&h, id, &e2), 0);
	cr_assert_eq(e2, e1 + 1);
	cr_assert(mh_wait_epoch(&h, e2, 5000));
	cr_assert_not(osdmap_osd_up(h.map, id));
	cr_assert_eq(h.map_err, 0, "an incremental did not apply: %d", h.map_err);
	cr_assert_eq(h.nfull, 1, "only the first map should be full");
	cr_assert(h.nincs >= 3);
}

Test(mon_osds, subscribe_from_an_epoch_gets_only_incrementals)
{
	int32_t id = new_osd(1);
	uint64_t e = boot(id, 1, "h");
	struct mh *p = &h;

	/* a map from a full subscription, then re-subscribe from epoch 2 */
	mh_subscribe(p, 0);
	cr_assert(mh_wait_epoch(p, e, 5000));
	cr_assert_eq(mh_cmd(p, "{\"prefix\":\"pool create\",\"name\":\"q\"}", NULL, NULL), 0);
	cr_assert(mh_wait_epoch(p, e + 1, 5000));
	cr_assert_eq(p->nfull, 1);
	cr_assert_not_null(osdmap_pool_by_name(p->map, "q"));
}

Test(mon_osds, boot_refuses_unknown_id_and_wrong_uuid)
{
	uint8_t u[16], other[16];
	char st[256];
	int32_t id = new_osd(2);

	mh_uuid(u, 2);
	mh_uuid(other, 4);
	cr_assert_eq(mh_osd_boot(&h, 42, u, "127.0.0.2:1", "h", NULL, st, sizeof(st)),
		     -EINVAL);
	cr_assert(strstr(st, "osd.42 does not exist"), "status: %s", st);
	cr_assert_eq(mh_osd_boot(&h, id, other, "127.0.0.2:1", "h", NULL, st, sizeof(st)),
		     -EINVAL);
	cr_assert(strstr(st, "--mkfs --id"), "status: %s", st);
}

Test(mon_osds, silent_osd_is_marked_down_after_grace)
{
	int32_t a = new_osd(1), b = new_osd(2);
	uint64_t t0;

	boot(b, 2, "h2");
	mh_pump_start(&h, &b, 1);	/* b keeps beaconing, a is silent */
	t0 = tu_now_ms();		/* before a's boot: its grace starts later */
	boot(a, 1, "h1");
	mh_subscribe(&h, 0);
	cr_assert(mh_wait_osd(&h, a, false, 5 * GRACE_MS), "osd.0 still up after the grace");
	cr_assert(tu_now_ms() - t0 >= GRACE_MS, "marked down before the grace");
	cr_assert(mh_osd_is_up(&h, b), "a beaconing OSD was marked down");
}

Test(mon_osds, reports_from_two_hosts_mark_down_at_once)
{
	static const char *hosts[] = { "h0", "h1", "h2", "h3" };
	int32_t ids[4];

	for (int i = 0; i < 4; i++)
		ids[i] = new_osd((uint8_t)i);
	mh_pump_start(&h, ids, 4);	/* up for as long as the test takes */
	for (int i = 0; i < 4; i++)
		boot(ids[i], (uint8_t)i, hosts[i]);
	mh_subscribe(&h, 0);
	cr_assert(mh_wait_osd(&h, 0, true, 5000));
	/* mh_failure returns once the monitor handled the report; a barrier
	 * on our subscribed connection then brings any map it published */
	mh_failure(&h, 1, 0, false);
	mh_barrier(&h, h.conn);
	cr_assert(mh_osd_is_up(&h, 0), "one reporter was enough");
	mh_failure(&h, 1, 0, false);	/* the same host again: still one */
	mh_barrier(&h, h.conn);
	cr_assert(mh_osd_is_up(&h, 0));
	mh_failure(&h, 2, 0, true);
	cr_assert(mh_wait_osd(&h, 0, false, 5000), "two hosts reported, still up");
	cr_assert(mh_wait_log(&h, "marked down by peer reports", 1, 5000),
		  "osd.0 went down, but not by the reports");
}

Test(mon_osds, down_osd_goes_out_after_interval_unless_noout)
{
	int32_t a = new_osd(1), b = new_osd(2);
	uint64_t e;
	cJSON *j;
	char *out;

	boot(a, 1, "h1");
	boot(b, 2, "h2");
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd set\",\"flag\":\"noout\"}", NULL, NULL), 0);
	cr_assert_eq(mh_osd_stopping(&h, a, &e), 0);
	cr_assert_eq(mh_osd_stopping(&h, b, &e), 0);
	mh_subscribe(&h, 0);
	cr_assert(mh_wait_epoch(&h, e, 5000));
	/* that nothing happens needs a fixed wait: the interval and a tick
	 * (the grace / 5) with room to spare */
	usleep((OUT_MS + GRACE_MS) * 1000);
	mh_barrier(&h, h.conn);
	cr_assert(mh_osd_is_in(&h, a), "noout did not keep osd.0 in");
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd unset\",\"flag\":\"noout\"}", NULL, NULL), 0);
	cr_assert(mh_wait_osd_in(&h, a, false, 5000), "osd.0 not marked out after the interval");

	/* boot brings an automatically-out OSD back in */
	boot(a, 1, "h1");
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd dump\",\"format\":\"json\"}", NULL, &out), 0);
	j = cJSON_Parse(out);
	free(out);
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(
		cJSON_GetObjectItem(j, "osds"), 0), "in")));
	cJSON_Delete(j);
}

Test(mon_osds, out_in_reweight_rm)
{
	int32_t a = new_osd(1);
	char *st = NULL, *out = NULL;

	boot(a, 1, "h1");
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd rm\",\"id\":0}", &st, NULL), -EBUSY);
	cr_assert(strstr(st, "still up"), "%s", st);
	free(st);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd out\",\"ids\":[0]}", NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd out\",\"ids\":[5]}", NULL, NULL), -ENOENT);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd in\",\"ids\":0}", NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd reweight\",\"id\":0,\"weight\":0.5}",
			    NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd reweight\",\"id\":0,\"weight\":1.5}",
			    NULL, NULL), -EINVAL);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd tree\"}", NULL, &out), 0);
	cr_assert(strstr(out, "osd.0"), "%s", out);
	cr_assert(strstr(out, "0.5000"), "%s", out);
	free(out);
	cr_assert_eq(mh_osd_stopping(&h, a, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd rm\",\"id\":0}", &st, NULL), -EBUSY);
	cr_assert(strstr(st, "atoll osd out 0"), "%s", st);
	free(st);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd out\",\"ids\":[0]}", NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd rm\",\"id\":0}", NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd ls\",\"format\":\"json\"}", NULL, &out), 0);
	cr_assert_str_eq(out, "[]");
	free(out);
}

/* ---- only an OSD's own connection speaks for it ---------------------- */

static void setup_identity(void)
{
	mh_init(&h, NULL);	/* the default grace: no OSD goes down by silence */
	mh_start(&h);
}

TestSuite(mon_identity, .init = setup_identity, .fini = teardown, .timeout = 60);

static int raw_new(struct msg_conn *c, uint8_t seed, int32_t *id)
{
	struct osd_new_req q = { .want_id = -1 };
	struct osd_new_reply r;
	struct msg *rep;
	struct enc e;
	struct dec d;

	mh_uuid(q.uuid, seed);
	enc_init(&e);
	osd_new_req_encode(&q, &e);
	rep = mh_call_on(&h, c, MT_OSD_NEW, &e);
	cr_assert(rep);
	dec_init(&d, rep->front, rep->front_len);
	cr_assert_eq(osd_new_reply_decode(&d, &r), 0);
	msg_free(rep);
	*id = r.id;
	return r.rc;
}

static int raw_boot(struct msg_conn *c, int32_t id, uint8_t seed, char *st, size_t len)
{
	struct osd_boot_req q;
	struct osd_boot_reply r;
	struct msg *rep;
	struct enc e;
	struct dec d;

	memset(&q, 0, sizeof(q));
	q.id = id;
	mh_uuid(q.uuid, seed);
	snprintf(q.addr, sizeof(q.addr), "127.0.0.9:6800");
	snprintf(q.host, sizeof(q.host), "evil");
	enc_init(&e);
	osd_boot_req_encode(&q, &e);
	rep = mh_call_on(&h, c, MT_OSD_BOOT, &e);
	cr_assert(rep);
	dec_init(&d, rep->front, rep->front_len);
	cr_assert_eq(osd_boot_reply_decode(&d, &r), 0);
	msg_free(rep);
	snprintf(st, len, "%s", r.status);
	return r.rc;
}

static int raw_stopping(struct msg_conn *c, int32_t id)
{
	struct osd_stopping s = { .id = id };
	struct rc_reply r;
	struct msg *rep;
	struct enc e;
	struct dec d;

	enc_init(&e);
	osd_stopping_encode(&s, &e);
	rep = mh_call_on(&h, c, MT_OSD_STOPPING, &e);
	cr_assert(rep);
	dec_init(&d, rep->front, rep->front_len);
	cr_assert_eq(rc_reply_decode(&d, &r), 0);
	msg_free(rep);
	return r.rc;
}

Test(mon_identity, osd_new_is_taken_only_from_an_osd)
{
	int32_t id = 99;

	cr_assert_eq(raw_new(h.conn, 1, &id), -EPERM, "a client registered an OSD");
	cr_assert_eq(id, -1);
	cr_assert(mh_wait_log(&h, "osd new from", 1, 5000));
	/* any OSD identity will do, whatever its id: mkfs has none yet */
	cr_assert_eq(raw_new(mh_osd_conn(&h, 5), 1, &id), 0);
	cr_assert_eq(id, 0);
	cr_assert_eq(raw_new(mh_osd_conn(&h, -1), 2, &id), 0);
	cr_assert_eq(id, 1);
}

Test(mon_identity, a_client_claiming_to_be_osd0_cannot_boot_or_stop_it)
{
	int32_t id = new_osd(1);
	char st[256];

	cr_assert_eq(id, 0);
	cr_assert_eq(raw_boot(h.conn, 0, 1, st, sizeof(st)), -EPERM,
		     "a client booted osd.0");
	cr_assert(strstr(st, "connection made as osd.0"), "status: %s", st);
	cr_assert_eq(raw_boot(mh_osd_conn(&h, 1), 0, 1, st, sizeof(st)), -EPERM,
		     "osd.1 booted osd.0");
	boot(0, 1, "h0");
	mh_subscribe(&h, 0);
	cr_assert(mh_wait_osd(&h, 0, true, 5000));

	cr_assert_eq(raw_stopping(h.conn, 0), -EPERM, "a client stopped osd.0");
	cr_assert_eq(raw_stopping(mh_osd_conn(&h, 1), 0), -EPERM, "osd.1 stopped osd.0");
	mh_barrier(&h, h.conn);
	cr_assert(mh_osd_is_up(&h, 0));
	cr_assert(mh_wait_log(&h, "stopping for osd.0 from", 2, 5000));
	cr_assert(mh_wait_log(&h, "only osd.0's own connection may send it", 4, 5000));
	/* its own connection still works */
	cr_assert_eq(mh_osd_stopping(&h, 0, NULL), 0);
	cr_assert(mh_wait_osd(&h, 0, false, 5000));
}

Test(mon_identity, beacons_and_reports_from_a_client_are_ignored)
{
	struct osd_beacon b;
	struct osd_failure f = { .reporter = 1, .target = 0, .immediate = true };
	struct enc e;

	/* two OSDs on one host: one report from the other marks one down */
	cr_assert_eq(new_osd(1), 0);
	cr_assert_eq(new_osd(2), 1);
	boot(0, 1, "h");
	boot(1, 2, "h");
	mh_subscribe(&h, 0);
	cr_assert(mh_wait_osd(&h, 1, true, 5000));

	/* a full disk as osd.0 would say it, but from a client */
	memset(&b, 0, sizeof(b));
	b.id = 0;
	b.total = 100 << 20;
	b.used = b.total;
	enc_init(&e);
	osd_beacon_encode(&b, &e);
	mh_send(&h, MT_OSD_BEACON, &e);
	enc_init(&e);
	osd_failure_encode(&f, &e);
	mh_send(&h, MT_OSD_FAILURE, &e);
	mh_barrier(&h, h.conn);
	cr_assert(mh_wait_log(&h, "beacon for osd.0 from", 1, 5000));
	cr_assert(mh_wait_log(&h, "failure report for osd.1 from", 1, 5000));
	cr_assert(mh_osd_is_up(&h, 0), "a client's failure report counted");
	pthread_mutex_lock(&h.lock);
	cr_assert_not(osdmap_osd(h.map, 0)->state & OSD_ST_FULL, "a client's beacon counted");
	pthread_mutex_unlock(&h.lock);

	/* the same report from osd.1 itself does */
	mh_failure(&h, 1, 0, true);
	cr_assert(mh_wait_osd(&h, 0, false, 5000), "osd.1's own report did not count");
}
