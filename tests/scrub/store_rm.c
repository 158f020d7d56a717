/*
 * store_rm.c - a test seam: removes one object from a stopped OSD's store,
 * so that a test can make a copy go missing behind the cluster's back
 * (tests/scrub/schedule.sh: a shallow scrub must name it).  atoll-store-tool
 * only inspects; this is the one writer, and only tests build it.
 *
 *   scrub-store-rm DATA-DIR PGID OID     (the OSD must be stopped)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "store.h"

int main(int argc, char **argv)
{
	char block[4096], kv[4096];
	struct store_options so;
	struct store_txn *t;
	struct store *st;
	unsigned pool, pg;
	char tail;
	int r;

	if (argc != 4 || sscanf(argv[2], "%u.%x%c", &pool, &pg, &tail) != 2) {
		fprintf(stderr, "usage: scrub-store-rm DATA-DIR PGID OID\n");
		return 2;
	}
	snprintf(block, sizeof(block), "%s/block", argv[1]);
	snprintf(kv, sizeof(kv), "%s/kv", argv[1]);
	memset(&so, 0, sizeof(so));
	so.size_of = sizeof(so);
	so.block_path = block;
	so.kv_path = kv;
	r = store_open(&so, &st);
	if (r < 0) {
		fprintf(stderr, "scrub-store-rm: cannot open the store in '%s': %s; is its OSD "
			"stopped?\n", argv[1], strerror(-r));
		return 1;
	}
	t = store_txn_new();
	r = t ? store_txn_remove(t, pg_coll(pool, pg), argv[3]) : -ENOMEM;
	if (r < 0)
		store_txn_free(t);
	else
		r = store_apply(st, t);
	store_close(st);
	if (r < 0) {
		fprintf(stderr, "scrub-store-rm: cannot remove '%s' from pg %s: %s\n", argv[3],
			argv[2], strerror(-r));
		return 1;
	}
	return 0;
}
