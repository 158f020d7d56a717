/*
 * monc.c - the monitor client (monc.h): the hunt for a session among the
 * monitors, MONMAP handling, and requests that follow the leader.
 *
 * One lock (mc->lock) guards everything here; the messenger is called
 * (msgr_connect, msg_call, msg_send, msg_conn_close) and the owner's
 * functions run without it, so that a callback may call monc again.  A
 * request lives in a record (struct mcall) that keeps a copy of what it
 * sends, so that it can be sent again as a new request after a switch;
 * it is referenced by the queue until it completes, by its deadline timer
 * until that runs or is cancelled, and by each attempt in flight.  The
 * records are also on one list of all records, so that those whose
 * timers the messenger dropped at its end are freed by monc_destroy.
 */
#include "monc.h"

#include "encode.h"
#include "log.h"
#include "mono.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* ---- mon_host ---- */

int monc_parse_hosts(const char *s, monc_addr_t *out, uint32_t max, char *err, size_t errlen)
{
	uint32_t n = 0, pos = 0;
	const char *p = s ? s : "";

	for (;;) {
		char tok[OSDMAP_ADDR_MAX + 2], ip[64];
		size_t len;
		uint16_t port;
		bool dup = false;

		while (*p == ',' || *p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		len = strcspn(p, ", \t");
		pos++;
		if (len > OSDMAP_ADDR_MAX) {
			snprintf(err, errlen, "mon_host: entry %u ('%.*s...') is too long for an "
				 "address (IP:PORT)", pos, 32, p);
			return -EINVAL;
		}
		memcpy(tok, p, len);
		tok[len] = '\0';
		p += len;
		if (msg_parse_addr(tok, ip, sizeof(ip), &port) < 0 || port == 0) {
			snprintf(err, errlen, "mon_host: entry %u ('%s') is not an address "
				 "(IP:PORT); list the monitors as IP:PORT,IP:PORT", pos, tok);
			return -EINVAL;
		}
		for (uint32_t i = 0; i < n; i++)
			dup |= strcmp(out[i], tok) == 0;
		if (dup)
			continue;
		if (n == max) {
			snprintf(err, errlen, "mon_host: more than %u monitors listed", max);
			return -EINVAL;
		}
		memcpy(out[n++], tok, len + 1);
	}
	if (n == 0) {
		snprintf(err, errlen, "mon_host is empty; list the monitors as IP:PORT,IP:PORT");
		return -EINVAL;
	}
	return (int)n;
}

/* ---- the hunt (pure) ---- */

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

void monc_hunt_init(struct monc_hunt *h, uint32_t n, uint32_t min_ms, uint32_t max_ms,
		    uint64_t seed)
{
	memset(h, 0, sizeof(*h));
	h->n = n ? n : 1;
	h->min_ms = min_ms ? min_ms : 1;
	h->max_ms = max_ms < h->min_ms ? h->min_ms : max_ms;
	h->rng = seed ? seed : 0x9e3779b97f4a7c15ull;
	h->next = (uint32_t)(xorshift(&h->rng) % h->n);
}

uint32_t monc_hunt_next(struct monc_hunt *h)
{
	uint32_t i = h->next % h->n;

	h->next = (i + 1) % h->n;
	return i;
}

uint32_t monc_hunt_failed(struct monc_hunt *h)
{
	uint64_t d = h->min_ms;

	if (h->fails < 64)
		h->fails++;
	for (uint32_t k = 1; k < h->fails && d < h->max_ms; k++)
		d *= 2;
	if (d > h->max_ms)
		d = h->max_ms;
	return (uint32_t)(d / 2 + xorshift(&h->rng) % (d - d / 2 + 1));
}

void monc_hunt_reset(struct monc_hunt *h)
{
	h->fails = 0;
}

void monc_hunt_goto(struct monc_hunt *h, uint32_t idx)
{
	h->next = idx % h->n;
}

void monc_hunt_resize(struct monc_hunt *h, uint32_t n)
{
	if (n)
		h->n = n;
	h->next %= h->n;
}

/* ---- state ---- */

struct mcall {
	struct monc *mc;
	uint16_t type;
	void *front;
	uint32_t front_len;
	void *data;
	uint32_t data_len;
	uint64_t deadline_ms;		/* 0 = none */
	unsigned flags;
	msg_reply_fn fn;
	void *arg;
	uint64_t timer;			/* the deadline's msgr timer, 0 = none */
	int refs;
	bool done;
	bool inflight;
	struct mcall *q_next;		/* the queue (not done) */
	struct mcall *a_next, *a_prev;	/* every record */
};

struct attempt {
	struct mcall *rec;
	uint64_t gen;			/* the session it went on */
};

struct oneway {
	struct msg *m;
	struct oneway *next;
};

struct cand {
	monc_addr_t addr;
	int last_err;			/* 0 = not tried yet, 1 = connected */
};

struct monc {
	pthread_mutex_t lock;		/* everything below */
	struct msgr *msgr;
	struct monc_ops ops;
	void *arg;
	char who[16];
	uint32_t attempt_ms;

	struct cand cand[MONC_CANDS_MAX];
	uint32_t ncand;
	struct monc_hunt hunt;
	uint32_t redirects;		/* leader switches in a row */

	struct msg_conn *sess;		/* the session or the dial (a ref) */
	uint32_t sess_idx;
	bool sess_open;
	uint64_t gen;			/* counts sessions opened */
	uint64_t attempt_timer, hunt_timer;
	bool started, stopped, ever_open;

	bool have_monmap;
	uint64_t incarnation, mm_epoch;

	struct mcall *q_head, *q_tail;
	struct mcall *all;
	struct oneway *ow_head, *ow_tail;
	uint32_t now;
	/* One-way messages sent on a session not confirmed yet (no MONMAP
	 * has said it is with the leader, and it is younger than
	 * MONC_CONFIRM_MS): copies, sent again on the next session if this
	 * one turns out to be a follower's, which drops them. */
	bool sess_confirmed;
	uint64_t sess_open_ms;
	struct oneway *kept_head, *kept_tail;
	uint32_t nkept;
};

/* A monitor sends its MONMAP right after the handshake: a session that
 * heard none for this long is with a monitor that serves it (one that
 * sends no MONMAP at all serves everything). */
#define MONC_CONFIRM_MS	1000u

/* the priv of monc's connections: c's priv == mc */

static void ow_free_list(struct oneway *ow)
{
	while (ow) {
		struct oneway *next = ow->next;

		msg_free(ow->m);
		free(ow);
		ow = next;
	}
}

/* The session is known to serve (requeue false) or is left for another
 * (requeue true): what was kept is dropped, or goes first on the next
 * session (lock held). */
static void kept_settle(struct monc *mc, bool requeue)
{
	struct oneway *k = mc->kept_head, *last = mc->kept_tail;

	mc->kept_head = mc->kept_tail = NULL;
	if (requeue && k) {
		last->next = mc->ow_head;
		if (!mc->ow_head)
			mc->ow_tail = last;
		mc->ow_head = k;
		mc->now += mc->nkept;
	} else {
		ow_free_list(k);
	}
	mc->nkept = 0;
}

/* Confirms an open session that is old enough (lock held). */
static void confirm_by_age(struct monc *mc)
{
	if (mc->sess_open && !mc->sess_confirmed &&
	    mono_now_ms() - mc->sess_open_ms >= MONC_CONFIRM_MS) {
		mc->sess_confirmed = true;
		kept_settle(mc, false);
	}
}

/* A copy of m (our own message: front and data) to keep. */
static struct msg *msg_dup(const struct msg *m)
{
	struct enc e;
	struct msg *d;

	enc_init(&e);
	enc_raw(&e, m->front, m->front_len);
	d = msg_new(m->type, &e);
	enc_free(&e);
	if (d && m->data_len && msg_set_data(d, m->data, m->data_len) < 0) {
		msg_free(d);
		d = NULL;
	}
	return d;
}

static void rec_put_locked(struct mcall *r)
{
	struct monc *mc = r->mc;

	if (--r->refs > 0)
		return;
	if (r->a_prev)
		r->a_prev->a_next = r->a_next;
	else
		mc->all = r->a_next;
	if (r->a_next)
		r->a_next->a_prev = r->a_prev;
	free(r->front);
	free(r->data);
	free(r);
}

static void q_remove(struct monc *mc, struct mcall *r)
{
	struct mcall **pp, *prev = NULL;

	for (pp = &mc->q_head; *pp; prev = *pp, pp = &(*pp)->q_next) {
		if (*pp != r)
			continue;
		*pp = r->q_next;
		if (mc->q_tail == r)
			mc->q_tail = prev;
		r->q_next = NULL;
		return;
	}
}

/* Marks r done and takes it off the queue (lock held).  The caller calls
 * r->fn after unlocking, then drops the queue's reference. */
static void rec_finish_locked(struct monc *mc, struct mcall *r)
{
	r->done = true;
	q_remove(mc, r);
	if (r->timer && msgr_timer_cancel(mc->msgr, r->timer))
		r->refs--;	/* the timer's reference: it will not run */
	r->timer = 0;
}

static void rec_complete(struct monc *mc, struct mcall *r, struct msg *reply, int err)
{
	r->fn(r->arg, reply, err);
	pthread_mutex_lock(&mc->lock);
	rec_put_locked(r);
	pthread_mutex_unlock(&mc->lock);
}

static const char *err_name(int e)
{
	switch (e) {
	case 0: return "not tried";
	case 1: return "connected";
	case -ECONNREFUSED: return "connection refused";
	case -ETIMEDOUT: return "no handshake";
	case -ECONNRESET: return "connection reset";
	case -EHOSTUNREACH: return "host unreachable";
	case -ENETUNREACH: return "network unreachable";
	case -EAGAIN: return "no leader";
	case -ENOPROTOOPT: return "no wire mode in common: see ms_mon_mode";
	default: return strerror(-e);
	}
}

/* ---- the hunt ---- */

static void hunt_fire(void *arg);

/* Arms the next dial after delay (lock held; no session). */
static void hunt_schedule(struct monc *mc, uint32_t delay)
{
	if (mc->stopped || mc->hunt_timer || mc->sess)
		return;
	mc->hunt_timer = msgr_timer(mc->msgr, delay, hunt_fire, mc);
	if (!mc->hunt_timer)
		log_error(mc->who, "cannot schedule a monitor dial: out of memory");
}

/* Ends the session or the dial (lock held); the connection is returned
 * for the caller to close and put without the lock. */
static struct msg_conn *sess_drop(struct monc *mc, int err)
{
	struct msg_conn *c = mc->sess;

	if (!c)
		return NULL;
	if (mc->sess_idx < mc->ncand)
		mc->cand[mc->sess_idx].last_err = err;
	if (mc->attempt_timer)
		msgr_timer_cancel(mc->msgr, mc->attempt_timer);
	mc->attempt_timer = 0;
	mc->sess = NULL;
	mc->sess_open = false;
	return c;
}

static void conn_retire(struct msg_conn *c)
{
	if (!c)
		return;
	msg_conn_close(c);
	msg_conn_put(c);
}

static void attempt_fire(void *arg)
{
	struct monc *mc = arg;
	struct msg_conn *c = NULL;

	pthread_mutex_lock(&mc->lock);
	mc->attempt_timer = 0;
	if (mc->sess && !mc->sess_open && !mc->stopped) {
		log_info(mc->who, "monitor %s: no handshake within %u ms; trying the next one",
			 mc->cand[mc->sess_idx].addr, mc->attempt_ms);
		c = sess_drop(mc, -ETIMEDOUT);
		hunt_schedule(mc, monc_hunt_failed(&mc->hunt));
	}
	pthread_mutex_unlock(&mc->lock);
	conn_retire(c);
}

static void hunt_fire(void *arg)
{
	struct monc *mc = arg;
	struct msg_conn *c;
	monc_addr_t addr;
	uint32_t idx;

	pthread_mutex_lock(&mc->lock);
	mc->hunt_timer = 0;
	if (mc->stopped || mc->sess) {
		pthread_mutex_unlock(&mc->lock);
		return;
	}
	idx = monc_hunt_next(&mc->hunt);
	memcpy(addr, mc->cand[idx].addr, sizeof(addr));
	pthread_mutex_unlock(&mc->lock);

	/* msgr_connect may resolve a name: not under the lock */
	c = msgr_connect(mc->msgr, addr);
	pthread_mutex_lock(&mc->lock);
	if (!c) {
		mc->cand[idx].last_err = -EINVAL;
		hunt_schedule(mc, monc_hunt_failed(&mc->hunt));
		pthread_mutex_unlock(&mc->lock);
		return;
	}
	msg_conn_set_priv(c, mc);
	if (mc->stopped || mc->sess) {
		pthread_mutex_unlock(&mc->lock);
		conn_retire(c);
		return;
	}
	log_debug(mc->who, "dialling monitor %s", addr);
	mc->sess = c;
	mc->sess_idx = idx;
	mc->sess_open = false;
	mc->attempt_timer = msgr_timer(mc->msgr, mc->attempt_ms, attempt_fire, mc);
	pthread_mutex_unlock(&mc->lock);
}

/* Leaves the session for the candidate idx (a leader named by a MONMAP)
 * or, with idx < 0, for the next one after a backoff (lock held).
 * Returns the connection to retire. */
static struct msg_conn *switch_to(struct monc *mc, int idx, int err)
{
	struct msg_conn *c;
	uint32_t delay;

	/* a follower's, or one that serves nothing: it dropped them */
	if (!mc->sess_confirmed)
		kept_settle(mc, true);
	c = sess_drop(mc, err);

	if (idx >= 0) {
		monc_hunt_goto(&mc->hunt, (uint32_t)idx);
		/* two members that name each other: back off after a few */
		delay = ++mc->redirects <= 2 ? 0 : monc_hunt_failed(&mc->hunt);
	} else {
		delay = monc_hunt_failed(&mc->hunt);
	}
	hunt_schedule(mc, delay);
	return c;
}

/* ---- monmaps ---- */

static int cand_find(const struct monc *mc, const char *addr)
{
	for (uint32_t i = 0; i < mc->ncand; i++)
		if (strcmp(mc->cand[i].addr, addr) == 0)
			return (int)i;
	return -1;
}

/* Checks mm and learns its members (lock held).  -ESTALE when refused;
 * *changed when members or incarnation are new. */
static int monmap_learn(struct monc *mc, const struct monmap_msg *mm, bool *changed)
{
	uint8_t fsid[16], zero[16] = { 0 };

	*changed = false;
	msgr_fsid(mc->msgr, fsid);
	if (memcmp(fsid, zero, 16) && memcmp(fsid, mm->fsid, 16)) {
		log_warn(mc->who, "ignoring a monitor map of another cluster");
		return -ESTALE;
	}
	if (mc->have_monmap && mm->incarnation < mc->incarnation) {
		log_warn(mc->who, "ignoring a monitor map of incarnation %llu: the monitors "
			 "were rebuilt since (incarnation %llu)",
			 (unsigned long long)mm->incarnation, (unsigned long long)mc->incarnation);
		return -ESTALE;
	}
	if (!mc->have_monmap || mm->incarnation > mc->incarnation || mm->epoch > mc->mm_epoch)
		*changed = true;
	if (*changed) {
		mc->have_monmap = true;
		mc->incarnation = mm->incarnation;
		mc->mm_epoch = mm->epoch;
	}
	for (uint32_t i = 0; i < mm->nmons && i < MONMAP_MONS_MAX; i++) {
		if (cand_find(mc, mm->mons[i].addr) >= 0 || mc->ncand == MONC_CANDS_MAX)
			continue;
		snprintf(mc->cand[mc->ncand].addr, sizeof(mc->cand[0].addr), "%s",
			 mm->mons[i].addr);
		mc->cand[mc->ncand++].last_err = 0;
		*changed = true;
	}
	monc_hunt_resize(&mc->hunt, mc->ncand);
	return 0;
}

/* A MONMAP arrived on c (lock held): follows its leader.  Returns the
 * connection to retire; *stay tells whether the session is still to the
 * leader (or to a monitor we may use). */
static struct msg_conn *monmap_follow(struct monc *mc, struct msg_conn *c,
				      const struct monmap_msg *mm, bool *stay)
{
	int li;

	*stay = false;
	if (c != mc->sess)
		return NULL;	/* an old session's; the current one decides */
	if (mm->leader < 0 || (uint32_t)mm->leader >= mm->nmons) {
		log_info(mc->who, "monitor %s knows no leader; trying another",
			 mc->cand[mc->sess_idx].addr);
		return switch_to(mc, -1, -EAGAIN);
	}
	li = cand_find(mc, mm->mons[mm->leader].addr);
	if (li < 0)
		return switch_to(mc, -1, -EAGAIN);	/* no room to learn it */
	if ((uint32_t)li == mc->sess_idx) {
		mc->redirects = 0;
		mc->sess_confirmed = true;
		kept_settle(mc, false);
		*stay = true;
		return NULL;
	}
	log_info(mc->who, "monitor %s is not the leader; going to mon.%s at %s",
		 mc->cand[mc->sess_idx].addr, mm->mons[mm->leader].name,
		 mm->mons[mm->leader].addr);
	return switch_to(mc, li, 1);
}

static int monmap_decode_msg(const struct msg *m, struct monmap_msg *mm)
{
	struct dec d;

	dec_init(&d, m->front, m->front_len);
	return monmap_msg_decode(&d, mm);
}

/* ---- sending ---- */

static void attempt_reply(void *arg, struct msg *reply, int err);

/* Sends r on the open session c of generation gen (no lock; the caller
 * holds a reference on c and one on r for the attempt). */
static void attempt_send(struct monc *mc, struct mcall *r, struct msg_conn *c, uint64_t gen)
{
	struct attempt *a = malloc(sizeof(*a));
	struct msg *m = NULL;
	struct enc e;
	uint32_t timeout = 0;
	int err = -ENOMEM;

	if (!a)
		goto out_fail;
	a->rec = r;
	a->gen = gen;
	enc_init(&e);
	enc_raw(&e, r->front, r->front_len);
	m = msg_new(r->type, &e);
	enc_free(&e);
	if (!m)
		goto out_fail;
	if (r->data_len && msg_set_data(m, r->data, r->data_len) < 0)
		goto out_fail;
	if (r->deadline_ms) {
		uint64_t now = mono_now_ms();

		timeout = r->deadline_ms > now ? (uint32_t)(r->deadline_ms - now) : 1;
	}
	err = msg_call(c, m, timeout, attempt_reply, a);
	m = NULL;	/* taken */
	if (err == 0)
		return;
out_fail:
	msg_free(m);
	free(a);
	/* as if the session broke: waits for the next one */
	pthread_mutex_lock(&mc->lock);
	r->inflight = false;
	if (err != -ENOMEM && err != -EMSGSIZE && err != -EINVAL) {
		rec_put_locked(r);
		pthread_mutex_unlock(&mc->lock);
		return;
	}
	if (r->done) {
		rec_put_locked(r);
		pthread_mutex_unlock(&mc->lock);
		return;
	}
	rec_finish_locked(mc, r);
	rec_put_locked(r);	/* the attempt's */
	pthread_mutex_unlock(&mc->lock);
	rec_complete(mc, r, NULL, err);
}

/* Sends what waits for a session, in order: one-way messages first, then
 * requests not in flight.  No lock held. */
static void flush(struct monc *mc)
{
	struct oneway *ow;
	struct msg_conn *c;
	uint64_t gen;
	bool keep;

	pthread_mutex_lock(&mc->lock);
	if (!mc->sess_open || mc->stopped) {
		pthread_mutex_unlock(&mc->lock);
		return;
	}
	c = mc->sess;
	msg_conn_get(c);
	gen = mc->gen;
	confirm_by_age(mc);
	keep = !mc->sess_confirmed;
	ow = mc->ow_head;
	mc->ow_head = mc->ow_tail = NULL;
	mc->now = 0;
	pthread_mutex_unlock(&mc->lock);
	while (ow) {
		struct oneway *next = ow->next;
		struct msg *copy = keep ? msg_dup(ow->m) : NULL;

		msg_send(c, ow->m);
		ow->m = copy;
		ow->next = NULL;
		if (!copy) {
			free(ow);
		} else {
			pthread_mutex_lock(&mc->lock);
			if (mc->gen != gen || !mc->sess_open) {
				/* it went to a session that ended meanwhile */
				if (mc->ow_tail)
					mc->ow_tail->next = ow;
				else
					mc->ow_head = ow;
				mc->ow_tail = ow;
				mc->now++;
			} else if (!mc->sess_confirmed && mc->nkept < MONC_ONEWAY_MAX) {
				if (mc->kept_tail)
					mc->kept_tail->next = ow;
				else
					mc->kept_head = ow;
				mc->kept_tail = ow;
				mc->nkept++;
			} else {
				ow_free_list(ow);
			}
			pthread_mutex_unlock(&mc->lock);
		}
		ow = next;
	}
	for (;;) {
		struct mcall *r;

		pthread_mutex_lock(&mc->lock);
		if (mc->gen != gen || !mc->sess_open) {
			pthread_mutex_unlock(&mc->lock);
			break;
		}
		for (r = mc->q_head; r && r->inflight; r = r->q_next)
			;
		if (!r) {
			pthread_mutex_unlock(&mc->lock);
			break;
		}
		r->inflight = true;
		r->refs++;
		pthread_mutex_unlock(&mc->lock);
		attempt_send(mc, r, c, gen);
	}
	msg_conn_put(c);
}

static void attempt_reply(void *arg, struct msg *reply, int err)
{
	struct attempt *a = arg;
	struct mcall *r = a->rec;
	struct monc *mc = r->mc;
	struct msg_conn *retire = NULL;
	bool complete = false;	/* else it stays queued for the next session */
	int cerr = err;

	pthread_mutex_lock(&mc->lock);
	r->inflight = false;
	if (r->done)
		goto out_put;
	if (!err && reply->type == MT_MON_MONMAP && (reply->flags & MSG_F_REPLY)) {
		struct monmap_msg mm;
		bool changed, stay = false;

		if (monmap_decode_msg(reply, &mm) == 0 && monmap_learn(mc, &mm, &changed) == 0) {
			retire = monmap_follow(mc, reply->conn, &mm, &stay);
			/* a monitor that names itself leader yet does not
			 * serve: leave it */
			if (stay && reply->conn == mc->sess)
				retire = switch_to(mc, -1, -EAGAIN);
		} else if (reply->conn == mc->sess) {
			retire = switch_to(mc, -1, -EBADMSG);
		}
		msg_free(reply);
		reply = NULL;
		if (r->flags & MONC_CALL_ONCE) {
			complete = true;
			cerr = -EAGAIN;
		}
	} else if (err == -ECONNRESET) {
		if (r->flags & MONC_CALL_ONCE) {
			complete = true;
			cerr = -EAGAIN;
		}
	} else {
		if (!err)
			mc->redirects = 0;
		complete = true;
	}
	if (complete)
		rec_finish_locked(mc, r);
	rec_put_locked(r);	/* the attempt's */
	pthread_mutex_unlock(&mc->lock);
	free(a);
	conn_retire(retire);
	if (complete) {
		rec_complete(mc, r, reply, cerr);
		return;
	}
	/* a session that opened meanwhile sends it */
	flush(mc);
	return;

out_put:
	rec_put_locked(r);
	pthread_mutex_unlock(&mc->lock);
	free(a);
	msg_free(reply);
}

static void deadline_fire(void *arg)
{
	struct mcall *r = arg;
	struct monc *mc = r->mc;

	pthread_mutex_lock(&mc->lock);
	r->timer = 0;
	if (r->done) {
		rec_put_locked(r);	/* the timer's */
		pthread_mutex_unlock(&mc->lock);
		return;
	}
	rec_finish_locked(mc, r);
	rec_put_locked(r);		/* the timer's */
	pthread_mutex_unlock(&mc->lock);
	rec_complete(mc, r, NULL, -ETIMEDOUT);
}

int monc_call(struct monc *mc, struct msg *m, uint32_t timeout_ms, unsigned flags,
	      msg_reply_fn fn, void *arg)
{
	struct mcall *r;
	int err = 0;

	if (flags & ~MONC_CALL_ONCE) {
		msg_free(m);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r || (m->front_len && !(r->front = malloc(m->front_len))) ||
	    (m->data_len && !(r->data = malloc(m->data_len)))) {
		err = -ENOMEM;
		goto out_free;
	}
	r->mc = mc;
	r->type = m->type;
	r->front_len = m->front_len;
	r->data_len = m->data_len;
	if (m->front_len)
		memcpy(r->front, m->front, m->front_len);
	if (m->data_len)
		memcpy(r->data, m->data, m->data_len);
	r->flags = flags;
	r->fn = fn;
	r->arg = arg;
	r->refs = 1;		/* the queue's */
	r->deadline_ms = timeout_ms ? mono_now_ms() + timeout_ms : 0;
	msg_free(m);
	m = NULL;

	pthread_mutex_lock(&mc->lock);
	if (mc->stopped) {
		pthread_mutex_unlock(&mc->lock);
		err = -ESHUTDOWN;
		goto out_free;
	}
	r->a_next = mc->all;
	if (mc->all)
		mc->all->a_prev = r;
	mc->all = r;
	if (mc->q_tail)
		mc->q_tail->q_next = r;
	else
		mc->q_head = r;
	mc->q_tail = r;
	if (timeout_ms) {
		r->refs++;	/* the timer's */
		r->timer = msgr_timer(mc->msgr, timeout_ms, deadline_fire, r);
		if (!r->timer)
			r->refs--;
	}
	pthread_mutex_unlock(&mc->lock);
	flush(mc);
	return 0;

out_free:
	msg_free(m);
	if (r) {
		free(r->front);
		free(r->data);
	}
	free(r);
	return err;
}

int monc_call_wait(struct monc *mc, struct msg *m, uint32_t timeout_ms, struct msg **reply)
{
	struct msg_waiter w = MSG_WAITER_INIT;
	int err = monc_call(mc, m, timeout_ms, 0, msg_waiter_done, &w);

	*reply = NULL;
	return err ? err : msg_waiter_wait(&w, reply);
}

int monc_send(struct monc *mc, struct msg *m)
{
	struct msg_conn *c = NULL;
	struct oneway *ow, *drop = NULL;

	pthread_mutex_lock(&mc->lock);
	if (mc->stopped) {
		pthread_mutex_unlock(&mc->lock);
		msg_free(m);
		return -ESHUTDOWN;
	}
	confirm_by_age(mc);
	if (mc->sess_open && mc->sess_confirmed && !mc->ow_head) {
		c = mc->sess;
		msg_conn_get(c);
		pthread_mutex_unlock(&mc->lock);
		msg_send(c, m);	/* a failure: the session is ending anyway */
		msg_conn_put(c);
		return 0;
	}
	ow = malloc(sizeof(*ow));
	if (!ow) {
		pthread_mutex_unlock(&mc->lock);
		msg_free(m);
		return -ENOMEM;
	}
	ow->m = m;
	ow->next = NULL;
	if (mc->ow_tail)
		mc->ow_tail->next = ow;
	else
		mc->ow_head = ow;
	mc->ow_tail = ow;
	if (++mc->now > MONC_ONEWAY_MAX) {
		drop = mc->ow_head;
		mc->ow_head = drop->next;
		mc->now--;
	}
	pthread_mutex_unlock(&mc->lock);
	if (drop) {
		msg_free(drop->m);
		free(drop);
	}
	flush(mc);
	return 0;
}

/* ---- the messenger's events ---- */

bool monc_owns(const struct monc *mc, const struct msg_conn *c)
{
	return mc && c && msg_conn_priv(c) == mc;
}

bool monc_connected(struct monc *mc, struct msg_conn *c)
{
	bool mine;

	if (!monc_owns(mc, c))
		return false;
	pthread_mutex_lock(&mc->lock);
	mine = c == mc->sess && !mc->stopped;
	if (mine) {
		mc->sess_open = true;
		mc->sess_confirmed = false;
		mc->sess_open_ms = mono_now_ms();
		mc->gen++;
		mc->ever_open = true;
		mc->cand[mc->sess_idx].last_err = 1;
		monc_hunt_reset(&mc->hunt);
		if (mc->attempt_timer)
			msgr_timer_cancel(mc->msgr, mc->attempt_timer);
		mc->attempt_timer = 0;
		log_info(mc->who, "session with monitor %s", mc->cand[mc->sess_idx].addr);
	}
	pthread_mutex_unlock(&mc->lock);
	if (!mine)
		return true;
	if (mc->ops.session_open)
		mc->ops.session_open(mc->arg, c);
	flush(mc);
	return true;
}

bool monc_closed(struct monc *mc, struct msg_conn *c, int err)
{
	struct msg_conn *retire = NULL;

	if (!monc_owns(mc, c))
		return false;
	pthread_mutex_lock(&mc->lock);
	if (c == mc->sess && !mc->stopped) {
		bool was_open = mc->sess_open;

		if (was_open)
			log_info(mc->who, "lost the session with monitor %s (%s); hunting",
				 mc->cand[mc->sess_idx].addr, err_name(err));
		if (was_open && !mc->sess_confirmed)
			kept_settle(mc, mono_now_ms() - mc->sess_open_ms < MONC_CONFIRM_MS);
		retire = sess_drop(mc, err ? err : -ECONNRESET);
		/* a session that was up: try the next one at once */
		hunt_schedule(mc, was_open ? 0 : monc_hunt_failed(&mc->hunt));
	}
	pthread_mutex_unlock(&mc->lock);
	conn_retire(retire);
	return true;
}

bool monc_dispatch(struct monc *mc, struct msg_conn *c, struct msg *m)
{
	struct monmap_msg mm;
	struct msg_conn *retire = NULL;
	bool changed = false, stay;

	if (!mc || m->type != MT_MON_MONMAP)
		return false;
	if (!monc_owns(mc, c)) {
		/* only the monitors we dialled tell us who the monitors are */
		msg_free(m);
		return true;
	}
	if (monmap_decode_msg(m, &mm) < 0) {
		log_warn(mc->who, "malformed monitor map from %s", msg_conn_addr(c));
		msg_free(m);
		return true;
	}
	pthread_mutex_lock(&mc->lock);
	if (!mc->stopped && monmap_learn(mc, &mm, &changed) == 0)
		retire = monmap_follow(mc, c, &mm, &stay);
	else if (!mc->stopped && c == mc->sess && !mc->sess_confirmed &&
		 mc->have_monmap && mm.incarnation < mc->incarnation)
		/* the session's monitor speaks for an older incarnation (the
		 * old quorum after a rebuild from one survivor): it never
		 * serves us, hunt on */
		retire = switch_to(mc, -1, -ESTALE);
	pthread_mutex_unlock(&mc->lock);
	msg_free(m);
	conn_retire(retire);
	if (changed && mc->ops.monmap)
		mc->ops.monmap(mc->arg, &mm);
	return true;
}

/* ---- life ---- */

int monc_create(struct msgr *msgr, const struct monc_config *cfg, const struct monc_ops *ops,
		void *arg, struct monc **out, char *err, size_t errlen)
{
	monc_addr_t hosts[MONC_HOSTS_MAX];
	struct monc *mc;
	uint64_t seed = 0;
	int n;

	*out = NULL;
	if (!cfg || cfg->size_of < sizeof(*cfg) || !cfg->mon_host) {
		snprintf(err, errlen, "monc_create: no configuration");
		return -EINVAL;
	}
	n = monc_parse_hosts(cfg->mon_host, hosts, MONC_HOSTS_MAX, err, errlen);
	if (n < 0)
		return n;
	mc = calloc(1, sizeof(*mc));
	if (!mc) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&mc->lock, NULL);
	mc->msgr = msgr;
	if (ops)
		mc->ops = *ops;
	mc->arg = arg;
	snprintf(mc->who, sizeof(mc->who), "%s", cfg->who ? cfg->who : "monc");
	mc->attempt_ms = cfg->attempt_ms ? cfg->attempt_ms : MONC_ATTEMPT_MS;
	for (int i = 0; i < n; i++)
		memcpy(mc->cand[i].addr, hosts[i], sizeof(hosts[i]));
	mc->ncand = (uint32_t)n;
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = mono_now_ns();
	monc_hunt_init(&mc->hunt, mc->ncand,
		       cfg->backoff_min_ms ? cfg->backoff_min_ms : MONC_BACKOFF_MIN_MS,
		       cfg->backoff_max_ms ? cfg->backoff_max_ms : MONC_BACKOFF_MAX_MS, seed);
	*out = mc;
	return 0;
}

