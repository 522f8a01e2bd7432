/*
 * store_objects.c - queues and groups (tasks, nodes and attempts:
 * store_tasks.c).
 *
 * Getters fill a record and return JF_ENOENT when no row matches; list
 * functions page by id (or index) so that a directory of a million
 * entries is read a few hundred rows at a time.
 */
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lifecycle.h"

/* ---- queues ---- */

enum jf_err jf_queue_create(struct jf_store *st, const char *name, uint32_t uid, uint32_t gid,
			    int64_t now_ms, int64_t *id)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_CREATE);
	if (!s)
		return JF_EIO;
	jf_q_text(s, 1, name);
	sqlite3_bind_int64(s, 2, now_ms);
	sqlite3_bind_int64(s, 3, uid);
	sqlite3_bind_int64(s, 4, gid);
	enum jf_err rc = jf_q_exec(st, s);
	return rc ? rc : jf_q_last_id(st, id);
}

static enum jf_err queue_row(sqlite3_stmt *s, struct jf_queue_rec *q)
{
	memset(q, 0, sizeof(*q));
	if (!JF_STEP_ROW(s))
		return jf_q_finish(s, JF_ENOENT);
	q->id = sqlite3_column_int64(s, 0);
	jf_q_copy(s, 1, q->name, sizeof(q->name));
	q->spec = jf_q_dup(s, 2);
	q->capacity = sqlite3_column_int64(s, 3);
	q->group_timeout = sqlite3_column_int64(s, 4);
	q->created_ms = sqlite3_column_int64(s, 5);
	q->uid = (uint32_t)sqlite3_column_int64(s, 6);
	q->gid = (uint32_t)sqlite3_column_int64(s, 7);
	q->events_bytes = sqlite3_column_int64(s, 8);
	q->message = jf_q_dup(s, 9);
	return jf_q_finish(s, q->spec && q->message ? JF_OK : JF_ENOMEM);
}

enum jf_err jf_queue_get(struct jf_store *st, int64_t id, struct jf_queue_rec *q)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_GET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	return queue_row(s, q);
}

enum jf_err jf_queue_find(struct jf_store *st, const char *name, struct jf_queue_rec *q)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_FIND);
	if (!s)
		return JF_EIO;
	jf_q_text(s, 1, name);
	return queue_row(s, q);
}

enum jf_err jf_queue_set_spec(struct jf_store *st, int64_t id, const char *text, int64_t capacity,
			      int64_t group_timeout)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_SET_SPEC);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, text ? text : "");
	sqlite3_bind_int64(s, 3, capacity);
	sqlite3_bind_int64(s, 4, group_timeout);
	return jf_q_exec(st, s);
}

enum jf_err jf_queue_set_message(struct jf_store *st, int64_t id, const char *message)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_SET_MESSAGE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, message ? message : "");
	return jf_q_exec(st, s);
}

enum jf_err jf_queue_budget_state(struct jf_store *st, int64_t id, int *state)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_BUDGET_STATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	*state = 0;
	if (!JF_STEP_ROW(s))
		return jf_q_finish(s, JF_ENOENT);
	*state = (int)sqlite3_column_int64(s, 0);
	return jf_q_finish(s, JF_OK);
}

enum jf_err jf_queue_set_budget_state(struct jf_store *st, int64_t id, int state)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_SET_BUDGET_STATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, state);
	return jf_q_exec(st, s);
}

enum jf_err jf_queue_group_counts(struct jf_store *st, int64_t id, int64_t *all, int64_t *live)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_GROUP_COUNTS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	*all = *live = 0;
	if (!JF_STEP_ROW(s))
		return jf_q_finish(s, JF_EIO);
	*all = sqlite3_column_int64(s, 0);
	*live = sqlite3_column_int64(s, 1);
	return jf_q_finish(s, JF_OK);
}

