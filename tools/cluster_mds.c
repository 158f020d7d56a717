/*
 * cluster_mds.c - atoll-cluster's MDS daemons: mds.a, mds.b, ... (`up
 * --mds N`, two by default: the monitors make one the active MDS and the
 * other a standby), their start and the `mds stop|start|kill [NAME]`
 * command.  Without a NAME, stop and kill take the active one (as the
 * monitors name it) and start starts every stopped one.
 *
 * Each runs as `atoll-mds --conf D/atoll.conf --addr IP:PORT --name X
 * --log D/log/mds.X.log`; it prints "atoll-mds: standby mds.X on ADDR"
 * once it beacons, and "atoll-mds: serving on ADDR" once active.  A
 * start waits for the first line, and also for the second when no other
 * MDS of the cluster runs (that one must become the active one).  With
 * one MDS, [mds] mds_addr of atoll.conf names it (for tools that speak to
 * it directly); with more, clients find the active one in the map.
 */
#include "cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "atoll/atoll.h"

static void mds_host_ip(int host, char *buf, size_t len)
{
	snprintf(buf, len, "127.0.0.%u", (unsigned)(host + 2) % 256u);
}

static int append_mds_conf(const struct cl_state *st, const struct cl_daemon *d)
{
	char path[PATH_MAX + 16];
	FILE *f;

	cl_path(path, sizeof(path), st, "%s", CL_CONF_FILE);
	f = fopen(path, "a");
	if (!f) {
		cl_err("cannot write '%s': %s", path, strerror(errno));
		return -errno;
	}
	fprintf(f, "\n[mds]\n");
	if (d)
		fprintf(f, "mds_addr = %s:%d\n", d->ip, d->port);
	return fclose(f) == 0 ? 0 : -EIO;
}

int cl_mds_add(struct cl_state *st, const struct cl_opts *o)
{
	char bin[PATH_MAX];
	int ret, osds = 0, n = o->mds;
	struct cl_daemon *first = NULL;

	if (n < 1)
		return 0;
	if (cl_find_binary("atoll-mds", bin, sizeof(bin))) {
		cl_info("atoll-mds is not built; starting no file system");
		return 0;
	}
	if (st->n + n > CL_MAX_DAEMONS) {
		cl_err("a local cluster holds at most %d daemons", CL_MAX_DAEMONS);
		return -E2BIG;
	}
	for (int i = 0; i < st->n; i++)
		osds += st->d[i].kind == CL_OSD;
	/* made here rather than by atoll-mds so that their size fits the
	 * cluster (atoll-mds would make them with the monitor's defaults) */
	ret = cl_create_pool(st, CL_FS_META_POOL, osds, o->pg ? o->pg : 16, o->timeout);
	if (ret == 0)
		ret = cl_create_pool(st, CL_FS_DATA_POOL, osds, o->pg ? o->pg : 32, o->timeout);
	if (ret)
		return ret;
	for (int i = 0; i < n; i++) {
		struct cl_daemon *d = &st->d[st->n];
		int port;

		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "mds.%c", 'a' + i % 26);
		if (i >= 26)
			snprintf(d->name, sizeof(d->name), "mds.%c%d", 'a' + i % 26, i / 26);
		d->kind = CL_MDS;
		d->id = i;
		if (cl_keyring_add(st, d->name, "profile mds", "allow *", "allow *"))
			return -EIO;
		d->host = st->hosts > 0 ? i % st->hosts : 0;
		mds_host_ip(d->host, d->ip, sizeof(d->ip));
		port = cl_free_port(d->ip);
		if (port < 0) {
			cl_err("no free port on %s: %s", d->ip, strerror(-port));
			return port;
		}
		d->port = port;
		st->n++;
		if (!first)
			first = d;
	}
	ret = append_mds_conf(st, n == 1 ? first : NULL);
	if (ret == 0)
		ret = cl_state_save(st);
	return ret;
}

/* Another MDS of the cluster than d runs. */
static bool other_mds_alive(const struct cl_state *st, const struct cl_daemon *d)
{
	for (int i = 0; i < st->n; i++)
		if (st->d[i].kind == CL_MDS && &st->d[i] != d && cl_alive(&st->d[i]))
			return true;
	return false;
}

int cl_mds_wait_started(const struct cl_state *st, const struct cl_daemon *d, pid_t pid,
			int timeout_s, const char *log, long from)
{
	char line[80], where[64], want[64];
	const char *at = NULL;
	int ret;

	snprintf(want, sizeof(want), "%s:%d", d->ip, d->port);
	/* "atoll-mds: standby mds.X on ADDR" or "atoll-mds: serving on ADDR"
	 * (an atoll-mds older than standbys prints only the second) */
	ret = cl_wait_line(d, pid, timeout_s, log, from, "atoll-mds: s", line, sizeof(line));
	if (ret)
		return ret;
	if (strncmp(line, "erving on ", 10) == 0) {
		at = line + 10;
	} else if (!other_mds_alive(st, d)) {
		/* a standby, the only one: it becomes the active one */
		ret = cl_wait_line(d, pid, timeout_s, log, from, "atoll-mds: serving on ",
				   where, sizeof(where));
		if (ret)
			return ret;
		at = where;
	}
	if (at && strcmp(at, want) != 0) {
		cl_err("%s serves on %s, not on %s as asked", d->name, at, want);
		return -EADDRNOTAVAIL;
	}
	return 0;
}

