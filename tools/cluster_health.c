/*
 * cluster_health.c - atoll-cluster talks to its cluster through libatoll.
 *
 * The launcher checks the cluster the way a user's program would: it
 * connects with D/atoll.conf through the public client library, creates
 * the default pool and polls the monitor's `health` command until it says
 * HEALTH_OK.  A wait that times out prints what health says and the tail
 * of the monitor's log, so the reason is on the screen.
 */
#include "cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "atoll/atoll.h"

static int connect_cluster(struct cl_state *st, int timeout_s, struct atoll_cluster **out)
{
	char conf[PATH_MAX + 16], t[32];
	struct atoll_cluster *c = NULL;
	int ret;

	cl_path(conf, sizeof(conf), st, "%s", CL_CONF_FILE);
	ret = atoll_cluster_create(&c, conf, 0);
	if (ret) {
		cl_err("cannot read '%s': %s", conf, atoll_strerror(ret));
		return ret;
	}
	snprintf(t, sizeof(t), "%ds", timeout_s > 0 ? timeout_s : 1);
	atoll_cluster_set(c, "client_mount_timeout", t);
	ret = atoll_cluster_connect(c);
	if (ret) {
		char mon[CL_MON_ADDRS];

		cl_mon_addr(st, mon, sizeof(mon));
		cl_err("cannot connect to the monitor at %s: %s", mon, atoll_strerror(ret));
		atoll_cluster_shutdown(c);
		return ret;
	}
	*out = c;
	return 0;
}

/* The pool every `up` creates: size 3, or fewer when there are fewer
 * failure domains; its failure domain is `host`, or `osd` when every OSD
 * sits on one host (the rule for a one-host cluster). */
int cl_create_pool(struct cl_state *st, const char *name, int osds, int pg, int timeout_s)
{
	struct atoll_pool_options opt = { .size_of = sizeof(opt) };
	struct atoll_cluster *c;
	int domains, ret;

	ret = connect_cluster(st, timeout_s, &c);
	if (ret)
		return ret;
	domains = st->hosts > 1 ? (st->hosts < osds ? st->hosts : osds) : osds;
	opt.size = domains < 3 ? (unsigned)domains : 3;
	opt.pg_num = (unsigned)pg;
	opt.failure_domain = st->hosts > 1 ? "host" : "osd";
	ret = atoll_pool_create(c, name, &opt);
	if (ret == -EEXIST)
		ret = 0;
	if (ret)
		cl_err("cannot create the pool '%s': %s", name, atoll_strerror(ret));
	atoll_cluster_shutdown(c);
	return ret;
}

/* Whether a health report (JSON, doc/cli.md) is good enough: HEALTH_OK,
 * or only POOL_NO_REDUNDANCY when the cluster has fewer than three
 * failure domains (a one- or two-OSD cluster cannot do better). */
static bool health_good(const char *json, bool small)
{
	cJSON *h = cJSON_Parse(json), *st, *checks, *ck;
	bool ok = false;

	if (!h)
		return strncmp(json, "HEALTH_OK", 9) == 0;
	st = cJSON_GetObjectItemCaseSensitive(h, "status");
	if (cJSON_IsString(st) && strcmp(st->valuestring, "HEALTH_OK") == 0) {
		ok = true;
	} else if (small) {
		checks = cJSON_GetObjectItemCaseSensitive(h, "checks");
		ok = cJSON_IsArray(checks);
		cJSON_ArrayForEach(ck, checks) {
			cJSON *code = cJSON_GetObjectItemCaseSensitive(ck, "code");

			if (!cJSON_IsString(code) ||
			    strcmp(code->valuestring, "POOL_NO_REDUNDANCY") != 0)
				ok = false;
		}
	}
	cJSON_Delete(h);
	return ok;
}

/* 1 when health is good, 0 when not yet (the plain report in *text). */
static int health_once(struct atoll_cluster *c, bool small, char **text)
{
	char *status = NULL, *out = NULL;
	size_t len = 0;
	int ret;

	ret = atoll_mon_command(c, "{\"prefix\":\"health\",\"format\":\"json\"}",
				&status, &out, &len);
	if (ret >= 0 && out && health_good(out, small)) {
		atoll_free(status);
		atoll_free(out);
		return 1;
	}
	atoll_free(status);
	atoll_free(out);
	status = out = NULL;
	ret = atoll_mon_command(c, "{\"prefix\":\"health\"}",
				&status, &out, &len);
	free(*text);
	if (ret < 0)
		*text = strdup(status && *status ? status : atoll_strerror(ret));
	else
		*text = strdup(out ? out : "");
	atoll_free(status);
	atoll_free(out);
	return 0;
}

int cl_wait_health(struct cl_state *st, int timeout_s, bool quiet)
{
	double deadline = mono_now_s() + timeout_s, next_note = mono_now_s() + 10;
	struct atoll_cluster *c;
	char *text = NULL, mon[PATH_MAX + 32];
	bool small;
	int ret, osds = 0;

	for (int i = 0; i < st->n; i++)
		osds += st->d[i].kind == CL_OSD;
	small = osds < 3 || st->hosts == 2;

	ret = connect_cluster(st, timeout_s, &c);
	if (ret)
		return ret;
	for (;;) {
		ret = health_once(c, small, &text);
		if (ret == 1) {
			ret = 0;
			break;
		}
		/* a daemon that died will not come back by itself */
		for (int i = 0; i < st->n; i++) {
			if (st->d[i].pid && !cl_alive(&st->d[i])) {
				char log[PATH_MAX + 32];

				cl_path(log, sizeof(log), st, "log/%s.log", st->d[i].name);
				cl_err("%s exited while the cluster was starting", st->d[i].name);
				cl_log_tail(log, 20);
				ret = -ECHILD;
				goto out;
			}
		}
		if (cl_interrupted) {
			ret = -EINTR;
			break;
		}
		if (mono_now_s() > deadline) {
			cl_err("the cluster is not HEALTH_OK after %d s; health says:\n%s",
			       timeout_s, text ? text : "(nothing)");
			cl_path(mon, sizeof(mon), st, "log/%s.log", CL_MON_NAME);
			cl_log_tail(mon, 15);
			ret = -ETIMEDOUT;
			break;
		}
		if (!quiet && mono_now_s() > next_note) {
			cl_info("waiting for HEALTH_OK: %.*s", (int)strcspn(text ? text : "", "\n"),
				text ? text : "");
			next_note = mono_now_s() + 10;
		}
		usleep(200 * 1000);
	}
out:
	free(text);
	atoll_cluster_shutdown(c);
	return ret;
}

/* Prints the monitor's plain `status` (for `atoll-cluster status`). */
int cl_print_health(struct cl_state *st)
{
	struct atoll_cluster *c;
	char *status = NULL, *out = NULL;
	size_t len;
	int ret;

	ret = connect_cluster(st, 5, &c);
	if (ret)
		return ret;
	ret = atoll_mon_command(c, "{\"prefix\":\"status\"}", &status, &out, &len);
	if (ret < 0)
		cl_err("status: %s", status && *status ? status : atoll_strerror(ret));
	else
		fputs(out ? out : "", stdout);
	atoll_free(status);
	atoll_free(out);
	atoll_cluster_shutdown(c);
	return ret < 0 ? ret : 0;
}
