/*
 * run.c - starting tasks, reaping them, and what follows from an end.
 *
 * A task's life in the engine: schedule() places all its nodes at once
 * (gang) and start_task() records the placement, then starts one attempt
 * per node on the backend.  finish() takes each ended attempt; when the
 * task's last node has ended, resolve_task() applies the spec's rules
 * (core/lifecycle.c: retry in place, new attempt, fail the index, fail the
 * group) and settle_group() decides the group's state from its counts.
 *
 * Store first: every step is committed before the backend is touched or
 * the tree is told.
 */
#include "engine/engine_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/billing.h"


static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

static void give_to(const char *path, uid_t uid, gid_t gid)
{
	if (geteuid() == 0 && uid != 0) {
		if (chown(path, uid, gid) < 0) {
			/* the task will see a directory it cannot write: said in its logs */
		}
	}
}

static const char *billing_name(enum jf_billing b)
{
	return b == JF_BILL_SPOT ? "spot" : "on-demand";
}

void jf_trun_free(struct trun *t)
{
	if (!t)
		return;
	for (int64_t i = 0; t->hosts && i < t->nodes; i++)
		free(t->hosts[i]);
	free(t->hosts);
	free(t->slots);
	free(t->attempt_ids);
	free(t->cpusets);
	free(t);
}

/* ---- cpu_exclusive: cores per GPU that no other node shares ---- */

bool jf_eng_take_cores(struct jf_engine *e, struct trun *t, int64_t node, const uint64_t *cpuset)
{
	struct grt *g = jf_eng_group(e, t->group_id);
	size_t m = t->slots[node].machine;
	if (!g || m >= e->cluster->nmachines)
		return false;
	if (!t->cpusets) {
		t->cpusets = calloc((size_t)t->nodes * JF_CPUSET_WORDS, sizeof(uint64_t));
		if (!t->cpusets)
			return false;
	}
	if (!e->excl[m]) {
		e->excl[m] = calloc(JF_CPUSET_WORDS, sizeof(uint64_t));
		if (!e->excl[m])
			return false;
	}
	uint64_t *mine = &t->cpusets[node * JF_CPUSET_WORDS];
	if (cpuset) {
		memcpy(mine, cpuset, JF_CPUSET_WORDS * sizeof(uint64_t));
	} else {
		const struct jf_machine *mc = &e->cluster->machines[m];
		int ncores = (int)(mc->cpu_milli / 1000);
		int block = (int)(e->cluster->models[mc->model].cpu_milli_per_gpu / 1000);
		int gpus = __builtin_popcountll(t->slots[node].gpu_mask);
		if (ncores > JF_CPU_MAX_CORES)
			ncores = JF_CPU_MAX_CORES;
		if (jf_cpu_pick(ncores, e->excl[m], gpus, block, mine, NULL) != JF_OK)
			return false;
	}
	for (int w = 0; w < JF_CPUSET_WORDS; w++)
		e->excl[m][w] |= mine[w];
	return true;
}

void jf_eng_give_cores(struct jf_engine *e, struct trun *t)
{
	if (!t->cpusets)
		return;
	for (int64_t n = 0; n < t->nodes; n++) {
		size_t m = t->slots[n].machine;
		if (m >= e->cluster->nmachines || !e->excl[m])
			continue;
		for (int w = 0; w < JF_CPUSET_WORDS; w++)
			e->excl[m][w] &= ~t->cpusets[n * JF_CPUSET_WORDS + w];
	}
	free(t->cpusets);
	t->cpusets = NULL;
}

static void release_slots(struct jf_engine *e, struct trun *t)
{
	jf_eng_give_cores(e, t);
	if (!t->held)
		return;
	for (int64_t i = 0; i < t->nodes; i++)
		if (t->slots[i].machine < e->cluster->nmachines)
			jf_sched_release(e->machines, &t->slots[i]);
	t->held = false;
}

/* ---- starting ---- */

static void start_failed(struct jf_engine *e, int64_t attempt_id, const char *msg)
{
	struct jf_run_result r;
	memset(&r, 0, sizeof(r));
	r.cookie = (uint64_t)attempt_id;
	r.exit_code = 127;
	r.start_failed = true;
	r.start_ms = r.end_ms = jf_eng_now(e);
	snprintf(r.message, sizeof(r.message), "%s", msg);
	jf_eng_finish(e, &r);
}

void jf_eng_bill_start(struct jf_engine *e, const struct grt *g, int64_t task_id,
		       int64_t task_idx, int64_t node_id, int64_t node_idx, int64_t attempt_id,
		       int64_t attempt, int64_t start_ms)
{
	struct jf_ledger_rec lr;
	memset(&lr, 0, sizeof(lr));
	lr.queue_id = g->queue_id;
	lr.group_id = g->id;
	lr.task_id = task_id;
	lr.node_id = node_id;
	lr.attempt_id = attempt_id;
	snprintf(lr.queue, sizeof(lr.queue), "%s", g->queue);
	snprintf(lr.group, sizeof(lr.group), "%s", g->dirname);
	lr.task_idx = task_idx;
	lr.node_idx = node_idx;
	lr.attempt = attempt;
	snprintf(lr.billing, sizeof(lr.billing), "%s", billing_name(g->spec->billing));
	snprintf(lr.gpu, sizeof(lr.gpu), "%s",
		 g->req.model >= 0 ? e->cluster->models[g->req.model].name : "");
	lr.gpus = g->req.gpus;
	lr.start_ms = start_ms;
	lr.rate = jf_bill_rate(e->cluster, g->req.model, g->req.gpus, g->req.cpu_milli,
			       g->spec->billing);
	jf_ledger_open(e->st, &lr, NULL);
}

/*
 * Fault injection for the crash tests: JOBFS_FAULT=POINT:N makes the
 * daemon kill itself (SIGKILL, as a crash would) the Nth time it passes
 * POINT: "prestart" (attempt recorded, supervisor not started yet) or
 * "start" (supervisor started, its start not recorded yet) - the two
 * moments a crash is hardest to recover from.  Unset: nothing.
 */
