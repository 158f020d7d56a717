/*
 * harness.c - see harness.h.  The monitor runs as a real process; it is
 * started with --addr 127.0.0.1:0 and the harness reads the bound address
 * from its log ("listening on ADDR").
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

const char *mh_bin(void)
{
	const char *b = getenv("ATOLL_MON");

	cr_assert(b && *b, "ATOLL_MON must name the atoll-mon binary");
	return b;
}

int mh_scale(int ms)
{
	const char *s = getenv("ATOLL_SANITIZED");

	return s && *s == '1' ? ms * 3 : ms;
}

void mh_uuid(uint8_t u[16], uint8_t seed)
{
	for (int i = 0; i < 16; i++)
		u[i] = (uint8_t)(seed * 31 + i * 7 + 1);
}

static int run_wait(char *const argv[], const char *out_path)
{
	pid_t pid = fork();
	int st;

	cr_assert(pid >= 0);
	if (pid == 0) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void mh_init(struct mh *h, const char *const *sets)
{
	char *const mkfs[] = { (char *)mh_bin(), "--mkfs", "--data", h->data, NULL };
	char out[400];
	FILE *f;

	memset(h, 0, sizeof(*h));
	snprintf(h->dir, sizeof(h->dir), "/tmp/atoll-mon-test.XXXXXX");
	cr_assert(mkdtemp(h->dir), "mkdtemp: %s", strerror(errno));
	snprintf(h->data, sizeof(h->data), "%s/mon", h->dir);
	snprintf(h->log, sizeof(h->log), "%s/mon.log", h->dir);
	for (int i = 0; sets && sets[i]; i++)
		h->sets[h->nsets++] = sets[i];
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	h->pid = -1;

	snprintf(out, sizeof(out), "%s/mkfs.out", h->dir);
	cr_assert_eq(run_wait(mkfs, out), 0, "atoll-mon --mkfs failed");
	f = fopen(out, "r");
	cr_assert(f);
	cr_assert(fgets(h->fsid, sizeof(h->fsid), f));
	fclose(f);
	h->fsid[strcspn(h->fsid, "\n")] = '\0';
	cr_assert_eq(strlen(h->fsid), 36, "mkfs printed '%s', not a uuid", h->fsid);
}

/* Loop thread: maps are applied as they come. */
static void on_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct mh *h = arg;
	struct mon_map_msg mm;
	struct dec d;
	int r;

	if (m->type != MT_MON_MAP) {
		msg_free(m);
		return;
	}
	dec_init(&d, m->front, m->front_len);
	r = mon_map_msg_decode(&d, &mm);
	pthread_mutex_lock(&h->lock);
	h->nmaps++;
	if (r < 0 && !h->map_err)
		h->map_err = r;
	if (r == 0) {
		if (mm.full && (!h->map || mm.full->epoch > h->map->epoch)) {
			osdmap_free(h->map);
			h->map = mm.full;
			mm.full = NULL;
			h->nfull++;
		}
		for (uint32_t i = 0; i < mm.ninc; i++) {
			if (!h->map || mm.incs[i].epoch <= h->map->epoch)
				continue;
			r = osdmap_apply(h->map, &mm.incs[i]);
			if (r < 0 && !h->map_err)
				h->map_err = r;
			if (r == 0)
				h->nincs++;
		}
		mon_map_msg_clear(&mm);
	}
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	msg_free(m);
}

static void osd_drop(struct mh_osd *o, bool destroy)
{
	if (o->conn) {
		msg_conn_close(o->conn);
		msg_conn_put(o->conn);
		o->conn = NULL;
	}
	if (destroy) {
		msgr_destroy(o->msgr);
		o->msgr = NULL;
	}
}

struct msg_conn *mh_osd_conn(struct mh *h, int32_t id)
{
	struct mh_osd *o;
	struct msgr_config mc;
	struct msgr_ops ops = { .dispatch = on_dispatch };

	cr_assert(id >= -1 && id < MH_OSD_MAX, "osd.%d: the harness holds %d OSDs",
		  id, MH_OSD_MAX);
	o = id < 0 ? &h->newosd : &h->osds[id];
	if (!o->msgr) {
		memset(&mc, 0, sizeof(mc));
		mc.size_of = sizeof(mc);
		mc.me.type = MSG_ENTITY_OSD;
		mc.me.id = id < 0 ? UINT64_MAX : (uint64_t)id;
		cr_assert_eq(msgr_create(&mc, &ops, h, &o->msgr), 0);
		cr_assert_eq(msgr_start(o->msgr), 0);
	}
	if (!o->conn) {
		o->conn = msgr_connect(o->msgr, h->addr);
		cr_assert(o->conn);
	}
	return o->conn;
}

