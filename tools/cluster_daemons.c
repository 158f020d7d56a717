/*
 * cluster_daemons.c - the daemons' command lines (doc/daemons.md).
 *
 * atoll-cluster runs exactly the commands an operator would run by hand,
 * with explicit --data, --addr, --host and --mon, plus --conf pointing at
 * D/atoll.conf for everything else (timeouts, --set options).  Keeping
 * them in this one file makes it easy to check against doc/daemons.md.
 */
#include "cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cl_mon_addr(const struct cl_state *st, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < st->n && n < len; i++)
		if (st->d[i].kind == CL_MON)
			n += (size_t)snprintf(buf + n, len - n, "%s%s:%d", n ? "," : "",
					      st->d[i].ip, st->d[i].port);
	if (!buf[0])
		snprintf(buf, len, "127.0.0.2:6789");
}

/* atoll-mon --mkfs --data D/mon.X --name X --fsid F --initial a=IP:PORT,...
 * --conf D/atoll.conf, for every monitor: the same fsid and list. */
int cl_mkfs_mon(struct cl_state *st)
{
	char bin[PATH_MAX], data[PATH_MAX + 16], conf[PATH_MAX + 16], log[PATH_MAX + 32];
	char out[256], initial[CL_MONS_MAX * 40];
	size_t n = 0;
	int ret;

	if (cl_find_binary("atoll-mon", bin, sizeof(bin)))
		return -ENOENT;
	initial[0] = '\0';
	for (int i = 0; i < st->n; i++)
		if (st->d[i].kind == CL_MON && n < sizeof(initial))
			n += (size_t)snprintf(initial + n, sizeof(initial) - n, "%s%s=%s:%d",
					      n ? "," : "", st->d[i].name + 4, st->d[i].ip,
					      st->d[i].port);
	cl_path(conf, sizeof(conf), st, "%s", CL_CONF_FILE);
	for (int i = 0; i < st->n; i++) {
		const struct cl_daemon *d = &st->d[i];

		if (d->kind != CL_MON)
			continue;
		cl_path(data, sizeof(data), st, "%s", d->name);
		cl_path(log, sizeof(log), st, "log/%s.log", d->name);
		const char *argv[] = { bin, "--mkfs", "--data", data, "--name", d->name + 4,
				       "--fsid", st->fsid, "--initial", initial,
				       "--conf", conf, NULL };
		ret = cl_run_capture(argv, log, 60, out, sizeof(out));
		if (ret != 0) {
			cl_err("'atoll-mon --mkfs' of %s failed (%s %d)", d->name,
			       ret < 0 ? "error" : "exit", ret < 0 ? -ret : ret);
			cl_log_tail(log, 20);
			return ret < 0 ? ret : -EIO;
		}
	}
	return 0;
}

/* atoll-osd --mkfs --data D/osd.N --mon ADDR --size SZ --conf D/atoll.conf
 * [--id WANT]; the monitor gives the id, which the command prints.  The
 * data folder is made under a temporary name and renamed to osd.ID. */
