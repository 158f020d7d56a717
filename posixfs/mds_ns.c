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

/* ---- the journal ----------------------------------------------------------- */

static int head_set_seg(struct mds *m, uint64_t seg)
{
	char v[17];

	snprintf(v, sizeof(v), "%016" PRIx64, seg);
	struct atoll_kv kv = { "seg", 3, v, 16 };
	return atoll_omap_set(m->meta, "fs.journal.head", &kv, 1);
}

static int journal_roll(struct mds *m)
{
	char oid[64];
	/* the index first: the requests of the segment that goes stay known */
	int ret = mds_ans_store(m);

	if (ret)
		return ret;
	ret = head_set_seg(m, m->seg + 1);

	if (ret)
		return ret;
	mds_store_oid_seg(oid, sizeof(oid), m->seg);
	atoll_remove(m->meta, oid);	/* every entry in it is applied */
	m->seg++;
	m->seg_entries = 0;
	m->seg_bytes = 0;
	return 0;
}

/* Appends the frame of body (a txn_encode of journal entry seq) to e:
 * length, crc32c of seq and body, seq, the body. */
static void journal_frame(struct enc *e, const uint8_t *body, size_t blen, uint64_t seq)
{
	uint8_t hdr[16];
	uint32_t len = (uint32_t)blen;
	memcpy(hdr, &len, 4);
	memcpy(hdr + 8, &seq, 8);
	uint32_t crc = atoll__crc32c(0, hdr + 8, 8);
	crc = atoll__crc32c(crc, body, blen);
	memcpy(hdr + 4, &crc, 4);
	enc_raw(e, hdr, 16);
	enc_raw(e, body, blen);
}

/* One atoll_append of the frames in e (the current segment). */
static int journal_write(struct mds *m, struct enc *e)
{
	char oid[64];
	size_t len;
	uint8_t *buf = enc_take(e, &len);
	int ret;

	if (!buf) {
		enc_free(e);
		return -ENOMEM;
	}
	mds_store_oid_seg(oid, sizeof(oid), m->seg);
	ret = atoll_append(m->meta, oid, buf, len);
	if (ret == 0)
		m->seg_bytes += len;
	free(buf);
	return ret;
}

static int journal_append(struct mds *m, const struct mds_txn *t)
{
	struct mds_packed p;
	struct enc e;
	int ret = mds_txn_pack(t, &p);

	if (ret)
		return ret;
	enc_init(&e);
	journal_frame(&e, p.body, p.len, ++m->seq);
	free(p.body);
	ret = journal_write(m, &e);
	if (ret == 0) {
		mds_ans_add(m, t->client, t->reqid, t->res_ino);
		__atomic_store_n(&m->pub_seq, m->seq, __ATOMIC_RELEASE);
		__atomic_store_n(&m->pub_durable, m->seq, __ATOMIC_RELEASE);
	}
	return ret;
}

/* ---- the journaler (early replies) ------------------------------------------
 *
 * The worker applies a change in memory, queues it here (mds_journal_queue) and
 * replies at once: an "unsafe" reply that names the change's journal
 * sequence number.  This thread takes everything queued, frames it into
 * one buffer and journals it with one atoll_append (group commit: while
 * one batch is in flight the next one forms), then hands the batch to the
 * applier in journal order and sends MT_MDS_SAFE (journaled up to seq) to
 * each requester of the batch, which may then forget its copy of the
 * request.  A journal failure is fatal, as before: the clients replay
 * what they were not told is safe. */

#define JOURNAL_BATCH 1024u	/* changes in one append, at most */

/* Under jlock, something journalable queued: waits while the oldest
 * entry is younger than jgather_ms, nobody waits for durability
 * (jhurry_seq), the batch is not full and the MDS does not stop.  A
 * client making its changes one at a time (rm -rf, touch, mkdir) sent
 * one or two per append: on a 2-CPU machine the three OSDs' work for
 * each append (a replicated write, fdatasync) took the CPU the next
 * request needed.  The requester had its reply already (early replies);
 * what the gathering delays is MT_MDS_SAFE, and an fsync hurries it.
 * 10 ms, not 2: a third less wall time and half the OSDs' CPU for
 * 10,000 creates (doc/fs.md, "Gathering"); 25 or 50 ms gained little. */
