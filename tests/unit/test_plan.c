/*
 * test_plan.c - core/plan.h: one scheduling pass, FIFO with backfill.
 *
 * Hand-made cases first (capacity, parallelism, the product's 4 x 5 peak,
 * a 100-node gang, FIFO, backfill behind a gang, independent batches,
 * paused groups, two gangs that need most of the cluster, groups that can
 * never run, bad input).
 *
 * Then plan_ref_pass() (tests/plan_ref.c, shared with the scheduler
 * benchmark), a deliberately simple reference written from the rules at
 * the top of plan.c: plain loops, the reservation walk rebuilt from scratch
 * at every candidate time.  The property test drives both on seeded random
 * scenarios of three passes each (JOBFS_PLAN_SCENARIOS of them; 10,000 by
 * default, 2,000 under AddressSanitizer) and wants the same starts,
 * reservations and skips in the same order, and checks after every pass
 * what must hold whatever the implementation: no machine over-allocated,
 * no queue over capacity, no group over parallelism, gangs whole, paused
 * groups idle, the machines less exactly the starts (nothing held for
 * waiting work), at every shadow time what runs then (tasks and begun
 * reservations) fitting the machines and queues together, and no head
 * left waiting while it fits beside the reservations ahead of it
 * (work-conserving).  Each of these alone catches a deliberately broken
 * planner (tried by hand: starts ignoring reservations, capacity ignoring
 * them, the walk ignoring them, reservations ending early, no backfill).
 *
 * The simulation runs the planner (beside the reference) with an event
 * loop over a few simulated days on one small cluster per ~167 scenarios
 * (tasks end at start + a duration <= their bound) and checks that
 * everything that can run finishes, that the planner never idles with work
 * waiting and an idle cluster, and that the first blocked head starts no
 * later than its first shadow time (while no group ahead of it gains work).
 *
 * The timing test measures a pass at 1,000 machines, 10,000 running tasks
 * and 1,000 groups and prints it.
 */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/plan.h"
#include "tests/plan_ref.h"

#define GIB       (INT64_C(1) << 30)
#define SEC       INT64_C(1000)
#define NOW       INT64_C(1000000000)
#define MAXM      1024
#define MAXN      128
#define MAXQ      8
#define MAXG      1100
#define CPU_MODEL 3

/* Random workloads for the property tests, unless JOBFS_PLAN_SCENARIOS
 * says: fewer under AddressSanitizer, where a workload costs ~4x. */
#if defined(__SANITIZE_ADDRESS__)
#define PLAN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PLAN_ASAN 1
#endif
#endif
#ifdef PLAN_ASAN
#define DEFAULT_SCENARIOS 2000
#else
#define DEFAULT_SCENARIOS 10000
#endif
#define MAX_SCENARIOS UINT64_C(100000000)

static const int64_t CPG[3] = { 20000, 16000, 24000 };            /* cpu per GPU */
static const int64_t MPG[3] = { 101 * GIB, 64 * GIB, 128 * GIB }; /* memory per GPU */

static struct jf_sched_machine mach(int model, int gpus)
{
	struct jf_sched_machine m = { model, gpus, (UINT64_C(1) << gpus) - 1, gpus * CPG[model],
				      gpus * MPG[model] };
	return m;
}

static struct jf_sched_machine cpu_mach(void)
{
	struct jf_sched_machine m = { CPU_MODEL, 0, 0, 64000, 256 * GIB };
	return m;
}

static struct jf_sched_req gpu_req(int model, int gpus, int64_t nodes)
{
	struct jf_sched_req r = { model, gpus, gpus * CPG[model], gpus * MPG[model], nodes };
	return r;
}

static struct jf_sched_req cpu_req(int64_t cpu, int64_t mem, int64_t nodes)
{
	struct jf_sched_req r = { -1, 0, cpu, mem, nodes };
	return r;
}

static struct jf_plan_group group(int64_t id, int queue, struct jf_sched_req req, int64_t waiting,
				  int64_t parallelism, int64_t timeout)
{
	struct jf_plan_group g = { id, queue, req, waiting, 0, parallelism, timeout, false };
	return g;
}

/* ---- a world: machines, queues, groups, running tasks ---- */

struct run {
	struct jf_sched_slot slots[MAXN];
	size_t n;
	size_t group;
	int64_t end_bound, end_real;
};

struct world {
	struct jf_sched_machine m[MAXM];
	size_t nm;
	struct jf_plan_queue q[MAXQ];
	size_t nq;
	struct jf_plan_group g[MAXG];
	size_t ng;
	struct run *run;
	size_t nrun, caprun;
	int64_t now;
	struct jf_plan_running in_run[4 * MAXG + 16000];
};

static struct world *world_new(void)
{
	struct world *w = calloc(1, sizeof(*w));
	assert_non_null(w);
	w->now = NOW;
	return w;
}

static void world_free(struct world *w)
{
	free(w->run);
	free(w);
}

/* A task of group gi running on slots s until end_bound. */
static void world_run(struct world *w, size_t gi, const struct jf_sched_slot *s, int64_t end_bound)
{
	if (w->nrun == w->caprun) {
		w->caprun = w->caprun ? 2 * w->caprun : 64;
		w->run = realloc(w->run, w->caprun * sizeof(*w->run));
		assert_non_null(w->run);
	}
	struct run *r = &w->run[w->nrun++];
	r->n = (size_t)w->g[gi].req.nodes;
	assert_true(r->n <= MAXN);
	memcpy(r->slots, s, r->n * sizeof(*s));
	r->group = gi;
	r->end_bound = end_bound;
	r->end_real = end_bound;
	w->g[gi].running++;
	if (w->g[gi].queue >= 0)
		w->q[w->g[gi].queue].held += (int64_t)r->n;
}

/* Place one task of group gi now and run it until end_bound. */
static bool world_place(struct world *w, size_t gi, int64_t end_bound)
{
	struct jf_sched_slot s[MAXN];
	if (!jf_sched_place(w->m, w->nm, &w->g[gi].req, s))
		return false;
	world_run(w, gi, s, end_bound);
	return true;
}

static void world_end(struct world *w, size_t ri)
{
	struct run *r = &w->run[ri];
	for (size_t i = 0; i < r->n; i++)
		jf_sched_release(w->m, &r->slots[i]);
	w->g[r->group].running--;
	if (w->g[r->group].queue >= 0)
		w->q[w->g[r->group].queue].held -= (int64_t)r->n;
	w->run[ri] = w->run[--w->nrun];
}

static struct jf_plan_in world_in(struct world *w)
{
	assert_true(w->nrun <= sizeof(w->in_run) / sizeof(w->in_run[0]));
	for (size_t i = 0; i < w->nrun; i++) {
		struct run *r = &w->run[i];
		w->in_run[i] = (struct jf_plan_running){ r->slots, r->n, w->g[r->group].queue,
							 r->end_bound };
	}
	struct jf_plan_in in = { w->now, w->in_run, w->nrun, w->q, w->nq, w->g, w->ng };
	return in;
}

