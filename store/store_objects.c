/*
 * store_objects.c - queues, groups, tasks, nodes and attempts.
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

#define STEP_ROW(s) (sqlite3_step(s) == SQLITE_ROW)

static enum jf_err finish(sqlite3_stmt *s, enum jf_err rc)
{
	sqlite3_reset(s);
	return rc;
}

/* The id in the first column of s's first row (binds done), 0 if none. */
static int64_t one_id(sqlite3_stmt *s)
{
	int64_t id = STEP_ROW(s) ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_reset(s);
	return id;
}

static enum jf_err last_id(struct jf_store *st, int64_t *id)
{
	if (id)
		*id = sqlite3_last_insert_rowid(st->db);
	return JF_OK;
}

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
	return rc ? rc : last_id(st, id);
}

static enum jf_err queue_row(sqlite3_stmt *s, struct jf_queue_rec *q)
{
	memset(q, 0, sizeof(*q));
	if (!STEP_ROW(s))
		return finish(s, JF_ENOENT);
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
	return finish(s, q->spec && q->message ? JF_OK : JF_ENOMEM);
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
	if (!STEP_ROW(s))
		return finish(s, JF_ENOENT);
	*state = (int)sqlite3_column_int64(s, 0);
	return finish(s, JF_OK);
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
	if (!STEP_ROW(s))
		return finish(s, JF_EIO);
	*all = sqlite3_column_int64(s, 0);
	*live = sqlite3_column_int64(s, 1);
	return finish(s, JF_OK);
}

enum jf_err jf_queue_delete(struct jf_store *st, int64_t id)
{
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_HAS_GROUPS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	int64_t n = STEP_ROW(s) ? sqlite3_column_int64(s, 0) : 0;
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
	while (STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1)))
			break;
	return finish(s, JF_OK);
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
	return rc ? rc : last_id(st, id);
}

enum jf_err jf_group_get(struct jf_store *st, int64_t id, struct jf_group_rec *g)
{
	memset(g, 0, sizeof(*g));
	sqlite3_stmt *s = jf_q(st, Q_GROUP_GET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	if (!STEP_ROW(s))
		return finish(s, JF_ENOENT);
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
	return jf_group_get(st, one_id(s), g);
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
	while (STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1)))
			break;
	return finish(s, JF_OK);
}

enum jf_err jf_group_list_active(struct jf_store *st, int (*fn)(void *ctx, int64_t id), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_ACTIVE);
	if (!s)
		return JF_EIO;
	/* collect first: fn may run other statements */
	int64_t *ids = NULL;
	size_t n = 0, cap = 0;
	while (STEP_ROW(s)) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			int64_t *p = realloc(ids, ncap * sizeof(*ids));
			if (!p) {
				free(ids);
				return finish(s, JF_ENOMEM);
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
	if (STEP_ROW(s))
		*n = sqlite3_column_int64(s, 0);
	return finish(s, JF_OK);
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
	*n = STEP_ROW(s) ? sqlite3_column_int64(s, 0) : 0;
	return finish(s, JF_OK);
}

enum jf_err jf_queue_span(struct jf_store *st, int64_t queue_id, int64_t *first_start,
			  int64_t *last_finish)
{
	*first_start = *last_finish = 0;
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_SPAN);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, queue_id);
	if (STEP_ROW(s)) {
		*first_start = sqlite3_column_int64(s, 0);
		*last_finish = sqlite3_column_int64(s, 1);
	}
	return finish(s, JF_OK);
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

/* ---- tasks ---- */

enum jf_err jf_task_get(struct jf_store *st, int64_t id, struct jf_task_rec *t)
{
	memset(t, 0, sizeof(*t));
	sqlite3_stmt *s = jf_q(st, Q_TASK_GET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	if (!STEP_ROW(s))
		return finish(s, JF_ENOENT);
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
	return jf_task_get(st, one_id(s), t);
}

static enum jf_err list_id_idx(sqlite3_stmt *s, int (*fn)(void *ctx, int64_t id, int64_t idx),
			       void *ctx)
{
	while (STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)))
			break;
	return finish(s, JF_OK);
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
	return jf_task_get(st, one_id(s), t);
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
	while (STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
		       (const char *)sqlite3_column_text(s, 2)))
			break;
	return finish(s, JF_OK);
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
	if (!STEP_ROW(s))
		return finish(s, JF_EIO);
	*id = sqlite3_column_int64(s, 0);
	return finish(s, JF_OK);
}

enum jf_err jf_node_get(struct jf_store *st, int64_t id, struct jf_node_rec *n)
{
	memset(n, 0, sizeof(*n));
	sqlite3_stmt *s = jf_q(st, Q_NODE_GET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	if (!STEP_ROW(s))
		return finish(s, JF_ENOENT);
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
	while (STEP_ROW(s)) {
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
	return jf_node_get(st, one_id(s), n);
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
	return rc ? rc : last_id(st, id);
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
	if (!STEP_ROW(s)) {
		memset(a, 0, sizeof(*a));
		return finish(s, JF_ENOENT);
	}
	return finish(s, attempt_row(s, a));
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
	return jf_attempt_get(st, one_id(s), a);
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
	while (STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)))
			break;
	return finish(s, JF_OK);
}

enum jf_err jf_attempt_list_open(struct jf_store *st,
				 int (*fn)(void *ctx, const struct jf_attempt_rec *a), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_ATTEMPT_OPEN);
	if (!s)
		return JF_EIO;
	enum jf_err rc = JF_OK;
	while (STEP_ROW(s)) {
		struct jf_attempt_rec a;
		if ((rc = attempt_row(s, &a)))
			break;
		int stop = fn(ctx, &a);
		jf_attempt_release(&a);
		if (stop)
			break;
	}
	return finish(s, rc);
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
