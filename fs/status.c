/*
 * status.c - the `status` and `status.json` of queues, groups, batches,
 * tasks, nodes, a node's attempts and machines.
 *
 * Each object's status is built once as a JSON object (jansson keeps keys
 * in insertion order) and printed either as JSON or as `key: value` YAML.
 * Keys follow reference 3: state, name, message, created, started, finished,
 * cost, duration, node_seconds, then the counts of groups and queues or the
 * index/attempt of tasks and nodes; an attempt of a node (reference 9.2)
 * shows what its node shows of a run, as it was in that attempt.  Times
 * are RFC 3339 UTC, "" if none.
 */
#include "fs/fs_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/billing.h"
#include "core/budget.h"
#include "core/deps.h"
#include "core/lifecycle.h"
#include "core/quantity.h"
#include "core/timefmt.h"
#include "fs/images.h"

static void put_str(json_t *o, const char *k, const char *v)
{
	json_object_set_new(o, k, json_string(v ? v : ""));
}

static void put_int(json_t *o, const char *k, int64_t v)
{
	json_object_set_new(o, k, json_integer(v));
}

static void put_time(json_t *o, const char *k, int64_t ms)
{
	char buf[40];
	jf_time_rfc3339(ms, buf, sizeof(buf));
	put_str(o, k, buf);
}

/* What put_common read of the ledger: the estimate of a group builds on it. */
struct costs {
	int64_t amount, rate, open;
};

static void put_common(struct jf_fs *fs, json_t *o, enum jf_scope scope, int64_t id,
		       int64_t created, int64_t started, int64_t finished, int64_t from_ms,
		       struct costs *out)
{
	const struct jf_cluster *c = jf_engine_cluster(fs->e);
	int64_t now = jf_engine_now(fs->e);
	int64_t amount = 0, seconds = 0, rate = 0, open = 0;
	/* one pass over the open segments for the cost, its rate and the
	 * open part (a group of 1,000 running tasks: 1,000 rows) */
	if (id)
		jf_ledger_sum_rate(ST(fs), scope, id, now, &amount, &seconds, &rate, &open);
	if (out)
		*out = (struct costs){ amount, rate, open };
	char money[64], dur[64];
	jf_money_format(amount, c->currency, money, sizeof(money));
	put_time(o, "created", created);
	put_time(o, "started", started);
	put_time(o, "finished", finished);
	put_str(o, "cost", money);
	/* the same amount for programs: integer micro-units and the currency,
	 * so nobody parses the decimals of the string */
	put_int(o, "cost_micro", amount);
	put_str(o, "currency", c->currency);
	jf_put_cost_rate(fs, o, rate);
	int64_t d = 0;
	if (from_ms > 0)
		d = ((finished > 0 ? finished : now) - from_ms) / 1000;
	if (d < 0)
		d = 0;
	jf_duration_format(d, dur, sizeof(dur));
	put_str(o, "duration", dur);
	put_int(o, "duration_seconds", d);
	put_int(o, "node_seconds", seconds);
}

static void put_counts(json_t *o, const int64_t *c, int64_t completions, int64_t parallelism)
{
	char prog[64];
	put_int(o, "completions", completions);
	put_int(o, "parallelism", parallelism);
	put_int(o, "succeeded", c[JF_ST_SUCCEEDED]);
	put_int(o, "failed", c[JF_ST_FAILED]);
	put_int(o, "running", c[JF_ST_RUNNING] + c[JF_ST_INITIALIZING]);
	put_int(o, "waiting", c[JF_ST_WAITING]);
	put_int(o, "preempted", c[JF_ST_PREEMPTED]);
	put_int(o, "paused", c[JF_ST_PAUSED]);
	put_int(o, "stopped", c[JF_ST_STOPPED]);
	snprintf(prog, sizeof(prog), "%lld/%lld", (long long)c[JF_ST_SUCCEEDED],
		 (long long)completions);
	put_str(o, "progress", prog);
}

/* Reference 10: the queue's budget, what is left of it within its period
 * (the amounts as `cost` writes them), the period and the action; without
 * a budget "unlimited". */
