/*
 * engine.c - the engine's life cycle, its caches, events and the clock.
 *
 * Start-up: open tables, mark every machine free, adopt the attempts the
 * store says are running (their processes outlived the last daemon), then
 * schedule.  Shut-down frees memory only: processes and open ledger
 * segments stay for the next daemon.
 */
#include "engine/engine_int.h"

#include "backends/shimproto.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/forecast.h"
#include "core/names.h"
#include "core/quantity.h"
#include "core/timefmt.h"

static int64_t real_now(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t jf_eng_now(struct jf_engine *e)
{
	return e->clock.now_ms(e->clock.ctx);
}

int64_t jf_engine_now(struct jf_engine *e)
{
	return jf_eng_now(e);
}

int64_t jf_eng_from_wall(struct jf_engine *e, int64_t wall_ms)
{
	if (wall_ms <= 0 || !e->clock.skew_ms)
		return wall_ms;
	return wall_ms + e->clock.skew_ms(e->clock.ctx);
}

static enum jf_err forecasts_load(struct jf_engine *e);
static void fail_unparsable(struct jf_engine *e);

enum jf_err jf_engine_new(const struct jf_engine_config *cfg, struct jf_engine **out,
			  struct jf_error *err)
{
	*out = NULL;
	if (!cfg->runner == !cfg->scheduler)
		return jf_error_set(err, JF_EINVAL, 0,
				    "an engine needs exactly one backend: a runner or a scheduler");
	struct jf_engine *e = calloc(1, sizeof(*e));
	if (!e)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	e->state_dir = strdup(cfg->state_dir);
	e->st = cfg->store;
	e->cluster = cfg->cluster;
	e->run = cfg->runner;
	e->sch = cfg->runner ? NULL : cfg->scheduler;
	e->clock = cfg->clock;
	if (!e->clock.now_ms)
		e->clock.now_ms = real_now;
	e->kill_grace_ms = cfg->kill_grace_ms > 0 ? cfg->kill_grace_ms : 10000;
	e->making = true; /* the last daemon may have left task rows to make */
	e->group_deadline_ms = -1;
	e->delegated = e->sch != NULL;
	e->partition_ondemand = strdup(cfg->partition_ondemand ? cfg->partition_ondemand : "");
	e->partition_spot = strdup(cfg->partition_spot ? cfg->partition_spot : "");
	e->array_max = cfg->array_max > 0 ? cfg->array_max : 1000;
	if (e->delegated)
		jf_eng_delegate_machines(e);
	e->keep_logs_ms = cfg->keep_logs_ms > 0 ? cfg->keep_logs_ms : 0;
	e->rt = cfg->runtime;
	e->evict_check_ms = cfg->evict_check_ms;
	e->trash_pending = true; /* the last daemon may have left rows */
	e->log_cap = cfg->log_cap_bytes > 0    ? cfg->log_cap_bytes
		     : cfg->log_cap_bytes == 0 ? JF_LOG_CAP_DEFAULT
					       : 0;
	e->machines =
		calloc(e->cluster->nmachines ? e->cluster->nmachines : 1, sizeof(*e->machines));
	e->use = calloc(e->cluster->nmachines ? e->cluster->nmachines : 1, sizeof(*e->use));
	e->excl = calloc(e->cluster->nmachines ? e->cluster->nmachines : 1, sizeof(*e->excl));
	e->nalloc = e->cluster->nmachines;
	jf_idmap_init(&e->groups);
	jf_idmap_init(&e->tasks);
	jf_idmap_init(&e->runs);
	jf_idmap_init(&e->budgets);
	if (!e->state_dir || !e->machines || !e->use || !e->excl || !e->partition_ondemand ||
	    !e->partition_spot) {
		jf_engine_free(e);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	jf_sched_machines_init(e->cluster, e->machines);
	if (jf_eng_stor_init(e, cfg) != JF_OK || forecasts_load(e) != JF_OK ||
	    jf_eng_why_init(e, cfg->eta) != JF_OK) {
		jf_engine_free(e);
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	}
	jf_eng_budget_load(e);
	jf_eng_enter(e);
	fail_unparsable(e);
	if (e->delegated) {
		jf_eng_delegate_start(e);
		jf_eng_adopt_orphans(e);
	} else {
		jf_eng_adopt_all(e);
	}
	jf_eng_dep_sweep(e);
	jf_eng_schedule(e);
	jf_eng_leave(e);
	*out = e;
	return JF_OK;
}

/* ---- on-demand demand and the spot forecast ---- */

static int feed(void *ctx, int64_t t_ms, int64_t gpus)
{
	jf_forecast_add(ctx, t_ms, (int)gpus);
	return 0;
}

static enum jf_err forecasts_load(struct jf_engine *e)
{
	size_t n = e->cluster->nmodels;
	e->fc = calloc(n ? n : 1, sizeof(*e->fc));
	e->od_use = calloc(n ? n : 1, sizeof(*e->od_use));
	if (!e->fc || !e->od_use)
		return JF_ENOMEM;
	for (size_t m = 0; m < n; m++) {
		int total = 0;
		for (size_t i = 0; i < e->cluster->nmachines; i++)
			if (e->cluster->machines[i].model == m)
				total += e->cluster->machines[i].gpus;
		e->fc[m] = jf_forecast_new(total);
		if (!e->fc[m])
			return JF_ENOMEM;
		jf_demand_list(e->st, e->cluster->models[m].name, feed, e->fc[m]);
	}
	return JF_OK;
}

void jf_eng_demand(struct jf_engine *e, int model, int64_t delta)
{
	if (model < 0 || (size_t)model >= e->cluster->nmodels || !delta || !e->fc)
		return;
	e->od_use[model] += delta;
	if (e->od_use[model] < 0)
		e->od_use[model] = 0;
	int64_t now = jf_eng_now(e);
	jf_demand_add(e->st, e->cluster->models[model].name, now, e->od_use[model]);
	jf_engine_view_lock(e);
	jf_forecast_add(e->fc[model], now, (int)e->od_use[model]);
	jf_engine_view_unlock(e);
}

const struct jf_forecast *jf_engine_forecast(struct jf_engine *e, size_t m)
{
	return e->fc && m < e->cluster->nmodels ? e->fc[m] : NULL;
}

static void grt_free(struct grt *g)
{
	if (!g)
		return;
	jf_spec_free(g->spec);
	free(g->display);
	free(g);
}

static void tables_free(struct jf_engine *e)
{
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&e->groups, &i, &k, &v))
		grt_free(v);
	i = 0;
	while (jf_idmap_next(&e->tasks, &i, &k, &v))
		jf_trun_free(v);
	i = 0;
	while (jf_idmap_next(&e->runs, &i, &k, &v))
		free(v);
	jf_idmap_release(&e->groups);
	jf_idmap_release(&e->tasks);
	jf_idmap_release(&e->runs);
	for (size_t m = 0; e->excl && m < e->nalloc; m++) {
		free(e->excl[m]);
		e->excl[m] = NULL;
	}
	for (size_t m = 0; e->fc && m < e->cluster->nmodels; m++)
		jf_forecast_free(e->fc[m]);
	free(e->fc);
	free(e->od_use);
	e->fc = NULL;
	e->od_use = NULL;
	e->nkept = e->kept_head = 0;
}

