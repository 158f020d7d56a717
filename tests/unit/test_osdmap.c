/*
 * test_osdmap.c - lib/osdmap.c: full map and incremental round trips,
 * applying incrementals (and refusing the wrong epoch or bad records
 * without changing the map), lookups, every decoder refusal, fields
 * appended by a newer writer, and decoding randomly corrupted maps.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "osdmap.h"

static const uint8_t test_fsid[16] = {
	0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
};

/* ---- helpers ---- */

static struct osdmap_osd make_osd(uint32_t id, const char *host)
{
	struct osdmap_osd o;

	memset(&o, 0, sizeof(o));
	o.id = id;
	o.state = OSD_ST_EXISTS | OSD_ST_UP;
	o.uuid[0] = (uint8_t)id;
	o.uuid[15] = 0xa5;
	snprintf(o.host, sizeof(o.host), "%s", host);
	snprintf(o.addr, sizeof(o.addr), "10.0.0.%u:6800", id);
	o.weight = OSD_WEIGHT_ONE;
	o.reweight = OSD_WEIGHT_ONE;
	o.up_from = 1;
	return o;
}

static struct osdmap_pool make_pool(uint32_t id, const char *name)
{
	struct osdmap_pool p;

	memset(&p, 0, sizeof(p));
	p.id = id;
	snprintf(p.name, sizeof(p.name), "%s", name);
	p.size = 3;
	p.min_size = 2;
	p.failure_domain = POOL_FD_HOST;
	p.pg_num = 64;
	p.flags = POOL_F_COMPRESS;
	p.created = 1;
	return p;
}

/* Sets slot o->id of m directly (growing osds[]). */
static void put_osd(struct osdmap *m, const struct osdmap_osd *o)
{
	if (o->id >= m->max_osd) {
		m->osds = realloc(m->osds, (o->id + 1) * sizeof(*m->osds));
		cr_assert_not_null(m->osds);
		memset(m->osds + m->max_osd, 0, (o->id + 1 - m->max_osd) * sizeof(*m->osds));
		for (uint32_t i = m->max_osd; i <= o->id; i++)
			m->osds[i].id = i;
		m->max_osd = o->id + 1;
	}
	m->osds[o->id] = *o;
}

static void put_pool(struct osdmap *m, const struct osdmap_pool *p)
{
	m->pools = realloc(m->pools, (m->npools + 1) * sizeof(*m->pools));
	cr_assert_not_null(m->pools);
	m->pools[m->npools++] = *p;
}

/* A map with every kind of content: OSDs with a gap (id 3 unused), two
 * pools, pg_temp and blocklist entries. */
static struct osdmap *rich_map(void)
{
	struct osdmap *m = osdmap_new(test_fsid);
	struct osdmap_pool p;
	struct osdmap_osd o;
	uint32_t i;

	cr_assert_not_null(m);
	m->epoch = 7;
	m->created_ms = 1700000000000ull;
	m->modified_ms = 1700000123456ull;
	m->flags = OSDMAP_F_NOOUT;
	for (i = 0; i < 6; i++) {
		char host[16];

		if (i == 3)
			continue;
		snprintf(host, sizeof(host), "node%u", i / 2);
		o = make_osd(i, host);
		if (i == 4) {
			o.state = OSD_ST_EXISTS | OSD_ST_NEARFULL;
			o.down_at = 6;
			o.down_stamp_ms = 1700000100000ull;
			o.reweight = 0x8000;
			memset(o.addr, 0, sizeof(o.addr));
		}
		put_osd(m, &o);
	}
	p = make_pool(1, "rbd");
	put_pool(m, &p);
	p = make_pool(5, "images");
	p.failure_domain = POOL_FD_OSD;
	p.size = 2;
	p.min_size = 1;
	p.pg_num = 12;
	put_pool(m, &p);
	m->pool_next_id = 6;
	m->pg_temp = calloc(2, sizeof(*m->pg_temp));
	cr_assert_not_null(m->pg_temp);
	m->pg_temp[0] = (struct osdmap_pg_temp){ .pool = 1, .pg = 3, .n = 2, .osds = { 2, 0 } };
	m->pg_temp[1] = (struct osdmap_pg_temp){ .pool = 5, .pg = 0, .n = 3, .osds = { 5, 1, 2 } };
	m->npg_temp = 2;
	m->blocklist = calloc(2, sizeof(*m->blocklist));
	cr_assert_not_null(m->blocklist);
	m->blocklist[0] = (struct osdmap_blocklist){ .client = 42, .until_ms = 5000 };
	m->blocklist[1] = (struct osdmap_blocklist){ .client = 99, .until_ms = 9000 };
	m->nblocklist = 2;
	return m;
}

/* Encodes m into an exact-size heap buffer (so ASan sees overreads). */
static uint8_t *encode_map(const struct osdmap *m, size_t *len)
{
	struct enc e;
	uint8_t *buf;

	enc_init(&e);
	osdmap_encode(m, &e);
	cr_assert_eq(e.err, 0);
	buf = enc_take(&e, len);
	cr_assert_not_null(buf);
	return buf;
}

static int decode_buf(const void *buf, size_t len, struct osdmap **out)
{
	struct dec d;
	int ret;

	dec_init(&d, buf, len);
	ret = osdmap_decode(&d, out);
	if (!ret)
		ret = dec_finish(&d);
	return ret;
}

/* Encodes m, decodes it, and returns the decoder's result. */
static int round_trip(const struct osdmap *m, struct osdmap **out)
{
	size_t len;
	uint8_t *buf = encode_map(m, &len);
	int ret = decode_buf(buf, len, out);

	free(buf);
	return ret;
}

static int decode_refusal(const struct osdmap *m)
{
	struct osdmap *out = (struct osdmap *)1;
	int ret = round_trip(m, &out);

	cr_expect_null(out);
	osdmap_free(out);
	return ret;
}

/* ---- new, free, clone ---- */

