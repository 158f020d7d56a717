/*
 * mds_lease.c - the leases atoll-mds hands its clients, so that a client
 * answers from its cache what has not changed, and their revocation
 * before a change (doc/fs-design-client.md, "Leases").
 *
 * Two kinds, both per (client, inode), for mds_lease_ms (30 s default):
 * an attribute lease (the inode's record may be cached) and a directory
 * lease (the directory's entries may be cached: a full listing, or the
 * names the kernel has looked up).  Replies grant them; a change that
 * one covers is answered only after every other holder acked a revoke
 * (MT_MDS_NOTIFY) or its lease ran out, so a dead or stuck client holds
 * the others up for the lease time at most.  The requester gets the same
 * change list in its reply and fixes its own cache.
 *
 * The table is bounded (mds_lease_max records): when full, replies grant
 * nothing, and the client caches nothing (it asks the MDS each time).
 * Expired records and those of closed connections are swept once per
 * lease time.
 *
 * A directory lease may be exclusive (L_EXCL, for a client that asks:
 * MDS_L_EXCL_OK): nobody else holds a directory lease of it, and its
 * holder removes entries there on its own, telling the MDS behind its
 * answer (MDS_L_ASYNC).  Another client's request that reads or changes
 * such a directory first revokes the exclusivity (MDS_CHG_EXCL) and
 * waits for the ack, before which the holder sent those removals; the
 * request then goes back to the end of the worker's queue, behind them
 * (mds_main.c).  A directory whose exclusivity was revoked is not made
 * exclusive again for a lease time (no ping-pong between two clients).
 *
 * Records are keyed by inode number only: inode numbers are never
 * reused, so a record of a removed inode is harmless until swept.
 *
 * Threads: grants run on whichever thread handles the request (the
 * MDS's worker, or the messenger's loop thread when the worker is idle:
 * mds_main.c), revokes on the worker only (they wait for acks); ack
 * callbacks and closed connections on the messenger's loop thread.
 * L.lock protects everything here; it is never held while waiting for
 * acks.
 */
#include "mds.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "encode.h"
#include "log.h"
#include "mono.h"
#include "msg.h"

#define SUB "mds"
#define LEASE_BUCKETS (1u << 16)

#define L_ATTR	0x1u
#define L_DIR	0x2u
#define L_EXCL	0x4u	/* with L_DIR: exclusive */
#define CONTENDED_SLOTS	256u

struct lclient {
	struct msg_conn *c;	/* a reference of ours, put when it closes */
	uint64_t id;
	bool dead;		/* closed: its records go at the next sweep */
	uint64_t refs;		/* records naming it, + 1 while open */
	struct lclient *next;
};

struct lrec {
	uint64_t ino;
	struct lclient *cl;
	uint64_t exp_ms;	/* monotonic */
	uint32_t bits;		/* L_ATTR | L_DIR */
	struct lrec *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* an ack arrived (pending dropped) */
	uint32_t lease_ms;
	uint64_t max, n;
	struct lrec **ht;
	struct lclient *clients;
	uint64_t last_sweep;
	uint64_t grants, revokes, timeouts;
	/* directories whose exclusivity was revoked, until when (ms) */
	uint64_t cont_ino[CONTENDED_SLOTS], cont_until[CONTENDED_SLOTS];
} L = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

int mds_lease_init(uint32_t lease_ms, uint64_t max)
{
	L.lease_ms = lease_ms;
	L.max = max;
	if (!lease_ms)
		return 0;
	L.ht = calloc(LEASE_BUCKETS, sizeof(*L.ht));
	return L.ht ? 0 : -ENOMEM;
}

