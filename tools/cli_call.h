/*
 * cli_call.h - one request/reply exchange with a daemon through the
 * internal messenger, for the CLI commands that speak to daemons not
 * behind libatoll's API: the MDS (`fs status`) and an OSD (`pg
 * deep-scrub|repair`).  See cli.h for why this is the exception.
 */
#ifndef ATOLL_TOOLS_CLI_CALL_H
#define ATOLL_TOOLS_CLI_CALL_H

#include <stdint.h>

#include "encode.h"
#include "msg.h"

struct cli_msgr;

/* A messenger for calls (a client identity with a random id): 0 or -errno. */
int cli_msgr_new(struct cli_msgr **out);
/* The --conf and --mon of the command line, for cli_msgr_new's
 * authentication (NULL: $ATOLL_CONF ..., the configured mon_host and
 * keyring). */
void cli_call_set_conf(const char *conf, const char *mon, const char *keyring);
void cli_msgr_free(struct cli_msgr *cm);
/* Sends a message of type with front's bytes (front is left empty) to
 * addr and waits up to timeout_ms for the reply: 0 and *reply (msg_free
 * it), or -errno (a refused or failed connection fails at once). */
int cli_msgr_call(struct cli_msgr *cm, const char *addr, uint16_t type, struct enc *front,
		  uint32_t timeout_ms, struct msg **reply);

#endif
