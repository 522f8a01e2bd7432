/*
 * bench_eta.c - what a pending reason and an ETA cost (reference 9.1), beside
 * one planning pass: 1,000 machines, 10,000 running tasks, 1,000 waiting
 * groups.
 *
 *     build/tests/bench/bench_eta [RUNS]        default 21
 *
 * The cluster: 1,000 machines of 8 GPUs (three models), each running six
 * one-GPU tasks and four small CPU tasks whose end bounds are spread over
 * a day and which are predicted to end at 30-100% of their bound.  1,000
 * waiting groups in four queues and independent batches: 1-8 GPUs or CPU
 * only, one in ten a gang of 8-GPU nodes, 1-50 waiting tasks each, a
 * parallelism, a timeout of a minute to a day and a predicted run time of
 * 20-100% of it.  Each run times, on the same snapshot:
 *   - one planning pass (jf_plan_pass): the baseline;
 *   - the reasons: jf_why_compute and jf_why_message for every group;
 *   - one ETA simulation (jf_eta_simulate) with the engine's limits
 *     (JF_ETA_MAX_PASSES passes, a 1 s quantum, 16 starts kept per group);
 * and prints p50 and p99 of each, the simulation's passes, how far it got
 * and how many groups it gave an ETA.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/eta.h"
#include "core/why.h"

#define GIB  (INT64_C(1) << 30)
#define SEC  INT64_C(1000)
#define NOW  INT64_C(1700000000000)
#define NM   1000
#define NG   1000
#define NQ   4
#define KEEP 16
#ifndef SIMG
#define SIMG 256
#endif
#ifndef PERMILLE
#define PERMILLE 10
#endif
#ifndef PASSES
#define PASSES 1000
#endif

static uint64_t rng = 88172645463325252ull;
static int64_t rnd(int64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (int64_t)(rng % (uint64_t)n);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof(*v), dcmp);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 21;
	if (runs < 1)
		runs = 1;
	static struct jf_sched_machine m[NM];
	static struct jf_sched_slot slots[NM * 10];
	static struct jf_plan_running run[NM * 10];
	static struct jf_eta_running erun[NM * 10];
	size_t nrun = 0;
	for (size_t i = 0; i < NM; i++) {
		m[i] = (struct jf_sched_machine){ (int)(i % 3), 8, 0xff, 160000, 800 * GIB };
		for (int k = 0; k < 10; k++) {
			struct jf_sched_slot *s = &slots[nrun];
			if (k < 6)
				*s = (struct jf_sched_slot){ i, 1ull << k, 20000, 100 * GIB };
			else
				*s = (struct jf_sched_slot){ i, 0, 4000, 8 * GIB };
			m[i].gpu_free &= ~s->gpu_mask;
			m[i].cpu_free -= s->cpu_milli;
			m[i].mem_free -= s->mem_bytes;
			int64_t bound = NOW + (1 + rnd(86400)) * SEC;
			int64_t end = NOW + (bound - NOW) * (30 + rnd(71)) / 100;
			int q = (int)rnd(NQ + 1) - 1;
			run[nrun] = (struct jf_plan_running){ s, 1, q, bound };
			erun[nrun] = (struct jf_eta_running){ s, 1, q, bound, end, SIZE_MAX };
			nrun++;
		}
	}
	struct jf_plan_queue q[NQ];
	for (int i = 0; i < NQ; i++)
		q[i] = (struct jf_plan_queue){ i == 0 ? 0 : 1000 + 500 * i, 0 };
	for (size_t i = 0; i < nrun; i++)
		if (run[i].queue >= 0)
			q[run[i].queue].held++;
	static struct jf_plan_group g[NG];
	static struct jf_eta_group eg[NG];
	static struct jf_why_group wg[NG];
	for (int i = 0; i < NG; i++) {
		struct jf_sched_req req;
		int gpus = (int)rnd(9);
		if (gpus == 0)
			req = (struct jf_sched_req){ -1, 0, 1000 * (1 + rnd(8)),
						     GIB * (1 + rnd(16)), 1 };
		else
			req = (struct jf_sched_req){ (int)rnd(3), gpus, 20000 * gpus,
						     100 * GIB * gpus, 1 };
		if (rnd(10) == 0)
			req = (struct jf_sched_req){ (int)rnd(3), 8, 160000, 800 * GIB,
						     1 + rnd(64) };
		int qi = (int)rnd(NQ + 1) - 1;
		int64_t waiting = 1 + rnd(50), timeout = 60 + rnd(86400);
		g[i] = (struct jf_plan_group){ i + 1, qi,          req,           waiting,
					       0,     1 + rnd(20), timeout * SEC, rnd(20) == 0 };
		eg[i] = (struct jf_eta_group){ g[i], timeout * SEC * (20 + rnd(81)) / 100 };
		wg[i] = (struct jf_why_group){ i + 1, qi + 1, JF_REASON_NONE, (size_t)i, 0 };
	}
	struct jf_plan_in in = { NOW, run, nrun, q, NQ, g, NG };
	const char *models[3] = { "A800", "H800", "4090" };
	double *t_pass = calloc((size_t)runs, sizeof(double));
	double *t_why = calloc((size_t)runs, sizeof(double));
	double *t_eta = calloc((size_t)runs, sizeof(double));
	static struct jf_sched_machine copy[NM];
	static int64_t starts[NG * KEEP], finish[NG];
	static struct jf_wait w[NG];
	struct jf_plan plan;
	jf_plan_init(&plan);
	struct jf_error err;
	size_t passes = 0, with_eta = 0, with_finish = 0, waiting = 0;
	int64_t reached = 0;
	bool complete = false;
	for (int r = 0; r < runs; r++) {
		memcpy(copy, m, sizeof(m));
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (jf_plan_pass(&plan, copy, NM, &in, &err) != JF_OK) {
			fprintf(stderr, "plan: %s\n", err.msg);
			return 1;
		}
		t_pass[r] = ms_since(&t0);

		clock_gettime(CLOCK_MONOTONIC, &t0);
		jf_why_compute(&in, &plan, wg, NG, w);
		char msg[256];
		for (int i = 0; i < NG; i++) {
			struct jf_why_cluster c = { copy, NM, models, 3, "q", "" };
			jf_why_message(&w[i], &in, &g[i], &plan, &c, msg, sizeof(msg));
		}
		t_why[r] = ms_since(&t0);

		struct jf_eta_in ein = { .now_ms = NOW,
					 .horizon_ms = NOW + INT64_C(30) * 86400 * SEC,
					 .max_passes = PASSES,
					 .quantum_ms = SEC,
					 .quantum_permille = PERMILLE,
					 .machines = m,
					 .nm = NM,
					 .running = erun,
					 .nrunning = nrun,
					 .queues = q,
					 .nqueues = NQ,
					 .groups = eg,
					 .ngroups = SIMG,
					 .keep = KEEP };
		struct jf_eta_out out = { .starts = starts, .finish_ms = finish };
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (jf_eta_simulate(&ein, &out, &err) != JF_OK) {
			fprintf(stderr, "eta: %s\n", err.msg);
			return 1;
		}
		t_eta[r] = ms_since(&t0);
		passes = out.passes;
		reached = out.reached_ms;
		complete = out.complete;
		with_eta = with_finish = waiting = 0;
		for (int i = 0; i < NG; i++)
			waiting += w[i].reason != JF_REASON_NONE;
		for (int i = 0; i < SIMG; i++) {
			with_eta += starts[i * KEEP] > 0;
			with_finish += finish[i] > 0;
		}
	}
	printf("bench_eta: %d machines, %zu running tasks, %d groups (%zu waiting after the "
	       "pass), %d runs\n",
	       NM, nrun, NG, waiting, runs);
	printf("%-34s %10s %10s\n", "", "p50 ms", "p99 ms");
	printf("%-34s %10.2f %10.2f\n", "one planning pass (baseline)", pct(t_pass, runs, 0.5),
	       pct(t_pass, runs, 0.99));
	printf("%-34s %10.2f %10.2f\n", "reasons + messages, all groups", pct(t_why, runs, 0.5),
	       pct(t_why, runs, 0.99));
	printf("%-34s %10.2f %10.2f\n", "one ETA simulation", pct(t_eta, runs, 0.5),
	       pct(t_eta, runs, 0.99));
	printf("simulation: %zu passes, reached +%.1f h, %s; %zu of %d groups got a simulated "
	       "start, %zu a finish\n",
	       passes, (double)(reached - NOW) / 3.6e6, complete ? "complete" : "cut by its limits",
	       with_eta, NG, with_finish);
	jf_plan_release(&plan);
	free(t_pass);
	free(t_why);
	free(t_eta);
	return 0;
}
