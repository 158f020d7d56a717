/*
 * test_caps.c - the monitor and OSD caps parsers and checks (lib/caps.c):
 * what each clause grants, that pool and object prefix limit it, and that
 * every malformed string is refused with a sentence naming the problem.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "caps.h"

static struct osd_caps osd(const char *s)
{
	struct osd_caps c;
	char err[256] = "";

	cr_assert_eq(caps_parse_osd(s, &c, err, sizeof(err)), 0, "'%s': %s", s, err);
	return c;
}

static bool allows(const struct osd_caps *c, const char *pool, const char *oid, uint32_t a)
{
	return caps_osd_allows(c, pool, oid, oid ? strlen(oid) : 0, a);
}

Test(caps, osd_rw_pool_limits_pool_and_access)
{
	struct osd_caps c = osd("allow rw pool=a");

	cr_assert(allows(&c, "a", "obj", CAPS_R));
	cr_assert(allows(&c, "a", "obj", CAPS_R | CAPS_W));
	cr_assert(!allows(&c, "b", "obj", CAPS_R));
	cr_assert(!allows(&c, "a", "obj", CAPS_X));
	cr_assert(!allows(&c, NULL, NULL, CAPS_R));
}

Test(caps, osd_r_cannot_write)
{
	struct osd_caps c = osd("allow r");

	cr_assert(allows(&c, "any", "o", CAPS_R));
	cr_assert(!allows(&c, "any", "o", CAPS_W));
}

Test(caps, osd_clauses_are_a_union)
{
	struct osd_caps c = osd("allow r pool=a, allow rw pool=b;allow rwx pool=c");

	cr_assert_eq(c.n, 3);
	cr_assert(allows(&c, "a", "o", CAPS_R));
	cr_assert(!allows(&c, "a", "o", CAPS_W));
	cr_assert(allows(&c, "b", "o", CAPS_R | CAPS_W));
	cr_assert(allows(&c, "c", "o", CAPS_X));
	/* the union of sub-ops needs one clause covering all of it */
	cr_assert(!allows(&c, "a", "o", CAPS_R | CAPS_W));
}

Test(caps, osd_object_prefix)
{
	struct osd_caps c = osd("allow rw pool=fs object_prefix=home.u.");

	cr_assert(allows(&c, "fs", "home.u.1", CAPS_W));
	cr_assert(allows(&c, "fs", "home.u.", CAPS_W));
	cr_assert(!allows(&c, "fs", "home.v.1", CAPS_R));
	cr_assert(!allows(&c, "fs", "home.u", CAPS_R));
	cr_assert(!allows(&c, "fs", NULL, CAPS_R));
}

Test(caps, osd_star_and_profiles)
{
	struct osd_caps c = osd("allow *");

	cr_assert(allows(&c, "x", "o", CAPS_R | CAPS_W | CAPS_X));
	c = osd("profile osd");
	cr_assert(allows(&c, "x", "o", CAPS_X));
	c = osd("profile client");
	cr_assert(allows(&c, "x", "o", CAPS_R | CAPS_W));
	cr_assert(!allows(&c, "x", "o", CAPS_X));
	c = osd("profile mds");
	cr_assert(!allows(&c, "x", "o", CAPS_X));
}

Test(caps, osd_empty_allows_nothing)
{
	struct osd_caps c = osd("");

	cr_assert_eq(c.n, 0);
	cr_assert(!allows(&c, "a", "o", CAPS_R));
	c = osd("  , ;");
	cr_assert_eq(c.n, 0);
}

static void osd_bad(const char *s, const char *want)
{
	struct osd_caps c;
	char err[256] = "";

	cr_assert_eq(caps_parse_osd(s, &c, err, sizeof(err)), -EINVAL, "'%s' parsed", s);
	cr_assert(strstr(err, want), "'%s': error '%s' lacks '%s'", s, err, want);
	cr_assert_eq(c.n, 0);
}

Test(caps, osd_bad_strings_are_refused_clearly)
{
	osd_bad("allow", "bad caps clause 'allow'");
	osd_bad("allow rr", "bad access 'rr'");
	osd_bad("allow q", "bad access 'q'");
	osd_bad("deny r", "bad caps clause 'deny r'");
	osd_bad("allow r pool=", "bad pool name");
	osd_bad("allow r pool=a/b", "bad pool name");
	osd_bad("allow r pool=a pool=b", "unknown or repeated 'pool=b'");
	osd_bad("allow r colour=red", "unknown or repeated 'colour=red'");
	osd_bad("allow r object_prefix=", "object_prefix");
	osd_bad("profile admin", "unknown osd profile 'admin'");
	osd_bad("profile", "bad caps clause");
	osd_bad("allow r pool=a object_prefix=b extra", "too long");
	osd_bad(NULL, "missing");
}

