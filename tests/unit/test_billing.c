/*
 * test_billing.c - billed seconds, rates, amounts, saturating totals and
 * money text (core/billing.c), at the boundaries and against the
 * product's numbers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/billing.h"
#include "core/cluster.h"

#define YEAR_S (365 * INT64_C(86400))

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

static void test_seconds(void **state)
{
	static const struct {
		int64_t start, end, s;
	} cases[] = {
		{ 0, 0, 0 },
		{ 0, 999, 0 },
		{ 0, 1000, 1 },
		{ 999, 1001, 1 }, /* crosses a second boundary */
		{ 1, 999, 0 },    /* inside one second */
		{ 1000, 1999, 0 },
		{ 1999, 2000, 1 },
		{ 1500, 70500, 69 },
		{ 1000, 999, 0 }, /* end before start */
		{ 5000, 1000, 0 },
		{ -1, 0, 1 }, /* floor, not truncation */
		{ -1500, -500, 1 },
		{ -1000, -1, 0 },
		{ 0, 10 * YEAR_S * 1000, 10 * YEAR_S },
		{ INT64_MIN, INT64_MAX, INT64_MAX / 1000 - (INT64_MIN / 1000 - 1) },
		{ INT64_MAX, INT64_MIN, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t got = jf_bill_seconds(cases[i].start, cases[i].end);

		if (got != cases[i].s)
			fail_msg("case %zu: %lld..%lld gave %lld, want %lld", i,
				 (long long)cases[i].start, (long long)cases[i].end, (long long)got,
				 (long long)cases[i].s);
	}
}

/* Cutting a run anywhere (at ms precision) never gains or loses a second. */
static void test_segments_sum(void **state)
{
	uint64_t seed = 12345;

	(void)state;
	for (int round = 0; round < 2000; round++) {
		int64_t start = (int64_t)(lcg(&seed) % 4000000000000ULL);
		int64_t end = start + (int64_t)(lcg(&seed) % 100000000ULL);
		int64_t whole = jf_bill_seconds(start, end), sum = 0, at = start;
		int cuts = (int)(lcg(&seed) % 20);

		for (int c = 0; c < cuts; c++) {
			int64_t next = at + (int64_t)(lcg(&seed) % (uint64_t)(end - at + 1));

			sum += jf_bill_seconds(at, next);
			at = next;
		}
		sum += jf_bill_seconds(at, end);
		assert_int_equal(sum, whole);
	}
	/* Amounts are rounded per segment, so they add up exactly only where
	 * a second costs a whole number of micro-units: 69 one-second
	 * segments at 3.60/h cost what one 69-second segment does. */
	{
		int64_t sum = 0;

		for (int i = 0; i < 69; i++)
			sum += jf_bill_amount(jf_bill_seconds(i * 1000 + 500, i * 1000 + 1500),
					      3600000);
		assert_int_equal(sum, jf_bill_amount(69, 3600000));
	}
}

