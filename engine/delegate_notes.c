/*
 * delegate_notes.c - what a scheduling backend tells the engine (notes),
 * turned into the store's records; the design is in delegate.c.
 *
 * Each note is handled on its own, store first: a batch accepted or
 * refused, the backend reachable or not, an element started (one attempt
 * per node, billed from the backend's start), preempting, ended (each
 * node's end through jf_eng_finish(), so the spec's rules decide what
 * follows), a batch done (its tasks that did not run leave it).
 */
#include "engine/engine_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOTES_AT_ONCE 64

/* ---- notes ---- */

static void set_sub(struct jf_engine *e, const struct jf_sub_rec *sr, enum jf_sub_state state,
		    int64_t job, const char *msg)
{
	jf_sub_set(e->st, sr->id, state, job, sr->throttle, sr->tries, msg);
}

static void on_accepted(struct jf_engine *e, const struct jf_note *n)
{
	struct jf_sub_rec sr;
	struct grt *g = jf_dlg_group_of_sub(e, (int64_t)n->key, &sr);
	if (!g)
		return;
	uid_t uid;
	gid_t gid;
	int state;
	jf_dlg_owner(e, g->id, &uid, &gid, &state);
	jf_eng_step_begin(e);
	set_sub(e, &sr, JF_SUB_LIVE, n->job_id, "");
	jf_eng_group_event(e, 0, g->id, g->kind, "Normal", "Submitted",
			   "batch %lld is %s job %lld%s%s", (long long)sr.id,
			   jf_scheduler_name(e->sch), (long long)n->job_id,
			   n->message[0] ? ": " : "", n->message);
	jf_eng_step_end(e);
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
	/* the group ended or paused while the batch was on its way */
	if (jf_state_final(state))
		jf_dlg_cancel(e, n->key, -1);
	else if (state == JF_ST_PAUSED)
		jf_dlg_hold(e, n->key, true);
}

static void on_refused(struct jf_engine *e, const struct jf_note *n)
{
	struct jf_sub_rec sr;
	struct grt *g = jf_dlg_group_of_sub(e, (int64_t)n->key, &sr);
	if (!g)
		return;
	char msg[512];
	snprintf(msg, sizeof(msg), "%s refused the work: %s", jf_scheduler_name(e->sch),
		 n->message);
	jf_eng_step_begin(e);
	set_sub(e, &sr, JF_SUB_REFUSED, 0, n->message);
	jf_sub_release(e->st, sr.id, 0);
	jf_eng_step_end(e);
	/* the same batch would be refused again: the group cannot run */
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) == JF_OK) {
		bool active = !jf_state_final(rec.state);
		jf_group_release(&rec);
		if (active) {
			jf_eng_step_begin(e);
			jf_eng_move(e, JF_OBJ_GROUP(g), JF_EV_FAIL, msg);
			jf_eng_move_tasks(e, JF_OBJ_GROUP(g),
					  (1u << JF_ST_WAITING) | (1u << JF_ST_PAUSED), JF_EV_FAIL,
					  msg);
			jf_eng_group_event(e, 0, g->id, g->kind, "Warning", "Unschedulable", "%s",
					   msg);
			if (g->queue_id)
				jf_eng_group_event(e, g->queue_id, 0, g->kind, "Warning",
						   "Unschedulable", "group %s: %s", g->dirname,
						   msg);
			jf_eng_step_end(e);
			jf_eng_kill_group(e, g->id, JF_WHY_STOP);
		}
	}
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
}

/*
 * Slurm's reason for a job that waits, in the words of the pending reasons
 * jobfs uses (README: Scheduling): the reason word and what it means.
 * Unknown reasons keep Slurm's word.
 */
