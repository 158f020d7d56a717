/*
 * test_placement.c - lib/placement.c: golden vectors (the name hash, PGs
 * of names, the fixed-point log, raw sets of a small map), failure
 * domains, distribution, and the stability of straw2 when an OSD is
 * added, marked out or reweighted; acting sets with down OSDs and
 * pg_temp.
 *
 * The golden vectors pin the placement format: if one changes, every
 * object of every cluster moves.  Change them only on purpose.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osdmap.h"
#include "placement.h"
#include "placement_log.h"

/* ---- helpers ---- */

static void add_osd(struct osdmap *m, uint32_t id, const char *host,
		    uint32_t weight, uint32_t reweight)
{
	struct osdmap_osd *o;

	if (id >= m->max_osd) {
		m->osds = realloc(m->osds, (id + 1) * sizeof(*m->osds));
		cr_assert_not_null(m->osds);
		memset(m->osds + m->max_osd, 0, (id + 1 - m->max_osd) * sizeof(*m->osds));
		m->max_osd = id + 1;
	}
	o = &m->osds[id];
	o->id = id;
	o->state = OSD_ST_EXISTS | OSD_ST_UP;
	snprintf(o->host, sizeof(o->host), "%s", host);
	o->weight = weight;
	o->reweight = reweight;
}

/* n equal OSDs, per_host of them on each host "hostN". */
static struct osdmap *equal_map(uint32_t n, uint32_t per_host)
{
	struct osdmap *m = osdmap_new(NULL);
	char host[32];
	uint32_t i;

	cr_assert_not_null(m);
	for (i = 0; i < n; i++) {
		snprintf(host, sizeof(host), "host%u", i / per_host);
		add_osd(m, i, host, OSD_WEIGHT_ONE, OSD_WEIGHT_ONE);
	}
	return m;
}

static struct osdmap_pool make_pool(uint32_t id, uint32_t pg_num, uint8_t size,
				    uint8_t fd)
{
	struct osdmap_pool p;

	memset(&p, 0, sizeof(p));
	p.id = id;
	snprintf(p.name, sizeof(p.name), "pool%u", id);
	p.size = size;
	p.min_size = 1;
	p.failure_domain = fd;
	p.pg_num = pg_num;
	return p;
}

/* Raw sets of every PG of p: pg_num * OSDMAP_SIZE_MAX ids. */
static int32_t *all_raw(const struct osdmap *m, const struct osdmap_pool *p)
{
	struct placement_ctx *c = placement_ctx_new(m);
	int32_t *sets = malloc((size_t)p->pg_num * OSDMAP_SIZE_MAX * sizeof(*sets));
	uint32_t pg;

	cr_assert_not_null(c);
	cr_assert_not_null(sets);
	for (pg = 0; pg < p->pg_num; pg++)
		cr_assert_geq(placement_ctx_raw(c, p, pg, sets + pg * OSDMAP_SIZE_MAX), 0);
	placement_ctx_free(c);
	return sets;
}

/* Per-OSD replica counts of every PG of p. */
static uint32_t *count_per_osd(const struct osdmap *m, const struct osdmap_pool *p)
{
	int32_t *sets = all_raw(m, p);
	uint32_t *cnt = calloc(m->max_osd, sizeof(*cnt));
	uint32_t pg, s;

	cr_assert_not_null(cnt);
	for (pg = 0; pg < p->pg_num; pg++) {
		for (s = 0; s < p->size; s++) {
			int32_t o = sets[pg * OSDMAP_SIZE_MAX + s];

			if (o >= 0)
				cnt[o]++;
		}
	}
	free(sets);
	return cnt;
}

static bool set_has(const int32_t *set, uint32_t size, int32_t osd)
{
	uint32_t i;

	for (i = 0; i < size; i++)
		if (set[i] == osd)
			return true;
	return false;
}

/* ---- golden vectors ---- */

static const struct {
	const char *name;
	uint32_t hash;
	uint32_t pg16, pg12;
} name_vectors[] = {
	{ "", 0x02cc5d05u, 5, 5 },
	{ "foo", 0xe20f0dd9u, 9, 9 },
	{ "bar", 0x41a22b2cu, 12, 4 },
	{ "rbd_data.1234.0000000000000000", 0x7057be83u, 3, 3 },
	{ "atoll", 0xcc951350u, 0, 0 },
};

