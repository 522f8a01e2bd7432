/*
 * store_tasks.c - task rows made in chunks, tasks, nodes and attempts
 * (queues and groups: store_objects.c).
 *
 * A group's task rows are made a chunk at a time (jf_group_make_tasks):
 * the rows not made yet take the group's state, so a million-task group is
 * accepted in one short transaction.  Getters fill a record and return
 * JF_ENOENT when no row matches; list functions page by index so that a
 * directory of a million tasks is read a few hundred rows at a time.  A
 * task's state is written with the count memos told before and after
 * (store_counts.c).
 */
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lifecycle.h"

/* ---- task rows, made in chunks ---- */

/* n rows of the group from index first on, and n fewer to make. */
static enum jf_err make_rows(struct jf_store *st, int64_t group_id, int64_t first, int64_t n,
			     int state, const char *message, int64_t finished_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_MAKE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int64(s, 2, first);
	sqlite3_bind_int64(s, 3, first + n);
	sqlite3_bind_int(s, 4, state);
	jf_q_text(s, 5, message);
	sqlite3_bind_int64(s, 6, finished_ms);
	enum jf_err rc = jf_q_exec(st, s);
	if (rc)
		return rc;
	s = jf_q(st, Q_GROUP_MADE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int64(s, 2, n);
	return jf_q_exec(st, s);
}

/* What a group's rows not made yet are: Q_GROUP_UNMADE's row; ENOENT when
 * there is no such group.  message is the caller's to free (NULL unless
 * with_message). */
struct unmade {
	int64_t completions, unmade, finished_ms;
	int state;
	char *message;
};

static enum jf_err unmade_get(struct jf_store *st, int64_t group_id, bool with_message,
			      struct unmade *u)
{
	memset(u, 0, sizeof(*u));
	sqlite3_stmt *s = jf_q(st, Q_GROUP_UNMADE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	int step = sqlite3_step(s);
	if (step == SQLITE_ROW) {
		u->completions = sqlite3_column_int64(s, 0);
		u->unmade = sqlite3_column_int64(s, 1);
		u->state = sqlite3_column_int(s, 2);
		u->finished_ms = sqlite3_column_int64(s, 4);
		if (with_message && !(u->message = jf_q_dup(s, 3))) {
			sqlite3_reset(s);
			return JF_ENOMEM;
		}
	}
	sqlite3_reset(s);
	return step == SQLITE_ROW ? JF_OK : step == SQLITE_DONE ? JF_ENOENT : JF_EIO;
}

/*
 * The rows made are the lowest indexes not made yet, in the state, with
 * the message and finish time, the unmade ones have: one INSERT of a
 * recursive series (half the time of stepping one INSERT per row here).
 * The counts memos stay good: a row made moves a task from the group's
 * unmade count to its rows in the same state.
 */
enum jf_err jf_group_make_tasks(struct jf_store *st, int64_t group_id, int64_t max, int64_t *left)
{
	*left = 0;
	if (max <= 0)
		return JF_EINVAL;
	enum jf_err rc = jf_store_begin(st);
	if (rc)
		return rc;
	struct unmade u;
	if ((rc = unmade_get(st, group_id, true, &u)))
		goto fail;
	int64_t n = u.unmade < max ? u.unmade : max;
	if (u.unmade < 0 || u.unmade > u.completions) {
		/* a row edited by hand: make nothing of it */
		snprintf(st->errmsg, sizeof(st->errmsg),
			 "group %lld: %lld unmade tasks of %lld completions", (long long)group_id,
			 (long long)u.unmade, (long long)u.completions);
		rc = JF_EINVAL;
	} else if (n > 0) {
		rc = make_rows(st, group_id, u.completions - u.unmade, n, u.state, u.message,
			       u.finished_ms);
	}
	free(u.message);
	if (rc)
		goto fail;
	if ((rc = jf_store_commit(st)))
		return rc;
	*left = u.unmade - n;
	return JF_OK;
fail:
	jf_store_rollback(st);
	return rc ? rc : JF_EIO;
}

enum jf_err jf_group_next_unmade(struct jf_store *st, int64_t *group_id, int64_t *queue_id)
{
	*group_id = *queue_id = 0;
	sqlite3_stmt *s = jf_q(st, Q_GROUP_UNMADE_NEXT);
	if (!s)
		return JF_EIO;
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*group_id = sqlite3_column_int64(s, 0);
		*queue_id = sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

/* ---- tasks ---- */

enum jf_err jf_task_get(struct jf_store *st, int64_t id, struct jf_task_rec *t)
{
	memset(t, 0, sizeof(*t));
	sqlite3_stmt *s = jf_q(st, Q_TASK_GET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	if (!JF_STEP_ROW(s))
		return jf_q_finish(s, JF_ENOENT);
	t->id = sqlite3_column_int64(s, 0);
	t->group_id = sqlite3_column_int64(s, 1);
	t->idx = sqlite3_column_int64(s, 2);
	t->state = sqlite3_column_int(s, 3);
	t->message = jf_q_dup(s, 4);
	if (sqlite3_column_type(s, 5) != SQLITE_NULL)
		t->display = jf_q_dup(s, 5);
	t->attempt = sqlite3_column_int64(s, 6);
	t->failures = sqlite3_column_int64(s, 7);
	t->started_ms = sqlite3_column_int64(s, 8);
	t->finished_ms = sqlite3_column_int64(s, 9);
	t->events_bytes = sqlite3_column_int64(s, 10);
	sqlite3_reset(s);
	if (!t->message) {
		jf_task_release(t);
		return JF_ENOMEM;
	}
	return JF_OK;
}

enum jf_err jf_task_find(struct jf_store *st, int64_t group_id, int64_t idx, struct jf_task_rec *t)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_FIND);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int64(s, 2, idx);
	/* no row: id 0, which the getter answers with ENOENT and a zeroed record */
	return jf_task_get(st, jf_q_one_id(s), t);
}

static enum jf_err list_id_idx(sqlite3_stmt *s, int (*fn)(void *ctx, int64_t id, int64_t idx),
			       void *ctx)
{
	while (JF_STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)))
			break;
	return jf_q_finish(s, JF_OK);
}