static const struct slurm_reason {
	const char *slurm, *reason, *meaning;
} slurm_reasons[] = {
	{ "Resources", "Resources", "the nodes, CPUs, memory or GPUs it asks for are in use" },
	{ "Priority", "Reservation", "work of a higher priority waits ahead of it" },
	{ "JobArrayTaskLimit", "Parallelism",
	  "as many of its tasks run as its parallelism allows" },
	{ "QOSMaxJobsPerUserLimit", "QueueCapacity",
	  "the QOS's limit of jobs per user is reached" },
	{ "QOSMaxCpuPerUserLimit", "QueueCapacity", "the QOS's CPU limit per user is reached" },
	{ "QOSMaxGRESPerUser", "QueueCapacity", "the QOS's GPU limit per user is reached" },
	{ "QOSGrpCpuLimit", "QueueCapacity", "the QOS's CPU limit is reached" },
	{ "AssocMaxJobsLimit", "QueueCapacity", "the account's limit of jobs is reached" },
	{ "AssocGrpCpuLimit", "QueueCapacity", "the account's CPU limit is reached" },
	{ "ReqNodeNotAvail", "Unschedulable", "nodes it needs are down, drained or reserved" },
	{ "PartitionNodeLimit", "Unschedulable",
	  "it asks for more nodes than its partition allows" },
	{ "PartitionDown", "Unschedulable", "its partition is down" },
	{ "PartitionInactive", "Unschedulable", "its partition is inactive" },
	{ "BadConstraints", "Unschedulable", "no node meets its constraints" },
	{ "Dependency", "Dependency", "it waits for another job" },
	{ "JobHeldAdmin", "Paused", "it is held (paused)" },
	{ "JobHeldUser", "Paused", "it is held by its user" },
	{ "BeginTime", "Window", "its start time has not come" },
};

const char *jf_dlg_slurm_reason(const char *slurm, const char **meaning)
{
	for (size_t i = 0; i < sizeof(slurm_reasons) / sizeof(slurm_reasons[0]); i++)
		if (!strcmp(slurm_reasons[i].slurm, slurm)) {
			if (meaning)
				*meaning = slurm_reasons[i].meaning;
			return slurm_reasons[i].reason;
		}
	if (meaning)
		*meaning = "";
	return slurm;
}

/* What of a batch waits in the backend, and why: the group's message says
 * so while it is not finished ("" clears what it said). */
static void on_pending(struct jf_engine *e, const struct jf_note *n)
{
	struct jf_sub_rec sr;
	struct grt *g = jf_dlg_group_of_sub(e, (int64_t)n->key, &sr);
	/* held for its queue's budget: its message says that (budget.c) */
	if (!g || g->unsendable_said || g->budget_held)
		return;
	/* reference 9.1: the reason in jobfs's words, Slurm's expected start */
	const char *word = n->message[0] ? jf_dlg_slurm_reason(n->message, NULL) : "";
	snprintf(g->be_reason, sizeof(g->be_reason), "%s",
		 jf_reason_lookup(word) != JF_REASON_NONE ? word
		 : n->message[0]                          ? "Resources"
							  : "");
	g->be_eta_ms = n->start_ms;
	jf_eng_why_delegated(e);
	uid_t uid;
	gid_t gid;
	int state;
	jf_dlg_owner(e, g->id, &uid, &gid, &state);
	if (state < 0 || jf_state_final(state) || (!n->message[0] && !g->reason_said))
		return;
	char msg[400] = "";
	if (n->message[0]) {
		const char *meaning;
		const char *reason = jf_dlg_slurm_reason(n->message, &meaning);
		snprintf(msg, sizeof(msg), "waiting in %s (job %lld): %s%s%s%s%s",
			 jf_scheduler_name(e->sch), (long long)n->job_id, reason,
			 meaning[0] ? ", " : "", meaning,
			 strcmp(reason, n->message) ? "; Slurm's reason: " : "",
			 strcmp(reason, n->message) ? n->message : "");
	}
	jf_eng_step_begin(e);
	jf_group_set_message(e->st, g->id, msg);
	jf_eng_step_end(e);
	g->reason_said = msg[0] != '\0';
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
}

