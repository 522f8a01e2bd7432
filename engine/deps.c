/*
 * deps.c - dependencies between groups (reference 10: `after:`).
 *
 * DESIGN
 *
 * When a spec is written, every entry is resolved to the group (or batch)
 * it names, checked (it exists and may be seen, it is not the group
 * itself, no group twice, `each` only on an accepted target of the same
 * number of tasks, no cycle through the entries already stored) and, once
 * accepted, stored as a row of the store's `deps` table (store.h:
 * jf_dep_*), whose state says what the entry says: waits, holds, or can
 * never hold.  A row that holds or can never hold stays so (Slurm's
 * dependencies work the same: a target run again later changes nothing),
 * but for a ctl restart of the dependent, which judges its rows that could
 * never hold again by their targets as they are then
 * (jf_eng_dep_restarted).  A group's timers count from when its rows came
 * to hold (jf_eng_dep_since; ending.c).
 *
 * What moves a row: its target ending or being removed.  move.c tells
 * jf_eng_dep_moved() of every state it writes; a group (or, while some
 * `each` row waits, a task) that reaches a final state queues an action
 * (step.c), run once the step that ended it has committed, that looks up
 * the rows waiting on it (jf_dep_waiting_on) and decides them.  rmdir of a
 * target decides its rows in its own step (jf_eng_dep_removing).  A
 * dependent whose row can never hold ends Stopped (event
 * DependencyNeverSatisfied); one whose rows all hold is told so
 * (DependencySatisfied) and scheduled.  What ends that way may itself be
 * a target: its own action follows, so a chain ends link by link.  At
 * start, jf_eng_dep_sweep() decides the rows whose target ended or went
 * while no daemon was there to act (a crash between the two steps).
 *
 * `each: true` pairs task i with task i of the target (Slurm's
 * aftercorr).  Its row waits as long as the target has not ended; task i
 * may start once task i of the target is in a state of the row's ok_mask,
 * and is stopped (DependencyNeverSatisfied on the task) once that task
 * ended otherwise.  When the target ends, every task whose pair did not
 * satisfy the row is stopped and the row holds from then on; a group with
 * stopped tasks and none failed ends Stopped as any other.
 *
 * GATING (schedule.c's add_group, delegate.c's pass_group): a group with
 * a row (not each) that waits takes no part in the pass and is flagged
 * JF_GF_DEPENDENCY, its message naming what it waits for (its status
 * shows reason: Dependency; its place in submission order is kept, as it
 * stays in the store's order).  A group whose only waiting rows are each
 * rows starts only its ready tasks: the pass counts them (at most
 * DEP_READY_MAX) as its waiting tasks and takes them, lowest index first,
 * through jf_eng_dep_list() (store.h: jf_dep_ready_tasks).  A count that
 * found none is not taken again until something could change it: an
 * epoch bumped by every decision here and by task rows made, or the
 * group's waiting count changing.
 */
#include "engine/engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/deps.h"
#include "core/grow.h"

#define DEP_READY_MAX  1024 /* ready tasks a pass counts, at most */
#define DEP_STOP_CHUNK 256  /* tasks stopped per query */
#define DEP_PATH_MAX   160

