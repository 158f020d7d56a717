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
 * measured is the messenger, not a thread handoff.  Last, one call at a
 * time from the main thread, which waits for each reply (an application
 * thread's round trip: the call leaves from that thread when the
 * connection is idle, the reply wakes it).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "encode.h"
#include "msg.h"
#include "testutil.h"

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

static void run(struct msg_conn *c, size_t size, int window, double seconds)
{
	struct bench b = { .c = c, .size = size };
	double t0, t1;
	long done;

	b.buf = calloc(1, size);
	if (!b.buf)
		exit(1);
	t0 = tu_now_s();
	for (int i = 0; i < window; i++)
		issue(&b);
	usleep((useconds_t)(seconds * 1e6));
	done = atomic_load(&b.done);
	t1 = tu_now_s();
	atomic_store(&b.stop, true);
	while (atomic_load(&b.outstanding) > 0)
		usleep(1000);
	printf("%8zu bytes x %3d in flight: %9.0f calls/s %9.1f MB/s (%ld errors)\n",
	       size, window, (double)done / (t1 - t0),
	       (double)done * (double)size / (t1 - t0) / 1e6, atomic_load(&b.errors));
	free(b.buf);
}

struct sync_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool fired;
	int err;
};

static void on_sync(void *arg, struct msg *reply, int err)
{
	struct sync_wait *w = arg;

	msg_free(reply);
	pthread_mutex_lock(&w->lock);
	w->fired = true;
	w->err = err;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void run_sync(struct msg_conn *c, double seconds)
{
	struct sync_wait w = { .lock = PTHREAD_MUTEX_INITIALIZER,
			       .cond = PTHREAD_COND_INITIALIZER };
	double t0 = tu_now_s(), t1 = t0;
	long done = 0, errors = 0;

	do {
		struct msg *m = msg_new(T_WRITE, NULL);

		w.fired = false;
		if (!m || msg_call(c, m, 0, on_sync, &w) < 0) {
			errors++;
			break;
		}
		pthread_mutex_lock(&w.lock);
		while (!w.fired)
			pthread_cond_wait(&w.cond, &w.lock);
		pthread_mutex_unlock(&w.lock);
		if (w.err)
			errors++;
		else
			done++;
		t1 = tu_now_s();
	} while (t1 - t0 < seconds);
	printf("       0 bytes, 1 at a time from a thread: %9.0f calls/s, %.1f us each (%ld errors)\n",
	       (double)done / (t1 - t0), (t1 - t0) * 1e6 / (double)(done ? done : 1), errors);
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
	run_sync(c, seconds);
	msg_conn_put(c);
	msgr_destroy(client);
	msgr_destroy(server);
	return 0;
}
