/*
 * msg_handshake.c - how a messenger connection comes up, on the loop
 * thread: dialling (a non-blocking connect(2), armed with the handshake
 * deadline), accepting, and the hello exchange that opens it.  It is
 * apart from msg_conn.c because it is where a peer is admitted (the
 * fsid check, and with msgr_config.auth the proofs of msg_auth.c), and
 * that grows on its own.
 *
 * Each side sends a hello (our identity, features and cluster fsid) as
 * the first frame: the dialler as soon as TCP is up, the acceptor once
 * it has the dialler's.  Nothing else may come before it (msg_rx.c
 * refuses any other frame, or a second hello).  A connection whose
 * hello does not arrive within handshake_timeout_ms of dialling or
 * accepting fails.  Fsids must match when both sides know theirs; a
 * dialler that does not know its own yet learns it from the peer.
 * Failures go through msg_conn__fail() like any other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "encode.h"
#include "log.h"
#include "mono.h"
#include "msg_auth.h"
#include "msgr_int.h"

static bool fsid_zero(const uint8_t fsid[16])
{
	for (int i = 0; i < 16; i++)
		if (fsid[i])
			return false;
	return true;
}

static void fsid_str(const uint8_t fsid[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", fsid[i]);
}

/* ---- handshake ---- */

static int conn_make_hello(struct msg_conn *c)
{
	struct msgr *mr = c->msgr;
	struct msg_hello h = { .who = mr->cfg.me, .features = mr->cfg.features };
	struct enc e, blob;
	size_t len;
	int r = 0;

	pthread_mutex_lock(&mr->lock);
	memcpy(h.fsid, mr->fsid, sizeof(h.fsid));
	pthread_mutex_unlock(&mr->lock);
	enc_init(&e);
	enc_init(&blob);
	if (c->dialled)
		c->auth_none = false;	/* a (re)dial offers authentication again */
	if (mr->cfg.auth && !c->auth_none) {
		r = msg_auth__hello_blob(c, &blob);
		h.auth = blob.buf;
		h.auth_len = blob.len;
	}
	if (!r)
		msg_hello_frame(&e, &h);
	enc_free(&blob);
	free(c->hs_buf);
	c->hs_buf = r ? NULL : enc_take(&e, &len);
	if (!c->hs_buf) {
		enc_free(&e);
		return r ? r : -ENOMEM;
	}
	c->hs_len = len;
	c->hs_off = 0;
	/* the transcript covers our hello's front as it goes on the wire */
	if (mr->cfg.auth && !c->auth_none)
		return msg_auth__hello_sent(c, c->hs_buf + MSG_HEADER_LEN,
					    len - MSG_HEADER_LEN - MSG_TRAILER_LEN);
	return 0;
}

void msg_conn__hs_timeout(struct msgr *mr, struct mtimer *t)
{
	struct msg_conn *c = container_of(t, struct msg_conn, hs_timer);

	if (c->state != CS_CONNECTING && c->state != CS_HANDSHAKE)
		return;
	if (c->dialled)
		log_info("msgr", "cannot connect to '%s': no handshake within %u ms",
			 c->addr, mr->cfg.handshake_timeout_ms);
	else
		msgr__peer_warn(c, "closing connection '%s': no hello within %u ms",
				c->addr, mr->cfg.handshake_timeout_ms);
	msg_conn__fail(c, -ETIMEDOUT);
}

static int conn_arm_handshake(struct msg_conn *c)
{
	struct msgr *mr = c->msgr;

	return msgr__arm(mr, &c->hs_timer, mono_now_ns() +
			 (uint64_t)mr->cfg.handshake_timeout_ms * 1000000u);
}

/* An accepted connection named its peer: a client or peer slot
 * (msg_admit.c), a full-size receive buffer and the kernel's own
 * receive buffer sizing again. */
static int conn_admit_hello(struct msg_conn *c)
{
	int r = msg_admit__hello(c), zero = 0, size = c->msgr->rcvbuf_default / 2;
	uint8_t *rbuf;

	if (r < 0)
		return r;
	if (c->rbuf_size < MSG_RBUF_SIZE) {
		rbuf = realloc(c->rbuf, MSG_RBUF_SIZE);
		if (!rbuf)
			return -ENOMEM;
		c->rbuf = rbuf;
		c->rbuf_size = MSG_RBUF_SIZE;
	}
	/* The size a new socket has (the kernel doubles what it is given),
	 * then SO_BUF_LOCK 0: the kernel's autotuning again (Linux 5.14);
	 * failing that, a fixed buffer of the default size stays, which is
	 * slower for big transfers but correct. */
	if (c->msgr->cfg.handshake_rcvbuf != UINT32_MAX &&
	    (setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0 ||
	     setsockopt(c->fd, SOL_SOCKET, SO_BUF_LOCK, &zero, sizeof(zero)) < 0))
		log_debug("msgr", "connection '%s': cannot unlock its receive buffer: %s",
			  c->addr, strerror(errno));
	return 0;
}

