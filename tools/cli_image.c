/*
 * cli_image.c - `atoll image ...`: block images (libatoll-image,
 * include/atoll/image.h), and `atoll osd blocklist ...`, the fence that
 * breaking an image's lock puts up.
 *
 * import and export stream in object-sized pieces with several in
 * flight; import skips all-zero pieces (the image stays sparse) and, from
 * a pipe, grows the image as data arrives.  A progress bar is drawn on
 * stderr only when stderr is a terminal.
 */
#include "cli.h"
#include "atoll/image.h"
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 8

/* 64-bit integers exactly (cJSON numbers are doubles). */
static void add_u64(cJSON *o, const char *k, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	cJSON_AddRawToObject(o, k, buf);
}

static int image_error(const char *pool, const char *name, const char *what, int err)
{
	if (err == -ENOENT)
		cli_err("image '%s' does not exist in pool '%s'; list them with: atoll image ls %s",
			name, pool, pool);
	else if (err == -EEXIST)
		cli_err("cannot %s '%s': the name is taken in pool '%s'", what, name, pool);
	else if (err == -EBUSY)
		cli_err("cannot %s '%s': another writer holds its lock (see: atoll image info %s %s); "
			"if that writer is dead, break the lock with: atoll image lock break %s %s",
			what, name, pool, name, pool, name);
	else if (err == -ENOTEMPTY)
		cli_err("cannot %s '%s': it has snapshots; remove them first or add "
			"--with-snapshots", what, name);
	else if (err == -EINVAL)
		cli_err("cannot %s '%s': invalid argument (names are 1-%d printable characters "
			"without '/', '@' or spaces; sizes are multiples of 512)",
			what, name, ATOLL_IMAGE_NAME_MAX);
	else
		cli_err("cannot %s '%s' in pool '%s': %s", what, name, pool, atoll_strerror(err));
	return cli_exit_code(err);
}

/* Splits IMAGE@SNAP into image (in buf) and snap (NULL when none). */
static int split_spec(const char *spec, char *buf, size_t len, const char **snap)
{
	const char *at = strchr(spec, '@');

	if (strlen(spec) >= len)
		return -EINVAL;
	strcpy(buf, spec);
	*snap = NULL;
	if (at) {
		buf[at - spec] = 0;
		*snap = buf + (at - spec) + 1;
	}
	return 0;
}

/* Option "--name VALUE" or "--name=VALUE" at argv[*i]; 1 when matched. */
static int opt_val(int argc, char **argv, int *i, const char *name, const char **val)
{
	size_t n = strlen(name);

	if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=') {
		*val = argv[*i] + n + 1;
		return 1;
	}
	if (strcmp(argv[*i], name))
		return 0;
	if (*i + 1 >= argc) {
		*val = NULL;
		return 1;
	}
	*val = argv[++*i];
	return 1;
}

/* image create POOL IMAGE --size SZ [--object-size SZ] */
static int run_create(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_image_create_options o = { sizeof(o), 0, 0 };
	struct atoll_ioctx *io = NULL;
	const char *pos[2], *v;
	uint64_t size = UINT64_MAX;
	int np = 0, r;

	for (int i = 0; i < argc; i++) {
		if (opt_val(argc, argv, &i, "--size", &v)) {
			if (!v || config_parse_size(v, &size))
				return cli_usage(c, "--size needs a size such as 10G");
		} else if (opt_val(argc, argv, &i, "--object-size", &v)) {
			if (!v || config_parse_size(v, &o.object_size))
				return cli_usage(c, "--object-size needs a size such as 4M");
		} else if (np < 2 && argv[i][0] != '-') {
			pos[np++] = argv[i];
		} else {
			return cli_usage(c, "unexpected '%s'", argv[i]);
		}
	}
	if (np != 2)
		return cli_usage(c, "POOL and IMAGE are needed");
	if (size == UINT64_MAX)
		return cli_usage(c, "--size is needed");
	r = cli_open_pool(cl, pos[0], &io);
	if (r)
		return r;
	r = atoll_image_create(io, pos[1], size, &o);
	atoll_ioctx_destroy(io);
	if (r)
		return image_error(pos[0], pos[1], "create image", r);
	return 0;
}

