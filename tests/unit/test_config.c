/*
 * test_config.c - lib/config.c: parsing files and text, section
 * precedence, overrides, every typed getter's good and bad input with the
 * exact error sentence, load errors, and writing a config back out.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static char err[256];

static struct config *parse(const char *text)
{
	struct config *c = NULL;

	err[0] = '\0';
	cr_assert_eq(config_load_string(&c, text, err, sizeof(err)), 0, "error: %s", err);
	cr_assert_not_null(c);
	return c;
}

static char *write_temp(const char *text)
{
	char *path = strdup("/tmp/atoll-test-conf-XXXXXX");
	FILE *f;
	int fd;

	cr_assert_not_null(path);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static const char precedence[] =
	"[global]\n"
	"a = global\n"
	"b = global\n"
	"c = global\n"
	"d = global\n"
	"[osd]\n"
	"a = osd\n"
	"b = osd\n"
	"c = osd\n"
	"[osd.3]\n"
	"a = osd.3\n"
	"b = osd.3\n";

/* ---- parsing and lookup ---- */

Test(config, file_is_parsed)
{
	struct config *c = NULL;
	char *path = write_temp("; a comment\n# another\n[global]\nfsid = abc\n\n[mon]\nport = 6789\n");
	const char *v;

	cr_assert_eq(config_load(&c, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(config_get(c, "mon", "port", NULL), "6789");
	v = config_get(c, "osd.1", "fsid", NULL);
	cr_assert_not_null(v);
	cr_expect_str_eq(v, "abc");
	config_free(c);
	unlink(path);
	free(path);
}

Test(config, who_section_wins_over_type_and_global)
{
	struct config *c = parse(precedence);
	const char *where;

	cr_expect_str_eq(config_get(c, "osd.3", "a", &where), "osd.3");
	cr_expect_str_eq(where, "osd.3");
	config_free(c);
}

Test(config, type_section_wins_over_global)
{
	struct config *c = parse(precedence);
	const char *where;

	cr_expect_str_eq(config_get(c, "osd.3", "c", &where), "osd");
	cr_expect_str_eq(where, "osd");
	cr_expect_str_eq(config_get(c, "osd.7", "a", NULL), "osd");
	config_free(c);
}

Test(config, global_is_the_last_section_tried)
{
	struct config *c = parse(precedence);
	const char *where;

	cr_expect_str_eq(config_get(c, "osd.3", "d", &where), "global");
	cr_expect_str_eq(where, "global");
	cr_expect_str_eq(config_get(c, "mon.a", "a", NULL), "global");
	cr_expect_str_eq(config_get(c, NULL, "a", NULL), "global");
	config_free(c);
}

Test(config, missing_key_is_null)
{
	struct config *c = parse(precedence);

	cr_expect_null(config_get(c, "osd.3", "nope", NULL));
	config_free(c);
}

Test(config, override_wins_over_every_section)
{
	struct config *c = parse(precedence);
	const char *where;

	cr_assert_eq(config_set_override(c, "a", "cli"), 0);
	cr_expect_str_eq(config_get(c, "osd.3", "a", &where), "cli");
	cr_expect_str_eq(where, "command line");
	config_free(c);
}

Test(config, dash_and_underscore_are_the_same_in_keys)
{
	struct config *c = parse("[osd]\nosd-data = /srv/a\nOSD_Journal_Size = 5\n");

	cr_expect_str_eq(config_get(c, "osd.0", "osd_data", NULL), "/srv/a");
	cr_expect_str_eq(config_get(c, "osd.0", "osd-journal-size", NULL), "5");
	config_set_override(c, "osd_data", "/srv/b");
	cr_expect_str_eq(config_get(c, "osd.0", "osd-data", NULL), "/srv/b");
	config_free(c);
}

Test(config, later_duplicate_key_wins)
{
	struct config *c = parse("[global]\nx = 1\nx = 2\n");

	cr_expect_str_eq(config_get(c, NULL, "x", NULL), "2");
	config_free(c);
}

Test(config, indented_keys_are_plain_keys)
{
	struct config *c = parse("[osd]\n    a = 1\n    b = 2\n\t[mon]\n\tc = 3\n");

	cr_expect_str_eq(config_get(c, "osd", "a", NULL), "1");
	cr_expect_str_eq(config_get(c, "osd", "b", NULL), "2");
	cr_expect_str_eq(config_get(c, "mon", "c", NULL), "3");
	config_free(c);
}

Test(config, inline_comments_and_blanks_are_stripped)
{
	struct config *c = parse("[global]\n  key  =   value with spaces   ; comment\n");

	cr_expect_str_eq(config_get(c, NULL, "key", NULL), "value with spaces");
	config_free(c);
}

Test(config, keys_before_any_section_are_global)
{
	struct config *c = parse("early = 1\n[osd]\n");

	cr_expect_str_eq(config_get(c, "osd.1", "early", NULL), "1");
	config_free(c);
}

Test(config, sections_given_twice_merge)
{
	struct config *c = parse("[osd]\na = 1\n[mon]\n[osd]\nb = 2\n");

	cr_expect_str_eq(config_get(c, "osd", "a", NULL), "1");
	cr_expect_str_eq(config_get(c, "osd", "b", NULL), "2");
	config_free(c);
}

Test(config, crlf_line_endings_are_accepted)
{
	struct config *c = parse("[global]\r\nx = 1\r\n");

	cr_expect_str_eq(config_get(c, NULL, "x", NULL), "1");
	config_free(c);
}

Test(config, empty_text_is_an_empty_config)
{
	struct config *c = parse("");

	cr_expect_null(config_get(c, "osd.1", "x", NULL));
	config_free(c);
}

Test(config, config_new_is_empty_and_settable)
{
	struct config *c = config_new();

	cr_assert_not_null(c);
	cr_expect_null(config_get(c, NULL, "x", NULL));
	cr_expect_eq(config_set(c, "global", "x", "1"), 0);
	cr_expect_str_eq(config_get(c, NULL, "x", NULL), "1");
	cr_expect_eq(config_set(c, "global", "x", "2"), 0);
	cr_expect_str_eq(config_get(c, NULL, "x", NULL), "2");
	config_free(c);
}

Test(config, free_accepts_null)
{
	config_free(NULL);
}

/* ---- load errors ---- */

Test(config, missing_named_file_is_an_error_naming_it)
{
	struct config *c = (struct config *)1;

	cr_expect_eq(config_load(&c, "/nonexistent/atoll.conf", err, sizeof(err)), -ENOENT);
	cr_expect_null(c);
	cr_expect_str_eq(err, "cannot read config file '/nonexistent/atoll.conf': "
			 "no such object, file or directory");
}

Test(config, syntax_error_names_the_file_and_line)
{
	struct config *c = NULL;
	char *path = write_temp("[global]\nok = 1\n\nthis line has no equals sign\n");
	char want[512];

	cr_expect_eq(config_load(&c, path, err, sizeof(err)), -EINVAL);
	cr_expect_null(c);
	snprintf(want, sizeof(want), "config file '%s' line 4: syntax error; "
		 "expected '[section]' or 'key = value'", path);
	cr_expect_str_eq(err, want);
	unlink(path);
	free(path);
}

Test(config, unclosed_section_is_a_syntax_error)
{
	struct config *c = NULL;

	cr_expect_eq(config_load_string(&c, "[global]\n[osd\n", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "config text line 2: syntax error; "
			 "expected '[section]' or 'key = value'");
}

Test(config, empty_key_is_an_error)
{
	struct config *c = NULL;

	cr_expect_eq(config_load_string(&c, "[global]\n = 3\n", err, sizeof(err)), -EINVAL);
	cr_expect(strncmp(err, "config text line 2: ", 20) == 0, "got: %s", err);
}

Test(config, over_long_line_is_an_error_not_a_split)
{
	struct config *c = NULL;
	char text[600];

	snprintf(text, sizeof(text), "[global]\nk = %0500d\n", 0);
	cr_expect_eq(config_load_string(&c, text, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "config text line 2: the line is longer than 199 characters");
}

Test(config, env_var_names_the_file_when_no_path_is_given)
{
	struct config *c = NULL;
	char *path = write_temp("[global]\nfrom_env = yes\n");

	setenv("ATOLL_CONF", path, 1);
	cr_assert_eq(config_load(&c, NULL, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(config_get(c, NULL, "from_env", NULL), "yes");
	config_free(c);
	unlink(path);
	free(path);
}

Test(config, env_var_naming_a_missing_file_is_an_error)
{
	struct config *c = NULL;

	setenv("ATOLL_CONF", "/nonexistent/env.conf", 1);
	cr_expect_eq(config_load(&c, NULL, err, sizeof(err)), -ENOENT);
}

Test(config, no_file_anywhere_is_an_empty_config)
{
	struct config *c = NULL;
	char dir[] = "/tmp/atoll-test-cwd-XXXXXX";

	if (access("/etc/atoll/atoll.conf", F_OK) == 0)
		cr_skip_test("/etc/atoll/atoll.conf exists on this machine");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chdir(dir), 0);
	unsetenv("ATOLL_CONF");
	cr_expect_eq(config_load(&c, NULL, err, sizeof(err)), 0);
	cr_assert_not_null(c);
	cr_expect_null(config_get(c, NULL, "x", NULL));
	config_free(c);
	rmdir(dir);
}

/* ---- typed getters ---- */

Test(getters, absent_key_gives_the_default)
{
	struct config *c = config_new();
	const char *s;
	int64_t i;
	uint64_t u;
	bool b;
	double d;

	cr_expect_eq(config_get_str(c, "osd.1", "k", "dflt", &s, err, sizeof(err)), 0);
	cr_expect_str_eq(s, "dflt");
	cr_expect_eq(config_get_int(c, "osd.1", "k", 5, 0, 10, &i, err, sizeof(err)), 0);
	cr_expect_eq(i, 5);
	cr_expect_eq(config_get_size(c, "osd.1", "k", 4096, &u, err, sizeof(err)), 0);
	cr_expect_eq(u, 4096);
	cr_expect_eq(config_get_bool(c, "osd.1", "k", true, &b, err, sizeof(err)), 0);
	cr_expect(b);
	cr_expect_eq(config_get_duration_ms(c, "osd.1", "k", 1500, &u, err, sizeof(err)), 0);
	cr_expect_eq(u, 1500);
	cr_expect_eq(config_get_double(c, "osd.1", "k", 0.5, 0, 1, &d, err, sizeof(err)), 0);
	cr_expect_eq(d, 0.5);
	config_free(c);
}

Test(getters, str_returns_the_value)
{
	struct config *c = parse("[osd]\nosd_data = /srv/osd\n");
	const char *s;

	cr_expect_eq(config_get_str(c, "osd.2", "osd-data", NULL, &s, err, sizeof(err)), 0);
	cr_expect_str_eq(s, "/srv/osd");
	config_free(c);
}

Test(getters, int_accepts_whole_numbers_in_range)
{
	struct config *c = parse("[osd]\na = 16\nb = -3\nc = 0\n");
	int64_t v;

	cr_expect_eq(config_get_int(c, "osd.1", "a", 0, 1, 64, &v, err, sizeof(err)), 0);
	cr_expect_eq(v, 16);
	cr_expect_eq(config_get_int(c, "osd.1", "b", 0, -10, 10, &v, err, sizeof(err)), 0);
	cr_expect_eq(v, -3);
	cr_expect_eq(config_get_int(c, "osd.1", "c", 7, 0, 0, &v, err, sizeof(err)), 0);
	cr_expect_eq(v, 0);
	config_free(c);
}

Test(getters, int_rejects_words_with_one_sentence)
{
	struct config *c = parse("[osd]\nosd_op_threads = many\n");
	int64_t v;

	cr_expect_eq(config_get_int(c, "osd.3", "osd_op_threads", 4, 1, 64, &v,
				    err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "option 'osd_op_threads' in [osd]: 'many' is not a whole number");
	cr_expect_eq(v, 4, "the default on error");
	config_free(c);
}

Test(getters, int_rejects_trailing_garbage_and_fractions)
{
	struct config *c = parse("[global]\na = 12abc\nb = 1.5\n");
	int64_t v;

	cr_expect_eq(config_get_int(c, NULL, "a", 0, 0, 100, &v, err, sizeof(err)), -EINVAL);
	cr_expect_eq(config_get_int(c, NULL, "b", 0, 0, 100, &v, err, sizeof(err)), -EINVAL);
	config_free(c);
}

Test(getters, int_out_of_range_is_erange_with_the_bounds)
{
	struct config *c = parse("[osd.3]\nosd_op_threads = 500\n");
	int64_t v;

	cr_expect_eq(config_get_int(c, "osd.3", "osd_op_threads", 4, 1, 64, &v,
				    err, sizeof(err)), -ERANGE);
	cr_expect_str_eq(err, "option 'osd_op_threads' in [osd.3]: '500' is not between 1 and 64");
	config_free(c);
}

Test(getters, int_beyond_int64_is_erange)
{
	struct config *c = parse("[global]\na = 99999999999999999999\n");
	int64_t v;

	cr_expect_eq(config_get_int(c, NULL, "a", 0, INT64_MIN, INT64_MAX, &v,
				    err, sizeof(err)), -ERANGE);
	config_free(c);
}

Test(getters, error_from_an_override_says_command_line)
{
	struct config *c = config_new();
	int64_t v;

	config_set_override(c, "osd_op_threads", "lots");
	cr_expect_eq(config_get_int(c, "osd.3", "osd_op_threads", 4, 1, 64, &v,
				    err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "option 'osd_op_threads' on the command line: "
			 "'lots' is not a whole number");
	config_free(c);
}

Test(getters, size_accepts_suffixes)
{
	static const struct { const char *text; uint64_t want; } cases[] = {
		{ "4096", 4096 }, { "4K", 4096 }, { "4k", 4096 }, { "4KiB", 4096 },
		{ "4 KB", 4096 }, { "64M", 64ull << 20 }, { "2G", 2ull << 30 },
		{ "3T", 3ull << 40 }, { "10B", 10 }, { "0", 0 },
	};
	struct config *c = config_new();
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_set(c, "global", "s", cases[i].text);
		cr_expect_eq(config_get_size(c, NULL, "s", 1, &v, err, sizeof(err)), 0,
			     "'%s': %s", cases[i].text, err);
		cr_expect_eq(v, cases[i].want, "'%s'", cases[i].text);
	}
	config_free(c);
}

Test(getters, parse_size_reads_a_command_line_size_as_the_file_does)
{
	uint64_t v = 7;

	cr_expect_eq(config_parse_size("64MiB", &v), 0);
	cr_expect_eq(v, 64ull << 20);
	cr_expect_eq(config_parse_size("1t", &v), 0);
	cr_expect_eq(v, 1ull << 40);
	cr_expect_eq(config_parse_size("12X", &v), -EINVAL);
	cr_expect_eq(config_parse_size("-1K", &v), -EINVAL);
	cr_expect_eq(config_parse_size("", &v), -EINVAL);
	cr_expect_eq(config_parse_size("16777216T", &v), -ERANGE);
	cr_expect_eq(v, 1ull << 40, "a refused size leaves *out alone");
}

Test(getters, size_rejects_bad_suffixes_with_one_sentence)
{
	struct config *c = parse("[global]\ncache_size = 12X\n");
	uint64_t v;

	cr_expect_eq(config_get_size(c, NULL, "cache_size", 1, &v, err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "option 'cache_size' in [global]: '12X' is not a size "
			 "(a whole number with an optional K, M, G or T suffix)");
	config_free(c);
}

Test(getters, size_rejects_negative_and_fractional_numbers)
{
	struct config *c = parse("[global]\na = -5\nb = 1.5G\nc = G\n");
	uint64_t v;

	cr_expect_eq(config_get_size(c, NULL, "a", 1, &v, err, sizeof(err)), -EINVAL);
	cr_expect_eq(config_get_size(c, NULL, "b", 1, &v, err, sizeof(err)), -EINVAL);
	cr_expect_eq(config_get_size(c, NULL, "c", 1, &v, err, sizeof(err)), -EINVAL);
	config_free(c);
}

Test(getters, size_that_overflows_is_erange)
{
	struct config *c = parse("[global]\na = 99999999T\n");
	uint64_t v;

	cr_expect_eq(config_get_size(c, NULL, "a", 1, &v, err, sizeof(err)), -ERANGE);
	cr_expect_str_eq(err, "option 'a' in [global]: '99999999T' is too large");
	config_free(c);
}

Test(getters, bool_accepts_every_spelling)
{
	static const char *const yes[] = { "true", "yes", "on", "1", "TRUE", "Yes" };
	static const char *const no[] = { "false", "no", "off", "0", "Off" };
	struct config *c = config_new();
	size_t i;
	bool v;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		config_set(c, "global", "b", yes[i]);
		cr_expect_eq(config_get_bool(c, NULL, "b", false, &v, err, sizeof(err)), 0);
		cr_expect(v, "'%s'", yes[i]);
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		config_set(c, "global", "b", no[i]);
		cr_expect_eq(config_get_bool(c, NULL, "b", true, &v, err, sizeof(err)), 0);
		cr_expect_not(v, "'%s'", no[i]);
	}
	config_free(c);
}

Test(getters, bool_rejects_other_words_with_one_sentence)
{
	struct config *c = parse("[mon]\nmon_allow_pool_delete = maybe\n");
	bool v;

	cr_expect_eq(config_get_bool(c, "mon.a", "mon_allow_pool_delete", false, &v,
				     err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "option 'mon_allow_pool_delete' in [mon]: 'maybe' is not a "
			 "boolean (use true/false, yes/no, on/off or 1/0)");
	config_free(c);
}

Test(getters, duration_accepts_suffixes_and_plain_seconds)
{
	static const struct { const char *text; uint64_t want; } cases[] = {
		{ "5", 5000 }, { "5s", 5000 }, { "250ms", 250 }, { "2m", 120000 },
		{ "1h", 3600000 }, { "0", 0 }, { "3 s", 3000 },
	};
	struct config *c = config_new();
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_set(c, "global", "d", cases[i].text);
		cr_expect_eq(config_get_duration_ms(c, NULL, "d", 1, &v, err, sizeof(err)), 0,
			     "'%s': %s", cases[i].text, err);
		cr_expect_eq(v, cases[i].want, "'%s'", cases[i].text);
	}
	config_free(c);
}

Test(getters, duration_rejects_unknown_units_with_one_sentence)
{
	struct config *c = parse("[osd]\nheartbeat_grace = soon\n");
	uint64_t v;

	cr_expect_eq(config_get_duration_ms(c, "osd.0", "heartbeat_grace", 1, &v,
					    err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "option 'heartbeat_grace' in [osd]: 'soon' is not a duration "
			 "(a whole number with an optional ms, s, m or h suffix)");
	config_free(c);
}

Test(getters, duration_that_overflows_is_erange)
{
	struct config *c = parse("[global]\nd = 18446744073709551615h\n");
	uint64_t v;

	cr_expect_eq(config_get_duration_ms(c, NULL, "d", 1, &v, err, sizeof(err)), -ERANGE);
	cr_expect_str_eq(err, "option 'd' in [global]: '18446744073709551615h' is too large");
	config_free(c);
}

Test(getters, double_accepts_numbers_in_range)
{
	struct config *c = parse("[mon]\nfull_ratio = 0.95\nexact = 1\n");
	double v;

	cr_expect_eq(config_get_double(c, "mon.a", "full_ratio", 0, 0, 1, &v,
				       err, sizeof(err)), 0);
	cr_expect_eq(v, 0.95);
	cr_expect_eq(config_get_double(c, "mon.a", "exact", 0, 0, 1, &v,
				       err, sizeof(err)), 0);
	cr_expect_eq(v, 1.0);
	config_free(c);
}

Test(getters, double_rejects_words_with_one_sentence)
{
	struct config *c = parse("[mon]\nfull_ratio = high\nn = nan\n");
	double v;

	cr_expect_eq(config_get_double(c, "mon.a", "full_ratio", 0.9, 0, 1, &v,
				       err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "option 'full_ratio' in [mon]: 'high' is not a number");
	cr_expect_eq(config_get_double(c, "mon.a", "n", 0.9, 0, 1, &v,
				       err, sizeof(err)), -EINVAL);
	config_free(c);
}

Test(getters, double_out_of_range_is_erange_with_the_bounds)
{
	struct config *c = parse("[mon]\nfull_ratio = 1.5\n");
	double v;

	cr_expect_eq(config_get_double(c, "mon.a", "full_ratio", 0.9, 0, 1, &v,
				       err, sizeof(err)), -ERANGE);
	cr_expect_str_eq(err, "option 'full_ratio' in [mon]: '1.5' is not between 0 and 1");
	config_free(c);
}

Test(getters, null_error_buffer_is_allowed)
{
	struct config *c = parse("[global]\na = x\n");
	int64_t v;

	cr_expect_eq(config_get_int(c, NULL, "a", 0, 0, 1, &v, NULL, 0), -EINVAL);
	config_free(c);
}

/* ---- setters and writing ---- */

Test(setters, values_that_would_not_read_back_are_refused)
{
	struct config *c = config_new();
	char long_value[300];

	cr_expect_eq(config_set(c, "global", "k", "two\nlines"), -EINVAL);
	cr_expect_eq(config_set(c, "global", "k", "a ;comment"), -EINVAL);
	cr_expect_eq(config_set(c, "global", "k=v", "x"), -EINVAL);
	cr_expect_eq(config_set(c, "global", "", "x"), -EINVAL);
	cr_expect_eq(config_set(c, "bad]name", "k", "x"), -EINVAL);
	cr_expect_eq(config_set(c, "", "k", "x"), -EINVAL);
	memset(long_value, 'v', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	cr_expect_eq(config_set(c, "global", "k", long_value), -E2BIG);
	cr_expect_eq(config_set_override(c, "k", "a\nb"), -EINVAL);
	config_free(c);
}

Test(setters, write_then_load_gives_the_same_values)
{
	struct config *c = config_new(), *back = NULL;
	char path[] = "/tmp/atoll-test-write-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(config_set(c, "global", "fsid", "0f9e"), 0);
	cr_assert_eq(config_set(c, "mon", "mon_addr", "127.0.0.2:6789"), 0);
	cr_assert_eq(config_set(c, "osd.3", "osd-data", "/srv/osd.3"), 0);
	cr_assert_eq(config_set(c, "osd.3", "note", "a;b=c:d #e"), 0);
	cr_assert_eq(config_set_override(c, "debug", "1"), 0);
	cr_assert_eq(config_write(c, path, err, sizeof(err)), 0, "%s", err);

	cr_assert_eq(config_load(&back, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(config_get(back, "mon.a", "mon_addr", NULL), "127.0.0.2:6789");
	cr_expect_str_eq(config_get(back, "osd.3", "osd_data", NULL), "/srv/osd.3");
	cr_expect_str_eq(config_get(back, "osd.3", "note", NULL), "a;b=c:d #e");
	cr_expect_str_eq(config_get(back, "osd.3", "fsid", NULL), "0f9e");
	cr_expect_null(config_get(back, NULL, "debug", NULL), "overrides are not written");
	config_free(back);
	config_free(c);
	unlink(path);
}

Test(setters, write_to_a_missing_directory_is_an_error)
{
	struct config *c = config_new();

	cr_expect_eq(config_write(c, "/nonexistent/dir/atoll.conf", err, sizeof(err)), -ENOENT);
	cr_expect(strncmp(err, "cannot write config file '/nonexistent/dir/atoll.conf.tmp.",
			  58) == 0, "got: %s", err);
	config_free(c);
}
