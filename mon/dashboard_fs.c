/*
 * dashboard_fs.c - the file system's clients for the dashboard: what
 * `atoll fs status` asks the active MDS (MT_MDS_STATUS), asked from the
 * dashboard's worker thread (dashboard_images.c) through a messenger of
 * its own as the dashboard's read-only entity.
 *
 * The monitors know the MDS daemons' roles from their beacons but not
 * their clients: the active MDS holds the sessions.  Like the image list
 * this is I/O to another daemon, so it stays off the monitor's threads,
 * each call bounded by dashboard_op_timeout.  Which MDS is active comes
 * from the snapshot the monitor thread published (`mds stat`).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <cjson/cJSON.h>

#include "auth_config.h"
#include "config.h"
#include "encode.h"
#include "mds_proto.h"
#include "msg.h"
#include "dashboard_int.h"

struct dash_fs {
	struct msgr *m;
	struct msg_auth *auth;		/* NULL with auth = none; outlives m */
};

static void on_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	(void)arg;
	(void)c;
	msg_free(m);			/* nothing is expected but replies */
}

static void fs_close(struct dash_fs *fs)
{
	if (fs->m)
		msgr_destroy(fs->m);
	msg_auth_free(fs->auth);	/* after the messenger, which reads it */
	memset(fs, 0, sizeof(*fs));
}

static int fs_open(struct dash *d, struct dash_fs *fs, char *why, size_t len)
{
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops ops = { .dispatch = on_dispatch };
	struct config *cfg = NULL;
	const char *mon = NULL;
	char err[512] = "";
	int r;

	r = config_load(&cfg, d->conf_path[0] ? d->conf_path : NULL, err, sizeof(err));
	if (r == 0)
		r = auth_config_load(cfg, "client", d->auth_name, NULL, &fs->auth, err,
				     sizeof(err));
	if (r == 0)
		r = config_get_str(cfg, "client", "mon_host", "127.0.0.1:6789", &mon, err,
				   sizeof(err));
	if (r < 0)
		goto out;
	mc.me.type = MSG_ENTITY_CLIENT;
	if (getrandom(&mc.me.id, sizeof(mc.me.id), 0) != sizeof(mc.me.id))
		mc.me.id = 1;
	mc.auth = fs->auth;
	r = msgr_create(&mc, &ops, fs, &fs->m);
	if (r == 0)
		r = msgr_start(fs->m);
	if (r < 0) {
		snprintf(err, sizeof(err), "cannot start a messenger: %s", strerror(-r));
		goto out;
	}
	/* tickets for the MDS, from the monitors (our own among them) */
	if (fs->auth)
		r = auth_login(fs->m, mon, (uint32_t)d->op_timeout_ms, NULL, err, sizeof(err));
out:
	if (r < 0) {
		snprintf(why, len, "as %s: %s", d->auth_name, err[0] ? err : strerror(-r));
		fs_close(fs);
	}
	config_free(cfg);
	return r;
}

static int ask(struct dash *d, struct dash_fs *fs, const char *addr, struct mds_status *st)
{
	struct msg *req, *reply = NULL;
	struct msg_conn *c;
	struct enc e;
	struct dec dc;
	int r;

	memset(st, 0, sizeof(*st));
	enc_init(&e);
	req = msg_new(MT_MDS_STATUS, &e);
	enc_free(&e);
	if (!req)
		return -ENOMEM;
	c = msgr_connect(fs->m, addr);
	if (!c) {
		msg_free(req);
		return -EINVAL;
	}
	r = msg_call_wait(c, req, (uint32_t)d->op_timeout_ms, &reply);
	msg_conn_put(c);
	if (r)
		return r;
	dec_init(&dc, reply->front, reply->front_len);
	r = mds_status_decode(&dc, st);
	msg_free(reply);
	return r;
}

