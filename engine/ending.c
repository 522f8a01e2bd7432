/*
 * ending.c - what follows from an end.
 *
 * finish() takes each ended attempt; when the task's last node has ended,
 * resolve_task() applies the spec's rules (core/lifecycle.c: retry in
 * place, new attempt, fail the index, fail the group) and settle_group()
 * decides the group's state from its counts.  The group timers
 * (activeDeadlineSeconds, ttl) are checked here too.
 *
 * Store first: every step is committed before the backend is touched or
 * the tree is told.
 */
#include "engine/engine_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/billing.h"
#include "core/err.h"

static void describe_exit(const struct jf_run_result *r, char *buf, size_t n)
{
	if (r->lost)
		snprintf(buf, n, "%s", r->message[0] ? r->message : "supervisor lost");
	else if (r->start_failed)
		snprintf(buf, n, "%s", r->message[0] ? r->message : "could not start");
	else if (r->evicted) /* the kubelet's words: what the containers did follows from it */
		snprintf(buf, n, "%s", r->message[0] ? r->message : "evicted");
	else if (r->term_signal)
		snprintf(buf, n, "killed by signal %d (%s), exit code %d", r->term_signal,
			 strsignal(r->term_signal), r->exit_code);
	else
		snprintf(buf, n, "exit code %d", r->exit_code);
}

/*
 * What an end's words (describe_exit's, kept as the attempt's reason) add
 * to its exit code, for the task's and the group's message: "" for a
 * plain exit ("exit code 3"), else the words less a trailing ", exit code
 * N": a start failure's "exec foo: No such file or directory", "killed by
 * signal 9 (Killed)", "supervisor lost".  One short line whatever the
 * backend said: control bytes and bad UTF-8 escaped (core/err.c), cut to
 * n bytes with "..." on a character boundary.
 */
static void end_words(const char *how, int exit_code, char *buf, size_t n)
{
	char plain[32], tail[32];
	buf[0] = '\0';
	snprintf(plain, sizeof(plain), "exit code %d", exit_code);
	if (!how || !how[0] || strcmp(how, plain) == 0)
		return;
	snprintf(tail, sizeof(tail), ", exit code %d", exit_code);
	size_t len = strnlen(how, JF_RUN_MSG_MAX), tl = strlen(tail);
	if (len > tl && memcmp(how + len - tl, tail, tl) == 0)
		len -= tl;
	struct jf_error clean;
	jf_error_set(&clean, JF_OK, 0, "%.*s", (int)len, how);
	len = strlen(clean.msg);
	if (len >= n) {
		len = n > 4 ? n - 4 : 0;
		while (len > 0 && ((unsigned char)clean.msg[len] & 0xC0) == 0x80)
			len--; /* not inside a character */
		memcpy(clean.msg + len, "...", 4);
		len += 3;
	}
	memcpy(buf, clean.msg, len + 1);
}

/* The words of the task's end (t->fail_words) after ": ", or "". */
static const char *words_sep(const struct trun *t)
{
	return t->fail_words[0] ? ": " : "";
}

static bool succeeded_idx(void *ctx, int64_t i)
{
	void **c = ctx;
	struct jf_engine *e = c[0];
	struct grt *g = c[1];
	struct jf_task_rec t;
	if (jf_task_find(e->st, g->id, i, &t) != JF_OK)
		return false;
	bool ok = t.state == JF_ST_SUCCEEDED;
	jf_task_release(&t);
	return ok;
}

