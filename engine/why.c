/*
 * why.c - why each waiting group waits and when it will start (reference
 * 9.1), published for the tree's readers.
 *
 * After every scheduling pass (schedule.c) the engine words each waiting
 * group's reason with its numbers (core/why.c), gives it a position and
 * the planner's shadow time (eta_basis "reservation"), and swaps the
 * whole table in under a leaf lock: a reader copies one entry and never
 * waits for a pass.
 *
 * The simulation (eta_basis "simulation", core/eta.c) runs on a snapshot
 * of that pass's input - what was free, every running task with its bound
 * and a predicted end (its start plus the mean run time of its group's
 * finished tasks; the bound while none has finished), every group with
 * its predicted run time - at most once every JF_ETA_REFRESH_MS, and, so
 * that a prediction a task overran does not stay, the tick asks for a
 * pass when the last snapshot is older than JF_ETA_STALE_MS and something
 * waits.  In the daemon it runs on a thread of its own (one snapshot at a
 * time; a newer one replaces one not yet taken), so neither the engine
 * nor a FUSE reply waits for it; jobfs-sim and the tests run it in line
 * (JF_ETA_INLINE) so that a replay stays deterministic.
 *
 * What a reader gets for a group (jf_engine_why): the simulation's start
 * when it has one that is not in the past, unless the reservation's bound
 * is earlier (a bound is a bound); else the reservation's; else none.
 */
#include "engine/engine_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/eta.h"
#include "core/grow.h"
#include "core/why.h"

#define NO_BOUND (INT64_MAX / 2)

struct why_entry {
	int64_t gid;
	enum jf_reason reason;
	int64_t position;
	int64_t eta_ms;    /* reservation */
	int64_t finish_ms; /* reservation: every task started, all bounded */
	char message[256];
};

struct eta_entry {
	int64_t gid;
	int64_t starts[JF_ETA_KEEP];
	int64_t finish_ms;
};

struct snapshot {
	int64_t at_ms;
	struct jf_sched_machine *m;
	size_t nm;
	struct jf_eta_running *run;
	size_t nrun;
	struct jf_sched_slot *slots;
	struct jf_plan_queue *q;
	size_t nq;
	struct jf_eta_group *g;
	int64_t *gid;
	size_t ng;
};

struct jf_whys {
	pthread_mutex_t mu; /* a leaf lock: guards what readers and the worker share */
	struct why_entry *why;
	size_t nwhy;
	struct eta_entry *eta;
	size_t neta;
	int64_t eta_at_ms; /* the snapshot the simulation ran on */
	/* the worker */
	bool thread;
	pthread_t th;
	pthread_cond_t cv;
	bool stop;
	struct snapshot *todo;
	bool busy;
	/* the engine's own */
	struct jf_idmap qdur; /* queue id (INT64_MAX: batches) -> struct qdur */
	int64_t snap_ms;
	struct jf_eta_figures fig;
};

struct qdur { /* run times of the tasks of a queue's groups that ended this daemon's life */
	int64_t n, sum_ms;
};

static int64_t qdur_key(const struct grt *g)
{
	return g->queue_id > 0 ? g->queue_id : INT64_MAX;
}

static void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	free(s->m);
	free(s->run);
	free(s->slots);
	free(s->q);
	free(s->g);
	free(s->gid);
	free(s);
}

