/*
 * delegate.c - the engine over a backend that schedules for itself (slurm).
 *
 * The planner does not run: the backend decides when and where a task
 * runs.  What the engine still decides is how much it hands over, and it
 * keeps the tree's contract with that:
 *
 *   - A group's waiting tasks go to the backend in batches (one Slurm job
 *     array each), recorded first in the outbox (store: submissions, and
 *     each task's sub_id), then sent; a batch whose answer was lost is sent
 *     again marked `resend`, and the backend finds it by its key instead
 *     of submitting it twice.
 *   - Parallelism and queue capacity hold exactly, through each batch's
 *     throttle (most elements running at once).  At most
 *         sum over a group's batches of min(throttle, unfinished)
 *     of its tasks can run; a new batch gets a throttle of at most what is
 *     left of the parallelism, and throttles only grow into room that
 *     opened, so that sum never exceeds it.  A queue's capacity (nodes)
 *     bounds the same sums times the nodes per task, over the queue's
 *     groups in submission order.
 *   - What the backend tells (notes) becomes the same records the local
 *     backend leads to: an element that started becomes one attempt per
 *     node (run directory DIR/<idx>/<run>/<node>, billed from the
 *     backend's start time), its end becomes each node's result through
 *     jf_eng_finish() and resolve_task()'s rules.  A run the backend
 *     requeued is a preemption: no retry used, the task waits, and the
 *     backend runs it again (attempt = the batch's base + run).  A retry
 *     takes the task out of its batch (sub_id 0) and a later batch runs it.
 *   - pause holds what has not started and stops what runs; resume
 *     releases the hold (the stopped tasks go in a new batch); stop,
 *     restart and the group's timers cancel the batches.
 *
 * Batch directories are STATE/slurm/<key>; checkpoints STATE/ckpt/g<group>/<idx>.
 * What the backend tells is handled in delegate_notes.c.
 */
#include "engine/engine_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/billing.h"
#include "core/grow.h"
#include "core/room.h"

#define DEFAULT_CPU_MILLI 1000

/* ---- small helpers ---- */

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
	return mkdir(tmp, mode) < 0 && errno != EEXIST ? -1 : 0;
}

static void give_to(const char *path, uid_t uid, gid_t gid)
{
	if (geteuid() == 0 && (uid != 0 || gid != 0) && chown(path, uid, gid) < 0) {
		/* the job cannot write there: its output says so */
	}
}

void jf_dlg_batch_dir(struct jf_engine *e, uint64_t key, char *buf, size_t n)
{
	snprintf(buf, n, "%s/slurm/%" PRIu64, e->state_dir, key);
}

static void ckpt_root(struct jf_engine *e, int64_t group_id, char *buf, size_t n)
{
	snprintf(buf, n, "%s/ckpt/g%lld", e->state_dir, (long long)group_id);
}

static void user_name(uid_t uid, char *buf, size_t n)
{
	struct passwd pw, *res = NULL;
	char pwbuf[4096];
	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res)
		snprintf(buf, n, "%s", pw.pw_name);
	else
		snprintf(buf, n, "%u", (unsigned)uid);
}

struct grt *jf_dlg_group_of_sub(struct jf_engine *e, int64_t sub_id, struct jf_sub_rec *sr)
{
	if (jf_sub_get(e->st, sub_id, sr) != JF_OK)
		return NULL;
	return jf_eng_group(e, sr->group_id);
}

void jf_dlg_owner(struct jf_engine *e, int64_t group_id, uid_t *uid, gid_t *gid, int *state)
{
	struct jf_group_rec rec;
	*uid = 0;
	*gid = 0;
	*state = -1;
	if (jf_group_get(e->st, group_id, &rec) == JF_OK) {
		*uid = rec.uid;
		*gid = rec.gid;
		*state = rec.state;
		jf_group_release(&rec);
	}
}

/* ---- machines ---- */

/* FNV-1a over what decides where work may go. */
static uint64_t sig_add(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(1099511628211);
	return h;
}

/* Groups whose request was judged against other machines are judged
 * again (a GPU model Slurm no longer has, or has now); if that changes
 * anything a pass is asked for: it sends what can go now, and says why
 * what cannot waits.  (At start-up no group is loaded yet: no pass.) */
static void rejudge_groups(struct jf_engine *e)
{
	size_t i = 0;
	int64_t k;
	void *v;
	bool changed = false;
	while (jf_idmap_next(&e->groups, &i, &k, &v)) {
		struct grt *g = v;
		if (g->ended)
			continue;
		struct jf_error err;
		bool was = g->req_ok;
		changed = jf_eng_judge_request(e, g, &err) != was || changed;
	}
	if (changed)
		jf_eng_schedule(e);
}

