/*
 * cli_objects.c - object commands: put, get, rm, stat, ls.
 *
 * put and get stream in 4 MiB pieces so that an object of any allowed
 * size (128 MiB by default) goes through ops well under the 64 MiB op
 * payload limit and the CLI never holds a whole object in memory.  A
 * put first writes its first piece with write_full (which replaces the
 * object), then the rest at their offsets.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PIECE (4u << 20)

static int object_error(const char *pool, const char *oid, const char *what, int err)
{
	if (err == -ENOENT)
		cli_err("object '%s' does not exist in pool '%s'; list them with: atoll ls %s",
			oid, pool, pool);
	else if (err == -EFBIG)
		cli_err("cannot %s '%s': the object is over the cluster's object size limit",
			what, oid);
	else if (err == -ENOSPC)
		cli_err("cannot %s '%s': the cluster is full; delete objects or add OSDs",
			what, oid);
	else
		cli_err("cannot %s '%s' in pool '%s': %s", what, oid, pool, atoll_strerror(err));
	return cli_exit_code(err);
}

static ssize_t read_full(int fd, char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += n;
	}
	return (ssize_t)done;
}

/* put POOL OBJ FILE|- */
static int run_put(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	const char *pool, *oid, *file;
	uint64_t off = 0;
	char *buf;
	int fd, ret;

	if (argc != 3)
		return cli_usage(c, "give a pool, an object name and a file (- for stdin)");
	pool = argv[0], oid = argv[1], file = argv[2];
	fd = strcmp(file, "-") == 0 ? 0 : open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cli_err("cannot open '%s': %s", file, strerror(errno));
		return CLI_EXIT_ERROR;
	}
	buf = malloc(PIECE);
	if (!buf) {
		ret = CLI_EXIT_ERROR;
		goto out_close;
	}
	ret = cli_open_pool(cl, pool, &io);
	if (ret)
		goto out_free;
	for (;;) {
		ssize_t n = read_full(fd, buf, PIECE);
		int err;

		if (n < 0) {
			cli_err("cannot read '%s': %s", file, strerror((int)-n));
			ret = CLI_EXIT_ERROR;
			goto out_free;
		}
		if (off == 0)
			err = atoll_write_full(io, oid, buf, (size_t)n, 0);
		else if (n > 0)
			err = atoll_write(io, oid, buf, (size_t)n, off, 0);
		else
			err = 0;
		if (err) {
			ret = object_error(pool, oid, "write", err);
			goto out_free;
		}
		off += (uint64_t)n;
		if ((size_t)n < PIECE)
			break;
	}
	if (cl->json)
		printf("{\"pool\":\"%s\",\"name\":\"%s\",\"size\":%" PRIu64 "}\n", pool, oid, off);
	ret = CLI_EXIT_OK;
out_free:
	atoll_ioctx_destroy(io);
	free(buf);
out_close:
	if (fd > 0)
		close(fd);
	return ret;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		buf += n;
		len -= n;
	}
	return 0;
}

/* get POOL OBJ FILE|- */
static int run_get(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	const char *pool, *oid, *file;
	uint64_t size, off = 0;
	char *buf = NULL;
	int fd = -1, ret, err;

	if (argc != 3)
		return cli_usage(c, "give a pool, an object name and a file (- for stdout)");
	pool = argv[0], oid = argv[1], file = argv[2];
	ret = cli_open_pool(cl, pool, &io);
	if (ret)
		return ret;
	/* stat first so that a missing object leaves no empty file behind */
	err = atoll_stat(io, oid, &size, NULL, 0);
	if (err) {
		ret = object_error(pool, oid, "read", err);
		goto out;
	}
	buf = malloc(PIECE);
	if (!buf) {
		ret = CLI_EXIT_ERROR;
		goto out;
	}
	fd = strcmp(file, "-") == 0 ? 1 : open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		cli_err("cannot create '%s': %s", file, strerror(errno));
		ret = CLI_EXIT_ERROR;
		goto out;
	}
	for (;;) {
		int64_t n = atoll_read(io, oid, buf, PIECE, off, 0);

		if (n < 0) {
			ret = object_error(pool, oid, "read", (int)n);
			goto out;
		}
		if (n > 0 && write_all(fd, buf, (size_t)n) != 0) {
			cli_err("cannot write '%s': %s", file, strerror(errno));
			ret = CLI_EXIT_ERROR;
			goto out;
		}
		off += (uint64_t)n;
		if ((uint64_t)n < PIECE)
			break;
	}
	ret = CLI_EXIT_OK;