static void test_rate(void **state)
{
	struct jf_cluster *c = jf_cluster_builtin();
	int m4090, mh800;

	(void)state;
	assert_non_null(c);
	m4090 = jf_cluster_model_index(c, "4090");
	mh800 = jf_cluster_model_index(c, "H800");
	assert_true(m4090 >= 0 && mh800 >= 0);

	assert_int_equal(jf_bill_rate(c, m4090, 1, 20000, JF_BILL_ONDEMAND), 3600000);
	assert_int_equal(jf_bill_rate(c, m4090, 1, 20000, JF_BILL_SPOT), 1080000);
	assert_int_equal(jf_bill_rate(c, m4090, 8, 0, JF_BILL_ONDEMAND), 28800000);
	assert_int_equal(jf_bill_rate(c, mh800, 8, 0, JF_BILL_ONDEMAND), 128000000);
	assert_int_equal(jf_bill_rate(c, mh800, 2, 0, JF_BILL_SPOT), 9600000);
	/* CPU-only: cores x the CPU price, rounded half up to the micro-unit */
	assert_int_equal(jf_bill_rate(c, -1, 0, 1000, JF_BILL_ONDEMAND), 50000);
	assert_int_equal(jf_bill_rate(c, -1, 0, 1000, JF_BILL_SPOT), 15000);
	assert_int_equal(jf_bill_rate(c, -1, 0, 4000, JF_BILL_ONDEMAND), 200000);
	assert_int_equal(jf_bill_rate(c, -1, 0, 1500, JF_BILL_SPOT), 22500);
	assert_int_equal(jf_bill_rate(c, -1, 0, 1, JF_BILL_ONDEMAND), 50);
	assert_int_equal(jf_bill_rate(c, -1, 0, 1, JF_BILL_SPOT), 15);
	assert_int_equal(jf_bill_rate(c, -1, 0, 0, JF_BILL_SPOT), 0);
	assert_int_equal(jf_bill_rate(c, -1, 0, -1000, JF_BILL_SPOT), 0);
	/* nonsense shapes bill nothing */
	assert_int_equal(jf_bill_rate(c, 99, 1, 0, JF_BILL_ONDEMAND), 0);
	assert_int_equal(jf_bill_rate(c, m4090, 0, 0, JF_BILL_ONDEMAND), 0);
	assert_int_equal(jf_bill_rate(c, m4090, -1, 0, JF_BILL_ONDEMAND), 0);
	assert_int_equal(jf_bill_rate(NULL, 0, 1, 0, JF_BILL_ONDEMAND), 0);

	/* rounding and saturation with odd prices */
	c->cpu_price_ondemand = 1; /* one micro-unit per core-hour */
	assert_int_equal(jf_bill_rate(c, -1, 0, 499, JF_BILL_ONDEMAND), 0);
	assert_int_equal(jf_bill_rate(c, -1, 0, 500, JF_BILL_ONDEMAND), 1);
	assert_int_equal(jf_bill_rate(c, -1, 0, 1499, JF_BILL_ONDEMAND), 1);
	assert_int_equal(jf_bill_rate(c, -1, 0, 1500, JF_BILL_ONDEMAND), 2);
	c->cpu_price_ondemand = INT64_MAX;
	assert_int_equal(jf_bill_rate(c, -1, 0, INT64_MAX, JF_BILL_ONDEMAND), INT64_MAX);
	assert_int_equal(jf_bill_rate(c, -1, 0, 1000, JF_BILL_ONDEMAND), INT64_MAX);
	assert_int_equal(jf_bill_rate(c, -1, 0, 999, JF_BILL_ONDEMAND),
			 (int64_t)(((unsigned __int128)INT64_MAX * 999 + 500) / 1000));
	c->models[m4090].price_ondemand = INT64_MAX / 2;
	assert_int_equal(jf_bill_rate(c, m4090, 2, 0, JF_BILL_ONDEMAND), INT64_MAX - 1);
	assert_int_equal(jf_bill_rate(c, m4090, 3, 0, JF_BILL_ONDEMAND), INT64_MAX);
	c->models[m4090].price_ondemand = INT64_MAX;
	assert_int_equal(jf_bill_rate(c, m4090, 64, 0, JF_BILL_ONDEMAND), INT64_MAX);
	jf_cluster_free(c);
}

