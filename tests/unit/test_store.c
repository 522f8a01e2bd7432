/*
 * test_store.c - store/store.h on a real SQLite file in a fresh temporary
 * directory per test: schema and migration, queues, groups and batches,
 * tasks, nodes, attempts, the per-scope event logs read at any offset,
 * the billing ledger (several segments per attempt, saturating totals),
 * and transactions that fail as a whole.
 *
 * Expected values are written out by hand (the floor rule for billed
 * seconds, the state numbers of core/lifecycle.h, event lines), except
 * where a long series is compared against a plain concatenation built
 * alongside.
 */
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include <sqlite3.h>

#include "core/billing.h"
#include "core/budget.h"
#include "core/lifecycle.h"
#include "core/timefmt.h"
#include "store/store.h"

/* 2026-11-29T18:00:03Z */
#define T0 INT64_C(1795975203000)

struct fix {
	char dir[256];
	char db[512];
	struct jf_store *st;
};

static struct jf_store *open_store(const char *path)
{
	struct jf_error err = { 0 };
	struct jf_store *st = NULL;
	if (jf_store_open(path, &st, &err) != JF_OK)
		fail_msg("jf_store_open %s: %s", path, err.msg);
	assert_non_null(st);
	return st;
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/jf-store-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/jobfs.db", f->dir);
	f->st = open_store(f->db);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	jf_store_close(f->st);
	jft_rmtree(f->dir);
	free(f);
	return 0;
}

/* ---- list collectors ---- */

struct ids {
	int64_t id[256];
	int64_t idx[256];
	char name[256][JF_NAME_MAX];
	int n;
	int stop_at; /* return non-zero once n reaches this, 0 = never */
};

static int collect_named(void *ctx, int64_t id, const char *name)
{
	struct ids *l = ctx;
	assert_true(l->n < 256);
	l->id[l->n] = id;
	snprintf(l->name[l->n], JF_NAME_MAX, "%s", name);
	l->n++;
	return l->stop_at && l->n >= l->stop_at;
}

static int collect_idx(void *ctx, int64_t id, int64_t idx)
{
	struct ids *l = ctx;
	assert_true(l->n < 256);
	l->id[l->n] = id;
	l->idx[l->n] = idx;
	l->n++;
	return l->stop_at && l->n >= l->stop_at;
}

static int64_t mkqueue(struct jf_store *st, const char *name)
{
	int64_t id = 0;
	assert_int_equal(jf_queue_create(st, name, 1000, 100, T0, &id), JF_OK);
	assert_true(id > 0);
	return id;
}

static int64_t mkgroup(struct jf_store *st, int64_t q, enum jf_group_kind kind, const char *dir)
{
	int64_t id = 0;
	assert_int_equal(jf_group_create(st, q, kind, dir, 1000, 100, T0, &id), JF_OK);
	assert_true(id > 0);
	return id;
}

static void accept(struct jf_store *st, int64_t g, int64_t completions, int64_t parallelism)
{
	assert_int_equal(jf_group_accept(st, g, "completions: 3\n", "shown", "", completions,
					 parallelism, 1, "job", T0 + 1000),
			 JF_OK);
}

static int64_t task_id(struct jf_store *st, int64_t g, int64_t idx)
{
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(st, g, idx, &t), JF_OK);
	int64_t id = t.id;
	jf_task_release(&t);
	return id;
}

static int task_state(struct jf_store *st, int64_t id)
{
	struct jf_task_rec t;
	assert_int_equal(jf_task_get(st, id, &t), JF_OK);
	int s = t.state;
	jf_task_release(&t);
	return s;
}

/* ---- schema ---- */

/* What migration 16 -> 17 added, taken away again: a version-16 database. */
#define UNDO_17                                                                                    \
	"DROP TRIGGER task_counts_insert; DROP TRIGGER task_counts_update; "                       \
	"DROP TRIGGER task_counts_delete; DROP TRIGGER task_counts_group_gone; "                   \
	"DROP TABLE task_counts; "

/* What migration 15 -> 16 added, taken away again: a version-15 database. */
#define UNDO_16 UNDO_17 "DROP TABLE deps; "

/* What migration 14 -> 15 added, taken away again: a version-14 database. */
#define UNDO_15 UNDO_16 "DROP INDEX ledger_queue_end; ALTER TABLE queues DROP COLUMN budget_state; "

/* What migration 13 -> 14 added, taken away again: a version-13 database. */
#define UNDO_14                                                                                    \
	UNDO_15 "ALTER TABLE attempts DROP COLUMN created_ms; ALTER TABLE attempts DROP COLUMN "   \
		"end_state; "                                                                      \
		"ALTER TABLE attempts DROP COLUMN end_reason; ALTER TABLE attempts DROP COLUMN "   \
		"runtime; "                                                                        \
		"ALTER TABLE attempts DROP COLUMN images; "                                        \
		"ALTER TABLE attempts DROP COLUMN image_digest; "

/* What migration 12 -> 13 added, taken away again: a version-12 database. */
#define UNDO_13                                                                                    \
	UNDO_14 "DROP INDEX events_store; ALTER TABLE events DROP COLUMN store_off; "              \
		"ALTER TABLE events DROP COLUMN store_id; DROP TABLE store_use; DROP TABLE "       \
		"stores; "

/* What migration 11 -> 12 added, taken away again: a version-11 database. */
#define UNDO_12                                                                                    \
	UNDO_13 "ALTER TABLE nodes DROP COLUMN runtime; ALTER TABLE nodes DROP COLUMN images; "    \
		"ALTER TABLE nodes DROP COLUMN image_digest; ALTER TABLE nodes DROP COLUMN "       \
		"reason; "                                                                         \
		"ALTER TABLE nodes DROP COLUMN endpoints; "

#define UNDO_11 UNDO_12 "DROP TABLE trash; ALTER TABLE groups DROP COLUMN logs_freed_ms; "

/* What migrations 9 -> 11 added, taken away again: a version-9 database. */
#define UNDO_10 UNDO_11 "ALTER TABLE queues DROP COLUMN message; "

/* What migrations 8 -> 10 added, taken away again: a version-8 database. */
#define UNDO_9                                                                                     \
	UNDO_10 "DROP INDEX groups_unmade; ALTER TABLE groups DROP COLUMN unmade; "                \
		"ALTER TABLE groups DROP COLUMN unmade_state; "                                    \
		"ALTER TABLE groups DROP COLUMN unmade_message; "                                  \
		"ALTER TABLE groups DROP COLUMN unmade_ms; "

static int64_t sql_int(const char *db, const char *sql)
{
	sqlite3 *h;
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *s;
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(h);
	return v;
}

static void sql_exec(const char *db, const char *sql)
{
	sqlite3 *h;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	char *msg = NULL;
	if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg ? msg : "?");
	sqlite3_close(h);
}

static void test_open_schema(void **state)
{
	struct fix *f = *state;
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	struct jf_error err = { 0 };
	assert_int_equal(jf_store_check(f->st, &err), JF_OK);
	static const char *const tables[] = {
		"queues", "groups", "tasks", "nodes", "attempts", "events", "ledger", "meta",
	};
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		char sql[256];
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'",
			 tables[i]);
		if (sql_int(f->db, sql) != 1)
			fail_msg("table %s missing", tables[i]);
	}
	assert_int_equal(sql_int(f->db, "PRAGMA user_version"), JF_STORE_SCHEMA);
	/* the ledger: several segments per attempt, at most one open */
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM pragma_index_list('ledger') "
					"WHERE origin = 'u'"),
			 0);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM pragma_index_list('ledger') "
					"WHERE name = 'ledger_open_attempt' AND \"unique\" "
					"AND partial"),
			 1);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sqlite_master WHERE "
					"type = 'index' AND tbl_name = 'ledger'"),
			 9);
}

static void test_reopen(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "keep");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g1");
	accept(f->st, g, 2, 2);
	jf_store_close(f->st);
	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	struct jf_queue_rec qr;
	assert_int_equal(jf_queue_find(f->st, "keep", &qr), JF_OK);
	assert_int_equal(qr.id, q);
	jf_queue_release(&qr);
	struct jf_group_rec gr;
	assert_int_equal(jf_group_find(f->st, q, JF_KIND_GROUP, "g1", &gr), JF_OK);
	assert_int_equal(gr.id, g);
	assert_int_equal(gr.state, JF_ST_WAITING);
	assert_int_equal(gr.completions, 2);
	jf_group_release(&gr);
	struct jf_error err = { 0 };
	assert_int_equal(jf_store_check(f->st, &err), JF_OK);
}

/* A version-1 database (no task rename index, no cpuset) is migrated on open,
 * keeping its rows; renamed tasks are then found by name. */
static void test_migrate_1_to_5(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "old");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	accept(f->st, g, 3, 3);
	jf_store_close(f->st);
	f->st = NULL;
	sqlite3 *h;
	assert_int_equal(sqlite3_open(f->db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h,
				      UNDO_9
				      "ALTER TABLE attempts DROP COLUMN kill_at_ms; "
				      "ALTER TABLE attempts DROP COLUMN preempting; "
				      "ALTER TABLE groups DROP COLUMN flags; "
				      "DROP INDEX tasks_sub; ALTER TABLE tasks DROP COLUMN sub_id; "
				      "DROP TABLE submissions; "
				      "DROP INDEX tasks_display; ALTER TABLE attempts DROP COLUMN "
				      "cpuset; DROP TABLE demand; "
				      "PRAGMA user_version = 1",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(h);
	assert_int_equal(sql_int(f->db, "PRAGMA user_version"), 1);
	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM pragma_table_info('attempts') "
					"WHERE name = 'cpuset'"),
			 1);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sqlite_master WHERE name = "
					"'tasks_display'"),
			 1);
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(f->st, g, 1, &t), JF_OK);
	int64_t tid = t.id;
	jf_task_release(&t);
	assert_int_equal(jf_task_set_display(f->st, tid, "warmup"), JF_OK);
	assert_int_equal(jf_task_find_display(f->st, g, "warmup", &t), JF_OK);
	assert_int_equal(t.idx, 1);
	assert_string_equal(t.display, "warmup");
	jf_task_release(&t);
	assert_int_equal(jf_task_find(f->st, g, 2, &t), JF_OK);
	assert_int_equal(jf_task_set_display(f->st, t.id, "warmup"), JF_EEXIST);
	jf_task_release(&t);
}

/* A version-6 database (no preemption deadlines) keeps its attempts; they
 * read as having none, and a deadline set then is kept. */
static void test_migrate_6_to_7(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	accept(f->st, g, 1, 1);
	int64_t t = task_id(f->st, g, 0), n0 = 0, a1 = 0;
	assert_int_equal(jf_node_ensure(f->st, t, 0, &n0), JF_OK);
	assert_int_equal(jf_attempt_create(f->st, n0, 1, "/run/1", "m0", "0", 1000, T0, &a1),
			 JF_OK);
	assert_int_equal(jf_attempt_set_kill_at(f->st, a1, 1234), JF_OK);
	jf_store_close(f->st);
	f->st = NULL;
	sqlite3 *h;
	assert_int_equal(sqlite3_open(f->db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h,
				      UNDO_9 "ALTER TABLE attempts DROP COLUMN kill_at_ms; "
					     "ALTER TABLE attempts DROP COLUMN preempting; "
					     "ALTER TABLE groups DROP COLUMN flags; "
					     "PRAGMA user_version = 6",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(h);
	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	struct jf_attempt_rec a;
	assert_int_equal(jf_attempt_get(f->st, a1, &a), JF_OK);
	assert_int_equal(a.kill_at_ms, 0);
	assert_string_equal(a.run_dir, "/run/1");
	assert_string_equal(a.gpu_ids, "0");
	jf_attempt_release(&a);
	assert_int_equal(jf_attempt_set_kill_at(f->st, a1, 1796160000123), JF_OK);
	assert_int_equal(jf_attempt_get(f->st, a1, &a), JF_OK);
	assert_int_equal(a.kill_at_ms, 1796160000123);
	jf_attempt_release(&a);
	struct jf_error err = { 0 };
	assert_int_equal(jf_store_check(f->st, &err), JF_OK);
}

/* 7 -> 8: the texts that stood for flags become typed flags. */
static void test_migrate_7_to_8(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	int64_t g2 = mkgroup(f->st, q, JF_KIND_GROUP, "g2");
	accept(f->st, g, 2, 2);
	accept(f->st, g2, 1, 1);
	int64_t t0 = task_id(f->st, g, 0), t1 = task_id(f->st, g, 1), n0 = 0, n1 = 0;
	int64_t a0 = 0, a1 = 0;
	assert_int_equal(jf_node_ensure(f->st, t0, 0, &n0), JF_OK);
	assert_int_equal(jf_node_ensure(f->st, t1, 0, &n1), JF_OK);
	assert_int_equal(jf_attempt_create(f->st, n0, 1, "/run/0", "m0", "0", 1000, T0, &a0),
			 JF_OK);
	assert_int_equal(jf_attempt_create(f->st, n1, 1, "/run/1", "m0", "1", 1000, T0, &a1),
			 JF_OK);
	assert_int_equal(jf_node_set_state(f->st, n0, JF_ST_RUNNING,
					   "preempting: on-demand work needs the GPUs", 1),
			 JF_OK);
	assert_int_equal(jf_node_set_state(f->st, n1, JF_ST_RUNNING, "", 1), JF_OK);
	assert_int_equal(jf_group_set_message(f->st, g2, "waiting for a low-risk window"), JF_OK);
	jf_store_close(f->st);
	f->st = NULL;
	sqlite3 *h;
	assert_int_equal(sqlite3_open(f->db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h,
				      UNDO_9 "ALTER TABLE attempts DROP COLUMN preempting; "
					     "ALTER TABLE groups DROP COLUMN flags; "
					     "PRAGMA user_version = 7",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(h);
	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	struct jf_attempt_rec a;
	assert_int_equal(jf_attempt_get(f->st, a0, &a), JF_OK);
	assert_true(a.preempting);
	jf_attempt_release(&a);
	assert_int_equal(jf_attempt_get(f->st, a1, &a), JF_OK);
	assert_false(a.preempting);
	jf_attempt_release(&a);
	struct jf_group_rec gr;
	assert_int_equal(jf_group_get(f->st, g2, &gr), JF_OK);
	assert_int_equal(gr.flags, JF_GF_WINDOW);
	jf_group_release(&gr);
	assert_int_equal(jf_group_get(f->st, g, &gr), JF_OK);
	assert_int_equal(gr.flags, 0);
	jf_group_release(&gr);
	/* and they are set as typed flags from now on */
	assert_int_equal(jf_attempt_set_preempting(f->st, a1, 77), JF_OK);
	assert_int_equal(jf_attempt_get(f->st, a1, &a), JF_OK);
	assert_true(a.preempting);
	assert_int_equal(a.kill_at_ms, 77);
	jf_attempt_release(&a);
	assert_int_equal(jf_group_set_flags(f->st, g2, 0, ""), JF_OK);
	assert_int_equal(jf_group_get(f->st, g2, &gr), JF_OK);
	assert_int_equal(gr.flags, 0);
	assert_string_equal(gr.message, "");
	jf_group_release(&gr);
	struct jf_error err = { 0 };
	assert_int_equal(jf_store_check(f->st, &err), JF_OK);
}

static int sum_demand(void *ctx, int64_t t_ms, int64_t gpus)
{
	int64_t *acc = ctx;
	acc[0]++;
	acc[1] += gpus;
	if (t_ms < acc[2])
		acc[3] = 1; /* out of order */
	acc[2] = t_ms;
	return 0;
}

/* On-demand demand samples come back per model, in time order. */
static void test_demand(void **state)
{
	struct fix *f = *state;
	assert_int_equal(jf_demand_add(f->st, "4090", 2000, 3), JF_OK);
	assert_int_equal(jf_demand_add(f->st, "4090", 1000, 1), JF_OK);
	assert_int_equal(jf_demand_add(f->st, "A800", 1500, 8), JF_OK);
	int64_t acc[4] = { 0, 0, 0, 0 };
	assert_int_equal(jf_demand_list(f->st, "4090", sum_demand, acc), JF_OK);
	assert_int_equal(acc[0], 2);
	assert_int_equal(acc[1], 4);
	assert_int_equal(acc[3], 0);
	int64_t none[4] = { 0, 0, 0, 0 };
	assert_int_equal(jf_demand_list(f->st, "H800", sum_demand, none), JF_OK);
	assert_int_equal(none[0], 0);
}

static void test_newer_schema_refused(void **state)
{
	struct fix *f = *state;
	char path[512];
	snprintf(path, sizeof(path), "%s/future.db", f->dir);
	sqlite3 *h;
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);

	struct jf_error err = { 0 };
	struct jf_store *st = (struct jf_store *)&err; /* must be set to NULL */
	assert_int_equal(jf_store_open(path, &st, &err), JF_EINVAL);
	assert_null(st);
	assert_int_equal(err.code, JF_EINVAL);
	assert_non_null(strstr(err.msg, "99"));
	assert_non_null(strstr(err.msg, "newer"));
	/* untouched */
	assert_int_equal(sql_int(path, "PRAGMA user_version"), 99);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM sqlite_master"), 0);

	/* a directory that does not exist */
	memset(&err, 0, sizeof(err));
	snprintf(path, sizeof(path), "%s/no/such/dir/x.db", f->dir);
	assert_int_equal(jf_store_open(path, &st, &err), JF_EIO);
	assert_null(st);
	assert_true(err.msg[0] != '\0');
}

/* ---- a reader's connection (fs/serve.c) ---- */

static void test_reader(void **state)
{
	struct fix *f = *state;
	int64_t q1 = mkqueue(f->st, "before");
	struct jf_error err = { 0 };
	struct jf_store *rd = NULL;
	assert_int_equal(jf_store_open_reader(jf_store_path(f->st), &rd, &err), JF_OK);
	assert_non_null(rd);
	assert_string_equal(jf_store_path(rd), jf_store_path(f->st));

	/* it reads what was committed */
	struct jf_queue_rec q;
	assert_int_equal(jf_queue_get(rd, q1, &q), JF_OK);
	assert_string_equal(q.name, "before");
	jf_queue_release(&q);

	/* it cannot write: refused, and nothing changes */
	int64_t id = 0;
	assert_int_not_equal(jf_queue_create(rd, "through-the-reader", 0, 0, T0, &id), JF_OK);
	assert_int_not_equal(jf_queue_find(f->st, "through-the-reader", &q), JF_OK);

	/* inside a read: one snapshot, whatever the writer commits meanwhile */
	jf_store_read_begin(rd);
	assert_int_equal(jf_queue_get(rd, q1, &q), JF_OK);
	jf_queue_release(&q);
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	int64_t q2 = mkqueue(f->st, "during");
	assert_int_equal(jf_store_commit(f->st), JF_OK);
	assert_int_not_equal(jf_queue_get(rd, q2, &q), JF_OK);
	jf_store_read_end(rd);
	/* the next read sees the commit */
	jf_store_read_begin(rd);
	assert_int_equal(jf_queue_get(rd, q2, &q), JF_OK);
	assert_string_equal(q.name, "during");
	jf_queue_release(&q);
	jf_store_read_end(rd);

	/* a statement left stepped (a getter reads its one row and leaves it
	 * for the next use to reset) does not keep the old snapshot past the
	 * read's end */
	jf_store_read_begin(rd);
	assert_int_equal(jf_queue_get(rd, q1, &q), JF_OK);
	jf_queue_release(&q);
	jf_store_read_end(rd);
	mkqueue(f->st, "after");
	jf_store_read_begin(rd);
	assert_int_equal(jf_queue_find(rd, "after", &q), JF_OK);
	jf_queue_release(&q);
	jf_store_read_end(rd);
	jf_store_close(rd);

	/* a database nobody made: a clear error */
	char missing[600];
	snprintf(missing, sizeof(missing), "%s/none.db", f->dir);
	assert_int_equal(jf_store_open_reader(missing, &rd, &err), JF_EIO);
	assert_null(rd);
	assert_non_null(strstr(err.msg, "none.db"));
}

/* ---- queues ---- */

static void test_queues(void **state)
{
	struct fix *f = *state;
	int64_t ids[10];
	for (int i = 0; i < 10; i++) {
		char name[16];
		snprintf(name, sizeof(name), "q%d", i);
		ids[i] = mkqueue(f->st, name);
		if (i)
			assert_true(ids[i] > ids[i - 1]);
	}
	int64_t dup = 0;
	assert_int_equal(jf_queue_create(f->st, "q3", 0, 0, T0, &dup), JF_EEXIST);

	struct jf_queue_rec q;
	assert_int_equal(jf_queue_find(f->st, "q3", &q), JF_OK);
	assert_int_equal(q.id, ids[3]);
	assert_string_equal(q.name, "q3");
	assert_string_equal(q.spec, "");
	assert_int_equal(q.capacity, 0);
	assert_int_equal(q.group_timeout, 0);
	assert_int_equal(q.created_ms, T0);
	assert_int_equal(q.uid, 1000);
	assert_int_equal(q.gid, 100);
	assert_int_equal(q.events_bytes, 0);
	assert_string_equal(q.message, "");
	jf_queue_release(&q);
	jf_queue_release(&q); /* twice is harmless */
	assert_int_equal(jf_queue_find(f->st, "nope", &q), JF_ENOENT);
	assert_int_equal(jf_queue_get(f->st, 9999, &q), JF_ENOENT);

	assert_int_equal(jf_queue_set_spec(f->st, ids[3], "capacity: 4\n", 4, 60), JF_OK);
	assert_int_equal(jf_queue_get(f->st, ids[3], &q), JF_OK);
	assert_string_equal(q.spec, "capacity: 4\n");
	assert_int_equal(q.capacity, 4);
	assert_int_equal(q.group_timeout, 60);
	jf_queue_release(&q);

	/* paging: ids after X, at most limit */
	struct ids l = { .n = 0 };
	assert_int_equal(jf_queue_list(f->st, 0, 4, collect_named, &l), JF_OK);
	assert_int_equal(l.n, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(l.id[i], ids[i]);
	assert_string_equal(l.name[2], "q2");
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_queue_list(f->st, ids[3], 4, collect_named, &l), JF_OK);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.id[0], ids[4]);
	assert_int_equal(l.id[3], ids[7]);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_queue_list(f->st, ids[7], 4, collect_named, &l), JF_OK);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.name[1], "q9");
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_queue_list(f->st, ids[9], 4, collect_named, &l), JF_OK);
	assert_int_equal(l.n, 0);
	/* the callback stops the listing */
	memset(&l, 0, sizeof(l));
	l.stop_at = 2;
	assert_int_equal(jf_queue_list(f->st, 0, 100, collect_named, &l), JF_OK);
	assert_int_equal(l.n, 2);

	/* delete: refused while it has groups */
	int64_t g = mkgroup(f->st, ids[5], JF_KIND_GROUP, "busy");
	assert_int_equal(jf_queue_delete(f->st, ids[5]), JF_ENOTEMPTY);
	assert_int_equal(jf_queue_get(f->st, ids[5], &q), JF_OK);
	jf_queue_release(&q);
	assert_int_equal(jf_group_delete(f->st, g), JF_OK);
	assert_int_equal(jf_queue_delete(f->st, ids[5]), JF_OK);
	assert_int_equal(jf_queue_get(f->st, ids[5], &q), JF_ENOENT);
	assert_int_equal(jf_queue_delete(f->st, ids[5]), JF_ENOENT);
	/* the name is free again */
	mkqueue(f->st, "q5");
}

