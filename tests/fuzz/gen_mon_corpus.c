/*
 * gen_mon_corpus.c - writes the seed corpus of fuzz_mon.c: a map change
 * entry, a state snapshot (a map with a pool and an OSD, two request
 * ids), and each kind of MT_MON_RAFT frame, behind their selector bytes.
 *   gen-mon-corpus DIR
 */
#include <stdio.h>
#include <string.h>

#include "corpus_enc.h"
#include "encode.h"
#include "entry.h"

int main(int argc, char **argv)
{
	static const uint8_t fsid[16] = { 1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13 };
	struct mon_reqent ents[2] = { { 77, 1, 2 }, { 78, 5, 3 } };
	struct mon_rt_frame f;
	struct mon_entry ent;
	struct osdmap *m;
	struct enc e;
	int r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: gen-mon-corpus DIR\n");
		return 2;
	}
	enc_init(&e);
	memset(&ent, 0, sizeof(ent));
	ent.type = MON_ENTRY_MAP_CHANGE;
	ent.base = 4;
	ent.client = 77;
	ent.seq = 9;
	osdmap_inc_init(&ent.inc, 5);
	ent.inc.modified_ms = 1796050089000ull;
	ent.inc.has_ratios = true;
	ent.inc.nearfull_ratio = 8500;
	ent.inc.backfillfull_ratio = 9000;
	ent.inc.full_ratio = 9500;
	mon_entry_encode(&ent, &e);
	r |= corpus_put_enc(argv[1], "entry-map-change", 0, &e);
	{
		struct mon_entry trim = { .type = MON_ENTRY_TRIM, .first = 40 };

		mon_entry_encode(&trim, &e);
		r |= corpus_put_enc(argv[1], "entry-trim", 0, &e);
	}

	m = osdmap_new(fsid);
	if (!m)
		return 1;
	ent.inc.epoch = 1;
	osdmap_apply(m, &ent.inc);
	mon_state_blob_encode(m, ents, 2, &e);
	r |= corpus_put_enc(argv[1], "state", 1, &e);
	osdmap_free(m);
	osdmap_inc_clear(&ent.inc);

	memset(&f, 0, sizeof(f));
	f.kind = MON_RT_OPEN;
	f.from_dialer = 1;
	f.sid = 3;
	f.id = 2;
	snprintf(f.addr, sizeof(f.addr), "b@127.0.0.3:6789");
	mon_rt_frame_encode(&f, &e);
	r |= corpus_put_enc(argv[1], "frame-open", 2, &e);
	f.kind = MON_RT_DATA;
	mon_rt_frame_encode(&f, &e);
	r |= corpus_put_enc(argv[1], "frame-data", 2, &e);
	f.kind = MON_RT_CLOSE;
	f.from_dialer = 0;
	mon_rt_frame_encode(&f, &e);
	r |= corpus_put_enc(argv[1], "frame-close", 2, &e);
	memset(&f, 0, sizeof(f));
	f.kind = MON_RT_STATUS;
	f.from_dialer = 1;
	f.id = 3;
	f.applied = 120;
	f.epoch = 44;
	f.digest = 0x0f8d5f63ef717267ull;
	mon_rt_frame_encode(&f, &e);
	r |= corpus_put_enc(argv[1], "frame-status", 2, &e);
	enc_free(&e);
	return r ? 1 : 0;
}
