/*
 * test_log.c - lib/log.c and lib/atoll_assert.c: line format, level filter,
 * files and stderr, logging off until opened, one line per event from
 * many threads, and the report an ATOLL_ASSERT failure leaves.
 *
 * Criterion runs each test in its own process, so the logger's global
 * state starts fresh (off) in every test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atoll_assert.h"
#include "log.h"

#define LINE_RE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z "

/* A fresh temporary file name (the file is created empty). */
static char *temp_path(void)
{
	char *path = strdup("/tmp/atoll-test-log-XXXXXX");
	int fd;

	cr_assert_not_null(path);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	return path;
}

/* The whole file as a string (caller frees); path is unlinked. */
static char *slurp(char *path)
{
	char *buf = malloc(1 << 22);
	size_t n;
	FILE *f;

	cr_assert_not_null(buf);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	n = fread(buf, 1, (1 << 22) - 1, f);
	buf[n] = '\0';
	fclose(f);
	unlink(path);
	free(path);
	return buf;
}

static bool matches(const char *re, const char *s)
{
	regex_t rx;
	int r;

	cr_assert_eq(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB | REG_NEWLINE), 0);
	r = regexec(&rx, s, 0, NULL, 0);
	regfree(&rx);
	return r == 0;
}

/* Points fd 2 at a new temporary file; returns its path. */
static char *capture_stderr(void)
{
	char *path = temp_path();
	int fd = open(path, O_WRONLY | O_APPEND);

	cr_assert_geq(fd, 0);
	cr_assert_geq(dup2(fd, STDERR_FILENO), 0);
	close(fd);
	return path;
}

Test(log, line_has_timestamp_ident_level_subsystem_and_message)
{
	char *path = temp_path();
	char *out;

	cr_assert_eq(log_open("osd.3", LOG_LVL_INFO, path), 0);
	log_warn("store", "checksum mismatch in '%s'", "obj");
	log_close();
	out = slurp(path);
	cr_expect(matches(LINE_RE "osd\\.3 WARN store: checksum mismatch in 'obj'\n$", out),
		  "got: %s", out);
	free(out);
}

Test(log, timestamp_is_utc_and_current)
{
	char *path = temp_path();
	struct tm tm = { 0 };
	time_t now = time(NULL), t;
	char *out;

	cr_assert_eq(log_open("t", LOG_LVL_INFO, path), 0);
	log_info("x", "now");
	log_close();
	out = slurp(path);
	cr_assert_not_null(strptime(out, "%Y-%m-%dT%H:%M:%S", &tm));
	t = timegm(&tm);
	cr_expect(t >= now - 5 && t <= now + 5, "log time %ld, now %ld", (long)t, (long)now);
	free(out);
}

Test(log, messages_above_the_level_are_dropped)
{
	char *path = temp_path();
	char *out;

	cr_assert_eq(log_open("t", LOG_LVL_WARN, path), 0);
	cr_expect(log_enabled(LOG_LVL_ERROR));
	cr_expect(log_enabled(LOG_LVL_WARN));
	cr_expect_not(log_enabled(LOG_LVL_INFO));
	log_error("a", "one");
	log_warn("a", "two");
	log_info("a", "three");
	log_debug("a", "four");
	log_msg(LOG_LVL_TRACE, "a", "five");
	log_close();
	out = slurp(path);
	cr_expect(matches("ERROR a: one\n", out));
	cr_expect(matches("WARN a: two\n", out));
	cr_expect_null(strstr(out, "three"));
	cr_expect_null(strstr(out, "four"));
	cr_expect_null(strstr(out, "five"));
	free(out);
}

Test(log, set_level_changes_the_filter)
{
	char *path = temp_path();
	char *out;

	cr_assert_eq(log_open("t", LOG_LVL_ERROR, path), 0);
	log_debug("a", "hidden");
	log_set_level(LOG_LVL_DEBUG);
	log_debug("a", "shown");
	log_close();
	out = slurp(path);
	cr_expect_null(strstr(out, "hidden"));
	cr_expect(matches("DEBUG a: shown\n", out));
	free(out);
}

