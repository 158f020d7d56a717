/*
 * keyring.c - keyring files: the entity keys a daemon or client holds
 * (doc/security.md, "Keyring files").
 *
 * A small INI-like text format, close to what Ceph users know:
 *
 *   [client.admin]
 *   	key = <64 hex digits>
 *   	caps mon = allow *
 *
 * A file that group or others may read or write is refused before a
 * byte of it is read: a key that others can read is a key that others
 * have.  Writing goes through a 0600 temporary file renamed over the
 * old one, so a keyring is never seen half-written or with a wider mode.
 * The parser takes a buffer and its length and refuses anything it does
 * not understand with the line number (fuzzed: tests/fuzz/fuzz_auth.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"

#define LINE_MAX_LEN	(AUTH_CAPS_MAX + 64)

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

/* Trims s[0..*len) in place: returns the new start, *len updated. */
static const char *trim(const char *s, size_t *len)
{
	while (*len && is_space(*s)) {
		s++;
		(*len)--;
	}
	while (*len && is_space(s[*len - 1]))
		(*len)--;
	return s;
}

static struct keyring_entry *find_mut(struct keyring *kr, const char *name)
{
	for (uint32_t i = 0; i < kr->n; i++)
		if (!strcmp(kr->e[i].name, name))
			return &kr->e[i];
	return NULL;
}

const struct keyring_entry *keyring_find(const struct keyring *kr, const char *name)
{
	return find_mut((struct keyring *)kr, name);
}

static struct keyring_entry *append(struct keyring *kr, const char *name)
{
	struct keyring_entry *ne;

	if (kr->n >= KEYRING_ENTRIES_MAX)
		return NULL;
	ne = realloc(kr->e, (kr->n + 1) * sizeof(*ne));
	if (!ne)
		return NULL;
	kr->e = ne;
	ne = &kr->e[kr->n++];
	memset(ne, 0, sizeof(*ne));
	strcpy(ne->name, name);
	return ne;
}

static int set_caps(struct keyring_entry *en, const char *svc, size_t svclen,
		    const char *caps, size_t capslen)
{
	struct keyring_caps *c = NULL;

	if (!svclen || svclen >= sizeof(c->service) || capslen > AUTH_CAPS_MAX)
		return -E2BIG;
	if (memchr(caps, '\n', capslen) || memchr(svc, '\n', svclen) ||
	    memchr(caps, '\0', capslen) || memchr(svc, '\0', svclen))
		return -EINVAL;	/* one line each in the file */
	for (uint32_t i = 0; i < en->ncaps; i++)
		if (strlen(en->caps[i].service) == svclen &&
		    !memcmp(en->caps[i].service, svc, svclen))
			c = &en->caps[i];
	if (!c) {
		if (en->ncaps >= KEYRING_CAPS_MAX)
			return -ENOSPC;
		c = &en->caps[en->ncaps++];
	}
	memcpy(c->service, svc, svclen);
	c->service[svclen] = '\0';
	memcpy(c->caps, caps, capslen);
	c->caps[capslen] = '\0';
	return 0;
}

