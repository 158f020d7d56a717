/*
 * nbd_main.c - atoll-nbd: serves the images of a pool over NBD.
 *
 *   atoll-nbd [--conf FILE] [-m MON] [--name ENTITY] [--addr IP:PORT] [--pool NAME]
 *             [--tls=off|on|require] [--tls-certificates DIR] [--tls-psk FILE]
 *             [--tls-verify-peer] [--tls-exports FILE] [--allow-insecure]
 *             [--log FILE] [--log-level LEVEL]
 *
 * The TLS settings come from the command line, else from [nbd] (then
 * [global]) of atoll.conf.  An address other than loopback is bound only
 * with --tls=require, or when --allow-insecure says plain clients may
 * come from the network.
 *
 * The main thread binds exactly --addr, accepts connections and gives
 * each its own thread (nbd_conn_main); it waits for signals through a
 * signalfd next to the listening socket.  SIGHUP reads the --tls-exports
 * rules again.  On SIGTERM/SIGINT it stops accepting, ends every
 * connection's reading side (requests in flight still complete and get
 * their replies), waits for them, closes the images (releasing their
 * locks) and exits 0.
 */
#include "nbd_metrics.h"
#include "nbd_server.h"

#include "config.h"
#include "log.h"
#include "mono.h"
#include "privdrop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NBD_DEFAULT_ADDR "127.0.0.1:10809"
#define NBD_DEFAULT_POOL "default"
#define NBD_STOP_WAIT_S 60

static void usage(FILE *f)
{
	fprintf(f,
"usage: atoll-nbd [options]\n"
"Serves the images of an atoll pool over the NBD protocol: the export name\n"
"is the image name (read-write), or IMAGE@SNAP (a snapshot, read-only).\n"
"  --conf FILE        atoll.conf (default: $ATOLL_CONF, ./atoll.conf,\n"
"                     /etc/atoll/atoll.conf)\n"
"  -m, --mon-host LIST      the monitors, IP:PORT[,IP:PORT...] (overrides mon_host)\n"
"  --addr IP:PORT     address to listen on (default %s); only that\n"
"                     address is bound\n"
"  --name ENTITY      the entity whose key atoll-nbd uses (auth_name; default\n"
"                     client.admin; atoll-cluster runs it as client.nbd, whose\n"
"                     caps limit it to its pool: doc/caps.md)\n"
"  --pool NAME        the pool whose images are served (default '%s')\n"
"  --tls MODE         off (default), on (offered), require (nothing without\n"
"                     TLS); clients use nbds:// URIs\n"
"  --tls-certificates DIR  X.509: DIR/ca-cert.pem, server-cert.pem,\n"
"                     server-key.pem (as nbdkit and qemu-nbd)\n"
"  --tls-psk FILE     pre-shared keys, lines USERNAME:HEXKEY (psktool)\n"
"  --tls-verify-peer  X.509: clients must show a certificate signed by the CA\n"
"  --tls-priority S   GnuTLS priority string (default NORMAL, with PSK added)\n"
"  --tls-exports FILE which images each TLS identity may use: lines\n"
"                     IDENTITY IMAGE|PATTERN...  ('*': every client)\n"
"  --allow-insecure   serve clients without TLS on an address other than\n"
"                     loopback (refused otherwise)\n"
"  --lease SECONDS    the lease of the image locks this server holds (default\n"
"                     the library's, 15 s): a restarted atoll-nbd takes over\n"
"                     the images of one that was killed after at most this\n"
"  --log FILE         log there instead of stderr\n"
"  --log-level LEVEL  error, warn, info (default), debug\n"
"  --user NAME        started as root: become NAME once the port is open and\n"
"                     the cluster reached (as user = NAME in [nbd])\n"
"  -h, --help         this text\n"
"Limits, in [nbd] of atoll.conf (doc/limits.md): nbd_max_connections (256),\n"
"nbd_max_bytes_in_flight (128M, all connections), nbd_conn_max_bytes (64M).\n"
"Example:\n"
"  atoll image create disk1 10G && atoll-nbd --pool default &\n"
"  nbdinfo nbd://127.0.0.1:10809/disk1\n"
"  atoll-nbd --tls=require --tls-psk keys.psk --addr 0.0.0.0:10809 &\n"
"  nbdinfo 'nbds://alice@HOST/disk1?tls-psk-file=keys.psk'\n"
"  nbd-client 127.0.0.1 10809 /dev/nbd0 -N disk1    (see doc/nbd.md)\n",
		NBD_DEFAULT_ADDR, NBD_DEFAULT_POOL);
}

