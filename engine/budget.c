/*
 * budget.c - queue budgets (reference 10): once a queue's cost within its
 * budget period reaches its budget, nothing new starts in it.
 *
 * DESIGN
 *
 * The cost is the queue's `cost` (closed ledger rows and the open ones
 * billed up to now), cut to the rolling window when the spec has a
 * budget_period: core/budget.c's arithmetic over the store's
 * jf_ledger_budget_segs(), the same numbers the queue's status shows.
 * It grows while work runs and, in a window, falls as old costs leave, so
 * each evaluation also answers when it may next cross the budget
 * (core/budget.h: reach while available, free while exhausted); until
 * then, and until a segment of the queue opens or closes or its spec
 * changes (jf_eng_budget_touch, jf_eng_budget_spec), the answer stands.
 * The engine's tick carries the deadline (a virtual clock jumps to it), so
 * nothing polls.
 *
 * What holds, per queue with a budget (struct qbud, in e->budgets):
 * - `said` is the store's budget_state: true from the BudgetExhausted
 *   event to the BudgetAvailable one, so a restart says neither twice;
 * - while it is exhausted every group of it that has work to start is
 *   flagged JF_GF_BUDGET (its status: reason Budget) and starts nothing
 *   (schedule.c's add_group, delegate.c's pass_group call
 *   jf_eng_budget_waits); on a scheduling backend its batches are held as
 *   a pause holds them, so that the backend starts nothing either;
 * - when it becomes available the flags go and the holds are released
 *   (a paused group's stay), and a pass starts what waited;
 * - with budget_action: stop, every task of it that runs while it is
 *   exhausted is stopped as `echo stop > tasks/<t>/ctl` stops it: killed,
 *   billed to its end, Stopped; its group's other tasks wait.
 *   With hold (the default) running work runs on and its cost keeps
 *   counting.
 */
#include "engine/engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/billing.h"
#include "core/budget.h"
#include "core/grow.h"
#include "core/quantity.h"

struct qbud {
	int64_t queue_id;
	char name[JF_NAME_MAX];
	int64_t budget;   /* micro-units */
	int64_t period_s; /* 0: the queue's whole life */
	bool stop;        /* budget_action: stop */
	bool said;        /* exhausted, as announced (the store's budget_state) */
	bool known;       /* evaluated since the last change */
	bool exhausted;   /* as last evaluated */
	int64_t spent;    /* then */
	int64_t next_ms;  /* when that may change (-1: not by time alone) */
};

static void period_words(const struct qbud *q, char *buf, size_t n)
{
	if (q->period_s > 0) {
		char d[32];
		jf_duration_format(q->period_s, d, sizeof(d));
		snprintf(buf, n, "in the last %s", d);
	} else {
		snprintf(buf, n, "since the queue was made");
	}
}

/* Unflag (and, on a scheduling backend, release) the groups of q held for
 * its budget: it is available again. */
struct unheld {
	struct jf_engine *e;
	int64_t queue_id;
};

static int unflag_one(void *ctx, int64_t gid)
{
	struct unheld *u = ctx;
	struct jf_engine *e = u->e;
	struct jf_group_rec rec;
	if (jf_group_get(e->st, gid, &rec) != JF_OK)
		return 0;
	bool mine = rec.queue_id == u->queue_id && (rec.flags & JF_GF_BUDGET);
	enum jf_state state = rec.state;
	if (mine) {
		jf_group_set_flags(e->st, gid, rec.flags & ~JF_GF_BUDGET,
				   strncmp(rec.message, "Budget: ", 8) == 0 ? "" : rec.message);
		jf_eng_changed(e, JF_CH_GROUP, rec.queue_id, gid, 0, 0, false);
	}
	jf_group_release(&rec);
	struct grt *g = mine ? jf_eng_group(e, gid) : NULL;
	if (g && e->delegated) {
		g->budget_held = false;
		if (state != JF_ST_PAUSED)
			jf_eng_delegate_resumed(e, gid); /* the holds go, as at a resume */
	}
	return 0;
}

