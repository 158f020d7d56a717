/*
 * dashboard.c - the dashboard's HTTP side (dashboard.h,
 * doc/dashboard.md): libmicrohttpd in its own polling thread serves the
 * page's three files and the JSON the monitor thread published, and
 * sends any request made to a monitor that does not lead to the one that
 * does.
 *
 * Read only by construction: GET and HEAD only, a fixed list of files
 * (no path is ever built from a URL), no cookie, no form, no key typed
 * anywhere.  The address is loopback unless HTTPS is configured
 * (dashboard_cert, dashboard_key), so the page never crosses a network
 * in the clear.  The request thread takes only dash->mu, briefly: a slow
 * browser cannot delay the monitor thread or the raft thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <microhttpd.h>

#include "config.h"
#include "log.h"
#include "metrics_http.h"
#include "mon.h"
#include "mono.h"
#include "dashboard.h"
#include "dashboard_int.h"

#define DASH_CONN_LIMIT	32
#define DASH_CONN_PER_IP	8	/* one browser opens a few at most */
#define DASH_TIMEOUT_S	15
#define DASH_FILE_MAX	(1u << 20)

/* set by meson: where the files are installed, and the source tree's
 * copy (a monitor run from the build tree, the tests) */
#ifndef ATOLL_DASHBOARD_DIR
#define ATOLL_DASHBOARD_DIR "/usr/share/atoll/dashboard"
#endif
#ifndef ATOLL_DASHBOARD_SRC_DIR
#define ATOLL_DASHBOARD_SRC_DIR ""
#endif

/* The files of the page: the only paths ever opened. */
static const struct {
	const char *url, *file, *type;
} files[] = {
	{ "/", "index.html", "text/html; charset=utf-8" },
	{ "/index.html", "index.html", "text/html; charset=utf-8" },
	{ "/dashboard.css", "dashboard.css", "text/css; charset=utf-8" },
	{ "/dashboard.js", "dashboard.js", "text/javascript; charset=utf-8" },
};

/* What a page served here may do: its own scripts and styles only; it
 * may ask other monitors where the leader is (connect-src). */
#define CSP "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
	"connect-src *; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

bool dash_watched(struct dash *d)
{
	bool w;

	pthread_mutex_lock(&d->mu);
	w = d->last_poll_ms && mono_now_ms() - d->last_poll_ms < DASH_IDLE_MS;
	pthread_mutex_unlock(&d->mu);
	return w;
}

static void common_headers(struct MHD_Response *r, const char *type)
{
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "Content-Security-Policy", CSP);
}

/* Queues body (taken: freed by libmicrohttpd, or here on failure). */
static enum MHD_Result send_owned(struct MHD_Connection *conn, unsigned status,
				  const char *type, char *body, size_t len,
				  const char *hname, const char *hval)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	common_headers(r, type);
	if (hname)
		MHD_add_response_header(r, hname, hval);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned status,
				 const char *type, const char *text)
{
	char *b = strdup(text);

	if (!b)
		return MHD_NO;
	return send_owned(conn, status, type, b, strlen(b), NULL, NULL);
}

/* One of the page's files, read at each request (an operator may edit
 * them in place); a missing one is a 500 that says where it looked. */
