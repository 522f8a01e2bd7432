/*
 * store_counts.c - how many tasks of a group, or of a queue's groups, are
 * in each state.
 *
 * Every status of a group or a queue shows these counts, and every
 * scheduling pass needs them for each active group.  The rows' counts are
 * kept in task_counts by triggers (migration 17), in the transaction that
 * changes a task, so counting a group is a few rows whatever its size and
 * a queue's a few rows per group, on every connection: the readers' too,
 * whose memos below are forgotten at every commit of the engine (counted
 * from the task rows, that was a scan of a million-task group after every
 * commit: 45% of the daemon's time under `jobfsctl top`).  Tasks whose
 * rows are not made yet count in the state they will be made with
 * (groups.unmade), so making them (jf_group_make_tasks) changes no count.
 *
 * On top, the store remembers the counts last made for a few hundred
 * groups and a few queues (count_memo, store_int.h) and moves them with
 * every task state it writes: a task's old state is read before
 * jf_task_set_state changes it.  A write that changes many tasks at once
 * (jf_task_set_state_all, a reset, an acceptance, a delete) forgets its
 * group's and its queue's counts instead.  Like the ledger memos they are
 * forgotten at a rollback and when another connection changed the
 * database (jf_memos_check).
 *
 * What holds: a valid memo equals what the query would return on this
 * connection now, inside a transaction too.
 */
#include "store/store_int.h"

#include <string.h>

static struct count_memo *group_slot(struct jf_store *st, int64_t id)
{
	return &st->count_group[(uint64_t)id % JF_COUNT_GROUPS];
}

static struct count_memo *queue_slot(struct jf_store *st, int64_t queue_id, int kind)
{
	return &st->count_queue[((uint64_t)queue_id * 2 + (uint64_t)kind) % JF_COUNT_QUEUES];
}

static struct count_memo *group_memo(struct jf_store *st, int64_t id)
{
	struct count_memo *m = group_slot(st, id);
	return m->valid && m->id == id ? m : NULL;
}

static struct count_memo *queue_memo(struct jf_store *st, int64_t queue_id, int kind)
{
	struct count_memo *m = queue_slot(st, queue_id, kind);
	return m->valid && m->id == queue_id && m->kind == kind ? m : NULL;
}

void jf_counts_forget(struct jf_store *st)
{
	for (int i = 0; i < JF_COUNT_GROUPS; i++)
		st->count_group[i].valid = false;
	for (int i = 0; i < JF_COUNT_QUEUES; i++)
		st->count_queue[i].valid = false;
}

/* The queue (0: none) and kind of group id; false if there is no such group. */
static bool group_place(struct jf_store *st, int64_t id, int64_t *queue_id, int *kind)
{
	struct count_memo *m = group_memo(st, id);
	if (m) {
		*queue_id = m->queue_id;
		*kind = m->gkind;
		return true;
	}
	sqlite3_stmt *s = jf_q(st, Q_GROUP_PLACE);
	if (!s)
		return false;
	sqlite3_bind_int64(s, 1, id);
	bool ok = sqlite3_step(s) == SQLITE_ROW;
	if (ok) {
		*queue_id = sqlite3_column_int64(s, 0);
		*kind = sqlite3_column_int(s, 1);
	}
	sqlite3_reset(s);
	return ok;
}

/* A state may come twice: once for the rows, once for the tasks not made
 * yet (the second half of Q_GROUP_COUNT and Q_QUEUE_COUNT). */
