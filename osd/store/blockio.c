/*
 * blockio.c - I/O on the store's block: O_DIRECT, aligned buffers, libaio.
 *
 * The block is opened with O_DIRECT so that data never sits in the page
 * cache: what a read returns comes from the device (and is checked
 * against its crc), and memory use does not grow with the data.  Writes
 * go out through libaio, many at once; O_DIRECT alone does not make them
 * durable, so the commit path follows them with fdatasync.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "store-int.h"

int bio_open(const char *path, bool create, bool readonly, int *fd)
{
	int flags = (readonly ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC;

	if (create)
		flags |= O_CREAT;
	*fd = open(path, flags, 0600);
	if (*fd < 0)
		return -errno;
	return 0;
}

int bio_size(int fd, uint64_t *bytes)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, bytes))
			return -errno;
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*bytes = (uint64_t)st.st_size;
	return 0;
}

void *bio_alloc_uninit(size_t bytes)
{
	void *p = NULL;

	if (bytes == 0)
		bytes = STORE_BLOCK_SIZE;
	if (posix_memalign(&p, STORE_BLOCK_SIZE, bytes))
		return NULL;
	return p;
}

void *bio_alloc(size_t bytes)
{
	void *p = bio_alloc_uninit(bytes);

	if (p)
		memset(p, 0, bytes ? bytes : STORE_BLOCK_SIZE);
	return p;
}

int bio_pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;	/* past the end of the device */
		done += (size_t)n;
	}
	return 0;
}

int bio_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

#define BIO_BATCH 64

int bio_data_flags(const struct store *st)
{
	return st->opt.unsafe_skip_data_flush ? 0 : RWF_DSYNC;
}

int bio_write_all(io_context_t ctx, int fd, const struct bio_write *w, size_t n, int rw_flags)
{
	struct iocb cbs[BIO_BATCH], *ptrs[BIO_BATCH];
	struct io_event ev[BIO_BATCH];
	int r = 0;

	for (size_t base = 0; base < n; base += BIO_BATCH) {
		size_t cnt = min_u64(n - base, BIO_BATCH);
		size_t submitted = 0, done = 0;

		for (size_t i = 0; i < cnt; i++) {
			io_prep_pwrite(&cbs[i], fd, (void *)w[base + i].buf, w[base + i].len,
				       (long long)w[base + i].off);
			cbs[i].aio_rw_flags = rw_flags;
			cbs[i].data = (void *)&w[base + i];
			ptrs[i] = &cbs[i];
		}
		while (submitted < cnt) {
			int s = io_submit(ctx, (long)(cnt - submitted), ptrs + submitted);

			if (s == -EINTR || s == -EAGAIN) {
				if (done < submitted) {
					/* Make room by reaping before retrying. */
					int g = io_getevents(ctx, 1, BIO_BATCH, ev, NULL);

					if (g > 0) {
						for (int k = 0; k < g; k++) {
							const struct bio_write *bw = ev[k].data;

							if ((long)ev[k].res != (long)bw->len)
								r = -EIO;
						}
						done += (size_t)g;
					}
				}
				continue;
			}
			if (s < 0) {
				log_error("store", "io_submit failed: %s", strerror(-s));
				r = -EIO;
				break;
			}
			submitted += (size_t)s;
		}
		while (done < submitted) {
			int g = io_getevents(ctx, 1, BIO_BATCH, ev, NULL);

			if (g == -EINTR)
				continue;
			if (g < 0) {
				log_error("store", "io_getevents failed: %s", strerror(-g));
				return -EIO;
			}
			for (int k = 0; k < g; k++) {
				const struct bio_write *bw = ev[k].data;

				if ((long)ev[k].res != (long)bw->len) {
					log_error("store", "write of %zu bytes at %llu failed: %s",
						  bw->len, (unsigned long long)bw->off,
						  (long)ev[k].res < 0 ? strerror((int)-(long)ev[k].res)
								      : "short write");
					r = -EIO;
				}
			}
			done += (size_t)g;
		}
		if (r)
			return r;
	}
	return r;
}