static bool admin(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

static const char *after_key(const struct grt *g)
{
	return g && g->spec && g->spec->after_key ? g->spec->after_key : "after";
}

/* A group's path in the tree: "queues/q/groups/g", "tasks/x". */
static void group_path(struct jf_engine *e, const struct jf_group_rec *r, char *buf, size_t n)
{
	if (r->kind == JF_KIND_BATCH) {
		snprintf(buf, n, "tasks/%s", r->dirname);
		return;
	}
	struct jf_queue_rec q;
	if (jf_queue_get(e->st, r->queue_id, &q) == JF_OK) {
		snprintf(buf, n, "queues/%s/groups/%s", q.name, r->dirname);
		jf_queue_release(&q);
	} else {
		snprintf(buf, n, "queues/?/groups/%s", r->dirname);
	}
}

static void id_path(struct jf_engine *e, int64_t id, char *buf, size_t n)
{
	struct jf_group_rec r;
	if (jf_group_get(e->st, id, &r) == JF_OK) {
		group_path(e, &r, buf, n);
		jf_group_release(&r);
	} else {
		snprintf(buf, n, "group %lld", (long long)id);
	}
}

/* ---- the spec is written: resolve and check ---- */

/* Is queue_id private to another user than uid (so its groups are not
 * uid's to name)? */
static bool hidden_from(struct jf_engine *e, int64_t queue_id, uid_t uid)
{
	struct jf_queue_rec q;
	if (!queue_id || admin(uid) || jf_queue_get(e->st, queue_id, &q) != JF_OK)
		return false;
	bool hidden = false;
	if (q.uid != uid && q.spec && q.spec[0]) {
		struct jf_queue_spec qs;
		memset(&qs, 0, sizeof(qs));
		if (jf_queue_spec_parse(q.spec, strlen(q.spec), &qs, NULL) == JF_OK)
			hidden = qs.private_;
		jf_queue_release(&q);
		jf_queue_spec_release(&qs);
		return hidden;
	}
	jf_queue_release(&q);
	return false;
}

/* Find the group entry d names, for group g; ENOENT says why in err. */
static enum jf_err resolve(struct jf_engine *e, const struct jf_group_rec *g,
			   const struct jf_dep *d, const char *key, struct jf_group_rec *t,
			   struct jf_error *err)
{
	int64_t qid = 0;
	enum jf_group_kind kind = JF_KIND_GROUP;
	char qname[JF_NAME_MAX] = "";
	switch (d->ref) {
	case JF_DEP_REF_NAME:
		kind = g->kind;
		qid = g->queue_id;
		break;
	case JF_DEP_REF_TASKS:
		kind = JF_KIND_BATCH;
		break;
	case JF_DEP_REF_QUEUE: {
		struct jf_queue_rec q = { 0 };
		if (jf_queue_find(e->st, d->queue, &q) != JF_OK ||
		    hidden_from(e, q.id, (uid_t)g->uid)) {
			if (q.id)
				jf_queue_release(&q);
			return jf_error_set(err, JF_EINVAL, d->line,
					    "key '%s': no queue %s, so no group "
					    "queues/%s/groups/%s",
					    key, d->queue, d->queue, d->name);
		}
		qid = q.id;
		jf_queue_release(&q);
		break;
	}
	}
	if (kind == JF_KIND_GROUP) {
		struct jf_queue_rec q = { 0 };
		if (jf_queue_get(e->st, qid, &q) == JF_OK) {
			snprintf(qname, sizeof(qname), "%s", q.name);
			jf_queue_release(&q);
		}
	}
	if (jf_group_find(e->st, qid, kind, d->name, t) != JF_OK ||
	    (kind == JF_KIND_GROUP && hidden_from(e, qid, (uid_t)g->uid))) {
		if (kind == JF_KIND_BATCH)
			return jf_error_set(err, JF_EINVAL, d->line,
					    "key '%s': no batch %s in /tasks (make it first: "
					    "mkdir tasks/%s)",
					    key, d->name, d->name);
		return jf_error_set(err, JF_EINVAL, d->line,
				    "key '%s': no group %s in queue %s (make it first: mkdir "
				    "queues/%s/groups/%s)",
				    key, d->name, qname, qname, d->name);
	}
	return JF_OK;
}

static size_t edges_of(void *ctx, int64_t id, int64_t *out, size_t max)
{
	struct jf_engine *e = ctx;
	size_t n = 0;
	if (jf_dep_targets(e->st, id, out, max, &n) != JF_OK)
		return 0;
	return n;
}

#define CYCLE_SHOWN 8

/* The cycle path (ids) in words: "a -> b -> a", at most CYCLE_SHOWN. */
static void cycle_words(struct jf_engine *e, const int64_t *path, size_t n, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && off < len; i++) {
		char p[DEP_PATH_MAX];
		id_path(e, path[i], p, sizeof(p));
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? " -> " : "", p);
	}
}