Test(placement, name_hash_is_xxh32_seed_0)
{
	size_t i;

	/* published XXH32 vectors */
	cr_expect_eq(placement_hash("", 0), 0x02cc5d05u);
	cr_expect_eq(placement_hash(NULL, 0), 0x02cc5d05u);
	cr_expect_eq(placement_hash("a", 1), 0x550d7456u);
	cr_expect_eq(placement_hash("abc", 3), 0x32d153ffu);
	for (i = 0; i < sizeof(name_vectors) / sizeof(name_vectors[0]); i++)
		cr_expect_eq(placement_hash(name_vectors[i].name, strlen(name_vectors[i].name)),
			     name_vectors[i].hash, "name '%s'", name_vectors[i].name);
}

Test(placement, pg_of_names_is_pinned)
{
	struct osdmap_pool p16 = make_pool(1, 16, 3, POOL_FD_HOST);
	struct osdmap_pool p12 = make_pool(1, 12, 3, POOL_FD_HOST);
	size_t i;

	for (i = 0; i < sizeof(name_vectors) / sizeof(name_vectors[0]); i++) {
		const char *n = name_vectors[i].name;

		cr_expect_eq(placement_object_pg(&p16, n, strlen(n)), name_vectors[i].pg16,
			     "name '%s'", n);
		cr_expect_eq(placement_object_pg(&p12, n, strlen(n)), name_vectors[i].pg12,
			     "name '%s'", n);
		cr_expect_eq(placement_pg(&p12, name_vectors[i].hash), name_vectors[i].pg12);
	}
}

Test(placement, stable_mod_is_cephs)
{
	/* pg_num 12, mask 15: 0..11 stay, 12..15 fold onto 4..7 */
	cr_expect_eq(placement_stable_mod(11, 12, 15), 11);
	cr_expect_eq(placement_stable_mod(12, 12, 15), 4);
	cr_expect_eq(placement_stable_mod(15, 12, 15), 7);
	cr_expect_eq(placement_stable_mod(0x1234567d, 12, 15), 0xd & 7);
	cr_expect_eq(placement_stable_mod(0xffffffffu, 16, 15), 15);
	cr_expect_eq(placement_stable_mod(0xffffffffu, 1, 0), 0);
}

Test(placement, stable_mod_growth_only_splits)
{
	struct osdmap_pool a = make_pool(1, 12, 3, POOL_FD_HOST);
	struct osdmap_pool b = make_pool(1, 13, 3, POOL_FD_HOST);
	uint32_t x;

	/* Going from 12 to 13 PGs, an object either stays or moves to the
	 * new PG 12 (split off PG 4). */
	for (x = 0; x < 100000; x++) {
		uint32_t h = x * 2654435761u, pa = placement_pg(&a, h), pb = placement_pg(&b, h);

		cr_assert(pa == pb || (pb == 12 && pa == 4), "hash %08x: %u -> %u", h, pa, pb);
	}
}

Test(placement, log_table_built_at_build_time_matches_the_computation)
{
	for (uint32_t u = 0; u < 65536; u++)
		cr_assert_eq(placement_log_tab[u], placement_log2_compute(u + 1), "entry %u", u);
}

Test(placement, log2_fixed_is_exact_at_pinned_points)
{
	/* floor(2^44 * log2(x)), from 60-digit decimal arithmetic */
	cr_expect_eq(placement_log2_fixed(1), 0);
	cr_expect_eq(placement_log2_fixed(2), 1ull << 44);
	cr_expect_eq(placement_log2_fixed(3), 0x195c01a39fbdull);
	cr_expect_eq(placement_log2_fixed(5), 0x25269e12f346ull);
	cr_expect_eq(placement_log2_fixed(7), 0x2ceaecfea808ull);
	cr_expect_eq(placement_log2_fixed(1000), 0x9f73da38d9d4ull);
	cr_expect_eq(placement_log2_fixed(12345), 0xd9775aaebe16ull);
	cr_expect_eq(placement_log2_fixed(65535), 0xffffe8eaad10ull);
	cr_expect_eq(placement_log2_fixed(65536), 16ull << 44);
	cr_expect_eq(placement_log2_fixed(0), 0);
	cr_expect_eq(placement_log2_fixed(65537), 0);
}

