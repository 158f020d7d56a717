/*
 * test_mds_caps.c - the MDS caps parser (posixfs/mds_caps.c): the
 * grammar of doc/security.md ("File-system caps"), path normalisation,
 * every refusal, and the credentials a clause lets a request act with.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "mds_caps.h"

static struct mds_caps caps;
static char err[256];

static int parse(const char *s)
{
	return mds_caps_parse(s, strlen(s), &caps, err, sizeof(err));
}

Test(mds_caps, allow_star_is_unlimited)
{
	cr_assert_eq(parse("allow *"), 0);
	cr_assert_eq(caps.n, 1);
	cr_assert(caps.c[0].write);
	cr_assert(mds_caps_unlimited(&caps));
	cr_assert_str_eq(mds_caps_root(&caps), "/");
}

Test(mds_caps, rw_without_options_is_unlimited_r_is_not)
{
	cr_assert_eq(parse("allow rw"), 0);
	cr_assert(mds_caps_unlimited(&caps));
	cr_assert_eq(parse("allow r"), 0);
	cr_assert_not(caps.c[0].write);
	cr_assert_not(mds_caps_unlimited(&caps));
}

Test(mds_caps, full_clause)
{
	cr_assert_eq(parse("allow rw path=/home/u uid=1000 gids=1000,27 root_squash"), 0, "%s",
		     err);
	cr_assert_eq(caps.n, 1);
	cr_assert_str_eq(caps.c[0].path, "/home/u");
	cr_assert(caps.c[0].has_uid);
	cr_assert_eq(caps.c[0].uid, 1000);
	cr_assert_eq(caps.c[0].ngids, 2);
	cr_assert_eq(caps.c[0].gids[1], 27);
	cr_assert(caps.c[0].root_squash);
	cr_assert_not(mds_caps_unlimited(&caps));
}

Test(mds_caps, several_clauses_and_gids_commas)
{
	cr_assert_eq(parse("allow rw path=/a uid=5 gids=5,6, allow r path=/b,allow r"), 0, "%s",
		     err);
	cr_assert_eq(caps.n, 3);
	cr_assert_eq(caps.c[0].ngids, 2);
	cr_assert_str_eq(caps.c[1].path, "/b");
	cr_assert_not(caps.c[1].write);
	cr_assert_str_eq(caps.c[2].path, "/");
	cr_assert_str_eq(mds_caps_root(&caps), "/a");
}

Test(mds_caps, path_normalised)
{
	cr_assert_eq(parse("allow rw path=//home///u/"), 0);
	cr_assert_str_eq(caps.c[0].path, "/home/u");
	cr_assert_eq(parse("allow rw path=/"), 0);
	cr_assert_str_eq(caps.c[0].path, "/");
	cr_assert(mds_caps_unlimited(&caps));
}

Test(mds_caps, refusals)
{
	static const char *const bad[] = {
		"", "allow", "deny rw", "allow x", "allow rw path=home", "allow rw path=/a/../b",
		"allow rw path=/a/./b", "allow rw gids=1", "allow rw uid=1 gids=", "allow rw uid=-1",
		"allow rw uid=99999999999", "allow rw uid=1 uid=2", "allow rw path=/a path=/b",
		"allow rw root_squash root_squash", "allow rw foo=1", "allow rw,", "allow rw,,allow r",
		"allow rw uid=1 gids=1,x", "allow rw uid=1 gids=1 gids=2", "allow * path=/a",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(parse(bad[i]), -EINVAL, "'%s' parsed", bad[i]);
		cr_assert_neq(err[0], 0, "'%s' without a message", bad[i]);
	}
}

Test(mds_caps, nul_inside_refused)
{
	cr_assert_eq(mds_caps_parse("allow r\0", 8, &caps, err, sizeof(err)), -EINVAL);
}

Test(mds_caps, too_many_clauses_and_gids_refused)
{
	char s[2048] = "allow r";
	for (int i = 0; i < 16; i++)
		strcat(s, ",allow r");
	cr_assert_eq(parse(s), -EINVAL);
	strcpy(s, "allow rw uid=1 gids=0");
	for (int i = 0; i < 32; i++)
		strcat(s, ",1");
	cr_assert_eq(parse(s), -EINVAL);
}

Test(mds_caps, long_path_refused)
{
	char s[1200] = "allow rw path=/";
	memset(s + strlen(s), 'a', 1100);
	cr_assert_eq(parse(s), -EINVAL);
}

Test(mds_caps, path_within)
{
	cr_assert(mds_caps_path_within("/", "/x"));
	cr_assert(mds_caps_path_within("/home/u", "/home/u"));
	cr_assert(mds_caps_path_within("/home/u", "/home/u/a"));
	cr_assert_not(mds_caps_path_within("/home/u", "/home/user"));
	cr_assert_not(mds_caps_path_within("/home/u", "/home"));
}

Test(mds_caps, credentials)
{
	uint32_t u, g;

	cr_assert_eq(parse("allow rw uid=1000 gids=1000,27"), 0);
	cr_assert(mds_caps_cred(&caps.c[0], 1000, 27, &u, &g));
	cr_assert_eq(u, 1000);
	cr_assert_not(mds_caps_cred(&caps.c[0], 0, 0, &u, &g), "another uid is refused");
	cr_assert_not(mds_caps_cred(&caps.c[0], 1000, 0, &u, &g), "a gid outside gids");
	cr_assert_eq(parse("allow rw uid=1000"), 0);
	cr_assert(mds_caps_cred(&caps.c[0], 1000, 1000, &u, &g));
	cr_assert_not(mds_caps_cred(&caps.c[0], 1000, 100, &u, &g), "only its own group");
	cr_assert_eq(parse("allow rw root_squash"), 0);
	cr_assert(mds_caps_cred(&caps.c[0], 0, 0, &u, &g));
	cr_assert_eq(u, MDS_CAPS_NOBODY);
	cr_assert_eq(g, MDS_CAPS_NOBODY);
	cr_assert(mds_caps_cred(&caps.c[0], 1000, 100, &u, &g));
	cr_assert_eq(u, 1000);
	cr_assert_eq(g, 100);
}
