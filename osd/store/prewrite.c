/*
 * prewrite.c - large writes start on the device when they are queued.
 *
 * The commit thread applies batches one after the other; with only that,
 * the device would idle while a batch's metadata is applied and its kv
 * commit flushed.  So the whole blocks of a large, block-aligned write are
 * checksummed (or take the caller's crcs: store_txn_write_ref), allocated
 * and submitted (libaio, O_DIRECT, RWF_DSYNC: durable when complete) by
 * the thread that queues the transaction.  The commit thread waits for
 * them when it takes the transaction into a batch and points the chunk
 * records (in the batch's log record) at them.
 * Blocks of a prewrite that ends up unused (the transaction failed, or the
 * chunk turned out to be compressed) go back to the allocator: no
 * committed record ever pointed at them.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "store-int.h"

/* Writes of at least this much go to the device at queue time. */
#define PREWRITE_MIN (256u << 10)

static bool coll_compresses(struct store *st, uint64_t coll)
{
	MDB_txn *t;
	uint32_t flags = 0;

	if (mdb_txn_begin(st->kv.env, NULL, MDB_RDONLY, &t))
		return true;	/* cannot tell: do not prewrite */
	kv_coll_get(&st->kv, t, coll, &flags);	/* missing: the apply fails it */
	mdb_txn_abort(t);
	return flags & STORE_COLL_COMPRESS;
}

/* Takes pw off the list of uncommitted prewrites; amutex held. */
static void prew_unlist(struct store *st, struct prewrite *pw)
{
	if (pw->prev)
		pw->prev->next = pw->next;
	else if (st->prew_head == pw)
		st->prew_head = pw->next;
	if (pw->next)
		pw->next->prev = pw->prev;
	pw->prev = pw->next = NULL;
}

static int prewrite_op(struct store *st, struct op *op)
{
	struct prewrite *pw;
	size_t nio = 0;
	int r;

	pw = calloc(1, sizeof(*pw));
	if (!pw)
		return -ENOMEM;
	pw->nblk = op->len / STORE_BLOCK_SIZE;
	if (op->crcs) {
		/* the caller's, from its receive pass over these bytes */
		pw->crc = op->crcs;
		op->crcs = NULL;
	} else {
		pw->crc = malloc(pw->nblk * sizeof(uint32_t));
		if (!pw->crc) {
			r = -ENOMEM;
			goto out_free;
		}
		for (uint64_t i = 0; i < pw->nblk; i++)
			pw->crc[i] = atoll__crc32c(0, (uint8_t *)op->data + i * STORE_BLOCK_SIZE,
						  STORE_BLOCK_SIZE);
	}
	pthread_mutex_lock(&st->amutex);
	r = alloc_get(&st->alloc, pw->nblk, false, &pw->runs);
	if (!r) {
		/* Listed until its batch commits, so fsck knows these blocks. */
		pw->next = st->prew_head;
		if (pw->next)
			pw->next->prev = pw;
		st->prew_head = pw;
	}
	pthread_mutex_unlock(&st->amutex);
	if (r)
		goto out_free;
	for (size_t k = 0; k < pw->runs.n; k++)
		nio += (pw->runs.v[k].len + IO_MAX_BYTES / STORE_BLOCK_SIZE - 1) /
		       (IO_MAX_BYTES / STORE_BLOCK_SIZE);
	pw->iocbs = calloc(nio, sizeof(struct iocb));
	struct iocb **ptrs = calloc(nio, sizeof(*ptrs));

	if (!pw->iocbs || !ptrs) {
		free(ptrs);
		r = -ENOMEM;
		goto out_put;
	}
	{
		uint64_t boff = 0;
		size_t n = 0;

		for (size_t k = 0; k < pw->runs.n; k++)
			for (uint64_t x = 0; x < pw->runs.v[k].len; x += IO_MAX_BYTES / STORE_BLOCK_SIZE) {
				uint64_t cnt = min_u64(pw->runs.v[k].len - x, IO_MAX_BYTES / STORE_BLOCK_SIZE);

				io_prep_pwrite(&pw->iocbs[n], st->bfd,
					       (uint8_t *)op->data + (boff + x) * STORE_BLOCK_SIZE,
					       cnt * STORE_BLOCK_SIZE,
					       (long long)((pw->runs.v[k].start + x) * STORE_BLOCK_SIZE));
				pw->iocbs[n].aio_rw_flags = bio_data_flags(st);
				pw->iocbs[n].data = pw;
				ptrs[n] = &pw->iocbs[n];
				n++;
			}
		for (size_t k = 0; k < pw->runs.n; k++)
			boff += pw->runs.v[k].len;
	}
	/* From here on the commit thread reaps what was submitted.  The
	 * count is set before the first io_submit: the commit thread, reaping
	 * the shared context for an earlier transaction, may take this one's
	 * completions (and count them down) before io_submit even returns. */
	op->prew = pw;
	size_t done = 0;

	__atomic_store_n(&pw->left, (int)nio, __ATOMIC_RELEASE);
	while (done < nio) {
		int s = io_submit(st->pctx, (long)(nio - done), ptrs + done);

		if (s == -EAGAIN || s == -EINTR) {
			sched_yield();
			continue;
		}
		if (s <= 0) {
			pw->err = -EIO;
			break;
		}
		done += (size_t)s;
	}
	if (done < nio)		/* never submitted: nothing to reap for those */
		__atomic_sub_fetch(&pw->left, (int)(nio - done), __ATOMIC_ACQ_REL);
	free(ptrs);
	return 0;

out_put:
	pthread_mutex_lock(&st->amutex);
	prew_unlist(st, pw);
	for (size_t k = 0; k < pw->runs.n; k++)
		alloc_put(&st->alloc, pw->runs.v[k].start, pw->runs.v[k].len);
	pthread_mutex_unlock(&st->amutex);
out_free:
	prewrite_free(pw);
	return r;
}