/* Make the plan's starts running tasks (the pass already took their slots). */
static void world_apply(struct world *w, const struct jf_plan *p)
{
	for (size_t i = 0; i < p->nstarts; i++) {
		size_t gi = p->starts[i].group;
		world_run(w, gi, &p->slots[p->starts[i].slot],
			  plan_ref_end(w->now, w->g[gi].timeout_ms));
		w->g[gi].waiting--;
	}
}

static void world_pass(struct world *w, struct jf_plan *p)
{
	struct jf_plan_in in = world_in(w);
	struct jf_error err = { 0 };
	assert_int_equal(jf_plan_pass(p, w->m, w->nm, &in, &err), JF_OK);
}

static size_t starts_of(const struct jf_plan *p, size_t gi)
{
	size_t n = 0;
	for (size_t i = 0; i < p->nstarts; i++)
		n += p->starts[i].group == gi;
	return n;
}

static const struct jf_plan_resv *resv_of(const struct jf_plan *p, size_t gi)
{
	for (size_t i = 0; i < p->nresv; i++)
		if (p->resv[i].group == gi)
			return &p->resv[i];
	return NULL;
}

/* ---- hand-made cases ---- */

static void test_capacity_caps(void **state)
{
	(void)state;
	struct world *w = world_new();
	struct jf_plan p;
	jf_plan_init(&p);
	for (size_t i = 0; i < 16; i++)
		w->m[w->nm++] = mach(0, 8);
	w->q[w->nq++] = (struct jf_plan_queue){ 20, 0 };
	w->g[w->ng++] = group(1, 0, gpu_req(0, 1, 1), 100, 10, 600 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 10); /* parallelism */
	assert_int_equal(p.nresv, 0);    /* not blocked: at its parallelism */
	world_apply(w, &p);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 0);
	world_free(w);

	w = world_new();
	for (size_t i = 0; i < 16; i++)
		w->m[w->nm++] = mach(0, 8);
	w->q[w->nq++] = (struct jf_plan_queue){ 5, 0 };
	w->g[w->ng++] = group(1, 0, gpu_req(0, 1, 1), 100, 10, 600 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 5); /* capacity */
	assert_int_equal(p.nresv, 1);   /* blocked by capacity: the next waits for one end */
	assert_int_equal(p.resv[0].at_ms, NOW + 600 * SEC);
	world_free(w);
	jf_plan_release(&p);
}

static void test_product_peak(void **state)
{
	(void)state;
	/* 4 nodes per task x parallelism 5 = 20 nodes at the peak */
	struct world *w = world_new();
	struct jf_plan p;
	jf_plan_init(&p);
	for (size_t i = 0; i < 32; i++)
		w->m[w->nm++] = mach(0, 8);
	w->q[w->nq++] = (struct jf_plan_queue){ 0, 0 };
	w->g[w->ng++] = group(1, 0, gpu_req(0, 1, 4), 100, 5, 3600 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 5);
	assert_int_equal(p.nslots, 20);
	world_apply(w, &p);
	assert_int_equal(w->q[0].held, 20);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 0);
	/* one task ends: exactly one more starts, back to 20 */
	world_end(w, 0);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 1);
	world_apply(w, &p);
	assert_int_equal(w->q[0].held, 20);
	world_free(w);
	jf_plan_release(&p);
}

static void test_gang_100(void **state)
{
	(void)state;
	struct jf_plan p;
	jf_plan_init(&p);
	/* enough machines: all 100 nodes at once, one start */
	struct world *w = world_new();
	for (size_t i = 0; i < 100; i++)
		w->m[w->nm++] = mach(0, 8);
	w->g[w->ng++] = group(1, -1, gpu_req(0, 8, 100), 1, 1, 3600 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 1);
	assert_int_equal(p.nslots, 100);
	for (size_t i = 0; i < w->nm; i++)
		assert_int_equal(w->m[i].gpu_free, 0);
	world_free(w);

	/* one machine busy until +1h: nothing starts, nothing is held; the
	 * reservation is at +1h on all 100 */
	w = world_new();
	for (size_t i = 0; i < 100; i++)
		w->m[w->nm++] = mach(0, 8);
	w->g[w->ng++] = group(1, -1, gpu_req(0, 8, 1), 0, 1, 3600 * SEC);
	assert_true(world_place(w, 0, NOW + 3600 * SEC));
	w->g[w->ng++] = group(2, -1, gpu_req(0, 8, 100), 1, 1, 3600 * SEC);
	struct jf_sched_machine before[100];
	memcpy(before, w->m, sizeof(before));
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 0);
	assert_memory_equal(before, w->m, sizeof(before));
	assert_int_equal(p.nresv, 1);
	assert_int_equal(p.resv[0].at_ms, NOW + 3600 * SEC);
	/* the task ends: the gang starts whole */
	world_end(w, 0);
	w->now += 3600 * SEC;
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 1);
	assert_int_equal(p.starts[0].group_id, 2);
	assert_int_equal(p.nslots, 100);

	/* 99 machines: never; reported, and a later group still starts */
	world_free(w);
	w = world_new();
	for (size_t i = 0; i < 99; i++)
		w->m[w->nm++] = mach(0, 8);
	w->g[w->ng++] = group(1, -1, gpu_req(0, 8, 100), 1, 1, 3600 * SEC);
	w->g[w->ng++] = group(2, -1, gpu_req(0, 8, 1), 1, 1, 3600 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nskips, 1);
	assert_int_equal(p.skips[0].group_id, 1);
	assert_int_equal(p.skips[0].why, JF_PLAN_OVER_CLUSTER);
	assert_int_equal(p.nstarts, 1);
	assert_int_equal(p.starts[0].group_id, 2);
	world_free(w);
	jf_plan_release(&p);
}