/* The queue's BudgetExhausted or BudgetAvailable event (why: what freed
 * it; NULL: its budget is gone), its state in the store, the flags; then
 * a pass. */
static void announce(struct jf_engine *e, struct qbud *q, bool exhausted, const char *why)
{
	const char *cur = e->cluster->currency;
	char spent[48], budget[48], per[48], msg[512];
	jf_money_format(q->spent, cur, spent, sizeof(spent));
	jf_money_format(q->budget, cur, budget, sizeof(budget));
	period_words(q, per, sizeof(per));
	if (exhausted) {
		snprintf(msg, sizeof(msg),
			 "spent %s of its budget of %s %s: nothing new starts in it; %s", spent,
			 budget, per,
			 q->stop ? "running work is stopped (budget_action: stop)"
				 : "running work runs on (budget_action: hold)");
	} else if (!why) {
		snprintf(msg, sizeof(msg),
			 "the queue has no budget any more: waiting work may start");
	} else {
		int64_t left = q->budget > q->spent ? q->budget - q->spent : 0;
		char l[48];
		jf_money_format(left, cur, l, sizeof(l));
		snprintf(msg, sizeof(msg),
			 "%s: %s of its budget of %s left (spent %s %s); waiting "
			 "work may start",
			 why, l, budget, spent, per);
	}
	struct jf_event_scope sc = { .queue_id = q->queue_id };
	jf_eng_step_begin(e);
	jf_queue_set_budget_state(e->st, q->queue_id, exhausted ? 1 : 0);
	jf_event_add(e->st, &sc, jf_eng_now(e), exhausted ? "Warning" : "Normal",
		     exhausted ? "BudgetExhausted" : "BudgetAvailable", "queue", msg);
	if (!exhausted) {
		struct unheld u = { e, q->queue_id };
		jf_group_list_active(e->st, unflag_one, &u);
	}
	if (jf_eng_step_end(e))
		q->said = exhausted;
	jf_eng_changed(e, JF_CH_QUEUE, q->queue_id, 0, 0, 0, false);
	jf_eng_schedule(e);
}

/* A running task of q's that nothing is ending yet. */
static struct grt *stoppable(struct jf_engine *e, const struct qbud *q, const struct trun *t)
{
	struct grt *g = t->why == JF_WHY_NONE ? jf_eng_group(e, t->group_id) : NULL;
	return g && g->queue_id == q->queue_id ? g : NULL;
}

static void hold(struct jf_engine *e, struct grt *g, const struct qbud *q);

/* budget_action: stop: every task of q's groups that runs is stopped.
 * Their groups are held first: on a scheduling backend the hold of what
 * waits is asked before the cancel of what runs, or Slurm would start the
 * next element of an array (its throttle freed by the cancel) before the
 * hold, and that would be stopped too. */
static void stop_running(struct jf_engine *e, struct qbud *q)
{
	size_t i = 0, n = 0, cap = 0;
	int64_t k, *gids = NULL;
	void *v;
	bool any = false;
	while (jf_idmap_next(&e->tasks, &i, &k, &v)) {
		struct grt *g = stoppable(e, q, v);
		if (!g)
			continue;
		any = true;
		bool seen = false;
		for (size_t j = 0; j < n && !seen; j++)
			seen = gids[j] == g->id;
		if (!seen && jf_grow(&gids, &cap, n + 1, sizeof(*gids)))
			gids[n++] = g->id;
	}
	/* held outside the walk: a hold's step may act on the tasks */
	for (size_t j = 0; j < n; j++) {
		struct grt *g = jf_eng_group(e, gids[j]);
		if (g)
			hold(e, g, q);
	}
	free(gids);
	if (!any)
		return;
	i = 0;
	jf_eng_step_begin(e);
	while (jf_idmap_next(&e->tasks, &i, &k, &v)) {
		struct trun *t = v;
		struct grt *g = stoppable(e, q, t);
		if (!g)
			continue;
		jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Normal", "Stopped",
			     "stopped: queue %s's budget is spent (budget_action: stop)", q->name);
		jf_eng_kill_task(e, t, JF_WHY_STOP);
		jf_eng_changed(e, JF_CH_TASK, g->queue_id, g->id, t->task_id, 0, false);
	}
	jf_eng_step_end(e);
	jf_eng_schedule(e);
}

