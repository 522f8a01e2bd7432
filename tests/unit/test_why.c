/*
 * test_why.c - core/why.h (reasons, positions, reservation ETAs, messages)
 * and core/eta.h (the planner run forward), on clusters small enough to
 * work out by hand.  Every expected time below is worked out in the
 * comment above it from the planner's rules (plan.c) - the shadow times
 * of reservation-based ETAs are exact, not approximate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/eta.h"
#include "core/why.h"

#define GIB INT64_C(1073741824)
#define SEC INT64_C(1000)
#define NOW INT64_C(1700000000000)

static const char *const models[] = { "H800", "4090" };

static struct jf_sched_machine h800(void)
{
	return (struct jf_sched_machine){ 0, 8, 0xff, 128000, 1024 * GIB };
}

static struct jf_sched_req gpus8(int64_t nodes)
{
	return (struct jf_sched_req){ 0, 8, 8000, 64 * GIB, nodes };
}

/* a node holding all 8 GPUs of machine m (taken from ms) */
static struct jf_sched_slot hold(struct jf_sched_machine *ms, size_t m)
{
	struct jf_sched_slot s = { m, 0xff, 8000, 64 * GIB };
	ms[m].gpu_free &= ~s.gpu_mask;
	ms[m].cpu_free -= s.cpu_milli;
	ms[m].mem_free -= s.mem_bytes;
	return s;
}

static struct jf_plan_group group(int64_t id, int queue, struct jf_sched_req req, int64_t waiting,
				  int64_t running, int64_t parallelism, int64_t timeout_s)
{
	return (struct jf_plan_group){ id,          queue,           req,  waiting, running,
				       parallelism, timeout_s * SEC, false };
}

static struct jf_why_group planned(int64_t id, int64_t queue_id, size_t plan)
{
	return (struct jf_why_group){ id, queue_id, JF_REASON_NONE, plan, 0 };
}

static void names(void **state)
{
	(void)state;
	assert_string_equal(jf_reason_name(JF_REASON_RESOURCES), "Resources");
	assert_string_equal(jf_reason_name(JF_REASON_QUEUE_CAPACITY), "QueueCapacity");
	assert_string_equal(jf_reason_name(JF_REASON_SYNCING), "Syncing");
	assert_string_equal(jf_reason_name(JF_REASON_NONE), "");
	for (int r = 1; r < JF_REASON__COUNT; r++)
		assert_int_equal(jf_reason_lookup(jf_reason_name((enum jf_reason)r)), r);
	assert_int_equal(jf_reason_lookup("nonsense"), JF_REASON_NONE);
	assert_int_equal(jf_reason_lookup(NULL), JF_REASON_NONE);
}

/*
 * The case: two machines of 8 H800 GPUs, a gang of 2 x 8 GPUs
 * running until (bound) now + 100 s, in queue q (capacity 8 nodes of which
 * it holds 2).  Waiting, in order: B (2 x 8, timeout 50 s), C (1 x 8,
 * timeout 10 s).  Nothing is free: B reserves both machines at the gang's
 * end bound, now + 100 s.  C's walk: the gang frees both at +100, but B's
 * reservation holds them from now until its end, +150: C's shadow time is
 * +150.  Both wait for Resources, at positions 1 and 2.
 */
static void resources(void **state)
{
	(void)state;
	struct jf_sched_machine m[2] = { h800(), h800() };
	struct jf_sched_slot gang[2] = { hold(m, 0), hold(m, 1) };
	struct jf_plan_running run[1] = { { gang, 2, 0, NOW + 100 * SEC } };
	struct jf_plan_queue q[1] = { { 8, 2 } };
	struct jf_plan_group g[2] = { group(2, 0, gpus8(2), 1, 0, 1, 50),
				      group(3, 0, gpus8(1), 1, 0, 1, 10) };
	struct jf_plan_in in = { NOW, run, 1, q, 1, g, 2 };
	struct jf_plan plan;
	jf_plan_init(&plan);
	struct jf_error err;
	assert_int_equal(jf_plan_pass(&plan, m, 2, &in, &err), JF_OK);
	struct jf_why_group wg[2] = { planned(2, 7, 0), planned(3, 7, 1) };
	struct jf_wait w[2];
	jf_why_compute(&in, &plan, wg, 2, w);
	assert_int_equal(w[0].reason, JF_REASON_RESOURCES);
	assert_int_equal(w[0].position, 1);
	assert_int_equal(w[0].eta_ms, NOW + 100 * SEC);
	assert_int_equal(w[1].reason, JF_REASON_RESOURCES);
	assert_int_equal(w[1].position, 2);
	assert_int_equal(w[1].eta_ms, NOW + 150 * SEC);
	struct jf_why_cluster c = { m, 2, models, 2, "q", "queues/q/groups/a (1 task, 16 GPUs)" };
	char msg[400];
	jf_why_message(&w[0], &in, &g[0], &plan, &c, msg, sizeof(msg));
	assert_string_equal(msg, "needs 2 nodes x 8 H800 GPUs; 0 of 16 free; held by "
				 "queues/q/groups/a (1 task, 16 GPUs); queue q holds 2 of 8 nodes");
	/* a short buffer is cut, terminated */
	char small[12];
	jf_why_message(&w[0], &in, &g[0], &plan, &c, small, sizeof(small));
	assert_string_equal(small, "needs 2 nod");
	jf_plan_release(&plan);
}

