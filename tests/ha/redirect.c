/*
 * redirect.c - the monitor client follows MONMAPs (lib/monc.h), against
 * a fake monitor in this program and the real one of a running cluster.
 *
 *   ha-redirect CONF REAL_MON_ADDR
 *   ha-redirect --serve MODE CONF REAL_MON_ADDR
 *
 * The first form runs the cases below; the second only runs a fake
 * monitor in MODE (reply, announce, noleader), prints "serving ADDR" and
 * serves until it is killed (for daemons started by the test script).
 *
 * Until the monitors run as a quorum no real monitor sends MONMAP, so a
 * fake one (a messenger that says it is a monitor) plays the follower:
 *   reply     answers every request with a MONMAP reply naming the real
 *             monitor as leader (what a follower does with a command);
 *   announce  also sends that MONMAP one-way when a client connects;
 *   proxy     like reply, but relays map subscriptions to the real
 *             monitor (a follower serves those), so a client can connect
 *             through it and then have its first command redirected;
 *   noleader  announces a MONMAP with no leader (an election is on);
 *   badfsid   announces a MONMAP of another cluster naming a dead leader;
 *   incarn    announces incarnation 5 naming itself, then incarnation 3
 *             naming the real monitor (an older quorum: refused).
 * Each case prints "ok N - what" or "FAIL: ..." and the program exits 1
 * at the first failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atoll/atoll.h"
#include "encode.h"
#include "monc.h"
#include "msg.h"
#include "proto.h"

enum mode { M_REPLY, M_ANNOUNCE, M_PROXY, M_NOLEADER, M_BADFSID, M_INCARN };

#define CLIENTS_MAX	32

struct fake {
	enum mode mode;
	struct msgr *m;			/* listens, as a monitor */
	struct msgr *up_m;		/* to the real monitor (proxy) */
	struct msg_conn *up;
	char addr[64];
	const char *real;
	pthread_mutex_t lock;		/* clients */
	struct msg_conn *clients[CLIENTS_MAX];
	int nclients;
	atomic_int requests;
};

static int ncase;
static uint8_t real_fsid[16];	/* the cluster's, from CONF */

#define CHECK(cond, ...) do {							\
	if (!(cond)) {								\
		fprintf(stderr, "FAIL: " __VA_ARGS__);				\
		fputc('\n', stderr);						\
		exit(1);							\
	}									\
} while (0)

static void ok(const char *what)
{
	printf("ok %d - %s\n", ++ncase, what);
	fflush(stdout);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static struct msg *monmap_make(const struct fake *f, int leader, uint64_t incarnation,
			       bool other_fsid, const char *leader_addr)
{
	struct monmap_msg mm;
	struct enc e;
	struct msg *m;

	memset(&mm, 0, sizeof(mm));
	if (other_fsid)
		memset(mm.fsid, 0x5a, sizeof(mm.fsid));
	else
		memcpy(mm.fsid, real_fsid, sizeof(mm.fsid));
	mm.incarnation = incarnation;
	mm.epoch = 1;
	mm.term = 1;
	mm.leader = leader;
	mm.self = 0;
	mm.nmons = 2;
	snprintf(mm.mons[0].name, sizeof(mm.mons[0].name), "fake");
	snprintf(mm.mons[0].addr, sizeof(mm.mons[0].addr), "%s", f->addr);
	mm.mons[0].id = 1;
	mm.mons[0].voter = true;
	snprintf(mm.mons[1].name, sizeof(mm.mons[1].name), "a");
	snprintf(mm.mons[1].addr, sizeof(mm.mons[1].addr), "%s",
		 leader_addr ? leader_addr : f->real);
	mm.mons[1].id = 2;
	mm.mons[1].voter = true;
	enc_init(&e);
	monmap_msg_encode(&mm, &e);
	m = msg_new(MT_MON_MONMAP, &e);
	enc_free(&e);
	return m;
}

/* A copy of a received message, to pass on. */
static struct msg *msg_copy(const struct msg *src)
{
	struct enc e;
	struct msg *m;

	enc_init(&e);
	enc_raw(&e, src->front, src->front_len);
	m = msg_new(src->type, &e);
	enc_free(&e);
	if (m && src->data_len && msg_set_data(m, src->data, src->data_len) < 0) {
		msg_free(m);
		m = NULL;
	}
	return m;
}

static void fake_connected(void *arg, struct msg_conn *c)
{
	struct fake *f = arg;
	struct msg *m = NULL, *m2 = NULL;

	pthread_mutex_lock(&f->lock);
	if (f->nclients < CLIENTS_MAX) {
		msg_conn_get(c);
		f->clients[f->nclients++] = c;
	}
	pthread_mutex_unlock(&f->lock);
	switch (f->mode) {
	case M_ANNOUNCE:
		m = monmap_make(f, 1, 1, false, NULL);
		break;
	case M_NOLEADER:
		m = monmap_make(f, -1, 1, false, NULL);
		break;
	case M_BADFSID:
		m = monmap_make(f, 1, 1, true, "127.0.0.1:1");
		break;
	case M_INCARN:
		m = monmap_make(f, 0, 5, false, NULL);
		m2 = monmap_make(f, 1, 3, false, NULL);
		break;
	default:
		break;
	}
	if (m)
		msg_send(c, m);
	if (m2)
		msg_send(c, m2);
}

static void fake_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct fake *f = arg;

	if (m->type == MT_MON_SUBSCRIBE && f->mode == M_PROXY && f->up) {
		struct msg *fw = msg_copy(m);

		if (fw)
			msg_send(f->up, fw);
	} else if (m->tid && !(m->flags & MSG_F_REPLY)) {
		struct msg *r = monmap_make(f, f->mode == M_NOLEADER ? -1 : 1, 1, false, NULL);

		atomic_fetch_add(&f->requests, 1);
		if (r)
			msg_reply(c, m, r);
	}
	msg_free(m);
}