static void put_budget(struct jf_fs *fs, json_t *o, const struct jf_queue_rec *q)
{
	const struct jf_cluster *c = jf_engine_cluster(fs->e);
	struct jf_queue_spec s;
	memset(&s, 0, sizeof(s));
	if (q->spec && q->spec[0] &&
	    jf_queue_spec_parse(q->spec, strlen(q->spec), &s, NULL) != JF_OK)
		memset(&s, 0, sizeof(s));
	char budget[64], left[64], spent[64], period[32] = "lifetime";
	if (s.budget_period > 0)
		jf_duration_format(s.budget_period, period, sizeof(period));
	if (!s.budget_set) {
		put_str(o, "budget", "unlimited");
		put_str(o, "budget_left", "unlimited");
	} else {
		int64_t now = jf_engine_now(fs->e), base = 0, used = 0;
		struct jf_budget_seg *segs = NULL;
		size_t n = 0;
		if (jf_ledger_budget_segs(ST(fs), q->id, s.budget_period, now, &segs, &n, &base) ==
		    JF_OK)
			used = jf_budget_spent(segs, n, base, now, s.budget_period);
		free(segs);
		jf_money_format(s.budget, c->currency, budget, sizeof(budget));
		jf_money_format(s.budget > used ? s.budget - used : 0, c->currency, left,
				sizeof(left));
		jf_money_format(used, c->currency, spent, sizeof(spent));
		put_str(o, "budget", budget);
		put_str(o, "budget_left", left);
		put_str(o, "budget_spent", spent);
	}
	put_str(o, "budget_period", period);
	put_str(o, "budget_action", s.budget_stop ? "stop" : "hold");
	jf_queue_spec_release(&s);
}

static json_t *queue_status(struct jf_fs *fs, int64_t id)
{
	struct jf_queue_rec q;
	if (jf_queue_get(ST(fs), id, &q) != JF_OK)
		return NULL;
	json_t *o = json_object();
	int64_t c[JF_ST__COUNT];
	jf_queue_count_tasks(ST(fs), id, JF_KIND_GROUP, c);
	int64_t held = 0;
	jf_queue_running_nodes(ST(fs), id, &held);
	int64_t total = 0;
	for (int i = 0; i < JF_ST__COUNT; i++)
		total += c[i];
	jf_queue_count_preempted(ST(fs), id, JF_KIND_GROUP, &c[JF_ST_PREEMPTED]);
	const char *state = held > 0 ? "Running" : c[JF_ST_WAITING] > 0 ? "Waiting" : "Idle";
	put_str(o, "state", state);
	put_str(o, "name", q.name);
	put_str(o, "message", q.message);
	/* wall time from its groups' first start to now while it has work, to
	 * their last end once idle: an idle queue's status does not change */
	int64_t first = 0, last = 0;
	jf_queue_span(ST(fs), id, &first, &last);
	bool idle = strcmp(state, "Idle") == 0;
	struct costs costs = { 0, 0, 0 };
	put_common(fs, o, JF_SCOPE_QUEUE, id, q.created_ms, first, idle ? last : 0, first, &costs);
	put_counts(o, c, total, 0);
	json_object_del(o, "parallelism");
	/* 0 in the store is no limit: say so, not 0 */
	if (q.capacity > 0)
		put_int(o, "capacity", q.capacity);
	else
		put_str(o, "capacity", "unlimited");
	put_int(o, "nodes_held", held);
	jf_put_queue_estimate(fs, o, id, costs.amount, costs.open, c);
	jf_put_spot_savings(fs, o, JF_SCOPE_QUEUE, id, true);
	put_int(o, "group_timeout_seconds", q.group_timeout);
	put_budget(fs, o, &q);
	jf_queue_release(&q);
	return o;
}

/* The reason keys of a group or a task (reference 9.1); w NULL: the
 * engine has not seen it waiting (the gates' flags still say why). */
static void put_why_keys(json_t *o, const char *reason, int64_t position, int64_t eta,
			 const char *basis)
{
	put_str(o, "reason", reason);
	if (position > 0)
		put_int(o, "position", position);
	else
		put_str(o, "position", "");
	put_time(o, "eta", eta);
	put_str(o, "eta_basis", eta > 0 ? basis : "");
}

