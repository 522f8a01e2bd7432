/*
 * store_ledger.c - the billing ledger.
 *
 * A segment opens (a row with end_ms 0) when a node's processes start and
 * closes when they end; closing computes seconds and the amount with
 * core/billing.c's rule and gives the row its place (closed_seq) in the
 * append-only ledger.csv.  Rows are never updated after closing and never
 * deleted, also not when their group is removed.
 *
 * One attempt may have several segments: when the daemon stops cleanly it
 * closes every open segment (jf_ledger_close_all) while the processes run
 * on, and when it adopts a process again it opens the next segment of that
 * attempt where the last one ended (jf_ledger_reopen).  Billed seconds run
 * between floor-second boundaries, so the segments [a,b) and [b,c) bill
 * exactly the seconds of [a,c).  An attempt has at most one open segment
 * (the partial unique index ledger_open_attempt).
 *
 * Totals add with jf_bill_add, in C and in SQL (the aggregate jf_satsum()
 * registered on the connection), so a total past INT64_MAX shows as
 * INT64_MAX instead of failing with "integer overflow".
 *
 * The closed totals of the whole ledger and of a queue (every queue's
 * status shows its cost) are sums over all their rows; the memos
 * (store_int.h) keep the last ones asked for, and each close adds its
 * amount to them, so a status no longer costs a scan of the queue's
 * ledger.  Saturating addition of amounts that are never negative gives
 * the same total in any order.  A rollback forgets them.
 */
#include "store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/billing.h"
#include "core/budget.h"

struct satsum {
	int64_t sum;
	bool any;
};

static void satsum_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	if (sqlite3_value_type(argv[0]) == SQLITE_NULL)
		return; /* as sum(): NULLs are skipped */
	struct satsum *a = sqlite3_aggregate_context(ctx, sizeof(*a));
	if (!a) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	a->sum = jf_bill_add(a->sum, sqlite3_value_int64(argv[0]));
	a->any = true;
}

static void satsum_final(sqlite3_context *ctx)
{
	struct satsum *a = sqlite3_aggregate_context(ctx, 0);
	if (a && a->any)
		sqlite3_result_int64(ctx, a->sum);
	else
		sqlite3_result_null(ctx); /* as sum() of no rows */
}

enum jf_err jf_ledger_register(struct jf_store *st)
{
	int rc = sqlite3_create_function_v2(st->db, "jf_satsum", 1,
					    SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
					    satsum_step, satsum_final, NULL);
	return jf_q_err(rc);
}

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
	return rc ? rc : jf_q_last_id(st, id);
}

void jf_ledger_forget(struct jf_store *st)
{
	st->memo_all.valid = false;
	for (int i = 0; i < JF_LEDGER_MEMOS; i++)
		st->memo_queue[i].valid = false;
}

static struct ledger_memo *memo_find(struct jf_store *st, enum jf_scope scope, int64_t id)
{
	if (scope == JF_SCOPE_ALL)
		return &st->memo_all;
	if (scope != JF_SCOPE_QUEUE)
		return NULL;
	for (int i = 0; i < JF_LEDGER_MEMOS; i++)
		if (st->memo_queue[i].valid && st->memo_queue[i].queue_id == id)
			return &st->memo_queue[i];
	return NULL;
}

static void memo_add(struct ledger_memo *m, int64_t amount, int64_t seconds)
{
	if (!m || !m->valid)
		return;
	m->amount = jf_bill_add(m->amount, amount);
	m->seconds = jf_bill_add(m->seconds, seconds);
}

/* Close the open row id (of queue_id) at end_ms: the billing rule and the
 * next place in ledger.csv.  An end before the start bills nothing and
 * still closes. */
static enum jf_err close_row(struct jf_store *st, int64_t id, int64_t queue_id, int64_t start_ms,
			     int64_t rate, int64_t end_ms)
{
	if (end_ms < start_ms)
		end_ms = start_ms;
	int64_t seconds = jf_bill_seconds(start_ms, end_ms);
	int64_t amount = jf_bill_amount(seconds, rate);
	sqlite3_stmt *s = jf_q(st, Q_LEDGER_CLOSE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, end_ms > 0 ? end_ms : 1); /* end_ms 0 means open */
	sqlite3_bind_int64(s, 3, seconds);
	sqlite3_bind_int64(s, 4, amount);
	enum jf_err rc = jf_q_exec(st, s);
	if (rc == JF_OK) {
		memo_add(&st->memo_all, amount, seconds);
		memo_add(memo_find(st, JF_SCOPE_QUEUE, queue_id), amount, seconds);
	} else {
		jf_memos_forget(st);
	}
	return rc;
}

