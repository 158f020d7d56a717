/*
 * main.c - atoll-mon: options, start-up (--mkfs, --restore, run), signals,
 * and the monitor thread's event loop.
 *
 * The messenger's loop thread only queues what arrives (mon_post); the
 * main thread drains the queue and runs every handler, plus a periodic
 * tick (failure detection).  One thread owning all monitor state keeps
 * the map, its store and the statistics free of locks, and lets a map
 * change block on its fsync without stalling the network loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atoll/atoll.h"
#include "config.h"
#include "deadline.h"
#include "encode.h"
#include "log.h"
#include "mon.h"
#include "msg.h"

#define WHO "mon"

static volatile sig_atomic_t g_stop;

/* ---- small utilities shared by mon/ -------------------------------- */

uint64_t mon_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void mon_uuid_format(const uint8_t u[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	int k = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[k++] = '-';
		out[k++] = hex[u[i] >> 4];
		out[k++] = hex[u[i] & 15];
	}
	out[k] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int mon_uuid_parse(const char *s, uint8_t u[16])
{
	int n = 0;

	for (const char *p = s; *p; p++) {
		int hi, lo;

		if (*p == '-')
			continue;
		if (n == 16 || (hi = hexval(p[0])) < 0 || (lo = hexval(p[1])) < 0)
			return -EINVAL;
		u[n++] = (uint8_t)(hi << 4 | lo);
		p++;
	}
	return n == 16 ? 0 : -EINVAL;
}

/* ---- options -------------------------------------------------------- */

int mon_opts_load(const struct config *cfg, struct mon_opts *o, char *err, size_t errlen)
{
	double nf, bf, ff;
	int64_t v;
	int r;

	memset(o, 0, sizeof(*o));
	if ((r = config_get_duration_ms(cfg, WHO, "osd_heartbeat_grace", 20000,
					&o->heartbeat_grace_ms, err, errlen)) < 0 ||
	    (r = config_get_duration_ms(cfg, WHO, "mon_osd_down_out_interval", 600000,
					&o->down_out_interval_ms, err, errlen)) < 0 ||
	    (r = config_get_duration_ms(cfg, WHO, "osd_op_complaint_time", 30000,
					&o->op_complaint_ms, err, errlen)) < 0)
		return r;
	if ((r = config_get_int(cfg, WHO, "mon_osd_min_down_reporters", 2, 1, 1000, &v,
				err, errlen)) < 0)
		return r;
	o->min_down_reporters = (uint32_t)v;
	if ((r = config_get_double(cfg, WHO, "mon_osd_nearfull_ratio", 0.85, 0, 1, &nf,
				   err, errlen)) < 0 ||
	    (r = config_get_double(cfg, WHO, "mon_osd_backfillfull_ratio", 0.90, 0, 1, &bf,
				   err, errlen)) < 0 ||
	    (r = config_get_double(cfg, WHO, "mon_osd_full_ratio", 0.95, 0, 1, &ff,
				   err, errlen)) < 0)
		return r;
	if (!(nf <= bf && bf <= ff)) {
		snprintf(err, errlen, "the capacity ratios must grow: nearfull %.2f <= "
			 "backfillfull %.2f <= full %.2f", nf, bf, ff);
		return -EINVAL;
	}
	o->nearfull_ratio = (uint32_t)(nf * 10000 + 0.5);
	o->backfillfull_ratio = (uint32_t)(bf * 10000 + 0.5);
	o->full_ratio = (uint32_t)(ff * 10000 + 0.5);
	if ((r = config_get_int(cfg, WHO, "osd_pool_default_size", 3, 1, OSDMAP_SIZE_MAX,
				&v, err, errlen)) < 0)
		return r;
	o->pool_default_size = (uint32_t)v;
	if ((r = config_get_int(cfg, WHO, "osd_pool_default_min_size", 0, 0,
				OSDMAP_SIZE_MAX, &v, err, errlen)) < 0)
		return r;
	o->pool_default_min_size = (uint32_t)v;
	if (o->pool_default_min_size > o->pool_default_size) {
		snprintf(err, errlen, "osd_pool_default_min_size %u is larger than "
			 "osd_pool_default_size %u", o->pool_default_min_size,
			 o->pool_default_size);
		return -EINVAL;
	}
	if ((r = config_get_int(cfg, WHO, "osd_pool_default_pg_num", 64, 1, OSDMAP_PG_MAX,
				&v, err, errlen)) < 0)
		return r;
	o->pool_default_pg_num = (uint32_t)v;
	/* An OSD serves client ops only under a lease, which must run out
	 * before the grace after which a silent OSD is marked down. */
	if ((r = config_get_duration_ms(cfg, WHO, "osd_lease", o->heartbeat_grace_ms / 2,
					&o->lease_ms, err, errlen)) < 0)
		return r;
	if (o->lease_ms == 0 || o->lease_ms >= o->heartbeat_grace_ms ||
	    o->lease_ms > UINT32_MAX) {
		snprintf(err, errlen, "osd_lease (%llu ms) must be more than 0 and less than "
			 "osd_heartbeat_grace (%llu ms); leave it unset for half the grace",
			 (unsigned long long)o->lease_ms,
			 (unsigned long long)o->heartbeat_grace_ms);
		return -EINVAL;
	}
	/* check often enough that "down after grace" is late by a fifth at most */
	o->tick_ms = o->heartbeat_grace_ms / 5;
	if (o->tick_ms < 50)
		o->tick_ms = 50;
	if (o->tick_ms > 1000)
		o->tick_ms = 1000;
	return 0;
}

/* ---- the event queue ----------------------------------------------- */

static void mon_post(struct mon *mon, struct mon_ev *ev)
{
	pthread_mutex_lock(&mon->qlock);
	ev->next = NULL;
	if (mon->qtail)
		mon->qtail->next = ev;
	else
		mon->qhead = ev;
	mon->qtail = ev;
	pthread_cond_signal(&mon->qcond);
	pthread_mutex_unlock(&mon->qlock);
}

/* Loop thread: a message arrived. */
static void on_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	struct mon *mon = arg;
	struct mon_ev *ev = calloc(1, sizeof(*ev));

	if (!ev || mon->stop) {
		free(ev);
		msg_free(m);
		return;
	}
	ev->type = MON_EV_MSG;
	ev->m = m;
	mon_post(mon, ev);
}

