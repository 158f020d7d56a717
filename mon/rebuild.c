/*
 * rebuild.c - disaster recovery from one survivor (doc/admin.md,
 * "Disaster recovery from one survivor"), and the monitor cluster's
 * incarnation that it stamps.
 *
 * When the majority of the monitors is lost for good, no leader can be
 * elected again.  `atoll-mon --rebuild --data DIR
 * --yes-i-lost-the-majority` (the monitor stopped) forces the survivor's
 * raft configuration to itself alone (raft_recover: the log and the
 * state stay) and records a new incarnation, one above the one its store
 * applied last, in DIR/rebuild.  Started, it elects itself; once it leads
 * it puts the incarnation into the log (an incarnation entry, below) and
 * bumps the map epoch once, so every OSD and client sees a change.  The
 * incarnation is part of the replicated state (the snapshot carries it
 * in a trailer) and goes in every MONMAP: OSDs and clients adopt it and
 * from then on refuse the MONMAPs of the old incarnation, and the
 * members keep raft streams only with members of their configuration
 * (quorum.c, mon_quorum_knows), so an old member started on its old
 * store can neither be followed nor disturb the new quorum.
 *
 * The bytes of the incarnation entry and trailer: incarnation.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "encode.h"
#include "log.h"
#include "mon.h"


/* DIR/rebuild of the running monitor (one per process; mon_rebuild_load) */
static char g_rebuild_path[4200];
/* The newest incarnation this monitor knows of at start (its store, or a
 * pending rebuild): MONMAPs never say less, even while a restarted member
 * has not yet replayed the incarnation entry (the replicated state keeps
 * its own value, so digests stay comparable). */
static uint64_t g_incarnation_floor = 1;
/* the pending incarnation also bumps the epoch once (a rebuild; a
 * restore serves the backup's map as it is) */
static bool g_rebuild_bump;

uint64_t mon_incarnation(struct mon *mon)
{
	return mon->incarnation > g_incarnation_floor ? mon->incarnation :
	       g_incarnation_floor;
}

static void rebuild_path(const char *dir, char *path, size_t len)
{
	snprintf(path, len, "%s/rebuild", dir);
}

int mon_rebuild_mark(const char *dir, uint64_t inc, bool bump, char *err, size_t errlen)
{
	char path[4200];
	FILE *f;
	int r = 0;

	rebuild_path(dir, path, sizeof(path));
	f = fopen(path, "we");
	if (!f || fprintf(f, "incarnation %llu%s\n", (unsigned long long)inc,
			  bump ? " bump" : "") < 0 ||
	    fflush(f) != 0 || fsync(fileno(f)) != 0) {
		r = -errno;
		snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
	}
	if (f)
		fclose(f);
	return r;
}

int mon_rebuild(const char *dir, bool confirmed)
{
	struct mon_member self;
	struct mon_store *st;
	uint8_t fsid[16];
	uint64_t inc = 1, epoch = 0;
	char err[512];
	struct osdmap *m = NULL;
	int r;

	if (!confirmed) {
		fprintf(stderr,
"atoll-mon: --rebuild turns this monitor's store into a new one-member\n"
"quorum, of a new incarnation, keeping its map; OSDs and clients then follow\n"
"it and refuse the old monitors forever.  Use it only when the majority of\n"
"the monitors is lost for good (their disks are gone) and this is the\n"
"survivor with the newest map; with the other monitors merely down, start\n"
"them instead.  Stop this monitor, then run it again with\n"
"--yes-i-lost-the-majority (doc/admin.md, \"Disaster recovery from one\n"
"survivor\").\n");
		return 1;
	}
	r = mon_member_load(dir, &self, fsid, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "atoll-mon: %s\n", err);
		return 1;
	}
	r = mon_store_open(dir, &st, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "atoll-mon: %s\n", err);
		return 1;
	}
	r = mon_store_incarnation(st, &inc);
	if (r == 0 && mon_store_load_latest(st, &m) == 0)
		epoch = m->epoch;
	osdmap_free(m);
	mon_store_close(st);
	if (r < 0) {
		fprintf(stderr, "atoll-mon: cannot read the monitor store in '%s' (is the "
			"monitor still running?): %s\n", dir, strerror(-r));
		return 1;
	}
	r = mon_quorum_recover(dir, &self, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "atoll-mon: %s\n", err);
		return 1;
	}
	inc++;
	r = mon_rebuild_mark(dir, inc, true, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "atoll-mon: %s\n", err);
		return 1;
	}
	printf("mon.%s is now the only member of the monitor cluster, incarnation %llu, "
	       "at map epoch %llu; start it (atoll-mon --data %s), then add members "
	       "on wiped folders with: atoll mon add NAME IP:PORT\n", self.name,
	       (unsigned long long)inc, (unsigned long long)epoch, dir);
	return 0;
}