static int entry_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Run the simulation on s: a new table of its results (NULL: none). */
static struct eta_entry *simulate(struct snapshot *s, size_t *n, struct jf_eta_figures *fig)
{
	*n = 0;
	size_t ng = s->ng ? s->ng : 1;
	int64_t *starts = calloc(ng * JF_ETA_KEEP, sizeof(*starts));
	int64_t *finish = calloc(ng, sizeof(*finish));
	struct eta_entry *out = calloc(ng, sizeof(*out));
	if (!starts || !finish || !out) {
		free(starts);
		free(finish);
		free(out);
		return NULL;
	}
	struct jf_eta_in in = {
		.now_ms = s->at_ms,
		.horizon_ms = s->at_ms + JF_ETA_HORIZON_MS,
		.max_passes = JF_ETA_MAX_PASSES,
		.quantum_ms = JF_ETA_QUANTUM_MS,
		.quantum_permille = JF_ETA_QUANTUM_PERMILLE,
		.machines = s->m,
		.nm = s->nm,
		.running = s->run,
		.nrunning = s->nrun,
		.queues = s->q,
		.nqueues = s->nq,
		.groups = s->g,
		.ngroups = s->ng,
		.keep = JF_ETA_KEEP,
	};
	struct jf_eta_out o = { .starts = starts, .finish_ms = finish };
	struct jf_error err;
	int64_t t0 = mono_ns();
	enum jf_err rc = jf_eta_simulate(&in, &o, &err);
	fig->sim_ns = mono_ns() - t0;
	fig->sim_passes = o.passes;
	fig->sims++;
	if (rc == JF_OK) {
		for (size_t i = 0; i < s->ng; i++) {
			out[i].gid = s->gid[i];
			memcpy(out[i].starts, &starts[i * JF_ETA_KEEP], sizeof(out[i].starts));
			out[i].finish_ms = finish[i];
		}
		*n = s->ng;
		qsort(out, *n, sizeof(*out), entry_cmp);
	}
	free(starts);
	free(finish);
	if (rc != JF_OK) {
		free(out);
		return NULL;
	}
	return out;
}

static void publish_eta(struct jf_whys *w, struct eta_entry *t, size_t n, int64_t at_ms)
{
	pthread_mutex_lock(&w->mu);
	struct eta_entry *old = w->eta;
	w->eta = t;
	w->neta = n;
	w->eta_at_ms = at_ms;
	pthread_mutex_unlock(&w->mu);
	free(old);
}

static void *worker(void *arg)
{
	struct jf_whys *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->todo && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
			break;
		struct snapshot *s = w->todo;
		w->todo = NULL;
		w->busy = true;
		struct jf_eta_figures fig = w->fig;
		pthread_mutex_unlock(&w->mu);
		size_t n;
		struct eta_entry *t = simulate(s, &n, &fig);
		int64_t at = s->at_ms;
		snapshot_free(s);
		if (t)
			publish_eta(w, t, n, at);
		pthread_mutex_lock(&w->mu);
		w->fig = fig;
		w->busy = false;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

enum jf_err jf_eng_why_init(struct jf_engine *e, enum jf_eta_mode mode)
{
	struct jf_whys *w = calloc(1, sizeof(*w));
	if (!w)
		return JF_ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	jf_idmap_init(&w->qdur);
	e->why = w;
	e->eta_mode = mode;
	return JF_OK;
}

void jf_eng_why_free(struct jf_engine *e)
{
	struct jf_whys *w = e->why;
	if (!w)
		return;
	if (w->thread) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->th, NULL);
	}
	snapshot_free(w->todo);
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&w->qdur, &i, &k, &v))
		free(v);
	jf_idmap_release(&w->qdur);
	free(w->why);
	free(w->eta);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
	e->why = NULL;
}

/* Does the simulation run here, and is it free to take a snapshot? */
static bool sim_ready(struct jf_engine *e)
{
	struct jf_whys *w = e->why;
	if (!w || e->delegated || e->eta_mode == JF_ETA_OFF)
		return false;
	if (e->eta_mode == JF_ETA_INLINE)
		return true;
	if (!e->view.shared)
		return false;
	pthread_mutex_lock(&w->mu);
	bool busy = w->busy || w->todo;
	pthread_mutex_unlock(&w->mu);
	return !busy;
}

/* How often a snapshot is taken: JF_ETA_REFRESH_MS, or five times what
 * the last simulation took, so that it never holds more than a fifth of a
 * core however big the cluster. */
static int64_t refresh_ms(struct jf_engine *e)
{
	struct jf_whys *w = e->why;
	pthread_mutex_lock(&w->mu);
	int64_t took = w->fig.sim_ns / 1000000;
	pthread_mutex_unlock(&w->mu);
	return 5 * took > JF_ETA_REFRESH_MS ? 5 * took : JF_ETA_REFRESH_MS;
}

