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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* The OSD id an atoll-osd --mkfs wrote to DATA/whoami, or -1. */
static long read_whoami(const char *data)
{
	char path[PATH_MAX + 32], buf[32], *end;
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/whoami", data);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f)) {
		v = strtol(buf, &end, 10);
		if (end == buf || (*end && *end != '\n') || v < 0 || v > 1000000)
			v = -1;
	}
	fclose(f);
	return v;
}

/* Makes at most this many OSD stores at once: each zero-fills its block
 * file, and a disk gains nothing from more writers than that. */
#define MKFS_PARALLEL 4

struct mkfs_job {
	char data[PATH_MAX + 32];	/* D/osd.new.PID.K, renamed to D/osd.ID */
	char log[PATH_MAX + 48];
	const char *argv[13];		/* atoll-osd --mkfs ... */
	char want[16];			/* --id's value */
	pid_t pid;			/* > 0 while it runs */
	int status;			/* waitpid's; -1 = never ran or killed */
};

/* Runs every job's atoll-osd --mkfs, MKFS_PARALLEL at a time, at most
 * timeout_s in all (or until interrupted: then the running ones are
 * killed).  Returns 0, -ETIMEDOUT or -EINTR. */
static int mkfs_run(struct mkfs_job *job, int n, int timeout_s)
{
	double deadline = mono_now_s() + timeout_s;
	int next = 0, running = 0, ret = 0;

	while (next < n || running > 0) {
		for (int k = 0; k < next; k++) {
			if (job[k].pid <= 0 || waitpid(job[k].pid, &job[k].status, WNOHANG) != job[k].pid)
				continue;
			job[k].pid = 0;
			running--;
		}
		if (cl_interrupted || mono_now_s() > deadline) {
			ret = cl_interrupted ? -EINTR : -ETIMEDOUT;
			break;
		}
		while (next < n && running < MKFS_PARALLEL) {
			if (cl_spawn(job[next].argv, job[next].log, &job[next].pid) == 0)
				running++;
			next++;
		}
		if (running > 0)
			usleep(20 * 1000);
	}
	for (int k = 0; k < next; k++) {
		if (job[k].pid <= 0)
			continue;
		kill(job[k].pid, SIGKILL);
		while (waitpid(job[k].pid, NULL, 0) < 0 && errno == EINTR)
			;
		job[k].pid = 0;
		job[k].status = -1;
	}
	return ret;
}

/* atoll-osd --mkfs --data D/osd.new.PID.K --mon ADDR --size SZ --conf
 * D/atoll.conf [--id WANT] for n new OSDs, several at once (each
 * zero-fills its own block file: together they overlap their writes and
 * their round trips to the monitor).  The monitor gives each its id,
 * which mkfs writes to the folder's whoami; each folder is then renamed
 * to osd.ID, its log to log/osd.ID.log, and the OSD's key added to the
 * keyring.  want_ids (NULL: any) asks for ids; ids[] gets them in job
 * order.  When a mkfs fails, none of the new folders is left. */
