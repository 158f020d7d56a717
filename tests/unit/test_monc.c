/*
 * test_monc.c - the monitor client's pure parts (lib/monc.h): the
 * mon_host parser, and the hunt's order and backoff.  The client against
 * real and fake monitors is tested in tests/ha/.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

#include "monc.h"

static monc_addr_t hosts[MONC_HOSTS_MAX];
static char err[256];

Test(monc, parse_one)
{
	cr_assert_eq(monc_parse_hosts("127.0.0.1:6789", hosts, MONC_HOSTS_MAX, err,
				      sizeof(err)), 1);
	cr_assert_str_eq(hosts[0], "127.0.0.1:6789");
}

Test(monc, parse_commas_and_spaces)
{
	int n = monc_parse_hosts(" 127.0.0.2:1, 127.0.0.3:2 ,127.0.0.4:3\t127.0.0.5:4,,",
				 hosts, MONC_HOSTS_MAX, err, sizeof(err));

	cr_assert_eq(n, 4, "%d: %s", n, err);
	cr_assert_str_eq(hosts[0], "127.0.0.2:1");
	cr_assert_str_eq(hosts[1], "127.0.0.3:2");
	cr_assert_str_eq(hosts[2], "127.0.0.4:3");
	cr_assert_str_eq(hosts[3], "127.0.0.5:4");
}

Test(monc, parse_drops_duplicates)
{
	cr_assert_eq(monc_parse_hosts("127.0.0.2:1,127.0.0.2:1 127.0.0.3:1", hosts,
				      MONC_HOSTS_MAX, err, sizeof(err)), 2);
}

Test(monc, parse_ipv6)
{
	cr_assert_eq(monc_parse_hosts("[::1]:6789,127.0.0.1:6789", hosts, MONC_HOSTS_MAX,
				      err, sizeof(err)), 2);
	cr_assert_str_eq(hosts[0], "[::1]:6789");
}

Test(monc, parse_refuses_empty)
{
	cr_assert_eq(monc_parse_hosts("", hosts, MONC_HOSTS_MAX, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "empty"), "%s", err);
	cr_assert_eq(monc_parse_hosts(" , ,", hosts, MONC_HOSTS_MAX, err, sizeof(err)),
		     -EINVAL);
	cr_assert_eq(monc_parse_hosts(NULL, hosts, MONC_HOSTS_MAX, err, sizeof(err)), -EINVAL);
}

Test(monc, parse_names_the_bad_entry)
{
	cr_assert_eq(monc_parse_hosts("127.0.0.1:1,nonsense,127.0.0.3:1", hosts,
				      MONC_HOSTS_MAX, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "entry 2") && strstr(err, "'nonsense'"), "%s", err);
}

Test(monc, parse_refuses_bad_ports)
{
	cr_assert_eq(monc_parse_hosts("127.0.0.1", hosts, MONC_HOSTS_MAX, err, sizeof(err)),
		     -EINVAL);
	cr_assert_eq(monc_parse_hosts("127.0.0.1:0", hosts, MONC_HOSTS_MAX, err, sizeof(err)),
		     -EINVAL);
	cr_assert_eq(monc_parse_hosts("127.0.0.1:70000", hosts, MONC_HOSTS_MAX, err,
				      sizeof(err)), -EINVAL);
	cr_assert_eq(monc_parse_hosts("127.0.0.1:12x", hosts, MONC_HOSTS_MAX, err,
				      sizeof(err)), -EINVAL);
}

Test(monc, parse_refuses_too_long_an_entry)
{
	char s[200];

	memset(s, '1', sizeof(s) - 1);
	s[sizeof(s) - 1] = '\0';
	cr_assert_eq(monc_parse_hosts(s, hosts, MONC_HOSTS_MAX, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "too long"), "%s", err);
}

Test(monc, parse_refuses_too_many)
{
	cr_assert_eq(monc_parse_hosts("127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", hosts, 2, err,
				      sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "more than 2"), "%s", err);
}

/* ---- the hunt ---- */