static int active_event(void *ctx, int64_t gid)
{
	struct jf_engine *e = ctx;
	struct grt *g = jf_eng_group(e, gid);
	if (!g)
		return 0;
	if (e->be_down)
		jf_eng_group_event(e, 0, gid, g->kind, "Warning", "BackendUnreachable",
				   "%s cannot be reached: %s; batches wait in the outbox, running "
				   "tasks are shown as last seen",
				   jf_scheduler_name(e->sch), e->be_msg);
	else
		jf_eng_group_event(e, 0, gid, g->kind, "Normal", "BackendReachable",
				   "%s can be reached again", jf_scheduler_name(e->sch));
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, gid, 0, 0, false);
	return 0;
}

static void on_reach(struct jf_engine *e, const struct jf_note *n, bool down)
{
	if (e->be_down == down)
		return;
	e->be_down = down;
	e->be_down_ms = down ? jf_eng_now(e) : 0;
	snprintf(e->be_msg, sizeof(e->be_msg), "%s", down ? n->message : "");
	jf_eng_step_begin(e);
	jf_group_list_active(e->st, active_event, e);
	jf_eng_step_end(e);
}

static bool task_of(struct jf_engine *e, struct grt *g, int64_t idx, struct jf_task_rec *tr)
{
	return jf_task_find(e->st, g->id, idx, tr) == JF_OK;
}