/*
 * Capacity: queue of 2 nodes, both held by a running task ending (bound)
 * at +30 s on machine 0; machine 1 is free.  A 1-node group waits for the
 * queue, not for machines; its shadow time is the running task's end.
 */
static void capacity(void **state)
{
	(void)state;
	struct jf_sched_machine m[2] = { h800(), h800() };
	struct jf_sched_slot s[2] = { hold(m, 0), { 0, 0, 1000, GIB } };
	m[0].cpu_free -= 1000;
	m[0].mem_free -= GIB;
	struct jf_plan_running run[1] = { { s, 2, 0, NOW + 30 * SEC } };
	struct jf_plan_queue q[1] = { { 2, 2 } };
	struct jf_plan_group g[1] = { group(5, 0, gpus8(1), 3, 0, 3, 60) };
	struct jf_plan_in in = { NOW, run, 1, q, 1, g, 1 };
	struct jf_plan plan;
	jf_plan_init(&plan);
	struct jf_error err;
	assert_int_equal(jf_plan_pass(&plan, m, 2, &in, &err), JF_OK);
	assert_int_equal(plan.nstarts, 0);
	struct jf_why_group wg[1] = { planned(5, 1, 0) };
	struct jf_wait w[1];
	jf_why_compute(&in, &plan, wg, 1, w);
	assert_int_equal(w[0].reason, JF_REASON_QUEUE_CAPACITY);
	assert_int_equal(w[0].eta_ms, NOW + 30 * SEC);
	assert_int_equal(w[0].position, 1);
	struct jf_why_cluster c = { m, 2, models, 2, "small", "" };
	char msg[400];
	jf_why_message(&w[0], &in, &g[0], &plan, &c, msg, sizeof(msg));
	assert_string_equal(msg, "needs 1 node x 8 H800 GPUs; queue small holds 2 of 2 nodes");
	jf_plan_release(&plan);
}

/*
 * Reservation: A holds machine 1 until +100.  B (2 x 8, timeout 50)
 * reserves machines 0 and 1 at +100 (until +150).  C (1 x 8, timeout
 * 200) would fit machine 0 now, but would end at +200, after B's shadow
 * time: it waits for the Reservation, and its own shadow time is +150.
 * D (1 x 8, timeout 60) ends by +60 < +100: it backfills on machine 0.
 */
