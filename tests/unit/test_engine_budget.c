/*
 * test_engine_budget.c - queue budgets (reference 10, engine/budget.c)
 * driven as the daemon drives the engine: a SQLite store, the local
 * backend running real processes under tools/jobfs-shim, and an injected
 * clock, the real one plus an offset a test moves (with skew_ms, as
 * --test-clock does, so that the backend's times follow it).  CPU-only
 * tasks at 3600 per core-hour: a running task costs 1.00 a second.
 *
 * Covers: the deadline the tick asks for is when the running work reaches
 * the budget (no polling); reached mid-group, nothing new starts, the
 * group is flagged (reason Budget) with its message, one BudgetExhausted
 * event however often the engine looks, running work runs on (hold); a
 * day later the rolling period has freed the money: BudgetAvailable, the
 * waiting task starts; budget_action: stop stops the running task
 * (Stopped, billed to its end) and its group's other task waits; a raised
 * budget releases the work; a restart while exhausted says nothing twice;
 * the test clock's file: read again when it changes, never backwards.
 */
#include <poll.h>
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
#include <sqlite3.h>

#include "backends/local/local.h"
#include "core/billing.h"
#include "core/budget.h"
#include "core/lifecycle.h"
#include "engine/engine.h"
#include "engine/testclock.h"

#define DAY_MS INT64_C(86400000)

static const char cluster_text[] = "currency: CNY\n"
				   "cpu_price: {on-demand: \"3600\", spot: \"1000\"}\n"
				   "models:\n"
				   "  - name: \"4090\"\n"
				   "    vram: 24Gi\n"
				   "    cpu_per_gpu: 20\n"
				   "    memory_per_gpu: 101Gi\n"
				   "    price: {on-demand: \"3.60\", spot: \"1.08\"}\n"
				   "machines:\n"
				   "  - {name: m0, model: \"4090\", gpus: 8}\n";

#define SLEEPER "command: [\"/bin/sh\", \"-c\", \"sleep 1000\"]\n"

struct fix {
	char dir[256];
	char db[512];
	struct jf_engine *e;
	struct jf_runner *be;
	int64_t offset_ms; /* the injected clock: real time + this */
	int64_t queue;
};

static int64_t test_now(void *ctx)
{
	return jft_wall_ms() + ((struct fix *)ctx)->offset_ms;
}

static int64_t test_skew(void *ctx)
{
	return ((struct fix *)ctx)->offset_ms;
}

static void engine_start(struct fix *f)
{
	struct jf_error err = { 0 };
	struct jf_store *st = NULL;
	if (jf_store_open(f->db, &st, &err) != JF_OK)
		fail_msg("jf_store_open: %s", err.msg);
	struct jf_cluster *c = NULL;
	if (jf_cluster_parse(cluster_text, strlen(cluster_text), &c, &err) != JF_OK)
		fail_msg("cluster: %s", err.msg);
	struct jf_runner *be = jf_local_new(jft_shim_path(), &err);
	if (!be)
		fail_msg("jf_local_new: %s", err.msg);
	struct jf_engine_config cfg = {
		.state_dir = f->dir,
		.store = st,
		.cluster = c,
		.runner = be,
		.clock = { .now_ms = test_now, .ctx = f, .skew_ms = test_skew },
		.kill_grace_ms = 200,
	};
	if (jf_engine_new(&cfg, &f->e, &err) != JF_OK)
		fail_msg("jf_engine_new: %s", err.msg);
	f->be = be;
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/jf-budget-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/jobfs.db", f->dir);
	engine_start(f);
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_mkqueue(f->e, "q", getuid(), getgid(), &f->queue, &err), JF_OK);
	*state = f;
	return 0;
}

static int count_open(void *ctx, const struct jf_attempt_rec *a)
{
	(void)a;
	(*(int *)ctx)++;
	return 0;
}

