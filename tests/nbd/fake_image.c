/*
 * fake_image.c - an in-memory stand-in for libatoll and libatoll-image,
 * linked into atoll-nbd-fake so that the NBD protocol tests run without a
 * cluster (seconds instead of a cluster start, and no cluster fault can
 * hide a protocol bug).
 *
 * Only what atoll-nbd calls is here.  Every image is FAKE_SIZE bytes of
 * memory (env ATOLL_NBD_FAKE_SIZE, default 64 MiB) kept for the life of
 * the process, allocation tracked per 64 KiB "object"; names starting
 * with "missing" do not exist, "busy" is locked by another writer, and
 * "NAME@SNAP" is a read-only view.  Completions run on a small pool of
 * threads, out of submission order, as libatoll's do; env
 * ATOLL_NBD_FAKE_DELAY_US delays each one (to hold requests in flight).
 */
#include <atoll/atoll.h>
#include <atoll/image.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_OBJ (64u << 10)
#define FAKE_THREADS 4

struct fake_disk {
	struct fake_disk *next;
	char name[128];
	uint64_t size;
	uint8_t *data;
	uint8_t *alloc;		/* one byte per object: 1 = has data */
	pthread_mutex_t lock;
};

struct atoll_image {
	struct fake_disk *disk;
	bool ro;
};

/* libatoll's completion, reduced to what atoll-nbd uses: the caller's
 * reference and the request's, the callback run once by a worker. */
struct atoll_completion {
	atoll_callback_t cb;
	void *arg;
	atoll_free_t free_arg;
	int64_t result;
	atomic_int refs;
};

struct job {
	struct job *next;
	struct atoll_completion *comp;
	int64_t result;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static struct fake_disk *g_disks;
static struct job *g_jobs;
static bool g_started;
static unsigned g_delay_us;

/* atoll_defer: a worker is a library thread; what its callbacks defer
 * runs once no job is left for it, before it waits (as libatoll's loop
 * does before it waits for more events). */
#define FAKE_DEFERS 256
static __thread bool t_worker;
static __thread struct { atoll_defer_t fn; void *arg; } t_defers[FAKE_DEFERS];
static __thread size_t t_ndefers;

int atoll_defer(atoll_defer_t fn, void *arg)
{
	if (!fn)
		return -EINVAL;
	if (!t_worker || t_ndefers == FAKE_DEFERS)
		return 0;
	t_defers[t_ndefers].fn = fn;
	t_defers[t_ndefers++].arg = arg;
	return 1;
}

static void run_defers(void)
{
	for (size_t i = 0; i < t_ndefers; i++)
		t_defers[i].fn(t_defers[i].arg);
	t_ndefers = 0;
}

static void *worker(void *arg)
{
	(void)arg;
	t_worker = true;
	for (;;) {
		struct job *j;

		pthread_mutex_lock(&g_lock);
		if (!g_jobs && t_ndefers) {
			pthread_mutex_unlock(&g_lock);
			run_defers();
			continue;
		}
		while (!g_jobs)
			pthread_cond_wait(&g_cond, &g_lock);
		j = g_jobs;
		g_jobs = j->next;
		pthread_mutex_unlock(&g_lock);
		if (g_delay_us)
			usleep(g_delay_us);
		j->comp->result = j->result;
		if (j->comp->cb)
			j->comp->cb(j->comp, j->comp->arg);
		atoll_completion_release(j->comp);	/* the request's reference */
		free(j);
	}
	return NULL;
}

/* atoll_hold: the jobs a holding thread queues reach the workers only at
 * its atoll_release (libatoll's strictest case: nothing else woke the
 * loop meanwhile), so a reader that waited for them while holding hangs
 * here. */
static __thread unsigned t_hold;
static __thread struct job *t_held;

void atoll_hold(void)
{
	t_hold++;
}

void atoll_release(void)
{
	struct job *j;

	if (!t_hold || --t_hold)
		return;
	pthread_mutex_lock(&g_lock);
	while ((j = t_held)) {
		t_held = j->next;
		j->next = g_jobs;
		g_jobs = j;
	}
	pthread_cond_broadcast(&g_cond);
	pthread_mutex_unlock(&g_lock);
}

static int complete(struct atoll_completion *comp, int64_t result)
{
	struct job *j;

	if (!comp)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	atomic_fetch_add(&comp->refs, 1);
	j->comp = comp;
	j->result = result;
	if (t_hold && !t_worker) {
		j->next = t_held;
		t_held = j;
		return 0;
	}
	pthread_mutex_lock(&g_lock);
	/* push at the head: later requests tend to complete first */
	j->next = g_jobs;
	g_jobs = j;
	pthread_cond_signal(&g_cond);
	pthread_mutex_unlock(&g_lock);
	return 0;
}

/* ---- libatoll: just enough ------------------------------------------ */

int atoll_completion_create(atoll_callback_t cb, void *arg, atoll_free_t free_arg,
			    struct atoll_completion **out)
{
	struct atoll_completion *comp = calloc(1, sizeof(*comp));