/* Does this pass take a snapshot for the simulation? */
bool jf_eng_why_snapshot_due(struct jf_engine *e)
{
	if (!sim_ready(e))
		return false;
	int64_t now = jf_eng_now(e), snap = e->why->snap_ms;
	return !snap || now < snap || now - snap >= refresh_ms(e);
}

bool jf_eng_why_stale(struct jf_engine *e)
{
	if (!(e->why_waiting || e->why_dirty) || !sim_ready(e))
		return false;
	int64_t now = jf_eng_now(e), snap = e->why->snap_ms;
	if (now < snap)
		return true;
	int64_t every = refresh_ms(e);
	return now - snap >= (e->why_dirty              ? every
			      : every > JF_ETA_STALE_MS ? every
							: JF_ETA_STALE_MS);
}

/* The mean run time of g's finished tasks (ms); before any has finished,
 * that of the tasks of its queue's groups (of the batches, for a batch)
 * that ended while this daemon ran; 0 = none (the timeout is the bound). */
static int64_t mean_run(struct jf_engine *e, struct grt *g)
{
	if (!g->dur_loaded) {
		int64_t n = 0, sum = 0;
		if (jf_group_durations(e->st, g->id, &n, &sum) != JF_OK)
			return 0;
		g->dur_n = n;
		g->dur_sum_ms = sum;
		g->dur_loaded = true;
	}
	if (g->dur_n > 0)
		return g->dur_sum_ms / g->dur_n;
	const struct qdur *q = jf_idmap_get(&e->why->qdur, qdur_key(g));
	return q && q->n > 0 ? q->sum_ms / q->n : 0;
}

void jf_eng_why_task_ran(struct jf_engine *e, struct grt *g, int64_t run_ms)
{
	if (run_ms < 0 || !e->why)
		return;
	struct qdur *q = jf_idmap_get(&e->why->qdur, qdur_key(g));
	if (!q && (q = calloc(1, sizeof(*q))) && !jf_idmap_put(&e->why->qdur, qdur_key(g), q)) {
		free(q);
		q = NULL;
	}
	if (q) {
		q->n++;
		q->sum_ms += run_ms;
	}
	if (!g->dur_loaded)
		return; /* the first use reads them all from the store */
	g->dur_n++;
	g->dur_sum_ms += run_ms;
}

static struct snapshot *take_snapshot(struct jf_engine *e, const struct jf_why_pass *p)
{
	const struct jf_plan_in *in = p->in;
	struct snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	size_t nm = e->cluster->nmachines, nslots = 0;
	for (size_t i = 0; i < in->nrunning; i++)
		nslots += in->running[i].nslots;
	s->at_ms = in->now_ms;
	s->m = malloc((nm ? nm : 1) * sizeof(*s->m));
	s->run = calloc(in->nrunning ? in->nrunning : 1, sizeof(*s->run));
	s->slots = malloc((nslots ? nslots : 1) * sizeof(*s->slots));
	s->q = malloc((in->nqueues ? in->nqueues : 1) * sizeof(*s->q));
	s->g = calloc(in->ngroups ? in->ngroups : 1, sizeof(*s->g));
	s->gid = calloc(in->ngroups ? in->ngroups : 1, sizeof(*s->gid));
	if (!s->m || !s->run || !s->slots || !s->q || !s->g || !s->gid) {
		snapshot_free(s);
		return NULL;
	}
	s->nm = nm;
	memcpy(s->m, p->before, nm * sizeof(*s->m));
	s->nq = in->nqueues;
	if (in->nqueues)
		memcpy(s->q, in->queues, in->nqueues * sizeof(*s->q));
	/* the first JF_ETA_MAX_GROUPS in the planner's order: a later group
	 * never delays an earlier one's reservation, and the rest keep the
	 * reservation's ETA */
	s->ng = in->ngroups < JF_ETA_MAX_GROUPS ? in->ngroups : JF_ETA_MAX_GROUPS;
	for (size_t i = 0; i < s->ng; i++) {
		struct grt *g = jf_eng_group(e, in->groups[i].id);
		s->g[i].g = in->groups[i];
		s->g[i].duration_ms = g ? mean_run(e, g) : 0;
		s->gid[i] = in->groups[i].id;
		if (g)
			g->why_index = i + 1; /* for the running tasks below */
	}
	size_t at = 0;
	for (size_t i = 0; i < in->nrunning; i++) {
		const struct jf_plan_running *r = &in->running[i];
		memcpy(&s->slots[at], r->slots, r->nslots * sizeof(*r->slots));
		struct grt *g = jf_eng_group(e, p->run_gid[i]);
		size_t gi = g && g->why_index ? g->why_index - 1 : SIZE_MAX;
		if (gi != SIZE_MAX && (gi >= s->ng || in->groups[gi].id != g->id))
			gi = SIZE_MAX;
		int64_t mean = g ? mean_run(e, g) : 0;
		int64_t end = r->end_ms;
		if (mean > 0 && p->run_start_ms[i] > 0 && p->run_start_ms[i] < NO_BOUND - mean &&
		    p->run_start_ms[i] + mean < end)
			end = p->run_start_ms[i] + mean;
		s->run[i] = (struct jf_eta_running){ &s->slots[at], r->nslots, r->queue,
						     r->end_ms,     end,       gi };
		at += r->nslots;
	}
	for (size_t i = 0; i < s->ng; i++) {
		struct grt *g = jf_eng_group(e, in->groups[i].id);
		if (g)
			g->why_index = 0;
	}
	s->nrun = in->nrunning;
	return s;
}

