/* bench/fuse-null.c - the fastest FUSE file system this machine can run:
 * one file, "data", whose reads return zeros from memory and whose writes
 * are dropped.  It measures what the kernel's FUSE path alone costs (the
 * copies from and to /dev/fuse, the round trip per request, the
 * threads' wake-ups) with the same settings as atoll-fuse (1 MiB writes,
 * 4 MiB read-ahead, libfuse's multi-threaded loop), so that dd through
 * it is the ceiling any FUSE client reaches on this machine before it
 * does any work of its own (bench/fuse-ceiling.sh, doc/benchmarks.md).
 *
 *   fuse-null MOUNTPOINT [-f] [-o OPTIONS]
 *
 * Not a test double: nothing in atoll uses it.
 */
#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NULL_INO 2
#define NULL_NAME "data"
#define NULL_ZEROS (1u << 20)

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

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, NULL_NAME)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = NULL_INO;
	e.attr_timeout = 1.0;
	e.entry_timeout = 1.0;
	fill_attr(e.ino, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != NULL_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(ino, &st);
	fuse_reply_attr(req, &st, 1.0);
}

/* dd opens with O_TRUNC: the size goes back to 0 */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	if (ino != NULL_INO) {
		fuse_reply_err(req, EPERM);
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
	if (ino != NULL_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
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
		       "dropped.  The ceiling of any FUSE client here (bench/fuse-ceiling.sh).\n",
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