enum jf_err jf_ledger_close(struct jf_store *st, int64_t attempt_id, int64_t end_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_LEDGER_GET_OPEN);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, attempt_id);
	int rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		sqlite3_reset(s);
		/* already closed, or never opened */
		return rc == SQLITE_DONE ? JF_ENOENT : JF_EIO;
	}
	int64_t id = sqlite3_column_int64(s, 0);
	int64_t start_ms = sqlite3_column_int64(s, 1);
	int64_t rate = sqlite3_column_int64(s, 2);
	int64_t queue_id = sqlite3_column_int64(s, 3);
	sqlite3_reset(s);
	return close_row(st, id, queue_id, start_ms, rate, end_ms);
}

enum jf_err jf_ledger_close_all(struct jf_store *st, int64_t end_ms, int64_t *closed)
{
	int64_t n = 0;
	enum jf_err err = jf_store_begin(st);
	if (err)
		goto out;
	/* one row at a time, lowest id first: no cursor stays open on the
	 * table while it is updated, and closed_seq follows id order */
	for (;;) {
		sqlite3_stmt *s = jf_q(st, Q_LEDGER_CLOSE_NEXT);
		if (!s) {
			err = JF_EIO;
			break;
		}
		int rc = sqlite3_step(s);
		if (rc != SQLITE_ROW) {
			sqlite3_reset(s);
			if (rc != SQLITE_DONE)
				err = JF_EIO;
			break;
		}
		int64_t id = sqlite3_column_int64(s, 0);
		int64_t start_ms = sqlite3_column_int64(s, 1);
		int64_t rate = sqlite3_column_int64(s, 2);
		int64_t queue_id = sqlite3_column_int64(s, 3);
		sqlite3_reset(s);
		err = close_row(st, id, queue_id, start_ms, rate, end_ms);
		if (err)
			break;
		n++;
	}
	if (err) {
		jf_store_rollback(st);
		n = 0;
	} else {
		err = jf_store_commit(st);
		if (err)
			n = 0;
	}
out:
	if (closed)
		*closed = n;
	return err;
}

/* The attempt's latest segment (its open one if any): row id and end_ms. */
static enum jf_err last_segment(struct jf_store *st, int64_t attempt_id, int64_t *id,
				int64_t *end_ms)
{
	sqlite3_stmt *s = jf_q(st, Q_LEDGER_LAST);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, attempt_id);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(s, 0);
		*end_ms = sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	if (rc == SQLITE_ROW)
		return JF_OK;
	return rc == SQLITE_DONE ? JF_ENOENT : JF_EIO;
}

enum jf_err jf_ledger_reopen(struct jf_store *st, int64_t attempt_id, int64_t start_ms)
{
	int64_t id = 0, end_ms = 0;
	enum jf_err err = last_segment(st, attempt_id, &id, &end_ms);
	if (err)
		return err;
	if (end_ms == 0)
		return JF_EEXIST; /* one is open: nothing to do */
	/* never before the last end: no second is billed twice */
	if (start_ms < end_ms)
		start_ms = end_ms;
	sqlite3_stmt *s = jf_q(st, Q_LEDGER_REOPEN);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, start_ms);
	return jf_q_exec(st, s);
}

enum jf_err jf_ledger_last_end(struct jf_store *st, int64_t attempt_id, int64_t *end_ms, bool *open)
{
	int64_t id = 0, end = 0;
	enum jf_err err = last_segment(st, attempt_id, &id, &end);
	if (err)
		return err;
	if (end_ms)
		*end_ms = end;
	if (open)
		*open = end == 0;
	return JF_OK;
}

enum jf_err jf_ledger_sum(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t now_ms,
			  int64_t *amount, int64_t *seconds)
{
	return jf_ledger_sum_rate(st, scope, id, now_ms, amount, seconds, NULL, NULL);
}