/* ---- groups ---- */

static void test_groups(void **state)
{
	struct fix *f = *state;
	int64_t qa = mkqueue(f->st, "qa"), qb = mkqueue(f->st, "qb");
	int64_t ga = mkgroup(f->st, qa, JF_KIND_GROUP, "same");
	int64_t gb = mkgroup(f->st, qb, JF_KIND_GROUP, "same");
	int64_t bt = mkgroup(f->st, 0, JF_KIND_BATCH, "same");
	assert_true(ga != gb && gb != bt && ga != bt);
	int64_t dup = 0;
	assert_int_equal(jf_group_create(f->st, qa, JF_KIND_GROUP, "same", 0, 0, T0, &dup),
			 JF_EEXIST);
	assert_int_equal(jf_group_create(f->st, 0, JF_KIND_BATCH, "same", 0, 0, T0, &dup),
			 JF_EEXIST);

	struct jf_group_rec g;
	assert_int_equal(jf_group_find(f->st, qb, JF_KIND_GROUP, "same", &g), JF_OK);
	assert_int_equal(g.id, gb);
	assert_int_equal(g.queue_id, qb);
	assert_int_equal(g.kind, JF_KIND_GROUP);
	assert_string_equal(g.dirname, "same");
	assert_string_equal(g.display, "same");
	assert_int_equal(g.state, JF_ST_DRAFT);
	assert_string_equal(g.message, "");
	assert_null(g.spec);
	assert_null(g.draft);
	assert_string_equal(g.ignored, "");
	assert_int_equal(g.created_ms, T0);
	assert_int_equal(g.uid, 1000);
	assert_int_equal(g.gid, 100);
	assert_int_equal(g.seq, 0);
	jf_group_release(&g);
	jf_group_release(&g);
	assert_int_equal(jf_group_find(f->st, 0, JF_KIND_BATCH, "same", &g), JF_OK);
	assert_int_equal(g.id, bt);
	assert_int_equal(g.queue_id, 0);
	assert_int_equal(g.kind, JF_KIND_BATCH);
	jf_group_release(&g);
	assert_int_equal(jf_group_find(f->st, qa, JF_KIND_BATCH, "same", &g), JF_ENOENT);
	assert_int_equal(jf_group_find(f->st, qa, JF_KIND_GROUP, "other", &g), JF_ENOENT);
	assert_int_equal(jf_group_get(f->st, 99999, &g), JF_ENOENT);

	/* listing by queue and kind, paged */
	int64_t more[5];
	for (int i = 0; i < 5; i++) {
		char name[16];
		snprintf(name, sizeof(name), "g%d", i);
		more[i] = mkgroup(f->st, qa, JF_KIND_GROUP, name);
	}
	struct ids l = { .n = 0 };
	assert_int_equal(jf_group_list(f->st, qa, JF_KIND_GROUP, 0, 100, collect_named, &l), JF_OK);
	assert_int_equal(l.n, 6);
	assert_int_equal(l.id[0], ga);
	assert_string_equal(l.name[0], "same");
	assert_int_equal(l.id[5], more[4]);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_group_list(f->st, qa, JF_KIND_GROUP, ga, 3, collect_named, &l), JF_OK);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.id[0], more[0]);
	assert_int_equal(l.id[2], more[2]);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_group_list(f->st, qb, JF_KIND_GROUP, 0, 100, collect_named, &l), JF_OK);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.id[0], gb);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_group_list(f->st, 0, JF_KIND_BATCH, 0, 100, collect_named, &l), JF_OK);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.id[0], bt);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_group_list(f->st, qa, JF_KIND_BATCH, 0, 100, collect_named, &l), JF_OK);
	assert_int_equal(l.n, 0);

	/* rename: display follows the dirname unless the spec named it */
	assert_int_equal(jf_group_rename(f->st, more[0], "renamed"), JF_OK);
	assert_int_equal(jf_group_get(f->st, more[0], &g), JF_OK);
	assert_string_equal(g.dirname, "renamed");
	assert_string_equal(g.display, "renamed");
	jf_group_release(&g);
	assert_int_equal(jf_group_rename(f->st, more[1], "renamed"), JF_EEXIST);
}

static void test_reject_accept(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g1 = mkgroup(f->st, q, JF_KIND_GROUP, "g1");
	int64_t g2 = mkgroup(f->st, q, JF_KIND_GROUP, "g2");

	assert_int_equal(jf_group_reject(f->st, g1, "gpus: 3\n", "line 1: key 'gpus': bad"), JF_OK);
	struct jf_group_rec g;
	assert_int_equal(jf_group_get(f->st, g1, &g), JF_OK);
	assert_int_equal(g.state, 1);
	assert_int_equal(g.state, JF_ST_INVALID);
	assert_string_equal(g.draft, "gpus: 3\n");
	assert_string_equal(g.message, "line 1: key 'gpus': bad");
	assert_null(g.spec);
	jf_group_release(&g);

	assert_int_equal(jf_group_accept(f->st, g1, "completions: 3\n", "Shown", "a.b\nc.d", 3, 2,
					 1, "jobname", T0 + 5000),
			 JF_OK);
	assert_int_equal(jf_group_get(f->st, g1, &g), JF_OK);
	assert_int_equal(g.state, 2);
	assert_string_equal(g.spec, "completions: 3\n");
	assert_null(g.draft);
	assert_string_equal(g.message, "");
	assert_string_equal(g.display, "Shown");
	assert_string_equal(g.ignored, "a.b\nc.d");
	assert_string_equal(g.jobname, "jobname");
	assert_int_equal(g.completions, 3);
	assert_int_equal(g.parallelism, 2);
	assert_int_equal(g.nodes, 1);
	assert_int_equal(g.submitted_ms, T0 + 5000);
	assert_int_equal(g.started_ms, 0);
	assert_int_equal(g.finished_ms, 0);
	int64_t seq1 = g.seq;
	assert_true(seq1 > 0);
	jf_group_release(&g);

	struct ids l = { .n = 0 };
	assert_int_equal(jf_task_list(f->st, g1, -1, 100, collect_idx, &l), JF_OK);
	assert_int_equal(l.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(l.idx[i], i);
		struct jf_task_rec t;
		assert_int_equal(jf_task_get(f->st, l.id[i], &t), JF_OK);
		assert_int_equal(t.group_id, g1);
		assert_int_equal(t.idx, i);
		assert_int_equal(t.state, 2);
		assert_int_equal(t.attempt, 0);
		assert_int_equal(t.failures, 0);
		assert_null(t.display);
		assert_string_equal(t.message, "");
		jf_task_release(&t);
	}
	int64_t counts[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, g1, counts), JF_OK);
	assert_int_equal(counts[JF_ST_WAITING], 3);
	assert_int_equal(counts[JF_ST_RUNNING], 0);

	/* seq grows with each accept */
	accept(f->st, g2, 5, 5);
	assert_int_equal(jf_group_get(f->st, g2, &g), JF_OK);
	assert_true(g.seq > seq1);
	jf_group_release(&g);
	int64_t b = mkgroup(f->st, 0, JF_KIND_BATCH, "b");
	accept(f->st, b, 1, 1);
	struct jf_group_rec gb;
	assert_int_equal(jf_group_get(f->st, b, &gb), JF_OK);
	assert_int_equal(jf_group_get(f->st, g2, &g), JF_OK);
	assert_true(gb.seq > g.seq);
	jf_group_release(&g);
	jf_group_release(&gb);

	assert_int_equal(jf_queue_count_tasks(f->st, q, JF_KIND_GROUP, counts), JF_OK);
	assert_int_equal(counts[JF_ST_WAITING], 8);
	assert_int_equal(jf_queue_count_tasks(f->st, 0, JF_KIND_BATCH, counts), JF_OK);
	assert_int_equal(counts[JF_ST_WAITING], 1);
}

static int collect_active(void *ctx, int64_t id)
{
	struct ids *l = ctx;
	l->id[l->n++] = id;
	return 0;
}

/* An emptied draft is a draft again; an accepted group is not cleared. A
 * queue counts its groups and its live ones (what rm -rf may remove). */
static void test_clear_draft_counts(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g1 = mkgroup(f->st, q, JF_KIND_GROUP, "g1");
	int64_t g2 = mkgroup(f->st, q, JF_KIND_GROUP, "g2");
	int64_t all = -1, live = -1;
	assert_int_equal(jf_queue_group_counts(f->st, q, &all, &live), JF_OK);
	assert_int_equal(all, 2);
	assert_int_equal(live, 0);

	assert_int_equal(jf_group_reject(f->st, g1, "bogus: 1\n", "line 1: unknown key"), JF_OK);
	assert_int_equal(jf_group_clear_draft(f->st, g1), JF_OK);
	struct jf_group_rec g;
	assert_int_equal(jf_group_get(f->st, g1, &g), JF_OK);
	assert_int_equal(g.state, JF_ST_DRAFT);
	assert_null(g.draft);
	assert_string_equal(g.message, "");
	jf_group_release(&g);

	accept(f->st, g2, 3, 1);
	assert_int_equal(jf_group_clear_draft(f->st, g2), JF_OK);
	assert_int_equal(jf_group_get(f->st, g2, &g), JF_OK);
	assert_int_equal(g.state, JF_ST_WAITING);
	assert_string_equal(g.spec, "completions: 3\n");
	jf_group_release(&g);
	assert_int_equal(jf_queue_group_counts(f->st, q, &all, &live), JF_OK);
	assert_int_equal(all, 2);
	assert_int_equal(live, 1);
	assert_int_equal(jf_group_set_state(f->st, g2, JF_ST_SUCCEEDED, "", T0 + 9000), JF_OK);
	assert_int_equal(jf_queue_group_counts(f->st, q, &all, &live), JF_OK);
	assert_int_equal(live, 0);
	int64_t empty = mkqueue(f->st, "empty");
	assert_int_equal(jf_queue_group_counts(f->st, empty, &all, &live), JF_OK);
	assert_int_equal(all, 0);
	assert_int_equal(live, 0);
}

static void test_group_states(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g1 = mkgroup(f->st, q, JF_KIND_GROUP, "g1");
	int64_t g2 = mkgroup(f->st, q, JF_KIND_GROUP, "g2");
	int64_t g3 = mkgroup(f->st, q, JF_KIND_GROUP, "g3");
	accept(f->st, g2, 1, 1);
	accept(f->st, g1, 1, 1); /* submitted after g2 */
	struct ids l = { .n = 0 };
	assert_int_equal(jf_group_list_active(f->st, collect_active, &l), JF_OK);
	assert_int_equal(l.n, 2); /* g3 is a draft */
	assert_int_equal(l.id[0], g2);
	assert_int_equal(l.id[1], g1);
	(void)g3;

	struct jf_group_rec g;
	/* Running sets started once */
	assert_int_equal(jf_group_set_state(f->st, g1, JF_ST_RUNNING, NULL, T0 + 10000), JF_OK);
	assert_int_equal(jf_group_get(f->st, g1, &g), JF_OK);
	assert_int_equal(g.state, JF_ST_RUNNING);
	assert_int_equal(g.started_ms, T0 + 10000);
	assert_int_equal(g.finished_ms, 0);
	assert_string_equal(g.message, "");
	jf_group_release(&g);
	assert_int_equal(jf_group_set_state(f->st, g1, JF_ST_WAITING, "idle", T0 + 20000), JF_OK);
	assert_int_equal(jf_group_set_state(f->st, g1, JF_ST_INITIALIZING, NULL, T0 + 30000),
			 JF_OK);
	assert_int_equal(jf_group_get(f->st, g1, &g), JF_OK);
	assert_int_equal(g.started_ms, T0 + 10000);
	assert_string_equal(g.message, "idle"); /* NULL keeps the message */
	jf_group_release(&g);
	/* final states set finished; Waiting clears it */
	assert_int_equal(jf_group_set_state(f->st, g1, JF_ST_FAILED, "boom", T0 + 40000), JF_OK);
	assert_int_equal(jf_group_get(f->st, g1, &g), JF_OK);
	assert_int_equal(g.state, JF_ST_FAILED);
	assert_int_equal(g.finished_ms, T0 + 40000);
	assert_string_equal(g.message, "boom");
	jf_group_release(&g);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_group_list_active(f->st, collect_active, &l), JF_OK);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.id[0], g2);
	assert_int_equal(jf_group_set_state(f->st, g1, JF_ST_WAITING, "", T0 + 50000), JF_OK);
	assert_int_equal(jf_group_get(f->st, g1, &g), JF_OK);
	assert_int_equal(g.finished_ms, 0);
	assert_int_equal(g.started_ms, T0 + 10000);
	jf_group_release(&g);
	/* Paused is not final */
	assert_int_equal(jf_group_set_state(f->st, g1, JF_ST_PAUSED, NULL, T0 + 60000), JF_OK);
	assert_int_equal(jf_group_get(f->st, g1, &g), JF_OK);
	assert_int_equal(g.finished_ms, 0);
	jf_group_release(&g);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_group_list_active(f->st, collect_active, &l), JF_OK);
	assert_int_equal(l.n, 2);
	for (int s = JF_ST_SUCCEEDED; s <= JF_ST_STOPPED; s++) {
		assert_int_equal(jf_group_set_state(f->st, g2, s, NULL, T0 + s), JF_OK);
		assert_int_equal(jf_group_get(f->st, g2, &g), JF_OK);
		assert_int_equal(g.finished_ms, T0 + s);
		jf_group_release(&g);
	}

	/* failures and reset */
	accept(f->st, g3, 3, 3);
	assert_int_equal(jf_group_add_failure(f->st, g3), JF_OK);
	assert_int_equal(jf_group_add_failure(f->st, g3), JF_OK);
	assert_int_equal(jf_group_get(f->st, g3, &g), JF_OK);
	assert_int_equal(g.failures, 2);
	jf_group_release(&g);
	int64_t t0 = task_id(f->st, g3, 0), t1 = task_id(f->st, g3, 1), t2 = task_id(f->st, g3, 2);
	assert_int_equal(jf_task_set_state(f->st, t0, JF_ST_FAILED, "x", T0 + 1), JF_OK);
	assert_int_equal(jf_task_set_counters(f->st, t0, 3, 3), JF_OK);
	assert_int_equal(jf_task_set_state(f->st, t1, JF_ST_SUCCEEDED, "", T0 + 2), JF_OK);
	assert_int_equal(jf_task_set_state(f->st, t2, JF_ST_FAILED, "y", T0 + 3), JF_OK);
	assert_int_equal(jf_task_set_counters(f->st, t2, 1, 1), JF_OK);
	assert_int_equal(jf_group_set_state(f->st, g3, JF_ST_FAILED, "bad", T0 + 4), JF_OK);
	/* one task only: the group keeps its counters */
	assert_int_equal(jf_group_reset(f->st, g3, t2), JF_OK);
	struct jf_task_rec t;
	assert_int_equal(jf_task_get(f->st, t2, &t), JF_OK);
	assert_int_equal(t.state, JF_ST_WAITING);
	assert_int_equal(t.failures, 0);
	assert_int_equal(t.finished_ms, 0);
	assert_string_equal(t.message, "");
	jf_task_release(&t);
	assert_int_equal(task_state(f->st, t0), JF_ST_FAILED);
	assert_int_equal(jf_group_get(f->st, g3, &g), JF_OK);
	assert_int_equal(g.failures, 2);
	jf_group_release(&g);
	/* the whole group */
	assert_int_equal(jf_group_reset(f->st, g3, 0), JF_OK);
	assert_int_equal(jf_group_get(f->st, g3, &g), JF_OK);
	assert_int_equal(g.failures, 0);
	assert_int_equal(g.finished_ms, 0);
	assert_string_equal(g.message, "");
	jf_group_release(&g);
	for (int64_t i = 0; i < 3; i++) {
		assert_int_equal(jf_task_find(f->st, g3, i, &t), JF_OK);
		assert_int_equal(t.state, JF_ST_WAITING);
		assert_int_equal(t.failures, 0);
		jf_task_release(&t);
	}
}

/* ---- tasks ---- */

static void test_tasks(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	accept(f->st, g, 10, 4);

	struct ids l = { .n = 0 };
	assert_int_equal(jf_task_list(f->st, g, -1, 4, collect_idx, &l), JF_OK);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.idx[0], 0);
	assert_int_equal(l.idx[3], 3);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_task_list(f->st, g, 3, 4, collect_idx, &l), JF_OK);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.idx[0], 4);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_task_list(f->st, g, 7, 4, collect_idx, &l), JF_OK);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.idx[1], 9);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_task_list(f->st, g, 9, 4, collect_idx, &l), JF_OK);
	assert_int_equal(l.n, 0);

	int64_t id[10];
	for (int i = 0; i < 10; i++)
		id[i] = task_id(f->st, g, i);
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(f->st, g, 10, &t), JF_ENOENT);
	assert_int_equal(jf_task_get(f->st, 999999, &t), JF_ENOENT);

	/* task times as the SQL says */
	assert_int_equal(jf_task_set_state(f->st, id[0], JF_ST_INITIALIZING, "", T0 + 1000), JF_OK);
	assert_int_equal(jf_task_set_state(f->st, id[0], JF_ST_RUNNING, NULL, T0 + 2000), JF_OK);
	assert_int_equal(jf_task_get(f->st, id[0], &t), JF_OK);
	assert_int_equal(t.started_ms, T0 + 1000);
	assert_int_equal(t.finished_ms, 0);
	jf_task_release(&t);
	assert_int_equal(jf_task_set_state(f->st, id[0], JF_ST_SUCCEEDED, "ok", T0 + 3000), JF_OK);
	assert_int_equal(jf_task_get(f->st, id[0], &t), JF_OK);
	assert_int_equal(t.finished_ms, T0 + 3000);
	assert_string_equal(t.message, "ok");
	jf_task_release(&t);
	assert_int_equal(jf_task_set_counters(f->st, id[1], 4, 2), JF_OK);
	assert_int_equal(jf_task_get(f->st, id[1], &t), JF_OK);
	assert_int_equal(t.attempt, 4);
	assert_int_equal(t.failures, 2);
	jf_task_release(&t);

	/* states: 0 Succeeded, 1-2 Running, 3 Paused, 4 Failed, rest Waiting */
	assert_int_equal(jf_task_set_state(f->st, id[1], JF_ST_RUNNING, "", T0), JF_OK);
	assert_int_equal(jf_task_set_state(f->st, id[2], JF_ST_RUNNING, "", T0), JF_OK);
	assert_int_equal(jf_task_set_state(f->st, id[3], JF_ST_PAUSED, "", T0), JF_OK);
	assert_int_equal(jf_task_set_state(f->st, id[4], JF_ST_FAILED, "", T0), JF_OK);

	/* list_state: lowest index first, at most limit */
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_task_list_state(f->st, g, JF_ST_WAITING, 3, collect_idx, &l), JF_OK);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.idx[0], 5);
	assert_int_equal(l.idx[1], 6);
	assert_int_equal(l.idx[2], 7);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_task_list_state(f->st, g, JF_ST_RUNNING, 100, collect_idx, &l), JF_OK);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.id[0], id[1]);
	assert_int_equal(l.id[1], id[2]);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_task_list_state(f->st, g, JF_ST_STOPPED, 100, collect_idx, &l), JF_OK);
	assert_int_equal(l.n, 0);

	/* set_state_all with masks */
	int64_t changed = -1;
	unsigned mask = (1u << JF_ST_WAITING) | (1u << JF_ST_PAUSED);
	assert_int_equal(jf_task_set_state_all(f->st, g, mask, JF_ST_STOPPED, "the group ended",
					       T0 + 9000, &changed),
			 JF_OK);
	assert_int_equal(changed, 6); /* 3 and 5..9 */
	static const int want[10] = {
		JF_ST_SUCCEEDED, JF_ST_RUNNING, JF_ST_RUNNING, JF_ST_STOPPED, JF_ST_FAILED,
		JF_ST_STOPPED,   JF_ST_STOPPED, JF_ST_STOPPED, JF_ST_STOPPED, JF_ST_STOPPED,
	};
	for (int i = 0; i < 10; i++)
		assert_int_equal(task_state(f->st, id[i]), want[i]);
	assert_int_equal(jf_task_get(f->st, id[7], &t), JF_OK);
	assert_int_equal(t.finished_ms, T0 + 9000);
	assert_string_equal(t.message, "the group ended");
	jf_task_release(&t);
	assert_int_equal(jf_task_get(f->st, id[1], &t), JF_OK);
	assert_string_equal(t.message, ""); /* untouched */
	jf_task_release(&t);
	/* empty mask: nothing */
	assert_int_equal(jf_task_set_state_all(f->st, g, 0, JF_ST_WAITING, NULL, T0, &changed),
			 JF_OK);
	assert_int_equal(changed, 0);
	/* back to Waiting clears finished */
	assert_int_equal(jf_task_set_state_all(f->st, g, 1u << JF_ST_STOPPED, JF_ST_WAITING, NULL,
					       T0, &changed),
			 JF_OK);
	assert_int_equal(changed, 6);
	assert_int_equal(jf_task_get(f->st, id[7], &t), JF_OK);
	assert_int_equal(t.finished_ms, 0);
	jf_task_release(&t);
	int64_t counts[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, g, counts), JF_OK);
	assert_int_equal(counts[JF_ST_WAITING], 6);
	assert_int_equal(counts[JF_ST_RUNNING], 2);
	assert_int_equal(counts[JF_ST_SUCCEEDED], 1);
	assert_int_equal(counts[JF_ST_FAILED], 1);
	assert_int_equal(counts[JF_ST_STOPPED], 0);
}

