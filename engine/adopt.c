/*
 * adopt.c - taking over, after a restart, the attempts whose processes
 * outlived the last daemon.
 *
 * For every attempt the store says is running: rebuild its task's runtime
 * entry, take its slot on the machine again, and hand its handle to the
 * backend, which reports its end (at once if it ended while no daemon
 * ran).  An attempt recorded but never started is finished as lost.  Tasks
 * placed with no recorded attempt go back to Waiting.
 */
#include "engine/engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/grow.h"

/* ---- adoption after a restart ---- */

static size_t machine_index(struct jf_engine *e, const char *name)
{
	for (size_t i = 0; i < e->cluster->nmachines; i++)
		if (strcmp(e->cluster->machines[i].name, name) == 0)
			return i;
	return e->cluster->nmachines;
}

/* "0-11,20-23" back into a set */
static bool cpuset_parse(const char *s, uint64_t *set)
{
	memset(set, 0, JF_CPUSET_WORDS * sizeof(*set));
	bool any = false;
	while (s && *s) {
		char *end;
		long lo = strtol(s, &end, 10), hi = lo;
		if (end == s)
			break;
		if (*end == '-') {
			s = end + 1;
			hi = strtol(s, &end, 10);
		}
		for (long c = lo; c <= hi && c >= 0 && c < JF_CPU_MAX_CORES; c++) {
			set[c / 64] |= UINT64_C(1) << (c % 64);
			any = true;
		}
		s = *end == ',' ? end + 1 : end;
		if (end == s && *s)
			break;
	}
	return any;
}

/*
 * A running attempt of a group whose spec cannot be parsed any more (it
 * was ended Failed at start-up: engine.c, fail_unparsable): stop it and
 * record its end, as a run with no task and no group runtime, which
 * jf_eng_finish accepts.  Billed from its ledger segment, as any run;
 * one whose start the last daemon never recorded is not billed (its rate
 * comes from the spec).
 */
static void adopt_orphan(struct jf_engine *e, const struct jf_attempt_rec *a, int64_t task_id,
			 int64_t group_id, int64_t node_idx)
{
	struct run *r = jf_eng_run_add(e, a->id, a->node_id, task_id, group_id, node_idx,
				       a->attempt, a->handle);
	if (!r)
		return;
	struct jf_error err;
	jf_error_clear(&err);
	char handle[JF_HANDLE_MAX] = "";
	int64_t start_ms = 0;
	struct jf_run_result res;
	memset(&res, 0, sizeof(res));
	res.cookie = (uint64_t)a->id;
	res.end_ms = jf_eng_now(e);
	if (!r->handle[0]) {
		if (jf_runner_recover(e->run, a->run_dir, handle, sizeof(handle), &start_ms,
				      &err) != JF_OK) {
			res.start_failed = true;
			res.exit_code = 127;
			snprintf(res.message, sizeof(res.message),
				 "not started: its group's spec is refused");
			jf_eng_finish(e, &res);
			return;
		}
		snprintf(r->handle, sizeof(r->handle), "%s", handle);
		start_ms = jf_eng_from_wall(e, start_ms);
		jf_attempt_started(e->st, a->id, handle, 0, start_ms);
	} else {
		jf_ledger_reopen(e->st, a->id, 0);
	}
	r->started = true;
	if (jf_runner_adopt(e->run, r->handle, a->run_dir, (uint64_t)a->id, &err) != JF_OK) {
		res.lost = true;
		res.exit_code = -1;
		snprintf(res.message, sizeof(res.message), "could not adopt the run: %.200s",
			 err.msg);
		jf_eng_finish(e, &res);
		return;
	}
	/* its group has ended: the run goes at once (the shim kills its processes) */
	jf_eng_after(e, jf_eng_act_kill, r->attempt_id, 0, 0);
	r->kill_at_ms = jf_eng_now(e);
	r->killed = true;
}

/* What is left of the grace of t's preemption: from the earliest deadline
 * its nodes' attempts recorded, never below 0; a full grace without one. */
