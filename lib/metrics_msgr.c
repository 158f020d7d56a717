/*
 * metrics_msgr.c - a messenger's series, shared by the daemons: its
 * connections by class and its receive pools' bytes and messages in
 * flight (lib/msg_budget.c).  Read at each scrape on the metrics thread,
 * under the messenger's own locks for the time of a walk.  Apart from
 * metrics_proc.c so that a program without a messenger (atoll-nbd's
 * test build) links the registry without the core.
 */
#include <errno.h>
#include <stdlib.h>

#include "metrics.h"
#include "metrics_http.h"
#include "msgr_int.h"

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
	mm = calloc(1, sizeof(*mm));	/* the registry's (metrics_on_collect) */
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
	return metrics_on_collect(r, msgr_collect, mm, free);
}
