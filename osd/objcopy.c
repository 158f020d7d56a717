/*
 * objcopy.c - the copy of one whole object between two members of a PG,
 * the engine under log recovery (recovery.c), backfill (backfill.c) and
 * scrub's repair (scrub.c), and its receiving side (MT_PG_PUSH).
 *
 * An object goes chunk by chunk (size, attributes and omap with the
 * first, the object info with the last, the data in chunks of at most
 * OBJCOPY_CHUNK), either pushed from our store to a member or pulled from
 * a member into our store; each chunk is one store transaction on the
 * receiving side, answered or completed once durable, before the next
 * goes.  A missing object travels as a delete.  The callers decide what
 * to copy and when; this file only moves bytes and holds one of the OSD's
 * recovery slots (osd->rec_active, at most osd_recovery_max_active for
 * recovery and backfill together) per object in flight.  Everything runs
 * on the loop thread; a copy of an older interval (pg->peer_gen moved)
 * ends with -ESTALE.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "osd_metrics.h"
#include "objcopy.h"
#include "pg.h"
#include "store.h"

#define OBJCOPY_CHUNK		(8u << 20)
#define OBJCOPY_TIMEOUT_MS	60000

/* ---- one chunk: read on the source, applied on the receiver ---------------- */

struct kvlist {
	struct osd_rkv *v;
	uint32_t n, cap;
	int err;
};

static int kv_add(struct kvlist *l, const void *k, size_t klen, const void *val, size_t vlen)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 16;
		struct osd_rkv *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return l->err = -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	void *kc = malloc(klen ? klen : 1), *vc = malloc(vlen ? vlen : 1);

	if (!kc || !vc) {
		free(kc);
		free(vc);
		return l->err = -ENOMEM;
	}
	memcpy(kc, k, klen);
	memcpy(vc, val, vlen);
	l->v[l->n++] = (struct osd_rkv){ kc, (uint32_t)klen, vc, (uint32_t)vlen };
	return 0;
}

static void kv_drop(struct kvlist *l, const char *key)
{
	size_t klen = strlen(key);

	for (uint32_t i = 0; i < l->n; i++) {
		if (l->v[i].klen == klen && !memcmp(l->v[i].key, key, klen)) {
			free((void *)l->v[i].key);
			free((void *)l->v[i].val);
			l->v[i] = l->v[--l->n];
			return;
		}
	}
}

static void kv_free(struct kvlist *l)
{
	for (uint32_t i = 0; i < l->n; i++) {
		free((void *)l->v[i].key);
		free((void *)l->v[i].val);
	}
	free(l->v);
}

static int attr_cb(void *arg, const char *name, const void *val, size_t len)
{
	return kv_add(arg, name, strlen(name), val, len) ? 1 : 0;
}

static int omap_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	return kv_add(arg, key, klen, val, vlen) ? 1 : 0;
}

/*
 * Builds the message (type MT_PG_PUSH, kind) holding the chunk of oid at
 * off as our store has it now: flags, size, attrs + omap with the first
 * chunk, the bytes as data.  A missing object is a DELETE.
 */
static struct msg *chunk_msg(struct pg *pg, uint8_t kind, const char *oid, uint64_t off,
			     uint32_t *flags_out, int *err)
{
	struct osd *osd = pg->osd;
	struct osd_pg_push p = {
		.kind = kind,
		.pool = pg->pool,
		.pg = pg->pgid,
		.epoch = osd->map->epoch,
		.same_interval_since = pg->info.same_interval_since,
		.oid = oid,
		.oid_len = (uint32_t)strlen(oid),
		.off = off,
	};
	struct kvlist attrs = { 0 }, omap = { 0 };
	struct store_stat st;
	struct msg *m = NULL;
	void *buf = NULL;
	struct enc e;
	int r;

	r = store_stat(osd->store, pg->coll, oid, &st);
	if (r == -ENOENT) {
		p.flags = PGP_FIRST | PGP_LAST | PGP_DELETE;
		p.off = 0;
		r = 0;
	} else if (r == 0) {
		p.size = st.size;
		if (off > st.size)
			off = p.off = st.size;
		p.len = st.size - off < OBJCOPY_CHUNK ? st.size - off : OBJCOPY_CHUNK;
		if (off == 0) {
			p.flags |= PGP_FIRST;
			r = store_attrs(osd->store, pg->coll, oid, attr_cb, &attrs);
			if (!r || r == 1)
				r = attrs.err;
			if (!r) {
				r = store_omap_list(osd->store, pg->coll, oid, NULL, 0, 0, omap_cb,
						    &omap);
				r = r < 0 ? r : omap.err;
			}
		}
		if (off + p.len >= st.size)
			p.flags |= PGP_LAST;
		/* The object info (its version) goes with the last chunk only:
		 * a copy cut short leaves an object without one, which a
		 * backfill scan sees as different and copies again. */
		if (!r && (p.flags & PGP_FIRST) && !(p.flags & PGP_LAST))
			kv_drop(&attrs, OSD_OI_ATTR);
		if (!r && !(p.flags & PGP_FIRST) && (p.flags & PGP_LAST)) {
			void *val = NULL;
			size_t vlen = 0;

			if (store_getattr(osd->store, pg->coll, oid, OSD_OI_ATTR, &val, &vlen) == 0)
				r = kv_add(&attrs, OSD_OI_ATTR, strlen(OSD_OI_ATTR), val, vlen);
			free(val);
		}
		if (!r && p.len) {
			buf = malloc(p.len);
			if (!buf) {
				r = -ENOMEM;
			} else {
				int64_t n = store_read(osd->store, pg->coll, oid, off, p.len, buf);

				if (n < 0)
					r = (int)n;
				else if ((uint64_t)n < p.len)
					memset((char *)buf + n, 0, p.len - n);
			}
		}
	}
	if (r)
		goto out;
	p.nattrs = attrs.n;
	p.attrs = attrs.v;
	p.nomap = omap.n;
	p.omap = omap.v;
	enc_init(&e);
	osd_pg_push_encode(&p, &e);
	m = msg_new(MT_PG_PUSH, &e);
	enc_free(&e);
	if (!m) {
		r = -ENOMEM;
		goto out;
	}
	if (buf) {
		msg_set_data_ref(m, buf, p.len, free, buf);
		buf = NULL;
	}
	*flags_out = p.flags;
out:
	free(buf);
	kv_free(&attrs);
	kv_free(&omap);
	*err = r;
	return m;
}

