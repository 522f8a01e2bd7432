/*
 * bench_spot.c - the cost of the spot decisions: which spot tasks to
 * preempt (core/preempt.h) and the spot risk forecast (core/forecast.h),
 * each beside a baseline.
 *
 * PREEMPTION
 *   A cluster of --machines machines (default 1,000) with 8 GPUs each, of
 *   three models (50/30/20 %), a node getting per GPU its model's share of
 *   cores and memory (as in bench_sched).  Every GPU is held by a spot task:
 *   "mixed" fills draw 1/2/4/8 GPUs a node (50/25/15/10 %) and 1 node, or a
 *   gang of 2-4 nodes (15 %), until nothing more fits, then top up with
 *   1-GPU tasks; "1-GPU" fills are 1-GPU single-node tasks only (8 a
 *   machine: the most candidates there can be).
 *   Four fills of each kind from --seed.  A decision is jf_preempt_choose()
 *   for an on-demand request of 1x1, 1x8 or 4x8 (a gang) GPUs, its model
 *   cycling over the three, its fill over the four; --decisions of each
 *   (default 1,000): mean, p50 and p99.
 *   Baseline: one full scheduling pass, jf_plan_pass(), over the same
 *   (mixed) cluster with the spot tasks running and 1,000 waiting groups
 *   (shapes as bench_sched's), on a copy of the machines: its mean, p50
 *   and p99 over repeated passes.  The ratio shows the decision as a share
 *   of one pass.
 *
 * FORECAST
 *   One model of 800 GPUs, four weeks of per-minute samples of on-demand
 *   use (a flat 200 GPUs, a daily peak of +500 around 14:00 UTC, noise of
 *   +-30).  Adding a sample: ns each, over the four weeks; baseline:
 *   appending it to a plain array (what the naive query reads).  A query:
 *   jf_forecast_risk() for a 1-GPU spot task with 250 GPUs free, over 10m,
 *   1h, 6h and 12h windows from Monday 00:00 (the peak comes at noon), in
 *   ns; baseline: the same question answered
 *   naively, by scanning the raw four weeks of samples for the hourly peaks
 *   at the same hours of the week (unweighted mean and deviation, the same
 *   normal tail).  The two risks are printed below the table.
 *
 * Usage: bench_spot [--machines M] [--decisions N] [--seed S]
 * Exit: 0 the figures were printed; 1 a run failed (out of memory, a
 * decision that found nothing to preempt on a full cluster, a failed
 * pass); 2 bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/forecast.h"
#include "core/plan.h"
#include "core/preempt.h"

#define GIB        (INT64_C(1) << 30)
#define MINUTE_MS  INT64_C(60000)
#define HOUR_MS    (60 * MINUTE_MS)
#define NMODELS    3
#define NFILLS     4
#define MAXK       4 /* the largest spot gang */
#define NGROUPS    1000
#define WEEK_HOURS 168
#define FC_TOTAL   800 /* GPUs of the forecast's model */
#define FC_WEEKS   4
#define FREE       250                    /* GPUs free at the query: 450 of demand hurts */
#define MONDAY_MS  INT64_C(1704067200000) /* 2024-01-01 00:00 UTC, a Monday */

static const int64_t CPG[NMODELS] = { 20000, 16000, 24000 };            /* cpu per GPU */
static const int64_t MPG[NMODELS] = { 101 * GIB, 64 * GIB, 128 * GIB }; /* memory per GPU */

struct opts {
	size_t machines;
	size_t decisions;
	uint64_t seed;
};

/* ---- randomness and time ---- */

struct rng {
	uint64_t s;
};

static uint64_t rnext(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * UINT64_C(2685821657736338717);
}

static int64_t rnd(struct rng *r, int64_t n)
{
	return (int64_t)(rnext(r) % (uint64_t)n);
}

/* One of the n values v by their weights w in percent (adding up to 100). */
static int64_t pick(struct rng *r, const int64_t *v, const int *w, int n)
{
	int64_t x = rnd(r, 100);
	for (int i = 0; i < n - 1; i++) {
		if (x < w[i])
			return v[i];
		x -= w[i];
	}
	return v[n - 1];
}

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

