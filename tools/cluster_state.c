/*
 * cluster_state.c - D/cluster.state: what atoll-cluster started, and where.
 *
 * A small text file, one fact per line, so that a person (or a shell
 * test) can read it without tools:
 *   fsid UUID
 *   hosts H
 *   size 2G
 *   pool default
 *   daemon NAME KIND ID HOST IP PORT PID STARTTIME   (KIND mon, osd, nbd, mds)
 *   metrics NAME http://IP:PORT/metrics               (after its daemon line)
 *   dashboard NAME http://IP:PORT/                    (a monitor's, likewise)
 * It is replaced atomically (temporary file, fsync, rename) so that a
 * crash of atoll-cluster never leaves half a list of PIDs behind.
 */
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cl_path(char *buf, size_t len, const struct cl_state *st, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(buf, len, "%s/", st->dir);
	if (n < 0 || (size_t)n >= len)
		n = 0;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

struct cl_daemon *cl_state_find(struct cl_state *st, const char *name)
{
	for (int i = 0; i < st->n; i++)
		if (strcmp(st->d[i].name, name) == 0)
			return &st->d[i];
	return NULL;
}

const char *cl_kind_name(enum cl_kind kind)
{
	switch (kind) {
	case CL_MON: return "mon";
	case CL_NBD: return "nbd";
	case CL_MDS: return "mds";
	default: return "osd";
	}
}

struct cl_daemon *cl_state_osd(struct cl_state *st, int id)
{
	for (int i = 0; i < st->n; i++)
		if (st->d[i].kind == CL_OSD && st->d[i].id == id)
			return &st->d[i];
	return NULL;
}

/* Loads DIR/cluster.state into st (st->dir is set even on failure).
 * -ENOENT when there is no state file; -EINVAL (with a message) when it
 * cannot be parsed. */
int cl_state_load(struct cl_state *st, const char *dir)
{
	char path[PATH_MAX + 32], line[512];
	int lineno = 0, ret = 0;
	FILE *f;

	memset(st, 0, sizeof(*st));
	if (!realpath(dir, st->dir))
		snprintf(st->dir, sizeof(st->dir), "%s", dir);
	snprintf(path, sizeof(path), "%s/%s", st->dir, CL_STATE_FILE);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char kind[8], name[32], ip[16], host[32];
		struct cl_daemon *d;
		int id, port;
		long pid;
		unsigned long long start;

		lineno++;
		line[strcspn(line, "\n")] = 0;
		if (line[0] == '#' || line[0] == 0)
			continue;
		if (sscanf(line, "fsid %36s", st->fsid) == 1)
			continue;
		if (sscanf(line, "hosts %d", &st->hosts) == 1)
			continue;
		if (sscanf(line, "size %31s", st->size) == 1)
			continue;
		if (strncmp(line, "pool", 4) == 0) {
			if (sscanf(line, "pool %63s", st->pool) != 1)
				st->pool[0] = 0;
			continue;
		}
		if (strncmp(line, "metrics ", 8) == 0) {
			char url[96];

			if (sscanf(line, "metrics %31s %95s", name, url) == 2 &&
			    (d = cl_state_find(st, name)) != NULL) {
				const char *colon = strrchr(url, ':');

				d->mport = colon ? atoi(colon + 1) : 0;
				continue;
			}
		}
		if (strncmp(line, "dashboard ", 10) == 0) {
			char url[96];

			if (sscanf(line, "dashboard %31s %95s", name, url) == 2 &&
			    (d = cl_state_find(st, name)) != NULL) {
				const char *colon = strrchr(url, ':');

				d->dport = colon ? atoi(colon + 1) : 0;
				continue;
			}
		}
		if (sscanf(line, "daemon %31s %7s %d %31s %15s %d %ld %llu",
			   name, kind, &id, host, ip, &port, &pid, &start) == 8 &&
		    st->n < CL_MAX_DAEMONS) {
			d = &st->d[st->n++];
			snprintf(d->name, sizeof(d->name), "%s", name);
			d->kind = strcmp(kind, "mon") == 0 ? CL_MON :
				  strcmp(kind, "nbd") == 0 ? CL_NBD :
				  strcmp(kind, "mds") == 0 ? CL_MDS : CL_OSD;
			d->id = id;
			d->host = atoi(host + strcspn(host, "0123456789"));
			snprintf(d->ip, sizeof(d->ip), "%s", ip);
			d->port = port;
			d->pid = (pid_t)pid;
			d->start = start;
			continue;
		}
		cl_err("'%s' line %d is not understood: '%s'; was it edited by hand?",
		       path, lineno, line);
		ret = -EINVAL;
		break;
	}
	fclose(f);
	if (ret == 0 && st->hosts <= 0)
		st->hosts = 1;
	return ret;
}

int cl_state_save(const struct cl_state *st)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/%s", st->dir, CL_STATE_FILE);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		ret = -errno;
		cl_err("cannot write '%s': %s", tmp, strerror(errno));
		return ret;
	}
	fprintf(f, "# atoll-cluster state (written by atoll-cluster; do not edit)\n");
	fprintf(f, "fsid %s\nhosts %d\nsize %s\npool %s\n", st->fsid, st->hosts,
		st->size, st->pool);
	fprintf(f, "# daemon NAME KIND ID HOST IP PORT PID STARTTIME\n");
	for (int i = 0; i < st->n; i++) {
		const struct cl_daemon *d = &st->d[i];

		fprintf(f, "daemon %s %s %d host%d %s %d %ld %llu\n", d->name,
			cl_kind_name(d->kind), d->id, d->host, d->ip,
			d->port, (long)d->pid, d->start);
		if (d->mport)
			fprintf(f, "metrics %s http://%s:%d/metrics\n", d->name, d->ip, d->mport);
		if (d->dport)
			fprintf(f, "dashboard %s http://%s:%d/\n", d->name, d->ip, d->dport);
	}
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		ret = -errno;
	if (fclose(f) != 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && rename(tmp, path) != 0)
		ret = -errno;
	if (ret) {
		cl_err("cannot write '%s': %s", path, strerror(-ret));
		unlink(tmp);
	}
	return ret;
}
