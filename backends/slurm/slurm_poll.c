/*
 * slurm_poll.c - the slurm backend's thread (design in slurm.c): it takes
 * the loop's requests, sends batches, follows their elements through
 * Slurm's records and tells the loop what it saw, as notes.
 */
#include "backends/slurm/slurm_int.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/fault.h"
#include "backends/shimproto.h"
#include "backends/slurm/hostlist.h"

/* ---- the thread's side: notes ---- */

static void note_push(struct slurm *s, struct jf_note *n)
{
	pthread_mutex_lock(&s->mu);
	if (s->nnotes == s->capnotes) {
		size_t nc = s->capnotes ? s->capnotes * 2 : 64;
		struct jf_note *p =
			nc <= NOTE_MAX_QUEUE ? realloc(s->notes, nc * sizeof(*p)) : NULL;
		if (!p) {
			pthread_mutex_unlock(&s->mu);
			jf_note_release(n);
			return;
		}
		s->notes = p;
		s->capnotes = nc;
	}
	s->notes[s->nnotes++] = *n;
	uint64_t one = 1;
	(void)!write(s->evfd, &one, sizeof(one));
	pthread_mutex_unlock(&s->mu);
}

void jf_sl_note_simple(struct slurm *s, enum jf_note_kind kind, uint64_t key, int64_t job_id,
		       const char *msg)
{
	struct jf_note n;
	memset(&n, 0, sizeof(n));
	n.kind = kind;
	n.key = key;
	n.job_id = job_id;
	snprintf(n.message, sizeof(n.message), "%.*s", (int)sizeof(n.message) - 1, msg ? msg : "");
	note_push(s, &n);
}

static void set_down(struct slurm *s, const char *msg)
{
	if (!s->down) {
		s->down = true;
		s->backoff_ms = 1000;
		snprintf(s->down_msg, sizeof(s->down_msg), "%s", msg);
		jf_sl_note_simple(s, JF_NOTE_UNREACHABLE, 0, 0, msg);
	}
	s->next_try_ms = jf_be_mono_ms() + s->backoff_ms;
	s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
}

/* An answer that did not come marks the backend down, and so does one
 * that refuses who we are (an expired JWT): nothing is refused for good
 * because of it, batches wait until it is mended.  True if it answered. */
static bool answered(struct slurm *s, enum jf_err rc, const struct jf_error *err)
{
	if (rc != JF_EIO && rc != JF_EACCES)
		return true;
	if (rc == JF_EACCES) {
		char msg[JF_ERRMSG_MAX + 64];
		snprintf(msg, sizeof(msg), "authentication refused (a new SLURM_JWT?): %s",
			 err->msg);
		set_down(s, msg);
	} else {
		set_down(s, err->msg);
	}
	return false;
}

/* ---- the thread's side: batches and their elements ---- */

static struct sub *sub_find(struct slurm *s, uint64_t key)
{
	for (struct sub *b = s->subs; b; b = b->next)
		if (b->key == key)
			return b;
	return NULL;
}

static struct sub *sub_get(struct slurm *s, uint64_t key)
{
	struct sub *b = sub_find(s, key);
	if (b)
		return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->key = key;
	b->want_throttle = -1;
	b->want_hold = -1;
	b->next = s->subs;
	s->subs = b;
	return b;
}

static void elem_clear(struct elem *el)
{
	for (size_t i = 0; i < el->nhosts; i++)
		free(el->hosts[i]);
	free(el->hosts);
	el->hosts = NULL;
	el->nhosts = 0;
}

void jf_sl_sub_free(struct sub *b)
{
	for (size_t i = 0; i < b->cap; i++)
		if (b->elems[i].idx >= 0)
			elem_clear(&b->elems[i]);
	free(b->elems);
	free(b->cancel_idx);
	free(b->dir);
	free(b->user);
	json_decref(b->body);
	free(b);
}

static size_t slot_of(int64_t idx, size_t cap)
{
	uint64_t h = (uint64_t)idx * UINT64_C(0x9e3779b97f4a7c15);
	return (size_t)(h >> 17) & (cap - 1);
}