/*
 * Every node of the backend is a machine: with its GPUs where the cluster
 * file prices their type (case aside, or through a model's slurm_names,
 * or slurm_untyped_gpu for untyped GRES), with none (JF_MODEL_NONE) where
 * it has no GPUs or GPUs nothing prices - CPU-only work may go anywhere.
 */
void jf_eng_delegate_machines(struct jf_engine *e)
{
	size_t n = 0;
	const struct jf_be_machine *bm = jf_scheduler_machines(e->sch, &n);
	struct jf_cluster *c = e->cluster;
	struct jf_machine *m = calloc(n ? n : 1, sizeof(*m));
	if (!m)
		return;
	uint64_t sig = UINT64_C(14695981039346656037);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int mi = bm[i].gpus > 0 ? jf_cluster_model_for_gres(c, bm[i].model) : -1;
		m[k].name = strdup(bm[i].name);
		m[k].slurm_gpu = strdup(bm[i].model);
		if (!m[k].name || !m[k].slurm_gpu) {
			free(m[k].name);
			free(m[k].slurm_gpu);
			break;
		}
		m[k].model = mi >= 0 ? (size_t)mi : JF_MODEL_NONE;
		m[k].gpus = mi < 0 ? 0 : bm[i].gpus > 64 ? 64 : bm[i].gpus;
		m[k].slurm_gpus = bm[i].gpus;
		m[k].cpu_milli = bm[i].cpu_milli;
		m[k].mem_bytes = bm[i].mem_bytes;
		sig = sig_add(sig, &m[k].model, sizeof(m[k].model));
		sig = sig_add(sig, &m[k].gpus, sizeof(m[k].gpus));
		sig = sig_add(sig, &m[k].cpu_milli, sizeof(m[k].cpu_milli));
		sig = sig_add(sig, &m[k].mem_bytes, sizeof(m[k].mem_bytes));
		sig = sig_add(sig, bm[i].model, strlen(bm[i].model) + 1);
		k++;
	}
	/* readers of the cluster's machines hold the view lock (engine.h) */
	jf_engine_view_lock(e);
	struct jf_machine *old = c->machines;
	size_t nold = c->nmachines;
	c->machines = m;
	c->nmachines = k;
	jf_engine_view_unlock(e);
	for (size_t i = 0; i < nold; i++) {
		free(old[i].name);
		free(old[i].slurm_gpu);
	}
	free(old);
	if (sig != e->machines_sig) {
		e->machines_sig = sig;
		rejudge_groups(e);
	}
}

/* The GPU types Slurm's nodes name, for a message: "4090 on 4 nodes (up
 * to 8 each), t4 (not priced: ...) on 1 node (up to 2 each)". */
static void slurm_models(const struct jf_engine *e, char *buf, size_t n)
{
	const struct jf_cluster *c = e->cluster;
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < c->nmachines && o + 1 < n; i++) {
		const struct jf_machine *m = &c->machines[i];
		if (!m->slurm_gpu || m->slurm_gpus <= 0)
			continue;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = c->machines[j].slurm_gpu && c->machines[j].slurm_gpus > 0 &&
			       !strcmp(c->machines[j].slurm_gpu, m->slurm_gpu);
		if (seen)
			continue;
		int nodes = 0, most = 0;
		for (size_t j = i; j < c->nmachines; j++) {
			const struct jf_machine *x = &c->machines[j];
			if (x->slurm_gpu && x->slurm_gpus > 0 &&
			    !strcmp(x->slurm_gpu, m->slurm_gpu)) {
				nodes++;
				most = x->slurm_gpus > most ? x->slurm_gpus : most;
			}
		}
		char what[160];
		const char *sname = m->slurm_gpu[0] ? m->slurm_gpu : "untyped gpu";
		if (m->model != JF_MODEL_NONE && strcmp(c->models[m->model].name, m->slurm_gpu))
			snprintf(what, sizeof(what), "%s (model %s)", sname,
				 c->models[m->model].name);
		else if (m->model != JF_MODEL_NONE)
			snprintf(what, sizeof(what), "%s", sname);
		else
			snprintf(what, sizeof(what),
				 "%s (not priced: no model of the cluster "
				 "file names it)",
				 sname);
		int w = snprintf(buf + o, n - o, "%s%s on %d node%s (up to %d each)", o ? ", " : "",
				 what, nodes, nodes == 1 ? "" : "s", most);
		o = w > 0 && (size_t)w < n - o ? o + (size_t)w : n - 1;
	}
	if (!buf[0])
		snprintf(buf, n, "none: its nodes have no GPUs");
}

