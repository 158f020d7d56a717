/*
 * completion.c - atoll_completion: the one-shot result of an async op.
 *
 * A completion has two owners: the caller (until atoll_completion_release)
 * and the op it was given to (until the op finishes).  The last one frees
 * it, so a caller may release a completion whose op is still in flight and
 * the callback still runs; the user data's free function runs when the
 * last one lets go, so it never races the callback.  The result is published under the
 * completion's own mutex before the callback runs, so a waiter woken by
 * the broadcast and a callback see the same result.
 */
#include "client.h"
#include "msg.h"

#include <errno.h>
#include <stdlib.h>

static void completion_put(struct atoll_completion *comp)
{
	int refs;

	pthread_mutex_lock(&comp->lock);
	refs = --comp->refs;
	pthread_mutex_unlock(&comp->lock);
	if (refs > 0)
		return;
	/* Nobody can run the callback or read the result any more: the
	 * user data goes now, once. */
	if (comp->free_arg)
		comp->free_arg(comp->arg);
	pthread_cond_destroy(&comp->cond);
	pthread_mutex_destroy(&comp->lock);
	free(comp);
}

int atoll_completion_create(atoll_callback_t cb, void *arg, atoll_free_t free_arg,
			    struct atoll_completion **out)
{
	struct atoll_completion *comp;

	if (!out)
		return atoll__error(-EINVAL, "atoll_completion_create: out is NULL");
	*out = NULL;
	comp = calloc(1, sizeof(*comp));
	if (!comp)
		return -ENOMEM;
	pthread_mutex_init(&comp->lock, NULL);
	pthread_cond_init(&comp->cond, NULL);
	comp->cb = cb;
	comp->arg = arg;
	comp->free_arg = free_arg;
	comp->refs = 1;
	*out = comp;
	return 0;
}

int client_completion_take(struct atoll_completion *comp)
{
	int r = 0;

	if (!comp)
		return -EINVAL;
	pthread_mutex_lock(&comp->lock);
	if (comp->used)
		r = -EINVAL;
	else {
		comp->used = true;
		comp->refs++;
	}
	pthread_mutex_unlock(&comp->lock);
	return r;
}

void client_completion_untake(struct atoll_completion *comp)
{
	pthread_mutex_lock(&comp->lock);
	comp->used = false;
	comp->refs--;		/* the op's; the caller still holds its own */
	pthread_mutex_unlock(&comp->lock);
}

void client_completion_finish(struct atoll_completion *comp, int64_t rval,
			      uint64_t version)
{
	pthread_mutex_lock(&comp->lock);
	comp->rval = rval;
	comp->version = rval < 0 ? 0 : version;
	comp->complete = true;
	pthread_cond_broadcast(&comp->cond);
	pthread_mutex_unlock(&comp->lock);
	/* The callback runs once, outside the lock: it may release comp
	 * (the op's reference keeps it alive until we drop it below). */
	if (comp->cb)
		comp->cb(comp, comp->arg);
	completion_put(comp);
}

int atoll_completion_begin(struct atoll_completion *comp)
{
	int r = client_completion_take(comp);

	if (r < 0)
		return atoll__error(r, "atoll_completion_begin: %s",
				    comp ? "the completion was used before" : "comp is NULL");
	return 0;
}

void atoll_completion_finish(struct atoll_completion *comp, int64_t result,
			     uint64_t version)
{
	if (comp)
		client_completion_finish(comp, result, version);
}

int64_t atoll_completion_wait(struct atoll_completion *comp)
{
	int64_t r;

	if (!comp)
		return -EINVAL;
	pthread_mutex_lock(&comp->lock);
	if (!comp->used) {
		/* Nothing will ever complete it: do not hang. */
		pthread_mutex_unlock(&comp->lock);
		return -EINVAL;
	}
	if (!comp->complete)
		msgr_hold_flush();
	while (!comp->complete)
		pthread_cond_wait(&comp->cond, &comp->lock);
	r = comp->rval;
	pthread_mutex_unlock(&comp->lock);
	return r;
}

int atoll_completion_is_complete(struct atoll_completion *comp)
{
	int r;

	if (!comp)
		return 0;
	pthread_mutex_lock(&comp->lock);
	r = comp->complete;
	pthread_mutex_unlock(&comp->lock);
	return r;
}

int64_t atoll_completion_return(struct atoll_completion *comp)
{
	int64_t r;

	if (!comp)
		return -EINVAL;
	pthread_mutex_lock(&comp->lock);
	r = comp->complete ? comp->rval : -EINPROGRESS;
	pthread_mutex_unlock(&comp->lock);
	return r;
}

uint64_t atoll_completion_version(struct atoll_completion *comp)
{
	uint64_t v;

	if (!comp)
		return 0;
	pthread_mutex_lock(&comp->lock);
	v = comp->complete ? comp->version : 0;
	pthread_mutex_unlock(&comp->lock);
	return v;
}

void atoll_completion_release(struct atoll_completion *comp)
{
	if (!comp)
		return;
	completion_put(comp);
}

void atoll_hold(void)
{
	msgr_hold();
}

void atoll_release(void)
{
	msgr_release();
}

int atoll_defer(atoll_defer_t fn, void *arg)
{
	if (!fn)
		return -EINVAL;
	return msgr_defer(fn, arg) ? 1 : 0;
}
