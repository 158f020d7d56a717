/*
 * mds_session.c - what the MDS knows of each client between its requests:
 * whether its connection is there (and since when it is gone), the files
 * it holds open, and why it was evicted (doc/fs-design.md, "Sessions whose
 * client is gone").
 *
 * A client that dies without unmounting (kill -9, a crashed host) never
 * sends SESSION_END: its session would stay in fs.sessions, the files it
 * had open would stay open, so an unlinked one would never be purged.
 * So the MDS notes, per client, the connection of its last request, and
 * when that connection closes, the time; a client whose connection stays
 * gone for mds_session_timeout_ms (it redials and resends at once when it
 * lives) is evicted like one that missed the reconnect window
 * (mds_main.c): its session goes, its opens are released (its orphans
 * purged), and it is refused from then on.  Its leases went with its
 * connection already (mds_lease.c).
 *
 * Two tables: the connections (its own lock: the loop thread notes a
 * close, whoever handles a request notes the connection), and the opens,
 * counted per (client, inode) next to the node's own count (under m->lock,
 * like the namespace).  The reasons of evictions are kept in memory only:
 * after a restart an evicted client is told it was evicted before it.
 * Persisted (m->lock): the clients with a session (fs.sessions) and the
 * evicted ones (fs.evicted), loaded at start (mds_session_load).
 */
#include "mds.h"
#include "mono.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atoll/atoll.h>

#include "log.h"

#define SUB "mds"

#define SESS_OPEN_BUCKETS 4096u

struct sconn {
	uint64_t client;
	struct msg_conn *conn;	/* its last request's connection (no reference: cleared at close) */
	uint64_t gone_ms;	/* when it closed (0: connected) */
	struct sconn *next;
};

struct sopen {
	uint64_t client, ino;
	int count;
	uint64_t gen;		/* the reconnect of its last re-count (0: none) */
	struct sopen *next;
};

/* How many (client, inode) open records a client has (m->lock):
 * mds_sess_open_check's bound, without a walk of the table. */
struct scount {
	uint64_t client;
	uint32_t n;
	struct scount *next;
};
#define SESS_COUNT_BUCKETS 256u

struct sreason {
	uint64_t client;
	char why[200];
	struct sreason *next;
};

static struct {
	pthread_mutex_t lock;	/* conns, reasons */
	struct sconn *conns;
	struct sconn *last;	/* the last one noted: most requests come from it again */
	struct sreason *reasons;
	unsigned nreasons;
	struct sopen *opens[SESS_OPEN_BUCKETS];	/* m->lock */
	struct scount *counts[SESS_COUNT_BUCKETS];	/* m->lock */
} S = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct sconn *conn_find(uint64_t client)
{
	if (S.last && S.last->client == client)
		return S.last;
	for (struct sconn *s = S.conns; s; s = s->next)
		if (s->client == client)
			return S.last = s;
	return NULL;
}

static struct sconn *conn_get(uint64_t client)
{
	struct sconn *s = conn_find(client);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->client = client;
	s->next = S.conns;
	S.conns = s;
	return S.last = s;
}

void mds_sess_seen(uint64_t client, struct msg_conn *c)
{
	if (!client)
		return;
	pthread_mutex_lock(&S.lock);
	struct sconn *s = conn_get(client);
	if (s) {
		s->conn = c;
		s->gone_ms = 0;
	}
	pthread_mutex_unlock(&S.lock);
}

void mds_sess_absent(uint64_t client)
{
	pthread_mutex_lock(&S.lock);
	struct sconn *s = conn_get(client);
	if (s && !s->conn && !s->gone_ms)
		s->gone_ms = mono_now_ms();
	pthread_mutex_unlock(&S.lock);
}

void mds_sess_closed(struct msg_conn *c)
{
	uint64_t now = mono_now_ms();

	pthread_mutex_lock(&S.lock);
	for (struct sconn *s = S.conns; s; s = s->next)
		if (s->conn == c) {
			s->conn = NULL;
			s->gone_ms = now;
		}
	pthread_mutex_unlock(&S.lock);
}

size_t mds_sess_expired(uint32_t timeout_ms, uint64_t *out, size_t max)
{
	uint64_t now = mono_now_ms();
	size_t n = 0;

	pthread_mutex_lock(&S.lock);
	for (struct sconn *s = S.conns; s && n < max; s = s->next)
		if (!s->conn && s->gone_ms && now - s->gone_ms >= timeout_ms)
			out[n++] = s->client;
	pthread_mutex_unlock(&S.lock);
	return n;
}