static int parse_addr(const char *s, struct sockaddr_in *sa)
{
	char ip[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!colon || (size_t)(colon - s) >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, s, (size_t)(colon - s));
	ip[colon - s] = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 0 || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

static int listen_on(const char *addr, bool plain_ok)
{
	struct sockaddr_in sa;
	int fd, one = 1;

	if (parse_addr(addr, &sa)) {
		fprintf(stderr, "atoll-nbd: --addr '%s' is not IP:PORT (e.g. %s)\n", addr,
			NBD_DEFAULT_ADDR);
		return -EINVAL;
	}
	/* 127.0.0.0/8 only: anything else (the wildcard above all) reaches
	 * other hosts, where a client without TLS reads and writes images. */
	if ((ntohl(sa.sin_addr.s_addr) >> 24) != 127 && !plain_ok) {
		fprintf(stderr, "atoll-nbd: --addr '%s' is reachable from other hosts and "
			"clients without TLS would be served there; use --tls=require with "
			"--tls-psk or --tls-certificates, or say --allow-insecure "
			"(doc/nbd.md, \"TLS\")\n", addr);
		return -EPERM;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0) {
		int err = errno;

		fprintf(stderr, "atoll-nbd: cannot listen on %s: %s; choose another with "
			"--addr IP:PORT\n", addr, strerror(err));
		close(fd);
		return -err;
	}
	return fd;
}

static void conn_free(struct nbd_conn *conn)
{
	pthread_mutex_destroy(&conn->qlock);
	pthread_cond_destroy(&conn->qcond);
	pthread_cond_destroy(&conn->wcond);
	free(conn);
}

/* The limits in atoll.conf ([nbd], then [global]; doc/limits.md): 0, or
 * -1 after saying what is wrong. */
/* `user` of [nbd] (or --user): become it (lib/privdrop.c). */
static int drop_user(const char *path, const char *user)
{
	struct config *cfg = NULL;
	char err[512];
	int ret;

	ret = config_load(&cfg, path, err, sizeof(err));
	if (ret == 0 && user && config_set_override(cfg, "user", user) < 0) {
		snprintf(err, sizeof(err), "--user '%s' is not a valid user name", user);
		ret = -EINVAL;
	}
	if (ret == 0)
		ret = priv_drop_config(cfg, "nbd", NULL, 0, err, sizeof(err));
	if (ret < 0)
		fprintf(stderr, "atoll-nbd: %s\n", err);
	config_free(cfg);
	return ret;
}

static int read_limits(const char *path, struct nbd_server *srv)
{
	struct config *cfg = NULL;
	uint64_t total, per_conn;
	int64_t conns, per_addr;
	char err[512];
	int ret;

	ret = config_load(&cfg, path, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "atoll-nbd: %s\n", err);
		return -1;
	}
	if (config_get_int(cfg, "nbd", "nbd_max_connections", NBD_MAX_CONNS, 1, 1 << 20, &conns,
			   err, sizeof(err)) < 0 ||
	    config_get_int(cfg, "nbd", "nbd_max_connections_per_addr", NBD_MAX_CONNS_PER_ADDR, 1,
			   1 << 20, &per_addr, err, sizeof(err)) < 0 ||
	    config_get_duration_ms(cfg, "nbd", "nbd_write_data_timeout", NBD_WRITE_DATA_TIMEOUT_MS,
				   &srv->write_data_timeout_ms, err, sizeof(err)) < 0 ||
	    config_get_size(cfg, "nbd", "nbd_max_bytes_in_flight", NBD_TOTAL_BUDGET_BYTES, &total,
			    err, sizeof(err)) < 0 ||
	    config_get_size(cfg, "nbd", "nbd_conn_max_bytes", NBD_CONN_BUDGET_BYTES, &per_conn,
			    err, sizeof(err)) < 0) {
		fprintf(stderr, "atoll-nbd: %s\n", err);
		config_free(cfg);
		return -1;
	}
	config_free(cfg);
	if (srv->write_data_timeout_ms < 1000) {
		fprintf(stderr, "atoll-nbd: nbd_write_data_timeout must be at least 1s\n");
		return -1;
	}
	if (total < (1u << 20) || per_conn < (1u << 20) || total > SIZE_MAX / 2 ||
	    per_conn > SIZE_MAX / 2) {
		fprintf(stderr, "atoll-nbd: nbd_max_bytes_in_flight and nbd_conn_max_bytes must "
			"be at least 1M\n");
		return -1;
	}
	srv->max_conns = (unsigned)conns;
	srv->max_conns_per_addr = (unsigned)per_addr;
	srv->budget_max = (size_t)total;
	srv->conn_budget_max = (size_t)per_conn;
	return 0;
}

