/*
 * test_plot.c - core/svg.c and core/plot*.c against hand-made data: the
 * writer's escaping and numbers, tick steps and labels, the Okabe-Ito
 * colours, and each plot's parts counted in its text (bars, bands, legend
 * entries, tick labels), empty data, and the timeline's switch from rows
 * to bands.  That the text parses as XML and renders is checked on a real
 * mount (tests/integration/test_plots.py).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plot.h"
#include "core/svg.h"

#define T0 INT64_C(1764930600000) /* 2025-12-05T10:30:00Z */

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Every plot has the prologue, a title, axes and a legend. */
static void common(const char *svg)
{
	assert_non_null(svg);
	assert_true(strncmp(svg, "<?xml version=\"1.0\"", 19) == 0);
	assert_non_null(strstr(svg, "xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(svg, "version=\"1.1\""));
	assert_non_null(strstr(svg, "viewBox=\"0 0 "));
	assert_int_equal(count(svg, "<title>"), count(svg, "</title>"));
	assert_int_equal(count(svg, "class=\"axis x-axis\""), 1);
	assert_int_equal(count(svg, "class=\"axis y-axis\""), 1);
	assert_int_equal(count(svg, "<g class=\"legend\">"), 1);
	assert_int_equal(count(svg, "<svg "), 1);
	assert_int_equal(count(svg, "</svg>"), 1);
	assert_int_equal(count(svg, "<g"), count(svg, "</g>"));
	/* nothing a locale would write */
	assert_null(strstr(svg, "nan"));
	assert_null(strstr(svg, "inf\""));
}

static void svg_escaping(void **state)
{
	(void)state;
	struct jf_svg s;
	jf_svg_init(&s, 0);
	jf_svg_text(&s, "a<b & \"c\" 'd'>");
	jf_svg_text(&s, "\x01\xff\xc3\xa9"); /* control, not UTF-8, then é */
	size_t len;
	char *t = jf_svg_finish(&s, &len);
	assert_string_equal(t, "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;??\xc3\xa9");
	assert_int_equal(len, strlen(t));
	free(t);
}

static void svg_numbers(void **state)
{
	(void)state;
	/* a locale with a decimal comma, where the system has one */
	setlocale(LC_NUMERIC, "de_DE.UTF-8");
	struct jf_svg s;
	jf_svg_init(&s, 0);
	double v[] = { 0, 12, 12.5, -0.5, 1.04, -0.04, 1e300, 0.0 / 0.0 };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		jf_svg_num(&s, v[i]);
		jf_svg_raw(&s, " ");
	}
	size_t len;
	char *t = jf_svg_finish(&s, &len);
	assert_string_equal(t, "0 12 12.5 -0.5 1 0 1000000000000000 0 ");
	free(t);
	setlocale(LC_NUMERIC, "C");
}

static void svg_cap(void **state)
{
	(void)state;
	struct jf_svg s;
	jf_svg_init(&s, 100);
	for (int i = 0; i < 50; i++)
		jf_svg_raw(&s, "0123456789");
	size_t len = 1;
	assert_null(jf_svg_finish(&s, &len));
	assert_int_equal(len, 0);
}

static void ticks_amounts(void **state)
{
	(void)state;
	struct jf_ticks t;
	jf_ticks_amount(0, 32, 8, true, &t);
	assert_int_equal(t.n, 7); /* 0 5 .. 30 */
	assert_string_equal(t.label[0], "0");
	assert_string_equal(t.label[6], "30");
	jf_ticks_amount(0, 1.3, 8, false, &t);
	assert_string_equal(t.label[1], "0.2");
	assert_int_equal(t.n, 7);
	jf_ticks_amount(0, 3, 8, true, &t); /* GPUs: no half steps */
	assert_int_equal(t.n, 4);
	assert_string_equal(t.label[3], "3");
	jf_ticks_amount(0, 0, 8, false, &t); /* empty range */
	assert_true(t.n >= 2);
	jf_ticks_cover(0, 0.0079, 8, false, &t); /* the top covers the value */
	assert_string_equal(t.label[t.n - 1], "0.008");
	jf_ticks_cover(0, 32, 8, true, &t);
	assert_string_equal(t.label[t.n - 1], "35");
	jf_ticks_amount(0, 0.05, 6, false, &t);
	assert_string_equal(t.label[1], "0.01");
}