/* The proxy's link to the real monitor: maps go to every client. */
static void up_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct fake *f = arg;

	(void)c;
	if (m->type == MT_MON_MAP) {
		pthread_mutex_lock(&f->lock);
		for (int i = 0; i < f->nclients; i++) {
			struct msg *cp = msg_copy(m);

			if (cp && msg_conn_is_open(f->clients[i]))
				msg_send(f->clients[i], cp);
			else
				msg_free(cp);
		}
		pthread_mutex_unlock(&f->lock);
	}
	msg_free(m);
}

static void fake_start(struct fake *f, enum mode mode, const char *real)
{
	struct msgr_config mc = { .size_of = sizeof(mc), .me = { MSG_ENTITY_MON, 99 } };
	struct msgr_ops ops = { .dispatch = fake_dispatch, .connected = fake_connected };
	int r;

	memset(f, 0, sizeof(*f));
	f->mode = mode;
	f->real = real;
	pthread_mutex_init(&f->lock, NULL);
	r = msgr_create(&mc, &ops, f, &f->m);
	if (!r)
		r = msgr_listen(f->m, "127.0.0.1:0", f->addr, sizeof(f->addr));
	if (!r)
		r = msgr_start(f->m);
	CHECK(r == 0, "cannot start the fake monitor: %s", strerror(-r));
	if (mode == M_PROXY) {
		struct msgr_config uc = { .size_of = sizeof(uc),
					  .me = { MSG_ENTITY_CLIENT, 0xfa4e } };
		struct msgr_ops uops = { .dispatch = up_dispatch };

		r = msgr_create(&uc, &uops, f, &f->up_m);
		if (!r)
			r = msgr_start(f->up_m);
		CHECK(r == 0, "cannot start the proxy's messenger: %s", strerror(-r));
		f->up = msgr_connect(f->up_m, real);
		CHECK(f->up, "cannot dial %s", real);
	}
}

static void fake_stop(struct fake *f)
{
	if (f->up) {
		msg_conn_close(f->up);
		msg_conn_put(f->up);
	}
	msgr_destroy(f->up_m);
	msgr_destroy(f->m);
	for (int i = 0; i < f->nclients; i++)
		msg_conn_put(f->clients[i]);
	pthread_mutex_destroy(&f->lock);
}

/* ---- monc alone ---- */

struct bare {
	struct msgr *m;
	struct monc *mc;
};

static void bare_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct bare *b = arg;

	if (!monc_dispatch(b->mc, c, m))
		msg_free(m);
}

static void bare_connected(void *arg, struct msg_conn *c)
{
	monc_connected(((struct bare *)arg)->mc, c);
}

static void bare_closed(void *arg, struct msg_conn *c, int err)
{
	monc_closed(((struct bare *)arg)->mc, c, err);
}

static void bare_start(struct bare *b, const char *mon_host, const uint8_t *fsid)
{
	struct msgr_config mc = { .size_of = sizeof(mc), .me = { MSG_ENTITY_CLIENT, 0xbeef } };
	struct msgr_ops ops = { .dispatch = bare_dispatch, .connected = bare_connected,
				.closed = bare_closed };
	struct monc_config cc = { .size_of = sizeof(cc), .mon_host = mon_host };
	char err[256];
	int r;

	memset(b, 0, sizeof(*b));
	if (fsid)
		memcpy(mc.fsid, fsid, sizeof(mc.fsid));
	r = msgr_create(&mc, &ops, b, &b->m);
	CHECK(r == 0, "msgr_create: %s", strerror(-r));
	r = monc_create(b->m, &cc, NULL, NULL, &b->mc, err, sizeof(err));
	CHECK(r == 0, "monc_create: %s", err);
	r = msgr_start(b->m);
	CHECK(r == 0, "msgr_start: %s", strerror(-r));
	monc_start(b->mc);
}