static void fault(const char *point)
{
	static char name[32];
	static long left = -1;
	if (left == -1) {
		const char *v = getenv("JOBFS_FAULT");
		const char *colon = v ? strchr(v, ':') : NULL;
		left = 0;
		if (colon && (size_t)(colon - v) < sizeof(name)) {
			memcpy(name, v, (size_t)(colon - v));
			name[colon - v] = '\0';
			left = strtol(colon + 1, NULL, 10);
		}
	}
	if (left > 0 && strcmp(name, point) == 0 && --left == 0)
		raise(SIGKILL);
}

/*
 * Starting a task is two steps, so that a crash at any moment leaves
 * something a restarted daemon can act on: prepare_node() records each
 * node's attempt (durable before any supervisor starts: the caller commits
 * in between), launch_node() starts its supervisor and records the start.
 * A crash between the two finds attempts without a handle, and the
 * backend's recover() tells whether their run got going (adopt.c).
 */
static void prepare_node(struct jf_engine *e, struct grt *g, struct trun *t, int64_t ni,
			 uid_t uid, gid_t gid)
{
	const struct jf_sched_slot *slot = &t->slots[ni];
	const char *machine = e->cluster->machines[slot->machine].name;
	char gpu_ids[JF_GPU_IDS_MAX], run_dir[4096], ckpt[4096], work[4200];
	jf_gpu_ids_format(slot->gpu_mask, gpu_ids, sizeof(gpu_ids));

	int64_t node_id = 0, attempt_id = 0;
	struct jf_node_rec nrec;
	if (jf_node_ensure(e->st, t->task_id, ni, &node_id) != JF_OK ||
	    jf_node_get(e->st, node_id, &nrec) != JF_OK)
		return;
	int64_t attempt = nrec.attempt + 1;
	jf_node_release(&nrec);

	snprintf(run_dir, sizeof(run_dir), "%s/runs/%lld/%lld", e->state_dir,
		 (long long)node_id, (long long)attempt);
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt/%lld", e->state_dir, (long long)t->task_id);
	snprintf(work, sizeof(work), "%s/work", run_dir);
	bool dirs_ok = mkdir_p(run_dir, 0755) == 0 && mkdir_p(ckpt, 0700) == 0 &&
		       mkdir_p(work, 0700) == 0;
	give_to(ckpt, uid, gid);
	give_to(work, uid, gid);

	jf_store_begin(e->st);
	jf_attempt_create(e->st, node_id, attempt, run_dir, machine, gpu_ids, slot->cpu_milli,
			  &attempt_id);
	jf_node_set_state(e->st, node_id, JF_ST_INITIALIZING, "", jf_eng_now(e));
	jf_node_set_run(e->st, node_id, machine, gpu_ids, 0, -1, attempt, attempt_id);
	if (slot->gpu_mask)
		jf_eng_event(e, g, t->task_id, t->idx, node_id, ni, "Normal", "Scheduled",
			     "assigned to %s, GPUs %s", machine, gpu_ids);
	else
		jf_eng_event(e, g, t->task_id, t->idx, node_id, ni, "Normal", "Scheduled",
			     "assigned to %s, %lldm CPU", machine, (long long)slot->cpu_milli);
	if (jf_store_commit(e->st) != JF_OK || !attempt_id)
		return;

	struct run *r = calloc(1, sizeof(*r));
	if (!r)
		return;
	r->attempt_id = attempt_id;
	r->node_id = node_id;
	r->task_id = t->task_id;
	r->group_id = g->id;
	r->node_idx = ni;
	r->attempt = attempt;
	if (!jf_idmap_put(&e->runs, attempt_id, r)) {
		free(r);
		return;
	}
	t->attempt_ids[ni] = attempt_id;
	t->live++;
	e->use[slot->machine].nodes++;
	r->no_dirs = !dirs_ok;
}

static void record_start(struct jf_engine *e, struct grt *g, struct trun *t, struct run *r,
			 pid_t pid, int64_t start_ms);