static struct elem *elem_find(struct sub *b, int64_t idx)
{
	if (!b->cap)
		return NULL;
	for (size_t i = slot_of(idx, b->cap);; i = (i + 1) & (b->cap - 1)) {
		if (b->elems[i].idx == idx)
			return &b->elems[i];
		if (b->elems[i].idx < 0)
			return NULL;
	}
}

static struct elem *elem_get(struct sub *b, int64_t idx)
{
	struct elem *el = elem_find(b, idx);
	if (el)
		return el;
	if ((b->n + 1) * 2 > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 64;
		struct elem *ne = malloc(nc * sizeof(*ne));
		if (!ne)
			return NULL;
		for (size_t i = 0; i < nc; i++)
			ne[i].idx = -1;
		for (size_t i = 0; i < b->cap; i++) {
			if (b->elems[i].idx < 0)
				continue;
			size_t j = slot_of(b->elems[i].idx, nc);
			while (ne[j].idx >= 0)
				j = (j + 1) & (nc - 1);
			ne[j] = b->elems[i];
		}
		free(b->elems);
		b->elems = ne;
		b->cap = nc;
	}
	size_t j = slot_of(idx, b->cap);
	while (b->elems[j].idx >= 0)
		j = (j + 1) & (b->cap - 1);
	el = &b->elems[j];
	memset(el, 0, sizeof(*el));
	el->idx = idx;
	el->run = -1;
	b->n++;
	return el;
}

static bool final_state(const char *st)
{
	static const char *const finals[] = {
		"COMPLETED", "FAILED",        "CANCELLED", "TIMEOUT",  "PREEMPTED",
		"NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", NULL,
	};
	for (const char *const *f = finals; *f; f++)
		if (strcmp(st, *f) == 0)
			return true;
	return false;
}

static enum jf_elem_end end_of(const char *st)
{
	if (!strcmp(st, "COMPLETED"))
		return JF_END_COMPLETED;
	if (!strcmp(st, "CANCELLED"))
		return JF_END_CANCELLED;
	if (!strcmp(st, "TIMEOUT") || !strcmp(st, "DEADLINE"))
		return JF_END_TIMEOUT;
	if (!strcmp(st, "PREEMPTED"))
		return JF_END_PREEMPTED;
	if (!strcmp(st, "NODE_FAIL") || !strcmp(st, "BOOT_FAIL"))
		return JF_END_NODE_FAIL;
	return JF_END_FAILED;
}

static void run_dir(const struct sub *b, int64_t idx, int64_t run, size_t node, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%lld/%lld/%zu", b->dir, (long long)idx, (long long)run, node);
}

/* The element's node results for run, from their run directories. */
static void read_results(const struct sub *b, const struct elem *el, int64_t run, struct jf_note *n,
			 int64_t *latest_end)
{
	size_t k = el->nhosts ? el->nhosts : 1;
	*latest_end = 0;
	n->results = calloc(k, sizeof(*n->results));
	if (!n->results)
		return;
	n->nresults = k;
	for (size_t i = 0; i < k; i++) {
		char dir[4300], why[128] = "";
		struct jf_run_result *r = &n->results[i];
		run_dir(b, el->idx, run, i, dir, sizeof(dir));
		if (jf_shim_result(dir, r, why, sizeof(why)) == 0) {
			if (r->end_ms > *latest_end)
				*latest_end = r->end_ms;
			continue;
		}
		memset(r, 0, sizeof(*r));
		r->lost = true;
		r->exit_code = -1;
		r->start_ms = jf_shim_started_ms(dir);
		snprintf(r->message, sizeof(r->message),
			 "no record from the node's supervisor (%s)", why);
	}
}

