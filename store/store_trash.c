/*
 * store_trash.c - what is to go from the state directory, and when a
 * finished group's logs went.
 *
 * A row is written in the transaction that decides a removal, and removed
 * (jf_trash_done) once the engine has done it, so neither a crash before
 * the removal nor one after it loses or repeats anything that matters:
 * the removals are idempotent, and a row left over is done again.
 */
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>

enum jf_err jf_trash_add(struct jf_store *st, enum jf_trash_kind kind, const char *path)
{
	sqlite3_stmt *s = jf_q(st, Q_TRASH_ADD);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int(s, 1, (int)kind);
	jf_q_text(s, 2, path);
	return jf_q_exec(st, s);
}

static enum jf_err insert_counted(struct jf_store *st, sqlite3_stmt *s, int64_t *n)
{
	enum jf_err rc = jf_q_exec(st, s);
	if (rc == JF_OK && n)
		*n += sqlite3_changes(st->db);
	return rc;
}

enum jf_err jf_trash_group(struct jf_store *st, int64_t group_id, const char *state_dir, int64_t *n)
{
	if (n)
		*n = 0;
	static const enum jf_q qs[] = { Q_TRASH_GROUP_RUNS, Q_TRASH_GROUP_CKPT,
					Q_TRASH_GROUP_SLURM };
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		sqlite3_stmt *s = jf_q(st, qs[i]);
		if (!s)
			return JF_EIO;
		sqlite3_bind_int64(s, 1, group_id);
		if (qs[i] != Q_TRASH_GROUP_RUNS)
			jf_q_text(s, 2, state_dir);
		enum jf_err rc = insert_counted(st, s, n);
		if (rc)
			return rc;
	}
	return JF_OK;
}

enum jf_err jf_trash_group_logs(struct jf_store *st, int64_t group_id, int64_t now_ms, int64_t *n)
{
	if (n)
		*n = 0;
	sqlite3_stmt *s = jf_q(st, Q_TRASH_GROUP_RUNS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	enum jf_err rc = insert_counted(st, s, n);
	if (rc)
		return rc;
	s = jf_q(st, Q_GROUP_LOGS_FREED);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	sqlite3_bind_int64(s, 2, now_ms > 0 ? now_ms : 1);
	return jf_q_exec(st, s);
}

enum jf_err jf_trash_take(struct jf_store *st, int limit,
			  void (*fn)(void *ctx, enum jf_trash_kind kind, const char *path),
			  void *ctx, int64_t *last)
{
	*last = 0;
	sqlite3_stmt *s = jf_q(st, Q_TRASH_TAKE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int(s, 1, limit);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		*last = sqlite3_column_int64(s, 0);
		const char *path = (const char *)sqlite3_column_text(s, 2);
		fn(ctx, (enum jf_trash_kind)sqlite3_column_int(s, 1), path ? path : "");
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

enum jf_err jf_trash_done(struct jf_store *st, int64_t upto)
{
	return jf_q_exec_id(st, Q_TRASH_DONE, upto);
}

enum jf_err jf_trash_count(struct jf_store *st, int64_t *n)
{
	*n = 0;
	sqlite3_stmt *s = jf_q(st, Q_TRASH_COUNT);
	if (!s)
		return JF_EIO;
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*n = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return rc == SQLITE_ROW ? JF_OK : JF_EIO;
}

enum jf_err jf_group_list_logs_kept(struct jf_store *st, int64_t queue_id, int64_t before_ms,
				    int limit, int (*fn)(void *ctx, int64_t id, int64_t queue_id),
				    void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_GROUP_LOGS_KEPT);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, before_ms);
	sqlite3_bind_int(s, 2, limit);
	sqlite3_bind_int64(s, 3, queue_id);
	/* collect first: fn may run other statements */
	int64_t(*rows)[2] = calloc((size_t)(limit > 0 ? limit : 1), sizeof(*rows));
	if (!rows) {
		sqlite3_reset(s);
		return JF_ENOMEM;
	}
	int n = 0, rc;
	while (n < limit && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		rows[n][0] = sqlite3_column_int64(s, 0);
		rows[n][1] = sqlite3_column_int64(s, 1);
		n++;
	}
	sqlite3_reset(s);
	for (int i = 0; i < n; i++)
		if (fn(ctx, rows[i][0], rows[i][1]))
			break;
	free(rows);
	return JF_OK;
}