static void journal_gather(struct mds *m)
{
	if (!m->jgather_ms)
		return;
	while (m->jq_head && !m->jq_head->hold && !m->jstop &&
	       m->jq_len < JOURNAL_BATCH && m->jhurry_seq <= m->durable_seq)
		if (pthread_cond_timedwait(&m->jcond, &m->jlock, &m->jq_head->due) == ETIMEDOUT)
			break;
}

static void safe_tell(struct mds *m, struct mds_jent **batch, size_t n, uint64_t seq)
{
	struct mds_safe sf = { seq };

	if (m->drop_safe)
		return;	/* fault injection: the clients keep every request */
	for (size_t i = 0; i < n; i++) {
		struct msg_conn *c = batch[i]->conn;
		bool seen = false;
		if (!c)
			continue;
		for (size_t k = 0; k < i && !seen; k++)
			seen = batch[k]->conn == c;
		if (seen)
			continue;
		struct enc e;
		enc_init(&e);
		mds_safe_encode(&e, &sf);
		struct msg *msg = msg_new(MT_MDS_SAFE, &e);
		enc_free(&e);
		if (msg)
			msg_send(c, msg);	/* a closed client: it resends */
	}
}

static void *journaler_main(void *arg)
{
	struct mds *m = arg;
	struct mds_jent **batch = calloc(JOURNAL_BATCH, sizeof(*batch));

	if (!batch) {
		log_error(SUB, "out of memory starting the journaler; exiting");
		exit(1);
	}
	pthread_mutex_lock(&m->jlock);
	for (;;) {
		while ((!m->jq_head || m->jq_head->hold) && !m->jstop)
			pthread_cond_wait(&m->jcond, &m->jlock);
		if (!m->jq_head || m->jq_head->hold)
			break;	/* stop, and nothing (journalable) left */
		journal_gather(m);
		if (!m->jq_head || m->jq_head->hold)
			continue;
		size_t n = 0;
		bool crash = false;
		while (m->jq_head && n < JOURNAL_BATCH && !m->jq_head->hold) {
			struct mds_jent *j = m->jq_head;
			m->jq_head = j->next;
			if (!m->jq_head)
				m->jq_tail = NULL;
			m->jq_len--;
			batch[n++] = j;
			crash |= j->crash_after;
		}
		pthread_cond_broadcast(&m->jcond);	/* room in the queue */
		pthread_mutex_unlock(&m->jlock);
		if (m->jdelay_ms)
			usleep(m->jdelay_ms * 1000u);	/* fault injection: a slow journal */
		struct enc e;
		int ret = 0;
		enc_init(&e);
		for (size_t i = 0; i < n; i++)
			journal_frame(&e, batch[i]->p.body, batch[i]->p.len, batch[i]->seq);
		ret = journal_write(m, &e);
		if (ret) {
			log_error(SUB, "cannot write the journal (%s); exiting so that a "
				  "restart replays it and the clients resend what it lost",
				  atoll_strerror(ret));
			exit(1);
		}
		if (crash) {
			log_warn(SUB, "fault injection: exiting after journaling entry %" PRIu64
				 " and before applying it", batch[n - 1]->seq);
			_exit(9);
		}
		/* to the applier first: a worker waiting for durable_seq then
		 * drains the applier (a truncate's trim) and finds them queued */
		for (size_t i = 0; i < n; i++) {
			mds_applier_queue(m, &batch[i]->p);
			mds_ans_add(m, batch[i]->client, batch[i]->reqid, batch[i]->res_ino);
		}
		uint64_t last = batch[n - 1]->seq;
		pthread_mutex_lock(&m->jlock);
		m->durable_seq = last;
		__atomic_store_n(&m->pub_durable, last, __ATOMIC_RELEASE);
		m->batches++;
		pthread_cond_broadcast(&m->jcond);
		pthread_mutex_unlock(&m->jlock);
		safe_tell(m, batch, n, last);
		for (size_t i = 0; i < n; i++) {
			msg_conn_put(batch[i]->conn);
			free(batch[i]->p.body);	/* NULL: the applier's now */
			free(batch[i]);
		}
		m->seg_entries += n;
		if (m->seg_entries >= m->seg_max) {
			mds_applier_drain(m);	/* the segment goes: all of it must be applied */
			ret = journal_roll(m);
			if (ret)
				log_warn(SUB, "cannot roll the journal: %s", atoll_strerror(ret));
		}
		pthread_mutex_lock(&m->jlock);
	}
	pthread_mutex_unlock(&m->jlock);
	free(batch);
	return NULL;
}