static void reservation(void **state)
{
	(void)state;
	struct jf_sched_machine m[2] = { h800(), h800() };
	struct jf_sched_slot a[1] = { hold(m, 1) };
	struct jf_plan_running run[1] = { { a, 1, 0, NOW + 100 * SEC } };
	struct jf_plan_queue q[1] = { { 0, 1 } };
	struct jf_plan_group g[3] = { group(2, 0, gpus8(2), 1, 0, 1, 50),
				      group(3, 0, gpus8(1), 1, 0, 1, 200),
				      group(4, 0, gpus8(1), 2, 0, 2, 60) };
	struct jf_plan_in in = { NOW, run, 1, q, 1, g, 3 };
	struct jf_plan plan;
	jf_plan_init(&plan);
	struct jf_error err;
	struct jf_sched_machine before[2] = { m[0], m[1] };
	assert_int_equal(jf_plan_pass(&plan, m, 2, &in, &err), JF_OK);
	assert_int_equal(plan.nstarts, 1);
	assert_int_equal(plan.starts[0].group_id, 4);
	struct jf_why_group wg[3] = { planned(2, 1, 0), planned(3, 1, 1), planned(4, 1, 2) };
	struct jf_wait w[3];
	jf_why_compute(&in, &plan, wg, 3, w);
	assert_int_equal(w[0].reason, JF_REASON_RESOURCES);
	assert_int_equal(w[0].eta_ms, NOW + 100 * SEC);
	assert_int_equal(w[1].reason, JF_REASON_RESERVATION);
	assert_int_equal(w[1].eta_ms, NOW + 150 * SEC);
	/* D's second task: machine 0 is taken by its first, machine 1 held:
	 * no room now (Resources), and it is third in the queue */
	assert_int_equal(w[2].reason, JF_REASON_RESOURCES);
	assert_int_equal(w[2].position, 3);
	struct jf_why_cluster c = { before, 2, models, 2, "q", "" };
	char msg[400];
	jf_why_message(&w[1], &in, &g[1], &plan, &c, msg, sizeof(msg));
	assert_string_equal(msg, "needs 1 node x 8 H800 GPUs; 8 of 16 free, reserved for earlier "
				 "waiting work");
	jf_plan_release(&plan);
}

/*
 * Parallelism 1 with one task running (bound +30 s): 3 wait for it.  A
 * paused group, a gated one and one that can never run (3 x 8 GPUs on a
 * 2-machine cluster) say so; an independent batch counts every waiting
 * group before it; a group whose waiting tasks all start waits no more.
 */
static void parallelism_and_others(void **state)
{
	(void)state;
	struct jf_sched_machine m[2] = { h800(), h800() };
	struct jf_sched_slot s[1] = { { 0, 0x1, 1000, GIB } };
	m[0].gpu_free &= ~1u;
	m[0].cpu_free -= 1000;
	m[0].mem_free -= GIB;
	struct jf_plan_running run[1] = { { s, 1, 0, NOW + 30 * SEC } };
	struct jf_plan_queue q[2] = { { 0, 1 }, { 0, 0 } };
	struct jf_sched_req one = { 0, 1, 1000, GIB, 1 };
	struct jf_plan_group g[5] = {
		group(10, 0, one, 3, 1, 1, 60),       /* parallelism */
		group(11, 0, one, 2, 0, 2, 60),       /* paused */
		group(12, 1, gpus8(3), 1, 0, 1, 60),  /* never */
		group(13, -1, one, 1, 0, 1, 60),      /* batch: starts */
		group(14, -1, gpus8(2), 1, 0, 1, 60), /* batch: waits */
	};
	g[1].paused = true;
	struct jf_plan_in in = { NOW, run, 1, q, 2, g, 5 };
	struct jf_plan plan;
	jf_plan_init(&plan);
	struct jf_error err;
	assert_int_equal(jf_plan_pass(&plan, m, 2, &in, &err), JF_OK);
	struct jf_why_group wg[6] = {
		planned(10, 1, 0),
		planned(11, 1, 1),
		{ 20, 1, JF_REASON_DEPENDENCY, 0, 0 }, /* kept from the planner */
		planned(12, 2, 2),
		planned(13, 0, 3),
		planned(14, 0, 4),
	};
	wg[0].next_end_ms = NOW + 30 * SEC;
	struct jf_wait w[6];
	jf_why_compute(&in, &plan, wg, 6, w);
	assert_int_equal(w[0].reason, JF_REASON_PARALLELISM);
	assert_int_equal(w[0].eta_ms, NOW + 30 * SEC);
	assert_int_equal(w[0].position, 1);
	assert_int_equal(w[1].reason, JF_REASON_PAUSED);
	assert_int_equal(w[1].position, 2);
	assert_int_equal(w[1].eta_ms, 0);
	assert_int_equal(w[2].reason, JF_REASON_DEPENDENCY);
	assert_int_equal(w[2].position, 3);
	assert_int_equal(w[3].reason, JF_REASON_UNSCHEDULABLE);
	assert_int_equal(w[3].position, 1); /* first of its own queue */
	assert_int_equal(w[4].reason, JF_REASON_NONE);
	assert_int_equal(w[4].position, 0);
	assert_int_equal(w[5].reason, JF_REASON_RESOURCES);
	assert_int_equal(w[5].position, 5); /* cluster-wide: 4 wait before it */
	struct jf_why_cluster c = { m, 2, models, 2, "q", "" };
	char msg[400];
	jf_why_message(&w[0], &in, &g[0], &plan, &c, msg, sizeof(msg));
	assert_string_equal(msg, "1 of 1 task run, its parallelism; 3 wait");
	jf_why_message(&w[1], &in, &g[1], &plan, &c, msg, sizeof(msg));
	assert_string_equal(msg, "");
	jf_plan_release(&plan);
}

