/*
 * test_names.c - the directory name rule, "<i>-<batch>" child names, and
 * the time and duration formats (core/names.c, core/timefmt.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/names.h"
#include "core/timefmt.h"

#define N63 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789."
#define N64 N63 "x"

static void test_name_valid(void **state)
{
	static const char *const good[] = {
		"a",    "Z",     "0",       "9lives", "a.b", "a_b", "a-b",
		"a..b", "job-1", "1-batch", "v1.2.3", "A_",  "x-",  N63,
	};
	struct jf_error err;

	(void)state;
	assert_int_equal(strlen(N63), 63);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		jf_error_clear(&err);
		if (!jf_name_valid(good[i], &err))
			fail_msg("'%s' refused: %s", good[i], err.msg);
		assert_int_equal(err.code, JF_OK);
	}
}

static void test_name_invalid(void **state)
{
	static const struct {
		const char *name;
		const char *msg; /* a fragment of the message */
	} bad[] = {
		{ "", "name is empty" },
		{ N64, "name is longer than 63 characters" },
		{ ".", "must start with a letter or digit" },
		{ "..", "must start with a letter or digit" },
		{ ".hidden", "must start with a letter or digit" },
		{ "-a", "name '-a': name must start with a letter or digit" },
		{ "_a", "must start with a letter or digit" },
		{ "a b", "name 'a b' has a space: names may use A-Z a-z 0-9 . _ -" },
		{ "a/b", "name 'a/b' has a '/'" },
		{ "/", "has a '/'" },
		{ "\x01", "name '\\x01' has a control character \\x01" },
		{ "a\tb", "control character \\x09" },
		{ "a\x7f", "control character \\x7f" },
		{ "caf\xc3\xa9", "name 'caf\\xc3\\xa9' has a non-ASCII byte \\xc3" },
		{ "\xc3\xa9t\xc3\xa9", "non-ASCII" },
		{ "a:b", "has a ':'" },
		{ "a'b", "name 'a\\x27b' has a '\\x27'" },
		{ "a*", "has a '*'" },
		{ "a\\b", "has a '\\x5c'" },
	};
	struct jf_error err;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		jf_error_clear(&err);
		if (jf_name_valid(bad[i].name, &err))
			fail_msg("'%s' accepted", bad[i].name);
		assert_int_equal(err.code, JF_EINVAL);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].msg);
	}
	assert_false(jf_name_valid(NULL, &err));
	assert_false(jf_name_valid("a b", NULL));
	assert_true(jf_name_valid("ab", NULL));
}

static void test_name_long_message_is_cut(void **state)
{
	char name[300];
	struct jf_error err;

	(void)state;
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	name[100] = ' ';
	assert_false(jf_name_valid(name, &err));
	assert_non_null(strstr(err.msg, "...' has a space"));
	assert_true(strlen(err.msg) < 200);
}

static void test_name_quote(void **state)
{
	char buf[JF_NAME_QUOTE_MAX];
	char small[6];
	char all[256];

	(void)state;
	jf_name_quote("abc", buf, sizeof(buf));
	assert_string_equal(buf, "abc");
	jf_name_quote("a\nb\"", buf, sizeof(buf));
	assert_string_equal(buf, "a\\x0ab\"");
	jf_name_quote(NULL, buf, sizeof(buf));
	assert_string_equal(buf, "");
	jf_name_quote("abcdefghij", small, sizeof(small));
	assert_string_equal(small, "abcde");
	jf_name_quote("\x01\x02", small, sizeof(small));
	assert_string_equal(small, "\\x01");
	/* the worst case fits the documented size */
	memset(all, 0x01, sizeof(all) - 1);
	all[sizeof(all) - 1] = '\0';
	jf_name_quote(all, buf, sizeof(buf));
	assert_int_equal(strlen(buf), 40 * 4 + 3);
	for (int i = 0; i < 255; i++)
		all[i] = (char)(i + 1);
	jf_name_quote(all, buf, sizeof(buf));
	assert_int_equal(strlen(buf), 31 * 4 + 8 + 4 + 3); /* ' is 0x27 */
}

