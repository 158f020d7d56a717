/*
 * log.h - daemon logging: levels, timestamps, one line per event.
 *
 * A line looks like
 *   2026-11-30T06:40:01.123456Z osd.3 WARN store: checksum mismatch in 'obj'
 * Logging is off until a program calls log_open(): library code may log
 * (at debug level, or when something is wrong) but a client program that
 * never opens the log sees nothing printed.  Thread-safe: one write(2) per
 * line, so lines from several threads never interleave.
 */
#ifndef ATOLL_LOG_H
#define ATOLL_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARN = 1,
	LOG_LVL_INFO = 2,
	LOG_LVL_DEBUG = 3,
	LOG_LVL_TRACE = 4,
};

/* Starts logging at level and below, to path (appended) or to stderr
 * when path is NULL.  ident names the program ("osd.3", "mon.a").
 * Returns 0 or a negative errno (the file cannot be opened). */
int log_open(const char *ident, enum log_level level, const char *path);
void log_close(void);
void log_set_level(enum log_level level);
/* "error", "warn", "info", "debug", "trace" -> level; -EINVAL otherwise. */
int log_level_parse(const char *s);
/* True when a message at level would be written. */
int log_enabled(enum log_level level);
/* True when the log is open on stderr (log_open() with a NULL path), so
 * that a report meant for both the log and stderr is printed only once. */
bool log_to_stderr(void);
void log_msg(enum log_level level, const char *subsys, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_error(sub, ...) log_msg(LOG_LVL_ERROR, sub, __VA_ARGS__)
#define log_warn(sub, ...)  log_msg(LOG_LVL_WARN, sub, __VA_ARGS__)
#define log_info(sub, ...)  log_msg(LOG_LVL_INFO, sub, __VA_ARGS__)
#define log_debug(sub, ...) do { if (log_enabled(LOG_LVL_DEBUG)) \
	log_msg(LOG_LVL_DEBUG, sub, __VA_ARGS__); } while (0)

#endif
