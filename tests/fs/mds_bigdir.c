/*
 * mds_bigdir.c - one directory of N entries (100,000 in tests/fs/fs-cache.sh)
 * made and read through the MDS protocol, without FUSE: through a mount
 * the same takes minutes, and issue 6 gives the fs suite six minutes of
 * CI in all.  It speaks MT_MDS_REQUEST itself (posixfs/mds_proto.h), as
 * atoll-fuse does, with up to 64 requests in flight.
 *
 *   mds_bigdir ADDR create N [NAME]
 *                              mkdir NAME ("big") in the root, N creates in it
 *                              ("f000000" ...), then a readdir whose pages
 *                              interleave with removals and creates
 *                              (positions must stay stable), then verify
 *   mds_bigdir ADDR list N [NAME]
 *                              one readdir-plus pass over the final set
 *   mds_bigdir ADDR verify N [NAME]
 *                              the final set: readdir returns every name
 *                              exactly once, lookups find each sampled
 *                              name with its inode number, absent names
 *                              are ENOENT
 *
 *   mds_bigdir ADDR resend N
 *                              a mkdir of a fresh name, then N creates by
 *                              another client, then the mkdir resent
 *                              (MDS_L_REPLAY, same client and request
 *                              id): answered from its first result (0,
 *                              the same inode), not applied again
 *                              (EEXIST); prints "resent CLIENT REQID INO
 *                              NAME" for resend-again
 *   mds_bigdir ADDR resend-again CLIENT REQID INO NAME
 *                              the same resend once more (after an MDS
 *                              restart: from fs.answered or the replay)
 *   mds_bigdir ADDR rename SRC DST
 *                              one rename of path SRC to path DST (from
 *                              the root, by lookups), sent to the MDS
 *                              itself: a kernel refuses a directory moved
 *                              into itself before asking FUSE, so the
 *                              MDS's own check (the parents it keeps) is
 *                              reached only this way; prints "rename: RC"
 *                              (0 or a negative errno)
 *
 * The final set of "big" is a function of N: f000000..f(N-1) without
 * every name whose number is 7 mod 1000, plus one "g" name for each
 * removed one.  Timings go to stdout ("create: N entries in S s").
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "auth_config.h"
#include "config.h"
#include "encode.h"
#include "mds_proto.h"
#include "mono.h"
#include "msg.h"

#define WINDOW		64
#define CALL_TIMEOUT_MS	60000u
#define ROOT_INO	1u

static struct msg_conn *conn;
static uint64_t client_id, next_reqid;
static const char *dirname = "big";
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int inflight, failures;

static void die(const char *what, int err)
{
	fprintf(stderr, "mds_bigdir: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void req_init(struct mds_req *rq, uint32_t op, uint64_t ino, const char *name)
{
	memset(rq, 0, sizeof(*rq));
	rq->op = op;
	rq->client = client_id;
	rq->reqid = ++next_reqid;
	rq->ino = ino;
	if (name)
		snprintf(rq->name, sizeof(rq->name), "%s", name);
}

static struct msg *req_msg(const struct mds_req *rq)
{
	struct enc e;
	struct msg *m;

	enc_init(&e);
	mds_req_encode(&e, rq);
	m = msg_new(MT_MDS_REQUEST, &e);
	enc_free(&e);
	if (!m)
		die("msg_new", -ENOMEM);
	return m;
}

/* ---- one call at a time ---- */

/* rq -> rp (rp's buffers to be freed by the caller); the call's error */
static int call(const struct mds_req *rq, struct mds_reply *rp)
{
	struct msg *reply;
	struct dec d;
	int ret = msg_call_wait(conn, req_msg(rq), CALL_TIMEOUT_MS, &reply);

	if (ret)
		return ret;
	dec_init(&d, reply->front, reply->front_len);
	ret = mds_reply_decode(&d, rp);
	msg_free(reply);
	return ret;
}

static void reply_free(struct mds_reply *rp)
{
	free(rp->ents);
	free(rp->plus);
	free(rp->value);
	memset(rp, 0, sizeof(*rp));
}

/* ---- many calls in flight (creates, removals): each must succeed ---- */

