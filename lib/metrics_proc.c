/*
 * metrics_proc.c - the series every daemon exports besides its own:
 * the process's memory (RSS from /proc, the allocator's view from
 * jemalloc's mallctl when the daemon links jemalloc, glibc's mallinfo2
 * otherwise) and its build.  Read at scrape time on the metrics thread:
 * /proc and mallctl are thread-safe.
 */
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics.h"
#include "metrics_http.h"

/* jemalloc's control interface, present when the program links it */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
	__attribute__((weak));

struct proc_metrics {
	struct metric *rss, *vsz;
	struct metric *allocated, *active, *resident, *mapped;
};

static void proc_collect(void *arg)
{
	struct proc_metrics *p = arg;
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long vsz, rss;
	FILE *f;

	f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%llu %llu", &vsz, &rss) == 2) {
			metric_set(p->vsz, (int64_t)(vsz * (unsigned long long)page));
			metric_set(p->rss, (int64_t)(rss * (unsigned long long)page));
		}
		fclose(f);
	}
	if (mallctl) {
		uint64_t epoch = 1;
		size_t v, vlen = sizeof(v), elen = sizeof(epoch);

		/* stats are a snapshot taken at each epoch bump */
		mallctl("epoch", &epoch, &elen, &epoch, sizeof(epoch));
		if (mallctl("stats.allocated", &v, &vlen, NULL, 0) == 0)
			metric_set(p->allocated, (int64_t)v);
		vlen = sizeof(v);
		if (mallctl("stats.active", &v, &vlen, NULL, 0) == 0)
			metric_set(p->active, (int64_t)v);
		vlen = sizeof(v);
		if (mallctl("stats.resident", &v, &vlen, NULL, 0) == 0)
			metric_set(p->resident, (int64_t)v);
		vlen = sizeof(v);
		if (mallctl("stats.mapped", &v, &vlen, NULL, 0) == 0)
			metric_set(p->mapped, (int64_t)v);
	} else {
		struct mallinfo2 mi = mallinfo2();

		metric_set(p->allocated, (int64_t)mi.uordblks + (int64_t)mi.hblkhd);
		metric_set(p->mapped, (int64_t)mi.arena + (int64_t)mi.hblkhd);
	}
}

int metrics_add_process(struct metrics *r, const char *daemon)
{
	struct proc_metrics *p;
	const char *version = ATOLL_VERSION_STRING;
	const char *alloc = mallctl ? "jemalloc" : "glibc";

	if (!r)
		return 0;
	p = calloc(1, sizeof(*p));	/* the registry's (metrics_on_collect) */
	if (!p)
		return -ENOMEM;
	metric_set(metrics_gauge(r, "atoll_build_info",
				 "The daemon's name and atoll version (always 1)",
				 "daemon", daemon, "version", version, NULL), 1);
	p->rss = metrics_gauge(r, "atoll_process_resident_memory_bytes",
			       "Resident set size of the process", NULL);
	p->vsz = metrics_gauge(r, "atoll_process_virtual_memory_bytes",
			       "Virtual memory size of the process", NULL);
	p->allocated = metrics_gauge(r, "atoll_allocator_allocated_bytes",
				     "Bytes the program holds allocated (allocator statistics)",
				     "allocator", alloc, NULL);
	p->mapped = metrics_gauge(r, "atoll_allocator_mapped_bytes",
				  "Bytes the allocator has mapped from the kernel",
				  "allocator", alloc, NULL);
	if (mallctl) {
		p->active = metrics_gauge(r, "atoll_allocator_active_bytes",
					  "Bytes in pages the allocator has in use (jemalloc stats.active)",
					  "allocator", alloc, NULL);
		p->resident = metrics_gauge(r, "atoll_allocator_resident_bytes",
					    "Bytes the allocator holds resident (jemalloc stats.resident)",
					    "allocator", alloc, NULL);
	}
	return metrics_on_collect(r, proc_collect, p, free);
}
