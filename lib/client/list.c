/*
 * list.c - listing a pool's objects, PG by PG, and the listing cursor.
 *
 * Each PG is listed on its primary in name order with OSD_OP_LIST ("the
 * names after X, at most N"), so a listing needs no state on the OSDs and
 * survives primary changes: the position is just (pg, last name
 * returned).  An object that exists for the whole listing is in exactly
 * one PG and is returned once; objects created or removed meanwhile may
 * or may not appear.
 *
 * The cursor is that position as a string of at most 512 bytes with its
 * NUL: "<pg>:<name>" with the name percent-encoded (bytes outside
 * '!'..'~' and '%' as %XX), or, when that would not fit (a 400-byte name
 * of odd bytes), "<pg>*<name in base85>" (4 bytes -> 5 characters, a
 * partial group of n bytes -> n + 1), which always fits.
 */
#include "client.h"
#include "osdmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_BATCH	1000u
#define CURSOR_MAX	512u

struct atoll_list {
	struct atoll_ioctx io;		/* a copy: the list outlives nothing */
	uint32_t pg_num;
	uint32_t pg;
	char last[PROTO_OID_MAX + 1];	/* last name returned in pg */
	size_t last_len;
	struct atoll_kv_iter *batch;
	int more;			/* pg has names after the batch */
	bool fetched;			/* pg was asked at least once */
};

/* ---- the cursor ---- */

static const char b85[] =
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

static int b85_val(char ch)
{
	const char *p = ch ? strchr(b85, ch) : NULL;

	return p ? (int)(p - b85) : -1;
}

static bool pct_plain(unsigned char u)
{
	return u > ' ' && u <= '~' && u != '%';
}

int client_cursor_encode(uint32_t pg, const char *name, size_t len, char *buf,
			 size_t cap)
{
	char tmp[CURSOR_MAX + 16];
	size_t pos, need = 0;

	pos = (size_t)snprintf(tmp, sizeof(tmp), "%u", pg);
	for (size_t i = 0; i < len; i++)
		need += pct_plain((unsigned char)name[i]) ? 1 : 3;
	if (pos + 1 + need + 1 <= CURSOR_MAX) {
		tmp[pos++] = ':';
		for (size_t i = 0; i < len; i++) {
			unsigned char u = (unsigned char)name[i];

			if (pct_plain(u))
				tmp[pos++] = (char)u;
			else
				pos += (size_t)sprintf(tmp + pos, "%%%02X", u);
		}
	} else {
		tmp[pos++] = '*';
		for (size_t i = 0; i < len; i += 4) {
			size_t n = len - i < 4 ? len - i : 4;
			uint32_t v = 0;
			char g[5];

			for (size_t k = 0; k < 4; k++)
				v = v << 8 | (k < n ? (unsigned char)name[i + k] : 0);
			for (int k = 4; k >= 0; k--) {
				g[k] = b85[v % 85];
				v /= 85;
			}
			memcpy(tmp + pos, g, n + 1);
			pos += n + 1;
		}
	}
	tmp[pos] = '\0';
	if (pos + 1 > cap)
		return -ERANGE;
	memcpy(buf, tmp, pos + 1);
	return 0;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

int client_cursor_decode(const char *cursor, uint32_t *pg, char *name, size_t *len)
{
	const char *p = cursor;
	uint64_t v = 0;
	size_t n = 0;

	if (!cursor || strnlen(cursor, CURSOR_MAX) >= CURSOR_MAX)
		return -EINVAL;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > OSDMAP_PG_MAX)
			return -EINVAL;
	}
	if (*p == ':') {
		for (p++; *p; p++) {
			unsigned char u = (unsigned char)*p;
			int hi, lo;

			if (n >= PROTO_OID_MAX)
				return -EINVAL;
			if (u == '%') {
				hi = hexval(p[1]);
				lo = hi < 0 ? -1 : hexval(p[2]);
				if (lo < 0 || (hi == 0 && lo == 0))
					return -EINVAL;
				name[n++] = (char)(hi << 4 | lo);
				p += 2;
			} else if (pct_plain(u)) {
				name[n++] = (char)u;
			} else {
				return -EINVAL;
			}
		}
	} else if (*p == '*') {
		size_t clen = strlen(++p);

		if (clen % 5 == 1)
			return -EINVAL;
		for (size_t i = 0; i < clen; i += 5) {
			size_t g = clen - i < 5 ? clen - i : 5, nb = g - 1;
			uint64_t x = 0;

			for (size_t k = 0; k < 5; k++) {
				int d = k < g ? b85_val(p[i + k]) : 84;

				if (d < 0)
					return -EINVAL;
				x = x * 85 + (uint64_t)d;
			}
			if (x > UINT32_MAX)
				return -EINVAL;
			if (n + nb > PROTO_OID_MAX)
				return -EINVAL;
			for (size_t k = 0; k < nb; k++) {
				char ch = (char)(x >> (24 - 8 * k));

				if (!ch)
					return -EINVAL;
				name[n++] = ch;
			}
		}
	} else {
		return -EINVAL;
	}
	name[n] = '\0';
	*pg = (uint32_t)v;
	*len = n;
	return 0;
}