bool jf_dlg_request_ok(const struct jf_engine *e, const struct jf_spec *spec, struct jf_error *err)
{
	if (!spec->gpu || spec->gpus <= 0)
		return true;
	const struct jf_cluster *c = e->cluster;
	int mi = jf_cluster_model_index(c, spec->gpu);
	for (size_t i = 0; mi >= 0 && i < c->nmachines; i++)
		if ((int)c->machines[i].model == mi && c->machines[i].gpus >= spec->gpus)
			return true;
	char have[512];
	slurm_models(e, have, sizeof(have));
	jf_error_set(err, JF_EINVAL, 0,
		     "key 'gpu': %s has no node with %d \"%s\" GPU%s; the GPUs its nodes have: %s",
		     jf_scheduler_name(e->sch), spec->gpus, spec->gpu, spec->gpus == 1 ? "" : "s",
		     have);
	return false;
}

/* The GPU type to ask the backend for: that of a node whose GPUs are the
 * model ("" for untyped GRES), else the model's own name. */
const char *jf_dlg_gpu_type(const struct jf_engine *e, int model)
{
	const struct jf_cluster *c = e->cluster;
	for (size_t i = 0; i < c->nmachines; i++)
		if ((int)c->machines[i].model == model && c->machines[i].slurm_gpu)
			return c->machines[i].slurm_gpu;
	return c->models[model].name;
}

static const struct jf_be_machine *be_machine(struct jf_engine *e, const char *name)
{
	size_t n = 0;
	const struct jf_be_machine *bm = jf_scheduler_machines(e->sch, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(bm[i].name, name))
			return &bm[i];
	return NULL;
}

void jf_eng_delegate_use(struct jf_engine *e, size_t m, struct jf_machine_use *u)
{
	memset(u, 0, sizeof(*u));
	if (m >= e->cluster->nmachines)
		return;
	const char *name = e->cluster->machines[m].name;
	const struct jf_be_machine *bm = be_machine(e, name);
	if (bm) {
		int have = e->cluster->machines[m].gpus;
		int used = bm->gpus_used > have ? have : bm->gpus_used;
		u->gpu_mask = used >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << used) - 1;
		u->cpu_milli = bm->cpu_used_milli;
		u->mem_bytes = bm->mem_used_bytes;
		u->state = bm->state;
		u->partitions = bm->partitions;
	}
	size_t i = 0;
	int64_t k;
	void *v;
	while (jf_idmap_next(&e->tasks, &i, &k, &v)) {
		struct trun *t = v;
		for (int64_t n = 0; t->hosts && n < t->nodes; n++)
			if (t->hosts[n] && !strcmp(t->hosts[n], name) && t->attempt_ids[n])
				u->nodes++;
	}
}

/* ---- a batch: built from the store, handed to the backend ---- */

struct partitions {
	char ondemand[64], spot[64];
};

static void queue_partitions(struct jf_engine *e, int64_t queue_id, struct partitions *p)
{
	snprintf(p->ondemand, sizeof(p->ondemand), "%s",
		 e->partition_ondemand ? e->partition_ondemand : "");
	snprintf(p->spot, sizeof(p->spot), "%s", e->partition_spot ? e->partition_spot : "");
	if (!queue_id)
		return;
	struct jf_queue_rec q;
	if (jf_queue_get(e->st, queue_id, &q) != JF_OK)
		return;
	struct jf_queue_spec qs;
	memset(&qs, 0, sizeof(qs));
	if (q.spec && q.spec[0] &&
	    jf_queue_spec_parse(q.spec, strlen(q.spec), &qs, NULL) == JF_OK) {
		if (qs.partition)
			snprintf(p->ondemand, sizeof(p->ondemand), "%s", qs.partition);
		if (qs.spot_partition)
			snprintf(p->spot, sizeof(p->spot), "%s", qs.spot_partition);
		jf_queue_spec_release(&qs);
	}
	jf_queue_release(&q);
}

/* Hand sub to the backend: its launch (argv, envp without the per-element
 * variables), resources and indexes.  Errors are recorded on the batch. */
