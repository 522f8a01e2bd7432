/*
 * render.c - the contents of the tree's rendered files.
 *
 * Rendered files (README, spec.yaml, status, cost, ctl, allocation, the
 * cluster and billing files) are produced whole into a heap buffer; what
 * stat reports is the length of that buffer, and an open serves the same
 * buffer (see resolve.c's cache), so `cat`, `cp`, `tar` and `jq` read
 * exactly what stat promised.  Streamed files (events, logs, watch) are
 * read at their offset instead; `watch` is served by name but not listed
 * (inode.c's jf_file_listed), as its read waits for the next change.
 *
 * The billing files (/billing/ledger.csv, summary, cost) show each reader
 * only the rows they may see: a private queue's rows to its owner and the
 * admins (perm.c's rule for anything inside the queue), the rows of a
 * queue removed since to the admins only (whether it was private is not
 * known any more); totals and the cost are those of the rows shown.  So
 * they are rendered, and cached, per reader.
 */
#include "fs/fs_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/billing.h"
#include "core/forecast.h"
#include "core/quantity.h"
#include "core/sched.h"
#include "core/timefmt.h"

bool jf_file_rendered(enum jf_file f)
{
	switch (f) {
	case JF_F_EVENTS:
	case JF_F_WATCH:
	case JF_F_LOGS:
	case JF_F_STDOUT:
	case JF_F_STDERR:
	case JF_F_LOGS_PREV:
	case JF_F_DATA:
	case JF_F_DIR:
		return false;
	default:
		return true;
	}
}

static const char readme_text[] =
	"jobfs: a batch-job platform driven with files\n"
	"\n"
	"  mkdir queues/Q                  make a queue; queues/Q/spec.yaml sets capacity\n"
	"  mkdir queues/Q/groups/G         a draft group; writing G/spec.yaml submits it\n"
	"  mkdir tasks/T                   independent tasks; T/spec.yaml with count: N\n"
	"  cat .../status  status.json     state, counts, cost, times (fresh on every read)\n"
	"  tail -f .../events  .../logs    follow events and a node's stdout+stderr\n"
	"  cat .../watch                   block until the object changes; a line per change\n"
	"                                  (beside every events file; not listed, so that\n"
	"                                  grep -r, cp -r and tar end: open it by name)\n"
	"  echo stop > .../ctl             pause | resume | stop | restart\n"
	"  after: [a, {group: tasks/b, when: failed}]   in a spec: start once those have\n"
	"                                  ended so (succeeded | failed | finished)\n"
	"  cat billing/ledger.csv          one row per billed segment; billing/summary\n"
	"  cat cluster/gpus                GPU models, stock and prices\n"
	"  open G/timeline.svg             plots (SVG, any browser or notebook): a group's\n"
	"                                  or batch's attempts; cluster/usage.svg GPUs in\n"
	"                                  use and forecast; billing/cost.svg cost per queue\n"
	"  ls images/                      the image cache; rmdir images/I drops an unused one\n"
	"  mkdir volumes/V                 a shared volume; cp -r code volumes/V/data/\n"
	"  mkdir objects/O                 an S3 prefix cached read-only: O/spec.yaml says\n"
	"                                  endpoint, bucket, prefix; echo resync > O/ctl\n"
	"\n"
	"Layout:\n"
	"  queues/<q>/groups/<g>/tasks/<t>/nodes/<n>/{status,events,logs,stdout,stderr,logs.prev}\n"
	"  .../nodes/<n>/attempts/<a>/{status,logs,stdout,stderr}  every attempt, a = 1, 2, ...\n"
	"  tasks/<name>/<i>-<name>/nodes/<n>/...\n"
	"\n"
	"A spec is checked when the file is closed: a bad one is refused (EINVAL),\n"
	"status says state: Invalid and why, and the draft can be written again;\n"
	"an emptied one (: > spec.yaml) makes a draft again. Once accepted it is\n"
	"read-only (EACCES). rm -rf removes a finished group (EBUSY while live).\n"
	"The tree keeps only what jobfs makes: other files, links, chmod and mv\n"
	"to another queue are EPERM, and the events say why.\n";

