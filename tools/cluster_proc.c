/*
 * cluster_proc.c - starting, watching and stopping daemon processes.
 *
 * Daemons are started in their own session (setsid) so that a Ctrl-C at
 * the terminal that ran `atoll-cluster up` does not reach them, with
 * stdin from /dev/null and stdout+stderr appended to D/log/NAME.log.
 * A daemon is identified by its PID *and* its start time from
 * /proc/PID/stat: atoll-cluster often runs long after the daemons were
 * started (`down` in another shell, a day later), when a PID may belong
 * to someone else.  A zombie counts as gone.
 */
#include "cluster.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Finds a daemon binary: $ATOLL_BIN_DIR, the folder of this program
 * (installed layout), its ../mon, ../osd, ... (the build folder), PATH. */
int cl_find_binary(const char *name, char *out, size_t len)
{
	static const char *const rel[] = { "", "../mon/", "../osd/", "../tools/",
					   "../blockdev/nbd/", "../posixfs/" };
	char self[PATH_MAX], *dir;
	const char *env = getenv("ATOLL_BIN_DIR"), *path;
	ssize_t n;

	if (env && *env) {
		snprintf(out, len, "%s/%s", env, name);
		if (access(out, X_OK) == 0)
			return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		dir = dirname(self);
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(out, len, "%s/%s%s", dir, rel[i], name);
			if (access(out, X_OK) == 0)
				return 0;
		}
	}
	path = getenv("PATH");
	while (path && *path) {
		size_t l = strcspn(path, ":");

		snprintf(out, len, "%.*s/%s", (int)l, path, name);
		if (l && access(out, X_OK) == 0)
			return 0;
		path += l + (path[l] == ':');
	}
	cl_err("cannot find '%s' next to atoll-cluster or in PATH; build it "
	       "(ninja) or set ATOLL_BIN_DIR to the folder holding it", name);
	return -ENOENT;
}

/* Binds port (0: the kernel picks) on sa's address and lets it go: the
 * port that was free (> 0), 0 when port is taken, < 0 an error. */
static int port_probe(struct sockaddr_in *sa, int port)
{
	socklen_t sl = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int r;

	if (fd < 0)
		return -errno;
	sa->sin_port = htons((uint16_t)port);
	if (bind(fd, (struct sockaddr *)sa, sizeof(*sa)) != 0)
		r = port ? 0 : -errno;
	else if (getsockname(fd, (struct sockaddr *)sa, &sl) != 0)
		r = -errno;
	else
		r = ntohs(sa->sin_port);
	close(fd);
	return r;
}

/* The lowest port of the kernel's ephemeral range (where connect() takes
 * its source ports), 32768 when it cannot be read. */
static int ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
	int lo = 32768, hi;

	if (f) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	return lo;
}

/* A TCP port free on ip right now, below the kernel's ephemeral range.
 * Not port 0's pick: that comes from the ephemeral range, and once a
 * daemon on such a port stops (`mds kill`), any outgoing connection on
 * the machine -- a client reconnecting to that very daemon even, which
 * then connects to itself -- may take the port as its source port and
 * the restarted daemon cannot bind it.  Ports below the range are never
 * handed out by connect().  (Another program may still take the port
 * before the daemon binds it; the daemon then fails to start and `up`
 * reports it with the log.) */
int cl_free_port(const char *ip)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int lo = 10000, hi = ephemeral_low() - 1;
	/* the ports this process handed out: a daemon binds its port only
	 * when it starts, so a second pick must not return it meanwhile */
	static int given[64];
	static unsigned int ngiven, seed;

	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return -EINVAL;
	if (!seed)
		seed = (unsigned int)getpid() ^ (unsigned int)(mono_now_s() * 1e6) ^ 1u;
	for (int i = 0; hi - lo >= 1000 && i < 500; i++) {
		int p = lo + (int)(rand_r(&seed) % (unsigned int)(hi - lo + 1));
		bool seen = false;

		for (unsigned int g = 0; g < ngiven && g < 64; g++)
			seen |= given[g] == p;
		if (seen)
			continue;
		int r = port_probe(&sa, p);
		if (r > 0)
			given[ngiven++ % 64] = r;
		if (r)
			return r;
	}
	/* a machine whose ephemeral range leaves no room below: port 0 */
	return port_probe(&sa, 0);
}

int cl_proc_start_time(pid_t pid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	char state;
	long threads;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	/* the command name is in parentheses and may hold spaces */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	/* fields after ")": state(3) ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime stime cutime cstime priority nice
	 * num_threads itrealvalue starttime(22) */
	if (sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
		   "%*d %*d %*d %*d %ld %*d %llu", &state, &threads, start) != 3)
		return -EIO;
	/* A killed process's first thread can be a zombie while its other
	 * threads are still exiting: the last of them tears the memory down
	 * (long for a sanitizer build's) and only then closes the files, its
	 * listening socket among them.  So it is gone only once it is a
	 * zombie with no other thread left. */
	if (state == 'X' || (state == 'Z' && threads <= 1))
		return -ESRCH;
	return 0;
}