static void tell_started(struct slurm *s, struct sub *b, struct elem *el, int64_t run,
			 const struct jf_slurm_job *j)
{
	int64_t job_id = j->job_id, start_ms = j->start_time * 1000;
	const char *nodes = j->nodes;
	elem_clear(el);
	char **hosts = NULL;
	size_t nh = 0;
	struct jf_error err;
	if (nodes && nodes[0] &&
	    jf_hostlist_expand(nodes, &hosts, &nh, JF_NOTE_HOSTS_MAX, &err) != JF_OK) {
		hosts = NULL;
		nh = 0;
	}
	el->hosts = hosts;
	el->nhosts = nh;
	el->run = run;
	el->ended = false;
	el->preempting = false;
	el->job_id = job_id;
	el->start_ms = start_ms;

	struct jf_note n;
	memset(&n, 0, sizeof(n));
	n.kind = JF_NOTE_STARTED;
	n.key = b->key;
	n.job_id = job_id;
	n.idx = el->idx;
	n.run = run;
	n.start_ms = start_ms;
	snprintf(n.handle, sizeof(n.handle), "slurm:%" PRIu64 ":%lld:%lld", b->key,
		 (long long)el->idx, (long long)run);
	if (nh) {
		n.hosts = calloc(nh, sizeof(*n.hosts));
		for (size_t i = 0; n.hosts && i < nh; i++)
			n.hosts[i] = strdup(hosts[i]);
		n.nhosts = n.hosts ? nh : 0;
	}
	/* the GPUs Slurm gave each node: the job's gres_detail (one entry per
	 * node) while it runs; an element that ended before a poll saw it run
	 * has none any more, and each node's supervisor wrote its own
	 * (RUN_DIR/gpus, from the step's SLURM_STEP_GPUS) */
	if (n.nhosts && (n.gpu_ids = calloc(nh, sizeof(char *)))) {
		for (size_t i = 0; i < nh; i++) {
			char ids[JF_NOTE_GPU_IDS_MAX], dir[4300];
			if (j->ngres_detail == n.nhosts) {
				jf_gres_gpu_ids(j->gres_detail[i], ids, sizeof(ids));
			} else {
				run_dir(b, el->idx, run, i, dir, sizeof(dir));
				jf_shim_gpus(dir, ids, sizeof(ids));
			}
			n.gpu_ids[i] = strdup(ids);
		}
	}
	note_push(s, &n);
}

static void tell_ended(struct slurm *s, struct sub *b, struct elem *el, enum jf_elem_end end,
		       int64_t end_ms, int exit_code, const char *msg)
{
	struct jf_note n;
	memset(&n, 0, sizeof(n));
	n.kind = JF_NOTE_ENDED;
	n.key = b->key;
	n.job_id = el->job_id;
	n.idx = el->idx;
	n.run = el->run;
	n.start_ms = el->start_ms;
	n.end = end;
	n.exit_code = exit_code;
	int64_t latest = 0;
	read_results(b, el, el->run, &n, &latest);
	if (end_ms <= 0) {
		/* Slurm's record kept no end (a requeued run): its jobcomp
		 * line's, else the supervisors' latest, to the second (Slurm's
		 * times are whole seconds, cut), else now */
		int64_t jc = jf_sl_jobcomp_end(s, el->job_id, el->start_ms / 1000);
		end_ms = jc > 0 ? jc * 1000 : latest > 0 ? latest / 1000 * 1000 : jf_be_wall_ms();
		if (end_ms < el->start_ms)
			end_ms = el->start_ms;
	}
	n.end_ms = end_ms;
	snprintf(n.message, sizeof(n.message), "%s", msg ? msg : "");
	el->ended = true;
	note_push(s, &n);
}

static const char *slurm_state_words(const struct jf_slurm_job *j, char *buf, size_t n)
{
	if (j->reason[0] && strcmp(j->reason, "None") != 0)
		snprintf(buf, n, "Slurm: %s (%s)", j->state, j->reason);
	else
		snprintf(buf, n, "Slurm: %s", j->state);
	return buf;
}

