/*
 * why.c - reasons, positions and reservation ETAs of waiting work.  See why.h.
 *
 * A planned group that still has waiting tasks after the pass waits for
 * one reason, in this order: it is paused; the planner skipped it (it can
 * never run: Unschedulable); its head got a reservation (why the head did
 * not start: Resources, QueueCapacity or Reservation, and the shadow time
 * as its ETA); else every task it may run runs (Parallelism, with the
 * earliest end bound of its running tasks as its ETA).
 */
#include "core/why.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quantity.h"

static const char *const names[JF_REASON__COUNT] = {
	[JF_REASON_NONE] = "",
	[JF_REASON_RESOURCES] = "Resources",
	[JF_REASON_QUEUE_CAPACITY] = "QueueCapacity",
	[JF_REASON_PARALLELISM] = "Parallelism",
	[JF_REASON_RESERVATION] = "Reservation",
	[JF_REASON_WINDOW] = "Window",
	[JF_REASON_DEPENDENCY] = "Dependency",
	[JF_REASON_BUDGET] = "Budget",
	[JF_REASON_PAUSED] = "Paused",
	[JF_REASON_UNSCHEDULABLE] = "Unschedulable",
	[JF_REASON_IMAGEPULL] = "ImagePull",
	[JF_REASON_SYNCING] = "Syncing",
};

const char *jf_reason_name(enum jf_reason r)
{
	return r >= 0 && r < JF_REASON__COUNT ? names[r] : "";
}

enum jf_reason jf_reason_lookup(const char *s)
{
	for (int r = 1; s && r < JF_REASON__COUNT; r++)
		if (!strcmp(names[r], s))
			return (enum jf_reason)r;
	return JF_REASON_NONE;
}

/* Far in the future: no bound (the planner saturates at INT64_MAX). */
#define NO_BOUND (INT64_MAX / 2)

static int64_t min_bound(int64_t a, int64_t b)
{
	if (a <= 0 || a >= NO_BOUND)
		return b > 0 && b < NO_BOUND ? b : 0;
	if (b <= 0 || b >= NO_BOUND)
		return a;
	return a < b ? a : b;
}

void jf_why_compute(const struct jf_plan_in *in, const struct jf_plan *plan,
		    const struct jf_why_group *groups, size_t n, struct jf_wait *out)
{
	size_t ng = in->ngroups;
	int64_t *started = calloc(ng ? ng : 1, sizeof(*started));
	size_t *resv = calloc(ng ? ng : 1, sizeof(*resv)); /* index + 1 */
	bool *skipped = calloc(ng ? ng : 1, sizeof(*skipped));
	if (!started || !resv || !skipped) {
		/* out of memory: say nothing rather than something wrong */
		memset(out, 0, n * sizeof(*out));
		goto out;
	}
	for (size_t i = 0; i < plan->nstarts; i++)
		if (plan->starts[i].group < ng)
			started[plan->starts[i].group]++;
	for (size_t i = 0; i < plan->nresv; i++)
		if (plan->resv[i].group < ng)
			resv[plan->resv[i].group] = i + 1;
	for (size_t i = 0; i < plan->nskips; i++)
		if (plan->skips[i].group < ng)
			skipped[plan->skips[i].group] = true;

	for (size_t i = 0; i < n; i++) {
		const struct jf_why_group *w = &groups[i];
		struct jf_wait *o = &out[i];
		*o = (struct jf_wait){ .reason = w->gate };
		if (w->gate != JF_REASON_NONE || w->plan >= ng)
			continue;
		const struct jf_plan_group *pg = &in->groups[w->plan];
		int64_t st = started[w->plan];
		if (pg->waiting - st <= 0) {
			o->reason = JF_REASON_NONE;
		} else if (pg->paused) {
			o->reason = JF_REASON_PAUSED;
		} else if (skipped[w->plan]) {
			o->reason = JF_REASON_UNSCHEDULABLE;
		} else if (resv[w->plan]) {
			const struct jf_plan_resv *r = &plan->resv[resv[w->plan] - 1];
			o->block = r->block;
			o->reason = r->block == JF_PLAN_BLOCK_CAPACITY ? JF_REASON_QUEUE_CAPACITY
				    : r->block == JF_PLAN_BLOCK_RESERVATION ? JF_REASON_RESERVATION
									    : JF_REASON_RESOURCES;
			o->eta_ms = r->at_ms < NO_BOUND ? r->at_ms : 0;
		} else {
			o->reason = JF_REASON_PARALLELISM;
			int64_t started_end = 0;
			if (st > 0 && pg->timeout_ms > 0 && in->now_ms < NO_BOUND - pg->timeout_ms)
				started_end = in->now_ms + pg->timeout_ms;
			o->eta_ms = min_bound(w->next_end_ms, started_end);
		}
	}

	/* positions: the waiting ones, in order, per queue; batches cluster-wide */
	int64_t all = 0;
	for (size_t i = 0; i < n; i++) {
		if (out[i].reason == JF_REASON_NONE)
			continue;
		all++;
		if (groups[i].queue_id == 0) {
			out[i].position = all;
			continue;
		}
		int64_t pos = 1;
		for (size_t j = 0; j < i; j++)
			if (out[j].reason != JF_REASON_NONE &&
			    groups[j].queue_id == groups[i].queue_id)
				pos++;
		out[i].position = pos;
	}
out:
	free(started);
	free(resv);
	free(skipped);
}

