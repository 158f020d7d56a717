/*
 * recovery_client.c - the workload of tests/recovery: writes objects in
 * two phases (the second while an OSD is down) and verifies every object
 * against the model below, through the public API.
 *
 *   recovery-client CONF POOL phase1|phase2|verify
 *
 * phase1: o0..o59 (o59 is 10 MiB + 123: two recovery chunks), each with
 *         xattr "x" and omap key "k1".
 * phase2: overwrite o0..o9, append to o10..o19, delete o20..o29, omap
 *         "k2" on o30..o34, o35 deleted and created again, o36 overwritten
 *         then deleted, new n0..n19 (n19 is 8 MiB + 1).
 * verify: reads everything back (after phase2), checks the deleted ones
 *         are gone, and prints "OID SIZE" for every object that must exist.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atoll/atoll.h"

#define NO 60
#define NN 20

static struct atoll_ioctx *io;
static int failures;

static void check(int r, const char *what, const char *oid)
{
	if (r < 0) {
		fprintf(stderr, "%s %s: %s\n", what, oid, atoll_strerror(r));
		exit(1);
	}
}

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static void gen(const char *oid, int g, uint64_t off, uint8_t *buf, size_t len)
{
	uint32_t h = hash(oid) + (uint32_t)g * 131u;

	for (size_t i = 0; i < len; i++) {
		uint64_t x = (off + i) * 2654435761u + h;

		buf[i] = (uint8_t)(x ^ (x >> 13) ^ (x >> 21));
	}
}

static size_t s1(int i) { return i == NO - 1 ? (10u << 20) + 123 : (size_t)(i * 7919) % 70000 + 1; }
static size_t s2(int i) { return (size_t)(i * 104729) % 50000 + 1; }
static size_t sa(int i) { return 1000 + (size_t)i; }
static size_t sn(int i) { return i == NN - 1 ? (8u << 20) + 1 : (size_t)(i * 31337) % 90000 + 1; }

static void put(const char *oid, int g, size_t size)
{
	uint8_t *b = malloc(size);

	gen(oid, g, 0, b, size);
	check(atoll_write_full(io, oid, b, size, 0), "write_full", oid);
	free(b);
}

/* The expected content of an object after phase2; 0 when it must not exist. */
static size_t expected(const char *oid, uint8_t **out)
{
	int i = atoi(oid + 1);
	uint8_t *b;
	size_t n;

	if (oid[0] == 'n') {
		n = sn(i);
		b = malloc(n);
		gen(oid, 4, 0, b, n);
	} else if (i < 10) {
		n = s2(i);
		b = malloc(n);
		gen(oid, 2, 0, b, n);
	} else if (i < 20) {
		n = s1(i) + sa(i);
		b = malloc(n);
		gen(oid, 1, 0, b, s1(i));
		gen(oid, 3, 0, b + s1(i), sa(i));
	} else if (i < 30 || i == 36) {
		return 0;
	} else if (i == 35) {
		n = 777;
		b = malloc(n);
		gen(oid, 5, 0, b, n);
	} else {
		n = s1(i);
		b = malloc(n);
		gen(oid, 1, 0, b, n);
	}
	*out = b;
	return n;
}

static void phase1(void)
{
	char oid[32], v[64];

	for (int i = 0; i < NO; i++) {
		snprintf(oid, sizeof(oid), "o%d", i);
		put(oid, 1, s1(i));
		snprintf(v, sizeof(v), "x-%s", oid);
		check(atoll_setxattr(io, oid, "x", v, strlen(v), 0), "setxattr", oid);
		struct atoll_kv kv = { "k1", 2, v, strlen(v) };

		check(atoll_omap_set(io, oid, &kv, 1, 0), "omap_set", oid);
	}
}

