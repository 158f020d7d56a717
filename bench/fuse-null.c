/* bench/fuse-null.c - the fastest FUSE file system this machine can run:
 * one file, "data", whose reads return zeros from memory and whose writes
 * are dropped.  It measures what the kernel's FUSE path alone costs (the
 * copies from and to /dev/fuse, the round trip per request, the
 * threads' wake-ups) with the same settings as atoll-fuse (1 MiB writes,
 * 4 MiB read-ahead, libfuse's multi-threaded loop), so that dd through
 * it is the ceiling any FUSE client reaches on this machine before it
 * does any work of its own (bench/fuse-ceiling.sh, doc/benchmarks.md).
 *
 * Beside "data", a namespace in memory: files and folders can be made,
 * listed and removed (their contents are dropped like data's), answered
 * with the timeouts atoll-fuse gives under leases, and no extended
 * attributes (getxattr answers ENODATA, as atoll-fuse does for a file
 * without any), so that fsbench's metadata workloads (touch, ls -l,
 * mkdir, rmdir, rm -rf) through it are the ceiling of those too: the
 * FUSE requests they cost and nothing else.
 *
 *   fuse-null MOUNTPOINT [-f] [-o OPTIONS]
 *
 * Not a test double: nothing in atoll uses it.
 */
#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NULL_INO 2
#define NULL_NAME "data"
#define NULL_ZEROS (1u << 20)
#define ENTRY_TIMEOUT 27.0	/* s: as atoll-fuse under a 30 s lease */
#define NEG_TIMEOUT 1.0		/* s: atoll-fuse's NEG_ENTRY_TIMEOUT */
#define NS_BUCKETS (1u << 20)

/* The namespace: (parent, name) -> node in a hash table, node by number
 * in a table; under ns_mu.  Removed nodes stay (numbers are not reused). */
struct node {
	fuse_ino_t ino, parent;
	mode_t mode;
	nlink_t nlink;
	uid_t uid;
	gid_t gid;
	struct timespec t;
	size_t kids;		/* names in it (folders) */
	struct node *hnext;
	char *name;		/* NULL once removed */
};
static pthread_mutex_t ns_mu = PTHREAD_MUTEX_INITIALIZER;
static struct node *ns_ht[NS_BUCKETS];
static struct node **ns_ino;	/* by number */
static size_t ns_n = NULL_INO + 1, ns_cap;

static const char zeros[NULL_ZEROS];
static pthread_mutex_t size_mu = PTHREAD_MUTEX_INITIALIZER;
static off_t file_size;	/* grows with the writes; under size_mu */

static void fill_attr(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return;
	}
	st->st_mode = S_IFREG | 0666;
	st->st_nlink = 1;
	pthread_mutex_lock(&size_mu);
	st->st_size = file_size;
	pthread_mutex_unlock(&size_mu);
	st->st_blocks = (st->st_size + 511) / 512;
}

static size_t ns_hash(fuse_ino_t parent, const char *name)
{
	size_t h = parent * 0x9e3779b97f4a7c15ull;

	while (*name)
		h = (h ^ (unsigned char)*name++) * 0x100000001b3ull;
	return h % NS_BUCKETS;
}

/* Under ns_mu. */
static struct node *ns_find(fuse_ino_t parent, const char *name)
{
	struct node *n = ns_ht[ns_hash(parent, name)];

	while (n && (n->parent != parent || strcmp(n->name, name)))
		n = n->hnext;
	return n;
}

static struct node *ns_get(fuse_ino_t ino)
{
	return ino > NULL_INO && ino < ns_n ? ns_ino[ino] : NULL;
}

static void node_attr(const struct node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_mode = n->mode;
	st->st_nlink = n->nlink;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_atim = st->st_mtim = st->st_ctim = n->t;
	st->st_blksize = 128 << 10;
}

/* The attributes of ino (under ns_mu): 0, or -ENOENT. */
static int ns_attr(fuse_ino_t ino, struct stat *st)
{
	struct node *n = ns_get(ino);

	if (ino == FUSE_ROOT_ID || ino == NULL_INO) {
		fill_attr(ino, st);
		return 0;
	}
	if (!n || !n->name)
		return -ENOENT;
	node_attr(n, st);
	return 0;
}

