/*
 * mds_caps.h - a client's MDS caps: the string its ticket carries for the
 * service "mds", parsed (mds_caps.c), and the questions the MDS asks of
 * them (posixfs/mds_access.c).
 *
 * Grammar (doc/security.md, "File-system caps"): clauses separated by
 * commas,
 *   allow *
 *   allow r|rw [path=/P] [uid=N [gids=A,B,...]] [root_squash]
 * The options come in any order, each at most once; `gids=` needs `uid=`.
 * A path is absolute, its components are neither `.` nor `..`, repeated
 * and trailing slashes are dropped ("/" is the whole file system).
 */
#ifndef ATOLL_MDS_CAPS_H
#define ATOLL_MDS_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MDS_CAPS_CLAUSES_MAX	16u
#define MDS_CAPS_GIDS_MAX	32u
#define MDS_CAPS_PATH_MAX	1024u
#define MDS_CAPS_NOBODY		65534u	/* root_squash's uid and gid */

struct mds_cap_clause {
	bool write;		/* rw (or *) */
	bool has_uid;
	bool root_squash;
	uint32_t uid;
	uint32_t ngids;
	uint32_t gids[MDS_CAPS_GIDS_MAX];
	char path[MDS_CAPS_PATH_MAX + 1];	/* normalised; "/" = everything */
};

struct mds_caps {
	uint32_t n;
	struct mds_cap_clause c[MDS_CAPS_CLAUSES_MAX];
};

/* Parses len bytes of s (no NUL needed; a NUL inside is an error).
 * 0, or -EINVAL with a message in err naming what is wrong. */
int mds_caps_parse(const char *s, size_t len, struct mds_caps *out, char *err, size_t errlen);

/* True when path p (normalised) is clause path root or below it. */
bool mds_caps_path_within(const char *root, const char *p);

/* The credentials a request may act with under clause c: false when c
 * refuses them (uid= given and another uid claimed; a gid outside gids);
 * else *uid, *gid are what the MDS uses (root_squash maps 0 to nobody). */
bool mds_caps_cred(const struct mds_cap_clause *c, uint32_t uid, uint32_t gid, uint32_t *ouid,
		   uint32_t *ogid);

/* True when no clause limits anything (a write clause on "/" without
 * uid= or root_squash): the MDS skips every check. */
bool mds_caps_unlimited(const struct mds_caps *caps);

/* The path of the first clause (a mount's default root), "/" if none. */
const char *mds_caps_root(const struct mds_caps *caps);

#endif