void jf_eng_launch_node(struct jf_engine *e, struct grt *g, struct trun *t, int64_t ni,
			uid_t uid, gid_t gid)
{
	const struct jf_spec *s = g->spec;
	const struct jf_sched_slot *slot = &t->slots[ni];
	char gpu_ids[JF_GPU_IDS_MAX], run_dir[4096], ckpt[4096], work[4200];
	struct run *r = jf_idmap_get(&e->runs, t->attempt_ids[ni]);
	if (!r)
		return;
	int64_t node_id = r->node_id, attempt_id = r->attempt_id, attempt = r->attempt;
	jf_gpu_ids_format(slot->gpu_mask, gpu_ids, sizeof(gpu_ids));
	snprintf(run_dir, sizeof(run_dir), "%s/runs/%lld/%lld", e->state_dir,
		 (long long)node_id, (long long)attempt);
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt/%lld", e->state_dir, (long long)t->task_id);
	snprintf(work, sizeof(work), "%s/work", run_dir);
	if (r->no_dirs) {
		start_failed(e, attempt_id, "cannot create the run directory");
		return;
	}
	if (t->why != JF_WHY_NONE) {
		/* another node of the gang failed to start: this one does not */
		start_failed(e, attempt_id, "not started: the task is ending");
		return;
	}

	struct jf_proc procs[JF_RUN_MAX_PROCS];
	char **envs[JF_RUN_MAX_PROCS] = { 0 };
	char **argvs[JF_RUN_MAX_PROCS] = { 0 };
	size_t np = s->ncontainers < JF_RUN_MAX_PROCS ? s->ncontainers : JF_RUN_MAX_PROCS;
	bool ok = true;
	/* each container sees the GPUs the allocator gave it (DESIGN 5.3) */
	struct jf_alloc *al = NULL;
	jf_alloc_new(slot->cpu_milli, slot->mem_bytes, slot->gpu_mask, s->containers, np, &al,
		     NULL);
	for (size_t i = 0; i < np; i++) {
		const struct jf_container *c = &s->containers[i];
		char cgpus[JF_GPU_IDS_MAX];
		if (al)
			jf_gpu_ids_format(al->c[i].gpu_mask, cgpus, sizeof(cgpus));
		else
			snprintf(cgpus, sizeof(cgpus), "%s", gpu_ids);
		envs[i] = jf_env_build(e, g, c, t->idx, ni, attempt, cgpus, ckpt, uid);
		argvs[i] = calloc(c->ncommand + c->nargs + 1, sizeof(char *));
		if (!envs[i] || !argvs[i]) {
			ok = false;
			break;
		}
		size_t k = 0;
		for (size_t j = 0; j < c->ncommand; j++)
			argvs[i][k++] = c->command[j];
		for (size_t j = 0; j < c->nargs; j++)
			argvs[i][k++] = c->args[j];
		procs[i].name = c->name;
		procs[i].argv = argvs[i];
		procs[i].envp = envs[i];
	}
	struct jf_run_started started;
	memset(&started, 0, sizeof(started));
	struct jf_error err;
	jf_error_clear(&err);
	enum jf_err rc = JF_ENOMEM;
	int *cpus = NULL;
	size_t ncpus = 0;
	char cpuset[256] = "";
	if (ok && t->cpusets) {
		const uint64_t *set = &t->cpusets[ni * JF_CPUSET_WORDS];
		cpus = malloc(JF_CPU_MAX_CORES * sizeof(*cpus));
		for (int c = 0; cpus && c < JF_CPU_MAX_CORES; c++)
			if (set[c / 64] & (UINT64_C(1) << (c % 64)))
				cpus[ncpus++] = c;
		jf_cpuset_format(set, JF_CPU_MAX_CORES, cpuset, sizeof(cpuset));
		jf_attempt_set_cpuset(e->st, attempt_id, cpuset);
	}
	fault("prestart");
	if (ok) {
		struct jf_launch l = {
			.run_dir = run_dir, .cwd = work, .uid = uid, .gid = gid,
			.procs = procs, .nprocs = np, .log_cap_bytes = e->log_cap,
			.cpus = ncpus ? cpus : NULL, .ncpus = ncpus,
		};
		rc = jf_backend_start(e->be, &l, (uint64_t)attempt_id, &started, &err);
	}
	for (size_t i = 0; i < np; i++) {
		jf_env_free(envs[i]);
		free(argvs[i]);
	}
	jf_alloc_free(al);
	free(cpus);
	if (rc != JF_OK) {
		start_failed(e, attempt_id, err.msg[0] ? err.msg : "cannot start the node");
		return;
	}
	/* signals reach it from now on; the start is recorded once confirmed.
	 * Meanwhile its timeout counts from now: the planner needs a bound of
	 * its end (a reservation behind it), and a shim slower to start than
	 * the timeout is past it anyway */
	snprintf(r->handle, sizeof(r->handle), "%s", started.handle);
	r->deadline_ms = s->timeout > 0 ? jf_eng_now(e) + s->timeout * 1000 : 0;
	if (!started.pending)
		record_start(e, g, t, r, started.pid, started.start_ms);
}

/*
 * The node's processes run since start_ms (the backend's word: for the
 * local backend the shim's ready line): the node is Running, billed and
 * timed from then; the task is Running once all its nodes are.  A crash before this is recorded leaves an attempt without a
 * handle, which recover() settles (adopt.c).
 */
static void record_start(struct jf_engine *e, struct grt *g, struct trun *t, struct run *r,
			 pid_t pid, int64_t start_ms)
{
	const struct jf_spec *s = g->spec;
	int64_t ni = r->node_idx;
	const struct jf_sched_slot *slot = &t->slots[ni];
	const char *machine = slot->machine < e->cluster->nmachines
			      ? e->cluster->machines[slot->machine].name : "";
	char gpu_ids[JF_GPU_IDS_MAX];
	jf_gpu_ids_format(slot->gpu_mask, gpu_ids, sizeof(gpu_ids));
	int64_t node_id = r->node_id, attempt_id = r->attempt_id, attempt = r->attempt;

	fault("start");
	int64_t now = jf_eng_now(e);
	if (start_ms <= 0)
		start_ms = now;
	/* the timeout counts from the real start, as after an adoption */
	r->deadline_ms = s->timeout > 0 ? start_ms + s->timeout * 1000 : 0;
	r->started = true;
	t->nstarted++;

	jf_store_begin(e->st);
	jf_attempt_started(e->st, attempt_id, r->handle, pid, start_ms);
	/* a node already being stopped or preempted keeps its message */
	jf_node_set_state(e->st, node_id, JF_ST_RUNNING, r->kill_at_ms ? NULL : "", now);
	jf_node_set_run(e->st, node_id, machine, gpu_ids, pid, -1, attempt, attempt_id);
	jf_eng_bill_start(e, g, t->task_id, t->idx, node_id, ni, attempt_id, attempt, start_ms);
	if (s->billing == JF_BILL_ONDEMAND && g->req.gpus > 0)
		jf_eng_demand(e, g->req.model, g->req.gpus);
	size_t np = s->ncontainers < JF_RUN_MAX_PROCS ? s->ncontainers : JF_RUN_MAX_PROCS;
	for (size_t i = 0; i < np; i++) {
		const struct jf_container *c = &s->containers[i];
		if (c->image)
			jf_eng_event(e, g, t->task_id, t->idx, node_id, ni, "Normal", "Created",
				     "created %s; image %s not pulled: the %s backend runs the "
				     "command on this host", c->name, c->image, e->be->ops->name);
		else
			jf_eng_event(e, g, t->task_id, t->idx, node_id, ni, "Normal", "Created",
				     "created %s", c->name);
	}
	if (pid > 0)
		jf_eng_event(e, g, t->task_id, t->idx, node_id, ni, "Normal", "Started",
			     "started %s (pid %lld)", s->containers[0].name, (long long)pid);
	else if (r->handle[0] && strncmp(r->handle, "local:", 6) != 0)
		jf_eng_event(e, g, t->task_id, t->idx, node_id, ni, "Normal", "Started",
			     "started %s (%s)", s->containers[0].name, r->handle);
	if (t->nstarted == t->nodes)
		jf_task_set_state(e->st, t->task_id, JF_ST_RUNNING, "", now);
	jf_store_commit(e->st);
	jf_eng_changed(e, JF_CH_NODE, g->queue_id, g->id, t->task_id, node_id, false);
}

