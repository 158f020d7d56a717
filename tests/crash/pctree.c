/*
 * pctree.c - rebuilds a whole folder after a simulated power cut, names
 * included: pc_rebuild_tree (pcdisk.h).
 *
 * pc_reconstruct (pcdisk.c) follows files that keep their names, which is
 * all the OSD store does.  Programs such as libraft create files, rename
 * them into place and unlink them, and make those changes durable with an
 * fsync of the folder.  Here every file is an "inode" (a scratch file in
 * OUT.work/): the files of the base folder, and every file the log creates.
 * A first pass follows the names as the program saw them, so that each
 * write, sync or size change lands on the inode its path named at that
 * moment; a second pass applies the content records with the same fates as
 * pc_reconstruct; then the names a power cut keeps (pcdisk.h) are laid out
 * in OUT, each pointing at its inode's rebuilt content.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pcdisk.h"

struct name {
	char *path;
	int ino;
};

struct names {
	struct name *v;
	size_t n, cap;
};

struct nsop {
	size_t rec;		/* index of the log record */
	uint16_t type;		/* PC_CREATE, PC_RENAME, PC_UNLINK */
	const char *from, *to;	/* to: PC_RENAME only */
	int ino;		/* the inode created or moved */
	bool keep;
};

struct tree {
	const struct pc_log *lg;
	char work[4200];
	int ninos, capinos;
	uint64_t *synced;	/* per inode: writes with seq below are durable */
	bool *blind;
	struct names live, dur;
	char **dirs;		/* folders of the base, relative */
	size_t ndirs, capdirs;
	struct { const char *path; uint64_t start; } dsync[256];
	unsigned ndsync;
	uint64_t synced_all;
	char *err;
	size_t errlen;
};

static struct tree *cur;	/* for nftw's callback */

static int nm_find(const struct names *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].path, path) == 0)
			return (int)i;
	return -1;
}

static int nm_get(const struct names *m, const char *path)
{
	int i = nm_find(m, path);

	return i < 0 ? -1 : m->v[i].ino;
}

static int nm_set(struct names *m, const char *path, int ino)
{
	int i = nm_find(m, path);

	if (i >= 0) {
		m->v[i].ino = ino;
		return 0;
	}
	if (m->n == m->cap) {
		size_t nc = m->cap ? 2 * m->cap : 64;
		struct name *nv = realloc(m->v, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		m->v = nv;
		m->cap = nc;
	}
	m->v[m->n].path = strdup(path);
	if (!m->v[m->n].path)
		return -ENOMEM;
	m->v[m->n++].ino = ino;
	return 0;
}

static void nm_del(struct names *m, const char *path)
{
	int i = nm_find(m, path);

	if (i < 0)
		return;
	free(m->v[i].path);
	m->v[i] = m->v[--m->n];
}

static void nm_free(struct names *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

static void ino_path(const struct tree *t, int ino, char *buf, size_t len)
{
	snprintf(buf, len, "%s/i%d", t->work, ino);
}

/* A new inode: src's content (NULL: empty).  Its number, or -1. */
static int ino_new(struct tree *t, const char *src)
{
	char p[4300];
	int fd, r;

	if (t->ninos == t->capinos) {
		int nc = t->capinos ? 2 * t->capinos : 256;
		uint64_t *ns = realloc(t->synced, (size_t)nc * sizeof(*ns));
		bool *nb;

		if (!ns)
			return -1;
		t->synced = ns;
		nb = realloc(t->blind, (size_t)nc * sizeof(*nb));
		if (!nb)
			return -1;
		t->blind = nb;
		t->capinos = nc;
	}
	ino_path(t, t->ninos, p, sizeof(p));
	if (src) {
		r = pc_copy_file(src, p);
		if (r < 0) {
			snprintf(t->err, t->errlen, "cannot copy '%s': %s", src, strerror(-r));
			return -1;
		}
	} else {
		fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			snprintf(t->err, t->errlen, "cannot create '%s': %s", p, strerror(errno));
			return -1;
		}
		close(fd);
	}
	t->synced[t->ninos] = 0;
	t->blind[t->ninos] = false;
	return t->ninos++;
}

static char base_root[4200];

static int scan_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	struct tree *t = cur;
	const char *rel = path + strlen(base_root);
	int ino;

	(void)sb;
	(void)ftw;
	if (*rel == '/')
		rel++;
	if (!*rel)
		return 0;
	if (type == FTW_D) {
		if (t->ndirs == t->capdirs) {
			size_t nc = t->capdirs ? 2 * t->capdirs : 16;
			char **nd = realloc(t->dirs, nc * sizeof(*nd));

			if (!nd)
				return -1;
			t->dirs = nd;
			t->capdirs = nc;
		}
		t->dirs[t->ndirs] = strdup(rel);
		return t->dirs[t->ndirs++] ? 0 : -1;
	}
	if (type != FTW_F)
		return 0;
	ino = ino_new(t, path);
	if (ino < 0 || nm_set(&t->live, rel, ino) < 0 || nm_set(&t->dur, rel, ino) < 0)
		return -1;
	return 0;
}

