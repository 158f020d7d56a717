/*
 * mds_journal.c - the MDS's journal: every change, one entry, appended to
 * the current segment object (fs.journal.SEG, named by fs.journal.head)
 * before the objects change, replayed over them at start.  An entry is
 * framed as length, crc32c of sequence number and body, sequence number,
 * body (mds_txn_pack's encoding); a torn entry ends a replay.  A segment
 * rolls after seg_max entries: fs.answered is written, the head moves on,
 * the old segment (all of it applied) goes.
 *
 * With early replies the journaler thread below appends what the worker
 * queued (group commit) behind the replies; without, the worker appends
 * each change itself (mds_journal_write).
 *
 * Lock order: m->lock (the worker, which queues) before journal.lock;
 * journal.lock before nothing else: the journaler drops it before it
 * writes, hands entries to the applier (applier.lock) or notes them in
 * the answered index (ans_lock).  journal.lock protects the queue, its
 * length, durable_seq, hurry_seq and stop; journal.cond signals a change
 * of any of them (both ways).  seq is the worker's (it numbers entries
 * under journal.lock); seg, seg_entries and seg_bytes belong to whoever
 * journals (the journaler, or the worker with early replies off).
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atoll/atoll.h>

#include "encode.h"
#include "log.h"
#include "msg.h"

#define SUB "mds"

int mds_journal_set_head(struct mds *m, uint64_t seg)
{
	char v[17];

	snprintf(v, sizeof(v), "%016" PRIx64, seg);
	struct atoll_kv kv = { "seg", 3, v, 16 };
	return atoll_omap_set(m->meta, "fs.journal.head", &kv, 1, 0);
}

static int journal_roll(struct mds *m)
{
	char oid[64];
	/* the index first: the requests of the segment that goes stay known */
	int ret = mds_ans_store(m);

	if (ret)
		return ret;
	ret = mds_journal_set_head(m, m->journal.seg + 1);

	if (ret)
		return ret;
	mds_store_oid_seg(oid, sizeof(oid), m->journal.seg);
	atoll_remove(m->meta, oid, 0);	/* every entry in it is applied */
	m->journal.seg++;
	__atomic_store_n(&m->journal.pub_seg, m->journal.seg, __ATOMIC_RELEASE);
	m->journal.seg_entries = 0;
	m->journal.seg_bytes = 0;
	return 0;
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
	mds_store_oid_seg(oid, sizeof(oid), m->journal.seg);
	ret = atoll_append(m->meta, oid, buf, len, 0);
	if (ret == 0)
		m->journal.seg_bytes += len;
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
	mds_journal_frame(&e, p.body, p.len, ++m->journal.seq);
	free(p.body);
	ret = journal_write(m, &e);
	if (ret == 0) {
		mds_ans_add(m, t->client, t->reqid, t->res_ino);
		__atomic_store_n(&m->journal.pub_seq, m->journal.seq, __ATOMIC_RELEASE);
		__atomic_store_n(&m->journal.pub_durable, m->journal.seq, __ATOMIC_RELEASE);
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

/* Under journal.lock, something journalable queued: waits while the oldest
 * entry is younger than gather_ms, nobody waits for durability
 * (hurry_seq), the batch is not full and the MDS does not stop.  A
 * client making its changes one at a time (rm -rf, touch, mkdir) sent
 * one or two per append: on a 2-CPU machine the three OSDs' work for
 * each append (a replicated write, fdatasync) took the CPU the next
 * request needed.  The requester had its reply already (early replies);
 * what the gathering delays is MT_MDS_SAFE, and an fsync hurries it.
 * 10 ms, not 2: a third less wall time and half the OSDs' CPU for
 * 10,000 creates (doc/fs-design.md, "Gathering"); 25 or 50 ms gained
 * little. */
static void journal_gather(struct mds *m)
{
	if (!m->journal.gather_ms)
		return;
	while (m->journal.head && !m->journal.head->hold && !m->journal.stop &&
	       m->journal.len < JOURNAL_BATCH && m->journal.hurry_seq <= m->journal.durable_seq)
		if (pthread_cond_timedwait(&m->journal.cond, &m->journal.lock,
					   &m->journal.head->due) == ETIMEDOUT)
			break;
}

static void safe_tell(struct mds *m, struct mds_jent **batch, size_t n, uint64_t seq)
{
	struct mds_safe sf = { seq };

	if (m->journal.drop_safe)
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
	pthread_mutex_lock(&m->journal.lock);
	for (;;) {
		while ((!m->journal.head || m->journal.head->hold) && !m->journal.stop)
			pthread_cond_wait(&m->journal.cond, &m->journal.lock);
		if (!m->journal.head || m->journal.head->hold)
			break;	/* stop, and nothing (journalable) left */
		journal_gather(m);
		if (!m->journal.head || m->journal.head->hold)
			continue;
		size_t n = 0;
		bool crash = false;
		while (m->journal.head && n < JOURNAL_BATCH && !m->journal.head->hold) {
			struct mds_jent *j = m->journal.head;
			m->journal.head = j->next;
			if (!m->journal.head)
				m->journal.tail = NULL;
			m->journal.len--;
			batch[n++] = j;
			crash |= j->crash_after;
		}
		pthread_cond_broadcast(&m->journal.cond);	/* room in the queue */
		pthread_mutex_unlock(&m->journal.lock);
		if (m->journal.delay_ms)
			usleep(m->journal.delay_ms * 1000u);	/* fault: a slow journal */
		struct enc e;
		int ret = 0;
		enc_init(&e);
		for (size_t i = 0; i < n; i++)
			mds_journal_frame(&e, batch[i]->p.body, batch[i]->p.len, batch[i]->seq);
		ret = journal_write(m, &e);
		if (ret == -EPERM)
			mds_role_fenced("an OSD refused a journal write (blocklisted)");
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
		pthread_mutex_lock(&m->journal.lock);
		m->journal.durable_seq = last;
		__atomic_store_n(&m->journal.pub_durable, last, __ATOMIC_RELEASE);
		m->journal.batches++;
		pthread_cond_broadcast(&m->journal.cond);
		pthread_mutex_unlock(&m->journal.lock);
		safe_tell(m, batch, n, last);
		for (size_t i = 0; i < n; i++) {
			msg_conn_put(batch[i]->conn);
			free(batch[i]->p.body);	/* NULL: the applier's now */
			free(batch[i]);
		}
		m->journal.seg_entries += n;
		if (m->journal.seg_entries >= m->journal.seg_max) {
			mds_applier_drain(m);	/* the segment goes: all of it applied first */
			ret = journal_roll(m);
			if (ret)
				log_warn(SUB, "cannot roll the journal: %s", atoll_strerror(ret));
		}
		pthread_mutex_lock(&m->journal.lock);
	}
	pthread_mutex_unlock(&m->journal.lock);
	free(batch);
	return NULL;
}

int mds_journal_start(struct mds *m)
{
	int ret;

	pthread_mutex_init(&m->journal.lock, NULL);
	pthread_cond_init(&m->journal.cond, NULL);
	m->journal.durable_seq = m->journal.seq;
	m->journal.hurry_seq = m->journal.seq;
	__atomic_store_n(&m->journal.pub_seq, m->journal.seq, __ATOMIC_RELEASE);
	__atomic_store_n(&m->journal.pub_durable, m->journal.seq, __ATOMIC_RELEASE);
	ret = -pthread_create(&m->journal.thread, NULL, journaler_main, m);
	if (ret == 0)
		m->journal.on = true;
	else
		m->journal.early = false;
	return ret;
}

void mds_journal_stop(struct mds *m)
{
	if (!m->journal.on)
		return;
	pthread_mutex_lock(&m->journal.lock);
	m->journal.stop = true;
	pthread_cond_broadcast(&m->journal.cond);
	pthread_mutex_unlock(&m->journal.lock);
	pthread_join(m->journal.thread, NULL);
	m->journal.on = false;
}

uint64_t mds_journal_durable_seq(struct mds *m)
{
	uint64_t s;

	if (!m->journal.on)
		return m->journal.seq;
	pthread_mutex_lock(&m->journal.lock);
	s = m->journal.durable_seq;
	pthread_mutex_unlock(&m->journal.lock);
	return s;
}

/* Fault injection: does the change being made count towards
 * the fault mds_crash_after_commits (only those of mds_crash_op's op,
 * when set: a test then knows which request the crash follows)? */
static bool crash_counts(const struct mds *m)
{
	return m->journal.crash_after && (!m->journal.crash_op || m->cur_op == m->journal.crash_op);
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
	j->crash_after = crash_counts(m) && ++m->journal.commits == m->journal.crash_after;
	j->hold = m->journal.crash_hold && ++m->journal.commits == m->journal.crash_hold;
	if (j->hold) {
		log_warn(SUB, "fault injection: answering this change, then exiting "
			 "before it is journaled");
		m->crash_now = true;
	}
	if (m->journal.gather_ms)
		j->due = deadline_ms(CLOCK_REALTIME, m->journal.gather_ms);
	pthread_mutex_lock(&m->journal.lock);
	/* a bound on what is answered but not journaled (the clients keep it) */
	while (m->journal.len >= 4 * JOURNAL_BATCH)
		pthread_cond_wait(&m->journal.cond, &m->journal.lock);
	j->seq = ++m->journal.seq;
	__atomic_store_n(&m->journal.pub_seq, j->seq, __ATOMIC_RELEASE);
	if (m->journal.tail)
		m->journal.tail->next = j;
	else
		m->journal.head = j;
	m->journal.tail = j;
	m->journal.len++;
	/* the journaler waits for a first entry, or gathers until a batch
	 * is full: no wake-up for each entry in between */
	if (m->journal.len == 1 || m->journal.len >= JOURNAL_BATCH || !m->journal.gather_ms)
		pthread_cond_broadcast(&m->journal.cond);
	pthread_mutex_unlock(&m->journal.lock);
	return j->seq;
}

bool mds_journal_room(struct mds *m)
{
	pthread_mutex_lock(&m->journal.lock);
	bool room = m->journal.len < 4 * JOURNAL_BATCH;
	pthread_mutex_unlock(&m->journal.lock);
	return room;
}

void mds_journal_hurry(struct mds *m)
{
	if (!m->journal.on)
		return;
	pthread_mutex_lock(&m->journal.lock);
	if (m->journal.hurry_seq < m->journal.seq) {
		m->journal.hurry_seq = m->journal.seq;
		pthread_cond_broadcast(&m->journal.cond);
	}
	pthread_mutex_unlock(&m->journal.lock);
}

void mds_journal_wait(struct mds *m, uint64_t seq)
{
	pthread_mutex_lock(&m->journal.lock);
	if (m->journal.hurry_seq < seq) {
		m->journal.hurry_seq = seq;
		pthread_cond_broadcast(&m->journal.cond);	/* no gathering for it */
	}
	while (m->journal.durable_seq < seq)
		pthread_cond_wait(&m->journal.cond, &m->journal.lock);
	pthread_mutex_unlock(&m->journal.lock);
}

/* Journals t (no early replies: the worker, before its reply); a
 * failure exits, and so does the fault mds_crash_after_commits. */
void mds_journal_write(struct mds *m, const struct mds_txn *t)
{
	int ret = journal_append(m, t);

	if (ret == -EPERM)
		mds_role_fenced("an OSD refused a journal write (blocklisted)");
	if (ret) {
		log_error(SUB, "cannot write the journal (%s); exiting so that a restart "
			  "replays it", atoll_strerror(ret));
		exit(1);
	}
	if (crash_counts(m) && ++m->journal.commits >= m->journal.crash_after) {
		log_warn(SUB, "fault injection: exiting after journaling entry %" PRIu64
			 " and before applying it", m->journal.seq);
		_exit(9);
	}
}

/* After mds_journal_write and the applier's queueing: one more entry in
 * the segment, which rolls when full. */
void mds_journal_written(struct mds *m)
{
	if (++m->journal.seg_entries >= m->journal.seg_max) {
		mds_applier_drain(m);	/* the segment goes: all of it must be applied */
		int ret = journal_roll(m);
		if (ret)
			log_warn(SUB, "cannot roll the journal: %s", atoll_strerror(ret));
	}
}

/* Writes every entry of m->follow (the current segment, in journal
 * order) to the objects, REPLAY_BATCH at a time: each (object, key) once
 * with its last value, all in flight at once, as the applier writes a
 * round (a full segment is a few round trips, not one per entry). */
#define REPLAY_BATCH 64u

static int replay_apply(struct mds *m)
{
	struct mds_follow *f = &m->follow;
	struct mds_txn **ts = calloc(REPLAY_BATCH, sizeof(*ts));
	const struct mds_txn *cts[REPLAY_BATCH];
	struct mds_store_buf kb = { .u = NULL };
	int ret = ts ? 0 : -ENOMEM;

	for (size_t i = 0; i < f->n && !ret; i += REPLAY_BATCH) {
		size_t nt = 0;
		for (size_t k = i; k < f->n && k < i + REPLAY_BATCH && !ret; k++) {
			if (!ts[nt] && !(ts[nt] = malloc(sizeof(*ts[nt]))))
				ret = -ENOMEM;
			else if (mds_txn_unpack(&f->ents[k].p, ts[nt]))
				ret = -EBADMSG;	/* it decoded when it was read */
			else
				cts[nt] = ts[nt], nt++;
		}
		if (!ret)
			ret = mds_store_apply_omap(m, cts, nt, &kb);
		struct mds_rm_batch rb = { .n = 0 };
		for (size_t k = 0; k < nt && !ret; k++)
			ret = mds_store_apply_rest(m, cts[k], &rb);
		int rret = mds_rm_batch_wait(&rb);
		ret = ret ? ret : rret;
	}
	for (size_t k = 0; ts && k < REPLAY_BATCH; k++)
		free(ts[k]);
	free(ts);
	mds_store_buf_free(&kb);
	return ret;
}

/* Replays the segment named by fs.journal.head over the objects: what a
 * standby followed of it is in memory already (m->follow), the rest is
 * read now; then every entry is written to the objects and the segment
 * rolls (a torn entry at its end is never appended to). */
int mds_journal_replay(struct mds *m)
{
	struct mds_follow *f = &m->follow;
	size_t tail = 0;
	int ret;

	ret = mds_follow_head(m, &m->journal.seg);
	if (ret)
		return ret;
	ret = mds_follow_finish(m, m->journal.seg, &tail);
	if (ret)
		return ret;
	size_t followed = f->n - tail;	/* read before the start (as a standby) */
	ret = replay_apply(m);
	if (ret)
		return ret;
	for (size_t i = 0; i < f->n; i++) {
		const struct mds_fent *e = &f->ents[i];
		if (e->reqid)
			mds_done_add(m, e->client, e->reqid, 0, e->res_ino, 0);
		mds_ans_add(m, e->client, e->reqid, e->res_ino);
	}
	if (f->seq > m->journal.seq)
		m->journal.seq = f->seq;
	/* the cache built while following (pinned so far) is in the objects */
	__atomic_store_n(&m->applier.applied_aseq, m->aseq, __ATOMIC_RELEASE);
	log_info(SUB, "replayed %zu journal entr%s of segment %" PRIu64 ": %zu followed as a "
		 "standby, %zu read at the start", f->n, f->n == 1 ? "y" : "ies",
		 m->journal.seg, followed, tail);
	mds_follow_free(m);
	f->on = false;
	ret = mds_journal_set_head(m, m->journal.seg);
	if (ret)
		return ret;
	return journal_roll(m);
}