Test(osdmap, new_map_has_defaults)
{
	struct osdmap *m = osdmap_new(test_fsid);

	cr_assert_not_null(m);
	cr_expect_eq(memcmp(m->fsid, test_fsid, 16), 0);
	cr_expect_eq(m->epoch, 0);
	cr_expect_eq(m->nearfull_ratio, 8500);
	cr_expect_eq(m->backfillfull_ratio, 9000);
	cr_expect_eq(m->full_ratio, 9500);
	cr_expect_eq(m->max_osd, 0);
	cr_expect_eq(m->npools, 0);
	cr_expect_eq(m->pool_next_id, 1);
	osdmap_free(m);

	m = osdmap_new(NULL);
	cr_assert_not_null(m);
	cr_expect_eq(m->fsid[0] | m->fsid[15], 0);
	osdmap_free(m);
	osdmap_free(NULL);
}

Test(osdmap, clone_is_equal_and_independent)
{
	struct osdmap *m = rich_map(), *c = osdmap_clone(m);

	cr_assert_not_null(c);
	cr_expect(osdmap_equal(m, c));
	cr_expect_neq(c->osds, m->osds);
	c->osds[0].weight = 2 * OSD_WEIGHT_ONE;
	c->pools[0].pg_num = 128;
	cr_expect_eq(m->osds[0].weight, OSD_WEIGHT_ONE);
	cr_expect_eq(m->pools[0].pg_num, 64);
	cr_expect_not(osdmap_equal(m, c));
	osdmap_free(c);

	osdmap_free(m);
	m = osdmap_new(NULL);
	c = osdmap_clone(m);
	cr_assert_not_null(c);
	cr_expect(osdmap_equal(m, c));
	osdmap_free(c);
	osdmap_free(m);
}

/* ---- full map encoding ---- */

Test(osdmap, full_map_round_trips)
{
	struct osdmap *m = rich_map(), *out = NULL;

	cr_assert_eq(round_trip(m, &out), 0);
	cr_assert_not_null(out);
	cr_expect(osdmap_equal(m, out));
	cr_expect_eq(memcmp(out->fsid, test_fsid, 16), 0);
	cr_expect_eq(out->epoch, 7);
	cr_expect_eq(out->created_ms, 1700000000000ull);
	cr_expect_eq(out->flags, OSDMAP_F_NOOUT);
	cr_expect_eq(out->max_osd, 6);
	cr_expect_eq(out->osds[3].state, 0);
	cr_expect_eq(out->osds[3].id, 3);
	cr_expect_eq(memcmp(&out->osds[4], &m->osds[4], sizeof(out->osds[4])), 0);
	cr_expect_str_eq(out->osds[5].host, "node2");
	cr_expect_str_eq(out->osds[5].addr, "10.0.0.5:6800");
	cr_expect_eq(out->npools, 2);
	cr_expect_eq(memcmp(out->pools, m->pools, 2 * sizeof(*m->pools)), 0);
	cr_expect_eq(out->pool_next_id, 6);
	cr_expect_eq(out->npg_temp, 2);
	cr_expect_eq(memcmp(out->pg_temp, m->pg_temp, 2 * sizeof(*m->pg_temp)), 0);
	cr_expect_eq(out->nblocklist, 2);
	cr_expect_eq(out->blocklist[1].until_ms, 9000);
	osdmap_free(out);
	osdmap_free(m);
}

Test(osdmap, empty_map_round_trips)
{
	struct osdmap *m = osdmap_new(test_fsid), *out = NULL;

	cr_assert_eq(round_trip(m, &out), 0);
	cr_expect(osdmap_equal(m, out));
	cr_expect_eq(out->max_osd, 0);
	osdmap_free(out);
	osdmap_free(m);
}

Test(osdmap, equal_compares_content)
{
	struct osdmap *a = rich_map(), *b = rich_map();

	cr_expect(osdmap_equal(a, b));
	b->osds[1].state &= ~OSD_ST_UP;
	cr_expect_not(osdmap_equal(a, b), "same epoch, different content");
	osdmap_free(b);
	b = rich_map();
	b->blocklist[0].until_ms++;
	cr_expect_not(osdmap_equal(a, b));
	osdmap_free(b);
	osdmap_free(a);
}

Test(osdmap, every_truncation_is_refused)
{
	struct osdmap *m = rich_map(), *out;
	size_t len, cut;
	uint8_t *buf = encode_map(m, &len);

	for (cut = 0; cut < len; cut++) {
		uint8_t *part = malloc(cut + 1);
		struct dec d;

		cr_assert_not_null(part);
		memcpy(part, buf, cut);
		dec_init(&d, part, cut);
		cr_assert_eq(osdmap_decode(&d, &out), -EBADMSG, "cut at %zu", cut);
		cr_assert_null(out);
		free(part);
	}
	free(buf);
	osdmap_free(m);
}

Test(osdmap, bad_pools_are_refused)
{
	struct osdmap *m;

	m = rich_map();
	m->pools[0].size = 0;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "size 0");
	osdmap_free(m);

	m = rich_map();
	m->pools[0].size = OSDMAP_SIZE_MAX + 1;
	m->pools[0].min_size = 1;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "size over the max");
	osdmap_free(m);

	m = rich_map();
	m->pools[0].min_size = 4;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "min_size > size");
	osdmap_free(m);

	m = rich_map();
	m->pools[0].min_size = 0;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "min_size 0");
	osdmap_free(m);

	m = rich_map();
	m->pools[0].pg_num = 0;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "pg_num 0");
	osdmap_free(m);

	m = rich_map();
	m->pools[0].pg_num = OSDMAP_PG_MAX + 1;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "pg_num over the max");
	osdmap_free(m);

	m = rich_map();
	m->pools[0].failure_domain = 2;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "unknown failure domain");
	osdmap_free(m);

	m = rich_map();
	m->pools[0].name[0] = '\0';
	cr_expect_eq(decode_refusal(m), -EBADMSG, "empty name");
	osdmap_free(m);

	m = rich_map();
	strcpy(m->pools[1].name, "rbd");
	cr_expect_eq(decode_refusal(m), -EBADMSG, "duplicate name");
	osdmap_free(m);

	m = rich_map();
	m->pools[1].id = 1;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "duplicate id");
	osdmap_free(m);

	m = rich_map();
	m->pools[1].id = 0;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "ids out of order");
	osdmap_free(m);
}

