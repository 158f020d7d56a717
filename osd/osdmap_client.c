/*
 * osdmap_client.c - the OSD's copy of the cluster map.
 *
 * The OSD subscribes to the monitor from the epoch it holds and applies
 * every incremental in order (never skipping one, so that every interval
 * change of every PG is seen: pg.c).  A full map newer than ours replaces
 * it only when the monitors no longer keep the epochs in between (they
 * were trimmed): then each PG records them as a hole in its history that
 * peering must resolve (pg.c, peering.c); otherwise the OSD asks for the
 * incrementals it missed.  A map
 * or incremental for an epoch we already hold is checked against what we
 * have; different content for the same epoch means the monitor lost
 * history (a restored or rolled-back monitor) and is refused loudly.
 *
 * The newest map is saved in DIR/osdmap (write, fsync, rename) so that a
 * restarted OSD compares the new maps against the one it last acted on.
 * Recent maps are kept (OSD_MAP_HISTORY) for interval computation and the
 * same-epoch check.  Ops that name a newer epoch than ours wait in mapwait.c.
 *
 * Loop thread only (osd_map_load runs before the loop starts).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "encode.h"
#include "fault.h"
#include "log.h"
#include "pg.h"

#define MAP_FILE_MAX (64u << 20)

static void hist_put(struct osd *osd, struct osdmap *m)
{
	struct osdmap **slot = &osd->hist[m->epoch % OSD_MAP_HISTORY];

	if (*slot && *slot != osd->map)
		osdmap_free(*slot);
	*slot = m;
}

const struct osdmap *osd_map_at(const struct osd *osd, uint64_t e)
{
	const struct osdmap *m = osd->hist[e % OSD_MAP_HISTORY];

	return m && m->epoch == e ? m : NULL;
}

static void map_save(struct osd *osd)
{
	char path[4096], tmp[4096];
	struct enc e;
	int fd;

	snprintf(path, sizeof(path), "%s/osdmap", osd->data_dir);
	snprintf(tmp, sizeof(tmp), "%s/osdmap.tmp", osd->data_dir);
	enc_init(&e);
	osdmap_encode(osd->map, &e);
	if (e.err)
		goto out;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	if (write(fd, e.buf, e.len) != (ssize_t)e.len || fsync(fd) < 0) {
		close(fd);
		goto fail;
	}
	close(fd);
	if (rename(tmp, path) < 0)
		goto fail;
	goto out;
fail:
	log_warn("map", "cannot save the map to '%s': %s", path, strerror(errno));
out:
	enc_free(&e);
}

int osd_map_load(struct osd *osd)
{
	char path[4096];
	struct osdmap *m = NULL;
	struct dec d;
	void *buf;
	ssize_t n;
	int fd, r;

	snprintf(path, sizeof(path), "%s/osdmap", osd->data_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	buf = malloc(MAP_FILE_MAX);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = read(fd, buf, MAP_FILE_MAX);
	close(fd);
	if (n < 0) {
		free(buf);
		return -errno;
	}
	dec_init(&d, buf, (size_t)n);
	r = osdmap_decode(&d, &m);
	free(buf);
	if (r) {
		log_warn("map", "the saved map '%s' is unreadable (%s); starting without it",
			 path, strerror(-r));
		return 0;
	}
	if (memcmp(m->fsid, osd->fsid, 16)) {
		log_warn("map", "the saved map '%s' belongs to another cluster; ignoring it", path);
		osdmap_free(m);
		return 0;
	}
	osd->map = m;
	hist_put(osd, m);
	return 0;
}

void osd_map_subscribe(struct osd *osd)
{
	struct mon_subscribe s = { .have = osd->map ? osd->map->epoch : 0 };
	struct msg *m;
	struct enc e;

	enc_init(&e);
	mon_subscribe_encode(&s, &e);
	m = msg_new(MT_MON_SUBSCRIBE, &e);
	enc_free(&e);
	if (m && osd->monc)
		monc_send(osd->monc, m);
	else
		msg_free(m);
}

/* We have a new current map (prev is the one before, or NULL). */
static void map_changed(struct osd *osd, const struct osdmap *prev)
{
	const struct osdmap *cur = osd->map;
	const struct osdmap_osd *me = osdmap_osd(cur, osd->whoami);

	log_debug("map", "now at epoch %llu", (unsigned long long)cur->epoch);
	if (osd->booted && cur->epoch >= osd->up_epoch &&
	    (!me || !(me->state & OSD_ST_UP) || strcmp(me->addr, osd->addr))) {
		if (!osd->stopping) {
			log_warn("map", "the map of epoch %llu marks this OSD down; booting again",
				 (unsigned long long)cur->epoch);
			osd->booted = false;
			osd->up_epoch = 0;
			osd_boot(osd);
		}
	}
	osd_hb_map_changed(osd);
	osd_pgs_map_changed(osd, prev, cur);
}

/* A full map newer than ours by more than one epoch.  When the monitor
 * still keeps the incrementals in between (first: the oldest it keeps),
 * ask for them: every interval they make must be seen (pg.c).  When it
 * has trimmed them, jump, and let each PG record the epochs skipped as a
 * hole that peering must resolve (doc/quorum.md, "Trimming the map
 * history").  -EAGAIN: ask again; 0: jump. */
static int full_jump(struct osd *osd, const struct osdmap *full, uint64_t first)
{
	uint64_t have = osd->map->epoch;

	if (first && first <= have + 1)
		return -EAGAIN;
	osd->hole_first = have + 1;
	osd->hole_last = full->epoch - 1;
	log_warn("map", "the monitors no longer keep epochs %llu..%llu (oldest kept %llu); "
		 "this OSD cannot see the intervals they made: its PGs wait for a peer that "
		 "knows them", (unsigned long long)osd->hole_first,
		 (unsigned long long)osd->hole_last, (unsigned long long)first);
	return 0;
}

