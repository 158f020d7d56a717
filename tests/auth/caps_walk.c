/*
 * caps_walk.c - walks the tables of doc/caps.md against a real cluster:
 * from an authenticated client connection with limited caps, sends every
 * message type to an OSD and to the monitor, every sub-op of OSD_OP and
 * every monitor command, and checks each is refused or allowed as the
 * table says.  Reading the tables from the doc is what keeps the doc and
 * the code from drifting apart.
 *
 *   auth-caps-walk DOC ATOLL_CONF ENTITY POOL_A POOL_B MON_ADDR MON_LOG OSD_ADDR OSD_LOG
 *
 * ENTITY (atoll.conf's auth_name) must hold mon caps `allow r` and osd
 * caps `allow r pool=POOL_A`.  Then: sub-ops needing `r` are allowed on
 * POOL_A, those needing `w` get -EPERM, everything on POOL_B gets
 * -EPERM; admin requests (`x`) get -EPERM; messages only OSDs or
 * monitors send are dropped and logged by the OSD; monitor messages not
 * needing `r` are refused and logged; commands not needing `r` get
 * -EACCES.  Also: the same key declaring itself osd.1 in its hello is
 * refused, an OSD_BOOT for osd.1 with osd.1's uuid (the "stolen uuid")
 * is refused and moves nothing, and client.bootstrap-osd, whose hello
 * may declare an OSD, can neither boot osd.1 nor send an OSD a REP_OP.
 *
 * Reaches into the client library (lib/client/client.h) for its
 * messenger, its authenticated connections and its map.  Exit 0 when
 * every row behaved, 1 otherwise, 77 without authentication.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atoll/atoll.h>

#include "auth_config.h"
#include "client.h"
#include "encode.h"
#include "msg.h"
#include "msg_auth.h"
#include "osdmap.h"
#include "proto.h"
#include "scrub_proto.h"

#define ROWS_MAX	64

struct row {
	char c[4][64];		/* cells, backticks removed */
	int n;
};

struct section {
	const char *title;
	struct row rows[ROWS_MAX];
	int n;
};

static struct section osd_msgs = { .title = "Messages to an OSD" };
static struct section subops = { .title = "Sub-ops of OSD_OP" };
static struct section mon_msgs = { .title = "Messages to a monitor" };
static struct section commands = { .title = "Monitor commands" };
static struct section *sections[] = { &osd_msgs, &subops, &mon_msgs, &commands };

static int failures;
static struct atoll_cluster *cl;
static const char *entity;

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fputc('\n', stderr); \
		       failures++; } while (0)

static void cell_copy(char *dst, size_t len, const char *s, size_t n)
{
	size_t j = 0;

	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n'))
		n--;
	for (size_t i = 0; i < n && j + 1 < len; i++)
		if (s[i] != '`')
			dst[j++] = s[i];
	dst[j] = '\0';
}

static int read_doc(const char *path)
{
	FILE *f = fopen(path, "r");
	struct section *cur = NULL;
	char line[512];

	if (!f) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "## ", 3)) {
			cur = NULL;
			for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
				if (!strncmp(line + 3, sections[i]->title,
					     strlen(sections[i]->title)))
					cur = sections[i];
			continue;
		}
		/* a body row: "| `X` | ..." (the header row has no backtick
		 * in its first cell, the rule row none at all) */
		if (!cur || strncmp(line, "| `", 3) || cur->n == ROWS_MAX)
			continue;
		struct row *r = &cur->rows[cur->n++];
		char *p = line + 1;

		r->n = 0;
		while (r->n < 4) {
			char *bar = strchr(p, '|');

			if (!bar)
				break;
			cell_copy(r->c[r->n++], sizeof(r->c[0]), p, (size_t)(bar - p));
			p = bar + 1;
		}
	}
	fclose(f);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (!sections[i]->n) {
			fprintf(stderr, "%s: no table under '## %s'\n", path, sections[i]->title);
			return -1;
		}
	return 0;
}