static void put_why(json_t *o, const struct jf_group_rec *g, const struct jf_engine_why *w)
{
	const char *reason = w ? w->reason : "";
	/* before the engine's first pass has seen it: what its flags say (a
	 * running group whose other tasks its queue's budget holds back too) */
	if (!reason[0] && (g->state == JF_ST_WAITING || g->state == JF_ST_RUNNING) &&
	    (g->flags & JF_GF_BUDGET))
		reason = "Budget";
	else if (!reason[0] && g->state == JF_ST_WAITING)
		reason = (g->flags & JF_GF_IMAGEPULL)    ? "ImagePull"
			 : (g->flags & JF_GF_WINDOW)     ? "Window"
			 : (g->flags & JF_GF_SYNCING)    ? "Syncing"
			 : (g->flags & JF_GF_DEPENDENCY) ? "Dependency"
							 : "";
	put_why_keys(o, reason, w && w->reason[0] ? w->position : 0,
		     w && w->reason[0] ? w->eta_ms : 0, w ? w->eta_basis : "");
	bool running = g->state == JF_ST_RUNNING;
	put_time(o, "eta_finish", running && w ? w->finish_ms : 0);
	put_str(o, "eta_finish_basis", running && w && w->finish_ms > 0 ? w->finish_basis : "");
}

/* One after: entry as its status shows it: the target's path now, when,
 * each, and what it says (holds, waits, never). */
static int put_dep(void *ctx, const struct jf_dep_rec *r)
{
	json_t *o = json_object();
	put_str(o, "group", r->path);
	put_str(o, "when", jf_dep_when_name((enum jf_dep_when)r->when));
	json_object_set_new(o, "each", json_boolean(r->each));
	put_str(o, "state", jf_dep_verdict_name((enum jf_dep_verdict)r->state));
	json_array_append_new(ctx, o);
	return 0;
}

static json_t *group_status(struct jf_fs *fs, int64_t id)
{
	struct jf_group_rec g;
	if (jf_group_get(ST(fs), id, &g) != JF_OK)
		return NULL;
	json_t *o = json_object();
	put_str(o, "state", jf_state_name(g.state));
	put_str(o, "name", g.display);
	const char *msg = g.message;
	if (g.state == JF_ST_DRAFT)
		msg = "write spec.yaml to submit";
	char tbuf[512];
	const char *trouble = jf_engine_view_trouble(fs->e, tbuf, sizeof(tbuf)) ? tbuf : NULL;
	char both[1024];
	if (trouble &&
	    (g.state == JF_ST_WAITING || g.state == JF_ST_RUNNING || g.state == JF_ST_PAUSED)) {
		/* what it shows may be old: say why first */
		if (msg && msg[0]) {
			snprintf(both, sizeof(both), "%s (last known: %s)", trouble, msg);
			msg = both;
		} else {
			msg = trouble;
		}
	}
	/* why it waits and when it starts, as of the engine's last pass
	 * (reference 9.1); its own message when the reason is a gate's */
	struct jf_engine_why why;
	bool live = g.state == JF_ST_WAITING || g.state == JF_ST_RUNNING;
	bool known = live && jf_engine_why(fs->e, id, 0, &why);
	if (known && why.reason[0] && why.message[0] && g.state == JF_ST_WAITING && !trouble)
		msg = why.message;
	put_str(o, "message", msg);
	put_why(o, &g, known ? &why : NULL);
	put_str(o, "kind", g.kind == JF_KIND_BATCH ? "batch" : "group");
	struct costs costs = { 0, 0, 0 };
	put_common(fs, o, JF_SCOPE_GROUP, id, g.created_ms, g.started_ms, g.finished_ms,
		   g.submitted_ms, &costs);
	int64_t c[JF_ST__COUNT];
	jf_group_count_tasks(ST(fs), id, c);
	jf_group_count_preempted(ST(fs), id, &c[JF_ST_PREEMPTED]);
	put_counts(o, c, g.completions, g.parallelism);
	jf_put_group_estimate(fs, o, &g, costs.amount, costs.open, c);
	const struct jf_spec *s = jf_fs_spec(fs, &g);
	jf_put_spot_savings(fs, o, JF_SCOPE_GROUP, id, !s || s->billing == JF_BILL_SPOT);
	if (s) {
		put_str(o, "billing", s->billing == JF_BILL_SPOT ? "spot" : "on-demand");
		put_str(o, "gpu", s->gpu && s->gpus > 0 ? s->gpu : "");
		put_int(o, "gpus", s->gpu ? s->gpus : 0);
		put_int(o, "nodes", s->nodes);
		if (g.kind == JF_KIND_BATCH)
			put_int(o, "count", s->count);
		put_int(o, "failures", g.failures);
		if (s->max_failures >= 0)
			put_int(o, "max_failures", s->max_failures);
	}
	json_t *ign = json_array();
	for (char *p = g.ignored, *nl; p && *p; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		json_array_append_new(ign, nl ? json_stringn(p, (size_t)(nl - p)) : json_string(p));
		if (!nl)
			break;
	}
	json_object_set_new(o, "ignored", ign);
	/* reference 10: what it waits for, one entry per after: entry */
	json_t *after = json_array();
	jf_dep_list(ST(fs), id, put_dep, after);
	json_object_set_new(o, "after", after);
	jf_group_release(&g);
	return o;
}