Test(placement, log2_fixed_is_strictly_increasing)
{
	uint32_t x;

	for (x = 2; x <= 65536; x++)
		cr_assert_gt(placement_log2_fixed(x), placement_log2_fixed(x - 1), "x %u", x);
}

/* 8 OSDs on 4 hosts: osd.2 weighs 2, osd.5 weighs 0.5, osd.6 is out,
 * osd.7 has reweight 0.5. */
static struct osdmap *golden_map(void)
{
	static const char *const hosts[8] = { "a", "a", "b", "b", "c", "c", "d", "d" };
	static const uint32_t w[8] = {
		0x10000, 0x10000, 0x20000, 0x10000, 0x10000, 0x8000, 0x10000, 0x10000,
	};
	static const uint32_t rw[8] = {
		0x10000, 0x10000, 0x10000, 0x10000, 0x10000, 0x10000, 0, 0x8000,
	};
	struct osdmap *m = osdmap_new(NULL);
	uint32_t i;

	cr_assert_not_null(m);
	for (i = 0; i < 8; i++)
		add_osd(m, i, hosts[i], w[i], rw[i]);
	return m;
}

Test(placement, raw_sets_of_a_small_map_are_pinned)
{
	static const int32_t want_host[16][3] = {
		{ 1, 5, 2 }, { 0, 4, 7 }, { 7, 1, 2 }, { 2, 5, 0 },
		{ 3, 7, 4 }, { 3, 0, 4 }, { 2, 5, 0 }, { 4, 2, 7 },
		{ 5, 0, 3 }, { 2, 4, 1 }, { 4, 2, 1 }, { 0, 2, 4 },
		{ 5, 2, 7 }, { 2, 4, 0 }, { 3, 5, 0 }, { 2, 5, 1 },
	};
	static const int32_t want_osd[8][2] = {
		{ 0, 7 }, { 3, 7 }, { 2, 3 }, { 1, 0 },
		{ 2, 5 }, { 2, 5 }, { 7, 2 }, { 4, 1 },
	};
	struct osdmap *m = golden_map();
	struct osdmap_pool p1 = make_pool(1, 16, 3, POOL_FD_HOST);
	struct osdmap_pool p2 = make_pool(2, 8, 2, POOL_FD_OSD);
	int32_t out[OSDMAP_SIZE_MAX];
	uint32_t pg, s;

	for (pg = 0; pg < 16; pg++) {
		cr_assert_eq(placement_raw(m, &p1, pg, out), 3);
		for (s = 0; s < 3; s++)
			cr_expect_eq(out[s], want_host[pg][s], "pool 1 pg %u slot %u: %d", pg, s, out[s]);
		for (s = 3; s < OSDMAP_SIZE_MAX; s++)
			cr_expect_eq(out[s], -1);
	}
	for (pg = 0; pg < 8; pg++) {
		cr_assert_eq(placement_raw(m, &p2, pg, out), 2);
		for (s = 0; s < 2; s++)
			cr_expect_eq(out[s], want_osd[pg][s], "pool 2 pg %u slot %u: %d", pg, s, out[s]);
	}
	osdmap_free(m);
}

Test(placement, context_and_one_shot_calls_agree)
{
	struct osdmap *m = golden_map();
	struct osdmap_pool p = make_pool(3, 64, 3, POOL_FD_HOST);
	struct placement_ctx *c = placement_ctx_new(m);
	int32_t a[OSDMAP_SIZE_MAX], b[OSDMAP_SIZE_MAX], pa, pb;
	uint32_t pg;

	cr_assert_not_null(c);
	m->osds[3].state &= ~OSD_ST_UP;
	for (pg = 0; pg < p.pg_num; pg++) {
		cr_assert_eq(placement_raw(m, &p, pg, a), placement_ctx_raw(c, &p, pg, b));
		cr_assert_eq(memcmp(a, b, sizeof(a)), 0);
		cr_assert_eq(placement_acting(m, &p, pg, a, &pa),
			     placement_ctx_acting(c, &p, pg, b, &pb));
		cr_assert_eq(memcmp(a, b, sizeof(a)), 0);
		cr_assert_eq(pa, pb);
	}
	placement_ctx_free(c);
	placement_ctx_free(NULL);
	osdmap_free(m);
}

