/*
 * coststat.c - cost as it goes (reference 9.3): cost_rate in every status
 * with a cost, cost_estimate and spot_savings on groups, batches and
 * queues.  All in integer micro-units, shown like `cost`.
 *
 * cost_rate: the rates of the scope's open ledger segments, per hour.
 * spot_savings: for each spot segment, what its seconds would have cost at
 * the on-demand price of the same GPUs (the segment's rate scaled by the
 * model's on-demand / spot price; the CPU prices for CPU-only nodes),
 * less what they cost.
 * cost_estimate of a group: what it cost so far when it has ended; else
 * its closed segments plus each task not finished at their mean over its
 * finished tasks; before any has finished, each task not finished at its
 * bound (its nodes' rate for its timeout).  Never below what it cost so
 * far.  A queue's: the same over its tasks (every task left at the mean
 * of its finished ones); before any has finished, what it cost so far
 * plus, for each of its active groups, its estimate less what it cost.
 */
#include "fs/fs_int.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "core/billing.h"
#include "core/lifecycle.h"
#include "core/sched.h"

static void put_money(json_t *o, const char *key, const char *suffix, int64_t micro,
		      const char *currency)
{
	char money[64], buf[80], mkey[64];
	jf_money_format(micro, currency, money, sizeof(money));
	snprintf(buf, sizeof(buf), "%s%s", money, suffix);
	json_object_set_new(o, key, json_string(buf));
	snprintf(mkey, sizeof(mkey), "%s_micro", key);
	json_object_set_new(o, mkey, json_integer(micro));
}

void jf_put_cost_rate(struct jf_fs *fs, json_t *o, int64_t rate)
{
	put_money(o, "cost_rate", "/h", rate, jf_engine_cluster(fs->e)->currency);
}

/* a * b / c rounded half up, for non-negative a, b and positive c */
static int64_t scale(int64_t a, int64_t b, int64_t c)
{
	__int128 x = (__int128)a * b + c / 2;
	x /= c;
	return x > INT64_MAX ? INT64_MAX : (int64_t)x;
}

struct spot {
	const struct jf_cluster *c;
	int64_t od, paid;
};

static void spot_row(void *ctx, const char *gpu, int64_t rate, int64_t secs, int64_t amount)
{
	struct spot *x = ctx;
	int64_t od_price = x->c->cpu_price_ondemand, spot_price = x->c->cpu_price_spot;
	if (gpu[0]) {
		int m = jf_cluster_model_index(x->c, gpu);
		if (m < 0)
			return; /* a model no longer in the cluster file: no price to compare */
		od_price = x->c->models[m].price_ondemand;
		spot_price = x->c->models[m].price_spot;
	}
	if (spot_price <= 0 || rate < 0)
		return;
	x->od = jf_bill_add(x->od, jf_bill_amount(secs, scale(rate, od_price, spot_price)));
	x->paid = jf_bill_add(x->paid, amount);
}

void jf_put_spot_savings(struct jf_fs *fs, json_t *o, enum jf_scope scope, int64_t id, bool maybe)
{
	const struct jf_cluster *c = jf_engine_cluster(fs->e);
	struct spot x = { c, 0, 0 };
	if (maybe) /* an on-demand group has no spot segments: no query */
		jf_ledger_spot(ST(fs), scope, id, jf_engine_now(fs->e), spot_row, &x);
	int64_t saved = x.od > x.paid ? x.od - x.paid : 0;
	put_money(o, "spot_savings", "", saved, c->currency);
}

/* The estimate of group g (so_far: what it cost so far, open: of which its
 * open segments; counts: its tasks per state, NULL: counted here); -1 when
 * unknown. */