/* ---- nodes and attempts ---- */

static int collect_open(void *ctx, const struct jf_attempt_rec *a)
{
	struct ids *l = ctx;
	l->id[l->n++] = a->id;
	return 0;
}

static void test_nodes_attempts(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	accept(f->st, g, 2, 2);
	int64_t t = task_id(f->st, g, 0);

	struct jf_node_rec n;
	assert_int_equal(jf_node_find(f->st, t, 0, &n), JF_ENOENT);
	int64_t n0 = 0, again = 0, n1 = 0;
	assert_int_equal(jf_node_ensure(f->st, t, 0, &n0), JF_OK);
	assert_int_equal(jf_node_ensure(f->st, t, 0, &again), JF_OK);
	assert_int_equal(again, n0);
	assert_int_equal(jf_node_ensure(f->st, t, 1, &n1), JF_OK);
	assert_true(n1 != n0);
	assert_int_equal(jf_node_find(f->st, t, 0, &n), JF_OK);
	assert_int_equal(n.id, n0);
	assert_int_equal(n.task_id, t);
	assert_int_equal(n.idx, 0);
	assert_int_equal(n.state, JF_ST_WAITING);
	assert_int_equal(n.exit_code, -1);
	assert_int_equal(n.attempt, 0);
	assert_int_equal(n.attempt_id, 0);
	assert_string_equal(n.machine, "");
	jf_node_release(&n);

	/* node state times */
	assert_int_equal(jf_node_set_state(f->st, n0, JF_ST_RUNNING, "", T0 + 100), JF_OK);
	assert_int_equal(jf_node_get(f->st, n0, &n), JF_OK);
	assert_int_equal(n.started_ms, T0 + 100);
	jf_node_release(&n);
	assert_int_equal(jf_node_set_state(f->st, n0, JF_ST_PREEMPTED, "spot", T0 + 200), JF_OK);
	assert_int_equal(jf_node_get(f->st, n0, &n), JF_OK);
	assert_int_equal(n.finished_ms, T0 + 200);
	assert_string_equal(n.message, "spot");
	jf_node_release(&n);
	assert_int_equal(jf_node_set_state(f->st, n0, JF_ST_INITIALIZING, NULL, T0 + 300), JF_OK);
	assert_int_equal(jf_node_get(f->st, n0, &n), JF_OK);
	assert_int_equal(n.finished_ms, 0);
	jf_node_release(&n);

	/* attempts */
	int64_t a1 = 0, a2 = 0, dup = 0;
	assert_int_equal(jf_attempt_create(f->st, n0, 1, "/run/1", "4090-0", "0,1", 40000, T0, &a1),
			 JF_OK);
	assert_int_equal(jf_attempt_create(f->st, n0, 1, "/run/1b", "4090-0", "0", 1, T0, &dup),
			 JF_EEXIST);
	assert_int_equal(jf_attempt_create(f->st, n1, 1, "/run/n1", "4090-1", "", 1000, T0, &a2),
			 JF_OK);
	assert_int_equal(jf_node_set_run(f->st, n0, "4090-0", "0,1", 4242, -1, 1, a1), JF_OK);
	assert_int_equal(jf_node_get(f->st, n0, &n), JF_OK);
	assert_string_equal(n.machine, "4090-0");
	assert_string_equal(n.gpu_ids, "0,1");
	assert_int_equal(n.pid, 4242);
	assert_int_equal(n.attempt, 1);
	assert_int_equal(n.attempt_id, a1);
	jf_node_release(&n);

	struct jf_attempt_rec a;
	assert_int_equal(jf_attempt_get(f->st, a1, &a), JF_OK);
	assert_int_equal(a.node_id, n0);
	assert_int_equal(a.attempt, 1);
	assert_string_equal(a.handle, "");
	assert_string_equal(a.run_dir, "/run/1");
	assert_string_equal(a.machine, "4090-0");
	assert_string_equal(a.gpu_ids, "0,1");
	assert_int_equal(a.cpu_milli, 40000);
	assert_int_equal(a.start_ms, 0);
	assert_int_equal(a.end_ms, 0);
	assert_int_equal(a.exit_code, -1);
	assert_string_equal(a.reason, "");
	jf_attempt_release(&a);
	jf_attempt_release(&a);

	assert_int_equal(jf_attempt_started(f->st, a1, "local:4242:99", 4242, T0 + 400), JF_OK);
	assert_int_equal(jf_attempt_started(f->st, a2, "local:4343:99", 4343, T0 + 400), JF_OK);
	struct ids l = { .n = 0 };
	assert_int_equal(jf_attempt_list_open(f->st, collect_open, &l), JF_OK);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.id[0], a1);
	assert_int_equal(l.id[1], a2);

	assert_int_equal(jf_attempt_ended(f->st, a1, T0 + 5400, 3, "exit code 3"), JF_OK);
	assert_int_equal(jf_attempt_find(f->st, n0, 1, &a), JF_OK);
	assert_int_equal(a.id, a1);
	assert_string_equal(a.handle, "local:4242:99");
	assert_int_equal(a.pid, 4242);
	assert_int_equal(a.start_ms, T0 + 400);
	assert_int_equal(a.end_ms, T0 + 5400);
	assert_int_equal(a.exit_code, 3);
	assert_string_equal(a.reason, "exit code 3");
	jf_attempt_release(&a);
	assert_int_equal(jf_attempt_find(f->st, n0, 2, &a), JF_ENOENT);
	assert_int_equal(jf_attempt_get(f->st, 999999, &a), JF_ENOENT);

	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_attempt_list_open(f->st, collect_open, &l), JF_OK);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.id[0], a2);
	/* an end at time 0 still closes the attempt */
	assert_int_equal(jf_attempt_ended(f->st, a2, 0, -1, NULL), JF_OK);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_attempt_list_open(f->st, collect_open, &l), JF_OK);
	assert_int_equal(l.n, 0);

	/* nodes held by the queue's groups */
	int64_t held = -1;
	assert_int_equal(jf_queue_running_nodes(f->st, q, &held), JF_OK);
	assert_int_equal(held, 1); /* n0 is Initializing, n1 Waiting */
	assert_int_equal(jf_node_set_state(f->st, n1, JF_ST_RUNNING, "", T0), JF_OK);
	assert_int_equal(jf_queue_running_nodes(f->st, q, &held), JF_OK);
	assert_int_equal(held, 2);

	/* deleting the group removes its tasks, nodes and attempts */
	assert_int_equal(jf_group_delete(f->st, g), JF_OK);
	struct jf_task_rec tr;
	assert_int_equal(jf_task_get(f->st, t, &tr), JF_ENOENT);
	assert_int_equal(jf_node_get(f->st, n0, &n), JF_ENOENT);
	assert_int_equal(jf_attempt_get(f->st, a1, &a), JF_ENOENT);
}

/* ---- events ---- */

struct scope_ref {
	enum jf_scope scope;
	int64_t id;
	char *text;
	size_t len, cap;
};

static void ref_append(struct scope_ref *r, const char *line, size_t n)
{
	if (r->len + n + 1 > r->cap) {
		r->cap = (r->len + n + 1) * 2;
		r->text = realloc(r->text, r->cap);
		assert_non_null(r->text);
	}
	memcpy(r->text + r->len, line, n);
	r->len += n;
	r->text[r->len] = '\0';
}

/* The line jf_event_add should write. */
static size_t expect_line(char *buf, size_t n, int64_t ms, const char *type, const char *reason,
			  const char *object, const char *message)
{
	char ts[JF_TIME_BUF];
	jf_time_rfc3339(ms, ts, sizeof(ts));
	int w = snprintf(buf, n, "%s %s %s %s ", ts, type, reason,
			 object && *object ? object : ".");
	assert_true(w > 0 && (size_t)w < n);
	size_t off = (size_t)w;
	for (const char *p = message; *p; p++) {
		unsigned char c = (unsigned char)*p;
		assert_true(off + 2 < n);
		buf[off++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
	}
	buf[off++] = '\n';
	buf[off] = '\0';
	return off;
}

/* One read of n bytes at off must give exactly the reference's bytes. */
static void check_read(struct jf_store *st, const struct scope_ref *r, int64_t off, size_t n)
{
	char buf[64];
	assert_true(n <= sizeof(buf));
	size_t left = r->len - (size_t)off;
	size_t want = left < n ? left : n;
	size_t got = 9999;
	assert_int_equal(jf_event_read(st, r->scope, r->id, off, buf, n, &got), JF_OK);
	if (got != want)
		fail_msg("scope %d id %lld: read at %lld size %zu got %zu bytes, want %zu",
			 (int)r->scope, (long long)r->id, (long long)off, n, got, want);
	assert_memory_equal(buf, r->text + off, want);
}

static void check_scope(struct jf_store *st, const struct scope_ref *r, bool every_offset)
{
	int64_t size = -1;
	assert_int_equal(jf_event_size(st, r->scope, r->id, &size), JF_OK);
	assert_int_equal(size, (int64_t)r->len);

	/* all at once, with room to spare */
	char *all = malloc(r->len + 100);
	assert_non_null(all);
	size_t got = 12345;
	assert_int_equal(jf_event_read(st, r->scope, r->id, 0, all, r->len + 100, &got), JF_OK);
	assert_int_equal(got, r->len);
	assert_memory_equal(all, r->text, r->len);
	free(all);

	/* at every offset, with buffers of 1..7 bytes and a larger one */
	static const size_t sizes[] = { 1, 2, 3, 4, 5, 6, 7, 64 };
	for (int64_t off = 0; off <= size; off++) {
		if (!every_offset && off % 97 != 0 && off != size && off != size - 1)
			continue;
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
			check_read(st, r, off, sizes[k]);
	}
	/* past the end */
	char b[8];
	got = 1;
	assert_int_equal(jf_event_read(st, r->scope, r->id, size + 10, b, sizeof(b), &got), JF_OK);
	assert_int_equal(got, 0);

	/* sequential reads with a 5-byte buffer put the text back together */
	char *joined = malloc(r->len + 1);
	assert_non_null(joined);
	size_t at = 0;
	for (;;) {
		assert_int_equal(jf_event_read(st, r->scope, r->id, (int64_t)at, joined + at,
					       r->len + 1 - at < 5 ? r->len + 1 - at : 5, &got),
				 JF_OK);
		if (got == 0)
			break;
		at += got;
		assert_true(at <= r->len);
	}
	assert_int_equal(at, r->len);
	assert_memory_equal(joined, r->text, r->len);
	free(joined);
}

static void test_events(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	accept(f->st, g, 2, 2);
	int64_t t0 = task_id(f->st, g, 0), t1 = task_id(f->st, g, 1);
	int64_t n0 = 0;
	assert_int_equal(jf_node_ensure(f->st, t0, 0, &n0), JF_OK);

	/* the first line, written out */
	struct jf_event_scope sq = { .queue_id = q };
	assert_int_equal(jf_event_add(f->st, &sq, T0, "Normal", "Created", "queue", "made"), JF_OK);
	char buf[256];
	size_t got = 0;
	assert_int_equal(jf_event_read(f->st, JF_SCOPE_QUEUE, q, 0, buf, sizeof(buf), &got), JF_OK);
	static const char first[] = "2026-11-29T18:00:03Z Normal Created queue made\n";
	assert_int_equal(got, strlen(first));
	assert_memory_equal(buf, first, got);

	struct scope_ref refs[] = {
		{ JF_SCOPE_QUEUE, q, NULL, 0, 0 }, { JF_SCOPE_GROUP, g, NULL, 0, 0 },
		{ JF_SCOPE_TASK, t0, NULL, 0, 0 }, { JF_SCOPE_TASK, t1, NULL, 0, 0 },
		{ JF_SCOPE_NODE, n0, NULL, 0, 0 },
	};
	ref_append(&refs[0], first, strlen(first));

	/* which scopes each event goes to: queue, group, task (t0/t1), node */
	static const struct {
		bool q, g;
		int task; /* 0 none, 1 t0, 2 t1 */
		bool n;
	} shape[] = {
		{ false, true, 0, false }, { true, true, 0, false },  { false, true, 1, false },
		{ false, true, 1, true },  { false, true, 2, false }, { true, false, 0, false },
		{ false, false, 1, true }, { false, true, 2, false }, { false, false, 0, true },
	};
	static const char *const messages[] = {
		"plain",
		"two\nlines",
		"tab\there and\r\ncarriage",
		"bell\a esc\x1b del\x7f end",
		"",
		"unicode stays: \xc3\xa9t\xc3\xa9",
		"trailing newline\n",
	};
	const size_t nmsg = sizeof(messages) / sizeof(messages[0]);
	const size_t nshape = sizeof(shape) / sizeof(shape[0]);
	for (int i = 0; i < 60; i++) {
		size_t k = (size_t)i % nshape;
		const char *msg = messages[(size_t)i % nmsg];
		const char *obj = i % 5 == 0 ? "" : "tasks/0/nodes/0";
		int64_t ms = T0 + 1000 * (int64_t)(i + 1) + (i % 3) * 999;
		struct jf_event_scope sc = {
			.queue_id = shape[k].q ? q : 0,
			.group_id = shape[k].g ? g : 0,
			.task_id = shape[k].task == 1   ? t0
				   : shape[k].task == 2 ? t1
							: 0,
			.node_id = shape[k].n ? n0 : 0,
		};
		const char *type = i % 2 ? "Warning" : "Normal";
		assert_int_equal(jf_event_add(f->st, &sc, ms, type, "Reason", obj, msg), JF_OK);
		size_t len = expect_line(buf, sizeof(buf), ms, type, "Reason", obj, msg);
		/* exactly one line */
		assert_ptr_equal(memchr(buf, '\n', len), buf + len - 1);
		if (sc.queue_id)
			ref_append(&refs[0], buf, len);
		if (sc.group_id)
			ref_append(&refs[1], buf, len);
		if (sc.task_id == t0)
			ref_append(&refs[2], buf, len);
		if (sc.task_id == t1)
			ref_append(&refs[3], buf, len);
		if (sc.node_id)
			ref_append(&refs[4], buf, len);
	}
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		assert_true(refs[i].len > 0);
		check_scope(f->st, &refs[i], true);
	}
	/* the message with a newline became one line */
	assert_non_null(strstr(refs[1].text, " two lines\n"));
	assert_non_null(strstr(refs[1].text, " bell  esc  del  end\n"));

	/* events_bytes on the records agree */
	struct jf_queue_rec qr;
	assert_int_equal(jf_queue_get(f->st, q, &qr), JF_OK);
	assert_int_equal(qr.events_bytes, (int64_t)refs[0].len);
	jf_queue_release(&qr);
	struct jf_node_rec nr;
	assert_int_equal(jf_node_get(f->st, n0, &nr), JF_OK);
	assert_int_equal(nr.events_bytes, (int64_t)refs[4].len);
	jf_node_release(&nr);

	/* a scope with nothing, and the ALL scope that has no file */
	int64_t size = -1;
	assert_int_equal(jf_event_size(f->st, JF_SCOPE_TASK, 999999, &size), JF_OK);
	assert_int_equal(size, 0);
	assert_int_equal(jf_event_read(f->st, JF_SCOPE_TASK, 999999, 0, buf, sizeof(buf), &got),
			 JF_OK);
	assert_int_equal(got, 0);
	assert_int_equal(jf_event_size(f->st, JF_SCOPE_ALL, 0, &size), JF_EINVAL);
	assert_int_equal(jf_event_read(f->st, JF_SCOPE_ALL, 0, 0, buf, sizeof(buf), &got),
			 JF_EINVAL);

	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		free(refs[i].text);
}

/* More than one page of rows (the reader fetches 256 at a time), and a
 * message longer than a line may be. */
static void test_events_many(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	struct scope_ref r = { JF_SCOPE_QUEUE, q, NULL, 0, 0 };
	struct jf_event_scope sc = { .queue_id = q };
	char msg[64], line[256];
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	for (int i = 0; i < 700; i++) {
		snprintf(msg, sizeof(msg), "event number %d", i);
		int64_t ms = T0 + i * 1000;
		enum jf_err rc = jf_event_add(f->st, &sc, ms, "Normal", "Tick", "queue", msg);
		assert_int_equal(rc, JF_OK);
		size_t len = expect_line(line, sizeof(line), ms, "Normal", "Tick", "queue", msg);
		ref_append(&r, line, len);
	}
	assert_int_equal(jf_store_commit(f->st), JF_OK);
	check_scope(f->st, &r, false);

	/* a long message is cut, and the line still ends with a newline */
	char *big = malloc(5000);
	assert_non_null(big);
	memset(big, 'x', 4999);
	big[4999] = '\0';
	int64_t before = 0, after = 0;
	assert_int_equal(jf_event_size(f->st, JF_SCOPE_QUEUE, q, &before), JF_OK);
	assert_int_equal(jf_event_add(f->st, &sc, T0, "Warning", "Big", "queue", big), JF_OK);
	assert_int_equal(jf_event_size(f->st, JF_SCOPE_QUEUE, q, &after), JF_OK);
	int64_t len = after - before;
	assert_true(len > 100 && len <= 2048);
	char *tail = malloc((size_t)len);
	assert_non_null(tail);
	size_t got = 0;
	assert_int_equal(jf_event_read(f->st, JF_SCOPE_QUEUE, q, before, tail, (size_t)len, &got),
			 JF_OK);
	assert_int_equal(got, (size_t)len);
	assert_int_equal(tail[len - 1], '\n');
	assert_null(memchr(tail, '\n', (size_t)len - 1));
	free(tail);
	free(big);
	free(r.text);
}

/* ---- ledger ---- */

struct ledger_list {
	struct jf_ledger_rec r[32];
	int n;
};

static int collect_ledger(void *ctx, const struct jf_ledger_rec *r)
{
	struct ledger_list *l = ctx;
	assert_true(l->n < 32);
	l->r[l->n++] = *r;
	return 0;
}

struct totals {
	char key[8][80];
	int64_t amount[8], seconds[8];
	int n;
};

static int collect_totals(void *ctx, const char *key, int64_t amount, int64_t seconds)
{
	struct totals *t = ctx;
	assert_true(t->n < 8);
	snprintf(t->key[t->n], sizeof(t->key[0]), "%s", key);
	t->amount[t->n] = amount;
	t->seconds[t->n] = seconds;
	t->n++;
	return 0;
}

static struct jf_ledger_rec row(int64_t queue_id, const char *queue, int64_t group_id,
				const char *group, int64_t task_id, int64_t node_id,
				int64_t attempt_id, const char *billing, const char *gpu, int gpus,
				int64_t start_ms, int64_t rate)
{
	struct jf_ledger_rec r;
	memset(&r, 0, sizeof(r));
	r.queue_id = queue_id;
	snprintf(r.queue, sizeof(r.queue), "%s", queue);
	r.group_id = group_id;
	snprintf(r.group, sizeof(r.group), "%s", group);
	r.task_id = task_id;
	r.node_id = node_id;
	r.attempt_id = attempt_id;
	r.task_idx = task_id % 10;
	r.node_idx = 0;
	r.attempt = 1;
	snprintf(r.billing, sizeof(r.billing), "%s", billing);
	snprintf(r.gpu, sizeof(r.gpu), "%s", gpu);
	r.gpus = gpus;
	r.start_ms = start_ms;
	r.rate = rate;
	return r;
}

static void sum(struct jf_store *st, enum jf_scope sc, int64_t id, int64_t now, int64_t amount,
		int64_t seconds)
{
	int64_t a = -1, s = -1;
	assert_int_equal(jf_ledger_sum(st, sc, id, now, &a, &s), JF_OK);
	if (a != amount || s != seconds)
		fail_msg("scope %d id %lld: amount %lld seconds %lld, want %lld and %lld", (int)sc,
			 (long long)id, (long long)a, (long long)s, (long long)amount,
			 (long long)seconds);
}