static void on_async(void *arg, struct msg *reply, int err)
{
	struct mds_reply *rp = calloc(1, sizeof(*rp));
	struct dec d;

	(void)arg;
	if (!err && rp) {
		dec_init(&d, reply->front, reply->front_len);
		err = mds_reply_decode(&d, rp);
		if (!err)
			err = rp->rc;
		reply_free(rp);
	}
	free(rp);
	msg_free(reply);
	pthread_mutex_lock(&mu);
	if (err) {
		if (failures++ < 5)
			fprintf(stderr, "mds_bigdir: a request failed: %s\n", strerror(-err));
	}
	inflight--;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void send_async(const struct mds_req *rq)
{
	pthread_mutex_lock(&mu);
	while (inflight >= WINDOW)
		pthread_cond_wait(&cv, &mu);
	inflight++;
	pthread_mutex_unlock(&mu);
	int ret = msg_call(conn, req_msg(rq), CALL_TIMEOUT_MS, on_async, NULL);
	if (ret)
		die("msg_call", ret);
}

static void drain(void)
{
	pthread_mutex_lock(&mu);
	while (inflight)
		pthread_cond_wait(&cv, &mu);
	int f = failures;
	pthread_mutex_unlock(&mu);
	if (f) {
		fprintf(stderr, "mds_bigdir: %d request(s) failed\n", f);
		exit(1);
	}
}

/* ---- the directory ---- */

static void fname(char *b, size_t n, char kind, long i)
{
	snprintf(b, n, "%c%06ld", kind, i);
}

/* Is name in the final set (see the top)? */
static bool final_has(const char *name, long n)
{
	char *end;
	long i = strtol(name + 1, &end, 10);

	if (*end || end == name + 1 || i < 0 || i >= n)
		return false;
	if (name[0] == 'f')
		return i % 1000 != 7;
	if (name[0] == 'g')
		return i % 1000 == 7;
	return false;
}

static long final_count(long n)
{
	return n;	/* one g name for each f name removed */
}

static uint64_t lookup(uint64_t dir, const char *name, int *rc)
{
	struct mds_req rq;
	struct mds_reply rp = { 0 };
	uint64_t ino = 0;

	req_init(&rq, MDS_OP_LOOKUP, dir, name);
	int ret = call(&rq, &rp);
	if (ret)
		die("lookup", ret);
	*rc = rp.rc;
	if (!rp.rc && rp.ninodes)
		ino = rp.in[0].ino;
	reply_free(&rp);
	return ino;
}

/* Reads dir in pages of `page` from the start; calls fn on each page
 * (for the changes made between pages); returns the names seen, each
 * with its count, through the callbacks. */
typedef void (*page_fn)(long page_no);
typedef void (*ent_fn)(const struct mds_dirent *e);

static long read_all(uint64_t dir, uint32_t page, bool plus, ent_fn on_ent, page_fn on_page)
{
	struct mds_req rq;
	struct mds_reply rp = { 0 };
	char cookie[MDS_NAME_MAX + 1] = "";
	long total = 0, pages = 0;

	for (;;) {
		req_init(&rq, MDS_OP_READDIR, dir, NULL);
		snprintf(rq.cookie, sizeof(rq.cookie), "%s", cookie);
		rq.max = page;
		if (plus)
			rq.lflags = MDS_L_PLUS;
		int ret = call(&rq, &rp);
		if (ret || rp.rc)
			die("readdir", ret ? ret : rp.rc);
		for (uint32_t i = 0; i < rp.nents; i++) {
			on_ent(&rp.ents[i]);
			if (plus && (rp.nplus != rp.nents || rp.plus[i].ino != rp.ents[i].ino)) {
				fprintf(stderr, "mds_bigdir: readdir-plus record %u is not entry %s's\n",
					i, rp.ents[i].name);
				exit(1);
			}
		}
		total += rp.nents;
		if (rp.nents)
			snprintf(cookie, sizeof(cookie), "%s", rp.ents[rp.nents - 1].name);
		bool more = rp.more;
		reply_free(&rp);
		if (on_page)
			on_page(pages);
		pages++;
		if (!more)
			break;
	}
	return total;
}

/* the names seen by a readdir pass: index = kind (f/g) * n + number */
static long N;
static unsigned char *seen;
static long bad;

static void count_ent(const struct mds_dirent *e)
{
	char *end;
	long i = strtol(e->name + 1, &end, 10);

	if ((e->name[0] != 'f' && e->name[0] != 'g') || *end || i < 0 || i >= N) {
		if (bad++ < 5)
			fprintf(stderr, "mds_bigdir: readdir returned an unknown name '%s'\n", e->name);
		return;
	}
	long k = (e->name[0] == 'g') * N + i;
	if (seen[k] < 255)
		seen[k]++;
}

/* Between the pages of the first pass: remove f names 7 mod 1000 and
 * create their g names, a slice per page, ahead of and behind the pass. */
static uint64_t big_ino;
static long churn_next;

static void churn(long page_no)
{
	(void)page_no;
	struct mds_req rq;
	char name[32];
	long step = N / 10 > 0 ? N / 10 : 1;

	for (long i = churn_next; i < N && i < churn_next + step; i++) {
		if (i % 1000 != 7)
			continue;
		fname(name, sizeof(name), 'f', i);
		req_init(&rq, MDS_OP_UNLINK, big_ino, name);
		send_async(&rq);
		fname(name, sizeof(name), 'g', i);
		req_init(&rq, MDS_OP_MKNOD, big_ino, name);
		rq.mode = S_IFREG | 0644;
		send_async(&rq);
	}
	churn_next += step;
	drain();
}

static void create(long n)
{
	struct mds_req rq;
	struct mds_reply rp = { 0 };
	char name[32];
	double t0 = mono_now_s();

	req_init(&rq, MDS_OP_MKDIR, ROOT_INO, dirname);
	rq.mode = 0755;
	int ret = call(&rq, &rp);
	if (ret || rp.rc || !rp.ninodes)
		die("mkdir big", ret ? ret : rp.rc ? rp.rc : -EIO);
	big_ino = rp.in[0].ino;
	reply_free(&rp);
	for (long i = 0; i < n; i++) {
		fname(name, sizeof(name), 'f', i);
		req_init(&rq, MDS_OP_MKNOD, big_ino, name);
		rq.mode = S_IFREG | 0644;
		send_async(&rq);
	}
	drain();
	double t1 = mono_now_s();
	printf("create: %ld entries in %.2f s (%.0f/s)\n", n, t1 - t0, (double)n / (t1 - t0));

	/* readdir while entries before and after the position come and go:
	 * every name present throughout is returned exactly once, none
	 * twice (positions are names: doc/fs-design.md, "Client
	 * protocol") */
	memset(seen, 0, 2 * (size_t)n);
	read_all(big_ino, 4096, false, count_ent, churn);
	while (churn_next < n)
		churn(0);	/* the rest of the changes (a short directory) */
	for (long i = 0; i < n; i++) {
		if (seen[i] > 1 || seen[n + i] > 1) {
			fprintf(stderr, "mds_bigdir: %c%06ld was listed %u times during the "
				"changes\n", seen[i] > 1 ? 'f' : 'g', i, seen[i] > 1 ? seen[i] : seen[n + i]);
			exit(1);
		}
		if (i % 1000 != 7 && seen[i] != 1) {
			fprintf(stderr, "mds_bigdir: f%06ld, present throughout, was not listed\n", i);
			exit(1);
		}
	}
	if (bad)
		exit(1);
	printf("readdir during changes: %.2f s\n", mono_now_s() - t1);
}

static void verify(long n)
{
	int rc;
	char name[32];
	double t0 = mono_now_s();

	big_ino = lookup(ROOT_INO, dirname, &rc);
	if (rc || !big_ino)
		die("lookup big", rc ? rc : -ENOENT);
	memset(seen, 0, 2 * (size_t)n);
	long total = read_all(big_ino, 4096, false, count_ent, NULL);
	double t1 = mono_now_s();
	for (long i = 0; i < 2 * n; i++) {
		fname(name, sizeof(name), i < n ? 'f' : 'g', i % n);
		unsigned want = final_has(name, n);
		if (seen[i] != want) {
			fprintf(stderr, "mds_bigdir: %s listed %u times, expected %u\n",
				name, seen[i], want);
			exit(1);
		}
	}
	if (bad || total != final_count(n)) {
		fprintf(stderr, "mds_bigdir: readdir returned %ld entries, expected %ld\n",
			total, final_count(n));
		exit(1);
	}
	/* readdir-plus of the whole: every record comes with its entry */
	total = read_all(big_ino, 4096, true, count_ent, NULL);
	double t2 = mono_now_s();
	/* lookups: a sample of present and absent names */
	long looked = 0;
	for (long i = 0; i < n; i += (n > 1000 ? 97 : 1)) {
		for (int k = 0; k < 2; k++) {
			fname(name, sizeof(name), k ? 'g' : 'f', i);
			uint64_t ino = lookup(big_ino, name, &rc);
			bool want = final_has(name, n);
			if (want != (rc == 0 && ino) || (!want && rc != -ENOENT)) {
				fprintf(stderr, "mds_bigdir: lookup of %s: %s (expected %s)\n", name,
					rc ? strerror(-rc) : "found", want ? "found" : "ENOENT");
				exit(1);
			}
			looked++;
		}
	}
	printf("verify: %ld entries listed once each in %.2f s, with records in %.2f s, "
	       "%ld lookups in %.2f s\n", final_count(n), t1 - t0, t2 - t1, looked, mono_now_s() - t2);
}

/* One readdir-plus pass: the final set, each name once, with records. */
static void list(long n)
{
	int rc;
	char name[32];
	double t0 = mono_now_s();

	big_ino = lookup(ROOT_INO, dirname, &rc);
	if (rc || !big_ino)
		die("lookup of the directory", rc ? rc : -ENOENT);
	memset(seen, 0, 2 * (size_t)n);
	long total = read_all(big_ino, 4096, true, count_ent, NULL);
	for (long i = 0; i < 2 * n; i++) {
		fname(name, sizeof(name), i < n ? 'f' : 'g', i % n);
		if (seen[i] != final_has(name, n)) {
			fprintf(stderr, "mds_bigdir: %s listed %u times\n", name, seen[i]);
			exit(1);
		}
	}
	if (bad || total != final_count(n)) {
		fprintf(stderr, "mds_bigdir: readdir-plus returned %ld entries, expected %ld\n",
			total, final_count(n));
		exit(1);
	}
	printf("list: %ld entries with their records in %.2f s\n", total, mono_now_s() - t0);
}

/* ---- exactly once: a resend after other clients' requests ---- */

static void resend_check(uint64_t client, uint64_t reqid, uint64_t ino, const char *name)
{
	struct mds_req rq;
	struct mds_reply rp = { 0 };
	uint64_t saved = client_id;

	client_id = client;
	req_init(&rq, MDS_OP_MKDIR, ROOT_INO, name);
	rq.reqid = reqid;
	rq.mode = 0755;
	rq.lflags = MDS_L_REPLAY;
	int ret = call(&rq, &rp);
	client_id = saved;
	if (ret)
		die("the resent mkdir", ret);
	if (rp.rc || !rp.ninodes || rp.in[0].ino != ino) {
		fprintf(stderr, "mds_bigdir: the resent mkdir of '%s' (client %" PRIu64
			", request %" PRIu64 ") got %s, inode %" PRIu64 ": it was applied again "
			"instead of answered from its first result (0, inode %" PRIu64 ")\n",
			name, client, reqid, rp.rc ? strerror(-rp.rc) : "0",
			rp.ninodes ? rp.in[0].ino : 0, ino);
		exit(1);
	}
	reply_free(&rp);
}

static void resend(long n)
{
	struct mds_req rq;
	struct mds_reply rp = { 0 };
	char name[64];
	uint64_t client = client_id, reqid, ino;

	snprintf(name, sizeof(name), "resend-%" PRIx64, client);
	req_init(&rq, MDS_OP_MKDIR, ROOT_INO, name);
	rq.mode = 0755;
	reqid = rq.reqid;
	int ret = call(&rq, &rp);
	if (ret || rp.rc || !rp.ninodes)
		die("mkdir", ret ? ret : rp.rc ? rp.rc : -EIO);
	ino = rp.in[0].ino;
	reply_free(&rp);
	/* another client's n requests: more than one client's share */
	client_id = client + 1;
	char bname[80];

	snprintf(bname, sizeof(bname), "%s-bulk", name);
	req_init(&rq, MDS_OP_MKDIR, ROOT_INO, bname);
	rq.mode = 0755;
	ret = call(&rq, &rp);
	if (ret || rp.rc || !rp.ninodes)
		die("mkdir bulk", ret ? ret : rp.rc ? rp.rc : -EIO);
	uint64_t bulk = rp.in[0].ino;
	reply_free(&rp);
	for (long i = 0; i < n; i++) {
		char f[32];

		fname(f, sizeof(f), 'f', i);
		req_init(&rq, MDS_OP_MKNOD, bulk, f);
		rq.mode = S_IFREG | 0644;
		send_async(&rq);
	}
	drain();
	client_id = client;
	resend_check(client, reqid, ino, name);
	/* and a new mkdir of that name is refused: it exists */
	req_init(&rq, MDS_OP_MKDIR, ROOT_INO, name);
	rq.mode = 0755;
	ret = call(&rq, &rp);
	if (ret || rp.rc != -EEXIST)
		die("a second mkdir of the name (EEXIST expected)", ret ? ret : rp.rc ? rp.rc : -EIO);
	reply_free(&rp);
	printf("resent %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", client, reqid, ino, name);
}

/* The directory of path p (from the root) and p's last name in *name. */
static uint64_t path_parent(const char *p, char *name, size_t nlen)
{
	char buf[1024];
	uint64_t dir = ROOT_INO;
	char *save = NULL, *c, *next;
	int rc;

	snprintf(buf, sizeof(buf), "%s", p);
	c = strtok_r(buf, "/", &save);
	while (c && (next = strtok_r(NULL, "/", &save))) {
		dir = lookup(dir, c, &rc);
		if (rc)
			die(c, rc);
		c = next;
	}
	if (!c)
		die("an empty path", -EINVAL);
	snprintf(name, nlen, "%s", c);
	return dir;
}

static void rename_one(const char *src, const char *dst)
{
	struct mds_req rq;
	struct mds_reply rp = { 0 };
	char n1[MDS_NAME_MAX + 1], n2[MDS_NAME_MAX + 1];
	uint64_t d1 = path_parent(src, n1, sizeof(n1));
	uint64_t d2 = path_parent(dst, n2, sizeof(n2));

	req_init(&rq, MDS_OP_RENAME, d1, n1);
	rq.ino2 = d2;
	snprintf(rq.name2, sizeof(rq.name2), "%s", n2);
	int ret = call(&rq, &rp);
	if (ret)
		die("rename", ret);
	printf("rename: %d\n", rp.rc);
	reply_free(&rp);
}

static void on_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	(void)arg;
	(void)c;
	msg_free(m);	/* MT_MDS_SAFE; no leases asked, so no revokes */
}

