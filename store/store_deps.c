/*
 * store_deps.c - dependencies (reference 10): the rows of the `deps`
 * table, one per accepted `after:` entry of a group, and the task queries
 * of `each` entries.
 *
 * A row names its target by id; the target's path is read through a join
 * (a rename shows at once) and copied into the row when the target is
 * removed.  The task queries pair task i of a group with task i of the
 * target, reading a row not made yet (store.h: JF_TASKS_CHUNK) in the
 * state it will be made with, and a removed target's tasks as gone.
 */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>


enum jf_err jf_dep_clear(struct jf_store *st, int64_t group_id)
{
	return jf_q_exec_id(st, Q_DEP_CLEAR, group_id);
}

enum jf_err jf_dep_add(struct jf_store *st, int64_t group_id, int pos, int64_t target_id,
		       const char *path, int when, bool each, unsigned ok_mask, int state)
{
	sqlite3_stmt *s = jf_q(st, Q_DEP_ADD);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int(s, 2, pos);
	jf_q_id(s, 3, target_id);
	jf_q_text(s, 4, path);
	sqlite3_bind_int(s, 5, when);
	sqlite3_bind_int(s, 6, each ? 1 : 0);
	sqlite3_bind_int64(s, 7, ok_mask);
	sqlite3_bind_int(s, 8, state);
	return jf_q_exec(st, s);
}

/* The rows of a statement of the Q_DEP_LIST shape, to fn. */
static enum jf_err rows(sqlite3_stmt *s, int (*fn)(void *ctx, const struct jf_dep_rec *r),
			void *ctx)
{
	struct jf_dep_rec r;
	while (JF_STEP_ROW(s)) {
		memset(&r, 0, sizeof(r));
		r.id = sqlite3_column_int64(s, 0);
		r.group_id = sqlite3_column_int64(s, 1);
		r.pos = sqlite3_column_int(s, 2);
		r.target_id = sqlite3_column_int64(s, 3);
		jf_q_copy(s, 4, r.path, sizeof(r.path));
		r.when = sqlite3_column_int(s, 5);
		r.each = sqlite3_column_int(s, 6) != 0;
		r.ok_mask = (unsigned)sqlite3_column_int64(s, 7);
		r.state = sqlite3_column_int(s, 8);
		r.target_state = sqlite3_column_int(s, 9);
		r.target_completions = sqlite3_column_int64(s, 10);
		r.target_finished_ms = sqlite3_column_int64(s, 11);
		if (fn(ctx, &r))
			break;
	}
	sqlite3_reset(s);
	return JF_OK;
}

enum jf_err jf_dep_list(struct jf_store *st, int64_t group_id,
			int (*fn)(void *ctx, const struct jf_dep_rec *r), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_DEP_LIST);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	return rows(s, fn, ctx);
}

enum jf_err jf_dep_waiting_on(struct jf_store *st, int64_t target_id,
			      int (*fn)(void *ctx, const struct jf_dep_rec *r), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_DEP_WAITING_ON);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, target_id);
	return rows(s, fn, ctx);
}

enum jf_err jf_dep_stale(struct jf_store *st, int (*fn)(void *ctx, const struct jf_dep_rec *r),
			 void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_DEP_STALE);
	if (!s)
		return JF_EIO;
	return rows(s, fn, ctx);
}

enum jf_err jf_dep_set_state(struct jf_store *st, int64_t id, int state)
{
	sqlite3_stmt *s = jf_q(st, Q_DEP_SET_STATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int(s, 2, state);
	return jf_q_exec(st, s);
}

enum jf_err jf_dep_targets(struct jf_store *st, int64_t group_id, int64_t *out, size_t max,
			   size_t *n)
{
	*n = 0;
	sqlite3_stmt *s = jf_q(st, Q_DEP_TARGETS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	while (JF_STEP_ROW(s)) {
		if (*n < max)
			out[*n] = sqlite3_column_int64(s, 0);
		(*n)++;
	}
	sqlite3_reset(s);
	return JF_OK;
}

enum jf_err jf_dep_target_gone(struct jf_store *st, int64_t target_id, const char *path)
{
	sqlite3_stmt *s = jf_q(st, Q_DEP_GONE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, target_id);
	jf_q_text(s, 2, path);
	return jf_q_exec(st, s);
}

enum jf_err jf_dep_summary(struct jf_store *st, int64_t group_id, struct jf_dep_summary *sum)
{
	memset(sum, 0, sizeof(*sum));
	sqlite3_stmt *s = jf_q(st, Q_DEP_SUMMARY);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	enum jf_err rc = JF_EIO;
	if (JF_STEP_ROW(s)) {
		sum->waits = sqlite3_column_int64(s, 0);
		sum->each_waits = sqlite3_column_int64(s, 1);
		sum->never = sqlite3_column_int64(s, 2);
		sum->all = sqlite3_column_int64(s, 3);
		rc = JF_OK;
	}
	sqlite3_reset(s);
	return rc;
}

enum jf_err jf_dep_each_waiting(struct jf_store *st, int64_t *n)
{
	*n = 0;
	sqlite3_stmt *s = jf_q(st, Q_DEP_EACH_WAITING);
	if (!s)
		return JF_EIO;
	enum jf_err rc = JF_EIO;
	if (JF_STEP_ROW(s)) {
		*n = sqlite3_column_int64(s, 0);
		rc = JF_OK;
	}
	sqlite3_reset(s);
	return rc;
}

enum jf_err jf_dep_ready_tasks(struct jf_store *st, int64_t group_id, bool unsubmitted, int limit,
			       int (*fn)(void *ctx, int64_t id, int64_t idx, int64_t attempt),
			       void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_DEP_READY);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int(s, 2, unsubmitted ? 1 : 0);
	sqlite3_bind_int(s, 3, limit);
	while (JF_STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
		       sqlite3_column_int64(s, 2)))
			break;
	sqlite3_reset(s);
	return JF_OK;
}

enum jf_err jf_dep_unready_tasks(struct jf_store *st, int64_t group_id, int64_t target_id,
				 unsigned ok_mask, int limit,
				 int (*fn)(void *ctx, int64_t id, int64_t idx), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_DEP_UNREADY);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	jf_q_id(s, 2, target_id);
	sqlite3_bind_int64(s, 3, ok_mask);
	sqlite3_bind_int(s, 4, limit);
	while (JF_STEP_ROW(s))
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)))
			break;
	sqlite3_reset(s);
	return JF_OK;
}