/* An element started: one attempt per node, running, billed from start_ms. */
static struct trun *begin_run(struct jf_engine *e, struct grt *g, const struct jf_sub_rec *sr,
			      const struct jf_note *n, size_t nodes_known)
{
	struct jf_task_rec tr;
	if (!task_of(e, g, n->idx, &tr))
		return NULL;
	int64_t task_id = tr.id, failures = tr.failures, recorded = tr.attempt;
	int tstate = tr.state;
	jf_task_release(&tr);
	struct trun *t = jf_idmap_get(&e->tasks, task_id);
	if (t)
		return t->key == n->key && t->run == n->run ? t : NULL;
	/* a run already recorded (the backend tells again what it still keeps
	 * after a restart, or of a batch the task has left): nothing new */
	if (sr->attempt_base + n->run <= recorded)
		return NULL;
	int gstate;
	uid_t uid;
	gid_t gid;
	jf_dlg_owner(e, g->id, &uid, &gid, &gstate);
	t = jf_trun_new(task_id, g->id, n->idx, g->spec->nodes);
	if (!t)
		return NULL;
	t->key = n->key;
	t->run = n->run;
	t->attempt = sr->attempt_base + n->run;
	t->start_ms = n->start_ms;
	t->held = false;
	for (int64_t i = 0; i < t->nodes; i++)
		t->slots[i].machine = SIZE_MAX;
	t->hosts = calloc((size_t)t->nodes, sizeof(*t->hosts));
	for (int64_t i = 0; t->hosts && i < t->nodes && (size_t)i < n->nhosts; i++)
		t->hosts[i] = strdup(n->hosts[i]);
	if (!jf_idmap_put(&e->tasks, task_id, t)) {
		jf_trun_free(t);
		return NULL;
	}
	/* started although the task or its group stopped meanwhile: it is
	 * recorded and billed like any run, and stopped */
	if (jf_state_final(gstate) || tstate == JF_ST_STOPPED || jf_state_final(tstate))
		t->why = JF_WHY_STOP;
	else if (gstate == JF_ST_PAUSED || tstate == JF_ST_PAUSED)
		t->why = JF_WHY_PAUSE;

	char dir[4096];
	jf_dlg_batch_dir(e, n->key, dir, sizeof(dir));
	jf_eng_step_begin(e);
	/* the backend placed and started it in one: both moves; a task
	 * stopped or paused meanwhile keeps its state (its run is recorded,
	 * billed and cancelled: it ends as it is) */
	if (!jf_state_final(tstate) && tstate != JF_ST_PAUSED) {
		jf_eng_move(e, JF_OBJ_TASK(g, task_id), JF_EV_PLACE, "");
		jf_eng_move(e, JF_OBJ_TASK(g, task_id), JF_EV_START, "");
	}
	jf_task_set_counters(e->st, task_id, t->attempt, failures);
	for (int64_t i = 0; i < t->nodes; i++) {
		(void)nodes_known;
		const char *host = t->hosts && t->hosts[i] ? t->hosts[i] : "";
		char rd[4300];
		snprintf(rd, sizeof(rd), "%s/%lld/%lld/%lld", dir, (long long)n->idx,
			 (long long)n->run, (long long)i);
		/* the GPUs Slurm gave the node, when it said */
		const char *gpus =
			n->gpu_ids && (size_t)i < n->nhosts && n->gpu_ids[i] ? n->gpu_ids[i] : "";
		int64_t node_id = 0, attempt_id = 0;
		if (jf_node_ensure(e->st, task_id, i, &node_id) != JF_OK)
			continue;
		if (jf_attempt_create(e->st, node_id, t->attempt, rd, host, gpus, 0, jf_eng_now(e),
				      &attempt_id) != JF_OK ||
		    !attempt_id)
			continue;
		char handle[JF_HANDLE_MAX + 24];
		snprintf(handle, sizeof(handle), "%.*s:%lld", JF_HANDLE_MAX - 1, n->handle,
			 (long long)i);
		jf_attempt_started(e->st, attempt_id, handle, n->job_id, n->start_ms);
		jf_eng_move(e, JF_OBJ_NODE(g, task_id, node_id), JF_EV_PLACE, "");
		jf_eng_move(e, JF_OBJ_NODE(g, task_id, node_id), JF_EV_START, "");
		jf_node_set_run(e->st, node_id, host, gpus, n->job_id, -1, t->attempt, attempt_id);
		jf_eng_node_images(e, g, node_id);
		if (g->spec->nstorage)
			jf_eng_stor_mounted(e, g, n->idx, i, node_id);
		jf_eng_bill_start(e, g, task_id, n->idx, node_id, i, attempt_id, t->attempt,
				  n->start_ms);
		if (g->spec->billing == JF_BILL_ONDEMAND && g->req.gpus > 0)
			jf_eng_demand(e, g->req.model, g->req.gpus);
		jf_eng_event(e, g, task_id, n->idx, node_id, i, "Normal", "Scheduled",
			     "assigned to %s by %s (job %lld, run %lld)", host[0] ? host : "?",
			     jf_scheduler_name(e->sch), (long long)n->job_id, (long long)n->run);
		jf_eng_event(e, g, task_id, n->idx, node_id, i, "Normal", "Started",
			     "started %s on %s (%s job %lld)", g->spec->containers[0].name,
			     host[0] ? host : "?", jf_scheduler_name(e->sch), (long long)n->job_id);
		if (!jf_eng_run_add(e, attempt_id, node_id, task_id, g->id, i, t->attempt, handle))
			continue;
		t->attempt_ids[i] = attempt_id;
		t->live++;
	}
	jf_eng_step_end(e);
	jf_eng_changed(e, JF_CH_TASK, g->queue_id, g->id, task_id, 0, true);
	jf_eng_settle_group(e, g);
	if (t->why != JF_WHY_NONE)
		jf_dlg_cancel(e, n->key, n->idx);
	if (t->live == 0) {
		/* nothing could be recorded: forget it rather than wait forever */
		jf_idmap_del(&e->tasks, task_id);
		jf_trun_free(t);
		return NULL;
	}
	return t;
}

static void on_started(struct jf_engine *e, const struct jf_note *n)
{
	struct jf_sub_rec sr;
	struct grt *g = jf_dlg_group_of_sub(e, (int64_t)n->key, &sr);
	if (!g)
		return;
	begin_run(e, g, &sr, n, n->nhosts);
}