static int run_ls(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	char *buf = NULL;
	int64_t n;
	int r;

	if (argc != 1)
		return cli_usage(c, "POOL is needed");
	r = cli_open_pool(cl, argv[0], &io);
	if (r)
		return r;
	n = atoll_image_list(io, NULL, 0);
	if (n >= 0) {
		buf = malloc((size_t)n + 1);
		n = buf ? atoll_image_list(io, buf, (size_t)n) : -ENOMEM;
	}
	atoll_ioctx_destroy(io);
	if (n < 0) {
		free(buf);
		cli_err("cannot list the images of pool '%s': %s", argv[0], atoll_strerror((int)n));
		return cli_exit_code((int)n);
	}
	if (cl->json) {
		cJSON *a = cJSON_CreateArray();
		char *s;

		for (int64_t p = 0; p < n; p += (int64_t)strlen(buf + p) + 1)
			cJSON_AddItemToArray(a, cJSON_CreateString(buf + p));
		s = cJSON_PrintUnformatted(a);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(a);
	} else {
		for (int64_t p = 0; p < n; p += (int64_t)strlen(buf + p) + 1)
			printf("%s\n", buf + p);
	}
	free(buf);
	return 0;
}

static int run_info(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_image_info in = { .size_of = sizeof(in) };
	struct atoll_ioctx *io = NULL;
	char sz[32], osz[32];
	int r;

	if (argc != 2)
		return cli_usage(c, "POOL and IMAGE are needed");
	r = cli_open_pool(cl, argv[0], &io);
	if (r)
		return r;
	r = atoll_image_stat(io, argv[1], &in);
	atoll_ioctx_destroy(io);
	if (r)
		return image_error(argv[0], argv[1], "read image", r);
	if (cl->json) {
		cJSON *o = cJSON_CreateObject();
		char *s;

		cJSON_AddStringToObject(o, "pool", argv[0]);
		cJSON_AddStringToObject(o, "name", argv[1]);
		cJSON_AddStringToObject(o, "id", in.id);
		add_u64(o, "size", in.size);
		cJSON_AddNumberToObject(o, "object_size", (double)in.object_size);
		cJSON_AddNumberToObject(o, "num_objects", (double)in.num_objects);
		cJSON_AddStringToObject(o, "prefix", in.prefix);
		cJSON_AddNumberToObject(o, "num_snaps", in.num_snaps);
		cJSON_AddNumberToObject(o, "features", (double)in.features);
		if (in.lock_owner) {
			char id[32];

			snprintf(id, sizeof(id), "%" PRIu64, in.lock_owner);
			cJSON_AddStringToObject(o, "lock_owner", id);
		} else {
			cJSON_AddNullToObject(o, "lock_owner");
		}
		add_u64(o, "created_ns", in.created_ns);
		s = cJSON_PrintUnformatted(o);
		printf("%s\n", s);
		free(s);
		cJSON_Delete(o);
		return 0;
	}
	cli_human_bytes((double)in.size, sz, sizeof(sz));
	cli_human_bytes((double)in.object_size, osz, sizeof(osz));
	printf("image '%s' (pool '%s')\n"
	       "  size %s (%" PRIu64 " bytes) in %" PRIu64 " objects of %s\n"
	       "  id %s, data objects %s*\n"
	       "  snapshots %u\n",
	       argv[1], argv[0], sz, in.size, in.num_objects, osz, in.id, in.prefix,
	       in.num_snaps);
	if (in.lock_owner)
		printf("  locked by client.%" PRIu64 "\n", in.lock_owner);
	else
		printf("  not locked\n");
	return 0;
}

static int open_img(struct cli *cl, const char *pool, const char *spec, unsigned flags,
		    struct atoll_ioctx **io, struct atoll_image **img)
{
	struct atoll_image_open_options o = { sizeof(o), flags, 0, NULL, NULL };
	int r = cli_open_pool(cl, pool, io);

	if (r)
		return r;
	r = atoll_image_open(*io, spec, &o, img);
	if (r) {
		atoll_ioctx_destroy(*io);
		*io = NULL;
		return image_error(pool, spec, "open image", r);
	}
	return 0;
}

