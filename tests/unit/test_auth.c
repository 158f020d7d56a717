/*
 * test_auth.c - authentication's records and checks (lib/auth_ticket.c,
 * lib/auth_crypto.c, lib/keyring.c): what a service must refuse (a wrong
 * key, an expired ticket, a ticket for another service or with its caps
 * altered, a replayed authorizer, a rotated-out secret), what it must
 * accept (clock skew within the bound, the overlap of a rotation), the
 * mutual proofs of the handshake, and keyring files (the mode check).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "encode.h"
#include "msg.h"

#define NOW	1800000000ull
#define SKEW	30u

static struct auth_secrets osd_secrets(uint64_t first_gen, uint32_t n)
{
	struct auth_secrets s = { .service = AUTH_SVC_OSD, .n = n };

	for (uint32_t i = 0; i < n; i++) {
		s.s[i].gen = first_gen + i;
		cr_assert_eq(auth_random(s.s[i].key, AUTH_KEY_LEN), 0);
	}
	return s;
}

static struct auth_ticket a_ticket(uint8_t service)
{
	struct auth_ticket t = {
		.service = service, .client_id = 4242,
		.issued = NOW, .expires = NOW + 3600,
	};

	strcpy(t.entity, "client.admin");
	strcpy(t.caps, "allow rw pool=a");
	cr_assert_eq(auth_random(t.session_key, AUTH_KEY_LEN), 0);
	return t;
}

/* The sealed bytes of t under secret (caller frees e). */
static void seal(const struct auth_ticket *t, const struct auth_secret *secret, struct enc *e)
{
	enc_init(e);
	cr_assert_eq(auth_ticket_seal(t, secret, e), 0);
}

static void transcript(const char *a, const char *b, uint8_t out[AUTH_HASH_LEN])
{
	cr_assert_eq(auth_transcript(a, strlen(a), b, strlen(b), out), 0);
}

/* An authorizer for t (sealed in sealed) over tr; caller frees e. */
static void authorizer(const struct enc *sealed, const struct auth_ticket *t,
		       const uint8_t tr[AUTH_HASH_LEN], struct enc *e)
{
	enc_init(e);
	cr_assert_eq(auth_authorizer_build(sealed->buf, sealed->len, t->session_key,
					   t->client_id, t->entity, tr, e), 0);
}

Test(auth, aead_round_trip_and_tamper)
{
	uint8_t key[AUTH_KEY_LEN], out[64 + AUTH_AEAD_OVERHEAD], back[64];
	const char msg[] = "sixty-four bytes or fewer of plaintext";

	cr_assert_eq(auth_random(key, sizeof(key)), 0);
	cr_assert_eq(auth_seal(key, "aad", 3, msg, sizeof(msg), out), 0);
	cr_assert_eq(auth_open(key, "aad", 3, out, sizeof(msg) + AUTH_AEAD_OVERHEAD, back), 0);
	cr_assert_eq(memcmp(back, msg, sizeof(msg)), 0);
	cr_assert_eq(auth_open(key, "aaD", 3, out, sizeof(msg) + AUTH_AEAD_OVERHEAD, back),
		     -EACCES);
	out[AUTH_AEAD_NONCE_LEN + 3] ^= 1;
	cr_assert_eq(auth_open(key, "aad", 3, out, sizeof(msg) + AUTH_AEAD_OVERHEAD, back),
		     -EACCES);
	cr_assert_eq(auth_open(key, NULL, 0, out, AUTH_AEAD_OVERHEAD - 1, back), -EBADMSG);
}

Test(auth, hkdf_labels_give_distinct_keys)
{
	uint8_t key[AUTH_KEY_LEN] = { 1 }, a[32], b[32];

	cr_assert_eq(auth_hkdf(key, NULL, 0, "one", NULL, 0, a, sizeof(a)), 0);
	cr_assert_eq(auth_hkdf(key, NULL, 0, "two", NULL, 0, b, sizeof(b)), 0);
	cr_assert_neq(memcmp(a, b, sizeof(a)), 0);
}