static void send_sub(struct jf_engine *e, struct grt *g, const struct jf_sub_rec *sr)
{
	const struct jf_spec *s = g->spec;
	int64_t *idx = NULL;
	size_t nidx = 0;
	if (jf_sub_indexes(e->st, sr->id, &idx, &nidx) != JF_OK || nidx == 0) {
		free(idx);
		return;
	}
	uid_t uid;
	gid_t gid;
	int gstate;
	jf_dlg_owner(e, g->id, &uid, &gid, &gstate);
	char dir[4096], ckpt[4096], user[64];
	jf_dlg_batch_dir(e, (uint64_t)sr->id, dir, sizeof(dir));
	ckpt_root(e, g->id, ckpt, sizeof(ckpt));
	mkdir_p(dir, 0755);
	mkdir_p(ckpt, 0700);
	give_to(dir, uid, gid);
	give_to(ckpt, uid, gid);
	user_name(uid, user, sizeof(user));
	struct partitions parts;
	queue_partitions(e, g->queue_id, &parts);

	struct jf_proc procs[JF_RUN_MAX_PROCS];
	memset(procs, 0, sizeof(procs));
	char **envs[JF_RUN_MAX_PROCS] = { 0 };
	char **argvs[JF_RUN_MAX_PROCS] = { 0 };
	char **ienvs[JF_RUN_MAX_PROCS] = { 0 };
	struct jf_proc_image images[JF_RUN_MAX_PROCS];
	int slotbuf[JF_RUN_MAX_PROCS][65];
	const int *slots[JF_RUN_MAX_PROCS];
	size_t np = s->ncontainers < JF_RUN_MAX_PROCS ? s->ncontainers : JF_RUN_MAX_PROCS;
	bool ok = true;
	/* the GPUs a node gets are split across its containers as locally
	 * (reference 5.3): positions in the node's list, mapped by the shim */
	struct jf_alloc *al = NULL;
	int gpus = g->req.model >= 0 ? g->req.gpus : 0;
	uint64_t mask = gpus >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << gpus) - 1;
	int64_t cpu = 0, mem = 0;
	for (size_t i = 0; i < s->ncontainers; i++) {
		cpu += s->containers[i].cpu_milli;
		mem += s->containers[i].mem_bytes;
	}
	if (np > 1 && gpus > 0)
		jf_alloc_new(cpu > 0 ? cpu : DEFAULT_CPU_MILLI * (int64_t)np,
			     mem > 0 ? mem : (INT64_C(1) << 30), mask, s->containers, np, &al,
			     NULL);
	for (size_t i = 0; i < np; i++) {
		const struct jf_container *c = &s->containers[i];
		if (!jf_env_proc(e, g, c, idx[0], 0, sr->attempt_base, NULL, ckpt, uid, &procs[i],
				 &argvs[i], &envs[i])) {
			ok = false;
			break;
		}
		/* its image: the node's variables of element 0, which the
		 * supervisor sets per element as in envp */
		bool oom = false;
		if (jf_eng_proc_image(e, g, c, idx[0], 0, sr->attempt_base, NULL, ckpt, uid,
				      &images[i], &ienvs[i], &oom))
			procs[i].image = &images[i];
		else if (oom) {
			ok = false;
			break;
		}
		/* a container's limits (reference 8.2) are its own cgroup's,
		 * below Slurm's of the whole job; on the host Slurm's alone */
		if (procs[i].image) {
			procs[i].cpu_milli = c->cpu_milli;
			procs[i].mem_bytes = c->mem_bytes;
		}
		size_t q = 0;
		for (int b = 0; al && b < 64; b++)
			if (al->c[i].gpu_mask & (UINT64_C(1) << b))
				slotbuf[i][q++] = b;
		slotbuf[i][q] = -1;
		slots[i] = slotbuf[i];
	}
	int64_t tasks = g->kind == JF_KIND_BATCH ? s->count : s->completions;
	int ports[JF_SPEC_MAX_PORTS];
	size_t nports = 0;
	for (size_t i = 0; i < s->nports && i < JF_SPEC_MAX_PORTS; i++)
		ports[nports++] = s->ports[i].port;
	/* storage (reference 8.3): the volumes live under --volumes, which
	 * the nodes share, and the object caches in the shared state dir */
	struct jf_mount mounts[JF_SPEC_MAX_STORAGE];
	static char mbufs[JF_SPEC_MAX_STORAGE][4096]; /* the loop's thread only */
	char mwhy[256] = "";
	ssize_t nmounts =
		jf_eng_stor_mounts(e, s, mounts, mbufs, JF_SPEC_MAX_STORAGE, mwhy, sizeof(mwhy));
	if (nmounts < 0)
		ok = false;
	struct jf_batch b = {
		.key = (uint64_t)sr->id,
		.dir = dir,
		.name = g->display,
		.user = user,
		.uid = uid,
		.gid = gid,
		.partition = s->billing == JF_BILL_SPOT ? parts.spot : parts.ondemand,
		.idx = idx,
		.nidx = nidx,
		.throttle = sr->throttle,
		.nodes = s->nodes,
		.gpu_model = gpus > 0 ? jf_dlg_gpu_type(e, g->req.model) : NULL,
		.gpus = gpus,
		.cpu_milli = cpu,
		.mem_bytes = mem,
		.timeout_ms = s->timeout > 0 ? s->timeout * 1000 : 0,
		.kill_grace_ms = e->kill_grace_ms,
		.attempt_base = sr->attempt_base,
		.tasks = tasks,
		.node_index = s->node_index,
		.spot = s->billing == JF_BILL_SPOT,
		.ckpt_root = ckpt,
		.procs = procs,
		.nprocs = np,
		.gpu_slots = al ? slots : NULL,
		.log_cap_bytes = e->log_cap,
		.resend = sr->tries > 0,
		.rt = e->rt,
		.registry_auth = s->registry_auth,
		.shm_bytes = s->shm_size,
		.ports = nports ? ports : NULL,
		.nports = nports,
		.mounts = nmounts > 0 ? mounts : NULL,
		.nmounts = nmounts > 0 ? (size_t)nmounts : 0,
		.evict_check_ms = e->evict_check_ms,
	};
	struct jf_error err;
	jf_error_clear(&err);
	enum jf_err rc = ok            ? jf_scheduler_submit(e->sch, &b, &err)
			 : nmounts < 0 ? jf_error_set(&err, JF_ENOENT, 0, "storage: %s", mwhy)
				       : jf_error_set(&err, JF_ENOMEM, 0, "out of memory");
	for (size_t i = 0; i < np; i++) {
		jf_env_free(envs[i]);
		jf_env_free(ienvs[i]);
		free(argvs[i]);
	}
	jf_alloc_free(al);
	free(idx);
	jf_eng_step_begin(e);
	if (rc == JF_OK)
		jf_sub_set(e->st, sr->id, JF_SUB_OUTBOX, 0, sr->throttle, sr->tries + 1,
			   e->be_down ? e->be_msg : "");
	else
		jf_sub_set(e->st, sr->id, JF_SUB_OUTBOX, 0, sr->throttle, sr->tries, err.msg);
	jf_eng_step_end(e);
	if (rc != JF_OK) {
		jf_eng_step_begin(e);
		jf_eng_group_event(e, 0, g->id, g->kind, "Warning", "FailedSubmission",
				   "batch %lld not handed to %s: %s", (long long)sr->id,
				   jf_scheduler_name(e->sch), err.msg);
		jf_eng_step_end(e);
	}
}

