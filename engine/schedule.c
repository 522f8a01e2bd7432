/*
 * schedule.c - one scheduling pass: the engine's picture in, core/plan.c's
 * decisions out.
 *
 * The snapshot: the machines as they are (e->machines), every task holding
 * resources with an upper bound of its end (its attempts' deadlines, or the
 * kill deadline while it is being stopped), every queue that has active
 * groups with its capacity and the nodes it holds, and every active group
 * in submission order with its request, counts and parallelism.  The plan
 * subtracts what it starts from e->machines; each start becomes a task
 * taken from the group's waiting tasks, lowest index first.  Groups the
 * planner says can never run get a message and one Warning event.
 *
 * Spot yields (reference 5.4).  On-demand groups go to the planner before spot
 * groups, so freed GPUs go to on-demand work first.  A spot group with a
 * unit_runtime goes to the planner only while the forecast's risk of a
 * preemption within that time is at most the cluster's
 * spot_risk_threshold; otherwise it waits (message "waiting for a low-risk
 * window") and the engine looks again every minute.  After the starts,
 * every on-demand group the planner left blocked gets spot tasks preempted
 * for it (core/preempt.c: whole gangs, fewest nodes, youngest first), unless
 * what is free, plus what spot tasks already being preempted will free, is
 * enough, or its queue's capacity is what blocks it.
 */
#include "engine/engine_int.h"

#include "core/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/forecast.h"
#include "core/plan.h"
#include "core/preempt.h"
#include "core/quantity.h"

#define FAR_FUTURE_MS (INT64_C(1) << 62)

struct snap {
	struct jf_engine *e;
	struct jf_plan_running *run;
	size_t nrun, caprun;
	struct jf_plan_queue *queues;
	int64_t *queue_ids;
	size_t nq, capq;
	struct jf_plan_group *groups;
	uid_t *uids;
	gid_t *gids;
	size_t ng, capg;
	bool spot;          /* this listing takes spot groups (else the rest) */
	int64_t *free_gpus; /* per GPU model: free, less what groups listed so far may take */
	struct gate {       /* spot groups whose window was decided */
		int64_t id;
		bool wait;
		double risk;
	} * gates;
	size_t ngates, capgates;
	struct jf_why_group *wg; /* why.c: every group with waiting tasks, in order */
	size_t nwg, capwg;
	int64_t *run_gid, *run_start; /* per run: its group and its attempt's start */
	size_t caprun2;
	bool oom;
};

/* Group gid has waiting tasks: why.c words why they wait after the pass. */
static void note_why(struct snap *s, int64_t gid, int64_t queue_id, enum jf_reason gate)
{
	if (!jf_grow(&s->wg, &s->capwg, s->nwg + 1, sizeof(*s->wg))) {
		s->oom = true;
		return;
	}
	s->wg[s->nwg++] = (struct jf_why_group){ gid, queue_id, gate, s->ng, 0 };
}

#define WINDOW_RECHECK_MS 60000

static int queue_index(struct snap *s, int64_t queue_id)
{
	if (!queue_id)
		return -1;
	for (size_t i = 0; i < s->nq; i++)
		if (s->queue_ids[i] == queue_id)
			return (int)i;
	size_t capq = s->capq;
	if (!jf_grow(&s->queues, &capq, s->nq + 1, sizeof(*s->queues)) ||
	    !jf_grow(&s->queue_ids, &s->capq, s->nq + 1, sizeof(*s->queue_ids))) {
		s->oom = true;
		return -1;
	}
	struct jf_queue_rec q;
	int64_t cap = 0;
	if (jf_queue_get(s->e->st, queue_id, &q) == JF_OK)
		cap = q.capacity;
	jf_queue_release(&q);
	s->queue_ids[s->nq] = queue_id;
	s->queues[s->nq] = (struct jf_plan_queue){ .capacity = cap, .held = 0 };
	return (int)s->nq++;
}

/* A spot group with a unit_runtime: is the risk of a preemption within it
 * too high to start now?  Recorded in s->gates, acted on after the listing. */
/* Tasks of g the planner may start in this pass, at most. */
static int64_t startable(int64_t waiting, int64_t running, int64_t parallelism)
{
	int64_t n = waiting;
	if (parallelism > 0 && parallelism - running < n)
		n = parallelism - running;
	return n > 0 ? n : 0;
}

