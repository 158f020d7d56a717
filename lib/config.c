/*
 * config.c - atoll.conf: INI sections with typed getters.
 *
 * inih does the INI syntax; we own everything around it.  The file is read
 * into memory (capped) and fed to inih line by line through our own reader,
 * which lets us
 *  - count lines, so that errors found in the handler name their line too;
 *  - strip leading blanks, so that indented keys are plain keys (inih would
 *    otherwise take an indented line as the continuation of the previous
 *    value, a trap for configs written in the usual indented style);
 *  - refuse lines longer than inih's fixed line buffer instead of having
 *    inih silently parse the rest of the line as a new line.
 *
 * The data are small (tens of keys), so sections and keys are flat arrays
 * searched linearly.  Values are separate heap strings: a pointer returned
 * by a getter stays valid until that key is set again or the config freed.
 */
#include "config.h"
#include "errbuf.h"
#include "atoll/atoll.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ini.h>

#define CONFIG_FILE_MAX		(1024 * 1024)	/* a config is a few KiB */
#define CONFIG_LINE_MAX		(INI_MAX_LINE - 1)	/* inih's buffer, less NUL */
#define OVERRIDES_NAME		"command line"

struct config_kv {
	char *key;
	char *value;
};

struct config_section {
	char *name;
	struct config_kv *kv;
	size_t n, cap;
};

struct config {
	struct config_section *sec;
	size_t n, cap;
	struct config_section overrides;
};

/* ---- the data ---- */

/* Keys compare case-insensitively with '-' and '_' alike. */
static int key_char(char c)
{
	return c == '-' ? '_' : tolower((unsigned char)c);
}

static bool key_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (key_char(*a) != key_char(*b))
			return false;
	return *a == *b;
}

static void section_free(struct config_section *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->kv[i].key);
		free(s->kv[i].value);
	}
	free(s->kv);
	free(s->name);
	memset(s, 0, sizeof(*s));
}

struct config *config_new(void)
{
	return calloc(1, sizeof(struct config));
}

void config_free(struct config *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		section_free(&c->sec[i]);
	free(c->sec);
	section_free(&c->overrides);
	free(c);
}

static struct config_section *find_section(const struct config *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (strcasecmp(c->sec[i].name, name) == 0)
			return &c->sec[i];
	return NULL;
}

static const char *section_get(const struct config_section *s, const char *key)
{
	size_t i;

	/* From the end: a key given twice takes its last value. */
	for (i = s->n; i > 0; i--)
		if (key_eq(s->kv[i - 1].key, key))
			return s->kv[i - 1].value;
	return NULL;
}

static struct config_section *add_section(struct config *c, const char *name)
{
	struct config_section *s;

	s = find_section(c, name);
	if (s)
		return s;
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 8;
		struct config_section *nsec = realloc(c->sec, ncap * sizeof(*nsec));

		if (!nsec)
			return NULL;
		c->sec = nsec;
		c->cap = ncap;
	}
	s = &c->sec[c->n];
	memset(s, 0, sizeof(*s));
	s->name = strdup(name);
	if (!s->name)
		return NULL;
	c->n++;
	return s;
}

/* Copies s without leading and trailing blanks. */
static char *strdup_trim(const char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	return strndup(s, n);
}

static int section_set(struct config_section *s, const char *key, const char *value)
{
	char *v;
	size_t i;

	v = strdup_trim(value);
	if (!v)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		if (key_eq(s->kv[i].key, key)) {
			free(s->kv[i].value);
			s->kv[i].value = v;
			return 0;
		}
	}
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 8;
		struct config_kv *nkv = realloc(s->kv, ncap * sizeof(*nkv));

		if (!nkv)
			goto out_free_value;
		s->kv = nkv;
		s->cap = ncap;
	}
	s->kv[s->n].key = strdup_trim(key);
	if (!s->kv[s->n].key)
		goto out_free_value;
	s->kv[s->n].value = v;
	s->n++;
	return 0;

out_free_value:
	free(v);
	return -ENOMEM;
}

/* What config_write() can write so that config_load() reads it back the
 * same: no line breaks, no inline comment (" ;"), keys without the INI
 * delimiters, and each line within inih's line buffer. */
