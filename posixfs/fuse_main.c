/*
 * fuse_main.c - atoll-fuse: mounts an atoll file system with libfuse3's
 * low-level (inode) API, multi-threaded.  This file reads the options
 * and atoll.conf, starts the pieces in their order and stops them in
 * theirs; doc/fs-design-client.md describes the design (its "Pieces"
 * lists the files), doc/daemons.md the options.
 *
 * The pieces: metadata goes to atoll-mds, one call per operation
 * (fuse_call.c); a change the MDS answered before it journaled it is
 * kept until the MDS says it is safe, and resent after a restart
 * (fuse_replay.c); in a folder this mount holds exclusively, creates and
 * removals are answered here and sent behind (fuse_here.c, with the
 * inode numbers of fuse_grants.c); clean closes go in batches
 * (fuse_close.c).  The FUSE operations live by family in fuse_ops*.c,
 * served by atoll-fuse's own request loop (fuse_loop.c); permissions are
 * checked by the kernel, or with -o fuse_perms here (fuse_perm.c).  File
 * data goes straight to the OSDs: block B of inode I is object "I.B" (16
 * hex digits each) of the data pool, 4 MiB blocks: fuse_data.c, with
 * write-back and read-ahead; flush (every close), fsync and release push
 * the largest size this client wrote to the MDS (the file size is the
 * MDS's) and return once the OSDs have the data durable.  Close-to-open
 * consistency: a file's page cache and read-ahead are dropped at open.
 * Metadata the MDS leased (fuse_cache.c) is answered from the cache and
 * the kernel keeps it for the lease's time; the MDS revokes a lease
 * before another client changes what it covers (MT_MDS_NOTIFY), and the
 * cache and the kernel drop it.  Without leases (-o nolease, or an MDS
 * with them off) the kernel caches entries and attributes for 1 s.  At
 * unmount the MDS and the OSDs get a bounded time to take what this
 * client still holds (fuse_unmount.c).
 *
 * The command line is the one mount.fuse3 gives a helper, so that
 * /etc/fstab and `mount -t fuse.atoll-fuse` work (doc/fs.md, "fstab"):
 * an optional SOURCE before the mount point (`atoll`, `atoll:PATH` for
 * a directory of the file system, `none` or empty) and mount(8)'s
 * options (rw, dev, suid, noatime, ...) among ours in -o, which libfuse
 * takes for the kernel.
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atoll/atoll.h>

#include "config.h"
#include "fault.h"
#include "fuse_cache.h"
#include "fuse_call.h"
#include "fuse_close.h"
#include "fuse_daemon.h"
#include "fuse_data.h"
#include "fuse_here.h"
#include "fuse_loop.h"
#include "fuse_ops.h"
#include "fuse_perm.h"
#include "fuse_replay.h"
#include "fuse_unmount.h"
#include "log.h"

#define FUSE_MAX_THREADS 10u	/* FUSE workers at most (libfuse's default too) */

struct opts {
	char *conf, *mon, *mds;
	char *root;		/* --root PATH, -o subdir=PATH */
	char *log, *log_level;	/* -o log=FILE, log_level=LVL */
	int nolease, kernel_perms, fuse_perms, sync_close, noasync_rm, noasync_create;
	int writeback_mb, readahead_mb, kernel_ra_kb;
	int blksize;
	int gather_us;		/* -1: atoll.conf's fuse_gather_us */
	char *nonopt[2];	/* [SOURCE] MOUNTPOINT, as given */
	int nnonopt;		/* how many were given (more than 2: an error) */
};

static const struct fuse_opt opt_spec[] = {
	{ "conf=%s", offsetof(struct opts, conf), 0 },
	{ "mon=%s", offsetof(struct opts, mon), 0 },
	{ "mds=%s", offsetof(struct opts, mds), 0 },
	{ "subdir=%s", offsetof(struct opts, root), 0 },
	{ "--root=%s", offsetof(struct opts, root), 0 },
	{ "--root %s", offsetof(struct opts, root), 0 },
	{ "nolease", offsetof(struct opts, nolease), 1 },
	{ "kernel_perms", offsetof(struct opts, kernel_perms), 1 },
	{ "fuse_perms", offsetof(struct opts, fuse_perms), 1 },
	{ "sync_close", offsetof(struct opts, sync_close), 1 },
	{ "noasync_rm", offsetof(struct opts, noasync_rm), 1 },
	{ "noasync_create", offsetof(struct opts, noasync_create), 1 },
	{ "writeback_mb=%d", offsetof(struct opts, writeback_mb), 0 },
	{ "readahead_mb=%d", offsetof(struct opts, readahead_mb), 0 },
	{ "kernel_readahead_kb=%d", offsetof(struct opts, kernel_ra_kb), 0 },
	{ "blksize=%d", offsetof(struct opts, blksize), 0 },
	{ "gather_us=%d", offsetof(struct opts, gather_us), 0 },
	{ "log=%s", offsetof(struct opts, log), 0 },
	{ "log_level=%s", offsetof(struct opts, log_level), 0 },
	FUSE_OPT_END
};

