/*
 * plots.c - the tree's plots (reference 11): what the store holds, handed
 * to core/plot.h's renderers.
 *
 * timeline.svg   a group's or batch's started attempts, streamed from the
 *                store into a jf_timeline (which keeps at most a fixed grid
 *                once the group is large), after one query for the span;
 *                up to now while an attempt runs, else to the last end;
 *                with no attempt, an empty axis at its submission.
 * usage.svg      the ledger's GPU segments over the last 24 h, streamed as
 *                +gpus/-gpus changes into per-model peaks per 5 minutes,
 *                beside the engine's forecast of on-demand use; the window
 *                ends at the end of the current 5 minutes, so the file
 *                changes with the clock every 5 minutes (and with use).
 * cost.svg       closed ledger amounts summed per queue and time bucket in
 *                SQL, made cumulative here, the open segments' cost so far
 *                added at the end; the rows of the reader's view only.  Up
 *                to now while a segment is open, else to the last close,
 *                so an idle ledger's plot stays the same.
 *
 * Like every rendered file they are whole buffers, so stat's size is what
 * a read returns (render.c).
 */
#include "fs/fs_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/billing.h"
#include "core/forecast.h"
#include "core/plot.h"

/* ---- timeline.svg ---- */

struct tl_ctx {
	struct jf_timeline *t;
	int64_t now;
	bool oom;
};

static enum jf_plot_outcome outcome_of(const struct jf_plot_row *r)
{
	if (r->end_ms == 0)
		return JF_PO_RUNNING;
	switch (r->end_state) {
	case JF_ST_SUCCEEDED:
		return JF_PO_SUCCEEDED;
	case JF_ST_FAILED:
		return JF_PO_FAILED;
	case JF_ST_PREEMPTED:
		return JF_PO_PREEMPTED;
	case JF_ST_STOPPED:
	case JF_ST_WAITING:
	case JF_ST_PAUSED:
		return JF_PO_STOPPED;
	default:
		return JF_PO_UNKNOWN;
	}
}

static int tl_row(void *ctx, const struct jf_plot_row *r)
{
	struct tl_ctx *c = ctx;
	struct jf_plot_attempt a = {
		.task = r->task_idx,
		.node = r->node_idx,
		.attempt = r->attempt,
		.start_ms = r->start_ms,
		.end_ms = r->end_ms ? r->end_ms : c->now,
		.outcome = outcome_of(r),
	};
	if (!jf_timeline_add(c->t, &a)) {
		c->oom = true;
		return 1;
	}
	return 0;
}

int jf_render_timeline(struct jf_fs *fs, int64_t group_id, char **out, size_t *len)
{
	struct jf_group_rec g;
	if (jf_group_get(ST(fs), group_id, &g) != JF_OK)
		return ENOENT;
	int64_t now = jf_engine_now(fs->e);
	struct jf_plot_span sp;
	if (jf_plot_group_span(ST(fs), group_id, &sp) != JF_OK) {
		jf_group_release(&g);
		return EIO;
	}
	char title[160];
	snprintf(title, sizeof(title), "Timeline of %s %s (%s)",
		 g.kind == JF_KIND_BATCH ? "batch" : "group", g.display ? g.display : g.dirname,
		 jf_state_name(g.state));
	/* nothing started yet: an empty axis at its submission (or its
	 * making), not at now, so a waiting or draft group's plot is the same
	 * file until something happens to it */
	int64_t quiet = g.submitted_ms ? g.submitted_ms : g.created_ms;
	struct jf_timeline_opts o = {
		.title = title,
		.tasks = g.completions,
		.nodes = g.nodes,
		.t0_ms = sp.attempts ? sp.first_start_ms : quiet,
		.t1_ms = !sp.attempts ? quiet
			 : sp.open    ? now
				      : sp.last_end_ms,
	};
	jf_group_release(&g);
	struct tl_ctx c = { jf_timeline_new(&o), now, false };
	if (!c.t)
		return ENOMEM;
	int rc = 0;
	if (sp.attempts && jf_plot_group_attempts(ST(fs), group_id, tl_row, &c) != JF_OK)
		rc = EIO;
	if (!rc && c.oom)
		rc = ENOMEM;
	if (!rc) {
		*out = jf_timeline_svg(c.t, len);
		if (!*out)
			rc = ENOMEM;
	}
	jf_timeline_free(c.t);
	return rc;
}

