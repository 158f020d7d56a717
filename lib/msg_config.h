/*
 * msg_config.h - the messenger's limits from atoll.conf, for the daemons
 * that listen (monitor, OSD, MDS).  Apart from msg.h so that the
 * messenger itself does not depend on the configuration.
 */
#ifndef ATOLL_MSG_CONFIG_H
#define ATOLL_MSG_CONFIG_H

#include <stddef.h>

#include "config.h"
#include "msg.h"

/* Fills the limits of mc (struct msgr_config, after "Limits of what peers
 * may make us hold") from the ms_* keys of conf for who ("osd.3", "mon",
 * "mds"), each defaulting to msg.h's MSG_DEFAULT_*; the other fields of
 * mc are left alone.  The keys, their defaults and what a peer sees at
 * each limit are in doc/limits.md ("Messenger").  0, or a negative
 * errno with one sentence in err naming the key. */
int msgr_config_read(const struct config *conf, const char *who, struct msgr_config *mc,
		     char *err, size_t errlen);

#endif
