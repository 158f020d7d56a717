/*
 * quorum.c - the monitors' replicated log: libraft on its own thread and
 * libuv loop, the state machine's callbacks, proposals and read barriers
 * from the monitor thread, and the quorum view (role, leader, term) the
 * rest of mon/ reads.
 *
 * Threads and the lock: the raft thread runs a libuv loop with libraft,
 * its disk I/O (raft_uv, DIR/raft) and the messenger transport
 * (transport.c).  The monitor thread (main.c) handles requests holding
 * mon->lock; it proposes an entry with mon_quorum_propose(), which hands
 * the entry to the raft thread and waits on mon->pcond, releasing the lock
 * meanwhile.  The raft thread takes mon->lock around every state-machine
 * callback (apply, snapshot, restore) and around its updates of the
 * quorum view, never while calling into libraft.  So the state has one
 * owner at a time, and a handler that proposed a change finds the map
 * changed by the apply when mon_quorum_propose() returns.
 *
 * The member file DIR/member ("NAME ID IP:PORT" and the fsid) says who
 * this monitor is; the membership itself is libraft's configuration,
 * whose server addresses are "NAME@IP:PORT".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>
#include <xxhash.h>

#include "encode.h"
#include "log.h"
#include "mon.h"
#include "msg.h"
#include "msg_auth.h"

_Static_assert(RAFT_LEADER == RAFT_LEADER_STATE, "RAFT_LEADER_STATE is RAFT_LEADER");

#define POLL_MS		20	/* how often the quorum view is refreshed */
#define STATUS_POLLS	10	/* members send their status every 10 polls */

enum { PROP_ENTRY = 1, PROP_BARRIER = 2, PROP_ADD, PROP_ASSIGN, PROP_REMOVE, PROP_TRANSFER };

/* A request of the monitor thread for the raft thread. */
struct prop {
	struct prop *next;
	struct mon_quorum *q;		/* set by the raft thread */
	int kind;
	void *buf;			/* PROP_ENTRY: raft_malloc'd entry */
	size_t len;
	bool done;
	int rc;				/* 0 or negative errno */
	int64_t result;			/* what apply answered */
	uint64_t id;			/* membership: the member */
	char address[MONMAP_NAME_MAX + OSDMAP_ADDR_MAX + 2];	/* PROP_ADD */
	int role;			/* PROP_ASSIGN */
	union {
		struct raft_apply apply;
		struct raft_barrier barrier;
		struct raft_change change;
		struct raft_transfer transfer;
	} req;
};

struct mon_quorum {
	struct mon *mon;
	char dir[4096];
	pthread_t thread;
	bool started;
	uv_loop_t loop;
	uv_async_t wake;		/* props queued, or stop */
	uv_timer_t poll;
	struct raft_uv_transport tr;
	struct raft_io io;
	struct raft_fsm fsm;
	struct raft raft;
	char address[160];

	struct prop *pq;		/* under mon->lock */
	bool stop;			/* under mon->lock */
	bool closing;

	/* the raft thread's own view of the last poll */
	uint64_t seen_term;
	raft_id seen_leader;
	int seen_state;
	uint64_t seen_conf;
	unsigned polls;
	struct raft_barrier lbar;	/* the new leader's barrier */
	bool lbar_busy;
};

/* ---- the member file ------------------------------------------------ */

bool mon_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > MONMAP_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

uint64_t mon_member_id(const char *name)
{
	uint64_t h = XXH64(name, strlen(name), 0x61746f6c6cull) & INT64_MAX;

	return h < 256 ? h + 256 : h;
}