static void test_batch_child_name(void **state)
{
	static const struct {
		const char *dir, *batch;
		bool ok;
		int64_t index;
	} cases[] = {
		{ "1-job", "job", true, 1 },
		{ "42-job", "job", true, 42 },
		{ "10000-job", "job", true, 10000 },
		{ "1-3-x", "3-x", true, 1 },
		{ "9223372036854775807-j", "j", true, INT64_MAX },
		{ "0-job", "job", false, 0 },
		{ "01-job", "job", false, 0 },
		{ "1-jo", "job", false, 0 },
		{ "1-jobs", "job", false, 0 },
		{ "1job", "job", false, 0 },
		{ "-job", "job", false, 0 },
		{ "job", "job", false, 0 },
		{ "1-", "job", false, 0 },
		{ "a-job", "job", false, 0 },
		{ "+1-job", "job", false, 0 },
		{ "1--job", "job", false, 0 },
		{ "9223372036854775808-j", "j", false, 0 },
		{ "99999999999999999999-j", "j", false, 0 },
		{ "1-", "", false, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t ix = -7;
		bool ok = jf_batch_child_name(cases[i].dir, cases[i].batch, &ix);

		if (ok != cases[i].ok)
			fail_msg("'%s' / '%s': got %d", cases[i].dir, cases[i].batch, ok);
		if (ok)
			assert_int_equal(ix, cases[i].index);
		else
			assert_int_equal(ix, -7);
	}
	assert_true(jf_batch_child_name("3-a", "a", NULL));
	assert_false(jf_batch_child_name(NULL, "a", NULL));
	assert_false(jf_batch_child_name("1-a", NULL, NULL));
}

/* ---- timefmt ---- */

static void test_time_format(void **state)
{
	char buf[JF_TIME_BUF];
	char small[8];

	(void)state;
	jf_time_rfc3339(1795975203000, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T18:00:03Z");
	jf_time_rfc3339(1795975203999, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-29T18:00:03Z"); /* floor */
	jf_time_rfc3339(1, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	jf_time_rfc3339(1000, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:01Z");
	jf_time_rfc3339(1709208000000, buf, sizeof(buf));
	assert_string_equal(buf, "2024-02-29T12:00:00Z");
	strcpy(buf, "junk");
	jf_time_rfc3339(0, buf, sizeof(buf));
	assert_string_equal(buf, "");
	strcpy(buf, "junk");
	jf_time_rfc3339(-1000, buf, sizeof(buf));
	assert_string_equal(buf, "");
	/* past year 9999 (and past what struct tm holds) */
	jf_time_rfc3339(INT64_C(253402300800000), buf, sizeof(buf));
	assert_string_equal(buf, "");
	jf_time_rfc3339(INT64_C(253402300799000), buf, sizeof(buf));
	assert_string_equal(buf, "9999-12-31T23:59:59Z");
	jf_time_rfc3339(INT64_MAX, buf, sizeof(buf));
	assert_string_equal(buf, "");
	jf_time_rfc3339(1795975203000, small, sizeof(small));
	assert_string_equal(small, "2026-11");
	jf_time_rfc3339(1795975203000, small, 0); /* must not write */
}

static void test_time_parse(void **state)
{
	static const struct {
		const char *s;
		int64_t ms;
	} good[] = {
		{ "2026-11-29T18:00:03Z", 1795975203000 },
		{ "2026-11-29t18:00:03z", 1795975203000 },
		{ "2026-11-29T18:00:03.250Z", 1795975203250 },
		{ "2026-11-29T18:00:03.2Z", 1795975203200 },
		{ "2026-11-29T18:00:03.999999999Z", 1795975203999 },
		{ "2026-11-30T02:00:03+08:00", 1795975203000 },
		{ "2026-11-29T13:30:03-04:30", 1795975203000 },
		{ "2024-02-29T12:00:00Z", 1709208000000 },
		{ "1970-01-01T00:00:00Z", 0 },
		{ "1969-12-31T23:59:59Z", -1000 },
		{ "2016-12-31T23:59:60Z", 1483228800000 }, /* leap second */
	};
	static const char *const bad[] = {
		"",
		"2026-11-29",
		"2026-11-29T18:00:03",
		"2026-11-29 18:00:03Z",
		"2026-13-01T00:00:00Z",
		"2026-00-01T00:00:00Z",
		"2026-02-29T00:00:00Z",
		"2026-04-31T00:00:00Z",
		"2026-11-29T24:00:00Z",
		"2026-11-29T18:60:00Z",
		"2026-11-29T18:00:61Z",
		"2026-11-29T18:00:03.Z",
		"2026-11-29T18:00:03ZZ",
		"2026-11-29T18:00:03+8:00",
		"2026-11-29T18:00:03+08",
		"26-11-29T18:00:03Z",
		"2026-1-29T18:00:03Z",
		"x026-11-29T18:00:03Z",
		"2026-11-29T18:00:03Z ",
	};
	int64_t ms;
	char buf[JF_TIME_BUF];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ms = -42;
		if (!jf_time_parse_rfc3339(good[i].s, &ms))
			fail_msg("'%s' refused", good[i].s);
		assert_int_equal(ms, good[i].ms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (jf_time_parse_rfc3339(bad[i], &ms))
			fail_msg("'%s' accepted", bad[i]);
	assert_false(jf_time_parse_rfc3339(NULL, &ms));
	/* round trip */
	for (int64_t t = 1000; t < INT64_C(4000000000000); t = t * 3 + 7919000) {
		int64_t whole = t / 1000 * 1000;

		jf_time_rfc3339(t, buf, sizeof(buf));
		assert_true(jf_time_parse_rfc3339(buf, &ms));
		assert_int_equal(ms, whole);
	}
}

static void test_duration_clock(void **state)
{
	static const struct {
		int64_t s;
		const char *out;
	} cases[] = {
		{ 0, "00:00" },        { 1, "00:01" },
		{ 59, "00:59" },       { 60, "01:00" },
		{ 87, "01:27" },       { 3599, "59:59" },
		{ 3600, "1:00:00" },   { 3723, "1:02:03" },
		{ 36000, "10:00:00" }, { 360000, "100:00:00" },
		{ -5, "00:00" },       { INT64_MAX, "2562047788015215:30:07" },
	};
	char buf[48];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		jf_duration_clock(cases[i].s, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].out);
	}
	jf_duration_clock(87, buf, 3);
	assert_string_equal(buf, "01");
}

/* What editors and tools write beside a file they save, and nothing else. */
static void test_editor_temp(void **state)
{
	(void)state;
	static const char *const temps[] = {
		".spec.yaml.swp",
		".spec.yaml.swx",
		".#spec.yaml",
		"#spec.yaml#",
		"spec.yaml~",
		"spec.yaml.new",
		"spec.yml.tmp",
		"sedAb12Xz",
		"sed000000",
		"4913",
		"5036",
		".goutputstream-ABC123",
		".spec.yaml.Xy7Q2a",
		"tmp.yaml",
		"tmpk3j_x9q",
		"draft.tmp",
		"x.bak",
		"notes~",
	};
	static const char *const kept[] = {
		"notes",      "notes.txt", "results.csv", "spec", "sed", "sedAb12X",
		"sedAb12Xzz", "sed-12345", "4914",        "4912", "12",  "README",
		"",           ".",         "..",          "a/b",
	};
	for (size_t i = 0; i < sizeof(temps) / sizeof(temps[0]); i++)
		if (!jf_name_editor_temp(temps[i]))
			fail_msg("%s is an editor's temporary file", temps[i]);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (jf_name_editor_temp(kept[i]))
			fail_msg("'%s' is not an editor's temporary file", kept[i]);
	assert_false(jf_name_editor_temp(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_valid),
		cmocka_unit_test(test_name_invalid),
		cmocka_unit_test(test_name_long_message_is_cut),
		cmocka_unit_test(test_name_quote),
		cmocka_unit_test(test_batch_child_name),
		cmocka_unit_test(test_editor_temp),
		cmocka_unit_test(test_time_format),
		cmocka_unit_test(test_time_parse),
		cmocka_unit_test(test_duration_clock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
