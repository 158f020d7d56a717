/*
 * test_fuse_perm.c - atoll-fuse's permission rules (posixfs/fuse_perm.c)
 * against what the kernel does with default_permissions: the cases a
 * mount by root and by one user cannot all reach (supplementary groups,
 * a chgrp to a group of one's own, the set-ID bits).  fs-users.sh checks
 * the real thing against ext4.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fuse_perm.h"

static struct fp_cred cred(uint32_t uid, uint32_t gid, int n, const uint32_t *groups)
{
	struct fp_cred c;

	memset(&c, 0, sizeof(c));
	c.uid = uid;
	c.gid = gid;
	c.ngroups = n;	/* known: fuse_req_getgroups is never called */
	for (int i = 0; i < n; i++)
		c.groups[i] = groups[i];
	return c;
}

static struct lc_perm rec(uint32_t mode, uint32_t uid, uint32_t gid)
{
	struct lc_perm p = { .mode = mode, .uid = uid, .gid = gid };
	return p;
}

Test(fuse_perm, classes)
{
	uint32_t sup[] = { 50 };
	struct fp_cred owner = cred(1000, 100, 0, NULL), member = cred(2000, 200, 1, sup),
		       other = cred(3000, 300, 0, NULL), root = cred(0, 0, 0, NULL);
	struct lc_perm f = rec(S_IFREG | 0640, 1000, 50);

	cr_assert_eq(fp_access(&owner, &f, FP_R | FP_W), 0);
	cr_assert_eq(fp_access(&owner, &f, FP_X), -EACCES);
	cr_assert_eq(fp_access(&member, &f, FP_R), 0, "a supplementary group counts");
	cr_assert_eq(fp_access(&member, &f, FP_W), -EACCES);
	cr_assert_eq(fp_access(&other, &f, FP_R), -EACCES);
	cr_assert_eq(fp_access(&root, &f, FP_R | FP_W), 0);
	cr_assert_eq(fp_access(&root, &f, FP_X), -EACCES, "root executes only with an x bit");
	/* the owner class decides even when others may more */
	struct lc_perm g = rec(S_IFREG | 0077, 1000, 50);
	cr_assert_eq(fp_access(&owner, &g, FP_R), -EACCES);
	struct lc_perm d = rec(S_IFDIR | 0700, 1000, 50);
	cr_assert_eq(fp_access(&root, &d, FP_X | FP_W), 0, "root searches any folder");
	cr_assert_eq(fp_access(&member, &d, FP_X), -EACCES);
}

Test(fuse_perm, sticky_and_links)
{
	struct fp_cred u = cred(1000, 100, 0, NULL), root = cred(0, 0, 0, NULL);
	struct lc_perm tmp = rec(S_IFDIR | 01777, 0, 0), mine = rec(S_IFREG | 0644, 1000, 100),
		       theirs = rec(S_IFREG | 0666, 2000, 200);

	cr_assert_eq(fp_sticky(&u, &tmp, &mine), 0);
	cr_assert_eq(fp_sticky(&u, &tmp, &theirs), -EPERM);
	cr_assert_eq(fp_sticky(&root, &tmp, &theirs), 0);
	struct lc_perm owned_tmp = rec(S_IFDIR | 01777, 1000, 100);
	cr_assert_eq(fp_sticky(&u, &owned_tmp, &theirs), 0, "the folder's owner removes");
	/* protected_hardlinks (fp_init not called: on) */
	cr_assert_eq(fp_link_source(&u, &theirs), 0, "read and write: a safe source");
	struct lc_perm ro = rec(S_IFREG | 0644, 2000, 200), suid = rec(S_IFREG | 04777, 2000, 200);
	cr_assert_eq(fp_link_source(&u, &ro), -EPERM);
	cr_assert_eq(fp_link_source(&u, &suid), -EPERM);
	cr_assert_eq(fp_link_source(&u, &mine), 0);
}

Test(fuse_perm, setattr)
{
	uint32_t sup[] = { 50 };
	struct fp_cred u = cred(1000, 100, 1, sup), root = cred(0, 0, 0, NULL);
	struct lc_perm mine = rec(S_IFREG | 0644, 1000, 100), theirs = rec(S_IFREG | 0666, 2000, 200);
	struct stat st;
	uint32_t mode;

	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFREG | 02755;
	cr_assert_eq(fp_setattr(&u, &mine, FUSE_SET_ATTR_MODE, &st, false, &mode), 0);
	cr_assert_eq(mode & 07777, 02755, "g+s kept: the file's group is the caller's");
	struct lc_perm mine_other_group = rec(S_IFREG | 0644, 1000, 4242);
	cr_assert_eq(fp_setattr(&u, &mine_other_group, FUSE_SET_ATTR_MODE, &st, false, &mode), 0);
	cr_assert_eq(mode & 07777, 0755, "g+s dropped outside the group");
	cr_assert_eq(fp_setattr(&u, &theirs, FUSE_SET_ATTR_MODE, &st, false, &mode), -EPERM);
	/* the kernel's clearing of set-ID bits after a write: let through */
	struct lc_perm suid = rec(S_IFREG | 04777, 2000, 200);
	st.st_mode = S_IFREG | 0777;
	cr_assert_eq(fp_setattr(&u, &suid, FUSE_SET_ATTR_MODE, &st, false, &mode), 0);
	st.st_mode = S_IFREG | 0700;
	cr_assert_eq(fp_setattr(&u, &suid, FUSE_SET_ATTR_MODE, &st, false, &mode), -EPERM);
	/* chown: root only; chgrp: the owner, to a group of theirs */
	st.st_uid = 1000;
	cr_assert_eq(fp_setattr(&u, &mine, FUSE_SET_ATTR_UID, &st, false, &mode), 0, "no change");
	st.st_uid = 0;
	cr_assert_eq(fp_setattr(&u, &mine, FUSE_SET_ATTR_UID, &st, false, &mode), -EPERM);
	cr_assert_eq(fp_setattr(&root, &mine, FUSE_SET_ATTR_UID, &st, false, &mode), 0);
	st.st_gid = 50;
	cr_assert_eq(fp_setattr(&u, &mine, FUSE_SET_ATTR_GID, &st, false, &mode), 0);
	st.st_gid = 4242;
	cr_assert_eq(fp_setattr(&u, &mine, FUSE_SET_ATTR_GID, &st, false, &mode), -EPERM);
	/* times: "now" for whoever may write, set for the owner */
	int now = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
		  FUSE_SET_ATTR_MTIME_NOW;
	struct lc_perm ro = rec(S_IFREG | 0644, 2000, 200);
	cr_assert_eq(fp_setattr(&u, &theirs, now, &st, false, &mode), 0);
	cr_assert_eq(fp_setattr(&u, &ro, now, &st, false, &mode), -EACCES);
	cr_assert_eq(fp_setattr(&u, &theirs, FUSE_SET_ATTR_MTIME, &st, false, &mode), -EPERM);
	/* truncate by name wants write permission; through a descriptor not */
	cr_assert_eq(fp_setattr(&u, &ro, FUSE_SET_ATTR_SIZE, &st, false, &mode), -EACCES);
	cr_assert_eq(fp_setattr(&u, &ro, FUSE_SET_ATTR_SIZE, &st, true, &mode), 0);
}
