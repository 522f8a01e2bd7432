/*
 * test_engine_deps.c - engine/deps.c (reference 10, `after:`) on the real
 * engine and store, with the simulated backend on a virtual clock, driven
 * by the engine's own loop as jobfs-sim drives it: so every start and end
 * has an exact time, and nothing here waits on the wall clock.
 *
 * A chain a -> b -> c (each starts at the instant the one before ended,
 * waiting meanwhile with reason Dependency and a message naming it); a
 * fan-in; `when: failed` and `finished` (and a group Stopped with
 * DependencyNeverSatisfied when its entry can never hold); `each: true`
 * (task i of b starts when task i of a has succeeded, before a's later
 * tasks end; a pair stopped stops its task); entries across queues and
 * /tasks; targets that ended before the entry was written; a removed
 * target; refusals at submission (unknown names, a cycle of 2 and of 3,
 * self, the same group twice, each with mismatched completions or an
 * unaccepted target); an engine restart with a group waiting; the
 * queue's group_timeout not running while a group waits for its entries;
 * and a restart of a group whose entry could never hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#include "backends/sim/sim.h"
#include "core/lifecycle.h"
#include "engine/engine.h"
#include "engine/loop.h"

#define T0  JF_SIM_EPOCH_MS
#define SEC INT64_C(1000)
#define MIN (60 * SEC)

struct fix {
	char dir[256];
	char db[512];
	struct jf_sim_clock clk;
	struct jf_engine *e;
	struct jf_runner *be; /* owned by e */
	struct jf_store *st;  /* owned by e */
	struct jf_loop *loop;
	int end_timer, until_timer;
	int64_t until;
	bool until_hit;
	int64_t q; /* queue "q" */
};

static int64_t fix_now(void *ctx)
{
	return ((struct fix *)ctx)->clk.now_ms;
}

static void fix_advance(void *ctx, int64_t to)
{
	jf_sim_advance(((struct fix *)ctx)->be, to);
}

static void on_instant(struct jf_loop *l, void *ctx)
{
	(void)l;
	(void)ctx;
}

static void on_until(struct jf_loop *l, void *ctx)
{
	(void)l;
	((struct fix *)ctx)->until_hit = true;
}

/* An instant has settled: stop at until, else arm the next run end. */
static bool on_quiet(struct jf_loop *l, void *ctx)
{
	struct fix *f = ctx;
	if (f->until_hit || f->until == f->clk.now_ms) {
		jf_loop_stop(l);
		return false;
	}
	jf_loop_arm(l, f->end_timer, jf_sim_next_end(f->be));
	int64_t next = jf_loop_next_at(l);
	if (f->until >= 0 && (next < 0 || next > f->until))
		jf_loop_arm(l, f->until_timer, f->until);
	return false;
}

static void fix_open(struct fix *f)
{
	struct jf_error err = { 0 };
	struct jf_store *st = NULL;
	if (jf_store_open(f->db, &st, &err) != JF_OK)
		fail_msg("jf_store_open: %s", err.msg);
	struct jf_cluster *c = jf_cluster_builtin();
	assert_non_null(c);
	struct jf_runner *be = jf_sim_new(&f->clk, &err);
	assert_non_null(be);
	struct jf_engine_config cfg = {
		.state_dir = f->dir,
		.store = st,
		.cluster = c,
		.runner = be,
		.clock = { .now_ms = jf_sim_now, .ctx = &f->clk },
	};
	if (jf_engine_new(&cfg, &f->e, &err) != JF_OK)
		fail_msg("jf_engine_new: %s", err.msg);
	f->be = be;
	f->st = st;
	struct jf_loop_clock clock = { fix_now, fix_advance, f };
	f->loop = jf_loop_new(&clock);
	assert_non_null(f->loop);
	if (jf_engine_attach(f->e, f->loop, false, &err) != JF_OK)
		fail_msg("jf_engine_attach: %s", err.msg);
	f->end_timer = jf_loop_add_timer(f->loop, on_instant, f);
	f->until_timer = jf_loop_add_timer(f->loop, on_until, f);
	assert_int_equal(jf_loop_add_before_sleep(f->loop, on_quiet, f), 0);
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s/jf-deps-XXXXXX", jft_tmp_base());
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/jobfs.db", f->dir);
	f->clk.now_ms = T0;
	fix_open(f);
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_mkqueue(f->e, "q", getuid(), getgid(), &f->q, &err), JF_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;
	jf_engine_free(f->e);
	jf_loop_free(f->loop);
	jft_rmtree(f->dir);
	free(f);
	return 0;
}