static void end_group(struct jf_engine *e, struct grt *g, enum jf_state state, const char *reason,
		      const char *msg)
{
	jf_eng_group_ended(e, g, true);
	jf_eng_step_begin(e);
	jf_eng_move(e, JF_OBJ_GROUP(g),
		    state == JF_ST_SUCCEEDED ? JF_EV_SUCCEED
		    : state == JF_ST_FAILED  ? JF_EV_FAIL
					     : JF_EV_STOP,
		    msg);
	jf_eng_move_tasks(e, JF_OBJ_GROUP(g), (1u << JF_ST_WAITING) | (1u << JF_ST_PAUSED),
			  JF_EV_STOP, "the group ended");
	jf_eng_group_event(e, 0, g->id, g->kind, state == JF_ST_SUCCEEDED ? "Normal" : "Warning",
			   reason, "%s", msg);
	if (g->queue_id)
		jf_eng_group_event(e, g->queue_id, 0, g->kind,
				   state == JF_ST_SUCCEEDED ? "Normal" : "Warning", reason,
				   "%s: %s", g->dirname, msg);
	jf_eng_step_end(e);
	jf_eng_kill_group(e, g->id, JF_WHY_STOP);
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
}

/* ---- group timers: activeDeadlineSeconds and the queue's group_timeout ---- */

struct timer_ctx {
	struct jf_engine *e;
	int64_t now;
	int64_t next; /* ms until the earliest timer still ahead, -1 none */
	bool ended;
};

static void timer_ahead(struct timer_ctx *tc, int64_t at)
{
	int64_t in = at - tc->now;
	if (tc->next < 0 || in < tc->next)
		tc->next = in;
}

static int check_group_timers(void *ctx, int64_t gid)
{
	struct timer_ctx *tc = ctx;
	struct jf_engine *e = tc->e;
	struct jf_group_rec rec;
	if (jf_group_get(e->st, gid, &rec) != JF_OK)
		return 0;
	enum jf_state state = rec.state;
	int64_t submitted = rec.submitted_ms, started = rec.started_ms, queue_id = rec.queue_id;
	jf_group_release(&rec);
	if (state != JF_ST_WAITING && state != JF_ST_RUNNING)
		return 0;
	struct grt *g = jf_eng_group(e, gid);
	if (!g)
		return 0;
	char msg[160];
	/* a group that waits for its after: entries (deps.c) is not active
	 * yet and holds no room in its queue: its timers count from when its
	 * entries came to hold (an each entry: from its first start) */
	if (g->dep_any && submitted > 0) {
		if (g->dep_wait || (g->dep_each && started == 0)) {
			submitted = 0;
		} else {
			int64_t since = jf_eng_dep_since(e, g);
			submitted = since > submitted ? since : submitted;
		}
	}
	if (g->spec->active_deadline > 0 && submitted > 0) {
		int64_t at = submitted + g->spec->active_deadline * 1000;
		if (tc->now >= at) {
			snprintf(msg, sizeof(msg),
				 "DeadlineExceeded: the group ran past "
				 "activeDeadlineSeconds (%llds)",
				 (long long)g->spec->active_deadline);
			end_group(e, g, JF_ST_FAILED, "DeadlineExceeded", msg);
			tc->ended = true;
			return 0;
		}
		timer_ahead(tc, at);
	}
	if (queue_id && started == 0 && submitted > 0) {
		struct jf_queue_rec q;
		int64_t limit = 0;
		if (jf_queue_get(e->st, queue_id, &q) == JF_OK)
			limit = q.group_timeout;
		jf_queue_release(&q);
		if (limit > 0 && tc->now >= submitted + limit * 1000) {
			snprintf(msg, sizeof(msg),
				 "GroupTimeout: no task started within the queue's "
				 "group_timeout (%llds); the queue moves on",
				 (long long)limit);
			end_group(e, g, JF_ST_STOPPED, "GroupTimeout", msg);
			tc->ended = true;
		} else if (limit > 0) {
			timer_ahead(tc, submitted + limit * 1000);
		}
	}
	return 0;
}

int64_t jf_eng_group_timers(struct jf_engine *e)
{
	struct timer_ctx tc = { e, jf_eng_now(e), -1, false };
	jf_group_list_active(e->st, check_group_timers, &tc);
	e->group_deadline_ms = tc.next >= 0 ? tc.now + tc.next : -1;
	/* a group that ended frees its queue: the next one may start now */
	if (tc.ended)
		jf_eng_schedule(e);
	return tc.next;
}

static int first_task(void *ctx, int64_t id, int64_t idx)
{
	int64_t *out = ctx;
	out[0] = id;
	out[1] = idx;
	return 1;
}

