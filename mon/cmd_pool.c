/*
 * cmd_pool.c - the pool commands: create, ls, rm, get, set.
 *
 * A pool's defaults come from the monitor's options (pool_default_*);
 * its failure domain is host unless every OSD sits on one host.  pg_num
 * cannot change yet (that needs PG splitting).
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "log.h"
#include "mon.h"

static const char *fd_name(uint8_t fd)
{
	return fd == POOL_FD_OSD ? "osd" : "host";
}

cJSON *cmd_pool_json(const struct osdmap_pool *p)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddNumberToObject(j, "id", p->id);
	cJSON_AddStringToObject(j, "name", p->name);
	cJSON_AddNumberToObject(j, "size", p->size);
	cJSON_AddNumberToObject(j, "min_size", p->min_size);
	cJSON_AddNumberToObject(j, "pg_num", p->pg_num);
	cJSON_AddStringToObject(j, "failure_domain", fd_name(p->failure_domain));
	cJSON_AddBoolToObject(j, "compress", !!(p->flags & POOL_F_COMPRESS));
	cJSON_AddNumberToObject(j, "created", (double)p->created);
	return j;
}

void cmd_pool_line(FILE *f, const struct osdmap_pool *p)
{
	fprintf(f, "pool %u '%s' size %u min_size %u pg_num %u failure_domain %s%s "
		"created %llu\n", p->id, p->name, p->size, p->min_size, p->pg_num,
		fd_name(p->failure_domain), p->flags & POOL_F_COMPRESS ? " compress" : "",
		(unsigned long long)p->created);
}

static int pool_arg(struct mon *mon, cJSON *a, const struct osdmap_pool **p,
		    struct cmd_out *o)
{
	const char *name;
	int r = cmd_arg_str(a, "name", true, &name, o);

	if (r < 0)
		return r;
	*p = osdmap_pool_by_name(mon->map, name);
	if (!*p)
		return cmd_fail(o, -ENOENT, "pool '%s' does not exist; list pools with: "
				"atoll pool ls", name);
	return 0;
}

static bool pool_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > OSDMAP_POOL_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

/* The default failure domain: host, unless every OSD that exists sits
 * on one host (*host gets it). */
static uint8_t default_fd(struct mon *mon, const char **host)
{
	const char *h = NULL;

	*host = NULL;
	for (uint32_t i = 0; i < mon->map->max_osd; i++) {
		const struct osdmap_osd *x = &mon->map->osds[i];

		if (!(x->state & OSD_ST_EXISTS) || !x->host[0])
			continue;
		if (h && strcmp(h, x->host))
			return POOL_FD_HOST;
		h = x->host;
	}
	*host = h;
	return h ? POOL_FD_OSD : POOL_FD_HOST;
}

static int parse_fd(const char *s, uint8_t *fd)
{
	if (!strcmp(s, "host"))
		*fd = POOL_FD_HOST;
	else if (!strcmp(s, "osd"))
		*fd = POOL_FD_OSD;
	else
		return -EINVAL;
	return 0;
}