void jf_eng_started(struct jf_engine *e, const struct jf_run_result *res)
{
	struct run *r = jf_idmap_get(&e->runs, (int64_t)res->cookie);
	if (!r || r->started)
		return;
	struct trun *t = jf_idmap_get(&e->tasks, r->task_id);
	struct grt *g = jf_eng_group(e, r->group_id);
	if (!t || !g || r->node_idx >= t->nodes)
		return;
	record_start(e, g, t, r, res->pid, res->start_ms);
}

struct trun *jf_trun_new(int64_t task_id, int64_t group_id, int64_t idx, int64_t nodes)
{
	struct trun *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->slots = calloc((size_t)nodes, sizeof(*t->slots));
	t->attempt_ids = calloc((size_t)nodes, sizeof(*t->attempt_ids));
	if (!t->slots || !t->attempt_ids) {
		jf_trun_free(t);
		return NULL;
	}
	t->task_id = task_id;
	t->group_id = group_id;
	t->idx = idx;
	t->nodes = nodes;
	return t;
}

bool jf_eng_start_prepare(struct jf_engine *e, struct grt *g, struct trun *t, uid_t uid,
			  gid_t gid)
{
	struct jf_task_rec tr;
	if (jf_task_get(e->st, t->task_id, &tr) != JF_OK) {
		release_slots(e, t);
		jf_trun_free(t);
		return false;
	}
	t->attempt = tr.attempt + 1;
	int64_t failures = tr.failures;
	jf_task_release(&tr);
	t->held = true;
	t->live = 0;
	t->nstarted = 0;
	t->start_ms = jf_eng_now(e);
	t->failed = false;
	t->why = JF_WHY_NONE;
	if (!jf_idmap_put(&e->tasks, t->task_id, t)) {
		release_slots(e, t);
		jf_trun_free(t);
		return false;
	}
	if (g->spec->cpu_exclusive && g->req.gpus > 0 && !t->cpusets)
		for (int64_t n = 0; n < t->nodes; n++)
			jf_eng_take_cores(e, t, n, NULL);
	int64_t now = jf_eng_now(e);
	jf_store_begin(e->st);
	jf_task_set_state(e->st, t->task_id, JF_ST_INITIALIZING, "", now);
	jf_task_set_counters(e->st, t->task_id, t->attempt, failures);
	for (int64_t i = 0; i < t->nodes; i++)
		prepare_node(e, g, t, i, uid, gid);
	jf_store_commit(e->st);
	return true;
}

void jf_eng_start_launch(struct jf_engine *e, struct grt *g, struct trun *t, uid_t uid,
			 gid_t gid)
{
	int64_t task_id = t->task_id, nodes = t->nodes;
	jf_store_begin(e->st);
	for (int64_t i = 0; i < nodes; i++) {
		/* a start failure may have ended the task (its last node) */
		if (jf_idmap_get(&e->tasks, task_id) != t)
			break;
		jf_eng_launch_node(e, g, t, i, uid, gid);
	}
	jf_store_commit(e->st);
	jf_eng_changed(e, JF_CH_TASK, g->queue_id, g->id, task_id, 0, true);
}

/* Start all nodes of a placed task.  Takes the slots (already subtracted). */
void jf_eng_start_task(struct jf_engine *e, struct grt *g, struct trun *t, uid_t uid,
		       gid_t gid)
{
	/* one transaction for the gang's attempts, one for its starts: the
	 * attempts are durable before any supervisor starts */
	jf_store_begin(e->st);
	bool ok = jf_eng_start_prepare(e, g, t, uid, gid);
	jf_store_commit(e->st);
	if (ok)
		jf_eng_start_launch(e, g, t, uid, gid);
}

/* ---- killing ---- */

static int why_rank(enum jf_why w)
{
	switch (w) {
	case JF_WHY_NONE: return 0;
	case JF_WHY_GANG: return 1;
	case JF_WHY_TIMEOUT: return 2;
	case JF_WHY_PREEMPT: return 3;
	case JF_WHY_DEADLINE: return 4;
	case JF_WHY_PAUSE: return 5;
	case JF_WHY_RESTART: return 6;
	case JF_WHY_STOP: return 7;
	}
	return 0;
}

static const char *why_words(enum jf_why w)
{
	switch (w) {
	case JF_WHY_TIMEOUT: return "the attempt ran past its timeout";
	case JF_WHY_STOP: return "stopped";
	case JF_WHY_PAUSE: return "paused";
	case JF_WHY_RESTART: return "restarting";
	case JF_WHY_GANG: return "another node of the task failed";
	case JF_WHY_DEADLINE: return "the group ran past activeDeadlineSeconds";
	case JF_WHY_PREEMPT: return "preempted by on-demand work";
	case JF_WHY_NONE: break;
	}
	return "";
}