bool mds_sess_gone(uint64_t client, uint32_t timeout_ms)
{
	pthread_mutex_lock(&S.lock);
	struct sconn *s = conn_find(client);
	bool gone = s && !s->conn && s->gone_ms && mono_now_ms() - s->gone_ms >= timeout_ms;
	pthread_mutex_unlock(&S.lock);
	return gone;
}

void mds_sess_forget(uint64_t client)
{
	pthread_mutex_lock(&S.lock);
	for (struct sconn **pp = &S.conns; *pp; pp = &(*pp)->next)
		if ((*pp)->client == client) {
			struct sconn *s = *pp;
			*pp = s->next;
			if (S.last == s)
				S.last = NULL;
			free(s);
			break;
		}
	pthread_mutex_unlock(&S.lock);
}

/* ---- opens (m->lock) ---------------------------------------------------------- */

static unsigned open_bucket(uint64_t client, uint64_t ino)
{
	return (unsigned)((ino * 0x9e3779b97f4a7c15ull ^ client) % SESS_OPEN_BUCKETS);
}

/* The count of client's open records, made when add is set (NULL: none,
 * or out of memory). */
static struct scount *scount_find(uint64_t client, bool add)
{
	struct scount **pp = &S.counts[client % SESS_COUNT_BUCKETS], *c;

	for (c = *pp; c; c = c->next)
		if (c->client == client)
			return c;
	if (add && (c = calloc(1, sizeof(*c)))) {
		c->client = client;
		c->next = *pp;
		*pp = c;
	}
	return c;
}

/* One open record of client fewer (freed with the last). */
static void scount_drop(uint64_t client)
{
	for (struct scount **pp = &S.counts[client % SESS_COUNT_BUCKETS]; *pp; pp = &(*pp)->next) {
		struct scount *c = *pp;

		if (c->client != client)
			continue;
		if (--c->n == 0) {
			*pp = c->next;
			free(c);
		}
		return;
	}
}

/* The record of (client, ino), made when add is set (NULL: none, or out
 * of memory); *prev: where it hangs. */
static struct sopen *sopen_find(uint64_t client, uint64_t ino, bool add, struct sopen ***prev)
{
	struct sopen **pp = &S.opens[open_bucket(client, ino)], *o;

	for (o = *pp; o; pp = &o->next, o = o->next)
		if (o->client == client && o->ino == ino)
			break;
	if (!o && add && (o = calloc(1, sizeof(*o)))) {
		struct scount *c = scount_find(client, true);

		if (!c) {
			free(o);
			o = NULL;
		} else {
			c->n++;
			o->client = client;
			o->ino = ino;
			o->next = *pp;
			*pp = o;
		}
	}
	*prev = pp;
	return o;
}

static void sopen_drop_if_none(struct sopen *o, struct sopen **pp)
{
	if (o->count <= 0 && !o->gen) {
		*pp = o->next;	/* pp holds o */
		scount_drop(o->client);
		free(o);
	}
}

int mds_sess_open(uint64_t client, uint64_t ino, int delta, uint64_t gen)
{
	struct sopen **pp, *o = sopen_find(client, ino, delta > 0, &pp);

	if (!o)
		return 0;	/* opened before an MDS restart and not re-counted, or
				 * out of memory (not released if it dies: a restart
				 * purges it) */
	if (delta < 0 && gen < o->gen)
		return 0;	/* the re-count after a reconnect left it out */
	if (delta < 0 && o->count + delta < 0)
		delta = -o->count;
	o->count += delta;
	sopen_drop_if_none(o, pp);
	return delta;
}

int mds_sess_open_check(uint64_t client, uint64_t ino, uint32_t max)
{
	struct sopen **pp;
	struct scount *c;

	if (!max || sopen_find(client, ino, false, &pp))
		return 0;	/* no limit, or one more of a file it holds */
	c = scount_find(client, false);
	return c && c->n >= max ? -EMFILE : 0;
}

int mds_sess_reopen(uint64_t client, uint64_t ino, int count, uint64_t gen)
{
	struct sopen **pp, *o = sopen_find(client, ino, true, &pp);

	if (!o)
		return 0;
	if (gen < o->gen)
		return 0;	/* an older re-count, late */
	/* never fewer: an OPEN of the client in flight beside the re-count
	 * may have been counted already; a count too high only keeps an
	 * unlinked file until the client's session ends */
	int delta = count > o->count ? count - o->count : 0;

	o->count += delta;
	o->gen = gen;
	/* kept with a count of 0 while gen says which CLOSEs are stale;
	 * the session's end frees it */
	return delta;
}

