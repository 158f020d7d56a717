/*
 * fixture.c - makes a small store for tools-smoke.sh to inspect: a
 * compressed collection 0x2a holding an object whose name, attributes and
 * omap contain bytes that atoll-store-tool must escape (\x01, \xff, NUL,
 * a backslash), and 10000 bytes of data, also written to DIR/expected so
 * that `get` can be compared byte for byte; then, in collection 7, object
 * "logged" (20000 bytes, DIR/expected2) with an attribute, left in the
 * write-ahead log only: the process ends the moment that transaction is
 * durable, without closing the store, as a crash would (`log` lists the
 * record; every other command reads it through the replay).
 *
 * usage: tools-fixture DIR   (creates DIR/block, DIR/kv, DIR/expected{,2})
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

#define COLL 0x2a
#define OID "obj\x01name\\x"
#define DATA_LEN 10000

/* The logged transaction is durable: end here, the store not closed. */
static void crash_now(void *arg, int r)
{
	(void)arg;
	_exit(r < 0 ? 1 : 0);
}

static int fail(const char *what, int r)
{
	fprintf(stderr, "tools-fixture: %s: %s\n", what, strerror(r < 0 ? -r : r));
	return 1;
}

int main(int argc, char **argv)
{
	char block[4096], kv[4096], expected[4096];
	struct store_options so;
	struct store_txn *t;
	struct store *st;
	unsigned char data[DATA_LEN];
	FILE *f;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: tools-fixture DIR\n");
		return 2;
	}
	if (mkdir(argv[1], 0755) < 0 && errno != EEXIST)
		return fail(argv[1], errno);
	snprintf(block, sizeof(block), "%s/block", argv[1]);
	snprintf(kv, sizeof(kv), "%s/kv", argv[1]);
	snprintf(expected, sizeof(expected), "%s/expected", argv[1]);
	for (size_t i = 0; i < DATA_LEN; i++)
		data[i] = (unsigned char)(i * 7 + i / 251);

	memset(&so, 0, sizeof(so));
	so.size_of = sizeof(so);
	so.block_path = block;
	so.kv_path = kv;
	so.block_size = 64 << 20;
	if ((r = store_mkfs(&so)) < 0)
		return fail("store_mkfs", r);
	so.block_size = 0;
	if ((r = store_open(&so, &st)) < 0)
		return fail("store_open", r);

	t = store_txn_new();
	if (!t)
		return fail("store_txn_new", -ENOMEM);
	if ((r = store_txn_coll_create(t, COLL, STORE_COLL_COMPRESS)) ||
	    (r = store_txn_coll_create(t, 7, 0)) ||
	    (r = store_txn_write(t, COLL, OID, 0, data, DATA_LEN, 0)) ||
	    (r = store_txn_setattr(t, COLL, OID, "_", "hello", 5)) ||
	    (r = store_txn_setattr(t, COLL, OID, "bin", "\x00\xff", 2)) ||
	    (r = store_txn_omap_set(t, COLL, OID, "k1", 2, "v1", 2)) ||
	    (r = store_txn_omap_set(t, COLL, OID, "k\x00", 2, "nul key", 7)) ||
	    (r = store_txn_touch(t, COLL, "empty"))) {
		store_txn_free(t);
		return fail("building the transaction", r);
	}
	if ((r = store_apply(st, t)) < 0)
		return fail("store_apply", r);
	store_close(st);

	f = fopen(expected, "w");
	if (!f || fwrite(data, 1, DATA_LEN, f) != DATA_LEN || fclose(f))
		return fail(expected, errno);
	/* Twice the bytes, the second half reversed: a chunked object whose
	 * data and chunk record live in the log. */
	{
		static unsigned char two[2 * DATA_LEN];

		memcpy(two, data, DATA_LEN);
		for (size_t i = 0; i < DATA_LEN; i++)
			two[DATA_LEN + i] = data[DATA_LEN - 1 - i];
		snprintf(expected, sizeof(expected), "%s/expected2", argv[1]);
		f = fopen(expected, "w");
		if (!f || fwrite(two, 1, sizeof(two), f) != sizeof(two) || fclose(f))
			return fail(expected, errno);
		if ((r = store_open(&so, &st)) < 0)
			return fail("store_open", r);
		t = store_txn_new();
		if (!t)
			return fail("store_txn_new", -ENOMEM);
		if ((r = store_txn_write(t, 7, "logged", 0, two, sizeof(two), 0)) ||
		    (r = store_txn_setattr(t, 7, "logged", "a", "b", 1))) {
			store_txn_free(t);
			return fail("building the transaction", r);
		}
		if ((r = store_queue(st, t, crash_now, NULL)) < 0)
			return fail("store_queue", r);
		for (;;)
			pause();
	}
}