static enum MHD_Result send_file(struct dash *d, struct MHD_Connection *conn,
				 const char *name, const char *type)
{
	char path[PATH_MAX + 32], msg[PATH_MAX + 128];
	struct stat sb;
	ssize_t n;
	size_t got = 0;
	char *buf;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", d->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    (size_t)sb.st_size > DASH_FILE_MAX) {
		if (fd >= 0)
			close(fd);
		snprintf(msg, sizeof(msg), "the dashboard file '%s' cannot be read; check "
			 "dashboard_dir in atoll.conf\n", path);
		return send_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 "text/plain; charset=utf-8", msg);
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (!buf) {
		close(fd);
		return MHD_NO;
	}
	while (got < (size_t)sb.st_size) {
		n = read(fd, buf + got, (size_t)sb.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return send_owned(conn, MHD_HTTP_OK, type, buf, got, NULL, NULL);
}

/* {"status": SNAPSHOT, "images": LIST|null, "fs": MDS|null[, "history":
 * [...]]} from
 * what the other threads published (under d->mu); history holds the
 * samples taken after since (wall clock ms) when history is true. */
static char *api_status(struct dash *d, bool history, uint64_t since, size_t *len)
{
	size_t need = 64;
	char *b, *p;

	pthread_mutex_lock(&d->mu);
	if (!d->status) {
		pthread_mutex_unlock(&d->mu);
		return NULL;
	}
	need += strlen(d->status) + (d->images ? strlen(d->images) : 4) +
		(d->fs ? strlen(d->fs) : 4);
	for (uint32_t i = 0; history && i < d->hist_n; i++)
		if (d->hist_t[(d->hist_head + i) % DASH_HIST] > since)
			need += strlen(d->hist[(d->hist_head + i) % DASH_HIST]) + 1;
	b = malloc(need);
	if (b) {
		p = b + sprintf(b, "{\"status\":%s,\"images\":%s,\"fs\":%s", d->status,
				d->images ? d->images : "null", d->fs ? d->fs : "null");
		if (history) {
			bool first = true;

			p += sprintf(p, ",\"history\":[");
			for (uint32_t i = 0; i < d->hist_n; i++) {
				uint32_t k = (d->hist_head + i) % DASH_HIST;

				if (d->hist_t[k] <= since)
					continue;
				p += sprintf(p, "%s%s", first ? "" : ",", d->hist[k]);
				first = false;
			}
			p += sprintf(p, "]");
		}
		p += sprintf(p, "}");
		*len = (size_t)(p - b);
	}
	pthread_mutex_unlock(&d->mu);
	return b;
}

/* /api/leader: where the leader's dashboard is.  Any monitor answers
 * it, to any page (CORS): a page whose monitor stopped leading or died
 * asks the others where to go.  It holds a URL and nothing else. */
static enum MHD_Result api_leader(struct dash *d, struct MHD_Connection *conn)
{
	char *b = malloc(3 * DASH_URL_MAX + 64);
	struct MHD_Response *r;
	enum MHD_Result ret;
	int n;

	if (!b)
		return MHD_NO;
	pthread_mutex_lock(&d->mu);
	n = snprintf(b, 3 * DASH_URL_MAX + 64, "{\"leader\":%s,\"self_url\":\"%s\","
		     "\"leader_url\":\"%s\"}\n", d->leader ? "true" : "false", d->self_url,
		     d->leader_url);
	pthread_mutex_unlock(&d->mu);
	r = MHD_create_response_from_buffer((size_t)n, b, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(b);
		return MHD_NO;
	}
	common_headers(r, "application/json");
	MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* A monitor that does not lead: 307 to the leader's same path, or 503
 * while none is known (the page says so and retries). */
static enum MHD_Result not_leader(struct dash *d, struct MHD_Connection *conn,
				  const char *url)
{
	char loc[DASH_URL_MAX + 64], name[64], *body;
	size_t blen;

	pthread_mutex_lock(&d->mu);
	snprintf(loc, sizeof(loc), "%s", d->leader_url);
	snprintf(name, sizeof(name), "%s", d->leader_name);
	pthread_mutex_unlock(&d->mu);
	if (!loc[0] && name[0]) {
		/* a monitor added after this one started: its address is
		 * not in the configuration this one read */
		blen = sizeof(name) + 256;
		body = malloc(blen);
		if (!body)
			return MHD_NO;
		blen = (size_t)snprintf(body, blen, "mon.%s leads, but this monitor's atoll.conf "
					"gives no dashboard_addr for it; open its dashboard, or add "
					"[mon.%s] dashboard_addr here and restart this monitor\n",
					name, name);
		return send_owned(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
				  body, blen, NULL, NULL);
	}
	if (!loc[0]) {
		return send_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/html; charset=utf-8",
				 "<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
				 "<meta http-equiv=\"refresh\" content=\"2\">"
				 "<title>atoll: no leader</title></head><body><p>No monitor "
				 "leads at the moment (an election is under way, or the "
				 "quorum is lost: see atoll quorum status). This page "
				 "retries every 2 s.</p></body></html>\n");
	}
	if (strlen(loc) + strlen(url) < sizeof(loc))
		strcat(loc, url);
	blen = strlen(loc) + 64;
	body = malloc(blen);
	if (!body)
		return MHD_NO;
	blen = (size_t)snprintf(body, blen, "the leader's dashboard is at %s\n", loc);
	return send_owned(conn, MHD_HTTP_TEMPORARY_REDIRECT, "text/plain; charset=utf-8", body,
			  blen, "Location", loc);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct dash *d = cls;
	const char *h;
	bool leader;
	char *body;
	size_t len = 0;

	(void)version;
	(void)upload_data;
	(void)con_cls;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		body = strdup("the dashboard is read only: GET and HEAD only\n");
		if (!body)
			return MHD_NO;
		return send_owned(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
				  body, strlen(body), "Allow", "GET, HEAD");
	}
	if (*upload_data_size)
		return send_text(conn, MHD_HTTP_BAD_REQUEST, "text/plain; charset=utf-8",
				 "a GET has no body\n");
	if (!strcmp(url, "/api/leader"))
		return api_leader(d, conn);
	pthread_mutex_lock(&d->mu);
	leader = d->leader;
	if (!strncmp(url, "/api/", 5))
		d->last_poll_ms = mono_now_ms();
	pthread_mutex_unlock(&d->mu);
	if (!leader)
		return not_leader(d, conn, url);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (!strcmp(url, files[i].url)) {
			/* a page opened counts as watching: the next tick
			 * builds a fresh snapshot */
			pthread_mutex_lock(&d->mu);
			d->last_poll_ms = mono_now_ms();
			pthread_mutex_unlock(&d->mu);
			return send_file(d, conn, files[i].file, files[i].type);
		}
	if (!strcmp(url, "/api/status")) {
		/* ?since=MS: the samples after MS (0: all of them) */
		h = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "since");
		body = api_status(d, h != NULL, h ? strtoull(h, NULL, 10) : 0, &len);
		if (!body)
			return send_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "application/json",
					 "{\"error\":\"the monitor has just started to lead; "
					 "the first snapshot follows within a second\"}\n");
		return send_owned(conn, MHD_HTTP_OK, "application/json", body, len, NULL, NULL);
	}
	return send_text(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8",
			 "not found; the dashboard is at /, its data at /api/status\n");
}