static void test_fifo_queue(void **state)
{
	(void)state;
	struct jf_plan p;
	jf_plan_init(&p);
	/* everything fits: starts in submission order */
	struct world *w = world_new();
	for (size_t i = 0; i < 4; i++)
		w->m[w->nm++] = mach(0, 8);
	w->q[w->nq++] = (struct jf_plan_queue){ 0, 0 };
	for (int i = 0; i < 3; i++)
		w->g[w->ng++] = group(10 + i, 0, gpu_req(0, 2, 1), 2, 2, 600 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 6);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(p.starts[i].group_id, 10 + (int64_t)i / 2);
	world_free(w);

	/* capacity for one task: the first group gets it, the second waits
	 * behind it even though its task is smaller */
	w = world_new();
	for (size_t i = 0; i < 4; i++)
		w->m[w->nm++] = mach(0, 8);
	w->q[w->nq++] = (struct jf_plan_queue){ 2, 0 };
	w->g[w->ng++] = group(1, 0, gpu_req(0, 1, 2), 1, 1, 600 * SEC);
	w->g[w->ng++] = group(2, 0, gpu_req(0, 1, 1), 5, 5, 600 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 1);
	assert_int_equal(p.starts[0].group_id, 1);

	/* a waiting gang at the head of the queue is not overtaken by a
	 * long small task: machine 1 is busy until +100s, the gang needs both */
	world_free(w);
	w = world_new();
	w->m[w->nm++] = mach(0, 8);
	w->m[w->nm++] = mach(0, 8);
	w->q[w->nq++] = (struct jf_plan_queue){ 0, 0 };
	w->g[w->ng++] = group(1, -1, gpu_req(0, 8, 1), 1, 1, 100 * SEC);
	assert_true(world_place(w, 0, NOW + 100 * SEC));
	w->g[w->ng++] = group(2, 0, gpu_req(0, 8, 2), 1, 1, 600 * SEC);
	w->g[w->ng++] = group(3, 0, gpu_req(0, 1, 1), 1, 1, 600 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 0);
	assert_non_null(resv_of(&p, 1));
	assert_int_equal(resv_of(&p, 1)->at_ms, NOW + 100 * SEC);
	world_free(w);
	jf_plan_release(&p);
}

/* Machines 0 and 1 (8 GPUs each, model 0): machine 0 busy until +100s.
 * Machine 2 (model 0): 4 of 8 GPUs busy until +1000s.  Machine 3: model 1.
 * Group 1 is a 2 x 8-GPU gang: it reserves machines 0 and 1 at +100s. */
static struct world *backfill_world(void)
{
	struct world *w = world_new();
	w->m[w->nm++] = mach(0, 8);
	w->m[w->nm++] = mach(0, 8);
	w->m[w->nm++] = mach(0, 8);
	w->m[w->nm++] = mach(1, 8);
	w->g[w->ng++] = group(90, -1, gpu_req(0, 8, 1), 0, 9, 100 * SEC);
	w->g[w->ng++] = group(91, -1, gpu_req(0, 4, 1), 0, 9, 1000 * SEC);
	w->g[w->ng++] = group(1, -1, gpu_req(0, 8, 2), 1, 1, 3600 * SEC);
	assert_true(world_place(w, 0, NOW + 100 * SEC));
	assert_true(world_place(w, 1, NOW + 1000 * SEC));
	assert_int_equal(w->run[0].slots[0].machine, 0);
	assert_int_equal(w->run[1].slots[0].machine, 1);
	/* the 4-GPU task went to machine 1 (best fit: ties, lowest index);
	 * move it to machine 2 so that machine 1 is whole */
	jf_sched_release(w->m, &w->run[1].slots[0]);
	w->run[1].slots[0].machine = 2;
	assert_true(jf_sched_take(w->m, w->nm, &w->run[1].slots[0]));
	return w;
}

static void test_backfill(void **state)
{
	(void)state;
	struct jf_plan p;
	jf_plan_init(&p);

	/* a short 1-GPU task that ends before the gang's shadow time starts */
	struct world *w = backfill_world();
	w->g[w->ng++] = group(2, -1, gpu_req(0, 4, 1), 1, 1, 50 * SEC);
	w->g[w->ng++] = group(3, -1, gpu_req(0, 8, 1), 1, 1, 100 * SEC);
	world_pass(w, &p);
	const struct jf_plan_resv *r = resv_of(&p, 2);
	assert_non_null(r);
	assert_int_equal(r->at_ms, NOW + 100 * SEC);
	assert_int_equal(p.slots[r->slot].machine + p.slots[r->slot + 1].machine, 0 + 1);
	/* group 2 (4 GPUs, ends at +50s) fits on machine 2: untouched resources */
	assert_int_equal(starts_of(&p, 3), 1);
	assert_int_equal(p.slots[p.starts[0].slot].machine, 2);
	/* group 3 (8 GPUs, ends exactly at the shadow time) on machine 1 */
	assert_int_equal(starts_of(&p, 4), 1);
	assert_int_equal(p.slots[p.starts[1].slot].machine, 1);
	world_free(w);

	/* a long small task does not start: the only room is the gang's */
	w = backfill_world();
	w->g[w->ng++] = group(2, -1, gpu_req(0, 8, 1), 1, 1, 101 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 0);
	assert_non_null(resv_of(&p, 2));
	world_free(w);

	/* ... but it starts on resources the gang does not need: the free half
	 * of machine 2, or the model-1 machine */
	w = backfill_world();
	w->g[w->ng++] = group(2, -1, gpu_req(0, 1, 1), 5, 5, 9999 * SEC);
	w->g[w->ng++] = group(3, -1, gpu_req(1, 8, 1), 1, 1, 9999 * SEC);
	world_pass(w, &p);
	assert_int_equal(starts_of(&p, 3), 4);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(p.slots[p.starts[i].slot].machine, 2);
	assert_int_equal(starts_of(&p, 4), 1);
	assert_int_equal(p.slots[p.starts[4].slot].machine, 3);
	/* the fifth 1-GPU task would need the gang's machine: it waits, and
	 * its reservation comes after the gang's end */
	r = resv_of(&p, 3);
	assert_non_null(r);
	assert_true(r->at_ms >= NOW + 1000 * SEC);
	world_apply(w, &p);

	/* time passes to the shadow time: the gang starts then */
	for (size_t i = 0; i < w->nrun; i++)
		if (w->run[i].end_bound == NOW + 100 * SEC) {
			world_end(w, i);
			break;
		}
	w->now = NOW + 100 * SEC;
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 1);
	assert_int_equal(p.starts[0].group_id, 1);
	world_free(w);
	jf_plan_release(&p);
}

static void test_capacity_reservation(void **state)
{
	(void)state;
	struct jf_plan p;
	jf_plan_init(&p);
	/* queue capacity 8; 6 nodes held until +100s; a 4-node gang waits for
	 * capacity and holds 4 of it: a 1-node task of the same queue starts
	 * only if it ends by +100s; one of another queue or independent starts */
	for (int variant = 0; variant < 4; variant++) {
		struct world *w = world_new();
		for (size_t i = 0; i < 16; i++)
			w->m[w->nm++] = mach(0, 8);
		w->q[w->nq++] = (struct jf_plan_queue){ 8, 0 };
		w->q[w->nq++] = (struct jf_plan_queue){ 8, 0 };
		w->g[w->ng++] = group(1, 0, gpu_req(0, 1, 6), 0, 1, 100 * SEC);
		assert_true(world_place(w, 0, NOW + 100 * SEC));
		w->g[w->ng++] = group(2, 0, gpu_req(0, 1, 4), 1, 1, 600 * SEC);
		int q = variant == 2 ? 1 : variant == 3 ? -1 : 0;
		int64_t timeout = variant == 1 ? 100 * SEC : 101 * SEC;
		w->g[w->ng++] = group(3, q, gpu_req(0, 1, 1), 1, 1, timeout);
		world_pass(w, &p);
		const struct jf_plan_resv *r = resv_of(&p, 1);
		assert_non_null(r);
		assert_int_equal(r->at_ms, NOW + 100 * SEC);
		assert_int_equal(starts_of(&p, 2), variant == 0 ? 0 : 1);
		world_free(w);
	}
	jf_plan_release(&p);
}