/* Actions (step.c): what goes to the backend once the step that decided it
 * is committed.  Following a batch and telling it of a running element
 * (start-up, adopt) only say what to watch, and are called directly. */
static void send_act(struct jf_engine *e, int64_t sub_id, int64_t b, int64_t c)
{
	(void)b;
	(void)c;
	struct jf_sub_rec sr;
	struct grt *g = jf_dlg_group_of_sub(e, sub_id, &sr);
	if (g && sr.state == JF_SUB_OUTBOX)
		send_sub(e, g, &sr);
}

static void throttle_act(struct jf_engine *e, int64_t key, int64_t throttle, int64_t c)
{
	(void)c;
	jf_scheduler_throttle(e->sch, (uint64_t)key, throttle);
}

static void hold_act(struct jf_engine *e, int64_t key, int64_t hold, int64_t c)
{
	(void)c;
	jf_scheduler_hold(e->sch, (uint64_t)key, hold != 0);
}

static void cancel_act(struct jf_engine *e, int64_t key, int64_t idx, int64_t c)
{
	(void)c;
	jf_scheduler_cancel(e->sch, (uint64_t)key, idx);
}

void jf_dlg_hold(struct jf_engine *e, uint64_t key, bool hold)
{
	jf_eng_after(e, hold_act, (int64_t)key, hold, 0);
}

void jf_dlg_cancel(struct jf_engine *e, uint64_t key, int64_t idx)
{
	jf_eng_after(e, cancel_act, (int64_t)key, idx, 0);
}

/* ---- the submission pass ---- */

struct sub_use {
	int64_t sub_id;
	enum jf_sub_state state;
};

struct use_list {
	struct jf_engine *e;
	struct sub_use *v;
	struct jf_room_batch *b; /* b[i] for v[i]: throttle and unfinished */
	size_t n, cap, capb;
};

static int add_use(void *ctx, int64_t sub_id, int64_t n)
{
	struct use_list *l = ctx;
	struct jf_sub_rec sr;
	if (jf_sub_get(l->e->st, sub_id, &sr) != JF_OK ||
	    (sr.state != JF_SUB_OUTBOX && sr.state != JF_SUB_LIVE))
		return 0;
	if (!jf_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v)) ||
	    !jf_grow(&l->b, &l->capb, l->n + 1, sizeof(*l->b)))
		return 1;
	l->v[l->n] = (struct sub_use){ sub_id, sr.state };
	l->b[l->n] = (struct jf_room_batch){ sr.throttle, n };
	l->n++;
	return 0;
}

struct unsub {
	int64_t *idx;
	size_t n, cap;
	int64_t attempt; /* of the first: a batch shares one attempt base */
	int64_t first;
	int64_t span; /* most indexes from the first */
	bool more;
};

static int add_unsub(void *ctx, int64_t id, int64_t idx, int64_t attempt)
{
	(void)id;
	struct unsub *u = ctx;
	if (u->n == 0) {
		u->attempt = attempt;
		u->first = idx;
	}
	if (attempt != u->attempt || idx - u->first > u->span) {
		u->more = true;
		return 1;
	}
	if (!jf_grow(&u->idx, &u->cap, u->n + 1, sizeof(*u->idx)))
		return 1;
	u->idx[u->n++] = idx;
	return 0;
}

struct queue_room {
	int64_t queue_id;
	int64_t room; /* nodes, INT64_MAX unlimited */
};

