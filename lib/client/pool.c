/*
 * pool.c - pools (create, delete, look up, list) and I/O contexts.
 *
 * Changes go through monitor commands (doc/cli.md: "pool create", "pool
 * rm"), which answer once the new epoch is durable and name it in their
 * JSON output; we then wait until our own map holds that epoch, so that a
 * pool just created can be opened at once and a pool just deleted is gone.
 * Reads (lookup, list) use the map the handle holds; a lookup that misses
 * first catches up with the monitor, since our map may lag behind a pool
 * another client just created.
 */
#include "client.h"
#include "osdmap.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True when opt (of opt->size_of bytes) holds member m. */
#define OPT_HAS(opt, m) \
	((opt)->size_of >= offsetof(struct atoll_pool_options, m) + sizeof((opt)->m))

static int check_pool_name(const char *name)
{
	if (!name || !*name)
		return -EINVAL;
	if (strnlen(name, OSDMAP_POOL_NAME_MAX + 1) > OSDMAP_POOL_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* Runs a map-changing command and waits for the epoch it names. */
static int map_command(struct atoll_cluster *c, const char *json)
{
	char *out = NULL;
	size_t len = 0;
	uint64_t epoch = 0;
	int r;

	r = atoll_mon_command(c, json, NULL, &out, &len);
	if (r == 0 && client_json_u64(out, len, "epoch", &epoch) == 0)
		r = client_wait_epoch(c, epoch, c->mount_timeout_ms);
	else if (r == 0)
		r = atoll_cluster_wait_for_latest_map(c);
	free(out);
	return r;
}

int atoll_pool_create(struct atoll_cluster *c, const char *name,
		      const struct atoll_pool_options *opt)
{
	char json[512];
	size_t pos;
	int r;

	if (!c)
		return -EINVAL;
	r = check_pool_name(name);
	if (r < 0)
		return r;
	if (opt && opt->size_of < sizeof(opt->size_of))
		return -EINVAL;
	pos = (size_t)snprintf(json, sizeof(json), "{\"prefix\": \"pool create\", \"name\": ");
	r = client_json_str(json, sizeof(json), &pos, name);
	if (r < 0)
		return -EINVAL;
#define ADD(...) do { \
	int n_ = snprintf(json + pos, sizeof(json) - pos, __VA_ARGS__); \
	if (n_ < 0 || (size_t)n_ >= sizeof(json) - pos) \
		return -EINVAL; \
	pos += (size_t)n_; \
} while (0)
	if (opt && OPT_HAS(opt, size) && opt->size) {
		if (opt->size > OSDMAP_SIZE_MAX)
			return -EINVAL;
		ADD(", \"size\": %u", opt->size);
	}
	if (opt && OPT_HAS(opt, min_size) && opt->min_size)
		ADD(", \"min_size\": %u", opt->min_size);
	if (opt && OPT_HAS(opt, pg_num) && opt->pg_num) {
		if (opt->pg_num > OSDMAP_PG_MAX)
			return -EINVAL;
		ADD(", \"pg_num\": %u", opt->pg_num);
	}
	if (opt && OPT_HAS(opt, failure_domain) && opt->failure_domain) {
		if (strcmp(opt->failure_domain, "host") != 0 &&
		    strcmp(opt->failure_domain, "osd") != 0)
			return -EINVAL;
		ADD(", \"failure_domain\": \"%s\"", opt->failure_domain);
	}
	if (opt && OPT_HAS(opt, compress))
		ADD(", \"compress\": %s", opt->compress ? "true" : "false");
	ADD(", \"format\": \"json\"}");
#undef ADD
	return map_command(c, json);
}

int atoll_pool_delete(struct atoll_cluster *c, const char *name)
{
	char json[512];
	size_t pos;
	int r;

	if (!c)
		return -EINVAL;
	r = check_pool_name(name);
	if (r < 0)
		return r;
	pos = (size_t)snprintf(json, sizeof(json), "{\"prefix\": \"pool rm\", \"name\": ");
	r = client_json_str(json, sizeof(json), &pos, name);
	if (r == 0) {
		int n = snprintf(json + pos, sizeof(json) - pos, ", \"confirm_name\": ");

		pos += (size_t)n;
		r = client_json_str(json, sizeof(json), &pos, name);
	}
	if (r == 0 && snprintf(json + pos, sizeof(json) - pos,
			       ", \"yes\": true, \"format\": \"json\"}") >=
			      (int)(sizeof(json) - pos))
		r = -E2BIG;
	if (r < 0)
		return -EINVAL;
	return map_command(c, json);
}

/* The pool's id in the map we hold, or -ENOENT. */
static int64_t lookup_local(struct atoll_cluster *c, const char *name)
{
	const struct osdmap_pool *p;
	int64_t id = -ENOENT;

	pthread_mutex_lock(&c->lock);
	if (c->map && (p = osdmap_pool_by_name(c->map, name)))
		id = p->id;
	pthread_mutex_unlock(&c->lock);
	return id;
}

int64_t atoll_pool_lookup(struct atoll_cluster *c, const char *name)
{
	int64_t id;
	int r;

	if (!c)
		return -EINVAL;
	r = check_pool_name(name);
	if (r < 0)
		return r == -ENAMETOOLONG ? -ENOENT : r;
	if (!c->connected)
		return -ENOTCONN;
	id = lookup_local(c, name);
	if (id != -ENOENT)
		return id;
	r = atoll_cluster_wait_for_latest_map(c);
	if (r < 0)
		return r;
	return lookup_local(c, name);
}

int64_t atoll_pool_list(struct atoll_cluster *c, char *buf, size_t len)
{
	size_t need = 0;

	if (!c || (len && !buf))
		return -EINVAL;
	if (!c->connected)
		return -ENOTCONN;
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->map->npools; i++)
		need += strlen(c->map->pools[i].name) + 1;
	if (need <= len) {
		size_t pos = 0;

		for (uint32_t i = 0; i < c->map->npools; i++) {
			size_t n = strlen(c->map->pools[i].name) + 1;

			memcpy(buf + pos, c->map->pools[i].name, n);
			pos += n;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return (int64_t)need;
}

int atoll_ioctx_create(struct atoll_cluster *c, const char *pool,
		       struct atoll_ioctx **out, unsigned flags)
{
	struct atoll_ioctx *io;
	int64_t id;
	int r;

	if (!out)
		return atoll__error(-EINVAL, "atoll_ioctx_create: out is NULL");
	*out = NULL;
	if (!c || !pool)
		return atoll__error(-EINVAL, "atoll_ioctx_create: %s is NULL", c ? "pool" : "c");
	r = atoll__check_flags("atoll_ioctx_create", flags, 0);
	if (r < 0)
		return r;
	id = atoll_pool_lookup(c, pool);
	if (id == -ENOENT)
		return atoll__error(-ENOENT, "pool '%s' does not exist; create it with: "
				    "atoll pool create %s", pool, pool);
	if (id < 0)
		return atoll__error((int)id, "pool '%s': %s", pool, atoll_strerror((int)id));
	io = calloc(1, sizeof(*io));
	if (!io)
		return -ENOMEM;
	io->c = c;
	io->pool = (uint32_t)id;
	snprintf(io->name, sizeof(io->name), "%s", pool);
	*out = io;
	return 0;
}

void atoll_ioctx_destroy(struct atoll_ioctx *io)
{
	free(io);
}

struct atoll_cluster *atoll_ioctx_get_cluster(struct atoll_ioctx *io)
{
	return io ? io->c : NULL;
}

int atoll_ioctx_set_flags(struct atoll_ioctx *io, unsigned flags)
{
	if (!io || (flags & ~ATOLL_IOCTX_FULL_TRY))
		return -EINVAL;
	io->req_flags = (flags & ATOLL_IOCTX_FULL_TRY) ? OSD_REQF_FULL_TRY : 0;
	return 0;
}
