/*
 * test_errors.c - lib/errors.c and lib/version.c: atoll_strerror() covers
 * every errno value either sign; atoll_version() matches the header.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "atoll/atoll.h"

Test(errors, every_errno_has_a_non_empty_sentence)
{
	int e;

	for (e = 1; e <= 133; e++) {
		const char *s = atoll_strerror(-e);

		cr_assert_not_null(s, "errno %d", e);
		cr_expect_gt(strlen(s), 0, "errno %d", e);
	}
}

Test(errors, negative_and_positive_give_the_same_sentence)
{
	int e;

	for (e = 0; e <= 140; e++)
		cr_expect_eq(atoll_strerror(-e), atoll_strerror(e), "errno %d", e);
}

Test(errors, eio_mentions_checksums)
{
	cr_expect_str_eq(atoll_strerror(-EIO), "input/output error or checksum mismatch");
}

Test(errors, known_errors_are_not_unknown)
{
	static const int known[] = {
		EPERM, ENOENT, EIO, ENOMEM, EEXIST, EINVAL, ENOSPC, ERANGE,
		EBADMSG, EPROTONOSUPPORT, ETIMEDOUT, ESTALE, EUCLEAN, E2BIG,
		ENOTCONN, ECONNREFUSED, EAGAIN, EROFS, EHWPOISON,
	};
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		cr_expect_str_neq(atoll_strerror(-known[i]), "unknown error",
				  "errno %d", known[i]);
}

Test(errors, zero_is_success)
{
	cr_expect_str_eq(atoll_strerror(0), "success");
}

Test(errors, out_of_range_values_are_unknown_not_null)
{
	cr_expect_str_eq(atoll_strerror(-100000), "unknown error");
	cr_expect_str_eq(atoll_strerror(INT_MIN), "unknown error");
	cr_expect_str_eq(atoll_strerror(INT_MAX), "unknown error");
}

Test(version, number_matches_the_header_macros)
{
	cr_expect_eq(atoll_version(NULL), ATOLL_VERSION_NUMBER);
}

Test(version, string_matches_the_number)
{
	const char *s = NULL;
	char want[32];

	atoll_version(&s);
	cr_assert_not_null(s);
	snprintf(want, sizeof(want), "%d.%d.%d", ATOLL_VERSION_MAJOR,
		 ATOLL_VERSION_MINOR, ATOLL_VERSION_PATCH);
	cr_expect_str_eq(s, want);
}