/* fuse_opt_parse's callback: keeps every option for libfuse, and takes
 * the words that are not options ([SOURCE] MOUNTPOINT) out of the
 * arguments; main() puts the mount point back. */
static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct opts *o = data;

	(void)outargs;
	if (key != FUSE_OPT_KEY_NONOPT)
		return 1;
	if (o->nnonopt < 2 && !(o->nonopt[o->nnonopt] = strdup(arg)))
		return -1;
	o->nnonopt++;
	return 0;
}

/* The SOURCE of `mount SOURCE MOUNTPOINT` (fstab's first field): "atoll:",
 * "atoll", "none" or "" (mount.fuse3 with `atoll-fuse#`) mount the default
 * root; "atoll:/PATH" mounts PATH, as -o subdir=PATH (which must then
 * agree).  "atoll:" is the form to write: mount(8) turns a source that
 * names a file of its current folder ("atoll") into that file's path.
 * 0, or -1 after saying why. */
static int parse_source(const char *src, struct opts *o)
{
	const char *path;

	if (!*src || strcmp(src, "none") == 0 || strcmp(src, "atoll") == 0 ||
	    strcmp(src, "atoll:") == 0)
		return 0;
	if (strncmp(src, "atoll:", 6) != 0 || src[6] != '/') {
		fprintf(stderr, "atoll-fuse: source '%s' is not atoll:, atoll:/PATH or none "
			"(fstab: atoll: /mnt/atoll fuse.atoll-fuse conf=/etc/atoll/atoll.conf,_netdev "
			"0 0)\n", src);
		return -1;
	}
	path = src + 6;
	if (o->root && strcmp(o->root, path) != 0) {
		fprintf(stderr, "atoll-fuse: source '%s' and subdir=%s name two directories; "
			"give one\n", src, o->root);
		return -1;
	}
	if (!o->root && !(o->root = strdup(path)))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co = { 0 };
	struct fuse_session *se = NULL;
	struct atoll_ioctx *data = NULL;
	struct opts o = { .writeback_mb = (int)(FD_WB_MAX_DEFAULT >> 20),
			  .readahead_mb = (int)(FD_RA_MAX_DEFAULT >> 20),
			  .kernel_ra_kb = (int)FD_KERNEL_RA_KB_DEFAULT,
			  .blksize = FO_BLKSIZE_DEFAULT, .gather_us = -1 };
	int ret = 1;

	if (fuse_opt_parse(&args, &o, opt_spec, opt_proc) == -1)
		return 1;
	if (o.nnonopt > 2) {
		fprintf(stderr, "atoll-fuse: too many arguments: give [SOURCE] MOUNTPOINT; "
			"see --help\n");
		goto out;
	}
	if (o.nnonopt == 2 && parse_source(o.nonopt[0], &o) != 0)
		goto out;
	if (o.nnonopt > 0 && fuse_opt_add_arg(&args, o.nonopt[o.nnonopt - 1]) != 0)
		goto out;
	if (fuse_parse_cmdline(&args, &co) != 0)
		goto out;
	if (co.show_help) {
		printf("usage: atoll-fuse [SOURCE] MOUNTPOINT [-f] [-o options]\n"
		       "  SOURCE          atoll: (the default root), atoll:/PATH (as -o subdir=PATH)\n"
		       "                  or none: as mount(8) and /etc/fstab give it, e.g.\n"
		       "                  atoll: /mnt/atoll fuse.atoll-fuse conf=/etc/atoll/atoll.conf,_netdev 0 0\n"
		       "  -o conf=FILE    atoll.conf\n"
		       "  -o mon=ADDR     the monitor\n"
		       "  -o mds=IP:PORT  the MDS, always this one (default: the active MDS the\n"
		       "                  monitors name, following it when the role moves; when\n"
		       "                  they name none, mds_addr of atoll.conf or 127.0.0.1:6800)\n"
		       "  --root PATH, -o subdir=PATH  mount the directory PATH of the file\n"
		       "                  system (default: the path of the key's mds caps, else /)\n"
		       "  -o nolease      no leases: the kernel caches metadata for 1 s (and\n"
		       "                  checks permissions: default_permissions)\n"
		       "  -o kernel_perms the kernel checks permissions (default_permissions;\n"
		       "                  the default)\n"
		       "  -o fuse_perms   atoll-fuse checks permissions instead of the kernel:\n"
		       "                  one request less per change, but for a moment after a\n"
		       "                  chmod of a folder on this mount, names the kernel\n"
		       "                  cached in it stay reachable (see doc/fs.md)\n"
		       "  -o writeback_mb=N  memory for buffered writes (default %d; 0: each\n"
		       "                  write goes out at once)\n"
		       "  -o noasync_rm   every unlink and rmdir waits for the MDS (by default\n"
		       "                  one in a folder this mount alone uses is answered\n"
		       "                  at once and sent behind: doc/fs.md)\n"
		       "  -o noasync_create  every create and mkdir waits for the MDS (by\n"
		       "                  default one in a folder this mount alone uses is\n"
		       "                  answered at once and sent behind: doc/fs.md)\n"
		       "  -o sync_close   close waits until the file's writes are durable (by\n"
		       "                  default it sends them and returns; other mounts'\n"
		       "                  opens of the file wait for them: doc/fs.md)\n"
		       "  -o readahead_mb=N  memory for read-ahead (default %d; 0: none)\n"
		       "  -o kernel_readahead_kb=N  the kernel's read-ahead of the mount\n"
		       "                  (default %u, needs root; 0: the kernel's default)\n"
		       "  -o blksize=N    the st_blksize files show, the I/O size programs\n"
		       "                  pick from it (a power of two, 4096 to 4194304;\n"
		       "                  default %d)\n"
		       "  -o gather_us=N  changes answered here wait up to N microseconds\n"
		       "                  for others and go to the MDS together (default:\n"
		       "                  fuse_gather_us of atoll.conf, else %u; 0: each at once)\n"
		       "  -o log=FILE     log to FILE (appended, one line per event); without\n"
		       "                  it a mount in the background (no -f) logs nothing and\n"
		       "                  one in the foreground logs to stderr\n"
		       "  -o log_level=LVL  error, warn, info (the default), debug or trace\n"
		       "At unmount atoll-fuse gives the MDS and the OSDs 5 s to take what it\n"
		       "still holds, logs what they did not take, and exits: it is gone at most\n"
		       "10 s after its unmount (doc/fs.md).\n",
		       (int)(FD_WB_MAX_DEFAULT >> 20), (int)(FD_RA_MAX_DEFAULT >> 20),
		       FD_KERNEL_RA_KB_DEFAULT, FO_BLKSIZE_DEFAULT, FH_GATHER_US_DEFAULT);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out;
	}
	if (co.show_version) {
		printf("atoll-fuse (libfuse %s)\nfault injection: %s\n", fuse_pkgversion(),
		       fault_enabled() ? "on" : "off");
		ret = 0;
		goto out;
	}
	if (!co.mountpoint) {
		fprintf(stderr, "atoll-fuse: give a mount point; see --help\n");
		goto out;
	}
	if (co.clone_fd)
		fprintf(stderr, "atoll-fuse: -o clone_fd is ignored: atoll-fuse reads /dev/fuse "
			"with its own loop\n");
	if (o.blksize < 4096 || o.blksize > (4 << 20) || (o.blksize & (o.blksize - 1))) {
		fprintf(stderr, "atoll-fuse: blksize=%d is not a power of two from 4096 to "
			"4194304\n", o.blksize);
		goto out;
	}
	/* atoll.conf: mds_addr ([mds] or [global]), the MDS when the
	 * monitors name none and -o mds= names none, and the [fuse] options
	 * unless -o names them.  A file that cannot be read is reported by
	 * the cluster's connect below. */
	struct config *cf = NULL;
	char cerr[256];
	if (config_load(&cf, o.conf, cerr, sizeof(cerr)) != 0)
		cf = NULL;
	const char *mds_v = cf ? config_get(cf, "mds", "mds_addr", NULL) : NULL;
	char *mds_fallback = strdup(mds_v ? mds_v : "127.0.0.1:6800");
	const char *mp_v = cf ? config_get(cf, "mds", "mds_meta_pool", NULL) : NULL;
	char *meta_pool = mp_v ? strdup(mp_v) : NULL;
	int64_t gather_us = o.gather_us == -1 ? (int64_t)FH_GATHER_US_DEFAULT : o.gather_us;
	if (o.gather_us == -1 && cf &&
	    config_get_int(cf, "fuse", "fuse_gather_us", FH_GATHER_US_DEFAULT, 0,
			   FH_GATHER_US_MAX, &gather_us, cerr, sizeof(cerr)) != 0) {
		fprintf(stderr, "atoll-fuse: %s\n", cerr);
		config_free(cf);
		goto out;
	}
	config_free(cf);
	if (gather_us < 0 || gather_us > FH_GATHER_US_MAX) {
		fprintf(stderr, "atoll-fuse: gather_us=%" PRId64 " is not from 0 to %u\n",
			gather_us, FH_GATHER_US_MAX);
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	int lvl = o.log_level ? log_level_parse(o.log_level) : LOG_LVL_INFO;
	if (lvl < 0) {
		fprintf(stderr, "atoll-fuse: log level '%s' is not one of error, warn, info, "
			"debug, trace\n", o.log_level);
		goto out;
	}
	/* opened here, before the move to the background (and to "/"): a
	 * relative path is the caller's, and a failure reaches its terminal */
	if (o.log || co.foreground) {
		int e = log_open("fuse", (enum log_level)lvl, o.log);
		if (e) {
			fprintf(stderr, "atoll-fuse: cannot open the log file '%s': %s\n", o.log,
				strerror(-e));
			goto out;
		}
	}
	if (o.conf && o.conf[0] != '/') {
		/* fuse_daemonize() changes to "/": keep the file reachable */
		char *abs = realpath(o.conf, NULL);
		if (!abs) {
			fprintf(stderr, "atoll-fuse: cannot find the config file '%s'\n", o.conf);
			goto out;
		}
		free(o.conf);
		o.conf = abs;
	}
	/* Threads do not survive fork(): go to the background before
	 * connecting; the command returns once the mount is live. */
	ret = fdm_detach(co.foreground);
	if (ret) {
		fprintf(stderr, "atoll-fuse: cannot go to the background: %s\n", strerror(-ret));
		ret = 1;
		goto out;
	}
	ret = 1;
	/* Own checks only when asked: the kernel walks the names it caches
	 * without asking, and after this mount's chmod of a folder they can
	 * be dropped only once the chmod returned (the kernel holds the
	 * folder's lock until then), so a walk in between is not checked. */
	bool perm = !o.nolease && o.fuse_perms && !o.kernel_perms;
	fo_init(perm, (uint32_t)o.blksize);
	fh_init(!o.nolease && !o.noasync_rm, !o.nolease && !o.noasync_create,
		(unsigned)gather_us);
	lc_init(!o.nolease, perm);
	fp_init();
	if (fc_connect(o.conf, o.mon, o.mds, mds_fallback, meta_pool, co.mountpoint, o.root,
		       &data) ||
	    fd_init(data, (uint64_t)o.writeback_mb << 20, (uint64_t)o.readahead_mb << 20,
		    !o.sync_close))
		goto out;
	if (!perm)
		fuse_opt_add_arg(&args, "-odefault_permissions");
	se = fuse_session_new(&args, fo_table(), sizeof(struct fuse_lowlevel_ops), NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, co.mountpoint) != 0)
		goto out_sig;
	if (lc_start(se))
		goto out_unmount;
	if (o.kernel_ra_kb > 0)
		fd_kernel_readahead(co.mountpoint, (unsigned)o.kernel_ra_kb);
	fu_start(se);
	fcl_start();
	fdm_ready();
	/* atoll-fuse's own loop (fuse_loop.c: two readers of /dev/fuse; it
	 * took a third fewer context switches than libfuse's for the same
	 * work, doc/fs-design-client.md "The request loop").  As libfuse's
	 * loop: a stop signal makes it return non-zero. */
	ret = fl_run(se, FUSE_MAX_THREADS) || fu_signalled() ? 1 : 0;
	fuse_session_reset(se);
	fh_send_held();
	fu_ending();	/* the grace runs (fuse_unmount.c) */
	fcl_stop();
	fc_acall_drain();	/* no answer to the kernel after the session goes */
	fh_log_counts();
	fd_shutdown();	/* what is still buffered goes out */
	lc_stop();
out_unmount:
	fuse_session_unmount(se);
out_sig:
	fuse_remove_signal_handlers(se);
out:
	if (se)
		fuse_session_destroy(se);
	if (data) {
		/* a clean unmount: once our changes are journaled (after
		 * SESSION_END the MDS no longer waits for us to resend them),
		 * the MDS expects no reconnect from us.  Both within the
		 * grace (the ender gives up on the MDS: fr_give_up). */
		if (!fr_unsafe_wait(fu_bounded() ? 0 : 30))
			fr_log_lost();
		fu_session_end();
	}
	fu_stop();
	fr_stop();
	fc_disconnect();
	free(co.mountpoint);
	free(o.conf);
	free(o.mon);
	free(o.mds);
	free(o.log);
	free(o.log_level);
	free(o.root);
	free(o.nonopt[0]);
	free(o.nonopt[1]);
	fuse_opt_free_args(&args);
	log_close();
	return ret;
}
