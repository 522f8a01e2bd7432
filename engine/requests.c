/*
 * requests.c - what the tree asks of the engine: make and remove queues
 * and groups, submit specs, ctl verbs, renames.
 *
 * Each request checks that it applies (EBUSY with a message naming the
 * state when it does not), commits its change with an event, then lets
 * the scheduler act on it.
 */
#include "engine/engine_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/billing.h"
#include "core/names.h"
#include "core/quantity.h"

/*
 * Owners (defence in depth: fs/perm.c decides first).  Root and the
 * daemon's own user may do anything.  A daemon that is not root starts
 * every task as itself, so it makes nothing for another user: that user's
 * work would run with the daemon user's rights.
 */
static bool admin(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

static enum jf_err may_make(uid_t uid, const char *what, struct jf_error *err)
{
	if (geteuid() == 0 || admin(uid))
		return JF_OK;
	return jf_error_set(err, JF_EACCES, 0,
			    "cannot make %s for uid %u: this daemon runs as uid %u, not root, "
			    "and would run the work with its own rights",
			    what, (unsigned)uid, (unsigned)geteuid());
}

/* A request is one step (step.c): its change, the pass it leads to, then
 * the signals and starts.  A step that cannot commit changed nothing. */
static enum jf_err request_end(struct jf_engine *e, enum jf_err rc, struct jf_error *err)
{
	if (!jf_eng_leave(e) && rc == JF_OK)
		rc = jf_error_set(err, JF_EIO, 0, "cannot store the change: %s",
				  jf_store_last_error(e->st));
	return rc;
}

static void notify_group(struct jf_engine *e, int64_t queue_id, int64_t group_id, bool structure)
{
	jf_eng_changed(e, JF_CH_GROUP, queue_id, group_id, 0, 0, structure);
	if (queue_id)
		jf_eng_changed(e, JF_CH_QUEUE, queue_id, 0, 0, 0, false);
}

static enum jf_err req_mkqueue(struct jf_engine *e, const char *name, uid_t uid, gid_t gid,
			       int64_t *id, struct jf_error *err)
{
	if (!jf_name_valid(name, err))
		return JF_EINVAL;
	if (may_make(uid, "a queue", err))
		return JF_EACCES;
	enum jf_err rc = jf_queue_create(e->st, name, uid, gid, jf_eng_now(e), id);
	if (rc == JF_EEXIST)
		return jf_error_set(err, rc, 0, "queue %s exists", name);
	if (rc)
		return jf_error_set(err, rc, 0, "cannot create queue %s: %s", name,
				    jf_err_name(rc));
	struct jf_event_scope sc = { .queue_id = *id };
	jf_event_add(e->st, &sc, jf_eng_now(e), "Normal", "Created", "queue",
		     "capacity unlimited until spec.yaml says otherwise");
	jf_eng_changed(e, JF_CH_QUEUE, *id, 0, 0, 0, true);
	return JF_OK;
}

enum jf_err jf_engine_mkqueue(struct jf_engine *e, const char *name, uid_t uid, gid_t gid,
			      int64_t *id, struct jf_error *err)
{
	jf_eng_enter(e);
	return request_end(e, req_mkqueue(e, name, uid, gid, id, err), err);
}

static enum jf_err req_rmqueue(struct jf_engine *e, int64_t id, struct jf_error *err)
{
	enum jf_err rc = jf_queue_delete(e->st, id);
	if (rc == JF_ENOTEMPTY)
		return jf_error_set(err, rc, 0, "the queue still has groups: remove them first");
	if (rc)
		return jf_error_set(err, rc, 0, "cannot remove the queue: %s", jf_err_name(rc));
	jf_eng_budget_forget(e, id);
	jf_eng_changed(e, JF_CH_QUEUE, id, 0, 0, 0, true);
	return JF_OK;
}

enum jf_err jf_engine_rmqueue(struct jf_engine *e, int64_t id, struct jf_error *err)
{
	jf_eng_enter(e);
	return request_end(e, req_rmqueue(e, id, err), err);
}

struct foreign {
	struct jf_engine *e;
	uid_t owner;
	int64_t last;
	char dirname[JF_NAME_MAX];
	uid_t uid;
};

static int find_foreign(void *ctx, int64_t id, const char *dirname)
{
	struct foreign *f = ctx;
	struct jf_group_rec g;
	f->last = id;
	if (jf_group_get(f->e->st, id, &g) != JF_OK)
		return 0;
	uid_t uid = g.uid;
	jf_group_release(&g);
	if (uid == f->owner || admin(uid))
		return 0;
	snprintf(f->dirname, sizeof(f->dirname), "%s", dirname);
	f->uid = uid;
	return 1;
}

/*
 * A private queue shows its insides to its owner and the admins only:
 * refused while it holds another user's group, who would lose sight of it.
 */
static enum jf_err private_ok(struct jf_engine *e, int64_t id, struct jf_error *err)
{
	struct jf_queue_rec q;
	if (jf_queue_get(e->st, id, &q) != JF_OK)
		return jf_error_set(err, JF_ENOENT, 0, "no such queue");
	struct foreign f = { .e = e, .owner = q.uid };
	jf_queue_release(&q);
	for (;;) {
		int64_t before = f.last;
		if (jf_group_list(e->st, id, JF_KIND_GROUP, f.last, 256, find_foreign, &f) != JF_OK)
			return jf_error_set(err, JF_EIO, 0, "cannot list the queue's groups");
		if (f.dirname[0])
			return jf_error_set(err, JF_EBUSY, 0,
					    "key 'private': group %s belongs to uid %u, who could "
					    "no longer see it in a private queue; it must be "
					    "removed first",
					    f.dirname, (unsigned)f.uid);
		if (f.last == before)
			return JF_OK;
	}
}

static enum jf_err req_queue_spec(struct jf_engine *e, int64_t id, const char *text, size_t len,
				  struct jf_error *err)
{
	struct jf_queue_spec q;
	memset(&q, 0, sizeof(q));
	enum jf_err rc = jf_queue_spec_parse(text, len, &q, err);
	if (rc == JF_OK && (q.partition || q.spot_partition) && !e->delegated)
		rc = jf_error_set(err, JF_ENOTSUP, 0,
				  "key '%s': partitions belong to the slurm backend and this "
				  "daemon runs --backend %s",
				  q.partition ? "partition" : "spot_partition",
				  jf_engine_backend_name(e));
	else if (rc == JF_OK && q.private_)
		rc = private_ok(e, id, err);
	struct jf_event_scope sc = { .queue_id = id };
	if (rc) {
		jf_queue_spec_release(&q);
		/* the queue keeps its last accepted spec; its status says why
		 * this one was refused until one is accepted */
		char msg[JF_ERRMSG_MAX + 96];
		snprintf(msg, sizeof(msg),
			 "spec.yaml refused: %s; the queue keeps its last accepted "
			 "spec",
			 err->msg);
		jf_eng_step_begin(e);
		jf_queue_set_message(e->st, id, msg);
		jf_event_add(e->st, &sc, jf_eng_now(e), "Warning", "Invalid", "queue", err->msg);
		jf_eng_step_end(e);
		jf_eng_changed(e, JF_CH_QUEUE, id, 0, 0, 0, false);
		return rc;
	}
	char *copy = strndup(text, len);
	if (!copy) {
		jf_queue_spec_release(&q);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	jf_eng_step_begin(e);
	jf_queue_set_spec(e->st, id, copy, q.capacity, q.group_timeout);
	char cap[32] = "unlimited";
	if (q.capacity)
		snprintf(cap, sizeof(cap), "%lld nodes", (long long)q.capacity);
	char budget[160] = "";
	if (q.budget_set) {
		char money[48], per[32] = "";
		jf_money_format(q.budget, e->cluster->currency, money, sizeof(money));
		if (q.budget_period)
			jf_duration_format(q.budget_period, per, sizeof(per));
		snprintf(budget, sizeof(budget), ", budget %s%s%s (budget_action: %s)", money,
			 per[0] ? " per " : "", per, q.budget_stop ? "stop" : "hold");
	}
	char msg[400];
	snprintf(msg, sizeof(msg), "queue spec accepted: capacity %s, group_timeout %llds%s%s", cap,
		 (long long)q.group_timeout, budget,
		 q.private_ ? ", private (only its owner and root see inside)" : "");
	jf_event_add(e->st, &sc, jf_eng_now(e), "Normal", "Updated", "queue", msg);
	rc = jf_eng_step_end(e) ? JF_OK : JF_EIO;
	free(copy);
	if (rc) {
		jf_queue_spec_release(&q);
		return jf_error_set(err, rc, 0, "cannot store the queue spec");
	}
	/* a budget set, raised, lowered or gone: judged now (budget.c) */
	struct jf_queue_rec qr;
	if (jf_queue_get(e->st, id, &qr) == JF_OK) {
		jf_eng_budget_spec(e, id, qr.name, &q);
		jf_queue_release(&qr);
	}
	jf_queue_spec_release(&q);
	jf_eng_changed(e, JF_CH_QUEUE, id, 0, 0, 0, false);
	jf_eng_schedule(e);
	return JF_OK;
}

enum jf_err jf_engine_queue_spec(struct jf_engine *e, int64_t id, const char *text, size_t len,
				 struct jf_error *err)
{
	jf_eng_enter(e);
	return request_end(e, req_queue_spec(e, id, text, len, err), err);
}

static void req_warn(struct jf_engine *e, int64_t queue_id, int64_t group_id, const char *reason,
		     const char *msg)
{
	enum jf_group_kind kind = JF_KIND_GROUP;
	if (group_id) {
		struct jf_group_rec g;
		if (jf_group_get(e->st, group_id, &g) != JF_OK)
			return;
		kind = g.kind;
		queue_id = g.queue_id;
		jf_group_release(&g);
	} else if (!queue_id) {
		return;
	}
	jf_eng_step_begin(e);
	if (group_id) {
		jf_eng_group_event(e, 0, group_id, kind, "Warning", reason, "%s", msg);
	} else {
		struct jf_event_scope sc = { .queue_id = queue_id };
		jf_event_add(e->st, &sc, jf_eng_now(e), "Warning", reason, "queue", msg);
	}
	jf_eng_step_end(e);
	if (group_id)
		jf_eng_changed(e, JF_CH_GROUP, queue_id, group_id, 0, 0, false);
	else
		jf_eng_changed(e, JF_CH_QUEUE, queue_id, 0, 0, 0, false);
}

void jf_engine_warn(struct jf_engine *e, int64_t queue_id, int64_t group_id, const char *reason,
		    const char *msg)
{
	jf_eng_enter(e);
	req_warn(e, queue_id, group_id, reason, msg);
	jf_eng_leave(e);
}

/* A refused name says the rule where the user looks: the events of the
 * queue (or group) it was to be made in, beside the bare EINVAL. */
static enum jf_err bad_name(struct jf_engine *e, int64_t queue_id, int64_t group_id,
			    const char *what, struct jf_error *err)
{
	char msg[JF_ERRMSG_MAX + 64];
	snprintf(msg, sizeof(msg), "%s refused: %s", what, err->msg);
	req_warn(e, queue_id, group_id, "InvalidName", msg);
	return JF_EINVAL;
}

static enum jf_err req_mkgroup(struct jf_engine *e, int64_t queue_id, enum jf_group_kind kind,
			       const char *dirname, uid_t uid, gid_t gid, int64_t *id,
			       struct jf_error *err)
{
	if (!jf_name_valid(dirname, err))
		return bad_name(e, queue_id, 0, "mkdir", err);
	if (may_make(uid, kind == JF_KIND_BATCH ? "a batch" : "a group", err))
		return JF_EACCES;
	enum jf_err rc =
		jf_group_create(e->st, queue_id, kind, dirname, uid, gid, jf_eng_now(e), id);
	if (rc == JF_EEXIST)
		return jf_error_set(err, rc, 0, "%s exists", dirname);
	if (rc)
		return jf_error_set(err, rc, 0, "cannot create %s: %s", dirname, jf_err_name(rc));
	notify_group(e, queue_id, *id, true);
	return JF_OK;
}

enum jf_err jf_engine_mkgroup(struct jf_engine *e, int64_t queue_id, enum jf_group_kind kind,
			      const char *dirname, uid_t uid, gid_t gid, int64_t *id,
			      struct jf_error *err)
{
	jf_eng_enter(e);
	return request_end(e, req_mkgroup(e, queue_id, kind, dirname, uid, gid, id, err), err);
}

static void record_refusal(struct jf_engine *e, const struct jf_group_rec *g, const char *text,
			   size_t len, const char *msg)
{
	char *copy = strndup(text, len);
	jf_eng_step_begin(e);
	jf_group_reject(e->st, g->id, copy ? copy : "", msg);
	jf_eng_group_event(e, 0, g->id, g->kind, "Warning", "Invalid", "spec refused: %s", msg);
	jf_eng_step_end(e);
	free(copy);
	notify_group(e, g->queue_id, g->id, false);
}

static void req_refuse(struct jf_engine *e, int64_t group_id, const char *text, size_t len,
		       const struct jf_error *why)
{
	struct jf_group_rec g;
	if (jf_group_get(e->st, group_id, &g) != JF_OK)
		return;
	if (g.state == JF_ST_DRAFT || g.state == JF_ST_INVALID)
		record_refusal(e, &g, text, len, why->msg);
	jf_group_release(&g);
}

void jf_engine_refuse(struct jf_engine *e, int64_t group_id, const char *text, size_t len,
		      const struct jf_error *why)
{
	jf_eng_enter(e);
	req_refuse(e, group_id, text, len, why);
	jf_eng_leave(e);
}

static char *join_lines(char **v, size_t n)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	*p = '\0';
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s%s", i ? "\n" : "", v[i]);
	return s;
}

static bool blank(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!strchr(" \t\r\n", text[i]))
			return false;
	return true;
}