enum jf_err jf_queue_delete(struct jf_store *st, int64_t id)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_HAS_GROUPS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	int64_t n = JF_STEP_ROW(s) ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_reset(s);
	if (n > 0)
		return JF_ENOTEMPTY;
	s = jf_q(st, Q_QUEUE_DELETE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	enum jf_err rc = jf_q_exec(st, s);
	if (rc == JF_OK && sqlite3_changes(st->db) == 0)
		return JF_ENOENT;
	return rc;
}

enum jf_err jf_queue_list(struct jf_store *st, int64_t after, int limit,
			  int (*fn)(void *ctx, int64_t id, const char *name), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_LIST);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, after);
	sqlite3_bind_int(s, 2, limit);
	while (JF_STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1)))
			break;
	return jf_q_finish(s, JF_OK);
}

void jf_queue_release(struct jf_queue_rec *q)
{
	if (!q)
		return;
	free(q->spec);
	free(q->message);
	q->spec = NULL;
	q->message = NULL;
}

/* ---- groups ---- */

enum jf_err jf_group_create(struct jf_store *st, int64_t queue_id, enum jf_group_kind kind,
			    const char *dirname, uint32_t uid, uint32_t gid, int64_t now_ms,
			    int64_t *id)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_CREATE);
	if (!s)
		return JF_EIO;
	jf_q_id(s, 1, queue_id);
	sqlite3_bind_int(s, 2, kind);
	jf_q_text(s, 3, dirname);
	sqlite3_bind_int64(s, 4, now_ms);
	sqlite3_bind_int64(s, 5, uid);
	sqlite3_bind_int64(s, 6, gid);
	enum jf_err rc = jf_q_exec(st, s);
	return rc ? rc : jf_q_last_id(st, id);
}

enum jf_err jf_group_get(struct jf_store *st, int64_t id, struct jf_group_rec *g)
{
	memset(g, 0, sizeof(*g));
	sqlite3_stmt *s = jf_q(st, Q_GROUP_GET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	if (!JF_STEP_ROW(s))
		return jf_q_finish(s, JF_ENOENT);
	g->id = sqlite3_column_int64(s, 0);
	g->queue_id = sqlite3_column_int64(s, 1);
	g->kind = (enum jf_group_kind)sqlite3_column_int(s, 2);
	jf_q_copy(s, 3, g->dirname, sizeof(g->dirname));
	g->display = jf_q_dup(s, 4);
	g->state = sqlite3_column_int(s, 5);
	g->message = jf_q_dup(s, 6);
	if (sqlite3_column_type(s, 7) != SQLITE_NULL)
		g->spec = jf_q_dup(s, 7);
	if (sqlite3_column_type(s, 8) != SQLITE_NULL)
		g->draft = jf_q_dup(s, 8);
	g->ignored = jf_q_dup(s, 9);
	g->created_ms = sqlite3_column_int64(s, 10);
	g->submitted_ms = sqlite3_column_int64(s, 11);
	g->started_ms = sqlite3_column_int64(s, 12);
	g->finished_ms = sqlite3_column_int64(s, 13);
	g->uid = (uint32_t)sqlite3_column_int64(s, 14);
	g->gid = (uint32_t)sqlite3_column_int64(s, 15);
	g->seq = sqlite3_column_int64(s, 16);
	g->completions = sqlite3_column_int64(s, 17);
	g->parallelism = sqlite3_column_int64(s, 18);
	g->nodes = sqlite3_column_int64(s, 19);
	g->failures = sqlite3_column_int64(s, 20);
	g->events_bytes = sqlite3_column_int64(s, 21);
	jf_q_copy(s, 22, g->jobname, sizeof(g->jobname));
	g->flags = (unsigned)sqlite3_column_int64(s, 23);
	g->unmade = sqlite3_column_int64(s, 24);
	bool oom = !g->display || !g->message || !g->ignored ||
		   (sqlite3_column_type(s, 7) != SQLITE_NULL && !g->spec) ||
		   (sqlite3_column_type(s, 8) != SQLITE_NULL && !g->draft);
	sqlite3_reset(s);
	if (oom) {
		jf_group_release(g);
		return JF_ENOMEM;
	}
	return JF_OK;
}

enum jf_err jf_group_find(struct jf_store *st, int64_t queue_id, enum jf_group_kind kind,
			  const char *dirname, struct jf_group_rec *g)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_FIND);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, queue_id);
	sqlite3_bind_int(s, 2, kind);
	jf_q_text(s, 3, dirname);
	/* no row: id 0, which the getter answers with ENOENT and a zeroed record */
	return jf_group_get(st, jf_q_one_id(s), g);
}