Test(log, nothing_is_written_before_log_open)
{
	char *path = capture_stderr();
	char *out;

	cr_expect_not(log_enabled(LOG_LVL_ERROR));
	log_error("a", "must not appear");
	log_set_level(LOG_LVL_TRACE);
	cr_expect_not(log_enabled(LOG_LVL_ERROR), "set_level must not open the log");
	log_error("a", "must not appear");
	out = slurp(path);
	cr_expect_str_eq(out, "");
	free(out);
}

Test(log, nothing_is_written_after_log_close)
{
	char *path = temp_path();
	char *out;

	cr_assert_eq(log_open("t", LOG_LVL_INFO, path), 0);
	log_close();
	log_error("a", "late");
	cr_expect_not(log_enabled(LOG_LVL_ERROR));
	out = slurp(path);
	cr_expect_str_eq(out, "");
	free(out);
}

Test(log, null_path_logs_to_stderr)
{
	char *path = capture_stderr();
	char *out;

	cr_assert_eq(log_open("mon.a", LOG_LVL_INFO, NULL), 0);
	cr_expect(log_to_stderr());
	log_info("paxos", "elected");
	log_close();
	out = slurp(path);
	cr_expect(matches(LINE_RE "mon\\.a INFO paxos: elected\n$", out), "got: %s", out);
	free(out);
}

Test(log, file_is_appended_to)
{
	char *path = temp_path();
	FILE *f = fopen(path, "w");
	char *out;

	cr_assert_not_null(f);
	fputs("earlier line\n", f);
	fclose(f);
	cr_assert_eq(log_open("t", LOG_LVL_INFO, path), 0);
	log_info("a", "later");
	log_close();
	out = slurp(path);
	cr_expect(matches("^earlier line\n.*INFO a: later\n$", out), "got: %s", out);
	free(out);
}

Test(log, unopenable_path_is_an_error)
{
	cr_expect_eq(log_open("t", LOG_LVL_INFO, "/nonexistent-dir/x/log"), -ENOENT);
	cr_expect_not(log_enabled(LOG_LVL_ERROR));
}

Test(log, line_breaks_in_a_message_do_not_make_new_lines)
{
	char *path = temp_path();
	char *out;

	cr_assert_eq(log_open("t", LOG_LVL_INFO, path), 0);
	log_info("a", "first\nsecond\r\nthird\n");
	log_close();
	out = slurp(path);
	cr_expect(matches(LINE_RE "t INFO a: first second  third\n$", out), "got: %s", out);
	free(out);
}

Test(log, long_message_is_written_whole_on_one_line)
{
	char *path = temp_path();
	char *big = malloc(20001);
	char *out, *nl;

	cr_assert_not_null(big);
	memset(big, 'x', 20000);
	big[20000] = '\0';
	cr_assert_eq(log_open("t", LOG_LVL_INFO, path), 0);
	log_info("a", "%s!", big);
	log_close();
	out = slurp(path);
	nl = strchr(out, '\n');
	cr_assert_not_null(nl);
	cr_expect_eq(nl[1], '\0', "one line only");
	cr_expect(matches("a: x{20000}!\n$", out));
	free(out);
	free(big);
}

Test(log, null_subsystem_is_left_out)
{
	char *path = temp_path();
	char *out;

	cr_assert_eq(log_open("t", LOG_LVL_INFO, path), 0);
	log_msg(LOG_LVL_INFO, NULL, "plain");
	log_close();
	out = slurp(path);
	cr_expect(matches(LINE_RE "t INFO plain\n$", out), "got: %s", out);
	free(out);
}

Test(log, level_names_parse)
{
	cr_expect_eq(log_level_parse("error"), LOG_LVL_ERROR);
	cr_expect_eq(log_level_parse("warn"), LOG_LVL_WARN);
	cr_expect_eq(log_level_parse("info"), LOG_LVL_INFO);
	cr_expect_eq(log_level_parse("debug"), LOG_LVL_DEBUG);
	cr_expect_eq(log_level_parse("trace"), LOG_LVL_TRACE);
	cr_expect_eq(log_level_parse("DEBUG"), LOG_LVL_DEBUG);
}