static void test_ledger(void **state)
{
	struct fix *f = *state;
	/* ids need not exist: ledger rows outlive their objects */
	struct jf_ledger_rec r1 =
		row(1, "qa", 10, "g1", 100, 1000, 501, "on-demand", "4090", 2, T0 + 500, 7200000);
	struct jf_ledger_rec r2 =
		row(1, "qa", 10, "g1", 101, 1001, 502, "spot", "4090", 1, T0 + 2000, 1080000);
	struct jf_ledger_rec r3 =
		row(2, "qb", 20, "g2", 200, 2000, 503, "on-demand", "", 0, T0 + 999, 50000);
	struct jf_ledger_rec r4 =
		row(0, "", 30, "b1", 300, 3000, 504, "on-demand", "H800", 8, T0, 1800);
	int64_t id = 0;
	assert_int_equal(jf_ledger_open(f->st, &r1, &id), JF_OK);
	assert_true(id > 0);
	assert_int_equal(jf_ledger_open(f->st, &r2, NULL), JF_OK);
	assert_int_equal(jf_ledger_open(f->st, &r3, NULL), JF_OK);
	assert_int_equal(jf_ledger_open(f->st, &r4, NULL), JF_OK);
	/* one open segment per attempt */
	assert_int_equal(jf_ledger_open(f->st, &r1, NULL), JF_EEXIST);

	/* nothing closed: the listing is empty, sums bill open rows to now */
	struct ledger_list l = { .n = 0 };
	assert_int_equal(jf_ledger_list(f->st, 0, 100, collect_ledger, &l), JF_OK);
	assert_int_equal(l.n, 0);
	/* at T0+10.5s: r1 10 s (T0+0.5 floors to T0), r2 8 s, r3 10 s, r4 10 s */
	int64_t now = T0 + 10500;
	int64_t a1 = 10 * 7200000 / 3600, a2 = 8 * 1080000 / 3600, a3 = 10 * 50000 / 3600 + 1,
		a4 = 10 * 1800 / 3600;
	assert_int_equal(a3, 139); /* 138.88 rounds up */
	sum(f->st, JF_SCOPE_ALL, 0, now, a1 + a2 + a3 + a4, 38);
	sum(f->st, JF_SCOPE_QUEUE, 1, now, a1 + a2, 18);
	sum(f->st, JF_SCOPE_GROUP, 20, now, a3, 10);
	sum(f->st, JF_SCOPE_TASK, 101, now, a2, 8);
	sum(f->st, JF_SCOPE_NODE, 1000, now, a1, 10);
	sum(f->st, JF_SCOPE_NODE, 4242, now, 0, 0);
	sum(f->st, JF_SCOPE_ATTEMPT, 502, now, a2, 8);
	sum(f->st, JF_SCOPE_ATTEMPT, 505, now, 0, 0);
	/* a volume's scope has no ledger rows: refused, not read past the table */
	int64_t na = -1, ns = -1;
	assert_int_equal(jf_ledger_sum(f->st, JF_SCOPE_STORE, 1, now, &na, &ns), JF_EINVAL);
	assert_int_equal(na, 0);

	/* close r2 first: floor(T0+2.0) to floor(T0+5.999) = 3 s */
	assert_int_equal(jf_ledger_close(f->st, 502, T0 + 5999), JF_OK);
	assert_int_equal(jf_ledger_close(f->st, 502, T0 + 9999), JF_ENOENT);
	assert_int_equal(jf_ledger_close(f->st, 999, T0 + 9999), JF_ENOENT);
	/* r1: floor(T0+0.5) = T0 to floor(T0+10.499) = T0+10: 10 s at 7.2/h = 0.02 */
	assert_int_equal(jf_ledger_close(f->st, 501, T0 + 10499), JF_OK);
	/* r4: one second at 1800 micro-units per hour is 0.5: rounds half up to 1 */
	assert_int_equal(jf_ledger_close(f->st, 504, T0 + 1000), JF_OK);

	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_ledger_list(f->st, 0, 100, collect_ledger, &l), JF_OK);
	assert_int_equal(l.n, 3);
	/* closing order */
	assert_int_equal(l.r[0].attempt_id, 502);
	assert_int_equal(l.r[1].attempt_id, 501);
	assert_int_equal(l.r[2].attempt_id, 504);
	assert_true(l.r[0].seq < l.r[1].seq && l.r[1].seq < l.r[2].seq);
	assert_int_equal(l.r[0].seconds, 3);
	assert_int_equal(l.r[0].amount, 3 * 1080000 / 3600);
	assert_int_equal(l.r[0].end_ms, T0 + 5999);
	assert_int_equal(l.r[1].seconds, 10);
	assert_int_equal(l.r[1].amount, 20000);
	assert_int_equal(l.r[2].seconds, 1);
	assert_int_equal(l.r[2].amount, 1);
	sum(f->st, JF_SCOPE_ATTEMPT, 502, now, 3 * 1080000 / 3600, 3);
	/* every field comes back */
	const struct jf_ledger_rec *x = &l.r[1];
	assert_int_equal(x->queue_id, 1);
	assert_int_equal(x->group_id, 10);
	assert_int_equal(x->task_id, 100);
	assert_int_equal(x->node_id, 1000);
	assert_string_equal(x->queue, "qa");
	assert_string_equal(x->group, "g1");
	assert_int_equal(x->task_idx, 0);
	assert_int_equal(x->attempt, 1);
	assert_string_equal(x->billing, "on-demand");
	assert_string_equal(x->gpu, "4090");
	assert_int_equal(x->gpus, 2);
	assert_int_equal(x->start_ms, T0 + 500);
	assert_int_equal(x->rate, 7200000);
	/* paging by seq */
	memset(&l, 0, sizeof(l));
	int64_t first_seq = 0;
	{
		struct ledger_list all = { .n = 0 };
		assert_int_equal(jf_ledger_list(f->st, 0, 1, collect_ledger, &all), JF_OK);
		assert_int_equal(all.n, 1);
		first_seq = all.r[0].seq;
	}
	assert_int_equal(jf_ledger_list(f->st, first_seq, 1, collect_ledger, &l), JF_OK);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.r[0].attempt_id, 501);

	/* sums: closed rows plus the open r3 billed to now */
	now = T0 + 60999; /* r3: floor(T0+0.999) = T0 to T0+60: 60 s */
	int64_t c1 = 20000, c2 = 900, c4 = 1, o3 = 60 * 50000 / 3600;
	assert_int_equal(o3, 833); /* 833.33 rounds down */
	sum(f->st, JF_SCOPE_ALL, 0, now, c1 + c2 + c4 + o3, 10 + 3 + 1 + 60);
	sum(f->st, JF_SCOPE_QUEUE, 1, now, c1 + c2, 13);
	sum(f->st, JF_SCOPE_QUEUE, 2, now, o3, 60);
	sum(f->st, JF_SCOPE_GROUP, 10, now, c1 + c2, 13);
	sum(f->st, JF_SCOPE_GROUP, 30, now, c4, 1);
	sum(f->st, JF_SCOPE_TASK, 100, now, c1, 10);
	sum(f->st, JF_SCOPE_NODE, 2000, now, o3, 60);
	/* closed sums do not move with now */
	sum(f->st, JF_SCOPE_GROUP, 10, now + 3600000, c1 + c2, 13);
	/* now before an open row's start bills nothing for it */
	sum(f->st, JF_SCOPE_NODE, 2000, T0 - 5000, 0, 0);

	/* totals over closed rows */
	struct totals t = { .n = 0 };
	assert_int_equal(jf_ledger_totals(f->st, "queue", collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.key[0], "(independent)");
	assert_int_equal(t.amount[0], c4);
	assert_int_equal(t.seconds[0], 1);
	assert_string_equal(t.key[1], "qa");
	assert_int_equal(t.amount[1], c1 + c2);
	assert_int_equal(t.seconds[1], 13);
	memset(&t, 0, sizeof(t));
	assert_int_equal(jf_ledger_totals(f->st, "group", collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.key[0], "qa/g1");
	assert_int_equal(t.amount[0], c1 + c2);
	assert_string_equal(t.key[1], "tasks/b1");
	assert_int_equal(t.amount[1], c4);
	memset(&t, 0, sizeof(t));
	assert_int_equal(jf_ledger_totals(f->st, "billing", collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.key[0], "on-demand");
	assert_int_equal(t.amount[0], c1 + c4);
	assert_int_equal(t.seconds[0], 11);
	assert_string_equal(t.key[1], "spot");
	assert_int_equal(t.amount[1], c2);
	memset(&t, 0, sizeof(t));
	assert_int_equal(jf_ledger_totals(f->st, "gpu", collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.key[0], "4090");
	assert_int_equal(t.amount[0], c1 + c2);
	assert_string_equal(t.key[1], "H800");
	assert_int_equal(t.amount[1], c4);
	assert_int_equal(jf_ledger_totals(f->st, "colour", collect_totals, &t), JF_EINVAL);

	/* close the CPU row: it shows as "cpu" */
	assert_int_equal(jf_ledger_close(f->st, 503, T0 + 60999), JF_OK);
	memset(&t, 0, sizeof(t));
	assert_int_equal(jf_ledger_totals(f->st, "gpu", collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.key[2], "cpu");
	assert_int_equal(t.amount[2], o3);
	assert_int_equal(t.seconds[2], 60);
	sum(f->st, JF_SCOPE_ALL, 0, T0 + 99999999, c1 + c2 + c4 + o3, 74);

	/* an end before the start bills nothing, and still closes */
	struct jf_ledger_rec r5 =
		row(1, "qa", 10, "g1", 102, 1002, 505, "spot", "4090", 1, T0 + 50000, 1080000);
	assert_int_equal(jf_ledger_open(f->st, &r5, NULL), JF_OK);
	assert_int_equal(jf_ledger_close(f->st, 505, T0 + 1000), JF_OK);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_ledger_list(f->st, 0, 100, collect_ledger, &l), JF_OK);
	assert_int_equal(l.n, 5);
	assert_int_equal(l.r[4].attempt_id, 505);
	assert_int_equal(l.r[4].seconds, 0);
	assert_int_equal(l.r[4].amount, 0);
	assert_true(l.r[4].end_ms != 0);
}

/* A version-4 database (attempt_id UNIQUE: one segment per attempt) with
 * closed and open rows is rebuilt on open: every row keeps its id,
 * closed_seq and values, ids continue after the AUTOINCREMENT counter, and
 * an attempt may then have several segments. */
static void test_migrate_4_to_5(void **state)
{
	struct fix *f = *state;
	jf_store_close(f->st);
	f->st = NULL;
	char sql[4096];
	snprintf(sql, sizeof(sql),
		 /* schema 6's outbox is not there yet at 4 */
		 UNDO_9
		 "ALTER TABLE attempts DROP COLUMN kill_at_ms;"
		 "ALTER TABLE attempts DROP COLUMN preempting;"
		 "ALTER TABLE groups DROP COLUMN flags;"
		 "DROP INDEX tasks_sub; ALTER TABLE tasks DROP COLUMN sub_id; DROP TABLE "
		 "submissions;"
		 "DROP TABLE ledger;"
		 "CREATE TABLE ledger ("
		 "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
		 "  queue_id INTEGER NOT NULL, group_id INTEGER NOT NULL, task_id INTEGER NOT NULL,"
		 "  node_id INTEGER NOT NULL, attempt_id INTEGER NOT NULL UNIQUE,"
		 "  queue TEXT NOT NULL, grp TEXT NOT NULL,"
		 "  task_idx INTEGER NOT NULL, node_idx INTEGER NOT NULL, attempt INTEGER NOT NULL,"
		 "  billing TEXT NOT NULL, gpu TEXT NOT NULL, gpus INTEGER NOT NULL,"
		 "  start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL DEFAULT 0,"
		 "  seconds INTEGER NOT NULL DEFAULT 0, rate INTEGER NOT NULL,"
		 "  amount INTEGER NOT NULL DEFAULT 0,"
		 "  closed_seq INTEGER);"
		 "CREATE INDEX ledger_group ON ledger(group_id);"
		 "CREATE INDEX ledger_queue ON ledger(queue_id);"
		 "CREATE INDEX ledger_task ON ledger(task_id);"
		 "CREATE INDEX ledger_node ON ledger(node_id);"
		 "CREATE INDEX ledger_open ON ledger(end_ms) WHERE end_ms = 0;"
		 "CREATE UNIQUE INDEX ledger_closed ON ledger(closed_seq) "
		 "  WHERE closed_seq IS NOT NULL;"
		 "INSERT INTO ledger(id, queue_id, group_id, task_id, node_id, attempt_id,"
		 "  queue, grp, task_idx, node_idx, attempt, billing, gpu, gpus, start_ms,"
		 "  end_ms, seconds, rate, amount, closed_seq) VALUES"
		 " (3, 1, 10, 100, 1000, 501, 'qa', 'g1', 0, 2, 1, 'on-demand', '4090', 2,"
		 "  %lld, %lld, 10, 7200000, 20000, 2),"
		 " (5, 1, 10, 101, 1001, 502, 'qa', 'g1', 1, 0, 3, 'spot', '4090', 1,"
		 "  %lld, %lld, 3, 1080000, 900, 1),"
		 " (7, 2, 20, 200, 2000, 503, 'qb', 'g2', 4, 0, 2, 'on-demand', '', 0,"
		 "  %lld, 0, 0, 50000, 0, NULL),"
		 " (8, 0, 30, 300, 3000, 504, '', 'b1', 0, 0, 1, 'on-demand', 'H800', 8,"
		 "  %lld, 0, 0, 128000000, 0, NULL);"
		 /* ids 9 to 12 were handed out once: they are never reused */
		 "UPDATE sqlite_sequence SET seq = 12 WHERE name = 'ledger';"
		 "PRAGMA user_version = 4;",
		 (long long)(T0 + 500), (long long)(T0 + 10499), (long long)(T0 + 2000),
		 (long long)(T0 + 5999), (long long)(T0 + 999), (long long)T0);
	sql_exec(f->db, sql);
	assert_int_equal(sql_int(f->db, "PRAGMA user_version"), 4);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM pragma_index_list('ledger') "
					"WHERE origin = 'u'"),
			 1);

	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	struct jf_error err = { 0 };
	assert_int_equal(jf_store_check(f->st, &err), JF_OK);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM pragma_index_list('ledger') "
					"WHERE origin = 'u'"),
			 0);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sqlite_master WHERE "
					"type = 'index' AND tbl_name = 'ledger'"),
			 9);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sqlite_master WHERE "
					"name = 'ledger_new'"),
			 0);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM sqlite_sequence WHERE "
					"name = 'ledger_new'"),
			 0);
	assert_int_equal(sql_int(f->db, "SELECT seq FROM sqlite_sequence WHERE "
					"name = 'ledger'"),
			 12);
	/* every row and value, the open ones included */
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM ledger"), 4);
	assert_int_equal(sql_int(f->db,
				 "SELECT group_concat(id || ':' || attempt_id || ':' "
				 "|| end_ms || ':' || ifnull(closed_seq, '-') || ':' || rate "
				 "|| ':' || gpu || ':' || grp, ',') = '7:503:0:-:50000::g2,"
				 "8:504:0:-:128000000:H800:b1' FROM (SELECT * FROM ledger "
				 "WHERE end_ms = 0 ORDER BY id)"),
			 1);
	struct ledger_list l = { .n = 0 };
	assert_int_equal(jf_ledger_list(f->st, 0, 100, collect_ledger, &l), JF_OK);
	assert_int_equal(l.n, 2);
	const struct jf_ledger_rec *x = &l.r[0];
	assert_int_equal(x->id, 5);
	assert_int_equal(x->seq, 1);
	assert_int_equal(x->attempt_id, 502);
	assert_int_equal(x->queue_id, 1);
	assert_int_equal(x->group_id, 10);
	assert_int_equal(x->task_id, 101);
	assert_int_equal(x->node_id, 1001);
	assert_string_equal(x->queue, "qa");
	assert_string_equal(x->group, "g1");
	assert_int_equal(x->task_idx, 1);
	assert_int_equal(x->node_idx, 0);
	assert_int_equal(x->attempt, 3);
	assert_string_equal(x->billing, "spot");
	assert_string_equal(x->gpu, "4090");
	assert_int_equal(x->gpus, 1);
	assert_int_equal(x->start_ms, T0 + 2000);
	assert_int_equal(x->end_ms, T0 + 5999);
	assert_int_equal(x->seconds, 3);
	assert_int_equal(x->rate, 1080000);
	assert_int_equal(x->amount, 900);
	x = &l.r[1];
	assert_int_equal(x->id, 3);
	assert_int_equal(x->seq, 2);
	assert_int_equal(x->attempt_id, 501);
	assert_int_equal(x->node_idx, 2);
	assert_int_equal(x->start_ms, T0 + 500);
	assert_int_equal(x->end_ms, T0 + 10499);
	assert_int_equal(x->seconds, 10);
	assert_int_equal(x->amount, 20000);
	/* at T0+10.5 s: open 503 bills 10 s (139), 504 10 s (355556) */
	sum(f->st, JF_SCOPE_ALL, 0, T0 + 10500, 20000 + 900 + 139 + 355556, 33);
	sum(f->st, JF_SCOPE_GROUP, 10, T0 + 10500, 20900, 13);

	/* the open rows close into the next places of ledger.csv */
	assert_int_equal(jf_ledger_close(f->st, 503, T0 + 60999), JF_OK);
	int64_t n = -1;
	assert_int_equal(jf_ledger_close_all(f->st, T0 + 60999, &n), JF_OK);
	assert_int_equal(n, 1);
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_ledger_list(f->st, 2, 100, collect_ledger, &l), JF_OK);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.r[0].id, 7);
	assert_int_equal(l.r[0].seq, 3);
	assert_int_equal(l.r[0].seconds, 60);
	assert_int_equal(l.r[1].id, 8);
	assert_int_equal(l.r[1].seq, 4);
	assert_int_equal(l.r[1].seconds, 60);

	/* the UNIQUE is gone: a second segment of 501, with a new id */
	assert_int_equal(jf_ledger_reopen(f->st, 501, 0), JF_OK);
	assert_int_equal(sql_int(f->db, "SELECT max(id) FROM ledger"), 13);
	assert_int_equal(sql_int(f->db, "SELECT start_ms FROM ledger WHERE id = 13"), T0 + 10499);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM ledger WHERE attempt_id = 501"), 2);
	struct jf_ledger_rec r =
		row(3, "qc", 40, "g4", 400, 4000, 505, "spot", "L40S", 1, T0, 1000);
	int64_t id = 0;
	assert_int_equal(jf_ledger_open(f->st, &r, &id), JF_OK);
	assert_int_equal(id, 14);
	/* and still at most one open segment per attempt */
	assert_int_equal(jf_ledger_reopen(f->st, 501, 0), JF_EEXIST);
	r.attempt_id = 501;
	assert_int_equal(jf_ledger_open(f->st, &r, NULL), JF_EEXIST);
	assert_int_equal(jf_store_check(f->st, &err), JF_OK);
}

static void last_end(struct jf_store *st, int64_t attempt_id, int64_t end_ms, bool open)
{
	int64_t e = -1;
	bool o = !open;
	assert_int_equal(jf_ledger_last_end(st, attempt_id, &e, &o), JF_OK);
	assert_int_equal(e, end_ms);
	assert_int_equal(o, open);
}

/* The same descriptive columns: a later segment of the same attempt. */
static void same_attempt(const struct jf_ledger_rec *a, const struct jf_ledger_rec *b)
{
	assert_int_equal(a->queue_id, b->queue_id);
	assert_int_equal(a->group_id, b->group_id);
	assert_int_equal(a->task_id, b->task_id);
	assert_int_equal(a->node_id, b->node_id);
	assert_int_equal(a->attempt_id, b->attempt_id);
	assert_string_equal(a->queue, b->queue);
	assert_string_equal(a->group, b->group);
	assert_int_equal(a->task_idx, b->task_idx);
	assert_int_equal(a->node_idx, b->node_idx);
	assert_int_equal(a->attempt, b->attempt);
	assert_string_equal(a->billing, b->billing);
	assert_string_equal(a->gpu, b->gpu);
	assert_int_equal(a->gpus, b->gpus);
	assert_int_equal(a->rate, b->rate);
}

/* Several segments per attempt: the daemon stops (close_all) and adopts
 * its processes again (reopen), and the seconds of an attempt's segments
 * add up to one unbroken segment from its first start to its last end. */
