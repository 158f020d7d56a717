/*
 * dashboard_images.c - the dashboard's worker thread: the block images
 * of every pool and who holds each one's lock (doc/dashboard.md), and
 * (dashboard_fs.c) the file system's clients.
 *
 * This is the one part of the dashboard that reads from OSDs (image
 * directories and headers are objects), so it runs apart from the
 * monitor's event loop and its raft thread, through a client handle of
 * its own (libatoll, libatoll-image) as the entity dashboard_auth_name
 * (client.dashboard: `allow r` for mon and osd) and with every call
 * bounded by dashboard_op_timeout.  An OSD that is killed while a page
 * is open makes this list late or marked failed, never a monitor slow:
 * the thread shares nothing with the monitor but dash->mu, which it
 * takes only to publish its finished list.
 *
 * It works only while this monitor leads and someone has looked within
 * DASH_IDLE_MS, once per dashboard_images_interval.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>

#include "atoll/atoll.h"
#include "atoll/image.h"
#include "deadline.h"
#include "log.h"
#include "mono.h"
#include "dashboard_int.h"

#define IMAGES_PER_POOL_MAX	200

static bool stopping(struct dash *d)
{
	bool s;

	pthread_mutex_lock(&d->wmu);
	s = d->wstop;
	pthread_mutex_unlock(&d->wmu);
	return s;
}

static void publish(struct dash *d, cJSON *j)
{
	char *s = j ? cJSON_PrintUnformatted(j) : NULL;

	pthread_mutex_lock(&d->mu);
	free(d->images);
	d->images = s;
	pthread_mutex_unlock(&d->mu);
}

static int connect_handle(struct dash *d, struct atoll_cluster **out, char *why, size_t len)
{
	struct atoll_cluster *c = NULL;
	char t[32];
	int r;

	*out = NULL;
	snprintf(t, sizeof(t), "%llums", (unsigned long long)d->op_timeout_ms);
	r = atoll_cluster_create(&c, d->conf_path[0] ? d->conf_path : NULL, 0);
	if (!r)
		r = atoll_cluster_set(c, "auth_name", d->auth_name);
	if (!r)
		r = atoll_cluster_set(c, "client_mount_timeout", t);
	if (!r)
		r = atoll_cluster_set(c, "client_op_timeout", t);
	if (!r)
		r = atoll_cluster_connect(c);
	if (r) {
		const char *detail = atoll_last_error();

		snprintf(why, len, "cannot connect as %s: %s%s%s; the dashboard needs a key "
			 "with read access: atoll auth get-or-create %s mon 'allow r' osd "
			 "'allow r'", d->auth_name, atoll_strerror(r),
			 detail && *detail ? ": " : "", detail ? detail : "", d->auth_name);
		atoll_cluster_shutdown(c);
		return r;
	}
	*out = c;
	return 0;
}

/* One pool's images into arr; false when the pool holds none. */
static bool list_pool(struct dash *d, struct atoll_cluster *c, const char *pool, cJSON *arr)
{
	struct atoll_ioctx *io = NULL;
	cJSON *p = NULL, *imgs;
	char *names = NULL;
	int64_t need;
	uint32_t n = 0;
	int r;

	r = atoll_ioctx_create(c, pool, &io, 0);
	if (r)
		goto out_err;
	need = atoll_image_list(io, NULL, 0);
	if (need == -ENOENT || need == 0)
		goto out;
	if (need < 0) {
		r = (int)need;
		goto out_err;
	}
	names = malloc((size_t)need);
	if (!names) {
		r = -ENOMEM;
		goto out_err;
	}
	need = atoll_image_list(io, names, (size_t)need);
	if (need < 0) {
		r = (int)need;
		goto out_err;
	}
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "pool", pool);
	imgs = cJSON_AddArrayToObject(p, "images");
	for (char *s = names; s < names + need && *s && !stopping(d); s += strlen(s) + 1) {
		struct atoll_image_info info = { .size_of = sizeof(info) };
		cJSON *j;

		if (n++ == IMAGES_PER_POOL_MAX) {
			cJSON_AddBoolToObject(p, "truncated", true);
			break;
		}
		j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "name", s);
		r = atoll_image_stat(io, s, &info);
		if (r) {
			cJSON_AddStringToObject(j, "error", atoll_strerror(r));
		} else {
			char owner[32];

			cJSON_AddNumberToObject(j, "size", (double)info.size);
			cJSON_AddNumberToObject(j, "snapshots", info.num_snaps);
			/* a client id is 64 bits: a string keeps every digit */
			snprintf(owner, sizeof(owner), "%llu", (unsigned long long)info.lock_owner);
			if (info.lock_owner) {
				cJSON_AddStringToObject(j, "lock_owner", owner);
				cJSON_AddNumberToObject(j, "lock_expires_ms",
							(double)(info.lock_expires_ns / 1000000));
			} else {
				cJSON_AddNullToObject(j, "lock_owner");
			}
		}
		cJSON_AddItemToArray(imgs, j);
	}
	cJSON_AddItemToArray(arr, p);
	goto out;