static int write_member(const char *dir, const struct mon_member *self,
			const uint8_t fsid[16])
{
	char path[4200], tmp[4210], fs[37];
	FILE *f;

	snprintf(path, sizeof(path), "%s/member", dir);
	snprintf(tmp, sizeof(tmp), "%s/member.tmp", dir);
	mon_uuid_format(fsid, fs);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	/* like everything in the data folder: the owner's alone */
	if (fchmod(fileno(f), 0600) < 0) {
		int e = -errno;

		fclose(f);
		return e;
	}
	fprintf(f, "%s %llu %s %s\n", self->name, (unsigned long long)self->id,
		self->addr, fs);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0) {
		int e = -errno;

		fclose(f);
		return e;
	}
	fclose(f);
	return rename(tmp, path) < 0 ? -errno : 0;
}

int mon_member_load(const char *dir, struct mon_member *self, uint8_t fsid[16],
		    char *err, size_t errlen)
{
	char path[4200], name[64], addr[128], fs[64];
	unsigned long long id;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/member", dir);
	f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "cannot open '%s': %s; make the monitor with: "
			 "atoll-mon --mkfs --data %s --name NAME", path, strerror(errno), dir);
		return -errno;
	}
	n = fscanf(f, "%63s %llu %127s %63s", name, &id, addr, fs);
	fclose(f);
	if (n != 4 || !mon_name_ok(name) || strlen(name) > MONMAP_NAME_MAX || id == 0 ||
	    strlen(addr) > OSDMAP_ADDR_MAX ||
	    mon_uuid_parse(fs, fsid) < 0) {
		snprintf(err, errlen, "'%s' is malformed (want: NAME ID IP:PORT FSID)", path);
		return -EINVAL;
	}
	snprintf(self->name, sizeof(self->name), "%s", name);
	self->id = id;
	snprintf(self->addr, sizeof(self->addr), "%s", addr);
	return 0;
}

/* ---- the state machine callbacks (raft thread) ----------------------- */

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct mon_quorum *q = fsm->data;
	int64_t r;

	pthread_mutex_lock(&q->mon->lock);
	r = mon_state_apply(q->mon, buf->base, buf->len);
	pthread_mutex_unlock(&q->mon->lock);
	*result = (void *)(intptr_t)r;
	return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n)
{
	struct mon_quorum *q = fsm->data;
	struct enc e;
	size_t n_pad;
	void *p;
	int r;

	enc_init(&e);
	pthread_mutex_lock(&q->mon->lock);
	mon_state_encode(q->mon, &e);
	pthread_mutex_unlock(&q->mon->lock);
	r = e.err;
	if (r < 0) {
		enc_free(&e);
		return RAFT_NOMEM;
	}
	*bufs = raft_malloc(sizeof(**bufs));
	n_pad = (e.len + 7) & ~(size_t)7;
	p = raft_malloc(n_pad);
	if (!*bufs || !p) {
		raft_free(*bufs);
		raft_free(p);
		enc_free(&e);
		return RAFT_NOMEM;
	}
	memset(p, 0, n_pad);
	memcpy(p, e.buf, e.len);
	(*bufs)[0].base = p;
	(*bufs)[0].len = n_pad;
	*n = 1;
	log_info("mon", "snapshot of the state taken (%zu bytes)", e.len);
	enc_free(&e);
	return 0;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct mon_quorum *q = fsm->data;
	int r;

	pthread_mutex_lock(&q->mon->lock);
	r = mon_state_restore(q->mon, buf->base, buf->len);
	pthread_mutex_unlock(&q->mon->lock);
	if (r < 0) {
		log_error("mon", "cannot restore a snapshot of the state: %s", strerror(-r));
		return RAFT_MALFORMED;
	}
	raft_free(buf->base);
	return 0;
}

/* ---- proposals (monitor thread side) --------------------------------- */

static int wait_prop(struct mon *mon, struct prop *p)
{
	struct mon_quorum *q = mon->q;

	p->next = NULL;
	{
		struct prop **pp = &q->pq;

		while (*pp)
			pp = &(*pp)->next;
		*pp = p;
	}
	uv_async_send(&q->wake);
	while (!p->done)
		pthread_cond_wait(&mon->pcond, &mon->lock);
	return p->rc;
}

