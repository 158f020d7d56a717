/*
 * fuse_loop.h - atoll-fuse's FUSE request loop: two readers of
 * /dev/fuse, more workers only while requests block (fuse_loop.c).
 */
#ifndef ATOLL_FUSE_LOOP_H
#define ATOLL_FUSE_LOOP_H

#include <fuse_lowlevel.h>

/* Serves se's requests until the session ends, with up to max_threads
 * workers; 0, or -1 when it could not start. */
int fl_run(struct fuse_session *se, unsigned max_threads);

#endif