static void hand_over(struct jf_engine *e, struct snapshot *s)
{
	struct jf_whys *w = e->why;
	w->snap_ms = s->at_ms;
	if (e->eta_mode == JF_ETA_INLINE) {
		size_t n;
		struct eta_entry *t = simulate(s, &n, &w->fig);
		if (t)
			publish_eta(w, t, n, s->at_ms);
		snapshot_free(s);
		return;
	}
	pthread_mutex_lock(&w->mu);
	if (!w->thread) {
		if (pthread_create(&w->th, NULL, worker, w) != 0) {
			pthread_mutex_unlock(&w->mu);
			snapshot_free(s);
			return; /* the reservation's ETAs only */
		}
		w->thread = true;
	}
	struct snapshot *old = w->todo;
	w->todo = s;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	snapshot_free(old);
}

/* "queues/q/groups/a" or "tasks/b" */
static void group_path(const struct grt *g, char *buf, size_t n)
{
	if (g->queue[0])
		snprintf(buf, n, "queues/%s/groups/%s", g->queue, g->dirname);
	else
		snprintf(buf, n, "tasks/%s", g->dirname);
}

/*
 * Who holds the most of a model's GPUs (model >= 0), or of the nodes of
 * CPU-only machines (model -1), among the running tasks: "queues/q/groups/a
 * (2 tasks, 16 GPUs)" and how many other groups hold some.
 */