static bool window_wait(struct snap *s, struct grt *g, int64_t tasks)
{
	struct jf_engine *e = s->e;
	int model = g->req.model;
	if (model < 0 || (size_t)model >= e->cluster->nmodels || !e->fc[model])
		return false;
	/* the GPUs it would take now: whole tasks, as many as fit in what is
	 * free after the groups before it in this pass */
	int64_t per_task = (int64_t)g->req.gpus * g->req.nodes;
	if (per_task <= 0)
		return false;
	if (tasks > s->free_gpus[model] / per_task)
		tasks = s->free_gpus[model] / per_task;
	/* without enough free GPUs it waits for them anyway: the planner's business */
	if (tasks == 0)
		return false;
	int64_t need = tasks * per_task;
	double risk = jf_forecast_risk(e->fc[model], jf_eng_now(e), g->spec->unit_runtime,
				       (int)need, s->free_gpus[model]);
	bool wait = risk > e->cluster->spot_risk_max;
	if (!jf_grow(&s->gates, &s->capgates, s->ngates + 1, sizeof(*s->gates))) {
		s->oom = true;
		return wait;
	}
	s->gates[s->ngates++] = (struct gate){ g->id, wait, risk };
	return wait;
}

static int add_group(void *ctx, int64_t gid)
{
	struct snap *s = ctx;
	struct jf_engine *e = s->e;
	struct jf_group_rec rec;
	if (jf_group_get(e->st, gid, &rec) != JF_OK)
		return 0;
	enum jf_state state = rec.state;
	int64_t queue_id = rec.queue_id, parallelism = rec.parallelism;
	uid_t uid = rec.uid;
	gid_t ggid = rec.gid;
	jf_group_release(&rec);
	struct grt *g = jf_eng_group(e, gid);
	if (!g || !g->req_ok || (g->spec->billing == JF_BILL_SPOT) != s->spot)
		return 0;
	int64_t c[JF_ST__COUNT];
	if (jf_group_count_tasks(e->st, gid, c) != JF_OK)
		return 0;
	/* its after: entries (deps.c): none may start yet, or (each) only the
	 * tasks whose pairs hold, which is then its waiting count */
	if (state != JF_ST_PAUSED && c[JF_ST_WAITING] > 0 &&
	    jf_eng_dep_waits(e, g, &c[JF_ST_WAITING])) {
		note_why(s, gid, queue_id, JF_REASON_DEPENDENCY);
		return 0;
	}
	int64_t tasks = state == JF_ST_PAUSED
				? 0
				: startable(c[JF_ST_WAITING],
					    c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING], parallelism);
	if (s->spot && g->spec->unit_runtime > 0 && tasks > 0 && window_wait(s, g, tasks)) {
		note_why(s, gid, queue_id, JF_REASON_WINDOW);
		return 0;
	}
	/* its queue's budget is spent (budget.c): nothing new starts (and a
	 * group whose parallelism is full says so already) */
	if (state != JF_ST_PAUSED && c[JF_ST_WAITING] > 0 && jf_eng_budget_waits(e, g)) {
		note_why(s, gid, queue_id, JF_REASON_BUDGET);
		return 0;
	}
	/* backing off after a failed pull (image.c): nothing starts yet */
	if (tasks > 0 && jf_eng_pull_waits(e, g, jf_eng_now(e))) {
		note_why(s, gid, queue_id, JF_REASON_IMAGEPULL);
		return 0;
	}
	/* its object sources sync first (storage.c) */
	if (tasks > 0 && jf_eng_stor_waits(e, g)) {
		note_why(s, gid, queue_id, JF_REASON_SYNCING);
		return 0;
	}
	/* what it may take in this pass is not free for the spot groups after it */
	int model = g->req.model;
	if (model >= 0 && (size_t)model < e->cluster->nmodels) {
		int64_t take = tasks * g->req.gpus * g->req.nodes;
		s->free_gpus[model] -= take < s->free_gpus[model] ? take : s->free_gpus[model];
	}
	size_t capg = s->capg, capu = s->capg;
	if (!jf_grow(&s->groups, &capg, s->ng + 1, sizeof(*s->groups)) ||
	    !jf_grow(&s->uids, &capu, s->ng + 1, sizeof(*s->uids)) ||
	    !jf_grow(&s->gids, &s->capg, s->ng + 1, sizeof(*s->gids))) {
		s->oom = true;
		return 1;
	}
	int qi = queue_index(s, queue_id);
	if (c[JF_ST_WAITING] > 0 || c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING] > 0)
		note_why(s, gid, queue_id, JF_REASON_NONE); /* why it waits, or when it ends */
	s->groups[s->ng] = (struct jf_plan_group){
		.id = gid,
		.queue = qi,
		.req = g->req,
		.waiting = c[JF_ST_WAITING],
		.running = c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING],
		.parallelism = parallelism,
		.timeout_ms = g->spec->timeout > 0 ? g->spec->timeout * 1000 : 0,
		.paused = state == JF_ST_PAUSED,
	};
	s->uids[s->ng] = uid;
	s->gids[s->ng] = ggid;
	s->ng++;
	return 0;
}

