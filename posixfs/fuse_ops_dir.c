/*
 * fuse_ops_dir.c - atoll-fuse's FUSE operations on folder listings:
 * opendir, readdir, readdirplus, releasedir, fsyncdir.  A listing is a
 * snapshot taken at offset 0 (positions stay stable for the life of the
 * handle), from the leased listing when the cache has it, else from the
 * MDS page by page (then cached under the folder's lease); readdirplus
 * hands the kernel the leased records with the names.
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuse_cache.h"
#include "fuse_call.h"
#include "fuse_ops.h"
#include "fuse_perm.h"
#include "fuse_replay.h"

/* An open folder (fi->fh): the snapshot of its listing. */
struct dirh {
	struct lc_ent *ents;
	size_t n;
	fuse_ino_t parent;
	uint64_t gen;		/* the cached listing it copies (0: none) */
};

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (fo_perm()) {
		struct fp_cred c;
		fp_cred_init(&c, req);
		int ret = fo_perm_dir(req, &c, ino, FP_R, NULL);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	struct dirh *d = calloc(1, sizeof(*d));

	if (!d) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	fuse_reply_open(req, fi);
}

/* Is every entry's record in the cache?  (readdirplus answers from it.) */
static bool dir_attrs_cached(const struct lc_ent *ents, size_t n)
{
	struct mds_inode in;

	for (size_t i = 0; i < n; i++)
		if (lc_attr(ents[i].ino, &in) <= 0)
			return false;
	return true;
}

/* Takes a snapshot of the whole directory (positions stay stable for the
 * life of the handle; rewinddir takes a new one): the leased listing when
 * the cache has it (and, for readdirplus, every entry's record), else
 * from the MDS, with the records (cached under their leases) and the
 * listing cached under the directory's lease. */
static int dir_fill(fuse_req_t req, fuse_ino_t ino, struct dirh *d, bool plus)
{
	struct mds_req *rq;
	struct mds_reply rp;
	struct lc_info ci0, ci;
	size_t cap = 0;
	int ret = 0;

	lc_ents_free(d->ents, d->n);
	d->ents = NULL;
	d->n = 0;
	d->gen = 0;
	if (lc_dir_get(ino, &d->ents, &d->n, &d->gen) == 0) {
		if (!plus || dir_attrs_cached(d->ents, d->n))
			return 0;
		lc_ents_free(d->ents, d->n);
		d->ents = NULL;
		d->n = 0;
		d->gen = 0;
	}
	rq = malloc(sizeof(*rq));
	if (!rq)
		return -ENOMEM;
	fc_req_init(rq, req, MDS_OP_READDIR);
	rq->ino = ino;
	rq->max = MDS_READDIR_MAX;
	if (lc_on())
		rq->lflags |= MDS_L_PLUS;
	for (int page = 0;; page++) {
		ret = fc_call_ci(rq, &rp, page ? &ci : &ci0);
		if (ret)
			break;
		if (rp.nents && d->n + rp.nents > cap) {
			size_t ncap = cap ? cap * 2 : rp.nents;
			while (ncap < d->n + rp.nents)
				ncap *= 2;
			struct lc_ent *ne = realloc(d->ents, ncap * sizeof(*ne));
			if (!ne)
				ret = -ENOMEM;
			else {
				d->ents = ne;
				cap = ncap;
			}
		}
		for (uint32_t i = 0; !ret && i < rp.nents; i++) {
			struct lc_ent *e = &d->ents[d->n];
			e->name = strdup(rp.ents[i].name);
			if (!e->name) {
				ret = -ENOMEM;
				break;
			}
			e->ino = rp.ents[i].ino;
			e->mode = rp.ents[i].mode;
			d->n++;
		}
		if (!ret && rp.nents)
			snprintf(rq->cookie, sizeof(rq->cookie), "%s", rp.ents[rp.nents - 1].name);
		free(rp.ents);
		free(rp.plus);
		if (ret || !rp.more || !rp.nents)
			break;
	}
	free(rq);
	if (ret)
		return ret;
	/* cache a copy under the first page's lease (refused if anything
	 * changed the directory since that page arrived) */
	if (ci0.exp && fo_entry_timeout(&ci0, ino) > 0) {
		struct lc_ent *copy = calloc(d->n ? d->n : 1, sizeof(*copy));
		size_t i;
		for (i = 0; copy && i < d->n; i++) {
			copy[i] = d->ents[i];
			if (!(copy[i].name = strdup(d->ents[i].name)))
				break;
		}
		if (copy && i == d->n)
			d->gen = lc_dir_put(ino, copy, d->n, &ci0);
		else
			lc_ents_free(copy, i);
	}
	return 0;
}

static void dir_list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi, bool plus)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	char *buf;
	size_t used = 0;

	if (off == 0) {
		int ret = dir_fill(req, ino, d, plus);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	lc_kbar_enter();
	/* the snapshot's entries are still what the MDS leased while the
	 * listing it copies is cached (a revoke drops it) */
	double dleft = plus && d->gen ? lc_dir_left(ino, d->gen) : 0;
	for (size_t i = (size_t)off; i < d->n + 2; i++) {
		struct fuse_entry_param e;
		const char *name;
		memset(&e, 0, sizeof(e));
		if (i == 0) {
			name = ".";
			e.attr.st_ino = ino;
			e.attr.st_mode = S_IFDIR;
		} else if (i == 1) {
			name = "..";
			e.attr.st_ino = d->parent ? d->parent : FUSE_ROOT_ID;	/* the kernel answers ".." itself */
			e.attr.st_mode = S_IFDIR;
		} else {
			const struct lc_ent *de = &d->ents[i - 2];
			struct mds_inode in;
			double left;
			name = de->name;
			e.attr.st_ino = de->ino;
			e.attr.st_mode = de->mode;
			/* with a leased record the kernel gets the entry and its
			 * attributes (no lookup, no getattr); without, the name */
			if (dleft > 0 && (left = lc_attr(de->ino, &in)) > 0)
				fo_fill_entry(&e, &in, lc_kname(ino, name, dleft), left);
		}
		size_t need = plus ? fuse_add_direntry_plus(req, buf + used, size - used, name,
							    &e, (off_t)(i + 1))
				   : fuse_add_direntry(req, buf + used, size - used, name,
						       &e.attr, (off_t)(i + 1));
		if (need > size - used)
			break;
		used += need;
	}
	fuse_reply_buf(req, buf, used);
	lc_kbar_leave();
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	dir_list(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	dir_list(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;

	if (d) {
		lc_ents_free(d->ents, d->n);
		free(d);
	}
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	/* the entries this client made are journaled */
	fuse_reply_err(req, -fr_unsafe_wait_all());
}

void fo_dir_ops(struct fuse_lowlevel_ops *ops)
{
	ops->opendir = op_opendir;
	ops->readdir = op_readdir;
	ops->readdirplus = op_readdirplus;
	ops->releasedir = op_releasedir;
	ops->fsyncdir = op_fsyncdir;
}