static void on_preempting(struct jf_engine *e, const struct jf_note *n)
{
	struct jf_sub_rec sr;
	struct grt *g = jf_dlg_group_of_sub(e, (int64_t)n->key, &sr);
	struct jf_task_rec tr;
	if (!g || !task_of(e, g, n->idx, &tr))
		return;
	struct trun *t = jf_idmap_get(&e->tasks, tr.id);
	jf_task_release(&tr);
	if (!t || t->key != n->key || t->run != n->run)
		return;
	jf_eng_step_begin(e);
	for (int64_t i = 0; i < t->nodes; i++) {
		struct run *r = jf_idmap_get(&e->runs, t->attempt_ids[i]);
		if (!r)
			continue;
		jf_attempt_set_preempting(e->st, r->attempt_id, 0);
		jf_node_set_message(e->st, r->node_id, JF_PREEMPTING_MSG);
		jf_eng_event(e, g, t->task_id, t->idx, r->node_id, r->node_idx, "Warning",
			     "Preempting", "%s", n->message);
		jf_eng_changed(e, JF_CH_NODE, g->queue_id, g->id, t->task_id, r->node_id, false);
	}
	jf_eng_step_end(e);
}

/* The supervisor's notes of node i (its pull: Pulling, Pulled, ...;
 * Created), RUN_DIR/notes, as the node's events, when the element ends:
 * under Slurm there is no pipe to say them as they come. */