Test(auth, ticket_accepted_by_its_service)
{
	struct auth_secrets s = osd_secrets(7, 2);
	struct auth_ticket t = a_ticket(AUTH_SVC_OSD), got;
	uint8_t tr[AUTH_HASH_LEN];
	struct enc sealed, az;

	seal(&t, &s.s[1], &sealed);
	transcript("dialler hello", "acceptor hello", tr);
	authorizer(&sealed, &t, tr, &az);
	cr_assert_eq(auth_authorizer_verify(&s, az.buf, az.len, tr, NOW + 10, SKEW, &got), 0);
	cr_assert_str_eq(got.entity, "client.admin");
	cr_assert_str_eq(got.caps, "allow rw pool=a");
	cr_assert_eq(got.client_id, 4242);
	cr_assert_eq(memcmp(got.session_key, t.session_key, AUTH_KEY_LEN), 0);
	enc_free(&sealed);
	enc_free(&az);
}

Test(auth, replayed_authorizer_refused)
{
	struct auth_secrets s = osd_secrets(1, 1);
	struct auth_ticket t = a_ticket(AUTH_SVC_OSD), got;
	uint8_t tr1[AUTH_HASH_LEN], tr2[AUTH_HASH_LEN];
	struct enc sealed, az;

	seal(&t, &s.s[0], &sealed);
	/* the same dialler hello; the acceptor drew a new challenge */
	transcript("dialler hello", "acceptor hello, challenge 1", tr1);
	transcript("dialler hello", "acceptor hello, challenge 2", tr2);
	authorizer(&sealed, &t, tr1, &az);
	cr_assert_eq(auth_authorizer_verify(&s, az.buf, az.len, tr1, NOW, SKEW, &got), 0);
	cr_assert_eq(auth_authorizer_verify(&s, az.buf, az.len, tr2, NOW, SKEW, &got), -EACCES);
	enc_free(&sealed);
	enc_free(&az);
}

Test(auth, authorizer_without_the_session_key_refused)
{
	struct auth_secrets s = osd_secrets(1, 1);
	struct auth_ticket t = a_ticket(AUTH_SVC_OSD), got;
	uint8_t tr[AUTH_HASH_LEN], wrong[AUTH_KEY_LEN];
	struct enc sealed, az;

	seal(&t, &s.s[0], &sealed);
	transcript("d", "a", tr);
	/* a thief of the sealed ticket does not know its session key */
	cr_assert_eq(auth_random(wrong, sizeof(wrong)), 0);
	enc_init(&az);
	cr_assert_eq(auth_authorizer_build(sealed.buf, sealed.len, wrong, t.client_id,
					   t.entity, tr, &az), 0);
	cr_assert_eq(auth_authorizer_verify(&s, az.buf, az.len, tr, NOW, SKEW, &got), -EACCES);
	enc_free(&sealed);
	enc_free(&az);
}

Test(auth, authorizer_claiming_another_identity_refused)
{
	struct auth_secrets s = osd_secrets(1, 1);
	struct auth_ticket t = a_ticket(AUTH_SVC_OSD), got;
	uint8_t tr[AUTH_HASH_LEN];
	struct enc sealed, az;

	seal(&t, &s.s[0], &sealed);
	transcript("d", "a", tr);
	enc_init(&az);
	cr_assert_eq(auth_authorizer_build(sealed.buf, sealed.len, t.session_key, 1,
					   t.entity, tr, &az), 0);
	cr_assert_eq(auth_authorizer_verify(&s, az.buf, az.len, tr, NOW, SKEW, &got),
		     -EKEYREJECTED);
	enc_free(&az);
	enc_init(&az);
	cr_assert_eq(auth_authorizer_build(sealed.buf, sealed.len, t.session_key, t.client_id,
					   "osd.1", tr, &az), 0);
	cr_assert_eq(auth_authorizer_verify(&s, az.buf, az.len, tr, NOW, SKEW, &got),
		     -EKEYREJECTED);
	enc_free(&sealed);
	enc_free(&az);
}