enum jf_err jf_task_list(struct jf_store *st, int64_t group_id, int64_t after, int limit,
			 int (*fn)(void *ctx, int64_t id, int64_t idx), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_LIST);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int64(s, 2, after);
	sqlite3_bind_int(s, 3, limit);
	return list_id_idx(s, fn, ctx);
}

enum jf_err jf_task_list_state(struct jf_store *st, int64_t group_id, enum jf_state state,
			       int limit, int (*fn)(void *ctx, int64_t id, int64_t idx), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_LIST_STATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int(s, 2, state);
	sqlite3_bind_int(s, 3, limit);
	return list_id_idx(s, fn, ctx);
}

enum jf_err jf_task_set_state(struct jf_store *st, int64_t id, enum jf_state state,
			      const char *message, int64_t now_ms)
{
	int64_t group_id = 0;
	int from = -1;
	bool known = jf_counts_before(st, id, &group_id, &from); /* for the counts */
	sqlite3_stmt *s = jf_q(st, Q_TASK_SET_STATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int(s, 2, state);
	jf_q_text(s, 3, message);
	sqlite3_bind_int64(s, 4, now_ms);
	enum jf_err rc = jf_q_exec(st, s);
	if (rc == JF_OK && known)
		jf_counts_moved(st, group_id, from, state);
	else if (rc != JF_OK)
		jf_counts_forget(st);
	return rc;
}

enum jf_err jf_task_set_counters(struct jf_store *st, int64_t id, int64_t attempt, int64_t failures)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_SET_COUNTERS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, attempt);
	sqlite3_bind_int64(s, 3, failures);
	return jf_q_exec(st, s);
}

