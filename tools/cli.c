/*
 * cli.c - `atoll`, the admin command line: global options and dispatch.
 *
 * Global options (--conf, -m/--mon, --format, --help, --version) may stand
 * anywhere on the line, before or after the command words; `--` ends
 * option parsing so that an object named "-x" can still be given.  The
 * command is the longest run of words that names one in the tables of
 * cli_admin.c, cli_objects.c and cli_bench.c; what follows is its own.
 * The connection to the cluster is made only when a command needs it, so
 * `--help` works without a cluster.
 */
#include "cli.h"
#include "cli_call.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_cmd *const tables[] = {
	cli_admin_cmds, cli_object_cmds, cli_bench_cmds, cli_image_cmds, cli_fs_cmds,
	cli_scrub_cmds, cli_pg_cmds, cli_verify_cmds, cli_auth_cmds, cli_watch_cmds,
};

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "atoll: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void print_cmd_usage(FILE *f, const struct cli_cmd *cmd)
{
	fprintf(f, "usage: atoll %s%s%s\n", cmd->words, cmd->args[0] ? " " : "", cmd->args);
}

int cli_usage(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "atoll %s: ", cmd->words);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	print_cmd_usage(stderr, cmd);
	return CLI_EXIT_USAGE;
}

int cli_exit_code(int err)
{
	if (err >= 0)
		return CLI_EXIT_OK;
	switch (-err) {
	case ENOENT:
		return CLI_EXIT_NOENT;
	case ECONNREFUSED:
	case ETIMEDOUT:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return CLI_EXIT_CONNECT;
	default:
		return CLI_EXIT_ERROR;
	}
}

int cli_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

void cli_human_bytes(double v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;

	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", v);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
}

int cli_connect(struct cli *cl)
{
	struct atoll_cluster *c = NULL;
	int ret;

	if (cl->c)
		return 0;
	ret = atoll_cluster_create(&c, cl->conf, 0);
	if (ret) {
		if (ret == -ENOENT && cl->conf)
			cli_err("the configuration file '%s' does not exist", cl->conf);
		else
			/* the library's message names the file and the line */
			cli_err("cannot read the configuration%s%s: %s",
				cl->conf ? " file " : " (", cl->conf ? cl->conf : "$ATOLL_CONF or ./atoll.conf)",
				*atoll_last_error() ? atoll_last_error() : atoll_strerror(ret));
		return CLI_EXIT_ERROR;
	}
	if (cl->keyring && atoll_cluster_set(c, "keyring", cl->keyring)) {
		cli_err("--keyring '%s': %s", cl->keyring, atoll_last_error());
		atoll_cluster_shutdown(c);
		return CLI_EXIT_USAGE;
	}
	if (cl->mon) {
		ret = atoll_cluster_set(c, "mon_host", cl->mon);
		if (ret) {
			cli_err("'%s' is not a list of monitor addresses (IP:PORT[,IP:PORT...]): %s",
				cl->mon, atoll_last_error());
			atoll_cluster_shutdown(c);
			return CLI_EXIT_USAGE;
		}
	}
	/* an admin command should not hang half a minute on a typo */
	if (!getenv("ATOLL_MOUNT_TIMEOUT"))
		atoll_cluster_set(c, "client_mount_timeout", "10s");
	else
		atoll_cluster_set(c, "client_mount_timeout", getenv("ATOLL_MOUNT_TIMEOUT"));
	ret = atoll_cluster_connect(c);
	if (ret) {
		cli_err("cannot connect to the monitors (%s): %s; is the cluster running? "
			"start one with: atoll-cluster up, then export ATOLL_CONF=DIR/atoll.conf",
			cl->mon ? cl->mon : cl->conf ? cl->conf :
			getenv("ATOLL_CONF") ? getenv("ATOLL_CONF") : "no --conf, no $ATOLL_CONF",
			*atoll_last_error() ? atoll_last_error() : atoll_strerror(ret));
		atoll_cluster_shutdown(c);
		return CLI_EXIT_CONNECT;
	}
	cl->c = c;
	return 0;
}

int cli_open_pool(struct cli *cl, const char *pool, struct atoll_ioctx **io)
{
	int ret = cli_connect(cl);

	if (ret)
		return ret;
	ret = atoll_ioctx_create(cl->c, pool, io, 0);
	if (ret == -ENOENT) {
		cli_err("pool '%s' does not exist; create it with: atoll pool create %s",
			pool, pool);
		return CLI_EXIT_NOENT;
	}
	if (ret) {
		cli_err("cannot open pool '%s': %s", pool, atoll_strerror(ret));
		return cli_exit_code(ret);
	}
	return 0;
}

static void print_all_usage(FILE *f)
{
	fprintf(f,
		"usage: atoll [--conf FILE] [-m IP:PORT] [--format json|plain] COMMAND [ARGS]\n"
		"\n"
		"The admin command line of an atoll cluster.  It finds the cluster through\n"
		"--conf FILE, $ATOLL_CONF, ./atoll.conf or /etc/atoll/atoll.conf (mon_host),\n"
		"or -m/--mon IP:PORT.  `atoll COMMAND --help` explains one command.\n"
		"\ncommands:\n");
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const struct cli_cmd *c = tables[t]; c->words; c++)
			fprintf(f, "  %s%s%s\n", c->words, c->args[0] ? " " : "", c->args);
	fprintf(f,
		"\nglobal options:\n"
		"  --conf FILE          the configuration file\n"
		"  -m, --mon IP:PORT    the monitor's address (instead of mon_host)\n"
		"  --keyring FILE       the keyring (instead of keyring; doc/security.md)\n"
		"  --format json|plain  output format (default plain)\n"
		"  -w, --watch          the same as the command watch (the cluster log)\n"
		"  -h, --help           help;  --version  the version\n"
		"\nexit status: 0 success, 1 error, 2 bad usage, 3 no such pool, object or\n"
		"OSD, 4 the monitor cannot be reached (doc/cli.md)\n");
}