Test(auth, expired_ticket_refused_skew_tolerated)
{
	struct auth_secrets s = osd_secrets(1, 1);
	struct auth_ticket t = a_ticket(AUTH_SVC_OSD), got;
	uint8_t tr[AUTH_HASH_LEN];
	struct enc sealed, az;

	seal(&t, &s.s[0], &sealed);
	transcript("d", "a", tr);
	authorizer(&sealed, &t, tr, &az);
	/* within the skew on either side */
	cr_assert_eq(auth_authorizer_verify(&s, az.buf, az.len, tr, t.expires + SKEW, SKEW,
					    &got), 0);
	cr_assert_eq(auth_authorizer_verify(&s, az.buf, az.len, tr, t.issued - SKEW, SKEW,
					    &got), 0);
	/* beyond it */
	cr_assert_eq(auth_authorizer_verify(&s, az.buf, az.len, tr, t.expires + SKEW + 1, SKEW,
					    &got), -EKEYEXPIRED);
	cr_assert_eq(auth_authorizer_verify(&s, az.buf, az.len, tr, t.issued - SKEW - 1, SKEW,
					    &got), -EKEYEXPIRED);
	enc_free(&sealed);
	enc_free(&az);
}

Test(auth, ticket_for_another_service_refused)
{
	struct auth_secrets osd = osd_secrets(1, 1), mds = osd;
	struct auth_ticket t = a_ticket(AUTH_SVC_MDS), got;
	uint8_t tr[AUTH_HASH_LEN];
	struct enc sealed, az;

	mds.service = AUTH_SVC_MDS;
	/* even sealed with the very same bytes, an MDS ticket is no OSD ticket */
	seal(&t, &mds.s[0], &sealed);
	transcript("d", "a", tr);
	authorizer(&sealed, &t, tr, &az);
	cr_assert_eq(auth_authorizer_verify(&osd, az.buf, az.len, tr, NOW, SKEW, &got),
		     -EKEYREJECTED);
	cr_assert_eq(auth_authorizer_verify(&mds, az.buf, az.len, tr, NOW, SKEW, &got), 0);
	/* rewriting the service byte breaks the seal */
	((uint8_t *)sealed.buf)[0] = AUTH_SVC_OSD;
	cr_assert_eq(auth_ticket_open(&osd, sealed.buf, sealed.len, &got), -EACCES);
	enc_free(&sealed);
	enc_free(&az);
}

Test(auth, ticket_with_altered_caps_refused)
{
	struct auth_secrets s = osd_secrets(1, 1);
	struct auth_ticket t = a_ticket(AUTH_SVC_OSD), got;
	struct enc sealed;
	size_t ct_start = 9 + AUTH_AEAD_NONCE_LEN;

	seal(&t, &s.s[0], &sealed);
	cr_assert_eq(auth_ticket_open(&s, sealed.buf, sealed.len, &got), 0);
	/* flip each ciphertext byte in turn: the caps are in there somewhere,
	 * and not one flip may open */
	for (size_t i = ct_start; i < sealed.len; i++) {
		((uint8_t *)sealed.buf)[i] ^= 0x20;
		cr_assert_eq(auth_ticket_open(&s, sealed.buf, sealed.len, &got), -EACCES,
			     "byte %zu", i);
		cr_assert_eq(got.caps[0], '\0');
		((uint8_t *)sealed.buf)[i] ^= 0x20;
	}
	enc_free(&sealed);
}

Test(auth, ticket_sealed_with_another_secret_refused)
{
	struct auth_secrets s = osd_secrets(1, 1), other = osd_secrets(1, 1);
	struct auth_ticket t = a_ticket(AUTH_SVC_OSD), got;
	struct enc sealed;

	seal(&t, &other.s[0], &sealed);	/* same generation, other bytes */
	cr_assert_eq(auth_ticket_open(&s, sealed.buf, sealed.len, &got), -EACCES);
	enc_free(&sealed);
}