static int dup_out(const char *s, size_t n, char **out, size_t *len)
{
	char *b = malloc(n + 1);
	if (!b)
		return ENOMEM;
	memcpy(b, s, n);
	b[n] = '\0';
	*out = b;
	*len = n;
	return 0;
}

/* ---- what a reader may see of the ledger ---- */

struct view {
	struct jf_ledger_view v;
	int64_t *ids;
	size_t n, cap;
	struct jf_fs *fs;
	uid_t reader;
	int64_t last; /* the last queue id listed */
	int seen;     /* queues listed in this page */
	bool oom;
};

static int view_queue(void *ctx, int64_t id, const char *name)
{
	(void)name;
	struct view *w = ctx;
	w->last = id;
	w->seen++;
	struct jf_queue_rec q;
	if (jf_queue_get(ST(w->fs), id, &q) != JF_OK)
		return 0;
	struct jf_perm_obj o = {
		.obj = JF_O_QUEUE,
		.file = JF_F_STATUS,
		.owner = q.uid,
		.queue_owner = q.uid,
		.in_queue = true,
		.private_ = jf_perm_queue_private(q.spec),
	};
	jf_queue_release(&q);
	if (jf_perm_check(&w->fs->perm, &o, w->reader, JF_PERM_READ) != 0)
		return 0;
	if (w->n == w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 16;
		int64_t *p = realloc(w->ids, ncap * sizeof(*p));
		if (!p) {
			w->oom = true;
			return 1;
		}
		w->ids = p;
		w->cap = ncap;
	}
	w->ids[w->n++] = id;
	return 0;
}

bool jf_file_per_reader(const struct jf_ino *ino)
{
	return ino->obj == JF_O_BILLING && (ino->file == JF_F_LEDGER || ino->file == JF_F_SUMMARY ||
					    ino->file == JF_F_COST || ino->file == JF_F_COST_SVG);
}

bool jf_render_per_reader(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader)
{
	return jf_file_per_reader(ino) && !jf_perm_admin(&fs->perm, reader);
}

/* The view of reader: NULL for an admin (every row), else the queues it
 * may look into (view_free it).  ENOMEM: *err. */
static const struct jf_ledger_view *view_of(struct jf_fs *fs, uid_t reader, struct view *w,
					    int *err)
{
	memset(w, 0, sizeof(*w));
	*err = 0;
	if (jf_perm_admin(&fs->perm, reader))
		return NULL;
	w->fs = fs;
	w->reader = reader;
	/* page by id through every queue (ids ascend, so the view is sorted) */
	do {
		w->seen = 0;
		jf_queue_list(ST(fs), w->last, 256, view_queue, w);
	} while (w->seen == 256 && !w->oom);
	if (w->oom)
		*err = ENOMEM;
	w->v.queues = w->ids;
	w->v.nqueues = w->n;
	return &w->v;
}

static void view_free(struct view *w)
{
	free(w->ids);
}

/* Closed (now_ms 0) or billed-to-now totals of the rows view v shows. */
static void view_sum(struct jf_fs *fs, const struct jf_ledger_view *v, int64_t now_ms,
		     int64_t *amount, int64_t *seconds)
{
	*amount = *seconds = 0;
	if (!v) {
		jf_ledger_sum(ST(fs), JF_SCOPE_ALL, 0, now_ms, amount, seconds);
		return;
	}
	/* independent batches (queue 0), then each queue shown */
	for (size_t i = 0; i <= v->nqueues; i++) {
		int64_t a = 0, s = 0;
		jf_ledger_sum(ST(fs), JF_SCOPE_QUEUE, i ? v->queues[i - 1] : 0, now_ms, &a, &s);
		*amount = jf_bill_add(*amount, a);
		*seconds = jf_bill_add(*seconds, s);
	}
}

