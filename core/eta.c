/*
 * eta.c - the planner run forward in simulated time.  See eta.h.
 *
 * State: what is free (a copy of the machines, the planner subtracts its
 * starts from it), the tasks running in the simulation (the snapshot's,
 * then each start's, with its slots, the planner's bound of its end and
 * its predicted end), the queues' held nodes and the groups' waiting and
 * running counts.  A step is one planning pass at t, then the next batch
 * of predicted ends.  A task whose predicted end is unknown holds what it
 * holds for ever, as the planner's bound would say.
 *
 * Cost per step: one jf_plan_pass() over what still waits, plus O(running)
 * to find and release the next ends.
 */
#include "core/eta.h"

#include <stdlib.h>
#include <string.h>

#include "core/grow.h"

#define NO_BOUND (INT64_MAX / 2)

struct srun {
	struct jf_sched_slot *slots; /* owned when own */
	size_t nslots;
	bool own;
	int queue;
	int64_t bound, end;
	size_t group;
};

struct sim {
	const struct jf_eta_in *in;
	struct jf_eta_out *out;
	struct jf_sched_machine *m;
	struct jf_plan_queue *q;
	struct jf_plan_group *g;
	size_t *nstart;   /* starts so far, per group */
	int64_t *max_end; /* latest predicted end of its tasks so far, per group */
	bool *unknown;    /* one of its tasks has no predicted end */
	bool *never;      /* the planner skipped it: it never starts */
	struct srun *run;
	size_t nrun, caprun;
	struct jf_plan_running *prun;
	size_t capprun;
};