int cl_mds_start_all(struct cl_state *st, int timeout_s)
{
	int ret = 0;

	for (int i = 0; i < st->n && ret == 0; i++)
		if (st->d[i].kind == CL_MDS) {
			ret = cl_start_daemon(st, &st->d[i], timeout_s);
			cl_state_save(st);
		}
	return ret;
}

static struct cl_daemon *active_mds(struct cl_state *st, const char *timeout);

/* The standbys first, then the active one: a standby stopped after it
 * would be granted the role (and replay the journal) for nothing. */
int cl_mds_stop_all(struct cl_state *st, int timeout_s)
{
	struct cl_daemon *act = NULL;
	int ret = 0, nalive = 0;

	for (int i = 0; i < st->n; i++)
		nalive += st->d[i].kind == CL_MDS && cl_alive(&st->d[i]);
	if (nalive > 1)
		act = active_mds(st, "2s");
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < st->n; i++) {
			struct cl_daemon *d = &st->d[i];

			if (d->kind != CL_MDS || (pass == 0) == (d == act))
				continue;
			int r = cl_stop(d, SIGTERM, timeout_s);
			ret = ret ? ret : r;
		}
	return ret;
}

/* The active MDS's daemon as the monitors name it (NULL when none or
 * they cannot be asked). */
static struct cl_daemon *active_mds(struct cl_state *st, const char *timeout)
{
	char conf[PATH_MAX + 16], *out = NULL, *status = NULL, name[40];
	struct atoll_cluster *c = NULL;
	struct cl_daemon *d = NULL;
	cJSON *j = NULL;

	cl_path(conf, sizeof(conf), st, "%s", CL_CONF_FILE);
	if (atoll_cluster_create(&c, conf, 0) ||
	    atoll_cluster_set(c, "client_mount_timeout", timeout) || atoll_cluster_connect(c))
		goto out;
	if (atoll_mon_command(c, "{\"prefix\":\"mds stat\",\"format\":\"json\"}", &status, &out,
			      NULL))
		goto out;
	j = cJSON_Parse(out);
	cJSON *fs = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "filesystems"), 0);
	const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(fs, "active"),
								 "name"));
	if (n) {
		snprintf(name, sizeof(name), "mds.%s", n);
		d = cl_state_find(st, name);
	}
out:
	cJSON_Delete(j);
	atoll_free(out);
	atoll_free(status);
	atoll_cluster_shutdown(c);
	return d;
}

int cl_cmd_mds(struct cl_opts *o, const char *verb, const char *name)
{
	struct cl_state *st = calloc(1, sizeof(*st));
	struct cl_daemon *d = NULL;
	char full[40];
	int ret, nmds = 0;

	if (!st)
		return 1;
	if (strcmp(verb, "stop") && strcmp(verb, "start") && strcmp(verb, "kill")) {
		cl_err("unknown mds command '%s'; use stop, start or kill [NAME]", verb);
		free(st);
		return 2;
	}
	ret = cl_state_load(st, o->dir);
	if (ret == -ENOENT)
		cl_err("no cluster in '%s' (no %s there); give its folder with --dir",
		       o->dir, CL_STATE_FILE);
	if (ret)
		goto out;
	for (int i = 0; i < st->n; i++)
		nmds += st->d[i].kind == CL_MDS;
	if (!nmds) {
		cl_err("the cluster in '%s' has no MDS (it was made with --no-mds)", st->dir);
		ret = -ENOENT;
		goto out;
	}
	if (name) {
		snprintf(full, sizeof(full), "%s%s", strncmp(name, "mds.", 4) ? "mds." : "", name);
		d = cl_state_find(st, full);
		if (!d || d->kind != CL_MDS) {
			cl_err("the cluster in '%s' has no MDS '%s' (see: atoll-cluster status)",
			       st->dir, full);
			ret = -ENOENT;
			goto out;
		}
	} else if (strcmp(verb, "start") != 0) {
		/* the active one; the only one running when the monitors do not say */
		d = active_mds(st, "10s");
		for (int i = 0; i < st->n && !d; i++)
			if (st->d[i].kind == CL_MDS && (cl_alive(&st->d[i]) || nmds == 1))
				d = &st->d[i];
		if (!d) {
			cl_info("no MDS runs");
			ret = 0;
			goto out;
		}
	}
	if (strcmp(verb, "stop") == 0)
		ret = cl_stop(d, SIGTERM, 30);
	else if (strcmp(verb, "kill") == 0)
		ret = cl_stop(d, SIGKILL, 10);
	else if (d)
		ret = cl_start_daemon(st, d, o->timeout);
	else
		ret = cl_mds_start_all(st, o->timeout);
	if (d && ret == 0)
		printf("%s\n", d->name);	/* which one (a test's takeover timer) */
	cl_state_save(st);
out:
	free(st);
	return ret ? 1 : 0;
}
