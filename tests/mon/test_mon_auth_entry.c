/*
 * test_mon_auth_entry.c - the encoders and decoders of the monitors' auth
 * state (mon/auth_entry.c): every entry round-trips, and each malformed
 * shape is refused (-EBADMSG) or, for another entry type, not taken (0).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "auth_entry.h"
#include "encode.h"

static void two_entities(struct keyring *kr)
{
	uint8_t key[AUTH_KEY_LEN];

	memset(key, 0xab, sizeof(key));
	cr_assert_eq(keyring_set(kr, "client.admin", key), 0);
	cr_assert_eq(keyring_set_caps(kr, "client.admin", "mon", "allow *"), 0);
	cr_assert_eq(keyring_set_caps(kr, "client.admin", "osd", "allow *"), 0);
	key[0] = 1;
	cr_assert_eq(keyring_set(kr, "osd.3", key), 0);
}

/* Encodes e, decodes it into *out (cleared by the caller). */
static int roundtrip(const struct mon_auth_entry *e, struct mon_auth_entry *out,
		     struct enc *buf)
{
	enc_init(buf);
	mon_auth_entry_encode(e, buf);
	cr_assert_eq(buf->err, 0);
	return mon_auth_entry_decode(buf->buf, buf->len, out);
}

Test(mon_auth_entry, put_roundtrips)
{
	struct mon_auth_entry e = { .op = MON_AUTH_PUT, .now = 100, .prev_until = 160,
				    .client = 77, .seq = 5 }, d;
	struct enc b;

	two_entities(&e.ents);
	cr_assert_eq(roundtrip(&e, &d, &b), 1);
	cr_assert_eq(d.op, MON_AUTH_PUT);
	cr_assert_eq(d.now, 100);
	cr_assert_eq(d.prev_until, 160);
	cr_assert_eq(d.client, 77);
	cr_assert_eq(d.seq, 5);
	cr_assert_eq(d.ents.n, 2);
	cr_assert_str_eq(d.ents.e[0].name, "client.admin");
	cr_assert_eq(d.ents.e[0].ncaps, 2);
	cr_assert_str_eq(d.ents.e[0].caps[1].caps, "allow *");
	cr_assert_eq(memcmp(d.ents.e[1].key, e.ents.e[1].key, AUTH_KEY_LEN), 0);
	/* the log pads entries to 8 bytes: trailing bytes are ignored */
	enc_u64(&b, 0);
	mon_auth_entry_clear(&d);
	cr_assert_eq(mon_auth_entry_decode(b.buf, b.len, &d), 1);
	/* every truncation is refused */
	for (size_t n = 8; n < b.len - 8; n++) {
		mon_auth_entry_clear(&d);
		cr_assert_eq(mon_auth_entry_decode(b.buf, n, &d), -EBADMSG, "len %zu", n);
	}
	mon_auth_entry_clear(&d);
	mon_auth_entry_clear(&e);
	enc_free(&b);
}

Test(mon_auth_entry, other_ops_roundtrip)
{
	struct mon_auth_entry e, d;
	struct enc b;

	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_RM;
	strcpy(e.name, "client.u");
	e.client = 9;
	e.seq = 3;
	cr_assert_eq(roundtrip(&e, &d, &b), 1);
	cr_assert_str_eq(d.name, "client.u");
	cr_assert_eq(d.client, 9);
	cr_assert_eq(d.seq, 3);
	mon_auth_entry_clear(&d);
	enc_free(&b);

	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_BOOT;
	memset(e.idkey, 9, sizeof(e.idkey));
	cr_assert_eq(roundtrip(&e, &d, &b), 1, "an empty BOOT is fine");
	cr_assert_eq(d.idkey[31], 9);
	mon_auth_entry_clear(&d);
	enc_free(&b);

	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_IDRANGE;
	e.range = (struct mon_auth_range){ 7, 1, 65537, 99 };
	cr_assert_eq(roundtrip(&e, &d, &b), 1);
	cr_assert_eq(d.range.member, 7);
	cr_assert_eq(d.range.end, 65537);
	cr_assert_eq(d.range.at, 99);
	mon_auth_entry_clear(&d);
	enc_free(&b);

	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_SECRET;
	e.service = AUTH_SVC_MDS;
	e.secret.gen = 4;
	e.secret.start = 1234;
	e.secret.key[5] = 5;
	cr_assert_eq(roundtrip(&e, &d, &b), 1);
	cr_assert_eq(d.service, AUTH_SVC_MDS);
	cr_assert_eq(d.secret.gen, 4);
	cr_assert_eq(d.secret.start, 1234);
	cr_assert_eq(d.secret.key[5], 5);
	mon_auth_entry_clear(&d);
	enc_free(&b);
}