/* The peer's hello arrived (msg is ours to free).  False when c failed. */
bool msg_conn__rx_hello(struct msg_conn *c, struct msg *msg)
{
	struct msgr *mr = c->msgr;
	struct msg_hello h;
	uint8_t ours[16];
	bool mismatch = false;
	int r;

	r = msg->data_len ? -EBADMSG : msg_hello_decode(msg->front, msg->front_len, &h);
	if (r < 0) {
		log_warn("msgr", "closing connection '%s': malformed hello (%s)",
			 c->addr, strerror(-r));
		msg_free(msg);
		msg_conn__fail(c, r);
		return false;
	}
	pthread_mutex_lock(&mr->lock);
	memcpy(ours, mr->fsid, sizeof(ours));
	if (!fsid_zero(h.fsid) && !fsid_zero(ours) && memcmp(h.fsid, ours, sizeof(ours)))
		mismatch = true;
	else if (c->dialled && fsid_zero(ours) && !fsid_zero(h.fsid))
		memcpy(mr->fsid, h.fsid, sizeof(mr->fsid));	/* learnt */
	pthread_mutex_unlock(&mr->lock);
	if (mismatch) {
		char theirs_s[33], ours_s[33];

		fsid_str(h.fsid, theirs_s);
		fsid_str(ours, ours_s);
		log_warn("msgr", "closing connection '%s': it belongs to cluster fsid %s, "
			 "ours is %s; check the peer's configuration", c->addr, theirs_s, ours_s);
		msg_free(msg);
		msg_conn__fail(c, -EACCES);
		return false;
	}
	if (mr->cfg.auth && !h.auth_len && msg_auth_allows_none(mr->cfg.auth) &&
	    (c->dialled || !msg_auth__hello_done(c))) {
		/* auth_allow_none (turning authentication on, doc/security.md):
		 * a peer that does not authenticate (its hello has no auth
		 * section) is taken as with auth = none, both ways */
		c->auth_none = true;
		msg_auth__conn_free(c);
		log_debug("msgr", "'%s' does not authenticate: taken as with auth = none "
			  "(auth_allow_none)", c->addr);
	}
	if (mr->cfg.auth && !c->auth_none) {
		/* msg_auth.c: the acceptor answers with its challenge, the
		 * dialler with its proof; the connection opens on the
		 * MSG_T_AUTH frames (msg_conn__rx_auth), with the proved
		 * identity.  Until then it stays in a handshaking slot (small
		 * buffers, the oldest evicted for a new one): it takes a
		 * client or cluster-peer slot only at msg_conn__open, by the
		 * class it proved, so that a peer without a key cannot hold
		 * the slots kept for the cluster's daemons. */
		if (!c->dialled && msg_auth__hello_done(c)) {
			log_warn("msgr", "closing connection '%s': a second hello", c->addr);
			r = -EPROTO;
		} else {
			r = msg_auth__rx_hello(c, &h, msg->front, msg->front_len);
		}
		msg_free(msg);	/* h.auth pointed into it */
		if (!r && !c->dialled) {
			pthread_mutex_lock(&c->plock);
			c->peer = h.who;	/* declared, until msg_conn__open */
			pthread_mutex_unlock(&c->plock);
			r = conn_make_hello(c);
		}
		if (r < 0) {
			/* -ENOPROTOOPT: no wire mode in common (msg_auth.c) */
			msg_conn__fail(c, r == -ENOMEM || r == -EIO || r == -ENOPROTOOPT ? r
											  : -EACCES);
			return false;
		}
		msg_conn__flush(c);
		if (c->state == CS_HANDSHAKE && msg_auth__refused(c)) {
			msg_conn__fail(c, -EACCES);	/* after our hello said why */
			return false;
		}
		return c->state == CS_HANDSHAKE && !atomic_load(&c->dead);
	}
	pthread_mutex_lock(&c->plock);
	c->peer = h.who;
	c->peer_features = h.features;
	pthread_mutex_unlock(&c->plock);
	msg_free(msg);	/* h.auth pointed into it; ignored with auth = none */
	if (!c->dialled && (r = conn_admit_hello(c)) < 0) {
		msg_conn__fail(c, r);
		return false;
	}

	if (!c->dialled && conn_make_hello(c) < 0) {
		log_error("msgr", "closing connection '%s': out of memory", c->addr);
		msg_conn__fail(c, -ENOMEM);
		return false;
	}
	return msg_conn__open(c, h.who, h.features);
}