static void bare_stop(struct bare *b)
{
	monc_stop(b->mc);
	msgr_destroy(b->m);
	monc_destroy(b->mc);
}

static int bare_status(struct bare *b, uint32_t timeout_ms)
{
	struct mon_command_reply rep;
	struct mon_reqid id = { 0xbeef, 1 };
	struct msg *m, *reply = NULL;
	char *st = NULL;
	struct enc e;
	struct dec d;
	int r;

	enc_init(&e);
	mon_command_encode("{\"prefix\": \"status\", \"format\": \"json\"}", &id, &e);
	m = msg_new(MT_MON_COMMAND, &e);
	enc_free(&e);
	r = monc_call_wait(b->mc, m, timeout_ms, &reply);
	if (r)
		return r;
	CHECK(reply->type == MT_MON_COMMAND, "the answer is of type %u, not a command reply",
	      reply->type);
	dec_init(&d, reply->front, reply->front_len);
	r = mon_command_reply_decode(&d, &rep, &st);
	if (r == 0)
		r = rep.rc;
	free(st);
	msg_free(reply);
	return r;
}

static void wait_session(struct bare *b, const char *want, const char *what)
{
	char addr[64] = "";

	for (int i = 0; i < 100; i++) {
		monc_session_addr(b->mc, addr, sizeof(addr));
		if (strcmp(addr, want) == 0)
			return;
		sleep_ms(50);
	}
	CHECK(0, "%s: the session is with '%s', not %s", what, addr, want);
}

/* ---- the library ---- */

static struct atoll_cluster *lib_connect(const char *conf, const char *mon_host)
{
	struct atoll_cluster *c;
	int r;

	r = atoll_cluster_create(&c, conf, 0);
	CHECK(r == 0, "atoll_cluster_create: %s", atoll_last_error());
	CHECK(atoll_cluster_set(c, "mon_host", mon_host) == 0, "mon_host: %s",
	      atoll_last_error());
	atoll_cluster_set(c, "client_mount_timeout", "15s");
	atoll_cluster_set(c, "client_op_timeout", "15s");
	r = atoll_cluster_connect(c);
	CHECK(r == 0, "connect with mon_host %s: %s", mon_host, atoll_last_error());
	return c;
}

static void lib_status(struct atoll_cluster *c, const char *what)
{
	char *out = NULL;
	size_t len = 0;
	int r = atoll_mon_command(c, "{\"prefix\": \"status\", \"format\": \"json\"}", NULL,
				  &out, &len);

	CHECK(r == 0, "%s: status: %s (%s)", what, atoll_strerror(r), atoll_last_error());
	CHECK(out && strstr(out, "\"epoch\""), "%s: status says %s", what, out ? out : "");
	atoll_free(out);
}

/* "fsid = xxxxxxxx-xxxx-..." from the configuration file */
static void read_fsid(const char *conf)
{
	char line[512];
	FILE *fp = fopen(conf, "r");
	bool found = false;

	CHECK(fp, "cannot open %s", conf);
	while (!found && fgets(line, sizeof(line), fp)) {
		const char *p = line + strspn(line, " \t");
		int n = 0;

		if (strncmp(p, "fsid", 4) != 0)
			continue;
		p = strchr(p, '=');
		if (!p)
			continue;
		for (p++; *p && n < 32; p++) {
			unsigned v;

			if (*p == '-' || *p == ' ')
				continue;
			if (sscanf(p, "%1x", &v) != 1)
				break;
			real_fsid[n / 2] = (uint8_t)(real_fsid[n / 2] << 4 | v);
			n++;
		}
		found = n == 32;
	}
	fclose(fp);
	CHECK(found, "no fsid in %s", conf);
}