int prewrite_submit(struct store *st, struct store_txn *t)
{
	int compress = -1;

	if (!st->pctx_ok)
		return 0;
	for (size_t i = 0; i < t->n; i++) {
		struct op *op = &t->ops[i];

		if (op->type != OP_WRITE || op->len < PREWRITE_MIN || op->off % STORE_BLOCK_SIZE ||
		    (op->flags & STORE_WRITE_COMPRESS) || op->prew ||
		    op->off + op->len > st->opt.object_max)
			continue;
		if (compress < 0)
			compress = coll_compresses(st, op->coll);
		if (compress)
			continue;
		prewrite_op(st, op);
	}
	return 0;
}

/* Reaps prewrites until every one of list's is complete. */
void prewrite_wait(struct store *st, struct store_txn *list)
{
	struct io_event ev[64];

	for (struct store_txn *t = list; t; t = t->next)
		for (size_t i = 0; i < t->n; i++) {
			struct prewrite *pw = t->ops[i].prew;

			while (pw && __atomic_load_n(&pw->left, __ATOMIC_ACQUIRE) > 0) {
				int n = io_getevents(st->pctx, 1, 64, ev, NULL);

				for (int k = 0; k < n; k++) {
					struct prewrite *done = ev[k].data;
					struct iocb *cb = ev[k].obj;

					if ((long)ev[k].res != (long)cb->u.c.nbytes)
						done->err = -EIO;
					__atomic_sub_fetch(&done->left, 1, __ATOMIC_ACQ_REL);
				}
			}
		}
}

/* After a batch: prewrites it used are now pointed at by committed
 * records; the blocks of those it did not use (failed transactions, or
 * ones that took another path) go back to the allocator: no committed
 * record ever pointed at them.  Either way they leave the list. */
void prewrite_release_unused(struct store *st, struct store_txn *list)
{
	pthread_mutex_lock(&st->amutex);
	for (struct store_txn *t = list; t; t = t->next)
		for (size_t i = 0; i < t->n; i++) {
			struct prewrite *pw = t->ops[i].prew;

			if (!pw)
				continue;
			prew_unlist(st, pw);	/* committed or given back: done either way */
			if (pw->applied && !t->result)
				continue;
			for (size_t k = 0; k < pw->runs.n; k++)
				alloc_put(&st->alloc, pw->runs.v[k].start, pw->runs.v[k].len);
			pw->runs.n = 0;
		}
	pthread_mutex_unlock(&st->amutex);
}