/*
 * "; task I: WORDS (exit C)", or "; task I: exit code C" for a plain exit:
 * the group's failed task of lowest index and how its last attempt ended
 * (of its nodes, the one that failed first: a gang's others were killed
 * for it).  From the store, so a restarted daemon says the same; "" when
 * no failed task or attempt is found.
 */
static void first_failure(struct jf_engine *e, const struct grt *g, char *buf, size_t n)
{
	int64_t task[2] = { 0, 0 }; /* id, index */
	buf[0] = '\0';
	if (jf_task_list_state(e->st, g->id, JF_ST_FAILED, 1, first_task, task) != JF_OK ||
	    !task[0])
		return;
	struct jf_attempt_rec best = { 0 };
	bool found = false;
	for (int64_t i = 0; i < g->spec->nodes; i++) {
		struct jf_node_rec nr;
		struct jf_attempt_rec a;
		if (jf_node_find(e->st, task[0], i, &nr) != JF_OK)
			continue;
		int64_t aid = nr.attempt_id;
		jf_node_release(&nr);
		if (!aid || jf_attempt_get(e->st, aid, &a) != JF_OK)
			continue;
		if (a.end_ms && a.exit_code != 0 && (!found || a.end_ms < best.end_ms)) {
			if (found)
				jf_attempt_release(&best);
			best = a;
			found = true;
		} else {
			jf_attempt_release(&a);
		}
	}
	if (!found)
		return;
	char words[JF_FAIL_WORDS_MAX];
	end_words(best.reason, best.exit_code, words, sizeof(words));
	if (words[0])
		snprintf(buf, n, "; task %lld: %s (exit %d)", (long long)task[1], words,
			 best.exit_code);
	else
		snprintf(buf, n, "; task %lld: exit code %d", (long long)task[1], best.exit_code);
	jf_attempt_release(&best);
}

void jf_eng_settle_group(struct jf_engine *e, struct grt *g)
{
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) != JF_OK)
		return;
	enum jf_state state = rec.state;
	int64_t completions = rec.completions;
	unsigned flags = rec.flags;
	jf_group_release(&rec);
	if (state != JF_ST_WAITING && state != JF_ST_RUNNING)
		return;
	int64_t c[JF_ST__COUNT];
	if (jf_group_count_tasks(e->st, g->id, c) != JF_OK)
		return;
	struct jf_group_counts gc = {
		.completions = completions,
		.succeeded = c[JF_ST_SUCCEEDED],
		.failed = c[JF_ST_FAILED],
		.running = c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING],
		.waiting = c[JF_ST_WAITING],
		.stopped = c[JF_ST_STOPPED],
	};
	const char *reason = "";
	void *ctx[2] = { e, g };
	enum jf_group_verdict v = jf_judge_group(g->spec, &gc, succeeded_idx, ctx, &reason);
	char msg[384];
	if (v == JF_GV_SUCCEEDED) {
		snprintf(msg, sizeof(msg), "%lld/%lld tasks succeeded%s", (long long)gc.succeeded,
			 (long long)completions,
			 strcmp(reason, "SuccessPolicy") == 0 ? " (success policy met)" : "");
		end_group(e, g, JF_ST_SUCCEEDED, "Completed", msg);
		return;
	}
	if (v == JF_GV_STOPPED) {
		snprintf(msg, sizeof(msg), "%lld/%lld tasks succeeded, %lld stopped",
			 (long long)gc.succeeded, (long long)completions, (long long)gc.stopped);
		end_group(e, g, JF_ST_STOPPED, "Stopped", msg);
		return;
	}
	if (v == JF_GV_FAILED) {
		char first[JF_FAIL_WORDS_MAX + 64];
		first_failure(e, g, first, sizeof(first));
		snprintf(msg, sizeof(msg), "%s: %lld of %lld tasks failed%s", reason,
			 (long long)gc.failed, (long long)completions, first);
		end_group(e, g, JF_ST_FAILED, "Failed", msg);
		return;
	}
	if (gc.running > 0 && state == JF_ST_WAITING)
		jf_eng_move(e, JF_OBJ_GROUP(g), JF_EV_START, "");
	else if (gc.running == 0 && state == JF_ST_RUNNING)
		/* a group held back by a gate (JF_GF_*: budget, after:, a sync,
		 * a spot window) keeps the gate's message: it is still why it
		 * waits, and the next pass would only say it again */
		jf_eng_move(e, JF_OBJ_GROUP(g), JF_EV_IDLE,
			    g->pull_until_ms > jf_eng_now(e) ? g->pull_msg
			    : flags                          ? NULL
							     : "");
}