static void test_independent_bypass(void **state)
{
	(void)state;
	struct jf_plan p;
	jf_plan_init(&p);
	struct world *w = world_new();
	for (size_t i = 0; i < 4; i++)
		w->m[w->nm++] = mach(0, 8);
	w->q[w->nq++] = (struct jf_plan_queue){ 1, 1 }; /* full */
	w->g[w->ng++] = group(1, 0, gpu_req(0, 1, 1), 3, 3, 600 * SEC);
	w->g[w->ng++] = group(2, -1, gpu_req(0, 1, 1), 3, 3, 600 * SEC);
	world_pass(w, &p);
	assert_int_equal(starts_of(&p, 0), 0);
	assert_int_equal(starts_of(&p, 1), 3);
	world_free(w);

	/* but not a machine reservation: a blocked gang's machines stay free */
	w = backfill_world();
	w->g[w->ng++] = group(2, -1, gpu_req(0, 8, 1), 1, 1, 9999 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 0);
	world_free(w);
	jf_plan_release(&p);
}

static void test_paused(void **state)
{
	(void)state;
	struct jf_plan p;
	jf_plan_init(&p);
	struct world *w = backfill_world();
	w->g[2].paused = true; /* the gang */
	w->g[w->ng++] = group(2, -1, gpu_req(0, 8, 1), 1, 1, 9999 * SEC);
	world_pass(w, &p);
	assert_null(resv_of(&p, 2));
	assert_int_equal(starts_of(&p, 2), 0);
	assert_int_equal(starts_of(&p, 3), 1); /* takes machine 1: nothing reserved */
	world_free(w);

	w = world_new();
	w->m[w->nm++] = mach(0, 8);
	w->g[w->ng++] = group(1, -1, gpu_req(0, 1, 1), 4, 4, 60 * SEC);
	w->g[0].paused = true;
	world_pass(w, &p);
	assert_int_equal(p.nstarts + p.nresv + p.nskips, 0);
	world_free(w);
	jf_plan_release(&p);
}

static void test_no_deadlock(void **state)
{
	(void)state;
	/* two gangs that each need 3 of 4 machines: nothing is held while a
	 * gang waits, so one runs and the other waits for its end */
	struct jf_plan p;
	jf_plan_init(&p);
	struct world *w = world_new();
	for (size_t i = 0; i < 4; i++)
		w->m[w->nm++] = mach(0, 8);
	w->g[w->ng++] = group(1, -1, gpu_req(0, 8, 3), 1, 1, 600 * SEC);
	w->g[w->ng++] = group(2, -1, gpu_req(0, 8, 3), 1, 1, 600 * SEC);
	w->g[w->ng++] = group(3, -1, gpu_req(0, 8, 2), 1, 1, 9999 * SEC);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 1);
	assert_int_equal(p.starts[0].group_id, 1);
	assert_int_equal(w->m[3].gpu_free, 0xff); /* gang 2 holds nothing */
	assert_int_equal(p.nresv, 2);
	assert_int_equal(p.resv[0].group_id, 2);
	assert_int_equal(p.resv[0].at_ms, NOW + 600 * SEC);
	/* group 3 (2 machines) would run past gang 2's shadow time: it waits
	 * for gang 2's end */
	assert_int_equal(p.resv[1].group_id, 3);
	assert_int_equal(p.resv[1].at_ms, NOW + 1200 * SEC);
	world_apply(w, &p);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 0);
	/* gang 1 ends early: gang 2 starts */
	w->now += 300 * SEC;
	world_end(w, 0);
	world_pass(w, &p);
	assert_int_equal(p.nstarts, 1);
	assert_int_equal(p.starts[0].group_id, 2);
	assert_int_equal(p.nresv, 1);
	assert_int_equal(p.resv[0].group_id, 3);
	assert_int_equal(p.resv[0].at_ms, NOW + 900 * SEC);
	world_free(w);
	jf_plan_release(&p);
}

static void test_never(void **state)
{
	(void)state;
	struct jf_plan p;
	jf_plan_init(&p);
	struct world *w = world_new();
	for (size_t i = 0; i < 2; i++)
		w->m[w->nm++] = mach(0, 4);
	w->q[w->nq++] = (struct jf_plan_queue){ 2, 0 };
	w->g[w->ng++] = group(1, 0, gpu_req(0, 1, 3), 1, 1, 60 * SEC);  /* > capacity */
	w->g[w->ng++] = group(2, -1, gpu_req(0, 8, 1), 1, 1, 60 * SEC); /* no 8-GPU machine */
	w->g[w->ng++] = group(3, -1, gpu_req(1, 1, 1), 1, 1, 60 * SEC); /* no model 1 */
	w->g[w->ng++] = group(4, -1, gpu_req(0, 1, 0), 1, 1, 60 * SEC); /* bad request */
	w->g[w->ng++] = group(5, 0, gpu_req(0, 4, 2), 1, 1, 60 * SEC);  /* fits */
	world_pass(w, &p);
	assert_int_equal(p.nskips, 4);
	assert_int_equal(p.skips[0].why, JF_PLAN_OVER_CAPACITY);
	assert_int_equal(p.skips[1].why, JF_PLAN_OVER_CLUSTER);
	assert_int_equal(p.skips[2].why, JF_PLAN_OVER_CLUSTER);
	assert_int_equal(p.skips[3].why, JF_PLAN_BAD_REQUEST);
	assert_int_equal(p.nresv, 0);
	assert_int_equal(p.nstarts, 1);
	assert_int_equal(p.starts[0].group_id, 5);
	world_free(w);
	jf_plan_release(&p);
}

static void test_bad_input(void **state)
{
	(void)state;
	struct jf_plan p;
	jf_plan_init(&p);
	struct world *w = world_new();
	w->m[w->nm++] = mach(0, 8);
	w->g[w->ng++] = group(1, 3, gpu_req(0, 1, 1), 1, 1, 60 * SEC); /* no queue 3 */
	struct jf_sched_machine before = w->m[0];
	struct jf_plan_in in = world_in(w);
	struct jf_error err = { 0 };
	assert_int_equal(jf_plan_pass(&p, w->m, w->nm, &in, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "queue"));
	assert_memory_equal(&before, &w->m[0], sizeof(before));
	assert_int_equal(p.nstarts, 0);

	w->g[0].queue = -1;
	struct jf_sched_slot s = { 5, 1, 1, 1 };
	struct jf_plan_running r = { &s, 1, -1, NOW };
	in = world_in(w);
	in.running = &r;
	in.nrunning = 1;
	assert_int_equal(jf_plan_pass(&p, w->m, w->nm, &in, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "machine 5"));
	assert_memory_equal(&before, &w->m[0], sizeof(before));

	/* empty input is fine; release twice is fine */
	struct jf_plan_in none = { NOW, NULL, 0, NULL, 0, NULL, 0 };
	assert_int_equal(jf_plan_pass(&p, NULL, 0, &none, &err), JF_OK);
	world_free(w);
	jf_plan_release(&p);
	jf_plan_release(&p);
	jf_plan_release(NULL);
}