int mds_journaler_start(struct mds *m)
{
	int ret;

	pthread_mutex_init(&m->jlock, NULL);
	pthread_cond_init(&m->jcond, NULL);
	m->durable_seq = m->seq;
	m->jhurry_seq = m->seq;
	__atomic_store_n(&m->pub_seq, m->seq, __ATOMIC_RELEASE);
	__atomic_store_n(&m->pub_durable, m->seq, __ATOMIC_RELEASE);
	ret = -pthread_create(&m->journaler, NULL, journaler_main, m);
	if (ret == 0)
		m->journaler_on = true;
	else
		m->early = false;
	return ret;
}

void mds_journaler_stop(struct mds *m)
{
	if (!m->journaler_on)
		return;
	pthread_mutex_lock(&m->jlock);
	m->jstop = true;
	pthread_cond_broadcast(&m->jcond);
	pthread_mutex_unlock(&m->jlock);
	pthread_join(m->journaler, NULL);
	m->journaler_on = false;
}

uint64_t mds_durable_seq(struct mds *m)
{
	uint64_t s;

	if (!m->journaler_on)
		return m->seq;
	pthread_mutex_lock(&m->jlock);
	s = m->durable_seq;
	pthread_mutex_unlock(&m->jlock);
	return s;
}

/* Fault injection: does the change being made count towards
 * the fault mds_crash_after_commits (only those of mds_crash_op's op,
 * when set: a test then knows which request the crash follows)? */
static bool crash_counts(const struct mds *m)
{
	return m->crash_after && (!m->crash_op || m->cur_op == m->crash_op);
}

/* Worker: queues t (applied in memory) for the journaler; returns its seq. */
uint64_t mds_journal_queue(struct mds *m, const struct mds_txn *t)
{
	struct mds_jent *j = malloc(sizeof(*j));

	if (!j || mds_txn_pack(t, &j->p)) {
		log_error(SUB, "out of memory queueing a change for the journal; exiting "
			  "(the clients resend what was not journaled)");
		exit(1);
	}
	j->client = t->client;
	j->reqid = t->reqid;
	j->res_ino = t->res_ino;
	j->next = NULL;
	j->conn = m->cur_conn;
	if (j->conn)
		msg_conn_get(j->conn);
	j->crash_after = crash_counts(m) && ++m->commits == m->crash_after;
	j->hold = m->crash_hold && ++m->commits == m->crash_hold;
	if (j->hold) {
		log_warn(SUB, "fault injection: answering this change, then exiting "
			 "before it is journaled");
		m->crash_now = true;
	}
	if (m->jgather_ms)
		j->due = deadline_ms(CLOCK_REALTIME, m->jgather_ms);
	pthread_mutex_lock(&m->jlock);
	/* a bound on what is answered but not journaled (the clients keep it) */
	while (m->jq_len >= 4 * JOURNAL_BATCH)
		pthread_cond_wait(&m->jcond, &m->jlock);
	j->seq = ++m->seq;
	__atomic_store_n(&m->pub_seq, j->seq, __ATOMIC_RELEASE);
	if (m->jq_tail)
		m->jq_tail->next = j;
	else
		m->jq_head = j;
	m->jq_tail = j;
	m->jq_len++;
	/* the journaler waits for a first entry, or gathers until a batch
	 * is full: no wake-up for each entry in between */
	if (m->jq_len == 1 || m->jq_len >= JOURNAL_BATCH || !m->jgather_ms)
		pthread_cond_broadcast(&m->jcond);
	pthread_mutex_unlock(&m->jlock);
	return j->seq;
}

bool mds_journal_room(struct mds *m)
{
	pthread_mutex_lock(&m->jlock);
	bool room = m->jq_len < 4 * JOURNAL_BATCH;
	pthread_mutex_unlock(&m->jlock);
	return room;
}

void mds_journal_hurry(struct mds *m)
{
	if (!m->journaler_on)
		return;
	pthread_mutex_lock(&m->jlock);
	if (m->jhurry_seq < m->seq) {
		m->jhurry_seq = m->seq;
		pthread_cond_broadcast(&m->jcond);
	}
	pthread_mutex_unlock(&m->jlock);
}

void mds_journal_wait(struct mds *m, uint64_t seq)
{
	pthread_mutex_lock(&m->jlock);
	if (m->jhurry_seq < seq) {
		m->jhurry_seq = seq;
		pthread_cond_broadcast(&m->jcond);	/* no gathering for it */
	}
	while (m->durable_seq < seq)
		pthread_cond_wait(&m->jcond, &m->jlock);
	pthread_mutex_unlock(&m->jlock);
}