enum jf_err jf_eng_dep_check(struct jf_engine *e, const struct jf_group_rec *g,
			     const struct jf_spec *s, struct jf_dep_res **out, struct jf_error *err)
{
	*out = NULL;
	if (!s->nafter)
		return JF_OK;
	struct jf_dep_res *res = calloc(s->nafter, sizeof(*res));
	int64_t *ids = calloc(s->nafter, sizeof(*ids));
	enum jf_err rc = JF_OK;
	if (!res || !ids) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		goto out;
	}
	const char *base = s->after_key ? s->after_key : "after";
	int64_t mine = g->kind == JF_KIND_BATCH ? s->count : s->completions;
	for (size_t i = 0; i < s->nafter && rc == JF_OK; i++) {
		const struct jf_dep *d = &s->after[i];
		char key[JF_YPATH_MAX], each_key[JF_YPATH_MAX];
		jf_ypath_index(key, sizeof(key), base, i);
		jf_ypath_key(each_key, sizeof(each_key), key, "each");
		struct jf_group_rec t;
		if ((rc = resolve(e, g, d, key, &t, err)))
			break;
		res[i].target_id = ids[i] = t.id;
		res[i].target_state = t.state;
		group_path(e, &t, res[i].path, sizeof(res[i].path));
		int64_t theirs = t.completions;
		int state = t.state;
		jf_group_release(&t);
		if (res[i].target_id == g->id) {
			rc = jf_error_set(err, JF_EINVAL, d->line,
					  "key '%s': %s is this %s itself: it cannot wait for "
					  "itself",
					  key, res[i].path,
					  g->kind == JF_KIND_BATCH ? "batch" : "group");
			break;
		}
		for (size_t j = 0; j < i && rc == JF_OK; j++)
			if (ids[j] == ids[i])
				rc = jf_error_set(err, JF_EINVAL, d->line,
						  "key '%s': %s is named by %s[%zu] too (line "
						  "%d): one entry per group",
						  key, res[i].path, base, j, s->after[j].line);
		if (rc || !d->each)
			continue;
		if (state == JF_ST_DRAFT || state == JF_ST_INVALID)
			rc = jf_error_set(err, JF_EINVAL, d->line,
					  "key '%s': each: true pairs task i with task i of %s, "
					  "which has no accepted spec yet, so its tasks are not "
					  "known: submit it first",
					  each_key, res[i].path);
		else if (theirs != mine)
			rc = jf_error_set(err, JF_EINVAL, d->line,
					  "key '%s': each: true pairs task i with task i of %s: "
					  "this %s has %lld task%s and that one %lld; they must "
					  "be the same",
					  each_key, res[i].path,
					  g->kind == JF_KIND_BATCH ? "batch" : "group",
					  (long long)mine, mine == 1 ? "" : "s", (long long)theirs);
	}
	if (rc)
		goto out;
	int64_t path[CYCLE_SHOWN + 1];
	size_t np = 0;
	rc = jf_deps_cycle(g->id, ids, s->nafter, edges_of, e, path, CYCLE_SHOWN + 1, &np);
	if (rc == JF_EINVAL) {
		size_t i = 0;
		while (i + 1 < s->nafter && np > 1 && ids[i] != path[1])
			i++;
		char key[JF_YPATH_MAX], words[JF_ERRMSG_MAX];
		jf_ypath_index(key, sizeof(key), base, i);
		cycle_words(e, path, np, words, sizeof(words));
		rc = jf_error_set(err, JF_EINVAL, s->after[i].line,
				  "key '%s': waiting for %s would make a cycle: %s", key,
				  res[i].path, words);
	} else if (rc) {
		rc = jf_error_set(err, rc, 0, "out of memory checking after: for a cycle");
	}
out:
	free(ids);
	if (rc) {
		free(res);
		return rc;
	}
	*out = res;
	return JF_OK;
}

void jf_eng_dep_record(struct jf_engine *e, int64_t group_id, const struct jf_spec *s,
		       const struct jf_dep_res *res)
{
	jf_dep_clear(e->st, group_id);
	for (size_t i = 0; i < s->nafter; i++) {
		const struct jf_dep *d = &s->after[i];
		/* an each row decides per task (jf_eng_dep_accepted) */
		enum jf_dep_verdict v =
			d->each ? JF_DEP_WAITS : jf_dep_eval(d->when, res[i].target_state);
		jf_dep_add(e->st, group_id, (int)i, res[i].target_id, res[i].path, (int)d->when,
			   d->each, jf_dep_ok_mask(d->when), (int)v);
	}
}

/* ---- the cache and the flag ---- */

static void each_recount(struct jf_engine *e)
{
	int64_t n = 0;
	if (jf_dep_each_waiting(e->st, &n) != JF_OK)
		n = 1; /* unsure: look at every task end */
	e->dep_each_live = n > 0;
}

void jf_eng_dep_load(struct jf_engine *e, struct grt *g, unsigned flags)
{
	struct jf_dep_summary sum;
	g->dep_said = (flags & JF_GF_DEPENDENCY) != 0;
	g->dep_none = false;
	if (jf_dep_summary(e->st, g->id, &sum) != JF_OK) {
		g->dep_wait = g->dep_each = false;
		return;
	}
	g->dep_wait = sum.waits > 0;
	g->dep_each = sum.each_waits > 0;
	g->dep_any = sum.all > 0;
}

struct rows {
	struct jf_dep_rec *v;
	size_t n, cap;
	bool oom;
};

static int take_row(void *ctx, const struct jf_dep_rec *r)
{
	struct rows *l = ctx;
	if (!jf_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v))) {
		l->oom = true;
		return 1;
	}
	l->v[l->n++] = *r;
	return 0;
}