/* ---- the planner beside the reference (tests/plan_ref.c) ---- */

static void assert_slots_equal(const struct jf_sched_slot *a, const struct jf_sched_slot *b,
			       int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		assert_int_equal(a[i].machine, b[i].machine);
		assert_int_equal(a[i].gpu_mask, b[i].gpu_mask);
		assert_int_equal(a[i].cpu_milli, b[i].cpu_milli);
		assert_int_equal(a[i].mem_bytes, b[i].mem_bytes);
	}
}

static void assert_same_as_ref(const struct jf_plan_in *in, const struct jf_plan *p,
			       const struct plan_ref *o)
{
	assert_int_equal(p->nstarts, o->nst);
	for (size_t i = 0; i < o->nst; i++) {
		assert_int_equal(p->starts[i].group, o->st[i].group);
		assert_int_equal(p->starts[i].group_id, in->groups[o->st[i].group].id);
		assert_slots_equal(&p->slots[p->starts[i].slot], &o->slots[o->st[i].slot],
				   in->groups[o->st[i].group].req.nodes);
	}
	assert_int_equal(p->nresv, o->nrv);
	for (size_t i = 0; i < o->nrv; i++) {
		assert_int_equal(p->resv[i].group, o->rv[i].group);
		assert_int_equal(p->resv[i].at_ms, o->rv[i].at);
		assert_int_equal(p->resv[i].until_ms, o->rv[i].until);
		assert_slots_equal(&p->slots[p->resv[i].slot], &o->slots[o->rv[i].slot],
				   in->groups[o->rv[i].group].req.nodes);
	}
	assert_int_equal(p->nskips, o->nsk);
	for (size_t i = 0; i < o->nsk; i++) {
		assert_int_equal(p->skips[i].group, o->sk[i].group);
		assert_int_equal(p->skips[i].why, o->sk[i].why);
	}
}

/* ---- what must hold after any pass ---- */

static bool fits_on(const struct jf_sched_machine *m, size_t nm, const struct jf_sched_req *r)
{
	static struct jf_sched_machine x[MAXM];
	struct jf_sched_slot s[MAXN];
	memcpy(x, m, nm * sizeof(*m));
	return jf_sched_place(x, nm, r, s);
}

static void check_pass(const struct jf_plan_in *in, const struct jf_sched_machine *before,
		       const struct jf_sched_machine *after, size_t nm, const struct jf_plan *p)
{
	static struct jf_sched_machine x[MAXM];
	int64_t started[MAXG] = { 0 }, qnodes[MAXQ] = { 0 };

	/* machines: every start whole, on free resources, never over-allocated;
	 * the machines lost exactly the starts (nothing held for waiting) */
	memcpy(x, before, nm * sizeof(*x));
	for (size_t i = 0; i < p->nstarts; i++) {
		const struct jf_plan_group *g = &in->groups[p->starts[i].group];
		assert_false(g->paused);
		for (int64_t n = 0; n < g->req.nodes; n++) {
			const struct jf_sched_slot *s = &p->slots[p->starts[i].slot + (size_t)n];
			assert_true(jf_sched_take(x, nm, s));
			assert_true(x[s->machine].cpu_free >= 0);
			assert_true(x[s->machine].mem_free >= 0);
			assert_int_equal(s->cpu_milli, g->req.cpu_milli);
			assert_int_equal(s->mem_bytes, g->req.mem_bytes);
			if (g->req.model >= 0 && g->req.gpus > 0) {
				assert_int_equal(x[s->machine].model, g->req.model);
				assert_int_equal(__builtin_popcountll(s->gpu_mask), g->req.gpus);
			} else {
				assert_int_equal(s->gpu_mask, 0);
			}
		}
		started[p->starts[i].group]++;
		if (g->queue >= 0)
			qnodes[g->queue] += g->req.nodes;
	}
	assert_memory_equal(x, after, nm * sizeof(*x));

	/* queues and groups */
	for (size_t q = 0; q < in->nqueues; q++) {
		int64_t cap = in->queues[q].capacity;
		if (cap > 0 && qnodes[q] > 0)
			assert_true(in->queues[q].held + qnodes[q] <= cap);
	}
	for (size_t gi = 0; gi < in->ngroups; gi++) {
		const struct jf_plan_group *g = &in->groups[gi];
		if (started[gi] > 0) {
			assert_true(g->running + started[gi] <= g->parallelism);
			assert_true(started[gi] <= g->waiting);
		}
	}
	for (size_t i = 0; i < p->nresv; i++) {
		const struct jf_plan_group *g = &in->groups[p->resv[i].group];
		assert_false(g->paused);
		assert_true(p->resv[i].at_ms >= in->now_ms);
		assert_int_equal(p->resv[i].until_ms,
				 plan_ref_end(p->resv[i].at_ms, g->timeout_ms));
		for (size_t j = 0; j < i; j++)
			assert_true(p->resv[j].group != p->resv[i].group);
	}

	/* the plan is physically feasible: at every shadow time (the only
	 * moments usage grows) what runs then - running tasks and starts not
	 * past their bound, reservations begun and not ended - fits together
	 * on the machines and in every queue */
	for (size_t i = 0; i < p->nresv; i++) {
		int64_t t = p->resv[i].at_ms, qt[MAXQ];
		bool qres[MAXQ] = { false };
		memcpy(x, after, nm * sizeof(*x));
		for (size_t q = 0; q < in->nqueues; q++)
			qt[q] = in->queues[q].held + qnodes[q];
		for (size_t r = 0; r < in->nrunning; r++) {
			if (in->running[r].end_ms > t)
				continue;
			plan_ref_add(x, in->running[r].slots, (int64_t)in->running[r].nslots);
			if (in->running[r].queue >= 0)
				qt[in->running[r].queue] -= (int64_t)in->running[r].nslots;
		}
		for (size_t s = 0; s < p->nstarts; s++) {
			const struct jf_plan_group *sg = &in->groups[p->starts[s].group];
			if (plan_ref_end(in->now_ms, sg->timeout_ms) > t)
				continue;
			plan_ref_add(x, &p->slots[p->starts[s].slot], sg->req.nodes);
			if (sg->queue >= 0)
				qt[sg->queue] -= sg->req.nodes;
		}
		for (size_t j = 0; j < p->nresv; j++) {
			const struct jf_plan_group *rg = &in->groups[p->resv[j].group];
			if (p->resv[j].at_ms > t || p->resv[j].until_ms <= t)
				continue;
			for (int64_t n = 0; n < rg->req.nodes; n++) {
				const struct jf_sched_slot *s =
					&p->slots[p->resv[j].slot + (size_t)n];
				assert_true(jf_sched_take(x, nm, s));
				assert_true(x[s->machine].cpu_free >= 0);
				assert_true(x[s->machine].mem_free >= 0);
			}
			if (rg->queue >= 0) {
				qt[rg->queue] += rg->req.nodes;
				qres[rg->queue] = true;
			}
		}
		for (size_t q = 0; q < in->nqueues; q++)
			if (qres[q] && in->queues[q].capacity > 0)
				assert_true(qt[q] <= in->queues[q].capacity);
	}

	/* work-conserving: a group that wanted more and got it neither started
	 * nor skipped does not fit now beside the reservations ahead of it
	 * that it would run into */
	for (size_t gi = 0; gi < in->ngroups; gi++) {
		const struct jf_plan_group *g = &in->groups[gi];
		int64_t want = g->parallelism - g->running;
		if (g->waiting < want)
			want = g->waiting;
		if (g->paused || want <= 0 || started[gi] >= want)
			continue;
		bool skipped = false;
		for (size_t s = 0; s < p->nskips; s++)
			skipped |= p->skips[s].group == gi;
		if (skipped)
			continue;
		int64_t end = plan_ref_end(in->now_ms, g->timeout_ms), q = g->queue;
		bool room = true;
		if (q >= 0 && in->queues[q].capacity > 0) {
			int64_t need = in->queues[q].held + qnodes[q] + g->req.nodes;
			for (size_t r = 0; r < p->nresv && p->resv[r].group < gi; r++)
				if (in->groups[p->resv[r].group].queue == q &&
				    p->resv[r].at_ms < end)
					need += in->groups[p->resv[r].group].req.nodes;
			room = need <= in->queues[q].capacity;
		}
		if (!room)
			continue;
		memcpy(x, after, nm * sizeof(*x));
		for (size_t r = 0; r < p->nresv && p->resv[r].group < gi; r++)
			if (p->resv[r].at_ms < end)
				plan_ref_sub(x, &p->slots[p->resv[r].slot],
					     in->groups[p->resv[r].group].req.nodes);
		assert_false(fits_on(x, nm, &g->req));
	}
}