/* ---- rules ---- */

Test(placement, bad_pg_or_pool_is_einval)
{
	struct osdmap *m = equal_map(4, 1);
	struct osdmap_pool p = make_pool(1, 8, 3, POOL_FD_HOST);
	int32_t out[OSDMAP_SIZE_MAX], primary;

	cr_expect_eq(placement_raw(m, &p, 8, out), -EINVAL);
	cr_expect_eq(out[0], -1);
	cr_expect_eq(placement_acting(m, &p, 8, out, &primary), -EINVAL);
	cr_expect_eq(primary, -1);
	p.size = 0;
	cr_expect_eq(placement_raw(m, &p, 0, out), -EINVAL);
	p.size = OSDMAP_SIZE_MAX + 1;
	cr_expect_eq(placement_raw(m, &p, 0, out), -EINVAL);
	p.size = 3;
	p.failure_domain = 7;
	cr_expect_eq(placement_raw(m, &p, 0, out), -EINVAL);
	osdmap_free(m);
}

Test(placement, empty_map_fills_nothing)
{
	struct osdmap *m = osdmap_new(NULL);
	struct osdmap_pool p = make_pool(1, 8, 3, POOL_FD_HOST);
	int32_t out[OSDMAP_SIZE_MAX], primary;

	cr_expect_eq(placement_raw(m, &p, 0, out), 0);
	cr_expect_eq(out[0], -1);
	cr_expect_eq(placement_acting(m, &p, 0, out, &primary), 0);
	cr_expect_eq(primary, -1);
	osdmap_free(m);
}

Test(placement, fd_host_puts_replicas_on_distinct_hosts)
{
	struct osdmap *m = equal_map(100, 5);
	struct osdmap_pool p = make_pool(1, 4096, 3, POOL_FD_HOST);
	int32_t *sets = all_raw(m, &p);
	uint32_t pg, i, j;

	for (pg = 0; pg < p.pg_num; pg++) {
		const int32_t *s = sets + pg * OSDMAP_SIZE_MAX;

		for (i = 0; i < 3; i++) {
			cr_assert_geq(s[i], 0, "pg %u slot %u empty", pg, i);
			for (j = 0; j < i; j++)
				cr_assert_neq(s[i] / 5, s[j] / 5, "pg %u: osd.%d and osd.%d share a host",
					      pg, s[i], s[j]);
		}
	}
	free(sets);
	osdmap_free(m);
}

Test(placement, fd_osd_puts_replicas_on_distinct_osds)
{
	struct osdmap *m = equal_map(12, 12);	/* all on one host */
	struct osdmap_pool p = make_pool(1, 4096, 3, POOL_FD_OSD);
	int32_t *sets = all_raw(m, &p);
	uint32_t pg, i, j;

	for (pg = 0; pg < p.pg_num; pg++) {
		const int32_t *s = sets + pg * OSDMAP_SIZE_MAX;

		for (i = 0; i < 3; i++) {
			cr_assert_geq(s[i], 0, "pg %u slot %u empty", pg, i);
			for (j = 0; j < i; j++)
				cr_assert_neq(s[i], s[j], "pg %u: osd.%d twice", pg, s[i]);
		}
	}
	free(sets);
	osdmap_free(m);
}

Test(placement, fd_host_is_never_relaxed)
{
	struct osdmap *m = equal_map(6, 3);	/* 2 hosts */
	struct osdmap_pool p = make_pool(1, 256, 3, POOL_FD_HOST);
	struct placement_ctx *c = placement_ctx_new(m);
	int32_t out[OSDMAP_SIZE_MAX];
	uint32_t pg;

	cr_assert_not_null(c);
	for (pg = 0; pg < p.pg_num; pg++) {
		cr_assert_eq(placement_ctx_raw(c, &p, pg, out), 2, "pg %u", pg);
		cr_assert_geq(out[0], 0);
		cr_assert_geq(out[1], 0);
		cr_assert_eq(out[2], -1);
		cr_assert_neq(out[0] / 3, out[1] / 3, "pg %u on one host", pg);
	}
	placement_ctx_free(c);

	/* A single host gives one replica; fd osd on it gives three. */
	osdmap_free(m);
	m = equal_map(6, 6);
	cr_expect_eq(placement_raw(m, &p, 0, out), 1);
	p.failure_domain = POOL_FD_OSD;
	cr_expect_eq(placement_raw(m, &p, 0, out), 3);
	osdmap_free(m);
}