void jf_eng_preempt_task(struct jf_engine *e, struct trun *t, int64_t grace_ms)
{
	if (why_rank(JF_WHY_PREEMPT) <= why_rank(t->why))
		return;  /* already ending for a stronger reason, or being preempted */
	t->why = JF_WHY_PREEMPT;
	struct grt *g = jf_eng_group(e, t->group_id);
	int64_t now = jf_eng_now(e);
	jf_store_begin(e->st);
	for (int64_t i = 0; i < t->nodes; i++) {
		struct run *r = jf_idmap_get(&e->runs, t->attempt_ids[i]);
		if (!r || r->kill_at_ms)
			continue;
		r->kill_at_ms = now + grace_ms;
		if (r->handle[0])
			jf_backend_signal(e->be, r->handle, JF_RUN_TERM);
		jf_node_set_state(e->st, r->node_id, JF_ST_RUNNING, JF_PREEMPTING_MSG, now);
		if (g) {
			jf_eng_event(e, g, t->task_id, t->idx, r->node_id, r->node_idx, "Warning",
				     "Preempting",
				     "on-demand work needs the GPUs: SIGTERM to %s, SIGKILL after "
				     "%llds", g->spec->containers[0].name,
				     (long long)(grace_ms / 1000));
			jf_eng_changed(e, JF_CH_NODE, g->queue_id, g->id, t->task_id, r->node_id,
				       false);
		}
	}
	jf_store_commit(e->st);
}

void jf_eng_kill_task(struct jf_engine *e, struct trun *t, enum jf_why why)
{
	if (why_rank(why) > why_rank(t->why))
		t->why = why;
	struct grt *g = jf_eng_group(e, t->group_id);
	int64_t now = jf_eng_now(e);
	for (int64_t i = 0; i < t->nodes; i++) {
		struct run *r = jf_idmap_get(&e->runs, t->attempt_ids[i]);
		if (!r || r->kill_at_ms)
			continue;
		if (why == JF_WHY_TIMEOUT)
			t->fail_timeout = true;
		r->kill_at_ms = now + e->kill_grace_ms;
		if (r->handle[0])
			jf_backend_signal(e->be, r->handle, JF_RUN_TERM);
		if (g) {
			jf_eng_event(e, g, t->task_id, t->idx, r->node_id, r->node_idx,
				     why == JF_WHY_TIMEOUT ? "Warning" : "Normal",
				     why == JF_WHY_TIMEOUT ? "DeadlineExceeded" : "Killing",
				     "stopping %s: %s (SIGTERM, SIGKILL after %llds)",
				     g->spec->containers[0].name, why_words(why),
				     (long long)(e->kill_grace_ms / 1000));
			jf_eng_changed(e, JF_CH_NODE, g->queue_id, g->id, t->task_id, r->node_id,
				       false);
		}
	}
}

int jf_eng_kill_group(struct jf_engine *e, int64_t group_id, enum jf_why why)
{
	int n = 0;
	if (e->delegated)
		jf_eng_delegate_kill_group(e, group_id, why);
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&e->tasks, &i, &k, &v)) {
		struct trun *t = v;
		if (t->group_id != group_id)
			continue;
		jf_eng_kill_task(e, t, why);
		n++;
	}
	return n;
}

/* ---- ending ---- */

static void describe_exit(const struct jf_run_result *r, char *buf, size_t n)
{
	if (r->lost)
		snprintf(buf, n, "%s", r->message[0] ? r->message : "supervisor lost");
	else if (r->start_failed)
		snprintf(buf, n, "%s", r->message[0] ? r->message : "could not start");
	else if (r->term_signal)
		snprintf(buf, n, "killed by signal %d (%s), exit code %d", r->term_signal,
			 strsignal(r->term_signal), r->exit_code);
	else
		snprintf(buf, n, "exit code %d", r->exit_code);
}

static bool succeeded_idx(void *ctx, int64_t i)
{
	void **c = ctx;
	struct jf_engine *e = c[0];
	struct grt *g = c[1];
	struct jf_task_rec t;
	if (jf_task_find(e->st, g->id, i, &t) != JF_OK)
		return false;
	bool ok = t.state == JF_ST_SUCCEEDED;
	jf_task_release(&t);
	return ok;
}

static void end_group(struct jf_engine *e, struct grt *g, int state, const char *reason,
		      const char *msg)
{
	int64_t now = jf_eng_now(e);
	jf_eng_group_ended(e, g, true);
	jf_store_begin(e->st);
	jf_group_set_state(e->st, g->id, state, msg, now);
	jf_task_set_state_all(e->st, g->id,
			      (1u << JF_ST_WAITING) | (1u << JF_ST_PAUSED), JF_ST_STOPPED,
			      "the group ended", now, NULL);
	jf_eng_group_event(e, 0, g->id, g->kind, state == JF_ST_SUCCEEDED ? "Normal" : "Warning",
			   reason, "%s", msg);
	if (g->queue_id)
		jf_eng_group_event(e, g->queue_id, 0, g->kind,
				   state == JF_ST_SUCCEEDED ? "Normal" : "Warning", reason,
				   "group %s: %s", g->dirname, msg);
	jf_store_commit(e->st);
	jf_eng_kill_group(e, g->id, JF_WHY_STOP);
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
}

/* ---- group timers: activeDeadlineSeconds and the queue's group_timeout ---- */

struct timer_ctx {
	struct jf_engine *e;
	int64_t now;
	int64_t next;       /* ms until the earliest timer still ahead, -1 none */
	bool ended;
};

static void timer_ahead(struct timer_ctx *tc, int64_t at)
{
	int64_t in = at - tc->now;
	if (tc->next < 0 || in < tc->next)
		tc->next = in;
}

