/*
 * eta.h - when waiting work will start and running work will finish: the
 * planner (plan.h) run forward in simulated time (reference 9.1,
 * eta_basis "simulation").
 *
 * From a snapshot of the present - what is free, every running task with
 * the planner's bound of its end and a predicted end, every queue, every
 * group the planner would take, in its order, with a predicted run time
 * per task - jf_eta_simulate() repeats: one jf_plan_pass() at time t (the
 * planner sees the same bounds it would see then: a task started at t
 * ends by t + its timeout), the starts it makes, then time moves to the
 * next predicted end, whose resources come back.  It stops when nothing
 * waits, when nothing running has a predicted end, past horizon_ms, or
 * after max_passes passes (so a refresh costs a bounded time).
 *
 * Ends within quantum_ms of the earliest (or within quantum_permille of
 * how far ahead it is, when that is more: 10 is 1%, so ends a day ahead
 * are taken 14 minutes at a time) are taken together, at the latest of
 * them: a start is never predicted earlier than the ends it needs; fewer
 * passes for many ends close together.  A step whose ends let nothing
 * start (no waiting group has room in its queue and its parallelism and
 * fits what is free) needs no planning pass: it is skipped.
 *
 * Pure: no I/O, no clock.  Everything in `in` is borrowed; out's arrays
 * are the caller's, sized as documented below.
 */
#ifndef JF_ETA_H
#define JF_ETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/plan.h"

struct jf_eta_running {
	const struct jf_sched_slot *slots; /* one per node */
	size_t nslots;
	int queue;        /* index into queues; -1 = none */
	int64_t bound_ms; /* the planner's bound of its end */
	int64_t end_ms;   /* predicted end; >= INT64_MAX / 2: unknown (it runs on) */
	size_t group;     /* index into groups; SIZE_MAX: a group not listed */
};

struct jf_eta_group {
	struct jf_plan_group g; /* as the planner gets it (g.timeout_ms: the bound) */
	int64_t duration_ms;    /* a task's predicted run time; <= 0: unknown */
};

struct jf_eta_in {
	int64_t now_ms;
	int64_t horizon_ms; /* simulate no later than this */
	size_t max_passes;
	int64_t quantum_ms;       /* ends this close together are one step ... */
	int64_t quantum_permille; /* ... or, if more, this share of how far ahead they are */
	const struct jf_sched_machine *machines; /* free now */
	size_t nm;
	const struct jf_eta_running *running;
	size_t nrunning;
	const struct jf_plan_queue *queues; /* held now */
	size_t nqueues;
	const struct jf_eta_group *groups;
	size_t ngroups;
	size_t keep; /* start times kept per group (its next `keep` tasks) */
};

struct jf_eta_out {
	int64_t *starts;    /* ngroups * keep: starts[g * keep + i], the i-th start
			       from now of group g; 0 = not within the simulation */
	int64_t *finish_ms; /* ngroups: when its last task ends; 0 = not known */
	size_t passes;      /* planning passes made */
	int64_t reached_ms; /* how far simulated time got */
	bool complete;      /* everything waiting started (no limit was hit) */
};

/* Simulate.  JF_EINVAL (with *err) for an input the planner refuses;
 * JF_ENOMEM.  On error out's arrays hold zeros. */
enum jf_err jf_eta_simulate(const struct jf_eta_in *in, struct jf_eta_out *out,
			    struct jf_error *err);

#endif