int cmd_pool_create(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	struct osdmap_pool p;
	struct osdmap_inc inc;
	const char *name, *fds, *onehost = NULL;
	int64_t size, min_size, pg_num;
	bool has_size, has_min, has_pg, compress;
	int r;

	if ((r = cmd_arg_str(a, "name", true, &name, o)) < 0 ||
	    (r = cmd_arg_int(a, "size", 1, OSDMAP_SIZE_MAX, &size, &has_size, o)) < 0 ||
	    (r = cmd_arg_int(a, "min_size", 1, OSDMAP_SIZE_MAX, &min_size, &has_min, o)) < 0 ||
	    (r = cmd_arg_int(a, "pg_num", 1, OSDMAP_PG_MAX, &pg_num, &has_pg, o)) < 0 ||
	    (r = cmd_arg_str(a, "failure_domain", false, &fds, o)) < 0 ||
	    (r = cmd_arg_bool(a, "compress", false, &compress, o)) < 0)
		return r;
	if (!pool_name_ok(name))
		return cmd_fail(o, -EINVAL, "pool name '%s' is not valid; use 1 to %d letters, "
				"digits, '_', '.' or '-'", name, OSDMAP_POOL_NAME_MAX);
	if (osdmap_pool_by_name(mon->map, name))
		return cmd_fail(o, -EEXIST, "pool '%s' already exists", name);
	if (mon->map->npools >= OSDMAP_POOL_MAX)
		return cmd_fail(o, -ENOSPC, "the cluster has %d pools, the most it can hold; "
				"remove one with: atoll pool rm NAME NAME --yes-i-really-mean-it",
				OSDMAP_POOL_MAX);
	memset(&p, 0, sizeof(p));
	p.id = mon->map->pool_next_id;
	snprintf(p.name, sizeof(p.name), "%s", name);
	p.size = (uint8_t)(has_size ? size : mon->opts.pool_default_size);
	if (has_min)
		p.min_size = (uint8_t)min_size;
	else if (mon->opts.pool_default_min_size && !has_size)
		p.min_size = (uint8_t)mon->opts.pool_default_min_size;
	else
		p.min_size = p.size - p.size / 2;
	if (p.min_size > p.size)
		return cmd_fail(o, -EINVAL, "min_size %u is larger than size %u; min_size must "
				"be from 1 to size", p.min_size, p.size);
	p.pg_num = (uint32_t)(has_pg ? pg_num : mon->opts.pool_default_pg_num);
	if (fds) {
		if (parse_fd(fds, &p.failure_domain) < 0)
			return cmd_fail(o, -EINVAL, "failure domain '%s' is not known; use host "
					"or osd", fds);
	} else {
		p.failure_domain = default_fd(mon, &onehost);
	}
	p.flags = compress ? POOL_F_COMPRESS : 0;
	p.created = mon->map->epoch + 1;
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_pool(&inc, &p);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return cmd_fail(o, r, "out of memory");
	}
	if (onehost)
		cmd_say(o, "pool '%s' created with failure domain osd, because every OSD is "
			"on host '%s'", name, onehost);
	else
		cmd_say(o, "pool '%s' created", name);
	if (o->json) {
		cJSON_AddNumberToObject(o->j, "pool", p.id);
		cJSON_AddStringToObject(o->j, "name", p.name);
		cJSON_AddStringToObject(o->j, "failure_domain", fd_name(p.failure_domain));
	}
	r = cmd_map_change(mon, &inc, o);
	if (r == 0)
		log_info("mon", "pool %u '%s' created (size %u min_size %u pg_num %u "
			 "failure domain %s)", p.id, p.name, p.size, p.min_size, p.pg_num,
			 fd_name(p.failure_domain));
	return r;
}

int cmd_pool_ls(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	bool detail;
	int r = cmd_arg_bool(a, "detail", false, &detail, o);

	if (r < 0)
		return r;
	if (o->json) {
		cJSON_Delete(o->j);
		o->j = cJSON_CreateArray();
	}
	for (uint32_t i = 0; i < mon->map->npools; i++) {
		const struct osdmap_pool *p = &mon->map->pools[i];

		if (o->json)
			cJSON_AddItemToArray(o->j, cmd_pool_json(p));
		else if (detail)
			cmd_pool_line(o->txt, p);
		else
			fprintf(o->txt, "%s\n", p->name);
	}
	return 0;
}

int cmd_pool_rm(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_pool *p;
	const char *confirm, *name;
	struct osdmap_inc inc;
	bool yes;
	int r;

	if ((r = cmd_arg_str(a, "name", true, &name, o)) < 0 ||
	    (r = cmd_arg_str(a, "confirm_name", false, &confirm, o)) < 0 ||
	    (r = cmd_arg_bool(a, "yes", false, &yes, o)) < 0)
		return r;
	if ((r = pool_arg(mon, a, &p, o)) < 0)
		return r;
	if (!confirm || strcmp(confirm, name) || !yes)
		return cmd_fail(o, -EPERM, "this destroys every object in pool '%s'; to do it "
				"type: atoll pool rm %s %s --yes-i-really-mean-it",
				name, name, name);
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_rm_pool(&inc, p->id);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return cmd_fail(o, r, "out of memory");
	}
	cmd_say(o, "pool '%s' removed", name);
	log_info("mon", "pool %u '%s' removed", p->id, name);
	return cmd_map_change(mon, &inc, o);
}

static const char *pool_vars[] = { "size", "min_size", "pg_num", "failure_domain",
				   "compress", NULL };

