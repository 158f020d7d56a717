/*
 * msg.c - messages: construction, data attached by copy or by reference,
 * and freeing, which for a received message also returns its bytes to the
 * connection's flow-control budget (on any thread).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "atoll_assert.h"
#include "encode.h"
#include "msgr_int.h"

struct msg *msg_new(uint16_t type, struct enc *front)
{
	struct msg *m;
	size_t len = 0;

	if (front && (front->err || front->len > UINT32_MAX))
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->type = type;
	if (front && front->len) {
		m->front = enc_take(front, &len);
		if (!m->front) {
			free(m);
			return NULL;
		}
		m->front_len = (uint32_t)len;
	} else if (front) {
		enc_reset(front);
	}
	return m;
}

static void msg_release_data(struct msg *m)
{
	if (m->data_free)
		m->data_free(m->data_free_arg);
	else
		free(m->data);
	m->data = NULL;
	m->data_len = 0;
	m->data_crc_known = false;
	free(m->data_bcrc);
	m->data_bcrc = NULL;
	m->data_free = NULL;
	m->data_free_arg = NULL;
}

int msg_set_data(struct msg *m, const void *p, size_t len)
{
	void *buf = NULL;

	if (len > UINT32_MAX)
		return -EMSGSIZE;
	if (len) {
		buf = malloc(len);
		if (!buf)
			return -ENOMEM;
		memcpy(buf, p, len);
	}
	msg_release_data(m);
	m->data = buf;
	m->data_len = (uint32_t)len;
	return 0;
}

/* free_fn for data the caller keeps alive itself. */
static void msg_data_kept(void *arg)
{
	(void)arg;
}

void msg_set_data_ref(struct msg *m, void *p, size_t len,
		      void (*free_fn)(void *arg), void *arg)
{
	ATOLL_ASSERT(len <= UINT32_MAX, "data of %zu bytes attached to a message", len);
	msg_release_data(m);
	m->data = p;
	m->data_len = (uint32_t)len;
	m->data_free = free_fn ? free_fn : msg_data_kept;
	m->data_free_arg = arg;
}

void msg_set_data_crc(struct msg *m, uint32_t crc)
{
	m->data_crc = crc;
	m->data_crc_known = true;
}

void msg_free(struct msg *m)
{
	struct msg_conn *c;

	if (!m)
		return;
	c = m->conn;
	if (c) {
		/* its receive budget (msg_budget.c) goes back, and a reader
		 * paused for it resumes */
		if (m->charged)
			msg_budget__release(c, m);
		msg_conn__drop(c);
	}
	msg_release_data(m);
	free(m->front);
	free(m->sealed);
	free(m);
}