/* The rows made and those not made yet move together, in one transaction,
 * so a group is never seen with only some of them moved. */
enum jf_err jf_task_set_state_all(struct jf_store *st, int64_t group_id, unsigned from_mask,
				  int state, const char *message, int64_t now_ms, int64_t *changed)
{
	if (changed)
		*changed = 0;
	enum jf_err rc = jf_store_begin(st);
	if (rc)
		return rc;
	struct unmade u;
	rc = unmade_get(st, group_id, false, &u);
	if (rc != JF_OK && rc != JF_ENOENT)
		goto fail;
	rc = JF_OK;
	sqlite3_stmt *s = jf_q(st, Q_TASK_SET_STATE_ALL);
	if (!s)
		goto fail;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int64(s, 2, from_mask);
	sqlite3_bind_int(s, 3, state);
	jf_q_text(s, 4, message);
	sqlite3_bind_int64(s, 5, now_ms);
	if ((rc = jf_q_exec(st, s)))
		goto fail;
	int64_t n = sqlite3_changes(st->db);
	if (u.unmade > 0 && u.state >= 0 && u.state < JF_ST__COUNT &&
	    (from_mask & (1u << u.state))) {
		s = jf_q(st, Q_GROUP_UNMADE_STATE);
		if (!s)
			goto fail;
		sqlite3_bind_int64(s, 1, group_id);
		sqlite3_bind_int64(s, 2, from_mask);
		sqlite3_bind_int(s, 3, state);
		jf_q_text(s, 4, message);
		sqlite3_bind_int64(s, 5, now_ms);
		if ((rc = jf_q_exec(st, s)))
			goto fail;
		n += u.unmade;
	}
	jf_counts_group_changed(st, group_id);
	if ((rc = jf_store_commit(st)))
		return rc;
	if (changed)
		*changed = n;
	return JF_OK;
fail:
	jf_store_rollback(st);
	jf_counts_group_changed(st, group_id);
	return rc ? rc : JF_EIO;
}

enum jf_err jf_task_find_display(struct jf_store *st, int64_t group_id, const char *display,
				 struct jf_task_rec *t)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_FIND_DISPLAY);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	jf_q_text(s, 2, display);
	/* no row: id 0, which the getter answers with ENOENT and a zeroed record */
	return jf_task_get(st, jf_q_one_id(s), t);
}

enum jf_err jf_task_set_display(struct jf_store *st, int64_t id, const char *display)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_SET_DISPLAY);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, display);
	return jf_q_exec(st, s);
}

enum jf_err jf_task_list_named(struct jf_store *st, int64_t group_id, int64_t after, int limit,
			       int (*fn)(void *ctx, int64_t id, int64_t idx, const char *display),
			       void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_LIST_NAMED);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int64(s, 2, after);
	sqlite3_bind_int(s, 3, limit);
	while (JF_STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
		       (const char *)sqlite3_column_text(s, 2)))
			break;
	return jf_q_finish(s, JF_OK);
}

void jf_task_release(struct jf_task_rec *t)
{
	if (!t)
		return;
	free(t->message);
	free(t->display);
	t->message = t->display = NULL;
}

/* ---- nodes ---- */

enum jf_err jf_node_ensure(struct jf_store *st, int64_t task_id, int64_t idx, int64_t *id)
{
	sqlite3_stmt *s = jf_q(st, Q_NODE_INSERT);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, task_id);
	sqlite3_bind_int64(s, 2, idx);
	enum jf_err rc = jf_q_exec(st, s);
	if (rc)
		return rc;
	s = jf_q(st, Q_NODE_FIND_ID);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, task_id);
	sqlite3_bind_int64(s, 2, idx);
	if (!JF_STEP_ROW(s))
		return jf_q_finish(s, JF_EIO);
	*id = sqlite3_column_int64(s, 0);
	return jf_q_finish(s, JF_OK);
}