static int64_t group_estimate(struct jf_fs *fs, const struct jf_group_rec *g, int64_t so_far,
			      int64_t open, const int64_t *counts)
{
	if (jf_state_final(g->state))
		return so_far;
	const struct jf_spec *s = jf_fs_spec(fs, g);
	if (!s)
		return -1;
	int64_t own[JF_ST__COUNT];
	const int64_t *c = counts;
	if (!c) {
		if (jf_group_count_tasks(ST(fs), g->id, own) != JF_OK)
			return -1;
		c = own;
	}
	/* (a preempted task waits again: counted as waiting, not twice) */
	int64_t left =
		c[JF_ST_WAITING] + c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING] + c[JF_ST_PAUSED];
	/* a finished task's mean cost: the closed segments over the finished
	 * tasks (closed segments of tasks not finished - an earlier attempt,
	 * a pause - count too: a retried task costs more), without a scan of
	 * the tasks (a status read stays cheap for a group of 10,000) */
	int64_t done = c[JF_ST_SUCCEEDED] + c[JF_ST_FAILED], est;
	int64_t done_cost = so_far > open ? so_far - open : 0;
	if (done > 0) {
		est = jf_bill_add(done_cost, scale(left, done_cost, done));
	} else {
		const struct jf_cluster *cl = jf_engine_cluster(fs->e);
		struct jf_sched_req req;
		struct jf_error err;
		if (s->timeout <= 0 || !jf_sched_request(cl, s, &req, &err))
			return -1;
		int64_t node_rate =
			jf_bill_rate(cl, req.model, req.gpus, req.cpu_milli, s->billing);
		int64_t bound = jf_bill_amount(s->timeout, node_rate);
		est = scale(left, bound, 1);
		est = scale(est, s->nodes > 0 ? s->nodes : 1, 1);
	}
	return est > so_far ? est : so_far;
}

void jf_put_group_estimate(struct jf_fs *fs, json_t *o, const struct jf_group_rec *g,
			   int64_t so_far, int64_t open, const int64_t *counts)
{
	int64_t est = group_estimate(fs, g, so_far, open, counts);
	const char *cur = jf_engine_cluster(fs->e)->currency;
	if (est < 0) {
		json_object_set_new(o, "cost_estimate", json_string(""));
		json_object_set_new(o, "cost_estimate_micro", json_string(""));
	} else {
		put_money(o, "cost_estimate", "", est, cur);
	}
}

struct qest {
	struct jf_fs *fs;
	int64_t queue_id;
	int64_t extra;
	bool unknown;
};

static int queue_group(void *ctx, int64_t gid)
{
	struct qest *q = ctx;
	struct jf_group_rec g;
	if (jf_group_get(ST(q->fs), gid, &g) != JF_OK)
		return 0;
	if (g.queue_id == q->queue_id) {
		int64_t so_far = 0, secs = 0, rate = 0, open = 0;
		jf_ledger_sum_rate(ST(q->fs), JF_SCOPE_GROUP, gid, jf_engine_now(q->fs->e), &so_far,
				   &secs, &rate, &open);
		int64_t est = group_estimate(q->fs, &g, so_far, open, NULL);
		if (est < 0)
			q->unknown = true;
		else
			q->extra = jf_bill_add(q->extra, est - so_far);
	}
	jf_group_release(&g);
	return 0;
}

void jf_put_queue_estimate(struct jf_fs *fs, json_t *o, int64_t queue_id, int64_t so_far,
			   int64_t open, const int64_t *c)
{
	/* once some of its tasks finished: every task left at the queue's
	 * mean, from the counts its status has made already (a group's
	 * counts, each a scan of its tasks when the store just changed, are
	 * read only while nothing of the queue has finished) */
	int64_t done = c[JF_ST_SUCCEEDED] + c[JF_ST_FAILED];
	/* (a preempted task waits again: counted as waiting, not twice) */
	int64_t left =
		c[JF_ST_WAITING] + c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING] + c[JF_ST_PAUSED];
	struct qest q = { fs, queue_id, 0, false };
	if (done > 0) {
		int64_t closed = so_far > open ? so_far - open : 0;
		int64_t est = jf_bill_add(closed, scale(left, closed, done));
		q.extra = est > so_far ? est - so_far : 0;
	} else {
		jf_group_list_active(ST(fs), queue_group, &q);
	}
	if (q.unknown) {
		json_object_set_new(o, "cost_estimate", json_string(""));
		json_object_set_new(o, "cost_estimate_micro", json_string(""));
	} else {
		put_money(o, "cost_estimate", "", jf_bill_add(so_far, q.extra),
			  jf_engine_cluster(fs->e)->currency);
	}
}