static void holders(struct jf_engine *e, const struct jf_why_pass *p, int model, char *buf,
		    size_t n)
{
	const struct jf_plan_in *in = p->in;
	buf[0] = '\0';
	unsigned stamp = ++e->why_stamp;
	for (size_t i = 0; i < in->nrunning; i++) {
		const struct jf_plan_running *r = &in->running[i];
		int64_t amount = 0;
		for (size_t k = 0; k < r->nslots; k++) {
			const struct jf_sched_machine *m = &e->machines[r->slots[k].machine];
			if (model >= 0 && m->model == model)
				amount += jf_popcount64(r->slots[k].gpu_mask);
			else if (model < 0 && m->gpus == 0)
				amount++;
		}
		struct grt *g = amount ? jf_eng_group(e, p->run_gid[i]) : NULL;
		if (!g)
			continue;
		if (g->hold_stamp != stamp) {
			g->hold_stamp = stamp;
			g->hold_amount = g->hold_tasks = 0;
		}
		g->hold_amount += amount;
		g->hold_tasks++;
	}
	/* the most, and how many others: each group once */
	struct grt *top = NULL;
	int64_t groups = 0;
	unsigned seen = ++e->why_stamp;
	for (size_t i = 0; i < in->nrunning; i++) {
		struct grt *g = jf_eng_group(e, p->run_gid[i]);
		if (!g || g->hold_stamp != stamp)
			continue;
		g->hold_stamp = seen;
		groups++;
		if (!top || g->hold_amount > top->hold_amount)
			top = g;
	}
	if (!top)
		return;
	char path[300];
	group_path(top, path, sizeof(path));
	const char *unit = model >= 0 ? "GPU" : "node";
	int k = snprintf(buf, n, "%s (%lld task%s, %lld %s%s)", path, (long long)top->hold_tasks,
			 top->hold_tasks == 1 ? "" : "s", (long long)top->hold_amount, unit,
			 top->hold_amount == 1 ? "" : "s");
	if (groups > 1 && k > 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, " and %lld other group%s", (long long)(groups - 1),
			 groups == 2 ? "" : "s");
}

void jf_eng_why_pass(struct jf_engine *e, const struct jf_why_pass *p)
{
	struct jf_whys *w = e->why;
	if (!w)
		return;
	int64_t t0 = mono_ns();
	const struct jf_plan_in *in = p->in;
	/* each group's running tasks: the earliest and the latest end bound */
	unsigned stamp = ++e->why_stamp;
	for (size_t i = 0; i < in->nrunning; i++) {
		struct grt *g = jf_eng_group(e, p->run_gid[i]);
		if (!g)
			continue;
		if (g->why_stamp != stamp) {
			g->why_stamp = stamp;
			g->why_first_end = g->why_last_end = in->running[i].end_ms;
		}
		if (in->running[i].end_ms < g->why_first_end)
			g->why_first_end = in->running[i].end_ms;
		if (in->running[i].end_ms > g->why_last_end)
			g->why_last_end = in->running[i].end_ms;
	}
	for (size_t i = 0; i < p->nwg; i++) {
		struct grt *g = jf_eng_group(e, p->wg[i].id);
		p->wg[i].next_end_ms = g && g->why_stamp == stamp ? g->why_first_end : 0;
	}
	struct jf_wait *out = calloc(p->nwg ? p->nwg : 1, sizeof(*out));
	struct why_entry *t = calloc(p->nwg ? p->nwg : 1, sizeof(*t));
	int64_t *last = calloc(p->nwg ? p->nwg : 1, sizeof(*last));
	if (!out || !t || !last) {
		free(out);
		free(t);
		free(last);
		return;
	}
	for (size_t i = 0; i < p->nwg; i++) {
		struct grt *g = jf_eng_group(e, p->wg[i].id);
		last[i] = g && g->why_stamp == stamp ? g->why_last_end : 0;
	}
	jf_why_compute(in, p->plan, p->wg, p->nwg, out);
	const char *model_names[JF_CLUSTER_MAX_MODELS];
	size_t nmodels = e->cluster->nmodels;
	for (size_t m = 0; m < nmodels && m < JF_CLUSTER_MAX_MODELS; m++)
		model_names[m] = e->cluster->models[m].name;
	char held[400];
	int held_model = -2; /* the model `held` is of */
	size_t n = 0;
	bool waiting = false;
	for (size_t i = 0; i < p->nwg; i++) {
		const struct jf_why_group *wg = &p->wg[i];
		struct grt *g = jf_eng_group(e, wg->id);
		if (!g)
			continue;
		struct why_entry *x = &t[n];
		*x = (struct why_entry){ .gid = wg->id,
					 .reason = out[i].reason,
					 .position = out[i].position,
					 .eta_ms = out[i].eta_ms };
		const struct jf_plan_group *pg =
			wg->gate == JF_REASON_NONE && wg->plan < in->ngroups ? &in->groups[wg->plan]
									     : NULL;
		if (out[i].reason == JF_REASON_NONE) {
			/* nothing waits: when it ends at the latest, if all is bounded */
			if (!pg)
				continue;
			int64_t started = 0;
			for (size_t s = 0; s < p->plan->nstarts; s++)
				started += p->plan->starts[s].group == wg->plan;
			int64_t end = last[i];
			if (started && pg->timeout_ms > 0 && in->now_ms + pg->timeout_ms > end)
				end = in->now_ms + pg->timeout_ms;
			if (started && pg->timeout_ms <= 0)
				end = NO_BOUND;
			x->finish_ms = end > 0 && end < NO_BOUND ? end : 0;
			n++;
			continue;
		}
		waiting = true;
		if (pg && out[i].reason == JF_REASON_UNSCHEDULABLE) {
			/* the words its message says, from the same table as its reason */
			for (size_t k = 0; k < p->plan->nskips; k++)
				if (p->plan->skips[k].group == wg->plan)
					snprintf(x->message, sizeof(x->message), "%s",
						 jf_eng_skip_message(p->plan->skips[k].why));
		} else if (pg) {
			if (out[i].reason == JF_REASON_RESOURCES) {
				int model = pg->req.gpus > 0 ? pg->req.model : -1;
				if (model != held_model) {
					holders(e, p, model, held, sizeof(held));
					held_model = model;
				}
			}
			struct jf_why_cluster c = {
				.m = e->machines,
				.nm = e->cluster->nmachines,
				.model_names = model_names,
				.nmodels = nmodels,
				.queue_name = g->queue,
				.holders = out[i].reason == JF_REASON_RESOURCES ? held : "",
			};
			jf_why_message(&out[i], in, pg, p->plan, &c, x->message,
				       sizeof(x->message));
		}
		n++;
	}
	free(out);
	free(last);
	qsort(t, n, sizeof(*t), entry_cmp);
	pthread_mutex_lock(&w->mu);
	struct why_entry *old = w->why;
	w->why = t;
	w->nwhy = n;
	pthread_mutex_unlock(&w->mu);
	free(old);
	e->why_waiting = waiting;
	w->fig.why_ns = mono_ns() - t0;
	w->fig.whys++;
	/* a pass that changed what waits but came too soon after the last
	 * snapshot: the tick asks for one when the interval is over */
	e->why_dirty = !p->before && p->nwg > 0;
	if (p->before) {
		struct snapshot *s = take_snapshot(e, p);
		if (s)
			hand_over(e, s);
	}
}