static uint64_t epoch_now(void)
{
	uint64_t e;

	atoll_cluster_wait_for_latest_map(cl);
	pthread_mutex_lock(&cl->lock);
	e = cl->map ? cl->map->epoch : 0;
	pthread_mutex_unlock(&cl->lock);
	return e;
}

static int pool_id(const char *name)
{
	int64_t id = atoll_pool_lookup(cl, name);

	if (id < 0) {
		fprintf(stderr, "pool '%s': %s\n", name, atoll_strerror((int)id));
		exit(1);
	}
	return (int)id;
}

/* One OSD_OP of the given sub-op codes on pool: its result. */
static int send_op(struct msg_conn *osd, int pool, const uint16_t *codes, uint32_t n)
{
	static uint64_t tid = 1000000;
	struct osd_subop ops[4];
	struct osd_op_req req;
	struct osd_op_reply rep;
	const void *data = NULL;
	size_t data_len = 0;
	bool owned = false;
	struct msg *m, *reply = NULL;
	struct enc e;
	struct dec d;
	int r;

	for (int attempt = 0; attempt < 3; attempt++) {
		memset(&req, 0, sizeof(req));
		memset(ops, 0, sizeof(ops));
		for (uint32_t i = 0; i < n; i++) {
			ops[i].code = codes[i];
			ops[i].name = "k";
			ops[i].name_len = 1;
			ops[i].len = 1;
		}
		req.reqid.client = cl->id;
		req.reqid.tid = tid++;
		req.epoch = epoch_now();
		req.pool = (uint32_t)pool;
		req.oid = "caps-walk";
		req.oid_len = 9;
		req.nops = n;
		req.ops = ops;
		enc_init(&e);
		if (osd_op_req_encode(&req, &e, &data, &data_len, &owned) < 0)
			return -EINVAL;
		m = msg_new(MT_OSD_OP, &e);
		enc_free(&e);
		if (m && data_len)
			msg_set_data(m, data, data_len);
		if (owned)
			free((void *)data);
		if (!m)
			return -ENOMEM;
		r = msg_call_wait(osd, m, 10000, &reply);
		if (r < 0)
			return r;
		dec_init(&d, reply->front, reply->front_len);
		memset(&rep, 0, sizeof(rep));
		r = osd_op_reply_decode(&d, reply->data_len, &rep);
		if (!r)
			r = rep.result;
		osd_op_reply_clear(&rep);
		msg_free(reply);
		if (r != -ESTALE)
			return r;
		sleep(1);	/* a map moved under us: again */
	}
	return r;
}

static bool log_has(const char *path, const char *a, const char *b)
{
	FILE *f = fopen(path, "r");
	char line[2048];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, a);

		found = p && strstr(p, b);
	}
	fclose(f);
	return found;
}

static int send_raw(struct msg_conn *c, uint16_t type)
{
	uint8_t junk[16] = { 0 };
	struct enc e;
	struct msg *m;

	enc_init(&e);
	enc_raw(&e, junk, sizeof(junk));
	m = msg_new(type, &e);
	enc_free(&e);
	return m ? msg_send(c, m) : -ENOMEM;
}

