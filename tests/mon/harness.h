/*
 * harness.h - starts a real atoll-mon in a temporary folder on
 * 127.0.0.1 (a free port) and talks to it through the messenger, the way
 * an OSD or the CLI does.  Every test stops its monitor (mh_stop, also
 * from mh_free).
 */
#ifndef ATOLL_TESTS_MON_HARNESS_H
#define ATOLL_TESTS_MON_HARNESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "encode.h"
#include "msg.h"
#include "osdmap.h"
#include "proto.h"

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
	struct msg_conn *conn;

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

/* Runs a command; returns rc; *status and *out are malloc'd (either
 * pointer may be NULL). */
int mh_cmd(struct mh *h, const char *json, char **status, char **out);

int mh_osd_new(struct mh *h, const uint8_t uuid[16], int32_t want, int32_t *id);
int mh_osd_boot(struct mh *h, int32_t id, const uint8_t uuid[16], const char *addr,
		const char *host, uint64_t *epoch, char *status, size_t len);
int mh_osd_stopping(struct mh *h, int32_t id, uint64_t *epoch);
void mh_beacon(struct mh *h, const struct osd_beacon *b);
void mh_failure(struct mh *h, int32_t reporter, int32_t target, bool immediate);

void mh_subscribe(struct mh *h, uint64_t have);
/* Waits until the received map reaches epoch (true) or timeout_ms. */
bool mh_wait_epoch(struct mh *h, uint64_t epoch, int timeout_ms);
/* Waits until osd id's up bit equals up in the received map. */
bool mh_wait_osd(struct mh *h, int32_t id, bool up, int timeout_ms);

/* The received map's view, read under the lock. */
bool mh_osd_is_up(struct mh *h, int32_t id);
bool mh_osd_is_in(struct mh *h, int32_t id);

void mh_uuid(uint8_t u[16], uint8_t seed);
uint64_t mh_now_ms(void);
/* Timeouts stretch under sanitizers (ATOLL_SANITIZED=1). */
int mh_scale(int ms);

#endif
