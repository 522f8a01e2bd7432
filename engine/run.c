/*
 * run.c - starting tasks, reaping them, and what follows from an end.
 *
 * A task's life in the engine: schedule() places all its nodes at once
 * (gang) and start_task() records the placement, then starts one attempt
 * per node on the backend; kill_task() and preempt_task() end it early.
 * What follows an end is in ending.c.
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

#include "backends/fault.h"
#include "core/alloc.h"
#include "core/billing.h"


/* mkdir -p: the directory itself first, its parents only when missing
 * (the state directory's runs/ and ckpt/ are there nearly always). */
static int mkdir_p(const char *path, mode_t mode)
{
	if (mkdir(path, mode) == 0 || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -1;
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s", path);
	char *slash = strrchr(tmp, '/');
	if (!slash || slash == tmp)
		return -1;
	*slash = '\0';
	if (mkdir_p(tmp, 0755) < 0)
		return -1;
	return mkdir(path, mode) == 0 || errno == EEXIST ? 0 : -1;
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

struct run *jf_eng_run_add(struct jf_engine *e, int64_t attempt_id, int64_t node_id,
			   int64_t task_id, int64_t group_id, int64_t node_idx, int64_t attempt,
			   const char *handle)
{
	struct run *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->attempt_id = attempt_id;
	r->node_id = node_id;
	r->task_id = task_id;
	r->group_id = group_id;
	r->node_idx = node_idx;
	r->attempt = attempt;
	snprintf(r->handle, sizeof(r->handle), "%s", handle ? handle : "");
	if (!jf_idmap_put(&e->runs, attempt_id, r)) {
		free(r);
		return NULL;
	}
	return r;
}

void jf_eng_release_slots(struct jf_engine *e, struct trun *t)
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

void jf_eng_bill_start(struct jf_engine *e, const struct grt *g, int64_t task_id, int64_t task_idx,
		       int64_t node_id, int64_t node_idx, int64_t attempt_id, int64_t attempt,
		       int64_t start_ms)
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
	jf_eng_budget_touch(e, g->queue_id);
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
	if (jf_fault_hit(point))
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
static void prepare_node(struct jf_engine *e, struct grt *g, struct trun *t, int64_t ni, uid_t uid,
			 gid_t gid)
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

	jf_eng_run_dir(e, node_id, attempt, run_dir, sizeof(run_dir));
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt/%lld", e->state_dir, (long long)t->task_id);
	snprintf(work, sizeof(work), "%s/work", run_dir);
	bool dirs_ok =
		mkdir_p(run_dir, 0755) == 0 && mkdir_p(ckpt, 0700) == 0 && mkdir_p(work, 0700) == 0;
	give_to(ckpt, uid, gid);
	give_to(work, uid, gid);

	jf_eng_step_begin(e);
	jf_attempt_create(e->st, node_id, attempt, run_dir, machine, gpu_ids, slot->cpu_milli,
			  jf_eng_now(e), &attempt_id);
	jf_eng_move(e, JF_OBJ_NODE(g, t->task_id, node_id), JF_EV_PLACE, "");
	jf_node_set_run(e->st, node_id, machine, gpu_ids, 0, -1, attempt, attempt_id);
	jf_eng_node_images(e, g, node_id);
	if (slot->gpu_mask)
		jf_eng_event(e, g, t->task_id, t->idx, node_id, ni, "Normal", "Scheduled",
			     "assigned to %s, GPUs %s", machine, gpu_ids);
	else
		jf_eng_event(e, g, t->task_id, t->idx, node_id, ni, "Normal", "Scheduled",
			     "assigned to %s, %lldm CPU", machine, (long long)slot->cpu_milli);
	if (!jf_eng_step_end(e) || !attempt_id)
		return;

	struct run *r =
		jf_eng_run_add(e, attempt_id, node_id, t->task_id, g->id, ni, attempt, NULL);
	if (!r)
		return;
	t->attempt_ids[ni] = attempt_id;
	t->live++;
	e->use[slot->machine].nodes++;
	r->no_dirs = !dirs_ok;
}

static void record_start(struct jf_engine *e, struct grt *g, struct trun *t, struct run *r,
			 pid_t pid, int64_t start_ms);

void jf_eng_launch_node(struct jf_engine *e, struct grt *g, struct trun *t, int64_t ni, uid_t uid,
			gid_t gid)
{
	const struct jf_spec *s = g->spec;
	const struct jf_sched_slot *slot = &t->slots[ni];
	char gpu_ids[JF_GPU_IDS_MAX], run_dir[4096], ckpt[4096], work[4200];
	struct run *r = jf_idmap_get(&e->runs, t->attempt_ids[ni]);
	if (!r)
		return;
	int64_t node_id = r->node_id, attempt_id = r->attempt_id, attempt = r->attempt;
	jf_gpu_ids_format(slot->gpu_mask, gpu_ids, sizeof(gpu_ids));
	jf_eng_run_dir(e, node_id, attempt, run_dir, sizeof(run_dir));
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
	memset(procs, 0, sizeof(procs));
	char **envs[JF_RUN_MAX_PROCS] = { 0 };
	char **argvs[JF_RUN_MAX_PROCS] = { 0 };
	char **ienvs[JF_RUN_MAX_PROCS] = { 0 };
	struct jf_proc_image images[JF_RUN_MAX_PROCS];
	size_t np = s->ncontainers < JF_RUN_MAX_PROCS ? s->ncontainers : JF_RUN_MAX_PROCS;
	bool ok = true;
	/* each container sees the GPUs the allocator gave it (reference 5.3) */
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
		if (!jf_env_proc(e, g, c, t->idx, ni, attempt, cgpus, ckpt, uid, &procs[i],
				 &argvs[i], &envs[i])) {
			ok = false;
			break;
		}
		bool oom = false;
		if (jf_eng_proc_image(e, g, c, t->idx, ni, attempt, cgpus, ckpt, uid, &images[i],
				      &ienvs[i], &oom))
			procs[i].image = &images[i];
		else if (oom) {
			ok = false;
			break;
		}
		/* resources.limits (reference 8.2) are enforced, at what the
		 * allocator gave the container (5.3); a container without
		 * limits gets no cgroup of its own on the host (each costs a
		 * few mkdir and writes per start) */
		if (c->cpu_milli > 0)
			procs[i].cpu_milli = al ? al->c[i].cpu_milli : c->cpu_milli;
		if (c->mem_bytes > 0)
			procs[i].mem_bytes = al ? al->c[i].mem_bytes : c->mem_bytes;
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
	int ports[JF_SPEC_MAX_PORTS];
	size_t nports = 0;
	for (size_t i = 0; i < s->nports && i < JF_SPEC_MAX_PORTS; i++)
		ports[nports++] = s->ports[i].port;
	/* storage (reference 8.3): the node's emptydirs and the host
	 * directories of its volumes and object sources */
	struct jf_mount mounts[JF_SPEC_MAX_STORAGE];
	static char mbufs[JF_SPEC_MAX_STORAGE][4096]; /* the loop's thread only */
	char mwhy[256] = "";
	ssize_t nmounts =
		jf_eng_stor_mounts(e, s, mounts, mbufs, JF_SPEC_MAX_STORAGE, mwhy, sizeof(mwhy));
	if (ok && nmounts < 0) {
		ok = false;
		rc = jf_error_set(&err, JF_ENOENT, 0, "storage: %s", mwhy);
	}
	fault("prestart");
	if (ok) {
		struct jf_launch l = {
			.run_dir = run_dir,
			.cwd = work,
			.uid = uid,
			.gid = gid,
			.procs = procs,
			.nprocs = np,
			.log_cap_bytes = e->log_cap,
			.cpus = ncpus ? cpus : NULL,
			.ncpus = ncpus,
			.rt = e->rt,
			.registry_auth = s->registry_auth,
			.shm_bytes = s->shm_size,
			.ports = nports ? ports : NULL,
			.nports = nports,
			.mounts = nmounts > 0 ? mounts : NULL,
			.nmounts = nmounts > 0 ? (size_t)nmounts : 0,
			.evict_check_ms = e->evict_check_ms,
		};
		rc = jf_runner_start(e->run, &l, (uint64_t)attempt_id, &started, &err);
	}
	for (size_t i = 0; i < np; i++) {
		jf_env_free(envs[i]);
		jf_env_free(ienvs[i]);
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
		record_start(e, g, t, r, started.pid, jf_eng_from_wall(e, started.start_ms));
}

/*
 * The node's processes run since start_ms (the backend's word: for the
 * local backend the shim's ready line): the node is Running, billed and
 * timed from then; the task is Running once all its nodes are.  A crash before this is recorded
 * leaves an attempt without a handle, which recover() settles (adopt.c).
 */
static void record_start(struct jf_engine *e, struct grt *g, struct trun *t, struct run *r,
			 pid_t pid, int64_t start_ms)
{
	const struct jf_spec *s = g->spec;
	int64_t ni = r->node_idx;
	const struct jf_sched_slot *slot = &t->slots[ni];
	const char *machine = slot->machine < e->cluster->nmachines
				      ? e->cluster->machines[slot->machine].name
				      : "";
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

	jf_eng_step_begin(e);
	jf_attempt_started(e->st, attempt_id, r->handle, pid, start_ms);
	/* a node already being stopped or preempted keeps its message */
	jf_eng_move(e, JF_OBJ_NODE(g, t->task_id, node_id), JF_EV_START, r->kill_at_ms ? NULL : "");
	jf_node_set_run(e->st, node_id, machine, gpu_ids, pid, -1, attempt, attempt_id);
	jf_eng_bill_start(e, g, t->task_id, t->idx, node_id, ni, attempt_id, attempt, start_ms);
	if (s->billing == JF_BILL_ONDEMAND && g->req.gpus > 0)
		jf_eng_demand(e, g->req.model, g->req.gpus);
	size_t np = s->ncontainers < JF_RUN_MAX_PROCS ? s->ncontainers : JF_RUN_MAX_PROCS;
	bool oci = e->rt && !e->delegated;
	for (size_t i = 0; i < np; i++) {
		const struct jf_container *c = &s->containers[i];
		if (c->image && oci)
			continue; /* its supervisor said Created (a note) */
		if (c->image)
			jf_eng_event(e, g, t->task_id, t->idx, node_id, ni, "Normal", "Created",
				     "created %s; image %s not pulled: this jobfs runs the command "
				     "on the host (runtime host, %s backend)",
				     c->name, c->image, jf_engine_backend_name(e));
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
		jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_START, "");
	if (oci)
		jf_eng_pull_ok(e, g);
	if (s->nstorage)
		jf_eng_stor_mounted(e, g, t->idx, ni, node_id);
	jf_eng_step_end(e);
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

bool jf_eng_start_prepare(struct jf_engine *e, struct grt *g, struct trun *t, uid_t uid, gid_t gid)
{
	struct jf_task_rec tr;
	if (jf_task_get(e->st, t->task_id, &tr) != JF_OK) {
		jf_eng_release_slots(e, t);
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
		jf_eng_release_slots(e, t);
		jf_trun_free(t);
		return false;
	}
	if (g->spec->cpu_exclusive && g->req.gpus > 0 && !t->cpusets)
		for (int64_t n = 0; n < t->nodes; n++)
			jf_eng_take_cores(e, t, n, NULL);
	jf_eng_step_begin(e);
	jf_eng_move(e, JF_OBJ_TASK(g, t->task_id), JF_EV_PLACE, "");
	jf_task_set_counters(e->st, t->task_id, t->attempt, failures);
	for (int64_t i = 0; i < t->nodes; i++)
		prepare_node(e, g, t, i, uid, gid);
	jf_eng_step_end(e);
	return true;
}

/* The action that starts t's supervisors, once its attempts are committed. */
static void launch_task(struct jf_engine *e, int64_t task_id, int64_t uid, int64_t gid)
{
	struct trun *t = jf_idmap_get(&e->tasks, task_id);
	struct grt *g = t ? jf_eng_group(e, t->group_id) : NULL;
	if (!g)
		return;
	int64_t nodes = t->nodes;
	for (int64_t i = 0; i < nodes; i++) {
		/* a start failure may have ended the task (its last node) */
		if (jf_idmap_get(&e->tasks, task_id) != t)
			break;
		jf_eng_launch_node(e, g, t, i, (uid_t)uid, (gid_t)gid);
	}
	jf_eng_changed(e, JF_CH_TASK, g->queue_id, g->id, task_id, 0, true);
}

void jf_eng_start_launch(struct jf_engine *e, struct trun *t, uid_t uid, gid_t gid)
{
	jf_eng_after(e, launch_task, t->task_id, uid, gid);
}

/* The action that starts one node's supervisor (adopt.c: recorded, never started). */
static void launch_one(struct jf_engine *e, int64_t attempt_id, int64_t uid, int64_t gid)
{
	struct run *r = jf_idmap_get(&e->runs, attempt_id);
	struct trun *t = r ? jf_idmap_get(&e->tasks, r->task_id) : NULL;
	struct grt *g = t ? jf_eng_group(e, t->group_id) : NULL;
	if (g && r->node_idx < t->nodes && t->attempt_ids[r->node_idx] == attempt_id)
		jf_eng_launch_node(e, g, t, r->node_idx, (uid_t)uid, (gid_t)gid);
}

void jf_eng_launch_later(struct jf_engine *e, int64_t attempt_id, uid_t uid, gid_t gid)
{
	jf_eng_after(e, launch_one, attempt_id, uid, gid);
}

/* A run's handle came from the runner's start, or from the scheduler's
 * STARTED note (one element of a batch). */
static void jf_eng_signal(struct jf_engine *e, const char *handle, enum jf_run_signal sig)
{
	if (e->sch)
		jf_scheduler_signal(e->sch, handle, sig);
	else
		jf_runner_signal(e->run, handle, sig);
}

void jf_eng_act_term(struct jf_engine *e, int64_t attempt_id, int64_t b, int64_t c)
{
	(void)b;
	(void)c;
	struct run *r = jf_idmap_get(&e->runs, attempt_id);
	if (r && r->handle[0])
		jf_eng_signal(e, r->handle, JF_RUN_TERM);
}

void jf_eng_act_kill(struct jf_engine *e, int64_t attempt_id, int64_t b, int64_t c)
{
	(void)b;
	(void)c;
	struct run *r = jf_idmap_get(&e->runs, attempt_id);
	if (r && r->handle[0])
		jf_eng_signal(e, r->handle, JF_RUN_KILL);
}

/* Start all nodes of a placed task.  Takes the slots (already subtracted). */
void jf_eng_start_task(struct jf_engine *e, struct grt *g, struct trun *t, uid_t uid, gid_t gid)
{
	/* one transaction for the gang's attempts, one for its starts: the
	 * attempts are durable before any supervisor starts */
	jf_eng_step_begin(e);
	if (jf_eng_start_prepare(e, g, t, uid, gid))
		jf_eng_start_launch(e, t, uid, gid);
	jf_eng_step_end(e);
}

/* ---- killing ---- */

int jf_eng_why_rank(enum jf_why w)
{
	switch (w) {
	case JF_WHY_NONE:
		return 0;
	case JF_WHY_GANG:
		return 1;
	case JF_WHY_IMAGEPULL:
		return 2;
	case JF_WHY_TIMEOUT:
		return 3;
	case JF_WHY_PREEMPT:
		return 4;
	case JF_WHY_DEADLINE:
		return 5;
	case JF_WHY_PAUSE:
		return 6;
	case JF_WHY_RESTART:
		return 7;
	case JF_WHY_STOP:
		return 8;
	}
	return 0;
}

static const char *why_words(enum jf_why w)
{
	switch (w) {
	case JF_WHY_TIMEOUT:
		return "the attempt ran past its timeout";
	case JF_WHY_STOP:
		return "stopped";
	case JF_WHY_PAUSE:
		return "paused";
	case JF_WHY_RESTART:
		return "restarting";
	case JF_WHY_GANG:
		return "another node of the task failed";
	case JF_WHY_DEADLINE:
		return "the group ran past activeDeadlineSeconds";
	case JF_WHY_PREEMPT:
		return "preempted by on-demand work";
	case JF_WHY_IMAGEPULL:
		return "an image of the task could not be pulled";
	case JF_WHY_NONE:
		break;
	}
	return "";
}

void jf_eng_preempt_task(struct jf_engine *e, struct trun *t, int64_t grace_ms)
{
	if (jf_eng_why_rank(JF_WHY_PREEMPT) <= jf_eng_why_rank(t->why))
		return; /* already ending for a stronger reason, or being preempted */
	t->why = JF_WHY_PREEMPT;
	struct grt *g = jf_eng_group(e, t->group_id);
	int64_t now = jf_eng_now(e);
	jf_eng_step_begin(e);
	for (int64_t i = 0; i < t->nodes; i++) {
		struct run *r = jf_idmap_get(&e->runs, t->attempt_ids[i]);
		if (!r || r->kill_at_ms)
			continue;
		r->kill_at_ms = now + grace_ms;
		/* kept, so that a daemon restarted during the grace keeps it */
		jf_attempt_set_preempting(e->st, r->attempt_id, r->kill_at_ms);
		jf_eng_after(e, jf_eng_act_term, r->attempt_id, 0, 0);
		jf_node_set_message(e->st, r->node_id, JF_PREEMPTING_MSG);
		if (g) {
			jf_eng_event(e, g, t->task_id, t->idx, r->node_id, r->node_idx, "Warning",
				     "Preempting",
				     "on-demand work needs the GPUs: SIGTERM to %s, SIGKILL after "
				     "%llds",
				     g->spec->containers[0].name,
				     (long long)((grace_ms + 999) / 1000));
			jf_eng_changed(e, JF_CH_NODE, g->queue_id, g->id, t->task_id, r->node_id,
				       false);
		}
	}
	jf_eng_step_end(e);
}

void jf_eng_kill_task(struct jf_engine *e, struct trun *t, enum jf_why why)
{
	if (jf_eng_why_rank(why) > jf_eng_why_rank(t->why))
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
		jf_eng_after(e, jf_eng_act_term, r->attempt_id, 0, 0);
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
