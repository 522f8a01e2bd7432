/*
 * bench_plots.c - what rendering the tree's plots costs (reference 11), on
 * the pure renderers (core/plot.h) with synthetic data, beside rendering
 * /cluster/forecast's text (jf_forecast_render) in the same run.
 *
 *     build/tests/bench/bench_plots [RUNS]        default 21
 *
 * Each run times:
 *   - timeline.svg of 10,000 tasks (bands): 10,000 attempts of 1-60 s
 *     spread over an hour, one in twenty failed and retried (10,500 added);
 *   - timeline.svg of 200 tasks (a row each, 210 bars);
 *   - usage.svg of 8 models, 288 buckets and their forecasts;
 *   - cost.svg of 12 queues, 200 buckets;
 *   - /cluster/forecast of 8 models (the baseline: a file read every day);
 * and prints p50 and p99 of each and the sizes.  On a mount the timeline's
 * time adds the store's query (tests/integration/test_plots.py prints a
 * real read of a 10,000-task group's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/forecast.h"
#include "core/plot.h"

#define NOW  INT64_C(1764930600000)
#define HOUR INT64_C(3600000)

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t timeline(int64_t tasks)
{
	struct jf_timeline_opts o = { "Timeline of group bench (Succeeded)", tasks, 1, NOW - HOUR,
				      NOW };
	struct jf_timeline *t = jf_timeline_new(&o);
	rng = 88172645463325252ull;
	for (int64_t i = 0; i < tasks; i++) {
		int64_t s = NOW - HOUR + i * (HOUR - 60000) / tasks;
		int64_t d = 1000 + (int64_t)(next() % 59000);
		bool fail = i % 20 == 3;
		struct jf_plot_attempt a = { i, 0,     1,
					     s, s + d, fail ? JF_PO_FAILED : JF_PO_SUCCEEDED };
		jf_timeline_add(t, &a);
		if (fail) {
			a.attempt = 2;
			a.start_ms = s + d + 500;
			a.end_ms = a.start_ms + d;
			a.outcome = JF_PO_SUCCEEDED;
			jf_timeline_add(t, &a);
		}
	}
	size_t len = 0;
	char *svg = jf_timeline_svg(t, &len);
	jf_timeline_free(t);
	free(svg);
	return len;
}

#define MODELS 8
static double used[MODELS][288];
static struct jf_forecast *fc[MODELS];
static const char *names[MODELS] = { "4090", "L40S", "H800", "A800", "H100", "A100", "V100", "T4" };

static size_t usage(void)
{
	struct jf_usage_series s[MODELS];
	memset(s, 0, sizeof(s));
	for (int m = 0; m < MODELS; m++) {
		s[m].model = names[m];
		s[m].total = 64;
		s[m].used = used[m];
		s[m].has_forecast = true;
		for (int h = 0; h < JF_USAGE_FORECAST_HOURS; h++)
			s[m].forecast[h] = 64 - jf_forecast_predicted_free(fc[m], NOW + h * HOUR);
	}
	struct jf_usage_plot p = { "GPUs in use per model", NOW, 24 * HOUR, 288, s, MODELS };
	size_t len = 0;
	free(jf_plot_usage(&p, &len));
	return len;
}

#define QUEUES 12
static int64_t cum[QUEUES][200];

static size_t cost(void)
{
	struct jf_cost_series s[QUEUES];
	char qn[QUEUES][16];
	for (int q = 0; q < QUEUES; q++) {
		snprintf(qn[q], sizeof(qn[q]), "queue-%d", q);
		s[q].name = qn[q];
		s[q].cum = cum[q];
	}
	struct jf_cost_plot p = {
		"Cost per queue", "CNY", NOW - 30 * 24 * HOUR, NOW, 200, s, QUEUES
	};
	size_t len = 0;
	free(jf_plot_cost(&p, &len));
	return len;
}

static size_t forecast(void)
{
	char *t = jf_forecast_render((const struct jf_forecast *const *)fc, names, MODELS, NOW);
	size_t len = t ? strlen(t) : 0;
	free(t);
	return len;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 21;
	if (runs < 1)
		runs = 1;
	for (int m = 0; m < MODELS; m++) {
		fc[m] = jf_forecast_new(64);
		for (int64_t t = NOW - 14 * 24 * HOUR; t < NOW; t += 600000)
			jf_forecast_add(fc[m], t, (int)(next() % 40));
		for (int b = 0; b < 288; b++)
			used[m][b] = (double)(next() % 64);
	}
	for (int q = 0; q < QUEUES; q++)
		for (int b = 0; b < 200; b++)
			cum[q][b] = (b ? cum[q][b - 1] : 0) + (int64_t)(next() % 5000000);
	static const char *const what[] = {
		"timeline.svg, 10,000 tasks (bands)",
		"timeline.svg, 200 tasks (rows)",
		"usage.svg, 8 models",
		"cost.svg, 12 queues",
		"/cluster/forecast, 8 models (text)",
	};
	enum { N = 5 };
	double *ms[N];
	size_t size[N] = { 0 };
	for (int k = 0; k < N; k++)
		ms[k] = calloc((size_t)runs, sizeof(double));
	for (int r = 0; r < runs; r++) {
		for (int k = 0; k < N; k++) {
			double t0 = now_ms();
			switch (k) {
			case 0:
				size[k] = timeline(10000);
				break;
			case 1:
				size[k] = timeline(200);
				break;
			case 2:
				size[k] = usage();
				break;
			case 3:
				size[k] = cost();
				break;
			default:
				size[k] = forecast();
				break;
			}
			ms[k][r] = now_ms() - t0;
		}
	}
	printf("plots (reference 11), pure renderers, %d runs:\n", runs);
	printf("  %-40s %10s %10s %10s\n", "", "p50 ms", "p99 ms", "bytes");
	for (int k = 0; k < N; k++) {
		qsort(ms[k], (size_t)runs, sizeof(double), cmp);
		int p99 = (runs * 99 + 99) / 100 - 1;
		printf("  %-40s %10.2f %10.2f %10zu\n", what[k], ms[k][runs / 2],
		       ms[k][p99 < runs ? p99 : runs - 1], size[k]);
		free(ms[k]);
	}
	for (int m = 0; m < MODELS; m++)
		jf_forecast_free(fc[m]);
	return 0;
}
