/*
 * test_chunk_record.c - the chunk record codec (osd/store/chunk.c): what
 * every read decodes.  Round trips of the shapes the store writes, and the
 * damaged records a decoder must refuse (-EUCLEAN) instead of following
 * to a wrong block.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "store-int.h"

static struct chunk full_chunk(uint64_t first_pblk)
{
	struct chunk c;

	memset(&c, 0, sizeof(c));
	c.present = ~0ull;
	for (unsigned i = 0; i < CHUNK_BLOCKS; i++) {
		c.pblk[i] = first_pblk + i;
		c.crc[i] = 0x1000u + i;
	}
	return c;
}

static void expect_same(const struct chunk *a, const struct chunk *b)
{
	cr_expect_eq(a->flags, b->flags);
	cr_expect_eq(a->present, b->present);
	cr_expect_eq(a->deferred, b->deferred);
	for (unsigned i = 0; i < CHUNK_BLOCKS; i++) {
		if (!(a->present & (1ull << i)))
			continue;
		cr_expect_eq(a->pblk[i], b->pblk[i], "block %u: pblk %llu, want %llu", i,
			     (unsigned long long)b->pblk[i], (unsigned long long)a->pblk[i]);
		cr_expect_eq(a->crc[i], b->crc[i], "block %u: crc", i);
		if (a->deferred & (1ull << i)) {
			cr_expect_eq(a->dseq[i], b->dseq[i]);
			cr_expect_eq(a->dslot[i], b->dslot[i]);
		}
	}
}

static void round_trip(const struct chunk *c)
{
	uint8_t buf[CHUNK_REC_MAX];
	struct chunk d;
	size_t n = chunk_encode(c, buf);

	cr_assert_leq(n, sizeof(buf));
	cr_assert_eq(chunk_decode(&d, buf, n), 0);
	expect_same(c, &d);
}

Test(chunk_record, full_chunk_one_run)
{
	struct chunk c = full_chunk(1000);

	round_trip(&c);
}

Test(chunk_record, scattered_blocks_holes_and_journal_slots)
{
	struct chunk c;

	memset(&c, 0, sizeof(c));
	/* blocks 0-2 in one run, 5 alone, 7-8 not adjacent on disk, 63 last */
	const unsigned idx[] = { 0, 1, 2, 5, 7, 8, 63 };
	const uint64_t pb[] = { 50, 51, 52, 9000, 70, 700, 123456789 };

	for (unsigned k = 0; k < 7; k++) {
		c.present |= 1ull << idx[k];
		c.pblk[idx[k]] = pb[k];
		c.crc[idx[k]] = 0xabc000u + k;
	}
	c.deferred = (1ull << 5) | (1ull << 63);
	c.dseq[5] = 77;
	c.dslot[5] = 3;
	c.dseq[63] = 78;
	c.dslot[63] = 4;
	round_trip(&c);
}

Test(chunk_record, empty_chunk)
{
	struct chunk c;

	memset(&c, 0, sizeof(c));
	round_trip(&c);
}

/* The offset of the runs in an uncompressed record: version, compat,
 * body length (4), flags, presence bitmap (8), run count. */
#define RUNS_AT (1 + 1 + 4 + 1 + 8 + 1)

Test(chunk_record, run_over_an_absent_block_is_refused)
{
	struct chunk c, d;
	uint8_t buf[CHUNK_REC_MAX];

	memset(&c, 0, sizeof(c));
	c.present = 0x3;	/* blocks 0 and 1, one run */
	c.pblk[0] = 10;
	c.pblk[1] = 11;
	size_t n = chunk_encode(&c, buf);

	cr_assert_eq(buf[RUNS_AT - 1], 1, "one run");
	buf[RUNS_AT + 1] = 3;	/* the run now claims block 2 too */
	cr_expect_eq(chunk_decode(&d, buf, n), -EUCLEAN);
}

Test(chunk_record, overlapping_runs_are_refused)
{
	struct chunk c, d;
	uint8_t buf[CHUNK_REC_MAX];

	memset(&c, 0, sizeof(c));
	c.present = 0x3;	/* two runs: block 0 at 10, block 1 at 20 */
	c.pblk[0] = 10;
	c.pblk[1] = 20;
	size_t n = chunk_encode(&c, buf);

	cr_assert_eq(buf[RUNS_AT - 1], 2, "two runs");
	/* The first run now covers blocks 0-1: block 1 is mapped twice,
	 * though every present block is still covered. */
	buf[RUNS_AT + 1] = 2;
	cr_expect_eq(chunk_decode(&d, buf, n), -EUCLEAN);
	buf[RUNS_AT + 1] = 1;
	buf[RUNS_AT + 10] = 0;	/* the second run starts at block 0 again */
	cr_expect_eq(chunk_decode(&d, buf, n), -EUCLEAN);
}

Test(chunk_record, run_past_the_chunk_end_is_refused)
{
	struct chunk c = full_chunk(5), d;
	uint8_t buf[CHUNK_REC_MAX];
	size_t n = chunk_encode(&c, buf);

	buf[RUNS_AT] = 1;	/* first block 1, length 64: past block 63 */
	cr_expect_eq(chunk_decode(&d, buf, n), -EUCLEAN);
	buf[RUNS_AT] = 0;
	buf[RUNS_AT + 1] = 0;	/* an empty run */
	cr_expect_eq(chunk_decode(&d, buf, n), -EUCLEAN);
}

Test(chunk_record, present_block_without_a_run_is_refused)
{
	struct chunk c, d;
	uint8_t buf[CHUNK_REC_MAX];

	memset(&c, 0, sizeof(c));
	c.present = 0x1;
	c.pblk[0] = 10;
	size_t n = chunk_encode(&c, buf);

	buf[7] |= 0x2;	/* presence bitmap: block 1 too, but no run maps it */
	cr_expect_eq(chunk_decode(&d, buf, n), -EUCLEAN);
}

Test(chunk_record, truncated_record_is_refused)
{
	struct chunk c = full_chunk(5), d;
	uint8_t buf[CHUNK_REC_MAX];
	size_t n = chunk_encode(&c, buf);

	for (size_t cut = 1; cut < n; cut += 7)
		cr_expect_neq(chunk_decode(&d, buf, n - cut), 0, "cut by %zu bytes", cut);
}