bool cl_alive(const struct cl_daemon *d)
{
	unsigned long long start;

	if (d->pid <= 0)
		return false;
	if (cl_proc_start_time(d->pid, &start) != 0)
		return false;
	return start == d->start;
}

static int open_log(const char *logpath)
{
	int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		cl_err("cannot open the log '%s': %s", logpath, strerror(errno));
	return fd;
}

/* In the child: stdin /dev/null, stdout outfd, stderr errfd, own session,
 * and no other descriptor of the caller's: a daemon must not hold what
 * the shell that started it had open (a file on an atoll mount kept open
 * by the MDS that serves it, for one). */
static void child_exec(const char *const argv[], int outfd, int errfd)
{
	int null = open("/dev/null", O_RDONLY);

	setsid();
	if (null >= 0)
		dup2(null, 0);
	dup2(outfd, 1);
	dup2(errfd, 2);
	if (close_range(3, ~0u, 0) != 0) {
		long max = sysconf(_SC_OPEN_MAX);

		for (long fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
			close((int)fd);
	}
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	execv(argv[0], (char *const *)argv);
	dprintf(2, "atoll-cluster: cannot run '%s': %s\n", argv[0], strerror(errno));
	_exit(127);
}

static void log_command(int fd, const char *const argv[])
{
	time_t t = time(NULL);
	char ts[32];

	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
	dprintf(fd, "---- %s atoll-cluster runs:", ts);
	for (int i = 0; argv[i]; i++)
		dprintf(fd, " %s", argv[i]);
	dprintf(fd, "\n");
}

int cl_spawn(const char *const argv[], const char *logpath, pid_t *pid)
{
	int fd = open_log(logpath);
	pid_t p;

	if (fd < 0)
		return -EIO;
	log_command(fd, argv);
	p = fork();
	if (p < 0) {
		int err = -errno;

		close(fd);
		cl_err("cannot start '%s': %s", argv[0], strerror(-err));
		return err;
	}
	if (p == 0)
		child_exec(argv, fd, fd);
	close(fd);
	*pid = p;
	return 0;
}

/* Runs a command to completion (at most timeout_s), its stderr to the log
 * and its stdout into out (also copied to the log).  Returns its exit
 * status (0 = success), or a negative errno. */
int cl_run_capture(const char *const argv[], const char *logpath, int timeout_s,
		   char *out, size_t outlen)
{
	int fd = open_log(logpath), pfd[2], status, ret;
	size_t used = 0;
	double deadline = mono_now_s() + timeout_s;
	pid_t p;

	if (fd < 0)
		return -EIO;
	log_command(fd, argv);
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		ret = -errno;
		goto out_close_log;
	}
	p = fork();
	if (p < 0) {
		ret = -errno;
		close(pfd[0]);
		close(pfd[1]);
		goto out_close_log;
	}
	if (p == 0)
		child_exec(argv, pfd[1], fd);
	close(pfd[1]);
	out[0] = 0;
	for (;;) {
		struct pollfd pf = { .fd = pfd[0], .events = POLLIN };
		char buf[512];
		ssize_t n;
		int left = (int)((deadline - mono_now_s()) * 1000);

		if (left <= 0 || cl_interrupted) {
			kill(p, SIGKILL);
			waitpid(p, NULL, 0);
			close(pfd[0]);
			cl_err("'%s' did not finish within %d s; see '%s'",
			       argv[0], timeout_s, logpath);
			ret = -ETIMEDOUT;
			goto out_close_log;
		}
		if (poll(&pf, 1, left > 200 ? 200 : left) <= 0)
			continue;
		n = read(pfd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (write(fd, buf, n) < 0) {
			/* the copy in the log is best effort */
		}
		if (used + 1 < outlen) {
			size_t c = (size_t)n < outlen - 1 - used ? (size_t)n : outlen - 1 - used;

			memcpy(out + used, buf, c);
			used += c;
			out[used] = 0;
		}
	}
	close(pfd[0]);
	while (waitpid(p, &status, 0) < 0 && errno == EINTR)
		;
	ret = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out_close_log:
	close(fd);
	return ret;
}

/* Prints the last lines of a log to stderr (for failures). */
void cl_log_tail(const char *path, int lines)
{
	char *buf = NULL, *p;
	long size, from;
	int seen = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	from = size > 16384 ? size - 16384 : 0;
	fseek(f, from, SEEK_SET);
	buf = calloc(1, size - from + 1);
	if (buf && fread(buf, 1, size - from, f) == (size_t)(size - from)) {
		p = buf + (size - from);
		while (p > buf && (p[-1] == '\n'))
			p--;
		while (p > buf && seen < lines) {
			p--;
			if (*p == '\n')
				seen++;
		}
		if (*p == '\n')
			p++;
		fprintf(stderr, "---- last lines of %s:\n%s", path, p);
		if (size > from && buf[size - from - 1] != '\n')
			fputc('\n', stderr);
		fprintf(stderr, "----\n");
	}
	free(buf);
	fclose(f);
}

static int try_connect(const char *ip, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd, ret;

	inet_pton(AF_INET, ip, &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : -errno;
	close(fd);
	return ret;
}

/* Waits until the daemon accepts TCP connections on its port.  child is
 * its PID when we are its parent (to notice at once that it exited). */
int cl_wait_listening(const struct cl_daemon *d, pid_t child, int timeout_s,
		      const char *logpath)
{
	double deadline = mono_now_s() + timeout_s;
	int status;

	for (;;) {
		if (try_connect(d->ip, d->port) == 0)
			return 0;
		if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
			cl_err("%s exited (%s %d) before it listened on %s:%d",
			       d->name, WIFEXITED(status) ? "status" : "signal",
			       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			       d->ip, d->port);
			cl_log_tail(logpath, 20);
			return -ECHILD;
		}
		if (cl_interrupted)
			return -EINTR;
		if (mono_now_s() > deadline) {
			cl_err("%s does not listen on %s:%d after %d s", d->name,
			       d->ip, d->port, timeout_s);
			cl_log_tail(logpath, 20);
			return -ETIMEDOUT;
		}
		sleep_ms(50);
	}
}

/* Whether the log holds, after byte from, a line starting with prefix
 * (the rest of it copied to out). */
static bool log_has_line(const char *logpath, long from, const char *prefix,
			 char *out, size_t outlen)
{
	FILE *f = fopen(logpath, "r");
	char line[512];
	size_t pl = strlen(prefix);
	bool found = false;

	if (!f)
		return false;
	if (fseek(f, from, SEEK_SET) == 0) {
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, prefix, pl) != 0 || !strchr(line, '\n'))
				continue;
			line[strcspn(line, "\n")] = 0;
			snprintf(out, outlen, "%s", line + pl);
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

int cl_wait_line(const struct cl_daemon *d, pid_t child, int timeout_s,
		 const char *logpath, long from, const char *prefix,
		 char *out, size_t outlen)
{
	double deadline = mono_now_s() + timeout_s;
	int status;

	for (;;) {
		if (log_has_line(logpath, from, prefix, out, outlen))
			return 0;
		if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
			cl_err("%s exited (%s %d) before it printed '%s...'",
			       d->name, WIFEXITED(status) ? "status" : "signal",
			       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			       prefix);
			cl_log_tail(logpath, 20);
			return -ECHILD;
		}
		if (cl_interrupted)
			return -EINTR;
		if (mono_now_s() > deadline) {
			cl_err("%s did not print '%s...' within %d s", d->name, prefix,
			       timeout_s);
			cl_log_tail(logpath, 20);
			return -ETIMEDOUT;
		}
		sleep_ms(50);
	}
}