/* `: > spec.yaml` or `truncate -s 0` on a draft: nothing to judge, so the
 * group is a fresh draft again, as mkdir left it (not Invalid: an empty
 * file is not a wrong spec, it is no spec yet). */
static enum jf_err clear_draft(struct jf_engine *e, const struct jf_group_rec *g,
			       struct jf_error *err)
{
	assert(jf_group_next(g->state, JF_EV_CLEAR) == JF_ST_DRAFT);
	jf_eng_step_begin(e);
	enum jf_err rc = jf_group_clear_draft(e->st, g->id);
	if (rc == JF_OK && (g->state != JF_ST_DRAFT || (g->draft && *g->draft)))
		jf_eng_group_event(e, 0, g->id, g->kind, "Normal", "Cleared",
				   "spec.yaml emptied: the %s is a draft again",
				   g->kind == JF_KIND_BATCH ? "batch" : "group");
	if (rc == JF_OK && !jf_eng_step_end(e))
		rc = JF_EIO;
	else if (rc)
		jf_eng_step_abort(e);
	if (rc)
		return jf_error_set(err, rc, 0, "cannot store the emptied spec: %s",
				    jf_err_name(rc));
	notify_group(e, g->queue_id, g->id, false);
	return JF_OK;
}

static enum jf_err req_submit(struct jf_engine *e, int64_t group_id, const char *text, size_t len,
			      uid_t uid, gid_t gid, struct jf_error *err)
{
	(void)gid;
	struct jf_group_rec g;
	if (jf_group_get(e->st, group_id, &g) != JF_OK)
		return jf_error_set(err, JF_ENOENT, 0, "no such group");
	enum jf_err rc;
	/* the tasks run as the group's owner: only it (or an admin) says what */
	if (uid != g.uid && !admin(uid)) {
		rc = jf_error_set(err, JF_EACCES, 0, "the %s belongs to uid %u, not %u",
				  g.kind == JF_KIND_BATCH ? "batch" : "group", (unsigned)g.uid,
				  (unsigned)uid);
		goto out;
	}
	if (g.state != JF_ST_DRAFT && g.state != JF_ST_INVALID) {
		rc = jf_error_set(err, JF_EROFS, 0,
				  "the spec is read-only once accepted (state %s); use ctl restart "
				  "or make a new group",
				  jf_state_name(g.state));
		goto out;
	}
	if (blank(text, len)) {
		rc = clear_draft(e, &g, err);
		goto out;
	}
	char queue[JF_NAME_MAX] = "";
	if (g.queue_id) {
		struct jf_queue_rec q;
		if (jf_queue_get(e->st, g.queue_id, &q) == JF_OK)
			snprintf(queue, sizeof(queue), "%s", q.name);
		jf_queue_release(&q);
	}
	struct jf_subst sub = { g.dirname, queue, g.dirname };
	struct jf_spec *spec = NULL;
	rc = jf_spec_parse(text, len, g.kind == JF_KIND_BATCH ? JF_PLACE_BATCH : JF_PLACE_GROUP,
			   &sub, &spec, err);
	/* what this jobfs's runtime can run: on the host a command is needed */
	if (rc == JF_OK)
		rc = jf_spec_check_runtime(spec, e->rt != NULL, err);
	/* the volumes and object sources it names exist, and it may use them */
	if (rc == JF_OK)
		rc = jf_eng_stor_check(e, spec, g.uid, err);
	/* the groups its after: names exist, and waiting for them makes no cycle */
	struct jf_dep_res *deps = NULL;
	if (rc == JF_OK)
		rc = jf_eng_dep_check(e, &g, spec, &deps, err);
	/* Slurm runs the jobs as their owner, and containers run as root */
	for (size_t i = 0;
	     rc == JF_OK && e->rt && e->delegated && g.uid != 0 && i < spec->ncontainers; i++)
		if (spec->containers[i].image)
			rc = jf_error_set(
				err, JF_ENOTSUP, 0,
				"container '%s': the slurm backend runs this group's jobs "
				"as uid %u, and jobfs runs containers as root only "
				"(rootless containers are not supported yet); a jobfs "
				"mounted with --runtime host runs the command on the nodes",
				spec->containers[i].name, (unsigned)g.uid);
	struct jf_sched_req req;
	/* GPUs the scheduling backend's nodes do not have: say what they have */
	if (rc == JF_OK && e->delegated && e->cluster->nmachines > 0 &&
	    !jf_dlg_request_ok(e, spec, err))
		rc = JF_EINVAL;
	if (rc == JF_OK && !jf_sched_request(e->cluster, spec, &req, err)) {
		/* a scheduling backend not heard from yet: it judges what fits */
		if (e->delegated && e->cluster->nmachines == 0 &&
		    (!spec->gpu || jf_cluster_model_index(e->cluster, spec->gpu) >= 0))
			jf_error_clear(err);
		else
			rc = JF_EINVAL;
	}
	if (rc == JF_OK && e->delegated && spec->cpu_exclusive)
		rc = jf_error_set(err, JF_ENOTSUP, 0,
				  "key 'cpu_exclusive': not honoured on the %s backend (pinning "
				  "cores is the cluster's task plugin's job there)",
				  jf_engine_backend_name(e));
	if (rc == JF_OK && e->delegated && spec->unit_runtime > 0)
		rc = jf_error_set(err, JF_ENOTSUP, 0,
				  "key 'unit_runtime': not honoured on the %s backend yet (it "
				  "decides when spot work starts; jobfs's forecast does not)",
				  jf_engine_backend_name(e));
	if (rc == JF_OK && spec->cpu_exclusive && req.gpus == 0)
		rc = jf_error_set(
			err, JF_EINVAL, 0,
			"key 'cpu_exclusive': cores are pinned per GPU, so it needs 'gpu' "
			"and 'gpus' of at least 1");
	/* the forecast is of on-demand GPU demand: it can only place spot GPU work */
	if (rc == JF_OK && spec->unit_runtime > 0 && spec->billing != JF_BILL_SPOT)
		rc = jf_error_set(err, JF_EINVAL, 0,
				  "key 'unit_runtime': only spot tasks wait for a low-risk window; "
				  "on-demand work is never preempted (remove the key, or set "
				  "'billing: spot')");
	if (rc == JF_OK && spec->unit_runtime > 0 && req.model < 0)
		rc = jf_error_set(
			err, JF_EINVAL, 0,
			"key 'unit_runtime': the preemption forecast is per GPU model, "
			"so it needs 'gpu' (CPU-only spot work starts when cores are free)");
	if (rc != JF_OK) {
		record_refusal(e, &g, text, len, err->msg);
		jf_spec_free(spec);
		free(deps);
		goto out;
	}
	int64_t completions = g.kind == JF_KIND_BATCH ? spec->count : spec->completions;
	int64_t parallelism = g.kind == JF_KIND_BATCH ? spec->count : spec->parallelism;
	char *ignored = join_lines(spec->ignored, spec->nignored);
	char *copy = strndup(text, len);
	const char *display = spec->name ? spec->name : g.dirname;
	if (!ignored || !copy) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	} else {
		jf_eng_step_begin(e);
		rc = jf_group_accept(e->st, group_id, copy, display, ignored, completions,
				     parallelism, spec->nodes, g.dirname, jf_eng_now(e));
		if (rc == JF_OK && spec->nafter)
			jf_eng_dep_record(e, group_id, spec, deps);
		char gpu[96] = "CPU only";
		if (spec->gpu && spec->gpus > 0)
			snprintf(gpu, sizeof(gpu), "%d x %s", spec->gpus, spec->gpu);
		jf_eng_group_event(e, 0, group_id, g.kind, "Normal", "Accepted",
				   "%lld %s, parallelism %lld, %lld node%s each, %s, %s%s%s",
				   (long long)completions, completions == 1 ? "task" : "tasks",
				   (long long)parallelism, (long long)spec->nodes,
				   spec->nodes == 1 ? "" : "s", gpu,
				   spec->billing == JF_BILL_SPOT ? "spot" : "on-demand",
				   spec->nignored ? "; ignored K8s fields: " : "",
				   spec->nignored ? ignored : "");
		if (g.queue_id)
			jf_eng_group_event(e, g.queue_id, 0, g.kind, "Normal", "Accepted",
					   "%s: %lld %s", g.dirname, (long long)completions,
					   completions == 1 ? "task" : "tasks");
		if (rc == JF_OK)
			rc = jf_eng_step_end(e) ? JF_OK : JF_EIO;
		else
			jf_eng_step_abort(e);
		if (rc)
			jf_error_set(err, rc, 0, "cannot store the spec: %s", jf_err_name(rc));
	}
	free(ignored);
	free(copy);
	free(deps);
	if (rc == JF_OK) {
		/* the rows past the first chunk come one chunk a turn */
		if (completions > jf_store_tasks_chunk(e->st))
			e->making = true;
		/* the spec parsed here is the one the engine keeps: no second parse */
		struct grt *rt = jf_eng_group_install(e, group_id, spec);
		/* what its after: says already (deps.c) */
		if (rt && rt->dep_any)
			jf_eng_dep_accepted(e, rt);
		/* its object sources sync from now, not from the pass (0.4 ms on) */
		if (rt)
			jf_eng_stor_accepted(e, rt);
		notify_group(e, g.queue_id, group_id, true);
		jf_eng_schedule(e);
	} else {
		jf_spec_free(spec);
	}