/* The daemon stops and another starts on the same state, at the same
 * instant (nothing may run: simulated runs do not outlive it). */
static void reopen(struct fix *f)
{
	assert_int_equal(jf_sim_running(f->be), 0);
	jf_engine_free(f->e);
	jf_loop_free(f->loop);
	fix_open(f);
}

/* Play until the clock reaches until (settled there), or with until < 0
 * until nothing is left to happen. */
static void play(struct fix *f, int64_t until)
{
	f->until = until;
	f->until_hit = false;
	jf_loop_arm(f->loop, f->until_timer, -1);
	int rc = jf_loop_run(f->loop);
	if (rc == JF_LOOP_STUCK)
		fail_msg("the engine does not settle");
}

static int64_t mkqueue(struct fix *f, const char *name)
{
	struct jf_error err = { 0 };
	int64_t q = 0;
	assert_int_equal(jf_engine_mkqueue(f->e, name, getuid(), getgid(), &q, &err), JF_OK);
	return q;
}

static int64_t mkgroup(struct fix *f, int64_t q, const char *name)
{
	struct jf_error err = { 0 };
	int64_t g = 0;
	assert_int_equal(jf_engine_mkgroup(f->e, q, q ? JF_KIND_GROUP : JF_KIND_BATCH, name,
					   getuid(), getgid(), &g, &err),
			 JF_OK);
	return g;
}

/* Submit spec to an existing group; the engine's answer and message. */
static enum jf_err submit_to(struct fix *f, int64_t g, const char *spec, struct jf_error *err)
{
	memset(err, 0, sizeof(*err));
	return jf_engine_submit(f->e, g, spec, strlen(spec), getuid(), getgid(), err);
}

/* A group of queue q (0: a batch of /tasks) named name, accepted. */
static int64_t submit(struct fix *f, int64_t q, const char *name, const char *spec)
{
	int64_t g = mkgroup(f, q, name);
	struct jf_error err;
	if (submit_to(f, g, spec, &err) != JF_OK)
		fail_msg("submit %s: %s", name, err.msg);
	return g;
}

/* A refused spec: EINVAL, the group Invalid, its message holding want. */
static void refused(struct fix *f, int64_t g, const char *spec, int line, const char *want)
{
	struct jf_error err;
	enum jf_err rc = submit_to(f, g, spec, &err);
	if (rc != JF_EINVAL)
		fail_msg("want EINVAL, got %s: %s\n--- spec:\n%s", jf_err_name(rc), err.msg, spec);
	if (!strstr(err.msg, want))
		fail_msg("want '%s' in: %s", want, err.msg);
	assert_int_equal(err.line, line);
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(f->st, g, &r), JF_OK);
	assert_int_equal(r.state, JF_ST_INVALID);
	assert_non_null(strstr(r.message, want));
	jf_group_release(&r);
}

static struct jf_group_rec group(struct fix *f, int64_t g)
{
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(f->st, g, &r), JF_OK);
	return r;
}

static int gstate(struct fix *f, int64_t g)
{
	struct jf_group_rec r = group(f, g);
	int s = r.state;
	jf_group_release(&r);
	return s;
}

/* The group waits for its entries: Waiting, flagged, message holding want. */
static void waits_for(struct fix *f, int64_t g, const char *want)
{
	struct jf_group_rec r = group(f, g);
	if (r.state != JF_ST_WAITING || !(r.flags & JF_GF_DEPENDENCY) || !strstr(r.message, want))
		fail_msg("want Waiting for a dependency (%s), got %s flags %u: %s", want,
			 jf_state_name(r.state), r.flags, r.message);
	jf_group_release(&r);
}

static struct jf_task_rec task(struct fix *f, int64_t g, int64_t idx)
{
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(f->st, g, idx, &t), JF_OK);
	return t;
}

static int64_t task_started(struct fix *f, int64_t g, int64_t idx)
{
	struct jf_task_rec t = task(f, g, idx);
	int64_t s = t.started_ms;
	jf_task_release(&t);
	return s;
}

static int64_t task_finished(struct fix *f, int64_t g, int64_t idx)
{
	struct jf_task_rec t = task(f, g, idx);
	int64_t s = t.finished_ms;
	jf_task_release(&t);
	return s;
}

