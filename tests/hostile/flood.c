/*
 * atoll-flood - a hostile-peer load generator for the `hostile` test suite
 * (issue 35): against one daemon address it opens many connections and
 * holds them, holds half-open handshakes (slowloris), sends frame headers
 * announcing 64 MiB whose payload never comes, and fires ops naming a
 * future map epoch.  Loopback only, bounded in count and time.
 *
 * It never parses what the daemon says: every connection's bytes are
 * written up front (or dripped) and whatever comes back is read and
 * discarded.  A connection the daemon closes is reopened after a pause
 * (200 ms, doubling up to 5 s while the daemon keeps closing it within
 * 5 s), so the pressure holds for the whole run without a connect storm.  Roles, per connection:
 *
 *   hold     atoll: a client hello, then a keepalive every second (so the
 *            daemon's keepalive timeout does not close it); nbd: client
 *            flags and NBD_OPT_EXPORT_NAME, then idle in transmission
 *   slow     half of them send nothing, half drip their hello (or NBD
 *            client flags and option) one byte per second
 *   big      the hello, then a frame header with data_len 64 MiB (an
 *            MT_OSD_OP; for nbd an NBD_CMD_WRITE of 64 MiB), then silence
 *   future   atoll only: a client hello, then its share of the --future
 *            MT_OSD_OP requests, each a STAT carrying map epoch --epoch
 *            (sent once; a reopened connection only says hello again)
 *
 * With --as osd, every hello declares an OSD (osd.0) and carries a
 * well-formed authentication section asking to prove osd.0's key, but the
 * proof never comes: what a peer without a key can do to take the slots
 * kept for the cluster's daemons (they must stay handshaking slots, the
 * oldest evicted for a new one, until a proof: lib/msg_admit.c).
 *
 * Source addresses rotate over 127.0.0.<src-first>..<src-last> (bound
 * before connect); the target must be a 127.x address.  At the end (the
 * duration, SIGINT or SIGTERM) every socket is closed and one line of
 * statistics (key=value) goes to stdout; exit 0.  Exit 2 for bad usage or
 * setup (target not on loopback, RLIMIT_NOFILE cannot be raised enough).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "auth.h"
#include "encode.h"
#include "mono.h"
#include "msg.h"
#include "msg_frame.h"
#include "proto.h"

#define FLOOD_MAX_CONNS		20000u	/* all roles together */
#define FLOOD_MAX_DURATION_S	600u
#define FLOOD_MAX_FUTURE	1000000u
#define BIG_LEN			(64u << 20)
#define TICK_MS			100u
#define DRIP_MS			1000u
#define KEEPALIVE_MS		1000u
#define REOPEN_MIN_MS		200u
#define REOPEN_MAX_MS		5000u
/* A connection the daemon closes sooner than this after it opened is
 * reopened with a growing backoff: a daemon that refuses what is over its
 * limits gets a bounded rate of attempts, not a connect storm. */
#define HELD_MS			5000u

enum role { R_HOLD, R_SLOW_NONE, R_SLOW_DRIP, R_BIG, R_FUTURE, R_COUNT };
static const char *const role_name[R_COUNT] = {
	"hold", "slow_none", "slow_drip", "big", "future",
};

enum cstate { C_IDLE, C_CONNECTING, C_OPEN };

struct fconn {
	int fd;
	uint8_t role;
	uint8_t state;
	bool sent_ops;		/* future: its ops were queued once already */
	bool want_out;		/* EPOLLOUT is in the interest set */
	uint32_t ops_pending;	/* future: ops in out not yet written */
	uint32_t idx;
	uint32_t backoff_ms;
	uint64_t next_ms;	/* C_IDLE: reopen; C_OPEN: next drip/keepalive */
	uint64_t opened_ms;	/* when the connection was established */
	uint8_t *out;
	size_t out_len, out_pos;
};

struct stats {
	uint64_t attempts, established, connect_failed, peer_closed;
	uint64_t bytes_in, bytes_out, future_queued, future_written;
	uint32_t open_now[R_COUNT], open_max[R_COUNT];
};