static int render_cost(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader, char **out,
		       size_t *len)
{
	enum jf_scope scope;
	int64_t id = ino->id;
	switch (ino->obj) {
	case JF_O_QUEUE:
		scope = JF_SCOPE_QUEUE;
		break;
	case JF_O_GROUP:
		scope = JF_SCOPE_GROUP;
		break;
	case JF_O_TASK:
		scope = JF_SCOPE_TASK;
		break;
	case JF_O_BILLING: {
		/* the rows reader sees: every one, or those of the view */
		struct view w;
		int err;
		const struct jf_ledger_view *v = view_of(fs, reader, &w, &err);
		int64_t amount = 0, seconds = 0;
		if (!err)
			view_sum(fs, v, jf_engine_now(fs->e), &amount, &seconds);
		view_free(&w);
		if (err)
			return err;
		char buf[96];
		jf_money_format(amount, jf_engine_cluster(fs->e)->currency, buf, sizeof(buf));
		size_t n = strlen(buf);
		buf[n++] = '\n';
		return dup_out(buf, n, out, len);
	}
	case JF_O_NODE: {
		scope = JF_SCOPE_NODE;
		struct jf_node_rec n;
		if (jf_node_find(ST(fs), id >> JF_NODE_BITS, id & JF_NODE_MASK, &n) != JF_OK) {
			id = 0;
		} else {
			id = n.id;
			jf_node_release(&n);
		}
		break;
	}
	default:
		return ENOENT;
	}
	int64_t amount = 0, seconds = 0;
	if (id)
		jf_ledger_sum(ST(fs), scope, id, jf_engine_now(fs->e), &amount, &seconds);
	char buf[96];
	jf_money_format(amount, jf_engine_cluster(fs->e)->currency, buf, sizeof(buf));
	size_t n = strlen(buf);
	buf[n++] = '\n';
	return dup_out(buf, n, out, len);
}

static int render_spec(struct jf_fs *fs, const struct jf_ino *ino, char **out, size_t *len)
{
	if (ino->obj == JF_O_VOLUME || ino->obj == JF_O_OBJSRC) {
		struct jf_store_rec r;
		if (jf_stor_get(ST(fs), ino->id, &r) != JF_OK)
			return ENOENT;
		int rc = dup_out(r.spec, strlen(r.spec), out, len);
		jf_stor_release(&r);
		return rc;
	}
	if (ino->obj == JF_O_QUEUE) {
		struct jf_queue_rec q;
		if (jf_queue_get(ST(fs), ino->id, &q) != JF_OK)
			return ENOENT;
		int rc = dup_out(q.spec, strlen(q.spec), out, len);
		jf_queue_release(&q);
		return rc;
	}
	struct jf_group_rec g;
	if (jf_group_get(ST(fs), ino->id, &g) != JF_OK)
		return ENOENT;
	const char *t = g.spec ? g.spec : g.draft ? g.draft : "";
	int rc = dup_out(t, strlen(t), out, len);
	jf_group_release(&g);
	return rc;
}

static void fmt_money_plain(int64_t micro, char *buf, size_t n)
{
	/* "3.60 CNY" without the currency */
	char tmp[64];
	jf_money_format(micro, "X", tmp, sizeof(tmp));
	char *sp = strchr(tmp, ' ');
	if (sp)
		*sp = '\0';
	snprintf(buf, n, "%s", tmp);
}