struct stats {
	double mean, p50, p99; /* ns */
};

static struct stats stats_of(int64_t *ns, size_t n)
{
	struct stats s = { 0, 0, 0 };
	double sum = 0;
	if (n == 0)
		return s;
	qsort(ns, n, sizeof(*ns), cmp_i64);
	for (size_t i = 0; i < n; i++)
		sum += (double)ns[i];
	s.mean = sum / (double)n;
	s.p50 = (double)ns[n / 2];
	s.p99 = (double)ns[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
	return s;
}

/* ---- a full cluster of spot tasks ---- */

struct task {
	struct jf_sched_slot slots[MAXK];
	size_t n;
};

struct fill {
	struct jf_sched_machine *m; /* free now: nothing */
	struct task *t;
	struct jf_preempt_cand *cand;
	size_t nt;
};

static struct jf_sched_req gpu_req(int model, int64_t gpus, int64_t nodes)
{
	return (struct jf_sched_req){ model, (int)gpus, gpus * CPG[model], gpus * MPG[model],
				      nodes };
}

static int machine_model(size_t i)
{
	return i % 10 < 5 ? 0 : i % 10 < 8 ? 1 : 2;
}

static void fill_free(struct fill *f)
{
	if (!f)
		return;
	free(f->m);
	free(f->t);
	free(f->cand);
}

static bool fill_add(struct fill *f, size_t nm, struct rng *r, const struct jf_sched_req *q)
{
	struct task *t = &f->t[f->nt];
	if (!jf_sched_place(f->m, nm, q, t->slots))
		return false;
	t->n = (size_t)q->nodes;
	f->cand[f->nt] = (struct jf_preempt_cand){ (int64_t)f->nt + 1, t->slots, t->n,
						   MONDAY_MS + rnd(r, 24 * HOUR_MS) };
	f->nt++;
	return true;
}

/* Every GPU of nm machines held by a spot task.  false: out of memory. */
static bool fill_new(struct fill *f, size_t nm, bool ones, uint64_t seed)
{
	static const int64_t GPUS[4] = { 1, 2, 4, 8 }, K[4] = { 1, 2, 3, 4 };
	static const int GW[4] = { 50, 25, 15, 10 }, KW[4] = { 85, 5, 5, 5 };
	struct rng r = { seed * UINT64_C(0x9E3779B97F4A7C15) | 1 };

	memset(f, 0, sizeof(*f));
	f->m = malloc(nm * sizeof(*f->m));
	f->t = malloc(8 * nm * sizeof(*f->t));
	f->cand = malloc(8 * nm * sizeof(*f->cand));
	if (!f->m || !f->t || !f->cand)
		return false;
	for (size_t i = 0; i < nm; i++) {
		int model = machine_model(i);
		f->m[i] =
			(struct jf_sched_machine){ model, 8, 0xff, 8 * CPG[model], 8 * MPG[model] };
	}
	for (int miss = 0; miss < 200;) {
		int64_t x = rnd(&r, 10);
		int model = x < 5 ? 0 : x < 8 ? 1 : 2;
		struct jf_sched_req q = gpu_req(model, ones ? 1 : pick(&r, GPUS, GW, 4),
						ones ? 1 : pick(&r, K, KW, 4));
		if (!fill_add(f, nm, &r, &q))
			miss++;
	}
	for (int model = 0; model < NMODELS; model++) {
		struct jf_sched_req one = gpu_req(model, 1, 1);
		while (fill_add(f, nm, &r, &one))
			;
	}
	return true;
}

/* ---- preemption decisions ---- */

struct shape {
	const char *name;
	int gpus;
	int64_t nodes;
};

static const struct shape SHAPES[] = { { "1x1", 1, 1 }, { "1x8", 8, 1 }, { "4x8", 8, 4 } };
#define NSHAPES (sizeof(SHAPES) / sizeof(SHAPES[0]))

struct decided {
	struct stats st;
	double victims, nodes; /* per decision, mean */
	size_t cands;          /* mean candidates */
};

/* n decisions of shape s over the fills; false: one failed. */
static bool time_decisions(struct fill *fills, size_t nm, const struct shape *s, size_t n,
			   struct decided *d)
{
	int64_t *ns = malloc(n * sizeof(*ns));
	size_t *v = malloc(8 * nm * sizeof(*v));
	bool ok = ns && v;
	double victims = 0, nodes = 0, cands = 0;

