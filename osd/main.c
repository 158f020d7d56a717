/*
 * main.c - atoll-osd: command line, --mkfs, start-up, message dispatch
 * and the clean stop.
 *
 *   atoll-osd --mkfs --data DIR --mon IP:PORT [--id N] [--size 10G]
 *   atoll-osd --data DIR --addr IP[:PORT] [--host NAME] [--mon IP:PORT]
 *
 * (doc/daemons.md).  --mkfs creates the store (prefilled, so the host file
 * system has real blocks behind it), asks the monitor for an id with the
 * store's uuid (OSD_NEW; asking again with the same uuid gets the same id,
 * so an interrupted mkfs can simply be run again) and writes DIR/whoami
 * and DIR/fsid.  Running, the OSD opens its store, loads its PGs and last
 * map, binds --addr, subscribes to the maps and boots.  SIGTERM/SIGINT:
 * OSD_STOPPING (the monitor marks it down at once), wait for the ops in
 * flight, then stop the loop's use of the store, close the store and the
 * messenger, exit 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atoll/atoll.h"
#include "auth_config.h"
#include "config.h"
#include "encode.h"
#include "log.h"
#include "osd_metrics.h"
#include "memtrim.h"
#include "msg_config.h"
#include "objcopy.h"
#include "pg.h"
#include "privdrop.h"
#include "store.h"

/* jemalloc reads this at start-up (MALLOC_CONF in the environment still
 * overrides it).  Freed pages are kept instead of being given back over
 * time: the 4 MiB message and read buffers come and go hundreds of times
 * a second, and with the default 10 s decay about half of each new one
 * was fresh pages (a page fault and zeroing per 4 KiB, ~10% of the OSD's
 * CPU on 4 MiB writes).  Freed pages past a slack are given back once a
 * second instead (memtrim.c). */
extern const char *malloc_conf;
const char *malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";

#define PROG "atoll-osd"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---- small helpers ------------------------------------------------------ */

static void uuid_fmt(const uint8_t u[16], char out[37])
{
	static const char *hex = "0123456789abcdef";
	int j = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[j++] = '-';
		out[j++] = hex[u[i] >> 4];
		out[j++] = hex[u[i] & 15];
	}
	out[j] = 0;
}

static int uuid_parse(const char *s, uint8_t u[16])
{
	int n = 0;

	for (const char *p = s; *p && n < 32; p++) {
		int v;

		if (*p == '-')
			continue;
		if (*p >= '0' && *p <= '9')
			v = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			v = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			v = *p - 'A' + 10;
		else
			return -EINVAL;
		if (n % 2 == 0)
			u[n / 2] = (uint8_t)(v << 4);
		else
			u[n / 2] |= (uint8_t)v;
		n++;
	}
	return n == 32 ? 0 : -EINVAL;
}