int monc_seed(struct monc *mc, const struct monmap_msg *mm)
{
	bool changed;
	int r;

	pthread_mutex_lock(&mc->lock);
	r = monmap_learn(mc, mm, &changed);
	pthread_mutex_unlock(&mc->lock);
	return r;
}

void monc_start(struct monc *mc)
{
	pthread_mutex_lock(&mc->lock);
	if (!mc->started) {
		mc->started = true;
		hunt_schedule(mc, 0);
	}
	pthread_mutex_unlock(&mc->lock);
}

void monc_stop(struct monc *mc)
{
	struct msg_conn *c;
	struct oneway *ow;
	struct mcall *done = NULL, *r;

	if (!mc)
		return;
	pthread_mutex_lock(&mc->lock);
	if (mc->stopped) {
		pthread_mutex_unlock(&mc->lock);
		return;
	}
	mc->stopped = true;
	if (mc->hunt_timer)
		msgr_timer_cancel(mc->msgr, mc->hunt_timer);
	mc->hunt_timer = 0;
	c = sess_drop(mc, -ESHUTDOWN);
	kept_settle(mc, false);
	ow = mc->ow_head;
	mc->ow_head = mc->ow_tail = NULL;
	mc->now = 0;
	while ((r = mc->q_head)) {
		rec_finish_locked(mc, r);
		r->q_next = done;	/* reused: the list to complete */
		done = r;
	}
	pthread_mutex_unlock(&mc->lock);
	conn_retire(c);
	while (ow) {
		struct oneway *next = ow->next;

		msg_free(ow->m);
		free(ow);
		ow = next;
	}
	while ((r = done)) {
		done = r->q_next;
		r->q_next = NULL;
		rec_complete(mc, r, NULL, -ESHUTDOWN);
	}
}

