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
 */
#include "engine/engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plan.h"

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
	bool oom;
};

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap * 2 : 32;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * size);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}

static int queue_index(struct snap *s, int64_t queue_id)
{
	if (!queue_id)
		return -1;
	for (size_t i = 0; i < s->nq; i++)
		if (s->queue_ids[i] == queue_id)
			return (int)i;
	size_t capq = s->capq;
	if (!grow((void **)&s->queues, &capq, s->nq + 1, sizeof(*s->queues)) ||
	    !grow((void **)&s->queue_ids, &s->capq, s->nq + 1, sizeof(*s->queue_ids))) {
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

static int add_group(void *ctx, int64_t gid)
{
	struct snap *s = ctx;
	struct jf_engine *e = s->e;
	struct jf_group_rec rec;
	if (jf_group_get(e->st, gid, &rec) != JF_OK)
		return 0;
	int state = rec.state;
	int64_t queue_id = rec.queue_id, parallelism = rec.parallelism;
	uid_t uid = rec.uid;
	gid_t ggid = rec.gid;
	jf_group_release(&rec);
	struct grt *g = jf_eng_group(e, gid);
	if (!g || !g->req_ok)
		return 0;
	int64_t c[JF_ST__COUNT];
	if (jf_group_count_tasks(e->st, gid, c) != JF_OK)
		return 0;
	size_t capg = s->capg, capu = s->capg;
	if (!grow((void **)&s->groups, &capg, s->ng + 1, sizeof(*s->groups)) ||
	    !grow((void **)&s->uids, &capu, s->ng + 1, sizeof(*s->uids)) ||
	    !grow((void **)&s->gids, &s->capg, s->ng + 1, sizeof(*s->gids))) {
		s->oom = true;
		return 1;
	}
	int qi = queue_index(s, queue_id);
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
			int64_t b = !r ? 0 : r->kill_at_ms ? r->kill_at_ms
					   : r->deadline_ms ? r->deadline_ms : FAR_FUTURE_MS;
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
		if (!grow((void **)&s->run, &s->caprun, s->nrun + 1, sizeof(*s->run))) {
			s->oom = true;
			return;
		}
		s->run[s->nrun++] = (struct jf_plan_running){
			.slots = t->slots, .nslots = nslots, .queue = qi, .end_ms = end,
		};
	}
}

struct waiting {
	int64_t *ids, *idx;
	size_t n, cap, next;
	bool oom;
};

static int collect(void *ctx, int64_t id, int64_t idx)
{
	struct waiting *w = ctx;
	size_t cap = w->cap;
	if (!grow((void **)&w->ids, &cap, w->n + 1, sizeof(*w->ids)) ||
	    !grow((void **)&w->idx, &w->cap, w->n + 1, sizeof(*w->idx))) {
		w->oom = true;
		return 1;
	}
	w->ids[w->n] = id;
	w->idx[w->n] = idx;
	w->n++;
	return 0;
}

static void report_skip(struct jf_engine *e, struct grt *g, enum jf_plan_why why)
{
	const char *msg = why == JF_PLAN_OVER_CAPACITY
		? "cannot run: a task needs more nodes than the queue's capacity"
		: why == JF_PLAN_OVER_CLUSTER
		? "cannot run: a task needs more than the whole cluster has free when all "
		  "known work has ended"
		: "cannot run: the request is out of range";
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) != JF_OK)
		return;
	bool same = strcmp(rec.message, msg) == 0;
	int state = rec.state;
	jf_group_release(&rec);
	if (same)
		return;
	jf_store_begin(e->st);
	jf_group_set_state(e->st, g->id, state, msg, jf_eng_now(e));
	jf_eng_group_event(e, 0, g->id, g->kind, "Warning", "Unschedulable", "%s", msg);
	jf_store_commit(e->st);
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
}

static void pass(struct jf_engine *e)
{
	struct snap s = { .e = e };
	jf_group_list_active(e->st, add_group, &s);
	add_running(&s);
	struct jf_plan plan;
	jf_plan_init(&plan);
	struct jf_plan_in in = {
		.now_ms = jf_eng_now(e),
		.running = s.run, .nrunning = s.nrun,
		.queues = s.queues, .nqueues = s.nq,
		.groups = s.groups, .ngroups = s.ng,
	};
	struct jf_error err;
	jf_error_clear(&err);
	if (s.oom || jf_plan_pass(&plan, e->machines, e->cluster->nmachines, &in, &err) != JF_OK)
		goto out;
	/* the starts, group by group, each taking the lowest waiting indexes */
	struct waiting w = { 0 };
	int64_t wgroup = 0;
	for (size_t i = 0; i < plan.nstarts; i++) {
		const struct jf_plan_start *st = &plan.starts[i];
		const struct jf_plan_group *pg = &s.groups[st->group];
		const struct jf_sched_slot *slots = &plan.slots[st->slot];
		struct grt *g = jf_eng_group(e, st->group_id);
		if (wgroup != st->group_id) {
			w.n = w.next = 0;
			wgroup = st->group_id;
			jf_task_list_state(e->st, st->group_id, JF_ST_WAITING,
					   (int)(pg->waiting < (1 << 30) ? pg->waiting : (1 << 30)),
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
		jf_eng_start_task(e, g, t, s.uids[st->group], s.gids[st->group]);
	}
	free(w.ids);
	free(w.idx);
	for (size_t i = 0; i < plan.nskips; i++) {
		struct grt *g = jf_eng_group(e, plan.skips[i].group_id);
		if (g)
			report_skip(e, g, plan.skips[i].why);
	}
	for (size_t i = 0; i < s.ng; i++) {
		struct grt *g = jf_eng_group(e, s.groups[i].id);
		if (g)
			jf_eng_settle_group(e, g);
	}
out:
	jf_plan_release(&plan);
	free(s.run);
	free(s.queues);
	free(s.queue_ids);
	free(s.groups);
	free(s.uids);
	free(s.gids);
}

void jf_eng_schedule(struct jf_engine *e)
{
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