void jf_eng_resync(struct jf_engine *e)
{
	tables_free(e);
	jf_idmap_init(&e->groups);
	jf_idmap_init(&e->tasks);
	jf_idmap_init(&e->runs);
	if (e->machines)
		jf_sched_machines_init(e->cluster, e->machines);
	if (e->use)
		memset(e->use, 0, e->nalloc * sizeof(*e->use));
	e->trim = false;
	e->making = true; /* a failed step may have been the one that made rows */
	if (forecasts_load(e) != JF_OK)
		fprintf(stderr, "jobfs: out of memory reloading the spot forecasts\n");
	/* what was announced may have been rolled back: as the store says */
	jf_eng_budget_free(e);
	jf_idmap_init(&e->budgets);
	jf_eng_budget_load(e);
	jf_eng_step_begin(e);
	if (e->delegated) {
		jf_eng_delegate_start(e);
		jf_eng_adopt_orphans(e);
	} else {
		jf_eng_adopt_all(e);
	}
	jf_eng_dep_sweep(e);
	jf_eng_step_end(e);
}

void jf_engine_free(struct jf_engine *e)
{
	if (!e)
		return;
	jf_eng_why_free(e); /* its thread first: it reads nothing of the tables */
	jf_eng_stor_free(e);
	jf_eng_budget_free(e);
	tables_free(e);
	jf_eng_step_release(e);
	jf_eng_view_free(e);
	jf_runner_free(e->run);
	jf_scheduler_free(e->sch);
	jf_store_close(e->st);
	free(e->excl);
	jf_cluster_free(e->cluster);
	free(e->machines);
	free(e->use);
	free(e->state_dir);
	free(e->partition_ondemand);
	free(e->partition_spot);
	free(e);
}

void jf_engine_stop_billing(struct jf_engine *e)
{
	/* a scheduling backend's runs are billed by its own times, start to end */
	if (e->delegated)
		return;
	int64_t closed = 0;
	jf_eng_enter(e);
	jf_ledger_close_all(e->st, jf_eng_now(e), &closed);
	jf_eng_leave(e);
}

void jf_engine_set_notify(struct jf_engine *e, jf_change_fn fn, void *ctx)
{
	e->notify = fn;
	e->notify_ctx = ctx;
}