static int run_resize(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	struct atoll_image *img = NULL;
	const char *pos[2], *v;
	uint64_t size = UINT64_MAX;
	int np = 0, r;

	for (int i = 0; i < argc; i++) {
		if (opt_val(argc, argv, &i, "--size", &v)) {
			if (!v || config_parse_size(v, &size))
				return cli_usage(c, "--size needs a size such as 10G");
		} else if (np < 2 && argv[i][0] != '-') {
			pos[np++] = argv[i];
		} else {
			return cli_usage(c, "unexpected '%s'", argv[i]);
		}
	}
	if (np != 2 || size == UINT64_MAX)
		return cli_usage(c, "POOL, IMAGE and --size are needed");
	r = open_img(cl, pos[0], pos[1], 0, &io, &img);
	if (r)
		return r;
	r = atoll_image_resize(img, size, 0);
	atoll_image_close(img);
	atoll_ioctx_destroy(io);
	if (r)
		return image_error(pos[0], pos[1], "resize image", r);
	return 0;
}

static int run_rm(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	const char *pos[2];
	unsigned flags = 0;
	int np = 0, r;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--with-snapshots"))
			flags |= ATOLL_IMAGE_REMOVE_SNAPSHOTS;
		else if (np < 2 && argv[i][0] != '-')
			pos[np++] = argv[i];
		else
			return cli_usage(c, "unexpected '%s'", argv[i]);
	}
	if (np != 2)
		return cli_usage(c, "POOL and IMAGE are needed");
	r = cli_open_pool(cl, pos[0], &io);
	if (r)
		return r;
	r = atoll_image_remove(io, pos[1], flags);
	atoll_ioctx_destroy(io);
	if (r)
		return image_error(pos[0], pos[1], "remove image", r);
	return 0;
}

static int run_lock_break(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	int r;

	if (argc != 2)
		return cli_usage(c, "POOL and IMAGE are needed");
	r = cli_open_pool(cl, argv[0], &io);
	if (r)
		return r;
	r = atoll_image_break_lock(io, argv[1], 0);
	atoll_ioctx_destroy(io);
	if (r)
		return image_error(argv[0], argv[1], "break the lock of image", r);
	return 0;
}

/* snap create|rm|rollback POOL IMAGE@SNAP */
static int snap_op(struct cli *cl, const struct cli_cmd *c, int argc, char **argv, int which)
{
	static const char *const what[] = { "snapshot image", "remove the snapshot of",
					    "roll back image" };
	struct atoll_ioctx *io = NULL;
	char name[2 * ATOLL_IMAGE_NAME_MAX + 2];
	const char *snap;
	int r;

	if (argc != 2 || split_spec(argv[1], name, sizeof(name), &snap) || !snap)
		return cli_usage(c, "POOL and IMAGE@SNAP are needed");
	r = cli_open_pool(cl, argv[0], &io);
	if (r)
		return r;
	if (which == 0)
		r = atoll_image_snap_create(io, name, snap, 0, 0);
	else if (which == 1)
		r = atoll_image_snap_remove(io, name, snap, 0, 0);
	else
		r = atoll_image_snap_rollback(io, name, snap, 0);
	atoll_ioctx_destroy(io);
	if (r == -EEXIST) {
		cli_err("snapshot '%s' of image '%s' exists already", snap, name);
		return CLI_EXIT_ERROR;
	}
	if (r == -ETIMEDOUT) {
		cli_err("the writer of image '%s' did not take snapshot '%s' in time; "
			"is it stuck? see: atoll image info %s %s", name, snap, argv[0], name);
		return CLI_EXIT_ERROR;
	}
	if (r == -ENOENT && which) {
		cli_err("image '%s' has no snapshot '%s'; list them with: atoll image snap ls %s %s",
			name, snap, argv[0], name);
		return CLI_EXIT_NOENT;
	}
	if (r)
		return image_error(argv[0], name, what[which], r);
	return 0;
}

static int run_snap_create(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	return snap_op(cl, c, argc, argv, 0);
}

static int run_snap_rm(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	return snap_op(cl, c, argc, argv, 1);
}

