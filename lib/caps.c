/*
 * caps.c - parsing and checking the capability strings of the monitor
 * and OSD services (caps.h has the grammar, doc/caps.md the table of
 * what each message and sub-op needs).
 *
 * Both parsers walk the string once, clause by clause, word by word,
 * with explicit bounds on every copy: a caps string arrives from a
 * keyring file or inside a ticket, and a daemon parses it once per
 * connection (OSD) or per command (monitor), so a bad one costs an error
 * sentence and never more.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "caps.h"

static void say(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static bool is_sep(char ch)
{
	return ch == ',' || ch == ';';
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* One clause of s: [*pos, end of clause) split into words.  A word is
 * at most 300 bytes; at most 4 words.  Returns the number of words, or
 * -EINVAL (too many, too long). */
#define WORD_MAX	300
#define WORDS_MAX	4

struct clause {
	int n;
	char w[WORDS_MAX][WORD_MAX + 1];
	char text[96];			/* the clause, for messages */
};

static int next_clause(const char *s, size_t *pos, struct clause *cl, char *err, size_t errlen)
{
	size_t i = *pos, start;

	cl->n = 0;
	while (s[i] && (is_space(s[i]) || is_sep(s[i])))
		i++;
	start = i;
	while (s[i] && !is_sep(s[i])) {
		size_t b;

		while (s[i] && is_space(s[i]))
			i++;
		if (!s[i] || is_sep(s[i]))
			break;
		b = i;
		while (s[i] && !is_space(s[i]) && !is_sep(s[i]))
			i++;
		if (cl->n == WORDS_MAX || i - b > WORD_MAX) {
			say(err, errlen, "caps clause '%.*s' is too long",
			    (int)(i - start > 80 ? 80 : i - start), s + start);
			return -EINVAL;
		}
		memcpy(cl->w[cl->n], s + b, i - b);
		cl->w[cl->n][i - b] = '\0';
		cl->n++;
	}
	{
		size_t len = i - start;

		while (len && is_space(s[start + len - 1]))
			len--;
		snprintf(cl->text, sizeof(cl->text), "%.*s", (int)(len > 80 ? 80 : len),
			 s + start);
	}
	*pos = i;
	return cl->n;
}

static int check_len(const char *s, char *err, size_t errlen)
{
	if (!s) {
		say(err, errlen, "caps string missing");
		return -EINVAL;
	}
	if (strnlen(s, CAPS_STR_MAX + 1) > CAPS_STR_MAX) {
		say(err, errlen, "caps string longer than %u bytes", CAPS_STR_MAX);
		return -EINVAL;
	}
	return 0;
}

/* "r", "rw", "rwx", "wr", "x", ... -> CAPS_* bits; 0 on anything else. */
static uint8_t access_bits(const char *w)
{
	uint8_t a = 0;

	if (!strcmp(w, "*"))
		return CAPS_R | CAPS_W | CAPS_X;
	for (; *w; w++) {
		uint8_t b = *w == 'r' ? CAPS_R : *w == 'w' ? CAPS_W : *w == 'x' ? CAPS_X : 0;

		if (!b || (a & b))
			return 0;
		a |= b;
	}
	return a;
}

static bool pool_name_ok(const char *p)
{
	size_t n = strlen(p);

	if (!n || n > CAPS_POOL_MAX)
		return false;
	for (; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
			return false;
	return true;
}

static int osd_clause(const struct clause *cl, struct osd_cap_clause *c, char *err,
		      size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->any_pool = c->any_object = true;
	if (!strcmp(cl->w[0], "profile")) {
		if (cl->n != 2)
			goto bad;
		if (!strcmp(cl->w[1], "osd"))
			c->access = CAPS_R | CAPS_W | CAPS_X;
		else if (!strcmp(cl->w[1], "mds") || !strcmp(cl->w[1], "client"))
			c->access = CAPS_R | CAPS_W;
		else {
			say(err, errlen, "unknown osd profile '%s' in caps clause '%s'; "
			    "use osd, mds or client", cl->w[1], cl->text);
			return -EINVAL;
		}
		return 0;
	}
	if (strcmp(cl->w[0], "allow") || cl->n < 2)
		goto bad;
	c->access = access_bits(cl->w[1]);
	if (!c->access) {
		say(err, errlen, "bad access '%s' in caps clause '%s'; use r, rw, rwx or *",
		    cl->w[1], cl->text);
		return -EINVAL;
	}
	for (int i = 2; i < cl->n; i++) {
		const char *w = cl->w[i];

		if (!strncmp(w, "pool=", 5) && c->any_pool) {
			if (!pool_name_ok(w + 5)) {
				say(err, errlen, "bad pool name in caps clause '%s'", cl->text);
				return -EINVAL;
			}
			strcpy(c->pool, w + 5);
			c->any_pool = false;
		} else if (!strncmp(w, "object_prefix=", 14) && c->any_object) {
			size_t n = strlen(w + 14);

			if (!n || n > CAPS_PREFIX_MAX) {
				say(err, errlen, "object_prefix of caps clause '%s' is empty or "
				    "longer than %u bytes", cl->text, CAPS_PREFIX_MAX);
				return -EINVAL;
			}
			memcpy(c->prefix, w + 14, n + 1);
			c->prefix_len = (uint16_t)n;
			c->any_object = false;
		} else {
			say(err, errlen, "unknown or repeated '%s' in caps clause '%s'; "
			    "expected pool=NAME or object_prefix=PREFIX", w, cl->text);
			return -EINVAL;
		}
	}
	return 0;
bad:
	say(err, errlen, "bad caps clause '%s'; expected 'allow r|rw|rwx [pool=NAME] "
	    "[object_prefix=PREFIX]', 'allow *' or 'profile osd|mds|client'", cl->text);
	return -EINVAL;
}

int caps_parse_osd(const char *s, struct osd_caps *out, char *err, size_t errlen)
{
	struct clause cl;
	size_t pos = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = check_len(s, err, errlen)) < 0)
		return r;
	while ((r = next_clause(s, &pos, &cl, err, errlen)) > 0) {
		if (out->n == CAPS_CLAUSES_MAX) {
			say(err, errlen, "more than %u caps clauses", CAPS_CLAUSES_MAX);
			goto fail;
		}
		if ((r = osd_clause(&cl, &out->c[out->n], err, errlen)) < 0)
			goto fail;
		out->n++;
	}
	if (r < 0)
		goto fail;
	return 0;