int main(int argc, char **argv)
{
	const char *conf, *real;
	struct fake f;
	struct bare b;
	char list[160];
	int r;

	if (argc == 5 && strcmp(argv[1], "--serve") == 0) {
		enum mode mode = strcmp(argv[2], "announce") == 0 ? M_ANNOUNCE :
				 strcmp(argv[2], "noleader") == 0 ? M_NOLEADER : M_REPLY;

		read_fsid(argv[3]);
		fake_start(&f, mode, argv[4]);
		printf("serving %s\n", f.addr);
		fflush(stdout);
		for (;;)
			pause();
	}
	if (argc != 3) {
		fprintf(stderr, "usage: ha-redirect [--serve MODE] CONF REAL_MON_ADDR\n");
		return 2;
	}
	conf = argv[1];
	real = argv[2];
	read_fsid(conf);

	/* 1: a command answered with a MONMAP goes to the leader named */
	fake_start(&f, M_REPLY, real);
	bare_start(&b, f.addr, NULL);
	wait_session(&b, f.addr, "reply");
	r = bare_status(&b, 10000);
	CHECK(r == 0, "a command redirected by a MONMAP reply: %s", strerror(-r));
	CHECK(atomic_load(&f.requests) == 1, "the fake saw %d requests, not 1",
	      atomic_load(&f.requests));
	wait_session(&b, real, "after the redirect");
	bare_stop(&b);
	fake_stop(&f);
	ok("monc resends a command answered with a MONMAP reply to the leader it names");

	/* 2: a monitor map of another cluster is ignored */
	fake_start(&f, M_BADFSID, real);
	{
		uint8_t fsid[16];

		memset(fsid, 0x11, sizeof(fsid));	/* as if a map had told us */
		bare_start(&b, f.addr, fsid);
	}
	wait_session(&b, f.addr, "badfsid");
	sleep_ms(500);
	wait_session(&b, f.addr, "a MONMAP of another cluster");
	bare_stop(&b);
	fake_stop(&f);
	ok("monc ignores a MONMAP of another cluster");

	/* 3: an older incarnation is refused */
	fake_start(&f, M_INCARN, real);
	bare_start(&b, f.addr, NULL);
	wait_session(&b, f.addr, "incarn");
	sleep_ms(500);
	wait_session(&b, f.addr, "a MONMAP of an older incarnation");
	bare_stop(&b);
	fake_stop(&f);
	ok("monc refuses a MONMAP of an older incarnation than one it saw");

	/* 4: the library follows a one-way MONMAP to the leader */
	fake_start(&f, M_ANNOUNCE, real);
	{
		struct atoll_cluster *c = lib_connect(conf, f.addr);

		lib_status(c, "announce");
		CHECK(atomic_load(&f.requests) == 0, "the fake was asked %d requests",
		      atomic_load(&f.requests));
		atoll_cluster_shutdown(c);
	}
	fake_stop(&f);
	ok("the library follows a one-way MONMAP from a follower to the leader");

	/* 5: the library follows a MONMAP reply to its command */
	fake_start(&f, M_PROXY, real);
	{
		struct atoll_cluster *c = lib_connect(conf, f.addr);

		lib_status(c, "proxy");
		CHECK(atomic_load(&f.requests) == 1, "the fake saw %d requests, not 1",
		      atomic_load(&f.requests));
		lib_status(c, "proxy, again");
		CHECK(atomic_load(&f.requests) == 1, "the second command went to the fake "
		      "again (%d requests)", atomic_load(&f.requests));
		atoll_cluster_shutdown(c);
	}
	fake_stop(&f);
	ok("the library resends a command answered with a MONMAP reply to the leader");

	/* 6: a member that knows no leader: hunt on */
	fake_start(&f, M_NOLEADER, real);
	snprintf(list, sizeof(list), "%s,%s", f.addr, real);
	for (int i = 0; i < 4; i++) {
		struct atoll_cluster *c = lib_connect(conf, list);

		lib_status(c, "noleader");
		atoll_cluster_shutdown(c);
	}
	fake_stop(&f);
	ok("the library hunts past a monitor that knows no leader");

	/* 7: nothing answers: -ETIMEDOUT or -ECONNREFUSED naming every monitor */
	{
		struct atoll_cluster *c;

		r = atoll_cluster_create(&c, conf, 0);
		CHECK(r == 0, "create");
		atoll_cluster_set(c, "mon_host", "127.0.0.1:1, 127.0.0.1:2");
		atoll_cluster_set(c, "client_mount_timeout", "2s");
		r = atoll_cluster_connect(c);
		CHECK(r == -ECONNREFUSED || r == -ETIMEDOUT, "connect to nothing: %d", r);
		CHECK(strstr(atoll_last_error(), "127.0.0.1:1") &&
		      strstr(atoll_last_error(), "127.0.0.1:2"),
		      "the error does not name both monitors: %s", atoll_last_error());
		atoll_cluster_shutdown(c);
	}
	ok("with no monitor up, connect fails naming every monitor tried");
	return 0;
}