static void reply_node(fuse_req_t req, const struct node *n, struct fuse_file_info *fi)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	e.generation = 1;
	e.attr_timeout = ENTRY_TIMEOUT;
	e.entry_timeout = ENTRY_TIMEOUT;
	node_attr(n, &e.attr);
	if (fi)
		fuse_reply_create(req, &e, fi);
	else
		fuse_reply_entry(req, &e);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	if (parent == FUSE_ROOT_ID && !strcmp(name, NULL_NAME)) {
		e.ino = NULL_INO;
		e.attr_timeout = 1.0;
		e.entry_timeout = 1.0;
		fill_attr(e.ino, &e.attr);
		fuse_reply_entry(req, &e);
		return;
	}
	pthread_mutex_lock(&ns_mu);
	struct node *n = ns_find(parent, name);
	if (n) {
		reply_node(req, n, NULL);
	} else {
		e.entry_timeout = NEG_TIMEOUT;	/* a negative entry */
		fuse_reply_entry(req, &e);
	}
	pthread_mutex_unlock(&ns_mu);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	pthread_mutex_lock(&ns_mu);
	int ret = ns_attr(ino, &st);
	pthread_mutex_unlock(&ns_mu);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, ino == FUSE_ROOT_ID || ino == NULL_INO ? 1.0
					     : ENTRY_TIMEOUT);
}

/* create, mkdir: a new node (the caller's owner, its umask applied) */
static void make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		 struct fuse_file_info *fi)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct node *n = calloc(1, sizeof(*n));
	int err = 0;

	pthread_mutex_lock(&ns_mu);
	if (!n || !(n->name = strdup(name))) {
		err = ENOMEM;
	} else if (ns_find(parent, name) || (parent == FUSE_ROOT_ID && !strcmp(name, NULL_NAME))) {
		err = EEXIST;
	} else if (ns_n >= ns_cap) {
		size_t nc = ns_cap ? 2 * ns_cap : 4096;
		struct node **t = realloc(ns_ino, nc * sizeof(*t));
		if (!t)
			err = ENOMEM;
		else
			ns_ino = t, ns_cap = nc;
	}
	if (err) {
		pthread_mutex_unlock(&ns_mu);
		if (n)
			free(n->name);
		free(n);
		fuse_reply_err(req, err);
		return;
	}
	n->ino = ns_n;
	ns_ino[ns_n++] = n;
	n->parent = parent;
	n->mode = mode & ~ctx->umask;
	n->nlink = S_ISDIR(mode) ? 2 : 1;
	n->uid = ctx->uid;
	n->gid = ctx->gid;
	clock_gettime(CLOCK_REALTIME, &n->t);
	struct node *p = ns_get(parent);
	if (p)
		p->kids++;
	size_t h = ns_hash(parent, name);
	n->hnext = ns_ht[h];
	ns_ht[h] = n;
	reply_node(req, n, fi);
	pthread_mutex_unlock(&ns_mu);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	make(req, parent, name, S_IFREG | (mode & 07777), fi);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make(req, parent, name, S_IFDIR | (mode & 07777), NULL);
}

/* unlink, rmdir */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, bool dir)
{
	int err = 0;

	pthread_mutex_lock(&ns_mu);
	struct node *n = ns_find(parent, name);
	if (!n) {
		err = ENOENT;
	} else if (dir != S_ISDIR(n->mode)) {
		err = dir ? ENOTDIR : EISDIR;
	} else if (dir && n->kids) {
		err = ENOTEMPTY;
	}
	if (!err) {
		struct node **pp = &ns_ht[ns_hash(parent, name)];
		while (*pp != n)
			pp = &(*pp)->hnext;
		*pp = n->hnext;
		free(n->name);
		n->name = NULL;
		struct node *p = ns_get(parent);
		if (p)
			p->kids--;
	}
	pthread_mutex_unlock(&ns_mu);
	fuse_reply_err(req, err);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, false);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, true);
}

/* readdir and readdirplus: every name of the folder in one pass
 * (fsbench's folders are small enough for a scan of the table per call);
 * readdirplus gives each entry with its attributes and the timeouts of a
 * lookup, as atoll-fuse does, so that `ls -l` sends no lookups */