static void test_amount(void **state)
{
	static const struct {
		int64_t s, rate, amount;
	} cases[] = {
		{ 0, 3600000, 0 },
		{ 1, 3600000, 1000 },   /* 1 s at 3.60/h, exact */
		{ 1, 1080000, 300 },    /* 1 s at 1.08/h, exact */
		{ 1, 50000, 14 },       /* 1 s of one core: 13.89 -> 14 */
		{ 1, 15000, 4 },        /* 4.17 -> 4 */
		{ 69, 3600000, 69000 }, /* the product's demo: 0.069 CNY */
		{ 69, 1080000, 20700 }, /* and on spot: 0.0207 CNY */
		{ 1, 1800, 1 },         /* exactly half: up */
		{ 1, 1799, 0 },
		{ 3, 600, 1 },  /* 0.5 -> 1 */
		{ 1, 5399, 1 }, /* 1.4997 -> 1 */
		{ 1, 5400, 2 }, /* 1.5 -> 2 */
		{ 3600, 1, 1 },
		{ 1799, 1, 0 },
		{ 1800, 1, 1 },
		{ 1, 0, 0 },
		{ -1, 3600000, 0 },
		{ 1, -3600000, 0 },
		{ INT64_MIN, INT64_MIN, 0 },
		{ 3600, 28800000, 28800000 },
		/* ten years on 8 x H800: 11,212,800.00 CNY */
		{ 10 * YEAR_S, 128000000, INT64_C(11212800000000) },
		/* huge inputs saturate instead of wrapping */
		{ INT64_MAX, 3600, INT64_MAX },
		{ INT64_MAX, 3601, INT64_MAX },
		{ INT64_MAX, INT64_MAX, INT64_MAX },
		{ 3600, INT64_MAX, INT64_MAX },
		{ 3599, INT64_MAX, (int64_t)(((unsigned __int128)INT64_MAX * 3599 + 1800) / 3600) },
		{ INT64_MAX / 2, 7200, INT64_MAX - 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t got = jf_bill_amount(cases[i].s, cases[i].rate);

		if (got != cases[i].amount)
			fail_msg("case %zu: %lld s at %lld gave %lld, want %lld", i,
				 (long long)cases[i].s, (long long)cases[i].rate, (long long)got,
				 (long long)cases[i].amount);
	}
}

/* Edge cases of one node's segments: empty, sub-second, split anywhere,
 * split many times (daemon stops and adoptions), a century, and amounts
 * whose naive product overflows int64. */
static void test_segment_edges(void **state)
{
	/* 2026-11-29T18:00:03Z */
	const int64_t t0 = INT64_C(1795975203000);

	(void)state;
	/* a 0 s segment bills nothing */
	assert_int_equal(jf_bill_seconds(t0, t0), 0);
	assert_int_equal(jf_bill_amount(jf_bill_seconds(t0, t0), 3600000), 0);
	assert_int_equal(jf_bill_seconds(t0 + 500, t0 + 500), 0);
	/* one second */
	assert_int_equal(jf_bill_seconds(t0, t0 + 1000), 1);
	assert_int_equal(jf_bill_amount(jf_bill_seconds(t0, t0 + 1000), 3600000), 1000);
	/* start and end inside one second: 0 s; across a boundary: 1 s */
	assert_int_equal(jf_bill_seconds(t0 + 100, t0 + 900), 0);
	assert_int_equal(jf_bill_seconds(t0 + 1, t0 + 999), 0);
	assert_int_equal(jf_bill_seconds(t0 + 900, t0 + 1100), 1);
	assert_int_equal(jf_bill_seconds(t0 + 999, t0 + 1000), 1);

	/* split in two at a sub-second point: the same seconds as unsplit */
	static const struct {
		int64_t a, b, c, whole;
	} splits[] = {
		{ 250, 5600, 9100, 9 }, /* 5 + 4 */
		{ 250, 700, 3100, 3 },  /* 0 + 3: the cut in the start's second */
		{ 250, 2999, 3000, 3 }, /* 2 + 1: the cut a ms before a boundary */
		{ 250, 3000, 3001, 3 }, /* 3 + 0: the cut on a boundary */
		{ 999, 1000, 1001, 1 }, /* 1 + 0 */
		{ 0, 0, 1000, 1 },      /* 0 + 1: an empty first part */
	};
	for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
		int64_t a = t0 + splits[i].a, b = t0 + splits[i].b, c = t0 + splits[i].c;

		assert_int_equal(jf_bill_seconds(a, c), splits[i].whole);
		assert_int_equal(jf_bill_seconds(a, b) + jf_bill_seconds(b, c), splits[i].whole);
	}

	/* pause-like: an hour cut every 333 ms (the last piece shorter) bills
	 * 3600 s, and at a rate of whole micro-units per second the amounts of
	 * the pieces add up to the amount of the hour */
	{
		int64_t secs = 0, amount = 0, n = 0;

		for (int64_t at = t0 + 250; at < t0 + 250 + 3600000; at += 333) {
			int64_t next = at + 333;

			if (next > t0 + 250 + 3600000)
				next = t0 + 250 + 3600000;
			secs += jf_bill_seconds(at, next);
			amount = jf_bill_add(amount,
					     jf_bill_amount(jf_bill_seconds(at, next), 3600000));
			n++;
		}
		assert_int_equal(n, 10811);
		assert_int_equal(secs, 3600);
		assert_int_equal(secs, jf_bill_seconds(t0 + 250, t0 + 250 + 3600000));
		assert_int_equal(amount, jf_bill_amount(3600, 3600000));
		assert_int_equal(amount, 3600000);
	}
	/* pieces of irregular length, some empty, some inside one second */
	{
		static const int64_t cuts[] = { 0,    1,    999,  1000,  1000,  1001,  2500,
						2501, 7999, 8000, 61234, 61234, 61999, 3600000 };
		int64_t secs = 0;

		for (size_t i = 1; i < sizeof(cuts) / sizeof(cuts[0]); i++)
			secs += jf_bill_seconds(t0 + 7 + cuts[i - 1], t0 + 7 + cuts[i]);
		assert_int_equal(secs, jf_bill_seconds(t0 + 7, t0 + 7 + 3600000));
		assert_int_equal(secs, 3600);
	}

	/* a hundred years (365-day years) on 8 x H800: 112,128,000.00 CNY */
	{
		int64_t end = t0 + 100 * YEAR_S * 1000;

		assert_int_equal(jf_bill_seconds(t0, end), 100 * YEAR_S);
		assert_int_equal(jf_bill_seconds(t0, end), INT64_C(3153600000));
		assert_int_equal(jf_bill_amount(100 * YEAR_S, 128000000), INT64_C(112128000000000));
	}
	/* seconds x rate overflows int64 (3.15e22), the amount does not: exact */
	{
		int64_t s = 100 * YEAR_S, rate = INT64_C(10000000000000);
		int64_t prod;

		assert_true(__builtin_mul_overflow(s, rate, &prod));
		assert_int_equal(jf_bill_amount(s, rate), INT64_C(8760000000000000000));
		/* one second more: 8760000002777777777.78 rounds up */
		assert_true(__builtin_mul_overflow(s + 1, rate, &prod));
		assert_int_equal(jf_bill_amount(s + 1, rate), INT64_C(8760000002777777778));
		/* twice the rate: 1.75e19 is past INT64_MAX and saturates */
		assert_int_equal(jf_bill_amount(s, 2 * rate), INT64_MAX);
	}

	/* half up at the boundary: 1 micro-unit per hour */
	assert_int_equal(jf_bill_amount(jf_bill_seconds(t0, t0 + 1800000), 1), 1); /* 0.5 */
	assert_int_equal(jf_bill_amount(jf_bill_seconds(t0, t0 + 1799999), 1), 0); /* 0.4997 */
	/* 1800 s between floor-second boundaries, not 1800000 ms */
	assert_int_equal(jf_bill_amount(jf_bill_seconds(t0 + 999, t0 + 1800001), 1), 1);
	assert_int_equal(jf_bill_amount(jf_bill_seconds(t0 + 1001, t0 + 1800999), 1), 0);
	assert_int_equal(jf_bill_amount(5399, 1), 1); /* 1.4997 */
	assert_int_equal(jf_bill_amount(5400, 1), 2); /* 1.5 */
	assert_int_equal(jf_bill_amount(1800, 3), 2); /* 1.5 */
	assert_int_equal(jf_bill_amount(1799, 3), 1); /* 1.499 */
}