/* Waits until the daemon is gone, SIGKILL after timeout_s (sig names
 * what was sent, for the message).  Reaps it when it is our child. */
static int wait_gone(struct cl_daemon *d, int sig, int timeout_s)
{
	double deadline = mono_now_s() + timeout_s;

	for (;;) {
		waitpid(d->pid, NULL, WNOHANG);
		if (!cl_alive(d))
			break;
		if (mono_now_s() > deadline) {
			cl_err("%s (pid %ld) did not stop within %d s of %s; killing it",
			       d->name, (long)d->pid, timeout_s, strsignal(sig));
			kill(d->pid, SIGKILL);
			deadline = mono_now_s() + 10;
			while (cl_alive(d) && mono_now_s() < deadline) {
				waitpid(d->pid, NULL, WNOHANG);
				sleep_ms(20);
			}
			if (cl_alive(d)) {
				cl_err("%s (pid %ld) survives SIGKILL", d->name, (long)d->pid);
				return -EBUSY;
			}
			break;
		}
		sleep_ms(20);
	}
	d->pid = 0;
	d->start = 0;
	return 0;
}

/* Sends sig to the daemon (if it is still the process we started) and
 * waits until it is gone; SIGKILL after timeout_s.  d->pid becomes 0. */
int cl_stop(struct cl_daemon *d, int sig, int timeout_s)
{
	if (!cl_alive(d)) {
		if (d->pid > 0)
			waitpid(d->pid, NULL, WNOHANG);
		d->pid = 0;
		d->start = 0;
		return 0;
	}
	kill(d->pid, sig);
	return wait_gone(d, sig, timeout_s);
}

/* Stops every daemon: the OSDs first (SIGTERM, in parallel, so each tells
 * the monitor it goes down), then the monitor. */
int cl_stop_all(struct cl_state *st, int timeout_s)
{
	int ret = 0, left;

	for (int pass = 0; pass < 2; pass++) {
		enum cl_kind kind = pass == 0 ? CL_OSD : CL_MON;
		double deadline = mono_now_s() + timeout_s;

		for (int i = 0; i < st->n; i++) {
			if (st->d[i].kind != kind)
				continue;
			if (cl_alive(&st->d[i]))
				kill(st->d[i].pid, SIGTERM);
			else
				st->d[i].pid = 0, st->d[i].start = 0;
		}
		for (int i = 0; i < st->n; i++) {
			if (st->d[i].kind != kind || st->d[i].pid == 0)
				continue;
			left = (int)(deadline - mono_now_s());
			if (wait_gone(&st->d[i], SIGTERM, left > 1 ? left : 1) != 0)
				ret = -EBUSY;
		}
	}
	return ret;
}
