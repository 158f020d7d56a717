/*
 * clog_entry.c - the cluster log's lines in memory and its replicated
 * bytes (clog.h): the log entry that appends lines and the snapshot
 * section that carries them.  Pure, in the mon_entry library beside
 * entry.c, so tests/fuzz/fuzz_mon_clog.c and tests/mon link it alone.
 *
 *   entry:   "ATCLOGE1" section{u32 keep; u8 has_memo; [memo];
 *                               u32 n; n x {u64 stamp_ms; u8 sev; str text}}
 *   state:   "ATCLOGS1" section{u64 next_seq; u32 keep; memo;
 *                               u32 n; n x {u64 seq; u64 stamp_ms; u8 sev; str text}}
 *   memo:    str health; str pgs; u64 left
 *
 * A map-change entry starts with its section's version byte and the auth
 * and incarnation entries with their own tags, so none looks like
 * another.  Decoders refuse what apply could not keep: a bound out of
 * range, a severity it does not know, control characters in a text (a
 * terminal shows them), seqs that are not consecutive.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clog.h"
#include "encode.h"

#define CLOG_ENTRY_TAG	"ATCLOGE1"
#define CLOG_STATE_TAG	"ATCLOGS1"

const char *mon_clog_sev_name(uint8_t sev)
{
	static const char *const names[] = { "INF", "WRN", "ERR" };

	return sev <= MON_CLOG_ERR ? names[sev] : "???";
}

int mon_clog_init(struct mon_clog *c, uint32_t keep)
{
	memset(c, 0, sizeof(*c));
	c->next_seq = 1;
	if (keep < MON_CLOG_KEEP_MIN || keep > MON_CLOG_KEEP_MAX)
		return -EINVAL;
	c->lines = calloc(keep, sizeof(*c->lines));
	if (!c->lines)
		return -ENOMEM;
	c->keep = keep;
	return 0;
}

void mon_clog_free(struct mon_clog *c)
{
	free(c->lines);
	c->lines = NULL;
	c->n = c->head = c->keep = 0;
}

const struct mon_clog_line *mon_clog_at(const struct mon_clog *c, uint32_t k)
{
	return &c->lines[(c->head + k) % c->keep];
}

uint64_t mon_clog_first_seq(const struct mon_clog *c)
{
	return c->next_seq - c->n;
}

int mon_clog_set_keep(struct mon_clog *c, uint32_t keep)
{
	struct mon_clog_line *nl;
	uint32_t n, skip;

	if (keep < MON_CLOG_KEEP_MIN || keep > MON_CLOG_KEEP_MAX)
		return -EINVAL;
	if (keep == c->keep)
		return 0;
	nl = calloc(keep, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	n = c->n < keep ? c->n : keep;
	skip = c->n - n;		/* the oldest go */
	for (uint32_t k = 0; k < n; k++)
		nl[k] = *mon_clog_at(c, skip + k);
	free(c->lines);
	c->lines = nl;
	c->keep = keep;
	c->n = n;
	c->head = 0;
	return 0;
}

static void copy_text(char *dst, const char *src)
{
	size_t i;

	for (i = 0; i < MON_CLOG_TEXT_MAX && src[i]; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? ' ' : src[i];
	dst[i] = '\0';
}

void mon_clog_add(struct mon_clog *c, uint64_t stamp_ms, uint8_t sev, const char *text)
{
	struct mon_clog_line *l;

	if (c->n == c->keep) {
		l = &c->lines[c->head];
		c->head = (c->head + 1) % c->keep;
	} else {
		l = &c->lines[(c->head + c->n) % c->keep];
		c->n++;
	}
	l->seq = c->next_seq++;
	l->stamp_ms = stamp_ms;
	l->sev = sev <= MON_CLOG_ERR ? sev : MON_CLOG_ERR;
	copy_text(l->text, text);
}

/* ---- bytes ---------------------------------------------------------------- */

static void clog_memo_encode(const struct mon_clog_memo *m, struct enc *out)
{
	enc_str(out, m->health);
	enc_str(out, m->pgs);
	enc_u64(out, m->left);
}

static int clog_memo_decode(struct dec *d, struct mon_clog_memo *m)
{
	if (dec_str(d, m->health, MON_CLOG_MEMO_MAX) < 0 ||
	    dec_str(d, m->pgs, MON_CLOG_MEMO_MAX) < 0)
		return -EBADMSG;
	m->left = dec_u64(d);
	return d->err ? -EBADMSG : 0;
}

static bool text_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* A line's stamp, severity and text (the seq is the caller's). */
static int clog_line_decode(struct dec *d, struct mon_clog_line *l)
{
	l->stamp_ms = dec_u64(d);
	l->sev = dec_u8(d);
	if (dec_str(d, l->text, MON_CLOG_TEXT_MAX) < 0 || d->err || l->sev > MON_CLOG_ERR ||
	    !text_ok(l->text))
		return -EBADMSG;
	return 0;
}