/* The folder part of a relative path ("." for a top-level name), in buf. */
static const char *dir_of(const char *path, char *buf, size_t len)
{
	const char *s = strrchr(path, '/');

	if (!s)
		return ".";
	snprintf(buf, len, "%.*s", (int)(s - path), path);
	return buf;
}

static uint64_t dir_synced(const struct tree *t, const char *path)
{
	char b[PC_PATH_MAX];
	const char *d = dir_of(path, b, sizeof(b));
	uint64_t best = t->synced_all;

	for (unsigned i = 0; i < t->ndsync; i++)
		if (strcmp(t->dsync[i].path, d) == 0 && t->dsync[i].start > best)
			best = t->dsync[i].start;
	return best;
}

static bool skipped(const char *const skip[], const char *path)
{
	for (unsigned i = 0; skip && skip[i]; i++)
		if (strcmp(skip[i], path) == 0)
			return true;
	return false;
}

/* The first pass: names as the program saw them.  rino[k] gets the inode
 * record k acts on (-1: none); ops gets the name changes. */
static int follow_names(struct tree *t, size_t nrec, int *rino, struct nsop *ops, size_t *nops)
{
	const struct pc_log *lg = t->lg;

	*nops = 0;
	for (size_t k = 0; k < nrec; k++) {
		const struct pc_rec *h = &lg->ents[k].h;
		const char *name = h->fid < PC_MAX_FILES ? lg->names[h->fid] : NULL;
		int ino;

		rino[k] = -1;
		if (h->type == PC_OPEN)
			continue;
		if (h->type == PC_BLIND && h->fid == PC_FID_ALL) {
			snprintf(t->err, t->errlen, "the shim's table of %u files overflowed: "
				 "the log misses writes", PC_MAX_FILES);
			return -1;
		}
		if (h->type == PC_SYNC && h->fid == PC_FID_ALL) {
			if (h->arg > t->synced_all)
				t->synced_all = h->arg;
			continue;
		}
		if (!name) {
			snprintf(t->err, t->errlen, "log record %zu names fid %u, never opened",
				 k, (unsigned)h->fid);
			return -1;
		}
		switch (h->type) {
		case PC_CREATE:
			ino = ino_new(t, NULL);
			if (ino < 0 || nm_set(&t->live, name, ino) < 0)
				return -1;
			ops[(*nops)++] = (struct nsop){ k, PC_CREATE, name, NULL, ino, false };
			break;
		case PC_RENAME: {
			const char *to = h->arg < PC_MAX_FILES ? lg->names[h->arg] : NULL;

			if (!to) {
				snprintf(t->err, t->errlen, "log record %zu renames to an unknown fid", k);
				return -1;
			}
			ino = nm_get(&t->live, name);
			nm_del(&t->live, name);
			if (ino >= 0 && nm_set(&t->live, to, ino) < 0)
				return -1;
			ops[(*nops)++] = (struct nsop){ k, PC_RENAME, name, to, ino, false };
			break;
		}
		case PC_UNLINK:
			nm_del(&t->live, name);
			ops[(*nops)++] = (struct nsop){ k, PC_UNLINK, name, NULL, -1, false };
			break;
		case PC_SYNC:
			if (lg->fid_flags[h->fid] & PC_F_DIR) {
				if (t->ndsync == sizeof(t->dsync) / sizeof(t->dsync[0])) {
					snprintf(t->err, t->errlen, "too many folders synced");
					return -1;
				}
				t->dsync[t->ndsync].path = name;
				t->dsync[t->ndsync++].start = h->arg;
				break;
			}
			ino = nm_get(&t->live, name);
			if (ino >= 0 && h->arg > t->synced[ino])
				t->synced[ino] = h->arg;
			break;
		default:
			rino[k] = nm_get(&t->live, name);
			break;
		}
	}
	return 0;
}