Test(auth, rotation_overlap_then_retirement)
{
	struct auth_secrets s = osd_secrets(10, 3);	/* previous, current, next */
	struct auth_ticket t = a_ticket(AUTH_SVC_OSD), got;
	struct enc old, fresh;

	seal(&t, &s.s[0], &old);
	seal(&t, &s.s[2], &fresh);
	cr_assert_eq(auth_ticket_open(&s, old.buf, old.len, &got), 0);
	cr_assert_eq(auth_ticket_open(&s, fresh.buf, fresh.len, &got), 0);
	/* one rotation later generation 10 is gone */
	s.s[0] = s.s[1];
	s.s[1] = s.s[2];
	s.n = 2;
	cr_assert_eq(auth_ticket_open(&s, old.buf, old.len, &got), -ENOKEY);
	cr_assert_eq(auth_ticket_open(&s, fresh.buf, fresh.len, &got), 0);
	enc_free(&old);
	enc_free(&fresh);
}

Test(auth, mutual_key_proofs)
{
	uint8_t key[AUTH_KEY_LEN], wrong[AUTH_KEY_LEN], tr[AUTH_HASH_LEN];
	uint8_t cp[AUTH_MAC_LEN], want[AUTH_MAC_LEN], sp[AUTH_MAC_LEN], sp2[AUTH_MAC_LEN];

	cr_assert_eq(auth_random(key, sizeof(key)), 0);
	cr_assert_eq(auth_random(wrong, sizeof(wrong)), 0);
	transcript("hello c", "hello s", tr);
	/* the client's proof verifies only with its key */
	cr_assert_eq(auth_client_proof(key, tr, cp), 0);
	cr_assert_eq(auth_client_proof(key, tr, want), 0);
	cr_assert(auth_equal(cp, want, AUTH_MAC_LEN));
	cr_assert_eq(auth_client_proof(wrong, tr, want), 0);
	cr_assert_not(auth_equal(cp, want, AUTH_MAC_LEN));
	/* the server's proof is not the client's proof reflected back */
	cr_assert_eq(auth_server_proof(key, tr, cp, sizeof(cp), sp), 0);
	cr_assert_not(auth_equal(sp, cp, AUTH_MAC_LEN));
	cr_assert_eq(auth_server_proof(wrong, tr, cp, sizeof(cp), sp2), 0);
	cr_assert_not(auth_equal(sp, sp2, AUTH_MAC_LEN));
}

Test(auth, rewritten_offered_modes_change_the_transcript)
{
	struct auth_hello_req r = { .methods = AUTH_METHOD_KEY,
				    .modes = AUTH_MODE_CRC | AUTH_MODE_SECURE };
	uint8_t key[AUTH_KEY_LEN] = { 9 }, t1[AUTH_HASH_LEN], t2[AUTH_HASH_LEN];
	uint8_t p1[AUTH_MAC_LEN], p2[AUTH_MAC_LEN];
	struct enc e1, e2;

	strcpy(r.entity, "client.admin");
	enc_init(&e1);
	enc_init(&e2);
	auth_hello_req_encode(&r, &e1);
	r.modes = AUTH_MODE_CRC;	/* what a middleman would forward */
	auth_hello_req_encode(&r, &e2);
	cr_assert_eq(auth_transcript(e1.buf, e1.len, "s", 1, t1), 0);
	cr_assert_eq(auth_transcript(e2.buf, e2.len, "s", 1, t2), 0);
	cr_assert_eq(auth_client_proof(key, t1, p1), 0);
	cr_assert_eq(auth_client_proof(key, t2, p2), 0);
	cr_assert_not(auth_equal(p1, p2, AUTH_MAC_LEN));
	enc_free(&e1);
	enc_free(&e2);
}