/*
 * One rule for names: a group's is its display name, a task's its group's
 * followed by /tasks/<index> (a batch's tasks: the pod-style <index+1>-<batch>;
 * a renamed task: its new name), a node's its task's followed by
 * /nodes/<index>.
 */
static void task_name(const struct jf_group_rec *g, const struct jf_task_rec *t, char *buf,
		      size_t n)
{
	if (t->display)
		snprintf(buf, n, "%s", t->display);
	else if (g->kind == JF_KIND_BATCH)
		snprintf(buf, n, "%lld-%s", (long long)t->idx + 1, g->display);
	else
		snprintf(buf, n, "%s/tasks/%lld", g->display, (long long)t->idx);
}

static json_t *task_status(struct jf_fs *fs, int64_t id)
{
	struct jf_task_rec t;
	if (jf_task_get(ST(fs), id, &t) != JF_OK)
		return NULL;
	struct jf_group_rec g;
	if (jf_group_get(ST(fs), t.group_id, &g) != JF_OK) {
		jf_task_release(&t);
		return NULL;
	}
	json_t *o = json_object();
	char name[200];
	task_name(&g, &t, name, sizeof(name));
	put_str(o, "state", jf_state_name(t.state));
	put_str(o, "name", name);
	put_str(o, "message", t.message);
	put_common(fs, o, JF_SCOPE_TASK, id, g.submitted_ms, t.started_ms, t.finished_ms,
		   t.started_ms, NULL);
	/* a waiting task waits for its group's reason; its ETA is its own
	 * (its rank among the group's waiting tasks, reference 9.1) */
	struct jf_engine_why why;
	int64_t rank = 0;
	bool known = t.state == JF_ST_WAITING &&
		     jf_task_waiting_before(ST(fs), t.group_id, t.idx, &rank) == JF_OK &&
		     jf_engine_why(fs->e, t.group_id, rank, &why) && why.reason[0];
	put_why_keys(o, known ? why.reason : "", known ? why.position : 0, known ? why.eta_ms : 0,
		     known ? why.eta_basis : "");
	put_int(o, "index", t.idx);
	put_int(o, "attempt", t.attempt);
	const struct jf_spec *s = jf_fs_spec(fs, &g);
	if (s && s->retries >= 0) {
		int64_t left = s->retries - t.failures;
		put_int(o, "retries_left", left > 0 ? left : 0);
	} else {
		put_str(o, "retries_left", "unlimited");
	}
	put_int(o, "failures", t.failures);
	put_int(o, "nodes", g.nodes);
	jf_group_release(&g);
	jf_task_release(&t);
	return o;
}

/* A node's name (see task_name) and when it came to be: its group's
 * submission (it exists, as its task does, from then). */
static void node_name(struct jf_fs *fs, const struct jf_task_rec *t, int64_t idx, char *buf,
		      size_t n, int64_t *created)
{
	char tname[200];
	struct jf_group_rec g;
	*created = 0;
	if (jf_group_get(ST(fs), t->group_id, &g) == JF_OK) {
		task_name(&g, t, tname, sizeof(tname));
		*created = g.submitted_ms;
		jf_group_release(&g);
	} else {
		snprintf(tname, sizeof(tname), "%lld", (long long)t->idx);
	}
	snprintf(buf, n, "%s/nodes/%lld", tname, (long long)idx);
}