out:
	jf_group_release(&g);
	return rc;
}

enum jf_err jf_engine_submit(struct jf_engine *e, int64_t group_id, const char *text, size_t len,
			     uid_t uid, gid_t gid, struct jf_error *err)
{
	jf_eng_enter(e);
	return request_end(e, req_submit(e, group_id, text, len, uid, gid, err), err);
}

/*
 * The rest of a big submission's task rows (store.h: JF_TASKS_CHUNK): the
 * daemon's deferred job makes one chunk per run, the tick without a loop
 * all of them (engine.c).  Until they are made the group counts them as
 * waiting, so neither the scheduler nor the group's end is misled, and
 * the tree lists the tasks made so far.  e->making says whether to look:
 * set at an acceptance of more than a chunk and at start (a daemon killed
 * half-way continues), cleared once no group has rows to make.
 */
bool jf_eng_make_tasks(struct jf_engine *e)
{
	if (!e->making)
		return false;
	int64_t gid = 0, qid = 0;
	if (jf_group_next_unmade(e->st, &gid, &qid) != JF_OK)
		return false; /* the tick tries again */
	if (!gid) {
		e->making = false;
		return false;
	}
	int64_t left = 0;
	jf_eng_step_begin(e);
	enum jf_err rc = jf_group_make_tasks(e->st, gid, jf_store_tasks_chunk(e->st), &left);
	if (rc == JF_OK)
		jf_eng_changed(e, JF_CH_GROUP, qid, gid, 0, 0, true);
	if (!jf_eng_step_end(e) || rc != JF_OK) {
		/* once, not at every tick that tries again */
		if (!e->making_said)
			fprintf(stderr, "jobfs: group %lld: cannot make its task rows: %s (%s)\n",
				(long long)gid, jf_err_name(rc ? rc : JF_EIO),
				jf_store_last_error(e->st));
		e->making_said = true;
		return false; /* the tick tries again, not this turn's caller */
	}
	e->making_said = false;
	e->chunks_made++;
	e->dep_epoch++; /* the rows made may be ready (deps.c) */
	if (left > 0)
		return true;
	/* this group is done: another may have rows to make */
	if (jf_group_next_unmade(e->st, &gid, &qid) != JF_OK)
		return true;
	e->making = gid != 0;
	return e->making;
}