static int tstate(struct fix *f, int64_t g, int64_t idx)
{
	struct jf_task_rec t = task(f, g, idx);
	int s = t.state;
	jf_task_release(&t);
	return s;
}

static char *events(struct fix *f, int64_t g)
{
	int64_t size = 0;
	assert_int_equal(jf_event_size(f->st, JF_SCOPE_GROUP, g, &size), JF_OK);
	char *buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	size_t got = 0;
	assert_int_equal(jf_event_read(f->st, JF_SCOPE_GROUP, g, 0, buf, (size_t)size, &got),
			 JF_OK);
	buf[got] = '\0';
	return buf;
}

static void has_event(struct fix *f, int64_t g, const char *want)
{
	char *ev = events(f, g);
	if (!strstr(ev, want))
		fail_msg("want '%s' in the events:\n%s", want, ev);
	free(ev);
}

struct deps_seen {
	struct jf_dep_rec r[8];
	int n;
};

static int dep_seen(void *ctx, const struct jf_dep_rec *r)
{
	struct deps_seen *d = ctx;
	if (d->n < 8)
		d->r[d->n++] = *r;
	return 0;
}

static int dep_state(struct fix *f, int64_t g, int pos)
{
	struct deps_seen d = { .n = 0 };
	assert_int_equal(jf_dep_list(f->st, g, dep_seen, &d), JF_OK);
	assert_true(pos < d.n);
	return d.r[pos].state;
}

#define RUN(secs) "env: {RUN_SECONDS: \"" #secs "\"}\ncommand: [sim]\n"
#define FAIL(secs)                                                                                 \
	"retries: 0\nenv: {RUN_SECONDS: \"" #secs "\", EXIT_CODE: \"1\"}\ncommand: [sim]\n"

/* ---- the chain, the fan-in ---- */

static void test_chain(void **state)
{
	struct fix *f = *state;
	int64_t a = submit(f, f->q, "a", RUN(100));
	int64_t b = submit(f, f->q, "b", "after: [a]\n" RUN(50));
	int64_t c = submit(f, f->q, "c", "after: [{group: queues/q/groups/b}]\n" RUN(10));
	waits_for(f, b, "waiting for queues/q/groups/a to succeed");
	waits_for(f, c, "waiting for queues/q/groups/b to succeed");
	has_event(f, b, "Normal WaitingForDependency group waiting for queues/q/groups/a");
	assert_int_equal(dep_state(f, b, 0), 0);
	/* halfway through a: still waiting, nothing of b or c has run */
	play(f, T0 + 60 * SEC);
	assert_int_equal(gstate(f, a), JF_ST_RUNNING);
	waits_for(f, b, "queues/q/groups/a");
	assert_int_equal(task_started(f, b, 0), 0);
	play(f, -1);
	assert_int_equal(gstate(f, a), JF_ST_SUCCEEDED);
	assert_int_equal(gstate(f, b), JF_ST_SUCCEEDED);
	assert_int_equal(gstate(f, c), JF_ST_SUCCEEDED);
	/* each at the instant the one before ended */
	assert_int_equal(task_started(f, b, 0), T0 + 100 * SEC);
	assert_int_equal(task_started(f, c, 0), T0 + 150 * SEC);
	assert_int_equal(dep_state(f, b, 0), 1);
	assert_int_equal(dep_state(f, c, 0), 1);
	has_event(f, b, "Normal DependencySatisfied group every entry of after holds");
	/* no flag left */
	struct jf_group_rec r = group(f, b);
	assert_int_equal(r.flags & JF_GF_DEPENDENCY, 0);
	jf_group_release(&r);
}

static void test_fan_in(void **state)
{
	struct fix *f = *state;
	int64_t a = submit(f, f->q, "a", RUN(100));
	submit(f, f->q, "b", RUN(200));
	int64_t c = submit(f, f->q, "c", "after: [a, b]\n" RUN(10));
	waits_for(f, c, "queues/q/groups/a to succeed, queues/q/groups/b to succeed");
	play(f, T0 + 100 * SEC);
	assert_int_equal(gstate(f, a), JF_ST_SUCCEEDED);
	/* one entry holds, the other waits: the message names what is left */
	waits_for(f, c, "waiting for queues/q/groups/b to succeed");
	assert_int_equal(dep_state(f, c, 0), 1);
	assert_int_equal(dep_state(f, c, 1), 0);
	play(f, -1);
	assert_int_equal(gstate(f, c), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, c, 0), T0 + 200 * SEC);
}