/* What a run had and how it ended, as a node and each of its attempts show
 * it: where (machine, GPUs), its process, its exit, what it ran (reference
 * 8.1: the first container's image) and the Kubernetes word for its end. */
struct run_facts {
	const char *machine, *gpu_ids;
	int64_t pid;   /* 0: none (yet) */
	int exit_code; /* -1: none (yet) */
	const char *images, *image_digest, *runtime, *reason;
};

static void put_run(json_t *o, const struct run_facts *r)
{
	put_str(o, "machine", r->machine);
	int gpus = 0;
	if (r->gpu_ids && r->gpu_ids[0]) {
		gpus = 1;
		for (const char *p = r->gpu_ids; *p; p++)
			gpus += *p == ',';
	}
	put_int(o, "gpus", gpus);
	put_str(o, "cuda_visible_devices", r->gpu_ids);
	if (r->pid > 0)
		put_int(o, "pid", r->pid);
	else
		put_str(o, "pid", "");
	if (r->exit_code >= 0)
		put_int(o, "exit_code", r->exit_code);
	else
		put_str(o, "exit_code", "");
	char image[1100] = "";
	if (r->images) {
		const char *comma = strchr(r->images, ',');
		size_t len = comma ? (size_t)(comma - r->images) : strlen(r->images);
		snprintf(image, sizeof(image), "%.*s", (int)(len < 1024 ? len : 1024), r->images);
	}
	put_str(o, "image", image);
	put_str(o, "image_digest", r->image_digest);
	put_str(o, "runtime", r->runtime);
	put_str(o, "reason", r->reason);
}

static json_t *node_status(struct jf_fs *fs, int64_t ino_id)
{
	int64_t task_id = ino_id >> JF_NODE_BITS, idx = ino_id & JF_NODE_MASK;
	struct jf_task_rec t;
	if (jf_task_get(ST(fs), task_id, &t) != JF_OK)
		return NULL;
	struct jf_node_rec n;
	bool ran = jf_node_find(ST(fs), task_id, idx, &n) == JF_OK;
	char name[240];
	int64_t created;
	node_name(fs, &t, idx, name, sizeof(name), &created);
	json_t *o = json_object();
	put_str(o, "state", jf_state_name(ran ? n.state : JF_ST_WAITING));
	put_str(o, "name", name);
	put_str(o, "message", ran ? n.message : "");
	put_common(fs, o, JF_SCOPE_NODE, ran ? n.id : 0, created, ran ? n.started_ms : 0,
		   ran ? n.finished_ms : 0, ran ? n.started_ms : 0, NULL);
	put_int(o, "index", idx);
	put_int(o, "attempt", ran ? n.attempt : 0);
	struct run_facts rf = { "", "", 0, -1, NULL, "", "", "" };
	if (ran)
		rf = (struct run_facts){ n.machine, n.gpu_ids,      n.pid,     n.exit_code,
					 n.images,  n.image_digest, n.runtime, n.reason };
	put_run(o, &rf);
	/* reference 8.2: where its ports are reached from this host */
	json_t *eps = json_array();
	for (const char *p = ran && n.endpoints ? n.endpoints : ""; *p;) {
		const char *sp = strchr(p, ' ');
		size_t len = sp ? (size_t)(sp - p) : strlen(p);
		if (len)
			json_array_append_new(eps, json_stringn(p, len));
		p += len + (sp ? 1 : 0);
	}
	json_object_set_new(o, "endpoints", eps);
	if (ran)
		jf_node_release(&n);
	jf_task_release(&t);
	return o;
}

/*
 * One attempt of a node (reference 9.2), from its own record: kept as it
 * ended while the node runs again.  Its times are its own (created: when
 * it was placed), its cost the ledger's rows of it; the one that runs now
 * says its node's message (a preemption under way).
 */