/* "queues/q/groups/a to succeed, tasks/b to finish" of the rows that wait. */
static void waiting_words(const struct rows *l, bool each, char *buf, size_t n)
{
	static const char *const verb[] = {
		[JF_DEP_SUCCEEDED] = "succeed",
		[JF_DEP_FAILED] = "fail",
		[JF_DEP_FINISHED] = "finish",
	};
	size_t off = 0, k = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < l->n && off < n; i++) {
		const struct jf_dep_rec *r = &l->v[i];
		if (r->state != JF_DEP_WAITS || r->each != each)
			continue;
		int w = r->when >= 0 && r->when <= JF_DEP_FINISHED ? r->when : 0;
		off += (size_t)snprintf(buf + off, n - off, "%s%s%s to %s", k++ ? ", " : "",
					each ? "the paired tasks of " : "", r->path, verb[w]);
	}
}

/*
 * Flag g as waiting, its message g->dep_msg (in the caller's step).  Only
 * a Waiting group is flagged: a running one goes back to Waiting with an
 * empty message when its last task ends (ending.c), so the gate says it
 * again at every pass that finds it waiting; this reads one row and
 * writes only what changed.
 */
static void say(struct jf_engine *e, struct grt *g)
{
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) != JF_OK)
		return;
	if (rec.state == JF_ST_WAITING &&
	    (!(rec.flags & JF_GF_DEPENDENCY) || strcmp(rec.message, g->dep_msg) != 0)) {
		jf_group_set_flags(e->st, g->id, rec.flags | JF_GF_DEPENDENCY, g->dep_msg);
		jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
	}
	g->dep_said = rec.state == JF_ST_WAITING || (rec.flags & JF_GF_DEPENDENCY);
	jf_group_release(&rec);
}

static void unsay(struct jf_engine *e, struct grt *g)
{
	g->dep_said = false;
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) != JF_OK)
		return;
	if (rec.flags & JF_GF_DEPENDENCY) {
		jf_group_set_flags(e->st, g->id, rec.flags & ~JF_GF_DEPENDENCY,
				   rec.state == JF_ST_WAITING ? "" : rec.message);
		jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
	}
	jf_group_release(&rec);
}

/* g->dep_msg from its rows: what a group that waits says. */
static void say_rows(struct jf_engine *e, struct grt *g, const struct rows *l, bool each_only)
{
	char words[400];
	waiting_words(l, each_only, words, sizeof(words));
	snprintf(g->dep_msg, sizeof(g->dep_msg), "waiting for %.400s%s", words,
		 each_only ? " (task i starts once its pair has)" : "");
	say(e, g);
}

/* The same, reading the rows. */
static void say_list(struct jf_engine *e, struct grt *g, bool each_only)
{
	struct rows l = { 0 };
	jf_dep_list(e->st, g->id, take_row, &l);
	say_rows(e, g, &l, each_only);
	free(l.v);
}

/* ---- ending what can never run ---- */

/* g ends Stopped: row r can never hold. */
static void end_never(struct jf_engine *e, struct grt *g, const struct jf_dep_rec *r)
{
	char msg[512];
	if (r->target_state < 0)
		snprintf(msg, sizeof(msg),
			 "dependency never satisfied: %s[%d] %s (when: %s) was removed before it "
			 "ended",
			 after_key(g), r->pos, r->path,
			 jf_dep_when_name((enum jf_dep_when)r->when));
	else
		snprintf(msg, sizeof(msg),
			 "dependency never satisfied: %s[%d] needs %s to have %s, and it ended %s",
			 after_key(g), r->pos, r->path, jf_dep_when_name((enum jf_dep_when)r->when),
			 jf_state_name((enum jf_state)r->target_state));
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) != JF_OK)
		return;
	bool live = !jf_state_final(rec.state) && rec.state != JF_ST_DRAFT &&
		    rec.state != JF_ST_INVALID;
	unsigned flags = rec.flags;
	jf_group_release(&rec);
	if (!live)
		return;
	jf_eng_group_ended(e, g, true);
	g->dep_said = false;
	jf_eng_step_begin(e);
	jf_group_set_flags(e->st, g->id, flags & ~JF_GF_DEPENDENCY, "");
	jf_eng_move(e, JF_OBJ_GROUP(g), JF_EV_STOP, msg);
	jf_eng_move_tasks(e, JF_OBJ_GROUP(g), (1u << JF_ST_WAITING) | (1u << JF_ST_PAUSED),
			  JF_EV_STOP, "the group ended: a dependency can never be satisfied");
	jf_eng_group_event(e, 0, g->id, g->kind, "Warning", "DependencyNeverSatisfied", "%s", msg);
	if (g->queue_id)
		jf_eng_group_event(e, g->queue_id, 0, g->kind, "Warning",
				   "DependencyNeverSatisfied", "%s: %s", g->dirname, msg);
	jf_eng_step_end(e);
	jf_eng_kill_group(e, g->id, JF_WHY_STOP);
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, true);
}

struct idxs {
	int64_t *id, *idx;
	size_t n, cap;
	bool oom;
};