static int run_snap_rollback(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	return snap_op(cl, c, argc, argv, 2);
}

struct snap_ls {
	bool json;
	cJSON *a;
};

static int snap_print(const struct atoll_image_snap_info *s, void *arg)
{
	struct snap_ls *l = arg;
	char sz[32];

	if (l->json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "id", (double)s->id);
		cJSON_AddStringToObject(o, "name", s->name);
		add_u64(o, "size", s->size);
		add_u64(o, "created_ns", s->created_ns);
		cJSON_AddItemToArray(l->a, o);
	} else {
		time_t t = (time_t)(s->created_ns / 1000000000ull);
		char when[32];

		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
		cli_human_bytes((double)s->size, sz, sizeof(sz));
		printf("%-6" PRIu64 " %-24s %10s  %s\n", s->id, s->name, sz, when);
	}
	return 0;
}

static int run_snap_ls(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	struct snap_ls l = { cl->json, NULL };
	int r;

	if (argc != 2)
		return cli_usage(c, "POOL and IMAGE are needed");
	r = cli_open_pool(cl, argv[0], &io);
	if (r)
		return r;
	if (l.json)
		l.a = cJSON_CreateArray();
	else
		printf("%-6s %-24s %10s  %s\n", "ID", "NAME", "SIZE", "CREATED");
	r = atoll_image_snap_list(io, argv[1], snap_print, &l);
	atoll_ioctx_destroy(io);
	if (r) {
		cJSON_Delete(l.a);
		return image_error(argv[0], argv[1], "list the snapshots of", r);
	}
	if (l.json) {
		char *s = cJSON_PrintUnformatted(l.a);

		printf("%s\n", s);
		free(s);
		cJSON_Delete(l.a);
	}
	return 0;
}

/* ---- import / export: a window of object-sized requests ------------- */

struct slot {
	char *buf;
	size_t len;
	uint64_t off;
	bool busy;
	int64_t result;
};

struct window {
	pthread_mutex_t m;
	pthread_cond_t c;
	struct slot s[WINDOW];
	int err;
};

struct slot_arg {
	struct window *w;
	struct slot *s;
};

