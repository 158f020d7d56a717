/*
 * memtrim.h - the OSD gives jemalloc's freed pages back once they pass a
 * slack (memtrim.c).
 */
#ifndef ATOLL_OSD_MEMTRIM_H
#define ATOLL_OSD_MEMTRIM_H

struct osd;

/* Starts the once-a-second check on the OSD's loop. */
void osd_memtrim_start(struct osd *osd);

#endif