struct jf_store *jf_engine_store(struct jf_engine *e)
{
	return e->st;
}
const struct jf_cluster *jf_engine_cluster(struct jf_engine *e)
{
	return e->cluster;
}
const char *jf_engine_state_dir(struct jf_engine *e)
{
	return e->state_dir;
}
int jf_engine_backend_fd(struct jf_engine *e)
{
	return e->sch ? jf_scheduler_fd(e->sch) : jf_runner_fd(e->run);
}

void jf_engine_machine_use(struct jf_engine *e, size_t m, struct jf_machine_use *u)
{
	if (e->delegated) {
		jf_eng_delegate_use(e, m, u);
		return;
	}
	memset(u, 0, sizeof(*u));
	if (m >= e->cluster->nmachines || m >= e->nalloc)
		return;
	const struct jf_machine *mc = &e->cluster->machines[m];
	const struct jf_sched_machine *sm = &e->machines[m];
	uint64_t all = mc->gpus >= 64 ? ~UINT64_C(0) : ((UINT64_C(1) << mc->gpus) - 1);
	u->gpu_mask = all & ~sm->gpu_free;
	u->cpu_milli = mc->cpu_milli - sm->cpu_free;
	u->mem_bytes = mc->mem_bytes - sm->mem_free;
	u->nodes = e->use[m].nodes;
}

const char *jf_engine_backend_name(struct jf_engine *e)
{
	return e->sch ? jf_scheduler_name(e->sch) : jf_runner_name(e->run);
}

const char *jf_engine_backend_trouble(struct jf_engine *e)
{
	static char buf[512];
	if (!e->be_down)
		return NULL;
	char when[40];
	jf_time_rfc3339(e->be_down_ms, when, sizeof(when));
	snprintf(buf, sizeof(buf), "%s cannot be reached since %s: %s", jf_engine_backend_name(e),
		 when, e->be_msg);
	return buf;
}

bool jf_eng_judge_request(struct jf_engine *e, struct grt *g, struct jf_error *err)
{
	jf_error_clear(err);
	g->req_ok = jf_sched_request(e->cluster, g->spec, &g->req, err) &&
		    (!e->delegated || jf_dlg_request_ok(e, g->spec, err));
	return g->req_ok;
}

/* ---- the group cache ---- */

/* The cache entry of rec's group, with its parsed spec (taken, also on
 * failure): NULL on ENOMEM. */
static struct grt *group_make(struct jf_engine *e, const struct jf_group_rec *rec,
			      const char *queue, struct jf_spec *spec)
{
	struct grt *g = calloc(1, sizeof(*g));
	if (!g) {
		jf_spec_free(spec);
		return NULL;
	}
	g->spec = spec;
	g->id = rec->id;
	g->queue_id = rec->queue_id;
	g->kind = rec->kind;
	snprintf(g->dirname, sizeof(g->dirname), "%s", rec->dirname);
	snprintf(g->queue, sizeof(g->queue), "%s", queue);
	g->display = strdup(rec->display);
	struct jf_error rerr;
	jf_eng_judge_request(e, g, &rerr);
	g->ended = jf_state_final(rec->state);
	/* backing off when the last daemon stopped: the back-off itself is
	 * not kept (it starts again at once), its flag and message go with the
	 * first start (image.c: jf_eng_pull_ok) */
	if (rec->flags & JF_GF_IMAGEPULL)
		g->pull_until_ms = 1;
	g->sync_after_ms = jf_eng_now(e);
	/* flagged by the last daemon: cleared once its sources are ready */
	g->syncing_said = (rec->flags & JF_GF_SYNCING) != 0;
	jf_eng_dep_load(e, g, rec->flags);
	if (g->ended)
		e->trim = true;
	int64_t counts[JF_ST__COUNT];
	if (jf_group_count_tasks(e->st, rec->id, counts) == JF_OK)
		g->failed_tasks = counts[JF_ST_FAILED];
	if (!g->display || !jf_idmap_put(&e->groups, rec->id, g)) {
		grt_free(g);
		return NULL;
	}
	return g;
}

static void queue_name(struct jf_engine *e, int64_t queue_id, char *buf, size_t n)
{
	buf[0] = '\0';
	struct jf_queue_rec q;
	if (queue_id && jf_queue_get(e->st, queue_id, &q) == JF_OK) {
		snprintf(buf, n, "%s", q.name);
		jf_queue_release(&q);
	}
}

/* Parse group_id's accepted spec into the cache.  NULL if there is none, or
 * on ENOMEM, or (*refused set, the reason in *perr) if it does not parse.
 * Only after a restart (or a trim) does this parse a spec: the submission
 * hands the cache the spec it parsed (jf_eng_group_install). */