/* ---- when ---- */

static void test_when(void **state)
{
	struct fix *f = *state;
	int64_t bad = submit(f, f->q, "bad", FAIL(30));
	submit(f, f->q, "good", RUN(60));
	int64_t cleanup =
		submit(f, f->q, "cleanup", "after: [{group: bad, when: failed}]\n" RUN(5));
	int64_t never = submit(f, f->q, "never", "after: [{group: good, when: failed}]\n" RUN(5));
	int64_t ok = submit(f, f->q, "ok", "after: [bad]\n" RUN(5));
	int64_t any = submit(f, f->q, "any",
			     "after: [{group: bad, when: finished}, {group: good, when: "
			     "finished}]\n" RUN(5));
	waits_for(f, cleanup, "queues/q/groups/bad to fail");
	waits_for(f, any, "queues/q/groups/bad to finish, queues/q/groups/good to finish");
	play(f, -1);
	assert_int_equal(gstate(f, bad), JF_ST_FAILED);
	assert_int_equal(gstate(f, cleanup), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, cleanup, 0), T0 + 30 * SEC);
	assert_int_equal(gstate(f, any), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, any, 0), T0 + 60 * SEC);
	/* never: its target succeeded; ok: its target failed */
	assert_int_equal(gstate(f, never), JF_ST_STOPPED);
	assert_int_equal(task_started(f, never, 0), 0);
	assert_int_equal(tstate(f, never, 0), JF_ST_STOPPED);
	struct jf_group_rec r = group(f, never);
	assert_string_equal(r.message, "dependency never satisfied: after[0] needs "
				       "queues/q/groups/good to have failed, and it ended "
				       "Succeeded");
	assert_int_equal(r.finished_ms, T0 + 60 * SEC);
	jf_group_release(&r);
	has_event(f, never, "Warning DependencyNeverSatisfied group dependency never satisfied");
	assert_int_equal(dep_state(f, never, 0), 2);
	assert_int_equal(gstate(f, ok), JF_ST_STOPPED);
	r = group(f, ok);
	assert_non_null(strstr(r.message, "queues/q/groups/bad to have succeeded, and it ended "
					  "Failed"));
	jf_group_release(&r);
	/* the queue's events say so too */
	int64_t size = 0;
	assert_int_equal(jf_event_size(f->st, JF_SCOPE_QUEUE, f->q, &size), JF_OK);
	char *buf = malloc((size_t)size + 1);
	size_t got = 0;
	assert_int_equal(jf_event_read(f->st, JF_SCOPE_QUEUE, f->q, 0, buf, (size_t)size, &got),
			 JF_OK);
	buf[got] = '\0';
	assert_non_null(strstr(buf, "Warning DependencyNeverSatisfied group ok: dependency"));
	free(buf);
}

/* A chain ends link by link when its head can never satisfy it. */
static void test_never_cascades(void **state)
{
	struct fix *f = *state;
	int64_t a = submit(f, f->q, "a", FAIL(10));
	int64_t b = submit(f, f->q, "b", "after: [a]\n" RUN(5));
	int64_t c = submit(f, f->q, "c", "after: [b]\n" RUN(5));
	int64_t d = submit(f, f->q, "d", "after: [{group: c, when: finished}]\n" RUN(5));
	play(f, -1);
	assert_int_equal(gstate(f, a), JF_ST_FAILED);
	assert_int_equal(gstate(f, b), JF_ST_STOPPED);
	assert_int_equal(gstate(f, c), JF_ST_STOPPED);
	/* finished: a Stopped target holds it */
	assert_int_equal(gstate(f, d), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, d, 0), T0 + 10 * SEC);
}

/* ---- each ---- */

