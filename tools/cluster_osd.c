/*
 * cluster_osd.c - `atoll-cluster status`, `osd add|stop|start|kill N`,
 * `osd replace|rm N`, `mon stop|start|kill` and `mds stop|start|kill`.
 *
 * These are for tests and demos: stop an OSD cleanly (SIGTERM: it tells
 * the monitor), kill one (SIGKILL: the monitor must notice by itself),
 * start it again on the same address, or add a new one to the running
 * cluster; give a stopped OSD a new, empty disk keeping its id (after
 * `atoll osd destroy N`), or forget a stopped one (after `atoll osd rm N`).
 * Each changes D/cluster.state so that `down` stays exact.
 */
#include "cluster.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cl_cmd_status(struct cl_opts *o)
{
	struct cl_state *st = calloc(1, sizeof(*st));
	int ret, running = 0;

	if (!st)
		return 1;
	ret = cl_state_load(st, o->dir);
	if (ret == -ENOENT)
		cl_err("no cluster in '%s' (no %s there); give its folder with --dir",
		       o->dir, CL_STATE_FILE);
	if (ret)
		goto out;
	for (int i = 0; i < st->n; i++)
		running += cl_alive(&st->d[i]);
	if (o->json) {
		printf("{\"dir\":\"%s\",\"fsid\":\"%s\",\"conf\":\"%s/%s\",\"hosts\":%d,"
		       "\"pool\":\"%s\",\"running\":%d,\"daemons\":[",
		       st->dir, st->fsid, st->dir, CL_CONF_FILE, st->hosts, st->pool, running);
		for (int i = 0; i < st->n; i++) {
			const struct cl_daemon *d = &st->d[i];
			bool up = cl_alive(d);
			char url[96], durl[96];

			cl_metrics_url(d, url, sizeof(url));
			cl_dashboard_url(d, durl, sizeof(durl));
			printf("%s{\"name\":\"%s\",\"type\":\"%s\",\"id\":%d,\"host\":\"host%d\","
			       "\"addr\":\"%s:%d\",\"running\":%s,\"pid\":%ld,"
			       "\"log\":\"%s/log/%s.log\",\"metrics\":\"%s\"", i ? "," : "", d->name,
			       cl_kind_name(d->kind), d->id, d->host, d->ip,
			       d->port, up ? "true" : "false", up ? (long)d->pid : 0L,
			       st->dir, d->name, url);
			/* a monitor's dashboard (doc/dashboard.md) */
			if (durl[0])
				printf(",\"dashboard\":\"%s\"", durl);
			printf("}");
		}
		printf("]}\n");
		goto out;
	}
	printf("cluster in %s (fsid %s)\nconf: %s/%s\n\n", st->dir, st->fsid, st->dir,
	       CL_CONF_FILE);
	printf("%-8s %-7s %-22s %-8s %-8s %s\n", "NAME", "HOST", "ADDRESS", "PID", "STATE",
	       "METRICS");
	for (int i = 0; i < st->n; i++) {
		const struct cl_daemon *d = &st->d[i];
		char addr[40], pid[16], url[96];
		bool up = cl_alive(d);

		snprintf(addr, sizeof(addr), "%s:%d", d->ip, d->port);
		snprintf(pid, sizeof(pid), "%ld", up ? (long)d->pid : 0L);
		cl_metrics_url(d, url, sizeof(url));
		printf("%-8s host%-3d %-22s %-8s %-8s %s\n", d->name, d->host, addr,
		       up ? pid : "-", up ? "running" : "stopped", url[0] ? url : "-");
	}
	printf("\n");
	if (running && st->n && cl_alive(&st->d[0])) {
		if (cl_print_health(st) != 0)
			ret = -EIO;
	}
out:
	free(st);
	return ret ? 1 : 0;
}