	for (size_t i = 0; ok && i < n; i++) {
		struct fill *f = &fills[i % NFILLS];
		struct jf_sched_req q = gpu_req((int)(i % NMODELS), s->gpus, s->nodes);
		size_t nv = 0;
		int64_t t0 = now_ns();
		enum jf_err rc = jf_preempt_choose(f->m, nm, &q, f->cand, f->nt, v, &nv);
		ns[i] = now_ns() - t0;
		if (rc != JF_OK || nv == 0) {
			fprintf(stderr, "bench_spot: decision %s: %s, %zu victims\n", s->name,
				jf_err_name(rc), nv);
			ok = false;
			break;
		}
		victims += (double)nv;
		for (size_t j = 0; j < nv; j++)
			nodes += (double)f->cand[v[j]].nslots;
		cands += (double)f->nt;
	}
	if (ok) {
		d->st = stats_of(ns, n);
		d->victims = victims / (double)n;
		d->nodes = nodes / (double)n;
		d->cands = (size_t)(cands / (double)n);
	}
	free(v);
	free(ns);
	return ok;
}

/* ---- the baseline: one scheduling pass ---- */

static struct jf_plan_group *groups_new(uint64_t seed)
{
	static const int64_t K[4] = { 1, 2, 4, 8 }, GPUS[4] = { 1, 2, 4, 8 };
	static const int KW[4] = { 70, 15, 10, 5 }, GW[4] = { 50, 25, 15, 10 };
	struct rng r = { seed * UINT64_C(0xD1B54A32D192ED03) | 1 };
	struct jf_plan_group *g = calloc(NGROUPS, sizeof(*g));
	if (!g)
		return NULL;
	for (size_t i = 0; i < NGROUPS; i++) {
		int64_t k = pick(&r, K, KW, 4);
		if (rnd(&r, 20) == 0) {
			g[i].req = (struct jf_sched_req){ -1, 0, (1 + rnd(&r, 8)) * 1000,
							  (4 + rnd(&r, 28)) * GIB, k };
		} else {
			int64_t x = rnd(&r, 10);
			g[i].req = gpu_req(x < 5 ? 0 : x < 8 ? 1 : 2, pick(&r, GPUS, GW, 4), k);
		}
		g[i].id = (int64_t)i + 1;
		g[i].queue = -1;
		g[i].waiting = 1 + rnd(&r, 1000);
		g[i].parallelism = 10 + rnd(&r, 500);
		g[i].timeout_ms = 5 * MINUTE_MS + rnd(&r, 55) * MINUTE_MS;
	}
	return g;
}

/* Passes over fill f with NGROUPS groups waiting, for about budget_s. */
static bool time_passes(const struct fill *f, size_t nm, uint64_t seed, double budget_s,
			struct stats *st, size_t *npass)
{
	struct jf_plan_group *g = groups_new(seed);
	struct jf_plan_running *run = malloc((f->nt ? f->nt : 1) * sizeof(*run));
	struct jf_sched_machine *m = malloc(nm * sizeof(*m));
	int64_t *ns = malloc(1000 * sizeof(*ns));
	struct rng r = { seed | 1 };
	struct jf_plan plan;
	struct jf_error err = { 0 };
	bool ok = g && run && m && ns;
	size_t n = 0, want = 11;