Test(osdmap, bad_osds_are_refused)
{
	struct osdmap *m;

	m = rich_map();
	m->osds[1].reweight = OSD_WEIGHT_ONE + 1;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "reweight over 1");
	osdmap_free(m);

	m = rich_map();
	m->nearfull_ratio = OSDMAP_RATIO_MAX + 1;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "ratio over 100%%");
	osdmap_free(m);
}

Test(osdmap, bad_lists_are_refused)
{
	struct osdmap *m;

	m = rich_map();
	m->pg_temp[0].n = 0;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "empty pg_temp");
	osdmap_free(m);

	m = rich_map();
	m->pg_temp[0].osds[1] = -1;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "negative id in pg_temp");
	osdmap_free(m);

	m = rich_map();
	m->pg_temp[0].osds[1] = 2;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "osd twice in pg_temp");
	osdmap_free(m);

	m = rich_map();
	m->pg_temp[1].pool = 1;
	m->pg_temp[1].pg = 3;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "duplicate pg_temp");
	osdmap_free(m);

	m = rich_map();
	m->blocklist[1].client = 1;
	cr_expect_eq(decode_refusal(m), -EBADMSG, "blocklist out of order");
	osdmap_free(m);
}

/*
 * A map written by hand (format v1), with one OSD record whose host
 * bytes, extra trailing bytes and compat are chosen by the test, and
 * extra bytes at the end of the map section (a newer writer's fields).
 */
struct hand {
	uint32_t max_osd;
	uint32_t osd_id;
	const char *host;
	size_t host_len;
	size_t osd_extra;
	uint8_t osd_compat;
	size_t map_extra;
	uint8_t map_compat;
};

static uint8_t *hand_map(const struct hand *h, size_t *len)
{
	struct enc e;
	size_t outer, rec, i;
	uint8_t *buf;

	enc_init(&e);
	outer = enc_begin(&e, h->map_compat > 1 ? h->map_compat : 1, h->map_compat);
	enc_raw(&e, test_fsid, 16);
	enc_u64(&e, 3);				/* epoch */
	enc_u64(&e, 0);
	enc_u64(&e, 0);
	enc_u32(&e, 0);				/* flags */
	enc_u32(&e, 8500);
	enc_u32(&e, 9000);
	enc_u32(&e, 9500);
	enc_u32(&e, h->max_osd);
	enc_u32(&e, 1);				/* one OSD record */
	rec = enc_begin(&e, h->osd_compat > 1 ? h->osd_compat : 1, h->osd_compat);
	enc_u32(&e, h->osd_id);
	enc_u32(&e, OSD_ST_EXISTS);
	enc_raw(&e, test_fsid, 16);
	enc_blob(&e, h->host, h->host_len);
	enc_str(&e, "10.1.1.1:6800");
	enc_u32(&e, OSD_WEIGHT_ONE);
	enc_u32(&e, OSD_WEIGHT_ONE);
	enc_u64(&e, 1);
	enc_u64(&e, 0);
	enc_u64(&e, 0);
	for (i = 0; i < h->osd_extra; i++)
		enc_u8(&e, 0xee);
	enc_end(&e, rec);
	enc_u32(&e, 1);				/* pool_next_id */
	enc_u32(&e, 0);				/* pools */
	enc_u32(&e, 0);				/* pg_temp */
	enc_u32(&e, 0);				/* blocklist */
	for (i = 0; i < h->map_extra; i++)
		enc_u8(&e, 0xdd);
	enc_end(&e, outer);
	cr_assert_eq(e.err, 0);
	buf = enc_take(&e, len);
	cr_assert_not_null(buf);
	return buf;
}

static int decode_hand(const struct hand *h, struct osdmap **out)
{
	size_t len;
	uint8_t *buf = hand_map(h, &len);
	int ret = decode_buf(buf, len, out);

	free(buf);
	return ret;
}

static const struct hand good_hand = {
	.max_osd = 4, .osd_id = 2, .host = "rack1-node7", .host_len = 11,
	.osd_compat = 1, .map_compat = 1,
};

Test(osdmap, hand_written_v1_map_decodes)
{
	struct osdmap *out = NULL;

	cr_assert_eq(decode_hand(&good_hand, &out), 0);
	cr_expect_eq(out->epoch, 3);
	cr_expect_eq(out->max_osd, 4);
	cr_expect_str_eq(out->osds[2].host, "rack1-node7");
	cr_expect_eq(out->osds[2].state, OSD_ST_EXISTS);
	osdmap_free(out);
}

Test(osdmap, fields_appended_by_a_newer_writer_are_skipped)
{
	struct hand h = good_hand;
	struct osdmap *base = NULL, *out = NULL;

	cr_assert_eq(decode_hand(&good_hand, &base), 0);
	h.osd_extra = 13;
	h.map_extra = 29;
	cr_assert_eq(decode_hand(&h, &out), 0);
	cr_expect(osdmap_equal(base, out));
	osdmap_free(out);
	osdmap_free(base);
}

Test(osdmap, an_incompatible_newer_format_is_refused)
{
	struct hand h = good_hand;
	struct osdmap *out = NULL;

	h.map_compat = 2;
	cr_expect_eq(decode_hand(&h, &out), -EPROTONOSUPPORT);
	cr_expect_null(out);
	h = good_hand;
	h.osd_compat = 2;
	cr_expect_eq(decode_hand(&h, &out), -EPROTONOSUPPORT);
	cr_expect_null(out);
}