/* What one record of an element says, told as notes. */
static void see_element(struct slurm *s, struct sub *b, const struct jf_slurm_job *j)
{
	int64_t idx = b->first_idx + j->array_task_id;
	struct elem *el = elem_get(b, idx);
	if (!el)
		return;
	if (j->job_id)
		el->job_id = j->job_id;
	int64_t run = j->restart_cnt;
	bool running = !strcmp(j->state, "RUNNING") || !strcmp(j->state, "COMPLETING") ||
		       !strcmp(j->state, "SUSPENDED");
	bool final = final_state(j->state);
	char words[160];
	slurm_state_words(j, words, sizeof(words));

	/* a run before this one that was not told ended: requeued */
	if (el->run >= 0 && el->run < run && !el->ended)
		tell_ended(s, b, el, JF_END_REQUEUED, 0, 143,
			   "requeued by Slurm (preempted); it runs again");
	if (el->run == run && el->ended)
		return;
	/* it ran: a start time and hosts (an element cancelled while it
	 * waited has Slurm's expected start time but no hosts) */
	bool ran = j->start_time > 0 && j->nodes && j->nodes[0];
	if ((running || final) && ran && el->run < run)
		tell_started(s, b, el, run, j);
	if (running && el->run == run && j->preempt_time > 0 && !el->preempting) {
		el->preempting = true;
		struct jf_note n;
		memset(&n, 0, sizeof(n));
		n.kind = JF_NOTE_PREEMPTING;
		n.key = b->key;
		n.idx = idx;
		n.run = run;
		n.job_id = el->job_id;
		snprintf(n.message, sizeof(n.message),
			 "Slurm is preempting it for work of a "
			 "higher priority partition");
		note_push(s, &n);
	}
	if (final && el->run == run && !el->ended)
		tell_ended(s, b, el, end_of(j->state), j->end_time * 1000, j->exit_code, words);
}

/* Slurm's reason for the batch's waiting part, told when it changes ("":
 * nothing of it waits with a reason). */
static void tell_pending(struct slurm *s, struct sub *b, const char *reason, int64_t start_ms)
{
	if (!strcmp(b->pending_reason, reason) && b->pending_start_ms == start_ms)
		return;
	snprintf(b->pending_reason, sizeof(b->pending_reason), "%s", reason);
	b->pending_start_ms = start_ms;
	struct jf_note n;
	memset(&n, 0, sizeof(n));
	n.kind = JF_NOTE_PENDING;
	n.key = b->key;
	n.job_id = b->job_id;
	n.start_ms = start_ms;
	snprintf(n.message, sizeof(n.message), "%s", reason);
	note_push(s, &n);
}

/* An element job Slurm no longer knows: how its nodes ended, from disk. */
static void forgotten(struct slurm *s, struct sub *b, struct elem *el)
{
	if (el->run < 0 || el->ended)
		return;
	tell_ended(s, b, el, JF_END_LOST, 0, -1,
		   "Slurm no longer knows the job (gone past MinJobAge while jobfs was away)");
}

static void check_done(struct slurm *s, struct sub *b, bool pending)
{
	if (b->done || pending)
		return;
	for (size_t i = 0; i < b->cap; i++) {
		struct elem *el = &b->elems[i];
		if (el->idx >= 0 && el->run >= 0 && !el->ended)
			return;
	}
	b->done = true;
	jf_sl_note_simple(s, JF_NOTE_DONE, b->key, b->job_id, "");
}