static void node_notes(struct jf_engine *e, const struct jf_note *n, int64_t i, int64_t aid)
{
	char dir[4096], path[4400];
	jf_dlg_batch_dir(e, n->key, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%lld/%lld/%lld/notes", dir, (long long)n->idx,
		 (long long)n->run, (long long)i);
	char *text = NULL;
	size_t len = 0;
	if (jf_shim_read(path, JF_SHIM_FILE_MAX, &text, &len) < 0)
		return;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		struct jf_run_result res;
		memset(&res, 0, sizeof(res));
		if (jf_shim_note_parse(line, &res)) {
			res.cookie = (uint64_t)aid;
			jf_eng_note(e, &res);
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
}

static void on_ended(struct jf_engine *e, const struct jf_note *n)
{
	struct jf_sub_rec sr;
	struct grt *g = jf_dlg_group_of_sub(e, (int64_t)n->key, &sr);
	if (!g)
		return;
	struct jf_task_rec tr;
	if (!task_of(e, g, n->idx, &tr))
		return;
	struct trun *t = jf_idmap_get(&e->tasks, tr.id);
	jf_task_release(&tr);
	if (!t) {
		if (n->start_ms <= 0)
			return; /* never ran: nothing to record */
		/* its start was never seen: record it now, then the end */
		t = begin_run(e, g, &sr, n, n->nresults);
		if (!t)
			return;
	}
	if (t->key != n->key || t->run != n->run)
		return;
	int64_t gid = g->id;
	switch (n->end) {
	case JF_END_REQUEUED:
		t->requeued = true;
		/* fall through */
	case JF_END_PREEMPTED:
		if (t->why == JF_WHY_NONE)
			t->why = JF_WHY_PREEMPT;
		t->preempted_end = n->end == JF_END_PREEMPTED;
		break;
	case JF_END_TIMEOUT:
		t->fail_timeout = true;
		break;
	default:
		break;
	}
	/* each node's end, with the backend's times (billing) and the
	 * supervisor's exit codes */
	int64_t nodes = t->nodes;
	uint64_t key = t->key;
	int64_t run = t->run, task_id = t->task_id;
	bool pulls_failed = false;
	for (int64_t i = 0; i < nodes; i++) {
		t = jf_idmap_get(&e->tasks, task_id);
		if (!t || t->key != key || t->run != run)
			break;
		int64_t aid = t->attempt_ids[i];
		if (!aid)
			continue;
		struct jf_run_result res;
		memset(&res, 0, sizeof(res));
		if ((size_t)i < n->nresults)
			res = n->results[i];
		else {
			res.lost = true;
			res.exit_code = -1;
			snprintf(res.message, sizeof(res.message), "no record of this node");
		}
		if (res.timed_out)
			t->fail_timeout = true;
		node_notes(e, n, i, aid);
		/* a failed pull is no attempt of the task, as locally: it waits,
		 * its group backs off (image.c) and a new batch runs it after */
		if (res.pull_failed)
			pulls_failed = true;
		res.cookie = (uint64_t)aid;
		res.start_ms = n->start_ms;
		res.end_ms = n->end_ms > 0 ? n->end_ms : jf_eng_now(e);
		if (n->end == JF_END_REQUEUED || n->end == JF_END_PREEMPTED) {
			/* the node stopped because it was preempted: not a failure */
			res.lost = false;
			if (!res.message[0])
				snprintf(res.message, sizeof(res.message), "%s", n->message);
		} else if (res.lost && n->end == JF_END_CANCELLED && t->why != JF_WHY_NONE) {
			res.lost = false; /* cancelled by jobfs before it wrote a record */
			res.exit_code = 143;
			res.term_signal = 15;
		} else if (res.lost) {
			size_t len = strlen(res.message);
			if (len + 3 < sizeof(res.message))
				snprintf(res.message + len, sizeof(res.message) - len, "; %.*s",
					 (int)(sizeof(res.message) - len - 3), n->message);
		}
		jf_eng_finish(e, &res);
	}
	/* its images were pulled (or it had none): a back-off is over (the
	 * group looked up again: the ends may have finished it) */
	struct grt *g2 = jf_eng_group(e, gid);
	if (g2 && !pulls_failed && n->start_ms > 0 && n->end != JF_END_NEVER_RAN)
		jf_eng_pull_ok(e, g2);
}

static void on_done(struct jf_engine *e, const struct jf_note *n)
{
	struct jf_sub_rec sr;
	struct grt *g = jf_dlg_group_of_sub(e, (int64_t)n->key, &sr);
	if (!g)
		return;
	jf_eng_step_begin(e);
	if (sr.state == JF_SUB_OUTBOX || sr.state == JF_SUB_LIVE)
		set_sub(e, &sr, JF_SUB_DONE, sr.job_id ? sr.job_id : n->job_id, "");
	jf_sub_release(e->st, sr.id, 0);
	jf_eng_step_end(e);
	jf_eng_settle_group(e, g);
}

void jf_eng_delegate_notes(struct jf_engine *e)
{
	struct jf_note notes[NOTES_AT_ONCE];
	size_t n;
	while ((n = jf_scheduler_notes(e->sch, notes, NOTES_AT_ONCE)) > 0) {
		for (size_t i = 0; i < n; i++) {
			/* the backend's times, on the engine's clock */
			notes[i].start_ms = jf_eng_from_wall(e, notes[i].start_ms);
			notes[i].end_ms = jf_eng_from_wall(e, notes[i].end_ms);
			const struct jf_note *no = &notes[i];
			switch (no->kind) {
			case JF_NOTE_ACCEPTED:
				on_accepted(e, no);
				break;
			case JF_NOTE_REFUSED:
				on_refused(e, no);
				break;
			case JF_NOTE_UNREACHABLE:
				on_reach(e, no, true);
				break;
			case JF_NOTE_REACHABLE:
				on_reach(e, no, false);
				break;
			case JF_NOTE_STARTED:
				on_started(e, no);
				break;
			case JF_NOTE_PREEMPTING:
				on_preempting(e, no);
				break;
			case JF_NOTE_ENDED:
				on_ended(e, no);
				break;
			case JF_NOTE_DONE:
				on_done(e, no);
				break;
			case JF_NOTE_PENDING:
				on_pending(e, no);
				break;
			case JF_NOTE_NODES:
				jf_eng_delegate_machines(e);
				jf_eng_changed(e, JF_CH_BILLING, 0, 0, 0, 0, false);
				break;
			}
			jf_note_release(&notes[i]);
		}
		if (jf_eng_should_yield(e))
			break; /* a request waits; the fd stays readable while notes are left */
	}
	jf_eng_delegate_machines(e);
}