Test(osdmap, bad_strings_and_ids_are_refused)
{
	char longname[OSDMAP_HOST_MAX + 2];
	struct hand h = good_hand;
	struct osdmap *out = NULL;

	memset(longname, 'x', sizeof(longname));
	h.host = longname;
	h.host_len = OSDMAP_HOST_MAX;
	cr_expect_eq(decode_hand(&h, &out), 0, "a name of the max length fits");
	osdmap_free(out);
	h.host_len = OSDMAP_HOST_MAX + 1;
	cr_expect_eq(decode_hand(&h, &out), -E2BIG, "name over the max");
	cr_expect_null(out);

	h = good_hand;
	h.host = "node\0x";
	h.host_len = 6;
	cr_expect_eq(decode_hand(&h, &out), -EBADMSG, "embedded NUL");

	h = good_hand;
	h.osd_id = 4;
	cr_expect_eq(decode_hand(&h, &out), -EBADMSG, "id at max_osd");

	h = good_hand;
	h.max_osd = OSDMAP_OSD_MAX + 1;
	cr_expect_eq(decode_hand(&h, &out), -E2BIG, "max_osd over the cap");

	h = good_hand;
	h.max_osd = 0;
	cr_expect_eq(decode_hand(&h, &out), -E2BIG, "a record with max_osd 0");
	cr_expect_null(out);
}

Test(osdmap, osd_ids_must_ascend)
{
	struct osdmap *m = rich_map(), *out = NULL;
	size_t len;
	uint8_t *buf = encode_map(m, &len);
	/* Swap the first two OSD records (ids 0 and 1, same length). */
	size_t off = 6 + 16 + 8 * 3 + 4 * 4 + 4 + 4;
	size_t rec = 6 + ((size_t)buf[off + 2] | (size_t)buf[off + 3] << 8);
	uint8_t *tmp = malloc(rec);

	cr_assert_not_null(tmp);
	memcpy(tmp, buf + off, rec);
	memmove(buf + off, buf + off + rec, rec);
	memcpy(buf + off + rec, tmp, rec);
	cr_expect_eq(decode_buf(buf, len, &out), -EBADMSG);
	cr_expect_null(out);
	/* and a record repeated */
	memcpy(buf + off, buf + off + rec, rec);
	cr_expect_eq(decode_buf(buf, len, &out), -EBADMSG);
	free(tmp);
	free(buf);
	osdmap_free(m);
}

/* ---- corruption ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	/* xorshift64*: fixed seed, so a failure reproduces */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

/* A damaged copy of buf in a new exact-size buffer. */
static uint8_t *mutate(const uint8_t *buf, size_t len, size_t *out_len)
{
	size_t n = len, i, k;
	uint8_t *m = malloc(len + 64);

	cr_assert_not_null(m);
	memcpy(m, buf, len);
	k = 1 + rnd() % 4;
	for (i = 0; i < k; i++) {
		size_t at = n ? rnd() % n : 0;

		switch (rnd() % 6) {
		case 0:		/* flip a bit */
			if (n)
				m[at] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1:		/* a random byte */
			if (n)
				m[at] = (uint8_t)rnd();
			break;
		case 2:		/* an absurd u32 */
			if (at + 4 <= n) {
				uint32_t v = (rnd() & 1) ? 0xffffffffu : rnd() % 70000;

				memcpy(m + at, &v, 4);
			}
			break;
		case 3:		/* truncate */
			n = at;
			break;
		case 4:		/* insert bytes */
			if (n + 8 <= len + 64) {
				memmove(m + at + 8, m + at, n - at);
				memset(m + at, rnd() & 0xff, 8);
				n += 8;
			}
			break;
		default:	/* delete bytes */
			if (at + 4 <= n) {
				memmove(m + at, m + at + 4, n - at - 4);
				n -= 4;
			}
			break;
		}
	}
	*out_len = n;
	{
		uint8_t *exact = malloc(n ? n : 1);

		cr_assert_not_null(exact);
		memcpy(exact, m, n);
		free(m);
		return exact;
	}
}

Test(osdmap, corrupted_maps_never_crash)
{
	struct osdmap *m = rich_map();
	size_t len, mlen;
	uint8_t *buf = encode_map(m, &len);
	unsigned int i, decoded = 0;

	for (i = 0; i < 10000; i++) {
		uint8_t *bad = mutate(buf, len, &mlen);
		struct osdmap *out = NULL;
		struct dec d;

		dec_init(&d, bad, mlen);
		if (osdmap_decode(&d, &out) == 0) {
			struct osdmap *again = NULL;

			/* What decodes must be a valid map: it round trips. */
			decoded++;
			cr_assert_not_null(out);
			cr_assert_eq(round_trip(out, &again), 0, "iteration %u", i);
			cr_assert(osdmap_equal(out, again));
			osdmap_free(again);
			osdmap_free(out);
		} else {
			cr_assert_null(out);
		}
		free(bad);
	}
	cr_expect_gt(decoded, 0, "some mutations (e.g. of a weight) still decode");
	free(buf);
	osdmap_free(m);
}

/* ---- lookups ---- */

Test(osdmap, lookups)
{
	struct osdmap *m = rich_map();

	cr_expect_not_null(osdmap_osd(m, 0));
	cr_expect_eq(osdmap_osd(m, 5)->id, 5);
	cr_expect_null(osdmap_osd(m, 3), "unused slot");
	cr_expect_null(osdmap_osd(m, 6));
	cr_expect_null(osdmap_osd(m, -1));
	cr_expect(osdmap_osd_up(m, 0));
	cr_expect_not(osdmap_osd_up(m, 4));
	cr_expect_not(osdmap_osd_up(m, 3));
	cr_expect_not(osdmap_osd_up(m, 99));
	cr_expect(osdmap_osd_in(m, 4), "reweight 0.5 is in");
	m->osds[4].reweight = 0;
	cr_expect_not(osdmap_osd_in(m, 4));
	cr_expect_not(osdmap_osd_in(m, -7));

	cr_expect_eq(osdmap_pool(m, 5)->pg_num, 12);
	cr_expect_eq(osdmap_pool(m, 1)->pg_num, 64);
	cr_expect_null(osdmap_pool(m, 2));
	cr_expect_null(osdmap_pool(m, 0));
	cr_expect_eq(osdmap_pool_by_name(m, "images")->id, 5);
	cr_expect_null(osdmap_pool_by_name(m, "img"));
	cr_expect_null(osdmap_pool_by_name(m, ""));

	cr_expect(osdmap_blocklisted(m, 42, 4999));
	cr_expect_not(osdmap_blocklisted(m, 42, 5000), "expired");
	cr_expect_not(osdmap_blocklisted(m, 43, 0));
	osdmap_free(m);
}

