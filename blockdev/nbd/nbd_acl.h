/*
 * nbd_acl.h - which images each TLS identity may use (--tls-exports FILE).
 *
 * The file has one rule per line:
 *
 *     IDENTITY  PATTERN [PATTERN...]     # comment
 *
 * IDENTITY is a PSK user name or the common name of a verified client
 * certificate, or `*` for every client (with or without an identity).
 * Each PATTERN is an image name or a shell pattern (`vm-*`, `db?`); one
 * without '@' matches the image and its snapshots (IMAGE@SNAP, read-only
 * anyway), one with '@' matches that export name alone.  A client may
 * use what its own lines and the `*` lines allow; nothing else is listed
 * or opened.  Lines may repeat an identity; '#' starts a comment.
 *
 * The parser takes a buffer and its length (tests/fuzz/fuzz_nbd_acl.c
 * drives it): every line and name is bounded, and an error names the line.
 */
#ifndef ATOLL_NBD_ACL_H
#define ATOLL_NBD_ACL_H

#include <stdbool.h>
#include <stddef.h>

#define NBD_ACL_LINE_MAX	4096	/* bytes in one line */
#define NBD_ACL_RULES_MAX	65536	/* identity/pattern pairs in a file */
#define NBD_ACL_FILE_MAX	(4u << 20)

struct nbd_acl;

/* 0 and *out, or -EINVAL (with the line in err) / -ENOMEM / -EFBIG. */
int nbd_acl_parse(const char *text, size_t len, struct nbd_acl **out, char *err,
		  size_t errlen);
/* Reads and parses path; errors name the file. */
int nbd_acl_load(const char *path, struct nbd_acl **out, char *err, size_t errlen);
void nbd_acl_free(struct nbd_acl *acl);
/* Rules in the file (identity/pattern pairs). */
size_t nbd_acl_count(const struct nbd_acl *acl);
/* May a client with this identity ("" for none) use export name (IMAGE or
 * IMAGE@SNAP)?  A NULL acl allows everything. */
bool nbd_acl_allows(const struct nbd_acl *acl, const char *identity, const char *name);

#endif
