/*
 * cluster.h - atoll-cluster, the local cluster launcher: shared types.
 *
 * atoll-cluster keeps everything about one local cluster in one folder D:
 *   D/atoll.conf       the configuration every daemon and client reads
 *   D/cluster.state    which daemons exist, where they listen, their PIDs
 *   D/mon.a/ ...       each monitor's data     D/osd.N/  each OSD's data
 *   D/log/NAME.log     each daemon's output (stdout and stderr)
 * Every daemon serves Prometheus metrics on its own IP and a free port
 * (metrics_addr in its section of atoll.conf; the state file's `metrics`
 * lines name the URLs).
 * The state file is what `down`, `status` and `osd ...` read; a PID is
 * trusted only together with the process start time recorded beside it,
 * so a PID reused by an unrelated process is never signalled.
 */
#ifndef ATOLL_TOOLS_CLUSTER_H
#define ATOLL_TOOLS_CLUSTER_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mono.h"	/* lib/, header-only: mono_now_s() */

#define CL_MAX_DAEMONS	256
#define CL_MON_NAME	"mon.a"		/* the first monitor */
#define CL_MONS_MAX	9		/* --mons: 1, 3, 5, 7 or 9 */
#define CL_MON_ADDRS	(CL_MONS_MAX * 24)	/* "IP:PORT,IP:PORT,..." */
#define CL_STATE_FILE	"cluster.state"
#define CL_CONF_FILE	"atoll.conf"
#define CL_KEYRING_FILE	"keyring"	/* mode 0600 (cluster_keys.c) */

enum cl_kind { CL_MON = 1, CL_OSD = 2, CL_NBD = 3, CL_MDS = 4 };
#define CL_NBD_NAME	"nbd"		/* the one atoll-nbd `up` starts */
#define CL_MDS_NAME	"mds.a"		/* the first atoll-mds `up` starts */
#define CL_FS_META_POOL	"fs_meta"	/* the file system's pools (atoll-mds's defaults) */
#define CL_FS_DATA_POOL	"fs_data"

struct cl_daemon {
	char name[32];			/* "mon.a", "osd.3" */
	enum cl_kind kind;
	int id;				/* OSD id; 0 for the monitor */
	int host;			/* host index: name "hostH", ip 127.0.0.(H+2) */
	char ip[16];
	int port;
	int mport;			/* its /metrics port on ip; 0 = none yet */
	int dport;			/* a monitor's dashboard port on ip; 0 = none */
	pid_t pid;			/* 0 when not running */
	unsigned long long start;	/* /proc/PID/stat starttime, with pid */
};

struct cl_state {
	char dir[PATH_MAX];		/* absolute */
	char fsid[37];
	int hosts;
	char size[32];			/* OSD store size as given ("2G") */
	char pool[64];			/* the default pool's name, "" when none */
	int n;
	struct cl_daemon d[CL_MAX_DAEMONS];
};

/* Options shared by the commands. */
struct cl_opts {
	const char *dir;
	int osds;
	int mons;			/* monitors (up; odd) */
	int hosts;
	const char *size;
	const char *pool;		/* default pool name; "" = none */
	int pg;				/* default pool's pg_num; 0 = monitor default */
	int timeout;			/* seconds to wait for HEALTH_OK */
	bool purge;
	bool no_nbd;			/* up: start no atoll-nbd */
	bool no_mds;			/* up: start no atoll-mds (no file system) */
	int mds;			/* up: atoll-mds daemons (mds.a, mds.b, ...) */
	bool json;
	int host;			/* osd add --host H; -1 = id % hosts */
	int nsets;
	const char *sets[64];		/* --set k=v, into [global] */
};

/* Set by SIGINT/SIGTERM: long waits give up and roll back. */
extern volatile sig_atomic_t cl_interrupted;