Test(mon_auth_entry, refuses_bad_entries)
{
	struct mon_auth_entry e, d;
	struct enc b;

	/* another entry type: not an auth entry */
	cr_assert_eq(mon_auth_entry_decode("ATINCARN\1\0\0\0\0\0\0\0", 16, &d), 0);
	mon_auth_entry_clear(&d);
	cr_assert_eq(mon_auth_entry_decode("AT", 2, &d), 0);
	mon_auth_entry_clear(&d);

	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_PUT;	/* no entity */
	cr_assert_eq(roundtrip(&e, &d, &b), -EBADMSG);
	mon_auth_entry_clear(&d);
	enc_free(&b);

	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_PUT;
	two_entities(&e.ents);
	e.now = 100;
	e.prev_until = 99;	/* a grace that ended before it began */
	cr_assert_eq(roundtrip(&e, &d, &b), -EBADMSG);
	mon_auth_entry_clear(&d);
	mon_auth_entry_clear(&e);
	enc_free(&b);

	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_RM;
	strcpy(e.name, "nobody");	/* not TYPE.ID */
	cr_assert_eq(roundtrip(&e, &d, &b), -EBADMSG);
	mon_auth_entry_clear(&d);
	enc_free(&b);

	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_IDRANGE;
	e.range = (struct mon_auth_range){ .member = 1, .first = 10, .end = 10 };	/* empty */
	cr_assert_eq(roundtrip(&e, &d, &b), -EBADMSG);
	mon_auth_entry_clear(&d);
	enc_free(&b);
	e.range = (struct mon_auth_range){ .member = 1, .first = 1, .end = MON_AUTH_SEQ_MAX + 2 };	/* past the ids */
	cr_assert_eq(roundtrip(&e, &d, &b), -EBADMSG);
	mon_auth_entry_clear(&d);
	enc_free(&b);

	memset(&e, 0, sizeof(e));
	e.op = MON_AUTH_SECRET;
	e.service = AUTH_SVC_OSD;	/* generation 0 */
	cr_assert_eq(roundtrip(&e, &d, &b), -EBADMSG);
	mon_auth_entry_clear(&d);
	enc_free(&b);
	e.secret.gen = 1;
	e.service = 9;			/* no such service */
	cr_assert_eq(roundtrip(&e, &d, &b), -EBADMSG);
	mon_auth_entry_clear(&d);
	enc_free(&b);

	memset(&e, 0, sizeof(e));
	e.op = 42;			/* unknown */
	cr_assert_eq(roundtrip(&e, &d, &b), -EBADMSG);
	mon_auth_entry_clear(&d);
	enc_free(&b);
}

Test(mon_auth_entry, refuses_a_name_twice)
{
	struct mon_auth_entry e = { .op = MON_AUTH_PUT }, d;
	struct enc b;

	two_entities(&e.ents);
	strcpy(e.ents.e[1].name, "client.admin");	/* behind keyring_set's back */
	cr_assert_eq(roundtrip(&e, &d, &b), -EBADMSG);
	mon_auth_entry_clear(&d);
	mon_auth_entry_clear(&e);
	enc_free(&b);
}

Test(mon_auth_entry, state_roundtrips_and_checks)
{
	struct mon_auth_state s, d;
	struct enc b;

	memset(&s, 0, sizeof(s));
	s.booted = true;
	s.idkey[0] = 3;
	s.id_next = 131073;
	s.nranges = 2;
	s.ranges[0] = (struct mon_auth_range){ .member = 1, .first = 1, .end = 65537 };
	s.ranges[1] = (struct mon_auth_range){ .member = 2, .first = 65537, .end = 131073 };
	s.svc[1].n = 3;
	for (uint32_t i = 0; i < 3; i++)
		s.svc[1].g[i] = (struct mon_auth_gen){ .gen = i + 1, .start = 100 * i };
	two_entities(&s.ents);
	s.nprev = 1;
	strcpy(s.prev[0].name, "client.admin");
	s.prev[0].key[0] = 0x77;
	s.prev[0].until = 99;
	enc_init(&b);
	mon_auth_state_encode(&s, &b);
	cr_assert_eq(mon_auth_state_decode(b.buf, b.len, &d), 1);
	cr_assert_eq(d.nprev, 1);
	cr_assert_str_eq(d.prev[0].name, "client.admin");
	cr_assert_eq(d.prev[0].key[0], 0x77);
	cr_assert_eq(d.prev[0].until, 99);
	cr_assert(d.booted);
	cr_assert_eq(d.idkey[0], 3);
	cr_assert_eq(d.nranges, 2);
	cr_assert_eq(d.ranges[1].first, 65537);
	cr_assert_eq(d.svc[1].n, 3);
	cr_assert_eq(d.svc[1].g[2].start, 200);
	cr_assert_eq(d.ents.n, 2);
	keyring_free(&d.ents);
	for (size_t n = 8; n < b.len; n++) {
		cr_assert_eq(mon_auth_state_decode(b.buf, n, &d), -EBADMSG, "len %zu", n);
		keyring_free(&d.ents);
	}
	enc_free(&b);

	/* a range past the first free id, generations out of order */
	s.id_next = 65537;
	enc_init(&b);
	mon_auth_state_encode(&s, &b);
	cr_assert_eq(mon_auth_state_decode(b.buf, b.len, &d), -EBADMSG);
	keyring_free(&d.ents);
	enc_free(&b);
	s.id_next = 131073;
	s.svc[1].g[2].gen = 2;
	enc_init(&b);
	mon_auth_state_encode(&s, &b);
	cr_assert_eq(mon_auth_state_decode(b.buf, b.len, &d), -EBADMSG);
	keyring_free(&d.ents);
	enc_free(&b);

	/* no auth section (a snapshot from before): an empty state */
	cr_assert_eq(mon_auth_state_decode("", 0, &d), 0);
	cr_assert(!d.booted);
	cr_assert_eq(d.id_next, 1);
	keyring_free(&s.ents);
}
