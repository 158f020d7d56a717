/*
 * partition_client.c - one side of the partition test (partition.sh).
 *
 *   partition-client CONF POOL OBJECT write|read SECONDS
 *
 * write: writes OBJECT again and again, each time with the next number
 *        (as 20 digits), and prints "ack N T" when the cluster
 *        acknowledged number N, T being the time (CLOCK_REALTIME, ns)
 *        the acknowledgement arrived.
 * read:  reads OBJECT again and again and prints "read T0 T1 N" for a
 *        read issued at T0 and answered at T1 with number N, or
 *        "err T0 T1 ERRNO" for one that failed (a timeout while the OSD it
 *        talks to holds no lease is expected).
 *
 * Both run for SECONDS and exit 0; the clock is the machine's, shared by
 * every network namespace, so partition.sh can compare the two logs: no
 * read issued after number N was acknowledged may return less than N.
 * client_op_timeout comes from CONF.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atoll/atoll.h"

#define VALUE_LEN 20

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int run_write(struct atoll_ioctx *io, const char *oid, uint64_t until)
{
	char buf[VALUE_LEN + 1];

	for (uint64_t n = 1; now_ns() < until; n++) {
		int r;

		snprintf(buf, sizeof(buf), "%020" PRIu64, n);
		r = atoll_write_full(io, oid, buf, VALUE_LEN, 0);
		if (r < 0) {
			/* not acknowledged: may or may not be applied, and the
			 * next number supersedes it either way */
			printf("werr %" PRIu64 " %d\n", n, -r);
		} else {
			printf("ack %" PRIu64 " %" PRIu64 "\n", n, now_ns());
		}
		fflush(stdout);
	}
	return 0;
}

static int run_read(struct atoll_ioctx *io, const char *oid, uint64_t until)
{
	char buf[VALUE_LEN + 1];

	while (now_ns() < until) {
		uint64_t t0 = now_ns(), t1;
		int64_t r = atoll_read(io, oid, buf, VALUE_LEN, 0, 0);

		t1 = now_ns();
		if (r == VALUE_LEN) {
			buf[VALUE_LEN] = 0;
			printf("read %" PRIu64 " %" PRIu64 " %llu\n", t0, t1,
			       strtoull(buf, NULL, 10));
		} else {
			printf("err %" PRIu64 " %" PRIu64 " %lld\n", t0, t1,
			       (long long)(r < 0 ? -r : EIO));
		}
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct atoll_cluster *cl = NULL;
	struct atoll_ioctx *io = NULL;
	uint64_t until;
	int r;

	if (argc != 6 || (strcmp(argv[4], "write") && strcmp(argv[4], "read"))) {
		fprintf(stderr, "usage: partition-client CONF POOL OBJECT write|read SECONDS\n");
		return 2;
	}
	r = atoll_cluster_create(&cl, argv[1], 0);
	if (!r)
		r = atoll_cluster_connect(cl);
	if (!r)
		r = atoll_ioctx_create(cl, argv[2], &io, 0);
	if (r) {
		fprintf(stderr, "partition-client: cannot connect: %s\n", atoll_strerror(r));
		if (cl)
			atoll_cluster_shutdown(cl);
		return 1;
	}
	until = now_ns() + strtoull(argv[5], NULL, 10) * 1000000000u;
	r = strcmp(argv[4], "write") ? run_read(io, argv[3], until)
				      : run_write(io, argv[3], until);
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(cl);
	return r ? 1 : 0;
}
