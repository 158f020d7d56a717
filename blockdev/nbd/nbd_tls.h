/*
 * nbd_tls.h - NBD over TLS (NBD_OPT_STARTTLS) for atoll-nbd, with GnuTLS:
 * the server's credentials (X.509 certificates and/or pre-shared keys) and
 * one TLS session per connection.
 *
 * Threads.  The credentials are made once at start and only read after
 * (GnuTLS allows concurrent readers).  A session is used by one thread
 * while negotiating; in transmission the connection's reader thread only
 * receives and its writer thread only sends, which GnuTLS allows on one
 * session.  No renegotiation is ever started, and a client's attempt is
 * an error (it would need both directions from one thread).
 */
#ifndef ATOLL_NBD_TLS_H
#define ATOLL_NBD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum nbd_tls_mode {
	NBD_TLS_OFF,		/* STARTTLS is refused */
	NBD_TLS_ON,		/* offered; plain clients are served too */
	NBD_TLS_REQUIRE,	/* nothing but STARTTLS and ABORT before TLS */
};

/* Parses "off", "on", "require"; -EINVAL otherwise. */
int nbd_tls_mode_parse(const char *s, enum nbd_tls_mode *out);
const char *nbd_tls_mode_name(enum nbd_tls_mode m);

struct nbd_tls_config {
	const char *cert_dir;	/* ca-cert.pem, server-cert.pem, server-key.pem */
	const char *psk_file;	/* lines "username:hexkey" */
	bool verify_peer;	/* X.509: clients must show a certificate from the CA */
	const char *priority;	/* GnuTLS priority string, NULL: the default */
};

/* The credentials every session shares. */
struct nbd_tls_server;

/* Loads the credentials (at least one of cert_dir, psk_file).  0, or a
 * negative errno with one sentence in err naming the file and the fix. */
int nbd_tls_server_create(const struct nbd_tls_config *cfg, struct nbd_tls_server **out,
			  char *err, size_t errlen);
void nbd_tls_server_free(struct nbd_tls_server *srv);
/* "X.509", "PSK" or "X.509 and PSK", for the start-up log. */
const char *nbd_tls_server_kinds(const struct nbd_tls_server *srv);

/* One connection's session. */
struct nbd_tls;

/* Runs the TLS handshake on fd (after the STARTTLS reply went out).  On
 * success *out is the session and identity holds the client's name (PSK
 * user name, or the common name of its verified certificate; "" when it
 * showed none).  A negative errno otherwise, with the reason in err. */
int nbd_tls_handshake(struct nbd_tls_server *srv, int fd, struct nbd_tls **out,
		      char *identity, size_t idlen, char *err, size_t errlen);
/* The session's cipher ("AES-256-GCM"), for the log. */
const char *nbd_tls_cipher(const struct nbd_tls *t);
/* Receives up to len bytes: > 0, 0 at the end of the stream, -ETIMEDOUT
 * when the socket's receive timeout passed, another negative errno. */
ssize_t nbd_tls_recv(struct nbd_tls *t, void *buf, size_t len);
/* Sends all of buf (in records).  While corked, the bytes only gather in
 * memory until nbd_tls_uncork() sends them together. */
int nbd_tls_send(struct nbd_tls *t, const void *buf, size_t len);
void nbd_tls_cork(struct nbd_tls *t);
int nbd_tls_uncork(struct nbd_tls *t);
/* Says goodbye (close_notify, best effort) and frees the session; NULL
 * is fine. */
void nbd_tls_close(struct nbd_tls *t);

#endif
