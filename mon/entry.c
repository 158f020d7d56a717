/*
 * entry.c - encoders and decoders of the monitors' replicated bytes
 * (entry.h): log entries, state snapshots, MT_MON_RAFT frames.  Each
 * decoder takes a buffer and its length and fails cleanly (-EBADMSG) on
 * short, long or absurd input; tests/fuzz/fuzz_mon.c drives them.
 */
#include <errno.h>
#include <string.h>

#include "encode.h"
#include "entry.h"

#define STATE_MAGIC	0x31545341u	/* "AST1" */

void mon_entry_encode(const struct mon_entry *e, struct enc *out)
{
	size_t h = enc_begin(out, 1, 1);

	enc_u8(out, e->type);
	if (e->type == MON_ENTRY_TRIM) {
		enc_u64(out, e->first);
		enc_end(out, h);
		return;
	}
	enc_u64(out, e->base);
	enc_u64(out, e->client);
	enc_u64(out, e->seq);
	osdmap_inc_encode(&e->inc, out);
	enc_end(out, h);
}

int mon_entry_decode(const void *buf, size_t len, struct mon_entry *e)
{
	struct dec d, body;
	uint8_t ver;
	int r;

	memset(e, 0, sizeof(*e));
	osdmap_inc_init(&e->inc, 0);
	dec_init(&d, buf, len);
	if (dec_begin(&d, 1, &body, &ver) < 0)
		return -EBADMSG;
	e->type = dec_u8(&body);
	if (e->type == MON_ENTRY_TRIM) {
		e->first = dec_u64(&body);
		/* epoch 1 is the oldest there is: a trim to it drops nothing */
		if (body.err || e->first < 2 || dec_end(&d, &body) < 0)
			return -EBADMSG;
		return 0;
	}
	e->base = dec_u64(&body);
	e->client = dec_u64(&body);
	e->seq = dec_u64(&body);
	if (body.err || e->type != MON_ENTRY_MAP_CHANGE)
		return -EBADMSG;
	r = osdmap_inc_decode(&body, &e->inc);
	if (r < 0 || body.err || dec_end(&d, &body) < 0)
		return -EBADMSG;
	/* an incremental makes the epoch after the one it was made against */
	if (e->inc.epoch != e->base + 1 || e->base == UINT64_MAX)
		return -EBADMSG;
	return 0;
}

void mon_entry_clear(struct mon_entry *e)
{
	osdmap_inc_clear(&e->inc);
}

void mon_state_blob_encode(const struct osdmap *m, const struct mon_reqent *ents,
			   uint32_t n, struct enc *out)
{
	size_t h = enc_begin(out, 1, 1);

	enc_u32(out, STATE_MAGIC);
	osdmap_encode(m, out);
	enc_u32(out, n);
	for (uint32_t k = 0; k < n; k++) {
		enc_u64(out, ents[k].client);
		enc_u64(out, ents[k].seq);
		enc_u64(out, ents[k].epoch);
	}
	enc_end(out, h);
}

int mon_state_blob_decode(const void *buf, size_t len, struct osdmap **map,
			  struct mon_reqent *ents, uint32_t *n)
{
	struct dec d, body;
	uint8_t ver;
	int r;

	*map = NULL;
	*n = 0;
	dec_init(&d, buf, len);
	if (dec_begin(&d, 1, &body, &ver) < 0 || dec_u32(&body) != STATE_MAGIC)
		return -EBADMSG;
	r = osdmap_decode(&body, map);
	if (r < 0)
		return -EBADMSG;
	*n = dec_count(&body, MON_REQIDS_MAX, 24);
	for (uint32_t k = 0; k < *n && !body.err; k++) {
		ents[k].client = dec_u64(&body);
		ents[k].seq = dec_u64(&body);
		ents[k].epoch = dec_u64(&body);
	}
	if (body.err || dec_end(&d, &body) < 0) {
		osdmap_free(*map);
		*map = NULL;
		*n = 0;
		return -EBADMSG;
	}
	return 0;
}

void mon_rt_frame_encode(const struct mon_rt_frame *f, struct enc *out)
{
	enc_u8(out, f->kind);
	enc_u8(out, f->from_dialer);
	enc_u64(out, f->sid);
	if (f->kind == MON_RT_OPEN) {
		enc_u64(out, f->id);
		enc_str(out, f->addr);
	} else if (f->kind == MON_RT_STATUS) {
		enc_u64(out, f->id);
		enc_u64(out, f->applied);
		enc_u64(out, f->epoch);
		enc_u64(out, f->digest);
		enc_u64(out, f->wall_ms);
	}
}

int mon_rt_frame_decode(const void *buf, size_t len, struct mon_rt_frame *f)
{
	struct dec d;

	memset(f, 0, sizeof(*f));
	dec_init(&d, buf, len);
	f->kind = dec_u8(&d);
	f->from_dialer = dec_u8(&d);
	f->sid = dec_u64(&d);
	if (d.err || f->from_dialer > 1)
		return -EBADMSG;
	switch (f->kind) {
	case MON_RT_OPEN:
		f->id = dec_u64(&d);
		if (dec_str(&d, f->addr, MON_RT_ADDR_MAX) < 0 || f->id == 0 || !f->from_dialer)
			return -EBADMSG;
		break;
	case MON_RT_DATA:
	case MON_RT_CLOSE:
		break;
	case MON_RT_STATUS:
		f->id = dec_u64(&d);
		f->applied = dec_u64(&d);
		f->epoch = dec_u64(&d);
		f->digest = dec_u64(&d);
		if (dec_left(&d))	/* absent from an older monitor */
			f->wall_ms = dec_u64(&d);
		if (f->id == 0)
			return -EBADMSG;
		break;
	default:
		return -EBADMSG;
	}
	return d.err || dec_left(&d) ? -EBADMSG : 0;
}
