/*
 * dashboard_int.h - what the files of the dashboard share (dashboard.h
 * says which thread does what): the published state under dash->mu.
 */
#ifndef ATOLL_MON_DASHBOARD_INT_H
#define ATOLL_MON_DASHBOARD_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mon;
struct MHD_Daemon;

#define DASH_HIST	300	/* samples kept: 10 minutes at one per 2 s */
#define DASH_SAMPLE_MS	2000
#define DASH_TICK_MS	1000	/* the snapshot is rebuilt at most this often */
#define DASH_IDLE_MS	60000	/* no request for this long: stop rebuilding */
#define DASH_URL_MAX	192

struct dash {
	struct mon *mon;		/* monitor thread only */
	struct MHD_Daemon *d;
	char dir[PATH_MAX];		/* the page's files (dashboard_dir) */
	bool https;
	char *cert, *key;		/* PEM text (https); kept for libmicrohttpd */
	char self_url[DASH_URL_MAX];	/* "http://127.0.0.1:8443" */
	uint64_t next_ms, next_sample_ms;	/* monitor thread */

	/* published: guarded by mu (taken briefly by every thread) */
	pthread_mutex_t mu;
	bool leader;			/* this monitor serves as the leader */
	char leader_url[DASH_URL_MAX];	/* the leader's dashboard; "" unknown */
	char leader_name[64];		/* the leader's name; "" none known */
	char *status;			/* the last snapshot (JSON), malloc'd */
	char *hist[DASH_HIST];		/* samples (JSON objects), a ring */
	uint64_t hist_t[DASH_HIST];	/* each one's time (wall clock, ms) */
	uint32_t hist_n, hist_head;	/* count; index of the oldest */
	char *images;			/* the worker's last list (JSON) */
	char *fs;			/* its last MDS statuses (JSON) */
	uint64_t last_poll_ms;		/* monotonic: last /api request */

	/* the worker (dashboard_images.c); wmu/wcond wake it */
	pthread_t worker;
	bool worker_on;
	pthread_mutex_t wmu;
	pthread_cond_t wcond;
	bool wstop;
	char conf_path[PATH_MAX];
	char auth_name[64];
	uint64_t op_timeout_ms;
	uint64_t images_every_ms;
};

/* dashboard_state.c, monitor thread, mon->lock held: the snapshot
 * (malloc'd JSON text) and one history sample (same). */
char *dash_snapshot(struct mon *mon);
char *dash_sample(struct mon *mon, uint64_t *t_ms);

/* dashboard.c, monitor thread: the dashboard URL of monitor name
 * (member address maddr) from its dashboard_addr; "" when it has none. */
void dash_url_of(struct mon *mon, const char *name, const char *maddr, char *out,
		 size_t len);

/* dashboard_images.c */
int dash_worker_start(struct dash *d, char *err, size_t errlen);
void dash_worker_stop(struct dash *d);

/* dashboard_fs.c, the worker: asks each active MDS its clients and
 * publishes them (d->fs); *fsp is the worker's messenger, made on
 * demand, dropped after an error. */
struct dash_fs;
void dash_fs_refresh(struct dash *d, struct dash_fs **fsp);
void dash_fs_free(struct dash_fs *fs);

/* Whether someone looked within DASH_IDLE_MS (any thread). */
bool dash_watched(struct dash *d);

#endif