struct flood {
	struct sockaddr_in target;
	bool nbd;
	const char *export_name;
	uint32_t n[R_COUNT];
	uint32_t future_ops, future_conns;
	uint64_t epoch;
	uint32_t pool;
	uint32_t src_first, src_last;
	uint32_t duration_s;
	bool as_osd;		/* --as osd */
	bool verbose;
	int ep;
	struct fconn *c;
	uint32_t nconn;
	uint64_t next_tid;
	uint32_t future_left;
	struct stats st;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* ---- what each role writes ------------------------------------------------ */

static int out_append(struct fconn *fc, const void *p, size_t n)
{
	size_t live = fc->out_len - fc->out_pos;
	uint8_t *b = malloc(live + n);

	if (!b)
		return -ENOMEM;
	if (live)
		memcpy(b, fc->out + fc->out_pos, live);
	memcpy(b + live, p, n);
	free(fc->out);
	fc->out = b;
	fc->out_len = live + n;
	fc->out_pos = 0;
	return 0;
}

static void out_drop(struct fconn *fc)
{
	free(fc->out);
	fc->out = NULL;
	fc->out_len = fc->out_pos = 0;
}

/* A frame whose front is f (flen bytes) and with no data. */
static int put_frame(struct fconn *fc, uint16_t type, uint64_t tid,
		     const void *f, uint32_t flen)
{
	struct msg_hdr h = { .type = type, .tid = tid, .front_len = flen };
	uint8_t hdr[MSG_HEADER_LEN], tail[MSG_TRAILER_LEN];
	uint32_t crc = msg_payload_crc(f, flen, NULL, 0);
	int r;

	msg_hdr_encode(hdr, &h);
	tail[0] = (uint8_t)crc;
	tail[1] = (uint8_t)(crc >> 8);
	tail[2] = (uint8_t)(crc >> 16);
	tail[3] = (uint8_t)(crc >> 24);
	r = out_append(fc, hdr, sizeof(hdr));
	if (!r && flen)
		r = out_append(fc, f, flen);
	if (!r)
		r = out_append(fc, tail, sizeof(tail));
	return r;
}

static int put_hello(struct flood *fl, struct fconn *fc)
{
	struct msg_hello h = {
		.who = { .type = MSG_ENTITY_CLIENT,
			 .id = ((uint64_t)getpid() << 32) | fc->idx },
	};
	struct enc e, blob;
	void *buf;
	size_t len;
	int r;

	enc_init(&e);
	enc_init(&blob);
	if (fl->as_osd) {
		/* osd.0 asking to prove its key: a valid auth section, no proof */
		struct auth_hello_req rq = { .methods = AUTH_METHOD_KEY | AUTH_METHOD_TICKET,
					     .modes = AUTH_MODE_CRC | AUTH_MODE_SECURE };

		h.who.type = MSG_ENTITY_OSD;
		h.who.id = 0;
		strcpy(rq.entity, "osd.0");
		for (size_t i = 0; i < sizeof(rq.nonce); i++)
			rq.nonce[i] = (uint8_t)(fc->idx * 131 + i);
		auth_hello_req_encode(&rq, &blob);
		h.auth = blob.buf;
		h.auth_len = blob.len;
	}
	msg_hello_frame(&e, &h);
	enc_free(&blob);
	buf = enc_take(&e, &len);
	if (!buf) {
		enc_free(&e);
		return -ENOMEM;
	}
	r = out_append(fc, buf, len);
	free(buf);
	return r;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

/* NBD fixed newstyle: client flags, then NBD_OPT_EXPORT_NAME. */
static int put_nbd_open(struct flood *fl, struct fconn *fc)
{
	size_t nl = strlen(fl->export_name);
	uint8_t b[4 + 16 + 256];

	if (nl > 256)
		return -ENAMETOOLONG;
	put_be32(b, 3);				/* FIXED_NEWSTYLE | NO_ZEROES */
	put_be64(b + 4, 0x49484156454f5054ULL);	/* "IHAVEOPT" */
	put_be32(b + 12, 1);			/* NBD_OPT_EXPORT_NAME */
	put_be32(b + 16, (uint32_t)nl);
	memcpy(b + 20, fl->export_name, nl);
	return out_append(fc, b, 20 + nl);
}

/* A STAT of one object carrying a map epoch the cluster has not reached. */
static int put_future_op(struct flood *fl, struct fconn *fc, uint32_t n)
{
	struct osd_subop sub = { .code = OSD_OP_STAT };
	char oid[32];
	struct osd_op_req req = {
		.reqid = { .client = ((uint64_t)getpid() << 32) | fc->idx,
			   .tid = ++fl->next_tid },
		.epoch = fl->epoch,
		.pool = fl->pool,
		.pg = n % 64,
		.oid = oid,
		.nops = 1,
		.ops = &sub,
	};
	const void *data;
	size_t dlen;
	bool owned;
	struct enc e;
	int r;

	req.oid_len = (uint32_t)snprintf(oid, sizeof(oid), "flood.%08u", n);
	enc_init(&e);
	r = osd_op_req_encode(&req, &e, &data, &dlen, &owned);
	if (owned)
		free((void *)data);
	if (!r && e.err)
		r = e.err;
	if (!r)
		r = put_frame(fc, MT_OSD_OP, fl->next_tid, e.buf, (uint32_t)e.len);
	enc_free(&e);
	return r;
}

/* The bytes a connection of fc's role writes once it is open. */
static int fill_opening(struct flood *fl, struct fconn *fc)
{
	uint8_t big[32];
	int r = 0;

	switch (fc->role) {
	case R_SLOW_NONE:
		return 0;
	case R_HOLD:
	case R_SLOW_DRIP:
		return fl->nbd ? put_nbd_open(fl, fc) : put_hello(fl, fc);
	case R_BIG:
		if (fl->nbd) {
			r = put_nbd_open(fl, fc);
			put_be32(big, 0x25609513u);	/* request magic */
			big[4] = big[5] = 0;		/* flags */
			big[6] = 0;
			big[7] = 1;			/* NBD_CMD_WRITE */
			put_be64(big + 8, ++fl->next_tid);
			put_be64(big + 16, 0);		/* offset */
			put_be32(big + 24, BIG_LEN);
			return r ? r : out_append(fc, big, 28);
		} else {
			struct msg_hdr h = { .type = MT_OSD_OP, .tid = ++fl->next_tid,
					     .front_len = 256, .data_len = BIG_LEN };

			r = put_hello(fl, fc);
			msg_hdr_encode(big, &h);
			return r ? r : out_append(fc, big, MSG_HEADER_LEN);
		}
	case R_FUTURE:
		r = put_hello(fl, fc);
		if (r || fc->sent_ops)
			return r;
		fc->sent_ops = true;
		{
			/* this connection's share, spread evenly */
			uint32_t share = fl->future_ops / fl->future_conns +
				(fc->idx % fl->future_conns < fl->future_ops % fl->future_conns);

			for (uint32_t i = 0; i < share && !r && fl->future_left; i++) {
				r = put_future_op(fl, fc, fl->future_left--);
				fl->st.future_queued++;
				fc->ops_pending++;
			}
		}
		return r;
	}
	return -EINVAL;
}

/* ---- connections ------------------------------------------------------------ */

static void set_out_interest(struct flood *fl, struct fconn *fc, bool want)
{
	struct epoll_event ev = { .events = EPOLLIN | (want ? EPOLLOUT : 0),
				  .data.u32 = fc->idx };

	if (want == fc->want_out)
		return;
	fc->want_out = want;
	epoll_ctl(fl->ep, EPOLL_CTL_MOD, fc->fd, &ev);
}

static void conn_close(struct flood *fl, struct fconn *fc, uint64_t now, bool by_peer)
{
	if (fc->state == C_OPEN && fl->st.open_now[fc->role])
		fl->st.open_now[fc->role]--;
	if (by_peer)
		fl->st.peer_closed++;
	close(fc->fd);
	fc->fd = -1;
	if (fc->state == C_OPEN && now >= fc->opened_ms + HELD_MS)
		fc->backoff_ms = 0;	/* it was held: start over */
	fc->state = C_IDLE;
	out_drop(fc);
	fc->ops_pending = 0;
	fc->backoff_ms = fc->backoff_ms ? fc->backoff_ms * 2 : REOPEN_MIN_MS;
	if (fc->backoff_ms > REOPEN_MAX_MS)
		fc->backoff_ms = REOPEN_MAX_MS;
	fc->next_ms = now + fc->backoff_ms;
}

static void conn_open(struct flood *fl, struct fconn *fc, uint64_t now)
{
	uint32_t span = fl->src_last - fl->src_first + 1;
	struct sockaddr_in src = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(0x7f000000u | (fl->src_first + fc->idx % span)),
	};
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.u32 = fc->idx };
	int one = 1, fd, r;