static void walk_subops(struct msg_conn *osd, int pa, int pb)
{
	bool seen[OSD_OP_LIST + 1] = { false };

	for (int i = 0; i < subops.n; i++) {
		const struct row *r = &subops.rows[i];
		uint16_t code = (uint16_t)atoi(r->c[1]);
		bool need_w = strchr(r->c[2], 'w') != NULL;
		int ra, rb;

		if (code < 1 || code > OSD_OP_LIST || r->n < 3) {
			FAIL("sub-op row '%s': bad code '%s'", r->c[0], r->c[1]);
			continue;
		}
		seen[code] = true;
		ra = send_op(osd, pa, &code, 1);
		rb = send_op(osd, pb, &code, 1);
		if (need_w ? ra != -EPERM : (ra == -EPERM || ra == -ETIMEDOUT))
			FAIL("sub-op %s (needs %s) on the r pool: %d (%s)", r->c[0], r->c[2], ra,
			     atoll_strerror(ra));
		if (rb != -EPERM)
			FAIL("sub-op %s on a pool outside the caps: %d, not -EPERM", r->c[0], rb);
		printf("ok: sub-op %-15s needs %s: %s on the r pool, -EPERM on the other\n",
		       r->c[0], r->c[2], need_w ? "-EPERM" : "allowed");
	}
	for (int code = 1; code <= OSD_OP_LIST; code++)
		if (!seen[code])
			FAIL("sub-op code %d has no row in the doc", code);
	/* a compound op needs the union of its sub-ops */
	{
		uint16_t rw[2] = { OSD_OP_READ, OSD_OP_WRITE };
		int r = send_op(osd, pa, rw, 2);

		if (r != -EPERM)
			FAIL("READ+WRITE on the r pool: %d, not -EPERM", r);
		else
			printf("ok: a compound READ+WRITE needs rw\n");
	}
}

static void walk_osd_msgs(struct msg_conn *osd, const char *osd_log, int pa)
{
	for (int i = 0; i < osd_msgs.n; i++) {
		const struct row *r = &osd_msgs.rows[i];
		uint16_t type = (uint16_t)atoi(r->c[1]);
		char what[64], who[96];

		if (r->n < 4 || !type) {
			FAIL("osd message row '%s' malformed", r->c[0]);
			continue;
		}
		if (!strcmp(r->c[0], "OSD_OP"))
			continue;	/* the sub-ops */
		if (!strcmp(r->c[2], "any entity")) {
			struct msg *m, *reply = NULL;
			struct enc e;
			struct dec d;
			int rc = -EPROTO;

			if (strcmp(r->c[3], "x")) {
				FAIL("osd message %s: cap '%s' not walked", r->c[0], r->c[3]);
				continue;
			}
			enc_init(&e);
			if (type == MT_OSD_SCRUB) {
				struct osd_scrub_req q = { .pool = (uint32_t)pa, .pg = 0 };

				osd_scrub_req_encode(&q, &e);
			} else {
				struct pg_query_req q = { .pool = (uint32_t)pa, .pg = 0 };

				pg_query_req_encode(&q, &e);
			}
			m = msg_new(type, &e);
			enc_free(&e);
			if (m && msg_call_wait(osd, m, 10000, &reply) == 0) {
				dec_init(&d, reply->front, reply->front_len);
				if (type == MT_OSD_SCRUB) {
					struct osd_scrub_reply sr;

					memset(&sr, 0, sizeof(sr));
					if (!osd_scrub_reply_decode(&d, &sr))
						rc = sr.rc;
					osd_scrub_reply_clear(&sr);
				} else {
					struct pg_query_reply *pr = calloc(1, sizeof(*pr));

					if (pr && !pg_query_reply_decode(&d, pr))
						rc = pr->rc;
					free(pr);
				}
				msg_free(reply);
			}
			if (rc != -EPERM)
				FAIL("%s without the admin cap: %d, not -EPERM", r->c[0], rc);
			else
				printf("ok: %s needs x: -EPERM\n", r->c[0]);
			continue;
		}
		if (send_raw(osd, type) < 0)
			FAIL("cannot send %s", r->c[0]);
		snprintf(what, sizeof(what), "message of type %u from ", type);
		snprintf(who, sizeof(who), "('%s') refused", entity);
		for (int t = 0; t < 50 && !log_has(osd_log, what, who); t++)
			usleep(100000);
		if (!log_has(osd_log, what, who))
			FAIL("%s (only %s) from %s: the OSD logged no refusal", r->c[0], r->c[2],
			     entity);
		else
			printf("ok: %s only from %s: refused\n", r->c[0], r->c[2]);
	}
	/* a type without a row: refused */
	send_raw(osd, 99);
	for (int t = 0; t < 50 && !log_has(osd_log, "message of type 99 from ", "refused"); t++)
		usleep(100000);
	if (!log_has(osd_log, "message of type 99 from ", "refused"))
		FAIL("message type 99 (no row) to an OSD: not refused");
	else
		printf("ok: a message type without a row (99) is refused by the OSD\n");
	if (!msg_conn_is_open(osd))
		FAIL("the OSD closed the client's connection");
}