/* jf_bill_add saturates in both directions and is exact in between. */
static void test_add(void **state)
{
	static const struct {
		int64_t a, b, sum;
	} cases[] = {
		{ 0, 0, 0 },
		{ 1, 2, 3 },
		{ -5, 3, -2 },
		{ INT64_MAX, 0, INT64_MAX },
		{ INT64_MAX, 1, INT64_MAX },
		{ INT64_MAX - 5, 5, INT64_MAX },
		{ INT64_MAX - 5, 6, INT64_MAX },
		{ INT64_MAX - 5, 4, INT64_MAX - 1 },
		{ INT64_MAX, INT64_MAX, INT64_MAX },
		{ 1, INT64_MAX, INT64_MAX },
		{ INT64_MIN, 0, INT64_MIN },
		{ INT64_MIN, -1, INT64_MIN },
		{ INT64_MIN + 5, -5, INT64_MIN },
		{ INT64_MIN + 5, -6, INT64_MIN },
		{ INT64_MIN + 5, -4, INT64_MIN + 1 },
		{ INT64_MIN, INT64_MIN, INT64_MIN },
		{ -1, INT64_MIN, INT64_MIN },
		{ INT64_MAX, INT64_MIN, -1 },
		{ INT64_MIN, INT64_MAX, -1 },
		{ INT64_MAX, -1, INT64_MAX - 1 },
		{ INT64_MIN, 1, INT64_MIN + 1 },
	};
	uint64_t seed = 7;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t got = jf_bill_add(cases[i].a, cases[i].b);

		if (got != cases[i].sum)
			fail_msg("case %zu: %lld + %lld gave %lld, want %lld", i,
				 (long long)cases[i].a, (long long)cases[i].b, (long long)got,
				 (long long)cases[i].sum);
	}
	/* against a plain 128-bit sum clamped to int64 */
	for (int i = 0; i < 20000; i++) {
		int64_t a = (int64_t)(lcg(&seed) << 33 ^ lcg(&seed) << 2 ^ lcg(&seed));
		int64_t b = (int64_t)(lcg(&seed) << 33 ^ lcg(&seed) << 2 ^ lcg(&seed));
		int64_t d = (int64_t)(lcg(&seed) % 3) - 1;
		__int128 r;

		/* every other pair lands within one of a limit */
		if (i % 2 && a > 0)
			b = INT64_MAX - a + d;
		else if (i % 2 && a < 0)
			b = INT64_MIN - a + d;
		r = (__int128)a + b;
		if (r > INT64_MAX)
			r = INT64_MAX;
		if (r < INT64_MIN)
			r = INT64_MIN;
		assert_int_equal(jf_bill_add(a, b), (int64_t)r);
	}
	/* a running total: once at the top it stays there while adding more */
	{
		int64_t total = 0;

		for (int i = 0; i < 5; i++)
			total = jf_bill_add(total, INT64_MAX / 3 + 1);
		assert_int_equal(total, INT64_MAX);
	}
}

