/*
 * mds_access.h - the checks of a client's MDS caps on each request
 * (mds_access.c; the caps' grammar in mds_caps.h).
 */
#ifndef ATOLL_MDS_ACCESS_H
#define ATOLL_MDS_ACCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "mds_caps.h"

struct mds;
struct mds_node;
struct mds_req;
struct msg_conn;

/* True when conn's caps limit it (path, r, uid, root_squash) or refuse
 * everything: its requests go to the worker (the checks may load). */
bool mds_access_limited(struct mds *m, struct msg_conn *conn);

/* Checks rq against conn's caps, m->lock held, on the worker.  0: go on
 * (rq's uid and gid may have been replaced by the ones the caps force);
 * -EACCES (outside the caps' paths, credentials refused, mode bits) or
 * -EPERM (a change under a read-only clause, a chown). */
int mds_access_check(struct mds *m, struct msg_conn *conn, struct mds_req *rq);

/* A lookup found the non-directory n in dir: its place for path checks
 * when its record has none (written before files kept their parent). */
void mds_access_hint(struct mds_node *n, uint64_t dir);

#endif