	fl->st.attempts++;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out_retry;
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0)
		goto out_close;
	r = connect(fd, (struct sockaddr *)&fl->target, sizeof(fl->target));
	if (r < 0 && errno != EINPROGRESS)
		goto out_close;
	if (epoll_ctl(fl->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
		goto out_close;
	fc->fd = fd;
	fc->state = C_CONNECTING;
	fc->want_out = true;
	return;

out_close:
	close(fd);
out_retry:
	fl->st.connect_failed++;
	fc->fd = -1;
	fc->state = C_IDLE;
	fc->backoff_ms = fc->backoff_ms ? fc->backoff_ms * 2 : REOPEN_MIN_MS;
	if (fc->backoff_ms > REOPEN_MAX_MS)
		fc->backoff_ms = REOPEN_MAX_MS;
	fc->next_ms = now + fc->backoff_ms;
}

/* Writes what is due: everything queued, or one byte for a dripping
 * connection (its next byte at next_ms). */
static void conn_write(struct flood *fl, struct fconn *fc, uint64_t now)
{
	bool drip = fc->role == R_SLOW_DRIP;

	while (fc->out_pos < fc->out_len) {
		size_t n = drip ? 1 : fc->out_len - fc->out_pos;
		ssize_t w;

		if (drip && now < fc->next_ms)
			break;
		w = send(fc->fd, fc->out + fc->out_pos, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				set_out_interest(fl, fc, true);
				return;
			}
			conn_close(fl, fc, now, true);
			return;
		}
		fc->out_pos += (size_t)w;
		fl->st.bytes_out += (uint64_t)w;
		if (drip) {
			fc->next_ms = now + DRIP_MS;
			break;
		}
	}
	if (fc->out_pos == fc->out_len) {
		fl->st.future_written += fc->ops_pending;
		fc->ops_pending = 0;
		out_drop(fc);
	}
	set_out_interest(fl, fc, false);
}