/* Run the planner and the reference on w, compare, check; the plan's
 * starts become running tasks. */
static void pass_and_check(struct world *w, struct jf_plan *p, struct plan_ref *o)
{
	static struct jf_sched_machine before[MAXM], ref_m[MAXM];
	struct jf_plan_in in = world_in(w);
	memcpy(before, w->m, w->nm * sizeof(*w->m));
	memcpy(ref_m, w->m, w->nm * sizeof(*w->m));
	struct jf_error err = { 0 };
	assert_int_equal(jf_plan_pass(p, w->m, w->nm, &in, &err), JF_OK);
	assert_true(plan_ref_pass(o, &in, ref_m, w->nm));
	assert_same_as_ref(&in, p, o);
	assert_memory_equal(ref_m, w->m, w->nm * sizeof(*w->m));
	check_pass(&in, before, w->m, w->nm, p);
}

/* ---- random workloads ---- */

/* The number of random workloads: JOBFS_PLAN_SCENARIOS (a count from 1
 * to MAX_SCENARIOS), else DEFAULT_SCENARIOS.  test_random runs that many
 * scenarios; test_simulation one simulated cluster per ~167 of them (12
 * at 2,000), at least one. */
static uint64_t scenarios(void)
{
	const char *v = getenv("JOBFS_PLAN_SCENARIOS");
	if (!v || !*v)
		return DEFAULT_SCENARIOS;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (!isdigit((unsigned char)*v) || *end || errno || n < 1 || n > MAX_SCENARIOS)
		fail_msg("JOBFS_PLAN_SCENARIOS=%s: want a count from 1 to %llu", v,
			 (unsigned long long)MAX_SCENARIOS);
	return n;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}


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

static struct jf_sched_req rnd_req(struct rng *r)
{
	static const int G[4] = { 1, 2, 4, 8 };
	int64_t nodes = rnd(r, 3) == 0 ? 1 + rnd(r, 8) : 1;
	if (rnd(r, 4) == 0)
		return cpu_req(500 + rnd(r, 32) * 1000, (1 + rnd(r, 64)) * GIB, nodes);
	return gpu_req((int)rnd(r, 3), G[rnd(r, 4)], nodes);
}

/* A request that one of w's machines can take, mostly. */
static struct jf_sched_req rnd_req_for(struct rng *r, const struct world *w)
{
	struct jf_sched_req req = rnd_req(r);
	const struct jf_sched_machine *m = &w->m[rnd(r, (int64_t)w->nm)];
	if (rnd(r, 7) == 0 || (req.model < 0 && m->gpus > 0))
		return req;
	if (m->gpus == 0)
		return cpu_req(500 + rnd(r, 32) * 1000, (1 + rnd(r, 64)) * GIB, req.nodes);
	int gpus = 1 << rnd(r, 4);
	while (gpus > m->gpus)
		gpus /= 2;
	return gpu_req(m->model, gpus, req.nodes);
}

static void gen_world(struct rng *r, struct world *w)
{
	static const int G[5] = { 1, 2, 4, 8, 8 };
	w->now = NOW + rnd(r, 1000) * SEC;
	w->nm = 1 + (size_t)rnd(r, 12);
	for (size_t i = 0; i < w->nm; i++) {
		int kind = (int)rnd(r, 5);
		w->m[i] = kind == 4 ? cpu_mach() : mach(kind % 3, G[rnd(r, 5)]);
	}
	w->nq = (size_t)rnd(r, 4);
	for (size_t q = 0; q < w->nq; q++)
		w->q[q] = (struct jf_plan_queue){ rnd(r, 3) == 0 ? 0 : 1 + rnd(r, 24), 0 };
	w->ng = 1 + (size_t)rnd(r, 12);
	for (size_t i = 0; i < w->ng; i++) {
		int q = w->nq ? (int)rnd(r, (int64_t)w->nq + 1) - 1 : -1;
		int64_t timeout = rnd(r, 10) == 0 ? 0 : (1 + rnd(r, 200)) * SEC;
		w->g[i] = group(100 + (int64_t)i, q, rnd_req_for(r, w), rnd(r, 8), 1 + rnd(r, 6),
				timeout);
		w->g[i].paused = rnd(r, 10) == 0;
		if (rnd(r, 60) == 0)
			w->g[i].req.nodes = 0; /* a request no spec makes */
	}
	int64_t nrun = rnd(r, 40);
	for (int64_t i = 0; i < nrun; i++) {
		size_t gi = (size_t)rnd(r, (int64_t)w->ng);
		if (w->g[gi].req.nodes < 1)
			continue;
		int64_t end = rnd(r, 15) == 0 ? INT64_MAX : w->now + (rnd(r, 300) - 20) * SEC;
		world_place(w, gi, end);
	}
	for (size_t i = 0; i < w->ng; i++)
		if (w->g[i].parallelism < w->g[i].running)
			w->g[i].parallelism = w->g[i].running + rnd(r, 2);
	for (size_t q = 0; q < w->nq; q++)
		if (rnd(r, 20) == 0)
			w->q[q].held += 1 + rnd(r, 3); /* held by something not listed */
}