static int64_t preempt_left(struct jf_engine *e, const struct trun *t)
{
	int64_t grace = e->cluster->preempt_grace_s * 1000, at = 0;
	for (int64_t i = 0; i < t->nodes; i++) {
		struct run *r = jf_idmap_get(&e->runs, t->attempt_ids[i]);
		struct jf_attempt_rec a;
		if (!r || jf_attempt_get(e->st, r->attempt_id, &a) != JF_OK)
			continue;
		if (a.kill_at_ms > 0 && (at == 0 || a.kill_at_ms < at))
			at = a.kill_at_ms;
		jf_attempt_release(&a);
	}
	if (at == 0)
		return grace;
	int64_t left = at - jf_eng_now(e);
	return left < 0 ? 0 : left < grace ? left : grace;
}

static int adopt_one(struct jf_engine *e, const struct jf_attempt_rec *a)
{
	struct jf_node_rec n;
	struct jf_task_rec tr;
	if (jf_node_get(e->st, a->node_id, &n) != JF_OK)
		return 0;
	bool preempting = a->preempting;
	if (jf_task_get(e->st, n.task_id, &tr) != JF_OK) {
		jf_node_release(&n);
		return 0;
	}
	struct grt *g = jf_eng_group(e, tr.group_id);
	int64_t node_idx = n.idx, task_idx = tr.idx, task_id = tr.id;
	int64_t task_attempt = tr.attempt, group_id = tr.group_id;
	jf_node_release(&n);
	jf_task_release(&tr);
	if (!g) {
		adopt_orphan(e, a, task_id, group_id, node_idx);
		return 0;
	}

	struct trun *t = jf_idmap_get(&e->tasks, task_id);
	if (!t) {
		t = jf_trun_new(task_id, g->id, task_idx, g->spec->nodes);
		if (!t || !jf_idmap_put(&e->tasks, task_id, t)) {
			jf_trun_free(t);
			return 0;
		}
		t->attempt = task_attempt;
		t->held = true;
		for (int64_t i = 0; i < t->nodes; i++)
			t->slots[i].machine = e->cluster->nmachines; /* none yet */
	}
	struct run *r = jf_eng_run_add(e, a->id, a->node_id, task_id, g->id, node_idx, a->attempt,
				       a->handle);
	if (!r)
		return 0;
	if (g->spec->timeout > 0 && a->start_ms)
		r->deadline_ms = a->start_ms + g->spec->timeout * 1000;
	if (node_idx < t->nodes) {
		struct jf_sched_slot *s = &t->slots[node_idx];
		s->machine = machine_index(e, a->machine);
		s->gpu_mask = jf_gpu_ids_parse(a->gpu_ids);
		s->cpu_milli = g->req.cpu_milli;
		s->mem_bytes = g->req.mem_bytes;
		if (s->machine < e->cluster->nmachines &&
		    jf_sched_take(e->machines, e->cluster->nmachines, s))
			e->use[s->machine].nodes++;
		else
			s->machine = e->cluster->nmachines;
		t->attempt_ids[node_idx] = a->id;
		uint64_t set[JF_CPUSET_WORDS];
		if (s->machine < e->cluster->nmachines && cpuset_parse(a->cpuset, set))
			jf_eng_take_cores(e, t, node_idx, set);
	}
	t->live++;
	if (a->handle[0] && g->spec->billing == JF_BILL_ONDEMAND && g->req.gpus > 0)
		jf_eng_demand(e, g->req.model, g->req.gpus);
	struct jf_error err;
	jf_error_clear(&err);
	char handle[JF_HANDLE_MAX] = "";
	int64_t start_ms = 0;
	if (!a->handle[0] && jf_runner_recover(e->run, a->run_dir, handle, sizeof(handle),
					       &start_ms, &err) == JF_OK) {
		/* the daemon died inside start(), after the run got going: record
		 * the start it never did, and adopt the run (not a second one) */
		start_ms = jf_eng_from_wall(e, start_ms);
		snprintf(r->handle, sizeof(r->handle), "%s", handle);
		r->started = true;
		t->nstarted++;
		jf_eng_step_begin(e);
		jf_attempt_started(e->st, a->id, handle, 0, start_ms);
		jf_eng_move(e, JF_OBJ_NODE(g, task_id, a->node_id), JF_EV_START, "");
		jf_node_set_run(e->st, a->node_id, a->machine, a->gpu_ids, 0, -1, a->attempt,
				a->id);
		jf_eng_bill_start(e, g, task_id, task_idx, a->node_id, node_idx, a->id, a->attempt,
				  start_ms);
		if (g->spec->billing == JF_BILL_ONDEMAND && g->req.gpus > 0)
			jf_eng_demand(e, g->req.model, g->req.gpus);
		jf_eng_event(e, g, task_id, task_idx, a->node_id, node_idx, "Normal", "Started",
			     "started %s (%s; its start was recorded after a daemon restart)",
			     g->spec->containers[0].name, handle);
		jf_eng_step_end(e);
		if (!t->start_ms || start_ms > t->start_ms)
			t->start_ms = start_ms;
		if (jf_runner_adopt(e->run, handle, a->run_dir, (uint64_t)a->id, &err) == JF_OK)
			return preempting ? 1 : 0;
		struct jf_run_result res;
		memset(&res, 0, sizeof(res));
		res.cookie = (uint64_t)a->id;
		res.lost = true;
		res.exit_code = -1;
		res.end_ms = jf_eng_now(e);
		snprintf(res.message, sizeof(res.message), "could not adopt the run: %.200s",
			 err.msg);
		jf_eng_finish(e, &res);
		return 0;
	}
	if (!a->handle[0]) {
		/* the daemon died between recording the attempt and starting it,
		 * and the run never got going (recover made sure it never will):
		 * start it now, the same attempt, as the last daemon meant to -
		 * once the other attempts are adopted (a gang's other nodes may
		 * be running) */
		return 2;
	}
	/* a clean stop closed its segment; the process ran on meanwhile: bill
	 * on from where that segment ended, so no second is lost or billed twice */
	r->started = true;
	t->nstarted++;
	jf_ledger_reopen(e->st, a->id, 0);
	if (!t->start_ms || a->start_ms > t->start_ms)
		t->start_ms = a->start_ms;
	if (jf_runner_adopt(e->run, a->handle, a->run_dir, (uint64_t)a->id, &err) != JF_OK) {
		struct jf_run_result res;
		memset(&res, 0, sizeof(res));
		res.cookie = (uint64_t)a->id;
		res.lost = true;
		res.exit_code = -1;
		res.end_ms = jf_eng_now(e);
		snprintf(res.message, sizeof(res.message), "could not adopt the run: %.200s",
			 err.msg);
		jf_eng_finish(e, &res);
		return 0;
	}
	jf_eng_step_begin(e);
	jf_eng_event(e, g, task_id, task_idx, a->node_id, node_idx, "Normal", "Adopted",
		     "%s taken over after a daemon restart (%s)", g->spec->containers[0].name,
		     a->handle);
	jf_eng_step_end(e);
	return preempting ? 1 : 0;
}