static void append(char *buf, size_t n, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t n, size_t *at, const char *fmt, ...)
{
	if (*at >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf + *at, n - *at, fmt, ap);
	va_end(ap);
	if (k > 0)
		*at = (size_t)k >= n - *at ? n - 1 : *at + (size_t)k;
}

/* "2 nodes x 8 H800 GPUs" or "1 node x 4 CPUs, 8Gi" */
static void need(const struct jf_sched_req *r, const struct jf_why_cluster *c, char *buf, size_t n,
		 size_t *at)
{
	append(buf, n, at, "needs %lld node%s x ", (long long)r->nodes, r->nodes == 1 ? "" : "s");
	if (r->gpus > 0) {
		const char *model = r->model >= 0 && (size_t)r->model < c->nmodels
					    ? c->model_names[r->model]
					    : "";
		append(buf, n, at, "%d%s%s GPU%s", r->gpus, model[0] ? " " : "", model,
		       r->gpus == 1 ? "" : "s");
		return;
	}
	char cpu[32], mem[32];
	jf_cpu_format(r->cpu_milli, cpu, sizeof(cpu));
	jf_mem_format(r->mem_bytes, mem, sizeof(mem));
	append(buf, n, at, "%s CPU%s, %s of memory", cpu, strcmp(cpu, "1") ? "s" : "", mem);
}

/* "0 of 16 free" for a GPU model; for CPU-only work, how many of its
 * nodes fit what is free. */
static void freeness(const struct jf_sched_req *r, const struct jf_why_cluster *c, char *buf,
		     size_t n, size_t *at)
{
	if (r->gpus > 0) {
		int64_t free_gpus = 0, total = 0;
		for (size_t i = 0; i < c->nm; i++) {
			if (c->m[i].model != r->model)
				continue;
			total += c->m[i].gpus;
			free_gpus += jf_popcount64(c->m[i].gpu_free);
		}
		append(buf, n, at, "%lld of %lld free", (long long)free_gpus, (long long)total);
		return;
	}
	int64_t fit = 0;
	for (size_t i = 0; i < c->nm; i++) {
		int64_t k = INT64_MAX;
		if (r->cpu_milli > 0)
			k = c->m[i].cpu_free / r->cpu_milli;
		if (r->mem_bytes > 0 && c->m[i].mem_free / r->mem_bytes < k)
			k = c->m[i].mem_free / r->mem_bytes;
		if (k > r->nodes)
			k = r->nodes;
		fit += k > 0 ? k : 0;
		if (fit >= r->nodes)
			break;
	}
	append(buf, n, at, "%lld of %lld node%s fit what is free", (long long)fit,
	       (long long)r->nodes, r->nodes == 1 ? "" : "s");
}

static void queue_use(const struct jf_plan_in *in, const struct jf_plan_group *g,
		      const struct jf_plan *plan, const struct jf_why_cluster *c, char *buf,
		      size_t n, size_t *at)
{
	if (g->queue < 0 || (size_t)g->queue >= in->nqueues)
		return;
	const struct jf_plan_queue *q = &in->queues[g->queue];
	if (q->capacity <= 0)
		return;
	int64_t held = q->held;
	for (size_t i = 0; i < plan->nstarts; i++)
		if (plan->starts[i].group < in->ngroups &&
		    in->groups[plan->starts[i].group].queue == g->queue)
			held += in->groups[plan->starts[i].group].req.nodes;
	append(buf, n, at, "; queue %s holds %lld of %lld node%s", c->queue_name, (long long)held,
	       (long long)q->capacity, q->capacity == 1 ? "" : "s");
}

void jf_why_message(const struct jf_wait *w, const struct jf_plan_in *in,
		    const struct jf_plan_group *g, const struct jf_plan *plan,
		    const struct jf_why_cluster *c, char *buf, size_t n)
{
	size_t at = 0;
	if (!n)
		return;
	buf[0] = '\0';
	switch (w->reason) {
	case JF_REASON_RESOURCES:
		need(&g->req, c, buf, n, &at);
		append(buf, n, &at, "; ");
		freeness(&g->req, c, buf, n, &at);
		if (c->holders && c->holders[0])
			append(buf, n, &at, "; held by %s", c->holders);
		queue_use(in, g, plan, c, buf, n, &at);
		break;
	case JF_REASON_RESERVATION:
		need(&g->req, c, buf, n, &at);
		append(buf, n, &at, "; ");
		freeness(&g->req, c, buf, n, &at);
		append(buf, n, &at, ", reserved for earlier waiting work");
		queue_use(in, g, plan, c, buf, n, &at);
		break;
	case JF_REASON_QUEUE_CAPACITY:
		need(&g->req, c, buf, n, &at);
		queue_use(in, g, plan, c, buf, n, &at);
		if (w->block == JF_PLAN_BLOCK_RESERVATION)
			append(buf, n, &at, ", part reserved for earlier waiting work");
		break;
	case JF_REASON_PARALLELISM: {
		int64_t started = 0;
		for (size_t i = 0; i < plan->nstarts; i++)
			if (plan->starts[i].group_id == g->id)
				started++;
		append(buf, n, &at, "%lld of %lld task%s run, its parallelism; %lld wait%s",
		       (long long)(g->running + started), (long long)g->parallelism,
		       g->parallelism == 1 ? "" : "s", (long long)(g->waiting - started),
		       g->waiting - started == 1 ? "s" : "");
		break;
	}
	default:
		break;
	}
}