static int check_group_timers(void *ctx, int64_t gid)
{
	struct timer_ctx *tc = ctx;
	struct jf_engine *e = tc->e;
	struct jf_group_rec rec;
	if (jf_group_get(e->st, gid, &rec) != JF_OK)
		return 0;
	int state = rec.state;
	int64_t submitted = rec.submitted_ms, started = rec.started_ms, queue_id = rec.queue_id;
	jf_group_release(&rec);
	if (state != JF_ST_WAITING && state != JF_ST_RUNNING)
		return 0;
	struct grt *g = jf_eng_group(e, gid);
	if (!g)
		return 0;
	char msg[160];
	if (g->spec->active_deadline > 0 && submitted > 0) {
		int64_t at = submitted + g->spec->active_deadline * 1000;
		if (tc->now >= at) {
			snprintf(msg, sizeof(msg), "DeadlineExceeded: the group ran past "
				 "activeDeadlineSeconds (%llds)", (long long)g->spec->active_deadline);
			end_group(e, g, JF_ST_FAILED, "DeadlineExceeded", msg);
			tc->ended = true;
			return 0;
		}
		timer_ahead(tc, at);
	}
	if (queue_id && started == 0 && submitted > 0) {
		struct jf_queue_rec q;
		int64_t limit = 0;
		if (jf_queue_get(e->st, queue_id, &q) == JF_OK)
			limit = q.group_timeout;
		jf_queue_release(&q);
		if (limit > 0 && tc->now >= submitted + limit * 1000) {
			snprintf(msg, sizeof(msg), "GroupTimeout: no task started within the queue's "
				 "group_timeout (%llds); the queue moves on", (long long)limit);
			end_group(e, g, JF_ST_STOPPED, "GroupTimeout", msg);
			tc->ended = true;
		} else if (limit > 0) {
			timer_ahead(tc, submitted + limit * 1000);
		}
	}
	return 0;
}

int64_t jf_eng_group_timers(struct jf_engine *e)
{
	struct timer_ctx tc = { e, jf_eng_now(e), -1, false };
	jf_group_list_active(e->st, check_group_timers, &tc);
	/* a group that ended frees its queue: the next one may start now */
	if (tc.ended)
		jf_eng_schedule(e);
	return tc.next;
}

void jf_eng_settle_group(struct jf_engine *e, struct grt *g)
{
	struct jf_group_rec rec;
	if (jf_group_get(e->st, g->id, &rec) != JF_OK)
		return;
	int state = rec.state;
	int64_t completions = rec.completions;
	jf_group_release(&rec);
	if (state != JF_ST_WAITING && state != JF_ST_RUNNING)
		return;
	int64_t c[JF_ST__COUNT];
	if (jf_group_count_tasks(e->st, g->id, c) != JF_OK)
		return;
	struct jf_group_counts gc = {
		.completions = completions,
		.succeeded = c[JF_ST_SUCCEEDED],
		.failed = c[JF_ST_FAILED],
		.running = c[JF_ST_INITIALIZING] + c[JF_ST_RUNNING],
		.waiting = c[JF_ST_WAITING],
		.stopped = c[JF_ST_STOPPED],
	};
	const char *reason = "";
	void *ctx[2] = { e, g };
	enum jf_group_verdict v = jf_judge_group(g->spec, &gc, succeeded_idx, ctx, &reason);
	char msg[256];
	if (v == JF_GV_SUCCEEDED) {
		snprintf(msg, sizeof(msg), "%lld/%lld tasks succeeded%s", (long long)gc.succeeded,
			 (long long)completions,
			 strcmp(reason, "SuccessPolicy") == 0 ? " (success policy met)" : "");
		end_group(e, g, JF_ST_SUCCEEDED, "Completed", msg);
		return;
	}
	if (v == JF_GV_STOPPED) {
		snprintf(msg, sizeof(msg), "%lld/%lld tasks succeeded, %lld stopped",
			 (long long)gc.succeeded, (long long)completions, (long long)gc.stopped);
		end_group(e, g, JF_ST_STOPPED, "Stopped", msg);
		return;
	}
	if (v == JF_GV_FAILED) {
		snprintf(msg, sizeof(msg), "%s: %lld of %lld tasks failed", reason,
			 (long long)gc.failed, (long long)completions);
		end_group(e, g, JF_ST_FAILED, "Failed", msg);
		return;
	}
	int64_t now = jf_eng_now(e);
	if (gc.running > 0 && state == JF_ST_WAITING) {
		jf_group_set_state(e->st, g->id, JF_ST_RUNNING, "", now);
		jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
	} else if (gc.running == 0 && state == JF_ST_RUNNING) {
		jf_group_set_state(e->st, g->id, JF_ST_WAITING, "", now);
		jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
	}
}

/*
 * The task's last node has ended: apply the rules.  carried: the caller's
 * transaction (the node's end) is open and is committed with this one's,
 * before anything is signalled or started - one sync for both.
 */