static bool key_ok(const char *key)
{
	const char *p;

	for (p = key; isspace((unsigned char)*p); p++)
		;
	if (!*p)
		return false;
	return strpbrk(key, "=:[];#\r\n") == NULL;
}

static bool value_ok(const char *value)
{
	const char *p;

	if (strpbrk(value, "\r\n"))
		return false;
	for (p = value; (p = strchr(p, ';')) != NULL; p++)
		if (p > value && isspace((unsigned char)p[-1]))
			return false;
	return true;
}

static bool line_fits(const char *key, const char *value)
{
	return strlen(key) + strlen(value) + 3 <= CONFIG_LINE_MAX;	/* " = " */
}

int config_set_override(struct config *c, const char *key, const char *value)
{
	if (!key_ok(key) || !value_ok(value))
		return -EINVAL;
	return section_set(&c->overrides, key, value);
}

int config_set(struct config *c, const char *section, const char *key, const char *value)
{
	struct config_section *s;

	if (!*section || strpbrk(section, "[]\r\n") || !key_ok(key) || !value_ok(value))
		return -EINVAL;
	if (!line_fits(key, value) || strlen(section) + 2 > CONFIG_LINE_MAX)
		return -E2BIG;
	s = add_section(c, section);
	if (!s)
		return -ENOMEM;
	return section_set(s, key, value);
}

/* ---- lookup ---- */

const char *config_get(const struct config *c, const char *who, const char *key,
		       const char **where)
{
	const struct config_section *s;
	const char *v;
	char type[64];
	const char *dot;
	size_t tlen;

	v = section_get(&c->overrides, key);
	if (v) {
		if (where)
			*where = OVERRIDES_NAME;
		return v;
	}
	if (who && *who) {
		s = find_section(c, who);
		if (s && (v = section_get(s, key)) != NULL)
			goto out_found;
		/* "osd.3" falls back to [osd]. */
		dot = strchr(who, '.');
		tlen = dot ? (size_t)(dot - who) : 0;
		if (tlen > 0 && tlen < sizeof(type)) {
			memcpy(type, who, tlen);
			type[tlen] = '\0';
			s = find_section(c, type);
			if (s && (v = section_get(s, key)) != NULL)
				goto out_found;
		}
	}
	s = find_section(c, "global");
	if (s && (v = section_get(s, key)) != NULL)
		goto out_found;
	return NULL;

out_found:
	if (where)
		*where = s->name;
	return v;
}

/* Looks key up and, when found, formats "option 'key' in [sec]" (or "on
 * the command line") into loc for the getters' error sentences. */
static const char *lookup(const struct config *c, const char *who, const char *key,
			  char *loc, size_t loclen)
{
	const char *where = NULL;
	const char *v = config_get(c, who, key, &where);

	if (v && strcmp(where, OVERRIDES_NAME) == 0)
		snprintf(loc, loclen, "option '%s' on the command line", key);
	else if (v)
		snprintf(loc, loclen, "option '%s' in [%s]", key, where);
	return v;
}

#define LOC_MAX 256

int config_get_str(const struct config *c, const char *who, const char *key,
		   const char *def, const char **out, char *err, size_t errlen)
{
	const char *v = config_get(c, who, key, NULL);

	*out = v ? v : def;
	return 0;
}

/* An unsigned whole number, then optional blanks; *rest is what follows.
 * -EINVAL when there is no digit, -ERANGE when it does not fit. */
static int parse_u64(const char *s, uint64_t *out, const char **rest)
{
	uint64_t v = 0;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		unsigned int digit = (unsigned int)(*s - '0');

		if (v > (UINT64_MAX - digit) / 10)
			return -ERANGE;
		v = v * 10 + digit;
	}
	while (isspace((unsigned char)*s))
		s++;
	*out = v;
	*rest = s;
	return 0;
}

struct unit {
	const char *suffix;
	uint64_t mult;
};

/* A whole number times the multiplier of its suffix (case-insensitive). */
static int parse_with_units(const char *s, const struct unit *units, uint64_t *out)
{
	const char *rest;
	uint64_t n;
	int r;

	r = parse_u64(s, &n, &rest);
	if (r < 0)
		return r;
	for (; units->suffix; units++) {
		if (strcasecmp(rest, units->suffix) == 0) {
			if (units->mult && n > UINT64_MAX / units->mult)
				return -ERANGE;
			*out = n * units->mult;
			return 0;
		}
	}
	return -EINVAL;
}

