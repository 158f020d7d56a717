/*
 * nbd_tls.c - atoll-nbd's TLS: GnuTLS credentials shared by the server and
 * one session per connection that asked for NBD_OPT_STARTTLS.
 *
 * The files are the ones nbdkit and qemu-nbd use, so one set of keys
 * serves all three: a certificate folder holding ca-cert.pem,
 * server-cert.pem, server-key.pem (and ca-crl.pem if any), and a PSK file
 * of "username:hexkey" lines (psktool's format).  GnuTLS reads the PSK
 * file at each handshake, so a key added or removed there applies to the
 * next connection without a restart; the file is checked once at start
 * so that a typo is reported then, not as a failed handshake later.
 * Secret files open to other users are refused, as keyrings are.
 *
 * The socket stays blocking and GnuTLS reads and writes it directly; the
 * receive timeout set during negotiation (SO_RCVTIMEO) bounds the
 * handshake too (GNUTLS_E_AGAIN becomes -ETIMEDOUT).
 */
#include "nbd_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "errbuf.h"

/* GnuTLS's NORMAL, with AES-GCM before ChaCha20 and the server's order
 * winning: a TLS 1.3 PSK is bound to SHA-256, which rules out
 * AES-256-GCM-SHA384, and NORMAL's next choice, ChaCha20-Poly1305, costs
 * eight times the CPU of AES-128-GCM where the CPU has AES instructions
 * (nearly every server).  --tls-priority replaces it. */
#define TLS_CIPHERS		"%SERVER_PRECEDENCE:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:" \
				"+CHACHA20-POLY1305:+AES-256-CCM:+AES-128-CCM"
#define TLS_PRIORITY_X509	"NORMAL:" TLS_CIPHERS
#define TLS_PRIORITY_PSK	"NORMAL:" TLS_CIPHERS ":+ECDHE-PSK:+DHE-PSK:+PSK"
#define TLS_HANDSHAKE_MS	30000
#define TLS_PSK_FILE_MAX	(1 << 20)

struct nbd_tls_server {
	gnutls_certificate_credentials_t x509;	/* NULL: no certificates */
	gnutls_psk_server_credentials_t psk;	/* NULL: no PSK */
	gnutls_priority_t prio;
	bool verify_peer;
};

struct nbd_tls {
	gnutls_session_t s;
};

int nbd_tls_mode_parse(const char *s, enum nbd_tls_mode *out)
{
	if (strcmp(s, "off") == 0)
		*out = NBD_TLS_OFF;
	else if (strcmp(s, "on") == 0)
		*out = NBD_TLS_ON;
	else if (strcmp(s, "require") == 0)
		*out = NBD_TLS_REQUIRE;
	else
		return -EINVAL;
	return 0;
}

const char *nbd_tls_mode_name(enum nbd_tls_mode m)
{
	return m == NBD_TLS_REQUIRE ? "require" : m == NBD_TLS_ON ? "on" : "off";
}

/* A secret file must exist, be a regular file and be closed to other
 * users (group and world). */
static int check_secret_file(const char *path, const char *what, char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		int e = errno;

		errbuf_set(err, errlen, "%s '%s': %s", what, path, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		errbuf_set(err, errlen, "%s '%s' is not a regular file", what, path);
		return -EINVAL;
	}
	if (st.st_mode & 077) {
		errbuf_set(err, errlen, "%s '%s' is readable by other users (mode %03o); "
			"fix it with: chmod 600 %s", what, path, st.st_mode & 0777, path);
		return -EPERM;
	}
	return 0;
}

/* Each non-empty line: a user name (no ':'), ':', an even number of hex
 * digits (at least 2).  Reports the first bad line. */
