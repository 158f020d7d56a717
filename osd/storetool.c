/*
 * storetool.c - atoll-store-tool: offline inspection of a stopped OSD's store.
 *
 * Opens the store read-only (LMDB readers never block a writer and never
 * change the file, so looking cannot damage what an operator is trying to
 * understand) and prints what the engine sees: collections, objects, their
 * data, attributes and omap, space use, and fsck's findings.  Only `mkfs`
 * writes.  Every subcommand prints plain text by default and JSON with
 * --format json (cJSON), for scripts.
 *
 * Exit codes: 0 done; 1 the operation failed or fsck found problems; 2 the
 * command line was wrong.  Errors are one sentence on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "log.h"
#include "store.h"

#define PROG "atoll-store-tool"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* What a subcommand accepts beyond the global options. */
enum {
	O_DEEP = 1 << 0,
	O_SIZE = 1 << 1,
	O_AFTER = 1 << 2,
	O_MAX = 1 << 3,
	O_NOZERO = 1 << 4,
};

struct cmd {
	const char *name;
	const char *args;	/* synopsis after the name */
	const char *summary;	/* one line for the overview */
	const char *help;	/* what it does, a few lines */
	int nargs_min, nargs_max;
	unsigned opts;		/* O_* it accepts */
	int (*fn)(char **args, int nargs);
};

static struct {
	const char *data;
	const char *block;
	const char *kv;
	bool json;
	bool deep;
	bool no_zero;
	uint64_t size;
	uint64_t kv_max;
	const char *after;
	uint64_t max;
	unsigned given;		/* O_* seen on the command line */
	int verbose;
} g;