static void walk_mon_msgs(struct msg_conn *mon, const char *mon_log)
{
	for (int i = 0; i < mon_msgs.n; i++) {
		const struct row *r = &mon_msgs.rows[i];
		uint16_t type = (uint16_t)atoi(r->c[1]);
		char what[64], who[96];
		bool refused;

		if (r->n < 3 || !type) {
			FAIL("mon message row '%s' malformed", r->c[0]);
			continue;
		}
		if (type == MT_MON_COMMAND)
			continue;	/* the commands */
		if (send_raw(mon, type) < 0)
			FAIL("cannot send %s", r->c[0]);
		snprintf(what, sizeof(what), "%s from ", r->c[0]);
		snprintf(who, sizeof(who), "refused: '%s' lacks", entity);
		for (int t = 0; t < 30 && !log_has(mon_log, what, who); t++)
			usleep(100000);
		refused = log_has(mon_log, what, who);
		if (refused != (strcmp(r->c[2], "r") != 0))
			FAIL("%s (needs %s) from a key with 'allow r': %s", r->c[0], r->c[2],
			     refused ? "refused" : "not refused");
		else
			printf("ok: %s needs %s: %s\n", r->c[0], r->c[2],
			       refused ? "refused" : "allowed");
	}
	send_raw(mon, 99);
	for (int t = 0; t < 30 && !log_has(mon_log, "message of type 99 from ", "refused"); t++)
		usleep(100000);
	if (!log_has(mon_log, "message of type 99 from ", "refused"))
		FAIL("message type 99 (no row) to the monitor: not refused");
	else
		printf("ok: a message type without a row (99) is refused by the monitor\n");
}

static void walk_commands(void)
{
	for (int i = 0; i < commands.n; i++) {
		const struct row *r = &commands.rows[i];
		char json[160], *status = NULL;
		bool need_r = !strcmp(r->c[1], "r");
		int rc;

		snprintf(json, sizeof(json), "{\"prefix\": \"%s\"}", r->c[0]);
		rc = atoll_mon_command(cl, json, &status, NULL, NULL);
		if (need_r ? rc == -EACCES :
		    rc != -EACCES || !status || !strstr(status, "lacks the mon cap"))
			FAIL("command '%s' (needs %s) from 'allow r': %d (%s)", r->c[0], r->c[1],
			     rc, status ? status : "");
		else
			printf("ok: command %-18s needs %s: %s\n", r->c[0], r->c[1],
			       need_r ? "allowed" : "-EACCES");
		atoll_free(status);
	}
}

/* The key of ENTITY in a hello that declares osd.1: refused. */
static void forged_hello(const char *mon_addr, const char *mon_log)
{
	struct msgr_config mc;
	struct msgr_ops ops = { 0 };
	struct msgr *m = NULL;
	struct msg_conn *c;
	struct msg *q, *reply = NULL;
	struct mon_subscribe s = { 0 };
	struct enc e;
	int r;

	memset(&mc, 0, sizeof(mc));
	mc.size_of = sizeof(mc);
	mc.me.type = MSG_ENTITY_OSD;
	mc.me.id = 1;
	mc.auth = cl->auth;
	mc.reconnect_min_ms = 1000;
	msgr_fsid(cl->msgr, mc.fsid);
	if (msgr_create(&mc, &ops, NULL, &m) < 0 || msgr_start(m) < 0) {
		FAIL("cannot make a messenger");
		return;
	}
	c = msgr_connect(m, mon_addr);
	enc_init(&e);
	mon_subscribe_encode(&s, &e);
	q = msg_new(MT_MON_SUBSCRIBE, &e);
	enc_free(&e);
	r = msg_call_wait(c, q, 3000, &reply);
	msg_free(reply);
	if (msg_conn_is_open(c) || !r)
		FAIL("'%s' declaring osd.1 in its hello was served", entity);
	else if (!log_has(mon_log, "failed: its hello declares another entity type", ""))
		FAIL("the monitor logged no refusal of the forged hello");
	else
		printf("ok: '%s' declaring osd.1 in its hello is refused\n", entity);
	msg_conn_put(c);
	msgr_destroy(m);
}