/* One line (without its newline) of a keyring. */
static int parse_line(struct keyring *kr, struct keyring_entry **cur, bool *has_key,
		      const char *s, size_t len, unsigned lineno, char *err, size_t errlen)
{
	const char *eq, *k, *v;
	size_t klen, vlen;
	char name[AUTH_NAME_MAX + 1];
	char hex[2 * AUTH_KEY_LEN + 1];

	s = trim(s, &len);
	if (!len || s[0] == '#' || s[0] == ';')
		return 0;
	if (memchr(s, '\0', len))
		return fail(err, errlen, -EINVAL, "line %u: a NUL byte", lineno);
	if (s[0] == '[') {
		if (*cur && !*has_key)
			return fail(err, errlen, -EINVAL, "line %u: entity '%s' has no key",
				    lineno, (*cur)->name);
		if (s[len - 1] != ']' || len - 2 > AUTH_NAME_MAX)
			return fail(err, errlen, -EINVAL, "line %u: a malformed [entity] line",
				    lineno);
		memcpy(name, s + 1, len - 2);
		name[len - 2] = '\0';
		if (auth_entity_check(name, NULL) < 0)
			return fail(err, errlen, -EINVAL,
				    "line %u: '%s' is not an entity name (mon., osd.N, "
				    "mds.NAME, client.NAME)", lineno, name);
		if (find_mut(kr, name))
			return fail(err, errlen, -EINVAL, "line %u: entity '%s' appears twice",
				    lineno, name);
		*cur = append(kr, name);
		if (!*cur)
			return fail(err, errlen, kr->n >= KEYRING_ENTRIES_MAX ? -ENOSPC : -ENOMEM,
				    "line %u: too many entities or out of memory", lineno);
		*has_key = false;
		return 0;
	}
	eq = memchr(s, '=', len);
	if (!eq)
		return fail(err, errlen, -EINVAL, "line %u: expected 'key = ...' or "
			    "'caps SERVICE = ...'", lineno);
	klen = (size_t)(eq - s);
	k = trim(s, &klen);
	vlen = len - (size_t)(eq - s) - 1;
	v = trim(eq + 1, &vlen);
	if (!*cur)
		return fail(err, errlen, -EINVAL, "line %u: a setting before any [entity]",
			    lineno);
	if (klen == 3 && !memcmp(k, "key", 3)) {
		if (vlen != 2 * AUTH_KEY_LEN)
			return fail(err, errlen, -EINVAL, "line %u: a key is 64 hex digits",
				    lineno);
		memcpy(hex, v, vlen);
		hex[vlen] = '\0';
		if (auth_key_from_hex(hex, (*cur)->key) < 0)
			return fail(err, errlen, -EINVAL, "line %u: a key is 64 hex digits",
				    lineno);
		auth_wipe(hex, sizeof(hex));
		*has_key = true;
		return 0;
	}
	if (klen > 5 && !memcmp(k, "caps", 4) && is_space(k[4])) {
		size_t svclen = klen - 5;
		const char *svc = trim(k + 5, &svclen);
		int r = set_caps(*cur, svc, svclen, v, vlen);

		if (r < 0)
			return fail(err, errlen, r, "line %u: caps too long or too many", lineno);
		return 0;
	}
	return fail(err, errlen, -EINVAL, "line %u: unknown setting '%.*s'", lineno,
		    (int)(klen > 32 ? 32 : klen), k);
}

int keyring_parse(const char *text, size_t len, struct keyring *kr,
		  char *err, size_t errlen)
{
	struct keyring_entry *cur = NULL;
	bool has_key = false;
	unsigned lineno = 0;
	size_t pos = 0;
	int r;

	memset(kr, 0, sizeof(*kr));
	if (len > KEYRING_FILE_MAX)
		return fail(err, errlen, -E2BIG, "over %u bytes", KEYRING_FILE_MAX);
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;

		lineno++;
		if (ll > LINE_MAX_LEN)
			return fail(err, errlen, -EINVAL, "line %u: too long", lineno);
		r = parse_line(kr, &cur, &has_key, text + pos, ll, lineno, err, errlen);
		if (r < 0)
			return r;
		pos += ll + (nl ? 1 : 0);
	}
	if (cur && !has_key)
		return fail(err, errlen, -EINVAL, "entity '%s' has no key", cur->name);
	return 0;
}