Test(log, unknown_level_names_are_einval)
{
	cr_expect_eq(log_level_parse("verbose"), -EINVAL);
	cr_expect_eq(log_level_parse(""), -EINVAL);
	cr_expect_eq(log_level_parse(NULL), -EINVAL);
}

#define THREADS 4
#define LINES_PER_THREAD 2000

static void *log_many(void *arg)
{
	long id = (long)arg;
	int i;

	for (i = 0; i < LINES_PER_THREAD; i++)
		log_info("thr", "thread %ld line %d %s", id, i,
			 "padding padding padding padding padding padding padding");
	return NULL;
}

Test(log, lines_from_many_threads_never_interleave, .timeout = 30)
{
	char *path = temp_path();
	pthread_t t[THREADS];
	char *out, *line, *save = NULL;
	int n = 0;
	long i;
	regex_t rx;

	cr_assert_eq(log_open("t", LOG_LVL_INFO, path), 0);
	for (i = 0; i < THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, log_many, (void *)i), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	log_close();
	out = slurp(path);
	cr_assert_eq(regcomp(&rx, LINE_RE "t INFO thr: thread [0-9]+ line [0-9]+ "
			     "(padding ){6}padding$", REG_EXTENDED | REG_NOSUB), 0);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (regexec(&rx, line, 0, NULL, 0) != 0)
			cr_assert_fail("damaged line: %s", line);
		n++;
	}
	regfree(&rx);
	cr_expect_eq(n, THREADS * LINES_PER_THREAD);
	free(out);
}

/* ---- ATOLL_ASSERT ---- */

Test(assert, true_condition_does_nothing)
{
	ATOLL_ASSERT(1 + 1 == 2, "arithmetic");
}

Test(assert, failure_is_logged_and_printed_then_aborts)
{
	char *logpath = temp_path();
	char *errpath = temp_path();
	char *log_out, *err_out;
	int status, fd;
	pid_t pid;

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		fd = open(errpath, O_WRONLY);
		dup2(fd, STDERR_FILENO);
		signal(SIGABRT, SIG_DFL);
		if (log_open("osd.1", LOG_LVL_INFO, logpath) < 0)
			_exit(3);
		ATOLL_ASSERT(2 < 1, "object '%s' in pg %d", "obj", 7);
		_exit(4);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		  "status %#x", status);
	log_out = slurp(logpath);
	err_out = slurp(errpath);
	cr_expect(matches(LINE_RE "osd\\.1 ERROR assert: .*test_log\\.c:[0-9]+: "
			  ".*assertion '2 < 1' failed: object 'obj' in pg 7\n$", log_out),
		  "log: %s", log_out);
	cr_expect(matches("assertion '2 < 1' failed: object 'obj' in pg 7\n$", err_out),
		  "stderr: %s", err_out);
	free(log_out);
	free(err_out);
}

Test(assert, failure_with_the_log_on_stderr_prints_once)
{
	char *errpath = temp_path();
	char *err_out, *first;
	int status, fd;
	pid_t pid;

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		fd = open(errpath, O_WRONLY);
		dup2(fd, STDERR_FILENO);
		signal(SIGABRT, SIG_DFL);
		log_open("t", LOG_LVL_INFO, NULL);
		ATOLL_ASSERT(0, "once");
		_exit(4);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	err_out = slurp(errpath);
	first = strstr(err_out, "failed: once");
	cr_assert_not_null(first, "stderr: %s", err_out);
	cr_expect_null(strstr(first + 1, "failed: once"), "stderr: %s", err_out);
	free(err_out);
}

Test(assert, failure_without_an_open_log_still_prints_to_stderr)
{
	char *errpath = temp_path();
	char *err_out;
	int status, fd;
	pid_t pid;

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		fd = open(errpath, O_WRONLY);
		dup2(fd, STDERR_FILENO);
		signal(SIGABRT, SIG_DFL);
		ATOLL_ASSERT(0, "no log");
		_exit(4);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
	err_out = slurp(errpath);
	cr_expect(matches("^atoll: .*assertion '0' failed: no log\n$", err_out),
		  "stderr: %s", err_out);
	free(err_out);
}