Test(placement, only_existing_in_weighted_osds_are_chosen)
{
	struct osdmap *m = equal_map(20, 2);
	struct osdmap_pool p = make_pool(1, 2048, 3, POOL_FD_HOST);
	uint32_t *cnt;

	m->osds[3].reweight = 0;		/* out */
	m->osds[4].weight = 0;			/* no capacity */
	m->osds[5].state = 0;			/* unused id */
	m->osds[6].state = OSD_ST_UP;		/* not EXISTS */
	m->osds[7].state = OSD_ST_EXISTS;	/* down but in: chosen */
	cnt = count_per_osd(m, &p);
	cr_expect_eq(cnt[3], 0);
	cr_expect_eq(cnt[4], 0);
	cr_expect_eq(cnt[5], 0);
	cr_expect_eq(cnt[6], 0);
	cr_expect_gt(cnt[7], 0);
	free(cnt);
	osdmap_free(m);
}

/* ---- distribution ---- */

Test(placement, shares_follow_weights_within_15_percent)
{
	struct osdmap *m = equal_map(100, 5);
	struct osdmap_pool p = make_pool(1, 32768, 3, POOL_FD_HOST);
	uint32_t *cnt = count_per_osd(m, &p);
	double want = 32768.0 * 3 / 100;
	uint32_t i;

	for (i = 0; i < 100; i++)
		cr_expect(cnt[i] >= 0.85 * want && cnt[i] <= 1.15 * want,
			  "osd.%u has %u replicas, want %.0f +-15%%", i, cnt[i], want);
	free(cnt);
	osdmap_free(m);
}

Test(placement, spread_is_no_wider_than_binomial)
{
	struct osdmap *m = equal_map(100, 5);
	struct osdmap_pool p = make_pool(1, 4096, 3, POOL_FD_HOST);
	uint32_t *cnt = count_per_osd(m, &p);
	double q = 3.0 / 100, mean = 4096 * q, var = 0, bvar;
	uint32_t i;

	/* sd <= 1.2 * binomial sd, squared (no libm) */
	for (i = 0; i < 100; i++)
		var += (cnt[i] - mean) * (cnt[i] - mean);
	var /= 99;
	bvar = 4096 * q * (1 - q);
	cr_expect_leq(var, 1.44 * bvar, "variance %.1f, binomial %.1f", var, bvar);
	free(cnt);
	osdmap_free(m);
}

Test(placement, double_weight_gets_double_share)
{
	struct osdmap *m = equal_map(100, 5);
	struct osdmap_pool p = make_pool(1, 32768, 3, POOL_FD_HOST);
	uint32_t *cnt;
	double light = 0, ratio;
	uint32_t i;

	m->osds[7].weight = 2 * OSD_WEIGHT_ONE;
	cnt = count_per_osd(m, &p);
	for (i = 0; i < 100; i++)
		if (i != 7)
			light += cnt[i];
	light /= 99;
	ratio = cnt[7] / light;
	cr_expect(ratio > 1.8 && ratio < 2.2, "osd.7 weighs 2 and gets %.3fx", ratio);
	free(cnt);
	osdmap_free(m);
}

Test(placement, half_reweight_gets_half_share)
{
	struct osdmap *m = equal_map(20, 1);
	struct osdmap_pool p = make_pool(1, 8192, 3, POOL_FD_OSD);
	uint32_t *cnt;
	double rest = 0, ratio;
	uint32_t i;

	m->osds[4].reweight = OSD_WEIGHT_ONE / 2;
	cnt = count_per_osd(m, &p);
	for (i = 0; i < 20; i++)
		if (i != 4)
			rest += cnt[i];
	rest /= 19;
	ratio = cnt[4] / rest;
	cr_expect(ratio > 0.4 && ratio < 0.6, "osd.4 has reweight 0.5 and gets %.3fx", ratio);
	free(cnt);
	osdmap_free(m);
}

/* ---- stability ---- */

