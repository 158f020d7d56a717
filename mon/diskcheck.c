/*
 * diskcheck.c - the monitor's own disk running out of space.
 *
 * Every committed epoch is written twice on the monitor's disk: in the
 * raft log (DIR/raft, in segments it allocates ahead) and in the store
 * (DIR/store).  A store write that fails after the epoch is committed
 * cannot be taken back: the monitor stops (mapchange.c) and, once there
 * is room again, replays the epoch from the raft log when it starts.  So
 * the monitor keeps from getting there: below mon_data_min_free of free
 * space in DIR it refuses the commands that add to the cluster's state
 * (-ENOSPC, with a sentence saying where and what to do), and keeps
 * taking deletes and blocklists (which make room or fence a client)
 * until the last quarter of that space; health says MON_DISK_LOW.  What
 * the daemons report on their own (beacons, failures, boots) still
 * commits: that is what the reserve is for.  doc/limits.md, "Monitor".
 */
#include <errno.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "cmd.h"
#include "mon.h"

int mon_disk_free(const struct mon *mon, uint64_t *avail)
{
	struct statvfs sv;

	*avail = UINT64_MAX;
	if (!mon->data_dir || statvfs(mon->data_dir, &sv) < 0)
		return -errno;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}

int mon_disk_refuses(struct mon *mon, bool frees, struct cmd_out *o)
{
	uint64_t avail, min = mon->opts.data_min_free;

	if (!min || mon_disk_free(mon, &avail) < 0)
		return 0;	/* not checked: the store's own errors say it */
	if (avail >= min || (frees && avail >= min / 4))
		return 0;
	return cmd_fail(o, -ENOSPC, "the monitor's disk is full: %llu MB free in '%s', under "
			"mon_data_min_free (%llu MB); commands that add to the cluster are "
			"refused until there is room%s: free space on that disk",
			(unsigned long long)(avail / 1000000), mon->data_dir,
			(unsigned long long)(min / 1000000),
			frees ? " (deletes too, below a quarter of it)" :
			" (deletes such as 'atoll pool rm' still work)");
}