int mon_quorum_propose(struct mon *mon, const void *entry, size_t len, int64_t *result)
{
	struct prop p;
	int r;

	/* raft_uv's log format wants entries padded to 8 bytes; the entry
	 * is one versioned section, so its reader ignores the padding */
	size_t padded = (len + 7) & ~(size_t)7;

	memset(&p, 0, sizeof(p));
	p.kind = PROP_ENTRY;
	p.buf = raft_malloc(padded ? padded : 8);
	if (!p.buf)
		return -ENOMEM;
	memset(p.buf, 0, padded ? padded : 8);
	memcpy(p.buf, entry, len);
	p.len = padded ? padded : 8;
	r = wait_prop(mon, &p);
	if (result)
		*result = p.result;
	return r;
}

int mon_quorum_barrier(struct mon *mon)
{
	struct prop p;

	memset(&p, 0, sizeof(p));
	p.kind = PROP_BARRIER;
	return wait_prop(mon, &p);
}

int mon_quorum_member(struct mon *mon, enum mon_member_op op, uint64_t id,
		      const char *name, const char *addr)
{
	struct prop p;

	memset(&p, 0, sizeof(p));
	p.id = id;
	switch (op) {
	case MON_MEMBER_ADD:
		p.kind = PROP_ADD;
		snprintf(p.address, sizeof(p.address), "%s@%s", name, addr);
		break;
	case MON_MEMBER_STANDBY:
		p.kind = PROP_ASSIGN;
		p.role = RAFT_STANDBY;
		break;
	case MON_MEMBER_PROMOTE:
		p.kind = PROP_ASSIGN;
		p.role = RAFT_VOTER;
		break;
	case MON_MEMBER_REMOVE:
		p.kind = PROP_REMOVE;
		break;
	case MON_MEMBER_TRANSFER:
		p.kind = PROP_TRANSFER;
		break;
	}
	return wait_prop(mon, &p);
}

/* ---- the raft thread -------------------------------------------------- */

