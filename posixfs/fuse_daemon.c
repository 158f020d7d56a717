/*
 * fuse_daemon.c - atoll-fuse's move to the background, after the mount.
 *
 * libfuse's fuse_daemonize() returns the parent at once.  atoll-fuse must
 * fork before it connects (its cluster and messenger threads would not
 * survive a fork), so with fuse_daemonize() the command returned before
 * the mount existed: a script's next `mkdir MNT/x` went into the folder
 * under the mount, and a cluster that could not be reached still gave
 * exit status 0.  Here the parent waits on a pipe: the child writes one
 * byte once fuse_session_mount() succeeded; if it exits first, the pipe
 * reads as closed and the parent exits 1 (the child's stderr, still the
 * terminal's, said why).
 */
#include "fuse_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int ready_fd = -1;	/* the child's end of the pipe */

int fdm_detach(bool foreground)
{
	int p[2];
	pid_t pid;

	if (foreground)
		return 0;
	if (pipe(p) != 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid > 0) {
		char c;
		ssize_t n;

		close(p[1]);
		do
			n = read(p[0], &c, 1);
		while (n < 0 && errno == EINTR);
		/* a child that failed has exited: reap it */
		if (n != 1)
			waitpid(pid, NULL, 0);
		_exit(n == 1 ? 0 : 1);
	}
	close(p[0]);
	ready_fd = p[1];
	setsid();
	return 0;
}

void fdm_ready(void)
{
	const char c = 0;
	int nul;
	ssize_t n;

	if (ready_fd < 0)
		return;
	nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDOUT_FILENO);
		dup2(nul, STDERR_FILENO);
		if (nul > STDERR_FILENO)
			close(nul);
	}
	if (chdir("/") != 0) {
		/* "/" always exists; nothing to do */
	}
	do
		n = write(ready_fd, &c, 1);
	while (n < 0 && errno == EINTR);
	close(ready_fd);
	ready_fd = -1;
}
