/*
 * test_client_iter.c - key/value iterators decoded from OSD kv lists,
 * the listing cursor's encoding, and the small JSON helpers (no cluster).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "encode.h"

/* ---- kv iterators ---- */

static void *kvlist(uint32_t n, int more, size_t *len)
{
	struct enc e;
	void *p;

	enc_init(&e);
	osd_kvlist_encode_begin(&e, n);
	for (uint32_t i = 0; i < n; i++) {
		char k[16], v[16];

		snprintf(k, sizeof(k), "key%u", i);
		snprintf(v, sizeof(v), "value%u", i);
		osd_kvlist_encode_one(&e, k, (uint32_t)strlen(k), v, (uint32_t)strlen(v));
	}
	if (more >= 0)
		enc_u8(&e, (uint8_t)more);
	p = enc_take(&e, len);
	enc_free(&e);
	return p;
}

Test(client_iter, decodes_every_entry_in_order)
{
	struct atoll_kv_iter *it;
	const void *k, *v;
	size_t kl, vl, len;
	void *p = kvlist(3, 1, &len);
	int more = 0;

	cr_assert_eq(client_kv_iter_decode(p, len, &it, &more), 0);
	free(p);	/* the iterator keeps its own copy */
	cr_assert_eq(more, 1);
	cr_assert_eq(atoll_kv_iter_count(it), 3);
	for (int i = 0; i < 3; i++) {
		char ek[16], ev[16];

		snprintf(ek, sizeof(ek), "key%d", i);
		snprintf(ev, sizeof(ev), "value%d", i);
		cr_assert_eq(atoll_kv_iter_next(it, &k, &kl, &v, &vl), 0);
		cr_assert_eq(kl, strlen(ek));
		cr_assert_eq(memcmp(k, ek, kl), 0);
		cr_assert_eq(vl, strlen(ev));
		cr_assert_eq(memcmp(v, ev, vl), 0);
	}
	cr_assert_eq(atoll_kv_iter_next(it, &k, &kl, &v, &vl), -ENOENT);
	cr_assert_eq(atoll_kv_iter_next(it, NULL, NULL, NULL, NULL), -ENOENT);
	atoll_kv_iter_free(it);
}

Test(client_iter, more_flag_is_optional)
{
	struct atoll_kv_iter *it;
	size_t len;
	void *p = kvlist(2, -1, &len);
	int more = 7;

	cr_assert_eq(client_kv_iter_decode(p, len, &it, &more), 0);
	cr_assert_eq(more, 0);
	cr_assert_eq(atoll_kv_iter_count(it), 2);
	atoll_kv_iter_free(it);
	free(p);
}

Test(client_iter, empty_list)
{
	struct atoll_kv_iter *it;
	size_t len;
	void *p = kvlist(0, 0, &len);

	cr_assert_eq(client_kv_iter_decode(p, len, &it, NULL), 0);
	cr_assert_eq(atoll_kv_iter_count(it), 0);
	cr_assert_eq(atoll_kv_iter_next(it, NULL, NULL, NULL, NULL), -ENOENT);
	atoll_kv_iter_free(it);
	free(p);
}

Test(client_iter, truncated_lists_are_ebadmsg)
{
	struct atoll_kv_iter *it = (void *)1;
	size_t len;
	uint8_t *p = kvlist(4, 0, &len);

	/* every prefix that cuts an entry short is refused */
	for (size_t cut = 0; cut < len - 1; cut++) {
		int r = client_kv_iter_decode(p, cut, &it, NULL);

		if (r == 0) {
			/* only a cut exactly after the entries (no more flag) is whole */
			cr_assert_eq(cut, len - 1, "prefix of %zu bytes accepted", cut);
			atoll_kv_iter_free(it);
			continue;
		}
		cr_assert_eq(r, -EBADMSG, "prefix of %zu bytes: %d", cut, r);
		cr_assert_null(it);
	}
	free(p);
}

Test(client_iter, absurd_count_is_refused_without_allocating_it)
{
	uint8_t p[4] = { 0xff, 0xff, 0xff, 0x7f };
	struct atoll_kv_iter *it;

	cr_assert_eq(client_kv_iter_decode(p, sizeof(p), &it, NULL), -EBADMSG);
}

Test(client_iter, one_entry_iterator_copies)
{
	struct atoll_kv_iter *it;
	char k[] = "name", v[] = "value";
	const void *kp, *vp;
	size_t kl, vl;

	cr_assert_eq(client_kv_iter_one(k, 4, v, 5, &it), 0);
	memset(k, 0, sizeof(k));
	memset(v, 0, sizeof(v));
	cr_assert_eq(atoll_kv_iter_next(it, &kp, &kl, &vp, &vl), 0);
	cr_assert_eq(kl, 4);
	cr_assert_eq(memcmp(kp, "name", 4), 0);
	cr_assert_eq(vl, 5);
	cr_assert_eq(memcmp(vp, "value", 5), 0);
	atoll_kv_iter_free(it);
}