enum jf_err jf_group_list(struct jf_store *st, int64_t queue_id, enum jf_group_kind kind,
			  int64_t after, int limit,
			  int (*fn)(void *ctx, int64_t id, const char *dirname), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_LIST);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, queue_id);
	sqlite3_bind_int(s, 2, kind);
	sqlite3_bind_int64(s, 3, after);
	sqlite3_bind_int(s, 4, limit);
	while (JF_STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1)))
			break;
	return jf_q_finish(s, JF_OK);
}

enum jf_err jf_group_list_active(struct jf_store *st, int (*fn)(void *ctx, int64_t id), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_ACTIVE);
	if (!s)
		return JF_EIO;
	/* collect first: fn may run other statements */
	int64_t *ids = NULL;
	size_t n = 0, cap = 0;
	while (JF_STEP_ROW(s)) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			int64_t *p = realloc(ids, ncap * sizeof(*ids));
			if (!p) {
				free(ids);
				return jf_q_finish(s, JF_ENOMEM);
			}
			ids = p;
			cap = ncap;
		}
		ids[n++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_reset(s);
	for (size_t i = 0; i < n; i++)
		if (fn(ctx, ids[i]))
			break;
	free(ids);
	return JF_OK;
}

enum jf_err jf_group_reject(struct jf_store *st, int64_t id, const char *draft, const char *message)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_REJECT);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, draft);
	jf_q_text(s, 3, message);
	return jf_q_exec(st, s);
}

enum jf_err jf_group_clear_draft(struct jf_store *st, int64_t id)
{
	return jf_q_exec_id(st, Q_GROUP_CLEAR_DRAFT, id);
}

enum jf_err jf_group_accept(struct jf_store *st, int64_t id, const char *spec_text,
			    const char *display, const char *ignored, int64_t completions,
			    int64_t parallelism, int64_t nodes, const char *jobname, int64_t now_ms)
{
	enum jf_err rc = jf_store_begin(st);
	if (rc)
		return rc;
	sqlite3_stmt *s = jf_q(st, Q_GROUP_ACCEPT);
	if (!s)
		goto fail;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, spec_text);
	jf_q_text(s, 3, display);
	jf_q_text(s, 4, ignored ? ignored : "");
	sqlite3_bind_int64(s, 5, completions);
	sqlite3_bind_int64(s, 6, parallelism);
	sqlite3_bind_int64(s, 7, nodes);
	sqlite3_bind_int64(s, 8, now_ms);
	jf_q_text(s, 9, jobname ? jobname : "");
	if ((rc = jf_q_exec(st, s)))
		goto fail;
	/* the group counts its completions as unmade now: the first chunk */
	jf_counts_group_changed(st, id);
	int64_t left = 0;
	if (completions > 0 && (rc = jf_group_make_tasks(st, id, st->tasks_chunk, &left)))
		goto fail;
	return jf_store_commit(st);
fail:
	jf_store_rollback(st);
	return rc ? rc : JF_EIO;
}

enum jf_err jf_group_set_state(struct jf_store *st, int64_t id, enum jf_state state,
			       const char *message, int64_t now_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_SET_STATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int(s, 2, state);
	jf_q_text(s, 3, message);
	sqlite3_bind_int64(s, 4, now_ms);
	return jf_q_exec(st, s);
}

static enum jf_err state_of(struct jf_store *st, enum jf_q q, int64_t id, int *state)
{
	sqlite3_stmt *s = jf_q(st, q);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*state = sqlite3_column_int(s, 0);
	sqlite3_reset(s);
	return rc == SQLITE_ROW ? JF_OK : rc == SQLITE_DONE ? JF_ENOENT : JF_EIO;
}