	jf_plan_init(&plan);
	for (size_t i = 0; ok && i < f->nt; i++)
		run[i] = (struct jf_plan_running){ f->t[i].slots, f->t[i].n, -1,
						   MONDAY_MS + (1 + rnd(&r, 120)) * MINUTE_MS };
	struct jf_plan_in in = { MONDAY_MS, run, f->nt, NULL, 0, g, NGROUPS };
	while (ok && n < want) {
		memcpy(m, f->m, nm * sizeof(*m));
		int64_t t0 = now_ns();
		if (jf_plan_pass(&plan, m, nm, &in, &err) != JF_OK) {
			fprintf(stderr, "bench_spot: pass: %s\n", err.msg);
			ok = false;
			break;
		}
		ns[n] = now_ns() - t0;
		if (n++ == 0) { /* as many as fit the budget, 11 .. 1000 */
			double k = budget_s * 1e9 / (double)(ns[0] > 0 ? ns[0] : 1);
			want = k < 11 ? 11 : k > 1000 ? 1000 : (size_t)k;
		}
	}
	if (ok) {
		*st = stats_of(ns, n);
		*npass = n;
	}
	jf_plan_release(&plan);
	free(ns);
	free(m);
	free(run);
	free(g);
	return ok;
}

/* ---- the forecast and its naive twin ---- */

struct sample {
	int64_t t;
	int v;
};

static int demand_at(struct rng *r, int64_t t)
{
	double h = (double)((t / MINUTE_MS) % (24 * 60)) / 60.0;
	double peak = exp(-(h - 14) * (h - 14) / 8.0);
	int v = (int)(200 + 500 * peak) + (int)rnd(r, 61) - 30;
	return v < 0 ? 0 : v > FC_TOTAL ? FC_TOTAL : v;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* P(peak > threshold) the way forecast.c puts it: normal, half-GPU cut. */
static double tail(double mean, double sd, double threshold)
{
	if (sd < 0.5)
		sd = 0.5;
	return 0.5 * erfc((threshold + 0.5 - mean) / (sd * 1.41421356237309504880));
}

/* The naive risk: for every hour of the window, scan all the samples for
 * the peaks of the same hour of the week in earlier weeks; their plain
 * mean and deviation give the hour's chance of exceeding the threshold. */
static double naive_risk(const struct sample *s, size_t n, int64_t now, int64_t window_s, int need,
			 int free_now)
{
	enum { MAXH = 13, MAXW = 8 };
	int peak[MAXH][MAXW];
	int64_t h0 = floor_div(now, HOUR_MS), end = now + window_s * 1000;
	int64_t nh = floor_div(end - 1, HOUR_MS) - h0 + 1;
	int d0 = n ? s[n - 1].v : FC_TOTAL - free_now;
	double keep = 1;

	if (need > free_now)
		return 1;
	if (d0 > FC_TOTAL - free_now)
		d0 = FC_TOTAL - free_now;
	double threshold = FC_TOTAL - (FC_TOTAL - free_now - d0) - need;
	if (threshold >= FC_TOTAL)
		return 0;
	if (nh > MAXH)
		nh = MAXH;
	for (int j = 0; j < MAXH; j++)
		for (int w = 0; w < MAXW; w++)
			peak[j][w] = -1;
	for (size_t i = 0; i < n; i++) {
		int64_t d = h0 - floor_div(s[i].t, HOUR_MS); /* hours before h0 */
		int64_t j = ((-d) % WEEK_HOURS + WEEK_HOURS) % WEEK_HOURS;
		int64_t w = (d + j) / WEEK_HOURS - 1;
		if (j < nh && w >= 0 && w < MAXW && s[i].v > peak[j][w])
			peak[j][w] = s[i].v;
	}
	for (int64_t j = 0, t = now; j < nh; j++) {
		int64_t stop = (h0 + j + 1) * HOUR_MS < end ? (h0 + j + 1) * HOUR_MS : end;
		double sum = 0, sum2 = 0, k = 0, mean = d0, sd = FC_TOTAL / 10.0;
		for (int w = 0; w < MAXW; w++)
			if (peak[j][w] >= 0) {
				sum += peak[j][w];
				sum2 += (double)peak[j][w] * peak[j][w];
				k++;
			}
		if (k > 0) {
			mean = sum / k;
			sd = sqrt(fmax(0, sum2 / k - mean * mean));
		}
		keep *= 1 - (double)(stop - t) / (double)HOUR_MS * tail(mean, sd, threshold);
		t = stop;
	}
	return 1 - keep;
}

static const int64_t WINDOWS[] = { 600, 3600, 6 * 3600, 12 * 3600 };
static const char *const WNAMES[] = { "10m", "1h", "6h", "12h" };
#define NWINDOWS (sizeof(WINDOWS) / sizeof(WINDOWS[0]))

struct fc_result {
	double add_ns, append_ns;
	double q_ns[NWINDOWS], naive_ns[NWINDOWS];
	double risk[NWINDOWS], naive[NWINDOWS];
};

static bool time_forecast(uint64_t seed, struct fc_result *res)
{
	size_t n = (size_t)FC_WEEKS * WEEK_HOURS * 60;
	struct sample *s = malloc(n * sizeof(*s)), *list = malloc(n * sizeof(*list));
	struct jf_forecast *f = jf_forecast_new(FC_TOTAL);
	struct rng r = { seed * UINT64_C(0x2545F4914F6CDD1D) | 1 };
	volatile double sink = 0;
	bool ok = s && list && f;

	for (size_t i = 0; ok && i < n; i++)
		s[i] = (struct sample){ MONDAY_MS + (int64_t)i * MINUTE_MS,
					demand_at(&r, MONDAY_MS + (int64_t)i * MINUTE_MS) };
	if (ok) {
		int64_t t0 = now_ns();
		for (size_t i = 0; i < n; i++)
			jf_forecast_add(f, s[i].t, s[i].v);
		res->add_ns = (double)(now_ns() - t0) / (double)n;
		t0 = now_ns();
		for (size_t i = 0; i < n; i++)
			list[i] = s[i];
		res->append_ns = (double)(now_ns() - t0) / (double)n;
		sink += list[n / 2].v;
	}
	int64_t now = MONDAY_MS + (int64_t)n * MINUTE_MS; /* Monday 00:00, week 5 */
	for (size_t w = 0; ok && w < NWINDOWS; w++) {
		enum { FAST = 100000, SLOW = 300 };
		int64_t t0 = now_ns();
		for (int i = 0; i < FAST; i++)
			sink += jf_forecast_risk(f, now + (i % 60) * MINUTE_MS, WINDOWS[w], 1,
						 FREE);
		res->q_ns[w] = (double)(now_ns() - t0) / FAST;
		t0 = now_ns();
		for (int i = 0; i < SLOW; i++)
			sink += naive_risk(list, n, now + (i % 60) * MINUTE_MS, WINDOWS[w], 1,
					   FREE);
		res->naive_ns[w] = (double)(now_ns() - t0) / SLOW;
		res->risk[w] = jf_forecast_risk(f, now, WINDOWS[w], 1, FREE);
		res->naive[w] = naive_risk(list, n, now, WINDOWS[w], 1, FREE);
	}
	(void)sink;
	jf_forecast_free(f);
	free(list);
	free(s);
	return ok;
}

/* ---- output ---- */

static void row(const char *name, double value, double baseline, const char *unit)
{
	char a[32], b[32];
	snprintf(a, sizeof(a), "%.1f %s", value, unit);
	snprintf(b, sizeof(b), "%.1f %s", baseline, unit);
	printf("  %-34s %14s  %14s  %8.4f\n", name, a, b, baseline > 0 ? value / baseline : 0);
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_spot [--machines M] [--decisions N] [--seed S]\n");
	return 2;
}

static bool parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!v || *v < '0' || *v > '9')
		return false;
	unsigned long long x = strtoull(v, &end, 10);
	if (*end || errno || x < lo || x > hi)
		return false;
	*out = x;
	return true;
}