static struct grt *group_load(struct jf_engine *e, int64_t group_id, bool *refused,
			      struct jf_error *perr)
{
	struct jf_group_rec rec;
	*refused = false;
	jf_error_clear(perr);
	if (jf_group_get(e->st, group_id, &rec) != JF_OK)
		return NULL;
	if (!rec.spec) {
		jf_group_release(&rec);
		return NULL;
	}
	char queue[JF_NAME_MAX];
	queue_name(e, rec.queue_id, queue, sizeof(queue));
	struct jf_subst sub = { rec.jobname, queue, rec.dirname };
	struct jf_spec *spec = NULL;
	enum jf_err prc = jf_spec_parse(rec.spec, strlen(rec.spec),
					rec.kind == JF_KIND_BATCH ? JF_PLACE_BATCH : JF_PLACE_GROUP,
					&sub, &spec, perr);
	struct grt *g = NULL;
	if (prc != JF_OK)
		*refused = prc != JF_ENOMEM;
	else
		g = group_make(e, &rec, queue, spec);
	jf_group_release(&rec);
	return g;
}

struct grt *jf_eng_group_install(struct jf_engine *e, int64_t group_id, struct jf_spec *spec)
{
	jf_eng_group_drop(e, group_id);
	struct jf_group_rec rec;
	if (jf_group_get(e->st, group_id, &rec) != JF_OK) {
		jf_spec_free(spec);
		return NULL;
	}
	char queue[JF_NAME_MAX];
	queue_name(e, rec.queue_id, queue, sizeof(queue));
	struct grt *g = group_make(e, &rec, queue, spec);
	jf_group_release(&rec);
	return g;
}

struct grt *jf_eng_group(struct jf_engine *e, int64_t group_id)
{
	struct grt *g = jf_idmap_get(&e->groups, group_id);
	if (g)
		return g;
	bool refused;
	struct jf_error perr;
	return group_load(e, group_id, &refused, &perr);
}

static int collect_id(void *ctx, int64_t id)
{
	int64_t **v = ctx;
	size_t n = (size_t)(*v)[0];
	int64_t *p = realloc(*v, (n + 2) * sizeof(**v));
	if (!p)
		return 1;
	p[n + 1] = id;
	p[0] = (int64_t)n + 1;
	*v = p;
	return 0;
}

/*
 * A spec that an earlier version accepted and this one refuses (a limit
 * added since: parallelism over 1,000,000 was once accepted) cannot be
 * parsed, and its group would vanish from the engine: never scheduled,
 * its running nodes never reaped.  At start-up such a group ends Failed,
 * with the reason (which names the limit) as its message and a Warning
 * event; its tasks not ended are Stopped; nodes of it still running are
 * stopped and their ends recorded by the adoption (adopt.c).
 */
static void fail_unparsable(struct jf_engine *e)
{
	int64_t *ids = calloc(1, sizeof(*ids));
	if (!ids || jf_group_list_active(e->st, collect_id, &ids) != JF_OK) {
		free(ids);
		return;
	}
	for (int64_t i = 1; i <= ids[0]; i++) {
		bool refused;
		struct jf_error perr;
		if (jf_idmap_get(&e->groups, ids[i]) || group_load(e, ids[i], &refused, &perr) ||
		    !refused)
			continue;
		struct jf_group_rec rec;
		if (jf_group_get(e->st, ids[i], &rec) != JF_OK)
			continue;
		char msg[700];
		snprintf(msg, sizeof(msg),
			 "its spec, accepted by an earlier version of jobfs, is "
			 "refused by this one: %s",
			 perr.msg);
		unsigned live = (1u << JF_ST_WAITING) | (1u << JF_ST_INITIALIZING) |
				(1u << JF_ST_RUNNING) | (1u << JF_ST_PAUSED);
		jf_eng_step_begin(e);
		jf_eng_move(e, JF_OBJ_GROUP(&rec), JF_EV_FAIL, msg);
		jf_eng_move_tasks(e, JF_OBJ_GROUP(&rec), live, JF_EV_STOP,
				  "the group ended: its spec is refused");
		jf_eng_group_event(e, 0, rec.id, rec.kind, "Warning", "Invalid", "%s", msg);
		if (rec.queue_id)
			jf_eng_group_event(e, rec.queue_id, 0, rec.kind, "Warning", "Invalid",
					   "group %s: %s", rec.dirname, msg);
		jf_eng_step_end(e);
		fprintf(stderr, "jobfs: group %lld (%s): %s\n", (long long)rec.id, rec.dirname,
			msg);
		jf_group_release(&rec);
	}
	free(ids);
}

void jf_eng_group_drop(struct jf_engine *e, int64_t group_id)
{
	grt_free(jf_idmap_del(&e->groups, group_id));
}