static char block_buf[4096], kv_buf[4096];

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void err(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *errstr(int r)
{
	return strerror(r < 0 ? -r : r);
}

/* ---- parsing ---------------------------------------------------------- */

/* A collection id: decimal or 0x-prefixed hex, 64 bits. */
static bool parse_coll(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static int coll_arg(const char *s, uint64_t *out)
{
	if (parse_coll(s, out))
		return 0;
	err("'%s' is not a collection id; give it as hex (0x2a) or decimal (42)", s);
	return -EINVAL;
}

/* ---- printing --------------------------------------------------------- */

/* Bytes as text: printable ASCII as it is, a backslash as \\, anything
 * else as \xNN.  Names and omap keys may hold any byte; this keeps one
 * entry on one line and shows exactly which bytes are there. */
static char *escape(const void *p, size_t len)
{
	const unsigned char *s = p;
	char *out = malloc(len * 4 + 1), *o = out;

	if (!out) {
		err("out of memory");
		exit(EXIT_FAIL);
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\') {
			*o++ = '\\';
			*o++ = '\\';
		} else if (s[i] >= 0x20 && s[i] < 0x7f) {
			*o++ = (char)s[i];
		} else {
			sprintf(o, "\\x%02x", s[i]);
			o += 4;
		}
	}
	*o = 0;
	return out;
}

static void print_json(cJSON *j)
{
	char *s;

	if (!j) {
		err("out of memory");
		exit(EXIT_FAIL);
	}
	s = cJSON_Print(j);
	if (!s) {
		err("out of memory");
		exit(EXIT_FAIL);
	}
	puts(s);
	free(s);
	cJSON_Delete(j);
}

static void coll_str(char out[24], uint64_t coll)
{
	snprintf(out, 24, "0x%" PRIx64, coll);
}

static void human_bytes(char *out, size_t n, uint64_t v)
{
	static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double d = (double)v;
	int i = 0;

	while (d >= 1024 && i < 5) {
		d /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(out, n, "%" PRIu64 " B", v);
	else
		snprintf(out, n, "%.1f %s", d, u[i]);
}

/* ---- opening ---------------------------------------------------------- */

/* Fills block/kv from --data, --block and --kv; a usage error if neither
 * way names the store. */
static int store_paths(void)
{
	if (g.data) {
		if (g.block || g.kv) {
			err("give either --data DIR or --block PATH with --kv DIR, not both");
			return -EINVAL;
		}
		snprintf(block_buf, sizeof(block_buf), "%s/block", g.data);
		snprintf(kv_buf, sizeof(kv_buf), "%s/kv", g.data);
		g.block = block_buf;
		g.kv = kv_buf;
	}
	if (!g.block || !g.kv) {
		err("which store? give --data DIR (DIR/block and DIR/kv) or --block PATH and --kv DIR");
		return -EINVAL;
	}
	return 0;
}

static void fill_options(struct store_options *so, bool readonly)
{
	memset(so, 0, sizeof(*so));
	so->size_of = sizeof(*so);
	so->block_path = g.block;
	so->kv_path = g.kv;
	so->kv_max = g.kv_max;
	so->block_size = g.size;
	so->readonly = readonly;
}

/* Opens the named store read-only, or says in one sentence why not. */
static struct store *open_ro(void)
{
	struct store_options so;
	struct store *st;
	struct stat sb;
	int r;

	if (store_paths() < 0)
		exit(EXIT_USAGE);
	if (stat(g.block, &sb) < 0) {
		err("cannot open block '%s': %s; is this the store's block file or device?",
		    g.block, strerror(errno));
		exit(EXIT_FAIL);
	}
	if (stat(g.kv, &sb) < 0) {
		err("cannot open kv folder '%s': %s; give the folder holding the store's kv",
		    g.kv, strerror(errno));
		exit(EXIT_FAIL);
	}
	if (!S_ISDIR(sb.st_mode)) {
		err("kv '%s' is not a folder; give the folder holding the store's kv", g.kv);
		exit(EXIT_FAIL);
	}
	fill_options(&so, true);
	so.block_size = 0;
	r = store_open(&so, &st);
	if (r == -EAGAIN || r == -EBUSY || r == -EWOULDBLOCK) {
		err("the store at '%s' is in use: %s; stop the OSD that owns it first",
		    g.block, errstr(r));
		exit(EXIT_FAIL);
	}
	if (r < 0) {
		err("cannot open the store at block '%s' and kv '%s': %s", g.block, g.kv, errstr(r));
		exit(EXIT_FAIL);
	}
	return st;
}

/* -ENOENT from a lookup: says whether the collection or the object is
 * missing. */
static void not_found(struct store *st, uint64_t coll, const char *oid, int r)
{
	char c[24];

	coll_str(c, coll);
	if (r == -ENOENT && store_coll_exists(st, coll) == 0)
		err("collection %s does not exist; list them with: " PROG " colls", c);
	else if (r == -ENOENT)
		err("object '%s' does not exist in collection %s; list them with: " PROG " ls %s",
		    oid, c, c);
	else
		err("cannot read object '%s' in collection %s: %s", oid, c, errstr(r));
}

/* ---- fsck ------------------------------------------------------------- */

struct fsck_ctx {
	cJSON *problems;
	unsigned n;
};

static void fsck_report(void *arg, const char *problem)
{
	struct fsck_ctx *c = arg;

	c->n++;
	if (c->problems)
		cJSON_AddItemToArray(c->problems, cJSON_CreateString(problem));
	else
		printf("problem: %s\n", problem);
}

static int cmd_fsck(char **args, int nargs)
{
	struct store *st = open_ro();
	struct fsck_ctx c = { 0 };
	cJSON *j = NULL;
	int r;

	(void)args; (void)nargs;
	if (g.json) {
		j = cJSON_CreateObject();
		c.problems = cJSON_AddArrayToObject(j, "problems");
	}
	r = store_fsck(st, g.deep, fsck_report, &c);
	store_close(st);
	if (r < 0) {
		cJSON_Delete(j);
		err("fsck could not run: %s", errstr(r));
		return EXIT_FAIL;
	}
	if (j) {
		cJSON_AddBoolToObject(j, "deep", g.deep);
		cJSON_AddNumberToObject(j, "count", r);
		cJSON_AddBoolToObject(j, "clean", r == 0);
		print_json(j);
	} else if (r == 0) {
		printf("fsck%s: clean\n", g.deep ? " --deep" : "");
	} else {
		printf("fsck%s: %d problem%s found\n", g.deep ? " --deep" : "", r, r == 1 ? "" : "s");
	}
	return r == 0 ? EXIT_OK : EXIT_FAIL;
}

/* ---- colls ------------------------------------------------------------ */

static int coll_one(void *arg, uint64_t coll, uint32_t flags)
{
	cJSON *arr = arg;
	char c[24];

	coll_str(c, coll);
	if (arr) {
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, "coll", c);
		cJSON_AddNumberToObject(e, "flags", flags);
		cJSON_AddBoolToObject(e, "compress", flags & STORE_COLL_COMPRESS);
		cJSON_AddItemToArray(arr, e);
	} else {
		printf("%s%s\n", c, flags & STORE_COLL_COMPRESS ? "\tcompress" : "");
	}
	return 0;
}

static int cmd_colls(char **args, int nargs)
{
	struct store *st = open_ro();
	cJSON *arr = g.json ? cJSON_CreateArray() : NULL;
	int r;

	(void)args; (void)nargs;
	r = store_colls(st, coll_one, arr);
	store_close(st);
	if (r < 0) {
		cJSON_Delete(arr);
		err("cannot list collections: %s", errstr(r));
		return EXIT_FAIL;
	}
	if (arr)
		print_json(arr);
	return EXIT_OK;
}

/* ---- ls --------------------------------------------------------------- */

struct ls_ctx {
	bool first;
	bool meta;	/* the collection holds a PG meta object */
};

/* Streams names (a collection may hold millions: no array in memory). */
static int ls_one(void *arg, const char *oid)
{
	struct ls_ctx *c = arg;
	char *e;

	/* Names starting with byte 0x01 are the OSD's own (the PG meta
	 * object holding the PG log and info, osd/pglog.h): not listed,
	 * since no client can name them; in bash `omap COLL $'\x01pgmeta'`
	 * shows the log.  The JSON output says "pg_meta": true instead. */
	if (oid[0] == '\001') {
		c->meta = true;
		return 0;
	}
	e = escape(oid, strlen(oid));

	if (g.json) {
		/* The escaped text is printable ASCII: as a JSON string it
		 * needs only '"' and '\\' escaped. */
		printf("%s\n    \"", c->first ? "" : ",");
		for (const char *p = e; *p; p++) {
			if (*p == '"' || *p == '\\')
				putchar('\\');
			putchar(*p);
		}
		putchar('"');
		c->first = false;
	} else {
		puts(e);
	}
	free(e);
	return 0;
}

static int cmd_ls(char **args, int nargs)
{
	struct ls_ctx c = { .first = true };
	struct store *st;
	uint64_t coll;
	char cs[24];
	int r;

	(void)nargs;
	if (coll_arg(args[0], &coll) < 0)
		return EXIT_USAGE;
	st = open_ro();
	coll_str(cs, coll);
	r = store_coll_exists(st, coll);
	if (r == 0) {
		store_close(st);
		err("collection %s does not exist; list them with: " PROG " colls", cs);
		return EXIT_FAIL;
	}
	if (g.json)
		printf("{\n  \"coll\": \"%s\",\n  \"objects\": [", cs);
	r = store_list(st, coll, g.after, g.max, ls_one, &c);
	store_close(st);
	if (g.json)
		printf("%s],\n  \"pg_meta\": %s\n}\n", c.first ? "" : "\n  ",
		       c.meta ? "true" : "false");
	if (r < 0) {
		fflush(stdout);
		err("cannot list collection %s: %s", cs, errstr(r));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* ---- stat ------------------------------------------------------------- */

static int cmd_stat(char **args, int nargs)
{
	struct store_stat s;
	struct store *st;
	uint64_t coll;
	char cs[24];
	int r;

	(void)nargs;
	if (coll_arg(args[0], &coll) < 0)
		return EXIT_USAGE;
	st = open_ro();
	r = store_stat(st, coll, args[1], &s);
	if (r < 0) {
		not_found(st, coll, args[1], r);
		store_close(st);
		return EXIT_FAIL;
	}
	store_close(st);
	coll_str(cs, coll);
	if (g.json) {
		cJSON *j = cJSON_CreateObject();

		char *e = escape(args[1], strlen(args[1]));

		cJSON_AddStringToObject(j, "coll", cs);
		cJSON_AddStringToObject(j, "oid", e);
		free(e);
		cJSON_AddNumberToObject(j, "size", (double)s.size);
		cJSON_AddNumberToObject(j, "blocks", (double)s.blocks);
		cJSON_AddNumberToObject(j, "allocated", (double)s.blocks * STORE_BLOCK_SIZE);
		cJSON_AddNumberToObject(j, "attrs", s.nattrs);
		cJSON_AddBoolToObject(j, "inline", s.is_inline);
		print_json(j);
	} else {
		char *e = escape(args[1], strlen(args[1]));
		char hb[32];

		human_bytes(hb, sizeof(hb), s.size);
		printf("object    %s\ncoll      %s\nsize      %" PRIu64 " (%s)\n"
		       "blocks    %" PRIu64 " of %u bytes\nattrs     %u\ninline    %s\n",
		       e, cs, s.size, hb, s.blocks, STORE_BLOCK_SIZE, s.nattrs,
		       s.is_inline ? "yes (data kept in the kv)" : "no");
		free(e);
	}
	return EXIT_OK;
}

/* ---- get -------------------------------------------------------------- */

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int cmd_get(char **args, int nargs)
{
	const size_t chunk = 1 << 20;
	const char *file = nargs > 2 && strcmp(args[2], "-") ? args[2] : NULL;
	struct store_stat s;
	struct store *st;
	uint64_t coll, off = 0;
	char *buf;
	int fd = STDOUT_FILENO, r, rc = EXIT_FAIL;

	if (coll_arg(args[0], &coll) < 0)
		return EXIT_USAGE;
	if (g.json) {
		err("get writes the object's raw data; --format json does not apply to it");
		return EXIT_USAGE;
	}
	st = open_ro();
	r = store_stat(st, coll, args[1], &s);
	if (r < 0) {
		not_found(st, coll, args[1], r);
		goto out_close;
	}
	buf = malloc(chunk);
	if (!buf) {
		err("out of memory");
		goto out_close;
	}
	if (file) {
		fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			err("cannot create '%s': %s", file, strerror(errno));
			goto out_free_buf;
		}
	}
	while (off < s.size) {
		size_t want = s.size - off < chunk ? (size_t)(s.size - off) : chunk;
		int64_t n = store_read(st, coll, args[1], off, want, buf);

		if (n < 0) {
			err("reading object '%s' failed at offset %" PRIu64 ": %s%s", args[1], off,
			    errstr((int)n), n == -EIO ? " (a checksum mismatch: run fsck --deep)" : "");
			goto out_close_fd;
		}
		if (n == 0)
			break;
		r = write_all(fd, buf, (size_t)n);
		if (r < 0) {
			err("cannot write to '%s': %s", file ? file : "standard output", errstr(r));
			goto out_close_fd;
		}
		off += (uint64_t)n;
	}
	if (file && fsync(fd) < 0 && errno != EINVAL) {
		err("cannot write to '%s': %s", file, strerror(errno));
		goto out_close_fd;
	}
	rc = EXIT_OK;
out_close_fd:
	if (file) {
		close(fd);
		if (rc != EXIT_OK)
			unlink(file);
	}
out_free_buf:
	free(buf);
out_close:
	store_close(st);
	return rc;
}

/* ---- attrs and omap --------------------------------------------------- */

/* One key/value pair as plain text ("name = value (N bytes)") or as a
 * JSON object added to the array in arg. */
static int kv_out(cJSON *arr, const char *keyname, const void *key, size_t klen,
		  const void *val, size_t vlen)
{
	char *k = escape(key, klen), *v = escape(val, vlen);

	if (arr) {
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, keyname, k);
		cJSON_AddStringToObject(e, "value", v);
		cJSON_AddNumberToObject(e, "size", (double)vlen);
		cJSON_AddItemToArray(arr, e);
	} else {
		printf("%s = %s (%zu byte%s)\n", k, v, vlen, vlen == 1 ? "" : "s");
	}
	free(k);
	free(v);
	return 0;
}

static int attr_one(void *arg, const char *name, const void *val, size_t len)
{
	return kv_out(arg, "name", name, strlen(name), val, len);
}

static int omap_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	return kv_out(arg, "key", key, klen, val, vlen);
}