/* Every task holding resources, with the latest end any of its nodes may have. */
static void add_running(struct snap *s)
{
	struct jf_engine *e = s->e;
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&e->tasks, &i, &k, &v)) {
		struct trun *t = v;
		if (!t->held)
			continue;
		int64_t end = 0;
		for (int64_t n = 0; n < t->nodes; n++) {
			struct run *r = jf_idmap_get(&e->runs, t->attempt_ids[n]);
			int64_t b = !r               ? 0
				    : r->kill_at_ms  ? r->kill_at_ms
				    : r->deadline_ms ? r->deadline_ms
						     : FAR_FUTURE_MS;
			if (b > end)
				end = b;
		}
		if (!end)
			end = jf_eng_now(e);
		struct grt *g = jf_eng_group(e, t->group_id);
		int qi = g ? queue_index(s, g->queue_id) : -1;
		/* adopted nodes whose machine is unknown hold nothing here */
		size_t nslots = 0;
		for (int64_t n = 0; n < t->nodes; n++)
			if (t->slots[n].machine < e->cluster->nmachines)
				nslots++;
		if (qi >= 0)
			s->queues[qi].held += t->nodes;
		if (nslots != (size_t)t->nodes)
			continue;
		size_t cap2 = s->caprun2;
		if (!jf_grow(&s->run, &s->caprun, s->nrun + 1, sizeof(*s->run)) ||
		    !jf_grow(&s->run_gid, &cap2, s->nrun + 1, sizeof(*s->run_gid)) ||
		    !jf_grow(&s->run_start, &s->caprun2, s->nrun + 1, sizeof(*s->run_start))) {
			s->oom = true;
			return;
		}
		s->run_gid[s->nrun] = t->group_id;
		s->run_start[s->nrun] = t->start_ms;
		s->run[s->nrun++] = (struct jf_plan_running){
			.slots = t->slots,
			.nslots = nslots,
			.queue = qi,
			.end_ms = end,
		};
	}
}

struct waiting {
	int64_t *ids, *idx;
	size_t n, cap, next;
	bool oom;
};

/*
 * How many of a group's waiting tasks a pass reads: one per start the plan
 * gives the group, plus one per task of it the engine holds (a task still
 * being killed for a restart is Waiting in the store and is passed over).
 * Never all the waiting ones: a group of a million would cost a second a
 * pass to list them.
 */
static int waiting_needed(struct jf_engine *e, const struct jf_plan *plan, int64_t group_id,
			  int64_t waiting)
{
	int64_t n = 0;
	for (size_t i = 0; i < plan->nstarts; i++)
		if (plan->starts[i].group_id == group_id)
			n++;
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&e->tasks, &i, &k, &v))
		if (((struct trun *)v)->group_id == group_id)
			n++;
	if (n > waiting)
		n = waiting;
	return (int)(n < (1 << 30) ? n : (1 << 30));
}