void jf_eng_group_ended(struct jf_engine *e, struct grt *g, bool ended)
{
	g->ended = ended;
	if (ended)
		e->trim = true;
}

/* Has group_id a task holding resources or an attempt running? */
static bool group_busy(struct jf_engine *e, int64_t group_id)
{
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&e->tasks, &i, &k, &v))
		if (((struct trun *)v)->group_id == group_id)
			return true;
	return false;
}

/*
 * The cache is a cache: a group it lets go is parsed again from the store
 * when it is needed (a status read of a finished group, a restart).  So
 * nothing here has to be exact but the one rule that makes it safe: it
 * only runs where no caller holds a grt.
 */
void jf_eng_trim(struct jf_engine *e)
{
	if (!e->trim)
		return;
	e->trim = false;
	int64_t ids[JF_DONE_KEEP];
	size_t n = 0, i = 0;
	int64_t k;
	void *v;
	/* collect first: the map must not change under jf_idmap_next */
	while (jf_idmap_next(&e->groups, &i, &k, &v)) {
		struct grt *g = v;
		if (!g->ended || g->kept)
			continue;
		if (n == JF_DONE_KEEP || group_busy(e, g->id)) {
			e->trim = true; /* again at the next entry point's end */
			continue;
		}
		ids[n++] = g->id;
	}
	for (size_t j = 0; j < n; j++) {
		if (e->nkept == JF_DONE_KEEP) {
			/* the oldest kept goes, unless it runs again (a restart) */
			int64_t old = e->kept[e->kept_head];
			struct grt *og = jf_idmap_get(&e->groups, old);
			if (og && og->ended && !group_busy(e, old))
				grt_free(jf_idmap_del(&e->groups, old));
			else if (og)
				og->kept = false;
			e->kept[e->kept_head] = ids[j];
			e->kept_head = (e->kept_head + 1) % JF_DONE_KEEP;
		} else {
			e->kept[(e->kept_head + e->nkept) % JF_DONE_KEEP] = ids[j];
			e->nkept++;
		}
		struct grt *g = jf_idmap_get(&e->groups, ids[j]);
		if (g)
			g->kept = true;
	}
}

size_t jf_engine_cached_groups(struct jf_engine *e)
{
	return e->groups.live;
}

const struct jf_spec *jf_engine_spec(struct jf_engine *e, int64_t group_id)
{
	struct grt *g = jf_eng_group(e, group_id);
	return g ? g->spec : NULL;
}

/* ---- events and notifications ---- */

void jf_eng_task_object(const struct grt *g, int64_t task_idx, int64_t node_idx, char *buf,
			size_t n)
{
	int w;
	if (task_idx < 0)
		w = snprintf(buf, n, "%s", g->kind == JF_KIND_BATCH ? "batch" : "group");
	else if (g->kind == JF_KIND_BATCH)
		w = snprintf(buf, n, "%lld-%s", (long long)task_idx + 1, g->dirname);
	else
		w = snprintf(buf, n, "tasks/%lld", (long long)task_idx);
	if (w >= 0 && (size_t)w < n && node_idx >= 0)
		snprintf(buf + w, n - (size_t)w, "/nodes/%lld", (long long)node_idx);
}

void jf_eng_event(struct jf_engine *e, const struct grt *g, int64_t task_id, int64_t task_idx,
		  int64_t node_id, int64_t node_idx, const char *type, const char *reason,
		  const char *fmt, ...)
{
	char msg[1024], obj[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jf_eng_task_object(g, task_id ? task_idx : -1, node_id ? node_idx : -1, obj, sizeof(obj));
	struct jf_event_scope sc = {
		.queue_id = 0,
		.group_id = g->id,
		.task_id = task_id,
		.node_id = node_id,
	};
	jf_event_add(e->st, &sc, jf_eng_now(e), type, reason, obj, msg);
}

void jf_eng_group_event(struct jf_engine *e, int64_t queue_id, int64_t group_id,
			enum jf_group_kind kind, const char *type, const char *reason,
			const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct jf_event_scope sc = { .queue_id = queue_id, .group_id = group_id };
	jf_event_add(e->st, &sc, jf_eng_now(e), type, reason,
		     kind == JF_KIND_BATCH ? "batch" : "group", msg);
}

/*
 * ---- log rotation: the shim's record, told as events ----
 *
 * The shim rotates a node's stdout, stderr and logs at the log cap and
 * replaces RUN_DIR/rotation after each rotation (tools/shim.c).  The tree
 * never writes events, so the engine looks: every JF_ROTATION_CHECK_MS for
 * running nodes (in the tick) and once more when a node ends (finish).  A
 * record whose stat has not changed is not read again.  A task printing
 * GBs rotates many times a second: one event per file covers all the
 * rotations since the last, and at most one per JF_ROTATION_EVENT_MS, the
 * last check telling whatever is left.
 */


/* An amount of bytes for people: "3Gi", "640Ki" when short and exact,
 * else "3.2Gi"; "100 bytes" under 1Ki. */
static void size_words(int64_t bytes, char *buf, size_t n)
{
	static const char *const units[] = { "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	if (bytes < 1024) {
		snprintf(buf, n, "%lld bytes", (long long)bytes);
		return;
	}
	jf_mem_format(bytes, buf, n);
	size_t len = strlen(buf);
	if (len <= 5 && len > 0 && buf[len - 1] == 'i')
		return;
	double v = (double)bytes / 1024;
	int u = 0;
	while (u < 5 && v >= 1024) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, "%.1f%s", v, units[u]);
}

