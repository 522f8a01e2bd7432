/*
 * store_int.h - what the store's .c files share: the handle, the statement
 * cache and small binding helpers.  Not for use outside store/.
 */
#ifndef JF_STORE_INT_H
#define JF_STORE_INT_H

#include <sqlite3.h>

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
	int64_t queue_id;      /* the whole ledger: memo_all, 0 here */
	int64_t amount, seconds;
};

struct jf_store {
	sqlite3 *db;
	sqlite3_stmt *stmts[Q__COUNT];
	int depth;             /* nesting of jf_store_begin */
	bool failed;           /* a statement failed inside the open transaction */
	struct ledger_memo memo_all;
	struct ledger_memo memo_queue[JF_LEDGER_MEMOS];
	unsigned memo_next;    /* the queue memo to replace next */
	int64_t memo_dv;       /* data_version the memos were made under */
};

/* The cached statement for q, reset and with bindings cleared. NULL on error. */
sqlite3_stmt *jf_q(struct jf_store *st, enum jf_q q);
/* Run a statement that returns no rows (binds already done): JF_OK or JF_EIO. */
enum jf_err jf_q_exec(struct jf_store *st, sqlite3_stmt *s);
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

#endif