/* The whole array as Slurm keeps it. */
static bool poll_bulk(struct slurm *s, struct sub *b)
{
	char id[32];
	snprintf(id, sizeof(id), "%lld", (long long)b->job_id);
	struct jf_slurm_job *jobs = NULL;
	size_t n = 0;
	struct jf_error err;
	jf_error_clear(&err);
	int64_t t0 = jf_be_mono_ms();
	enum jf_err rc = jf_slurm_job_get(s->rest, b->user, id, &jobs, &n, &err);
	int64_t cost = jf_be_mono_ms() - t0;
	if (!answered(s, rc, &err))
		return false;
	int64_t every = cost * BULK_COST_FACTOR;
	if (every < s->cfg.poll_ms)
		every = s->cfg.poll_ms;
	b->next_bulk_ms = jf_be_mono_ms() + every;
	if (rc == JF_ENOENT) {
		for (size_t i = 0; i < b->cap; i++)
			if (b->elems[i].idx >= 0)
				forgotten(s, b, &b->elems[i]);
		check_done(s, b, false);
		return true;
	}
	if (rc != JF_OK)
		return true;
	bool pending = false;
	const char *reason = ""; /* why what waits waits, in Slurm's words */
	int64_t expected = 0;    /* when Slurm's backfill expects the first of it to start */
	for (size_t i = 0; i < n; i++) {
		const struct jf_slurm_job *j = &jobs[i];
		if (j->array_job_id != b->job_id && j->job_id != b->job_id)
			continue;
		bool waits = !strcmp(j->state, "PENDING") && j->reason[0] &&
			     strcmp(j->reason, "None") != 0;
		if (waits && !reason[0])
			reason = j->reason;
		if (waits && j->start_time > 0 && (!expected || j->start_time * 1000 < expected))
			expected = j->start_time * 1000;
		if (j->array_task_id < 0) {
			/* the meta record: what has not started yet */
			if (!final_state(j->state) && j->array_task_string &&
			    j->array_task_string[0])
				pending = true;
			continue;
		}
		if (!final_state(j->state))
			pending = true;
		see_element(s, b, j);
	}
	tell_pending(s, b, reason, reason[0] ? expected : 0);
	/* elements told running that Slurm keeps no record of any more */
	for (size_t i = 0; i < b->cap; i++) {
		struct elem *el = &b->elems[i];
		if (el->idx < 0 || el->run < 0 || el->ended)
			continue;
		bool found = false;
		for (size_t k = 0; k < n && !found; k++)
			found = jobs[k].array_task_id >= 0 &&
				b->first_idx + jobs[k].array_task_id == el->idx;
		if (!found)
			forgotten(s, b, el);
	}
	jf_slurm_jobs_free(jobs, n);
	check_done(s, b, pending);
	return true;
}

static bool poll_one(struct slurm *s, struct sub *b, struct elem *el)
{
	char id[32];
	snprintf(id, sizeof(id), "%lld", (long long)el->job_id);
	struct jf_slurm_job *jobs = NULL;
	size_t n = 0;
	struct jf_error err;
	jf_error_clear(&err);
	enum jf_err rc = jf_slurm_job_get(s->rest, b->user, id, &jobs, &n, &err);
	if (!answered(s, rc, &err))
		return false;
	if (rc == JF_ENOENT) {
		forgotten(s, b, el);
		return true;
	}
	for (size_t i = 0; rc == JF_OK && i < n; i++)
		if (jobs[i].job_id == el->job_id && jobs[i].array_task_id >= 0)
			see_element(s, b, &jobs[i]);
	jf_slurm_jobs_free(jobs, n);
	return true;
}

/* DIR/starts/<idx>.<run>: "<job id> <start ms>" from the first node. */
static bool poll_hints(struct slurm *s, struct sub *b)
{
	char path[4200];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/starts", b->dir);
	if (stat(path, &sb) < 0)
		return true;
	int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	if (mt == b->starts_mtime_ns)
		return true;
	DIR *d = opendir(path);
	if (!d)
		return true;
	b->starts_mtime_ns = mt;
	struct dirent *de;
	bool ok = true;
	while (ok && (de = readdir(d))) {
		long long idx, run;
		char tail;
		if (sscanf(de->d_name, "%lld.%lld%c", &idx, &run, &tail) != 2)
			continue;
		struct elem *el = elem_find(b, idx);
		if (el && el->run >= run)
			continue;
		char f[4500], *text = NULL;
		long long job = 0;
		snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
		if (jf_shim_read(f, 256, &text, NULL) == 0) {
			if (sscanf(text, "%lld", &job) != 1)
				job = 0;
			free(text);
		}
		if (job <= 0 || !(el = elem_get(b, idx)))
			continue;
		el->job_id = job;
		ok = poll_one(s, b, el);
	}
	closedir(d);
	return ok;
}

