/*
 * mds_caps.c - the parser of MDS caps strings (mds_caps.h) and the pure
 * questions about them.  The string comes from a ticket the monitors
 * sealed, but it was typed by an admin: every length, number and count
 * is bounded and a bad string is refused with a message, never guessed.
 * Kept free of the MDS's state so that tests/unit and tests/fuzz link it.
 */
#include "mds_caps.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct cur {
	const char *s;
	size_t len, i;
	char *err;
	size_t errlen;
};

static int fail(struct cur *c, const char *fmt, ...)
{
	va_list ap;

	if (c->errlen) {
		int n = snprintf(c->err, c->errlen, "mds caps, at byte %zu: ", c->i);
		if (n >= 0 && (size_t)n < c->errlen) {
			va_start(ap, fmt);
			vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -EINVAL;
}

static void skip_spaces(struct cur *c)
{
	while (c->i < c->len && (c->s[c->i] == ' ' || c->s[c->i] == '\t'))
		c->i++;
}

/* A word: up to a space, a comma or the end. */
static size_t word(struct cur *c, const char **w)
{
	size_t b = c->i;

	while (c->i < c->len && c->s[c->i] != ' ' && c->s[c->i] != '\t' && c->s[c->i] != ',')
		c->i++;
	*w = c->s + b;
	return c->i - b;
}

static bool is(const char *w, size_t n, const char *lit)
{
	return n == strlen(lit) && !memcmp(w, lit, n);
}

/* A decimal u32 of at most 10 digits, no sign. */
static int number(const char *w, size_t n, uint32_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 10)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (w[i] < '0' || w[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(w[i] - '0');
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* Normalises the path w[0..n) into out (MDS_CAPS_PATH_MAX + 1 bytes). */
static int norm_path(struct cur *c, const char *w, size_t n, char *out)
{
	size_t o = 0, i = 0;

	if (n == 0 || w[0] != '/')
		return fail(c, "path must be absolute (path=/home/u)");
	while (i < n) {
		while (i < n && w[i] == '/')
			i++;
		size_t b = i;
		while (i < n && w[i] != '/')
			i++;
		size_t cl = i - b;
		if (cl == 0)
			break;
		if ((cl == 1 && w[b] == '.') || (cl == 2 && w[b] == '.' && w[b + 1] == '.'))
			return fail(c, "path may not contain '.' or '..'");
		for (size_t k = b; k < i; k++)
			if (w[k] == '\0' || w[k] == '=')
				return fail(c, "bad character in path");
		if (o + 1 + cl > MDS_CAPS_PATH_MAX)
			return fail(c, "path longer than %u bytes", MDS_CAPS_PATH_MAX);
		out[o++] = '/';
		memcpy(out + o, w + b, cl);
		o += cl;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

/* gids=A,B,...: digits separated by commas (no spaces); a comma followed
 * by anything but a digit ends the list (and the clause). */
static int parse_gids(struct cur *c, struct mds_cap_clause *cl)
{
	for (;;) {
		size_t b = c->i;
		while (c->i < c->len && c->s[c->i] >= '0' && c->s[c->i] <= '9')
			c->i++;
		uint32_t g;
		if (number(c->s + b, c->i - b, &g))
			return fail(c, "gids= takes numbers separated by commas");
		if (cl->ngids == MDS_CAPS_GIDS_MAX)
			return fail(c, "more than %u gids", MDS_CAPS_GIDS_MAX);
		cl->gids[cl->ngids++] = g;
		if (c->i + 1 < c->len && c->s[c->i] == ',' && c->s[c->i + 1] >= '0' &&
		    c->s[c->i + 1] <= '9') {
			c->i++;
			continue;
		}
		return 0;
	}
}

static int parse_clause(struct cur *c, struct mds_cap_clause *cl)
{
	const char *w;
	size_t n;
	bool seen_path = false;

	memset(cl, 0, sizeof(*cl));
	strcpy(cl->path, "/");
	skip_spaces(c);
	n = word(c, &w);
	if (!is(w, n, "allow"))
		return fail(c, "a clause starts with 'allow'");
	skip_spaces(c);
	n = word(c, &w);
	if (is(w, n, "*")) {
		cl->write = true;
		skip_spaces(c);
		return 0;
	}
	if (is(w, n, "rw"))
		cl->write = true;
	else if (!is(w, n, "r"))
		return fail(c, "expected 'r', 'rw' or '*' after 'allow'");
	for (;;) {
		skip_spaces(c);
		if (c->i >= c->len || c->s[c->i] == ',')
			break;
		if (c->len - c->i > 5 && !memcmp(c->s + c->i, "gids=", 5)) {
			if (!cl->has_uid || cl->ngids)
				return fail(c, "gids= needs uid= before it, once");
			c->i += 5;
			if (parse_gids(c, cl))
				return -EINVAL;
			continue;
		}
		n = word(c, &w);
		if (n > 5 && !memcmp(w, "path=", 5)) {
			if (seen_path)
				return fail(c, "path= given twice");
			seen_path = true;
			if (norm_path(c, w + 5, n - 5, cl->path))
				return -EINVAL;
		} else if (n > 4 && !memcmp(w, "uid=", 4)) {
			if (cl->has_uid || number(w + 4, n - 4, &cl->uid))
				return fail(c, "uid= takes one number, once");
			cl->has_uid = true;
		} else if (is(w, n, "root_squash")) {
			if (cl->root_squash)
				return fail(c, "root_squash given twice");
			cl->root_squash = true;
		} else {
			return fail(c, "unknown option '%.*s' (path=, uid=, gids=, root_squash)",
				    (int)(n > 64 ? 64 : n), w);
		}
	}
	return 0;
}

int mds_caps_parse(const char *s, size_t len, struct mds_caps *out, char *err, size_t errlen)
{
	struct cur c = { s, len, 0, err, errlen };

	if (errlen)
		err[0] = '\0';
	out->n = 0;
	if (memchr(s, '\0', len))
		return fail(&c, "a NUL byte in the string");
	for (;;) {
		if (out->n == MDS_CAPS_CLAUSES_MAX)
			return fail(&c, "more than %u clauses", MDS_CAPS_CLAUSES_MAX);
		if (parse_clause(&c, &out->c[out->n]))
			return -EINVAL;
		out->n++;
		skip_spaces(&c);
		if (c.i >= c.len)
			return 0;
		if (c.s[c.i] != ',')
			return fail(&c, "expected ',' between clauses");
		c.i++;
	}
}

bool mds_caps_path_within(const char *root, const char *p)
{
	size_t n = strlen(root);

	if (!strcmp(root, "/"))
		return true;
	return !strncmp(root, p, n) && (p[n] == '\0' || p[n] == '/');
}

bool mds_caps_cred(const struct mds_cap_clause *c, uint32_t uid, uint32_t gid, uint32_t *ouid,
		   uint32_t *ogid)
{
	if (c->has_uid) {
		if (uid != c->uid)
			return false;
		if (c->ngids) {
			bool ok = false;
			for (uint32_t i = 0; i < c->ngids; i++)
				ok |= c->gids[i] == gid;
			if (!ok)
				return false;
		} else if (gid != c->uid) {
			return false;	/* without gids=: the user's own group only */
		}
	}
	if (c->root_squash && uid == 0) {
		uid = MDS_CAPS_NOBODY;
		gid = MDS_CAPS_NOBODY;
	} else if (c->root_squash && gid == 0) {
		gid = MDS_CAPS_NOBODY;
	}
	*ouid = uid;
	*ogid = gid;
	return true;
}

bool mds_caps_unlimited(const struct mds_caps *caps)
{
	for (uint32_t i = 0; i < caps->n; i++) {
		const struct mds_cap_clause *c = &caps->c[i];
		if (c->write && !c->has_uid && !c->root_squash && !strcmp(c->path, "/"))
			return true;
	}
	return false;
}

const char *mds_caps_root(const struct mds_caps *caps)
{
	return caps->n ? caps->c[0].path : "/";
}