/* ---- ctl ---- */

static enum jf_err busy(struct jf_error *err, const char *verb, const char *what,
			enum jf_state state, const char *applies)
{
	return jf_error_set(err, JF_EBUSY, 0, "%s does not apply: the %s is %s (%s applies to %s)",
			    verb, what, jf_state_name(state), verb, applies);
}

static enum jf_err ctl_group(struct jf_engine *e, struct jf_group_rec *g, const char *verb,
			     struct jf_error *err)
{
	const char *what = g->kind == JF_KIND_BATCH ? "batch" : "group";
	int s = g->state;
	if (s == JF_ST_DRAFT || s == JF_ST_INVALID)
		return busy(err, verb, what, s, "an accepted spec");

	if (strcmp(verb, "stop") == 0) {
		if (jf_group_next(s, JF_EV_STOP) < 0)
			return busy(err, verb, what, s, "Waiting, Running or Paused");
		jf_eng_step_begin(e);
		jf_eng_move(e, JF_OBJ_GROUP(g), JF_EV_STOP, "stopped by ctl");
		jf_eng_move_tasks(e, JF_OBJ_GROUP(g), (1u << JF_ST_WAITING) | (1u << JF_ST_PAUSED),
				  JF_EV_STOP, "stopped by ctl");
		jf_eng_group_event(e, 0, g->id, g->kind, "Normal", "Stopped", "stopped by ctl");
		if (g->queue_id)
			jf_eng_group_event(e, g->queue_id, 0, g->kind, "Normal", "Stopped",
					   "%s: stopped by ctl", g->dirname);
		jf_eng_step_end(e);
		struct grt *rt = jf_idmap_get(&e->groups, g->id);
		if (rt)
			jf_eng_group_ended(e, rt, true);
		jf_eng_kill_group(e, g->id, JF_WHY_STOP);
	} else if (strcmp(verb, "pause") == 0) {
		if (jf_group_next(s, JF_EV_PAUSE) < 0)
			return busy(err, verb, what, s, "Waiting or Running");
		jf_eng_step_begin(e);
		jf_eng_move(e, JF_OBJ_GROUP(g), JF_EV_PAUSE, "paused by ctl");
		jf_eng_group_event(e, 0, g->id, g->kind, "Normal", "Paused",
				   "paused: running nodes are stopped, billing stops with them");
		jf_eng_step_end(e);
		jf_eng_kill_group(e, g->id, JF_WHY_PAUSE);
	} else if (strcmp(verb, "resume") == 0) {
		if (jf_group_next(s, JF_EV_RESUME) < 0)
			return busy(err, verb, what, s, "Paused");
		jf_eng_step_begin(e);
		jf_eng_move(e, JF_OBJ_GROUP(g), JF_EV_RESUME, "");
		jf_eng_move_tasks(e, JF_OBJ_GROUP(g), 1u << JF_ST_PAUSED, JF_EV_RESUME, "");
		jf_eng_group_event(e, 0, g->id, g->kind, "Normal", "Resumed", "resumed");
		jf_eng_step_end(e);
		/* a task still ending for the pause waits again when it has ended,
		 * like those already paused (else it would stay Paused in a group
		 * that is not) */
		size_t i = 0;
		int64_t k;
		void *v;
		while (jf_idmap_next(&e->tasks, &i, &k, &v)) {
			struct trun *t = v;
			if (t->group_id == g->id && t->why == JF_WHY_PAUSE)
				t->why = JF_WHY_RESTART;
		}
		if (e->delegated)
			jf_eng_delegate_resumed(e, g->id);
	} else if (strcmp(verb, "restart") == 0) {
		jf_eng_step_begin(e);
		jf_eng_move(e, JF_OBJ_GROUP(g), JF_EV_RESTART, "");
		jf_group_reset(e->st, g->id, 0);
		jf_eng_group_event(e, 0, g->id, g->kind, "Normal", "Restarted",
				   "restarted: every task runs again from the start");
		jf_eng_step_end(e);
		jf_eng_kill_group(e, g->id, JF_WHY_RESTART);
		struct grt *rt = jf_eng_group(e, g->id);
		if (rt) {
			rt->failed_tasks = 0;
			jf_eng_group_ended(e, rt, false);
			/* its after: entries as they stand now (deps.c) */
			if (rt->dep_any)
				jf_eng_dep_restarted(e, rt);
		}
	} else {
		return jf_error_set(err, JF_EINVAL, 0,
				    "unknown verb \"%s\": use pause, resume, stop or restart",
				    verb);
	}
	notify_group(e, g->queue_id, g->id, false);
	jf_eng_schedule(e);
	return JF_OK;
}

