/*
 * bench_messenger.c - messenger throughput over loopback (not a test).
 *
 *   bench_messenger [SECONDS]
 *
 * Two messengers in one process (two loop threads), one connection.  For
 * each payload size the client keeps a window of calls in flight, each
 * carrying the payload as data; the server answers each with an empty
 * reply.  Prints calls/s and MB/s of payload.  The next call is issued
 * from the reply callback, on the client's loop thread, so what is
 * measured is the messenger, not a thread handoff.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "msg.h"

#define T_WRITE	200

struct bench {
	struct msg_conn *c;
	void *buf;
	size_t size;
	atomic_bool stop;
	atomic_long done, outstanding, errors;
};

static void server_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	(void)arg;
	msg_reply(c, m, msg_new(T_WRITE, NULL));
	msg_free(m);
}

static void on_reply(void *arg, struct msg *reply, int err);

static int issue(struct bench *b)
{
	struct msg *m = msg_new(T_WRITE, NULL);

	if (!m)
		return -1;
	msg_set_data_ref(m, b->buf, b->size, NULL, NULL);
	atomic_fetch_add(&b->outstanding, 1);
	if (msg_call(b->c, m, 0, on_reply, b) < 0) {
		atomic_fetch_sub(&b->outstanding, 1);
		return -1;
	}
	return 0;
}

static void on_reply(void *arg, struct msg *reply, int err)
{
	struct bench *b = arg;

	msg_free(reply);
	if (err)
		atomic_fetch_add(&b->errors, 1);
	else
		atomic_fetch_add(&b->done, 1);
	if (!atomic_load(&b->stop))
		issue(b);
	/* Last: once outstanding reaches 0, run() returns and b is gone. */
	atomic_fetch_sub(&b->outstanding, 1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run(struct msg_conn *c, size_t size, int window, double seconds)
{
	struct bench b = { .c = c, .size = size };
	double t0, t1;
	long done;

	b.buf = calloc(1, size);
	if (!b.buf)
		exit(1);
	t0 = now_s();
	for (int i = 0; i < window; i++)
		issue(&b);
	usleep((useconds_t)(seconds * 1e6));
	done = atomic_load(&b.done);
	t1 = now_s();
	atomic_store(&b.stop, true);
	while (atomic_load(&b.outstanding) > 0)
		usleep(1000);
	printf("%8zu bytes x %3d in flight: %9.0f calls/s %9.1f MB/s (%ld errors)\n",
	       size, window, (double)done / (t1 - t0),
	       (double)done * (double)size / (t1 - t0) / 1e6, atomic_load(&b.errors));
	free(b.buf);
}

int main(int argc, char **argv)
{
	struct msgr_config cfg = { .size_of = sizeof(cfg), .me = { MSG_ENTITY_OSD, 0 } };
	struct msgr_ops sops = { .dispatch = server_dispatch };
	struct msgr_ops cops = { 0 };
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct msgr *server, *client;
	struct msg_conn *c;
	char addr[64];

	if (msgr_create(&cfg, &sops, NULL, &server) < 0 ||
	    msgr_listen(server, "127.0.0.1:0", addr, sizeof(addr)) < 0 ||
	    msgr_start(server) < 0)
		return 1;
	cfg.me.type = MSG_ENTITY_CLIENT;
	if (msgr_create(&cfg, &cops, NULL, &client) < 0 || msgr_start(client) < 0)
		return 1;
	c = msgr_connect(client, addr);
	if (!c)
		return 1;
	run(c, 0, 1, seconds);
	run(c, 4096, 1, seconds);
	run(c, 4096, 64, seconds);
	run(c, 65536, 16, seconds);
	run(c, 4 << 20, 1, seconds);
	run(c, 4 << 20, 8, seconds);
	msg_conn_put(c);
	msgr_destroy(client);
	msgr_destroy(server);
	return 0;
}
