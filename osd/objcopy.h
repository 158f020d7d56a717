/*
 * objcopy.h - the copy of one whole object between two members of a PG
 * (objcopy.c; private to osd/).  Loop thread only.
 */
#ifndef ATOLL_OSD_OBJCOPY_H
#define ATOLL_OSD_OBJCOPY_H

#include <stdbool.h>
#include <stdint.h>

struct osd;
struct pg;
struct msg;
struct msg_conn;
struct store_txn;

/* Copies oid whole from our store to peer (pull false) or from peer into
 * our store (pull true), holding one of the OSD's recovery slots;
 * done(arg, r) gets 0, -ESTALE when the interval ended, or the failure.
 * 0, or -ENOMEM (done is not called). */
int objcopy_start(struct pg *pg, int32_t peer, bool pull, const char *oid,
		  void (*done)(void *arg, int r), void *arg);
/* MT_PG_PUSH from the copying primary: a chunk to apply (PUSH) or to
 * read and send back (PULL). */
void objcopy_push_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m);
/* Queues txn (taken) on pg and answers m (taken) from c with a {rc}
 * message of type once it is durable (-EIO if applying it failed: the PG
 * is failed). */
void objcopy_apply_and_reply(struct pg *pg, struct store_txn *txn, struct msg_conn *c,
			     struct msg *m, uint16_t type);

#endif