/* A slot's completion fired; the slot held the only other reference. */
static void on_done(struct atoll_completion *comp, void *arg)
{
	struct slot_arg *a = arg;
	int64_t result = atoll_completion_return(comp);

	atoll_completion_release(comp);
	pthread_mutex_lock(&a->w->m);
	a->s->result = result;
	a->s->busy = false;
	if (result < 0 && !a->w->err)
		a->w->err = (int)result;
	pthread_cond_broadcast(&a->w->c);
	pthread_mutex_unlock(&a->w->m);
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
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static bool all_zero(const char *b, size_t n)
{
	return n == 0 || (b[0] == 0 && !memcmp(b, b + 1, n - 1));
}

/* image import POOL IMAGE FILE|- [--object-size SZ] */
static int run_import(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_image_create_options co = { sizeof(co), 0, 0 };
	struct atoll_ioctx *io = NULL;
	struct atoll_image *img = NULL;
	struct atoll_completion *comp;
	struct window w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {{0}}, 0 };
	struct slot_arg args[WINDOW];
	struct cli_progress bar;
	const char *pos[3], *v;
	uint64_t total = 0, off = 0, cap, piece;
	struct stat st;
	int np = 0, fd, r, i;
	bool eof = false;

	for (i = 0; i < argc; i++) {
		if (opt_val(argc, argv, &i, "--object-size", &v)) {
			if (!v || config_parse_size(v, &co.object_size))
				return cli_usage(c, "--object-size needs a size such as 4M");
		} else if (np < 3 && (argv[i][0] != '-' || !strcmp(argv[i], "-"))) {
			pos[np++] = argv[i];
		} else {
			return cli_usage(c, "unexpected '%s'", argv[i]);
		}
	}
	if (np != 3)
		return cli_usage(c, "POOL, IMAGE and FILE (or -) are needed");
	fd = strcmp(pos[2], "-") ? open(pos[2], O_RDONLY) : 0;
	if (fd < 0) {
		cli_err("cannot open '%s': %s", pos[2], strerror(errno));
		return CLI_EXIT_ERROR;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		total = (uint64_t)st.st_size;
	r = cli_open_pool(cl, pos[0], &io);
	if (r)
		goto out_close;
	/* a regular file's size is known (rounded up to 512); a pipe grows
	 * the image as it goes */
	cap = total ? (total + 511) / 512 * 512 : (64ull << 20);
	cli_progress_init(&bar, cl, "importing", CLI_PROGRESS_BYTES);
	r = atoll_image_create(io, pos[1], cap, &co);
	if (r) {
		r = image_error(pos[0], pos[1], "create image", r);
		goto out_io;
	}
	{
		struct atoll_image_open_options oo = { sizeof(oo), 0, 0, NULL, NULL };

		r = atoll_image_open(io, pos[1], &oo, &img);
		if (r) {
			r = image_error(pos[0], pos[1], "open image", r);
			goto out_io;
		}
	}
	piece = atoll_image_object_size(img);
	for (i = 0; i < WINDOW; i++) {
		w.s[i].buf = malloc(piece);
		args[i] = (struct slot_arg){ &w, &w.s[i] };
		if (!w.s[i].buf) {
			r = CLI_EXIT_ERROR;
			cli_err("out of memory");
			goto out_img;
		}
	}
	while (!eof && !w.err) {
		struct slot *s = NULL;
		ssize_t n;

		pthread_mutex_lock(&w.m);
		for (;;) {
			for (i = 0; i < WINDOW && !s; i++)
				if (!w.s[i].busy)
					s = &w.s[i];
			if (s || w.err)
				break;
			pthread_cond_wait(&w.c, &w.m);
		}
		pthread_mutex_unlock(&w.m);
		if (!s)
			break;
		n = read_full(fd, s->buf, piece);
		if (n < 0) {
			cli_err("cannot read '%s': %s", pos[2], strerror((int)-n));
			w.err = -EIO;
			break;
		}
		if ((size_t)n < piece)
			eof = true;
		if (n == 0)
			break;
		if (off + (uint64_t)n > cap) {
			/* wait for the window before changing the size */
			pthread_mutex_lock(&w.m);
			for (i = 0; i < WINDOW; i++)
				while (w.s[i].busy)
					pthread_cond_wait(&w.c, &w.m);
			pthread_mutex_unlock(&w.m);
			while (cap < off + (uint64_t)n)
				cap *= 2;
			r = atoll_image_resize(img, cap, 0);
			if (r) {
				w.err = r;
				break;
			}
		}
		s->len = (size_t)n;
		s->off = off;
		off += (uint64_t)n;
		cli_progress_update(&bar, (double)off, (double)total);
		if (all_zero(s->buf, s->len))
			continue;	/* holes stay holes */
		if ((size_t)n % 512)
			memset(s->buf + n, 0, 512 - (size_t)n % 512);
		s->busy = true;
		r = atoll_completion_create(on_done, &args[s - w.s], NULL, &comp);
		if (!r) {
			r = atoll_image_aio_write(img, s->buf,
						  (s->len + 511) / 512 * 512 <= cap - s->off ?
						  (s->len + 511) / 512 * 512 : s->len,
						  s->off, comp, 0);
			if (r)
				atoll_completion_release(comp);
		}
		if (r) {
			s->busy = false;
			w.err = r;
		}
	}
	pthread_mutex_lock(&w.m);
	for (i = 0; i < WINDOW; i++)
		while (w.s[i].busy)
			pthread_cond_wait(&w.c, &w.m);
	pthread_mutex_unlock(&w.m);
	if (!w.err && cap != (off + 511) / 512 * 512)
		w.err = atoll_image_resize(img, (off + 511) / 512 * 512, 0);
	cli_progress_done(&bar);
	r = 0;
	if (w.err)
		r = image_error(pos[0], pos[1], "import into image", w.err);
out_img:
	for (i = 0; i < WINDOW; i++)
		free(w.s[i].buf);
	atoll_image_close(img);
out_io:
	atoll_ioctx_destroy(io);
out_close:
	if (fd > 0)
		close(fd);
	return r;
}

/* image export POOL IMAGE[@SNAP] FILE|- */
static int run_export(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct atoll_ioctx *io = NULL;
	struct atoll_image *img = NULL;
	struct atoll_completion *comp;
	struct window w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {{0}}, 0 };
	struct slot_arg args[WINDOW];
	struct cli_progress bar;
	uint64_t size, piece, next = 0, written = 0;
	int fd, r, i, head = 0;

	if (argc != 3)
		return cli_usage(c, "POOL, IMAGE[@SNAP] and FILE (or -) are needed");
	r = open_img(cl, argv[0], argv[1], ATOLL_IMAGE_OPEN_READ_ONLY, &io, &img);
	if (r)
		return r;
	fd = strcmp(argv[2], "-") ? open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644) : 1;
	if (fd < 0) {
		cli_err("cannot create '%s': %s", argv[2], strerror(errno));
		r = CLI_EXIT_ERROR;
		goto out_img;
	}
	size = atoll_image_size(img);
	piece = atoll_image_object_size(img);
	cli_progress_init(&bar, cl, "exporting", CLI_PROGRESS_BYTES);
	for (i = 0; i < WINDOW; i++) {
		w.s[i].buf = malloc(piece);
		args[i] = (struct slot_arg){ &w, &w.s[i] };
		if (!w.s[i].buf) {
			cli_err("out of memory");
			r = CLI_EXIT_ERROR;
			goto out_free;
		}
	}
	/* slots are used round robin so they complete... and are written in order */
	while (written < size && !w.err) {
		while (next < size && next - written < WINDOW * piece) {
			struct slot *s = &w.s[(next / piece) % WINDOW];

			s->len = size - next < piece ? (size_t)(size - next) : (size_t)piece;
			s->off = next;
			s->busy = true;
			r = atoll_completion_create(on_done, &args[s - w.s], NULL, &comp);
			if (!r) {
				r = atoll_image_aio_read(img, s->buf, s->len, s->off, comp, 0);
				if (r)
					atoll_completion_release(comp);
			}
			if (r) {
				s->busy = false;
				w.err = r;
				break;
			}
			next += s->len;
		}
		if (w.err)
			break;
		{
			struct slot *s = &w.s[(written / piece) % WINDOW];
			size_t done = 0;

			pthread_mutex_lock(&w.m);
			while (s->busy)
				pthread_cond_wait(&w.c, &w.m);
			pthread_mutex_unlock(&w.m);
			if (w.err)
				break;
			while (done < s->len) {
				ssize_t n = write(fd, s->buf + done, s->len - done);

				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0) {
					cli_err("cannot write '%s': %s", argv[2], strerror(errno));
					w.err = -EIO;
					break;
				}
				done += (size_t)n;
			}
			written += s->len;
			cli_progress_update(&bar, (double)written, (double)size);
		}
	}
	(void)head;
	pthread_mutex_lock(&w.m);
	for (i = 0; i < WINDOW; i++)
		while (w.s[i].busy)
			pthread_cond_wait(&w.c, &w.m);
	pthread_mutex_unlock(&w.m);
	cli_progress_done(&bar);
	r = 0;
	if (w.err == -EIO)
		r = CLI_EXIT_ERROR;
	else if (w.err)
		r = image_error(argv[0], argv[1], "export image", w.err);
	else if (fd != 1 && fsync(fd) && errno != EINVAL)
		r = CLI_EXIT_ERROR;