int mon_rebuild_load(struct mon *mon, const char *dir, char *err, size_t errlen)
{
	char path[4200], word[8] = "";
	unsigned long long v;
	FILE *f;

	mon->incarnation = 1;
	mon->rebuild_pending = 0;
	if (mon_store_incarnation(mon->store, &g_incarnation_floor) < 0 ||
	    g_incarnation_floor < 1)
		g_incarnation_floor = 1;
	rebuild_path(dir, path, sizeof(path));
	snprintf(g_rebuild_path, sizeof(g_rebuild_path), "%s", path);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	if (fscanf(f, "incarnation %llu %4s", &v, word) < 1 || v < 2) {
		fclose(f);
		snprintf(err, errlen, "'%s' is damaged; run atoll-mon --rebuild again", path);
		return -EUCLEAN;
	}
	fclose(f);
	mon->rebuild_pending = v;
	g_rebuild_bump = !strcmp(word, "bump");
	if (v > g_incarnation_floor)
		g_incarnation_floor = v;
	log_info("mon", "rebuilt from one survivor: incarnation %llu once this monitor "
		 "leads", v);
	return 0;
}

void mon_rebuild_tick(struct mon *mon)
{
	struct osdmap_inc inc;
	struct enc e;
	int64_t res = 0;
	uint64_t epoch = 0, want = mon->rebuild_pending;
	int r;

	if (!want)
		return;
	if (mon->incarnation < want) {
		enc_init(&e);
		mon_incarnation_entry_encode(want, &e);
		r = e.err ? e.err : mon_quorum_propose(mon, e.buf, e.len, &res);
		enc_free(&e);
		if (r < 0 || mon->incarnation < want)
			return;		/* again on the next pass */
	}
	/* after a rebuild everyone sees a change: the epoch moves once */
	if (g_rebuild_bump) {
		osdmap_inc_init(&inc, 0);
		r = mon_map_change(mon, &inc, &epoch);
		if (r < 0)
			return;
	} else {
		epoch = mon->map->epoch;
	}
	log_info("mon", "incarnation %llu of the monitor cluster starts at epoch %llu",
		 (unsigned long long)want, (unsigned long long)epoch);
	mon->rebuild_pending = 0;
	/* done: a restart does not bump the epoch again */
	if (unlink(g_rebuild_path) < 0 && errno != ENOENT)
		log_warn("mon", "cannot remove '%s': %s", g_rebuild_path, strerror(errno));
}

bool mon_rebuild_apply(struct mon *mon, const void *buf, size_t len, int64_t *res)
{
	uint64_t v;
	int r = mon_incarnation_entry_decode(buf, len, &v);

	if (r == 0)
		return false;
	*res = 0;
	if (r < 0) {
		log_error("mon", "malformed incarnation entry in the log (%zu bytes): skipped",
			  len);
		*res = -EBADMSG;
		return true;
	}
	if (v > mon->incarnation) {
		mon->incarnation = v;
		if (mon_store_set_incarnation(mon->store, v) < 0)
			log_warn("mon", "cannot record incarnation %llu in the store",
				 (unsigned long long)v);
		log_info("mon", "the monitor cluster is now incarnation %llu",
			 (unsigned long long)v);
		mon->qv.changed = true;	/* MONMAPs go out again */
		mon_wake(mon);
	}
	return true;
}

void mon_rebuild_state_encode(struct mon *mon, struct enc *e)
{
	if (mon->incarnation > 1)	/* an incarnation-1 state is unchanged */
		mon_incarnation_trailer_encode(mon->incarnation, e);
}

size_t mon_rebuild_state_restore(struct mon *mon, const void *buf, size_t len)
{
	size_t blob = mon_incarnation_trailer_decode(buf, len, &mon->incarnation);

	if (mon->incarnation > 1)
		log_info("mon", "the snapshot is of incarnation %llu of the monitor cluster",
			 (unsigned long long)mon->incarnation);
	return blob;
}
