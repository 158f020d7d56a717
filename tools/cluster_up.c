/*
 * cluster_up.c - `atoll-cluster up` and `down`.
 *
 * up: a monitor on 127.0.0.2 and N OSDs spread over H hosts, host h on
 * its own loopback address 127.0.0.(h+2) (nothing binds 127.0.0.1), each
 * on a free port; then the default pool; then it waits for HEALTH_OK.
 * The state file is saved after every daemon that starts, so that a
 * crash of the launcher still leaves `down` a list of what to stop; any
 * failure stops every daemon this run started before it returns.
 * `up` on a folder whose cluster is stopped starts it again (no mkfs).
 *
 * down: SIGTERM to every daemon (atoll-mds and atoll-nbd first, so that
 * they finish their work and atoll-nbd releases its images' locks while
 * the cluster is still there; then the OSDs, so each tells the monitor
 * it goes down), SIGKILL after a timeout; checks they are gone.  It
 * removes nothing unless --purge.
 *
 * Unless --no-nbd, up also starts one atoll-nbd serving the default
 * pool's images on host 0's address (127.0.0.2) and a free port, recorded
 * in the state file as daemon "nbd" and stopped by `down` by its PID.
 *
 * Unless --no-mds, up then creates the file system's pools (fs_meta,
 * fs_data) and, once the cluster is healthy, starts one atoll-mds on
 * 127.0.0.2 and a free port, which creates the file system on its first
 * start (also after HEALTH_OK when `up` restarts a stopped cluster); its address goes to
 * atoll.conf ([mds] mds_addr, where atoll-fuse and `atoll fs status`
 * find it) and to the state file as daemon "mds".  `down` stops it first
 * (before the OSDs it journals to) by its PID.
 */
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STOP_TIMEOUT_S 30

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int make_fsid(char out[37])
{
	unsigned char b[16];
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || read(fd, b, sizeof(b)) != (ssize_t)sizeof(b)) {
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	b[6] = (b[6] & 0x0f) | 0x40;	/* version 4 */
	b[8] = (b[8] & 0x3f) | 0x80;	/* variant */
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5],
		 b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	return 0;
}

static void host_ip(int host, char *buf, size_t len)
{
	snprintf(buf, len, "127.0.0.%u", (unsigned)(host + 2) & 0xffu);
}

/* D/atoll.conf: [global] (fsid, mon_host, the store size, --set options)
 * and a section per daemon naming its folder, address and host. */
static int write_conf(const struct cl_state *st, const struct cl_opts *o)
{
	char path[PATH_MAX + 16], mon[CL_MON_ADDRS];
	FILE *f;

	cl_path(path, sizeof(path), st, "%s", CL_CONF_FILE);
	f = fopen(path, "w");
	if (!f) {
		cl_err("cannot write '%s': %s", path, strerror(errno));
		return -errno;
	}
	cl_mon_addr(st, mon, sizeof(mon));
	fprintf(f, "# atoll.conf of the local cluster in %s, written by atoll-cluster up.\n"
		"# Use it with: export ATOLL_CONF=%s\n", st->dir, path);
	fprintf(f, "[global]\nfsid = %s\nmon_host = %s\nosd_store_size = %s\n",
		st->fsid, mon, st->size);
	/* authentication on, with the keys of D/keyring (cluster_keys.c);
	 * a --set auth=none below wins (the last value of a key counts) */
	fprintf(f, "auth = ticket\nkeyring = %s/%s\n", st->dir, CL_KEYRING_FILE);
	for (int i = 0; i < o->nsets; i++) {
		const char *eq = strchr(o->sets[i], '=');

		fprintf(f, "%.*s = %s\n", (int)(eq - o->sets[i]), o->sets[i], eq + 1);
	}
	for (int i = 0; i < st->n; i++)
		if (st->d[i].kind == CL_MON)
			fprintf(f, "\n[%s]\nmon_data = %s/%s\nmon_addr = %s:%d\n", st->d[i].name,
				st->dir, st->d[i].name, st->d[i].ip, st->d[i].port);
	if (fclose(f) != 0) {
		cl_err("cannot write '%s': %s", path, strerror(errno));
		return -EIO;
	}
	return cl_keyring_create(st);
}

