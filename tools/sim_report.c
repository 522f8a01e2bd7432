/*
 * sim_report.c - jobfs-sim's printed reports (tools/sim_report.h).
 *
 * Everything comes from the store (groups, tasks, nodes, attempts, events,
 * the ledger), the engine's parsed specs and the figures the replay took;
 * nothing here changes them.  Events are read through a small cursor per
 * group (struct ecur, EVBUF bytes at a time) and merged by time; the spot
 * report adds up each submit[] item's spot groups in a struct spot_acc and
 * prints percentiles by nearest rank.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/sim/sim.h"
#include "core/billing.h"
#include "core/budget.h"
#include "core/lifecycle.h"
#include "core/quantity.h"
#include "core/spec.h"
#include "core/timefmt.h"
#include "engine/engine.h"
#include "store/store.h"
#include "tools/sim_report.h"

#define EVBUF 8192 /* > the store's 2 KiB event line */

void jf_simr_rel_time(int64_t ms, char *buf, size_t n)
{
	if (ms < 0) {
		snprintf(buf, n, "-");
		return;
	}
	long long s = ms / 1000, f = ms % 1000;
	long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
	int w = d ? snprintf(buf, n, "%lldd%02lld:%02lld:%02lld", d, h, m, sec)
		  : snprintf(buf, n, "%02lld:%02lld:%02lld", h, m, sec);
	if (f && w > 0 && (size_t)w < n)
		snprintf(buf + w, n - (size_t)w, ".%03lld", f);
}

/* ---- events, merged across groups ---- */

struct ecur { /* a reader over one group's events text */
	int64_t id;
	int64_t off; /* next byte to read from the store */
	char *buf;   /* EVBUF bytes */
	size_t pos, len;
	bool eof;
	const char *line; /* current line (without '\n'), NULL at the end */
	size_t linelen;
	int64_t t; /* its time, ms */
};

static void ecur_next(struct jf_store *st, struct ecur *c)
{
	c->line = NULL;
	for (;;) {
		char *nl = memchr(c->buf + c->pos, '\n', c->len - c->pos);
		if (nl) {
			c->line = c->buf + c->pos;
			c->linelen = (size_t)(nl - c->line);
			c->pos = (size_t)(nl - c->buf) + 1;
			break;
		}
		if (c->eof)
			return;
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
		size_t got = 0;
		if (c->len == EVBUF ||
		    jf_event_read(st, JF_SCOPE_GROUP, c->id, c->off, c->buf + c->len,
				  EVBUF - c->len, &got) != JF_OK ||
		    got == 0) {
			c->eof = true;
			c->len = 0; /* an unterminated tail is not an event */
			return;
		}
		c->off += (int64_t)got;
		c->len += got;
	}
	char ts[JF_TIME_BUF];
	const char *sp = memchr(c->line, ' ', c->linelen);
	size_t tl = sp ? (size_t)(sp - c->line) : 0;
	c->t = 0;
	if (tl > 0 && tl < sizeof(ts)) {
		memcpy(ts, c->line, tl);
		ts[tl] = '\0';
		jf_time_parse_rfc3339(ts, &c->t);
	}
}

int jf_simr_print_events(struct replay *r)
{
	struct ecur *c = calloc(r->ngroups ? r->ngroups : 1, sizeof(*c));
	if (!c)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < r->ngroups; i++) {
		c[i].id = r->groups[i].id;
		if (!(c[i].buf = malloc(EVBUF))) {
			rc = -1;
			goto out;
		}
		ecur_next(r->st, &c[i]);
	}
	printf("events:\n");
	for (;;) {
		size_t best = r->ngroups;
		for (size_t i = 0; i < r->ngroups; i++)
			if (c[i].line && (best == r->ngroups || c[i].t < c[best].t))
				best = i;
		if (best == r->ngroups)
			break;
		struct ecur *b = &c[best];
		const char *sp = memchr(b->line, ' ', b->linelen);
		size_t skip = sp ? (size_t)(sp - b->line) + 1 : 0;
		char when[32];
		jf_simr_rel_time(b->t - r->t0, when, sizeof(when));
		printf("  %s %s %.*s\n", when, r->groups[best].label, (int)(b->linelen - skip),
		       b->line + skip);
		ecur_next(r->st, b);
	}
	printf("\n");
