/*
 * nbd_metrics.h - atoll-nbd's Prometheus metrics (nbd_metrics.c;
 * doc/metrics.md).  Off (every call a no-op) without metrics_addr in
 * [nbd] (or [global]).
 */
#ifndef ATOLL_NBD_METRICS_H
#define ATOLL_NBD_METRICS_H

struct nbd_server;
struct nbd_req;

/* Main thread, before serving: 0, or -1 after saying what is wrong. */
int nbd_metrics_start(struct nbd_server *srv, const char *conf);
/* A request is complete (any thread): its command, bytes and time. */
void nbd_metrics_done(const struct nbd_req *req);
/* Main thread, before srv goes. */
void nbd_metrics_stop(void);

#endif