/* Adds the chunk p to txn for pg's collection. */
static int chunk_to_txn(struct pg *pg, const struct osd_pg_push *p, const char *oid,
			struct store_txn *txn)
{
	char name[STORE_ATTR_NAME_MAX + 1];
	int r = 0;

	/* an object past the maximum size is refused here, before the store
	 * would fail the transaction and with it the PG (the decoder already
	 * keeps the chunk inside size) */
	if (p->size > pg->osd->object_max)
		return -EFBIG;
	if (p->flags & PGP_FIRST) {
		/* whatever is there goes, decided when the transaction
		 * applies: a store_stat() here raced with transactions queued
		 * before this one (one removed the object after the stat, the
		 * remove failed the whole push with ENOENT: a store error) */
		r = store_txn_remove_if_exists(txn, pg->coll, oid);
		if (r || (p->flags & PGP_DELETE))
			return r;
		r = store_txn_touch(txn, pg->coll, oid);
		if (!r)
			r = store_txn_truncate(txn, pg->coll, oid, p->size);
		for (uint32_t i = 0; !r && i < p->nomap; i++)
			r = store_txn_omap_set(txn, pg->coll, oid, p->omap[i].key,
					       p->omap[i].klen,
					       p->omap[i].val ? p->omap[i].val : "",
					       p->omap[i].vlen);
	}
	/* attributes come with the first chunk, the object info with the
	 * last (chunk_msg) */
	for (uint32_t i = 0; !r && i < p->nattrs && !(p->flags & PGP_DELETE); i++) {
		if (p->attrs[i].klen > STORE_ATTR_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, p->attrs[i].key, p->attrs[i].klen);
		name[p->attrs[i].klen] = 0;
		r = store_txn_setattr(txn, pg->coll, oid, name,
				      p->attrs[i].val ? p->attrs[i].val : "", p->attrs[i].vlen);
	}
	if (!r && p->len && !(p->flags & PGP_DELETE))
		r = store_txn_write(txn, pg->coll, oid, p->off, p->data, p->len, 0);
	return r;
}

/* ---- the primary: copying one object ----------------------------------------- */

/*
 * One object copied chunk by chunk, either pushed from our store to a
 * member (PUSH: each chunk is read here and sent; the reply is {rc}) or
 * pulled from a member into our store (PULL: each request names the
 * offset; the reply carries the chunk, applied here).  Both ways a chunk
 * is one store transaction on the receiving side, answered or completed
 * once durable, before the next chunk goes.  The op holds one of the
 * OSD's recovery slots until done() is called.
 */
struct objcopy {
	struct osd *osd;
	struct pg *pg;
	uint64_t gen;		/* pg->peer_gen it was started in */
	int32_t peer;
	bool pull;
	bool last;		/* the chunk in flight is the object's last */
	char *oid;
	uint64_t off;
	uint64_t bytes;		/* data copied so far (metrics) */
	void (*done)(void *arg, int r);
	void *arg;
};

static void copy_step(struct objcopy *op);

static void copy_free(struct objcopy *op)
{
	struct osd *osd = op->osd;

	osd->rec_active--;
	free(op->oid);
	free(op);
	osd_recovery_kick(osd);
}