/* Evaluate q at now: what it spent, whether that is the budget, when that
 * may change; announce a change of state. */
static void evaluate(struct jf_engine *e, struct qbud *q, int64_t now, const char *why)
{
	struct jf_budget_seg *segs = NULL;
	size_t n = 0;
	int64_t base = 0;
	if (jf_ledger_budget_segs(e->st, q->queue_id, q->period_s, now, &segs, &n, &base) !=
	    JF_OK) {
		/* the store could not say: as it was, and again in a second */
		q->next_ms = now + 1000;
		return;
	}
	q->spent = jf_budget_spent(segs, n, base, now, q->period_s);
	q->exhausted = q->spent >= q->budget;
	q->next_ms = q->exhausted ? jf_budget_free_ms(segs, n, base, now, q->period_s, q->budget)
				  : jf_budget_reach_ms(segs, n, base, now, q->period_s, q->budget);
	q->known = true;
	free(segs);
	if (q->exhausted != q->said)
		announce(e, q, q->exhausted, why);
	if (q->exhausted && q->stop)
		stop_running(e, q);
}

/* Is q exhausted now?  Evaluated again once something changed or its
 * deadline came. */
static bool exhausted_now(struct jf_engine *e, struct qbud *q, int64_t now)
{
	if (!q->known || (q->next_ms >= 0 && now >= q->next_ms))
		evaluate(e, q, now,
			 q->period_s > 0 ? "older costs left the window" : "its cost is below it");
	return q->exhausted;
}

static struct qbud *qbud_of(struct jf_engine *e, int64_t queue_id)
{
	return queue_id > 0 ? jf_idmap_get(&e->budgets, queue_id) : NULL;
}

/* q takes the budget of spec s (s NULL or without a budget: none). */
static bool qbud_set(struct jf_engine *e, int64_t queue_id, const char *name,
		     const struct jf_queue_spec *s)
{
	struct qbud *q = qbud_of(e, queue_id);
	if (!s || !s->budget_set) {
		if (!q)
			return true;
		if (q->said)
			announce(e, q, false, NULL);
		free(jf_idmap_del(&e->budgets, queue_id));
		return true;
	}
	if (!q) {
		q = calloc(1, sizeof(*q));
		if (!q || !jf_idmap_put(&e->budgets, queue_id, q)) {
			free(q);
			return false;
		}
		q->queue_id = queue_id;
		int state = 0;
		jf_queue_budget_state(e->st, queue_id, &state);
		q->said = state != 0;
	}
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->budget = s->budget;
	q->period_s = s->budget_period;
	q->stop = s->budget_stop;
	q->known = false;
	return true;
}

struct loading {
	struct jf_engine *e;
	int64_t last;
};

static int load_one(void *ctx, int64_t id, const char *name)
{
	struct loading *l = ctx;
	l->last = id;
	struct jf_queue_rec q;
	if (jf_queue_get(l->e->st, id, &q) != JF_OK)
		return 0;
	struct jf_queue_spec s;
	if (q.spec[0] && jf_queue_spec_parse(q.spec, strlen(q.spec), &s, NULL) == JF_OK) {
		qbud_set(l->e, id, name, &s);
		jf_queue_spec_release(&s);
	}
	jf_queue_release(&q);
	return 0;
}