static bool poll_sub(struct slurm *s, struct sub *b)
{
	if (!b->job_id || b->done)
		return true;
	if (!poll_hints(s, b))
		return false;
	for (size_t i = 0; i < b->cap; i++) {
		struct elem *el = &b->elems[i];
		if (el->idx >= 0 && el->run >= 0 && !el->ended && el->job_id && !poll_one(s, b, el))
			return false;
	}
	if (jf_be_mono_ms() >= b->next_bulk_ms && !poll_bulk(s, b))
		return false;
	return true;
}

/*
 * Fault injection for the crash tests: JOBFS_FAULT=slurm-accepted:N kills
 * the daemon (SIGKILL, as a crash would) the Nth time Slurm accepts a
 * batch, before the engine hears of it: the answer is lost, and the next
 * daemon must find the job by its comment instead of submitting it again.
 */
static void fault(const char *point)
{
	if (jf_fault_hit(point))
		raise(SIGKILL);
}

/* ---- the thread's side: sending ---- */

static bool find_sent(struct slurm *s, struct sub *b, int64_t *job_id)
{
	char comment[160];
	snprintf(comment, sizeof(comment), "jobfs:%s:%" PRIu64, s->uuid, b->key);
	struct jf_slurm_job *jobs = NULL;
	size_t n = 0;
	bool unchanged = false;
	struct jf_error err;
	jf_error_clear(&err);
	enum jf_err rc = jf_slurm_jobs_all(s->rest, b->user, 0, &jobs, &n, &unchanged, &err);
	if (!answered(s, rc, &err))
		return false;
	*job_id = 0;
	for (size_t i = 0; rc == JF_OK && i < n; i++)
		if (jobs[i].comment && !strcmp(jobs[i].comment, comment)) {
			*job_id = jobs[i].array_job_id ? jobs[i].array_job_id : jobs[i].job_id;
			break;
		}
	jf_slurm_jobs_free(jobs, n);
	return true;
}

static bool send_sub(struct slurm *s, struct sub *b)
{
	int64_t job = 0;
	if (b->maybe_sent) {
		if (!find_sent(s, b, &job))
			return false;
		if (job) {
			json_decref(b->body);
			b->body = NULL;
			b->job_id = job;
			jf_sl_note_simple(s, JF_NOTE_ACCEPTED, b->key, job,
					  "found in Slurm by its comment: sent before, not again");
			return true;
		}
	}
	struct jf_error err;
	jf_error_clear(&err);
	b->maybe_sent = true;
	enum jf_err rc = jf_slurm_submit(s->rest, b->user, b->body, &job, &err);
	if (!answered(s, rc, &err))
		return false;
	json_decref(b->body);
	b->body = NULL;
	if (rc != JF_OK) {
		b->done = true;
		jf_sl_note_simple(s, JF_NOTE_REFUSED, b->key, 0, err.msg);
		return true;
	}
	fault("slurm-accepted");
	b->job_id = job;
	b->maybe_sent = false;
	jf_sl_note_simple(s, JF_NOTE_ACCEPTED, b->key, job, "");
	return true;
}