void jf_engine_eta_figures(struct jf_engine *e, struct jf_eta_figures *out)
{
	memset(out, 0, sizeof(*out));
	struct jf_whys *w = e->why;
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	*out = w->fig;
	pthread_mutex_unlock(&w->mu);
}

static const char *pick(int64_t sim, int64_t resv, int64_t now, int64_t *at)
{
	if (sim > 0 && sim >= now - 1000) {
		if (resv > 0 && resv < sim) {
			*at = resv;
			return "reservation";
		}
		*at = sim;
		return "simulation";
	}
	*at = resv > 0 ? resv : 0;
	return resv > 0 ? "reservation" : "";
}

bool jf_engine_why(struct jf_engine *e, int64_t group_id, int64_t rank, struct jf_engine_why *out)
{
	memset(out, 0, sizeof(*out));
	out->eta_basis = out->finish_basis = "";
	struct jf_whys *w = e->why;
	if (!w)
		return false;
	int64_t now = jf_engine_now(e);
	pthread_mutex_lock(&w->mu);
	const struct why_entry *x =
		w->why ? bsearch(&group_id, w->why, w->nwhy, sizeof(*w->why), entry_cmp) : NULL;
	const struct eta_entry *y =
		w->eta ? bsearch(&group_id, w->eta, w->neta, sizeof(*w->eta), entry_cmp) : NULL;
	if (x) {
		snprintf(out->reason, sizeof(out->reason), "%s", jf_reason_name(x->reason));
		snprintf(out->message, sizeof(out->message), "%s", x->message);
		out->position = x->position;
		out->eta_resv_ms = rank == 0 ? x->eta_ms : 0;
		out->finish_resv_ms = x->finish_ms;
	}
	if (y) {
		out->eta_sim_ms = rank >= 0 && rank < JF_ETA_KEEP ? y->starts[rank] : 0;
		out->finish_sim_ms = y->finish_ms;
	}
	pthread_mutex_unlock(&w->mu);
	if (!x)
		return false;
	if (x->reason != JF_REASON_NONE)
		out->eta_basis = pick(out->eta_sim_ms, out->eta_resv_ms, now, &out->eta_ms);
	out->finish_basis = pick(out->finish_sim_ms, out->finish_resv_ms, now, &out->finish_ms);
	return true;
}