/* Read RUN_DIR/rotation into r->rot if it changed since the last look. */
static void rotation_read(struct jf_engine *e, struct run *r)
{
	char path[4200], text[4096];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/runs/%lld/%lld/rotation", e->state_dir,
		 (long long)r->node_id, (long long)r->attempt);
	if (stat(path, &sb) < 0)
		return;
	int64_t mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	if (mtime_ns == r->rot.mtime_ns && (int64_t)sb.st_size == r->rot.size &&
	    (int64_t)sb.st_ino == r->rot.ino)
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, text, sizeof(text)); /* a few hundred bytes */
	close(fd);
	struct jf_shim_rotation rot;
	if (n <= 0 || !jf_shim_rotation_parse(text, (size_t)n, &rot))
		return;
	r->rot.cap = rot.cap;
	for (int k = 0; k < JF_SHIM_LOG_FILES; k++) {
		r->rot.rotations[k] = rot.rotations[k];
		r->rot.dropped[k] = rot.dropped[k];
	}
	r->rot.mtime_ns = mtime_ns;
	r->rot.size = (int64_t)sb.st_size;
	r->rot.ino = (int64_t)sb.st_ino;
}

void jf_eng_check_rotation(struct jf_engine *e, struct run *r, bool final)
{
	rotation_read(e, r);
	struct grt *g = NULL;
	int64_t now = jf_eng_now(e);
	bool told = false;
	for (int k = 0; k < JF_SHIM_LOG_FILES; k++) {
		struct rotation_seen *rs = &r->rot;
		if (rs->rotations[k] <= rs->told[k])
			continue;
		if (!final && rs->told_ms[k] && now - rs->told_ms[k] < JF_ROTATION_EVENT_MS)
			continue;
		if (!g && !(g = jf_eng_group(e, r->group_id)))
			return;
		if (!told)
			jf_eng_step_begin(e);
		told = true;
		struct trun *t = jf_idmap_get(&e->tasks, r->task_id);
		char cap[32], cap2[32], gone[32], times[48];
		jf_mem_format(rs->cap, cap, sizeof(cap));
		jf_mem_format(2 * rs->cap, cap2, sizeof(cap2));
		size_words(rs->dropped[k], gone, sizeof(gone));
		if (rs->rotations[k] == 1)
			snprintf(times, sizeof(times), "once");
		else
			snprintf(times, sizeof(times), "%" PRId64 " times", rs->rotations[k]);
		if (rs->dropped[k] > 0)
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx,
				     "Warning", "LogRotated",
				     "%s over the %s cap: rotated (%s so "
				     "far); the first %s are gone, the last %s-%s are kept",
				     jf_shim_log_names[k], cap, times, gone, cap, cap2);
		else
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx,
				     "Warning", "LogRotated",
				     "%s over the %s cap: rotated (%s so "
				     "far); nothing is gone yet, from the next rotation on only "
				     "the last %s-%s are kept",
				     jf_shim_log_names[k], cap, times, cap, cap2);
		rs->told[k] = rs->rotations[k];
		rs->told_ms[k] = now;
	}
	if (!told)
		return;
	jf_eng_step_end(e);
	if (!final) /* the end of a node is announced by its caller */
		jf_eng_changed(e, JF_CH_NODE, g->queue_id, g->id, r->task_id, r->node_id, false);
}

/* ---- event sources ---- */

void jf_engine_on_backend(struct jf_engine *e)
{
	jf_eng_enter(e);
	if (e->delegated) {
		jf_eng_delegate_notes(e);
		jf_eng_schedule(e);
		jf_eng_leave(e);
		return;
	}
	/* one step for what the backend said and the pass it leads to: the
	 * signals and starts that follow are done once it is committed */
	struct jf_run_result res[JF_ENGINE_BATCH];
	size_t n;
	while ((n = jf_runner_reap(e->run, res, JF_ENGINE_BATCH)) > 0) {
		for (size_t i = 0; i < n; i++) {
			res[i].start_ms = jf_eng_from_wall(e, res[i].start_ms);
			res[i].end_ms = jf_eng_from_wall(e, res[i].end_ms);
			if (res[i].note)
				jf_eng_note(e, &res[i]);
			else if (res[i].started)
				jf_eng_started(e, &res[i]);
			else
				jf_eng_finish(e, &res[i]);
		}
		if (jf_eng_should_yield(e))
			break; /* the loop comes back: the fd is still readable */
	}
	jf_eng_schedule(e);
	jf_eng_leave(e);
}