/* The second pass: content, with the fates of pc_reconstruct. */
static int apply_content(struct tree *t, size_t nrec, const int *rino, enum pc_fate fate,
			 uint64_t *rng, struct pc_stats *st)
{
	const struct pc_log *lg = t->lg;
	int fd = -1, fd_ino = -1, r = -1;

	for (size_t k = 0; k < nrec; k++) {
		const struct pc_entry *e = &lg->ents[k];
		const struct pc_rec *h = &e->h;
		int ino = rino[k], w = 0;
		unsigned choice;
		bool durable;

		st->records++;
		if (h->type != PC_WRITE && h->type != PC_TRUNC && h->type != PC_ZERO &&
		    h->type != PC_EXTEND && h->type != PC_BLIND)
			continue;
		if (ino < 0) {
			st->ignored++;
			continue;
		}
		if (h->type == PC_BLIND) {
			t->blind[ino] = true;
			continue;
		}
		durable = (h->flags & PC_F_DURABLE) || h->seq < t->synced[ino] ||
			  h->seq < t->synced_all;
		if (durable || fate == PC_FATE_KEEP_ALL)
			choice = 1;
		else if (fate == PC_FATE_LOSE_ALL)
			choice = 0;
		else if (fate == PC_FATE_NOT_WHOLE)
			choice = pc_below(rng, 2) ? 2 : 0;
		else
			choice = (unsigned)pc_below(rng, 3);
		if (durable)
			st->durable++;
		else if (choice == 0)
			st->lost++;
		else if (choice == 1)
			st->applied++;
		else
			st->torn++;
		if (choice == 0)
			continue;
		if (ino != fd_ino) {
			char p[4300];

			if (fd >= 0)
				close(fd);
			ino_path(t, ino, p, sizeof(p));
			fd = open(p, O_RDWR | O_CLOEXEC);
			fd_ino = ino;
			if (fd < 0) {
				snprintf(t->err, t->errlen, "cannot open '%s': %s", p, strerror(errno));
				goto out;
			}
		}
		switch (h->type) {
		case PC_WRITE:
			w = pc_put(fd, e->data, h->off, h->len, choice == 2, rng);
			break;
		case PC_ZERO:
			w = pc_put(fd, NULL, h->off, h->arg, choice == 2, rng);
			break;
		case PC_TRUNC:
			w = ftruncate(fd, (off_t)h->arg) < 0 ? -errno : 0;
			break;
		case PC_EXTEND: {
			struct stat sb;

			if (fstat(fd, &sb) < 0)
				w = -errno;
			else if ((uint64_t)sb.st_size < h->arg && ftruncate(fd, (off_t)h->arg) < 0)
				w = -errno;
			break;
		}
		}
		if (w < 0) {
			snprintf(t->err, t->errlen, "cannot apply log record %zu to '%s': %s", k,
				 lg->names[h->fid], strerror(-w));
			goto out;
		}
	}
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	return r;
}

static int mkdirs(const char *out, const char *rel)
{
	char p[4300];
	size_t n = strlen(out) + 1;

	snprintf(p, sizeof(p), "%s/%s", out, rel);
	for (char *s = p + n; *s; s++)
		if (*s == '/') {
			*s = '\0';
			if (pc_mkdir(p) < 0)
				return -1;
			*s = '/';
		}
	return pc_mkdir(p) < 0 ? -1 : 0;
}