static void ticks_times(void **state)
{
	(void)state;
	struct jf_ticks t;
	/* 50 minutes in at most 10 ticks: every 10 minutes, clock labels */
	jf_ticks_time(T0 + 60000, T0 + 51 * 60000, 10, false, &t);
	assert_int_equal((int64_t)t.step, 600000);
	assert_string_equal(t.label[0], "10:40");
	assert_string_equal(t.label[t.n - 1], "11:20");
	/* relative: +0, +5m, ... */
	jf_ticks_time(T0, T0 + 30 * 60000, 8, true, &t);
	assert_string_equal(t.label[0], "+0");
	assert_string_equal(t.label[1], "+5m");
	/* seconds */
	jf_ticks_time(T0, T0 + 40000, 10, true, &t);
	assert_string_equal(t.label[1], "+5s");
	jf_ticks_time(T0, T0 + 40000, 10, false, &t);
	assert_string_equal(t.label[1], "10:30:05");
	/* below a second */
	jf_ticks_time(T0, T0 + 300, 8, true, &t);
	assert_string_equal(t.label[1], "+0.1s");
	assert_int_equal(t.n, 4);
	jf_ticks_time(T0, T0 + 2500, 8, false, &t);
	assert_string_equal(t.label[1], "10:30:00.5");
	/* hours and minutes */
	jf_ticks_time(T0, T0 + 9 * 3600000, 4, true, &t);
	assert_string_equal(t.label[1], "+3h");
	/* days: dates */
	jf_ticks_time(T0, T0 + 6 * 86400000LL, 8, false, &t);
	assert_string_equal(t.label[0], "Dec 6");
	assert_int_equal(t.n, 6);
	jf_ticks_time(T0, T0 + 36 * 3600000LL + 1800000, 8, true, &t);
	assert_string_equal(t.label[1], "+6h");
	jf_ticks_time(T0, T0 + 3 * 86400000LL + 43200000, 4, true, &t);
	assert_string_equal(t.label[1], "+1d");
	jf_ticks_time(T0, T0 + 4 * 3600000LL, 9, true, &t);
	assert_string_equal(t.label[3], "+1h30m");
}

static void colours(void **state)
{
	(void)state;
	/* Okabe-Ito: green for done, vermillion for failed, orange preempted */
	assert_string_equal(jf_plot_outcome_colour(JF_PO_SUCCEEDED), "#009E73");
	assert_string_equal(jf_plot_outcome_colour(JF_PO_FAILED), "#D55E00");
	assert_string_equal(jf_plot_outcome_colour(JF_PO_PREEMPTED), "#E69F00");
	for (int i = 0; i < JF_PO__COUNT; i++)
		for (int j = 0; j < i; j++)
			assert_string_not_equal(jf_plot_outcome_colour(i),
						jf_plot_outcome_colour(j));
	assert_string_equal(jf_plot_colour(0), jf_plot_colour(8));
}

static char *timeline(int64_t tasks, const struct jf_plot_attempt *a, size_t n, bool *agg,
		      const char *title)
{
	struct jf_timeline_opts o = { title, tasks, 1, T0, T0 + 600000 };
	struct jf_timeline *t = jf_timeline_new(&o);
	assert_non_null(t);
	for (size_t i = 0; i < n; i++)
		assert_true(jf_timeline_add(t, &a[i]));
	if (agg)
		*agg = jf_timeline_aggregated(t);
	size_t len;
	char *svg = jf_timeline_svg(t, &len);
	jf_timeline_free(t);
	assert_non_null(svg);
	assert_int_equal(len, strlen(svg));
	common(svg);
	return svg;
}