static int raft_rc(int status)
{
	switch (status) {
	case 0:
		return 0;
	case RAFT_BADID:
	case RAFT_NOTFOUND:
		return -ENOENT;
	case RAFT_DUPLICATEID:
	case RAFT_DUPLICATEADDRESS:
		return -EEXIST;
	case RAFT_CANTCHANGE:
	case RAFT_BUSY:
		return -EBUSY;
	case RAFT_NOCONNECTION:
		return -ETIMEDOUT;
	case RAFT_BADROLE:
		return -EINVAL;
	case RAFT_NOTLEADER:
	case RAFT_LEADERSHIPLOST:
	case RAFT_CANCELED:
	case RAFT_SHUTDOWN:
		return MON_ENOTLEADER;
	case RAFT_NOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

static void prop_done(struct mon_quorum *q, struct prop *p, int rc, int64_t result)
{
	pthread_mutex_lock(&q->mon->lock);
	p->rc = rc;
	p->result = result;
	p->done = true;
	pthread_cond_broadcast(&q->mon->pcond);
	pthread_mutex_unlock(&q->mon->lock);
}

static void on_applied(struct raft_apply *req, int status, void *result)
{
	struct prop *p = req->data;

	prop_done(p->q, p, raft_rc(status), status ? 0 : (int64_t)(intptr_t)result);
}

static void on_barrier(struct raft_barrier *req, int status)
{
	struct prop *p = req->data;

	prop_done(p->q, p, raft_rc(status), 0);
}

static void fill_members(struct mon_quorum *q, struct mon_qview *v);

static void on_change(struct raft_change *req, int status)
{
	struct prop *p = req->data;

	/* the command answers from the quorum view: make it show the
	 * change before it returns, not at the next poll */
	pthread_mutex_lock(&p->q->mon->lock);
	fill_members(p->q, &p->q->mon->qv);
	p->q->mon->qv.conf_index = p->q->raft.configuration_index;
	p->q->mon->qv.changed = true;
	pthread_mutex_unlock(&p->q->mon->lock);
	prop_done(p->q, p, raft_rc(status), 0);
}

static void on_transfer(struct raft_transfer *req)
{
	struct prop *p = req->data;

	prop_done(p->q, p, 0, 0);
}

/* Starts a membership change or a transfer: 0 or a raft error code. */
static int start_member_prop(struct mon_quorum *q, struct prop *p)
{
	switch (p->kind) {
	case PROP_ADD:
		p->req.change.data = p;
		return raft_add(&q->raft, &p->req.change, p->id, p->address, on_change);
	case PROP_ASSIGN:
		p->req.change.data = p;
		return raft_assign(&q->raft, &p->req.change, p->id, p->role, on_change);
	case PROP_REMOVE:
		p->req.change.data = p;
		return raft_remove(&q->raft, &p->req.change, p->id, on_change);
	default:
		p->req.transfer.data = p;
		return raft_transfer(&q->raft, &p->req.transfer, p->id, on_transfer);
	}
}

static void run_props(struct mon_quorum *q)
{
	struct prop *p, *next;

	pthread_mutex_lock(&q->mon->lock);
	p = q->pq;
	q->pq = NULL;
	pthread_mutex_unlock(&q->mon->lock);
	for (; p; p = next) {
		int r;

		next = p->next;
		p->next = NULL;
		p->q = q;
		if (q->closing) {
			if (p->kind == PROP_ENTRY)
				raft_free(p->buf);
			prop_done(q, p, MON_ENOTLEADER, 0);
			continue;
		}
		if (p->kind == PROP_ENTRY) {
			struct raft_buffer b = { .base = p->buf, .len = p->len };

			p->req.apply.data = p;
			p->buf = NULL;		/* raft's once raft_apply took it */
			r = raft_apply(&q->raft, &p->req.apply, &b, 1, on_applied);
			if (r != 0) {
				raft_free(b.base);
				prop_done(q, p, raft_rc(r), 0);
			}
		} else if (p->kind == PROP_BARRIER) {
			p->req.barrier.data = p;
			r = raft_barrier(&q->raft, &p->req.barrier, on_barrier);
			if (r != 0)
				prop_done(q, p, raft_rc(r), 0);
		} else {
			r = start_member_prop(q, p);
			if (r != 0)
				prop_done(q, p, raft_rc(r), 0);
		}
	}
}

static void raft_closed(struct raft *r)
{
	struct mon_quorum *q = r->data;

	uv_close((uv_handle_t *)&q->wake, NULL);
}

static void on_wake(uv_async_t *a)
{
	struct mon_quorum *q = a->data;
	bool stop;

	run_props(q);
	pthread_mutex_lock(&q->mon->lock);
	stop = q->stop;
	pthread_mutex_unlock(&q->mon->lock);
	if (stop && !q->closing) {
		q->closing = true;
		uv_timer_stop(&q->poll);
		uv_close((uv_handle_t *)&q->poll, NULL);
		raft_close(&q->raft, raft_closed);
		run_props(q);
	}
}

/* The new leader's first barrier: once it is through, everything of
 * earlier terms is applied, and the leader may serve. */
static void on_leader_barrier(struct raft_barrier *req, int status)
{
	struct mon_quorum *q = req->data;
	struct mon *mon = q->mon;

	q->lbar_busy = false;
	pthread_mutex_lock(&mon->lock);
	if (status == 0 && raft_state(&q->raft) == RAFT_LEADER &&
	    q->raft.current_term == mon->qv.term) {
		mon->qv.ready = true;
		mon->qv.won_ms = mono_now_ms();
		mon->qv.changed = true;
		log_info("mon", "leader of term %llu, serving",
			 (unsigned long long)mon->qv.term);
	}
	pthread_mutex_unlock(&mon->lock);
	mon_wake(mon);
}

static void fill_members(struct mon_quorum *q, struct mon_qview *v)
{
	const struct raft_configuration *c = &q->raft.configuration;

	v->nmembers = 0;
	for (unsigned i = 0; i < c->n && v->nmembers < MONMAP_MONS_MAX; i++) {
		const struct raft_server *s = &c->servers[i];
		struct mon_qmember *m = &v->members[v->nmembers++];
		const char *at = strchr(s->address, '@');
		size_t nl = at ? (size_t)(at - s->address) : 0;

		memset(m, 0, sizeof(*m));
		if (nl > MONMAP_NAME_MAX)
			nl = MONMAP_NAME_MAX;
		memcpy(m->name, s->address, nl);
		snprintf(m->addr, sizeof(m->addr), "%s", at ? at + 1 : s->address);
		m->id = s->id;
		m->voter = s->role == RAFT_VOTER;
		if (raft_state(&q->raft) == RAFT_LEADER && q->raft.leader_state.progress)
			m->match = q->raft.leader_state.progress[i].match_index;
		if (s->id == q->raft.id)
			m->match = q->raft.last_stored;
		for (unsigned k = 0; k < MONMAP_MONS_MAX; k++) {
			if (q->mon->mstat[k].id != s->id)
				continue;
			m->applied = q->mon->mstat[k].applied;
			m->epoch = q->mon->mstat[k].epoch;
			m->digest = q->mon->mstat[k].digest;
			m->status_ms = q->mon->mstat[k].ms;
		}
	}
}

bool mon_quorum_in_contact(struct mon *mon, uint64_t now_ms)
{
	const struct mon_qview *v = &mon->qv;
	unsigned voters = 0, heard = 0;

	for (uint32_t i = 0; i < v->nmembers; i++) {
		const struct mon_qmember *m = &v->members[i];

		if (!m->voter)
			continue;
		voters++;
		if (m->id == mon->self.id ||
		    (m->status_ms && now_ms - m->status_ms <= mon->opts.election_ms))
			heard++;
	}
	return voters > 0 && heard > voters / 2;
}

void mon_quorum_peer_status(struct mon *mon, uint64_t id, uint64_t applied,
			    uint64_t epoch, uint64_t digest, uint64_t wall_ms)
{
	unsigned k, free_k = MONMAP_MONS_MAX;

	pthread_mutex_lock(&mon->lock);
	for (k = 0; k < MONMAP_MONS_MAX; k++) {
		if (mon->mstat[k].id == id)
			break;
		if (!mon->mstat[k].id && free_k == MONMAP_MONS_MAX)
			free_k = k;
	}
	if (k == MONMAP_MONS_MAX)
		k = free_k;
	if (k < MONMAP_MONS_MAX) {
		mon->mstat[k].id = id;
		mon->mstat[k].applied = applied;
		mon->mstat[k].epoch = epoch;
		mon->mstat[k].digest = digest;
		mon->mstat[k].ms = mono_now_ms();
	}
	for (uint32_t i = 0; id != mon->self.id && i < mon->qv.nmembers; i++) {
		if (mon->qv.members[i].id == id) {
			char who[MONMAP_NAME_MAX + 8];

			snprintf(who, sizeof(who), "mon.%s", mon->qv.members[i].name);
			mon_clock_note(mon, who, wall_ms);
		}
	}
	pthread_mutex_unlock(&mon->lock);
}

/* Every member tells the leader what it applied and its digest (for
 * quorum status); the leader records its own. */
static void send_status(struct mon_quorum *q, raft_id lid, const char *laddr)
{
	struct mon *mon = q->mon;
	uint64_t applied, epoch, digest;

	pthread_mutex_lock(&mon->lock);
	if (mon->digest_epoch != mon->map->epoch || !mon->digest) {
		mon->digest = mon_state_digest(mon);
		mon->digest_epoch = mon->map->epoch;
	}
	applied = q->raft.last_applied;
	epoch = mon->map->epoch;
	digest = mon->digest;
	pthread_mutex_unlock(&mon->lock);
	if (lid == q->raft.id)
		mon_quorum_peer_status(mon, lid, applied, epoch, digest, 0);
	else if (lid && laddr)
		mon_rt_status(&q->tr, laddr, q->raft.id, applied, epoch, digest,
			      msg_auth_wall_ms(mon->msg_auth));
}

static void on_poll(uv_timer_t *t)
{
	struct mon_quorum *q = t->data;
	struct mon *mon = q->mon;
	struct raft *r = &q->raft;
	raft_id lid = 0;
	const char *laddr = NULL;
	int st = raft_state(r);
	bool wake = false, want_barrier = false;
	uint64_t now = mono_now_ms();

	raft_leader(r, &lid, &laddr);
	pthread_mutex_lock(&mon->lock);
	if (st != q->seen_state || lid != q->seen_leader || r->current_term != q->seen_term ||
	    r->configuration_index != q->seen_conf) {
		if (st != RAFT_LEADER || r->current_term != mon->qv.term) {
			if (mon->qv.ready)
				log_info("mon", "no longer the leader (term %llu)",
					 (unsigned long long)r->current_term);
			mon->qv.ready = false;
		}
		if (st == RAFT_LEADER && (q->seen_state != RAFT_LEADER ||
					  r->current_term != q->seen_term))
			want_barrier = true;
		if (lid != q->seen_leader)
			log_info("mon", "leader is now %s (term %llu)",
				 laddr ? laddr : "unknown", (unsigned long long)r->current_term);
		q->seen_state = st;
		q->seen_leader = lid;
		q->seen_term = r->current_term;
		q->seen_conf = r->configuration_index;
		mon->qv.changed = true;
		wake = true;
	}
	mon->qv.role = st;
	mon->qv.leader_id = lid;
	mon->qv.term = r->current_term;
	mon->qv.commit_index = r->commit_index;
	mon->qv.applied_index = r->last_applied;
	mon->qv.conf_index = r->configuration_index;
	if (lid)
		mon->qv.leader_seen_ms = now;
	fill_members(q, &mon->qv);
	pthread_mutex_unlock(&mon->lock);
	{
		const char *addrs[MONMAP_MONS_MAX];
		unsigned n = 0;

		for (unsigned i = 0; i < r->configuration.n && n < MONMAP_MONS_MAX; i++)
			addrs[n++] = r->configuration.servers[i].address;
		mon_rt_tick(&q->tr, addrs, n);
	}
	if (++q->polls % STATUS_POLLS == 0 || wake)
		send_status(q, lid, laddr);
	if (want_barrier && !q->lbar_busy) {
		q->lbar.data = q;
		if (raft_barrier(r, &q->lbar, on_leader_barrier) == 0)
			q->lbar_busy = true;
	}
	if (wake)
		mon_wake(mon);
}

static void *raft_main(void *arg)
{
	struct mon_quorum *q = arg;

	uv_run(&q->loop, UV_RUN_DEFAULT);
	return NULL;
}

static int make_dir(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Sets up libraft on q->loop (no thread yet). */
static int quorum_init(struct mon_quorum *q, struct msgr *msgr, const struct mon_member *self,
		       char *err, size_t errlen)
{
	char rdir[4200];
	int r;

	snprintf(rdir, sizeof(rdir), "%s/raft", q->dir);
	r = make_dir(rdir);
	if (r < 0) {
		snprintf(err, errlen, "cannot make '%s': %s", rdir, strerror(-r));
		return r;
	}
	snprintf(q->address, sizeof(q->address), "%s@%s", self->name, self->addr);
	uv_loop_init(&q->loop);
	r = mon_rt_create(&q->tr, &q->loop, msgr, q->mon);
	if (r < 0) {
		snprintf(err, errlen, "out of memory");
		return r;
	}
	r = raft_uv_init(&q->io, &q->loop, rdir, &q->tr);
	if (r != 0) {
		snprintf(err, errlen, "cannot open the raft log in '%s': %s", rdir,
			 q->io.errmsg[0] ? q->io.errmsg : raft_strerror(r));
		return -EIO;
	}
	q->fsm.version = 1;
	q->fsm.data = q;
	q->fsm.apply = fsm_apply;
	q->fsm.snapshot = fsm_snapshot;
	q->fsm.restore = fsm_restore;
	r = raft_init(&q->raft, &q->io, &q->fsm, self->id, q->address);
	if (r != 0) {
		snprintf(err, errlen, "cannot start raft: %s", raft_strerror(r));
		return -EIO;
	}
	q->raft.data = q;
	return 0;
}

static void close_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void mkfs_closed(struct raft *r)
{
	(void)r;
}

static void remove_raft_dir(const char *dir)
{
	char path[4200], f[4500];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/raft", dir);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
			unlink(f);
		}
	closedir(d);
	rmdir(path);
}

/* A raft instance on dir with no monitor and no thread, for the offline
 * steps (mkfs, recover); *q is calloc'd (free it), also on error. */
static int offline_open(const char *dir, const struct mon_member *self,
			struct mon_quorum **qp, char *err, size_t errlen)
{
	struct mon_quorum *q = calloc(1, sizeof(*q));

	*qp = q;
	if (!q) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(q->dir, sizeof(q->dir), "%s", dir);
	return quorum_init(q, NULL, self, err, errlen);
}

/* Closes what offline_open made (running the loop until it is). */
static void offline_close(struct mon_quorum *q)
{
	raft_close(&q->raft, mkfs_closed);
	uv_run(&q->loop, UV_RUN_DEFAULT);
	uv_walk(&q->loop, close_walk, NULL);
	uv_run(&q->loop, UV_RUN_DEFAULT);
	raft_uv_close(&q->io);
	mon_rt_destroy(&q->tr);
	uv_loop_close(&q->loop);
}

int mon_quorum_mkfs(const char *dir, const struct mon_member *self,
		    const struct mon_member *all, unsigned n, const uint8_t fsid[16],
		    char *err, size_t errlen)
{
	struct mon_quorum *q;
	struct raft_configuration conf;
	char a[160];
	int r;

	r = offline_open(dir, self, &q, err, errlen);
	if (r < 0)
		goto out;
	raft_configuration_init(&conf);
	/* n == 0: a member joining a running quorum (mon add) starts with an
	 * empty log and learns the membership from the leader */
	for (unsigned i = 0; i < n && r == 0; i++) {
		snprintf(a, sizeof(a), "%s@%s", all[i].name, all[i].addr);
		if (raft_configuration_add(&conf, all[i].id, a, RAFT_VOTER) != 0)
			r = -EINVAL;
	}
	if (r == 0 && n > 0 && raft_bootstrap(&q->raft, &conf) != 0) {
		snprintf(err, errlen, "cannot write the first raft configuration in "
			 "'%s/raft': %s", dir, q->raft.errmsg);
		r = -EIO;
	}
	raft_configuration_close(&conf);
	offline_close(q);
	if (r == 0) {
		r = write_member(dir, self, fsid);
		if (r < 0)
			snprintf(err, errlen, "cannot write '%s/member': %s", dir, strerror(-r));
	}
out:
	if (r < 0)
		remove_raft_dir(dir);	/* never half a member behind */
	free(q);
	return r;
}

int mon_quorum_recover(const char *dir, const struct mon_member *self, char *err,
		       size_t errlen)
{
	struct mon_quorum *q;
	struct raft_configuration conf;
	char a[160];
	int r;

	r = offline_open(dir, self, &q, err, errlen);
	if (r < 0)
		goto out;
	raft_configuration_init(&conf);
	snprintf(a, sizeof(a), "%s@%s", self->name, self->addr);
	if (raft_configuration_add(&conf, self->id, a, RAFT_VOTER) != 0)
		r = -EINVAL;
	/* appends the new configuration to the log kept on disk: the state
	 * and the log stay as they are */
	if (r == 0 && raft_recover(&q->raft, &conf) != 0) {
		snprintf(err, errlen, "cannot write the new raft configuration in "
			 "'%s/raft': %s", dir, q->raft.errmsg);
		r = -EIO;
	}
	raft_configuration_close(&conf);
	offline_close(q);
out:
	free(q);
	return r;
}

bool mon_quorum_knows(struct mon *mon, uint64_t id)
{
	const struct raft_configuration *c;

	if (!mon->q)
		return true;
	c = &mon->q->raft.configuration;
	if (c->n == 0)
		return true;
	for (unsigned i = 0; i < c->n; i++)
		if (c->servers[i].id == id)
			return true;
	return false;
}

int mon_quorum_start(struct mon *mon, const char *dir, char *err, size_t errlen)
{
	struct mon_quorum *q = calloc(1, sizeof(*q));
	int r;

	if (!q) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	q->mon = mon;
	mon->q = q;
	snprintf(q->dir, sizeof(q->dir), "%s", dir);
	r = quorum_init(q, mon->msgr, &mon->self, err, errlen);
	if (r < 0)
		return r;
	raft_set_election_timeout(&q->raft, (unsigned)mon->opts.election_ms);
	raft_set_heartbeat_timeout(&q->raft, (unsigned)(mon->opts.election_ms / 10 ?
							 mon->opts.election_ms / 10 : 1));
	raft_set_pre_vote(&q->raft, true);
	/* a snapshot sent to a member that was down (the send fails) is sent
	 * again after this; libraft's default of 30 s leaves a restarted
	 * member behind that long */
	raft_set_install_snapshot_timeout(&q->raft, (unsigned)(5 * mon->opts.election_ms));
	raft_set_snapshot_threshold(&q->raft, mon->opts.snapshot_threshold);
	raft_set_snapshot_trailing(&q->raft, mon->opts.snapshot_threshold / 2 ?
				   mon->opts.snapshot_threshold / 2 : 1);
	uv_async_init(&q->loop, &q->wake, on_wake);
	q->wake.data = q;
	uv_timer_init(&q->loop, &q->poll);
	q->poll.data = q;
	q->seen_state = -1;
	/* raft_start restores the last snapshot and replays the log into
	 * the state machine: under the lock like every callback */
	r = raft_start(&q->raft);
	if (r != 0) {
		snprintf(err, errlen, "cannot start raft in '%s/raft': %s", dir,
			 q->raft.errmsg[0] ? q->raft.errmsg : raft_strerror(r));
		return -EIO;
	}
	uv_timer_start(&q->poll, on_poll, POLL_MS, POLL_MS);
	r = pthread_create(&q->thread, NULL, raft_main, q);
	if (r != 0) {
		snprintf(err, errlen, "cannot start the raft thread: %s", strerror(r));
		return -r;
	}
	q->started = true;
	return 0;
}

/* Stops raft (closing the log) and joins its thread; monitor thread,
 * without the lock. */
void mon_quorum_stop(struct mon *mon)
{
	struct mon_quorum *q = mon->q;

	if (!q)
		return;
	if (q->started) {
		pthread_mutex_lock(&mon->lock);
		q->stop = true;
		pthread_mutex_unlock(&mon->lock);
		uv_async_send(&q->wake);
		pthread_join(q->thread, NULL);
		uv_walk(&q->loop, close_walk, NULL);
		uv_run(&q->loop, UV_RUN_DEFAULT);
		raft_uv_close(&q->io);
		mon_rt_destroy(&q->tr);
		uv_loop_close(&q->loop);
	}
	free(q);
	mon->q = NULL;
}