static int cmd_attrs_omap(char **args, bool omap)
{
	struct store *st;
	uint64_t coll;
	char cs[24];
	cJSON *j = NULL, *arr = NULL;
	int r;

	if (coll_arg(args[0], &coll) < 0)
		return EXIT_USAGE;
	st = open_ro();
	coll_str(cs, coll);
	if (g.json) {
		char *e = escape(args[1], strlen(args[1]));

		j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "coll", cs);
		cJSON_AddStringToObject(j, "oid", e);
		free(e);
		arr = cJSON_AddArrayToObject(j, omap ? "omap" : "attrs");
	}
	if (omap)
		r = store_omap_list(st, coll, args[1], g.after, g.after ? strlen(g.after) : 0,
				    g.max, omap_one, arr);
	else
		r = store_attrs(st, coll, args[1], attr_one, arr);
	if (r < 0) {
		not_found(st, coll, args[1], r);
		store_close(st);
		cJSON_Delete(j);
		return EXIT_FAIL;
	}
	store_close(st);
	if (j)
		print_json(j);
	return EXIT_OK;
}

static int cmd_attrs(char **args, int nargs)
{
	(void)nargs;
	return cmd_attrs_omap(args, false);
}

static int cmd_omap(char **args, int nargs)
{
	(void)nargs;
	return cmd_attrs_omap(args, true);
}