Test(osdmap, hosts_in_counts_distinct_hosts_with_an_in_osd)
{
	struct osdmap *m = rich_map();

	/* node0: 0,1; node1: 2 (3 unused); node2: 4 (reweight 0.5), 5 */
	cr_expect_eq(osdmap_hosts_in(m), 3);
	m->osds[2].reweight = 0;
	cr_expect_eq(osdmap_hosts_in(m), 2);
	m->osds[2].reweight = OSD_WEIGHT_ONE;
	m->osds[2].state = OSD_ST_UP;		/* not EXISTS */
	cr_expect_eq(osdmap_hosts_in(m), 2);
	m->osds[4].reweight = 0;
	cr_expect_eq(osdmap_hosts_in(m), 2, "osd.5 keeps node2 in");
	m->osds[5].state &= ~OSD_ST_UP;
	cr_expect_eq(osdmap_hosts_in(m), 2, "down but in counts");
	osdmap_free(m);

	m = osdmap_new(NULL);
	cr_expect_eq(osdmap_hosts_in(m), 0);
	osdmap_free(m);
}

/* ---- incrementals ---- */

static uint8_t *encode_inc(const struct osdmap_inc *inc, size_t *len)
{
	struct enc e;
	uint8_t *buf;

	enc_init(&e);
	osdmap_inc_encode(inc, &e);
	cr_assert_eq(e.err, 0);
	buf = enc_take(&e, len);
	cr_assert_not_null(buf);
	return buf;
}

static int decode_inc_buf(const void *buf, size_t len, struct osdmap_inc *inc)
{
	struct dec d;
	int ret;

	dec_init(&d, buf, len);
	ret = osdmap_inc_decode(&d, inc);
	if (!ret)
		ret = dec_finish(&d);
	return ret;
}

/* Epoch 1: six OSDs on three hosts and pool "rbd". */
static void inc_first(struct osdmap_inc *inc)
{
	struct osdmap_pool p = make_pool(1, "rbd");
	uint32_t i;

	osdmap_inc_init(inc, 1);
	inc->modified_ms = 1000;
	for (i = 0; i < 6; i++) {
		char host[16];
		struct osdmap_osd o;

		snprintf(host, sizeof(host), "node%u", i / 2);
		o = make_osd(i, host);
		cr_assert_eq(osdmap_inc_set_osd(inc, &o), 0);
	}
	cr_assert_eq(osdmap_inc_set_pool(inc, &p), 0);
}

/* Epoch 2: osd.3 down and out, osd.5 freed, a new pool, rbd grows, a
 * pg_temp, a blocklist, flags and ratios. */
static void inc_second(struct osdmap_inc *inc)
{
	struct osdmap_pool p = make_pool(4, "images");
	struct osdmap_osd o = make_osd(3, "node1");
	struct osdmap_pg_temp t[2] = {
		{ .pool = 4, .pg = 1, .n = 2, .osds = { 1, 2 } },
		{ .pool = 1, .pg = 7, .n = 1, .osds = { 0 } },
	};
	struct osdmap_blocklist b[2] = {
		{ .client = 77, .until_ms = 50 }, { .client = 12, .until_ms = 60 },
	};

	osdmap_inc_init(inc, 2);
	inc->modified_ms = 2000;
	o.state = OSD_ST_EXISTS;
	o.reweight = 0;
	o.down_at = 2;
	cr_assert_eq(osdmap_inc_set_osd(inc, &o), 0);
	memset(&o, 0, sizeof(o));
	o.id = 5;
	cr_assert_eq(osdmap_inc_set_osd(inc, &o), 0);
	cr_assert_eq(osdmap_inc_set_pool(inc, &p), 0);
	p = make_pool(1, "rbd");
	p.pg_num = 128;
	cr_assert_eq(osdmap_inc_set_pool(inc, &p), 0);
	cr_assert_eq(osdmap_inc_set_pg_temp(inc, t, 2), 0);
	cr_assert_eq(osdmap_inc_set_blocklist(inc, b, 2), 0);
	inc->has_flags = true;
	inc->flags = OSDMAP_F_NOOUT;
	inc->has_ratios = true;
	inc->nearfull_ratio = 8000;
	inc->backfillfull_ratio = 8800;
	inc->full_ratio = 9700;
}

/* The map of epoch 2, built directly. */
static struct osdmap *direct_map(void)
{
	struct osdmap *m = osdmap_new(test_fsid);
	struct osdmap_pool p;
	uint32_t i;

	m->epoch = 2;
	m->modified_ms = 2000;
	m->flags = OSDMAP_F_NOOUT;
	m->nearfull_ratio = 8000;
	m->backfillfull_ratio = 8800;
	m->full_ratio = 9700;
	for (i = 0; i < 6; i++) {
		char host[16];
		struct osdmap_osd o;

		snprintf(host, sizeof(host), "node%u", i / 2);
		o = make_osd(i, host);
		if (i == 3) {
			o.state = OSD_ST_EXISTS;
			o.reweight = 0;
			o.down_at = 2;
		}
		if (i == 5) {
			memset(&o, 0, sizeof(o));
			o.id = 5;
		}
		put_osd(m, &o);
	}
	p = make_pool(1, "rbd");
	p.pg_num = 128;
	put_pool(m, &p);
	p = make_pool(4, "images");
	put_pool(m, &p);
	m->pool_next_id = 5;
	m->pg_temp = calloc(2, sizeof(*m->pg_temp));
	m->pg_temp[0] = (struct osdmap_pg_temp){ .pool = 1, .pg = 7, .n = 1, .osds = { 0 } };
	m->pg_temp[1] = (struct osdmap_pg_temp){ .pool = 4, .pg = 1, .n = 2, .osds = { 1, 2 } };
	m->npg_temp = 2;
	m->blocklist = calloc(2, sizeof(*m->blocklist));
	m->blocklist[0] = (struct osdmap_blocklist){ .client = 12, .until_ms = 60 };
	m->blocklist[1] = (struct osdmap_blocklist){ .client = 77, .until_ms = 50 };
	m->nblocklist = 2;
	return m;
}