static void resolve_task(struct jf_engine *e, struct grt *g, struct trun *t, bool carried)
{
	int64_t now = jf_eng_now(e);
	struct jf_task_rec tr;
	if (jf_task_get(e->st, t->task_id, &tr) != JF_OK) {
		if (carried)
			jf_store_commit(e->st);
		return;
	}
	struct jf_group_rec gr;
	if (jf_group_get(e->st, g->id, &gr) != JF_OK) {
		jf_task_release(&tr);
		if (carried)
			jf_store_commit(e->st);
		return;
	}
	int64_t failures = tr.failures, gfailures = gr.failures;
	int tstate = tr.state;
	jf_task_release(&tr);
	jf_group_release(&gr);

	bool in_place = false;
	jf_store_begin(e->st);
	switch (t->why) {
	case JF_WHY_STOP:
		if (!jf_state_final(tstate))
			jf_task_set_state(e->st, t->task_id, JF_ST_STOPPED, "stopped", now);
		break;
	case JF_WHY_PAUSE:
		jf_task_set_state(e->st, t->task_id, JF_ST_PAUSED, "paused", now);
		break;
	case JF_WHY_RESTART:
		jf_task_set_state(e->st, t->task_id, JF_ST_WAITING, "", now);
		break;
	case JF_WHY_DEADLINE:
		jf_task_set_state(e->st, t->task_id, JF_ST_FAILED, "DeadlineExceeded", now);
		break;
	case JF_WHY_PREEMPT:
		/* waits again; a preemption never uses up a retry (DESIGN 3) */
		jf_task_set_state(e->st, t->task_id, JF_ST_WAITING, JF_PREEMPTED_MSG, now);
		jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Warning", "Preempted",
			     "attempt %lld preempted by on-demand work; waiting to run again, "
			     "%lld retries used", (long long)t->attempt, (long long)failures);
		break;
	case JF_WHY_NONE:
	case JF_WHY_GANG:
	case JF_WHY_TIMEOUT:
		if (!t->failed) {
			jf_task_set_state(e->st, t->task_id, JF_ST_SUCCEEDED, "", now);
			jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Normal", "Completed",
				     "attempt %lld succeeded", (long long)t->attempt);
			break;
		}
		struct jf_exit_facts f = {
			.exit_code = t->fail_code,
			.container = t->fail_container[0] ? t->fail_container : NULL,
			.disruption = false,
			.task_failures = failures,
			.group_failures = gfailures,
		};
		const char *reason = "";
		enum jf_verdict v = jf_judge_exit(g->spec, &f, &reason);
		const char *what = t->fail_timeout ? "timed out" : "failed";
		if (v != JF_V_RETRY_FREE) {
			failures++;
			jf_group_add_failure(e->st, g->id);
		}
		jf_task_set_counters(e->st, t->task_id, t->attempt, failures);
		char left[64] = "";
		if (g->spec->retries >= 0)
			snprintf(left, sizeof(left), ", %lld retries left",
				 (long long)(g->spec->retries - failures));
		switch (v) {
		case JF_V_RETRY_IN_PLACE:
			in_place = true;
			jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Warning", "BackOff",
				     "attempt %lld %s (exit code %d); restarting in place%s",
				     (long long)t->attempt, what, t->fail_code, left);
			break;
		case JF_V_RETRY_NEW:
		case JF_V_RETRY_FREE:
			jf_task_set_state(e->st, t->task_id, JF_ST_WAITING, "", now);
			jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Warning", "BackOff",
				     "attempt %lld %s (exit code %d); %s%s", (long long)t->attempt,
				     what, t->fail_code,
				     v == JF_V_RETRY_FREE ? "retrying, not counted ("
							  : "retrying with a new attempt",
				     v == JF_V_RETRY_FREE ? "podFailurePolicy Ignore)" : left);
			break;
		case JF_V_FAIL_TASK:
		case JF_V_FAIL_GROUP: {
			char msg[256];
			snprintf(msg, sizeof(msg), "%s: attempt %lld %s with exit code %d", reason,
				 (long long)t->attempt, what, t->fail_code);
			jf_task_set_state(e->st, t->task_id, JF_ST_FAILED, msg, now);
			jf_eng_event(e, g, t->task_id, t->idx, 0, 0, "Warning", "Failed", "%s", msg);
			g->failed_tasks++;
			if (v == JF_V_FAIL_GROUP) {
				jf_store_commit(e->st);
				if (carried)
					jf_store_commit(e->st);
				release_slots(e, t);
				jf_idmap_del(&e->tasks, t->task_id);
				jf_trun_free(t);
				end_group(e, g, JF_ST_FAILED, "Failed", msg);
				return;
			}
			break;
		}
		}
		break;
	}
	/* a scheduling backend runs a task again only when it queued it again
	 * itself (a requeue after preemption); otherwise another batch must */
	if (e->delegated && !t->requeued)
		jf_task_set_sub(e->st, t->task_id, 0);
	jf_store_commit(e->st);
	if (carried)
		jf_store_commit(e->st);
	jf_eng_changed(e, JF_CH_TASK, g->queue_id, g->id, t->task_id, 0, false);
	if (in_place && !t->held) {
		/* resolved after a restart (jf_eng_resolve_ended): no slots to
		 * restart in; the new attempt is placed afresh */
		jf_store_begin(e->st);
		jf_task_set_state(e->st, t->task_id, JF_ST_WAITING, "", now);
		jf_store_commit(e->st);
		in_place = false;
	}
	if (in_place) {
		/* same slots, new attempt on every node */
		struct jf_group_rec rec;
		uid_t uid = 0;
		gid_t gid = 0;
		if (jf_group_get(e->st, g->id, &rec) == JF_OK) {
			uid = rec.uid;
			gid = rec.gid;
			jf_group_release(&rec);
		}
		jf_idmap_del(&e->tasks, t->task_id);
		jf_eng_start_task(e, g, t, uid, gid);
		return;
	}
	release_slots(e, t);
	jf_idmap_del(&e->tasks, t->task_id);
	jf_trun_free(t);
	jf_eng_settle_group(e, g);
}

bool jf_eng_resolve_ended(struct jf_engine *e, struct grt *g, int64_t task_id,
			  int64_t task_idx)
{
	struct jf_task_rec tr;
	if (jf_task_get(e->st, task_id, &tr) != JF_OK)
		return false;
	int64_t attempt = tr.attempt;
	jf_task_release(&tr);
	struct trun *t = jf_trun_new(task_id, g->id, task_idx, g->spec->nodes);
	if (!t)
		return false;
	t->attempt = attempt;
	/* why it ended, as far as the store tells: a pause or stop of the
	 * group, a preemption of the node; else by its exit codes */
	struct jf_group_rec gr;
	if (jf_group_get(e->st, g->id, &gr) == JF_OK) {
		if (gr.state == JF_ST_PAUSED)
			t->why = JF_WHY_PAUSE;
		else if (gr.state == JF_ST_STOPPED)
			t->why = JF_WHY_STOP;
		jf_group_release(&gr);
	}
	bool ended = true;
	for (int64_t i = 0; i < t->nodes && ended; i++) {
		struct jf_node_rec n;
		struct jf_attempt_rec a;
		if (jf_node_find(e->st, task_id, i, &n) != JF_OK) {
			ended = false;
			break;
		}
		int64_t aid = n.attempt_id;
		if (n.state == JF_ST_PREEMPTED && t->why == JF_WHY_NONE)
			t->why = JF_WHY_PREEMPT;
		jf_node_release(&n);
		if (!aid || jf_attempt_get(e->st, aid, &a) != JF_OK) {
			ended = false;
			break;
		}
		ended = a.end_ms != 0;
		if (ended && a.exit_code != 0 && !t->failed) {
			t->failed = true;
			t->fail_code = a.exit_code;
		}
		jf_attempt_release(&a);
	}
	if (!ended || !jf_idmap_put(&e->tasks, task_id, t)) {
		jf_trun_free(t);
		return false;
	}
	resolve_task(e, g, t, false);
	return true;
}

