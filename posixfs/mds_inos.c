/*
 * mds_inos.c - the inode numbers the MDS hands clients in ranges (INOS),
 * for the creates they answer themselves (doc/fs-design-client.md,
 * "Asynchronous creates").
 *
 * A range's numbers come from mds_txn_alloc_ino, whose ino_hw is stored
 * before any number below it is used, so no number is ever given twice,
 * across restarts too; a number a client never uses is only a gap.  This
 * table (in memory, under m->lock) remembers the ranges handed out
 * lately and how far each client has used its own: a client takes its
 * numbers in increasing order, so a number at or above its range's mark
 * is known unused without asking the metadata pool.  A number the table
 * does not vouch for (the MDS restarted, or the slot was reused for a
 * newer range) is checked the slow way by the caller.
 */
#include "mds.h"

#include <errno.h>

#define INO_GRANTS 1024u	/* ranges remembered (two per client in use) */

static struct {
	uint64_t client, next, end;	/* next: the lowest number not used yet */
} grants[INO_GRANTS];
static unsigned grant_rr;		/* the slot the next new range replaces */

int mds_inos_grant(struct mds *m, uint64_t client, uint32_t want, uint64_t *first,
		   uint32_t *count)
{
	uint64_t ino, lo = 0;
	uint32_t n = 0;
	int ret = 0;

	if (!client)
		return -EINVAL;
	if (want > MDS_INOS_MAX)
		want = MDS_INOS_MAX;
	while (n < want) {
		if ((ret = mds_txn_alloc_ino(m, NULL, &ino)))
			break;
		if (n && ino != lo + n)
			break;	/* not contiguous (cannot happen: one allocator) */
		if (!n)
			lo = ino;
		n++;
	}
	if (!n)
		return ret ? ret : -EINVAL;
	/* a slot of this client's that is used up, else the oldest */
	unsigned s = grant_rr;
	for (unsigned i = 0; i < INO_GRANTS; i++)
		if (grants[i].client == client && grants[i].next >= grants[i].end) {
			s = i;
			break;
		}
	if (s == grant_rr)
		grant_rr = (grant_rr + 1) % INO_GRANTS;
	grants[s].client = client;
	grants[s].next = lo;
	grants[s].end = lo + n;
	*first = lo;
	*count = n;
	return 0;
}

bool mds_inos_take(uint64_t client, uint64_t ino)
{
	for (unsigned i = 0; i < INO_GRANTS; i++)
		if (grants[i].client == client && ino >= grants[i].next && ino < grants[i].end) {
			grants[i].next = ino + 1;
			return true;
		}
	return false;
}