/* ---- start, stop -------------------------------------------------------- */

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return false;
}

static int read_pem(const char *path, const char *key, char **out, char *err, size_t errlen)
{
	struct stat sb;
	size_t got;
	FILE *f;

	*out = NULL;
	f = fopen(path, "re");
	if (!f || fstat(fileno(f), &sb) < 0 || sb.st_size <= 0 || sb.st_size > 1 << 20) {
		snprintf(err, errlen, "%s '%s' cannot be read (%s); it must be a PEM file "
			 "readable by the monitor's user", key, path,
			 f ? "empty or over 1 MiB" : strerror(errno));
		if (f)
			fclose(f);
		return -EINVAL;
	}
	*out = calloc(1, (size_t)sb.st_size + 1);
	if (!*out) {
		fclose(f);
		return -ENOMEM;
	}
	got = fread(*out, 1, (size_t)sb.st_size, f);
	fclose(f);
	(*out)[got] = 0;
	return 0;
}

static bool has_index(const char *dir)
{
	char p[PATH_MAX + 16];

	snprintf(p, sizeof(p), "%s/index.html", dir);
	return access(p, R_OK) == 0;
}

/* The dashboard's URL of monitor name (member address maddr): its
 * dashboard_addr, with a wildcard host replaced by the member's IP. */
static void url_of(struct mon *mon, const char *name, const char *maddr, bool https,
		   char *out, size_t len)
{
	char who[80], host[80];
	const char *a, *colon, *mcolon, *at;
	size_t hl;

	out[0] = 0;
	snprintf(who, sizeof(who), "mon.%s", name);
	a = config_get(mon->cfg, who, "dashboard_addr", NULL);
	if (!a || !*a || !(colon = strrchr(a, ':')))
		return;
	hl = (size_t)(colon - a);
	if ((hl == 7 && !strncmp(a, "0.0.0.0", 7)) || (hl == 4 && !strncmp(a, "[::]", 4))) {
		/* raft member addresses may read "NAME@IP:PORT" */
		at = strchr(maddr, '@');
		maddr = at ? at + 1 : maddr;
		mcolon = strrchr(maddr, ':');
		if (!mcolon || (size_t)(mcolon - maddr) >= sizeof(host))
			return;
		memcpy(host, maddr, (size_t)(mcolon - maddr));
		host[mcolon - maddr] = 0;
		snprintf(out, len, "%s://%s%s", https ? "https" : "http", host, colon);
		return;
	}
	snprintf(out, len, "%s://%s", https ? "https" : "http", a);
}

void dash_url_of(struct mon *mon, const char *name, const char *maddr, char *out, size_t len)
{
	url_of(mon, name, maddr, mon->dashboard && mon->dashboard->https, out, len);
}