static void conn_established(struct flood *fl, struct fconn *fc, uint64_t now)
{
	int err = 0;
	socklen_t el = sizeof(err);

	if (getsockopt(fc->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
		fl->st.connect_failed++;
		fl->st.open_now[fc->role]++;	/* conn_close takes it back */
		fc->state = C_OPEN;
		conn_close(fl, fc, now, false);
		return;
	}
	fc->state = C_OPEN;
	fc->opened_ms = now;
	fl->st.established++;
	if (++fl->st.open_now[fc->role] > fl->st.open_max[fc->role])
		fl->st.open_max[fc->role] = fl->st.open_now[fc->role];
	fc->next_ms = now + (fc->role == R_SLOW_DRIP ? 0 : KEEPALIVE_MS);
	if (fill_opening(fl, fc) < 0) {
		conn_close(fl, fc, now, false);
		return;
	}
	conn_write(fl, fc, now);
}

static void conn_read(struct flood *fl, struct fconn *fc, uint64_t now)
{
	static uint8_t scratch[65536];

	for (;;) {
		ssize_t n = recv(fc->fd, scratch, sizeof(scratch), 0);

		if (n > 0) {
			fl->st.bytes_in += (uint64_t)n;
			if ((size_t)n < sizeof(scratch))
				return;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		conn_close(fl, fc, now, true);
		return;
	}
}

/* Once per tick: reopen what is due, drip, keep held connections alive. */
static void tick(struct flood *fl, uint64_t now)
{
	for (uint32_t i = 0; i < fl->nconn; i++) {
		struct fconn *fc = &fl->c[i];

		if (fc->state == C_IDLE && now >= fc->next_ms) {
			conn_open(fl, fc, now);
			continue;
		}
		if (fc->state != C_OPEN || now < fc->next_ms)
			continue;
		if (fc->role == R_SLOW_DRIP) {
			conn_write(fl, fc, now);
		} else if (!fl->nbd && (fc->role == R_HOLD || fc->role == R_FUTURE) &&
			   fc->out_pos == fc->out_len) {
			fc->next_ms = now + KEEPALIVE_MS;
			if (put_frame(fc, MSG_T_KEEPALIVE, 0, NULL, 0) == 0)
				conn_write(fl, fc, now);
		}
	}
}

static void print_stats(const struct flood *fl, const char *when, FILE *f)
{
	fprintf(f, "flood %s: attempts=%llu established=%llu connect_failed=%llu "
		"peer_closed=%llu bytes_in=%llu bytes_out=%llu future_queued=%llu "
		"future_written=%llu", when,
		(unsigned long long)fl->st.attempts, (unsigned long long)fl->st.established,
		(unsigned long long)fl->st.connect_failed,
		(unsigned long long)fl->st.peer_closed, (unsigned long long)fl->st.bytes_in,
		(unsigned long long)fl->st.bytes_out,
		(unsigned long long)fl->st.future_queued,
		(unsigned long long)fl->st.future_written);
	for (int r = 0; r < R_COUNT; r++)
		if (fl->n[r])
			fprintf(f, " %s_open=%u %s_max=%u", role_name[r], fl->st.open_now[r],
				role_name[r], fl->st.open_max[r]);
	fputc('\n', f);
	fflush(f);
}

/* ---- setup -------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: atoll-flood --target 127.x.y.z:PORT [options]\n"
		"  --proto atoll|nbd     what the target speaks (default atoll)\n"
		"  --export NAME         nbd: the export to open (default 'flood')\n"
		"  --conns N             connections opened and held (default 4000)\n"
		"  --halfopen N          half-open handshakes, slowloris (default 500)\n"
		"  --big N               headers announcing 64 MiB, never sent (default 200)\n"
		"  --future N            OSD ops with a future map epoch (default 0)\n"
		"  --future-conns N      connections that carry them (default 8)\n"
		"  --epoch E             their map epoch (default 2^40)\n"
		"  --pool ID             their pool (default 1)\n"
		"  --duration S          seconds, at most %u (default 30)\n"
		"  --src-first A --src-last B   sources 127.0.0.A..B (default 2..9)\n"
		"  --as client|osd       what the hellos declare (default client); osd:\n"
		"                        osd.0 with an auth section, never a proof\n"
		"  --verbose             statistics every 5 s on stderr\n",
		FLOOD_MAX_DURATION_S);
}

static int parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v > max)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_target(const char *s, struct sockaddr_in *sa)
{
	char ip[64];
	const char *colon = strrchr(s, ':');
	uint32_t port;

	if (!colon || (size_t)(colon - s) >= sizeof(ip))
		return -1;
	memcpy(ip, s, (size_t)(colon - s));
	ip[colon - s] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1 || parse_u32(colon + 1, 65535, &port))
		return -1;
	sa->sin_port = htons((uint16_t)port);
	/* loopback only */
	return (ntohl(sa->sin_addr.s_addr) >> 24) == 127 ? 0 : -1;
}

static int raise_nofile(uint32_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (rl.rlim_cur >= need)
		return 0;
	if (rl.rlim_max < need) {
		rl.rlim_max = need;	/* root may raise the hard limit */
	}
	rl.rlim_cur = need;
	return setrlimit(RLIMIT_NOFILE, &rl) < 0 ? -errno : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "target", required_argument, NULL, 't' },
		{ "proto", required_argument, NULL, 'p' },
		{ "export", required_argument, NULL, 'x' },
		{ "conns", required_argument, NULL, 'c' },
		{ "halfopen", required_argument, NULL, 'h' },
		{ "big", required_argument, NULL, 'b' },
		{ "future", required_argument, NULL, 'f' },
		{ "future-conns", required_argument, NULL, 'F' },
		{ "epoch", required_argument, NULL, 'e' },
		{ "pool", required_argument, NULL, 'P' },
		{ "duration", required_argument, NULL, 'd' },
		{ "src-first", required_argument, NULL, '1' },
		{ "src-last", required_argument, NULL, '2' },
		{ "as", required_argument, NULL, 'a' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, '?' },
		{ 0 },
	};
	struct flood fl = {
		.export_name = "flood",
		.future_conns = 8,
		.epoch = 1ull << 40,
		.pool = 1,
		.src_first = 2,
		.src_last = 9,
		.duration_s = 30,
	};
	uint32_t conns = 4000, halfopen = 500, big = 200, future = 0, v;
	bool have_target = false;
	uint64_t start, end, next_tick, next_report;
	struct sigaction sa = { .sa_handler = on_signal };
	int o, r, k;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 't':
			if (parse_target(optarg, &fl.target) < 0) {
				fprintf(stderr, "atoll-flood: target '%s' is not a 127.x ip:port\n", optarg);
				return 2;
			}
			have_target = true;
			break;
		case 'p':
			if (strcmp(optarg, "nbd") && strcmp(optarg, "atoll")) {
				fprintf(stderr, "atoll-flood: protocol '%s' unknown: atoll or nbd\n", optarg);
				return 2;
			}
			fl.nbd = !strcmp(optarg, "nbd");
			break;
		case 'x':
			fl.export_name = optarg;
			break;
		case 'e':
			fl.epoch = strtoull(optarg, NULL, 10);
			break;
		case 'a':
			if (strcmp(optarg, "osd") && strcmp(optarg, "client")) {
				fprintf(stderr, "atoll-flood: --as '%s' unknown: client or osd\n", optarg);
				return 2;
			}
			fl.as_osd = !strcmp(optarg, "osd");
			break;
		case 'v':
			fl.verbose = true;
			break;
		case 'c': case 'h': case 'b': case 'f': case 'F': case 'P': case 'd':
		case '1': case '2':
			if (parse_u32(optarg, o == 'f' ? FLOOD_MAX_FUTURE : FLOOD_MAX_CONNS, &v) < 0) {
				fprintf(stderr, "atoll-flood: bad value '%s'\n", optarg);
				return 2;
			}
			switch (o) {
			case 'c': conns = v; break;
			case 'h': halfopen = v; break;
			case 'b': big = v; break;
			case 'f': future = v; break;
			case 'F': fl.future_conns = v ? v : 1; break;
			case 'P': fl.pool = v; break;
			case 'd': fl.duration_s = v; break;
			case '1': fl.src_first = v; break;
			case '2': fl.src_last = v; break;
			}
			break;
		default:
			usage(o == '?' ? stdout : stderr);
			return 2;
		}
	}
	if (!have_target || fl.src_first < 1 || fl.src_last > 254 || fl.src_first > fl.src_last ||
	    fl.duration_s > FLOOD_MAX_DURATION_S) {
		usage(stderr);
		return 2;
	}
	if (fl.nbd)
		future = 0;
	fl.n[R_HOLD] = conns;
	fl.n[R_SLOW_NONE] = halfopen / 2;
	fl.n[R_SLOW_DRIP] = halfopen - halfopen / 2;
	fl.n[R_BIG] = big;
	fl.n[R_FUTURE] = future ? fl.future_conns : 0;
	fl.future_ops = fl.future_left = future;
	for (k = 0; k < R_COUNT; k++)
		fl.nconn += fl.n[k];
	if (fl.nconn > FLOOD_MAX_CONNS) {
		fprintf(stderr, "atoll-flood: %u connections in all, at most %u\n", fl.nconn,
			FLOOD_MAX_CONNS);
		return 2;
	}
	r = raise_nofile(fl.nconn + 64);
	if (r < 0) {
		fprintf(stderr, "atoll-flood: cannot raise RLIMIT_NOFILE to %u: %s\n",
			fl.nconn + 64, strerror(-r));
		return 2;
	}
	fl.c = calloc(fl.nconn ? fl.nconn : 1, sizeof(*fl.c));
	fl.ep = epoll_create1(EPOLL_CLOEXEC);
	if (!fl.c || fl.ep < 0) {
		fprintf(stderr, "atoll-flood: setup: %s\n", strerror(errno));
		return 2;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	start = mono_now_ms();
	{
		uint32_t i = 0;

		/* interleave the roles' first opens: all are due at once */
		for (k = 0; k < R_COUNT; k++)
			for (uint32_t j = 0; j < fl.n[k]; j++, i++) {
				fl.c[i].idx = i;
				fl.c[i].role = (uint8_t)k;
				fl.c[i].fd = -1;
				fl.c[i].state = C_IDLE;
				fl.c[i].next_ms = start;
			}
	}
	end = start + (uint64_t)fl.duration_s * 1000;
	next_tick = start;
	next_report = start + 5000;
	while (!stop_flag) {
		struct epoll_event evs[256];
		uint64_t now = mono_now_ms();
		int n;

		if (now >= end)
			break;
		if (now >= next_tick) {
			tick(&fl, now);
			next_tick = now + TICK_MS;
		}
		if (fl.verbose && now >= next_report) {
			print_stats(&fl, "progress", stderr);
			next_report = now + 5000;
		}
		n = epoll_wait(fl.ep, evs, 256, (int)(next_tick > now ? next_tick - now : 0));
		now = mono_now_ms();
		for (int i = 0; i < n; i++) {
			struct fconn *fc = &fl.c[evs[i].data.u32];

			if (fc->state == C_CONNECTING) {
				conn_established(&fl, fc, now);
				continue;
			}
			if (fc->state != C_OPEN)
				continue;
			if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				conn_read(&fl, fc, now);
			if (fc->state == C_OPEN && (evs[i].events & EPOLLOUT))
				conn_write(&fl, fc, now);
		}
	}
	print_stats(&fl, "end", stdout);
	for (uint32_t i = 0; i < fl.nconn; i++) {
		if (fl.c[i].fd >= 0)
			close(fl.c[i].fd);
		free(fl.c[i].out);
	}
	free(fl.c);
	close(fl.ep);
	return 0;
}