enum jf_err jf_ledger_sum_rate(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t now_ms,
			       int64_t *amount, int64_t *seconds, int64_t *rate,
			       int64_t *open_amount)
{
	if (rate)
		*rate = 0;
	if (open_amount)
		*open_amount = 0;
	static const enum jf_q closed[] = {
		[JF_SCOPE_ALL] = Q_LEDGER_SUM_ALL,     [JF_SCOPE_QUEUE] = Q_LEDGER_SUM_QUEUE,
		[JF_SCOPE_GROUP] = Q_LEDGER_SUM_GROUP, [JF_SCOPE_TASK] = Q_LEDGER_SUM_TASK,
		[JF_SCOPE_NODE] = Q_LEDGER_SUM_NODE,   [JF_SCOPE_ATTEMPT] = Q_LEDGER_SUM_ATTEMPT,
	};
	static const enum jf_q open[] = {
		[JF_SCOPE_ALL] = Q_LEDGER_OPEN_ALL,     [JF_SCOPE_QUEUE] = Q_LEDGER_OPEN_QUEUE,
		[JF_SCOPE_GROUP] = Q_LEDGER_OPEN_GROUP, [JF_SCOPE_TASK] = Q_LEDGER_OPEN_TASK,
		[JF_SCOPE_NODE] = Q_LEDGER_OPEN_NODE,   [JF_SCOPE_ATTEMPT] = Q_LEDGER_OPEN_ATTEMPT,
	};
	*amount = *seconds = 0;
	if (scope == JF_SCOPE_STORE || (size_t)scope >= sizeof(closed) / sizeof(closed[0]))
		return JF_EINVAL; /* no ledger rows */
	int rc;
	jf_memos_check(st);
	sqlite3_stmt *s;
	struct ledger_memo *m = memo_find(st, scope, id);
	if (m && m->valid) {
		*amount = m->amount;
		*seconds = m->seconds;
	} else {
		s = jf_q(st, closed[scope]);
		if (!s)
			return JF_EIO;
		if (scope != JF_SCOPE_ALL)
			sqlite3_bind_int64(s, 1, id);
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW) {
			*amount = sqlite3_column_int64(s, 0);
			*seconds = sqlite3_column_int64(s, 1);
		}
		sqlite3_reset(s);
		if (rc != SQLITE_ROW)
			return JF_EIO;
		if (scope == JF_SCOPE_QUEUE) {
			m = &st->memo_queue[st->memo_next++ % JF_LEDGER_MEMOS];
			m->queue_id = id;
		}
		if (m) {
			m->valid = true;
			m->amount = *amount;
			m->seconds = *seconds;
		}
	}
	s = jf_q(st, open[scope]);
	if (!s)
		return JF_EIO;
	if (scope != JF_SCOPE_ALL)
		sqlite3_bind_int64(s, 1, id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t secs = jf_bill_seconds(sqlite3_column_int64(s, 0), now_ms);
		int64_t r = sqlite3_column_int64(s, 1), a = jf_bill_amount(secs, r);
		*seconds = jf_bill_add(*seconds, secs);
		*amount = jf_bill_add(*amount, a);
		if (rate)
			*rate = jf_bill_add(*rate, r);
		if (open_amount)
			*open_amount = jf_bill_add(*open_amount, a);
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

enum jf_err jf_ledger_budget_segs(struct jf_store *st, int64_t queue_id, int64_t period_s,
				  int64_t now_ms, struct jf_budget_seg **segs, size_t *n,
				  int64_t *base)
{
	*segs = NULL;
	*n = 0;
	*base = 0;
	if (period_s <= 0) {
		int64_t secs = 0;
		/* now 0: the closed rows alone (the memo, most of the time) */
		enum jf_err rc = jf_ledger_sum(st, JF_SCOPE_QUEUE, queue_id, 0, base, &secs);
		if (rc)
			return rc;
	}
	sqlite3_stmt *s = jf_q(st, period_s > 0 ? Q_LEDGER_WINDOW_QUEUE : Q_LEDGER_OPEN_QUEUE);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, queue_id);
	if (period_s > 0)
		sqlite3_bind_int64(s, 2, now_ms - period_s * 1000);
	struct jf_budget_seg *v = NULL;
	size_t cap = 0, m = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (m == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct jf_budget_seg *p = realloc(v, ncap * sizeof(*p));
			if (!p) {
				sqlite3_reset(s);
				free(v);
				return JF_ENOMEM;
			}
			v = p;
			cap = ncap;
		}
		if (period_s > 0)
			v[m++] = (struct jf_budget_seg){ sqlite3_column_int64(s, 0),
							 sqlite3_column_int64(s, 1),
							 sqlite3_column_int64(s, 2) };
		else
			v[m++] = (struct jf_budget_seg){ sqlite3_column_int64(s, 0), 0,
							 sqlite3_column_int64(s, 1) };
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		free(v);
		return JF_EIO;
	}
	*segs = v;
	*n = m;
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
			     int (*fn)(void *ctx, const char *key, int64_t amount, int64_t seconds),
			     void *ctx)
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
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(ctx, (const char *)sqlite3_column_text(s, 0), sqlite3_column_int64(s, 1),
		       sqlite3_column_int64(s, 2)))
			break;
	sqlite3_reset(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

bool jf_ledger_view_has(const struct jf_ledger_view *v, int64_t queue_id)
{
	if (!v || queue_id == 0)
		return true;
	size_t lo = 0, hi = v->nqueues;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->queues[mid] == queue_id)
			return true;
		if (v->queues[mid] < queue_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * The same totals as the Q_LEDGER_BY_* statements, over the rows of the
 * view: the statement is made for the call, with the view's queue ids (as
 * numbers: nothing from outside reaches the text) in an IN list.
 */
enum jf_err
jf_ledger_totals_view(struct jf_store *st, const char *by, const struct jf_ledger_view *v,
		      int (*fn)(void *ctx, const char *key, int64_t amount, int64_t seconds),
		      void *ctx)
{
	if (!v)
		return jf_ledger_totals(st, by, fn, ctx);
	static const struct {
		const char *by, *key;
	} keys[] = {
		{ "queue", "CASE WHEN queue = '' THEN '(independent)' ELSE queue END" },
		{ "group",
		  "CASE WHEN queue = '' THEN 'tasks/' || grp ELSE queue || '/' || grp END" },
		{ "billing", "billing" },
		{ "gpu", "CASE WHEN gpu = '' THEN 'cpu' ELSE gpu END" },
	};
	const char *key = NULL;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strcmp(by, keys[i].by) == 0)
			key = keys[i].key;
	if (!key)
		return JF_EINVAL;
	size_t cap = 256 + strlen(key) + v->nqueues * 21;
	char *sql = malloc(cap);
	if (!sql)
		return JF_ENOMEM;
	size_t n = (size_t)snprintf(sql, cap,
				    "SELECT %s, jf_satsum(amount), jf_satsum(seconds) "
				    "FROM ledger WHERE end_ms != 0 AND (queue_id = 0 OR queue_id "
				    "IN (",
				    key);
	for (size_t i = 0; i < v->nqueues; i++)
		n += (size_t)snprintf(sql + n, cap - n, "%s%lld", i ? "," : "",
				      (long long)v->queues[i]);
	snprintf(sql + n, cap - n, ")) GROUP BY 1 ORDER BY 1");
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		return JF_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		if (fn(ctx, (const char *)sqlite3_column_text(s, 0), sqlite3_column_int64(s, 1),
		       sqlite3_column_int64(s, 2)))
			break;
	sqlite3_finalize(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? JF_OK : JF_EIO;
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

enum jf_err jf_ledger_spot(struct jf_store *st, enum jf_scope scope, int64_t id, int64_t now_ms,
			   void (*fn)(void *ctx, const char *gpu, int64_t rate, int64_t seconds,
				      int64_t amount),
			   void *ctx)
{
	enum jf_q closed, open;
	switch (scope) {
	case JF_SCOPE_ALL:
		closed = Q_LEDGER_SPOT_ALL;
		open = Q_LEDGER_SPOT_OPEN_ALL;
		break;
	case JF_SCOPE_QUEUE:
		closed = Q_LEDGER_SPOT_QUEUE;
		open = Q_LEDGER_SPOT_OPEN_QUEUE;
		break;
	case JF_SCOPE_GROUP:
		closed = Q_LEDGER_SPOT_GROUP;
		open = Q_LEDGER_SPOT_OPEN_GROUP;
		break;
	default:
		return JF_EINVAL;
	}
	int rc = SQLITE_DONE;
	for (int pass = 0; pass < 2 && rc == SQLITE_DONE; pass++) {
		sqlite3_stmt *s = jf_q(st, pass ? open : closed);
		if (!s)
			return JF_EIO;
		if (scope != JF_SCOPE_ALL)
			sqlite3_bind_int64(s, 1, id);
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			const char *gpu = (const char *)sqlite3_column_text(s, 0);
			int64_t rate = sqlite3_column_int64(s, 1), secs, amount;
			if (pass) {
				secs = jf_bill_seconds(sqlite3_column_int64(s, 2), now_ms);
				amount = jf_bill_amount(secs, rate);
			} else {
				secs = sqlite3_column_int64(s, 2);
				amount = sqlite3_column_int64(s, 3);
			}
			fn(ctx, gpu ? gpu : "", rate, secs, amount);
		}
		sqlite3_reset(s);
	}
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}