void mon_clog_entry_encode(const struct mon_clog_entry *e, struct enc *out)
{
	uint32_t n = e->n < MON_CLOG_ENTRY_LINES_MAX ? e->n : MON_CLOG_ENTRY_LINES_MAX;
	size_t h;

	enc_raw(out, CLOG_ENTRY_TAG, 8);
	h = enc_begin(out, 1, 1);
	enc_u32(out, e->keep);
	enc_u8(out, e->has_memo ? 1 : 0);
	if (e->has_memo)
		clog_memo_encode(&e->memo, out);
	enc_u32(out, n);
	for (uint32_t i = 0; i < n; i++) {
		enc_u64(out, e->lines[i].stamp_ms);
		enc_u8(out, e->lines[i].sev);
		enc_str(out, e->lines[i].text);
	}
	enc_end(out, h);
}

int mon_clog_entry_decode(const void *buf, size_t len, struct mon_clog_entry *e)
{
	struct dec d, body;
	uint8_t ver, has_memo;

	memset(e, 0, sizeof(*e));
	if (len < 8 || memcmp(buf, CLOG_ENTRY_TAG, 8) != 0)
		return 0;
	dec_init(&d, (const uint8_t *)buf + 8, len - 8);
	if (dec_begin(&d, 1, &body, &ver) < 0)
		return -EBADMSG;
	e->keep = dec_u32(&body);
	has_memo = dec_u8(&body);
	if (body.err || has_memo > 1 || e->keep < MON_CLOG_KEEP_MIN ||
	    e->keep > MON_CLOG_KEEP_MAX)
		return -EBADMSG;
	e->has_memo = has_memo;
	if (has_memo && clog_memo_decode(&body, &e->memo) < 0)
		return -EBADMSG;
	e->n = dec_count(&body, MON_CLOG_ENTRY_LINES_MAX, 13);
	if (body.err)
		return -EBADMSG;
	for (uint32_t i = 0; i < e->n; i++)
		if (clog_line_decode(&body, &e->lines[i]) < 0)
			return -EBADMSG;
	if (dec_end(&d, &body) < 0)
		return -EBADMSG;
	return 1;
}

void mon_clog_state_encode(const struct mon_clog *c, struct enc *out)
{
	size_t h;

	enc_raw(out, CLOG_STATE_TAG, 8);
	h = enc_begin(out, 1, 1);
	enc_u64(out, c->next_seq);
	enc_u32(out, c->keep);
	clog_memo_encode(&c->memo, out);
	enc_u32(out, c->n);
	for (uint32_t k = 0; k < c->n; k++) {
		const struct mon_clog_line *l = mon_clog_at(c, k);

		enc_u64(out, l->seq);
		enc_u64(out, l->stamp_ms);
		enc_u8(out, l->sev);
		enc_str(out, l->text);
	}
	enc_end(out, h);
}

int mon_clog_state_decode(const void *buf, size_t len, struct mon_clog *c)
{
	struct mon_clog_memo memo;
	struct dec d, body;
	uint64_t next_seq;
	uint32_t keep, n;
	uint8_t ver;

	memset(c, 0, sizeof(*c));
	c->next_seq = 1;
	if (len < 8 || memcmp(buf, CLOG_STATE_TAG, 8) != 0)
		return 0;
	dec_init(&d, (const uint8_t *)buf + 8, len - 8);
	if (dec_begin(&d, 1, &body, &ver) < 0)
		return -EBADMSG;
	next_seq = dec_u64(&body);
	keep = dec_u32(&body);
	if (body.err || next_seq == 0 || next_seq == UINT64_MAX ||
	    keep < MON_CLOG_KEEP_MIN || keep > MON_CLOG_KEEP_MAX ||
	    clog_memo_decode(&body, &memo) < 0)
		return -EBADMSG;
	n = dec_count(&body, keep, 21);
	/* the lines kept are the last n before next_seq */
	if (body.err || n > next_seq - 1)
		return -EBADMSG;
	if (mon_clog_init(c, keep) < 0) {
		memset(c, 0, sizeof(*c));
		c->next_seq = 1;
		return -EBADMSG;
	}
	c->next_seq = next_seq - n;
	for (uint32_t k = 0; k < n; k++) {
		struct mon_clog_line l;
		uint64_t seq = dec_u64(&body);

		if (clog_line_decode(&body, &l) < 0 || seq != c->next_seq)
			goto out_bad;
		mon_clog_add(c, l.stamp_ms, l.sev, l.text);
	}
	if (dec_end(&d, &body) < 0)
		goto out_bad;
	c->memo = memo;
	return 1;
out_bad:
	mon_clog_free(c);
	memset(c, 0, sizeof(*c));
	c->next_seq = 1;
	return -EBADMSG;
}

size_t mon_state_section_len(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t body;

	if (len < 14)
		return 0;
	body = (uint64_t)p[10] | (uint64_t)p[11] << 8 | (uint64_t)p[12] << 16 |
	       (uint64_t)p[13] << 24;
	return 14 + body <= len ? (size_t)(14 + body) : 0;
}
