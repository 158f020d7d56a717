/*
 * test_mds_rings.c - the MDS's per-client rings of answered requests
 * (posixfs/mds_rings.c): a client's requests stay findable whatever the
 * other clients do, each client keeps its last MDS_DONE_MAX, and a
 * client's entries go with its session.
 */
#include <criterion/criterion.h>

#include "mds.h"

static struct mds_rings rs;

static void setup(void)
{
	cr_assert_eq(mds_rings_init(&rs, sizeof(struct mds_done)), 0);
}

static void teardown(void)
{
	mds_rings_fini(&rs);
}

TestSuite(mds_rings, .init = setup, .fini = teardown);

static void add(uint64_t client, uint64_t reqid, int32_t rc)
{
	struct mds_done *d = mds_rings_add(&rs, client);

	cr_assert_not_null(d);
	d->client = client;
	d->reqid = reqid;
	d->rc = rc;
	d->ino = reqid * 10;
	d->seq = 0;
}

static const struct mds_done *find(uint64_t client, uint64_t reqid)
{
	return mds_rings_find(&rs, client, reqid);
}

Test(mds_rings, other_clients_do_not_push_a_client_out)
{
	for (uint64_t r = 1; r <= 10; r++)
		add(7, r, -(int32_t)r);
	/* far more than one client's share, from many other clients */
	for (uint64_t r = 1; r <= 5 * MDS_DONE_MAX; r++)
		add(1000 + r % 300, r, 0);
	for (uint64_t r = 1; r <= 10; r++) {
		const struct mds_done *d = find(7, r);

		cr_assert_not_null(d, "request %llu of client 7 was pushed out",
				   (unsigned long long)r);
		cr_assert_eq(d->client, 7);
		cr_assert_eq(d->rc, -(int32_t)r);
		cr_assert_eq(d->ino, r * 10);
	}
	cr_assert_null(find(7, 11));
	cr_assert_null(find(8, 1));
}

static uint64_t seen_next;
static int in_order(void *arg, const void *e)
{
	const struct mds_done *d = e;

	(void)arg;
	cr_assert_eq(d->reqid, seen_next, "entry %llu where %llu was due",
		     (unsigned long long)d->reqid, (unsigned long long)seen_next);
	seen_next++;
	return 0;
}

Test(mds_rings, a_client_keeps_its_last_ones_oldest_first)
{
	uint64_t n = MDS_DONE_MAX + 100;

	for (uint64_t r = 1; r <= n; r++)
		add(3, r, 0);
	for (uint64_t r = 1; r <= 100; r++)
		cr_assert_null(find(3, r), "request %llu should have gone", (unsigned long long)r);
	for (uint64_t r = 101; r <= n; r++)
		cr_assert_not_null(find(3, r), "request %llu is missing", (unsigned long long)r);
	seen_next = 101;
	cr_assert_eq(mds_rings_each(&rs, in_order, NULL), 0);
	cr_assert_eq(seen_next, n + 1);
}

Test(mds_rings, growing_keeps_the_order)
{
	/* past a few doublings, with another client in between */
	for (uint64_t r = 1; r <= 1000; r++) {
		add(5, r, 0);
		if (r % 3 == 0)
			add(6, r, 0);
	}
	mds_rings_forget(&rs, 6);
	seen_next = 1;
	mds_rings_each(&rs, in_order, NULL);
	cr_assert_eq(seen_next, 1001);
}

static int count_fn(void *arg, const void *e)
{
	(void)e;
	return ++*(int *)arg == 3;	/* stop at the third */
}

Test(mds_rings, forget_drops_one_client_and_each_stops_early)
{
	add(1, 1, 0);
	add(2, 1, 0);
	add(2, 2, 0);
	mds_rings_forget(&rs, 2);
	mds_rings_forget(&rs, 99);	/* unknown: nothing happens */
	cr_assert_null(find(2, 1));
	cr_assert_null(find(2, 2));
	cr_assert_not_null(find(1, 1));
	for (uint64_t r = 2; r <= 10; r++)
		add(1, r, 0);
	int n = 0;

	cr_assert_eq(mds_rings_each(&rs, count_fn, &n), 1);
	cr_assert_eq(n, 3);
}

Test(mds_rings, a_resend_finds_the_newest_entry_of_its_id)
{
	add(4, 9, -17);
	add(4, 9, 0);	/* the same id answered again (a replayed journal entry) */
	cr_assert_eq(find(4, 9)->rc, 0);
}