struct pass {
	struct jf_engine *e;
	struct queue_room *q;
	size_t nq, capq;
	int64_t *ids;
	size_t nids, capids;
};

static struct queue_room *room_of(struct pass *p, int64_t queue_id)
{
	for (size_t i = 0; i < p->nq; i++)
		if (p->q[i].queue_id == queue_id)
			return &p->q[i];
	if (!jf_grow(&p->q, &p->capq, p->nq + 1, sizeof(*p->q)))
		return NULL;
	int64_t cap = 0;
	struct jf_queue_rec q;
	if (queue_id && jf_queue_get(p->e->st, queue_id, &q) == JF_OK) {
		cap = q.capacity;
		jf_queue_release(&q);
	}
	p->q[p->nq] = (struct queue_room){ queue_id, cap > 0 ? cap : INT64_MAX };
	return &p->q[p->nq++];
}

static int collect_group(void *ctx, int64_t id)
{
	struct pass *p = ctx;
	if (!jf_grow(&p->ids, &p->capids, p->nids + 1, sizeof(*p->ids)))
		return 1;
	p->ids[p->nids++] = id;
	return 0;
}

/* A waiting group that cannot be sent says why in its message (and once
 * in its events); the message clears once it can be. */
static void say_unsendable(struct jf_engine *e, struct grt *g)
{
	struct jf_error err;
	jf_error_clear(&err);
	if (!g->req_ok)
		jf_eng_judge_request(e, g, &err); /* and its reason, to say */
	jf_eng_step_begin(e);
	jf_group_set_message(e->st, g->id, g->req_ok ? "" : err.msg);
	if (!g->req_ok)
		jf_eng_group_event(e, 0, g->id, g->kind, "Warning", "Unschedulable",
				   "cannot be sent to %s: %s", jf_scheduler_name(e->sch), err.msg);
	jf_eng_step_end(e);
	g->unsendable_said = !g->req_ok;
	jf_eng_changed(e, JF_CH_GROUP, g->queue_id, g->id, 0, 0, false);
}

static void pass_group(struct pass *p, int64_t gid)
{
	struct jf_engine *e = p->e;
	struct jf_group_rec rec;
	if (jf_group_get(e->st, gid, &rec) != JF_OK)
		return;
	enum jf_state state = rec.state;
	int64_t parallelism = rec.parallelism, queue_id = rec.queue_id;
	jf_group_release(&rec);
	struct grt *g = jf_eng_group(e, gid);
	if (!g)
		return;
	/* (before the backend's first list of nodes nothing can be judged) */
	if (g->req_ok != !g->unsendable_said && state == JF_ST_WAITING && e->cluster->nmachines > 0)
		say_unsendable(e, g);
	if (!g->req_ok)
		return;
	struct queue_room *qr = room_of(p, queue_id);
	if (!qr)
		return;
	int64_t nodes = g->spec->nodes > 0 ? g->spec->nodes : 1;
	struct use_list ul = { .e = e };
	jf_sub_unfinished(e->st, gid, add_use, &ul);
	/* the room: what parallelism and the queue's capacity leave (core/room.h) */
	int64_t room = jf_room_left(ul.b, ul.n, parallelism > 0 ? parallelism : INT64_MAX);
	int64_t qroom =
		jf_room_left(ul.b, ul.n, qr->room == INT64_MAX ? INT64_MAX : qr->room / nodes);
	if (qroom < room)
		room = qroom;
	if (state == JF_ST_PAUSED)
		room = 0;
	/* throttles grow into room that opened */
	int64_t *was = ul.n ? malloc(ul.n * sizeof(*was)) : NULL;
	for (size_t i = 0; was && i < ul.n; i++)
		was[i] = ul.b[i].throttle;
	if (was)
		room = jf_room_grow(ul.b, ul.n, parallelism, room);
	for (size_t i = 0; was && i < ul.n; i++) {
		if (ul.b[i].throttle == was[i])
			continue;
		struct jf_sub_rec sr;
		if (jf_sub_get(e->st, ul.v[i].sub_id, &sr) != JF_OK)
			continue;
		jf_eng_step_begin(e);
		jf_sub_set(e->st, sr.id, sr.state, sr.job_id, ul.b[i].throttle, sr.tries,
			   sr.message);
		jf_eng_step_end(e);
		if (sr.state == JF_SUB_LIVE)
			jf_eng_after(e, throttle_act, sr.id, ul.b[i].throttle, 0);
	}
	free(was);
	int64_t held = 0;
	for (size_t i = 0; i < ul.n; i++)
		held += jf_room_held(&ul.b[i]);
	/* a pull that failed: no new batch until the back-off is over (the
	 * engine's tick schedules again then) */
	if (jf_eng_pull_waits(e, g, jf_eng_now(e)))
		room = 0;
	/* its queue's budget is spent (budget.c): no new batch, and those it
	 * has are held while it has tasks that wait */
	int64_t c[JF_ST__COUNT];
	bool counted = jf_group_count_tasks(e->st, gid, c) == JF_OK;
	if (state != JF_ST_PAUSED && counted && c[JF_ST_WAITING] > 0 && jf_eng_budget_waits(e, g))
		room = 0;
	/* its after: entries (deps.c): none may go yet, or (each) only the
	 * tasks whose pairs hold */
	if (room > 0 && counted && c[JF_ST_WAITING] > 0 &&
	    jf_eng_dep_waits(e, g, &c[JF_ST_WAITING]))
		room = 0;
	/* its object sources sync first (storage.c) */
	if (room > 0 && jf_eng_stor_waits(e, g))
		room = 0;
	/* new batches for the waiting tasks that have none */
	while (room > 0) {
		struct unsub us = { .span = e->array_max };
		jf_eng_dep_list(e, g, true, (int)(e->array_max + 1), add_unsub, &us);
		if (us.n == 0) {
			free(us.idx);
			break;
		}
		int64_t throttle = jf_room_new_throttle((int64_t)us.n, room);
		int64_t take = throttle ? throttle : (int64_t)us.n;
		int64_t id = 0;
		jf_eng_step_begin(e);
		jf_sub_create(e->st, gid, us.idx, us.n, throttle, us.attempt + 1, jf_eng_now(e),
			      &id);
		jf_eng_group_event(e, 0, gid, g->kind, "Normal", "Submitting",
				   "%zu task%s (index %lld..%lld) to %s as batch %lld, at most "
				   "%lld at once",
				   us.n, us.n == 1 ? "" : "s", (long long)us.idx[0],
				   (long long)us.idx[us.n - 1], jf_scheduler_name(e->sch),
				   (long long)id, (long long)take);
		enum jf_err rc = jf_eng_step_end(e) ? JF_OK : JF_EIO;
		free(us.idx);
		if (rc != JF_OK || !id)
			break;
		room -= take;
		held += take;
		struct jf_sub_rec sr;
		if (jf_sub_get(e->st, id, &sr) == JF_OK)
			jf_eng_after(e, send_act, sr.id, 0, 0);
	}
	if (qr->room != INT64_MAX)
		qr->room = qr->room > held * nodes ? qr->room - held * nodes : 0;
	free(ul.v);
	free(ul.b);
}

