/*
 * fuse_daemon.h - atoll-fuse going to the background only once its file
 * system is mounted, so that `atoll-fuse MNT && cp x MNT/` never writes
 * into the folder under the mount, and a failure to connect or to mount
 * is the command's exit status, with its message on the terminal.
 */
#ifndef ATOLL_FUSE_DAEMON_H
#define ATOLL_FUSE_DAEMON_H

#include <stdbool.h>

/* Unless foreground: forks.  The parent waits until the child calls
 * fdm_ready() and exits 0, or exits 1 when the child ends first (it
 * failed and said why on stderr).  The child, in a session of its own,
 * returns 0 and goes on.  Threads do not survive fork(): call it before
 * starting any.  -errno if fork() or pipe() fails (nothing forked). */
int fdm_detach(bool foreground);

/* The child: the file system is mounted.  The waiting parent exits 0;
 * stdin, stdout and stderr go to /dev/null and the working folder to /
 * (no-op in the foreground). */
void fdm_ready(void);

#endif