bool jf_eng_should_yield(struct jf_engine *e)
{
	return (e->yielding || (e->in_run && !e->urgent)) && e->waiting &&
	       e->waiting(e->waiting_ctx);
}

/* ---- the daemon's loop (loop.h) ---- */

static bool request_waiting(void *ctx)
{
	return jf_loop_first_waiting(ctx);
}

static void on_backend_fd(struct jf_loop *l, void *ctx)
{
	(void)l;
	jf_engine_on_backend(ctx);
}

/* A sync of an object source ended (storage.c): its end now, not at the
 * next tick, so a group waiting for it starts at once. */
static void on_stor_fd(struct jf_loop *l, void *ctx)
{
	(void)l;
	struct jf_engine *e = ctx;
	jf_eng_enter(e);
	if (jf_eng_stor_reap(e) && e->yielding) {
		/* what waited for it starts in this step, not in a deferred
		 * pass of its own: the sync's end and those starts are one
		 * commit */
		e->yielding = false;
		e->in_run = true;
		jf_eng_schedule(e);
		e->in_run = false;
		e->yielding = true;
	}
	jf_eng_leave(e);
}

static bool pass_pending(void *ctx)
{
	struct jf_engine *e = ctx;
	return e->sched_pending;
}

/* The pending pass; overdue (it has waited long enough): without stopping
 * for waiting requests before JF_PASS_STARTS starts.  A chunk of task rows
 * still to make comes first (the pass may start them), and while more are
 * left the job stays pending: the requests that came meanwhile are served
 * between chunks. */
static void pass_run(void *ctx, bool overdue)
{
	struct jf_engine *e = ctx;
	e->sched_pending = false;
	bool y = e->yielding;
	e->yielding = false;
	e->in_run = true;
	e->urgent = overdue;
	jf_eng_enter(e);
	bool more = jf_eng_make_tasks(e);
	jf_eng_schedule(e);
	jf_eng_leave(e);
	e->in_run = e->urgent = false;
	e->yielding = y;
	if (more)
		e->sched_pending = true;
}

/* Real time: every JF_ENGINE_TICK_MS.  Virtual time: when the engine's
 * next deadline comes, as the tick itself says (and at every quiet
 * instant, below, since a step may have brought a deadline closer). */
static void arm_tick(struct jf_engine *e, int64_t next)
{
	int64_t now = jf_loop_now(e->loop);
	if (!jf_loop_virtual(e->loop))
		jf_loop_arm(e->loop, e->tick_timer, now + JF_ENGINE_TICK_MS);
	else
		jf_loop_arm(e->loop, e->tick_timer, next > 0 ? now + next : -1);
}

static void on_tick(struct jf_loop *l, void *ctx)
{
	(void)l;
	struct jf_engine *e = ctx;
	arm_tick(e, jf_engine_tick(e));
}

static bool tick_quiet(struct jf_loop *l, void *ctx)
{
	(void)l;
	struct jf_engine *e = ctx;
	int64_t next = jf_engine_tick(e);
	arm_tick(e, next);
	return next == 0;
}

enum jf_err jf_engine_attach(struct jf_engine *e, struct jf_loop *l, bool yielding,
			     struct jf_error *err)
{
	e->loop = l;
	e->tick_timer = jf_loop_add_timer(l, on_tick, e);
	int fd = jf_engine_backend_fd(e);
	if (e->tick_timer < 0 ||
	    (fd >= 0 && jf_loop_add_fd(l, fd, JF_LOOP_NEXT, on_backend_fd, e) < 0) ||
	    (jf_eng_stor_fd(e) >= 0 &&
	     jf_loop_add_fd(l, jf_eng_stor_fd(e), JF_LOOP_NEXT, on_stor_fd, e) < 0) ||
	    (jf_loop_virtual(l) && jf_loop_add_before_sleep(l, tick_quiet, e) < 0))
		return jf_error_set(err, JF_EIO, errno, "event loop: %s", strerror(errno));
	arm_tick(e, 0);
	if (yielding) {
		e->yielding = true;
		e->waiting = request_waiting;
		e->waiting_ctx = l;
		jf_loop_set_deferred(l, pass_pending, pass_run, e, JF_ENGINE_PASS_DELAY_MS);
		if (e->making)
			e->sched_pending = true; /* rows a killed daemon left to make */
	}
	return JF_OK;
}

