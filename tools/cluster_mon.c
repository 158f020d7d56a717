/*
 * cluster_mon.c - atoll-cluster's monitors: which one leads, and
 * `mon stop|start|kill [NAME]`.
 *
 * The leader is asked, not guessed: each running monitor in turn gets
 * `quorum status` through the client library, with mon_host set to that
 * one monitor; the first answer names the leader.  A follower (or a
 * monitor that knows no leader) answers commands with a MONMAP, so the
 * first monitor that answers may be the leader itself or, once the
 * library follows MONMAPs, whichever it was sent to.
 */
#include "cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "atoll/atoll.h"

/* The leader's name as d's quorum status says it ("a"), 0 or an error. */
static int ask_leader(struct cl_state *st, const struct cl_daemon *d, char *name, size_t len)
{
	char conf[PATH_MAX + 16], addr[64];
	struct atoll_cluster *c = NULL;
	char *status = NULL, *out = NULL;
	size_t outlen = 0;
	cJSON *j, *l;
	int ret;

	cl_path(conf, sizeof(conf), st, "%s", CL_CONF_FILE);
	snprintf(addr, sizeof(addr), "%s:%d", d->ip, d->port);
	ret = atoll_cluster_create(&c, conf, 0);
	if (ret)
		return ret;
	atoll_cluster_set(c, "mon_host", addr);
	atoll_cluster_set(c, "client_mount_timeout", "2s");
	ret = atoll_cluster_connect(c);
	if (ret == 0)
		ret = atoll_mon_command(c, "{\"prefix\":\"quorum status\",\"format\":\"json\"}",
					&status, &out, &outlen);
	if (ret >= 0) {
		ret = -EAGAIN;
		j = out ? cJSON_Parse(out) : NULL;
		l = j ? cJSON_GetObjectItemCaseSensitive(j, "leader") : NULL;
		if (cJSON_IsString(l) && l->valuestring[0]) {
			snprintf(name, len, "mon.%s", l->valuestring);
			ret = 0;
		}
		cJSON_Delete(j);
	}
	atoll_free(status);
	atoll_free(out);
	atoll_cluster_shutdown(c);
	return ret;
}

int cl_mon_leader(struct cl_state *st, int timeout_s, char *name, size_t len)
{
	double deadline = mono_now_s() + timeout_s;

	while (!cl_interrupted) {
		for (int i = 0; i < st->n; i++)
			if (st->d[i].kind == CL_MON && cl_alive(&st->d[i]) &&
			    ask_leader(st, &st->d[i], name, len) == 0)
				return 0;
		if (mono_now_s() > deadline) {
			cl_err("the monitors have no leader after %d s (logs in %s/log/)",
			       timeout_s, st->dir);
			return -ETIMEDOUT;
		}
		usleep(200 * 1000);
	}
	return -EINTR;
}

static int count_mons(const struct cl_state *st)
{
	int n = 0;

	for (int i = 0; i < st->n; i++)
		n += st->d[i].kind == CL_MON;
	return n;
}

int cl_cmd_mon(struct cl_opts *o, const char *verb, const char *name)
{
	struct cl_state *st = calloc(1, sizeof(*st));
	struct cl_daemon *d = NULL;
	char full[40];
	int ret;

	if (!st)
		return 1;
	if (strcmp(verb, "stop") && strcmp(verb, "start") && strcmp(verb, "kill")) {
		cl_err("unknown mon command '%s'; use stop, start or kill", verb);
		free(st);
		return 2;
	}
	ret = cl_state_load(st, o->dir);
	if (ret == -ENOENT)
		cl_err("no cluster in '%s' (no %s there); give its folder with --dir",
		       o->dir, CL_STATE_FILE);
	if (ret)
		goto out;
	if (!name && strcmp(verb, "start") == 0) {
		/* plain `mon start`: every monitor that is not running */
		for (int i = 0; i < st->n && ret == 0; i++)
			if (st->d[i].kind == CL_MON && !cl_alive(&st->d[i]))
				ret = cl_start_daemon(st, &st->d[i], o->timeout);
		cl_state_save(st);
		goto out;
	}
	if (name) {
		snprintf(full, sizeof(full), "%s%s", strncmp(name, "mon.", 4) ? "mon." : "", name);
	} else if (count_mons(st) == 1) {
		snprintf(full, sizeof(full), "%s", CL_MON_NAME);
	} else {
		/* plain `mon stop|kill`: the leader */
		ret = cl_mon_leader(st, 10, full, sizeof(full));
		if (ret)
			goto out;
	}
	d = cl_state_find(st, full);
	if (!d || d->kind != CL_MON) {
		cl_err("the cluster in '%s' has no monitor '%s'", st->dir, full);
		ret = -ENOENT;
		goto out;
	}
	if (strcmp(verb, "stop") == 0)
		ret = cl_stop(d, SIGTERM, 30);
	else if (strcmp(verb, "kill") == 0)
		ret = cl_stop(d, SIGKILL, 10);
	else
		ret = cl_start_daemon(st, d, o->timeout);
	if (ret == 0 && strcmp(verb, "start"))
		printf("%s\n", d->name);	/* which one (the leader for a plain kill) */
	cl_state_save(st);
out:
	free(st);
	return ret ? 1 : 0;
}
