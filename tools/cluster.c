/*
 * cluster.c - atoll-cluster: start and stop a whole local cluster.
 *
 * The README's first command runs `atoll-cluster up`; the integration
 * tests use it too.  This file holds main(): the options, the help and
 * the dispatch to the commands (cluster_up.c, cluster_osd.c).  The
 * daemons it starts are the ones next to this program in the build or
 * install folder, so a build folder works without installing.
 */
#include "cluster.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atoll/atoll.h"

volatile sig_atomic_t cl_interrupted;

void cl_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "atoll-cluster: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cl_info(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "atoll-cluster: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void on_signal(int sig)
{
	(void)sig;
	cl_interrupted = 1;
}

static const char usage_text[] =
"usage: atoll-cluster COMMAND [OPTIONS]\n"
"\n"
"Starts and stops a complete atoll cluster on this machine, in one folder:\n"
"a monitor and OSDs spread over several 'hosts', each host on its own\n"
"loopback address 127.0.0.H (H = 2, 3, ...), every daemon on a free port;\n"
"then atoll-nbd (block images) and atoll-mds (the file system, mount it\n"
"with: atoll-fuse MNT -o conf=D/atoll.conf).\n"
"\n"
"commands:\n"
"  up       create and start a cluster (or start a stopped one again) and\n"
"           wait until it is HEALTH_OK; prints how to use it\n"
"  down     stop every daemon of the cluster (SIGTERM, then SIGKILL after\n"
"           30 s); removes nothing unless --purge\n"
"  status   the daemons, their addresses and PIDs, and the cluster status\n"
"  osd add             mkfs and start one more OSD (--host H to choose its host)\n"
"  osd stop|start N    stop osd.N cleanly (SIGTERM) or start it again\n"
"  osd kill N          kill osd.N with SIGKILL (a crash)\n"
"  osd replace N       give stopped osd.N a new, empty disk keeping its id (after\n"
"                      atoll osd destroy N) and start it: it is backfilled\n"
"  osd rm N            forget stopped osd.N and delete its data (after it was\n"
"                      drained: atoll osd drain N; then atoll osd rm N)\n"
"  mon stop|start|kill [NAME]  stop monitor NAME (a, b, ...) cleanly, start\n"
"                      it again (same address and data), or kill it with\n"
"                      SIGKILL; without NAME stop and kill pick the leader\n"
"                      (and print its name), start starts every stopped one\n"
"  mds stop|kill [NAME] stop an atoll-mds cleanly (SIGTERM) or kill it with\n"
"                      SIGKILL: mds.a, mds.b, ...; without NAME the active one\n"
"                      (a standby takes over)\n"
"  mds start [NAME]    start it again (it becomes a standby while another one\n"
"                      is active); without NAME every stopped one\n"
"\n"
"options:\n"
"  --dir D        the cluster's folder (default: $ATOLL_CLUSTER_DIR or ./atoll-cluster)\n"
"  --mons N       monitors to create (up; odd, default 3, or $ATOLL_CLUSTER_MONS):\n"
"                 mon.a on host 0 (127.0.0.2), mon.b on host 1, ...; mon_host\n"
"                 lists them all\n"
"  --osds N       OSDs to create (up; default 3)\n"
"  --hosts H      hosts to spread them over, OSD i on host i mod H (up; default 3,\n"
"                 or N when N is smaller)\n"
"  --size SZ      each OSD's store size (up, osd add; default 10G; the file is\n"
"                 sparse until written)\n"
"  --pool NAME    the default pool up creates (default 'default'; size 3, or\n"
"                 the number of hosts when fewer; --pool '' for none)\n"
"  --pg N         the default pool's pg_num (default: the monitor's, 64)\n"
"  --set K=V      a configuration option for [global] of atoll.conf (repeatable),\n"
"                 e.g. --set osd_heartbeat_grace=3s\n"
"  --timeout S    seconds to wait for each daemon and for HEALTH_OK (default 60)\n"
"  --no-nbd       with up: do not start atoll-nbd (by default one serves the\n"
"                 default pool's images on 127.0.0.2, see doc/nbd.md)\n"
"  --mds N        with up: N atoll-mds daemons for the file system (default 2:\n"
"                 mds.a on 127.0.0.2 becomes the active one, mds.b on the next\n"
"                 host a standby; clients find the active one in the map; with\n"
"                 one, [mds] mds_addr of atoll.conf names it; see doc/fs.md)\n"
"  --no-mds       with up: no file system (--mds 0; by default up creates the\n"
"                 pools fs_meta and fs_data)\n"
"  --purge        with down: remove the cluster's folder too\n"
"  --host H       with osd add: the host index for the new OSD\n"
"  --format json  with status: JSON\n"
"  -h, --help     this text;  --version  the version\n"
"\n"
"files in D: atoll.conf (export ATOLL_CONF=D/atoll.conf for the atoll CLI),\n"
"cluster.state (daemons and PIDs), mon.X/ and osd.N/ (data), log/NAME.log.\n"
"Mount the file system: mkdir MNT && atoll-fuse MNT -o conf=D/atoll.conf\n"
"(unmount: fusermount3 -u MNT); atoll fs status shows the MDS.\n"
"Exit status: 0 success, 1 failure (a message says why), 2 bad usage.\n";

