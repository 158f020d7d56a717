/*
 * cli_call.c - request/reply with a daemon through the messenger
 * (cli_call.h).  Each call dials its own connection and waits on a waiter
 * of its own, which the connection's close callback finds through the
 * connection's private pointer: a refused connection ends the call at once
 * instead of redialling until the timeout.  Waiters live until the
 * messenger is destroyed, so a late close callback never finds a freed one.
 */
#include "cli_call.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/random.h>

#include "auth_config.h"
#include "cli.h"
#include "config.h"

struct waiter {
	struct waiter *next;	/* cli_msgr's list: freed after the loop is gone */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int err;		/* the call's error */
	int conn_err;		/* a failed connection attempt */
	struct msg *reply;
};

struct cli_msgr {
	struct msgr *m;
	struct msg_auth *auth;		/* NULL with auth = none; outlives m */
	struct waiter *waiters;
};

static void on_reply(void *arg, struct msg *reply, int err)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->mu);
	w->reply = reply;
	w->err = err;
	w->done = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void on_closed(void *arg, struct msg_conn *c, int err)
{
	struct waiter *w = msg_conn_priv(c);

	(void)arg;
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	if (!w->conn_err)
		w->conn_err = err ? err : -ECONNRESET;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* --conf and --mon of the command line (cli_call_set_conf) */
static const char *call_conf, *call_mon, *call_keyring;

void cli_call_set_conf(const char *conf, const char *mon, const char *keyring)
{
	call_conf = conf;
	call_mon = mon;
	call_keyring = keyring;
}

/* With `auth = ticket`: the messenger's msg_auth (login false), then
 * (login true) authenticated to the monitors so that it holds the
 * tickets of the OSDs and MDSs. */
static int cli_auth(struct cli_msgr *cm, struct msgr_config *mc, bool login)
{
	struct config *conf = NULL;
	const char *name = NULL, *mon = NULL;
	char err[512];
	int ret;

	ret = config_load(&conf, call_conf, err, sizeof(err));
	if (!ret && call_keyring)
		ret = config_set_override(conf, "keyring", call_keyring);
	if (!ret && !login)
		ret = config_get_str(conf, "client", "auth_name", "client.admin", &name, err,
				     sizeof(err));
	if (!ret && !login)
		ret = auth_config_load(conf, "client", name, NULL, &cm->auth, err, sizeof(err));
	if (!ret && login) {
		mon = call_mon;
		if (!mon)
			ret = config_get_str(conf, "client", "mon_host", "127.0.0.1:6789", &mon,
					     err, sizeof(err));
		if (!ret)
			ret = auth_login(cm->m, mon, 10000, NULL, err, sizeof(err));
	}
	if (ret < 0)
		cli_err("%s", err);
	if (mc)
		mc->auth = cm->auth;
	config_free(conf);
	return ret;
}

int cli_msgr_new(struct cli_msgr **out)
{
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops ops = { .closed = on_closed };
	struct cli_msgr *cm = calloc(1, sizeof(*cm));
	int ret;

	*out = NULL;
	if (!cm)
		return -ENOMEM;
	mc.me.type = MSG_ENTITY_CLIENT;
	if (getrandom(&mc.me.id, sizeof(mc.me.id), 0) != sizeof(mc.me.id))
		mc.me.id = 1;
	ret = cli_auth(cm, &mc, false);
	if (!ret)
		ret = msgr_create(&mc, &ops, cm, &cm->m);
	if (!ret)
		ret = msgr_start(cm->m);
	if (!ret && cm->auth)
		ret = cli_auth(cm, NULL, true);
	if (ret) {
		cli_msgr_free(cm);
		return ret;
	}
	*out = cm;
	return 0;
}

void cli_msgr_free(struct cli_msgr *cm)
{
	if (!cm)
		return;
	if (cm->m)
		msgr_destroy(cm->m);
	msg_auth_free(cm->auth);	/* after the messenger, which reads it */
	while (cm->waiters) {
		struct waiter *w = cm->waiters;

		cm->waiters = w->next;
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
	}
	free(cm);
}

int cli_msgr_call(struct cli_msgr *cm, const char *addr, uint16_t type, struct enc *front,
		  uint32_t timeout_ms, struct msg **reply)
{
	struct waiter *wp = calloc(1, sizeof(*wp));
	struct msg_conn *c;
	struct msg *req;
	int ret;

	*reply = NULL;
	if (!wp)
		return -ENOMEM;
	pthread_mutex_init(&wp->mu, NULL);
	pthread_cond_init(&wp->cv, NULL);
	wp->next = cm->waiters;
	cm->waiters = wp;
	req = msg_new(type, front);
	if (!req)
		return -ENOMEM;
	c = msgr_connect(cm->m, addr);
	if (!c) {
		msg_free(req);
		return -EINVAL;
	}
	msg_conn_set_priv(c, wp);
	ret = msg_call(c, req, timeout_ms, on_reply, wp);
	if (ret) {
		msg_conn_set_priv(c, NULL);
		msg_conn_put(c);
		return ret;
	}
	pthread_mutex_lock(&wp->mu);
	while (!wp->done && !wp->conn_err)
		pthread_cond_wait(&wp->cv, &wp->mu);
	if (!wp->done) {
		/* closing fails the pending call: on_reply runs once more */
		pthread_mutex_unlock(&wp->mu);
		msg_conn_close(c);
		pthread_mutex_lock(&wp->mu);
		while (!wp->done)
			pthread_cond_wait(&wp->cv, &wp->mu);
		wp->err = wp->conn_err;
	}
	pthread_mutex_unlock(&wp->mu);
	msg_conn_set_priv(c, NULL);
	msg_conn_put(c);
	if (wp->err) {
		msg_free(wp->reply);
		return wp->err;
	}
	*reply = wp->reply;
	return 0;
}