static int check_psk_file(const char *path, char *err, size_t errlen)
{
	char line[1024];
	unsigned lineno = 0, keys = 0;
	FILE *f;
	int ret;

	ret = check_secret_file(path, "--tls-psk file", err, errlen);
	if (ret)
		return ret;
	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		errbuf_set(err, errlen, "--tls-psk file '%s': %s", path, strerror(-ret));
		return ret;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);
		char *colon, *hex;
		size_t hlen;

		lineno++;
		if (n == sizeof(line) - 1 && line[n - 1] != '\n') {
			errbuf_set(err, errlen, "--tls-psk file '%s', line %u: longer than %zu "
				"bytes", path, lineno, sizeof(line) - 2);
			ret = -EINVAL;
			goto out_close;
		}
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (n == 0)
			continue;
		colon = strchr(line, ':');
		hex = colon ? colon + 1 : NULL;
		hlen = hex ? strlen(hex) : 0;
		if (!colon || colon == line || hlen < 2 || hlen % 2 ||
		    strspn(hex, "0123456789abcdefABCDEF") != hlen) {
			errbuf_set(err, errlen, "--tls-psk file '%s', line %u: not "
				"USERNAME:HEXKEY (make a key with: psktool -u USERNAME "
				"-p %s)", path, lineno, path);
			ret = -EINVAL;
			goto out_close;
		}
		keys++;
	}
	if (keys == 0) {
		errbuf_set(err, errlen, "--tls-psk file '%s' holds no key; add one with: "
			"psktool -u USERNAME -p %s", path, path);
		ret = -EINVAL;
	}
out_close:
	fclose(f);
	return ret;
}