static void test_ledger_segments(void **state)
{
	struct fix *f = *state;
	/* A at 3.60/h (1000 a second), B at 1.08/h (300 a second), C one core
	 * (13.89 a second), D 8 x H800 (35555.56 a second) */
	struct jf_ledger_rec ra =
		row(1, "qa", 10, "g1", 100, 1000, 601, "on-demand", "4090", 1, T0 + 250, 3600000);
	struct jf_ledger_rec rb =
		row(1, "qa", 10, "g1", 101, 1001, 602, "spot", "4090", 1, T0 + 900, 1080000);
	struct jf_ledger_rec rc =
		row(2, "qb", 20, "g2", 200, 2000, 603, "on-demand", "", 0, T0 + 100, 50000);
	struct jf_ledger_rec rd =
		row(0, "", 30, "b1", 300, 3000, 604, "on-demand", "H800", 8, T0, 128000000);
	ra.node_idx = 3;
	ra.attempt = 2;
	assert_int_equal(jf_ledger_open(f->st, &ra, NULL), JF_OK);
	assert_int_equal(jf_ledger_open(f->st, &rb, NULL), JF_OK);
	assert_int_equal(jf_ledger_open(f->st, &rc, NULL), JF_OK);
	assert_int_equal(jf_ledger_open(f->st, &rd, NULL), JF_OK);

	/* while open: nothing to reopen; unknown attempts have no segment */
	last_end(f->st, 601, 0, true);
	assert_int_equal(jf_ledger_reopen(f->st, 601, 0), JF_EEXIST);
	assert_int_equal(jf_ledger_reopen(f->st, 601, T0 + 99000), JF_EEXIST);
	assert_int_equal(jf_ledger_reopen(f->st, 999, 0), JF_ENOENT);
	int64_t e = -1;
	bool o = true;
	assert_int_equal(jf_ledger_last_end(f->st, 999, &e, &o), JF_ENOENT);
	assert_int_equal(jf_ledger_last_end(f->st, 601, NULL, NULL), JF_OK);
	/* the partial unique index: a second open segment is refused */
	assert_int_equal(jf_ledger_open(f->st, &ra, NULL), JF_EEXIST);
	/* JF_EEXIST from reopen is no failure: the caller's transaction commits */
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	assert_int_equal(jf_ledger_reopen(f->st, 602, 0), JF_EEXIST);
	assert_int_equal(jf_store_commit(f->st), JF_OK);

	/* B ends on its own: floor(T0+0.9) to floor(T0+4.7) = 4 s */
	assert_int_equal(jf_ledger_close(f->st, 602, T0 + 4700), JF_OK);
	last_end(f->st, 602, T0 + 4700, false);

	/* close_all inside a transaction that rolls back closes nothing */
	int64_t n = -1;
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	assert_int_equal(jf_ledger_close_all(f->st, T0 + 10600, &n), JF_OK);
	assert_int_equal(n, 3);
	jf_store_rollback(f->st);
	last_end(f->st, 601, 0, true);

	/* the daemon stops at T0+10.6 s: A, C and D close, in id order, 10 s each */
	n = -1;
	assert_int_equal(jf_ledger_close_all(f->st, T0 + 10600, &n), JF_OK);
	assert_int_equal(n, 3);
	assert_int_equal(jf_ledger_close_all(f->st, T0 + 10700, &n), JF_OK);
	assert_int_equal(n, 0);
	assert_int_equal(jf_ledger_close_all(f->st, T0 + 10700, NULL), JF_OK);
	assert_int_equal(jf_ledger_close(f->st, 601, T0 + 10700), JF_ENOENT);
	struct ledger_list l = { .n = 0 };
	assert_int_equal(jf_ledger_list(f->st, 0, 100, collect_ledger, &l), JF_OK);
	assert_int_equal(l.n, 4);
	static const int64_t order1[] = { 602, 601, 603, 604 };
	static const int64_t secs1[] = { 4, 10, 10, 10 };
	static const int64_t amount1[] = { 1200, 10000, 139, 355556 };
	for (int i = 0; i < 4; i++) {
		assert_int_equal(l.r[i].attempt_id, order1[i]);
		assert_int_equal(l.r[i].seconds, secs1[i]);
		assert_int_equal(l.r[i].amount, amount1[i]);
		if (i)
			assert_true(l.r[i].seq > l.r[i - 1].seq);
		if (i)
			assert_int_equal(l.r[i].end_ms, T0 + 10600);
	}
	last_end(f->st, 601, T0 + 10600, false);

	/* the daemon is back: A where it ended, C from a later time, and D
	 * asked to start before its end (it starts at its end: no second
	 * billed twice) */
	assert_int_equal(jf_ledger_reopen(f->st, 601, 0), JF_OK);
	assert_int_equal(jf_ledger_reopen(f->st, 601, 0), JF_EEXIST);
	assert_int_equal(jf_ledger_open(f->st, &ra, NULL), JF_EEXIST);
	assert_int_equal(jf_ledger_reopen(f->st, 603, T0 + 20000), JF_OK);
	assert_int_equal(jf_ledger_reopen(f->st, 604, T0 + 5000), JF_OK);
	last_end(f->st, 601, 0, true);

	/* at T0+15.25 s: A's second segment 5 s (5000), D's 5 s (177778),
	 * C's not started yet */
	int64_t now = T0 + 15250;
	sum(f->st, JF_SCOPE_NODE, 1000, now, 15000, 15);
	sum(f->st, JF_SCOPE_TASK, 100, now, 15000, 15);
	sum(f->st, JF_SCOPE_GROUP, 10, now, 16200, 19);
	sum(f->st, JF_SCOPE_QUEUE, 1, now, 16200, 19);
	sum(f->st, JF_SCOPE_QUEUE, 2, now, 139, 10);
	sum(f->st, JF_SCOPE_GROUP, 30, now, 355556 + 177778, 15);
	sum(f->st, JF_SCOPE_ALL, 0, now, 16200 + 139 + 355556 + 177778, 44);

	/* A ends at T0+31 s (20 s), is adopted again, and the daemon stops at
	 * T0+45.5 s: A 15 s, C 25 s (347), D 35 s (1244444) */
	assert_int_equal(jf_ledger_close(f->st, 601, T0 + 30999), JF_OK);
	assert_int_equal(jf_ledger_reopen(f->st, 601, 0), JF_OK);
	assert_int_equal(jf_ledger_close_all(f->st, T0 + 45500, &n), JF_OK);
	assert_int_equal(n, 3);

	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_ledger_list(f->st, 0, 100, collect_ledger, &l), JF_OK);
	assert_int_equal(l.n, 8);
	/* close_all closes in id order: C's (reopened before A's third), D's, A's */
	static const int64_t order2[] = { 602, 601, 603, 604, 601, 603, 604, 601 };
	for (int i = 0; i < 8; i++) {
		assert_int_equal(l.r[i].attempt_id, order2[i]);
		if (i)
			assert_true(l.r[i].seq > l.r[i - 1].seq);
	}
	/* A: three segments, each starting where the one before ended, with
	 * higher ids and A's columns */
	const struct jf_ledger_rec *a1 = &l.r[1], *a2 = &l.r[4], *a3 = &l.r[7];
	same_attempt(a1, a2);
	same_attempt(a1, a3);
	assert_int_equal(a2->node_idx, 3);
	assert_int_equal(a2->attempt, 2);
	assert_true(a1->id < a2->id && a2->id < a3->id);
	assert_int_equal(a2->start_ms, a1->end_ms);
	assert_int_equal(a3->start_ms, a2->end_ms);
	assert_int_equal(a2->end_ms, T0 + 30999);
	assert_int_equal(a1->seconds, 10);
	assert_int_equal(a2->seconds, 20);
	assert_int_equal(a3->seconds, 15);
	assert_int_equal(a2->amount, 20000);
	assert_int_equal(a3->amount, 15000);
	assert_int_equal(a1->seconds + a2->seconds + a3->seconds, 45);
	assert_int_equal(a1->seconds + a2->seconds + a3->seconds,
			 jf_bill_seconds(a1->start_ms, a3->end_ms));
	/* C: the second segment from the time given */
	same_attempt(&l.r[2], &l.r[5]);
	assert_int_equal(l.r[5].start_ms, T0 + 20000);
	assert_int_equal(l.r[5].seconds, 25);
	assert_int_equal(l.r[5].amount, 347);
	/* D: from its previous end, not before */
	same_attempt(&l.r[3], &l.r[6]);
	assert_int_equal(l.r[6].start_ms, T0 + 10600);
	assert_int_equal(l.r[6].seconds, 35);
	assert_int_equal(l.r[6].amount, 1244444);
	assert_int_equal(l.r[3].seconds + l.r[6].seconds,
			 jf_bill_seconds(l.r[3].start_ms, l.r[6].end_ms));

	/* totals over several segments per attempt */
	struct totals t = { .n = 0 };
	assert_int_equal(jf_ledger_totals(f->st, "queue", collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.key[0], "(independent)");
	assert_int_equal(t.amount[0], 1600000);
	assert_int_equal(t.seconds[0], 45);
	assert_string_equal(t.key[1], "qa");
	assert_int_equal(t.amount[1], 46200);
	assert_int_equal(t.seconds[1], 49);
	assert_string_equal(t.key[2], "qb");
	assert_int_equal(t.amount[2], 486);
	assert_int_equal(t.seconds[2], 35);
	memset(&t, 0, sizeof(t));
	assert_int_equal(jf_ledger_totals(f->st, "group", collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.key[0], "qa/g1");
	assert_int_equal(t.amount[0], 46200);
	assert_int_equal(t.seconds[0], 49);
	assert_string_equal(t.key[1], "qb/g2");
	assert_int_equal(t.amount[1], 486);
	assert_string_equal(t.key[2], "tasks/b1");
	assert_int_equal(t.amount[2], 1600000);
	memset(&t, 0, sizeof(t));
	assert_int_equal(jf_ledger_totals(f->st, "billing", collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.key[0], "on-demand");
	assert_int_equal(t.amount[0], 45000 + 486 + 1600000);
	assert_int_equal(t.seconds[0], 45 + 35 + 45);
	assert_string_equal(t.key[1], "spot");
	assert_int_equal(t.amount[1], 1200);
	assert_int_equal(t.seconds[1], 4);
	memset(&t, 0, sizeof(t));
	assert_int_equal(jf_ledger_totals(f->st, "gpu", collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.key[0], "4090");
	assert_int_equal(t.amount[0], 46200);
	assert_int_equal(t.seconds[0], 49);
	assert_string_equal(t.key[1], "H800");
	assert_int_equal(t.amount[1], 1600000);
	assert_string_equal(t.key[2], "cpu");
	assert_int_equal(t.amount[2], 486);

	/* A and B adopted again and running at T0+50 s: every scope counts
	 * the closed segments and the open one; A's 50 s and B's 50 s are one
	 * unbroken run each */
	assert_int_equal(jf_ledger_reopen(f->st, 601, 0), JF_OK);
	assert_int_equal(jf_ledger_reopen(f->st, 602, 0), JF_OK);
	now = T0 + 50000;
	sum(f->st, JF_SCOPE_NODE, 1000, now, 50000, 50);
	assert_int_equal(jf_bill_seconds(T0 + 250, now), 50);
	sum(f->st, JF_SCOPE_TASK, 100, now, 50000, 50);
	sum(f->st, JF_SCOPE_NODE, 1001, now, 15000, 50);
	sum(f->st, JF_SCOPE_TASK, 101, now, 15000, 50);
	sum(f->st, JF_SCOPE_GROUP, 10, now, 65000, 100);
	sum(f->st, JF_SCOPE_QUEUE, 1, now, 65000, 100);
	sum(f->st, JF_SCOPE_GROUP, 20, now, 486, 35);
	sum(f->st, JF_SCOPE_QUEUE, 2, now, 486, 35);
	sum(f->st, JF_SCOPE_NODE, 3000, now, 1600000, 45);
	sum(f->st, JF_SCOPE_TASK, 300, now, 1600000, 45);
	sum(f->st, JF_SCOPE_GROUP, 30, now, 1600000, 45);
	sum(f->st, JF_SCOPE_QUEUE, 0, now, 1600000, 45);
	sum(f->st, JF_SCOPE_ALL, 0, now, 65000 + 486 + 1600000, 180);
	/* with now 0 the open segments add nothing: the ledger alone */
	sum(f->st, JF_SCOPE_ALL, 0, 0, 45000 + 1200 + 486 + 1600000, 129);
	/* the totals are of closed rows only */
	memset(&t, 0, sizeof(t));
	assert_int_equal(jf_ledger_totals(f->st, "queue", collect_totals, &t), JF_OK);
	assert_int_equal(t.amount[1], 46200);
	/* the listing is unchanged by open segments and pages by seq */
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_ledger_list(f->st, 0, 100, collect_ledger, &l), JF_OK);
	assert_int_equal(l.n, 8);
	int64_t seq5 = l.r[4].seq;
	memset(&l, 0, sizeof(l));
	assert_int_equal(jf_ledger_list(f->st, seq5, 2, collect_ledger, &l), JF_OK);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.r[0].attempt_id, 603);
	assert_int_equal(l.r[1].attempt_id, 604);
	struct jf_error err = { 0 };
	assert_int_equal(jf_store_check(f->st, &err), JF_OK);
}

/* Totals past INT64_MAX show as INT64_MAX at every scope, without error;
 * past INT64_MIN (only rows written by hand can be negative) as INT64_MIN. */
/*
 * The whole ledger's and the queues' closed totals are kept in memory and
 * moved with every close: after closes, after a rollback, with more queues
 * than the memo holds, they equal the sums SQL makes from the rows.
 */
static void sums_match(struct fix *f, int nq)
{
	char sql[160];
	for (int q = 0; q <= nq; q++) {
		if (q)
			snprintf(sql, sizeof(sql),
				 "SELECT ifnull(sum(amount), 0) FROM ledger WHERE "
				 "queue_id = %d AND end_ms != 0",
				 q);
		else
			snprintf(sql, sizeof(sql),
				 "SELECT ifnull(sum(amount), 0) FROM ledger WHERE "
				 "end_ms != 0");
		int64_t want = sql_int(f->db, sql);
		int64_t a = -1, secs = -1;
		/* now = 0: open rows add nothing */
		assert_int_equal(
			jf_ledger_sum(f->st, q ? JF_SCOPE_QUEUE : JF_SCOPE_ALL, q, 0, &a, &secs),
			JF_OK);
		if (a != want)
			fail_msg("queue %d: amount %lld, the rows say %lld", q, (long long)a,
				 (long long)want);
	}
}

static void test_ledger_memo(void **state)
{
	struct fix *f = *state;
	enum { NQ = 20, PER = 5 }; /* more queues than JF_LEDGER_MEMOS */
	for (int q = 1; q <= NQ; q++)
		for (int i = 0; i < PER; i++) {
			struct jf_ledger_rec r =
				row(q, "q", q, "g", q * 100 + i, q * 1000 + i, q * 10 + i,
				    "on-demand", "4090", 1, T0 + i * 700, 3600000 + q * 1000);
			assert_int_equal(jf_ledger_open(f->st, &r, NULL), JF_OK);
		}
	sums_match(f, NQ); /* every memo filled (and some replaced) */
	for (int q = 1; q <= NQ; q++)
		for (int i = 0; i < PER; i += 2)
			assert_int_equal(jf_ledger_close(f->st, q * 10 + i, T0 + 5000 + q * 333),
					 JF_OK);
	sums_match(f, NQ);
	/* closes that are rolled back count nowhere */
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	for (int q = 1; q <= NQ; q++)
		assert_int_equal(jf_ledger_close(f->st, q * 10 + 1, T0 + 90000), JF_OK);
	int64_t a = 0, secs = 0, before = 0;
	assert_int_equal(jf_ledger_sum(f->st, JF_SCOPE_QUEUE, 3, 0, &a, &secs), JF_OK);
	before = a;
	jf_store_rollback(f->st);
	assert_int_equal(jf_ledger_sum(f->st, JF_SCOPE_QUEUE, 3, 0, &a, &secs), JF_OK);
	assert_true(a < before); /* inside, the transaction's closes counted */
	sums_match(f, NQ);
	/* and a clean stop's close of everything */
	int64_t closed = 0;
	assert_int_equal(jf_ledger_close_all(f->st, T0 + 100000, &closed), JF_OK);
	assert_int_equal(closed, NQ * PER - NQ * ((PER + 1) / 2));
	sums_match(f, NQ);
}

/*
 * Task counts of groups and queues are kept in memory and moved with every
 * task state written: they equal what the rows say after single moves,
 * after writes of many tasks, a reset, a rolled-back transaction, a
 * delete, and a write by another connection.
 */
static void counts_match(struct fix *f, int64_t q, const int64_t *groups, int ng)
{
	char sql[200];
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_queue_count_tasks(f->st, q, JF_KIND_GROUP, c), JF_OK);
	for (int st = 0; st < 10; st++) {
		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM tasks t JOIN groups g ON "
			 "g.id = t.group_id WHERE g.queue_id = %lld AND t.state = %d",
			 (long long)q, st);
		if (c[st] != sql_int(f->db, sql))
			fail_msg("queue %lld state %d: %lld, the rows say %lld", (long long)q, st,
				 (long long)c[st], (long long)sql_int(f->db, sql));
	}
	for (int i = 0; i < ng; i++) {
		assert_int_equal(jf_group_count_tasks(f->st, groups[i], c), JF_OK);
		for (int st = 0; st < 10; st++) {
			snprintf(sql, sizeof(sql),
				 "SELECT count(*) FROM tasks WHERE group_id = %lld"
				 " AND state = %d",
				 (long long)groups[i], st);
			if (c[st] != sql_int(f->db, sql))
				fail_msg("group %lld state %d: %lld, the rows say %lld",
					 (long long)groups[i], st, (long long)c[st],
					 (long long)sql_int(f->db, sql));
		}
	}
}

static void test_count_memo(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "cq"), other = mkqueue(f->st, "co");
	int64_t g[3] = { mkgroup(f->st, q, JF_KIND_GROUP, "a"),
			 mkgroup(f->st, q, JF_KIND_GROUP, "b"),
			 mkgroup(f->st, other, JF_KIND_GROUP, "c") };
	counts_match(f, q, g, 3); /* drafts: no tasks, memos made */
	accept(f->st, g[0], 5, 5);
	accept(f->st, g[1], 3, 3);
	accept(f->st, g[2], 4, 4);
	counts_match(f, q, g, 3);
	counts_match(f, other, &g[2], 1);
	/* single moves, and a write that changes nothing */
	assert_int_equal(jf_task_set_state(f->st, task_id(f->st, g[0], 0), JF_ST_RUNNING, "", T0),
			 JF_OK);
	assert_int_equal(jf_task_set_state(f->st, task_id(f->st, g[0], 1), JF_ST_RUNNING, "", T0),
			 JF_OK);
	assert_int_equal(jf_task_set_state(f->st, task_id(f->st, g[0], 1), JF_ST_RUNNING, "x", T0),
			 JF_OK);
	assert_int_equal(jf_task_set_state(f->st, task_id(f->st, g[1], 2), JF_ST_SUCCEEDED, "", T0),
			 JF_OK);
	assert_int_equal(jf_task_set_state(f->st, task_id(f->st, g[2], 0), JF_ST_FAILED, "", T0),
			 JF_OK);
	assert_int_equal(jf_task_set_state(f->st, 999999, JF_ST_FAILED, "", T0), JF_OK);
	counts_match(f, q, g, 3);
	counts_match(f, other, &g[2], 1);
	/* many at once; a reset */
	assert_int_equal(jf_task_set_state_all(f->st, g[0], 1u << JF_ST_WAITING, JF_ST_STOPPED,
					       "ended", T0, NULL),
			 JF_OK);
	counts_match(f, q, g, 3);
	assert_int_equal(jf_group_reset(f->st, g[1], 0), JF_OK);
	counts_match(f, q, g, 3);
	/* inside a transaction the moves count; rolled back, they do not */
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	assert_int_equal(jf_task_set_state(f->st, task_id(f->st, g[1], 0), JF_ST_RUNNING, "", T0),
			 JF_OK);
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_queue_count_tasks(f->st, q, JF_KIND_GROUP, c), JF_OK);
	assert_int_equal(c[JF_ST_RUNNING], 3);
	jf_store_rollback(f->st);
	counts_match(f, q, g, 3);
	/* another connection writes */
	sql_exec(f->db, "UPDATE tasks SET state = 6");
	counts_match(f, q, g, 3);
	/* a group goes, with its tasks */
	assert_int_equal(jf_group_delete(f->st, g[1]), JF_OK);
	counts_match(f, q, g, 1);
}