/* The command named by the longest run of leading words. */
static const struct cli_cmd *find_cmd(int argc, char **argv, int *nwords)
{
	const struct cli_cmd *best = NULL;
	int bestn = 0;

	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		for (const struct cli_cmd *c = tables[t]; c->words; c++) {
			const char *w = c->words;
			int n = 0;

			while (*w && n < argc) {
				size_t l = strcspn(w, " ");

				if (strlen(argv[n]) != l || strncmp(argv[n], w, l) != 0)
					break;
				w += l;
				n++;
				if (*w == ' ')
					w++;
			}
			if (*w == 0 && n > bestn) {
				best = c;
				bestn = n;
			}
		}
	}
	*nwords = bestn;
	return best;
}

int main(int argc, char **argv)
{
	struct cli cl = { 0 };
	char **args = calloc(argc + 1, sizeof(*args));
	const struct cli_cmd *cmd;
	int nargs = 0, help = 0, nwords, ret;
	bool dashdash = false;

	if (!args)
		return CLI_EXIT_ERROR;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash) {
			args[nargs++] = argv[i];
		} else if (strcmp(a, "--") == 0) {
			dashdash = true;
			args[nargs++] = argv[i];
		} else if (strcmp(a, "-w") == 0 || strcmp(a, "--watch") == 0) {
			/* `atoll -w` is `atoll watch`, as `ceph -w` */
			args[nargs++] = "watch";
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			help = 1;
		} else if (strcmp(a, "--version") == 0) {
			const char *v;

			atoll_version(&v);
			printf("atoll %s\n", v);
			free(args);
			return 0;
		} else if (strcmp(a, "--keyring") == 0 && i + 1 < argc) {
			cl.keyring = argv[++i];
		} else if (strncmp(a, "--keyring=", 10) == 0) {
			cl.keyring = a + 10;
		} else if (strcmp(a, "--conf") == 0 || strcmp(a, "-c") == 0 ||
			   strcmp(a, "-m") == 0 || strcmp(a, "--mon") == 0 ||
			   strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) {
			if (i + 1 >= argc) {
				cli_err("option '%s' needs a value; see: atoll --help", a);
				free(args);
				return CLI_EXIT_USAGE;
			}
			const char *v = argv[++i];

			if (a[1] == 'c' || a[2] == 'c')
				cl.conf = v;
			else if (a[1] == 'm' || a[2] == 'm')
				cl.mon = v;
			else if (strcmp(v, "json") == 0 || strcmp(v, "json-pretty") == 0)
				cl.json = true;
			else if (strcmp(v, "plain") == 0)
				cl.json = false;
			else {
				cli_err("--format '%s': use json or plain", v);
				free(args);
				return CLI_EXIT_USAGE;
			}
		} else if (strncmp(a, "--conf=", 7) == 0) {
			cl.conf = a + 7;
		} else if (strncmp(a, "--mon=", 6) == 0) {
			cl.mon = a + 6;
		} else if (strncmp(a, "--format=", 9) == 0) {
			if (strcmp(a + 9, "json") && strcmp(a + 9, "plain")) {
				cli_err("--format '%s': use json or plain", a + 9);
				free(args);
				return CLI_EXIT_USAGE;
			}
			cl.json = strcmp(a + 9, "json") == 0;
		} else {
			args[nargs++] = argv[i];
		}
	}
	if (nargs == 0) {
		print_all_usage(help ? stdout : stderr);
		free(args);
		return help ? 0 : CLI_EXIT_USAGE;
	}
	cli_call_set_conf(cl.conf, cl.mon, cl.keyring);
	cmd = find_cmd(nargs, args, &nwords);
	if (!cmd) {
		cli_err("unknown command '%s'; see: atoll --help", args[0]);
		free(args);
		return CLI_EXIT_USAGE;
	}
	if (help) {
		print_cmd_usage(stdout, cmd);
		printf("\n%s", cmd->help);
		free(args);
		return 0;
	}
	/* the handler sees only its own words; a leading "--" is dropped */
	{
		bool dropped = false;
		int n = 0;

		for (int i = nwords; i < nargs; i++) {
			if (!dropped && strcmp(args[i], "--") == 0) {
				dropped = true;
				continue;
			}
			args[n++] = args[i];
		}
		args[n] = NULL;
		ret = cmd->run(&cl, cmd, n, args);
	}
	atoll_cluster_shutdown(cl.c);
	free(args);
	return ret;
}

int cli_mon_call(struct cli *cl, struct cJSON *cmd, bool json_out, char **status, char **out,
		 size_t *outlen)
{
	char *json;
	int r;

	*status = *out = NULL;
	*outlen = 0;
	if (json_out)
		cJSON_AddStringToObject(cmd, "format", "json");
	json = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);
	if (!json) {
		cli_err("out of memory");
		return CLI_EXIT_ERROR;
	}
	r = cli_connect(cl);
	if (!r) {
		r = atoll_mon_command(cl->c, json, status, out, outlen);
		if (r < 0) {
			cli_err("%s", *status && **status ? *status : atoll_strerror(r));
			r = cli_exit_code(r);
			atoll_free(*status);
			atoll_free(*out);
			*status = *out = NULL;
			*outlen = 0;
		}
	}
	/* a command may carry a secret (auth import) */
	memset(json, 0, strlen(json));
	free(json);
	return r;
}
