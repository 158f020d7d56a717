/*
 * nbd_acl.c - the identity → images rules of atoll-nbd (nbd_acl.h has the
 * file format).
 *
 * Rules are a flat array of (identity, pattern) pairs searched linearly:
 * a check runs once per option that names an export (and once per image
 * for a list), against files of tens of lines.  Matching is fnmatch(3)
 * without flags, so '/' and leading dots are nothing special (image names
 * have neither meaning).
 */
#include "nbd_acl.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errbuf.h"

struct nbd_acl_rule {
	char *identity;		/* "*" for every client */
	char *pattern;
};

struct nbd_acl {
	struct nbd_acl_rule *rules;
	size_t n, cap;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int add_rule(struct nbd_acl *acl, const char *id, size_t idlen, const char *pat,
		    size_t plen)
{
	struct nbd_acl_rule *r;

	if (acl->n == NBD_ACL_RULES_MAX)
		return -EFBIG;
	if (acl->n == acl->cap) {
		size_t cap = acl->cap ? acl->cap * 2 : 16;
		struct nbd_acl_rule *nr = realloc(acl->rules, cap * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		acl->rules = nr;
		acl->cap = cap;
	}
	r = &acl->rules[acl->n];
	r->identity = strndup(id, idlen);
	r->pattern = strndup(pat, plen);
	if (!r->identity || !r->pattern) {
		free(r->identity);
		free(r->pattern);
		return -ENOMEM;
	}
	acl->n++;
	return 0;
}

/* One line (without its '\n', len bytes, no NUL inside). */
static int parse_line(struct nbd_acl *acl, const char *p, size_t len, unsigned lineno,
		      char *err, size_t errlen)
{
	const char *end = p + len, *hash = memchr(p, '#', len);
	const char *id;
	size_t idlen;
	unsigned npat = 0;
	int ret;

	if (hash)
		end = hash;
	while (p < end && is_blank(*p))
		p++;
	if (p == end)
		return 0;	/* blank or comment */
	id = p;
	while (p < end && !is_blank(*p))
		p++;
	idlen = (size_t)(p - id);
	for (;;) {
		const char *pat;

		while (p < end && is_blank(*p))
			p++;
		if (p == end)
			break;
		pat = p;
		while (p < end && !is_blank(*p))
			p++;
		ret = add_rule(acl, id, idlen, pat, (size_t)(p - pat));
		if (ret == -EFBIG)
			errbuf_set(err, errlen, "line %u: more than %d rules", lineno,
				NBD_ACL_RULES_MAX);
		else if (ret)
			errbuf_set(err, errlen, "out of memory");
		if (ret)
			return ret;
		npat++;
	}
	if (npat == 0) {
		errbuf_set(err, errlen, "line %u: identity '%.*s' names no image; write "
			"IDENTITY IMAGE [IMAGE...]", lineno, (int)(idlen > 64 ? 64 : idlen), id);
		return -EINVAL;
	}
	return 0;
}

int nbd_acl_parse(const char *text, size_t len, struct nbd_acl **out, char *err,
		  size_t errlen)
{
	struct nbd_acl *acl;
	unsigned lineno = 0;
	size_t off = 0;
	int ret = 0;

	*out = NULL;
	if (len > NBD_ACL_FILE_MAX) {
		errbuf_set(err, errlen, "larger than %u bytes", NBD_ACL_FILE_MAX);
		return -EFBIG;
	}
	if (memchr(text, 0, len)) {
		errbuf_set(err, errlen, "holds a NUL byte: not a text file");
		return -EINVAL;
	}
	acl = calloc(1, sizeof(*acl));
	if (!acl) {
		errbuf_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	while (off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t llen = nl ? (size_t)(nl - (text + off)) : len - off;

		lineno++;
		if (llen > NBD_ACL_LINE_MAX) {
			errbuf_set(err, errlen, "line %u: longer than %d bytes", lineno,
				NBD_ACL_LINE_MAX);
			ret = -EINVAL;
			break;
		}
		ret = parse_line(acl, text + off, llen, lineno, err, errlen);
		if (ret)
			break;
		off += llen + (nl ? 1 : 0);
	}
	if (ret) {
		nbd_acl_free(acl);
		return ret;
	}
	*out = acl;
	return 0;
}

int nbd_acl_load(const char *path, struct nbd_acl **out, char *err, size_t errlen)
{
	char why[256];
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, ret;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		ret = -errno;
		errbuf_set(err, errlen, "--tls-exports file '%s': %s", path, strerror(-ret));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > NBD_ACL_FILE_MAX) {
		errbuf_set(err, errlen, "--tls-exports file '%s': not a regular file of at most "
			"%u bytes", path, NBD_ACL_FILE_MAX);
		ret = -EINVAL;
		goto out_close;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		errbuf_set(err, errlen, "out of memory");
		goto out_close;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	ret = nbd_acl_parse(buf, got, out, why, sizeof(why));
	if (ret)
		errbuf_set(err, errlen, "--tls-exports file '%s': %s", path, why);
	free(buf);
out_close:
	if (fd >= 0)
		close(fd);
	return ret;
}

void nbd_acl_free(struct nbd_acl *acl)
{
	if (!acl)
		return;
	for (size_t i = 0; i < acl->n; i++) {
		free(acl->rules[i].identity);
		free(acl->rules[i].pattern);
	}
	free(acl->rules);
	free(acl);
}

size_t nbd_acl_count(const struct nbd_acl *acl)
{
	return acl ? acl->n : 0;
}

bool nbd_acl_allows(const struct nbd_acl *acl, const char *identity, const char *name)
{
	char image[4097];
	const char *at;
	size_t ilen;

	if (!acl)
		return true;
	at = strchr(name, '@');
	ilen = at ? (size_t)(at - name) : strlen(name);
	if (ilen >= sizeof(image))
		return false;
	memcpy(image, name, ilen);
	image[ilen] = 0;
	for (size_t i = 0; i < acl->n; i++) {
		const struct nbd_acl_rule *r = &acl->rules[i];
		const char *subject;

		if (strcmp(r->identity, "*") != 0 &&
		    (!identity[0] || strcmp(r->identity, identity) != 0))
			continue;
		subject = strchr(r->pattern, '@') ? name : image;
		if (fnmatch(r->pattern, subject, 0) == 0)
			return true;
	}
	return false;
}