int config_get_int(const struct config *c, const char *who, const char *key,
		   int64_t def, int64_t min, int64_t max, int64_t *out,
		   char *err, size_t errlen)
{
	char loc[LOC_MAX];
	const char *v;
	char *end;
	long long n;

	*out = def;
	v = lookup(c, who, key, loc, sizeof(loc));
	if (!v)
		return 0;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (end == v || *end || isspace((unsigned char)*v)) {
		errbuf_set(err, errlen, "%s: '%s' is not a whole number", loc, v);
		return -EINVAL;
	}
	if (errno == ERANGE || n < min || n > max) {
		errbuf_set(err, errlen, "%s: '%s' is not between %" PRId64 " and %" PRId64,
			loc, v, min, max);
		return -ERANGE;
	}
	*out = n;
	return 0;
}

static const struct unit size_units[] = {
	{ "", 1 }, { "b", 1 },
	{ "k", 1ull << 10 }, { "kb", 1ull << 10 }, { "kib", 1ull << 10 },
	{ "m", 1ull << 20 }, { "mb", 1ull << 20 }, { "mib", 1ull << 20 },
	{ "g", 1ull << 30 }, { "gb", 1ull << 30 }, { "gib", 1ull << 30 },
	{ "t", 1ull << 40 }, { "tb", 1ull << 40 }, { "tib", 1ull << 40 },
	{ NULL, 0 },
};

int config_parse_size(const char *s, uint64_t *out)
{
	return parse_with_units(s, size_units, out);
}

int config_get_size(const struct config *c, const char *who, const char *key,
		    uint64_t def, uint64_t *out, char *err, size_t errlen)
{
	char loc[LOC_MAX];
	const char *v;
	uint64_t n;
	int r;

	*out = def;
	v = lookup(c, who, key, loc, sizeof(loc));
	if (!v)
		return 0;
	r = config_parse_size(v, &n);
	if (r == -ERANGE) {
		errbuf_set(err, errlen, "%s: '%s' is too large", loc, v);
		return r;
	}
	if (r < 0) {
		errbuf_set(err, errlen,
			"%s: '%s' is not a size (a whole number with an optional K, M, G or T suffix)",
			loc, v);
		return r;
	}
	*out = n;
	return 0;
}

int config_get_bool(const struct config *c, const char *who, const char *key,
		    bool def, bool *out, char *err, size_t errlen)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };
	char loc[LOC_MAX];
	const char *v;
	size_t i;

	*out = def;
	v = lookup(c, who, key, loc, sizeof(loc));
	if (!v)
		return 0;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	errbuf_set(err, errlen,
		"%s: '%s' is not a boolean (use true/false, yes/no, on/off or 1/0)", loc, v);
	return -EINVAL;
}

static const struct unit duration_units[] = {
	{ "", 1000 }, { "s", 1000 }, { "ms", 1 },
	{ "m", 60 * 1000 }, { "min", 60 * 1000 }, { "h", 3600 * 1000 },
	{ NULL, 0 },
};

int config_get_duration_ms(const struct config *c, const char *who, const char *key,
			   uint64_t def, uint64_t *out, char *err, size_t errlen)
{
	char loc[LOC_MAX];
	const char *v;
	uint64_t n;
	int r;

	*out = def;
	v = lookup(c, who, key, loc, sizeof(loc));
	if (!v)
		return 0;
	r = parse_with_units(v, duration_units, &n);
	if (r == -ERANGE) {
		errbuf_set(err, errlen, "%s: '%s' is too large", loc, v);
		return r;
	}
	if (r < 0) {
		errbuf_set(err, errlen,
			"%s: '%s' is not a duration (a whole number with an optional ms, s, m or h suffix)",
			loc, v);
		return r;
	}
	*out = n;
	return 0;
}

