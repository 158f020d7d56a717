/*
 * cmd_blocklist.c - `osd blocklist add|rm|ls`: the clients the OSDs must
 * refuse (-EPERM), for a while.  Breaking an image's lock fences the old
 * writer this way (libatoll-image, doc/images.md), so that its late
 * writes cannot land after the new writer took over.  An entry carries
 * its own end (wall clock); expired entries are dropped whenever the list
 * is rewritten.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "osdmap.h"

#define BL_DEFAULT_SECONDS 3600
#define BL_MAX_SECONDS (10ll * 365 * 86400)

static uint64_t now_ms(void)
{
	return (uint64_t)time(NULL) * 1000;
}

static int arg_client(cJSON *a, uint64_t *client, struct cmd_out *o)
{
	const char *s;
	char *end;
	int r = cmd_arg_str(a, "client", true, &s, o);

	if (r < 0)
		return r;
	if (!strncmp(s, "client.", 7))
		s += 7;
	errno = 0;
	*client = strtoull(s, &end, 10);
	if (errno || end == s || *end || *client == 0)
		return cmd_fail(o, -EINVAL, "argument 'client' must be a client id such as "
				"client.1234 (see: atoll image info POOL IMAGE)");
	return 0;
}

/* Writes the current list minus expired entries and `drop`, plus `add`. */
static int rewrite(struct mon *mon, uint64_t drop, const struct osdmap_blocklist *add,
		   struct cmd_out *o)
{
	const struct osdmap *m = mon->map;
	struct osdmap_blocklist *l;
	struct osdmap_inc inc;
	uint32_t n = 0;
	uint64_t now = now_ms();
	int r;

	l = calloc((size_t)m->nblocklist + 1, sizeof(*l));
	if (!l)
		return cmd_fail(o, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < m->nblocklist; i++) {
		if (m->blocklist[i].until_ms <= now || m->blocklist[i].client == drop ||
		    (add && m->blocklist[i].client == add->client))
			continue;
		l[n++] = m->blocklist[i];
	}
	if (add)
		l[n++] = *add;
	if (n > OSDMAP_BLOCKLIST_MAX) {
		free(l);
		return cmd_fail(o, -E2BIG, "the blocklist is full (%d entries); remove some with: "
				"atoll osd blocklist rm CLIENT_ID", OSDMAP_BLOCKLIST_MAX);
	}
	osdmap_inc_init(&inc, 0);
	r = osdmap_inc_set_blocklist(&inc, l, n);
	free(l);
	if (r < 0) {
		osdmap_inc_clear(&inc);
		return cmd_fail(o, r, "cannot build the new blocklist");
	}
	return cmd_map_change(mon, &inc, o);
}

int cmd_osd_blocklist_add(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	struct osdmap_blocklist b;
	int64_t secs = BL_DEFAULT_SECONDS;
	bool present;
	int r;

	r = arg_client(a, &b.client, o);
	if (r < 0)
		return r;
	r = cmd_arg_int(a, "seconds", 1, BL_MAX_SECONDS, &secs, &present, o);
	if (r < 0)
		return r;
	if (!present)
		secs = BL_DEFAULT_SECONDS;
	b.until_ms = now_ms() + (uint64_t)secs * 1000;
	cmd_say(o, "blocklisted client.%" PRIu64 " for %lld s", b.client, (long long)secs);
	return rewrite(mon, 0, &b, o);
}

int cmd_osd_blocklist_rm(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	uint64_t client;
	bool found = false;
	int r = arg_client(a, &client, o);

	if (r < 0)
		return r;
	for (uint32_t i = 0; i < mon->map->nblocklist; i++)
		found |= mon->map->blocklist[i].client == client;
	if (!found)
		return cmd_fail(o, -ENOENT, "client.%" PRIu64 " is not blocklisted; see: "
				"atoll osd blocklist ls", client);
	cmd_say(o, "un-blocklisted client.%" PRIu64, client);
	return rewrite(mon, client, NULL, o);
}

int cmd_osd_blocklist_ls(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct osdmap *m = mon->map;
	uint64_t now = now_ms();
	cJSON *arr = NULL;

	(void)a;
	if (o->json)
		arr = cJSON_AddArrayToObject(o->j, "blocklist");
	for (uint32_t i = 0; i < m->nblocklist; i++) {
		const struct osdmap_blocklist *b = &m->blocklist[i];

		if (b->until_ms <= now)
			continue;
		if (arr) {
			cJSON *e = cJSON_CreateObject();
			char id[32];

			snprintf(id, sizeof(id), "%" PRIu64, b->client);
			cJSON_AddStringToObject(e, "client", id);
			cJSON_AddNumberToObject(e, "until_ms", (double)b->until_ms);
			cJSON_AddItemToArray(arr, e);
		} else {
			fprintf(o->txt, "client.%" PRIu64 " for %" PRIu64 " s more\n", b->client,
				(b->until_ms - now + 999) / 1000);
		}
	}
	o->rc = 0;
	return 0;
}