out:
	if (fd > 1 && close(fd) != 0 && ret == CLI_EXIT_OK) {
		cli_err("cannot write '%s': %s", file, strerror(errno));
		ret = CLI_EXIT_ERROR;
	}
	free(buf);
	atoll_ioctx_destroy(io);
	return ret;
}

/* rm POOL OBJ... */
static int run_rm(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	int ret;

	if (argc < 2)
		return cli_usage(c, "give a pool and at least one object name");
	ret = cli_open_pool(cl, argv[0], &io);
	if (ret)
		return ret;
	for (int i = 1; i < argc; i++) {
		int err = atoll_remove(io, argv[i], 0);

		if (err) {
			ret = object_error(argv[0], argv[i], "remove", err);
			break;
		}
	}
	atoll_ioctx_destroy(io);
	return ret;
}

/* stat POOL OBJ */
static int run_stat(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	uint64_t size, mtime;
	int ret, err;

	if (argc != 2)
		return cli_usage(c, "give a pool and an object name");
	ret = cli_open_pool(cl, argv[0], &io);
	if (ret)
		return ret;
	err = atoll_stat(io, argv[1], &size, &mtime, 0);
	if (err) {
		ret = object_error(argv[0], argv[1], "stat", err);
	} else if (cl->json) {
		printf("{\"pool\":\"%s\",\"name\":\"%s\",\"size\":%" PRIu64 ",\"mtime_ns\":%" PRIu64 "}\n",
		       argv[0], argv[1], size, mtime);
	} else {
		time_t t = (time_t)(mtime / 1000000000u);
		char ts[40];

		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
		printf("%s/%s mtime %s, size %" PRIu64 "\n", argv[0], argv[1], ts, size);
	}
	atoll_ioctx_destroy(io);
	return ret;
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* ls POOL */
static int run_ls(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	struct atoll_list *l = NULL;
	const char *oid;
	int ret, err, n = 0;

	if (argc != 1)
		return cli_usage(c, "give a pool");
	ret = cli_open_pool(cl, argv[0], &io);
	if (ret)
		return ret;
	err = atoll_list_open(io, &l, 0);
	if (err) {
		cli_err("cannot list pool '%s': %s", argv[0], atoll_strerror(err));
		ret = cli_exit_code(err);
		goto out;
	}
	if (cl->json)
		putchar('[');
	while ((err = atoll_list_next(l, &oid)) == 0) {
		if (cl->json) {
			if (n)
				putchar(',');
			json_string(oid);
		} else {
			puts(oid);
		}
		n++;
	}
	if (cl->json)
		puts("]");
	if (err != -ENOENT) {
		cli_err("listing pool '%s' failed: %s", argv[0], atoll_strerror(err));
		ret = cli_exit_code(err);
	}
	atoll_list_close(l);
out:
	atoll_ioctx_destroy(io);
	return ret;
}

const struct cli_cmd cli_object_cmds[] = {
	{ "put", "POOL OBJECT FILE|-",
	  "Writes FILE (or standard input) as OBJECT, replacing what it held.\n", run_put },
	{ "get", "POOL OBJECT FILE|-",
	  "Reads OBJECT into FILE (or standard output).\n", run_get },
	{ "rm", "POOL OBJECT...", "Removes objects.\n", run_rm },
	{ "stat", "POOL OBJECT", "An object's size and modification time.\n", run_stat },
	{ "ls", "POOL", "The names of a pool's objects, in no particular order.\n", run_ls },
	{ NULL, NULL, NULL, NULL },
};