Test(osdmap, applying_incrementals_equals_building_directly)
{
	struct osdmap *m = osdmap_new(test_fsid), *want = direct_map();
	struct osdmap_inc inc;

	inc_first(&inc);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	cr_expect_eq(m->epoch, 1);
	cr_expect_eq(m->max_osd, 6);
	cr_expect_eq(m->pool_next_id, 2);
	inc_second(&inc);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	cr_expect(osdmap_equal(m, want));
	cr_expect_eq(m->pg_temp[0].pool, 1, "pg_temp is sorted");
	cr_expect_eq(m->blocklist[0].client, 12, "blocklist is sorted");
	osdmap_free(want);
	osdmap_free(m);
}

Test(osdmap, incrementals_round_trip_and_apply_the_same)
{
	struct osdmap *a = osdmap_new(test_fsid), *b = osdmap_new(test_fsid);
	struct osdmap_inc inc, dec_inc;
	uint8_t *buf, *buf2;
	size_t len, len2;
	int step;

	for (step = 0; step < 2; step++) {
		if (step == 0)
			inc_first(&inc);
		else
			inc_second(&inc);
		buf = encode_inc(&inc, &len);
		cr_assert_eq(decode_inc_buf(buf, len, &dec_inc), 0);
		buf2 = encode_inc(&dec_inc, &len2);
		cr_expect_eq(len, len2);
		cr_expect_eq(memcmp(buf, buf2, len), 0);
		cr_assert_eq(osdmap_apply(a, &inc), 0);
		cr_assert_eq(osdmap_apply(b, &dec_inc), 0);
		cr_expect(osdmap_equal(a, b));
		osdmap_inc_clear(&dec_inc);
		osdmap_inc_clear(&inc);
		free(buf);
		free(buf2);
	}
	osdmap_free(a);
	osdmap_free(b);
}

Test(osdmap, apply_refuses_the_wrong_epoch)
{
	struct osdmap *m = osdmap_new(test_fsid), *before;
	struct osdmap_inc inc;

	inc_first(&inc);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	before = osdmap_clone(m);
	cr_expect_eq(osdmap_apply(m, &inc), -EINVAL, "epoch 1 again");
	osdmap_inc_clear(&inc);
	inc_second(&inc);
	inc.epoch = 3;
	cr_expect_eq(osdmap_apply(m, &inc), -EINVAL, "epoch 2 skipped");
	inc.epoch = 0;
	cr_expect_eq(osdmap_apply(m, &inc), -EINVAL, "going back");
	cr_expect(osdmap_equal(m, before));
	osdmap_inc_clear(&inc);
	osdmap_free(before);
	osdmap_free(m);
}

Test(osdmap, apply_refuses_bad_records_and_leaves_the_map)
{
	struct osdmap *m = osdmap_new(test_fsid), *before;
	struct osdmap_pg_temp t[2] = {
		{ .pool = 1, .pg = 1, .n = 1, .osds = { 0 } },
		{ .pool = 1, .pg = 1, .n = 1, .osds = { 2 } },
	};
	struct osdmap_blocklist b[2] = { { .client = 5 }, { .client = 5 } };
	struct osdmap_pool p = make_pool(9, "rbd");
	struct osdmap_inc inc;

	inc_first(&inc);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	before = osdmap_clone(m);

	osdmap_inc_init(&inc, 2);
	cr_assert_eq(osdmap_inc_set_pool(&inc, &p), 0);
	cr_expect_eq(osdmap_apply(m, &inc), -EINVAL, "a second pool named rbd");
	osdmap_inc_clear(&inc);

	osdmap_inc_init(&inc, 2);
	cr_assert_eq(osdmap_inc_set_pg_temp(&inc, t, 2), 0);
	cr_expect_eq(osdmap_apply(m, &inc), -EINVAL, "duplicate pg_temp");
	osdmap_inc_clear(&inc);

	osdmap_inc_init(&inc, 2);
	cr_assert_eq(osdmap_inc_set_blocklist(&inc, b, 2), 0);
	cr_expect_eq(osdmap_apply(m, &inc), -EINVAL, "duplicate blocklist");
	osdmap_inc_clear(&inc);

	/* records put in by hand, past the builders' checks */
	osdmap_inc_init(&inc, 2);
	cr_assert_eq(osdmap_inc_set_pool(&inc, &p), 0);
	inc.pools[0].min_size = 5;
	cr_expect_eq(osdmap_apply(m, &inc), -EINVAL, "min_size > size");
	osdmap_inc_clear(&inc);

	osdmap_inc_init(&inc, 2);
	inc.has_ratios = true;
	inc.full_ratio = 20000;
	cr_expect_eq(osdmap_apply(m, &inc), -EINVAL, "ratio over 100%%");
	osdmap_inc_clear(&inc);

	cr_expect(osdmap_equal(m, before));
	osdmap_free(before);
	osdmap_free(m);
}