static enum jf_err ctl_task(struct jf_engine *e, struct jf_group_rec *g, int64_t task_id,
			    const char *verb, struct jf_error *err)
{
	struct jf_task_rec t;
	if (jf_task_get(e->st, task_id, &t) != JF_OK || t.group_id != g->id)
		return jf_error_set(err, JF_ENOENT, 0, "no such task");
	int s = t.state;
	int64_t idx = t.idx;
	jf_task_release(&t);
	if (g->state == JF_ST_DRAFT || g->state == JF_ST_INVALID)
		return busy(err, verb, "task", s, "an accepted spec");
	struct grt *rt = jf_eng_group(e, g->id);
	if (!rt)
		return jf_error_set(err, JF_EIO, 0, "the group's spec cannot be read");
	struct trun *tr = jf_idmap_get(&e->tasks, task_id);
	enum jf_event ev;
	if (strcmp(verb, "stop") == 0)
		ev = JF_EV_STOP;
	else if (strcmp(verb, "pause") == 0)
		ev = JF_EV_PAUSE;
	else if (strcmp(verb, "resume") == 0)
		ev = JF_EV_RESUME;
	else if (strcmp(verb, "restart") == 0)
		ev = JF_EV_RESTART;
	else
		return jf_error_set(err, JF_EINVAL, 0,
				    "unknown verb \"%s\": use pause, resume, stop or restart",
				    verb);
	if (jf_task_next(s, ev) < 0)
		return busy(err, verb, "task", s,
			    ev == JF_EV_RESUME    ? "Paused"
			    : ev == JF_EV_RESTART ? "any task"
						  : "Waiting or Running");
	if (ev == JF_EV_RESTART && jf_state_final(g->state))
		return busy(err, verb, "group", g->state,
			    "a group that has not ended (restart the group)");
	jf_eng_step_begin(e);
	switch (ev) {
	case JF_EV_STOP:
		if (!tr)
			jf_eng_move(e, JF_OBJ_TASK(g, task_id), JF_EV_STOP, "stopped by ctl");
		jf_eng_event(e, rt, task_id, idx, 0, 0, "Normal", "Stopped", "stopped by ctl");
		break;
	case JF_EV_PAUSE:
		if (!tr)
			jf_eng_move(e, JF_OBJ_TASK(g, task_id), JF_EV_PAUSE, "paused by ctl");
		jf_eng_event(e, rt, task_id, idx, 0, 0, "Normal", "Paused", "paused by ctl");
		break;
	case JF_EV_RESUME:
		jf_eng_move(e, JF_OBJ_TASK(g, task_id), JF_EV_RESUME, "");
		jf_eng_event(e, rt, task_id, idx, 0, 0, "Normal", "Resumed", "resumed by ctl");
		break;
	default:
		jf_group_reset(e->st, g->id, task_id);
		jf_eng_event(e, rt, task_id, idx, 0, 0, "Normal", "Restarted", "restarted by ctl");
		break;
	}
	jf_eng_step_end(e);
	if (!tr && e->delegated && ev != JF_EV_RESUME)
		jf_eng_delegate_withdraw(e, task_id);
	if (tr)
		jf_eng_kill_task(e, tr,
				 ev == JF_EV_STOP    ? JF_WHY_STOP
				 : ev == JF_EV_PAUSE ? JF_WHY_PAUSE
						     : JF_WHY_RESTART);
	jf_eng_changed(e, JF_CH_TASK, g->queue_id, g->id, task_id, 0, false);
	if (!tr)
		jf_eng_settle_group(e, rt);
	jf_eng_schedule(e);
	return JF_OK;
}