enum jf_err jf_node_get(struct jf_store *st, int64_t id, struct jf_node_rec *n)
{
	memset(n, 0, sizeof(*n));
	sqlite3_stmt *s = jf_q(st, Q_NODE_GET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	if (!JF_STEP_ROW(s))
		return jf_q_finish(s, JF_ENOENT);
	n->id = sqlite3_column_int64(s, 0);
	n->task_id = sqlite3_column_int64(s, 1);
	n->idx = sqlite3_column_int64(s, 2);
	n->state = sqlite3_column_int(s, 3);
	n->message = jf_q_dup(s, 4);
	jf_q_copy(s, 5, n->machine, sizeof(n->machine));
	jf_q_copy(s, 6, n->gpu_ids, sizeof(n->gpu_ids));
	n->pid = sqlite3_column_int64(s, 7);
	n->exit_code = sqlite3_column_int(s, 8);
	n->attempt = sqlite3_column_int64(s, 9);
	n->attempt_id = sqlite3_column_int64(s, 10);
	n->started_ms = sqlite3_column_int64(s, 11);
	n->finished_ms = sqlite3_column_int64(s, 12);
	n->events_bytes = sqlite3_column_int64(s, 13);
	jf_q_copy(s, 14, n->runtime, sizeof(n->runtime));
	n->images = jf_q_dup(s, 15);
	jf_q_copy(s, 16, n->image_digest, sizeof(n->image_digest));
	jf_q_copy(s, 17, n->reason, sizeof(n->reason));
	n->endpoints = jf_q_dup(s, 18);
	sqlite3_reset(s);
	return n->message && n->images && n->endpoints ? JF_OK : JF_ENOMEM;
}

enum jf_err jf_node_set_endpoints(struct jf_store *st, int64_t id, const char *endpoints)
{
	sqlite3_stmt *s = jf_q(st, Q_NODE_SET_ENDPOINTS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, endpoints ? endpoints : "");
	return jf_q_exec(st, s);
}

enum jf_err jf_node_set_image(struct jf_store *st, int64_t id, const char *runtime,
			      const char *images, const char *image_digest)
{
	sqlite3_stmt *s = jf_q(st, Q_NODE_SET_IMAGE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, runtime ? runtime : "");
	jf_q_text(s, 3, images ? images : "");
	jf_q_text(s, 4, image_digest ? image_digest : "");
	enum jf_err rc = jf_q_exec(st, s);
	if (rc)
		return rc;
	/* its current attempt ran the same (attempts/<a>/status) */
	s = jf_q(st, Q_ATTEMPT_SET_IMAGE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, runtime ? runtime : "");
	jf_q_text(s, 3, images ? images : "");
	jf_q_text(s, 4, image_digest ? image_digest : "");
	return jf_q_exec(st, s);
}

enum jf_err jf_node_set_reason(struct jf_store *st, int64_t id, const char *reason)
{
	sqlite3_stmt *s = jf_q(st, Q_NODE_SET_REASON);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, reason ? reason : "");
	return jf_q_exec(st, s);
}

size_t jf_node_image_users(struct jf_store *st, const char *name, int64_t *ids, size_t max)
{
	/* '_' and '%' are special to LIKE (references hold no ',') */
	char pat[2100];
	size_t k = 0;
	for (const char *p = name; *p && k + 2 < sizeof(pat); p++) {
		if (*p == '_' || *p == '%' || *p == '\\')
			pat[k++] = '\\';
		pat[k++] = *p;
	}
	pat[k] = '\0';
	sqlite3_stmt *s = jf_q(st, Q_NODE_IMAGE_USERS);
	if (!s)
		return 0;
	jf_q_text(s, 1, pat);
	size_t n = 0;
	while (JF_STEP_ROW(s)) {
		if (n < max)
			ids[n] = sqlite3_column_int64(s, 0);
		n++;
	}
	sqlite3_reset(s);
	return n;
}

