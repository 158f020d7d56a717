/*
 * cli_backup.c - `atoll mon backup FILE [--chunk-size BYTES]`: fetches
 * the monitor's map history in bounded pieces and writes the backup file
 * as they come (mon/cmd_backup.c says what each piece is).
 *
 * The file is written to FILE.part, checksummed as it grows (CRC-32C of
 * every byte, appended at the end), fsync'd and renamed to FILE, so FILE
 * is either a whole backup or absent; memory stays at one piece however
 * long the history is.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"

#define CHUNK_DEFAULT	(8u << 20)	/* the monitor's cap */
#define HEAD_LEN	48		/* magic, fsid, first, last, incarnation */

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static int write_all(int fd, const void *p, size_t n, uint32_t *crc)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(fd, (const char *)p + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		done += (size_t)w;
	}
	*crc = atoll__crc32c(*crc, p, n);
	return 0;
}

/* Sends cmd (consumed); *out and *outlen get the reply's bytes (atoll_free). */
static int call(struct cli *cl, cJSON *cmd, char **out, size_t *outlen)
{
	char *json = cJSON_PrintUnformatted(cmd), *status = NULL;
	int ret;

	cJSON_Delete(cmd);
	*out = NULL;
	if (!json) {
		cli_err("out of memory");
		return CLI_EXIT_ERROR;
	}
	ret = atoll_mon_command(cl->c, json, &status, out, outlen);
	free(json);
	if (ret < 0) {
		cli_err("mon backup: %s", status && *status ? status : atoll_strerror(ret));
		atoll_free(status);
		atoll_free(*out);
		*out = NULL;
		return cli_exit_code(ret);
	}
	atoll_free(status);
	return CLI_EXIT_OK;
}

/* Counts the length-prefixed records in a history piece (checked). */
static int count_records(const char *p, size_t n, uint64_t *count)
{
	size_t off = 0;

	*count = 0;
	while (off < n) {
		uint32_t l;

		if (n - off < 4)
			return -EBADMSG;
		l = (uint32_t)(uint8_t)p[off] | (uint32_t)(uint8_t)p[off + 1] << 8 |
		    (uint32_t)(uint8_t)p[off + 2] << 16 | (uint32_t)(uint8_t)p[off + 3] << 24;
		if (l == 0 || l > n - off - 4)
			return -EBADMSG;
		off += 4 + l;
		(*count)++;
	}
	return *count ? 0 : -EBADMSG;
}

int cli_mon_backup(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	const char *file = NULL;
	uint64_t chunk = CHUNK_DEFAULT, first, last, ep, nrec, total = 0;
	char part[4096], *out = NULL;
	size_t outlen;
	uint32_t crc = 0;
	uint8_t tail[4];
	cJSON *cmd;
	int fd, ret;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--chunk-size") && i + 1 < argc) {
			if (cli_parse_uint(argv[++i], CHUNK_DEFAULT, &chunk) < 0 || chunk == 0)
				return cli_usage(c, "--chunk-size '%s' is not a number of "
						 "bytes from 1 to %u", argv[i], CHUNK_DEFAULT);
		} else if (argv[i][0] == '-' || file) {
			return cli_usage(c, "unexpected argument '%s'", argv[i]);
		} else {
			file = argv[i];
		}
	}
	if (!file)
		return cli_usage(c, "give the file to write the backup to");
	if (snprintf(part, sizeof(part), "%s.part", file) >= (int)sizeof(part)) {
		cli_err("file name '%s' is too long", file);
		return CLI_EXIT_ERROR;
	}
	ret = cli_connect(cl);
	if (ret)
		return ret;
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "prefix", "mon backup");
	cJSON_AddStringToObject(cmd, "part", "head");
	ret = call(cl, cmd, &out, &outlen);
	if (ret)
		return ret;
	if (outlen < HEAD_LEN + 4) {
		cli_err("mon backup: the monitor's answer is malformed");
		atoll_free(out);
		return CLI_EXIT_ERROR;
	}
	first = le64((const uint8_t *)out + 24);
	last = le64((const uint8_t *)out + 32);
	/* 0600 whatever the umask, and whatever a leftover FILE.part had */
	fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0 && fchmod(fd, 0600) < 0) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		cli_err("cannot create '%s': %s", part, strerror(errno));
		atoll_free(out);
		return CLI_EXIT_ERROR;
	}
	if (write_all(fd, out, outlen, &crc) < 0)
		goto out_write;
	total += outlen;
	for (ep = first; ep <= last; ep += nrec) {
		atoll_free(out);
		cmd = cJSON_CreateObject();
		cJSON_AddStringToObject(cmd, "prefix", "mon backup");
		cJSON_AddStringToObject(cmd, "part", "history");
		cJSON_AddNumberToObject(cmd, "from", (double)ep);
		cJSON_AddNumberToObject(cmd, "to", (double)last);
		cJSON_AddNumberToObject(cmd, "max_bytes", (double)chunk);
		ret = call(cl, cmd, &out, &outlen);
		if (ret)
			goto out_unlink;
		if (count_records(out, outlen, &nrec) < 0 || nrec > last - ep + 1) {
			cli_err("mon backup: the monitor's answer is malformed");
			ret = CLI_EXIT_ERROR;
			goto out_unlink;
		}
		if (write_all(fd, out, outlen, &crc) < 0)
			goto out_write;
		total += outlen;
	}
	for (int i = 0; i < 4; i++)
		tail[i] = (uint8_t)(crc >> (8 * i));
	if (write_all(fd, tail, 4, &crc) < 0 || fsync(fd) != 0)
		goto out_write;
	if (close(fd) != 0) {
		fd = -1;
		goto out_write;
	}
	fd = -1;
	if (rename(part, file) != 0) {
		cli_err("cannot rename '%s' to '%s': %s", part, file, strerror(errno));
		ret = CLI_EXIT_ERROR;
		goto out_unlink;
	}
	total += 4;
	if (cl->json)
		printf("{\"file\":\"%s\",\"bytes\":%llu,\"first\":%llu,\"last\":%llu}\n", file,
		       (unsigned long long)total, (unsigned long long)first,
		       (unsigned long long)last);
	else
		fprintf(stderr, "wrote %llu bytes to %s (epochs %llu..%llu)\n",
			(unsigned long long)total, file, (unsigned long long)first,
			(unsigned long long)last);
	atoll_free(out);
	return CLI_EXIT_OK;

out_write:
	cli_err("cannot write '%s': %s", part, strerror(errno));
	ret = CLI_EXIT_ERROR;
out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(part);
	atoll_free(out);
	return ret;
}