void jf_eng_budget_load(struct jf_engine *e)
{
	struct loading l = { e, 0 };
	for (;;) {
		int64_t before = l.last;
		if (jf_queue_list(e->st, l.last, 256, load_one, &l) != JF_OK || l.last == before)
			break;
	}
}

void jf_eng_budget_free(struct jf_engine *e)
{
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&e->budgets, &i, &k, &v))
		free(v);
	jf_idmap_release(&e->budgets);
}

void jf_eng_budget_spec(struct jf_engine *e, int64_t queue_id, const char *name,
			const struct jf_queue_spec *s)
{
	if (!qbud_set(e, queue_id, name, s))
		return;
	struct qbud *q = qbud_of(e, queue_id);
	if (q)
		evaluate(e, q, jf_eng_now(e), "its budget changed");
}

void jf_eng_budget_forget(struct jf_engine *e, int64_t queue_id)
{
	free(jf_idmap_del(&e->budgets, queue_id));
}

void jf_eng_budget_touch(struct jf_engine *e, int64_t queue_id)
{
	if (queue_id >= 0) {
		struct qbud *q = qbud_of(e, queue_id);
		if (q)
			q->known = false;
		return;
	}
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&e->budgets, &i, &k, &v))
		((struct qbud *)v)->known = false;
}

int64_t jf_eng_budget_tick(struct jf_engine *e)
{
	int64_t now = jf_eng_now(e), next = -1;
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&e->budgets, &i, &k, &v)) {
		struct qbud *q = v;
		exhausted_now(e, q, now);
		if (q->next_ms < 0)
			continue;
		/* exhausted with nothing waiting: its freeing matters to no one
		 * (the daemon's periodic tick still says it when it comes; a
		 * replay need not wait for it) */
		int64_t c[JF_ST__COUNT];
		if (q->exhausted &&
		    jf_queue_count_tasks(e->st, q->queue_id, JF_KIND_GROUP, c) == JF_OK &&
		    c[JF_ST_WAITING] == 0)
			continue;
		if (next < 0 || q->next_ms - now < next)
			next = q->next_ms - now;
	}
	return next < 0 ? -1 : next > 0 ? next : 1;
}

/* The group waits for its queue's budget: flagged, with why; on a
 * scheduling backend its batches held (once: again after a resume). */
static void hold(struct jf_engine *e, struct grt *g, const struct qbud *q)
{
	char budget[48], per[48], msg[400];
	jf_money_format(q->budget, e->cluster->currency, budget, sizeof(budget));
	period_words(q, per, sizeof(per));
	if (q->period_s > 0) {
		char d[32];
		jf_duration_format(q->period_s, d, sizeof(d));
		snprintf(msg, sizeof(msg),
			 "Budget: queue %s has spent its budget of %s %s; nothing new starts "
			 "until older costs leave the %s window or the budget is raised",
			 q->name, budget, per, d);
	} else {
		snprintf(msg, sizeof(msg),
			 "Budget: queue %s has spent its budget of %s; nothing new starts until "
			 "the budget is raised",
			 q->name, budget);
	}
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) != JF_OK)
		return;
	if (!(rec.flags & JF_GF_BUDGET) || strcmp(rec.message, msg) != 0) {
		jf_eng_step_begin(e);
		jf_group_set_flags(e->st, g->id, rec.flags | JF_GF_BUDGET, msg);
		jf_eng_step_end(e);
		jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
	}
	jf_group_release(&rec);
	if (e->delegated && !g->budget_held) {
		jf_eng_delegate_kill_group(e, g->id, JF_WHY_PAUSE); /* holds, as a pause */
		g->budget_held = true;
	}
}

bool jf_eng_budget_waits(struct jf_engine *e, struct grt *g)
{
	struct qbud *q = qbud_of(e, g->queue_id);
	if (!q || !exhausted_now(e, q, jf_eng_now(e)))
		return false;
	hold(e, g, q);
	return true;
}