out:
	for (size_t i = 0; i < r->ngroups; i++)
		free(c[i].buf);
	free(c);
	return rc;
}

/* ---- the report ---- */

void jf_simr_print_groups(struct replay *r, int64_t now)
{
	const char *cur = r->cl->currency;
	int lw = 5;
	for (size_t i = 0; i < r->ngroups; i++) {
		int l = (int)strlen(r->groups[i].label);
		if (l > lw)
			lw = l;
	}
	printf("%-*s  %-10s  %-10s  %-10s  %-12s  %9s  %-10s  %12s  %s\n", lw, "group", "submitted",
	       "started", "finished", "state", "ok/failed", "wait", "node-seconds", "cost");
	for (size_t i = 0; i < r->ngroups; i++) {
		struct jf_group_rec g;
		if (jf_group_get(r->st, r->groups[i].id, &g) != JF_OK)
			continue;
		int64_t counts[JF_ST__COUNT] = { 0 };
		jf_group_count_tasks(r->st, g.id, counts);
		int64_t amount = 0, secs = 0;
		jf_ledger_sum(r->st, JF_SCOPE_GROUP, g.id, now, &amount, &secs);
		char sub[32], st[32], fin[32], wait[32], money[48], okf[48];
		jf_simr_rel_time(g.submitted_ms ? g.submitted_ms - r->t0 : -1, sub, sizeof(sub));
		jf_simr_rel_time(g.started_ms ? g.started_ms - r->t0 : -1, st, sizeof(st));
		jf_simr_rel_time(g.finished_ms ? g.finished_ms - r->t0 : -1, fin, sizeof(fin));
		jf_simr_rel_time(g.started_ms && g.submitted_ms ? g.started_ms - g.submitted_ms
								: -1,
				 wait, sizeof(wait));
		jf_money_format(amount, cur, money, sizeof(money));
		snprintf(okf, sizeof(okf), "%lld/%lld", (long long)counts[JF_ST_SUCCEEDED],
			 (long long)counts[JF_ST_FAILED]);
		printf("%-*s  %-10s  %-10s  %-10s  %-12s  %9s  %-10s  %12lld  %s\n", lw,
		       r->groups[i].label, sub, st, fin, jf_state_name(g.state), okf, wait,
		       (long long)secs, money);
		jf_group_release(&g);
	}
}