int keyring_load(const char *path, struct keyring *kr, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, r;

	memset(kr, 0, sizeof(*kr));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		r = -errno;
		return fail(err, errlen, r, "cannot open keyring '%s': %s", path, strerror(-r));
	}
	if (fstat(fd, &st) < 0) {
		r = fail(err, errlen, -errno, "cannot stat keyring '%s': %s", path,
			 strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		r = fail(err, errlen, -EINVAL, "keyring '%s' is not a regular file", path);
		goto out_close;
	}
	if (st.st_mode & 077) {
		r = fail(err, errlen, -EPERM, "keyring '%s' is readable by group or others "
			 "(mode %04o); fix it with: chmod 600 %s", path,
			 (unsigned)(st.st_mode & 07777), path);
		goto out_close;
	}
	if (st.st_size > KEYRING_FILE_MAX) {
		r = fail(err, errlen, -E2BIG, "keyring '%s' is over %u bytes", path,
			 KEYRING_FILE_MAX);
		goto out_close;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		r = fail(err, errlen, -ENOMEM, "out of memory reading keyring '%s'", path);
		goto out_close;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = fail(err, errlen, n < 0 ? -errno : -EIO, "cannot read keyring '%s'",
				 path);
			goto out_free;
		}
		got += (size_t)n;
	}
	r = keyring_parse(buf, got, kr, err, errlen);
	if (r < 0 && err && errlen) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", err);
		snprintf(err, errlen, "keyring '%s': %s", path, tmp);
	}
out_free:
	auth_wipe(buf, got);
	free(buf);
out_close:
	close(fd);
	return r;
}

void keyring_entry_write(FILE *f, const struct keyring_entry *en, bool with_key)
{
	char hex[2 * AUTH_KEY_LEN + 1];

	fprintf(f, "[%s]\n", en->name);
	if (with_key) {
		auth_key_to_hex(en->key, hex);
		fprintf(f, "\tkey = %s\n", hex);
		auth_wipe(hex, sizeof(hex));
	}
	for (uint32_t j = 0; j < en->ncaps && j < KEYRING_CAPS_MAX; j++)
		fprintf(f, "\tcaps %s = %s\n", en->caps[j].service, en->caps[j].caps);
}

int keyring_save(const char *path, const struct keyring *kr)
{
	char tmp[4096];
	FILE *f;
	int fd, r = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600) < 0) {	/* whatever the umask */
		r = -errno;
		close(fd);
		goto out_unlink;
	}
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		goto out_unlink;
	}
	for (uint32_t i = 0; i < kr->n; i++)
		keyring_entry_write(f, &kr->e[i], true);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0)
		r = -errno;
	if (fclose(f) != 0 && !r)
		r = -errno;
	if (r)
		goto out_unlink;
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto out_unlink;
	}
	return 0;

out_unlink:
	unlink(tmp);
	return r;
}

int keyring_set(struct keyring *kr, const char *name, const uint8_t key[AUTH_KEY_LEN])
{
	struct keyring_entry *en;

	if (auth_entity_check(name, NULL) < 0)
		return -EINVAL;
	en = find_mut(kr, name);
	if (!en) {
		if (kr->n >= KEYRING_ENTRIES_MAX)
			return -ENOSPC;
		en = append(kr, name);
		if (!en)
			return -ENOMEM;
	}
	memcpy(en->key, key, AUTH_KEY_LEN);
	return 0;
}

int keyring_set_caps(struct keyring *kr, const char *name, const char *service,
		     const char *caps)
{
	struct keyring_entry *en = find_mut(kr, name);

	if (!en)
		return -ENOENT;
	return set_caps(en, service, strlen(service), caps, strlen(caps));
}

int keyring_remove(struct keyring *kr, const char *name)
{
	struct keyring_entry *en = find_mut(kr, name);

	if (!en)
		return -ENOENT;
	memmove(en, en + 1, (size_t)(kr->e + kr->n - (en + 1)) * sizeof(*en));
	kr->n--;
	auth_wipe(&kr->e[kr->n], sizeof(*en));
	return 0;
}

void keyring_free(struct keyring *kr)
{
	if (!kr)
		return;
	auth_wipe(kr->e, kr->n * sizeof(*kr->e));
	free(kr->e);
	kr->e = NULL;
	kr->n = 0;
}