/* An OSD_BOOT for osd.1 with its uuid (known from any map) from this key. */
/* Sends q as an OSD_BOOT on c and waits for the reply: its rc (or the
 * call's error), *rep the decoded reply (zeroed when none). */
static int boot_call(struct msg_conn *c, const struct osd_boot_req *q, struct osd_boot_reply *rep)
{
	struct msg *m, *reply = NULL;
	struct enc e;
	struct dec d;
	int r;

	enc_init(&e);
	osd_boot_req_encode(q, &e);
	m = msg_new(MT_OSD_BOOT, &e);
	enc_free(&e);
	r = msg_call_wait(c, m, 10000, &reply);
	memset(rep, 0, sizeof(*rep));
	if (!r) {
		dec_init(&d, reply->front, reply->front_len);
		r = osd_boot_reply_decode(&d, rep);
		if (!r)
			r = rep->rc;
		msg_free(reply);
	}
	return r;
}

static void stolen_uuid(struct msg_conn *mon)
{
	struct osd_boot_req q;
	struct osd_boot_reply rep;
	char before[OSDMAP_ADDR_MAX + 1] = "", after[OSDMAP_ADDR_MAX + 1] = "";
	int r;

	memset(&q, 0, sizeof(q));
	q.id = 1;
	epoch_now();
	pthread_mutex_lock(&cl->lock);
	{
		const struct osdmap_osd *o = osdmap_osd(cl->map, 1);

		if (o) {
			memcpy(q.uuid, o->uuid, 16);
			snprintf(before, sizeof(before), "%s", o->addr);
		}
	}
	pthread_mutex_unlock(&cl->lock);
	snprintf(q.addr, sizeof(q.addr), "127.0.0.1:9");
	snprintf(q.host, sizeof(q.host), "evil");
	r = boot_call(mon, &q, &rep);
	sleep(1);
	epoch_now();
	pthread_mutex_lock(&cl->lock);
	{
		const struct osdmap_osd *o = osdmap_osd(cl->map, 1);

		if (o)
			snprintf(after, sizeof(after), "%s", o->addr);
	}
	pthread_mutex_unlock(&cl->lock);
	if (r != -EACCES || strcmp(before, after))
		FAIL("OSD_BOOT for osd.1 with its uuid from '%s': %d, addr %s -> %s", entity, r,
		     before, after);
	else
		printf("ok: a boot for osd.1 with its stolen uuid: -EACCES (%s), address "
		       "unchanged\n", rep.status);
}

/* client.bootstrap-osd's connection declares an OSD identity (to make
 * new OSDs): declaring osd.1, its OSD_BOOT for osd.1 is refused. */
