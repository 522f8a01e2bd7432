/*
 * store_int.h - what the store's .c files share: the handle, the statement
 * cache and small binding helpers.  Not for use outside store/.
 */
#ifndef JF_STORE_INT_H
#define JF_STORE_INT_H

#include <sqlite3.h>

#include "core/lifecycle.h"
#include "store/store.h"

/* Every statement the store runs, prepared once and cached. */
enum jf_q {
#define Q(name, sql) name,
#include "store/queries.def"
#undef Q
	Q__COUNT
};

/*
 * The closed-ledger totals of the whole ledger and of a few queues, the
 * sums over thousands of rows that every status of a queue shows: kept in
 * step with every close on this connection (rows never change once
 * closed), forgotten at a rollback and when another connection changed
 * the database (PRAGMA data_version).  store_ledger.c.
 */
#define JF_LEDGER_MEMOS 16
struct ledger_memo {
	bool valid;
	int64_t queue_id; /* the whole ledger: memo_all, 0 here */
	int64_t amount, seconds;
};

/*
 * Task counts per state of a group, or of a queue's groups of one kind,
 * kept in step with the task states this connection writes
 * (store_counts.c); direct-mapped by id.
 */
#define JF_COUNT_GROUPS 512
#define JF_COUNT_QUEUES 16
struct count_memo {
	bool valid;
	int64_t id;       /* the group's or the queue's */
	int kind;         /* a queue's: the kind of the groups counted */
	int64_t queue_id; /* a group's: its queue (0 none) and kind */
	int gkind;
	int64_t c[JF_ST__COUNT];
};

struct jf_store {
	sqlite3 *db;
	sqlite3_stmt *stmts[Q__COUNT];
	int depth;           /* nesting of jf_store_begin */
	bool failed;         /* a statement failed inside the open transaction */
	char errmsg[256];    /* why the last statement, begin or commit failed */
	int64_t autocommits; /* writes made outside any transaction */
	int64_t tasks_chunk; /* task rows made at a time: JF_TASKS_CHUNK but in tests */
	struct ledger_memo memo_all;
	struct ledger_memo memo_queue[JF_LEDGER_MEMOS];
	unsigned memo_next; /* the queue memo to replace next */
	int64_t memo_dv;    /* data_version the memos were made under */
	struct count_memo count_group[JF_COUNT_GROUPS];
	struct count_memo count_queue[JF_COUNT_QUEUES];
};

/* The cached statement for q, reset and with bindings cleared. NULL on error. */
sqlite3_stmt *jf_q(struct jf_store *st, enum jf_q q);
/* A step of s gave a row. */
#define JF_STEP_ROW(s) (sqlite3_step(s) == SQLITE_ROW)
/* s reset; rc returned (a getter's or a list's last line). */
enum jf_err jf_q_finish(sqlite3_stmt *s, enum jf_err rc);
/* The id in the first column of s's first row (binds done), 0 if none; s reset. */
int64_t jf_q_one_id(sqlite3_stmt *s);
/* JF_OK, the id of the row last inserted into *id when id is not NULL. */
enum jf_err jf_q_last_id(struct jf_store *st, int64_t *id);
/* Run a statement that returns no rows (binds already done): JF_OK or JF_EIO. */
enum jf_err jf_q_exec(struct jf_store *st, sqlite3_stmt *s);
/* Run q, which returns no rows, with ?1 = id: JF_OK or JF_EIO. */
enum jf_err jf_q_exec_id(struct jf_store *st, enum jf_q q, int64_t id);
/* Map a sqlite result code to jf_err: constraint violations are JF_EEXIST. */
enum jf_err jf_q_err(int rc);
/* Column text duplicated on the heap ("" for NULL); NULL only on ENOMEM. */
char *jf_q_dup(sqlite3_stmt *s, int col);
/* Copy column text into a fixed buffer, truncating safely. */
void jf_q_copy(sqlite3_stmt *s, int col, char *buf, size_t n);
/* Bind helpers: text NULL binds SQL NULL; id 0 binds NULL. */
void jf_q_text(sqlite3_stmt *s, int i, const char *text);
void jf_q_id(sqlite3_stmt *s, int i, int64_t id);

enum jf_err jf_store_migrate(struct jf_store *st, struct jf_error *err);
/* Register the ledger's SQL functions (jf_satsum) on st->db: before any
 * statement of queries.def is prepared. */
enum jf_err jf_ledger_register(struct jf_store *st);
/* What this connection wrote may be undone: forget the ledger memos. */
void jf_ledger_forget(struct jf_store *st);
/* The memos (ledger totals, task counts): forget them all; or only if
 * another connection changed the database since they were made. */
void jf_memos_forget(struct jf_store *st);
void jf_memos_check(struct jf_store *st);
/* store_counts.c: the task count memos.  Before a task's state is written,
 * its group and state (false: no such task); after, the move; a write of
 * many tasks of a group at once forgets that group's and queue's counts. */
void jf_counts_forget(struct jf_store *st);
bool jf_counts_before(struct jf_store *st, int64_t task_id, int64_t *group_id, int *state);
void jf_counts_moved(struct jf_store *st, int64_t group_id, int from, int to);
void jf_counts_group_changed(struct jf_store *st, int64_t group_id);

#endif