struct idlist {
	int64_t *v;
	size_t n, cap;
	bool oom;
};

static void idlist_add(struct idlist *l, int64_t id)
{
	if (!jf_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v))) {
		l->oom = true;
		return;
	}
	l->v[l->n++] = id;
}

static int collect_attempt(void *ctx, const struct jf_attempt_rec *a)
{
	idlist_add(ctx, a->id);
	return 0;
}

static int collect_task(void *ctx, int64_t id, int64_t idx)
{
	(void)idx;
	idlist_add(ctx, id);
	return 0;
}

static int collect_group(void *ctx, int64_t id)
{
	idlist_add(ctx, id);
	return 0;
}

/* Attempts recorded but never started: start them now. */
static void launch_unstarted(struct jf_engine *e, const struct idlist *l)
{
	jf_eng_step_begin(e);
	for (size_t i = 0; i < l->n; i++) {
		struct run *r = jf_idmap_get(&e->runs, l->v[i]);
		struct trun *t = r ? jf_idmap_get(&e->tasks, r->task_id) : NULL;
		struct grt *g = t ? jf_eng_group(e, t->group_id) : NULL;
		struct jf_group_rec rec;
		if (!g || jf_group_get(e->st, g->id, &rec) != JF_OK)
			continue;
		uid_t uid = rec.uid;
		gid_t gid = rec.gid;
		jf_group_release(&rec);
		bool placed = r->node_idx < t->nodes &&
			      t->slots[r->node_idx].machine < e->cluster->nmachines;
		if (!placed) {
			/* its machine is gone from the cluster: it cannot start there */
			struct jf_run_result res;
			memset(&res, 0, sizeof(res));
			res.cookie = (uint64_t)r->attempt_id;
			res.start_failed = true;
			res.exit_code = 127;
			res.end_ms = jf_eng_now(e);
			snprintf(res.message, sizeof(res.message),
				 "not started: its machine is not in the cluster any more");
			jf_eng_finish(e, &res);
			continue;
		}
		jf_eng_launch_later(e, r->attempt_id, uid, gid);
	}
	jf_eng_step_end(e);
}