static void slot_rested(void *arg)
{
	copy_free(arg);
}

/* r: 0 copied, -ESTALE the interval ended, another -errno a failure. */
static void copy_end(struct objcopy *op, int r)
{
	struct osd *osd = op->osd;

	if (r && r != -ESTALE)
		log_warn("recovery", "pg %u.%x: %s '%s' %s osd.%d failed: %s; retrying",
			 op->pg->pool, op->pg->pgid, op->pull ? "pulling" : "pushing", op->oid,
			 op->pull ? "from" : "to", op->peer, strerror(-r));
	if (!r)
		osd_metrics_copied(osd, op->bytes);
	op->done(op->arg, r);
	/* osd_recovery_sleep_ms: the slot rests before the next object */
	if (osd->rec_sleep_ms && !atomic_load(&osd->closing) &&
	    msgr_timer(osd->msgr, osd->rec_sleep_ms, slot_rested, op))
		return;
	copy_free(op);
}

static bool copy_live(const struct objcopy *op)
{
	return op->gen == op->pg->peer_gen && !op->pg->reloading;
}

struct pull_apply {
	struct objcopy *op;
	bool last;
};

static void pull_applied(void *arg, int r)
{
	struct pull_apply *pa = arg;
	struct objcopy *op = pa->op;
	bool last = pa->last;

	free(pa);
	if (r < 0) {
		pg_fail(op->pg, r);
		copy_end(op, -ESTALE);
	} else if (!copy_live(op)) {
		copy_end(op, -ESTALE);
	} else if (last) {
		copy_end(op, 0);
	} else {
		copy_step(op);
	}
}

/* A PULL_REPLY: apply its chunk to our store. */
static int pull_apply_chunk(struct objcopy *op, struct msg *reply)
{
	struct pg *pg = op->pg;
	struct osd_pg_push p;
	struct store_txn *txn;
	struct pull_apply *pa;
	struct dec d;
	int r;

	dec_init(&d, reply->front, reply->front_len);
	r = osd_pg_push_decode(&d, reply->data, reply->data_len, &p);
	if (r)
		return r;
	r = p.rc;
	if (!r && p.kind != PGP_PULL_REPLY)
		r = -EBADMSG;
	if (!r && !osd_space_admits(op->osd, p.len))
		r = -ENOSPC;	/* no room beside the grants (space.c): later */
	txn = r ? NULL : store_txn_new();
	pa = r ? NULL : malloc(sizeof(*pa));
	if (!r && (!txn || !pa))
		r = -ENOMEM;
	if (!r)
		r = chunk_to_txn(pg, &p, op->oid, txn);
	osd_pg_push_clear(&p);
	if (r) {
		store_txn_free(txn);
		free(pa);
		return r;
	}
	pa->op = op;
	pa->last = (p.flags & PGP_LAST) != 0;
	op->off = p.off + p.len;
	op->bytes += p.len;
	pg_queue_txn(pg, txn, pull_applied, pa);
	return 0;
}

static void copy_reply(void *arg, struct msg *reply, int err)
{
	struct objcopy *op = arg;
	int r = err;

	if (!copy_live(op)) {
		msg_free(reply);
		copy_end(op, -ESTALE);
		return;
	}
	if (reply && op->pull) {
		r = pull_apply_chunk(op, reply);
		msg_free(reply);
		if (r)
			copy_end(op, r);
		return;	/* pull_applied goes on */
	}
	r = osd_peermsg_rc_take(reply, err);
	if (r < 0)
		copy_end(op, r);
	else if (op->last)
		copy_end(op, 0);
	else
		copy_step(op);
}

/* Sends the next request: a chunk read from our store (push), or the
 * request for one (pull). */
static void copy_step(struct objcopy *op)
{
	struct pg *pg = op->pg;
	struct osd *osd = op->osd;
	struct msg_conn *c = osd_peer_conn(osd, op->peer);
	struct msg *m;
	int r = 0;

	if (!c) {
		copy_end(op, -ENOTCONN);
		return;
	}
	if (op->pull) {
		struct osd_pg_push p = {
			.kind = PGP_PULL,
			.pool = pg->pool,
			.pg = pg->pgid,
			.epoch = osd->map->epoch,
			.same_interval_since = pg->info.same_interval_since,
			.oid = op->oid,
			.oid_len = (uint32_t)strlen(op->oid),
			.off = op->off,
			.size = op->off,
		};
		struct enc e;

		enc_init(&e);
		osd_pg_push_encode(&p, &e);
		m = msg_new(MT_PG_PUSH, &e);
		enc_free(&e);
		r = m ? 0 : -ENOMEM;
	} else {
		uint32_t flags = 0;

		m = chunk_msg(pg, PGP_PUSH, op->oid, op->off, &flags, &r);
		op->last = (flags & PGP_LAST) != 0;
		op->off += OBJCOPY_CHUNK;
		if (m)
			op->bytes += m->data_len;
	}
	if (!m) {
		copy_end(op, r);
		return;
	}
	if (msg_call(c, m, OBJCOPY_TIMEOUT_MS, copy_reply, op) < 0)
		copy_end(op, -ENOTCONN);
}