static void list_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	char *buf = malloc(size);
	size_t used = 0;
	struct fuse_entry_param e;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&ns_mu);
	for (size_t i = (size_t)off; i < ns_n; i++) {
		const char *name;
		memset(&e, 0, sizeof(e));
		if (i == 0 || i == 1) {
			/* e.ino stays 0: the kernel makes no entry for them */
			name = i ? ".." : ".";
			e.attr.st_ino = ino;
			e.attr.st_mode = S_IFDIR;
		} else if (i == NULL_INO) {
			if (ino != FUSE_ROOT_ID)
				continue;
			name = NULL_NAME;
			e.ino = NULL_INO;
			e.attr_timeout = e.entry_timeout = 1.0;
			fill_attr(NULL_INO, &e.attr);
		} else {
			const struct node *n = ns_ino[i];
			if (!n->name || n->parent != ino)
				continue;
			name = n->name;
			e.ino = n->ino;
			e.generation = 1;
			e.attr_timeout = e.entry_timeout = ENTRY_TIMEOUT;
			node_attr(n, &e.attr);
		}
		size_t len = plus ?
			fuse_add_direntry_plus(req, buf + used, size - used, name, &e, (off_t)i + 1) :
			fuse_add_direntry(req, buf + used, size - used, name, &e.attr, (off_t)i + 1);
		if (len > size - used)
			break;
		used += len;
	}
	pthread_mutex_unlock(&ns_mu);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)fi;
	list_dir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	list_dir(req, ino, size, off, true);
}

/* No extended attributes, answered as atoll-fuse answers a file without
 * any: `ls -l` asks for security.selinux and system.posix_acl_access of
 * every file, and a file system that supports them (atoll-fuse does)
 * gets those requests; one without getxattr would answer ENOSYS once
 * and the kernel would stop asking, a cheaper stream than atoll's. */
static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	(void)ino, (void)name, (void)size;
	fuse_reply_err(req, ENODATA);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

/* dd opens with O_TRUNC: the size goes back to 0 */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	if (ino != NULL_INO) {
		/* a node: its times (touch), mode; the rest is not kept */
		struct stat st;
		pthread_mutex_lock(&ns_mu);
		struct node *n = ns_get(ino);
		if (n && n->name) {
			if (to_set & (FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_ATIME_NOW))
				clock_gettime(CLOCK_REALTIME, &n->t);
			if (to_set & FUSE_SET_ATTR_MODE)
				n->mode = (n->mode & S_IFMT) | (attr->st_mode & 07777);
		}
		int ret = ns_attr(ino, &st);
		pthread_mutex_unlock(&ns_mu);
		if (ret)
			fuse_reply_err(req, -ret);
		else
			fuse_reply_attr(req, &st, ENTRY_TIMEOUT);
		return;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		pthread_mutex_lock(&size_mu);
		file_size = attr->st_size;
		pthread_mutex_unlock(&size_mu);
	}
	op_getattr(req, ino, fi);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	pthread_mutex_lock(&ns_mu);
	struct node *n = ns_get(ino);
	int err = ino == NULL_INO ? 0 : !n || !n->name ? ENOENT : S_ISDIR(n->mode) ? EISDIR : 0;
	pthread_mutex_unlock(&ns_mu);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	off_t end;

	(void)ino;
	(void)fi;
	pthread_mutex_lock(&size_mu);
	end = file_size;
	pthread_mutex_unlock(&size_mu);
	if (off >= end)
		size = 0;
	else if ((off_t)size > end - off)
		size = (size_t)(end - off);
	if (size > NULL_ZEROS)
		size = NULL_ZEROS;
	fuse_reply_buf(req, zeros, size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	(void)buf;
	(void)fi;
	pthread_mutex_lock(&size_mu);
	if (off + (off_t)size > file_size)
		file_size = off + (off_t)size;
	pthread_mutex_unlock(&size_mu);
	fuse_reply_write(req, size);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* as atoll-fuse's op_init */
	conn->max_write = 1u << 20;
	conn->max_readahead = 4u << 20;
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.fsync = op_fsync,
	.create = op_create,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.flush = op_flush,
	.release = op_release,
};

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co;
	struct fuse_session *se = NULL;
	int ret = 1;

	if (fuse_parse_cmdline(&args, &co) != 0)
		return 1;
	if (co.show_help || !co.mountpoint) {
		printf("usage: %s MOUNTPOINT [-f] [-o OPTIONS]\n"
		       "A FUSE file system with one file, 'data': reads give zeros, writes are\n"
		       "dropped; files and folders made beside it live in memory (contents\n"
		       "dropped).  The ceiling of any FUSE client here (bench/fuse-ceiling.sh).\n",
		       argv[0]);
		ret = co.show_help ? 0 : 2;
		goto out;
	}
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_destroy;
	if (fuse_session_mount(se, co.mountpoint) != 0)
		goto out_sig;
	if (fuse_daemonize(co.foreground) != 0)
		goto out_unmount;
	struct fuse_loop_config lcfg = { .clone_fd = co.clone_fd, .max_idle_threads = 16 };
	ret = fuse_session_loop_mt(se, &lcfg) ? 1 : 0;
out_unmount:
	fuse_session_unmount(se);
out_sig:
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
out:
	free(co.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
