/*
 * plan_ref.h - a deliberately simple reference for core/plan.c, written
 * from the rules at the top of plan.c and nothing else: plain loops over
 * everything, the reservation walk rebuilt from scratch at every candidate
 * time.  tests/unit/test_plan.c wants the same decisions from both on
 * random inputs; tests/bench/bench_sched.c prints its speed beside the
 * planner's.  Slow on purpose: a pass costs O(groups x ends x (machines +
 * ends)); do not make it clever, make it obviously right.
 *
 * Use: plan_ref_init(), then plan_ref_pass() as often as wanted (each one
 * replaces what the last one decided), plan_ref_release() at the end.  As
 * jf_plan_pass(), a pass takes every start from m.  Everything in `in` is
 * borrowed.
 */
#ifndef JF_TESTS_PLAN_REF_H
#define JF_TESTS_PLAN_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/plan.h"

struct plan_ref_dec {      /* a start or a reservation */
	size_t group;      /* index into in->groups */
	int64_t at, until; /* now or its shadow time; its end bound */
	size_t slot;       /* its req.nodes slots begin at slots[slot] */
};

struct plan_ref_skip {
	size_t group;
	enum jf_plan_why why;
};

struct plan_ref {
	struct plan_ref_dec *st; /* starts, in decision order */
	size_t nst;
	struct plan_ref_dec *rv; /* reservations, in decision order */
	size_t nrv;
	struct plan_ref_skip *sk; /* groups that can never run */
	size_t nsk;
	struct jf_sched_slot *slots;
	size_t nslots;
	/* private */
	size_t cap_st, cap_rv, cap_sk, cap_slots;
	struct jf_sched_machine *x; /* scratch: one copy of the machines */
	size_t cap_x;
	int64_t *times, *used; /* scratch: candidate times; nodes per queue */
	size_t cap_times, cap_used;
};

void plan_ref_init(struct plan_ref *o);
void plan_ref_release(struct plan_ref *o);

/* One pass over nm machines m (free now; starts are subtracted), by the
 * rules.  false: out of memory (o is then empty, m unchanged). */
bool plan_ref_pass(struct plan_ref *o, const struct jf_plan_in *in, struct jf_sched_machine *m,
		   size_t nm);

/* The end bound of a task of this timeout started at now (INT64_MAX: none). */
int64_t plan_ref_end(int64_t now, int64_t timeout);

/* Give back (add) or take (sub) what the n slots s hold. */
void plan_ref_add(struct jf_sched_machine *m, const struct jf_sched_slot *s, int64_t n);
void plan_ref_sub(struct jf_sched_machine *m, const struct jf_sched_slot *s, int64_t n);

#endif