/* Time passes: some tasks end, at their bound or earlier. */
static void advance(struct rng *r, struct world *w)
{
	w->now += (1 + rnd(r, 150)) * SEC;
	for (size_t i = w->nrun; i-- > 0;)
		if (w->run[i].end_bound <= w->now || rnd(r, 4) == 0)
			world_end(w, i);
	for (size_t i = 0; i < w->ng; i++)
		if (rnd(r, 10) == 0)
			w->g[i].paused = !w->g[i].paused;
}

static void test_random(void **state)
{
	(void)state;
	struct plan_ref ref, *o = &ref;
	plan_ref_init(o);
	struct jf_plan p;
	jf_plan_init(&p);
	size_t passes = 0, starts = 0, resv = 0, skips = 0, backfills = 0, why[4] = { 0 };
	uint64_t n = scenarios();
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t seed = 1; seed <= n; seed++) {
		struct rng r = { seed * UINT64_C(0x9E3779B97F4A7C15) };
		struct world *w = world_new();
		gen_world(&r, w);
		for (int pass = 0; pass < 3; pass++) {
			pass_and_check(w, &p, o);
			passes++;
			starts += p.nstarts;
			resv += p.nresv;
			skips += p.nskips;
			for (size_t i = 0; i < p.nskips; i++)
				why[p.skips[i].why]++;
			for (size_t i = 0; i < p.nstarts; i++)
				backfills += p.nresv > 0 && p.starts[i].group > p.resv[0].group;
			world_apply(w, &p);
			advance(&r, w);
		}
		world_free(w);
	}
	printf("random: %llu scenarios, %zu passes, %zu starts (%zu behind a reservation), "
	       "%zu reservations, %zu skips (over capacity %zu, over the cluster %zu, bad %zu); "
	       "%.1f s\n",
	       (unsigned long long)n, passes, starts, backfills, resv, skips,
	       why[JF_PLAN_OVER_CAPACITY], why[JF_PLAN_OVER_CLUSTER], why[JF_PLAN_BAD_REQUEST],
	       ms_since(&t0) / 1e3);
	/* the workloads reach every rule (in proportion: > 100, 1,000 and 50
	 * at 2,000 scenarios); fewer than 2,000 say too little to tell */
	if (n >= 2000)
		assert_true(backfills * 20 > n && resv * 2 > n && skips * 40 > n);
	jf_plan_release(&p);
	plan_ref_release(o);
}

/* ---- simulated time ---- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

struct sim_group {
	int64_t arrive, total, done;
	bool tracked;
	int64_t shadow; /* first shadow time while tracked */
};

static void test_simulation(void **state)
{
	(void)state;
	struct plan_ref ref, *o = &ref;
	plan_ref_init(o);
	struct jf_plan p;
	jf_plan_init(&p);
	size_t checked = 0, checked_gangs = 0, voided = 0, passes = 0, tasks = 0;
	uint64_t seeds = (scenarios() * 12 + 1999) / 2000;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t seed = 1; seed <= seeds; seed++) {
		struct rng r = { seed * UINT64_C(0xD1B54A32D192ED03) };
		struct world *w = world_new();
		struct sim_group sg[MAXG];
		const int64_t days = 3, horizon = days * 86400 * SEC;
		/* cluster */
		w->nm = 6 + (size_t)rnd(&r, 10);
		size_t n8 = 0;
		for (size_t i = 0; i < w->nm; i++) {
			int64_t k = rnd(&r, 10);
			w->m[i] = k < 6   ? mach(0, 8)
				  : k < 8 ? mach(1, 4 + 4 * (int)rnd(&r, 2))
					  : cpu_mach();
			n8 += k < 6;
		}
		w->nq = 3;
		w->q[0] = (struct jf_plan_queue){ 0, 0 };
		w->q[1] = (struct jf_plan_queue){ 8 + rnd(&r, 16), 0 };
		w->q[2] = (struct jf_plan_queue){ 4 + rnd(&r, 8), 0 };
		/* groups, in arrival order = submission order */
		size_t ng = 80;
		int64_t arrivals[MAXG];
		for (size_t i = 0; i < ng; i++)
			arrivals[i] = w->now + rnd(&r, horizon);
		qsort(arrivals, ng, sizeof(*arrivals), cmp_i64);
		struct jf_plan_group all[MAXG];
		for (size_t i = 0; i < ng; i++) {
			struct jf_sched_req req = rnd_req_for(&r, w);
			if (rnd(&r, 4) == 0 && n8 > 1)
				req = gpu_req(0, 8, 2 + rnd(&r, (int64_t)n8 - 1)); /* a big gang */
			int64_t completions = 1 + rnd(&r, 10);
			int64_t par = rnd(&r, 2) ? completions : 1 + rnd(&r, completions);
			int64_t timeout = (600 + rnd(&r, 8 * 3600)) * SEC;
			all[i] = group((int64_t)i, (int)rnd(&r, 4) - 1, req, completions, par,
				       timeout);
			sg[i] = (struct sim_group){ arrivals[i], completions, 0, false, 0 };
		}
		/* the planner sees groups that arrived and have work left, in
		 * order; map[k] = index into all[] of w->g[k] */
		size_t map[MAXG];
		bool skipped[MAXG] = { false };
		int64_t now = sg[0].arrive;
		for (;;) {
			w->now = now;
			for (size_t i = w->nrun; i-- > 0;)
				if (w->run[i].end_real <= now) {
					size_t gi = map[w->run[i].group];
					world_end(w, i);
					sg[gi].done++;
					tasks++;
				}
			/* rebuild the snapshot's group list, carrying the counts */
			size_t old_map[MAXG], old_ng = w->ng;
			struct jf_plan_group old[MAXG];
			memcpy(old_map, map, sizeof(map));
			memcpy(old, w->g, old_ng * sizeof(*old));
			size_t back[MAXG];
			for (size_t i = 0; i < ng; i++)
				back[i] = (size_t)-1;
			for (size_t k = 0; k < old_ng; k++) {
				all[old_map[k]].waiting = old[k].waiting;
				all[old_map[k]].running = old[k].running;
			}
			w->ng = 0;
			for (size_t i = 0; i < ng; i++) {
				if (sg[i].arrive > now || sg[i].done == sg[i].total)
					continue;
				back[i] = w->ng;
				map[w->ng] = i;
				w->g[w->ng++] = all[i];
			}
			for (size_t ri = 0; ri < w->nrun; ri++)
				w->run[ri].group = back[old_map[w->run[ri].group]];
			/* the pass */
			pass_and_check(w, &p, o);
			passes++;
			for (size_t s = 0; s < p.nskips; s++)
				skipped[map[p.skips[s].group]] = true;
			/* the first blocked head starts by its first shadow time */
			for (size_t k = 0; k < w->ng; k++) {
				struct sim_group *h = &sg[map[k]];
				if (!h->tracked)
					continue;
				bool ahead = false;
				for (size_t s = 0; s < p.nstarts; s++)
					ahead |= p.starts[s].group < k;
				for (size_t s = 0; s < p.nresv; s++)
					ahead |= p.resv[s].group < k;
				if (ahead) {
					h->tracked = false;
					voided++;
				} else if (starts_of(&p, k) > 0) {
					assert_true(now <= h->shadow);
					h->tracked = false;
					checked++;
					checked_gangs += w->g[k].req.nodes > 1;
				} else {
					const struct jf_plan_resv *rv = resv_of(&p, k);
					assert_non_null(rv);
					assert_true(rv->at_ms <= h->shadow);
				}
			}
			if (p.nresv > 0 && !sg[map[p.resv[0].group]].tracked) {
				sg[map[p.resv[0].group]].tracked = true;
				sg[map[p.resv[0].group]].shadow = p.resv[0].at_ms;
			}
			/* start: each task runs for at most its bound */
			for (size_t s = 0; s < p.nstarts; s++) {
				size_t k = p.starts[s].group;
				world_run(w, k, &p.slots[p.starts[s].slot],
					  plan_ref_end(now, w->g[k].timeout_ms));
				w->g[k].waiting--;
				struct run *ru = &w->run[w->nrun - 1];
				int64_t d = rnd(&r, 3) == 0 ? w->g[k].timeout_ms
							    : 1 + rnd(&r, w->g[k].timeout_ms);
				ru->end_real = now + d;
			}
			/* work never waits on an idle cluster */
			if (w->nrun == 0)
				for (size_t k = 0; k < w->ng; k++)
					assert_true(w->g[k].waiting == 0 || skipped[map[k]]);
			/* the next event */
			int64_t next = INT64_MAX;
			for (size_t i = 0; i < ng; i++)
				if (sg[i].arrive > now && sg[i].arrive < next)
					next = sg[i].arrive;
			for (size_t i = 0; i < w->nrun; i++)
				if (w->run[i].end_real < next)
					next = w->run[i].end_real;
			if (next == INT64_MAX) {
				/* nothing runs, nothing comes: work waits only if it can never run
				 */
				for (size_t k = 0; k < w->ng; k++)
					assert_true(w->g[k].waiting == 0 || skipped[map[k]]);
				break;
			}
			now = next;
		}
		for (size_t i = 0; i < ng; i++)
			assert_true(sg[i].done == sg[i].total || skipped[i]);
		world_free(w);
	}
	printf("simulation: %llu clusters, %zu passes, %zu tasks run; first shadow time kept by "
	       "%zu heads (%zu gangs), %zu not checked (a group ahead gained work); %.1f s\n",
	       (unsigned long long)seeds, passes, tasks, checked, checked_gangs, voided,
	       ms_since(&t0) / 1e3);
	/* in proportion: > 50 heads and 10 gangs at 12 clusters */
	if (seeds >= 12)
		assert_true(checked * 12 > 50 * seeds && checked_gangs * 12 > 10 * seeds);
	jf_plan_release(&p);
	plan_ref_release(o);
}