static void test_each(void **state)
{
	struct fix *f = *state;
	int64_t a = submit(f, f->q, "a", "completions: 4\nparallelism: 1\n" RUN(100));
	int64_t b =
		submit(f, f->q, "b", "completions: 4\nafter: [{group: a, each: true}]\n" RUN(10));
	waits_for(f, b, "the paired tasks of queues/q/groups/a to succeed");
	has_event(f, b, "WaitingForDependency group task i waits for task i");
	/* task 3 of a is stopped before it runs: its pair can never hold */
	struct jf_error err = { 0 };
	struct jf_task_rec t3 = task(f, a, 3);
	assert_int_equal(jf_engine_ctl(f->e, a, t3.id, "stop", &err), JF_OK);
	jf_task_release(&t3);
	play(f, T0 + 150 * SEC);
	/* a's task 0 ended at 100: b's task 0 ran then, long before a's task
	 * 2 ends (300), and b's task 1 has not started */
	assert_int_equal(task_started(f, b, 0), T0 + 100 * SEC);
	assert_int_equal(tstate(f, b, 0), JF_ST_SUCCEEDED);
	assert_int_equal(tstate(f, b, 1), JF_ST_WAITING);
	assert_int_equal(tstate(f, a, 2), JF_ST_WAITING);
	assert_int_equal(tstate(f, b, 3), JF_ST_STOPPED);
	struct jf_task_rec t = task(f, b, 3);
	assert_non_null(strstr(t.message, "pairs this task with task 3 of queues/q/groups/a, "
					  "which ended Stopped (when: succeeded)"));
	jf_task_release(&t);
	has_event(f, b, "Warning DependencyNeverSatisfied tasks/3 dependency never satisfied");
	waits_for(f, b, "the paired tasks of queues/q/groups/a");
	play(f, -1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(task_started(f, b, i), task_finished(f, a, i));
	assert_int_equal(gstate(f, a), JF_ST_STOPPED);
	assert_int_equal(gstate(f, b), JF_ST_STOPPED);
	struct jf_group_rec r = group(f, b);
	assert_string_equal(r.message, "3/4 tasks succeeded, 1 stopped");
	jf_group_release(&r);
	/* the target ended: the entry holds (every pair decided) */
	assert_int_equal(dep_state(f, b, 0), 1);
}

/* each with when: failed: a cleanup task per failed task only */
static void test_each_failed(void **state)
{
	struct fix *f = *state;
	int64_t a = submit(f, 0, "a", "count: 2\n" FAIL(20));
	int64_t b = submit(f, 0, "b",
			   "count: 2\nafter: [{group: a, each: true, when: failed}]\n" RUN(5));
	play(f, -1);
	assert_int_equal(gstate(f, a), JF_ST_FAILED);
	assert_int_equal(gstate(f, b), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, b, 0), T0 + 20 * SEC);
	assert_int_equal(task_started(f, b, 1), T0 + 20 * SEC);
}

/* ---- across queues and /tasks ---- */

static void test_across(void **state)
{
	struct fix *f = *state;
	int64_t q2 = mkqueue(f, "q2");
	int64_t a = submit(f, f->q, "a", RUN(40));
	int64_t x = submit(f, 0, "x", "count: 2\n" RUN(20));
	int64_t b = submit(f, q2, "b", "after: [queues/q/groups/a, tasks/x]\n" RUN(5));
	int64_t y = submit(f, 0, "y", "after: [x, {group: queues/q2/groups/b}]\n" RUN(5));
	waits_for(f, b, "queues/q/groups/a to succeed, tasks/x to succeed");
	waits_for(f, y, "tasks/x to succeed, queues/q2/groups/b to succeed");
	play(f, -1);
	assert_int_equal(gstate(f, b), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, b, 0), T0 + 40 * SEC);
	assert_int_equal(gstate(f, y), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, y, 0), T0 + 45 * SEC);
	(void)a;
	(void)x;
}

/* ---- targets that ended already, and removed ones ---- */

static void test_ended_before(void **state)
{
	struct fix *f = *state;
	submit(f, f->q, "a", RUN(10));
	submit(f, f->q, "bad", FAIL(10));
	play(f, -1);
	int64_t b = submit(f, f->q, "b", "after: [a]\n" RUN(5));
	/* holds at once: no waiting, no flag */
	assert_int_equal(dep_state(f, b, 0), 1);
	int64_t c = submit(f, f->q, "c", "after: [a, bad]\n" RUN(5));
	/* can never hold at once: Stopped at its acceptance */
	assert_int_equal(gstate(f, c), JF_ST_STOPPED);
	struct jf_group_rec r = group(f, c);
	assert_non_null(strstr(r.message, "after[1] needs queues/q/groups/bad"));
	jf_group_release(&r);
	int64_t d =
		submit(f, f->q, "d", "completions: 1\nafter: [{group: a, each: true}]\n" RUN(5));
	assert_int_equal(dep_state(f, d, 0), 1);
	play(f, -1);
	assert_int_equal(gstate(f, b), JF_ST_SUCCEEDED);
	assert_int_equal(gstate(f, d), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, b, 0), T0 + 10 * SEC);
}

