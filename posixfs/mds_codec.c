/*
 * mds_codec.c - the MDS's stored encodings, kept apart from the daemon so
 * that tests/fuzz (fuzz_mds_store.c) links them alone: a transaction's
 * journal body, a journal entry's frame, and the inode record of the
 * metadata pool.  All three are read back from objects that anyone with
 * access to the metadata pool can write, so every decoder here checks
 * lengths and counts and fails cleanly instead of trusting them.
 */
#include "mds_store.h"
#include "mds_txn.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "crc32c.h"
#include "encode.h"

/* ---- transactions (mds_txn.h) --------------------------------------- */

void mds_txn_init(struct mds_txn *t)
{
	memset(t, 0, offsetof(struct mds_txn, u));
	t->link[0] = t->link2[0] = '\0';
}

void mds_txn_encode(struct enc *e, const struct mds_txn *t)
{
	size_t h = enc_begin(e, 1, 1);

	enc_u32(e, (uint32_t)t->nu);
	for (int i = 0; i < t->nu; i++) {
		const struct mds_upd *u = &t->u[i];
		enc_u8(e, u->type);
		enc_u64(e, u->dir);
		enc_str(e, u->name);
		enc_u64(e, u->ino);
		enc_u32(e, u->mode);
		mds_inode_encode(e, &u->in);
		enc_u64(e, u->size);
		enc_u64(e, u->old_size);
	}
	enc_u64(e, t->link_ino);
	enc_str(e, t->link);
	enc_u64(e, t->client);
	enc_u64(e, t->reqid);
	enc_u64(e, t->res_ino);
	enc_blob(e, t->xval, t->xlen);
	enc_u64(e, t->link2_ino);	/* later than the first entries: optional */
	enc_str(e, t->link2);
	/* later still: the parents of the inodes put (not in their wire form) */
	enc_u32(e, (uint32_t)t->nu);
	for (int i = 0; i < t->nu; i++)
		enc_u64(e, t->u[i].in.parent);
	enc_end(e, h);
}

int mds_txn_decode(struct dec *d, struct mds_txn *t)
{
	struct dec b;

	mds_txn_init(t);
	if (dec_msg_begin(d, 1, &b))
		return d->err;
	t->nu = (int)dec_count(&b, MDS_TXN_UPDS, 1);
	for (int i = 0; !b.err && i < t->nu; i++) {
		struct mds_upd *u = &t->u[i];
		u->type = dec_u8(&b);
		u->dir = dec_u64(&b);
		dec_str(&b, u->name, MDS_NAME_MAX);
		u->ino = dec_u64(&b);
		u->mode = dec_u32(&b);
		mds_inode_decode(&b, &u->in);
		u->size = dec_u64(&b);
		u->old_size = dec_u64(&b);
	}
	t->link_ino = dec_u64(&b);
	dec_str(&b, t->link, MDS_PATH_MAX);
	t->client = dec_u64(&b);
	t->reqid = dec_u64(&b);
	t->res_ino = dec_u64(&b);
	if (dec_left(&b)) {
		size_t n = 0;
		const void *p = dec_blob(&b, &n, MDS_XATTR_MAX);
		if (p && n)
			memcpy(t->xval, p, n);
		t->xlen = (uint32_t)n;
	}
	if (dec_left(&b)) {
		t->link2_ino = dec_u64(&b);
		dec_str(&b, t->link2, MDS_PATH_MAX);
	}
	if (dec_left(&b)) {
		if (dec_u32(&b) != (uint32_t)t->nu)
			dec_fail(&b, -EBADMSG);
		for (int i = 0; !b.err && i < t->nu; i++)
			t->u[i].in.parent = dec_u64(&b);
	} else {
		/* an entry of an MDS before parents were in the records: it
		 * made an object for every directory (its `..` key) and did
		 * not mark the ones with entries: all may have one */
		for (int i = 0; i < t->nu; i++)
			if ((t->u[i].type == MDS_U_INODE_PUT || t->u[i].type == MDS_U_INODE_RM) &&
			    S_ISDIR(t->u[i].in.mode))
				t->u[i].in.flags |= MDS_INO_DIROBJ;
	}
	return dec_end(d, &b);
}

/* t as the queues keep it (struct mds_packed): 0 or -ENOMEM. */
int mds_txn_pack(const struct mds_txn *t, struct mds_packed *p)
{
	struct enc e;

	enc_init(&e);
	mds_txn_encode(&e, t);
	p->body = enc_take(&e, &p->len);
	p->aseq = t->aseq;
	if (!p->body) {
		enc_free(&e);
		return -ENOMEM;
	}
	return 0;
}

/* The txn p holds, into t (its own encoding: it decodes). */
int mds_txn_unpack(const struct mds_packed *p, struct mds_txn *t)
{
	struct dec d;

	dec_init(&d, p->body, p->len);
	int ret = mds_txn_decode(&d, t);
	t->aseq = p->aseq;
	return ret;
}

/* ---- journal entries (mds_txn.h) ------------------------------------ */

void mds_journal_frame(struct enc *e, const uint8_t *body, size_t blen, uint64_t seq)
{
	uint8_t hdr[MDS_JOURNAL_FRAME_HDR];
	uint32_t len = (uint32_t)blen;
	memcpy(hdr, &len, 4);
	memcpy(hdr + 8, &seq, 8);
	uint32_t crc = atoll__crc32c(0, hdr + 8, 8);
	crc = atoll__crc32c(crc, body, blen);
	memcpy(hdr + 4, &crc, 4);
	enc_raw(e, hdr, sizeof(hdr));
	enc_raw(e, body, blen);
}

int mds_journal_entry_decode(const uint8_t *buf, size_t n, const uint8_t **body,
			     size_t *len, uint64_t *seq)
{
	uint32_t l, crc;

	if (n < MDS_JOURNAL_FRAME_HDR)
		return -EBADMSG;
	memcpy(&l, buf, 4);
	memcpy(&crc, buf + 4, 4);
	memcpy(seq, buf + 8, 8);
	/* l is at most 2^32 - 1: the sum cannot wrap a size_t */
	if ((size_t)l > n - MDS_JOURNAL_FRAME_HDR ||
	    atoll__crc32c(0, buf + 8, (size_t)l + 8) != crc)
		return -EBADMSG;
	*body = buf + MDS_JOURNAL_FRAME_HDR;
	*len = l;
	return 0;
}

/* ---- inode records (mds_store.h) ------------------------------------ */

/* An inode record: the inode (its wire form), the symlink target, then
 * the parent of a directory.  A record written before the parent was
 * stored there has none: its directory kept it in the `..` key of its
 * object, which then may exist even if the directory never had entries
 * (the flag MDS_INO_DIROBJ says so; mds_cache_dir_parent reads the key). */
void mds_store_record_encode(struct enc *e, const struct mds_inode *in, const char *link)
{
	mds_inode_encode(e, in);
	enc_str(e, link ? link : "");
	enc_u64(e, in->parent);
}

int mds_store_record_decode(const void *v, size_t vl, struct mds_inode *in, char *link)
{
	struct dec d;

	dec_init(&d, v, vl);
	mds_inode_decode(&d, in);
	dec_str(&d, link, MDS_PATH_MAX);
	if (dec_left(&d))
		in->parent = dec_u64(&d);
	else if (S_ISDIR(in->mode))
		in->flags |= MDS_INO_DIROBJ;
	return d.err;
}
