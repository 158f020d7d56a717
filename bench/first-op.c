/*
 * first-op.c - how long a new client takes to its first operation
 * (issue 34: with authentication, at most 10 ms on loopback).
 *
 *   first-op CONF POOL [ROUNDS]
 *
 * Each round, in this process: create a cluster handle from CONF,
 * connect it (the monitor handshake: with auth = ticket the key proof,
 * the client id and the tickets; the map), open POOL and write one 4 KiB
 * object (the OSD handshake with the ticket, then the op), then shut the
 * handle down.  Prints, per round and as medians, the time to connected
 * and to the first op's acknowledgement, from the start of
 * atoll_cluster_create.  Process start-up (exec, dynamic linking) is not
 * counted: a long-lived program opening a new handle pays what is shown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atoll/atoll.h"

#define ROUNDS_MAX	1000

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static double conn[ROUNDS_MAX], first[ROUNDS_MAX];
	static char buf[4096];
	int rounds = argc > 3 ? atoi(argv[3]) : 20;

	if (argc < 3 || argc > 4 || rounds < 1 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "usage: first-op CONF POOL [ROUNDS (1..%d, default 20)]\n",
			ROUNDS_MAX);
		return 2;
	}
	memset(buf, 0x5a, sizeof(buf));
	for (int i = 0; i < rounds; i++) {
		struct atoll_cluster *c = NULL;
		struct atoll_ioctx *io = NULL;
		char oid[64];
		double t0 = now_ms();
		int r = atoll_cluster_create(&c, argv[1], 0);

		if (!r)
			r = atoll_cluster_connect(c);
		conn[i] = now_ms() - t0;
		if (!r)
			r = atoll_ioctx_create(c, argv[2], &io, 0);
		snprintf(oid, sizeof(oid), "first-op.%d", i);
		if (!r)
			r = atoll_write_full(io, oid, buf, sizeof(buf), 0);
		first[i] = now_ms() - t0;
		if (!r)
			r = atoll_remove(io, oid, 0);
		if (io)
			atoll_ioctx_destroy(io);
		if (c)
			atoll_cluster_shutdown(c);
		if (r) {
			fprintf(stderr, "first-op: round %d: %s\n", i + 1, atoll_strerror(r));
			return 1;
		}
		printf("round %d: connected %.2f ms, first op acknowledged %.2f ms\n", i + 1,
		       conn[i], first[i]);
	}
	printf("median of %d: connected %.2f ms, first op %.2f ms\n", rounds,
	       median(conn, rounds), median(first, rounds));
	return 0;
}