static int take_task(void *ctx, int64_t id, int64_t idx)
{
	struct idxs *l = ctx;
	size_t cap = l->cap;
	if (!jf_grow(&l->id, &cap, l->n + 1, sizeof(*l->id)) ||
	    !jf_grow(&l->idx, &l->cap, l->n + 1, sizeof(*l->idx))) {
		l->oom = true;
		return 1;
	}
	l->id[l->n] = id;
	l->idx[l->n++] = idx;
	return 0;
}

/* Task task_id (index idx) of g is Stopped: its pair in r's target can
 * never satisfy r (pair_state: that task's state, -1 gone). */
static void stop_task(struct jf_engine *e, struct grt *g, int64_t task_id, int64_t idx,
		      const struct jf_dep_rec *r, int pair_state)
{
	char msg[512];
	if (pair_state < 0 || r->target_state < 0)
		snprintf(msg, sizeof(msg),
			 "dependency never satisfied: %s[%d] pairs this task with task %lld of "
			 "%s, which was removed",
			 after_key(g), r->pos, (long long)idx, r->path);
	else
		snprintf(msg, sizeof(msg),
			 "dependency never satisfied: %s[%d] pairs this task with task %lld of "
			 "%s, which ended %s (when: %s)",
			 after_key(g), r->pos, (long long)idx, r->path,
			 jf_state_name((enum jf_state)pair_state),
			 jf_dep_when_name((enum jf_dep_when)r->when));
	jf_eng_step_begin(e);
	if (jf_eng_move(e, JF_OBJ_TASK(g, task_id), JF_EV_STOP, msg) >= 0)
		jf_eng_event(e, g, task_id, idx, 0, 0, "Warning", "DependencyNeverSatisfied", "%s",
			     msg);
	jf_eng_step_end(e);
	if (e->delegated)
		jf_eng_delegate_withdraw(e, task_id);
}

/* The pair state of task idx in r's target, for the message. */
static int pair_state(struct jf_engine *e, const struct jf_dep_rec *r, int64_t idx)
{
	struct jf_task_rec t;
	if (!r->target_id || jf_task_find(e->st, r->target_id, idx, &t) != JF_OK)
		return r->target_id ? r->target_state : -1;
	int s = t.state;
	jf_task_release(&t);
	return s;
}

/* Stop the tasks of dependent g whose pair in r's target can never
 * satisfy r; true when some were. */
static bool stop_unready(struct jf_engine *e, struct grt *g, const struct jf_dep_rec *r)
{
	bool any = false;
	for (;;) {
		struct idxs l = { 0 };
		jf_dep_unready_tasks(e->st, g->id, r->target_id, r->ok_mask, DEP_STOP_CHUNK,
				     take_task, &l);
		size_t stopped = 0;
		for (size_t i = 0; i < l.n; i++) {
			/* (one still being killed for a restart ends as that says) */
			if (jf_idmap_get(&e->tasks, l.id[i]))
				continue;
			stop_task(e, g, l.id[i], l.idx[i], r, pair_state(e, r, l.idx[i]));
			stopped++;
		}
		size_t n = l.n;
		free(l.id);
		free(l.idx);
		any = any || stopped > 0;
		if (n < DEP_STOP_CHUNK || !stopped || !jf_eng_step_ok(e))
			return any;
	}
}

/* Every task row of g made now (an each row is to be decided for all). */
static void make_all(struct jf_engine *e, struct grt *g)
{
	int64_t left = 1;
	jf_eng_step_begin(e);
	while (left > 0 && jf_eng_step_ok(e))
		if (jf_group_make_tasks(e->st, g->id, jf_store_tasks_chunk(e->st), &left) != JF_OK)
			break;
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, true);
	jf_eng_step_end(e);
}

/* ---- deciding ---- */

static int count_one(void *ctx, int64_t id, int64_t idx, int64_t attempt)
{
	(void)id;
	(void)idx;
	(void)attempt;
	(*(int64_t *)ctx)++;
	return 0;
}

/*
 * Group gid's rows changed (or may have): act on what they say now.  A
 * row that can never hold ends it; each rows that can never hold stop
 * their tasks; the flag and message follow the rows that wait; when the
 * last waiting row holds, DependencySatisfied, and a pass.
 */