fail:
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}

bool caps_osd_allows(const struct osd_caps *caps, const char *pool_name, const char *oid,
		     size_t oid_len, uint32_t access)
{
	for (uint32_t i = 0; i < caps->n && i < CAPS_CLAUSES_MAX; i++) {
		const struct osd_cap_clause *c = &caps->c[i];

		if ((c->access & access) != access)
			continue;
		if (!c->any_pool && (!pool_name || strcmp(c->pool, pool_name)))
			continue;
		if (!c->any_object &&
		    (!oid || oid_len < c->prefix_len || memcmp(oid, c->prefix, c->prefix_len)))
			continue;
		return true;
	}
	return false;
}

static int mon_clause(const struct clause *cl, uint32_t *g, char *err, size_t errlen)
{
	static const struct { const char *name; uint32_t grants; } profiles[] = {
		{ "osd", MON_CAP_R | MON_CAP_OSD },
		{ "mds", MON_CAP_R | MON_CAP_MDS | MON_CAP_BLOCKLIST },
		{ "client", MON_CAP_R },
		{ "bootstrap-osd", MON_CAP_R | MON_CAP_BOOTSTRAP_OSD },
		{ "blocklist", MON_CAP_R | MON_CAP_BLOCKLIST },
	};

	if (cl->n != 2)
		goto bad;
	if (!strcmp(cl->w[0], "profile")) {
		for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
			if (!strcmp(profiles[i].name, cl->w[1])) {
				*g |= profiles[i].grants;
				return 0;
			}
		say(err, errlen, "unknown mon profile '%s' in caps clause '%s'; use osd, mds, "
		    "client, bootstrap-osd or blocklist", cl->w[1], cl->text);
		return -EINVAL;
	}
	if (strcmp(cl->w[0], "allow"))
		goto bad;
	switch (access_bits(cl->w[1])) {
	case CAPS_R:
		*g |= MON_CAP_R;
		return 0;
	case CAPS_R | CAPS_W:
		*g |= MON_CAP_R | MON_CAP_W;
		return 0;
	case CAPS_R | CAPS_W | CAPS_X:
		*g |= MON_CAP_ALL;
		return 0;
	default:
		say(err, errlen, "bad access '%s' in mon caps clause '%s'; use r, rw or *",
		    cl->w[1], cl->text);
		return -EINVAL;
	}
bad:
	say(err, errlen, "bad mon caps clause '%s'; expected 'allow r|rw|*' or 'profile "
	    "osd|mds|client|bootstrap-osd|blocklist'", cl->text);
	return -EINVAL;
}

int caps_parse_mon(const char *s, struct mon_caps *out, char *err, size_t errlen)
{
	struct clause cl;
	size_t pos = 0;
	uint32_t n = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = check_len(s, err, errlen)) < 0)
		return r;
	while ((r = next_clause(s, &pos, &cl, err, errlen)) > 0) {
		if (++n > CAPS_CLAUSES_MAX) {
			say(err, errlen, "more than %u caps clauses", CAPS_CLAUSES_MAX);
			r = -EINVAL;
			break;
		}
		if ((r = mon_clause(&cl, &out->grants, err, errlen)) < 0)
			break;
	}
	if (r < 0) {
		out->grants = 0;
		return -EINVAL;
	}
	return 0;
}

bool caps_mon_allows(const struct mon_caps *caps, enum mon_need need)
{
	uint32_t g = caps->grants;

	if (g & MON_CAP_ALL)
		return true;
	switch (need) {
	case MON_NEED_R:
		return g & MON_CAP_R;
	case MON_NEED_W:
		return g & MON_CAP_W;
	case MON_NEED_OSD:
		return g & MON_CAP_OSD;
	case MON_NEED_MDS:
		return g & MON_CAP_MDS;
	case MON_NEED_BOOTSTRAP_OSD:
		return g & MON_CAP_BOOTSTRAP_OSD;
	case MON_NEED_BLOCKLIST:
		return g & (MON_CAP_BLOCKLIST | MON_CAP_W);
	case MON_NEED_ALL:
	case MON_NEED_UNSET:
	default:
		return false;
	}
}

const char *caps_mon_need_name(enum mon_need need)
{
	switch (need) {
	case MON_NEED_R:
		return "allow r";
	case MON_NEED_W:
		return "allow rw";
	case MON_NEED_OSD:
		return "profile osd";
	case MON_NEED_MDS:
		return "profile mds";
	case MON_NEED_BOOTSTRAP_OSD:
		return "profile bootstrap-osd";
	case MON_NEED_BLOCKLIST:
		return "profile blocklist";
	case MON_NEED_ALL:
	case MON_NEED_UNSET:
	default:
		return "allow *";
	}
}