static void pool_var(const struct osdmap_pool *p, const char *var, struct cmd_out *o)
{
	if (!strcmp(var, "size") || !strcmp(var, "min_size") || !strcmp(var, "pg_num")) {
		uint32_t v = !strcmp(var, "size") ? p->size :
			     !strcmp(var, "min_size") ? p->min_size : p->pg_num;

		if (o->json)
			cJSON_AddNumberToObject(o->j, var, v);
		else
			fprintf(o->txt, "%s: %u\n", var, v);
	} else if (!strcmp(var, "failure_domain")) {
		if (o->json)
			cJSON_AddStringToObject(o->j, var, fd_name(p->failure_domain));
		else
			fprintf(o->txt, "%s: %s\n", var, fd_name(p->failure_domain));
	} else if (!strcmp(var, "compress")) {
		bool c = p->flags & POOL_F_COMPRESS;

		if (o->json)
			cJSON_AddBoolToObject(o->j, var, c);
		else
			fprintf(o->txt, "%s: %s\n", var, c ? "true" : "false");
	}
}

static bool known_var(const char *var)
{
	for (int i = 0; pool_vars[i]; i++)
		if (!strcmp(pool_vars[i], var))
			return true;
	return false;
}

int cmd_pool_get(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_pool *p;
	const char *var;
	int r;

	if ((r = pool_arg(mon, a, &p, o)) < 0 || (r = cmd_arg_str(a, "var", false, &var, o)) < 0)
		return r;
	if (var && !known_var(var))
		return cmd_fail(o, -EINVAL, "pool variable '%s' is not known; the variables "
				"are: size, min_size, pg_num, failure_domain, compress", var);
	for (int i = 0; pool_vars[i]; i++)
		if (!var || !strcmp(var, pool_vars[i]))
			pool_var(p, pool_vars[i], o);
	return 0;
}

int cmd_pool_set(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap_pool *p;
	struct osdmap_pool n;
	struct osdmap_inc inc;
	const char *var, *val;
	cJSON *vj;
	char num[32];
	long v = 0;
	char *end;
	int r;

	if ((r = pool_arg(mon, a, &p, o)) < 0 || (r = cmd_arg_str(a, "var", true, &var, o)) < 0)
		return r;
	vj = cJSON_GetObjectItemCaseSensitive(a, "val");
	if (cJSON_IsNumber(vj)) {
		snprintf(num, sizeof(num), "%.17g", vj->valuedouble);
		val = num;
	} else if (cJSON_IsBool(vj)) {
		val = cJSON_IsTrue(vj) ? "true" : "false";
	} else if ((r = cmd_arg_str(a, "val", true, &val, o)) < 0) {
		return r;
	}
	if (!known_var(var))
		return cmd_fail(o, -EINVAL, "pool variable '%s' is not known; the variables "
				"are: size, min_size, failure_domain, compress", var);
	if (!strcmp(var, "pg_num"))
		return cmd_fail(o, -EOPNOTSUPP, "changing pg_num of an existing pool is not "
				"supported yet");
	n = *p;
	if (!strcmp(var, "size") || !strcmp(var, "min_size")) {
		errno = 0;
		v = strtol(val, &end, 10);
		if (errno || end == val || *end)
			return cmd_fail(o, -EINVAL, "%s: '%s' is not a whole number", var, val);
	}
	if (!strcmp(var, "size")) {
		if (v < 1 || v > OSDMAP_SIZE_MAX)
			return cmd_fail(o, -EINVAL, "size must be from 1 to %d", OSDMAP_SIZE_MAX);
		n.size = (uint8_t)v;
		if (n.min_size > n.size)
			n.min_size = n.size;
	} else if (!strcmp(var, "min_size")) {
		if (v < 1 || v > n.size)
			return cmd_fail(o, -EINVAL, "min_size must be from 1 to the pool's size "
					"(%u)", n.size);
		n.min_size = (uint8_t)v;
	} else if (!strcmp(var, "failure_domain")) {
		if (parse_fd(val, &n.failure_domain) < 0)
			return cmd_fail(o, -EINVAL, "failure domain '%s' is not known; use host "
					"or osd", val);
	} else if (!strcmp(var, "compress")) {
		bool c;

		if (cmd_parse_bool(val, &c) < 0)
			return cmd_fail(o, -EINVAL, "compress must be true or false");
		n.flags = c ? n.flags | POOL_F_COMPRESS : n.flags & ~POOL_F_COMPRESS;
	}
	if (!memcmp(&n, p, sizeof(n))) {
		cmd_say(o, "pool '%s' already has %s %s", p->name, var, val);
		cmd_no_change(mon, o);
		return 0;
	}
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_pool(&inc, &n);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return cmd_fail(o, r, "out of memory");
	}
	cmd_say(o, "set pool '%s' %s to %s", p->name, var, val);
	return cmd_map_change(mon, &inc, o);
}
