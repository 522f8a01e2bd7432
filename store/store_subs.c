/*
 * store_subs.c - the outbox of a scheduling backend, and meta facts.
 *
 * A submission row is made in the same transaction that marks its tasks
 * (tasks.sub_id), so a task belongs to at most one submission at a time
 * and a crash leaves either both or neither.  The rows are never deleted
 * while their group exists: a done submission is the record of what was
 * handed to the backend.
 */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>

enum jf_err jf_sub_create(struct jf_store *st, int64_t group_id, const int64_t *idx, size_t n,
			  int64_t throttle, int64_t attempt_base, int64_t now_ms, int64_t *id)
{
	*id = 0;
	if (n == 0)
		return JF_EINVAL;
	sqlite3_stmt *s = jf_q(st, Q_SUB_CREATE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int64(s, 2, idx[0]);
	sqlite3_bind_int64(s, 3, (int64_t)n);
	sqlite3_bind_int64(s, 4, throttle);
	sqlite3_bind_int64(s, 5, attempt_base);
	sqlite3_bind_int64(s, 6, now_ms);
	enum jf_err rc = jf_q_exec(st, s);
	if (rc)
		return rc;
	int64_t sub = sqlite3_last_insert_rowid(st->db);
	for (size_t i = 0; i < n; i++) {
		s = jf_q(st, Q_SUB_TASK);
		if (!s)
			return JF_EIO;
		sqlite3_bind_int64(s, 1, group_id);
		sqlite3_bind_int64(s, 2, idx[i]);
		sqlite3_bind_int64(s, 3, sub);
		if ((rc = jf_q_exec(st, s)))
			return rc;
	}
	*id = sub;
	return JF_OK;
}

enum jf_err jf_sub_get(struct jf_store *st, int64_t id, struct jf_sub_rec *r)
{
	memset(r, 0, sizeof(*r));
	sqlite3_stmt *s = jf_q(st, Q_SUB_GET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_DONE)
		return JF_ENOENT;
	if (rc != SQLITE_ROW)
		return JF_EIO;
	r->id = sqlite3_column_int64(s, 0);
	r->group_id = sqlite3_column_int64(s, 1);
	r->state = sqlite3_column_int(s, 2);
	r->first_idx = sqlite3_column_int64(s, 3);
	r->count = sqlite3_column_int64(s, 4);
	r->throttle = sqlite3_column_int64(s, 5);
	r->attempt_base = sqlite3_column_int64(s, 6);
	r->job_id = sqlite3_column_int64(s, 7);
	r->tries = sqlite3_column_int64(s, 8);
	r->created_ms = sqlite3_column_int64(s, 9);
	jf_q_copy(s, 10, r->message, sizeof(r->message));
	return JF_OK;
}

/* Ids first, then the callback: fn may run statements of its own. */
static enum jf_err collect_ids(sqlite3_stmt *s, int64_t **ids, size_t *n)
{
	size_t cap = 0;
	*ids = NULL;
	*n = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			int64_t *p = realloc(*ids, nc * sizeof(**ids));
			if (!p) {
				free(*ids);
				*ids = NULL;
				return JF_ENOMEM;
			}
			*ids = p;
			cap = nc;
		}
		(*ids)[(*n)++] = sqlite3_column_int64(s, 0);
	}
	if (rc != SQLITE_DONE) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return JF_EIO;
	}
	return JF_OK;
}

enum jf_err jf_sub_list(struct jf_store *st, int64_t group_id, unsigned mask,
			int (*fn)(void *ctx, int64_t id), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_SUB_LIST);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int64(s, 2, (int64_t)mask);
	int64_t *ids;
	size_t n;
	enum jf_err rc = collect_ids(s, &ids, &n);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (fn(ctx, ids[i]))
			break;
	free(ids);
	return JF_OK;
}

enum jf_err jf_sub_set(struct jf_store *st, int64_t id, enum jf_sub_state state, int64_t job_id,
		       int64_t throttle, int64_t tries, const char *message)
{
	sqlite3_stmt *s = jf_q(st, Q_SUB_SET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int(s, 2, state);
	sqlite3_bind_int64(s, 3, job_id);
	sqlite3_bind_int64(s, 4, throttle);
	sqlite3_bind_int64(s, 5, tries);
	sqlite3_bind_text(s, 6, message ? message : "", -1, SQLITE_TRANSIENT);
	return jf_q_exec(st, s);
}

enum jf_err jf_sub_unfinished(struct jf_store *st, int64_t group_id,
			      int (*fn)(void *ctx, int64_t sub_id, int64_t n), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_SUB_UNFINISHED);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)))
			return JF_OK;
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

enum jf_err jf_sub_indexes(struct jf_store *st, int64_t id, int64_t **idx, size_t *n)
{
	sqlite3_stmt *s = jf_q(st, Q_SUB_INDEXES);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	return collect_ids(s, idx, n);
}

enum jf_err jf_sub_release(struct jf_store *st, int64_t id, int64_t group_id)
{
	sqlite3_stmt *s = jf_q(st, id ? Q_SUB_RELEASE : Q_SUB_RELEASE_GROUP);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id ? id : group_id);
	return jf_q_exec(st, s);
}

enum jf_err jf_task_set_sub(struct jf_store *st, int64_t task_id, int64_t sub_id)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_SET_SUB);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, task_id);
	sqlite3_bind_int64(s, 2, sub_id);
	return jf_q_exec(st, s);
}

enum jf_err jf_task_sub(struct jf_store *st, int64_t task_id, int64_t *sub_id)
{
	*sub_id = 0;
	sqlite3_stmt *s = jf_q(st, Q_TASK_SUB);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, task_id);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_DONE)
		return JF_ENOENT;
	if (rc != SQLITE_ROW)
		return JF_EIO;
	*sub_id = sqlite3_column_int64(s, 0);
	return JF_OK;
}

enum jf_err jf_task_list_unsubmitted(struct jf_store *st, int64_t group_id, int limit,
				     int (*fn)(void *ctx, int64_t id, int64_t idx, int64_t attempt),
				     void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_UNSUBMITTED);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int(s, 2, limit);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
		       sqlite3_column_int64(s, 2)))
			return JF_OK;
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

enum jf_err jf_meta_get(struct jf_store *st, const char *key, char *buf, size_t n)
{
	if (n)
		buf[0] = '\0';
	sqlite3_stmt *s = jf_q(st, Q_META_GET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_DONE)
		return JF_ENOENT;
	if (rc != SQLITE_ROW)
		return JF_EIO;
	jf_q_copy(s, 0, buf, n);
	return JF_OK;
}

enum jf_err jf_meta_set(struct jf_store *st, const char *key, const char *value)
{
	sqlite3_stmt *s = jf_q(st, Q_META_SET);
	if (!s)
		return JF_EIO;
	sqlite3_bind_text(s, 1, key, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, value, -1, SQLITE_TRANSIENT);
	return jf_q_exec(st, s);
}