/* ---- the listing cursor ---- */

static void round_trip(uint32_t pg, const char *name, size_t len)
{
	char cur[512], back[PROTO_OID_MAX + 1];
	uint32_t pg2;
	size_t len2;

	cr_assert_eq(client_cursor_encode(pg, name, len, cur, sizeof(cur)), 0,
		     "encode of a %zu-byte name", len);
	cr_assert_lt(strlen(cur), 512);
	cr_assert_eq(client_cursor_decode(cur, &pg2, back, &len2), 0, "decode '%s'", cur);
	cr_assert_eq(pg2, pg);
	cr_assert_eq(len2, len, "'%s'", cur);
	cr_assert_eq(memcmp(back, name, len), 0, "'%s'", cur);
	cr_assert_eq(back[len], '\0');
}

Test(client_iter, cursor_round_trips_plain_names)
{
	round_trip(0, "", 0);
	round_trip(7, "obj-1", 5);
	round_trip(65535, "a:b*c%d/e", 9);
}

Test(client_iter, cursor_is_readable_for_plain_names)
{
	char cur[512];

	cr_assert_eq(client_cursor_encode(3, "my obj%", 7, cur, sizeof(cur)), 0);
	cr_assert_str_eq(cur, "3:my%20obj%25");
}

Test(client_iter, cursor_round_trips_every_byte)
{
	char name[256];
	size_t n = 0;

	for (int b = 1; b < 256; b++)
		name[n++] = (char)b;
	round_trip(12, name, n);
}

Test(client_iter, cursor_of_longest_odd_names_fits_512)
{
	char name[PROTO_OID_MAX];

	/* 400 bytes that percent-encoding would triple: base85 instead */
	for (size_t len = 395; len <= PROTO_OID_MAX; len++) {
		for (size_t i = 0; i < len; i++)
			name[i] = (char)(0x80 + (i * 37) % 128);
		round_trip(65535, name, len);
	}
	/* partial groups of every size, all byte values at the edges */
	memset(name, 0xff, sizeof(name));
	for (size_t len = 396; len <= PROTO_OID_MAX; len++)
		round_trip(1, name, len);
	memset(name, 0x01, sizeof(name));
	round_trip(1, name, PROTO_OID_MAX);
}

Test(client_iter, cursor_too_small_buffer_is_erange)
{
	char cur[4];

	cr_assert_eq(client_cursor_encode(1, "abcdef", 6, cur, sizeof(cur)), -ERANGE);
}

Test(client_iter, malformed_cursors_are_einval)
{
	static const char *bad[] = {
		"", "x", ":abc", "1", "1;abc", "99999999:a", "1:%", "1:%4", "1:%zz",
		"1:%00", "1:a b", "1*0", "1*~~~~~", "1*#####",
	};
	char name[PROTO_OID_MAX + 1];
	uint32_t pg;
	size_t len;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(client_cursor_decode(bad[i], &pg, name, &len), -EINVAL,
			     "cursor '%s' accepted", bad[i]);
	cr_assert_eq(client_cursor_decode(NULL, &pg, name, &len), -EINVAL);
}

Test(client_iter, cursor_names_over_400_bytes_are_refused)
{
	char cur[600], name[PROTO_OID_MAX + 1];
	uint32_t pg;
	size_t len;

	memset(cur, 'a', sizeof(cur));
	memcpy(cur, "1:", 2);
	cur[2 + 401] = '\0';
	cr_assert_eq(client_cursor_decode(cur, &pg, name, &len), -EINVAL);
	cur[2 + 400] = '\0';
	cr_assert_eq(client_cursor_decode(cur, &pg, name, &len), 0);
	cr_assert_eq(len, 400);
}

/* ---- JSON helpers ---- */

Test(client_iter, json_u64_finds_the_key)
{
	const char *j = "{\"pool\": 3, \"name\": \"epoch\", \"epoch\" :  17}";
	uint64_t v;

	cr_assert_eq(client_json_u64(j, strlen(j), "epoch", &v), 0);
	cr_assert_eq(v, 17);
	cr_assert_eq(client_json_u64(j, strlen(j), "pool", &v), 0);
	cr_assert_eq(v, 3);
	cr_assert_eq(client_json_u64(j, strlen(j), "missing", &v), -ENOENT);
	cr_assert_eq(client_json_u64(j, 10, "epoch", &v), -ENOENT);
}

Test(client_iter, json_str_escapes)
{
	char buf[64];
	size_t pos = 0;

	cr_assert_eq(client_json_str(buf, sizeof(buf), &pos, "a\"b\\c\n"), 0);
	cr_assert_str_eq(buf, "\"a\\\"b\\\\c\\u000a\"");
	pos = 0;
	cr_assert_eq(client_json_str(buf, 4, &pos, "abcdef"), -E2BIG);
}
