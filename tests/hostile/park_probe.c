/*
 * park_probe.c - sends an OSD client ops that name a map epoch it does
 * not have, all at once on one connection, and reports what came back.
 *
 *   park_probe OSD-ADDR COUNT EPOCH-AHEAD [WAIT-SECONDS [PG]]
 *
 * The ops (reads of one object of pool 1, PG 0 or PG; the OSD parks them
 * before it looks at the pool) carry the epoch EPOCH-AHEAD past the one
 * the OSD answers with, learnt from a first op with epoch 1 (-ESTALE
 * names the OSD's epoch).  Prints one line per outcome, e.g.
 *   eagain_now 12      -EAGAIN within 1 s (refused: over a bound)
 *   eagain_late 8      -EAGAIN after 1 s (let go at the timeout)
 *   other 0            any other result
 *   noreply 0          no answer within WAIT-SECONDS (default 20)
 * With PARK_PROBE_AS=osd in the environment the probe's hello says it is
 * osd.99, a cluster peer: past a bound the OSD closes its connection
 * instead, and the ops count as noreply.
 * Loopback only (the address must be 127.x); exit 0 when it ran, 2 on
 * bad arguments, 1 when the OSD could not be reached.  The hostile suite
 * (osd_parked.sh) checks the numbers against the limits it configured.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "encode.h"
#include "mono.h"
#include "msg.h"
#include "proto.h"

struct probe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t t0_ms;
	unsigned done, eagain_now, eagain_late, other, transport;
};

static struct probe P = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void on_msg(void *arg, struct msg_conn *c, struct msg *m)
{
	(void)arg;
	(void)c;
	msg_free(m);
}

static uint32_t g_pg;

static struct msg *op_msg(uint64_t client, uint64_t tid, uint64_t epoch)
{
	struct osd_subop so = { .code = OSD_OP_READ, .off = 0, .len = 4096 };
	struct osd_op_req req = {
		.reqid = { client, tid }, .epoch = epoch, .pool = 1, .pg = g_pg,
		.oid = "park-probe", .oid_len = 10, .nops = 1, .ops = &so,
	};
	const void *data;
	size_t data_len;
	bool owned;
	struct msg *m;
	struct enc e;

	enc_init(&e);
	osd_op_req_encode(&req, &e, &data, &data_len, &owned);
	m = msg_new(MT_OSD_OP, &e);
	enc_free(&e);
	if (owned)
		free((void *)data);
	return m;
}

static void on_reply(void *arg, struct msg *reply, int err)
{
	struct osd_op_reply rep;
	struct dec d;
	int result = err;

	(void)arg;
	memset(&rep, 0, sizeof(rep));
	if (!err) {
		dec_init(&d, reply->front, reply->front_len);
		result = osd_op_reply_decode(&d, reply->data_len, &rep) ? -EBADMSG : rep.result;
		osd_op_reply_clear(&rep);
	}
	msg_free(reply);
	pthread_mutex_lock(&P.lock);
	if (err)
		P.transport++;
	else if (result == -EAGAIN && mono_now_ms() - P.t0_ms < 1000)
		P.eagain_now++;
	else if (result == -EAGAIN)
		P.eagain_late++;
	else
		P.other++;
	P.done++;
	pthread_cond_broadcast(&P.cond);
	pthread_mutex_unlock(&P.lock);
}

int main(int argc, char **argv)
{
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops ops = { .dispatch = on_msg };
	struct osd_op_reply rep;
	struct msg *reply = NULL;
	struct msg_conn *c;
	struct msgr *msgr;
	uint64_t client, epoch, end;
	unsigned count, ahead, wait_s;
	struct dec d;
	int r;

	if (argc < 4 || strncmp(argv[1], "127.", 4)) {
		fprintf(stderr, "usage: park_probe 127.x.y.z:PORT COUNT EPOCH-AHEAD "
			"[WAIT-SECONDS [PG]]\n");
		return 2;
	}
	count = (unsigned)strtoul(argv[2], NULL, 10);
	ahead = (unsigned)strtoul(argv[3], NULL, 10);
	wait_s = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 20;
	g_pg = argc > 5 ? (uint32_t)strtoul(argv[5], NULL, 10) : 0;
	if (count == 0 || count > 100000 || ahead == 0 || wait_s == 0 || wait_s > 600) {
		fprintf(stderr, "park_probe: COUNT 1..100000, EPOCH-AHEAD and WAIT-SECONDS "
			"(up to 600) more than 0\n");
		return 2;
	}
	if (getrandom(&client, sizeof(client), 0) != sizeof(client))
		client = (uint64_t)mono_now_ns();
	client |= 1;
	mc.me.type = MSG_ENTITY_CLIENT;
	mc.me.id = client;
	if (getenv("PARK_PROBE_AS") && !strcmp(getenv("PARK_PROBE_AS"), "osd")) {
		mc.me.type = MSG_ENTITY_OSD;
		mc.me.id = 99;
	}
	if (msgr_create(&mc, &ops, NULL, &msgr) || msgr_start(msgr)) {
		fprintf(stderr, "park_probe: cannot start the messenger\n");
		return 1;
	}
	c = msgr_connect(msgr, argv[1]);
	if (!c) {
		fprintf(stderr, "park_probe: '%s' is not an address\n", argv[1]);
		return 2;
	}
	/* epoch 1 is old: the answer names the OSD's epoch */
	r = msg_call_wait(c, op_msg(client, 1, 1), 10000, &reply);
	if (r) {
		fprintf(stderr, "park_probe: the OSD at %s does not answer: %s\n", argv[1],
			strerror(-r));
		return 1;
	}
	dec_init(&d, reply->front, reply->front_len);
	memset(&rep, 0, sizeof(rep));
	if (osd_op_reply_decode(&d, reply->data_len, &rep)) {
		fprintf(stderr, "park_probe: a malformed reply\n");
		return 1;
	}
	epoch = rep.epoch + ahead;
	osd_op_reply_clear(&rep);
	msg_free(reply);

	P.t0_ms = mono_now_ms();
	for (unsigned i = 0; i < count; i++) {
		struct msg *m = op_msg(client, 2 + i, epoch);

		if (!m || msg_call(c, m, wait_s * 1000, on_reply, NULL) < 0) {
			pthread_mutex_lock(&P.lock);
			P.transport++;
			P.done++;
			pthread_mutex_unlock(&P.lock);
		}
	}
	end = mono_now_ms() + wait_s * 1000ull + 2000;
	pthread_mutex_lock(&P.lock);
	while (P.done < count && mono_now_ms() < end) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&P.cond, &P.lock, &ts);
	}
	printf("eagain_now %u\neagain_late %u\nother %u\nnoreply %u\n", P.eagain_now,
	       P.eagain_late, P.other, count - P.done + P.transport);
	pthread_mutex_unlock(&P.lock);
	msg_conn_put(c);
	msgr_destroy(msgr);
	return 0;
}