int cl_mkfs_osd(struct cl_state *st, int host, int want_id, int *id)
{
	char want[16];
	char bin[PATH_MAX], data[PATH_MAX + 16], final[PATH_MAX + 16];
	char conf[PATH_MAX + 16], log[PATH_MAX + 32], finallog[PATH_MAX + 32];
	char mon[CL_MON_ADDRS], out[256], *end, *p;
	long v;
	int ret;

	if (cl_find_binary("atoll-osd", bin, sizeof(bin)))
		return -ENOENT;
	cl_path(data, sizeof(data), st, "osd.new.%d", (int)getpid());
	cl_path(conf, sizeof(conf), st, "%s", CL_CONF_FILE);
	cl_path(log, sizeof(log), st, "log/osd.new.%d.log", (int)getpid());
	cl_mon_addr(st, mon, sizeof(mon));
	const char *argv[] = { bin, "--mkfs", "--data", data, "--mon", mon,
			       "--size", st->size, "--conf", conf, NULL, NULL, NULL };

	snprintf(want, sizeof(want), "%d", want_id);
	if (want_id >= 0) {
		argv[10] = "--id";
		argv[11] = want;
	}
	ret = cl_run_capture(argv, log, 120, out, sizeof(out));
	if (ret != 0) {
		cl_err("'atoll-osd --mkfs' failed (%s %d)", ret < 0 ? "error" : "exit",
		       ret < 0 ? -ret : ret);
		cl_log_tail(log, 20);
		cl_remove_tree(data);	/* what the refused mkfs made */
		return ret < 0 ? ret : -EIO;
	}
	/* the id is the last number printed */
	v = -1;
	for (p = out; *p; p++) {
		if (*p >= '0' && *p <= '9' && (p == out || !(p[-1] >= '0' && p[-1] <= '9'))) {
			long x = strtol(p, &end, 10);

			if (end != p)
				v = x;
		}
	}
	if (v < 0 || v > 1000000) {
		cl_err("'atoll-osd --mkfs' printed no OSD id ('%s'); see '%s'", out, log);
		return -EPROTO;
	}
	*id = (int)v;
	{
		char name[32];

		snprintf(name, sizeof(name), "osd.%d", *id);
		ret = cl_keyring_add(st, name, "profile osd", "allow *", NULL);
		if (ret)
			return ret;
	}
	cl_path(final, sizeof(final), st, "osd.%d", *id);
	cl_path(finallog, sizeof(finallog), st, "log/osd.%d.log", *id);
	if (rename(data, final) != 0 || rename(log, finallog) != 0) {
		cl_err("cannot rename '%s' to '%s': %s", data, final, strerror(errno));
		return -errno;
	}
	(void)host;
	return 0;
}

static void conf_path(const struct cl_state *st, char *buf, size_t len)
{
	cl_path(buf, len, st, "%s", CL_CONF_FILE);
}

void cl_metrics_url(const struct cl_daemon *d, char *buf, size_t len)
{
	if (d->mport)
		snprintf(buf, len, "http://%s:%d/metrics", d->ip, d->mport);
	else if (len)
		buf[0] = 0;
}

void cl_dashboard_url(const struct cl_daemon *d, char *buf, size_t len)
{
	if (d->kind == CL_MON && d->dport)
		snprintf(buf, len, "http://%s:%d/", d->ip, d->dport);
	else if (len)
		buf[0] = 0;
}

/* A free port on d's address for key, appended to atoll.conf in the
 * section the daemon reads (its name; the one atoll-nbd reads [nbd]). */
static int assign_port(const struct cl_state *st, struct cl_daemon *d, const char *key,
		       const char *what, int *out)
{
	char path[PATH_MAX + 16];
	int port;
	FILE *f;

	port = cl_free_port(d->ip);
	if (port < 0) {
		cl_err("no free port on %s for %s's %s: %s", d->ip, d->name, what,
		       strerror(-port));
		return port;
	}
	conf_path(st, path, sizeof(path));
	f = fopen(path, "a");
	if (!f) {
		cl_err("cannot write '%s': %s", path, strerror(errno));
		return -errno;
	}
	fprintf(f, "\n[%s]\n%s = %s:%d\n", d->kind == CL_NBD ? "nbd" : d->name, key,
		d->ip, port);
	if (fclose(f) != 0)
		return -EIO;
	*out = port;
	return 0;
}

/* The first start of d: its metrics port, and a monitor's dashboard
 * port (loopback: doc/dashboard.md). */
static int assign_metrics(const struct cl_state *st, struct cl_daemon *d)
{
	int ret = 0;

	if (!d->mport)
		ret = assign_port(st, d, "metrics_addr", "metrics", &d->mport);
	if (!ret && d->kind == CL_MON && !d->dport)
		ret = assign_port(st, d, "dashboard_addr", "dashboard", &d->dport);
	return ret;
}