static void test_removed(void **state)
{
	struct fix *f = *state;
	int64_t a = mkgroup(f, f->q, "a"); /* a draft: it exists, has not run */
	int64_t b = submit(f, f->q, "b", "after: [a]\n" RUN(5));
	int64_t c = submit(f, f->q, "c", "after: [{group: b, when: finished}]\n" RUN(5));
	waits_for(f, b, "queues/q/groups/a to succeed");
	/* renamed: the entry follows it */
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_rename_group(f->e, a, "a2", &err), JF_OK);
	struct deps_seen d = { .n = 0 };
	jf_dep_list(f->st, b, dep_seen, &d);
	assert_string_equal(d.r[0].path, "queues/q/groups/a2");
	assert_int_equal(jf_engine_rmgroup(f->e, a, &err), JF_OK);
	play(f, -1);
	assert_int_equal(gstate(f, b), JF_ST_STOPPED);
	struct jf_group_rec r = group(f, b);
	assert_string_equal(r.message, "dependency never satisfied: after[0] queues/q/groups/a2 "
				       "(when: succeeded) was removed before it ended");
	jf_group_release(&r);
	d.n = 0;
	jf_dep_list(f->st, b, dep_seen, &d);
	assert_int_equal(d.r[0].target_id, 0);
	assert_int_equal(d.r[0].state, 2);
	assert_string_equal(d.r[0].path, "queues/q/groups/a2");
	/* finished holds on a Stopped target */
	assert_int_equal(gstate(f, c), JF_ST_SUCCEEDED);
	/* a target that ended, removed: what held still holds */
	int64_t e1 = submit(f, f->q, "e1", RUN(5));
	int64_t w = mkgroup(f, f->q, "w");
	int64_t e2 = submit(f, f->q, "e2", "after: [e1, w]\n" RUN(5));
	play(f, -1);
	assert_int_equal(dep_state(f, e2, 0), 1);
	assert_int_equal(jf_engine_rmgroup(f->e, e1, &err), JF_OK);
	play(f, -1);
	assert_int_equal(dep_state(f, e2, 0), 1);
	waits_for(f, e2, "waiting for queues/q/groups/w to succeed");
	assert_int_equal(submit_to(f, w, RUN(5), &err), JF_OK);
	int64_t now = f->clk.now_ms;
	play(f, -1);
	assert_int_equal(gstate(f, e2), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, e2, 0), now + 5 * SEC);
}

/* ---- refused when written ---- */

static void test_refused(void **state)
{
	struct fix *f = *state;
	int64_t g = mkgroup(f, f->q, "g");
	refused(f, g, "command: [sim]\nafter: [nope]\n", 2,
		"key 'after[0]': no group nope in queue q (make it first: mkdir "
		"queues/q/groups/nope)");
	refused(f, g, "command: [sim]\nafter:\n  - {group: tasks/nope}\n", 3,
		"key 'after[0]': no batch nope in /tasks");
	refused(f, g, "command: [sim]\nafter: [queues/zz/groups/a]\n", 2, "no queue zz");
	refused(f, g, "command: [sim]\nafter: [g]\n", 2, "queues/q/groups/g is this group itself");
	int64_t a = mkgroup(f, f->q, "a");
	refused(f, g, "command: [sim]\nafter: [a, queues/q/groups/a]\n", 2,
		"key 'after[1]': queues/q/groups/a is named by after[0] too (line 2)");
	/* a bare name in a batch is a batch */
	int64_t x = mkgroup(f, 0, "x");
	refused(f, x, "command: [sim]\nafter: [a]\n", 2, "no batch a in /tasks");
	/* each: the target's tasks must be known and as many */
	refused(f, g, "completions: 2\ncommand: [sim]\nafter: [{group: a, each: true}]\n", 3,
		"key 'after[0].each': each: true pairs task i with task i of queues/q/groups/a, "
		"which has no accepted spec yet");
	struct jf_error err;
	assert_int_equal(submit_to(f, a, "completions: 3\nparallelism: 1\n" RUN(10), &err), JF_OK);
	refused(f, g, "completions: 2\ncommand: [sim]\nafter: [{group: a, each: true}]\n", 3,
		"this group has 2 tasks and that one 3; they must be the same");
	refused(f, x, "count: 4\ncommand: [sim]\nafter: [{group: queues/q/groups/a, each: true}]\n",
		3, "this batch has 4 tasks and that one 3");
	/* what was refused can be written again */
	assert_int_equal(
		submit_to(f, g, "completions: 3\nafter: [{group: a, each: true}]\n" RUN(1), &err),
		JF_OK);
}