int main(int argc, char **argv)
{
	enum { O_DIR = 256, O_OSDS, O_MONS, O_HOSTS, O_SIZE, O_POOL, O_PG, O_SET, O_TIMEOUT,
	       O_PURGE, O_HOST, O_FORMAT, O_VERSION, O_NO_NBD, O_NO_MDS, O_MDS };
	static const struct option lopts[] = {
		{ "dir", required_argument, NULL, O_DIR },
		{ "osds", required_argument, NULL, O_OSDS },
		{ "mons", required_argument, NULL, O_MONS },
		{ "hosts", required_argument, NULL, O_HOSTS },
		{ "size", required_argument, NULL, O_SIZE },
		{ "pool", required_argument, NULL, O_POOL },
		{ "pg", required_argument, NULL, O_PG },
		{ "set", required_argument, NULL, O_SET },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "purge", no_argument, NULL, O_PURGE },
		{ "no-nbd", no_argument, NULL, O_NO_NBD },
		{ "no-mds", no_argument, NULL, O_NO_MDS },
		{ "mds", required_argument, NULL, O_MDS },
		{ "host", required_argument, NULL, O_HOST },
		{ "format", required_argument, NULL, O_FORMAT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	struct cl_opts o = {
		.osds = 3, .mons = 3, .hosts = -1, .size = "10G", .pool = "default",
		.timeout = 60, .host = -1, .mds = 2,
	};
	const char *cmd, *env = getenv("ATOLL_CLUSTER_DIR");
	struct sigaction sa = { .sa_handler = on_signal };
	char *end;
	int c, li = 0;

	o.dir = env && *env ? env : "atoll-cluster";
	{
		/* the default --mons for every `up` of a test run */
		const char *e = getenv("ATOLL_CLUSTER_MONS");

		if (e && *e) {
			o.mons = (int)strtol(e, &end, 10);
			if (*end || o.mons < 1) {
				cl_err("ATOLL_CLUSTER_MONS '%s' is not a positive number", e);
				return 2;
			}
		}
	}
	while ((c = getopt_long(argc, argv, "h", lopts, &li)) != -1) {
		switch (c) {
		case O_DIR: o.dir = optarg; break;
		case O_MONS: o.mons = (int)strtol(optarg, &end, 10);
			if (*end || o.mons < 1) goto bad_number;
			break;
		case O_OSDS: o.osds = (int)strtol(optarg, &end, 10);
			if (*end || o.osds < 1) goto bad_number;
			break;
		case O_HOSTS: o.hosts = (int)strtol(optarg, &end, 10);
			if (*end || o.hosts < 1) goto bad_number;
			break;
		case O_SIZE: o.size = optarg; break;
		case O_POOL: o.pool = optarg;
			if (strlen(optarg) > 63 || strchr(optarg, ' ')) {
				cl_err("--pool '%s': a pool name has no spaces and at most 63 bytes",
				       optarg);
				return 2;
			}
			break;
		case O_PG: o.pg = (int)strtol(optarg, &end, 10);
			if (*end || o.pg < 1) goto bad_number;
			break;
		case O_SET:
			if (!strchr(optarg, '=') || optarg[0] == '=' || strchr(optarg, '\n')) {
				cl_err("--set '%s' is not KEY=VALUE, e.g. --set osd_heartbeat_grace=3s",
				       optarg);
				return 2;
			}
			if (o.nsets == (int)(sizeof(o.sets) / sizeof(o.sets[0]))) {
				cl_err("too many --set options (at most 64)");
				return 2;
			}
			o.sets[o.nsets++] = optarg;
			break;
		case O_TIMEOUT: o.timeout = (int)strtol(optarg, &end, 10);
			if (*end || o.timeout < 1) goto bad_number;
			break;
		case O_PURGE: o.purge = true; break;
		case O_NO_NBD: o.no_nbd = true; break;
		case O_NO_MDS: o.no_mds = true; o.mds = 0; break;
		case O_MDS:
			o.mds = (int)strtol(optarg, &end, 10);
			if (*end || end == optarg || o.mds < 0 || o.mds > 26) {
				cl_err("--mds '%s' is not a number of MDS daemons from 0 to 26",
				       optarg);
				return 2;
			}
			break;
		case O_HOST: o.host = (int)strtol(optarg, &end, 10);
			if (*end || o.host < 0) goto bad_number;
			break;
		case O_FORMAT:
			if (strcmp(optarg, "json") && strcmp(optarg, "plain")) {
				cl_err("--format '%s': use json or plain", optarg);
				return 2;
			}
			o.json = strcmp(optarg, "json") == 0;
			break;
		case 'h': fputs(usage_text, stdout); return 0;
		case O_VERSION: {
			const char *v;

			atoll_version(&v);
			printf("atoll-cluster %s\n", v);
			return 0;
		}
		default:
			fprintf(stderr, "see: atoll-cluster --help\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (o.hosts < 0)
		o.hosts = o.osds < 3 ? o.osds : 3;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	cmd = argv[optind];
	if (strcmp(cmd, "up") == 0 && optind + 1 == argc)
		return cl_cmd_up(&o);
	if (strcmp(cmd, "down") == 0 && optind + 1 == argc)
		return cl_cmd_down(&o);
	if (strcmp(cmd, "status") == 0 && optind + 1 == argc)
		return cl_cmd_status(&o);
	if (strcmp(cmd, "osd") == 0 && optind + 1 < argc && optind + 3 >= argc)
		return cl_cmd_osd(&o, argv[optind + 1], argv[optind + 2]);
	if (strcmp(cmd, "mon") == 0 && optind + 2 <= argc && optind + 3 >= argc)
		return cl_cmd_mon(&o, argv[optind + 1], argv[optind + 2]);
	if (strcmp(cmd, "mds") == 0 && (optind + 2 == argc || optind + 3 == argc))
		return cl_cmd_mds(&o, argv[optind + 1], optind + 3 == argc ? argv[optind + 2] : NULL);
	cl_err("unknown command '%s'%s; see: atoll-cluster --help", cmd,
	       strcmp(cmd, "osd") == 0 ? " (osd add|stop|start|kill|replace|rm N)" :
	       strcmp(cmd, "mon") == 0 ? " (mon stop|start|kill [NAME])" :
	       strcmp(cmd, "mds") == 0 ? " (mds stop|start|kill [NAME])" : "");
	return 2;

bad_number:
	cl_err("--%s '%s' is not a positive number", lopts[li].name, optarg);
	return 2;
}