	if (!comp)
		return -ENOMEM;
	comp->cb = cb;
	comp->arg = arg;
	comp->free_arg = free_arg;
	atomic_init(&comp->refs, 1);
	*out = comp;
	return 0;
}

int64_t atoll_completion_return(struct atoll_completion *comp)
{
	return comp->result;
}

void atoll_completion_release(struct atoll_completion *comp)
{
	if (!comp || atomic_fetch_sub(&comp->refs, 1) != 1)
		return;
	if (comp->free_arg)
		comp->free_arg(comp->arg);
	free(comp);
}

struct atoll_cluster { int unused; };
struct atoll_ioctx { int unused; };

int atoll_cluster_create(struct atoll_cluster **out, const char *conf, unsigned flags)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

int atoll_cluster_set(struct atoll_cluster *c, const char *key, const char *value)
{
	return 0;
}

int atoll_cluster_connect(struct atoll_cluster *c)
{
	const char *d = getenv("ATOLL_NBD_FAKE_DELAY_US");

	g_delay_us = d ? (unsigned)atoi(d) : 0;
	pthread_mutex_lock(&g_lock);
	if (!g_started) {
		for (int i = 0; i < FAKE_THREADS; i++) {
			pthread_t th;

			pthread_create(&th, NULL, worker, NULL);
			pthread_detach(th);
		}
		g_started = true;
	}
	pthread_mutex_unlock(&g_lock);
	return 0;
}

void atoll_cluster_shutdown(struct atoll_cluster *c)
{
	free(c);
}

int atoll_ioctx_create(struct atoll_cluster *c, const char *pool, struct atoll_ioctx **out,
		       unsigned flags)
{
	if (strcmp(pool, "nopool") == 0)
		return -ENOENT;
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void atoll_ioctx_destroy(struct atoll_ioctx *io)
{
	free(io);
}

const char *atoll_last_error(void)
{
	return "";
}

const char *atoll_strerror(int err)
{
	return strerror(err < 0 ? -err : err);
}

/* ---- libatoll-image -------------------------------------------------- */

static struct fake_disk *disk_get(const char *name)
{
	const char *sz = getenv("ATOLL_NBD_FAKE_SIZE");
	struct fake_disk *d;

	pthread_mutex_lock(&g_lock);
	for (d = g_disks; d; d = d->next)
		if (strcmp(d->name, name) == 0)
			goto out;
	d = calloc(1, sizeof(*d));
	if (!d)
		goto out;
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->size = sz ? strtoull(sz, NULL, 0) : (64u << 20);
	d->data = calloc(1, d->size);
	d->alloc = calloc(1, d->size / FAKE_OBJ + 1);
	pthread_mutex_init(&d->lock, NULL);
	d->next = g_disks;
	g_disks = d;
out:
	pthread_mutex_unlock(&g_lock);
	return d;
}

int atoll_image_open(struct atoll_ioctx *io, const char *spec,
		     const struct atoll_image_open_options *opt, struct atoll_image **out)
{
	char base[128];
	const char *at = strchr(spec, '@');
	struct atoll_image *img;

	if (strncmp(spec, "missing", 7) == 0)
		return -ENOENT;
	if (strncmp(spec, "busy", 4) == 0)
		return -EBUSY;
	snprintf(base, sizeof(base), "%.*s", at ? (int)(at - spec) : (int)strlen(spec), spec);
	img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	img->disk = disk_get(base);
	img->ro = at != NULL;
	*out = img;
	return 0;
}

int atoll_image_close(struct atoll_image *img)
{
	free(img);
	return 0;
}

uint64_t atoll_image_size(struct atoll_image *img)
{
	return img->disk->size;
}

int atoll_image_is_read_only(struct atoll_image *img)
{
	return img->ro;
}

int64_t atoll_image_list(struct atoll_ioctx *io, char *buf, size_t len)
{
	static const char names[] = "disk1\0disk2\0";

	if (len >= sizeof(names))
		memcpy(buf, names, sizeof(names));
	return sizeof(names);
}

static bool bad_range(struct atoll_image *img, uint64_t off, uint64_t len)
{
	return off > img->disk->size || len > img->disk->size - off;
}

static void mark(struct fake_disk *d, uint64_t off, uint64_t len, uint8_t v)
{
	for (uint64_t o = off / FAKE_OBJ; len && o <= (off + len - 1) / FAKE_OBJ; o++)
		d->alloc[o] = v ? 1 : d->alloc[o];
}

int atoll_image_aio_read(struct atoll_image *img, void *buf, size_t len, uint64_t off,
			 struct atoll_completion *comp, unsigned flags)
{
	if (bad_range(img, off, len) || len > ATOLL_IMAGE_IO_MAX || flags)
		return -EINVAL;
	pthread_mutex_lock(&img->disk->lock);
	memcpy(buf, img->disk->data + off, len);
	pthread_mutex_unlock(&img->disk->lock);
	return complete(comp, (int64_t)len);
}

int atoll_image_aio_write(struct atoll_image *img, const void *buf, size_t len,
			  uint64_t off, struct atoll_completion *comp, unsigned flags)
{
	if (bad_range(img, off, len) || len > ATOLL_IMAGE_IO_MAX || flags)
		return -EINVAL;
	if (img->ro)
		return -EROFS;
	pthread_mutex_lock(&img->disk->lock);
	memcpy(img->disk->data + off, buf, len);
	mark(img->disk, off, len, 1);
	pthread_mutex_unlock(&img->disk->lock);
	return complete(comp, (int64_t)len);
}

static int zero(struct atoll_image *img, uint64_t off, uint64_t len,
		struct atoll_completion *comp, bool dealloc)
{
	struct fake_disk *d = img->disk;

	if (bad_range(img, off, len) || len > ATOLL_IMAGE_IO_MAX)
		return -EINVAL;
	if (img->ro)
		return -EROFS;
	pthread_mutex_lock(&d->lock);
	memset(d->data + off, 0, len);
	/* whole objects become holes */
	for (uint64_t o = (off + FAKE_OBJ - 1) / FAKE_OBJ; dealloc &&
	     (o + 1) * FAKE_OBJ <= off + len; o++)
		d->alloc[o] = 0;
	pthread_mutex_unlock(&d->lock);
	return complete(comp, 0);
}

int atoll_image_aio_discard(struct atoll_image *img, uint64_t off, uint64_t len,
			    struct atoll_completion *comp, unsigned flags)
{
	return zero(img, off, len, comp, true);
}

int atoll_image_aio_write_zeroes(struct atoll_image *img, uint64_t off, uint64_t len,
				 struct atoll_completion *comp, unsigned flags)
{
	return zero(img, off, len, comp, !(flags & ATOLL_IMAGE_ZERO_NO_HOLE));
}

int atoll_image_aio_flush(struct atoll_image *img, struct atoll_completion *comp,
			  unsigned flags)
{
	return complete(comp, 0);
}

int atoll_image_aio_block_status(struct atoll_image *img, uint64_t off, uint64_t len,
				 struct atoll_image_extent *ext, size_t max,
				 struct atoll_completion *comp, unsigned flags)
{
	struct fake_disk *d = img->disk;
	uint64_t end = off + len;
	size_t n = 0;

	if (bad_range(img, off, len) || max == 0)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	while (off < end) {
		uint64_t o = off / FAKE_OBJ, oend = (o + 1) * FAKE_OBJ;
		uint32_t fl = d->alloc[o] ? 0 : ATOLL_IMAGE_EXTENT_HOLE | ATOLL_IMAGE_EXTENT_ZERO;

		if (oend > end)
			oend = end;
		if (n > 0 && ext[n - 1].flags == fl) {
			ext[n - 1].len += oend - off;
		} else {
			if (n == max)
				break;
			ext[n].off = off;
			ext[n].len = oend - off;
			ext[n].flags = fl;
			n++;
		}
		off = oend;
	}
	pthread_mutex_unlock(&d->lock);
	return complete(comp, (int64_t)n);
}

int atoll_image_stat(struct atoll_ioctx *io, const char *name, struct atoll_image_info *info)
{
	return -ENOENT;		/* "busy" stays busy: no lease to wait for */
}
