/*
 * test_forecast.c - the spot risk forecast (core/forecast.c) on hand-made
 * histories: flat, a daily 09:00-18:00 peak, a pattern that moved, none at
 * all; monotonicity in the window, rendering, and cost on a long history.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/forecast.h"

#define MIN_MS  60000LL
#define HOUR_MS 3600000LL
#define DAY_MS  (24 * HOUR_MS)
#define WEEK_MS (7 * DAY_MS)
#define MONDAY  1795996800000LL /* 2026-11-30T00:00:00Z, a Monday */
#define TOTAL   8

typedef int (*pattern_fn)(int64_t t_ms);

/* Feed one sample every `step` ms over [from, to), values from fn. */
static void feed(struct jf_forecast *f, int64_t from, int64_t to, int64_t step, pattern_fn fn)
{
	for (int64_t t = from; t < to; t += step)
		jf_forecast_add(f, t, fn(t));
	jf_forecast_add(f, to, fn(to));
}

static int hour_of_day(int64_t t)
{
	return (int)((t % DAY_MS) / HOUR_MS);
}

static int flat(int64_t t)
{
	(void)t;
	return 1;
}

static int office(int64_t t)
{
	int h = hour_of_day(t);

	return h >= 9 && h < 18 ? TOTAL : 0;
}

static int evening(int64_t t)
{
	int h = hour_of_day(t);

	return h >= 20 ? TOTAL : 0;
}

static int moved(int64_t t)
{
	/* office hours for 3 weeks, then evenings */
	return t < MONDAY - 2 * WEEK_MS ? office(t) : evening(t);
}

static int moved_late(int64_t t)
{
	/* office hours for 3 weeks, evenings only in the last one */
	return t < MONDAY - WEEK_MS ? office(t) : evening(t);
}

static const int64_t windows[] = { 600, 3600, 6 * 3600, 12 * 3600 };

static void test_flat_quiet(void **state)
{
	struct jf_forecast *f = jf_forecast_new(TOTAL);

	(void)state;
	assert_non_null(f);
	feed(f, MONDAY - 3 * WEEK_MS, MONDAY, 5 * MIN_MS, flat);
	for (int h = 0; h < 48; h++)
		for (size_t w = 0; w < 4; w++) {
			double r =
				jf_forecast_risk(f, MONDAY + h * HOUR_MS, windows[w], 1, TOTAL - 1);
			assert_true(r >= 0 && r < 0.01);
		}
	assert_int_equal(jf_forecast_predicted_free(f, MONDAY + 3 * HOUR_MS), TOTAL - 1);
	jf_forecast_free(f);
}

static void test_daily_peak(void **state)
{
	struct jf_forecast *f = jf_forecast_new(TOTAL);

	(void)state;
	assert_non_null(f);
	feed(f, MONDAY - 3 * WEEK_MS, MONDAY, MIN_MS, office);
	/* the day after the history, nothing on-demand running now */
	assert_true(jf_forecast_risk(f, MONDAY + 8 * HOUR_MS, 12 * 3600, 1, TOTAL) > 0.9);
	assert_true(jf_forecast_risk(f, MONDAY + 10 * HOUR_MS, 3600, 1, TOTAL) > 0.5);
	assert_true(jf_forecast_risk(f, MONDAY + 3 * HOUR_MS, 600, 1, TOTAL) < 0.01);
	assert_true(jf_forecast_risk(f, MONDAY + 20 * HOUR_MS, 6 * 3600, 1, TOTAL) < 0.01);
	/* an 8-hour window from 00:00 ends before the peak */
	assert_true(jf_forecast_risk(f, MONDAY, 8 * 3600, 1, TOTAL) < 0.01);
	assert_int_equal(jf_forecast_predicted_free(f, MONDAY + 12 * HOUR_MS), 0);
	assert_int_equal(jf_forecast_predicted_free(f, MONDAY + 2 * HOUR_MS), TOTAL);
	/* the peak is exactly 09:00-18:00: hours 8 and 18 stay free */
	assert_int_equal(jf_forecast_predicted_free(f, MONDAY + 8 * HOUR_MS), TOTAL);
	assert_int_equal(jf_forecast_predicted_free(f, MONDAY + 9 * HOUR_MS), 0);
	assert_int_equal(jf_forecast_predicted_free(f, MONDAY + 17 * HOUR_MS), 0);
	assert_int_equal(jf_forecast_predicted_free(f, MONDAY + 18 * HOUR_MS), TOTAL);
	jf_forecast_free(f);
}