/*
 * The task's last node has ended: apply the rules.  carried: the caller's
 * transaction (the node's end) is open and is committed with this one's,
 * before anything is signalled or started - one sync for both.
 */
static void resolve_task(struct jf_engine *e, struct grt *g, struct trun *t, bool carried)
{
	struct jf_task_rec tr;
	if (jf_task_get(e->st, t->task_id, &tr) != JF_OK) {
		if (carried)
			jf_eng_step_end(e);
		return;
	}
	struct jf_group_rec gr;
	if (jf_group_get(e->st, g->id, &gr) != JF_OK) {
		jf_task_release(&tr);
		if (carried)
			jf_eng_step_end(e);
		return;
	}
	int64_t failures = tr.failures, gfailures = gr.failures;
	int tstate = tr.state;
	jf_task_release(&tr);
	jf_group_release(&gr);

	bool in_place = false;
	jf_eng_step_begin(e);
	switch (t->why) {
	case JF_WHY_STOP:
		if (!jf_state_final(tstate))
			jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_STOP, "stopped");
		break;
	case JF_WHY_PAUSE:
		if (tstate != JF_ST_PAUSED) /* (a scheduling backend's run of a paused task) */
			jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_PAUSE, "paused");
		break;
	case JF_WHY_RESTART:
		jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_RESTART, "");
		break;
	case JF_WHY_DEADLINE:
		jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_FAIL, "DeadlineExceeded");
		break;
	case JF_WHY_IMAGEPULL:
		/* waits again; a pull failure never uses up a retry (reference 8.1) */
		jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_RETRY,
			    "ImagePullBackOff: waiting to pull the image again");
		jf_eng_pull_backoff(e, g, t);
		break;
	case JF_WHY_PREEMPT:
		/* waits again; a preemption never uses up a retry (reference 3) */
		jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_PREEMPT, JF_PREEMPTED_MSG);
		jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Warning", "Preempted",
			     "attempt %lld preempted by on-demand work; waiting to run again, "
			     "%lld retries used",
			     (long long)t->attempt, (long long)failures);
		break;
	case JF_WHY_NONE:
	case JF_WHY_GANG:
	case JF_WHY_TIMEOUT:
		/* what the ETAs of its other tasks are predicted from (why.c) */
		if (t->start_ms > 0)
			jf_eng_why_task_ran(e, g, jf_eng_now(e) - t->start_ms);
		if (!t->failed) {
			jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_SUCCEED, "");
			jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Normal", "Completed",
				     "attempt %lld succeeded", (long long)t->attempt);
			break;
		}
		struct jf_exit_facts f = {
			.exit_code = t->fail_code,
			.container = t->fail_container[0] ? t->fail_container : NULL,
			.disruption = false,
			.task_failures = failures,
			.group_failures = gfailures,
		};
		const char *reason = "";
		enum jf_verdict v = jf_judge_exit(g->spec, &f, &reason);
		const char *what = t->fail_timeout ? "timed out" : "failed";
		if (v != JF_V_RETRY_FREE) {
			failures++;
			jf_group_add_failure(e->st, g->id);
		}
		jf_task_set_counters(e->st, t->task_id, t->attempt, failures);
		char left[64] = "";
		if (g->spec->retries >= 0)
			snprintf(left, sizeof(left), ", %lld retries left",
				 (long long)(g->spec->retries - failures));
		switch (v) {
		case JF_V_RETRY_IN_PLACE:
			in_place = true;
			jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Warning", "BackOff",
				     "attempt %lld %s (exit code %d%s%s); restarting in place%s",
				     (long long)t->attempt, what, t->fail_code, words_sep(t),
				     t->fail_words, left);
			break;
		case JF_V_RETRY_NEW:
		case JF_V_RETRY_FREE:
			jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_RETRY, "");
			jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Warning", "BackOff",
				     "attempt %lld %s (exit code %d%s%s); %s%s",
				     (long long)t->attempt, what, t->fail_code, words_sep(t),
				     t->fail_words,
				     v == JF_V_RETRY_FREE ? "retrying, not counted ("
							  : "retrying with a new attempt",
				     v == JF_V_RETRY_FREE ? "podFailurePolicy Ignore)" : left);
			break;
		case JF_V_FAIL_TASK:
		case JF_V_FAIL_GROUP: {
			char msg[256];
			snprintf(msg, sizeof(msg), "%s: attempt %lld %s with exit code %d%s%s",
				 reason, (long long)t->attempt, what, t->fail_code, words_sep(t),
				 t->fail_words);
			jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_FAIL, msg);
			jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Warning", "Failed", "%s",
				     msg);
			g->failed_tasks++;
			if (v == JF_V_FAIL_GROUP) {
				/* the group's says which task: "REASON: task I attempt ..." */
				char gmsg[256];
				snprintf(gmsg, sizeof(gmsg),
					 "%s: task %lld attempt %lld %s with exit code %d%s%s",
					 reason, (long long)t->idx, (long long)t->attempt, what,
					 t->fail_code, words_sep(t), t->fail_words);
				jf_eng_step_end(e);
				if (carried)
					jf_eng_step_end(e);
				jf_eng_release_slots(e, t);
				jf_idmap_del(&e->tasks, t->task_id);
				jf_trun_free(t);
				end_group(e, g, JF_ST_FAILED, "Failed", gmsg);
				return;
			}
			break;
		}
		}
		break;
	}
	/* a scheduling backend runs a task again only when it queued it again
	 * itself (a requeue after preemption); otherwise another batch must */
	if (e->delegated && !t->requeued)
		jf_task_set_sub(e->st, t->task_id, 0);
	jf_eng_step_end(e);
	if (carried)
		jf_eng_step_end(e);
	jf_eng_changed(e, JF_CH_TASK, g->queue_id, g->id, t->task_id, 0, false);
	if (in_place && !t->held) {
		/* resolved after a restart (jf_eng_resolve_ended): no slots to
		 * restart in; the new attempt is placed afresh */
		jf_eng_step_begin(e);
		jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_RETRY, "");
		jf_eng_step_end(e);
		in_place = false;
	}
	if (in_place) {
		/* same slots, new attempt on every node */
		struct jf_group_rec rec;
		uid_t uid = 0;
		gid_t gid = 0;
		if (jf_group_get(e->st, g->id, &rec) == JF_OK) {
			uid = rec.uid;
			gid = rec.gid;
			jf_group_release(&rec);
		}
		jf_idmap_del(&e->tasks, t->task_id);
		jf_eng_start_task(e, g, t, uid, gid);
		return;
	}
	jf_eng_release_slots(e, t);
	jf_idmap_del(&e->tasks, t->task_id);
	jf_trun_free(t);
	jf_eng_settle_group(e, g);
}