/* Loop thread: a connection closed; the monitor thread drops its
 * subscription (the reference taken here keeps c valid until then). */
static void on_closed(void *arg, struct msg_conn *c, int err)
{
	struct mon *mon = arg;
	struct mon_ev *ev;

	if (mon->stop)
		return;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return;
	log_debug("mon", "connection %s closed: %s", msg_conn_addr(c), strerror(-err));
	msg_conn_get(c);
	ev->type = MON_EV_CLOSED;
	ev->c = c;
	mon_post(mon, ev);
}

static void handle_subscribe(struct mon *mon, struct msg *m)
{
	struct mon_subscribe s;
	struct dec d;

	dec_init(&d, m->front, m->front_len);
	if (mon_subscribe_decode(&d, &s) < 0)
		log_warn("mon", "malformed subscribe from %s", msg_conn_addr(m->conn));
	else
		mon_subscribe(mon, m->conn, s.have);
	msg_free(m);
}

static void handle_msg(struct mon *mon, struct msg *m)
{
	if (m->flags & MSG_F_REPLY) {
		msg_free(m);
		return;
	}
	switch (m->type) {
	case MT_MON_SUBSCRIBE:
		handle_subscribe(mon, m);
		break;
	case MT_MON_COMMAND:
		mon_handle_command(mon, m);
		break;
	case MT_OSD_NEW:
		mon_handle_osd_new(mon, m);
		break;
	case MT_OSD_BOOT:
		mon_handle_osd_boot(mon, m);
		break;
	case MT_OSD_BEACON:
		mon_handle_osd_beacon(mon, m);
		break;
	case MT_OSD_FAILURE:
		mon_handle_osd_failure(mon, m);
		break;
	case MT_OSD_STOPPING:
		mon_handle_osd_stopping(mon, m);
		break;
	case MT_OSD_PG_TEMP:
		mon_handle_osd_pg_temp(mon, m);
		break;
	case MT_MDS_BEACON:
		mon_handle_mds_beacon(mon, m);
		break;
	default:
		log_warn("mon", "message of unknown type %u from %s ignored", m->type,
			 msg_conn_addr(m->conn));
		msg_free(m);
	}
}

static void drain(struct mon *mon, bool process)
{
	struct mon_ev *ev, *next;

	pthread_mutex_lock(&mon->qlock);
	ev = mon->qhead;
	mon->qhead = mon->qtail = NULL;
	pthread_mutex_unlock(&mon->qlock);
	for (; ev; ev = next) {
		next = ev->next;
		if (ev->type == MON_EV_MSG) {
			if (process)
				handle_msg(mon, ev->m);
			else
				msg_free(ev->m);
		} else {
			mon_unsubscribe(mon, ev->c);
			msg_conn_put(ev->c);
		}
		free(ev);
	}
}