/* ---- listing ---- */

int atoll_list_open(struct atoll_ioctx *io, struct atoll_list **out, unsigned flags)
{
	const struct osdmap_pool *p;
	struct atoll_list *l;
	struct atoll_cluster *c;
	int r;

	if (!out)
		return atoll__error(-EINVAL, "atoll_list_open: out is NULL");
	*out = NULL;
	if (!io)
		return atoll__error(-EINVAL, "atoll_list_open: io is NULL");
	r = atoll__check_flags("atoll_list_open", flags, 0);
	if (r < 0)
		return r;
	c = io->c;
	if (!c->connected)
		return atoll__error(-ENOTCONN,
				    "atoll_list_open: the cluster handle is not connected");
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->io = *io;
	pthread_mutex_lock(&c->lock);
	p = osdmap_pool(c->map, io->pool);
	if (p)
		l->pg_num = p->pg_num;
	pthread_mutex_unlock(&c->lock);
	if (!p) {
		free(l);
		return -ENOENT;
	}
	*out = l;
	return 0;
}

/* Asks pg's primary for the names after l->last. */
static int list_fetch(struct atoll_list *l)
{
	struct atoll_completion *comp;
	struct client_req *req;
	struct atoll_op *op;
	struct osd_subop *s;
	int64_t r;

	atoll_kv_iter_free(l->batch);
	l->batch = NULL;
	l->more = 0;
	op = atoll_op_create(0);
	if (!op)
		return -ENOMEM;
	s = client_op_add(op, OSD_OP_LIST);
	s->name = l->last_len ? l->last : NULL;
	s->name_len = (uint32_t)l->last_len;
	s->len = LIST_BATCH;
	op->outs[0] = (struct client_out){ .kind = OUT_NAMES, .iter = &l->batch,
					   .more = &l->more };
	op->has_read = true;
	r = atoll_completion_create(NULL, NULL, NULL, &comp);
	if (r < 0) {
		atoll_op_release(op);
		return (int)r;
	}
	req = client_req_new(&l->io, NULL, op, true, comp);
	if (!req) {
		atoll_op_release(op);
		atoll_completion_release(comp);
		return -ENOMEM;
	}
	req->fixed_pg = true;
	req->pg = l->pg;
	r = client_submit(l->io.c, req);
	if (r == 0)
		r = atoll_completion_wait(comp);
	atoll_completion_release(comp);
	l->fetched = true;
	/* an empty batch ends the PG whatever the flag says: no busy loop */
	if (r >= 0 && atoll_kv_iter_count(l->batch) == 0)
		l->more = 0;
	return r < 0 ? (int)r : 0;
}

int atoll_list_next(struct atoll_list *l, const char **oid)
{
	const void *k;
	size_t klen;
	int r;

	if (!l || !oid)
		return -EINVAL;
	for (;;) {
		if (l->pg >= l->pg_num)
			return -ENOENT;
		if (l->batch && atoll_kv_iter_next(l->batch, &k, &klen, NULL, NULL) == 0) {
			if (!klen || klen > PROTO_OID_MAX || memchr(k, '\0', klen))
				return -EBADMSG;
			memcpy(l->last, k, klen);
			l->last[klen] = '\0';
			l->last_len = klen;
			*oid = l->last;
			return 0;
		}
		if (l->fetched && !l->more) {
			/* this PG is done: on to the next */
			l->pg++;
			l->last_len = 0;
			l->last[0] = '\0';
			l->fetched = false;
			atoll_kv_iter_free(l->batch);
			l->batch = NULL;
			continue;
		}
		r = list_fetch(l);
		if (r < 0)
			return r;
	}
}

int atoll_list_cursor(struct atoll_list *l, char *buf, size_t len)
{
	if (!l || !buf)
		return -EINVAL;
	return client_cursor_encode(l->pg, l->last, l->last_len, buf, len);
}

int atoll_list_seek(struct atoll_list *l, const char *cursor)
{
	char name[PROTO_OID_MAX + 1];
	uint32_t pg;
	size_t n;
	int r;

	if (!l)
		return -EINVAL;
	r = client_cursor_decode(cursor, &pg, name, &n);
	if (r < 0)
		return r;
	atoll_kv_iter_free(l->batch);
	l->batch = NULL;
	l->more = 0;
	l->fetched = false;
	l->pg = pg;
	memcpy(l->last, name, n + 1);
	l->last_len = n;
	return 0;
}

void atoll_list_close(struct atoll_list *l)
{
	if (!l)
		return;
	atoll_kv_iter_free(l->batch);
	free(l);
}