static int collect(void *ctx, int64_t id, int64_t idx, int64_t attempt)
{
	(void)attempt;
	struct waiting *w = ctx;
	size_t cap = w->cap;
	if (!jf_grow(&w->ids, &cap, w->n + 1, sizeof(*w->ids)) ||
	    !jf_grow(&w->idx, &w->cap, w->n + 1, sizeof(*w->idx))) {
		w->oom = true;
		return 1;
	}
	w->ids[w->n] = id;
	w->idx[w->n] = idx;
	w->n++;
	return 0;
}

const char *jf_eng_skip_message(enum jf_plan_why why)
{
	return why == JF_PLAN_OVER_CAPACITY
		       ? "cannot run: a task needs more nodes than the queue's capacity"
	       : why == JF_PLAN_OVER_CLUSTER
		       ? "cannot run: a task needs more than the whole cluster has free when all "
			 "known work has ended"
		       : "cannot run: the request is out of range";
}

static void report_skip(struct jf_engine *e, struct grt *g, enum jf_plan_why why)
{
	const char *msg = jf_eng_skip_message(why);
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) != JF_OK)
		return;
	bool same = strcmp(rec.message, msg) == 0;
	jf_group_release(&rec);
	if (same)
		return;
	jf_eng_step_begin(e);
	jf_group_set_message(e->st, g->id, msg);
	jf_eng_group_event(e, 0, g->id, g->kind, "Warning", "Unschedulable", "%s", msg);
	jf_eng_step_end(e);
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
}

/* Say so when a spot group starts or stops waiting for a low-risk window. */
static void apply_gates(struct snap *s)
{
	struct jf_engine *e = s->e;
	for (size_t i = 0; i < s->ngates; i++) {
		const struct gate *gt = &s->gates[i];
		struct grt *g = jf_eng_group(e, gt->id);
		struct jf_group_rec rec;
		if (!g || jf_group_get(e->st, gt->id, &rec) != JF_OK)
			continue;
		bool waiting = (rec.flags & JF_GF_WINDOW) != 0;
		unsigned flags = rec.flags;
		jf_group_release(&rec);
		if (gt->wait) {
			int64_t at = jf_eng_now(e) + WINDOW_RECHECK_MS;
			if (!e->window_check_ms || at < e->window_check_ms)
				e->window_check_ms = at;
		}
		if (waiting == gt->wait)
			continue;
		char win[32];
		jf_duration_format(g->spec->unit_runtime, win, sizeof(win));
		jf_eng_step_begin(e);
		jf_group_set_flags(e->st, g->id,
				   gt->wait ? flags | JF_GF_WINDOW : flags & ~JF_GF_WINDOW,
				   gt->wait ? JF_WINDOW_MSG : "");
		if (gt->wait)
			jf_eng_group_event(e, g->queue_id, g->id, g->kind, "Normal",
					   "WaitingForWindow",
					   "risk of a preemption within unit_runtime %s is %.0f%%, "
					   "over the threshold of %.0f%%: waiting for a low-risk "
					   "window",
					   win, gt->risk * 100, e->cluster->spot_risk_max * 100);
		else
			jf_eng_group_event(e, g->queue_id, g->id, g->kind, "Normal",
					   "LowRiskWindow",
					   "risk of a preemption within unit_runtime %s is %.0f%%, "
					   "at most the threshold of %.0f%%: starting",
					   win, gt->risk * 100, e->cluster->spot_risk_max * 100);
		jf_eng_step_end(e);
		jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
	}
}

/* Resources of tasks being preempted count as free: they will be by the
 * kill deadline, which the planner already uses as their end. */
static void add_preempting(struct jf_engine *e, struct jf_sched_machine *m)
{
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&e->tasks, &i, &k, &v)) {
		struct trun *t = v;
		if (!t->held || t->why != JF_WHY_PREEMPT)
			continue;
		for (int64_t n = 0; n < t->nodes; n++)
			if (t->slots[n].machine < e->cluster->nmachines)
				jf_sched_release(m, &t->slots[n]);
	}
}

struct cands {
	struct jf_preempt_cand *c;
	struct trun **t;
	size_t *victims;
	size_t n;
};

/* Running spot tasks that may be preempted: not already ending, whole on
 * known machines. */
