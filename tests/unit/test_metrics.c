/*
 * test_metrics.c - the metrics registry (lib/metrics.c), its Prometheus
 * text encoding (escaping, HELP/TYPE lines, histogram buckets, sum and
 * count) and the HTTP endpoint (lib/metrics_http.c) on loopback.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "metrics.h"
#include "metrics_http.h"

static char *encode(struct metrics *r)
{
	char *out;
	size_t len;

	cr_assert_eq(metrics_encode(r, &out, &len), 0);
	cr_assert_eq(strlen(out), len);
	return out;
}

Test(metrics, counter_help_type_and_value)
{
	struct metrics *r = metrics_new();
	struct metric *m = metrics_counter(r, "atoll_x_total", "Things done", "op", "read", NULL);
	char *t;

	metric_inc(m);
	metric_add(m, 41);
	t = encode(r);
	cr_assert_str_eq(t, "# HELP atoll_x_total Things done\n"
			    "# TYPE atoll_x_total counter\n"
			    "atoll_x_total{op=\"read\"} 42\n");
	free(t);
	metrics_free(r);
}

Test(metrics, same_labels_same_series)
{
	struct metrics *r = metrics_new();
	struct metric *a = metrics_counter(r, "atoll_y_total", "h", "op", "w", NULL);
	struct metric *b = metrics_counter(r, "atoll_y_total", "h", "op", "w", NULL);
	struct metric *c = metrics_counter(r, "atoll_y_total", "h", "op", "r", NULL);

	cr_assert_eq(a, b);
	cr_assert_neq(a, c);
	metrics_free(r);
}

Test(metrics, type_or_label_mismatch_refused)
{
	struct metrics *r = metrics_new();

	cr_assert_not_null(metrics_counter(r, "atoll_z_total", "h", "op", "w", NULL));
	cr_assert_null(metrics_gauge(r, "atoll_z_total", "h", "op", "w", NULL));
	cr_assert_null(metrics_counter(r, "atoll_z_total", "h", "kind", "w", NULL));
	cr_assert_null(metrics_counter(r, "atoll_z_total", "h", NULL));
	metrics_free(r);
}

Test(metrics, bad_names_refused)
{
	struct metrics *r = metrics_new();

	cr_assert_null(metrics_gauge(r, "9lives", "h", NULL));
	cr_assert_null(metrics_gauge(r, "atoll-dash", "h", NULL));
	cr_assert_null(metrics_gauge(r, "atoll_ok", "h", "__reserved", "v", NULL));
	cr_assert_null(metrics_gauge(r, "atoll_ok", "h", "bad-label", "v", NULL));
	cr_assert_not_null(metrics_gauge(r, "atoll_ok", "h", "good_label", "v", NULL));
	metrics_free(r);
}

Test(metrics, label_values_and_help_escaped)
{
	struct metrics *r = metrics_new();
	char *t;

	metric_set(metrics_gauge(r, "atoll_g", "a \\ help\nline \"quoted\"",
				 "path", "C:\\dir \"x\"\nnext", NULL), -3);
	t = encode(r);
	cr_assert_str_eq(t, "# HELP atoll_g a \\\\ help\\nline \"quoted\"\n"
			    "# TYPE atoll_g gauge\n"
			    "atoll_g{path=\"C:\\\\dir \\\"x\\\"\\nnext\"} -3\n");
	free(t);
	metrics_free(r);
}

Test(metrics, histogram_buckets_sum_count)
{
	static const uint64_t bounds[] = { 1000, 5000 };
	struct metrics *r = metrics_new();
	struct metric *h = metrics_histogram(r, "atoll_lat_seconds", "Latency", bounds, 2, 1e-6,
					     "op", "read", NULL);
	char *t;

	metric_observe(h, 500);		/* <= 1000 */
	metric_observe(h, 1000);	/* <= 1000: the bound is inclusive */
	metric_observe(h, 3000);	/* <= 5000 */
	metric_observe(h, 9000);	/* +Inf */
	t = encode(r);
	cr_assert_str_eq(t, "# HELP atoll_lat_seconds Latency\n"
			    "# TYPE atoll_lat_seconds histogram\n"
			    "atoll_lat_seconds_bucket{op=\"read\",le=\"0.001\"} 2\n"
			    "atoll_lat_seconds_bucket{op=\"read\",le=\"0.005\"} 3\n"
			    "atoll_lat_seconds_bucket{op=\"read\",le=\"+Inf\"} 4\n"
			    "atoll_lat_seconds_sum{op=\"read\"} 0.0135\n"
			    "atoll_lat_seconds_count{op=\"read\"} 4\n");
	free(t);
	metrics_free(r);
}