/* ---- usage.svg ---- */

#define USAGE_BUCKETS 288 /* 5 minutes each */
#define DAY_MS        (INT64_C(24) * 3600 * 1000)

struct usage_ctx {
	const struct jf_cluster *c;
	struct jf_steps *steps; /* one per model */
};

static int usage_change(void *ctx, const char *gpu, int64_t t_ms, int64_t delta)
{
	struct usage_ctx *u = ctx;
	for (size_t m = 0; m < u->c->nmodels; m++)
		if (strcmp(u->c->models[m].name, gpu) == 0) {
			jf_steps_add(&u->steps[m], t_ms, delta);
			break;
		}
	return 0;
}

int jf_render_usage(struct jf_fs *fs, char **out, size_t *len)
{
	const struct jf_cluster *c = jf_engine_cluster(fs->e);
	/* in 5-minute steps: "now" is the end of the current step, so the
	 * picture moves every 5 minutes, not every second */
	int64_t step = DAY_MS / USAGE_BUCKETS;
	int64_t now = (jf_engine_now(fs->e) / step + 1) * step;
	size_t nm = c->nmodels;
	struct jf_steps *steps = calloc(nm ? nm : 1, sizeof(*steps));
	double *peaks = calloc((nm ? nm : 1) * USAGE_BUCKETS, sizeof(*peaks));
	struct jf_usage_series *series = calloc(nm ? nm : 1, sizeof(*series));
	int rc = 0;
	if (!steps || !peaks || !series) {
		rc = ENOMEM;
		goto out;
	}
	for (size_t m = 0; m < nm; m++)
		jf_steps_init(&steps[m], now - DAY_MS, now, USAGE_BUCKETS,
			      peaks + m * USAGE_BUCKETS);
	struct usage_ctx u = { c, steps };
	if (jf_plot_gpu_changes(ST(fs), now - DAY_MS, now, usage_change, &u) != JF_OK) {
		rc = EIO;
		goto out;
	}
	for (size_t m = 0; m < nm; m++) {
		jf_steps_end(&steps[m]);
		struct jf_usage_series *s = &series[m];
		s->model = c->models[m].name;
		for (size_t i = 0; i < c->nmachines; i++)
			if (c->machines[i].model == m)
				s->total += c->machines[i].gpus;
		s->used = peaks + m * USAGE_BUCKETS;
		const struct jf_forecast *f = jf_engine_forecast(fs->e, m);
		if (f) {
			s->has_forecast = true;
			for (int h = 0; h < JF_USAGE_FORECAST_HOURS; h++)
				s->forecast[h] = s->total - jf_forecast_predicted_free(
								    f, now + (int64_t)h * 3600000);
		}
	}
	struct jf_usage_plot p = {
		.title = "GPUs in use per model",
		.now_ms = now,
		.past_ms = DAY_MS,
		.nbuckets = USAGE_BUCKETS,
		.s = series,
		.n = nm,
	};
	*out = jf_plot_usage(&p, len);
	if (!*out)
		rc = ENOMEM;
out:
	free(series);
	free(peaks);
	free(steps);
	return rc;
}

/* ---- cost.svg ---- */

#define COST_BUCKETS 200
#define COST_SERIES  12 /* queues drawn apart; the rest as one line */

struct cost_series {
	int64_t queue_id; /* -1: the others together */
	char name[JF_NAME_MAX + 16];
	int64_t *cum;
};

struct cost_ctx {
	const struct jf_ledger_view *v;
	struct cost_series s[COST_SERIES];
	size_t n;
	bool oom;
};