static int apply_full(struct osd *osd, struct osdmap *full, uint64_t first)
{
	const struct osdmap *known = osd_map_at(osd, full->epoch);

	if (memcmp(full->fsid, osd->fsid, 16)) {
		log_error("map", "the monitor sent a map of another cluster; ignoring it");
		return -EINVAL;
	}
	if (known) {
		if (!osdmap_equal(known, full)) {
			log_error("map", "the monitor sent epoch %llu with content different from "
				  "the one this OSD acted on; refusing it (was the monitor restored "
				  "from an old backup?)", (unsigned long long)full->epoch);
			return -EINVAL;
		}
		return 1;	/* nothing new */
	}
	if (osd->map && full->epoch < osd->map->epoch)
		return 1;	/* older than ours, and forgotten */
	if (osd->map && full->epoch > osd->map->epoch + 1 && full_jump(osd, full, first) < 0)
		return -EAGAIN;
	struct osdmap *prev = osd->map;

	osd->map = full;
	hist_put(osd, full);
	map_changed(osd, prev);
	osd->hole_first = osd->hole_last = 0;
	return 0;
}

static int apply_inc(struct osd *osd, const struct osdmap_inc *inc)
{
	const struct osdmap *base = osd_map_at(osd, inc->epoch - 1);
	const struct osdmap *known = osd_map_at(osd, inc->epoch);
	struct osdmap *m;
	int r;

	if (!base)
		return inc->epoch <= (osd->map ? osd->map->epoch : 0) ? 1 : -EAGAIN;
	m = osdmap_clone(base);
	if (!m)
		return -ENOMEM;
	r = osdmap_apply(m, inc);
	if (r) {
		osdmap_free(m);
		return r;
	}
	if (known) {
		bool same = osdmap_equal(known, m);

		osdmap_free(m);
		if (!same) {
			log_error("map", "the monitor sent epoch %llu with content different from "
				  "the one this OSD acted on; refusing it (was the monitor restored "
				  "from an old backup?)", (unsigned long long)inc->epoch);
			return -EINVAL;
		}
		return 1;
	}
	if (inc->epoch != osd->map->epoch + 1) {
		osdmap_free(m);
		return -EAGAIN;
	}
	struct osdmap *prev = osd->map;

	osd->map = m;
	hist_put(osd, m);
	map_changed(osd, prev);
	return 0;
}

static void map_dispatch_now(struct osd *osd, struct msg *m);

/* Fault injection (tests/hostile/osd_parked.sh): osd_map_delay_ms holds
 * every map message this long before it is applied, so that clients see
 * epochs this OSD does not have yet.  Same delay for all: order kept. */
struct map_delay {
	struct map_delay *next, **prev;	/* delays: freed at exit if still held */
	struct osd *osd;
	struct msg *m;
};
static struct map_delay *delays;	/* loop thread */

static void map_delayed(void *arg)
{
	struct map_delay *d = arg;

	*d->prev = d->next;
	if (d->next)
		d->next->prev = d->prev;
	map_dispatch_now(d->osd, d->m);
	free(d);
}

void osd_map_delays_free(void)
{
	while (delays) {
		struct map_delay *d = delays;

		delays = d->next;
		msg_free(d->m);
		free(d);
	}
}

void osd_map_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	int64_t delay = fault_get_int("osd_map_delay_ms", 0);

	(void)c;
	if (delay > 0 && delay < 600000) {
		struct map_delay *d = malloc(sizeof(*d));

		if (d) {
			d->osd = osd;
			d->m = m;
			if (msgr_timer(osd->msgr, (uint32_t)delay, map_delayed, d)) {
				d->next = delays;
				d->prev = &delays;
				if (delays)
					delays->prev = &d->next;
				delays = d;
				return;
			}
			free(d);
		}
	}
	map_dispatch_now(osd, m);
}

static void map_dispatch_now(struct osd *osd, struct msg *m)
{
	struct mon_map_msg mm;
	struct dec d;
	uint64_t before = osd->map ? osd->map->epoch : 0;
	bool gap = false;
	int r;

	dec_init(&d, m->front, m->front_len);
	r = mon_map_msg_decode(&d, &mm);
	msg_free(m);
	if (r) {
		log_warn("map", "malformed map message from the monitor: %s", strerror(-r));
		return;
	}
	if (mm.full) {
		r = apply_full(osd, mm.full, mm.first);
		if (r == 0)
			mm.full = NULL;	/* now ours */
		else if (r == -EAGAIN)
			gap = true;
	}
	for (uint32_t i = 0; i < mm.ninc; i++) {
		r = apply_inc(osd, &mm.incs[i]);
		if (r == -EAGAIN)
			gap = true;
		else if (r < 0 && r != -EINVAL)
			log_warn("map", "cannot apply epoch %llu: %s",
				 (unsigned long long)mm.incs[i].epoch, strerror(-r));
	}
	/* a full batch: the monitor has more for us (mapchange.c) */
	if (mm.ninc == PROTO_MAPS_MAX)
		gap = true;
	mon_map_msg_clear(&mm);
	if (gap && osd->monc) {
		log_info("map", "missing epochs after %llu; asking the monitor again",
			 (unsigned long long)(osd->map ? osd->map->epoch : 0));
		osd_map_subscribe(osd);
	}
	if (osd->map && osd->map->epoch != before) {
		map_save(osd);
		osd_pgs_kick(osd);
		osd_mapwait_wake(osd);
	}
}