enum jf_err jf_node_find(struct jf_store *st, int64_t task_id, int64_t idx, struct jf_node_rec *n)
{
	sqlite3_stmt *s = jf_q(st, Q_NODE_FIND_ID);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, task_id);
	sqlite3_bind_int64(s, 2, idx);
	/* no row: id 0, which the getter answers with ENOENT and a zeroed record */
	return jf_node_get(st, jf_q_one_id(s), n);
}

enum jf_err jf_node_set_state(struct jf_store *st, int64_t id, enum jf_state state,
			      const char *message, int64_t now_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_NODE_SET_STATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int(s, 2, state);
	jf_q_text(s, 3, message);
	sqlite3_bind_int64(s, 4, now_ms);
	return jf_q_exec(st, s);
}

enum jf_err jf_node_set_message(struct jf_store *st, int64_t id, const char *message)
{
	sqlite3_stmt *s = jf_q(st, Q_NODE_SET_MESSAGE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, message ? message : "");
	return jf_q_exec(st, s);
}

enum jf_err jf_node_set_run(struct jf_store *st, int64_t id, const char *machine,
			    const char *gpu_ids, int64_t pid, int exit_code, int64_t attempt,
			    int64_t attempt_id)
{
	sqlite3_stmt *s = jf_q(st, Q_NODE_SET_RUN);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, machine ? machine : "");
	jf_q_text(s, 3, gpu_ids ? gpu_ids : "");
	sqlite3_bind_int64(s, 4, pid);
	sqlite3_bind_int(s, 5, exit_code);
	sqlite3_bind_int64(s, 6, attempt);
	sqlite3_bind_int64(s, 7, attempt_id);
	return jf_q_exec(st, s);
}

void jf_node_release(struct jf_node_rec *n)
{
	if (!n)
		return;
	free(n->images);
	n->images = NULL;
	free(n->endpoints);
	n->endpoints = NULL;
	free(n->message);
	n->message = NULL;
}

/* ---- attempts ---- */

enum jf_err jf_attempt_create(struct jf_store *st, int64_t node_id, int64_t attempt,
			      const char *run_dir, const char *machine, const char *gpu_ids,
			      int64_t cpu_milli, int64_t now_ms, int64_t *id)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_CREATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_int64(s, 2, attempt);
	jf_q_text(s, 3, run_dir);
	jf_q_text(s, 4, machine ? machine : "");
	jf_q_text(s, 5, gpu_ids ? gpu_ids : "");
	sqlite3_bind_int64(s, 6, cpu_milli);
	sqlite3_bind_int64(s, 7, now_ms);
	enum jf_err rc = jf_q_exec(st, s);
	return rc ? rc : jf_q_last_id(st, id);
}

enum jf_err jf_attempt_started(struct jf_store *st, int64_t id, const char *handle, int64_t pid,
			       int64_t start_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_STARTED);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, handle);
	sqlite3_bind_int64(s, 3, pid);
	sqlite3_bind_int64(s, 4, start_ms);
	return jf_q_exec(st, s);
}

enum jf_err jf_attempt_ended(struct jf_store *st, int64_t id, int64_t end_ms, int exit_code,
			     const char *reason)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_ENDED);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, end_ms > 0 ? end_ms : 1);
	sqlite3_bind_int(s, 3, exit_code);
	jf_q_text(s, 4, reason ? reason : "");
	return jf_q_exec(st, s);
}

enum jf_err jf_attempt_set_outcome(struct jf_store *st, int64_t id, enum jf_state state,
				   const char *reason)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_SET_OUTCOME);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int(s, 2, (int)state);
	jf_q_text(s, 3, reason ? reason : "");
	return jf_q_exec(st, s);
}

enum jf_err jf_attempt_set_cpuset(struct jf_store *st, int64_t id, const char *cpuset)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_SET_CPUSET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, cpuset ? cpuset : "");
	return jf_q_exec(st, s);
}

enum jf_err jf_attempt_set_kill_at(struct jf_store *st, int64_t id, int64_t kill_at_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_SET_KILL_AT);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, kill_at_ms);
	return jf_q_exec(st, s);
}