int config_get_double(const struct config *c, const char *who, const char *key,
		      double def, double min, double max, double *out,
		      char *err, size_t errlen)
{
	char loc[LOC_MAX];
	const char *v;
	char *end;
	double d;

	*out = def;
	v = lookup(c, who, key, loc, sizeof(loc));
	if (!v)
		return 0;
	errno = 0;
	d = strtod(v, &end);
	if (end == v || *end || isspace((unsigned char)*v) || isnan(d)) {
		errbuf_set(err, errlen, "%s: '%s' is not a number", loc, v);
		return -EINVAL;
	}
	if (errno == ERANGE || !(d >= min && d <= max)) {
		errbuf_set(err, errlen, "%s: '%s' is not between %g and %g", loc, v, min, max);
		return -ERANGE;
	}
	*out = d;
	return 0;
}

/* ---- loading ---- */

struct parse_ctx {
	struct config *c;
	const char *text;
	size_t len, pos;
	int lineno;		/* of the line inih is working on */
	int err;		/* first error: -EINVAL or -ENOMEM */
	int errline;
	char msg[160];		/* what was wrong at errline, if not syntax */
};

static void parse_fail(struct parse_ctx *p, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void parse_fail(struct parse_ctx *p, int err, const char *fmt, ...)
{
	va_list ap;

	if (p->err)
		return;
	p->err = err;
	p->errline = p->lineno;
	va_start(ap, fmt);
	vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
	va_end(ap);
}

/* inih's ini_reader: like fgets(), one line per call (without its '\n',
 * which inih does not need, so a line may use all of num - 1 bytes). */
static char *read_line(char *str, int num, void *stream)
{
	struct parse_ctx *p = stream;
	size_t start, end, n;

	if (p->pos >= p->len)
		return NULL;
	p->lineno++;
	start = p->pos;
	end = start;
	while (end < p->len && p->text[end] != '\n')
		end++;
	p->pos = end < p->len ? end + 1 : end;
	if (end > start && p->text[end - 1] == '\r')
		end--;			/* a file written on Windows */
	if (memchr(p->text + start, '\0', end - start)) {
		parse_fail(p, -EINVAL, "the line contains a NUL byte");
		str[0] = '\0';
		return str;
	}
	while (start < end && (p->text[start] == ' ' || p->text[start] == '\t'))
		start++;
	n = end - start;
	if (n > (size_t)num - 1) {
		parse_fail(p, -EINVAL, "the line is longer than %d characters", num - 1);
		str[0] = '\0';
		return str;
	}
	memcpy(str, p->text + start, n);
	str[n] = '\0';
	return str;
}

static int handle_kv(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *p = user;
	struct config_section *s;
	int r;

	if (!key_ok(name)) {
		parse_fail(p, -EINVAL, "option name '%s' is empty or holds one of =:[];#", name);
		return 0;
	}
	/* Keys before any [section] belong to [global]. */
	s = add_section(p->c, *section ? section : "global");
	if (!s) {
		parse_fail(p, -ENOMEM, "out of memory");
		return 0;
	}
	r = section_set(s, name, value);
	if (r < 0) {
		parse_fail(p, r, "out of memory");
		return 0;
	}
	return 1;
}

static int parse_text(struct config **out, const char *what, const char *text,
		      size_t len, char *err, size_t errlen)
{
	struct parse_ctx p = { .text = text, .len = len };
	int line;

	*out = NULL;
	p.c = config_new();
	if (!p.c) {
		errbuf_set(err, errlen, "%s: out of memory", what);
		return -ENOMEM;
	}
	line = ini_parse_stream(read_line, &p, handle_kv, &p);
	if (p.err == -ENOMEM || line == -2) {
		errbuf_set(err, errlen, "%s: out of memory", what);
		goto out_free_config;
	}
	/* inih reports the first line it disliked; ours may come earlier. */
	if (p.err && (line <= 0 || p.errline <= line)) {
		errbuf_set(err, errlen, "%s line %d: %s", what, p.errline, p.msg);
		goto out_free_config;
	}
	if (line != 0) {
		errbuf_set(err, errlen,
			"%s line %d: syntax error; expected '[section]' or 'key = value'",
			what, line);
		goto out_free_config;
	}
	*out = p.c;
	return 0;

out_free_config:
	config_free(p.c);
	return p.err == -ENOMEM || line == -2 ? -ENOMEM : -EINVAL;
}

int config_load_string(struct config **out, const char *text, char *err, size_t errlen)
{
	return parse_text(out, "config text", text, strlen(text), err, errlen);
}

/* Reads all of path (at most CONFIG_FILE_MAX bytes) into a new buffer. */
static int read_file(const char *path, char **out, size_t *outlen, char *err, size_t errlen)
{
	char *buf;
	size_t len = 0;
	ssize_t n;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		errbuf_set(err, errlen, "cannot read config file '%s': %s", path,
			atoll_strerror(r));
		return r;
	}
	buf = malloc(CONFIG_FILE_MAX + 1);
	if (!buf) {
		r = -ENOMEM;
		errbuf_set(err, errlen, "cannot read config file '%s': %s", path,
			atoll_strerror(r));
		goto out_close_fd;
	}
	for (;;) {
		n = read(fd, buf + len, CONFIG_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			errbuf_set(err, errlen, "cannot read config file '%s': %s", path,
				atoll_strerror(r));
			goto out_free_buf;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CONFIG_FILE_MAX) {
			r = -EFBIG;
			errbuf_set(err, errlen,
				"config file '%s' is larger than %d bytes; is it the right file?",
				path, CONFIG_FILE_MAX);
			goto out_free_buf;
		}
	}
	close(fd);
	*out = buf;
	*outlen = len;
	return 0;

out_free_buf:
	free(buf);
out_close_fd:
	close(fd);
	return r;
}