static int read_small(const char *dir, const char *name, char *buf, size_t len)
{
	char path[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static int write_small(const char *dir, const char *name, const char *text)
{
	char path[4096], tmp[4096];
	size_t len = strlen(text);
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 || fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	return r;
}

/* Something a thread waits for while the loop does it (shutdown). */
struct sync_call {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
	struct msg *reply;
};

static void sync_call_done(void *arg, struct msg *reply, int err)
{
	struct sync_call *s = arg;

	pthread_mutex_lock(&s->lock);
	s->reply = reply;
	s->err = err;
	s->done = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* ---- options ---------------------------------------------------------- */

static struct {
	bool mkfs;
	const char *data;
	const char *mon;
	const char *addr;
	const char *host;
	const char *conf;
	const char *log;
	const char *user;
	const char *size;
	int want_id;
} opt = { .want_id = -1 };

static void usage(FILE *f)
{
	fprintf(f,
"usage: " PROG " --mkfs --data DIR --mon IP:PORT [--id N] [--size 10G] [--conf F] [--set k=v]...\n"
"       " PROG " --data DIR --addr IP[:PORT] [--host NAME] [--mon IP:PORT] [--conf F]\n"
"                 [--set k=v]... [--log FILE]\n"
"\n"
"The object storage daemon: keeps one store (DIR/block, DIR/kv) and serves\n"
"the placement groups the cluster map gives it.\n"
"\n"
"  --mkfs          create the store and register a new OSD with the monitor\n"
"  --data DIR      the OSD's folder (osd_data)\n"
"  --mon LIST      the monitors, IP:PORT[,IP:PORT...] (mon_host; default 127.0.0.1:6789)\n"
"  --id N          keep this id (a replaced disk)\n"
"  --size SIZE     size of the block file made by --mkfs (osd_store_size, 10G)\n"
"  --addr IP[:P]   the address to bind (osd_addr; port 0 or none = any)\n"
"  --host NAME     the host name registered (failure domain; osd_host)\n"
"  --conf FILE     atoll.conf\n"
"  --set K=V       set a configuration option (repeatable)\n"
"  --user NAME     started as root: become NAME once the port and the store are\n"
"                  open, after giving it the data folder (as --set user=NAME)\n"
"  --log FILE      log to FILE instead of stderr (log_file)\n"
"  --help, --version\n");
}

static struct config *load_config(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "mkfs", no_argument, NULL, 'M' },
		{ "data", required_argument, NULL, 'd' },
		{ "mon", required_argument, NULL, 'm' },
		{ "id", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 's' },
		{ "addr", required_argument, NULL, 'a' },
		{ "host", required_argument, NULL, 'H' },
		{ "conf", required_argument, NULL, 'c' },
		{ "set", required_argument, NULL, 'S' },
		{ "log", required_argument, NULL, 'l' },
		{ "user", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	char *sets[256];
	int nsets = 0, c;
	char err[512];
	struct config *conf;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'M': opt.mkfs = true; break;
		case 'd': opt.data = optarg; break;
		case 'm': opt.mon = optarg; break;
		case 'i': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (*end || v < 0 || v >= OSDMAP_OSD_MAX)
				die("--id '%s' is not an OSD id (0..%d)", optarg, OSDMAP_OSD_MAX - 1);
			opt.want_id = (int)v;
			break;
		}
		case 's': opt.size = optarg; break;
		case 'a': opt.addr = optarg; break;
		case 'H': opt.host = optarg; break;
		case 'c': opt.conf = optarg; break;
		case 'S':
			if (nsets == 256)
				die("too many --set options");
			sets[nsets++] = optarg;
			break;
		case 'l': opt.log = optarg; break;
		case 'u': opt.user = optarg; break;
		case 'h': usage(stdout); exit(0);
		case 'V': {
			const char *v;

			atoll_version(&v);
			printf(PROG " %s\n", v);
			exit(0);
		}
		default: usage(stderr); exit(1);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'; see " PROG " --help", argv[optind]);
	if (config_load(&conf, opt.conf, err, sizeof(err)) < 0)
		die("%s", err);
	for (int i = 0; i < nsets; i++) {
		char *eq = strchr(sets[i], '=');

		if (!eq)
			die("--set '%s' is not KEY=VALUE", sets[i]);
		*eq = 0;
		if (config_set_override(conf, sets[i], eq + 1) < 0)
			die("--set '%s=%s' is not a valid option", sets[i], eq + 1);
		*eq = '=';
	}
	if (opt.user && config_set_override(conf, "user", opt.user) < 0)
		die("--user '%s' is not a valid user name", opt.user);
	if (opt.data)
		config_set_override(conf, "osd_data", opt.data);
	if (opt.mon)
		config_set_override(conf, "mon_host", opt.mon);
	if (opt.addr)
		config_set_override(conf, "osd_addr", opt.addr);
	if (opt.host)
		config_set_override(conf, "osd_host", opt.host);
	if (opt.size)
		config_set_override(conf, "osd_store_size", opt.size);
	if (opt.log)
		config_set_override(conf, "log_file", opt.log);
	return conf;
}

static void conf_str(struct config *conf, const char *who, const char *key, const char *def,
		     const char **out)
{
	char err[512];

	if (config_get_str(conf, who, key, def, out, err, sizeof(err)) < 0)
		die("%s", err);
}

static uint64_t conf_size(struct config *conf, const char *who, const char *key, uint64_t def)
{
	char err[512];
	uint64_t v;

	if (config_get_size(conf, who, key, def, &v, err, sizeof(err)) < 0)
		die("%s", err);
	return v;
}

static uint64_t conf_ms(struct config *conf, const char *who, const char *key, uint64_t def)
{
	char err[512];
	uint64_t v;

	if (config_get_duration_ms(conf, who, key, def, &v, err, sizeof(err)) < 0)
		die("%s", err);
	return v;
}

static uint64_t conf_int(struct config *conf, const char *who, const char *key, int64_t def,
			 int64_t min, int64_t max)
{
	char err[512];
	int64_t v;

	if (config_get_int(conf, who, key, def, min, max, &v, err, sizeof(err)) < 0)
		die("%s", err);
	return (uint64_t)v;
}

static void open_log(struct config *conf, const char *who, const char *ident)
{
	const char *lvl, *file;
	int level;

	conf_str(conf, who, "log_level", "info", &lvl);
	conf_str(conf, who, "log_file", NULL, &file);
	level = log_level_parse(lvl);
	if (level < 0)
		die("option 'log_level': '%s' is not one of error, warn, info, debug, trace", lvl);
	if (log_open(ident, (enum log_level)level, file) < 0)
		die("cannot open the log file '%s'", file);
}

static void store_paths(const char *dir, struct store_options *so, char *block, char *kv)
{
	snprintf(block, 4096, "%s/block", dir);
	snprintf(kv, 4096, "%s/kv", dir);
	memset(so, 0, sizeof(*so));
	so->size_of = sizeof(*so);
	so->block_path = block;
	so->kv_path = kv;
}

/* ---- mkfs ------------------------------------------------------------- */

/* --mkfs speaks to the monitors alone: every event is monc's */
static struct monc *mkfs_monc;
static struct msg_auth *mkfs_auth;	/* --mkfs: the bootstrap key's */
static struct msg_auth *osd_auth;	/* the messenger's; NULL with auth = none */

static void mkfs_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	if (!monc_dispatch(*(struct monc **)arg, c, m))
		msg_free(m);
}

static void mkfs_connected(void *arg, struct msg_conn *c)
{
	monc_connected(*(struct monc **)arg, c);
}

static void mkfs_closed(void *arg, struct msg_conn *c, int err)
{
	monc_closed(*(struct monc **)arg, c, err);
}

static int do_mkfs(struct config *conf)
{
	char block[4096], kv[4096], buf[64], uuid_s[37], fsid_s[37];
	struct store_options so;
	struct store *st;
	const char *mon_addr;
	struct osd_new_req req = { .want_id = opt.want_id };
	struct osd_new_reply rep;
	struct msgr_config mc = { .size_of = sizeof(mc) };
	struct msgr_ops ops = { .dispatch = mkfs_dispatch, .connected = mkfs_connected,
				.closed = mkfs_closed };
	struct monc_config mcc = { .size_of = sizeof(mcc), .who = "osd" };
	struct msgr *msgr;
	struct msg *m, *reply = NULL;
	char tried[1024], merr[512];
	struct enc e;
	struct dec d;
	int r;

	if (!opt.data)
		die("--mkfs needs --data DIR");
	conf_str(conf, "osd", "mon_host", "127.0.0.1:6789", &mon_addr);
	open_log(conf, "osd", "osd");
	if (mkdir(opt.data, 0755) < 0 && errno != EEXIST)
		die("cannot create the data folder '%s': %s", opt.data, strerror(errno));
	if (read_small(opt.data, "whoami", buf, sizeof(buf)) == 0)
		die("data folder '%s' already holds osd.%s; to reuse it, remove its contents "
		    "first", opt.data, buf);
	store_paths(opt.data, &so, block, kv);
	so.block_size = conf_size(conf, "osd", "osd_store_size", 10ull << 30);
	/* 0: the store's default (an eighth of the block, at least 64 MiB) */
	so.kv_max = conf_size(conf, "osd", "osd_store_kv_max", 0);
	if (so.kv_max && so.kv_max < (4ull << 20))
		die("osd_store_kv_max = %llu is too small: the kv needs at least 4M "
		    "(0 picks an eighth of the store)", (unsigned long long)so.kv_max);
	/* tests turn the zero fill off: it writes the whole store once */
	{
		char err[512];

		if (config_get_bool(conf, "osd", "osd_mkfs_prefill", true, &so.prefill, err,
				    sizeof(err)) < 0)
			die("%s", err);
	}
	r = store_mkfs(&so);
	if (r < 0 && r != -EEXIST)
		die("cannot create the store in '%s': %s", opt.data, strerror(-r));
	r = store_open(&so, &st);
	if (r < 0)
		die("cannot open the new store in '%s': %s", opt.data, strerror(-r));
	store_uuid(st, uuid_s);
	store_close(st);
	if (uuid_parse(uuid_s, req.uuid))
		die("the store's uuid '%s' is malformed", uuid_s);

	/* an OSD with no id yet: the monitor takes OSD_NEW only from an OSD */
	if (getrandom(&mc.me.id, sizeof(mc.me.id), 0) != (ssize_t)sizeof(mc.me.id))
		die("cannot draw a random id: %s", strerror(errno));
	mc.me.type = MSG_ENTITY_OSD;
	/* with authentication, an OSD without an id proves the bootstrap
	 * key (doc/security.md) */
	{
		char err[512];

		if (auth_config_load(conf, "osd", "client.bootstrap-osd", NULL, &mkfs_auth, err,
				     sizeof(err)) < 0)
			die("%s", err);
		mc.auth = mkfs_auth;
	}
	r = msgr_create(&mc, &ops, &mkfs_monc, &msgr);
	if (!r)
		r = msgr_start(msgr);
	if (r)
		die("cannot start the messenger: %s", strerror(-r));
	mcc.mon_host = mon_addr;
	r = monc_create(msgr, &mcc, NULL, NULL, &mkfs_monc, merr, sizeof(merr));
	if (r)
		die("%s", merr);
	monc_start(mkfs_monc);
	enc_init(&e);
	osd_new_req_encode(&req, &e);
	m = msg_new(MT_OSD_NEW, &e);
	enc_free(&e);
	/* the same uuid asked twice gets the same id: a resend is safe */
	r = m ? monc_call_wait(mkfs_monc, m, 30000, &reply) : -ENOMEM;
	if (r)
		die("no monitor answered (%s; tried %s); check that atoll-mon runs there "
		    "and try again", strerror(-r), monc_describe(mkfs_monc, tried, sizeof(tried)));
	dec_init(&d, reply->front, reply->front_len);
	r = osd_new_reply_decode(&d, &rep);
	msg_free(reply);
	monc_stop(mkfs_monc);
	msgr_destroy(msgr);
	msg_auth_free(mkfs_auth);
	monc_destroy(mkfs_monc);
	mkfs_monc = NULL;
	if (r)
		die("the monitor's answer is malformed: %s", strerror(-r));
	if (rep.rc < 0) {
		if (rep.rc == -EEXIST)
			die("osd.%d exists with another disk; if that disk is gone for good, "
			    "run first: atoll osd destroy %d", opt.want_id, opt.want_id);
		if (rep.rc == -EBUSY)
			die("osd.%d is up; stop it before replacing its disk", opt.want_id);
		die("the monitor refused a new OSD: %s", strerror(-rep.rc));
	}
	snprintf(buf, sizeof(buf), "%d", rep.id);
	uuid_fmt(rep.fsid, fsid_s);
	if ((r = write_small(opt.data, "fsid", fsid_s)) < 0 ||
	    (r = write_small(opt.data, "whoami", buf)) < 0)
		die("cannot write into '%s': %s", opt.data, strerror(-r));
	log_info("osd", "created osd.%d in '%s' (store %s, cluster %s)", rep.id, opt.data,
		 uuid_s, fsid_s);
	printf("%d\n", rep.id);
	return 0;
}

/* ---- running ------------------------------------------------------------- */

static struct osd g_osd;

void osd_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct osd *osd = arg;

	if (monc_dispatch(osd->monc, c, m))
		return;
	if (atomic_load(&osd->closing)) {
		msg_free(m);
		return;
	}
	if (!osd_access_msg(osd, c, m))
		return;
	switch (m->type) {
	case MT_MON_MAP:
		/* only from the monitors we dialled (access.c): a client (or
		 * anyone) that sends one must not move this OSD's epoch */
		osd_map_dispatch(osd, c, m);
		break;
	case MT_OSD_OP:
		osd_op_dispatch(osd, c, m);
		break;
	case MT_REP_OP:
		osd_rep_op_dispatch(osd, c, m);
		break;
	case MT_OSD_PING:
		osd_ping_dispatch(osd, c, m);
		break;
	case MT_PG_QUERY:
		osd_pg_query_dispatch(osd, c, m);
		break;
	case MT_PG_LOG:
		osd_pg_log_dispatch(osd, c, m);
		break;
	case MT_PG_PUSH:
		objcopy_push_dispatch(osd, c, m);
		break;
	case MT_PG_SCAN:
		osd_pg_scan_dispatch(osd, c, m);
		break;
	case MT_OSD_SCRUB:
	case MT_PG_SCRUB:
		osd_scrub_dispatch(osd, c, m);
		break;
	case MT_OSD_PG_QUERY:
		osd_pg_query_admin_dispatch(osd, c, m);
		break;
	default:
		log_debug("osd", "ignoring message type %u from %s", m->type, msg_conn_addr(c));
		msg_free(m);
	}
}