static int append_osd_conf(const struct cl_state *st, const struct cl_daemon *d)
{
	char path[PATH_MAX + 16];
	FILE *f;

	cl_path(path, sizeof(path), st, "%s", CL_CONF_FILE);
	f = fopen(path, "a");
	if (!f) {
		cl_err("cannot write '%s': %s", path, strerror(errno));
		return -errno;
	}
	fprintf(f, "\n[%s]\nosd_data = %s/%s\nosd_addr = %s:%d\nosd_host = host%d\n",
		d->name, st->dir, d->name, d->ip, d->port, d->host);
	return fclose(f) == 0 ? 0 : -EIO;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* mkfs + start n new OSDs, all at once; the one with the k-th smallest id
 * goes on host hosts[k].  Adds them to st and atoll.conf. */
int cl_add_osds(struct cl_state *st, int n, const int *hosts, int timeout_s)
{
	struct cl_daemon **d;
	int *ids, ret;

	if (st->n + n > CL_MAX_DAEMONS) {
		cl_err("a local cluster holds at most %d daemons", CL_MAX_DAEMONS);
		return -E2BIG;
	}
	ids = calloc((size_t)n, sizeof(*ids));
	d = calloc((size_t)n, sizeof(*d));
	if (!ids || !d) {
		ret = -ENOMEM;
		goto out;
	}
	ret = cl_mkfs_osds(st, n, NULL, ids);
	if (ret)
		goto out;
	qsort(ids, (size_t)n, sizeof(*ids), cmp_int);
	for (int k = 0; k < n && ret == 0; k++) {
		char ip[16];
		int port;

		if (cl_state_osd(st, ids[k]) || (k && ids[k] == ids[k - 1])) {
			cl_err("the monitor gave id %d twice", ids[k]);
			ret = -EEXIST;
			break;
		}
		host_ip(hosts[k], ip, sizeof(ip));
		port = cl_free_port(ip);
		if (port < 0) {
			cl_err("no free port on %s: %s", ip, strerror(-port));
			ret = port;
			break;
		}
		d[k] = &st->d[st->n++];
		memset(d[k], 0, sizeof(*d[k]));
		snprintf(d[k]->name, sizeof(d[k]->name), "osd.%d", ids[k]);
		d[k]->kind = CL_OSD;
		d[k]->id = ids[k];
		d[k]->host = hosts[k];
		snprintf(d[k]->ip, sizeof(d[k]->ip), "%s", ip);
		d[k]->port = port;
		ret = append_osd_conf(st, d[k]);
	}
	if (ret == 0)
		ret = cl_state_save(st);
	if (ret == 0)
		ret = cl_start_daemons(st, d, n, timeout_s);
	cl_state_save(st);
out:
	free(ids);
	free(d);
	return ret;
}

/* Stops the client daemon called name (atoll-nbd, atoll-mds) if the state
 * has one.  SIGTERM: atoll-nbd drains its clients and closes the images,
 * which releases their locks; atoll-mds finishes the request at hand;
 * both while the OSDs they need are still up. */
static int stop_named(struct cl_state *st, const char *name, int timeout_s)
{
	struct cl_daemon *d = cl_state_find(st, name);

	return d ? cl_stop(d, SIGTERM, timeout_s) : 0;
}

/* The daemons that use the cluster as clients go first. */
static int stop_clients(struct cl_state *st, int timeout_s)
{
	int a = cl_mds_stop_all(st, timeout_s);
	int b = stop_named(st, CL_NBD_NAME, timeout_s);

	return a ? a : b;
}

/* Adds and starts the one atoll-nbd of a new cluster (not when the
 * binary is missing: the cluster is still useful without it). */
static int add_nbd(struct cl_state *st, int timeout_s)
{
	struct cl_daemon *d;
	char bin[PATH_MAX];
	int port, ret;

	if (cl_find_binary("atoll-nbd", bin, sizeof(bin))) {
		cl_info("atoll-nbd is not built; starting no NBD server");
		return 0;
	}
	if (st->n >= CL_MAX_DAEMONS) {
		cl_err("a local cluster holds at most %d daemons", CL_MAX_DAEMONS);
		return -E2BIG;
	}
	d = &st->d[st->n];
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", CL_NBD_NAME);
	d->kind = CL_NBD;
	d->host = 0;
	host_ip(0, d->ip, sizeof(d->ip));
	port = cl_free_port(d->ip);
	if (port < 0) {
		cl_err("no free port on %s: %s", d->ip, strerror(-port));
		return port;
	}
	d->port = port;
	st->n++;
	ret = cl_state_save(st);
	if (ret == 0)
		ret = cl_start_daemon(st, d, timeout_s);
	cl_state_save(st);
	return ret;
}

static void print_usage_hint(struct cl_state *st, int osds)
{
	const struct cl_daemon *nbd = cl_state_find(st, CL_NBD_NAME);
	const struct cl_daemon *mds = NULL;
	int nmds = 0, mons = 0;
	char mon[CL_MON_ADDRS];

	for (int i = 0; i < st->n; i++) {
		if (st->d[i].kind == CL_MDS && !nmds++)
			mds = &st->d[i];
		mons += st->d[i].kind == CL_MON;
	}
	cl_mon_addr(st, mon, sizeof(mon));
	printf("atoll-cluster: HEALTH_OK: %d monitor%s (%s), %d OSD%s on %d host%s",
	       mons, mons == 1 ? "" : "s", mon, osds, osds == 1 ? "" : "s", st->hosts,
	       st->hosts == 1 ? "" : "s");
	if (st->pool[0])
		printf(", pool '%s'", st->pool);
	printf("\nin %s (logs in %s/log/)\n\n", st->dir, st->dir);
	printf("Use it:\n"
	       "  export ATOLL_CONF=%s/%s\n"
	       "  atoll status\n"
	       "  atoll osd tree\n", st->dir, CL_CONF_FILE);
	if (st->pool[0])
		printf("  atoll put %s hello /etc/hostname && atoll get %s hello -\n"
		       "  atoll bench %s 10 write\n", st->pool, st->pool, st->pool);
	if (nbd && st->pool[0])
		printf("Block images over NBD (pool '%s'):\n"
		       "  NBD URI: nbd://%s:%d/IMAGE\n"
		       "  atoll image create %s disk1 --size 1G && nbdinfo nbd://%s:%d/disk1\n",
		       st->pool, nbd->ip, nbd->port, st->pool, nbd->ip, nbd->port);
	if (mds)
		printf("The file system (%d atoll-mds: %s at %s:%d%s):\n"
		       "  mkdir -p MNT && atoll-fuse MNT -o conf=%s/%s\n"
		       "  atoll fs status\n"
		       "  fusermount3 -u MNT          (unmount it)\n",
		       nmds, mds->name, mds->ip, mds->port,
		       nmds > 1 ? " active, the others standbys" : "", st->dir, CL_CONF_FILE);
	printf("Dashboard (the leading monitor serves it, the others redirect; "
	       "doc/dashboard.md):\n");
	for (int i = 0; i < st->n; i++) {
		char url[96];

		cl_dashboard_url(&st->d[i], url, sizeof(url));
		if (url[0])
			printf("  %-8s %s\n", st->d[i].name, url);
	}
	printf("Metrics (Prometheus text format; doc/metrics.md):\n");
	for (int i = 0; i < st->n; i++) {
		char url[96];

		cl_metrics_url(&st->d[i], url, sizeof(url));
		if (url[0])
			printf("  %-8s %s\n", st->d[i].name, url);
	}
	printf("Stop it:\n"
	       "  atoll-cluster down --dir %s          (add --purge to remove it)\n",
	       st->dir);
}

static int count_osds(const struct cl_state *st)
{
	int n = 0;

	for (int i = 0; i < st->n; i++)
		n += st->d[i].kind == CL_OSD;
	return n;
}

/* Starts every daemon of one kind at once and waits for them. */
static int start_kind(struct cl_state *st, enum cl_kind kind, int timeout_s)
{
	struct cl_daemon *d[CL_MAX_DAEMONS];
	int n = 0, ret;

	for (int i = 0; i < st->n; i++)
		if (st->d[i].kind == kind)
			d[n++] = &st->d[i];
	ret = cl_start_daemons(st, d, n, timeout_s);
	cl_state_save(st);
	return ret;
}

/* Starts a stopped cluster again from its state file. */
static int restart(struct cl_state *st, struct cl_opts *o)
{
	int ret = 0;

	cl_info("starting the stopped cluster in %s again", st->dir);
	static const enum cl_kind order[] = { CL_MON, CL_OSD, CL_NBD };

	for (int pass = 0; pass < 3 && ret == 0; pass++) {
		ret = start_kind(st, order[pass], o->timeout);
		if (pass == 0 && ret == 0) {
			char leader[40];

			ret = cl_mon_leader(st, o->timeout, leader, sizeof(leader));
		}
	}
	if (ret == 0)
		ret = cl_wait_health(st, o->timeout, false);
	if (ret == 0)
		ret = cl_mds_start_all(st, o->timeout);
	return ret;
}

int cl_cmd_up(struct cl_opts *o)
{
	struct cl_state *st;
	struct cl_daemon *m;
	char path[PATH_MAX + 32];
	int ret, started = 0;

	if (o->osds < 1 || o->hosts < 1 || o->hosts > 250) {
		cl_err("--osds must be at least 1 and --hosts between 1 and 250");
		return 2;
	}
	if (o->mons < 1 || o->mons > CL_MONS_MAX || o->mons % 2 == 0) {
		cl_err("--mons %d: give an odd number of monitors from 1 to %d (a majority "
		       "of them must run)", o->mons, CL_MONS_MAX);
		return 2;
	}
	if (o->hosts > o->osds) {
		cl_err("--hosts %d is more than --osds %d; every host needs an OSD",
		       o->hosts, o->osds);
		return 2;
	}
	{
		char bin[PATH_MAX];

		/* fail before anything is made when a daemon is not built */
		if (cl_find_binary("atoll-mon", bin, sizeof(bin)) ||
		    cl_find_binary("atoll-osd", bin, sizeof(bin)))
			return 1;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return 1;
	ret = mkdir_p(o->dir);
	if (ret) {
		cl_err("cannot create the folder '%s': %s", o->dir, strerror(-ret));
		goto out_free;
	}
	ret = cl_state_load(st, o->dir);
	if (ret == 0) {
		for (int i = 0; i < st->n; i++)
			if (cl_alive(&st->d[i])) {
				cl_err("a cluster is already running in '%s' (%s, pid %ld); "
				       "stop it with: atoll-cluster down --dir %s",
				       st->dir, st->d[i].name, (long)st->d[i].pid, o->dir);
				ret = -EBUSY;
				goto out_free;
			}
		started = 1;
		ret = restart(st, o);
		if (ret == 0)
			print_usage_hint(st, count_osds(st));
		goto out_rollback;
	}
	if (ret != -ENOENT)
		goto out_free;

	/* a new cluster */
	if (make_fsid(st->fsid)) {
		cl_err("cannot read /dev/urandom");
		ret = -EIO;
		goto out_free;
	}
	st->hosts = o->hosts;
	snprintf(st->size, sizeof(st->size), "%s", o->size);
	cl_path(path, sizeof(path), st, "log");
	ret = mkdir_p(path);
	if (ret) {
		cl_err("cannot create '%s': %s", path, strerror(-ret));
		goto out_free;
	}
	/* monitors a, b, c, ... each on its own host: mon.a on 127.0.0.2 */
	for (int k = 0; k < o->mons; k++) {
		m = &st->d[st->n++];
		snprintf(m->name, sizeof(m->name), "mon.%c", 'a' + k);
		m->kind = CL_MON;
		m->host = k;
		host_ip(k, m->ip, sizeof(m->ip));
		m->port = cl_free_port(m->ip);
		if (m->port < 0) {
			cl_err("no free port on %s: %s", m->ip, strerror(-m->port));
			ret = m->port;
			goto out_free;
		}
	}
	ret = write_conf(st, o);
	if (ret == 0)
		ret = cl_state_save(st);
	if (ret)
		goto out_free;
	cl_info("creating a cluster in %s: %d monitor%s, %d OSD%s on %d host%s", st->dir,
		o->mons, o->mons == 1 ? "" : "s", o->osds, o->osds == 1 ? "" : "s",
		o->hosts, o->hosts == 1 ? "" : "s");
	ret = cl_mkfs_mon(st);
	if (ret)
		goto out_free;
	started = 1;
	ret = start_kind(st, CL_MON, o->timeout);
	if (ret == 0) {
		char leader[40];

		/* the OSDs' and the pool's requests need a leader */
		ret = cl_mon_leader(st, o->timeout, leader, sizeof(leader));
	}
	if (ret)
		goto out_rollback;
	{
		int hosts[CL_MAX_DAEMONS];

		for (int i = 0; i < o->osds && i < CL_MAX_DAEMONS; i++)
			hosts[i] = i % o->hosts;
		ret = cl_add_osds(st, o->osds, hosts, o->timeout);
		if (ret)
			goto out_rollback;
	}
	if (o->pool[0]) {
		ret = cl_create_pool(st, o->pool, o->osds, o->pg, o->timeout);
		if (ret)
			goto out_rollback;
		snprintf(st->pool, sizeof(st->pool), "%s", o->pool);
		cl_state_save(st);
		if (!o->no_nbd) {
			ret = add_nbd(st, o->timeout);
			if (ret)
				goto out_rollback;
		}
	}
	if (!o->no_mds) {
		ret = cl_mds_add(st, o);
		if (ret)
			goto out_rollback;
	}
	ret = cl_wait_health(st, o->timeout, false);
	if (ret == 0)
		ret = cl_mds_start_all(st, o->timeout);
	if (ret == 0)
		print_usage_hint(st, o->osds);

out_rollback:
	if (ret && started) {
		stop_clients(st, STOP_TIMEOUT_S);
		cl_stop_all(st, STOP_TIMEOUT_S);
		cl_state_save(st);
		cl_err("%s; stopped every daemon it started (logs in %s/log/; "
		       "remove the folder with: atoll-cluster down --purge --dir %s)",
		       ret == -EINTR ? "interrupted" : "the cluster did not come up",
		       st->dir, o->dir);
	}
out_free:
	free(st);
	return ret ? 1 : 0;
}

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if ((type == FTW_DP ? rmdir(path) : unlink(path)) != 0 && errno != ENOENT) {
		cl_err("cannot remove '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int cl_remove_tree(const char *path)
{
	if (access(path, F_OK) == 0 && nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS))
		return -EIO;
	return 0;
}

/* Removes what `up` made in the folder, then the folder if it is empty. */
static int purge(const struct cl_state *st)
{
	char path[PATH_MAX + 32];
	int ret = 0;

	for (int i = 0; i < st->n; i++) {
		cl_path(path, sizeof(path), st, "%s", st->d[i].name);
		if (cl_remove_tree(path))
			ret = -EIO;
	}
	cl_path(path, sizeof(path), st, "log");
	if (cl_remove_tree(path))
		ret = -EIO;
	cl_path(path, sizeof(path), st, "%s", CL_CONF_FILE);
	unlink(path);
	cl_path(path, sizeof(path), st, "%s", CL_KEYRING_FILE);
	unlink(path);
	cl_path(path, sizeof(path), st, "%s", CL_STATE_FILE);
	if (ret == 0)
		unlink(path);
	if (ret == 0 && rmdir(st->dir) != 0 && errno != ENOENT)
		cl_info("left the folder %s: it holds files atoll-cluster did not make",
			st->dir);
	return ret;
}

int cl_cmd_down(struct cl_opts *o)
{
	struct cl_state *st = calloc(1, sizeof(*st));
	int ret, running = 0;

	if (!st)
		return 1;
	ret = cl_state_load(st, o->dir);
	if (ret == -ENOENT) {
		cl_err("no cluster in '%s' (no %s there); give its folder with --dir",
		       o->dir, CL_STATE_FILE);
		goto out;
	}
	if (ret)
		goto out;
	for (int i = 0; i < st->n; i++)
		running += cl_alive(&st->d[i]);
	ret = stop_clients(st, STOP_TIMEOUT_S);
	if (cl_stop_all(st, STOP_TIMEOUT_S) != 0)
		ret = -EBUSY;
	cl_state_save(st);
	if (ret) {
		cl_err("some daemons of '%s' could not be stopped", st->dir);
		goto out;
	}
	cl_info("stopped %d daemon%s in %s", running, running == 1 ? "" : "s", st->dir);
	if (o->purge) {
		ret = purge(st);
		if (ret == 0)
			cl_info("removed the cluster in %s", st->dir);
	}
out:
	free(st);
	return ret ? 1 : 0;
}