static bool collect_cands(struct jf_engine *e, struct cands *cs)
{
	size_t cap = 0, i = 0;
	int64_t k;
	void *v;
	cs->n = 0;
	while (jf_idmap_next(&e->tasks, &i, &k, &v)) {
		struct trun *t = v;
		struct grt *g = jf_eng_group(e, t->group_id);
		if (!t->held || t->why != JF_WHY_NONE || !g || g->spec->billing != JF_BILL_SPOT ||
		    t->live < t->nodes)
			continue;
		bool known = true;
		for (int64_t n = 0; n < t->nodes; n++)
			known = known && t->slots[n].machine < e->cluster->nmachines;
		if (!known)
			continue;
		size_t c1 = cap, c2 = cap;
		if (!jf_grow(&cs->c, &c1, cs->n + 1, sizeof(*cs->c)) ||
		    !jf_grow(&cs->t, &c2, cs->n + 1, sizeof(*cs->t)) ||
		    !jf_grow(&cs->victims, &cap, cs->n + 1, sizeof(*cs->victims)))
			return false;
		cs->c[cs->n] = (struct jf_preempt_cand){
			.id = t->task_id,
			.slots = t->slots,
			.nslots = (size_t)t->nodes,
			.start_ms = t->start_ms,
		};
		cs->t[cs->n++] = t;
	}
	return true;
}

/* Preempt spot tasks for the on-demand groups the plan left blocked. */
static void preempt(struct jf_engine *e, const struct snap *s, const struct jf_plan *plan)
{
	size_t nm = e->cluster->nmachines;
	struct jf_sched_machine *m = NULL;
	struct jf_sched_slot *slots = NULL;
	struct cands cs = { 0 };
	int64_t grace_ms = e->cluster->preempt_grace_s * 1000;
	bool any = false;
	for (size_t r = 0; r < plan->nresv && !any; r++)
		any = s->groups[plan->resv[r].group].req.nodes > 0 &&
		      jf_eng_group(e, plan->resv[r].group_id) &&
		      jf_eng_group(e, plan->resv[r].group_id)->spec->billing != JF_BILL_SPOT;
	if (!any)
		return;
	m = malloc(nm * sizeof(*m));
	if (!m || !collect_cands(e, &cs))
		goto out;
	memcpy(m, e->machines, nm * sizeof(*m));
	add_preempting(e, m);
	for (size_t r = 0; r < plan->nresv; r++) {
		const struct jf_plan_group *pg = &s->groups[plan->resv[r].group];
		struct grt *g = jf_eng_group(e, plan->resv[r].group_id);
		if (!g || g->spec->billing == JF_BILL_SPOT || pg->paused)
			continue;
		/* what this pass started for it and its queue */
		int64_t started = 0, qstarted = 0;
		for (size_t i = 0; i < plan->nstarts; i++) {
			const struct jf_plan_group *sg = &s->groups[plan->starts[i].group];
			if (plan->starts[i].group_id == pg->id)
				started++;
			if (pg->queue >= 0 && sg->queue == pg->queue)
				qstarted += sg->req.nodes;
		}
		int64_t want = pg->waiting - started;
		if (pg->parallelism > 0 && pg->parallelism - pg->running - started < want)
			want = pg->parallelism - pg->running - started;
		if (want > 64)
			want = 64; /* the rest in later passes */
		free(slots);
		slots = calloc((size_t)pg->req.nodes, sizeof(*slots));
		if (!slots)
			goto out;
		for (int64_t w = 0; w < want; w++) {
			if (pg->queue >= 0 && s->queues[pg->queue].capacity > 0 &&
			    s->queues[pg->queue].held + qstarted + pg->req.nodes >
				    s->queues[pg->queue].capacity)
				break; /* its queue's capacity blocks it, not spot work */
			size_t nv = 0;
			enum jf_err rc =
				jf_preempt_choose(m, nm, &pg->req, cs.c, cs.n, cs.victims, &nv);
			if (rc != JF_OK)
				break;
			int64_t nodes = 0;
			for (size_t j = 0; j < nv; j++) {
				struct trun *t = cs.t[cs.victims[j]];
				for (int64_t n = 0; n < t->nodes; n++)
					jf_sched_release(m, &t->slots[n]);
				nodes += t->nodes;
				jf_eng_preempt_task(e, t, grace_ms);
			}
			if (nv) {
				jf_eng_group_event(
					e, g->queue_id, g->id, g->kind, "Normal", "Preempting",
					"no room for a task of %lld node(s): preempting %zu "
					"spot task(s), %lld node(s)",
					(long long)pg->req.nodes, nv, (long long)nodes);
				/* drop the victims from the candidates */
				size_t o = 0;
				for (size_t j = 0; j < cs.n; j++) {
					bool victim = false;
					for (size_t x = 0; x < nv; x++)
						victim = victim || cs.victims[x] == j;
					if (victim)
						continue;
					cs.c[o] = cs.c[j];
					cs.t[o++] = cs.t[j];
				}
				cs.n = o;
			}
			/* what it will take is no longer free for the next one */
			if (!jf_sched_place(m, nm, &pg->req, slots))
				break;
			qstarted += pg->req.nodes;
		}
	}
out:
	free(m);
	free(slots);
	free(cs.c);
	free(cs.t);
	free(cs.victims);
}

