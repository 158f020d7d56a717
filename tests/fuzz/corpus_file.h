/*
 * corpus_file.h - writing one seed file, for the corpus generators
 * (gen_*_corpus.c, run by hand).  The file is prefix then buf; either may
 * be empty.  Returns 0, or -1 after saying on stderr what failed.
 */
#ifndef ATOLL_FUZZ_CORPUS_FILE_H
#define ATOLL_FUZZ_CORPUS_FILE_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

static inline int corpus_write(const char *dir, const char *name, const void *prefix,
			       size_t plen, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "cannot create '%s': %s\n", path, strerror(errno));
		return -1;
	}
	if ((plen && fwrite(prefix, 1, plen, f) != plen) ||
	    (len && fwrite(buf, 1, len, f) != len))
		r = -1;
	if (fclose(f) != 0)
		r = -1;
	if (r < 0)
		fprintf(stderr, "cannot write '%s'\n", path);
	return r;
}

#endif