void mh_connect(struct mh *h)
{
	struct msgr_config mc;
	struct msgr_ops ops = { .dispatch = on_dispatch };

	if (h->conn) {
		msg_conn_close(h->conn);
		msg_conn_put(h->conn);
		h->conn = NULL;
	}
	if (!h->msgr) {
		memset(&mc, 0, sizeof(mc));
		mc.size_of = sizeof(mc);
		mc.me.type = MSG_ENTITY_CLIENT;
		mc.me.id = (uint64_t)getpid() * 1000 + (uint64_t)(tu_now_ms() % 1000);
		cr_assert_eq(msgr_create(&mc, &ops, h, &h->msgr), 0);
		cr_assert_eq(msgr_start(h->msgr), 0);
	}
	h->conn = msgr_connect(h->msgr, h->addr);
	cr_assert(h->conn);
}

void mh_start(struct mh *h)
{
	char *argv[80];
	int n = 0;
	uint64_t deadline;
	pid_t pid;

	argv[n++] = (char *)mh_bin();
	argv[n++] = "--data";
	argv[n++] = h->data;
	argv[n++] = "--addr";
	argv[n++] = "127.0.0.1:0";
	argv[n++] = "--log";
	argv[n++] = h->log;
	for (int i = 0; i < h->nsets; i++) {
		argv[n++] = "--set";
		argv[n++] = (char *)h->sets[i];
	}
	argv[n] = NULL;
	truncate(h->log, 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		char err[400];
		int fd;

		snprintf(err, sizeof(err), "%s/mon.stderr", h->dir);
		fd = open(err, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	h->pid = pid;
	h->addr[0] = '\0';
	deadline = tu_now_ms() + (uint64_t)mh_scale(10000);
	while (!h->addr[0] && tu_now_ms() < deadline) {
		FILE *f = fopen(h->log, "r");
		char line[512];

		while (f && fgets(line, sizeof(line), f)) {
			char *p = strstr(line, "listening on ");

			if (p && sscanf(p + 13, "%63[^,]", h->addr) == 1)
				break;
		}
		if (f)
			fclose(f);
		if (!h->addr[0]) {
			int st;

			cr_assert_eq(waitpid(pid, &st, WNOHANG), 0,
				     "atoll-mon exited at start-up; see %s", h->dir);
			usleep(20000);
		}
	}
	cr_assert(h->addr[0], "atoll-mon did not log its address");
	for (int i = 0; i < MH_OSD_MAX; i++)
		osd_drop(&h->osds[i], false);
	osd_drop(&h->newosd, false);
	mh_connect(h);
}

int mh_stop(struct mh *h)
{
	int st = 0;

	if (h->pid <= 0)
		return 0;
	kill(h->pid, SIGTERM);
	for (int i = 0; i < 500; i++) {
		if (waitpid(h->pid, &st, WNOHANG) == h->pid) {
			h->pid = -1;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		usleep(10000);
	}
	kill(h->pid, SIGKILL);
	waitpid(h->pid, &st, 0);
	h->pid = -1;
	return -1;
}

void mh_free(struct mh *h)
{
	char cmd[1024];
	int st;

	mh_pump_stop(h);
	st = mh_stop(h);
	if (st != 0) {
		/* a sanitizer report or a crash: show what the monitor said */
		snprintf(cmd, sizeof(cmd), "cat '%s/mon.stderr' >&2; tail -20 '%s' >&2",
			 h->dir, h->log);
		if (system(cmd) != 0)
			fprintf(stderr, "(no monitor output)\n");
	}
	if (h->conn) {
		msg_conn_close(h->conn);
		msg_conn_put(h->conn);
	}
	msgr_destroy(h->msgr);
	for (int i = 0; i < MH_OSD_MAX; i++)
		osd_drop(&h->osds[i], true);
	osd_drop(&h->newosd, true);
	osdmap_free(h->map);
	if (!getenv("ATOLL_KEEP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", h->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", h->dir);
	}
	cr_assert_eq(st, 0, "atoll-mon did not stop cleanly (status %d)", st);
}

struct msg *mh_call(struct mh *h, uint16_t type, struct enc *e)
{
	return mh_call_on(h, h->conn, type, e);
}

struct msg *mh_call_on(struct mh *h, struct msg_conn *c, uint16_t type, struct enc *e)
{
	struct msg *m = msg_new(type, e), *reply;

	enc_free(e);
	cr_assert(m);
	msg_call_wait(c, m, (uint32_t)mh_scale(10000), &reply);
	return reply;	/* NULL when the call failed */
}

void mh_send(struct mh *h, uint16_t type, struct enc *e)
{
	mh_send_on(h, h->conn, type, e);
}

void mh_send_on(struct mh *h, struct msg_conn *c, uint16_t type, struct enc *e)
{
	struct msg *m = msg_new(type, e);

	(void)h;
	enc_free(e);
	cr_assert(m);
	cr_assert_eq(msg_send(c, m), 0);
}

int mh_cmd(struct mh *h, const char *json, char **status, char **out)
{
	struct mon_command_reply r;
	struct enc e;
	struct dec d;
	struct msg *rep;
	char *st;
	int rc;

	enc_init(&e);
	mon_command_encode(json, NULL, &e);
	rep = mh_call(h, MT_MON_COMMAND, &e);
	cr_assert(rep, "no reply to command %s", json);
	dec_init(&d, rep->front, rep->front_len);
	cr_assert_eq(mon_command_reply_decode(&d, &r, &st), 0);
	rc = r.rc;
	if (out) {
		*out = malloc(r.out_len + 1);
		memcpy(*out, r.out ? r.out : "", r.out_len);
		(*out)[r.out_len] = '\0';
	}
	if (status)
		*status = st;
	else
		free(st);
	msg_free(rep);
	return rc;
}

int mh_osd_new(struct mh *h, const uint8_t uuid[16], int32_t want, int32_t *id)
{
	struct osd_new_req q = { .want_id = want };
	struct osd_new_reply r;
	struct enc e;
	struct dec d;
	struct msg *rep;

	memcpy(q.uuid, uuid, 16);
	enc_init(&e);
	osd_new_req_encode(&q, &e);
	rep = mh_call_on(h, mh_osd_conn(h, -1), MT_OSD_NEW, &e);
	cr_assert(rep);
	dec_init(&d, rep->front, rep->front_len);
	cr_assert_eq(osd_new_reply_decode(&d, &r), 0);
	msg_free(rep);
	*id = r.id;
	return r.rc;
}

int mh_osd_boot(struct mh *h, int32_t id, const uint8_t uuid[16], const char *addr,
		const char *host, uint64_t *epoch, char *status, size_t len)
{
	struct osd_boot_req q;
	struct osd_boot_reply r;
	struct enc e;
	struct dec d;
	struct msg *rep;

	memset(&q, 0, sizeof(q));
	q.id = id;
	memcpy(q.uuid, uuid, 16);
	snprintf(q.addr, sizeof(q.addr), "%s", addr);
	snprintf(q.host, sizeof(q.host), "%s", host);
	q.weight = OSD_WEIGHT_ONE;
	enc_init(&e);
	osd_boot_req_encode(&q, &e);
	rep = mh_call_on(h, mh_osd_conn(h, id), MT_OSD_BOOT, &e);
	cr_assert(rep);
	dec_init(&d, rep->front, rep->front_len);
	cr_assert_eq(osd_boot_reply_decode(&d, &r), 0);
	msg_free(rep);
	if (epoch)
		*epoch = r.epoch;
	if (status)
		snprintf(status, len, "%s", r.status);
	return r.rc;
}

int mh_osd_stopping(struct mh *h, int32_t id, uint64_t *epoch)
{
	struct osd_stopping s = { .id = id };
	struct rc_reply r;
	struct enc e;
	struct dec d;
	struct msg *rep;

	enc_init(&e);
	osd_stopping_encode(&s, &e);
	rep = mh_call_on(h, mh_osd_conn(h, id), MT_OSD_STOPPING, &e);
	cr_assert(rep);
	dec_init(&d, rep->front, rep->front_len);
	cr_assert_eq(rc_reply_decode(&d, &r), 0);
	msg_free(rep);
	if (epoch)
		*epoch = r.epoch;
	return r.rc;
}

void mh_barrier(struct mh *h, struct msg_conn *c)
{
	struct msg *rep;
	struct enc e;

	enc_init(&e);
	mon_command_encode("{\"prefix\":\"osd ls\"}", NULL, &e);
	rep = mh_call_on(h, c, MT_MON_COMMAND, &e);
	cr_assert(rep, "no reply from the monitor");
	msg_free(rep);
}

void mh_beacon(struct mh *h, const struct osd_beacon *b)
{
	struct msg_conn *c = mh_osd_conn(h, b->id);
	struct enc e;

	enc_init(&e);
	osd_beacon_encode(b, &e);
	mh_send_on(h, c, MT_OSD_BEACON, &e);
	mh_barrier(h, c);
}

static void *pump_main(void *arg)
{
	struct mh *h = arg;

	while (!atomic_load(&h->pump_stop)) {
		for (int i = 0; i < h->npump; i++) {
			struct osd_beacon b;
			struct msg *m;
			struct enc e;

			memset(&b, 0, sizeof(b));
			b.id = h->pump_ids[i];
			b.total = 100 << 20;
			b.used = 1 << 20;
			b.avail = b.total - b.used;
			enc_init(&e);
			osd_beacon_encode(&b, &e);
			m = msg_new(MT_OSD_BEACON, &e);
			enc_free(&e);
			if (m && msg_send(h->pump_conns[i], m) < 0)
				break;	/* the connection is gone; the test will see */
		}
		usleep(100000);
	}
	return NULL;
}

void mh_pump_start(struct mh *h, const int32_t *ids, int n)
{
	cr_assert(!h->pumping, "one beacon pump at a time");
	cr_assert(n > 0 && n <= MH_OSD_MAX);
	/* connections are made here, on the test's thread */
	for (int i = 0; i < n; i++) {
		h->pump_ids[i] = ids[i];
		h->pump_conns[i] = mh_osd_conn(h, ids[i]);
	}
	h->npump = n;
	atomic_store(&h->pump_stop, false);
	cr_assert_eq(pthread_create(&h->pump, NULL, pump_main, h), 0);
	h->pumping = true;
}

void mh_pump_stop(struct mh *h)
{
	if (!h->pumping)
		return;
	atomic_store(&h->pump_stop, true);
	pthread_join(h->pump, NULL);
	h->pumping = false;
}

void mh_failure(struct mh *h, int32_t reporter, int32_t target, bool immediate)
{
	struct osd_failure f = { .reporter = reporter, .target = target,
				 .failed_for_ms = 30000, .immediate = immediate };
	struct enc e;

	enc_init(&e);
	osd_failure_encode(&f, &e);
	mh_send_on(h, mh_osd_conn(h, reporter), MT_OSD_FAILURE, &e);
	mh_barrier(h, mh_osd_conn(h, reporter));
}

void mh_subscribe(struct mh *h, uint64_t have)
{
	struct mon_subscribe s = { .have = have };
	struct enc e;

	enc_init(&e);
	mon_subscribe_encode(&s, &e);
	mh_send(h, MT_MON_SUBSCRIBE, &e);
}

static bool wait_cond(struct mh *h, int timeout_ms,
		      bool (*pred)(struct mh *h, void *arg), void *arg)
{
	uint64_t deadline = tu_now_ms() + (uint64_t)mh_scale(timeout_ms);
	bool ok;

	pthread_mutex_lock(&h->lock);
	while (!(ok = pred(h, arg)) && tu_now_ms() < deadline) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&h->cond, &h->lock, &ts);
	}
	pthread_mutex_unlock(&h->lock);
	return ok;
}

static bool epoch_pred(struct mh *h, void *arg)
{
	return h->map && h->map->epoch >= *(uint64_t *)arg;
}

bool mh_wait_epoch(struct mh *h, uint64_t epoch, int timeout_ms)
{
	return wait_cond(h, timeout_ms, epoch_pred, &epoch);
}

struct osd_want {
	int32_t id;
	bool up;
};

static bool osd_pred(struct mh *h, void *arg)
{
	struct osd_want *w = arg;

	return h->map && osdmap_osd_up(h->map, w->id) == w->up;
}

bool mh_wait_osd(struct mh *h, int32_t id, bool up, int timeout_ms)
{
	struct osd_want w = { id, up };

	return wait_cond(h, timeout_ms, osd_pred, &w);
}

static bool osd_in_pred(struct mh *h, void *arg)
{
	struct osd_want *w = arg;

	return h->map && osdmap_osd_in(h->map, w->id) == w->up;
}

bool mh_wait_osd_in(struct mh *h, int32_t id, bool in, int timeout_ms)
{
	struct osd_want w = { id, in };

	return wait_cond(h, timeout_ms, osd_in_pred, &w);
}

static int log_count(struct mh *h, const char *needle)
{
	FILE *f = fopen(h->log, "r");
	char line[1024];
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	return n;
}

bool mh_wait_log(struct mh *h, const char *needle, int n, int timeout_ms)
{
	uint64_t deadline = tu_now_ms() + (uint64_t)mh_scale(timeout_ms);

	for (;;) {
		if (log_count(h, needle) >= n)
			return true;
		if (tu_now_ms() >= deadline)
			return false;
		usleep(20000);
	}
}

bool mh_osd_is_up(struct mh *h, int32_t id)
{
	bool up;

	pthread_mutex_lock(&h->lock);
	up = h->map && osdmap_osd_up(h->map, id);
	pthread_mutex_unlock(&h->lock);
	return up;
}

bool mh_osd_is_in(struct mh *h, int32_t id)
{
	bool in;

	pthread_mutex_lock(&h->lock);
	in = h->map && osdmap_osd_in(h->map, id);
	pthread_mutex_unlock(&h->lock);
	return in;
}
