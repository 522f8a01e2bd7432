/*
 * slurm.c - the slurm backend (slurm.h): a request list in, notes out, one
 * thread in between that does every HTTP request.  This file is the
 * loop's side (the ops) and the backend's life; the thread's side is
 * slurm_poll.c, what they share slurm_int.h.
 *
 * DESIGN
 *
 * Two sides share struct slurm under its mutex: the loop's side (the ops,
 * called on the daemon's thread) only appends requests and takes notes;
 * the thread's side owns everything else (the REST handle, the batches it
 * follows and what it has told of their elements).  Nothing the thread
 * does waits for the loop, and nothing the loop does waits for HTTP.
 *
 * A batch (struct sub) the thread follows knows, per element it has seen
 * (struct elem, found by task index), the run it told STARTED and whether
 * it told that run ENDED.  What holds:
 *   - for each element and run, STARTED comes before ENDED and each is told
 *     once; an element whose run r+1 is seen while run r was not told
 *     ENDED gets ENDED(r, REQUEUED) first;
 *   - DONE is told once, after every element told STARTED was told ENDED,
 *     when Slurm keeps nothing of the batch that is not final.
 * After a restart the engine says again what it follows (follow, running)
 * and the same holds from there.
 *
 * Slurm keeps a final record MinJobAge seconds (default 300) after the
 * end: an end is missed only when the daemon was away longer than that.
 * Then the supervisors' records on the shared filesystem still tell how
 * each node ended (ENDED with the results read from the run directories);
 * without them the element is LOST.
 */
#include "backends/slurm/slurm_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "backends/slurm/hostlist.h"
#include "backends/slurm/script.h"

#define START_NODES_MS 1500

static const struct jf_scheduler_ops slurm_ops;

/* ---- the loop's side ---- */