int config_load(struct config **out, const char *path, char *err, size_t errlen)
{
	static const char *const search[] = { "./atoll.conf", "/etc/atoll/atoll.conf" };
	char what[512];
	char *text = NULL;
	size_t len = 0, i;
	int r;

	*out = NULL;
	if (!path) {
		/* $ATOLL_CONF names a file just as --conf does: if it is set,
		 * it must exist (a typo must not silently give defaults). */
		path = getenv("ATOLL_CONF");
		if (path && !*path)
			path = NULL;
		for (i = 0; !path && i < sizeof(search) / sizeof(search[0]); i++)
			if (access(search[i], F_OK) == 0)
				path = search[i];
		if (!path) {
			*out = config_new();
			if (!*out) {
				errbuf_set(err, errlen, "config: out of memory");
				return -ENOMEM;
			}
			return 0;
		}
	}
	r = read_file(path, &text, &len, err, errlen);
	if (r < 0)
		return r;
	snprintf(what, sizeof(what), "config file '%s'", path);
	r = parse_text(out, what, text, len, err, errlen);
	free(text);
	return r;
}

/* ---- writing ---- */

int config_write(const struct config *c, const char *path, char *err, size_t errlen)
{
	char tmp[4096];
	FILE *f;
	size_t i, j;
	int r, fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp)) {
		errbuf_set(err, errlen, "cannot write config file '%s': path too long", path);
		return -ENAMETOOLONG;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = -errno;
		errbuf_set(err, errlen, "cannot write config file '%s': %s", tmp,
			atoll_strerror(r));
		return r;
	}
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		errbuf_set(err, errlen, "cannot write config file '%s': %s", tmp,
			atoll_strerror(r));
		close(fd);
		goto out_unlink_tmp;
	}
	for (i = 0; i < c->n; i++) {
		const struct config_section *s = &c->sec[i];

		fprintf(f, "%s[%s]\n", i ? "\n" : "", s->name);
		for (j = 0; j < s->n; j++)
			fprintf(f, "%s = %s\n", s->kv[j].key, s->kv[j].value);
	}
	/* The file replaces the old one whole or not at all. */
	if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
		r = -errno;
		if (r == 0)
			r = -EIO;
		errbuf_set(err, errlen, "cannot write config file '%s': %s", tmp,
			atoll_strerror(r));
		fclose(f);
		goto out_unlink_tmp;
	}
	if (fclose(f) != 0) {
		r = -errno;
		errbuf_set(err, errlen, "cannot write config file '%s': %s", tmp,
			atoll_strerror(r));
		goto out_unlink_tmp;
	}
	if (rename(tmp, path) != 0) {
		r = -errno;
		errbuf_set(err, errlen, "cannot rename '%s' to '%s': %s", tmp, path,
			atoll_strerror(r));
		goto out_unlink_tmp;
	}
	return 0;

out_unlink_tmp:
	unlink(tmp);
	return r;
}
