/*
 * test_quantity.c - durations and Kubernetes quantities: tables of good and
 * bad inputs, the documented examples, and format/parse round trips on
 * pseudo-random values (fixed seed, so a failure repeats).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/quantity.h"

struct good {
	const char *s;
	int64_t v;
};

static void duration_good(void **state)
{
	static const struct good t[] = {
		{ "90s", 90 },      { "30m", 1800 },
		{ "2h", 7200 },     { "1h30m", 5400 },
		{ "1d", 86400 },    { "1h30m15s", 5415 },
		{ "0", 0 },         { "45", 45 },
		{ "1440m", 86400 }, { "0s", 0 },
		{ "1d1s", 86401 },  { "2d3h4m5s", 183845 },
		{ "007m", 420 },    { "106751991167300d", 106751991167300LL * 86400 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int64_t v = -1;
		assert_true(jf_duration_parse(t[i].s, &v));
		assert_int_equal(v, t[i].v);
	}
}

static void duration_bad(void **state)
{
	static const char *const t[] = {
		"",
		"10x",
		"1m1h",
		"1h1h",
		"-5",
		"+5",
		"1.5h",
		"h",
		"1h30",
		" 1h",
		"1h ",
		"9999999999999999999999",
		"106751991167301d",
		"1H",
		"1ms",
		"s",
		"1 h",
		"1h-1m",
		"0x10",
		"1w",
		"1y",
		"9223372036854775807s1",
	};
	(void)state;
	int64_t v = 42;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_false(jf_duration_parse(t[i], &v));
		assert_int_equal(v, 42);
	}
	assert_false(jf_duration_parse(NULL, &v));
}

static void duration_format(void **state)
{
	static const struct {
		int64_t v;
		const char *s;
	} t[] = {
		{ 90, "1m30s" },       { 3600, "1h" }, { 0, "0s" },       { 86400, "1d" },
		{ 93784, "1d2h3m4s" }, { 59, "59s" },  { 5400, "1h30m" }, { -90, "-1m30s" },
	};
	(void)state;
	char buf[64];
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		jf_duration_format(t[i].v, buf, sizeof(buf));
		assert_string_equal(buf, t[i].s);
	}
	/* truncation is safe and terminated */
	jf_duration_format(93784, buf, 4);
	assert_int_equal(strlen(buf), 3);
	jf_duration_format(INT64_MIN, buf, sizeof(buf));
	assert_true(buf[0] == '-');
}

static uint64_t rng(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void duration_roundtrip(void **state)
{
	(void)state;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	char buf[64];
	for (int i = 0; i < 20000; i++) {
		int64_t v = (int64_t)(rng(&x) >> (1 + rng(&x) % 63));
		int64_t back = -1;
		jf_duration_format(v, buf, sizeof(buf));
		assert_true(jf_duration_parse(buf, &back));
		assert_int_equal(back, v);
	}
}

static void cpu_good(void **state)
{
	static const struct good t[] = {
		{ "2", 2000 },      { "14000m", 14000 },
		{ "0.5", 500 },     { "1.5", 1500 },
		{ "9333m", 9333 },  { "0.001", 1 },
		{ "1e3", 1000000 }, { "100m", 100 },
		{ ".5", 500 },      { "1.", 1000 },
		{ "1.500", 1500 },  { "0", 0 },
		{ "1k", 1000000 },  { "1000000n", 1 },
		{ "1000u", 1 },     { "1E2", 100000 },
		{ "5e-1", 500 },    { "9223372036854775m", 9223372036854775LL },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int64_t v = -1;
		assert_true(jf_cpu_parse(t[i].s, &v));
		assert_int_equal(v, t[i].v);
	}
}

static void cpu_bad(void **state)
{
	static const char *const t[] = {
		"",
		"abc",
		"-1",
		"+1",
		"0.0005",
		"1.5m",
		"1x",
		"m",
		"1 ",
		" 1",
		"9999999999999999999999",
		"9223372036854775807",
		"1..5",
		".",
		"1e",
		"1e-4",
		"0.5m",
		"1mm",
		"2 cores",
		"1e1001",
	};
	(void)state;
	int64_t v = 42;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_false(jf_cpu_parse(t[i], &v));
		assert_int_equal(v, 42);
	}
	assert_false(jf_cpu_parse(NULL, &v));
}