Test(monc, hunt_round_robin_from_a_random_start)
{
	struct monc_hunt h;
	bool seen_start[5] = { false };

	for (uint64_t seed = 1; seed < 200; seed++) {
		uint32_t first, i;

		monc_hunt_init(&h, 5, 100, 2000, seed);
		first = monc_hunt_next(&h);
		cr_assert_lt(first, 5);
		seen_start[first] = true;
		for (i = 1; i < 12; i++)
			cr_assert_eq(monc_hunt_next(&h), (first + i) % 5);
	}
	for (int i = 0; i < 5; i++)
		cr_assert(seen_start[i], "no seed starts at candidate %d", i);
}

Test(monc, hunt_one_candidate)
{
	struct monc_hunt h;

	monc_hunt_init(&h, 1, 100, 2000, 7);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(monc_hunt_next(&h), 0);
}

Test(monc, hunt_backoff_doubles_with_jitter_up_to_the_cap)
{
	for (uint64_t seed = 1; seed < 100; seed++) {
		struct monc_hunt h;
		uint64_t d = 100;

		monc_hunt_init(&h, 3, 100, 2000, seed);
		for (int k = 1; k <= 12; k++) {
			uint32_t w = monc_hunt_failed(&h);

			cr_assert(w >= d / 2 && w <= d, "failure %d: wait %u not in [%lu, %lu]",
				  k, w, (unsigned long)(d / 2), (unsigned long)d);
			d = d * 2 > 2000 ? 2000 : d * 2;
		}
	}
}

Test(monc, hunt_jitter_spreads)
{
	struct monc_hunt h;
	uint32_t lo = UINT32_MAX, hi = 0;

	for (uint64_t seed = 1; seed < 300; seed++) {
		uint32_t w;

		monc_hunt_init(&h, 3, 1000, 1000, seed);
		w = monc_hunt_failed(&h);
		lo = w < lo ? w : lo;
		hi = w > hi ? w : hi;
	}
	cr_assert_lt(lo, 600);
	cr_assert_gt(hi, 900);
}

Test(monc, hunt_reset_starts_the_backoff_again)
{
	struct monc_hunt h;

	monc_hunt_init(&h, 3, 100, 2000, 3);
	for (int k = 0; k < 8; k++)
		monc_hunt_failed(&h);
	cr_assert_geq(monc_hunt_failed(&h), 1000);
	monc_hunt_reset(&h);
	cr_assert_leq(monc_hunt_failed(&h), 100);
}

Test(monc, hunt_goto_a_leader_then_round_robin)
{
	struct monc_hunt h;

	monc_hunt_init(&h, 4, 100, 2000, 11);
	monc_hunt_goto(&h, 2);
	cr_assert_eq(monc_hunt_next(&h), 2);
	cr_assert_eq(monc_hunt_next(&h), 3);
	cr_assert_eq(monc_hunt_next(&h), 0);
	monc_hunt_goto(&h, 9);	/* out of range: wraps, never past n */
	cr_assert_lt(monc_hunt_next(&h), 4);
}

Test(monc, hunt_resize_keeps_the_order)
{
	struct monc_hunt h;

	monc_hunt_init(&h, 2, 100, 2000, 5);
	monc_hunt_goto(&h, 1);
	monc_hunt_resize(&h, 4);	/* two members learnt from a monmap */
	cr_assert_eq(monc_hunt_next(&h), 1);
	cr_assert_eq(monc_hunt_next(&h), 2);
	cr_assert_eq(monc_hunt_next(&h), 3);
	cr_assert_eq(monc_hunt_next(&h), 0);
}

Test(monc, hunt_cap_below_min_is_min)
{
	struct monc_hunt h;

	monc_hunt_init(&h, 2, 500, 10, 5);
	for (int k = 0; k < 5; k++)
		cr_assert_leq(monc_hunt_failed(&h), 500);
}
