/*
 * mds_open.c - opening and closing the file system: on the first start
 * on an empty metadata pool, mkfs (the root, the journal head, fs.super);
 * then the superblock, the answered index, the journal's replay (what
 * a standby followed of it is in memory already: mds_follow.c), the
 * session lists, one pass over the inode records (their number, the
 * orphans, the first records into the cache), and the applier and
 * journaler threads.  Also the orphans found (nlink 0, open when the MDS
 * stopped): kept until the reconnect window ends, when the clients have
 * re-counted their opens.
 *
 * mds_open runs before any other thread of the MDS touches the
 * namespace, so it takes no lock; mds_open_orphan_defer is called under
 * m->lock.
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <atoll/atoll.h>

#include "log.h"

#define SUB "mds"

static int mkfs(struct mds *m)
{
	struct mds_inode root = { 0 };
	uint64_t now = mds_now();
	int ret;

	root.ino = MDS_ROOT_INO;
	root.mode = S_IFDIR | 0755;
	root.nlink = 2;
	root.atime = root.mtime = root.ctime = now;
	ret = mds_store_inode_put(m, &root, NULL);
	if (ret)
		return ret;
	ret = mds_journal_set_head(m, 1);
	if (ret)
		return ret;
	char hw[17], created[32];
	snprintf(hw, sizeof(hw), "%016" PRIx64, (uint64_t)MDS_INO_RANGE);
	snprintf(created, sizeof(created), "%" PRIu64, now);
	struct atoll_kv kv[] = {
		{ "ino_hw", 6, hw, 16 },
		{ "data_pool", 9, m->data_pool, strlen(m->data_pool) },
		{ "created", 7, created, strlen(created) },
		{ "version", 7, "1", 1 },
	};
	ret = atoll_omap_set(m->meta, "fs.super", kv, 4, 0);
	if (ret == 0)
		log_info(SUB, "created a new file system (metadata pool '%s', data pool '%s')",
			 m->meta_pool, m->data_pool);
	return ret;
}

static int load_super(struct mds *m, bool *exists)
{
	struct atoll_kv keys[] = { { "version", 7, NULL, 0 }, { "ino_hw", 6, NULL, 0 } };
	struct atoll_kv_iter *it = NULL;
	const void *k, *v;
	size_t kl, vl;
	int ret = atoll_omap_get(m->meta, "fs.super", keys, 2, &it, 0);

	*exists = false;
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
		if (kl == 7 && !memcmp(k, "version", 7))
			*exists = true;
		if (kl == 6 && !memcmp(k, "ino_hw", 6) && vl == 16) {
			char num[17];
			memcpy(num, v, 16);
			num[16] = 0;
			m->ino_hw = strtoull(num, NULL, 16);
		}
	}
	atoll_kv_iter_free(it);
	return 0;
}

/* The start's pass over the inode records (mds_open). */
struct scan {
	uint64_t max_ino;
	uint64_t *orphans;
	size_t norphans, cap;
};

static int scan_inode(struct mds *m, void *arg, const void *k, size_t kl,
		      const void *v, size_t vl)
{
	struct scan *sc = arg;
	struct mds_inode in;
	char link[MDS_PATH_MAX + 1];

	(void)k;
	(void)kl;
	if (mds_store_record_decode(v, vl, &in, link)) {
		log_warn(SUB, "a malformed inode record (%zu bytes) in the metadata "
			 "pool; skipping it", vl);
		return 0;
	}
	m->ninodes++;
	if (in.ino > sc->max_ino)
		sc->max_ino = in.ino;
	if (in.nlink == 0 && in.ino != MDS_ROOT_INO) {
		if (sc->norphans == sc->cap) {
			size_t nc = sc->cap ? 2 * sc->cap : 16;
			uint64_t *no = realloc(sc->orphans, nc * sizeof(*no));
			if (!no)
				return -ENOMEM;
			sc->orphans = no;
			sc->cap = nc;
		}
		sc->orphans[sc->norphans++] = in.ino;
	}
	mds_cache_preload(m, &in, link);
	return 0;
}

