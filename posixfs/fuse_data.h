/*
 * fuse_data.h - atoll-fuse's file data path (fuse_data.c): reads and
 * writes of file data straight to the OSDs, with client write-back
 * (a file's writes gathered per data object, bounded in memory) and
 * read-ahead of whole objects, and the file sizes this client knows.
 *
 * The metadata side (fuse_call.c and the FUSE operations, fuse_ops*.c)
 * calls the fd_* hooks where metadata and data meet (stat sizes, open,
 * create, truncate, a revoke of another client's data change); this
 * file calls the MDS through fuse_call.h (the size push), fuse_close.h
 * (CLOSE, LANDED) and fuse_replay.h (reconnects, fsync).
 */
#ifndef ATOLL_FUSE_DATA_H
#define ATOLL_FUSE_DATA_H

#define FUSE_USE_VERSION 35

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

struct atoll_ioctx;

/* Defaults of the bounds (-o writeback_mb=, -o readahead_mb=). */
#define FD_WB_MAX_DEFAULT (256ull << 20)
#define FD_RA_MAX_DEFAULT (64ull << 20)

/* Once connected (threads: after fuse_daemonize): the data pool and the
 * memory bounds of buffered writes and of read-ahead (bytes; 0 turns
 * write-back, resp. read-ahead, off); async_close: a close (FLUSH) sends
 * the file's writes without waiting for them, when the MDS can mark them
 * (protocol 6; doc/fs-design-client.md, "Closing without waiting"). */
int fd_init(struct atoll_ioctx *data, uint64_t wb_max, uint64_t ra_max, bool async_close);
/* The data namespace of inode ino (its record's dns): every record the
 * client receives is noted, so that its data objects are named right
 * (doc/fs-design.md, "Data namespaces").  fd_dns: 0 when none. */
void fd_dns_note(uint64_t ino, uint64_t dns);
uint64_t fd_dns(uint64_t ino);
/* After the mount, before the FUSE loop: sets the kernel's read-ahead of
 * the mount to kb KiB (root only; else logged). */
void fd_kernel_readahead(const char *mountpoint, unsigned kb);
#define FD_KERNEL_RA_KB_DEFAULT 4096u
/* After the FUSE loop ended: writes what is still buffered and waits for
 * every write (nobody is left to report an error to: it is logged), or
 * until fd_abandon. */
void fd_shutdown(void);
/* At unmount, once the OSDs had their time, grace_s (any thread): every
 * wait for a write ends (EIO), buffers not sent are dropped, and what was
 * not confirmed durable is logged per inode (mnt names the mount).  The
 * bytes it logged. */
uint64_t fd_abandon(const char *mnt, unsigned grace_s);

/* The size to show for ino (a stat) given the MDS's size: records the
 * MDS's, returns the larger one this client wrote and not yet pushed. */
uint64_t fd_stat_size(uint64_t ino, uint64_t msize);
/* ino was opened (msize: the MDS's size) or created (empty): drops what
 * the client read ahead of it (close-to-open: another client may have
 * changed it since). */
void fd_open(uint64_t ino, uint64_t msize, bool created, uint64_t gen0);
/* Opens held, per inode, re-counted with the MDS after a reconnect
 * (doc/fs-design.md, "Open files across a restart").  fd_open also counts one
 * open of ino; gen0: fr_gen() before its OPEN or create was sent (not the
 * current one: the MDS may have counted it before the reconnect, so it
 * is flagged for a re-count).  fd_close_open counts one down and returns
 * the reconnect it was last counted under (the CLOSE's ogen).  fd_opens
 * lists the inodes held open (only the flagged ones when only_flagged),
 * with their counts, into *out (malloc'd), stamps them with gen and
 * clears their flags; fd_opens_flag flags them again (their re-count
 * failed). */
struct fd_open_ent {
	uint64_t ino;
	uint32_t count;
};
uint64_t fd_close_open(uint64_t ino);
size_t fd_opens(uint64_t gen, bool only_flagged, struct fd_open_ent **out);
void fd_opens_flag(const struct fd_open_ent *v, size_t n);
/* Writes every buffered write of ino and waits for all of them; returns
 * and clears the first error since the last flush (-EIO for a write the
 * OSDs refused). */
int fd_wb_flush(uint64_t ino);
/* A truncate to size (after fd_wb_flush): the new size replaces what this
 * client wrote; returns the largest size it knew before (the MDS's
 * size_hint: the objects to trim).  Drops ino's read-ahead. */
uint64_t fd_set_size(uint64_t ino, uint64_t size);
/* The largest size of ino this client knows (a setattr's size_hint). */
uint64_t fd_size_hint(uint64_t ino);
/* Another client changed ino's data (a revoke with MDS_CHG_DATA). */
void fd_invalidate(uint64_t ino);
/* True when this client holds no write of ino: nothing buffered, in
 * flight or written since the last size push (setattr folds touch's
 * "now" into a fresh create only then). */
bool fd_clean(uint64_t ino);
/* Pushes the size and mtime this client wrote to the MDS (op FSYNC:
 * flush, fsync, setattr; CLOSE: release), with the buffered data. */
int fd_push_size(fuse_req_t req, uint64_t ino, uint32_t op);
/* What a close pushes (flush, and a setattr other than of the size): the
 * buffers go out and the size to the MDS, without waiting for the writes
 * when the MDS can mark them (doc/fs-design-client.md, "Closing without
 * waiting"), else as fd_push_size(FSYNC).  0, or the first write error
 * known. */
int fd_close_push(fuse_req_t req, uint64_t ino);

/* The FUSE operations of file data. */
void fd_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fd_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		 off_t off, struct fuse_file_info *fi);
void fd_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fd_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fd_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

#endif
