/*
 * store_plots.c - the queries behind the tree's plots (store.h, "plots").
 *
 * Nothing here holds more than one row: the timeline's attempts and the
 * GPU changes are streamed to the caller, the cost is summed per queue
 * and bucket in SQL.
 */
#include "store/store_int.h"

enum jf_err jf_plot_group_span(struct jf_store *st, int64_t group_id, struct jf_plot_span *out)
{
	out->attempts = out->first_start_ms = out->last_end_ms = out->open = 0;
	sqlite3_stmt *s = jf_q(st, Q_PLOT_SPAN);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		out->attempts = sqlite3_column_int64(s, 0);
		out->first_start_ms = sqlite3_column_int64(s, 1);
		out->last_end_ms = sqlite3_column_int64(s, 2);
		out->open = sqlite3_column_int64(s, 3);
		rc = SQLITE_DONE;
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

enum jf_err jf_plot_group_attempts(struct jf_store *st, int64_t group_id,
				   int (*fn)(void *ctx, const struct jf_plot_row *r), void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_PLOT_ATTEMPTS);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, group_id);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct jf_plot_row r = {
			.task_idx = sqlite3_column_int64(s, 0),
			.node_idx = sqlite3_column_int64(s, 1),
			.attempt = sqlite3_column_int64(s, 2),
			.start_ms = sqlite3_column_int64(s, 3),
			.end_ms = sqlite3_column_int64(s, 4),
			.end_state = sqlite3_column_type(s, 5) == SQLITE_NULL
					     ? -1
					     : sqlite3_column_int(s, 5),
		};
		if (fn(ctx, &r)) {
			rc = SQLITE_DONE;
			break;
		}
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

enum jf_err jf_plot_gpu_changes(struct jf_store *st, int64_t from_ms, int64_t to_ms,
				int (*fn)(void *ctx, const char *gpu, int64_t t_ms, int64_t delta),
				void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_PLOT_GPU_CHANGES);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, from_ms);
	sqlite3_bind_int64(s, 2, to_ms);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *gpu = (const char *)sqlite3_column_text(s, 0);
		if (fn(ctx, gpu ? gpu : "", sqlite3_column_int64(s, 1),
		       sqlite3_column_int64(s, 2))) {
			rc = SQLITE_DONE;
			break;
		}
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

enum jf_err jf_plot_cost_span(struct jf_store *st, int64_t *first_ms, int64_t *last_end_ms,
			      int64_t *open)
{
	*first_ms = *last_end_ms = *open = 0;
	sqlite3_stmt *s = jf_q(st, Q_PLOT_COST_FIRST);
	if (!s)
		return JF_EIO;
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*first_ms = sqlite3_column_int64(s, 0);
		*last_end_ms = sqlite3_column_int64(s, 1);
		*open = sqlite3_column_int64(s, 2);
		rc = SQLITE_DONE;
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}

enum jf_err jf_plot_cost_buckets(struct jf_store *st, int64_t t0_ms, int64_t bucket_ms, int64_t n,
				 int (*fn)(void *ctx, int64_t queue_id, const char *queue,
					   int64_t bucket, int64_t amount),
				 void *ctx)
{
	sqlite3_stmt *s = jf_q(st, Q_PLOT_COST);
	if (!s)
		return JF_EIO;
	sqlite3_bind_int64(s, 1, t0_ms);
	sqlite3_bind_int64(s, 2, bucket_ms > 0 ? bucket_ms : 1);
	sqlite3_bind_int64(s, 3, n > 0 ? n : 1);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *q = (const char *)sqlite3_column_text(s, 1);
		if (fn(ctx, sqlite3_column_int64(s, 0), q ? q : "", sqlite3_column_int64(s, 2),
		       sqlite3_column_int64(s, 3))) {
			rc = SQLITE_DONE;
			break;
		}
	}
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? JF_OK : JF_EIO;
}