void jf_simr_print_cluster(struct replay *r, int64_t now, enum ending how)
{
	int64_t span_ms = now - r->t0;
	char span[32], dur[48];
	jf_simr_rel_time(span_ms, span, sizeof(span));
	jf_duration_format(span_ms / 1000, dur, sizeof(dur));
	int64_t amount = 0, secs = 0;
	jf_ledger_sum(r->st, JF_SCOPE_ALL, 0, now, &amount, &secs);
	char money[48];
	jf_money_format(amount, r->cl->currency, money, sizeof(money));
	struct jf_sim_stats ss;
	jf_sim_stats(r->be, &ss);
	int64_t states[JF_ST__COUNT] = { 0 };
	for (size_t i = 0; i < r->ngroups; i++) {
		struct jf_group_rec g;
		if (jf_group_get(r->st, r->groups[i].id, &g) == JF_OK) {
			if (g.state >= 0 && g.state < JF_ST__COUNT)
				states[g.state]++;
			jf_group_release(&g);
		}
	}
	/* basis points, in integers: the same on every machine */
	int64_t util_bp = span_ms > 0 && r->total_gpus > 0
				  ? r->gpu_ms * 10000 / (r->total_gpus * span_ms)
				  : 0;
	int64_t peak_bp = r->total_gpus > 0 ? r->peak_gpus * 10000 / r->total_gpus : 0;

	printf("\ncluster %s: %zu machines, %lld GPUs\n", r->cl->name, r->cl->nmachines,
	       (long long)r->total_gpus);
	printf("  simulated span     %s (%s)%s\n", span, dur,
	       how == END_UNTIL ? ", stopped by --until" : "");
	printf("  groups             %zu:", r->ngroups);
	bool first = true;
	for (int s = 0; s < JF_ST__COUNT; s++)
		if (states[s]) {
			printf("%s %lld %s", first ? "" : ",", (long long)states[s],
			       jf_state_name(s));
			first = false;
		}
	printf("%s\n", how == END_STALLED ? " (stalled: nothing left can start them)" : "");
	printf("  peak GPUs in use   %lld of %lld (%lld.%02lld%%)\n", (long long)r->peak_gpus,
	       (long long)r->total_gpus, (long long)(peak_bp / 100), (long long)(peak_bp % 100));
	printf("  mean GPU use       %lld.%02lld%%\n", (long long)(util_bp / 100),
	       (long long)(util_bp % 100));
	printf("  peak nodes         %lld in all;", (long long)r->peak_nodes);
	for (size_t i = 0; i < r->w->nqueues; i++)
		printf(" queue %s %lld,", r->w->queues[i].name,
		       (long long)r->w->queues[i].peak_nodes);
	printf(" tasks %lld\n", (long long)r->peak_batch_nodes);
	printf("  runs               %" PRIu64 " started, %" PRIu64 " failed, %" PRIu64
	       " cut short, %zu still running\n",
	       ss.started, ss.failed, ss.signalled, jf_sim_running(r->be));
	printf("  ledger             %lld node-seconds, %s\n", (long long)secs, money);
}

/* ---- budgets ---- */

#define BUDGET_TIMES_SHOWN 8

/* "N times: T1, T2, ..." of the queue's events of reason, into buf. */
static void budget_times(const struct replay *r, const char *events, const char *reason, char *buf,
			 size_t n)
{
	char key[48];
	snprintf(key, sizeof(key), " %s queue ", reason);
	size_t off = 0;
	int count = 0;
	buf[0] = '\0';
	for (const char *l = events; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		const char *hit = strstr(l, key);
		if (hit && hit < l + len) {
			char ts[JF_TIME_BUF];
			const char *sp = memchr(l, ' ', len);
			int64_t ms = 0;
			snprintf(ts, sizeof(ts), "%.*s", sp ? (int)(sp - l) : 0, l);
			if (++count <= BUDGET_TIMES_SHOWN && jf_time_parse_rfc3339(ts, &ms) &&
			    off < n) {
				char rel[32];
				jf_simr_rel_time(ms - r->t0, rel, sizeof(rel));
				off += (size_t)snprintf(buf + off, n - off, "%s%s",
							count > 1 ? ", " : "", rel);
			} else if (count == BUDGET_TIMES_SHOWN + 1 && off < n) {
				off += (size_t)snprintf(buf + off, n - off, ", ...");
			}
		}
		l = nl ? nl + 1 : NULL;
	}
	char head[32];
	snprintf(head, sizeof(head), "%d time%s%s", count, count == 1 ? "" : "s",
		 count ? ": " : "");
	size_t hl = strlen(head);
	if (hl + strlen(buf) + 1 <= n) {
		memmove(buf + hl, buf, strlen(buf) + 1);
		memcpy(buf, head, hl);
	}
}