void jf_eng_adopt_all(struct jf_engine *e)
{
	/* collect first: adopting may finish attempts, which writes the table */
	struct idlist l = { NULL, 0, 0, false };
	struct idlist pre = { NULL, 0, 0, false };
	struct idlist launch = { NULL, 0, 0, false };
	jf_attempt_list_open(e->st, collect_attempt, &l);
	for (size_t i = 0; i < l.n; i++) {
		struct jf_attempt_rec a;
		if (jf_attempt_get(e->st, l.v[i], &a) != JF_OK)
			continue;
		struct jf_node_rec n;
		int64_t task_id = 0;
		if (jf_node_get(e->st, a.node_id, &n) == JF_OK) {
			task_id = n.task_id;
			jf_node_release(&n);
		}
		switch (adopt_one(e, &a)) {
		case 1:
			idlist_add(&pre, task_id);
			break;
		case 2:
			idlist_add(&launch, a.id);
			break;
		}
		jf_attempt_release(&a);
	}
	launch_unstarted(e, &launch);
	free(launch.v);
	/* a preemption the last daemon began: finish it by the deadline it
	 * recorded (a full grace when there is none: a database from before
	 * schema 7, or a crash before the deadline was committed) */
	for (size_t i = 0; i < pre.n; i++) {
		struct trun *t = jf_idmap_get(&e->tasks, pre.v[i]);
		if (t && t->why == JF_WHY_NONE)
			jf_eng_preempt_task(e, t, preempt_left(e, t));
	}
	free(pre.v);
	free(l.v);
	jf_eng_adopt_orphans(e);
}

void jf_eng_adopt_orphans(struct jf_engine *e)
{
	struct idlist l = { NULL, 0, 0, false };
	/* tasks still running in the store with nothing running: their last
	 * attempts ended before the crash (judge them now, not run them again),
	 * or they never got an attempt (wait again) */
	struct idlist groups = { NULL, 0, 0, false };
	jf_group_list_active(e->st, collect_group, &groups);
	for (size_t gi = 0; gi < groups.n; gi++) {
		struct grt *g = jf_eng_group(e, groups.v[gi]);
		l.n = 0;
		jf_task_list_state(e->st, groups.v[gi], JF_ST_INITIALIZING, 1 << 30, collect_task,
				   &l);
		jf_task_list_state(e->st, groups.v[gi], JF_ST_RUNNING, 1 << 30, collect_task, &l);
		for (size_t i = 0; i < l.n; i++) {
			if (jf_idmap_get(&e->tasks, l.v[i]))
				continue;
			struct jf_task_rec tr;
			if (g && jf_task_get(e->st, l.v[i], &tr) == JF_OK) {
				int64_t ti = tr.idx;
				jf_task_release(&tr);
				if (jf_eng_resolve_ended(e, g, l.v[i], ti))
					continue;
			}
			struct jf_obj o = { g ? g->queue_id : 0, groups.v[gi], l.v[i], 0 };
			jf_eng_move(e, &o, JF_EV_RETRY, "");
		}
	}

	free(groups.v);
	free(l.v);
}