/* ---- a scheduling backend's (Slurm): its reasons and expected starts ---- */

struct dlg {
	struct jf_engine *e;
	struct jf_why_group *wg;
	int64_t *eta;
	size_t n, cap, cap2;
	bool oom;
};

static int dlg_group(void *ctx, int64_t gid)
{
	struct dlg *d = ctx;
	struct grt *g = jf_eng_group(d->e, gid);
	int64_t c[JF_ST__COUNT];
	if (!g || jf_group_count_tasks(d->e->st, gid, c) != JF_OK || c[JF_ST_WAITING] <= 0)
		return 0;
	struct jf_group_rec rec;
	if (jf_group_get(d->e->st, gid, &rec) != JF_OK)
		return 0;
	unsigned flags = rec.flags;
	jf_group_release(&rec);
	enum jf_reason r = jf_eng_flags_reason(flags);
	if (r == JF_REASON_NONE)
		r = jf_reason_lookup(g->be_reason);
	if (r == JF_REASON_NONE)
		return 0; /* not told why yet */
	size_t cap = d->cap;
	if (!jf_grow(&d->wg, &cap, d->n + 1, sizeof(*d->wg)) ||
	    !jf_grow(&d->eta, &d->cap, d->n + 1, sizeof(*d->eta))) {
		d->oom = true;
		return 1;
	}
	d->wg[d->n] = (struct jf_why_group){ gid, g->queue_id, r, 0, 0 };
	d->eta[d->n] = g->be_eta_ms;
	d->n++;
	return 0;
}

void jf_eng_why_delegated(struct jf_engine *e)
{
	struct jf_whys *w = e->why;
	if (!w)
		return;
	struct dlg d = { .e = e };
	jf_group_list_active(e->st, dlg_group, &d);
	struct jf_wait *out = calloc(d.n ? d.n : 1, sizeof(*out));
	struct why_entry *t = calloc(d.n ? d.n : 1, sizeof(*t));
	if (d.oom || !out || !t) {
		free(out);
		free(t);
		free(d.wg);
		free(d.eta);
		return;
	}
	struct jf_plan plan;
	jf_plan_init(&plan);
	struct jf_plan_in in = { .now_ms = jf_eng_now(e) };
	jf_why_compute(&in, &plan, d.wg, d.n, out);
	for (size_t i = 0; i < d.n; i++)
		t[i] = (struct why_entry){ .gid = d.wg[i].id,
					   .reason = out[i].reason,
					   .position = out[i].position,
					   .eta_ms = d.eta[i] };
	qsort(t, d.n, sizeof(*t), entry_cmp);
	pthread_mutex_lock(&w->mu);
	struct why_entry *old = w->why;
	w->why = t;
	w->nwhy = d.n;
	pthread_mutex_unlock(&w->mu);
	free(old);
	free(out);
	free(d.wg);
	free(d.eta);
}

enum jf_reason jf_eng_flags_reason(unsigned flags)
{
	return (flags & JF_GF_DEPENDENCY)  ? JF_REASON_DEPENDENCY
	       : (flags & JF_GF_BUDGET)    ? JF_REASON_BUDGET
	       : (flags & JF_GF_IMAGEPULL) ? JF_REASON_IMAGEPULL
	       : (flags & JF_GF_WINDOW)    ? JF_REASON_WINDOW
	       : (flags & JF_GF_SYNCING)   ? JF_REASON_SYNCING
					   : JF_REASON_NONE;
}