bool msg_conn__open(struct msg_conn *c, struct msg_identity who, uint64_t features)
{
	struct msgr *mr = c->msgr;

	pthread_mutex_lock(&c->plock);
	c->peer = who;
	c->peer_features = features;
	pthread_mutex_unlock(&c->plock);
	if (!c->dialled && c->slot == SLOT_HANDSHAKE) {
		/* authenticated: a slot of the class it proved */
		int r = conn_admit_hello(c);

		if (r < 0) {
			msg_conn__fail(c, r);
			return false;
		}
	}
	msgr__disarm(mr, &c->hs_timer);
	c->last_rx_ns = mono_now_ns();
	c->state = CS_OPEN;
	atomic_store(&c->open, true);
	atomic_store(&c->ticket_refused, false);
	c->backoff_ms = mr->cfg.reconnect_min_ms;
	log_debug("msgr", "connection '%s' open (peer type %u id %llu)", c->addr,
		  who.type, (unsigned long long)who.id);
	if (mr->ops.connected)
		mr->ops.connected(mr->arg, c);
	if (c->state != CS_OPEN)
		return false;
	msg_conn__flush(c);
	return c->state == CS_OPEN && !atomic_load(&c->dead);
}

/* ---- dialling ---- */

static void conn_tcp_up(struct msg_conn *c)
{
	c->state = CS_HANDSHAKE;
	if (conn_make_hello(c) < 0) {
		msg_conn__fail(c, -ENOMEM);
		return;
	}
	msg_conn__update_events(c);
	msg_conn__flush(c);
}

void msg_conn__dial(struct msg_conn *c)
{
	int fd, r, err;

	if (!c->rbuf) {
		c->rbuf_size = MSG_RBUF_SIZE;
		c->rbuf = malloc(MSG_RBUF_SIZE);
		if (!c->rbuf) {
			c->state = CS_CONNECTING;
			msg_conn__fail(c, -ENOMEM);
			return;
		}
	}
	fd = socket(c->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		log_warn("msgr", "cannot connect to '%s': %s", c->addr, strerror(-err));
		c->state = CS_CONNECTING;
		msg_conn__fail(c, err);
		return;
	}
	r = connect(fd, (struct sockaddr *)&c->sa, c->salen);
	err = r < 0 ? -errno : 0;
	c->state = CS_CONNECTING;
	if (err && err != -EINPROGRESS) {
		close(fd);
		log_debug("msgr", "cannot connect to '%s': %s", c->addr, strerror(-err));
		msg_conn__fail(c, err);
		return;
	}
	err = msg_conn__attach_fd(c, fd);
	if (!err)
		err = conn_arm_handshake(c);
	if (err) {
		if (c->fd < 0)
			close(fd);
		log_error("msgr", "cannot connect to '%s': %s", c->addr, strerror(-err));
		msg_conn__fail(c, err);
		return;
	}
	if (r == 0)
		conn_tcp_up(c);
}

void msg_conn__connect_done(struct msg_conn *c)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		log_debug("msgr", "cannot connect to '%s': %s", c->addr, strerror(err));
		msg_conn__fail(c, -err);
		return;
	}
	conn_tcp_up(c);
}

void msg_conn__accepted(struct msgr *mr, int fd, const struct sockaddr *sa,
			socklen_t salen)
{
	struct msg_conn *c = msg_conn__alloc(mr, false);
	int err = -ENOMEM, rcvbuf = (int)mr->cfg.handshake_rcvbuf;

	if (!c)
		goto out_drop_c;
	if ((size_t)salen > sizeof(c->sa))
		salen = sizeof(c->sa);
	memcpy(&c->sa, sa, salen);
	c->salen = salen;
	msgr__format_addr(sa, c->addr, sizeof(c->addr));
	/* a slot (msg_admit.c), or the connection goes at once */
	err = msg_admit__accept(mr, c);
	if (err)
		goto out_refused;
	/* until its hello, a stranger gets a small receive buffer, ours and
	 * the kernel's */
	err = -ENOMEM;
	c->rbuf_size = MSG_RBUF_HS_SIZE;
	if (!(c->rbuf = malloc(c->rbuf_size)))
		goto out_drop_c;
	if (mr->cfg.handshake_rcvbuf != UINT32_MAX)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	atomic_fetch_add(&mr->budget->ref, 1);
	c->budget = mr->budget;
	err = msg_conn__attach_fd(c, fd);
	if (err)
		goto out_drop_c;
	err = conn_arm_handshake(c);
	if (err)
		goto out_drop_c;
	pthread_mutex_lock(&mr->lock);
	c->all_next = mr->all;
	if (mr->all)
		mr->all->all_prev = c;
	mr->all = c;
	pthread_mutex_unlock(&mr->lock);
	log_debug("msgr", "accepted connection '%s'", c->addr);
	return;

out_drop_c:
	log_error("msgr", "cannot accept a connection: %s", strerror(-err));
out_refused:
	close(fd);		/* also leaves the epoll set */
	if (c) {
		msg_admit__closed(c);
		c->fd = -1;
		msg_conn__drop(c);
	}
}