/* Each file system's active MDS as the last snapshot names it. */
static cJSON *actives(struct dash *d)
{
	cJSON *snap, *fss, *fs, *out = cJSON_CreateArray();

	pthread_mutex_lock(&d->mu);
	snap = d->status ? cJSON_Parse(d->status) : NULL;
	pthread_mutex_unlock(&d->mu);
	fss = cJSON_GetObjectItem(cJSON_GetObjectItem(snap, "mds"), "filesystems");
	cJSON_ArrayForEach(fs, fss) {
		cJSON *a = cJSON_GetObjectItem(fs, "active");
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(a, "name"));
		const char *addr = cJSON_GetStringValue(cJSON_GetObjectItem(a, "addr"));

		if (name && addr) {
			cJSON *j = cJSON_CreateObject();

			cJSON_AddStringToObject(j, "mds", name);
			cJSON_AddStringToObject(j, "addr", addr);
			cJSON_AddItemToArray(out, j);
		}
	}
	cJSON_Delete(snap);
	return out;
}

static void add_u64(cJSON *o, const char *k, uint64_t v)
{
	char buf[24];

	/* 64-bit ids as strings: JSON numbers lose digits past 2^53 */
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	cJSON_AddStringToObject(o, k, buf);
}

void dash_fs_refresh(struct dash *d, struct dash_fs **fsp)
{
	cJSON *root = cJSON_CreateObject(), *list = actives(d), *a;
	char why[600];
	char *s;

	if (!root || !list)
		goto out;
	if (cJSON_GetArraySize(list) && !*fsp) {
		*fsp = calloc(1, sizeof(**fsp));
		if (*fsp && fs_open(d, *fsp, why, sizeof(why)) < 0) {
			free(*fsp);
			*fsp = NULL;
			cJSON_AddStringToObject(root, "error", why);
		}
	}
	cJSON_ArrayForEach(a, list) {
		const char *addr = cJSON_GetStringValue(cJSON_GetObjectItem(a, "addr"));
		cJSON *cs;
		struct mds_status st;
		int r;

		if (!*fsp)
			break;
		r = ask(d, *fsp, addr, &st);
		if (r) {
			snprintf(why, sizeof(why), "the MDS at %s does not answer: %s", addr,
				 strerror(r < 0 ? -r : r));
			cJSON_AddStringToObject(a, "error", why);
			/* a fresh messenger and login next time (tickets expire) */
			fs_close(*fsp);
			free(*fsp);
			*fsp = NULL;
			continue;
		}
		cJSON_AddStringToObject(a, "state", mds_state_name(st.state));
		cJSON_AddNumberToObject(a, "sessions", (double)st.sessions);
		cJSON_AddNumberToObject(a, "inodes", (double)st.inodes);
		cJSON_AddNumberToObject(a, "requests", (double)st.requests);
		cs = cJSON_AddArrayToObject(a, "clients");
		for (uint32_t i = 0; i < st.nclients; i++) {
			cJSON *c = cJSON_CreateObject();

			add_u64(c, "id", st.clients[i].id);
			cJSON_AddStringToObject(c, "addr", st.clients[i].addr);
			cJSON_AddNumberToObject(c, "requests", (double)st.clients[i].requests);
			cJSON_AddNumberToObject(c, "connected_ms", (double)st.clients[i].connected_ms);
			cJSON_AddItemToArray(cs, c);
		}
		free(st.clients);
	}
	cJSON_AddItemToObject(root, "filesystems", list);
	list = NULL;
	cJSON_AddNumberToObject(root, "updated_ms", (double)((uint64_t)time(NULL) * 1000));
	s = cJSON_PrintUnformatted(root);
	pthread_mutex_lock(&d->mu);
	free(d->fs);
	d->fs = s;
	pthread_mutex_unlock(&d->mu);
out:
	cJSON_Delete(list);
	cJSON_Delete(root);
}

void dash_fs_free(struct dash_fs *fs)
{
	if (!fs)
		return;
	fs_close(fs);
	free(fs);
}