static int render_gpus(struct jf_fs *fs, char **out, size_t *len)
{
	const struct jf_cluster *c = jf_engine_cluster(fs->e);
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return ENOMEM;
	fprintf(f, "%-6s %-6s %-7s %-7s %-8s %-8s %-4s %-4s %-6s %-9s %-9s %s\n", "model", "vram",
		"cpu/gpu", "mem/gpu", "configs", "machines", "gpus", "free", "stock", "on-demand",
		"spot", "currency");
	for (size_t mi = 0; mi < c->nmodels; mi++) {
		const struct jf_gpu_model *m = &c->models[mi];
		int machines = 0, gpus = 0, freeg = 0, most = 0;
		for (size_t i = 0; i < c->nmachines; i++) {
			if (c->machines[i].model != mi)
				continue;
			struct jf_view_machine vm;
			jf_engine_view_use(fs->e, i, &vm);
			machines++;
			gpus += c->machines[i].gpus;
			freeg += c->machines[i].gpus - __builtin_popcountll(vm.u.gpu_mask);
			if (c->machines[i].gpus > most)
				most = c->machines[i].gpus;
		}
		char configs[32] = "";
		size_t off = 0;
		for (int k = 1; k <= 8 && k <= most; k *= 2)
			off += (size_t)snprintf(configs + off, sizeof(configs) - off, "%s%d",
						off ? "," : "", k);
		/* stock: plenty when at least a quarter of the GPUs are free */
		const char *stock = gpus == 0 || freeg == 0 ? "none"
				    : freeg * 4 >= gpus     ? "plenty"
							    : "tight";
		char vram[32], cpu[32], mem[32], od[64], sp[64];
		jf_mem_format(m->vram_bytes, vram, sizeof(vram));
		jf_cpu_format(m->cpu_milli_per_gpu, cpu, sizeof(cpu));
		jf_mem_format(m->mem_bytes_per_gpu, mem, sizeof(mem));
		fmt_money_plain(m->price_ondemand, od, sizeof(od));
		fmt_money_plain(m->price_spot, sp, sizeof(sp));
		fprintf(f, "%-6s %-6s %-7s %-7s %-8s %-8d %-4d %-4d %-6s %-9s %-9s %s\n", m->name,
			vram, cpu, mem, configs, machines, gpus, freeg, stock, od, sp, c->currency);
	}
	if (fclose(f) != 0) {
		free(buf);
		return ENOMEM;
	}
	*out = buf;
	return 0;
}

/* /cluster/settings: the cluster-wide rules, as YAML key: value lines */
static int render_settings(struct jf_fs *fs, char **out, size_t *len)
{
	const struct jf_cluster *c = jf_engine_cluster(fs->e);
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return ENOMEM;
	char od[64], sp[64];
	fmt_money_plain(c->cpu_price_ondemand, od, sizeof(od));
	fmt_money_plain(c->cpu_price_spot, sp, sizeof(sp));
	fprintf(f, "name: %s\ncurrency: %s\n", c->name, c->currency);
	fprintf(f, "preempt_grace: %llds\n", (long long)c->preempt_grace_s);
	fprintf(f, "spot_risk_threshold: %g\n", c->spot_risk_max);
	fprintf(f, "cpu_price: {on-demand: \"%s\", spot: \"%s\"}\n", od, sp);
	fprintf(f, "models: %zu\nmachines: %zu\n", c->nmodels, c->nmachines);
	char tbuf[512];
	const char *trouble = jf_engine_view_trouble(fs->e, tbuf, sizeof(tbuf)) ? tbuf : NULL;
	fprintf(f, "backend: %s\nbackend_state: %s\n", jf_engine_backend_name(fs->e),
		trouble ? "unreachable" : "reachable");
	if (trouble) {
		fputs("backend_message: \"", f);
		for (const char *p = trouble; *p; p++)
			fputc(*p == '"' || *p == '\\' || (unsigned char)*p < 0x20 ? '\'' : *p, f);
		fputs("\"\n", f);
	}
	if (fclose(f) != 0) {
		free(buf);
		return ENOMEM;
	}
	*out = buf;
	return 0;
}

static int render_forecast(struct jf_fs *fs, char **out, size_t *len)
{
	const struct jf_cluster *c = jf_engine_cluster(fs->e);
	const struct jf_forecast **f = calloc(c->nmodels ? c->nmodels : 1, sizeof(*f));
	const char **names = calloc(c->nmodels ? c->nmodels : 1, sizeof(*names));
	size_t n = 0;
	for (size_t m = 0; f && names && m < c->nmodels; m++) {
		const struct jf_forecast *fm = jf_engine_forecast(fs->e, m);
		if (!fm)
			continue;
		f[n] = fm;
		names[n++] = c->models[m].name;
	}
	char *body = f && names ? jf_forecast_render(f, names, n, jf_engine_now(fs->e)) : NULL;
	free(f);
	free(names);
	if (!body)
		return ENOMEM;
	static const char note[] = "# spot risk by the recorded on-demand demand (README: "
				   "Spot forecast); spot tasks with a unit_runtime start while "
				   "their risk is at most /cluster/settings spot_risk_threshold\n";
	size_t blen = strlen(body);
	char *buf = malloc(sizeof(note) + blen);
	if (!buf) {
		free(body);
		return ENOMEM;
	}
	memcpy(buf, note, sizeof(note) - 1);
	memcpy(buf + sizeof(note) - 1, body, blen + 1);
	free(body);
	*out = buf;
	*len = sizeof(note) - 1 + blen;
	return 0;
}