Test(caps, osd_bounds)
{
	char big[CAPS_STR_MAX + 2], pool[100], err[256];
	struct osd_caps c;
	size_t n = 0;

	memset(big, 'r', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	osd_bad(big, "longer than");
	/* 17 clauses */
	big[0] = '\0';
	for (int i = 0; i < 17; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "allow r,");
	osd_bad(big, "more than 16");
	memset(pool, 'p', sizeof(pool));
	snprintf(big, sizeof(big), "allow r pool=%.*s", (int)CAPS_POOL_MAX + 1, pool);
	osd_bad(big, "bad pool name");
	snprintf(big, sizeof(big), "allow r pool=%.*s", (int)CAPS_POOL_MAX, pool);
	cr_assert_eq(caps_parse_osd(big, &c, err, sizeof(err)), 0, "%s", err);
	/* a word longer than a clause's word buffer */
	memset(big, 'o', 400);
	memcpy(big, "allow r object_prefix=", 22);
	big[400] = '\0';
	osd_bad(big, "too long");
	/* no room for the error: still refused, nothing written */
	cr_assert_eq(caps_parse_osd("bad", &c, NULL, 0), -EINVAL);
}

static struct mon_caps mon(const char *s)
{
	struct mon_caps c;
	char err[256] = "";

	cr_assert_eq(caps_parse_mon(s, &c, err, sizeof(err)), 0, "'%s': %s", s, err);
	return c;
}

Test(caps, mon_levels)
{
	struct mon_caps c = mon("allow r");

	cr_assert(caps_mon_allows(&c, MON_NEED_R));
	cr_assert(!caps_mon_allows(&c, MON_NEED_W));
	cr_assert(!caps_mon_allows(&c, MON_NEED_BLOCKLIST));
	c = mon("allow rw");
	cr_assert(caps_mon_allows(&c, MON_NEED_W));
	cr_assert(caps_mon_allows(&c, MON_NEED_BLOCKLIST));
	cr_assert(!caps_mon_allows(&c, MON_NEED_ALL));
	cr_assert(!caps_mon_allows(&c, MON_NEED_OSD));
	/* a table entry that forgot its need: only allow * passes */
	cr_assert(!caps_mon_allows(&c, MON_NEED_UNSET));
	c = mon("allow *");
	for (int n = MON_NEED_UNSET; n <= MON_NEED_BLOCKLIST; n++)
		cr_assert(caps_mon_allows(&c, (enum mon_need)n));
}

Test(caps, mon_profiles)
{
	struct mon_caps c = mon("profile osd");

	cr_assert(caps_mon_allows(&c, MON_NEED_OSD));
	cr_assert(caps_mon_allows(&c, MON_NEED_R));
	cr_assert(!caps_mon_allows(&c, MON_NEED_W));
	cr_assert(!caps_mon_allows(&c, MON_NEED_BOOTSTRAP_OSD));
	c = mon("profile bootstrap-osd");
	cr_assert(caps_mon_allows(&c, MON_NEED_BOOTSTRAP_OSD));
	cr_assert(!caps_mon_allows(&c, MON_NEED_OSD));
	c = mon("profile blocklist");
	cr_assert(caps_mon_allows(&c, MON_NEED_BLOCKLIST));
	cr_assert(!caps_mon_allows(&c, MON_NEED_W));
	c = mon("profile mds");
	cr_assert(caps_mon_allows(&c, MON_NEED_MDS));
	cr_assert(caps_mon_allows(&c, MON_NEED_BLOCKLIST));
	c = mon("profile client, profile blocklist");
	cr_assert(caps_mon_allows(&c, MON_NEED_R) && caps_mon_allows(&c, MON_NEED_BLOCKLIST));
	c = mon("");
	cr_assert(!caps_mon_allows(&c, MON_NEED_R));
}

static void mon_bad(const char *s, const char *want)
{
	struct mon_caps c;
	char err[256] = "";

	cr_assert_eq(caps_parse_mon(s, &c, err, sizeof(err)), -EINVAL, "'%s' parsed", s);
	cr_assert(strstr(err, want), "'%s': error '%s' lacks '%s'", s, err, want);
	cr_assert_eq(c.grants, 0);
}

Test(caps, mon_bad_strings_are_refused_clearly)
{
	mon_bad("allow w", "bad access 'w'");
	mon_bad("allow rw pool=a", "bad mon caps clause");
	mon_bad("profile admin", "unknown mon profile 'admin'");
	mon_bad("allow r, nonsense", "bad mon caps clause 'nonsense'");
	mon_bad(NULL, "missing");
}
