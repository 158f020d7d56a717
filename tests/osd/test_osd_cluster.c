/*
 * test_osd_cluster.c - atoll-osd against a real monitor: one atoll-mon and
 * three atoll-osd processes on 127.0.0.1..4 (each its own host), driven
 * through the messenger with lib/proto.h's encodings, the way a client
 * library does.  Checks, in order:
 *   - a write to the primary is acknowledged and reads back;
 *   - a resend of the same request id returns the first result and version
 *     and is not applied again;
 *   - an op with an older map epoch gets -ESTALE and our epoch;
 *   - an op sent to a replica (not the primary) gets -ESTALE;
 *   - a reserved object name is refused;
 *   - after kill -9 of a replica the PG goes degraded and writes go on
 *     (min_size 2);
 *   - after stopping everything, atoll-store-tool finds the object in all
 *     three stores (the killed replica too) and hides the PG meta object.
 *
 * Usage: test_osd_cluster ATOLL-MON ATOLL-OSD ATOLL-STORE-TOOL
 * Exit 0 pass, 1 fail, 77 skip (e.g. 127.0.0.2 cannot be bound).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "msg.h"
#include "osdmap.h"
#include "placement.h"
#include "proto.h"
#include "testutil.h"

static const char *MON, *OSD, *TOOL;
static char dir[256];
static pid_t mon_pid, osd_pid[3];
static char mon_addr[64];
#define CHECK(cond, ...) TU_CHECK(cond, goto out, __VA_ARGS__)

/* ---- processes ------------------------------------------------------- */