static void client_put(struct lclient *cl)
{
	if (--cl->refs)
		return;
	for (struct lclient **pp = &L.clients; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	free(cl);
}

static void rec_free(struct lrec *r)
{
	client_put(r->cl);
	free(r);
	L.n--;
}

void mds_lease_fini(void)
{
	pthread_mutex_lock(&L.lock);
	for (size_t b = 0; L.ht && b < LEASE_BUCKETS; b++)
		while (L.ht[b]) {
			struct lrec *r = L.ht[b];
			L.ht[b] = r->next;
			rec_free(r);
		}
	while (L.clients) {
		struct lclient *cl = L.clients;
		L.clients = cl->next;
		if (!cl->dead)
			msg_conn_put(cl->c);
		free(cl);
	}
	free(L.ht);
	L.ht = NULL;
	pthread_mutex_unlock(&L.lock);
}

/* Under L.lock. */
static void sweep(uint64_t now)
{
	for (size_t b = 0; b < LEASE_BUCKETS; b++)
		for (struct lrec **pp = &L.ht[b]; *pp;) {
			struct lrec *r = *pp;
			if (r->exp_ms <= now || r->cl->dead) {
				*pp = r->next;
				rec_free(r);
			} else {
				pp = &r->next;
			}
		}
	L.last_sweep = now;
}

/* Under L.lock: the open client of connection c (made on first use). */
static struct lclient *client_of(struct msg_conn *c)
{
	struct lclient *cl;

	for (cl = L.clients; cl; cl = cl->next)
		if (cl->c == c && !cl->dead)
			return cl;
	if (!msg_conn_is_open(c))
		return NULL;	/* closed after it sent the request: no lease */
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return NULL;
	cl->c = c;
	cl->id = msg_conn_peer(c).id;
	cl->refs = 1;
	msg_conn_get(c);
	cl->next = L.clients;
	L.clients = cl;
	return cl;
}

/* Under L.lock: cl's record of ino gets bits (and loses clear). */
static bool grant_one(struct lclient *cl, uint64_t ino, uint32_t bits, uint32_t clear,
		      uint64_t exp)
{
	struct lrec **head = &L.ht[ino % LEASE_BUCKETS];

	for (struct lrec *r = *head; r; r = r->next)
		if (r->ino == ino && r->cl == cl) {
			r->bits = (r->bits & ~clear) | bits;
			r->exp_ms = exp;
			L.grants++;
			return true;
		}
	if (L.n >= L.max)
		return false;
	struct lrec *r = malloc(sizeof(*r));
	if (!r)
		return false;
	r->ino = ino;
	r->cl = cl;
	cl->refs++;
	r->exp_ms = exp;
	r->bits = bits;
	r->next = *head;
	*head = r;
	L.n++;
	L.grants++;
	return true;
}

/* Under L.lock: may cl hold directory ino exclusively (nobody else holds
 * a directory lease of it, and it was not contended lately)? */
static bool excl_free(const struct lclient *cl, uint64_t ino, uint64_t now)
{
	unsigned s = (unsigned)(ino % CONTENDED_SLOTS);

	if (L.cont_ino[s] == ino && L.cont_until[s] > now)
		return false;
	for (const struct lrec *r = L.ht[ino % LEASE_BUCKETS]; r; r = r->next)
		if (r->ino == ino && r->cl != cl && !r->cl->dead && r->exp_ms > now &&
		    (r->bits & L_DIR))
			return false;
	return true;
}

void mds_lease_grant(struct msg_conn *c, const struct mds_req *rq, struct mds_reply *rp)
{
	uint64_t dirs[3] = { 0, 0, 0 };

	rp->lease_ms = 0;
	rp->dir_lease = 0;
	rp->dir_lease2 = 0;
	rp->lease_flags = 0;
	if (!L.lease_ms || !(rq->lflags & MDS_L_WANT))
		return;
	if (rp->rc && !(rq->op == MDS_OP_GETXATTR && rp->rc == -ENODATA))
		return;
	switch (rq->op) {
	case MDS_OP_LOOKUP:
	case MDS_OP_READDIR:
	case MDS_OP_MKNOD:
	case MDS_OP_SYMLINK:
		dirs[0] = rq->ino;
		break;
	case MDS_OP_MKDIR:
		dirs[0] = rq->ino;
		/* the new directory too: its creator caches its (empty)
		 * listing and answers lookups in it (a create's ENOENT)
		 * without asking */
		if (rp->ninodes)
			dirs[2] = rp->in[0].ino;
		break;
	case MDS_OP_LINK:
		dirs[0] = rq->ino2;
		break;
	case MDS_OP_RENAME:
		/* the requester's kernel moves its entry into ino2: the
		 * lease of ino2 must cover it */
		dirs[0] = rq->ino2;
		dirs[1] = rq->ino;
		break;
	default:
		break;
	}
	uint64_t now = mono_now_ms(), exp = now + L.lease_ms;
	uint64_t need = rp->ninodes + (rp->plus ? rp->nplus : 0) + 3;

	pthread_mutex_lock(&L.lock);
	/* full: sweep at most once a second (a scan of the whole table) */
	if (now >= L.last_sweep + L.lease_ms ||
	    (L.n + need > L.max && now >= L.last_sweep + 1000))
		sweep(now);
	struct lclient *cl = L.n + need <= L.max ? client_of(c) : NULL;
	bool ok = cl != NULL;
	for (uint32_t i = 0; ok && i < rp->ninodes; i++)
		ok = grant_one(cl, rp->in[i].ino, L_ATTR, 0, exp);
	for (uint32_t i = 0; ok && rp->plus && i < rp->nplus; i++)
		ok = grant_one(cl, rp->plus[i].ino, L_ATTR, 0, exp);
	/* exclusive: the leases the reply names (not a rename's source) */
	bool want_x = (rq->lflags & MDS_L_EXCL_OK) != 0;
	bool x0 = ok && want_x && dirs[0] && excl_free(cl, dirs[0], now);
	bool x2 = ok && want_x && dirs[2] && excl_free(cl, dirs[2], now);
	/* a directory lease is exclusive or not as this grant says */
	for (int i = 0; ok && i < 3; i++)
		if (dirs[i]) {
			bool x = i == 0 ? x0 : i == 2 ? x2 : false;
			ok = grant_one(cl, dirs[i], L_DIR | (x ? L_EXCL : 0u), x ? 0u : L_EXCL, exp);
		}
	pthread_mutex_unlock(&L.lock);
	if (!ok)
		return;	/* partly granted records just expire */
	rp->lease_ms = L.lease_ms;
	rp->dir_lease = dirs[0];
	rp->dir_lease2 = dirs[2];
	rp->lease_flags = (x0 ? MDS_LEASE_EXCL : 0u) | (x2 ? MDS_LEASE_EXCL2 : 0u);
}

uint32_t mds_lease_excl_others(struct msg_conn *c, const uint64_t *inos, unsigned n,
			       struct mds_chg *chg)
{
	uint32_t nc = 0;

	if (!L.lease_ms)
		return 0;
	uint64_t now = mono_now_ms();
	pthread_mutex_lock(&L.lock);
	for (unsigned i = 0; i < n; i++) {
		bool dup = !inos[i];
		for (unsigned k = 0; k < i && !dup; k++)
			dup = inos[k] == inos[i];
		if (dup)
			continue;
		for (const struct lrec *r = L.ht[inos[i] % LEASE_BUCKETS]; r; r = r->next)
			if (r->ino == inos[i] && r->cl->c != c && !r->cl->dead &&
			    r->exp_ms > now && (r->bits & L_EXCL)) {
				memset(&chg[nc], 0, sizeof(chg[nc]));
				chg[nc].kind = MDS_CHG_EXCL;
				chg[nc].ino = inos[i];
				nc++;
				break;
			}
	}
	pthread_mutex_unlock(&L.lock);
	return nc;
}

/* One revoke in flight: the worker waits until every holder answered
 * (acked, closed, or its lease ran out). */
struct revoke {
	unsigned pending;
};

struct revoke_call {
	struct revoke *rv;
	struct lclient *cl;
};

/* Loop thread: the ack of one holder, or -ETIMEDOUT / -ECONNRESET. */
static void on_ack(void *arg, struct msg *reply, int err)
{
	struct revoke_call *rc = arg;

	msg_free(reply);
	pthread_mutex_lock(&L.lock);
	if (err == -ETIMEDOUT) {
		L.timeouts++;
		log_warn(SUB, "client %llu did not answer a lease revoke before its lease "
			 "ran out; going on without it (check that its atoll-fuse runs)",
			 (unsigned long long)rc->cl->id);
	}
	client_put(rc->cl);
	rc->rv->pending--;
	pthread_cond_broadcast(&L.cond);
	pthread_mutex_unlock(&L.lock);
	free(rc);
}

/* Under L.lock: does r (a record of another client, still valid) hold
 * something an item of chg covers? */
static bool covers(const struct lrec *r, const struct mds_chg *c)
{
	if (c->kind & MDS_CHG_EXCL)
		return (r->bits & L_EXCL) != 0;
	if (c->kind & MDS_CHG_DENT)
		return (r->bits & L_DIR) != 0;
	return (r->bits & L_ATTR) != 0;
}

struct holder {
	struct lclient *cl;
	uint64_t exp_ms;	/* the latest end of its records the change covers */
	struct revoke_call *call;
};

/* Under L.lock: waits until mono_now_ms() >= until (a holder we could not
 * tell: its lease runs out on its own). */
static void wait_until(uint64_t until)
{
	for (uint64_t now = mono_now_ms(); now < until; now = mono_now_ms()) {
		struct timespec ts = deadline_ms(CLOCK_REALTIME, until - now);
		pthread_cond_timedwait(&L.cond, &L.lock, &ts);
	}
}

void mds_lease_revoke(struct msg_conn *c, const struct mds_chg *chg, uint32_t n)
{
	struct holder *hs = NULL;
	unsigned nh = 0, cap = 0;
	struct revoke rv = { 0 };
	uint64_t untold = 0;	/* wait for this (ms) beyond the acks */

	if (!L.lease_ms || !n)
		return;
	uint64_t now = mono_now_ms();
	pthread_mutex_lock(&L.lock);
	/* who holds what the change covers (the holder drops its cache now,
	 * or its lease has run out when we go on) */
	for (uint32_t i = 0; i < n; i++) {
		struct lrec **pp = &L.ht[chg[i].ino % LEASE_BUCKETS];
		while (*pp) {
			struct lrec *r = *pp;
			if (r->ino == chg[i].ino && (r->cl->dead || r->exp_ms <= now)) {
				*pp = r->next;
				rec_free(r);
				continue;
			}
			if (r->ino != chg[i].ino || r->cl->c == c || !covers(r, &chg[i])) {
				pp = &r->next;
				continue;
			}
			unsigned h;
			for (h = 0; h < nh && hs[h].cl != r->cl; h++)
				;
			if (h == nh) {
				if (nh == cap) {
					unsigned ncap = cap ? cap * 2 : 8;
					struct holder *nhs = realloc(hs, ncap * sizeof(*nhs));
					if (!nhs) {
						/* cannot tell it: wait for its lease */
						if (r->exp_ms > untold)
							untold = r->exp_ms;
						pp = &r->next;
						continue;
					}
					hs = nhs;
					cap = ncap;
				}
				hs[nh].cl = r->cl;
				hs[nh].exp_ms = 0;
				hs[nh].call = NULL;
				nh++;
			}
			if (r->exp_ms > hs[h].exp_ms)
				hs[h].exp_ms = r->exp_ms;
			/* an attribute revoke drops all the holder had of the
			 * inode (the kernel's copy too); a directory lease stays
			 * until it ends: the holder's kernel may keep other
			 * entries of the directory, and their changes must
			 * still reach it */
			if (chg[i].kind & MDS_CHG_EXCL) {
				unsigned s = (unsigned)(r->ino % CONTENDED_SLOTS);
				r->bits &= ~L_EXCL;
				L.cont_ino[s] = r->ino;
				L.cont_until[s] = now + L.lease_ms;
			} else if (!(chg[i].kind & MDS_CHG_DENT)) {
				r->bits &= ~L_ATTR;
			}
			if (!r->bits) {
				*pp = r->next;
				rec_free(r);
			} else {
				pp = &r->next;
			}
		}
	}
	struct mds_notify *nt = NULL;
	if (nh) {
		nt = calloc(1, sizeof(*nt));
		if (nt) {
			nt->n = n < MDS_CHG_MAX ? n : MDS_CHG_MAX;
			memcpy(nt->c, chg, nt->n * sizeof(*chg));
		}
	}
	for (unsigned h = 0; h < nh; h++) {
		hs[h].call = nt ? malloc(sizeof(*hs[h].call)) : NULL;
		if (!hs[h].call) {
			if (hs[h].exp_ms > untold)
				untold = hs[h].exp_ms;
			continue;
		}
		hs[h].call->rv = &rv;
		hs[h].call->cl = hs[h].cl;
		hs[h].cl->refs++;
		rv.pending++;
		L.revokes++;
	}
	/* send without L.lock: the ack callbacks take it on the loop thread */
	pthread_mutex_unlock(&L.lock);
	for (unsigned h = 0; h < nh; h++) {
		struct enc e;
		if (!hs[h].call)
			continue;
		enc_init(&e);
		mds_notify_encode(&e, nt);
		struct msg *m = msg_new(MT_MDS_NOTIFY, &e);
		enc_free(&e);
		/* never waited for beyond its lease: a dead client cannot
		 * hold the others up longer */
		uint32_t tmo = (uint32_t)(hs[h].exp_ms > now ? hs[h].exp_ms - now : 0) + 1;
		if (!m || msg_call(hs[h].cl->c, m, tmo, on_ack, hs[h].call))
			on_ack(hs[h].call, NULL, -ECONNRESET);	/* closed: nothing to wait for */
	}
	free(nt);
	free(hs);
	pthread_mutex_lock(&L.lock);
	while (rv.pending)
		pthread_cond_wait(&L.cond, &L.lock);
	if (untold) {
		log_warn(SUB, "out of memory telling clients of a change; waiting for their "
			 "leases to run out instead");
		wait_until(untold);
	}
	pthread_mutex_unlock(&L.lock);
}

bool mds_lease_revoke_needed(struct msg_conn *c, const struct mds_chg *chg, uint32_t n)
{
	bool need = false;

	if (!L.lease_ms || !n)
		return false;
	uint64_t now = mono_now_ms();
	pthread_mutex_lock(&L.lock);
	for (uint32_t i = 0; !need && i < n; i++)
		for (struct lrec *r = L.ht[chg[i].ino % LEASE_BUCKETS]; r; r = r->next)
			if (r->ino == chg[i].ino && !r->cl->dead && r->exp_ms > now &&
			    r->cl->c != c && covers(r, &chg[i])) {
				need = true;
				break;
			}
	pthread_mutex_unlock(&L.lock);
	return need;
}

void mds_lease_closed(struct msg_conn *c)
{
	pthread_mutex_lock(&L.lock);
	for (struct lclient *cl = L.clients; cl; cl = cl->next)
		if (cl->c == c && !cl->dead) {
			cl->dead = true;
			msg_conn_put(c);
			client_put(cl);	/* the open one's reference */
			break;
		}
	pthread_mutex_unlock(&L.lock);
}

void mds_lease_stats(struct mds_status *s)
{
	pthread_mutex_lock(&L.lock);
	s->lease_ms = L.lease_ms;
	s->leases = L.n;
	s->leases_max = L.max;
	s->grants = L.grants;
	s->revokes = L.revokes;
	s->revoke_timeouts = L.timeouts;
	pthread_mutex_unlock(&L.lock);
}

/* ---- what a transaction changes --------------------------------------- */

static void chg_add(struct mds *m, uint32_t kind, uint64_t ino, const char *name)
{
	for (uint32_t i = 0; i < m->nchg; i++) {
		struct mds_chg *c = &m->chg[i];
		if (c->ino != ino || ((c->kind ^ kind) & MDS_CHG_DENT))
			continue;
		if (!(kind & MDS_CHG_DENT)) {
			c->kind |= kind;
			return;
		}
		if (!strcmp(c->name, name))
			return;
	}
	if (m->nchg == MDS_CHG_MAX) {
		/* cannot happen with MDS_TXN_INODES + MDS_TXN_UPDS <= MAX */
		log_warn(SUB, "a change touches more than %u items; some clients may "
			 "serve stale metadata until their lease ends", MDS_CHG_MAX);
		return;
	}
	struct mds_chg *c = &m->chg[m->nchg++];
	c->kind = kind;
	c->ino = ino;
	snprintf(c->name, sizeof(c->name), "%s", name ? name : "");
}

void mds_lease_note(struct mds *m, const struct mds_txn *t)
{
	for (int i = 0; i < t->nw; i++) {
		/* cached: the txn loaded it (or it is new) */
		const struct mds_node *n = mds_cache_find(m, t->w[i].in.ino);
		if (!n)
			continue;	/* a new inode: nobody holds a lease on it */
		const struct mds_inode *in = &t->w[i].in;
		uint32_t kind = MDS_CHG_ATTR;
		if (t->w[i].removed || in->size != n->a.size || in->mtime != n->a.mtime)
			kind |= MDS_CHG_DATA;
		if (in->mode != n->a.mode || in->uid != n->a.uid || in->gid != n->a.gid)
			kind |= MDS_CHG_PERM;
		chg_add(m, kind, in->ino, NULL);
	}
	for (int i = 0; i < t->nu; i++) {
		const struct mds_upd *u = &t->u[i];
		if (u->type == MDS_U_DENT_SET || u->type == MDS_U_DENT_RM)
			chg_add(m, MDS_CHG_DENT, u->dir, u->name);
	}
}