/* ---- statfs ----------------------------------------------------------- */

static int cmd_statfs(char **args, int nargs)
{
	struct store *st = open_ro();
	struct store_statfs s;
	int r;

	(void)args; (void)nargs;
	r = store_statfs(st, &s);
	store_close(st);
	if (r < 0) {
		err("statfs failed: %s", errstr(r));
		return EXIT_FAIL;
	}
	if (g.json) {
		cJSON *j = cJSON_CreateObject();

		cJSON_AddNumberToObject(j, "total", (double)s.total);
		cJSON_AddNumberToObject(j, "used", (double)s.used);
		cJSON_AddNumberToObject(j, "free", (double)s.free);
		cJSON_AddNumberToObject(j, "objects", (double)s.objects);
		cJSON_AddNumberToObject(j, "stored", (double)s.stored);
		cJSON_AddNumberToObject(j, "kv_max", (double)s.kv_max);
		cJSON_AddNumberToObject(j, "kv_used", (double)s.kv_used);
		cJSON_AddNumberToObject(j, "kv_held", (double)s.kv_held);
		cJSON_AddNumberToObject(j, "compressed_saved", (double)s.compressed_saved);
		print_json(j);
	} else {
		static const char *names[] = { "total", "used", "free", "stored", "kv_max",
					       "kv_used", "kv_held", "compressed_saved" };
		uint64_t v[] = { s.total, s.used, s.free, s.stored, s.kv_max, s.kv_used,
				 s.kv_held, s.compressed_saved };

		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			char hb[32];

			human_bytes(hb, sizeof(hb), v[i]);
			printf("%-17s %" PRIu64 " (%s)\n", names[i], v[i], hb);
		}
		printf("%-17s %" PRIu64 "\n", "objects", s.objects);
	}
	return EXIT_OK;
}

