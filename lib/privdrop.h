/*
 * privdrop.h - a daemon started as root becomes user `user` after it has
 * opened its sockets, devices and stores (doc/admin.md, "Least
 * privilege").
 */
#ifndef ATOLL_PRIVDROP_H
#define ATOLL_PRIVDROP_H

#include <stddef.h>

/* Nothing (0) when user is NULL or empty, or when the process already
 * runs as user.  Otherwise, as root: gives each of the ndirs folders
 * (recursively, not following links or crossing mounts; NULL entries
 * skipped) to user and its group, then becomes that user for good.  A
 * negative errno with one sentence in err: an unknown user (-ENOENT),
 * not root (-EPERM), a chown or set*id failing. */
int priv_drop(const char *user, const char *const *dirs, size_t ndirs, char *err,
	      size_t errlen);

/* The same with the option `user` of section who (`--user NAME` is
 * `--set user=NAME`). */
struct config;
int priv_drop_config(const struct config *cfg, const char *who, const char *const *dirs,
		     size_t ndirs, char *err, size_t errlen);

#endif