struct ledger_ctx {
	FILE *f;
	int64_t last;
	int n;
	const struct jf_ledger_view *v;
};

static int ledger_row(void *ctx, const struct jf_ledger_rec *r)
{
	struct ledger_ctx *l = ctx;
	l->last = r->seq;
	l->n++;
	if (!jf_ledger_view_has(l->v, r->queue_id))
		return 0;
	char start[40], end[40], rate[64], amount[64];
	jf_time_rfc3339(r->start_ms, start, sizeof(start));
	jf_time_rfc3339(r->end_ms, end, sizeof(end));
	fmt_money_plain(r->rate, rate, sizeof(rate));
	fmt_money_plain(r->amount, amount, sizeof(amount));
	fprintf(l->f, "%lld,%s,%s,%lld,%lld,%lld,%s,%s,%lld,%s,%s,%lld,%s,%s\n", (long long)r->id,
		r->queue, r->group, (long long)r->task_idx, (long long)r->node_idx,
		(long long)r->attempt, r->billing, r->gpu, (long long)r->gpus, start, end,
		(long long)r->seconds, rate, amount);
	return 0;
}

static int render_ledger(struct jf_fs *fs, uid_t reader, char **out, size_t *len)
{
	struct view w;
	int err;
	const struct jf_ledger_view *v = view_of(fs, reader, &w, &err);
	char *buf = NULL;
	FILE *f = err ? NULL : open_memstream(&buf, len);
	if (!f) {
		view_free(&w);
		return ENOMEM;
	}
	fputs("segment_id,queue,group,task,node,attempt,billing,gpu,gpus,start,end,seconds,"
	      "rate_per_hour,amount\n",
	      f);
	struct ledger_ctx l = { f, 0, 0, v };
	do {
		l.n = 0;
		jf_ledger_list(ST(fs), l.last, 1000, ledger_row, &l);
	} while (l.n == 1000);
	view_free(&w);
	if (fclose(f) != 0) {
		free(buf);
		return ENOMEM;
	}
	*out = buf;
	return 0;
}

struct sum_ctx {
	FILE *f;
	const char *currency;
};

static int summary_row(void *ctx, const char *key, int64_t amount, int64_t seconds)
{
	struct sum_ctx *s = ctx;
	char m[64];
	jf_money_format(amount, s->currency, m, sizeof(m));
	fprintf(s->f, "  %-40s %16s %10llds\n", key, m, (long long)seconds);
	return 0;
}

static int render_summary(struct jf_fs *fs, uid_t reader, char **out, size_t *len)
{
	const struct jf_cluster *c = jf_engine_cluster(fs->e);
	struct view w;
	int err;
	const struct jf_ledger_view *v = view_of(fs, reader, &w, &err);
	char *buf = NULL;
	FILE *f = err ? NULL : open_memstream(&buf, len);
	if (!f) {
		view_free(&w);
		return ENOMEM;
	}
	int64_t closed = 0, secs = 0, all = 0, all_secs = 0;
	view_sum(fs, v, 0, &closed, &secs);
	view_sum(fs, v, jf_engine_now(fs->e), &all, &all_secs);
	/* with now = 0 the open segments add nothing: closed is the ledger */
	char m[64];
	jf_money_format(closed, c->currency, m, sizeof(m));
	fprintf(f, "total (ledger.csv): %s, %lld node-seconds\n", m, (long long)secs);
	jf_money_format(all - closed, c->currency, m, sizeof(m));
	fprintf(f, "running now (not yet in the ledger): %s, %lld node-seconds\n", m,
		(long long)(all_secs - secs));
	struct sum_ctx s = { f, c->currency };
	static const char *const by[] = { "queue", "group", "billing", "gpu" };
	for (size_t i = 0; i < 4; i++) {
		fprintf(f, "by %s:\n", by[i]);
		jf_ledger_totals_view(ST(fs), by[i], v, summary_row, &s);
	}
	view_free(&w);
	if (fclose(f) != 0) {
		free(buf);
		return ENOMEM;
	}
	*out = buf;
	return 0;
}