static void refresh(struct jf_engine *e, int64_t gid, bool accepted)
{
	struct grt *g = jf_eng_group(e, gid);
	if (!g)
		return;
	bool was_waiting = g->dep_wait || g->dep_each;
	struct rows l = { 0 };
	jf_dep_list(e->st, gid, take_row, &l);
	if (l.oom) {
		free(l.v);
		return;
	}
	int state = -1;
	jf_group_state(e->st, gid, &state);
	bool live = state == JF_ST_WAITING || state == JF_ST_RUNNING || state == JF_ST_PAUSED;
	const struct jf_dep_rec *never = NULL;
	bool stopped = false;
	for (size_t i = 0; live && i < l.n; i++) {
		if (l.v[i].state != JF_DEP_NEVER)
			continue;
		if (!l.v[i].each && !never)
			never = &l.v[i];
		else if (l.v[i].each)
			stopped = stop_unready(e, g, &l.v[i]) || stopped;
	}
	if (never) {
		end_never(e, g, never);
	} else if (live) {
		struct jf_dep_summary sum = { 0 };
		jf_dep_summary(e->st, gid, &sum);
		g->dep_wait = sum.waits > 0;
		g->dep_each = sum.each_waits > 0;
		g->dep_none = false;
		jf_eng_step_begin(e);
		int64_t ready = 0;
		if (!g->dep_wait && g->dep_each)
			jf_dep_ready_tasks(e->st, gid, false, 1, count_one, &ready);
		if (g->dep_wait || (g->dep_each && ready == 0))
			say_rows(e, g, &l, !g->dep_wait);
		else if (g->dep_said)
			unsay(e, g);
		char words[700];
		if (accepted && (g->dep_wait || g->dep_each)) {
			waiting_words(&l, false, words, sizeof(words));
			if (words[0])
				jf_eng_group_event(e, 0, gid, g->kind, "Normal",
						   "WaitingForDependency", "waiting for %s", words);
			waiting_words(&l, true, words, sizeof(words));
			if (words[0])
				jf_eng_group_event(e, 0, gid, g->kind, "Normal",
						   "WaitingForDependency",
						   "task i waits for task i: %s", words);
		} else if (!accepted && was_waiting && !g->dep_wait && !g->dep_each) {
			jf_eng_group_event(e, 0, gid, g->kind, "Normal", "DependencySatisfied",
					   "every entry of %s holds", after_key(g));
		}
		jf_eng_step_end(e);
	}
	if (stopped && !never)
		jf_eng_settle_group(e, g);
	free(l.v);
	e->dep_epoch++;
	jf_eng_schedule(e);
}

/* Decide the waiting rows of l on target (state tstate; -1 gone): the
 * groups whose rows changed go to deps (ids, at most l->n). */
static size_t decide(struct jf_engine *e, struct rows *l, int tstate, int64_t *deps)
{
	size_t nd = 0;
	bool each_latched = false;
	for (size_t i = 0; i < l->n; i++) {
		struct jf_dep_rec *r = &l->v[i];
		r->target_state = tstate;
		int to = JF_DEP_WAITS;
		if (!r->each) {
			to = (int)jf_dep_eval((enum jf_dep_when)r->when, tstate);
		} else if (tstate < 0) {
			to = JF_DEP_NEVER;
		} else {
			/* the pairs that can never hold stop now; once the target
			 * has ended every pair is decided and the row holds */
			int ds = -1;
			jf_group_state(e->st, r->group_id, &ds);
			struct grt *g =
				ds == JF_ST_WAITING || ds == JF_ST_RUNNING || ds == JF_ST_PAUSED
					? jf_eng_group(e, r->group_id)
					: NULL; /* a dependent that ended has nothing to stop */
			bool ended = jf_state_final((enum jf_state)tstate);
			if (g && ended)
				make_all(e, g);
			bool stopped = g && stop_unready(e, g, r);
			if (g && stopped)
				jf_eng_settle_group(e, g);
			if (ended)
				to = JF_DEP_HOLDS;
			each_latched = each_latched || ended;
			e->dep_epoch++;
			if (!ended) {
				jf_eng_schedule(e); /* pairs that hold may start */
				continue;
			}
		}
		if (to == JF_DEP_WAITS)
			continue;
		jf_eng_step_begin(e);
		jf_dep_set_state(e->st, r->id, to);
		jf_eng_step_end(e);
		r->state = to;
		size_t k = 0;
		while (k < nd && deps[k] != r->group_id)
			k++;
		if (k == nd)
			deps[nd++] = r->group_id;
	}
	if (each_latched)
		each_recount(e);
	return nd;
}

/* Target target_id ended (or its tasks moved together): decide its rows. */
static void on_target(struct jf_engine *e, int64_t target_id)
{
	struct rows l = { 0 };
	jf_dep_waiting_on(e->st, target_id, take_row, &l);
	if (l.oom || l.n == 0) {
		free(l.v);
		return;
	}
	int tstate = -1;
	if (jf_group_state(e->st, target_id, &tstate) != JF_OK)
		tstate = -1;
	int64_t *deps = calloc(l.n, sizeof(*deps));
	if (deps) {
		size_t nd = decide(e, &l, tstate, deps);
		for (size_t k = 0; k < nd; k++)
			refresh(e, deps[k], false);
	}
	free(deps);
	free(l.v);
}