/* ---- log ---------------------------------------------------------------- */

static const char *const log_dbs[STORE_LOG_NDB] = { "attr", "omap", "onode", "meta", "chunk" };

static int log_one(void *arg, const struct store_log_record *rec)
{
	cJSON *arr = arg;

	if (arr) {
		cJSON *j = cJSON_CreateObject(), *m = cJSON_CreateObject();

		cJSON_AddNumberToObject(j, "lsn", (double)rec->lsn);
		cJSON_AddNumberToObject(j, "seq", (double)rec->seq);
		cJSON_AddNumberToObject(j, "pos", (double)rec->pos);
		cJSON_AddNumberToObject(j, "nblocks", (double)rec->nblocks);
		cJSON_AddNumberToObject(j, "version", rec->version);
		cJSON_AddNumberToObject(j, "blocks", rec->blocks);
		cJSON_AddNumberToObject(j, "bad_blocks", rec->bad_blocks);
		for (int d = 0; d < STORE_LOG_NDB; d++)
			cJSON_AddNumberToObject(m, log_dbs[d], rec->mutations[d]);
		cJSON_AddItemToObject(j, "mutations", m);
		cJSON_AddBoolToObject(j, "kv", rec->kv);
		if (rec->error)
			cJSON_AddStringToObject(j, "error", errstr(rec->error));
		cJSON_AddItemToArray(arr, j);
		return 0;
	}
	printf("lsn %" PRIu64 " seq %" PRIu64 " at %" PRIu64 ", %u blocks", rec->lsn, rec->seq,
	       rec->pos, rec->nblocks);
	if (rec->error) {
		printf(": does not read back whole (%s)\n", errstr(rec->error));
		return 0;
	}
	printf(" (version %u%s): %u logged block%s", rec->version, rec->kv ? ", with a kv commit" : "",
	       rec->blocks, rec->blocks == 1 ? "" : "s");
	if (rec->bad_blocks)
		printf(" (%u with a bad checksum)", rec->bad_blocks);
	for (int d = 0; d < STORE_LOG_NDB; d++)
		if (rec->mutations[d])
			printf(", %u %s", rec->mutations[d], log_dbs[d]);
	putchar('\n');
	return 0;
}

