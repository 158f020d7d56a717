/*
 * metrics_proc.c - the series every daemon exports besides its own:
 * the process's memory (RSS from /proc, the allocator's view from
 * jemalloc's mallctl when the daemon links jemalloc, glibc's mallinfo2
 * otherwise), its build, and its messenger's connections and received
 * bytes in flight.  All read at scrape time on the metrics thread:
 * /proc and mallctl are thread-safe, the messenger's lists are read
 * under its own locks for the time of a walk.
 */
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atoll/atoll.h"
#include "metrics.h"
#include "metrics_http.h"
#include "msgr_int.h"

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
	const char *version = "";
	const char *alloc = mallctl ? "jemalloc" : "glibc";

	if (!r)
		return 0;
	p = calloc(1, sizeof(*p));	/* lives as long as the process */
	if (!p)
		return -ENOMEM;
	atoll_version(&version);
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
	return metrics_on_collect(r, proc_collect, p);
}

struct msgr_metrics {
	struct msgr *m;
	struct metric *conns[MSG_CLASS_NR];
	struct metric *bytes[MSG_CLASS_NR], *frames[MSG_CLASS_NR], *pauses[MSG_CLASS_NR];
};

static const char *const class_label[MSG_CLASS_NR] = {
	[MSG_CLASS_NONE] = "outgoing",
	[MSG_CLASS_CLIENT] = "client",
	[MSG_CLASS_PEER] = "cluster",
};

static void msgr_collect(void *arg)
{
	struct msgr_metrics *mm = arg;
	struct msgr *m = mm->m;
	int64_t n[MSG_CLASS_NR] = {0};

	pthread_mutex_lock(&m->lock);
	for (struct msg_conn *c = m->all; c; c = c->all_next) {
		/* cls is written once by the loop at the peer's hello */
		uint8_t cls = __atomic_load_n(&c->cls, __ATOMIC_RELAXED);

		n[cls < MSG_CLASS_NR ? cls : MSG_CLASS_NONE]++;
	}
	pthread_mutex_unlock(&m->lock);
	for (int i = 0; i < MSG_CLASS_NR; i++)
		metric_set(mm->conns[i], n[i]);
	if (!m->budget)
		return;
	for (int i = MSG_CLASS_CLIENT; i < MSG_CLASS_NR; i++) {
		uint64_t bytes, pauses;
		uint32_t frames;

		msg_budget__usage(m->budget, (enum msg_class)i, &bytes, &frames, &pauses);
		metric_set(mm->bytes[i], (int64_t)bytes);
		metric_set(mm->frames[i], frames);
		metric_set(mm->pauses[i], (int64_t)pauses);
	}
}

int metrics_add_msgr(struct metrics *r, struct msgr *m)
{
	struct msgr_metrics *mm;

	if (!r || !m)
		return 0;
	mm = calloc(1, sizeof(*mm));	/* lives as long as the process */
	if (!mm)
		return -ENOMEM;
	mm->m = m;
	for (int i = 0; i < MSG_CLASS_NR; i++)
		mm->conns[i] = metrics_gauge(r, "atoll_msgr_connections",
					     "Open messenger connections by class (outgoing: dialled by "
					     "this daemon; client, cluster: accepted from that kind of peer)",
					     "class", class_label[i], NULL);
	for (int i = MSG_CLASS_CLIENT; i < MSG_CLASS_NR; i++) {
		mm->bytes[i] = metrics_gauge(r, "atoll_msgr_inflight_bytes",
					     "Received bytes held by the messenger's receive pool of a class "
					     "until their handler frees them",
					     "class", class_label[i], NULL);
		mm->frames[i] = metrics_gauge(r, "atoll_msgr_inflight_messages",
					      "Received messages held by the receive pool of a class",
					      "class", class_label[i], NULL);
		mm->pauses[i] = metrics_counter(r, "atoll_msgr_pool_pauses_total",
					      "Times a connection of the class was paused for want of "
					      "room in its receive pool (since start)",
					      "class", class_label[i], NULL);
	}
	return metrics_on_collect(r, msgr_collect, mm);
}
