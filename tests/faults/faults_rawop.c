/*
 * faults_rawop.c - sends MT_OSD_OP frames straight to an OSD over the
 * messenger, past every check the client library makes, to see that the
 * OSD enforces the object size limit itself.
 *
 *   faults-rawop OSD-ADDR POOL-ID PG EPOCH OID
 *
 * (the caller learns them from `atoll osd map` and `atoll osd tree`).
 * Sends, each as its own request: a 1-byte write at 128 MiB, a 2-byte
 * write ending at 128 MiB + 1 and a truncate to 128 MiB + 1, each of which
 * must fail -EFBIG; then a 1-byte write at 128 MiB - 1, which must work.
 * With auth on ($ATOLL_CONF), it first authenticates as client.admin.
 * Exit 0 when all held, 1 otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "auth_config.h"
#include "config.h"
#include "encode.h"
#include "msg.h"
#include "proto.h"

static void dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	(void)arg;
	(void)c;
	msg_free(m);
}

static uint64_t client_id;

/* One op of one sub-op; returns the OSD's result, or a transport error
 * as 1000 + errno (so that it can never look like the expected result). */
static int op(struct msg_conn *conn, uint64_t tid, uint64_t epoch, uint32_t pool, uint32_t pg,
	      const char *oid, struct osd_subop *so)
{
	struct osd_op_req req = {
		.reqid = { client_id, tid }, .epoch = epoch, .pool = pool, .pg = pg,
		.oid = oid, .oid_len = (uint32_t)strlen(oid), .nops = 1, .ops = so,
	};
	struct osd_op_reply rep;
	struct msg *reply;
	const void *data;
	size_t data_len;
	bool owned;
	struct msg *m;
	struct enc e;
	struct dec d;
	int r;

	enc_init(&e);
	r = osd_op_req_encode(&req, &e, &data, &data_len, &owned);
	m = r < 0 ? NULL : msg_new(MT_OSD_OP, &e);
	enc_free(&e);
	if (!m)
		return 1000 + ENOMEM;
	if (data_len)
		msg_set_data_ref(m, (void *)data, data_len, owned ? free : NULL, (void *)data);
	r = msg_call_wait(conn, m, 20000, &reply);
	if (r < 0)
		return 1000 - r;
	memset(&rep, 0, sizeof(rep));
	dec_init(&d, reply->front, reply->front_len);
	r = osd_op_reply_decode(&d, reply->data_len, &rep);
	msg_free(reply);
	if (r < 0)
		return 1000 - r;
	r = rep.result;
	osd_op_reply_clear(&rep);
	return r;
}

int main(int argc, char **argv)
{
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops ops = { .dispatch = dispatch };
	struct msgr *msgr = NULL;
	struct msg_auth *auth = NULL;
	struct msg_conn *conn;
	uint64_t epoch, big = 128ull << 20;
	uint32_t pool, pg;
	int failures = 0, r;

	if (argc != 6) {
		fprintf(stderr, "usage: faults-rawop OSD-ADDR POOL-ID PG EPOCH OID\n");
		return 2;
	}
	pool = (uint32_t)strtoul(argv[2], NULL, 10);
	pg = (uint32_t)strtoul(argv[3], NULL, 10);
	epoch = strtoull(argv[4], NULL, 10);
	if (getrandom(&client_id, sizeof(client_id), 0) != sizeof(client_id))
		return 1;
	client_id |= 1;
	mc.me.type = MSG_ENTITY_CLIENT;
	mc.me.id = client_id;
	/* with auth on ($ATOLL_CONF), this messenger proves client.admin's
	 * key and uses the client id the monitors give it */
	{
		struct config *cfg = NULL;
		const char *mon = NULL;
		char err[512];

		if (config_load(&cfg, NULL, err, sizeof(err)) < 0 ||
		    auth_config_load(cfg, "client", "client.admin", NULL, &auth, err,
				     sizeof(err)) < 0 ||
		    config_get_str(cfg, "client", "mon_host", "127.0.0.1:6789", &mon, err,
				   sizeof(err)) < 0) {
			fprintf(stderr, "FAIL: %s\n", err);
			return 1;
		}
		mc.auth = auth;
		if (msgr_create(&mc, &ops, NULL, &msgr) < 0 || msgr_start(msgr) < 0) {
			fprintf(stderr, "FAIL: cannot start a messenger\n");
			return 1;
		}
		if (auth && auth_login(msgr, mon, 10000, NULL, err, sizeof(err)) < 0) {
			fprintf(stderr, "FAIL: %s\n", err);
			return 1;
		}
		if (auth)
			client_id = msg_auth_client_id(auth);
		config_free(cfg);
	}
	conn = msgr_connect(msgr, argv[1]);
	if (!conn) {
		fprintf(stderr, "FAIL: cannot connect to %s\n", argv[1]);
		msgr_destroy(msgr);
		return 1;
	}
	struct {
		const char *what;
		struct osd_subop so;
		int want;
	} cases[] = {
		{ "a 1-byte write at 128 MiB",
		  { .code = OSD_OP_WRITE, .off = big, .data = "x", .data_len = 1, .len = 1 },
		  -EFBIG },
		{ "a 2-byte write ending at 128 MiB + 1",
		  { .code = OSD_OP_WRITE, .off = big - 1, .data = "xy", .data_len = 2, .len = 2 },
		  -EFBIG },
		{ "a truncate to 128 MiB + 1",
		  { .code = OSD_OP_TRUNCATE, .off = big + 1 }, -EFBIG },
		{ "a 1-byte write at 128 MiB - 1",
		  { .code = OSD_OP_WRITE, .off = big - 1, .data = "z", .data_len = 1, .len = 1 },
		  0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = op(conn, 100 + i, epoch, pool, pg, argv[5], &cases[i].so);
		if (r != cases[i].want) {
			fprintf(stderr, "FAIL: %s sent straight to the OSD: %d%s, want %d\n",
				cases[i].what, r >= 1000 ? -(r - 1000) : r,
				r >= 1000 ? " (transport)" : "", cases[i].want);
			failures++;
		} else {
			printf("ok - %s: %d\n", cases[i].what, r);
		}
	}
	msg_conn_put(conn);
	msgr_destroy(msgr);
	msg_auth_free(auth);
	return failures ? 1 : 0;
}