static void on_connected(void *arg, struct msg_conn *c)
{
	struct osd *osd = arg;

	monc_connected(osd->monc, c);
}

static void on_closed(void *arg, struct msg_conn *c, int err)
{
	struct osd *osd = arg;

	if (monc_closed(osd->monc, c, err))
		return;
	osd_conn_closed(osd, c, err);
}

/* monc: a session with a monitor opened (loop thread) */
static void on_mon_session(void *arg, struct msg_conn *c)
{
	struct osd *osd = arg;

	(void)c;
	if (atomic_load(&osd->closing))
		return;
	/* a subscription lives as long as its session */
	osd_map_subscribe(osd);
	if (!osd->booted && !osd->stopping)
		osd_boot(osd);
}

/* monc: a monitor map with new members or a new incarnation */
static void on_monmap(void *arg, const struct monmap_msg *mm)
{
	struct osd *osd = arg;
	int r = osd_monmap_save(osd->data_dir, mm);

	if (r < 0)
		log_warn("osd", "cannot save the monitor map in '%s': %s", osd->data_dir,
			 strerror(-r));
}

static void boot_retry(void *arg)
{
	struct osd *osd = arg;

	if (!osd->booted && !osd->stopping)
		osd_boot(osd);
}

static void boot_reply(void *arg, struct msg *reply, int err)
{
	struct osd *osd = arg;
	struct osd_boot_reply br;
	struct dec d;

	osd->boot_pending = false;
	if (!err) {
		dec_init(&d, reply->front, reply->front_len);
		err = osd_boot_reply_decode(&d, &br);
		msg_free(reply);
	}
	if (err) {
		log_warn("osd", "boot: no answer from the monitor (%s); retrying", strerror(-err));
		msgr_timer(osd->msgr, 1000, boot_retry, osd);
		return;
	}
	if (br.rc < 0) {
		if (br.rc == -ESTALE && br.status[0])
			log_error("osd", "the monitors refused to boot osd.%d, which stays "
				  "down and serves nothing: %s; asking again in 15 s",
				  osd->whoami, br.status);
		else
			log_error("osd", "the monitor refused to boot osd.%d: %s%s%s; "
				  "retrying", osd->whoami, strerror(-br.rc),
				  br.status[0] ? ": " : "", br.status);
		/* -ESTALE: the monitors are behind this OSD's map (an older
		 * backup restored); it stays down, serves nothing, and asks
		 * again now and then until an operator fixes the monitors */
		msgr_timer(osd->msgr, br.rc == -ESTALE ? 15000 : 5000, boot_retry, osd);
		return;
	}
	osd->booted = true;
	osd->up_epoch = br.epoch;
	log_info("osd", "osd.%d is up at %s in epoch %llu", osd->whoami, osd->addr,
		 (unsigned long long)br.epoch);
	osd_hb_beacon(osd);	/* its answer brings the first lease */
	osd_pgs_kick(osd);
}