/* The product's demo end to end: 69 s on one 4090. */
static void test_demo(void **state)
{
	struct jf_cluster *c = jf_cluster_builtin();
	int64_t start = INT64_C(1795975203250), end = start + 69000;
	int64_t s = jf_bill_seconds(start, end);
	int m = jf_cluster_model_index(c, "4090");
	char buf[64];

	(void)state;
	assert_int_equal(s, 69);
	jf_money_format(jf_bill_amount(s, jf_bill_rate(c, m, 1, 0, JF_BILL_ONDEMAND)), c->currency,
			buf, sizeof(buf));
	assert_string_equal(buf, "0.069 CNY");
	jf_money_format(jf_bill_amount(s, jf_bill_rate(c, m, 1, 0, JF_BILL_SPOT)), c->currency, buf,
			sizeof(buf));
	assert_string_equal(buf, "0.0207 CNY");
	jf_cluster_free(c);
}

static void test_money_format(void **state)
{
	static const struct {
		int64_t micro;
		const char *cur, *out;
	} cases[] = {
		{ 69000, "CNY", "0.069 CNY" },
		{ 20700, "CNY", "0.0207 CNY" },
		{ 0, "CNY", "0.00 CNY" },
		{ 3600000, "CNY", "3.60 CNY" },
		{ 12345678, "CNY", "12.345678 CNY" },
		{ -500000, "CNY", "-0.50 CNY" },
		{ -1, "CNY", "-0.000001 CNY" },
		{ 1, "USD", "0.000001 USD" },
		{ 10000, "CNY", "0.01 CNY" },
		{ 100000, "CNY", "0.10 CNY" },
		{ 1000000, "CNY", "1.00 CNY" },
		{ 1010000, "CNY", "1.01 CNY" },
		{ 1001000, "CNY", "1.001 CNY" },
		{ 70000, "CNY", "0.07 CNY" },
		{ 11212800000000, "CNY", "11212800.00 CNY" },
		{ INT64_MAX, "CNY", "9223372036854.775807 CNY" },
		{ INT64_MIN, "CNY", "-9223372036854.775808 CNY" },
		{ 3600000, NULL, "3.60" },
		{ 3600000, "", "3.60" },
	};
	char buf[64], small[5];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		jf_money_format(cases[i].micro, cases[i].cur, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].out);
	}
	jf_money_format(3600000, "CNY", small, sizeof(small));
	assert_string_equal(small, "3.60");
	jf_money_format(3600000, "CNY", small, 0); /* writes nothing */
}