Test(osdmap, builders_refuse_bad_records)
{
	struct osdmap_osd o = make_osd(OSDMAP_OSD_MAX, "n");
	struct osdmap_pool p = make_pool(1, "rbd");
	struct osdmap_inc inc;

	osdmap_inc_init(&inc, 1);
	cr_expect_eq(osdmap_inc_set_osd(&inc, &o), -EINVAL);
	o = make_osd(1, "n");
	o.reweight = OSD_WEIGHT_ONE * 2;
	cr_expect_eq(osdmap_inc_set_osd(&inc, &o), -EINVAL);
	p.pg_num = 0;
	cr_expect_eq(osdmap_inc_set_pool(&inc, &p), -EINVAL);
	p.pg_num = 8;
	p.min_size = 4;
	cr_expect_eq(osdmap_inc_set_pool(&inc, &p), -EINVAL);
	cr_expect_eq(osdmap_inc_set_pg_temp(&inc, NULL, OSDMAP_PG_TEMP_MAX + 1), -E2BIG);
	cr_expect_eq(inc.nosds + inc.npools, 0);
	osdmap_inc_clear(&inc);
}

Test(osdmap, builders_replace_records_of_the_same_id)
{
	struct osdmap_osd o = make_osd(3, "a");
	struct osdmap_pool p = make_pool(2, "x");
	struct osdmap_inc inc;

	osdmap_inc_init(&inc, 1);
	cr_assert_eq(osdmap_inc_set_osd(&inc, &o), 0);
	o.weight = 5;
	cr_assert_eq(osdmap_inc_set_osd(&inc, &o), 0);
	cr_expect_eq(inc.nosds, 1);
	cr_expect_eq(inc.osds[0].weight, 5);

	cr_assert_eq(osdmap_inc_set_pool(&inc, &p), 0);
	p.pg_num = 32;
	cr_assert_eq(osdmap_inc_set_pool(&inc, &p), 0);
	cr_expect_eq(inc.npools, 1);
	cr_expect_eq(inc.pools[0].pg_num, 32);
	cr_assert_eq(osdmap_inc_rm_pool(&inc, 2), 0);
	cr_expect_eq(inc.npools, 0, "removing cancels the set");
	cr_expect_eq(inc.nrm_pools, 1);
	cr_assert_eq(osdmap_inc_rm_pool(&inc, 2), 0);
	cr_expect_eq(inc.nrm_pools, 1);
	cr_assert_eq(osdmap_inc_set_pool(&inc, &p), 0);
	cr_expect_eq(inc.nrm_pools, 0, "setting cancels the removal");
	osdmap_inc_clear(&inc);
	cr_expect_null(inc.osds);
	cr_expect_eq(inc.epoch, 1);
}

Test(osdmap, removing_a_pool_drops_its_pg_temp)
{
	struct osdmap *m = osdmap_new(test_fsid);
	struct osdmap_inc inc;

	inc_first(&inc);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	inc_second(&inc);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	cr_assert_eq(m->npg_temp, 2);

	osdmap_inc_init(&inc, 3);
	cr_assert_eq(osdmap_inc_rm_pool(&inc, 1), 0);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	cr_expect_null(osdmap_pool(m, 1));
	cr_expect_not_null(osdmap_pool(m, 4));
	cr_expect_eq(m->npg_temp, 1);
	cr_expect_eq(m->pg_temp[0].pool, 4);
	cr_expect_eq(m->pool_next_id, 5, "ids are not reused");

	/* removing a pool that is not there is fine */
	osdmap_inc_init(&inc, 4);
	cr_assert_eq(osdmap_inc_rm_pool(&inc, 77), 0);
	cr_expect_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	osdmap_free(m);
}

Test(osdmap, an_osd_record_of_state_0_frees_the_id)
{
	struct osdmap *m = osdmap_new(test_fsid);
	struct osdmap_osd o;
	struct osdmap_inc inc;

	inc_first(&inc);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	osdmap_inc_init(&inc, 2);
	memset(&o, 0, sizeof(o));
	o.id = 2;
	cr_assert_eq(osdmap_inc_set_osd(&inc, &o), 0);
	o = make_osd(40, "node9");	/* grows max_osd */
	cr_assert_eq(osdmap_inc_set_osd(&inc, &o), 0);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	cr_expect_null(osdmap_osd(m, 2));
	cr_expect_eq(m->max_osd, 41);
	cr_expect_str_eq(osdmap_osd(m, 40)->host, "node9");
	cr_expect_null(osdmap_osd(m, 39));
	osdmap_free(m);
}

Test(osdmap, incremental_decoder_refuses_bad_input)
{
	struct osdmap_inc inc, out;
	uint8_t *buf;
	size_t len, cut;

	inc_second(&inc);
	buf = encode_inc(&inc, &len);
	for (cut = 0; cut < len; cut++)
		cr_assert_eq(decode_inc_buf(buf, cut, &out), -EBADMSG, "cut at %zu", cut);
	cr_expect_null(out.osds);
	free(buf);

	/* a bool byte that is neither 0 nor 1: has_flags is at offset 6+16 */
	buf = encode_inc(&inc, &len);
	buf[6 + 16] = 2;
	cr_expect_eq(decode_inc_buf(buf, len, &out), -EBADMSG);
	free(buf);

	/* a bad pool record */
	inc.pools[0].pg_num = OSDMAP_PG_MAX + 1;
	buf = encode_inc(&inc, &len);
	cr_expect_eq(decode_inc_buf(buf, len, &out), -EBADMSG);
	free(buf);
	osdmap_inc_clear(&inc);
}

Test(osdmap, corrupted_incrementals_never_crash)
{
	struct osdmap_inc inc;
	size_t len, mlen;
	uint8_t *buf;
	unsigned int i;

	inc_second(&inc);
	buf = encode_inc(&inc, &len);
	osdmap_inc_clear(&inc);
	for (i = 0; i < 5000; i++) {
		uint8_t *bad = mutate(buf, len, &mlen);
		struct osdmap_inc out;
		struct dec d;

		dec_init(&d, bad, mlen);
		if (osdmap_inc_decode(&d, &out) == 0) {
			size_t alen;
			uint8_t *again = encode_inc(&out, &alen);

			free(again);
			osdmap_inc_clear(&out);
		}
		free(bad);
	}
	free(buf);
}

/* ---- the MDS daemons ---- */