size_t mds_sess_take_opens(uint64_t client, void (*fn)(void *arg, uint64_t ino, int count),
			   void *arg)
{
	size_t n = 0;

	for (unsigned b = 0; b < SESS_OPEN_BUCKETS; b++) {
		struct sopen **pp = &S.opens[b];
		while (*pp) {
			struct sopen *o = *pp;
			if (o->client != client) {
				pp = &o->next;
				continue;
			}
			*pp = o->next;
			fn(arg, o->ino, o->count);
			scount_drop(o->client);
			free(o);
			n++;
		}
	}
	return n;
}

/* ---- why a client was evicted --------------------------------------------------- */

void mds_sess_set_reason(uint64_t client, const char *why)
{
	pthread_mutex_lock(&S.lock);
	struct sreason *r;
	for (r = S.reasons; r && r->client != client; r = r->next)
		;
	if (!r && S.nreasons < MDS_EVICTED_MAX && (r = calloc(1, sizeof(*r)))) {
		r->client = client;
		r->next = S.reasons;
		S.reasons = r;
		S.nreasons++;
	}
	if (r)
		snprintf(r->why, sizeof(r->why), "%s", why);
	pthread_mutex_unlock(&S.lock);
}

void mds_sess_reason(uint64_t client, char *buf, size_t len)
{
	pthread_mutex_lock(&S.lock);
	struct sreason *r;
	for (r = S.reasons; r && r->client != client; r = r->next)
		;
	snprintf(buf, len, "%s", r ? r->why : "it was evicted before the MDS's last restart");
	pthread_mutex_unlock(&S.lock);
}

void mds_sess_fini(void)
{
	while (S.conns) {
		struct sconn *s = S.conns;
		S.conns = s->next;
		free(s);
	}
	S.last = NULL;
	while (S.reasons) {
		struct sreason *r = S.reasons;
		S.reasons = r->next;
		free(r);
	}
	for (unsigned b = 0; b < SESS_OPEN_BUCKETS; b++)
		while (S.opens[b]) {
			struct sopen *o = S.opens[b];
			S.opens[b] = o->next;
			free(o);
		}
	for (unsigned b = 0; b < SESS_COUNT_BUCKETS; b++)
		while (S.counts[b]) {
			struct scount *c = S.counts[b];
			S.counts[b] = c->next;
			free(c);
		}
}

/* ---- the persisted list of sessions (fs.sessions) ----------------------------- */

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
	if (m->max_sessions && m->nsess >= m->max_sessions) {
		log_warn(SUB, "refusing a session to client %llu: %zu sessions already "
			 "(mds_max_sessions)", (unsigned long long)client, m->nsess);
		return MDS_RC_TOO_MANY_SESSIONS;
	}
	snprintf(key, sizeof(key), "%016" PRIx64, client);
	struct atoll_kv kv = { key, 16, "", 0 };
	ret = atoll_omap_set(m->meta, "fs.sessions", &kv, 1, 0);
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
			int ret = atoll_omap_rm(m->meta, "fs.sessions", &kv, 1, 0);
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

int mds_session_evicted_add(struct mds *m, uint64_t client)
{
	char key[17], val[17];

	snprintf(key, sizeof(key), "%016" PRIx64, client);
	snprintf(val, sizeof(val), "%016" PRIx64, mds_now());
	struct atoll_kv kv = { key, 16, val, 16 };
	int ret = atoll_omap_set(m->meta, EVICTED_OID, &kv, 1, 0);
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
		atoll_omap_rm(m->meta, EVICTED_OID, &kv, 1, 0);	/* expired; a failure: next start */
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

/* Start: loads fs.sessions (the clients the reconnect window waits for)
 * and fs.evicted (those refused), dropping expired evictions. */
int mds_session_load(struct mds *m)
{
	int ret = mds_store_omap_each(m, "fs.sessions", load_session, NULL);

	if (!ret)
		ret = mds_store_omap_each(m, EVICTED_OID, load_evicted, NULL);
	if (!ret && m->nevicted)
		log_info(SUB, "%zu client(s) evicted within the last %d s stay refused",
			 m->nevicted, MDS_EVICT_SECONDS);
	return ret;
}
