/*
 * test_mon_mkfs.c - the monitor's command line for a quorum: --mkfs with
 * --name and --initial (and --join) refuses bad input with a sentence
 * naming it, and leaves nothing behind; good input writes the member file
 * with the raft id of the name's place in the list.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define FSID "3f2a5c1e-0b7d-4e59-9a61-2c8e4f0d7b13"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/atoll-mon-mkfs.XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(mon_mkfs, .init = setup, .fini = teardown, .timeout = 60);

/* Runs atoll-mon --mkfs --data DIR/m ARGS; its exit status, first line in out. */
static int mkfs(const char *args, char *out, size_t len)
{
	char cmd[1024];
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' --mkfs --data %s/m %s 2>&1", mh_bin(), dir, args);
	p = popen(cmd, "r");
	cr_assert(p);
	if (!fgets(out, (int)len, p))
		out[0] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void refused(const char *args, const char *says)
{
	char out[512], path[128];

	cr_assert_eq(mkfs(args, out, sizeof(out)), 1, "mkfs %s did not fail: %s", args, out);
	cr_assert(strstr(out, says), "mkfs %s said: %s (wanted '%s')", args, out, says);
	snprintf(path, sizeof(path), "%s/m/member", dir);
	cr_assert_neq(access(path, F_OK), 0, "a refused mkfs left %s", path);
}

Test(mon_mkfs, bad_quorum_arguments_are_refused_with_a_sentence)
{
	refused("--name 'bad name'", "is not 1 to 31");
	refused("--name a --initial a=127.0.0.2:6789", "--initial needs --fsid");
	refused("--name a --fsid " FSID " --initial a=127.0.0.2", "is not IP:PORT");
	refused("--name a --fsid " FSID " --initial a", "is not NAME=IP:PORT");
	refused("--name a --fsid " FSID " --initial a=127.0.0.2:6789,a=127.0.0.3:6789",
		"twice");
	refused("--name d --fsid " FSID " --initial a=127.0.0.2:6789,b=127.0.0.3:6789",
		"is not in --initial");
	refused("--name a --fsid " FSID " --initial 'x y=127.0.0.2:6789'", "is not NAME=IP:PORT");
	refused("--name d --join --fsid " FSID, "--join takes --fsid and --addr");
	refused("--name d --join --addr 127.0.0.5:6789", "--join takes --fsid and --addr");
	refused("--name d --join --fsid " FSID " --addr nowhere", "is not IP:PORT");
}

Test(mon_mkfs, initial_members_get_ids_in_list_order)
{
	char out[512], path[128], line[256];
	FILE *f;

	cr_assert_eq(mkfs("--name b --fsid " FSID " --initial "
			  "a=127.0.0.2:6789,b=127.0.0.3:6790,c=127.0.0.4:6791", out, sizeof(out)),
		     0, "mkfs: %s", out);
	cr_assert(strstr(out, FSID), "mkfs printed '%s', not the fsid", out);
	snprintf(path, sizeof(path), "%s/m/member", dir);
	f = fopen(path, "r");
	cr_assert(f, "no member file");
	cr_assert(fgets(line, sizeof(line), f));
	fclose(f);
	cr_assert_str_eq(line, "b 2 127.0.0.3:6790 " FSID "\n");
	/* a second mkfs on the same folder is refused */
	cr_assert_eq(mkfs("--name b --fsid " FSID " --initial a=127.0.0.2:6789,b=127.0.0.3:6790",
			  out, sizeof(out)), 1);
}