int objcopy_start(struct pg *pg, int32_t peer, bool pull, const char *oid,
		  void (*done)(void *arg, int r), void *arg)
{
	struct objcopy *op = calloc(1, sizeof(*op));

	if (!op || !(op->oid = strdup(oid))) {
		free(op);
		return -ENOMEM;
	}
	op->osd = pg->osd;
	op->pg = pg;
	op->gen = pg->peer_gen;
	op->peer = peer;
	op->pull = pull;
	op->done = done;
	op->arg = arg;
	pg->osd->rec_active++;
	copy_step(op);
	return 0;
}

/* ---- the receiver ------------------------------------------------------------ */

struct reply_ctx {
	struct osd *osd;
	struct pg *pg;
	struct msg_conn *conn;
	struct msg *m;
	uint16_t type;
};

static void applied(void *arg, int r)
{
	struct reply_ctx *rc = arg;

	if (r < 0) {
		log_error("recovery", "pg %u.%x: applying recovered data failed: %s",
			  rc->pg->pool, rc->pg->pgid, strerror(-r));
		pg_fail(rc->pg, r);
	}
	osd_peermsg_reply_rc(rc->osd, rc->conn, rc->m, rc->type, r < 0 ? -EIO : 0);
	msg_free(rc->m);
	msg_conn_put(rc->conn);
	free(rc);
}

void objcopy_apply_and_reply(struct pg *pg, struct store_txn *txn, struct msg_conn *c,
			     struct msg *m, uint16_t type)
{
	struct reply_ctx *rc = malloc(sizeof(*rc));

	if (!rc) {
		store_txn_free(txn);
		osd_peermsg_reply_rc(pg->osd, c, m, type, -ENOMEM);
		msg_free(m);
		return;
	}
	rc->osd = pg->osd;
	rc->pg = pg;
	rc->conn = c;
	msg_conn_get(c);
	rc->m = m;
	rc->type = type;
	pg_queue_txn(pg, txn, applied, rc);
}

void objcopy_push_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	char oid[STORE_NAME_MAX + 1];
	struct osd_pg_push p;
	struct store_txn *txn;
	bool decoded;
	struct pg *pg;
	struct dec d;
	int r;

	dec_init(&d, m->front, m->front_len);
	r = osd_pg_push_decode(&d, m->data, m->data_len, &p);
	decoded = !r;
	if (!r && p.kind == PGP_PULL_REPLY)
		r = -EBADMSG;
	if (!osd_peermsg_admit(osd, c, m, r, p.epoch, p.pool, p.pg, "recovery", "recovery push", MT_PG_PUSH)) {
		if (decoded)
			osd_pg_push_clear(&p);
		return;
	}
	memcpy(oid, p.oid, p.oid_len);
	oid[p.oid_len] = 0;
	pg = osd_peermsg_pg(osd, p.pool, p.pg, p.same_interval_since, &r);
	if (p.kind == PGP_PULL) {
		uint32_t flags = 0;
		struct msg *rep = NULL;

		if (pg)
			rep = chunk_msg(pg, PGP_PULL_REPLY, oid, p.off, &flags, &r);
		if (!rep) {
			struct osd_pg_push e0 = { .kind = PGP_PULL_REPLY, .rc = r ? r : -EIO,
						  .oid = oid, .oid_len = p.oid_len };
			struct enc e;

			enc_init(&e);
			osd_pg_push_encode(&e0, &e);
			rep = msg_new(MT_PG_PUSH, &e);
			enc_free(&e);
		}
		if (rep)
			msg_reply(c, m, rep);
		osd_pg_push_clear(&p);
		msg_free(m);
		return;
	}
	if (pg && pg->is_primary)
		r = -EINVAL;
	/* room for it beside what we granted the primaries (space.c); the
	 * copier tries again later */
	if (!r && !osd_space_admits(osd, p.len))
		r = -ENOSPC;
	txn = r ? NULL : store_txn_new();
	if (!r && !txn)
		r = -ENOMEM;
	if (!r)
		r = chunk_to_txn(pg, &p, oid, txn);
	osd_pg_push_clear(&p);
	if (r) {
		store_txn_free(txn);
		osd_peermsg_reply_rc(osd, c, m, MT_PG_PUSH, r);
		msg_free(m);
		return;
	}
	objcopy_apply_and_reply(pg, txn, c, m, MT_PG_PUSH);
}