static void phase2(void)
{
	char oid[32], v[64];

	for (int i = 0; i < 10; i++) {
		snprintf(oid, sizeof(oid), "o%d", i);
		put(oid, 2, s2(i));
	}
	for (int i = 10; i < 20; i++) {
		uint8_t b[2048];

		snprintf(oid, sizeof(oid), "o%d", i);
		gen(oid, 3, 0, b, sa(i));
		check(atoll_append(io, oid, b, sa(i), 0), "append", oid);
	}
	for (int i = 20; i < 30; i++) {
		snprintf(oid, sizeof(oid), "o%d", i);
		check(atoll_remove(io, oid, 0), "remove", oid);
	}
	for (int i = 30; i < 35; i++) {
		snprintf(oid, sizeof(oid), "o%d", i);
		snprintf(v, sizeof(v), "y-%s", oid);
		struct atoll_kv kv = { "k2", 2, v, strlen(v) };

		check(atoll_omap_set(io, oid, &kv, 1, 0), "omap_set", oid);
	}
	check(atoll_remove(io, "o35", 0), "remove", "o35");
	put("o35", 5, 777);
	put("o36", 2, 5000);
	check(atoll_remove(io, "o36", 0), "remove", "o36");
	for (int i = 0; i < NN; i++) {
		snprintf(oid, sizeof(oid), "n%d", i);
		put(oid, 4, sn(i));
	}
}

static void verify_one(const char *oid)
{
	uint8_t *want = NULL, *got;
	size_t n = expected(oid, &want);
	uint64_t size = 0, mtime;
	int i = atoi(oid + 1);
	char v[64], vb[64];
	int64_t r;

	if (!n) {
		r = atoll_stat(io, oid, &size, &mtime, 0);
		if (r != -ENOENT) {
			fprintf(stderr, "%s: deleted, but stat says %lld (size %llu)\n", oid,
				(long long)r, (unsigned long long)size);
			failures++;
		}
		return;
	}
	got = malloc(n + 1);
	r = atoll_read(io, oid, got, n + 1, 0, 0);
	if (r != (int64_t)n || memcmp(got, want, n)) {
		fprintf(stderr, "%s: read %lld bytes, want %zu (%s)\n", oid, (long long)r, n,
			r == (int64_t)n ? "content differs" : "size differs");
		failures++;
	}
	if (oid[0] == 'o' && i != 35) {
		snprintf(v, sizeof(v), "x-%s", oid);
		r = atoll_getxattr(io, oid, "x", vb, sizeof(vb), 0);
		if (r != (int64_t)strlen(v) || memcmp(vb, v, r)) {
			fprintf(stderr, "%s: xattr x is wrong (%lld)\n", oid, (long long)r);
			failures++;
		}
		struct atoll_kv key = { i >= 30 && i < 35 ? "k2" : "k1", 2, NULL, 0 };
		struct atoll_kv_iter *it = NULL;
		const void *k, *val;
		size_t kl, vl;

		if (i >= 30 && i < 35)
			snprintf(v, sizeof(v), "y-%s", oid);
		r = atoll_omap_get(io, oid, &key, 1, &it, 0);
		if (r < 0 || atoll_kv_iter_next(it, &k, &kl, &val, &vl) || vl != strlen(v) ||
		    memcmp(val, v, vl)) {
			fprintf(stderr, "%s: omap %s is wrong (%lld)\n", oid, (const char *)key.key,
				(long long)r);
			failures++;
		}
		atoll_kv_iter_free(it);
	}
	printf("%s %zu\n", oid, n);
	free(got);
	free(want);
}

int main(int argc, char **argv)
{
	struct atoll_cluster *c;
	char oid[32];
	int r;

	if (argc != 4) {
		fprintf(stderr, "usage: recovery-client CONF POOL phase1|phase2|verify\n");
		return 2;
	}
	r = atoll_cluster_create(&c, argv[1], 0);
	if (!r)
		r = atoll_cluster_connect(c);
	if (!r)
		r = atoll_ioctx_create(c, argv[2], &io, 0);
	if (r) {
		fprintf(stderr, "cannot connect: %s\n", atoll_strerror(r));
		return 1;
	}
	if (!strcmp(argv[3], "phase1")) {
		phase1();
	} else if (!strcmp(argv[3], "phase2")) {
		phase2();
	} else if (!strcmp(argv[3], "verify")) {
		for (int i = 0; i < NO; i++) {
			snprintf(oid, sizeof(oid), "o%d", i);
			verify_one(oid);
		}
		for (int i = 0; i < NN; i++) {
			snprintf(oid, sizeof(oid), "n%d", i);
			verify_one(oid);
		}
	} else {
		fprintf(stderr, "unknown mode %s\n", argv[3]);
		return 2;
	}
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