static void mon_run(struct mon *mon)
{
	mon->next_tick_ms = mono_now_ms() + mon->opts.tick_ms;
	while (!g_stop) {
		struct timespec ts;
		uint64_t now;

		pthread_mutex_lock(&mon->qlock);
		if (!mon->qhead) {
			/* wake at least every 100 ms to notice a signal */
			ts = deadline_ms(CLOCK_REALTIME, 100);
			pthread_cond_timedwait(&mon->qcond, &mon->qlock, &ts);
		}
		pthread_mutex_unlock(&mon->qlock);
		drain(mon, true);
		mon_pg_temp_flush(mon);
		now = mono_now_ms();
		if (now >= mon->next_tick_ms) {
			/* beacons that queued up while the batch above ran (a map
			 * commit's fsync can be slow) count before silence is judged */
			drain(mon, true);
			mon_osd_tick(mon);
			mon_mds_tick(mon);
			mon->next_tick_ms = now + mon->opts.tick_ms;
		}
	}
}

/* ---- start-up ------------------------------------------------------- */

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: atoll-mon --mkfs --data DIR [--fsid UUID] [--conf F] [--set K=V]...\n"
"       atoll-mon --data DIR --addr IP:PORT [--conf F] [--set K=V]... [--log FILE]\n"
"       atoll-mon --restore FILE --data DIR\n"
"\n"
"The monitor: holds the cluster map, detects failed OSDs, answers admin\n"
"commands (atoll ...).  See doc/daemons.md.\n"
"\n"
"  --mkfs          create a monitor store in DIR (a new fsid unless --fsid)\n"
"  --data DIR      the monitor's folder (the store is DIR/store)\n"
"  --addr IP:PORT  the address to bind (default: mon_addr, then mon_host)\n"
"  --fsid UUID     the cluster id for --mkfs\n"
"  --restore FILE  create DIR's store from a backup (atoll mon backup FILE)\n"
"  --conf FILE     the configuration file\n"
"  --set K=V       a configuration option (wins over the file; repeatable)\n"
"  --log FILE      log to FILE instead of stderr\n"
"  --help, --version\n");
}

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "atoll-mon: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int do_mkfs(const char *data, const char *fsid_str, const struct mon_opts *opts)
{
	struct mon_store *st;
	struct osdmap *map;
	struct osdmap_inc inc;
	uint8_t fsid[16];
	char err[512], fs[37];
	int r;

	if (fsid_str) {
		if (mon_uuid_parse(fsid_str, fsid) < 0)
			return die("--fsid '%s' is not a uuid (like "
				   "3f2a5c1e-0b7d-4e59-9a61-2c8e4f0d7b13)", fsid_str);
	} else if (getrandom(fsid, sizeof(fsid), 0) != sizeof(fsid)) {
		return die("cannot read random bytes for the fsid: %s", strerror(errno));
	} else {
		fsid[6] = (fsid[6] & 0x0f) | 0x40;	/* version 4 */
		fsid[8] = (fsid[8] & 0x3f) | 0x80;
	}
	r = mon_store_create(data, &st, err, sizeof(err));
	if (r < 0)
		return die("%s", err);
	map = osdmap_new(fsid);
	if (!map) {
		mon_store_close(st);
		return die("out of memory");
	}
	map->created_ms = mon_wall_ms();
	osdmap_inc_init(&inc, 1);
	inc.modified_ms = map->created_ms;
	inc.has_ratios = true;
	inc.nearfull_ratio = opts->nearfull_ratio;
	inc.backfillfull_ratio = opts->backfillfull_ratio;
	inc.full_ratio = opts->full_ratio;
	r = osdmap_apply(map, &inc);
	if (r == 0)
		r = mon_store_commit(st, &inc, map);
	osdmap_inc_clear(&inc);
	osdmap_free(map);
	mon_store_close(st);
	if (r < 0)
		return die("cannot write the first map to '%s/store': %s", data, strerror(-r));
	mon_uuid_format(fsid, fs);
	printf("%s\n", fs);
	return 0;
}

