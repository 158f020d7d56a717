/*
 * harness.h - starts a real atoll-mon in a temporary folder on
 * 127.0.0.1 (a free port) and talks to it through the messenger, the way
 * an OSD or the CLI does.  Every test stops its monitor (mh_stop, also
 * from mh_free).
 *
 * Identities: commands and subscriptions go over conn, a client
 * connection.  The monitor takes an OSD's messages only from that OSD's
 * own connection, so the mh_osd_* helpers, mh_beacon and mh_failure send
 * over a connection made as osd.ID (mh_osd_conn; OSD_NEW as an OSD with
 * no id yet), each from its own messenger, as a real atoll-osd does.
 */
#ifndef ATOLL_TESTS_MON_HARNESS_H
#define ATOLL_TESTS_MON_HARNESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "encode.h"
#include "msg.h"
#include "osdmap.h"
#include "proto.h"
#include "testutil.h"

#define MH_OSD_MAX	64

struct mh {
	char dir[256];			/* temp folder (removed by mh_free) */
	char data[300];			/* dir/mon */
	char log[300];
	char addr[64];			/* bound address once started */
	char fsid[40];
	const char *sets[32];		/* --set K=V for the run */
	int nsets;
	pid_t pid;

	struct msgr *msgr;
	struct msg_conn *conn;		/* a client's connection */

	/* OSD identities, created on demand: osds[i] is osd.i, newosd an OSD
	 * with no id yet (mkfs) */
	struct mh_osd {
		struct msgr *msgr;
		struct msg_conn *conn;
	} osds[MH_OSD_MAX], newosd;

	/* the beacon pump (mh_pump_start) */
	pthread_t pump;
	bool pumping;
	atomic_bool pump_stop;
	int npump;
	int32_t pump_ids[MH_OSD_MAX];
	struct msg_conn *pump_conns[MH_OSD_MAX];

	pthread_mutex_t lock;		/* protects map and nmaps */
	pthread_cond_t cond;
	struct osdmap *map;		/* maps received on conn, applied */
	uint32_t nmaps;			/* MAP messages received */
	uint32_t nincs;			/* incrementals applied */
	uint32_t nfull;			/* full maps taken */
	int map_err;			/* first apply error */
};

/* Binary under test: $ATOLL_MON. */
const char *mh_bin(void);
/* mkfs in a fresh temp folder; sets (K=V) are passed to the run. */
void mh_init(struct mh *h, const char *const *sets);
/* Starts the monitor (mkfs first if there is no store) and connects. */
void mh_start(struct mh *h);
/* SIGTERM, wait; returns the exit status (0 = clean). */
int mh_stop(struct mh *h);
void mh_free(struct mh *h);
/* A fresh messenger connection (drops the old). */
void mh_connect(struct mh *h);

/* A request of type with front e (consumed); returns the reply (caller
 * frees) or NULL on error/timeout. */
struct msg *mh_call(struct mh *h, uint16_t type, struct enc *e);
/* A one-way message. */
void mh_send(struct mh *h, uint16_t type, struct enc *e);
/* The same over connection c (e.g. an OSD's, or conn to impersonate). */
struct msg *mh_call_on(struct mh *h, struct msg_conn *c, uint16_t type, struct enc *e);
void mh_send_on(struct mh *h, struct msg_conn *c, uint16_t type, struct enc *e);
/* The connection of osd.id (its messenger identity is MSG_ENTITY_OSD id);
 * id -1: an OSD that has no id yet.  Made on first use, dropped when the
 * monitor restarts (mh_start). */
struct msg_conn *mh_osd_conn(struct mh *h, int32_t id);

/* Runs a command; returns rc; *status and *out are malloc'd (either
 * pointer may be NULL). */
int mh_cmd(struct mh *h, const char *json, char **status, char **out);

int mh_osd_new(struct mh *h, const uint8_t uuid[16], int32_t want, int32_t *id);
int mh_osd_boot(struct mh *h, int32_t id, const uint8_t uuid[16], const char *addr,
		const char *host, uint64_t *epoch, char *status, size_t len);
int mh_osd_stopping(struct mh *h, int32_t id, uint64_t *epoch);
/* Beacon and failure report over the OSD's own connection; both return
 * once the monitor has handled the message (a command round trip on the
 * same connection follows it: one connection's messages are handled in
 * order). */
void mh_beacon(struct mh *h, const struct osd_beacon *b);
void mh_failure(struct mh *h, int32_t reporter, int32_t target, bool immediate);
/* Returns once the monitor has handled everything sent before on c. */
void mh_barrier(struct mh *h, struct msg_conn *c);

/* A thread that sends an empty beacon for each of ids every 100 ms, so
 * they stay up however slow the test is; mh_pump_stop ends it (also
 * mh_free).  One pump at a time. */
void mh_pump_start(struct mh *h, const int32_t *ids, int n);
void mh_pump_stop(struct mh *h);

void mh_subscribe(struct mh *h, uint64_t have);
/* Waits until the received map reaches epoch (true) or timeout_ms. */
bool mh_wait_epoch(struct mh *h, uint64_t epoch, int timeout_ms);
/* Waits until osd id's up bit equals up in the received map. */
bool mh_wait_osd(struct mh *h, int32_t id, bool up, int timeout_ms);
/* Waits until osd id's in-ness equals in in the received map. */
bool mh_wait_osd_in(struct mh *h, int32_t id, bool in, int timeout_ms);
/* Waits until the monitor's log holds needle at least n times. */
bool mh_wait_log(struct mh *h, const char *needle, int n, int timeout_ms);

/* The received map's view, read under the lock. */
bool mh_osd_is_up(struct mh *h, int32_t id);
bool mh_osd_is_in(struct mh *h, int32_t id);

void mh_uuid(uint8_t u[16], uint8_t seed);
/* Timeouts stretch under sanitizers (ATOLL_SANITIZED=1). */
int mh_scale(int ms);

#endif