static bool bench_preempt(const struct opts *o)
{
	struct fill fills[2][NFILLS];
	struct decided d[2][NSHAPES];
	struct stats pass;
	size_t npass = 0;
	bool ok = true;

	memset(fills, 0, sizeof(fills));
	for (int kind = 0; kind < 2 && ok; kind++)
		for (int i = 0; i < NFILLS && ok; i++)
			ok = fill_new(&fills[kind][i], o->machines, kind == 1,
				      o->seed * 16 + (uint64_t)(kind * NFILLS + i));
	for (int kind = 0; kind < 2 && ok; kind++)
		for (size_t s = 0; s < NSHAPES && ok; s++)
			ok = time_decisions(fills[kind], o->machines, &SHAPES[s], o->decisions,
					    &d[kind][s]);
	if (ok)
		ok = time_passes(&fills[0][0], o->machines, o->seed, 2.0, &pass, &npass);
	if (ok) {
		printf("preemption: %zu machines x 8 GPUs, all held by spot tasks; %zu decisions "
		       "per row; baseline: jf_plan_pass() with %d groups waiting (%zu passes)\n",
		       o->machines, o->decisions, NGROUPS, npass);
		printf("  %-34s %14s  %14s  %8s\n", "name", "value", "baseline", "ratio");
		for (int kind = 0; kind < 2; kind++)
			for (size_t s = 0; s < NSHAPES; s++) {
				const char *k = kind ? "1-GPU" : "mixed";
				char name[64];
				snprintf(name, sizeof(name), "preempt %s %s mean", k,
					 SHAPES[s].name);
				row(name, d[kind][s].st.mean / 1e3, pass.mean / 1e3, "us");
				snprintf(name, sizeof(name), "preempt %s %s p50", k,
					 SHAPES[s].name);
				row(name, d[kind][s].st.p50 / 1e3, pass.p50 / 1e3, "us");
				snprintf(name, sizeof(name), "preempt %s %s p99", k,
					 SHAPES[s].name);
				row(name, d[kind][s].st.p99 / 1e3, pass.p99 / 1e3, "us");
			}
		for (int kind = 0; kind < 2; kind++)
			for (size_t s = 0; s < NSHAPES; s++)
				printf("  %s %s: %zu candidates, %.2f victims, %.2f nodes "
				       "preempted a decision\n",
				       kind ? "1-GPU" : "mixed", SHAPES[s].name, d[kind][s].cands,
				       d[kind][s].victims, d[kind][s].nodes);
	}
	for (int kind = 0; kind < 2; kind++)
		for (int i = 0; i < NFILLS; i++)
			fill_free(&fills[kind][i]);
	return ok;
}