Test(auth, reply_sealed_for_the_entity)
{
	struct auth_secrets s = osd_secrets(1, 1);
	struct auth_ticket t = a_ticket(AUTH_SVC_OSD);
	uint8_t key[AUTH_KEY_LEN], wrong[AUTH_KEY_LEN], *plain;
	struct auth_reply r = { .client_id = 77, .n = 1 }, got;
	struct enc sealed, e;
	size_t plen;

	cr_assert_eq(auth_random(key, sizeof(key)), 0);
	cr_assert_eq(auth_random(wrong, sizeof(wrong)), 0);
	seal(&t, &s.s[0], &sealed);
	r.g[0] = (struct auth_grant){ .service = AUTH_SVC_OSD, .expires = t.expires,
				      .ticket = sealed.buf, .ticket_len = sealed.len };
	memcpy(r.g[0].session_key, t.session_key, AUTH_KEY_LEN);
	enc_init(&e);
	cr_assert_eq(auth_reply_seal(key, &r, &e), 0);
	cr_assert_eq(auth_reply_open(wrong, e.buf, e.len, &got, &plain, &plen), -EACCES);
	cr_assert_null(plain);
	cr_assert_eq(auth_reply_open(key, e.buf, e.len, &got, &plain, &plen), 0);
	cr_assert_eq(got.client_id, 77);
	cr_assert_eq(got.n, 1);
	cr_assert_eq(got.g[0].ticket_len, sealed.len);
	cr_assert_eq(memcmp(got.g[0].ticket, sealed.buf, sealed.len), 0);
	cr_assert_eq(memcmp(got.g[0].session_key, t.session_key, AUTH_KEY_LEN), 0);
	auth_wipe(plain, plen);
	free(plain);
	enc_free(&e);
	enc_free(&sealed);
}

Test(auth, entity_names)
{
	uint8_t type;

	cr_assert_eq(auth_entity_check("mon.", &type), 0);
	cr_assert_eq(type, MSG_ENTITY_MON);
	cr_assert_eq(auth_entity_check("osd.12", &type), 0);
	cr_assert_eq(type, MSG_ENTITY_OSD);
	cr_assert_eq(auth_entity_check("mds.a", &type), 0);
	cr_assert_eq(auth_entity_check("client.admin", &type), 0);
	cr_assert_eq(type, MSG_ENTITY_CLIENT);
	cr_assert_eq(auth_entity_check("mon.a", NULL), -EINVAL);
	cr_assert_eq(auth_entity_check("osd.x", NULL), -EINVAL);
	cr_assert_eq(auth_entity_check("client.", NULL), -EINVAL);
	cr_assert_eq(auth_entity_check("client.a b", NULL), -EINVAL);
	cr_assert_eq(auth_entity_check("root", NULL), -EINVAL);
}

/* ---- keyrings ---- */

static char tmpdir[64];

static void mkdir_tmp(void)
{
	strcpy(tmpdir, "/tmp/atoll-test-auth-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(const char *file)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s", tmpdir, file);
	unlink(p);
	rmdir(tmpdir);
}