static pid_t spawn(char *const argv[], const char *logname)
{
	char path[512];
	pid_t pid = fork();

	if (pid == 0) {
		snprintf(path, sizeof(path), "%s/%s", dir, logname);
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static int wait_exit(pid_t pid, unsigned timeout_ms)
{
	uint64_t end = tu_now_ms() + timeout_ms;
	int st;

	while (tu_now_ms() < end) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		tu_sleep_ms(20);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* Runs argv, returns its exit code; its stdout in out (NUL-terminated). */
static int run(char *const argv[], char *out, size_t outlen)
{
	int p[2], st;
	size_t n = 0;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		ssize_t r = read(p[0], out + n, outlen - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == outlen - 1)
			break;
	}
	out[n] = 0;
	close(p[0]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int free_port(const char *ip)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	inet_pton(AF_INET, ip, &a.sin_addr);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* ---- a minimal client -------------------------------------------------- */

static struct msgr *msgr;
static struct msg_conn *mon;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct osdmap *map;	/* under lock */
static uint64_t client_id;

static void on_msg(void *arg, struct msg_conn *c, struct msg *m)
{
	struct mon_map_msg mm;
	struct dec d;

	(void)arg; (void)c;
	if (m->type != MT_MON_MAP)
		goto out;
	dec_init(&d, m->front, m->front_len);
	if (mon_map_msg_decode(&d, &mm))
		goto out;
	pthread_mutex_lock(&lock);
	if (mm.full && (!map || mm.full->epoch > map->epoch)) {
		osdmap_free(map);
		map = mm.full;
		mm.full = NULL;
	}
	for (uint32_t i = 0; map && i < mm.ninc; i++)
		if (mm.incs[i].epoch == map->epoch + 1)
			osdmap_apply(map, &mm.incs[i]);
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	mon_map_msg_clear(&mm);
out:
	msg_free(m);
}

struct call {
	bool done;
	int err;
	struct msg *reply;
};

static void call_done(void *arg, struct msg *reply, int err)
{
	struct call *c = arg;

	pthread_mutex_lock(&lock);
	c->reply = reply;
	c->err = err;
	c->done = true;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static int mon_command(const char *json, char *out, size_t outlen)
{
	struct mon_command_reply rep;
	struct msg *m, *reply;
	char *status = NULL;
	struct enc e;
	struct dec d;
	int r;

	enc_init(&e);
	mon_command_encode(json, NULL, &e);
	m = msg_new(MT_MON_COMMAND, &e);
	enc_free(&e);
	r = msg_call_wait(mon, m, 10000, &reply);
	if (r)
		return r;
	dec_init(&d, reply->front, reply->front_len);
	r = mon_command_reply_decode(&d, &rep, &status);
	if (!r && out) {
		size_t n = rep.out_len < outlen - 1 ? rep.out_len : outlen - 1;

		memcpy(out, rep.out, n);
		out[n] = 0;
	}
	free(status);
	msg_free(reply);
	return r ? r : rep.rc;
}

/* Waits until pred(map) holds; returns the map's epoch or 0. */
static uint64_t wait_map(bool (*pred)(const struct osdmap *, void *), void *arg,
			 unsigned timeout_ms)
{
	uint64_t end = tu_now_ms() + timeout_ms, epoch = 0;

	pthread_mutex_lock(&lock);
	while (!(map && pred(map, arg))) {
		struct timespec ts;

		if (tu_now_ms() >= end)
			goto out;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&cond, &lock, &ts);
	}
	epoch = map->epoch;
out:
	pthread_mutex_unlock(&lock);
	return epoch;
}

static bool three_up(const struct osdmap *m, void *arg)
{
	(void)arg;
	return osdmap_osd_up(m, 0) && osdmap_osd_up(m, 1) && osdmap_osd_up(m, 2);
}

static bool has_pool(const struct osdmap *m, void *arg)
{
	(void)arg;
	return osdmap_pool_by_name(m, "t") != NULL;
}

static bool is_down(const struct osdmap *m, void *arg)
{
	return !osdmap_osd_up(m, *(int32_t *)arg);
}

struct target {
	uint32_t pool, pg;
	int32_t acting[OSDMAP_SIZE_MAX];
	int n;
	int32_t primary;
	uint64_t epoch;
	char addr[OSDMAP_SIZE_MAX][OSDMAP_ADDR_MAX + 1];
};

/* ---- a PG's state in `pg ls`, waited for with tu_wait_for ------------ */

struct pg_wait {
	const struct target *t;
	char *out;		/* the last answer */
	size_t outlen;
	int rc;			/* of the last pg ls */
};

/* The pg ls line of w->t, or NULL (w->rc says whether pg ls answered). */
static char *pg_line(struct pg_wait *w)
{
	char want[32];

	w->rc = mon_command("{\"prefix\": \"pg ls\", \"pool\": \"t\", "
			    "\"format\": \"plain\"}", w->out, w->outlen);
	if (w->rc)
		return NULL;
	snprintf(want, sizeof(want), "%u.%x ", w->t->pool, w->t->pg);
	return strstr(w->out, want);
}

static bool pg_degraded(void *arg)
{
	char *line = pg_line(arg);

	return line && strstr(line, "undersized") && strstr(line, "degraded") &&
	       strstr(line, "undersized") < strchr(line, '\n');
}

static bool pg_clean(void *arg)
{
	char *line = pg_line(arg), *nl = line ? strchr(line, '\n') : NULL;
	bool seen;

	if (nl)
		*nl = 0;
	/* the state column: recovered */
	seen = line && strstr(line, "active+clean");
	if (nl)
		*nl = '\n';
	return seen;
}

static int locate(const char *oid, struct target *t)
{
	int r = -ENOENT;

	pthread_mutex_lock(&lock);
	const struct osdmap_pool *p = osdmap_pool_by_name(map, "t");

	if (p) {
		t->pool = p->id;
		t->pg = placement_object_pg(p, oid, strlen(oid));
		t->n = placement_acting(map, p, t->pg, t->acting, &t->primary);
		t->epoch = map->epoch;
		for (int i = 0; i < t->n; i++)
			snprintf(t->addr[i], sizeof(t->addr[i]), "%s",
				 osdmap_osd(map, t->acting[i])->addr);
		r = 0;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

static struct msg_conn *conns[8];
static char conn_addr[8][80];

static struct msg_conn *conn_to(const char *addr)
{
	int i;

	for (i = 0; i < 8 && conns[i]; i++)
		if (!strcmp(conn_addr[i], addr))
			return conns[i];
	if (i == 8)
		return NULL;
	conns[i] = msgr_connect(msgr, addr);
	snprintf(conn_addr[i], sizeof(conn_addr[i]), "%s", addr);
	return conns[i];
}

struct op_result {
	int err;		/* transport error */
	int32_t result;
	uint64_t version;
	uint64_t epoch;
	char data[1 << 17];
	uint32_t data_len;
};

/* One op with one sub-op to addr. */
static void do_op(const char *addr, uint64_t tid, uint64_t epoch, const struct target *t,
		  const char *oid, struct osd_subop *so, struct op_result *res)
{
	struct osd_op_req req = {
		.reqid = { client_id, tid }, .epoch = epoch, .pool = t->pool, .pg = t->pg,
		.oid = oid, .oid_len = (uint32_t)strlen(oid), .nops = 1, .ops = so,
	};
	struct osd_op_reply rep;
	const void *data;
	size_t data_len;
	bool owned;
	struct msg *m, *reply = NULL;
	struct enc e;
	struct dec d;

	memset(res, 0, sizeof(*res));
	enc_init(&e);
	osd_op_req_encode(&req, &e, &data, &data_len, &owned);
	m = msg_new(MT_OSD_OP, &e);
	enc_free(&e);
	if (data_len)
		msg_set_data_ref(m, (void *)data, data_len, owned ? free : NULL, (void *)data);
	res->err = msg_call_wait(conn_to(addr), m, 5000, &reply);
	if (res->err)
		return;
	dec_init(&d, reply->front, reply->front_len);
	memset(&rep, 0, sizeof(rep));
	res->err = osd_op_reply_decode(&d, reply->data_len, &rep);
	if (!res->err) {
		res->result = rep.result;
		res->version = rep.version;
		res->epoch = rep.epoch;
		res->data_len = reply->data_len <= sizeof(res->data) ? reply->data_len : 0;
		if (res->data_len)
			memcpy(res->data, reply->data, res->data_len);
	}
	osd_op_reply_clear(&rep);
	msg_free(reply);
}

/* 16 writes of 4 KiB to one object, all in flight at once (the OSD
 * pipelines them behind each other); each must succeed with its own,
 * growing version, and the object must read back as all of them. */
static int pipelined_writes(const char *oid, uint64_t tid0, char *buf, size_t n)
{
	struct call calls[16];
	struct msg *msgs[16];
	struct target t;
	uint64_t last = 0;

	if (locate(oid, &t) || t.n == 0)
		return -1;
	for (int i = 0; i < 16; i++) {
		struct osd_subop so = { .code = OSD_OP_WRITE, .off = (uint64_t)i * 4096,
					.data = buf + i * 4096, .data_len = 4096, .len = 4096 };
		struct osd_op_req req = {
			.reqid = { client_id, tid0 + (uint64_t)i }, .epoch = t.epoch,
			.pool = t.pool, .pg = t.pg, .oid = oid, .oid_len = (uint32_t)strlen(oid),
			.nops = 1, .ops = &so,
		};
		const void *data;
		size_t data_len;
		bool owned;
		struct enc e;

		enc_init(&e);
		osd_op_req_encode(&req, &e, &data, &data_len, &owned);
		msgs[i] = msg_new(MT_OSD_OP, &e);
		enc_free(&e);
		msg_set_data_ref(msgs[i], (void *)data, data_len, owned ? free : NULL,
				 (void *)data);
	}
	memset(calls, 0, sizeof(calls));
	for (int i = 0; i < 16; i++)
		if (msg_call(conn_to(t.addr[0]), msgs[i], 10000, call_done, &calls[i]) < 0)
			return -2;
	for (int i = 0; i < 16; i++) {
		struct osd_op_reply rep;
		struct dec d;
		int r;

		pthread_mutex_lock(&lock);
		while (!calls[i].done)
			pthread_cond_wait(&cond, &lock);
		pthread_mutex_unlock(&lock);
		if (calls[i].err)
			return -3;
		dec_init(&d, calls[i].reply->front, calls[i].reply->front_len);
		memset(&rep, 0, sizeof(rep));
		r = osd_op_reply_decode(&d, calls[i].reply->data_len, &rep);
		msg_free(calls[i].reply);
		if (r || rep.result != 0) {
			fprintf(stderr, "pipelined write %d: decode %d result %d\n", i, r,
				rep.result);
			osd_op_reply_clear(&rep);
			return -4;
		}
		if (rep.version <= last) {
			fprintf(stderr, "pipelined write %d: version %" PRIu64 " after %" PRIu64 "\n",
				i, rep.version, last);
			osd_op_reply_clear(&rep);
			return -5;
		}
		last = rep.version;
		osd_op_reply_clear(&rep);
	}
	(void)n;
	return 0;
}

/* Retries an op at the primary until it gets a final answer (the PG may be
 * peering: the OSD holds the op, the call times out, we resend). */
static void op_primary(uint64_t tid, const char *oid, struct osd_subop *so,
		       struct op_result *res, unsigned timeout_ms)
{
	uint64_t end = tu_now_ms() + timeout_ms;
	struct target t;

	do {
		if (locate(oid, &t) == 0 && t.n > 0) {
			do_op(t.addr[0], tid, t.epoch, &t, oid, so, res);
			if (!res->err && res->result != -ESTALE)
				return;
		}
		tu_sleep_ms(200);
	} while (tu_now_ms() < end);
}

/* ---- the test -------------------------------------------------------------- */

static void stop_all(void)
{
	for (int i = 0; i < 3; i++)
		if (osd_pid[i] > 0) {
			kill(osd_pid[i], SIGKILL);
			waitpid(osd_pid[i], NULL, 0);
		}
	if (mon_pid > 0) {
		kill(mon_pid, SIGKILL);
		waitpid(mon_pid, NULL, 0);
	}
}

int main(int argc, char **argv)
{
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops ops = { .dispatch = on_msg };
	static char data1[8192], data2[8192], out[1 << 16];
	static struct op_result res;
	struct target t;
	char addr[300], osddir[3][300], monlog[] = "mon.log";
	uint64_t v1, v2, epoch;
	int32_t victim;
	int rc, keep = getenv("ATOLL_TEST_KEEP") != NULL;

	if (argc != 4) {
		fprintf(stderr, "usage: %s ATOLL-MON ATOLL-OSD ATOLL-STORE-TOOL\n", argv[0]);
		return 2;
	}
	MON = argv[1];
	OSD = argv[2];
	TOOL = argv[3];
	if (free_port("127.0.0.2") < 0) {
		fprintf(stderr, "SKIP: cannot bind 127.0.0.2\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "/tmp/atoll-test-osd.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	fprintf(stderr, "test folder %s\n", dir);

	/* monitor */
	snprintf(addr, sizeof(addr), "%s/mon", dir);
	{
		char *a[] = { (char *)MON, "--mkfs", "--data", addr, NULL };

		CHECK(run(a, out, sizeof(out)) == 0, "atoll-mon --mkfs failed");
	}
	snprintf(mon_addr, sizeof(mon_addr), "127.0.0.1:%d", free_port("127.0.0.1"));
	{
		char *a[] = { (char *)MON, "--data", addr, "--addr", mon_addr,
			      "--set", "osd_heartbeat_grace=4s", NULL };

		mon_pid = spawn(a, monlog);
	}
	tu_sleep_ms(300);
	/* three OSDs, one host each */
	for (int i = 0; i < 3; i++) {
		char id[16], host[16], bind[32], log[32];

		snprintf(osddir[i], sizeof(osddir[i]), "%s/osd%d", dir, i);
		{
			char *a[] = { (char *)OSD, "--mkfs", "--data", osddir[i], "--mon", mon_addr,
				      "--size", "128M", NULL };

			CHECK(run(a, id, sizeof(id)) == 0, "atoll-osd --mkfs %d failed", i);
			CHECK(atoi(id) == i, "osd %d got id %s", i, id);
		}
		snprintf(host, sizeof(host), "h%d", i);
		snprintf(bind, sizeof(bind), "127.0.0.%d", i + 2);
		snprintf(log, sizeof(log), "osd%d.log", i);
		char *a[] = { (char *)OSD, "--data", osddir[i], "--addr", bind, "--host", host,
			      "--mon", mon_addr, "--set", "osd_heartbeat_grace=4s",
			      "--set", "log_level=debug", NULL };

		osd_pid[i] = spawn(a, log);
	}

	/* the client */
	client_id = ((uint64_t)getpid() << 32) ^ tu_now_ms();
	mc.me.type = MSG_ENTITY_CLIENT;
	mc.me.id = client_id;
	CHECK(msgr_create(&mc, &ops, NULL, &msgr) == 0, "msgr_create");
	CHECK(msgr_start(msgr) == 0, "msgr_start");
	mon = msgr_connect(msgr, mon_addr);
	{
		struct mon_subscribe s = { .have = 0 };
		struct enc e;

		enc_init(&e);
		mon_subscribe_encode(&s, &e);
		msg_send(mon, msg_new(MT_MON_SUBSCRIBE, &e));
		enc_free(&e);
	}
	CHECK(wait_map(three_up, NULL, 20000), "the three OSDs did not come up");
	rc = mon_command("{\"prefix\": \"pool create\", \"name\": \"t\", \"size\": 3, "
			 "\"min_size\": 2, \"pg_num\": 8, \"failure_domain\": \"host\"}", NULL, 0);
	CHECK(rc == 0, "pool create: %d", rc);
	CHECK(wait_map(has_pool, NULL, 10000), "the pool did not appear in the map");

	/* 1. a write to the primary */
	for (size_t i = 0; i < sizeof(data1); i++) {
		data1[i] = (char)(i * 7 + 1);
		data2[i] = (char)(i * 13 + 5);
	}
	struct osd_subop wf = { .code = OSD_OP_WRITE_FULL, .data = data1,
				.data_len = sizeof(data1), .len = sizeof(data1) };

	op_primary(1, "obj-a", &wf, &res, 30000);
	CHECK(!res.err && res.result == 0, "write: err %d result %d", res.err, res.result);
	v1 = res.version;
	CHECK(v1 > 0, "write returned version 0");

	/* 2. the same reqid again, other data: first result, not applied */
	wf.data = data2;
	op_primary(1, "obj-a", &wf, &res, 10000);
	CHECK(!res.err && res.result == 0, "resend: err %d result %d", res.err, res.result);
	CHECK(res.version == v1, "resend got version %" PRIu64 ", first was %" PRIu64,
	      res.version, v1);
	struct osd_subop rd = { .code = OSD_OP_READ, .off = 0, .len = 0 };

	op_primary(2, "obj-a", &rd, &res, 10000);
	CHECK(!res.err && res.result == 0, "read: err %d result %d", res.err, res.result);
	CHECK(res.data_len == sizeof(data1) && !memcmp(res.data, data1, sizeof(data1)),
	      "read back %u bytes, not the first write's data", res.data_len);
	CHECK(res.version == v1, "read version %" PRIu64 " != %" PRIu64, res.version, v1);

	/* an append makes a new version */
	struct osd_subop ap = { .code = OSD_OP_APPEND, .data = "tail", .data_len = 4, .len = 4 };

	op_primary(3, "obj-a", &ap, &res, 10000);
	CHECK(!res.err && res.result == 0, "append: err %d result %d", res.err, res.result);
	v2 = res.version;
	CHECK(v2 > v1, "append version %" PRIu64 " not above %" PRIu64, v2, v1);

	/* pipelined writes to one object */
	{
		static char pbuf[16 * 4096];

		for (size_t i = 0; i < sizeof(pbuf); i++)
			pbuf[i] = (char)(i / 4096 + i * 3);
		rc = pipelined_writes("obj-p", 1000, pbuf, sizeof(pbuf));
		CHECK(rc == 0, "pipelined writes failed (%d)", rc);
		struct osd_subop rp = { .code = OSD_OP_READ, .off = 0, .len = 0 };

		op_primary(1100, "obj-p", &rp, &res, 10000);
		CHECK(!res.err && res.result == 0, "read obj-p: %d %d", res.err, res.result);
		CHECK(res.data_len == sizeof(pbuf) && !memcmp(res.data, pbuf, sizeof(pbuf)),
		      "obj-p reads back %u bytes, not what was written", res.data_len);
	}

	/* guards, attributes, omap, listing, limits */
	{
		struct osd_subop so;
		uint64_t tid = 2000;

#define OP1(...) do { so = (struct osd_subop){ __VA_ARGS__ }; \
		op_primary(tid++, "obj-a", &so, &res, 10000); \
		CHECK(!res.err, "transport error %d", res.err); } while (0)
		OP1(.code = OSD_OP_CREATE, .flags = OSD_OPF_EXCL);
		CHECK(res.result == -EEXIST, "create excl of an existing object: %d", res.result);
		OP1(.code = OSD_OP_ASSERT_VERSION, .off = v2 + 1000);
		CHECK(res.result == -ERANGE, "assert_version: %d", res.result);
		OP1(.code = OSD_OP_ASSERT_VERSION, .off = v2);
		CHECK(res.result == 0, "assert_version of the right version: %d", res.result);
		OP1(.code = OSD_OP_SETXATTR, .name = "colour", .name_len = 6, .val = "blue",
		    .val_len = 4);
		CHECK(res.result == 0, "setxattr: %d", res.result);
		v2 = res.version;
		OP1(.code = OSD_OP_CMPXATTR, .name = "colour", .name_len = 6, .val = "blue",
		    .val_len = 4, .off = OSD_CMP_EQ);
		CHECK(res.result == 0, "cmpxattr equal: %d", res.result);
		OP1(.code = OSD_OP_CMPXATTR, .name = "colour", .name_len = 6, .val = "red",
		    .val_len = 3, .off = OSD_CMP_EQ);
		CHECK(res.result == -ECANCELED, "cmpxattr different: %d", res.result);
		OP1(.code = OSD_OP_GETXATTR, .name = "colour", .name_len = 6);
		CHECK(res.result == 0 && res.data_len == 4 && !memcmp(res.data, "blue", 4),
		      "getxattr: %d, %u bytes", res.result, res.data_len);
		OP1(.code = OSD_OP_RMXATTR, .name = "nope", .name_len = 4);
		CHECK(res.result == -ENODATA, "rmxattr of a missing attribute: %d", res.result);
		OP1(.code = OSD_OP_WRITE, .off = 128ull << 20, .data = "x", .data_len = 1, .len = 1);
		CHECK(res.result == -EFBIG, "a write past 128 MiB: %d", res.result);
		struct osd_kv kv[2] = { { "k1", 2, "v1", 2 }, { "k2", 2, "v2", 2 } };

		OP1(.code = OSD_OP_OMAP_SET, .nkv = 2, .kv = kv);
		CHECK(res.result == 0, "omap_set: %d", res.result);
		OP1(.code = OSD_OP_OMAP_GET, .len = 10);
		/* u32 n, (blob k, blob v) x n, u8 more */
		CHECK(res.result == 0 && res.data_len == 4 + 2 * (4 + 2 + 4 + 2) + 1 &&
		      res.data[0] == 2 && !memcmp(res.data + 8, "k1", 2),
		      "omap_get: %d, %u bytes", res.result, res.data_len);
		OP1(.code = OSD_OP_STAT);
		CHECK(res.result == 0 && res.data_len == 24, "stat: %d", res.result);
		uint64_t size;

		memcpy(&size, res.data, 8);
		CHECK(size == 8196, "stat size %" PRIu64, size);
		CHECK(res.version == v2 + 1, "stat version %" PRIu64 " (omap_set made %" PRIu64 ")",
		      res.version, v2 + 1);
		v2 = res.version;
		/* a listing of the PG: obj-a, never the meta object */
		so = (struct osd_subop){ .code = OSD_OP_LIST, .len = 100 };
		CHECK(locate("obj-a", &t) == 0, "locate");
		{
			struct osd_op_req lreq = { 0 };

			(void)lreq;
			do_op(t.addr[0], tid++, t.epoch, &t, "", &so, &res);
		}
		CHECK(!res.err && res.result == 0, "list: %d %d", res.err, res.result);
		CHECK(memmem(res.data, res.data_len, "obj-a", 5) &&
		      !memmem(res.data, res.data_len, "pgmeta", 6), "list output is wrong");
#undef OP1
	}

	/* 3. an older epoch: -ESTALE with the OSD's epoch */
	CHECK(locate("obj-a", &t) == 0, "locate");
	do_op(t.addr[0], 4, t.epoch - 1, &t, "obj-a", &rd, &res);
	CHECK(!res.err && res.result == -ESTALE, "old epoch: err %d result %d", res.err,
	      res.result);
	CHECK(res.epoch >= t.epoch, "the -ESTALE reply names epoch %" PRIu64, res.epoch);

	/* 4. a replica is not the primary: -ESTALE */
	CHECK(t.n == 3, "acting set of %d", t.n);
	do_op(t.addr[1], 5, t.epoch, &t, "obj-a", &rd, &res);
	CHECK(!res.err && res.result == -ESTALE, "non-primary: err %d result %d", res.err,
	      res.result);

	/* 5. a reserved name */
	{
		struct target t2 = t;
		const char *bad = "\001pgmeta";
		const struct osdmap_pool *p;

		pthread_mutex_lock(&lock);
		p = osdmap_pool_by_name(map, "t");
		t2.pg = placement_object_pg(p, bad, strlen(bad));
		int32_t primary;

		placement_acting(map, p, t2.pg, t2.acting, &primary);
		snprintf(t2.addr[0], sizeof(t2.addr[0]), "%s", osdmap_osd(map, primary)->addr);
		pthread_mutex_unlock(&lock);
		do_op(t2.addr[0], 6, t2.epoch, &t2, bad, &rd, &res);
		CHECK(!res.err && res.result == -EINVAL, "reserved name: err %d result %d",
		      res.err, res.result);
	}

	/* 6. kill -9 a replica: degraded, writes go on with min_size 2 */
	victim = t.acting[2];
	kill(osd_pid[victim], SIGKILL);
	waitpid(osd_pid[victim], NULL, 0);
	osd_pid[victim] = 0;
	epoch = wait_map(is_down, &victim, 40000);
	CHECK(epoch, "osd.%d was not marked down", victim);
	struct osd_subop w2 = { .code = OSD_OP_WRITE, .off = 100, .data = "degraded",
				.data_len = 8, .len = 8 };

	op_primary(7, "obj-a", &w2, &res, 30000);
	CHECK(!res.err && res.result == 0, "write after kill: err %d result %d", res.err,
	      res.result);
	CHECK(res.version > v2, "version did not grow");
	CHECK(locate("obj-a", &t) == 0 && t.n == 2, "acting set after the kill has %d", t.n);
	{
		struct pg_wait w = { &t, out, sizeof(out), 0 };

		CHECK(tu_wait_for(pg_degraded, &w, 15000, 300),
		      "pg %u.%x never reported undersized+degraded:\n%s", t.pool, t.pg, out);
	}

	/* 7. the killed replica comes back (its store and PGs load again);
	 * it missed a write: log recovery (doc/recovery.md) brings it up to
	 * date and the PG goes active+clean */
	{
		char host[16], bind[32];

		snprintf(host, sizeof(host), "h%d", victim);
		snprintf(bind, sizeof(bind), "127.0.0.%d", victim + 2);
		char *a[] = { (char *)OSD, "--data", osddir[victim], "--addr", bind, "--host",
			      host, "--mon", mon_addr, "--set", "osd_heartbeat_grace=4s",
			      "--set", "log_level=debug", NULL };

		osd_pid[victim] = spawn(a, "osd-restarted.log");
		CHECK(wait_map(three_up, NULL, 20000), "osd.%d did not come back up", victim);
		struct pg_wait w = { &t, out, sizeof(out), 0 };
		bool seen = tu_wait_for(pg_clean, &w, 15000, 300);

		rc = w.rc;
		CHECK(seen, "pg %u.%x is not active+clean after osd.%d came back (rc %d):\n%s",
		      t.pool, t.pg, victim, rc, out);
	}

	/* 8. stop, and look into the stores */
	for (int i = 0; i < 3; i++) {
		if (osd_pid[i] <= 0)
			continue;
		kill(osd_pid[i], SIGTERM);
		rc = wait_exit(osd_pid[i], 20000);
		osd_pid[i] = 0;
		CHECK(rc == 0, "osd.%d exited %d after SIGTERM", i, rc);
	}
	for (int i = 0; i < 3; i++) {
		char coll[32];

		snprintf(coll, sizeof(coll), "0x%llx",
			 (unsigned long long)pg_coll(t.pool, t.pg));
		char *a[] = { (char *)TOOL, "--data", osddir[i], "--format", "json", "ls", coll,
			      NULL };

		rc = run(a, out, sizeof(out));
		CHECK(rc == 0, "store tool ls on osd.%d: exit %d", i, rc);
		CHECK(strstr(out, "\"obj-a\""), "osd.%d's store lacks obj-a:\n%s", i, out);
		CHECK(!strstr(out, "pgmeta"), "the PG meta object is listed:\n%s", out);
		char *s[] = { (char *)TOOL, "--data", osddir[i], "--format", "json", "stat", coll,
			      "obj-a", NULL };

		rc = run(s, out, sizeof(out));
		CHECK(rc == 0 && strstr(out, "8196"), "osd.%d: obj-a is not 8196 bytes:\n%s", i,
		      out);
	}
	kill(mon_pid, SIGTERM);
	rc = wait_exit(mon_pid, 10000);
	mon_pid = 0;
	CHECK(rc == 0, "atoll-mon exited %d", rc);
out:
	stop_all();
	msgr_destroy(msgr);
	if (tu_failures == 0 && !keep) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
	} else {
		fprintf(stderr, "logs kept in %s\n", dir);
	}
	fprintf(stderr, "%s\n", tu_failures ? "FAILED" : "PASSED");
	return tu_failures ? 1 : 0;
}
