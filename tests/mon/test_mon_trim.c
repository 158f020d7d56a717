/*
 * test_mon_trim.c - the rule for how far the monitors trim the map
 * history (mon/trim.h, mon_trim_point): never past the oldest
 * last_epoch_clean nor past the down epoch of an OSD that is down but in,
 * always keeping mon_min_map_history epochs, only in batches (of at most
 * MON_TRIM_MAX_EPOCHS), and never while a PG's last_epoch_clean is
 * unknown.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "trim.h"

static struct mon_trim_in base(void)
{
	return (struct mon_trim_in){ .first = 1, .last = 1000, .clean = 900,
				     .down = UINT64_MAX, .min_keep = 10, .batch = 5 };
}

Test(mon_trim, up_to_the_oldest_clean_epoch)
{
	struct mon_trim_in in = base();

	cr_assert_eq(mon_trim_point(&in), 900);
}

Test(mon_trim, an_unreported_pg_blocks_trimming)
{
	struct mon_trim_in in = base();

	in.clean = 0;
	cr_assert_eq(mon_trim_point(&in), 0);
}

Test(mon_trim, never_past_a_down_but_in_osd)
{
	struct mon_trim_in in = base();

	in.down = 400;
	cr_assert_eq(mon_trim_point(&in), 400);
	in.first = 400;
	cr_assert_eq(mon_trim_point(&in), 0, "already there: nothing to trim");
}

Test(mon_trim, keeps_the_minimum_history)
{
	struct mon_trim_in in = base();

	in.min_keep = 500;
	cr_assert_eq(mon_trim_point(&in), 501, "epochs 501..1000 are kept");
	in.min_keep = 1000;
	cr_assert_eq(mon_trim_point(&in), 0);
	in.min_keep = 2000;
	cr_assert_eq(mon_trim_point(&in), 0, "a history shorter than the minimum");
}

Test(mon_trim, only_in_batches)
{
	struct mon_trim_in in = base();

	in.first = 896;
	cr_assert_eq(mon_trim_point(&in), 0, "4 epochs could go, the batch is 5");
	in.first = 895;
	cr_assert_eq(mon_trim_point(&in), 900);
}

Test(mon_trim, never_backwards)
{
	struct mon_trim_in in = base();

	in.first = 950;		/* a history that starts later (a snapshot) */
	cr_assert_eq(mon_trim_point(&in), 0);
	in.last = 0;
	cr_assert_eq(mon_trim_point(&in), 0, "no map yet");
}

Test(mon_trim, a_clean_epoch_of_the_last_epoch_keeps_the_minimum)
{
	struct mon_trim_in in = base();

	in.clean = 1000;
	cr_assert_eq(mon_trim_point(&in), 991);
}

Test(mon_trim, a_long_history_goes_in_steps)
{
	struct mon_trim_in in = base();

	in.last = 100000;
	in.clean = 90000;
	cr_assert_eq(mon_trim_point(&in), 1 + MON_TRIM_MAX_EPOCHS);
	in.first = 90000 - 10;
	cr_assert_eq(mon_trim_point(&in), 90000);
}