out_err:
	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "pool", pool);
	cJSON_AddStringToObject(p, "error", atoll_strerror(r));
	cJSON_AddItemToArray(arr, p);
out:
	free(names);
	atoll_ioctx_destroy(io);
	return p != NULL;
}

static void refresh(struct dash *d, struct atoll_cluster **cp)
{
	cJSON *j = cJSON_CreateObject(), *arr;
	char why[512], *pools = NULL;
	int64_t need;
	int r;

	if (!j)
		return;
	cJSON_AddStringToObject(j, "entity", d->auth_name);
	if (!*cp && connect_handle(d, cp, why, sizeof(why)) < 0) {
		cJSON_AddStringToObject(j, "error", why);
		goto out;
	}
	need = atoll_pool_list(*cp, NULL, 0);
	pools = need > 0 ? malloc((size_t)need) : NULL;
	if (need > 0 && pools)
		need = atoll_pool_list(*cp, pools, (size_t)need);
	if (need < 0) {
		r = (int)need;
		snprintf(why, sizeof(why), "cannot list the pools: %s", atoll_strerror(r));
		cJSON_AddStringToObject(j, "error", why);
		goto out;
	}
	arr = cJSON_AddArrayToObject(j, "pools");
	for (char *s = pools; s && s < pools + need && *s && !stopping(d); s += strlen(s) + 1)
		list_pool(d, *cp, s, arr);
out:
	cJSON_AddNumberToObject(j, "updated_ms", (double)((uint64_t)time(NULL) * 1000));
	free(pools);
	publish(d, j);
	cJSON_Delete(j);
}

static void *worker(void *arg)
{
	struct dash *d = arg;
	struct atoll_cluster *c = NULL;
	struct dash_fs *fs = NULL;
	uint64_t next = 0;

	pthread_mutex_lock(&d->wmu);
	while (!d->wstop) {
		struct timespec ts = deadline_ms(CLOCK_REALTIME, 1000);
		uint64_t now;
		bool leader;

		pthread_cond_timedwait(&d->wcond, &d->wmu, &ts);
		if (d->wstop)
			break;
		pthread_mutex_unlock(&d->wmu);
		pthread_mutex_lock(&d->mu);
		leader = d->leader;
		pthread_mutex_unlock(&d->mu);
		now = mono_now_ms();
		if (!leader && (c || fs)) {
			/* a follower lists nothing: its handles go */
			atoll_cluster_shutdown(c);
			c = NULL;
			dash_fs_free(fs);
			fs = NULL;
			publish(d, NULL);
			pthread_mutex_lock(&d->mu);
			free(d->fs);
			d->fs = NULL;
			pthread_mutex_unlock(&d->mu);
		} else if (leader && now >= next && dash_watched(d)) {
			refresh(d, &c);
			if (!stopping(d))
				dash_fs_refresh(d, &fs);
			next = mono_now_ms() + d->images_every_ms;
		}
		pthread_mutex_lock(&d->wmu);
	}
	pthread_mutex_unlock(&d->wmu);
	atoll_cluster_shutdown(c);
	dash_fs_free(fs);
	return NULL;
}

int dash_worker_start(struct dash *d, char *err, size_t errlen)
{
	int r = pthread_create(&d->worker, NULL, worker, d);

	if (r) {
		snprintf(err, errlen, "cannot start the dashboard's worker thread: %s",
			 strerror(r));
		return -r;
	}
	d->worker_on = true;
	return 0;
}

void dash_worker_stop(struct dash *d)
{
	if (!d->worker_on)
		return;
	pthread_mutex_lock(&d->wmu);
	d->wstop = true;
	pthread_cond_signal(&d->wcond);
	pthread_mutex_unlock(&d->wmu);
	pthread_join(d->worker, NULL);
	d->worker_on = false;
}