/* Replica slots whose OSD differs, out of pg_num * size. */
static double moved_slots(const int32_t *a, const int32_t *b, const struct osdmap_pool *p)
{
	uint32_t pg, s, moved = 0;

	for (pg = 0; pg < p->pg_num; pg++)
		for (s = 0; s < p->size; s++)
			moved += a[pg * OSDMAP_SIZE_MAX + s] != b[pg * OSDMAP_SIZE_MAX + s];
	return (double)moved / (p->pg_num * p->size);
}

Test(placement, adding_an_osd_moves_about_its_share)
{
	struct osdmap *m = equal_map(10, 1);
	struct osdmap_pool p = make_pool(1, 4096, 3, POOL_FD_OSD);
	int32_t *before = all_raw(m, &p), *after;
	double moved;
	uint32_t pg;

	add_osd(m, 10, "host10", OSD_WEIGHT_ONE, OSD_WEIGHT_ONE);
	after = all_raw(m, &p);
	moved = moved_slots(before, after, &p);
	/* Its share is 1/11 = 9.1%. */
	cr_expect_leq(moved, 0.15, "%.2f%% of replica slots moved", 100 * moved);
	cr_expect_geq(moved, 0.08, "%.2f%% of replica slots moved", 100 * moved);
	/* Every PG that changed now holds the new OSD. */
	for (pg = 0; pg < p.pg_num; pg++)
		if (memcmp(before + pg * OSDMAP_SIZE_MAX, after + pg * OSDMAP_SIZE_MAX,
			   OSDMAP_SIZE_MAX * sizeof(int32_t)))
			cr_expect(set_has(after + pg * OSDMAP_SIZE_MAX, 3, 10), "pg %u", pg);
	free(before);
	free(after);
	osdmap_free(m);
}

Test(placement, adding_a_host_moves_about_its_share)
{
	struct osdmap *m = equal_map(50, 5);
	struct osdmap_pool p = make_pool(1, 4096, 3, POOL_FD_HOST);
	int32_t *before = all_raw(m, &p), *after;
	double moved;
	uint32_t i;

	for (i = 50; i < 55; i++)
		add_osd(m, i, "host10", OSD_WEIGHT_ONE, OSD_WEIGHT_ONE);
	after = all_raw(m, &p);
	moved = moved_slots(before, after, &p);
	cr_expect_leq(moved, 0.15, "%.2f%% of replica slots moved (share 9.1%%)", 100 * moved);
	free(before);
	free(after);
	osdmap_free(m);
}

/* Marks osd out (or reweights it) and checks that only PGs holding it
 * changed, and that they no longer hold it when it is out. */
static void check_only_its_pgs_move(uint8_t fd, uint32_t osd, uint32_t reweight)
{
	struct osdmap *m = equal_map(100, 5);
	struct osdmap_pool p = make_pool(4, 4096, 3, fd);
	int32_t *before = all_raw(m, &p), *after;
	uint32_t pg, changed = 0;

	m->osds[osd].reweight = reweight;
	after = all_raw(m, &p);
	for (pg = 0; pg < p.pg_num; pg++) {
		const int32_t *a = before + pg * OSDMAP_SIZE_MAX, *b = after + pg * OSDMAP_SIZE_MAX;
		bool same = memcmp(a, b, OSDMAP_SIZE_MAX * sizeof(int32_t)) == 0;

		if (!set_has(a, 3, (int32_t)osd))
			cr_assert(same, "pg %u moved without holding osd.%u", pg, osd);
		if (!same)
			changed++;
		if (!reweight)
			cr_assert(!set_has(b, 3, (int32_t)osd), "pg %u still on out osd", pg);
	}
	cr_expect_gt(changed, 0);
	free(before);
	free(after);
	osdmap_free(m);
}

Test(placement, marking_out_moves_only_its_pgs_fd_host)
{
	check_only_its_pgs_move(POOL_FD_HOST, 42, 0);
}

Test(placement, marking_out_moves_only_its_pgs_fd_osd)
{
	check_only_its_pgs_move(POOL_FD_OSD, 42, 0);
}

Test(placement, lowering_reweight_moves_only_its_pgs)
{
	check_only_its_pgs_move(POOL_FD_HOST, 17, OSD_WEIGHT_ONE / 3);
}