static int render_allocation(struct jf_fs *fs, const struct jf_ino *ino, char **out, size_t *len)
{
	int64_t task_id = ino->id >> JF_NODE_BITS, idx = ino->id & JF_NODE_MASK;
	struct jf_task_rec t;
	if (jf_task_get(ST(fs), task_id, &t) != JF_OK)
		return ENOENT;
	struct jf_group_rec g;
	bool have_g = jf_group_get(ST(fs), t.group_id, &g) == JF_OK;
	const struct jf_spec *s = have_g ? jf_fs_spec(fs, &g) : NULL;
	if (have_g)
		jf_group_release(&g);
	jf_task_release(&t);
	struct jf_node_rec n;
	bool ran = jf_node_find(ST(fs), task_id, idx, &n) == JF_OK;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f) {
		if (ran)
			jf_node_release(&n);
		return ENOMEM;
	}
	struct jf_sched_req req;
	if (!s || !jf_sched_request(jf_engine_cluster(fs->e), s, &req, NULL)) {
		fputs("containers: []\n", f);
	} else {
		fprintf(f, "machine: %s\n", ran ? n.machine : "");
		fprintf(f, "gpu_ids: \"%s\"\n", ran ? n.gpu_ids : "");
		if (s->cpu_exclusive) {
			struct jf_attempt_rec a;
			bool have = ran && n.attempt_id &&
				    jf_attempt_get(ST(fs), n.attempt_id, &a) == JF_OK;
			/* cores no other node shares, one block per GPU */
			fprintf(f, "cpuset: \"%s\"\n", have ? a.cpuset : "");
			if (have)
				jf_attempt_release(&a);
		}
		char cpu[32], mem[32];
		jf_cpu_format(req.cpu_milli, cpu, sizeof(cpu));
		jf_mem_format(req.mem_bytes, mem, sizeof(mem));
		fprintf(f, "node: {cpu: \"%s\", memory: \"%s\", gpus: %d}\n", cpu, mem, req.gpus);
		/* the split across containers (reference 5.3); GPU ids are the node's
		 * own once it ran, else the first ones for the shape */
		uint64_t mask = ran && n.gpu_ids[0] ? jf_gpu_ids_parse(n.gpu_ids)
				: req.gpus >= 64    ? ~UINT64_C(0)
						    : ((UINT64_C(1) << req.gpus) - 1);
		struct jf_alloc *a = NULL;
		char *y = NULL;
		if (jf_alloc_new(req.cpu_milli, req.mem_bytes, req.gpus > 0 ? mask : 0,
				 s->containers, s->ncontainers, &a, NULL) == JF_OK)
			y = jf_alloc_yaml(a);
		fputs(y ? y : "containers: []\n", f);
		free(y);
		jf_alloc_free(a);
	}
	if (ran)
		jf_node_release(&n);
	if (fclose(f) != 0) {
		free(buf);
		return ENOMEM;
	}
	*out = buf;
	return 0;
}

static int render_any(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader, char **out,
		      size_t *len);

/* Does rendering ino read the cluster's machines or a forecast, which the
 * engine changes in place (the view lock, engine.h)? */
static bool reads_view(const struct jf_ino *ino)
{
	return ino->obj == JF_O_CLUSTER || ino->obj == JF_O_MACHINES || ino->obj == JF_O_MACHINE ||
	       ino->file == JF_F_ALLOCATION;
}