static void timeline_rows(void **state)
{
	(void)state;
	/* task 1 failed, then was retried and succeeded; task 2 preempted, runs */
	struct jf_plot_attempt a[] = {
		{ 0, 0, 1, T0, T0 + 60000, JF_PO_SUCCEEDED },
		{ 1, 0, 1, T0, T0 + 30000, JF_PO_FAILED },
		{ 1, 0, 2, T0 + 31000, T0 + 90000, JF_PO_SUCCEEDED },
		{ 2, 0, 1, T0 + 1000, T0 + 20000, JF_PO_PREEMPTED },
		{ 2, 0, 2, T0 + 40000, T0 + 600000, JF_PO_RUNNING },
		{ 9, 0, 1, T0, T0 + 1000, JF_PO_FAILED }, /* no such task: left out */
	};
	bool agg = true;
	char *svg = timeline(3, a, 6, &agg, "Timeline of group <a&b>");
	assert_false(agg);
	assert_int_equal(count(svg, "<rect class=\"bar\""), 5);
	assert_int_equal(count(svg, "class=\"legend-entry\""), 5);
	assert_non_null(strstr(svg, "<title>Timeline of group &lt;a&amp;b&gt;</title>"));
	assert_non_null(strstr(svg, "Succeeded (2)"));
	assert_non_null(strstr(svg, "Failed (1)"));
	assert_non_null(strstr(svg, "Preempted (1)"));
	assert_non_null(strstr(svg, "Running (1)"));
	assert_non_null(strstr(svg, "task 1 node 0 attempt 2: Succeeded, 00:59"));
	/* ten minutes, relative ticks */
	assert_non_null(strstr(svg, ">+0</text>"));
	assert_non_null(strstr(svg, ">+2m</text>"));
	assert_non_null(strstr(svg, ">+10m</text>"));
	/* the task axis: 0 1 2 */
	assert_non_null(strstr(svg, ">2</text>"));
	assert_null(strstr(svg, "class=\"band\""));
	free(svg);
}

static void timeline_empty(void **state)
{
	(void)state;
	char *svg = timeline(0, NULL, 0, NULL, "empty");
	assert_int_equal(count(svg, "<rect class=\"bar\""), 0);
	assert_non_null(strstr(svg, "no attempt has started yet"));
	assert_int_equal(count(svg, "class=\"legend-entry\""), 5);
	free(svg);
	svg = timeline(4, NULL, 0, NULL, "waiting");
	assert_non_null(strstr(svg, "no attempt has started yet"));
	free(svg);
}

static void timeline_threshold(void **state)
{
	(void)state;
	struct jf_plot_attempt *a = calloc(10000, sizeof(*a));
	assert_non_null(a);
	for (int64_t i = 0; i < 10000; i++)
		a[i] = (struct jf_plot_attempt){ i,
						 0,
						 1,
						 T0 + i * 50,
						 T0 + i * 50 + 30000,
						 i % 10 == 7 ? JF_PO_FAILED : JF_PO_SUCCEEDED };
	bool agg;
	/* JF_TIMELINE_ROWS tasks: still a row each */
	char *svg = timeline(JF_TIMELINE_ROWS, a, JF_TIMELINE_ROWS, &agg, "200");
	assert_false(agg);
	assert_int_equal(count(svg, "<rect class=\"bar\""), JF_TIMELINE_ROWS);
	free(svg);
	/* one more: bands */
	svg = timeline(JF_TIMELINE_ROWS + 1, a, JF_TIMELINE_ROWS + 1, &agg, "201");
	assert_true(agg);
	assert_int_equal(count(svg, "<rect class=\"bar\""), 0);
	assert_true(count(svg, "class=\"band-row\"") <= JF_TIMELINE_BANDS);
	free(svg);
	/* 10,000 tasks: 100 bands of 100, each with its failures; small */
	svg = timeline(10000, a, 10000, &agg, "10000");
	assert_true(agg);
	assert_int_equal(count(svg, "class=\"band-row\""), 100);
	assert_int_equal(count(svg, "<rect class=\"bar\""), 0);
	assert_int_equal(count(svg, "fill=\"#D55E00\" d=\"M"), 100); /* a Failed area each */
	assert_non_null(strstr(svg, "Succeeded (9000)"));
	assert_non_null(strstr(svg, "Failed (1000)"));
	assert_non_null(strstr(svg, "100 bands of 100"));
	assert_true(strlen(svg) < 1000000);
	free(svg);
	free(a);
}