/*
 * Task rows still to make (requests.c: jf_eng_make_tasks).  Yielding, the
 * loop's deferred job makes them, a chunk a run: the tick only makes sure
 * it runs (after a start, or a chunk that failed).  Not yielding, each
 * tick makes one chunk and asks to come again at once (a virtual clock
 * settles the instant first); without a loop (tests that drive the engine
 * themselves) the tick makes them all.  True when more are left.
 */
static bool tick_make(struct jf_engine *e)
{
	if (!e->making)
		return false;
	if (e->yielding) {
		e->sched_pending = true;
		return false;
	}
	int64_t before = e->chunks_made;
	bool more;
	do
		more = jf_eng_make_tasks(e);
	while (more && !e->loop);
	if (e->chunks_made != before)
		jf_eng_schedule(e); /* the rows made may start */
	return more;
}

int64_t jf_engine_group_deadline(const struct jf_engine *e)
{
	return e->group_deadline_ms;
}

int64_t jf_engine_tick(struct jf_engine *e)
{
	jf_eng_enter(e);
	/* a clock that jumped (--test-clock): every deadline below is looked
	 * at against the new time in this tick, and a pass plans from it */
	if (e->clock.refresh && e->clock.refresh(e->clock.ctx))
		jf_eng_schedule(e);
	bool more = tick_make(e);
	int64_t next = jf_eng_group_timers(e);
	/* not a timer of its own either: a virtual clock (jobfs-sim) would
	 * never be idle; the daemon's periodic tick carries it */
	jf_eng_keep_check(e);
	/* without a loop (tests that drive the engine) all of it at once */
	while (jf_eng_trash_turn(e) && !e->loop)
		;
	more = more || e->trash_pending;
	int64_t now = jf_eng_now(e);
	int64_t stor_next = jf_eng_stor_tick(e);
	if (stor_next >= 0 && (next < 0 || stor_next < next))
		next = stor_next;
	if (e->window_check_ms && now >= e->window_check_ms) {
		/* spot groups waiting for a low-risk window: has one come? */
		e->window_check_ms = 0;
		jf_eng_schedule(e);
	}
	if (e->window_check_ms && (next < 0 || e->window_check_ms - now < next))
		next = e->window_check_ms - now;
	if (e->pull_check_ms && now >= e->pull_check_ms) {
		/* a group's pull back-off is over: its tasks may start again */
		e->pull_check_ms = 0;
		jf_eng_schedule(e);
	}
	if (e->pull_check_ms && (next < 0 || e->pull_check_ms - now < next))
		next = e->pull_check_ms - now;
	/* the ETAs of waiting work are simulated again now and then: a task
	 * that overran its predicted end moves what waits behind it */
	if (jf_eng_why_stale(e))
		jf_eng_schedule(e);
	/* queue budgets (budget.c): reached while work runs, or freed as old
	 * costs leave a rolling window; a replay waits for it as for a group
	 * timer */
	int64_t budget_next = jf_eng_budget_tick(e);
	if (budget_next >= 0) {
		if (next < 0 || budget_next < next)
			next = budget_next;
		if (e->group_deadline_ms < 0 || now + budget_next < e->group_deadline_ms)
			e->group_deadline_ms = now + budget_next;
	}
	size_t i = 0;
	int64_t k;
	void *v;
	/* not a timer of its own (the answer leaves it out): the daemon's
	 * periodic tick carries it */
	if (now >= e->rotation_check_ms) {
		e->rotation_check_ms = now + JF_ROTATION_CHECK_MS;
		while (jf_idmap_next(&e->runs, &i, &k, &v))
			jf_eng_check_rotation(e, v, false);
		i = 0;
	}
	while (jf_idmap_next(&e->runs, &i, &k, &v)) {
		struct run *r = v;
		if (r->kill_at_ms && !r->killed) {
			if (now >= r->kill_at_ms) {
				jf_eng_after(e, jf_eng_act_kill, r->attempt_id, 0, 0);
				r->killed = true;
			} else if (next < 0 || r->kill_at_ms - now < next) {
				next = r->kill_at_ms - now;
			}
			continue;
		}
		if (r->deadline_ms && !r->kill_at_ms) {
			if (now >= r->deadline_ms) {
				struct trun *t = jf_idmap_get(&e->tasks, r->task_id);
				if (t)
					jf_eng_kill_task(e, t, JF_WHY_TIMEOUT);
				next = 0;
			} else if (next < 0 || r->deadline_ms - now < next) {
				next = r->deadline_ms - now;
			}
		}
	}
	jf_eng_leave(e);
	return more ? 0 : next;
}