bool nbd_conn_claim_serving(struct nbd_conn *conn)
{
	struct nbd_server *srv = conn->srv;
	bool ok;

	pthread_mutex_lock(&srv->lock);
	ok = !conn->evicted;
	conn->serving = ok;
	pthread_mutex_unlock(&srv->lock);
	return ok;
}

static void *conn_main(void *arg)
{
	struct nbd_conn *conn = arg;
	struct nbd_server *srv = conn->srv;
	struct timeval tv = { .tv_sec = NBD_NEGOTIATE_TIMEOUT_S };
	int one = 1, ret;

	setsockopt(conn->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(conn->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ret = nbd_negotiate(conn);
	if (ret == 0) {
		struct timeval serve = { .tv_sec = NBD_SERVE_RCVTIMEO_MS / 1000,
					 .tv_usec = NBD_SERVE_RCVTIMEO_MS % 1000 * 1000 };

		setsockopt(conn->fd, SOL_SOCKET, SO_RCVTIMEO, &serve, sizeof(serve));
		log_info(NBD_SUBSYS, "%s: serving '%s'%s", conn->peer, conn->export->name,
			 conn->structured ? " (structured replies)" : "");
		nbd_transmit(conn);
		log_info(NBD_SUBSYS, "%s: disconnected from '%s'", conn->peer,
			 conn->export->name);
	} else if (ret != -ENODATA && ret != -ECONNABORTED) {
		log_info(NBD_SUBSYS, "%s: negotiation ended: %s", conn->peer,
			 atoll_strerror(ret));
	}
	if (conn->tls) {
		/* close_notify, bounded: the client may have stopped reading */
		struct timeval two = { .tv_sec = 2 };

		setsockopt(conn->fd, SOL_SOCKET, SO_SNDTIMEO, &two, sizeof(two));
		nbd_tls_close(conn->tls);
		conn->tls = NULL;
	}
	close(conn->fd);
	nbd_export_put(conn->export);

	pthread_mutex_lock(&srv->lock);
	for (struct nbd_conn **pp = &srv->conns; *pp; pp = &(*pp)->next) {
		if (*pp == conn) {
			*pp = conn->next;
			break;
		}
	}
	srv->nconns--;
	if (conn->evicted)
		srv->nevicting--;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	conn_free(conn);
	return NULL;
}

/* Room for a connection from addr; srv->lock held.  NULL when there is
 * room, else why not (for the log).  A client address at its
 * nbd_max_connections_per_addr is refused.  When all
 * nbd_max_connections are taken, the oldest connection still negotiating
 * is closed to make room (a flood of connections that never negotiate,
 * or negotiate slowly, cannot lock real clients out; one that serves an
 * export is never closed for it); when none is, the new one is refused. */
static const char *conn_room(struct nbd_server *srv, uint32_t addr)
{
	struct nbd_conn *oldest = NULL;
	unsigned from_addr = 0;

	for (struct nbd_conn *c = srv->conns; c; c = c->next) {
		if (c->evicted)
			continue;
		from_addr += c->addr == addr;
		if (!c->serving)
			oldest = c;	/* the list is newest first */
	}
	if (from_addr >= srv->max_conns_per_addr)
		return "nbd_max_connections_per_addr";
	if (srv->nconns - srv->nevicting < srv->max_conns)
		return NULL;
	if (!oldest || srv->nevicting >= NBD_MAX_EVICTING)
		return "nbd_max_connections";
	oldest->evicted = true;
	srv->nevicting++;
	/* its thread sees the end of the stream, in negotiation, and leaves */
	shutdown(oldest->fd, SHUT_RDWR);
	return NULL;
}

static void accept_one(struct nbd_server *srv, int lfd)
{
	struct sockaddr_in sa;
	socklen_t salen = sizeof(sa);
	struct nbd_conn *conn;
	pthread_attr_t attr;
	pthread_t th;
	char ip[INET_ADDRSTRLEN];
	const char *why;
	int fd;

	fd = accept4(lfd, (struct sockaddr *)&sa, &salen, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	pthread_mutex_lock(&srv->lock);
	why = conn_room(srv, sa.sin_addr.s_addr);
	if (why) {
		uint64_t now = mono_now_ms(), n = ++srv->refused_conns;
		bool say = !srv->refused_logged_ms || now - srv->refused_logged_ms >= 10000;

		if (say)
			srv->refused_logged_ms = now;
		pthread_mutex_unlock(&srv->lock);
		/* closed before the greeting: the client sees the connection
		 * end (doc/limits.md); one line per 10 s at most */
		if (say) {
			inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
			log_warn(NBD_SUBSYS, "refusing connections (the last from %s): %s reached; "
				 "%llu refused so far", ip, why, (unsigned long long)n);
		}
		close(fd);
		return;
	}
	pthread_mutex_unlock(&srv->lock);
	conn = calloc(1, sizeof(*conn));
	if (!conn) {
		close(fd);
		return;
	}
	conn->srv = srv;
	conn->fd = fd;
	conn->addr = sa.sin_addr.s_addr;
	inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
	pthread_mutex_init(&conn->qlock, NULL);
	pthread_cond_init(&conn->qcond, NULL);
	pthread_cond_init(&conn->wcond, NULL);

	pthread_mutex_lock(&srv->lock);
	conn->id = ++srv->next_conn_id;
	snprintf(conn->peer, sizeof(conn->peer), "conn %llu from %s:%u",
		 (unsigned long long)conn->id, ip, ntohs(sa.sin_port));
	conn->next = srv->conns;
	srv->conns = conn;
	srv->nconns++;
	pthread_mutex_unlock(&srv->lock);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, NBD_THREAD_STACK);
	if (pthread_create(&th, &attr, conn_main, conn) != 0) {
		log_error(NBD_SUBSYS, "cannot start a thread for %s", conn->peer);
		pthread_mutex_lock(&srv->lock);
		srv->conns = conn->next;	/* still first: nothing ran since */
		srv->nconns--;
		pthread_mutex_unlock(&srv->lock);
		close(fd);
		conn_free(conn);
	}
	pthread_attr_destroy(&attr);
}

/* SIGHUP: reads the export rules again.  A file that does not parse
 * leaves the rules in force; connections already serving an export keep
 * it (the rules decide what is opened, not what stays open). */
static void reload_acl(struct nbd_server *srv)
{
	struct nbd_acl *acl, *old;
	char err[768];

	if (!srv->acl_path) {
		log_info(NBD_SUBSYS, "SIGHUP: no --tls-exports file to read again");
		return;
	}
	if (nbd_acl_load(srv->acl_path, &acl, err, sizeof(err)) != 0) {
		log_error(NBD_SUBSYS, "SIGHUP: %s; the previous rules stay in force", err);
		return;
	}
	pthread_rwlock_wrlock(&srv->acl_lock);
	old = srv->acl;
	srv->acl = acl;
	pthread_rwlock_unlock(&srv->acl_lock);
	nbd_acl_free(old);
	log_info(NBD_SUBSYS, "SIGHUP: export rules read again from '%s' (%zu rules)",
		 srv->acl_path, nbd_acl_count(acl));
}

/* Stops reading from every client and waits (bounded) for them to drain;
 * returns the connections still busy. */
static unsigned stop_connections(struct nbd_server *srv)
{
	struct timespec deadline;
	unsigned busy;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += NBD_STOP_WAIT_S;
	pthread_mutex_lock(&srv->lock);
	for (struct nbd_conn *c = srv->conns; c; c = c->next)
		shutdown(c->fd, SHUT_RD);
	while (srv->nconns > 0)
		if (pthread_cond_timedwait(&srv->cond, &srv->lock, &deadline) == ETIMEDOUT)
			break;
	if (srv->nconns > 0)
		log_warn(NBD_SUBSYS, "%u connections still busy after %d s; exiting anyway",
			 srv->nconns, NBD_STOP_WAIT_S);
	busy = srv->nconns;
	pthread_mutex_unlock(&srv->lock);
	return busy;
}

enum { O_CONF = 256, O_ADDR, O_POOL, O_NAME, O_LOG, O_LOG_LEVEL, O_USER, O_LEASE, O_TLS, O_TLS_CERTS,
       O_TLS_PSK, O_TLS_VERIFY, O_TLS_PRIO, O_TLS_EXPORTS, O_INSECURE };

/* The TLS settings as given: command line first, atoll.conf for the rest. */
struct tls_opts {
	const char *mode;
	struct nbd_tls_config cfg;
	int verify_peer;	/* -1: not given */
	const char *exports;
	int allow_insecure;	/* -1: not given */
};

/* A command-line value wins; else [nbd]/[global] of atoll.conf. */
static int conf_str(const struct config *cf, const char *key, const char **v)
{
	if (!*v)
		*v = config_get(cf, "nbd", key, NULL);
	return 0;
}

static int conf_bool(const struct config *cf, const char *key, int *v)
{
	char err[256];
	bool b;

	if (*v >= 0)
		return 0;
	if (config_get_bool(cf, "nbd", key, false, &b, err, sizeof(err))) {
		fprintf(stderr, "atoll-nbd: %s\n", err);
		return -EINVAL;
	}
	*v = b;
	return 0;
}

/* Reads what the command line left out from atoll.conf, checks that the
 * settings agree, loads the credentials and the export rules into srv
 * (GnuTLS keeps its own copy of the PSK file's path: it reads the file at
 * each handshake). */
static int setup_tls(struct nbd_server *srv, const char *conf, struct tls_opts *o)
{
	struct config *cf = NULL;
	char err[768];
	int ret;

	ret = config_load(&cf, conf, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "atoll-nbd: %s\n", err);
		return ret;
	}
	conf_str(cf, "nbd_tls", &o->mode);
	conf_str(cf, "nbd_tls_certificates", &o->cfg.cert_dir);
	conf_str(cf, "nbd_tls_psk", &o->cfg.psk_file);
	conf_str(cf, "nbd_tls_priority", &o->cfg.priority);
	conf_str(cf, "nbd_tls_exports", &o->exports);
	ret = conf_bool(cf, "nbd_tls_verify_peer", &o->verify_peer);
	if (!ret)
		ret = conf_bool(cf, "nbd_allow_insecure", &o->allow_insecure);
	if (ret)
		goto out_free_conf;
	o->cfg.verify_peer = o->verify_peer > 0;
	if (o->mode && nbd_tls_mode_parse(o->mode, &srv->tls_mode)) {
		fprintf(stderr, "atoll-nbd: --tls '%s': use off, on or require\n", o->mode);
		ret = -EINVAL;
		goto out_free_conf;
	}
	if (srv->tls_mode == NBD_TLS_OFF) {
		if (o->cfg.cert_dir || o->cfg.psk_file || o->exports || o->cfg.verify_peer) {
			fprintf(stderr, "atoll-nbd: TLS settings are given but TLS is off; "
				"add --tls=require (or --tls=on to serve plain clients too)\n");
			ret = -EINVAL;
		}
		goto out_free_conf;
	}
	ret = nbd_tls_server_create(&o->cfg, &srv->tls, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "atoll-nbd: %s\n", err);
		goto out_free_conf;
	}
	if (o->exports) {
		ret = nbd_acl_load(o->exports, &srv->acl, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "atoll-nbd: %s\n", err);
			goto out_free_conf;
		}
		srv->acl_path = strdup(o->exports);
		if (!srv->acl_path) {
			ret = -ENOMEM;
			goto out_free_conf;
		}
	}
	log_info(NBD_SUBSYS, "TLS %s with %s%s%s%s", nbd_tls_mode_name(srv->tls_mode),
		 nbd_tls_server_kinds(srv->tls),
		 o->cfg.verify_peer ? ", client certificates verified" : "",
		 o->exports ? ", exports limited by " : "", o->exports ? o->exports : "");