static int cmd_log(char **args, int nargs)
{
	struct store *st = open_ro();
	struct store_log_info info;
	cJSON *arr = g.json ? cJSON_CreateArray() : NULL;
	int r;

	(void)args; (void)nargs;
	r = store_log_list(st, &info, log_one, arr);
	store_close(st);
	if (r < 0) {
		cJSON_Delete(arr);
		err("cannot list the log: %s", errstr(r));
		return EXIT_FAIL;
	}
	if (arr) {
		cJSON *j = cJSON_CreateObject();

		cJSON_AddNumberToObject(j, "checkpoint_lsn", (double)info.ckpt_lsn);
		cJSON_AddNumberToObject(j, "tail", (double)info.tail);
		cJSON_AddNumberToObject(j, "head", (double)info.head);
		cJSON_AddNumberToObject(j, "log_blocks", (double)info.blocks);
		cJSON_AddItemToObject(j, "records", arr);
		print_json(j);
	} else {
		printf("log: %" PRIu64 " blocks, checkpoint at lsn %" PRIu64 ", %" PRIu64
		       " blocks in use\n", info.blocks, info.ckpt_lsn, info.head - info.tail);
	}
	return EXIT_OK;
}

/* ---- mkfs ------------------------------------------------------------- */

static int cmd_mkfs(char **args, int nargs)
{
	struct store_options so;
	struct store *st;
	struct stat sb;
	char uuid[37];
	int r;

	(void)args; (void)nargs;
	if (store_paths() < 0)
		return EXIT_USAGE;
	if (g.data && mkdir(g.data, 0755) < 0 && errno != EEXIST) {
		err("cannot create folder '%s': %s", g.data, strerror(errno));
		return EXIT_FAIL;
	}
	if ((stat(g.block, &sb) < 0 || (S_ISREG(sb.st_mode) && sb.st_size == 0)) && !g.size) {
		err("block '%s' does not exist yet; give its size with --size SIZE (e.g. --size 10G)",
		    g.block);
		return EXIT_USAGE;
	}
	fill_options(&so, false);
	/* Like an OSD: real blocks behind a file (see store.h), unless asked. */
	so.prefill = !g.no_zero;
	r = store_mkfs(&so);
	if (r == -EEXIST) {
		err("'%s' or '%s' already holds a store; mkfs never overwrites one", g.block, g.kv);
		return EXIT_FAIL;
	}
	if (r < 0) {
		err("mkfs failed for block '%s' and kv '%s': %s", g.block, g.kv, errstr(r));
		return EXIT_FAIL;
	}
	fill_options(&so, true);
	so.block_size = 0;
	r = store_open(&so, &st);
	if (r < 0) {
		err("the new store at '%s' does not open: %s", g.block, errstr(r));
		return EXIT_FAIL;
	}
	store_uuid(st, uuid);
	store_close(st);
	if (g.json) {
		cJSON *j = cJSON_CreateObject();

		cJSON_AddStringToObject(j, "uuid", uuid);
		cJSON_AddStringToObject(j, "block", g.block);
		cJSON_AddStringToObject(j, "kv", g.kv);
		print_json(j);
	} else {
		printf("created store %s in block '%s' and kv '%s'\n", uuid, g.block, g.kv);
	}
	return EXIT_OK;
}

/* ---- the command table and help --------------------------------------- */

static int cmd_help(char **args, int nargs);