static bool bench_forecast(const struct opts *o)
{
	struct fc_result fr;

	if (!time_forecast(o->seed, &fr))
		return false;
	printf("\nforecast: %d GPUs, %d weeks of per-minute samples (daily peak at 14:00 UTC); "
	       "baseline: a naive scan of the raw samples\n",
	       FC_TOTAL, FC_WEEKS);
	printf("  %-34s %14s  %14s  %8s\n", "name", "value", "baseline", "ratio");
	row("forecast add (one sample)", fr.add_ns, fr.append_ns, "ns");
	for (size_t w = 0; w < NWINDOWS; w++) {
		char name[64];
		snprintf(name, sizeof(name), "forecast risk %s (one query)", WNAMES[w]);
		row(name, fr.q_ns[w], fr.naive_ns[w], "ns");
	}
	printf("  risk at Monday 00:00 (1 GPU, %d free):", FREE);
	for (size_t w = 0; w < NWINDOWS; w++)
		printf(" %s %.3f/%.3f", WNAMES[w], fr.risk[w], fr.naive[w]);
	printf(" (forecast/naive)\n");
	return true;
}

int main(int argc, char **argv)
{
	struct opts o = { 1000, 1000, 1 };
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t x;
		if (!strcmp(a, "--machines") && parse_u64(v, 1, 100000, &x))
			o.machines = (size_t)x;
		else if (!strcmp(a, "--decisions") && parse_u64(v, 1, 1000000, &x))
			o.decisions = (size_t)x;
		else if (!strcmp(a, "--seed") && parse_u64(v, 0, UINT64_MAX / 32, &x))
			o.seed = x;
		else
			return usage();
	}
	if (!bench_preempt(&o) || !bench_forecast(&o)) {
		fprintf(stderr, "bench_spot: a run failed\n");
		return 1;
	}
	return 0;
}