/* Task task_id of target_id ended: its pairs in each rows. */
static void on_task(struct jf_engine *e, int64_t target_id, int64_t task_id)
{
	struct jf_task_rec t;
	if (jf_task_get(e->st, task_id, &t) != JF_OK)
		return;
	int64_t idx = t.idx;
	int ts = t.state;
	jf_task_release(&t);
	struct rows l = { 0 };
	jf_dep_waiting_on(e->st, target_id, take_row, &l);
	bool schedule = false;
	for (size_t i = 0; i < l.n; i++) {
		const struct jf_dep_rec *r = &l.v[i];
		if (!r->each)
			continue;
		enum jf_dep_verdict v = jf_dep_eval((enum jf_dep_when)r->when, ts);
		if (v == JF_DEP_HOLDS) {
			schedule = true;
			continue;
		}
		if (v != JF_DEP_NEVER)
			continue;
		struct grt *g = jf_eng_group(e, r->group_id);
		struct jf_task_rec d;
		if (!g || jf_task_find(e->st, r->group_id, idx, &d) != JF_OK)
			continue; /* a row not made yet: decided when the target ends */
		int64_t did = d.id;
		bool waits = d.state == JF_ST_WAITING || d.state == JF_ST_PAUSED;
		jf_task_release(&d);
		if (!waits || jf_idmap_get(&e->tasks, did))
			continue;
		stop_task(e, g, did, idx, r, ts);
		jf_eng_settle_group(e, g);
		schedule = true;
	}
	free(l.v);
	if (schedule) {
		e->dep_epoch++;
		jf_eng_schedule(e);
	}
}

/* The action (step.c): a < 0, the rows of group -a changed (its target
 * was removed); b > 0, task b of group a ended; else group a ended (or its
 * tasks moved together). */
static void dep_act(struct jf_engine *e, int64_t a, int64_t b, int64_t c)
{
	(void)c;
	if (a < 0)
		refresh(e, -a, false);
	else if (b > 0)
		on_task(e, a, b);
	else
		on_target(e, a);
}

void jf_eng_dep_moved(struct jf_engine *e, int64_t group_id, int64_t task_id, int to)
{
	if (to < 0 || !jf_state_final((enum jf_state)to))
		return;
	if (task_id == 0)
		jf_eng_after(e, dep_act, group_id, 0, 0);
	else if (e->dep_each_live)
		jf_eng_after(e, dep_act, group_id, task_id > 0 ? task_id : 0, 0);
}

void jf_eng_dep_accepted(struct jf_engine *e, struct grt *g)
{
	struct rows l = { 0 };
	jf_dep_list(e->st, g->id, take_row, &l);
	bool each = false;
	for (size_t i = 0; i < l.n; i++) {
		struct jf_dep_rec *r = &l.v[i];
		if (!r->each)
			continue;
		each = true;
		if (jf_state_final((enum jf_state)r->target_state)) {
			/* its target has ended: decide every pair now */
			struct rows one = { .v = r, .n = 1, .cap = 1 };
			int64_t dep;
			decide(e, &one, r->target_state, &dep);
		} else if (stop_unready(e, g, r)) {
			jf_eng_settle_group(e, g);
		}
	}
	free(l.v);
	if (each)
		each_recount(e);
	refresh(e, g->id, true);
}

/*
 * ctl restart of g: what holds stays so; an entry that could never hold
 * is judged again by its target as it is now (restarted, it may hold
 * yet), and each entries pair again, so that a task whose pair did not
 * satisfy its entry is stopped again rather than run.
 */
void jf_eng_dep_restarted(struct jf_engine *e, struct grt *g)
{
	struct rows l = { 0 };
	jf_dep_list(e->st, g->id, take_row, &l);
	bool each = false;
	for (size_t i = 0; i < l.n; i++) {
		struct jf_dep_rec *r = &l.v[i];
		if (!r->target_id || (!r->each && r->state != JF_DEP_NEVER))
			continue;
		int to = r->each ? JF_DEP_WAITS
				 : (int)jf_dep_eval((enum jf_dep_when)r->when, r->target_state);
		jf_eng_step_begin(e);
		jf_dep_set_state(e->st, r->id, to);
		jf_eng_step_end(e);
		r->state = to;
		if (!r->each)
			continue;
		each = true;
		struct rows one = { .v = r, .n = 1, .cap = 1 };
		int64_t dep;
		if (jf_state_final((enum jf_state)r->target_state))
			decide(e, &one, r->target_state, &dep);
		else if (stop_unready(e, g, r))
			jf_eng_settle_group(e, g);
	}
	free(l.v);
	if (each)
		each_recount(e);
	refresh(e, g->id, false);
}

