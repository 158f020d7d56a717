/*
 * mds_purge.c - removes the data objects of a range of a file's blocks
 * (a truncate's trim, the purge of a removed inode).
 *
 * A file's data objects are named INO.BLOCK, and a sparse file has
 * objects only where it was written: a file of 16 TiB with one MiB
 * written at its end has one object, yet 4 million block numbers.  One
 * remove per block number, waited for in turn, took hours there (and the
 * client's truncate timed out).  So: up to PURGE_SCAN_MAX blocks, one
 * remove per block with MDS_RM_INFLIGHT of them in flight at once (a
 * missing object is fine; the applier shares one batch among the files of
 * a round); beyond that, the data pool is listed once and
 * only the inode's objects in the range are removed, which costs the
 * pool's size instead of the file's.
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atoll/atoll.h>

#define PURGE_SCAN_MAX	16384u	/* 64 GiB of 4 MiB blocks */

static void batch_wait(struct mds_rm_batch *b)
{
	for (unsigned i = 0; i < b->n; i++) {
		int r = (int)atoll_completion_wait(b->c[i]);
		if (r && r != -ENOENT && !b->err)
			b->err = r;
		atoll_completion_release(b->c[i]);
	}
	b->n = 0;
}

int mds_rm_batch_wait(struct mds_rm_batch *b)
{
	batch_wait(b);
	return b->err;
}

static void batch_remove(struct mds *m, struct mds_rm_batch *b, const char *oid)
{
	struct atoll_completion *c = NULL;
	int r = atoll_completion_create(NULL, NULL, NULL, &c);

	if (!r) {
		r = atoll_aio_remove(m->data, oid, c, 0);
		if (r)
			atoll_completion_release(c);
	}
	if (r) {
		if (r != -ENOENT && !b->err)
			b->err = r;
		return;
	}
	b->c[b->n++] = c;
	if (b->n == MDS_RM_INFLIGHT)
		batch_wait(b);
}

int mds_data_remove_range(struct mds *m, uint64_t dns, uint64_t ino, uint64_t first,
			  uint64_t last, struct mds_rm_batch *shared)
{
	struct mds_rm_batch own = { .n = 0 }, *b = shared ? shared : &own;
	char oid[MDS_DATA_OID_MAX];

	if (last < first)
		return 0;
	if (last - first < PURGE_SCAN_MAX) {
		for (uint64_t blk = first; blk <= last; blk++) {
			mds_data_oid(oid, sizeof(oid), dns, ino, blk);
			batch_remove(m, b, oid);
		}
		return shared ? 0 : mds_rm_batch_wait(b);
	}
	struct atoll_list *l = NULL;
	const char *name;
	char prefix[MDS_DATA_OID_MAX];
	size_t pl = mds_data_prefix(prefix, sizeof(prefix), dns, ino);
	int ret = atoll_list_open(m->data, &l, 0);

	if (ret)
		return ret;
	while ((ret = atoll_list_next(l, &name)) == 0) {
		if (strncmp(name, prefix, pl) || strlen(name) != pl + 16)
			continue;
		uint64_t blk = strtoull(name + pl, NULL, 16);
		if (blk >= first && blk <= last)
			batch_remove(m, b, name);	/* copied by the library when issued */
	}
	atoll_list_close(l);
	int werr = shared ? 0 : mds_rm_batch_wait(b);
	return ret == -ENOENT ? werr : ret;
}