static int do_restore(const char *data, const char *file)
{
	char err[512];
	struct stat sb;
	void *buf;
	int fd, r;
	ssize_t n;
	size_t got = 0;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return die("cannot open backup '%s': %s", file, strerror(errno));
	if (fstat(fd, &sb) < 0 || sb.st_size <= 0 || sb.st_size > (1ll << 32)) {
		close(fd);
		return die("backup '%s' is empty or too large", file);
	}
	buf = malloc((size_t)sb.st_size);
	if (!buf) {
		close(fd);
		return die("out of memory");
	}
	while (got < (size_t)sb.st_size &&
	       (n = read(fd, (char *)buf + got, (size_t)sb.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (got != (size_t)sb.st_size) {
		free(buf);
		return die("cannot read backup '%s'", file);
	}
	r = mon_store_restore(data, buf, got, err, sizeof(err));
	free(buf);
	if (r < 0)
		return die("%s", err);
	printf("restored '%s' into '%s/store'; start the monitor with: atoll-mon "
	       "--data %s --addr IP:PORT\n", file, data, data);
	return 0;
}

/* Applies the configured capacity ratios if the map's differ. */
static void sync_ratios(struct mon *mon)
{
	struct osdmap_inc inc;

	if (mon->map->nearfull_ratio == mon->opts.nearfull_ratio &&
	    mon->map->backfillfull_ratio == mon->opts.backfillfull_ratio &&
	    mon->map->full_ratio == mon->opts.full_ratio)
		return;
	osdmap_inc_init(&inc, 0);
	inc.has_ratios = true;
	inc.nearfull_ratio = mon->opts.nearfull_ratio;
	inc.backfillfull_ratio = mon->opts.backfillfull_ratio;
	inc.full_ratio = mon->opts.full_ratio;
	if (mon_map_change(mon, &inc, NULL) == 0)
		log_info("mon", "capacity ratios set from the configuration");
}

static int do_run(struct config *cfg, const char *data, const char *addr,
		  const struct mon_opts *opts)
{
	struct msgr_config mc;
	struct msgr_ops ops = {
		.dispatch = on_dispatch,
		.closed = on_closed,
	};
	struct sigaction sa;
	struct mon *mon;
	char err[512], fs[37];
	int r, rc = 1;

	mon = calloc(1, sizeof(*mon));
	if (!mon)
		return die("out of memory");
	mon->cfg = cfg;
	mon->opts = *opts;
	pthread_mutex_init(&mon->qlock, NULL);
	pthread_cond_init(&mon->qcond, NULL);
	mon->osds = calloc(OSDMAP_OSD_MAX, sizeof(*mon->osds));
	if (!mon->osds) {
		die("out of memory");
		goto out_free;
	}
	r = mon_store_open(data, &mon->store, err, sizeof(err));
	if (r < 0) {
		die("%s", err);
		goto out_free;
	}
	r = mon_store_load_latest(mon->store, &mon->map);
	if (r < 0) {
		die("cannot read the map from '%s/store': %s; restore a backup with: "
		    "atoll-mon --restore FILE --data DIR", data, strerror(-r));
		goto out_store;
	}
	{
		const char *cf = config_get(cfg, WHO, "fsid", NULL);
		uint8_t want[16];

		if (cf && cf[0] && (mon_uuid_parse(cf, want) < 0 ||
				    memcmp(want, mon->map->fsid, 16) != 0)) {
			mon_uuid_format(mon->map->fsid, fs);
			die("the configured fsid '%s' is not this monitor's (%s); fix the "
			    "configuration or use the right --data folder", cf, fs);
			goto out_store;
		}
	}

	memset(&mc, 0, sizeof(mc));
	mc.size_of = sizeof(mc);
	mc.me.type = MSG_ENTITY_MON;
	mc.me.id = 0;
	memcpy(mc.fsid, mon->map->fsid, 16);
	r = msgr_create(&mc, &ops, mon, &mon->msgr);
	if (r < 0) {
		die("cannot start the messenger: %s", strerror(-r));
		goto out_store;
	}
	r = msgr_listen(mon->msgr, addr, mon->addr, sizeof(mon->addr));
	if (r < 0) {
		die("cannot listen on '%s': %s", addr, strerror(-r));
		goto out_msgr;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	mon_osd_init(mon);
	r = mon_mds_init(mon, err, sizeof(err));
	if (r < 0) {
		die("%s", err);
		goto out_msgr;
	}
	sync_ratios(mon);
	r = msgr_start(mon->msgr);
	if (r < 0) {
		die("cannot start the messenger: %s", strerror(-r));
		goto out_msgr;
	}
	mon_uuid_format(mon->map->fsid, fs);
	log_info("mon", "listening on %s, fsid %s, epoch %llu", mon->addr, fs,
		 (unsigned long long)mon->map->epoch);
	mon_run(mon);
	log_info("mon", "stopping");
	rc = 0;

out_msgr:
	/* drop our references before the messenger goes away */
	mon->stop = 1;
	drain(mon, false);
	while (mon->nsubs)
		mon_unsubscribe(mon, mon->subs[0].c);
	msgr_destroy(mon->msgr);
	drain(mon, false);
out_store:
	osdmap_free(mon->map);
	mon_store_close(mon->store);
out_free:
	mon_osd_fini(mon);
	mon_pg_fini(mon);
	free(mon->subs);
	free(mon->pgt);
	pthread_cond_destroy(&mon->qcond);
	pthread_mutex_destroy(&mon->qlock);
	free(mon);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "mkfs", no_argument, NULL, 'm' },
		{ "data", required_argument, NULL, 'd' },
		{ "addr", required_argument, NULL, 'a' },
		{ "fsid", required_argument, NULL, 'f' },
		{ "restore", required_argument, NULL, 'R' },
		{ "conf", required_argument, NULL, 'c' },
		{ "set", required_argument, NULL, 's' },
		{ "log", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *data = NULL, *addr = NULL, *fsid = NULL, *restore = NULL;
	const char *conf = NULL, *logfile = NULL, *level_s;
	const char *sets[128];
	int nsets = 0, c, r, level;
	bool mkfs = false;
	struct config *cfg;
	struct mon_opts opts;
	char err[512];

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'm': mkfs = true; break;
		case 'd': data = optarg; break;
		case 'a': addr = optarg; break;
		case 'f': fsid = optarg; break;
		case 'R': restore = optarg; break;
		case 'c': conf = optarg; break;
		case 'l': logfile = optarg; break;
		case 's':
			if (nsets == 128)
				return die("too many --set options (at most 128)");
			sets[nsets++] = optarg;
			break;
		case 'h': usage(stdout); return 0;
		case 'V': {
			const char *v;

			atoll_version(&v);
			printf("atoll-mon %s\n", v);
			return 0;
		}
		default:
			usage(stderr);
			return 1;
		}
	}
	if (optind < argc)
		return die("unexpected argument '%s'; see atoll-mon --help", argv[optind]);

	r = config_load(&cfg, conf, err, sizeof(err));
	if (r < 0)
		return die("%s", err);
	for (int i = 0; i < nsets; i++) {
		char key[128];
		const char *eq = strchr(sets[i], '=');

		if (!eq || eq == sets[i] || (size_t)(eq - sets[i]) >= sizeof(key)) {
			config_free(cfg);
			return die("--set '%s' is not KEY=VALUE, e.g. --set "
				   "osd_heartbeat_grace=3s", sets[i]);
		}
		memcpy(key, sets[i], (size_t)(eq - sets[i]));
		key[eq - sets[i]] = '\0';
		if (config_set_override(cfg, key, eq + 1) < 0) {
			config_free(cfg);
			return die("--set '%s' is not a valid option", sets[i]);
		}
	}
	r = 1;
	if (!data && config_get_str(cfg, WHO, "mon_data", NULL, &data, NULL, 0) < 0)
		data = NULL;
	if (!data) {
		die("no data folder; give one with --data DIR");
		goto out;
	}
	if (!logfile)
		config_get_str(cfg, WHO, "log_file", NULL, &logfile, NULL, 0);
	config_get_str(cfg, WHO, "log_level", "info", &level_s, NULL, 0);
	level = log_level_parse(level_s);
	if (level < 0) {
		die("log_level '%s' is not one of error, warn, info, debug, trace", level_s);
		goto out;
	}
	if (mon_opts_load(cfg, &opts, err, sizeof(err)) < 0) {
		die("%s", err);
		goto out;
	}
	if (restore) {
		r = do_restore(data, restore);
		goto out;
	}
	if (mkfs) {
		r = do_mkfs(data, fsid, &opts);
		goto out;
	}
	if (!addr)
		config_get_str(cfg, WHO, "mon_addr", NULL, &addr, NULL, 0);
	if (!addr)
		config_get_str(cfg, WHO, "mon_host", "127.0.0.1:6789", &addr, NULL, 0);
	if (log_open(WHO, (enum log_level)level, logfile) < 0) {
		die("cannot open log file '%s': %s", logfile ? logfile : "(stderr)",
		    strerror(errno));
		goto out;
	}
	r = do_run(cfg, data, addr, &opts);
	log_close();
out:
	config_free(cfg);
	return r;
}