static json_t *attempt_status(struct jf_fs *fs, int64_t id)
{
	int64_t node_ino;
	struct jf_attempt_rec a;
	if (!jf_attempt_node(fs, id, &node_ino, &a))
		return NULL;
	struct jf_task_rec t;
	if (jf_task_get(ST(fs), node_ino >> JF_NODE_BITS, &t) != JF_OK) {
		jf_attempt_release(&a);
		return NULL;
	}
	char nname[240], name[280];
	int64_t submitted;
	node_name(fs, &t, node_ino & JF_NODE_MASK, nname, sizeof(nname), &submitted);
	snprintf(name, sizeof(name), "%s/attempts/%lld", nname, (long long)a.attempt);
	enum jf_state state = jf_attempt_state(a.start_ms, a.end_ms, a.end_state, a.exit_code);
	const char *msg = state == JF_ST_SUCCEEDED || !a.end_ms ? "" : a.reason;
	struct jf_node_rec n;
	bool have_n = !a.end_ms && jf_node_get(ST(fs), a.node_id, &n) == JF_OK;
	if (have_n && n.attempt_id == a.id)
		msg = n.message;
	json_t *o = json_object();
	put_str(o, "state", jf_state_name(state));
	put_str(o, "name", name);
	put_str(o, "message", msg);
	put_common(fs, o, JF_SCOPE_ATTEMPT, a.id, a.created_ms ? a.created_ms : submitted,
		   a.start_ms, a.end_ms, a.start_ms, NULL);
	put_int(o, "attempt", a.attempt);
	put_int(o, "node", node_ino & JF_NODE_MASK);
	struct run_facts rf = {
		a.machine, a.gpu_ids,      a.pid,     a.end_ms ? a.exit_code : -1,
		a.images,  a.image_digest, a.runtime, a.end_reason,
	};
	put_run(o, &rf);
	put_str(o, "cpuset", a.cpuset);
	if (have_n)
		jf_node_release(&n);
	jf_attempt_release(&a);
	jf_task_release(&t);
	return o;
}

static json_t *machine_status(struct jf_fs *fs, int64_t id)
{
	const struct jf_cluster *c = jf_engine_cluster(fs->e);
	if (id < 1 || (size_t)id > c->nmachines)
		return NULL;
	const struct jf_machine *m = &c->machines[id - 1];
	struct jf_view_machine vm;
	jf_engine_view_use(fs->e, (size_t)id - 1, &vm);
	const struct jf_machine_use u = vm.u;
	json_t *o = json_object();
	char buf[96];
	put_str(o, "name", m->name);
	put_str(o, "model", m->model != JF_MODEL_NONE ? c->models[m->model].name : "");
	put_int(o, "gpus", m->gpus);
	if (m->slurm_gpu) {
		/* what Slurm's GRES says, priced by a model or not */
		put_str(o, "slurm_gpu_type",
			m->slurm_gpus > 0 && !m->slurm_gpu[0] ? "(untyped)" : m->slurm_gpu);
		put_int(o, "slurm_gpus", m->slurm_gpus);
	}
	put_int(o, "gpus_free", m->gpus - __builtin_popcountll(u.gpu_mask));
	uint64_t all = m->gpus >= 64 ? ~UINT64_C(0) : ((UINT64_C(1) << m->gpus) - 1);
	buf[0] = '\0';
	size_t off = 0;
	for (int g = 0; g < m->gpus && off < sizeof(buf); g++)
		if ((all & ~u.gpu_mask) & (UINT64_C(1) << g))
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%d",
						off ? "," : "", g);
	put_str(o, "gpu_ids_free", buf);
	jf_cpu_format(m->cpu_milli, buf, sizeof(buf));
	put_str(o, "cpu", buf);
	jf_cpu_format(m->cpu_milli - u.cpu_milli, buf, sizeof(buf));
	put_str(o, "cpu_free", buf);
	jf_mem_format(m->mem_bytes, buf, sizeof(buf));
	put_str(o, "memory", buf);
	jf_mem_format(m->mem_bytes - u.mem_bytes, buf, sizeof(buf));
	put_str(o, "memory_free", buf);
	put_int(o, "running_nodes", u.nodes);
	if (u.state) {
		/* a scheduling backend's own word on the machine (slurm) */
		put_str(o, "backend", jf_engine_backend_name(fs->e));
		put_str(o, "backend_state", u.state);
		put_str(o, "partitions", u.partitions ? u.partitions : "");
	}
	return o;
}

/* ---- printing ---- */

static bool yaml_plain_ok(const char *s)
{
	static const char *const words[] = { "true",  "false", "yes",  "no",    "on",
					     "off",   "null",  "y",    "n",     "True",
					     "False", "Yes",   "No",   "On",    "Off",
					     "Null",  "NULL",  "TRUE", "FALSE", "~" };
	if (!*s)
		return false;
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '/' ||
			  (c == ' ' && p[1] && p[1] != ' ' && p[1] != '#');
		if (!ok)
			return false;
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(s, words[i]))
			return false;
	return true;
}