static bool do_ops(struct slurm *s, struct sub *b)
{
	if (!b->job_id)
		return true;
	char id[48];
	struct jf_error err;
	jf_error_clear(&err);
	enum jf_err rc;
	snprintf(id, sizeof(id), "%lld", (long long)b->job_id);
	if (b->want_cancel) {
		rc = jf_slurm_job_signal(s->rest, b->user, id, 0, &err);
		if (!answered(s, rc, &err))
			return false;
		b->want_cancel = false;
		b->want_throttle = -1;
		b->want_hold = -1;
		b->ncancel = 0;
		b->next_bulk_ms = 0;
	}
	while (b->ncancel > 0) {
		int64_t idx = b->cancel_idx[b->ncancel - 1];
		/* by array and index, never by the element's own job id: the
		 * element that starts last has the array's id, and cancelling
		 * that id would cancel every element still waiting */
		snprintf(id, sizeof(id), "%lld_%lld", (long long)b->job_id,
			 (long long)(idx - b->first_idx));
		rc = jf_slurm_job_signal(s->rest, b->user, id, 0, &err);
		if (!answered(s, rc, &err))
			return false;
		b->ncancel--;
		b->next_bulk_ms = 0;
	}
	snprintf(id, sizeof(id), "%lld", (long long)b->job_id);
	if (b->want_throttle >= 0) {
		char t[32];
		snprintf(t, sizeof(t), "%lld", (long long)b->want_throttle);
		json_t *p = json_pack("{s:s}", "array", t);
		rc = p ? jf_slurm_job_update(s->rest, b->user, id, p, &err) : JF_ENOMEM;
		json_decref(p);
		if (!answered(s, rc, &err))
			return false;
		b->want_throttle = -1;
	}
	if (b->want_hold >= 0) {
		json_t *p = json_pack("{s:b}", "hold", b->want_hold);
		rc = p ? jf_slurm_job_update(s->rest, b->user, id, p, &err) : JF_ENOMEM;
		json_decref(p);
		if (!answered(s, rc, &err))
			return false;
		b->want_hold = -1;
	}
	return true;
}

static void take_req(struct slurm *s, struct req *r)
{
	struct sub *b = sub_get(s, r->key);
	if (!b) {
		jf_sl_req_free(r);
		return;
	}
	switch (r->kind) {
	case RQ_SUBMIT:
	case RQ_FOLLOW:
		free(b->dir);
		free(b->user);
		b->dir = r->dir;
		b->user = r->user;
		r->dir = r->user = NULL;
		b->first_idx = r->first_idx;
		b->count = r->count;
		b->done = false;
		if (r->kind == RQ_SUBMIT) {
			json_decref(b->body);
			b->body = r->body;
			r->body = NULL;
			b->maybe_sent = r->maybe_sent;
		} else {
			b->job_id = r->a;
		}
		break;
	case RQ_RUNNING: {
		struct elem *el = elem_get(b, r->a);
		if (el && el->run < r->b) {
			el->run = r->b;
			el->job_id = r->c;
			el->ended = false;
		}
		break;
	}
	case RQ_THROTTLE:
		b->want_throttle = r->a;
		break;
	case RQ_HOLD:
		b->want_hold = (int)r->a;
		break;
	case RQ_CANCEL:
		if (r->a < 0) {
			b->want_cancel = true;
		} else if (b->ncancel < b->capcancel ||
			   (b->capcancel = b->capcancel ? b->capcancel * 2 : 8,
			    b->cancel_idx = realloc(b->cancel_idx,
						    b->capcancel * sizeof(*b->cancel_idx)))) {
			b->cancel_idx[b->ncancel++] = r->a;
		}
		break;
	}
	jf_sl_req_free(r);
}

/* ---- the thread's side: machines ---- */

static int count_used(const char *gres_used)
{
	/* "gpu:4090:2(IDX:0-1)" or "gpu:4090:0(IDX:N/A)" */
	char model[64];
	int n = gres_used ? jf_slurm_gres_gpus(gres_used, model, sizeof(model)) : -1;
	return n > 0 ? n : 0;
}