static int load_x509(struct nbd_tls_server *srv, const char *dir, char *err, size_t errlen)
{
	char ca[4096], cert[4096], key[4096], crl[4096];
	int r;

	if (snprintf(ca, sizeof(ca), "%s/ca-cert.pem", dir) >= (int)sizeof(ca) ||
	    snprintf(cert, sizeof(cert), "%s/server-cert.pem", dir) >= (int)sizeof(cert) ||
	    snprintf(key, sizeof(key), "%s/server-key.pem", dir) >= (int)sizeof(key) ||
	    snprintf(crl, sizeof(crl), "%s/ca-crl.pem", dir) >= (int)sizeof(crl)) {
		errbuf_set(err, errlen, "--tls-certificates '%s': path too long", dir);
		return -ENAMETOOLONG;
	}
	r = check_secret_file(key, "server key", err, errlen);
	if (r)
		return r;
	if (gnutls_certificate_allocate_credentials(&srv->x509) < 0) {
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = gnutls_certificate_set_x509_key_file(srv->x509, cert, key, GNUTLS_X509_FMT_PEM);
	if (r < 0) {
		errbuf_set(err, errlen, "cannot load '%s' with '%s': %s; the folder of "
			"--tls-certificates holds server-cert.pem and server-key.pem "
			"(doc/nbd.md, \"TLS\")", cert, key, gnutls_strerror(r));
		return -EINVAL;
	}
	if (access(ca, F_OK) == 0) {
		r = gnutls_certificate_set_x509_trust_file(srv->x509, ca, GNUTLS_X509_FMT_PEM);
		if (r < 0) {
			errbuf_set(err, errlen, "cannot load the CA '%s': %s", ca,
				gnutls_strerror(r));
			return -EINVAL;
		}
	} else if (srv->verify_peer) {
		errbuf_set(err, errlen, "--tls-verify-peer needs the CA that signs the "
			"clients' certificates in '%s'", ca);
		return -ENOENT;
	}
	if (access(crl, F_OK) == 0) {
		r = gnutls_certificate_set_x509_crl_file(srv->x509, crl, GNUTLS_X509_FMT_PEM);
		if (r < 0) {
			errbuf_set(err, errlen, "cannot load the revocation list '%s': %s", crl,
				gnutls_strerror(r));
			return -EINVAL;
		}
	}
	gnutls_certificate_set_known_dh_params(srv->x509, GNUTLS_SEC_PARAM_MEDIUM);
	return 0;
}

int nbd_tls_server_create(const struct nbd_tls_config *cfg, struct nbd_tls_server **out,
			  char *err, size_t errlen)
{
	struct nbd_tls_server *srv;
	const char *prio, *where = NULL;
	int r;

	*out = NULL;
	if (!cfg->cert_dir && !cfg->psk_file) {
		errbuf_set(err, errlen, "TLS needs credentials: --tls-certificates DIR "
			"(ca-cert.pem, server-cert.pem, server-key.pem) or --tls-psk FILE");
		return -EINVAL;
	}
	if (cfg->verify_peer && !cfg->cert_dir) {
		errbuf_set(err, errlen, "--tls-verify-peer checks client certificates: it needs "
			"--tls-certificates DIR");
		return -EINVAL;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv) {
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	srv->verify_peer = cfg->verify_peer;
	if (cfg->cert_dir) {
		r = load_x509(srv, cfg->cert_dir, err, errlen);
		if (r)
			goto out_free;
	}
	if (cfg->psk_file) {
		r = check_psk_file(cfg->psk_file, err, errlen);
		if (r)
			goto out_free;
		if (gnutls_psk_allocate_server_credentials(&srv->psk) < 0) {
			errbuf_set(err, errlen, "out of memory");
			r = -ENOMEM;
			goto out_free;
		}
		r = gnutls_psk_set_server_credentials_file(srv->psk, cfg->psk_file);
		if (r < 0) {
			errbuf_set(err, errlen, "--tls-psk file '%s': %s", cfg->psk_file,
				gnutls_strerror(r));
			r = -EINVAL;
			goto out_free;
		}
		gnutls_psk_set_server_known_dh_params(srv->psk, GNUTLS_SEC_PARAM_MEDIUM);
	}
	prio = cfg->priority ? cfg->priority : srv->psk ? TLS_PRIORITY_PSK : TLS_PRIORITY_X509;
	r = gnutls_priority_init(&srv->prio, prio, &where);
	if (r < 0) {
		errbuf_set(err, errlen, "--tls-priority '%s': %s%s%s", prio, gnutls_strerror(r),
			where ? " at " : "", where ? where : "");
		r = -EINVAL;
		goto out_free;
	}
	*out = srv;
	return 0;

out_free:
	nbd_tls_server_free(srv);
	return r;
}

void nbd_tls_server_free(struct nbd_tls_server *srv)
{
	if (!srv)
		return;
	if (srv->prio)
		gnutls_priority_deinit(srv->prio);
	if (srv->x509)
		gnutls_certificate_free_credentials(srv->x509);
	if (srv->psk)
		gnutls_psk_free_server_credentials(srv->psk);
	free(srv);
}

const char *nbd_tls_server_kinds(const struct nbd_tls_server *srv)
{
	if (srv->x509 && srv->psk)
		return "X.509 and PSK";
	return srv->psk ? "PSK" : "X.509";
}

/* The common name of the client's certificate, once it was verified. */
static int peer_cert_identity(struct nbd_tls *t, char *identity, size_t idlen,
			      char *err, size_t errlen)
{
	const gnutls_datum_t *certs;
	unsigned int ncerts = 0, status = 0;
	gnutls_x509_crt_t crt;
	size_t n = idlen;
	int r;

	r = gnutls_certificate_verify_peers2(t->s, &status);
	if (r < 0 || status) {
		gnutls_datum_t why = { 0 };

		if (r >= 0 && gnutls_certificate_verification_status_print(
				status, GNUTLS_CRT_X509, &why, 0) == 0) {
			errbuf_set(err, errlen, "client certificate refused: %s", why.data);
			gnutls_free(why.data);
		} else {
			errbuf_set(err, errlen, "client certificate refused: %s",
				gnutls_strerror(r < 0 ? r : GNUTLS_E_CERTIFICATE_ERROR));
		}
		return -EACCES;
	}
	certs = gnutls_certificate_get_peers(t->s, &ncerts);
	if (!certs || ncerts == 0) {
		errbuf_set(err, errlen, "the client showed no certificate");
		return -EACCES;
	}
	if (gnutls_x509_crt_init(&crt) < 0)
		return -ENOMEM;
	r = gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER);
	if (r >= 0)
		r = gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0,
						  identity, &n);
	gnutls_x509_crt_deinit(crt);
	if (r < 0) {
		errbuf_set(err, errlen, "the client certificate has no usable common name: %s",
			gnutls_strerror(r));
		return -EACCES;
	}
	return 0;
}