int64_t jf_eng_dep_since(struct jf_engine *e, const struct grt *g)
{
	if (!g->dep_any)
		return 0;
	struct rows l = { 0 };
	jf_dep_list(e->st, g->id, take_row, &l);
	int64_t since = 0;
	for (size_t i = 0; i < l.n; i++)
		if (l.v[i].state == JF_DEP_HOLDS && l.v[i].target_finished_ms > since)
			since = l.v[i].target_finished_ms;
	free(l.v);
	return since;
}

void jf_eng_dep_renamed(struct jf_engine *e, int64_t group_id)
{
	struct rows l = { 0 };
	jf_dep_waiting_on(e->st, group_id, take_row, &l);
	for (size_t i = 0; i < l.n; i++) {
		bool dup = false;
		for (size_t j = 0; j < i; j++)
			dup = dup || l.v[j].group_id == l.v[i].group_id;
		if (!dup)
			jf_eng_after(e, dep_act, -l.v[i].group_id, 0, 0);
	}
	free(l.v);
}

void jf_eng_dep_removing(struct jf_engine *e, const struct jf_group_rec *t)
{
	struct rows l = { 0 };
	jf_dep_waiting_on(e->st, t->id, take_row, &l);
	char path[DEP_PATH_MAX];
	group_path(e, t, path, sizeof(path));
	jf_dep_target_gone(e->st, t->id, path);
	for (size_t i = 0; i < l.n; i++) {
		jf_dep_set_state(e->st, l.v[i].id, JF_DEP_NEVER);
		bool dup = false;
		for (size_t j = 0; j < i; j++)
			dup = dup || l.v[j].group_id == l.v[i].group_id;
		if (!dup)
			jf_eng_after(e, dep_act, -l.v[i].group_id, 0, 0);
	}
	if (l.n)
		each_recount(e);
	free(l.v);
}

void jf_eng_dep_sweep(struct jf_engine *e)
{
	struct rows l = { 0 };
	jf_dep_stale(e->st, take_row, &l);
	for (size_t i = 0; i < l.n; i++) {
		const struct jf_dep_rec *r = &l.v[i];
		if (r->target_id) {
			bool dup = false;
			for (size_t j = 0; j < i; j++)
				dup = dup || l.v[j].target_id == r->target_id;
			if (!dup)
				on_target(e, r->target_id);
			continue;
		}
		jf_eng_step_begin(e);
		jf_dep_set_state(e->st, r->id, JF_DEP_NEVER);
		jf_eng_step_end(e);
		refresh(e, r->group_id, false);
	}
	free(l.v);
	each_recount(e);
}

/* ---- gating ---- */

bool jf_eng_dep_waits(struct jf_engine *e, struct grt *g, int64_t *waiting)
{
	if (g->dep_wait) {
		if (g->dep_msg[0])
			say(e, g);
		else
			say_list(e, g, false);
		return true;
	}
	if (!g->dep_each) {
		if (g->dep_said)
			unsay(e, g);
		return false;
	}
	if (g->dep_none && g->dep_seen_epoch == e->dep_epoch && g->dep_seen_waiting == *waiting) {
		say(e, g);
		return true;
	}
	int64_t ready = 0;
	int limit = *waiting < DEP_READY_MAX ? (int)*waiting : DEP_READY_MAX;
	jf_dep_ready_tasks(e->st, g->id, false, limit, count_one, &ready);
	g->dep_seen_epoch = e->dep_epoch;
	g->dep_seen_waiting = *waiting;
	g->dep_none = ready == 0;
	if (ready == 0) {
		say_list(e, g, true);
		return true;
	}
	if (g->dep_said)
		unsay(e, g);
	*waiting = ready;
	return false;
}

struct adapt {
	int (*fn)(void *ctx, int64_t id, int64_t idx, int64_t attempt);
	void *ctx;
};

static int adapt3(void *ctx, int64_t id, int64_t idx)
{
	struct adapt *a = ctx;
	return a->fn(a->ctx, id, idx, 0);
}

enum jf_err jf_eng_dep_list(struct jf_engine *e, struct grt *g, bool unsubmitted, int limit,
			    int (*fn)(void *ctx, int64_t id, int64_t idx, int64_t attempt),
			    void *ctx)
{
	if (g && g->dep_each)
		return jf_dep_ready_tasks(e->st, g->id, unsubmitted, limit, fn, ctx);
	int64_t gid = g ? g->id : 0;
	if (unsubmitted)
		return jf_task_list_unsubmitted(e->st, gid, limit, fn, ctx);
	struct adapt a = { fn, ctx };
	return jf_task_list_state(e->st, gid, JF_ST_WAITING, limit, adapt3, &a);
}