static enum jf_err req_ctl(struct jf_engine *e, int64_t group_id, int64_t task_id, const char *verb,
			   struct jf_error *err)
{
	struct jf_group_rec g;
	if (jf_group_get(e->st, group_id, &g) != JF_OK)
		return jf_error_set(err, JF_ENOENT, 0, "no such group");
	enum jf_err rc =
		task_id ? ctl_task(e, &g, task_id, verb, err) : ctl_group(e, &g, verb, err);
	if (rc == JF_EBUSY || rc == JF_EINVAL) {
		/* shells drop close()'s error: say why where `cat events` shows it */
		struct grt *rt = task_id ? jf_eng_group(e, g.id) : NULL;
		struct jf_task_rec t;
		jf_eng_step_begin(e);
		if (rt && jf_task_get(e->st, task_id, &t) == JF_OK) {
			jf_eng_event(e, rt, task_id, t.idx, 0, 0, "Warning", "Refused", "%s",
				     err->msg);
			jf_task_release(&t);
		} else {
			jf_eng_group_event(e, 0, g.id, g.kind, "Warning", "Refused", "%s",
					   err->msg);
		}
		jf_eng_step_end(e);
		if (task_id)
			jf_eng_changed(e, JF_CH_TASK, g.queue_id, g.id, task_id, 0, false);
		else
			notify_group(e, g.queue_id, g.id, false);
	}
	jf_group_release(&g);
	return rc;
}

