/*
 * store_schema.c - the schema and its migrations.
 *
 * migrations[i] takes a database from user_version i to i+1; each runs in
 * its own transaction together with the version bump, so a crash leaves
 * the database at one version or the next, never between.  Add a
 * migration at the end; never edit one that has shipped.
 */
#include "store/store_int.h"

#include <stdio.h>

static const char *const migrations[] = {
	/* 0 -> 1: the first schema */
	"CREATE TABLE queues ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  name TEXT NOT NULL UNIQUE,"
	"  spec TEXT NOT NULL DEFAULT '',"
	"  capacity INTEGER NOT NULL DEFAULT 0,"
	"  group_timeout INTEGER NOT NULL DEFAULT 0,"
	"  created_ms INTEGER NOT NULL,"
	"  uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
	"  events_bytes INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE groups ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  queue_id INTEGER REFERENCES queues(id) ON DELETE RESTRICT,"
	"  kind INTEGER NOT NULL,"
	"  dirname TEXT NOT NULL,"
	"  display TEXT NOT NULL,"
	"  state INTEGER NOT NULL,"
	"  message TEXT NOT NULL DEFAULT '',"
	"  spec TEXT, draft TEXT, ignored TEXT NOT NULL DEFAULT '', jobname TEXT NOT NULL DEFAULT "
	"'',"
	"  created_ms INTEGER NOT NULL, submitted_ms INTEGER NOT NULL DEFAULT 0,"
	"  started_ms INTEGER NOT NULL DEFAULT 0, finished_ms INTEGER NOT NULL DEFAULT 0,"
	"  uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
	"  seq INTEGER NOT NULL DEFAULT 0,"
	"  completions INTEGER NOT NULL DEFAULT 0, parallelism INTEGER NOT NULL DEFAULT 0,"
	"  nodes INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,"
	"  events_bytes INTEGER NOT NULL DEFAULT 0);"
	"CREATE UNIQUE INDEX groups_dir ON groups(ifnull(queue_id, 0), kind, dirname);"
	"CREATE INDEX groups_active ON groups(state, seq);"
	"CREATE TABLE tasks ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,"
	"  idx INTEGER NOT NULL,"
	"  state INTEGER NOT NULL,"
	"  message TEXT NOT NULL DEFAULT '',"
	"  display TEXT,"
	"  attempt INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,"
	"  started_ms INTEGER NOT NULL DEFAULT 0, finished_ms INTEGER NOT NULL DEFAULT 0,"
	"  events_bytes INTEGER NOT NULL DEFAULT 0,"
	"  UNIQUE(group_id, idx));"
	"CREATE INDEX tasks_state ON tasks(group_id, state, idx);"
	"CREATE TABLE nodes ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  task_id INTEGER NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,"
	"  idx INTEGER NOT NULL,"
	"  state INTEGER NOT NULL,"
	"  message TEXT NOT NULL DEFAULT '',"
	"  machine TEXT NOT NULL DEFAULT '', gpu_ids TEXT NOT NULL DEFAULT '',"
	"  pid INTEGER NOT NULL DEFAULT 0, exit_code INTEGER NOT NULL DEFAULT -1,"
	"  attempt INTEGER NOT NULL DEFAULT 0, attempt_id INTEGER NOT NULL DEFAULT 0,"
	"  started_ms INTEGER NOT NULL DEFAULT 0, finished_ms INTEGER NOT NULL DEFAULT 0,"
	"  events_bytes INTEGER NOT NULL DEFAULT 0,"
	"  UNIQUE(task_id, idx));"
	"CREATE INDEX nodes_state ON nodes(state);"
	"CREATE TABLE attempts ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,"
	"  attempt INTEGER NOT NULL,"
	"  handle TEXT NOT NULL DEFAULT '', run_dir TEXT NOT NULL,"
	"  machine TEXT NOT NULL DEFAULT '', gpu_ids TEXT NOT NULL DEFAULT '',"
	"  cpu_milli INTEGER NOT NULL DEFAULT 0,"
	"  pid INTEGER NOT NULL DEFAULT 0,"
	"  start_ms INTEGER NOT NULL DEFAULT 0, end_ms INTEGER NOT NULL DEFAULT 0,"
	"  exit_code INTEGER NOT NULL DEFAULT -1, reason TEXT NOT NULL DEFAULT '',"
	"  UNIQUE(node_id, attempt));"
	"CREATE INDEX attempts_open ON attempts(end_ms) WHERE end_ms = 0;"
	"CREATE TABLE events ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  queue_id INTEGER, group_id INTEGER, task_id INTEGER, node_id INTEGER,"
	"  queue_off INTEGER, group_off INTEGER, task_off INTEGER, node_off INTEGER,"
	"  len INTEGER NOT NULL, line TEXT NOT NULL);"
	"CREATE INDEX events_queue ON events(queue_id, queue_off) WHERE queue_off IS NOT NULL;"
	"CREATE INDEX events_group ON events(group_id, group_off) WHERE group_off IS NOT NULL;"
	"CREATE INDEX events_task ON events(task_id, task_off) WHERE task_off IS NOT NULL;"
	"CREATE INDEX events_node ON events(node_id, node_off) WHERE node_off IS NOT NULL;"
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
	"CREATE UNIQUE INDEX ledger_closed ON ledger(closed_seq) WHERE closed_seq IS NOT NULL;"
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
	/* 1 -> 2: renamed task directories are found by their new name */
	"CREATE UNIQUE INDEX tasks_display ON tasks(group_id, display) WHERE display IS NOT NULL;",
	/* 2 -> 3: cores pinned for cpu_exclusive, per attempt */
	"ALTER TABLE attempts ADD COLUMN cpuset TEXT NOT NULL DEFAULT '';",
	/* 3 -> 4: on-demand GPUs in use per model over time, for the spot forecast */
	"CREATE TABLE demand (id INTEGER PRIMARY KEY, model TEXT NOT NULL,"
	"  t_ms INTEGER NOT NULL, gpus INTEGER NOT NULL);"
	"CREATE INDEX demand_model ON demand(model, t_ms);",
	/* 4 -> 5: several segments per attempt (closed when the daemon stops,
	 * a new one when it adopts the process again), at most one open.
	 * SQLite cannot drop the UNIQUE on attempt_id, so the table is rebuilt
	 * with every row as it was (id, closed_seq included); the AUTOINCREMENT
	 * counter moves to the new table before the old one is dropped, so new
	 * ids continue after every id ever handed out. */
	"CREATE TABLE ledger_new ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  queue_id INTEGER NOT NULL, group_id INTEGER NOT NULL, task_id INTEGER NOT NULL,"
	"  node_id INTEGER NOT NULL, attempt_id INTEGER NOT NULL,"
	"  queue TEXT NOT NULL, grp TEXT NOT NULL,"
	"  task_idx INTEGER NOT NULL, node_idx INTEGER NOT NULL, attempt INTEGER NOT NULL,"
	"  billing TEXT NOT NULL, gpu TEXT NOT NULL, gpus INTEGER NOT NULL,"
	"  start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL DEFAULT 0,"
	"  seconds INTEGER NOT NULL DEFAULT 0, rate INTEGER NOT NULL,"
	"  amount INTEGER NOT NULL DEFAULT 0,"
	"  closed_seq INTEGER);"
	"INSERT INTO ledger_new(id, queue_id, group_id, task_id, node_id, attempt_id, queue, grp,"
	"  task_idx, node_idx, attempt, billing, gpu, gpus, start_ms, end_ms, seconds, rate,"
	"  amount, closed_seq)"
	" SELECT id, queue_id, group_id, task_id, node_id, attempt_id, queue, grp,"
	"  task_idx, node_idx, attempt, billing, gpu, gpus, start_ms, end_ms, seconds, rate,"
	"  amount, closed_seq FROM ledger ORDER BY id;"
	"DELETE FROM sqlite_sequence WHERE name = 'ledger_new';"
	"UPDATE sqlite_sequence SET name = 'ledger_new' WHERE name = 'ledger';"
	"DROP TABLE ledger;"
	"ALTER TABLE ledger_new RENAME TO ledger;"
	"CREATE INDEX ledger_group ON ledger(group_id);"
	"CREATE INDEX ledger_queue ON ledger(queue_id);"
	"CREATE INDEX ledger_task ON ledger(task_id);"
	"CREATE INDEX ledger_node ON ledger(node_id);"
	"CREATE INDEX ledger_attempt ON ledger(attempt_id);"
	"CREATE INDEX ledger_open ON ledger(end_ms) WHERE end_ms = 0;"
	"CREATE UNIQUE INDEX ledger_open_attempt ON ledger(attempt_id) WHERE end_ms = 0;"
	"CREATE UNIQUE INDEX ledger_closed ON ledger(closed_seq) WHERE closed_seq IS NOT NULL;",
	/* 5 -> 6: the outbox of a scheduling backend (slurm): every batch of a
	 * group's tasks handed to it, and which batch each task belongs to now */
	"CREATE TABLE submissions ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,"
	"  state INTEGER NOT NULL DEFAULT 0,"
	"  first_idx INTEGER NOT NULL, count INTEGER NOT NULL,"
	"  throttle INTEGER NOT NULL DEFAULT 0, attempt_base INTEGER NOT NULL,"
	"  job_id INTEGER NOT NULL DEFAULT 0, tries INTEGER NOT NULL DEFAULT 0,"
	"  created_ms INTEGER NOT NULL, message TEXT NOT NULL DEFAULT '');"
	"CREATE INDEX submissions_group ON submissions(group_id, state);"
	"ALTER TABLE tasks ADD COLUMN sub_id INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX tasks_sub ON tasks(sub_id) WHERE sub_id != 0;",
	/* 6 -> 7: a preemption's deadline, so that a restarted daemon keeps it */
	"ALTER TABLE attempts ADD COLUMN kill_at_ms INTEGER NOT NULL DEFAULT 0;",
	/* 7 -> 8: typed flags where a message text stood for one: an attempt
	 * being preempted, a group waiting for a low-risk window (the texts
	 * those databases hold say which) */
	"ALTER TABLE attempts ADD COLUMN preempting INTEGER NOT NULL DEFAULT 0;"
	"UPDATE attempts SET preempting = 1 WHERE end_ms = 0 AND node_id IN "
	"  (SELECT id FROM nodes WHERE message = 'preempting: on-demand work needs the GPUs');"
	"ALTER TABLE groups ADD COLUMN flags INTEGER NOT NULL DEFAULT 0;"
	"UPDATE groups SET flags = 1 WHERE message = 'waiting for a low-risk window';",
	/* 8 -> 9: a big group's task rows are made a chunk at a time after
	 * its acceptance, so that one submission does not hold the daemon
	 * for seconds (store_tasks.c: jf_group_make_tasks).  unmade: how
	 * many of its rows, the highest indexes, are not made yet; the
	 * state, message and finish time they will be made with move as the
	 * made rows' do (a stop, a restart), so they count as tasks in that
	 * state meanwhile.  Every group of an older database has all its
	 * rows. */
	"ALTER TABLE groups ADD COLUMN unmade INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE groups ADD COLUMN unmade_state INTEGER NOT NULL DEFAULT 2;"
	"ALTER TABLE groups ADD COLUMN unmade_message TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE groups ADD COLUMN unmade_ms INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX groups_unmade ON groups(seq, id) WHERE unmade > 0;",
	/* 9 -> 10: why the queue's last spec.yaml was refused ('' once one is
	 * accepted), shown in its status as a group shows its own */
	"ALTER TABLE queues ADD COLUMN message TEXT NOT NULL DEFAULT '';",
	/* 10 -> 11: what is to go from the state directory (an ended
	 * attempt's records, a removed group's run and checkpoint
	 * directories), written in the step that decides it, removed after;
	 * and when a finished group's logs went by the retention setting */
	"CREATE TABLE trash (id INTEGER PRIMARY KEY, kind INTEGER NOT NULL,"
	"  path TEXT NOT NULL);"
	"ALTER TABLE groups ADD COLUMN logs_freed_ms INTEGER NOT NULL DEFAULT 0;",
	/* 11 -> 12: what a node ran (reference 8.1): its runtime (oci, host),
	 * its images (its containers' canonical references, comma-joined)
	 * and their digests, why it ended in Kubernetes' words, and the URLs
	 * its ports are reached at (space-joined) */
	"ALTER TABLE nodes ADD COLUMN runtime TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE nodes ADD COLUMN images TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE nodes ADD COLUMN image_digest TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE nodes ADD COLUMN reason TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE nodes ADD COLUMN endpoints TEXT NOT NULL DEFAULT '';",
	/* 12 -> 13: storage (reference 8.3): shared volumes and object-store
	 * sources, one row each (kind 1, 2), their spec as written, their
	 * state and figures (info: a JSON object of the kind's own), their
	 * events; and which running node mounts which (store_use), so that
	 * `used_by` and rmdir's EBUSY are one query */
	"CREATE TABLE stores ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  kind INTEGER NOT NULL, name TEXT NOT NULL,"
	"  spec TEXT NOT NULL DEFAULT '',"
	"  uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
	"  created_ms INTEGER NOT NULL, changed_ms INTEGER NOT NULL,"
	"  state INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',"
	"  info TEXT NOT NULL DEFAULT '',"
	"  events_bytes INTEGER NOT NULL DEFAULT 0,"
	"  UNIQUE(kind, name));"
	"CREATE TABLE store_use (store_id INTEGER NOT NULL REFERENCES stores(id) ON DELETE CASCADE,"
	"  node_id INTEGER NOT NULL, path TEXT NOT NULL, since_ms INTEGER NOT NULL,"
	"  PRIMARY KEY(store_id, node_id));"
	"CREATE INDEX store_use_node ON store_use(node_id);"
	"ALTER TABLE events ADD COLUMN store_id INTEGER;"
	"ALTER TABLE events ADD COLUMN store_off INTEGER;"
	"CREATE INDEX events_store ON events(store_id, store_off) WHERE store_off IS NOT NULL;",
	/* 13 -> 14: every attempt kept (reference 9.2): when its row was made
	 * (a node's attempts/ lists it from then), the state it ended in and
	 * the Kubernetes word for why (-1 and '' until it ends), and what it
	 * ran: its node's runtime, images and first image digest, which the
	 * node's next attempt overwrites there.  An older database's rows get
	 * what is known: made when started, and for each node's last attempt
	 * what its node says (an ended one's state if it is an end: 5
	 * Succeeded, 6 Failed, 7 Stopped, 8 Paused, 9 Preempted); other ended
	 * attempts keep -1, and show what their exit code says. */
	"ALTER TABLE attempts ADD COLUMN created_ms INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE attempts ADD COLUMN end_state INTEGER NOT NULL DEFAULT -1;"
	"ALTER TABLE attempts ADD COLUMN end_reason TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE attempts ADD COLUMN runtime TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE attempts ADD COLUMN images TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE attempts ADD COLUMN image_digest TEXT NOT NULL DEFAULT '';"
	"UPDATE attempts SET created_ms = start_ms;"
	"UPDATE attempts SET (runtime, images, image_digest, end_reason, end_state) ="
	"  (SELECT n.runtime, n.images, n.image_digest,"
	"    CASE WHEN attempts.end_ms != 0 THEN n.reason ELSE '' END,"
	"    CASE WHEN attempts.end_ms != 0 AND n.state BETWEEN 5 AND 9 THEN n.state ELSE -1 END"
	"   FROM nodes n WHERE n.attempt_id = attempts.id)"
	" WHERE id IN (SELECT attempt_id FROM nodes);",
	/* 14 -> 15: budgets (reference 10): whether the queue's budget is
	 * exhausted as last announced (its BudgetExhausted event written, the
	 * available one not yet), so that a restart does not say it twice;
	 * and the segments of a queue that ended after a time, which a
	 * rolling budget period counts, found without a scan of its ledger */
	"ALTER TABLE queues ADD COLUMN budget_state INTEGER NOT NULL DEFAULT 0;"
	"CREATE INDEX ledger_queue_end ON ledger(queue_id, end_ms);",
	/* 15 -> 16: dependencies (reference 10): each accepted `after:` entry
	 * of a group (pos: its place in the list) resolved to the group it
	 * names (target_id, NULL once that is removed; path: where it was,
	 * kept for the status of a removed target), its condition (when_: 0
	 * succeeded, 1 failed, 2 finished; ok_mask: 1 << each state that
	 * satisfies it; each: task i waits for task i) and what it says
	 * (state: 0 waits, 1 holds, 2 can never hold; once 1 or 2 it stays) */
	"CREATE TABLE deps ("
	"  id INTEGER PRIMARY KEY,"
	"  group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,"
	"  pos INTEGER NOT NULL,"
	"  target_id INTEGER REFERENCES groups(id) ON DELETE SET NULL,"
	"  path TEXT NOT NULL,"
	"  when_ INTEGER NOT NULL, each INTEGER NOT NULL DEFAULT 0,"
	"  ok_mask INTEGER NOT NULL, state INTEGER NOT NULL DEFAULT 0,"
	"  UNIQUE(group_id, pos));"
	"CREATE INDEX deps_target ON deps(target_id) WHERE target_id IS NOT NULL;",
	/* 17: how many of a group's task rows are in each state, kept by
	 * triggers in the transaction that changes a row, so a status (or a
	 * pass) counts a group's tasks in a few rows whatever its size, on
	 * every connection, instead of scanning them after each commit
	 * (store_counts.c).  Rows of a state may stay at n = 0.  A decrement
	 * is a plain UPDATE: a cascade that deletes tasks after their
	 * group's counts went does nothing. */
	"CREATE TABLE task_counts ("
	"  group_id INTEGER NOT NULL, state INTEGER NOT NULL, n INTEGER NOT NULL,"
	"  PRIMARY KEY(group_id, state)) WITHOUT ROWID;"
	"INSERT INTO task_counts SELECT group_id, state, count(*) FROM tasks"
	"  GROUP BY group_id, state;"
	"CREATE TRIGGER task_counts_insert AFTER INSERT ON tasks BEGIN"
	"  INSERT INTO task_counts VALUES (NEW.group_id, NEW.state, 1)"
	"    ON CONFLICT(group_id, state) DO UPDATE SET n = n + 1;"
	"END;"
	"CREATE TRIGGER task_counts_update AFTER UPDATE OF state, group_id ON tasks"
	"  WHEN OLD.state IS NOT NEW.state OR OLD.group_id IS NOT NEW.group_id BEGIN"
	"  UPDATE task_counts SET n = n - 1 WHERE group_id = OLD.group_id AND state = OLD.state;"
	"  INSERT INTO task_counts VALUES (NEW.group_id, NEW.state, 1)"
	"    ON CONFLICT(group_id, state) DO UPDATE SET n = n + 1;"
	"END;"
	"CREATE TRIGGER task_counts_delete AFTER DELETE ON tasks BEGIN"
	"  UPDATE task_counts SET n = n - 1 WHERE group_id = OLD.group_id AND state = OLD.state;"
	"END;"
	"CREATE TRIGGER task_counts_group_gone AFTER DELETE ON groups BEGIN"
	"  DELETE FROM task_counts WHERE group_id = OLD.id;"
	"END;",
};

