/*
 * fuse_perm.h - atoll-fuse's permission checks (fuse_perm.c): the rules
 * the kernel applies with the mount option default_permissions, applied
 * by atoll-fuse to its leased records instead, so that the kernel no
 * longer re-reads a directory's attributes after every change in it.
 *
 * The caller is the request's uid and gid, its supplementary groups read
 * only when a check depends on them; uid 0 has every capability (as a
 * FUSE request tells no capabilities, uid 0 stands for them).
 */
#ifndef ATOLL_FUSE_PERM_H
#define ATOLL_FUSE_PERM_H

#define FUSE_USE_VERSION 35

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fuse_cache.h"

#define FP_R 4
#define FP_W 2
#define FP_X 1

#define FP_GROUPS_MAX 64

struct fp_cred {
	fuse_req_t req;
	uint32_t uid, gid;
	int ngroups;		/* -1: not read yet */
	uint32_t groups[FP_GROUPS_MAX];
};

void fp_cred_init(struct fp_cred *c, fuse_req_t req);
bool fp_root(const struct fp_cred *c);
/* Is gid the caller's group (primary or supplementary)? */
bool fp_in_group(struct fp_cred *c, uint32_t gid);
/* generic_permission: mask of FP_R/FP_W/FP_X on a: 0 or -EACCES. */
int fp_access(struct fp_cred *c, const struct lc_perm *a, int mask);
/* The owner, or uid 0 (CAP_FOWNER). */
bool fp_owner(const struct fp_cred *c, const struct lc_perm *a);
/* Removing (or replacing) an entry naming victim from dir: the sticky
 * bit's rule; 0 or -EPERM. */
int fp_sticky(const struct fp_cred *c, const struct lc_perm *dir, const struct lc_perm *victim);
/* fs.protected_hardlinks: may the caller link a?  0 or -EPERM. */
int fp_link_source(struct fp_cred *c, const struct lc_perm *a);

/* A setattr (FUSE_SET_ATTR_* in to_set, the new values in st) by the
 * caller on a; has_fh: through an open file (ftruncate).  0, -EPERM or
 * -EACCES; *mode is the mode to set (S_ISGID dropped when the caller is
 * not in the file's group, as chmod does). */
int fp_setattr(struct fp_cred *c, const struct lc_perm *a, int to_set, const struct stat *st,
	       bool has_fh, uint32_t *mode);

/* Reads fs.protected_hardlinks once (at start). */
void fp_init(void);

#endif
