/*
 * metrics_http.c - the /metrics endpoint: libmicrohttpd in its own
 * polling thread encodes the registry at each GET (see metrics_http.h).
 *
 * Why a library: HTTP/1.1 parsing, keep-alive, timeouts and connection
 * limits are libmicrohttpd's well-tested job, not ours.  What is ours:
 * one thread, a few connections at most (a scraper or two and an
 * operator's curl), a short timeout, GET and HEAD only, and a bound
 * address that is exactly the configured one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "config.h"
#include "log.h"
#include "metrics.h"
#include "metrics_http.h"

#define METRICS_CONN_LIMIT 16
#define METRICS_TIMEOUT_S 10

/* "IP:PORT" or "[IPv6]:PORT", numeric and strict (inet_pton: no name
 * lookups in a daemon's start-up, no "1.2.3" shorthand, so what is
 * bound is what is written).  The monitor's dashboard binds the same
 * way (mon/dashboard.c). */
int metrics_http_parse_addr(const char *addr, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	const char *colon = strrchr(addr, ':'), *h = addr;
	char host[INET6_ADDRSTRLEN];
	bool v6 = false;
	size_t hlen;
	char *end;
	long port;

	if (!colon)
		return -EINVAL;
	hlen = (size_t)(colon - addr);
	if (hlen >= 2 && addr[0] == '[' && colon[-1] == ']') {
		h = addr + 1;
		hlen -= 2;
		v6 = true;
	}
	if (!hlen || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = 0;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || errno || port < 1 || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (!v6 && inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		return 0;
	}
	if (v6 && inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		return 0;
	}
	return -EINVAL;
}

struct metrics_server {
	struct MHD_Daemon *d;
	struct metrics *r;
};

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *text)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(strlen(text), (void *)text,
					       MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "text/plain; charset=utf-8");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* libmicrohttpd's request callback (its thread): a request is complete
 * at the first call for GET and HEAD, which carry no body. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct metrics_server *s = cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char *body;
	size_t len;

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics is served\n");
	if (*upload_data_size)
		return reply(conn, MHD_HTTP_BAD_REQUEST, "a GET has no body\n");
	if (strcmp(url, "/metrics")) {
		if (!strcmp(url, "/"))
			return reply(conn, MHD_HTTP_OK, "atoll metrics: GET /metrics\n");
		return reply(conn, MHD_HTTP_NOT_FOUND, "not found; metrics are at /metrics\n");
	}
	if (metrics_encode(s->r, &body, &len) < 0)
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

int metrics_server_start(struct metrics *r, const char *addr, struct metrics_server **out,
			 char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	struct metrics_server *s;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	int rc;

	*out = NULL;
	rc = metrics_http_parse_addr(addr, &ss);
	if (rc < 0) {
		snprintf(err, errlen, "metrics_addr '%s' is not IP:PORT (e.g. 127.0.0.1:9283)", addr);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->r = r;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* port 0 is refused (metrics_http_parse_addr): the port is what an operator's
	 * scraper is told, so it is given */
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_CONN_LIMIT,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_TIMEOUT_S,
				MHD_OPTION_END);
	if (!s->d) {
		/* libmicrohttpd sets SO_REUSEADDR (a restarted daemon binds
		 * at once), never SO_REUSEPORT: a port in use is an error */
		snprintf(err, errlen, "cannot serve metrics on '%s' (address in use or not local?); "
			 "change metrics_addr in atoll.conf", addr);
		free(s);
		return -EADDRINUSE;
	}
	*out = s;
	return 0;
}

void metrics_server_stop(struct metrics_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->d);
	free(s);
}

int metrics_server_from_config(struct metrics *r, const struct config *c, const char *who,
			       struct metrics_server **out, char *err, size_t errlen)
{
	const char *addr = NULL;
	int rc;

	*out = NULL;
	rc = config_get_str(c, who, "metrics_addr", NULL, &addr, err, errlen);
	if (rc < 0)
		return rc;
	if (!addr || !*addr)
		return 0;
	rc = metrics_server_start(r, addr, out, err, errlen);
	if (rc == 0)
		log_info("metrics", "serving metrics at http://%s/metrics", addr);
	return rc;
}