static void steps_peaks(void **state)
{
	(void)state;
	double peak[4];
	struct jf_steps s;
	jf_steps_init(&s, 0, 400, 4, peak); /* buckets of 100 */
	jf_steps_add(&s, -50, 2);           /* began before: 2 from the start */
	jf_steps_add(&s, 150, 4);           /* 6 in bucket 1 */
	jf_steps_add(&s, 160, -4);
	jf_steps_add(&s, 200, -2); /* 0 from bucket 2 */
	jf_steps_add(&s, 350, 1);
	jf_steps_end(&s);
	assert_true(peak[0] == 2);
	assert_true(peak[1] == 6);
	assert_true(peak[2] == 0);
	assert_true(peak[3] == 1);
}

static void usage_plot(void **state)
{
	(void)state;
	double used[2][48] = { { 0 } };
	for (int i = 10; i < 30; i++)
		used[0][i] = 8;
	struct jf_usage_series s[2] = {
		{ .model = "4090", .total = 32, .used = used[0], .has_forecast = true },
		{ .model = "H\"800", .total = 16, .used = used[1] },
	};
	for (int h = 0; h < JF_USAGE_FORECAST_HOURS; h++)
		s[0].forecast[h] = h % 6;
	struct jf_usage_plot p = { "GPUs in use", T0, 86400000, 48, s, 2 };
	size_t len;
	char *svg = jf_plot_usage(&p, &len);
	common(svg);
	assert_int_equal(count(svg, "class=\"series\""), 2);
	assert_int_equal(count(svg, "class=\"forecast\""), 1);
	assert_int_equal(count(svg, "class=\"legend-entry\""), 3);
	assert_non_null(strstr(svg, "4090 (32 GPUs)"));
	assert_non_null(strstr(svg, "H&quot;800 (16 GPUs)"));
	assert_non_null(strstr(svg, ">GPUs</text>"));
	assert_non_null(strstr(svg, ">30</text>")); /* y ticks up to 32 */
	assert_non_null(strstr(svg, ">12:00</text>"));
	free(svg);
	/* no models */
	struct jf_usage_plot e = { "GPUs in use", T0, 86400000, 48, NULL, 0 };
	svg = jf_plot_usage(&e, &len);
	common(svg);
	assert_non_null(strstr(svg, "no GPU models"));
	free(svg);
}

static void cost_plot(void **state)
{
	(void)state;
	int64_t a[4] = { 0, 1000000, 1000000, 2500000 }, b[4] = { 500000, 500000, 700000, 700000 };
	struct jf_cost_series s[2] = { { "train", a }, { "(independent)", b } };
	struct jf_cost_plot p = { "Cost per queue", "CNY", T0, T0 + 3600000, 4, s, 2 };
	size_t len;
	char *svg = jf_plot_cost(&p, &len);
	common(svg);
	assert_int_equal(count(svg, "class=\"series\""), 2);
	assert_int_equal(count(svg, "class=\"legend-entry\""), 2);
	assert_non_null(strstr(svg, "train: 2.50 CNY"));
	assert_non_null(strstr(svg, "(independent): 0.70 CNY"));
	assert_non_null(strstr(svg, ">cost (CNY)</text>"));
	assert_non_null(strstr(svg, ">2.5</text>"));
	assert_non_null(strstr(svg, ">11:00</text>"));
	free(svg);
	struct jf_cost_plot e = { "Cost per queue", "CNY", T0, T0, 4, NULL, 0 };
	svg = jf_plot_cost(&e, &len);
	common(svg);
	assert_non_null(strstr(svg, "no cost recorded yet"));
	free(svg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(svg_escaping),
		cmocka_unit_test(svg_numbers),
		cmocka_unit_test(svg_cap),
		cmocka_unit_test(ticks_amounts),
		cmocka_unit_test(ticks_times),
		cmocka_unit_test(colours),
		cmocka_unit_test(timeline_rows),
		cmocka_unit_test(timeline_empty),
		cmocka_unit_test(timeline_threshold),
		cmocka_unit_test(steps_peaks),
		cmocka_unit_test(usage_plot),
		cmocka_unit_test(cost_plot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