/* CPU-only work: how many of its nodes fit what is free. */
static void cpu_message(void **state)
{
	(void)state;
	struct jf_sched_machine m[2] = { { -1, 0, 0, 4000, 16 * GIB },
					 { -1, 0, 0, 1000, 16 * GIB } };
	struct jf_sched_req r = { -1, 0, 2000, 4 * GIB, 3 };
	struct jf_plan_group g = group(1, -1, r, 1, 0, 1, 0);
	struct jf_plan_in in = { NOW, NULL, 0, NULL, 0, &g, 1 };
	struct jf_plan plan;
	jf_plan_init(&plan);
	struct jf_wait w = { JF_REASON_RESOURCES, 1, 0, JF_PLAN_BLOCK_RESOURCES };
	struct jf_why_cluster c = { m, 2, models, 2, "", NULL };
	char msg[400];
	jf_why_message(&w, &in, &g, &plan, &c, msg, sizeof(msg));
	assert_string_equal(msg, "needs 3 nodes x 2 CPUs, 4Gi of memory; 2 of 3 nodes fit what is "
				 "free");
	jf_plan_release(&plan);
}

/* ---- the simulation ---- */

struct simbox {
	int64_t starts[8 * 4];
	int64_t finish[8];
	struct jf_eta_out out;
};

static void box_init(struct simbox *b)
{
	memset(b, 0, sizeof(*b));
	b->out.starts = b->starts;
	b->out.finish_ms = b->finish;
}

/*
 * Two machines of 8 GPUs, each held by a task of A (group 0) with bound
 * +100 s but predicted ends +40 s and +60 s.  B (group 1): 3 tasks of 1 x
 * 8 GPUs, 30 s each, timeout 100 s, parallelism 3.  At +40 a machine frees
 * and B0 starts; at +60 the other, B1; at +70 B0 ends, B2 starts; B ends
 * with B2 at +100.  A ends at +60.
 */
static void sim_basic(void **state)
{
	(void)state;
	struct jf_sched_machine m[2] = { h800(), h800() };
	struct jf_sched_slot a0 = hold(m, 0), a1 = hold(m, 1);
	struct jf_eta_running run[2] = {
		{ &a0, 1, 0, NOW + 100 * SEC, NOW + 40 * SEC, 0 },
		{ &a1, 1, 0, NOW + 100 * SEC, NOW + 60 * SEC, 0 },
	};
	struct jf_plan_queue q[1] = { { 0, 2 } };
	struct jf_eta_group g[2] = {
		{ group(1, 0, gpus8(1), 0, 2, 2, 100), 50 * SEC },
		{ group(2, 0, gpus8(1), 3, 0, 3, 100), 30 * SEC },
	};
	struct jf_eta_in in = { .now_ms = NOW,
				.horizon_ms = NOW + 3600 * SEC,
				.max_passes = 100,
				.machines = m,
				.nm = 2,
				.running = run,
				.nrunning = 2,
				.queues = q,
				.nqueues = 1,
				.groups = g,
				.ngroups = 2,
				.keep = 4 };
	struct simbox b;
	box_init(&b);
	struct jf_error err;
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_OK);
	assert_true(b.out.complete);
	assert_int_equal(b.starts[4 + 0], NOW + 40 * SEC);
	assert_int_equal(b.starts[4 + 1], NOW + 60 * SEC);
	assert_int_equal(b.starts[4 + 2], NOW + 70 * SEC);
	assert_int_equal(b.starts[4 + 3], 0);
	assert_int_equal(b.finish[1], NOW + 100 * SEC);
	assert_int_equal(b.finish[0], NOW + 60 * SEC);
	assert_int_equal(b.out.passes, 4); /* now, +40, +60, +70 */
	/* the snapshot is not touched */
	assert_int_equal(m[0].gpu_free, 0);
}

/* Ends within the quantum go together, at the latest: +40 and +40.5 with
 * a 1 s quantum free both machines at +40.5: a 2-node gang starts then. */