#define NMIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))
_Static_assert(NMIGRATIONS == JF_STORE_SCHEMA,
	       "JF_STORE_SCHEMA in store.h names the last migration");

static int user_version(sqlite3 *db)
{
	sqlite3_stmt *s;
	int v = -1;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return v;
}

enum jf_err jf_store_migrate(struct jf_store *st, struct jf_error *err)
{
	int v = user_version(st->db);
	if (v < 0)
		return jf_error_set(err, JF_EIO, 0, "cannot read schema version: %s",
				    sqlite3_errmsg(st->db));
	if (v > NMIGRATIONS)
		return jf_error_set(err, JF_EINVAL, 0,
				    "database schema version %d is newer than this jobfs (%d)", v,
				    NMIGRATIONS);
	for (; v < NMIGRATIONS; v++) {
		char bump[64];
		snprintf(bump, sizeof(bump), "PRAGMA user_version = %d", v + 1);
		char *msg = NULL;
		if (sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK ||
		    sqlite3_exec(st->db, migrations[v], NULL, NULL, &msg) != SQLITE_OK ||
		    sqlite3_exec(st->db, bump, NULL, NULL, &msg) != SQLITE_OK ||
		    sqlite3_exec(st->db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
			jf_error_set(err, JF_EIO, 0, "schema migration %d -> %d failed: %s", v,
				     v + 1, msg ? msg : sqlite3_errmsg(st->db));
			sqlite3_free(msg);
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
			return JF_EIO;
		}
	}
	return JF_OK;
}

int jf_store_schema_version(struct jf_store *st)
{
	return user_version(st->db);
}