/* A reader's view: the rows of batches (queue 0) and of the queues listed. */
static void test_ledger_view(void **state)
{
	struct fix *f = *state;
	struct jf_ledger_rec r1 =
		row(1, "qa", 10, "g1", 100, 1000, 501, "on-demand", "4090", 1, T0, 3600000);
	struct jf_ledger_rec r2 =
		row(2, "qb", 20, "g2", 200, 2000, 502, "spot", "", 0, T0, 3600000);
	struct jf_ledger_rec r3 =
		row(0, "", 30, "b1", 300, 3000, 503, "on-demand", "H800", 1, T0, 3600000);
	struct jf_ledger_rec r4 =
		row(7, "gone", 40, "g4", 400, 4000, 504, "on-demand", "", 0, T0, 3600000);
	assert_int_equal(jf_ledger_open(f->st, &r1, NULL), JF_OK);
	assert_int_equal(jf_ledger_open(f->st, &r2, NULL), JF_OK);
	assert_int_equal(jf_ledger_open(f->st, &r3, NULL), JF_OK);
	assert_int_equal(jf_ledger_open(f->st, &r4, NULL), JF_OK);
	assert_int_equal(jf_ledger_close_all(f->st, T0 + 2000, NULL), JF_OK);
	const int64_t qs[] = { 2, 5 };
	struct jf_ledger_view v = { qs, 2 };
	assert_true(jf_ledger_view_has(&v, 0));
	assert_true(jf_ledger_view_has(&v, 2));
	assert_true(jf_ledger_view_has(&v, 5));
	assert_false(jf_ledger_view_has(&v, 1));
	assert_false(jf_ledger_view_has(&v, 7));
	assert_true(jf_ledger_view_has(NULL, 1));
	struct totals t = { .n = 0 };
	assert_int_equal(jf_ledger_totals_view(f->st, "queue", &v, collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.key[0], "(independent)");
	assert_string_equal(t.key[1], "qb");
	assert_int_equal(t.amount[1], 2000);
	assert_int_equal(t.seconds[1], 2);
	memset(&t, 0, sizeof(t));
	assert_int_equal(jf_ledger_totals_view(f->st, "group", &v, collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.key[0], "qb/g2");
	assert_string_equal(t.key[1], "tasks/b1");
	memset(&t, 0, sizeof(t));
	struct jf_ledger_view none = { NULL, 0 };
	assert_int_equal(jf_ledger_totals_view(f->st, "gpu", &none, collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 1);
	assert_string_equal(t.key[0], "H800");
	memset(&t, 0, sizeof(t));
	assert_int_equal(jf_ledger_totals_view(f->st, "billing", NULL, collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 2); /* NULL: every row */
	assert_int_equal(jf_ledger_totals_view(f->st, "nope", &v, collect_totals, &t), JF_EINVAL);
}

static void test_ledger_saturate(void **state)
{
	struct fix *f = *state;
	/* an hour at INT64_MAX per hour is INT64_MAX */
	struct jf_ledger_rec re =
		row(1, "qa", 10, "g1", 100, 1000, 701, "on-demand", "4090", 8, T0, INT64_MAX);
	struct jf_ledger_rec rf =
		row(1, "qa", 10, "g1", 100, 1001, 702, "on-demand", "4090", 8, T0, INT64_MAX);
	assert_int_equal(jf_ledger_open(f->st, &re, NULL), JF_OK);
	assert_int_equal(jf_ledger_close(f->st, 701, T0 + 3600000), JF_OK);
	assert_int_equal(jf_ledger_reopen(f->st, 701, 0), JF_OK);
	assert_int_equal(jf_ledger_close(f->st, 701, T0 + 7200000), JF_OK);
	assert_int_equal(jf_ledger_reopen(f->st, 701, 0), JF_OK);
	assert_int_equal(jf_ledger_close(f->st, 701, T0 + 7201000), JF_OK);
	/* plain sum() would fail here */
	{
		sqlite3 *h;
		sqlite3_stmt *s;
		assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
		assert_int_equal(
			sqlite3_prepare_v2(h, "SELECT sum(amount) FROM ledger", -1, &s, NULL),
			SQLITE_OK);
		assert_int_equal(sqlite3_step(s), SQLITE_ERROR);
		sqlite3_finalize(s);
		sqlite3_close(h);
	}
	int64_t now = T0 + 7200000;
	sum(f->st, JF_SCOPE_NODE, 1000, now, INT64_MAX, 7201);
	sum(f->st, JF_SCOPE_TASK, 100, now, INT64_MAX, 7201);
	sum(f->st, JF_SCOPE_GROUP, 10, now, INT64_MAX, 7201);
	sum(f->st, JF_SCOPE_QUEUE, 1, now, INT64_MAX, 7201);
	sum(f->st, JF_SCOPE_ALL, 0, now, INT64_MAX, 7201);
	/* open segments: each is INT64_MAX and they add in C */
	assert_int_equal(jf_ledger_open(f->st, &rf, NULL), JF_OK);
	rf.node_id = 1002;
	rf.attempt_id = 703;
	assert_int_equal(jf_ledger_open(f->st, &rf, NULL), JF_OK);
	sum(f->st, JF_SCOPE_NODE, 1001, now, INT64_MAX, 7200);
	sum(f->st, JF_SCOPE_TASK, 100, now, INT64_MAX, 7201 + 2 * 7200);
	sum(f->st, JF_SCOPE_GROUP, 10, now, INT64_MAX, 7201 + 2 * 7200);
	sum(f->st, JF_SCOPE_QUEUE, 1, now, INT64_MAX, 7201 + 2 * 7200);
	sum(f->st, JF_SCOPE_ALL, 0, now, INT64_MAX, 7201 + 2 * 7200);
	sum(f->st, JF_SCOPE_NODE, 1001, T0, 0, 0);

	/* a small row in another queue: its own totals stay exact */
	struct jf_ledger_rec rg =
		row(2, "qb", 20, "g2", 200, 2000, 704, "spot", "", 0, T0, 3600000);
	assert_int_equal(jf_ledger_open(f->st, &rg, NULL), JF_OK);
	assert_int_equal(jf_ledger_close(f->st, 704, T0 + 2000), JF_OK);
	assert_int_equal(jf_ledger_close_all(f->st, now, NULL), JF_OK);
	sum(f->st, JF_SCOPE_QUEUE, 2, now, 2000, 2);
	sum(f->st, JF_SCOPE_ALL, 0, now, INT64_MAX, 7201 + 2 * 7200 + 2);

	static const char *const by[] = { "queue", "group", "billing", "gpu" };
	static const char *const top[] = { "qa", "qa/g1", "on-demand", "4090" };
	static const char *const small[] = { "qb", "qb/g2", "spot", "cpu" };
	for (size_t i = 0; i < 4; i++) {
		struct totals t = { .n = 0 };
		assert_int_equal(jf_ledger_totals(f->st, by[i], collect_totals, &t), JF_OK);
		assert_int_equal(t.n, 2);
		assert_string_equal(t.key[0], top[i]);
		assert_int_equal(t.amount[0], INT64_MAX);
		assert_int_equal(t.seconds[0], 7201 + 2 * 7200);
		assert_string_equal(t.key[1], small[i]);
		assert_int_equal(t.amount[1], 2000);
		assert_int_equal(t.seconds[1], 2);
	}

	/* downwards, and seconds too: rows written by hand */
	char sql[1024];
	snprintf(sql, sizeof(sql),
		 "INSERT INTO ledger(queue_id, group_id, task_id, node_id, attempt_id, queue, grp,"
		 "  task_idx, node_idx, attempt, billing, gpu, gpus, start_ms, end_ms, seconds,"
		 "  rate, amount, closed_seq) VALUES"
		 " (9, 90, 900, 9000, 801, 'qz', 'gz', 0, 0, 1, 'spot', 'A800', 1, 1, 2,"
		 "  %lld, 1, %lld, 1000),"
		 " (9, 90, 900, 9000, 802, 'qz', 'gz', 0, 0, 1, 'spot', 'A800', 1, 1, 2,"
		 "  5, 1, -10, 1001)",
		 (long long)INT64_MAX, (long long)(INT64_MIN + 1));
	sql_exec(f->db, sql);
	sum(f->st, JF_SCOPE_QUEUE, 9, now, INT64_MIN, INT64_MAX);
	sum(f->st, JF_SCOPE_NODE, 9000, now, INT64_MIN, INT64_MAX);
	struct totals t = { .n = 0 };
	assert_int_equal(jf_ledger_totals(f->st, "queue", collect_totals, &t), JF_OK);
	assert_int_equal(t.n, 3);
	assert_string_equal(t.key[2], "qz");
	assert_int_equal(t.amount[2], INT64_MIN);
	assert_int_equal(t.seconds[2], INT64_MAX);
	/* all scopes: the amount depends on the order of adding once both
	 * limits were hit, the seconds stay at the top */
	int64_t a = -1, s = -1;
	assert_int_equal(jf_ledger_sum(f->st, JF_SCOPE_ALL, 0, now, &a, &s), JF_OK);
	assert_int_equal(s, INT64_MAX);
}

/* ---- transactions ---- */

static void test_txn_failed_statement(void **state)
{
	struct fix *f = *state;
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	int64_t id = 0;
	assert_int_equal(jf_queue_create(f->st, "first", 0, 0, T0, &id), JF_OK);
	assert_int_equal(jf_queue_create(f->st, "first", 0, 0, T0, &id), JF_EEXIST);
	assert_int_not_equal(jf_store_commit(f->st), JF_OK);
	struct jf_queue_rec q;
	assert_int_equal(jf_queue_find(f->st, "first", &q), JF_ENOENT);
	/* the store works on afterwards */
	mkqueue(f->st, "second");
	struct jf_error err = { 0 };
	assert_int_equal(jf_store_check(f->st, &err), JF_OK);
}

static void test_txn_commit_rollback(void **state)
{
	struct fix *f = *state;
	/* nested: only the outermost commit counts */
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	mkqueue(f->st, "a");
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	mkqueue(f->st, "b");
	assert_int_equal(jf_store_commit(f->st), JF_OK);
	jf_store_rollback(f->st);
	struct jf_queue_rec q;
	assert_int_equal(jf_queue_find(f->st, "a", &q), JF_ENOENT);
	assert_int_equal(jf_queue_find(f->st, "b", &q), JF_ENOENT);

	assert_int_equal(jf_store_begin(f->st), JF_OK);
	mkqueue(f->st, "c");
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	mkqueue(f->st, "d");
	assert_int_equal(jf_store_commit(f->st), JF_OK);
	assert_int_equal(jf_store_commit(f->st), JF_OK);
	assert_int_equal(jf_queue_find(f->st, "c", &q), JF_OK);
	jf_queue_release(&q);
	assert_int_equal(jf_queue_find(f->st, "d", &q), JF_OK);
	jf_queue_release(&q);
	/* commit without begin */
	assert_int_not_equal(jf_store_commit(f->st), JF_OK);
	jf_store_rollback(f->st); /* harmless */

	/* an inner rollback (a helper that failed) dooms the whole
	 * transaction: nothing after it is committed on its own either */
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	mkqueue(f->st, "e");
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	jf_store_rollback(f->st);
	int64_t id = 0;
	jf_queue_create(f->st, "f", 0, 0, T0, &id);
	assert_int_not_equal(jf_store_commit(f->st), JF_OK);
	assert_int_equal(jf_queue_find(f->st, "e", &q), JF_ENOENT);
	assert_int_equal(jf_queue_find(f->st, "f", &q), JF_ENOENT);
	/* and the next transaction is a fresh one */
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	mkqueue(f->st, "g");
	assert_int_equal(jf_store_commit(f->st), JF_OK);
	assert_int_equal(jf_queue_find(f->st, "g", &q), JF_OK);
	jf_queue_release(&q);
}

/* jf_group_accept inside a caller's transaction is part of it. */
static void test_txn_accept_nested(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	accept(f->st, g, 4, 4);
	jf_store_rollback(f->st);
	struct jf_group_rec gr;
	assert_int_equal(jf_group_get(f->st, g, &gr), JF_OK);
	assert_int_equal(gr.state, JF_ST_DRAFT);
	jf_group_release(&gr);
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(f->st, g, 0, &t), JF_ENOENT);
}

/* ---- the outbox of a scheduling backend ---- */

struct unsub_rec {
	int64_t idx[16], attempt[16];
	size_t n;
};

static int collect_unsub(void *ctx, int64_t id, int64_t idx, int64_t attempt)
{
	(void)id;
	struct unsub_rec *u = ctx;
	if (u->n < 16) {
		u->idx[u->n] = idx;
		u->attempt[u->n] = attempt;
		u->n++;
	}
	return 0;
}

struct unfin {
	int64_t sub[8], n[8];
	size_t k;
};

static int collect_unfin(void *ctx, int64_t sub, int64_t n)
{
	struct unfin *u = ctx;
	if (u->k < 8) {
		u->sub[u->k] = sub;
		u->n[u->k] = n;
		u->k++;
	}
	return 0;
}

static int count_ids(void *ctx, int64_t id)
{
	(void)id;
	(*(int *)ctx)++;
	return 0;
}

static void test_submissions(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	accept(f->st, g, 6, 2);

	struct unsub_rec u = { .n = 0 };
	assert_int_equal(jf_task_list_unsubmitted(f->st, g, 100, collect_unsub, &u), JF_OK);
	assert_int_equal(u.n, 6);
	assert_int_equal(u.attempt[0], 0);

	/* a batch of 0, 1, 3, 4: they belong to it; 2 and 5 do not */
	int64_t idx[] = { 0, 1, 3, 4 };
	int64_t sub = 0;
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	assert_int_equal(jf_sub_create(f->st, g, idx, 4, 2, 1, 1000, &sub), JF_OK);
	assert_int_equal(jf_store_commit(f->st), JF_OK);
	assert_true(sub > 0);
	assert_int_equal(jf_sub_create(f->st, g, idx, 0, 2, 1, 1000, &sub), JF_EINVAL);
	int64_t s1 = 0;
	assert_int_equal(jf_task_sub(f->st, task_id(f->st, g, 3), &s1), JF_OK);
	assert_true(s1 > 0);
	sub = s1;
	assert_int_equal(jf_task_sub(f->st, task_id(f->st, g, 2), &s1), JF_OK);
	assert_int_equal(s1, 0);
	memset(&u, 0, sizeof(u));
	assert_int_equal(jf_task_list_unsubmitted(f->st, g, 100, collect_unsub, &u), JF_OK);
	assert_int_equal(u.n, 2);
	assert_int_equal(u.idx[0], 2);
	assert_int_equal(u.idx[1], 5);

	struct jf_sub_rec r;
	assert_int_equal(jf_sub_get(f->st, sub, &r), JF_OK);
	assert_int_equal(r.group_id, g);
	assert_int_equal(r.state, JF_SUB_OUTBOX);
	assert_int_equal(r.first_idx, 0);
	assert_int_equal(r.count, 4);
	assert_int_equal(r.throttle, 2);
	assert_int_equal(r.attempt_base, 1);
	assert_int_equal(r.job_id, 0);
	assert_int_equal(jf_sub_get(f->st, 999, &r), JF_ENOENT);

	int64_t *got = NULL;
	size_t n = 0;
	assert_int_equal(jf_sub_indexes(f->st, sub, &got, &n), JF_OK);
	assert_int_equal(n, 4);
	assert_int_equal(got[0], 0);
	assert_int_equal(got[3], 4);
	free(got);

	/* accepted: live, with the backend's id */
	assert_int_equal(jf_sub_set(f->st, sub, JF_SUB_LIVE, 4242, 2, 1, ""), JF_OK);
	assert_int_equal(jf_sub_get(f->st, sub, &r), JF_OK);
	assert_int_equal(r.state, JF_SUB_LIVE);
	assert_int_equal(r.job_id, 4242);
	assert_int_equal(r.tries, 1);
	int cnt = 0;
	assert_int_equal(jf_sub_list(f->st, g, 1u << JF_SUB_LIVE, count_ids, &cnt), JF_OK);
	assert_int_equal(cnt, 1);
	cnt = 0;
	assert_int_equal(jf_sub_list(f->st, 0, 1u << JF_SUB_OUTBOX, count_ids, &cnt), JF_OK);
	assert_int_equal(cnt, 0);

	/* unfinished: every task of it waits; one runs, one succeeds */
	struct unfin uf = { .k = 0 };
	assert_int_equal(jf_sub_unfinished(f->st, g, collect_unfin, &uf), JF_OK);
	assert_int_equal(uf.k, 1);
	assert_int_equal(uf.n[0], 4);
	assert_int_equal(jf_task_set_state(f->st, task_id(f->st, g, 0), JF_ST_RUNNING, "", 5),
			 JF_OK);
	assert_int_equal(jf_task_set_state(f->st, task_id(f->st, g, 1), JF_ST_SUCCEEDED, "", 6),
			 JF_OK);
	memset(&uf, 0, sizeof(uf));
	assert_int_equal(jf_sub_unfinished(f->st, g, collect_unfin, &uf), JF_OK);
	assert_int_equal(uf.n[0], 3);

	/* release: the running task stays, the others leave it */
	assert_int_equal(jf_sub_release(f->st, sub, 0), JF_OK);
	assert_int_equal(jf_task_sub(f->st, task_id(f->st, g, 0), &s1), JF_OK);
	assert_int_equal(s1, sub);
	assert_int_equal(jf_task_sub(f->st, task_id(f->st, g, 3), &s1), JF_OK);
	assert_int_equal(s1, 0);
	assert_int_equal(jf_task_set_sub(f->st, task_id(f->st, g, 0), 0), JF_OK);
	memset(&uf, 0, sizeof(uf));
	assert_int_equal(jf_sub_unfinished(f->st, g, collect_unfin, &uf), JF_OK);
	assert_int_equal(uf.k, 0);

	/* a group's tasks all at once */
	int64_t all[] = { 2, 3, 5 };
	int64_t sub2 = 0;
	assert_int_equal(jf_sub_create(f->st, g, all, 3, 0, 2, 2000, &sub2), JF_OK);
	assert_true(sub2 > sub);
	assert_int_equal(jf_sub_release(f->st, 0, g), JF_OK);
	memset(&u, 0, sizeof(u));
	assert_int_equal(jf_task_list_unsubmitted(f->st, g, 100, collect_unsub, &u), JF_OK);
	assert_int_equal(u.n, 4); /* 2, 3, 4, 5 wait; 0 runs, 1 is done */

	/* meta */
	char buf[64];
	assert_int_equal(jf_meta_get(f->st, "uuid", buf, sizeof(buf)), JF_ENOENT);
	assert_int_equal(jf_meta_set(f->st, "uuid", "abc"), JF_OK);
	assert_int_equal(jf_meta_set(f->st, "uuid", "def"), JF_OK);
	assert_int_equal(jf_meta_get(f->st, "uuid", buf, sizeof(buf)), JF_OK);
	assert_string_equal(buf, "def");

	/* the group goes, its submissions with it */
	assert_int_equal(jf_group_delete(f->st, g), JF_OK);
	assert_int_equal(jf_sub_get(f->st, sub, &r), JF_ENOENT);
}

/* ---- task rows made a chunk at a time ---- */

#define BIG (2 * JF_TASKS_CHUNK + 5)

static int64_t group_unmade(struct jf_store *st, int64_t g)
{
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(st, g, &r), JF_OK);
	int64_t n = r.unmade;
	jf_group_release(&r);
	return n;
}

/* The rows of g are exactly the indexes 0 .. n-1. */
static void expect_rows(const char *db, int64_t g, int64_t n)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM tasks WHERE group_id = %lld",
		 (long long)g);
	assert_int_equal(sql_int(db, sql), n);
	snprintf(sql, sizeof(sql),
		 "SELECT count(DISTINCT idx) FROM tasks WHERE group_id = %lld AND idx >= 0 AND "
		 "idx < %lld",
		 (long long)g, (long long)n);
	assert_int_equal(sql_int(db, sql), n);
}

/* What the counts say, through this connection's memos and through a
 * fresh connection that has none: the two agree. */
static void expect_counts(struct fix *f, int64_t q, int64_t g, int state, int64_t n)
{
	int64_t c[JF_ST__COUNT], c2[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, g, c), JF_OK);
	assert_int_equal(c[state], n);
	struct jf_store *other = open_store(f->db);
	assert_int_equal(jf_group_count_tasks(other, g, c2), JF_OK);
	assert_memory_equal(c, c2, sizeof(c));
	assert_int_equal(jf_queue_count_tasks(f->st, q, JF_KIND_GROUP, c), JF_OK);
	assert_int_equal(jf_queue_count_tasks(other, q, JF_KIND_GROUP, c2), JF_OK);
	assert_memory_equal(c, c2, sizeof(c));
	jf_store_close(other);
}

/* Acceptance makes one chunk; the rest come in the order of their
 * indexes, each call no more than it was asked for; the counts say every
 * task all along, whether its row is made or not. */
static void test_make_tasks(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "big");
	int64_t small = mkgroup(f->st, q, JF_KIND_GROUP, "small");
	int64_t gid = -1, qid = -1;
	assert_int_equal(jf_group_next_unmade(f->st, &gid, &qid), JF_OK);
	assert_int_equal(gid, 0);
	accept(f->st, small, JF_TASKS_CHUNK, 1); /* a chunk: every row at once */
	assert_int_equal(group_unmade(f->st, small), 0);
	expect_rows(f->db, small, JF_TASKS_CHUNK);
	assert_int_equal(jf_group_next_unmade(f->st, &gid, &qid), JF_OK);
	assert_int_equal(gid, 0);

	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, g, c), JF_OK); /* a memo, then... */
	accept(f->st, g, BIG, 1);
	expect_rows(f->db, g, JF_TASKS_CHUNK);
	assert_int_equal(group_unmade(f->st, g), BIG - JF_TASKS_CHUNK);
	expect_counts(f, q, g, JF_ST_WAITING, BIG);
	assert_int_equal(jf_group_count_tasks(f->st, small, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], JF_TASKS_CHUNK);
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(f->st, g, JF_TASKS_CHUNK - 1, &t), JF_OK);
	jf_task_release(&t);
	assert_int_equal(jf_task_find(f->st, g, JF_TASKS_CHUNK, &t), JF_ENOENT);
	assert_int_equal(jf_group_next_unmade(f->st, &gid, &qid), JF_OK);
	assert_int_equal(gid, g);
	assert_int_equal(qid, q);

	/* a task that runs moves the counts as ever */
	assert_int_equal(jf_task_set_state(f->st, task_id(f->st, g, 0), JF_ST_RUNNING, NULL, T0),
			 JF_OK);
	int64_t left = -1;
	assert_int_equal(jf_group_make_tasks(f->st, g, 100, &left), JF_OK);
	assert_int_equal(left, BIG - JF_TASKS_CHUNK - 100);
	assert_int_equal(group_unmade(f->st, g), left);
	expect_rows(f->db, g, JF_TASKS_CHUNK + 100);
	expect_counts(f, q, g, JF_ST_WAITING, BIG - 1);
	assert_int_equal(jf_group_count_tasks(f->st, g, c), JF_OK);
	assert_int_equal(c[JF_ST_RUNNING], 1);
	int64_t before = left;
	while (left > 0) {
		assert_int_equal(jf_group_make_tasks(f->st, g, JF_TASKS_CHUNK, &left), JF_OK);
		assert_true(left < before && before - left <= JF_TASKS_CHUNK);
		before = left;
	}
	expect_rows(f->db, g, BIG);
	assert_int_equal(group_unmade(f->st, g), 0);
	expect_counts(f, q, g, JF_ST_WAITING, BIG - 1);
	assert_int_equal(jf_task_find(f->st, g, BIG - 1, &t), JF_OK);
	assert_int_equal(t.state, JF_ST_WAITING);
	assert_string_equal(t.message, "");
	jf_task_release(&t);
	assert_int_equal(jf_group_next_unmade(f->st, &gid, &qid), JF_OK);
	assert_int_equal(gid, 0);

	/* nothing left: nothing made; bad arguments */
	assert_int_equal(jf_group_make_tasks(f->st, g, 10, &left), JF_OK);
	assert_int_equal(left, 0);
	expect_rows(f->db, g, BIG);
	assert_int_equal(jf_group_make_tasks(f->st, g, 0, &left), JF_EINVAL);
	assert_int_equal(jf_group_make_tasks(f->st, g + 100, 10, &left), JF_ENOENT);
	assert_int_equal(left, 0);
	struct jf_error err = { 0 };
	assert_int_equal(jf_store_check(f->st, &err), JF_OK);
}

/* Whole-group moves take the rows not made yet along: they are made in the
 * state, with the message and the finish time, the made ones got; a
 * restart sends them back to Waiting. */
static void test_make_tasks_moves(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "big");
	accept(f->st, g, BIG, 1);
	int64_t t0 = task_id(f->st, g, 0), changed = -1;
	assert_int_equal(jf_task_set_state(f->st, t0, JF_ST_RUNNING, NULL, T0), JF_OK);
	unsigned wait_pause = (1u << JF_ST_WAITING) | (1u << JF_ST_PAUSED);

	/* a mask without their state leaves them */
	assert_int_equal(jf_task_set_state_all(f->st, g, 1u << JF_ST_PAUSED, JF_ST_WAITING, "",
					       T0 + 1, &changed),
			 JF_OK);
	assert_int_equal(changed, 0);
	expect_counts(f, q, g, JF_ST_WAITING, BIG - 1);

	assert_int_equal(jf_task_set_state_all(f->st, g, wait_pause, JF_ST_STOPPED,
					       "stopped by ctl", T0 + 5, &changed),
			 JF_OK);
	assert_int_equal(changed, BIG - 1); /* made or not */
	expect_counts(f, q, g, JF_ST_STOPPED, BIG - 1);
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, g, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], 0);
	assert_int_equal(c[JF_ST_RUNNING], 1);
	assert_int_equal(group_unmade(f->st, g), BIG - JF_TASKS_CHUNK);
	int64_t left = 0;
	assert_int_equal(jf_group_make_tasks(f->st, g, JF_TASKS_CHUNK, &left), JF_OK);
	assert_true(left > 0);
	expect_counts(f, q, g, JF_ST_STOPPED, BIG - 1);
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(f->st, g, JF_TASKS_CHUNK, &t), JF_OK);
	assert_int_equal(t.state, JF_ST_STOPPED);
	assert_string_equal(t.message, "stopped by ctl");
	assert_int_equal(t.finished_ms, T0 + 5);
	jf_task_release(&t);

	/* a restart: every task, made or not, waits again */
	assert_int_equal(jf_group_reset(f->st, g, 0), JF_OK);
	expect_counts(f, q, g, JF_ST_WAITING, BIG);
	assert_int_equal(jf_group_make_tasks(f->st, g, JF_TASKS_CHUNK, &left), JF_OK);
	assert_int_equal(left, 0);
	expect_rows(f->db, g, BIG);
	assert_int_equal(jf_task_find(f->st, g, BIG - 1, &t), JF_OK);
	assert_int_equal(t.state, JF_ST_WAITING);
	assert_string_equal(t.message, "");
	assert_int_equal(t.finished_ms, 0);
	jf_task_release(&t);
	expect_counts(f, q, g, JF_ST_WAITING, BIG);

	/* a second group's unmade tasks add to the queue's counts */
	int64_t g2 = mkgroup(f->st, q, JF_KIND_GROUP, "big2");
	accept(f->st, g2, BIG, 1);
	assert_int_equal(jf_task_set_state_all(f->st, g2, wait_pause, JF_ST_FAILED, "failed",
					       T0 + 9, &changed),
			 JF_OK);
	assert_int_equal(changed, BIG);
	assert_int_equal(jf_queue_count_tasks(f->st, q, JF_KIND_GROUP, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], BIG);
	assert_int_equal(c[JF_ST_FAILED], BIG);
	expect_counts(f, q, g2, JF_ST_FAILED, BIG);
	/* removing a group takes its unmade tasks too */
	assert_int_equal(jf_group_delete(f->st, g2), JF_OK);
	assert_int_equal(jf_queue_count_tasks(f->st, q, JF_KIND_GROUP, c), JF_OK);
	assert_int_equal(c[JF_ST_FAILED], 0);
	assert_int_equal(c[JF_ST_WAITING], BIG);
}

/* All or nothing: a chunk rolled back leaves no row and the count of
 * those to make as it was; so does an acceptance rolled back. */