static int open_attempts(struct fix *f)
{
	int n = 0;
	assert_int_equal(jf_attempt_list_open(jf_engine_store(f->e), count_open, &n), JF_OK);
	return n;
}

/* One turn of the daemon's loop: the tick, then wait on the backend. */
static void turn(struct fix *f, int max_wait_ms)
{
	int64_t next = jf_engine_tick(f->e);
	int wait = max_wait_ms;
	if (next >= 0 && next < wait)
		wait = (int)next;
	struct pollfd p = { .fd = jf_engine_backend_fd(f->e), .events = POLLIN };
	int n = poll(&p, 1, wait);
	assert_true(n >= 0);
	if (n > 0 && (p.revents & POLLIN))
		jf_engine_on_backend(f->e);
}

static int teardown(void **state)
{
	struct fix *f = *state;
	if (f->e) {
		sqlite3 *db;
		if (sqlite3_open_v2(f->db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
			sqlite3_stmt *s;
			if (sqlite3_prepare_v2(db, "SELECT handle FROM attempts WHERE end_ms = 0",
					       -1, &s, NULL) == SQLITE_OK) {
				while (sqlite3_step(s) == SQLITE_ROW) {
					const char *h = (const char *)sqlite3_column_text(s, 0);
					if (h && *h)
						jf_runner_signal(f->be, h, JF_RUN_KILL);
				}
				sqlite3_finalize(s);
			}
			sqlite3_close(db);
		}
		int64_t end = jft_mono_ms() + 5000;
		while (open_attempts(f) > 0 && jft_mono_ms() < end)
			turn(f, 50);
		jf_engine_free(f->e);
	}
	jft_rmtree(f->dir);
	free(f);
	return 0;
}

/* ---- helpers ---- */

static int64_t submit(struct fix *f, const char *dirname, const char *spec)
{
	struct jf_error err = { 0 };
	int64_t g = 0;
	assert_int_equal(jf_engine_mkgroup(f->e, f->queue, JF_KIND_GROUP, dirname, getuid(),
					   getgid(), &g, &err),
			 JF_OK);
	if (jf_engine_submit(f->e, g, spec, strlen(spec), getuid(), getgid(), &err) != JF_OK)
		fail_msg("submit: %s", err.msg);
	return g;
}

static void queue_spec(struct fix *f, const char *text)
{
	struct jf_error err = { 0 };
	if (jf_engine_queue_spec(f->e, f->queue, text, strlen(text), &err) != JF_OK)
		fail_msg("queue spec: %s", err.msg);
}

static int task_state(struct fix *f, int64_t g, int64_t idx)
{
	struct jf_task_rec t;
	assert_int_equal(jf_task_find(jf_engine_store(f->e), g, idx, &t), JF_OK);
	int s = t.state;
	jf_task_release(&t);
	return s;
}

static unsigned group_flags(struct fix *f, int64_t g, char *msg, size_t n)
{
	struct jf_group_rec r;
	assert_int_equal(jf_group_get(jf_engine_store(f->e), g, &r), JF_OK);
	unsigned fl = r.flags;
	if (msg)
		snprintf(msg, n, "%s", r.message);
	jf_group_release(&r);
	return fl;
}

static bool run_until(struct fix *f, bool (*pred)(struct fix *, int64_t), int64_t g, int timeout_ms)
{
	int64_t end = jft_mono_ms() + timeout_ms;
	for (;;) {
		if (pred(f, g))
			return true;
		if (jft_mono_ms() >= end)
			return false;
		turn(f, 50);
	}
}

static bool task0_running(struct fix *f, int64_t g)
{
	return task_state(f, g, 0) == JF_ST_RUNNING;
}

static bool task1_running(struct fix *f, int64_t g)
{
	return task_state(f, g, 1) == JF_ST_RUNNING;
}

static bool task0_ended(struct fix *f, int64_t g)
{
	return jf_state_final(task_state(f, g, 0)) && open_attempts(f) == 0;
}

/* task0_ended, and at every look on the way: a group flagged Budget says
 * why in its message (its going idle keeps the message). */
static bool task0_ended_flag_said(struct fix *f, int64_t g)
{
	char msg[512];
	if (group_flags(f, g, msg, sizeof(msg)) & JF_GF_BUDGET)
		assert_non_null(strstr(msg, "Budget: queue q has spent"));
	return task0_ended(f, g);
}

static bool nothing_open(struct fix *f, int64_t g)
{
	(void)g;
	return open_attempts(f) == 0;
}

/* How often reason appears in the queue's events. */
static int queue_events(struct fix *f, const char *reason)
{
	struct jf_store *st = jf_engine_store(f->e);
	int64_t size = 0;
	assert_int_equal(jf_event_size(st, JF_SCOPE_QUEUE, f->queue, &size), JF_OK);
	char *buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	size_t got = 0;
	assert_int_equal(jf_event_read(st, JF_SCOPE_QUEUE, f->queue, 0, buf, (size_t)size, &got),
			 JF_OK);
	buf[got] = '\0';
	char key[64];
	snprintf(key, sizeof(key), " %s queue ", reason);
	int n = 0;
	for (const char *p = buf; (p = strstr(p, key)); p++)
		n++;
	free(buf);
	return n;
}

static int budget_state(struct fix *f)
{
	int s = -1;
	assert_int_equal(jf_queue_budget_state(jf_engine_store(f->e), f->queue, &s), JF_OK);
	return s;
}

/* What the queue spent within period_s, as the queue's status computes it. */
static int64_t spent(struct fix *f, int64_t period_s)
{
	struct jf_budget_seg *segs = NULL;
	size_t n = 0;
	int64_t base = 0, now = test_now(f);
	assert_int_equal(jf_ledger_budget_segs(jf_engine_store(f->e), f->queue, period_s, now,
					       &segs, &n, &base),
			 JF_OK);
	int64_t v = jf_budget_spent(segs, n, base, now, period_s);
	free(segs);
	return v;
}

/* The tick's deadline once nothing else is left for it to do at once
 * (0: the trash of an ended attempt comes first). */
static int64_t quiet_tick(struct fix *f)
{
	int64_t t = 0;
	for (int i = 0; i < 1000 && (t = jf_engine_tick(f->e)) == 0; i++)
		;
	return t;
}

/* ---- tests ---- */

/*
 * Budget 10.00 a day, tasks of 1.00 a second one at a time: the tick's
 * deadline is the tenth second; there the queue is exhausted, the task runs
 * on, the rest waits flagged.  A day later the window has let the money go.
 */
static void test_reached_mid_group_then_period_rolls(void **state)
{
	struct fix *f = *state;
	queue_spec(f, "budget: \"10.00\"\nbudget_period: 1d\n");
	int64_t g = submit(f, "g", "completions: 3\nparallelism: 1\n" SLEEPER);
	assert_true(run_until(f, task0_running, g, 10000));
	/* the tick asks to come back when 10.00 is reached: within 10 s */
	int64_t next = quiet_tick(f);
	assert_true(next > 0 && next <= 10000);
	assert_true(spent(f, 86400) < 10000000);
	assert_int_equal(budget_state(f), 0);
	/* ... and then: exhausted */
	f->offset_ms += next;
	jf_engine_tick(f->e);
	assert_true(spent(f, 86400) >= 10000000);
	assert_int_equal(budget_state(f), 1);
	assert_int_equal(queue_events(f, "BudgetExhausted"), 1);
	assert_int_equal(task_state(f, g, 0), JF_ST_RUNNING); /* hold: it runs on */
	char msg[512];
	assert_true(group_flags(f, g, msg, sizeof(msg)) & JF_GF_BUDGET);
	assert_non_null(strstr(msg, "Budget: queue q has spent its budget of 10.00 CNY"));
	assert_non_null(strstr(msg, "1d window"));
	/* looking again says nothing again; with nothing running the
	 * deadline is when the day's window lets the money go */
	for (int i = 0; i < 5; i++)
		turn(f, 20);
	assert_int_equal(queue_events(f, "BudgetExhausted"), 1);
	struct jf_error err = { 0 };
	struct jf_task_rec t0;
	assert_int_equal(jf_task_find(jf_engine_store(f->e), g, 0, &t0), JF_OK);
	assert_int_equal(jf_engine_ctl(f->e, g, t0.id, "stop", &err), JF_OK);
	jf_task_release(&t0);
	assert_true(run_until(f, task0_ended_flag_said, g, 10000));
	for (int i = 0; i < 5; i++)
		turn(f, 20);
	assert_int_equal(task_state(f, g, 1), JF_ST_WAITING);
	assert_int_equal(open_attempts(f), 0);
	assert_true(group_flags(f, g, NULL, 0) & JF_GF_BUDGET);
	next = quiet_tick(f);
	assert_true(next > DAY_MS - 60000 && next <= DAY_MS);
	/* a day on (and a minute, so that all of the first task's cost has
	 * left the window): the second task starts */
	f->offset_ms += next + 60000;
	jf_engine_tick(f->e);
	assert_int_equal(queue_events(f, "BudgetAvailable"), 1);
	assert_int_equal(budget_state(f), 0);
	assert_true(run_until(f, task1_running, g, 10000));
	assert_false(group_flags(f, g, msg, sizeof(msg)) & JF_GF_BUDGET);
	assert_null(strstr(msg, "Budget:"));
	assert_int_equal(queue_events(f, "BudgetExhausted"), 1);
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "stop", &err), JF_OK);
	assert_true(run_until(f, nothing_open, g, 10000));
}