int mds_open(struct mds *m)
{
	bool exists;
	char oid[64];
	int ret;

	/* a standby that followed the journal has both (mds_follow_start),
	 * and in the cache what the segment's entries touched */
	if (!m->follow.on) {
		pthread_mutex_init(&m->lock, NULL);
		ret = mds_cache_init(m);
		if (ret)
			return ret;
	}
	ret = load_super(m, &exists);
	if (ret)
		return ret;
	if (!exists) {
		m->ino_hw = MDS_INO_RANGE;
		ret = mkfs(m);
		if (ret)
			return ret;
	}
	if (!m->journal.seg_max)
		m->journal.seg_max = MDS_SEG_ENTRIES;
	ret = mds_answered_init(m);
	if (!ret)
		ret = mds_ans_load(m);	/* the requests of the rolled segments */
	if (ret)
		return ret;
	ret = mds_journal_replay(m);
	if (ret)
		return ret;
	ret = mds_session_load(m);
	if (ret)
		return ret;
	/* one pass over the inode records: how many there are, the orphans,
	 * and the first records into the cache (up to half of its bound);
	 * everything else loads on first use */
	struct scan sc = { 0 };
	m->ninodes = 0;	/* counted by the pass (following counted changes) */
	for (unsigned s = 0; s < MDS_INODE_SHARDS; s++) {
		snprintf(oid, sizeof(oid), "fs.inodes.%02x", s);
		ret = mds_store_omap_each(m, oid, scan_inode, &sc);
		if (ret) {
			free(sc.orphans);
			return ret;
		}
	}
	if (m->next_ino < sc.max_ino + 1)
		m->next_ino = sc.max_ino + 1;
	if (!mds_cache_get(m, MDS_ROOT_INO)) {
		log_error(SUB, "the metadata pool '%s' has no root inode; it is not an "
			  "atoll file system or it is damaged", m->meta_pool);
		free(sc.orphans);
		return -EUCLEAN;
	}
	/* numbers below ino_hw may have been handed out: start above */
	if (m->next_ino < m->ino_hw)
		m->next_ino = m->ino_hw;
	if (m->next_ino < 2)
		m->next_ino = 2;
	ret = mds_applier_start(m);
	if (ret)
		return ret;
	if (m->journal.early && (ret = mds_journal_start(m)))
		return ret;
	/* orphans (no names, open when the MDS stopped): removed after the
	 * reconnect window, unless a client re-counts an open of one in it
	 * (mds_orphans_purge) */
	m->orphans = sc.orphans;
	m->norphans = m->orphans_cap = sc.norphans;
	mds_cache_trim(m);
	log_info(SUB, "%" PRIu64 " inodes, %" PRIu64 " of them cached (%" PRIu64 " of %"
		 PRIu64 " KiB); next inode number %" PRIu64, m->ninodes, m->cache.n,
		 m->cache.bytes >> 10, m->cache.max >> 10, m->next_ino);
	if (!m->journal.on) {
		__atomic_store_n(&m->journal.pub_seq, m->journal.seq, __ATOMIC_RELEASE);
		__atomic_store_n(&m->journal.pub_durable, m->journal.seq, __ATOMIC_RELEASE);
	}
	return 0;
}

void mds_close(struct mds *m)
{
	mds_journal_stop(m);	/* journals what is queued first */
	mds_applier_stop(m);	/* applies what is queued first */
	mds_follow_free(m);	/* a standby's entries */
	if (!m->cache.ht)
		return;
	mds_cache_fini(m);
	free(m->sess);
	m->sess = NULL;
	free(m->orphans);
	m->orphans = NULL;
	m->norphans = m->orphans_cap = 0;
	mds_answered_fini(m);
}

bool mds_open_orphan_defer(struct mds *m, uint64_t ino)
{
	if (!m->reconnecting)
		return false;
	for (size_t i = 0; i < m->norphans; i++)
		if (m->orphans[i] == ino)
			return true;
	if (m->norphans == m->orphans_cap) {
		size_t nc = m->orphans_cap ? 2 * m->orphans_cap : 16;
		uint64_t *no = realloc(m->orphans, nc * sizeof(*no));
		if (!no)
			return true;	/* kept: the next start finds it (nlink 0) */
		m->orphans = no;
		m->orphans_cap = nc;
	}
	m->orphans[m->norphans++] = ino;
	return true;
}