static void pass(struct jf_engine *e)
{
	struct snap s = { .e = e };
	size_t nmodels = e->cluster->nmodels;
	s.free_gpus = calloc(nmodels ? nmodels : 1, sizeof(*s.free_gpus));
	if (!s.free_gpus)
		return;
	for (size_t i = 0; i < e->cluster->nmachines; i++)
		if ((size_t)e->machines[i].model < nmodels)
			s.free_gpus[e->machines[i].model] += jf_popcount64(e->machines[i].gpu_free);
	/* the forecasts learn that on-demand use stayed as it was until now
	 * (they hear of changes only; a quiet hour must close too) */
	int64_t now = jf_eng_now(e);
	jf_engine_view_lock(e);
	for (size_t m = 0; m < nmodels; m++)
		if (e->fc[m])
			jf_forecast_add(e->fc[m], now, (int)e->od_use[m]);
	jf_engine_view_unlock(e);
	/* on-demand work first, then spot (spot yields) */
	jf_group_list_active(e->st, add_group, &s);
	s.spot = true;
	jf_group_list_active(e->st, add_group, &s);
	add_running(&s);
	apply_gates(&s);
	struct jf_plan plan;
	jf_plan_init(&plan);
	struct jf_plan_in in = {
		.now_ms = jf_eng_now(e),
		.running = s.run,
		.nrunning = s.nrun,
		.queues = s.queues,
		.nqueues = s.nq,
		.groups = s.groups,
		.ngroups = s.ng,
	};
	struct jf_error err;
	jf_error_clear(&err);
	/* what was free before the pass, for the ETA simulation (why.c) */
	struct jf_sched_machine *before = NULL;
	size_t nm = e->cluster->nmachines;
	if (!s.oom && jf_eng_why_snapshot_due(e) &&
	    (before = malloc((nm ? nm : 1) * sizeof(*before))))
		memcpy(before, e->machines, nm * sizeof(*before));
	if (s.oom || jf_plan_pass(&plan, e->machines, e->cluster->nmachines, &in, &err) != JF_OK)
		goto out;
	/*
	 * The starts, group by group, each taking the lowest waiting indexes:
	 * all their attempts in one transaction, then the supervisors.  Run by
	 * the daemon's loop (its deferred job, engine.h), a pass starts at most
	 * JF_PASS_STARTS tasks: the rest give their slots back and the next
	 * pass, after the requests that wait, plans them again.
	 */
	struct waiting w = { 0 };
	int64_t wgroup = 0;
	struct todo {
		struct grt *g;
		struct trun *t;
		size_t group;
	} *todo = calloc(plan.nstarts ? plan.nstarts : 1, sizeof(*todo));
	size_t ntodo = 0, limit = e->in_run ? JF_PASS_STARTS : plan.nstarts;
	bool cut = false;
	for (size_t i = 0; i < plan.nstarts; i++) {
		const struct jf_plan_start *st = &plan.starts[i];
		const struct jf_plan_group *pg = &s.groups[st->group];
		const struct jf_sched_slot *slots = &plan.slots[st->slot];
		struct grt *g = jf_eng_group(e, st->group_id);
		if (!todo || ntodo >= limit) {
			for (int64_t n = 0; n < pg->req.nodes; n++)
				jf_sched_release(e->machines, &slots[n]);
			cut = true;
			continue;
		}
		if (wgroup != st->group_id) {
			w.n = w.next = 0;
			wgroup = st->group_id;
			/* lowest index first; with each entries (deps.c) the
			 * tasks whose pairs hold, which pg->waiting counted */
			jf_eng_dep_list(e, g, false,
					waiting_needed(e, &plan, st->group_id, pg->waiting),
					collect, &w);
		}
		/* a task still being killed (restart) waits for its last attempt */
		while (w.next < w.n && jf_idmap_get(&e->tasks, w.ids[w.next]))
			w.next++;
		struct trun *t = NULL;
		if (g && w.next < w.n)
			t = jf_trun_new(w.ids[w.next], st->group_id, w.idx[w.next], pg->req.nodes);
		if (!t) {
			for (int64_t n = 0; n < pg->req.nodes; n++)
				jf_sched_release(e->machines, &slots[n]);
			continue;
		}
		w.next++;
		memcpy(t->slots, slots, (size_t)pg->req.nodes * sizeof(*slots));
		todo[ntodo++] = (struct todo){ g, t, st->group };
	}
	free(w.ids);
	free(w.idx);
	/* the groups whose counts this pass changed, for settling below */
	bool *moved = calloc(s.ng ? s.ng : 1, sizeof(*moved));
	size_t step = e->in_run ? JF_PASS_STEP : ntodo;
	for (size_t from = 0; from < ntodo; from += step) {
		size_t to = from + step < ntodo ? from + step : ntodo;
		if (from > 0 && jf_eng_should_yield(e)) {
			/* a request waits: the rest in the next pass */
			for (size_t i = from; i < ntodo; i++) {
				struct trun *t = todo[i].t;
				for (int64_t n = 0; n < t->nodes; n++)
					jf_sched_release(e->machines, &t->slots[n]);
				jf_trun_free(t);
			}
			cut = true;
			break;
		}
		/* the attempts first; their supervisors once that is committed */
		jf_eng_step_begin(e);
		for (size_t i = from; i < to; i++) {
			if (!jf_eng_start_prepare(e, todo[i].g, todo[i].t, s.uids[todo[i].group],
						  s.gids[todo[i].group]))
				continue;
			if (moved)
				moved[todo[i].group] = true;
			jf_eng_start_launch(e, todo[i].t, s.uids[todo[i].group],
					    s.gids[todo[i].group]);
		}
		jf_eng_step_end(e);
	}
	free(todo);
	if (cut)
		e->sched_pending = true; /* the rest in the next pass */
	else
		preempt(e, &s, &plan);
	for (size_t i = 0; i < plan.nskips; i++) {
		struct grt *g = jf_eng_group(e, plan.skips[i].group_id);
		if (g)
			report_skip(e, g, plan.skips[i].why);
	}
	/* every group, or (the daemon's passes, many small ones) those whose
	 * tasks it started: the rest were settled by whatever changed them */
	for (size_t i = 0; i < s.ng; i++) {
		if (e->in_run && moved && !moved[i])
			continue;
		struct grt *g = jf_eng_group(e, s.groups[i].id);
		if (g)
			jf_eng_settle_group(e, g);
	}
	free(moved);
	/* why what waits waits, and when it starts (reference 9.1) */
	struct jf_why_pass wp = { &in, &plan, s.wg, s.nwg, s.run_gid, s.run_start, before };
	jf_eng_why_pass(e, &wp);
out:
	free(before);
	free(s.wg);
	free(s.run_gid);
	free(s.run_start);
	jf_plan_release(&plan);
	free(s.run);
	free(s.queues);
	free(s.queue_ids);
	free(s.groups);
	free(s.uids);
	free(s.gids);
	free(s.free_gpus);
	free(s.gates);
}

void jf_eng_schedule(struct jf_engine *e)
{
	if (e->yielding && !e->scheduling) {
		e->sched_pending = true;
		return;
	}
	if (e->delegated) {
		jf_eng_submit_pass(e);
		return;
	}
	if (e->scheduling) {
		e->again = true;
		return;
	}
	e->scheduling = true;
	int rounds = 0;
	do {
		e->again = false;
		pass(e);
	} while (e->again && ++rounds < 16);
	e->scheduling = false;
}