/* budget_action: stop: the running task is stopped as ctl stop would,
 * billed to its end; the other task waits for the budget. */
static void test_action_stop(void **state)
{
	struct fix *f = *state;
	queue_spec(f, "budget: \"5.00\"\nbudget_action: stop\n");
	int64_t g = submit(f, "s", "completions: 2\nparallelism: 1\n" SLEEPER);
	assert_true(run_until(f, task0_running, g, 10000));
	int64_t next = quiet_tick(f);
	assert_true(next > 0 && next <= 5000);
	f->offset_ms += next;
	assert_true(run_until(f, task0_ended, g, 10000));
	assert_int_equal(task_state(f, g, 0), JF_ST_STOPPED);
	assert_int_equal(task_state(f, g, 1), JF_ST_WAITING);
	assert_int_equal(queue_events(f, "BudgetExhausted"), 1);
	assert_true(group_flags(f, g, NULL, 0) & JF_GF_BUDGET);
	/* billed to its end: what it cost is the budget's 5.00 and the
	 * second or so of its stopping */
	int64_t v = spent(f, 0);
	assert_true(v >= 5000000 && v <= 8000000);
	/* no period: only a raised budget frees it (0: the trash of the
	 * ended attempt first) */
	assert_int_equal(quiet_tick(f), -1);
	/* raised: available at once, the waiting task starts */
	queue_spec(f, "budget: \"1000.00\"\nbudget_action: stop\n");
	assert_int_equal(queue_events(f, "BudgetAvailable"), 1);
	assert_true(run_until(f, task1_running, g, 10000));
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "stop", &err), JF_OK);
	assert_true(run_until(f, nothing_open, g, 10000));
}