static enum jf_err count_rows(sqlite3_stmt *s, int64_t *counts)
{
	for (int i = 0; i < JF_ST__COUNT; i++)
		counts[i] = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int state = sqlite3_column_int(s, 0);
		if (state >= 0 && state < JF_ST__COUNT)
			counts[state] += sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

enum jf_err jf_group_count_tasks(struct jf_store *st, int64_t id, int64_t *counts)
{
	jf_memos_check(st);
	struct count_memo *m = group_memo(st, id);
	if (m) {
		memcpy(counts, m->c, sizeof(m->c));
		return JF_OK;
	}
	sqlite3_stmt *s = jf_q(st, Q_GROUP_COUNT);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	enum jf_err rc = count_rows(s, counts);
	int64_t queue_id = 0;
	int kind = 0;
	if (rc == JF_OK && group_place(st, id, &queue_id, &kind)) {
		m = group_slot(st, id);
		m->valid = true;
		m->id = id;
		m->queue_id = queue_id;
		m->gkind = kind;
		memcpy(m->c, counts, sizeof(m->c));
	}
	return rc;
}

enum jf_err jf_queue_count_tasks(struct jf_store *st, int64_t queue_id, enum jf_group_kind kind,
				 int64_t *counts)
{
	jf_memos_check(st);
	struct count_memo *m = queue_memo(st, queue_id, (int)kind);
	if (m) {
		memcpy(counts, m->c, sizeof(m->c));
		return JF_OK;
	}
	sqlite3_stmt *s = jf_q(st, Q_QUEUE_COUNT);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, queue_id);
	sqlite3_bind_int(s, 2, kind);
	enum jf_err rc = count_rows(s, counts);
	if (rc == JF_OK) {
		m = queue_slot(st, queue_id, (int)kind);
		m->valid = true;
		m->id = queue_id;
		m->kind = (int)kind;
		memcpy(m->c, counts, sizeof(m->c));
	}
	return rc;
}

bool jf_counts_before(struct jf_store *st, int64_t task_id, int64_t *group_id, int *state)
{
	sqlite3_stmt *s = jf_q(st, Q_TASK_PLACE);
	if (!s)
		return false;
	sqlite3_bind_int64(s, 1, task_id);
	bool ok = sqlite3_step(s) == SQLITE_ROW;
	if (ok) {
		*group_id = sqlite3_column_int64(s, 0);
		*state = sqlite3_column_int(s, 1);
	}
	sqlite3_reset(s);
	return ok;
}

void jf_counts_moved(struct jf_store *st, int64_t group_id, int from, int to)
{
	if (from == to)
		return;
	if (from < 0 || from >= JF_ST__COUNT || to < 0 || to >= JF_ST__COUNT) {
		jf_counts_group_changed(st, group_id);
		return;
	}
	int64_t queue_id = 0;
	int kind = 0;
	if (!group_place(st, group_id, &queue_id, &kind)) {
		jf_counts_forget(st);
		return;
	}
	struct count_memo *ms[2] = { group_memo(st, group_id), queue_memo(st, queue_id, kind) };
	for (int i = 0; i < 2; i++) {
		if (!ms[i])
			continue;
		ms[i]->c[from]--;
		ms[i]->c[to]++;
	}
}

void jf_counts_group_changed(struct jf_store *st, int64_t group_id)
{
	int64_t queue_id = 0;
	int kind = 0;
	if (!group_place(st, group_id, &queue_id, &kind)) {
		jf_counts_forget(st);
		return;
	}
	struct count_memo *m = group_memo(st, group_id);
	if (m)
		m->valid = false;
	m = queue_memo(st, queue_id, kind);
	if (m)
		m->valid = false;
}

enum jf_err jf_group_durations(struct jf_store *st, int64_t id, int64_t *n, int64_t *sum_ms)
{
	*n = *sum_ms = 0;
	sqlite3_stmt *s = jf_q(st, Q_GROUP_DURATIONS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*n = sqlite3_column_int64(s, 0);
		double sum = sqlite3_column_double(s, 1);
		*sum_ms = sum > 0 && sum < 9e18 ? (int64_t)sum : 0;
	}
	sqlite3_reset(s);
	return rc == SQLITE_ROW ? JF_OK : JF_EIO;
}

enum jf_err jf_task_waiting_before(struct jf_store *st, int64_t id, int64_t idx, int64_t *n)
{
	*n = 0;
	sqlite3_stmt *s = jf_q(st, Q_TASK_WAITING_BEFORE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, idx);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*n = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	return rc == SQLITE_ROW ? JF_OK : JF_EIO;
}
