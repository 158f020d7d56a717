/*
 * fault.c - reads ATOLL_FAULTS once and answers the fault points.
 *
 * The variable is parsed into a private copy at the first query (under a
 * pthread_once, so fault points on any thread may ask), and never again:
 * a test sets it in the daemon's environment before the daemon starts.
 * Compiled only with -Dfault_injection=true (the default); see fault.h.
 */
#include "fault.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define FAULT_MAX 32

static struct {
	pthread_once_t once;
	char *copy;		/* the variable's text, split in place */
	unsigned n;
	const char *name[FAULT_MAX];
	const char *value[FAULT_MAX];
} faults = { .once = PTHREAD_ONCE_INIT };

static void faults_parse(void)
{
	const char *env = getenv("ATOLL_FAULTS");
	char *save = NULL, *tok;

	if (!env || !*env || !(faults.copy = strdup(env)))
		return;
	for (tok = strtok_r(faults.copy, ",", &save); tok && faults.n < FAULT_MAX;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (eq)
			*eq = '\0';
		faults.name[faults.n] = tok;
		faults.value[faults.n] = eq ? eq + 1 : "1";
		faults.n++;
	}
}

const char *fault_get(const char *name)
{
	pthread_once(&faults.once, faults_parse);
	for (unsigned i = 0; i < faults.n; i++)
		if (!strcmp(faults.name[i], name))
			return faults.value[i];
	return NULL;
}
