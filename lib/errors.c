/*
 * errors.c - atoll_strerror(): a sentence for every errno value.
 *
 * The library never prints, so the caller needs a string for each error
 * it gets back.  We keep our own table rather than calling strerror():
 * the strings are static and thread-safe, they read the same on every
 * libc and locale, and the errors atoll gives a specific meaning (a
 * checksum mismatch is -EIO, a full pool -ENOSPC, a newer on-disk or
 * on-wire format -EPROTONOSUPPORT) say so.  Lower case, no full stop,
 * so they can be embedded in a longer message.
 *
 * atoll_last_error() adds the detail an errno cannot carry (which line of
 * which config file, which flag): failure paths record a sentence with
 * atoll__error() in a thread-local buffer, as libnbd's nbd_get_error()
 * does, so that threads sharing a handle never see each other's errors.
 */
#include "atoll/atoll.h"
#include "errors.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#ifndef EHWPOISON
#define EHWPOISON 133
#endif

static const char *const error_text[] = {
	[0]		= "success",
	[EPERM]		= "operation not permitted",
	[ENOENT]	= "no such object, file or directory",
	[ESRCH]		= "no such process",
	[EINTR]		= "interrupted by a signal",
	[EIO]		= "input/output error or checksum mismatch",
	[ENXIO]		= "no such device or address",
	[E2BIG]		= "argument or length too large",
	[ENOEXEC]	= "exec format error",
	[EBADF]		= "bad file descriptor",
	[ECHILD]	= "no child processes",
	[EAGAIN]	= "resource temporarily unavailable; try again",
	[ENOMEM]	= "out of memory",
	[EACCES]	= "permission denied",
	[EFAULT]	= "bad address",
	[ENOTBLK]	= "block device required",
	[EBUSY]		= "device or resource busy",
	[EEXIST]	= "object, file or name already exists",
	[EXDEV]		= "invalid cross-device link",
	[ENODEV]	= "no such device",
	[ENOTDIR]	= "not a directory",
	[EISDIR]	= "is a directory",
	[EINVAL]	= "invalid argument",
	[ENFILE]	= "too many open files in the system",
	[EMFILE]	= "too many open files in this process",
	[ENOTTY]	= "inappropriate ioctl for device",
	[ETXTBSY]	= "text file busy",
	[EFBIG]		= "object or file too large",
	[ENOSPC]	= "no space left on the device, or the pool is full",
	[ESPIPE]	= "illegal seek",
	[EROFS]		= "read-only file system or store",
	[EMLINK]	= "too many links",
	[EPIPE]		= "broken pipe",
	[EDOM]		= "numerical argument out of domain",
	[ERANGE]	= "value out of range",
	[EDEADLK]	= "resource deadlock avoided",
	[ENAMETOOLONG]	= "name too long",
	[ENOLCK]	= "no locks available",
	[ENOSYS]	= "function not implemented",
	[ENOTEMPTY]	= "directory or collection not empty",
	[ELOOP]		= "too many levels of symbolic links",
	[ENOMSG]	= "no message of the desired type",
	[EIDRM]		= "identifier removed",
	[ECHRNG]	= "channel number out of range",
	[EL2NSYNC]	= "level 2 not synchronized",
	[EL3HLT]	= "level 3 halted",
	[EL3RST]	= "level 3 reset",
	[ELNRNG]	= "link number out of range",
	[EUNATCH]	= "protocol driver not attached",
	[ENOCSI]	= "no CSI structure available",
	[EL2HLT]	= "level 2 halted",
	[EBADE]		= "invalid exchange",
	[EBADR]		= "invalid request descriptor",
	[EXFULL]	= "exchange full",
	[ENOANO]	= "no anode",
	[EBADRQC]	= "invalid request code",
	[EBADSLT]	= "invalid slot",
	[EBFONT]	= "bad font file format",
	[ENOSTR]	= "device not a stream",
	[ENODATA]	= "no data available",
	[ETIME]		= "timer expired",
	[ENOSR]		= "out of streams resources",
	[ENONET]	= "machine is not on the network",
	[ENOPKG]	= "package not installed",
	[EREMOTE]	= "object is remote",
	[ENOLINK]	= "link has been severed",
	[EADV]		= "advertise error",
	[ESRMNT]	= "srmount error",
	[ECOMM]		= "communication error on send",
	[EPROTO]	= "protocol error: the peer sent something unexpected",
	[EMULTIHOP]	= "multihop attempted",
	[EDOTDOT]	= "RFS specific error",
	[EBADMSG]	= "malformed message or on-disk record",
	[EOVERFLOW]	= "value too large for its data type",
	[ENOTUNIQ]	= "name not unique on the network",
	[EBADFD]	= "file descriptor in bad state",
	[EREMCHG]	= "remote address changed",
	[ELIBACC]	= "cannot access a needed shared library",
	[ELIBBAD]	= "accessing a corrupted shared library",
	[ELIBSCN]	= ".lib section in a.out corrupted",
	[ELIBMAX]	= "attempting to link in too many shared libraries",
	[ELIBEXEC]	= "cannot exec a shared library directly",
	[EILSEQ]	= "invalid or incomplete multibyte character",
	[ERESTART]	= "interrupted system call should be restarted",
	[ESTRPIPE]	= "streams pipe error",
	[EUSERS]	= "too many users",
	[ENOTSOCK]	= "socket operation on non-socket",
	[EDESTADDRREQ]	= "destination address required",
	[EMSGSIZE]	= "message too long",
	[EPROTOTYPE]	= "protocol wrong type for socket",
	[ENOPROTOOPT]	= "protocol not available",
	[EPROTONOSUPPORT] = "format or protocol version newer than this version of atoll supports",
	[ESOCKTNOSUPPORT] = "socket type not supported",
	[EOPNOTSUPP]	= "operation not supported",
	[EPFNOSUPPORT]	= "protocol family not supported",
	[EAFNOSUPPORT]	= "address family not supported by protocol",
	[EADDRINUSE]	= "address already in use",
	[EADDRNOTAVAIL]	= "cannot assign requested address",
	[ENETDOWN]	= "network is down",
	[ENETUNREACH]	= "network is unreachable",
	[ENETRESET]	= "network dropped connection on reset",
	[ECONNABORTED]	= "connection aborted",
	[ECONNRESET]	= "connection reset by peer",
	[ENOBUFS]	= "no buffer space available",
	[EISCONN]	= "already connected",
	[ENOTCONN]	= "not connected",
	[ESHUTDOWN]	= "cannot send after shutdown",
	[ETOOMANYREFS]	= "too many references",
	[ETIMEDOUT]	= "operation timed out",
	[ECONNREFUSED]	= "connection refused",
	[EHOSTDOWN]	= "host is down",
	[EHOSTUNREACH]	= "no route to host",
	[EALREADY]	= "operation already in progress",
	[EINPROGRESS]	= "operation now in progress",
	[ESTALE]	= "stale handle or cluster map",
	[EUCLEAN]	= "structure needs cleaning: the store is inconsistent; run fsck",
	[ENOTNAM]	= "not a XENIX named type file",
	[ENAVAIL]	= "no XENIX semaphores available",
	[EISNAM]	= "is a named type file",
	[EREMOTEIO]	= "remote input/output error",
	[EDQUOT]	= "quota exceeded",
	[ENOMEDIUM]	= "no medium found",
	[EMEDIUMTYPE]	= "wrong medium type",
	[ECANCELED]	= "operation canceled",
	[ENOKEY]	= "required key not available",
	[EKEYEXPIRED]	= "key has expired",
	[EKEYREVOKED]	= "key has been revoked",
	[EKEYREJECTED]	= "key was rejected by service",
	[EOWNERDEAD]	= "owner died",
	[ENOTRECOVERABLE] = "state not recoverable",
	[ERFKILL]	= "operation not possible due to RF-kill",
	[EHWPOISON]	= "memory page has hardware error",
};

const char *atoll_strerror(int err)
{
	unsigned int e;

	/* Negate in unsigned arithmetic: -INT_MIN would overflow. */
	e = err < 0 ? 0u - (unsigned int)err : (unsigned int)err;
	if (e < sizeof(error_text) / sizeof(error_text[0]) && error_text[e])
		return error_text[e];
	return "unknown error";
}

/* This thread's last failure message; "" until one is recorded. */
static __thread char last_error[1024];

const char *atoll_last_error(void)
{
	return last_error;
}

int atoll__error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}

int atoll__check_flags(const char *call, unsigned flags, unsigned known)
{
	if (flags & ~known)
		return atoll__error(-EINVAL, "%s: unknown flags 0x%x (this version knows 0x%x)",
				    call, flags & ~known, known);
	return 0;
}