static const struct cmd cmds[] = {
	{ "fsck", "[--deep]",
	  "check metadata, allocator and checksums",
	  "Checks that metadata, allocator and checksums agree and prints each\n"
	  "problem found.  --deep also reads every data block and checks its crc32c.\n"
	  "Exits 0 when the store is clean, 1 when problems were found.",
	  0, 0, O_DEEP, cmd_fsck },
	{ "colls", "",
	  "list the collections",
	  "Lists the collections (one per placement group) with their flags.",
	  0, 0, 0, cmd_colls },
	{ "ls", "COLL [--after OID] [--max N]",
	  "list the objects of a collection",
	  "Lists the objects of collection COLL in order; --after starts after the\n"
	  "name OID, --max stops after N names.",
	  1, 1, O_AFTER | O_MAX, cmd_ls },
	{ "stat", "COLL OID",
	  "size and placement of an object",
	  "Prints the size, allocated blocks, attribute count and placement (inline in\n"
	  "the kv or in the block) of object OID.",
	  2, 2, 0, cmd_stat },
	{ "get", "COLL OID [FILE]",
	  "an object's data, to FILE or stdout",
	  "Writes the data of object OID to FILE, or to standard output when FILE is\n"
	  "missing or '-'.  Every block's checksum is verified: a mismatch fails with\n"
	  "an I/O error and leaves no partial FILE.",
	  2, 3, 0, cmd_get },
	{ "attrs", "COLL OID",
	  "an object's attributes",
	  "Prints the attributes of object OID, in name order.",
	  2, 2, 0, cmd_attrs },
	{ "omap", "COLL OID [--after KEY] [--max N]",
	  "an object's key/value map",
	  "Prints the key/value map of object OID, in key order.",
	  2, 2, O_AFTER | O_MAX, cmd_omap },
	{ "log", "",
	  "the write-ahead log's records not yet checkpointed",
	  "Lists the log's records that a crash or kill left behind (a closed store\n"
	  "has none: close checkpoints them), oldest first: number, commit number,\n"
	  "place, size, record format, logged data blocks and kv mutations by kind\n"
	  "(attr, omap, onode, meta, chunk).  The store is opened read-only: the\n"
	  "records are read, not applied.",
	  0, 0, 0, cmd_log },
	{ "statfs", "",
	  "space and object counts",
	  "Prints space use: data area total/used/free, objects, logical bytes\n"
	  "stored, kv size and use, bytes saved by compression.",
	  0, 0, 0, cmd_statfs },
	{ "mkfs", "[--size SIZE] [--kv-max SIZE] [--no-zero-fill]",
	  "create a new, empty store",
	  "Creates a new, empty store in --block PATH and --kv DIR (or --data DIR).\n"
	  "--size sets the size of a block file to create (a device is used whole);\n"
	  "--kv-max the largest the kv may grow (default 1/8 of the block).  A block\n"
	  "file gets zeros written over it once, as an OSD's does, so that the file\n"
	  "system has real blocks behind it; --no-zero-fill skips that (tests,\n"
	  "quick looks).  Never overwrites an existing store.",
	  0, 0, O_SIZE | O_NOZERO, cmd_mkfs },
	{ "help", "[COMMAND]",
	  "help of a command", "Prints the help of COMMAND, or this overview.", 0, 1, 0, cmd_help },
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static const char common_help[] =
"Store options (before or after the command):\n"
"  --data DIR         the store in DIR/block and DIR/kv (an OSD's data folder)\n"
"  --block PATH       the store's block file or device\n"
"  --kv DIR           the folder of the store's key-value store\n"
"  --kv-max SIZE      kv map size, when the store was made with a non-default one\n"
"  --format FMT       plain (default) or json\n"
"  -v, --verbose      also print the store's own log (-vv: debug)\n"
"  -h, --help         help (of the command, when one is given)\n"
"\n"
"COLL is a collection id, a 64-bit number, printed in hex (0x2a) and accepted\n"
"as hex with 0x or as decimal (42).  OID is an object name as it is stored.\n"
"Names, attribute values and omap entries are printed, in plain text and in\n"
"JSON strings alike, with printable ASCII as it is, a backslash as \\\\ and\n"
"every other byte as \\xNN; OID and KEY are given as raw text.  SIZE takes a\n"
"suffix K, M, G or T (powers of 1024).\n"
"\n"
"The store is opened read-only (except by mkfs): stop the OSD that owns it\n"
"first.  `ls` leaves out the PG meta object (name \\x01pgmeta: the PG log and\n"
"info); see it with: omap COLL $'\\x01pgmeta'.  Exit codes: 0 done, 1 failed (or fsck found problems), 2 bad usage.\n";

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " [--data DIR | --block PATH --kv DIR] [--format json] "
		"COMMAND [ARGS]\n\nInspects the store of a stopped atoll OSD.\n\nCommands:\n");
	for (size_t i = 0; i < NCMDS; i++) {
		char syn[64];

		snprintf(syn, sizeof(syn), "%s %s", cmds[i].name, cmds[i].args);
		fprintf(f, "  %-38s %s\n", syn, cmds[i].summary);
	}
	fprintf(f, "\n%s", common_help);
}

static void cmd_usage(FILE *f, const struct cmd *c)
{
	fprintf(f, "usage: " PROG " [--data DIR | --block PATH --kv DIR] [--format json] %s %s\n\n"
		"%s\n\n%s", c->name, c->args, c->help, common_help);
}

static const struct cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < NCMDS; i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

static void unknown_cmd(const char *name)
{
	err("unknown command '%s'; the commands are fsck, colls, ls, stat, get, attrs, omap, log, "
	    "statfs and mkfs (see " PROG " --help)", name);
}