static void check_monotone(const struct jf_forecast *f, int need, int freen)
{
	for (int h = 0; h < 24; h++) {
		int64_t now = MONDAY + h * HOUR_MS + 17 * MIN_MS;
		double prev = 0;

		for (int64_t w = 0; w <= 30 * 3600; w += 300) {
			double r = jf_forecast_risk(f, now, w, need, freen);

			assert_true(r >= 0 && r <= 1);
			assert_true(r >= prev);
			prev = r;
		}
	}
}

static void test_monotone_in_window(void **state)
{
	struct jf_forecast *f = jf_forecast_new(TOTAL);
	struct jf_forecast *e = jf_forecast_new(TOTAL);
	struct jf_forecast *s = jf_forecast_new(TOTAL);

	(void)state;
	assert_non_null(f);
	assert_non_null(e);
	assert_non_null(s);
	feed(f, MONDAY - 3 * WEEK_MS, MONDAY, MIN_MS, office);
	feed(s, MONDAY - 5 * HOUR_MS, MONDAY, MIN_MS, office);
	check_monotone(f, 1, TOTAL);
	check_monotone(f, 3, 5);
	check_monotone(e, 1, 2);
	check_monotone(s, 1, 4);
	jf_forecast_free(f);
	jf_forecast_free(e);
	jf_forecast_free(s);
}

static void test_recency(void **state)
{
	struct jf_forecast *f = jf_forecast_new(TOTAL);
	struct jf_forecast *g = jf_forecast_new(TOTAL);
	double at10, at21;

	(void)state;
	assert_non_null(f);
	assert_non_null(g);
	/* two weeks of evenings after three of office hours */
	feed(f, MONDAY - 5 * WEEK_MS, MONDAY, 2 * MIN_MS, moved);
	at10 = jf_forecast_risk(f, MONDAY + 10 * HOUR_MS, 3600, 1, TOTAL);
	at21 = jf_forecast_risk(f, MONDAY + 21 * HOUR_MS, 3600, 1, TOTAL);
	assert_true(at10 < 0.1);
	assert_true(at21 > 3 * at10);
	assert_true(jf_forecast_predicted_free(f, MONDAY + 10 * HOUR_MS) >
		    jf_forecast_predicted_free(f, MONDAY + 21 * HOUR_MS));

	/* one week of the new pattern already outweighs three of the old */
	feed(g, MONDAY - 4 * WEEK_MS, MONDAY, 2 * MIN_MS, moved_late);
	at10 = jf_forecast_risk(g, MONDAY + 10 * HOUR_MS, 3600, 1, TOTAL);
	at21 = jf_forecast_risk(g, MONDAY + 21 * HOUR_MS, 3600, 1, TOTAL);
	assert_true(at21 > at10);
	jf_forecast_free(f);
	jf_forecast_free(g);
}

static void test_empty_history(void **state)
{
	struct jf_forecast *f = jf_forecast_new(TOTAL);
	double r10m, r12h;

	(void)state;
	assert_non_null(f);
	/* idle cluster: nothing on-demand, plenty of room */
	assert_true(jf_forecast_risk(f, MONDAY, 12 * 3600, 1, TOTAL) < 0.001);
	/* does not fit now */
	assert_true(jf_forecast_risk(f, MONDAY, 600, 2, 1) == 1.0);
	/* takes the last free GPU next to 7 busy ones (taken as on-demand) */
	r10m = jf_forecast_risk(f, MONDAY, 600, 1, 1);
	r12h = jf_forecast_risk(f, MONDAY, 12 * 3600, 1, 1);
	assert_true(r10m > 0 && r10m < r12h);
	assert_true(r12h > 0.5);
	/* needing nothing risks nothing */
	assert_true(jf_forecast_risk(f, MONDAY, 12 * 3600, 0, 1) == 0.0);
	/* nothing known: all free */
	assert_int_equal(jf_forecast_predicted_free(f, MONDAY), TOTAL);
	jf_forecast_free(f);
	jf_forecast_free(NULL);
}