/* The names the power cut keeps, laid out in out. */
static int lay_out(struct tree *t, struct nsop *ops, size_t nops, const char *out,
		   const char *const skip[], enum pc_fate fate, uint64_t *rng, struct pc_stats *st)
{
	size_t nunsynced = 0, cut, seen = 0;
	bool *placed;
	int r = -1;

	for (size_t i = 0; i < nops; i++) {
		uint64_t seq = t->lg->ents[ops[i].rec].h.seq;

		ops[i].keep = seq < dir_synced(t, ops[i].from) &&
			      (!ops[i].to || seq < dir_synced(t, ops[i].to));
		if (!ops[i].keep)
			nunsynced++;
	}
	if (fate == PC_FATE_KEEP_ALL)
		cut = nunsynced;
	else if (fate == PC_FATE_LOSE_ALL)
		cut = 0;
	else
		cut = (size_t)pc_below(rng, nunsynced + 1);
	for (size_t i = 0; i < nops; i++) {
		if (!ops[i].keep && seen++ < cut)
			ops[i].keep = true;
		if (!ops[i].keep) {
			st->names_lost++;
			continue;
		}
		st->names_kept++;
		switch (ops[i].type) {
		case PC_CREATE:
			if (nm_set(&t->dur, ops[i].from, ops[i].ino) < 0)
				return -1;
			break;
		case PC_RENAME:
			nm_del(&t->dur, ops[i].from);
			if (ops[i].ino >= 0 && nm_set(&t->dur, ops[i].to, ops[i].ino) < 0)
				return -1;
			break;
		case PC_UNLINK:
			nm_del(&t->dur, ops[i].from);
			break;
		}
	}

	if (mkdir(out, 0755) < 0) {
		snprintf(t->err, t->errlen, "cannot make '%s': %s", out, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < t->ndirs; i++)
		if (mkdirs(out, t->dirs[i]) < 0) {
			snprintf(t->err, t->errlen, "cannot make '%s/%s'", out, t->dirs[i]);
			return -1;
		}
	placed = calloc((size_t)t->ninos + 1, sizeof(*placed));
	if (!placed)
		return -1;
	for (size_t i = 0; i < t->dur.n; i++) {
		const struct name *nm = &t->dur.v[i];
		char src[4300], dst[4300], b[PC_PATH_MAX];
		const char *d = dir_of(nm->path, b, sizeof(b));

		if (skipped(skip, nm->path))
			continue;
		if (t->blind[nm->ino]) {
			snprintf(t->err, t->errlen, "the shim could not follow a change of '%s' "
				 "(shared writable mmap, rename from outside, aio sync overflow); "
				 "the power-cut model does not hold for this program", nm->path);
			goto out;
		}
		if (strcmp(d, ".") != 0 && mkdirs(out, d) < 0) {
			snprintf(t->err, t->errlen, "cannot make '%s/%s'", out, d);
			goto out;
		}
		ino_path(t, nm->ino, src, sizeof(src));
		snprintf(dst, sizeof(dst), "%s/%s", out, nm->path);
		if (placed[nm->ino]) {
			snprintf(t->err, t->errlen, "'%s' is a second name of a file", nm->path);
			goto out;
		}
		if (rename(src, dst) < 0) {
			snprintf(t->err, t->errlen, "cannot place '%s': %s", dst, strerror(errno));
			goto out;
		}
		placed[nm->ino] = true;
	}
	r = 0;
out:
	free(placed);
	return r;
}

int pc_rebuild_tree(const struct pc_log *lg, size_t nrec, const char *base, const char *out,
		    const char *const skip[], enum pc_fate fate, uint64_t *rng,
		    struct pc_stats *st, char *err, size_t errlen)
{
	struct tree t;
	struct nsop *ops = NULL;
	int *rino = NULL;
	size_t nops = 0;
	int r = -1;

	memset(&t, 0, sizeof(t));
	memset(st, 0, sizeof(*st));
	t.lg = lg;
	t.err = err;
	t.errlen = errlen;
	snprintf(err, errlen, "out of memory");
	if (nrec > lg->n)
		nrec = lg->n;
	snprintf(t.work, sizeof(t.work), "%s.work", out);
	if (pc_rmtree(t.work) < 0 || pc_mkdir(t.work) < 0) {
		snprintf(err, errlen, "cannot make '%s'", t.work);
		return -1;
	}
	rino = malloc((nrec + 1) * sizeof(*rino));
	ops = malloc((nrec + 1) * sizeof(*ops));
	if (!rino || !ops)
		goto out;
	snprintf(base_root, sizeof(base_root), "%s", base);
	cur = &t;
	if (nftw(base, scan_one, 16, FTW_PHYS) != 0) {
		if (!strcmp(err, "out of memory"))
			snprintf(err, errlen, "cannot read the base folder '%s'", base);
		goto out;
	}
	if (follow_names(&t, nrec, rino, ops, &nops) < 0)
		goto out;
	if (apply_content(&t, nrec, rino, fate, rng, st) < 0)
		goto out;
	if (lay_out(&t, ops, nops, out, skip, fate, rng, st) < 0)
		goto out;
	r = 0;
out:
	cur = NULL;
	pc_rmtree(t.work);
	for (size_t i = 0; i < t.ndirs; i++)
		free(t.dirs[i]);
	free(t.dirs);
	nm_free(&t.live);
	nm_free(&t.dur);
	free(t.synced);
	free(t.blind);
	free(rino);
	free(ops);
	return r;
}