/* ---- timing ---- */

static void test_timing(void **state)
{
	(void)state;
	struct rng r = { 42 };
	struct world *w = world_new();
	w->nm = 1000;
	for (size_t i = 0; i < w->nm; i++)
		w->m[i] = mach((int)(i % 3), 8);
	w->nq = 4;
	for (size_t q = 0; q < w->nq; q++)
		w->q[q] = (struct jf_plan_queue){ q == 0 ? 0 : 1000 + 500 * (int64_t)q, 0 };
	/* groups that run: 6 one-GPU tasks and 4 small CPU tasks per machine */
	w->ng = 0;
	for (int m = 0; m < 3; m++)
		w->g[m] = group(m, m - 1, gpu_req(m, 1, 1), 0, 10000, 0);
	w->g[3] = group(3, 2, cpu_req(4000, 8 * GIB, 1), 0, 10000, 0);
	w->ng = 4;
	for (size_t i = 0; i < w->nm; i++) {
		for (int k = 0; k < 6; k++)
			assert_true(
				world_place(w, (size_t)(i % 3), NOW + (1 + rnd(&r, 86400)) * SEC));
		for (int k = 0; k < 4; k++)
			assert_true(world_place(w, 3, NOW + (1 + rnd(&r, 86400)) * SEC));
	}
	assert_int_equal(w->nrun, 10000);
	/* 1,000 waiting groups: mixed gangs, GPU and CPU, some paused */
	struct rng r2 = { 7 };
	while (w->ng < 1000) {
		struct jf_sched_req req = rnd_req(&r2);
		if (rnd(&r2, 10) == 0)
			req = gpu_req((int)rnd(&r2, 3), 8, 1 + rnd(&r2, 64));
		int q = (int)rnd(&r2, 5) - 1;
		w->g[w->ng] = group((int64_t)w->ng, q, req, 1 + rnd(&r2, 50), 1 + rnd(&r2, 20),
				    (60 + rnd(&r2, 86400)) * SEC);
		w->g[w->ng].paused = rnd(&r2, 20) == 0;
		w->ng++;
	}
	struct jf_plan_in in = world_in(w);
	struct jf_sched_machine *copy = malloc(w->nm * sizeof(*copy));
	assert_non_null(copy);
	struct jf_plan p;
	jf_plan_init(&p);
	struct jf_error err = { 0 };
	double best = 1e9;
	for (int i = 0; i < 5; i++) {
		memcpy(copy, w->m, w->nm * sizeof(*copy));
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(jf_plan_pass(&p, copy, w->nm, &in, &err), JF_OK);
		double ms = ms_since(&t0);
		if (ms < best)
			best = ms;
	}
	printf("timing: 1000 machines, %zu running, %zu groups: %zu starts, %zu reservations, "
	       "%zu skips; best of 5 passes %.1f ms\n",
	       w->nrun, w->ng, p.nstarts, p.nresv, p.nskips, best);
	assert_true(p.nresv > 100);
	/* a figure, not a test (tests/bench/bench_sched times the planner) */
	free(copy);
	jf_plan_release(&p);
	world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capacity_caps),
		cmocka_unit_test(test_product_peak),
		cmocka_unit_test(test_gang_100),
		cmocka_unit_test(test_fifo_queue),
		cmocka_unit_test(test_backfill),
		cmocka_unit_test(test_capacity_reservation),
		cmocka_unit_test(test_independent_bypass),
		cmocka_unit_test(test_paused),
		cmocka_unit_test(test_no_deadlock),
		cmocka_unit_test(test_never),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_simulation),
		cmocka_unit_test(test_timing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