static struct cost_series *cost_series_of(struct cost_ctx *c, int64_t queue_id, const char *name)
{
	if (c->n && c->s[c->n - 1].queue_id == queue_id)
		return &c->s[c->n - 1];
	struct cost_series *s;
	if (c->n == COST_SERIES) {
		s = &c->s[COST_SERIES - 1];
		if (s->queue_id != -1) {
			s->queue_id = -1;
			snprintf(s->name, sizeof(s->name), "other queues");
		}
		return s;
	}
	s = &c->s[c->n];
	s->cum = calloc(COST_BUCKETS, sizeof(*s->cum));
	if (!s->cum)
		return NULL;
	s->queue_id = queue_id;
	snprintf(s->name, sizeof(s->name), "%s", name);
	c->n++;
	return s;
}

static int cost_row(void *ctx, int64_t queue_id, const char *queue, int64_t bucket, int64_t amount)
{
	struct cost_ctx *c = ctx;
	if (!jf_ledger_view_has(c->v, queue_id))
		return 0;
	struct cost_series *s = cost_series_of(c, queue_id, queue);
	if (!s) {
		c->oom = true;
		return 1;
	}
	if (bucket >= 0 && bucket < COST_BUCKETS)
		s->cum[bucket] = jf_bill_add(s->cum[bucket], amount);
	return 0;
}

int jf_render_cost_svg(struct jf_fs *fs, const struct jf_ledger_view *v, char **out, size_t *len)
{
	const struct jf_cluster *cl = jf_engine_cluster(fs->e);
	int64_t now = jf_engine_now(fs->e), first = 0, last = 0, open = 0;
	if (jf_plot_cost_span(ST(fs), &first, &last, &open) != JF_OK)
		return EIO;
	/* up to now while anything is billed, else up to the last close: an
	 * idle ledger's plot does not change */
	int64_t end = open || !last ? now : last;
	int64_t t0 = first ? first : now, t1 = end > t0 + 60000 ? end : t0 + 60000;
	int64_t bucket_ms = (t1 - t0 + COST_BUCKETS - 1) / COST_BUCKETS;
	struct cost_ctx c;
	memset(&c, 0, sizeof(c));
	c.v = v;
	int rc = 0;
	if (first &&
	    jf_plot_cost_buckets(ST(fs), t0, bucket_ms, COST_BUCKETS, cost_row, &c) != JF_OK)
		rc = EIO;
	if (!rc && c.oom)
		rc = ENOMEM;
	struct jf_cost_series ser[COST_SERIES];
	for (size_t i = 0; !rc && i < c.n; i++) {
		struct cost_series *s = &c.s[i];
		for (size_t b = 1; b < COST_BUCKETS; b++)
			s->cum[b] = jf_bill_add(s->cum[b], s->cum[b - 1]);
		if (s->queue_id >= 0) {
			/* what its open segments cost so far: at now, the end */
			int64_t all = 0, closed = 0, secs = 0;
			jf_ledger_sum(ST(fs), JF_SCOPE_QUEUE, s->queue_id, now, &all, &secs);
			jf_ledger_sum(ST(fs), JF_SCOPE_QUEUE, s->queue_id, 0, &closed, &secs);
			if (all > closed)
				s->cum[COST_BUCKETS - 1] =
					jf_bill_add(s->cum[COST_BUCKETS - 1], all - closed);
		}
		ser[i].name = s->name;
		ser[i].cum = s->cum;
	}
	if (!rc) {
		struct jf_cost_plot p = {
			.title = "Cost per queue",
			.currency = cl->currency,
			.t0_ms = t0,
			.t1_ms = t1,
			.nbuckets = COST_BUCKETS,
			.s = ser,
			.n = c.n,
		};
		*out = jf_plot_cost(&p, len);
		if (!*out)
			rc = ENOMEM;
	}
	for (size_t i = 0; i < c.n; i++)
		free(c.s[i].cum);
	return rc;
}