static void test_money_parse(void **state)
{
	static const struct {
		const char *s;
		int64_t micro;
	} good[] = {
		{ "3.60", 3600000 },
		{ "3.6", 3600000 },
		{ "3", 3000000 },
		{ "0", 0 },
		{ "0.0", 0 },
		{ "0.000001", 1 },
		{ "0.015", 15000 },
		{ "1.08", 1080000 },
		{ "16.00", 16000000 },
		{ "007.5", 7500000 },
		{ "12.345678", 12345678 },
		{ "9223372036854.775807", INT64_MAX },
		{ "9223372036854", INT64_C(9223372036854000000) },
	};
	static const char *const bad[] = {
		"",
		"1.2345678",
		"abc",
		"-1",
		"-0.5",
		"+1",
		"1e3",
		" 1",
		"1 ",
		".5",
		"5.",
		"1.2.3",
		"1,5",
		"0x10",
		"3.60 CNY",
		"9223372036854.775808",
		"9223372036855",
		"99999999999999999999",
		"1.0000000",
	};
	int64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = -42;
		if (!jf_money_parse(good[i].s, &v))
			fail_msg("'%s' refused", good[i].s);
		assert_int_equal(v, good[i].micro);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = -42;
		if (jf_money_parse(bad[i], &v))
			fail_msg("'%s' accepted", bad[i]);
		assert_int_equal(v, -42);
	}
	assert_false(jf_money_parse(NULL, &v));
}

/* format then parse gives the amount back, for any non-negative amount */
static void test_money_round_trip(void **state)
{
	uint64_t seed = 99;
	char buf[64], *sp;
	int64_t v;

	(void)state;
	for (int i = 0; i < 5000; i++) {
		int64_t m = (int64_t)((lcg(&seed) << 31 ^ lcg(&seed)) % (uint64_t)INT64_MAX);

		if (i % 3 == 0)
			m %= 100000000;
		jf_money_format(m, "CNY", buf, sizeof(buf));
		sp = strchr(buf, ' ');
		assert_non_null(sp);
		*sp = '\0';
		assert_true(jf_money_parse(buf, &v));
		assert_int_equal(v, m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seconds),       cmocka_unit_test(test_segments_sum),
		cmocka_unit_test(test_rate),          cmocka_unit_test(test_amount),
		cmocka_unit_test(test_segment_edges), cmocka_unit_test(test_add),
		cmocka_unit_test(test_demo),          cmocka_unit_test(test_money_format),
		cmocka_unit_test(test_money_parse),   cmocka_unit_test(test_money_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
