/*
 * test_monc_session.c - the monitor client (lib/monc.h) against small
 * in-process monitors on loopback: a request resent after its session
 * broke, MONC_CALL_ONCE, timeouts with nothing listening, one-way
 * messages queued until a session opens, session_open per session, and
 * monc_stop failing what waits.  MONMAP handling is tested against a fake
 * follower and the real monitor in tests/ha/ (ha-redirect).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "encode.h"
#include "monc.h"
#include "mono.h"
#include "msg.h"
#include "proto.h"

#define T_ONEWAY	MT_MON_SUBSCRIBE

/* ---- a monitor that answers commands ---- */

enum srv_mode {
	SRV_ANSWER,		/* every request answered (rc 0) */
	SRV_CLOSE_FIRST,	/* the first request closes the connection */
	SRV_SILENT,		/* requests never answered */
	SRV_FOLLOWER,		/* a follower of leader: a MONMAP naming it on
				 * connect and as the answer to requests;
				 * one-way messages dropped */
};

struct srv {
	struct msgr *m;
	char addr[64];
	enum srv_mode mode;
	const char *leader;	/* SRV_FOLLOWER */
	atomic_int requests, oneways;
};

static struct msg *srv_monmap(const struct srv *s)
{
	struct monmap_msg mm = { .incarnation = 1, .epoch = 1, .term = 1, .leader = 1,
				 .self = 0, .nmons = 2 };
	struct enc e;
	struct msg *m;

	snprintf(mm.mons[0].name, sizeof(mm.mons[0].name), "f");
	snprintf(mm.mons[0].addr, sizeof(mm.mons[0].addr), "%s", s->addr);
	mm.mons[0].id = 1;
	snprintf(mm.mons[1].name, sizeof(mm.mons[1].name), "l");
	snprintf(mm.mons[1].addr, sizeof(mm.mons[1].addr), "%s", s->leader);
	mm.mons[1].id = 2;
	enc_init(&e);
	monmap_msg_encode(&mm, &e);
	m = msg_new(MT_MON_MONMAP, &e);
	enc_free(&e);
	return m;
}

static void srv_connected(void *arg, struct msg_conn *c)
{
	struct srv *s = arg;
	struct msg *m;

	if (s->mode == SRV_FOLLOWER && (m = srv_monmap(s)))
		msg_send(c, m);
}

static void srv_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct srv *s = arg;

	if (s->mode == SRV_FOLLOWER) {
		struct msg *r;

		if (m->tid) {
			atomic_fetch_add(&s->requests, 1);
			if ((r = srv_monmap(s)))
				msg_reply(c, m, r);
		}
	} else if (m->type == T_ONEWAY && !m->tid) {
		atomic_fetch_add(&s->oneways, 1);
	} else if (m->tid) {
		int n = atomic_fetch_add(&s->requests, 1);

		if (s->mode == SRV_CLOSE_FIRST && n == 0) {
			msg_conn_close(c);
		} else if (s->mode != SRV_SILENT) {
			struct mon_command_reply rep = { .rc = 0, .status = "ok" };
			struct enc e;
			struct msg *r;

			enc_init(&e);
			mon_command_reply_encode(&rep, &e);
			r = msg_new(MT_MON_COMMAND, &e);
			enc_free(&e);
			if (r)
				msg_reply(c, m, r);
		}
	}
	msg_free(m);
}

static void srv_start(struct srv *s, enum srv_mode mode)
{
	struct msgr_config cfg = { .size_of = sizeof(cfg), .me = { MSG_ENTITY_MON, 1 } };
	struct msgr_ops ops = { .dispatch = srv_dispatch, .connected = srv_connected };

	memset(s, 0, sizeof(*s));
	s->mode = mode;
	cr_assert_eq(msgr_create(&cfg, &ops, s, &s->m), 0);
	cr_assert_eq(msgr_listen(s->m, "127.0.0.1:0", s->addr, sizeof(s->addr)), 0);
	cr_assert_eq(msgr_start(s->m), 0);
}

/* ---- a client ---- */

struct cli {
	struct msgr *m;
	struct monc *mc;
	atomic_int sessions;
};

static void cli_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct cli *cl = arg;

	if (!monc_dispatch(cl->mc, c, m))
		msg_free(m);
}

static void cli_connected(void *arg, struct msg_conn *c)
{
	monc_connected(((struct cli *)arg)->mc, c);
}

static void cli_closed(void *arg, struct msg_conn *c, int err)
{
	monc_closed(((struct cli *)arg)->mc, c, err);
}

static void cli_session(void *arg, struct msg_conn *c)
{
	(void)c;
	atomic_fetch_add(&((struct cli *)arg)->sessions, 1);
}