/* Journals t (no early replies: the worker, before its reply); a
 * failure exits, and so does the fault mds_crash_after_commits. */
void mds_journal_write(struct mds *m, const struct mds_txn *t)
{
	int ret = journal_append(m, t);

	if (ret) {
		log_error(SUB, "cannot write the journal (%s); exiting so that a restart "
			  "replays it", atoll_strerror(ret));
		exit(1);
	}
	if (crash_counts(m) && ++m->commits >= m->crash_after) {
		log_warn(SUB, "fault injection: exiting after journaling entry %" PRIu64
			 " and before applying it", m->seq);
		_exit(9);
	}
}

/* After mds_journal_write and the applier's queueing: one more entry in
 * the segment, which rolls when full. */
void mds_journal_written(struct mds *m)
{
	if (++m->seg_entries >= m->seg_max) {
		mds_applier_drain(m);	/* the segment goes: all of it must be applied */
		int ret = journal_roll(m);
		if (ret)
			log_warn(SUB, "cannot roll the journal: %s", atoll_strerror(ret));
	}
}

/* Replays the segment named by fs.journal.head over the objects. */
static int journal_replay(struct mds *m)
{
	struct atoll_kv_iter *it = NULL;
	struct atoll_kv key = { "seg", 3, NULL, 0 };
	const void *k, *v;
	size_t kl, vl;
	char oid[64], num[17];
	int ret, n = 0;

	m->seg = 1;
	ret = atoll_omap_get(m->meta, "fs.journal.head", &key, 1, &it);
	if (ret == 0 && atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0 && vl == 16) {
		memcpy(num, v, 16);
		num[16] = 0;
		m->seg = strtoull(num, NULL, 16);
	}
	atoll_kv_iter_free(it);
	if (ret && ret != -ENOENT)
		return ret;
	mds_store_oid_seg(oid, sizeof(oid), m->seg);
	uint8_t *buf = NULL;
	size_t got = 0;

	ret = mds_store_read(m, oid, &buf, &got);
	if (ret == -ENOENT)
		goto roll;
	if (ret)
		return ret;
	size_t pos = 0;
	struct mds_txn *t = malloc(sizeof(*t));
	while (t && pos + 16 <= got) {
		uint32_t len, crc;
		uint64_t seq;
		memcpy(&len, buf + pos, 4);
		memcpy(&crc, buf + pos + 4, 4);
		memcpy(&seq, buf + pos + 8, 8);
		if (pos + 16 + len > got ||
		    atoll__crc32c(0, buf + pos + 8, (size_t)len + 8) != crc) {
			log_warn(SUB, "journal segment %" PRIu64 " ends with a torn entry "
				 "at byte %zu (never acknowledged); ignoring it", m->seg, pos);
			break;
		}
		struct dec d;
		dec_init(&d, buf + pos + 16, len);
		if (mds_txn_decode(&d, t) == 0) {
			ret = mds_store_apply(m, t);
			if (t->reqid)
				mds_done_add(m, t->client, t->reqid, 0, t->res_ino, 0);
			mds_ans_add(m, t->client, t->reqid, t->res_ino);
			if (ret) {
				free(t);
				free(buf);
				return ret;
			}
			n++;
		}
		if (seq > m->seq)
			m->seq = seq;
		pos += 16 + len;
	}
	free(t);
	free(buf);
	log_info(SUB, "replayed %d journal entr%s of segment %" PRIu64, n,
		 n == 1 ? "y" : "ies", m->seg);
roll:
	ret = head_set_seg(m, m->seg);
	if (ret)
		return ret;
	return journal_roll(m);
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
	ret = head_set_seg(m, 1);
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
	if (!m->seg_max)
		m->seg_max = MDS_SEG_ENTRIES;
	ret = mds_answered_init(m);
	if (!ret)
		ret = mds_ans_load(m);	/* the requests of the rolled segments */
	if (ret)
		return ret;
	ret = journal_replay(m);
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
	if (m->early && (ret = mds_journaler_start(m)))
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
	if (!m->journaler_on) {
		__atomic_store_n(&m->pub_seq, m->seq, __ATOMIC_RELEASE);
		__atomic_store_n(&m->pub_durable, m->seq, __ATOMIC_RELEASE);
	}
	return 0;
}

void mds_close(struct mds *m)
{
	mds_journaler_stop(m);	/* journals what is queued first */
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