out_free_conf:
	/* o's strings may point into cf: nothing reads them after this */
	config_free(cf);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "conf", required_argument, NULL, O_CONF },
		{ "mon-host", required_argument, NULL, 'm' },
		{ "addr", required_argument, NULL, O_ADDR },
		{ "pool", required_argument, NULL, O_POOL },
		{ "name", required_argument, NULL, O_NAME },
		{ "log", required_argument, NULL, O_LOG },
		{ "lease", required_argument, NULL, O_LEASE },
		{ "tls", required_argument, NULL, O_TLS },
		{ "tls-certificates", required_argument, NULL, O_TLS_CERTS },
		{ "tls-psk", required_argument, NULL, O_TLS_PSK },
		{ "tls-verify-peer", no_argument, NULL, O_TLS_VERIFY },
		{ "tls-priority", required_argument, NULL, O_TLS_PRIO },
		{ "tls-exports", required_argument, NULL, O_TLS_EXPORTS },
		{ "allow-insecure", no_argument, NULL, O_INSECURE },
		{ "log-level", required_argument, NULL, O_LOG_LEVEL },
		{ "user", required_argument, NULL, O_USER },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf = NULL, *mon = NULL, *addr = NBD_DEFAULT_ADDR;
	const char *logpath = NULL, *user = NULL, *name = NULL;
	struct nbd_server srv = { .pool = NBD_DEFAULT_POOL, .max_conns = NBD_MAX_CONNS,
				  .max_conns_per_addr = NBD_MAX_CONNS_PER_ADDR,
				  .write_data_timeout_ms = NBD_WRITE_DATA_TIMEOUT_MS,
				  .budget_max = NBD_TOTAL_BUDGET_BYTES,
				  .conn_budget_max = NBD_CONN_BUDGET_BYTES };
	struct tls_opts tls = { .verify_peer = -1, .allow_insecure = -1 };

	pthread_rwlock_init(&srv.acl_lock, NULL);
	int level = LOG_LVL_INFO, opt, lfd, sfd, ret, rc = 1;
	sigset_t mask;

	/* A thread per connection: glibc would give each of the first 8 per
	 * core an arena of its own (64 MiB of address space each), a
	 * gigabyte reserved for nothing under many connections.  The
	 * requests' buffers are few and large; four arenas serve them. */
	mallopt(M_ARENA_MAX, NBD_MALLOC_ARENAS);

	while ((opt = getopt_long(argc, argv, "m:h", longopts, NULL)) != -1) {
		switch (opt) {
		case O_CONF: conf = optarg; break;
		case 'm': mon = optarg; break;
		case O_ADDR: addr = optarg; break;
		case O_POOL: srv.pool = optarg; break;
		case O_NAME: name = optarg; break;
		case O_LOG: logpath = optarg; break;
		case O_USER: user = optarg; break;
		case O_TLS: tls.mode = optarg; break;
		case O_TLS_CERTS: tls.cfg.cert_dir = optarg; break;
		case O_TLS_PSK: tls.cfg.psk_file = optarg; break;
		case O_TLS_VERIFY: tls.verify_peer = 1; break;
		case O_TLS_PRIO: tls.cfg.priority = optarg; break;
		case O_TLS_EXPORTS: tls.exports = optarg; break;
		case O_INSECURE: tls.allow_insecure = 1; break;
		case O_LEASE: {
			char *end;
			double s = strtod(optarg, &end);

			if (*end || s < 1 || s > 3600) {
				fprintf(stderr, "atoll-nbd: --lease '%s': give seconds, 1 to "
					"3600\n", optarg);
				return 2;
			}
			srv.lease_ms = (unsigned)(s * 1000);
			break;
		}
		case O_LOG_LEVEL:
			level = log_level_parse(optarg);
			if (level < 0) {
				fprintf(stderr, "atoll-nbd: --log-level '%s': use error, warn, "
					"info or debug\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "atoll-nbd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (log_open("nbd", (enum log_level)level, logpath) != 0) {
		fprintf(stderr, "atoll-nbd: cannot open log '%s': %s\n", logpath,
			strerror(errno));
		return 1;
	}
	/* Signals arrive only through the signalfd (every thread inherits
	 * the mask); SIGPIPE never (sends use MSG_NOSIGNAL anyway). */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);

	if (read_limits(conf, &srv) < 0)
		goto out;
	if (nbd_metrics_start(&srv, conf) < 0)
		goto out;
	if (setup_tls(&srv, conf, &tls) != 0)
		goto out;
	lfd = listen_on(addr, srv.tls_mode == NBD_TLS_REQUIRE || tls.allow_insecure > 0);
	if (lfd < 0)
		goto out;
	pthread_mutex_init(&srv.lock, NULL);
	pthread_cond_init(&srv.cond, NULL);
	pthread_mutex_init(&srv.budget_lock, NULL);
	pthread_cond_init(&srv.budget_cond, NULL);

	ret = atoll_cluster_create(&srv.cluster, conf, 0);
	if (ret) {
		/* the library's message names the file and the line */
		fprintf(stderr, "atoll-nbd: cannot read the configuration%s%s: %s\n",
			conf ? " " : "", conf ? conf : "",
			*atoll_last_error() ? atoll_last_error() : atoll_strerror(ret));
		goto out_close_listen;
	}
	if (mon && (ret = atoll_cluster_set(srv.cluster, "mon_host", mon)) != 0) {
		fprintf(stderr, "atoll-nbd: -m '%s': %s\n", mon, atoll_strerror(ret));
		goto out_shutdown;
	}
	if (name && (ret = atoll_cluster_set(srv.cluster, "auth_name", name)) != 0) {
		fprintf(stderr, "atoll-nbd: --name '%s': %s\n", name, atoll_strerror(ret));
		goto out_shutdown;
	}
	ret = atoll_cluster_connect(srv.cluster);
	if (ret) {
		fprintf(stderr, "atoll-nbd: cannot reach the monitor: %s; check mon_host or "
			"-m IP:PORT\n", atoll_strerror(ret));
		goto out_shutdown;
	}
	ret = atoll_ioctx_create(srv.cluster, srv.pool, &srv.io, 0);
	if (ret) {
		fprintf(stderr, "atoll-nbd: pool '%s': %s; create it with: atoll pool create "
			"%s\n", srv.pool, atoll_strerror(ret), srv.pool);
		goto out_shutdown;
	}
	/* the port is open, the keys read, the cluster reached: root is no
	 * longer needed (the TLS files SIGHUP reads must be the user's) */
	if (drop_user(conf, user) < 0)
		goto out_ioctx;
	log_info(NBD_SUBSYS, "serving pool '%s' on %s://%s/IMAGE", srv.pool,
		 srv.tls_mode == NBD_TLS_REQUIRE ? "nbds" : "nbd", addr);

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = lfd, .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
		};

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si) &&
			    si.ssi_signo == SIGHUP) {
				reload_acl(&srv);
				continue;
			}
			break;
		}
		if (pfd[0].revents)
			accept_one(&srv, lfd);
	}
	log_info(NBD_SUBSYS, "stopping: draining %u connections", srv.nconns);
	srv.stopping = 1;
	close(lfd);
	lfd = -1;
	/* Close the images (releasing their locks) only when no connection
	 * can still use them; otherwise their leases simply run out. */
	if (stop_connections(&srv) == 0)
		nbd_export_close_all(&srv);
	rc = 0;
out_ioctx:
	atoll_ioctx_destroy(srv.io);
out_shutdown:
	atoll_cluster_shutdown(srv.cluster);
out_close_listen:
	if (lfd >= 0)
		close(lfd);
out:
	nbd_metrics_stop();	/* its scrapes read srv */
	nbd_acl_free(srv.acl);
	free(srv.acl_path);
	nbd_tls_server_free(srv.tls);
	if (sfd >= 0)
		close(sfd);
	log_close();
	return rc;
}