/* Starts one daemon (no mkfs) and waits until it listens. */
int cl_start_daemon(struct cl_state *st, struct cl_daemon *d, int timeout_s)
{
	char bin[PATH_MAX], data[PATH_MAX + 16], conf[PATH_MAX + 16], log[PATH_MAX + 32];
	char addr[64], mon[CL_MON_ADDRS], host[32];
	pid_t pid;
	int ret;

	if (cl_alive(d))
		return 0;
	if (cl_find_binary(d->kind == CL_MON ? "atoll-mon" :
			   d->kind == CL_NBD ? "atoll-nbd" :
			   d->kind == CL_MDS ? "atoll-mds" : "atoll-osd", bin, sizeof(bin)))
		return -ENOENT;
	ret = assign_metrics(st, d);
	/* every monitor's dashboard address is in atoll.conf before the
	 * first monitor starts: a follower redirects to whichever leads */
	for (int i = 0; !ret && d->kind == CL_MON && i < st->n; i++)
		if (st->d[i].kind == CL_MON && !st->d[i].dport)
			ret = assign_port(st, &st->d[i], "dashboard_addr", "dashboard",
					  &st->d[i].dport);
	if (ret)
		return ret;
	cl_path(data, sizeof(data), st, "%s", d->name);
	cl_path(log, sizeof(log), st, "log/%s.log", d->name);
	conf_path(st, conf, sizeof(conf));
	snprintf(addr, sizeof(addr), "%s:%d", d->ip, d->port);
	snprintf(host, sizeof(host), "host%d", d->host);
	cl_mon_addr(st, mon, sizeof(mon));
	struct stat sb;
	long from = stat(log, &sb) == 0 ? (long)sb.st_size : 0;
	if (d->kind == CL_MON) {
		const char *argv[] = { bin, "--data", data, "--addr", addr,
				       "--conf", conf, NULL };
		ret = cl_spawn(argv, log, &pid);
	} else if (d->kind == CL_NBD) {
		/* atoll-nbd --conf D/atoll.conf --addr IP:PORT --pool POOL
		 * --name client.nbd: its own key, limited to its pool
		 * (doc/caps.md); the key is made here for a cluster made
		 * before atoll-nbd had one */
		char osdcaps[128];
		const char *argv[] = { bin, "--conf", conf, "--addr", addr,
				       "--pool", st->pool, "--name", CL_NBD_ENTITY, NULL };

		snprintf(osdcaps, sizeof(osdcaps), "allow rw pool=%s", st->pool);
		ret = cl_keyring_add(st, CL_NBD_ENTITY, "profile client, profile blocklist",
				     osdcaps, NULL);
		if (ret)
			return ret;
		ret = cl_spawn(argv, log, &pid);
	} else if (d->kind == CL_MDS) {
		/* atoll-mds --conf D/atoll.conf --addr IP:PORT --name X
		 * --log D/log/mds.X.log (its log and its stdout/stderr share
		 * the file, both appending) */
		const char *argv[] = { bin, "--conf", conf, "--addr", addr,
				       "--name", strncmp(d->name, "mds.", 4) ? d->name : d->name + 4,
				       "--log", log, NULL };
		ret = cl_spawn(argv, log, &pid);
	} else {
		const char *argv[] = { bin, "--data", data, "--addr", addr,
				       "--host", host, "--mon", mon, "--conf", conf, NULL };
		ret = cl_spawn(argv, log, &pid);
	}
	if (ret)
		return ret;
	d->pid = pid;
	/* the start time is what later commands check the PID against */
	for (int i = 0; i < 100 && cl_proc_start_time(pid, &d->start) != 0; i++)
		usleep(1000);
	if (d->kind == CL_MDS) {
		/* a standby, or (the only one) active: cluster_mds.c */
		ret = cl_mds_wait_started(st, d, pid, timeout_s, log, from);
	} else {
		ret = cl_wait_listening(d, pid, timeout_s, log);
	}
	if (ret) {
		cl_stop(d, SIGKILL, 5);
		return ret;
	}
	return 0;
}