/* cluster_state.c */
int cl_state_load(struct cl_state *st, const char *dir);
int cl_state_save(const struct cl_state *st);
struct cl_daemon *cl_state_find(struct cl_state *st, const char *name);
struct cl_daemon *cl_state_osd(struct cl_state *st, int id);
/* "mon", "osd", "nbd", "mds": the kind as the state file and status write it. */
const char *cl_kind_name(enum cl_kind kind);
void cl_path(char *buf, size_t len, const struct cl_state *st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* cluster_proc.c */
int cl_find_binary(const char *name, char *out, size_t len);
int cl_free_port(const char *ip);
bool cl_alive(const struct cl_daemon *d);
int cl_proc_start_time(pid_t pid, unsigned long long *start);
int cl_spawn(const char *const argv[], const char *logpath, pid_t *pid);
int cl_run_capture(const char *const argv[], const char *logpath, int timeout_s,
		   char *out, size_t outlen);
int cl_wait_listening(const struct cl_daemon *d, pid_t child, int timeout_s,
		      const char *logpath);
/* Waits until the log holds, after byte `from`, a line starting with
 * prefix; the rest of that line goes to out. */
int cl_wait_line(const struct cl_daemon *d, pid_t child, int timeout_s,
		 const char *logpath, long from, const char *prefix,
		 char *out, size_t outlen);
int cl_stop(struct cl_daemon *d, int sig, int timeout_s);
int cl_stop_all(struct cl_state *st, int timeout_s);
void cl_log_tail(const char *path, int lines);

/* cluster_daemons.c: command lines of doc/daemons.md */
/* "http://IP:PORT/metrics" of d, "" when it has none. */
void cl_metrics_url(const struct cl_daemon *d, char *buf, size_t len);
/* A monitor's dashboard URL ("" for other daemons or before its start). */
void cl_dashboard_url(const struct cl_daemon *d, char *buf, size_t len);
int cl_start_daemon(struct cl_state *st, struct cl_daemon *d, int timeout_s);
/* n daemons started at once, then waited for (those running: left alone). */
int cl_start_daemons(struct cl_state *st, struct cl_daemon **d, int n, int timeout_s);
/* atoll-mon --mkfs of every monitor in st (one --initial list). */
int cl_mkfs_mon(struct cl_state *st);
/* atoll-osd --mkfs of n new OSDs, several at once; want_ids[k] >= 0 (or
 * want_ids NULL: any): a new disk for that id (after atoll osd destroy).
 * ids[k]: the id each got; folders D/osd.ID, keys in the keyring. */
int cl_mkfs_osds(struct cl_state *st, int n, const int *want_ids, int *ids);

/* cluster_keys.c: D/keyring.  create: mon., client.admin and
 * client.bootstrap-osd; add: one entity with a fresh key (nothing when
 * it has one), with its caps per service (NULL: none). */
int cl_keyring_create(const struct cl_state *st);
/* The entity atoll-nbd runs as (mon: profile client, profile blocklist;
 * osd: allow rw pool=POOL). */
#define CL_NBD_ENTITY	"client.nbd"
int cl_keyring_add(const struct cl_state *st, const char *name, const char *caps_mon,
		   const char *caps_osd, const char *caps_mds);
/* Removes a folder and everything in it. */
int cl_remove_tree(const char *path);
/* Every monitor's IP:PORT, comma-separated (mon_host). */
void cl_mon_addr(const struct cl_state *st, char *buf, size_t len);

/* cluster_mon.c: the monitors */
/* Waits until the monitors have a leader; its name ("mon.b") in name. */
int cl_mon_leader(struct cl_state *st, int timeout_s, char *name, size_t len);
/* `mon stop|start|kill [NAME]` (no NAME with kill/stop: the leader). */
int cl_cmd_mon(struct cl_opts *o, const char *verb, const char *name);

/* cluster_health.c: through the client library */
int cl_create_pool(struct cl_state *st, const char *name, int osds, int pg, int timeout_s);
int cl_wait_health(struct cl_state *st, int timeout_s, bool quiet);
int cl_print_health(struct cl_state *st);

/* cluster_up.c / cluster_osd.c: the commands */
/* mkfs + start n new OSDs; the k-th smallest new id on host hosts[k]. */
int cl_add_osds(struct cl_state *st, int n, const int *hosts, int timeout_s);
int cl_cmd_up(struct cl_opts *o);
int cl_cmd_down(struct cl_opts *o);
int cl_cmd_status(struct cl_opts *o);
int cl_cmd_osd(struct cl_opts *o, const char *verb, const char *arg);

/* cluster_mds.c: the MDS daemons (mds.a, mds.b, ...) */
/* Creates the file system's pools and adds o->mds daemons to the state. */
int cl_mds_add(struct cl_state *st, const struct cl_opts *o);
int cl_mds_start_all(struct cl_state *st, int timeout_s);
int cl_mds_stop_all(struct cl_state *st, int timeout_s);
/* cl_start_daemon's wait for a started atoll-mds (see the file). */
int cl_mds_wait_started(const struct cl_state *st, const struct cl_daemon *d, pid_t pid,
			int timeout_s, const char *log, long from);
/* `mds stop|start|kill [NAME]` */
int cl_cmd_mds(struct cl_opts *o, const char *verb, const char *name);

/* Output helpers (stderr, prefixed "atoll-cluster: "). */
void cl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cl_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