static struct osdmap_mds mds_rec(uint64_t instance, const char *name, uint8_t state)
{
	struct osdmap_mds d = { .instance = instance, .meta_pool = 1, .data_pool = 2,
				.state = state };

	snprintf(d.name, sizeof(d.name), "%s", name);
	snprintf(d.addr, sizeof(d.addr), "127.0.0.2:68%02u", (unsigned)(instance % 100));
	return d;
}

Test(osdmap, mds_list_applies_sorted_with_the_grant_epoch_filled_in)
{
	struct osdmap *m = osdmap_new(test_fsid), *out = NULL;
	struct osdmap_mds l[2] = { mds_rec(9, "b", OSDMAP_MDS_STANDBY),
				   mds_rec(4, "a", OSDMAP_MDS_ACTIVE) };
	struct osdmap_inc inc;

	osdmap_inc_init(&inc, 1);
	cr_assert_eq(osdmap_inc_set_mds(&inc, l, 2), 0);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	cr_assert_eq(m->nmds, 2);
	cr_expect_eq(m->mds[0].instance, 4, "sorted by instance");
	cr_expect_eq(m->mds[0].grant_epoch, 1, "0 in the incremental: granted now");
	cr_expect_eq(m->mds[1].grant_epoch, 0);
	cr_expect_eq(osdmap_mds_active(m, 1, 2), &m->mds[0]);
	cr_expect_null(osdmap_mds_active(m, 1, 3));
	cr_expect_eq(osdmap_mds_find(m, 9), &m->mds[1]);
	cr_expect_null(osdmap_mds_find(m, 5));
	cr_assert_eq(round_trip(m, &out), 0);
	cr_expect(osdmap_equal(m, out));
	cr_expect_str_eq(out->mds[1].name, "b");
	osdmap_free(out);
	osdmap_free(m);
}

Test(osdmap, mds_list_incremental_round_trips)
{
	struct osdmap_mds l[1] = { mds_rec(7, "x_1-Y", OSDMAP_MDS_ACTIVE) };
	struct osdmap_inc inc, back;
	uint8_t *buf;
	size_t len;

	osdmap_inc_init(&inc, 5);
	cr_assert_eq(osdmap_inc_set_mds(&inc, l, 1), 0);
	buf = encode_inc(&inc, &len);
	cr_assert_eq(decode_inc_buf(buf, len, &back), 0);
	cr_expect(back.has_mds);
	cr_assert_eq(back.nmds, 1);
	cr_expect_eq(memcmp(&back.mds[0], &l[0], sizeof(l[0])), 0);
	osdmap_inc_clear(&back);
	osdmap_inc_clear(&inc);
	free(buf);
}

Test(osdmap, bad_mds_lists_are_refused)
{
	struct osdmap *m = osdmap_new(test_fsid);
	struct osdmap_mds two_active[2] = { mds_rec(1, "a", OSDMAP_MDS_ACTIVE),
					    mds_rec(2, "b", OSDMAP_MDS_ACTIVE) };
	struct osdmap_mds same[2] = { mds_rec(3, "a", OSDMAP_MDS_STANDBY),
				      mds_rec(3, "b", OSDMAP_MDS_STANDBY) };
	struct osdmap_mds bad = mds_rec(5, "a.b", OSDMAP_MDS_STANDBY);
	struct osdmap_inc inc;

	osdmap_inc_init(&inc, 1);
	cr_expect_eq(osdmap_inc_set_mds(&inc, &bad, 1), -EINVAL, "a dot in the name");
	bad = mds_rec(0, "a", OSDMAP_MDS_STANDBY);
	cr_expect_eq(osdmap_inc_set_mds(&inc, &bad, 1), -EINVAL, "instance 0");
	bad = mds_rec(5, "a", 3);
	cr_expect_eq(osdmap_inc_set_mds(&inc, &bad, 1), -EINVAL, "unknown state");
	bad = mds_rec(5, "", OSDMAP_MDS_STANDBY);
	cr_expect_eq(osdmap_inc_set_mds(&inc, &bad, 1), -EINVAL, "no name");
	cr_assert_eq(osdmap_inc_set_mds(&inc, two_active, 2), 0);
	cr_expect_eq(osdmap_apply(m, &inc), -EINVAL, "two actives of one file system");
	two_active[1].data_pool = 9;
	cr_assert_eq(osdmap_inc_set_mds(&inc, two_active, 2), 0);
	cr_expect_eq(osdmap_apply(m, &inc), 0, "two file systems, one active each");
	osdmap_inc_clear(&inc);
	osdmap_inc_init(&inc, 2);
	cr_assert_eq(osdmap_inc_set_mds(&inc, same, 2), 0);
	cr_expect_eq(osdmap_apply(m, &inc), -EINVAL, "one instance twice");
	cr_expect_eq(m->epoch, 1);
	cr_expect_eq(m->nmds, 2);
	osdmap_inc_clear(&inc);
	/* the full map's decoder refuses the same */
	m->mds[1].data_pool = m->mds[0].data_pool;
	cr_expect_eq(decode_refusal(m), -EBADMSG);
	osdmap_free(m);
}

Test(osdmap, mds_list_truncations_are_refused)
{
	struct osdmap *m = osdmap_new(test_fsid), *out;
	struct osdmap_mds l[2] = { mds_rec(4, "a", OSDMAP_MDS_ACTIVE),
				   mds_rec(9, "b", OSDMAP_MDS_STANDBY) };
	struct osdmap_inc inc;
	size_t len;
	uint8_t *buf;

	osdmap_inc_init(&inc, 1);
	cr_assert_eq(osdmap_inc_set_mds(&inc, l, 2), 0);
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	buf = encode_map(m, &len);
	for (size_t cut = 0; cut < len; cut++) {
		struct dec d;

		dec_init(&d, buf, cut);
		cr_assert_eq(osdmap_decode(&d, &out), -EBADMSG, "cut at %zu", cut);
	}
	free(buf);
	osdmap_free(m);
}
