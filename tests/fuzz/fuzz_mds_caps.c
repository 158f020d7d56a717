/*
 * fuzz_mds_caps.c - libFuzzer target for the MDS caps parser
 * (posixfs/mds_caps.c, mds_caps_parse): the input is a caps string as
 * an admin types it and a ticket carries it.  A refused one must say
 * why; an accepted one holds bounded counts, absolute normalised paths
 * and gids only under uid=, and its answers are the same twice.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mds_caps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mds_caps caps;
	char err[256];

	if (mds_caps_parse((const char *)data, size, &caps, err, sizeof(err)) != 0) {
		check(err[0] != 0);
		return 0;
	}
	check(caps.n >= 1 && caps.n <= MDS_CAPS_CLAUSES_MAX);
	for (uint32_t i = 0; i < caps.n; i++) {
		const struct mds_cap_clause *c = &caps.c[i];
		size_t n = strnlen(c->path, sizeof(c->path));
		uint32_t u1, g1, u2, g2;

		check(n >= 1 && n <= MDS_CAPS_PATH_MAX && c->path[0] == '/');
		check(n == 1 || c->path[n - 1] != '/');
		check(!strstr(c->path, "//") && !strstr(c->path, "/./") && !strstr(c->path, "/../"));
		check(c->ngids <= MDS_CAPS_GIDS_MAX && (c->has_uid || c->ngids == 0));
		check(mds_caps_path_within(c->path, c->path));
		bool a = mds_caps_cred(c, 0, 0, &u1, &g1);
		check(a == mds_caps_cred(c, 0, 0, &u2, &g2));
		if (a)
			check(u1 == u2 && g1 == g2 && (!c->root_squash || u1 == MDS_CAPS_NOBODY));
	}
	check(mds_caps_unlimited(&caps) == mds_caps_unlimited(&caps));
	return 0;
}