void jf_eng_finish(struct jf_engine *e, const struct jf_run_result *res)
{
	int64_t attempt_id = (int64_t)res->cookie;
	struct run *r = jf_idmap_del(&e->runs, attempt_id);
	if (!r)
		return;
	struct trun *t = jf_idmap_get(&e->tasks, r->task_id);
	struct grt *g = jf_eng_group(e, r->group_id);
	int64_t now = jf_eng_now(e);
	int64_t end_ms = res->end_ms > 0 ? res->end_ms : now;
	bool ok = res->exit_code == 0 && !res->lost && !res->start_failed;
	char how[JF_RUN_MSG_MAX + 64];
	describe_exit(res, how, sizeof(how));

	enum jf_why why = t ? t->why : JF_WHY_NONE;
	int nstate;
	const char *reason, *type = "Normal";
	switch (why) {
	case JF_WHY_STOP:
		nstate = JF_ST_STOPPED;
		reason = "Killing";
		break;
	case JF_WHY_PAUSE:
		nstate = JF_ST_PAUSED;
		reason = "Killing";
		break;
	case JF_WHY_RESTART:
		nstate = JF_ST_WAITING;
		reason = "Killing";
		break;
	case JF_WHY_PREEMPT:
		nstate = JF_ST_PREEMPTED;
		reason = "Preempted";
		type = "Warning";
		break;
	default:
		nstate = ok ? JF_ST_SUCCEEDED : JF_ST_FAILED;
		reason = ok ? "Completed" : "Failed";
		type = ok ? "Normal" : "Warning";
		if (!ok && t && t->fail_timeout)
			reason = "DeadlineExceeded";
		break;
	}

	/* the task's last node: its end and the task's verdict share one
	 * transaction (resolve_task commits it); nothing is signalled between */
	bool last = t && g && t->live <= 1;
	jf_store_begin(e->st);
	/* a short task that rotated its logs is told of it before it ends */
	jf_eng_check_rotation(e, r, true);
	if (g && r->started && g->spec->billing == JF_BILL_ONDEMAND && g->req.gpus > 0)
		jf_eng_demand(e, g->req.model, -g->req.gpus);
	jf_attempt_ended(e->st, attempt_id, end_ms, res->exit_code, how);
	jf_ledger_close(e->st, attempt_id, end_ms);
	jf_node_set_state(e->st, r->node_id, nstate,
			  why == JF_WHY_PREEMPT ? JF_PREEMPTED_MSG : ok ? "" : how, now);
	struct jf_node_rec nr;
	if (jf_node_get(e->st, r->node_id, &nr) == JF_OK) {
		jf_node_set_run(e->st, r->node_id, nr.machine, nr.gpu_ids, nr.pid, res->exit_code,
				nr.attempt, nr.attempt_id);
		jf_node_release(&nr);
	}
	if (g) {
		const char *cname = res->nprocs ? res->procs[0].name : "main";
		for (size_t i = 0; i < res->nprocs; i++)
			if (res->procs[i].exit_code != 0) {
				cname = res->procs[i].name;
				break;
			}
		if (why == JF_WHY_PREEMPT)
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx, type,
				     reason, "%s preempted by on-demand work (%s); billed up to "
				     "its end, it waits to run again", cname, how);
		else if (reason[0] == 'K')
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx, type,
				     "Stopped", "%s ended: %s", cname, how);
		else
			jf_eng_event(e, g, r->task_id, t ? t->idx : 0, r->node_id, r->node_idx, type,
				     reason, "%s %s", cname, how);
	}
	if (!last)
		jf_store_commit(e->st);

	if (t) {
		for (int64_t i = 0; i < t->nodes; i++)
			if (t->attempt_ids[i] == attempt_id) {
				if (t->slots[i].machine < e->cluster->nmachines &&
				    e->use[t->slots[i].machine].nodes > 0)
					e->use[t->slots[i].machine].nodes--;
				t->attempt_ids[i] = 0;
			}
		t->live--;
		if (!ok && !t->failed && why_rank(t->why) <= why_rank(JF_WHY_TIMEOUT)) {
			t->failed = true;
			t->fail_code = res->exit_code;
			snprintf(t->fail_container, sizeof(t->fail_container), "%s",
				 res->nprocs ? res->procs[0].name : "");
			for (size_t i = 0; i < res->nprocs; i++)
				if (res->procs[i].exit_code != 0) {
					snprintf(t->fail_container, sizeof(t->fail_container), "%s",
						 res->procs[i].name);
					break;
				}
			if (t->nodes > 1 && t->live > 0)
				jf_eng_kill_task(e, t, JF_WHY_GANG);
		}
	}
	if (g)
		jf_eng_changed(e, JF_CH_NODE, g->queue_id, g->id, r->task_id, r->node_id, false);
	free(r);
	if (t && t->live <= 0 && g)
		resolve_task(e, g, t, last);
	else if (last)
		jf_store_commit(e->st);   /* cannot happen (last: no node left); never left open */
	jf_eng_changed(e, JF_CH_BILLING, 0, 0, 0, 0, false);
}

