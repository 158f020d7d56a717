/*
 * pcrebuild.c - the power-cut rebuild of a whole folder as a command, for
 * the shell tests (tests/ha/mon_powercut.sh): pc_rebuild_tree (pctree.c)
 * on the log that powercut_shim.so wrote while a program ran in BASE's
 * copy.
 *
 * usage: pcrebuild [--fate random|keep|lose|notwhole] [--seed N]
 *                  [--skip REL]... LOG BASE OUT
 * OUT must not exist.  Prints one line of counts; exit 0, 1 (the rebuild
 * failed: one sentence on stderr) or 2 (usage).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcdisk.h"

static int usage(void)
{
	fprintf(stderr, "usage: pcrebuild [--fate random|keep|lose|notwhole] [--seed N] "
		"[--skip REL]... LOG BASE OUT\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *skip[64];
	unsigned nskip = 0;
	enum pc_fate fate = PC_FATE_RANDOM;
	uint64_t seed = 1;
	struct pc_log lg;
	struct pc_stats st;
	char err[600];
	int i, r;

	for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (i + 1 >= argc)
			return usage();
		if (strcmp(argv[i], "--fate") == 0) {
			const char *f = argv[++i];

			if (strcmp(f, "random") == 0)
				fate = PC_FATE_RANDOM;
			else if (strcmp(f, "keep") == 0)
				fate = PC_FATE_KEEP_ALL;
			else if (strcmp(f, "lose") == 0)
				fate = PC_FATE_LOSE_ALL;
			else if (strcmp(f, "notwhole") == 0)
				fate = PC_FATE_NOT_WHOLE;
			else
				return usage();
		} else if (strcmp(argv[i], "--seed") == 0) {
			seed = strtoull(argv[++i], NULL, 0);
		} else if (strcmp(argv[i], "--skip") == 0 && nskip < 63) {
			skip[nskip++] = argv[++i];
		} else {
			return usage();
		}
	}
	skip[nskip] = NULL;
	if (argc - i != 3)
		return usage();
	r = pc_log_load(argv[i], &lg);
	if (r < 0) {
		fprintf(stderr, "pcrebuild: cannot read the log '%s': %s\n", argv[i], strerror(-r));
		return 1;
	}
	if (pc_rebuild_tree(&lg, lg.n, argv[i + 1], argv[i + 2], skip, fate, &seed, &st,
			    err, sizeof(err)) < 0) {
		fprintf(stderr, "pcrebuild: %s\n", err);
		pc_log_free(&lg);
		return 1;
	}
	printf("records %llu durable %llu lost %llu applied %llu torn %llu names kept %llu "
	       "names lost %llu cut-tail %zu\n",
	       (unsigned long long)st.records, (unsigned long long)st.durable,
	       (unsigned long long)st.lost, (unsigned long long)st.applied,
	       (unsigned long long)st.torn, (unsigned long long)st.names_kept,
	       (unsigned long long)st.names_lost, lg.tail_bytes);
	pc_log_free(&lg);
	return 0;
}
