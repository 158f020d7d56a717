/*
 * gen_mon_auth_corpus.c - writes the seeds of corpus/mon_auth/ (run by
 * hand: gen-mon-auth-corpus DIR): one of each auth entry and a state
 * section, each behind the selector byte fuzz_mon_auth.c reads.
 */
#include <stdio.h>
#include <string.h>

#include "auth_entry.h"
#include "encode.h"

static int put(const char *dir, const char *name, uint8_t sel, const struct enc *e)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return 1;
	fputc(sel, f);
	fwrite(e->buf, 1, e->len, f);
	return fclose(f) != 0;
}

static void ents(struct keyring *kr)
{
	uint8_t key[AUTH_KEY_LEN];

	memset(key, 0x5a, sizeof(key));
	keyring_set(kr, "client.admin", key);
	keyring_set_caps(kr, "client.admin", "mon", "allow *");
	keyring_set_caps(kr, "client.admin", "osd", "allow *");
	keyring_set(kr, "osd.0", key);
	keyring_set_caps(kr, "osd.0", "mon", "profile osd");
}

int main(int argc, char **argv)
{
	struct mon_auth_entry e;
	struct mon_auth_state s;
	struct enc out;
	int bad = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (uint8_t op = MON_AUTH_PUT; op <= MON_AUTH_SECRET; op++) {
		static const char *names[] = { "", "put", "rm", "boot", "idrange", "secret" };

		memset(&e, 0, sizeof(e));
		e.op = op;
		if (op == MON_AUTH_PUT || op == MON_AUTH_BOOT)
			ents(&e.ents);
		snprintf(e.name, sizeof(e.name), "client.u");
		memset(e.idkey, 7, sizeof(e.idkey));
		e.range = (struct mon_auth_range){ 2, 1, 65537 };
		e.now = 1700000000;
		e.prev_until = op == MON_AUTH_PUT ? 1700000060 : 0;
		e.service = AUTH_SVC_OSD;
		e.secret = (struct mon_auth_gen){ .gen = 1, .start = 1700000000 };
		enc_init(&out);
		mon_auth_entry_encode(&e, &out);
		bad |= put(argv[1], names[op], 1, &out);
		enc_free(&out);
		mon_auth_entry_clear(&e);
	}
	memset(&s, 0, sizeof(s));
	s.booted = true;
	s.id_next = 65537;
	s.nranges = 1;
	s.ranges[0] = (struct mon_auth_range){ 1, 1, 65537 };
	s.svc[0].n = 2;
	s.svc[0].g[0].gen = 1;
	s.svc[0].g[1].gen = 2;
	ents(&s.ents);
	s.nprev = 1;
	snprintf(s.prev[0].name, sizeof(s.prev[0].name), "client.admin");
	s.prev[0].until = 1700000060;
	enc_init(&out);
	mon_auth_state_encode(&s, &out);
	bad |= put(argv[1], "state", 0, &out);
	enc_free(&out);
	keyring_free(&s.ents);
	return bad;
}