Test(metrics, histogram_without_labels_and_bad_bounds)
{
	static const uint64_t bad[] = { 5, 5 };
	struct metrics *r = metrics_new();
	char *t;

	cr_assert_null(metrics_histogram(r, "atoll_h2", "h", bad, 2, 1, NULL));
	metric_observe(metrics_histogram(r, "atoll_h_bytes", "h", bad, 1, 1, NULL), 7);
	t = encode(r);
	cr_assert(strstr(t, "atoll_h_bytes_bucket{le=\"5\"} 0\n"));
	cr_assert(strstr(t, "atoll_h_bytes_bucket{le=\"+Inf\"} 1\n"));
	cr_assert(strstr(t, "atoll_h_bytes_sum 7\n"));
	cr_assert(strstr(t, "atoll_h_bytes_count 1\n"));
	free(t);
	metrics_free(r);
}

Test(metrics, hidden_family_and_null_metric)
{
	struct metrics *r = metrics_new();
	char *t;

	metric_set(metrics_gauge(r, "atoll_a", "a", NULL), 1);
	metric_set(metrics_gauge(r, "atoll_b", "b", NULL), 2);
	metrics_show(r, "atoll_a", false);
	t = encode(r);
	cr_assert_null(strstr(t, "atoll_a"));
	cr_assert(strstr(t, "atoll_b 2\n"));
	free(t);
	metric_inc(NULL);		/* no metrics: nothing happens */
	metric_observe(NULL, 1);
	metrics_free(r);
}

static void hook(void *arg)
{
	metric_set(arg, 99);
}

Test(metrics, collect_hook_runs_before_encoding)
{
	struct metrics *r = metrics_new();
	struct metric *g = metrics_gauge(r, "atoll_hooked", "h", NULL);
	char *t;

	cr_assert_eq(metrics_on_collect(r, hook, g, NULL), 0);
	t = encode(r);
	cr_assert(strstr(t, "atoll_hooked 99\n"));
	free(t);
	metrics_free(r);
}

static int released;

static void nop(void *arg)
{
	(void)arg;
}

static void release(void *arg)
{
	released++;
	free(arg);
}

Test(metrics, hook_argument_released_with_the_registry)
{
	struct metrics *r = metrics_new();

	released = 0;
	cr_assert_eq(metrics_on_collect(r, nop, malloc(8), release), 0);
	cr_assert_eq(metrics_add_process(r, "test"), 0);
	metrics_free(r);
	cr_assert_eq(released, 1);
}

static void *adder(void *arg)
{
	for (int i = 0; i < 100000; i++)
		metric_inc(arg);
	return NULL;
}

Test(metrics, concurrent_increments_all_counted)
{
	struct metrics *r = metrics_new();
	struct metric *c = metrics_counter(r, "atoll_c_total", "h", NULL);
	pthread_t t[4];

	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, adder, c);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(metric_value(c), 400000);
	metrics_free(r);
}

static int free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

/* One HTTP/1.0 request; the whole answer in buf. */
static void http_get(int port, const char *req, char *buf, size_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;
	ssize_t n;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = 0;
	close(fd);
}