bool jf_eng_resolve_ended(struct jf_engine *e, struct grt *g, int64_t task_id, int64_t task_idx)
{
	struct jf_task_rec tr;
	if (jf_task_get(e->st, task_id, &tr) != JF_OK)
		return false;
	int64_t attempt = tr.attempt;
	jf_task_release(&tr);
	struct trun *t = jf_trun_new(task_id, g->id, task_idx, g->spec->nodes);
	if (!t)
		return false;
	t->attempt = attempt;
	/* why it ended, as far as the store tells: a pause or stop of the
	 * group, a preemption of the node; else by its exit codes */
	struct jf_group_rec gr;
	if (jf_group_get(e->st, g->id, &gr) == JF_OK) {
		if (gr.state == JF_ST_PAUSED)
			t->why = JF_WHY_PAUSE;
		else if (gr.state == JF_ST_STOPPED)
			t->why = JF_WHY_STOP;
		jf_group_release(&gr);
	}
	bool ended = true;
	for (int64_t i = 0; i < t->nodes && ended; i++) {
		struct jf_node_rec n;
		struct jf_attempt_rec a;
		if (jf_node_find(e->st, task_id, i, &n) != JF_OK) {
			ended = false;
			break;
		}
		int64_t aid = n.attempt_id;
		if (n.state == JF_ST_PREEMPTED && t->why == JF_WHY_NONE)
			t->why = JF_WHY_PREEMPT;
		jf_node_release(&n);
		if (!aid || jf_attempt_get(e->st, aid, &a) != JF_OK) {
			ended = false;
			break;
		}
		ended = a.end_ms != 0;
		if (ended && a.exit_code != 0 && !t->failed) {
			t->failed = true;
			t->fail_code = a.exit_code;
			end_words(a.reason, a.exit_code, t->fail_words, sizeof(t->fail_words));
		}
		jf_attempt_release(&a);
	}
	if (!ended || !jf_idmap_put(&e->tasks, task_id, t)) {
		jf_trun_free(t);
		return false;
	}
	resolve_task(e, g, t, false);
	return true;
}