int cl_mkfs_osds(struct cl_state *st, int n, const int *want_ids, int *ids)
{
	char bin[PATH_MAX], conf[PATH_MAX + 16], mon[CL_MON_ADDRS];
	struct mkfs_job *job;
	int ret, failed = 0;

	if (cl_find_binary("atoll-osd", bin, sizeof(bin)))
		return -ENOENT;
	job = calloc((size_t)n, sizeof(*job));
	if (!job)
		return -ENOMEM;
	cl_path(conf, sizeof(conf), st, "%s", CL_CONF_FILE);
	cl_mon_addr(st, mon, sizeof(mon));
	for (int k = 0; k < n; k++) {
		const char **a = job[k].argv;
		int i = 0;

		cl_path(job[k].data, sizeof(job[k].data), st, "osd.new.%d.%d", (int)getpid(), k);
		cl_path(job[k].log, sizeof(job[k].log), st, "log/osd.new.%d.%d.log",
			(int)getpid(), k);
		job[k].status = -1;
		a[i++] = bin;
		a[i++] = "--mkfs";
		a[i++] = "--data";
		a[i++] = job[k].data;
		a[i++] = "--mon";
		a[i++] = mon;
		a[i++] = "--size";
		a[i++] = st->size;
		a[i++] = "--conf";
		a[i++] = conf;
		if (want_ids && want_ids[k] >= 0) {
			snprintf(job[k].want, sizeof(job[k].want), "%d", want_ids[k]);
			a[i++] = "--id";
			a[i++] = job[k].want;
		}
		a[i] = NULL;
	}
	ret = mkfs_run(job, n, 120);
	if (ret == -ETIMEDOUT)
		cl_err("'atoll-osd --mkfs' did not finish within 120 s");
	for (int k = 0; k < n; k++) {
		int s = job[k].status;

		ids[k] = -1;
		if (s == -1 || !WIFEXITED(s) || WEXITSTATUS(s) != 0) {
			if (s != -1)
				cl_err("'atoll-osd --mkfs' failed (%s %d)",
				       WIFEXITED(s) ? "exit" : "signal",
				       WIFEXITED(s) ? WEXITSTATUS(s) : WTERMSIG(s));
			cl_log_tail(job[k].log, 20);
			failed++;
			continue;
		}
		ids[k] = (int)read_whoami(job[k].data);
		if (ids[k] < 0) {
			cl_err("'atoll-osd --mkfs' wrote no OSD id to '%s/whoami'; see '%s'",
			       job[k].data, job[k].log);
			failed++;
		}
	}
	if (failed) {
		/* what the refused (or the other) mkfs made */
		for (int k = 0; k < n; k++)
			cl_remove_tree(job[k].data);
		if (!ret)
			ret = -EIO;
		goto out;
	}
	for (int k = 0; k < n && ret == 0; k++) {
		char name[32], final[PATH_MAX + 16], finallog[PATH_MAX + 32];

		snprintf(name, sizeof(name), "osd.%d", ids[k]);
		ret = cl_keyring_add(st, name, "profile osd", "allow *", NULL);
		if (ret)
			break;
		cl_path(final, sizeof(final), st, "%s", name);
		cl_path(finallog, sizeof(finallog), st, "log/%s.log", name);
		if (rename(job[k].data, final) != 0 || rename(job[k].log, finallog) != 0) {
			ret = -errno;
			cl_err("cannot rename '%s' to '%s': %s", job[k].data, final,
			       strerror(errno));
		}
	}
out:
	free(job);
	return ret;
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

/* Starts one daemon (no mkfs) without waiting for it: d->pid, d->start
 * and *from, where its log's new lines begin. */
static int spawn_daemon(struct cl_state *st, struct cl_daemon *d, long *from)
{
	char bin[PATH_MAX], data[PATH_MAX + 16], conf[PATH_MAX + 16], log[PATH_MAX + 32];
	char addr[64], mon[CL_MON_ADDRS], host[32];
	pid_t pid;
	int ret;

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
	*from = stat(log, &sb) == 0 ? (long)sb.st_size : 0;
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
	return 0;
}

/* Waits until a daemon spawn_daemon started serves; kills it when it
 * does not. */
static int wait_daemon(struct cl_state *st, struct cl_daemon *d, long from, int timeout_s)
{
	char log[PATH_MAX + 32];
	int ret;

	cl_path(log, sizeof(log), st, "log/%s.log", d->name);
	if (d->kind == CL_MDS) {
		/* a standby, or (the only one) active: cluster_mds.c */
		ret = cl_mds_wait_started(st, d, d->pid, timeout_s, log, from);
	} else {
		ret = cl_wait_listening(d, d->pid, timeout_s, log);
	}
	if (ret) {
		cl_stop(d, SIGKILL, 5);
		return ret;
	}
	return 0;
}

/* Starts one daemon (no mkfs) and waits until it listens. */
int cl_start_daemon(struct cl_state *st, struct cl_daemon *d, int timeout_s)
{
	long from;
	int ret;

	if (cl_alive(d))
		return 0;
	ret = spawn_daemon(st, d, &from);
	return ret ? ret : wait_daemon(st, d, from, timeout_s);
}

/* Starts n daemons (no mkfs) at once, then waits until each listens;
 * those already running are left alone.  On a failure the ones started
 * here keep running: the caller stops the cluster. */
int cl_start_daemons(struct cl_state *st, struct cl_daemon **d, int n, int timeout_s)
{
	long *from = calloc((size_t)n + 1, sizeof(*from));
	bool *mine = calloc((size_t)n + 1, sizeof(*mine));
	int ret = from && mine ? 0 : -ENOMEM;

	for (int k = 0; k < n && ret == 0; k++) {
		if (cl_alive(d[k]))
			continue;
		ret = spawn_daemon(st, d[k], &from[k]);
		mine[k] = ret == 0;
	}
	for (int k = 0; k < n && ret == 0; k++)
		if (mine[k])
			ret = wait_daemon(st, d[k], from[k], timeout_s);
	free(from);
	free(mine);
	return ret;
}
