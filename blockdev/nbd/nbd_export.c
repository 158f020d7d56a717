/*
 * nbd_export.c - the exports of one server: each image (or image@snap)
 * is opened once, on the first connection that asks for it, and shared by
 * every later connection; the last connection to leave closes it.
 *
 * Why once: an image has one writer at a time (its lock lives in the
 * cluster), so the server itself must be that one writer, whatever the
 * number of connections.  Sharing one handle is also what makes
 * NBD_FLAG_CAN_MULTI_CONN true: every connection reaches the same image
 * and no connection caches anything.
 *
 * Opening talks to the cluster and may take a while (or wait on a dead
 * writer's lease); the table lock is not held meanwhile.  An entry being
 * opened is marked `opening`; others asking for it wait on srv->cond.
 */
#include "nbd_server.h"

#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint16_t nbd_export_flags(const struct nbd_export *ex)
{
	uint16_t f = NBD_FLAG_HAS_FLAGS | NBD_FLAG_SEND_FLUSH | NBD_FLAG_SEND_FUA |
		     NBD_FLAG_CAN_MULTI_CONN;

	if (ex->read_only)
		f |= NBD_FLAG_READ_ONLY;
	else
		f |= NBD_FLAG_SEND_TRIM | NBD_FLAG_SEND_WRITE_ZEROES;
	return f;
}

static struct nbd_export *find(struct nbd_server *srv, const char *name)
{
	for (struct nbd_export *ex = srv->exports; ex; ex = ex->next)
		if (strcmp(ex->name, name) == 0)
			return ex;
	return NULL;
}

static void unlink_export(struct nbd_server *srv, struct nbd_export *ex)
{
	for (struct nbd_export **pp = &srv->exports; *pp; pp = &(*pp)->next) {
		if (*pp == ex) {
			*pp = ex->next;
			return;
		}
	}
}

/* Another writer holds the image: if its lease ends soon (a writer that
 * died, e.g. this server before a restart, renews no more), wait for the
 * end and try once more; the library then fences the dead writer and
 * takes over.  A live writer keeps renewing, so it is refused after at
 * most one lease. */
static int wait_for_lease(struct nbd_server *srv, const char *name)
{
	struct atoll_image_info info = { .size_of = sizeof(info) };
	struct timespec now;
	uint64_t now_ns, wait_ns;

	if (strchr(name, '@') || atoll_image_stat(srv->io, name, &info) != 0 ||
	    !info.lock_owner)
		return -EBUSY;
	clock_gettime(CLOCK_REALTIME, &now);
	now_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	wait_ns = info.lock_expires_ns > now_ns ? info.lock_expires_ns - now_ns : 0;
	if (wait_ns > NBD_LEASE_WAIT_MAX_S * 1000000000ull)
		return -EBUSY;
	log_info(NBD_SUBSYS, "image '%s' is locked by client %llu; its lease ends in "
		 "%.1f s: waiting to see if that writer is gone", name,
		 (unsigned long long)info.lock_owner, wait_ns / 1e9);
	wait_ns += 300 * 1000000ull;
	nanosleep(&(struct timespec){ .tv_sec = (time_t)(wait_ns / 1000000000ull),
				      .tv_nsec = (long)(wait_ns % 1000000000ull) }, NULL);
	return 0;
}

/* Opens the image behind ex (table lock not held). */
static int open_image(struct nbd_server *srv, struct nbd_export *ex)
{
	struct atoll_image_open_options opt = {
		.size_of = sizeof(opt),
		.lease_ms = srv->lease_ms,
	};
	int ret;

	/* No quiesce callback: nothing is cached, so a snapshot only needs
	 * the writes in flight to finish, which the library waits for. */
	ret = atoll_image_open(srv->io, ex->name, &opt, &ex->img);
	if (ret == -EBUSY && wait_for_lease(srv, ex->name) == 0)
		ret = atoll_image_open(srv->io, ex->name, &opt, &ex->img);
	if (ret)
		return ret;
	ex->read_only = atoll_image_is_read_only(ex->img) == 1;
	ex->size = atoll_image_size(ex->img);
	log_info(NBD_SUBSYS, "export '%s' opened: %llu bytes%s", ex->name,
		 (unsigned long long)ex->size, ex->read_only ? ", read-only" : "");
	return 0;
}

