/*
 * fuse_unmount.h - atoll-fuse's unmount within a bound (fuse_unmount.c):
 * once the mount ends, the MDS and the OSDs get a grace to take what
 * this client still holds; then it gives up on them.
 */
#ifndef ATOLL_FUSE_UNMOUNT_H
#define ATOLL_FUSE_UNMOUNT_H

#define FUSE_USE_VERSION 35

#include <fuse_lowlevel.h>
#include <stdbool.h>

/* After the mount: starts the ender thread and puts a handler in front
 * of libfuse's stop handlers (SIGTERM, SIGINT, SIGHUP).  A failure is
 * logged (the unmount is then unbounded). */
void fu_start(struct fuse_session *se);
/* Whether a stop signal came (the FUSE loop's end is then an error). */
bool fu_signalled(void);
/* The FUSE loop returned: the grace runs from now at the latest (an
 * unmount or a signal started it earlier); libfuse's stop handlers are
 * back.  Returns once the ender stopped polling the session's fd (it
 * may go now). */
void fu_ending(void);
/* Whether the unmount is bounded (the ender runs): waits for the MDS may
 * then be unbounded, the ender ends them. */
bool fu_bounded(void);
/* SESSION_END: the MDS may forget this client (no reconnect to wait
 * for); SESSION_END_MS at most. */
void fu_session_end(void);
/* Everything is handed over (or given up): stops the ender. */
void fu_stop(void);

#endif