static void test_make_tasks_rollback(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "big");
	accept(f->st, g, BIG, 1);
	int64_t left = 0;
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	assert_int_equal(jf_group_make_tasks(f->st, g, JF_TASKS_CHUNK, &left), JF_OK);
	assert_int_equal(left, 5);
	jf_store_rollback(f->st);
	expect_rows(f->db, g, JF_TASKS_CHUNK);
	assert_int_equal(group_unmade(f->st, g), BIG - JF_TASKS_CHUNK);
	expect_counts(f, q, g, JF_ST_WAITING, BIG);

	int64_t g2 = mkgroup(f->st, q, JF_KIND_GROUP, "other");
	assert_int_equal(jf_store_begin(f->st), JF_OK);
	accept(f->st, g2, BIG, 1);
	jf_store_rollback(f->st);
	expect_rows(f->db, g2, 0);
	assert_int_equal(group_unmade(f->st, g2), 0);
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, g2, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], 0);
}

struct taken {
	int n;
	char paths[8][128];
	int kinds[8];
};

static void take_one(void *ctx, enum jf_trash_kind kind, const char *path)
{
	struct taken *t = ctx;
	if (t->n < 8) {
		snprintf(t->paths[t->n], sizeof(t->paths[0]), "%s", path);
		t->kinds[t->n] = kind;
	}
	t->n++;
}

static int count_kept(void *ctx, int64_t id, int64_t queue_id)
{
	(void)id;
	(void)queue_id;
	(*(int *)ctx)++;
	return 0;
}

static int name_seen(void *ctx, int64_t id, const char *name)
{
	(void)id;
	char *buf = ctx;
	strcat(buf, name);
	strcat(buf, ",");
	return 0;
}

static int path_seen(void *ctx, const char *path)
{
	strcat(ctx, path);
	strcat(ctx, ",");
	return 0;
}

/* 14 -> 15: a queue's budget state, and the segments a budget counts
 * (reference 10): with no period the open ones over the closed total (the
 * queue's cost, as jf_ledger_sum), with one those inside the window. */
static void test_budget_segs(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "b");
	jf_store_close(f->st);
	f->st = NULL;
	sql_exec(f->db, UNDO_15 "PRAGMA user_version = 14");
	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	int state_ = -1;
	assert_int_equal(jf_queue_budget_state(f->st, q, &state_), JF_OK);
	assert_int_equal(state_, 0);
	assert_int_equal(jf_queue_set_budget_state(f->st, q, 1), JF_OK);
	assert_int_equal(jf_queue_budget_state(f->st, q, &state_), JF_OK);
	assert_int_equal(state_, 1);
	assert_int_equal(jf_queue_budget_state(f->st, 999, &state_), JF_ENOENT);

	/* queue q: a segment closed long ago, one closed recently, one open;
	 * another queue's open segment is not q's */
	struct jf_ledger_rec old =
		row(q, "b", 10, "g", 100, 1000, 701, "on-demand", "", 0, T0, 3600000);
	struct jf_ledger_rec recent =
		row(q, "b", 10, "g", 101, 1001, 702, "on-demand", "", 0, T0 + 86400000, 3600000);
	struct jf_ledger_rec open =
		row(q, "b", 10, "g", 102, 1002, 703, "on-demand", "", 0, T0 + 90000000, 7200000);
	struct jf_ledger_rec other =
		row(q + 1, "c", 20, "h", 200, 2000, 704, "on-demand", "", 0, T0, 7200000);
	assert_int_equal(jf_ledger_open(f->st, &old, NULL), JF_OK);
	assert_int_equal(jf_ledger_close(f->st, 701, T0 + 10000), JF_OK); /* 10 s: 10000 */
	assert_int_equal(jf_ledger_open(f->st, &recent, NULL), JF_OK);
	assert_int_equal(jf_ledger_close(f->st, 702, T0 + 86420000), JF_OK); /* 20 s: 20000 */
	assert_int_equal(jf_ledger_open(f->st, &open, NULL), JF_OK);
	assert_int_equal(jf_ledger_open(f->st, &other, NULL), JF_OK);
	int64_t now = T0 + 90030000; /* the open one: 30 s at 2000 a second */

	struct jf_budget_seg *segs = NULL;
	size_t n = 0;
	int64_t base = -1;
	assert_int_equal(jf_ledger_budget_segs(f->st, q, 0, now, &segs, &n, &base), JF_OK);
	assert_int_equal(base, 30000);
	assert_int_equal(n, 1);
	assert_int_equal(segs[0].start_ms, T0 + 90000000);
	assert_int_equal(segs[0].end_ms, 0);
	assert_int_equal(segs[0].rate, 7200000);
	int64_t amount = 0, secs = 0;
	assert_int_equal(jf_ledger_sum(f->st, JF_SCOPE_QUEUE, q, now, &amount, &secs), JF_OK);
	assert_int_equal(jf_budget_spent(segs, n, base, now, 0), amount);
	assert_int_equal(amount, 30000 + 60000);
	free(segs);

	/* a day's window: the old one has left it, the recent one is in */
	assert_int_equal(jf_ledger_budget_segs(f->st, q, 86400, now, &segs, &n, &base), JF_OK);
	assert_int_equal(base, 0);
	assert_int_equal(n, 2);
	assert_int_equal(jf_budget_spent(segs, n, base, now, 86400), 20000 + 60000);
	free(segs);
	/* an hour's: only the open one */
	assert_int_equal(jf_ledger_budget_segs(f->st, q, 3600, now, &segs, &n, &base), JF_OK);
	assert_int_equal(n, 1);
	assert_int_equal(jf_budget_spent(segs, n, base, now, 3600), 60000);
	free(segs);
	/* a queue with no rows */
	assert_int_equal(jf_ledger_budget_segs(f->st, q + 7, 0, now, &segs, &n, &base), JF_OK);
	assert_null(segs);
	assert_int_equal(n, 0);
	assert_int_equal(base, 0);
}

/* 12 -> 13: volumes and object sources, who mounts them, their events */
static void test_stores(void **state)
{
	struct fix *f = *state;
	/* an old database: the tables come with the migration */
	jf_store_close(f->st);
	f->st = NULL;
	sql_exec(f->db, UNDO_13 "PRAGMA user_version = 12");
	f->st = open_store(f->db);
	int64_t v = 0, o = 0, v2 = 0;
	assert_int_equal(jf_stor_create(f->st, JF_SK_VOLUME, "ckpt", 1000, 100, T0, &v), JF_OK);
	assert_int_equal(jf_stor_create(f->st, JF_SK_OBJECT, "ckpt", 1000, 100, T0, &o), JF_OK);
	assert_int_equal(jf_stor_create(f->st, JF_SK_VOLUME, "ckpt", 1, 1, T0, &v2), JF_EEXIST);
	assert_int_equal(jf_stor_create(f->st, JF_SK_VOLUME, "code", 1, 1, T0, &v2), JF_OK);
	struct jf_store_rec r;
	assert_int_equal(jf_stor_find(f->st, JF_SK_OBJECT, "ckpt", &r), JF_OK);
	assert_int_equal(r.id, o);
	assert_int_equal(r.kind, JF_SK_OBJECT);
	assert_int_equal(r.uid, 1000);
	assert_string_equal(r.spec, "");
	assert_string_equal(r.info, "");
	jf_stor_release(&r);
	assert_int_equal(jf_stor_find(f->st, JF_SK_OBJECT, "code", &r), JF_ENOENT);
	assert_int_equal(jf_stor_set_spec(f->st, o, "bucket: b\n", T0 + 5), JF_OK);
	assert_int_equal(jf_stor_set_state(f->st, o, 2, "synced", "{\"objects\":3}", T0 + 9),
			 JF_OK);
	/* NULL keeps the message and the figures */
	assert_int_equal(jf_stor_set_state(f->st, o, 1, NULL, NULL, T0 + 10), JF_OK);
	assert_int_equal(jf_stor_get(f->st, o, &r), JF_OK);
	assert_string_equal(r.spec, "bucket: b\n");
	assert_int_equal(r.state, 1);
	assert_string_equal(r.message, "synced");
	assert_string_equal(r.info, "{\"objects\":3}");
	assert_int_equal(r.changed_ms, T0 + 10);
	jf_stor_release(&r);
	char names[256] = "";
	assert_int_equal(jf_stor_list(f->st, JF_SK_VOLUME, 0, 10, name_seen, names), JF_OK);
	assert_string_equal(names, "ckpt,code,");
	names[0] = '\0';
	assert_int_equal(jf_stor_list(f->st, JF_SK_VOLUME, v, 10, name_seen, names), JF_OK);
	assert_string_equal(names, "code,");
	/* mounts: used_by in node order; a node's end lets all of its go */
	assert_int_equal(jf_stor_use(f->st, v, 7, "queues/q/groups/g/tasks/1/nodes/0", T0), JF_OK);
	assert_int_equal(jf_stor_use(f->st, v, 3, "queues/q/groups/g/tasks/0/nodes/0", T0), JF_OK);
	assert_int_equal(jf_stor_use(f->st, o, 3, "queues/q/groups/g/tasks/0/nodes/0", T0), JF_OK);
	char paths[512] = "";
	assert_int_equal(jf_stor_users(f->st, v, path_seen, paths), JF_OK);
	assert_string_equal(paths,
			    "queues/q/groups/g/tasks/0/nodes/0,queues/q/groups/g/tasks/1/nodes/0,");
	int64_t ids[4];
	size_t n = 0;
	assert_int_equal(jf_stor_unuse(f->st, 3, ids, 4, &n), JF_OK);
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], v);
	assert_int_equal(ids[1], o);
	paths[0] = '\0';
	jf_stor_users(f->st, o, path_seen, paths);
	assert_string_equal(paths, "");
	assert_int_equal(jf_stor_unuse(f->st, 3, ids, 4, &n), JF_OK);
	assert_int_equal(n, 0);
	/* events of their own, in no other scope */
	struct jf_event_scope sc = { .store_id = v };
	assert_int_equal(jf_event_add(f->st, &sc, T0, "Normal", "Created", "volume", "made"),
			 JF_OK);
	assert_int_equal(jf_event_add(f->st, &sc, T0, "Normal", "Mounted", "volume", "by x"),
			 JF_OK);
	int64_t bytes = 0;
	assert_int_equal(jf_event_size(f->st, JF_SCOPE_STORE, v, &bytes), JF_OK);
	char buf[512];
	size_t got = 0;
	assert_int_equal(jf_event_read(f->st, JF_SCOPE_STORE, v, 0, buf, sizeof(buf), &got), JF_OK);
	assert_int_equal((int64_t)got, bytes);
	buf[got] = '\0';
	assert_string_equal(buf, "2026-11-29T18:00:03Z Normal Created volume made\n"
				 "2026-11-29T18:00:03Z Normal Mounted volume by x\n");
	assert_int_equal(jf_event_size(f->st, JF_SCOPE_STORE, o, &bytes), JF_OK);
	assert_int_equal(bytes, 0);
	assert_int_equal(jf_event_size(f->st, JF_SCOPE_QUEUE, v, &bytes), JF_OK);
	assert_int_equal(bytes, 0);
	/* removed: its row and its events */
	assert_int_equal(jf_stor_delete(f->st, v), JF_OK);
	assert_int_equal(jf_stor_get(f->st, v, &r), JF_ENOENT);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM events WHERE store_id IS NOT NULL"),
			 0);
}

/* 11 -> 12: what a node ran, and who uses an image */
static void test_node_images(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	accept(f->st, g, 3, 3);
	int64_t t0 = task_id(f->st, g, 0), t1 = task_id(f->st, g, 1), t2 = task_id(f->st, g, 2);
	int64_t n0 = 0, n1 = 0, n2 = 0;
	assert_int_equal(jf_node_ensure(f->st, t0, 0, &n0), JF_OK);
	assert_int_equal(jf_node_ensure(f->st, t1, 0, &n1), JF_OK);
	/* an old database: the columns come with their defaults */
	jf_store_close(f->st);
	f->st = NULL;
	sql_exec(f->db, UNDO_12 "PRAGMA user_version = 11");
	f->st = open_store(f->db);
	assert_int_equal(jf_node_ensure(f->st, t2, 0, &n2), JF_OK);
	struct jf_node_rec n;
	assert_int_equal(jf_node_get(f->st, n0, &n), JF_OK);
	assert_string_equal(n.runtime, "");
	assert_string_equal(n.images, "");
	assert_string_equal(n.reason, "");
	jf_node_release(&n);
	assert_int_equal(jf_node_set_image(f->st, n0, "oci", "h/a:1,h/b:2", "sha256:ab"), JF_OK);
	assert_int_equal(jf_node_set_image(f->st, n1, "oci", "h/a:10", "sha256:cd"), JF_OK);
	assert_int_equal(jf_node_set_image(f->st, n2, "oci", "h/b:2", "sha256:ef"), JF_OK);
	assert_int_equal(jf_node_set_reason(f->st, n0, "OOMKilled"), JF_OK);
	assert_int_equal(jf_node_get(f->st, n0, &n), JF_OK);
	assert_string_equal(n.runtime, "oci");
	assert_string_equal(n.images, "h/a:1,h/b:2");
	assert_string_equal(n.image_digest, "sha256:ab");
	assert_string_equal(n.reason, "OOMKilled");
	jf_node_release(&n);
	/* only running or starting nodes use an image; "h_a_1" is not a
	 * prefix match of "h_a_10", and '_' is no wildcard */
	int64_t ids[4];
	assert_int_equal(jf_node_image_users(f->st, "h/a:1", ids, 4), 0);
	assert_int_equal(jf_node_set_state(f->st, n0, JF_ST_RUNNING, "", 1), JF_OK);
	assert_int_equal(jf_node_set_state(f->st, n1, JF_ST_RUNNING, "", 1), JF_OK);
	assert_int_equal(jf_node_set_state(f->st, n2, JF_ST_INITIALIZING, "", 1), JF_OK);
	assert_int_equal(jf_node_image_users(f->st, "h/a:1", ids, 4), 1);
	assert_int_equal(ids[0], n0);
	assert_int_equal(jf_node_image_users(f->st, "h/a_1", ids, 4), 0);
	assert_int_equal(jf_node_image_users(f->st, "h/b:2", ids, 4), 2);
	assert_int_equal(jf_node_image_users(f->st, "h/b:2", ids, 1), 2); /* counted past max */
	assert_int_equal(jf_node_set_state(f->st, n0, JF_ST_SUCCEEDED, "", 2), JF_OK);
	assert_int_equal(jf_node_image_users(f->st, "h/a:1", ids, 4), 0);
}

struct attempt_seen {
	int n;
	int64_t id[8], attempt[8];
};

static int attempt_seen(void *ctx, int64_t id, int64_t attempt)
{
	struct attempt_seen *a = ctx;
	a->id[a->n] = id;
	a->attempt[a->n++] = attempt;
	return a->n == 8;
}

/* 13 -> 14 (reference 9.2): every attempt keeps when it was made, how it
 * ended and what it ran, while its node goes on to the next one; a
 * node's attempts are listed in order, a page at a time. */
static void test_attempts_kept(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	accept(f->st, g, 1, 1);
	int64_t t0 = task_id(f->st, g, 0), n0 = 0, n1 = 0, a1 = 0, a2 = 0, b1 = 0;
	assert_int_equal(jf_node_ensure(f->st, t0, 0, &n0), JF_OK);
	assert_int_equal(jf_node_ensure(f->st, t0, 1, &n1), JF_OK);
	assert_int_equal(jf_attempt_create(f->st, n0, 1, "/r/1", "m0", "0", 1000, T0 + 1, &a1),
			 JF_OK);
	assert_int_equal(jf_node_set_run(f->st, n0, "m0", "0", 0, -1, 1, a1), JF_OK);
	assert_int_equal(jf_node_set_image(f->st, n0, "oci", "h/a:1,h/b:2", ""), JF_OK);
	assert_int_equal(jf_node_set_image(f->st, n0, "oci", "h/a:1,h/b:2", "sha256:aa"), JF_OK);
	assert_int_equal(jf_attempt_ended(f->st, a1, T0 + 100, 3, "exit code 3"), JF_OK);
	assert_int_equal(jf_attempt_set_outcome(f->st, a1, JF_ST_FAILED, "Error"), JF_OK);
	/* the node's next attempt: what it runs is that one's, the first keeps its own */
	assert_int_equal(jf_attempt_create(f->st, n0, 2, "/r/2", "m1", "1", 1000, T0 + 200, &a2),
			 JF_OK);
	assert_int_equal(jf_node_set_run(f->st, n0, "m1", "1", 0, -1, 2, a2), JF_OK);
	assert_int_equal(jf_node_set_image(f->st, n0, "oci", "h/a:1", "sha256:bb"), JF_OK);
	assert_int_equal(jf_attempt_create(f->st, n1, 1, "/r/n1", "m0", "", 1000, T0 + 5, &b1),
			 JF_OK);
	struct jf_attempt_rec a;
	assert_int_equal(jf_attempt_get(f->st, a1, &a), JF_OK);
	assert_int_equal(a.created_ms, T0 + 1);
	assert_int_equal(a.end_state, JF_ST_FAILED);
	assert_string_equal(a.end_reason, "Error");
	assert_string_equal(a.runtime, "oci");
	assert_string_equal(a.images, "h/a:1,h/b:2");
	assert_string_equal(a.image_digest, "sha256:aa");
	jf_attempt_release(&a);
	assert_int_equal(jf_attempt_get(f->st, a2, &a), JF_OK);
	assert_int_equal(a.created_ms, T0 + 200);
	assert_int_equal(a.end_state, -1); /* runs */
	assert_string_equal(a.end_reason, "");
	assert_string_equal(a.images, "h/a:1");
	assert_string_equal(a.image_digest, "sha256:bb");
	jf_attempt_release(&a);
	assert_int_equal(jf_attempt_get(f->st, b1, &a), JF_OK);
	assert_string_equal(a.images, ""); /* its node had none set */
	jf_attempt_release(&a);
	/* listed in order, from after on, at most limit */
	struct attempt_seen seen = { 0 };
	assert_int_equal(jf_attempt_list(f->st, n0, 0, 10, attempt_seen, &seen), JF_OK);
	assert_int_equal(seen.n, 2);
	assert_int_equal(seen.id[0], a1);
	assert_int_equal(seen.attempt[0], 1);
	assert_int_equal(seen.id[1], a2);
	assert_int_equal(seen.attempt[1], 2);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(jf_attempt_list(f->st, n0, 1, 10, attempt_seen, &seen), JF_OK);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.attempt[0], 2);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(jf_attempt_list(f->st, n0, 0, 1, attempt_seen, &seen), JF_OK);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.attempt[0], 1);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(jf_attempt_list(f->st, 999999, 0, 10, attempt_seen, &seen), JF_OK);
	assert_int_equal(seen.n, 0);

	/* a version-13 database: its rows get what is known of them, each
	 * node's last attempt what its node says */
	assert_int_equal(jf_attempt_ended(f->st, a2, T0 + 300, 0, "exit code 0"), JF_OK);
	assert_int_equal(jf_node_set_reason(f->st, n0, "Completed"), JF_OK);
	assert_int_equal(jf_node_set_state(f->st, n0, JF_ST_SUCCEEDED, "", T0 + 300), JF_OK);
	assert_int_equal(jf_attempt_started(f->st, a1, "h", 1, T0 + 50), JF_OK);
	jf_store_close(f->st);
	f->st = NULL;
	sql_exec(f->db, UNDO_14 "PRAGMA user_version = 13");
	f->st = open_store(f->db);
	assert_int_equal(sql_int(f->db, "PRAGMA user_version"), JF_STORE_SCHEMA);
	assert_int_equal(jf_attempt_get(f->st, a1, &a), JF_OK);
	assert_int_equal(a.created_ms, T0 + 50); /* made when started, as far as known */
	assert_int_equal(a.end_state, -1);
	assert_string_equal(a.images, "");
	jf_attempt_release(&a);
	assert_int_equal(jf_attempt_get(f->st, a2, &a), JF_OK);
	assert_int_equal(a.end_state, JF_ST_SUCCEEDED);
	assert_string_equal(a.end_reason, "Completed");
	assert_string_equal(a.runtime, "oci");
	assert_string_equal(a.image_digest, "sha256:bb");
	jf_attempt_release(&a);
	assert_int_equal(jf_attempt_get(f->st, b1, &a), JF_OK);
	assert_int_equal(a.end_state, -1); /* not its node's attempt: the node names none */
	jf_attempt_release(&a);
}

/* 10 -> 11, and the trash: rows in order, taken a batch at a time and
 * removed up to the last taken; a group's directories all named; the
 * finished groups whose logs are kept, per queue, until marked freed. */