/* The OSD's disk died: a new, empty one under the same id, started. */
static int replace_osd(struct cl_state *st, struct cl_daemon *d, int timeout_s)
{
	char path[PATH_MAX + 32], old[PATH_MAX + 32];
	int id, ret;

	if (cl_alive(d)) {
		cl_err("%s is running; stop it first (atoll-cluster osd stop %d) and destroy "
		       "it (atoll osd destroy %d --yes-i-really-mean-it)", d->name, d->id, d->id);
		return -EBUSY;
	}
	/* the old folder is kept aside until the monitor took the new disk */
	cl_path(path, sizeof(path), st, "%s", d->name);
	cl_path(old, sizeof(old), st, "%s.old.%d", d->name, (int)getpid());
	if (rename(path, old) != 0 && errno != ENOENT) {
		cl_err("cannot rename '%s': %s", path, strerror(errno));
		return -errno;
	}
	ret = cl_mkfs_osds(st, 1, &d->id, &id);
	if (ret == 0 && id != d->id) {
		cl_err("the monitor gave id %d, not %d", id, d->id);
		ret = -EPROTO;
	}
	if (ret) {
		rename(old, path);
		return ret;
	}
	if (cl_remove_tree(old))
		return -EIO;
	return cl_start_daemon(st, d, timeout_s);
}

/* Forgets a stopped OSD: its data and its entry in the state. */
static int remove_osd(struct cl_state *st, struct cl_daemon *d)
{
	char path[PATH_MAX + 32];
	int i = (int)(d - st->d);

	if (cl_alive(d)) {
		cl_err("%s is running; stop it first: atoll-cluster osd stop %d", d->name, d->id);
		return -EBUSY;
	}
	cl_path(path, sizeof(path), st, "%s", d->name);
	if (cl_remove_tree(path))
		return -EIO;
	memmove(&st->d[i], &st->d[i + 1], (size_t)(st->n - i - 1) * sizeof(st->d[0]));
	st->n--;
	return 0;
}

int cl_cmd_osd(struct cl_opts *o, const char *verb, const char *arg)
{
	struct cl_state *st = calloc(1, sizeof(*st));
	struct cl_daemon *d = NULL;
	char *end;
	long id = -1;
	int ret;

	if (!st)
		return 1;
	ret = cl_state_load(st, o->dir);
	if (ret == -ENOENT)
		cl_err("no cluster in '%s' (no %s there); give its folder with --dir",
		       o->dir, CL_STATE_FILE);
	if (ret)
		goto out;
	if (strcmp(verb, "add") != 0) {
		if (!arg || (id = strtol(arg, &end, 10), *end) || id < 0) {
			cl_err("osd %s needs an OSD id, e.g.: atoll-cluster osd %s 0", verb, verb);
			free(st);
			return 2;
		}
		d = cl_state_osd(st, (int)id);
		if (!d) {
			cl_err("there is no osd.%ld in '%s'; see: atoll-cluster status --dir %s",
			       id, st->dir, o->dir);
			ret = -ENOENT;
			goto out;
		}
	}
	if (strcmp(verb, "add") == 0) {
		int n = 0, host;

		for (int i = 0; i < st->n; i++)
			n += st->d[i].kind == CL_OSD;
		host = o->host >= 0 ? o->host : n % st->hosts;
		if (host >= 250) {
			cl_err("--host must be below 250");
			ret = -EINVAL;
			goto out;
		}
		if (host >= st->hosts)
			st->hosts = host + 1;
		ret = cl_add_osds(st, 1, &host, o->timeout);
		if (ret == 0)
			printf("%s\n", st->d[st->n - 1].name);
	} else if (strcmp(verb, "stop") == 0) {
		ret = cl_stop(d, SIGTERM, 30);
	} else if (strcmp(verb, "kill") == 0) {
		ret = cl_stop(d, SIGKILL, 10);
	} else if (strcmp(verb, "start") == 0) {
		ret = cl_start_daemon(st, d, o->timeout);
	} else if (strcmp(verb, "replace") == 0) {
		ret = replace_osd(st, d, o->timeout);
	} else if (strcmp(verb, "rm") == 0) {
		ret = remove_osd(st, d);
	} else {
		cl_err("unknown osd command '%s'; use add, stop, start, kill, replace or rm", verb);
		free(st);
		return 2;
	}
	cl_state_save(st);
out:
	free(st);
	return ret ? 1 : 0;
}