int mon_dashboard_start(struct mon *mon, const char *conf_path, char *err, size_t errlen)
{
	const char *addr = NULL, *dir = NULL, *cert = NULL, *key = NULL, *name = NULL;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	struct sockaddr_storage ss;
	struct dash *d;
	char who[64];
	int rc;

	mon->dashboard = NULL;
	snprintf(who, sizeof(who), "mon.%s", mon->self.name);
	rc = config_get_str(mon->cfg, who, "dashboard_addr", NULL, &addr, err, errlen);
	if (rc < 0 || !addr || !*addr)
		return rc;
	if (metrics_http_parse_addr(addr, &ss) < 0) {
		snprintf(err, errlen, "dashboard_addr '%s' is not IP:PORT (e.g. 127.0.0.1:8443)",
			 addr);
		return -EINVAL;
	}
	rc = config_get_str(mon->cfg, who, "dashboard_cert", "", &cert, err, errlen);
	if (rc == 0)
		rc = config_get_str(mon->cfg, who, "dashboard_key", "", &key, err, errlen);
	if (rc == 0)
		rc = config_get_str(mon->cfg, who, "dashboard_dir", "", &dir, err, errlen);
	if (rc == 0)
		rc = config_get_str(mon->cfg, who, "dashboard_auth_name", "client.dashboard",
				    &name, err, errlen);
	if (rc < 0)
		return rc;
	if (!*cert != !*key) {
		snprintf(err, errlen, "HTTPS for the dashboard needs both dashboard_cert and "
			 "dashboard_key (PEM files); only one is set");
		return -EINVAL;
	}
	if (!*cert && !is_loopback(&ss)) {
		snprintf(err, errlen, "dashboard_addr '%s' is not a loopback address: beyond "
			 "this host the dashboard is served over HTTPS only; set dashboard_cert "
			 "and dashboard_key (PEM files), or bind 127.0.0.1 and use an SSH "
			 "tunnel (doc/dashboard.md)", addr);
		return -EINVAL;
	}
	if (strlen(name) >= 64) {
		snprintf(err, errlen, "dashboard_auth_name '%s' is too long", name);
		return -EINVAL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->mon = mon;
	pthread_mutex_init(&d->mu, NULL);
	pthread_mutex_init(&d->wmu, NULL);
	pthread_cond_init(&d->wcond, NULL);
	snprintf(d->conf_path, sizeof(d->conf_path), "%s", conf_path ? conf_path : "");
	snprintf(d->auth_name, sizeof(d->auth_name), "%s", name);
	rc = config_get_duration_ms(mon->cfg, who, "dashboard_op_timeout", 5000,
				    &d->op_timeout_ms, err, errlen);
	if (rc == 0)
		rc = config_get_duration_ms(mon->cfg, who, "dashboard_images_interval", 10000,
					    &d->images_every_ms, err, errlen);
	if (rc < 0)
		goto out_free;
	if (*dir) {
		if (!has_index(dir)) {
			snprintf(err, errlen, "dashboard_dir '%s' holds no index.html", dir);
			rc = -ENOENT;
			goto out_free;
		}
		snprintf(d->dir, sizeof(d->dir), "%s", dir);
	} else if (has_index(ATOLL_DASHBOARD_DIR) || !*ATOLL_DASHBOARD_SRC_DIR ||
		   !has_index(ATOLL_DASHBOARD_SRC_DIR)) {
		snprintf(d->dir, sizeof(d->dir), "%s", ATOLL_DASHBOARD_DIR);
	} else {
		snprintf(d->dir, sizeof(d->dir), "%s", ATOLL_DASHBOARD_SRC_DIR);
	}
	if (!has_index(d->dir))
		log_warn("mon", "the dashboard's files are not in '%s'; set dashboard_dir",
			 d->dir);
	if (*cert) {
		d->https = true;
		rc = read_pem(cert, "dashboard_cert", &d->cert, err, errlen);
		if (rc == 0)
			rc = read_pem(key, "dashboard_key", &d->key, err, errlen);
		if (rc < 0)
			goto out_free;
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			snprintf(err, errlen, "this libmicrohttpd has no TLS support; the dashboard "
				 "cannot serve HTTPS");
			rc = -EOPNOTSUPP;
			goto out_free;
		}
		flags |= MHD_USE_TLS;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	url_of(mon, mon->self.name, mon->addr, d->https, d->self_url, sizeof(d->self_url));
	{
		/* the certificate and key when HTTPS is on; else the list is empty */
		struct MHD_OptionItem tls[] = {
			{ MHD_OPTION_HTTPS_MEM_CERT, 0, d->cert },
			{ MHD_OPTION_HTTPS_MEM_KEY, 0, d->key },
			{ MHD_OPTION_END, 0, NULL },
		};

		if (!*cert)
			tls[0].option = MHD_OPTION_END;
		d->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, d,
					MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
					MHD_OPTION_CONNECTION_LIMIT, (unsigned int)DASH_CONN_LIMIT,
					MHD_OPTION_PER_IP_CONNECTION_LIMIT,
					(unsigned int)DASH_CONN_PER_IP,
					MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)DASH_TIMEOUT_S,
					MHD_OPTION_ARRAY, tls,
					MHD_OPTION_END);
	}
	if (!d->d) {
		snprintf(err, errlen, "cannot serve the dashboard on '%s' (address in use, not "
			 "local, or a bad certificate/key?); change dashboard_addr in atoll.conf",
			 addr);
		rc = -EADDRINUSE;
		goto out_free;
	}
	rc = dash_worker_start(d, err, errlen);
	if (rc < 0)
		goto out_stop;
	mon->dashboard = d;
	log_info("mon", "serving the dashboard at %s/ (files from %s)", d->self_url, d->dir);
	return 0;

