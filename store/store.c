/*
 * store.c - opening the database, the statement cache, transactions.
 *
 * The database is opened in WAL mode with foreign keys on and
 * synchronous=FULL, so a committed transaction survives a power cut.
 * Statements are prepared once (SQLITE_PREPARE_PERSISTENT) and reused.
 * Transactions nest by counting: only the outermost begin/commit/rollback
 * touch SQLite; a failed statement (a constraint violation included) or an
 * inner rollback makes the outermost commit roll back everything.
 */
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const sql_text[Q__COUNT] = {
#define Q(name, sql) [name] = sql,
#include "store/queries.def"
#undef Q
};

enum jf_err jf_q_err(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return JF_OK;
	case SQLITE_CONSTRAINT:
		return JF_EEXIST;
	case SQLITE_NOMEM:
		return JF_ENOMEM;
	case SQLITE_TOOBIG:
		return JF_EFBIG;
	default:
		return JF_EIO;
	}
}

sqlite3_stmt *jf_q(struct jf_store *st, enum jf_q q)
{
	sqlite3_stmt *s = st->stmts[q];
	if (!s) {
		if (sqlite3_prepare_v3(st->db, sql_text[q], -1, SQLITE_PREPARE_PERSISTENT, &s,
				       NULL) != SQLITE_OK)
			return NULL;
		st->stmts[q] = s;
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return s;
}

static void note_error(struct jf_store *st, const char *what)
{
	snprintf(st->errmsg, sizeof(st->errmsg), "%s: %s", what, sqlite3_errmsg(st->db));
}

enum jf_err jf_q_finish(sqlite3_stmt *s, enum jf_err rc)
{
	sqlite3_reset(s);
	return rc;
}

int64_t jf_q_one_id(sqlite3_stmt *s)
{
	int64_t id = JF_STEP_ROW(s) ? sqlite3_column_int64(s, 0) : 0;
	sqlite3_reset(s);
	return id;
}

enum jf_err jf_q_last_id(struct jf_store *st, int64_t *id)
{
	if (id)
		*id = sqlite3_last_insert_rowid(st->db);
	return JF_OK;
}

enum jf_err jf_q_exec(struct jf_store *st, sqlite3_stmt *s)
{
	if (st->depth > 0 && st->failed)
		return JF_EIO; /* all or nothing: the transaction rolls back anyway */
	if (st->depth == 0 && !sqlite3_stmt_readonly(s))
		st->autocommits++;
	int rc = sqlite3_step(s);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		note_error(st, "statement");
	sqlite3_reset(s);
	if (rc == SQLITE_DONE || rc == SQLITE_ROW)
		return JF_OK;
	if (st->depth > 0)
		st->failed = true; /* constraint violations too: all or nothing */
	return jf_q_err(rc);
}

enum jf_err jf_q_exec_id(struct jf_store *st, enum jf_q q, int64_t id)
{
	sqlite3_stmt *s = jf_q(st, q);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	return jf_q_exec(st, s);
}

const char *jf_store_last_error(const struct jf_store *st)
{
	return st->errmsg[0] ? st->errmsg : "no error recorded";
}

int64_t jf_store_autocommits(const struct jf_store *st)
{
	return st->autocommits;
}

void jf_store_set_tasks_chunk(struct jf_store *st, int64_t n)
{
	st->tasks_chunk = n > 0 ? n : JF_TASKS_CHUNK;
}

int64_t jf_store_tasks_chunk(const struct jf_store *st)
{
	return st->tasks_chunk;
}

char *jf_q_dup(sqlite3_stmt *s, int col)
{
	const unsigned char *t = sqlite3_column_text(s, col);
	return strdup(t ? (const char *)t : "");
}

void jf_q_copy(sqlite3_stmt *s, int col, char *buf, size_t n)
{
	const unsigned char *t = sqlite3_column_text(s, col);
	if (!n)
		return;
	snprintf(buf, n, "%s", t ? (const char *)t : "");
}

void jf_q_text(sqlite3_stmt *s, int i, const char *text)
{
	if (text)
		sqlite3_bind_text(s, i, text, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(s, i);
}

void jf_q_id(sqlite3_stmt *s, int i, int64_t id)
{
	if (id)
		sqlite3_bind_int64(s, i, id);
	else
		sqlite3_bind_null(s, i);
}

/* A connection to path with flags, the SQL functions registered; what a
 * writer and a reader both need. */
static enum jf_err store_connect(const char *path, int flags, const char *how,
				 struct jf_store **out, struct jf_error *err)
{
	*out = NULL;
	struct jf_store *st = calloc(1, sizeof(*st));
	if (!st)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	int rc = sqlite3_open_v2(path, &st->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		jf_error_set(err, JF_EIO, 0, "cannot open %s%s: %s", path, how,
			     st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_busy_timeout(st->db, 5000);
	st->tasks_chunk = JF_TASKS_CHUNK;
	if (jf_ledger_register(st) != JF_OK) {
		jf_error_set(err, JF_EIO, 0, "cannot register SQL functions on %s: %s", path,
			     sqlite3_errmsg(st->db));
		goto fail;
	}
	*out = st;
	return JF_OK;
fail:
	jf_store_close(st);
	return err ? err->code : JF_EIO;
}

enum jf_err jf_store_open(const char *path, struct jf_store **out, struct jf_error *err)
{
	struct jf_store *st;
	enum jf_err rc =
		store_connect(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, "", &st, err);
	*out = NULL;
	if (rc != JF_OK)
		return rc;
	char *msg = NULL;
	if (sqlite3_exec(st->db,
			 "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
			 "PRAGMA foreign_keys = ON;",
			 NULL, NULL, &msg) != SQLITE_OK) {
		jf_error_set(err, JF_EIO, 0, "cannot configure %s: %s", path, msg);
		sqlite3_free(msg);
		jf_store_close(st);
		return err ? err->code : JF_EIO;
	}
	if (jf_store_migrate(st, err) != JF_OK) {
		jf_store_close(st);
		return err ? err->code : JF_EIO;
	}
	*out = st;
	return JF_OK;
}

enum jf_err jf_store_open_reader(const char *path, struct jf_store **out, struct jf_error *err)
{
	return store_connect(path, SQLITE_OPEN_READONLY, " to read", out, err);
}

void jf_store_read_begin(struct jf_store *st)
{
	/* deferred: the snapshot is taken at the first read */
	if (sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		note_error(st, "begin to read");
}

void jf_store_read_end(struct jf_store *st)
{
	/* a statement left stepped would keep this snapshot past the end */
	for (sqlite3_stmt *q = sqlite3_next_stmt(st->db, NULL); q; q = sqlite3_next_stmt(st->db, q))
		if (sqlite3_stmt_busy(q))
			sqlite3_reset(q);
	if (sqlite3_get_autocommit(st->db) == 0)
		sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
}

const char *jf_store_path(const struct jf_store *st)
{
	const char *p = sqlite3_db_filename(st->db, "main");
	return p ? p : "";
}

void jf_store_close(struct jf_store *st)
{
	if (!st)
		return;
	for (int i = 0; i < Q__COUNT; i++)
		sqlite3_finalize(st->stmts[i]);
	sqlite3_close(st->db);
	free(st);
}

void jf_memos_forget(struct jf_store *st)
{
	jf_ledger_forget(st);
	jf_counts_forget(st);
}

void jf_memos_check(struct jf_store *st)
{
	sqlite3_stmt *s = jf_q(st, Q_DATA_VERSION);
	int64_t dv = -1;
	if (s && sqlite3_step(s) == SQLITE_ROW)
		dv = sqlite3_column_int64(s, 0);
	if (s)
		sqlite3_reset(s);
	if (dv < 0 || dv != st->memo_dv) {
		/* another connection wrote (a person with sqlite3, a test) */
		jf_memos_forget(st);
		st->memo_dv = dv;
	}
}

enum jf_err jf_store_begin(struct jf_store *st)
{
	if (st->depth++ > 0)
		return JF_OK;
	st->failed = false;
	if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		/* no transaction, but the depth stays: what the caller writes
		 * until its commit is refused, never autocommitted */
		note_error(st, "begin");
		st->failed = true;
		return JF_EIO;
	}
	return JF_OK;
}

enum jf_err jf_store_commit(struct jf_store *st)
{
	if (st->depth == 0)
		return JF_EIO;
	if (--st->depth > 0)
		return JF_OK;
	if (st->failed) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		jf_memos_forget(st);
		return JF_EIO;
	}
	if (sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		note_error(st, "commit");
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		jf_memos_forget(st);
		return JF_EIO;
	}
	return JF_OK;
}

void jf_store_rollback(struct jf_store *st)
{
	if (st->depth == 0)
		return;
	if (--st->depth > 0) {
		/* inner: the outermost commit rolls back; rolling back here
		 * would leave the caller's later statements to autocommit */
		st->failed = true;
		return;
	}
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	jf_memos_forget(st);
}

enum jf_err jf_store_check(struct jf_store *st, struct jf_error *err)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(st->db, "PRAGMA integrity_check", -1, &s, NULL) != SQLITE_OK)
		return jf_error_set(err, JF_EIO, 0, "%s", sqlite3_errmsg(st->db));
	enum jf_err rc = JF_OK;
	if (sqlite3_step(s) == SQLITE_ROW) {
		const char *r = (const char *)sqlite3_column_text(s, 0);
		if (!r || strcmp(r, "ok") != 0)
			rc = jf_error_set(err, JF_EIO, 0, "integrity_check: %s", r ? r : "?");
	} else {
		rc = jf_error_set(err, JF_EIO, 0, "%s", sqlite3_errmsg(st->db));
	}
	sqlite3_finalize(s);
	return rc;
}
