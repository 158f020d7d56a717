/*
 * atoll.h - the public C API of atoll.
 *
 * atoll pools the disks of several servers into one redundant object
 * store.  This header is the manual of its client library, libatoll.
 *
 * Conventions that hold for every function here:
 *  - errors are returned as 0 or a negative errno; atoll_strerror() turns
 *    any of them into a sentence.  The library never prints.
 *  - functions that destroy or close a handle accept NULL.
 *  - a `flags` argument must be 0 unless the function documents a flag.
 *
 * This first version carries the version query and the error strings;
 * the cluster connection and object API are added by the cluster issue.
 */
#ifndef ATOLL_ATOLL_H
#define ATOLL_ATOLL_H

#ifdef __cplusplus
extern "C" {
#endif

#define ATOLL_VERSION_MAJOR 0
#define ATOLL_VERSION_MINOR 1
#define ATOLL_VERSION_PATCH 0
/* One integer that compares in release order. */
#define ATOLL_VERSION_NUMBER \
	(ATOLL_VERSION_MAJOR * 10000 + ATOLL_VERSION_MINOR * 100 + ATOLL_VERSION_PATCH)

/* The version of the library actually loaded, as major*10000 +
 * minor*100 + patch (compare with ATOLL_VERSION_NUMBER); if str is not
 * NULL it receives a static "major.minor.patch" string. */
int atoll_version(const char **str);

/* A sentence for err (a negative errno as returned by atoll calls; a
 * positive errno is accepted too).  Never NULL; the string is static. */
const char *atoll_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
