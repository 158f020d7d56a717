/*
 * errbuf.h - writing a failure's sentence into a caller's buffer.
 *
 * Parsers that run before any log or thread state exists (the config
 * file, atoll-nbd's TLS setup and export rules) report why they failed
 * through a (char *err, size_t errlen) pair; errbuf_set() fills it, and
 * does nothing when the caller passed no buffer.  Header-only, so that
 * small programs linking one parser need nothing else.
 */
#ifndef ATOLL_ERRBUF_H
#define ATOLL_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

__attribute__((format(printf, 3, 4)))
static inline void errbuf_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

#endif
