/*
 * store_ledger.c - the billing ledger.
 *
 * A segment opens (a row with end_ms 0) when a node's processes start and
 * closes when they end; closing computes seconds and the amount with
 * core/billing.c's rule and gives the row its place (closed_seq) in the
 * append-only ledger.csv.  Rows are never updated after closing and never
 * deleted, also not when their group is removed.
 */
#include "store/store_int.h"

#include <string.h>

#include "core/billing.h"

enum jf_err jf_ledger_open(struct jf_store *st, const struct jf_ledger_rec *r, int64_t *id)
{
	sqlite3_stmt *s = jf_q(st, Q_LEDGER_OPEN);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, r->queue_id);
	sqlite3_bind_int64(s, 2, r->group_id);
	sqlite3_bind_int64(s, 3, r->task_id);
	sqlite3_bind_int64(s, 4, r->node_id);
	sqlite3_bind_int64(s, 5, r->attempt_id);
	jf_q_text(s, 6, r->queue);
	jf_q_text(s, 7, r->group);
	sqlite3_bind_int64(s, 8, r->task_idx);
	sqlite3_bind_int64(s, 9, r->node_idx);
	sqlite3_bind_int64(s, 10, r->attempt);
	jf_q_text(s, 11, r->billing);
	jf_q_text(s, 12, r->gpu);
	sqlite3_bind_int64(s, 13, r->gpus);
	sqlite3_bind_int64(s, 14, r->start_ms);
	sqlite3_bind_int64(s, 15, r->rate);
	enum jf_err rc = jf_q_exec(st, s);
	if (!rc && id)
		*id = sqlite3_last_insert_rowid(st->db);
	return rc;
}

enum jf_err jf_ledger_close(struct jf_store *st, int64_t attempt_id, int64_t end_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_LEDGER_GET_OPEN);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, attempt_id);
	if (sqlite3_step(s) != SQLITE_ROW) {
		sqlite3_reset(s);
		return JF_ENOENT;  /* already closed, or never opened */
	}
	int64_t id = sqlite3_column_int64(s, 0);
	int64_t start_ms = sqlite3_column_int64(s, 1);
	int64_t rate = sqlite3_column_int64(s, 2);
	sqlite3_reset(s);
	if (end_ms < start_ms)
		end_ms = start_ms;
	int64_t seconds = jf_bill_seconds(start_ms, end_ms);
	s = jf_q(st, Q_LEDGER_CLOSE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, end_ms > 0 ? end_ms : 1);
	sqlite3_bind_int64(s, 3, seconds);
	sqlite3_bind_int64(s, 4, jf_bill_amount(seconds, rate));
	return jf_q_exec(st, s);
}

enum jf_err jf_ledger_sum(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t now_ms,
			  int64_t *amount, int64_t *seconds)
{
	static const enum jf_q closed[] = {
		[JF_SCOPE_ALL] = Q_LEDGER_SUM_ALL, [JF_SCOPE_QUEUE] = Q_LEDGER_SUM_QUEUE,
		[JF_SCOPE_GROUP] = Q_LEDGER_SUM_GROUP, [JF_SCOPE_TASK] = Q_LEDGER_SUM_TASK,
		[JF_SCOPE_NODE] = Q_LEDGER_SUM_NODE,
	};
	static const enum jf_q open[] = {
		[JF_SCOPE_ALL] = Q_LEDGER_OPEN_ALL, [JF_SCOPE_QUEUE] = Q_LEDGER_OPEN_QUEUE,
		[JF_SCOPE_GROUP] = Q_LEDGER_OPEN_GROUP, [JF_SCOPE_TASK] = Q_LEDGER_OPEN_TASK,
		[JF_SCOPE_NODE] = Q_LEDGER_OPEN_NODE,
	};
	*amount = *seconds = 0;
	sqlite3_stmt *s = jf_q(st, closed[scope]);
	if (!s)
		return JF_EIO;
	if (scope != JF_SCOPE_ALL)
		sqlite3_bind_int64(s, 1, id);
	if (sqlite3_step(s) == SQLITE_ROW) {
		*amount = sqlite3_column_int64(s, 0);
		*seconds = sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	s = jf_q(st, open[scope]);
	if (!s)
		return JF_EIO;
	if (scope != JF_SCOPE_ALL)
		sqlite3_bind_int64(s, 1, id);
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t secs = jf_bill_seconds(sqlite3_column_int64(s, 0), now_ms);
		*seconds += secs;
		*amount += jf_bill_amount(secs, sqlite3_column_int64(s, 1));
	}
	sqlite3_reset(s);
	return JF_OK;
}