static void bootstrap_boot(const char *mon_addr, const char *osd_addr, const char *osd_log)
{
	struct msgr_config mc;
	struct msgr_ops ops = { 0 };
	struct msg_auth *a = NULL;
	struct msgr *m = NULL;
	struct msg_conn *c;
	struct osd_boot_req q;
	struct osd_boot_reply rep;
	char err[512];
	int r;

	if (auth_config_load(cl->cfg, "client", "client.bootstrap-osd", NULL, &a, err,
			     sizeof(err)) < 0 || !a) {
		FAIL("no bootstrap key: %s", err);
		return;
	}
	memset(&mc, 0, sizeof(mc));
	mc.size_of = sizeof(mc);
	mc.me.type = MSG_ENTITY_OSD;
	mc.me.id = 1;
	mc.auth = a;
	msgr_fsid(cl->msgr, mc.fsid);
	if (msgr_create(&mc, &ops, NULL, &m) < 0 || msgr_start(m) < 0) {
		FAIL("cannot make a messenger");
		goto out;
	}
	memset(&q, 0, sizeof(q));
	q.id = 1;
	pthread_mutex_lock(&cl->lock);
	if (osdmap_osd(cl->map, 1))
		memcpy(q.uuid, osdmap_osd(cl->map, 1)->uuid, 16);
	pthread_mutex_unlock(&cl->lock);
	snprintf(q.addr, sizeof(q.addr), "127.0.0.1:9");
	c = msgr_connect(m, mon_addr);
	r = boot_call(c, &q, &rep);
	if (r != -EACCES)
		FAIL("client.bootstrap-osd as osd.1 booting osd.1: %d, not -EACCES", r);
	else
		printf("ok: client.bootstrap-osd declaring osd.1 cannot boot it: -EACCES\n");
	msg_conn_put(c);
	/* nor, with the OSD ticket the monitor gave it, push to an OSD */
	c = msgr_connect(m, osd_addr);
	if (send_raw(c, MT_REP_OP) < 0)
		FAIL("cannot send REP_OP as client.bootstrap-osd");
	for (int t = 0; t < 50 && !log_has(osd_log, "message of type 31 from ",
					   "('client.bootstrap-osd') refused"); t++)
		usleep(100000);
	if (!log_has(osd_log, "message of type 31 from ", "('client.bootstrap-osd') refused"))
		FAIL("REP_OP from client.bootstrap-osd declaring osd.1: not refused");
	else
		printf("ok: client.bootstrap-osd declaring osd.1 cannot send REP_OP\n");
	msg_conn_put(c);
out:
	msgr_destroy(m);
	msg_auth_free(a);
}

int main(int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	struct msg_conn *osd = NULL, *mon = NULL;
	int r, pa, pb;

	if (argc != 10) {
		fprintf(stderr, "usage: auth-caps-walk DOC ATOLL_CONF ENTITY POOL_A POOL_B "
			"MON_ADDR MON_LOG OSD_ADDR OSD_LOG\n");
		return 2;
	}
	if (read_doc(argv[1]) < 0)
		return 1;
	entity = argv[3];
	if ((r = atoll_cluster_create(&cl, argv[2], 0)) || (r = atoll_cluster_connect(cl)) ||
	    (r = atoll_ioctx_create(cl, argv[4], &io, 0))) {
		fprintf(stderr, "cannot connect: %s\n", atoll_strerror(r));
		return 1;
	}
	if (!cl->auth) {
		fprintf(stderr, "the cluster runs without authentication\n");
		return 77;
	}
	pa = pool_id(argv[4]);
	pb = pool_id(argv[5]);
	mon = msgr_connect(cl->msgr, argv[6]);
	osd = msgr_connect(cl->msgr, argv[8]);
	if (!mon || !osd) {
		fprintf(stderr, "cannot dial\n");
		return 1;
	}
	walk_subops(osd, pa, pb);
	walk_osd_msgs(osd, argv[9], pa);
	walk_mon_msgs(mon, argv[7]);
	walk_commands();
	forged_hello(argv[6], argv[7]);
	stolen_uuid(mon);
	bootstrap_boot(argv[6], argv[8], argv[9]);
	msg_conn_put(osd);
	msg_conn_put(mon);
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(cl);
	if (failures)
		fprintf(stderr, "%d rows of doc/caps.md not as written\n", failures);
	return failures ? 1 : 0;
}