static int64_t add_sat(int64_t a, int64_t b)
{
	return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

static void note_end(struct sim *s, size_t gi, int64_t end)
{
	if (gi >= s->in->ngroups)
		return;
	if (end >= NO_BOUND)
		s->unknown[gi] = true;
	else if (end > s->max_end[gi])
		s->max_end[gi] = end;
}

static bool add_run(struct sim *s, struct srun r)
{
	if (!jf_grow(&s->run, &s->caprun, s->nrun + 1, sizeof(*s->run)))
		return false;
	s->run[s->nrun++] = r;
	note_end(s, r.group, r.end);
	return true;
}

static void sim_free(struct sim *s)
{
	for (size_t i = 0; i < s->nrun; i++)
		if (s->run[i].own)
			free(s->run[i].slots);
	free(s->run);
	free(s->prun);
	free(s->m);
	free(s->q);
	free(s->g);
	free(s->nstart);
	free(s->max_end);
	free(s->unknown);
	free(s->never);
}

/* One planning pass at t: its starts join the running. */
static enum jf_err step(struct sim *s, struct jf_plan *plan, int64_t t, struct jf_error *err)
{
	const struct jf_eta_in *in = s->in;
	if (!jf_grow(&s->prun, &s->capprun, s->nrun ? s->nrun : 1, sizeof(*s->prun)))
		return jf_error_set(err, JF_ENOMEM, 0, "eta: out of memory");
	for (size_t i = 0; i < s->nrun; i++)
		s->prun[i] = (struct jf_plan_running){ s->run[i].slots, s->run[i].nslots,
						       s->run[i].queue, s->run[i].bound };
	struct jf_plan_in pin = {
		.now_ms = t,
		.running = s->prun,
		.nrunning = s->nrun,
		.queues = s->q,
		.nqueues = in->nqueues,
		.groups = s->g,
		.ngroups = in->ngroups,
	};
	enum jf_err rc = jf_plan_pass(plan, s->m, in->nm, &pin, err);
	if (rc != JF_OK)
		return rc;
	s->out->passes++;
	for (size_t i = 0; i < plan->nskips; i++)
		s->never[plan->skips[i].group] = true;
	for (size_t i = 0; i < plan->nstarts; i++) {
		size_t gi = plan->starts[i].group;
		struct jf_plan_group *g = &s->g[gi];
		size_t k = (size_t)g->req.nodes;
		struct jf_sched_slot *slots = malloc(k * sizeof(*slots));
		if (!slots)
			return jf_error_set(err, JF_ENOMEM, 0, "eta: out of memory");
		memcpy(slots, &plan->slots[plan->starts[i].slot], k * sizeof(*slots));
		int64_t bound = g->timeout_ms > 0 ? add_sat(t, g->timeout_ms) : INT64_MAX;
		int64_t d = in->groups[gi].duration_ms;
		int64_t end = d > 0 ? add_sat(t, d) : bound;
		if (end > bound)
			end = bound;
		if (!add_run(s, (struct srun){ slots, k, true, g->queue, bound, end, gi })) {
			free(slots);
			return jf_error_set(err, JF_ENOMEM, 0, "eta: out of memory");
		}
		g->waiting--;
		g->running++;
		if (g->queue >= 0)
			s->q[g->queue].held += g->req.nodes;
		if (s->nstart[gi] < in->keep)
			s->out->starts[gi * in->keep + s->nstart[gi]] = t;
		s->nstart[gi]++;
	}
	return JF_OK;
}

/*
 * Could a pass now start anything?  Every start the planner makes has room
 * in its queue and its parallelism and fits what is free (reservations only
 * take more away), so when no waiting group passes these three a pass
 * would start nothing: the simulation skips it.  Shapes are checked once.
 */
static bool could_start(const struct sim *s)
{
	const struct jf_sched_req *no[32];
	size_t nno = 0;
	for (size_t i = 0; i < s->in->ngroups; i++) {
		const struct jf_plan_group *g = &s->g[i];
		if (g->waiting <= 0 || g->paused || s->never[i] || g->running >= g->parallelism)
			continue;
		if (g->queue >= 0 && (size_t)g->queue < s->in->nqueues &&
		    s->q[g->queue].capacity > 0 &&
		    s->q[g->queue].held + g->req.nodes > s->q[g->queue].capacity)
			continue;
		bool known = false;
		for (size_t k = 0; k < nno && !known; k++)
			known = !memcmp(no[k], &g->req, sizeof(g->req));
		if (known)
			continue;
		int64_t total = 0;
		for (size_t m = 0; m < s->in->nm && total < g->req.nodes; m++)
			total += jf_sched_copies(&s->m[m], &g->req);
		if (total >= g->req.nodes)
			return true;
		if (nno < sizeof(no) / sizeof(no[0]))
			no[nno++] = &g->req;
	}
	return false;
}

static bool waits(const struct sim *s)
{
	for (size_t i = 0; i < s->in->ngroups; i++)
		if (s->g[i].waiting > 0 && !s->g[i].paused && !s->never[i])
			return true;
	return false;
}

/* The next batch of ends: those within quantum of the earliest, at the
 * latest of them.  false when nothing running has a known end. */
static bool next_ends(const struct sim *s, int64_t *at)
{
	int64_t first = INT64_MAX;
	for (size_t i = 0; i < s->nrun; i++)
		if (s->run[i].end < first)
			first = s->run[i].end;
	if (first >= NO_BOUND)
		return false;
	/* the further ahead, the coarser: a start a day away needs no second */
	int64_t q = s->in->quantum_ms,
		rel = (first - s->in->now_ms) / 1000 * s->in->quantum_permille;
	if (rel > q)
		q = rel;
	int64_t last = first, lim = add_sat(first, q);
	for (size_t i = 0; i < s->nrun; i++)
		if (s->run[i].end <= lim && s->run[i].end > last)
			last = s->run[i].end;
	*at = last;
	return true;
}

static void release_until(struct sim *s, int64_t at)
{
	size_t o = 0;
	for (size_t i = 0; i < s->nrun; i++) {
		struct srun *r = &s->run[i];
		if (r->end > at) {
			s->run[o++] = *r;
			continue;
		}
		for (size_t k = 0; k < r->nslots; k++)
			jf_sched_release(s->m, &r->slots[k]);
		if (r->queue >= 0 && (size_t)r->queue < s->in->nqueues)
			s->q[r->queue].held -= (int64_t)r->nslots;
		if (r->group < s->in->ngroups && s->g[r->group].running > 0)
			s->g[r->group].running--;
		if (r->own)
			free(r->slots);
	}
	s->nrun = o;
}

enum jf_err jf_eta_simulate(const struct jf_eta_in *in, struct jf_eta_out *out,
			    struct jf_error *err)
{
	size_t ng = in->ngroups;
	if (in->keep)
		memset(out->starts, 0, ng * in->keep * sizeof(*out->starts));
	memset(out->finish_ms, 0, ng * sizeof(*out->finish_ms));
	out->passes = 0;
	out->reached_ms = in->now_ms;
	out->complete = false;
	struct sim s = { .in = in, .out = out };
	size_t one = ng ? ng : 1;
	s.m = malloc((in->nm ? in->nm : 1) * sizeof(*s.m));
	s.q = malloc((in->nqueues ? in->nqueues : 1) * sizeof(*s.q));
	s.g = malloc(one * sizeof(*s.g));
	s.nstart = calloc(one, sizeof(*s.nstart));
	s.max_end = calloc(one, sizeof(*s.max_end));
	s.unknown = calloc(one, sizeof(*s.unknown));
	s.never = calloc(one, sizeof(*s.never));
	struct jf_plan plan;
	jf_plan_init(&plan);
	enum jf_err rc = JF_OK;
	if (!s.m || !s.q || !s.g || !s.nstart || !s.max_end || !s.unknown || !s.never) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "eta: out of memory");
		goto out;
	}
	if (in->nm)
		memcpy(s.m, in->machines, in->nm * sizeof(*s.m));
	if (in->nqueues)
		memcpy(s.q, in->queues, in->nqueues * sizeof(*s.q));
	for (size_t i = 0; i < ng; i++)
		s.g[i] = in->groups[i].g;
	for (size_t i = 0; i < in->nrunning; i++) {
		const struct jf_eta_running *r = &in->running[i];
		int64_t end = r->end_ms < r->bound_ms ? r->end_ms : r->bound_ms;
		if (end < in->now_ms)
			end = in->now_ms;
		if (!add_run(&s, (struct srun){ (struct jf_sched_slot *)r->slots, r->nslots, false,
						r->queue, r->bound_ms, end, r->group })) {
			rc = jf_error_set(err, JF_ENOMEM, 0, "eta: out of memory");
			goto out;
		}
	}
	int64_t t = in->now_ms;
	bool plan_now = true;
	for (;;) {
		if (plan_now) {
			rc = step(&s, &plan, t, err);
			if (rc != JF_OK)
				goto out;
		}
		if (!waits(&s)) {
			out->complete = true;
			break;
		}
		int64_t at;
		if (out->passes >= in->max_passes || !next_ends(&s, &at) || at > in->horizon_ms)
			break;
		release_until(&s, at);
		t = at;
		plan_now = could_start(&s);
	}
	out->reached_ms = t;
	/* a group all of whose tasks started ends with its last one */
	for (size_t i = 0; i < ng; i++)
		if (s.g[i].waiting <= 0 && !s.unknown[i] && s.max_end[i] > 0)
			out->finish_ms[i] = s.max_end[i];
out:
	if (rc != JF_OK) {
		if (in->keep)
			memset(out->starts, 0, ng * in->keep * sizeof(*out->starts));
		memset(out->finish_ms, 0, ng * sizeof(*out->finish_ms));
	}
	jf_plan_release(&plan);
	sim_free(&s);
	return rc;
}
