/*
 * auth_config.h - authentication settings of atoll.conf (auth_config.c).
 */
#ifndef ATOLL_AUTH_CONFIG_H
#define ATOLL_AUTH_CONFIG_H

#include <stddef.h>

#include "auth.h"
#include "msg_auth.h"

struct config;

/* With `auth = none` (the default): 0 and *out NULL.  With `auth =
 * ticket`: loads the keyring (refused when group or others may read it),
 * finds entity's key and makes *out (the caller's: msg_auth_free), or
 * a negative errno with one sentence in err.  When kr is not NULL the
 * whole keyring is left there for the caller (keyring_free; the
 * monitors read every entity's key from it). */
int auth_config_load(const struct config *cfg, const char *who, const char *entity,
		     struct keyring *kr, struct msg_auth **out, char *err, size_t errlen);

/* Authenticates messenger m (made with an msg_auth) to the first of the
 * monitors in mon_host that answers, so that m holds the client id and
 * tickets before it dials an OSD or MDS directly.  With keep, that
 * connection stays open (the caller's reference: msg_conn_put) and
 * renews the tickets before they expire, for a long-lived program.
 * 0, or -ETIMEDOUT / -EINVAL with one sentence in err. */
struct msgr;
struct msg_conn;
int auth_login(struct msgr *m, const char *mon_host, uint32_t timeout_ms,
	       struct msg_conn **keep, char *err, size_t errlen);

#endif