void osd_boot(struct osd *osd)
{
	struct osd_boot_req req = {
		.id = osd->whoami,
		.weight = osd->weight,
		.have_epoch = osd->map ? osd->map->epoch : 0,
	};
	struct msg *m;
	struct enc e;

	if (osd->boot_pending || !osd->monc)
		return;
	memcpy(req.uuid, osd->uuid, 16);
	snprintf(req.addr, sizeof(req.addr), "%s", osd->addr);
	snprintf(req.host, sizeof(req.host), "%s", osd->host);
	enc_init(&e);
	osd_boot_req_encode(&req, &e);
	m = msg_new(MT_OSD_BOOT, &e);
	enc_free(&e);
	if (!m)
		return;
	osd->boot_pending = true;
	osd->boot_sent_ms = mono_now_ms();
	if (monc_call(osd->monc, m, 10000, 0, boot_reply, osd) < 0) {
		osd->boot_pending = false;
		msgr_timer(osd->msgr, 1000, boot_retry, osd);
	}
}

/* Loop: reads completed (osd->read_efd).  Once the loop leaves the store
 * alone (closing) it only drains the count: store_close hands the reads
 * left to the store's read thread. */
static void reads_done(void *arg)
{
	struct osd *osd = arg;
	uint64_t v;

	if (!atomic_load(&osd->closing)) {
		store_read_poll(osd->store);
	} else if (read(osd->read_efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: drained already */
	}
}

static void start_loop(void *arg)
{
	struct osd *osd = arg;
	int r;

	/* the store's reads complete on this thread (store_read_poll_start) */
	r = store_read_poll_start(osd->store, osd->read_efd);
	if (r == 0)
		r = msgr_watch_fd(osd->msgr, osd->read_efd, reads_done, osd);
	if (r)
		die("cannot reap the store's reads on the loop: %s", strerror(-r));
	monc_start(osd->monc);
	osd_hb_start(osd);
	osd_scrub_sched_start(osd);
	osd_memtrim_start(osd);
}

/* Shutdown, step 1 (loop): ask to be marked down. */
struct stop_ctx {
	struct osd *osd;
	struct sync_call s;
};

static void stop_reply(void *arg, struct msg *reply, int err)
{
	struct stop_ctx *sc = arg;

	msg_free(reply);
	sync_call_done(&sc->s, NULL, err);
}

static void stop_loop(void *arg)
{
	struct stop_ctx *sc = arg;
	struct osd *osd = sc->osd;
	struct osd_stopping s = { .id = osd->whoami, .epoch = osd->map ? osd->map->epoch : 0 };
	struct msg *m;
	struct enc e;

	atomic_store(&osd->stopping, true);
	enc_init(&e);
	osd_stopping_encode(&s, &e);
	m = msg_new(MT_OSD_STOPPING, &e);
	enc_free(&e);
	if (!osd->monc || !osd->booted || !m ||
	    monc_call(osd->monc, m, 5000, 0, stop_reply, sc) < 0) {
		if (!osd->monc || !osd->booted)
			msg_free(m);
		sync_call_done(&sc->s, NULL, -ENOTCONN);
	}
}

/* Shutdown, step 2 (loop): from now on the loop leaves the store alone. */
static void close_loop(void *arg)
{
	struct stop_ctx *sc = arg;

	atomic_store(&sc->osd->closing, true);
	sync_call_done(&sc->s, NULL, 0);
}

static void run_on_loop_and_wait(struct osd *osd, void (*fn)(void *), struct stop_ctx *sc)
{
	sc->osd = osd;
	pthread_mutex_init(&sc->s.lock, NULL);
	pthread_cond_init(&sc->s.cond, NULL);
	sc->s.done = false;
	osd_post(osd, fn, sc);
	pthread_mutex_lock(&sc->s.lock);
	while (!sc->s.done)
		pthread_cond_wait(&sc->s.cond, &sc->s.lock);
	pthread_mutex_unlock(&sc->s.lock);
}

/* After the messenger is gone: nothing else runs. */
static void osd_free_state(struct osd *osd)
{
	for (uint32_t i = 0; i < osd->npeers; i++)
		if (osd->peers[i].conn)
			msg_conn_put(osd->peers[i].conn);
	free(osd->peers);
	osd_mapwait_free(osd);
	osd_map_delays_free();
	monc_destroy(osd->monc);
	osd->monc = NULL;
	osd_pgs_free(osd);
	for (int i = 0; i < OSD_MAP_HISTORY; i++) {
		if (osd->hist[i] == osd->map)
			osd->map = NULL;
		osdmap_free(osd->hist[i]);
		osd->hist[i] = NULL;
	}
	osdmap_free(osd->map);
	osd->map = NULL;
}

static int do_run(struct config *conf)
{
	struct osd *osd = &g_osd;
	char block[4096], kv[4096], buf[128], who[32], bound[OSDMAP_ADDR_MAX + 1], err[512];
	const char *s, *addr;
	struct store_options so;
	struct msgr_config mc = { .size_of = sizeof(mc), .block_crcs = true };
	struct msgr_ops ops = { .dispatch = osd_dispatch, .connected = on_connected,
				.closed = on_closed };
	sigset_t sigs;
	int r, sig;

	if (!opt.data) {
		conf_str(conf, "osd", "osd_data", NULL, &s);
		opt.data = s;
	}
	if (!opt.data)
		die("no data folder; give one with --data DIR");
	if (read_small(opt.data, "whoami", buf, sizeof(buf)) < 0)
		die("data folder '%s' has no OSD; create one with: " PROG " --mkfs --data %s "
		    "--mon ADDR", opt.data, opt.data);
	osd->whoami = atoi(buf);
	snprintf(who, sizeof(who), "osd.%d", osd->whoami);
	snprintf(osd->ident, sizeof(osd->ident), "osd.%d", osd->whoami);
	if (read_small(opt.data, "fsid", buf, sizeof(buf)) < 0 || uuid_parse(buf, osd->fsid))
		die("data folder '%s' has no readable fsid file; recreate the OSD with --mkfs",
		    opt.data);
	open_log(conf, who, osd->ident);
	osd->conf = conf;
	osd->data_dir = opt.data;
	conf_str(conf, who, "mon_host", "127.0.0.1:6789", &osd->mon_host);
	conf_str(conf, who, "osd_addr", NULL, &addr);
	if (!addr)
		die("no address to bind; give one with --addr IP[:PORT]");
	conf_str(conf, who, "osd_host", NULL, &s);
	if (s)
		snprintf(osd->host, sizeof(osd->host), "%s", s);
	else if (gethostname(osd->host, sizeof(osd->host)) < 0)
		snprintf(osd->host, sizeof(osd->host), "localhost");
	osd->hb_interval_ms = conf_ms(conf, who, "osd_heartbeat_interval", 1000);
	osd->hb_grace_ms = conf_ms(conf, who, "osd_heartbeat_grace", 20000);
	osd->complaint_ms = conf_ms(conf, who, "osd_op_complaint_time", 30000);
	osd->object_max = conf_size(conf, who, "osd_max_object_size", STORE_DEFAULT_OBJECT_MAX);
	osd->log_max = (uint32_t)conf_int(conf, who, "osd_pg_log_max", PGLOG_DEFAULT_MAX,
					  1, 1000000);
	osd->dups_max = (uint32_t)conf_int(conf, who, "osd_pg_log_dups_max", PGLOG_DEFAULT_DUPS,
					   0, 1000000);
	osd->rec_max = (uint32_t)conf_int(conf, who, "osd_recovery_max_active", 4, 1, 1024);
	osd->rec_sleep_ms = (uint32_t)conf_int(conf, who, "osd_recovery_sleep_ms", 0, 0, 60000);
	/* what waits for a newer map (mapwait.c) or in a PG (ops.c) */
	osd->memory_target = conf_size(conf, who, "osd_memory_target", OSD_MEMORY_TARGET_DEFAULT);
	if (osd->memory_target < (32u << 20))
		die("osd_memory_target must be at least 32M");
	osd_mapwait_init(&osd->mw);
	osd->mw.max_ops = (uint32_t)conf_int(conf, who, "osd_map_wait_max_ops",
					     OSD_MAPWAIT_DEFAULT_OPS, 0, 1 << 20);
	osd->mw.max_bytes = conf_size(conf, who, "osd_map_wait_max_bytes",
				      osd->memory_target / 8 < OSD_MAPWAIT_DEFAULT_BYTES ?
				      osd->memory_target / 8 : OSD_MAPWAIT_DEFAULT_BYTES);
	osd->mw.max_per_conn = (uint32_t)conf_int(conf, who, "osd_map_wait_max_per_conn",
						  OSD_MAPWAIT_DEFAULT_PER_CONN, 0, 1 << 20);
	osd->mw.max_per_pg = (uint32_t)conf_int(conf, who, "osd_map_wait_max_per_pg",
						OSD_MAPWAIT_DEFAULT_PER_PG, 0, 1 << 20);
	osd->mw.timeout_ms = conf_ms(conf, who, "osd_map_wait_timeout",
				     OSD_MAPWAIT_DEFAULT_TIMEOUT_MS);
	if (osd->mw.timeout_ms == 0)
		die("osd_map_wait_timeout must be more than 0");
	osd->pg_waiting_max = (uint32_t)conf_int(conf, who, "osd_pg_max_waiting_ops", 1024, 1,
						 1 << 20);
	{
		char ferr[512];
		double fs;

		if (config_get_double(conf, who, "osd_failsafe_full_ratio", 0.97, 0, 1, &fs, ferr,
				      sizeof(ferr)) < 0)
			die("%s", ferr);
		osd->failsafe_ratio = (uint32_t)(fs * 10000 + 0.5);
	}
	if (osd->hb_interval_ms == 0)
		osd->hb_interval_ms = 1000;
	pthread_mutex_init(&osd->ops_lock, NULL);

	/* signals go to the main thread only: block them before any
	 * thread is started */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	store_paths(opt.data, &so, block, kv);
	so.object_max = osd->object_max;
	/* Objects of up to half a block live in the kv.  A 4 KiB object
	 * goes to a data block: its write is logged either way, and at the
	 * checkpoint one block written in place costs less than the two
	 * LMDB overflow pages of an inline 4 KiB value (doc/osd.md). */
	so.inline_max = (uint32_t)conf_size(conf, who, "osd_store_inline_max", 2048);
	/* reads issued while the loop handles a burst of requests go to
	 * the device in one submission */
	so.defer = msgr_defer;
	if (so.inline_max == 0 || so.inline_max > 65536)
		die("osd_store_inline_max must be between 1 and 64K");
	r = store_open(&so, &osd->store);
	if (r < 0)
		die("cannot open the store in '%s': %s; check it with: atoll-store-tool --data %s "
		    "fsck", opt.data, strerror(-r), opt.data);
	osd->inline_max = so.inline_max;
	{
		struct store_statfs sf;

		if (store_statfs(osd->store, &sf) == 0)
			osd_space_note_statfs(osd, &sf);	/* the kv's scale */
	}
	{
		char us[37];

		store_uuid(osd->store, us);
		uuid_parse(us, osd->uuid);
	}
	{
		struct store_statfs sf;
		uint64_t w = 0;

		if (store_statfs(osd->store, &sf) == 0)
			w = (sf.total << 16) >> 40;
		if (w < 655)
			w = 655;	/* 0.01 */
		osd->weight = (uint32_t)w;
		if (config_get(conf, who, "osd_weight", NULL)) {
			double dw;

			if (config_get_double(conf, who, "osd_weight", 1.0, 0.0, 65535.0, &dw, err,
					      sizeof(err)) < 0)
				die("%s", err);
			osd->weight = (uint32_t)(dw * 65536.0);
		}
	}
	r = osd_map_load(osd);
	if (r < 0)
		die("cannot read the saved map in '%s': %s", opt.data, strerror(-r));
	r = osd_pgs_load(osd);
	if (r < 0)
		die("cannot load the placement groups of '%s': %s; check the store with: "
		    "atoll-store-tool --data %s fsck", opt.data, strerror(-r), opt.data);

	mc.me.type = MSG_ENTITY_OSD;
	mc.me.id = (uint64_t)osd->whoami;
	memcpy(mc.fsid, osd->fsid, 16);
	if (msgr_config_read(conf, who, &mc, err, sizeof(err)) < 0)
		die("%s", err);
	{
		char entity[32];

		snprintf(entity, sizeof(entity), "osd.%d", osd->whoami);
		if (auth_config_load(conf, entity, entity, NULL, &osd_auth, err, sizeof(err)) < 0)
			die("%s", err);
		mc.auth = osd_auth;
		osd->auth_on = osd_auth != NULL;
		osd->auth = osd_auth;
	}
	r = msgr_create(&mc, &ops, osd, &osd->msgr);
	if (r < 0)
		die("cannot create the messenger: %s", strerror(-r));
	osd->read_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (osd->read_efd < 0)
		die("cannot create an eventfd: %s", strerror(errno));
	if (!strchr(addr, ':')) {
		snprintf(buf, sizeof(buf), "%s:0", addr);
		addr = buf;
	}
	r = msgr_listen(osd->msgr, addr, bound, sizeof(bound));
	if (r < 0)
		die("cannot bind %s: %s", addr, strerror(-r));
	snprintf(osd->addr, sizeof(osd->addr), "%s", bound);
	{
		/* the port and the store are open: root is no longer needed */
		const char *dirs[] = { opt.data };

		if (priv_drop_config(conf, who, dirs, 1, err, sizeof(err)) < 0)
			die("%s", err);
	}
	{
		struct monc_config mcc = { .size_of = sizeof(mcc), .mon_host = osd->mon_host,
					   .who = "osd" };
		struct monc_ops mops = { .session_open = on_mon_session, .monmap = on_monmap };
		struct monmap_msg saved;

		r = monc_create(osd->msgr, &mcc, &mops, osd, &osd->monc, err, sizeof(err));
		if (r < 0)
			die("%s", err);
		/* the monitors we heard of last time, with mon_host */
		r = osd_monmap_load(opt.data, &saved);
		if (r == 0)
			r = monc_seed(osd->monc, &saved);
		if (r < 0 && r != -ENOENT)
			log_warn("osd", "ignoring the saved monitor map in '%s': %s", opt.data,
				 strerror(-r));
	}
	/* before the messenger starts: ops count from the first */
	r = osd_metrics_start(osd, who, err, sizeof(err));
	if (r < 0)
		die("%s", err);
	r = msgr_start(osd->msgr);
	if (r < 0)
		die("cannot start the messenger: %s", strerror(-r));
	log_info("osd", "osd.%d listening on %s (host %s), monitor %s", osd->whoami, osd->addr,
		 osd->host, osd->mon_host);

	osd_post(osd, start_loop, osd);

	do {
		r = sigwait(&sigs, &sig);
	} while (r != 0);
	log_info("osd", "signal %d: stopping", sig);
	osd_metrics_stop(osd);

	struct stop_ctx sc;

	run_on_loop_and_wait(osd, stop_loop, &sc);
	/* finish the ops in flight (10 s at most) */
	for (int i = 0; i < 1000 && atomic_load(&osd->ops_in_flight) > 0; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	run_on_loop_and_wait(osd, close_loop, &sc);
	monc_stop(osd->monc);
	osd_write_profile_log();
	store_close(osd->store);
	osd->store = NULL;
	msgr_destroy(osd->msgr);
	osd->msgr = NULL;
	close(osd->read_efd);	/* after the loop that polled it */
	msg_auth_free(osd_auth);	/* after the messenger, which reads it */
	osd_auth = NULL;
	osd->auth = NULL;
	osd_free_state(osd);
	log_info("osd", "osd.%d stopped", osd->whoami);
	return 0;
}

int main(int argc, char **argv)
{
	struct config *conf = load_config(argc, argv);
	int r = opt.mkfs ? do_mkfs(conf) : do_run(conf);

	log_close();
	config_free(conf);
	return r;
}