static void mem_good(void **state)
{
	static const struct good t[] = {
		{ "1000", 1000 },
		{ "1k", 1000 },
		{ "1Ki", 1024 },
		{ "8Gi", 8589934592LL },
		{ "51200Mi", 51200LL << 20 },
		{ "1.5Gi", 1610612736LL },
		{ "1e9", 1000000000 },
		{ "1E", 1000000000000000000LL },
		{ "7Ei", 7LL << 60 },
		{ "0.5Ki", 512 },
		{ "1M", 1000000 },
		{ "2133Mi", 2133LL << 20 },
		{ "10666Mi", 10666LL << 20 },
		{ "101G", 101000000000LL },
		{ "0", 0 },
		{ "1.5k", 1500 },
		{ "1T", 1000000000000LL },
		{ "4200Mi", 4200LL << 20 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int64_t v = -1;
		assert_true(jf_mem_parse(t[i].s, &v));
		assert_int_equal(v, t[i].v);
	}
}

static void mem_bad(void **state)
{
	static const char *const t[] = {
		"",    "8GG", "1.5",  "500m",  "-1Gi", "1Gb", "Gi",   "9999999999999999999999",
		"8Ei", "1gi", "1 Gi", "0.3Ki", "1e19", "abc", "1KiB", "1.2.3",
	};
	(void)state;
	int64_t v = 42;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_false(jf_mem_parse(t[i], &v));
		assert_int_equal(v, 42);
	}
}

static void formats(void **state)
{
	(void)state;
	char buf[32];
	jf_mem_format(8589934592LL, buf, sizeof(buf));
	assert_string_equal(buf, "8Gi");
	jf_mem_format(1000, buf, sizeof(buf));
	assert_string_equal(buf, "1000");
	jf_mem_format(1024, buf, sizeof(buf));
	assert_string_equal(buf, "1Ki");
	jf_mem_format(0, buf, sizeof(buf));
	assert_string_equal(buf, "0");
	jf_mem_format(1536, buf, sizeof(buf));
	assert_string_equal(buf, "1536");
	jf_mem_format(51200LL << 20, buf, sizeof(buf));
	assert_string_equal(buf, "50Gi");
	jf_mem_format(7LL << 60, buf, sizeof(buf));
	assert_string_equal(buf, "7Ei");
	jf_cpu_format(12000, buf, sizeof(buf));
	assert_string_equal(buf, "12");
	jf_cpu_format(9333, buf, sizeof(buf));
	assert_string_equal(buf, "9333m");
	jf_cpu_format(0, buf, sizeof(buf));
	assert_string_equal(buf, "0");
}

static void quantity_roundtrip(void **state)
{
	(void)state;
	uint64_t x = 12345;
	char buf[64];
	for (int i = 0; i < 20000; i++) {
		int64_t v = (int64_t)(rng(&x) >> (1 + rng(&x) % 63)), back = -1;
		if (i % 3 == 0)
			v &= ~(int64_t)0xfffff; /* whole Mi often */
		jf_mem_format(v, buf, sizeof(buf));
		assert_true(jf_mem_parse(buf, &back));
		assert_int_equal(back, v);
		jf_cpu_format(v, buf, sizeof(buf));
		assert_true(jf_cpu_parse(buf, &back));
		assert_int_equal(back, v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(duration_good),   cmocka_unit_test(duration_bad),
		cmocka_unit_test(duration_format), cmocka_unit_test(duration_roundtrip),
		cmocka_unit_test(cpu_good),        cmocka_unit_test(cpu_bad),
		cmocka_unit_test(mem_good),        cmocka_unit_test(mem_bad),
		cmocka_unit_test(formats),         cmocka_unit_test(quantity_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