int jf_simr_print_budgets(struct replay *r, int64_t now)
{
	bool first = true;
	for (size_t i = 0; i < r->w->nqueues; i++) {
		const struct wqueue *wq = &r->w->queues[i];
		struct jf_queue_spec s;
		if (!wq->spec || jf_queue_spec_parse(wq->spec, wq->spec_len, &s, NULL) != JF_OK)
			continue;
		if (!s.budget_set) {
			jf_queue_spec_release(&s);
			continue;
		}
		int64_t size = 0;
		size_t got = 0;
		char *ev = NULL;
		if (jf_event_size(r->st, JF_SCOPE_QUEUE, wq->id, &size) == JF_OK &&
		    size < (64 << 20) && (ev = malloc((size_t)size + 1)) &&
		    jf_event_read(r->st, JF_SCOPE_QUEUE, wq->id, 0, ev, (size_t)size, &got) !=
			    JF_OK)
			got = 0;
		if (!ev) {
			jf_queue_spec_release(&s);
			return -1;
		}
		ev[got] = '\0';
		struct jf_budget_seg *segs = NULL;
		size_t n = 0;
		int64_t base = 0, spent = 0;
		if (jf_ledger_budget_segs(r->st, wq->id, s.budget_period, now, &segs, &n, &base) ==
		    JF_OK)
			spent = jf_budget_spent(segs, n, base, now, s.budget_period);
		free(segs);
		char budget[48], used[48], per[32] = "", ex[512], av[512];
		jf_money_format(s.budget, r->cl->currency, budget, sizeof(budget));
		jf_money_format(spent, r->cl->currency, used, sizeof(used));
		if (s.budget_period)
			jf_duration_format(s.budget_period, per, sizeof(per));
		budget_times(r, ev, "BudgetExhausted", ex, sizeof(ex));
		budget_times(r, ev, "BudgetAvailable", av, sizeof(av));
		free(ev);
		if (first)
			printf("\nbudgets\n");
		first = false;
		printf("  queue %s: %s%s%s, budget_action %s\n", wq->name, budget,
		       per[0] ? " per " : "", per, s.budget_stop ? "stop" : "hold");
		printf("    exhausted        %s\n", ex);
		printf("    available again  %s\n", av);
		printf("    spent at the end %s %s%s\n", used, per[0] ? "in the last " : "in all",
		       per);
		jf_queue_spec_release(&s);
	}
	return 0;
}

/* ---- the spot report ---- */

struct i64s { /* a growing list of numbers */
	int64_t *v;
	size_t n, cap;
};

static bool i64s_push(struct i64s *a, int64_t x)
{
	if (a->n == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 256;
		int64_t *p = realloc(a->v, ncap * sizeof(*p));
		if (!p)
			return false;
		a->v = p;
		a->cap = ncap;
	}
	a->v[a->n++] = x;
	return true;
}

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* The p-th percentile by nearest rank of a sorted list (n > 0). */
static int64_t nearest_rank(const struct i64s *a, int p)
{
	size_t k = (size_t)(((uint64_t)a->n * (uint64_t)p + 99) / 100);
	return a->v[k ? k - 1 : 0];
}

#define SPOT_COLUMNS "%-*s  %-12s  %6s  %6s  %7s  %-10s  %-10s  %-10s  %-10s  %9s  %8s  %9s  %12s\n"

/* One submit[] item's spot groups, added up. */
struct spot_acc {
	int64_t unit_runtime; /* seconds; 0 none; -1 when its groups differ */
	int64_t groups, tasks, preempted;
	int64_t run_ms;           /* succeeded attempts, node 0 */
	int64_t wasted_gpu_ms;    /* ended attempts that did not complete their task */
	struct i64s waits, dones; /* ms from submission, per task */
	struct i64s ids;          /* scratch: a group's task ids */
};

struct task_page {
	struct i64s *ids;
	int64_t last_idx;
	bool oom;
};

static int collect_task(void *ctx, int64_t id, int64_t idx)
{
	struct task_page *p = ctx;
	p->last_idx = idx;
	if (i64s_push(p->ids, id))
		return 0;
	p->oom = true;
	return 1;
}

static int gpus_in(const char *ids)
{
	int n = *ids ? 1 : 0;
	for (; *ids; ids++)
		n += *ids == ',';
	return n;
}

/* Task-level Preempted events of a group: one per attempt cut short for
 * on-demand work (the nodes' own Preempted events name .../nodes/N). */