void jf_eng_submit_pass(struct jf_engine *e)
{
	if (e->scheduling) {
		e->again = true;
		return;
	}
	e->scheduling = true;
	do {
		e->again = false;
		struct pass p = { .e = e };
		jf_group_list_active(e->st, collect_group, &p);
		for (size_t i = 0; i < p.nids; i++)
			pass_group(&p, p.ids[i]);
		free(p.ids);
		free(p.q);
	} while (e->again);
	e->scheduling = false;
	jf_eng_why_delegated(e); /* where each waiting group stands now */
}

/* ---- control ---- */

struct sub_ids {
	int64_t *v;
	size_t n, cap;
};

static int add_id(void *ctx, int64_t id)
{
	struct sub_ids *l = ctx;
	if (!jf_grow(&l->v, &l->cap, l->n + 1, sizeof(*l->v)))
		return 1;
	l->v[l->n++] = id;
	return 0;
}

void jf_eng_delegate_kill_group(struct jf_engine *e, int64_t group_id, enum jf_why why)
{
	struct sub_ids l = { NULL, 0, 0 };
	jf_sub_list(e->st, group_id, (1u << JF_SUB_OUTBOX) | (1u << JF_SUB_LIVE), add_id, &l);
	for (size_t i = 0; i < l.n; i++) {
		if (why == JF_WHY_PAUSE)
			jf_dlg_hold(e, (uint64_t)l.v[i], true);
		else
			jf_dlg_cancel(e, (uint64_t)l.v[i], -1);
	}
	if (why != JF_WHY_PAUSE) {
		/* what waits in them will not run from them */
		jf_eng_step_begin(e);
		jf_sub_release(e->st, 0, group_id);
		jf_eng_step_end(e);
	}
	free(l.v);
}

/* After resume: the batches a pause held run again. */
static void release_holds(struct jf_engine *e, int64_t group_id)
{
	struct sub_ids l = { NULL, 0, 0 };
	jf_sub_list(e->st, group_id, 1u << JF_SUB_LIVE, add_id, &l);
	for (size_t i = 0; i < l.n; i++)
		jf_dlg_hold(e, (uint64_t)l.v[i], false);
	free(l.v);
}

