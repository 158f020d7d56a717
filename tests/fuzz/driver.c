/*
 * driver.c - runs a fuzz target over files, without libFuzzer.
 *
 *   fuzz-driver-NAME CORPUS_DIR_OR_FILE...
 *
 * Each argument is a file or a directory (not recursed) whose regular
 * files are each passed once to LLVMFuzzerTestOneInput().  This lets gcc
 * and sanitizer builds replay the seed corpus and any crash files as an
 * ordinary test.  Exit status 0 when every input ran; a bug aborts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INPUT_MAX (16 * 1024 * 1024)

static int run_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t len = 0;
	ssize_t n;
	int fd, r = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || st.st_size > INPUT_MAX) {
		fprintf(stderr, "cannot use '%s': not readable or over %d bytes\n",
			path, INPUT_MAX);
		goto out_close_fd;
	}
	/* An exact-size heap copy, so ASan sees a read past the input. */
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf)
		goto out_close_fd;
	while (len < (size_t)st.st_size) {
		n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "cannot read '%s'\n", path);
			goto out_free_buf;
		}
		len += (size_t)n;
	}
	LLVMFuzzerTestOneInput(buf, len);
	r = 0;
out_free_buf:
	free(buf);
out_close_fd:
	close(fd);
	return r;
}

static int run_path(const char *path, unsigned int *count)
{
	struct dirent *de;
	struct stat st;
	char child[4096];
	DIR *dir;
	int r = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "cannot stat '%s': %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return run_file(path);
	}
	dir = opendir(path);
	if (!dir) {
		fprintf(stderr, "cannot open directory '%s': %s\n", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
		if (stat(child, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		(*count)++;
		if (run_file(child) < 0)
			r = -1;
	}
	closedir(dir);
	return r;
}

int main(int argc, char **argv)
{
	unsigned int count = 0;
	int i, r = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++)
		if (run_path(argv[i], &count) < 0)
			r = 1;
	printf("%u inputs ran\n", count);
	if (count == 0) {
		fprintf(stderr, "no inputs found\n");
		return 1;
	}
	return r;
}
