/*
 * preempt.h - which running spot tasks to preempt so that on-demand work
 * fits (reference 5.4): the pure decision, not the killing.
 *
 * The engine calls jf_preempt_choose() when an on-demand gang cannot be
 * placed on what is free now.  It passes the machines as they are, the
 * request, and every running spot task whole (all the slots of all its
 * nodes); it gets back the tasks to preempt.  The choice follows the
 * product's rules:
 *   1. whole tasks only: a gang is preempted with all its nodes;
 *   2. nothing when req fits already;
 *   3. fewest nodes preempted (the sum of the victims' nslots); between
 *      choices of as many nodes, spare the oldest: the one whose oldest
 *      victim started latest wins, then the next oldest, and so on, then
 *      fewer tasks, then the lowest indexes;
 *   4. irreducible: removing any one victim makes req not fit, so a task
 *      that does not help (one on machines of another GPU model, say) is
 *      never in the result;
 *   5. deterministic: the same input gives the same output.
 * Rule 3 is a set-cover problem (NP-hard with gangs spanning machines);
 * the choice is the best of three greedy searches, each pruned to an
 * irreducible set, so it can take more nodes than the optimum in rare
 * cases but is never invalid.  How, and what it costs, is at the top of
 * preempt.c.
 *
 * "Fits" is jf_sched_place()'s: req fits on m exactly when placing it on a
 * copy of m would succeed.  The candidates' slots must be held, that is
 * not free in m, and no two may overlap; a slot whose machine index is
 * nm or more is ignored.
 *
 * Pure: no I/O, no clock, no globals.  Everything passed is borrowed and
 * left unchanged; the scratch space is allocated and freed inside.
 */
#ifndef JF_PREEMPT_H
#define JF_PREEMPT_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/sched.h"

struct jf_preempt_cand {                   /* one running spot task, whole (all its nodes) */
	int64_t id;                        /* the caller's (task id) */
	const struct jf_sched_slot *slots; /* one per node it holds */
	size_t nslots;
	int64_t start_ms; /* when it started: the youngest go first */
};

/* Choose spot tasks to preempt so that req (req->nodes nodes, a gang) fits on
 * the nm machines m once the victims' slots are given back.  m is what is free
 * now and is not changed.  On JF_OK, victims[0..*nv) are indexes into cand
 * (the caller provides room for nc); *nv == 0 means req fits already (nothing
 * to preempt).  JF_ENOENT (*nv = 0) when even preempting every candidate would
 * not make it fit.  JF_ENOMEM.  Pure: no I/O, no clock.
 *
 * The victims come in increasing index order. */
enum jf_err jf_preempt_choose(const struct jf_sched_machine *m, size_t nm,
			      const struct jf_sched_req *req, const struct jf_preempt_cand *cand,
			      size_t nc, size_t *victims, size_t *nv);

#endif