enum jf_err jf_attempt_set_preempting(struct jf_store *st, int64_t id, int64_t kill_at_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_SET_PREEMPTING);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, kill_at_ms);
	return jf_q_exec(st, s);
}

static enum jf_err attempt_row(sqlite3_stmt *s, struct jf_attempt_rec *a)
{
	memset(a, 0, sizeof(*a));
	a->id = sqlite3_column_int64(s, 0);
	a->node_id = sqlite3_column_int64(s, 1);
	a->attempt = sqlite3_column_int64(s, 2);
	jf_q_copy(s, 3, a->handle, sizeof(a->handle));
	a->run_dir = jf_q_dup(s, 4);
	jf_q_copy(s, 5, a->machine, sizeof(a->machine));
	jf_q_copy(s, 6, a->gpu_ids, sizeof(a->gpu_ids));
	a->cpu_milli = sqlite3_column_int64(s, 7);
	a->pid = sqlite3_column_int64(s, 8);
	a->start_ms = sqlite3_column_int64(s, 9);
	a->end_ms = sqlite3_column_int64(s, 10);
	a->exit_code = sqlite3_column_int(s, 11);
	a->reason = jf_q_dup(s, 12);
	jf_q_copy(s, 13, a->cpuset, sizeof(a->cpuset));
	a->kill_at_ms = sqlite3_column_int64(s, 14);
	a->preempting = sqlite3_column_int(s, 15) != 0;
	a->created_ms = sqlite3_column_int64(s, 16);
	a->end_state = sqlite3_column_int(s, 17);
	jf_q_copy(s, 18, a->end_reason, sizeof(a->end_reason));
	jf_q_copy(s, 19, a->runtime, sizeof(a->runtime));
	a->images = jf_q_dup(s, 20);
	jf_q_copy(s, 21, a->image_digest, sizeof(a->image_digest));
	if (!a->run_dir || !a->reason || !a->images) {
		jf_attempt_release(a);
		return JF_ENOMEM;
	}
	return JF_OK;
}

enum jf_err jf_attempt_get(struct jf_store *st, int64_t id, struct jf_attempt_rec *a)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_GET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	if (!JF_STEP_ROW(s)) {
		memset(a, 0, sizeof(*a));
		return jf_q_finish(s, JF_ENOENT);
	}
	return jf_q_finish(s, attempt_row(s, a));
}

enum jf_err jf_attempt_find(struct jf_store *st, int64_t node_id, int64_t attempt,
			    struct jf_attempt_rec *a)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_FIND);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_int64(s, 2, attempt);
	/* no row: id 0, which the getter answers with ENOENT and a zeroed record */
	return jf_attempt_get(st, jf_q_one_id(s), a);
}

enum jf_err jf_attempt_list(struct jf_store *st, int64_t node_id, int64_t after, int limit,
			    int (*fn)(void *ctx, int64_t id, int64_t attempt), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_LIST);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, node_id);
	sqlite3_bind_int64(s, 2, after);
	sqlite3_bind_int(s, 3, limit);
	while (JF_STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)))
			break;
	return jf_q_finish(s, JF_OK);
}

enum jf_err jf_attempt_list_open(struct jf_store *st,
				 int (*fn)(void *ctx, const struct jf_attempt_rec *a), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_OPEN);
	if (!s)
		return JF_EIO;
	enum jf_err rc = JF_OK;
	while (JF_STEP_ROW(s)) {
		struct jf_attempt_rec a;
		if ((rc = attempt_row(s, &a)))
			break;
		int stop = fn(ctx, &a);
		jf_attempt_release(&a);
		if (stop)
			break;
	}
	return jf_q_finish(s, rc);
}

void jf_attempt_release(struct jf_attempt_rec *a)
{
	if (!a)
		return;
	free(a->run_dir);
	free(a->reason);
	free(a->images);
	a->run_dir = a->reason = a->images = NULL;
}