enum jf_err jf_engine_ctl(struct jf_engine *e, int64_t group_id, int64_t task_id, const char *verb,
			  struct jf_error *err)
{
	jf_eng_enter(e);
	return request_end(e, req_ctl(e, group_id, task_id, verb, err), err);
}

static enum jf_err req_rename_group(struct jf_engine *e, int64_t group_id, const char *dirname,
				    struct jf_error *err)
{
	if (!jf_name_valid(dirname, err))
		return bad_name(e, 0, group_id, "rename", err);
	struct jf_group_rec g;
	if (jf_group_get(e->st, group_id, &g) != JF_OK)
		return jf_error_set(err, JF_ENOENT, 0, "no such group");
	enum jf_err rc = jf_group_rename(e->st, group_id, dirname);
	if (rc == JF_EEXIST)
		jf_error_set(err, rc, 0, "%s exists", dirname);
	else if (rc == JF_OK)
		jf_eng_group_event(e, 0, group_id, g.kind, "Normal", "Renamed", "renamed %s to %s",
				   g.dirname, dirname);
	int64_t q = g.queue_id;
	jf_group_release(&g);
	if (rc == JF_OK) {
		jf_eng_group_drop(e, group_id);
		/* what waits for it names it anew (deps.c) */
		jf_eng_dep_renamed(e, group_id);
		notify_group(e, q, group_id, true);
	}
	return rc;
}

enum jf_err jf_engine_rename_group(struct jf_engine *e, int64_t group_id, const char *dirname,
				   struct jf_error *err)
{
	jf_eng_enter(e);
	return request_end(e, req_rename_group(e, group_id, dirname, err), err);
}