static void sim_quantum(void **state)
{
	(void)state;
	struct jf_sched_machine m[2] = { h800(), h800() };
	struct jf_sched_slot a0 = hold(m, 0), a1 = hold(m, 1);
	struct jf_eta_running run[2] = {
		{ &a0, 1, -1, NOW + 100 * SEC, NOW + 40 * SEC, SIZE_MAX },
		{ &a1, 1, -1, NOW + 100 * SEC, NOW + 40500, SIZE_MAX },
	};
	struct jf_eta_group g[1] = { { group(2, -1, gpus8(2), 1, 0, 1, 100), 0 } };
	struct jf_eta_in in = { .now_ms = NOW,
				.horizon_ms = NOW + 3600 * SEC,
				.max_passes = 100,
				.quantum_ms = 1000,
				.machines = m,
				.nm = 2,
				.running = run,
				.nrunning = 2,
				.groups = g,
				.ngroups = 1,
				.keep = 4 };
	struct simbox b;
	box_init(&b);
	struct jf_error err;
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_OK);
	assert_int_equal(b.starts[0], NOW + 40500);
	assert_int_equal(b.out.passes, 2);
	/* no duration known: it runs to its timeout */
	assert_int_equal(b.finish[0], NOW + 40500 + 100 * SEC);
}

/* A running task with no predicted end and no bound holds its machine for
 * ever: what needs it never starts; the limits stop a long simulation. */
static void sim_limits(void **state)
{
	(void)state;
	struct jf_sched_machine m[1] = { h800() };
	struct jf_sched_slot a0 = hold(m, 0);
	struct jf_eta_running run[1] = { { &a0, 1, -1, INT64_MAX, INT64_MAX, SIZE_MAX } };
	struct jf_eta_group g[1] = { { group(2, -1, gpus8(1), 1, 0, 1, 0), 0 } };
	struct jf_eta_in in = { .now_ms = NOW,
				.horizon_ms = NOW + 3600 * SEC,
				.max_passes = 100,
				.machines = m,
				.nm = 1,
				.running = run,
				.nrunning = 1,
				.groups = g,
				.ngroups = 1,
				.keep = 4 };
	struct simbox b;
	box_init(&b);
	struct jf_error err;
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_OK);
	assert_false(b.out.complete);
	assert_int_equal(b.starts[0], 0);
	assert_int_equal(b.finish[0], 0);
	assert_int_equal(b.out.passes, 1);

	/* 10 tasks of 10 s, one at a time (parallelism 1) on a free machine:
	 * 3 passes allowed see the starts at +0, +10, +20 and stop there */
	struct jf_sched_machine m2[1] = { h800() };
	struct jf_eta_group g2[1] = { { group(3, -1, gpus8(1), 10, 0, 1, 60), 10 * SEC } };
	in.machines = m2;
	in.running = NULL;
	in.nrunning = 0;
	in.groups = g2;
	in.max_passes = 3;
	box_init(&b);
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_OK);
	assert_false(b.out.complete);
	assert_int_equal(b.starts[0], NOW);
	assert_int_equal(b.starts[1], NOW + 10 * SEC);
	assert_int_equal(b.starts[2], NOW + 20 * SEC);
	assert_int_equal(b.starts[3], 0);
	assert_int_equal(b.finish[0], 0);
	assert_int_equal(b.out.reached_ms, NOW + 20 * SEC);
	/* the horizon: +15 s sees two starts */
	in.max_passes = 100;
	in.horizon_ms = NOW + 15 * SEC;
	box_init(&b);
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_OK);
	assert_int_equal(b.starts[1], NOW + 10 * SEC);
	assert_int_equal(b.starts[2], 0);
	/* all of it: the tenth starts at +90 and it ends at +100 */
	in.horizon_ms = NOW + 3600 * SEC;
	box_init(&b);
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_OK);
	assert_true(b.out.complete);
	assert_int_equal(b.finish[0], NOW + 100 * SEC);
}

/* The queue's capacity holds in the simulation too: capacity 1, three
 * 10 s tasks of 1 node, two free machines: one at a time. */