void jf_eng_finish(struct jf_engine *e, const struct jf_run_result *res)
{
	int64_t attempt_id = (int64_t)res->cookie;
	struct run *r = jf_idmap_del(&e->runs, attempt_id);
	if (!r)
		return;
	struct trun *t = jf_idmap_get(&e->tasks, r->task_id);
	struct grt *g = jf_eng_group(e, r->group_id);
	int64_t now = jf_eng_now(e);
	int64_t end_ms = res->end_ms > 0 ? res->end_ms : now;
	/* an evicted node failed, whatever its containers exited with: the
	 * pod's phase is Failed (reference 8.3) */
	bool ok = res->exit_code == 0 && !res->lost && !res->start_failed && !res->evicted;
	char how[JF_RUN_MSG_MAX + 64];
	describe_exit(res, how, sizeof(how));

	/* an image that could not be pulled: nothing ran, no retry is used,
	 * the task waits and its group backs off (image.c) */
	if (res->pull_failed && t && jf_eng_why_rank(t->why) < jf_eng_why_rank(JF_WHY_IMAGEPULL)) {
		t->why = JF_WHY_IMAGEPULL;
		/* the shim's words: "ErrImagePull: image \"REF\": WHY" */
		const char *p = g ? strstr(res->message, "image \"") : NULL;
		const char *q = p ? strchr(p + 7, '"') : NULL;
		if (p && q && q - (p + 7) < (ptrdiff_t)sizeof(g->pull_image))
			snprintf(g->pull_image, sizeof(g->pull_image), "%.*s", (int)(q - (p + 7)),
				 p + 7);
		else if (g && g->spec->containers[0].image)
			snprintf(g->pull_image, sizeof(g->pull_image), "%s",
				 g->spec->containers[0].image);
		if (t->live > 1)
			jf_eng_kill_task(e, t, JF_WHY_IMAGEPULL);
	}
	bool oom = false;
	for (size_t i = 0; i < res->nprocs; i++)
		oom |= res->procs[i].oom_killed;
	enum jf_why why = t ? t->why : JF_WHY_NONE;
	int nstate;
	const char *reason, *type = "Normal";
	bool evicted = false; /* its end is the eviction's, not a stop's */
	switch (why) {
	case JF_WHY_STOP:
		nstate = JF_ST_STOPPED;
		reason = "Killing";
		break;
	case JF_WHY_PAUSE:
		nstate = JF_ST_PAUSED;
		reason = "Killing";
		break;
	case JF_WHY_RESTART:
		nstate = JF_ST_WAITING;
		reason = "Killing";
		break;
	case JF_WHY_PREEMPT:
		nstate = JF_ST_PREEMPTED;
		reason = "Preempted";
		type = "Warning";
		break;
	case JF_WHY_IMAGEPULL:
		nstate = JF_ST_WAITING;
		reason = "Failed";
		type = "Warning";
		break;
	default:
		nstate = ok ? JF_ST_SUCCEEDED : JF_ST_FAILED;
		reason = ok ? "Completed" : "Failed";
		type = ok ? "Normal" : "Warning";
		if (!ok && t && t->fail_timeout)
			reason = "DeadlineExceeded";
		/* as the kubelet evicts: a failed attempt (retries apply) */
		evicted = res->evicted;
		if (evicted)
			reason = "Evicted";
		break;
	}

	/* the task's last node: its end and the task's verdict share one
	 * transaction (resolve_task commits it); nothing is signalled between */
	bool last = t && g && t->live <= 1;
	jf_eng_step_begin(e);
	/* a short task that rotated its logs is told of it before it ends */
	jf_eng_check_rotation(e, r, true);
	if (g && r->started && g->spec->billing == JF_BILL_ONDEMAND && g->req.gpus > 0)
		jf_eng_demand(e, g->req.model, -g->req.gpus);
	jf_attempt_ended(e->st, attempt_id, end_ms, res->exit_code, how);
	if (g && g->spec->nstorage)
		jf_eng_stor_unmounted(e, g, t ? t->idx : 0, r->node_idx, r->node_id);
	jf_ledger_close(e->st, attempt_id, end_ms);
	jf_eng_budget_touch(e, g ? g->queue_id : -1);
	if (!r->no_dirs) {
		/* its records are the store's now: they go, its logs stay */
		char dir[4096], scratch[4200];
		jf_eng_run_dir(e, r->node_id, r->attempt, dir, sizeof(dir));
		/* a node's emptydirs go with it, also when its shim was killed
		 * before it could remove them (its processes are gone by now) */
		snprintf(scratch, sizeof(scratch), "%s/emptydir", dir);
		jf_eng_trash(e, JF_TRASH_TREE, scratch);
		jf_eng_trash(e, JF_TRASH_TIDY, dir);
	}
	struct jf_obj node = { g ? g->queue_id : 0, r->group_id, r->task_id, r->node_id };
	jf_eng_move(e, &node,
		    nstate == JF_ST_STOPPED     ? JF_EV_STOP
		    : nstate == JF_ST_PAUSED    ? JF_EV_PAUSE
		    : nstate == JF_ST_WAITING   ? JF_EV_RESTART
		    : nstate == JF_ST_PREEMPTED ? JF_EV_PREEMPT
		    : nstate == JF_ST_SUCCEEDED ? JF_EV_SUCCEED
						: JF_EV_FAIL,
		    why == JF_WHY_PREEMPT     ? JF_PREEMPTED_MSG
		    : why == JF_WHY_IMAGEPULL ? "ImagePullBackOff: back-off pulling the image"
		    : ok                      ? ""
		    : evicted                 ? how
		    : oom ? "OOMKilled: the container used more memory than its limit"
			  : how);
	const char *word = why == JF_WHY_IMAGEPULL  ? "ImagePullBackOff"
			   : why == JF_WHY_PREEMPT  ? "Preempted"
			   : evicted                ? "Evicted"
			   : oom                    ? "OOMKilled"
			   : t && t->fail_timeout   ? "DeadlineExceeded"
			   : why == JF_WHY_DEADLINE ? "DeadlineExceeded"
			   : ok                     ? "Completed"
			   : why == JF_WHY_STOP || why == JF_WHY_PAUSE || why == JF_WHY_RESTART
				   ? ""
				   : "Error";
	jf_node_set_reason(e->st, r->node_id, word);
	/* the attempt keeps its own end (attempts/<a>/status): the node waits
	 * again after a restart (the attempt was stopped) or a failed pull
	 * (it failed) */
	jf_attempt_set_outcome(e->st, attempt_id,
			       nstate != JF_ST_WAITING   ? (enum jf_state)nstate
			       : why == JF_WHY_IMAGEPULL ? JF_ST_FAILED
							 : JF_ST_STOPPED,
			       word);
	struct jf_node_rec nr;
	if (jf_node_get(e->st, r->node_id, &nr) == JF_OK) {
		jf_node_set_run(e->st, r->node_id, nr.machine, nr.gpu_ids, nr.pid, res->exit_code,
				nr.attempt, nr.attempt_id);
		if (res->nprocs && res->procs[0].image_digest[0] && !nr.image_digest[0])
			jf_node_set_image(e->st, r->node_id, nr.runtime, nr.images,
					  res->procs[0].image_digest);
		jf_node_release(&nr);
	}
	if (g) {
		const char *cname = res->nprocs ? res->procs[0].name : "main";
		for (size_t i = 0; i < res->nprocs; i++)
			if (res->procs[i].exit_code != 0) {
				cname = res->procs[i].name;
				break;
			}
		for (size_t i = 0; i < res->nprocs; i++)
			if (res->procs[i].oom_killed)
				jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id,
					     r->node_idx, "Warning", "OOMKilled",
					     "%s was killed: it used more memory than its limit "
					     "(exit %d)",
					     res->procs[i].name, res->procs[i].exit_code);
		if (why == JF_WHY_IMAGEPULL && res->pull_failed)
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx,
				     "Warning", "Failed", "Error: %s",
				     strncmp(res->message, "ErrImageNeverPull", 17) == 0
					     ? "ErrImageNeverPull"
					     : "ErrImagePull");
		else if (why == JF_WHY_IMAGEPULL)
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx,
				     "Normal", "Killing", "%s not started: %s", cname, how);
		else if (why == JF_WHY_PREEMPT)
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx,
				     type, reason,
				     "%s preempted by on-demand work (%s); billed up to "
				     "its end, it waits to run again",
				     cname, how);
		else if (reason[0] == 'K')
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx,
				     type, "Stopped", "%s ended: %s", cname, how);
		else if (evicted) /* the kubelet's event: Warning Evicted, its words */
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx,
				     "Warning", "Evicted", "%s", how);
		else
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx,
				     type, reason, "%s %s", cname, how);
	}
	if (!last)
		jf_eng_step_end(e);

	if (t) {
		for (int64_t i = 0; i < t->nodes; i++)
			if (t->attempt_ids[i] == attempt_id) {
				if (t->slots[i].machine < e->cluster->nmachines &&
				    e->use[t->slots[i].machine].nodes > 0)
					e->use[t->slots[i].machine].nodes--;
				t->attempt_ids[i] = 0;
			}
		t->live--;
		if (!ok && !t->failed && t->why != JF_WHY_IMAGEPULL &&
		    jf_eng_why_rank(t->why) <= jf_eng_why_rank(JF_WHY_TIMEOUT)) {
			t->failed = true;
			t->fail_code = res->exit_code;
			end_words(how, res->exit_code, t->fail_words, sizeof(t->fail_words));
			snprintf(t->fail_container, sizeof(t->fail_container), "%s",
				 res->nprocs ? res->procs[0].name : "");
			for (size_t i = 0; i < res->nprocs; i++)
				if (res->procs[i].exit_code != 0) {
					snprintf(t->fail_container, sizeof(t->fail_container), "%s",
						 res->procs[i].name);
					break;
				}
			if (t->nodes > 1 && t->live > 0)
				jf_eng_kill_task(e, t, JF_WHY_GANG);
		}
	}
	if (g)
		jf_eng_changed(e, JF_CH_NODE, g->queue_id, g->id, r->task_id, r->node_id, false);
	free(r);
	if (t && t->live <= 0 && g)
		resolve_task(e, g, t, last);
	else if (last)
		jf_eng_step_end(e); /* cannot happen (last: no node left); never left open */
	jf_eng_changed(e, JF_CH_BILLING, 0, 0, 0, 0, false);
}