bool jf_sl_poll_nodes(struct slurm *s)
{
	struct jf_slurm_node *nodes = NULL;
	size_t n = 0;
	struct jf_error err;
	jf_error_clear(&err);
	enum jf_err rc = jf_slurm_nodes(s->rest, NULL, &nodes, &n, &err);
	if (!answered(s, rc, &err))
		return false;
	s->next_nodes_ms = jf_be_mono_ms() + NODES_EVERY_MS;
	if (rc != JF_OK)
		return true;
	struct jf_be_machine *m = calloc(n ? n : 1, sizeof(*m));
	if (!m) {
		jf_slurm_nodes_free(nodes, n);
		return true;
	}
	for (size_t i = 0; i < n; i++) {
		const struct jf_slurm_node *sn = &nodes[i];
		snprintf(m[i].name, sizeof(m[i].name), "%.*s", (int)sizeof(m[i].name) - 1,
			 sn->name);
		int g = sn->gres ? jf_slurm_gres_gpus(sn->gres, m[i].model, sizeof(m[i].model))
				 : -1;
		m[i].gpus = g > 0 ? g : 0;
		m[i].gpus_used = count_used(sn->gres_used);
		m[i].cpu_milli = sn->cpus * 1000;
		m[i].cpu_used_milli = sn->alloc_cpus * 1000;
		m[i].mem_bytes = sn->real_memory_mb << 20;
		m[i].mem_used_bytes = sn->alloc_memory_mb << 20;
		snprintf(m[i].state, sizeof(m[i].state), "%s", sn->state ? sn->state : "");
		snprintf(m[i].partitions, sizeof(m[i].partitions), "%s",
			 sn->partitions ? sn->partitions : "");
	}
	jf_slurm_nodes_free(nodes, n);
	bool same = n == s->nseen_machines && s->seen_machines &&
		    memcmp(m, s->seen_machines, n * sizeof(*m)) == 0;
	if (same) {
		free(m);
		return true;
	}
	free(s->seen_machines);
	s->seen_machines = m;
	s->nseen_machines = n;
	struct jf_be_machine *copy = calloc(n ? n : 1, sizeof(*copy));
	if (!copy)
		return true;
	memcpy(copy, m, n * sizeof(*m));
	pthread_mutex_lock(&s->mu);
	free(s->next_machines);
	s->next_machines = copy;
	s->nnext_machines = n;
	s->have_next_machines = true;
	pthread_mutex_unlock(&s->mu);
	jf_sl_note_simple(s, JF_NOTE_NODES, 0, 0, "");
	return true;
}

/* ---- the thread ---- */

static void cycle(struct slurm *s)
{
	if (s->down) {
		if (jf_be_mono_ms() < s->next_try_ms)
			return;
		struct jf_error err;
		jf_error_clear(&err);
		if (jf_slurm_ping(s->rest, &err) != JF_OK) {
			set_down(s, err.msg);
			return;
		}
		s->down = false;
		jf_sl_note_simple(s, JF_NOTE_REACHABLE, 0, 0, "");
	}
	for (struct sub *b = s->subs; b; b = b->next) {
		if (b->body && !b->done && !send_sub(s, b))
			return;
		if (!do_ops(s, b))
			return;
		if (!poll_sub(s, b))
			return;
	}
	/* forget batches that are done and have nothing left to do */
	for (struct sub **pp = &s->subs; *pp;) {
		struct sub *b = *pp;
		if (b->done && !b->body && !b->want_cancel && !b->ncancel) {
			*pp = b->next;
			jf_sl_sub_free(b);
			continue;
		}
		pp = &b->next;
	}
	if (jf_be_mono_ms() >= s->next_nodes_ms)
		jf_sl_poll_nodes(s);
}

void *jf_sl_thread_main(void *arg)
{
	struct slurm *s = arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	int64_t next_cycle = 0;
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		struct req *list = s->rq_head;
		s->rq_head = s->rq_tail = NULL;
		pthread_mutex_unlock(&s->mu);
		bool got = list != NULL;
		while (list) {
			struct req *r = list;
			list = r->next;
			r->next = NULL;
			take_req(s, r);
		}
		int64_t now = jf_be_mono_ms();
		if (got || now >= next_cycle) {
			cycle(s);
			next_cycle = jf_be_mono_ms() + s->cfg.poll_ms;
		}
		pthread_mutex_lock(&s->mu);
		if (s->stop || s->rq_head)
			continue;
		int64_t wait = next_cycle - jf_be_mono_ms();
		if (wait <= 0)
			continue;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += wait / 1000;
		ts.tv_nsec += (wait % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}