static void test_trash(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	accept(f->st, g, 2, 2);
	jf_store_close(f->st);
	f->st = NULL;
	sql_exec(f->db, UNDO_11 "PRAGMA user_version = 10");
	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);

	int64_t t0 = task_id(f->st, g, 0), t1 = task_id(f->st, g, 1), n0 = 0, n1 = 0, a = 0;
	assert_int_equal(jf_node_ensure(f->st, t0, 0, &n0), JF_OK);
	assert_int_equal(jf_node_ensure(f->st, t1, 0, &n1), JF_OK);
	assert_int_equal(jf_attempt_create(f->st, n0, 1, "/s/runs/1/1", "m0", "0", 1000, T0, &a),
			 JF_OK);
	assert_int_equal(jf_attempt_create(f->st, n1, 1, "/s/runs/2/1", "m0", "1", 1000, T0, &a),
			 JF_OK);

	assert_int_equal(jf_trash_add(f->st, JF_TRASH_TIDY, "/s/runs/1/1"), JF_OK);
	assert_int_equal(jf_trash_add(f->st, JF_TRASH_EMPTY, "/s/ckpt/1"), JF_OK);
	struct taken tk = { 0 };
	int64_t last = 0;
	assert_int_equal(jf_trash_take(f->st, 1, take_one, &tk, &last), JF_OK);
	assert_int_equal(tk.n, 1);
	assert_string_equal(tk.paths[0], "/s/runs/1/1");
	assert_int_equal(tk.kinds[0], JF_TRASH_TIDY);
	assert_int_equal(jf_trash_done(f->st, last), JF_OK);
	int64_t n = 0;
	assert_int_equal(jf_trash_count(f->st, &n), JF_OK);
	assert_int_equal(n, 1);
	memset(&tk, 0, sizeof(tk));
	assert_int_equal(jf_trash_take(f->st, 10, take_one, &tk, &last), JF_OK);
	assert_int_equal(tk.n, 1);
	assert_int_equal(tk.kinds[0], JF_TRASH_EMPTY);
	assert_int_equal(jf_trash_done(f->st, last), JF_OK);

	/* a finished group: its logs are kept until freed */
	assert_int_equal(jf_group_set_state(f->st, g, JF_ST_SUCCEEDED, "", T0 + 5000), JF_OK);
	int kept = 0;
	assert_int_equal(jf_group_list_logs_kept(f->st, q, T0 + 10000, 10, count_kept, &kept),
			 JF_OK);
	assert_int_equal(kept, 1);
	kept = 0;
	assert_int_equal(jf_group_list_logs_kept(f->st, q, T0 + 1000, 10, count_kept, &kept),
			 JF_OK);
	assert_int_equal(kept, 0); /* ended after before_ms */
	kept = 0;
	assert_int_equal(jf_group_list_logs_kept(f->st, 0, T0 + 10000, 10, count_kept, &kept),
			 JF_OK);
	assert_int_equal(kept, 0); /* not a batch of /tasks */
	assert_int_equal(jf_trash_group_logs(f->st, g, T0 + 20000, &n), JF_OK);
	assert_int_equal(n, 2);
	kept = 0;
	assert_int_equal(jf_group_list_logs_kept(f->st, q, T0 + 30000, 10, count_kept, &kept),
			 JF_OK);
	assert_int_equal(kept, 0);

	/* removal: both run directories and both checkpoint directories */
	assert_int_equal(jf_trash_group(f->st, g, "/s", &n), JF_OK);
	assert_int_equal(n, 4);
	assert_int_equal(jf_group_delete(f->st, g), JF_OK);
	memset(&tk, 0, sizeof(tk));
	assert_int_equal(jf_trash_take(f->st, 10, take_one, &tk, &last), JF_OK);
	assert_int_equal(tk.n, 6);
	char want[64];
	snprintf(want, sizeof(want), "/s/ckpt/%lld", (long long)t0);
	bool seen = false;
	for (int i = 0; i < 6; i++) {
		assert_int_equal(tk.kinds[i], JF_TRASH_TREE);
		seen = seen || !strcmp(tk.paths[i], want);
	}
	assert_true(seen);
}

/* 9 -> 10: a queue of an older database has no refusal to show; a
 * refusal is kept until a spec is accepted. */
static void test_migrate_9_to_10(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	assert_int_equal(jf_queue_set_spec(f->st, q, "capacity: 4\n", 4, 0), JF_OK);
	jf_store_close(f->st);
	f->st = NULL;
	sql_exec(f->db, UNDO_10 "PRAGMA user_version = 9");
	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	struct jf_queue_rec r;
	assert_int_equal(jf_queue_get(f->st, q, &r), JF_OK);
	assert_string_equal(r.message, "");
	assert_string_equal(r.spec, "capacity: 4\n");
	jf_queue_release(&r);
	assert_int_equal(jf_queue_set_message(f->st, q, "spec.yaml refused: bad"), JF_OK);
	assert_int_equal(jf_queue_get(f->st, q, &r), JF_OK);
	assert_string_equal(r.message, "spec.yaml refused: bad");
	assert_int_equal(r.capacity, 4);
	jf_queue_release(&r);
	assert_int_equal(jf_queue_set_spec(f->st, q, "capacity: 5\n", 5, 0), JF_OK);
	assert_int_equal(jf_queue_get(f->st, q, &r), JF_OK);
	assert_string_equal(r.message, "");
	jf_queue_release(&r);
}

/* 8 -> 9: the groups of an older database have all their rows. */
static void test_migrate_8_to_9(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t g = mkgroup(f->st, q, JF_KIND_GROUP, "g");
	accept(f->st, g, 3, 3);
	jf_store_close(f->st);
	f->st = NULL;
	sql_exec(f->db, UNDO_9 "PRAGMA user_version = 8");
	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM pragma_table_info('groups') "
					"WHERE name LIKE 'unmade%'"),
			 4);
	assert_int_equal(group_unmade(f->st, g), 0);
	expect_counts(f, q, g, JF_ST_WAITING, 3);
	int64_t gid = -1, qid = -1;
	assert_int_equal(jf_group_next_unmade(f->st, &gid, &qid), JF_OK);
	assert_int_equal(gid, 0);
	/* and a big group submitted now is made in chunks */
	int64_t g2 = mkgroup(f->st, q, JF_KIND_GROUP, "big");
	accept(f->st, g2, BIG, 1);
	assert_int_equal(group_unmade(f->st, g2), BIG - JF_TASKS_CHUNK);
	struct jf_error err = { 0 };
	assert_int_equal(jf_store_check(f->st, &err), JF_OK);
}

/* ---- dependencies (reference 10) ---- */

struct dep_rows {
	struct jf_dep_rec r[16];
	int n;
};

static int dep_seen(void *ctx, const struct jf_dep_rec *r)
{
	struct dep_rows *l = ctx;
	if (l->n < 16)
		l->r[l->n++] = *r;
	return 0;
}

static int task_seen(void *ctx, int64_t id, int64_t idx)
{
	struct ids *l = ctx;
	l->id[l->n] = id;
	l->idx[l->n++] = idx;
	return 0;
}

static int task_seen3(void *ctx, int64_t id, int64_t idx, int64_t attempt)
{
	(void)attempt;
	return task_seen(ctx, id, idx);
}

static void set_task(struct jf_store *st, int64_t g, int64_t idx, int state)
{
	assert_int_equal(jf_task_set_state(st, task_id(st, g, idx), state, "", T0 + 5), JF_OK);
}

/* The (group, state) pairs where task_counts differs from a count of the
 * rows, a nonzero count with no rows included: 0 when the triggers kept it. */
static int64_t counts_off(const char *db)
{
	return sql_int(db, "SELECT count(*) FROM ("
			   " SELECT group_id, state, count(*) AS n FROM tasks GROUP BY 1, 2) r"
			   " FULL JOIN (SELECT * FROM task_counts WHERE n != 0) c"
			   " ON c.group_id = r.group_id AND c.state = r.state"
			   " WHERE r.n IS NOT c.n");
}

/* 16 -> 17: task_counts made from the rows there are, then kept by the
 * triggers through every way a task's row changes: made, one state, all
 * at once, a reset, the group deleted; the counts the store reads on a
 * second connection (a reader's) equal a scan of the rows */
static void test_task_counts(void **state)
{
	struct fix *f = *state;
	int64_t q = mkqueue(f->st, "q");
	int64_t a = mkgroup(f->st, q, JF_KIND_GROUP, "a");
	int64_t b = mkgroup(f->st, q, JF_KIND_GROUP, "b");
	jf_store_set_tasks_chunk(f->st, 2); /* an acceptance makes 2 rows */
	accept(f->st, a, 6, 6);
	accept(f->st, b, 5, 5);
	int64_t left = 0;
	assert_int_equal(jf_group_make_tasks(f->st, a, 100, &left), JF_OK);
	assert_int_equal(jf_group_make_tasks(f->st, b, 1, &left), JF_OK);
	assert_int_equal(left, 2); /* two of b's rows not made yet */
	set_task(f->st, a, 0, JF_ST_RUNNING);
	set_task(f->st, a, 1, JF_ST_SUCCEEDED);
	set_task(f->st, b, 0, JF_ST_FAILED);
	/* an old database: the table and its triggers come with the migration,
	 * filled from the rows */
	jf_store_close(f->st);
	f->st = NULL;
	sql_exec(f->db, UNDO_17 "PRAGMA user_version = 16");
	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	assert_int_equal(counts_off(f->db), 0);
	int64_t c[JF_ST__COUNT];
	assert_int_equal(jf_group_count_tasks(f->st, a, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], 4);
	assert_int_equal(c[JF_ST_RUNNING], 1);
	assert_int_equal(c[JF_ST_SUCCEEDED], 1);
	assert_int_equal(jf_group_count_tasks(f->st, b, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], 4); /* 2 rows + 2 not made */
	assert_int_equal(c[JF_ST_FAILED], 1);

	/* a reader's connection: what it counts moves with every commit */
	struct jf_store *r = open_store(f->db);
	assert_int_equal(jf_queue_count_tasks(r, q, JF_KIND_GROUP, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], 8);
	set_task(f->st, a, 2, JF_ST_RUNNING);
	set_task(f->st, a, 0, JF_ST_SUCCEEDED);
	assert_int_equal(jf_group_make_tasks(f->st, b, 100, &left), JF_OK);
	assert_int_equal(left, 0);
	assert_int_equal(counts_off(f->db), 0);
	assert_int_equal(jf_queue_count_tasks(r, q, JF_KIND_GROUP, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], 7);
	assert_int_equal(c[JF_ST_RUNNING], 1);
	assert_int_equal(c[JF_ST_SUCCEEDED], 2);
	assert_int_equal(c[JF_ST_FAILED], 1);
	int64_t changed = 0;
	assert_int_equal(jf_task_set_state_all(f->st, a,
					       (1u << JF_ST_WAITING) | (1u << JF_ST_RUNNING),
					       JF_ST_STOPPED, "stopped", T0 + 9, &changed),
			 JF_OK);
	assert_int_equal(changed, 4);
	assert_int_equal(counts_off(f->db), 0);
	assert_int_equal(jf_group_count_tasks(r, a, c), JF_OK);
	assert_int_equal(c[JF_ST_STOPPED], 4);
	assert_int_equal(c[JF_ST_SUCCEEDED], 2);
	assert_int_equal(c[JF_ST_WAITING] + c[JF_ST_RUNNING], 0);
	assert_int_equal(jf_group_reset(f->st, a, 0), JF_OK);
	assert_int_equal(counts_off(f->db), 0);
	assert_int_equal(jf_group_count_tasks(r, a, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], 6);
	/* gone with its group: no count left behind, the other group's kept */
	assert_int_equal(jf_group_delete(f->st, a), JF_OK);
	assert_int_equal(counts_off(f->db), 0);
	char sql[96];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM task_counts WHERE group_id = %lld",
		 (long long)a);
	assert_int_equal(sql_int(f->db, sql), 0);
	assert_int_equal(jf_queue_count_tasks(r, q, JF_KIND_GROUP, c), JF_OK);
	assert_int_equal(c[JF_ST_WAITING], 4);
	assert_int_equal(c[JF_ST_FAILED], 1);
	jf_store_close(r);
}

/* 15 -> 16: the rows of after: entries, the target's path through a
 * rename and after its removal, and the task pairs of each entries */
static void test_deps(void **state)
{
	struct fix *f = *state;
	/* an old database: the table comes with the migration */
	jf_store_close(f->st);
	f->st = NULL;
	sql_exec(f->db, UNDO_16 "PRAGMA user_version = 15");
	f->st = open_store(f->db);
	assert_int_equal(jf_store_schema_version(f->st), JF_STORE_SCHEMA);
	int64_t q = mkqueue(f->st, "q");
	int64_t a = mkgroup(f->st, q, JF_KIND_GROUP, "a");
	int64_t b = mkgroup(f->st, q, JF_KIND_GROUP, "b");
	int64_t x = mkgroup(f->st, 0, JF_KIND_BATCH, "x");
	int64_t d = mkgroup(f->st, q, JF_KIND_GROUP, "d");
	accept(f->st, a, 4, 4);
	accept(f->st, x, 4, 4);
	accept(f->st, d, 4, 4);
	/* d after a (succeeded, each), b (failed), x (finished) */
	assert_int_equal(jf_dep_add(f->st, d, 0, a, "queues/q/groups/a", 0, true, 1u << 5, 0),
			 JF_OK);
	assert_int_equal(jf_dep_add(f->st, d, 1, b, "queues/q/groups/b", 1, false, 1u << 6, 0),
			 JF_OK);
	assert_int_equal(jf_dep_add(f->st, d, 2, x, "tasks/x", 2, false, 7u << 5, 1), JF_OK);
	/* one row per place */
	assert_int_equal(jf_dep_add(f->st, d, 2, x, "tasks/x", 2, false, 7u << 5, 1), JF_EEXIST);
	struct dep_rows l = { .n = 0 };
	assert_int_equal(jf_dep_list(f->st, d, dep_seen, &l), JF_OK);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.r[0].target_id, a);
	assert_string_equal(l.r[0].path, "queues/q/groups/a");
	assert_true(l.r[0].each);
	assert_int_equal(l.r[0].ok_mask, 1u << 5);
	assert_int_equal(l.r[0].target_state, JF_ST_WAITING);
	assert_int_equal(l.r[0].target_completions, 4);
	assert_int_equal(l.r[1].target_state, JF_ST_DRAFT);
	assert_int_equal(l.r[1].when, 1);
	assert_string_equal(l.r[2].path, "tasks/x");
	assert_int_equal(l.r[2].state, 1);
	struct jf_dep_summary sum;
	assert_int_equal(jf_dep_summary(f->st, d, &sum), JF_OK);
	assert_int_equal(sum.waits, 1);
	assert_int_equal(sum.each_waits, 1);
	assert_int_equal(sum.never, 0);
	assert_int_equal(sum.all, 3);
	int64_t n = 0;
	assert_int_equal(jf_dep_each_waiting(f->st, &n), JF_OK);
	assert_int_equal(n, 1);
	int64_t t[4];
	size_t nt = 0;
	assert_int_equal(jf_dep_targets(f->st, d, t, 4, &nt), JF_OK);
	assert_int_equal(nt, 3);
	assert_int_equal(t[0], a);
	assert_int_equal(t[2], x);
	assert_int_equal(jf_dep_targets(f->st, d, t, 1, &nt), JF_OK);
	assert_int_equal(nt, 3); /* the count of all, one written */

	/* the pairs: none of a's tasks has succeeded, so none of d's is ready */
	struct ids r = { .n = 0 };
	assert_int_equal(jf_dep_ready_tasks(f->st, d, false, 10, task_seen3, &r), JF_OK);
	assert_int_equal(r.n, 0);
	set_task(f->st, a, 2, JF_ST_SUCCEEDED);
	set_task(f->st, a, 0, JF_ST_SUCCEEDED);
	set_task(f->st, a, 1, JF_ST_FAILED);
	set_task(f->st, a, 3, JF_ST_RUNNING);
	assert_int_equal(jf_dep_ready_tasks(f->st, d, false, 10, task_seen3, &r), JF_OK);
	assert_int_equal(r.n, 2); /* lowest index first */
	assert_int_equal(r.idx[0], 0);
	assert_int_equal(r.idx[1], 2);
	r.n = 0;
	assert_int_equal(jf_dep_ready_tasks(f->st, d, false, 1, task_seen3, &r), JF_OK);
	assert_int_equal(r.n, 1);
	/* unsubmitted: task 0 belongs to a submission */
	assert_int_equal(jf_task_set_sub(f->st, task_id(f->st, d, 0), 9), JF_OK);
	r.n = 0;
	assert_int_equal(jf_dep_ready_tasks(f->st, d, true, 10, task_seen3, &r), JF_OK);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.idx[0], 2);
	/* only Waiting tasks of d: task 2 running is not ready any more */
	set_task(f->st, d, 2, JF_ST_RUNNING);
	r.n = 0;
	assert_int_equal(jf_dep_ready_tasks(f->st, d, true, 10, task_seen3, &r), JF_OK);
	assert_int_equal(r.n, 0);
	/* the pairs that can never hold: task 1 (its pair failed); task 3's
	 * pair runs; a Paused task counts too */
	r.n = 0;
	assert_int_equal(jf_dep_unready_tasks(f->st, d, a, 1u << 5, 10, task_seen, &r), JF_OK);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.idx[0], 1);
	set_task(f->st, d, 1, JF_ST_PAUSED);
	set_task(f->st, a, 3, JF_ST_STOPPED);
	r.n = 0;
	assert_int_equal(jf_dep_unready_tasks(f->st, d, a, 1u << 5, 10, task_seen, &r), JF_OK);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.idx[1], 3);
	/* finished: a Stopped pair satisfies it */
	r.n = 0;
	assert_int_equal(jf_dep_unready_tasks(f->st, d, a, 7u << 5, 10, task_seen, &r), JF_OK);
	assert_int_equal(r.n, 0);
	/* a removed target (0): every pair is gone */
	r.n = 0;
	assert_int_equal(jf_dep_unready_tasks(f->st, d, 0, 1u << 5, 10, task_seen, &r), JF_OK);
	assert_int_equal(r.n, 3); /* 0 (in a submission), 1, 3; 2 runs */

	/* waiting on a target; a rename shows in the path */
	l.n = 0;
	assert_int_equal(jf_dep_waiting_on(f->st, b, dep_seen, &l), JF_OK);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.r[0].group_id, d);
	assert_int_equal(jf_group_rename(f->st, b, "b2"), JF_OK);
	l.n = 0;
	jf_dep_list(f->st, d, dep_seen, &l);
	assert_string_equal(l.r[1].path, "queues/q/groups/b2");
	/* the stale rows: waiting, of an active group, on a target that ended */
	l.n = 0;
	assert_int_equal(jf_dep_stale(f->st, dep_seen, &l), JF_OK);
	assert_int_equal(l.n, 0);
	assert_int_equal(jf_group_set_state(f->st, a, JF_ST_FAILED, "", T0 + 9), JF_OK);
	assert_int_equal(jf_dep_stale(f->st, dep_seen, &l), JF_OK);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.r[0].target_id, a);
	assert_int_equal(l.r[0].target_finished_ms, T0 + 9);
	/* decided: it holds (each: the target ended) */
	assert_int_equal(jf_dep_set_state(f->st, l.r[0].id, 1), JF_OK);
	assert_int_equal(jf_dep_each_waiting(f->st, &n), JF_OK);
	assert_int_equal(n, 0);
	/* removed: the row keeps where it was, and has no target */
	assert_int_equal(jf_dep_target_gone(f->st, b, "queues/q/groups/b2"), JF_OK);
	assert_int_equal(jf_group_delete(f->st, b), JF_OK);
	l.n = 0;
	jf_dep_list(f->st, d, dep_seen, &l);
	assert_int_equal(l.r[1].target_id, 0);
	assert_int_equal(l.r[1].target_state, -1);
	assert_string_equal(l.r[1].path, "queues/q/groups/b2");
	assert_int_equal(jf_dep_targets(f->st, d, t, 4, &nt), JF_OK);
	assert_int_equal(nt, 2);
	l.n = 0;
	assert_int_equal(jf_dep_stale(f->st, dep_seen, &l), JF_OK);
	assert_int_equal(l.n, 1); /* the removed target's row still waits */
	assert_int_equal(l.r[0].target_id, 0);
	/* a target removed without being told (the foreign key) */
	assert_int_equal(jf_group_delete(f->st, x), JF_OK);
	l.n = 0;
	jf_dep_list(f->st, d, dep_seen, &l);
	assert_int_equal(l.r[2].target_id, 0);
	assert_string_equal(l.r[2].path, "tasks/x");
	/* the group's rows go with it */
	assert_int_equal(jf_dep_clear(f->st, d), JF_OK);
	assert_int_equal(jf_dep_summary(f->st, d, &sum), JF_OK);
	assert_int_equal(sum.all, 0);
	assert_int_equal(jf_dep_add(f->st, d, 0, a, "queues/q/groups/a", 0, false, 1u << 5, 0),
			 JF_OK);
	assert_int_equal(jf_group_delete(f->st, d), JF_OK);
	assert_int_equal(sql_int(f->db, "SELECT count(*) FROM deps"), 0);
}

/* each pairs with rows not made yet (store.h: JF_TASKS_CHUNK): a pair in
 * the target's unmade rows is read in the state they will be made with */
static void test_deps_unmade(void **state)
{
	struct fix *f = *state;
	jf_store_set_tasks_chunk(f->st, 2);
	int64_t q = mkqueue(f->st, "q");
	int64_t a = mkgroup(f->st, q, JF_KIND_GROUP, "a");
	int64_t d = mkgroup(f->st, q, JF_KIND_GROUP, "d");
	accept(f->st, a, 5, 5); /* rows 0, 1 made; 2..4 not */
	accept(f->st, d, 5, 5);
	int64_t left = 0;
	assert_int_equal(jf_group_make_tasks(f->st, d, 10, &left), JF_OK);
	assert_int_equal(left, 0);
	assert_int_equal(jf_dep_add(f->st, d, 0, a, "queues/q/groups/a", 2, true, 7u << 5, 0),
			 JF_OK);
	struct ids r = { .n = 0 };
	assert_int_equal(jf_dep_unready_tasks(f->st, d, a, 7u << 5, 10, task_seen, &r), JF_OK);
	assert_int_equal(r.n, 0);
	/* the whole target stopped: its unmade rows will be made Stopped */
	int64_t changed = 0;
	assert_int_equal(jf_task_set_state_all(f->st, a, 1u << JF_ST_WAITING, JF_ST_STOPPED, "",
					       T0 + 3, &changed),
			 JF_OK);
	assert_int_equal(jf_dep_ready_tasks(f->st, d, false, 10, task_seen3, &r), JF_OK);
	assert_int_equal(r.n, 5);
	assert_int_equal(r.idx[4], 4);
	r.n = 0;
	assert_int_equal(jf_dep_unready_tasks(f->st, d, a, 1u << 5, 10, task_seen, &r), JF_OK);
	assert_int_equal(r.n, 5);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_open_schema),
		T(test_reopen),
		T(test_migrate_1_to_5),
		T(test_migrate_4_to_5),
		T(test_demand),
		T(test_newer_schema_refused),
		T(test_queues),
		T(test_reader),
		T(test_groups),
		T(test_reject_accept),
		T(test_clear_draft_counts),
		T(test_trash),
		T(test_node_images),
		T(test_stores),
		T(test_group_states),
		T(test_tasks),
		T(test_nodes_attempts),
		T(test_attempts_kept),
		T(test_events),
		T(test_events_many),
		T(test_ledger),
		T(test_ledger_segments),
		T(test_ledger_saturate),
		T(test_ledger_memo),
		T(test_ledger_view),
		T(test_count_memo),
		T(test_txn_failed_statement),
		T(test_txn_commit_rollback),
		T(test_txn_accept_nested),
		T(test_submissions),
		T(test_migrate_6_to_7),
		T(test_budget_segs),
		T(test_migrate_7_to_8),
		T(test_migrate_8_to_9),
		T(test_migrate_9_to_10),
		T(test_make_tasks),
		T(test_make_tasks_moves),
		T(test_make_tasks_rollback),
		T(test_deps),
		T(test_task_counts),
		T(test_deps_unmade),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