out_free:
	for (i = 0; i < WINDOW; i++)
		free(w.s[i].buf);
	if (fd > 1)
		close(fd);
out_img:
	atoll_image_close(img);
	atoll_ioctx_destroy(io);
	return r;
}

/* ---- osd blocklist (the fence of a broken lock) ---------------------- */

static int mon_cmd(struct cli *cl, cJSON *cmd)
{
	char *json, *status = NULL, *out = NULL;
	size_t outlen = 0;
	int r;

	r = cli_connect(cl);
	if (r) {
		cJSON_Delete(cmd);
		return r;
	}
	if (cl->json)
		cJSON_AddStringToObject(cmd, "format", "json");
	json = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);
	r = atoll_mon_command(cl->c, json, &status, &out, &outlen);
	free(json);
	if (out && outlen)
		fwrite(out, 1, outlen, stdout);
	if (out && outlen && out[outlen - 1] != '\n')
		putchar('\n');
	if (status && status[0])
		fprintf(stderr, "%s%s\n", r ? "atoll: " : "", status);
	atoll_free(status);
	atoll_free(out);
	return cli_exit_code(r);
}

static int run_bl_add(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;
	uint64_t secs = 0;

	if (argc < 1 || argc > 2 || (argc == 2 && cli_parse_uint(argv[1], 1u << 30, &secs)))
		return cli_usage(c, "CLIENT_ID and maybe SECONDS are needed");
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "prefix", "osd blocklist add");
	cJSON_AddStringToObject(cmd, "client", argv[0]);
	if (argc == 2)
		cJSON_AddNumberToObject(cmd, "seconds", (double)secs);
	return mon_cmd(cl, cmd);
}