int jf_render(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader, char **out, size_t *len)
{
	if (!reads_view(ino))
		return render_any(fs, ino, reader, out, len);
	jf_engine_view_lock(fs->e);
	int rc = render_any(fs, ino, reader, out, len);
	jf_engine_view_unlock(fs->e);
	return rc;
}

static int render_any(struct jf_fs *fs, const struct jf_ino *ino, uid_t reader, char **out,
		      size_t *len)
{
	*out = NULL;
	*len = 0;
	switch (ino->file) {
	case JF_F_README:
		return dup_out(readme_text, sizeof(readme_text) - 1, out, len);
	case JF_F_STATUS:
		return jf_render_status(fs, ino, false, out, len);
	case JF_F_STATUS_JSON:
		return jf_render_status(fs, ino, true, out, len);
	case JF_F_COST:
		return render_cost(fs, ino, reader, out, len);
	case JF_F_SPEC:
		return render_spec(fs, ino, out, len);
	case JF_F_CTL: {
		static const char usage[] = "pause resume stop restart\n";
		return dup_out(usage, sizeof(usage) - 1, out, len);
	}
	case JF_F_GPUS:
		return render_gpus(fs, out, len);
	case JF_F_FORECAST:
		return render_forecast(fs, out, len);
	case JF_F_SETTINGS:
		return render_settings(fs, out, len);
	case JF_F_LEDGER:
		return render_ledger(fs, reader, out, len);
	case JF_F_SUMMARY:
		return render_summary(fs, reader, out, len);
	case JF_F_ALLOCATION:
		return render_allocation(fs, ino, out, len);
	case JF_F_TIMELINE_SVG:
		return jf_render_timeline(fs, ino->id, out, len);
	case JF_F_USAGE_SVG:
		return jf_render_usage(fs, out, len);
	case JF_F_COST_SVG: {
		struct view w;
		int err;
		const struct jf_ledger_view *v = view_of(fs, reader, &w, &err);
		if (!err)
			err = jf_render_cost_svg(fs, v, out, len);
		view_free(&w);
		return err;
	}
	default:
		return EINVAL;
	}
}

/* The file of one attempt's run directory that ino (logs, stdout, stderr) shows. */
static const char *log_name(enum jf_file f)
{
	return f == JF_F_STDOUT ? "stdout" : f == JF_F_STDERR ? "stderr" : "logs";
}

void jf_log_path(struct jf_fs *fs, const struct jf_ino *ino, char *buf, size_t n)
{
	buf[0] = '\0';
	if (ino->obj == JF_O_ATTEMPT) {
		/* its own run directory's, as long as that is kept (retain.c) */
		struct jf_attempt_rec a;
		if (jf_attempt_get(ST(fs), ino->id, &a) != JF_OK)
			return;
		snprintf(buf, n, "%s/%s", a.run_dir, log_name(ino->file));
		jf_attempt_release(&a);
		return;
	}
	if (ino->obj != JF_O_NODE)
		return;
	struct jf_node_rec nr;
	if (jf_node_find(ST(fs), ino->id >> JF_NODE_BITS, ino->id & JF_NODE_MASK, &nr) != JF_OK)
		return;
	int64_t attempt = nr.attempt;
	int64_t node_id = nr.id;
	jf_node_release(&nr);
	const char *name = log_name(ino->file);
	if (ino->file == JF_F_LOGS_PREV)
		attempt--;
	if (attempt < 1)
		return;
	struct jf_attempt_rec a;
	if (jf_attempt_find(ST(fs), node_id, attempt, &a) != JF_OK)
		return;
	snprintf(buf, n, "%s/%s", a.run_dir, name);
	jf_attempt_release(&a);
}

int64_t jf_log_size(const char *path)
{
	char old[4200];
	struct stat sb;
	int64_t size = 0;
	if (!path[0])
		return 0;
	snprintf(old, sizeof(old), "%s.1", path);
	if (stat(old, &sb) == 0)
		size += sb.st_size;
	if (stat(path, &sb) == 0)
		size += sb.st_size;
	return size;
}