void monc_destroy(struct monc *mc)
{
	if (!mc)
		return;
	/* the messenger is gone: what its timers and calls held is ours */
	ow_free_list(mc->ow_head);
	ow_free_list(mc->kept_head);
	while (mc->all) {
		struct mcall *r = mc->all;

		mc->all = r->a_next;
		free(r->front);
		free(r->data);
		free(r);
	}
	pthread_mutex_destroy(&mc->lock);
	free(mc);
}

/* ---- state for the owner ---- */

bool monc_is_open(struct monc *mc)
{
	bool o;

	pthread_mutex_lock(&mc->lock);
	o = mc->sess_open;
	pthread_mutex_unlock(&mc->lock);
	return o;
}

bool monc_ever_opened(struct monc *mc)
{
	bool o;

	pthread_mutex_lock(&mc->lock);
	o = mc->ever_open;
	pthread_mutex_unlock(&mc->lock);
	return o;
}

bool monc_all_refused(struct monc *mc)
{
	bool all = true;

	pthread_mutex_lock(&mc->lock);
	if (mc->ever_open)
		all = false;
	for (uint32_t i = 0; all && i < mc->ncand; i++)
		all = mc->cand[i].last_err == -ECONNREFUSED;
	pthread_mutex_unlock(&mc->lock);
	return all;
}

const char *monc_describe(struct monc *mc, char *buf, size_t len)
{
	size_t pos = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	pthread_mutex_lock(&mc->lock);
	for (uint32_t i = 0; i < mc->ncand && pos < len; i++) {
		int n = snprintf(buf + pos, len - pos, "%s%s (%s)", i ? ", " : "",
				 mc->cand[i].addr, err_name(mc->cand[i].last_err));

		if (n < 0)
			break;
		pos += (size_t)n;
	}
	pthread_mutex_unlock(&mc->lock);
	return buf;
}

const char *monc_session_addr(struct monc *mc, char *buf, size_t len)
{
	pthread_mutex_lock(&mc->lock);
	snprintf(buf, len, "%s", mc->sess_open ? mc->cand[mc->sess_idx].addr : "");
	pthread_mutex_unlock(&mc->lock);
	return buf;
}