int main(int argc, char **argv)
{
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops ops = { .dispatch = on_dispatch };
	struct msgr *msgr = NULL;

	bool again = argc == 7 && !strcmp(argv[2], "resend-again");
	bool ren = argc == 5 && !strcmp(argv[2], "rename");

	if (!again && !ren && (argc < 4 || argc > 5 ||
		       (strcmp(argv[2], "create") && strcmp(argv[2], "verify") &&
			strcmp(argv[2], "list") && strcmp(argv[2], "resend")))) {
		fprintf(stderr, "usage: mds_bigdir MDS-ADDR create|verify|list|resend N [DIR-NAME]\n"
			"       mds_bigdir MDS-ADDR resend-again CLIENT REQID INO NAME\n"
			"       mds_bigdir MDS-ADDR rename SRC DST\n");
		return 2;
	}
	if (argc == 5 && !again && !ren)
		dirname = argv[4];
	N = again || ren ? 1 : atol(argv[3]);
	if (N < 1 || N > 1000000) {
		fprintf(stderr, "mds_bigdir: N must be 1..1000000\n");
		return 2;
	}
	seen = calloc(2 * (size_t)N, 1);
	if (!seen)
		die("calloc", -ENOMEM);
	mc.me.type = MSG_ENTITY_CLIENT;
	if (getrandom(&mc.me.id, sizeof(mc.me.id), 0) != sizeof(mc.me.id))
		mc.me.id = 12345;
	client_id = mc.me.id;
	/* with auth on ($ATOLL_CONF), the MDS takes only a ticket: this
	 * messenger proves client.admin's key to a monitor first */
	struct msg_auth *auth = NULL;
	struct config *cfg = NULL;
	const char *mon = NULL;
	char err[512];
	int ret = config_load(&cfg, NULL, err, sizeof(err));
	if (!ret)
		ret = auth_config_load(cfg, "client", "client.admin", NULL, &auth, err,
				       sizeof(err));
	if (!ret)
		ret = config_get_str(cfg, "client", "mon_host", "127.0.0.1:6789", &mon, err,
				     sizeof(err));
	if (ret) {
		fprintf(stderr, "mds_bigdir: %s\n", err);
		die("configuration", ret);
	}
	mc.auth = auth;
	ret = msgr_create(&mc, &ops, NULL, &msgr);
	if (!ret)
		ret = msgr_start(msgr);
	if (ret)
		die("messenger", ret);
	if (auth && (ret = auth_login(msgr, mon, 10000, NULL, err, sizeof(err)))) {
		fprintf(stderr, "mds_bigdir: %s\n", err);
		die("authentication", ret);
	}
	config_free(cfg);
	conn = msgr_connect(msgr, argv[1]);
	if (!conn)
		die("connect", -EINVAL);
	if (ren) {
		rename_one(argv[3], argv[4]);
	} else if (again) {
		resend_check(strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10),
			     strtoull(argv[5], NULL, 10), argv[6]);
		printf("resent again: answered from its first result\n");
	} else if (!strcmp(argv[2], "resend")) {
		resend(N);
	} else if (!strcmp(argv[2], "list")) {
		list(N);
	} else {
		if (!strcmp(argv[2], "create"))
			create(N);
		verify(N);
	}
	msg_conn_put(conn);
	msgr_destroy(msgr);
	msg_auth_free(auth);
	free(seen);
	return 0;
}