static void push_req(struct slurm *s, struct req *r)
{
	pthread_mutex_lock(&s->mu);
	if (s->rq_tail)
		s->rq_tail->next = r;
	else
		s->rq_head = r;
	s->rq_tail = r;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static struct req *req_new(enum req_kind kind, uint64_t key)
{
	struct req *r = calloc(1, sizeof(*r));
	if (r) {
		r->kind = kind;
		r->key = key;
	}
	return r;
}

void jf_sl_req_free(struct req *r)
{
	if (!r)
		return;
	free(r->dir);
	free(r->user);
	json_decref(r->body);
	free(r);
}

static void give_to(const char *path, uid_t uid, gid_t gid)
{
	if (geteuid() == 0 && (uid != 0 || gid != 0) && chown(path, uid, gid) < 0) {
		/* the job will fail to read it, and say so in its output */
	}
}

static enum jf_err slurm_submit(struct jf_scheduler *be, const struct jf_batch *b,
				struct jf_error *err)
{
	struct slurm *s = (struct slurm *)be;
	if (!b->nidx || !b->nprocs)
		return jf_error_set(err, JF_EINVAL, 0, "slurm: an empty batch");
	char path[4200], comment[160];
	enum jf_err rc = JF_OK;
	json_t *launch = NULL, *body = NULL;
	char *text = NULL, *script = NULL, *array = NULL;
	int64_t *rel = malloc(b->nidx * sizeof(*rel));
	if (!rel)
		return jf_error_set(err, JF_ENOMEM, 0, "out of memory");
	for (size_t i = 0; i < b->nidx; i++)
		rel[i] = b->idx[i] - b->idx[0];
	array = jf_idxset_format(rel, b->nidx, b->throttle);
	free(rel);
	if (!array) {
		rc = jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		goto out;
	}
	launch = jf_slurm_launch_json(b, err);
	if (!launch) {
		rc = err->code;
		goto out;
	}
	text = json_dumps(launch, JSON_COMPACT);
	snprintf(path, sizeof(path), "%s/launch.json", b->dir);
	if (!text || jf_slurm_write_file(path, text, strlen(text), 0600) < 0) {
		rc = jf_error_set(err, JF_EIO, 0, "slurm: %s: %s", path,
				  text ? strerror(errno) : "out of memory");
		goto out;
	}
	give_to(path, b->uid, b->gid);
	script = jf_slurm_script(s->shim, b->dir, b->nodes, b->spot, err);
	if (!script) {
		rc = err->code;
		goto out;
	}
	snprintf(comment, sizeof(comment), "jobfs:%s:%" PRIu64, s->uuid, b->key);
	body = jf_slurm_job_json(b, script, array, comment, err);
	if (!body) {
		rc = err->code;
		goto out;
	}
	struct req *r = req_new(RQ_SUBMIT, b->key);
	if (!r || !(r->dir = strdup(b->dir)) || !(r->user = strdup(b->user ? b->user : ""))) {
		jf_sl_req_free(r);
		rc = jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		goto out;
	}
	r->body = body;
	body = NULL;
	r->maybe_sent = b->resend;
	r->first_idx = b->idx[0];
	r->count = b->nidx;
	push_req(s, r);
out:
	json_decref(body);
	json_decref(launch);
	free(text);
	free(script);
	free(array);
	return rc;
}

static void slurm_follow(struct jf_scheduler *be, uint64_t key, int64_t job_id, const char *dir,
			 int64_t first_idx, const char *user)
{
	struct slurm *s = (struct slurm *)be;
	struct req *r = req_new(RQ_FOLLOW, key);
	if (!r || !(r->dir = strdup(dir)) || !(r->user = strdup(user ? user : ""))) {
		jf_sl_req_free(r);
		return;
	}
	r->a = job_id;
	r->first_idx = first_idx;
	push_req(s, r);
}

static void slurm_running(struct jf_scheduler *be, uint64_t key, int64_t idx, int64_t run,
			  int64_t elem_job)
{
	struct req *r = req_new(RQ_RUNNING, key);
	if (!r)
		return;
	r->a = idx;
	r->b = run;
	r->c = elem_job;
	push_req((struct slurm *)be, r);
}

static void simple_req(struct jf_scheduler *be, enum req_kind kind, uint64_t key, int64_t a)
{
	struct req *r = req_new(kind, key);
	if (!r)
		return;
	r->a = a;
	push_req((struct slurm *)be, r);
}

static void slurm_throttle(struct jf_scheduler *be, uint64_t key, int64_t throttle)
{
	simple_req(be, RQ_THROTTLE, key, throttle);
}

static void slurm_hold(struct jf_scheduler *be, uint64_t key, bool hold)
{
	simple_req(be, RQ_HOLD, key, hold ? 1 : 0);
}

static void slurm_cancel(struct jf_scheduler *be, uint64_t key, int64_t idx)
{
	simple_req(be, RQ_CANCEL, key, idx);
}

/* A node attempt's handle, "slurm:KEY:IDX:RUN:NODE": signalling it cancels
 * the element (Slurm sends TERM, then KILL after its KillWait). */
static enum jf_err slurm_signal(struct jf_scheduler *be, const char *handle, enum jf_run_signal sig)
{
	unsigned long long key;
	long long idx;
	if (sscanf(handle, "slurm:%llu:%lld:", &key, &idx) != 2)
		return JF_EINVAL;
	(void)sig;
	slurm_cancel(be, key, idx);
	return JF_OK;
}

static int slurm_fd(struct jf_scheduler *be)
{
	return ((struct slurm *)be)->evfd;
}

/* Under mu: the machines the thread saw last become the loop's. */
void jf_sl_take_machines(struct slurm *s)
{
	if (!s->have_next_machines)
		return;
	free(s->machines);
	s->machines = s->next_machines;
	s->nmachines = s->nnext_machines;
	s->next_machines = NULL;
	s->have_next_machines = false;
}

static size_t slurm_notes(struct jf_scheduler *be, struct jf_note *out, size_t max)
{
	struct slurm *s = (struct slurm *)be;
	uint64_t count;
	pthread_mutex_lock(&s->mu);
	size_t n = s->nnotes < max ? s->nnotes : max;
	if (n) {
		memcpy(out, s->notes, n * sizeof(*out));
		memmove(s->notes, s->notes + n, (s->nnotes - n) * sizeof(*s->notes));
		s->nnotes -= n;
	}
	jf_sl_take_machines(s);
	if (s->nnotes == 0)
		(void)!read(s->evfd, &count, sizeof(count));
	pthread_mutex_unlock(&s->mu);
	return n;
}

static const struct jf_be_machine *slurm_machines(struct jf_scheduler *be, size_t *n)
{
	struct slurm *s = (struct slurm *)be;
	*n = s->nmachines;
	return s->machines;
}

static void slurm_free(struct jf_scheduler *be)
{
	struct slurm *s = (struct slurm *)be;
	if (s->thread_up) {
		atomic_store(&s->quit, true);
		pthread_mutex_lock(&s->mu);
		s->stop = true;
		pthread_cond_signal(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
	}
	for (struct req *r = s->rq_head, *next; r; r = next) {
		next = r->next;
		jf_sl_req_free(r);
	}
	for (struct sub *b = s->subs, *next; b; b = next) {
		next = b->next;
		jf_sl_sub_free(b);
	}
	for (size_t i = 0; i < s->nnotes; i++)
		jf_note_release(&s->notes[i]);
	free(s->notes);
	free(s->machines);
	free(s->next_machines);
	free(s->seen_machines);
	jf_slurm_rest_free(s->rest);
	if (s->evfd >= 0)
		close(s->evfd);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->jc.v);
	free(s->jc.path);
	free(s->url);
	free(s->token);
	free(s->shim);
	free(s->uuid);
	free(s);
}

static const struct jf_scheduler_ops slurm_ops = {
	.name = "slurm",
	.submit = slurm_submit,
	.follow = slurm_follow,
	.running = slurm_running,
	.throttle = slurm_throttle,
	.hold = slurm_hold,
	.cancel = slurm_cancel,
	.signal = slurm_signal,
	.fd = slurm_fd,
	.notes = slurm_notes,
	.machines = slurm_machines,
	.free = slurm_free,
};

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

struct jf_scheduler *jf_slurm_new(const struct jf_slurm_config *c, struct jf_error *err)
{
	if (!c->url || !c->url[0]) {
		jf_error_set(err, JF_EINVAL, 0, "slurm backend: no --slurm URL");
		return NULL;
	}
	if (!c->shim || access(c->shim, X_OK) < 0) {
		jf_error_set(err, JF_EINVAL, 0, "slurm backend: jobfs-shim %s: %s",
			     c->shim ? c->shim : "(none)", strerror(errno));
		return NULL;
	}
	struct slurm *s = calloc(1, sizeof(*s));
	if (!s) {
		jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		return NULL;
	}
	s->be.ops = &slurm_ops;
	s->evfd = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->cfg = *c;
	s->url = dup_or_empty(c->url);
	s->token = dup_or_empty(c->token);
	s->shim = dup_or_empty(c->shim);
	s->uuid = dup_or_empty(c->uuid);
	if (!s->url || !s->token || !s->shim || !s->uuid) {
		jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		goto fail;
	}
	if (s->cfg.poll_ms <= 0)
		s->cfg.poll_ms = POLL_MS_DEFAULT;
	if (c->jobcomp && c->jobcomp[0] && !(s->jc.path = strdup(c->jobcomp))) {
		jf_error_set(err, JF_ENOMEM, 0, "out of memory");
		goto fail;
	}
	s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->evfd < 0) {
		jf_error_set(err, JF_EIO, 0, "slurm backend: eventfd: %s", strerror(errno));
		goto fail;
	}
	struct jf_slurm_rest_opts o = {
		.url = s->url,
		.token = s->token[0] ? s->token : NULL,
		.timeout_ms = c->timeout_ms,
	};
	if (jf_slurm_rest_new(&o, &s->rest, err) != JF_OK)
		goto fail;
	atomic_init(&s->quit, false);
	jf_slurm_rest_quit_on(s->rest, &s->quit);
	/* the machines before the tree: one try on a handle of its own that
	 * waits at most START_NODES_MS (a slurmctld that is away does not hold
	 * the mount up for long; the thread asks again) */
	struct jf_slurm_rest *main_rest = s->rest;
	struct jf_error ierr;
	o.timeout_ms = START_NODES_MS;
	if (jf_slurm_rest_new(&o, &s->rest, &ierr) == JF_OK) {
		jf_sl_poll_nodes(s);
		jf_slurm_rest_free(s->rest);
		pthread_mutex_lock(&s->mu);
		jf_sl_take_machines(s);
		pthread_mutex_unlock(&s->mu);
	}
	s->rest = main_rest;
	if (pthread_create(&s->thread, NULL, jf_sl_thread_main, s) != 0) {
		jf_error_set(err, JF_EIO, 0, "slurm backend: cannot start its thread");
		goto fail;
	}
	s->thread_up = true;
	return &s->be;
fail:
	slurm_free(&s->be);
	return NULL;
}
