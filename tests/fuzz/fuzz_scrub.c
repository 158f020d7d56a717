/*
 * fuzz_scrub.c - libFuzzer target for the deep scrub messages
 * (lib/scrub_proto.c): MT_OSD_SCRUB's request and reply (from anyone that
 * connects to an OSD, and from the OSD to the CLI), MT_PG_SCRUB's
 * request and scrub map (between OSDs), the scrub stamps (a PG meta
 * object's value) and MT_OSD_PG_QUERY's request and reply.
 *
 * The first input byte picks the decoder, the rest is the bytes.  A
 * decoder must fail cleanly or succeed; what decodes must re-encode to
 * bytes that decode again and re-encode to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "roundtrip.h"
#include "scrub_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dec d;

	if (size < 1)
		return 0;
	dec_init(&d, data + 1, size - 1);
	switch (data[0] % 7) {
	case 0: {
		struct osd_scrub_req r;

		if (osd_scrub_req_decode(&d, &r) == 0)
			FUZZ_ROUND_TRIP(struct osd_scrub_req, &r, osd_scrub_req_encode,
					osd_scrub_req_decode, FUZZ_NO_CLEAR);
		break;
	}
	case 1: {
		struct osd_scrub_reply r;

		if (osd_scrub_reply_decode(&d, &r) == 0) {
			for (uint32_t i = 0; i < r.nerrors; i++)
				if (memchr(r.errors[i].oid, 0, sizeof(r.errors[i].oid)) == NULL)
					abort();
			FUZZ_ROUND_TRIP(struct osd_scrub_reply, &r, osd_scrub_reply_encode,
					osd_scrub_reply_decode, osd_scrub_reply_clear);
			osd_scrub_reply_clear(&r);
		}
		break;
	}
	case 2: {
		struct pg_scrub_req r;

		if (pg_scrub_req_decode(&d, &r) == 0)
			FUZZ_ROUND_TRIP(struct pg_scrub_req, &r, pg_scrub_req_encode,
					pg_scrub_req_decode, FUZZ_NO_CLEAR);
		break;
	}
	case 4: {
		struct scrub_stamps s;

		if (scrub_stamps_decode(&d, &s) == 0)
			FUZZ_ROUND_TRIP(struct scrub_stamps, &s, scrub_stamps_encode,
					scrub_stamps_decode, FUZZ_NO_CLEAR);
		break;
	}
	case 5: {
		struct pg_query_req r;

		if (pg_query_req_decode(&d, &r) == 0)
			FUZZ_ROUND_TRIP(struct pg_query_req, &r, pg_query_req_encode,
					pg_query_req_decode, FUZZ_NO_CLEAR);
		break;
	}
	case 6: {
		struct pg_query_reply *r = malloc(sizeof(*r));

		if (r && pg_query_reply_decode(&d, r) == 0) {
			if (r->npeers > PGQ_PEERS_MAX || r->ntargets > PGQ_TARGETS_MAX ||
			    r->nbad > PGQ_BAD_MAX || r->nup > OSDMAP_SIZE_MAX ||
			    r->nacting > OSDMAP_SIZE_MAX ||
			    !memchr(r->state_name, 0, sizeof(r->state_name)))
				abort();
			{
				struct pg_query_reply *r2 = malloc(sizeof(*r2));

				if (!r2)
					abort();
				FUZZ_ROUND_TRIP_INTO(r, r2, pg_query_reply_encode,
						     pg_query_reply_decode, FUZZ_NO_CLEAR);
				free(r2);
			}
		}
		free(r);
		break;
	}
	case 3: {
		struct pg_scrub_map m;

		if (pg_scrub_map_decode(&d, &m) == 0) {
			for (uint32_t i = 0; i < m.n; i++)
				if (!m.objs[i].oid || !m.objs[i].oid[0] ||
				    (i && strcmp(m.objs[i - 1].oid, m.objs[i].oid) >= 0))
					abort();
			FUZZ_ROUND_TRIP(struct pg_scrub_map, &m, pg_scrub_map_encode,
					pg_scrub_map_decode, pg_scrub_map_clear);
			pg_scrub_map_clear(&m);
		}
		break;
	}
	}
	return 0;
}