static int cmd_help(char **args, int nargs)
{
	const struct cmd *c;

	if (nargs == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	c = find_cmd(args[0]);
	if (!c) {
		unknown_cmd(args[0]);
		return EXIT_USAGE;
	}
	cmd_usage(stdout, c);
	return EXIT_OK;
}

enum {
	OPT_DATA = 256, OPT_BLOCK, OPT_KV, OPT_FORMAT, OPT_DEEP, OPT_SIZE, OPT_KVMAX,
	OPT_AFTER, OPT_MAX, OPT_NOZERO,
};

static const char *opt_name(unsigned o)
{
	switch (o) {
	case O_DEEP: return "--deep";
	case O_SIZE: return "--size";
	case O_AFTER: return "--after";
	case O_MAX: return "--max";
	default: return "--no-zero-fill";
	}
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "data", required_argument, NULL, OPT_DATA },
		{ "block", required_argument, NULL, OPT_BLOCK },
		{ "kv", required_argument, NULL, OPT_KV },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "deep", no_argument, NULL, OPT_DEEP },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "kv-max", required_argument, NULL, OPT_KVMAX },
		{ "after", required_argument, NULL, OPT_AFTER },
		{ "max", required_argument, NULL, OPT_MAX },
		{ "no-zero-fill", no_argument, NULL, OPT_NOZERO },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd *c;
	bool help = false;
	int opt, nargs;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hv", lopts, NULL)) != -1) {
		switch (opt) {
		case OPT_DATA: g.data = optarg; break;
		case OPT_BLOCK: g.block = optarg; break;
		case OPT_KV: g.kv = optarg; break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "json"))
				g.json = true;
			else if (!strcmp(optarg, "plain"))
				g.json = false;
			else {
				err("unknown format '%s'; use --format plain or --format json", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_DEEP: g.deep = true; g.given |= O_DEEP; break;
		case OPT_SIZE:
			if (config_parse_size(optarg, &g.size) || g.size == 0) {
				err("--size '%s' is not a size; give bytes or a number with K, M, G or T",
				    optarg);
				return EXIT_USAGE;
			}
			g.given |= O_SIZE;
			break;
		case OPT_KVMAX:
			if (config_parse_size(optarg, &g.kv_max) || g.kv_max == 0) {
				err("--kv-max '%s' is not a size; give bytes or a number with K, M, G or T",
				    optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_AFTER: g.after = optarg; g.given |= O_AFTER; break;
		case OPT_NOZERO: g.no_zero = true; g.given |= O_NOZERO; break;
		case OPT_MAX: {
			char *end;

			errno = 0;
			g.max = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-') {
				err("--max '%s' is not a whole number", optarg);
				return EXIT_USAGE;
			}
			g.given |= O_MAX;
			break;
		}
		case 'h': help = true; break;
		case 'v': g.verbose++; break;
		case ':':
			err("option '%s' needs a value (see " PROG " --help)", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			err("unknown option '%s' (see " PROG " --help)", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (g.verbose)
		log_open(PROG, g.verbose > 1 ? LOG_LVL_DEBUG : LOG_LVL_INFO, NULL);
	if (optind >= argc) {
		if (help) {
			usage(stdout);
			return EXIT_OK;
		}
		err("no command given; the commands are fsck, colls, ls, stat, get, attrs, omap, log, "
		    "statfs and mkfs (see " PROG " --help)");
		return EXIT_USAGE;
	}
	c = find_cmd(argv[optind]);
	if (!c) {
		unknown_cmd(argv[optind]);
		return EXIT_USAGE;
	}
	if (help) {
		cmd_usage(stdout, c);
		return EXIT_OK;
	}
	nargs = argc - optind - 1;
	if (nargs < c->nargs_min || nargs > c->nargs_max) {
		err("'%s' %s; usage: " PROG " %s %s", c->name,
		    nargs < c->nargs_min ? "needs more arguments" : "takes fewer arguments",
		    c->name, c->args);
		return EXIT_USAGE;
	}
	for (unsigned o = 1; o <= O_NOZERO; o <<= 1)
		if ((g.given & o) && !(c->opts & o)) {
			err("option '%s' does not apply to '%s' (see " PROG " %s --help)",
			    opt_name(o), c->name, c->name);
			return EXIT_USAGE;
		}
	return c->fn(argv + optind + 1, nargs);
}