Test(auth, keyring_save_load_round_trip)
{
	struct keyring kr = { 0 }, back;
	uint8_t key[AUTH_KEY_LEN];
	char path[128], err[256];
	struct stat st;

	mkdir_tmp();
	snprintf(path, sizeof(path), "%s/keyring", tmpdir);
	cr_assert_eq(auth_random(key, sizeof(key)), 0);
	cr_assert_eq(keyring_set(&kr, "client.admin", key), 0);
	cr_assert_eq(keyring_set_caps(&kr, "client.admin", "mon", "allow *"), 0);
	cr_assert_eq(keyring_set(&kr, "osd.0", key), 0);
	cr_assert_eq(keyring_set(&kr, "bogus", key), -EINVAL);
	cr_assert_eq(keyring_save(path, &kr), 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(keyring_load(path, &back, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(back.n, 2);
	cr_assert_eq(memcmp(keyring_find(&back, "client.admin")->key, key, AUTH_KEY_LEN), 0);
	cr_assert_str_eq(keyring_find(&back, "client.admin")->caps[0].caps, "allow *");
	cr_assert_null(keyring_find(&back, "osd.1"));
	keyring_free(&kr);
	keyring_free(&back);
	rm_tmp("keyring");
}

Test(auth, keyring_remove_and_entry_write)
{
	struct keyring kr = { 0 }, back;
	uint8_t key[AUTH_KEY_LEN];
	char *text = NULL, err[256];
	size_t len = 0;
	FILE *f;

	memset(key, 0x11, sizeof(key));
	cr_assert_eq(keyring_set(&kr, "client.a", key), 0);
	cr_assert_eq(keyring_set(&kr, "client.b", key), 0);
	cr_assert_eq(keyring_set_caps(&kr, "client.b", "osd", "allow r"), 0);
	cr_assert_eq(keyring_set(&kr, "client.c", key), 0);
	cr_assert_eq(keyring_remove(&kr, "client.a"), 0);
	cr_assert_eq(keyring_remove(&kr, "client.a"), -ENOENT);
	cr_assert_eq(kr.n, 2);
	cr_assert_str_eq(kr.e[0].name, "client.b");	/* the order is kept */
	cr_assert_str_eq(kr.e[1].name, "client.c");

	/* without the key: no key line, the caps */
	f = open_memstream(&text, &len);
	keyring_entry_write(f, &kr.e[0], false);
	fclose(f);
	cr_assert_str_eq(text, "[client.b]\n\tcaps osd = allow r\n");
	free(text);
	/* with it: parses back to the same entry */
	f = open_memstream(&text, &len);
	keyring_entry_write(f, &kr.e[0], true);
	fclose(f);
	cr_assert_eq(keyring_parse(text, len, &back, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(back.n, 1);
	cr_assert_eq(memcmp(back.e[0].key, key, AUTH_KEY_LEN), 0);
	cr_assert_str_eq(back.e[0].caps[0].caps, "allow r");
	free(text);
	keyring_free(&back);
	keyring_free(&kr);
}

Test(auth, keyring_readable_by_others_refused)
{
	struct keyring kr = { 0 }, back;
	uint8_t key[AUTH_KEY_LEN] = { 0 };
	char path[128], err[512];

	mkdir_tmp();
	snprintf(path, sizeof(path), "%s/keyring", tmpdir);
	cr_assert_eq(keyring_set(&kr, "client.admin", key), 0);
	cr_assert_eq(keyring_save(path, &kr), 0);
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(keyring_load(path, &back, err, sizeof(err)), -EPERM);
	cr_assert(strstr(err, "readable by group or others"), "%s", err);
	cr_assert(strstr(err, "chmod 600"), "%s", err);
	cr_assert_eq(chmod(path, 0620), 0);
	cr_assert_eq(keyring_load(path, &back, err, sizeof(err)), -EPERM);
	cr_assert_eq(chmod(path, 0400), 0);
	cr_assert_eq(keyring_load(path, &back, err, sizeof(err)), 0, "%s", err);
	keyring_free(&kr);
	keyring_free(&back);
	rm_tmp("keyring");
}

Test(auth, keyring_parse_errors_name_the_line)
{
	static const char *bad[] = {
		"key = 00\n",
		"[client.a]\n",
		"[client.a]\nkey = zz\n",
		"[nope]\n",
		"[client.a]\nkey = " "0000000000000000000000000000000000000000000000000000000000000000"
		"\n[client.a]\n",
		"[client.a]\nfrobnicate = 1\n",
	};
	struct keyring kr;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(keyring_parse(bad[i], strlen(bad[i]), &kr, err, sizeof(err)),
			     -EINVAL, "case %zu", i);
		cr_assert(strlen(err) > 0);
		keyring_free(&kr);
	}
}