Test(metrics_http, serves_metrics_and_refuses_the_rest)
{
	struct metrics *r = metrics_new();
	struct metrics_server *s;
	char addr[64], err[256], buf[8192];
	int port = free_port();

	metric_set(metrics_gauge(r, "atoll_served", "h", NULL), 5);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	cr_assert_eq(metrics_server_start(r, addr, &s, err, sizeof(err)), 0, "%s", err);
	http_get(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	cr_assert(strstr(buf, "200 OK"), "%s", buf);
	cr_assert(strstr(buf, "text/plain; version=0.0.4"), "%s", buf);
	cr_assert(strstr(buf, "\r\n\r\n# HELP atoll_served h\n"), "%s", buf);
	http_get(port, "GET /nope HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	cr_assert(strstr(buf, "404"), "%s", buf);
	http_get(port, "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n", buf, sizeof(buf));
	cr_assert(strstr(buf, "405"), "%s", buf);
	metrics_server_stop(s);
	metrics_free(r);
}

Test(metrics_http, config_off_without_address_and_bad_address_refused)
{
	struct metrics *r = metrics_new();
	struct metrics_server *s = (void *)1;
	struct config *c;
	char err[256];

	cr_assert_eq(config_load_string(&c, "[osd.1]\nmetrics_addr = nonsense\n", err,
					sizeof(err)), 0);
	cr_assert_eq(metrics_server_from_config(r, c, "osd.2", &s, err, sizeof(err)), 0);
	cr_assert_null(s);
	cr_assert_eq(metrics_server_from_config(r, c, "osd.1", &s, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "metrics_addr 'nonsense'"), "%s", err);
	cr_assert_null(s);
	config_free(c);
	metrics_free(r);
}

Test(metrics_http, second_server_on_a_port_refused)
{
	struct metrics *r = metrics_new();
	struct metrics_server *s1, *s2;
	char addr[64], err[256];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", free_port());
	cr_assert_eq(metrics_server_start(r, addr, &s1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(metrics_server_start(r, addr, &s2, err, sizeof(err)), -EADDRINUSE);
	cr_assert(strstr(err, "change metrics_addr"), "%s", err);
	cr_assert_null(s2);
	metrics_server_stop(s1);
	metrics_free(r);
}

Test(metrics_http, addresses_numeric_with_a_port)
{
	static const char *const bad[] = {
		"127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:80x",
		"localhost:9283", ":9283", "[::1]", "[]:9283", "1.2.3:9283",
	};
	struct metrics *r = metrics_new();
	struct metrics_server *s;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(metrics_server_start(r, bad[i], &s, err, sizeof(err)), -EINVAL,
			     "'%s' accepted", bad[i]);
		cr_assert_null(s);
	}
	metrics_free(r);
}

/* A daemon restarted at once binds its port again, connections of the
 * last scrape in TIME_WAIT or not (SO_REUSEADDR). */
Test(metrics_http, restart_binds_the_port_again_after_a_scrape)
{
	struct metrics *r = metrics_new();
	struct metrics_server *s;
	char addr[64], err[256], buf[4096];
	int port = free_port();

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	cr_assert_eq(metrics_server_start(r, addr, &s, err, sizeof(err)), 0, "%s", err);
	http_get(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	metrics_server_stop(s);
	cr_assert_eq(metrics_server_start(r, addr, &s, err, sizeof(err)), 0, "%s", err);
	http_get(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
	cr_assert(strstr(buf, "200 OK"), "%s", buf);
	metrics_server_stop(s);
	metrics_free(r);
}

/* Garbage, a 20 KB URL and a client that connects and says nothing
 * get an error or a close; the server keeps serving. */
Test(metrics_http, bad_requests_then_still_serving)
{
	struct metrics *r = metrics_new();
	struct metrics_server *s;
	char addr[64], err[256], buf[8192];
	static char longreq[20000];
	int port = free_port();
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int idle;

	signal(SIGPIPE, SIG_IGN);	/* the server may close first */
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	cr_assert_eq(metrics_server_start(r, addr, &s, err, sizeof(err)), 0, "%s", err);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	idle = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_eq(connect(idle, (struct sockaddr *)&sin, sizeof(sin)), 0);
	http_get(port, "\x01\x02garbage\r\n\r\n", buf, sizeof(buf));
	cr_assert(!strstr(buf, "200 OK"), "%s", buf);
	memset(longreq, 'a', sizeof(longreq) - 1);
	memcpy(longreq, "GET /", 5);
	memcpy(longreq + sizeof(longreq) - 30, " HTTP/1.0\r\n\r\n", 13);
	longreq[sizeof(longreq) - 17] = 0;
	http_get(port, longreq, buf, sizeof(buf));
	cr_assert(!strstr(buf, "200 OK"), "%.200s", buf);
	http_get(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", buf,
		 sizeof(buf));
	cr_assert(strstr(buf, "200 OK"), "%s", buf);
	close(idle);
	metrics_server_stop(s);
	metrics_free(r);
}