static int count_preempted(struct jf_store *st, int64_t gid, int64_t *n)
{
	struct ecur c = { .id = gid };
	if (!(c.buf = malloc(EVBUF)))
		return -1;
	for (ecur_next(st, &c); c.line; ecur_next(st, &c)) {
		/* TIME TYPE REASON OBJECT MESSAGE */
		const char *p = c.line, *end = c.line + c.linelen, *tok[4];
		size_t len[4];
		int k = 0;
		for (; k < 4 && p < end; k++) {
			const char *sp = memchr(p, ' ', (size_t)(end - p));
			tok[k] = p;
			len[k] = sp ? (size_t)(sp - p) : (size_t)(end - p);
			p = sp ? sp + 1 : end;
		}
		if (k == 4 && len[2] == 9 && memcmp(tok[2], "Preempted", 9) == 0 &&
		    !memmem(tok[3], len[3], "/nodes/", 7))
			(*n)++;
	}
	free(c.buf);
	return 0;
}

/* Add one spot group's tasks to a. */
static int spot_add_group(struct replay *r, int64_t gid, int64_t now, struct spot_acc *a)
{
	struct jf_group_rec g;
	if (jf_group_get(r->st, gid, &g) != JF_OK)
		return 0;
	int64_t submitted = g.submitted_ms, nodes = g.nodes > 0 ? g.nodes : 1;
	jf_group_release(&g);
	a->groups++;
	a->ids.n = 0;
	struct task_page pg = { .ids = &a->ids, .last_idx = -1 };
	for (;;) {
		size_t before = a->ids.n;
		if (jf_task_list(r->st, gid, pg.last_idx, 1024, collect_task, &pg) != JF_OK ||
		    pg.oom || a->ids.n == before)
			break;
	}
	if (pg.oom)
		return -1;
	for (size_t i = 0; i < a->ids.n; i++) {
		struct jf_task_rec t;
		if (jf_task_get(r->st, a->ids.v[i], &t) != JF_OK)
			continue;
		bool ok = t.state == JF_ST_SUCCEEDED;
		int64_t finished = t.finished_ms, tid = t.id;
		jf_task_release(&t);
		a->tasks++;
		int64_t first = 0;
		for (int64_t n = 0; n < nodes; n++) {
			struct jf_node_rec nr;
			if (jf_node_find(r->st, tid, n, &nr) != JF_OK)
				continue;
			int64_t node_id = nr.id, last = nr.attempt;
			jf_node_release(&nr);
			for (int64_t k = 1; k <= last; k++) {
				struct jf_attempt_rec ar;
				if (jf_attempt_find(r->st, node_id, k, &ar) != JF_OK)
					continue;
				int64_t s = ar.start_ms, e = ar.end_ms;
				int gpus = gpus_in(ar.gpu_ids);
				jf_attempt_release(&ar);
				if (s <= 0)
					continue; /* never started */
				if (!first || s < first)
					first = s;
				if (e <= 0 || e > now)
					continue; /* still running */
				if (ok && k == last) {
					if (n == 0)
						a->run_ms += e - s;
				} else {
					a->wasted_gpu_ms += (e - s) * gpus;
				}
			}
		}
		if (first && !i64s_push(&a->waits, first - submitted))
			return -1;
		if (ok && finished && !i64s_push(&a->dones, finished - submitted))
			return -1;
	}
	return count_preempted(r->st, gid, &a->preempted);
}

/* "12.34": hundredths of a value, rounded half up (v >= 0, d > 0). */
static void fixed2(int64_t v, int64_t d, char *buf, size_t n)
{
	int64_t h = (v * 100 + d / 2) / d;
	snprintf(buf, n, "%lld.%02lld", (long long)(h / 100), (long long)(h % 100));
}