/* A restart of the engine while exhausted says nothing twice; a budget
 * taken away frees the queue. */
static void test_restart_and_removed(void **state)
{
	struct fix *f = *state;
	queue_spec(f, "budget: \"0\"\n");
	assert_int_equal(queue_events(f, "BudgetExhausted"), 1);
	int64_t g = submit(f, "r", "completions: 1\n" SLEEPER);
	for (int i = 0; i < 5; i++)
		turn(f, 20);
	assert_int_equal(task_state(f, g, 0), JF_ST_WAITING);
	assert_true(group_flags(f, g, NULL, 0) & JF_GF_BUDGET);
	jf_engine_free(f->e);
	f->e = NULL;
	engine_start(f);
	for (int i = 0; i < 5; i++)
		turn(f, 20);
	assert_int_equal(queue_events(f, "BudgetExhausted"), 1);
	assert_int_equal(task_state(f, g, 0), JF_ST_WAITING);
	queue_spec(f, "capacity: 4\n");
	assert_int_equal(queue_events(f, "BudgetAvailable"), 1);
	assert_int_equal(budget_state(f), 0);
	assert_true(run_until(f, task0_running, g, 10000));
	struct jf_error err = { 0 };
	assert_int_equal(jf_engine_ctl(f->e, g, 0, "stop", &err), JF_OK);
	assert_true(run_until(f, nothing_open, g, 10000));
}