int nbd_tls_handshake(struct nbd_tls_server *srv, int fd, struct nbd_tls **out,
		      char *identity, size_t idlen, char *err, size_t errlen)
{
	struct nbd_tls *t;
	int r;

	*out = NULL;
	identity[0] = 0;
	t = calloc(1, sizeof(*t));
	if (!t || gnutls_init(&t->s, GNUTLS_SERVER | GNUTLS_NO_SIGNAL) < 0) {
		free(t);
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	gnutls_priority_set(t->s, srv->prio);
	if (srv->x509) {
		gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, srv->x509);
		gnutls_certificate_server_set_request(t->s, srv->verify_peer ?
						      GNUTLS_CERT_REQUIRE : GNUTLS_CERT_IGNORE);
	}
	if (srv->psk)
		gnutls_credentials_set(t->s, GNUTLS_CRD_PSK, srv->psk);
	gnutls_transport_set_int(t->s, fd);
	gnutls_handshake_set_timeout(t->s, TLS_HANDSHAKE_MS);
	do {
		r = gnutls_handshake(t->s);
	} while (r < 0 && !gnutls_error_is_fatal(r) && r != GNUTLS_E_AGAIN);
	if (r < 0) {
		errbuf_set(err, errlen, "TLS handshake failed: %s", gnutls_strerror(r));
		r = r == GNUTLS_E_AGAIN ? -ETIMEDOUT : -EACCES;
		goto out_free;
	}
	if (gnutls_auth_get_type(t->s) == GNUTLS_CRD_PSK) {
		const char *user = gnutls_psk_server_get_username(t->s);

		/* never truncated: two long names must not become one identity */
		if (!user || strlen(user) >= idlen) {
			errbuf_set(err, errlen, "PSK user name missing or longer than %zu bytes",
				idlen - 1);
			r = -EACCES;
			goto out_free;
		}
		memcpy(identity, user, strlen(user) + 1);
	} else if (srv->verify_peer) {
		r = peer_cert_identity(t, identity, idlen, err, errlen);
		if (r)
			goto out_free;
	}
	*out = t;
	return 0;

out_free:
	gnutls_deinit(t->s);
	free(t);
	return r;
}

const char *nbd_tls_cipher(const struct nbd_tls *t)
{
	const char *c = gnutls_cipher_get_name(gnutls_cipher_get(t->s));

	return c ? c : "?";
}

static int from_gnutls(ssize_t r)
{
	switch (r) {
	case GNUTLS_E_AGAIN:
		return -ETIMEDOUT;
	case GNUTLS_E_PUSH_ERROR:
		return -EPIPE;
	case GNUTLS_E_PULL_ERROR:
		return -ECONNRESET;
	case GNUTLS_E_REHANDSHAKE:
		return -EPROTO;		/* renegotiation is not offered */
	default:
		return -EPROTO;
	}
}

ssize_t nbd_tls_recv(struct nbd_tls *t, void *buf, size_t len)
{
	for (;;) {
		ssize_t r = gnutls_record_recv(t->s, buf, len);

		if (r >= 0)
			return r;
		if (r == GNUTLS_E_INTERRUPTED || r == GNUTLS_E_WARNING_ALERT_RECEIVED)
			continue;
		if (r == GNUTLS_E_PREMATURE_TERMINATION)
			return 0;	/* the TCP stream ended without close_notify */
		return from_gnutls(r);
	}
}

int nbd_tls_send(struct nbd_tls *t, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t r = gnutls_record_send(t->s, p, len);

		if (r == GNUTLS_E_INTERRUPTED)
			continue;
		if (r < 0)
			return from_gnutls(r);
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

void nbd_tls_cork(struct nbd_tls *t)
{
	gnutls_record_cork(t->s);
}

int nbd_tls_uncork(struct nbd_tls *t)
{
	for (;;) {
		int r = gnutls_record_uncork(t->s, GNUTLS_RECORD_WAIT);

		if (r >= 0)
			return 0;
		if (r != GNUTLS_E_INTERRUPTED)
			return from_gnutls(r);
	}
}

void nbd_tls_close(struct nbd_tls *t)
{
	if (!t)
		return;
	gnutls_bye(t->s, GNUTLS_SHUT_WR);	/* best effort: the peer may be gone */
	gnutls_deinit(t->s);
	free(t);
}