void jf_eng_delegate_withdraw(struct jf_engine *e, int64_t task_id)
{
	int64_t sub = 0;
	if (jf_task_sub(e->st, task_id, &sub) != JF_OK || !sub)
		return;
	struct jf_task_rec t;
	if (jf_task_get(e->st, task_id, &t) != JF_OK)
		return;
	int64_t idx = t.idx;
	jf_task_release(&t);
	jf_dlg_cancel(e, (uint64_t)sub, idx);
	jf_eng_step_begin(e);
	jf_task_set_sub(e->st, task_id, 0);
	jf_eng_step_end(e);
}

/* ---- start: take everything up again ---- */

static int collect_attempt(void *ctx, const struct jf_attempt_rec *a)
{
	if (strncmp(a->handle, "slurm:", 6) == 0)
		add_id(ctx, a->id);
	return 0;
}

/* An attempt the store says runs on the backend: the engine's tables for
 * it, and the backend told to follow its element. */
static void adopt_attempt(struct jf_engine *e, const struct jf_attempt_rec *a)
{
	unsigned long long key;
	long long idx, run, node;
	if (sscanf(a->handle, "slurm:%llu:%lld:%lld:%lld", &key, &idx, &run, &node) != 4)
		return;
	struct jf_node_rec nr;
	struct jf_task_rec tr;
	if (jf_node_get(e->st, a->node_id, &nr) != JF_OK)
		return;
	int64_t task_id = nr.task_id, node_idx = nr.idx;
	jf_node_release(&nr);
	if (jf_task_get(e->st, task_id, &tr) != JF_OK)
		return;
	struct grt *g = jf_eng_group(e, tr.group_id);
	int64_t task_attempt = tr.attempt;
	jf_task_release(&tr);
	if (!g || node_idx >= g->spec->nodes)
		return;
	struct trun *t = jf_idmap_get(&e->tasks, task_id);
	if (!t) {
		t = jf_trun_new(task_id, g->id, idx, g->spec->nodes);
		if (!t || !jf_idmap_put(&e->tasks, task_id, t)) {
			jf_trun_free(t);
			return;
		}
		t->key = key;
		t->run = run;
		t->attempt = task_attempt;
		t->start_ms = a->start_ms;
		for (int64_t i = 0; i < t->nodes; i++)
			t->slots[i].machine = SIZE_MAX;
		t->hosts = calloc((size_t)t->nodes, sizeof(*t->hosts));
		jf_scheduler_running(e->sch, key, idx, run, a->pid);
	}
	if (t->hosts && !t->hosts[node_idx])
		t->hosts[node_idx] = strdup(a->machine);
	if (!jf_eng_run_add(e, a->id, a->node_id, task_id, g->id, node_idx, a->attempt, a->handle))
		return;
	t->attempt_ids[node_idx] = a->id;
	t->live++;
	if (g->spec->billing == JF_BILL_ONDEMAND && g->req.gpus > 0)
		jf_eng_demand(e, g->req.model, g->req.gpus);
	jf_eng_step_begin(e);
	jf_eng_event(e, g, task_id, idx, a->node_id, node_idx, "Normal", "Adopted",
		     "%s taken over after a daemon restart (%s job %lld)",
		     g->spec->containers[0].name, jf_scheduler_name(e->sch), (long long)a->pid);
	jf_eng_step_end(e);
}

static int resend_or_follow(void *ctx, int64_t id)
{
	struct jf_engine *e = ctx;
	struct jf_sub_rec sr;
	struct grt *g = jf_dlg_group_of_sub(e, id, &sr);
	if (!g)
		return 0;
	if (sr.state == JF_SUB_OUTBOX) {
		jf_eng_after(e, send_act, sr.id, 0, 0);
		return 0;
	}
	uid_t uid;
	gid_t gid;
	int state;
	jf_dlg_owner(e, g->id, &uid, &gid, &state);
	char dir[4096], user[64];
	jf_dlg_batch_dir(e, (uint64_t)id, dir, sizeof(dir));
	user_name(uid, user, sizeof(user));
	jf_scheduler_follow(e->sch, (uint64_t)id, sr.job_id, dir, sr.first_idx, user);
	return 0;
}

void jf_eng_delegate_start(struct jf_engine *e)
{
	jf_eng_delegate_machines(e);
	struct sub_ids l = { NULL, 0, 0 };
	jf_attempt_list_open(e->st, collect_attempt, &l);
	for (size_t i = 0; i < l.n; i++) {
		struct jf_attempt_rec a;
		if (jf_attempt_get(e->st, l.v[i], &a) != JF_OK)
			continue;
		adopt_attempt(e, &a);
		jf_attempt_release(&a);
	}
	free(l.v);
	jf_sub_list(e->st, 0, (1u << JF_SUB_OUTBOX) | (1u << JF_SUB_LIVE), resend_or_follow, e);
}

void jf_eng_delegate_resumed(struct jf_engine *e, int64_t group_id)
{
	/* held for its queue's budget too: that hold stays (budget.c) */
	struct grt *g = jf_eng_group(e, group_id);
	if (g && g->budget_held)
		return;
	release_holds(e, group_id);
}
