/*
 * mds_probe.c - asks an MDS for more than its per-daemon and per-session
 * limits allow, through the MDS protocol, and prints each answer.
 *
 *   mds_probe MDS-ADDR sessions N   N clients each open a session
 *   mds_probe MDS-ADDR opens N      one client creates N files, each left
 *                                   open, then opens the first again and
 *                                   the root folder
 *
 * One line per request: "session RC", "create RC", "reopen RC", "open RC"
 * (RC: 0 or a negative errno).  Loopback only; exit 0 when every request
 * was answered, 1 when one was not, 2 on bad arguments.  The hostile
 * suite (mds_limits.sh) checks the answers against the limits it set.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "encode.h"
#include "mds_proto.h"
#include "mono.h"
#include "msg.h"

#define ROOT_INO 1u

static struct msg_conn *conn;
static uint64_t next_reqid;

static void on_msg(void *arg, struct msg_conn *c, struct msg *m)
{
	(void)arg;
	(void)c;
	msg_free(m);	/* revokes: no leases are asked for */
}

/* rq -> *rc; the call's error. */
static int call(const struct mds_req *rq, int *rc, uint64_t *ino)
{
	struct mds_reply rp;
	struct msg *m, *reply;
	struct dec d;
	struct enc e;
	int ret;

	enc_init(&e);
	mds_req_encode(&e, rq);
	m = msg_new(MT_MDS_REQUEST, &e);
	enc_free(&e);
	if (!m)
		return -ENOMEM;
	ret = msg_call_wait(conn, m, 20000, &reply);
	if (ret)
		return ret;
	memset(&rp, 0, sizeof(rp));
	dec_init(&d, reply->front, reply->front_len);
	ret = mds_reply_decode(&d, &rp);
	msg_free(reply);
	if (ret)
		return ret;
	*rc = rp.rc;
	if (ino)
		*ino = rp.ninodes ? rp.in[0].ino : 0;
	free(rp.ents);
	free(rp.plus);
	free(rp.value);
	return 0;
}

static void req_init(struct mds_req *rq, uint32_t op, uint64_t client, uint64_t ino)
{
	memset(rq, 0, sizeof(*rq));
	rq->op = op;
	rq->client = client;
	rq->reqid = ++next_reqid;
	rq->ino = ino;
}

/* One request, its answer printed as "WHAT RC"; false when unanswered. */
static bool ask(const char *what, const struct mds_req *rq, uint64_t *ino)
{
	int rc = 0, ret = call(rq, &rc, ino);

	if (ret) {
		fprintf(stderr, "mds_probe: %s: no answer: %s\n", what, strerror(-ret));
		return false;
	}
	printf("%s %d\n", what, rc);
	return true;
}

int main(int argc, char **argv)
{
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops ops = { .dispatch = on_msg };
	struct mds_req rq;
	struct msgr *msgr;
	uint64_t base, first = 0;
	unsigned n;
	bool ok = true;

	if (argc != 4 || strncmp(argv[1], "127.", 4) ||
	    (strcmp(argv[2], "sessions") && strcmp(argv[2], "opens"))) {
		fprintf(stderr, "usage: mds_probe 127.x.y.z:PORT sessions|opens N\n");
		return 2;
	}
	n = (unsigned)strtoul(argv[3], NULL, 10);
	if (n == 0 || n > 10000) {
		fprintf(stderr, "mds_probe: N is 1 to 10000\n");
		return 2;
	}
	if (getrandom(&base, sizeof(base), 0) != sizeof(base))
		base = mono_now_ns();
	base = (base >> 16) << 16;	/* room for n client ids after it */
	mc.me.type = MSG_ENTITY_CLIENT;
	mc.me.id = base;
	if (msgr_create(&mc, &ops, NULL, &msgr) || msgr_start(msgr)) {
		fprintf(stderr, "mds_probe: cannot start the messenger\n");
		return 1;
	}
	conn = msgr_connect(msgr, argv[1]);
	if (!conn) {
		fprintf(stderr, "mds_probe: '%s' is not an address\n", argv[1]);
		return 2;
	}
	if (!strcmp(argv[2], "sessions")) {
		for (unsigned i = 1; i <= n && ok; i++) {
			req_init(&rq, MDS_OP_SESSION, base + i, 0);
			ok = ask("session", &rq, NULL);
		}
		goto out;
	}
	req_init(&rq, MDS_OP_SESSION, base + 1, 0);
	ok = ask("session", &rq, NULL);
	for (unsigned i = 0; i < n && ok; i++) {
		uint64_t ino = 0;

		req_init(&rq, MDS_OP_MKNOD, base + 1, ROOT_INO);
		snprintf(rq.name, sizeof(rq.name), "probe-%llx-%u", (unsigned long long)base, i);
		rq.mode = S_IFREG | 0644;
		rq.flags = MDS_F_EXCL | 0x2u;	/* created open, as atoll-fuse's create */
		ok = ask("create", &rq, &ino);
		if (i == 0)
			first = ino;
	}
	if (ok && first) {
		req_init(&rq, MDS_OP_OPEN, base + 1, first);
		ok = ask("reopen", &rq, NULL);
	}
	if (ok) {
		req_init(&rq, MDS_OP_OPEN, base + 1, ROOT_INO);
		ok = ask("open", &rq, NULL);
	}
out:
	fflush(stdout);
	msg_conn_put(conn);
	msgr_destroy(msgr);
	return ok ? 0 : 1;
}