enum jf_err jf_ledger_list(struct jf_store *st, int64_t after, int limit,
			   int (*fn)(void *ctx, const struct jf_ledger_rec *r), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_LEDGER_LIST);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, after);
	sqlite3_bind_int(s, 2, limit);
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct jf_ledger_rec r;
		memset(&r, 0, sizeof(r));
		r.id = sqlite3_column_int64(s, 0);
		r.queue_id = sqlite3_column_int64(s, 1);
		r.group_id = sqlite3_column_int64(s, 2);
		r.task_id = sqlite3_column_int64(s, 3);
		r.node_id = sqlite3_column_int64(s, 4);
		r.attempt_id = sqlite3_column_int64(s, 5);
		jf_q_copy(s, 6, r.queue, sizeof(r.queue));
		jf_q_copy(s, 7, r.group, sizeof(r.group));
		r.task_idx = sqlite3_column_int64(s, 8);
		r.node_idx = sqlite3_column_int64(s, 9);
		r.attempt = sqlite3_column_int64(s, 10);
		jf_q_copy(s, 11, r.billing, sizeof(r.billing));
		jf_q_copy(s, 12, r.gpu, sizeof(r.gpu));
		r.gpus = sqlite3_column_int64(s, 13);
		r.start_ms = sqlite3_column_int64(s, 14);
		r.end_ms = sqlite3_column_int64(s, 15);
		r.seconds = sqlite3_column_int64(s, 16);
		r.rate = sqlite3_column_int64(s, 17);
		r.amount = sqlite3_column_int64(s, 18);
		r.seq = sqlite3_column_int64(s, 19);
		if (fn(ctx, &r))
			break;
	}
	sqlite3_reset(s);
	return JF_OK;
}

enum jf_err jf_ledger_totals(struct jf_store *st, const char *by,
			     int (*fn)(void *ctx, const char *key, int64_t amount,
				       int64_t seconds), void *ctx)
{
	enum jf_q q;
	if (strcmp(by, "queue") == 0)
		q = Q_LEDGER_BY_QUEUE;
	else if (strcmp(by, "group") == 0)
		q = Q_LEDGER_BY_GROUP;
	else if (strcmp(by, "billing") == 0)
		q = Q_LEDGER_BY_BILLING;
	else if (strcmp(by, "gpu") == 0)
		q = Q_LEDGER_BY_GPU;
	else
		return JF_EINVAL;
	sqlite3_stmt *s = jf_q(st, q);
	if (!s)
		return JF_EIO;
	while (sqlite3_step(s) == SQLITE_ROW)
		if (fn(ctx, (const char *)sqlite3_column_text(s, 0), sqlite3_column_int64(s, 1),
		       sqlite3_column_int64(s, 2)))
			break;
	sqlite3_reset(s);
	return JF_OK;
}

enum jf_err jf_demand_add(struct jf_store *st, const char *model, int64_t t_ms, int64_t gpus)
{
	sqlite3_stmt *s = jf_q(st, Q_DEMAND_ADD);
	if (!s)
		return JF_EIO;
	jf_q_text(s, 1, model);
	sqlite3_bind_int64(s, 2, t_ms);
	sqlite3_bind_int64(s, 3, gpus);
	return jf_q_exec(st, s);
}

enum jf_err jf_demand_list(struct jf_store *st, const char *model,
			   int (*fn)(void *ctx, int64_t t_ms, int64_t gpus), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_DEMAND_LIST);
	if (!s)
		return JF_EIO;
	jf_q_text(s, 1, model);
	while (sqlite3_step(s) == SQLITE_ROW)
		if (fn(ctx, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)))
			break;
	sqlite3_reset(s);
	return JF_OK;
}