static void test_cycles(void **state)
{
	struct fix *f = *state;
	/* 2: a after b (a draft), then b after a */
	int64_t b = mkgroup(f, f->q, "b");
	int64_t a = submit(f, f->q, "a", "after: [b]\n" RUN(1));
	refused(f, b, "command: [sim]\nafter: [a]\n", 2,
		"waiting for queues/q/groups/a would make a cycle: queues/q/groups/b -> "
		"queues/q/groups/a -> queues/q/groups/b");
	/* 3: x after y, y after z, z after x (across a batch) */
	int64_t z = mkgroup(f, 0, "z");
	int64_t y = mkgroup(f, f->q, "y");
	submit(f, f->q, "x", "after: [y]\n" RUN(1));
	assert_int_equal(gstate(f, y), JF_ST_DRAFT);
	struct jf_error err;
	assert_int_equal(submit_to(f, y, "command: [sim]\nafter: [tasks/z]\n", &err), JF_OK);
	refused(f, z, "command: [sim]\nafter:\n  - tasks/other\n", 3, "no batch other");
	refused(f, z, "command: [sim]\nafter:\n  - queues/q/groups/x\n", 3,
		"a cycle: tasks/z -> queues/q/groups/x -> queues/q/groups/y -> tasks/z");
	/* no cycle: z after a (a waits for b only) */
	assert_int_equal(submit_to(f, z, "command: [sim]\nafter: [queues/q/groups/a]\n", &err),
			 JF_OK);
	(void)a;
}

/* ---- restarts ---- */

static void test_engine_restart(void **state)
{
	struct fix *f = *state;
	int64_t a = mkgroup(f, f->q, "a");
	int64_t b = submit(f, f->q, "b", "after: [a]\n" RUN(5));
	waits_for(f, b, "queues/q/groups/a");
	reopen(f);
	/* still waiting, flagged, with its message */
	waits_for(f, b, "waiting for queues/q/groups/a to succeed");
	play(f, T0 + 10 * SEC);
	waits_for(f, b, "queues/q/groups/a");
	struct jf_error err;
	assert_int_equal(submit_to(f, a, RUN(20), &err), JF_OK);
	play(f, -1);
	assert_int_equal(gstate(f, b), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, b, 0), T0 + 30 * SEC);
}

/* The target ended while no daemon told its dependents (the row still
 * waits): the next start decides it. */
static void test_engine_restart_stale(void **state)
{
	struct fix *f = *state;
	int64_t a = mkgroup(f, f->q, "a");
	int64_t b = submit(f, f->q, "b", "after: [a]\n" RUN(5));
	waits_for(f, b, "queues/q/groups/a");
	jf_engine_free(f->e);
	jf_loop_free(f->loop);
	/* as a daemon killed between a's end and its consequence leaves it */
	struct jf_store *st = NULL;
	struct jf_error err = { 0 };
	assert_int_equal(jf_store_open(f->db, &st, &err), JF_OK);
	assert_int_equal(jf_store_begin(st), JF_OK);
	assert_int_equal(jf_group_set_state(st, a, JF_ST_SUCCEEDED, "", T0), JF_OK);
	assert_int_equal(jf_store_commit(st), JF_OK);
	jf_store_close(st);
	fix_open(f);
	play(f, -1);
	assert_int_equal(dep_state(f, b, 0), 1);
	assert_int_equal(gstate(f, b), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, b, 0), T0);
}