static enum jf_err req_rename_task(struct jf_engine *e, int64_t task_id, const char *name,
				   struct jf_error *err)
{
	struct jf_task_rec t;
	if (jf_task_get(e->st, task_id, &t) != JF_OK)
		return jf_error_set(err, JF_ENOENT, 0, "no such task");
	struct grt *g = jf_eng_group(e, t.group_id);
	int64_t idx = t.idx;
	jf_task_release(&t);
	if (!g)
		return jf_error_set(err, JF_ENOENT, 0, "the task's group has no accepted spec");
	if (!jf_name_valid(name, err)) {
		char msg[JF_ERRMSG_MAX + 64];
		snprintf(msg, sizeof(msg), "rename refused: %s", err->msg);
		jf_eng_step_begin(e);
		jf_eng_event(e, g, task_id, idx, 0, 0, "Warning", "InvalidName", "%s", msg);
		jf_eng_step_end(e);
		jf_eng_changed(e, JF_CH_TASK, g->queue_id, g->id, task_id, 0, false);
		return JF_EINVAL;
	}
	char dflt[160];
	jf_eng_task_object(g, idx, -1, dflt, sizeof(dflt));
	const char *base = strrchr(dflt, '/') ? strrchr(dflt, '/') + 1 : dflt;
	bool reset = strcmp(base, name) == 0;
	jf_eng_step_begin(e);
	enum jf_err rc = jf_task_set_display(e->st, task_id, reset ? NULL : name);
	if (rc == JF_OK)
		jf_eng_event(e, g, task_id, idx, 0, 0, "Normal", "Renamed", "%s",
			     reset ? "name reset" : name);
	if (rc == JF_OK)
		rc = jf_eng_step_end(e) ? JF_OK : JF_EIO;
	else
		jf_eng_step_abort(e);
	if (rc == JF_EEXIST)
		return jf_error_set(err, rc, 0, "another task is named %s", name);
	if (rc)
		return jf_error_set(err, rc, 0, "cannot rename: %s", jf_err_name(rc));
	jf_eng_changed(e, JF_CH_TASK, g->queue_id, g->id, task_id, 0, true);
	return JF_OK;
}

enum jf_err jf_engine_rename_task(struct jf_engine *e, int64_t task_id, const char *name,
				  struct jf_error *err)
{
	jf_eng_enter(e);
	return request_end(e, req_rename_task(e, task_id, name, err), err);
}

static enum jf_err req_rmgroup(struct jf_engine *e, int64_t group_id, struct jf_error *err)
{
	struct jf_group_rec g;
	if (jf_group_get(e->st, group_id, &g) != JF_OK)
		return jf_error_set(err, JF_ENOENT, 0, "no such group");
	enum jf_err rc = JF_OK;
	if (!jf_state_final(g.state) && g.state != JF_ST_DRAFT && g.state != JF_ST_INVALID) {
		rc = jf_error_set(err, JF_EBUSY, 0,
				  "the %s is %s: stop it first (echo stop > ctl), then rmdir",
				  g.kind == JF_KIND_BATCH ? "batch" : "group",
				  jf_state_name(g.state));
	} else {
		for (size_t i = 0;;) {
			int64_t k;
			void *v;
			if (!jf_idmap_next(&e->tasks, &i, &k, &v))
				break;
			if (((struct trun *)v)->group_id == group_id) {
				rc = jf_error_set(err, JF_EBUSY, 0,
						  "nodes of this group are still being stopped");
				break;
			}
		}
		if (rc == JF_OK) {
			/* the queue says what left it, with the removal itself */
			jf_eng_step_begin(e);
			/* its run and checkpoint directories go with it (its
			 * ledger rows stay), a batch of them a tick */
			int64_t dirs = 0;
			/* what waits for it can never be satisfied now (deps.c) */
			jf_eng_dep_removing(e, &g);
			rc = jf_trash_group(e->st, group_id, e->state_dir, &dirs);
			if (rc == JF_OK)
				rc = jf_group_delete(e->st, group_id);
			if (rc == JF_OK && g.queue_id)
				jf_eng_group_event(e, g.queue_id, 0, g.kind, "Normal", "Removed",
						   "%s (%s), %lld director%s of its runs and "
						   "checkpoints freed",
						   g.dirname, jf_state_name(g.state),
						   (long long)dirs, dirs == 1 ? "y" : "ies");
			if (rc == JF_OK && dirs)
				e->trash_pending = true;
			if (rc == JF_OK)
				rc = jf_eng_step_end(e) ? JF_OK : JF_EIO;
			else
				jf_eng_step_abort(e);
			if (rc)
				jf_error_set(err, rc, 0, "cannot remove: %s", jf_err_name(rc));
		}
	}
	int64_t q = g.queue_id;
	if (rc == JF_EBUSY) {
		/* rmdir prints only "Device or resource busy": the events say why */
		jf_eng_step_begin(e);
		jf_eng_group_event(e, 0, group_id, g.kind, "Warning", "Refused", "rmdir: %s",
				   err->msg);
		jf_eng_step_end(e);
		notify_group(e, q, group_id, false);
	}
	jf_group_release(&g);
	if (rc == JF_OK) {
		jf_eng_group_drop(e, group_id);
		notify_group(e, q, group_id, true);
	}
	return rc;
}

enum jf_err jf_engine_rmgroup(struct jf_engine *e, int64_t group_id, struct jf_error *err)
{
	jf_eng_enter(e);
	return request_end(e, req_rmgroup(e, group_id, err), err);
}