static void spot_line(const struct wentry *ent, struct spot_acc *a, int lw)
{
	char unit[32], mean[32], med[32], p90[32], done[32], per[32], perh[32], waste[32];
	if (a->unit_runtime > 0)
		jf_duration_format(a->unit_runtime, unit, sizeof(unit));
	else
		snprintf(unit, sizeof(unit), "%s", a->unit_runtime < 0 ? "mixed" : "-");
	if (a->waits.n) {
		int64_t sum = 0;
		for (size_t i = 0; i < a->waits.n; i++)
			sum += a->waits.v[i];
		qsort(a->waits.v, a->waits.n, sizeof(int64_t), i64_cmp);
		jf_simr_rel_time(sum / (int64_t)a->waits.n / 1000 * 1000, mean, sizeof(mean));
		jf_simr_rel_time(nearest_rank(&a->waits, 50), med, sizeof(med));
		jf_simr_rel_time(nearest_rank(&a->waits, 90), p90, sizeof(p90));
	} else {
		jf_simr_rel_time(-1, mean, sizeof(mean));
		jf_simr_rel_time(-1, med, sizeof(med));
		jf_simr_rel_time(-1, p90, sizeof(p90));
	}
	if (a->dones.n) {
		qsort(a->dones.v, a->dones.n, sizeof(int64_t), i64_cmp);
		jf_simr_rel_time(nearest_rank(&a->dones, 50), done, sizeof(done));
	} else {
		jf_simr_rel_time(-1, done, sizeof(done));
	}
	if (a->tasks)
		fixed2(a->preempted, a->tasks, per, sizeof(per));
	else
		snprintf(per, sizeof(per), "-");
	if (a->run_ms)
		fixed2(a->preempted * 3600000, a->run_ms, perh, sizeof(perh));
	else
		snprintf(perh, sizeof(perh), "-");
	fixed2(a->wasted_gpu_ms, 3600000, waste, sizeof(waste));
	char groups[24], tasks[24], started[24], preempted[24];
	snprintf(groups, sizeof(groups), "%lld", (long long)a->groups);
	snprintf(tasks, sizeof(tasks), "%lld", (long long)a->tasks);
	snprintf(started, sizeof(started), "%lld", (long long)a->waits.n);
	snprintf(preempted, sizeof(preempted), "%lld", (long long)a->preempted);
	printf(SPOT_COLUMNS, lw, ent->label, unit, groups, tasks, started, mean, med, p90, done,
	       preempted, per, perh, waste);
}

/* The spot report (tools/jobfs_sim.c, SPOT REPORT), when there is spot work.
 * Returns 0, or -1 when out of memory. */
int jf_simr_print_spot(struct replay *r, int64_t now, bool overridden)
{
	int lw = 6;
	bool any = false;
	for (size_t i = 0; i < r->ngroups; i++) {
		const struct jf_spec *sp = jf_engine_spec(r->e, r->groups[i].id);
		if (!sp || sp->billing != JF_BILL_SPOT)
			continue;
		any = true;
		int l = (int)strlen(r->w->entries[r->groups[i].entry].label);
		if (l > lw)
			lw = l;
	}
	if (!any)
		return 0;
	double thr = r->cl->spot_risk_max;
	printf("\nspot: risk threshold %.2f (%s)%s\n", thr,
	       overridden ? "--spot-risk-threshold" : "cluster",
	       thr >= 1.0 ? ", forecast off" : "");
	printf(SPOT_COLUMNS, lw, "series", "unit_runtime", "groups", "tasks", "started",
	       "start-mean", "start-p50", "start-p90", "done-p50", "preempted", "per-task",
	       "per-run-h", "wasted-GPU-h");
	struct spot_acc a;
	memset(&a, 0, sizeof(a));
	int rc = 0;
	for (size_t k = 0; k < r->w->nentries && rc == 0; k++) {
		a.unit_runtime = 0;
		a.groups = a.tasks = a.preempted = a.run_ms = a.wasted_gpu_ms = 0;
		a.waits.n = a.dones.n = 0;
		for (size_t i = 0; i < r->ngroups && rc == 0; i++) {
			if (r->groups[i].entry != k)
				continue;
			const struct jf_spec *sp = jf_engine_spec(r->e, r->groups[i].id);
			if (!sp || sp->billing != JF_BILL_SPOT)
				continue;
			if (a.groups == 0)
				a.unit_runtime = sp->unit_runtime;
			else if (a.unit_runtime != sp->unit_runtime)
				a.unit_runtime = -1;
			rc = spot_add_group(r, r->groups[i].id, now, &a);
		}
		if (rc == 0 && a.groups)
			spot_line(&r->w->entries[k], &a, lw);
	}
	free(a.waits.v);
	free(a.dones.v);
	free(a.ids.v);
	return rc;
}