static void yaml_scalar(FILE *f, const char *s)
{
	if (yaml_plain_ok(s)) {
		fputs(s, f);
		return;
	}
	/* a JSON string is a valid YAML double-quoted scalar */
	json_t *j = json_string(s);
	char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	fputs(q ? q : "\"\"", f);
	free(q);
	json_decref(j);
}

/* A flat object as a YAML flow mapping on one line, "{a: x, b: true}"
 * (a list item of status: an after: entry).  Plain scalars never hold
 * the flow indicators (yaml_plain_ok), so they stay plain here too. */
static void yaml_flow(FILE *f, json_t *o)
{
	const char *k;
	json_t *v;
	size_t n = 0;
	fputc('{', f);
	json_object_foreach(o, k, v)
	{
		fprintf(f, "%s%s: ", n++ ? ", " : "", k);
		if (json_is_integer(v))
			fprintf(f, "%lld", (long long)json_integer_value(v));
		else if (json_is_boolean(v))
			fputs(json_is_true(v) ? "true" : "false", f);
		else
			yaml_scalar(f, json_string_value(v) ? json_string_value(v) : "");
	}
	fputc('}', f);
}

/* An object's members at indent (status files nest one level: a
 * source's last_sync, a sync's progress). */
static void yaml_members(FILE *f, json_t *o, int indent)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		fprintf(f, "%*s%s:", indent, "", k);
		if (json_is_integer(v)) {
			fprintf(f, " %lld\n", (long long)json_integer_value(v));
		} else if (json_is_real(v)) {
			fprintf(f, " %.3f\n", json_real_value(v));
		} else if (json_is_boolean(v)) {
			fputs(json_is_true(v) ? " true\n" : " false\n", f);
		} else if (json_is_object(v)) {
			fputs(json_object_size(v) ? "\n" : " {}\n", f);
			if (indent < 8)
				yaml_members(f, v, indent + 2);
		} else if (json_is_array(v)) {
			if (json_array_size(v) == 0)
				fputs(" []\n", f);
			else
				fputc('\n', f);
			size_t i;
			json_t *it;
			json_array_foreach(v, i, it)
			{
				fprintf(f, "%*s- ", indent, "");
				if (json_is_object(it))
					yaml_flow(f, it);
				else
					yaml_scalar(f, json_string_value(it) ? json_string_value(it)
									     : "");
				fputc('\n', f);
			}
		} else {
			fputc(' ', f);
			yaml_scalar(f, json_string_value(v) ? json_string_value(v) : "");
			fputc('\n', f);
		}
	}
}

static char *to_yaml(json_t *o, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	yaml_members(f, o, 0);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

int jf_render_status(struct jf_fs *fs, const struct jf_ino *ino, bool json, char **out, size_t *len)
{
	json_t *o = NULL;
	switch (ino->obj) {
	case JF_O_QUEUE:
		o = queue_status(fs, ino->id);
		break;
	case JF_O_GROUP:
		o = group_status(fs, ino->id);
		break;
	case JF_O_TASK:
		o = task_status(fs, ino->id);
		break;
	case JF_O_NODE:
		o = node_status(fs, ino->id);
		break;
	case JF_O_ATTEMPT:
		o = attempt_status(fs, ino->id);
		break;
	case JF_O_MACHINE:
		o = machine_status(fs, ino->id);
		break;
	case JF_O_IMAGE:
		o = jf_images_status(fs, ino->id);
		break;
	case JF_O_VOLUME:
	case JF_O_OBJSRC:
		o = jf_stores_status(fs, ino);
		break;
	default:
		return ENOENT;
	}
	if (!o)
		return ENOENT;
	char *s;
	if (json) {
		s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		if (s) {
			size_t n = strlen(s);
			char *t = realloc(s, n + 2);
			if (t) {
				s = t;
				s[n] = '\n';
				s[n + 1] = '\0';
			}
		}
		*len = s ? strlen(s) : 0;
	} else {
		s = to_yaml(o, len);
	}
	json_decref(o);
	if (!s)
		return ENOMEM;
	*out = s;
	return 0;
}