out_stop:
	MHD_stop_daemon(d->d);
out_free:
	free(d->cert);
	free(d->key);
	pthread_cond_destroy(&d->wcond);
	pthread_mutex_destroy(&d->wmu);
	pthread_mutex_destroy(&d->mu);
	free(d);
	return rc;
}

/* Drops the snapshot and the history (d->mu held): a monitor that
 * stopped leading must not show a view that is no longer current. */
static void forget(struct dash *d)
{
	free(d->status);
	d->status = NULL;
	for (uint32_t i = 0; i < d->hist_n; i++) {
		free(d->hist[(d->hist_head + i) % DASH_HIST]);
		d->hist[(d->hist_head + i) % DASH_HIST] = NULL;
	}
	d->hist_n = d->hist_head = 0;
}

void mon_dashboard_stop(struct mon *mon)
{
	struct dash *d = mon->dashboard;

	if (!d)
		return;
	MHD_stop_daemon(d->d);
	dash_worker_stop(d);
	forget(d);
	free(d->images);
	free(d->fs);
	free(d->cert);
	free(d->key);
	pthread_cond_destroy(&d->wcond);
	pthread_mutex_destroy(&d->wmu);
	pthread_mutex_destroy(&d->mu);
	free(d);
	mon->dashboard = NULL;
}

void mon_dashboard_tick(struct mon *mon)
{
	struct dash *d = mon->dashboard;
	char url[DASH_URL_MAX], lname[64];
	char *snap = NULL, *sample = NULL;
	uint64_t sample_t = 0;
	uint64_t now = mono_now_ms();
	bool leader, want;

	if (!d || now < d->next_ms)
		return;
	d->next_ms = now + DASH_TICK_MS;
	leader = mon->serving && mon->qv.ready;
	url[0] = 0;
	lname[0] = 0;
	if (leader) {
		snprintf(url, sizeof(url), "%s", d->self_url);
	} else {
		for (uint32_t i = 0; i < mon->qv.nmembers; i++)
			if (mon->qv.leader_id && mon->qv.members[i].id == mon->qv.leader_id &&
			    mon->qv.leader_id != mon->self.id) {
				url_of(mon, mon->qv.members[i].name, mon->qv.members[i].addr,
				       d->https, url, sizeof(url));
				snprintf(lname, sizeof(lname), "%s", mon->qv.members[i].name);
			}
	}
	pthread_mutex_lock(&d->mu);
	want = leader && (!d->status || (d->last_poll_ms &&
					 now - d->last_poll_ms < DASH_IDLE_MS));
	pthread_mutex_unlock(&d->mu);
	/* built outside d->mu: the request thread never waits for it */
	if (want)
		snap = dash_snapshot(mon);
	if (leader && now >= d->next_sample_ms) {
		d->next_sample_ms = now + DASH_SAMPLE_MS;
		sample = dash_sample(mon, &sample_t);
	}
	pthread_mutex_lock(&d->mu);
	if (!leader && d->leader)
		forget(d);
	d->leader = leader;
	snprintf(d->leader_url, sizeof(d->leader_url), "%s", url);
	snprintf(d->leader_name, sizeof(d->leader_name), "%s", lname);
	if (snap) {
		free(d->status);
		d->status = snap;
	}
	if (sample) {
		uint32_t k = (d->hist_head + d->hist_n) % DASH_HIST;

		if (d->hist_n == DASH_HIST) {
			free(d->hist[d->hist_head]);
			d->hist_head = (d->hist_head + 1) % DASH_HIST;
		} else {
			d->hist_n++;
		}
		d->hist[k] = sample;
		d->hist_t[k] = sample_t;
	}
	pthread_mutex_unlock(&d->mu);
}