enum jf_err jf_group_state(struct jf_store *st, int64_t id, int *state)
{
	return state_of(st, Q_GROUP_STATE, id, state);
}

enum jf_err jf_task_state(struct jf_store *st, int64_t id, int *state)
{
	return state_of(st, Q_TASK_PLACE_STATE, id, state);
}

enum jf_err jf_node_state(struct jf_store *st, int64_t id, int *state)
{
	return state_of(st, Q_NODE_STATE, id, state);
}

enum jf_err jf_group_set_flags(struct jf_store *st, int64_t id, unsigned flags, const char *message)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_SET_FLAGS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, flags);
	jf_q_text(s, 3, message ? message : "");
	return jf_q_exec(st, s);
}

enum jf_err jf_group_set_message(struct jf_store *st, int64_t id, const char *message)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_SET_MESSAGE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, message ? message : "");
	return jf_q_exec(st, s);
}

enum jf_err jf_group_add_failure(struct jf_store *st, int64_t id)
{
	return jf_q_exec_id(st, Q_GROUP_ADD_FAILURE, id);
}

enum jf_err jf_group_reset(struct jf_store *st, int64_t id, int64_t task_id)
{
	sqlite3_stmt *s;
	if (!task_id) {
		s = jf_q(st, Q_GROUP_RESET);
		if (!s)
			return JF_EIO;
		sqlite3_bind_int64(s, 1, id);
		enum jf_err rc = jf_q_exec(st, s);
		if (rc)
			return rc;
	}
	s = jf_q(st, Q_GROUP_RESET_TASKS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, task_id);
	enum jf_err rc = jf_q_exec(st, s);
	jf_counts_group_changed(st, id);
	return rc;
}

enum jf_err jf_group_rename(struct jf_store *st, int64_t id, const char *dirname)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_RENAME);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	jf_q_text(s, 2, dirname);
	return jf_q_exec(st, s);
}

enum jf_err jf_group_delete(struct jf_store *st, int64_t id)
{
	jf_counts_group_changed(st, id); /* its tasks go with it */
	return jf_q_exec_id(st, Q_GROUP_DELETE, id);
}

static enum jf_err count_preempted(sqlite3_stmt *s, int64_t *n)
{
	*n = 0;
	sqlite3_bind_int(s, 2, JF_ST_PREEMPTED);
	sqlite3_bind_int(s, 3, JF_ST_WAITING);
	if (JF_STEP_ROW(s))
		*n = sqlite3_column_int64(s, 0);
	return jf_q_finish(s, JF_OK);
}

enum jf_err jf_group_count_preempted(struct jf_store *st, int64_t id, int64_t *n)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_PREEMPTED);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	return count_preempted(s, n);
}

enum jf_err jf_queue_count_preempted(struct jf_store *st, int64_t queue_id, enum jf_group_kind kind,
				     int64_t *n)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_PREEMPTED);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, queue_id);
	sqlite3_bind_int(s, 4, kind);
	return count_preempted(s, n);
}

enum jf_err jf_queue_running_nodes(struct jf_store *st, int64_t queue_id, int64_t *n)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_RUNNING_NODES);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, queue_id);
	*n = JF_STEP_ROW(s) ? sqlite3_column_int64(s, 0) : 0;
	return jf_q_finish(s, JF_OK);
}

enum jf_err jf_queue_span(struct jf_store *st, int64_t queue_id, int64_t *first_start,
			  int64_t *last_finish)
{
	*first_start = *last_finish = 0;
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_SPAN);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, queue_id);
	if (JF_STEP_ROW(s)) {
		*first_start = sqlite3_column_int64(s, 0);
		*last_finish = sqlite3_column_int64(s, 1);
	}
	return jf_q_finish(s, JF_OK);
}

void jf_group_release(struct jf_group_rec *g)
{
	if (!g)
		return;
	free(g->display);
	free(g->message);
	free(g->spec);
	free(g->draft);
	free(g->ignored);
	g->display = g->message = g->spec = g->draft = g->ignored = NULL;
}