/* ---- why it waited and how well its start was predicted ---- */

int jf_simr_print_why(struct replay *r)
{
	int lw = 5;
	for (size_t i = 0; i < r->ngroups; i++) {
		int l = (int)strlen(r->groups[i].label);
		if (l > lw)
			lw = l;
	}
	printf("\nwaiting before the first start, by reason\n");
	printf("%-*s  %s\n", lw, "group", "reason=time ...");
	int64_t total[JF_REASON__COUNT] = { 0 };
	for (size_t i = 0; i < r->ngroups; i++) {
		const struct sgroup *g = &r->groups[i];
		char line[1024];
		size_t at = 0;
		line[0] = '\0';
		for (int k = 1; k < JF_REASON__COUNT; k++) {
			if (!g->wait_ms[k])
				continue;
			total[k] += g->wait_ms[k];
			char d[32];
			jf_simr_rel_time(g->wait_ms[k], d, sizeof(d));
			int n = snprintf(line + at, sizeof(line) - at, "%s%s=%s", at ? " " : "",
					 jf_reason_name((enum jf_reason)k), d);
			if (n > 0 && (size_t)n < sizeof(line) - at)
				at += (size_t)n;
		}
		printf("%-*s  %s\n", lw, g->label, at ? line : "-");
	}
	char line[1024];
	size_t at = 0;
	line[0] = '\0';
	for (int k = 1; k < JF_REASON__COUNT; k++) {
		if (!total[k])
			continue;
		char d[32];
		jf_simr_rel_time(total[k], d, sizeof(d));
		int n = snprintf(line + at, sizeof(line) - at, "%s%s=%s", at ? " " : "",
				 jf_reason_name((enum jf_reason)k), d);
		if (n > 0 && (size_t)n < sizeof(line) - at)
			at += (size_t)n;
	}
	printf("%-*s  %s\n", lw, "(all)", at ? line : "-");

	/* the ETAs: |predicted - actual| of the first start, per basis */
	printf("\neta accuracy (the first eta while it waited, against its first start)\n");
	printf("%-12s  %7s  %12s  %12s  %12s\n", "basis", "groups", "median err", "p90 err",
	       "median bias");
	for (int basis = 0; basis < 2; basis++) {
		if (basis == 1 && !r->eta) {
			printf("%-12s  %7s  (run with --eta)\n", "simulation", "-");
			continue;
		}
		struct i64s err = { 0 }, bias = { 0 };
		for (size_t i = 0; i < r->ngroups; i++) {
			const struct sgroup *g = &r->groups[i];
			int64_t pred = basis ? g->pred_sim_ms : g->pred_resv_ms;
			struct jf_group_rec rec;
			if (!pred || jf_group_get(r->st, g->id, &rec) != JF_OK)
				continue;
			int64_t real = rec.started_ms;
			jf_group_release(&rec);
			if (!real)
				continue;
			int64_t d = (pred - real) / 1000;
			if (!i64s_push(&err, d < 0 ? -d : d) || !i64s_push(&bias, d)) {
				free(err.v);
				free(bias.v);
				return -1;
			}
		}
		char m[32] = "-", p90[32] = "-", b[40] = "-";
		if (err.n) {
			qsort(err.v, err.n, sizeof(*err.v), i64_cmp);
			qsort(bias.v, bias.n, sizeof(*bias.v), i64_cmp);
			jf_simr_rel_time(nearest_rank(&err, 50) * 1000, m, sizeof(m));
			jf_simr_rel_time(nearest_rank(&err, 90) * 1000, p90, sizeof(p90));
			int64_t bm = nearest_rank(&bias, 50);
			char bb[32];
			jf_simr_rel_time((bm < 0 ? -bm : bm) * 1000, bb, sizeof(bb));
			snprintf(b, sizeof(b), "%s%s", bm < 0 ? "-" : "+", bb);
		}
		printf("%-12s  %7zu  %12s  %12s  %12s\n", basis ? "simulation" : "reservation",
		       err.n, m, p90, b);
		free(err.v);
		free(bias.v);
	}
	return 0;
}