int nbd_export_get(struct nbd_server *srv, const char *name, struct nbd_export **out)
{
	struct nbd_export *ex;
	int ret;

	pthread_mutex_lock(&srv->lock);
	for (;;) {
		/* an entry being opened or closed is waited for: a connection
		 * that arrives while the last one's close still holds the
		 * image's lock must not be refused as a second writer */
		ex = find(srv, name);
		if (!ex || (!ex->opening && !ex->closing))
			break;
		pthread_cond_wait(&srv->cond, &srv->lock);
	}
	if (ex) {
		ex->refs++;
		pthread_mutex_unlock(&srv->lock);
		*out = ex;
		return 0;
	}
	ex = calloc(1, sizeof(*ex));
	if (ex)
		ex->name = strdup(name);
	if (!ex || !ex->name) {
		pthread_mutex_unlock(&srv->lock);
		if (ex)
			free(ex);
		return -ENOMEM;
	}
	ex->srv = srv;
	ex->opening = true;
	ex->refs = 1;
	ex->next = srv->exports;
	srv->exports = ex;
	pthread_mutex_unlock(&srv->lock);

	ret = open_image(srv, ex);

	pthread_mutex_lock(&srv->lock);
	ex->opening = false;
	if (ret)
		unlink_export(srv, ex);	/* waiters find nothing and try again */
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	if (ret) {
		free(ex->name);
		free(ex);
		return ret;
	}
	*out = ex;
	return 0;
}

void nbd_export_put(struct nbd_export *ex)
{
	struct nbd_server *srv;
	bool last;
	int ret;

	if (!ex)
		return;
	srv = ex->srv;
	pthread_mutex_lock(&srv->lock);
	last = --ex->refs == 0;
	if (last)
		ex->closing = true;	/* stays listed until its lock is released */
	pthread_mutex_unlock(&srv->lock);
	if (!last)
		return;
	/* Every connection has drained its requests: close waits for none. */
	ret = atoll_image_close(ex->img);
	if (ret)
		log_error(NBD_SUBSYS, "export '%s': a write failed after its reply: %s",
			  ex->name, atoll_strerror(ret));
	else
		log_info(NBD_SUBSYS, "export '%s' closed", ex->name);
	pthread_mutex_lock(&srv->lock);
	unlink_export(srv, ex);
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	free(ex->name);
	free(ex);
}

int nbd_export_list(struct nbd_server *srv, char **names, size_t *len)
{
	int64_t need, got;
	char *buf;

	need = atoll_image_list(srv->io, NULL, 0);
	for (int tries = 0; tries < 4; tries++) {
		if (need < 0)
			return (int)need;
		buf = malloc((size_t)need + 1);
		if (!buf)
			return -ENOMEM;
		got = atoll_image_list(srv->io, buf, (size_t)need);
		if (got >= 0 && got <= need) {
			*names = buf;
			*len = (size_t)got;
			return 0;
		}
		free(buf);
		need = got;	/* the list grew meanwhile */
	}
	return -EAGAIN;
}

void nbd_export_close_all(struct nbd_server *srv)
{
	pthread_mutex_lock(&srv->lock);
	while (srv->exports) {
		struct nbd_export *ex = srv->exports;

		/* one that its last connection is closing: that close frees it */
		while (ex && ex->closing)
			ex = ex->next;
		if (!ex) {
			pthread_cond_wait(&srv->cond, &srv->lock);
			continue;
		}
		unlink_export(srv, ex);
		pthread_mutex_unlock(&srv->lock);
		atoll_image_close(ex->img);
		free(ex->name);
		free(ex);
		pthread_mutex_lock(&srv->lock);
	}
	pthread_mutex_unlock(&srv->lock);
}
