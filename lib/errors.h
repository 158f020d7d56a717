/*
 * errors.h - recording the message that atoll_last_error() returns.
 *
 * Library code that fails with a reason worth more than its errno (a
 * config file's line, an unknown flag, the monitor that did not answer)
 * records it here on the calling thread, then returns the errno.
 */
#ifndef ATOLL_ERRORS_H
#define ATOLL_ERRORS_H

/* Records the message (printf format) as this thread's last error and
 * returns err, so that a failure path reads
 *	return atoll__error(-EINVAL, "pool name is empty");
 * The message is cut at 1 KiB. */
__attribute__((format(printf, 2, 3)))
int atoll__error(int err, const char *fmt, ...);

/* The check every call with a flags argument makes: 0 when flags has no
 * bit outside known, else -EINVAL with a message naming the call. */
int atoll__check_flags(const char *call, unsigned flags, unsigned known);

#endif