/* --test-clock's file: seconds ahead of the real clock, read again when
 * it changes, never backwards; a bad value refused at the start and
 * ignored later. */
static void test_testclock(void **state)
{
	(void)state;
	int64_t ms = -1;
	assert_true(jf_testclock_parse("86400", &ms));
	assert_int_equal(ms, DAY_MS);
	assert_true(jf_testclock_parse(" 90.5\n", &ms));
	assert_int_equal(ms, 90500);
	assert_true(jf_testclock_parse("0.001", &ms));
	assert_int_equal(ms, 1);
	static const char *const bad[] = { "",    "-1", "1.2345", "1e3",
					   "abc", "1.", "3 4",    "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(jf_testclock_parse(bad[i], &ms));

	char dir[256], path[300];
	snprintf(dir, sizeof(dir), "/tmp/jf-tclock-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/clock", dir);
	struct jf_testclock *c = NULL;
	struct jf_error err = { 0 };
	assert_int_equal(jf_testclock_new(path, &c, &err), JF_EINVAL); /* no file */
	jft_write_file(path, "soon\n");
	assert_int_equal(jf_testclock_new(path, &c, &err), JF_EINVAL);
	assert_non_null(strstr(err.msg, "not a number of seconds"));
	jft_write_file(path, "3600\n");
	assert_int_equal(jf_testclock_new(path, &c, &err), JF_OK);
	struct jf_clock k = jf_testclock_clock(c);
	int64_t real = jft_wall_ms();
	int64_t now = k.now_ms(k.ctx);
	assert_true(now >= real + 3600000 && now < real + 3600000 + 5000);
	assert_int_equal(k.skew_ms(k.ctx), 3600000);
	assert_false(k.refresh(k.ctx)); /* unchanged */
	/* a day ahead: a jump */
	unlink(path); /* a new inode: seen even within one mtime tick */
	jft_write_file(path, "86400");
	assert_true(k.refresh(k.ctx));
	assert_int_equal(k.skew_ms(k.ctx), DAY_MS);
	assert_true(k.now_ms(k.ctx) >= real + DAY_MS);
	/* backwards and garbage: ignored */
	unlink(path);
	jft_write_file(path, "10");
	assert_false(k.refresh(k.ctx));
	assert_int_equal(k.skew_ms(k.ctx), DAY_MS);
	unlink(path);
	jft_write_file(path, "x");
	assert_false(k.refresh(k.ctx));
	assert_int_equal(k.skew_ms(k.ctx), DAY_MS);
	jf_testclock_free(c);
	jf_testclock_free(NULL);
	jft_rmtree(dir);
}

int main(void)
{
	if (!jft_shim_path()) {
		fprintf(stderr, "test_engine_budget: no jobfs-shim ($JOBFS_SHIM)\n");
		return 77;
	}
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_reached_mid_group_then_period_rolls),
		T(test_action_stop),
		T(test_restart_and_removed),
		cmocka_unit_test(test_testclock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
