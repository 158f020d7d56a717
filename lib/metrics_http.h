/*
 * metrics_http.h - serves a metrics registry at GET /metrics over HTTP
 * (libmicrohttpd), from its own thread, so that a scrape never waits on
 * or delays a daemon's event loop.
 *
 * The address comes from atoll.conf's `metrics_addr` (IP:PORT, or
 * [IPv6]:PORT) looked up for the daemon's name ([osd.3], then [osd],
 * then [global]); without it nothing listens.  Only the address given is
 * bound: a wildcard (0.0.0.0, [::]) only when written so.
 */
#ifndef ATOLL_METRICS_HTTP_H
#define ATOLL_METRICS_HTTP_H

#include <stddef.h>

struct metrics;
struct metrics_server;
struct config;
struct sockaddr_storage;

/* Parses "IP:PORT" or "[IPv6]:PORT" (numeric, port 1-65535) into ss:
 * 0 or -EINVAL.  Shared with the monitor's dashboard. */
int metrics_http_parse_addr(const char *addr, struct sockaddr_storage *ss);

/* Starts serving r on addr.  0, or a negative errno with a sentence in
 * err (-EINVAL for a malformed address, -EADDRINUSE and the like from
 * binding). */
int metrics_server_start(struct metrics *r, const char *addr, struct metrics_server **out,
			 char *err, size_t errlen);
/* Stops the thread and closes the socket; NULL is fine.  r outlives s. */
void metrics_server_stop(struct metrics_server *s);

/* metrics_server_start() on `metrics_addr` for who; *out = NULL and 0
 * when the key is absent or empty. */
int metrics_server_from_config(struct metrics *r, const struct config *c, const char *who,
			       struct metrics_server **out, char *err, size_t errlen);

/* Series every daemon exports: process memory (RSS, jemalloc's or
 * glibc's allocator statistics), start time and build version.  0 or
 * -ENOMEM. */
int metrics_add_process(struct metrics *r, const char *daemon);

struct msgr;
/* The messenger's connections by class and its receive pools' bytes and
 * frames in flight, read at each scrape (under the messenger's locks,
 * briefly, from the server's thread).  m outlives r's server. */
int metrics_add_msgr(struct metrics *r, struct msgr *m);

#endif