static void cli_create(struct cli *cl, const char *mon_host)
{
	struct msgr_config cfg = { .size_of = sizeof(cfg), .me = { MSG_ENTITY_CLIENT, 7 } };
	struct msgr_ops ops = { .dispatch = cli_dispatch, .connected = cli_connected,
				.closed = cli_closed };
	struct monc_config mcfg = { .size_of = sizeof(mcfg), .mon_host = mon_host,
				    .backoff_min_ms = 20, .backoff_max_ms = 200 };
	struct monc_ops mops = { .session_open = cli_session };
	char err[256];

	memset(cl, 0, sizeof(*cl));
	cr_assert_eq(msgr_create(&cfg, &ops, cl, &cl->m), 0);
	cr_assert_eq(monc_create(cl->m, &mcfg, &mops, cl, &cl->mc, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(msgr_start(cl->m), 0);
}

static void cli_destroy(struct cli *cl)
{
	monc_stop(cl->mc);
	msgr_destroy(cl->m);
	monc_destroy(cl->mc);
}

static struct msg *command(void)
{
	struct mon_reqid id = { 7, 1 };
	struct enc e;
	struct msg *m;

	enc_init(&e);
	mon_command_encode("{\"prefix\": \"status\"}", &id, &e);
	m = msg_new(MT_MON_COMMAND, &e);
	enc_free(&e);
	cr_assert_not_null(m);
	return m;
}

static struct msg *oneway(void)
{
	struct mon_subscribe s = { .have = 0 };
	struct enc e;
	struct msg *m;

	enc_init(&e);
	mon_subscribe_encode(&s, &e);
	m = msg_new(T_ONEWAY, &e);
	enc_free(&e);
	cr_assert_not_null(m);
	return m;
}

static void wait_for(atomic_int *v, int want)
{
	for (int i = 0; i < 400 && atomic_load(v) < want; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	cr_assert_geq(atomic_load(v), want, "waited for %d, got %d", want, atomic_load(v));
}

/* an async call's outcome */
struct outcome {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
};

static void outcome_fn(void *arg, struct msg *reply, int err)
{
	struct outcome *o = arg;

	msg_free(reply);
	pthread_mutex_lock(&o->lock);
	o->err = err;
	o->done = true;
	pthread_cond_signal(&o->cond);
	pthread_mutex_unlock(&o->lock);
}

static int outcome_wait(struct outcome *o)
{
	pthread_mutex_lock(&o->lock);
	while (!o->done)
		pthread_cond_wait(&o->cond, &o->lock);
	pthread_mutex_unlock(&o->lock);
	return o->err;
}

#define OUTCOME_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0 }

/* ---- tests ---- */

Test(monc_session, a_call_is_answered)
{
	struct srv s;
	struct cli cl;
	struct msg *reply = NULL;

	srv_start(&s, SRV_ANSWER);
	cli_create(&cl, s.addr);
	monc_start(cl.mc);
	cr_assert_eq(monc_call_wait(cl.mc, command(), 5000, &reply), 0);
	cr_assert_eq(reply->type, MT_MON_COMMAND);
	msg_free(reply);
	cr_assert_eq(atomic_load(&cl.sessions), 1);
	cr_assert(monc_is_open(cl.mc));
	cli_destroy(&cl);
	msgr_destroy(s.m);
}

Test(monc_session, a_call_is_resent_after_its_session_broke)
{
	struct srv s;
	struct cli cl;
	struct msg *reply = NULL;

	srv_start(&s, SRV_CLOSE_FIRST);
	cli_create(&cl, s.addr);
	monc_start(cl.mc);
	cr_assert_eq(monc_call_wait(cl.mc, command(), 5000, &reply), 0);
	msg_free(reply);
	cr_assert_eq(atomic_load(&s.requests), 2, "sent %d times", atomic_load(&s.requests));
	cr_assert_geq(atomic_load(&cl.sessions), 2, "session_open runs for each session");
	cli_destroy(&cl);
	msgr_destroy(s.m);
}

Test(monc_session, a_once_call_fails_eagain_when_its_session_broke)
{
	struct outcome o = OUTCOME_INIT;
	struct srv s;
	struct cli cl;

	srv_start(&s, SRV_CLOSE_FIRST);
	cli_create(&cl, s.addr);
	monc_start(cl.mc);
	cr_assert_eq(monc_call(cl.mc, command(), 5000, MONC_CALL_ONCE, outcome_fn, &o), 0);
	cr_assert_eq(outcome_wait(&o), -EAGAIN);
	cr_assert_eq(atomic_load(&s.requests), 1);
	cli_destroy(&cl);
	msgr_destroy(s.m);
}

Test(monc_session, nothing_listens_times_out_and_says_refused)
{
	struct cli cl;
	struct msg *reply = NULL;
	char buf[256];
	uint64_t t0 = mono_now_ms(), dt;

	cli_create(&cl, "127.0.0.1:1, 127.0.0.1:2");
	monc_start(cl.mc);
	cr_assert_eq(monc_call_wait(cl.mc, command(), 600, &reply), -ETIMEDOUT);
	dt = mono_now_ms() - t0;
	cr_assert(dt >= 590 && dt < 3000, "timed out after %llu ms", (unsigned long long)dt);
	cr_assert_null(reply);
	cr_assert(monc_all_refused(cl.mc));
	monc_describe(cl.mc, buf, sizeof(buf));
	cr_assert(strstr(buf, "127.0.0.1:1 (connection refused)") &&
		  strstr(buf, "127.0.0.1:2 (connection refused)"), "%s", buf);
	cr_assert_not(monc_ever_opened(cl.mc));
	cli_destroy(&cl);
}

Test(monc_session, a_silent_monitor_times_the_call_out)
{
	struct srv s;
	struct cli cl;
	struct msg *reply = NULL;

	srv_start(&s, SRV_SILENT);
	cli_create(&cl, s.addr);
	monc_start(cl.mc);
	cr_assert_eq(monc_call_wait(cl.mc, command(), 300, &reply), -ETIMEDOUT);
	cr_assert_not(monc_all_refused(cl.mc));
	cli_destroy(&cl);
	msgr_destroy(s.m);
}

Test(monc_session, hunts_past_a_dead_address)
{
	struct srv s;
	char list[128];

	srv_start(&s, SRV_ANSWER);
	snprintf(list, sizeof(list), "127.0.0.1:1,%s", s.addr);
	/* random starts: both orders, several times */
	for (int i = 0; i < 6; i++) {
		struct cli cl;
		struct msg *reply = NULL;
		char addr[64];

		cli_create(&cl, list);
		monc_start(cl.mc);
		cr_assert_eq(monc_call_wait(cl.mc, command(), 3000, &reply), 0);
		msg_free(reply);
		cr_assert_str_eq(monc_session_addr(cl.mc, addr, sizeof(addr)), s.addr);
		cli_destroy(&cl);
	}
	msgr_destroy(s.m);
}

Test(monc_session, oneway_messages_wait_for_a_session)
{
	struct srv s;
	struct cli cl;

	srv_start(&s, SRV_ANSWER);
	cli_create(&cl, s.addr);
	cr_assert_eq(monc_send(cl.mc, oneway()), 0);	/* before monc_start */
	cr_assert_eq(monc_send(cl.mc, oneway()), 0);
	monc_start(cl.mc);
	wait_for(&s.oneways, 2);
	cr_assert_eq(monc_send(cl.mc, oneway()), 0);
	wait_for(&s.oneways, 3);
	cli_destroy(&cl);
	msgr_destroy(s.m);
}

Test(monc_session, stop_fails_what_waits)
{
	struct outcome o = OUTCOME_INIT;
	struct cli cl;

	cli_create(&cl, "127.0.0.1:1");
	monc_start(cl.mc);
	cr_assert_eq(monc_call(cl.mc, command(), 0, 0, outcome_fn, &o), 0);
	monc_stop(cl.mc);
	cr_assert_eq(outcome_wait(&o), -ESHUTDOWN);
	cr_assert_eq(monc_call(cl.mc, command(), 0, 0, outcome_fn, &o), -ESHUTDOWN);
	cr_assert_eq(monc_send(cl.mc, oneway()), -ESHUTDOWN);
	msgr_destroy(cl.m);
	monc_destroy(cl.mc);
}

Test(monc_session, bad_flags_and_bad_mon_host)
{
	struct cli cl;
	struct monc *mc = NULL;
	struct monc_config mcfg = { .size_of = sizeof(mcfg), .mon_host = "127.0.0.1:1,x" };
	char err[256];

	cli_create(&cl, "127.0.0.1:1");
	cr_assert_eq(monc_call(cl.mc, command(), 0, 0x80, outcome_fn, NULL), -EINVAL);
	cr_assert_eq(monc_create(cl.m, &mcfg, NULL, NULL, &mc, err, sizeof(err)), -EINVAL);
	cr_assert_null(mc);
	cr_assert(strstr(err, "entry 2 ('x')"), "%s", err);
	cli_destroy(&cl);
}

Test(monc_session, a_follower_is_left_for_its_leader_with_what_it_dropped)
{
	struct srv leader, follower;
	struct cli cl;
	struct msg *reply = NULL;
	char addr[64];

	srv_start(&leader, SRV_ANSWER);
	srv_start(&follower, SRV_FOLLOWER);
	follower.leader = leader.addr;
	cli_create(&cl, follower.addr);
	/* sent on the follower's session as it opens, before its MONMAP */
	cr_assert_eq(monc_send(cl.mc, oneway()), 0);
	cr_assert_eq(monc_send(cl.mc, oneway()), 0);
	monc_start(cl.mc);
	wait_for(&leader.oneways, 2);
	cr_assert_eq(monc_call_wait(cl.mc, command(), 5000, &reply), 0);
	cr_assert_eq(reply->type, MT_MON_COMMAND);
	msg_free(reply);
	cr_assert_str_eq(monc_session_addr(cl.mc, addr, sizeof(addr)), leader.addr);
	cr_assert_eq(atomic_load(&leader.requests), 1);
	cr_assert_eq(atomic_load(&follower.requests), 0, "the command went to the follower");
	/* once with the leader, one-way messages go straight there */
	cr_assert_eq(monc_send(cl.mc, oneway()), 0);
	wait_for(&leader.oneways, 3);
	cli_destroy(&cl);
	msgr_destroy(follower.m);
	msgr_destroy(leader.m);
}