static void test_spot_running(void **state)
{
	struct jf_forecast *f = jf_forecast_new(TOTAL);
	double alone, crowded;

	(void)state;
	assert_non_null(f);
	feed(f, MONDAY - 3 * WEEK_MS, MONDAY, 10 * MIN_MS, flat);
	/* on-demand 1; a 1-GPU spot task alone vs. next to 5 spot GPUs */
	alone = jf_forecast_risk(f, MONDAY, 6 * 3600, 1, 7);
	crowded = jf_forecast_risk(f, MONDAY, 6 * 3600, 1, 2);
	assert_true(alone <= crowded);
	assert_true(crowded < 0.5);
	/* out-of-order and out-of-range samples are tolerated */
	jf_forecast_add(f, MONDAY - DAY_MS, 99);
	jf_forecast_add(f, MONDAY + MIN_MS, -3);
	jf_forecast_free(f);
}

static size_t count_lines(const char *s, size_t *width, bool *fixed)
{
	size_t n = 0, w0 = 0;

	*fixed = true;
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t w;

		assert_non_null(nl);
		w = (size_t)(nl - s);
		if (n == 0)
			w0 = w;
		else if (w != w0)
			*fixed = false;
		n++;
		s = nl + 1;
	}
	*width = w0;
	return n;
}

static void test_render(void **state)
{
	struct jf_forecast *f[4];
	const char *const names[4] = { "4090", "a100-80g", "h200", "l40s" };
	char *text;
	size_t width;
	bool fixed;

	(void)state;
	for (int i = 0; i < 4; i++) {
		f[i] = jf_forecast_new(TOTAL * (i + 1));
		assert_non_null(f[i]);
	}
	feed(f[0], MONDAY - 2 * WEEK_MS, MONDAY, 10 * MIN_MS, office);
	feed(f[1], MONDAY - WEEK_MS, MONDAY, 10 * MIN_MS, flat);
	feed(f[2], MONDAY - 2 * HOUR_MS, MONDAY, 10 * MIN_MS, evening);
	text = jf_forecast_render((const struct jf_forecast *const *)f, names, 4,
				  MONDAY + 30 * MIN_MS);
	assert_non_null(text);
	assert_int_equal(count_lines(text, &width, &fixed), 4 * 24 + 1);
	assert_true(fixed);
	assert_true(width > 40);
	assert_true(strncmp(text, "MODEL", 5) == 0);
	assert_non_null(strstr(text, "2026-11-30T01:00:00Z"));
	assert_non_null(strstr(text, "2026-12-01T00:00:00Z"));
	assert_null(strstr(text, "2026-11-30T00:00:00Z"));
	free(text);
	for (int i = 0; i < 4; i++)
		jf_forecast_free(f[i]);
}

static double seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_long_history_cost(void **state)
{
	struct jf_forecast *f = jf_forecast_new(TOTAL);
	int64_t start = MONDAY - 1000000 * MIN_MS;
	double t0, t1, t2, sum = 0;

	(void)state;
	assert_non_null(f);
	t0 = seconds();
	for (int64_t i = 0; i < 1000000; i++) {
		int64_t t = start + i * MIN_MS;

		jf_forecast_add(f, t, office(t) - (int)(i % 3 == 0));
	}
	t1 = seconds();
	for (int i = 0; i < 10000; i++)
		sum += jf_forecast_risk(f, MONDAY + (i % 168) * HOUR_MS, 12 * 3600, 1, TOTAL);
	t2 = seconds();
	/* figures, not assertions: a test does not time itself */
	print_message("timing: 1,000,000 samples added in %.3f s; 10,000 twelve-hour "
		      "queries in %.3f s\n",
		      t1 - t0, t2 - t1);
	assert_true(sum > 0);
	/* the profile still holds the pattern */
	assert_true(jf_forecast_risk(f, MONDAY + 10 * HOUR_MS, 3600, 1, TOTAL) > 0.5);
	assert_true(jf_forecast_risk(f, MONDAY + 2 * HOUR_MS, 3600, 1, TOTAL) < 0.01);
	jf_forecast_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flat_quiet),
		cmocka_unit_test(test_daily_peak),
		cmocka_unit_test(test_monotone_in_window),
		cmocka_unit_test(test_recency),
		cmocka_unit_test(test_empty_history),
		cmocka_unit_test(test_spot_running),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_long_history_cost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