Test(placement, marking_down_keeps_the_raw_set)
{
	struct osdmap *m = equal_map(30, 3);
	struct osdmap_pool p = make_pool(1, 1024, 3, POOL_FD_HOST);
	int32_t *before = all_raw(m, &p), *after;

	m->osds[5].state &= ~OSD_ST_UP;
	after = all_raw(m, &p);
	cr_expect_eq(memcmp(before, after, p.pg_num * OSDMAP_SIZE_MAX * sizeof(int32_t)), 0);
	free(before);
	free(after);
	osdmap_free(m);
}

/* ---- acting sets ---- */

static uint32_t pg_holding(const struct osdmap *m, const struct osdmap_pool *p,
			   int32_t osd, uint32_t slot)
{
	int32_t out[OSDMAP_SIZE_MAX];
	uint32_t pg;

	for (pg = 0; pg < p->pg_num; pg++) {
		cr_assert_geq(placement_raw(m, p, pg, out), 0);
		if (out[slot] == osd)
			return pg;
	}
	cr_assert_fail("no pg has osd.%d in slot %u", osd, slot);
	return 0;
}

Test(placement, acting_drops_down_osds_and_promotes_a_primary)
{
	struct osdmap *m = equal_map(12, 3);
	struct osdmap_pool p = make_pool(1, 256, 3, POOL_FD_HOST);
	int32_t raw[OSDMAP_SIZE_MAX], act[OSDMAP_SIZE_MAX], primary;
	uint32_t pg = pg_holding(m, &p, 4, 0);

	cr_assert_eq(placement_raw(m, &p, pg, raw), 3);
	cr_assert_eq(placement_acting(m, &p, pg, act, &primary), 3);
	cr_expect_eq(memcmp(raw, act, sizeof(raw)), 0);
	cr_expect_eq(primary, 4);

	m->osds[4].state &= ~OSD_ST_UP;
	cr_assert_eq(placement_acting(m, &p, pg, act, &primary), 2);
	cr_expect_eq(act[0], raw[1]);
	cr_expect_eq(act[1], raw[2]);
	cr_expect_eq(act[2], -1);
	cr_expect_eq(primary, raw[1]);

	m->osds[raw[1]].state &= ~OSD_ST_UP;
	m->osds[raw[2]].state &= ~OSD_ST_UP;
	cr_expect_eq(placement_acting(m, &p, pg, act, &primary), 0);
	cr_expect_eq(primary, -1);
	osdmap_free(m);
}

Test(placement, pg_temp_overrides_the_acting_set)
{
	struct osdmap *m = equal_map(12, 3);
	struct osdmap_pool p = make_pool(1, 256, 3, POOL_FD_HOST);
	struct osdmap_pg_temp t = { .pool = 1, .pg = 9, .n = 3, .osds = { 11, 0, 5 } };
	int32_t raw[OSDMAP_SIZE_MAX], act[OSDMAP_SIZE_MAX], primary;

	m->pg_temp = malloc(sizeof(t));
	cr_assert_not_null(m->pg_temp);
	m->pg_temp[0] = t;
	m->npg_temp = 1;
	cr_assert_eq(placement_acting(m, &p, 9, act, &primary), 3);
	cr_expect_eq(act[0], 11);
	cr_expect_eq(act[1], 0);
	cr_expect_eq(act[2], 5);
	cr_expect_eq(primary, 11);

	/* the raw set is not affected, nor another pool's pg 9 */
	cr_assert_eq(placement_raw(m, &p, 9, raw), 3);
	p.id = 2;
	cr_assert_eq(placement_raw(m, &p, 9, raw), 3);
	cr_assert_eq(placement_acting(m, &p, 9, act, &primary), 3);
	cr_expect_eq(memcmp(raw, act, sizeof(raw)), 0);
	p.id = 1;

	/* down members of pg_temp are left out */
	m->osds[11].state &= ~OSD_ST_UP;
	cr_assert_eq(placement_acting(m, &p, 9, act, &primary), 2);
	cr_expect_eq(act[0], 0);
	cr_expect_eq(primary, 0);

	/* with none up, the up set serves */
	m->osds[0].state &= ~OSD_ST_UP;
	m->osds[5].state &= ~OSD_ST_UP;
	cr_assert_eq(placement_raw(m, &p, 9, raw), 3);
	cr_assert_geq(placement_acting(m, &p, 9, act, &primary), 1);
	cr_expect_eq(primary, act[0]);
	cr_expect(set_has(raw, 3, act[0]));
	osdmap_free(m);
}
