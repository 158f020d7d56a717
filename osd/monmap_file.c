/*
 * monmap_file.c - the last monitor map an OSD accepted, kept in its data
 * folder (DIR/monmap) so that a restart can reach the monitors even when
 * mon_host lists only some of them (or old ones), and refuses a monitor
 * cluster older than the incarnation it last saw.
 *
 * The file: u32 magic "ATMM", u32 length, the MONMAP as on the wire
 * (lib/proto.h, the same bounds-checked decoder), u32 crc32c of the
 * encoded map.  Written to a temporary file, fsynced and renamed over the
 * old one, so that a crash leaves the old or the new map, never a mix.
 */
#include "osd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "encode.h"
#include "log.h"

#define MONMAP_FILE_MAGIC	0x4d4d5441u	/* "ATMM" */
#define MONMAP_FILE_MAX		(64u << 10)

int osd_monmap_file_decode(const void *buf, size_t n, struct monmap_msg *mm)
{
	struct dec d;
	uint32_t len, crc;
	const void *body;

	dec_init(&d, buf, n);
	if (dec_u32(&d) != MONMAP_FILE_MAGIC)
		return -EBADMSG;
	len = dec_u32(&d);
	body = d.err || len > n ? NULL : dec_raw(&d, len);
	crc = dec_u32(&d);
	if (!body || d.err || dec_finish(&d) || atoll__crc32c(0, body, len) != crc)
		return -EBADMSG;
	dec_init(&d, body, len);
	return monmap_msg_decode(&d, mm);
}

int osd_monmap_load(const char *dir, struct monmap_msg *mm)
{
	char path[4096];
	uint8_t *buf;
	ssize_t n;
	int fd, r;

	snprintf(path, sizeof(path), "%s/monmap", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	buf = malloc(MONMAP_FILE_MAX);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = read(fd, buf, MONMAP_FILE_MAX);
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r == 0)
		r = osd_monmap_file_decode(buf, (size_t)n, mm);
	free(buf);
	return r;
}

int osd_monmap_save(const char *dir, const struct monmap_msg *mm)
{
	char path[4096], tmp[4096];
	struct enc body, e;
	int fd, r = 0;

	enc_init(&body);
	monmap_msg_encode(mm, &body);
	enc_init(&e);
	enc_u32(&e, MONMAP_FILE_MAGIC);
	enc_u32(&e, (uint32_t)body.len);
	enc_raw(&e, body.buf, body.len);
	enc_u32(&e, atoll__crc32c(0, body.buf, body.len));
	if (body.err || e.err) {
		r = -ENOMEM;
		goto out_free;
	}
	snprintf(path, sizeof(path), "%s/monmap", dir);
	snprintf(tmp, sizeof(tmp), "%s/monmap.tmp", dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = -errno;
		goto out_free;
	}
	if (write(fd, e.buf, e.len) != (ssize_t)e.len || fsync(fd) < 0)
		r = -errno ? -errno : -EIO;
	close(fd);
	if (!r && rename(tmp, path) < 0)
		r = -errno;
out_free:
	enc_free(&e);
	enc_free(&body);
	return r;
}