static int run_bl_rm(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;

	if (argc != 1)
		return cli_usage(c, "CLIENT_ID is needed");
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "prefix", "osd blocklist rm");
	cJSON_AddStringToObject(cmd, "client", argv[0]);
	return mon_cmd(cl, cmd);
}

static int run_bl_ls(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;

	if (argc)
		return cli_usage(c, "no arguments");
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "prefix", "osd blocklist ls");
	return mon_cmd(cl, cmd);
}

const struct cli_cmd cli_image_cmds[] = {
	{ "image create", "POOL IMAGE --size SIZE [--object-size SIZE]",
	  "Creates a block image of SIZE bytes (K, M, G, T suffixes; a multiple of 512).\n"
	  "Data objects (--object-size, a power of two from 4K to 64M, default 4M) are\n"
	  "created on first write: a new image costs nothing.\n", run_create },
	{ "image ls", "POOL", "The images of POOL, sorted; JSON an array of names.\n", run_ls },
	{ "image info", "POOL IMAGE",
	  "Size, object size, id, snapshot count and the writer holding the lock.\n", run_info },
	{ "image resize", "POOL IMAGE --size SIZE",
	  "Grows or shrinks the image (shrinking drops the data past the new end;\n"
	  "snapshots keep theirs).  Needs the writer lock.\n", run_resize },
	{ "image rm", "POOL IMAGE [--with-snapshots]",
	  "Removes the image and its data (and its snapshots with --with-snapshots).\n", run_rm },
	{ "image lock break", "POOL IMAGE",
	  "Breaks the lock of a writer that died, and fences it: its client id goes on\n"
	  "the OSD blocklist (atoll osd blocklist ls), so its late writes are refused.\n",
	  run_lock_break },
	{ "image snap create", "POOL IMAGE@SNAP",
	  "Takes a snapshot.  When a writer (atoll-nbd) holds the image, the writer takes it\n"
	  "between writes: every write completed before this command is in it.\n",
	  run_snap_create },
	{ "image snap ls", "POOL IMAGE", "The snapshots of an image, oldest first.\n", run_snap_ls },
	{ "image snap rm", "POOL IMAGE@SNAP", "Removes a snapshot.\n", run_snap_rm },
	{ "image snap rollback", "POOL IMAGE@SNAP",
	  "Makes the image's content and size those of the snapshot again (no writer may\n"
	  "hold the image).\n", run_snap_rollback },
	{ "image import", "POOL IMAGE FILE|- [--object-size SIZE]",
	  "Creates IMAGE from FILE (or standard input); zero blocks stay holes.\n", run_import },
	{ "image export", "POOL IMAGE[@SNAP] FILE|-",
	  "Writes the image (or a snapshot) to FILE (or standard output).\n", run_export },
	{ "osd blocklist add", "CLIENT_ID [SECONDS]",
	  "Fences a client: the OSDs refuse its ops for SECONDS (default one hour).\n", run_bl_add },
	{ "osd blocklist rm", "CLIENT_ID", "Lifts a client's fence.\n", run_bl_rm },
	{ "osd blocklist ls", "", "The fenced clients and when each fence ends.\n", run_bl_ls },
	{ NULL, NULL, NULL, NULL },
};
