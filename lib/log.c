/*
 * log.c - daemon logging: levels, timestamps, one line per event.
 *
 * Each event is formatted completely into one buffer and written with a
 * single write(2), so lines from several threads (and several processes
 * appending to one file) never interleave.  Logging stays off until a
 * program calls log_open(): the client library logs through the same
 * calls, and a client program that never opens the log must see nothing.
 *
 * Locking: log_lock (a rwlock) protects log_fd, log_owns_fd and
 * log_ident.  log_msg() holds it for reading across the write so that a
 * concurrent log_close() cannot close (and the kernel reuse) the fd under
 * it.  log_level is read without the lock on the fast path of
 * log_enabled(), so it is an atomic.
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LOG_IDENT_MAX	64
#define LOG_LINE_STACK	1024	/* most lines fit; longer ones use the heap */
#define LOG_LINE_MAX	(64 * 1024)	/* a longer message is cut short */

static pthread_rwlock_t log_lock = PTHREAD_RWLOCK_INITIALIZER;
static int log_fd = -1;			/* -1: logging is off */
static bool log_owns_fd;		/* we opened it, so we close it */
static char log_ident[LOG_IDENT_MAX] = "atoll";
static int log_level = -1;		/* atomic; -1 while off */

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "ERROR",
	[LOG_LVL_WARN] = "WARN",
	[LOG_LVL_INFO] = "INFO",
	[LOG_LVL_DEBUG] = "DEBUG",
	[LOG_LVL_TRACE] = "TRACE",
};

#define N_LEVELS ((int)(sizeof(level_names) / sizeof(level_names[0])))

/* Called with log_lock held for writing. */
static void log_close_locked(void)
{
	if (log_owns_fd && log_fd >= 0)
		close(log_fd);
	log_fd = -1;
	log_owns_fd = false;
	__atomic_store_n(&log_level, -1, __ATOMIC_RELEASE);
}

int log_open(const char *ident, enum log_level level, const char *path)
{
	int fd = STDERR_FILENO;

	if ((int)level < 0 || (int)level >= N_LEVELS)
		return -EINVAL;
	if (path) {
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
		if (fd < 0)
			return -errno;
	}
	pthread_rwlock_wrlock(&log_lock);
	log_close_locked();
	log_fd = fd;
	log_owns_fd = path != NULL;
	snprintf(log_ident, sizeof(log_ident), "%s", ident ? ident : "atoll");
	__atomic_store_n(&log_level, (int)level, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&log_lock);
	return 0;
}

void log_close(void)
{
	pthread_rwlock_wrlock(&log_lock);
	log_close_locked();
	pthread_rwlock_unlock(&log_lock);
}

void log_set_level(enum log_level level)
{
	if ((int)level < 0 || (int)level >= N_LEVELS)
		return;
	pthread_rwlock_rdlock(&log_lock);
	if (log_fd >= 0)	/* setting a level must not turn logging on */
		__atomic_store_n(&log_level, (int)level, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&log_lock);
}

int log_level_parse(const char *s)
{
	int i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < N_LEVELS; i++)
		if (strcasecmp(s, level_names[i]) == 0)
			return i;
	return -EINVAL;
}

int log_enabled(enum log_level level)
{
	return (int)level >= 0 &&
	       (int)level <= __atomic_load_n(&log_level, __ATOMIC_ACQUIRE);
}

bool log_to_stderr(void)
{
	bool r;

	pthread_rwlock_rdlock(&log_lock);
	r = log_fd == STDERR_FILENO;
	pthread_rwlock_unlock(&log_lock);
	return r;
}

/* Writes all of buf, retrying on EINTR and short writes (a pipe or a
 * nearly full disk); a line is still one write(2) in the normal case. */
static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;		/* nowhere left to report it */
		}
		buf += n;
		len -= (size_t)n;
	}
}

/* "2026-11-30T06:40:01.123456Z" into buf (at least 28 bytes). */
static int format_time(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	return snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
			tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
}

/* One event is one line: embedded line breaks become spaces so that a
 * message carrying a peer's or user's text cannot forge further lines. */
static void flatten(char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == '\n' || s[i] == '\r')
			s[i] = ' ';
}

void log_msg(enum log_level level, const char *subsys, const char *fmt, ...)
{
	char stack[LOG_LINE_STACK];
	char *line = stack;
	size_t size = sizeof(stack);
	char prefix[LOG_IDENT_MAX + 96];
	int plen, mlen;
	size_t len;
	va_list ap;

	if (!log_enabled(level))
		return;

	pthread_rwlock_rdlock(&log_lock);
	if (log_fd < 0)
		goto out_unlock;	/* closed since log_enabled() */

	plen = format_time(prefix, sizeof(prefix));
	plen += snprintf(prefix + plen, sizeof(prefix) - (size_t)plen,
			 " %s %s %s%s", log_ident, level_names[level],
			 subsys ? subsys : "", subsys ? ": " : "");
	if (plen >= (int)sizeof(prefix))	/* an absurdly long subsys */
		plen = (int)sizeof(prefix) - 1;

	va_start(ap, fmt);
	mlen = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (mlen < 0)
		mlen = 0;
	if (mlen > LOG_LINE_MAX)
		mlen = LOG_LINE_MAX;
	len = (size_t)plen + (size_t)mlen + 1;	/* + '\n' */
	if (len + 1 > size) {
		line = malloc(len + 1);
		if (!line) {
			/* Still say something rather than drop the event. */
			line = stack;
			len = size - 1;
		} else {
			size = len + 1;
		}
	}
	memcpy(line, prefix, (size_t)plen);
	va_start(ap, fmt);
	vsnprintf(line + plen, size - (size_t)plen, fmt, ap);
	va_end(ap);
	len = strlen(line);
	flatten(line + plen, len - (size_t)plen);
	/* A trailing newline in the message was flattened to a space. */
	while (len > (size_t)plen && line[len - 1] == ' ')
		len--;
	line[len++] = '\n';
	write_all(log_fd, line, len);
	if (line != stack)
		free(line);
out_unlock:
	pthread_rwlock_unlock(&log_lock);
}