static void test_restart_dependent(void **state)
{
	struct fix *f = *state;
	int64_t a = submit(f, f->q, "a", FAIL(10));
	int64_t b = submit(f, f->q, "b", "after: [a]\n" RUN(5));
	play(f, -1);
	assert_int_equal(gstate(f, b), JF_ST_STOPPED);
	/* a run again, and it succeeds this time? not yet: b restarted
	 * while a runs again waits for it once more */
	struct jf_error err;
	assert_int_equal(jf_engine_ctl(f->e, a, 0, "restart", &err), JF_OK);
	assert_int_equal(jf_engine_ctl(f->e, b, 0, "restart", &err), JF_OK);
	waits_for(f, b, "queues/q/groups/a to succeed");
	assert_int_equal(dep_state(f, b, 0), 0);
	play(f, -1);
	/* it failed again: b is Stopped again */
	assert_int_equal(gstate(f, a), JF_ST_FAILED);
	assert_int_equal(gstate(f, b), JF_ST_STOPPED);
	assert_int_equal(task_started(f, b, 0), 0);
	/* a restarted b whose entry holds runs at once */
	submit(f, f->q, "c", RUN(5));
	int64_t d = submit(f, f->q, "d", "after: [c]\n" RUN(5));
	play(f, -1);
	assert_int_equal(jf_engine_ctl(f->e, d, 0, "restart", &err), JF_OK);
	int64_t now = f->clk.now_ms;
	play(f, -1);
	assert_int_equal(gstate(f, d), JF_ST_SUCCEEDED);
	assert_int_equal(task_finished(f, d, 0), now + 5 * SEC);
}

/* A queue's group_timeout does not run while a group waits for its
 * entries: from when they came to hold. */
static void test_group_timeout(void **state)
{
	struct fix *f = *state;
	struct jf_error err;
	int64_t q = mkqueue(f, "t");
	const char *qs = "group_timeout: 10m\n";
	assert_int_equal(jf_engine_queue_spec(f->e, q, qs, strlen(qs), &err), JF_OK);
	int64_t a = submit(f, q, "a", RUN(7200));
	int64_t b = submit(f, q, "b", "after: [a]\n" RUN(60));
	play(f, -1);
	assert_int_equal(gstate(f, a), JF_ST_SUCCEEDED);
	assert_int_equal(gstate(f, b), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, b, 0), T0 + 7200 * SEC);
}

/* activeDeadlineSeconds (a K8s Job) counts from when the entries hold. */
static void test_active_deadline(void **state)
{
	struct fix *f = *state;
	int64_t a = submit(f, f->q, "a", RUN(600));
	int64_t b = submit(f, f->q, "b",
			   "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: b\n"
			   "  annotations: {jobfs/after: \"[a]\"}\n"
			   "spec:\n  activeDeadlineSeconds: 300\n  template:\n    spec:\n"
			   "      restartPolicy: Never\n"
			   "      containers: [{name: c, image: busybox, command: [sim], env: "
			   "[{name: RUN_SECONDS, value: \"400\"}]}]\n");
	waits_for(f, b, "queues/q/groups/a");
	play(f, -1);
	assert_int_equal(gstate(f, a), JF_ST_SUCCEEDED);
	/* started at 600, past its deadline at 900 (not at 300) */
	assert_int_equal(task_started(f, b, 0), T0 + 600 * SEC);
	struct jf_group_rec r = group(f, b);
	assert_int_equal(r.state, JF_ST_FAILED);
	assert_int_equal(r.finished_ms, T0 + 900 * SEC);
	assert_non_null(strstr(r.message, "activeDeadlineSeconds"));
	jf_group_release(&r);
}

/* Paused while waiting, resumed: it waits again, then runs. */
static void test_pause(void **state)
{
	struct fix *f = *state;
	int64_t a = submit(f, f->q, "a", RUN(30));
	int64_t b = submit(f, f->q, "b", "after: [a]\n" RUN(5));
	struct jf_error err;
	assert_int_equal(jf_engine_ctl(f->e, b, 0, "pause", &err), JF_OK);
	play(f, T0 + 40 * SEC);
	assert_int_equal(gstate(f, b), JF_ST_PAUSED);
	assert_int_equal(jf_engine_ctl(f->e, b, 0, "resume", &err), JF_OK);
	play(f, -1);
	assert_int_equal(gstate(f, b), JF_ST_SUCCEEDED);
	assert_int_equal(task_started(f, b, 0), T0 + 40 * SEC);
	(void)a;
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_chain),
		T(test_fan_in),
		T(test_when),
		T(test_never_cascades),
		T(test_each),
		T(test_each_failed),
		T(test_across),
		T(test_ended_before),
		T(test_removed),
		T(test_refused),
		T(test_cycles),
		T(test_engine_restart),
		T(test_engine_restart_stale),
		T(test_restart_dependent),
		T(test_group_timeout),
		T(test_active_deadline),
		T(test_pause),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