static void sim_capacity(void **state)
{
	(void)state;
	struct jf_sched_machine m[2] = { h800(), h800() };
	struct jf_plan_queue q[1] = { { 1, 0 } };
	struct jf_eta_group g[1] = { { group(2, 0, gpus8(1), 3, 0, 3, 60), 10 * SEC } };
	struct jf_eta_in in = { .now_ms = NOW,
				.horizon_ms = NOW + 3600 * SEC,
				.max_passes = 100,
				.machines = m,
				.nm = 2,
				.queues = q,
				.nqueues = 1,
				.groups = g,
				.ngroups = 1,
				.keep = 4 };
	struct simbox b;
	box_init(&b);
	struct jf_error err;
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_OK);
	assert_int_equal(b.starts[0], NOW);
	assert_int_equal(b.starts[1], NOW + 10 * SEC);
	assert_int_equal(b.starts[2], NOW + 20 * SEC);
	assert_int_equal(b.finish[0], NOW + 30 * SEC);
	/* a bad input is the planner's error, and out says nothing */
	struct jf_eta_group bad[1] = { { group(2, 5, gpus8(1), 3, 0, 3, 60), 10 * SEC } };
	in.groups = bad;
	box_init(&b);
	b.starts[0] = 42;
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_EINVAL);
	assert_int_equal(b.starts[0], 0);
}

/*
 * A step whose ends free nothing a waiting group can use takes no pass: a
 * CPU task ends at +10 s while the waiting group needs the 8 GPUs that A
 * holds until +100 s.  Two passes: now and +100.  And the relative
 * quantum: ends at +1000 s and +1005 s are 1% of 1000 s apart at most:
 * one step at +1005.
 */
static void sim_skips(void **state)
{
	(void)state;
	struct jf_sched_machine m[2] = { h800(), { 1, 0, 0, 8000, 64 * GIB } };
	struct jf_sched_slot a0 = hold(m, 0), c = { 1, 0, 8000, GIB };
	m[1].cpu_free = 0;
	struct jf_eta_running run[2] = {
		{ &a0, 1, -1, NOW + 100 * SEC, NOW + 100 * SEC, SIZE_MAX },
		{ &c, 1, -1, NOW + 10 * SEC, NOW + 10 * SEC, SIZE_MAX },
	};
	struct jf_eta_group g[1] = { { group(2, -1, gpus8(1), 1, 0, 1, 60), 10 * SEC } };
	struct jf_eta_in in = { .now_ms = NOW,
				.horizon_ms = NOW + 3600 * SEC,
				.max_passes = 100,
				.machines = m,
				.nm = 2,
				.running = run,
				.nrunning = 2,
				.groups = g,
				.ngroups = 1,
				.keep = 4 };
	struct simbox b;
	box_init(&b);
	struct jf_error err;
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_OK);
	assert_int_equal(b.starts[0], NOW + 100 * SEC);
	assert_int_equal(b.out.passes, 2);

	struct jf_sched_machine m2[2] = { h800(), h800() };
	struct jf_sched_slot x0 = hold(m2, 0), x1 = hold(m2, 1);
	struct jf_eta_running run2[2] = {
		{ &x0, 1, -1, NOW + 2000 * SEC, NOW + 1000 * SEC, SIZE_MAX },
		{ &x1, 1, -1, NOW + 2000 * SEC, NOW + 1005 * SEC, SIZE_MAX },
	};
	struct jf_eta_group g2[1] = { { group(3, -1, gpus8(2), 1, 0, 1, 60), 10 * SEC } };
	in.machines = m2;
	in.running = run2;
	in.groups = g2;
	in.quantum_ms = SEC;
	in.quantum_permille = 10;
	box_init(&b);
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_OK);
	assert_int_equal(b.starts[0], NOW + 1005 * SEC);
	assert_int_equal(b.out.passes, 2);
	/* without it the two ends are two steps, the first starting nothing */
	in.quantum_permille = 0;
	box_init(&b);
	assert_int_equal(jf_eta_simulate(&in, &b.out, &err), JF_OK);
	assert_int_equal(b.starts[0], NOW + 1005 * SEC);
	assert_int_equal(b.out.passes, 2); /* +1000 frees one machine: the gang cannot start */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names),
		cmocka_unit_test(resources),
		cmocka_unit_test(capacity),
		cmocka_unit_test(reservation),
		cmocka_unit_test(parallelism_and_others),
		cmocka_unit_test(cpu_message),
		cmocka_unit_test(sim_basic),
		cmocka_unit_test(sim_quantum),
		cmocka_unit_test(sim_limits),
		cmocka_unit_test(sim_capacity),
		cmocka_unit_test(sim_skips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
