/*
 * mds_ns.c - the MDS's namespace: persisted as objects of the metadata
 * pool (doc/fs.md), cached in memory within a bound (loaded on first use,
 * the least recently used clean items evicted: "the metadata cache"),
 * changed only by transactions that are journaled before they are
 * applied to the objects (with early replies, after they are applied in
 * memory and answered: the journaler).
 *
 * A transaction's journal entry lists final states (dentry set/removed,
 * inode record put/removed, data purged/truncated), so applying an entry
 * twice gives the same result: a restart replays the current journal
 * segment over the objects, then loads what requests need.  The objects
 * are written by the applier thread behind the reply (see "the applier"
 * below).
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atoll/atoll.h>

#include "crc32c.h"
#include "encode.h"
#include "log.h"
#include "msg.h"

#define SUB "mds"

uint64_t mds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- start-up: mkfs, load ---------------------------------------------------- */

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
	ret = atoll_omap_set(m->meta, "fs.super", kv, 4);
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
	int ret = atoll_omap_get(m->meta, "fs.super", keys, 2, &it);

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

/* ---- sessions --------------------------------------------------------------- */

bool mds_session_known(const struct mds *m, uint64_t client)
{
	for (size_t i = 0; i < m->nsess; i++)
		if (m->sess[i] == client)
			return true;
	return false;
}

static int sess_mem_add(struct mds *m, uint64_t client)
{
	if (m->nsess == m->sess_cap) {
		size_t nc = m->sess_cap ? 2 * m->sess_cap : 16;
		uint64_t *ns = realloc(m->sess, nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		m->sess = ns;
		m->sess_cap = nc;
	}
	m->sess[m->nsess++] = client;
	return 0;
}

/* Persisted before the SESSION reply: a restarted MDS waits for it. */
int mds_session_add(struct mds *m, uint64_t client)
{
	char key[17];
	int ret;

	if (!client || mds_session_known(m, client))
		return 0;
	snprintf(key, sizeof(key), "%016" PRIx64, client);
	struct atoll_kv kv = { key, 16, "", 0 };
	ret = atoll_omap_set(m->meta, "fs.sessions", &kv, 1);
	return ret ? ret : sess_mem_add(m, client);
}

int mds_session_drop(struct mds *m, uint64_t client)
{
	char key[17];

	mds_answered_forget(m, client);	/* it resends nothing now */
	mds_inflight_drop_client(client);	/* nor says its writes landed */
	for (size_t i = 0; i < m->nsess; i++)
		if (m->sess[i] == client) {
			m->sess[i] = m->sess[--m->nsess];
			snprintf(key, sizeof(key), "%016" PRIx64, client);
			struct atoll_kv kv = { key, 16, NULL, 0 };
			int ret = atoll_omap_rm(m->meta, "fs.sessions", &kv, 1);
			return ret == -ENOENT ? 0 : ret;
		}
	return 0;
}

/* ---- evicted clients (fs.evicted) -------------------------------------------
 *
 * A client evicted at the end of a reconnect window is refused from then
 * on (a late resend of a change the MDS lost must not land after the
 * others moved on).  Its id is persisted as a key of fs.evicted (value:
 * the eviction's wall-clock time, ns, 16 hex digits), written before its
 * session is dropped, so a later restart still refuses it.  A start loads
 * the list and removes entries older than MDS_EVICT_SECONDS (the
 * blocklist's hour: the client remounted under a new id long ago), at
 * most MDS_EVICTED_MAX kept. */

#define EVICTED_OID "fs.evicted"

static int evicted_mem_add(struct mds *m, uint64_t client)
{
	for (size_t i = 0; i < m->nevicted; i++)
		if (m->evicted[i] == client)
			return 0;
	uint64_t *ne = realloc(m->evicted, (m->nevicted + 1) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	m->evicted = ne;
	m->evicted[m->nevicted++] = client;
	return 0;
}

int mds_evicted_add(struct mds *m, uint64_t client)
{
	char key[17], val[17];

	snprintf(key, sizeof(key), "%016" PRIx64, client);
	snprintf(val, sizeof(val), "%016" PRIx64, mds_now());
	struct atoll_kv kv = { key, 16, val, 16 };
	int ret = atoll_omap_set(m->meta, EVICTED_OID, &kv, 1);
	int r2 = evicted_mem_add(m, client);
	return ret ? ret : r2;
}

static int load_evicted(struct mds *m, void *arg, const void *k, size_t kl,
			const void *v, size_t vl)
{
	char num[17];
	uint64_t when = 0;

	(void)arg;
	if (kl != 16)
		return 0;
	if (vl == 16) {
		memcpy(num, v, 16);
		num[16] = 0;
		when = strtoull(num, NULL, 16);
	}
	if (mds_now() - when > (uint64_t)MDS_EVICT_SECONDS * 1000000000ull) {
		struct atoll_kv kv = { k, 16, NULL, 0 };
		atoll_omap_rm(m->meta, EVICTED_OID, &kv, 1);	/* expired; a failure: next start */
		return 0;
	}
	if (m->nevicted >= MDS_EVICTED_MAX)
		return 0;
	memcpy(num, k, 16);
	num[16] = 0;
	return evicted_mem_add(m, strtoull(num, NULL, 16));
}

static int load_session(struct mds *m, void *arg, const void *k, size_t kl,
			const void *v, size_t vl)
{
	char num[17];

	(void)arg;
	(void)v;
	(void)vl;
	if (kl != 16)
		return 0;
	memcpy(num, k, 16);
	num[16] = 0;
	return sess_mem_add(m, strtoull(num, NULL, 16));
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

	pthread_mutex_init(&m->lock, NULL);
	ret = mds_cache_init(m);
	if (ret)
		return ret;
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
	ret = mds_store_omap_each(m, "fs.sessions", load_session, NULL);
	if (ret)
		return ret;
	ret = mds_store_omap_each(m, EVICTED_OID, load_evicted, NULL);
	if (ret)
		return ret;
	if (m->nevicted)
		log_info(SUB, "%zu client(s) evicted within the last %d s stay refused",
			 m->nevicted, MDS_EVICT_SECONDS);
	/* one pass over the inode records: how many there are, the orphans,
	 * and the first records into the cache (up to half of its bound);
	 * everything else loads on first use */
	struct scan sc = { 0 };
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

bool mds_orphan_defer(struct mds *m, uint64_t ino)
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
